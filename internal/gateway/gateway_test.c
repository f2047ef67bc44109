/* Tests of internal/gateway: a whole session (session_run on a thread of
 * its own) whose client and servers the test plays over socketpairs,
 * speaking JSON-RPC lines, with no container runtime: each server's start is
 * replaced (session->start_thread) by one that hands it its peer, its
 * initialize answer and its tool list. Routing, id mapping, cancel, progress
 * and policy, each seen on the wire from both sides.
 *
 * Where a test shows that something was *not* passed on, it sends a marker
 * after it on the same connection and checks that the marker is the next
 * thing to arrive: the gateway handles one peer's lines in order, so what it
 * had passed on would have come first. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal/base/cleanup.h"
#include "internal/base/log.h"
#include "internal/base/testing.h"
#include "internal/base/xalloc.h"
#include "internal/gateway/gateway-internal.h"
#include "internal/gateway/gateway_fakes.h"

#define WAIT_MS 10000
#define HEX64   "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* Strings the checks compare, kept for the next 63 calls */
static char *ring[64];
static unsigned ring_next;

static const char *keep(char *s)
{
	unsigned i = ring_next++ % 64;
	free(ring[i]);
	ring[i] = s;
	return s;
}

static const struct json_value *at(const struct json_value *v, const char *path)
{
	for (const char *p = path; v != NULL && *p != '\0';) {
		size_t n = strcspn(p, ".");
		char key[64];
		if (n >= sizeof(key))
			abort();
		memcpy(key, p, n);
		key[n] = '\0';
		p += n + (p[n] == '.');
		if (v->kind == JSON_ARRAY) {
			char *end = NULL;
			unsigned long i = strtoul(key, &end, 10);
			v = *end == '\0' && i < v->u.arr.len ? v->u.arr.items[i] : NULL;
		} else {
			v = json_get(v, key);
		}
	}
	return v;
}

/* The value at path as JSON text ("-" when absent); "" is the value itself */
static const char *jat(const struct json_value *v, const char *path)
{
	const struct json_value *x = path[0] != '\0' ? at(v, path) : v;
	if (x == NULL)
		return keep(xstrdup("-"));
	struct mg_buf b = MG_BUF_INIT(16 << 20);
	if (json_generate(x, &b, NULL) < 0)
		abort();
	return keep(mg_buf_steal(&b, NULL));
}

/* The string at path, or "-" */
static const char *sat(const struct json_value *v, const char *path)
{
	const struct json_value *x = at(v, path);
	return keep(xstrdup(x != NULL && x->kind == JSON_STRING ? x->u.str.ptr : "-"));
}

static bool has(const char *hay, const char *needle)
{
	return hay != NULL && strstr(hay, needle) != NULL;
}

/* ---- fakes: the test's end of a socketpair (gateway_fakes.h) ------------- */

static void fake_send(struct gw_fake *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void fake_send(struct gw_fake *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cleanup_free char *text = xvasprintf(fmt, ap);
	va_end(ap);
	char *line = gw_fake_unquote(text);
	/* every line a fake sends is JSON, unless a test means otherwise: an
	 * apostrophe in a text would make it a bad line, which proves nothing */
	struct json_value *check = NULL;
	if (json_parse(line, strlen(line), NULL, &check, NULL) < 0) {
		fprintf(stderr, "the test sends a line that is not JSON: %s\n", line);
		abort();
	}
	json_free(check);
	size_t n = strlen(line);
	line = xrealloc(line, n + 2);
	line[n] = '\n';
	line[n + 1] = '\0';
	gw_fake_write_all(f, line, n + 1);
	free(line);
}

/* The next message from the gateway on f, parsed into out (rpc_msg_free it);
 * false when none came within WAIT_MS or the gateway closed its end */
static bool fake_next(struct gw_fake *f, struct rpc_msg *out)
{
	memset(out, 0, sizeof(*out));
	int64_t deadline = rpc_now_ms() + WAIT_MS;
	for (;;) {
		const char *line;
		size_t len;
		if (rpc_reader_next(&f->reader, &line, &len) == 1) {
			free(f->last);
			f->last = xstrndup(line, len);
			struct mg_err *err = NULL;
			if (rpc_parse(line, len, 0, out, &err) < 0) {
				T_OK(0, "%s: the gateway sent a line that is not JSON-RPC: %s (%s)",
				     f->name, f->last, mg_err_msg(err));
				mg_err_free(err);
				rpc_msg_free(out);
				return false;
			}
			return true;
		}
		if (f->eof)
			return false;
		int64_t left = deadline - rpc_now_ms();
		if (left <= 0)
			return false;
		struct pollfd p = {.fd = f->fd, .events = POLLIN};
		if (poll(&p, 1, (int)left) <= 0)
			continue;
		gw_fake_read(f);
	}
}

/* ---- a session ------------------------------------------------------------ */

#define FAKES_MAX 4

struct fixture {
	char dir[64]; /* state, data and workspace */
	struct cfg *cfg;
	struct session *s;
	struct gw_fake client;
	struct gw_fake servers[FAKES_MAX];
	size_t nservers;
	pthread_t thread;
	int run_result;
	struct mg_buf notices; /* mcpgate's own notifications/message, a line each */
	char *listed;          /* the first tools/list's names, comma-separated */
	const char *config;    /* config.toml's text, or NULL for none */
	bool modern;           /* the client speaks 2026-07-28: no initialize */
	const char *caps;      /* its capabilities, sent with every request then */
};

/* The start threads find their fakes here (set before the session runs) */
static struct fixture *current;

/* What the audit log was told, "event key=value ..." a line (any thread) */
static pthread_mutex_t audit_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mg_buf audit_seen = MG_BUF_INIT(16 << 20);

static void observe(const char *event, const struct json_value *fields, void *data)
{
	(void)data;
	static const char *const keys[] = {"server", "tool", "outcome", "action", "reason"};
	pthread_mutex_lock(&audit_lock);
	mg_buf_puts(&audit_seen, event, NULL);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *v = json_get_string(fields, keys[i]);
		if (v != NULL)
			mg_buf_printf(&audit_seen, NULL, " %s=%s", keys[i], v);
	}
	mg_buf_putc(&audit_seen, '\n', NULL);
	pthread_mutex_unlock(&audit_lock);
}

static bool audit_has(const char *line)
{
	pthread_mutex_lock(&audit_lock);
	cleanup_free char *want = xasprintf("%s\n", line);
	bool found = has(mg_buf_str(&audit_seen), want);
	pthread_mutex_unlock(&audit_lock);
	return found;
}

/* Until the audit log was told a record that begins with line (or other,
 * when not NULL), or WAIT_MS passed */
static bool audit_wait(const char *line, const char *other)
{
	int64_t deadline = rpc_now_ms() + WAIT_MS;
	for (;;) {
		pthread_mutex_lock(&audit_lock);
		bool seen = has(mg_buf_str(&audit_seen), line) ||
		            (other != NULL && has(mg_buf_str(&audit_seen), other));
		pthread_mutex_unlock(&audit_lock);
		if (seen)
			break;
		if (rpc_now_ms() > deadline)
			return false;
		poll(NULL, 0, 5);
	}
	return true;
}

static void *fake_start(void *arg)
{
	struct gw_server *srv = arg;
	struct gw_fake *f = NULL;
	for (size_t i = 0; i < current->nservers && f == NULL; i++)
		if (strcmp(current->servers[i].name, srv->cfg->name) == 0)
			f = &current->servers[i];
	if (f == NULL)
		abort();
	gw_fake_await_release(f);
	gw_fake_hand_over(srv, f);
	return NULL;
}

static void *run(void *arg)
{
	struct fixture *x = arg;
	struct mg_err *err = NULL;
	x->run_result = session_run(x->s, &err);
	if (x->run_result < 0)
		fprintf(stderr, "session_run: %s\n", mg_err_msg(err));
	mg_err_free(err);
	return NULL;
}

/* The client's next message that is not one of mcpgate's own notices
 * (notifications/message from logger "mcpgate"), which go to x->notices:
 * they come whenever start-up gets to them */
static bool client_next(struct fixture *x, struct rpc_msg *out)
{
	for (;;) {
		if (!fake_next(&x->client, out))
			return false;
		if (out->kind == RPC_NOTIFICATION &&
		    strcmp(out->method, "notifications/message") == 0 &&
		    strcmp(sat(out->params, "logger"), "mcpgate") == 0) {
			mg_buf_printf(&x->notices, NULL, "%s: %s\n", sat(out->params, "level"),
			              sat(out->params, "data"));
			rpc_msg_free(out);
			continue;
		}
		return true;
	}
}

/* Each expect_* reads the next message and checks its kind (and method);
 * on a mismatch or silence one failing line says what came instead */
static bool expect_kind(struct fixture *x, struct gw_fake *f, enum rpc_kind kind,
                        const char *method, struct rpc_msg *out, const char *what)
{
	bool got = f == &x->client ? client_next(x, out) : fake_next(f, out);
	if (!got) {
		T_OK(0, "%s: %s got nothing within %d ms%s", what, f->name, WAIT_MS,
		     f->eof ? " (its connection closed)" : "");
		return false;
	}
	bool ok = out->kind == kind ||
	          (kind == RPC_RESULT && out->kind == RPC_ERROR); /* the caller looks */
	if (ok && method != NULL)
		ok = out->method != NULL && strcmp(out->method, method) == 0;
	if (!ok) {
		T_OK(0, "%s: %s expected %s, got %s", what, f->name,
		     method != NULL ? method : "a response", f->last);
		rpc_msg_free(out);
	}
	return ok;
}

static bool expect_request(struct fixture *x, struct gw_fake *f, const char *method,
                           struct rpc_msg *out, const char *what)
{
	return expect_kind(x, f, RPC_REQUEST, method, out, what);
}

static bool expect_notification(struct fixture *x, struct gw_fake *f, const char *method,
                                struct rpc_msg *out, const char *what)
{
	return expect_kind(x, f, RPC_NOTIFICATION, method, out, what);
}

static bool expect_response(struct fixture *x, struct rpc_msg *out, const char *what)
{
	return expect_kind(x, &x->client, RPC_RESULT, NULL, out, what);
}

/* A fake server's answer to a tools/call: one text item */
static void answer_text(struct gw_fake *f, const struct json_value *id, const char *text)
{
	fake_send(f, "{'jsonrpc':'2.0','id':%s,'result':{'content':[{'type':'text','text':'%s'}]}}",
	          jat(id, ""), text);
}

