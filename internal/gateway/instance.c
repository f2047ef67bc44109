/* A "shared" or "exclusive" server's one instance under a listener
 * (docs/sharing.md).
 *
 * The instance is a session of its own, the host: it starts the one server
 * with everything a session gives a server (the image check, what the
 * runtime enforces, egress, its secret, mounts, the pinned manifest) and has
 * no client. On its loop it serves the client sessions attached to it, each
 * on a socketpair, as if each had the server to itself:
 *   - initialize and ping are answered by the host: the server was
 *     initialized once, with the capabilities every session declares to it;
 *   - any other request goes on under an id of the host's, a progress token
 *     under one of the host's; the answer goes back to the session that
 *     asked, under its own id;
 *   - notifications/progress goes to the session whose request has the
 *     token; a list_changed or resources/updated to every session; any other
 *     notification (a log line) to the one session with requests in flight,
 *     and is dropped (and recorded) when that is not exactly one;
 *   - the server's own requests (sampling, elicitation, roots) go to the one
 *     session with requests in flight (exclusive: its holder), else they are
 *     refused, since nothing says whose they are.
 * Each session still applies its own policy (tools on, confirmations,
 * redaction, the binding rule, its audit log) to what it sends and gets.
 * "exclusive": the first session to use the instance (with more than
 * initialize, ping and the lists) holds it; another's requests but those
 * are refused as busy until the holder detaches, and then the next session
 * to use it holds it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal/base/cleanup.h"
#include "internal/base/log.h"
#include "internal/base/xalloc.h"
#include "internal/gateway/gateway-internal.h"

struct gw_attached;

/* A session's request with the server */
struct gw_fwd {
	struct gw_attached *a;
	struct json_value *id; /* the session's */
	char *key;             /* rpc_id_key(id) */
	int64_t up_id;         /* the host's, on the server's peer */
	char *token;           /* the host's progress token, or NULL */
	struct json_value *their_token;
	struct gw_fwd *next, *prev;
};

/* One session attached */
struct gw_attached {
	struct gw_host *h;
	struct rpc_peer *peer;
	char client[SESSION_ID_LEN + 1]; /* the attached session's id */
	bool closed;                     /* its connection ended: freed by a post */
	bool watched;                    /* its peer is on the loop */
	struct gw_fwd *fwds;
	size_t inflight;
	struct gw_attached *next, *prev; /* in the order they attached */
};

/* A connection made by an attach, until the host's loop takes it */
struct gw_incoming {
	int fd;
	char client[SESSION_ID_LEN + 1];
	struct gw_incoming *next;
};

struct gw_host {
	struct gw_instances *ins;
	const struct cfg_server *cfg;
	struct session *s;
	int keep_fd; /* the host session's client end: closing it ends the host */
	pthread_t thread;
	bool ended;                   /* under ins->lock: no more attaches */
	struct gw_incoming *incoming; /* under ins->lock */
	/* under ins->lock: its start is over (settled), and why it serves
	 * nothing when it does not (why_not) */
	bool settled;
	char *why_not;
	/* the rest on the host's loop thread only */
	bool registered;
	struct gw_attached *first, *last;
	struct gw_attached *holder; /* exclusive: who holds it, or NULL */
	uint64_t next_token;
	struct gw_host *next;
};

struct gw_instances {
	pthread_mutex_t lock;
	pthread_cond_t settled; /* an instance's start is over */
	struct cfg *cfg;
	struct ctr_driver *driver;
	char *state_dir, *data_dir, *workspace;
	pid_t owner;
	bool watch_config; /* each instance follows mcp.toml (watch.c) */
	struct gw_host *hosts;
};

bool gw_instance_attaches(const struct gw_server *srv)
{
	return srv->sess->instances != NULL && srv->cfg->transport == CFG_TRANSPORT_CONTAINER &&
	       srv->cfg->instance != CFG_INSTANCE_SESSION;
}

static struct gw_server *host_server(struct gw_host *h)
{
	return &h->s->servers[0];
}

static struct rpc_peer *server_peer(struct gw_host *h)
{
	struct gw_server *srv = host_server(h);
	return srv->state == GW_READY ? srv->launch.peer : NULL;
}

