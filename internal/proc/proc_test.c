#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/err.h"
#include "internal/base/testing.h"
#include "internal/base/xalloc.h"
#include "internal/proc/loop.h"
#include "internal/proc/proc.h"

/* ---- helpers ----------------------------------------------------------------- */

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (d == NULL)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] != '.')
			n++;
	}
	closedir(d);
	return n - 1; /* the directory's own fd */
}

/* Read fd until end of file or deadline into a string (at most 64 KiB). */
static char *read_all(int fd, int64_t timeout_ms)
{
	struct mg_buf b = MG_BUF_INIT(65536);
	int64_t deadline = proc_now_ms() + timeout_ms;
	for (;;) {
		int64_t left = deadline - proc_now_ms();
		if (left <= 0)
			break;
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		if (poll(&pfd, 1, (int)left) <= 0)
			continue;
		char chunk[4096];
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0 || mg_buf_append(&b, chunk, (size_t)n, NULL) < 0)
			break;
	}
	return mg_buf_steal(&b, NULL);
}

/* The value of "Key:" in /proc/PID/status, or "" */
static char *proc_status_field(pid_t pid, const char *key)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	cleanup_free char *text = t_read_file(path, NULL);
	size_t klen = strlen(key);
	for (char *line = text; line != NULL && *line != '\0';) {
		char *nl = strchr(line, '\n');
		size_t len = nl != NULL ? (size_t)(nl - line) : strlen(line);
		if (len > klen && strncmp(line, key, klen) == 0 && line[klen] == ':') {
			const char *v = line + klen + 1;
			while (*v == '\t' || *v == ' ')
				v++;
			return xstrndup(v, len - (size_t)(v - line));
		}
		line = nl != NULL ? nl + 1 : NULL;
	}
	return xstrdup("");
}

static void put(int fd, const char *s)
{
	size_t n = strlen(s);
	if (write(fd, s, n) != (ssize_t)n)
		T_OK(0, "write to fd %d", fd);
}

static bool has_text(const struct mg_err *err, const char *text)
{
	return err != NULL && strstr(err->msg, text) != NULL;
}

/* ---- spawning ---------------------------------------------------------------- */

static void test_cat_echo(void)
{
	const char *argv[] = {"/bin/cat", NULL};
	struct proc_spec spec = {
	    .path = "/bin/cat",
	    .argv = argv,
	    .stdio = {{PROC_STDIO_PIPE, -1, false},
	              {PROC_STDIO_PIPE, -1, true},
	              {PROC_STDIO_NULL, -1, false}},
	};
	struct proc p;
	struct mg_err *err = NULL;
	if (!T_INT(proc_spawn(&spec, &p, &err), 0, "spawn /bin/cat with pipes: %s",
	           mg_err_msg(err))) {
		mg_err_free(err);
		return;
	}
	T_OK(p.pid > 0 && p.pidfd >= 0 && p.in_fd >= 0 && p.out_fd >= 0 && p.err_fd == -1,
	     "pid, pidfd and the parent's pipe ends are set, stderr is no pipe");
	int fds[] = {p.in_fd, p.out_fd, p.pidfd};
	bool cloexec = true;
	for (size_t i = 0; i < 3; i++)
		cloexec = cloexec && (fcntl(fds[i], F_GETFD) & FD_CLOEXEC) != 0;
	T_OK(cloexec, "every fd the parent holds is close-on-exec");
	T_OK((fcntl(p.out_fd, F_GETFL) & O_NONBLOCK) != 0, "stdout's parent end is non-blocking");
	T_OK((fcntl(p.in_fd, F_GETFL) & O_NONBLOCK) == 0, "stdin's parent end is blocking");

	/* the child's end of the stdout pipe stays blocking */
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fdinfo/1", (int)p.pid);
	cleanup_free char *fdinfo = t_read_file(path, NULL);
	const char *flags = strstr(fdinfo, "flags:");
	unsigned long fl = flags != NULL ? strtoul(flags + 6, NULL, 8) : 0;
	T_OK(flags != NULL && (fl & O_NONBLOCK) == 0, "the child's stdout is blocking");

	static const char msg[] = "hello, cat\n";
	T_INT(write(p.in_fd, msg, sizeof(msg) - 1), (long long)(sizeof(msg) - 1),
	      "write to the child's stdin");
	close(p.in_fd);
	p.in_fd = -1;
	/* cat sees end of file only if no copy of the pipe's write end leaked
	 * into it */
	cleanup_free char *got = read_all(p.out_fd, 5000);
	T_STR(got, msg, "cat echoes the data and ends at end of input");
	int status = -1;
	T_INT(proc_wait(&p, proc_now_ms() + 5000, &status, &err), 0, "proc_wait");
	T_OK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "cat exited with status 0");
	T_INT(p.pid, -1, "the reaped pid is forgotten");
	T_INT(proc_wait(&p, proc_now_ms() + 10, &status, &err), -1,
	      "waiting again is an error, not a wait on a recycled pid");
	mg_err_clear(&err);
	proc_close(&p);
	proc_close(&p);
	T_OK(p.in_fd == -1 && p.out_fd == -1 && p.err_fd == -1 && p.pidfd == -1,
	     "proc_close clears the fds and is idempotent");
	proc_close(NULL);
}

