/* One MCP client session of the listener: a gateway session on a thread of
 * its own, its client side one end of a socketpair. What the client POSTs
 * goes in as lines; each line the session writes is routed:
 *   - a response, to the POST that carried its request;
 *   - notifications/progress, to the POST whose request gave the token;
 *   - anything else (notifications, the gateway's own requests such as a
 *     confirmation's elicitation/create), to the GET stream when one is
 *     open, else to the newest POST still waiting that takes a stream,
 *     else it is kept (LST_QUEUED_MAX) for the next stream that opens.
 * A stream whose connection does not take its bytes holds this session's
 * output only: reading it pauses until they are taken.
 * The listener's one 2026-07-28 session is every modern client's: what went
 * in carries ids and progress tokens of the listener's (next_request_id),
 * put back to the client's on the way out; a message that names no request
 * goes only to the one POST waiting, there being no GET stream. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sodium.h>

#include "internal/base/cleanup.h"
#include "internal/base/log.h"
#include "internal/base/xalloc.h"
#include "internal/listen/listen-internal.h"
#include "internal/mcp/mcp.h"

/* reads of the session's output per wake-up: one busy session must not
 * keep the listener from the others */
#define READS_PER_WAKE 16

static void on_client_io(struct loop *loop, int fd, uint32_t events, void *data);

static void *client_thread(void *arg);

static void update_watch(struct lst_client *c)
{
	if (c->fd < 0)
		return;
	uint32_t ev = 0;
	if (!c->paused_reading && !c->output_ended)
		ev |= EPOLLIN;
	if (c->to_session.len > 0 && !c->input_closed)
		ev |= EPOLLOUT;
	loop_modify(c->l->loop, c->fd, ev, NULL);
}

struct lst_client *lst_client_new(struct lst *l, bool modern, struct mg_err **err)
{
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) {
		mg_err_sys(err, errno, "socketpair");
		return NULL;
	}
	int out = fcntl(sp[1], F_DUPFD_CLOEXEC, 3);
	if (out < 0) {
		mg_err_sys(err, errno, "dup");
		close(sp[0]);
		close(sp[1]);
		return NULL;
	}
	fcntl(sp[0], F_SETFL, fcntl(sp[0], F_GETFL) | O_NONBLOCK);
	struct lst_client *c = xcalloc(1, sizeof(*c));
	c->l = l;
	c->modern = modern;
	c->fd = sp[0];
	c->stats = lst_metrics_session(l->metrics);
	mg_buf_init(&c->to_session, (size_t)l->limits->listen_body_max * 4 + 4096);
	/* the session's lines are capped at line_max by its own peer */
	rpc_reader_init(&c->from_session, (size_t)l->limits->line_max + 1024);
	c->active_ms = rpc_now_ms();
	unsigned char raw[LST_SESSION_ID_LEN / 2];
	randombytes_buf(raw, sizeof(raw));
	sodium_bin2hex(c->http_id, sizeof(c->http_id), raw, sizeof(raw));
	struct session_options so = {
	    .cfg = l->opt.cfg,
	    .driver = l->opt.driver,
	    .state_dir = l->opt.state_dir,
	    .data_dir = l->opt.data_dir,
	    .workspace = l->opt.workspace,
	    .client_in = sp[1],
	    .client_out = out,
	    .owner = l->opt.owner,
	    .config_error = l->opt.config_error,
	    .workspace_error = l->opt.workspace_error,
	    .workspace_note = l->opt.workspace_note,
	    .runtime_note = l->opt.runtime_note,
	    .on_record = lst_metrics_observe,
	    .record_data = c->stats,
	    .signals_elsewhere = true,
	    .instances = l->instances,
	    .watch_config = l->opt.watch_config,
	    .start_thread = l->opt.start_thread,
	};
	if (session_new(&so, &c->session, err) < 0) {
		c->session = NULL;
		lst_client_free(c);
		return NULL;
	}
	snprintf(c->session_id, sizeof(c->session_id), "%s", session_id(c->session));
	if (loop_watch(l->loop, c->fd, EPOLLIN, on_client_io, c, err) < 0) {
		lst_client_free(c);
		return NULL;
	}
	/* before the thread starts: from then on the session is its own */
	mg_info("client session %s: audit log %s", c->session_id, session_audit_path(c->session));
	int e = pthread_create(&c->thread, NULL, client_thread, c);
	if (e != 0) {
		mg_err_sys(err, e, "starting the session's thread");
		lst_client_free(c);
		return NULL;
	}
	c->thread_running = true;
	c->next = l->clients;
	if (l->clients != NULL)
		l->clients->prev = c;
	l->clients = c;
	l->nclients++;
	if (modern)
		l->modern = c;
	return c;
}

