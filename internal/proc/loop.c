#define _GNU_SOURCE
#include "internal/proc/loop.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal/base/xalloc.h"
#include "internal/proc/proc.h"

#define LOOP_MAX_EVENTS 64

struct watch;
struct child;

/* The loop's own fds (signalfd, eventfd, pidfds) are watches with an
 * internal handler instead of a user callback. */
typedef void (*watch_handler)(struct loop *loop, struct watch *w, uint32_t events);

struct watch {
	int fd;
	uint32_t events; /* what epoll has for it now */
	bool dead;       /* unwatched: events already fetched for it are dropped */
	loop_fd_cb cb;
	void *data;
	watch_handler internal;
	struct child *child; /* the child whose pidfd this is */
	struct watch *next_dead;
};

struct loop_timer {
	int64_t due;
	uint64_t seq;
	loop_timer_cb cb;
	void *data;
	struct loop_timer *prev, *next;
};

struct child {
	pid_t pid;
	int pidfd;             /* the loop's own copy, or -1 (then SIGCHLD alone) */
	struct watch *pidfd_w; /* its watch, or NULL */
	bool dead;             /* reaped or unwatched; freed after the round */
	loop_child_cb cb;
	void *data;
	struct child *next;
};

struct post {
	loop_post_cb cb;
	void *data;
	struct post *next;
};

struct job {
	struct loop *loop;
	loop_work_cb work;
	loop_post_cb done;
	void *data;
	pthread_t thread;
	bool threaded;
	struct job *prev, *next; /* the loop's list, touched on its thread only */
};

struct loop {
	int epfd, sigfd, evfd;

	/* watches by fd; a watch leaves the table when unwatched, and is
	 * freed after the round if one is running (dead_watches) */
	struct watch **by_fd;
	size_t n_by_fd;
	struct watch *dead_watches;
	bool dispatching;
	int ran; /* callbacks run in this round */

	struct loop_timer *timers; /* sorted by due, then seq */
	uint64_t timer_seq;        /* the next timer's seq */
	uint64_t round_seq;        /* timers from here on were added this round */
	struct loop_timer *firing;

	struct child *children;
	bool children_check; /* waitpid every child this round (SIGCHLD, a new watch) */

	loop_signal_cb on_signal;
	void *signal_data;

	pthread_mutex_t post_lock; /* guards posts and posts_tail */
	struct post *posts, *posts_tail;
	atomic_bool stop;

	struct job *jobs; /* whose done has not run */
	size_t njobs;
};

/* ---- watches --------------------------------------------------------------- */

static struct watch *watch_get(struct loop *loop, int fd)
{
	if (fd < 0 || (size_t)fd >= loop->n_by_fd)
		return NULL;
	return loop->by_fd[fd];
}

static struct watch *watch_add(struct loop *loop, int fd, uint32_t events, struct mg_err **err)
{
	if (fd < 0) {
		mg_err_set(err, "cannot watch fd %d", fd);
		return NULL;
	}
	if (watch_get(loop, fd) != NULL) {
		mg_err_set(err, "fd %d is already watched", fd);
		return NULL;
	}
	if ((size_t)fd >= loop->n_by_fd) {
		size_t n = loop->n_by_fd != 0 ? loop->n_by_fd : 64;
		while (n <= (size_t)fd)
			n *= 2;
		loop->by_fd = xreallocarray(loop->by_fd, n, sizeof(*loop->by_fd));
		memset(loop->by_fd + loop->n_by_fd, 0, (n - loop->n_by_fd) * sizeof(*loop->by_fd));
		loop->n_by_fd = n;
	}
	struct watch *w = xcalloc(1, sizeof(*w));
	w->fd = fd;
	w->events = events;
	struct epoll_event ev = {.events = events, .data.ptr = w};
	if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		mg_err_sys(err, errno, "watching fd %d", fd);
		free(w);
		return NULL;
	}
	loop->by_fd[fd] = w;
	return w;
}