static void test_env(void)
{
	const char *argv[] = {"/usr/bin/env", NULL};
	const char *envp[] = {"A=1", NULL};
	struct proc_result res;
	struct mg_err *err = NULL;
	T_INT(proc_run(argv, envp, 5000, 4096, &res, &err), 0, "run env: %s", mg_err_msg(err));
	T_STR(mg_buf_str(&res.out), "A=1\n", "the child sees exactly the envp given");
	proc_result_free(&res);

	T_INT(proc_run(argv, NULL, 5000, 4096, &res, &err), 0, "run env with NULL envp");
	T_STR(mg_buf_str(&res.out), "", "NULL envp is an empty environment");
	T_OK(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 0, "env exited 0");
	proc_result_free(&res);
	proc_result_free(&res);
	proc_result_free(NULL);
	mg_err_free(err);
}

static void test_child_fds(void)
{
	/* an fd the parent made without close-on-exec is still not inherited */
	int stray = open("/dev/null", O_RDONLY);
	const char *argv[] = {"/bin/sh", "-c", "ls /proc/$$/fd", NULL};
	struct proc_result res;
	struct mg_err *err = NULL;
	T_INT(proc_run(argv, NULL, 5000, 4096, &res, &err), 0, "run ls of the shell's fds: %s",
	      mg_err_msg(err));
	T_STR(mg_buf_str(&res.out), "0\n1\n2\n", "the child has only fds 0, 1 and 2");
	proc_result_free(&res);
	close(stray);
	mg_err_free(err);
}

static void test_stdio_fd(void)
{
	int pfd[2];
	if (!T_INT(pipe2(pfd, O_CLOEXEC), 0, "pipe"))
		return;
	const char *argv[] = {"/bin/sh", "-c", "echo out; echo err >&2", NULL};
	struct proc_spec spec = {
	    .path = "/bin/sh",
	    .argv = argv,
	    .stdio = {{PROC_STDIO_NULL, -1, false},
	              {PROC_STDIO_FD, pfd[1], false},
	              {PROC_STDIO_FD, pfd[1], false}},
	};
	struct proc p;
	struct mg_err *err = NULL;
	T_INT(proc_spawn(&spec, &p, &err), 0, "spawn with the caller's fd as stdout and stderr");
	close(pfd[1]);
	T_OK(p.in_fd == -1 && p.out_fd == -1 && p.err_fd == -1, "no pipe ends for fd slots");
	cleanup_free char *got = read_all(pfd[0], 5000);
	T_STR(got, "out\nerr\n", "both went to the caller's pipe");
	T_INT(proc_wait(&p, proc_now_ms() + 5000, NULL, &err), 0, "reaped");
	proc_close(&p);
	close(pfd[0]);

	/* a source sitting in 0-2 that is another slot's target */
	if (!T_INT(pipe2(pfd, O_CLOEXEC), 0, "pipe"))
		return;
	int saved0 = fcntl(0, F_DUPFD_CLOEXEC, 3);
	dup2(pfd[1], 0);
	close(pfd[1]);
	const char *argv2[] = {"/bin/sh", "-c", "echo moved; cat", NULL};
	struct proc_spec spec2 = {
	    .path = "/bin/sh",
	    .argv = argv2,
	    .stdio = {{PROC_STDIO_NULL, -1, false},
	              {PROC_STDIO_FD, 0, false},
	              {PROC_STDIO_NULL, -1, false}},
	};
	int r = proc_spawn(&spec2, &p, &err);
	dup2(saved0, 0);
	close(saved0);
	T_INT(r, 0, "spawn with stdout taken from the parent's fd 0");
	cleanup_free char *got2 = read_all(pfd[0], 5000);
	T_STR(got2, "moved\n", "stdout reached the pipe, and stdin was /dev/null, not it");
	T_INT(proc_wait(&p, proc_now_ms() + 5000, NULL, &err), 0, "reaped");
	proc_close(&p);
	close(pfd[0]);
	mg_err_free(err);
}

static void test_signal_mask(void)
{
	cleanup_free char *mine = proc_status_field(getpid(), "SigBlk");
	T_OK(strcmp(mine, "0000000000000000") != 0, "the test process blocks signals (%s)", mine);
	/* ignored here, so a child would inherit them without SETSIGDEF */
	struct sigaction ign_action = {.sa_handler = SIG_IGN}, old_usr1, old_rt;
	sigaction(SIGUSR1, &ign_action, &old_usr1);
	sigaction(SIGRTMIN + 2, &ign_action, &old_rt);
	const char *argv[] = {"/bin/sleep", "5", NULL};
	struct proc_spec spec = {.path = "/bin/sleep", .argv = argv};
	struct proc p;
	struct mg_err *err = NULL;
	int r = proc_spawn(&spec, &p, &err);
	sigaction(SIGUSR1, &old_usr1, NULL);
	sigaction(SIGRTMIN + 2, &old_rt, NULL);
	if (!T_INT(r, 0, "spawn sleep")) {
		mg_err_free(err);
		return;
	}
	cleanup_free char *blk = proc_status_field(p.pid, "SigBlk");
	cleanup_free char *ign = proc_status_field(p.pid, "SigIgn");
	T_STR(blk, "0000000000000000", "the child's signal mask is empty");
	/* glibc's posix_spawn leaves its own signals 32 and 33 ignored */
	unsigned long long ignored = strtoull(ign, NULL, 16) & ~0x180000000ULL;
	T_INT((long long)ignored, 0,
	      "the child ignores none of 1-31 or the real-time signals (SigIgn %s)", ign);
	int status = 0;
	T_INT(proc_stop(&p, 2000, &status), 0, "proc_stop");
	T_OK(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM, "sleep ended by SIGTERM");
	proc_close(&p);
}

