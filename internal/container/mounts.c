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
 * can reach. With rootless podman the same bind is made in podman's own
 * user and mount namespace (`podman unshare mcpgate __stage`), from the very
 * descriptor mcpgate opened, handed over a socket. Where nothing can be staged, a
 * mount that lies inside any server's write mount is refused instead. */
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/xalloc.h"
#include "internal/container/container-internal.h"
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
	struct stat st;
	/* the root only as ".", which the configuration allows read-only; any
	 * other path strictly inside */
	bool root = strcmp(path, ".") == 0;
	if (root && strcmp(real, ws_real) != 0)
		why = "is not the workspace itself";
	else if (root && fstatat(fd, ".mcpgate", &st, AT_SYMLINK_NOFOLLOW) == 0)
		why = "holds .mcpgate, mcpgate's own state, which no server may read";
	else if (root)
		;
	else if (strncmp(real, ws_real, n) != 0 || real[n] != '/' || real[n + 1] == '\0')
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

/* The flags of fd's mount that a bind of it must keep: in a user namespace
 * the kernel refuses a remount that would drop them */
static unsigned long kept_flags(int fd)
{
	struct statvfs v;
	if (fstatvfs(fd, &v) < 0)
		return 0;
	unsigned long f = 0;
	f |= (v.f_flag & ST_RDONLY) ? MS_RDONLY : 0;
	f |= (v.f_flag & ST_NOEXEC) ? MS_NOEXEC : 0;
	f |= (v.f_flag & ST_NOATIME) ? MS_NOATIME : 0;
	f |= (v.f_flag & ST_NODIRATIME) ? MS_NODIRATIME : 0;
	f |= (v.f_flag & ST_RELATIME) ? MS_RELATIME : 0;
	return f;
}

/* Bind fd's directory on staged, private, non-recursive, nosuid and nodev,
 * read-only when ro, not executable when noexec (a kept home). */
static int stage(int fd, const char *staged, bool ro, bool noexec, struct mg_err **err)
{
	char src[64];
	snprintf(src, sizeof(src), "/proc/self/fd/%d", fd);
	if (mount(src, staged, NULL, MS_BIND, NULL) < 0)
		return mg_err_sys(err, errno, "binding the mount on %s", staged);
	unsigned long flags = MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | kept_flags(fd) |
	                      (ro ? MS_RDONLY : 0) | (noexec ? MS_NOEXEC : 0);
	if (mount(NULL, staged, NULL, MS_PRIVATE, NULL) < 0 ||
	    mount(NULL, staged, NULL, flags, NULL) < 0) {
		int e = errno;
		umount2(staged, MNT_DETACH);
		return mg_err_sys(err, e, "making %s private%s", staged,
		                  ro ? " and read-only" : "");
	}
	return 0;
}

/* The bind let go and its folder removed. Without root umount2 fails, and
 * the bind, made in podman's namespace, goes with the folder: the kernel
 * detaches mounts on a folder removed from another namespace. */
