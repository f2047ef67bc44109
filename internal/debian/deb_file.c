/* One .deb read with libarchive: an ar archive whose members are
 * debian-binary, control.tar.* and data.tar.* (xz, gzip, zstd or none).
 * The inner tar is read straight from the outer member, never written out.
 * Unpacking writes only below a folder of mcpgate's, one path component at
 * a time with O_NOFOLLOW, so neither a ".." nor a link the package (or an
 * earlier one) shipped can lead a write elsewhere. */
#define _GNU_SOURCE
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/utf8.h"
#include "internal/base/xalloc.h"
#include "internal/debian/debian.h"

#define CONTROL_MAX (1u << 20)
#define COPY_BUF    (64u * 1024u)
#define PATH_DEPTH  64

/* ---- the outer archive ------------------------------------------------- */

struct deb_reader {
	const char *path;
	struct archive *ar;    /* the .deb */
	struct archive *inner; /* the member's tar */
	char *block;           /* what the member is read into */
};

static la_ssize_t member_read(struct archive *a, void *data, const void **buf)
{
	struct deb_reader *r = data;
	la_ssize_t n = archive_read_data(r->ar, r->block, COPY_BUF);
	if (n < 0) {
		archive_set_error(a, EIO, "%s", archive_error_string(r->ar));
		return -1;
	}
	*buf = r->block;
	return n;
}

static void reader_close(struct deb_reader *r)
{
	if (r->inner != NULL)
		archive_read_free(r->inner);
	if (r->ar != NULL)
		archive_read_free(r->ar);
	free(r->block);
	r->inner = r->ar = NULL;
	r->block = NULL;
}

/* r->inner opened on the member whose name starts with prefix ("data.tar") */
static int reader_open(struct deb_reader *r, const char *path, const char *prefix,
                       struct mg_err **err)
{
	memset(r, 0, sizeof(*r));
	r->path = path;
	r->block = xmalloc(COPY_BUF);
	r->ar = archive_read_new();
	if (r->ar == NULL)
		abort();
	archive_read_support_format_ar(r->ar);
	if (archive_read_open_filename(r->ar, path, COPY_BUF) != ARCHIVE_OK) {
		int e = mg_err_set(err, "%s is not a Debian package: %s", path,
		                   archive_error_string(r->ar));
		reader_close(r);
		return e;
	}
	struct archive_entry *e;
	size_t plen = strlen(prefix);
	int h;
	bool first = true;
	while ((h = archive_read_next_header(r->ar, &e)) == ARCHIVE_OK) {
		const char *name = archive_entry_pathname(e);
		if (first && (name == NULL || strcmp(name, "debian-binary") != 0)) {
			reader_close(r);
			return mg_err_set(
			    err, "%s is not a Debian package (no debian-binary first)", path);
		}
		first = false;
		if (name == NULL || strncmp(name, prefix, plen) != 0 ||
		    (name[plen] != '\0' && name[plen] != '.'))
			continue;
		r->inner = archive_read_new();
		if (r->inner == NULL)
			abort();
		archive_read_support_filter_xz(r->inner);
		archive_read_support_filter_gzip(r->inner);
		archive_read_support_filter_zstd(r->inner);
		archive_read_support_filter_bzip2(r->inner);
		archive_read_support_format_tar(r->inner);
		if (archive_read_open(r->inner, r, NULL, member_read, NULL) != ARCHIVE_OK) {
			int rr = mg_err_set(err, "%s: its %s cannot be read: %s", path, name,
			                    archive_error_string(r->inner));
			reader_close(r);
			return rr;
		}
		return 0;
	}
	int rr = h == ARCHIVE_EOF ? mg_err_set(err, "%s has no %s member", path, prefix)
	                          : mg_err_set(err, "%s: %s", path, archive_error_string(r->ar));
	reader_close(r);
	return rr;
}

/* ---- control ------------------------------------------------------------ */

