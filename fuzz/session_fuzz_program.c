/* The session fuzzer's input, a program (session_fuzz.c runs it):
 *   byte 0      flags (SF_LISTEN, SF_MODERN, SF_HOLD, ... in session_fuzz.h)
 *   byte 1      variant: bit 0 a small line_max, bit 1 few listen_requests,
 *               bits 2-4 the clients' capabilities, bit 5 a logLevel on every
 *               2026-07-28 request
 *   then ops    4 bytes each: opcode, a, b, c (enum op below)
 * An op either edits the next message (OP_EDIT: "params._meta.progressToken
 * := {}" is one op, one byte away from ":= 'tok'") or has one peer speak:
 * the client (a request or notification of any method the session serves,
 * or an answer to what the gateway asked it), or server N (a notification, a
 * request, or an answer to what the gateway asked it, by the right id or a
 * wrong one), raw lines, releasing or closing a server, and over HTTP header
 * edits, hang-ups, GET streams and DELETE. Every byte string is a program
 * (a field is taken modulo its count): no execution is spent on an input
 * that does not parse. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "fuzz/session_fuzz.h"
#include "internal/base/cleanup.h"
#include "internal/base/xalloc.h"
#include "internal/mcp/mcp.h"

/* ---- what the messages are made of ------------------------------------------ */

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const char *const tool_names[] = {
    "alpha__echo", "alpha__write", "alpha__poke", "alpha__quiet", "beta__echo", "gamma__echo",
    "gamma__ask",  "alpha__off",   "alpha__",     "__echo",       "nope",       "",
};
static const char *const uris[] = {
    "mcpgate://alpha/mem://notes/1",
    "mcpgate://alpha/file:///x",
    "mcpgate://beta/mem://a",
    "mcpgate://gamma/mem://a",
    "mem://notes/1",
    "mcpgate://alpha/",
    "mcpgate://",
    "",
};
static const char *const server_uris[] = {"mem://notes/1", "file:///x", "mem://a", ""};
static const char *const prompt_names[] = {"alpha__greet", "beta__greet", "gamma__greet", "greet",
                                           ""};
static const char *const levels[] = {"debug",    "info",  "notice",    "warning", "error",
                                     "critical", "alert", "emergency", "loud",    ""};
static const char *const client_caps[] = {
    "{}",
    "{'elicitation':{}}",
    "{'elicitation':{'form':{},'url':{}},'sampling':{},'roots':{'listChanged':true}}",
    "{'sampling':{},'roots':{}}",
    "{'elicitation':{'url':{}}}",
};
static const char *const versions[] = {"2025-11-25", "2025-06-18", "2024-11-05", "1999-01-01",
                                       MCP_PROTOCOL_MODERN};
static const char *const keys[] = {
    "mcpgate-confirm", "_meta",         "id",           "name", "uri",
    "__proto__",       "progressToken", "requestState", "",     "x"};

/* a member to change: a path of keys (a number indexes an array) */
#define MCP_PV MCP_META_PROTOCOL_VERSION
#define MCP_CC MCP_META_CLIENT_CAPS
static const char *const targets[][5] = {
    {"id"},
    {"method"},
    {"jsonrpc"},
    {"params"},
    {"params", "name"},
    {"params", "arguments"},
    {"params", "arguments", "text"},
    {"params", "arguments", "n"},
    {"params", "_meta"},
    {"params", "_meta", "progressToken"},
    {"params", "_meta", MCP_PV},
    {"params", "_meta", MCP_CC},
    {"params", "_meta", MCP_META_LOG_LEVEL},
    {"params", "_meta", "traceparent"},
    {"params", "_meta", MCP_CC, "elicitation"},
    {"params", "requestState"},
    {"params", "inputResponses"},
    {"params", "inputResponses", "mcpgate-confirm"},
    {"params", "inputResponses", "mcpgate-confirm", "action"},
    {"params", "cursor"},
    {"params", "uri"},
    {"params", "level"},
    {"params", "ref"},
    {"params", "ref", "type"},
    {"params", "ref", "name"},
    {"params", "argument"},
    {"params", "argument", "value"},
    {"params", "notifications"},
    {"params", "notifications", "resourceSubscriptions"},
    {"params", "notifications", "resourceSubscriptions", "0"},
    {"params", "notifications", "toolsListChanged"},
    {"params", "requestId"},
    {"params", "reason"},
    {"params", "protocolVersion"},
    {"params", "capabilities"},
    {"params", "capabilities", "elicitation"},
    {"params", "clientInfo"},
    {"params", "progressToken"},
    {"params", "progress"},
    {"params", "message"},
    {"params", "logger"},
    {"params", "data"},
    {"params", "elicitationId"},
    {"params", "mode"},
    {"params", "requestedSchema"},
    {"params", "messages"},
    {"params", "includeContext"},
    {"result"},
    {"result", "content"},
    {"result", "content", "0", "text"},
    {"result", "isError"},
    {"result", "_meta"},
    {"result", "resultType"},
    {"result", "inputRequests"},
    {"result", "inputRequests", "ask", "method"},
    {"result", "inputRequests", "ask", "params"},
    {"result", "requestState"},
    {"result", "tools"},
    {"result", "tools", "0", "name"},
    {"result", "nextCursor"},
    {"result", "contents", "0", "uri"},
    {"result", "messages"},
    {"result", "roots"},
    {"result", "action"},
    {"result", "content", "0", "resource", "uri"},
    {"error"},
    {"error", "code"},
    {"error", "message"},
    {"error", "data"},
};

/* ---- the edits ------------------------------------------------------------------- */

enum kind {
	K_NULL,
	K_TRUE,
	K_FALSE,
	K_ZERO,
	K_MINUS_ONE,
	K_INT,
	K_FLOAT,
	K_PAST_INT64,
	K_INT64_MIN,
	K_HUGE,
	K_NEG_ZERO,
	K_EMPTY_STRING,
	K_STRING,
	K_LONG_STRING,
	K_ESCAPES,
	K_EMPTY_ARRAY,
	K_EMPTY_OBJECT,
	K_ARRAY,
	K_OBJECT,
	K_DEEP_ARRAY,
	K_DEEP_OBJECT,
	K_WIDE_ARRAY,
	K_WIDE_OBJECT,
	K_SECRET,
	K_STATE,
	K_STATE_BENT,
	K_SERVER_TOKEN,
	K_CLIENT_ASKED_ID,
	K_SERVER_ASKED_ID,
	K_OWN_ID,
	K_TOOL,
	K_URI,
	K_LEVEL,
	K_DIGITS,
	K_INT64_MAX,
	K_MCPGATE_TOKEN,
	K_KEY_STRING,
	K_VERSION,
	/* on the member itself */
	K_DELETE,
	K_MOVE_FIRST,
	K_WRAP_ARRAY,
	K_WRAP_OBJECT,
	K_COPY,
	K_RENAME,
	K_COUNT
};

