/* The bridge: newline JSON-RPC on a socketpair on one side, MCP streamable
 * HTTP through libcurl's multi interface on the other, all on the caller's
 * event loop (libcurl's sockets and timer are the loop's fd watches and
 * timers; nothing here blocks but remote_bridge_end(), which runs off the
 * loop's thread).
 *
 * Every line the gateway writes becomes one exchange (struct xfer): a POST,
 * and for a request whose event stream ends early, GETs with Last-Event-ID
 * until its response comes. Each request gets exactly one response line back:
 * the server's, or an error response saying what went wrong. Requests and
 * notifications the server sends in a stream are written to the gateway as
 * they come.
 *
 * The session: the gateway's initialize opens it (its params are kept); the
 * Mcp-Session-Id and the protocol version of its answer go on every later
 * request. A 404 to a request that carried the id means the session ended:
 * one new session is started (initialize with the kept params, then
 * notifications/initialized), every message that met the end waits for it,
 * then each is sent once more. While a session is being opened (the
 * gateway's initialize, its notifications/initialized, or a renewal) other
 * messages wait in b->queue, so the server sees them in a valid order.
 *
 * A request whose _meta names io.modelcontextprotocol/protocolVersion is of
 * MCP 2026-07-28 (the gateway's server/discover probe, and every request to
 * a server of that era): it carries no session, gets that binding's headers
 * (headers.c), is never resumed, and an error status with a JSON-RPC error
 * body is answered with that error. docs/2026-12-01-remote-eras.md. */
#define _GNU_SOURCE
#include "internal/remote/remote.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <curl/curl.h>
#include <sodium.h>

#include "internal/base/cleanup.h"
#include "internal/base/log.h"
#include "internal/base/xalloc.h"
#include "internal/json/json.h"
#include "internal/jsonrpc/jsonrpc.h"

#define CONNECT_TIMEOUT_DEFAULT_MS 10000
#define REQUEST_TIMEOUT_DEFAULT_MS 300000
#define RESPONSE_MAX_DEFAULT       ((size_t)16 << 20)
#define EXCERPT_MAX                200 /* bytes of an error body shown */
#define OUT_MAX                    RPC_WRITE_QUEUE_MAX_DEFAULT
#define RETRY_DEFAULT_MS           1000 /* an event stream that set no retry: */
#define VERSION_MAX                64
#define CONNECTIONS_MAX            64
#define READS_PER_ROUND            16
#define TOOLS_MAX                  4096 /* tools with x-mcp-header kept */
/* 2026-07-28's UnsupportedProtocolVersionError */
#define UNSUPPORTED_VERSION   (-32022)
#define META_PROTOCOL_VERSION "io.modelcontextprotocol/protocolVersion"

enum xfer_role {
	ROLE_GATEWAY,     /* a line the gateway wrote */
	ROLE_RENEW,       /* our initialize for a new session */
	ROLE_RENEW_NOTIFY /* our notifications/initialized after it */
};

enum body_mode {
	BODY_UNSET,   /* nothing of the body seen yet */
	BODY_JSON,    /* the answer to a request: one JSON-RPC message */
	BODY_SSE,     /* an event stream */
	BODY_EXCERPT, /* an error: its first bytes, for the message */
	BODY_DISCARD, /* the answer to a notification or a response */
};

struct xfer {
	struct remote_bridge *b;
	struct xfer *prev, *next;
	bool queued; /* in b->queue, else in b->active */
	enum xfer_role role;

	/* the message */
	char *body; /* the JSON text, without its newline */
	size_t body_len;
	char *method;          /* NULL for a response */
	struct json_value *id; /* requests only */
	char *id_key;          /* rpc_id_key(id) */
	bool is_initialize;    /* the gateway's initialize */
	bool is_initialized;   /* the gateway's notifications/initialized */
	bool is_response;      /* the gateway's answer to a server's request */
	/* a request of MCP 2026-07-28 (its _meta names the version): no
	 * session, no resumption, the request headers in modern_headers */
	bool modern;
	char *version;              /* modern: the version its _meta names */
	struct strv modern_headers; /* modern: MCP-Protocol-Version, Mcp-Method... */
	char *refused;              /* modern: why it cannot be sent (a header) */
	bool version_retried;       /* modern: sent again after -32022 */
	bool lists_tools;           /* modern tools/list: its tools are read */
	bool first_page;            /* ...and it is the first page (no cursor) */
	int posts;                  /* POSTs made */
	int64_t deadline;           /* the whole exchange, resumptions included */
	uint64_t generation;        /* b->generation when last sent */
	bool carried_session;       /* the last request held Mcp-Session-Id */
	bool resuming;              /* the current request is a GET with Last-Event-ID */
	bool got_response;          /* its response (or an error for it) was written */
	bool renewed;               /* ROLE_RENEW: the new session is adopted */
	int resumes;
	struct loop_timer *resume_timer;

	/* the current HTTP request */
	CURL *easy;
	struct curl_slist *headers;
	char errbuf[CURL_ERROR_SIZE];
	enum body_mode mode;
	struct mg_buf answer; /* BODY_JSON: the body; BODY_EXCERPT: its start */
	size_t discarded;
	struct sse_parser sse;
	bool sse_on;
	char *session_hdr; /* the Mcp-Session-Id of this answer */
	bool session_bad;  /* one that is not 1-1024 visible ASCII characters */
	bool cut;          /* the transfer was ended on purpose by a callback */
	char *fail;        /* why this answer failed, found by a callback */
};

struct remote_bridge {
	struct loop *loop;
	char *server;
	char *url;
	char *ca_file;
	bool plain_http;
	char *cred_header; /* "Name: value" in sodium_malloc memory, or NULL */
	size_t cred_header_len;
	size_t cred_value_at; /* where the value starts in it */
	long connect_timeout_ms, request_timeout_ms;
	size_t response_max;

	int fd;
	uint32_t fd_events;
	bool gateway_closed;
	struct rpc_reader in;
	struct mg_buf out; /* lines for the gateway not yet written */
	size_t out_off;

	CURLM *multi;
	struct loop_timer *curl_timer;
	struct xfer *active; /* exchanges under way (or waiting to resume) */
	struct xfer *queue, *queue_tail;

	char *session_id;
	char *protocol_version;
	uint64_t generation; /* a new one with each session */
	struct json_value *init_params;
	bool have_init;
	bool opening;              /* the gateway's initialize is out */
	bool initialized_inflight; /* its notifications/initialized is out */
	bool renewing;             /* a new session is being opened */
	bool need_renewal;         /* the last renewal failed: try with the next message */
	uint64_t renewals;

	/* the server answered a request of 2026-07-28: no notifications or
	 * responses go to it (that era has none over HTTP) */
	bool modern;
	/* the x-mcp-header parameters of its tools, from its tools/list */
	struct remote_tool_params **tools;
	size_t ntools;
};

/* ---- libcurl, once per process ------------------------------------------ */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result;