struct lst_client *lst_client_find(struct lst *l, const char *http_id)
{
	if (http_id == NULL || strlen(http_id) != LST_SESSION_ID_LEN)
		return NULL;
	for (struct lst_client *c = l->clients; c != NULL; c = c->next)
		if (!c->gone && !c->modern &&
		    sodium_memcmp(c->http_id, http_id, LST_SESSION_ID_LEN) == 0)
			return c;
	return NULL;
}

int lst_client_send(struct lst_client *c, const char *line, size_t len)
{
	if (c->input_closed || c->fd < 0)
		return -1;
	if (mg_buf_append(&c->to_session, line, len, NULL) < 0)
		return -1;
	c->active_ms = rpc_now_ms();
	update_watch(c);
	return 0;
}

void lst_client_end(struct lst_client *c, const char *why)
{
	if (!c->gone)
		mg_info("client session %s ends: %s", c->session_id, why);
	c->gone = true;
	if (!c->input_closed && c->fd >= 0) {
		/* the session reads the end of its input, stops its servers,
		 * answers what it still can and closes its end */
		shutdown(c->fd, SHUT_WR);
		c->input_closed = true;
		mg_buf_reset(&c->to_session);
		update_watch(c);
	}
}

void lst_client_link(struct lst_client *c, struct lst_req *r)
{
	r->client = c;
	r->prev = NULL;
	r->next = c->reqs;
	if (c->reqs != NULL)
		c->reqs->prev = r;
	c->reqs = r;
}

/* 2026-07-28 over HTTP cancels a request by closing its stream: the
 * session hears it as notifications/cancelled for the id it knows */
static void modern_cancel(struct lst_client *c, struct lst_req *r, const char *why)
{
	if (!r->modern || r->answered)
		return;
	struct json_value *p = json_new_object();
	json_object_set(p, "requestId", json_new_int(r->session_id));
	json_object_set(p, "reason", json_new_string(why));
	struct mg_buf line = MG_BUF_INIT(4096);
	if (rpc_build_notification("notifications/cancelled", p, &line, NULL) == 0)
		lst_client_send(c, line.data, line.len);
	mg_buf_free(&line);
	json_free(p);
}

void lst_client_unlink(struct lst_client *c, struct lst_req *r)
{
	if (r->client != c)
		return;
	if (r->kind == REQ_POST)
		modern_cancel(c, r, "the client closed its connection");
	if (r->prev != NULL)
		r->prev->next = r->next;
	else
		c->reqs = r->next;
	if (r->next != NULL)
		r->next->prev = r->prev;
	r->next = r->prev = NULL;
	r->client = NULL;
	if (c->blocked_on == r)
		c->blocked_on = NULL;
	if (c->get == r)
		c->get = NULL;
	if (r->kind == REQ_POST && !r->answered && c->inflight > 0)
		c->inflight--;
	c->active_ms = rpc_now_ms();
}

/* ---- routing ------------------------------------------------------------ */

static struct lst_req *exchange_by(struct lst_client *c, bool progress, const char *key)
{
	for (struct lst_req *r = c->reqs; r != NULL; r = r->next) {
		const char *k = progress ? r->progress_key : r->id_key;
		if (r->kind == REQ_POST && !r->answered && k != NULL && strcmp(k, key) == 0)
			return r;
	}
	return NULL;
}

/* A line the session wrote (raw), and as it goes to the client (out): the
 * same line but in the modern session, where the client's own id or
 * progress token is put back */
struct routed {
	const char *raw, *out;
	size_t raw_len, out_len;
};

/* false: r's stream is full, the session's line is held (and routed again
 * when the stream drains) and reading paused */