/* The _meta of a 2026-07-28 request with capabilities caps, as params'
 * last member (",'_meta':{...}"), or "" for a client of the old era */
static const char *modern_meta(const struct fixture *x)
{
	if (!x->modern)
		return "";
	return keep(xasprintf(",'_meta':{'io.modelcontextprotocol/protocolVersion':'2026-07-28',"
	                      "'io.modelcontextprotocol/clientCapabilities':%s}",
	                      x->caps));
}

static void call_tool(struct fixture *x, const char *id, const char *tool, const char *args)
{
	fake_send(&x->client,
	          "{'jsonrpc':'2.0','id':%s,'method':'tools/call','params':{'name':'%s',"
	          "'arguments':%s%s}}",
	          id, tool, args, modern_meta(x));
}

/* A log line from a fake server: the marker that shows what it sent before
 * was not passed on (the client's next message is this one) */
static bool marker_from(struct fixture *x, struct gw_fake *f, const char *text, const char *what)
{
	fake_send(f,
	          "{'jsonrpc':'2.0','method':'notifications/message','params':{'level':'info',"
	          "'logger':'mark','data':'%s'}}",
	          text);
	struct rpc_msg m;
	if (!expect_notification(x, &x->client, "notifications/message", &m, what))
		return false;
	bool ok = T_STR(sat(m.params, "data"), text, "%s", what);
	rpc_msg_free(&m);
	return ok;
}

/* The gateway closed its end of f (it stopped that server) and sent it
 * nothing before */
static bool expect_closed(struct gw_fake *f, const char *what)
{
	struct rpc_msg m;
	bool got = fake_next(f, &m);
	bool ok = T_OK(!got && f->eof, "%s", what);
	if (got) {
		t_note("%s was sent %s", f->name, f->last);
		rpc_msg_free(&m);
	}
	return ok;
}

/* A call from the client that server f must get next: what it had been
 * sent before would have come first */
static bool call_marker(struct fixture *x, struct gw_fake *f, const char *tool, const char *what)
{
	call_tool(x, "'marker'", tool, "{'text':'marker'}");
	struct rpc_msg m;
	if (!expect_request(x, f, "tools/call", &m, what))
		return false;
	bool ok = T_STR(sat(m.params, "arguments.text"), "marker", "%s", what);
	answer_text(f, m.id, "marker");
	rpc_msg_free(&m);
	struct rpc_msg r;
	if (ok && expect_response(x, &r, what)) {
		ok = T_STR(jat(r.id, ""), "\"marker\"", "%s: the marker's answer", what);
		rpc_msg_free(&r);
	}
	return ok;
}

/* The names of a tools/list result, comma-separated */
static const char *tool_names(const struct json_value *result)
{
	struct mg_buf names = MG_BUF_INIT(1 << 20);
	const struct json_value *tools = at(result, "tools");
	for (size_t i = 0; tools != NULL && tools->kind == JSON_ARRAY && i < tools->u.arr.len; i++)
		mg_buf_printf(&names, NULL, "%s%s", i > 0 ? "," : "",
		              json_get_string(tools->u.arr.items[i], "name"));
	return keep(mg_buf_steal(&names, NULL));
}

/* Start a session on mcp_toml with the fakes already in x->servers, as a
 * client with client_caps: initialize, notifications/initialized, then
 * tools/list (which waits for start-up) into x->listed. secret: a value to
 * store in the keychain first as API_TOKEN, or NULL. */
static bool gw_start(struct fixture *x, const char *mcp_toml, const char *client_caps,
                     const char *secret)
{
	snprintf(x->dir, sizeof(x->dir), "/tmp/gateway_test.XXXXXX");
	if (mkdtemp(x->dir) == NULL)
		abort();
	mg_buf_init(&x->notices, 1 << 20);
	struct mg_err *err = NULL;
	const char *conf = x->config;
	if (cfg_parse(mcp_toml, strlen(mcp_toml), "mcp.toml", conf, conf != NULL ? strlen(conf) : 0,
	              "config.toml", &x->cfg, &err) < 0) {
		T_OK(0, "the test's mcp.toml: %s", mg_err_msg(err));
		mg_err_free(err);
		return false;
	}
	if (secret != NULL) {
		struct kc *kc = NULL;
		if (kc_open(x->dir, &kc, &err) < 0 ||
		    kc_set(kc, "API_TOKEN", secret, strlen(secret), &err) < 0) {
			T_OK(0, "the test's keychain: %s", mg_err_msg(err));
			mg_err_free(err);
			kc_free(kc);
			return false;
		}
		kc_free(kc);
	}
	gw_fake_open(&x->client, "client", NULL, NULL);
	struct session_options opt = {
	    .cfg = x->cfg,
	    .state_dir = x->dir,
	    .data_dir = x->dir,
	    .workspace = x->dir,
	    .client_in = x->client.gw_in,
	    .client_out = x->client.gw_out,
	    .owner = getpid(),
	    .on_record = observe,
	    .signals_elsewhere = true,
	    .start_thread = fake_start,
	};
	x->client.gw_in = x->client.gw_out = -1; /* the session's now */
	if (session_new(&opt, &x->s, &err) < 0) {
		T_OK(0, "session_new: %s", mg_err_msg(err));
		mg_err_free(err);
		return false;
	}
	current = x;
	pthread_mutex_lock(&audit_lock);
	mg_buf_reset(&audit_seen);
	pthread_mutex_unlock(&audit_lock);
	if (pthread_create(&x->thread, NULL, run, x) != 0)
		abort();
	x->caps = client_caps;
	struct rpc_msg m;
	bool ok;
	if (x->modern) {
		fake_send(&x->client,
		          "{'jsonrpc':'2.0','id':0,'method':'server/discover','params':{%s}}",
		          modern_meta(x) + 1);
		if (!expect_response(x, &m, "server/discover"))
			return false;
		ok = T_STR(sat(m.result, "supportedVersions.0"), "2026-07-28",
		           "server/discover is answered");
	} else {
		fake_send(
		    &x->client,
		    "{'jsonrpc':'2.0','id':0,'method':'initialize','params':{'protocolVersion':"
		    "'2025-11-25','capabilities':%s,'clientInfo':{'name':'gateway_test',"
		    "'version':'1'}}}",
		    client_caps);
		if (!expect_response(x, &m, "initialize"))
			return false;
		ok =
		    T_STR(sat(m.result, "protocolVersion"), "2025-11-25", "initialize is answered");
		fake_send(&x->client, "{'jsonrpc':'2.0','method':'notifications/initialized'}");
	}
	rpc_msg_free(&m);
	for (size_t i = 0; i < x->nservers; i++)
		if (x->servers[i].hold_wr >= 0)
			return ok; /* start-up is not over: the test lists */
	/* tools/list is answered at once with the servers that are ready: the
	 * tests' first list waits for all of them */
	for (size_t i = 0; i < x->nservers; i++) {
		cleanup_free char *ready = xasprintf("server.ready server=%s", x->servers[i].name);
		cleanup_free char *not =
		    xasprintf("server.unavailable server=%s", x->servers[i].name);
		if (!audit_wait(ready, not )) {
			T_OK(0, "%s within %d ms", ready, WAIT_MS);
			return false;
		}
	}
	fake_send(&x->client, "{'jsonrpc':'2.0','id':'list','method':'tools/list','params':{%s}}",
	          x->modern ? modern_meta(x) + 1 : "");
	if (!expect_response(x, &m, "the first tools/list"))
		return false;
	x->listed = xstrdup(tool_names(m.result));
	rpc_msg_free(&m);
	return ok;
}

/* The client's input ends: the session stops every server and returns */
static void gw_end(struct fixture *x)
{
	if (x->s != NULL) {
		for (size_t i = 0; i < x->nservers; i++)
			gw_fake_release(&x->servers[i]); /* a start the test held ends now */
		shutdown(x->client.fd, SHUT_WR);
		pthread_join(x->thread, NULL);
		T_INT(x->run_result, 0, "the session ends in order when its client's input ends");
		session_free(x->s);
	}
	for (size_t i = 0; i < x->nservers; i++)
		gw_fake_close(&x->servers[i]);
	gw_fake_close(&x->client);
	cfg_free(x->cfg);
	free(x->listed);
	mg_buf_free(&x->notices);
	gw_fake_remove_tree(x->dir);
	current = NULL;
	memset(x, 0, sizeof(*x));
}

/* ---- the servers most tests use ------------------------------------------- */

#define ALPHA_CAPS "{'tools':{},'resources':{},'prompts':{},'logging':{}}"
#define ALPHA_TOOLS                                                                 \
	"[{'name':'echo','description':'Echoes.','inputSchema':{'type':'object'}}," \
	"{'name':'write','description':'Writes.','inputSchema':{'type':'object'}}," \
	"{'name':'poke','description':'Pokes.','inputSchema':{'type':'object'}},"   \
	"{'name':'quiet','description':'Writes.','inputSchema':{'type':'object'}}," \
	"{'name':'off','description':'Not on.','inputSchema':{'type':'object'}}]"
#define ALPHA_SETTINGS                                          \
	"[server.tools.echo]\non = true\neffect = \"read\"\n"   \
	"[server.tools.write]\non = true\neffect = \"write\"\n" \
	"[server.tools.poke]\non = true\n"                      \
	"[server.tools.quiet]\non = true\neffect = \"write\"\n" \
	"confirm = false\n"                                     \
	"[server.tools.off]\non = false\neffect = \"read\"\n"
#define BETA_CAPS     "{'tools':{}}"
#define BETA_TOOLS    "[{'name':'echo','description':'Echoes too.','inputSchema':{'type':'object'}}]"
#define BETA_SETTINGS "[server.tools.echo]\non = true\neffect = \"read\"\n"

#define ELICIT "{'elicitation':{}}"
#define NO_ASK "{}"

/* alpha and beta, both approved, in that order */
static bool start_two(struct fixture *x, const char *client_caps, const char *secret)
{
	gw_fake_open(&x->servers[0], "alpha", ALPHA_CAPS, ALPHA_TOOLS);
	gw_fake_open(&x->servers[1], "beta", BETA_CAPS, BETA_TOOLS);
	x->nservers = 2;
	cleanup_free char *pa = gw_fake_pin(ALPHA_TOOLS);
	cleanup_free char *pb = gw_fake_pin(BETA_TOOLS);
	cleanup_free char *a = gw_fake_server_toml("alpha", pa, ALPHA_SETTINGS);
	cleanup_free char *b = gw_fake_server_toml("beta", pb, BETA_SETTINGS);
	cleanup_free char *toml = xasprintf("%s%s", a, b);
	return gw_start(x, toml, client_caps, secret);
}

