/* A 2026-07-28 server's input_required answer to a tools/call: its input
 * requests go to the client under the relay's one rule (relay = [...] and
 * what the client declared), and the call goes on with the answers
 * (docs/2026-12-01-rounds.md).
 *
 * To a client of the same era the result goes on as a result of mcpgate's:
 * the server's requestState rides inside a round state that binds it to this
 * session, tool and exact arguments, once, before a deadline
 * (confirm_state.h), so a retry reaches the server only for the call that
 * was let through. To a client of 2025-11-25 each input request is a request
 * of that era (elicitation/create, sampling/createMessage, roots/list), and
 * mcpgate itself retries the call with the answers, at most ROUNDS_MAX
 * times. */
#include <stdlib.h>
#include <string.h>

#include "internal/base/cleanup.h"
#include "internal/base/num.h"
#include "internal/base/xalloc.h"
#include "internal/gateway/confirm_state.h"
#include "internal/gateway/gateway-internal.h"

/* A server that asks more rounds than this of one call is refused, and so is
 * one round of more input requests than this */
#define ROUNDS_MAX         16
#define ROUND_REQUESTS_MAX 16

/* One input request with a 2025-11-25 client */
struct round_ask {
	struct gw_round *round;
	char *key;         /* the server's key in inputRequests */
	char *method;      /* for the record */
	int64_t client_id; /* ours, on the client's peer */
};

/* A call's round with a 2025-11-25 client */
struct gw_round {
	struct gw_call *c;
	struct json_value *responses; /* key: the client's result */
	char *server_state;           /* the server's requestState, or NULL */
	size_t waiting;               /* input requests not answered yet */
	char *failure;                /* why the call ends once they are */
	int rounds;                   /* input_required answers so far */
	struct round_ask *asks;
	size_t nasks;
};

static void asks_clear(struct gw_round *r)
{
	for (size_t i = 0; i < r->nasks; i++) {
		free(r->asks[i].key);
		free(r->asks[i].method);
	}
	free(r->asks);
	r->asks = NULL;
	r->nasks = 0;
}

void gw_round_free(struct gw_round *r)
{
	if (r == NULL)
		return;
	json_free(r->responses);
	free(r->server_state);
	free(r->failure);
	asks_clear(r);
	free(r);
}

static const struct json_value *call_args(const struct gw_call *c)
{
	return json_get(c->params, "arguments");
}

/* What the client's capabilities are for this call: a 2026-07-28 request's
 * own, else what the client declared at initialize */
/* Who asks for input, for the rule and the records: a server, in answer
 * to what (a tool, or a request such as prompts/get), with the client's
 * capabilities for that request */
struct asker {
	struct session *s;
	struct gw_server *srv;
	const char *what;
	const struct json_value *caps;
	unsigned *asks; /* the questions asked in the call or request so far */
};

static struct asker asker_of(struct gw_call *c)
{
	const struct session *s = c->sess;
	return (struct asker){c->sess, c->server, c->tool,
	                      s->era == GW_ERA_MODERN  ? c->caps
	                      : s->answered_initialize ? s->client_caps
	                                               : NULL,
	                      &c->asks};
}

/* An input_required mcpgate refuses before the relay's rule is asked */
static void round_refused(const struct asker *a, const char *key, const char *reason)
{
	audit_record_by(a->s->audit, a->srv->cfg->name, "server.request.refused",
	                gw_fields("server", json_new_string(a->srv->cfg->name), "tool",
	                          json_new_string(a->what), "key", json_new_string(key), "reason",
	                          json_new_string(reason), "via", json_new_string("input_required"),
	                          NULL));
}

/* The server's input requests as the client gets them, each allowed by the
 * relay's rule; NULL with why in *refusal otherwise */
