/* mcp-http: a test MCP server over streamable HTTP on 127.0.0.1, for
 * tests/remote_test.py. One thread, poll(), libc only (and probe_json.c).
 *
 *   mcp-http [-port N] [-mode json|sse] [-expire-after N] [-redirect]
 *            [-require-header NAME:VALUE] [-log FILE]
 *
 * -port 0 (the default) picks a free port; "port N" is printed on stdout once
 * it listens. The endpoint is /mcp; any other path is 404.
 * -mode json answers requests with application/json; -mode sse with an event
 * stream (chunked): a tools/call there first sends notifications/progress
 * (when the call has a progressToken) and a ping request, waits up to 5 s for
 * the ping's response (a POST of its own), then answers; its result's second
 * content item says whether the pong came.
 * -expire-after N answers 404 to the Nth request that carries Mcp-Session-Id,
 * once, and ends that session (so its later requests get 404 too); that 404
 * comes 300 ms late, so that requests sent meanwhile meet the end as well.
 * -redirect answers every POST with 307 to /moved.
 * -require-header NAME:VALUE answers 401 to a request without that header.
 * -log FILE appends one JSON line per request: method, path, status, every
 * header (names in lower case) and the body (JSON as is, else a string).
 *
 * Tools: echo {text} answers text; slow {ms, text} answers after ms (300 by
 * default). Sessions: initialize makes "sess-N" (Mcp-Session-Id); other
 * requests need a live one (400 without, 404 for an unknown or ended one);
 * DELETE ends it (200). GET is 405. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "probe_json.h"

#define MAX_CONNS      128
#define MAX_HEADERS    48
#define HEAD_MAX       (64 << 10)
#define BODY_MAX       (8 << 20)
#define PONG_WAIT_MS   5000
#define EXPIRY_HOLD_MS 300 /* so that calls sent meanwhile meet the ended session too */
#define MAX_SESSIONS   256

enum conn_state {
	C_READ,      /* reading a request */
	C_HELD_JSON, /* a slow JSON answer: sent at due_ms */
	C_WAIT_PONG, /* an SSE tools/call waiting for the ping's response */
	C_HELD_SSE,  /* an SSE tools/call: its result goes at due_ms */
	C_HELD_404,  /* the forced expiry: its 404 goes at due_ms */
};

struct header {
	char *name; /* lower case */
	char *value;
};

struct conn {
	int fd;
	struct pj_buf in;
	struct pj_buf out;
	size_t out_off;
	enum conn_state state;
	bool close_after; /* close once out is written */
	long long due_ms;
	/* a held tools/call */
	char *req_id; /* raw JSON */
	char *text;
	char ping_id[32];
	bool pong;
	long long after_pong_ms;
	int events; /* SSE event ids so far */
};

static struct {
	int port;
	bool sse;
	long expire_after;
	bool redirect;
	char *require_name, *require_value;
	FILE *log;
} opt;

static struct conn conns[MAX_CONNS];
static char *sessions[MAX_SESSIONS];
static int nsessions, session_counter, ping_counter;
static long with_session_count;
static bool expired_once;

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("mcp-http: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(2);
}

static long parse_long(const char *s, const char *what)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < 0)
		die("%s: not a number: %s", what, s);
	return v;
}

/* ---- sessions ------------------------------------------------------------ */

static const char *session_new(void)
{
	char id[32];
	snprintf(id, sizeof(id), "sess-%d", ++session_counter);
	if (nsessions == MAX_SESSIONS) {
		free(sessions[0]);
		memmove(sessions, sessions + 1, sizeof(sessions[0]) * (MAX_SESSIONS - 1));
		nsessions--;
	}
	sessions[nsessions++] = pj_xstrdup(id);
	return sessions[nsessions - 1];
}

static int session_find(const char *id)
{
	for (int i = 0; i < nsessions; i++)
		if (strcmp(sessions[i], id) == 0)
			return i;
	return -1;
}

static void session_end(const char *id)
{
	int i = session_find(id);
	if (i < 0)
		return;
	free(sessions[i]);
	memmove(sessions + i, sessions + i + 1, sizeof(sessions[0]) * (size_t)(nsessions - i - 1));
	nsessions--;
}

/* ---- requests ------------------------------------------------------------- */

struct request {
	char method[16];
	char path[256];
	struct header headers[MAX_HEADERS];
	int nheaders;
	const char *body;
	size_t body_len;
};

