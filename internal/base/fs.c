#include "internal/base/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/xalloc.h"

int mg_mkdir_p(const char *path, mode_t mode, struct mg_err **err)
{
	char *p = xstrdup(path);
	int r = 0;
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST) {
			r = mg_err_sys(err, errno, "creating %s", p);
			break;
		}
		*s = c;
		if (c == '\0')
			break;
	}
	free(p);
	return r;
}

/* The rest of fd, a regular file already checked, into *text */
static int read_all(int fd, const char *path, size_t max, char **text, size_t *len,
                    struct mg_err **err)
{
	struct mg_buf b = MG_BUF_INIT(max);
	char chunk[8192];
	for (;;) {
		ssize_t r = read(fd, chunk, sizeof(chunk));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int saved = errno;
			mg_buf_free(&b);
			mg_err_sys(err, saved, "cannot read %s", path);
			errno = saved;
			return -1;
		}
		if (r == 0)
			break;
		if (mg_buf_append(&b, chunk, (size_t)r, NULL) < 0) {
			mg_buf_free(&b);
			errno = EFBIG;
			return mg_err_set(err, "cannot read %s: larger than %zu bytes", path, max);
		}
	}
	*text = mg_buf_steal(&b, len);
	return 0;
}

/* path opened for reading (with flags added) and found a regular file: its
 * fd, *st filled; -1 with errno and *err set */
static int open_regular(const char *path, int flags, struct stat *st, struct mg_err **err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | flags);
	if (fd < 0 || fstat(fd, st) < 0) {
		int saved = errno;
		if (saved == ELOOP && (flags & O_NOFOLLOW))
			mg_err_set(err, "%s is a symbolic link", path);
		else
			mg_err_sys(err, saved, "cannot read %s", path);
		if (fd >= 0)
			close(fd);
		errno = saved;
		return -1;
	}
	if (!S_ISREG(st->st_mode)) {
		close(fd);
		errno = EINVAL;
		return mg_err_set(err, "cannot read %s: not a regular file", path);
	}
	return fd;
}

int mg_read_file(const char *path, size_t max, char **text, size_t *len, struct mg_err **err)
{
	struct stat st;
	cleanup_close int fd = open_regular(path, 0, &st, err);
	if (fd < 0)
		return -1;
	return read_all(fd, path, max, text, len, err);
}