static struct json_value *client_requests(const struct asker *a, const struct json_value *reqs,
                                          char **refusal)
{
	struct gw_server *srv = a->srv;
	if (reqs->u.obj.len > ROUND_REQUESTS_MAX) {
		*refusal = xasprintf("server %s asked %zu input requests at once; mcpgate relays "
		                     "at most %d",
		                     srv->cfg->name, reqs->u.obj.len, ROUND_REQUESTS_MAX);
		round_refused(a, "", "too many");
		return NULL;
	}
	struct json_value *out = json_new_object();
	for (size_t i = 0; i < reqs->u.obj.len; i++) {
		const struct json_member *m = &reqs->u.obj.items[i];
		const struct json_value *method = json_get(m->value, "method");
		const struct json_value *params = json_get(m->value, "params");
		if (m->value->kind != JSON_OBJECT || method == NULL ||
		    method->kind != JSON_STRING ||
		    (params != NULL && params->kind != JSON_OBJECT)) {
			*refusal = xasprintf("server %s's input request \"%.64s\" is not an object "
			                     "with a method and object params",
			                     srv->cfg->name, m->key);
			round_refused(a, m->key, "malformed");
			json_free(out);
			return NULL;
		}
		if (strcmp(m->key, GW_CONFIRM_INPUT_KEY) == 0) {
			/* the key of mcpgate's own question: the server would pose as
			 * mcpgate asking the person */
			*refusal = xasprintf("server %s named an input request \"%s\", the key of "
			                     "mcpgate's own confirmation",
			                     srv->cfg->name, GW_CONFIRM_INPUT_KEY);
			round_refused(a, m->key, "mcpgate's key");
			json_free(out);
			return NULL;
		}
		struct json_value *p =
		    gw_relay_input_params(srv, a->caps, method->u.str.ptr, params, refusal);
		if (p == NULL) {
			json_free(out);
			return NULL;
		}
		json_object_set(
		    out, m->key,
		    gw_fields("method", json_new_string(method->u.str.ptr), "params", p, NULL));
	}
	if (gw_asks_take(srv, a->asks, out->u.obj.len, refusal) < 0) {
		round_refused(a, "", "too many");
		json_free(out);
		return NULL;
	}
	return out;
}

static void asker_record(const struct asker *a, const char *event, const char *method,
                         const char *key, const char *outcome)
{
	struct json_value *f =
	    gw_fields("server", json_new_string(a->srv->cfg->name), "tool",
	              json_new_string(a->what), "method", json_new_string(method), "key",
	              json_new_string(key), "via", json_new_string("input_required"), NULL);
	if (outcome != NULL)
		json_object_set(f, "outcome", json_new_string(outcome));
	audit_record_by(a->s->audit, a->srv->cfg->name, event, f);
}

static void round_record(struct gw_call *c, const char *event, const char *method, const char *key,
                         const char *outcome)
{
	struct asker a = asker_of(c);
	asker_record(&a, event, method, key, outcome);
}

/* A round's state for bound (a tool's public name, or a request and its
 * name) with args, carrying "ASKED:" and the server's state: the questions
 * asked in the call so far go with it, under the MAC, to the retry (a new
 * request of the client's), so the limit per call holds across rounds */
static char *round_state(struct session *s, const char *bound, const struct json_value *args,
                         const char *state, size_t state_len, unsigned asked, struct mg_err **err)
{
	char *ours = NULL;
	int64_t deadline = proc_now_ms() + (int64_t)s->cfg->mcp.call_timeout * 1000;
	struct confirm_call call = {CONFIRM_ROUND, s->id, bound, args};
	if (state_len > CONFIRM_CARRIED_MAX) {
		mg_err_set(err, "its requestState is over %zu bytes", CONFIRM_CARRIED_MAX);
		return NULL;
	}
	cleanup_free char *carried =
	    xasprintf("%u:%.*s", asked, (int)state_len, state != NULL ? state : "");
	if ((s->confirm == NULL && confirm_keeper_new(&s->confirm, err) < 0) ||
	    confirm_state_make(s->confirm, &call, carried, strlen(carried), deadline, &ours, err) <
	        0)
		return NULL;
	return ours;
}

