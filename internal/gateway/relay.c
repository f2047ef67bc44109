/* The rest of the protocol, relayed between the client and the servers:
 * resources, prompts, completion and logging from the client to the server
 * that owns the name or URI; sampling, elicitation and roots from a server to
 * the client when both the client and the server's entry allow it; merged
 * lists paged with cursors of mcpgate's own. Ids are mapped both ways: each
 * side only ever sees ids of its own peer. See docs/relay.md. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/base/cleanup.h"
#include "internal/base/utf8.h"
#include "internal/base/log.h"
#include "internal/base/xalloc.h"
#include "internal/gateway/gateway-internal.h"

#define URI_PREFIX     "mcpgate://"
#define CURSOR_PREFIX  "mcpgate-"
#define META_SERVER    "io.mcpgate/server"
#define LEVEL_NAME_MAX 15

/* ---- answering the client ---------------------------------------------- */

/* The client hears about changes once it said it is initialized */
static void notify_client(struct session *s, const char *method, const struct json_value *params)
{
	if (!s->client_initialized || s->stopping || s->client == NULL)
		return;
	rpc_peer_send_notification(s->client, method, params, NULL);
}

/* ---- names and URIs ------------------------------------------------------ */

char *gw_relay_public_name(const struct gw_server *srv, const char *name)
{
	if (srv->sess->cfg->passthrough)
		return xstrdup(name);
	return xasprintf("%s__%s", srv->cfg->name, name);
}

char *gw_relay_public_uri(const struct gw_server *srv, const char *uri)
{
	if (srv->sess->cfg->passthrough)
		return xstrdup(uri);
	return xasprintf(URI_PREFIX "%s/%s", srv->cfg->name, uri);
}

static bool ready(const struct gw_server *srv)
{
	return srv->state == GW_READY && srv->launch.peer != NULL;
}

/* The server called name[0..len), or with --passthrough the one server;
 * only a ready one when ready_only */
static struct gw_server *server_called(struct session *s, const char *name, size_t len,
                                       bool ready_only)
{
	for (size_t i = 0; i < s->nservers; i++) {
		struct gw_server *srv = &s->servers[i];
		if (ready_only && !ready(srv))
			continue;
		if (s->cfg->passthrough ||
		    (strlen(srv->cfg->name) == len && memcmp(srv->cfg->name, name, len) == 0))
			return srv;
	}
	return NULL;
}

/* mcpgate://SERVER/URI: the server named up to the first "/", and the rest
 * verbatim in *rest. NULL when it names no server (no ready one, when
 * ready_only). */
static struct gw_server *owner_of_uri(struct session *s, const char *uri, const char **rest,
                                      bool ready_only)
{
	if (s->cfg->passthrough) {
		*rest = uri;
		return server_called(s, NULL, 0, ready_only);
	}
	size_t n = strlen(URI_PREFIX);
	if (strncmp(uri, URI_PREFIX, n) != 0)
		return NULL;
	const char *name = uri + n;
	const char *slash = strchr(name, '/');
	if (slash == NULL || slash == name)
		return NULL;
	*rest = slash + 1;
	return server_called(s, name, (size_t)(slash - name), ready_only);
}

static struct gw_server *server_of_uri(struct session *s, const char *uri, const char **rest)
{
	return owner_of_uri(s, uri, rest, true);
}

/* SERVER__NAME: server names hold no "__", so the first one splits */
static struct gw_server *owner_of_name(struct session *s, const char *pub, const char **rest,
                                       bool ready_only)
{
	if (s->cfg->passthrough) {
		*rest = pub;
		return server_called(s, NULL, 0, ready_only);
	}
	const char *sep = strstr(pub, "__");
	if (sep == NULL || sep == pub)
		return NULL;
	*rest = sep + 2;
	return server_called(s, pub, (size_t)(sep - pub), ready_only);
}

static struct gw_server *server_of_name(struct session *s, const char *pub, const char **rest)
{
	return owner_of_name(s, pub, rest, true);
}

/* A request for a server still starting (or, lazy, not started yet: now it
 * is) waits for its start to end, then comes again: true when it waits */
static bool waits_for_start(struct session *s, struct rpc_msg *msg, const char *uri,
                            const char *name)
{
	const char *rest = NULL;
	struct gw_server *owner =
	    uri != NULL ? owner_of_uri(s, uri, &rest, false) : owner_of_name(s, name, &rest, false);
	if (owner == NULL || (owner->state != GW_STARTING && owner->state != GW_IDLE))
		return false;
	if (!s->no_wait)
		gw_wait(s, msg, owner);
	else
		gw_client_error(
		    s, msg->id, RPC_SERVER_ERROR,
		    "%s: server %s did not finish starting within start_timeout (%u s); "
		    "ask again later",
		    msg->method, owner->cfg->name, s->cfg->mcp.start_timeout);
	return true;
}

struct gw_server *gw_relay_owner_of_name(struct session *s, const char *pub)
{
	const char *rest = NULL;
	return owner_of_name(s, pub, &rest, false);
}

/* What the server declared in its initialize answer */
static const struct json_value *server_cap(const struct gw_server *srv, const char *cap)
{
	const struct json_value *v = json_get(srv->info.capabilities, cap);
	return v != NULL && v->kind == JSON_OBJECT ? v : NULL;
}

static bool cap_flag(const struct json_value *cap, const char *key)
{
	const struct json_value *v = json_get(cap, key);
	return v != NULL && v->kind == JSON_BOOL && v->u.boolean;
}

/* Set field of obj (a string) to its public form */
static void publish_uri(const struct gw_server *srv, struct json_value *obj, const char *field)
{
	const char *uri = json_get_string(obj, field);
	if (uri == NULL)
		return;
	cleanup_free char *pub = gw_relay_public_uri(srv, uri);
	json_object_set(obj, field, json_new_string(pub));
}

static void tag_server(const struct gw_server *srv, struct json_value *obj)
{
	const struct json_value *meta = json_get(obj, "_meta");
	struct json_value *m =
	    meta != NULL && meta->kind == JSON_OBJECT ? json_copy(meta) : json_new_object();
	json_object_set(m, META_SERVER, json_new_string(srv->cfg->name));
	json_object_set(obj, "_meta", m);
}

/* ---- --passthrough --------------------------------------------------------- */

int gw_relay_passthrough_check(const struct session *s, struct mg_err **err)
{
	if (!s->cfg->passthrough || s->nservers <= 1)
		return 0;
	struct mg_buf names = MG_BUF_INIT(1 << 16);
	for (size_t i = 0; i < s->nservers; i++)
		mg_buf_printf(&names, NULL, "%s%s", i ? ", " : "", s->servers[i].cfg->name);
	mg_err_set(err,
	           "--passthrough serves exactly one server under its own names, and %zu are "
	           "offered in workspace %s (%s): limit the others with \"workspaces\" in "
	           "mcp.toml, or use a --config folder whose mcp.toml lists one server",
	           s->nservers, s->workspace, mg_buf_str(&names));
	mg_buf_free(&names);
	return -1;
}

/* ---- the capabilities mcpgate declares to a server ------------------------- */

static pthread_once_t caps_once = PTHREAD_ONCE_INIT;
static struct json_value *caps_by_relay[8]; /* bit 0 sampling, 1 elicitation, 2 roots */

static void caps_build(void)
{
	for (int i = 0; i < 8; i++) {
		struct json_value *c = json_new_object();
		if (i & 1)
			json_object_set(c, "sampling", json_new_object());
		if (i & 2)
			json_object_set(c, "elicitation", json_new_object());
		if (i & 4)
			json_object_set(c, "roots",
			                gw_fields("listChanged", json_new_bool(true), NULL));
		caps_by_relay[i] = c;
	}
}

