/* A session's life: start every offered server at once (the sweep follows them), register
 * tools in mcp.toml order, serve the client, stop everything. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <sodium.h>

#include "internal/base/cleanup.h"
#include "internal/base/log.h"
#include "internal/base/xalloc.h"
#include "internal/gateway/gateway-internal.h"
#include "internal/mcp/manifest.h"

struct json_value *gw_fields(const char *key, ...)
{
	struct json_value *o = json_new_object();
	va_list ap;
	va_start(ap, key);
	for (const char *k = key; k != NULL; k = va_arg(ap, const char *))
		json_object_set(o, k, va_arg(ap, struct json_value *));
	va_end(ap);
	return o;
}

/* ---- which servers this workspace offers -------------------------------- */

bool gw_offered_here(const struct cfg_server *c, const char *workspace)
{
	if (c->workspaces == NULL)
		return true;
	for (size_t i = 0; i < c->nworkspaces; i++) {
		char real[PATH_MAX];
		const char *w = realpath(c->workspaces[i], real) != NULL ? real : c->workspaces[i];
		size_t n = strlen(w);
		if (strncmp(workspace, w, n) == 0 &&
		    (workspace[n] == '\0' || workspace[n] == '/' || (n == 1 && w[0] == '/')))
			return true;
	}
	return false;
}

/* The instance of one server (host_of) offers only it */
static bool offered(const struct session_options *opt, const struct cfg_server *c,
                    const char *workspace)
{
	return opt->host_of != NULL ? opt->host_of == c : gw_offered_here(c, workspace);
}

int session_new(const struct session_options *opt, struct session **out, struct mg_err **err)
{
	if (sodium_init() < 0) {
		close(opt->client_in);
		if (opt->client_out != opt->client_in)
			close(opt->client_out);
		return mg_err_set(err, "libsodium cannot start");
	}
	struct session *s = xcalloc(1, sizeof(*s));
	s->cfg = opt->cfg;
	s->driver = opt->driver;
	s->owner = opt->owner;
	gw_asks_init(s);
	s->workspace = xstrdup(opt->workspace);
	s->state_dir = xstrdup(opt->state_dir);
	s->data_dir = xstrdup(opt->data_dir != NULL ? opt->data_dir : opt->state_dir);
	s->config_error = opt->config_error != NULL ? xstrdup(opt->config_error) : NULL;
	s->workspace_error = opt->workspace_error != NULL ? xstrdup(opt->workspace_error) : NULL;
	s->start_thread = opt->start_thread;
	s->workspace_note = opt->workspace_note != NULL ? xstrdup(opt->workspace_note) : NULL;
	s->runtime_note = opt->runtime_note != NULL ? xstrdup(opt->runtime_note) : NULL;
	if (opt->session_id != NULL) {
		snprintf(s->id, sizeof(s->id), "%s", opt->session_id);
	} else {
		unsigned char raw[SESSION_ID_LEN / 2];
		randombytes_buf(raw, sizeof(raw));
		sodium_bin2hex(s->id, sizeof(s->id), raw, sizeof(raw));
	}
	/* the client's fds belong to the session from here on, also on failure */
	int in = opt->client_in, outfd = opt->client_out;
	if ((s->loop = loop_new(err)) == NULL ||
	    audit_open(opt->audit_dir != NULL ? opt->audit_dir : s->state_dir, s->id, &s->audit,
	               err) < 0 ||
	    gw_client_open(s, in, outfd, err) < 0) {
		if (s->client == NULL) {
			close(in);
			if (outfd != in)
				close(outfd);
		}
		session_free(s);
		return -1;
	}
	audit_set_observer(s->audit, opt->on_record, opt->record_data);
	s->signals_elsewhere = opt->signals_elsewhere;
	/* what mcp.toml says now: a listener's later client gets the servers
	 * as the file has them, not as they were when it started */
	if (opt->watch_config && opt->config_error == NULL && opt->workspace_error == NULL &&
	    opt->cfg->mcp_path != NULL)
		gw_watch_join(s, opt->host_of);

	size_t n = 0;
	s->instances = opt->instances;
	for (size_t i = 0; i < s->cfg->nservers; i++)
		n += offered(opt, &s->cfg->servers[i], s->workspace);
	s->servers = xcalloc(n > 0 ? n : 1, sizeof(*s->servers));
	for (size_t i = 0; i < s->cfg->nservers; i++) {
		const struct cfg_server *c = &s->cfg->servers[i];
		if (!offered(opt, c, s->workspace))
			continue;
		struct gw_server *srv = &s->servers[s->nservers++];
		srv->sess = s;
		srv->cfg = c;
		srv->state = GW_STARTING;
		srv->launch.proc = (struct proc)PROC_INIT;
		srv->launch.err_fd = -1;
		gw_egress_init(&srv->egress);
		srv->container = ctr_container_name(c->name, s->id);
		srv->disabled = !c->enabled;
		pthread_mutex_init(&srv->err_lock, NULL);
		mg_buf_init(&srv->err_tail, GW_STDERR_KEEP);
	}
	if (opt->host_of != NULL && s->nservers != 1) {
		mg_err_set(err, "server %s is not offered in %s", opt->host_of->name, s->workspace);
		session_free(s);
		return -1;
	}
	if (gw_relay_passthrough_check(s, err) < 0) {
		session_free(s);
		return -1;
	}
	*out = s;
	return 0;
}

