/* The session fuzzer through serve --listen's request path: lst_run itself,
 * on a unix socket in the input's folder, with libmicrohttpd replaced by
 * fake_mhd.c. So every POST passes the listener's own checks (Host, Origin,
 * the token, the body's size and JSON-RPC, the session it names, 2026-07-28's
 * envelope and mirrored headers, Mcp-Param-* against the tools it listed),
 * goes into its session as the listener writes it (ids and progress tokens
 * rewritten in the modern session), and what each session writes is routed
 * back by the listener's client.c, to the POST, stream or queue it picks.
 *
 * The listener's thread is the fuzzer's; each session runs on a thread of
 * its own, as under serve --listen. The next op runs from fake MHD_run once
 * all is quiet: no connection to run, every socketpair empty both ways, and
 * each session idle on its own thread (asked with a post to its loop, which
 * also finds it has read all its input). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "fuzz/session_fuzz.h"
#include "internal/base/cleanup.h"
#include "internal/base/xalloc.h"
#include "internal/mcp/mcp.h"

#define N(a)            (sizeof(a) / sizeof((a)[0]))
#define EVENTS_MAX      ((size_t)64 << 20)
#define POST_WAIT_LIMIT 30

/* ---- each session idle, asked on its own thread ---------------------------- */

struct barrier {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done, idle;
	struct sf_session *ss;
	int fd; /* the listener's end of its client socketpair */
};

static void barrier_cb(struct loop *loop, void *data)
{
	(void)loop;
	struct barrier *b = data;
	bool idle = sf_session_busy(b->ss) == SF_IDLE && sf_queued_out(b->fd) == 0;
	pthread_mutex_lock(&b->mu);
	b->idle = idle;
	b->done = true;
	pthread_cond_signal(&b->cv);
	pthread_mutex_unlock(&b->mu);
}

static bool idle_across(struct sf_session *ss, int fd)
{
	struct barrier b = {.ss = ss, .fd = fd};
	pthread_mutex_init(&b.mu, NULL);
	pthread_cond_init(&b.cv, NULL);
	loop_post(ss->s->loop, barrier_cb, &b);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += POST_WAIT_LIMIT;
	pthread_mutex_lock(&b.mu);
	while (!b.done)
		if (pthread_cond_timedwait(&b.cv, &b.mu, &until) == ETIMEDOUT)
			sf_finding("session %s ran no post for %d s", ss->id, POST_WAIT_LIMIT);
	pthread_mutex_unlock(&b.mu);
	pthread_cond_destroy(&b.cv);
	pthread_mutex_destroy(&b.mu);
	return b.idle;
}

static bool quiet(struct lst *l)
{
	if (sf_mhd_busy(l->mhd))
		return false;
	bool settled = true;
	for (size_t i = 0;; i++) {
		pthread_mutex_lock(&sf_world->lock);
		struct sf_session *ss = i < sf_world->nsessions ? sf_world->sessions[i] : NULL;
		pthread_mutex_unlock(&sf_world->lock);
		if (ss == NULL)
			break;
		settled &= sf_fakes_settled(ss);
	}
	if (!settled)
		return false;
	for (struct lst_client *c = l->clients; c != NULL; c = c->next) {
		struct sf_session *ss = sf_session_by_id(c->session_id);
		if (c->gone || c->input_closed || c->output_ended || c->fd < 0) {
			/* it ends: its end waits for the starts it holds */
			if (ss != NULL)
				sf_release(ss);
			return false;
		}
		if (ss == NULL || c->to_session.len > 0 || c->paused_reading || c->held != NULL ||
		    sf_queued_in(c->fd) > 0 || sf_queued_out(c->fd) > 0)
			return false;
		if (!idle_across(ss, c->fd) || sf_queued_in(c->fd) > 0 || !sf_fakes_settled(ss))
			return false;
	}
	return true;
}

void sf_listen_step(void *listener)
{
	struct sf_world *w = sf_world;
	struct lst *l = listener;
	w->lst = l;
	if (w->stopped)
		return;
	if (!quiet(l)) {
		w->slow = sf_unquiet();
		return;
	}
	sf_quiet();
	w->slow = false;
	if (!((w->flags & SF_HOLD) && w->next < w->nops) && sf_release(NULL))
		return;
	if (sf_next_op())
		return;
	/* what a signal does: every session's input closes, each ends */
	sf_trace("the listener ends");
	w->stopped = true;
	l->stopping = true;
	for (struct lst_client *c = l->clients; c != NULL; c = c->next)
		lst_client_end(c, "the fuzzer's input ended");
	lst_maybe_done(l);
}

