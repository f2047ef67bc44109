/* libFuzzer target: a whole gateway session in one process, its client and
 * its servers played by the fuzzer over socketpairs (gateway_fakes.h), on
 * stdio or through serve --listen's request path (session_fuzz_listen.c),
 * fed messages of both MCP eras whose members the input changes. The input
 * is a program of ops (session_fuzz_program.c says what an op does;
 * session_fuzz_mutator.c mutates it at the grain of ops); here is how it
 * runs, and what is checked of what the gateway sends.
 *
 * Each op waits until the session is quiet: every byte sent was read,
 * every byte written was taken, nothing is queued, starting or running
 * on a job. So one input runs the same way every time, and a crash
 * reproduces from its artifact (SESSION_FUZZ_TRACE=1: each op and line).
 *
 * What must not happen, besides what the sanitizers report: a line to a
 * peer that is not JSON-RPC; an answer to an id the peer never sent, or a
 * second answer to one; progress under a token the client never gave, or
 * under one that is no string or number; a request to the client other
 * than the four it may be sent; the stored credential in any line
 * (SF_SECRET); the session ending while its client still speaks; a file
 * descriptor left open; nothing settling for 30 s. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/sockios.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz/session_fuzz.h"
#include "internal/base/cleanup.h"
#include "internal/base/log.h"
#include "internal/base/xalloc.h"
#include "internal/keychain/keychain.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define QUIET_LIMIT_MS 30000

/* ---- the servers ------------------------------------------------------------ */

#define ALPHA_CAPS                                                                         \
	"{'tools':{'listChanged':true},'resources':{'subscribe':true,'listChanged':true}," \
	"'prompts':{'listChanged':true},'logging':{},'completions':{}}"
#define ALPHA_TOOLS_WITH(echo)                                                                   \
	"[{'name':'echo','description':'" echo "','inputSchema':{'type':'object','properties':{" \
	"'text':{'type':'string','x-mcp-header':'Text'},'n':{'type':'integer',"                  \
	"'x-mcp-header':'N'}}}},"                                                                \
	"{'name':'write','description':'Writes.','inputSchema':{'type':'object'}},"              \
	"{'name':'poke','description':'Pokes.','inputSchema':{'type':'object'}},"                \
	"{'name':'quiet','description':'Writes quietly.','inputSchema':{'type':'object'}},"      \
	"{'name':'off','description':'Not on.','inputSchema':{'type':'object'}}]"
#define ALPHA_TOOLS ALPHA_TOOLS_WITH("Echoes.")
#define ALPHA_SETTINGS                                                           \
	"relay = [\"sampling\", \"elicitation\", \"roots\"]\n"                   \
	"[server.tools.echo]\non = true\neffect = \"read\"\n"                    \
	"[server.tools.write]\non = true\neffect = \"write\"\n"                  \
	"[server.tools.poke]\non = true\n"                                       \
	"[server.tools.quiet]\non = true\neffect = \"write\"\nconfirm = false\n" \
	"[server.tools.off]\non = false\neffect = \"read\"\n"
#define BETA_CAPS     "{'tools':{},'prompts':{}}"
#define BETA_TOOLS    "[{'name':'echo','description':'Echoes too.','inputSchema':{'type':'object'}}]"
#define BETA_SETTINGS "[server.tools.echo]\non = true\neffect = \"read\"\n"
#define GAMMA_CAPS    "{'tools':{},'resources':{'subscribe':true}}"
#define GAMMA_TOOLS                                                                        \
	"[{'name':'echo','description':'Echoes thrice.','inputSchema':{'type':'object'}}," \
	"{'name':'ask','description':'Asks.','inputSchema':{'type':'object'}}]"
#define GAMMA_SETTINGS                                        \
	"relay = [\"elicitation\"]\n"                         \
	"[server.tools.echo]\non = true\neffect = \"read\"\n" \
	"[server.tools.ask]\non = true\n"

