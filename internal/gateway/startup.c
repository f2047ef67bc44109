/* What the servers' starts share, found once per session: what the runtime
 * enforces here (its `info`, or what it said in an earlier session when
 * nothing that would change it has changed: ctr_platform_get), whether each
 * distinct image is present, and the sweep of what dead mcpgate processes
 * left.
 *
 * None of them is on a start's path more than it must be
 * (docs/2026-12-02-start-path.md). A server waits for the platform only
 * before it is judged against it (the refusal of limits that would not hold
 * comes before its run), on a thread of its own from the session's start.
 * Its image is not checked before its run: the run names the image by
 * digest with --pull=never, so the runtime runs that image or fails at once;
 * a start that failed asks whether the image was there (the first such start
 * of an image asks the runtime for all), so that it can say "mcpgate pull".
 * The sweep removes only what it proves dead, and everything this session
 * makes is labelled with this live process as its owner and named with this
 * session's own id, so it can run at any time
 * (docs/2026-12-01-session-start.md); it runs once no start is under way, as
 * a job of the loop, and nothing waits for it but the session's end. */
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
	bool claimed;      /* a start is checking it */
	bool done;
	int present; /* image_present's answer: 1, 0, or -1 with error */
	char *error;
	int64_t ms; /* how long the runtime took to answer */
};

struct gw_startup {
	pthread_mutex_t lock;
	pthread_cond_t changed; /* the platform is known, or an image's check ended */
	bool platform_known;
	bool platform_kept; /* from an earlier session's answer */
	int64_t platform_ms;
	struct image_check *images;
	size_t nimages;
	pthread_t platform_thread;
	bool platform_started;
	bool sweep_begun;
};

/* ---- the sweep: once per runtime and process (the driver keeps count) -- */

struct sweep_job {
	struct session *sess;
	int result; /* ctr_sweep_once's */
	unsigned removed;
	char *error;
	int64_t ms;
};

static void sweep_work(void *data)
{
	struct sweep_job *j = data;
	struct mg_err *err = NULL;
	int64_t t0 = proc_now_ms();
	j->result = ctr_sweep_once(j->sess->driver, &j->removed, &err);
	j->ms = proc_now_ms() - t0;
	if (j->result < 0)
		j->error = xstrdup(mg_err_msg(err));
	mg_err_free(err);
}

/* On the loop thread: the sweep's end is an event, which nothing waits for */
static void sweep_done(struct loop *loop, void *data)
{
	(void)loop;
	struct sweep_job *j = data;
	struct session *s = j->sess;
	if (j->result != 0) {
		audit_record(
		    s->audit, "sweep",
		    gw_fields("runtime", json_new_string(s->driver->name), "removed",
		              json_new_int(j->removed), "ms", json_new_int(j->ms), "error",
		              j->error != NULL ? json_new_string(j->error) : json_new_null(),
		              NULL));
		if (j->error != NULL)
			mg_warn("sweep: %s", j->error);
		else if (j->removed > 0)
			mg_info("swept %u container(s) and network(s) left by dead mcpgate "
			        "processes",
			        j->removed);
	}
	free(j->error);
	free(j);
}

void gw_startup_sweep_when_idle(struct loop *loop, void *data)
{
	struct session *s = data;
	struct gw_startup *u = s->startup;
	/* not while a start is under way (it would take the runtime's time
	 * from it), and not for a session that is ending (the next one sweeps) */
	if (u == NULL || u->sweep_begun || s->driver == NULL || s->stopping || s->starting > 0)
		return;
	u->sweep_begun = true;
	struct sweep_job *j = xcalloc(1, sizeof(*j));
	j->sess = s;
	loop_job(loop, sweep_work, sweep_done, j);
}

/* ---- the platform ------------------------------------------------------- */

static void platform_probe(struct session *s)
{
	struct mg_err *err = NULL;
	bool kept = false;
	int64_t t0 = proc_now_ms();
	if (ctr_platform_get(s->driver, &s->platform, &kept, &err) < 0) {
		s->platform_error = xstrdup(mg_err_msg(err));
		mg_err_free(err);
	}
	pthread_mutex_lock(&s->startup->lock);
	s->startup->platform_ms = proc_now_ms() - t0;
	s->startup->platform_kept = kept;
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

int gw_startup_platform_wait(struct session *s, int64_t deadline_ms, struct gw_start_phases *phases)
{
	struct gw_startup *u = s->startup;
	int64_t t0 = proc_now_ms();
	pthread_mutex_lock(&u->lock);
	bool known;
	while (!(known = u->platform_known) && wait_changed(u, deadline_ms))
		;
	if (phases != NULL) {
		phases->platform_kept = u->platform_kept;
		phases->platform_ms = u->platform_ms;
	}
	pthread_mutex_unlock(&u->lock);
	if (phases != NULL)
		phases->platform_wait_ms = proc_now_ms() - t0;
	return known ? 0 : -1;
}

int gw_startup_image_present(struct session *s, const char *image, int64_t deadline_ms,
                             struct gw_start_phases *phases, struct mg_err **err)
{
	struct gw_startup *u = s->startup;
	int64_t t0 = proc_now_ms();
	pthread_mutex_lock(&u->lock);
	struct image_check *c = NULL;
	for (size_t i = 0; i < u->nimages && c == NULL; i++)
		if (strcmp(u->images[i].image, image) == 0)
			c = &u->images[i];
	if (c == NULL) {
		/* not one listed at the start: asked on its own */
		pthread_mutex_unlock(&u->lock);
		int present = s->driver->ops->image_present(s->driver, image, err);
		if (phases != NULL)
			phases->image_check_ms = phases->image_wait_ms = proc_now_ms() - t0;
		return present;
	}
	if (!c->claimed) {
		/* the first start that asks checks it for all */
		c->claimed = true;
		pthread_mutex_unlock(&u->lock);
		struct mg_err *e = NULL;
		int present = s->driver->ops->image_present(s->driver, image, &e);
		pthread_mutex_lock(&u->lock);
		c->ms = proc_now_ms() - t0;
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
		mg_err_set(err, "its image's check timed out (start_timeout)");
	else if (r < 0)
		mg_err_set(err, "%s", c->error);
	if (phases != NULL)
		phases->image_check_ms = c->ms;
	pthread_mutex_unlock(&u->lock);
	if (phases != NULL)
		phases->image_wait_ms = proc_now_ms() - t0;
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
	if (s->driver == NULL) {
		u->platform_known = true;
		return;
	}
	for (size_t i = 0; i < s->nservers; i++) {
		const struct cfg_server *c = s->servers[i].cfg;
		if (c->transport == CFG_TRANSPORT_REMOTE || c->image == NULL ||
		    gw_instance_attaches(&s->servers[i]))
			continue;
		bool seen = false;
		for (size_t k = 0; k < u->nimages && !seen; k++)
			seen = strcmp(u->images[k].image, c->image) == 0;
		if (!seen)
			u->images[u->nimages++].image = c->image;
	}
	/* on a thread of its own each; where none can be made, here and now */
	int e = pthread_create(&u->platform_thread, NULL, platform_thread, s);
	if (e == 0)
		u->platform_started = true;
	else
		platform_probe(s);
	/* once the starts this session begins are under way (or none is) */
	loop_post(s->loop, gw_startup_sweep_when_idle, s);
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