int deb_read_control(const char *deb, char **control, size_t *len, struct mg_err **err)
{
	struct deb_reader r;
	if (reader_open(&r, deb, "control.tar", err) < 0)
		return -1;
	struct archive_entry *e;
	int h, res = -1;
	while ((h = archive_read_next_header(r.inner, &e)) == ARCHIVE_OK) {
		const char *name = archive_entry_pathname(e);
		if (name == NULL ||
		    (strcmp(name, "./control") != 0 && strcmp(name, "control") != 0))
			continue;
		la_int64_t size = archive_entry_size(e);
		if (size <= 0 || size > CONTROL_MAX || archive_entry_filetype(e) != AE_IFREG) {
			mg_err_set(err, "%s: its control file is not a file of 1 to %u bytes", deb,
			           CONTROL_MAX);
			goto out;
		}
		char *text = xmalloc((size_t)size + 1);
		la_ssize_t got = archive_read_data(r.inner, text, (size_t)size);
		if (got != size) {
			free(text);
			mg_err_set(err, "%s: reading its control file: %s", deb,
			           archive_error_string(r.inner));
			goto out;
		}
		text[size] = '\0';
		if (strlen(text) != (size_t)size ||
		    mg_utf8_check(text, (size_t)size) != (size_t)size) {
			free(text);
			mg_err_set(err, "%s: its control file holds a NUL or is not UTF-8", deb);
			goto out;
		}
		/* one stanza: no blank line inside, one newline at the end */
		size_t n = (size_t)size;
		while (n > 0 && text[n - 1] == '\n')
			n--;
		text[n] = '\0';
		if (strstr(text, "\n\n") != NULL || n == 0) {
			free(text);
			mg_err_set(err, "%s: its control file is not one stanza", deb);
			goto out;
		}
		*control = text;
		*len = n;
		res = 0;
		goto out;
	}
	mg_err_set(err, "%s has no control file%s%s", deb, h == ARCHIVE_EOF ? "" : ": ",
	           h == ARCHIVE_EOF ? "" : archive_error_string(r.inner));
out:
	reader_close(&r);
	return res;
}

char *deb_control_field(const char *control, const char *field)
{
	size_t fl = strlen(field);
	for (const char *line = control; line != NULL && *line != '\0';) {
		if (strncasecmp(line, field, fl) == 0 && line[fl] == ':') {
			const char *v = line + fl + 1;
			while (*v == ' ' || *v == '\t')
				v++;
			size_t n = strcspn(v, "\n");
			while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
				n--;
			return xstrndup(v, n);
		}
		const char *nl = strchr(line, '\n');
		line = nl != NULL ? nl + 1 : NULL;
	}
	return NULL;
}

/* ---- unpacking ---------------------------------------------------------- */

/* "./usr/bin/x" as components below the root ("usr/bin/x"), by the rule
 * every path of an image is read with (pack_image_path: no "..", UTF-8, no
 * whiteout name, which would delete in a layer); -1 naming what is wrong */
static int clean_path(const char *name, const char *deb, char *out, size_t cap, struct mg_err **err)
{
	cleanup_free char *abs = xasprintf("/%s", name != NULL ? name : "");
	cleanup_free char *res = NULL;
	if (pack_image_path(abs, "its path", &res, err) < 0)
		return -1;
	if (strlen(res) >= cap)
		return mg_err_set(err, "%s: the entry \"%s\" is longer than %zu bytes", deb, name,
		                  cap - 1);
	memcpy(out, res, strlen(res) + 1);
	return 0;
}

/* The folder that holds path's last component, opened without following a
 * link, made (0755) where missing; *last points at that component */
static int open_parent(int rootfd, char *path, const char **last, const char *deb,
                       struct mg_err **err)
{
	int fd = dup(rootfd);
	if (fd < 0)
		return mg_err_sys(err, errno, "%s", deb);
	char *p = path;
	unsigned depth = 0;
	for (;;) {
		char *slash = strchr(p, '/');
		if (slash == NULL)
			break;
		*slash = '\0';
		int next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 && errno == ENOENT) {
			if (mkdirat(fd, p, 0755) < 0 && errno != EEXIST) {
				int e = errno;
				*slash = '/';
				close(fd);
				return mg_err_sys(err, e, "%s: making /%s", deb, path);
			}
			next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		int e = errno;
		*slash = '/';
		close(fd);
		if (next < 0)
			return e == ELOOP || e == ENOTDIR
			           ? mg_err_set(err,
			                        "%s: /%s lies below a link or a file, which is not "
			                        "followed",
			                        deb, path)
			           : mg_err_sys(err, e, "%s: /%s", deb, path);
		fd = next;
		p = slash + 1;
		if (++depth > PATH_DEPTH) {
			close(fd);
			return mg_err_set(err, "%s: /%s is too deep", deb, path);
		}
	}
	*last = p;
	return fd;
}

