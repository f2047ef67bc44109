/* mcp.toml followed while serve runs (docs/2026-12-02-daily-use.md).
 *
 * One watch per process: a thread reads inotify events of the folder that
 * holds mcp.toml (an atomic write renames a file onto it, an editor writes
 * it in place), waits for the writes to settle, and reads the file again.
 * What it read is a generation: the configuration, the file's tree and its
 * text, kept until the process ends (gw_watch_end), because a session's
 * servers and tools point into the configuration they started with. Each
 * session that joined is told on its own loop (loop_post) and compares the
 * generation its servers come from with the newest, server by server:
 *   - enabled = false, or gone from the file: stopped, tools withdrawn;
 *   - enabled again: started as a session starts it;
 *   - any other key of its entry changed (its image and pin after update or
 *     approve, its tools, its args): stopped and started with the new entry;
 *   - a server new to the file is offered from the next session on (said).
 * A file that does not load changes nothing (said, with why). A listener's
 * later clients start from the newest generation. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/log.h"
#include "internal/base/xalloc.h"
#include "internal/gateway/gateway-internal.h"
#include "internal/toml/toml.h"
#include "internal/toml/toml_change.h"

/* How long the file must be quiet before it is read again */
#define WATCH_SETTLE_MS 150

struct generation {
	struct cfg *cfg;
	bool owned;              /* read by the watch (else the process's own) */
	struct toml_value *tree; /* the file's tree, NULL when it did not parse */
};

struct member {
	struct session *s;
	struct member *next;
};

static struct {
	pthread_mutex_t lock;
	bool started, failed;
	pthread_t thread;
	int ifd, stop_fd;
	char *mcp_path, *config_path, *name;
	struct generation *gens;
	size_t ngens;
	/* the last read that failed, and how many there were */
	char *error;
	unsigned errors;
	struct member *members;
} W = {.lock = PTHREAD_MUTEX_INITIALIZER, .ifd = -1, .stop_fd = -1};

/* The tree of the file as it is now; NULL when it cannot be read */
static struct toml_value *tree_of(const char *path)
{
	cleanup_free char *text = NULL;
	size_t len = 0;
	struct toml_value *t = NULL;
	if (mg_read_file(path, CFG_FILE_MAX, &text, &len, NULL) < 0 ||
	    toml_parse(text, len, path, &t, NULL) < 0)
		return NULL;
	return t;
}

/* Under the lock: the generation of cfg, added when it is new */
static size_t generation_of(struct cfg *cfg, bool owned, struct toml_value *tree)
{
	for (size_t i = 0; i < W.ngens; i++)
		if (W.gens[i].cfg == cfg) {
			toml_free(tree);
			return i;
		}
	W.gens = xreallocarray(W.gens, W.ngens + 1, sizeof(*W.gens));
	W.gens[W.ngens] = (struct generation){cfg, owned, tree};
	return W.ngens++;
}

static void tell_members(void)
{
	for (struct member *m = W.members; m != NULL; m = m->next)
		loop_post(m->s->loop, gw_watch_apply, m->s);
}

/* On the watch's thread: read the file again, and tell every session */
static void reread(void)
{
	struct cfg *cfg = NULL;
	struct mg_err *err = NULL;
	int r = cfg_load_files(W.mcp_path, W.config_path, &cfg, &err);
	struct toml_value *tree = r == 0 ? tree_of(W.mcp_path) : NULL;
	pthread_mutex_lock(&W.lock);
	if (r < 0) {
		free(W.error);
		W.error = xstrdup(mg_err_msg(err));
		W.errors++;
	} else {
		generation_of(cfg, true, tree);
	}
	tell_members();
	pthread_mutex_unlock(&W.lock);
	mg_err_free(err);
}

