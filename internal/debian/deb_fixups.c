/* What maintainer scripts would have made, made here instead, for what a
 * contained server needs; nothing of a package runs:
 *
 * - ca-certificates: its postinst (update-ca-certificates) writes the
 *   bundle /etc/ssl/certs/ca-certificates.crt from every certificate under
 *   /usr/share/ca-certificates/mozilla (all trusted, the package's default);
 *   here they are concatenated in byte order of their names;
 * - update-alternatives links a few commands programs call by their
 *   generic name: awk (gawk before mawk, as their priorities say), cc and
 *   c++ (gcc, g++), which, java. Each is a link to the program itself,
 *   without /etc/alternatives between, and only where the program is in
 *   the layer.
 *
 * Not made, and why: the ld.so cache (every library here is in a folder
 * Debian's loader searches without it), users and groups (a server runs as
 * a numeric user), compiled Python (a read-only root writes none, Python
 * reads the sources), and anything that starts a service. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/xalloc.h"
#include "internal/debian/debian.h"

#define CERTS_DIR  "usr/share/ca-certificates/mozilla"
#define BUNDLE_DIR "etc/ssl/certs"
#define BUNDLE     "ca-certificates.crt"
#define BUNDLE_MAX (16u << 20)
#define CERT_MAX   (1u << 20)

static const struct {
	const char *package, *link, *target;
} alternatives[] = {
    {"gawk", "usr/bin/awk", "gawk"},
    {"mawk", "usr/bin/awk", "mawk"},
    {"gcc", "usr/bin/cc", "gcc"},
    {"g++", "usr/bin/c++", "g++"},
    {"debianutils", "usr/bin/which", "which.debianutils"},
    {"openjdk-17-jre-headless", "usr/bin/java", "../lib/jvm/java-17-openjdk-amd64/bin/java"},
};

static bool in_lock(const struct deb_lock *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->pkgs[i].name, name) == 0)
			return true;
	return false;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* a folder below rootfd, made where missing, no link followed */
static int open_dir(int rootfd, const char *path, struct mg_err **err)
{
	cleanup_free char *copy = xstrdup(path);
	int fd = dup(rootfd);
	for (char *p = copy; fd >= 0 && p != NULL;) {
		char *slash = strchr(p, '/');
		if (slash != NULL)
			*slash = '\0';
		if (mkdirat(fd, p, 0755) < 0 && errno != EEXIST) {
			close(fd);
			return mg_err_sys(err, errno, "making /%s", path);
		}
		int next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		fd = next;
		p = slash != NULL ? slash + 1 : NULL;
	}
	return fd >= 0 ? fd : mg_err_sys(err, errno, "/%s", path);
}

static int read_at(int dirfd, const char *name, struct mg_buf *out, struct mg_err **err)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return mg_err_sys(err, errno, "/" CERTS_DIR "/%s", name);
	char buf[8192];
	size_t total = 0;
	int r = 0;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = mg_err_sys(err, errno, "/" CERTS_DIR "/%s", name);
			break;
		}
		if (n == 0)
			break;
		total += (size_t)n;
		if (total > CERT_MAX || mg_buf_append(out, buf, (size_t)n, err) < 0) {
			r = mg_err_set(err, "/" CERTS_DIR "/%s is too large", name);
			break;
		}
	}
	close(fd);
	return r;
}

static int ca_bundle(int rootfd, struct mg_err **err)
{
	int certs = openat(rootfd, CERTS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (certs < 0)
		return mg_err_sys(err, errno, "ca-certificates: /" CERTS_DIR);
	DIR *d = fdopendir(certs);
	if (d == NULL) {
		close(certs);
		return mg_err_sys(err, errno, "ca-certificates: /" CERTS_DIR);
	}
	struct strv names = STRV_INIT;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		size_t n = strlen(e->d_name);
		if (n > 4 && strcmp(e->d_name + n - 4, ".crt") == 0)
			strv_push(&names, e->d_name);
	}
	if (names.n > 0)
		qsort(names.v, names.n, sizeof(names.v[0]), name_cmp);
	struct mg_buf bundle = MG_BUF_INIT(BUNDLE_MAX);
	int r = 0;
	for (size_t i = 0; r == 0 && i < names.n; i++) {
		size_t before = bundle.len;
		r = read_at(dirfd(d), names.v[i], &bundle, err);
		if (r == 0 && bundle.len > before && bundle.data[bundle.len - 1] != '\n')
			r = mg_buf_putc(&bundle, '\n', err);
	}
	closedir(d);
	if (r == 0 && names.n == 0)
		r = mg_err_set(err, "ca-certificates: no certificate under /" CERTS_DIR);
	int out = r == 0 ? open_dir(rootfd, BUNDLE_DIR, err) : -1;
	if (out >= 0) {
		unlinkat(out, BUNDLE, 0);
		int fd =
		    openat(out, BUNDLE, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0 || write(fd, bundle.data, bundle.len) != (ssize_t)bundle.len)
			r = mg_err_sys(err, errno, "writing /" BUNDLE_DIR "/" BUNDLE);
		if (fd >= 0)
			close(fd);
		close(out);
	} else {
		r = -1;
	}
	mg_buf_free(&bundle);
	strv_free(&names);
	return r;
}

static int link_alternative(int rootfd, const char *link, const char *target, struct mg_err **err)
{
	cleanup_free char *dir = xstrdup(link);
	char *slash = strrchr(dir, '/');
	*slash = '\0';
	int dfd = openat(rootfd, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return 0;
	struct stat st;
	int r = 0;
	/* the program in the layer, and nothing at the link yet */
	if (fstatat(dfd, target, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    fstatat(dfd, slash + 1, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT &&
	    symlinkat(target, dfd, slash + 1) < 0)
		r = mg_err_sys(err, errno, "linking /%s", link);
	close(dfd);
	return r;
}

int deb_fixups(int rootfd, const struct deb_lock *l, struct mg_err **err)
{
	if (in_lock(l, "ca-certificates") && ca_bundle(rootfd, err) < 0)
		return -1;
	for (size_t i = 0; i < sizeof(alternatives) / sizeof(alternatives[0]); i++)
		if (in_lock(l, alternatives[i].package) &&
		    link_alternative(rootfd, alternatives[i].link, alternatives[i].target, err) < 0)
			return -1;
	return 0;
}