/* A file, link or folder already at name goes: a later package's wins, as
 * the packages are unpacked in a fixed order */
static void replace_at(int dirfd, const char *name)
{
	struct stat st;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode))
		unlinkat(dirfd, name, 0);
}

static int write_file(int dirfd, const char *name, unsigned mode, struct archive *src, int src_fd,
                      const char *deb, const char *path, struct mg_err **err)
{
	replace_at(dirfd, name);
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return mg_err_sys(err, errno, "%s: writing /%s", deb, path);
	cleanup_free char *buf = xmalloc(COPY_BUF);
	int r = 0;
	for (;;) {
		ssize_t n = src != NULL ? (ssize_t)archive_read_data(src, buf, COPY_BUF)
		                        : read(src_fd, buf, COPY_BUF);
		if (n < 0 && src == NULL && errno == EINTR)
			continue;
		if (n < 0) {
			r = src != NULL ? mg_err_set(err, "%s: reading /%s: %s", deb, path,
			                             archive_error_string(src))
			                : mg_err_sys(err, errno, "%s: copying to /%s", deb, path);
			break;
		}
		if (n == 0)
			break;
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(fd, buf + off, (size_t)(n - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				r = mg_err_sys(err, errno, "%s: writing /%s", deb, path);
				break;
			}
			off += w;
		}
		if (r < 0)
			break;
	}
	/* the mode is set whatever the umask said */
	if (r == 0 && fchmod(fd, mode) < 0)
		r = mg_err_sys(err, errno, "%s: /%s", deb, path);
	close(fd);
	return r;
}