static bool to_stream(struct lst_client *c, struct lst_req *r, const struct routed *line,
                      bool force)
{
	if (r->out.len >= LST_STREAM_HIGH && !force) {
		c->held = xmemdup(line->raw, line->raw_len);
		c->held_len = line->raw_len;
		c->blocked_on = r;
		c->paused_reading = true;
		return false;
	}
	r->want_stream = true;
	lst_req_event(r, line->out, line->out_len);
	return true;
}

static void deliver_answer(struct lst_client *c, struct lst_req *r, const struct routed *line,
                           bool force)
{
	if (r->streaming || r->want_stream || !r->accept_json) {
		if (!to_stream(c, r, line, force))
			return;
		r->finished = true;
	} else {
		r->answer = xmemdup(line->out, line->out_len);
		r->answer_len = line->out_len;
	}
	r->answered = true;
	if (c->inflight > 0)
		c->inflight--;
	c->active_ms = rpc_now_ms();
	lst_req_wake(r);
}

/* The modern session's message that names no request (a server's log
 * message during a call): it may go only where it cannot be another
 * request's, so to the one POST waiting, else nowhere (2026-07-28 has no
 * stream for what belongs to no request) */
static void deliver_unattributed(struct lst_client *c, const struct routed *line)
{
	struct lst_req *target = NULL;
	unsigned waiting = 0;
	for (struct lst_req *r = c->reqs; r != NULL; r = r->next)
		if (r->kind == REQ_POST && !r->answered) {
			waiting++;
			target = r;
		}
	if (waiting == 1 && target->accept_sse) {
		if (to_stream(c, target, line, false))
			lst_req_wake(target);
		return;
	}
	lst_metrics_dropped(c->l->metrics, "unattributed");
}

static void deliver_other(struct lst_client *c, const struct routed *line)
{
	if (c->modern) {
		deliver_unattributed(c, line);
		return;
	}
	struct lst_req *target = c->get;
	for (struct lst_req *r = c->reqs; target == NULL && r != NULL; r = r->next)
		if (r->kind == REQ_POST && !r->answered && r->accept_sse)
			target = r;
	if (target != NULL) {
		if (to_stream(c, target, line, false))
			lst_req_wake(target);
		return;
	}
	size_t len = line->out_len;
	if (c->queued.n >= LST_QUEUED_MAX || c->queued_bytes + len > LST_QUEUED_BYTES_MAX) {
		mg_warn("client session %s: a message was dropped: no stream is open to take it "
		        "and %u wait already",
		        c->session_id, (unsigned)c->queued.n);
		lst_metrics_dropped(c->l->metrics, "no-stream");
		return;
	}
	strv_push_owned(&c->queued, xstrndup(line->out, len));
	c->queued_bytes += len;
}

/* Whether name may follow "Mcp-Param-" in a header name: RFC 9110 token
 * characters, at most LST_PARAM_HEADER_MAX (a client refuses a tool whose
 * name is not; the listener then has nothing of it to check) */
static bool param_header_name_ok(const char *name, size_t len)
{
	if (len == 0 || len > LST_PARAM_HEADER_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)name[i]) && strchr("!#$%&'*+-.^_`|~", name[i]) == NULL)
			return false;
	return true;
}

void lst_params_learn(struct lst *l, const struct json_value *result)
{
	const struct json_value *tools = json_get(result, "tools");
	if (tools == NULL || tools->kind != JSON_ARRAY)
		return;
	if (l->param_headers == NULL)
		l->param_headers = json_new_object();
	for (size_t i = 0; i < tools->u.arr.len; i++) {
		const struct json_value *tool = tools->u.arr.items[i];
		const char *name = json_get_string(tool, "name");
		const struct json_value *props =
		    json_get(json_get(tool, "inputSchema"), "properties");
		if (name == NULL)
			continue;
		struct json_value *decls = json_new_array();
		for (size_t j = 0;
		     props != NULL && props->kind == JSON_OBJECT && j < props->u.obj.len; j++) {
			const struct json_member *p = &props->u.obj.items[j];
			const struct json_value *h = json_get(p->value, "x-mcp-header");
			if (h == NULL || h->kind != JSON_STRING ||
			    !param_header_name_ok(h->u.str.ptr, h->u.str.len))
				continue;
			const char *type = json_get_string(p->value, "type");
			struct json_value *d = json_new_object();
			json_object_set(d, "property", json_new_stringn(p->key, p->keylen));
			json_object_set(d, "header", json_new_stringn(h->u.str.ptr, h->u.str.len));
			json_object_set(d, "type", json_new_string(type != NULL ? type : ""));
			json_array_push(decls, d);
		}
		if (json_get(l->param_headers, name) == NULL &&
		    l->param_headers->u.obj.len >= LST_PARAM_TOOLS_MAX) {
			json_free(decls);
			continue;
		}
		json_object_set(l->param_headers, name, decls);
	}
}