static struct json_value *nested(bool array, unsigned depth)
{
	struct json_value *v = json_new_int(1);
	for (unsigned i = 0; i < depth; i++) {
		struct json_value *o = array ? json_new_array() : json_new_object();
		if (array)
			json_array_push(o, v);
		else
			json_object_set(o, "a", v);
		v = o;
	}
	return v;
}

static struct sf_server *any_server_with_asked(void);

static const struct json_value *pick_id(const struct sf_reqs *q, unsigned p)
{
	return q->n > 0 ? q->v[p % q->n].id : NULL;
}

/* A value of kind k (parameter p); NULL for the kinds that act on the member */
static struct json_value *value_of(enum kind k, unsigned p)
{
	struct sf_world *w = sf_world;
	struct sf_client *cl = &w->clients[0];
	switch (k) {
	case K_NULL:
		return json_new_null();
	case K_TRUE:
		return json_new_bool(true);
	case K_FALSE:
		return json_new_bool(false);
	case K_ZERO:
		return json_new_int(0);
	case K_MINUS_ONE:
		return json_new_int(-1);
	case K_INT:
		return json_new_int((int64_t)p);
	case K_FLOAT:
		return json_new_number_text("1.5", 3);
	case K_PAST_INT64:
		return json_new_number_text("9223372036854775808", 19);
	case K_INT64_MIN:
		return json_new_number_text("-9223372036854775808", 20);
	case K_HUGE:
		return json_new_number_text("1e400", 5);
	case K_NEG_ZERO:
		return json_new_number_text("-0", 2);
	case K_EMPTY_STRING:
		return json_new_string("");
	case K_STRING:
		return json_new_string("tok");
	case K_LONG_STRING: {
		size_t n = (size_t)1 << (p % 18);
		char *s = xmalloc(n + 1);
		memset(s, 'a' + (int)(p % 26), n);
		s[n] = '\0';
		struct json_value *v = json_new_stringn(s, n);
		free(s);
		return v;
	}
	case K_ESCAPES: {
		static const char escapes[] = "a\0b\xc3\xa9\xf0\x9f\x98\x80\n\"\\\x7f";
		return json_new_stringn(escapes, sizeof(escapes) - 1);
	}
	case K_EMPTY_ARRAY:
		return json_new_array();
	case K_EMPTY_OBJECT:
		return json_new_object();
	case K_ARRAY:
		return gw_fake_json("[1,'a',null,{}]");
	case K_OBJECT:
		return gw_fake_json("{'a':1,'type':'text','text':'x'}");
	case K_DEEP_ARRAY:
		return nested(true, 1 + p % 80);
	case K_DEEP_OBJECT:
		return nested(false, 1 + p % 80);
	case K_WIDE_ARRAY: {
		struct json_value *a = json_new_array();
		for (unsigned i = 0; i < 16 * p + 1; i++)
			json_array_push(a, json_new_int(i));
		return a;
	}
	case K_WIDE_OBJECT: {
		struct json_value *o = json_new_object();
		for (unsigned i = 0; i < 16 * p + 1; i++) {
			char key[16];
			snprintf(key, sizeof(key), "k%u", i);
			json_object_set(o, key, json_new_int(i));
		}
		return o;
	}
	case K_SECRET:
		return json_new_string(SF_SECRET_VALUE);
	case K_STATE:
	case K_STATE_BENT: {
		if (cl->nstates == 0)
			return json_new_string("mcs1.AAAA");
		const char *st = cl->states[cl->nstates - 1 - p % cl->nstates].state;
		char *s = xstrdup(st);
		if (k == K_STATE_BENT && s[0] != '\0')
			s[(p >> 2) % strlen(s)] ^= 1;
		struct json_value *v = json_new_string(s);
		free(s);
		return v;
	}
	case K_SERVER_TOKEN: {
		struct sf_server *sv = any_server_with_asked();
		for (size_t i = 0; sv != NULL && i < sv->asked.n; i++)
			if (sv->asked.v[(i + p) % sv->asked.n].token[0] != '\0')
				return json_new_string(sv->asked.v[(i + p) % sv->asked.n].token);
		return json_new_string("mcpgate-1");
	}
	case K_CLIENT_ASKED_ID: {
		const struct json_value *id = pick_id(&cl->asked, p);
		return id != NULL ? json_copy(id) : json_new_int(1);
	}
	case K_SERVER_ASKED_ID: {
		struct sf_server *sv = any_server_with_asked();
		const struct json_value *id = sv != NULL ? pick_id(&sv->asked, p) : NULL;
		return id != NULL ? json_copy(id) : json_new_int(1);
	}
	case K_OWN_ID: {
		const struct json_value *id = pick_id(&cl->own, p);
		return id != NULL ? json_copy(id) : json_new_int(1);
	}
	case K_TOOL:
		return json_new_string(tool_names[p % N(tool_names)]);
	case K_URI:
		return json_new_string(uris[p % N(uris)]);
	case K_LEVEL:
		return json_new_string(levels[p % N(levels)]);
	case K_DIGITS: {
		char d[16];
		snprintf(d, sizeof(d), "%u", p);
		return json_new_string(d);
	}
	case K_INT64_MAX:
		return json_new_int(INT64_MAX);
	case K_MCPGATE_TOKEN: {
		char t[32];
		snprintf(t, sizeof(t), "mcpgate-%u", p % 8);
		return json_new_string(t);
	}
	case K_KEY_STRING:
		return json_new_string(keys[p % N(keys)]);
	case K_VERSION:
		return json_new_string(versions[p % N(versions)]);
	case K_DELETE:
	case K_MOVE_FIRST:
	case K_WRAP_ARRAY:
	case K_WRAP_OBJECT:
	case K_COPY:
	case K_RENAME:
	case K_COUNT:
		break;
	}
	return NULL;
}

/* A member of the tree: its parent (an object or array) and index */
struct node {
	struct json_value *parent;
	size_t index;
};

static struct json_value **slot(const struct node *n)
{
	return n->parent->kind == JSON_ARRAY ? &n->parent->u.arr.items[n->index]
	                                     : &n->parent->u.obj.items[n->index].value;
}