int mg_read_own_file(const char *path, size_t max, mode_t open_bits, char **text, size_t *len,
                     struct mg_err **err)
{
	uid_t me = geteuid();
	cleanup_free char *copy = xstrdup(path);
	const char *folder = dirname(copy);
	struct stat st;
	if (stat(folder, &st) < 0) {
		int saved = errno;
		mg_err_sys(err, saved, "cannot read %s", path);
		errno = saved;
		return -1;
	}
	if (st.st_uid != me || (st.st_mode & 022) != 0) {
		mg_err_set(err, "%s is not this user's own folder (uid %u, mode %04o)", folder,
		           (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		errno = EPERM;
		return -1;
	}
	cleanup_close int fd = open_regular(path, O_NOFOLLOW, &st, err);
	if (fd < 0)
		return -1;
	if (st.st_uid != me || (st.st_mode & open_bits) != 0) {
		if (st.st_uid != me)
			mg_err_set(err, "%s belongs to another user (uid %u, not %u)", path,
			           (unsigned)st.st_uid, (unsigned)me);
		else
			mg_err_set(err, "%s is open to others (mode %04o)", path,
			           (unsigned)(st.st_mode & 07777));
		errno = EPERM;
		return -1;
	}
	return read_all(fd, path, max, text, len, err);
}

int mg_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode,
                         struct mg_err **err)
{
	cleanup_free char *tmp = xasprintf("%s.tmp.%d", path, (int)getpid());
	struct stat st;
	bool existed = stat(path, &st) == 0;
	mode_t m = existed ? (st.st_mode & 07777) : mode;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, m);
	if (fd < 0)
		return mg_err_sys(err, errno, "creating %s", tmp);
	/* the umask applies to open's mode: an existing file's own is set again */
	if (existed && fchmod(fd, m) < 0) {
		int e = errno;
		close(fd);
		unlink(tmp);
		return mg_err_sys(err, e, "setting the mode of %s", tmp);
	}
	size_t off = 0;
	while (off < len) {
		ssize_t w = write(fd, (const char *)data + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = errno;
			close(fd);
			unlink(tmp);
			return mg_err_sys(err, e, "writing %s", tmp);
		}
		off += (size_t)w;
	}
	if (fsync(fd) < 0 || close(fd) < 0) {
		int e = errno;
		unlink(tmp);
		return mg_err_sys(err, e, "writing %s", tmp);
	}
	if (rename(tmp, path) < 0) {
		int e = errno;
		unlink(tmp);
		return mg_err_sys(err, e, "replacing %s", path);
	}
	cleanup_free char *dir_copy = xstrdup(path);
	int dfd = open(dirname(dir_copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
}

/* the folder of the running program into self; false when unknown */
static bool self_dir(char self[PATH_MAX])
{
	ssize_t n = readlink("/proc/self/exe", self, PATH_MAX - 1);
	if (n <= 0)
		return false;
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	if (slash == NULL)
		return false;
	*slash = '\0';
	return true;
}

char *mg_path_beside_self(const char *path)
{
	char self[PATH_MAX];
	return self_dir(self) ? xasprintf("%s/%s", self, path) : NULL;
}

char *mg_find_beside_self(const char *const *paths, int amode)
{
	char self[PATH_MAX];
	if (!self_dir(self))
		return NULL;
	for (size_t i = 0; paths[i] != NULL; i++) {
		cleanup_free char *path = xasprintf("%s/%s", self, paths[i]);
		char real[PATH_MAX];
		if (access(path, amode) == 0)
			return xstrdup(realpath(path, real) != NULL ? real : path);
	}
	return NULL;
}

#define REMOVE_DEPTH_MAX 256

/* Everything below dirfd (named where in messages), links never followed */
static int remove_below(int dirfd, const char *where, unsigned depth, struct mg_err **err)
{
	if (depth > REMOVE_DEPTH_MAX)
		return mg_err_set(err, "%s: more than %d folders deep", where, REMOVE_DEPTH_MAX);
	int fd = dup(dirfd);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
	if (dir == NULL) {
		if (fd >= 0)
			close(fd);
		return mg_err_sys(err, errno, "reading %s", where);
	}
	int r = 0;
	struct dirent *e;
	while (r == 0 && (e = readdir(dir)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		struct stat st;
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = mg_err_sys(err, errno, "%s/%s", where, e->d_name);
			break;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (unlinkat(dirfd, e->d_name, 0) < 0)
				r = mg_err_sys(err, errno, "removing %s/%s", where, e->d_name);
			continue;
		}
		cleanup_free char *path = xasprintf("%s/%s", where, e->d_name);
		int child =
		    openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (child < 0) {
			r = mg_err_sys(err, errno, "opening %s", path);
			break;
		}
		r = remove_below(child, path, depth + 1, err);
		close(child);
		if (r == 0 && unlinkat(dirfd, e->d_name, AT_REMOVEDIR) < 0)
			r = mg_err_sys(err, errno, "removing %s", path);
	}
	closedir(dir);
	return r;
}

int mg_remove_tree(const char *path, struct mg_err **err)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0 && (errno == ELOOP || errno == ENOTDIR))
		return unlink(path) < 0 ? mg_err_sys(err, errno, "removing %s", path) : 0;
	if (fd < 0)
		return mg_err_sys(err, errno, "%s", path);
	int r = remove_below(fd, path, 0, err);
	close(fd);
	if (r == 0 && rmdir(path) < 0)
		r = mg_err_sys(err, errno, "removing %s", path);
	return r;
}
