/* Folders of mcpgate's own: their size and their removal (tree.h). */
#define _GNU_SOURCE
#include "internal/base/tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal/base/cleanup.h"
#include "internal/base/xalloc.h"

struct walk {
	bool remove;
	dev_t dev;
	struct mg_tree_size size;
};

static void count(struct walk *w, const struct stat *st)
{
	w->size.bytes += (uint64_t)st->st_blocks * 512u;
	if (!S_ISDIR(st->st_mode))
		w->size.files++;
}

/* What is below the folder dirfd (at where, for messages) */
static int walk_below(struct walk *w, int dirfd, const char *where, unsigned depth,
                      struct mg_err **err)
{
	if (depth > MG_TREE_DEPTH_MAX)
		return mg_err_set(err, "%s: more than %d folders deep", where, MG_TREE_DEPTH_MAX);
	int fd = dup(dirfd);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
	if (dir == NULL) {
		if (fd >= 0)
			close(fd);
		return mg_err_sys(err, errno, "reading %s", where);
	}
	int r = 0;
	struct dirent *e;
	while (r == 0 && (errno = 0, e = readdir(dir)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		struct stat st;
		cleanup_free char *path = xasprintf("%s/%s", where, e->d_name);
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = mg_err_sys(err, errno, "%s", path);
			break;
		}
		if (st.st_dev != w->dev) {
			r = mg_err_set(err, "%s is on another file system: left as it is", path);
			break;
		}
		count(w, &st);
		if (S_ISDIR(st.st_mode)) {
			int child = openat(dirfd, e->d_name,
			                   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (child < 0) {
				r = mg_err_sys(err, errno, "opening %s", path);
				break;
			}
			r = walk_below(w, child, path, depth + 1, err);
			close(child);
			if (r == 0 && w->remove && unlinkat(dirfd, e->d_name, AT_REMOVEDIR) < 0)
				r = mg_err_sys(err, errno, "removing %s", path);
		} else if (w->remove && unlinkat(dirfd, e->d_name, 0) < 0) {
			r = mg_err_sys(err, errno, "removing %s", path);
		}
	}
	if (r == 0 && e == NULL && errno != 0)
		r = mg_err_sys(err, errno, "reading %s", where);
	closedir(dir);
	return r;
}

static int walk(const char *path, bool remove, struct mg_tree_size *out, struct mg_err **err)
{
	struct walk w = {.remove = remove};
	struct stat st;
	if (lstat(path, &st) < 0) {
		if (out != NULL)
			*out = w.size;
		return errno == ENOENT ? 0 : mg_err_sys(err, errno, "%s", path);
	}
	w.dev = st.st_dev;
	count(&w, &st);
	int r = 0;
	if (S_ISDIR(st.st_mode)) {
		int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return mg_err_sys(err, errno, "opening %s", path);
		r = walk_below(&w, fd, path, 1, err);
		close(fd);
		if (r == 0 && remove && rmdir(path) < 0)
			r = mg_err_sys(err, errno, "removing %s", path);
	} else if (remove && unlink(path) < 0) {
		r = mg_err_sys(err, errno, "removing %s", path);
	}
	if (out != NULL)
		*out = w.size;
	return r;
}

int mg_tree_size(const char *path, struct mg_tree_size *out, struct mg_err **err)
{
	return walk(path, false, out, err);
}

int mg_tree_remove(const char *path, struct mg_err **err)
{
	return walk(path, true, NULL, err);
}

const char *mg_size_text(uint64_t bytes, char *buf, size_t len)
{
	static const char *const unit[] = {"B", "kB", "MB", "GB", "TB"};
	double v = (double)bytes;
	size_t u = 0;
	while (v >= 1000.0 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
		v /= 1000.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
	else
		snprintf(buf, len, v < 10.0 ? "%.1f %s" : "%.0f %s", v, unit[u]);
	return buf;
}
