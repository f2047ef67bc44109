/* libFuzzer target: a whole gateway session in one process, its client and
 * its servers played by the fuzzer over socketpairs (gateway_fakes.h), on
 * stdio or through serve --listen's request path (session_fuzz_listen.c),
 * fed messages of both MCP eras whose members the input changes.
 *
 * The input is a program, so that the fuzzer explores structure:
 *   byte 0      flags (SF_LISTEN, SF_MODERN, SF_HOLD, ... in session_fuzz.h)
 *   byte 1      variant: bit 0 a small line_max, bit 1 few listen_requests,
 *               bits 2-4 the clients' capabilities, bit 5 a logLevel on every
 *               2026-07-28 request
 *   then ops    4 bytes each: opcode, a, b, c (see enum op below)
 * An op either edits the next message (OP_EDIT: "params._meta.progressToken
 * := {}" is one op, one byte away from ":= 'tok'") or has one peer speak: the
 * client (a request or notification of any method the session serves, or an
 * answer to what the gateway asked it), or server N (a notification, a
 * request, or an answer to what the gateway asked it, with the right id or a
 * wrong one), raw lines, releasing or closing a server, and over HTTP header
 * edits, hang-ups, GET streams and DELETE. Every byte string is a program:
 * no execution is spent on an input that does not parse, and libFuzzer's
 * own mutations (a changed byte, a copied run of bytes, a crossover, a value
 * it saw compared) land on whole fields of whole ops. That is why a decoder
 * and not a custom mutator: an execution costs about a millisecond (a
 * session, its threads and sockets), so what matters is that nearly every
 * mutation stays a meaningful program, and fixed-width ops give that with
 * libFuzzer's comparison tracing left intact.
 *
 * Each op waits until the session is quiet: every byte sent was read,
 * every byte written was taken, nothing is queued, starting or running
 * on a job. So one input runs the same way every time, and a crash
 * reproduces from its artifact.
 *
 * What must not happen, besides what the sanitizers report: a line to a
 * peer that is not JSON-RPC; an answer to an id the peer never sent, or a
 * second answer to one; progress under a token the client never gave, or
 * under one that is no string or number; a
 * request to the client other than the three it may be asked; the stored
 * credential in any line (SF_SECRET); the session ending while its client
 * still speaks; a file descriptor left open; nothing settling for 30 s. */
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
#define SECRET         "qv7-Ferret-Lantern-3319"

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
#define ALPHA_TOOLS         ALPHA_TOOLS_WITH("Echoes.")
#define ALPHA_TOOLS_CHANGED ALPHA_TOOLS_WITH("Now does something else.")
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

static const struct {
	const char *name, *caps, *tools, *settings;
	uint8_t modern_flag;
} fakes[SF_SERVERS] = {
    {"alpha", ALPHA_CAPS, ALPHA_TOOLS, ALPHA_SETTINGS, SF_ALPHA_MODERN},
    {"beta", BETA_CAPS, BETA_TOOLS, BETA_SETTINGS, SF_BETA_MODERN},
    {"gamma", GAMMA_CAPS, GAMMA_TOOLS, GAMMA_SETTINGS, 0},
};

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

static void reqs_remove(struct sf_reqs *q, size_t i)
{
	req_clear(&q->v[i]);
	memmove(&q->v[i], &q->v[i + 1], (q->n - i - 1) * sizeof(q->v[0]));
	q->n--;
}

/* id copied, params taken */
static void reqs_push(struct sf_reqs *q, const struct json_value *id, const char *method,
                      const char *token, struct json_value *params)
{
	if (q->n == SF_PENDING) {
		reqs_remove(q, 0);
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
			reqs_remove(q, i);
			return true;
		}
	}
	return key == NULL || q->overflowed;
}

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
		return json_new_string(SECRET);
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

static struct sf_session **sessions_snapshot(size_t *n)
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

static struct sf_server *any_server_with_asked(void)
{
	size_t n;
	cleanup_free struct sf_session **all = sessions_snapshot(&n);
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < SF_SERVERS; k++)
			if (all[i]->srv[k].asked.n > 0)
				return &all[i]->srv[k];
	return NULL;
}

static size_t nservers(void)
{
	return sf_world->flags & SF_PASSTHROUGH ? 1 : SF_SERVERS;
}