/* ---- routing -------------------------------------------------------------- */

static void test_routing(void)
{
	struct fixture x = {0};
	if (!start_two(&x, ELICIT, NULL))
		goto out;
	T_STR(x.listed, "alpha__echo,alpha__write,alpha__poke,alpha__quiet,beta__echo",
	      "tools/list: the tools that are on, as SERVER__TOOL, in mcp.toml's server order");

	struct rpc_msg m, r;
	call_tool(&x, "1", "alpha__echo", "{'text':'to alpha'}");
	if (expect_request(&x, &x.servers[0], "tools/call", &m, "alpha__echo reaches alpha")) {
		T_STR(sat(m.params, "name"), "echo", "the server gets its own name for the tool");
		T_STR(jat(m.params, "arguments"), "{\"text\":\"to alpha\"}",
		      "the arguments reach it as the client wrote them");
		answer_text(&x.servers[0], m.id, "from alpha");
		rpc_msg_free(&m);
	}
	if (expect_response(&x, &r, "alpha's answer")) {
		T_STR(jat(r.id, ""), "1", "alpha's answer comes back under the client's id");
		T_STR(sat(r.result, "content.0.text"), "from alpha", "with alpha's result");
		T_STR(jat(r.result, "_meta"), "{\"io.mcpgate/server\":\"alpha\"}",
		      "tagged with the server it came from");
		rpc_msg_free(&r);
	}
	call_tool(&x, "2", "beta__echo", "{'text':'to beta'}");
	if (expect_request(&x, &x.servers[1], "tools/call", &m, "beta__echo reaches beta")) {
		T_STR(sat(m.params, "name"), "echo", "beta gets its own name for the tool");
		T_STR(sat(m.params, "arguments.text"), "to beta", "and the arguments for beta");
		answer_text(&x.servers[1], m.id, "from beta");
		rpc_msg_free(&m);
	}
	if (expect_response(&x, &r, "beta's answer")) {
		T_STR(jat(r.id, ""), "2", "beta's answer comes back under the client's id");
		T_STR(jat(r.result, "_meta"), "{\"io.mcpgate/server\":\"beta\"}",
		      "tagged with beta");
		rpc_msg_free(&r);
	}

	/* names that are no tool of a ready server: refused, never sent */
	static const char *const unknown[] = {"gamma__echo", "alpha__nope", "alpha__off",
	                                      "echo",        "alpha__",     "__echo"};
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		call_tool(&x, "3", unknown[i], "{}");
		if (!expect_response(&x, &r, unknown[i]))
			continue;
		T_INT(r.error_code, RPC_INVALID_PARAMS, "%s: an unknown tool is -32602",
		      unknown[i]);
		cleanup_free char *want = xasprintf("unknown tool \"%s\"", unknown[i]);
		T_STR(r.error_message, want, "%s: the message names it", unknown[i]);
		rpc_msg_free(&r);
	}
	fake_send(&x.client, "{'jsonrpc':'2.0','id':4,'method':'tools/call','params':{}}");
	if (expect_response(&x, &r, "no name")) {
		T_INT(r.error_code, RPC_INVALID_PARAMS, "a call without a name is -32602");
		T_STR(r.error_message, "tools/call: params.name is missing: it must be a string",
		      "and says so");
		rpc_msg_free(&r);
	}
	call_tool(&x, "5", "alpha__echo", "['not','an','object']");
	if (expect_response(&x, &r, "arguments not an object")) {
		T_INT(r.error_code, RPC_INVALID_PARAMS, "arguments that are no object are -32602");
		rpc_msg_free(&r);
	}
	call_marker(&x, &x.servers[0], "alpha__echo", "alpha was sent none of the refused calls");
	call_marker(&x, &x.servers[1], "beta__echo", "beta was sent none of the refused calls");

	/* resources and prompts go by the server's name in the URI or name */
	fake_send(&x.client, "{'jsonrpc':'2.0','id':6,'method':'resources/read','params':"
	                     "{'uri':'mcpgate://alpha/mem://notes/1'}}");
	if (expect_request(&x, &x.servers[0], "resources/read", &m, "a resource of alpha's")) {
		T_STR(sat(m.params, "uri"), "mem://notes/1", "alpha gets its own URI, verbatim");
		fake_send(&x.servers[0],
		          "{'jsonrpc':'2.0','id':%s,'result':{'contents':[{'uri':'mem://notes/1',"
		          "'text':'note'}]}}",
		          jat(m.id, ""));
		rpc_msg_free(&m);
	}
	if (expect_response(&x, &r, "resources/read's answer")) {
		T_STR(jat(r.id, ""), "6", "resources/read: the answer has the client's id");
		T_STR(sat(r.result, "contents.0.uri"), "mcpgate://alpha/mem://notes/1",
		      "and the URI in its public form");
		rpc_msg_free(&r);
	}
	fake_send(&x.client, "{'jsonrpc':'2.0','id':7,'method':'resources/read','params':"
	                     "{'uri':'mcpgate://beta/mem://notes/1'}}");
	if (expect_response(&x, &r, "a resource of a server without resources")) {
		T_INT(r.error_code, RPC_RESOURCE_NOT_FOUND,
		      "a server that declared no resources is not asked: -32002");
		T_STR(jat(r.error_data, ""), "{\"uri\":\"mcpgate://beta/mem://notes/1\"}",
		      "data names the URI");
		rpc_msg_free(&r);
	}
	fake_send(&x.client, "{'jsonrpc':'2.0','id':8,'method':'prompts/get','params':"
	                     "{'name':'alpha__greet','arguments':{'who':'you'}}}");
	if (expect_request(&x, &x.servers[0], "prompts/get", &m, "a prompt of alpha's")) {
		T_STR(sat(m.params, "name"), "greet", "alpha gets its own prompt name");
		T_STR(sat(m.params, "arguments.who"), "you", "and the arguments");
		fake_send(&x.servers[0], "{'jsonrpc':'2.0','id':%s,'result':{'messages':[]}}",
		          jat(m.id, ""));
		rpc_msg_free(&m);
	}
	if (expect_response(&x, &r, "prompts/get's answer")) {
		T_STR(jat(r.id, ""), "8", "prompts/get: the answer has the client's id");
		rpc_msg_free(&r);
	}
	fake_send(&x.client, "{'jsonrpc':'2.0','id':9,'method':'prompts/get','params':"
	                     "{'name':'beta__greet'}}");
	if (expect_response(&x, &r, "a prompt of a server without prompts")) {
		T_INT(r.error_code, RPC_INVALID_PARAMS, "beta declared no prompts: -32602");
		T_STR(r.error_message, "unknown prompt \"beta__greet\"", "naming the prompt");
		rpc_msg_free(&r);
	}
	call_marker(&x, &x.servers[1], "beta__echo", "beta was asked for no resource or prompt");
out:
	gw_end(&x);
}

/* ---- id mapping ----------------------------------------------------------- */