static void unstage(const char *staged)
{
	umount2(staged, MNT_DETACH);
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

enum stage_how {
	STAGE_NONE,    /* the runtime gets the real path; the unstaged rule applies */
	STAGE_HERE,    /* root: binds in mcpgate's own mount namespace */
	STAGE_RUNTIME, /* rootless podman: binds in podman's namespaces */
};

static int make_stage_dir(struct ctr_mount_src *m, const struct ctr_mount_plan *plan, size_t i,
                          struct mg_err **err)
{
	m->staged = xasprintf("%s/%d-%s-%zu", plan->stage_dir, (int)getpid(), plan->tag, i);
	unstage(m->staged); /* a leftover of this very name */
	if (mkdir(m->staged, 0700) < 0) {
		mg_err_sys(err, errno, "making %s", m->staged);
		free(m->staged);
		m->staged = NULL;
		return -1;
	}
	return 0;
}

static void drop_stage_dir(struct ctr_mount_src *m)
{
	if (m->staged == NULL)
		return;
	unstage(m->staged);
	free(m->staged);
	m->staged = NULL;
}

#define STAGE_MSG_MAX (2 * PATH_MAX + 8)

/* Rootless podman: the binds are made in podman's user and mount namespace,
 * where its containers' mounts are made, by `mcpgate __stage` run there.
 * It is handed the descriptors mcpgate opened and checked, over a socket on
 * its stdin (SCM_RIGHTS). The kernel binds only what that namespace holds, so
 * it opens the real path there, following no link, and binds it only if it
 * is the very folder of the descriptor (device and inode).
 * A folder that is a mountpoint there but not here is removed from here,
 * which detaches the bind there as well (unstage). */
static int stage_in_runtime(const struct ctr_mount_plan *plan, struct ctr_mounts *out,
                            struct mg_err **err)
{
	const struct cfg_server *s = plan->server;
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		return mg_err_sys(err, errno, "finding mcpgate's own binary");
	self[n] = '\0';
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return mg_err_sys(err, errno, "making a socket for the staging");
	int r = 0;
	for (size_t i = 0; i < out->n && r == 0; i++) {
		struct ctr_mount_src *m = &out->v[i];
		if (make_stage_dir(m, plan, i, err) < 0) {
			r = mg_err_wrap(err, "mount \"%s\"", s->mounts[i].path);
			break;
		}
		char text[STAGE_MSG_MAX];
		int len = snprintf(text, sizeof(text), "%s %s%c%s",
		                   s->mounts[i].home    ? "rn"
		                   : s->mounts[i].write ? "rw"
		                                        : "ro",
		                   m->staged, '\0', m->real);
		if (len < 0 || (size_t)len >= sizeof(text)) {
			r = mg_err_set(err, "the staging path %s is too long", m->staged);
			break;
		}
		union {
			struct cmsghdr h;
			char buf[CMSG_SPACE(sizeof(int))];
		} c;
		memset(&c, 0, sizeof(c));
		struct iovec iov = {.iov_base = text, .iov_len = (size_t)len};
		struct msghdr msg = {.msg_iov = &iov,
		                     .msg_iovlen = 1,
		                     .msg_control = c.buf,
		                     .msg_controllen = sizeof(c.buf)};
		struct cmsghdr *h = CMSG_FIRSTHDR(&msg);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(h), &m->fd, sizeof(int));
		if (sendmsg(sv[0], &msg, MSG_NOSIGNAL) != len)
			r = mg_err_sys(err, errno, "handing mount \"%s\" over", s->mounts[i].path);
	}
	close(sv[0]); /* the helper reads to the end */
	if (r == 0) {
		const char *args[] = {self, "__stage", NULL};
		r = ctr_cli_unshare(plan->driver, args, sv[1], err);
	}
	close(sv[1]);
	if (r < 0)
		for (size_t i = 0; i < out->n; i++)
			drop_stage_dir(&out->v[i]);
	return r;
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
	enum stage_how how = plan->stage_dir == NULL                                 ? STAGE_NONE
	                     : geteuid() == 0                                        ? STAGE_HERE
	                     : plan->driver != NULL && ctr_can_unshare(plan->driver) ? STAGE_RUNTIME
	                                                                             : STAGE_NONE;
	if (how != STAGE_NONE && mg_mkdir_p(plan->stage_dir, 0700, err) < 0)
		goto fail;
	for (size_t i = 0; i < s->nmounts; i++) {
		struct ctr_mount_src *m = &out->v[out->n];
		m->fd = -1;
		if (ctr_mount_open(plan->workspace, s->mounts[i].path, plan->protected_dirs, &m->fd,
		                   &m->real, err) < 0)
			goto fail_server;
		out->n++;
		if (how != STAGE_HERE)
			continue;
		if (make_stage_dir(m, plan, i, err) < 0)
			goto fail_server;
		if (stage(m->fd, m->staged, !s->mounts[i].write, s->mounts[i].home, err) < 0) {
			rmdir(m->staged);
			free(m->staged);
			m->staged = NULL;
			goto fail_server;
		}
	}
	/* a failure here is a refusal: falling back to the path would hand the
	 * runtime the very race this is for */
	if (how == STAGE_RUNTIME && stage_in_runtime(plan, out, err) < 0)
		goto fail_server;
	for (size_t i = 0; i < out->n; i++) {
		struct ctr_mount_src *m = &out->v[i];
		if (how == STAGE_NONE) {
			const char *holder = inside_write_mount(s->mounts[i].path, plan->cfg);
			if (holder != NULL) {
				mg_err_set(
				    err,
				    "mount \"%s\" lies inside a write mount of server %s, which "
				    "could swap it under the runtime, and it cannot be pinned "
				    "here (docs/mounts.md)",
				    s->mounts[i].path, holder);
				goto fail_server;
			}
		}
		m->host = xstrdup(m->staged != NULL ? m->staged : m->real);
	}
	return 0;
fail_server:
	mg_err_wrap(err, "server %s", s->name);
fail:
	ctr_mounts_release(out);
	return -1;
}

/* ---- mcpgate __stage, run by `podman unshare` ---------------------------- */

