/* Long steps said as they go (progress.h). On a terminal a thread of its
 * own redraws the step's line a few times a second; the gauge, which may
 * walk a folder, is read at most once a second. */
#define _GNU_SOURCE
#include "cmd/mcpgate/progress.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal/base/cleanup.h"
#include "internal/base/tree.h"
#include "internal/base/utf8.h"
#include "internal/base/xalloc.h"
#include "internal/proc/proc.h"

#define TICK_MS  200
#define GAUGE_MS 1000
#define BAR      24

struct progress {
	char *cmd;
	unsigned step, nsteps;
	bool tty;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t thread;
	bool running; /* a step is under way and the thread draws it */
	char *what;   /* the step, as shown */
	progress_gauge gauge;
	void *data;
	int64_t began_ms, gauged_ms;
	uint64_t done, total;
};

/* The progress drawing now, if any: what progress_note clears first */
static pthread_mutex_t current_lock = PTHREAD_MUTEX_INITIALIZER;
static struct progress *current;

struct progress *progress_new(const char *cmd, unsigned nsteps)
{
	struct progress *p = xcalloc(1, sizeof(*p));
	pthread_mutex_lock(&current_lock);
	current = p;
	pthread_mutex_unlock(&current_lock);
	p->cmd = xstrdup(cmd);
	p->nsteps = nsteps;
	p->tty = isatty(STDERR_FILENO) == 1 && getenv("TERM") != NULL &&
	         strcmp(getenv("TERM"), "dumb") != 0;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	return p;
}

void progress_steps(struct progress *p, unsigned nsteps)
{
	pthread_mutex_lock(&p->lock);
	p->nsteps = nsteps;
	pthread_mutex_unlock(&p->lock);
}

void progress_one_more(struct progress *p)
{
	pthread_mutex_lock(&p->lock);
	if (p->nsteps > 0)
		p->nsteps++;
	pthread_mutex_unlock(&p->lock);
}

/* "0.4 s", "12 s", "2 min 13 s" */
static void elapsed_text(int64_t ms, char *buf, size_t len)
{
	if (ms < 10000)
		snprintf(buf, len, "%.1f s", (double)ms / 1000.0);
	else if (ms < 60000)
		snprintf(buf, len, "%lld s", (long long)(ms / 1000));
	else
		snprintf(buf, len, "%lld min %02lld s", (long long)(ms / 60000),
		         (long long)((ms / 1000) % 60));
}

static void step_text(const struct progress *p, char *buf, size_t len)
{
	if (p->nsteps > 0)
		snprintf(buf, len, "[%u/%u] ", p->step, p->nsteps);
	else
		buf[0] = '\0';
}

/* How far: "45 MB", or a bar "[######----] 45%  120 MB of 260 MB" */
static void amount_text(const struct progress *p, char *buf, size_t len)
{
	char done[32], total[32];
	mg_size_text(p->done, done, sizeof(done));
	if (p->gauge == NULL) {
		buf[0] = '\0';
	} else if (p->total == 0) {
		snprintf(buf, len, "%s", done);
	} else {
		uint64_t d = p->done > p->total ? p->total : p->done;
		unsigned fill = (unsigned)(d * BAR / p->total);
		char bar[BAR + 1];
		memset(bar, '#', fill);
		memset(bar + fill, '-', BAR - fill);
		bar[BAR] = '\0';
		snprintf(buf, len, "[%s] %3u%%  %s of %s", bar, (unsigned)(d * 100 / p->total),
		         done, mg_size_text(p->total, total, sizeof(total)));
	}
}

static unsigned columns(void)
{
	struct winsize ws;
	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
		return ws.ws_col;
	return 80;
}

/* Under the lock, on a terminal: the step's line drawn again in place,
 * cut to the terminal's width so that it never wraps */
