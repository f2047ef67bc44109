/* The listener's HTTP side: libmicrohttpd in external epoll mode, run by
 * the listener's own event loop (one thread, nothing blocks), with
 * suspended connections for the requests that wait: a POST for its answer,
 * a stream for its next event.
 *
 * Every request passes the same checks first, in this order: Host (DNS
 * rebinding), Origin, the bearer token; only then is the path looked at,
 * so nothing unauthenticated learns what is served. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <microhttpd.h>
#include <sodium.h>

#include "internal/base/cleanup.h"
#include "internal/base/log.h"
#include "internal/base/num.h"
#include "internal/base/xalloc.h"
#include "internal/listen/listen-internal.h"
#include "internal/mcp/mcp.h"

#define STREAM_BLOCK (16u << 10)
/* libmicrohttpd's own timeout, which each byte starts again: behind
 * listen_read_timeout (conns.c), whose deadline no byte moves */
#define CONN_TIMEOUT_S   60
#define SHUTDOWN_MS      2000
#define METRICS_PAGE_MAX ((size_t)8 << 20)

static void req_unref(struct lst_req *r)
{
	if (--r->refs > 0)
		return;
	struct lst *l = r->l;
	if (r->all_prev != NULL)
		r->all_prev->all_next = r->all_next;
	else if (l->reqs == r)
		l->reqs = r->all_next;
	if (r->all_next != NULL)
		r->all_next->all_prev = r->all_prev;
	mg_buf_free(&r->body);
	mg_buf_free(&r->out);
	free(r->session_hdr);
	json_free(r->id);
	free(r->id_key);
	free(r->progress_key);
	json_free(r->progress_token);
	free(r->answer);
	free(r);
}

void lst_req_wake(struct lst_req *r)
{
	if (r->suspended && r->conn != NULL) {
		r->suspended = false;
		MHD_resume_connection(r->conn);
		r->l->kick = true;
	}
}