int gw_round_take(struct session *s, const char *bound, const struct json_value *args,
                  const struct json_value *params, struct json_value *up, unsigned *asked,
                  struct mg_err **err)
{
	const struct json_value *state = json_get(params, "requestState");
	const struct json_value *responses = json_get(params, "inputResponses");
	if (responses != NULL && responses->kind != JSON_OBJECT)
		return mg_err_set(err, "inputResponses must be an object");
	const char *carried = NULL;
	size_t carried_len = 0;
	struct confirm_call call = {CONFIRM_ROUND, s->id, bound, args};
	if (s->confirm == NULL)
		return mg_err_set(err, "the requestState is not one this session gave out");
	if (confirm_state_take(s->confirm, state->u.str.ptr, state->u.str.len, &call, proc_now_ms(),
	                       &carried, &carried_len, err) < 0)
		return -1;
	/* "ASKED:" first (round_state's; under the MAC, so it is ours) */
	const char *colon = memchr(carried, ':', carried_len);
	uint64_t n = 0;
	if (colon == NULL ||
	    mg_parse_u64n(carried, (size_t)(colon - carried), 0, UINT32_MAX, "asked", &n, NULL) < 0)
		return mg_err_set(err, "the requestState does not say what was asked");
	*asked = (unsigned)n;
	carried_len -= (size_t)(colon + 1 - carried);
	carried = colon + 1;
	/* the server gets its own state back, and the answers but mcpgate's */
	struct json_value *answers = json_new_object();
	for (size_t i = 0; responses != NULL && i < responses->u.obj.len; i++)
		if (strcmp(responses->u.obj.items[i].key, GW_CONFIRM_INPUT_KEY) != 0)
			json_object_set(answers, responses->u.obj.items[i].key,
			                json_copy(responses->u.obj.items[i].value));
	json_object_set(up, "inputResponses", answers);
	if (carried_len > 0)
		json_object_set(up, "requestState", json_new_stringn(carried, carried_len));
	return 0;
}

/* ---- a 2026-07-28 client: the result goes on, the state inside ours ---- */

static void to_modern_client(struct gw_call *c, struct json_value *reqs, const char *state,
                             size_t state_len)
{
	struct session *s = c->sess;
	struct mg_err *err = NULL;
	cleanup_free char *public_name = gw_relay_public_name(c->server, c->tool);
	cleanup_free char *ours =
	    round_state(s, public_name, call_args(c), state, state_len, c->asks, &err);
	if (ours == NULL) {
		json_free(reqs);
		gw_call_finish_error(
		    c, RPC_SERVER_ERROR, "tool %s__%s: server %s asked for input: %s",
		    c->server->cfg->name, c->tool, c->server->cfg->name, mg_err_msg(err));
		mg_err_free(err);
		return;
	}
	for (size_t i = 0; i < reqs->u.obj.len; i++)
		round_record(c, "server.request.relayed",
		             json_get_string(reqs->u.obj.items[i].value, "method"),
		             reqs->u.obj.items[i].key, NULL);
	struct json_value *result =
	    gw_fields("resultType", json_new_string("input_required"), "inputRequests", reqs,
	              "requestState", json_new_string(ours), NULL);
	gw_call_answer_raw(c, "input-required", "its server asked for input", result);
	json_free(result);
}

void gw_round_retry(struct gw_call *c, const char *public_name, const struct json_value *params)
{
	struct mg_err *err = NULL;
	struct json_value *p = json_copy(c->params);
	if (gw_round_take(c->sess, public_name, call_args(c), params, p, &c->asks, &err) < 0) {
		json_free(p);
		round_record(c, "server.request.refused", "tools/call", "requestState", "refused");
		gw_call_finish_error(c, RPC_INVALID_PARAMS, "tools/call %s: %s", public_name,
		                     mg_err_msg(err));
		mg_err_free(err);
		return;
	}
	gw_call_send(c, p);
	json_free(p);
}

/* ---- a request other than tools/call (prompts/get, resources/read) ---- */

struct json_value *gw_round_forwarded(struct session *s, struct gw_server *srv, const char *bound,
                                      const struct json_value *args, const struct json_value *caps,
                                      const struct json_value *result, unsigned *asks,
                                      char **refusal)
{
	struct asker a = {s, srv, bound, caps, asks};
	const struct json_value *reqs = json_get(result, "inputRequests");
	const struct json_value *state = json_get(result, "requestState");
	*refusal = NULL;
	if (s->era != GW_ERA_MODERN) {
		*refusal = xasprintf("server %s asked for input on %s; for a client of 2025-11-25 "
		                     "mcpgate relays a server's input requests on tools/call only",
		                     srv->cfg->name, bound);
		round_refused(&a, "", "client era");
		return NULL;
	}
	if (reqs == NULL || reqs->kind != JSON_OBJECT || reqs->u.obj.len == 0 ||
	    (state != NULL && state->kind != JSON_STRING)) {
		*refusal = xasprintf("server %s answered %s input_required without inputRequests "
		                     "(an object of one or more requests) or with a requestState "
		                     "that is not a string",
		                     srv->cfg->name, bound);
		round_refused(&a, "", "malformed");
		return NULL;
	}
	struct json_value *asked = client_requests(&a, reqs, refusal);
	if (asked == NULL)
		return NULL;
	struct mg_err *err = NULL;
	cleanup_free char *ours =
	    round_state(s, bound, args, state != NULL ? state->u.str.ptr : NULL,
	                state != NULL ? state->u.str.len : 0, *asks, &err);
	if (ours == NULL) {
		*refusal = xasprintf("server %s asked for input on %s: %s", srv->cfg->name, bound,
		                     mg_err_msg(err));
		mg_err_free(err);
		json_free(asked);
		return NULL;
	}
	for (size_t i = 0; i < asked->u.obj.len; i++)
		asker_record(&a, "server.request.relayed",
		             json_get_string(asked->u.obj.items[i].value, "method"),
		             asked->u.obj.items[i].key, NULL);
	return gw_fields("resultType", json_new_string("input_required"), "inputRequests", asked,
	                 "requestState", json_new_string(ours), NULL);
}