static const char *not_running(struct gw_host *h)
{
	struct gw_server *srv = host_server(h);
	return srv->reason != NULL ? srv->reason : "its shared instance is not running";
}

/* ---- what attached sessions send ----------------------------------------- */

static void fwd_unlink(struct gw_fwd *f)
{
	struct gw_attached *a = f->a;
	if (a == NULL)
		return;
	if (f->prev != NULL)
		f->prev->next = f->next;
	else
		a->fwds = f->next;
	if (f->next != NULL)
		f->next->prev = f->prev;
	f->next = f->prev = NULL;
	f->a = NULL;
	a->inflight--;
}

static void fwd_free(struct gw_fwd *f)
{
	fwd_unlink(f);
	json_free(f->id);
	free(f->key);
	free(f->token);
	json_free(f->their_token);
	free(f);
}

static void on_server_reply(struct rpc_peer *peer, struct rpc_msg *reply, const struct mg_err *why,
                            void *data)
{
	(void)peer;
	struct gw_fwd *f = data;
	struct gw_attached *a = f->a;
	if (a != NULL && !a->closed) {
		if (reply != NULL && reply->kind == RPC_RESULT)
			rpc_peer_send_result(a->peer, f->id, reply->result, NULL);
		else if (reply != NULL)
			rpc_peer_send_error(a->peer, f->id, reply->error_code, reply->error_message,
			                    reply->error_data, NULL);
		else
			rpc_peer_send_error(a->peer, f->id, RPC_SERVER_ERROR, mg_err_msg(why), NULL,
			                    NULL);
	}
	fwd_free(f);
}

/* The lists (and what only reads the server's offer) an exclusive instance
 * answers for every session attached, holder or not */
static bool is_listing(const char *method)
{
	static const char *const reads[] = {"tools/list", "resources/list",
	                                    "resources/templates/list", "prompts/list"};
	for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++)
		if (strcmp(method, reads[i]) == 0)
			return true;
	return false;
}

static bool busy(struct gw_attached *a)
{
	struct gw_host *h = a->h;
	return h->cfg->instance == CFG_INSTANCE_EXCLUSIVE && h->holder != NULL && h->holder != a;
}

/* exclusive: the first session to use it (more than its lists) holds it */
static void claim(struct gw_attached *a)
{
	struct gw_host *h = a->h;
	if (h->cfg->instance != CFG_INSTANCE_EXCLUSIVE || h->holder != NULL)
		return;
	h->holder = a;
	audit_record(h->s->audit, "instance.holder",
	             gw_fields("server", json_new_string(h->cfg->name), "session",
	                       json_new_string(a->client), NULL));
}

static void refuse_busy(struct gw_attached *a, const struct json_value *id)
{
	struct gw_host *h = a->h;
	cleanup_free char *text = xasprintf(
	    "server %s is busy: its instance is \"exclusive\" in mcp.toml, and client session "
	    "%s holds it until that session ends",
	    h->cfg->name, h->holder != NULL ? h->holder->client : "(none)");
	rpc_peer_send_error(a->peer, id, RPC_SERVER_ERROR, text, NULL, NULL);
}

static void answer_initialize(struct gw_attached *a, const struct json_value *id)
{
	struct gw_server *srv = host_server(a->h);
	const struct mcp_server_info *info = &srv->info;
	struct json_value *r = gw_fields(
	    /* a server of 2026-07-28 is spoken to in its era by the instance;
	     * the sessions attached speak the old one to the instance */
	    "protocolVersion",
	    json_new_string(gw_server_modern(srv) ? MCP_PROTOCOL_LATEST : info->protocol_version),
	    "capabilities",
	    info->capabilities != NULL ? json_copy(info->capabilities) : json_new_object(),
	    "serverInfo",
	    gw_fields("name", json_new_string(info->name != NULL ? info->name : ""), "version",
	              json_new_string(info->version != NULL ? info->version : ""), NULL),
	    NULL);
	if (info->instructions != NULL)
		json_object_set(r, "instructions", json_new_string(info->instructions));
	rpc_peer_send_result(a->peer, id, r, NULL);
	json_free(r);
}

/* params with its _meta.progressToken (when there is one) replaced by a new
 * token of the host's, kept in f */