const struct json_value *gw_relay_server_capabilities(const struct cfg_server *c)
{
	pthread_once(&caps_once, caps_build);
	return caps_by_relay[(c->relay_sampling ? 1 : 0) | (c->relay_elicitation ? 2 : 0) |
	                     (c->relay_roots ? 4 : 0)];
}

enum relay_cap { RELAY_SAMPLING, RELAY_ELICITATION, RELAY_ROOTS };

static const struct relay_spec {
	const char *method;
	const char *cap; /* the client's capability, and the word in relay = [...] */
} relays[] = {
    [RELAY_SAMPLING] = {"sampling/createMessage", "sampling"},
    [RELAY_ELICITATION] = {"elicitation/create", "elicitation"},
    [RELAY_ROOTS] = {"roots/list", "roots"},
};

struct json_value *gw_relay_caps_for_server(const struct cfg_server *c,
                                            const struct json_value *caps)
{
	struct json_value *out = json_new_object();
	const bool allowed[] = {
	    [RELAY_SAMPLING] = c->relay_sampling,
	    [RELAY_ELICITATION] = c->relay_elicitation,
	    [RELAY_ROOTS] = c->relay_roots,
	};
	for (size_t w = RELAY_SAMPLING; w <= RELAY_ROOTS; w++) {
		const struct json_value *v = json_get(caps, relays[w].cap);
		if (!allowed[w] || v == NULL || v->kind != JSON_OBJECT)
			continue;
		json_object_set(out, relays[w].cap,
		                w == RELAY_ROOTS ? json_new_object() : json_copy(v));
	}
	return out;
}

/* ---- lists and pages ------------------------------------------------------- */

enum list_kind { LIST_TOOLS, LIST_RESOURCES, LIST_TEMPLATES, LIST_PROMPTS, LIST_KINDS };

static const struct list_spec {
	const char *method; /* asked of servers, and by the client */
	const char *key;    /* the result's array */
	const char *cap;    /* the capability a server declares for it */
	const char *field;  /* what names an item */
	char tag;           /* in cursors */
} lists[LIST_KINDS] = {
    [LIST_TOOLS] = {"tools/list", "tools", "tools", "name", 't'},
    [LIST_RESOURCES] = {"resources/list", "resources", "resources", "uri", 'r'},
    [LIST_TEMPLATES] = {"resources/templates/list", "resourceTemplates", "resources", "uriTemplate",
                        'u'},
    [LIST_PROMPTS] = {"prompts/list", "prompts", "prompts", "name", 'p'},
};

/* FNV-1a over the names of the items, in order: a cursor is good only for
 * the list it was made for */
static uint64_t fingerprint(const struct json_value *items, const char *field)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < items->u.arr.len; i++) {
		const char *name = json_get_string(items->u.arr.items[i], field);
		for (const char *p = name != NULL ? name : ""; *p != '\0'; p++) {
			h ^= (unsigned char)*p;
			h *= 0x100000001b3ull;
		}
		h ^= 0xff; /* the separator: no name holds this byte */
		h *= 0x100000001b3ull;
	}
	return h;
}