static void test_run_capture(void)
{
	const char *argv[] = {"/bin/sh", "-c", "echo out; echo err >&2; exit 4", NULL};
	struct proc_result res;
	struct mg_err *err = NULL;
	T_INT(proc_run(argv, NULL, 5000, 4096, &res, &err), 0, "proc_run");
	T_STR(mg_buf_str(&res.out), "out\n", "stdout captured");
	T_STR(mg_buf_str(&res.err), "err\n", "stderr captured");
	T_OK(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 4, "exit status 4 in res");
	T_OK(!res.out_truncated && !res.err_truncated, "nothing truncated");
	proc_result_free(&res);
	mg_err_free(err);
}

static void test_run_truncation(void)
{
	const char *argv[] = {"/usr/bin/head", "-c", "1048576", "/dev/zero", NULL};
	struct proc_result res;
	struct mg_err *err = NULL;
	T_INT(proc_run(argv, NULL, 10000, 1000, &res, &err), 0, "run a 1 MB writer: %s",
	      mg_err_msg(err));
	T_INT((long long)res.out.len, 1000, "1000 bytes kept");
	T_OK(res.out_truncated, "out_truncated set");
	T_OK(!res.err_truncated, "err_truncated not set");
	T_OK(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 0,
	     "the writer was drained and exited 0");
	T_OK(res.out.cap <= 1001, "no allocation past the maximum (cap %zu)", res.out.cap);
	proc_result_free(&res);
	mg_err_free(err);
}

static void test_run_timeout(void)
{
	const char *argv[] = {"/bin/sleep", "10", NULL};
	struct proc_result res;
	struct mg_err *err = NULL;
	int64_t start = proc_now_ms();
	int r = proc_run(argv, NULL, 200, 4096, &res, &err);
	int64_t elapsed = proc_now_ms() - start;
	T_OK(r < 0, "proc_run fails on timeout");
	T_OK(has_text(err, "timed out after 200 ms") && has_text(err, "/bin/sleep"),
	     "the error says what timed out: %s", mg_err_msg(err));
	errno = 0;
	T_OK(waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD,
	     "the child was reaped (no child left)");
	T_OK(elapsed >= 200 && elapsed < 2000, "it took %lld ms", (long long)elapsed);
	proc_result_free(&res);
	mg_err_free(err);
}

static void test_wait_timeout(void)
{
	const char *argv[] = {"/bin/sleep", "10", NULL};
	struct proc_spec spec = {.path = "/bin/sleep", .argv = argv};
	struct proc p;
	struct mg_err *err = NULL;
	if (!T_INT(proc_spawn(&spec, &p, &err), 0, "spawn sleep"))
		return;
	pid_t pid = p.pid;
	T_INT(proc_wait(&p, proc_now_ms() + 100, NULL, &err), PROC_TIMED_OUT,
	      "proc_wait returns PROC_TIMED_OUT");
	T_OK(has_text(err, "timed out"), "the error says timed out: %s", mg_err_msg(err));
	mg_err_clear(&err);
	T_OK(p.pid == pid && kill(pid, 0) == 0, "the child is left running");
	int status = 0;
	T_INT(proc_stop(&p, 2000, &status), 0, "proc_stop");
	T_INT(proc_stop(&p, 2000, &status), -1, "proc_stop of a reaped child is -1");
	proc_close(&p);
}

static void test_stop_ignores_term(void)
{
	const char *argv[] = {"/bin/sh", "-c", "trap '' TERM; echo ready; exec sleep 30", NULL};
	struct proc_spec spec = {
	    .path = "/bin/sh",
	    .argv = argv,
	    .stdio = {{PROC_STDIO_NULL, -1, false},
	              {PROC_STDIO_PIPE, -1, false},
	              {PROC_STDIO_NULL, -1, false}},
	};
	struct proc p;
	struct mg_err *err = NULL;
	if (!T_INT(proc_spawn(&spec, &p, &err), 0, "spawn a TERM-ignoring child"))
		return;
	char ready[6] = {0};
	T_INT(read(p.out_fd, ready, 6), 6, "it set its trap");
	int status = 0;
	int64_t start = proc_now_ms();
	T_INT(proc_stop(&p, 300, &status), 0, "proc_stop");
	int64_t elapsed = proc_now_ms() - start;
	T_OK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "ended by SIGKILL");
	T_OK(elapsed >= 300 && elapsed < 3000, "after the grace time (%lld ms)",
	     (long long)elapsed);
	T_INT(p.pid, -1, "reaped");
	proc_close(&p);
}

