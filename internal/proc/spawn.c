#define _GNU_SOURCE
#include "internal/proc/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal/base/cleanup.h"
#include "internal/base/xalloc.h"

/* Without a pidfd (a kernel or seccomp filter that refuses pidfd_open) a
 * wait falls back to checking this often. */
#define PROC_POLL_FALLBACK_MS 10

int64_t proc_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A poll() timeout for the time left until deadline_ms, at least 0. */
static int poll_timeout(int64_t deadline_ms)
{
	int64_t left = deadline_ms - proc_now_ms();
	if (left <= 0)
		return 0;
	return left > INT_MAX ? INT_MAX : (int)left;
}

int proc_block_signals(struct mg_err **err)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	int rc = pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (rc != 0)
		return mg_err_sys(err, rc, "blocking signals");
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGPIPE, &sa, NULL) < 0)
		return mg_err_sys(err, errno, "ignoring SIGPIPE");
	/* a file past RLIMIT_FSIZE is a failed write (EFBIG) the audit log
	 * answers, not the end of the process */
	if (sigaction(SIGXFSZ, &sa, NULL) < 0)
		return mg_err_sys(err, errno, "ignoring SIGXFSZ");
	return 0;
}

static int pidfd_open_cloexec(pid_t pid)
{
	/* a pidfd is always close-on-exec */
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

void proc_close(struct proc *p)
{
	if (p == NULL)
		return;
	int *fds[] = {&p->in_fd, &p->out_fd, &p->err_fd, &p->pidfd};
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

/* The fds a spawn makes: the child's sources for 0-2 and the parent's
 * ends. Closed on every path; the parent's ends are stolen on success. */
struct spawn_fds {
	int child[3];  /* what becomes the child's fd i; -1 for a caller's fd */
	int parent[3]; /* the parent's end of pipe i */
	int moved[3];  /* a copy above 2 of a source that sat in 0-2 */
};

static void spawn_fds_close(struct spawn_fds *f)
{
	for (int i = 0; i < 3; i++) {
		int *fds[] = {&f->child[i], &f->parent[i], &f->moved[i]};
		for (size_t j = 0; j < sizeof(fds) / sizeof(fds[0]); j++) {
			if (*fds[j] >= 0)
				close(*fds[j]);
			*fds[j] = -1;
		}
	}
}

static const char *const stdio_names[] = {"stdin", "stdout", "stderr"};

/* Fill f->child[i] / f->parent[i] for one slot; *src is the fd the child's
 * fd i is duplicated from. */
static int stdio_prepare(const struct proc_stdio *s, int i, struct spawn_fds *f, int *src,
                         struct mg_err **err)
{
	switch (s->kind) {
	case PROC_STDIO_NULL:
		f->child[i] = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (f->child[i] < 0)
			return mg_err_sys(err, errno, "opening /dev/null");
		*src = f->child[i];
		return 0;
	case PROC_STDIO_PIPE: {
		int fds[2];
		if (pipe2(fds, O_CLOEXEC) < 0)
			return mg_err_sys(err, errno, "making a pipe for %s", stdio_names[i]);
		/* the child reads its stdin and writes the others */
		f->child[i] = i == 0 ? fds[0] : fds[1];
		f->parent[i] = i == 0 ? fds[1] : fds[0];
		if (s->nonblock) {
			int fl = fcntl(f->parent[i], F_GETFL);
			if (fl < 0 || fcntl(f->parent[i], F_SETFL, fl | O_NONBLOCK) < 0)
				return mg_err_sys(err, errno, "making %s non-blocking",
				                  stdio_names[i]);
		}
		*src = f->child[i];
		return 0;
	}
	case PROC_STDIO_FD:
		if (s->fd < 0)
			return mg_err_set(err, "invalid fd %d for %s", s->fd, stdio_names[i]);
		*src = s->fd;
		return 0;
	}
	return mg_err_set(err, "invalid kind %d for %s", (int)s->kind, stdio_names[i]);
}

static int spawn_attrs(const struct proc_spec *spec, posix_spawnattr_t *attr, struct mg_err **err)
{
	int rc = posix_spawnattr_init(attr);
	if (rc != 0)
		return mg_err_sys(err, rc, "posix_spawnattr_init");
	sigset_t none, defaults;
	sigemptyset(&none);
	sigemptyset(&defaults);
	for (int sig = 1; sig <= 31; sig++) {
		if (sig != SIGKILL && sig != SIGSTOP)
			sigaddset(&defaults, sig);
	}
	/* 32 and 33 belong to glibc (which leaves them ignored in the child;
	 * sigaddset refuses them); the real-time ones are ours to reset */
	for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
		sigaddset(&defaults, sig);
	short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
	if (spec->new_pgroup)
		flags |= POSIX_SPAWN_SETPGROUP;
	if ((rc = posix_spawnattr_setsigmask(attr, &none)) != 0 ||
	    (rc = posix_spawnattr_setsigdefault(attr, &defaults)) != 0 ||
	    (rc = posix_spawnattr_setpgroup(attr, 0)) != 0 ||
	    (rc = posix_spawnattr_setflags(attr, flags)) != 0) {
		posix_spawnattr_destroy(attr);
		return mg_err_sys(err, rc, "setting spawn attributes");
	}
	return 0;
}

/* File actions putting src[i] at fd i, then closing everything above 2.
 * Every src is either i itself or above 2 (see proc_spawn), so no dup2
 * overwrites a source a later one still needs. */
static int spawn_actions(const int src[3], posix_spawn_file_actions_t *fa, struct mg_err **err)
{
	int rc = posix_spawn_file_actions_init(fa);
	if (rc != 0)
		return mg_err_sys(err, rc, "posix_spawn_file_actions_init");
	for (int i = 0; i < 3 && rc == 0; i++) {
		/* dup2 onto itself clears close-on-exec (glibc >= 2.29, POSIX 2024) */
		rc = posix_spawn_file_actions_adddup2(fa, src[i], i);
	}
	if (rc == 0)
		rc = posix_spawn_file_actions_addclosefrom_np(fa, 3);
	if (rc != 0) {
		posix_spawn_file_actions_destroy(fa);
		return mg_err_sys(err, rc, "setting spawn file actions");
	}
	return 0;
}

int proc_write_all(int fd, const void *buf, size_t len, int64_t deadline_ms, struct mg_err **err)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return mg_err_sys(err, errno, "making a pipe non-blocking");
	const char *p = buf;
	int r = 0;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN) {
			r = mg_err_sys(err, errno, "writing to a pipe");
			break;
		}
		struct pollfd pfd = {.fd = fd, .events = POLLOUT};
		int t = poll_timeout(deadline_ms);
		int pr = t > 0 ? poll(&pfd, 1, t) : 0;
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0) {
			r = mg_err_sys(err, errno, "waiting to write to a pipe");
			break;
		}
		if (pr == 0) {
			r = mg_err_set(err, "the reader took nothing for too long (%zu bytes left)",
			               len);
			break;
		}
	}
	if (fcntl(fd, F_SETFL, fl) < 0 && r == 0)
		r = mg_err_sys(err, errno, "restoring a pipe's mode");
	return r;
}