static void curl_init_once(void)
{
	curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ---- small helpers -------------------------------------------------------- */

static int64_t now_ms(void)
{
	return rpc_now_ms();
}

static bool visible_ascii(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
			return false;
	return true;
}

/* Whether a Content-Type names type (parameters and case aside). */
static bool media_is(const char *ct, const char *type)
{
	if (ct == NULL)
		return false;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	size_t n = strlen(type);
	if (strncasecmp(ct, type, n) != 0)
		return false;
	char c = ct[n];
	return c == '\0' || c == ';' || c == ' ' || c == '\t';
}

/* Text from the server for a message: the credential's value cut out, then
 * only printable ASCII, at most EXCERPT_MAX bytes. Allocated; NULL when
 * nothing is left. */
static char *excerpt(const struct remote_bridge *b, const char *data, size_t len)
{
	if (data == NULL || len == 0)
		return NULL;
	struct mg_buf clean = MG_BUF_INIT(4 * EXCERPT_MAX);
	const char *value = b->cred_header != NULL ? b->cred_header + b->cred_value_at : NULL;
	size_t value_len = value != NULL ? b->cred_header_len - b->cred_value_at : 0;
	for (size_t i = 0; i < len && clean.len < EXCERPT_MAX;) {
		if (value_len > 0 && len - i >= value_len &&
		    sodium_memcmp(data + i, value, value_len) == 0) {
			mg_buf_puts(&clean, "[redacted]", NULL);
			i += value_len;
			continue;
		}
		unsigned char c = (unsigned char)data[i++];
		mg_buf_putc(&clean, c >= 0x20 && c < 0x7f ? (char)c : (c == '\n' ? ' ' : '?'),
		            NULL);
	}
	while (clean.len > 0 && clean.data[clean.len - 1] == ' ')
		clean.len--;
	if (clean.len == 0) {
		mg_buf_free(&clean);
		return NULL;
	}
	clean.data[clean.len] = '\0';
	return mg_buf_steal(&clean, NULL);
}

static void set_fail(struct xfer *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_fail(struct xfer *x, const char *fmt, ...)
{
	if (x->fail != NULL)
		return; /* the first reason stands */
	va_list ap;
	va_start(ap, fmt);
	x->fail = xvasprintf(fmt, ap);
	va_end(ap);
}

/* ---- the gateway's side: lines out ------------------------------------- */

static void gateway_gone(struct remote_bridge *b);

static void update_watch(struct remote_bridge *b)
{
	if (b->gateway_closed)
		return;
	uint32_t want = EPOLLIN | (b->out.len > b->out_off ? EPOLLOUT : 0);
	if (want != b->fd_events && loop_modify(b->loop, b->fd, want, NULL) == 0)
		b->fd_events = want;
}

static void flush_out(struct remote_bridge *b)
{
	while (!b->gateway_closed && b->out.len > b->out_off) {
		ssize_t n = write(b->fd, b->out.data + b->out_off, b->out.len - b->out_off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			mg_debug("server %s: the gateway's end is closed: %s", b->server,
			         strerror(errno));
			gateway_gone(b);
			return;
		}
		b->out_off += (size_t)n;
	}
	if (b->out_off == b->out.len) {
		mg_buf_reset(&b->out);
		b->out_off = 0;
	}
	update_watch(b);
}

/* Queue one complete line for the gateway and write what the socket takes. */
static void write_line(struct remote_bridge *b, const char *line, size_t len)
{
	if (b->gateway_closed)
		return;
	if (b->out_off > 0 && b->out_off >= b->out.len / 2) {
		mg_buf_consume(&b->out, b->out_off);
		b->out_off = 0;
	}
	if (mg_buf_append(&b->out, line, len, NULL) < 0) {
		mg_warn("server %s: the gateway is not reading; a message of %zu bytes from the "
		        "server was dropped",
		        b->server, len);
		return;
	}
	flush_out(b);
}

/* A message from the server, written as one compact line. */
static void forward_json(struct remote_bridge *b, const struct json_value *root)
{
	struct mg_buf line = MG_BUF_INIT(2 * b->response_max + 64);
	struct mg_err *err = NULL;
	if (json_generate(root, &line, &err) < 0 || mg_buf_putc(&line, '\n', &err) < 0) {
		mg_warn("server %s: a message from the server cannot be passed on: %s", b->server,
		        mg_err_msg(err));
		mg_err_free(err);
	} else {
		write_line(b, line.data, line.len);
	}
	mg_buf_free(&line);
}

static void forward(struct remote_bridge *b, const struct rpc_msg *msg)
{
	forward_json(b, msg->root);
}

/* The one answer a gateway request gets when the server gave none. */
static void answer_error(struct remote_bridge *b, struct xfer *x, const char *text)
{
	if (x->role != ROLE_GATEWAY || x->id == NULL || x->got_response)
		return;
	x->got_response = true;
	struct mg_buf line = MG_BUF_INIT(64 << 10);
	struct mg_err *err = NULL;
	if (rpc_build_error(x->id, RPC_SERVER_ERROR, text, NULL, &line, &err) < 0) {
		mg_warn("server %s: %s", b->server, mg_err_msg(err));
		mg_err_free(err);
	} else {
		write_line(b, line.data, line.len);
	}
	mg_buf_free(&line);
}

/* ---- exchanges ------------------------------------------------------------ */

static void list_remove(struct xfer **head, struct xfer *x)
{
	if (x->prev != NULL)
		x->prev->next = x->next;
	else if (*head == x)
		*head = x->next;
	if (x->next != NULL)
		x->next->prev = x->prev;
	x->prev = x->next = NULL;
}

static void unlink_xfer(struct remote_bridge *b, struct xfer *x)
{
	if (x->queued) {
		if (b->queue_tail == x)
			b->queue_tail = x->prev;
		list_remove(&b->queue, x);
		x->queued = false;
	} else {
		list_remove(&b->active, x);
	}
}

static void enqueue(struct remote_bridge *b, struct xfer *x)
{
	x->queued = true;
	x->next = NULL;
	x->prev = b->queue_tail;
	if (b->queue_tail != NULL)
		b->queue_tail->next = x;
	else
		b->queue = x;
	b->queue_tail = x;
}

static void add_active(struct remote_bridge *b, struct xfer *x)
{
	x->queued = false;
	x->prev = NULL;
	x->next = b->active;
	if (b->active != NULL)
		b->active->prev = x;
	b->active = x;
}

/* Free a header list, wiping the credential's line first. */
static void free_headers(struct remote_bridge *b, struct curl_slist *h)
{
	for (struct curl_slist *p = h; p != NULL; p = p->next)
		if (b->cred_header != NULL && p->data != NULL &&
		    strncmp(p->data, b->cred_header, b->cred_value_at) == 0)
			sodium_memzero(p->data, strlen(p->data));
	curl_slist_free_all(h);
}

/* End the current HTTP request of x, if any (outside libcurl's callbacks). */
static void detach(struct remote_bridge *b, struct xfer *x)
{
	if (x->easy != NULL) {
		curl_multi_remove_handle(b->multi, x->easy);
		curl_easy_cleanup(x->easy);
		x->easy = NULL;
	}
	free_headers(b, x->headers);
	x->headers = NULL;
}

static void reset_answer(struct xfer *x)
{
	x->mode = BODY_UNSET;
	mg_buf_free(&x->answer);
	x->discarded = 0;
	free(x->session_hdr);
	x->session_hdr = NULL;
	x->session_bad = false;
	x->cut = false;
	free(x->fail);
	x->fail = NULL;
	x->errbuf[0] = '\0';
}

static void xfer_free(struct remote_bridge *b, struct xfer *x)
{
	detach(b, x);
	loop_timer_cancel(b->loop, x->resume_timer);
	reset_answer(x);
	if (x->sse_on)
		sse_free(&x->sse);
	free(x->body);
	free(x->method);
	json_free(x->id);
	free(x->id_key);
	free(x->version);
	strv_free(&x->modern_headers);
	free(x->refused);
	free(x);
}

static const struct remote_tool_params *tool_params(const struct remote_bridge *b, const char *tool)
{
	for (size_t i = 0; i < b->ntools; i++)
		if (strcmp(b->tools[i]->tool, tool) == 0)
			return b->tools[i];
	return NULL;
}

static void clear_tools(struct remote_bridge *b)
{
	for (size_t i = 0; i < b->ntools; i++)
		remote_tool_params_free(b->tools[i]);
	free(b->tools);
	b->tools = NULL;
	b->ntools = 0;
}

/* The headers 2026-07-28 puts on a request (basic/transports, "Request
 * Metadata"): the version its _meta names, its method, the name or uri of a
 * call, read or get, and a call's Mcp-Param-* from the tool's x-mcp-header
 * parameters. A value that cannot go in its header leaves x->refused. */
static void modern_headers(struct remote_bridge *b, struct xfer *x, const struct rpc_msg *msg)
{
	strv_pushf(&x->modern_headers, "MCP-Protocol-Version: %s", x->version);
	cleanup_free char *method = remote_header_value(msg->method, strlen(msg->method));
	strv_pushf(&x->modern_headers, "Mcp-Method: %s", method);
	const char *name_field =
	    strcmp(msg->method, "tools/call") == 0 || strcmp(msg->method, "prompts/get") == 0
	        ? "name"
	    : strcmp(msg->method, "resources/read") == 0 ? "uri"
	                                                 : NULL;
	const struct json_value *name =
	    name_field != NULL ? json_get(msg->params, name_field) : NULL;
	if (name != NULL && name->kind == JSON_STRING) {
		cleanup_free char *v = remote_header_value(name->u.str.ptr, name->u.str.len);
		strv_pushf(&x->modern_headers, "Mcp-Name: %s", v);
	}
	if (strcmp(msg->method, "tools/list") == 0) {
		x->lists_tools = true;
		x->first_page = json_get(msg->params, "cursor") == NULL;
	}
	if (strcmp(msg->method, "tools/call") != 0 || name == NULL || name->kind != JSON_STRING)
		return;
	cleanup_free char *why = NULL;
	if (remote_param_headers(tool_params(b, name->u.str.ptr),
	                         json_get(msg->params, "arguments"), &x->modern_headers, &why) < 0)
		x->refused = xasprintf("server %s, tool %s: %s; the call was not sent", b->server,
		                       name->u.str.ptr, why);
}

/* An exchange for one message (the line without its newline); NULL when it
 * is not a JSON-RPC message. */
static struct xfer *xfer_new(struct remote_bridge *b, enum xfer_role role, const char *text,
                             size_t len, struct rpc_msg *msg)
{
	struct mg_err *err = NULL;
	if (rpc_parse(text, len, 0, msg, &err) < 0) {
		mg_warn("server %s: the gateway wrote a line that is not a JSON-RPC message (%s); "
		        "dropped",
		        b->server, mg_err_msg(err));
		mg_err_free(err);
		rpc_msg_free(msg);
		return NULL;
	}
	struct xfer *x = xcalloc(1, sizeof(*x));
	x->b = b;
	x->role = role;
	x->body = xmemdup(text, len);
	x->body_len = len;
	x->method = msg->method != NULL ? xstrdup(msg->method) : NULL;
	if (msg->kind == RPC_REQUEST) {
		x->id = json_copy(msg->id);
		x->id_key = rpc_id_key(msg->id);
	}
	x->is_initialize = role == ROLE_GATEWAY && msg->kind == RPC_REQUEST &&
	                   strcmp(msg->method, "initialize") == 0;
	x->is_initialized = role == ROLE_GATEWAY && msg->kind == RPC_NOTIFICATION &&
	                    strcmp(msg->method, "notifications/initialized") == 0;
	x->is_response = msg->kind == RPC_RESULT || msg->kind == RPC_ERROR;
	const struct json_value *version =
	    msg->kind == RPC_REQUEST
	        ? json_get(json_get(msg->params, "_meta"), META_PROTOCOL_VERSION)
	        : NULL;
	if (version != NULL && version->kind == JSON_STRING && version->u.str.len > 0 &&
	    version->u.str.len <= VERSION_MAX &&
	    visible_ascii(version->u.str.ptr, version->u.str.len)) {
		x->modern = true;
		x->version = xstrdup(version->u.str.ptr);
		modern_headers(b, x, msg);
	}
	x->deadline = now_ms() + b->request_timeout_ms;
	mg_buf_init(&x->answer, 0);
	return x;
}

static bool gate_closed(const struct remote_bridge *b)
{
	return b->opening || b->initialized_inflight || b->renewing;
}

static void start_request(struct remote_bridge *b, struct xfer *x);
static void start_renewal(struct remote_bridge *b);

/* Send what waited, in order, while nothing holds the gate. */
static void drain(struct remote_bridge *b)
{
	while (!b->gateway_closed && !gate_closed(b) && b->queue != NULL) {
		struct xfer *x = b->queue;
		unlink_xfer(b, x);
		start_request(b, x);
	}
}

static void renewal_failed(struct remote_bridge *b, const char *why);
static void renewal_opened(struct remote_bridge *b);

/* x is over: why NULL for success, else the reason, which becomes the
 * request's error response. */
static void end_xfer(struct remote_bridge *b, struct xfer *x, const char *why)
{
	unlink_xfer(b, x);
	enum xfer_role role = x->role;
	bool renewed = x->renewed;
	if (why != NULL) {
		if (x->id != NULL)
			mg_debug("server %s: %s failed: %s", b->server,
			         x->method != NULL ? x->method : "a request", why);
		if (role == ROLE_GATEWAY && x->id != NULL)
			answer_error(b, x, why);
		else if (role == ROLE_GATEWAY)
			mg_warn("server %s: %s was not delivered: %s", b->server,
			        x->method != NULL ? x->method : "a response", why);
	}
	if (x->is_initialize)
		b->opening = false;
	if (x->is_initialized)
		b->initialized_inflight = false;
	xfer_free(b, x);
	if (role == ROLE_RENEW) {
		if (why == NULL && renewed)
			renewal_opened(b);
		else
			renewal_failed(b, why != NULL ? why : "initialize gave no result");
	} else if (role == ROLE_RENEW_NOTIFY) {
		if (why != NULL)
			mg_warn("server %s: notifications/initialized of the new session: %s",
			        b->server, why);
		b->renewing = false;
		mg_info("server %s: a new session is open", b->server);
	}
	drain(b);
}

/* Drop x without answering (the gateway cancelled it or went away). */
static void abort_xfer(struct remote_bridge *b, struct xfer *x)
{
	unlink_xfer(b, x);
	if (x->is_initialize)
		b->opening = false;
	if (x->is_initialized)
		b->initialized_inflight = false;
	if (x->role != ROLE_GATEWAY)
		b->renewing = false;
	xfer_free(b, x);
}

static void abort_all(struct remote_bridge *b)
{
	while (b->active != NULL)
		abort_xfer(b, b->active);
	while (b->queue != NULL)
		abort_xfer(b, b->queue);
}

/* ---- the session ---------------------------------------------------------- */

/* An initialize result arrived on x: its session becomes the bridge's.
 * Returns -1 with *why (static text) when it cannot be used. */
static int adopt_session(struct remote_bridge *b, struct xfer *x, const struct json_value *result,
                         const char **why)
{
	if (x->session_bad) {
		*why = "its Mcp-Session-Id is not 1-1024 visible ASCII characters";
		return -1;
	}
	free(b->session_id);
	b->session_id = steal_pointer(&x->session_hdr);
	free(b->protocol_version);
	b->protocol_version = NULL;
	const struct json_value *v = json_get(result, "protocolVersion");
	if (v != NULL && v->kind == JSON_STRING && v->u.str.len > 0 &&
	    v->u.str.len <= VERSION_MAX && visible_ascii(v->u.str.ptr, v->u.str.len))
		b->protocol_version = xstrdup(v->u.str.ptr);
	b->generation++;
	b->need_renewal = false;
	mg_debug("server %s: session %s, protocol version %s", b->server,
	         b->session_id != NULL ? "given" : "not given",
	         b->protocol_version != NULL ? b->protocol_version : "(none)");
	return 0;
}

static void start_renewal(struct remote_bridge *b)
{
	if (b->renewing)
		return;
	b->renewing = true;
	b->need_renewal = false;
	free(b->session_id);
	b->session_id = NULL;
	b->generation++; /* what carried the old id is stale from here on */
	b->renewals++;
	mg_info("server %s: its session ended (HTTP 404); starting a new one", b->server);
	cleanup_free char *id_text = xasprintf("mcpgate-renew-%" PRIu64, b->renewals);
	struct json_value *id = json_new_string(id_text);
	struct mg_buf line = MG_BUF_INIT((size_t)64 << 20);
	struct mg_err *err = NULL;
	struct rpc_msg msg;
	memset(&msg, 0, sizeof(msg));
	struct xfer *x = NULL;
	if (rpc_build_request(id, "initialize", b->init_params, &line, &err) == 0)
		x = xfer_new(b, ROLE_RENEW, line.data, line.len - 1, &msg);
	rpc_msg_free(&msg);
	json_free(id);
	mg_buf_free(&line);
	if (x == NULL) {
		renewal_failed(b, err != NULL ? mg_err_msg(err) : "cannot build initialize");
		mg_err_free(err);
		return;
	}
	start_request(b, x);
}

static void renewal_opened(struct remote_bridge *b)
{
	struct mg_buf line = MG_BUF_INIT(1024);
	struct rpc_msg msg;
	memset(&msg, 0, sizeof(msg));
	struct xfer *x = NULL;
	if (rpc_build_notification("notifications/initialized", NULL, &line, NULL) == 0)
		x = xfer_new(b, ROLE_RENEW_NOTIFY, line.data, line.len - 1, &msg);
	rpc_msg_free(&msg);
	mg_buf_free(&line);
	if (x == NULL) {
		b->renewing = false;
		return;
	}
	start_request(b, x);
}

/* Every message that waited for the new session gets an error instead. */
static void renewal_failed(struct remote_bridge *b, const char *why)
{
	mg_warn("server %s: a new session could not be started: %s", b->server, why);
	cleanup_free char *text = xasprintf("the server's session ended (HTTP 404) and a new one "
	                                    "could not be started: %s",
	                                    why);
	/* b->renewing holds the gate shut while the queue is answered */
	while (b->queue != NULL)
		end_xfer(b, b->queue, text);
	b->renewing = false;
	b->need_renewal = true;
}

/* A 404 to a request that carried the session id: the session is over. */
static void session_expired(struct remote_bridge *b, struct xfer *x)
{
	if (x->role != ROLE_GATEWAY) {
		end_xfer(b, x, "HTTP 404 while starting a new session");
		return;
	}
	if (x->posts >= 2) {
		end_xfer(b, x,
		         "HTTP 404: the server ended the session again right after a new one "
		         "was started");
		return;
	}
	if (x->generation == b->generation)
		start_renewal(b);
	if (x->is_initialized) {
		end_xfer(b, x, NULL); /* the new session sends its own */
		return;
	}
	/* once more, from the start, in the new session */
	unlink_xfer(b, x);
	reset_answer(x);
	if (x->sse_on) {
		sse_free(&x->sse);
		x->sse_on = false;
	}
	x->resumes = 0;
	x->resuming = false;
	enqueue(b, x);
	drain(b);
}

/* ---- what the server sends ------------------------------------------------ */

static bool same_id(const struct xfer *x, const struct json_value *id)
{
	if (x->id_key == NULL || id == NULL)
		return false;
	cleanup_free char *key = rpc_id_key(id);
	return key != NULL && strcmp(key, x->id_key) == 0;
}

/* A 2026-07-28 tools/list result: each tool's x-mcp-header parameters are
 * kept for its calls, and a tool whose annotations break the rules is left
 * out of the list, with a warning (basic/transports, "Schema Extension"). */
static void take_tools(struct remote_bridge *b, struct xfer *x, const struct rpc_msg *msg)
{
	struct json_value *root = json_copy(msg->root);
	struct json_value *tools = NULL;
	struct json_value *result = NULL;
	for (size_t i = 0; root->kind == JSON_OBJECT && i < root->u.obj.len; i++)
		if (strcmp(root->u.obj.items[i].key, "result") == 0)
			result = root->u.obj.items[i].value;
	for (size_t i = 0; result != NULL && result->kind == JSON_OBJECT && i < result->u.obj.len;
	     i++)
		if (strcmp(result->u.obj.items[i].key, "tools") == 0)
			tools = result->u.obj.items[i].value;
	if (x->first_page)
		clear_tools(b);
	size_t keep = 0;
	for (size_t i = 0; tools != NULL && tools->kind == JSON_ARRAY && i < tools->u.arr.len;
	     i++) {
		struct json_value *t = tools->u.arr.items[i];
		const char *name = json_get_string(t, "name");
		struct remote_tool_params *p = NULL;
		cleanup_free char *why = NULL;
		if (name == NULL || t->kind != JSON_OBJECT) {
			tools->u.arr.items[keep++] = t; /* the gateway says what is wrong */
			continue;
		}
		if (remote_tool_params(t, &p, &why) < 0 ||
		    (p->n > 0 && tool_params(b, name) == NULL && b->ntools >= TOOLS_MAX)) {
			mg_warn("server %s: tool %s is left out of its tools/list: %s", b->server,
			        name,
			        why != NULL ? why : "too many tools with x-mcp-header parameters");
			remote_tool_params_free(p);
			json_free(t);
			continue;
		}
		tools->u.arr.items[keep++] = t;
		if (p->n == 0) {
			remote_tool_params_free(p);
			continue;
		}
		size_t at = b->ntools;
		for (size_t k = 0; k < b->ntools; k++)
			if (strcmp(b->tools[k]->tool, name) == 0)
				at = k;
		if (at == b->ntools) {
			b->tools = xreallocarray(b->tools, b->ntools + 1, sizeof(*b->tools));
			b->ntools++;
		} else {
			remote_tool_params_free(b->tools[at]);
		}
		b->tools[at] = p;
	}
	if (tools != NULL && tools->kind == JSON_ARRAY)
		tools->u.arr.len = keep;
	forward_json(b, root);
	json_free(root);
}

/* Whether a result is a DiscoverResult: supportedVersions, an array of
 * strings that is not empty. */
static bool discover_result(const struct json_value *result)
{
	const struct json_value *v = json_get(result, "supportedVersions");
	if (v == NULL || v->kind != JSON_ARRAY || v->u.arr.len == 0)
		return false;
	for (size_t i = 0; i < v->u.arr.len; i++)
		if (v->u.arr.items[i]->kind != JSON_STRING)
			return false;
	return true;
}

/* x's response arrived: pass it on (or adopt its session). */
static void answered(struct remote_bridge *b, struct xfer *x, const struct rpc_msg *msg)
{
	const char *why = NULL;
	switch (x->role) {
	case ROLE_GATEWAY:
		if (x->is_initialize && msg->kind == RPC_RESULT &&
		    adopt_session(b, x, msg->result, &why) < 0) {
			answer_error(b, x, why);
			return;
		}
		if (x->modern && msg->kind == RPC_RESULT &&
		    strcmp(x->method, "server/discover") == 0 && !discover_result(msg->result)) {
			/* a server of the old era may answer any method it does not
			 * know with {}: that is not the new era speaking */
			answer_error(b, x,
			             "server/discover: the answer is no DiscoverResult (it has no "
			             "supportedVersions), so the server is not of MCP 2026-07-28");
			return;
		}
		x->got_response = true;
		if (x->modern && msg->kind == RPC_RESULT)
			b->modern = true;
		if (x->lists_tools && msg->kind == RPC_RESULT)
			take_tools(b, x, msg);
		else
			forward(b, msg);
		return;
	case ROLE_RENEW:
		x->got_response = true;
		if (msg->kind != RPC_RESULT || msg->result == NULL ||
		    msg->result->kind != JSON_OBJECT) {
			cleanup_free char *shown =
			    excerpt(b, msg->error_message, msg->error_message_len);
			set_fail(x, "it refused initialize: %s", shown != NULL ? shown : "");
		} else if (adopt_session(b, x, msg->result, &why) < 0) {
			set_fail(x, "%s", why);
		} else {
			x->renewed = true;
		}
		return;
	case ROLE_RENEW_NOTIFY:
		return;
	}
}

/* One message of an answer: text[0..len) is the JSON body or an event's
 * data. Returns -1 when the exchange is over (the response is in, or the
 * answer is unusable), else 0. */
static int take_message(struct remote_bridge *b, struct xfer *x, const char *text, size_t len,
                        bool in_stream)
{
	struct rpc_msg msg;
	memset(&msg, 0, sizeof(msg));
	struct mg_err *err = NULL;
	int r = 0;
	if (rpc_parse(text, len, 0, &msg, &err) < 0) {
		cleanup_free char *shown = excerpt(b, mg_err_msg(err), strlen(mg_err_msg(err)));
		if (in_stream) {
			mg_warn("server %s: dropped an event that is not a JSON-RPC message: %s",
			        b->server, shown != NULL ? shown : "");
		} else {
			set_fail(x, "the answer is not a JSON-RPC message: %s",
			         shown != NULL ? shown : "");
			r = -1;
		}
		mg_err_free(err);
		rpc_msg_free(&msg);
		return r;
	}
	switch (msg.kind) {
	case RPC_REQUEST:
		if (x->modern) {
			/* 2026-07-28: a server asks in an input_required result only */
			mg_warn("server %s: dropped its request %s in the stream of %s: MCP "
			        "2026-07-28 servers send none",
			        b->server, msg.method, x->method != NULL ? x->method : "a request");
			break;
		}
		forward(b, &msg);
		break;
	case RPC_NOTIFICATION:
		forward(b, &msg);
		break;
	case RPC_RESULT:
	case RPC_ERROR:
		if (same_id(x, msg.id)) {
			answered(b, x, &msg);
			r = -1;
		} else if (msg.kind == RPC_ERROR && msg.id != NULL && msg.id->kind == JSON_NULL &&
		           x->id != NULL) {
			/* the server could not read the request: that is its answer */
			cleanup_free char *shown =
			    excerpt(b, msg.error_message, msg.error_message_len);
			set_fail(x, "the server answered error %" PRId64 "%s%s", msg.error_code,
			         shown != NULL ? ": " : "", shown != NULL ? shown : "");
			r = -1;
		} else if (msg.id != NULL && msg.id->kind != JSON_NULL) {
			forward(b, &msg); /* another request's, on a resumed stream */
		}
		break;
	case RPC_INVALID:
		break;
	}
	rpc_msg_free(&msg);
	return r;
}

static int on_event(const struct sse_event *ev, void *data)
{
	struct xfer *x = data;
	if (ev->too_big) {
		set_fail(x, "an event of its stream is over %zu bytes", x->b->response_max);
		return -1;
	}
	if (ev->type_len != 7 || memcmp(ev->type, "message", 7) != 0 || ev->data_len == 0)
		return 0; /* other kinds of event, and the priming event */
	return take_message(x->b, x, ev->data, ev->data_len, true);
}

/* ---- libcurl's callbacks (no multi calls from in here) ------------------ */

static void choose_mode(struct xfer *x)
{
	long status = 0;
	char *ct = NULL;
	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(x->easy, CURLINFO_CONTENT_TYPE, &ct);
	bool wants_answer = x->id != NULL || x->resuming;
	if ((status < 200 || status >= 300) && x->modern && media_is(ct, "application/json")) {
		/* 2026-07-28 says why in a JSON-RPC error (modern_error()) */
		x->mode = BODY_JSON;
		mg_buf_init(&x->answer, x->b->response_max);
	} else if (status < 200 || status >= 300) {
		x->mode = BODY_EXCERPT;
		mg_buf_init(&x->answer, EXCERPT_MAX);
	} else if (!wants_answer) {
		x->mode = BODY_DISCARD;
	} else if (!x->resuming && media_is(ct, "application/json")) {
		x->mode = BODY_JSON;
		mg_buf_init(&x->answer, x->b->response_max);
	} else if (media_is(ct, "text/event-stream")) {
		x->mode = BODY_SSE;
		if (x->sse_on) {
			sse_reconnect(&x->sse);
		} else {
			sse_init(&x->sse, x->b->response_max);
			x->sse_on = true;
		}
	} else {
		x->mode = BODY_EXCERPT; /* the wrong type: an error at the end */
		mg_buf_init(&x->answer, EXCERPT_MAX);
	}
}

static size_t cut_transfer(struct xfer *x)
{
	x->cut = true;
	return 0; /* less than given: libcurl ends the transfer */
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct xfer *x = userdata;
	size_t n = size * nmemb;
	if (n == 0)
		return 0;
	if (x->mode == BODY_UNSET)
		choose_mode(x);
	switch (x->mode) {
	case BODY_JSON:
		if (mg_buf_append(&x->answer, ptr, n, NULL) < 0) {
			set_fail(x, "its answer is over %zu bytes", x->b->response_max);
			return cut_transfer(x);
		}
		return n;
	case BODY_SSE:
		return sse_feed(&x->sse, ptr, n, on_event, x) < 0 ? cut_transfer(x) : n;
	case BODY_EXCERPT: {
		size_t room = EXCERPT_MAX - x->answer.len;
		mg_buf_append(&x->answer, ptr, n < room ? n : room, NULL);
		return x->answer.len >= EXCERPT_MAX ? cut_transfer(x) : n;
	}
	case BODY_DISCARD:
		x->discarded += n;
		return x->discarded > x->b->response_max ? cut_transfer(x) : n;
	case BODY_UNSET:
		break;
	}
	return n;
}

static size_t on_header(char *buf, size_t size, size_t nitems, void *userdata)
{
	struct xfer *x = userdata;
	size_t len = size * nitems;
	static const char name[] = "mcp-session-id:";
	const size_t name_len = sizeof(name) - 1;
	if (len >= 5 && memcmp(buf, "HTTP/", 5) == 0) {
		/* a new response (after a 1xx): forget what the last one said */
		free(x->session_hdr);
		x->session_hdr = NULL;
		x->session_bad = false;
		return len;
	}
	if (len <= name_len || strncasecmp(buf, name, name_len) != 0)
		return len;
	const char *v = buf + name_len;
	size_t n = len - name_len;
	while (n > 0 && (*v == ' ' || *v == '\t')) {
		v++;
		n--;
	}
	while (n > 0 &&
	       (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	free(x->session_hdr);
	x->session_hdr = NULL;
	x->session_bad = n == 0 || n > REMOTE_SESSION_ID_MAX || !visible_ascii(v, n);
	if (!x->session_bad)
		x->session_hdr = xstrndup(v, n);
	return len;
}

static bool loopback_address(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;
		if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr))
			return true;
		return IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && in6->sin6_addr.s6_addr[12] == 127;
	}
	return false;
}

/* Sockets are made close-on-exec (mcpgate starts runtimes), and plain http
 * reaches loopback addresses only, whatever a name resolved to. */
static curl_socket_t on_open_socket(void *clientp, curlsocktype purpose,
                                    struct curl_sockaddr *address)
{
	struct remote_bridge *b = clientp;
	if (purpose != CURLSOCKTYPE_IPCXN)
		return CURL_SOCKET_BAD;
	if (b->plain_http && !loopback_address(&address->addr)) {
		mg_warn("server %s: http:// may reach loopback addresses only; refused another",
		        b->server);
		return CURL_SOCKET_BAD;
	}
	int fd = socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
	return fd >= 0 ? fd : CURL_SOCKET_BAD;
}

static int on_close_socket(void *clientp, curl_socket_t fd)
{
	struct remote_bridge *b = clientp;
	if (b->loop != NULL) /* NULL: the DELETE at the end, on a thread of its own */
		loop_unwatch(b->loop, fd);
	return close(fd);
}

/* ---- libcurl on the loop ---------------------------------------------------- */

static void finish(struct remote_bridge *b, struct xfer *x, CURLcode res);

static void settle(struct remote_bridge *b)
{
	CURLMsg *m;
	int left;
	while (b->multi != NULL && (m = curl_multi_info_read(b->multi, &left)) != NULL) {
		if (m->msg != CURLMSG_DONE)
			continue;
		CURL *e = m->easy_handle;
		CURLcode res = m->data.result;
		char *priv = NULL;
		curl_easy_getinfo(e, CURLINFO_PRIVATE, &priv);
		finish(b, (struct xfer *)(void *)priv, res);
	}
	if (b->gateway_closed)
		abort_all(b);
}

static void on_curl_fd(struct loop *loop, int fd, uint32_t events, void *data)
{
	(void)loop;
	struct remote_bridge *b = data;
	int mask = 0, running = 0;
	if (events & EPOLLIN)
		mask |= CURL_CSELECT_IN;
	if (events & EPOLLOUT)
		mask |= CURL_CSELECT_OUT;
	if (events & (EPOLLERR | EPOLLHUP))
		mask |= CURL_CSELECT_ERR;
	curl_multi_socket_action(b->multi, fd, mask, &running);
	settle(b);
}

static void on_curl_timer(struct loop *loop, void *data)
{
	(void)loop;
	struct remote_bridge *b = data;
	int running = 0;
	b->curl_timer = NULL;
	curl_multi_socket_action(b->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	settle(b);
}

static int on_curl_timer_set(CURLM *multi, long timeout_ms, void *userp)
{
	(void)multi;
	struct remote_bridge *b = userp;
	loop_timer_cancel(b->loop, b->curl_timer);
	b->curl_timer = NULL;
	if (timeout_ms >= 0)
		b->curl_timer = loop_timer_add(b->loop, timeout_ms, on_curl_timer, b);
	return 0;
}

static int on_curl_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
	(void)easy;
	struct remote_bridge *b = userp;
	if (what == CURL_POLL_REMOVE) {
		loop_unwatch(b->loop, fd);
		return 0;
	}
	uint32_t ev = 0;
	if (what & CURL_POLL_IN)
		ev |= EPOLLIN;
	if (what & CURL_POLL_OUT)
		ev |= EPOLLOUT;
	if (socketp != NULL && loop_modify(b->loop, fd, ev, NULL) == 0)
		return 0;
	struct mg_err *err = NULL;
	loop_unwatch(b->loop, fd); /* a stale watch of a reused number */
	if (loop_watch(b->loop, fd, ev, on_curl_fd, b, &err) < 0) {
		mg_warn("server %s: %s", b->server, mg_err_msg(err));
		mg_err_free(err);
		return -1;
	}
	curl_multi_assign(b->multi, fd, b);
	return 0;
}

/* ---- requests ----------------------------------------------------------- */

static struct curl_slist *add_header(struct curl_slist *h, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static struct curl_slist *add_header(struct curl_slist *h, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cleanup_free char *line = xvasprintf(fmt, ap);
	va_end(ap);
	struct curl_slist *n = curl_slist_append(h, line);
	if (n == NULL)
		abort(); /* out of memory, as xmalloc */
	return n;
}

/* What every request of this bridge shares. */
static void setup_easy(struct remote_bridge *b, CURL *e, int64_t left_ms)
{
	long connect_ms = b->connect_timeout_ms < left_ms ? b->connect_timeout_ms : (long)left_ms;
	curl_easy_setopt(e, CURLOPT_URL, b->url);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e, CURLOPT_PROXY, ""); /* the url, not the environment, says where */
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
	if (b->ca_file != NULL)
		curl_easy_setopt(e, CURLOPT_CAINFO, b->ca_file);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, connect_ms > 0 ? connect_ms : 1L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, left_ms > 0 ? (long)left_ms : 1L);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "mcpgate");
	curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
	curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, b);
	curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, on_close_socket);
	curl_easy_setopt(e, CURLOPT_CLOSESOCKETDATA, b);
}

