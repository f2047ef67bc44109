/* The session's handlers by method, on both sides: what a client asks
 * (client_methods, client_notifications) and what a server sends
 * (server_requests, server_notifications), each a table naming the one
 * function that serves the method. The peers' callbacks look a message up
 * here and nowhere else; a method in no table is refused (a request) or
 * dropped (a notification), saying so. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "internal/base/cleanup.h"
#include "internal/base/log.h"
#include "internal/base/xalloc.h"
#include "internal/gateway/gateway-internal.h"

/* ---- the client's side ---------------------------------------------------- */

/* After initialize (or, in 2026-07-28, after a request's _meta is admitted):
 * initialize, ping and server/discover are the session's own (client.c) */
static const struct gw_client_method client_methods[] = {
    {"tools/list", gw_client_tools_list, GW_LISTEN_TOOLS, false},
    {"tools/call", gw_client_tools_call, -1, false},
    /* sent to the servers that are ready, and to each one as it becomes so */
    {"logging/setLevel", gw_relay_set_level, -1, true},
    {"resources/list", gw_relay_resources_list, GW_LISTEN_RESOURCES, true},
    {"resources/templates/list", gw_relay_templates_list, GW_LISTEN_RESOURCES, true},
    {"prompts/list", gw_relay_prompts_list, GW_LISTEN_PROMPTS, true},
    {"resources/read", gw_relay_resource, -1, true},
    {"resources/subscribe", gw_relay_resource, -1, true},
    {"resources/unsubscribe", gw_relay_resource, -1, true},
    {"prompts/get", gw_relay_prompt_get, -1, true},
    {"completion/complete", gw_relay_complete, -1, true},
    /* 2026-07-28: its resource subscriptions wait for their servers */
    {"subscriptions/listen", gw_listen_open, GW_LISTEN_RESOURCES, true},
};

const struct gw_client_method *gw_client_method(const char *method)
{
	for (size_t i = 0; i < sizeof(client_methods) / sizeof(client_methods[0]); i++)
		if (strcmp(client_methods[i].method, method) == 0)
			return &client_methods[i];
	return NULL;
}

static const struct {
	const char *method;
	void (*fn)(struct session *s, struct rpc_msg *msg);
} client_notifications[] = {
    {"notifications/initialized", gw_client_initialized},
    {"notifications/cancelled", gw_client_cancelled},
    {"notifications/roots/list_changed", gw_client_roots_changed},
};

void gw_client_notification(struct session *s, struct rpc_msg *msg)
{
	for (size_t i = 0; i < sizeof(client_notifications) / sizeof(client_notifications[0]); i++)
		if (strcmp(client_notifications[i].method, msg->method) == 0) {
			client_notifications[i].fn(s, msg);
			return;
		}
	mg_debug("client: %.64s is not for mcpgate; dropped", msg->method);
}

/* ---- the servers' side ---------------------------------------------------- */

typedef void (*server_handler)(struct gw_server *srv, struct rpc_msg *msg);

static void server_ping(struct gw_server *srv, struct rpc_msg *msg)
{
	rpc_peer_send_result(srv->launch.peer, msg->id, NULL, NULL);
}

/* sampling, elicitation and roots: relayed when the client declared the
 * capability and the server's entry allows it, else refused (relay.c) */
static void server_asks_client(struct gw_server *srv, struct rpc_msg *msg)
{
	gw_relay_server_request(srv, msg);
}

static const struct {
	const char *method;
	server_handler fn;
} server_requests[] = {
    {"ping", server_ping},
    {"sampling/createMessage", server_asks_client},
    {"elicitation/create", server_asks_client},
    {"roots/list", server_asks_client},
};

void gw_server_on_request(struct rpc_peer *peer, struct rpc_msg *msg, void *data)
{
	struct gw_server *srv = data;
	server_handler fn = NULL;
	for (size_t i = 0; i < sizeof(server_requests) / sizeof(server_requests[0]); i++)
		if (strcmp(server_requests[i].method, msg->method) == 0)
			fn = server_requests[i].fn;
	if (fn == server_ping) {
		fn(srv, msg); /* also while it starts */
		return;
	}
	if (srv->sess->host != NULL && srv->state == GW_READY) {
		gw_host_server_request(srv, msg); /* to the session it is for */
		return;
	}
	if (fn != NULL) {
		fn(srv, msg);
		return;
	}
	audit_record_by(srv->sess->audit, srv->cfg->name, "server.request.refused",
	                gw_fields("server", json_new_string(srv->cfg->name), "method",
	                          json_new_string(msg->method), NULL));
	cleanup_free char *text =
	    xasprintf("mcpgate does not relay %.64s from servers", msg->method);
	rpc_peer_send_error(peer, msg->id, RPC_METHOD_NOT_FOUND, text, NULL, NULL);
}

static struct gw_call *call_by_token(struct session *s, struct gw_server *srv, const char *token)
{
	for (struct gw_call *c = s->calls; c != NULL; c = c->next)
		if (c->server == srv && c->progress_token != NULL &&
		    strcmp(c->progress_token, token) == 0)
			return c;
	return NULL;
}

/* A 2026-07-28 client asked for a server's messages at level or lower
 * with a call of its to that server that has not been answered yet. A
 * server of the old era says not which request a message is for: it is
 * given to the client while such a call runs. */
static bool log_asked(const struct session *s, const struct gw_server *srv, const char *level)
{
	int rank = gw_log_level_rank(level);
	for (const struct gw_call *c = s->calls; c != NULL; c = c->next)
		if (c->server == srv && c->log_rank >= 0 && rank >= c->log_rank)
			return true;
	return false;
}