static void test_ids(void)
{
	struct fixture x = {0};
	if (!start_two(&x, ELICIT, NULL))
		goto out;
	struct rpc_msg m, r;

	/* the first call to each server: both see id 1, as ids are per server,
	 * and the answers (beta's first) each find their own call */
	call_tool(&x, "'a'", "alpha__echo", "{'text':'a'}");
	call_tool(&x, "'b'", "beta__echo", "{'text':'b'}");
	struct rpc_msg ma, mb;
	bool got_a = expect_request(&x, &x.servers[0], "tools/call", &ma, "the call to alpha");
	bool got_b = expect_request(&x, &x.servers[1], "tools/call", &mb, "the call to beta");
	if (got_a && got_b) {
		T_STR(jat(ma.id, ""), "1", "alpha sees an id of its own peer, not the client's");
		T_STR(jat(mb.id, ""), "1", "so does beta: the same number, on another peer");
		answer_text(&x.servers[1], mb.id, "beta first");
		if (expect_response(&x, &r, "beta's answer, first")) {
			T_STR(jat(r.id, ""), "\"b\"", "beta answers first: the client's \"b\"");
			T_STR(sat(r.result, "content.0.text"), "beta first", "with beta's result");
			rpc_msg_free(&r);
		}
		answer_text(&x.servers[0], ma.id, "alpha second");
		if (expect_response(&x, &r, "alpha's answer, second")) {
			T_STR(jat(r.id, ""), "\"a\"", "then alpha's, under the client's \"a\"");
			T_STR(sat(r.result, "content.0.text"), "alpha second",
			      "with alpha's result");
			rpc_msg_free(&r);
		}
	}
	if (got_a)
		rpc_msg_free(&ma);
	if (got_b)
		rpc_msg_free(&mb);

	/* client ids of every kind JSON-RPC allows, in flight at once */
	static const char *const ids[] = {
	    "7", "'seven'", "9223372036854775807", "-9223372036854775808", "'42'", "42", "'n:42'",
	    "0", "''",      "'\\u00e9\\\"'",
	};
	enum { NIDS = sizeof(ids) / sizeof(ids[0]) };
	char *want_id[NIDS];
	struct rpc_msg up[NIDS];
	bool got[NIDS];
	for (size_t i = 0; i < NIDS; i++) {
		struct json_value *id = gw_fake_json(ids[i]);
		want_id[i] = xstrdup(jat(id, ""));
		json_free(id);
		cleanup_free char *args = xasprintf("{'text':'%zu'}", i);
		call_tool(&x, ids[i], "alpha__echo", args);
	}
	bool distinct = true, numbers = true;
	for (size_t i = 0; i < NIDS; i++) {
		got[i] =
		    expect_request(&x, &x.servers[0], "tools/call", &up[i], "ids of every kind");
		if (!got[i])
			continue;
		int64_t n;
		numbers &= up[i].id->kind == JSON_NUMBER && json_number_int64(up[i].id, &n) == 0;
		for (size_t k = 0; k < i; k++)
			distinct &= !got[k] || strcmp(jat(up[k].id, ""), jat(up[i].id, "")) != 0;
		T_STR(sat(up[i].params, "arguments.text"), keep(xasprintf("%zu", i)),
		      "call %zu reaches alpha in order", i);
	}
	T_OK(numbers, "whatever the client's ids, the server sees integers of its peer");
	T_OK(distinct, "and a fresh one for every call");
	/* answered last first: each answer returns under its own client id */
	for (size_t i = NIDS; i-- > 0;) {
		if (!got[i])
			continue;
		answer_text(&x.servers[0], up[i].id, keep(xasprintf("r%zu", i)));
		rpc_msg_free(&up[i]);
		if (expect_response(&x, &r, "an answer in reverse order")) {
			T_STR(jat(r.id, ""), want_id[i], "the answer to call %zu has its id %s", i,
			      ids[i]);
			T_STR(sat(r.result, "content.0.text"), keep(xasprintf("r%zu", i)),
			      "and its own result");
			rpc_msg_free(&r);
		}
	}
	for (size_t i = 0; i < NIDS; i++)
		free(want_id[i]);

	/* the same client id twice in flight: the gateway keeps both calls
	 * apart on the server's side and answers each once, under that id */
	call_tool(&x, "5", "alpha__echo", "{'text':'first'}");
	call_tool(&x, "5", "alpha__echo", "{'text':'second'}");
	struct rpc_msg d1, d2;
	if (expect_request(&x, &x.servers[0], "tools/call", &d1, "a duplicate id, first")) {
		if (expect_request(&x, &x.servers[0], "tools/call", &d2,
		                   "a duplicate id, second")) {
			T_OK(strcmp(jat(d1.id, ""), jat(d2.id, "")) != 0,
			     "two calls with one client id get two server ids");
			answer_text(&x.servers[0], d2.id, "second");
			answer_text(&x.servers[0], d1.id, "first");
			const char *order[] = {"second", "first"};
			for (int k = 0; k < 2; k++)
				if (expect_response(&x, &r, "a duplicate id's answer")) {
					T_STR(jat(r.id, ""), "5",
					      "each answer has the client's id 5");
					T_STR(sat(r.result, "content.0.text"), order[k],
					      "and the result of its own call (%s)", order[k]);
					rpc_msg_free(&r);
				}
			rpc_msg_free(&d2);
		}
		rpc_msg_free(&d1);
	}

	/* ids JSON-RPC allows but MCP does not, or past int64: refused */
	static const char *const bad[] = {"1.5", "18446744073709551616", "null", "true"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		call_tool(&x, bad[i], "alpha__echo", "{'text':'bad id'}");
		if (expect_response(&x, &r, bad[i])) {
			T_INT(r.error_code, RPC_INVALID_REQUEST, "id %s: -32600", bad[i]);
			T_STR(jat(r.id, ""), "null", "id %s: answered with id null", bad[i]);
			rpc_msg_free(&r);
		}
	}
	call_marker(&x, &x.servers[0], "alpha__echo", "no call with a bad id reached alpha");

	/* a server's answer to an id it was never sent, or to the string form
	 * of one it was sent, matches nothing and is dropped */
	call_tool(&x, "'pending'", "alpha__echo", "{'text':'p'}");
	if (expect_request(&x, &x.servers[0], "tools/call", &m, "a call to answer wrongly")) {
		fake_send(&x.servers[0],
		          "{'jsonrpc':'2.0','id':999,'result':{'content':[{'type':'text',"
		          "'text':'never asked'}]}}");
		fake_send(&x.servers[0],
		          "{'jsonrpc':'2.0','id':'%s','result':{'content':[{'type':'text',"
		          "'text':'string id'}]}}",
		          jat(m.id, ""));
		marker_from(&x, &x.servers[0], "after wrong ids",
		            "answers to ids alpha was not sent reach no one");
		answer_text(&x.servers[0], m.id, "right id");
		if (expect_response(&x, &r, "the right answer")) {
			T_STR(jat(r.id, ""), "\"pending\"",
			      "the call is still answered by its own id");
			T_STR(sat(r.result, "content.0.text"), "right id", "with the right result");
			rpc_msg_free(&r);
		}
		rpc_msg_free(&m);
	}
out:
	gw_end(&x);
}

/* ---- cancel ---------------------------------------------------------------- */

static void cancel(struct fixture *x, const char *id, const char *reason)
{
	if (reason != NULL)
		fake_send(&x->client,
		          "{'jsonrpc':'2.0','method':'notifications/cancelled','params':"
		          "{'requestId':%s,'reason':'%s'}}",
		          id, reason);
	else
		fake_send(&x->client,
		          "{'jsonrpc':'2.0','method':'notifications/cancelled','params':"
		          "{'requestId':%s}}",
		          id);
}

static void test_cancel(void)
{
	struct fixture x = {0};
	if (!start_two(&x, ELICIT, NULL))
		goto out;
	struct rpc_msg m, r, a1, a2, b1;
	call_tool(&x, "'x'", "alpha__echo", "{'text':'x'}");
	call_tool(&x, "9", "alpha__echo", "{'text':'nine'}");
	call_tool(&x, "77", "beta__echo", "{'text':'77'}");
	if (!expect_request(&x, &x.servers[0], "tools/call", &a1, "alpha's first call"))
		goto out;
	if (!expect_request(&x, &x.servers[0], "tools/call", &a2, "alpha's second call")) {
		rpc_msg_free(&a1);
		goto out;
	}
	if (!expect_request(&x, &x.servers[1], "tools/call", &b1, "beta's call")) {
		rpc_msg_free(&a1);
		rpc_msg_free(&a2);
		goto out;
	}
	cancel(&x, "'x'", "changed my mind");
	if (expect_notification(&x, &x.servers[0], "notifications/cancelled", &m,
	                        "the client's cancel reaches alpha")) {
		T_STR(jat(m.params, "requestId"), jat(a1.id, ""),
		      "with the id alpha knows the call by, not the client's \"x\"");
		T_STR(sat(m.params, "reason"), "changed my mind", "and the client's reason");
		rpc_msg_free(&m);
	}
	call_marker(&x, &x.servers[1], "beta__echo", "beta was told of no cancel");
	/* after the marker's round trip: the record follows the notification */
	T_OK(audit_has("tool.call server=alpha tool=echo outcome=cancelled"),
	     "the cancelled call is recorded as cancelled");
	/* the answer that comes anyway is dropped: the client's next answer is
	 * the other call's */
	answer_text(&x.servers[0], a1.id, "too late");
	answer_text(&x.servers[0], a2.id, "nine");
	if (expect_response(&x, &r, "after a late answer")) {
		T_STR(jat(r.id, ""), "9", "a late answer to a cancelled call is dropped");
		T_STR(sat(r.result, "content.0.text"), "nine", "the other call is answered");
		rpc_msg_free(&r);
	}
	/* a cancel names a request by its exact id: "77" is not 77 */
	cancel(&x, "'77'", NULL);
	cancel(&x, "'nothing in flight'", NULL);
	call_marker(&x, &x.servers[1], "beta__echo", "a cancel of \"77\" does not cancel 77");
	call_marker(&x, &x.servers[0], "alpha__echo", "a cancel of nothing goes nowhere");
	answer_text(&x.servers[1], b1.id, "seventy-seven");
	if (expect_response(&x, &r, "77's answer")) {
		T_STR(jat(r.id, ""), "77", "so 77 is answered");
		rpc_msg_free(&r);
	}
	cancel(&x, "77", NULL);
	call_marker(&x, &x.servers[1], "beta__echo", "a cancel after the answer goes nowhere");
	rpc_msg_free(&a1);
	rpc_msg_free(&a2);
	rpc_msg_free(&b1);
out:
	gw_end(&x);
}

/* A call with no answer within call_timeout: the client gets an error, the
 * server a cancel, and the answer that comes later is dropped. A line over
 * line_max fails the server's calls in flight, naming the limit. */
static void test_limits(void)
{
	struct fixture x = {0};
	x.config = "[mcp]\ncall_timeout = 1\nline_max = 1024\n";
	if (!start_two(&x, ELICIT, NULL))
		goto out;
	struct rpc_msg m, n, r;
	int64_t t0 = rpc_now_ms();
	call_tool(&x, "'slow'", "alpha__echo", "{}");
	if (!expect_request(&x, &x.servers[0], "tools/call", &m, "a call left unanswered"))
		goto out;
	if (expect_notification(&x, &x.servers[0], "notifications/cancelled", &n,
	                        "call_timeout passes")) {
		T_STR(jat(n.params, "requestId"), jat(m.id, ""),
		      "after call_timeout the server is told to stop, by its own id");
		T_STR(sat(n.params, "reason"), "timed out in mcpgate", "saying why");
		T_OK(rpc_now_ms() - t0 >= 900, "not before call_timeout (1 s)");
		rpc_msg_free(&n);
	}
	if (expect_response(&x, &r, "the timed-out call")) {
		T_STR(jat(r.id, ""), "\"slow\"", "the client's call is answered");
		T_INT(r.error_code, RPC_SERVER_ERROR, "with -32000");
		T_OK(has(r.error_message, "tool alpha__echo: timed out after"),
		     "naming the tool and the timeout: %s", r.error_message);
		rpc_msg_free(&r);
	}
	answer_text(&x.servers[0], m.id, "too late");
	rpc_msg_free(&m);
	marker_from(&x, &x.servers[0], "after the timeout",
	            "the answer after the timeout is dropped");

	call_tool(&x, "'big'", "alpha__echo", "{}");
	call_tool(&x, "'other'", "beta__echo", "{}");
	struct rpc_msg b;
	if (expect_request(&x, &x.servers[0], "tools/call", &m, "a call answered too long") &&
	    expect_request(&x, &x.servers[1], "tools/call", &b, "beta's call beside it")) {
		char pad[2048];
		memset(pad, 'x', sizeof(pad) - 1);
		pad[sizeof(pad) - 1] = '\0';
		answer_text(&x.servers[0], m.id, pad);
		if (expect_response(&x, &r, "an answer over line_max")) {
			T_STR(jat(r.id, ""), "\"big\"", "a line over line_max fails alpha's call");
			T_INT(r.error_code, RPC_SERVER_ERROR, "with -32000");
			T_OK(has(r.error_message, "server alpha sent a line of more than ") &&
			         has(r.error_message,
			             "bytes (the limit is 1024, line_max in config.toml)"),
			     "naming the limit: %s", r.error_message);
			rpc_msg_free(&r);
		}
		answer_text(&x.servers[1], b.id, "fine");
		if (expect_response(&x, &r, "beta's answer")) {
			T_STR(jat(r.id, ""), "\"other\"", "the other server's call is untouched");
			rpc_msg_free(&r);
		}
		rpc_msg_free(&b);
		call_marker(&x, &x.servers[0], "alpha__echo",
		            "alpha still serves after the long line");
	}
	rpc_msg_free(&m);
out:
	gw_end(&x);
}

