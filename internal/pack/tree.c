/* The list of what goes into an image's layer, from the person's inputs.
 * Only files, folders and symlinks are listed; anything else is refused with
 * its path, since a layer is no place for devices, pipes or sockets. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal/base/cleanup.h"
#include "internal/base/utf8.h"
#include "internal/base/xalloc.h"
#include "internal/pack/pack-internal.h"

/* Whiteout markers: a runtime reads ".wh.NAME" in a layer as "delete NAME" */
static const char whiteout[] = ".wh.";

static void entry_clear(struct pack_entry *e)
{
	free(e->path);
	free(e->src);
	free(e->target);
	memset(e, 0, sizeof(*e));
}

void pack_tree_free(struct pack_tree *t)
{
	if (t == NULL)
		return;
	for (size_t i = 0; i < t->n; i++)
		entry_clear(&t->v[i]);
	free(t->v);
	memset(t, 0, sizeof(*t));
}

/* Takes ownership of the strings in e. Implied folders are not counted
 * against the limit here: pack_tree_finish() checks the merged total. */
static int tree_push(struct pack_tree *t, struct pack_entry *e, struct mg_err **err)
{
	if (!e->implied && t->n >= PACK_MAX_ENTRIES) {
		int r = mg_err_set(err, "%s: more than %u entries in one image", e->src,
		                   PACK_MAX_ENTRIES);
		entry_clear(e);
		return r;
	}
	if (t->n == t->cap) {
		t->cap = t->cap != 0 ? t->cap * 2 : 64;
		t->v = xreallocarray(t->v, t->cap, sizeof(*t->v));
	}
	t->v[t->n++] = *e;
	memset(e, 0, sizeof(*e));
	return 0;
}

static unsigned file_mode(mode_t m)
{
	return (m & 0111) != 0 ? 0755 : 0644;
}

static const char *kind_of(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFIFO:
		return "a named pipe";
	case S_IFSOCK:
		return "a socket";
	case S_IFCHR:
		return "a character device";
	case S_IFBLK:
		return "a block device";
	default:
		return "not a file, folder or symlink";
	}
}

static int refuse_special(const char *path, mode_t m, struct mg_err **err)
{
	return mg_err_set(err, "%s is %s: only files, folders and symlinks can go into an image",
	                  path, kind_of(m));
}

int pack_image_path(const char *path, const char *what, char **out, struct mg_err **err)
{
	if (path[0] != '/')
		return mg_err_set(err, "%s: \"%s\" is not an absolute path (it starts with '/')",
		                  what, path);
	size_t len = strlen(path);
	if (len > PATH_MAX)
		return mg_err_set(err, "%s: the path is longer than %d bytes", what, PATH_MAX);
	if (mg_utf8_check(path, len) != len)
		return mg_err_set(err, "%s: \"%s\" is not UTF-8, as names in an image must be",
		                  what, path);
	char *res = xmalloc(len + 1);
	size_t n = 0;
	const char *p = path;
	while (*p != '\0') {
		while (*p == '/')
			p++;
		const char *c = p;
		while (*p != '\0' && *p != '/')
			p++;
		size_t clen = (size_t)(p - c);
		if (clen == 0 || (clen == 1 && c[0] == '.'))
			continue;
		if (clen == 2 && c[0] == '.' && c[1] == '.') {
			free(res);
			return mg_err_set(err, "%s: \"%s\" has a \"..\" component", what, path);
		}
		if (clen >= sizeof(whiteout) - 1 &&
		    memcmp(c, whiteout, sizeof(whiteout) - 1) == 0) {
			free(res);
			return mg_err_set(
			    err,
			    "%s: \"%s\": a name starting with \"%s\" marks a deletion "
			    "in image layers",
			    what, path, whiteout);
		}
		if (n > 0)
			res[n++] = '/';
		memcpy(res + n, c, clen);
		n += clen;
	}
	res[n] = '\0';
	*out = res;
	return 0;
}

static char *join_host(const char *dir, const char *name)
{
	size_t n = strlen(dir);
	return xasprintf("%s%s%s", dir, n > 0 && dir[n - 1] == '/' ? "" : "/", name);
}

static char *join_image(const char *dir, const char *name)
{
	return dir[0] != '\0' ? xasprintf("%s/%s", dir, name) : xstrdup(name);
}