/* The headers of the session: its id, its version, the credential. */
static struct curl_slist *session_headers(struct remote_bridge *b, struct curl_slist *h,
                                          bool with_session)
{
	if (with_session && b->session_id != NULL)
		h = add_header(h, "Mcp-Session-Id: %s", b->session_id);
	if (with_session && b->protocol_version != NULL)
		h = add_header(h, "MCP-Protocol-Version: %s", b->protocol_version);
	if (b->cred_header != NULL) {
		struct curl_slist *n = curl_slist_append(h, b->cred_header);
		if (n == NULL)
			abort();
		h = n;
	}
	return h;
}

/* Send x: its POST, or (x->resuming) the GET that resumes its stream. */
static void start_request(struct remote_bridge *b, struct xfer *x)
{
	reset_answer(x);
	if (!x->resuming && x->sse_on) {
		sse_free(&x->sse);
		x->sse_on = false;
	}
	int64_t left = x->deadline - now_ms();
	add_active(b, x);
	if (left <= 0) {
		end_xfer(b, x, "no answer in time");
		return;
	}
	CURL *e = curl_easy_init();
	if (e == NULL) {
		end_xfer(b, x, "libcurl cannot make a request");
		return;
	}
	x->easy = e;
	setup_easy(b, e, left);
	curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)(void *)x);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
	/* initialize opens a session: it carries none */
	bool opens = x->is_initialize || x->role == ROLE_RENEW || x->modern;
	struct curl_slist *h = NULL;
	if (x->resuming) {
		size_t id_len = 0;
		const char *id = sse_last_id(&x->sse, &id_len);
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
		h = add_header(h, "Accept: text/event-stream");
		h = add_header(h, "Last-Event-ID: %.*s", (int)id_len, id);
	} else {
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, x->body);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->body_len);
		h = add_header(h, "Accept: application/json, text/event-stream");
		h = add_header(h, "Content-Type: application/json");
		h = add_header(h, "Expect:"); /* no 100-continue round trip */
		for (size_t i = 0; i < x->modern_headers.n; i++)
			h = add_header(h, "%s", x->modern_headers.v[i]);
		x->posts++;
	}
	x->headers = session_headers(b, h, !opens);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->headers);
	x->carried_session = !opens && b->session_id != NULL;
	x->generation = b->generation;
	if (x->is_initialize)
		b->opening = true;
	if (x->is_initialized)
		b->initialized_inflight = true;
	CURLMcode mc = curl_multi_add_handle(b->multi, e);
	if (mc != CURLM_OK) {
		cleanup_free char *why = xasprintf("libcurl: %s", curl_multi_strerror(mc));
		end_xfer(b, x, why);
	}
}