const char sf_alpha_tools_changed[] = ALPHA_TOOLS_WITH("Now does something else.");

static const struct {
	const char *name, *caps, *tools, *settings;
	uint8_t modern_flag;
} fakes[SF_SERVERS] = {
    {"alpha", ALPHA_CAPS, ALPHA_TOOLS, ALPHA_SETTINGS, SF_ALPHA_MODERN},
    {"beta", BETA_CAPS, BETA_TOOLS, BETA_SETTINGS, SF_BETA_MODERN},
    {"gamma", GAMMA_CAPS, GAMMA_TOOLS, GAMMA_SETTINGS, 0},
};

/* ---- reporting ---------------------------------------------------------------- */

struct sf_world *sf_world;

/* from the sanitizers: a line where their reports go (libFuzzer's
 * -close_fd_mask=2 keeps that open, and the target's stderr not) */
void __sanitizer_report_error_summary(const char *summary) __attribute__((weak));

void sf_finding(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *text = xvasprintf(fmt, ap);
	va_end(ap);
	char *line =
	    xasprintf("session_fuzz: FINDING: %.2000s (op %zu of %zu)", text,
	              sf_world != NULL ? sf_world->next : 0, sf_world != NULL ? sf_world->nops : 0);
	fprintf(stderr, "%s\n", line);
	if (__sanitizer_report_error_summary != NULL)
		__sanitizer_report_error_summary(line);
	abort();
}

void sf_trace(const char *fmt, ...)
{
	if (sf_world == NULL || !sf_world->trace)
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "session_fuzz: ");
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

char *sf_text(const struct json_value *v)
{
	struct mg_buf b = MG_BUF_INIT((size_t)1 << 28);
	if (v == NULL || json_generate(v, &b, NULL) < 0)
		mg_buf_puts(&b, "-", NULL);
	return mg_buf_steal(&b, NULL);
}

/* ---- requests owed an answer --------------------------------------------------- */

static void req_clear(struct sf_req *r)
{
	json_free(r->id);
	json_free(r->params);
	memset(r, 0, sizeof(*r));
}

static void reqs_free(struct sf_reqs *q)
{
	for (size_t i = 0; i < q->n; i++)
		req_clear(&q->v[i]);
	q->n = 0;
}

void sf_reqs_remove(struct sf_reqs *q, size_t i)
{
	req_clear(&q->v[i]);
	memmove(&q->v[i], &q->v[i + 1], (q->n - i - 1) * sizeof(q->v[0]));
	q->n--;
}

/* id copied, params taken */
void sf_reqs_push(struct sf_reqs *q, const struct json_value *id, const char *method,
                  const char *token, struct json_value *params)
{
	if (q->n == SF_PENDING) {
		sf_reqs_remove(q, 0);
		q->overflowed = true;
	}
	struct sf_req *r = &q->v[q->n++];
	r->id = json_copy(id);
	snprintf(r->method, sizeof(r->method), "%s", method != NULL ? method : "");
	snprintf(r->token, sizeof(r->token), "%s", token != NULL ? token : "");
	r->params = params;
}

/* The request with id's key: removed; false when there is none */
static bool reqs_take(struct sf_reqs *q, const struct json_value *id)
{
	cleanup_free char *key = rpc_id_key(id);
	for (size_t i = 0; key != NULL && i < q->n; i++) {
		cleanup_free char *k = rpc_id_key(q->v[i].id);
		if (k != NULL && strcmp(k, key) == 0) {
			sf_reqs_remove(q, i);
			return true;
		}
	}
	return key == NULL || q->overflowed;
}

/* ---- the sessions' servers ------------------------------------------------------- */

struct sf_session **sf_sessions_snapshot(size_t *n)
{
	struct sf_world *w = sf_world;
	pthread_mutex_lock(&w->lock);
	*n = w->nsessions;
	struct sf_session **copy = xcalloc(w->nsessions + 1, sizeof(*copy));
	for (size_t i = 0; i < w->nsessions; i++)
		copy[i] = w->sessions[i];
	pthread_mutex_unlock(&w->lock);
	return copy;
}