static struct json_value *params_for_server(struct gw_host *h, struct gw_fwd *f,
                                            const struct json_value *params)
{
	if (params == NULL)
		return NULL;
	struct json_value *p = json_copy(params);
	const struct json_value *meta = json_get(params, "_meta");
	const struct json_value *token = meta != NULL ? json_get(meta, "progressToken") : NULL;
	if (token != NULL) {
		f->token = xasprintf("mcpgate-instance-%llu", (unsigned long long)++h->next_token);
		f->their_token = json_copy(token);
		struct json_value *m = json_copy(meta);
		json_object_set(m, "progressToken", json_new_string(f->token));
		json_object_set(p, "_meta", m);
	}
	return p;
}

static void on_attached_request(struct rpc_peer *peer, struct rpc_msg *msg, void *data)
{
	struct gw_attached *a = data;
	struct gw_host *h = a->h;
	if (strcmp(msg->method, "ping") == 0) {
		rpc_peer_send_result(peer, msg->id, NULL, NULL);
		return;
	}
	struct rpc_peer *up = server_peer(h);
	if (up == NULL) {
		rpc_peer_send_error(peer, msg->id, RPC_SERVER_ERROR, not_running(h), NULL, NULL);
		return;
	}
	if (strcmp(msg->method, "initialize") == 0) {
		answer_initialize(a, msg->id);
		return;
	}
	if (busy(a) && !is_listing(msg->method)) {
		refuse_busy(a, msg->id);
		return;
	}
	if (strcmp(msg->method, "logging/setLevel") == 0 && gw_server_modern(host_server(h))) {
		/* 2026-07-28 has no setLevel: the level goes on each request */
		const char *level = json_get_string(msg->params, "level");
		if (gw_log_level_rank(level) < 0) {
			rpc_peer_send_error(peer, msg->id, RPC_INVALID_PARAMS,
			                    "logging/setLevel needs a level", NULL, NULL);
			return;
		}
		gw_server_log_level(host_server(h), level);
		rpc_peer_send_result(peer, msg->id, NULL, NULL);
		return;
	}
	if (!is_listing(msg->method))
		claim(a);
	struct gw_fwd *f = xcalloc(1, sizeof(*f));
	f->id = json_copy(msg->id);
	f->key = rpc_id_key(msg->id);
	struct json_value *p = params_for_server(h, f, msg->params);
	struct mg_err *err = NULL;
	int r = rpc_peer_send_request(up, msg->method, p, 0, on_server_reply, f, &f->up_id, &err);
	json_free(p);
	if (r < 0) {
		rpc_peer_send_error(peer, msg->id, RPC_SERVER_ERROR, mg_err_msg(err), NULL, NULL);
		mg_err_free(err);
		fwd_free(f);
		return;
	}
	f->a = a;
	f->next = a->fwds;
	if (a->fwds != NULL)
		a->fwds->prev = f;
	a->fwds = f;
	a->inflight++;
}

/* A request of a's with the server is over for a: the server is told, and
 * its answer, if one comes, goes nowhere */
static void fwd_cancel(struct gw_fwd *f, const char *reason)
{
	struct gw_server *srv = host_server(f->a->h);
	struct rpc_peer *up = srv->launch.peer;
	cleanup_free char *key = rpc_id_key_int(f->up_id);
	if (up != NULL && rpc_peer_cancel(up, key) == 1) {
		if (srv->state == GW_READY) {
			struct json_value *p = gw_fields("requestId", json_new_int(f->up_id),
			                                 "reason", json_new_string(reason), NULL);
			rpc_peer_send_notification(up, "notifications/cancelled", p, NULL);
			json_free(p);
		}
		fwd_free(f);
		return;
	}
	/* its answer, when its callback comes, goes nowhere */
	fwd_unlink(f);
}