static bool can_resume(const struct xfer *x)
{
	size_t len = 0;
	const char *id = sse_last_id(&x->sse, &len);
	/* 2026-07-28's streams are not resumable */
	if (x->modern || !x->sse_on || len == 0 || x->resumes >= REMOTE_RESUMES_MAX ||
	    now_ms() >= x->deadline)
		return false;
	/* it goes into a header: printable ASCII only */
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)id[i] < 0x20 || (unsigned char)id[i] > 0x7e)
			return false;
	return true;
}

static void on_resume(struct loop *loop, void *data)
{
	(void)loop;
	struct xfer *x = data;
	struct remote_bridge *b = x->b;
	x->resume_timer = NULL;
	unlink_xfer(b, x);
	x->resuming = true;
	start_request(b, x);
	settle(b);
}

/* The stream ended before the response: GET it again after its retry time. */
static void schedule_resume(struct remote_bridge *b, struct xfer *x)
{
	int64_t delay = sse_retry_ms(&x->sse) >= 0 ? sse_retry_ms(&x->sse) : RETRY_DEFAULT_MS;
	int64_t left = x->deadline - now_ms();
	if (delay > left)
		delay = left;
	x->resumes++;
	mg_debug("server %s: the event stream of %s ended early; resuming in %" PRId64 " ms",
	         b->server, x->method != NULL ? x->method : "a request", delay);
	x->resume_timer = loop_timer_add(b->loop, delay, on_resume, x);
}