size_t sf_nservers(void)
{
	return sf_world->flags & SF_PASSTHROUGH ? 1 : SF_SERVERS;
}

static size_t count_secret(const char *s, size_t len)
{
	size_t n = 0, k = strlen(SF_SECRET_VALUE);
	for (const char *p; len >= k && (p = memmem(s, len, SF_SECRET_VALUE, k)) != NULL;
	     len -= (size_t)(p - s) + k, s = p + k)
		n++;
	return n;
}

/* the value in line, more often than in what its reader sent itself (a
 * server's own request id, echoed in its answer, tells it nothing) */
static void check_secret(const char *who, const char *line, size_t len, size_t own)
{
	if ((sf_world->flags & SF_SECRET) && count_secret(line, len) > own)
		sf_finding("the stored credential's value reached %s: %.300s", who, line);
}

static bool is_input_required(const struct json_value *result)
{
	const char *t = json_get_string(result, "resultType");
	return t != NULL && strcmp(t, "input_required") == 0;
}

static void keep_state(struct sf_client *cl, const struct sf_req *asked,
                       const struct json_value *result)
{
	const char *state = json_get_string(result, "requestState");
	if (state == NULL || asked == NULL)
		return;
	if (cl->nstates == SF_STATES) {
		struct sf_state *old = &cl->states[0];
		free(old->state);
		free(old->method);
		json_free(old->params);
		json_free(old->keys);
		memmove(&cl->states[0], &cl->states[1], (SF_STATES - 1) * sizeof(cl->states[0]));
		cl->nstates--;
	}
	struct sf_state *st = &cl->states[cl->nstates++];
	st->state = xstrdup(state);
	st->method = xstrdup(asked->method);
	st->params = asked->params != NULL ? json_copy(asked->params) : NULL;
	const struct json_value *k = json_get(result, "inputRequests");
	st->keys = k != NULL ? json_copy(k) : NULL;
}

/* The same JSON: what a token is compared by (1.5 is one, unlike an id) */
static bool same_json(const struct json_value *a, const struct json_value *b)
{
	cleanup_free char *x = sf_text(a), *y = sf_text(b);
	return strcmp(x, y) == 0;
}

static bool token_known(const struct sf_client *cl, const struct json_value *token)
{
	for (size_t i = 0; cl->tokens != NULL && i < cl->tokens->u.arr.len; i++)
		if (same_json(cl->tokens->u.arr.items[i], token))
			return true;
	return false;
}

/* A string the gateway's last filter cut a stored value from: an id or a
 * token the client gave as that value comes back so, by design
 * (docs/credentials.md: better than the value in clear) */
static bool redacted(const struct json_value *v)
{
	return v != NULL && v->kind == JSON_STRING && strstr(v->u.str.ptr, "[redacted:") != NULL;
}