static const char *header(const struct request *r, const char *name)
{
	for (int i = 0; i < r->nheaders; i++)
		if (strcmp(r->headers[i].name, name) == 0)
			return r->headers[i].value;
	return NULL;
}

static void request_free(struct request *r)
{
	for (int i = 0; i < r->nheaders; i++) {
		free(r->headers[i].name);
		free(r->headers[i].value);
	}
	r->nheaders = 0;
}

static void log_request(const struct request *r, int status)
{
	if (opt.log == NULL)
		return;
	struct pj_buf b = {0};
	pj_buf_adds(&b, "{\"method\":");
	pj_put_cstring(&b, r->method);
	pj_buf_adds(&b, ",\"path\":");
	pj_put_cstring(&b, r->path);
	pj_buf_addf(&b, ",\"status\":%d,\"headers\":{", status);
	for (int i = 0; i < r->nheaders; i++) {
		if (i > 0)
			pj_buf_adds(&b, ",");
		pj_put_cstring(&b, r->headers[i].name);
		pj_buf_adds(&b, ":");
		pj_put_cstring(&b, r->headers[i].value);
	}
	pj_buf_adds(&b, "},\"body\":");
	struct pj_span v;
	if (r->body_len == 0)
		pj_buf_adds(&b, "null");
	else if (pj_parse(r->body, r->body_len, &v) == 0)
		pj_buf_add(&b, v.p, v.n);
	else
		pj_put_string(&b, r->body, r->body_len);
	pj_buf_adds(&b, "}\n");
	fwrite(b.p, 1, b.len, opt.log);
	fflush(opt.log);
	pj_buf_free(&b);
}

static void send_plain(struct conn *c, int status, const char *reason, const char *extra_headers,
                       const char *ctype, const char *body)
{
	size_t n = body != NULL ? strlen(body) : 0;
	pj_buf_addf(&c->out, "HTTP/1.1 %d %s\r\nContent-Length: %zu\r\n%s%s%s%s", status, reason, n,
	            ctype != NULL ? "Content-Type: " : "", ctype != NULL ? ctype : "",
	            ctype != NULL ? "\r\n" : "", extra_headers != NULL ? extra_headers : "");
	pj_buf_adds(&c->out, "\r\n");
	if (n > 0)
		pj_buf_add(&c->out, body, n);
}

static void sse_start(struct conn *c, const char *extra_headers)
{
	pj_buf_addf(&c->out,
	            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: "
	            "no-cache\r\nTransfer-Encoding: chunked\r\n%s\r\n",
	            extra_headers != NULL ? extra_headers : "");
	c->events = 0;
}

static void chunk(struct conn *c, const char *data, size_t n)
{
	pj_buf_addf(&c->out, "%zx\r\n", n);
	pj_buf_add(&c->out, data, n);
	pj_buf_adds(&c->out, "\r\n");
}

/* One event; line ends alternate between LF and CRLF, and the event is
 * written in two chunks, to exercise the client's parser. */
static void sse_event(struct conn *c, const char *json)
{
	const char *eol = c->events % 2 == 0 ? "\n" : "\r\n";
	struct pj_buf e = {0};
	pj_buf_addf(&e, ": event %d%sid: ev-%d%sdata: %s", c->events, eol, c->events + 1, eol,
	            json);
	c->events++;
	size_t half = e.len / 2;
	chunk(c, e.p, half);
	chunk(c, e.p + half, e.len - half);
	pj_buf_free(&e);
	pj_buf_addf(&e, "%s%s", eol, eol);
	chunk(c, e.p, e.len);
	pj_buf_free(&e);
}

static void sse_end(struct conn *c)
{
	pj_buf_adds(&c->out, "0\r\n\r\n");
}

static char *result_json(const char *id, const char *result)
{
	struct pj_buf b = {0};
	pj_buf_addf(&b, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}", id, result);
	pj_buf_add(&b, "", 1);
	return b.p;
}

/* Answer a request: one JSON body, or an event stream of one event. */
static void answer(struct conn *c, const char *id, const char *result, const char *extra_headers)
{
	char *json = result_json(id, result);
	if (opt.sse) {
		sse_start(c, extra_headers);
		sse_event(c, json);
		sse_end(c);
	} else {
		send_plain(c, 200, "OK", extra_headers, "application/json", json);
	}
	free(json);
}