/* "mcpgate-" TAG OFFSET "-" 16 hex */
static char *cursor_make(enum list_kind kind, size_t offset, uint64_t fp)
{
	return xasprintf(CURSOR_PREFIX "%c%zu-%016" PRIx64, lists[kind].tag, offset, fp);
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* 0 with the offset and fingerprint of one of our cursors for kind; -1 when
 * it is not one */
static int cursor_parse(const struct json_value *cursor, enum list_kind kind, size_t *offset,
                        uint64_t *fp)
{
	if (cursor == NULL || cursor->kind != JSON_STRING ||
	    strlen(cursor->u.str.ptr) != cursor->u.str.len)
		return -1;
	const char *p = cursor->u.str.ptr;
	size_t n = strlen(CURSOR_PREFIX);
	if (strncmp(p, CURSOR_PREFIX, n) != 0 || p[n] != lists[kind].tag)
		return -1;
	p += n + 1;
	size_t off = 0, digits = 0;
	for (; *p >= '0' && *p <= '9'; p++, digits++) {
		if (digits >= 9)
			return -1; /* far more than any list holds */
		off = off * 10 + (size_t)(*p - '0');
	}
	if (digits == 0 || *p++ != '-')
		return -1;
	uint64_t h = 0;
	for (int i = 0; i < 16; i++, p++) {
		int d = hex_digit(*p);
		if (d < 0)
			return -1;
		h = h << 4 | (uint64_t)d;
	}
	if (*p != '\0')
		return -1;
	*offset = off;
	*fp = h;
	return 0;
}

/* A cursor the client may send: absent or null means the first page */
static bool cursor_given(const struct json_value *cursor)
{
	return cursor != NULL && cursor->kind != JSON_NULL;
}

/* Answer one page of items (a public list, borrowed) */
static void send_page(struct session *s, const struct json_value *id, enum list_kind kind,
                      const struct json_value *items, const struct json_value *cursor)
{
	const struct list_spec *spec = &lists[kind];
	s->listed[kind == LIST_TOOLS     ? GW_LISTEN_TOOLS
	          : kind == LIST_PROMPTS ? GW_LISTEN_PROMPTS
	                                 : GW_LISTEN_RESOURCES] = true;
	uint64_t fp = fingerprint(items, spec->field);
	size_t len = items->u.arr.len, offset = 0;
	if (cursor_given(cursor)) {
		uint64_t was = 0;
		if (cursor_parse(cursor, kind, &offset, &was) < 0 || offset == 0 || offset >= len) {
			gw_client_error(s, id, RPC_INVALID_PARAMS,
			                "%s: not a cursor mcpgate gave out", spec->method);
			return;
		}
		if (was != fp) {
			gw_client_error(
			    s, id, RPC_INVALID_PARAMS,
			    "%s: the list changed since this cursor was given; list again "
			    "from the start",
			    spec->method);
			return;
		}
	}
	size_t end = len - offset > GW_PAGE_MAX ? offset + GW_PAGE_MAX : len;
	struct json_value *page = json_new_array();
	for (size_t i = offset; i < end; i++)
		json_array_push(page, json_copy(items->u.arr.items[i]));
	struct json_value *result = gw_fields(spec->key, page, NULL);
	if (end < len) {
		cleanup_free char *next = cursor_make(kind, end, fp);
		json_object_set(result, "nextCursor", json_new_string(next));
	}
	gw_era_cacheable(s, result, GW_TTL_LIST_MS);
	gw_client_result(s, id, result);
	json_free(result);
}

void gw_relay_send_page(struct session *s, const struct json_value *id, const char *key,
                        const struct json_value *items, const struct json_value *cursor)
{
	enum list_kind kind = LIST_TOOLS;
	while (kind < LIST_KINDS - 1 && strcmp(lists[kind].key, key) != 0)
		kind++;
	struct json_value *empty = NULL;
	if (items == NULL || items->kind != JSON_ARRAY)
		items = empty = json_new_array();
	send_page(s, id, kind, items, cursor);
	json_free(empty);
}

/* One server's part of a merged list */
struct list_part {
	struct list_op *op;
	struct gw_server *srv;
	struct json_value *items; /* as the server listed them */
	struct strv cursors;      /* every cursor it gave, to catch a loop */
	size_t page;
	bool failed;
};

/* A client's list in the making: every server that offers the kind is read
 * over every page, at once; the answer goes out when the last one is in */
struct list_op {
	struct session *s;
	enum list_kind kind;
	struct json_value *client_id;
	struct json_value *cursor; /* the client's, or NULL */
	size_t pending;
	size_t nparts;
	struct list_part parts[];
};

/* The item in its public form, or NULL when it has no usable name */
static struct json_value *public_item(enum list_kind kind, const struct gw_server *srv,
                                      const struct json_value *item)
{
	const char *field = lists[kind].field;
	const char *name = json_get_string(item, field);
	if (name == NULL)
		return NULL;
	struct json_value *pub = json_copy(item);
	if (kind == LIST_PROMPTS) {
		cleanup_free char *n = gw_relay_public_name(srv, name);
		json_object_set(pub, field, json_new_string(n));
	} else {
		publish_uri(srv, pub, field);
	}
	return pub;
}

static void list_finish(struct list_op *op)
{
	struct session *s = op->s;
	if (!s->stopping && s->client != NULL) {
		struct json_value *merged = json_new_array();
		for (size_t i = 0; i < op->nparts; i++) {
			struct list_part *part = &op->parts[i];
			if (part->failed || !ready(part->srv))
				continue;
			for (size_t k = 0; k < part->items->u.arr.len; k++) {
				struct json_value *pub =
				    public_item(op->kind, part->srv, part->items->u.arr.items[k]);
				if (pub != NULL)
					json_array_push(merged, pub);
			}
		}
		gw_secrets_redact(s, merged);
		send_page(s, op->client_id, op->kind, merged, op->cursor);
		json_free(merged);
	}
	for (size_t i = 0; i < op->nparts; i++) {
		json_free(op->parts[i].items);
		strv_free(&op->parts[i].cursors);
	}
	json_free(op->client_id);
	json_free(op->cursor);
	free(op);
}

/* One page of a server's list into part->items. 1 with *next when another
 * page follows, 0 after the last, -1 on a bad page (err says why). */
static int read_page(struct list_part *part, const struct rpc_msg *reply, const char **next,
                     struct mg_err **err)
{
	const struct list_spec *spec = &lists[part->op->kind];
	*next = NULL;
	if (++part->page > MCP_LIST_PAGES_MAX)
		return mg_err_set(err, "%s: more than %d pages", spec->method, MCP_LIST_PAGES_MAX);
	if (reply->kind == RPC_ERROR) {
		cleanup_free char *text = mcp_error_text(reply);
		return mg_err_set(err, "%s failed: %s", spec->method, text);
	}
	const struct json_value *list = json_get(reply->result, spec->key);
	if (list == NULL || list->kind != JSON_ARRAY)
		return mg_err_set(err, "%s page %zu: no %s array", spec->method, part->page,
		                  spec->key);
	for (size_t i = 0; i < list->u.arr.len; i++) {
		const struct json_value *item = list->u.arr.items[i];
		if (json_get_string(item, spec->field) == NULL)
			continue; /* nothing to call it by: not offered */
		if (part->items->u.arr.len >= MCP_TOOLS_MAX)
			return mg_err_set(err, "%s: more than %d items", spec->method,
			                  MCP_TOOLS_MAX);
		json_array_push(part->items, json_copy(item));
	}
	const struct json_value *cursor = json_get(reply->result, "nextCursor");
	if (cursor == NULL || cursor->kind == JSON_NULL)
		return 0;
	if (json_get_string(reply->result, "nextCursor") == NULL ||
	    strv_find(&part->cursors, cursor->u.str.ptr) >= 0)
		return mg_err_set(
		    err, "%s page %zu: the nextCursor is %s", spec->method, part->page,
		    cursor->kind != JSON_STRING ? "not a string" : "one already given (a loop)");
	strv_push(&part->cursors, cursor->u.str.ptr);
	*next = part->cursors.v[part->cursors.n - 1];
	return 1;
}

static int part_send(struct list_part *part, const char *cursor);

static void on_list_page(struct rpc_peer *peer, struct rpc_msg *reply, const struct mg_err *why,
                         void *data)
{
	(void)peer;
	struct list_part *part = data;
	struct list_op *op = part->op;
	struct mg_err *err = NULL;
	const char *next = NULL;
	int more = -1;
	if (reply != NULL)
		more = read_page(part, reply, &next, &err);
	if (more > 0 && ready(part->srv) && part_send(part, next) == 0)
		return;
	if (more != 0) {
		part->failed = true;
		if (!op->s->stopping)
			mg_warn("server %s: %s is left out: %s", part->srv->cfg->name,
			        lists[op->kind].method,
			        why != NULL   ? mg_err_msg(why)
			        : err != NULL ? mg_err_msg(err)
			                      : "its server is not running");
	}
	mg_err_free(err);
	if (--op->pending == 0)
		list_finish(op);
}

static int part_send(struct list_part *part, const char *cursor)
{
	struct gw_server *srv = part->srv;
	struct session *s = srv->sess;
	struct json_value *params = mcp_cursor_params(cursor);
	int64_t deadline = proc_now_ms() + (int64_t)s->cfg->mcp.call_timeout * 1000;
	struct mg_err *err = NULL;
	int r = rpc_peer_send_request(srv->launch.peer, lists[part->op->kind].method, params,
	                              deadline, on_list_page, part, NULL, &err);
	json_free(params);
	if (r < 0) {
		mg_warn("server %s: %s", srv->cfg->name, mg_err_msg(err));
		mg_err_free(err);
	}
	return r;
}

/* Read every server's list of kind, merge them in mcp.toml order, answer
 * the page the cursor names */
static void list_start(struct session *s, enum list_kind kind, const struct json_value *id,
                       const struct json_value *cursor)
{
	size_t offset;
	uint64_t fp;
	if (cursor_given(cursor) && cursor_parse(cursor, kind, &offset, &fp) < 0) {
		gw_client_error(s, id, RPC_INVALID_PARAMS, "%s: not a cursor mcpgate gave out",
		                lists[kind].method);
		return;
	}
	size_t n = 0;
	for (size_t i = 0; i < s->nservers; i++)
		n += ready(&s->servers[i]) && server_cap(&s->servers[i], lists[kind].cap) != NULL;
	struct list_op *op = xcalloc(1, sizeof(*op) + n * sizeof(op->parts[0]));
	op->s = s;
	op->kind = kind;
	op->client_id = json_copy(id);
	op->cursor = cursor_given(cursor) ? json_copy(cursor) : NULL;
	for (size_t i = 0; i < s->nservers; i++) {
		struct gw_server *srv = &s->servers[i];
		if (!ready(srv) || server_cap(srv, lists[kind].cap) == NULL)
			continue;
		struct list_part *part = &op->parts[op->nparts++];
		part->op = op;
		part->srv = srv;
		part->items = json_new_array();
		part->cursors = (struct strv)STRV_INIT;
		if (part_send(part, NULL) == 0)
			op->pending++;
		else
			part->failed = true;
	}
	if (op->pending == 0)
		list_finish(op);
}

/* ---- client requests to one server ---------------------------------------- */

/* FWD_COMPLETE: completion/complete to a server of 2024-11-05, which has
 * no capability to say whether it completes: "method not found" means no
 * suggestions */
enum fwd_kind { FWD_PLAIN, FWD_READ, FWD_PROMPT, FWD_COMPLETE };

/* A client's request with a server */
struct fwd {
	struct session *s;
	struct gw_server *srv;
	struct json_value *client_id;
	const char *method;
	enum fwd_kind kind;
	int64_t upstream_id;
	int64_t start_ms;
	/* what an input_required answer binds (rounds.c): the request and
	 * its public name, its arguments and the client's capabilities */
	char *bound;
	struct json_value *args;
	struct json_value *caps;
	unsigned asks; /* questions its server asked within it (asks.c) */
};

static void fwd_free(struct fwd *f)
{
	json_free(f->client_id);
	free(f->bound);
	json_free(f->args);
	json_free(f->caps);
	free(f);
}

static void fwd_record(const struct fwd *f, const char *outcome, const char *detail)
{
	struct json_value *fields =
	    gw_fields("server", json_new_string(f->srv->cfg->name), "method",
	              json_new_string(f->method), "outcome", json_new_string(outcome), "ms",
	              json_new_int(proc_now_ms() - f->start_ms), NULL);
	if (detail != NULL)
		json_object_set(fields, "detail", json_new_string(detail));
	audit_record(f->s->audit, "client.request", fields);
}

/* URIs in a result, to their public form */
static void publish_result(const struct gw_server *srv, enum fwd_kind kind,
                           struct json_value *result)
{
	const char *key = kind == FWD_READ ? "contents" : kind == FWD_PROMPT ? "messages" : NULL;
	const struct json_value *arr = json_get(result, key);
	if (arr == NULL || arr->kind != JSON_ARRAY)
		return;
	for (size_t i = 0; i < arr->u.arr.len; i++) {
		struct json_value *item = arr->u.arr.items[i];
		if (kind == FWD_READ) {
			publish_uri(srv, item, "uri");
			continue;
		}
		/* a prompt's message: embedded resources and resource links */
		struct json_value *content = (struct json_value *)json_get(item, "content");
		const char *type = json_get_string(content, "type");
		if (type != NULL && strcmp(type, "resource") == 0)
			publish_uri(srv, (struct json_value *)json_get(content, "resource"), "uri");
		else if (type != NULL && strcmp(type, "resource_link") == 0)
			publish_uri(srv, content, "uri");
	}
}

/* What a server that completes nothing suggests */
static struct json_value *no_completion(void)
{
	return gw_fields(
	    "completion",
	    gw_fields("values", json_new_array(), "hasMore", json_new_bool(false), NULL), NULL);
}

static void on_fwd_done(struct rpc_peer *peer, struct rpc_msg *reply, const struct mg_err *why,
                        void *data)
{
	(void)peer;
	struct fwd *f = data;
	struct session *s = f->s;
	struct gw_server *srv = f->srv;
	if (s->stopping) {
		fwd_record(f, "cancelled", "the session ended");
	} else if (reply == NULL) {
		const char *reason = srv->state != GW_READY && srv->reason != NULL
		                         ? srv->reason
		                         : (why != NULL ? mg_err_msg(why) : "no answer");
		if (srv->state == GW_READY && srv->launch.peer != NULL &&
		    !rpc_peer_closed(srv->launch.peer)) {
			/* a timeout: tell the server to stop working on it */
			struct json_value *p =
			    gw_fields("requestId", json_new_int(f->upstream_id), "reason",
			              json_new_string("timed out in mcpgate"), NULL);
			rpc_peer_send_notification(srv->launch.peer, "notifications/cancelled", p,
			                           NULL);
			json_free(p);
		}
		fwd_record(f, "error", reason);
		gw_client_error(s, f->client_id, RPC_SERVER_ERROR, "%s (server %s): %s", f->method,
		                srv->cfg->name, reason);
	} else if (reply->kind == RPC_RESULT && f->bound != NULL && gw_server_asks_by_result(srv) &&
	           json_get_string(reply->result, "resultType") != NULL &&
	           strcmp(json_get_string(reply->result, "resultType"), "input_required") == 0) {
		/* a 2026-07-28 server asks for input on a prompt or a read */
		cleanup_free char *refusal = NULL;
		struct json_value *asked = gw_round_forwarded(s, srv, f->bound, f->args, f->caps,
		                                              reply->result, &f->asks, &refusal);
		if (asked != NULL) {
			fwd_record(f, "input-required", "its server asked for input");
			gw_client_result_raw(s, f->client_id, asked);
			json_free(asked);
		} else {
			fwd_record(f, "error", refusal);
			gw_client_error(s, f->client_id, RPC_SERVER_ERROR, "%s", refusal);
		}
	} else if (reply->kind == RPC_ERROR && f->kind == FWD_COMPLETE &&
	           reply->error_code == RPC_METHOD_NOT_FOUND) {
		fwd_record(f, "ok", "the server completes nothing");
		struct json_value *none = no_completion();
		gw_client_result(s, f->client_id, none);
		json_free(none);
	} else if (reply->kind == RPC_RESULT) {
		fwd_record(f, "ok", NULL);
		/* a result is data: it says where it came from, and changes nothing */
		struct json_value *result =
		    reply->result != NULL && reply->result->kind == JSON_OBJECT
		        ? json_copy(reply->result)
		        : json_new_object();
		publish_result(srv, f->kind, result);
		tag_server(srv, result);
		if (f->kind == FWD_READ)
			gw_era_cacheable(s, result, GW_TTL_READ_MS);
		gw_secrets_redact(s, result);
		gw_client_result(s, f->client_id, result);
		json_free(result);
	} else {
		cleanup_free char *text = gw_client_forward_error(s, f->client_id, reply);
		fwd_record(f, "error", text);
	}
	fwd_free(f);
}

/* Send params (owned; already in the server's own names) to srv. bound
 * (NULL: none) names what a 2026-07-28 server's input_required answer is
 * bound to; asked, the client's params, may be the retry with its state. */
static void forward_bound(struct session *s, struct gw_server *srv, const struct json_value *id,
                          const char *method, struct json_value *params, enum fwd_kind kind,
                          const char *bound, const struct json_value *asked)
{
	struct fwd *f = xcalloc(1, sizeof(*f));
	f->s = s;
	f->srv = srv;
	f->client_id = json_copy(id);
	f->method = method;
	f->kind = kind;
	f->start_ms = proc_now_ms();
	struct json_value *up = gw_era_upstream_params(s, srv, params);
	json_free(params);
	params = up;
	if (bound != NULL) {
		f->bound = xstrdup(bound);
		f->args = json_copy(json_get(asked, "arguments"));
		f->caps = s->era == GW_ERA_MODERN || s->answered_initialize
		              ? json_copy(s->client_caps)
		              : NULL;
		const struct json_value *st = json_get(asked, "requestState");
		struct mg_err *rerr = NULL;
		if (s->era == GW_ERA_MODERN && st != NULL && st->kind == JSON_STRING &&
		    confirm_state_kind(st->u.str.ptr, st->u.str.len) == CONFIRM_ROUND &&
		    gw_round_take(s, bound, f->args, asked, params, &f->asks, &rerr) < 0) {
			/* a retry whose state is not the one mcpgate gave for this */
			fwd_record(f, "refused", mg_err_msg(rerr));
			gw_client_error(s, id, RPC_INVALID_PARAMS, "%s: %s", bound,
			                mg_err_msg(rerr));
			mg_err_free(rerr);
			json_free(params);
			fwd_free(f);
			return;
		}
	}
	cleanup_free char *leak = gw_secrets_check_leaving(srv, params);
	if (leak != NULL) {
		fwd_record(f, "refused", leak);
		gw_client_error(s, id, RPC_SERVER_ERROR, "%s", leak);
		json_free(params);
		fwd_free(f);
		return;
	}
	struct mg_err *err = NULL;
	int64_t deadline = proc_now_ms() + (int64_t)s->cfg->mcp.call_timeout * 1000;
	int r = rpc_peer_send_request(srv->launch.peer, method, params, deadline, on_fwd_done, f,
	                              &f->upstream_id, &err);
	json_free(params);
	if (r < 0) {
		fwd_record(f, "error", mg_err_msg(err));
		gw_client_error(s, id, RPC_SERVER_ERROR, "%s (server %s): %s", method,
		                srv->cfg->name, mg_err_msg(err));
		mg_err_free(err);
		fwd_free(f);
	}
}

static void forward(struct session *s, struct gw_server *srv, const struct json_value *id,
                    const char *method, struct json_value *params, enum fwd_kind kind)
{
	forward_bound(s, srv, id, method, params, kind, NULL, NULL);
}

static void on_listen_subscribed(struct rpc_peer *peer, struct rpc_msg *reply,
                                 const struct mg_err *why, void *data)
{
	(void)peer;
	struct gw_server *srv = data;
	if (reply != NULL && reply->kind == RPC_ERROR) {
		cleanup_free char *text = mcp_error_text(reply);
		mg_info("server %s: a subscription for subscriptions/listen: %s", srv->cfg->name,
		        text);
	} else if (reply == NULL && !srv->sess->stopping) {
		mg_info("server %s: a subscription for subscriptions/listen: %s", srv->cfg->name,
		        mg_err_msg(why));
	}
}

bool gw_relay_listen_subscribe(struct session *s, const char *uri, bool subscribe)
{
	const char *own = NULL;
	struct gw_server *srv = server_of_uri(s, uri, &own);
	if (srv == NULL || gw_server_modern(srv) ||
	    !cap_flag(server_cap(srv, "resources"), "subscribe"))
		return false;
	struct json_value *p = gw_fields("uri", json_new_string(own), NULL);
	int64_t deadline = proc_now_ms() + (int64_t)s->cfg->mcp.call_timeout * 1000;
	int r = rpc_peer_send_request(srv->launch.peer,
	                              subscribe ? "resources/subscribe" : "resources/unsubscribe",
	                              p, deadline, on_listen_subscribed, srv, NULL, NULL);
	json_free(p);
	return r == 0;
}

/* resources/read, resources/subscribe, resources/unsubscribe */
void gw_relay_resource(struct session *s, struct rpc_msg *msg)
{
	const char *uri = json_get_string(msg->params, "uri");
	bool read = strcmp(msg->method, "resources/read") == 0;
	if (uri == NULL) {
		gw_client_error(s, msg->id, RPC_INVALID_PARAMS, "%s needs a uri (a string)",
		                msg->method);
		return;
	}
	const char *own = NULL;
	struct gw_server *srv = server_of_uri(s, uri, &own);
	if (srv == NULL && waits_for_start(s, msg, uri, NULL))
		return;
	if (srv == NULL || server_cap(srv, "resources") == NULL) {
		struct json_value *data = gw_fields("uri", json_new_string(uri), NULL);
		gw_client_error_data(
		    s, msg->id,
		    read && s->era != GW_ERA_MODERN ? RPC_RESOURCE_NOT_FOUND : RPC_INVALID_PARAMS,
		    data, "%s: no server offered here has the resource \"%.300s\"%s", msg->method,
		    uri,
		    s->cfg->passthrough
		        ? ""
		        : " (resource URIs read mcpgate://SERVER/ and the server's own URI)");
		json_free(data);
		return;
	}
	if (!read && gw_server_modern(srv)) {
		gw_client_error(
		    s, msg->id, RPC_INVALID_PARAMS,
		    "%s: server %s speaks MCP %s, which has no %s (its subscriptions/listen "
		    "is not relayed yet)",
		    msg->method, srv->cfg->name, MCP_PROTOCOL_MODERN, msg->method);
		return;
	}
	if (!read && !cap_flag(server_cap(srv, "resources"), "subscribe")) {
		gw_client_error(s, msg->id, RPC_INVALID_PARAMS,
		                "%s: server %s does not offer subscriptions", msg->method,
		                srv->cfg->name);
		return;
	}
	struct json_value *params = json_copy(msg->params);
	json_object_set(params, "uri", json_new_string(own));
	const char *method = read ? "resources/read"
	                     : strcmp(msg->method, "resources/subscribe") == 0
	                         ? "resources/subscribe"
	                         : "resources/unsubscribe";
	cleanup_free char *bound = read ? xasprintf("resources/read %s", uri) : NULL;
	forward_bound(s, srv, msg->id, method, params, read ? FWD_READ : FWD_PLAIN, bound,
	              msg->params);
}

void gw_relay_prompt_get(struct session *s, struct rpc_msg *msg)
{
	const char *name = json_get_string(msg->params, "name");
	if (name == NULL) {
		gw_client_error(s, msg->id, RPC_INVALID_PARAMS,
		                "prompts/get needs a name (a string)");
		return;
	}
	const char *own = NULL;
	struct gw_server *srv = server_of_name(s, name, &own);
	if (srv == NULL && waits_for_start(s, msg, NULL, name))
		return;
	if (srv == NULL || server_cap(srv, "prompts") == NULL) {
		gw_client_error(s, msg->id, RPC_INVALID_PARAMS, "unknown prompt \"%.128s\"", name);
		return;
	}
	struct json_value *params = json_copy(msg->params);
	json_object_set(params, "name", json_new_string(own));
	cleanup_free char *bound = xasprintf("prompts/get %s", name);
	forward_bound(s, srv, msg->id, "prompts/get", params, FWD_PROMPT, bound, msg->params);
}

void gw_relay_complete(struct session *s, struct rpc_msg *msg)
{
	const struct json_value *ref = json_get(msg->params, "ref");
	const char *type = json_get_string(ref, "type");
	bool prompt = type != NULL && strcmp(type, "ref/prompt") == 0;
	bool resource = type != NULL && strcmp(type, "ref/resource") == 0;
	const char *field = prompt ? "name" : "uri";
	const char *pub = json_get_string(ref, field);
	if ((!prompt && !resource) || pub == NULL || json_get(msg->params, "argument") == NULL) {
		gw_client_error(s, msg->id, RPC_INVALID_PARAMS,
		                "completion/complete needs a ref (ref/prompt with a name, or "
		                "ref/resource with a uri) and an argument");
		return;
	}
	const char *own = NULL;
	struct gw_server *srv = prompt ? server_of_name(s, pub, &own) : server_of_uri(s, pub, &own);
	if (srv == NULL && waits_for_start(s, msg, prompt ? NULL : pub, prompt ? pub : NULL))
		return;
	if (srv == NULL || server_cap(srv, prompt ? "prompts" : "resources") == NULL) {
		gw_client_error(s, msg->id, RPC_INVALID_PARAMS,
		                "completion/complete: unknown %s \"%.300s\"",
		                prompt ? "prompt" : "resource", pub);
		return;
	}
	/* before 2025-03-26 no capability said so: such a server is asked */
	enum mcp_rev rev = mcp_rev_of(srv->info.protocol_version);
	bool declared = mcp_rev_has(rev, MCP_HAS_COMPLETIONS_CAP);
	if (declared && server_cap(srv, "completions") == NULL) {
		/* the server completes nothing: no suggestions */
		struct json_value *none = no_completion();
		gw_client_result(s, msg->id, none);
		json_free(none);
		return;
	}
	struct json_value *params = json_copy(msg->params);
	struct json_value *r = json_copy(ref);
	json_object_set(r, field, json_new_string(own));
	json_object_set(params, "ref", r);
	mcp_rev_complete_params(rev, params);
	forward(s, srv, msg->id, "completion/complete", params,
	        declared ? FWD_PLAIN : FWD_COMPLETE);
}

/* ---- logging/setLevel ------------------------------------------------------ */

static void on_level_done(struct rpc_peer *peer, struct rpc_msg *reply, const struct mg_err *why,
                          void *data)
{
	(void)peer;
	struct gw_server *srv = data;
	if (reply != NULL && reply->kind == RPC_ERROR) {
		cleanup_free char *text = mcp_error_text(reply);
		mg_info("server %s: logging/setLevel: %s", srv->cfg->name, text);
	} else if (reply == NULL && !srv->sess->stopping) {
		mg_info("server %s: logging/setLevel: %s", srv->cfg->name, mg_err_msg(why));
	}
}

/* The client's level to every ready server that declared logging (only
 * to only, when not NULL: one that just became ready) */
static void send_level(struct session *s, struct gw_server *only)
{
	struct json_value *params = gw_fields("level", json_new_string(s->log_level), NULL);
	struct json_value *sent = json_new_array();
	int64_t deadline = proc_now_ms() + (int64_t)s->cfg->mcp.call_timeout * 1000;
	for (size_t i = 0; i < s->nservers; i++) {
		struct gw_server *srv = &s->servers[i];
		if ((only != NULL && srv != only) || !ready(srv) ||
		    server_cap(srv, "logging") == NULL)
			continue;
		if (gw_server_modern(srv)) {
			gw_server_log_level(srv, s->log_level);
			json_array_push(sent, json_new_string(srv->cfg->name));
			continue;
		}
		struct mg_err *err = NULL;
		if (rpc_peer_send_request(srv->launch.peer, "logging/setLevel", params, deadline,
		                          on_level_done, srv, NULL, &err) < 0) {
			mg_warn("server %s: logging/setLevel: %s", srv->cfg->name, mg_err_msg(err));
			mg_err_free(err);
			continue;
		}
		json_array_push(sent, json_new_string(srv->cfg->name));
	}
	audit_record(s->audit, "client.set_level",
	             gw_fields("level", json_new_string(s->log_level), "servers", sent, NULL));
	json_free(params);
}

void gw_relay_set_level(struct session *s, struct rpc_msg *msg)
{
	int rank = gw_log_level_rank(json_get_string(msg->params, "level"));
	if (rank < 0) {
		gw_client_error(
		    s, msg->id, RPC_INVALID_PARAMS,
		    "logging/setLevel needs a level: debug, info, notice, warning, error, "
		    "critical, alert or emergency");
		return;
	}
	snprintf(s->log_level, sizeof(s->log_level), "%s", gw_log_level_name(rank));
	gw_client_result(s, msg->id, NULL);
	send_level(s, NULL); /* a server not ready yet gets it when it is */
}

void gw_relay_server_ready(struct gw_server *srv)
{
	struct session *s = srv->sess;
	if (s->log_level[0] != '\0')
		send_level(s, srv);
	/* its prompts and resources join the merged lists: a client that may
	 * have listed them already hears they changed */
	static const struct {
		const char *cap, *method;
		enum gw_listen_kind kind;
	} lists_of[] = {
	    {"prompts", "notifications/prompts/list_changed", GW_LISTEN_PROMPTS},
	    {"resources", "notifications/resources/list_changed", GW_LISTEN_RESOURCES},
	};
	for (size_t i = 0; i < sizeof(lists_of) / sizeof(lists_of[0]); i++) {
		if (server_cap(srv, lists_of[i].cap) == NULL || !s->listed[lists_of[i].kind])
			continue;
		if (s->era == GW_ERA_MODERN)
			gw_listens_notify(s, lists_of[i].kind);
		else
			notify_client(s, lists_of[i].method, NULL);
	}
}

/* ---- the client's requests ------------------------------------------------- */

static void list_request(struct session *s, const struct rpc_msg *msg, enum list_kind kind)
{
	list_start(s, kind, msg->id, json_get(msg->params, "cursor"));
}

void gw_relay_resources_list(struct session *s, struct rpc_msg *msg)
{
	list_request(s, msg, LIST_RESOURCES);
}

void gw_relay_templates_list(struct session *s, struct rpc_msg *msg)
{
	list_request(s, msg, LIST_TEMPLATES);
}

void gw_relay_prompts_list(struct session *s, struct rpc_msg *msg)
{
	list_request(s, msg, LIST_PROMPTS);
}

void gw_relay_roots_changed(struct session *s)
{
	for (size_t i = 0; i < s->nservers; i++) {
		struct gw_server *srv = &s->servers[i];
		if (ready(srv) && srv->cfg->relay_roots && !gw_server_modern(srv))
			rpc_peer_send_notification(srv->launch.peer,
			                           "notifications/roots/list_changed", NULL, NULL);
	}
}

/* ---- the servers' requests to the client ------------------------------------ */

/* A server's request with the client */
struct gw_relayed {
	struct session *s;
	struct gw_server *srv;
	struct json_value *server_id; /* the server's id, a copy */
	char *server_key;
	int64_t client_id; /* ours, on the client's peer */
	enum relay_cap which;
	int64_t start_ms;
	struct gw_relayed *next, *prev;
};

static void relayed_unlink(struct gw_relayed *r)
{
	struct session *s = r->s;
	if (r->prev != NULL)
		r->prev->next = r->next;
	else if (s->relayed == r)
		s->relayed = r->next;
	if (r->next != NULL)
		r->next->prev = r->prev;
	r->next = r->prev = NULL;
}

static void relayed_free(struct gw_relayed *r)
{
	json_free(r->server_id);
	free(r->server_key);
	free(r);
}

static void answered_record(const struct gw_relayed *r, const char *outcome, const char *action)
{
	struct json_value *f =
	    gw_fields("server", json_new_string(r->srv->cfg->name), "method",
	              json_new_string(relays[r->which].method), "outcome", json_new_string(outcome),
	              "ms", json_new_int(proc_now_ms() - r->start_ms), NULL);
	if (action != NULL)
		json_object_set(f, "action", json_new_string(action));
	audit_record_by(r->s->audit, r->srv->cfg->name, "server.request.answered", f);
}

/* The answer goes to the server with its own id */
char *gw_relay_fit_answer(const struct gw_server *srv, const char *method,
                          struct json_value *answer)
{
	if (strcmp(method, relays[RELAY_SAMPLING].method) != 0)
		return NULL;
	return mcp_rev_sampling_answer(mcp_rev_of(srv->info.protocol_version), answer);
}

static void answer_server(struct gw_relayed *r, const struct rpc_msg *reply,
                          const struct mg_err *why)
{
	struct gw_server *srv = r->srv;
	struct rpc_peer *peer = srv->launch.peer;
	const char *method = relays[r->which].method;
	if (reply != NULL && reply->kind == RPC_RESULT) {
		/* the answer in the server's revision, or why it cannot be */
		struct json_value *result = json_copy(reply->result);
		cleanup_free char *unfit = gw_relay_fit_answer(srv, method, result);
		if (unfit != NULL) {
			answered_record(r, "withheld", NULL);
			audit_record_by(r->s->audit, srv->cfg->name, "server.request.refused",
			                gw_fields("server", json_new_string(srv->cfg->name),
			                          "method", json_new_string(method), "reason",
			                          json_new_string("revision"), "detail",
			                          json_new_string(unfit), NULL));
			cleanup_free char *text =
			    xasprintf("mcpgate withheld the client's answer: %s", unfit);
			rpc_peer_send_error(peer, r->server_id, RPC_INTERNAL_ERROR, text, NULL,
			                    NULL);
			json_free(result);
			return;
		}
		cleanup_free char *leak = gw_secrets_check_leaving(srv, result);
		if (leak != NULL) {
			json_free(result);
			answered_record(r, "withheld", NULL);
			audit_record_by(r->s->audit, srv->cfg->name, "server.request.refused",
			                gw_fields("server", json_new_string(srv->cfg->name),
			                          "method", json_new_string(method), "reason",
			                          json_new_string(leak), NULL));
			rpc_peer_send_error(
			    peer, r->server_id, RPC_INTERNAL_ERROR,
			    "mcpgate withheld the client's answer: it holds a stored "
			    "secret this server may not receive",
			    NULL, NULL);
			return;
		}
		answered_record(r, "result",
		                r->which == RELAY_ELICITATION ? json_get_string(result, "action")
		                                              : NULL);
		rpc_peer_send_result(peer, r->server_id, result, NULL);
		json_free(result);
	} else if (reply != NULL) {
		answered_record(r, "error", NULL);
		cleanup_free char *msg =
		    xstrndup(reply->error_message != NULL ? reply->error_message : "",
		             reply->error_message_len);
		rpc_peer_send_error(peer, r->server_id, reply->error_code, msg, reply->error_data,
		                    NULL);
	} else {
		answered_record(r, "failed", why != NULL ? mg_err_msg(why) : NULL);
		cleanup_free char *msg =
		    xasprintf("no answer from the client to %s: %s", method,
		              why != NULL ? mg_err_msg(why) : "the client is gone");
		rpc_peer_send_error(peer, r->server_id, RPC_INTERNAL_ERROR, msg, NULL, NULL);
	}
}

static void on_client_answer(struct rpc_peer *peer, struct rpc_msg *reply, const struct mg_err *why,
                             void *data)
{
	(void)peer;
	struct gw_relayed *r = data;
	relayed_unlink(r);
	if (!r->s->stopping && ready(r->srv))
		answer_server(r, reply, why);
	else
		answered_record(r, "dropped",
		                r->s->stopping ? "the session ended" : "the server is not running");
	relayed_free(r);
}

static void refuse_request(struct gw_server *srv, const struct rpc_msg *msg, const char *reason,
                           const char *text)
{
	audit_record_by(srv->sess->audit, srv->cfg->name, "server.request.refused",
	                gw_fields("server", json_new_string(srv->cfg->name), "method",
	                          json_new_string(msg->method), "reason", json_new_string(reason),
	                          NULL));
	rpc_peer_send_error(srv->launch.peer, msg->id, RPC_METHOD_NOT_FOUND, text, NULL, NULL);
}

/* The texts of an elicitation's form that a client shows the person (a
 * field's title and description, the names of its choices), each through
 * the one renderer: a server's form cannot break a line or hide a word */
static void shown_schema(struct json_value *v, int depth)
{
	if (v == NULL || depth > 16)
		return;
	if (v->kind == JSON_ARRAY)
		for (size_t i = 0; i < v->u.arr.len; i++)
			shown_schema(v->u.arr.items[i], depth + 1);
	if (v->kind != JSON_OBJECT)
		return;
	for (size_t i = 0; i < v->u.obj.len; i++) {
		struct json_member *m = &v->u.obj.items[i];
		bool text = strcmp(m->key, "title") == 0 || strcmp(m->key, "description") == 0;
		if (text && m->value->kind == JSON_STRING) {
			char *shown = mg_shown(m->value->u.str.ptr, m->value->u.str.len);
			json_free(m->value);
			m->value = json_new_string(shown);
			free(shown);
		} else if (strcmp(m->key, "enumNames") == 0 && m->value->kind == JSON_ARRAY) {
			for (size_t k = 0; k < m->value->u.arr.len; k++) {
				struct json_value **item = &m->value->u.arr.items[k];
				if ((*item)->kind != JSON_STRING)
					continue;
				char *shown = mg_shown((*item)->u.str.ptr, (*item)->u.str.len);
				json_free(*item);
				*item = json_new_string(shown);
				free(shown);
			}
		} else {
			shown_schema(m->value, depth + 1);
		}
	}
}

/* Why an elicitation cannot be shown as it is, or NULL: a field named with
 * characters that hide or break text (its name is the client's label when
 * it has no title, and its answer's key), or a URL that is not printable
 * ASCII */
static const char *elicitation_unshowable(const struct json_value *params)
{
	const char *url = json_get_string(params, "url");
	for (const char *p = url; p != NULL && *p != '\0'; p++)
		if (*p <= 0x20 || *p >= 0x7f)
			return "its url holds a character that is not printable ASCII";
	const struct json_value *props =
	    json_get(json_get(params, "requestedSchema"), "properties");
	for (size_t i = 0; props != NULL && props->kind == JSON_OBJECT && i < props->u.obj.len;
	     i++) {
		const struct json_member *m = &props->u.obj.items[i];
		cleanup_free char *shown = mg_shown(m->key, m->keylen);
		if (strcmp(shown, m->key) != 0)
			return "a field of its form is named with characters that hide or break "
			       "text";
	}
	return NULL;
}

/* The server's params as the client gets them: the person sees which server
 * asks, and a server never widens what the client shares */
static struct json_value *client_params(const struct gw_server *srv, enum relay_cap which,
                                        const struct json_value *params)
{
	struct json_value *p =
	    params != NULL && params->kind == JSON_OBJECT ? json_copy(params) : json_new_object();
	if (which == RELAY_SAMPLING) {
		/* the client sees one server, mcpgate: "thisServer" or "allServers"
		 * would hand this server what the others said */
		const char *ctx = json_get_string(p, "includeContext");
		if (ctx != NULL && strcmp(ctx, "none") != 0)
			json_object_set(p, "includeContext", json_new_string("none"));
	} else if (which == RELAY_ELICITATION) {
		/* one line, every hiding character escaped: the server's words
		 * cannot push "Server NAME asks:" out of view and pose as mcpgate */
		const struct json_value *message = json_get(p, "message");
		cleanup_free char *shown = message != NULL && message->kind == JSON_STRING
		                               ? mg_shown(message->u.str.ptr, message->u.str.len)
		                               : xstrdup("");
		cleanup_free char *tagged = xasprintf("Server %s asks: %s", srv->cfg->name, shown);
		json_object_set(p, "message", json_new_string(tagged));
		shown_schema((struct json_value *)json_get(p, "requestedSchema"), 0);
	}
	tag_server(srv, p);
	gw_secrets_redact(srv->sess, p);
	return p;
}

/* Whether srv may put method (with params) to the client, whose
 * capabilities are caps (NULL: it declared none): the relay's one rule,
 * for a server's request and for a 2026-07-28 server's input request alike.
 * 0 with *which; -1 with the refusal's text (allocated) and a reason word. */
static int input_allowed(const struct gw_server *srv, const struct json_value *caps,
                         const char *method, const struct json_value *params, enum relay_cap *which,
                         char **text, const char **reason)
{
	const char *name = srv->cfg->name;
	enum relay_cap w = RELAY_SAMPLING;
	while (w <= RELAY_ROOTS && (method == NULL || strcmp(method, relays[w].method) != 0))
		w++;
	if (w > RELAY_ROOTS) {
		*text = xasprintf("mcpgate refused %.64s from server %s: it relays only "
		                  "sampling/createMessage, elicitation/create and roots/list",
		                  method != NULL ? method : "a request without a method", name);
		*reason = "method";
		return -1;
	}
	const struct relay_spec *spec = &relays[w];
	/* a server asks only what its own revision has */
	cleanup_free char *off =
	    mcp_rev_request_refusal(mcp_rev_of(srv->info.protocol_version), method, params);
	if (off != NULL) {
		*which = w;
		*text = xasprintf("mcpgate refused %s from server %s: %s", spec->method, name, off);
		*reason = "revision";
		return -1;
	}
	bool allowed = w == RELAY_SAMPLING      ? srv->cfg->relay_sampling
	               : w == RELAY_ELICITATION ? srv->cfg->relay_elicitation
	                                        : srv->cfg->relay_roots;
	const struct json_value *declared_cap = json_get(caps, spec->cap);
	bool declared = declared_cap != NULL && declared_cap->kind == JSON_OBJECT;
	const char *mode = w == RELAY_ELICITATION ? json_get_string(params, "mode") : NULL;
	bool url = mode != NULL && strcmp(mode, "url") == 0;
	if (declared && w == RELAY_ELICITATION) {
		/* {} is the form mode alone; url mode is declared by name */
		declared =
		    url ? json_get(declared_cap, "url") != NULL
		        : declared_cap->u.obj.len == 0 || json_get(declared_cap, "form") != NULL;
	}
	*which = w;
	const char *unshowable = w == RELAY_ELICITATION ? elicitation_unshowable(params) : NULL;
	if (declared && allowed && unshowable != NULL) {
		*text = xasprintf("mcpgate refused elicitation/create from server %s: %s", name,
		                  unshowable);
		*reason = "unshowable";
		return -1;
	}
	if (declared && allowed)
		return 0;
	cleanup_free char *cap = w == RELAY_ELICITATION
	                             ? xasprintf("elicitation (%s mode)", url ? "url" : "form")
	                             : xstrdup(spec->cap);
	char *t = xasprintf("mcpgate refused %s from server %s: %s%s%s", spec->method, name,
	                    declared ? "" : "the client did not declare the ", declared ? "" : cap,
	                    declared ? "" : " capability");
	if (!allowed) {
		char *more = xasprintf("%s%sits entry in mcp.toml does not allow it (add "
		                       "\"%s\" to relay = [...])",
		                       t, declared ? "" : ", and ", spec->cap);
		free(t);
		t = more;
	}
	*text = t;
	*reason = !declared && !allowed ? "client and mcp.toml" : !declared ? "client" : "mcp.toml";
	return -1;
}

struct json_value *gw_relay_input_params(const struct gw_server *srv, const struct json_value *caps,
                                         const char *method, const struct json_value *params,
                                         char **refusal)
{
	enum relay_cap which;
	const char *reason = NULL;
	*refusal = NULL;
	if (input_allowed(srv, caps, method, params, &which, refusal, &reason) < 0) {
		audit_record_by(srv->sess->audit, srv->cfg->name, "server.request.refused",
		                gw_fields("server", json_new_string(srv->cfg->name), "method",
		                          json_new_string(method != NULL ? method : ""), "reason",
		                          json_new_string(reason), "via",
		                          json_new_string("input_required"), NULL));
		return NULL;
	}
	return client_params(srv, which, params);
}

bool gw_relay_server_request(struct gw_server *srv, struct rpc_msg *msg)
{
	enum relay_cap which = RELAY_SAMPLING;
	while (which <= RELAY_ROOTS && strcmp(msg->method, relays[which].method) != 0)
		which++;
	if (which > RELAY_ROOTS)
		return false;
	const struct relay_spec *spec = &relays[which];
	const char *name = srv->cfg->name;
	if (srv->state != GW_READY) {
		/* during start-up this runs on the server's own thread: the
		 * client's side is not to be touched from here */
		cleanup_free char *text = xasprintf(
		    "mcpgate refused %s from server %s: it asked before its start-up finished",
		    spec->method, name);
		refuse_request(srv, msg, "starting", text);
		return true;
	}
	struct session *s = srv->sess;
	if (s->era == GW_ERA_MODERN) {
		/* 2026-07-28 has no requests from server to client: they become
		 * input requests of the one call in flight (rounds.c) */
		const char *why = gw_park_server_request(srv, msg);
		if (why == NULL)
			return true;
		cleanup_free char *text =
		    xasprintf("mcpgate refused %s from server %s: its client speaks MCP %s, where "
		              "a server asks within a call, and %s",
		              spec->method, name, MCP_PROTOCOL_MODERN, why);
		refuse_request(srv, msg, "client era", text);
		return true;
	}
	cleanup_free char *refusal = NULL;
	const char *reason = NULL;
	if (input_allowed(srv, s->answered_initialize ? s->client_caps : NULL, msg->method,
	                  msg->params, &which, &refusal, &reason) < 0) {
		refuse_request(srv, msg, reason, refusal);
		return true;
	}
	/* the call it asks within, when one alone of its is in flight: the
	 * limit per call holds for it; the session's holds always */
	struct gw_call *within = NULL;
	size_t in_flight = 0;
	for (struct gw_call *c = s->calls; c != NULL; c = c->next)
		if (c->server == srv && !c->cancelled) {
			within = c;
			in_flight++;
		}
	if (gw_asks_take(srv, in_flight == 1 ? &within->asks : NULL, 1, &refusal) < 0) {
		refuse_request(srv, msg, "too many", refusal);
		return true;
	}
	struct gw_relayed *r = xcalloc(1, sizeof(*r));
	r->s = s;
	r->srv = srv;
	r->server_id = json_copy(msg->id);
	r->server_key = rpc_id_key(msg->id);
	r->which = which;
	r->start_ms = proc_now_ms();
	struct json_value *params = client_params(srv, which, msg->params);
	struct mg_err *err = NULL;
	int64_t deadline = proc_now_ms() + (int64_t)s->cfg->mcp.call_timeout * 1000;
	int rc = rpc_peer_send_request(s->client, spec->method, params, deadline, on_client_answer,
	                               r, &r->client_id, &err);
	json_free(params);
	if (rc < 0) {
		cleanup_free char *text =
		    xasprintf("mcpgate cannot reach the client: %s", mg_err_msg(err));
		mg_err_free(err);
		refuse_request(srv, msg, "client unreachable", text);
		relayed_free(r);
		return true;
	}
	audit_record_by(s->audit, srv->cfg->name, "server.request.relayed",
	                gw_fields("server", json_new_string(name), "method",
	                          json_new_string(spec->method), NULL));
	r->next = s->relayed;
	if (s->relayed != NULL)
		s->relayed->prev = r;
	s->relayed = r;
	return true;
}

/* notifications/cancelled from a server, for a request of its with the client */
static void cancel_relayed(struct gw_server *srv, const struct json_value *params)
{
	struct session *s = srv->sess;
	cleanup_free char *key = rpc_id_key(json_get(params, "requestId"));
	if (key == NULL)
		return;
	for (struct gw_relayed *r = s->relayed; r != NULL; r = r->next) {
		if (r->srv != srv || strcmp(r->server_key, key) != 0)
			continue;
		cleanup_free char *ours = rpc_id_key_int(r->client_id);
		rpc_peer_cancel(s->client, ours);
		struct json_value *p = gw_fields("requestId", json_new_int(r->client_id), NULL);
		const char *reason = json_get_string(params, "reason");
		if (reason != NULL)
			json_object_set(p, "reason", json_new_string(reason));
		gw_secrets_redact(s, p);
		rpc_peer_send_notification(s->client, "notifications/cancelled", p, NULL);
		json_free(p);
		relayed_unlink(r);
		answered_record(r, "cancelled", NULL);
		relayed_free(r);
		return;
	}
}

/* ---- what servers say --------------------------------------------------------- */

void gw_relay_server_cancelled(struct gw_server *srv, struct rpc_msg *msg)
{
	cancel_relayed(srv, msg->params);
}

void gw_relay_resource_updated(struct gw_server *srv, struct rpc_msg *msg)
{
	struct session *s = srv->sess;
	if (json_get_string(msg->params, "uri") == NULL)
		return;
	struct json_value *p = json_copy(msg->params);
	publish_uri(srv, p, "uri");
	gw_secrets_redact(s, p);
	if (s->era == GW_ERA_MODERN)
		gw_listens_updated(s, json_get_string(p, "uri"));
	else
		notify_client(s, msg->method, p);
	json_free(p);
}

void gw_relay_list_changed(struct gw_server *srv, struct rpc_msg *msg)
{
	struct session *s = srv->sess;
	if (s->era == GW_ERA_MODERN)
		gw_listens_notify(s, strcmp(msg->method, "notifications/prompts/list_changed") == 0
		                         ? GW_LISTEN_PROMPTS
		                         : GW_LISTEN_RESOURCES);
	else
		notify_client(s, msg->method, NULL);
}

void gw_relay_elicitation_complete(struct gw_server *srv, struct rpc_msg *msg)
{
	struct session *s = srv->sess;
	const struct json_value *e = json_get(s->client_caps, "elicitation");
	/* a server of a revision without url mode asked none to complete */
	if (s->era == GW_ERA_MODERN || !srv->cfg->relay_elicitation || json_get(e, "url") == NULL ||
	    !mcp_rev_has(mcp_rev_of(srv->info.protocol_version), MCP_HAS_URL_ELICITATION) ||
	    msg->params == NULL || msg->params->kind != JSON_OBJECT)
		return;
	struct json_value *p = json_copy(msg->params);
	gw_secrets_redact(s, p);
	notify_client(s, msg->method, p);
	json_free(p);
}