/* Whether the events in buf[0..n) touch the file */
static bool touches(const char *buf, ssize_t n)
{
	bool hit = false;
	for (ssize_t off = 0; off < n;) {
		const struct inotify_event *e = (const struct inotify_event *)(buf + off);
		if (e->len > 0 && strcmp(e->name, W.name) == 0)
			hit = true;
		if (e->mask & IN_Q_OVERFLOW)
			hit = true;
		off += (ssize_t)(sizeof(*e) + e->len);
	}
	return hit;
}

static void *watch_thread(void *arg)
{
	(void)arg;
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool pending = false;
	for (;;) {
		struct pollfd p[2] = {{W.ifd, POLLIN, 0}, {W.stop_fd, POLLIN, 0}};
		int n = poll(p, 2, pending ? WATCH_SETTLE_MS : -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || (p[1].revents & POLLIN))
			break;
		if (n == 0) {
			/* quiet for a while since the last write: read it */
			pending = false;
			reread();
			continue;
		}
		ssize_t got = read(W.ifd, buf, sizeof(buf));
		if (got > 0 && touches(buf, got))
			pending = true;
	}
	return NULL;
}

/* Under the lock: the watch of the folder of s->cfg's mcp.toml, started
 * once; false when it cannot run (said once) */
static bool start_locked(struct session *s)
{
	if (W.started)
		return strcmp(W.mcp_path, s->cfg->mcp_path) == 0;
	if (W.failed)
		return false;
	cleanup_free char *dir = xstrdup(s->cfg->mcp_path);
	char *slash = strrchr(dir, '/');
	const char *name = slash != NULL ? slash + 1 : dir;
	const char *folder = slash == dir ? "/" : slash != NULL ? (*slash = '\0', dir) : ".";
	W.ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	W.stop_fd = eventfd(0, EFD_CLOEXEC);
	int e = 0;
	if (W.ifd < 0 || W.stop_fd < 0 ||
	    inotify_add_watch(W.ifd, folder,
	                      IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE |
	                          IN_MOVED_FROM) < 0 ||
	    (e = pthread_create(&W.thread, NULL, watch_thread, NULL)) != 0) {
		mg_warn("changes to %s are not followed while serve runs (%s): they take effect "
		        "when the client starts mcpgate again",
		        s->cfg->mcp_path, strerror(e != 0 ? e : errno));
		if (W.ifd >= 0)
			close(W.ifd);
		if (W.stop_fd >= 0)
			close(W.stop_fd);
		W.ifd = W.stop_fd = -1;
		W.failed = true;
		return false;
	}
	W.name = xstrdup(name);
	W.mcp_path = xstrdup(s->cfg->mcp_path);
	W.config_path = s->cfg->config_path != NULL ? xstrdup(s->cfg->config_path) : NULL;
	W.started = true;
	return true;
}

/* Under the lock: the generation whose configuration holds server c, or
 * the newest (compared as addresses: c points into one of them) */
static size_t generation_holding(const struct cfg_server *c)
{
	for (size_t i = 0; i < W.ngens; i++) {
		const struct cfg *g = W.gens[i].cfg;
		if ((uintptr_t)c >= (uintptr_t)g->servers &&
		    (uintptr_t)c < (uintptr_t)(g->servers + g->nservers))
			return i;
	}
	return W.ngens - 1;
}

/* The element of server named name in a file's tree, or NULL */
static const struct toml_value *entry_of(const struct toml_value *tree, const char *name)
{
	const struct toml_value *list = tree != NULL ? toml_get(tree, "server") : NULL;
	for (size_t i = 0; list != NULL && list->kind == TOML_ARRAY && i < list->u.array.len; i++) {
		const struct toml_value *e = list->u.array.items[i];
		const struct toml_value *n = e->kind == TOML_TABLE ? toml_get(e, "name") : NULL;
		if (n != NULL && n->kind == TOML_STRING && strcmp(n->u.str.ptr, name) == 0)
			return e;
	}
	return NULL;
}

/* The entry changed in anything but enabled (which is what takes a server
 * down or up by itself); without both trees, anything may have */