static int add_symlink_at(struct pack_tree *t, int dirfd, const char *name, const char *host,
                          char *image, struct mg_err **err)
{
	char buf[PATH_MAX + 1];
	ssize_t n = readlinkat(dirfd, name, buf, sizeof(buf));
	if (n < 0) {
		int r = mg_err_sys(err, errno, "reading the symlink %s", host);
		free(image);
		return r;
	}
	if ((size_t)n >= sizeof(buf) || n == 0) {
		free(image);
		return mg_err_set(err, "%s: the symlink's target is %s", host,
		                  n == 0 ? "empty" : "too long");
	}
	if (mg_utf8_check(buf, (size_t)n) != (size_t)n) {
		free(image);
		return mg_err_set(err,
		                  "%s: the symlink's target is not UTF-8, as names in an "
		                  "image must be",
		                  host);
	}
	struct pack_entry e = {.path = image,
	                       .kind = PACK_SYMLINK,
	                       .mode = 0777,
	                       .src = xstrdup(host),
	                       .target = xstrndup(buf, (size_t)n),
	                       .in_walk = true};
	return tree_push(t, &e, err);
}

static int walk(struct pack_tree *t, const char *host, const char *image, unsigned depth,
                struct mg_err **err)
{
	if (depth > PACK_MAX_DEPTH)
		return mg_err_set(err, "%s: more than %u folders deep", host, PACK_MAX_DEPTH);
	int fd = open(host, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return mg_err_sys(err, errno, "%s", host);
	DIR *d = fdopendir(fd);
	if (d == NULL) {
		int e = errno;
		close(fd);
		return mg_err_sys(err, e, "%s", host);
	}
	int r = 0;
	for (;;) {
		errno = 0;
		struct dirent *de = readdir(d);
		if (de == NULL) {
			if (errno != 0)
				r = mg_err_sys(err, errno, "reading the folder %s", host);
			break;
		}
		const char *name = de->d_name;
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			continue;
		cleanup_free char *h = join_host(host, name);
		if (strncmp(name, whiteout, sizeof(whiteout) - 1) == 0) {
			r = mg_err_set(err,
			               "%s: a name starting with \"%s\" marks a deletion in image "
			               "layers",
			               h, whiteout);
			break;
		}
		size_t name_len = strlen(name);
		if (mg_utf8_check(name, name_len) != name_len) {
			r = mg_err_set(
			    err, "%s: the name is not UTF-8, as names in an image must be", h);
			break;
		}
		struct stat st;
		if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = mg_err_sys(err, errno, "%s", h);
			break;
		}
		char *im = join_image(image, name);
		if (S_ISREG(st.st_mode)) {
			struct pack_entry e = {.path = im,
			                       .kind = PACK_FILE,
			                       .mode = file_mode(st.st_mode),
			                       .size = (uint64_t)st.st_size,
			                       .src = steal_pointer(&h),
			                       .in_walk = true};
			r = tree_push(t, &e, err);
		} else if (S_ISDIR(st.st_mode)) {
			struct pack_entry e = {.path = im,
			                       .kind = PACK_DIR,
			                       .mode = 0755,
			                       .src = xstrdup(h),
			                       .in_walk = true};
			r = tree_push(t, &e, err);
			if (r == 0)
				r = walk(t, h, t->v[t->n - 1].path, depth + 1, err);
		} else if (S_ISLNK(st.st_mode)) {
			r = add_symlink_at(t, fd, name, h, im, err);
		} else {
			free(im);
			r = refuse_special(h, st.st_mode, err);
		}
		if (r < 0)
			break;
	}
	closedir(d);
	return r;
}

int pack_tree_add_binary(struct pack_tree *t, const char *src, const char *dest,
                         struct mg_err **err)
{
	struct stat st;
	if (stat(src, &st) < 0)
		return mg_err_sys(err, errno, "%s", src);
	if (S_ISDIR(st.st_mode))
		return mg_err_set(
		    err, "%s is a folder, not a program (pack a folder with --folder)", src);
	if (!S_ISREG(st.st_mode))
		return refuse_special(src, st.st_mode, err);
	char *image = NULL;
	if (pack_image_path(dest, "--path-in-image", &image, err) < 0)
		return -1;
	if (image[0] == '\0') {
		free(image);
		return mg_err_set(err, "--path-in-image: \"%s\" is the root folder, not a file",
		                  dest);
	}
	struct pack_entry e = {.path = image,
	                       .kind = PACK_FILE,
	                       .mode = 0755,
	                       .size = (uint64_t)st.st_size,
	                       .src = xstrdup(src),
	                       .follow = true};
	return tree_push(t, &e, err);
}