static void watch_remove(struct loop *loop, struct watch *w)
{
	/* fails harmlessly when the fd was already closed */
	epoll_ctl(loop->epfd, EPOLL_CTL_DEL, w->fd, NULL);
	loop->by_fd[w->fd] = NULL;
	w->dead = true;
	if (loop->dispatching) {
		w->next_dead = loop->dead_watches;
		loop->dead_watches = w;
	} else {
		free(w);
	}
}

int loop_watch(struct loop *loop, int fd, uint32_t events, loop_fd_cb cb, void *data,
               struct mg_err **err)
{
	if (cb == NULL)
		return mg_err_set(err, "watching fd %d: no callback", fd);
	struct watch *w = watch_add(loop, fd, events, err);
	if (w == NULL)
		return -1;
	w->cb = cb;
	w->data = data;
	return 0;
}

int loop_modify(struct loop *loop, int fd, uint32_t events, struct mg_err **err)
{
	struct watch *w = watch_get(loop, fd);
	if (w == NULL || w->internal != NULL)
		return mg_err_set(err, "fd %d is not watched", fd);
	/* the gateway sets every peer's write interest after each callback,
	 * nearly always to what it was: the same level-triggered events are
	 * no change, so no system call. A one-shot or edge-triggered watch is
	 * re-armed by a modify, which is then done whatever it asks. */
	if (events == w->events && (events & (EPOLLONESHOT | EPOLLET)) == 0)
		return 0;
	struct epoll_event ev = {.events = events, .data.ptr = w};
	if (epoll_ctl(loop->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
		return mg_err_sys(err, errno, "changing the events of fd %d", fd);
	w->events = events;
	return 0;
}

void loop_unwatch(struct loop *loop, int fd)
{
	struct watch *w = watch_get(loop, fd);
	/* the loop's own fds are not the caller's to unwatch */
	if (w != NULL && w->internal == NULL)
		watch_remove(loop, w);
}

/* ---- timers ---------------------------------------------------------------- */

static void timer_unlink(struct loop *loop, struct loop_timer *t)
{
	if (t->prev != NULL)
		t->prev->next = t->next;
	else
		loop->timers = t->next;
	if (t->next != NULL)
		t->next->prev = t->prev;
	t->prev = t->next = NULL;
}

struct loop_timer *loop_timer_add(struct loop *loop, int64_t delay_ms, loop_timer_cb cb, void *data)
{
	struct loop_timer *t = xcalloc(1, sizeof(*t));
	t->due = proc_now_ms() + (delay_ms > 0 ? delay_ms : 0);
	t->seq = loop->timer_seq++;
	t->cb = cb;
	t->data = data;
	/* after every timer due no later, so equal times keep their order */
	struct loop_timer *prev = NULL, *next = loop->timers;
	while (next != NULL && next->due <= t->due) {
		prev = next;
		next = next->next;
	}
	t->prev = prev;
	t->next = next;
	if (prev != NULL)
		prev->next = t;
	else
		loop->timers = t;
	if (next != NULL)
		next->prev = t;
	return t;
}

void loop_timer_cancel(struct loop *loop, struct loop_timer *timer)
{
	if (timer == NULL || timer == loop->firing)
		return; /* a firing timer is already unlinked and freed after its callback */
	timer_unlink(loop, timer);
	free(timer);
}

static void timers_fire(struct loop *loop)
{
	int64_t now = proc_now_ms();
	struct loop_timer *t;
	/* A timer added this round sorts after every older one due as early,
	 * so stopping at the first new one misses no old one. */
	while ((t = loop->timers) != NULL && t->due <= now && t->seq < loop->round_seq) {
		timer_unlink(loop, t);
		loop->firing = t;
		t->cb(loop, t->data);
		loop->ran++;
		loop->firing = NULL;
		free(t);
	}
}

/* ---- children -------------------------------------------------------------- */

static void child_drop(struct loop *loop, struct child *c)
{
	c->dead = true;
	if (c->pidfd_w != NULL) {
		watch_remove(loop, c->pidfd_w);
		c->pidfd_w = NULL;
	}
	if (c->pidfd >= 0) {
		close(c->pidfd);
		c->pidfd = -1;
	}
}

static void child_check(struct loop *loop, struct child *c)
{
	int status;
	pid_t r;
	do {
		r = waitpid(c->pid, &status, WNOHANG);
	} while (r < 0 && errno == EINTR);
	if (r == 0)
		return;
	if (r < 0)
		status = -1; /* ECHILD: reaped by someone else */
	child_drop(loop, c);
	c->cb(loop, c->pid, status, c->data);
	loop->ran++;
}

static void children_check(struct loop *loop)
{
	loop->children_check = false;
	/* a child watched from a callback goes to the head: not visited now */
	for (struct child *c = loop->children; c != NULL; c = c->next) {
		if (!c->dead)
			child_check(loop, c);
	}
}

static void children_sweep(struct loop *loop)
{
	struct child **pp = &loop->children;
	while (*pp != NULL) {
		struct child *c = *pp;
		if (c->dead) {
			*pp = c->next;
			free(c);
		} else {
			pp = &c->next;
		}
	}
}

static void on_pidfd(struct loop *loop, struct watch *w, uint32_t events)
{
	(void)events;
	child_check(loop, w->child);
}

static struct child *child_find(struct loop *loop, pid_t pid)
{
	for (struct child *c = loop->children; c != NULL; c = c->next) {
		if (!c->dead && c->pid == pid)
			return c;
	}
	return NULL;
}

int loop_watch_child(struct loop *loop, pid_t pid, int pidfd, loop_child_cb cb, void *data)
{
	if (pid <= 0 || cb == NULL || child_find(loop, pid) != NULL) {
		errno = EINVAL;
		return -1;
	}
	struct child *c = xcalloc(1, sizeof(*c));
	c->pid = pid;
	c->cb = cb;
	c->data = data;
	/* Our own pidfd, so that each loop hears of its children even when
	 * another thread's loop read the SIGCHLD. Without one, SIGCHLD and the
	 * check below still find the exit. */
	if (pidfd >= 0)
		c->pidfd = fcntl(pidfd, F_DUPFD_CLOEXEC, 3);
	else
		c->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (c->pidfd >= 0) {
		c->pidfd_w = watch_add(loop, c->pidfd, EPOLLIN, NULL);
		if (c->pidfd_w != NULL) {
			c->pidfd_w->internal = on_pidfd;
			c->pidfd_w->child = c;
		} else {
			close(c->pidfd);
			c->pidfd = -1;
		}
	}
	c->next = loop->children;
	loop->children = c;
	/* it may have exited before anyone watched: look next round */
	loop->children_check = true;
	return 0;
}

void loop_unwatch_child(struct loop *loop, pid_t pid)
{
	struct child *c = child_find(loop, pid);
	if (c == NULL)
		return;
	child_drop(loop, c);
	if (!loop->dispatching)
		children_sweep(loop);
}

/* ---- signals --------------------------------------------------------------- */

static int signalfd_update(struct loop *loop)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	if (loop->on_signal != NULL) {
		sigaddset(&set, SIGTERM);
		sigaddset(&set, SIGINT);
		sigaddset(&set, SIGHUP);
	}
	return signalfd(loop->sigfd, &set, 0) < 0 ? -1 : 0;
}

void loop_on_signal(struct loop *loop, loop_signal_cb cb, void *data)
{
	loop->on_signal = cb;
	loop->signal_data = data;
	/* cannot fail for an existing signalfd and a valid set */
	signalfd_update(loop);
}

static void on_signalfd(struct loop *loop, struct watch *w, uint32_t events)
{
	(void)w;
	(void)events;
	struct signalfd_siginfo si;
	while (read(loop->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			loop->children_check = true;
		} else if (loop->on_signal != NULL) {
			loop->on_signal(loop, (int)si.ssi_signo, loop->signal_data);
			loop->ran++;
		}
	}
}

/* ---- posts ----------------------------------------------------------------- */

static void wake(struct loop *loop)
{
	uint64_t one = 1;
	/* EAGAIN means the counter is full: the loop is woken already */
	ssize_t r = write(loop->evfd, &one, sizeof(one));
	(void)r;
}

int loop_post(struct loop *loop, loop_post_cb cb, void *data)
{
	if (loop == NULL || cb == NULL)
		return -1;
	struct post *p = xmalloc(sizeof(*p));
	p->cb = cb;
	p->data = data;
	p->next = NULL;
	pthread_mutex_lock(&loop->post_lock);
	if (loop->posts_tail != NULL)
		loop->posts_tail->next = p;
	else
		loop->posts = p;
	loop->posts_tail = p;
	pthread_mutex_unlock(&loop->post_lock);
	wake(loop);
	return 0;
}

static void run_posts(struct loop *loop)
{
	pthread_mutex_lock(&loop->post_lock);
	struct post *list = loop->posts;
	loop->posts = loop->posts_tail = NULL;
	pthread_mutex_unlock(&loop->post_lock);
	while (list != NULL) {
		struct post *p = list;
		list = p->next;
		p->cb(loop, p->data);
		loop->ran++;
		free(p);
	}
}

static void on_eventfd(struct loop *loop, struct watch *w, uint32_t events)
{
	(void)w;
	(void)events;
	uint64_t count;
	/* read before taking the list: a post after the read wakes us again */
	ssize_t r = read(loop->evfd, &count, sizeof(count));
	(void)r;
	run_posts(loop);
}

/* ---- jobs ------------------------------------------------------------------ */

static void job_unlink(struct loop *loop, struct job *j)
{
	if (j->prev != NULL)
		j->prev->next = j->next;
	else
		loop->jobs = j->next;
	if (j->next != NULL)
		j->next->prev = j->prev;
	loop->njobs--;
}

/* On the loop's thread, posted by the job's thread as its last act */
static void job_finished(struct loop *loop, void *data)
{
	struct job *j = data;
	/* the thread has nothing left but to return */
	if (j->threaded)
		pthread_join(j->thread, NULL);
	job_unlink(loop, j);
	loop_post_cb done = j->done;
	void *jdata = j->data;
	free(j);
	if (done != NULL)
		done(loop, jdata);
}

static void *job_thread(void *arg)
{
	struct job *j = arg;
	j->work(j->data);
	loop_post(j->loop, job_finished, j);
	return NULL;
}

int loop_job(struct loop *loop, loop_work_cb work, loop_post_cb done, void *data)
{
	struct job *j = xcalloc(1, sizeof(*j));
	j->loop = loop;
	j->work = work;
	j->done = done;
	j->data = data;
	j->next = loop->jobs;
	if (loop->jobs != NULL)
		loop->jobs->prev = j;
	loop->jobs = j;
	loop->njobs++;
	/* the thread inherits this thread's blocked signals: it reads none */
	j->threaded = pthread_create(&j->thread, NULL, job_thread, j) == 0;
	if (j->threaded)
		return 0;
	work(data);
	loop_post(loop, job_finished, j);
	return 1;
}

size_t loop_jobs_pending(const struct loop *loop)
{
	return loop->njobs;
}

void loop_jobs_finish(struct loop *loop)
{
	while (loop != NULL && loop->jobs != NULL) {
		struct job *j = loop->jobs;
		if (j->threaded) {
			pthread_join(j->thread, NULL);
			j->threaded = false;
		}
		/* its job_finished is queued now: it runs, with what came before */
		run_posts(loop);
	}
}

/* ---- the loop -------------------------------------------------------------- */

static int internal_watch(struct loop *loop, int fd, watch_handler h, struct mg_err **err)
{
	struct watch *w = watch_add(loop, fd, EPOLLIN, err);
	if (w == NULL)
		return -1;
	w->internal = h;
	return 0;
}

struct loop *loop_new(struct mg_err **err)
{
	if (proc_block_signals(err) < 0)
		return NULL;
	struct loop *loop = xcalloc(1, sizeof(*loop));
	loop->epfd = loop->sigfd = loop->evfd = -1;
	pthread_mutex_init(&loop->post_lock, NULL);
	atomic_init(&loop->stop, false);

	loop->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (loop->epfd < 0) {
		mg_err_sys(err, errno, "epoll_create1");
		goto fail;
	}
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	loop->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (loop->sigfd < 0) {
		mg_err_sys(err, errno, "signalfd");
		goto fail;
	}
	loop->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (loop->evfd < 0) {
		mg_err_sys(err, errno, "eventfd");
		goto fail;
	}
	if (internal_watch(loop, loop->sigfd, on_signalfd, err) < 0 ||
	    internal_watch(loop, loop->evfd, on_eventfd, err) < 0)
		goto fail;
	return loop;

fail:
	loop_free(loop);
	return NULL;
}

void loop_free(struct loop *loop)
{
	if (loop == NULL)
		return;
	/* a job's thread posts to the loop when it ends: let each end first */
	while (loop->jobs != NULL) {
		struct job *j = loop->jobs;
		loop->jobs = j->next;
		if (j->threaded)
			pthread_join(j->thread, NULL);
		/* its post (job_finished) is among those dropped below */
		free(j);
	}
	for (size_t i = 0; i < loop->n_by_fd; i++)
		free(loop->by_fd[i]);
	free(loop->by_fd);
	while (loop->dead_watches != NULL) {
		struct watch *w = loop->dead_watches;
		loop->dead_watches = w->next_dead;
		free(w);
	}
	while (loop->timers != NULL) {
		struct loop_timer *t = loop->timers;
		loop->timers = t->next;
		free(t);
	}
	while (loop->children != NULL) {
		struct child *c = loop->children;
		loop->children = c->next;
		if (c->pidfd >= 0)
			close(c->pidfd);
		free(c);
	}
	while (loop->posts != NULL) {
		struct post *p = loop->posts;
		loop->posts = p->next;
		free(p);
	}
	int fds[] = {loop->epfd, loop->sigfd, loop->evfd};
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (fds[i] >= 0)
			close(fds[i]);
	}
	pthread_mutex_destroy(&loop->post_lock);
	free(loop);
}