/* A server's answer to a call that is no CallToolResult (once an abort of
 * the whole process): the call is an error naming the server, and the
 * session goes on */
static void test_result_not_object(void)
{
	struct fixture x = {0};
	if (!start_two(&x, ELICIT, NULL))
		goto out;
	static const char *const results[] = {"null", "5", "[]", "'text'"};
	for (size_t i = 0; i < sizeof(results) / sizeof(results[0]); i++) {
		struct rpc_msg m, r;
		call_tool(&x, "1", "alpha__echo", "{}");
		if (!expect_request(&x, &x.servers[0], "tools/call", &m, results[i]))
			continue;
		fake_send(&x.servers[0], "{'jsonrpc':'2.0','id':%s,'result':%s}", jat(m.id, ""),
		          results[i]);
		rpc_msg_free(&m);
		if (expect_response(&x, &r, results[i])) {
			/* refused by the shapes before any handler saw it */
			T_INT(r.error_code, RPC_INTERNAL_ERROR, "a result of %s is -32603",
			      results[i]);
			T_OK(has(r.error_message,
			         "server alpha answered tools/call with a result "
			         "that is not valid MCP: result must be an object"),
			     "naming the server: %s", r.error_message);
			rpc_msg_free(&r);
		}
	}
	call_marker(&x, &x.servers[0], "alpha__echo", "the session goes on");
out:
	gw_end(&x);
}

/* ---- progress -------------------------------------------------------------- */

static void progress(struct gw_fake *f, const char *token, const char *message)
{
	fake_send(f,
	          "{'jsonrpc':'2.0','method':'notifications/progress','params':{'progressToken':"
	          "%s,'progress':1,'total':3,'message':'%s'}}",
	          token, message);
}

static void test_progress(void)
{
	struct fixture x = {0};
	cleanup_free char *ta = NULL;
	cleanup_free char *tb = NULL;
	if (!start_two(&x, ELICIT, NULL))
		goto out;
	struct rpc_msg a, b, n, r;
	fake_send(&x.client, "{'jsonrpc':'2.0','id':1,'method':'tools/call','params':{'name':"
	                     "'alpha__echo','arguments':{},'_meta':{'progressToken':'tok',"
	                     "'other':'kept'}}}");
	fake_send(&x.client, "{'jsonrpc':'2.0','id':2,'method':'tools/call','params':{'name':"
	                     "'beta__echo','arguments':{},'_meta':{'progressToken':17}}}");
	if (!expect_request(&x, &x.servers[0], "tools/call", &a, "alpha's call with a token"))
		goto out;
	if (!expect_request(&x, &x.servers[1], "tools/call", &b, "beta's call with a token")) {
		rpc_msg_free(&a);
		goto out;
	}
	/* copies: they are used long after the ring has moved on */
	ta = xstrdup(jat(a.params, "_meta.progressToken"));
	tb = xstrdup(jat(b.params, "_meta.progressToken"));
	T_OK(has(ta, "\"mcpgate-"), "alpha gets a token of mcpgate's, not the client's: %s", ta);
	T_OK(has(tb, "\"mcpgate-"), "so does beta: %s", tb);
	T_OK(strcmp(ta, tb) != 0, "a token per call");
	T_STR(sat(a.params, "_meta.other"), "kept", "the rest of _meta goes as it was");

	progress(&x.servers[0], ta, "alpha at one");
	if (expect_notification(&x, &x.client, "notifications/progress", &n, "alpha's progress")) {
		T_STR(jat(n.params, "progressToken"), "\"tok\"",
		      "alpha's progress reaches the client under its own token");
		T_STR(sat(n.params, "message"), "alpha at one", "with what alpha said");
		T_STR(jat(n.params, "progress"), "1", "and how far");
		rpc_msg_free(&n);
	}
	progress(&x.servers[1], tb, "beta at one");
	if (expect_notification(&x, &x.client, "notifications/progress", &n, "beta's progress")) {
		T_STR(jat(n.params, "progressToken"), "17",
		      "beta's comes back under the client's number token, as a number");
		rpc_msg_free(&n);
	}
	/* tokens a server was not handed for a call of its own: dropped */
	progress(&x.servers[1], ta, "beta with the token of alpha");
	marker_from(&x, &x.servers[1], "beta mark", "beta's progress on alpha's token is dropped");
	progress(&x.servers[0], "'tok'", "the token of the client");
	progress(&x.servers[0], "'mcpgate-999'", "a token never given");
	progress(&x.servers[0], "17", "a number");
	marker_from(&x, &x.servers[0], "alpha mark", "progress for unknown tokens is dropped");
	/* after its answer, a call's token is gone */
	answer_text(&x.servers[0], a.id, "done");
	if (expect_response(&x, &r, "alpha's answer")) {
		T_STR(jat(r.id, ""), "1", "the call with progress is answered");
		rpc_msg_free(&r);
	}
	progress(&x.servers[0], ta, "after the answer");
	marker_from(&x, &x.servers[0], "late mark", "progress after the answer is dropped");
	/* a call without a token hands none on */
	call_tool(&x, "3", "alpha__echo", "{}");
	if (expect_request(&x, &x.servers[0], "tools/call", &n, "a call without a token")) {
		T_STR(jat(n.params, "_meta"), "-", "a call without a token has no _meta");
		answer_text(&x.servers[0], n.id, "plain");
		rpc_msg_free(&n);
		if (expect_response(&x, &r, "the plain answer"))
			rpc_msg_free(&r);
	}
	answer_text(&x.servers[1], b.id, "done");
	if (expect_response(&x, &r, "beta's answer"))
		rpc_msg_free(&r);
	rpc_msg_free(&a);
	rpc_msg_free(&b);
out:
	gw_end(&x);
}

/* ---- requests during start-up ------------------------------------------------ */

static void test_startup_wait(void)
{
	struct fixture x = {0};
	gw_fake_open(&x.servers[0], "alpha", ALPHA_CAPS, ALPHA_TOOLS);
	gw_fake_open(&x.servers[1], "beta", BETA_CAPS, BETA_TOOLS);
	x.nservers = 2;
	gw_fake_hold(&x.servers[0]);
	cleanup_free char *pa = gw_fake_pin(ALPHA_TOOLS);
	cleanup_free char *pb = gw_fake_pin(BETA_TOOLS);
	cleanup_free char *a = gw_fake_server_toml("alpha", pa, ALPHA_SETTINGS);
	cleanup_free char *b = gw_fake_server_toml("beta", pb, BETA_SETTINGS);
	cleanup_free char *toml = xasprintf("%s%s", a, b);
	if (!gw_start(&x, toml, ELICIT, NULL))
		goto out;
	struct rpc_msg r, m;
	if (!audit_wait("server.ready server=beta", NULL))
		T_OK(0, "beta is ready");
	fake_send(&x.client, "{'jsonrpc':'2.0','id':'L','method':'tools/list'}");
	if (expect_response(&x, &r, "tools/list while alpha starts")) {
		T_STR(tool_names(r.result), "beta__echo",
		      "tools/list never waits: the servers that are ready, at once");
		rpc_msg_free(&r);
	}
	call_tool(&x, "'C'", "alpha__echo", "{'text':'kept'}");
	call_tool(&x, "'D'", "alpha__echo", "{'text':'dropped'}");
	cancel(&x, "'D'", NULL);
	fake_send(&x.client, "{'jsonrpc':'2.0','id':'P','method':'ping'}");
	if (expect_response(&x, &r, "ping while alpha starts")) {
		T_STR(jat(r.id, ""), "\"P\"",
		      "ping is answered while a server starts; a call to it waits");
		rpc_msg_free(&r);
	}
	gw_fake_release(&x.servers[0]);
	if (expect_notification(&x, &x.client, "notifications/tools/list_changed", &r,
	                        "alpha is ready"))
		rpc_msg_free(&r);
	fake_send(&x.client, "{'jsonrpc':'2.0','id':'L2','method':'tools/list'}");
	if (expect_response(&x, &r, "tools/list once alpha is ready")) {
		T_STR(tool_names(r.result),
		      "alpha__echo,alpha__write,alpha__poke,alpha__quiet,beta__echo",
		      "the client hears the list changed, and it holds the server that started");
		rpc_msg_free(&r);
	}
	if (expect_request(&x, &x.servers[0], "tools/call", &m, "the waiting call")) {
		T_STR(sat(m.params, "arguments.text"), "kept",
		      "the call that waited reaches alpha");
		answer_text(&x.servers[0], m.id, "after the start");
		rpc_msg_free(&m);
	}
	if (expect_response(&x, &r, "the waiting call's answer")) {
		T_STR(jat(r.id, ""), "\"C\"", "and is answered under its id");
		rpc_msg_free(&r);
	}
	call_marker(&x, &x.servers[0], "alpha__echo",
	            "a waiting call the client cancelled is dropped");
	T_OK(audit_has("tool.call tool=alpha__echo outcome=cancelled"),
	     "and recorded as cancelled during start-up");
out:
	gw_end(&x);
}

/* ---- policy: confirmation ----------------------------------------------------- */

/* The client's next message must be mcpgate's elicitation/create; returns it */
static bool expect_confirm(struct fixture *x, struct rpc_msg *out, const char *what)
{
	return expect_request(x, &x->client, "elicitation/create", out, what);
}

static void answer_confirm(struct fixture *x, const struct rpc_msg *ask, const char *action)
{
	fake_send(&x->client, "{'jsonrpc':'2.0','id':%s,'result':{'action':'%s','content':{}}}",
	          jat(ask->id, ""), action);
}