static void on_attached_notification(struct rpc_peer *peer, struct rpc_msg *msg, void *data)
{
	(void)peer;
	struct gw_attached *a = data;
	struct rpc_peer *up = server_peer(a->h);
	if (up == NULL || strcmp(msg->method, "notifications/initialized") == 0)
		return;
	if (strcmp(msg->method, "notifications/cancelled") == 0) {
		const struct json_value *rid =
		    msg->params != NULL ? json_get(msg->params, "requestId") : NULL;
		cleanup_free char *key = rid != NULL ? rpc_id_key(rid) : NULL;
		for (struct gw_fwd *f = a->fwds; key != NULL && f != NULL; f = f->next)
			if (strcmp(f->key, key) == 0) {
				const char *why = json_get_string(msg->params, "reason");
				fwd_cancel(f, why != NULL ? why : "cancelled by the client");
				break;
			}
		return;
	}
	if (busy(a))
		return;
	rpc_peer_send_notification(up, msg->method, msg->params, NULL);
}

static void attached_free(struct gw_attached *a)
{
	struct gw_host *h = a->h;
	while (a->fwds != NULL)
		fwd_cancel(a->fwds, "the client session ended");
	if (a->prev != NULL)
		a->prev->next = a->next;
	else
		h->first = a->next;
	if (a->next != NULL)
		a->next->prev = a->prev;
	else
		h->last = a->prev;
	if (h->holder == a)
		h->holder = NULL; /* the next session to use it holds it */
	audit_record(h->s->audit, "instance.detach",
	             gw_fields("server", json_new_string(h->cfg->name), "session",
	                       json_new_string(a->client), NULL));
	/* the server's requests with this session fail with it */
	rpc_peer_free(a->peer);
	free(a);
}

static void free_closed(struct loop *loop, void *data)
{
	(void)loop;
	attached_free(data);
}

static void on_attached_closed(struct rpc_peer *peer, const struct mg_err *why, void *data)
{
	(void)peer;
	(void)why;
	struct gw_attached *a = data;
	if (a->closed)
		return;
	a->closed = true;
	/* not from inside its own peer's callback */
	loop_post(a->h->s->loop, free_closed, a);
}

static void watch_attached(struct gw_attached *a)
{
	struct mg_err *err = NULL;
	if (a->watched)
		return;
	a->watched = true;
	if (rpc_peer_attach(a->peer, a->h->s->loop, &err) < 0) {
		mg_warn("server %s: client session %s: %s", a->h->cfg->name, a->client,
		        mg_err_msg(err));
		mg_err_free(err);
		on_attached_closed(a->peer, NULL, a);
	}
}

/* Under ins->lock: the attaches waiting for h's start learn how it went */
static void settle(struct gw_host *h, const char *why_not)
{
	if (!h->settled) {
		h->settled = true;
		h->why_not = why_not != NULL ? xstrdup(why_not) : NULL;
	}
	pthread_cond_broadcast(&h->ins->settled);
}

/* What attaches made since the last take, taken under the lock; ending
 * (the host's thread, after its session) says no more come */
static struct gw_incoming *incoming_take(struct gw_host *h, bool ending)
{
	pthread_mutex_lock(&h->ins->lock);
	if (ending) {
		h->ended = true;
		settle(h, "it ended before its start was over");
	}
	struct gw_incoming *list = h->incoming;
	h->incoming = NULL;
	pthread_mutex_unlock(&h->ins->lock);
	return list;
}

/* On the host's loop: the connections attaches made since */
static void take_incoming(struct loop *loop, void *data)
{
	(void)loop;
	struct gw_host *h = data;
	struct gw_incoming *list = incoming_take(h, false);
	while (list != NULL) {
		struct gw_incoming *in = list;
		list = in->next;
		struct gw_attached *a = xcalloc(1, sizeof(*a));
		a->h = h;
		snprintf(a->client, sizeof(a->client), "%s", in->client);
		cleanup_free char *name = xasprintf("client session %s", in->client);
		struct rpc_peer_config pc = {
		    .name = name,
		    .line_max = (size_t)h->s->cfg->mcp.line_max,
		    .on_request = on_attached_request,
		    .on_notification = on_attached_notification,
		    .on_closed = on_attached_closed,
		    .on_write_failed = on_attached_closed,
		    .check = mcp_shape_from_client,
		    .data = a,
		};
		struct mg_err *err = NULL;
		int fd = in->fd;
		free(in);
		if (rpc_peer_new(fd, fd, &pc, &a->peer, &err) < 0) {
			mg_warn("server %s: %s", h->cfg->name, mg_err_msg(err));
			mg_err_free(err);
			free(a);
			continue;
		}
		a->prev = h->last;
		if (h->last != NULL)
			h->last->next = a;
		else
			h->first = a;
		h->last = a;
		audit_record(h->s->audit, "instance.attach",
		             gw_fields("server", json_new_string(h->cfg->name), "session",
		                       json_new_string(a->client), "instance",
		                       json_new_string(cfg_instance_name(h->cfg->instance)), NULL));
		/* before the server is registered, what the session asks waits */
		if (h->registered)
			watch_attached(a);
	}
}

