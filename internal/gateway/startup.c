/* What the servers' starts share, found once and at the same time as they
 * run: the sweep of what dead mcpgate processes left, what the runtime
 * enforces here (its `info`), and whether each distinct image is present.
 *
 * None of them delays a start more than it must. The sweep precedes no
 * start at all: it removes only what it proves dead, and everything this
 * session makes is labelled with this live process as its owner and named
 * with this session's own id, so what it removes can never be this
 * session's (docs/2026-12-01-session-start.md). No request waits for it
 * (docs/2026-12-02-never-wait.md); the session's end joins it. A server
 * waits for the platform only before it is judged against it (the refusal
 * of limits that would not hold comes before its run), and for its image's
 * check, which the first server of that image makes for all. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal/base/log.h"
#include "internal/base/xalloc.h"
#include "internal/gateway/gateway-internal.h"

struct image_check {
	const char *image; /* borrowed from the configuration */
	bool claimed;      /* a thread is checking it */
	bool done;
	int present; /* image_present's answer: 1, 0, or -1 with error */
	char *error;
};

struct gw_startup {
	pthread_mutex_t lock;
	pthread_cond_t changed; /* the platform is known, or an image's check ended */
	bool platform_known;
	struct image_check *images;
	size_t nimages;
	pthread_t sweep_thread, platform_thread;
	bool sweep_started, platform_started;
};

/* ---- the sweep: once per runtime and process (the driver keeps count) -- */

static void sweep_once(struct session *s)
{
	unsigned removed = 0;
	struct mg_err *err = NULL;
	int r = ctr_sweep_once(s->driver, &removed, &err);
	if (r == 0)
		return;
	audit_record(s->audit, "sweep",
	             gw_fields("runtime", json_new_string(s->driver->name), "removed",
	                       json_new_int(removed), "error",
	                       r < 0 ? json_new_string(mg_err_msg(err)) : json_new_null(), NULL));
	if (r < 0)
		mg_warn("sweep: %s", mg_err_msg(err));
	else if (removed > 0)
		mg_info("swept %u container(s) and network(s) left by dead mcpgate processes",
		        removed);
	mg_err_free(err);
}

/* On the loop thread: the sweep's thread is joined. Nothing waits for it
 * (the session's end does, as for a start: s->starting counts it). */
static void sweep_ended(struct loop *loop, void *data)
{
	(void)loop;
	struct session *s = data;
	pthread_join(s->startup->sweep_thread, NULL);
	s->startup->sweep_started = false;
	s->starting--;
}

static void *sweep_thread(void *arg)
{
	struct session *s = arg;
	sweep_once(s);
	loop_post(s->loop, sweep_ended, s);
	return NULL;
}

/* ---- the platform ------------------------------------------------------- */

static void platform_probe(struct session *s)
{
	struct mg_err *err = NULL;
	if (s->driver->ops->platform(s->driver, &s->platform, &err) < 0) {
		s->platform_error = xstrdup(mg_err_msg(err));
		mg_err_free(err);
	}
	pthread_mutex_lock(&s->startup->lock);
	s->startup->platform_known = true;
	pthread_cond_broadcast(&s->startup->changed);
	pthread_mutex_unlock(&s->startup->lock);
}

static void *platform_thread(void *arg)
{
	platform_probe(arg);
	return NULL;
}

/* ---- waiting, under the start deadline ---------------------------------- */

static struct timespec abs_deadline(int64_t deadline_ms)
{
	/* the deadline is on proc_now_ms()'s clock (monotonic), as the
	 * condition variable is */
	struct timespec ts = {.tv_sec = deadline_ms / 1000,
	                      .tv_nsec = (deadline_ms % 1000) * 1000000};
	return ts;
}

/* Wait on changed until deadline_ms; false once it has passed. Called with
 * the lock held. */
static bool wait_changed(struct gw_startup *u, int64_t deadline_ms)
{
	struct timespec ts = abs_deadline(deadline_ms);
	return pthread_cond_timedwait(&u->changed, &u->lock, &ts) != ETIMEDOUT;
}