/* ---- a 2025-11-25 client: asked as that era asks, retried by mcpgate ---- */

static void round_go_on(struct gw_round *r);

static void on_ask_answer(struct rpc_peer *peer, struct rpc_msg *reply, const struct mg_err *why,
                          void *data)
{
	(void)peer;
	struct round_ask *a = data;
	struct gw_round *r = a->round;
	struct gw_call *c = r->c;
	r->waiting--;
	c->awaiting_confirm = r->waiting > 0;
	const char *outcome = "result";
	if (reply != NULL && reply->kind == RPC_RESULT) {
		cleanup_free char *leak = gw_secrets_check_leaving(c->server, reply->result);
		if (leak != NULL) {
			outcome = "withheld";
			if (r->failure == NULL)
				r->failure =
				    xasprintf("mcpgate withheld the client's answer to %s: %s",
				              a->method, leak);
		} else {
			json_object_set(r->responses, a->key, json_copy(reply->result));
		}
	} else {
		outcome = reply != NULL ? "error" : "failed";
		if (r->failure == NULL) {
			cleanup_free char *text =
			    reply != NULL
			        ? mcp_error_text(reply)
			        : xstrdup(why != NULL ? mg_err_msg(why) : "the client is gone");
			r->failure = xasprintf(
			    "the client answered %s (input request \"%s\") with %s%s", a->method,
			    a->key, reply != NULL ? "an error: " : "nothing: ", text);
		}
	}
	if (!c->sess->stopping)
		round_record(c, "server.request.answered", a->method, a->key, outcome);
	if (r->waiting == 0)
		round_go_on(r);
}

/* Every input request is answered: the call goes on, or ends */
static void round_go_on(struct gw_round *r)
{
	struct gw_call *c = r->c;
	struct session *s = c->sess;
	if (c->cancelled) {
		gw_call_free(c); /* unlinked when it was cancelled */
		return;
	}
	if (s->stopping) {
		gw_call_drop(c, "the session ended");
		return;
	}
	if (r->failure != NULL) {
		gw_call_finish_error(c, RPC_SERVER_ERROR, "tool %s__%s: %s", c->server->cfg->name,
		                     c->tool, r->failure);
		return;
	}
	struct json_value *p = json_copy(c->params);
	json_object_set(p, "inputResponses", r->responses);
	r->responses = NULL;
	if (r->server_state != NULL)
		json_object_set(p, "requestState", json_new_string(r->server_state));
	gw_call_send(c, p);
	json_free(p);
}