static bool lists_version(const struct json_value *supported, const char *version)
{
	for (size_t i = 0;
	     supported != NULL && supported->kind == JSON_ARRAY && i < supported->u.arr.len; i++) {
		const struct json_value *v = supported->u.arr.items[i];
		if (v->kind == JSON_STRING && strcmp(v->u.str.ptr, version) == 0)
			return true;
	}
	return false;
}

/* An error status to a 2026-07-28 request whose body is a JSON-RPC error
 * for it (or for id null): that error is its answer, with its code, so the
 * gateway can tell an UnsupportedProtocolVersionError, a HeaderMismatch or
 * an unknown method from a server of the old era. A -32022 that lists the
 * very version asked for sends the request once more. Returns false when
 * the body is no such error (then the status is the answer). */
static bool modern_error(struct remote_bridge *b, struct xfer *x)
{
	struct rpc_msg msg;
	memset(&msg, 0, sizeof(msg));
	if (x->answer.data == NULL || rpc_parse(x->answer.data, x->answer.len, 0, &msg, NULL) < 0 ||
	    msg.kind != RPC_ERROR ||
	    !(same_id(x, msg.id) || (msg.id != NULL && msg.id->kind == JSON_NULL))) {
		rpc_msg_free(&msg);
		return false;
	}
	if (msg.error_code == UNSUPPORTED_VERSION && !x->version_retried &&
	    lists_version(json_get(msg.error_data, "supported"), x->version)) {
		rpc_msg_free(&msg);
		x->version_retried = true;
		mg_info("server %s: it refused version %s of %s and named it as supported; "
		        "sending it once more",
		        b->server, x->version, x->method);
		unlink_xfer(b, x);
		start_request(b, x);
		return true;
	}
	cleanup_free char *text =
	    xstrndup(msg.error_message != NULL ? msg.error_message : "", msg.error_message_len);
	struct mg_buf line = MG_BUF_INIT(2 * b->response_max + 64);
	struct mg_err *err = NULL;
	if (rpc_build_error(x->id, msg.error_code, text, msg.error_data, &line, &err) < 0) {
		cleanup_free char *why =
		    xasprintf("its error cannot be passed on: %s", mg_err_msg(err));
		mg_err_free(err);
		mg_buf_free(&line);
		rpc_msg_free(&msg);
		end_xfer(b, x, why);
		return true;
	}
	x->got_response = true;
	write_line(b, line.data, line.len);
	mg_buf_free(&line);
	rpc_msg_free(&msg);
	end_xfer(b, x, NULL);
	return true;
}