const char *session_id(const struct session *s)
{
	return s->id;
}

const char *session_audit_path(const struct session *s)
{
	return audit_path(s->audit);
}

/* ---- registration ------------------------------------------------------- */

static const struct cfg_tool *tool_setting(const struct cfg_server *c, const char *name)
{
	for (size_t i = 0; i < c->ntools; i++)
		if (strcmp(c->tools[i].name, name) == 0)
			return &c->tools[i];
	return NULL;
}

/* Stop a server mcpgate has no use for; its container is removed at once,
 * by a job, and its exit is recorded when that is done. */
void gw_server_retire(struct gw_server *srv, const char *why)
{
	struct session *s = srv->sess;
	if (srv->stop_started)
		return;
	if (why != NULL)
		gw_server_set_reason(srv, GW_STOPPED, "server %s stopped: %s", srv->cfg->name, why);
	srv->state = GW_STOPPED;
	audit_record(s->audit, "server.stopped",
	             gw_fields("server", json_new_string(srv->cfg->name), "reason",
	                       json_new_string(srv->reason), NULL));
	/* there is nothing to wait for */
	gw_server_stop(srv, proc_now_ms());
	gw_server_withdraw(srv);
}

/* A server whose manifest is not the approved one offers nothing this
 * session, and says why. Returns true when it was withheld. */
static bool withhold_unpinned(struct gw_server *srv)
{
	struct session *s = srv->sess;
	const char *approved = srv->cfg->manifest;
	if (approved != NULL && strcmp(approved, srv->live_hash) == 0)
		return false;
	const char *why = approved == NULL ? "unapproved" : "changed";
	cleanup_free char *text =
	    approved == NULL
	        ? xasprintf("its manifest is not approved (live %s); review it with "
	                    "`mcpgate review %s`, then `mcpgate approve %s`",
	                    srv->live_hash, srv->cfg->name, srv->cfg->name)
	        : xasprintf("its manifest changed since approval (approved %s, live %s); "
	                    "see what changed with `mcpgate review %s`",
	                    approved, srv->live_hash, srv->cfg->name);
	audit_record(s->audit, "server.withheld",
	             gw_fields("server", json_new_string(srv->cfg->name), "reason",
	                       json_new_string(why), "approved",
	                       approved != NULL ? json_new_string(approved) : json_new_null(),
	                       "live", json_new_string(srv->live_hash), NULL));
	cleanup_free char *notice =
	    xasprintf("server %s's tools are withheld: %s", srv->cfg->name, text);
	gw_client_notice(s, "warning", notice);
	gw_server_retire(srv, text);
	return true;
}

/* The table of tools offered, rebuilt from every server that offers (in
 * mcp.toml order, each server's in its list's order); true when what the
 * client is offered changed */
/* What a server offers: its list as listed, or while a lazy server's first
 * start runs, its approved one */