static size_t collect(struct json_value *v, struct node *out, size_t n, size_t max)
{
	if (v->kind == JSON_ARRAY)
		for (size_t i = 0; i < v->u.arr.len; i++) {
			if (n < max)
				out[n++] = (struct node){v, i};
			n = collect(v->u.arr.items[i], out, n, max);
		}
	else if (v->kind == JSON_OBJECT)
		for (size_t i = 0; i < v->u.obj.len; i++) {
			if (n < max)
				out[n++] = (struct node){v, i};
			n = collect(v->u.obj.items[i].value, out, n, max);
		}
	return n;
}

/* The member at path; made (null) with what leads to it when create */
static bool resolve(struct json_value *root, const char *const *path, bool create, struct node *out)
{
	struct json_value *cur = root;
	struct node at = {0};
	for (size_t i = 0; i < 5 && path[i] != NULL; i++) {
		if (cur->kind != JSON_OBJECT && cur->kind != JSON_ARRAY) {
			if (!create)
				return false;
			json_free(cur);
			cur = *slot(&at) = json_new_object();
		}
		if (cur->kind == JSON_ARRAY) {
			char *end = NULL;
			unsigned long k = strtoul(path[i], &end, 10);
			if (*end != '\0' || k >= cur->u.arr.len) {
				if (!create)
					return false;
				json_array_push(cur, json_new_null());
				k = cur->u.arr.len - 1;
			}
			at = (struct node){cur, k};
			cur = cur->u.arr.items[k];
			continue;
		}
		size_t k = 0;
		while (k < cur->u.obj.len && strcmp(cur->u.obj.items[k].key, path[i]) != 0)
			k++;
		if (k == cur->u.obj.len) {
			if (!create)
				return false;
			json_object_set(cur, path[i], json_new_null());
		}
		at = (struct node){cur, k};
		cur = cur->u.obj.items[k].value;
	}
	*out = at;
	return at.parent != NULL;
}

static void remove_member(const struct node *n)
{
	struct json_value *p = n->parent;
	if (p->kind == JSON_ARRAY) {
		json_free(p->u.arr.items[n->index]);
		memmove(&p->u.arr.items[n->index], &p->u.arr.items[n->index + 1],
		        (p->u.arr.len - n->index - 1) * sizeof(p->u.arr.items[0]));
		p->u.arr.len--;
		return;
	}
	free(p->u.obj.items[n->index].key);
	json_free(p->u.obj.items[n->index].value);
	memmove(&p->u.obj.items[n->index], &p->u.obj.items[n->index + 1],
	        (p->u.obj.len - n->index - 1) * sizeof(p->u.obj.items[0]));
	p->u.obj.len--;
}

static void move_first(const struct node *n)
{
	struct json_value *p = n->parent;
	if (p->kind == JSON_ARRAY) {
		struct json_value *v = p->u.arr.items[n->index];
		memmove(&p->u.arr.items[1], &p->u.arr.items[0], n->index * sizeof(v));
		p->u.arr.items[0] = v;
		return;
	}
	struct json_member m = p->u.obj.items[n->index];
	memmove(&p->u.obj.items[1], &p->u.obj.items[0], n->index * sizeof(m));
	p->u.obj.items[0] = m;
}

#define NODES_MAX 4096

static void apply_edit(struct json_value *root, const struct sf_edit *e)
{
	enum kind k = (enum kind)(e->kind % K_COUNT);
	bool on_member = k >= K_DELETE;
	struct node n;
	if (e->target < N(targets)) {
		if (!resolve(root, targets[e->target], !on_member, &n))
			return;
	} else {
		struct node *all = xmalloc(NODES_MAX * sizeof(*all));
		size_t count = collect(root, all, 0, NODES_MAX);
		bool any = count > 0;
		if (any)
			n = all[(e->target - N(targets)) % count];
		struct node other = any ? all[e->param % count] : n;
		free(all);
		if (!any)
			return;
		if (k == K_COPY) {
			struct json_value *copy = json_copy(*slot(&other));
			json_free(*slot(&n));
			*slot(&n) = copy;
			return;
		}
	}
	struct json_value **v = slot(&n);
	if (k == K_DELETE) {
		remove_member(&n);
	} else if (k == K_MOVE_FIRST) {
		move_first(&n);
	} else if (k == K_WRAP_ARRAY) {
		struct json_value *a = json_new_array();
		json_array_push(a, *v);
		*v = a;
	} else if (k == K_WRAP_OBJECT) {
		struct json_value *o = json_new_object();
		json_object_set(o, "value", *v);
		*v = o;
	} else if (k == K_COPY) {
		/* a named member: the whole message in it */
		struct json_value *copy = json_copy(root);
		json_free(*v);
		*v = copy;
	} else if (k == K_RENAME) {
		if (n.parent->kind == JSON_OBJECT) {
			const char *key = keys[e->param % N(keys)];
			free(n.parent->u.obj.items[n.index].key);
			n.parent->u.obj.items[n.index].key = xstrdup(key);
			n.parent->u.obj.items[n.index].keylen = strlen(key);
		}
	} else {
		json_free(*v);
		*v = value_of(k, e->param);
	}
}

static void apply_edits(struct json_value *root)
{
	struct sf_world *w = sf_world;
	for (size_t i = 0; i < w->nedits; i++)
		apply_edit(root, &w->edits[i]);
	w->nedits = 0;
}

/* ---- messages ------------------------------------------------------------------ */

static struct json_value *message(const struct json_value *id, const char *method,
                                  struct json_value *params)
{
	struct json_value *m = json_new_object();
	json_object_set(m, "jsonrpc", json_new_string("2.0"));
	if (id != NULL)
		json_object_set(m, "id", json_copy(id));
	json_object_set(m, "method", json_new_string(method));
	if (params != NULL)
		json_object_set(m, "params", params);
	return m;
}

static struct json_value *response(const struct json_value *id, struct json_value *result)
{
	struct json_value *m = json_new_object();
	json_object_set(m, "jsonrpc", json_new_string("2.0"));
	json_object_set(m, "id", id != NULL ? json_copy(id) : json_new_null());
	json_object_set(m, "result", result);
	return m;
}

static struct json_value *error_response(const struct json_value *id, int64_t code)
{
	struct json_value *m = json_new_object();
	json_object_set(m, "jsonrpc", json_new_string("2.0"));
	json_object_set(m, "id", id != NULL ? json_copy(id) : json_new_null());
	json_object_set(m, "error",
	                gw_fields("code", json_new_int(code), "message", json_new_string("no"),
	                          "data", gw_fake_json("{'why':'because'}"), NULL));
	return m;
}