/* x's HTTP request is over (from settle(), outside libcurl's callbacks). */
static void finish(struct remote_bridge *b, struct xfer *x, CURLcode res)
{
	long status = 0;
	char *ct_info = NULL, *location_info = NULL;
	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(x->easy, CURLINFO_CONTENT_TYPE, &ct_info);
	curl_easy_getinfo(x->easy, CURLINFO_REDIRECT_URL, &location_info);
	cleanup_free char *ct = ct_info != NULL ? xstrdup(ct_info) : NULL;
	cleanup_free char *location =
	    location_info != NULL ? excerpt(b, location_info, strlen(location_info)) : NULL;
	bool cut = x->cut && res == CURLE_WRITE_ERROR;
	cleanup_free char *errtext =
	    res == CURLE_OK || cut
	        ? NULL
	        : xstrdup(x->errbuf[0] != '\0' ? x->errbuf : curl_easy_strerror(res));
	detach(b, x);
	mg_debug("server %s: %s %s: HTTP %ld%s%s", b->server, x->resuming ? "GET" : "POST",
	         x->method != NULL ? x->method : "(response)", status, errtext ? ", " : "",
	         errtext ? errtext : "");

	if (x->fail != NULL) {
		cleanup_free char *why = xstrdup(x->fail);
		end_xfer(b, x, why);
		return;
	}
	if (x->got_response) {
		end_xfer(b, x, NULL);
		return;
	}
	if (errtext != NULL) {
		if (res == CURLE_OPERATION_TIMEDOUT) {
			cleanup_free char *why =
			    xasprintf("no answer within %ld ms", b->request_timeout_ms);
			end_xfer(b, x, why);
		} else if (x->mode == BODY_SSE && can_resume(x)) {
			schedule_resume(b, x);
		} else {
			cleanup_free char *why = xasprintf("the request failed: %s", errtext);
			end_xfer(b, x, why);
		}
		return;
	}
	if (status == 404 && x->carried_session) {
		session_expired(b, x);
		return;
	}
	if (status >= 300 && status < 400) {
		cleanup_free char *why =
		    xasprintf("HTTP %ld: a redirect%s%s, which mcpgate does not follow (the url in "
		              "mcp.toml must be the server's endpoint itself)",
		              status, location != NULL ? " to " : "", location ? location : "");
		end_xfer(b, x, why);
		return;
	}
	if (status < 200 || status >= 300) {
		if (x->modern && x->mode == BODY_JSON && modern_error(b, x))
			return;
		cleanup_free char *body = excerpt(b, x->answer.data, x->answer.len);
		cleanup_free char *why = xasprintf("HTTP %ld%s%s", status, body != NULL ? ": " : "",
		                                   body != NULL ? body : "");
		end_xfer(b, x, why);
		return;
	}
	if (x->id == NULL && !x->resuming) {
		end_xfer(b, x, NULL); /* a notification or a response: accepted */
		return;
	}
	if (x->mode == BODY_JSON) {
		take_message(b, x, x->answer.data != NULL ? x->answer.data : "", x->answer.len,
		             false);
		if (x->fail != NULL) {
			cleanup_free char *why = xstrdup(x->fail);
			end_xfer(b, x, why);
		} else {
			end_xfer(b, x,
			         x->got_response ? NULL
			                         : "its answer holds no response to the "
			                           "request");
		}
		return;
	}
	if (x->mode == BODY_SSE) {
		if (can_resume(x))
			schedule_resume(b, x);
		else
			end_xfer(b, x, "its event stream ended without the response");
		return;
	}
	cleanup_free char *shown = ct != NULL ? excerpt(b, ct, strlen(ct)) : NULL;
	cleanup_free char *why = xasprintf(
	    "HTTP %ld with %s%s%s, not application/json or text/event-stream%s", status,
	    shown != NULL ? "content type \"" : "no content type", shown != NULL ? shown : "",
	    shown != NULL ? "\"" : "", x->resuming ? " (resuming its stream)" : "");
	end_xfer(b, x, why);
}