static const struct json_value *offered_list(const struct gw_server *srv)
{
	return srv->tools != NULL ? srv->tools : srv->pinned;
}

static bool tools_rebuild(struct session *s)
{
	size_t cap = 0;
	for (size_t i = 0; i < s->nservers; i++)
		if (s->servers[i].offered && offered_list(&s->servers[i]) != NULL)
			cap += offered_list(&s->servers[i])->u.arr.len;
	struct gw_tool *tools = xcalloc(cap > 0 ? cap : 1, sizeof(*tools));
	size_t n = 0;
	for (size_t i = 0; i < s->nservers; i++) {
		struct gw_server *srv = &s->servers[i];
		const struct json_value *list = offered_list(srv);
		if (!srv->offered || list == NULL)
			continue;
		for (size_t k = 0; k < list->u.arr.len; k++) {
			const struct json_value *def = list->u.arr.items[k];
			const char *name = json_get_string(def, "name");
			const struct cfg_tool *set = tool_setting(srv->cfg, name);
			if (set == NULL || !set->on)
				continue;
			char *public_name = gw_relay_public_name(srv, name);
			if (strlen(public_name) > 128) {
				free(public_name);
				continue;
			}
			tools[n++] = (struct gw_tool){public_name, srv, name, set, def};
		}
	}
	bool changed = n != s->ntools;
	for (size_t i = 0; !changed && i < n; i++)
		changed = strcmp(tools[i].public_name, s->tools[i].public_name) != 0 ||
		          tools[i].def != s->tools[i].def;
	for (size_t i = 0; i < s->ntools; i++)
		free(s->tools[i].public_name);
	free(s->tools);
	s->tools = tools;
	s->ntools = n;
	return changed;
}

static void tools_changed(struct session *s)
{
	if (tools_rebuild(s) && !s->stopping)
		gw_client_tools_changed(s);
}

void gw_server_withdraw(struct gw_server *srv)
{
	if (!srv->offered)
		return;
	srv->offered = false;
	tools_changed(srv->sess);
}

void gw_server_offer(struct gw_server *srv)
{
	struct session *s = srv->sess;
	if (s->fetching)
		return; /* review shows the manifest as it is, approved or not */
	if (s->host != NULL) {
		/* an instance offers no tools of its own: it serves the sessions
		 * attached, each of which applies its own settings */
		if (srv->state == GW_READY)
			withhold_unpinned(srv);
		return;
	}
	if ((srv->state != GW_READY && srv->state != GW_IDLE) || withhold_unpinned(srv)) {
		gw_server_withdraw(srv);
		return;
	}
	size_t on = 0, listed = srv->tools->u.arr.len;
	for (size_t k = 0; k < listed; k++) {
		const char *name = json_get_string(srv->tools->u.arr.items[k], "name");
		const struct cfg_tool *set = tool_setting(srv->cfg, name);
		if (set == NULL || !set->on)
			continue;
		cleanup_free char *public_name = gw_relay_public_name(srv, name);
		if (strlen(public_name) > 128) {
			mg_warn("server %s: tool %s is not offered: %s is over 128 characters",
			        srv->cfg->name, name, public_name);
			continue;
		}
		on++;
	}
	audit_record(s->audit, "server.registered",
	             gw_fields("server", json_new_string(srv->cfg->name), "listed",
	                       json_new_int((int64_t)listed), "offered", json_new_int((int64_t)on),
	                       "from", json_new_string(srv->state == GW_IDLE ? "pin" : "server"),
	                       NULL));
	if (on == 0) {
		gw_server_retire(srv, "none of its tools is on in mcp.toml");
		gw_client_notice(s, "info", srv->reason);
		gw_server_withdraw(srv);
		return;
	}
	srv->offered = true;
	tools_changed(s);
	if (srv->state == GW_READY)
		gw_relay_server_ready(srv); /* the client's level, its lists */
}

void gw_session_settled(struct gw_server *srv)
{
	struct session *s = srv->sess;
	srv->settled = true;
	bool first = !s->registered && gw_all_settled(s);
	if (first)
		s->registered = true;
	if (first && s->host != NULL)
		gw_host_registered(s);
	gw_waiting_settled(s, srv);
}