static void answer_error(struct conn *c, const char *id, int code, const char *message)
{
	struct pj_buf b = {0};
	pj_buf_addf(&b, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":%d,\"message\":", id,
	            code);
	pj_put_cstring(&b, message);
	pj_buf_adds(&b, "}}");
	pj_buf_add(&b, "", 1);
	if (opt.sse) {
		sse_start(c, NULL);
		sse_event(c, b.p);
		sse_end(c);
	} else {
		send_plain(c, 200, "OK", NULL, "application/json", b.p);
	}
	pj_buf_free(&b);
}

static char *tool_result(const char *text, const char *note)
{
	struct pj_buf b = {0};
	pj_buf_adds(&b, "{\"content\":[{\"type\":\"text\",\"text\":");
	pj_put_cstring(&b, text);
	pj_buf_adds(&b, "}");
	if (note != NULL) {
		pj_buf_adds(&b, ",{\"type\":\"text\",\"text\":");
		pj_put_cstring(&b, note);
		pj_buf_adds(&b, "}");
	}
	pj_buf_adds(&b, "]}");
	pj_buf_add(&b, "", 1);
	return b.p;
}

static void finish_call(struct conn *c)
{
	if (c->state == C_HELD_404) {
		send_plain(c, 404, "Not Found", NULL, "text/plain", "session expired");
		c->state = C_READ;
		return;
	}
	char *result =
	    tool_result(c->text, opt.sse ? (c->pong ? "pong received" : "no pong") : NULL);
	char *json = result_json(c->req_id, result);
	if (opt.sse) {
		sse_event(c, json);
		sse_end(c);
	} else {
		send_plain(c, 200, "OK", NULL, "application/json", json);
	}
	free(json);
	free(result);
	free(c->req_id);
	free(c->text);
	c->req_id = c->text = NULL;
	c->state = C_READ;
}

static const char tools_list[] =
    "{\"tools\":["
    "{\"name\":\"echo\",\"description\":\"Answers its text\",\"inputSchema\":{\"type\":"
    "\"object\",\"properties\":{\"text\":{\"type\":\"string\"}}}},"
    "{\"name\":\"slow\",\"description\":\"Answers after ms milliseconds\",\"inputSchema\":{"
    "\"type\":\"object\",\"properties\":{\"ms\":{\"type\":\"integer\"},\"text\":{\"type\":"
    "\"string\"}}}}]}";

static void tools_call(struct conn *c, struct pj_span id, struct pj_span params)
{
	struct pj_span name, args, v, meta, token;
	int has_args = pj_member(params, "arguments", &args);
	char *text = NULL;
	if (has_args && pj_member(args, "text", &v))
		text = pj_string(v, NULL);
	long long ms = 300;
	if (!pj_member(params, "name", &name) ||
	    (!pj_string_eq(name, "echo") && !pj_string_eq(name, "slow"))) {
		char *raw = pj_xmalloc(id.n + 1);
		memcpy(raw, id.p, id.n);
		raw[id.n] = '\0';
		answer_error(c, raw, -32602, "no such tool");
		free(raw);
		free(text);
		return;
	}
	bool slow = pj_string_eq(name, "slow");
	if (slow && has_args && pj_member(args, "ms", &v))
		pj_integer(v, &ms);
	c->req_id = pj_xmalloc(id.n + 1);
	memcpy(c->req_id, id.p, id.n);
	c->req_id[id.n] = '\0';
	c->text = text != NULL ? text : pj_xstrdup(slow ? "slow done" : "");
	c->pong = false;
	if (!opt.sse) {
		if (slow) {
			c->state = C_HELD_JSON;
			c->due_ms = now_ms() + ms;
		} else {
			finish_call(c);
		}
		return;
	}
	sse_start(c, NULL);
	if (pj_member(params, "_meta", &meta) && pj_member(meta, "progressToken", &token)) {
		for (int i = 1; i <= 2; i++) {
			struct pj_buf b = {0};
			pj_buf_adds(&b,
			            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
			            "\"params\":{\"progressToken\":");
			pj_buf_add(&b, token.p, token.n);
			pj_buf_addf(&b, ",\"progress\":%d,\"total\":2}}", i);
			pj_buf_add(&b, "", 1);
			sse_event(c, b.p);
			pj_buf_free(&b);
		}
	}
	snprintf(c->ping_id, sizeof(c->ping_id), "ping-%d", ++ping_counter);
	char ping[96];
	snprintf(ping, sizeof(ping), "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"ping\"}",
	         c->ping_id);
	sse_event(c, ping);
	c->state = C_WAIT_PONG;
	c->due_ms = now_ms() + PONG_WAIT_MS;
	c->after_pong_ms = slow ? ms : 0; /* a slow call's delay counts from the pong */
}