static bool entry_changed(const struct toml_value *was, const struct toml_value *is)
{
	if (was == NULL || is == NULL)
		return true;
	struct toml_value *a = toml_copy(was), *b = toml_copy(is);
	toml_table_remove(a, "enabled", 7);
	toml_table_remove(b, "enabled", 7);
	bool changed = toml_compare(a, b, NULL) < 0;
	toml_free(a);
	toml_free(b);
	return changed;
}

void gw_watch_join(struct session *s, const struct cfg_server *host_of)
{
	pthread_mutex_lock(&W.lock);
	/* the process's own configuration is the first generation */
	if (!W.started) {
		if (!start_locked(s)) {
			pthread_mutex_unlock(&W.lock);
			return;
		}
		generation_of(s->cfg, false, tree_of(s->cfg->mcp_path));
	} else if (strcmp(W.mcp_path, s->cfg->mcp_path) != 0) {
		pthread_mutex_unlock(&W.lock);
		return; /* one file is followed per process */
	}
	/* an instance starts from the entry it was made for, and hears at once
	 * when that is not the newest any more; any other session from the
	 * newest */
	s->gen = host_of != NULL ? generation_holding(host_of) : W.ngens - 1;
	s->cfg = W.gens[s->gen].cfg;
	struct member *m = xcalloc(1, sizeof(*m));
	m->s = s;
	m->next = W.members;
	W.members = m;
	s->watching = true;
	if (s->gen != W.ngens - 1)
		loop_post(s->loop, gw_watch_apply, s);
	pthread_mutex_unlock(&W.lock);
}

bool gw_watch_same_entry(const struct cfg_server *a, const struct cfg_server *b)
{
	if (a == b)
		return true;
	pthread_mutex_lock(&W.lock);
	size_t ga = generation_holding(a), gb = generation_holding(b);
	bool same = W.ngens > 0 && strcmp(a->name, b->name) == 0 &&
	            cfg_find_server(W.gens[ga].cfg, a->name) == a &&
	            cfg_find_server(W.gens[gb].cfg, b->name) == b &&
	            !entry_changed(entry_of(W.gens[ga].tree, a->name),
	                           entry_of(W.gens[gb].tree, b->name)) &&
	            a->enabled == b->enabled;
	pthread_mutex_unlock(&W.lock);
	return same;
}

void gw_watch_leave(struct session *s)
{
	if (!s->watching)
		return;
	pthread_mutex_lock(&W.lock);
	for (struct member **p = &W.members; *p != NULL; p = &(*p)->next)
		if ((*p)->s == s) {
			struct member *m = *p;
			*p = m->next;
			free(m);
			break;
		}
	s->watching = false;
	pthread_mutex_unlock(&W.lock);
}

static bool in_session(const struct session *s, const char *name)
{
	for (size_t i = 0; i < s->nservers; i++)
		if (strcmp(s->servers[i].cfg->name, name) == 0)
			return true;
	return false;
}

/* One server of s as generation now has it (was: the one it came from) */
static void apply_server(struct gw_server *srv, const struct generation *was,
                         const struct generation *now)
{
	struct session *s = srv->sess;
	const char *name = srv->cfg->name;
	const struct cfg_server *nc = cfg_find_server(now->cfg, name);
	bool here = nc != NULL && (s->host != NULL || gw_offered_here(nc, s->workspace));
	bool on = here && nc->enabled;
	bool changed = here && entry_changed(entry_of(was->tree, name), entry_of(now->tree, name));
	if (s->host != NULL) {
		/* an instance serves its one entry as it was made: anything else
		 * ends it, and the next attach starts one of the entry as it is */
		if (!on || changed)
			gw_session_stop(s);
		return;
	}
	if (!on) {
		srv->removed = !here;
		if (!srv->disabled) {
			srv->disabled = true;
			gw_server_take_down(srv);
		}
		return;
	}
	if (srv->disabled) {
		srv->disabled = srv->removed = false;
		srv->next_cfg = nc;
		audit_record(s->audit, "server.enabled",
		             gw_fields("server", json_new_string(name), NULL));
		cleanup_free char *text =
		    xasprintf("server %s is enabled in mcp.toml: it starts", name);
		gw_client_notice(s, "info", text);
		gw_server_bring_up(srv);
	} else if (changed) {
		srv->next_cfg = nc;
		gw_server_take_down(srv); /* and up again, with next_cfg */
	} else if (srv->next_cfg != NULL) {
		srv->next_cfg = nc; /* the same entry, read again */
	}
}