/* ---- driving the loop --------------------------------------------------- */

static int64_t next_deadline(const struct session *s)
{
	int64_t next = 0;
	for (size_t i = 0; i < s->nservers; i++) {
		const struct rpc_peer *p = s->servers[i].launch.peer;
		if (p == NULL || s->servers[i].state != GW_READY)
			continue;
		int64_t d = rpc_peer_next_deadline(p);
		if (d != 0 && (next == 0 || d < next))
			next = d;
	}
	return next;
}

void gw_session_stop(struct session *s)
{
	if (!s->stopping)
		s->stop_deadline = proc_now_ms() + (int64_t)s->cfg->mcp.stop_timeout * 1000;
	s->stopping = true;
	loop_stop(s->loop);
}

static void on_signal(struct loop *loop, int signo, void *data)
{
	(void)loop;
	struct session *s = data;
	s->signal = signo;
	mg_info("%s: ending the session", strsignal(signo));
	gw_session_stop(s);
}

void gw_server_start_overdue(struct loop *loop, void *data)
{
	(void)loop;
	struct gw_server *srv = data;
	srv->start_timer = NULL;
	if (srv->state != GW_STARTING || srv->sess->stopping)
		return;
	srv->start_overdue = true;
	gw_waiting_overdue(srv->sess, srv);
}

void gw_server_start(struct gw_server *srv)
{
	struct session *s = srv->sess;
	const struct cfg_server *c = srv->cfg;
	struct mg_err *serr = NULL;
	/* what a start leaves, tools and errors, is its own */
	if (srv->state == GW_IDLE) {
		json_free(srv->pinned); /* offered from here while it starts */
		srv->pinned = steal_pointer(&srv->tools);
		srv->settled = false; /* what waits for the starts waits for it */
	}
	json_free(steal_pointer(&srv->tools));
	free(steal_pointer(&srv->start_error));
	srv->state = GW_STARTING;
	if (s->driver == NULL && c->transport != CFG_TRANSPORT_REMOTE && s->start_thread == NULL) {
		gw_server_set_reason(srv, GW_UNAVAILABLE,
		                     "server %s is unavailable: no container runtime", c->name);
	} else if (gw_secrets_for_server(srv, &serr) < 0) {
		gw_server_set_reason(srv, GW_UNAVAILABLE, "server %s is unavailable: %s", c->name,
		                     mg_err_msg(serr));
		mg_err_clear(&serr);
	} else {
		int e = pthread_create(
		    &srv->thread, NULL,
		    s->start_thread != NULL ? s->start_thread : gw_server_start_thread, srv);
		if (e == 0) {
			srv->thread_started = true;
			s->starting++;
			srv->start_overdue = false;
			srv->start_timer = loop_timer_add(
			    s->loop, (int64_t)s->cfg->mcp.start_timeout * 1000 + GW_START_GRACE_MS,
			    gw_server_start_overdue, srv);
			return;
		}
		gw_server_set_reason(srv, GW_UNAVAILABLE,
		                     "server %s is unavailable: cannot start a thread: %s", c->name,
		                     strerror(e));
	}
	audit_record(s->audit, "server.unavailable",
	             gw_fields("server", json_new_string(c->name), "reason",
	                       json_new_string(srv->reason), NULL));
	gw_client_notice(s, "warning", srv->reason);
	gw_server_withdraw(srv);
	json_free(steal_pointer(&srv->pinned));
	gw_session_settled(srv);
}

/* A server whose manifest was never approved is not started: review starts
 * it. Said once. */
static bool unapproved(struct gw_server *srv)
{
	struct session *s = srv->sess;
	if (srv->cfg->manifest != NULL || s->fetching || s->host != NULL)
		return false;
	gw_server_set_reason(srv, GW_UNAVAILABLE,
	                     "server %s is not started: its manifest is not approved; review it "
	                     "with `mcpgate review %s`, then `mcpgate approve %s`",
	                     srv->cfg->name, srv->cfg->name, srv->cfg->name);
	audit_record(s->audit, "server.unavailable",
	             gw_fields("server", json_new_string(srv->cfg->name), "reason",
	                       json_new_string(srv->reason), "unapproved", json_new_bool(true),
	                       NULL));
	gw_client_notice(s, "warning", srv->reason);
	return true;
}