void sf_client_line(struct sf_client *cl, const char *line, size_t len, struct sf_http *exchange,
                    bool lenient)
{
	sf_trace("client %zu <- %.*s", (size_t)(cl - sf_world->clients),
	         (int)(len > 400 ? 400 : len), line);
	check_secret("the client", line, len, 0);
	const struct sf_http *x = exchange;
	struct rpc_msg m;
	cleanup_err struct mg_err *err = NULL;
	if (rpc_parse(line, len, 0, &m, &err) < 0) {
		if (!lenient || m.root == NULL)
			sf_finding(
			    "the gateway sent the client a line that is not JSON-RPC (%s): %.300s",
			    mg_err_msg(err), line);
		/* a listener's refusal: an error that names no request */
		const struct json_value *id = json_get(m.root, "id");
		if (id != NULL && id->kind != JSON_NULL && !redacted(id) && x != NULL &&
		    x->id != NULL) {
			cleanup_free char *a = rpc_id_key(id), *b = rpc_id_key(x->id);
			if (a == NULL || b == NULL || strcmp(a, b) != 0)
				sf_finding("a POST's refusal names another request's id: %.300s",
				           line);
		}
		rpc_msg_free(&m);
		return;
	}
	switch (m.kind) {
	case RPC_RESULT:
	case RPC_ERROR: {
		if (x != NULL && x->kind == 'G')
			sf_finding("a response on a GET stream: %.300s", line);
		if (x != NULL && m.id != NULL && m.id->kind != JSON_NULL && !redacted(m.id)) {
			cleanup_free char *a = rpc_id_key(m.id);
			cleanup_free char *b = x->id != NULL ? rpc_id_key(x->id) : NULL;
			if (a == NULL || b == NULL || strcmp(a, b) != 0)
				sf_finding("a POST got the answer of another request: %.300s",
				           line);
		}
		const struct sf_req *asked = NULL;
		cleanup_free char *key = m.id != NULL ? rpc_id_key(m.id) : NULL;
		for (size_t i = 0; key != NULL && i < cl->own.n && asked == NULL; i++) {
			cleanup_free char *k = rpc_id_key(cl->own.v[i].id);
			if (k != NULL && strcmp(k, key) == 0)
				asked = &cl->own.v[i];
		}
		if (m.kind == RPC_RESULT && is_input_required(m.result))
			keep_state(cl, asked, m.result);
		if (m.id != NULL && m.id->kind != JSON_NULL && !redacted(m.id) &&
		    !reqs_take(&cl->own, m.id))
			sf_finding("the client was answered under an id it did not ask with, or a "
			           "second time: %.300s",
			           line);
		break;
	}
	case RPC_REQUEST:
		if (strcmp(m.method, "elicitation/create") != 0 &&
		    strcmp(m.method, "sampling/createMessage") != 0 &&
		    strcmp(m.method, "roots/list") != 0 && strcmp(m.method, "ping") != 0)
			sf_finding("the gateway asked the client %s: %.300s", m.method, line);
		sf_reqs_push(&cl->asked, m.id, m.method, NULL, NULL);
		break;
	case RPC_NOTIFICATION:
		if (strcmp(m.method, "notifications/progress") == 0) {
			const struct json_value *t = json_get(m.params, "progressToken");
			if (t == NULL || (t->kind != JSON_STRING && t->kind != JSON_NUMBER))
				sf_finding("progress whose token is no string or number: %.300s",
				           line);
			if (!redacted(t) && !token_known(cl, t))
				sf_finding("progress under a token the client never gave: %.300s",
				           line);
			if (x != NULL && x->modern && x->token != NULL && !redacted(t) &&
			    !same_json(t, x->token))
				sf_finding("a POST's stream got another request's progress: %.300s",
				           line);
		}
		break;
	case RPC_INVALID:
		break;
	}
	rpc_msg_free(&m);
}

static void server_line(struct sf_server *sv, const char *line, size_t len)
{
	sf_trace("%s <- %.*s", sv->fake.name, (int)(len > 400 ? 400 : len), line);
	cleanup_free char *who = xasprintf("server %s", sv->fake.name);
	size_t own = 0; /* the value in an id of its own that this answers */
	struct rpc_msg m;
	cleanup_err struct mg_err *err = NULL;
	if (rpc_parse(line, len, 0, &m, &err) < 0)
		sf_finding("the gateway sent %s a line that is not JSON-RPC (%s): %.300s", who,
		           mg_err_msg(err), line);
	switch (m.kind) {
	case RPC_REQUEST: {
		const struct json_value *t = json_get(json_get(m.params, "_meta"), "progressToken");
		sf_reqs_push(&sv->asked, m.id, m.method,
		             t != NULL && t->kind == JSON_STRING ? t->u.str.ptr : NULL, NULL);
		break;
	}
	case RPC_RESULT:
	case RPC_ERROR:
		if (m.id != NULL && m.id->kind != JSON_NULL && !reqs_take(&sv->own, m.id))
			sf_finding("%s was answered under an id it did not ask with, or a second "
			           "time: %.300s",
			           who, line);
		else if (m.id != NULL && m.id->kind == JSON_STRING)
			own = count_secret(m.id->u.str.ptr, m.id->u.str.len);
		break;
	case RPC_NOTIFICATION:
	case RPC_INVALID:
		break;
	}
	check_secret(who, line, len, own);
	rpc_msg_free(&m);
}