static void to_old_client(struct gw_call *c, struct json_value *reqs, const char *state,
                          size_t state_len)
{
	struct session *s = c->sess;
	struct gw_round *r = c->round;
	if (r == NULL)
		r = c->round = xcalloc(1, sizeof(*r));
	r->c = c;
	if (++r->rounds > ROUNDS_MAX) {
		json_free(reqs);
		gw_call_finish_error(c, RPC_SERVER_ERROR,
		                     "tool %s__%s: server %s asked for input more than %d times in "
		                     "one call",
		                     c->server->cfg->name, c->tool, c->server->cfg->name,
		                     ROUNDS_MAX);
		return;
	}
	free(r->server_state);
	r->server_state = state != NULL ? xstrndup(state, state_len) : NULL;
	json_free(r->responses);
	r->responses = json_new_object();
	free(r->failure);
	r->failure = NULL;
	asks_clear(r);
	r->nasks = reqs->u.obj.len;
	r->asks = xcalloc(r->nasks, sizeof(*r->asks));
	int64_t deadline = proc_now_ms() + (int64_t)s->cfg->mcp.call_timeout * 1000;
	/* all or none: a request that cannot be sent ends the call before any
	 * other is, so no answer comes for a call that is gone */
	r->waiting = r->nasks;
	c->awaiting_confirm = true;
	size_t sent = 0;
	struct mg_err *err = NULL;
	for (size_t i = 0; i < r->nasks; i++) {
		const struct json_member *m = &reqs->u.obj.items[i];
		struct round_ask *a = &r->asks[i];
		a->round = r;
		a->key = xstrdup(m->key);
		a->method = xstrdup(json_get_string(m->value, "method"));
		if (rpc_peer_send_request(s->client, a->method, json_get(m->value, "params"),
		                          deadline, on_ask_answer, a, &a->client_id, &err) < 0)
			break;
		round_record(c, "server.request.relayed", a->method, a->key, NULL);
		sent++;
	}
	json_free(reqs);
	if (sent < r->nasks) {
		/* those sent are cancelled, unanswered */
		for (size_t i = 0; i < sent; i++) {
			cleanup_free char *key = rpc_id_key_int(r->asks[i].client_id);
			rpc_peer_cancel(s->client, key);
		}
		c->awaiting_confirm = false;
		r->waiting = 0;
		gw_call_finish_error(c, RPC_SERVER_ERROR, "tool %s__%s: cannot ask the client: %s",
		                     c->server->cfg->name, c->tool, mg_err_msg(err));
		mg_err_free(err);
	}
}

void gw_round_cancel(struct gw_call *c)
{
	struct gw_round *r = c->round;
	if (r == NULL || r->waiting == 0)
		return;
	/* the client's questions for a call it cancelled are withdrawn */
	for (size_t i = 0; i < r->nasks; i++) {
		struct json_value *p =
		    gw_fields("requestId", json_new_int(r->asks[i].client_id), "reason",
		              json_new_string("the call was cancelled"), NULL);
		rpc_peer_send_notification(c->sess->client, "notifications/cancelled", p, NULL);
		json_free(p);
	}
}

void gw_round_result(struct gw_call *c, const struct rpc_msg *reply)
{
	struct gw_server *srv = c->server;
	const struct json_value *reqs = json_get(reply->result, "inputRequests");
	const struct json_value *state = json_get(reply->result, "requestState");
	if (reqs == NULL || reqs->kind != JSON_OBJECT || reqs->u.obj.len == 0 ||
	    (state != NULL && state->kind != JSON_STRING)) {
		gw_call_finish_error(c, RPC_SERVER_ERROR,
		                     "tool %s__%s: server %s answered input_required without "
		                     "inputRequests (an object of one or more requests) or with a "
		                     "requestState that is not a string",
		                     srv->cfg->name, c->tool, srv->cfg->name);
		return;
	}
	char *refusal = NULL;
	struct asker a = asker_of(c);
	struct json_value *asked = client_requests(&a, reqs, &refusal);
	if (asked == NULL) {
		gw_call_finish_error(c, RPC_SERVER_ERROR, "tool %s__%s: %s", srv->cfg->name,
		                     c->tool, refusal);
		free(refusal);
		return;
	}
	const char *st = state != NULL ? state->u.str.ptr : NULL;
	size_t st_len = state != NULL ? state->u.str.len : 0;
	if (c->sess->era == GW_ERA_MODERN)
		to_modern_client(c, asked, st, st_len);
	else
		to_old_client(c, asked, st, st_len);
}

/* ---- a 2025-11-25 server asking a 2026-07-28 client within a call ------ */

/* A server's request held for the client */
struct park_ask {
	struct json_value *server_id; /* a copy */
	char *key;                    /* its key in inputRequests */
	char *method;
	struct json_value *params; /* as the client gets them */
	bool sent;                 /* in an input_required the client has */
};

/* A call whose server of the old era asks the client: the client is
 * answered input_required, the call goes on in mcpgate, and the retry with
 * its state attaches the client again */
struct gw_park {
	int64_t id;
	bool away; /* the client has the questions; no request of its waits */
	struct park_ask *asks;
	size_t nasks;
	int rounds;
};

static void ask_free(struct park_ask *a)
{
	json_free(a->server_id);
	free(a->key);
	free(a->method);
	json_free(a->params);
}