bool lst_req_peer_gone(struct lst_req *r)
{
	if (r->conn == NULL)
		return true;
	const union MHD_ConnectionInfo *info =
	    MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (info == NULL)
		return false;
	struct pollfd p = {.fd = info->connect_fd, .events = POLLRDHUP};
	return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

void lst_req_event(struct lst_req *r, const char *line, size_t len)
{
	/* one message a line: its JSON holds no newline */
	if (mg_buf_puts(&r->out, "event: message\ndata: ", NULL) < 0 ||
	    mg_buf_append(&r->out, line, len, NULL) < 0 || mg_buf_puts(&r->out, "\n\n", NULL) < 0)
		lst_metrics_dropped(r->l->metrics, "stream-full");
}

/* ---- answers ------------------------------------------------------------ */

static enum MHD_Result queue(struct lst_req *r, unsigned code, const char *type, const char *body,
                             size_t len, const char *header, const char *value)
{
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	if (resp == NULL)
		return MHD_NO;
	if (type != NULL)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (header != NULL)
		MHD_add_response_header(resp, header, value);
	/* without the token, one request a connection */
	if (!r->token_ok)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	enum MHD_Result ok = MHD_queue_response(r->conn, code, resp);
	MHD_destroy_response(resp);
	lst_conn_read(r->lconn);
	r->kind = REQ_ANSWERED;
	lst_metrics_http(r->l->metrics, code);
	return ok;
}

/* A refusal: the status, a JSON-RPC error naming what was wrong (with the
 * request's id when it was read, and data when not NULL), and the reason
 * counted under its label */
static enum MHD_Result vrefuse(struct lst_req *r, const struct json_value *id,
                               const struct json_value *data, unsigned code, int64_t rpc_code,
                               const char *label, const char *fmt, va_list ap)
{
	cleanup_free char *text = xvasprintf(fmt, ap);
	struct json_value *o = json_new_object();
	json_object_set(o, "jsonrpc", json_new_string("2.0"));
	if (id != NULL)
		json_object_set(o, "id", json_copy(id));
	struct json_value *e = json_new_object();
	json_object_set(e, "code", json_new_int(rpc_code));
	json_object_set(e, "message", json_new_string(text));
	if (data != NULL)
		json_object_set(e, "data", json_copy(data));
	json_object_set(o, "error", e);
	struct mg_buf b = MG_BUF_INIT(1 << 16);
	json_generate(o, &b, NULL);
	json_free(o);
	lst_metrics_refused(r->l->metrics, label);
	mg_debug("listener: %u %s: %s", code, label, text);
	const char *header = NULL, *value = NULL;
	if (code == MHD_HTTP_UNAUTHORIZED) {
		header = MHD_HTTP_HEADER_WWW_AUTHENTICATE;
		value = "Bearer realm=\"mcpgate\"";
	} else if (code == MHD_HTTP_METHOD_NOT_ALLOWED) {
		header = MHD_HTTP_HEADER_ALLOW;
		value = strcmp(label, "method") == 0        ? "GET, POST, DELETE"
		        : strcmp(label, "sessionless") == 0 ? "POST"
		                                            : "GET";
	} else if (code == MHD_HTTP_SERVICE_UNAVAILABLE) {
		header = MHD_HTTP_HEADER_RETRY_AFTER;
		value = "5";
	}
	enum MHD_Result ok =
	    queue(r, code, "application/json", b.data != NULL ? b.data : "", b.len, header, value);
	mg_buf_free(&b);
	return ok;
}

__attribute__((format(printf, 5, 6))) static enum MHD_Result
refuse(struct lst_req *r, unsigned code, int64_t rpc_code, const char *label, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	enum MHD_Result ok = vrefuse(r, NULL, NULL, code, rpc_code, label, fmt, ap);
	va_end(ap);
	return ok;
}

/* A refusal of a request whose id was read: 2026-07-28 answers these with it */
__attribute__((format(printf, 7, 8))) static enum MHD_Result
refuse_request(struct lst_req *r, const struct json_value *id, const struct json_value *data,
               unsigned code, int64_t rpc_code, const char *label, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	enum MHD_Result ok = vrefuse(r, id, data, code, rpc_code, label, fmt, ap);
	va_end(ap);
	return ok;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	struct lst_req *r = cls;
	if (r->out.len > 0) {
		size_t n = r->out.len < max ? r->out.len : max;
		memcpy(buf, r->out.data, n);
		mg_buf_consume(&r->out, n);
		r->last_write_ms = rpc_now_ms();
		return (ssize_t)n;
	}
	if (r->finished || r->l->stopping || (r->client == NULL && r->kind == REQ_GET))
		return MHD_CONTENT_READER_END_OF_STREAM;
	MHD_suspend_connection(r->conn);
	r->suspended = true;
	return 0;
}

static void stream_done(void *cls)
{
	req_unref(cls);
}

static enum MHD_Result queue_stream(struct lst_req *r, bool with_id)
{
	struct MHD_Response *resp = MHD_create_response_from_callback(
	    MHD_SIZE_UNKNOWN, STREAM_BLOCK, stream_read, r, stream_done);
	if (resp == NULL)
		return MHD_NO;
	r->refs++;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	/* a proxy in front must not hold progress back until the answer */
	MHD_add_response_header(resp, "X-Accel-Buffering", "no");
	if (with_id)
		MHD_add_response_header(resp, "Mcp-Session-Id", r->http_id);
	enum MHD_Result ok = MHD_queue_response(r->conn, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	lst_conn_read(r->lconn);
	r->streaming = true;
	r->last_write_ms = rpc_now_ms();
	lst_metrics_http(r->l->metrics, MHD_HTTP_OK);
	return ok;
}

/* ---- the first look at a request: the checks ---------------------------- */

static const char *header(struct lst_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

/* Why an MCP-Protocol-Version on a session's request is refused, or NULL
 * (none is fine). Caller frees. */
static char *version_refusal(const char *version)
{
	if (version == NULL || mcp_version_supported(version))
		return NULL;
	return xasprintf("MCP-Protocol-Version %.64s is not one mcpgate speaks (%s)", version,
	                 mcp_versions_text());
}

static bool accepts(const char *accept, const char *type, const char *family)
{
	if (accept == NULL)
		return true;
	return strcasestr(accept, type) != NULL || strcasestr(accept, family) != NULL ||
	       strstr(accept, "*/*") != NULL;
}

static enum MHD_Result open_get_stream(struct lst *l, struct lst_req *r)
{
	struct lst_client *c = lst_client_find(l, r->session_hdr);
	if (c == NULL)
		return refuse(r, MHD_HTTP_NOT_FOUND, RPC_SERVER_ERROR, "session",
		              "no such session (it ended, or never was): initialize again");
	/* a new GET replaces the last: a client that reconnects must not be
	 * refused for a connection it lost without our knowing */
	if (c->get != NULL) {
		struct lst_req *old = c->get;
		old->finished = true;
		lst_req_wake(old);
		lst_client_unlink(c, old);
	}
	r->kind = REQ_GET;
	mg_buf_init(&r->out, (size_t)l->limits->line_max + LST_QUEUED_BYTES_MAX + LST_STREAM_HIGH);
	lst_client_link(c, r);
	c->get = r;
	lst_client_stream_opened(c, r);
	/* the paused session may go on into the new stream */
	lst_client_after_run(c);
	return queue_stream(r, false);
}

static enum MHD_Result first_look(struct lst *l, struct MHD_Connection *conn, const char *url,
                                  const char *method, void **req_cls)
{
	struct lst_req *r = xcalloc(1, sizeof(*r));
	r->l = l;
	r->conn = conn;
	r->lconn = lst_conn_of(conn);
	r->refs = 1;
	r->kind = REQ_POST;
	mg_buf_init(&r->body, (size_t)l->limits->listen_body_max);
	mg_buf_init(&r->out, (size_t)l->limits->line_max + LST_STREAM_HIGH + 4096);
	r->all_next = l->reqs;
	if (l->reqs != NULL)
		l->reqs->all_prev = r;
	l->reqs = r;
	*req_cls = r;

	const char *why = lst_check_host(&l->address, header(r, MHD_HTTP_HEADER_HOST));
	if (why != NULL)
		return refuse(r, MHD_HTTP_FORBIDDEN, RPC_SERVER_ERROR, "host", "%s", why);
	if ((why = lst_check_origin(&l->address, header(r, MHD_HTTP_HEADER_ORIGIN))) != NULL)
		return refuse(r, MHD_HTTP_FORBIDDEN, RPC_SERVER_ERROR, "origin", "%s", why);
	const char *auth = header(r, MHD_HTTP_HEADER_AUTHORIZATION);
	if (!lst_token_matches(l->token, auth))
		return refuse(r, MHD_HTTP_UNAUTHORIZED, RPC_SERVER_ERROR, "token",
		              auth == NULL
		                  ? "this listener needs \"Authorization: Bearer TOKEN\", the "
		                    "token in mcpgate's state folder (listener-token)"
		                  : "the bearer token is not this listener's");
	r->token_ok = true;
	lst_conn_authed(r->lconn);

	bool get = strcmp(method, MHD_HTTP_METHOD_GET) == 0;
	if (strcmp(url, "/metrics") == 0 || strcmp(url, "/health") == 0) {
		if (!get)
			return refuse(r, MHD_HTTP_METHOD_NOT_ALLOWED, RPC_SERVER_ERROR, "get-only",
			              "%s answers GET only", url);
		r->kind = url[1] == 'm' ? REQ_METRICS : REQ_HEALTH;
		return MHD_YES;
	}
	if (strcmp(url, "/mcp") != 0)
		return refuse(r, MHD_HTTP_NOT_FOUND, RPC_SERVER_ERROR, "path",
		              "nothing is served at %.200s: the MCP endpoint is /mcp", url);

	const char *sid = header(r, "Mcp-Session-Id");
	r->session_hdr = sid != NULL ? xstrdup(sid) : NULL;
	const char *version = header(r, "MCP-Protocol-Version");
	bool post = strcmp(method, MHD_HTTP_METHOD_POST) == 0;
	bool modern_version = version != NULL && strcmp(version, MCP_PROTOCOL_MODERN) == 0;
	/* a POST without a session is looked at with its body: the era it
	 * speaks decides how its version is checked */
	cleanup_free char *bad_version =
	    (post && r->session_hdr == NULL) || modern_version ? NULL : version_refusal(version);
	if (bad_version != NULL)
		return refuse(r, MHD_HTTP_BAD_REQUEST, RPC_INVALID_REQUEST, "version", "%s",
		              bad_version);
	const char *accept = header(r, MHD_HTTP_HEADER_ACCEPT);
	r->accept_json = accepts(accept, "application/json", "application/*");
	r->accept_sse = accepts(accept, "text/event-stream", "text/*");

	if (post) {
		if (modern_version && r->session_hdr != NULL)
			return refuse(r, MHD_HTTP_BAD_REQUEST, RPC_INVALID_REQUEST, "version",
			              "MCP %s has no sessions: send its requests without "
			              "Mcp-Session-Id",
			              MCP_PROTOCOL_MODERN);
		const char *type = header(r, MHD_HTTP_HEADER_CONTENT_TYPE);
		if (type == NULL || strncasecmp(type, "application/json", 16) != 0)
			return refuse(r, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, RPC_INVALID_REQUEST,
			              "type", "a message is POSTed as application/json");
		if (!r->accept_json && !r->accept_sse)
			return refuse(r, MHD_HTTP_NOT_ACCEPTABLE, RPC_INVALID_REQUEST, "accept",
			              "Accept must list application/json and text/event-stream");
		const char *length = header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);
		uint64_t n = 0;
		if (length != NULL &&
		    mg_parse_u64(length, 0, UINT64_MAX, "length", &n, NULL) == 0 &&
		    n > l->limits->listen_body_max)
			return refuse(r, MHD_HTTP_CONTENT_TOO_LARGE, RPC_INVALID_REQUEST, "body",
			              "the body is %llu bytes; this listener takes %llu at most "
			              "(listen_body_max in config.toml)",
			              (unsigned long long)n,
			              (unsigned long long)l->limits->listen_body_max);
		r->kind = REQ_POST;
		return MHD_YES;
	}
	if (!get && strcmp(method, MHD_HTTP_METHOD_DELETE) != 0)
		return refuse(r, MHD_HTTP_METHOD_NOT_ALLOWED, RPC_SERVER_ERROR, "method",
		              "/mcp answers POST, GET and DELETE");
	/* 2026-07-28 has no GET stream (subscriptions/listen replaces it) and no
	 * session to DELETE; a 2025-11-25 client names its session */
	if (r->session_hdr == NULL || modern_version)
		return refuse(
		    r, MHD_HTTP_METHOD_NOT_ALLOWED, RPC_SERVER_ERROR, "sessionless",
		    "%.16s on /mcp needs a session: MCP %s has none (POST each request), "
		    "and a 2025-11-25 client sends the Mcp-Session-Id its initialize gave",
		    method, MCP_PROTOCOL_MODERN);
	if (get) {
		if (!accepts(accept, "text/event-stream", "text/event-stream"))
			return refuse(
			    r, MHD_HTTP_NOT_ACCEPTABLE, RPC_INVALID_REQUEST, "accept",
			    "a GET opens an event stream: Accept must list text/event-stream");
		return open_get_stream(l, r);
	}
	struct lst_client *c = lst_client_find(l, r->session_hdr);
	if (c == NULL)
		return refuse(r, MHD_HTTP_NOT_FOUND, RPC_SERVER_ERROR, "session",
		              "no such session (it ended, or never was)");
	lst_client_end(c, "the client ended it (DELETE)");
	return queue(r, MHD_HTTP_NO_CONTENT, NULL, "", 0, NULL, NULL);
}

/* A new session for a POST without Mcp-Session-Id: an initialize's, or the
 * listener's modern one; NULL when it cannot be, r then answered why */
static struct lst_client *open_session(struct lst *l, struct lst_req *r, bool modern,
                                       enum MHD_Result *result)
{
	if (l->stopping) {
		*result = refuse(r, MHD_HTTP_SERVICE_UNAVAILABLE, RPC_SERVER_ERROR, "stopping",
		                 "mcpgate is stopping");
		return NULL;
	}
	if (l->nclients >= l->limits->listen_clients) {
		*result = refuse(r, MHD_HTTP_SERVICE_UNAVAILABLE, RPC_SERVER_ERROR, "clients",
		                 "mcpgate serves %u client sessions already, its most "
		                 "(listen_clients in config.toml): end one, or raise it",
		                 l->limits->listen_clients);
		return NULL;
	}
	cleanup_err struct mg_err *err = NULL;
	struct lst_client *c = lst_client_new(l, modern, &err);
	if (c == NULL) {
		mg_warn("a new client session: %s", mg_err_msg(err));
		*result = refuse(r, MHD_HTTP_INTERNAL_SERVER_ERROR, RPC_SERVER_ERROR, "session",
		                 "mcpgate cannot start a session: %s", mg_err_msg(err));
	}
	return c;
}

/* The session reads one message a line: root again, compact. -1 when it
 * takes no more input now. */
static int send_message(struct lst *l, struct lst_client *c, const struct json_value *root)
{
	struct mg_buf line = MG_BUF_INIT((size_t)l->limits->listen_body_max + 64);
	int sent = json_generate(root, &line, NULL) == 0 && mg_buf_putc(&line, '\n', NULL) == 0
	               ? lst_client_send(c, line.data, line.len)
	               : -1;
	mg_buf_free(&line);
	return sent;
}

static enum MHD_Result refuse_busy(struct lst_req *r)
{
	return refuse(r, MHD_HTTP_SERVICE_UNAVAILABLE, RPC_SERVER_ERROR, "busy",
	              "the session takes no more input now (it is ending, or has a backlog)");
}

static bool inflight_full(struct lst *l, const struct lst_client *c)
{
	return c->inflight >= l->limits->listen_requests;
}

static enum MHD_Result refuse_inflight(struct lst_req *r, const struct lst_client *c)
{
	return refuse(r, MHD_HTTP_TOO_MANY_REQUESTS, RPC_SERVER_ERROR, "requests",
	              "this session has %u requests in flight, its most "
	              "(listen_requests in config.toml): wait for an answer",
	              c->inflight);
}

/* r's request went in: it waits in c for its answer */
static enum MHD_Result await_answer(struct lst_client *c, struct lst_req *r)
{
	c->inflight++;
	lst_client_link(c, r);
	if (c->queued.n > 0 && c->get == NULL && r->accept_sse)
		lst_client_stream_opened(c, r);
	if (r->want_stream)
		return queue_stream(r, r->is_initialize);
	MHD_suspend_connection(r->conn);
	r->suspended = true;
	return MHD_YES;
}

/* ---- 2026-07-28: no session, headers that mirror the body --------------- */

/* Whether a header value holds only what RFC 9110 allows in one */
static bool header_chars_ok(const char *v)
{
	for (const unsigned char *p = (const unsigned char *)v; *p != '\0'; p++)
		if (*p != '\t' && (*p < 0x20 || *p > 0x7e))
			return false;
	return true;
}

/* v without the spaces and tabs around it (RFC 9110's optional
 * whitespace, which is no part of a field value): its length in *len */
static const char *ows_trimmed(const char *v, size_t *len)
{
	size_t n = strlen(v);
	while (n > 0 && (*v == ' ' || *v == '\t'))
		v++, n--;
	while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	*len = n;
	return v;
}

/* The text header name (value v, present) stands for, in *text (owned by
 * *owned when it was decoded) and *len: v less its optional whitespace,
 * and a "=?base64?...?=" value (sentinel: Mcp-Name, Mcp-Param-*) decoded.
 * Why it cannot be read, or NULL. Caller frees. */
static char *header_text(const char *name, const char *v, bool sentinel, const char **text,
                         size_t *len, char **owned)
{
	if (!header_chars_ok(v))
		return xasprintf("Header mismatch: the %s header holds characters a header value "
		                 "may not",
		                 name);
	size_t vlen;
	const char *t = ows_trimmed(v, &vlen);
	*text = t;
	*len = vlen;
	if (!sentinel || vlen < 11 || strncmp(t, "=?base64?", 9) != 0 ||
	    strncmp(t + vlen - 2, "?=", 2) != 0)
		return NULL;
	*owned = xmalloc(vlen);
	if (sodium_base642bin((unsigned char *)*owned, vlen, t + 9, vlen - 11, NULL, len, NULL,
	                      sodium_base64_VARIANT_ORIGINAL) != 0)
		return xasprintf("Header mismatch: the %s header's =?base64?...?= value is not "
		                 "padded base64",
		                 name);
	*text = *owned;
	return NULL;
}

/* Why header name (value v, or NULL when absent) does not stand for the
 * body's string s, or NULL when it does. Mcp-Name may be "=?base64?...?="
 * (sentinel), decoded before it is compared. Caller frees. */
static char *header_mismatch(const char *name, const char *v, const struct json_value *s,
                             bool sentinel)
{
	if (v == NULL)
		return xasprintf("Header mismatch: the %s header is missing: MCP %s requires it on "
		                 "this request",
		                 name, MCP_PROTOCOL_MODERN);
	const char *text;
	size_t len;
	cleanup_free char *decoded = NULL;
	char *why = header_text(name, v, sentinel, &text, &len, &decoded);
	if (why != NULL)
		return why;
	if (s == NULL || s->kind != JSON_STRING)
		return xasprintf("Header mismatch: %s header value '%.100s' has no string in the "
		                 "body to match",
		                 name, v);
	if (s->u.str.len != len || memcmp(s->u.str.ptr, text, len) != 0)
		return xasprintf("Header mismatch: %s header value '%.100s' does not match body "
		                 "value '%.100s'",
		                 name, v, s->u.str.ptr);
	return NULL;
}

/* Why a modern request's _meta is not the envelope 2026-07-28 requires on
 * every request (its protocol version, a string, and the client's
 * capabilities, an object), or NULL. Answered -32602 with 400, before the
 * headers are compared with it. Caller frees. */
static char *modern_envelope_invalid(const struct rpc_msg *m)
{
	if (m->params != NULL && m->params->kind != JSON_OBJECT)
		return xasprintf("%.64s: params must be an object", m->method);
	const struct json_value *meta = json_get(m->params, "_meta");
	if (meta == NULL || meta->kind != JSON_OBJECT)
		return xasprintf("%.64s: params._meta is missing: MCP %s carries the protocol "
		                 "version and the client's capabilities in it on every request",
		                 m->method, MCP_PROTOCOL_MODERN);
	const struct json_value *version = json_get(meta, MCP_META_PROTOCOL_VERSION);
	if (version == NULL || version->kind != JSON_STRING)
		return xasprintf("%.64s: params._meta[\"" MCP_META_PROTOCOL_VERSION
		                 "\"] must be a string: MCP %s carries the protocol version on "
		                 "every request",
		                 m->method, MCP_PROTOCOL_MODERN);
	const struct json_value *caps = json_get(meta, MCP_META_CLIENT_CAPS);
	if (caps == NULL || caps->kind != JSON_OBJECT)
		return xasprintf("%.64s: params._meta[\"" MCP_META_CLIENT_CAPS
		                 "\"] must be an object: MCP %s carries the client's capabilities "
		                 "on every request",
		                 m->method, MCP_PROTOCOL_MODERN);
	return NULL;
}

/* Why a modern request's headers are not its body's, or NULL. Caller frees. */
static char *modern_headers_mismatch(struct lst_req *r, const struct rpc_msg *m)
{
	const struct json_value *meta = json_get(m->params, "_meta");
	char *why = header_mismatch("MCP-Protocol-Version", header(r, "MCP-Protocol-Version"),
	                            json_get(meta, MCP_META_PROTOCOL_VERSION), false);
	if (why != NULL)
		return why;
	struct json_value *method = json_new_string(m->method);
	why = header_mismatch("Mcp-Method", header(r, "Mcp-Method"), method, false);
	json_free(method);
	if (why != NULL)
		return why;
	const char *field =
	    strcmp(m->method, "tools/call") == 0 || strcmp(m->method, "prompts/get") == 0 ? "name"
	    : strcmp(m->method, "resources/read") == 0                                    ? "uri"
	                                                                                  : NULL;
	if (field == NULL)
		return NULL;
	return header_mismatch("Mcp-Name", header(r, "Mcp-Name"), json_get(m->params, field), true);
}

/* Whether header text t (len bytes) stands for the argument v of an
 * x-mcp-header parameter: a string as it is, a boolean as true or false, an
 * integer in decimal (compared as a number), another number as its text */
static bool param_matches(const struct json_value *v, const char *t, size_t len)
{
	switch (v->kind) {
	case JSON_STRING:
		return v->u.str.len == len && memcmp(v->u.str.ptr, t, len) == 0;
	case JSON_BOOL: {
		const char *b = v->u.boolean ? "true" : "false";
		return strlen(b) == len && memcmp(b, t, len) == 0;
	}
	case JSON_NUMBER: {
		int64_t body, head;
		cleanup_free char *copy = xstrndup(t, len);
		struct json_value *parsed =
		    json_number_valid(copy, len) ? json_new_number_text(copy, len) : NULL;
		bool same = parsed != NULL && json_number_int64(v, &body) == 0 &&
		                    json_number_int64(parsed, &head) == 0
		                ? body == head
		                : v->u.num.len == len && memcmp(v->u.num.ptr, t, len) == 0;
		json_free(parsed);
		return same;
	}
	case JSON_NULL:
	case JSON_ARRAY:
	case JSON_OBJECT:
		return false;
	}
	return false;
}

/* Why a modern tools/call's Mcp-Param-* headers are not the arguments its
 * tool's x-mcp-header annotations name (l->param_headers, from the
 * tools/list answers the listener passed on), or NULL. An argument absent
 * or null needs no header; one present needs it, and equal. A tool the
 * listener has listed no annotations of is not checked. Caller frees. */
static char *param_headers_mismatch(struct lst *l, struct lst_req *r, const struct rpc_msg *m)
{
	if (strcmp(m->method, "tools/call") != 0 || l->param_headers == NULL)
		return NULL;
	const char *tool = json_get_string(m->params, "name");
	const struct json_value *decls = tool != NULL ? json_get(l->param_headers, tool) : NULL;
	const struct json_value *args = json_get(m->params, "arguments");
	for (size_t i = 0; decls != NULL && i < decls->u.arr.len; i++) {
		const struct json_value *d = decls->u.arr.items[i];
		const char *property = json_get_string(d, "property");
		const struct json_value *v = json_get(args, property);
		if (v == NULL || v->kind == JSON_NULL)
			continue;
		char name[sizeof("Mcp-Param-") + LST_PARAM_HEADER_MAX];
		int n = snprintf(name, sizeof(name), "Mcp-Param-%s", json_get_string(d, "header"));
		if (n < 0 || (size_t)n >= sizeof(name))
			continue; /* lst_params_learn keeps no longer name */
		const char *h = header(r, name);
		if (h == NULL)
			return xasprintf("Header mismatch: the %s header is missing: tool %.100s "
			                 "mirrors its argument %.100s there (x-mcp-header)",
			                 name, tool, property);
		const char *text;
		size_t len;
		cleanup_free char *decoded = NULL;
		char *why = header_text(name, h, true, &text, &len, &decoded);
		if (why != NULL)
			return why;
		if (!param_matches(v, text, len))
			return xasprintf("Header mismatch: %s header value '%.100s' does not match "
			                 "the body's argument %.100s",
			                 name, h, property);
	}
	return NULL;
}

static enum MHD_Result refuse_version(struct lst_req *r, const struct rpc_msg *m,
                                      const char *version)
{
	struct json_value *supported = json_new_array();
	json_array_push(supported, json_new_string(MCP_PROTOCOL_MODERN));
	for (size_t i = 0; mcp_protocol_versions[i] != NULL; i++)
		json_array_push(supported, json_new_string(mcp_protocol_versions[i]));
	struct json_value *data = json_new_object();
	json_object_set(data, "supported", supported);
	json_object_set(data, "requested", json_new_string(version));
	enum MHD_Result ok = refuse_request(
	    r, m->id, data, MHD_HTTP_BAD_REQUEST, RPC_UNSUPPORTED_PROTOCOL_VERSION, "version",
	    "Unsupported protocol version \"%.64s\": mcpgate serves %s without a session, and %s "
	    "through initialize",
	    version, MCP_PROTOCOL_MODERN, mcp_versions_text());
	json_free(data);
	return ok;
}

/* A 2026-07-28 message: a request goes to the listener's one modern session
 * (every client with the token shares it) with an id, and a progress token,
 * of the listener's, unique in it; its answer comes back with the client's */
static enum MHD_Result post_modern(struct lst *l, struct lst_req *r, struct rpc_msg *m)
{
	if (m->kind == RPC_NOTIFICATION && strcmp(m->method, "notifications/cancelled") == 0)
		return refuse(
		    r, MHD_HTTP_BAD_REQUEST, RPC_INVALID_REQUEST, "cancelled",
		    "MCP %s over HTTP cancels a request by closing its response stream; "
		    "a notifications/cancelled names an id that every client here may use",
		    MCP_PROTOCOL_MODERN);
	if (m->kind == RPC_NOTIFICATION)
		/* 2026-07-28 defines no client notification over HTTP, and the
		 * session acts on none of this era but cancelled */
		return queue(r, MHD_HTTP_ACCEPTED, NULL, "", 0, NULL, NULL);
	if (m->kind != RPC_REQUEST)
		return refuse(r, MHD_HTTP_BAD_REQUEST, RPC_INVALID_REQUEST, "message",
		              "a client POSTs requests and notifications only");
	cleanup_free char *invalid = modern_envelope_invalid(m);
	if (invalid != NULL)
		return refuse_request(r, m->id, NULL, MHD_HTTP_BAD_REQUEST, RPC_INVALID_PARAMS,
		                      "envelope", "%s", invalid);
	/* the token is replaced by a number of the listener's below, and put
	 * back on the progress: what is no token must not become one */
	const struct json_value *asked = json_get(json_get(m->params, "_meta"), "progressToken");
	if (asked != NULL && asked->kind != JSON_STRING && asked->kind != JSON_NUMBER)
		return refuse_request(
		    r, m->id, NULL, MHD_HTTP_BAD_REQUEST, RPC_INVALID_PARAMS, "token",
		    "%.64s: params._meta.progressToken must be a string or a number", m->method);
	cleanup_free char *why = modern_headers_mismatch(r, m);
	if (why == NULL)
		why = param_headers_mismatch(l, r, m);
	if (why != NULL)
		return refuse_request(r, m->id, NULL, MHD_HTTP_BAD_REQUEST, LST_HEADER_MISMATCH,
		                      "header", "%s", why);
	const char *version = header(r, "MCP-Protocol-Version");
	if (strcmp(version, MCP_PROTOCOL_MODERN) != 0)
		return refuse_version(r, m, version);
	enum MHD_Result result = MHD_NO;
	struct lst_client *c = l->modern;
	if ((c == NULL || c->gone) && (c = open_session(l, r, true, &result)) == NULL)
		return result;
	if (inflight_full(l, c))
		return refuse_inflight(r, c);
	r->modern = true;
	r->lists_tools = strcmp(m->method, "tools/list") == 0;
	r->session_id = ++c->next_request_id;
	r->id = json_copy(m->id);
	r->id_key = rpc_id_key_int(r->session_id);
	json_object_set(m->root, "id", json_new_int(r->session_id));
	m->id = NULL; /* freed by the line above */
	/* m->params borrows from m->root, which is ours to change */
	struct json_value *meta = (struct json_value *)json_get(m->params, "_meta");
	const struct json_value *token = json_get(meta, "progressToken");
	if (token != NULL) {
		r->progress_token = json_copy(token);
		r->progress_key = rpc_id_key_int(r->session_id);
		json_object_set(meta, "progressToken", json_new_int(r->session_id));
	}
	if (send_message(l, c, m->root) < 0)
		return refuse_busy(r);
	return await_answer(c, r);
}

/* ---- a POSTed message --------------------------------------------------- */

static enum MHD_Result post_message(struct lst *l, struct lst_req *r)
{
	r->processed = true;
	if (r->body.len >= r->body.max && r->body.max > 0)
		return refuse(r, MHD_HTTP_CONTENT_TOO_LARGE, RPC_INVALID_REQUEST, "body",
		              "the body is over %llu bytes (listen_body_max in config.toml)",
		              (unsigned long long)l->limits->listen_body_max);
	struct rpc_msg m = {0};
	cleanup_err struct mg_err *err = NULL;
	if (rpc_parse(r->body.data != NULL ? r->body.data : "", r->body.len, 0, &m, &err) < 0) {
		bool json = m.root != NULL;
		rpc_msg_free(&m);
		return refuse(r, MHD_HTTP_BAD_REQUEST, json ? RPC_INVALID_REQUEST : RPC_PARSE_ERROR,
		              "message", "the body is not one JSON-RPC message: %s",
		              mg_err_msg(err));
	}
	bool initialize = m.kind == RPC_REQUEST && strcmp(m.method, "initialize") == 0;
	const char *version = header(r, "MCP-Protocol-Version");
	struct lst_client *c = NULL;
	cleanup_free char *key = NULL;
	enum MHD_Result result;
	if (m.kind == RPC_REQUEST || m.kind == RPC_NOTIFICATION) {
		/* the members this listener and the session read, of their types,
		 * before either reads one (the session's client peer checks by the
		 * same shapes, for stdio) */
		cleanup_free char *bad = mcp_shape_from_client(m.kind, m.method, m.params);
		if (bad != NULL) {
			result = refuse_request(r, m.id, NULL, MHD_HTTP_BAD_REQUEST,
			                        RPC_INVALID_PARAMS, "shape", "%s", bad);
			goto out;
		}
	}
	if (r->session_hdr == NULL && !initialize &&
	    (m.kind == RPC_REQUEST || m.kind == RPC_NOTIFICATION) &&
	    (gw_era_claims_modern(&m) ||
	     (version != NULL && strcmp(version, MCP_PROTOCOL_MODERN) == 0))) {
		result = post_modern(l, r, &m);
		goto out;
	}
	if (r->session_hdr == NULL && initialize && version != NULL &&
	    strcmp(version, MCP_PROTOCOL_MODERN) == 0) {
		result = refuse_request(r, m.id, NULL, MHD_HTTP_NOT_FOUND, RPC_METHOD_NOT_FOUND,
		                        "removed",
		                        "Method not found: MCP %s has no initialize (every request "
		                        "carries its version in _meta; server/discover tells what "
		                        "mcpgate serves), and %s open a session with it",
		                        MCP_PROTOCOL_MODERN, mcp_versions_text());
		goto out;
	}
	if (r->session_hdr == NULL) {
		cleanup_free char *why = version_refusal(version);
		if (why != NULL) {
			result = refuse(r, MHD_HTTP_BAD_REQUEST, RPC_INVALID_REQUEST, "version",
			                "%s", why);
			goto out;
		}
		if (!initialize) {
			result =
			    refuse(r, MHD_HTTP_BAD_REQUEST, RPC_INVALID_REQUEST, "session-id",
			           "this request has no Mcp-Session-Id header: initialize first "
			           "(or speak MCP %s: _meta \"io.modelcontextprotocol/"
			           "protocolVersion\" on every request)",
			           MCP_PROTOCOL_MODERN);
			goto out;
		}
		if ((c = open_session(l, r, false, &result)) == NULL)
			goto out;
		r->is_initialize = true;
	} else {
		if ((c = lst_client_find(l, r->session_hdr)) == NULL) {
			result =
			    refuse(r, MHD_HTTP_NOT_FOUND, RPC_SERVER_ERROR, "session",
			           "no such session (it ended, or never was): initialize again");
			goto out;
		}
		if (initialize) {
			result = refuse(r, MHD_HTTP_BAD_REQUEST, RPC_INVALID_REQUEST, "initialized",
			                "this session is initialized already; initialize without "
			                "Mcp-Session-Id for a new one");
			goto out;
		}
	}
	snprintf(r->http_id, sizeof(r->http_id), "%s", c->http_id);
	if (m.kind == RPC_REQUEST) {
		if (inflight_full(l, c)) {
			result = refuse_inflight(r, c);
			goto out;
		}
		key = rpc_id_key(m.id);
		for (struct lst_req *o = c->reqs; o != NULL && key != NULL; o = o->next) {
			if (o->kind == REQ_POST && !o->answered && o->id_key != NULL &&
			    strcmp(o->id_key, key) == 0) {
				result = refuse(r, MHD_HTTP_BAD_REQUEST, RPC_INVALID_REQUEST, "id",
				                "a request with this id is in flight already");
				goto out;
			}
		}
	}
	if (send_message(l, c, m.root) < 0) {
		result = refuse_busy(r);
		goto out;
	}
	if (m.kind != RPC_REQUEST) {
		if (m.kind == RPC_NOTIFICATION && strcmp(m.method, "notifications/cancelled") == 0)
			lst_client_cancelled(c, json_get(m.params, "requestId"));
		result = queue(r, MHD_HTTP_ACCEPTED, NULL, "", 0, NULL, NULL);
		goto out;
	}
	r->id = json_copy(m.id);
	r->id_key = steal_pointer(&key);
	const struct json_value *meta = json_get(m.params, "_meta");
	const struct json_value *token = json_get(meta, "progressToken");
	r->progress_key = token != NULL ? rpc_id_key(token) : NULL;
	result = await_answer(c, r);
out:
	rpc_msg_free(&m);
	return result;
}

/* A POST woken: its answer came, or something for its stream */
static enum MHD_Result post_woken(struct lst *l, struct lst_req *r)
{
	if (r->answer != NULL && !r->want_stream)
		return queue(r, r->answer_status != 0 ? r->answer_status : MHD_HTTP_OK,
		             "application/json", r->answer, r->answer_len,
		             r->is_initialize ? "Mcp-Session-Id" : NULL, r->http_id);
	if (r->want_stream || r->finished)
		return queue_stream(r, r->is_initialize);
	if (l->stopping)
		return refuse(r, MHD_HTTP_SERVICE_UNAVAILABLE, RPC_SERVER_ERROR, "stopping",
		              "mcpgate is stopping");
	MHD_suspend_connection(r->conn);
	r->suspended = true;
	return MHD_YES;
}

static enum MHD_Result serve_metrics(struct lst *l, struct lst_req *r)
{
	struct lst_gauges g = {.sessions_open = l->nclients,
	                       .conns_pending = l->pending,
	                       .conns_token = l->live - l->pending};
	for (const struct lst_client *c = l->clients; c != NULL; c = c->next)
		g.sessions_blocked += c->paused_reading;
	for (const struct lst_req *q = l->reqs; q != NULL; q = q->all_next)
		g.streams_open += q->streaming && !q->finished;
	struct mg_buf page = MG_BUF_INIT(METRICS_PAGE_MAX);
	cleanup_err struct mg_err *err = NULL;
	enum MHD_Result ok;
	if (lst_metrics_render(l->metrics, &g, &page, &err) < 0)
		ok = refuse(r, MHD_HTTP_INTERNAL_SERVER_ERROR, RPC_SERVER_ERROR, "metrics", "%s",
		            mg_err_msg(err));
	else
		ok = queue(r, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", page.data,
		           page.len, NULL, NULL);
	mg_buf_free(&page);
	return ok;
}

static enum MHD_Result serve_health(struct lst *l, struct lst_req *r)
{
	cleanup_free char *body =
	    xasprintf("{\"status\":\"%s\",\"sessions\":%zu,\"sessions_max\":%u}\n",
	              l->stopping ? "stopping" : "ok", l->nclients, l->limits->listen_clients);
	return queue(r, l->stopping ? MHD_HTTP_SERVICE_UNAVAILABLE : MHD_HTTP_OK,
	             "application/json", body, strlen(body), NULL, NULL);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
	(void)version;
	struct lst *l = cls;
	struct lst_req *r = *req_cls;
	if (r == NULL)
		return first_look(l, conn, url, method, req_cls);
	if (*upload_data_size > 0) {
		/* past the maximum the rest is read and dropped; 413 at the end */
		if (r->body.len < r->body.max)
			mg_buf_append(&r->body, upload_data,
			              *upload_data_size < r->body.max - r->body.len
			                  ? *upload_data_size
			                  : r->body.max - r->body.len,
			              NULL);
		*upload_data_size = 0;
		return MHD_YES;
	}
	/* the head and body are all in */
	lst_conn_read(r->lconn);
	switch (r->kind) {
	case REQ_POST:
		return r->processed ? post_woken(l, r) : post_message(l, r);
	case REQ_METRICS:
		return serve_metrics(l, r);
	case REQ_HEALTH:
		return serve_health(l, r);
	case REQ_GET:
	case REQ_DELETE:
	case REQ_ANSWERED:
		break;
	}
	return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)toe;
	/* the connection waits for its next request from now */
	lst_conn_request_done(lst_conn_of(conn));
	struct lst_req *r = *req_cls;
	if (r == NULL)
		return;
	*req_cls = NULL;
	if (r->client != NULL)
		lst_client_unlink(r->client, r);
	r->conn = NULL;
	r->suspended = false;
	req_unref(r);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	char text[512];
	vsnprintf(text, sizeof(text), fmt, ap);
	size_t n = strlen(text);
	while (n > 0 && text[n - 1] == '\n')
		text[--n] = '\0';
	mg_debug("libmicrohttpd: %s", text);
}

/* ---- the loop ------------------------------------------------------------ */

static void on_mhd_timer(struct loop *loop, void *data)
{
	(void)loop;
	struct lst *l = data;
	l->mhd_timer = NULL;
	lst_mhd_run(l);
}

void lst_mhd_run(struct lst *l)
{
	for (int round = 0; round < 8; round++) {
		l->kick = false;
		MHD_run(l->mhd);
		for (struct lst_client *c = l->clients; c != NULL; c = c->next)
			lst_client_after_run(c);
		if (!l->kick)
			break;
	}
	loop_timer_cancel(l->loop, l->mhd_timer);
	l->mhd_timer = NULL;
	MHD_UNSIGNED_LONG_LONG ms = 0;
	if (l->kick)
		l->mhd_timer = loop_timer_add(l->loop, 0, on_mhd_timer, l);
	else if (MHD_get_timeout(l->mhd, &ms) == MHD_YES)
		l->mhd_timer =
		    loop_timer_add(l->loop, ms > 60000 ? 60000 : (int64_t)ms, on_mhd_timer, l);
}

static void on_mhd_fd(struct loop *loop, int fd, uint32_t events, void *data)
{
	(void)loop;
	(void)fd;
	(void)events;
	lst_mhd_run(data);
}

static void on_tick(struct loop *loop, void *data)
{
	struct lst *l = data;
	int64_t now = rpc_now_ms();
	for (struct lst_client *c = l->clients; c != NULL; c = c->next)
		lst_client_tick(c, now);
	lst_conns_tick(l, now);
	l->tick = loop_timer_add(loop, 1000, on_tick, l);
	if (l->kick)
		lst_mhd_run(l);
}

void lst_maybe_done(struct lst *l)
{
	if (l->stopping && l->nclients == 0)
		loop_stop(l->loop);
}

static void on_signal(struct loop *loop, int signo, void *data)
{
	(void)loop;
	struct lst *l = data;
	if (!l->stopping)
		mg_info("%s: ending every session", strsignal(signo));
	l->stopping = true;
	for (struct lst_client *c = l->clients; c != NULL; c = c->next)
		lst_client_end(c, strsignal(signo));
	lst_maybe_done(l);
}

/* The places for connections with the token (what the clients' requests
 * and streams take), and for pending ones on top: together at most three
 * quarters of the fds the process may open */
static void connection_limits(struct lst *l)
{
	const struct cfg_mcp *m = l->limits;
	unsigned token = m->listen_clients * (m->listen_requests + 2) + 16;
	unsigned pending = LST_PENDING_MAX;
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
		if (token > rl.rlim_cur / 2)
			token = (unsigned)(rl.rlim_cur / 2);
		if (pending > rl.rlim_cur / 8)
			pending = (unsigned)(rl.rlim_cur / 8);
	}
	l->pending_max = pending > 8 ? pending : 8;
	l->peer_max = LST_PEER_PENDING_MAX < l->pending_max ? LST_PEER_PENDING_MAX : l->pending_max;
	l->conn_max = (token > 16 ? token : 16) + l->pending_max;
	l->read_timeout_ms = (int64_t)m->listen_read_timeout * 1000;
}