/* A server's log message reaches the client tagged with the server's name */
static void server_log(struct gw_server *srv, struct rpc_msg *msg)
{
	struct session *s = srv->sess;
	const struct json_value *params = msg->params;
	if (params == NULL || params->kind != JSON_OBJECT)
		return;
	if (s->era == GW_ERA_MODERN ? !log_asked(s, srv, json_get_string(params, "level"))
	                            : !s->answered_initialize)
		return;
	struct json_value *p = json_copy(params);
	const char *logger = json_get_string(params, "logger");
	cleanup_free char *tag = logger != NULL ? xasprintf("%s/%.64s", srv->cfg->name, logger)
	                                        : xstrdup(srv->cfg->name);
	json_object_set(p, "logger", json_new_string(tag));
	gw_secrets_redact(s, p);
	rpc_peer_send_notification(s->client, "notifications/message", p, NULL);
	json_free(p);
}

static void server_tools_changed(struct gw_server *srv, struct rpc_msg *msg)
{
	(void)msg;
	if (srv->offered)
		gw_server_relist(srv);
}

static void server_progress(struct gw_server *srv, struct rpc_msg *msg)
{
	struct session *s = srv->sess;
	const char *token = json_get_string(msg->params, "progressToken");
	struct gw_call *c = token != NULL ? call_by_token(s, srv, token) : NULL;
	if (c == NULL || c->client_progress_token == NULL)
		return; /* not a token we handed out, or its request is answered */
	struct json_value *p = json_copy(msg->params);
	json_object_set(p, "progressToken", json_copy(c->client_progress_token));
	gw_secrets_redact(s, p);
	rpc_peer_send_notification(s->client, "notifications/progress", p, NULL);
	json_free(p);
}

static const struct {
	const char *method;
	server_handler fn;
} server_notifications[] = {
    {"notifications/tools/list_changed", server_tools_changed},
    {"notifications/message", server_log},
    {"notifications/progress", server_progress},
    {"notifications/cancelled", gw_relay_server_cancelled},
    {"notifications/resources/updated", gw_relay_resource_updated},
    {"notifications/resources/list_changed", gw_relay_list_changed},
    {"notifications/prompts/list_changed", gw_relay_list_changed},
    {"notifications/elicitation/complete", gw_relay_elicitation_complete},
};

void gw_server_on_notification(struct rpc_peer *peer, struct rpc_msg *msg, void *data)
{
	(void)peer;
	struct gw_server *srv = data;
	if (srv->state != GW_READY)
		return; /* start-up runs on another thread: nothing to relay yet */
	if (srv->sess->host != NULL) {
		gw_host_server_notification(srv, msg); /* to the sessions attached */
		return;
	}
	for (size_t i = 0; i < sizeof(server_notifications) / sizeof(server_notifications[0]); i++)
		if (strcmp(server_notifications[i].method, msg->method) == 0) {
			server_notifications[i].fn(srv, msg);
			return;
		}
	mg_debug("server %s: %.64s is not relayed", srv->cfg->name, msg->method);
}

void gw_server_on_bad_line(struct rpc_peer *peer, const struct rpc_bad_line *bad, void *data)
{
	struct gw_server *srv = data;
	struct session *s = srv->sess;
	audit_record_by(s->audit, srv->cfg->name, "server.protocol_error",
	                gw_fields("server", json_new_string(srv->cfg->name), "reason",
	                          json_new_string(bad->reason), "bytes",
	                          json_new_int((int64_t)bad->len), NULL));
	if (!bad->overflow)
		return;
	if (srv->state == GW_STARTING) {
		/* start-up waits for an answer that was in that line: fail it now */
		cleanup_free char *why =
		    xasprintf("it sent a line of more than %llu bytes (line_max in config.toml)",
		              (unsigned long long)s->cfg->mcp.line_max);
		rpc_peer_fail_all(peer, why);
		return;
	}
	if (srv->state != GW_READY)
		return;
	/* the line may have been any call's answer: none of them can be trusted
	 * to arrive, so each fails now with the reason. A call whose question is
	 * with the client is not awaited from the server (it is not sent yet, or
	 * answered with input requests), and that question's answer frees it. */
	for (struct gw_call *c = s->calls, *next; c != NULL; c = next) {
		next = c->next;
		if (c->server != srv || c->awaiting_confirm)
			continue;
		cleanup_free char *key = rpc_id_key_int(c->upstream_id);
		rpc_peer_cancel(srv->launch.peer, key);
		gw_call_finish_error(c, RPC_SERVER_ERROR,
		                     "server %s sent a line of more than %llu bytes (the limit is "
		                     "%llu, line_max in config.toml)",
		                     srv->cfg->name, (unsigned long long)bad->len,
		                     (unsigned long long)s->cfg->mcp.line_max);
	}
}

void gw_server_on_closed(struct rpc_peer *peer, const struct mg_err *why, void *data)
{
	(void)peer;
	struct gw_server *srv = data;
	if (why != NULL)
		mg_debug("server %s: %s", srv->cfg->name, mg_err_msg(why));
	srv->output_closed = true;
	if (srv->attached && srv->state == GW_READY)
		gw_server_set_reason(srv, GW_EXITED,
		                     "server %s's %s instance ended; its audit log says why",
		                     srv->cfg->name, cfg_instance_name(srv->cfg->instance));
}