int pack_tree_add_path(struct pack_tree *t, const char *src, const char *dest, struct mg_err **err)
{
	struct stat st;
	if (stat(src, &st) < 0)
		return mg_err_sys(err, errno, "%s", src);
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return refuse_special(src, st.st_mode, err);
	char *image = NULL;
	cleanup_free char *what = xasprintf("the destination of %s", src);
	if (pack_image_path(dest, what, &image, err) < 0)
		return -1;
	if (S_ISREG(st.st_mode)) {
		if (image[0] == '\0') {
			free(image);
			return mg_err_set(err, "%s is a file: it cannot be the root folder \"/\"",
			                  src);
		}
		struct pack_entry e = {.path = image,
		                       .kind = PACK_FILE,
		                       .mode = file_mode(st.st_mode),
		                       .size = (uint64_t)st.st_size,
		                       .src = xstrdup(src),
		                       .follow = true};
		return tree_push(t, &e, err);
	}
	if (image[0] == '\0') {
		free(image);
		return walk(t, src, "", 0, err);
	}
	struct pack_entry e = {.path = image, .kind = PACK_DIR, .mode = 0755, .src = xstrdup(src)};
	if (tree_push(t, &e, err) < 0)
		return -1;
	return walk(t, src, t->v[t->n - 1].path, 1, err);
}

void pack_tree_add_implied_dir(struct pack_tree *t, const char *dest, unsigned mode)
{
	if (dest[0] == '\0')
		return;
	struct pack_entry e = {.path = xstrdup(dest),
	                       .kind = PACK_DIR,
	                       .mode = mode != 0 ? mode : 0755,
	                       .src = xstrdup("the working directory"),
	                       .implied = true};
	tree_push(t, &e, NULL);
}

/* by path; at one path, named entries before implied folders, so that the
 * one kept and the two named in an error do not depend on qsort */
static int entry_cmp(const void *a, const void *b)
{
	const struct pack_entry *x = a, *y = b;
	int c = strcmp(x->path, y->path);
	if (c != 0)
		return c;
	if (x->implied != y->implied)
		return x->implied ? 1 : -1;
	if (x->kind != y->kind)
		return (int)x->kind - (int)y->kind;
	return strcmp(x->src, y->src);
}

static char *describe(const struct pack_entry *e)
{
	if (e->implied)
		return xasprintf("a folder needed by %s", e->src);
	switch (e->kind) {
	case PACK_DIR:
		return xasprintf("the folder %s", e->src);
	case PACK_FILE:
		return xasprintf("the file %s", e->src);
	case PACK_SYMLINK:
		return xasprintf("the symlink %s", e->src);
	}
	return xstrdup(e->src);
}

int pack_tree_finish(struct pack_tree *t, struct mg_err **err)
{
	/* Parents of what was named: a walk lists its own folders itself */
	size_t named = t->n;
	for (size_t i = 0; i < named; i++) {
		if (t->v[i].in_walk)
			continue;
		cleanup_free char *path = xstrdup(t->v[i].path);
		cleanup_free char *src = xstrdup(t->v[i].src);
		for (char *slash = strchr(path, '/'); slash != NULL;
		     slash = strchr(slash + 1, '/')) {
			struct pack_entry e = {.path = xstrndup(path, (size_t)(slash - path)),
			                       .kind = PACK_DIR,
			                       .mode = 0755,
			                       .src = xstrdup(src),
			                       .implied = true};
			tree_push(t, &e, NULL);
		}
	}
	if (t->n > 1)
		qsort(t->v, t->n, sizeof(*t->v), entry_cmp);

	size_t out = 0;
	for (size_t i = 0; i < t->n;) {
		size_t j = i + 1;
		bool all_dirs = t->v[i].kind == PACK_DIR;
		while (j < t->n && strcmp(t->v[j].path, t->v[i].path) == 0) {
			all_dirs = all_dirs && t->v[j].kind == PACK_DIR;
			j++;
		}
		if (j - i > 1 && !all_dirs) {
			cleanup_free char *a = describe(&t->v[i]);
			cleanup_free char *b = describe(&t->v[i + 1]);
			return mg_err_set(err, "two things at /%s in the image: %s and %s",
			                  t->v[i].path, a, b);
		}
		for (size_t k = i + 1; k < j; k++)
			entry_clear(&t->v[k]);
		if (out != i) {
			t->v[out] = t->v[i];
			memset(&t->v[i], 0, sizeof(t->v[i]));
		}
		out++;
		i = j;
	}
	t->n = out;
	if (t->n > PACK_MAX_ENTRIES)
		return mg_err_set(err, "more than %u entries in one image", PACK_MAX_ENTRIES);

	t->files = t->dirs = t->symlinks = 0;
	for (size_t i = 0; i < t->n; i++) {
		switch (t->v[i].kind) {
		case PACK_DIR:
			t->dirs++;
			break;
		case PACK_FILE:
			t->files++;
			break;
		case PACK_SYMLINK:
			t->symlinks++;
			break;
		}
	}
	return 0;
}

static int find_cmp(const void *key, const void *elem)
{
	return strcmp(key, ((const struct pack_entry *)elem)->path);
}

const struct pack_entry *pack_tree_find(const struct pack_tree *t, const char *path)
{
	if (t->n == 0)
		return NULL;
	return bsearch(path, t->v, t->n, sizeof(*t->v), find_cmp);
}