int sf_queued_in(int fd)
{
	int n = 0;
	return fd >= 0 && ioctl(fd, FIONREAD, &n) == 0 ? n : 0;
}

int sf_queued_out(int fd)
{
	int n = 0;
	return fd >= 0 && ioctl(fd, SIOCOUTQ, &n) == 0 ? n : 0;
}

/* Take every line f holds; true when its socket is empty both ways (what
 * it sent only when taken: a server whose start is held has no reader yet) */
static bool fake_settled(struct gw_fake *f, bool taken,
                         void (*line_cb)(void *, const char *, size_t), void *data)
{
	if (f->fd < 0)
		return true;
	while (gw_fake_read(f) > 0) {
		const char *line;
		size_t len;
		int r;
		while ((r = rpc_reader_next(&f->reader, &line, &len)) != 0)
			if (r == 1)
				line_cb(data, line, len);
			else
				sf_finding("the gateway sent %s a line of more than 16 MiB",
				           f->name);
	}
	gw_fake_flush(f);
	if (!taken)
		return sf_queued_in(f->fd) == 0;
	return f->out.len == 0 && sf_queued_out(f->fd) == 0 && sf_queued_in(f->fd) == 0;
}

static void server_cb(void *data, const char *line, size_t len)
{
	server_line(data, line, len);
}

static void client_cb(void *data, const char *line, size_t len)
{
	sf_client_line(data, line, len, NULL, false);
}

bool sf_fakes_settled(struct sf_session *ss)
{
	bool settled = true;
	for (size_t i = 0; i < sf_nservers(); i++)
		settled &= fake_settled(&ss->srv[i].fake, ss->srv[i].started && !ss->srv[i].held,
		                        server_cb, &ss->srv[i]);
	return settled;
}

enum sf_busy sf_session_busy(struct sf_session *ss)
{
	struct session *s = ss->s;
	if (s->starting != (size_t)atomic_load(&ss->waiting) || loop_jobs_pending(s->loop) > 0)
		return SF_BUSY_ELSEWHERE;
	if (s->client != NULL && rpc_peer_wants_write(s->client))
		return SF_BUSY;
	for (size_t i = 0; i < s->nservers; i++) {
		const struct rpc_peer *p = s->servers[i].launch.peer;
		if (p != NULL && rpc_peer_wants_write(p))
			return SF_BUSY;
		if (!ss->srv[i].held && sf_queued_out(ss->srv[i].fake.fd) > 0)
			return SF_BUSY; /* sent, not read yet */
	}
	return SF_IDLE;
}

bool sf_release(struct sf_session *only)
{
	size_t n;
	cleanup_free struct sf_session **all = sf_sessions_snapshot(&n);
	for (size_t i = 0; i < n; i++) {
		if (only != NULL && all[i] != only)
			continue;
		bool any = false;
		for (size_t k = 0; k < sf_nservers(); k++)
			if (all[i]->srv[k].held) {
				sf_trace("release %s of session %s", all[i]->srv[k].fake.name,
				         all[i]->id);
				all[i]->srv[k].held = false;
				gw_fake_release(&all[i]->srv[k].fake);
				any = true;
			}
		if (any)
			return true;
	}
	return false;
}