/* A response from the client: the pong a held call waits for? */
static void take_response(struct pj_span id)
{
	for (int i = 0; i < MAX_CONNS; i++) {
		struct conn *c = &conns[i];
		if (c->fd >= 0 && c->state == C_WAIT_PONG && pj_string_eq(id, c->ping_id)) {
			c->pong = true;
			c->state = C_HELD_SSE;
			c->due_ms = now_ms() + c->after_pong_ms;
		}
	}
}

static void handle_post(struct conn *c, struct request *r)
{
	struct pj_span msg, method, id, params, v;
	if (pj_parse(r->body, r->body_len, &msg) < 0 || pj_kind(msg) != PJ_OBJECT) {
		log_request(r, 400);
		send_plain(c, 400, "Bad Request", NULL, "application/json",
		           "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,"
		           "\"message\":\"Parse error\"}}");
		return;
	}
	int has_method = pj_member(msg, "method", &method);
	int has_id = pj_member(msg, "id", &id);
	if (!pj_member(msg, "params", &params))
		params.p = NULL, params.n = 0;
	char raw_id[256] = "null";
	if (has_id && id.n < sizeof(raw_id)) {
		memcpy(raw_id, id.p, id.n);
		raw_id[id.n] = '\0';
	}

	if (has_method && pj_string_eq(method, "initialize")) {
		const char *sid = session_new();
		const char *version = "2025-11-25";
		if (pj_member(params, "protocolVersion", &v) &&
		    (pj_string_eq(v, "2025-06-18") || pj_string_eq(v, "2025-03-26")))
			version = pj_string_eq(v, "2025-06-18") ? "2025-06-18" : "2025-03-26";
		char result[256], extra[96];
		snprintf(result, sizeof(result),
		         "{\"protocolVersion\":\"%s\",\"capabilities\":{\"tools\":{}},"
		         "\"serverInfo\":{\"name\":\"mcp-http-fake\",\"version\":\"1.0\"}}",
		         version);
		snprintf(extra, sizeof(extra), "Mcp-Session-Id: %s\r\n", sid);
		log_request(r, 200);
		answer(c, raw_id, result, extra);
		return;
	}
	const char *sid = header(r, "mcp-session-id");
	if (sid == NULL) {
		log_request(r, 400);
		send_plain(c, 400, "Bad Request", NULL, "text/plain", "missing Mcp-Session-Id");
		return;
	}
	if (session_find(sid) < 0) {
		log_request(r, 404);
		send_plain(c, 404, "Not Found", NULL, "text/plain", "no such session");
		return;
	}
	const char *version = header(r, "mcp-protocol-version");
	if (version != NULL && strcmp(version, "2025-11-25") != 0 &&
	    strcmp(version, "2025-06-18") != 0 && strcmp(version, "2025-03-26") != 0) {
		log_request(r, 400);
		send_plain(c, 400, "Bad Request", NULL, "text/plain",
		           "unsupported protocol version");
		return;
	}
	if (!has_method) {
		/* a response: the pong? */
		log_request(r, 202);
		if (has_id)
			take_response(id);
		send_plain(c, 202, "Accepted", NULL, NULL, NULL);
		return;
	}
	if (!has_id) {
		log_request(r, 202);
		send_plain(c, 202, "Accepted", NULL, NULL, NULL);
		return;
	}
	log_request(r, 200);
	if (pj_string_eq(method, "tools/list"))
		answer(c, raw_id, tools_list, NULL);
	else if (pj_string_eq(method, "ping"))
		answer(c, raw_id, "{}", NULL);
	else if (pj_string_eq(method, "tools/call"))
		tools_call(c, id, params);
	else
		answer_error(c, raw_id, -32601, "Method not found");
}