/* The epoll_wait timeout: timeout_ms, shortened to the nearest timer. */
static int round_timeout(struct loop *loop, int64_t timeout_ms)
{
	if (loop->children_check)
		return 0;
	int64_t t = timeout_ms < 0 ? -1 : timeout_ms;
	if (loop->timers != NULL) {
		int64_t left = loop->timers->due - proc_now_ms();
		if (left < 0)
			left = 0;
		if (t < 0 || left < t)
			t = left;
	}
	return t > INT_MAX ? INT_MAX : (int)t;
}

int loop_run_once(struct loop *loop, int64_t timeout_ms, struct mg_err **err)
{
	if (loop->dispatching)
		return mg_err_set(err, "the event loop cannot run from its own callback");
	struct epoll_event evs[LOOP_MAX_EVENTS];
	int n = epoll_wait(loop->epfd, evs, LOOP_MAX_EVENTS, round_timeout(loop, timeout_ms));
	if (n < 0) {
		if (errno != EINTR)
			return mg_err_sys(err, errno, "epoll_wait");
		n = 0;
	}
	loop->dispatching = true;
	loop->ran = 0;
	loop->round_seq = loop->timer_seq;
	for (int i = 0; i < n; i++) {
		struct watch *w = evs[i].data.ptr;
		if (w->dead)
			continue;
		if (w->internal != NULL) {
			w->internal(loop, w, evs[i].events);
		} else {
			w->cb(loop, w->fd, evs[i].events, w->data);
			loop->ran++;
		}
	}
	if (loop->children_check)
		children_check(loop);
	timers_fire(loop);
	loop->dispatching = false;

	while (loop->dead_watches != NULL) {
		struct watch *w = loop->dead_watches;
		loop->dead_watches = w->next_dead;
		free(w);
	}
	children_sweep(loop);
	return loop->ran;
}

int loop_run(struct loop *loop, struct mg_err **err)
{
	int rc = 0;
	while (!atomic_load(&loop->stop)) {
		if (loop_run_once(loop, -1, err) < 0) {
			rc = -1;
			break;
		}
	}
	atomic_store(&loop->stop, false);
	return rc;
}

void loop_stop(struct loop *loop)
{
	atomic_store(&loop->stop, true);
	wake(loop);
}