int sf_unquiet(void)
{
	struct sf_world *w = sf_world;
	int64_t now = rpc_now_ms();
	if (w->unquiet_since == 0)
		w->unquiet_since = now;
	else if (now - w->unquiet_since > QUIET_LIMIT_MS)
		sf_finding("nothing settled for %d s: a hang", QUIET_LIMIT_MS / 1000);
	return ++w->unquiet_rounds > 1000;
}

void sf_quiet(void)
{
	sf_world->unquiet_since = 0;
	sf_world->unquiet_rounds = 0;
}

/* ---- sessions and their start threads -------------------------------------------- */

/* Its servers' fakes, held (their starts wait for sf_release) or not */
static struct sf_session *session_new_fakes(struct session *s, const char *id, bool held)
{
	struct sf_world *w = sf_world;
	struct sf_session *ss = xcalloc(1, sizeof(*ss));
	ss->s = s;
	snprintf(ss->id, sizeof(ss->id), "%s", id);
	for (size_t i = 0; i < sf_nservers(); i++) {
		struct sf_server *sv = &ss->srv[i];
		gw_fake_open(&sv->fake, fakes[i].name, fakes[i].caps, fakes[i].tools);
		if (w->flags & fakes[i].modern_flag)
			sv->fake.version = MCP_PROTOCOL_MODERN;
		if (held)
			gw_fake_hold(&sv->fake);
		sv->held = held;
		sv->next_id = 1;
	}
	w->sessions = xrealloc(w->sessions, (w->nsessions + 2) * sizeof(*w->sessions));
	w->sessions[w->nsessions++] = ss;
	w->sessions[w->nsessions] = NULL;
	return ss;
}

struct sf_session *sf_session_by_id(const char *id)
{
	struct sf_world *w = sf_world;
	struct sf_session *found = NULL;
	pthread_mutex_lock(&w->lock);
	for (size_t i = 0; i < w->nsessions && found == NULL; i++)
		if (strcmp(w->sessions[i]->id, id) == 0)
			found = w->sessions[i];
	pthread_mutex_unlock(&w->lock);
	return found;
}

void *sf_start_thread(void *arg)
{
	struct gw_server *srv = arg;
	struct sf_world *w = sf_world;
	pthread_mutex_lock(&w->lock);
	struct sf_session *ss = NULL;
	for (size_t i = 0; i < w->nsessions && ss == NULL; i++)
		if (strcmp(w->sessions[i]->id, srv->sess->id) == 0)
			ss = w->sessions[i];
	if (ss == NULL) /* the listener made it: its first request comes first */
		ss = session_new_fakes(srv->sess, srv->sess->id, true);
	struct sf_server *sv = &ss->srv[srv - srv->sess->servers];
	sv->started = true;
	atomic_fetch_add(&ss->waiting, 1);
	pthread_mutex_unlock(&w->lock);
	gw_fake_await_release(&sv->fake);
	atomic_fetch_sub(&ss->waiting, 1);
	gw_fake_hand_over(srv, &sv->fake);
	return NULL;
}

static void sessions_free(void)
{
	struct sf_world *w = sf_world;
	for (size_t i = 0; i < w->nsessions; i++) {
		for (size_t k = 0; k < SF_SERVERS; k++) {
			struct sf_server *sv = &w->sessions[i]->srv[k];
			if (sv->fake.name[0] == '\0')
				continue;
			reqs_free(&sv->asked);
			reqs_free(&sv->own);
			gw_fake_close(&sv->fake);
		}
		free(w->sessions[i]);
	}
	free(w->sessions);
}

/* ---- stdio ---------------------------------------------------------------------------- */

static bool client_settled(void)
{
	struct sf_world *w = sf_world;
	return fake_settled(&w->client, true, client_cb, &w->clients[0]);
}