static void draw(struct progress *p)
{
	char step[32], amount[128], time_text[32], line[1024];
	step_text(p, step, sizeof(step));
	amount_text(p, amount, sizeof(amount));
	elapsed_text(proc_now_ms() - p->began_ms, time_text, sizeof(time_text));
	int n = snprintf(line, sizeof(line), "mcpgate %s %s%s  %s%s%s", p->cmd, step, p->what,
	                 amount, amount[0] != '\0' ? "  " : "", time_text);
	size_t width = columns() - 1;
	if (n < 0)
		return;
	size_t len = (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;
	if (len > width) {
		len = width;
		while (len > 0 && ((unsigned char)line[len] & 0xC0) == 0x80)
			len--;
	}
	fprintf(stderr, "\r\033[K%.*s", (int)len, line);
	fflush(stderr);
}

static void measure(struct progress *p)
{
	if (p->gauge == NULL)
		return;
	progress_gauge gauge = p->gauge;
	void *data = p->data;
	uint64_t done = 0, total = 0;
	pthread_mutex_unlock(&p->lock); /* a walk may take a while */
	gauge(data, &done, &total);
	pthread_mutex_lock(&p->lock);
	/* the furthest seen: a reader that is gone reads nothing any more */
	if (done > p->done)
		p->done = done;
	p->total = total;
	p->gauged_ms = proc_now_ms();
}

static void *ticker(void *arg)
{
	struct progress *p = arg;
	pthread_mutex_lock(&p->lock);
	while (p->running) {
		if (proc_now_ms() - p->gauged_ms >= GAUGE_MS)
			measure(p);
		if (!p->running)
			break;
		if (p->tty)
			draw(p);
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += TICK_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&p->wake, &p->lock, &until);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static void begin(struct progress *p, const char *what, progress_gauge gauge, void *data,
                  bool draw_it);

void progress_begin(struct progress *p, const char *what, progress_gauge gauge, void *data)
{
	begin(p, what, gauge, data, true);
}

void progress_begin_quiet(struct progress *p, const char *what)
{
	if (p->tty)
		fprintf(stderr, "mcpgate %s: %s...\n", p->cmd, what);
	begin(p, what, NULL, NULL, false);
}

static void begin(struct progress *p, const char *what, progress_gauge gauge, void *data,
                  bool draw_it)
{
	pthread_mutex_lock(&p->lock);
	free(p->what);
	p->what = mg_shown(what, strlen(what));
	p->step++;
	p->gauge = gauge;
	p->data = data;
	p->done = p->total = 0;
	p->began_ms = proc_now_ms();
	p->gauged_ms = 0;
	/* on a terminal it draws; elsewhere it only reads the gauge, for the
	 * line at the end */
	p->running = (p->tty && draw_it) || gauge != NULL;
	pthread_mutex_unlock(&p->lock);
	if (p->running && pthread_create(&p->thread, NULL, ticker, p) != 0)
		p->running = false; /* no redraw: the line at its end is all */
}

void progress_end(struct progress *p, bool ok)
{
	pthread_mutex_lock(&p->lock);
	bool drew = p->running;
	p->running = false;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	if (drew)
		pthread_join(p->thread, NULL);
	if (p->what == NULL)
		return;
	pthread_mutex_lock(&p->lock);
	if (ok && p->gauge != NULL)
		measure(p); /* what it made, once more */
	if (ok && p->total > 0)
		p->done = p->total; /* a reader that ended read it all */
	char step[32], amount[32] = "", time_text[32];
	step_text(p, step, sizeof(step));
	if (p->gauge != NULL)
		mg_size_text(p->done, amount, sizeof(amount));
	elapsed_text(proc_now_ms() - p->began_ms, time_text, sizeof(time_text));
	fprintf(stderr, "%smcpgate %s: %s%s: %s%s%s%s\n", p->tty ? "\r\033[K" : "", p->cmd, step,
	        p->what, ok ? "" : "failed after ", amount[0] != '\0' && ok ? amount : "",
	        amount[0] != '\0' && ok ? " in " : "", time_text);
	fflush(stderr);
	free(p->what);
	p->what = NULL;
	pthread_mutex_unlock(&p->lock);
}

void progress_note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cleanup_free char *text = xvasprintf(fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&current_lock);
	struct progress *p = current;
	if (p != NULL)
		pthread_mutex_lock(&p->lock);
	/* the step's line goes; the ticker draws it again below the note */
	fprintf(stderr, "%smcpgate %s: %s\n", p != NULL && p->tty ? "\r\033[K" : "",
	        p != NULL ? p->cmd : "", text);
	fflush(stderr);
	if (p != NULL)
		pthread_mutex_unlock(&p->lock);
	pthread_mutex_unlock(&current_lock);
}

void progress_made(struct progress *p, uint64_t bytes)
{
	pthread_mutex_lock(&p->lock);
	p->done = bytes;
	pthread_mutex_unlock(&p->lock);
}

void progress_free(struct progress *p)
{
	if (p == NULL)
		return;
	if (p->what != NULL)
		progress_end(p, false);
	pthread_mutex_lock(&current_lock);
	if (current == p)
		current = NULL;
	pthread_mutex_unlock(&current_lock);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->wake);
	free(p->cmd);
	free(p);
}