int sf_listen_delay_ms(void)
{
	if (sf_world->stopped)
		return -1;
	return sf_world->slow;
}

/* ---- requests ------------------------------------------------------------------ */

/* A header's value as a client writes it: as it is when it may be, else
 * 2026-07-28's =?base64?...?= */
static char *header_value(const char *s, size_t len)
{
	bool plain =
	    len > 0 && s[0] != ' ' && s[0] != '\t' && s[len - 1] != ' ' && s[len - 1] != '\t';
	for (size_t i = 0; i < len && plain; i++)
		plain = (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] <= 0x7e;
	if (plain)
		return xstrndup(s, len);
	size_t n = sodium_base64_encoded_len(len, sodium_base64_VARIANT_ORIGINAL);
	char *b = xmalloc(n);
	sodium_bin2base64(b, n, (const unsigned char *)s, len, sodium_base64_VARIANT_ORIGINAL);
	char *v = xasprintf("=?base64?%s?=", b);
	free(b);
	return v;
}

static void header_of(struct strv *h, const char *name, const struct json_value *v)
{
	cleanup_free char *value = NULL;
	if (v == NULL)
		return;
	if (v->kind == JSON_STRING)
		value = header_value(v->u.str.ptr, v->u.str.len);
	else if (v->kind == JSON_BOOL)
		value = xstrdup(v->u.boolean ? "true" : "false");
	else if (v->kind == JSON_NUMBER)
		value = xstrndup(v->u.num.ptr, v->u.num.len);
	if (value != NULL)
		strv_pushf(h, "%s: %s", name, value);
}

static void common_headers(struct strv *h)
{
	strv_push(h, "Host: localhost");
	strv_pushf(h, "Authorization: Bearer %s", sf_world->lst->token);
}

/* The headers a client of its era sends with m (its body, maybe no message) */
static void post_headers(struct strv *h, const struct sf_client *cl, const struct rpc_msg *m,
                         size_t len)
{
	common_headers(h);
	strv_push(h, "Content-Type: application/json");
	strv_push(h, "Accept: application/json, text/event-stream");
	strv_pushf(h, "Content-Length: %zu", len);
	bool initialize = m->method != NULL && strcmp(m->method, "initialize") == 0;
	if (!cl->modern) {
		if (cl->http_id[0] != '\0' && !initialize) {
			strv_pushf(h, "Mcp-Session-Id: %s", cl->http_id);
			strv_push(h, "MCP-Protocol-Version: 2025-11-25");
		}
		return;
	}
	if (m->method == NULL)
		return;
	const struct json_value *meta = json_get(m->params, "_meta");
	header_of(h, "MCP-Protocol-Version", json_get(meta, MCP_META_PROTOCOL_VERSION));
	strv_pushf(h, "Mcp-Method: %s", m->method);
	if (strcmp(m->method, "tools/call") == 0 || strcmp(m->method, "prompts/get") == 0)
		header_of(h, "Mcp-Name", json_get(m->params, "name"));
	else if (strcmp(m->method, "resources/read") == 0)
		header_of(h, "Mcp-Name", json_get(m->params, "uri"));
	if (strcmp(m->method, "tools/call") == 0) {
		const struct json_value *args = json_get(m->params, "arguments");
		header_of(h, "Mcp-Param-Text", json_get(args, "text"));
		header_of(h, "Mcp-Param-N", json_get(args, "n"));
	}
}

static const char *const header_names[] = {
    "MCP-Protocol-Version", "Mcp-Method",     "Mcp-Name", "Mcp-Session-Id", "Accept",
    "Content-Type",         "Authorization",  "Host",     "Origin",         "Mcp-Param-Text",
    "Mcp-Param-N",          "Content-Length",
};