static void test_refusals(void)
{
	const char *argv[] = {"bin/true", NULL};
	struct proc_spec spec = {.path = "bin/true", .argv = argv};
	struct proc p;
	struct mg_err *err = NULL;
	T_INT(proc_spawn(&spec, &p, &err), -1, "a relative program path is refused");
	T_OK(has_text(err, "absolute"), "the error says so: %s", mg_err_msg(err));
	T_OK(p.pid == -1 && p.pidfd == -1 && p.in_fd == -1, "out is PROC_INIT");
	mg_err_clear(&err);

	const char *argv2[] = {"true", NULL};
	struct proc_result res;
	T_INT(proc_run(argv2, NULL, 1000, 10, &res, &err), -1, "proc_run refuses it too");
	proc_result_free(&res);
	mg_err_clear(&err);

	const char *argv3[] = {"/nonexistent/program", NULL};
	spec = (struct proc_spec){.path = argv3[0], .argv = argv3};
	T_INT(proc_spawn(&spec, &p, &err), -1, "a missing program fails");
	T_OK(has_text(err, "No such file") && err->code == ENOENT, "with ENOENT: %s",
	     mg_err_msg(err));
	mg_err_clear(&err);

	spec = (struct proc_spec){.path = "/bin/true", .argv = argv3};
	spec.stdio[1] = (struct proc_stdio){PROC_STDIO_FD, -5, false};
	T_INT(proc_spawn(&spec, &p, &err), -1, "a negative caller fd is refused");
	mg_err_clear(&err);
}

static void test_wait_without_pidfd(void)
{
	const char *argv[] = {"/bin/sh", "-c", "sleep 0.1; exit 5", NULL};
	struct proc_spec spec = {.path = "/bin/sh", .argv = argv};
	struct proc p;
	struct mg_err *err = NULL;
	if (!T_INT(proc_spawn(&spec, &p, &err), 0, "spawn"))
		return;
	close(p.pidfd);
	p.pidfd = -1;
	int status = 0;
	T_INT(proc_wait(&p, proc_now_ms() + 5000, &status, &err), 0,
	      "proc_wait works without a pidfd");
	T_OK(WIFEXITED(status) && WEXITSTATUS(status) == 5, "status 5");
	proc_close(&p);
}

static void test_find_in_path(void)
{
	char *p = proc_find_in_path("sh", "relative:/nonexistent::/bin");
	T_STR(p, "/bin/sh", "found in the first absolute entry that has it");
	free(p);
	T_OK(proc_find_in_path("no-such-program-here", "/bin:/usr/bin") == NULL, "missing");
	T_OK(proc_find_in_path("bin/sh", "/") == NULL, "a name with a slash");
	T_OK(proc_find_in_path("sh", "bin") == NULL, "relative entries are skipped");
	T_OK(proc_find_in_path("sh", NULL) == NULL, "NULL path");
	T_OK(proc_find_in_path("", "/bin") == NULL, "empty name");
	T_OK(proc_find_in_path("passwd", "/etc") == NULL, "not executable");
}

static void test_status_describe(void)
{
	char buf[PROC_STATUS_MAX];
	T_STR(proc_status_describe(3 << 8, buf, sizeof(buf)), "exited with status 3", "exit");
	T_STR(proc_status_describe(SIGKILL, buf, sizeof(buf)), "killed by signal 9 (Killed)",
	      "signal");
	T_STR(proc_status_describe(SIGSEGV | 0x80, buf, sizeof(buf)),
	      "killed by signal 11 (Segmentation fault), core dumped", "core dump");
	char small[8];
	T_STR(proc_status_describe(3 << 8, small, sizeof(small)), "exited ", "truncated");
}

/* ---- the loop ------------------------------------------------------------------ */

static void stop_cb(struct loop *loop, void *data)
{
	bool *fired = data;
	if (fired != NULL)
		*fired = true;
	loop_stop(loop);
}

struct fd_seen {
	int calls;
	uint32_t events;
	char got[8];
};

static void pipe_cb(struct loop *loop, int fd, uint32_t events, void *data)
{
	(void)loop;
	struct fd_seen *s = data;
	s->calls++;
	s->events = events;
	ssize_t n = read(fd, s->got, sizeof(s->got) - 1);
	s->got[n > 0 ? n : 0] = '\0';
}