void gw_host_registered(struct session *s)
{
	struct gw_host *h = s->host;
	struct gw_server *srv = host_server(h);
	pthread_mutex_lock(&h->ins->lock);
	settle(h, srv->state == GW_READY     ? NULL
	          : srv->start_error != NULL ? srv->start_error
	                                     : not_running(h));
	pthread_mutex_unlock(&h->ins->lock);
	h->registered = true;
	for (struct gw_attached *a = h->first; a != NULL; a = a->next)
		watch_attached(a);
}

/* ---- what the server sends ------------------------------------------------ */

/* The one session a message of the server's not tied to a request belongs
 * to: the holder of an exclusive instance, else the one session with
 * requests in flight, else the one attached; NULL when nothing says which */
static struct gw_attached *owner_of_untied(struct gw_host *h)
{
	if (h->cfg->instance == CFG_INSTANCE_EXCLUSIVE)
		return h->holder;
	struct gw_attached *busy_one = NULL;
	size_t n = 0, busy_n = 0;
	for (struct gw_attached *a = h->first; a != NULL; a = a->next) {
		if (a->closed)
			continue;
		n++;
		if (a->inflight > 0) {
			busy_one = a;
			busy_n++;
		}
	}
	if (busy_n == 1)
		return busy_one;
	return n == 1 && busy_n == 0 ? h->first : NULL;
}

struct gw_back {
	struct gw_host *h;
	struct json_value *id; /* the server's */
};

static void on_session_reply(struct rpc_peer *peer, struct rpc_msg *reply, const struct mg_err *why,
                             void *data)
{
	(void)peer;
	struct gw_back *b = data;
	struct rpc_peer *up = server_peer(b->h);
	if (up != NULL) {
		if (reply != NULL && reply->kind == RPC_RESULT)
			rpc_peer_send_result(up, b->id, reply->result, NULL);
		else if (reply != NULL)
			rpc_peer_send_error(up, b->id, reply->error_code, reply->error_message,
			                    reply->error_data, NULL);
		else
			rpc_peer_send_error(up, b->id, RPC_INTERNAL_ERROR, mg_err_msg(why), NULL,
			                    NULL);
	}
	json_free(b->id);
	free(b);
}

void gw_host_server_request(struct gw_server *srv, struct rpc_msg *msg)
{
	struct gw_host *h = srv->sess->host;
	struct gw_attached *a = owner_of_untied(h);
	if (a == NULL || a->closed) {
		audit_record_by(h->s->audit, srv->cfg->name, "instance.request.refused",
		                gw_fields("server", json_new_string(srv->cfg->name), "method",
		                          json_new_string(msg->method), NULL));
		cleanup_free char *text = xasprintf(
		    "mcpgate cannot tell which client %.64s is for: server %s's instance is "
		    "shared, and not exactly one client session has a request with it",
		    msg->method, srv->cfg->name);
		rpc_peer_send_error(srv->launch.peer, msg->id, RPC_INTERNAL_ERROR, text, NULL,
		                    NULL);
		return;
	}
	struct gw_back *b = xcalloc(1, sizeof(*b));
	b->h = h;
	b->id = json_copy(msg->id);
	struct mg_err *err = NULL;
	if (rpc_peer_send_request(a->peer, msg->method, msg->params, 0, on_session_reply, b, NULL,
	                          &err) < 0) {
		rpc_peer_send_error(srv->launch.peer, msg->id, RPC_INTERNAL_ERROR, mg_err_msg(err),
		                    NULL, NULL);
		mg_err_free(err);
		json_free(b->id);
		free(b);
	}
}

