/* The event loop: epoll for fds, a sorted list of timers, a signalfd for
 * signals, child processes by pidfd, and an eventfd through which other
 * threads hand it work, and jobs: work that blocks, run on a thread of its
 * own, whose end the loop hears of. One loop per thread that runs one;
 * everything but loop_post() and loop_stop() is called on the loop's own
 * thread.
 *
 * Signals: loop_new() blocks SIGCHLD, SIGTERM, SIGINT and SIGHUP in the
 * calling thread (see proc_block_signals()), so create the first loop before
 * starting any thread. A loop reads SIGCHLD from its signalfd, and SIGTERM,
 * SIGINT and SIGHUP only once loop_on_signal() gave it a callback, so a
 * worker thread's loop never swallows the signal meant for the main one.
 *
 * Callbacks may add and remove watches, timers and children, and close fds,
 * at any time: an fd unwatched during a round gets no more events from that
 * round. A callback must not call loop_run(), loop_run_once() or
 * loop_free() on its own loop. */
#ifndef MG_PROC_LOOP_H
#define MG_PROC_LOOP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "internal/base/err.h"

struct loop;
struct loop_timer;

/* events are EPOLLIN, EPOLLOUT, ... as given to epoll; the callback gets
 * the ready ones (EPOLLHUP and EPOLLERR come whether asked for or not). */
typedef void (*loop_fd_cb)(struct loop *loop, int fd, uint32_t events, void *data);
typedef void (*loop_timer_cb)(struct loop *loop, void *data);
typedef void (*loop_signal_cb)(struct loop *loop, int signo, void *data);
/* status is the waitpid status, or -1 when someone else reaped the child */
typedef void (*loop_child_cb)(struct loop *loop, pid_t pid, int status, void *data);
typedef void (*loop_post_cb)(struct loop *loop, void *data);

/* A new loop; blocks the signals above and ignores SIGPIPE. The process
 * keeps them blocked after loop_free(). */
struct loop *loop_new(struct mg_err **err);

/* Close the loop's fds and free it. Pending timers, posts and child watches
 * are dropped without being called; a job still working is waited for, and
 * its done dropped. Watched fds stay open (their owners close them). No
 * other thread may post to it any more. NULL does nothing. */
void loop_free(struct loop *loop);

/* Watch fd (not yet watched here) for events; level-triggered unless
 * EPOLLET is in events. The caller keeps the fd; unwatch it before closing
 * it. */
int loop_watch(struct loop *loop, int fd, uint32_t events, loop_fd_cb cb, void *data,
               struct mg_err **err);
/* Change the events of a watched fd. Asking for the events it has is
 * free (no system call), unless they hold EPOLLONESHOT or EPOLLET: then it
 * re-arms the watch as epoll does. */
int loop_modify(struct loop *loop, int fd, uint32_t events, struct mg_err **err);
/* Stop watching fd; no more callbacks for it, even ones already fetched in
 * this round. An fd not watched is ignored. */
void loop_unwatch(struct loop *loop, int fd);

/* Call cb once, delay_ms from now (negative counts as 0), on the loop's
 * thread. Timers due at the same time fire in the order they were added. A
 * timer added during a round fires in a later round. The handle is valid
 * until the callback has returned or the timer is cancelled. Never NULL. */
struct loop_timer *loop_timer_add(struct loop *loop, int64_t delay_ms, loop_timer_cb cb,
                                  void *data);
/* Cancel a pending timer (also from inside its own or another callback).
 * NULL does nothing. */
void loop_timer_cancel(struct loop *loop, struct loop_timer *timer);

/* Call cb for SIGTERM, SIGINT and SIGHUP (NULL: stop reading them here). */
void loop_on_signal(struct loop *loop, loop_signal_cb cb, void *data);

/* Call cb once when child pid has exited and this loop has reaped it (with
 * waitpid(pid, WNOHANG); no other pid is reaped). pidfd may be -1; the loop
 * keeps its own copy (or opens one), so the caller may close theirs. Nothing
 * else may wait for pid meanwhile. Returns -1 (errno EINVAL) for pid <= 0,
 * a NULL cb or a pid already watched. */
int loop_watch_child(struct loop *loop, pid_t pid, int pidfd, loop_child_cb cb, void *data);
/* Forget a child watch (for one reaped elsewhere, say by proc_stop()); no
 * callback follows. An unknown pid is ignored. */
void loop_unwatch_child(struct loop *loop, pid_t pid);

/* From any thread: run cb(loop, data) on the loop's thread during a later
 * round. Callbacks run in the order they were posted. Returns 0, or -1
 * when loop is NULL. */
int loop_post(struct loop *loop, loop_post_cb cb, void *data);

/* A job: work(data) runs on a thread of its own, then done(loop, data) on
 * the loop's thread in a later round. This is how whatever blocks (a runtime
 * command, a wait for a process, an HTTP request with its own deadline) runs
 * without holding the loop up; its end arrives as an event. work must not
 * touch the loop but through loop_post(), nor what the loop's thread uses
 * meanwhile. Returns 0 when work runs on its own thread, 1 when no thread
 * could be started and work has run on the calling thread instead (done is
 * still called from a later round). */
typedef void (*loop_work_cb)(void *data);
int loop_job(struct loop *loop, loop_work_cb work, loop_post_cb done, void *data);
/* Jobs whose done has not run yet. */
size_t loop_jobs_pending(const struct loop *loop);
/* Wait for every job's work to end and run its done (and the posts queued
 * before it), here and now: for a teardown whose data the dones still need.
 * It blocks: never while the loop serves anyone. NULL does nothing. */
void loop_jobs_finish(struct loop *loop);

/* Dispatch until loop_stop(). Returns 0 then, or -1 on a failure of the
 * loop itself (epoll_wait). */
int loop_run(struct loop *loop, struct mg_err **err);
/* One round: wait at most timeout_ms (-1: until something happens, 0: not
 * at all, and never past the nearest timer), then run what is ready.
 * Returns the number of callbacks run, or -1. */
int loop_run_once(struct loop *loop, int64_t timeout_ms, struct mg_err **err);
/* Make loop_run() return after the current round; callable from any thread
 * and from callbacks. */
void loop_stop(struct loop *loop);

#endif