static void test_loop_fd(void)
{
	struct mg_err *err = NULL;
	struct loop *loop = loop_new(&err);
	if (!T_OK(loop != NULL, "loop_new: %s", mg_err_msg(err)))
		return;
	int pfd[2];
	if (!T_INT(pipe2(pfd, O_CLOEXEC | O_NONBLOCK), 0, "pipe")) {
		loop_free(loop);
		return;
	}
	struct fd_seen s = {0};
	T_INT(loop_watch(loop, pfd[0], EPOLLIN, pipe_cb, &s, &err), 0, "loop_watch");
	T_INT(loop_watch(loop, pfd[0], EPOLLIN, pipe_cb, &s, &err), -1, "watching twice fails");
	T_OK(has_text(err, "already watched"), "%s", mg_err_msg(err));
	mg_err_clear(&err);
	T_INT(loop_run_once(loop, 0, &err), 0, "nothing ready yet");
	T_INT(write(pfd[1], "x", 1), 1, "write");
	T_INT(loop_run_once(loop, 1000, &err), 1, "one callback");
	T_OK(s.calls == 1 && (s.events & EPOLLIN) && strcmp(s.got, "x") == 0,
	     "the watch saw EPOLLIN and read the byte");
	T_INT(loop_modify(loop, pfd[0], 0, &err), 0, "loop_modify to no events");
	put(pfd[1], "y");
	T_INT(loop_run_once(loop, 20, &err), 0, "no callback without events");
	T_INT(loop_modify(loop, pfd[0], EPOLLIN, &err), 0, "loop_modify back");
	T_INT(loop_run_once(loop, 1000, &err), 1, "callback again");
	T_INT(loop_modify(loop, pfd[0], EPOLLIN, &err), 0, "loop_modify to the events it has");
	put(pfd[1], "w");
	T_INT(loop_run_once(loop, 1000, &err), 1, "and it still sees them");
	T_INT(loop_modify(loop, pfd[1], EPOLLOUT, &err), -1, "modify of an unwatched fd fails");
	mg_err_clear(&err);
	loop_unwatch(loop, pfd[0]);
	loop_unwatch(loop, pfd[0]);
	put(pfd[1], "z");
	T_INT(loop_run_once(loop, 20, &err), 0, "no callback after unwatch");
	T_INT(s.calls, 3, "three calls in all");

	/* a one-shot watch is re-armed by a modify to the same events */
	struct fd_seen once = {0};
	T_INT(loop_watch(loop, pfd[0], EPOLLIN | EPOLLONESHOT, pipe_cb, &once, &err), 0,
	      "a one-shot watch");
	put(pfd[1], "a");
	T_INT(loop_run_once(loop, 1000, &err), 1, "it fires once");
	put(pfd[1], "b");
	T_INT(loop_run_once(loop, 20, &err), 0, "and not again by itself");
	T_INT(loop_modify(loop, pfd[0], EPOLLIN | EPOLLONESHOT, &err), 0,
	      "loop_modify to the same one-shot events");
	T_INT(loop_run_once(loop, 1000, &err), 1, "re-arms it");
	T_INT(once.calls, 2, "two one-shot calls");
	loop_unwatch(loop, pfd[0]);

	int64_t start = proc_now_ms();
	T_INT(loop_run_once(loop, 50, &err), 0, "an idle round");
	T_OK(proc_now_ms() - start >= 50, "waited for the timeout");
	close(pfd[0]);
	close(pfd[1]);
	loop_free(loop);
	loop_free(NULL);
}

struct timer_log {
	char order[32];
	size_t n;
};

struct timer_mark {
	struct timer_log *log;
	char c;
};

static void mark_cb(struct loop *loop, void *data)
{
	(void)loop;
	struct timer_mark *m = data;
	if (m->log->n + 1 < sizeof(m->log->order))
		m->log->order[m->log->n++] = m->c;
}

static void mark_stop_cb(struct loop *loop, void *data)
{
	mark_cb(loop, data);
	loop_stop(loop);
}

static void test_loop_timers(void)
{
	struct loop *loop = loop_new(NULL);
	if (!T_OK(loop != NULL, "loop_new"))
		return;
	struct timer_log log = {{0}, 0};
	struct timer_mark a = {&log, 'a'}, b = {&log, 'b'}, c = {&log, 'c'}, d = {&log, 'd'},
	                  e = {&log, 'e'};
	bool guard_fired = false;
	struct loop_timer *guard = loop_timer_add(loop, 5000, stop_cb, &guard_fired);
	loop_timer_add(loop, 60, mark_stop_cb, &c);
	loop_timer_add(loop, 20, mark_cb, &a);
	loop_timer_add(loop, 40, mark_cb, &b);
	loop_timer_add(loop, 20, mark_cb, &d);
	loop_timer_add(loop, -5, mark_cb, &e);
	int64_t start = proc_now_ms();
	struct mg_err *err = NULL;
	T_INT(loop_run(loop, &err), 0, "loop_run");
	int64_t elapsed = proc_now_ms() - start;
	T_STR(log.order, "eadbc", "timers fire in time order, ties in the order added");
	T_OK(!guard_fired && elapsed >= 59 && elapsed < 2000, "in about 60 ms (%lld)",
	     (long long)elapsed);
	loop_timer_cancel(loop, guard);
	loop_timer_cancel(loop, NULL);
	loop_free(loop);
}

struct cancel_ctx {
	struct loop_timer *self, *other;
	int fired_self, fired_other;
};