/* ---- the gateway's side: lines in -------------------------------------- */

/* notifications/cancelled: the exchange of that request is dropped (the
 * server hears of it from the notification itself). */
static void cancel_request(struct remote_bridge *b, const struct json_value *params)
{
	cleanup_free char *key = rpc_id_key(json_get(params, "requestId"));
	if (key == NULL)
		return;
	struct xfer *lists[2] = {b->active, b->queue};
	for (size_t l = 0; l < 2; l++)
		for (struct xfer *x = lists[l]; x != NULL; x = x->next)
			if (x->role == ROLE_GATEWAY && x->id_key != NULL &&
			    strcmp(x->id_key, key) == 0) {
				abort_xfer(b, x);
				return;
			}
}

static void handle_line(struct remote_bridge *b, const char *line, size_t len)
{
	struct rpc_msg msg;
	memset(&msg, 0, sizeof(msg));
	struct xfer *x = xfer_new(b, ROLE_GATEWAY, line, len, &msg);
	if (x == NULL)
		return;
	if (x->is_initialize) {
		json_free(b->init_params);
		b->init_params = msg.params != NULL ? json_copy(msg.params) : NULL;
		b->have_init = true;
	} else if (msg.kind == RPC_NOTIFICATION &&
	           strcmp(msg.method, "notifications/cancelled") == 0) {
		cancel_request(b, msg.params);
	}
	bool notification = msg.kind == RPC_NOTIFICATION;
	rpc_msg_free(&msg);
	if (x->refused != NULL) {
		mg_warn("%s", x->refused);
		cleanup_free char *why = steal_pointer(&x->refused);
		answer_error(b, x, why);
		xfer_free(b, x);
		return;
	}
	if (b->modern && (notification || x->is_response)) {
		/* 2026-07-28 has no notifications and no server requests over HTTP:
		 * a cancelled request's stream was closed above, which is how it
		 * says cancel */
		mg_debug("server %s: %s is not sent to a server of MCP 2026-07-28", b->server,
		         x->method != NULL ? x->method : "a response");
		xfer_free(b, x);
		return;
	}
	if (b->need_renewal && b->have_init && !x->is_initialize)
		start_renewal(b);
	/* an answer to the server goes at once: the server may be waiting for
	 * it before it answers what holds the gate */
	if (gate_closed(b) && !x->is_response)
		enqueue(b, x);
	else
		start_request(b, x);
}

static void gateway_gone(struct remote_bridge *b)
{
	if (b->gateway_closed)
		return;
	b->gateway_closed = true;
	loop_unwatch(b->loop, b->fd);
	mg_buf_free(&b->out);
	b->out_off = 0;
	/* the exchanges are dropped by settle(), outside libcurl's callbacks */
}

