/* A server's mounts, opened without a race (docs/mounts.md).
 *
 * A server with a write mount can rename and link inside it while another
 * server's mount below it is being set up. A path that was checked and is
 * then handed to the runtime by name can lead somewhere else by the time
 * the runtime follows it (it led to the host's / once). So each mount is
 * opened in one step beneath the workspace (openat2 RESOLVE_BENEATH): the
 * kernel resolves it, links included, and refuses anything that leaves. As
 * root, mcpgate then binds that very directory (through its fd) on a
 * private staging folder of its own, non-recursively and read-only where
 * the mount is, and gives the runtime the staging folder, which no container
 * can reach. Without root nothing can be staged, so a mount that lies
 * inside any server's write mount is refused instead. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/xalloc.h"
#include "internal/container/container.h"

static int open_beneath(int dirfd, const char *path)
{
	struct open_how how = {
	    .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
	    .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	for (int tries = 0; tries < 16; tries++) {
		long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
		/* EAGAIN: a rename raced the walk; the kernel asks again */
		if (fd >= 0 || errno != EAGAIN)
			return (int)fd;
	}
	return -1;
}

static char *fd_path(int fd)
{
	char link[64], buf[PATH_MAX];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, buf, sizeof(buf) - 1);
	if (n < 0)
		return NULL;
	buf[n] = '\0';
	return xstrdup(buf);
}

/* a == b, or one holds the other */
static bool path_nested(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t n = la < lb ? la : lb;
	if (strncmp(a, b, n) != 0)
		return false;
	const char *longer = la > lb ? a : b;
	return la == lb || longer[n] == '/' || n == 1;
}