static void cancel_self_and_other_cb(struct loop *loop, void *data)
{
	struct cancel_ctx *c = data;
	c->fired_self++;
	loop_timer_cancel(loop, c->other);
	loop_timer_cancel(loop, c->self);
}

static void cancelled_cb(struct loop *loop, void *data)
{
	(void)loop;
	struct cancel_ctx *c = data;
	c->fired_other++;
}

static void test_loop_timer_cancel(void)
{
	struct loop *loop = loop_new(NULL);
	if (!T_OK(loop != NULL, "loop_new"))
		return;
	struct cancel_ctx c = {NULL, NULL, 0, 0};
	c.self = loop_timer_add(loop, 10, cancel_self_and_other_cb, &c);
	/* due in the same round as the canceller */
	c.other = loop_timer_add(loop, 10, cancelled_cb, &c);
	loop_timer_add(loop, 80, stop_cb, NULL);
	loop_run(loop, NULL);
	T_INT(c.fired_self, 1, "the cancelling timer fired once (it cancelled itself)");
	T_INT(c.fired_other, 0, "the timer it cancelled in the same round never fired");
	/* a pending timer left at loop_free is freed */
	loop_timer_add(loop, 10000, cancelled_cb, &c);
	loop_free(loop);
}

struct pair_ctx {
	struct loop *loop;
	int fds[2][2]; /* two pipes */
	int calls;
	int first;
	int fresh[2]; /* a pipe made in the callback (may reuse the closed number) */
};

static void pair_cb(struct loop *loop, int fd, uint32_t events, void *data)
{
	(void)events;
	struct pair_ctx *c = data;
	c->calls++;
	char b[8];
	ssize_t n = read(fd, b, sizeof(b));
	(void)n;
	if (c->first >= 0)
		return;
	c->first = fd;
	int other = fd == c->fds[0][0] ? 1 : 0;
	loop_unwatch(loop, c->fds[other][0]);
	close(c->fds[other][0]);
	c->fds[other][0] = -1;
	if (pipe2(c->fresh, O_CLOEXEC | O_NONBLOCK) < 0)
		T_OK(0, "pipe in a callback");
	loop_watch(loop, c->fresh[0], EPOLLIN, pair_cb, c, NULL);
	put(c->fresh[1], "n");
}

static void test_loop_unwatch_in_round(void)
{
	struct loop *loop = loop_new(NULL);
	if (!T_OK(loop != NULL, "loop_new"))
		return;
	struct pair_ctx c = {.loop = loop, .first = -1};
	for (int i = 0; i < 2; i++) {
		T_INT(pipe2(c.fds[i], O_CLOEXEC | O_NONBLOCK), 0, "pipe %d", i);
		loop_watch(loop, c.fds[i][0], EPOLLIN, pair_cb, &c, NULL);
		put(c.fds[i][1], "x");
	}
	T_INT(loop_run_once(loop, 1000, NULL), 1, "one callback in the round");
	T_INT(c.calls, 1, "the fd unwatched and closed by the first callback got no event");
	T_INT(loop_run_once(loop, 1000, NULL), 1, "next round");
	T_INT(c.calls, 2, "the fd watched in the callback (same number or not) works next round");
	for (int i = 0; i < 2; i++) {
		if (c.fds[i][0] >= 0) {
			loop_unwatch(loop, c.fds[i][0]);
			close(c.fds[i][0]);
		}
		close(c.fds[i][1]);
	}
	loop_unwatch(loop, c.fresh[0]);
	close(c.fresh[0]);
	close(c.fresh[1]);
	loop_free(loop);
}

#define POST_THREADS 4
#define POST_COUNT   1000

struct post_state {
	struct loop *loop;
	int next[POST_THREADS];
	int received;
	int out_of_order;
	bool loop_thread_only;
	pthread_t loop_thread;
};

struct post_item {
	struct post_state *st;
	int thread, seq;
};

struct poster {
	struct post_state *st;
	int thread;
};

static void post_cb(struct loop *loop, void *data)
{
	struct post_item *it = data;
	struct post_state *st = it->st;
	if (!pthread_equal(pthread_self(), st->loop_thread))
		st->loop_thread_only = false;
	if (st->next[it->thread] != it->seq)
		st->out_of_order++;
	st->next[it->thread] = it->seq + 1;
	if (++st->received == POST_THREADS * POST_COUNT)
		loop_stop(loop);
	free(it);
}

static void *poster_main(void *arg)
{
	struct poster *p = arg;
	for (int i = 0; i < POST_COUNT; i++) {
		struct post_item *it = xmalloc(sizeof(*it));
		*it = (struct post_item){p->st, p->thread, i};
		loop_post(p->st->loop, post_cb, it);
	}
	return NULL;
}

static void *stopper_main(void *arg)
{
	poll(NULL, 0, 50);
	loop_stop(arg);
	return NULL;
}