static void edit_header(struct strv *h, const struct sf_edit *e, size_t client)
{
	const char *name = header_names[e->target % N(header_names)];
	size_t n = strlen(name);
	long at = -1;
	for (size_t i = 0; i < h->n && at < 0; i++)
		if (strncasecmp(h->v[i], name, n) == 0 && h->v[i][n] == ':')
			at = (long)i;
	const char *old = at >= 0 ? h->v[at] + n + 2 : "";
	cleanup_free char *value = NULL;
	bool drop = false, twice = false;
	switch (e->kind % 12) {
	case 0:
		drop = true;
		break;
	case 1:
		value = xstrdup("");
		break;
	case 2:
		value = xstrdup("garbage");
		break;
	case 3:
		value = xasprintf(" \t%s ", old);
		break;
	case 4:
		value = xasprintf("%s\x01", old);
		break;
	case 5: {
		size_t b = sodium_base64_encoded_len(strlen(old), sodium_base64_VARIANT_ORIGINAL);
		cleanup_free char *enc = xmalloc(b);
		sodium_bin2base64(enc, b, (const unsigned char *)old, strlen(old),
		                  sodium_base64_VARIANT_ORIGINAL);
		value = xasprintf("=?base64?%s?=", enc);
		break;
	}
	case 6:
		value = xstrdup("=?base64?!!!?=");
		break;
	case 7: {
		const struct sf_client *other = &sf_world->clients[(client + 1) % SF_CLIENTS];
		value = xstrdup(other->http_id[0] != '\0' ? other->http_id
		                                          : "0123456789abcdef0123456789abcdef");
		break;
	}
	case 8:
		value = xstrdup("2025-06-18");
		break;
	case 9:
		value = xstrdup(MCP_PROTOCOL_MODERN);
		break;
	case 10: {
		size_t len = (size_t)e->param * 64 + 1;
		value = xmalloc(len + 1);
		memset(value, 'a', len);
		value[len] = '\0';
		break;
	}
	default:
		value = xstrdup("dup");
		twice = true;
	}
	struct strv out = STRV_INIT;
	for (size_t i = 0; i < h->n; i++) {
		if ((long)i != at) {
			strv_push(&out, h->v[i]);
			continue;
		}
		if (twice)
			strv_pushf(&out, "%s: %s", name, value);
		if (twice)
			strv_push(&out, h->v[i]);
		else if (!drop)
			strv_pushf(&out, "%s: %s", name, value);
	}
	if (at < 0 && !drop)
		strv_pushf(&out, "%s: %s", name, value);
	strv_free(h);
	*h = out;
}

static void edit_headers(struct strv *h, size_t client)
{
	struct sf_world *w = sf_world;
	for (size_t i = 0; i < w->nheaders; i++)
		edit_header(h, &w->headers[i], client);
	w->nheaders = 0;
}

static struct sf_http *exchange_new(size_t client, char kind)
{
	struct sf_http *x = xcalloc(1, sizeof(*x));
	x->client = client;
	x->kind = kind;
	mg_buf_init(&x->events, EVENTS_MAX);
	x->next = sf_world->http;
	sf_world->http = x;
	return x;
}

static void request(struct sf_http *x, const char *method, const char *url, const struct strv *h,
                    const char *body, size_t len)
{
	sf_trace("http %zu: %s %s %.*s", x->client, method, url, (int)(len > 400 ? 400 : len),
	         body != NULL ? body : "");
	for (size_t i = 0; i < h->n; i++)
		sf_trace("  %.200s", h->v[i]);
	x->conn = sf_mhd_request(sf_world->lst->mhd, method, url, h, body, len, x);
}

void sf_listen_post(size_t client, const struct json_value *msg, const char *raw, size_t raw_len)
{
	struct sf_world *w = sf_world;
	const struct sf_client *cl = &w->clients[client];
	cleanup_free char *text = msg != NULL ? sf_text(msg) : NULL;
	const char *body = text != NULL ? text : raw;
	size_t len = text != NULL ? strlen(text) : raw_len;
	struct rpc_msg m = {0};
	cleanup_err struct mg_err *err = NULL;
	bool parsed = rpc_parse(body, len, 0, &m, &err) == 0;
	struct sf_http *x = exchange_new(client, 'P');
	x->modern = cl->modern;
	if (parsed && m.kind == RPC_REQUEST) {
		x->id = json_copy(m.id);
		const struct json_value *t = json_get(json_get(m.params, "_meta"), "progressToken");
		x->token = t != NULL ? json_copy(t) : NULL;
		x->initialize = strcmp(m.method, "initialize") == 0;
	}
	struct strv h = STRV_INIT;
	post_headers(&h, cl, &m, len);
	edit_headers(&h, client);
	request(x, "POST", "/mcp", &h, body, len);
	strv_free(&h);
	rpc_msg_free(&m);
}

static void tick(struct lst *l)
{
	for (struct lst_client *c = l->clients; c != NULL; c = c->next)
		lst_client_tick(c, rpc_now_ms());
}