/* Its approved tools, from the record approve (or a session that listed
 * exactly them) kept, made what srv offers until its start lists its own
 * (GW_IDLE; gw_server_start then serves them while it starts). NULL when
 * offered; else why not (no pin, no record), which the caller frees. */
static char *offer_from_record(struct gw_server *srv)
{
	struct session *s = srv->sess;
	const struct cfg_server *c = srv->cfg;
	if (s->fetching || s->host != NULL || c->manifest == NULL)
		return xstrdup("no approved manifest");
	struct mg_err *err = NULL;
	struct json_value *tools = manifest_approved_tools(s->data_dir, c->name, c->manifest, &err);
	if (tools == NULL) {
		char *why = xstrdup(mg_err_msg(err));
		mg_err_free(err);
		return why;
	}
	srv->tools = tools;
	snprintf(srv->live_hash, sizeof(srv->live_hash), "%s", c->manifest);
	srv->state = GW_IDLE;
	gw_server_offer(srv);
	return NULL;
}

/* start = "lazy": its approved tools offered until its first use starts
 * it. false when it starts now: not lazy, or no record of its approved
 * manifest (said once) */
static bool starts_lazily(struct gw_server *srv)
{
	struct session *s = srv->sess;
	const struct cfg_server *c = srv->cfg;
	enum cfg_start start = c->start_set ? c->start : s->cfg->mcp.start;
	if (start != CFG_START_LAZY || s->fetching || s->host != NULL || c->manifest == NULL)
		return false;
	cleanup_free char *why = offer_from_record(srv);
	if (why != NULL) {
		cleanup_free char *text = xasprintf(
		    "server %s starts now, not at its first use: its approved manifest is not "
		    "kept here (%s); it is kept from this session on",
		    c->name, why);
		gw_client_notice(s, "info", text);
		return false;
	}
	audit_record(s->audit, "server.idle",
	             gw_fields("server", json_new_string(c->name), "manifest",
	                       json_new_string(c->manifest), NULL));
	return true;
}

/* Why srv offers nothing while it is down (watch.c), into its reason */
static void down_reason(struct gw_server *srv)
{
	const char *name = srv->cfg->name;
	if (srv->removed)
		gw_server_set_reason(srv, GW_DISABLED,
		                     "server %s is no longer in mcp.toml: it is stopped and its "
		                     "tools are withdrawn",
		                     name);
	else if (srv->disabled)
		gw_server_set_reason(srv, GW_DISABLED,
		                     "server %s is disabled in mcp.toml (enabled = false): its "
		                     "tools are withdrawn; `mcpgate enable %s` offers it again",
		                     name, name);
	else
		gw_server_set_reason(srv, GW_DISABLED,
		                     "server %s's entry in mcp.toml changed: it starts again with "
		                     "it",
		                     name);
}

/* A disabled server offers nothing and is not started (said once) */
static bool disabled(struct gw_server *srv)
{
	struct session *s = srv->sess;
	if (!srv->disabled || s->fetching || s->host != NULL)
		return false;
	down_reason(srv);
	audit_record(s->audit, "server.disabled",
	             gw_fields("server", json_new_string(srv->cfg->name), "reason",
	                       json_new_string(srv->removed ? "removed" : "disabled"), NULL));
	return true;
}

static void start_one(struct gw_server *srv)
{
	if (disabled(srv) || unapproved(srv)) {
		gw_session_settled(srv);
	} else if (starts_lazily(srv)) {
		gw_session_settled(srv);
	} else {
		/* its approved tools are offered at once where they are kept, as a
		 * lazy server's are: a client that lists once (a CLI, an agent's
		 * first look) sees them, and a call waits for the start; a start
		 * that lists another manifest withdraws them (the client is told) */
		free(offer_from_record(srv));
		gw_server_start(srv);
	}
}

static void start_servers(struct session *s)
{
	for (size_t i = 0; i < s->nservers; i++)
		start_one(&s->servers[i]);
}