static struct json_value *jfmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static struct json_value *jfmt(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cleanup_free char *text = xvasprintf(fmt, ap);
	va_end(ap);
	return gw_fake_json(text);
}

/* An id of kind k for the n-th request; last: the one before */
static struct json_value *make_id(unsigned k, int64_t n, const struct json_value *last)
{
	char s[32];
	switch (k % 12) {
	case 4:
		snprintf(s, sizeof(s), "c-%lld", (long long)n);
		return json_new_string(s);
	case 5:
		return json_new_int(-n);
	case 6:
		return json_new_int(0);
	case 7:
		return json_new_int(INT64_MAX - n);
	case 8:
		snprintf(s, sizeof(s), "%lld", (long long)n);
		return json_new_string(s);
	case 9:
		return json_new_string("");
	case 10:
		return last != NULL ? json_copy(last) : json_new_int(n);
	case 11:
		return json_new_number_text("1.5", 3);
	default:
		return json_new_int(n);
	}
}

static const char *tool_name(unsigned v)
{
	const char *t = tool_names[v % N(tool_names)];
	if ((sf_world->flags & SF_PASSTHROUGH) && strncmp(t, "alpha__", 7) == 0 && t[7] != '\0')
		return t + 7;
	return t;
}

static const char *uri_of(unsigned v)
{
	const char *u = uris[v % N(uris)];
	if ((sf_world->flags & SF_PASSTHROUGH) && strncmp(u, "mcpgate://alpha/", 16) == 0)
		return u + 16;
	return u;
}

/* 2026-07-28's envelope on a request's params */
static void envelope(const struct sf_client *cl, struct json_value *m)
{
	struct node n;
	static const char *const meta[] = {"params", "_meta", NULL};
	if (!resolve(m, meta, true, &n))
		return;
	struct json_value **v = slot(&n);
	if ((*v)->kind != JSON_OBJECT) {
		json_free(*v);
		*v = json_new_object();
	}
	json_object_set(*v, MCP_META_PROTOCOL_VERSION, json_new_string(MCP_PROTOCOL_MODERN));
	json_object_set(*v, MCP_META_CLIENT_CAPS,
	                gw_fake_json(client_caps[cl->caps % N(client_caps)]));
	if (sf_world->variant & 0x20)
		json_object_set(*v, MCP_META_LOG_LEVEL, json_new_string("debug"));
}

enum client_template {
	CT_INITIALIZE,
	CT_INITIALIZED,
	CT_PING,
	CT_DISCOVER,
	CT_TOOLS_LIST,
	CT_CALL,
	CT_RETRY,
	CT_RESOURCES_LIST,
	CT_TEMPLATES_LIST,
	CT_READ,
	CT_SUBSCRIBE,
	CT_UNSUBSCRIBE,
	CT_PROMPTS_LIST,
	CT_PROMPT_GET,
	CT_COMPLETE,
	CT_SET_LEVEL,
	CT_LISTEN,
	CT_CANCEL,
	CT_ROOTS_CHANGED,
	CT_UNKNOWN_REQUEST,
	CT_UNKNOWN_NOTIFICATION,
	CT_COUNT
};

/* What a client answers an input request of method (kind 0: as asked) */
static struct json_value *input_answer(const char *method, unsigned kind)
{
	if (method != NULL && strcmp(method, "sampling/createMessage") == 0)
		return gw_fake_json(
		    "{'role':'assistant','content':{'type':'text','text':'ok'},'model':'m'}");
	if (method != NULL && strcmp(method, "roots/list") == 0)
		return gw_fake_json("{'roots':[{'uri':'file:///workspace','name':'ws'}]}");
	if (method != NULL && strcmp(method, "ping") == 0)
		return json_new_object();
	static const char *const actions[] = {"accept", "decline", "cancel", "maybe"};
	return jfmt("{'action':'%s','content':{}}", actions[kind % N(actions)]);
}

/* A retry of a request that was answered input_required: its params again
 * with the state and the answers */
static struct json_value *retry_params(const struct sf_state *st, unsigned v)
{
	struct json_value *p = st->params != NULL && st->params->kind == JSON_OBJECT
	                           ? json_copy(st->params)
	                           : json_new_object();
	/* what the request said of these, the retry says itself */
	static const char *const answered[] = {"inputResponses", NULL};
	struct node n;
	if (resolve(p, answered, false, &n))
		remove_member(&n);
	json_object_set(p, "requestState", json_new_string(st->state));
	struct json_value *answers = json_new_object();
	const struct json_value *k = st->keys;
	for (size_t i = 0; k != NULL && k->kind == JSON_OBJECT && i < k->u.obj.len; i++) {
		if ((v >> 2) % 5 == 3 && i == 0)
			continue; /* one left unanswered */
		json_object_set(answers, k->u.obj.items[i].key,
		                input_answer(json_get_string(k->u.obj.items[i].value, "method"),
		                             (v >> 2) % 5 == 4 ? 1 : (v >> 5)));
	}
	if ((v >> 2) % 5 == 2)
		json_object_set(answers, "unasked", input_answer(NULL, 0));
	if ((v >> 2) % 5 == 1)
		json_free(answers);
	else
		json_object_set(p, "inputResponses", answers);
	return p;
}