static void on_connection(void *cls, struct MHD_Connection *connection, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
	lst_conns_notify(cls, connection, socket_context, (int)toe);
}

static void lst_stop(struct lst *l)
{
	if (l->mhd != NULL) {
		/* no suspended connection may be left when the daemon stops */
		int64_t deadline = rpc_now_ms() + SHUTDOWN_MS;
		do {
			for (struct lst_req *r = l->reqs; r != NULL; r = r->all_next) {
				r->finished = true;
				lst_req_wake(r);
			}
			l->kick = false;
			MHD_run(l->mhd);
			bool waiting = false;
			for (struct lst_req *r = l->reqs; r != NULL; r = r->all_next)
				waiting |= r->suspended;
			if (!waiting && l->reqs == NULL)
				break;
			if (!waiting)
				usleep(10000);
		} while (rpc_now_ms() < deadline);
		for (struct lst_req *r = l->reqs; r != NULL; r = r->all_next)
			lst_req_wake(r);
		MHD_stop_daemon(l->mhd);
		l->mhd = NULL;
	}
	if (l->listen_fd >= 0)
		loop_unwatch(l->loop, l->listen_fd);
	lst_conns_free(l);
	if (l->listen_fd >= 0)
		close(l->listen_fd);
	while (l->clients != NULL) {
		struct lst_client *c = l->clients;
		l->clients = c->next;
		if (c->thread_running)
			pthread_join(c->thread, NULL);
		c->thread_running = false;
		lst_client_free(c);
	}
	/* after every session attached to them */
	gw_instances_free(l->instances);
	l->instances = NULL;
	loop_timer_cancel(l->loop, l->mhd_timer);
	loop_timer_cancel(l->loop, l->tick);
	if (l->mhd_fd >= 0)
		loop_unwatch(l->loop, l->mhd_fd);
	if (l->address.family == LST_UNIX && l->listen_fd >= 0)
		unlink(l->address.path);
	lst_token_free(l->token);
	json_free(l->param_headers);
	lst_metrics_free(l->metrics);
	loop_free(l->loop);
}