/* What the modern session wrote for r, with the client's own id (a
 * response) or progress token (progress) put back, generated into buf */
static int restore_client_ids(const struct lst_req *r, struct rpc_msg *m, bool progress,
                              struct mg_buf *buf, struct routed *line)
{
	if (progress)
		/* m->params borrows from m->root, which is ours to change */
		json_object_set((struct json_value *)m->params, "progressToken",
		                json_copy(r->progress_token));
	else
		json_object_set(m->root, "id", json_copy(r->id));
	m->id = NULL; /* replaced: it pointed at what was freed */
	if (json_generate(m->root, buf, NULL) < 0)
		return -1;
	line->out = buf->data;
	line->out_len = buf->len;
	return 0;
}

/* A notification of the modern session's on a subscriptions/listen: its
 * subscriptionId, the id the session knows, is put back to the client's */
static int restore_subscription(const struct lst_req *r, struct rpc_msg *m, struct mg_buf *buf,
                                struct routed *line)
{
	struct json_value *meta = (struct json_value *)json_get(m->params, "_meta");
	json_object_set(meta, MCP_META_SUBSCRIPTION_ID, json_copy(r->id));
	if (json_generate(m->root, buf, NULL) < 0)
		return -1;
	line->out = buf->data;
	line->out_len = buf->len;
	return 0;
}

static void route(struct lst_client *c, const char *line, size_t len)
{
	struct rpc_msg m = {0};
	struct mg_err *err = NULL;
	if (rpc_parse(line, len, 0, &m, &err) < 0) {
		/* the gateway writes only messages; nothing else is relayed */
		mg_warn("client session %s: not a message from the session: %s", c->session_id,
		        mg_err_msg(err));
		mg_err_free(err);
		rpc_msg_free(&m);
		lst_metrics_dropped(c->l->metrics, "invalid");
		return;
	}
	cleanup_free char *key = NULL;
	struct lst_req *r = NULL;
	struct routed rl = {.raw = line, .raw_len = len, .out = line, .out_len = len};
	struct mg_buf restored = MG_BUF_INIT((size_t)c->l->limits->line_max + 4096);
	switch (m.kind) {
	case RPC_RESULT:
	case RPC_ERROR:
		key = rpc_id_key(m.id);
		r = key != NULL ? exchange_by(c, false, key) : NULL;
		if (r != NULL && r->modern) {
			/* the statuses 2026-07-28's HTTP binding gives these errors */
			if (m.kind == RPC_ERROR && m.error_code == RPC_METHOD_NOT_FOUND)
				r->answer_status = 404;
			else if (m.kind == RPC_ERROR &&
			         (m.error_code == LST_MISSING_CAPABILITY ||
			          m.error_code == RPC_UNSUPPORTED_PROTOCOL_VERSION))
				r->answer_status = 400;
			if (m.kind == RPC_RESULT && r->lists_tools)
				lst_params_learn(c->l, m.result);
			if (restore_client_ids(r, &m, false, &restored, &rl) < 0) {
				lst_metrics_dropped(c->l->metrics, "too-long");
				break;
			}
		}
		if (r != NULL)
			deliver_answer(c, r, &rl, false);
		else
			/* its POST's connection is gone: a stream must not carry
			 * another request's answer (the specification's rule) */
			lst_metrics_dropped(c->l->metrics, "no-request");
		break;
	case RPC_NOTIFICATION:
		if (c->modern &&
		    json_get(json_get(m.params, "_meta"), MCP_META_SUBSCRIPTION_ID) != NULL) {
			/* a listen's: to its stream, which stays open, and no other */
			key = rpc_id_key(
			    json_get(json_get(m.params, "_meta"), MCP_META_SUBSCRIPTION_ID));
			r = key != NULL ? exchange_by(c, false, key) : NULL;
			if (r == NULL || !r->modern || !r->accept_sse ||
			    restore_subscription(r, &m, &restored, &rl) < 0)
				lst_metrics_dropped(c->l->metrics, "no-request");
			else if (to_stream(c, r, &rl, false))
				lst_req_wake(r);
			break;
		}
		if (strcmp(m.method, "notifications/progress") == 0) {
			key = rpc_id_key(json_get(m.params, "progressToken"));
			r = key != NULL ? exchange_by(c, true, key) : NULL;
		}
		if (r != NULL && r->modern &&
		    (!r->accept_sse || restore_client_ids(r, &m, true, &restored, &rl) < 0))
			/* its request's, and no other's */
			lst_metrics_dropped(c->l->metrics, "no-stream");
		else if (r != NULL && r->accept_sse) {
			if (to_stream(c, r, &rl, false))
				lst_req_wake(r);
		} else if (c->modern && key != NULL) {
			/* progress of a request whose POST is gone */
			lst_metrics_dropped(c->l->metrics, "no-request");
		} else {
			deliver_other(c, &rl);
		}
		break;
	case RPC_REQUEST:
	case RPC_INVALID:
		deliver_other(c, &rl);
		break;
	}
	mg_buf_free(&restored);
	rpc_msg_free(&m);
}

