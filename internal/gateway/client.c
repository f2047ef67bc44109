/* The client side of a session: initialize, ping, tools/list, tools/call
 * routed to its server with ids and progress tokens mapped both ways; and
 * what servers send between calls. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include <sodium.h>

#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/log.h"
#include "internal/base/utf8.h"
#include "internal/base/xalloc.h"
#include "internal/gateway/gateway-internal.h"

#define CLIENT_NOTICES_MAX 64

void gw_client_error_data(struct session *s, const struct json_value *id, int64_t code,
                          const struct json_value *data, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cleanup_free char *raw = xvasprintf(fmt, ap);
	va_end(ap);
	/* errors reach the person too (a client shows them): every hiding
	 * character escaped, lines kept */
	cleanup_free char *text = mg_shown_lines(raw, strlen(raw));
	struct mg_err *err = NULL;
	if (rpc_peer_send_error(s->client, id, code, text, data, &err) < 0) {
		mg_warn("client: %s", mg_err_msg(err));
		mg_err_free(err);
	}
}

static void send_result(struct session *s, const struct json_value *id,
                        const struct json_value *result)
{
	struct mg_err *err = NULL;
	if (rpc_peer_send_result(s->client, id, result, &err) < 0) {
		mg_warn("client: %s", mg_err_msg(err));
		mg_err_free(err);
	}
}

void gw_client_result_raw(struct session *s, const struct json_value *id,
                          const struct json_value *result)
{
	send_result(s, id, result);
}

void gw_client_result(struct session *s, const struct json_value *id,
                      const struct json_value *result)
{
	struct json_value *modern = gw_era_result(s, result);
	send_result(s, id, modern != NULL ? modern : result);
	json_free(modern);
}

static void send_notice_now(struct session *s, const char *level, const char *text)
{
	struct json_value *params =
	    gw_fields("level", json_new_string(level), "logger", json_new_string("mcpgate"), "data",
	              json_new_string(text), NULL);
	rpc_peer_send_notification(s->client, "notifications/message", params, NULL);
	json_free(params);
}

/* A 2026-07-28 client hears a log message only during a request that asked
 * for that level or a lower one */
static bool modern_wants(const struct session *s, const char *level)
{
	return s->era == GW_ERA_MODERN && s->request_log_rank >= 0 &&
	       gw_log_level_rank(level) >= s->request_log_rank;
}

/* Say something to the person through the client (notifications/message);
 * held until the client has been answered initialize, or (2026-07-28) until
 * a request asks for messages of its level. */
void gw_client_notice(struct session *s, const char *level, const char *said)
{
	/* as the one renderer shows it: a server's words inside a notice went
	 * in escaped, and nothing in it can still hide or break a line */
	cleanup_free char *text = mg_shown_lines(said, strlen(said));
	mg_info("%s", text);
	if (s->answered_initialize || modern_wants(s, level)) {
		send_notice_now(s, level, text);
		return;
	}
	if (s->notices.n < CLIENT_NOTICES_MAX)
		strv_pushf(&s->notices, "%s\t%s", level, text);
}

/* The notices held that the client may hear now; the others stay */
static void send_held_notices(struct session *s)
{
	struct strv keep = STRV_INIT;
	for (size_t i = 0; i < s->notices.n; i++) {
		char *tab = strchr(s->notices.v[i], '\t');
		*tab = '\0';
		if (s->answered_initialize || modern_wants(s, s->notices.v[i]))
			send_notice_now(s, s->notices.v[i], tab + 1);
		else
			strv_pushf(&keep, "%s\t%s", s->notices.v[i], tab + 1);
	}
	strv_free(&s->notices);
	s->notices = keep;
}

/* ---- calls -------------------------------------------------------------- */

void gw_call_free(struct gw_call *c)
{
	if (c == NULL)
		return;
	json_free(c->client_id);
	json_free(c->client_progress_token);
	free(c->client_key);
	free(c->progress_token);
	free(c->tool);
	free(c->traceparent);
	json_free(c->params);
	json_free(c->caps);
	gw_round_free(c->round);
	gw_park_free(c);
	free(c);
}

static void call_unlink(struct gw_call *c)
{
	struct session *s = c->sess;
	if (c->prev != NULL)
		c->prev->next = c->next;
	else if (s->calls == c)
		s->calls = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	c->next = c->prev = NULL;
}

/* W3C trace context's traceparent: VERSION-TRACEID-PARENTID-FLAGS in lower
 * hex, 2-32-16-2 digits; version ff, an all-zero trace or parent id invalid.
 * Version 00 is exactly 55 characters; a later one may carry more after a
 * dash. */
bool gw_traceparent_valid(const char *tp)
{
	static const size_t field[] = {2, 32, 16, 2};
	size_t len = strlen(tp), at = 0;
	for (size_t i = 0; i < 4; i++) {
		bool zero = true;
		for (size_t k = 0; k < field[i]; k++, at++) {
			char ch = at < len ? tp[at] : '\0';
			if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
				return false;
			zero &= ch == '0';
		}
		if ((i == 1 || i == 2) && zero)
			return false;
		if (i < 3 && (at >= len || tp[at++] != '-'))
			return false;
	}
	if (strncmp(tp, "ff", 2) == 0)
		return false;
	if (strncmp(tp, "00", 2) == 0)
		return len == 55;
	return len == 55 || (len > 55 && tp[55] == '-');
}

static void call_record(struct gw_call *c, const char *outcome, const char *detail)
{
	struct json_value *f =
	    gw_fields("server", json_new_string(c->server->cfg->name), "tool",
	              json_new_string(c->tool), "outcome", json_new_string(outcome), "ms",
	              json_new_int(proc_now_ms() - c->start_ms), NULL);
	if (c->seq > 0)
		json_object_set(f, "call", json_new_int(c->seq));
	if (detail != NULL)
		json_object_set(f, "detail", json_new_string(detail));
	if (c->traceparent != NULL) {
		/* one trace id follows the call from the client into the
		 * container (its _meta goes on as it came) and into this record */
		json_object_set(f, "trace_id", json_new_stringn(c->traceparent + 3, 32));
		json_object_set(f, "traceparent", json_new_string(c->traceparent));
	}
	audit_record(c->sess->audit, "tool.call", f);
}

