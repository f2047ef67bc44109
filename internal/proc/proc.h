/* Starting programs: posix_spawn with an absolute path and an explicit argv
 * and envp, never a shell and never the parent's environment.
 *
 * The child gets exactly fds 0, 1 and 2 (each a pipe, /dev/null or an fd the
 * caller names); every other fd is closed in it. Its signal mask is empty and
 * every catchable signal is at its default disposition, whatever the parent
 * blocks or ignores. Every fd made here is close-on-exec.
 *
 * Waiting always has a deadline on the monotonic clock (proc_now_ms()).
 * Only the pid that was spawned is ever waited for, never -1. */
#ifndef MG_PROC_PROC_H
#define MG_PROC_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "internal/base/buf.h"
#include "internal/base/err.h"

/* What one of the child's fds 0, 1, 2 is. The zero value is /dev/null. */
enum proc_stdio_kind {
	PROC_STDIO_NULL = 0, /* /dev/null, opened read-write */
	PROC_STDIO_PIPE,     /* a new pipe; the parent's end is returned in struct proc */
	PROC_STDIO_FD,       /* the caller's fd, duplicated into place (the caller keeps it) */
};

struct proc_stdio {
	enum proc_stdio_kind kind;
	int fd;        /* PROC_STDIO_FD: the caller's fd */
	bool nonblock; /* PROC_STDIO_PIPE: make the parent's end O_NONBLOCK */
};

struct proc_spec {
	const char *path;           /* absolute; a relative path is refused */
	const char *const *argv;    /* NULL-terminated, argv[0] included */
	const char *const *envp;    /* NULL-terminated; NULL means an empty environment */
	struct proc_stdio stdio[3]; /* fds 0, 1, 2 of the child */
	bool new_pgroup;            /* the child leads a new process group (pgid == pid) */
	const char *cwd;            /* the child's working directory; NULL: the parent's */
};

/* A started child. The fds are the parent's ends of the pipes (-1 where the
 * spec asked for no pipe) and a pidfd; all owned by the struct until
 * proc_close(). pid is -1 once the child has been reaped. */
struct proc {
	pid_t pid;
	int pidfd; /* -1 only where the kernel refuses pidfd_open */
	int in_fd, out_fd, err_fd;
};

#define PROC_INIT                  \
	{                          \
		-1, -1, -1, -1, -1 \
	}

/* Returned by proc_wait() when the deadline passed (err says "timed out"). */
#define PROC_TIMED_OUT (-2)

/* How long proc_stop() and proc_run() wait for a child after SIGKILL. */
#define PROC_KILL_WAIT_MS 5000

/* Milliseconds on CLOCK_MONOTONIC; all deadlines here are in this clock. */
int64_t proc_now_ms(void);

/* Block SIGCHLD, SIGTERM, SIGINT and SIGHUP in the calling thread (threads
 * started later inherit the mask; they are read through a signalfd, see
 * loop.h) and ignore SIGPIPE for the process. Call it, or loop_new(), before
 * starting any thread. */
int proc_block_signals(struct mg_err **err);

/* Start spec->path. On success *out holds the child (free it with
 * proc_close() after the child is reaped). On failure nothing is left open
 * and *out is PROC_INIT. */
int proc_spawn(const struct proc_spec *spec, struct proc *out, struct mg_err **err);

/* Send signo to the child (through its pidfd, so never to a recycled pid). */
int proc_signal(struct proc *p, int signo, struct mg_err **err);

/* Wait until the child has exited and reap it (p->pid becomes -1; *status,
 * if status is not NULL, is the waitpid status). When deadline_ms passes
 * first, returns PROC_TIMED_OUT with an error saying "timed out" and leaves
 * the child running. Other failures return -1. */
int proc_wait(struct proc *p, int64_t deadline_ms, int *status, struct mg_err **err);

/* Write all len bytes to fd (a pipe to a child) by deadline_ms, whether fd
 * blocks or not; fd's own blocking mode is kept. -1 with err naming why
 * (the reader gone: EPIPE). */
int proc_write_all(int fd, const void *buf, size_t len, int64_t deadline_ms, struct mg_err **err);

/* SIGTERM, wait up to grace_ms, then SIGKILL and wait up to
 * PROC_KILL_WAIT_MS. Returns 0 with the child reaped, or -1 when there is
 * no child (already reaped) or even SIGKILL did not end it in time. */
int proc_stop(struct proc *p, int64_t grace_ms, int *status);

/* Close the parent's fds (not the process). Idempotent; NULL does nothing. */
void proc_close(struct proc *p);

/* What proc_run() captured. out and err each hold at most the out_max given
 * to proc_run(); what came past it was read and dropped, and the matching
 * flag is set. The buffers are NUL-terminated (mg_buf_str()). */
struct proc_result {
	int status; /* the waitpid status; meaningful when proc_run() returned 0 */
	struct mg_buf out, err;
	bool out_truncated, err_truncated;
};

/* Run argv[0] (absolute) with argv and envp (NULL: empty environment),
 * stdin /dev/null, capturing stdout and stderr, until it exits or timeout_ms
 * passes. The child leads its own process group; on timeout the whole group
 * is killed, the child reaped and the error is "ARGV0: timed out after N
 * ms". *res is always initialised (on failure it holds what was captured so
 * far): call proc_result_free() in every case. A non-zero exit status is not
 * a failure here; look at res->status. */
int proc_run(const char *const argv[], const char *const envp[], int64_t timeout_ms, size_t out_max,
             struct proc_result *res, struct mg_err **err);
/* The same with in_fd (the caller's, left open) as the child's stdin */
int proc_run_in(const char *const argv[], const char *const envp[], int in_fd, int64_t timeout_ms,
                size_t out_max, struct proc_result *res, struct mg_err **err);

/* proc_run with dir as the child's working directory */
int proc_run_at(const char *const argv[], const char *const envp[], const char *dir,
                int64_t timeout_ms, size_t out_max, struct proc_result *res, struct mg_err **err);

/* Free the buffers; NULL does nothing; safe to call twice. */
void proc_result_free(struct proc_result *res);

/* The absolute path of the first executable regular file NAME in the
 * colon-separated directory list PATH (relative and empty entries are
 * skipped), allocated; NULL when none, when name contains a '/', or when
 * either argument is NULL or empty. */
char *proc_find_in_path(const char *name, const char *path);

/* Enough room for any text from proc_status_describe(). */
#define PROC_STATUS_MAX 96

/* Describe a waitpid status in buf ("exited with status 3", "killed by
 * signal 9 (Killed)"); returns buf. A buf shorter than PROC_STATUS_MAX may
 * get a truncated text. */
const char *proc_status_describe(int status, char *buf, size_t len);

#endif