/* The server an op's selector names, or NULL when no session has started */
static struct sf_server *server_of(uint8_t sel, struct sf_session **sess_out)
{
	size_t n;
	cleanup_free struct sf_session **all = sessions_snapshot(&n);
	if (n == 0)
		return NULL;
	struct sf_session *ss = all[(sel >> 2) % n];
	if (sess_out != NULL)
		*sess_out = ss;
	return &ss->srv[(sel & 3) % nservers()];
}

static void check_secret(const char *who, const char *line, size_t len)
{
	if ((sf_world->flags & SF_SECRET) && memmem(line, len, SECRET, strlen(SECRET)) != NULL)
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
	if (st->params != NULL && st->params->kind == JSON_OBJECT) {
		/* the retry says these itself */
		static const char *const drop[][2] = {{"requestState"}, {"inputResponses"}};
		for (size_t i = 0; i < N(drop); i++) {
			struct node n;
			if (resolve(st->params, (const char *const *)drop[i], false, &n))
				remove_member(&n);
		}
	}
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

void sf_client_line(struct sf_client *cl, const char *line, size_t len, struct sf_http *exchange,
                    bool lenient)
{
	sf_trace("client %zu <- %.*s", (size_t)(cl - sf_world->clients),
	         (int)(len > 400 ? 400 : len), line);
	check_secret("the client", line, len);
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
		if (id != NULL && id->kind != JSON_NULL && x != NULL && x->id != NULL) {
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
		if (x != NULL && m.id != NULL && m.id->kind != JSON_NULL) {
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
		if (m.id != NULL && m.id->kind != JSON_NULL && !reqs_take(&cl->own, m.id))
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
		reqs_push(&cl->asked, m.id, m.method, NULL, NULL);
		break;
	case RPC_NOTIFICATION:
		if (strcmp(m.method, "notifications/progress") == 0) {
			const struct json_value *t = json_get(m.params, "progressToken");
			if (t == NULL || (t->kind != JSON_STRING && t->kind != JSON_NUMBER))
				sf_finding("progress whose token is no string or number: %.300s",
				           line);
			if (!token_known(cl, t))
				sf_finding("progress under a token the client never gave: %.300s",
				           line);
			if (x != NULL && x->modern && x->token != NULL && !same_json(t, x->token))
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
	check_secret(who, line, len);
	struct rpc_msg m;
	cleanup_err struct mg_err *err = NULL;
	if (rpc_parse(line, len, 0, &m, &err) < 0)
		sf_finding("the gateway sent %s a line that is not JSON-RPC (%s): %.300s", who,
		           mg_err_msg(err), line);
	switch (m.kind) {
	case RPC_REQUEST: {
		const struct json_value *t = json_get(json_get(m.params, "_meta"), "progressToken");
		reqs_push(&sv->asked, m.id, m.method,
		          t != NULL && t->kind == JSON_STRING ? t->u.str.ptr : NULL, NULL);
		break;
	}
	case RPC_RESULT:
	case RPC_ERROR:
		if (m.id != NULL && m.id->kind != JSON_NULL && !reqs_take(&sv->own, m.id))
			sf_finding("%s was answered under an id it did not ask with, or a second "
			           "time: %.300s",
			           who, line);
		break;
	case RPC_NOTIFICATION:
	case RPC_INVALID:
		break;
	}
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
	for (size_t i = 0; i < nservers(); i++)
		settled &= fake_settled(&ss->srv[i].fake, !ss->srv[i].held, server_cb, &ss->srv[i]);
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
	cleanup_free struct sf_session **all = sessions_snapshot(&n);
	for (size_t i = 0; i < n; i++) {
		if (only != NULL && all[i] != only)
			continue;
		bool any = false;
		for (size_t k = 0; k < nservers(); k++)
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
	for (size_t i = 0; i < nservers(); i++) {
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
	atomic_fetch_add(&ss->waiting, 1);
	pthread_mutex_unlock(&w->lock);
	struct sf_server *sv = &ss->srv[srv - srv->sess->servers];
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
		reqs_push(own, m.id, m.method, NULL, params != NULL ? json_copy(params) : NULL);
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
		reqs_remove(&cl->asked, i); /* 3: it stays, to be answered again */
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
		    gw_fake_json(alt && strcmp(sv->fake.name, "alpha") == 0 ? ALPHA_TOOLS_CHANGED
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
		reqs_remove(&sv->asked, i); /* 3: it stays, to be answered again */
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
	    kc_set(kc, "API_TOKEN", SECRET, strlen(SECRET), &err) < 0)
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
		w.clients[i].caps = (w.variant >> 2) % N(client_caps);
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