void gw_server_bring_up(struct gw_server *srv)
{
	struct session *s = srv->sess;
	if (s->stopping)
		return;
	if (srv->thread_started || srv->stop_pending) {
		srv->start_wanted = true; /* once that is over */
		return;
	}
	srv->start_wanted = false;
	if (srv->stop_started)
		gw_server_reset_for_start(srv);
	if (srv->next_cfg != NULL)
		srv->cfg = steal_pointer(&srv->next_cfg);
	srv->restarts = 0;
	json_free(steal_pointer(&srv->tools));
	json_free(steal_pointer(&srv->pinned));
	srv->state = GW_STARTING;
	start_one(srv);
}

void gw_server_take_down(struct gw_server *srv)
{
	struct session *s = srv->sess;
	if (s->stopping)
		return;
	loop_timer_cancel(s->loop, srv->restart_timer);
	srv->restart_timer = NULL;
	srv->restart_wanted = false;
	if (srv->thread_started) {
		srv->down_on_start = true; /* gw_server_started takes it down */
		return;
	}
	bool was_up = srv->state != GW_DISABLED;
	down_reason(srv);
	if (was_up)
		audit_record(s->audit, srv->disabled ? "server.disabled" : "server.changed",
		             srv->disabled
		                 ? gw_fields("server", json_new_string(srv->cfg->name), "reason",
		                             json_new_string(srv->removed ? "removed" : "disabled"),
		                             NULL)
		                 : gw_fields("server", json_new_string(srv->cfg->name), NULL));
	if (was_up && srv->disabled)
		gw_client_notice(s, "info", srv->reason);
	gw_server_withdraw(srv);
	json_free(steal_pointer(&srv->pinned));
	if (!srv->stop_started)
		gw_server_stop(srv, proc_now_ms() + (int64_t)s->cfg->mcp.stop_timeout * 1000);
	if (!srv->disabled)
		gw_server_bring_up(srv); /* a changed entry: at once, or when its stop is done */
}

/* Write what the client is still owed, for at most a second more: the loop
 * does it, as the client's peer watches its output while any is queued. */
static int flush_client(struct session *s, struct mg_err **err)
{
	int64_t deadline = proc_now_ms() + 1000;
	while (rpc_peer_wants_write(s->client) && proc_now_ms() < deadline)
		if (loop_run_once(s->loop, deadline - proc_now_ms(), err) < 0)
			return -1;
	return 0;
}

/* Every server's input closes at once; then one shared deadline, each
 * server's end a job of its own, all at the same time. A server still
 * starting is stopped the same way when its start ends (gw_server_started). */
static void stop_servers(struct session *s)
{
	for (size_t i = 0; i < s->nservers; i++) {
		struct gw_server *srv = &s->servers[i];
		if (!srv->thread_started)
			gw_server_stop(srv, s->stop_deadline);
	}
}

/* Everything before the loop: the records, the sweep and the runtime's
 * probe, the private binaries, the keychain, the filters, the starts */