int ctr_mount_open(const char *workspace, const char *path, const char *const *protected_dirs,
                   int *fd_out, char **real_out, struct mg_err **err)
{
	*fd_out = -1;
	*real_out = NULL;
	int ws = open(workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (ws < 0)
		return mg_err_sys(err, errno, "workspace %s", workspace);
	cleanup_free char *ws_real = fd_path(ws);
	int fd = open_beneath(ws, path);
	int e = errno;
	close(ws);
	if (ws_real == NULL) {
		if (fd >= 0)
			close(fd);
		return mg_err_sys(err, errno, "workspace %s", workspace);
	}
	if (fd < 0) {
		if (e == EXDEV)
			return mg_err_set(err,
			                  "mount \"%s\" leads outside the workspace %s (through "
			                  "\"..\" or a link)",
			                  path, ws_real);
		return mg_err_sys(err, e, "mount \"%s\" (%s/%s)", path, ws_real, path);
	}
	char *real = fd_path(fd);
	if (real == NULL) {
		e = errno;
		close(fd);
		return mg_err_sys(err, e, "mount \"%s\"", path);
	}
	size_t n = strlen(ws_real);
	const char *why = NULL;
	/* strictly inside: the workspace root itself is never mounted */
	if (strncmp(real, ws_real, n) != 0 || real[n] != '/' || real[n + 1] == '\0')
		why = "is the workspace itself or outside it";
	else if (strncmp(real + n + 1, ".mcpgate", 8) == 0 &&
	         (real[n + 9] == '\0' || real[n + 9] == '/'))
		why = "is inside mcpgate's own state";
	/* --mount separates its fields with commas */
	else if (strchr(real, ',') != NULL)
		why = "holds a comma, which the runtime's --mount cannot carry";
	for (size_t i = 0; why == NULL && protected_dirs != NULL && protected_dirs[i] != NULL;
	     i++) {
		char pr[PATH_MAX];
		const char *p = realpath(protected_dirs[i], pr) != NULL ? pr : protected_dirs[i];
		if (path_nested(real, p))
			why = "is, holds or lies inside one of mcpgate's own folders (its "
			      "configuration, keychain or state)";
	}
	if (why != NULL) {
		mg_err_set(err, "mount \"%s\" resolves to %s, which %s", path, real, why);
		free(real);
		close(fd);
		return -1;
	}
	*fd_out = fd;
	*real_out = real;
	return 0;
}

/* Bind fd's directory on staged, private, non-recursive, nosuid and nodev,
 * read-only when ro. */
static int stage(int fd, const char *staged, bool ro, struct mg_err **err)
{
	char src[64];
	snprintf(src, sizeof(src), "/proc/self/fd/%d", fd);
	if (mount(src, staged, NULL, MS_BIND, NULL) < 0)
		return mg_err_sys(err, errno, "binding the mount on %s", staged);
	unsigned long flags = MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | (ro ? MS_RDONLY : 0);
	if (mount(NULL, staged, NULL, MS_PRIVATE, NULL) < 0 ||
	    mount(NULL, staged, NULL, flags, NULL) < 0) {
		int e = errno;
		umount2(staged, MNT_DETACH);
		return mg_err_sys(err, e, "making %s private%s", staged,
		                  ro ? " and read-only" : "");
	}
	return 0;
}

static void unstage(const char *staged)
{
	if (umount2(staged, MNT_DETACH) == 0 || errno == EINVAL || errno == ENOENT)
		rmdir(staged);
}

/* Another mount of the configuration, written, that holds this one: its
 * server could swap the path under the runtime */
static const char *inside_write_mount(const char *path, const struct cfg *cfg)
{
	for (size_t i = 0; cfg != NULL && i < cfg->nservers; i++)
		for (size_t j = 0; j < cfg->servers[i].nmounts; j++) {
			const struct cfg_mount *m = &cfg->servers[i].mounts[j];
			size_t n = strlen(m->path);
			if (m->write && strncmp(path, m->path, n) == 0 && path[n] == '/')
				return cfg->servers[i].name;
		}
	return NULL;
}

int ctr_mounts_open(const struct ctr_mount_plan *plan, struct ctr_mounts *out, struct mg_err **err)
{
	const struct cfg_server *s = plan->server;
	memset(out, 0, sizeof(*out));
	if (s->nmounts == 0)
		return 0;
	if (plan->workspace == NULL)
		return mg_err_set(err, "server %s has mounts but no workspace was given", s->name);
	out->v = xcalloc(s->nmounts, sizeof(out->v[0]));
	bool staging = plan->stage_dir != NULL && geteuid() == 0;
	if (staging && mg_mkdir_p(plan->stage_dir, 0700, err) < 0)
		goto fail;
	for (size_t i = 0; i < s->nmounts; i++) {
		struct ctr_mount_src *m = &out->v[out->n];
		m->fd = -1;
		if (ctr_mount_open(plan->workspace, s->mounts[i].path, plan->protected_dirs, &m->fd,
		                   &m->real, err) < 0)
			goto fail_server;
		out->n++;
		if (!staging) {
			const char *holder = inside_write_mount(s->mounts[i].path, plan->cfg);
			if (holder != NULL) {
				mg_err_set(
				    err,
				    "mount \"%s\" lies inside a write mount of server %s, which "
				    "could swap it under the runtime; only root can pin it "
				    "(docs/mounts.md)",
				    s->mounts[i].path, holder);
				goto fail_server;
			}
			m->host = xstrdup(m->real);
			continue;
		}
		m->staged = xasprintf("%s/%d-%s-%zu", plan->stage_dir, (int)getpid(), plan->tag, i);
		unstage(m->staged); /* a leftover of this very name */
		if (mkdir(m->staged, 0700) < 0) {
			mg_err_sys(err, errno, "making %s", m->staged);
			free(m->staged);
			m->staged = NULL;
			goto fail_server;
		}
		if (stage(m->fd, m->staged, !s->mounts[i].write, err) < 0) {
			rmdir(m->staged);
			free(m->staged);
			m->staged = NULL;
			goto fail_server;
		}
		m->host = xstrdup(m->staged);
	}
	return 0;
fail_server:
	mg_err_wrap(err, "server %s", s->name);
fail:
	ctr_mounts_release(out);
	return -1;
}

void ctr_mounts_release(struct ctr_mounts *m)
{
	for (size_t i = 0; i < m->n; i++) {
		if (m->v[i].staged != NULL)
			unstage(m->v[i].staged);
		if (m->v[i].fd >= 0)
			close(m->v[i].fd);
		free(m->v[i].staged);
		free(m->v[i].real);
		free(m->v[i].host);
	}
	free(m->v);
	memset(m, 0, sizeof(*m));
}

void ctr_mounts_sweep(const char *stage_dir)
{
	DIR *d = opendir(stage_dir);
	if (d == NULL)
		return;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		char *end = NULL;
		long pid = strtol(de->d_name, &end, 10);
		if (end == de->d_name || *end != '-' || pid <= 0 || ctr_owner_alive((pid_t)pid))
			continue;
		cleanup_free char *p = xasprintf("%s/%s", stage_dir, de->d_name);
		unstage(p);
	}
	closedir(d);
}