/* Drop asks[i], answering the server's request with an error first when
 * why is not NULL */
static void park_drop(struct gw_call *c, size_t i, const char *why)
{
	struct gw_park *p = c->park;
	struct rpc_peer *peer = c->server->launch.peer;
	if (why != NULL && peer != NULL && !rpc_peer_closed(peer))
		rpc_peer_send_error(peer, p->asks[i].server_id, RPC_INTERNAL_ERROR, why, NULL,
		                    NULL);
	ask_free(&p->asks[i]);
	memmove(&p->asks[i], &p->asks[i + 1], (p->nasks - i - 1) * sizeof(p->asks[0]));
	p->nasks--;
}

void gw_park_free(struct gw_call *c)
{
	struct gw_park *p = c->park;
	if (p == NULL)
		return;
	while (p->nasks > 0)
		park_drop(c, 0, "the call it was asked within has ended");
	free(p->asks);
	free(p);
	c->park = NULL;
}

bool gw_park_away(const struct gw_call *c)
{
	return c->park != NULL && c->park->away;
}

/* The client gets input_required with every question not sent yet, and
 * goes; the call stays */
static void park_send(struct gw_call *c)
{
	struct session *s = c->sess;
	struct gw_park *p = c->park;
	struct mg_err *err = NULL;
	cleanup_free char *ours = NULL;
	cleanup_free char *public_name = gw_relay_public_name(c->server, c->tool);
	cleanup_free char *id = xasprintf("%lld", (long long)p->id);
	int64_t deadline = proc_now_ms() + (int64_t)s->cfg->mcp.call_timeout * 1000;
	struct confirm_call call = {CONFIRM_PARKED, s->id, public_name, call_args(c)};
	if ((s->confirm == NULL && confirm_keeper_new(&s->confirm, &err) < 0) ||
	    confirm_state_make(s->confirm, &call, id, strlen(id), deadline, &ours, &err) < 0) {
		gw_call_finish_error(c, RPC_SERVER_ERROR, "tool %s__%s: server %s asked: %s",
		                     c->server->cfg->name, c->tool, c->server->cfg->name,
		                     mg_err_msg(err));
		mg_err_free(err);
		return;
	}
	struct json_value *reqs = json_new_object();
	for (size_t i = 0; i < p->nasks; i++) {
		struct park_ask *a = &p->asks[i];
		if (a->sent)
			continue;
		a->sent = true;
		json_object_set(reqs, a->key,
		                gw_fields("method", json_new_string(a->method), "params",
		                          json_copy(a->params), NULL));
		round_record(c, "server.request.relayed", a->method, a->key, NULL);
	}
	struct json_value *result =
	    gw_fields("resultType", json_new_string("input_required"), "inputRequests", reqs,
	              "requestState", json_new_string(ours), NULL);
	p->away = true;
	p->rounds++;
	gw_call_detach(c, "input-required", "its server asked the client", result);
	json_free(result);
}

const char *gw_park_server_request(struct gw_server *srv, struct rpc_msg *msg)
{
	struct session *s = srv->sess;
	struct gw_call *c = NULL;
	size_t n = 0;
	for (struct gw_call *x = s->calls; x != NULL; x = x->next)
		if (x->server == srv && !x->cancelled) {
			c = x;
			n++;
		}
	if (n != 1)
		return n == 0 ? "no call of the client's to it is in flight"
		              : "several calls of the client's to it are in flight, so which one "
		                "asks is not known";
	if (c->park != NULL && c->park->rounds >= ROUNDS_MAX)
		return "it asked in more than 16 rounds within one call";
	char *refusal = NULL;
	struct json_value *p =
	    gw_relay_input_params(srv, c->caps, msg->method, msg->params, &refusal);
	if (p != NULL && gw_asks_take(srv, &c->asks, 1, &refusal) < 0) {
		round_record(c, "server.request.refused", msg->method, "", "too many");
		json_free(p);
		p = NULL;
	}
	if (p == NULL) {
		/* the rule said no: the server hears why, the call goes on */
		rpc_peer_send_error(srv->launch.peer, msg->id, RPC_METHOD_NOT_FOUND, refusal, NULL,
		                    NULL);
		free(refusal);
		return NULL;
	}
	if (c->park == NULL) {
		c->park = xcalloc(1, sizeof(*c->park));
		c->park->id = ++s->next_token;
	}
	struct gw_park *k = c->park;
	k->asks = xrealloc(k->asks, (k->nasks + 1) * sizeof(k->asks[0]));
	struct park_ask *a = &k->asks[k->nasks++];
	memset(a, 0, sizeof(*a));
	a->server_id = json_copy(msg->id);
	a->key = xasprintf("mcpgate-ask-%lld", (long long)++s->next_token);
	a->method = xstrdup(msg->method);
	a->params = p;
	/* while the client has questions already, this one waits for its retry */
	if (!k->away)
		park_send(c);
	return NULL;
}