/* One message of stdin: "ro|rw|rn STAGED\0REAL" (rn: written, not
 * executable) with the checked folder's descriptor. 1 when one was read, 0
 * at the end, -1 with err. */
static int stage_next(int *fd, bool *ro, bool *noexec, char *staged, char *real,
                      struct mg_err **err)
{
	char text[STAGE_MSG_MAX + 1];
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * 4)];
	} c;
	struct iovec iov = {.iov_base = text, .iov_len = sizeof(text) - 1};
	struct msghdr msg = {.msg_iov = &iov,
	                     .msg_iovlen = 1,
	                     .msg_control = c.buf,
	                     .msg_controllen = sizeof(c.buf)};
	ssize_t n;
	do
		n = recvmsg(STDIN_FILENO, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return mg_err_sys(err, errno, "reading stdin");
	*fd = -1;
	int got = 0;
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&msg); h != NULL; h = CMSG_NXTHDR(&msg, h))
		if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS)
			for (size_t k = 0; k < (h->cmsg_len - CMSG_LEN(0)) / sizeof(int); k++) {
				int one;
				memcpy(&one, CMSG_DATA(h) + k * sizeof(int), sizeof(int));
				if (got++ == 0)
					*fd = one;
				else
					close(one);
			}
	if (n == 0 && got == 0)
		return 0;
	text[n] = '\0';
	size_t first = strlen(text);
	struct stat st;
	if (got != 1 || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0 || first < 4 ||
	    first >= (size_t)n || first - 3 >= PATH_MAX || (size_t)n - first - 1 >= PATH_MAX ||
	    (strncmp(text, "ro ", 3) != 0 && strncmp(text, "rw ", 3) != 0 &&
	     strncmp(text, "rn ", 3) != 0) ||
	    text[3] != '/' || text[first + 1] != '/' ||
	    strlen(text + first + 1) != (size_t)n - first - 1 || fstat(*fd, &st) < 0 ||
	    !S_ISDIR(st.st_mode)) {
		if (*fd >= 0)
			close(*fd);
		return mg_err_set(err, "a message on stdin is not \"ro|rw|rn /STAGED\\0/REAL\" "
		                       "with a folder's descriptor");
	}
	*ro = text[1] == 'o';
	*noexec = text[1] == 'n';
	memcpy(staged, text + 3, first - 2);
	memcpy(real, text + first + 1, (size_t)n - first);
	return 1;
}

/* REAL opened here with no link followed, when it is the folder of checked
 * (the same device and inode); a swap between the two is tried again a few
 * times, then refused */
static int open_same(const char *real, int checked, struct mg_err **err)
{
	struct stat want, st;
	if (fstat(checked, &want) < 0)
		return mg_err_sys(err, errno, "%s", real);
	struct open_how how = {
	    .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
	    .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	for (int tries = 0; tries < 64; tries++) {
		int fd = (int)syscall(SYS_openat2, AT_FDCWD, real, &how, sizeof(how));
		if (fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == want.st_dev &&
		    st.st_ino == want.st_ino)
			return fd;
		if (fd >= 0)
			close(fd);
	}
	return mg_err_set(err, "%s is not the folder that was checked (it is being swapped)", real);
}

/* What stage_in_runtime hands over on stdin, each staged in this namespace.
 * All or nothing. */
int ctr_mounts_stage_main(int argc, char **argv)
{
	(void)argv;
	if (argc != 1) {
		fprintf(stderr, "mcpgate __stage: takes no arguments; mcpgate runs it itself\n");
		return 2;
	}
	char done[16][PATH_MAX];
	size_t ndone = 0;
	struct mg_err *err = NULL;
	for (;;) {
		int checked = -1;
		bool ro = false, noexec = false;
		char staged[PATH_MAX], real[PATH_MAX];
		int r = stage_next(&checked, &ro, &noexec, staged, real, &err);
		if (r <= 0)
			break;
		int fd = ndone < sizeof(done) / sizeof(done[0])
		             ? open_same(real, checked, &err)
		             : mg_err_set(&err, "too many mounts");
		close(checked);
		if (fd < 0)
			break;
		r = stage(fd, staged, ro, noexec, &err);
		close(fd);
		if (r < 0)
			break;
		memcpy(done[ndone++], staged, strlen(staged) + 1);
	}
	if (err == NULL)
		return 0;
	for (size_t i = 0; i < ndone; i++)
		umount2(done[i], MNT_DETACH);
	fprintf(stderr, "mcpgate __stage: %s\n", mg_err_msg(err));
	mg_err_free(err);
	return 1;
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