static void handle(struct conn *c, struct request *r)
{
	if (opt.redirect && strcmp(r->method, "POST") == 0) {
		log_request(r, 307);
		send_plain(c, 307, "Temporary Redirect", "Location: /moved\r\n", NULL, NULL);
		return;
	}
	if (strcmp(r->path, "/mcp") != 0) {
		log_request(r, 404);
		send_plain(c, 404, "Not Found", NULL, "text/plain", "not the endpoint");
		return;
	}
	if (opt.require_name != NULL) {
		const char *v = header(r, opt.require_name);
		if (v == NULL || strcmp(v, opt.require_value) != 0) {
			log_request(r, 401);
			send_plain(c, 401, "Unauthorized", NULL, "text/plain",
			           "the required header is missing or wrong");
			return;
		}
	}
	const char *sid = header(r, "mcp-session-id");
	if (sid != NULL && opt.expire_after > 0 && !expired_once &&
	    ++with_session_count == opt.expire_after) {
		expired_once = true;
		session_end(sid);
		log_request(r, 404);
		c->state = C_HELD_404;
		c->due_ms = now_ms() + EXPIRY_HOLD_MS;
		return;
	}
	if (strcmp(r->method, "DELETE") == 0) {
		if (sid != NULL)
			session_end(sid);
		log_request(r, 200);
		send_plain(c, 200, "OK", NULL, NULL, NULL);
	} else if (strcmp(r->method, "POST") == 0) {
		handle_post(c, r);
	} else {
		log_request(r, 405);
		send_plain(c, 405, "Method Not Allowed", "Allow: POST, DELETE\r\n", "text/plain",
		           "no standalone stream here");
	}
}

/* Parse one request out of c->in when it is all there: 1 handled, 0 not
 * yet, -1 bad (the connection closes). */
static int try_request(struct conn *c)
{
	char *end = memmem(c->in.p, c->in.len, "\r\n\r\n", 4);
	if (end == NULL)
		return c->in.len > HEAD_MAX ? -1 : 0;
	size_t head_len = (size_t)(end - c->in.p) + 4;
	struct request r = {0};
	char *line_end = memmem(c->in.p, head_len, "\r\n", 2);
	char *sp1 = memchr(c->in.p, ' ', (size_t)(line_end - c->in.p));
	char *sp2 = sp1 != NULL ? memchr(sp1 + 1, ' ', (size_t)(line_end - sp1 - 1)) : NULL;
	if (sp1 == NULL || sp2 == NULL || (size_t)(sp1 - c->in.p) >= sizeof(r.method) ||
	    (size_t)(sp2 - sp1 - 1) >= sizeof(r.path))
		return -1;
	memcpy(r.method, c->in.p, (size_t)(sp1 - c->in.p));
	memcpy(r.path, sp1 + 1, (size_t)(sp2 - sp1 - 1));
	long long content_length = 0;
	for (char *p = line_end + 2; p < end;) {
		char *e = memmem(p, (size_t)(end + 2 - p), "\r\n", 2);
		char *colon = memchr(p, ':', (size_t)(e - p));
		if (colon != NULL && r.nheaders < MAX_HEADERS) {
			struct header *h = &r.headers[r.nheaders++];
			h->name = strndup(p, (size_t)(colon - p));
			for (char *q = h->name; *q; q++)
				if (*q >= 'A' && *q <= 'Z')
					*q = (char)(*q - 'A' + 'a');
			char *v = colon + 1;
			while (v < e && (*v == ' ' || *v == '\t'))
				v++;
			char *ve = e;
			while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
				ve--;
			h->value = strndup(v, (size_t)(ve - v));
			if (strcmp(h->name, "content-length") == 0)
				content_length = strtoll(h->value, NULL, 10);
		}
		p = e + 2;
	}
	if (content_length < 0 || content_length > BODY_MAX) {
		request_free(&r);
		return -1;
	}
	if (c->in.len < head_len + (size_t)content_length) {
		request_free(&r);
		return 0;
	}
	r.body = c->in.p + head_len;
	r.body_len = (size_t)content_length;
	handle(c, &r);
	request_free(&r);
	size_t used = head_len + (size_t)content_length;
	memmove(c->in.p, c->in.p + used, c->in.len - used);
	c->in.len -= used;
	return 1;
}

/* ---- the loop ------------------------------------------------------------- */

static void conn_close(struct conn *c)
{
	close(c->fd);
	c->fd = -1;
	pj_buf_free(&c->in);
	pj_buf_free(&c->out);
	c->out_off = 0;
	free(c->req_id);
	free(c->text);
	c->req_id = c->text = NULL;
	c->state = C_READ;
	c->close_after = false;
}

static void conn_write(struct conn *c)
{
	while (c->out_off < c->out.len) {
		ssize_t n = write(c->fd, c->out.p + c->out_off, c->out.len - c->out_off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			conn_close(c);
			return;
		}
		c->out_off += (size_t)n;
	}
	c->out.len = c->out_off = 0;
	if (c->close_after)
		conn_close(c);
}