int proc_spawn(const struct proc_spec *spec, struct proc *out, struct mg_err **err)
{
	*out = (struct proc)PROC_INIT;
	if (spec->path == NULL || spec->path[0] != '/')
		return mg_err_set(err, "%s: program path must be absolute",
		                  spec->path != NULL ? spec->path : "(null)");
	if (spec->argv == NULL || spec->argv[0] == NULL)
		return mg_err_set(err, "%s: empty argument list", spec->path);

	struct spawn_fds f = {{-1, -1, -1}, {-1, -1, -1}, {-1, -1, -1}};
	int src[3];
	for (int i = 0; i < 3; i++) {
		if (stdio_prepare(&spec->stdio[i], i, &f, &src[i], err) < 0)
			goto fail;
	}
	/* A source in 0-2 that is not its own target would be overwritten by
	 * an earlier dup2: give the child a copy above 2 instead. */
	for (int i = 0; i < 3; i++) {
		if (src[i] < 3 && src[i] != i) {
			f.moved[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 3);
			if (f.moved[i] < 0) {
				mg_err_sys(err, errno, "duplicating fd %d", src[i]);
				goto fail;
			}
			src[i] = f.moved[i];
		}
	}

	posix_spawnattr_t attr;
	if (spawn_attrs(spec, &attr, err) < 0)
		goto fail;
	posix_spawn_file_actions_t fa;
	if (spawn_actions(src, &fa, err) < 0) {
		posix_spawnattr_destroy(&attr);
		goto fail;
	}
	static const char *const no_env[] = {NULL};
	const char *const *envp = spec->envp != NULL ? spec->envp : no_env;
	pid_t pid;
	int rc = posix_spawn(&pid, spec->path, &fa, &attr, (char *const *)spec->argv,
	                     (char *const *)envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (rc != 0) {
		mg_err_sys(err, rc, "starting %s", spec->path);
		goto fail;
	}

	out->pid = pid;
	/* The child cannot be reaped before this (only its own pid is ever
	 * waited for), so the pidfd names it even if it already exited. */
	out->pidfd = pidfd_open_cloexec(pid);
	out->in_fd = steal_fd(&f.parent[0]);
	out->out_fd = steal_fd(&f.parent[1]);
	out->err_fd = steal_fd(&f.parent[2]);
	spawn_fds_close(&f);
	return 0;

fail:
	spawn_fds_close(&f);
	return -1;
}

int proc_signal(struct proc *p, int signo, struct mg_err **err)
{
	if (p->pid <= 0)
		return mg_err_set(err, "no process to signal");
	int r;
	if (p->pidfd >= 0)
		r = (int)syscall(SYS_pidfd_send_signal, p->pidfd, signo, NULL, 0);
	else
		r = kill(p->pid, signo);
	if (r < 0)
		return mg_err_sys(err, errno, "sending signal %d to process %d", signo,
		                  (int)p->pid);
	return 0;
}

int proc_wait(struct proc *p, int64_t deadline_ms, int *status, struct mg_err **err)
{
	if (p->pid <= 0)
		return mg_err_set(err, "no process to wait for");
	for (;;) {
		int st;
		pid_t r = waitpid(p->pid, &st, WNOHANG);
		if (r == p->pid) {
			p->pid = -1;
			if (status != NULL)
				*status = st;
			return 0;
		}
		if (r < 0 && errno != EINTR)
			return mg_err_sys(err, errno, "waiting for process %d", (int)p->pid);
		if (r < 0)
			continue;
		int timeout = poll_timeout(deadline_ms);
		if (timeout == 0) {
			mg_err_set(err, "process %d: timed out", (int)p->pid);
			return PROC_TIMED_OUT;
		}
		if (p->pidfd >= 0) {
			struct pollfd pfd = {.fd = p->pidfd, .events = POLLIN};
			if (poll(&pfd, 1, timeout) < 0 && errno != EINTR)
				return mg_err_sys(err, errno, "waiting for process %d",
				                  (int)p->pid);
		} else {
			poll(NULL, 0,
			     timeout < PROC_POLL_FALLBACK_MS ? timeout : PROC_POLL_FALLBACK_MS);
		}
	}
}

int proc_stop(struct proc *p, int64_t grace_ms, int *status)
{
	if (p->pid <= 0)
		return -1;
	if (grace_ms < 0)
		grace_ms = 0;
	proc_signal(p, SIGTERM, NULL);
	if (proc_wait(p, proc_now_ms() + grace_ms, status, NULL) == 0)
		return 0;
	proc_signal(p, SIGKILL, NULL);
	return proc_wait(p, proc_now_ms() + PROC_KILL_WAIT_MS, status, NULL) == 0 ? 0 : -1;
}

void proc_result_free(struct proc_result *res)
{
	if (res == NULL)
		return;
	mg_buf_free(&res->out);
	mg_buf_free(&res->err);
}

/* One captured pipe of proc_run(). */
struct capture {
	int *fd;
	struct mg_buf *buf;
	bool *truncated;
};

/* Read once from c->fd (non-blocking). Keeps what fits under the buffer's
 * maximum and drops the rest; closes the fd at end of file or on error.
 * Returns the bytes read, 0 at end of file, -1 when nothing was there. */
static ssize_t capture_read(struct capture *c)
{
	char chunk[65536];
	ssize_t n = read(*c->fd, chunk, sizeof(chunk));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return -1;
	if (n <= 0) {
		close(*c->fd);
		*c->fd = -1;
		return 0;
	}
	size_t room = c->buf->max - c->buf->len;
	size_t keep = (size_t)n < room ? (size_t)n : room;
	if (keep < (size_t)n)
		*c->truncated = true;
	if (keep > 0)
		mg_buf_append(c->buf, chunk, keep, NULL); /* fits: cannot fail */
	return n;
}

/* Kill the child's process group (it leads one) and reap the child. */
static int run_kill(struct proc *p, const char *name, int64_t timeout_ms, struct mg_err **err)
{
	kill(-p->pid, SIGKILL);
	proc_signal(p, SIGKILL, NULL);
	if (proc_wait(p, proc_now_ms() + PROC_KILL_WAIT_MS, NULL, NULL) < 0)
		return mg_err_set(err, "%s: timed out after %lld ms and could not be reaped", name,
		                  (long long)timeout_ms);
	return mg_err_set(err, "%s: timed out after %lld ms", name, (long long)timeout_ms);
}

int proc_run(const char *const argv[], const char *const envp[], int64_t timeout_ms, size_t out_max,
             struct proc_result *res, struct mg_err **err)
{
	return proc_run_in(argv, envp, -1, timeout_ms, out_max, res, err);
}

int proc_run_in(const char *const argv[], const char *const envp[], int in_fd, int64_t timeout_ms,
                size_t out_max, struct proc_result *res, struct mg_err **err)
{
	memset(res, 0, sizeof(*res));
	mg_buf_init(&res->out, out_max);
	mg_buf_init(&res->err, out_max);
	if (argv == NULL || argv[0] == NULL)
		return mg_err_set(err, "no program to run");
	if (timeout_ms < 0)
		return mg_err_set(err, "%s: invalid timeout %lld ms", argv[0],
		                  (long long)timeout_ms);

	struct proc_spec spec = {
	    .path = argv[0],
	    .argv = argv,
	    .envp = envp,
	    .stdio = {{in_fd >= 0 ? PROC_STDIO_FD : PROC_STDIO_NULL, in_fd, false},
	              {PROC_STDIO_PIPE, -1, true},
	              {PROC_STDIO_PIPE, -1, true}},
	    .new_pgroup = true,
	};
	int64_t deadline = proc_now_ms() + timeout_ms;
	struct proc p;
	if (proc_spawn(&spec, &p, err) < 0)
		return -1;

	struct capture caps[2] = {{&p.out_fd, &res->out, &res->out_truncated},
	                          {&p.err_fd, &res->err, &res->err_truncated}};
	bool exited = false, killed = false;
	int rc = 0;
	for (;;) {
		if (!exited) {
			int st;
			pid_t r = waitpid(p.pid, &st, WNOHANG);
			if (r == p.pid) {
				res->status = st;
				exited = true;
				p.pid = -1;
			} else if (r < 0 && errno != EINTR) {
				rc = mg_err_sys(err, errno, "waiting for %s", argv[0]);
				break;
			}
		}
		bool open_pipes = p.out_fd >= 0 || p.err_fd >= 0;
		if (exited && !open_pipes)
			break;
		if (poll_timeout(deadline) == 0) {
			if (exited)
				break; /* a grandchild keeps a pipe open: stop reading */
			rc = run_kill(&p, argv[0], timeout_ms, err);
			killed = true;
			break;
		}
		if (exited) {
			/* All the child wrote is in the pipes: read what is there. */
			bool more = false;
			for (int i = 0; i < 2; i++) {
				if (*caps[i].fd >= 0 && capture_read(&caps[i]) > 0)
					more = true;
			}
			if (!more)
				break;
			continue;
		}
		struct pollfd pfds[3] = {
		    {.fd = p.out_fd, .events = POLLIN},
		    {.fd = p.err_fd, .events = POLLIN},
		    {.fd = p.pidfd, .events = POLLIN},
		};
		int timeout = poll_timeout(deadline);
		if (p.pidfd < 0 && timeout > PROC_POLL_FALLBACK_MS)
			timeout = PROC_POLL_FALLBACK_MS;
		int n = poll(pfds, 3, timeout);
		if (n < 0 && errno != EINTR) {
			rc = mg_err_sys(err, errno, "waiting for %s", argv[0]);
			break;
		}
		for (int i = 0; i < 2 && n > 0; i++) {
			if (pfds[i].fd >= 0 && pfds[i].revents != 0)
				capture_read(&caps[i]);
		}
	}
	if (rc < 0 && !killed && p.pid > 0) {
		/* a failed poll or waitpid: do not leave the child behind */
		kill(-p.pid, SIGKILL);
		proc_signal(&p, SIGKILL, NULL);
		proc_wait(&p, proc_now_ms() + PROC_KILL_WAIT_MS, NULL, NULL);
	}
	proc_close(&p);
	return rc;
}

char *proc_find_in_path(const char *name, const char *path)
{
	if (name == NULL || *name == '\0' || strchr(name, '/') != NULL || path == NULL)
		return NULL;
	const char *p = path;
	while (*p != '\0') {
		const char *end = strchr(p, ':');
		size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
		if (len > 0 && p[0] == '/') {
			cleanup_free char *dir = xstrndup(p, len);
			cleanup_free char *cand = xasprintf("%s/%s", dir, name);
			struct stat st;
			if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0)
				return steal_pointer(&cand);
		}
		if (end == NULL)
			break;
		p = end + 1;
	}
	return NULL;
}

const char *proc_status_describe(int status, char *buf, size_t len)
{
	if (len == 0)
		return buf;
	int n;
	if (WIFEXITED(status)) {
		n = snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
	} else if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		const char *descr = sigdescr_np(sig);
		n = snprintf(buf, len, "killed by signal %d (%s)%s", sig,
		             descr != NULL ? descr : "unknown signal",
		             WCOREDUMP(status) ? ", core dumped" : "");
	} else if (WIFSTOPPED(status)) {
		int sig = WSTOPSIG(status);
		const char *descr = sigdescr_np(sig);
		n = snprintf(buf, len, "stopped by signal %d (%s)", sig,
		             descr != NULL ? descr : "unknown signal");
	} else if (WIFCONTINUED(status)) {
		n = snprintf(buf, len, "continued");
	} else {
		n = snprintf(buf, len, "unknown wait status 0x%x", (unsigned)status);
	}
	if (n < 0)
		buf[0] = '\0';
	/* n >= len: snprintf kept a NUL-terminated prefix, as documented */
	return buf;
}