int lst_run(const struct lst_options *opt, struct mg_err **err)
{
	struct lst l = {.listen_fd = -1, .mhd_fd = -1, .opt = *opt, .address = *opt->address};
	l.limits = &opt->cfg->mcp;
	if ((l.loop = loop_new(err)) == NULL)
		return -1;
	int r = -1;
	cleanup_free char *url = NULL;
	cleanup_free char *token_path = opt->token_path != NULL
	                                    ? xstrdup(opt->token_path)
	                                    : xasprintf("%s/%s", opt->state_dir, LST_TOKEN_FILE);
	bool created = false;
	if (lst_token_load(token_path, &l.token, &created, err) < 0)
		goto out;
	if (created)
		mg_info(
		    "made the listener's token in %s (0600); clients send it as \"Authorization: "
		    "Bearer TOKEN\"",
		    token_path);
	if (lst_address_bind(&l.address, &l.listen_fd, err) < 0)
		goto out;
	l.metrics = lst_metrics_new();
	for (size_t i = 0; i < opt->cfg->nservers && l.instances == NULL; i++)
		if (opt->cfg->servers[i].instance != CFG_INSTANCE_SESSION) {
			struct session_options base = {
			    .cfg = opt->cfg,
			    .driver = opt->driver,
			    .state_dir = opt->state_dir,
			    .data_dir = opt->data_dir,
			    .workspace = opt->workspace,
			    .owner = opt->owner,
			    .watch_config = opt->watch_config,
			};
			l.instances = gw_instances_new(&base);
		}
	/* the listener accepts, so that it decides who is let in (conns.c);
	 * libmicrohttpd's limit leaves room for what is closing */
	connection_limits(&l);
	l.mhd = MHD_start_daemon(
	    MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG | MHD_USE_NO_LISTEN_SOCKET,
	    0, NULL, NULL, on_request, &l, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, &l,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, &l, MHD_OPTION_NOTIFY_CONNECTION,
	    on_connection, &l, MHD_OPTION_CONNECTION_LIMIT, l.conn_max + l.pending_max,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONN_TIMEOUT_S, MHD_OPTION_END);
	if (l.mhd == NULL) {
		mg_err_set(err, "libmicrohttpd cannot start on %s", opt->address->host);
		goto out;
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(l.mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (info == NULL) {
		mg_err_set(err, "libmicrohttpd has no epoll fd");
		goto out;
	}
	l.mhd_fd = info->epoll_fd;
	if (loop_watch(l.loop, l.mhd_fd, EPOLLIN, on_mhd_fd, &l, err) < 0) {
		l.mhd_fd = -1;
		goto out;
	}
	if (loop_watch(l.loop, l.listen_fd, EPOLLIN, lst_conns_accept, &l, err) < 0)
		goto out;
	loop_on_signal(l.loop, on_signal, &l);
	l.tick = loop_timer_add(l.loop, 1000, on_tick, &l);
	url = lst_address_url(&l.address);
	if (l.address.family == LST_UNIX)
		mg_info("listening on unix:%s, %s", l.address.path, url);
	else
		mg_info("listening on %s", url);
	mg_info("every request needs \"Authorization: Bearer TOKEN\", the token in %s", token_path);
	lst_mhd_run(&l);
	r = loop_run(l.loop, err);
out:
	lst_stop(&l);
	return r;
}