void gw_watch_apply(struct loop *loop, void *data)
{
	(void)loop;
	struct session *s = data;
	if (s->stopping || !s->watching)
		return;
	pthread_mutex_lock(&W.lock);
	size_t newest = W.ngens - 1;
	struct generation was = W.gens[s->gen], now = W.gens[newest];
	cleanup_free char *error = W.errors > 0 ? xstrdup(W.error) : NULL;
	unsigned errors = W.errors;
	pthread_mutex_unlock(&W.lock);
	if (error != NULL && errors != s->watch_errors) {
		s->watch_errors = errors;
		cleanup_free char *text = xasprintf(
		    "mcp.toml changed, but it does not load; the servers stay as they are: %s",
		    error);
		audit_record(s->audit, "config.reload",
		             gw_fields("error", json_new_string(error), NULL));
		mg_warn("%s", text);
		gw_client_notice(s, "warning", text);
	}
	if (newest == s->gen)
		return;
	audit_record(s->audit, "config.reload",
	             gw_fields("path", json_new_string(now.cfg->mcp_path), NULL));
	s->gen = newest;
	for (size_t i = 0; i < s->nservers && !s->stopping; i++)
		apply_server(&s->servers[i], &was, &now);
	if (s->host != NULL)
		return;
	for (size_t i = 0; i < now.cfg->nservers; i++) {
		const struct cfg_server *c = &now.cfg->servers[i];
		if (in_session(s, c->name) || cfg_find_server(was.cfg, c->name) != NULL ||
		    !gw_offered_here(c, s->workspace))
			continue;
		audit_record(s->audit, "server.added",
		             gw_fields("server", json_new_string(c->name), NULL));
		cleanup_free char *text = xasprintf(
		    "server %s is new in mcp.toml: it is offered from the client's next session "
		    "(start the client again%s)",
		    c->name, s->instances != NULL ? ", or connect again to serve --listen" : "");
		gw_client_notice(s, "info", text);
	}
}

void gw_watch_end(void)
{
	pthread_mutex_lock(&W.lock);
	bool started = W.started;
	pthread_mutex_unlock(&W.lock);
	if (started) {
		uint64_t one = 1;
		if (write(W.stop_fd, &one, sizeof(one)) != (ssize_t)sizeof(one))
			mg_warn("stopping the watch of mcp.toml: %s", strerror(errno));
		pthread_join(W.thread, NULL);
		close(W.ifd);
		close(W.stop_fd);
	}
	pthread_mutex_lock(&W.lock);
	for (size_t i = 0; i < W.ngens; i++) {
		if (W.gens[i].owned)
			cfg_free(W.gens[i].cfg);
		toml_free(W.gens[i].tree);
	}
	free(W.gens);
	while (W.members != NULL) {
		struct member *m = W.members;
		W.members = m->next;
		free(m);
	}
	free(W.mcp_path);
	free(W.config_path);
	free(W.name);
	free(W.error);
	W.gens = NULL;
	W.ngens = 0;
	W.mcp_path = W.config_path = W.name = W.error = NULL;
	W.errors = 0;
	W.started = W.failed = false;
	W.ifd = W.stop_fd = -1;
	pthread_mutex_unlock(&W.lock);
}