/* Answer the client with an error and forget the call (it is unlinked). */
void gw_call_finish_error(struct gw_call *c, int64_t code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cleanup_free char *text = xvasprintf(fmt, ap);
	va_end(ap);
	call_unlink(c);
	call_record(c, "error", text);
	if (!c->sess->stopping && !gw_park_away(c))
		gw_client_error(c->sess, c->client_id, code, "%s", text);
	gw_call_free(c);
}

static void on_call_done(struct rpc_peer *peer, struct rpc_msg *reply, const struct mg_err *why,
                         void *data)
{
	(void)peer;
	struct gw_call *c = data;
	struct session *s = c->sess;
	struct gw_server *srv = c->server;
	if (reply == NULL) {
		if (s->stopping) {
			call_unlink(c);
			call_record(c, "cancelled", "the session ended");
			gw_call_free(c);
			return;
		}
		if (srv->state == GW_READY && srv->launch.peer != NULL &&
		    rpc_peer_closed(srv->launch.peer) && srv->launch.proc.pid > 0) {
			/* the server is ending: answer once its exit status is known */
			call_unlink(c);
			c->next = srv->orphans;
			srv->orphans = c;
			return;
		}
		if (srv->state != GW_READY || srv->launch.peer == NULL) {
			gw_call_finish_error(c, RPC_SERVER_ERROR, "%s",
			                     srv->reason != NULL ? srv->reason
			                                         : "its server is not running");
			return;
		}
		/* a timeout: tell the server to stop working on it */
		struct json_value *p =
		    gw_fields("requestId", json_new_int(c->upstream_id), "reason",
		              json_new_string("timed out in mcpgate"), NULL);
		if (srv->launch.peer != NULL)
			rpc_peer_send_notification(srv->launch.peer, "notifications/cancelled", p,
			                           NULL);
		json_free(p);
		gw_call_finish_error(c, RPC_SERVER_ERROR, "tool %s__%s: %s", srv->cfg->name,
		                     c->tool, mg_err_msg(why));
		return;
	}
	if (gw_park_away(c)) {
		/* its client is away with the server's questions: nobody to tell */
		call_unlink(c);
		call_record(c, "dropped",
		            "its server answered while the client had its questions; the "
		            "client's retry is refused");
		gw_call_free(c);
		return;
	}
	const char *result_type =
	    reply->kind == RPC_RESULT ? json_get_string(reply->result, "resultType") : NULL;
	if (gw_server_asks_by_result(srv) && result_type != NULL &&
	    strcmp(result_type, "input_required") == 0) {
		/* a 2026-07-28 server asks for input by answering with requests
		 * (from a server of the old era the member means nothing, and
		 * goes) */
		gw_round_result(c, reply);
		return;
	}
	if (reply->kind == RPC_RESULT && reply->result->kind != JSON_OBJECT) {
		/* a CallToolResult is an object: what else a server sends is its
		 * fault, and the client is told so */
		gw_call_finish_error(c, RPC_SERVER_ERROR,
		                     "tool %s__%s: server %s answered with a result that is not an "
		                     "object",
		                     srv->cfg->name, c->tool, srv->cfg->name);
		return;
	}
	call_unlink(c);
	if (reply->kind == RPC_RESULT) {
		const struct json_value *is_error = json_get(reply->result, "isError");
		bool failed =
		    is_error != NULL && is_error->kind == JSON_BOOL && is_error->u.boolean;
		call_record(c, failed ? "tool-error" : "ok", NULL);
		/* a tool that failed for a command its image lacks: the person
		 * learns which package has it */
		const struct json_value *content = json_get(reply->result, "content");
		for (size_t i = 0; failed && content != NULL && content->kind == JSON_ARRAY &&
		                   i < content->u.arr.len && i < 8;
		     i++) {
			const char *text = json_get_string(content->u.arr.items[i], "text");
			if (text != NULL)
				gw_server_tool_hint(srv, text, strlen(text));
		}
		/* a result is data: it says where it came from, and changes nothing */
		struct json_value *result = json_copy(reply->result);
		const struct json_value *meta = json_get(result, "_meta");
		struct json_value *m =
		    meta != NULL && meta->kind == JSON_OBJECT ? json_copy(meta) : json_new_object();
		json_object_set(m, "io.mcpgate/server", json_new_string(srv->cfg->name));
		json_object_set(result, "_meta", m);
		gw_secrets_redact(s, result);
		gw_client_result(s, c->client_id, result);
		json_free(result);
	} else {
		cleanup_free char *text = gw_client_forward_error(s, c->client_id, reply);
		call_record(c, "error", text);
		gw_server_tool_hint(srv, text, strlen(text));
	}
	gw_call_free(c);
}

char *gw_client_forward_error(struct session *s, const struct json_value *client_id,
                              const struct rpc_msg *reply)
{
	cleanup_free char *msg = gw_secrets_redact_text(
	    s, reply->error_message != NULL ? reply->error_message : "", reply->error_message_len);
	struct json_value *data = reply->error_data != NULL ? json_copy(reply->error_data) : NULL;
	gw_secrets_redact(s, data);
	if (!s->stopping)
		gw_client_error_data(s, client_id, reply->error_code, data, "%s", msg);
	json_free(data);
	char *raw = mcp_error_text(reply);
	char *text = gw_secrets_redact_text(s, raw, strlen(raw));
	free(raw);
	return text;
}

static const struct gw_tool *find_tool(const struct session *s, const char *name)
{
	for (size_t i = 0; i < s->ntools; i++)
		if (strcmp(s->tools[i].public_name, name) == 0)
			return &s->tools[i];
	return NULL;
}