static void test_confirm(void)
{
	struct fixture x = {0};
	if (!start_two(&x, ELICIT, NULL))
		goto out;
	struct rpc_msg ask, m, r;

	/* a write tool: the person is asked first, the call waits */
	call_tool(&x, "10", "alpha__write", "{'path':'/tmp/x'}");
	if (expect_confirm(&x, &ask, "a write tool asks")) {
		const char *msg = sat(ask.params, "message");
		T_OK(has(msg, "Allow server alpha to run its tool write (effect: write)?"),
		     "the question names the server, the tool and its effect: %s", msg);
		T_OK(has(msg, "Arguments: {\"path\":\"/tmp/x\"}"), "and shows the arguments");
		T_STR(sat(ask.params, "mode"), "form", "in form mode");
		T_STR(sat(ask.params, "requestedSchema.type"), "object", "asking for nothing else");
		call_marker(&x, &x.servers[0], "alpha__echo",
		            "the write call waits for the answer");
		answer_confirm(&x, &ask, "accept");
		if (expect_request(&x, &x.servers[0], "tools/call", &m, "accepted, it goes")) {
			T_STR(sat(m.params, "name"), "write", "the accepted call reaches alpha");
			T_STR(sat(m.params, "arguments.path"), "/tmp/x", "with its arguments");
			answer_text(&x.servers[0], m.id, "written");
			rpc_msg_free(&m);
		}
		if (expect_response(&x, &r, "the accepted call's answer")) {
			T_STR(jat(r.id, ""), "10",
			      "and its answer comes back under the client's id");
			T_STR(sat(r.result, "content.0.text"), "written", "with alpha's result");
			rpc_msg_free(&r);
		}
		T_OK(audit_has("tool.confirm server=alpha tool=write action=accept"),
		     "the answer is recorded (tool.confirm, accept)");
		rpc_msg_free(&ask);
	}

	/* decline, cancel, or an error: the client gets a tool error, the
	 * server nothing */
	static const struct {
		const char *action; /* NULL: the client answers with an error */
		const char *text;
	} refusals[] = {
	    {"decline", "refused: the person declined running tool write of server alpha"},
	    {"cancel", "refused: the person cancelled running tool write of server alpha"},
	    {NULL, "refused: no confirmation for tool write of server alpha (the client's answer "
	           "was an error)"},
	};
	for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
		const char *how = refusals[i].action != NULL ? refusals[i].action : "an error";
		call_tool(&x, "11", "alpha__write", "{}");
		if (!expect_confirm(&x, &ask, how))
			continue;
		if (refusals[i].action != NULL)
			answer_confirm(&x, &ask, refusals[i].action);
		else
			fake_send(
			    &x.client,
			    "{'jsonrpc':'2.0','id':%s,'error':{'code':-32601,'message':'no'}}",
			    jat(ask.id, ""));
		rpc_msg_free(&ask);
		if (expect_response(&x, &r, how)) {
			T_STR(jat(r.id, ""), "11", "%s: the call is answered", how);
			T_STR(jat(r.result, "isError"), "true", "%s: with a tool error", how);
			T_STR(sat(r.result, "content.0.text"), refusals[i].text, "%s: saying why",
			      how);
			rpc_msg_free(&r);
		}
		call_marker(&x, &x.servers[0], "alpha__echo",
		            keep(xasprintf("%s: alpha got nothing", how)));
	}
	T_OK(audit_has("tool.confirm server=alpha tool=write action=decline"),
	     "a decline is recorded too");

	/* undeclared asks like write */
	call_tool(&x, "12", "alpha__poke", "{}");
	if (expect_confirm(&x, &ask, "an undeclared tool asks")) {
		T_OK(has(sat(ask.params, "message"), "its tool poke (effect: undeclared)?"),
		     "naming its effect as undeclared");
		answer_confirm(&x, &ask, "accept");
		if (expect_request(&x, &x.servers[0], "tools/call", &m, "poke accepted")) {
			T_STR(sat(m.params, "name"), "poke", "the accepted undeclared call goes");
			answer_text(&x.servers[0], m.id, "poked");
			rpc_msg_free(&m);
		}
		if (expect_response(&x, &r, "poke's answer"))
			rpc_msg_free(&r);
		rpc_msg_free(&ask);
	}

	/* confirm = false: a write tool without a question, on the record */
	call_tool(&x, "13", "alpha__quiet", "{}");
	if (expect_request(&x, &x.servers[0], "tools/call", &m, "confirm = false")) {
		T_STR(sat(m.params, "name"), "quiet",
		      "a write tool with confirm = false goes at once");
		answer_text(&x.servers[0], m.id, "quietly");
		rpc_msg_free(&m);
	}
	if (expect_response(&x, &r, "quiet's answer")) {
		T_STR(jat(r.id, ""), "13", "the client's next message is its answer, no question");
		rpc_msg_free(&r);
	}
	T_OK(audit_has("tool.unconfirmed server=alpha tool=quiet"),
	     "each such call is a tool.unconfirmed record");

	/* the client cancels while it is asked: an accept after that sends
	 * nothing, and the call is not answered */
	call_tool(&x, "14", "alpha__write", "{}");
	if (expect_confirm(&x, &ask, "a question, then a cancel")) {
		cancel(&x, "14", NULL);
		answer_confirm(&x, &ask, "accept");
		rpc_msg_free(&ask);
		call_marker(&x, &x.servers[0], "alpha__echo",
		            "a call cancelled while asked never goes");
		fake_send(&x.client, "{'jsonrpc':'2.0','id':'p','method':'ping'}");
		if (expect_response(&x, &r, "ping after the cancel")) {
			T_STR(jat(r.id, ""), "\"p\"", "and is not answered");
			rpc_msg_free(&r);
		}
	}
out:
	gw_end(&x);
}

/* A line over line_max from a server fails its calls in flight, but not one
 * whose question is with the person: it was never sent (once freed while
 * the client still had the question, whose answer then used it) */