/* ---- gauges ---------------------------------------------------------------- */

void progress_gauge_tree(void *data, uint64_t *done, uint64_t *total)
{
	const struct progress_tree *t = data;
	struct mg_tree_size size = {0};
	mg_tree_size(t->path, &size, NULL);
	*done = size.bytes;
	*total = 0;
}

void progress_gauge_file(void *data, uint64_t *done, uint64_t *total)
{
	const struct progress_file *f = data;
	struct stat st;
	*done = stat(f->path, &st) == 0 ? (uint64_t)st.st_size : 0;
	*total = f->total;
	/* and what this process writes beside it, in files it unlinked already
	 * (a pack writes each layer so before the archive) */
	size_t n = strlen(f->path);
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL) {
		char fd_path[384], link[PATH_MAX];
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		snprintf(fd_path, sizeof(fd_path), "/proc/self/fd/%s", e->d_name);
		ssize_t got = readlink(fd_path, link, sizeof(link) - 1);
		if (got <= (ssize_t)n)
			continue;
		link[got] = '\0';
		if (strncmp(link, f->path, n) == 0 && link[n] == '.' && stat(fd_path, &st) == 0 &&
		    S_ISREG(st.st_mode))
			*done += (uint64_t)st.st_size;
	}
	if (d != NULL)
		closedir(d);
}

/* The parent of pid, from /proc/PID/stat (after the command's last ')') */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "re");
	if (f == NULL)
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *close_paren = strrchr(buf, ')');
	int ppid = -1;
	char state;
	if (close_paren == NULL || sscanf(close_paren + 1, " %c %d", &state, &ppid) != 2)
		return -1;
	return (pid_t)ppid;
}

/* The furthest position any fd of pid has on path */
static uint64_t read_position(pid_t pid, const char *path)
{
	char dir[64];
	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	DIR *d = opendir(dir);
	uint64_t best = 0;
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		char link[PATH_MAX], fd_path[384];
		snprintf(fd_path, sizeof(fd_path), "%s/%s", dir, e->d_name);
		ssize_t n = readlink(fd_path, link, sizeof(link) - 1);
		if (n < 0)
			continue;
		link[n] = '\0';
		if (strcmp(link, path) != 0)
			continue;
		char info[384], text[256];
		snprintf(info, sizeof(info), "/proc/%d/fdinfo/%s", (int)pid, e->d_name);
		FILE *f = fopen(info, "re");
		unsigned long long pos = 0;
		while (f != NULL && fgets(text, sizeof(text), f) != NULL)
			if (sscanf(text, "pos: %llu", &pos) == 1)
				break;
		if (f != NULL)
			fclose(f);
		if (pos > best)
			best = pos;
	}
	if (d != NULL)
		closedir(d);
	return best;
}

void progress_gauge_read(void *data, uint64_t *done, uint64_t *total)
{
	const struct progress_read *r = data;
	*total = r->total;
	*done = 0;
	/* every process and its parent, then ours and theirs, down the tree */
	pid_t *pids = NULL, *parents = NULL;
	size_t n = 0, cap = 0;
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			pids = xreallocarray(pids, cap, sizeof(*pids));
			parents = xreallocarray(parents, cap, sizeof(*parents));
		}
		pids[n] = (pid_t)strtol(e->d_name, NULL, 10);
		parents[n] = parent_of(pids[n]);
		n++;
	}
	if (d != NULL)
		closedir(d);
	bool *ours = xcalloc(n > 0 ? n : 1, sizeof(*ours));
	pid_t self = getpid();
	for (bool grew = true; grew;) {
		grew = false;
		for (size_t i = 0; i < n; i++) {
			if (ours[i])
				continue;
			bool mine = parents[i] == self;
			for (size_t k = 0; !mine && k < n; k++)
				mine = ours[k] && pids[k] == parents[i];
			if (mine)
				ours[i] = grew = true;
		}
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t pos = ours[i] ? read_position(pids[i], r->path) : 0;
		if (pos > *done)
			*done = pos;
	}
	free(ours);
	free(pids);
	free(parents);
}