static bool for_everyone(const char *method)
{
	return strcmp(method, "notifications/tools/list_changed") == 0 ||
	       strcmp(method, "notifications/resources/list_changed") == 0 ||
	       strcmp(method, "notifications/prompts/list_changed") == 0 ||
	       strcmp(method, "notifications/resources/updated") == 0;
}

void gw_host_server_notification(struct gw_server *srv, struct rpc_msg *msg)
{
	struct gw_host *h = srv->sess->host;
	if (strcmp(msg->method, "notifications/progress") == 0) {
		const char *token = json_get_string(msg->params, "progressToken");
		for (struct gw_attached *a = h->first; token != NULL && a != NULL; a = a->next)
			for (struct gw_fwd *f = a->fwds; f != NULL; f = f->next)
				if (f->token != NULL && strcmp(f->token, token) == 0) {
					struct json_value *p = json_copy(msg->params);
					json_object_set(p, "progressToken",
					                json_copy(f->their_token));
					rpc_peer_send_notification(a->peer, msg->method, p, NULL);
					json_free(p);
					return;
				}
		return; /* not a token of a request in flight: dropped */
	}
	if (for_everyone(msg->method)) {
		for (struct gw_attached *a = h->first; a != NULL; a = a->next)
			if (!a->closed && a->watched)
				rpc_peer_send_notification(a->peer, msg->method, msg->params, NULL);
		return;
	}
	struct gw_attached *a = owner_of_untied(h);
	if (a == NULL || a->closed) {
		audit_record_by(h->s->audit, srv->cfg->name, "instance.notification.dropped",
		                gw_fields("server", json_new_string(srv->cfg->name), "method",
		                          json_new_string(msg->method), NULL));
		return;
	}
	rpc_peer_send_notification(a->peer, msg->method, msg->params, NULL);
}

void gw_host_server_ended(struct gw_server *srv)
{
	/* the sessions attached see their server end; the next attach starts
	 * another instance */
	gw_session_stop(srv->sess);
}

void gw_host_close(struct session *s)
{
	struct gw_host *h = s->host;
	while (h->first != NULL)
		attached_free(h->first);
}

/* ---- the instances -------------------------------------------------------- */

struct gw_instances *gw_instances_new(const struct session_options *base)
{
	struct gw_instances *ins = xcalloc(1, sizeof(*ins));
	pthread_mutex_init(&ins->lock, NULL);
	/* deadlines are proc_now_ms()'s: the monotonic clock */
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ins->settled, &ca);
	pthread_condattr_destroy(&ca);
	ins->cfg = base->cfg;
	ins->driver = base->driver;
	ins->state_dir = xstrdup(base->state_dir);
	ins->data_dir = base->data_dir != NULL ? xstrdup(base->data_dir) : NULL;
	ins->workspace = xstrdup(base->workspace);
	ins->owner = base->owner;
	ins->watch_config = base->watch_config;
	return ins;
}

static void *host_thread(void *arg)
{
	struct gw_host *h = arg;
	struct mg_err *err = NULL;
	if (session_run(h->s, &err) < 0) {
		mg_warn("server %s's instance: %s", h->cfg->name, mg_err_msg(err));
		mg_err_free(err);
	}
	struct gw_incoming *list = incoming_take(h, true);
	while (list != NULL) {
		struct gw_incoming *in = list;
		list = in->next;
		close(in->fd);
		free(in);
	}
	gw_host_close(h->s);
	return NULL;
}

/* Under ins->lock: a new instance of c, started */
static struct gw_host *host_start(struct gw_instances *ins, const struct cfg_server *c,
                                  struct mg_err **err)
{
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) {
		mg_err_sys(err, errno, "socketpair");
		return NULL;
	}
	struct session_options o = {
	    .cfg = ins->cfg,
	    .driver = ins->driver,
	    .state_dir = ins->state_dir,
	    .data_dir = ins->data_dir,
	    .workspace = ins->workspace,
	    .client_in = sp[1],
	    .client_out = sp[1],
	    .owner = ins->owner,
	    .signals_elsewhere = true,
	    .host_of = c,
	    .watch_config = ins->watch_config,
	};
	struct gw_host *h = xcalloc(1, sizeof(*h));
	h->ins = ins;
	h->cfg = c;
	h->keep_fd = sp[0];
	if (session_new(&o, &h->s, err) < 0) {
		close(sp[0]);
		free(h);
		return NULL;
	}
	h->s->host = h;
	mg_info("server %s: its %s instance is session %s, audit log %s", c->name,
	        cfg_instance_name(c->instance), session_id(h->s), session_audit_path(h->s));
	int e = pthread_create(&h->thread, NULL, host_thread, h);
	if (e != 0) {
		mg_err_sys(err, e, "starting the thread of server %s's instance", c->name);
		session_free(h->s);
		close(h->keep_fd);
		free(h);
		return NULL;
	}
	h->next = ins->hosts;
	ins->hosts = h;
	return h;
}

