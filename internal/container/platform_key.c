/* What would change podman's or docker's answer to `info` here, as text to
 * hash (docs/2026-12-02-start-path.md): the runtime's command and mcpgate's
 * own (whose rules read the answer), the environment the runtime gets, the
 * user, the kernel and this boot, the cgroup file system and the controllers
 * this user may use, and every configuration file the runtime reads (by
 * content). A runtime that answers from elsewhere (CONTAINER_HOST, a docker
 * context, DOCKER_HOST that is not a local socket) gives no key: what it
 * says is asked every time. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/xalloc.h"
#include "internal/container/container-internal.h"

/* A configuration file is hashed whole up to this; larger, its stat stands */
#define KEY_FILE_MAX (1u << 20)

static const char *env_value(const struct ctr_driver *d, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < d->env.n; i++)
		if (strncmp(d->env.v[i], name, n) == 0 && d->env.v[i][n] == '=')
			return d->env.v[i] + n + 1;
	return NULL;
}

static void put_stat(struct mg_buf *k, const struct stat *st)
{
	mg_buf_printf(
	    k, NULL,
	    " dev=%llu ino=%llu mode=%o uid=%u size=%lld mtime=%lld.%09ld ctime=%lld.%09ld",
	    (unsigned long long)st->st_dev, (unsigned long long)st->st_ino, (unsigned)st->st_mode,
	    (unsigned)st->st_uid, (long long)st->st_size, (long long)st->st_mtim.tv_sec,
	    st->st_mtim.tv_nsec, (long long)st->st_ctim.tv_sec, st->st_ctim.tv_nsec);
}

/* path's identity, and its content's hash when it is a small regular file */
static void put_file(struct mg_buf *k, const char *what, const char *path)
{
	struct stat st;
	mg_buf_printf(k, NULL, "%s %s", what, path);
	if (stat(path, &st) < 0) {
		mg_buf_puts(k, " absent\n", NULL);
		return;
	}
	put_stat(k, &st);
	char *text = NULL;
	size_t len = 0;
	if (S_ISREG(st.st_mode) && st.st_size <= (off_t)KEY_FILE_MAX &&
	    mg_read_file(path, KEY_FILE_MAX, &text, &len, NULL) == 0) {
		unsigned char h[crypto_hash_sha256_BYTES];
		char hex[2 * sizeof(h) + 1];
		crypto_hash_sha256(h, (const unsigned char *)text, len);
		sodium_bin2hex(hex, sizeof(hex), h, sizeof(h));
		mg_buf_printf(k, NULL, " sha256=%s", hex);
		free(text);
	}
	mg_buf_putc(k, '\n', NULL);
}