static void test_loop_post(void)
{
	struct loop *loop = loop_new(NULL);
	if (!T_OK(loop != NULL, "loop_new"))
		return;
	struct post_state st = {.loop = loop, .loop_thread_only = true};
	st.loop_thread = pthread_self();
	bool guard_fired = false;
	struct loop_timer *guard = loop_timer_add(loop, 10000, stop_cb, &guard_fired);
	pthread_t th[POST_THREADS];
	struct poster posters[POST_THREADS];
	for (int i = 0; i < POST_THREADS; i++) {
		posters[i] = (struct poster){&st, i};
		pthread_create(&th[i], NULL, poster_main, &posters[i]);
	}
	T_INT(loop_run(loop, NULL), 0, "loop_run");
	for (int i = 0; i < POST_THREADS; i++)
		pthread_join(th[i], NULL);
	T_INT(st.received, POST_THREADS * POST_COUNT, "every post arrived");
	T_INT(st.out_of_order, 0, "in post order per thread");
	T_OK(st.loop_thread_only, "all ran on the loop's thread");
	T_OK(!guard_fired, "before the guard timer");
	loop_timer_cancel(loop, guard);

	/* loop_stop from another thread ends loop_run */
	pthread_t stopper;
	int64_t start = proc_now_ms();
	guard = loop_timer_add(loop, 5000, stop_cb, &guard_fired);
	pthread_create(&stopper, NULL, stopper_main, loop);
	loop_run(loop, NULL);
	pthread_join(stopper, NULL);
	T_OK(!guard_fired && proc_now_ms() - start < 2000, "loop_stop from another thread");
	loop_timer_cancel(loop, guard);
	T_INT(loop_post(NULL, post_cb, NULL), -1, "loop_post(NULL) fails");
	loop_free(loop);
}

/* A job whose work blocks on a pipe until the loop, still running, writes
 * to it from a timer: the loop is not held up by the work. */
struct job_state {
	struct loop *loop;
	pthread_t loop_thread;
	int gate[2];
	bool work_elsewhere, done_on_loop, done_after_work, timer_fired;
	bool work_ended;
	int dones;
};

static void job_work(void *data)
{
	struct job_state *js = data;
	js->work_elsewhere = !pthread_equal(pthread_self(), js->loop_thread);
	char c;
	ssize_t r;
	do {
		r = read(js->gate[0], &c, 1);
	} while (r < 0 && errno == EINTR);
	js->work_ended = true;
}

static void job_done(struct loop *loop, void *data)
{
	struct job_state *js = data;
	js->dones++;
	js->done_on_loop = pthread_equal(pthread_self(), js->loop_thread);
	js->done_after_work = js->work_ended;
	loop_stop(loop);
}

static void job_open_gate(struct loop *loop, void *data)
{
	(void)loop;
	struct job_state *js = data;
	js->timer_fired = true;
	ssize_t w = write(js->gate[1], "x", 1);
	(void)w;
}

static void test_loop_job(void)
{
	struct loop *loop = loop_new(NULL);
	if (!T_OK(loop != NULL, "loop_new"))
		return;
	struct job_state js = {.loop = loop, .loop_thread = pthread_self()};
	if (!T_INT(pipe2(js.gate, O_CLOEXEC), 0, "pipe2")) {
		loop_free(loop);
		return;
	}
	bool guard_fired = false;
	struct loop_timer *guard = loop_timer_add(loop, 10000, stop_cb, &guard_fired);
	T_INT(loop_job(loop, job_work, job_done, &js), 0, "loop_job runs work on a thread");
	T_INT((int)loop_jobs_pending(loop), 1, "one job pending");
	loop_timer_add(loop, 20, job_open_gate, &js);
	T_INT(loop_run(loop, NULL), 0, "loop_run");
	T_OK(js.timer_fired, "the loop ran a timer while the work blocked");
	T_OK(js.work_elsewhere, "work ran on another thread");
	T_OK(js.dones == 1 && js.done_on_loop && js.done_after_work,
	     "done ran once, on the loop's thread, after the work");
	T_INT((int)loop_jobs_pending(loop), 0, "no job pending after done");
	T_OK(!guard_fired, "before the guard timer");
	loop_timer_cancel(loop, guard);

	/* loop_jobs_finish waits for the work and runs done, here */
	js.work_ended = false;
	js.dones = 0;
	loop_job(loop, job_work, job_done, &js);
	ssize_t w0 = write(js.gate[1], "x", 1);
	(void)w0;
	loop_jobs_finish(loop);
	T_OK(js.work_ended && js.dones == 1 && js.done_on_loop && loop_jobs_pending(loop) == 0,
	     "loop_jobs_finish: the work ended and done ran on this thread");

	/* loop_free waits for a job still working and drops its done */
	js.work_ended = false;
	js.dones = 0;
	loop_job(loop, job_work, job_done, &js);
	ssize_t w = write(js.gate[1], "x", 1);
	(void)w;
	loop_free(loop);
	T_OK(js.work_ended && js.dones == 0, "loop_free waits for the work, drops done");
	close(js.gate[0]);
	close(js.gate[1]);
}

struct child_seen {
	int calls;
	pid_t pid;
	int status;
};

static void child_cb(struct loop *loop, pid_t pid, int status, void *data)
{
	struct child_seen *s = data;
	s->calls++;
	s->pid = pid;
	s->status = status;
	loop_stop(loop);
}