static void stdio_step(struct loop *loop, void *data)
{
	struct sf_world *w = data;
	struct sf_session *ss = w->sessions[0];
	bool settled = client_settled();
	settled &= sf_fakes_settled(ss);
	if (ss->s->stopping && !w->ending)
		sf_finding("the session ended while its client was still speaking");
	int64_t delay = 0;
	enum sf_busy busy = SF_IDLE;
	if (w->ending) {
		delay = 1; /* what the session still sends is read */
	} else if (!settled || (busy = sf_session_busy(ss)) != SF_IDLE) {
		delay = sf_unquiet();
		if (busy == SF_BUSY_ELSEWHERE)
			delay = 1; /* a start thread's or a job's: the loop sleeps till it posts */
	} else {
		sf_quiet();
		if (w->next == w->nops && sf_release(ss))
			;
		else if (sf_next_op())
			;
		else {
			w->ending = true;
			shutdown(w->client.fd, SHUT_WR);
		}
	}
	loop_timer_add(loop, delay, stdio_step, w);
}

static void stdio_run(void)
{
	struct sf_world *w = sf_world;
	struct sf_session *ss = session_new_fakes(NULL, "stdio", w->flags & SF_HOLD);
	gw_fake_open(&w->client, "client", NULL, NULL);
	cleanup_free char *data = sf_data_dir();
	struct session_options opt = {
	    .cfg = w->cfg,
	    .state_dir = w->dir,
	    .data_dir = data,
	    .workspace = w->dir,
	    .client_in = w->client.gw_in,
	    .client_out = w->client.gw_out,
	    .owner = getpid(),
	    .signals_elsewhere = true,
	    .start_thread = sf_start_thread,
	};
	w->client.gw_in = w->client.gw_out = -1;
	struct session *s = NULL;
	cleanup_err struct mg_err *err = NULL;
	if (session_new(&opt, &s, &err) < 0)
		sf_finding("session_new: %s", mg_err_msg(err));
	ss->s = s;
	snprintf(ss->id, sizeof(ss->id), "%s", session_id(s));
	loop_timer_add(s->loop, 0, stdio_step, w);
	if (session_run(s, &err) < 0)
		sf_finding("session_run: %s", mg_err_msg(err));
	/* what it said last */
	client_settled();
	session_free(s);
	client_settled();
	gw_fake_close(&w->client);
}

/* ---- one input ---------------------------------------------------------------------- */

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (d == NULL)
		return -1;
	int n = 0;
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n;
}

static char root[64];

char *sf_data_dir(void)
{
	/* a session opens its keychain: one without a value costs nothing */
	return xasprintf("%s/%s", root, sf_world->flags & SF_SECRET ? "data" : "empty");
}

static void remove_root(void)
{
	gw_fake_remove_tree(root);
}

/* Once a process: a folder for everything, the keychain holding the
 * credential (read by every session: its key file costs no derivation) */
static void process_init(void)
{
	const char *tmp = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/dev/shm";
	if (access(tmp, W_OK) != 0)
		tmp = "/tmp";
	snprintf(root, sizeof(root), "%s/session_fuzz.XXXXXX", tmp);
	if (mkdtemp(root) == NULL)
		abort();
	atexit(remove_root);
	cleanup_free char *data = xasprintf("%s/data", root);
	struct kc *kc = NULL;
	cleanup_err struct mg_err *err = NULL;
	if (kc_open(data, &kc, &err) < 0 ||
	    kc_set(kc, "API_TOKEN", SF_SECRET_VALUE, strlen(SF_SECRET_VALUE), &err) < 0)
		sf_finding("the keychain: %s", mg_err_msg(err));
	kc_free(kc);
	const char *log = getenv("SESSION_FUZZ_LOG");
	mg_log_set_level(log != NULL && strcmp(log, "error") == 0 ? MG_LOG_ERROR : MG_LOG_DEBUG);
}