/* A small kernel file's text as it is (cgroup controllers, the boot id) */
static void put_text(struct mg_buf *k, const char *path)
{
	char *text = NULL;
	size_t len = 0;
	if (mg_read_file(path, 64 * 1024, &text, &len, NULL) < 0) {
		mg_buf_printf(k, NULL, "text %s absent\n", path);
		return;
	}
	mg_buf_printf(k, NULL, "text %s %zu\n", path, len);
	mg_buf_append(k, text, len, NULL);
	mg_buf_putc(k, '\n', NULL);
	free(text);
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* A .d folder: the folder itself and every entry in it, in name order */
static void put_dir(struct mg_buf *k, const char *path)
{
	put_file(k, "dir", path);
	struct dirent **list = NULL;
	int n = scandir(path, &list, NULL, by_name);
	for (int i = 0; i < n; i++) {
		if (strcmp(list[i]->d_name, ".") != 0 && strcmp(list[i]->d_name, "..") != 0) {
			cleanup_free char *p = xasprintf("%s/%s", path, list[i]->d_name);
			put_file(k, "entry", p);
		}
		free(list[i]);
	}
	free(list);
}

/* /proc/cgroups without its count of cgroups, which changes all the time */
static void put_cgroups_v1(struct mg_buf *k)
{
	char *text = NULL;
	size_t len = 0;
	if (mg_read_file("/proc/cgroups", 64 * 1024, &text, &len, NULL) < 0) {
		mg_buf_puts(k, "cgroups absent\n", NULL);
		return;
	}
	/* "name hierarchy count enabled" by tabs: all but the count */
	for (char *line = text; line < text + len;) {
		char *end = memchr(line, '\n', (size_t)(text + len - line));
		if (end == NULL)
			end = text + len;
		char *f[4] = {line, NULL, NULL, NULL};
		size_t nf = 1;
		for (char *c = line; c < end && nf < 4; c++)
			if (*c == '\t')
				f[nf++] = c + 1;
		if (nf == 4) {
			mg_buf_append(k, f[0], (size_t)(f[2] - f[0]), NULL);
			mg_buf_append(k, f[3], (size_t)(end - f[3]), NULL);
			mg_buf_putc(k, '\n', NULL);
		}
		line = end + 1;
	}
	free(text);
}

/* The kernel, this boot, and the cgroups this user's containers would get */
static void put_kernel(struct mg_buf *k)
{
	struct utsname u;
	if (uname(&u) == 0)
		mg_buf_printf(k, NULL, "uname %s %s %s %s\n", u.sysname, u.release, u.version,
		              u.machine);
	put_text(k, "/proc/sys/kernel/random/boot_id");
	struct statfs fs;
	if (statfs("/sys/fs/cgroup", &fs) == 0)
		mg_buf_printf(k, NULL, "cgroupfs %llx\n", (unsigned long long)fs.f_type);
	if (statfs("/sys/fs/cgroup/unified", &fs) == 0)
		mg_buf_printf(k, NULL, "unified %llx\n", (unsigned long long)fs.f_type);
	put_cgroups_v1(k);
	put_text(k, "/sys/fs/cgroup/cgroup.controllers");
	put_text(k, "/sys/fs/cgroup/cgroup.subtree_control");
	/* rootless: what systemd delegates to the user, and to this process */
	unsigned uid = (unsigned)geteuid();
	cleanup_free char *user = xasprintf(
	    "/sys/fs/cgroup/user.slice/user-%u.slice/user@%u.service/cgroup.controllers", uid, uid);
	put_text(k, user);
	char *self = NULL;
	size_t len = 0;
	if (mg_read_file("/proc/self/cgroup", 64 * 1024, &self, &len, NULL) == 0) {
		char *v2 = strstr(self, "0::");
		if (v2 == self || (v2 != NULL && v2[-1] == '\n')) {
			v2 += 3;
			v2[strcspn(v2, "\n")] = '\0';
			/* the controllers of this process's own cgroup, not its name:
			 * a new login's scope has another name and the same controllers */
			if (strstr(v2, "..") == NULL) {
				cleanup_free char *p =
				    xasprintf("/sys/fs/cgroup%s/cgroup.controllers", v2);
				char *text = NULL;
				size_t tl = 0;
				if (mg_read_file(p, 64 * 1024, &text, &tl, NULL) == 0) {
					mg_buf_puts(k, "own controllers ", NULL);
					mg_buf_append(k, text, tl, NULL);
					mg_buf_putc(k, '\n', NULL);
					free(text);
				}
			}
		}
		free(self);
	}
}

static void put_podman_files(const struct ctr_driver *d, struct mg_buf *k)
{
	const char *home = env_value(d, "HOME");
	static const char *const files[] = {
	    "/usr/share/containers/containers.conf", "/etc/containers/containers.conf",
	    "/usr/share/containers/storage.conf",    "/etc/containers/storage.conf",
	    "/etc/containers/libpod.conf",           NULL};
	for (size_t i = 0; files[i] != NULL; i++)
		put_file(k, "file", files[i]);
	put_dir(k, "/usr/share/containers/containers.conf.d");
	put_dir(k, "/etc/containers/containers.conf.d");
	if (home != NULL && home[0] == '/') {
		cleanup_free char *conf = xasprintf("%s/.config/containers/containers.conf", home);
		cleanup_free char *confd =
		    xasprintf("%s/.config/containers/containers.conf.d", home);
		cleanup_free char *storage = xasprintf("%s/.config/containers/storage.conf", home);
		put_file(k, "file", conf);
		put_dir(k, confd);
		put_file(k, "file", storage);
	}
	static const char *const named[] = {"CONTAINERS_CONF", "CONTAINERS_STORAGE_CONF", NULL};
	for (size_t i = 0; named[i] != NULL; i++) {
		const char *v = env_value(d, named[i]);
		if (v != NULL)
			put_file(k, named[i], v);
	}
}

/* docker's daemon, by the socket it listens on: a restarted dockerd makes
 * it anew (another inode and ctime). 0 when the daemon is not a local one. */
static int put_docker(const struct ctr_driver *d, struct mg_buf *k)
{
	const char *host = env_value(d, "DOCKER_HOST");
	const char *sock = "/var/run/docker.sock";
	if (host != NULL && *host != '\0') {
		if (strncmp(host, "unix://", 7) != 0 || host[7] != '/')
			return 0;
		sock = host + 7;
	}
	if (env_value(d, "DOCKER_CONTEXT") != NULL)
		return 0;
	const char *home = env_value(d, "HOME");
	const char *config_dir = env_value(d, "DOCKER_CONFIG");
	cleanup_free char *own = NULL;
	if (config_dir == NULL && home != NULL && home[0] == '/')
		config_dir = own = xasprintf("%s/.docker", home);
	if (config_dir != NULL) {
		/* a current context may name a daemon elsewhere */
		cleanup_free char *cfg = xasprintf("%s/config.json", config_dir);
		char *text = NULL;
		size_t len = 0;
		if (mg_read_file(cfg, KEY_FILE_MAX, &text, &len, NULL) == 0) {
			bool context = strstr(text, "currentContext") != NULL;
			free(text);
			if (context)
				return 0;
		}
		put_file(k, "client", cfg);
	}
	struct stat st;
	if (stat(sock, &st) < 0 || !S_ISSOCK(st.st_mode))
		return 0;
	mg_buf_printf(k, NULL, "socket %s", sock);
	put_stat(k, &st);
	mg_buf_putc(k, '\n', NULL);
	put_file(k, "file", "/etc/docker/daemon.json");
	if (home != NULL && home[0] == '/') {
		cleanup_free char *rootless = xasprintf("%s/.config/docker/daemon.json", home);
		put_file(k, "file", rootless);
	}
	return 1;
}

int ctr_cli_platform_key(const struct ctr_driver *d, struct mg_buf *k)
{
	if (d->kind == CTR_PODMAN && (env_value(d, "CONTAINER_HOST") != NULL ||
	                              env_value(d, "CONTAINER_CONNECTION") != NULL))
		return 0;
	mg_buf_printf(k, NULL, "mcpgate platform key 1\nruntime %s\n", d->name);
	put_file(k, "command", d->path);
	/* the rules that read the answer are mcpgate's: a new build reads afresh */
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 0;
	self[n] = '\0';
	struct stat st;
	if (stat(self, &st) < 0)
		return 0;
	mg_buf_printf(k, NULL, "self %s", self);
	put_stat(k, &st);
	mg_buf_putc(k, '\n', NULL);
	for (size_t i = 0; i < d->env.n; i++)
		mg_buf_printf(k, NULL, "env %s\n", d->env.v[i]);
	mg_buf_printf(k, NULL, "user %u %u\n", (unsigned)geteuid(), (unsigned)getegid());
	put_kernel(k);
	if (d->kind == CTR_PODMAN)
		put_podman_files(d, k);
	else if (put_docker(d, k) == 0)
		return 0;
	return 1;
}