/* Route what the reader holds, until a stream is full */
static void drain(struct lst_client *c)
{
	while (!c->paused_reading) {
		const char *line;
		size_t len;
		int r = rpc_reader_next(&c->from_session, &line, &len);
		if (r == 0)
			break;
		if (r == RPC_OVERFLOW) {
			lst_metrics_dropped(c->l->metrics, "too-long");
			continue;
		}
		route(c, line, len);
	}
}

void lst_client_stream_opened(struct lst_client *c, struct lst_req *r)
{
	for (size_t i = 0; i < c->queued.n; i++) {
		r->want_stream = true;
		lst_req_event(r, c->queued.v[i], strlen(c->queued.v[i]));
	}
	strv_free(&c->queued);
	c->queued_bytes = 0;
}

/* r's answer will never be read, or never come: its POST is answered now
 * with an error saying why, and it no longer counts as in flight */
static void abandon(struct lst_client *c, struct lst_req *r, const char *why)
{
	struct mg_buf line = MG_BUF_INIT((size_t)1 << 20);
	if (r->id != NULL &&
	    rpc_build_error(r->id, RPC_SERVER_ERROR, why, NULL, &line, NULL) == 0 && line.len > 0) {
		/* one line, without its newline; a full stream takes it anyway */
		r->out.max += line.len + 64;
		struct routed rl = {line.data, line.data, line.len - 1, line.len - 1};
		deliver_answer(c, r, &rl, true);
	}
	mg_buf_free(&line);
}

void lst_client_cancelled(struct lst_client *c, const struct json_value *request_id)
{
	cleanup_free char *key = rpc_id_key(request_id);
	struct lst_req *r = key != NULL ? exchange_by(c, false, key) : NULL;
	/* the gateway sends no answer to a cancelled request */
	if (r != NULL)
		abandon(c, r, "the client cancelled this request");
}

/* ---- the session's end -------------------------------------------------- */

static void finish_if_done(struct lst_client *c)
{
	if (c->thread_running || !c->output_ended)
		return;
	struct lst *l = c->l;
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		l->clients = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	l->nclients--;
	if (l->modern == c)
		l->modern = NULL;
	lst_client_free(c);
	lst_maybe_done(l);
}

/* The session closed its end: whatever still waits is answered */
static void output_ended(struct lst_client *c)
{
	c->output_ended = true;
	c->gone = true;
	while (c->reqs != NULL) {
		struct lst_req *r = c->reqs;
		if (r->kind == REQ_POST && !r->answered)
			abandon(c, r, "the session ended before answering this request");
		r->finished = true;
		lst_req_wake(r);
		lst_client_unlink(c, r);
	}
	free(c->held);
	c->held = NULL;
	loop_unwatch(c->l->loop, c->fd);
	close(c->fd);
	c->fd = -1;
	finish_if_done(c);
}