static void test_long_line_while_asking(void)
{
	struct fixture x = {0};
	x.config = "[mcp]\nline_max = 1024\n";
	if (!start_two(&x, ELICIT, NULL))
		goto out;
	struct rpc_msg ask, m, r;
	call_tool(&x, "'w'", "alpha__write", "{}");
	if (!expect_confirm(&x, &ask, "a write call asks"))
		goto out;
	char pad[2048];
	memset(pad, 'x', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	fake_send(&x.servers[0],
	          "{'jsonrpc':'2.0','method':'notifications/message','params':{"
	          "'level':'info','data':'%s'}}",
	          pad);
	answer_confirm(&x, &ask, "accept");
	rpc_msg_free(&ask);
	if (expect_request(&x, &x.servers[0], "tools/call", &m, "accepted after the long line")) {
		T_STR(sat(m.params, "name"), "write",
		      "the call asked about still goes once accepted");
		answer_text(&x.servers[0], m.id, "written");
		rpc_msg_free(&m);
	}
	if (expect_response(&x, &r, "its answer")) {
		T_STR(jat(r.id, ""), "\"w\"", "and is answered");
		rpc_msg_free(&r);
	}
out:
	gw_end(&x);
}

/* A client that cannot ask is not offered what needs asking */
static void test_no_elicitation(void)
{
	struct fixture x = {0};
	if (!start_two(&x, NO_ASK, NULL))
		goto out;
	T_STR(
	    x.listed, "alpha__echo,alpha__quiet,beta__echo",
	    "no elicitation: write and undeclared tools are not listed, confirm = false ones are");
	struct rpc_msg r, m;
	call_tool(&x, "1", "alpha__write", "{}");
	if (expect_response(&x, &r, "a write tool without elicitation")) {
		T_STR(jat(r.result, "isError"), "true", "a call to one by name is a tool error");
		T_OK(has(sat(r.result, "content.0.text"), "this client cannot ask"),
		     "saying why: %s", sat(r.result, "content.0.text"));
		rpc_msg_free(&r);
	}
	T_OK(has(mg_buf_str(&x.notices),
	         "warning: not listed to this client: alpha__write, alpha__poke."),
	     "the person is told which tools and why");
	call_marker(&x, &x.servers[0], "alpha__echo", "alpha was sent no write call");
	call_tool(&x, "2", "alpha__quiet", "{}");
	if (expect_request(&x, &x.servers[0], "tools/call", &m,
	                   "confirm = false, no elicitation")) {
		answer_text(&x.servers[0], m.id, "ok");
		rpc_msg_free(&m);
		if (expect_response(&x, &r, "quiet's answer"))
			rpc_msg_free(&r);
	}
out:
	gw_end(&x);
}

/* ---- policy: pinned manifests -------------------------------------------------- */

static void test_manifests(void)
{
	struct fixture x = {0};
	gw_fake_open(&x.servers[0], "alpha", ALPHA_CAPS, ALPHA_TOOLS);
	gw_fake_open(&x.servers[1], "beta", BETA_CAPS, BETA_TOOLS);
	gw_fake_open(&x.servers[2], "gamma", BETA_CAPS, BETA_TOOLS);
	x.nservers = 3;
	cleanup_free char *pin = gw_fake_pin(BETA_TOOLS);
	cleanup_free char *a = gw_fake_server_toml("alpha", NULL, ALPHA_SETTINGS);
	cleanup_free char *b = gw_fake_server_toml("beta", "sha256:" HEX64, BETA_SETTINGS);
	cleanup_free char *c = gw_fake_server_toml("gamma", pin, BETA_SETTINGS);
	cleanup_free char *toml = xasprintf("%s%s%s", a, b, c);
	if (!gw_start(&x, toml, ELICIT, NULL))
		goto out;
	T_STR(x.listed, "gamma__echo", "only the approved server's tools are offered");
	const char *told = mg_buf_str(&x.notices);
	T_OK(has(told, "warning: server alpha is not started: its manifest is not approved; "
	               "review it with `mcpgate review alpha`"),
	     "the person is told the unapproved one is not started, and how to approve it");
	T_OK(has(told, "warning: server beta's tools are withheld: its manifest changed since "
	               "approval (approved sha256:" HEX64),
	     "and the changed one");
	T_OK(!audit_has("server.withheld server=alpha reason=unapproved") &&
	         audit_has("server.withheld server=beta reason=changed"),
	     "the changed one is a server.withheld record with the reason");
	struct rpc_msg r;
	call_tool(&x, "1", "alpha__echo", "{}");
	if (expect_response(&x, &r, "a withheld server's tool")) {
		T_INT(r.error_code, RPC_SERVER_ERROR,
		      "a call to a withheld server's tool is -32000");
		T_OK(has(r.error_message, "tool alpha__echo is unavailable: server alpha is not "
		                          "started: its manifest is not approved"),
		     "naming why: %s", r.error_message);
		rpc_msg_free(&r);
	}
	T_OK(x.servers[0].gw_in >= 0,
	     "the unapproved server is never started (review starts it): its pipe was not taken");
	expect_closed(&x.servers[1], "so is the changed one");
	call_marker(&x, &x.servers[2], "gamma__echo", "the approved one serves");
out:
	gw_end(&x);
}

/* A manifest that changes during the session withdraws its server */
static void test_relist(void)
{
	struct fixture x = {0};
	if (!start_two(&x, ELICIT, NULL))
		goto out;
	struct rpc_msg m, n;
	fake_send(&x.servers[1], "{'jsonrpc':'2.0','method':'notifications/tools/list_changed'}");
	if (expect_request(&x, &x.servers[1], "tools/list", &m, "list_changed: listed again")) {
		fake_send(&x.servers[1], "{'jsonrpc':'2.0','id':%s,'result':{'tools':%s}}",
		          jat(m.id, ""), BETA_TOOLS);
		rpc_msg_free(&m);
	}
	call_marker(&x, &x.servers[1], "beta__echo", "the same manifest again: beta still serves");
	fake_send(&x.servers[1], "{'jsonrpc':'2.0','method':'notifications/tools/list_changed'}");
	if (expect_request(&x, &x.servers[1], "tools/list", &m, "list_changed again")) {
		fake_send(
		    &x.servers[1],
		    "{'jsonrpc':'2.0','id':%s,'result':{'tools':[{'name':'echo','description':"
		    "'Now does something else.','inputSchema':{'type':'object'}}]}}",
		    jat(m.id, ""));
		rpc_msg_free(&m);
	}
	if (expect_notification(&x, &x.client, "notifications/tools/list_changed", &n,
	                        "a changed manifest")) {
		T_OK(1, "a manifest changed mid-session: the client is told its list changed");
		rpc_msg_free(&n);
	}
	expect_closed(&x.servers[1], "and the server whose manifest changed is stopped");
	fake_send(&x.client, "{'jsonrpc':'2.0','id':'again','method':'tools/list'}");
	if (expect_response(&x, &m, "tools/list after the change")) {
		T_STR(tool_names(m.result), "alpha__echo,alpha__write,alpha__poke,alpha__quiet",
		      "its tools are no longer listed, the others still are");
		rpc_msg_free(&m);
	}
	T_OK(has(mg_buf_str(&x.notices), "server beta's tools are withdrawn: its manifest changed "
	                                 "during the session"),
	     "the person is told");
out:
	gw_end(&x);
}

/* ---- policy: secrets ------------------------------------------------------------ */

#define SECRET "qv7-Ferret-Lantern-3319"

static void test_secrets(void)
{
	struct fixture x = {0};
	if (!start_two(&x, ELICIT, SECRET))
		goto out;
	struct rpc_msg m, r;
	call_tool(&x, "1", "alpha__echo", "{'text':'hello'}");
	if (expect_request(&x, &x.servers[0], "tools/call", &m, "a call whose answer leaks")) {
		answer_text(&x.servers[0], m.id, "the token is " SECRET ".");
		rpc_msg_free(&m);
	}
	if (expect_response(&x, &r, "the leaking answer")) {
		T_STR(sat(r.result, "content.0.text"), "the token is [redacted:API_TOKEN].",
		      "a stored value in a result is redacted");
		T_OK(!has(x.client.last, SECRET) && !has(x.client.last, "Ferret"),
		     "nothing of it reaches the client");
		rpc_msg_free(&r);
	}
	call_tool(&x, "2", "alpha__echo", "{}");
	if (expect_request(&x, &x.servers[0], "tools/call", &m, "a call whose error leaks")) {
		fake_send(&x.servers[0],
		          "{'jsonrpc':'2.0','id':%s,'error':{'code':-32001,'message':'bad "
		          "key " SECRET "','data':{'key':'" SECRET "'}}}",
		          jat(m.id, ""));
		rpc_msg_free(&m);
	}
	if (expect_response(&x, &r, "the leaking error")) {
		T_INT(r.error_code, -32001, "a server's error keeps its code");
		T_STR(r.error_message, "bad key [redacted:API_TOKEN]", "its message is redacted");
		T_STR(jat(r.error_data, ""), "{\"key\":\"[redacted:API_TOKEN]\"}",
		      "and so is its data");
		rpc_msg_free(&r);
	}
	call_tool(&x, "3", "alpha__echo", "{'text':'use " SECRET " please'}");
	if (expect_response(&x, &r, "a secret in the arguments")) {
		T_INT(r.error_code, RPC_SERVER_ERROR, "a stored value in the arguments is refused");
		T_OK(has(r.error_message, "refused: the request holds credential API_TOKEN"),
		     "naming the credential, never the value: %s", r.error_message);
		rpc_msg_free(&r);
	}
	call_marker(&x, &x.servers[0], "alpha__echo", "the call holding the secret never left");
out:
	gw_end(&x);
}

/* ---- a client of 2026-07-28 ----------------------------------------------- */

static void test_modern(void)
{
	struct fixture x = {.modern = true};
	if (!start_two(&x, ELICIT, NULL))
		goto out;
	T_STR(x.listed, "alpha__echo,alpha__write,alpha__poke,alpha__quiet,beta__echo",
	      "2026-07-28: tools/list without initialize");
	struct rpc_msg m, r;

	/* what 2026-07-28 adds to a request is between the client and mcpgate */
	fake_send(&x.client,
	          "{'jsonrpc':'2.0','id':1,'method':'tools/call','params':{'name':'alpha__echo',"
	          "'arguments':{'a':1},'requestState':'s','inputResponses':{},'_meta':{"
	          "'io.modelcontextprotocol/protocolVersion':'2026-07-28',"
	          "'io.modelcontextprotocol/clientCapabilities':{},"
	          "'io.modelcontextprotocol/logLevel':'info','progressToken':'p',"
	          "'com.example/x':1}}}");
	if (expect_request(&x, &x.servers[0], "tools/call", &m,
	                   "2026-07-28: a call reaches alpha")) {
		T_STR(jat(m.params, "requestState"), "-", "the server gets no requestState");
		T_STR(jat(m.params, "inputResponses"), "-", "nor inputResponses");
		T_OK(!has(jat(m.params, "_meta"), "io.modelcontextprotocol/") &&
		         has(jat(m.params, "_meta"), "com.example/x") &&
		         has(sat(m.params, "_meta.progressToken"), "mcpgate-"),
		     "nor the client's io.modelcontextprotocol/ _meta; other _meta and the "
		     "progress token go as before: %s",
		     jat(m.params, "_meta"));
		/* a server asking the client within the call: the relay's rule
		 * applies to this request's own capabilities, which have none */
		fake_send(&x.servers[0],
		          "{'jsonrpc':'2.0','id':'e1','method':'elicitation/create','params':{"
		          "'message':'hi','requestedSchema':{'type':'object','properties':{}}}}");
		if (expect_kind(&x, &x.servers[0], RPC_ERROR, NULL, &r, "alpha's elicitation")) {
			T_INT(
			    r.error_code, RPC_METHOD_NOT_FOUND,
			    "a server's request the call's capabilities do not declare is refused");
			T_OK(has(r.error_message, "did not declare"), "saying why: %s",
			     r.error_message);
			rpc_msg_free(&r);
		}
		/* a server that passes for mcpgate asking for input */
		fake_send(&x.servers[0],
		          "{'jsonrpc':'2.0','id':%s,'result':{'resultType':'input_required',"
		          "'inputRequests':{'x':{'method':'elicitation/create','params':{}}},"
		          "'requestState':'mine','content':[{'type':'text','text':'hi'}]}}",
		          jat(m.id, ""));
		rpc_msg_free(&m);
	}
	if (expect_response(&x, &r, "alpha's answer")) {
		T_STR(sat(r.result, "resultType"), "complete",
		      "a server's result is complete, whatever it says");
		T_OK(at(r.result, "inputRequests") == NULL && at(r.result, "requestState") == NULL,
		     "a server's input requests and state are not passed on");
		T_STR(sat(r.result, "content.0.text"), "hi", "its content is");
		T_OK(has(jat(r.result, "_meta"), "\"io.mcpgate/server\":\"alpha\""),
		     "tagged with alpha: %s", jat(r.result, "_meta"));
		rpc_msg_free(&r);
	}

	/* a write tool: the question is the answer, the retry runs the call */
	call_tool(&x, "2", "alpha__write", "{'path':'/tmp/x'}");
	const char *state = "-";
	if (expect_response(&x, &r, "the write call's question")) {
		T_STR(sat(r.result, "resultType"), "input_required", "a write tool needs input");
		T_STR(sat(r.result, "inputRequests.mcpgate-confirm.method"), "elicitation/create",
		      "an elicitation");
		state = sat(r.result, "requestState");
		rpc_msg_free(&r);
	}
	call_marker(&x, &x.servers[0], "alpha__echo", "the question sent alpha nothing");
	fake_send(&x.client,
	          "{'jsonrpc':'2.0','id':3,'method':'tools/call','params':{'name':'alpha__write',"
	          "'arguments':{'path':'/tmp/x'},'requestState':'%s','inputResponses':{"
	          "'mcpgate-confirm':{'action':'accept'}}%s}}",
	          state, modern_meta(&x));
	if (expect_request(&x, &x.servers[0], "tools/call", &m, "the retry reaches alpha")) {
		T_STR(sat(m.params, "name"), "write", "the accepted call is write");
		T_STR(jat(m.params, "arguments"), "{\"path\":\"/tmp/x\"}", "with its arguments");
		T_STR(jat(m.params, "requestState"), "-", "and without the state");
		answer_text(&x.servers[0], m.id, "written");
		rpc_msg_free(&m);
	}
	if (expect_response(&x, &r, "the retry's answer")) {
		T_STR(sat(r.result, "content.0.text"), "written", "the retry gets alpha's result");
		rpc_msg_free(&r);
	}
	T_OK(audit_has("tool.confirm server=alpha tool=write action=accept"),
	     "the answer is recorded (tool.confirm, accept)");
out:
	gw_end(&x);
}

/* W3C trace context: what is recorded as a call's trace */
static void test_traceparent(void)
{
	static const struct {
		const char *tp;
		bool ok;
	} v[] = {
	    {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", true},
	    {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", true},
	    {"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later", true},
	    {"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", true},
	    {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", false},
	    {"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", false},
	    {"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
	    {"00-00000000000000000000000000000000-00f067aa0ba902b7-01", false},
	    {"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", false},
	    {"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", false},
	    {"00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01", false},
	    {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", false},
	    {"", false},
	    {"00", false},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		T_OK(gw_traceparent_valid(v[i].tp) == v[i].ok, "traceparent \"%s\" is %s", v[i].tp,
		     v[i].ok ? "well formed" : "refused");
}

/* What the person is told when a server's text names a missing command:
 * the command, the package, the add line with the packages it has and the
 * new one, the entry's key; nothing for text that names none */
static void test_missing_command_hint(void)
{
	static const char mcp[] =
	    "[[server]]\nname = \"git\"\ntransport = \"container\"\n"
	    "image = \"localhost/mcpgate-npm-git@sha256:"
	    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"\n"
	    "packages = [\"curl\"]\n";
	struct cfg *cfg = NULL;
	struct mg_err *err = NULL;
	if (!T_OK(cfg_parse(mcp, strlen(mcp), "mcp.toml", NULL, 0, NULL, &cfg, &err) == 0,
	          "the hint's configuration loads"))
		return;
	const struct cfg_server *s = &cfg->servers[0];
	const char text[] = "Error: Git command not found. Please ensure Git is installed";
	cleanup_free char *h =
	    gw_missing_command_hint(s, "npm:@cyanheads/git-mcp-server@2.15.3", text, strlen(text));
	T_STR(h,
	      "server git looks for the command git, which its image lacks: Debian's package git "
	      "has it. Make its image again with it, `mcpgate add "
	      "npm:@cyanheads/git-mcp-server@2.15.3 --name git --with curl --with git` (remove its "
	      "entry first), which writes packages = [\"curl\", \"git\"] in its entry",
	      "a missing git: the command, the package, the add line, the entry's key");
	const char listed[] = "/bin/sh: 1: curl: not found";
	cleanup_free char *l = gw_missing_command_hint(s, NULL, listed, strlen(listed));
	T_OK(l != NULL && strstr(l, "Its entry lists it, so its image is older") != NULL &&
	         strstr(l, "`mcpgate add npm:PACKAGE@VERSION --name git --with curl`") != NULL,
	     "a package the entry lists already: its image is older than its entry: %s", l);
	const char shell[] = "Error: spawn /bin/sh ENOENT";
	cleanup_free char *b = gw_missing_command_hint(s, NULL, shell, strlen(shell));
	T_OK(b != NULL && strstr(b, "Every image mcpgate add makes now has it") != NULL,
	     "a command of the base: every image add makes now has it: %s", b);
	const char none[] = "Error: ENOENT: no such file or directory, open '/data/x.json'";
	T_OK(gw_missing_command_hint(s, NULL, none, strlen(none)) == NULL,
	     "a missing file is no missing command");
	cfg_free(cfg);
}

/* The usual causes of a failed start: each recognised only where it holds,
 * a path named only when it is of plain path characters; and the tail of a
 * stderr escaped, blank lines left out */
static void test_start_causes(void)
{
	static const char mcp[] =
	    "[[server]]\nname = \"s\"\ntransport = \"container\"\n"
	    "image = \"localhost/x@sha256:"
	    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"\n";
	struct cfg *cfg = NULL;
	struct mg_err *err = NULL;
	if (!T_OK(cfg_parse(mcp, strlen(mcp), "mcp.toml", NULL, 0, NULL, &cfg, &err) == 0,
	          "the causes' configuration loads"))
		return;
	const struct cfg_server *s = &cfg->servers[0];
	static const char timeout[] =
	    "timed out after 2000 ms waiting for initialize from server s";
	static const struct {
		const char *text, *start_error, *want; /* want: in the fix, or NULL: no fix */
	} cases[] = {
	    {"Server listening on port 8080", timeout, "seems to serve MCP over HTTP"},
	    {"ready at http://0.0.0.0:3000/mcp", timeout, "seems to serve MCP over HTTP"},
	    /* an exit after a failed fetch is not a server of HTTP */
	    {"fetch http://example.org failed", "server/discover: end of input", NULL},
	    {"Error: EACCES: permission denied, open '/data/db.sqlite'", NULL,
	     "could not write a path its stderr names (permission denied)"},
	    {"mkdir: cannot create directory '/app/cache': Read-only file system", NULL,
	     "could not write a path its stderr names (a read-only file system)"},
	    /* the path is the server's text: never repeated in the reason */
	    {"EROFS: read-only file system, mkdir '/app/\x1b[2J'", NULL,
	     "could not write a path its stderr names (a read-only file system)"},
	    {"Error: ENOENT: no such file or directory, open '/data/x.json'", NULL, NULL},
	    {"", "the server answered protocol version \"1\", which mcpgate does not speak",
	     "`mcpgate add npm:some-server@VERSION --name s`"},
	    {"Error: spawn git ENOENT", "x", "Debian's package git has it"},
	    /* a native addon npm's install scripts did not build (bindings,
	     * node-gyp-build, node-pre-gyp's words) */
	    {"Error: Could not locate the bindings file. Tried:\n"
	     " \xe2\x86\x92 /app/node_modules/sqlite3/build/node_sqlite3.node",
	     "server/discover: end of input",
	     "`mcpgate add npm:some-server@1.0.0 --name s --scripts`"},
	    {"Error: No native build was found for platform=linux arch=x64 runtime=node", NULL,
	     "a native addon that was not built"},
	    {"Error: Cannot find module '/app/node_modules/x/lib/binding/napi-v3/x.node'", NULL,
	     "a native addon that was not built"},
	    /* a service on the host's loopback, which in a container is the
	     * container's own */
	    {"Redis Client Error: connect ECONNREFUSED 127.0.0.1:56379", "end of input",
	     "connect = { NAME = \"127.0.0.1:56379\" }"},
	    {"psql: error: connection to server at \"localhost\" (::1), port 5432 failed: "
	     "Connection refused",
	     NULL, "connect = { NAME = \"127.0.0.1:5432\" }"},
	    {"Error 111 connecting to localhost:6379. Connection refused.", NULL,
	     "give it {connect.NAME} where it takes the address"},
	    /* refused elsewhere: not the loopback's cause */
	    {"connect ECONNREFUSED 10.1.2.3:5432", NULL, NULL},
	    /* a port that is no port is not repeated */
	    {"connect ECONNREFUSED 127.0.0.1:99999999", NULL,
	     "connect = { NAME = \"127.0.0.1:PORT\" }"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cleanup_free char *fix =
		    gw_start_cause(s, "npm:some-server@1.0.0", cases[i].text, strlen(cases[i].text),
		                   cases[i].start_error);
		if (cases[i].want == NULL)
			T_OK(fix == NULL, "no usual cause in \"%s\": %s", cases[i].text,
			     fix != NULL ? fix : "");
		else
			T_OK(fix != NULL && strstr(fix, cases[i].want) != NULL,
			     "\"%s\" gives a fix with \"%s\": %s", cases[i].text, cases[i].want,
			     fix != NULL ? fix : "(none)");
	}
	static const char noisy[] = "one\n\n\n  \ntwo\x1b[31m\r\n\xe2\x80\xae\n\n\n";
	size_t n = 0;
	cleanup_free char *tail = gw_stderr_tail(noisy, strlen(noisy), 2, &n);
	T_STR(tail, "  | two\\x1b[31m\n  | \\u{202E}",
	      "the last 2 lines that are not blank, escaped");
	T_OK(n == 2, "counted: %zu", n);
	T_OK(gw_stderr_tail("\n\n \n", 4, 8, &n) == NULL && n == 0, "blank lines only: none");
	cfg_free(cfg);
}

/* What a failed call's text makes the person told: the causes a call shows
 * (a path it could not write, a native addon not built, the host's
 * loopback); nothing for a refusal of the server's own words */
static void test_call_causes(void)
{
	static const char mcp[] =
	    "[[server]]\nname = \"m\"\ntransport = \"container\"\n"
	    "image = \"localhost/x@sha256:"
	    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"\n"
	    "packages = [\"git\"]\n";
	struct cfg *cfg = NULL;
	struct mg_err *err = NULL;
	if (!T_OK(cfg_parse(mcp, strlen(mcp), "mcp.toml", NULL, 0, NULL, &cfg, &err) == 0,
	          "the call causes' configuration loads"))
		return;
	const struct cfg_server *s = &cfg->servers[0];
	static const struct {
		const char *text, *want; /* want: in the fix, or NULL: no fix */
	} cases[] = {
	    /* @modelcontextprotocol/server-memory 0.6.2 writes beside its code */
	    {"EROFS: read-only file system, open "
	     "'/app/node_modules/@modelcontextprotocol/server-memory/dist/memory.json'",
	     "could not write a path its answer names (a read-only file system)"},
	    {"Error: EACCES: permission denied, mkdir '/workspace/ro/x'",
	     "could not write a path its answer names (permission denied)"},
	    {"[Errno 30] Read-only file system: '/app/cache'", "(a read-only file system)"},
	    /* a database's or a server's own refusal is no file system's */
	    {"Failed to execute query: permission denied for table pets", NULL},
	    {"Access denied - path outside allowed directories: /etc/passwd", NULL},
	    {"Failed to connect to database: connect ECONNREFUSED 127.0.0.1:55432",
	     "connect = { NAME = \"127.0.0.1:55432\" }"},
	    {"Error: Could not locate the bindings file. Tried:",
	     "`mcpgate add npm:some-server@1.0.0 --name m --with git --scripts`"},
	    {"/bin/sh: 1: python3: not found", "Debian's package python3 has it"},
	    {"Git command failed: null", NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cleanup_free char *fix =
		    gw_call_cause(s, "npm:some-server@1.0.0", cases[i].text, strlen(cases[i].text));
		if (cases[i].want == NULL)
			T_OK(fix == NULL, "a call: no usual cause in \"%s\": %s", cases[i].text,
			     fix != NULL ? fix : "");
		else
			T_OK(fix != NULL && strstr(fix, cases[i].want) != NULL,
			     "a call: \"%s\" gives a fix with \"%s\": %s", cases[i].text,
			     cases[i].want, fix != NULL ? fix : "(none)");
	}
	cfg_free(cfg);
}

int main(void)
{
	mg_log_set_level(MG_LOG_ERROR);
	test_missing_command_hint();
	test_start_causes();
	test_call_causes();
	test_traceparent();
	test_routing();
	test_ids();
	test_cancel();
	test_limits();
	test_result_not_object();
	test_long_line_while_asking();
	test_progress();
	test_startup_wait();
	test_confirm();
	test_no_elicitation();
	test_manifests();
	test_relist();
	test_secrets();
	test_modern();
	return t_done();
}