static void test_loop_child(void)
{
	struct loop *loop = loop_new(NULL);
	if (!T_OK(loop != NULL, "loop_new"))
		return;
	const char *argv[] = {"/bin/sh", "-c", "exit 3", NULL};
	struct proc_spec spec = {.path = "/bin/sh", .argv = argv};
	struct proc p;
	struct mg_err *err = NULL;
	T_INT(proc_spawn(&spec, &p, &err), 0, "spawn sh -c 'exit 3'");
	struct child_seen s = {0};
	T_INT(loop_watch_child(loop, p.pid, p.pidfd, child_cb, &s), 0, "loop_watch_child");
	T_INT(loop_watch_child(loop, p.pid, p.pidfd, child_cb, &s), -1, "watching twice fails");
	pid_t pid = p.pid;
	proc_close(&p); /* the loop keeps its own pidfd */
	bool guard_fired = false;
	struct loop_timer *guard = loop_timer_add(loop, 5000, stop_cb, &guard_fired);
	loop_run(loop, NULL);
	T_INT(s.calls, 1, "called back once");
	T_OK(s.pid == pid && WIFEXITED(s.status) && WEXITSTATUS(s.status) == 3,
	     "with the pid and exit status 3");
	T_OK(!guard_fired, "before the guard");
	loop_run_once(loop, 20, NULL);
	T_INT(s.calls, 1, "only once");

	/* without a pidfd, and exited before it was watched */
	const char *argv2[] = {"/bin/sh", "-c", "exit 7", NULL};
	spec.argv = argv2;
	T_INT(proc_spawn(&spec, &p, &err), 0, "spawn sh -c 'exit 7'");
	poll(NULL, 0, 100);
	s = (struct child_seen){0};
	T_INT(loop_watch_child(loop, p.pid, -1, child_cb, &s), 0, "loop_watch_child, no pidfd");
	proc_close(&p);
	loop_run(loop, NULL);
	T_OK(s.calls == 1 && WIFEXITED(s.status) && WEXITSTATUS(s.status) == 7,
	     "an exit before the watch is reported (status 7)");

	/* an unwatched child is not reported */
	const char *argv3[] = {"/bin/sleep", "10", NULL};
	spec = (struct proc_spec){.path = "/bin/sleep", .argv = argv3};
	T_INT(proc_spawn(&spec, &p, &err), 0, "spawn sleep");
	s = (struct child_seen){0};
	loop_watch_child(loop, p.pid, p.pidfd, child_cb, &s);
	loop_unwatch_child(loop, p.pid);
	proc_stop(&p, 1000, NULL);
	proc_close(&p);
	loop_run_once(loop, 50, NULL);
	T_INT(s.calls, 0, "no callback after loop_unwatch_child");
	loop_timer_cancel(loop, guard);

	/* a watch left at loop_free is dropped */
	T_INT(proc_spawn(&spec, &p, &err), 0, "spawn sleep");
	loop_watch_child(loop, p.pid, p.pidfd, child_cb, &s);
	loop_free(loop);
	proc_stop(&p, 1000, NULL);
	proc_close(&p);
	mg_err_free(err);
}

struct sig_seen {
	int calls;
	int signo;
};

static void sig_cb(struct loop *loop, int signo, void *data)
{
	struct sig_seen *s = data;
	s->calls++;
	s->signo = signo;
	loop_stop(loop);
}

static void test_loop_signal(void)
{
	struct loop *loop = loop_new(NULL);
	if (!T_OK(loop != NULL, "loop_new"))
		return;
	struct sig_seen s = {0};
	loop_on_signal(loop, sig_cb, &s);
	bool guard_fired = false;
	struct loop_timer *guard = loop_timer_add(loop, 5000, stop_cb, &guard_fired);
	kill(getpid(), SIGTERM);
	loop_run(loop, NULL);
	T_OK(s.calls == 1 && s.signo == SIGTERM && !guard_fired,
	     "SIGTERM to the process arrives through loop_on_signal");
	kill(getpid(), SIGHUP);
	loop_run(loop, NULL);
	T_OK(s.calls == 2 && s.signo == SIGHUP && !guard_fired, "and SIGHUP");
	loop_timer_cancel(loop, guard);
	loop_on_signal(loop, NULL, NULL);
	loop_free(loop);
}

int main(void)
{
	int fds_before = count_fds();
	struct mg_err *err = NULL;
	T_INT(proc_block_signals(&err), 0, "proc_block_signals");

	test_cat_echo();
	test_env();
	test_child_fds();
	test_stdio_fd();
	test_signal_mask();
	test_run_capture();
	test_run_truncation();
	test_run_timeout();
	test_wait_timeout();
	test_stop_ignores_term();
	test_refusals();
	test_wait_without_pidfd();
	test_find_in_path();
	test_status_describe();

	test_loop_fd();
	test_loop_timers();
	test_loop_timer_cancel();
	test_loop_unwatch_in_round();
	test_loop_post();
	test_loop_job();
	test_loop_child();
	test_loop_signal();

	T_INT(count_fds(), fds_before, "no fd leaked");
	return t_done();
}