static void session_begin(struct session *s)
{
	struct json_value *names = json_new_array();
	for (size_t i = 0; i < s->nservers; i++)
		json_array_push(names, json_new_string(s->servers[i].cfg->name));
	audit_record(
	    s->audit, "session.start",
	    gw_fields("pid", json_new_int(s->owner), "workspace", json_new_string(s->workspace),
	              "runtime",
	              s->driver != NULL ? json_new_string(s->driver->name) : json_new_null(),
	              "servers", names, NULL));
	if (!s->signals_elsewhere)
		loop_on_signal(s->loop, on_signal, s);
	const char *notes[][2] = {{"session.workspace_note", s->workspace_note},
	                          {"session.runtime_note", s->runtime_note}};
	for (size_t i = 0; i < sizeof(notes) / sizeof(notes[0]); i++)
		if (notes[i][1] != NULL) {
			gw_client_notice(s, "warning", notes[i][1]);
			audit_record(s->audit, notes[i][0],
			             gw_fields("note", json_new_string(notes[i][1]), NULL));
		}
	if (s->config_error != NULL) {
		mg_error("%s", s->config_error);
		mg_error("until the configuration is fixed and the client starts mcpgate again, "
		         "every request is answered with this error");
		audit_record(s->audit, "session.config_error",
		             gw_fields("error", json_new_string(s->config_error), NULL));
	}
	if (s->workspace_error != NULL) {
		mg_error("%s", s->workspace_error);
		mg_error("until the client's configuration names a workspace that is there and "
		         "starts mcpgate again, every request is answered with this error");
		audit_record(s->audit, "session.workspace_error",
		             gw_fields("error", json_new_string(s->workspace_error), NULL));
	}
	/* the runtime's info starts now, beside the servers; the sweep once they are up */
	gw_startup_begin(s);
	bool hosts = false;
	for (size_t i = 0; i < s->nservers; i++)
		hosts |= cfg_server_has_egress(s->servers[i].cfg) &&
		         !gw_instance_attaches(&s->servers[i]);
	struct mg_err *eerr = NULL;
	if (hosts && gw_egress_prepare(s, &eerr) < 0) {
		/* servers with hosts will be unavailable with this reason */
		s->egress_error = xstrdup(mg_err_msg(eerr));
		mg_err_free(eerr);
	}
	bool secrets = false;
	for (size_t i = 0; i < s->nservers; i++)
		secrets |= s->servers[i].cfg->transport == CFG_TRANSPORT_CONTAINER &&
		           s->servers[i].cfg->credential != NULL &&
		           !gw_instance_attaches(&s->servers[i]);
	/* on a swarm every task's entrypoint is mcpgate-launch */
	if ((secrets || (s->driver != NULL && s->driver->kind == CTR_SWARM)) &&
	    gw_binary_prepare(s, "mcpgate-launch", NULL, "launch", &s->launch_binary, &eerr) < 0) {
		/* servers with a credential will be unavailable with this reason */
		s->launch_error = xstrdup(mg_err_msg(eerr));
		mg_err_free(eerr);
		eerr = NULL;
	}
	struct mg_err *kerr = NULL;
	if (gw_secrets_open(s, &kerr) < 0) {
		/* servers with a credential will be unavailable with this reason */
		s->keychain_error = xstrdup(mg_err_msg(kerr));
		mg_warn("%s", s->keychain_error);
		mg_err_free(kerr);
		gw_secrets_close(s);
	}
	/* whatever path a value takes (an error's message, a server's name, a
	 * refused method, a host), no line leaves with it in clear */
	rpc_peer_set_filter(s->client, gw_secrets_filter, s);
	audit_set_filter(s->audit, gw_secrets_filter, s);
	mg_log_add_filter(gw_secrets_filter, s);
	start_servers(s);
	if (s->nservers == 0) {
		s->registered = true;
		gw_waiting_settled(s, NULL);
	}
}

/* Everything after it: the servers' ends, each a job, and what the client
 * is still owed */
static int session_finish(struct session *s, int r, struct mg_err **err)
{
	/* the client asks nothing more; what it is owed still goes out */
	rpc_peer_stop_reading(s->client);
	if (!s->stopping)
		s->stop_deadline = proc_now_ms() + (int64_t)s->cfg->mcp.stop_timeout * 1000;
	s->stopping = true;
	stop_servers(s);
	/* the loop runs on while the ends do: start-up threads finish against
	 * their deadline, every stop against the shared one */
	while (r == 0 && (s->starting > 0 || loop_jobs_pending(s->loop) > 0)) {
		if (loop_run_once(s->loop, -1, err) < 0)
			r = -1;
	}
	if (r == 0 && flush_client(s, err) < 0)
		r = -1;
	gw_pressure_end(s);
	audit_report_dropped(s->audit);
	audit_record(s->audit, "session.end",
	             gw_fields("reason",
	                       json_new_string(s->signal != 0 ? strsignal(s->signal)
	                                       : s->fetching  ? "the manifest was read"
	                                                      : "the client's input ended"),
	                       NULL));
	return r;
}