static struct json_value *client_params(struct sf_client *cl, enum client_template t, unsigned v,
                                        const char **method)
{
	switch (t) {
	case CT_INITIALIZE:
		*method = "initialize";
		return jfmt("{'protocolVersion':'%s','capabilities':%s,'clientInfo':{'name':'fuzz',"
		            "'version':'1'}}",
		            versions[v % N(versions)],
		            client_caps[(v / N(versions)) % N(client_caps)]);
	case CT_INITIALIZED:
		*method = "notifications/initialized";
		return NULL;
	case CT_PING:
		*method = "ping";
		return NULL;
	case CT_DISCOVER:
		*method = "server/discover";
		return json_new_object();
	case CT_TOOLS_LIST:
	case CT_RESOURCES_LIST:
	case CT_TEMPLATES_LIST:
	case CT_PROMPTS_LIST:
		*method = t == CT_TOOLS_LIST       ? "tools/list"
		          : t == CT_RESOURCES_LIST ? "resources/list"
		          : t == CT_TEMPLATES_LIST ? "resources/templates/list"
		                                   : "prompts/list";
		switch (v % 4) {
		case 1:
			return gw_fake_json("{'cursor':'bogus'}");
		case 2:
			return gw_fake_json("{'cursor':'100'}");
		case 3:
			return NULL;
		}
		return json_new_object();
	case CT_CALL: {
		*method = "tools/call";
		static const char *const args[] = {"{'text':'hi'}", "{}", "{'text':'hi','n':3}",
		                                   "{'n':true}"};
		struct json_value *p =
		    jfmt("{'name':'%s','arguments':%s}", tool_name(v), args[(v >> 4) % N(args)]);
		unsigned tok = (v >> 6) % 4;
		if (tok == 1 || tok == 2) {
			char name[32];
			snprintf(name, sizeof(name), "tok-%lld", (long long)cl->next_id);
			json_object_set(
			    p, "_meta",
			    gw_fields("progressToken",
			              tok == 1 ? json_new_string(name) : json_new_int(cl->next_id),
			              "traceparent",
			              json_new_string("00-4bf92f3577b34da6a3ce929d0e0e4736-"
			                              "00f067aa0ba902b7-01"),
			              NULL));
		}
		return p;
	}
	case CT_RETRY: {
		if (cl->nstates == 0) {
			*method = "tools/call";
			return jfmt("{'name':'%s','arguments':{},'requestState':'mcs1.AAAA',"
			            "'inputResponses':{'mcpgate-confirm':{'action':'accept'}}}",
			            tool_name(v));
		}
		const struct sf_state *st = &cl->states[cl->nstates - 1 - (v & 3) % cl->nstates];
		*method = st->method;
		struct json_value *p = retry_params(st, v);
		/* its own _meta goes again (a fresh envelope below) */
		return p;
	}
	case CT_READ:
	case CT_SUBSCRIBE:
	case CT_UNSUBSCRIBE:
		*method = t == CT_READ        ? "resources/read"
		          : t == CT_SUBSCRIBE ? "resources/subscribe"
		                              : "resources/unsubscribe";
		return jfmt("{'uri':'%s'}", uri_of(v));
	case CT_PROMPT_GET:
		*method = "prompts/get";
		return jfmt("{'name':'%s','arguments':{'who':'you'}}",
		            (sf_world->flags & SF_PASSTHROUGH) && v % N(prompt_names) == 0
		                ? "greet"
		                : prompt_names[v % N(prompt_names)]);
	case CT_COMPLETE:
		*method = "completion/complete";
		if (v & 1)
			return jfmt(
			    "{'ref':{'type':'ref/resource','uri':'%s'},'argument':{'name':'id',"
			    "'value':'1'}}",
			    uri_of(v >> 1));
		return jfmt("{'ref':{'type':'ref/prompt','name':'%s'},'argument':{'name':'who',"
		            "'value':'y'},'context':{'arguments':{}}}",
		            prompt_names[(v >> 1) % N(prompt_names)]);
	case CT_SET_LEVEL:
		*method = "logging/setLevel";
		return jfmt("{'level':'%s'}", levels[v % N(levels)]);
	case CT_LISTEN: {
		*method = "subscriptions/listen";
		struct json_value *subs = json_new_array();
		for (unsigned i = 0; i < (v >> 2) % 4; i++)
			json_array_push(subs, json_new_string(uri_of(v + i)));
		return gw_fields("notifications",
		                 gw_fields("toolsListChanged", json_new_bool(true),
		                           "promptsListChanged", json_new_bool(v & 1),
		                           "resourcesListChanged", json_new_bool(v & 2),
		                           "resourceSubscriptions", subs, NULL),
		                 NULL);
	}
	case CT_CANCEL: {
		*method = "notifications/cancelled";
		const struct json_value *id = pick_id(&cl->own, v);
		struct json_value *p =
		    gw_fields("requestId", id != NULL ? json_copy(id) : json_new_int(12345), NULL);
		if (v & 0x80)
			json_object_set(p, "reason", json_new_string("changed my mind"));
		return p;
	}
	case CT_ROOTS_CHANGED:
		*method = "notifications/roots/list_changed";
		return NULL;
	case CT_UNKNOWN_REQUEST:
		*method = "tasks/get";
		return json_new_object();
	case CT_UNKNOWN_NOTIFICATION:
		*method = "notifications/unknown";
		return json_new_object();
	case CT_COUNT:
		break;
	}
	*method = "ping";
	return NULL;
}

/* ---- the peers' sides ------------------------------------------------------------ */

static struct sf_server *any_server_with_asked(void)
{
	size_t n;
	cleanup_free struct sf_session **all = sf_sessions_snapshot(&n);
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < SF_SERVERS; k++)
			if (all[i]->srv[k].asked.n > 0)
				return &all[i]->srv[k];
	return NULL;
}

/* The server an op's selector names, or NULL when no session has started */
static struct sf_server *server_of(uint8_t sel, struct sf_session **sess_out)
{
	size_t n;
	cleanup_free struct sf_session **all = sf_sessions_snapshot(&n);
	if (n == 0)
		return NULL;
	struct sf_session *ss = all[(sel >> 2) % n];
	if (sess_out != NULL)
		*sess_out = ss;
	struct sf_server *sv = &ss->srv[(sel & 3) % sf_nservers()];
	pthread_mutex_lock(&sf_world->lock);
	bool started = sv->started;
	pthread_mutex_unlock(&sf_world->lock);
	return started ? sv : NULL;
}

/* ---- the ops ----------------------------------------------------------------------- */

enum op {
	OP_EDIT,         /* a target, b kind, c parameter: the next message's */
	OP_CLIENT,       /* a template, b variant, c: id kind (low 4 bits), client */
	OP_CLIENT_REPLY, /* a which request, b kind, c: id variant (low 4 bits), client */
	OP_SERVER,       /* a template, b variant, c server */
	OP_SERVER_REPLY, /* a which request, b: kind, id, detail; c server */
	OP_RAW,          /* a line, b parameter, c: server, or the client (bit 7) */
	OP_RELEASE,      /* c server */
	OP_CLOSE,        /* c server: its output ends */
	OP_HEADER,       /* listener: a header, b kind, c parameter: the next request's */
	OP_HTTP,         /* listener: a action, b which, c client */
	OP_ERA,          /* a: 2026-07-28 (odd) or not, b capabilities, c client */
	OP_COUNT
};

static struct sf_client *client_of(uint8_t c)
{
	return &sf_world->clients[(c >> 4) % sf_world->nclients];
}