static void read_gateway(struct remote_bridge *b)
{
	for (int round = 0; round < READS_PER_ROUND && !b->gateway_closed; round++) {
		struct mg_err *err = NULL;
		ssize_t r = rpc_reader_read_fd(&b->in, b->fd, &err);
		if (r == RPC_AGAIN)
			break;
		if (r <= 0) {
			if (r < 0)
				mg_debug("server %s: reading the gateway's lines: %s", b->server,
				         mg_err_msg(err));
			mg_err_free(err);
			gateway_gone(b);
			break;
		}
		const char *line;
		size_t len;
		int k;
		while ((k = rpc_reader_next(&b->in, &line, &len)) != 0) {
			if (k == RPC_OVERFLOW) {
				mg_warn(
				    "server %s: the gateway wrote a line over %zu bytes; dropped",
				    b->server, b->response_max);
				continue;
			}
			handle_line(b, line, len);
		}
	}
}

static void on_gateway(struct loop *loop, int fd, uint32_t events, void *data)
{
	(void)loop;
	(void)fd;
	struct remote_bridge *b = data;
	if (events & EPOLLOUT)
		flush_out(b);
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		read_gateway(b);
	settle(b);
	update_watch(b);
}

/* ---- the bridge's life ------------------------------------------------------ */

int remote_bridge_new(struct loop *loop, const struct remote_options *opt, int bridge_fd,
                      struct remote_bridge **out, struct mg_err **err)
{
	cleanup_close int fd = bridge_fd;
	if (sodium_init() < 0)
		return mg_err_set(err, "libsodium cannot start");
	pthread_once(&curl_once, curl_init_once);
	if (curl_init_result != CURLE_OK)
		return mg_err_set(err, "libcurl cannot start: %s",
		                  curl_easy_strerror(curl_init_result));
	if (opt->header_value != NULL &&
	    (opt->header_name == NULL || opt->header_name[0] == '\0' || opt->header_len == 0 ||
	     memchr(opt->header_value, '\r', opt->header_len) != NULL ||
	     memchr(opt->header_value, '\n', opt->header_len) != NULL ||
	     memchr(opt->header_value, '\0', opt->header_len) != NULL))
		return mg_err_set(err,
		                  "server %s: its credential cannot go in a header: it is empty or "
		                  "holds a line break or a NUL byte",
		                  opt->server);
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
		return mg_err_sys(err, errno, "server %s: the bridge's socket", opt->server);

	struct remote_bridge *b = xcalloc(1, sizeof(*b));
	b->loop = loop;
	b->server = xstrdup(opt->server);
	b->url = xstrdup(opt->url);
	b->ca_file = opt->ca_file != NULL ? xstrdup(opt->ca_file) : NULL;
	b->plain_http = strncasecmp(opt->url, "http://", 7) == 0;
	b->connect_timeout_ms =
	    opt->connect_timeout_ms > 0 ? opt->connect_timeout_ms : CONNECT_TIMEOUT_DEFAULT_MS;
	b->request_timeout_ms =
	    opt->request_timeout_ms > 0 ? opt->request_timeout_ms : REQUEST_TIMEOUT_DEFAULT_MS;
	b->response_max = opt->response_max > 0 ? opt->response_max : RESPONSE_MAX_DEFAULT;
	if (opt->header_value != NULL) {
		size_t name_len = strlen(opt->header_name);
		b->cred_value_at = name_len + 2;
		b->cred_header_len = b->cred_value_at + opt->header_len;
		b->cred_header = sodium_malloc(b->cred_header_len + 1);
		if (b->cred_header == NULL)
			abort();
		memcpy(b->cred_header, opt->header_name, name_len);
		memcpy(b->cred_header + name_len, ": ", 2);
		memcpy(b->cred_header + b->cred_value_at, opt->header_value, opt->header_len);
		b->cred_header[b->cred_header_len] = '\0';
	}
	b->fd = -1;
	rpc_reader_init(&b->in, b->response_max);
	mg_buf_init(&b->out, OUT_MAX);
	b->multi = curl_multi_init();
	if (b->multi == NULL) {
		remote_bridge_end(b); /* no session yet: nothing blocks */
		return mg_err_set(err, "server %s: libcurl cannot make a multi handle",
		                  opt->server);
	}
	curl_multi_setopt(b->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket);
	curl_multi_setopt(b->multi, CURLMOPT_SOCKETDATA, b);
	curl_multi_setopt(b->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer_set);
	curl_multi_setopt(b->multi, CURLMOPT_TIMERDATA, b);
	curl_multi_setopt(b->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)CONNECTIONS_MAX);
	if (loop_watch(loop, fd, EPOLLIN, on_gateway, b, err) < 0) {
		b->gateway_closed = true;
		remote_bridge_end(b); /* no session yet: nothing blocks */
		return mg_err_wrap(err, "server %s", opt->server);
	}
	b->fd = steal_fd(&fd);
	b->fd_events = EPOLLIN;
	*out = b;
	return 0;
}

const char *remote_bridge_session(const struct remote_bridge *b)
{
	return b->session_id;
}

static size_t discard_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	(void)ptr;
	size_t *seen = userdata;
	*seen += size * nmemb;
	return *seen > (64u << 10) ? 0 : size * nmemb;
}

/* DELETE the session, on a multi handle of its own, within
 * REMOTE_CLOSE_TIMEOUT_MS. */
static void delete_session(struct remote_bridge *b)
{
	CURLM *m = curl_multi_init();
	CURL *e = curl_easy_init();
	if (m == NULL || e == NULL) {
		curl_easy_cleanup(e);
		curl_multi_cleanup(m);
		return;
	}
	int64_t deadline = now_ms() + REMOTE_CLOSE_TIMEOUT_MS;
	char errbuf[CURL_ERROR_SIZE] = "";
	size_t seen = 0;
	setup_easy(b, e, REMOTE_CLOSE_TIMEOUT_MS);
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "DELETE");
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &seen);
	struct curl_slist *h = session_headers(b, NULL, true);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	CURLcode res = CURLE_OK;
	if (curl_multi_add_handle(m, e) == CURLM_OK) {
		int running = 1;
		while (curl_multi_perform(m, &running) == CURLM_OK && running > 0) {
			int64_t left = deadline - now_ms();
			if (left <= 0)
				break;
			curl_multi_poll(m, NULL, 0, (int)(left < 1000 ? left : 1000), NULL);
		}
		CURLMsg *msg;
		int queued;
		res = CURLE_OPERATION_TIMEDOUT;
		while ((msg = curl_multi_info_read(m, &queued)) != NULL)
			if (msg->msg == CURLMSG_DONE)
				res = msg->data.result;
		curl_multi_remove_handle(m, e);
	}
	long status = 0;
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
	if (res == CURLE_OK || (res == CURLE_WRITE_ERROR && status != 0))
		mg_debug("server %s: DELETE of its session: HTTP %ld", b->server, status);
	else
		mg_info("server %s: its session could not be deleted: %s", b->server,
		        errbuf[0] != '\0' ? errbuf : curl_easy_strerror(res));
	curl_easy_cleanup(e);
	curl_multi_cleanup(m);
	free_headers(b, h);
}

void remote_bridge_detach(struct remote_bridge *b)
{
	if (b == NULL || b->loop == NULL)
		return;
	abort_all(b);
	if (b->multi != NULL)
		curl_multi_cleanup(b->multi); /* closes its connections */
	b->multi = NULL;
	loop_timer_cancel(b->loop, b->curl_timer);
	b->curl_timer = NULL;
	if (b->fd >= 0) {
		if (!b->gateway_closed)
			loop_unwatch(b->loop, b->fd);
		close(b->fd);
		b->fd = -1;
	}
	/* from here on nothing touches the loop (on_close_socket looks) */
	b->loop = NULL;
}

void remote_bridge_end(struct remote_bridge *b)
{
	if (b == NULL)
		return;
	if (b->loop != NULL)
		remote_bridge_detach(b); /* on the loop's thread, as it must be */
	if (b->session_id != NULL)
		delete_session(b);
	rpc_reader_free(&b->in);
	mg_buf_free(&b->out);
	if (b->cred_header != NULL)
		sodium_free(b->cred_header); /* wipes it */
	free(b->server);
	free(b->url);
	free(b->ca_file);
	free(b->session_id);
	free(b->protocol_version);
	json_free(b->init_params);
	clear_tools(b);
	free(b);
}