int gw_instances_attach(struct gw_server *srv, int64_t deadline_ms, struct mg_err **err)
{
	struct gw_instances *ins = srv->sess->instances;
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
		return mg_err_sys(err, errno, "socketpair");
	pthread_mutex_lock(&ins->lock);
	struct gw_host *h = ins->hosts;
	while (h != NULL && (!gw_watch_same_entry(h->cfg, srv->cfg) || h->ended))
		h = h->next;
	if (h == NULL && (h = host_start(ins, srv->cfg, err)) == NULL) {
		pthread_mutex_unlock(&ins->lock);
		close(sp[0]);
		close(sp[1]);
		return mg_err_wrap(err, "starting server %s's %s instance", srv->cfg->name,
		                   cfg_instance_name(srv->cfg->instance));
	}
	struct gw_incoming *in = xcalloc(1, sizeof(*in));
	in->fd = sp[1];
	snprintf(in->client, sizeof(in->client), "%s", srv->sess->id);
	in->next = h->incoming;
	h->incoming = in;
	loop_post(h->s->loop, take_incoming, h);
	cleanup_free char *host_id = xstrdup(session_id(h->s));
	/* a server that is not there is said as for one of the session's own:
	 * its reason, once, not an initialize that failed */
	struct timespec until = {.tv_sec = deadline_ms / 1000,
	                         .tv_nsec = (long)(deadline_ms % 1000) * 1000000};
	int e = 0;
	while (!h->settled && e != ETIMEDOUT)
		e = pthread_cond_timedwait(&ins->settled, &ins->lock, &until);
	cleanup_free char *why_not = !h->settled
	                                 ? xstrdup("its start was not over by the start deadline")
	                             : h->why_not ? xstrdup(h->why_not)
	                                          : NULL;
	/* its era is known once its start is over: a call's answer from a
	 * server of 2026-07-28 may ask for input, which is the session's to
	 * relay (the answer is to its own request) */
	srv->instance_modern =
	    why_not == NULL && h->s->nservers == 1 && gw_server_modern(&h->s->servers[0]);
	pthread_mutex_unlock(&ins->lock);
	if (why_not != NULL) {
		close(sp[0]);
		return mg_err_set(err, "its %s instance (session %s) did not start: %s",
		                  cfg_instance_name(srv->cfg->instance), host_id, why_not);
	}
	audit_record(srv->sess->audit, "server.attached",
	             gw_fields("server", json_new_string(srv->cfg->name), "instance",
	                       json_new_string(cfg_instance_name(srv->cfg->instance)),
	                       "instance_session", json_new_string(host_id), NULL));
	return sp[0];
}

void gw_instances_free(struct gw_instances *ins)
{
	if (ins == NULL)
		return;
	/* each instance sees its client end and stops its server */
	pthread_mutex_lock(&ins->lock);
	for (struct gw_host *h = ins->hosts; h != NULL; h = h->next)
		if (h->keep_fd >= 0) {
			close(h->keep_fd);
			h->keep_fd = -1;
		}
	pthread_mutex_unlock(&ins->lock);
	while (ins->hosts != NULL) {
		struct gw_host *h = ins->hosts;
		ins->hosts = h->next;
		pthread_join(h->thread, NULL);
		session_free(h->s);
		free(h->why_not);
		free(h);
	}
	pthread_cond_destroy(&ins->settled);
	pthread_mutex_destroy(&ins->lock);
	free(ins->state_dir);
	free(ins->data_dir);
	free(ins->workspace);
	free(ins);
}