/* A hard link: a copy of the file it names, unpacked before it */
static int copy_link(int rootfd, int dirfd, const char *name, const char *target, const char *deb,
                     const char *path, struct mg_err **err)
{
	char clean[PATH_MAX];
	if (clean_path(target, deb, clean, sizeof(clean), err) < 0)
		return mg_err_wrap(err, "%s: the hard link /%s names %s, outside the package", deb,
		                   path, target);
	if (clean[0] == '\0')
		return mg_err_set(err, "%s: the hard link /%s names the package's root", deb, path);
	const char *last = NULL;
	int pfd = open_parent(rootfd, clean, &last, deb, err);
	if (pfd < 0)
		return -1;
	int src = openat(pfd, last, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	close(pfd);
	struct stat st;
	if (src < 0 || fstat(src, &st) < 0 || !S_ISREG(st.st_mode)) {
		if (src >= 0)
			close(src);
		return mg_err_set(err,
		                  "%s: the hard link /%s names /%s, which is not a file "
		                  "unpacked before it",
		                  deb, path, clean);
	}
	int r =
	    write_file(dirfd, name, (st.st_mode & 0111) ? 0755 : 0644, NULL, src, deb, path, err);
	close(src);
	return r;
}

/* What no server reads, left out as Debian's own slim images leave it out
 * (dpkg's path-exclude): documentation but each package's copyright,
 * manual pages, info, translations of messages, lintian's overrides */
static bool left_out(const char *path)
{
	/* base-files ships /tmp as 1777, which an image cannot keep (a layer's
	 * folders are 0755): the runtime's tmpfs over a 0755 /tmp would leave a
	 * server that is not root without it. No image needs the folder: the
	 * runtime makes it. */
	static const char *const scratch[] = {"tmp", "var/tmp"};
	for (size_t i = 0; i < sizeof(scratch) / sizeof(scratch[0]); i++) {
		size_t n = strlen(scratch[i]);
		if (strncmp(path, scratch[i], n) == 0 && (path[n] == '\0' || path[n] == '/'))
			return true;
	}
	static const char *const dirs[] = {"usr/share/doc/", "usr/share/man/", "usr/share/info/",
	                                   "usr/share/locale/", "usr/share/lintian/"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		size_t n = strlen(dirs[i]);
		if (strncmp(path, dirs[i], n) != 0 && strncmp(path, dirs[i], n - 1) != 0)
			continue;
		if (path[n - 1] != '/' && path[n - 1] != '\0')
			continue;
		if (i == 0) {
			/* usr/share/doc, usr/share/doc/PKG and usr/share/doc/PKG/copyright stay */
			const char *rest = path[n - 1] == '\0' ? "" : path + n;
			const char *slash = strchr(rest, '/');
			if (slash == NULL || strcmp(slash, "/copyright") == 0)
				return false;
		}
		return true;
	}
	return false;
}

static int unpack_entry(int rootfd, struct archive *tar, struct archive_entry *e, const char *deb,
                        struct mg_err **err)
{
	char path[PATH_MAX];
	const char *name = archive_entry_pathname(e);
	if (clean_path(name, deb, path, sizeof(path), err) < 0)
		return mg_err_wrap(err,
		                   "%s: the entry \"%s\" leaves the package's root or is no name "
		                   "an image can hold",
		                   deb, name != NULL ? name : "");
	if (path[0] == '\0' || left_out(path))
		return 0; /* "./" itself, or what no server reads */
	const char *last = NULL;
	int dirfd = open_parent(rootfd, path, &last, deb, err);
	if (dirfd < 0)
		return -1;
	int r = 0;
	const char *hard = archive_entry_hardlink(e);
	mode_t type = archive_entry_filetype(e);
	if (hard != NULL) {
		r = copy_link(rootfd, dirfd, last, hard, deb, path, err);
	} else if (type == AE_IFDIR) {
		if (mkdirat(dirfd, last, 0755) < 0 && errno != EEXIST)
			r = mg_err_sys(err, errno, "%s: making /%s", deb, path);
		struct stat st;
		if (r == 0 &&
		    (fstatat(dirfd, last, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode)))
			r = mg_err_set(err,
			               "%s: /%s is a folder here and not in an earlier package",
			               deb, path);
	} else if (type == AE_IFREG) {
		unsigned mode = (archive_entry_perm(e) & 0111) != 0 ? 0755 : 0644;
		r = write_file(dirfd, last, mode, tar, -1, deb, path, err);
	} else if (type == AE_IFLNK) {
		const char *target = archive_entry_symlink(e);
		if (target == NULL || target[0] == '\0' ||
		    mg_utf8_check(target, strlen(target)) != strlen(target))
			r = mg_err_set(err, "%s: the link /%s has no target, or one not UTF-8", deb,
			               path);
		else {
			replace_at(dirfd, last);
			if (symlinkat(target, dirfd, last) < 0)
				r = mg_err_sys(err, errno, "%s: the link /%s", deb, path);
		}
	} else {
		r = mg_err_set(err, "%s: /%s is a device, pipe or socket, which no image holds",
		               deb, path);
	}
	close(dirfd);
	return r;
}

int deb_unpack(const char *deb, int rootfd, struct mg_err **err)
{
	struct deb_reader r;
	if (reader_open(&r, deb, "data.tar", err) < 0)
		return -1;
	struct archive_entry *e;
	int h, res = 0;
	while (res == 0 && (h = archive_read_next_header(r.inner, &e)) == ARCHIVE_OK)
		res = unpack_entry(rootfd, r.inner, e, deb, err);
	if (res == 0 && h != ARCHIVE_EOF)
		res = mg_err_set(err, "%s: its data: %s", deb, archive_error_string(r.inner));
	reader_close(&r);
	return res;
}

int deb_file_sha256(const char *path, char hex[65], struct mg_err **err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return mg_err_sys(err, errno, "%s", path);
	crypto_hash_sha256_state st;
	crypto_hash_sha256_init(&st);
	cleanup_free unsigned char *buf = xmalloc(COPY_BUF);
	for (;;) {
		ssize_t n = read(fd, buf, COPY_BUF);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			close(fd);
			return mg_err_sys(err, e, "reading %s", path);
		}
		if (n == 0)
			break;
		crypto_hash_sha256_update(&st, buf, (size_t)n);
	}
	close(fd);
	unsigned char sum[crypto_hash_sha256_BYTES];
	crypto_hash_sha256_final(&st, sum);
	sodium_bin2hex(hex, 65, sum, sizeof(sum));
	return 0;
}