int session_run(struct session *s, struct mg_err **err)
{
	session_begin(s);
	int r = 0;
	while (!s->stopping) {
		int64_t next = next_deadline(s);
		int64_t timeout = next == 0 ? -1 : next - proc_now_ms();
		if (next != 0 && timeout < 0)
			timeout = 0;
		if (loop_run_once(s->loop, timeout, err) < 0) {
			r = -1;
			break;
		}
		int64_t now = proc_now_ms();
		for (size_t i = 0; i < s->nservers; i++)
			if (s->servers[i].launch.peer != NULL && s->servers[i].state == GW_READY)
				rpc_peer_expire(s->servers[i].launch.peer, now);
		gw_pressure(s);
	}
	return session_finish(s, r, err);
}

int gw_session_fetch(const struct session_options *opt, struct gw_manifest_fetch *out,
                     struct mg_err **err)
{
	memset(out, 0, sizeof(*out));
	struct session *s = NULL;
	if (session_new(opt, &s, err) < 0)
		return -1;
	s->fetching = true;
	session_begin(s);
	int r = 0;
	while (r == 0 && !s->registered && !s->stopping)
		if (loop_run_once(s->loop, -1, err) < 0)
			r = -1;
	struct gw_server *srv = &s->servers[0];
	if (r == 0 && srv->state != GW_READY) {
		/* its stderr, and what the runtime said, are in this session's log */
		mg_err_set(err, "%s (`mcpgate logs --session %s` shows what it said)",
		           srv->reason != NULL ? srv->reason : "the server did not start", s->id);
		r = -1;
	}
	if (r == 0) {
		out->tools = steal_pointer(&srv->tools);
		out->info = srv->info;
		srv->info = (struct mcp_server_info){0};
		if (s->platform_error == NULL)
			out->accepted = ctr_platform_accepted_json(&s->platform, srv->cfg);
	}
	pthread_mutex_lock(&srv->err_lock);
	if (srv->err_tail.len > 0)
		out->stderr_text =
		    gw_secrets_redact_text(s, mg_buf_str(&srv->err_tail), srv->err_tail.len);
	pthread_mutex_unlock(&srv->err_lock);
	struct mg_err *ferr = NULL;
	if (session_finish(s, 0, &ferr) < 0) {
		mg_warn("stopping server %s after reading its manifest: %s", srv->cfg->name,
		        mg_err_msg(ferr));
		mg_err_free(ferr);
	}
	session_free(s);
	if (r < 0)
		gw_manifest_fetch_free(out);
	return r;
}

void session_free(struct session *s)
{
	if (s == NULL)
		return;
	/* no change of mcp.toml is posted to its loop from here on */
	gw_watch_leave(s);
	/* first: calls waiting on the client learn it is gone and free themselves */
	s->stopping = true;
	/* a stop still under way (the loop failed before its end) ends now:
	 * its job uses the server, its done records the exit */
	loop_jobs_finish(s->loop);
	rpc_peer_free(s->client);
	s->client = NULL;
	while (s->calls != NULL) {
		struct gw_call *c = s->calls;
		s->calls = c->next;
		gw_call_free(c);
	}
	for (size_t i = 0; i < s->nservers; i++) {
		struct gw_call *c = s->servers[i].orphans;
		while (c != NULL) {
			struct gw_call *next = c->next;
			gw_call_free(c);
			c = next;
		}
		gw_server_free(&s->servers[i]);
	}
	free(s->servers);
	for (size_t i = 0; i < s->ntools; i++)
		free(s->tools[i].public_name);
	free(s->tools);
	json_free(s->client_caps);
	gw_listens_free(s);
	free(s->client_version);
	confirm_keeper_free(s->confirm);
	gw_waiting_free(s);
	strv_free(&s->notices);
	audit_close(s->audit);
	loop_free(s->loop);
	free(s->workspace);
	free(s->state_dir);
	free(s->data_dir);
	free(s->egress_binary);
	free(s->egress_error);
	free(s->launch_binary);
	free(s->launch_error);
	gw_startup_free(s);
	free(s->platform_error);
	ctr_platform_free(&s->platform);
	mg_log_remove_filter(gw_secrets_filter, s); /* the values it knew go now */
	gw_secrets_close(s);
	free(s->keychain_error);
	free(s->config_error);
	free(s->workspace_note);
	free(s->runtime_note);
	free(s->workspace_error);
	free(s);
}