static void on_thread_done(struct loop *loop, void *data)
{
	(void)loop;
	struct lst_client *c = data;
	pthread_join(c->thread, NULL);
	c->thread_running = false;
	lst_metrics_session_end(c->stats);
	c->stats = NULL;
	finish_if_done(c);
}

static void *client_thread(void *arg)
{
	struct lst_client *c = arg;
	struct mg_err *err = NULL;
	if (session_run(c->session, &err) < 0)
		mg_warn("client session %s: %s", c->session_id, mg_err_msg(err));
	mg_err_free(err);
	/* closes its end of the socketpair: the listener reads the end */
	session_free(c->session);
	c->session = NULL;
	loop_post(c->l->loop, on_thread_done, c);
	return NULL;
}

/* ---- the socketpair ----------------------------------------------------- */

static void on_client_io(struct loop *loop, int fd, uint32_t events, void *data)
{
	(void)loop;
	struct lst_client *c = data;
	/* output_ended() frees c when its thread has ended already (its
	 * on_thread_done ran first): past that call only l is ours */
	struct lst *l = c->l;
	if ((events & EPOLLOUT) && c->to_session.len > 0) {
		ssize_t w = send(fd, c->to_session.data, c->to_session.len, MSG_NOSIGNAL);
		if (w > 0)
			mg_buf_consume(&c->to_session, (size_t)w);
		else if (w < 0 && errno != EAGAIN && errno != EINTR)
			mg_buf_reset(&c->to_session);
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
		for (int i = 0; i < READS_PER_WAKE && !c->paused_reading; i++) {
			drain(c);
			if (c->paused_reading)
				break;
			struct mg_err *err = NULL;
			ssize_t n = rpc_reader_read_fd(&c->from_session, fd, &err);
			mg_err_free(err);
			if (n == RPC_AGAIN)
				break;
			if (n <= 0) {
				drain(c);
				output_ended(c); /* may free c */
				if (l->kick)
					lst_mhd_run(l);
				return;
			}
		}
		drain(c);
	}
	update_watch(c);
	if (l->kick)
		lst_mhd_run(l);
}

void lst_client_after_run(struct lst_client *c)
{
	if (!c->paused_reading || c->output_ended)
		return;
	if (c->blocked_on != NULL && c->blocked_on->out.len >= LST_STREAM_HIGH / 2)
		return;
	c->paused_reading = false;
	c->blocked_on = NULL;
	char *held = c->held;
	c->held = NULL;
	if (held != NULL)
		route(c, held, c->held_len);
	free(held);
	drain(c);
	update_watch(c);
}

void lst_client_tick(struct lst_client *c, int64_t now)
{
	/* the modern session is every token holder's: it ends with the listener */
	if (!c->gone && !c->modern && c->inflight == 0 && c->get == NULL &&
	    now - c->active_ms > (int64_t)c->l->limits->listen_idle_timeout * 1000)
		lst_client_end(c, "idle for longer than listen_idle_timeout");
	for (struct lst_req *r = c->reqs; r != NULL; r = r->next) {
		/* a suspended connection is not watched: a client gone while its
		 * call runs is found here, so it stops counting as in flight */
		if (r->kind == REQ_POST && !r->answered && r->suspended && lst_req_peer_gone(r)) {
			modern_cancel(c, r, "the client closed its connection");
			abandon(c, r, "the client closed its connection");
		}
		if (r->streaming && now - r->last_write_ms >= LST_KEEPALIVE_MS) {
			mg_buf_puts(&r->out, ": keep-alive\n\n", NULL);
			r->last_write_ms = now;
			lst_req_wake(r);
		}
	}
}

void lst_client_free(struct lst_client *c)
{
	if (c == NULL)
		return;
	if (c->fd >= 0) {
		loop_unwatch(c->l->loop, c->fd);
		close(c->fd);
	}
	session_free(c->session);
	lst_metrics_session_end(c->stats);
	mg_buf_free(&c->to_session);
	rpc_reader_free(&c->from_session);
	strv_free(&c->queued);
	free(c->held);
	free(c);
}