/* One line to the client's side of the gateway */
static void client_send(struct sf_client *cl, const struct json_value *msg, const char *raw,
                        size_t raw_len)
{
	struct sf_world *w = sf_world;
	size_t ci = (size_t)(cl - w->clients);
	if (w->flags & SF_LISTEN) {
		sf_listen_post(ci, msg, raw, raw_len);
		return;
	}
	cleanup_free char *text = msg != NULL ? sf_text(msg) : NULL;
	const char *bytes = text != NULL ? text : raw;
	size_t len = text != NULL ? strlen(text) : raw_len;
	sf_trace("client -> %.*s", (int)(len > 400 ? 400 : len), bytes);
	gw_fake_queue(&w->client, bytes, len);
	if (msg != NULL)
		gw_fake_queue(&w->client, "\n", 1);
}

static void server_send(struct sf_server *sv, const struct json_value *msg, const char *raw,
                        size_t raw_len)
{
	if (sv->closed)
		return;
	cleanup_free char *text = msg != NULL ? sf_text(msg) : NULL;
	const char *bytes = text != NULL ? text : raw;
	size_t len = text != NULL ? strlen(text) : raw_len;
	sf_trace("%s -> %.*s", sv->fake.name, (int)(len > 400 ? 400 : len), bytes);
	gw_fake_queue(&sv->fake, bytes, len);
	if (msg != NULL)
		gw_fake_queue(&sv->fake, "\n", 1);
}

/* What a peer sent that the gateway may answer by its id, as the gateway
 * reads it: a request, or a line that is no message but has an id (a
 * response with both result and error is answered as invalid). Its id is
 * kept in own to check the answer; false when there is none. */
static bool note_line(struct sf_reqs *own, const char *line, size_t len,
                      const struct json_value *params)
{
	struct rpc_msg m;
	bool answerable =
	    rpc_parse(line, len, 0, &m, NULL) == 0 ? m.kind == RPC_REQUEST : m.id != NULL;
	if (answerable)
		sf_reqs_push(own, m.id, m.method, NULL, params != NULL ? json_copy(params) : NULL);
	rpc_msg_free(&m);
	return answerable;
}

static bool note_sent(struct sf_reqs *own, const struct json_value *m)
{
	cleanup_free char *text = sf_text(m);
	return note_line(own, text, strlen(text), json_get(m, "params"));
}

static void op_client(uint8_t a, uint8_t b, uint8_t c)
{
	struct sf_client *cl = client_of(c);
	enum client_template t = (enum client_template)(a % CT_COUNT);
	const char *method = NULL;
	struct json_value *params = client_params(cl, t, b, &method);
	bool notification = strncmp(method, "notifications/", 14) == 0;
	struct json_value *id = notification ? NULL : make_id(c & 15, cl->next_id, cl->last_id);
	cl->next_id++;
	struct json_value *m = message(id, method, params);
	if (cl->modern && !notification && t != CT_INITIALIZE)
		envelope(cl, m);
	apply_edits(m);
	/* what the client asked, as it went: its id, its token, its params */
	const struct json_value *sent_id = json_get(m, "id");
	const struct json_value *token =
	    json_get(json_get(json_get(m, "params"), "_meta"), "progressToken");
	if (token != NULL) {
		if (cl->tokens == NULL)
			cl->tokens = json_new_array();
		json_array_push(cl->tokens, json_copy(token));
	}
	if (note_sent(&cl->own, m)) {
		json_free(cl->last_id);
		cl->last_id = json_copy(sent_id);
	}
	client_send(cl, m, NULL, 0);
	json_free(id);
	json_free(m);
}

static void op_client_reply(uint8_t a, uint8_t b, uint8_t c)
{
	struct sf_client *cl = client_of(c);
	if (cl->asked.n == 0) {
		sf_world->nedits = 0;
		return;
	}
	size_t i = a % cl->asked.n;
	struct sf_req *r = &cl->asked.v[i];
	struct json_value *id = json_copy(r->id);
	unsigned idv = c & 15;
	if (idv % 4 == 1) {
		int64_t n;
		json_free(id);
		id = json_new_int(json_number_int64(r->id, &n) == 0 ? n + 1000 : 1000);
	} else if (idv % 4 == 2 && r->id->kind == JSON_NUMBER) {
		json_free(id);
		id = json_new_stringn(r->id->u.num.ptr, r->id->u.num.len);
	}
	struct json_value *m = b % 6 == 3   ? error_response(id, -32601)
	                       : b % 6 == 4 ? response(id, json_new_int(5))
	                       : b % 6 == 5 ? response(id, gw_fake_json("{'action':'accept',"
	                                                                "'content':{'x':1}}"))
	                                    : response(id, input_answer(r->method, b % 6));
	apply_edits(m);
	note_sent(&cl->own, m);
	if (idv % 4 != 3)
		sf_reqs_remove(&cl->asked, i); /* 3: it stays, to be answered again */
	client_send(cl, m, NULL, 0);
	json_free(id);
	json_free(m);
}

enum server_template {
	ST_PROGRESS,
	ST_LOG,
	ST_TOOLS_CHANGED,
	ST_RESOURCES_CHANGED,
	ST_PROMPTS_CHANGED,
	ST_UPDATED,
	ST_CANCELLED,
	ST_ELICITATION_COMPLETE,
	ST_ELICIT,
	ST_SAMPLING,
	ST_ROOTS,
	ST_PING,
	ST_UNKNOWN_REQUEST,
	ST_UNKNOWN_NOTIFICATION,
	ST_COUNT
};