void gw_park_resume(struct gw_call *carrier, const char *public_name,
                    const struct json_value *params)
{
	struct session *s = carrier->sess;
	const struct json_value *state = json_get(params, "requestState");
	const struct json_value *responses = json_get(params, "inputResponses");
	struct mg_err *err = NULL;
	const char *carried = NULL;
	size_t carried_len = 0;
	struct confirm_call call = {CONFIRM_PARKED, s->id, public_name, call_args(carrier)};
	if (responses != NULL && responses->kind != JSON_OBJECT)
		mg_err_set(&err, "inputResponses must be an object");
	else if (s->confirm == NULL)
		mg_err_set(&err, "the requestState is not one this session gave out");
	else
		confirm_state_take(s->confirm, state->u.str.ptr, state->u.str.len, &call,
		                   proc_now_ms(), &carried, &carried_len, &err);
	struct gw_call *c = NULL;
	if (err == NULL) {
		cleanup_free char *want = xstrndup(carried, carried_len);
		for (struct gw_call *x = s->calls; x != NULL && c == NULL; x = x->next) {
			cleanup_free char *id =
			    x->park != NULL ? xasprintf("%lld", (long long)x->park->id) : NULL;
			if (id != NULL && x->park->away && strcmp(id, want) == 0)
				c = x;
		}
		if (c == NULL)
			mg_err_set(&err,
			           "the call this requestState was for has ended (its server "
			           "answered, or the call timed out, while the client had its "
			           "questions)");
	}
	if (err != NULL) {
		round_record(carrier, "server.request.refused", "tools/call", "requestState",
		             "refused");
		gw_call_finish_error(carrier, RPC_INVALID_PARAMS, "tools/call %s: %s", public_name,
		                     mg_err_msg(err));
		mg_err_free(err);
		return;
	}
	/* the parked call takes the retry's request as its own */
	c->client_id = steal_pointer(&carrier->client_id);
	free(c->client_key);
	c->client_key = steal_pointer(&carrier->client_key);
	carrier->client_key = xstrdup("");
	c->client_progress_token = steal_pointer(&carrier->client_progress_token);
	c->park->away = false;
	gw_call_drop(carrier, NULL); /* it was only the retry's carrier */
	/* each question the client had gets its answer (or an error) */
	struct rpc_peer *peer = c->server->launch.peer;
	for (size_t i = 0; i < c->park->nasks;) {
		struct park_ask *a = &c->park->asks[i];
		if (!a->sent) {
			i++;
			continue;
		}
		const struct json_value *given = json_get(responses, a->key);
		struct json_value *answer =
		    given != NULL && given->kind == JSON_OBJECT ? json_copy(given) : NULL;
		/* in the server's revision, and holding no secret it may not have */
		cleanup_free char *unfit =
		    answer != NULL ? gw_relay_fit_answer(c->server, a->method, answer) : NULL;
		cleanup_free char *leak = answer != NULL && unfit == NULL
		                              ? gw_secrets_check_leaving(c->server, answer)
		                              : NULL;
		if (answer == NULL || unfit != NULL || leak != NULL) {
			round_record(c, "server.request.answered", a->method, a->key,
			             answer != NULL ? "withheld" : "none");
			cleanup_free char *why =
			    answer != NULL
			        ? xasprintf("mcpgate withheld the client's answer: %s",
			                    unfit != NULL ? unfit : leak)
			        : xasprintf("the client gave no answer to %s", a->method);
			json_free(answer);
			park_drop(c, i, why);
			continue;
		}
		round_record(c, "server.request.answered", a->method, a->key, "result");
		if (peer != NULL)
			rpc_peer_send_result(peer, a->server_id, answer, NULL);
		json_free(answer);
		park_drop(c, i, NULL);
	}
	/* questions the server asked meanwhile go to the client now */
	if (c->park->nasks > 0)
		park_send(c);
}