void sf_listen_http(uint8_t action, uint8_t which, size_t client)
{
	struct sf_world *w = sf_world;
	const struct sf_client *cl = &w->clients[client];
	struct strv h = STRV_INIT;
	switch (action % 6) {
	case 0: {
		/* the client hangs up one of its connections */
		size_t n = 0;
		for (struct sf_http *x = w->http; x != NULL; x = x->next)
			n++;
		struct sf_http *x = w->http;
		for (size_t i = 0; n > 0 && i < which % n; i++)
			x = x->next;
		if (x != NULL) {
			sf_trace("http %zu hangs up its %c", x->client, x->kind);
			sf_mhd_hang_up(x->conn);
		}
		tick(w->lst);
		break;
	}
	case 1:
	case 2: {
		common_headers(&h);
		if (action % 6 == 1)
			strv_push(&h, "Accept: text/event-stream");
		if (cl->http_id[0] != '\0') {
			strv_pushf(&h, "Mcp-Session-Id: %s", cl->http_id);
			strv_push(&h, "MCP-Protocol-Version: 2025-11-25");
		}
		edit_headers(&h, client);
		char kind = action % 6 == 1 ? 'G' : 'D';
		request(exchange_new(client, kind), kind == 'G' ? "GET" : "DELETE", "/mcp", &h,
		        NULL, 0);
		break;
	}
	case 3:
	case 4:
		common_headers(&h);
		edit_headers(&h, client);
		request(exchange_new(client, 'M'), "GET", action % 6 == 3 ? "/metrics" : "/health",
		        &h, NULL, 0);
		break;
	default:
		tick(w->lst);
	}
	strv_free(&h);
}

/* ---- answers -------------------------------------------------------------------- */

void sf_http_bytes(struct sf_http *x, unsigned status, const char *session_id, const char *data,
                   size_t len, bool stream)
{
	struct sf_world *w = sf_world;
	struct sf_client *cl = &w->clients[x->client];
	if (x->initialize && session_id != NULL && status == 200)
		snprintf(cl->http_id, sizeof(cl->http_id), "%s", session_id);
	sf_trace("http %zu: %u%s %.*s", x->client, status, stream ? " (stream)" : "",
	         (int)(len > 400 ? 400 : len), data);
	if (x->kind == 'M')
		return;
	if (!stream) {
		if (len > 0)
			sf_client_line(cl, data, len, x, true);
		return;
	}
	if (mg_buf_append(&x->events, data, len, NULL) < 0)
		sf_finding("a stream held more than %zu bytes without an event's end", EVENTS_MAX);
	for (;;) {
		const char *all = mg_buf_str(&x->events);
		const char *end = strstr(all, "\n\n");
		if (end == NULL)
			break;
		for (const char *line = all; line < end;) {
			const char *eol = memchr(line, '\n', (size_t)(end - line));
			if (eol == NULL)
				eol = end;
			if (strncmp(line, "data: ", 6) == 0)
				sf_client_line(cl, line + 6, (size_t)(eol - line - 6), x, false);
			line = eol + 1;
		}
		mg_buf_consume(&x->events, (size_t)(end - all) + 2);
	}
}

static void exchange_free(struct sf_http *x)
{
	json_free(x->id);
	json_free(x->token);
	mg_buf_free(&x->events);
	free(x);
}

void sf_http_closed(struct sf_http *x)
{
	for (struct sf_http **p = &sf_world->http; *p != NULL; p = &(*p)->next)
		if (*p == x) {
			*p = x->next;
			exchange_free(x);
			return;
		}
}

/* ---- the run ---------------------------------------------------------------------- */

void sf_listen_run(void)
{
	struct sf_world *w = sf_world;
	cleanup_free char *where = xasprintf("unix:%s/l.sock", w->dir);
	cleanup_free char *token = xasprintf("%s/listener-token", w->dir);
	cleanup_free char *data = sf_data_dir();
	struct lst_address address;
	cleanup_err struct mg_err *err = NULL;
	if (lst_address_parse(where, false, &address, &err) < 0)
		sf_finding("the listener's address: %s", mg_err_msg(err));
	struct lst_options o = {
	    .address = &address,
	    .cfg = w->cfg,
	    .state_dir = w->dir,
	    .data_dir = data,
	    .workspace = w->dir,
	    .token_path = token,
	    .owner = getpid(),
	    .start_thread = sf_start_thread,
	};
	if (lst_run(&o, &err) < 0)
		sf_finding("serve --listen: %s", mg_err_msg(err));
	w->lst = NULL;
	while (w->http != NULL) {
		struct sf_http *x = w->http;
		w->http = x->next;
		exchange_free(x);
	}
}