int gw_startup_platform_wait(struct session *s, int64_t deadline_ms)
{
	struct gw_startup *u = s->startup;
	pthread_mutex_lock(&u->lock);
	bool known;
	while (!(known = u->platform_known) && wait_changed(u, deadline_ms))
		;
	pthread_mutex_unlock(&u->lock);
	return known ? 0 : -1;
}

int gw_startup_image_present(struct session *s, const char *image, int64_t deadline_ms,
                             struct mg_err **err)
{
	struct gw_startup *u = s->startup;
	pthread_mutex_lock(&u->lock);
	struct image_check *c = NULL;
	for (size_t i = 0; i < u->nimages && c == NULL; i++)
		if (strcmp(u->images[i].image, image) == 0)
			c = &u->images[i];
	if (c == NULL) {
		/* not one listed at the start: asked on its own */
		pthread_mutex_unlock(&u->lock);
		return s->driver->ops->image_present(s->driver, image, err);
	}
	if (!c->claimed) {
		c->claimed = true;
		pthread_mutex_unlock(&u->lock);
		struct mg_err *e = NULL;
		int present = s->driver->ops->image_present(s->driver, image, &e);
		pthread_mutex_lock(&u->lock);
		c->present = present;
		c->error = present < 0 ? xstrdup(mg_err_msg(e)) : NULL;
		c->done = true;
		mg_err_free(e);
		pthread_cond_broadcast(&u->changed);
	}
	while (!c->done && wait_changed(u, deadline_ms))
		;
	int r = c->done ? c->present : -1;
	if (!c->done)
		mg_err_set(err, "its image's check (another server's) did not end in time");
	else if (r < 0)
		mg_err_set(err, "%s", c->error);
	pthread_mutex_unlock(&u->lock);
	return r;
}

/* ---- begin and end ------------------------------------------------------ */

void gw_startup_begin(struct session *s)
{
	struct gw_startup *u = xcalloc(1, sizeof(*u));
	s->startup = u;
	pthread_mutex_init(&u->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&u->changed, &ca);
	pthread_condattr_destroy(&ca);
	u->images = xcalloc(s->nservers > 0 ? s->nservers : 1, sizeof(*u->images));
	for (size_t i = 0; i < s->nservers; i++) {
		const struct cfg_server *c = s->servers[i].cfg;
		if (c->transport == CFG_TRANSPORT_REMOTE || c->image == NULL)
			continue;
		bool seen = false;
		for (size_t k = 0; k < u->nimages && !seen; k++)
			seen = strcmp(u->images[k].image, c->image) == 0;
		if (!seen)
			u->images[u->nimages++].image = c->image;
	}
	if (s->driver == NULL) {
		u->platform_known = true;
		return;
	}
	/* on a thread of its own each; where none can be made, here and now */
	int e = pthread_create(&u->platform_thread, NULL, platform_thread, s);
	if (e == 0)
		u->platform_started = true;
	else
		platform_probe(s);
	e = pthread_create(&u->sweep_thread, NULL, sweep_thread, s);
	if (e == 0) {
		u->sweep_started = true;
		s->starting++;
	} else {
		sweep_once(s);
	}
}

void gw_startup_end(struct session *s)
{
	struct gw_startup *u = s->startup;
	if (u == NULL)
		return;
	if (u->platform_started) {
		pthread_join(u->platform_thread, NULL);
		u->platform_started = false;
	}
	if (u->sweep_started) {
		/* its post to the loop, if still queued, is dropped with the loop */
		pthread_join(u->sweep_thread, NULL);
		u->sweep_started = false;
	}
}

void gw_startup_free(struct session *s)
{
	struct gw_startup *u = s->startup;
	if (u == NULL)
		return;
	gw_startup_end(s);
	for (size_t i = 0; i < u->nimages; i++)
		free(u->images[i].error);
	free(u->images);
	pthread_cond_destroy(&u->changed);
	pthread_mutex_destroy(&u->lock);
	free(u);
	s->startup = NULL;
}