static void op_server(uint8_t a, uint8_t b, uint8_t c)
{
	struct sf_server *sv = server_of(c, NULL);
	if (sv == NULL) {
		sf_world->nedits = 0;
		return;
	}
	const char *method = NULL;
	struct json_value *params = NULL;
	switch ((enum server_template)(a % ST_COUNT)) {
	case ST_PROGRESS: {
		const char *token = "mcpgate-1";
		for (size_t i = 0; i < sv->asked.n; i++)
			if (sv->asked.v[(i + b) % sv->asked.n].token[0] != '\0')
				token = sv->asked.v[(i + b) % sv->asked.n].token;
		method = "notifications/progress";
		params = jfmt("{'progressToken':'%s','progress':%u,'total':10,'message':'step'}",
		              token, b);
		break;
	}
	case ST_LOG:
		method = "notifications/message";
		params = jfmt("{'level':'%s','logger':'fake','data':{'said':'hello'}}",
		              levels[b % N(levels)]);
		break;
	case ST_TOOLS_CHANGED:
		method = "notifications/tools/list_changed";
		break;
	case ST_RESOURCES_CHANGED:
		method = "notifications/resources/list_changed";
		break;
	case ST_PROMPTS_CHANGED:
		method = "notifications/prompts/list_changed";
		break;
	case ST_UPDATED:
		method = "notifications/resources/updated";
		params = jfmt("{'uri':'%s'}", server_uris[b % N(server_uris)]);
		break;
	case ST_CANCELLED: {
		method = "notifications/cancelled";
		const struct json_value *id = pick_id(&sv->own, b);
		params = gw_fields("requestId", id != NULL ? json_copy(id) : json_new_int(99),
		                   "reason", json_new_string("no longer"), NULL);
		break;
	}
	case ST_ELICITATION_COMPLETE:
		method = "notifications/elicitation/complete";
		params = gw_fake_json("{'elicitationId':'e1'}");
		break;
	case ST_ELICIT:
		method = "elicitation/create";
		params = b & 1 ? gw_fake_json("{'mode':'url','url':'https://example.org/auth',"
		                              "'elicitationId':'e1','message':'go there'}")
		               : gw_fake_json("{'message':'name?','requestedSchema':{'type':"
		                              "'object','properties':{'n':{'type':'string'}}}}");
		break;
	case ST_SAMPLING: {
		static const char *const ctx[] = {"none", "thisServer", "allServers"};
		method = "sampling/createMessage";
		params = jfmt("{'messages':[{'role':'user','content':{'type':'text','text':'hi'}}],"
		              "'maxTokens':10,'includeContext':'%s'}",
		              ctx[b % N(ctx)]);
		break;
	}
	case ST_ROOTS:
		method = "roots/list";
		break;
	case ST_PING:
		method = "ping";
		break;
	case ST_UNKNOWN_REQUEST:
		method = "tools/call";
		params = gw_fake_json("{'name':'x'}");
		break;
	case ST_UNKNOWN_NOTIFICATION:
		method = "notifications/whatever";
		break;
	case ST_COUNT:
		break;
	}
	bool request = strncmp(method, "notifications/", 14) != 0;
	struct json_value *id = request ? make_id(b >> 4, sv->next_id++, NULL) : NULL;
	struct json_value *m = message(id, method, params);
	apply_edits(m);
	note_sent(&sv->own, m);
	server_send(sv, m, NULL, 0);
	json_free(id);
	json_free(m);
}

/* A result as its method's server would give it (alt: the other form) */
static struct json_value *natural_result(const struct sf_server *sv, const char *method, bool alt)
{
	if (strcmp(method, "tools/call") == 0)
		return alt ? gw_fake_json(
		                 "{'content':[{'type':'resource','resource':{'uri':'mem://notes/1',"
		                 "'text':'t'}},{'type':'resource_link','uri':'file:///x','name':"
		                 "'x'}],'isError':true}")
		           : gw_fake_json("{'content':[{'type':'text','text':'ok'}]}");
	if (strcmp(method, "tools/list") == 0) {
		struct json_value *tools =
		    gw_fake_json(alt && strcmp(sv->fake.name, "alpha") == 0 ? sf_alpha_tools_changed
		                                                            : sv->fake.tools);
		return gw_fields("tools", tools, NULL);
	}
	if (strcmp(method, "resources/list") == 0)
		return alt ? gw_fake_json("{'resources':[{'uri':'file:///x','name':'x'}],"
		                          "'nextCursor':'2'}")
		           : gw_fake_json("{'resources':[{'uri':'mem://notes/1','name':'n'}]}");
	if (strcmp(method, "resources/templates/list") == 0)
		return gw_fake_json("{'resourceTemplates':[{'uriTemplate':'mem://notes/{id}',"
		                    "'name':'t'}]}");
	if (strcmp(method, "prompts/list") == 0)
		return alt ? gw_fake_json("{'prompts':[{'name':'greet'},{'name':'x'}],'nextCursor':"
		                          "'c'}")
		           : gw_fake_json("{'prompts':[{'name':'greet','arguments':[{'name':"
		                          "'who'}]}]}");
	if (strcmp(method, "resources/read") == 0)
		return alt ? gw_fake_json("{'contents':[{'uri':'file:///etc/x','blob':'AAAA'}]}")
		           : gw_fake_json("{'contents':[{'uri':'mem://notes/1','text':'note'}]}");
	if (strcmp(method, "prompts/get") == 0)
		return alt ? gw_fake_json(
		                 "{'messages':[{'role':'user','content':{'type':'resource',"
		                 "'resource':{'uri':'mem://a','text':'t'}}}]}")
		           : gw_fake_json("{'messages':[{'role':'user','content':{'type':'text',"
		                          "'text':'hi'}}]}");
	if (strcmp(method, "completion/complete") == 0)
		return gw_fake_json(
		    "{'completion':{'values':['a','b'],'total':2,'hasMore':false}}");
	return json_new_object();
}

static struct json_value *input_required(unsigned v)
{
	struct json_value *asks = json_new_object();
	if (v & 1)
		json_object_set(asks, "ask",
		                gw_fake_json("{'method':'elicitation/create','params':{'message':"
		                             "'sure?','requestedSchema':{'type':'object',"
		                             "'properties':{}}}}"));
	if (v & 2)
		json_object_set(asks, "sample",
		                gw_fake_json("{'method':'sampling/createMessage','params':{"
		                             "'messages':[],'maxTokens':5}}"));
	if (v & 4)
		json_object_set(asks, "roots", gw_fake_json("{'method':'roots/list'}"));
	if (v & 8)
		json_object_set(asks, "odd", gw_fake_json("{'method':'tools/call','params':{}}"));
	return gw_fields("resultType", json_new_string("input_required"), "inputRequests", asks,
	                 "requestState", json_new_string(v & 16 ? "" : "server-state-1"), NULL);
}