static void conn_read(struct conn *c)
{
	char buf[65536];
	ssize_t n = read(c->fd, buf, sizeof(buf));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		conn_close(c);
		return;
	}
	pj_buf_add(&c->in, buf, (size_t)n);
	while (c->fd >= 0 && c->state == C_READ) {
		int r = try_request(c);
		if (r < 0) {
			pj_buf_adds(&c->out, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n"
			                     "Connection: close\r\n\r\n");
			c->close_after = true;
			c->in.len = 0;
			break;
		}
		if (r == 0)
			break;
	}
	conn_write(c);
}

static void run_due(void)
{
	long long now = now_ms();
	for (int i = 0; i < MAX_CONNS; i++) {
		struct conn *c = &conns[i];
		if (c->fd < 0 || c->state == C_READ || c->due_ms > now)
			continue;
		finish_call(c);
		conn_write(c);
	}
}

int main(int argc, char **argv)
{
	opt.port = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "-redirect") == 0) {
			opt.redirect = true;
			continue;
		}
		if (v == NULL)
			die("%s needs a value", a);
		i++;
		if (strcmp(a, "-port") == 0) {
			opt.port = (int)parse_long(v, a);
		} else if (strcmp(a, "-mode") == 0) {
			if (strcmp(v, "json") != 0 && strcmp(v, "sse") != 0)
				die("-mode is json or sse");
			opt.sse = strcmp(v, "sse") == 0;
		} else if (strcmp(a, "-expire-after") == 0) {
			opt.expire_after = parse_long(v, a);
		} else if (strcmp(a, "-require-header") == 0) {
			const char *colon = strchr(v, ':');
			if (colon == NULL || colon == v)
				die("-require-header is NAME:VALUE");
			opt.require_name = strndup(v, (size_t)(colon - v));
			for (char *q = opt.require_name; *q; q++)
				if (*q >= 'A' && *q <= 'Z')
					*q = (char)(*q - 'A' + 'a');
			opt.require_value = pj_xstrdup(colon + 1);
		} else if (strcmp(a, "-log") == 0) {
			opt.log = fopen(v, "ae");
			if (opt.log == NULL)
				die("%s: %s", v, strerror(errno));
		} else {
			die("unknown option %s", a);
		}
	}
	signal(SIGPIPE, SIG_IGN);
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int one = 1;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in addr = {.sin_family = AF_INET,
	                           .sin_port = htons((unsigned short)opt.port),
	                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) < 0 || listen(lfd, 64) < 0)
		die("cannot listen on 127.0.0.1:%d: %s", opt.port, strerror(errno));
	socklen_t alen = sizeof(addr);
	getsockname(lfd, (struct sockaddr *)&addr, &alen);
	printf("port %d\n", ntohs(addr.sin_port));
	fflush(stdout);
	for (int i = 0; i < MAX_CONNS; i++)
		conns[i].fd = -1;

	for (;;) {
		struct pollfd pfd[MAX_CONNS + 1];
		int map[MAX_CONNS + 1];
		int n = 0;
		pfd[n] = (struct pollfd){.fd = lfd, .events = POLLIN};
		map[n++] = -1;
		long long next = -1;
		for (int i = 0; i < MAX_CONNS; i++) {
			struct conn *c = &conns[i];
			if (c->fd < 0)
				continue;
			short ev = POLLIN;
			if (c->out.len > c->out_off)
				ev |= POLLOUT;
			pfd[n] = (struct pollfd){.fd = c->fd, .events = ev};
			map[n++] = i;
			if (c->state != C_READ && (next < 0 || c->due_ms < next))
				next = c->due_ms;
		}
		int timeout = -1;
		if (next >= 0) {
			long long left = next - now_ms();
			timeout = left < 0 ? 0 : (int)left;
		}
		if (poll(pfd, (nfds_t)n, timeout) < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
		for (int k = 0; k < n; k++) {
			if (pfd[k].revents == 0)
				continue;
			if (map[k] < 0) {
				int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
				if (fd < 0)
					continue;
				int slot = -1;
				for (int i = 0; i < MAX_CONNS && slot < 0; i++)
					if (conns[i].fd < 0)
						slot = i;
				if (slot < 0) {
					close(fd);
					continue;
				}
				memset(&conns[slot], 0, sizeof(conns[slot]));
				conns[slot].fd = fd;
				continue;
			}
			struct conn *c = &conns[map[k]];
			if (c->fd < 0)
				continue;
			if (pfd[k].revents & POLLOUT)
				conn_write(c);
			if (c->fd >= 0 && (pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
				conn_read(c);
		}
		run_due();
	}
}