/* A call that never reached a server: answered and recorded */
static void refuse_call(struct session *s, const struct json_value *id, const char *tool,
                        int64_t code, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void refuse_call(struct session *s, const struct json_value *id, const char *tool,
                        int64_t code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cleanup_free char *text = xvasprintf(fmt, ap);
	va_end(ap);
	audit_record(s->audit, "tool.call",
	             gw_fields("tool", json_new_string(tool), "outcome", json_new_string("refused"),
	                       "detail", json_new_string(text), NULL));
	gw_client_error(s, id, code, "%s", text);
}

/* The params for the server: its own tool name, and our progress token */
static struct json_value *upstream_params(const struct session *s, const struct gw_server *srv,
                                          const struct json_value *params, const char *name,
                                          const char *token)
{
	struct json_value *p = gw_era_upstream_params(s, srv, params);
	json_object_set(p, "name", json_new_string(name));
	const struct json_value *meta = json_get(p, "_meta");
	if (token != NULL && meta != NULL && meta->kind == JSON_OBJECT &&
	    json_get(meta, "progressToken") != NULL) {
		struct json_value *m = json_copy(meta);
		json_object_set(m, "progressToken", json_new_string(token));
		json_object_set(p, "_meta", m);
	}
	return p;
}

static void call_link(struct gw_call *c)
{
	struct session *s = c->sess;
	c->next = s->calls;
	c->prev = NULL;
	if (s->calls != NULL)
		s->calls->prev = c;
	s->calls = c;
}

/* Answer the client with a tool error (a result with isError: the model
 * reads why) and forget the call. */
static void call_refuse(struct gw_call *c, const char *outcome, const char *text)
{
	call_unlink(c);
	call_record(c, outcome, text);
	if (!c->sess->stopping) {
		struct json_value *content = json_new_array();
		json_array_push(content, gw_fields("type", json_new_string("text"), "text",
		                                   json_new_string(text), NULL));
		struct json_value *result =
		    gw_fields("content", content, "isError", json_new_bool(true), NULL);
		gw_client_result(c->sess, c->client_id, result);
		json_free(result);
	}
	gw_call_free(c);
}

void gw_call_answer_raw(struct gw_call *c, const char *outcome, const char *detail,
                        const struct json_value *result)
{
	call_unlink(c);
	call_record(c, outcome, detail);
	if (!c->sess->stopping)
		send_result(c->sess, c->client_id, result);
	gw_call_free(c);
}

void gw_call_detach(struct gw_call *c, const char *outcome, const char *detail,
                    const struct json_value *result)
{
	call_record(c, outcome, detail);
	if (!c->sess->stopping)
		send_result(c->sess, c->client_id, result);
	/* its request is answered: no cancel or progress of it means this call */
	json_free(c->client_id);
	c->client_id = NULL;
	free(c->client_key);
	c->client_key = xstrdup("");
	json_free(c->client_progress_token);
	c->client_progress_token = NULL;
}

void gw_call_drop(struct gw_call *c, const char *why)
{
	call_unlink(c);
	if (why != NULL)
		call_record(c, "cancelled", why);
	gw_call_free(c);
}

/* A call whose record cannot be written does not run: it is refused with
 * why, and the person is told once (docs/2026-12-02-pressure.md). True when
 * r (an audit_record's) says it was written. */
static bool recorded(struct gw_call *c, int r)
{
	struct session *s = c->sess;
	if (r == 0) {
		s->told_audit = false;
		return true;
	}
	char why[256] = "";
	audit_failing(s->audit, why, sizeof(why));
	cleanup_free char *text = xasprintf(
	    "mcpgate cannot write its audit log (%s): no tool call runs until it can", why);
	if (!s->told_audit) {
		gw_client_notice(s, "error", text);
		s->told_audit = true;
	}
	gw_call_finish_error(c, RPC_SERVER_ERROR, "tool %s__%s refused: %s", c->server->cfg->name,
	                     c->tool, text);
	return false;
}

/* The call's start, recorded before it is forwarded (once: a retry is the
 * same call), so even a kill -9 leaves its trace */
static bool call_started(struct gw_call *c)
{
	struct session *s = c->sess;
	if (c->seq > 0)
		return true;
	int64_t seq = ++s->next_call;
	struct json_value *f = gw_fields("server", json_new_string(c->server->cfg->name), "tool",
	                                 json_new_string(c->tool), "call", json_new_int(seq), NULL);
	if (c->traceparent != NULL)
		json_object_set(f, "traceparent", json_new_string(c->traceparent));
	if (!recorded(c, audit_record(s->audit, "tool.call.start", f)))
		return false;
	c->seq = seq;
	return true;
}

/* Send the call to its server (it is in s->calls already). */
void gw_call_send(struct gw_call *c, const struct json_value *params)
{
	struct gw_server *srv = c->server;
	struct session *s = c->sess;
	if (!call_started(c))
		return; /* refused: its record could not be written */
	if (srv->state != GW_READY || srv->launch.peer == NULL) {
		gw_call_finish_error(
		    c, RPC_SERVER_ERROR, "tool %s__%s is unavailable: %s", srv->cfg->name, c->tool,
		    srv->reason != NULL ? srv->reason : "its server is not running");
		return;
	}
	struct mg_err *err = NULL;
	int64_t deadline = proc_now_ms() + (int64_t)s->cfg->mcp.call_timeout * 1000;
	int r = rpc_peer_send_request(srv->launch.peer, "tools/call", params, deadline,
	                              on_call_done, c, &c->upstream_id, &err);
	if (r < 0 && rpc_peer_closed(srv->launch.peer) && srv->launch.proc.pid > 0) {
		/* it is ending: the answer names its exit status once known */
		mg_err_free(err);
		call_unlink(c);
		c->next = srv->orphans;
		srv->orphans = c;
		return;
	}
	if (r < 0) {
		gw_call_finish_error(c, RPC_SERVER_ERROR, "tool %s__%s: %s", srv->cfg->name,
		                     c->tool, mg_err_msg(err));
		mg_err_free(err);
	}
}

/* Where a server runs, in the person's words */
static char *where_it_runs(const struct session *s, const struct cfg_server *c)
{
	struct mg_buf b = MG_BUF_INIT(4096);
	mg_buf_printf(&b, NULL, "in a %s container, network: ",
	              s->driver != NULL ? s->driver->name : "container");
	if (c->nhosts == 0)
		mg_buf_puts(&b, "none", NULL);
	for (size_t i = 0; i < c->nhosts; i++) {
		if (c->hosts[i].port != 0)
			mg_buf_printf(&b, NULL, "%s%s:%u", i ? ", " : "", c->hosts[i].host,
			              c->hosts[i].port);
		else
			mg_buf_printf(&b, NULL, "%s%s", i ? ", " : "", c->hosts[i].host);
	}
	return mg_buf_steal(&b, NULL);
}

/* Arguments shown whole in a question up to this many bytes (as shown);
 * past it, their size, their digest, where all of them are, and the first
 * bytes, so nothing of what is approved is cut silently */
#define ARGS_SHOWN_MAX  4096
#define ARGS_SHOWN_HEAD 1024

/* The arguments of call c as the person is shown them (allocated): the
 * exact text the server receives, every hiding character escaped; whole,
 * or when too long its size, digest and the file holding it whole */
static char *args_shown(struct gw_call *c, const struct json_value *args)
{
	struct session *s = c->sess;
	struct json_value *empty = args == NULL ? json_new_object() : NULL;
	struct mg_buf exact = MG_BUF_INIT((size_t)1 << 30), shown = MG_BUF_INIT((size_t)1 << 30);
	if (json_generate(args != NULL ? args : empty, &exact, NULL) < 0 ||
	    json_shown(args != NULL ? args : empty, &shown, NULL) < 0) {
		json_free(empty);
		mg_buf_free(&exact);
		mg_buf_free(&shown);
		return xstrdup("(they cannot be shown)");
	}
	json_free(empty);
	if (shown.len <= ARGS_SHOWN_MAX) {
		mg_buf_free(&exact);
		return mg_buf_steal(&shown, NULL);
	}
	unsigned char digest[crypto_hash_sha256_BYTES];
	crypto_hash_sha256(digest, (const unsigned char *)exact.data, exact.len);
	char hex[2 * sizeof(digest) + 1];
	sodium_bin2hex(hex, sizeof(hex), digest, sizeof(digest));
	cleanup_free char *dir = xasprintf("%s/sessions/%s.args", s->state_dir, s->id);
	cleanup_free char *path = xasprintf("%s/%s.json", dir, hex);
	struct mg_err *err = NULL;
	bool kept = mg_mkdir_p(dir, 0700, &err) == 0 &&
	            mg_write_file_atomic(path, exact.data, exact.len, 0600, &err) == 0;
	size_t head = ARGS_SHOWN_HEAD;
	while (head > 0 && ((unsigned char)shown.data[head] & 0xC0) == 0x80)
		head--; /* not inside a character */
	char *text = xasprintf("%zu bytes, sha256 %s, %s%s; the first %zu: %.*s ...", exact.len,
	                       hex, kept ? "all of them in " : "which could not be kept: ",
	                       kept ? path : mg_err_msg(err), head, (int)head, shown.data);
	mg_err_free(err);
	mg_buf_free(&exact);
	mg_buf_free(&shown);
	return text;
}

static char *declined_text(const struct gw_call *c, const char *action)
{
	return xasprintf("refused: the person %s running tool %s of server %s",
	                 strcmp(action, "decline") == 0 ? "declined" : "cancelled", c->tool,
	                 c->server->cfg->name);
}

static void on_confirm(struct rpc_peer *peer, struct rpc_msg *reply, const struct mg_err *why,
                       void *data)
{
	(void)peer;
	struct gw_call *c = data;
	struct session *s = c->sess;
	c->awaiting_confirm = false;
	if (c->cancelled) {
		gw_call_free(c); /* unlinked when it was cancelled */
		return;
	}
	if (s->stopping) {
		call_unlink(c);
		gw_call_free(c);
		return;
	}
	const char *action = NULL;
	if (reply != NULL && reply->kind == RPC_RESULT)
		action = json_get_string(reply->result, "action");
	int r = audit_record(s->audit, "tool.confirm",
	                     gw_fields("server", json_new_string(c->server->cfg->name), "tool",
	                               json_new_string(c->tool), "action",
	                               json_new_string(action != NULL ? action : "none"), NULL));
	if (action != NULL && strcmp(action, "accept") == 0) {
		if (recorded(c, r))
			gw_call_send(c, c->params);
		return;
	}
	cleanup_free char *text =
	    action != NULL
	        ? declined_text(c, action)
	        : xasprintf("refused: no confirmation for tool %s of server %s (%s)", c->tool,
	                    c->server->cfg->name,
	                    why != NULL ? mg_err_msg(why) : "the client's answer was an error");
	call_refuse(c, "declined", text);
}

/* The elicitation that asks the person whether call c may run: a form with
 * nothing to fill in, whose message says what would run where */
static struct json_value *confirm_question(struct gw_call *c, const struct cfg_tool *set,
                                           const struct json_value *args)
{
	struct session *s = c->sess;
	const struct cfg_server *srv = c->server->cfg;
	cleanup_free char *shown = args_shown(c, args);
	cleanup_free char *where = where_it_runs(s, srv);
	cleanup_free char *message =
	    xasprintf("Allow server %s to run its tool %s (effect: %s)? It runs %s. Arguments: %s",
	              srv->name, c->tool, cfg_effect_name(set->effect), where, shown);
	struct json_value *params = gw_fields(
	    "message", json_new_string(message), "requestedSchema",
	    gw_fields("type", json_new_string("object"), "properties", json_new_object(), NULL),
	    NULL);
	if (s->era == GW_ERA_MODERN ||
	    (s->client_version != NULL && strcmp(s->client_version, "2025-11-25") == 0))
		json_object_set(params, "mode", json_new_string("form"));
	return params;
}

/* Ask the person, through the client, whether this call may run. */
static void call_confirm(struct gw_call *c, const struct cfg_tool *set,
                         const struct json_value *args)
{
	struct session *s = c->sess;
	struct json_value *params = confirm_question(c, set, args);
	struct mg_err *err = NULL;
	int64_t deadline = proc_now_ms() + (int64_t)s->cfg->mcp.call_timeout * 1000;
	c->awaiting_confirm = true;
	int r = rpc_peer_send_request(s->client, "elicitation/create", params, deadline, on_confirm,
	                              c, NULL, &err);
	json_free(params);
	if (r < 0) {
		c->awaiting_confirm = false;
		cleanup_free char *text =
		    xasprintf("refused: cannot ask for confirmation: %s", mg_err_msg(err));
		mg_err_free(err);
		call_refuse(c, "refused", text);
	}
}

/* ---- confirmations as multi round-trip requests (2026-07-28) ----------- */

/* A confirmation that cannot be used: recorded, and the call refused */
static void confirm_refused(struct gw_call *c, const char *reason)
{
	audit_record(c->sess->audit, "tool.confirm",
	             gw_fields("server", json_new_string(c->server->cfg->name), "tool",
	                       json_new_string(c->tool), "action", json_new_string("none"),
	                       "outcome", json_new_string("refused"), "reason",
	                       json_new_string(reason), NULL));
	gw_call_finish_error(c, RPC_INVALID_PARAMS, "tools/call %s__%s: %s", c->server->cfg->name,
	                     c->tool, reason);
}

/* Answer the call with the question and a requestState bound to it: the
 * call ends here, and its retry carries the answer */
static void confirm_ask(struct gw_call *c, const struct gw_tool *t, const struct json_value *args)
{
	struct session *s = c->sess;
	struct mg_err *err = NULL;
	cleanup_free char *state = NULL;
	int64_t deadline = proc_now_ms() + (int64_t)s->cfg->mcp.call_timeout * 1000;
	struct confirm_call call = {CONFIRM_QUESTION, s->id, t->public_name, args};
	if ((s->confirm == NULL && confirm_keeper_new(&s->confirm, &err) < 0) ||
	    confirm_state_make(s->confirm, &call, NULL, 0, deadline, &state, &err) < 0) {
		cleanup_free char *text =
		    xasprintf("refused: cannot ask for confirmation: %s", mg_err_msg(err));
		mg_err_free(err);
		call_refuse(c, "refused", text);
		return;
	}
	struct json_value *question = gw_fields("method", json_new_string("elicitation/create"),
	                                        "params", confirm_question(c, t->cfg, args), NULL);
	struct json_value *result =
	    gw_fields("resultType", json_new_string("input_required"), "inputRequests",
	              gw_fields(GW_CONFIRM_INPUT_KEY, question, NULL), "requestState",
	              json_new_string(state), NULL);
	gw_call_answer_raw(c, "input-required", "asked the person to confirm", result);
	json_free(result);
}

/* A write or undeclared tool's call from a 2026-07-28 client: asked with an
 * input request, or, on the retry, run when its state is the one mcpgate gave
 * for exactly this call and the person accepted */
static void confirm_by_retry(struct gw_call *c, const struct gw_tool *t,
                             const struct json_value *params, const struct json_value *args)
{
	struct session *s = c->sess;
	const struct json_value *state = json_get(params, "requestState");
	const struct json_value *responses = json_get(params, "inputResponses");
	if (state == NULL && responses != NULL) {
		confirm_refused(c, "inputResponses came without the requestState mcpgate gave with "
		                   "its question; call again without them to be asked");
		return;
	}
	if (state == NULL) {
		confirm_ask(c, t, args);
		return;
	}
	if (state->kind != JSON_STRING) {
		confirm_refused(c, "requestState must be the string mcpgate gave");
		return;
	}
	struct mg_err *err = NULL;
	if (s->confirm == NULL)
		mg_err_set(&err, "the requestState is not one this session gave out");
	else
		confirm_state_take(
		    s->confirm, state->u.str.ptr, state->u.str.len,
		    &(struct confirm_call){CONFIRM_QUESTION, s->id, t->public_name, args},
		    proc_now_ms(), NULL, NULL, &err);
	if (err != NULL) {
		cleanup_free char *reason = xstrdup(mg_err_msg(err));
		mg_err_free(err);
		confirm_refused(c, reason);
		return;
	}
	const struct json_value *answer = json_get(responses, GW_CONFIRM_INPUT_KEY);
	if (answer == NULL) {
		confirm_ask(c, t, args); /* no answer to the question: it is asked again */
		return;
	}
	const char *action = json_get_string(answer, "action");
	if (action == NULL || (strcmp(action, "accept") != 0 && strcmp(action, "decline") != 0 &&
	                       strcmp(action, "cancel") != 0)) {
		confirm_refused(c, "inputResponses[\"" GW_CONFIRM_INPUT_KEY
		                   "\"].action must be accept, decline or cancel");
		return;
	}
	int r = audit_record(s->audit, "tool.confirm",
	                     gw_fields("server", json_new_string(c->server->cfg->name), "tool",
	                               json_new_string(c->tool), "action", json_new_string(action),
	                               NULL));
	if (strcmp(action, "accept") == 0) {
		if (recorded(c, r))
			gw_call_send(c, c->params);
		return;
	}
	cleanup_free char *text = declined_text(c, action);
	call_refuse(c, "declined", text);
}

static bool client_can_elicit(const struct session *s)
{
	const struct json_value *e = json_get(s->client_caps, "elicitation");
	return e != NULL && e->kind == JSON_OBJECT;
}

void gw_client_tools_call(struct session *s, struct rpc_msg *msg)
{
	const char *name = json_get_string(msg->params, "name");
	if (name == NULL) {
		gw_client_error(s, msg->id, RPC_INVALID_PARAMS, "tools/call needs a tool name");
		return;
	}
	const struct json_value *args = json_get(msg->params, "arguments");
	if (args != NULL && args->kind != JSON_OBJECT) {
		gw_client_error(s, msg->id, RPC_INVALID_PARAMS,
		                "tools/call: arguments must be an object");
		return;
	}
	/* a token that is none would be handed to the server as NULL */
	const struct json_value *asked = json_get(json_get(msg->params, "_meta"), "progressToken");
	if (asked != NULL && asked->kind != JSON_STRING && asked->kind != JSON_NUMBER) {
		gw_client_error(
		    s, msg->id, RPC_INVALID_PARAMS,
		    "tools/call: params._meta.progressToken must be a string or a number");
		return;
	}
	const struct gw_tool *t = find_tool(s, name);
	struct gw_server *owner = t != NULL ? t->server : gw_relay_owner_of_name(s, name);
	if (owner != NULL && (owner->state == GW_STARTING || owner->state == GW_IDLE)) {
		/* its server is starting (or, lazy, starts now): the call waits
		 * for its start to end, which start_timeout bounds */
		if (!s->no_wait)
			gw_wait(s, msg, owner);
		else
			refuse_call(s, msg->id, name, RPC_SERVER_ERROR,
			            "tool %.128s is unavailable: server %s did not finish starting "
			            "within start_timeout (%u s); ask again later",
			            name, owner->cfg->name, s->cfg->mcp.start_timeout);
		return;
	}
	if (t == NULL) {
		/* a server that did not start, or was stopped, offers no tool:
		 * a call meant for it says why */
		if (owner != NULL && owner->state != GW_READY)
			refuse_call(s, msg->id, name, RPC_SERVER_ERROR,
			            "tool %.128s is unavailable: %s", name,
			            owner->reason != NULL ? owner->reason
			                                  : "its server is not running");
		else
			refuse_call(s, msg->id, name, RPC_INVALID_PARAMS, "unknown tool \"%.128s\"",
			            name);
		return;
	}
	struct gw_server *srv = t->server;
	if (srv->state != GW_READY || srv->launch.peer == NULL) {
		refuse_call(s, msg->id, name, RPC_SERVER_ERROR, "tool %s is unavailable: %s", name,
		            srv->reason != NULL ? srv->reason : "its server is not running");
		return;
	}
	struct mg_err *berr = NULL;
	if (gw_secrets_recheck(srv, &berr) < 0) {
		refuse_call(s, msg->id, name, RPC_SERVER_ERROR, "%s", mg_err_msg(berr));
		mg_err_free(berr);
		return;
	}
	cleanup_free char *leak = gw_secrets_check_leaving(srv, msg->params);
	if (leak != NULL) {
		refuse_call(s, msg->id, name, RPC_SERVER_ERROR, "%s", leak);
		return;
	}
	struct gw_call *c = xcalloc(1, sizeof(*c));
	c->sess = s;
	c->server = srv;
	c->client_id = json_copy(msg->id);
	c->client_key = rpc_id_key(msg->id);
	c->tool = xstrdup(t->name);
	c->start_ms = proc_now_ms();
	c->log_rank = s->era == GW_ERA_MODERN ? s->request_log_rank : -1;
	const struct json_value *meta = json_get(msg->params, "_meta");
	const char *trace = json_get_string(meta, "traceparent");
	if (trace != NULL && gw_traceparent_valid(trace))
		c->traceparent = xstrdup(trace);
	const struct json_value *token = json_get(meta, "progressToken");
	if (token != NULL && (token->kind == JSON_STRING || token->kind == JSON_NUMBER)) {
		c->client_progress_token = json_copy(token);
		c->progress_token = xasprintf("mcpgate-%lld", (long long)++s->next_token);
	}
	c->params = upstream_params(s, srv, msg->params, t->name, c->progress_token);
	/* the arguments go on in the exact form (keys sorted, every number the
	 * literal the client wrote): what a confirmation binds, and what the
	 * person is shown, is then the very text the server receives */
	json_sort_keys((struct json_value *)json_get(c->params, "arguments"));
	args = json_get(c->params, "arguments");
	if (s->era == GW_ERA_MODERN)
		c->caps = json_copy(s->client_caps); /* this request's own */
	call_link(c);
	const struct json_value *state = json_get(msg->params, "requestState");
	int kind = s->era == GW_ERA_MODERN && state != NULL && state->kind == JSON_STRING
	               ? confirm_state_kind(state->u.str.ptr, state->u.str.len)
	               : -1;
	if (kind == CONFIRM_ROUND) {
		/* the retry of a call that was let through and whose server
		 * asked for input: the state says so, or the call is refused */
		gw_round_retry(c, t->public_name, msg->params);
		return;
	}
	if (kind == CONFIRM_PARKED) {
		/* the retry of a call whose server of the old era asked */
		gw_park_resume(c, t->public_name, msg->params);
		return;
	}
	if (t->cfg->effect == CFG_EFFECT_READ) {
		gw_call_send(c, c->params);
		return;
	}
	if (t->cfg->effect == CFG_EFFECT_WRITE && !t->cfg->confirm) {
		/* the person said this write tool needs no question: each such call
		 * is recorded as one made without asking */
		if (recorded(c, audit_record(s->audit, "tool.unconfirmed",
		                             gw_fields("server", json_new_string(srv->cfg->name),
		                                       "tool", json_new_string(t->name), NULL))))
			gw_call_send(c, c->params);
		return;
	}
	/* write and undeclared tools: the person is asked every call */
	if (!client_can_elicit(s)) {
		cleanup_free char *text = xasprintf(
		    "refused: tool %s of server %s has effect %s, so every call needs your "
		    "confirmation, and this client cannot ask (it declared no elicitation "
		    "capability). Use a client that supports elicitation; or, if the tool only "
		    "reads, declare it: mcpgate approve %s --tool %s --effect read",
		    t->name, srv->cfg->name, cfg_effect_name(t->cfg->effect), srv->cfg->name,
		    t->name);
		call_refuse(c, "refused", text);
		return;
	}
	if (s->era == GW_ERA_MODERN)
		confirm_by_retry(c, t, msg->params, args);
	else
		call_confirm(c, t->cfg, args);
}

/* ---- tools/list --------------------------------------------------------- */

/* A tool this client can never call: every call needs a question, and it
 * declared no elicitation to ask with */
static bool needs_asking(const struct session *s, const struct gw_tool *t)
{
	return !client_can_elicit(s) && t->cfg->effect != CFG_EFFECT_READ &&
	       !(t->cfg->effect == CFG_EFFECT_WRITE && !t->cfg->confirm);
}

/* Once a session: which tools are not listed to this client, and what to do */
static void tell_unlisted(struct session *s)
{
	if (s->told_unlisted)
		return;
	struct mg_buf b = MG_BUF_INIT(1 << 16);
	size_t n = 0;
	for (size_t i = 0; i < s->ntools; i++) {
		const struct gw_tool *t = &s->tools[i];
		if (t->server->state != GW_READY || !needs_asking(s, t))
			continue;
		mg_buf_printf(&b, NULL, "%s%s", n++ > 0 ? ", " : "", t->public_name);
	}
	if (n > 0) {
		s->told_unlisted = true;
		cleanup_free char *text = xasprintf(
		    "not listed to this client: %s. Each needs your confirmation on every call "
		    "(effect write or undeclared), and this client cannot ask (no elicitation "
		    "capability). Use a client that can ask; or, for a write tool you trust "
		    "without "
		    "a question, mcpgate approve SERVER --tool T --no-confirm (every such call is "
		    "recorded); or, for one that only reads, --effect read",
		    mg_buf_str(&b));
		gw_client_notice(s, "warning", text);
	}
	mg_buf_free(&b);
}

static struct json_value *tools_list_result(struct session *s)
{
	struct json_value *list = json_new_array();
	tell_unlisted(s);
	for (size_t i = 0; i < s->ntools; i++) {
		const struct gw_tool *t = &s->tools[i];
		if (!t->server->offered || needs_asking(s, t))
			continue;
		struct json_value *def = manifest_tool(t->def);
		json_object_set(def, "name", json_new_string(t->public_name));
		json_array_push(list, def);
	}
	return gw_fields("tools", list, NULL);
}

static void tools_list(struct session *s, const struct json_value *id,
                       const struct json_value *params)
{
	/* pages of GW_PAGE_MAX with cursors of mcpgate's own (relay.c) */
	const struct json_value *cursor = json_get(params, "cursor");
	struct json_value *result = tools_list_result(s);
	gw_relay_send_page(s, id, "tools", json_get(result, "tools"), cursor);
	json_free(result);
}

void gw_client_tools_list(struct session *s, struct rpc_msg *msg)
{
	tools_list(s, msg->id, msg->params);
}

/* ---- initialize --------------------------------------------------------- */

static void initialize(struct session *s, const struct rpc_msg *msg)
{
	const char *asked = json_get_string(msg->params, "protocolVersion");
	/* answer the client's version when we speak it, else our newest */
	const char *version =
	    asked != NULL && mcp_version_supported(asked) ? asked : MCP_PROTOCOL_LATEST;
	free(s->client_version);
	s->client_version = xstrdup(version);
	s->era = GW_ERA_LEGACY;
	json_free(s->client_caps);
	const struct json_value *caps = json_get(msg->params, "capabilities");
	s->client_caps = caps != NULL ? json_copy(caps) : json_new_object();
	struct json_value *result = gw_fields(
	    "protocolVersion", json_new_string(version), "capabilities",
	    gw_fields("tools", gw_fields("listChanged", json_new_bool(true), NULL), "prompts",
	              gw_fields("listChanged", json_new_bool(true), NULL), "resources",
	              gw_fields("subscribe", json_new_bool(true), "listChanged",
	                        json_new_bool(true), NULL),
	              "logging", json_new_object(), "completions", json_new_object(), NULL),
	    "serverInfo",
	    gw_fields("name", json_new_string("mcpgate"), "version", json_new_string(GW_VERSION),
	              NULL),
	    "instructions", json_new_string(GW_INSTRUCTIONS), NULL);
	gw_client_result(s, msg->id, result);
	json_free(result);
	s->answered_initialize = true;
	const struct json_value *info = json_get(msg->params, "clientInfo");
	audit_record(s->audit, "client.initialize",
	             gw_fields("protocolVersion", json_new_string(version), "client",
	                       json_new_string(json_get_string(info, "name") != NULL
	                                           ? json_get_string(info, "name")
	                                           : "(unnamed)"),
	                       NULL));
	send_held_notices(s);
}

/* ---- the client's messages ---------------------------------------------- */

/* What the client is told, for every request, while the configuration is
 * broken: the words of `mcpgate check`, which the person can act on */
static char *config_error_text(const struct session *s)
{
	return xasprintf("mcpgate offers nothing: its configuration is not valid (fix it, then "
	                 "restart mcpgate; `mcpgate check` shows the same):\n%s",
	                 s->config_error);
}

static void on_client_request(struct rpc_peer *peer, struct rpc_msg *msg, void *data);

void gw_client_dispatch(struct session *s, struct rpc_msg *msg)
{
	on_client_request(s->client, msg, s);
}

/* A list answered now would miss servers still starting, and this client
 * would not hear when they come: it waits, a little (waiting.c) */
static bool list_waits(const struct session *s, const struct gw_client_method *h,
                       const struct rpc_msg *msg)
{
	if (h->list < 0 || s->no_wait || gw_all_settled(s))
		return false;
	if (h->list == GW_LISTEN_RESOURCES && strcmp(msg->method, "subscriptions/listen") == 0)
		/* a listen waits only for the servers its subscriptions need */
		return json_get(json_get(msg->params, "notifications"), "resourceSubscriptions") !=
		       NULL;
	return !gw_client_hears_changes(s, (enum gw_listen_kind)h->list);
}

/* A list of prompts or resources is a use of every lazy server (no
 * record keeps those lists): each starts now, and the list waits for them
 * as a call waits for its server. True when it waits. */
static bool lazy_list_waits(struct session *s, const struct gw_client_method *h,
                            struct rpc_msg *msg)
{
	if ((h->list != GW_LISTEN_PROMPTS && h->list != GW_LISTEN_RESOURCES) || s->no_wait ||
	    strcmp(msg->method, "subscriptions/listen") == 0)
		return false;
	bool started = false;
	for (size_t i = 0; i < s->nservers; i++)
		if (s->servers[i].state == GW_IDLE) {
			gw_server_start(&s->servers[i]);
			started = true;
		}
	if (started)
		gw_wait_starts(s, msg);
	return started;
}

/* What the servers serve: both eras */
static void serve_request(struct session *s, struct rpc_msg *msg)
{
	const struct gw_client_method *h = gw_client_method(msg->method);
	if (s->config_error != NULL) {
		cleanup_free char *text = config_error_text(s);
		gw_client_error(s, msg->id, RPC_SERVER_ERROR, "%s", text);
	} else if (h == NULL)
		gw_client_error(s, msg->id, RPC_METHOD_NOT_FOUND, "mcpgate does not offer %.64s",
		                msg->method);
	else if (lazy_list_waits(s, h, msg))
		return;
	else if (list_waits(s, h, msg))
		gw_wait(s, msg, NULL);
	else if (h->object_params && msg->params != NULL && msg->params->kind != JSON_OBJECT)
		gw_client_error(s, msg->id, RPC_INVALID_PARAMS, "%.64s: params must be an object",
		                msg->method);
	else
		h->fn(s, msg);
}

/* A request of 2026-07-28: its own _meta says who asks and with what */
static void modern_request(struct session *s, struct rpc_msg *msg)
{
	if (gw_era_admit(s, msg) < 0)
		return;
	const char *why = gw_era_removed(msg->method);
	if (why != NULL)
		gw_client_error(s, msg->id, RPC_METHOD_NOT_FOUND, "%.64s is not served: %s",
		                msg->method, why);
	else if (strcmp(msg->method, "server/discover") == 0)
		gw_era_discover(s, msg->id);
	else {
		send_held_notices(s); /* those at the level this request asks for */
		serve_request(s, msg);
	}
	s->request_log_rank = -1;
}

static void on_client_request(struct rpc_peer *peer, struct rpc_msg *msg, void *data)
{
	(void)peer;
	struct session *s = data;
	const char *m = msg->method;
	if (s->era == GW_ERA_MODERN || (s->era == GW_ERA_UNKNOWN && gw_era_claims_modern(msg)))
		modern_request(s, msg);
	else if (strcmp(m, "initialize") == 0)
		initialize(s, msg);
	else if (strcmp(m, "ping") == 0)
		gw_client_result(s, msg->id, NULL);
	else if (!s->answered_initialize)
		gw_client_error(s, msg->id, RPC_INVALID_REQUEST,
		                "initialize first (or speak MCP %s: server/discover, or _meta "
		                "\"io.modelcontextprotocol/protocolVersion\" on every request)",
		                MCP_PROTOCOL_MODERN);
	else
		serve_request(s, msg);
}

static void cancel_call(struct session *s, const struct json_value *params)
{
	cleanup_free char *key = rpc_id_key(json_get(params, "requestId"));
	if (key == NULL || gw_listen_cancel(s, key) || gw_waiting_cancel(s, key))
		return;
	for (struct gw_call *c = s->calls; c != NULL; c = c->next) {
		if (strcmp(c->client_key, key) != 0)
			continue;
		struct gw_server *srv = c->server;
		if (c->awaiting_confirm) {
			/* the callback of its question (or its server's) frees it */
			gw_round_cancel(c);
			call_unlink(c);
			call_record(c, "cancelled", "by the client, while it was asked");
			c->cancelled = true;
			return;
		}
		if (srv->launch.peer != NULL) {
			cleanup_free char *up = rpc_id_key_int(c->upstream_id);
			rpc_peer_cancel(srv->launch.peer, up);
			const char *reason = json_get_string(params, "reason");
			struct json_value *p =
			    gw_fields("requestId", json_new_int(c->upstream_id), NULL);
			if (reason != NULL)
				json_object_set(p, "reason", json_new_string(reason));
			/* the reason is the client's text for the server, as a call's
			 * arguments are: a credential not bound for it stays here, and
			 * the cancel goes without it */
			cleanup_free char *leak = gw_secrets_check_leaving(srv, p);
			if (leak != NULL) {
				mg_warn(
				    "client: the reason of a cancel for server %s was not sent: %s",
				    srv->cfg->name, leak);
				json_free(p);
				p = gw_fields("requestId", json_new_int(c->upstream_id), NULL);
			}
			rpc_peer_send_notification(srv->launch.peer, "notifications/cancelled", p,
			                           NULL);
			json_free(p);
		}
		call_unlink(c);
		call_record(c, "cancelled", "by the client");
		gw_call_free(c);
		return;
	}
}

void gw_client_initialized(struct session *s, struct rpc_msg *msg)
{
	(void)msg;
	if (s->config_error != NULL && !s->client_initialized) {
		cleanup_free char *text = config_error_text(s);
		send_notice_now(s, "error", text);
	}
	s->client_initialized = true;
}

void gw_client_cancelled(struct session *s, struct rpc_msg *msg)
{
	cancel_call(s, msg->params);
}

void gw_client_roots_changed(struct session *s, struct rpc_msg *msg)
{
	(void)msg;
	if (s->era != GW_ERA_MODERN) /* 2026-07-28 removed it */
		gw_relay_roots_changed(s);
}

static void on_client_notification(struct rpc_peer *peer, struct rpc_msg *msg, void *data)
{
	(void)peer;
	gw_client_notification(data, msg); /* by method (methods.c) */
}

static void on_client_bad_line(struct rpc_peer *peer, const struct rpc_bad_line *bad, void *data)
{
	(void)peer;
	struct session *s = data;
	if (bad->answered) {
		/* a message whose members are not of their types: refused by the
		 * peer before any handler saw it */
		audit_record(s->audit, "client.refused",
		             gw_fields("reason", json_new_string(bad->reason), NULL));
		return;
	}
	/* a request we could not read still gets an answer */
	gw_client_error(s, bad->id, bad->code, "%s", bad->reason);
}

static void on_client_closed(struct rpc_peer *peer, const struct mg_err *why, void *data)
{
	(void)peer;
	struct session *s = data;
	if (why != NULL)
		mg_info("client: %s", mg_err_msg(why));
	gw_session_stop(s);
}

static void on_client_write_failed(struct rpc_peer *peer, const struct mg_err *why, void *data)
{
	(void)peer;
	struct session *s = data;
	mg_info("client: %s", mg_err_msg(why));
	gw_session_stop(s); /* nobody is listening any more */
}

int gw_client_open(struct session *s, int in_fd, int out_fd, struct mg_err **err)
{
	struct rpc_peer_config pc = {
	    .name = "client",
	    .line_max = (size_t)s->cfg->mcp.line_max,
	    .write_queue_max = (size_t)s->cfg->mcp.client_queue_max,
	    .on_request = on_client_request,
	    .on_notification = on_client_notification,
	    .on_bad_line = on_client_bad_line,
	    .on_closed = on_client_closed,
	    .on_write_failed = on_client_write_failed,
	    .check = mcp_shape_from_client,
	    .data = s,
	};
	if (rpc_peer_new(in_fd, out_fd, &pc, &s->client, err) < 0)
		return -1;
	return rpc_peer_attach(s->client, s->loop, err);
}

void gw_client_tools_changed(struct session *s)
{
	if (s->era == GW_ERA_MODERN)
		gw_listens_notify(s, GW_LISTEN_TOOLS);
	else if (s->client_initialized && !s->stopping && s->listed[GW_LISTEN_TOOLS])
		rpc_peer_send_notification(s->client, "notifications/tools/list_changed", NULL,
		                           NULL);
}