static void op_server_reply(uint8_t a, uint8_t b, uint8_t c)
{
	struct sf_server *sv = server_of(c, NULL);
	if (sv == NULL || sv->asked.n == 0) {
		sf_world->nedits = 0;
		return;
	}
	size_t i = a % sv->asked.n;
	struct sf_req *r = &sv->asked.v[i];
	struct json_value *id = json_copy(r->id);
	/* b: the kind (bits 0-2), the id (3-5), a detail (6-7) */
	unsigned idv = ((b >> 3) & 7) % 6, detail = b >> 6;
	if (idv == 1) {
		int64_t n;
		json_free(id);
		id = json_new_int(json_number_int64(r->id, &n) == 0 ? n + 1000 : 1000);
	} else if (idv == 2 && r->id->kind == JSON_NUMBER) {
		json_free(id);
		id = json_new_stringn(r->id->u.num.ptr, r->id->u.num.len);
	}
	struct json_value *m;
	switch (b % 8) {
	case 1:
		m = response(id, natural_result(sv, r->method, true));
		break;
	case 2:
		m = response(id, input_required(a >> 3 | 1));
		break;
	case 3:
		m = error_response(id, (int64_t[]){-32601, -32602, -32002, -32021}[detail]);
		break;
	case 4:
		m = response(id, detail & 1 ? json_new_int(5) : json_new_null());
		break;
	case 5: {
		struct json_value *result = natural_result(sv, r->method, false);
		json_object_set(
		    result, "_meta",
		    gw_fake_json("{'io.modelcontextprotocol/serverInfo':{'name':'evil'},"
		                 "'io.mcpgate/server':'beta'}"));
		json_object_set(result, "resultType", json_new_string("complete"));
		m = response(id, result);
		break;
	}
	case 6:
		m = response(id, input_required(a >> 3));
		break;
	default:
		m = response(id, natural_result(sv, r->method, false));
	}
	apply_edits(m);
	note_sent(&sv->own, m);
	if (idv != 3)
		sf_reqs_remove(&sv->asked, i); /* 3: it stays, to be answered again */
	server_send(sv, m, NULL, 0);
	json_free(id);
	json_free(m);
}

/* Lines that are no message, or not one MCP allows (OP_RAW) */
enum raw {
	RAW_UNPARSABLE,
	RAW_EMPTY_BATCH,
	RAW_BATCH,
	RAW_NULL,
	RAW_NO_METHOD,
	RAW_OLD_JSONRPC,
	RAW_BAD_UTF8,
	RAW_EMPTY,
	RAW_TRAILING,
	RAW_RESULT_AND_ERROR,
	RAW_LONG,    /* a line around line_max */
	RAW_PARTIAL, /* half a message, no newline */
	RAW_COUNT
};
static const char *const raw_lines[RAW_LONG] = {
    [RAW_UNPARSABLE] = "{",
    [RAW_EMPTY_BATCH] = "[]",
    [RAW_BATCH] = "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]",
    [RAW_NULL] = "null",
    [RAW_NO_METHOD] = "{\"jsonrpc\":\"2.0\"}",
    [RAW_OLD_JSONRPC] = "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}",
    [RAW_BAD_UTF8] = "\xff\xfe{}",
    [RAW_EMPTY] = "",
    [RAW_TRAILING] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} trailing",
    [RAW_RESULT_AND_ERROR] =
        "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{},\"error\":{\"code\":1,\"message\":\"both\"}}",
};

static void op_raw(uint8_t a, uint8_t b, uint8_t c)
{
	struct sf_world *w = sf_world;
	enum raw kind = (enum raw)(a % RAW_COUNT);
	size_t len;
	cleanup_free char *line = NULL;
	if (kind == RAW_LONG) {
		size_t n = (size_t)w->cfg->mcp.line_max + (size_t)b * 16 - 2048;
		line = xmalloc(n + 32);
		int h = snprintf(line, 32, "{\"jsonrpc\":\"2.0\",\"x\":\"");
		memset(line + h, 'x', n);
		memcpy(line + h + n, "\"}\n", 4);
		len = (size_t)h + n + 3;
	} else if (kind == RAW_PARTIAL) {
		line = xstrdup("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/");
		len = strlen(line);
	} else {
		line = xasprintf("%s\n", raw_lines[kind]);
		len = strlen(line);
	}
	size_t text_len = len > 0 && line[len - 1] == '\n' ? len - 1 : len;
	if (c & 0x80) {
		struct sf_client *cl = client_of(c);
		note_line(&cl->own, line, text_len, NULL);
		client_send(cl, NULL, line, (w->flags & SF_LISTEN) ? text_len : len);
		return;
	}
	struct sf_server *sv = server_of(c, NULL);
	if (sv != NULL) {
		note_line(&sv->own, line, text_len, NULL);
		server_send(sv, NULL, line, len);
	}
}

static void op_close(uint8_t c)
{
	struct sf_server *sv = server_of(c, NULL);
	if (sv == NULL || sv->closed || sv->fake.fd < 0)
		return;
	sf_trace("%s closes its output", sv->fake.name);
	gw_fake_flush(&sv->fake);
	mg_buf_reset(&sv->fake.out);
	shutdown(sv->fake.fd, SHUT_WR);
	sv->closed = true;
}

bool sf_next_op(void)
{
	struct sf_world *w = sf_world;
	if (w->next >= w->nops)
		return false;
	const uint8_t *o = w->ops + 4 * w->next++;
	enum op op = (enum op)(o[0] % OP_COUNT);
	uint8_t a = o[1], b = o[2], c = o[3];
	sf_trace("op %zu: %d %u %u %u", w->next - 1, (int)op, a, b, c);
	switch (op) {
	case OP_EDIT:
		if (w->nedits < SF_EDITS)
			w->edits[w->nedits++] = (struct sf_edit){a, b, c};
		break;
	case OP_CLIENT:
		op_client(a, b, c);
		break;
	case OP_CLIENT_REPLY:
		op_client_reply(a, b, c);
		break;
	case OP_SERVER:
		op_server(a, b, c);
		break;
	case OP_SERVER_REPLY:
		op_server_reply(a, b, c);
		break;
	case OP_RAW:
		op_raw(a, b, c);
		break;
	case OP_RELEASE: {
		struct sf_server *sv = server_of(c, NULL);
		if (sv != NULL && sv->held) {
			sf_trace("release %s", sv->fake.name);
			sv->held = false;
			gw_fake_release(&sv->fake);
		}
		break;
	}
	case OP_CLOSE:
		op_close(c);
		break;
	case OP_HEADER:
		if ((w->flags & SF_LISTEN) && w->nheaders < SF_HEADERS)
			w->headers[w->nheaders++] = (struct sf_edit){a, b, c};
		break;
	case OP_HTTP:
		if (w->flags & SF_LISTEN)
			sf_listen_http(a, b, (size_t)(c >> 4) % w->nclients);
		break;
	case OP_ERA: {
		struct sf_client *cl = client_of(c);
		cl->modern = a & 1;
		cl->caps = b;
		break;
	}
	case OP_COUNT:
		break;
	}
	return true;
}