static struct cfg *make_cfg(uint8_t flags, uint8_t variant)
{
	struct mg_buf toml = MG_BUF_INIT(1 << 20);
	for (size_t i = 0; i < ((flags & SF_PASSTHROUGH) ? 1 : SF_SERVERS); i++) {
		cleanup_free char *pin = gw_fake_pin(fakes[i].tools);
		bool unpinned = i == 2 && (flags & SF_GAMMA_UNPINNED);
		cleanup_free char *s =
		    gw_fake_server_toml(fakes[i].name, unpinned ? NULL : pin, fakes[i].settings);
		mg_buf_puts(&toml, s, NULL);
	}
	unsigned line_max = variant & 1 ? 4096 : 131072;
	cleanup_free char *conf = xasprintf(
	    "[mcp]\nline_max = %u\ncall_timeout = 3600\nstart_timeout = 600\nstop_timeout = 5\n"
	    "listen_clients = 3\nlisten_requests = %u\nlisten_body_max = %u\n"
	    "listen_idle_timeout = 3600\n",
	    line_max, variant & 2 ? 2 : 16, line_max);
	struct cfg *cfg = NULL;
	cleanup_err struct mg_err *err = NULL;
	if (cfg_parse(mg_buf_str(&toml), toml.len, "mcp.toml", conf, strlen(conf), "config.toml",
	              &cfg, &err) < 0)
		sf_finding("the fuzzer's configuration: %s", mg_err_msg(err));
	mg_buf_free(&toml);
	cfg->passthrough = flags & SF_PASSTHROUGH;
	return cfg;
}

static void clients_free(void)
{
	struct sf_world *w = sf_world;
	for (size_t i = 0; i < SF_CLIENTS; i++) {
		struct sf_client *cl = &w->clients[i];
		reqs_free(&cl->asked);
		reqs_free(&cl->own);
		json_free(cl->tokens);
		json_free(cl->last_id);
		for (size_t k = 0; k < cl->nstates; k++) {
			free(cl->states[k].state);
			free(cl->states[k].method);
			json_free(cl->states[k].params);
			json_free(cl->states[k].keys);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool started;
	if (!started) {
		process_init();
		started = true;
	}
	int fds_before = count_fds();
	struct sf_world w = {.trace = getenv("SESSION_FUZZ_TRACE") != NULL};
	sf_world = &w;
	pthread_mutex_init(&w.lock, NULL);
	w.flags = size > 0 ? data[0] : 0;
	w.variant = size > 1 ? data[1] : 0;
	w.ops = size > 2 ? data + 2 : data;
	w.nops = size > 2 ? (size - 2) / 4 : 0;
	if (w.nops > SF_OPS_MAX)
		w.nops = SF_OPS_MAX;
	sf_trace("an input of %zu bytes: flags %#x, variant %#x, %zu ops", size, w.flags, w.variant,
	         w.nops);
	snprintf(w.dir, sizeof(w.dir), "%s/in.XXXXXX", root);
	if (mkdtemp(w.dir) == NULL)
		abort();
	w.cfg = make_cfg(w.flags, w.variant);
	w.nclients = w.flags & SF_LISTEN ? SF_CLIENTS : 1;
	for (size_t i = 0; i < w.nclients; i++) {
		w.clients[i].next_id = 1;
		w.clients[i].caps = w.variant >> 2;
		/* listener: two of 2025-11-25, two of 2026-07-28 */
		w.clients[i].modern = w.flags & SF_LISTEN ? i >= 2 : (w.flags & SF_MODERN) != 0;
	}
	if (w.flags & SF_LISTEN)
		sf_listen_run();
	else
		stdio_run();
	sessions_free();
	clients_free();
	cfg_free(w.cfg);
	gw_fake_remove_tree(w.dir);
	pthread_mutex_destroy(&w.lock);
	int fds_after = count_fds();
	if (fds_after != fds_before)
		sf_finding("%d file descriptors were open before this input and %d after",
		           fds_before, fds_after);
	sf_world = NULL;
	/* libFuzzer ends on these; a session's loop blocked them */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	return 0;
}
