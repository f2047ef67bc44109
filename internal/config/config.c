/* mcp.toml and config.toml into struct cfg: the schema of every table, the
 * rules that join keys (transport, credential and position, network and
 * network_private), and the report that holds every error at once.
 * The checks of single values live in config_check.c. */
#define _GNU_SOURCE
#include "internal/config/config.h"

#include "egress/addr.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/num.h"
#include "internal/base/xalloc.h"
#include "internal/config/config-internal.h"
#include "internal/debian/debian.h"
#include "internal/toml/toml.h"

/* errors beyond this many are counted, not listed */
#define DIAG_LIST_MAX 200

enum cfg_file { FILE_MCP, FILE_CONFIG };

struct diag {
	enum cfg_file file;
	unsigned line; /* 0: msg is whole (a TOML syntax error, with its own place) */
	unsigned col;
	size_t seq;
	char *msg;
};

struct server_name {
	const char *name;
	unsigned line;
};

struct ctx {
	const char *names[2];
	enum cfg_file file;
	struct diag *diags;
	size_t ndiags;
	size_t cap;
	const char *home;
	struct server_name *seen; /* valid server names so far */
	size_t nseen;
	/* the public suffix list, read at the first wildcard entry */
	bool suffixes_tried;
	struct cfg_suffixes *suffixes;
	char *suffixes_path;
	char *suffixes_error; /* why it could not be read, when it could not */
};

static struct cfg_pos pos_of(struct toml_pos p)
{
	return (struct cfg_pos){p.line, p.col};
}

static void diag_add(struct ctx *c, enum cfg_file file, unsigned line, unsigned col, char *msg)
{
	if (c->ndiags == c->cap) {
		c->cap = c->cap != 0 ? c->cap * 2 : 16;
		c->diags = xreallocarray(c->diags, c->cap, sizeof(*c->diags));
	}
	c->diags[c->ndiags] = (struct diag){file, line, col, c->ndiags, msg};
	c->ndiags++;
}

__attribute__((format(printf, 3, 4))) static void diag(struct ctx *c, struct toml_pos pos,
                                                       const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = xvasprintf(fmt, ap);
	va_end(ap);
	/* a value always has a place; keep line 0 for whole messages */
	diag_add(c, c->file, pos.line != 0 ? pos.line : 1, pos.col, msg);
}

/* `WHAT "VALUE" reason`, as the checks of config_check.c write it */
__attribute__((format(printf, 5, 6))) static void diag_value(struct ctx *c, struct toml_pos pos,
                                                             const char *what, const char *value,
                                                             const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *reason = xvasprintf(fmt, ap);
	va_end(ap);
	char *q = cfg_quote(value, strlen(value));
	diag(c, pos, "%s %s %s", what, q, reason);
	free(q);
	free(reason);
}

/* a failed check's message, moved into the list */
static void diag_err(struct ctx *c, struct toml_pos pos, struct mg_err **e)
{
	diag(c, pos, "%s", mg_err_msg(*e));
	mg_err_clear(e);
}

static int diag_cmp(const void *pa, const void *pb)
{
	const struct diag *a = pa, *b = pb;
	if (a->file != b->file)
		return a->file < b->file ? -1 : 1;
	if (a->line != b->line)
		return a->line < b->line ? -1 : 1;
	if (a->col != b->col)
		return a->col < b->col ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int diag_report(struct ctx *c, struct mg_err **err)
{
	qsort(c->diags, c->ndiags, sizeof(*c->diags), diag_cmp);
	struct mg_buf b = MG_BUF_INIT(1u << 20);
	size_t listed = 0;
	for (size_t i = 0; i < c->ndiags && i < DIAG_LIST_MAX; i++) {
		const struct diag *d = &c->diags[i];
		int r = d->line == 0 ? mg_buf_printf(&b, NULL, "%s%s", i ? "\n" : "", d->msg)
		                     : mg_buf_printf(&b, NULL, "%s%s:%u:%u: %s", i ? "\n" : "",
		                                     c->names[d->file], d->line, d->col, d->msg);
		if (r < 0)
			break;
		listed++;
	}
	if (listed < c->ndiags)
		mg_buf_printf(&b, NULL, "\n(%zu more errors)", c->ndiags - listed);
	mg_err_set(err, "%s", mg_buf_str(&b));
	mg_buf_free(&b);
	return -1;
}

static void ctx_free(struct ctx *c)
{
	for (size_t i = 0; i < c->ndiags; i++)
		free(c->diags[i].msg);
	free(c->diags);
	free(c->seen);
	cfg_suffixes_free(c->suffixes);
	free(c->suffixes_path);
	free(c->suffixes_error);
}

/* ---- keys and types ------------------------------------------------------ */

enum scope { SCOPE_ANY, SCOPE_CONTAINER, SCOPE_REMOTE };

struct key_spec {
	const char *name;
	enum toml_kind kind;
	const char *expect; /* "a string", "an array of strings" */
	enum scope scope;
};

#define KEYS_MAX 32

/* the keys of one table: kv[i] is set when spec i was written with the
 * right type; written[i] when it was written at all (present[i]) */
struct keys {
	const struct toml_kv *kv[KEYS_MAX];
	const struct toml_kv *written[KEYS_MAX];
	bool present[KEYS_MAX];
};

/* edit distance, ignoring case, of two short strings */
static size_t edit_distance(const char *a, size_t al, const char *b)
{
	size_t bl = strlen(b);
	size_t row[KEYS_MAX * 4 + 1];
	if (al > 32 || bl > 32)
		return (size_t)-1;
	for (size_t j = 0; j <= bl; j++)
		row[j] = j;
	for (size_t i = 1; i <= al; i++) {
		size_t diag_prev = row[0];
		row[0] = i;
		for (size_t j = 1; j <= bl; j++) {
			char x = a[i - 1], y = b[j - 1];
			if (x >= 'A' && x <= 'Z')
				x = (char)(x - 'A' + 'a');
			size_t best = diag_prev + (x != y);
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag_prev = row[j];
			row[j] = best;
		}
	}
	return row[bl];
}

/* ` (did you mean "image"?)` or "" */
static char *suggest(const char *key, size_t keylen, const struct key_spec *specs, size_t n)
{
	size_t best = (size_t)-1, at = 0;
	for (size_t i = 0; i < n; i++) {
		size_t d = edit_distance(key, keylen, specs[i].name);
		if (d < best) {
			best = d;
			at = i;
		}
	}
	size_t limit = keylen <= 4 ? 1 : 2;
	if (best > limit)
		return xstrdup("");
	return xasprintf(" (did you mean \"%s\"?)", specs[at].name);
}

static void diag_unknown(struct ctx *c, const struct toml_kv *kv, const char *where,
                         const struct key_spec *specs, size_t n)
{
	char *q = cfg_quote(kv->key, kv->keylen);
	char *hint = suggest(kv->key, kv->keylen, specs, n);
	diag(c, kv->keypos, "unknown key %s %s%s", q, where, hint);
	free(hint);
	free(q);
}

static void match_keys(struct ctx *c, const struct toml_value *t, const struct key_spec *specs,
                       size_t n, const char *where, struct keys *k)
{
	memset(k, 0, sizeof(*k));
	for (size_t i = 0; i < t->u.table.len; i++) {
		const struct toml_kv *kv = &t->u.table.items[i];
		size_t s = 0;
		while (s < n && !(strlen(specs[s].name) == kv->keylen &&
		                  memcmp(specs[s].name, kv->key, kv->keylen) == 0))
			s++;
		if (s == n) {
			diag_unknown(c, kv, where, specs, n);
			continue;
		}
		k->present[s] = true;
		k->written[s] = kv;
		if (kv->value->kind != specs[s].kind) {
			diag(c, kv->value->pos, "\"%s\" must be %s, not %s", specs[s].name,
			     specs[s].expect, toml_kind_name(kv->value->kind));
			continue;
		}
		k->kv[s] = kv;
	}
}

/* the text of a string value, or NULL (diagnosed) when it holds a NUL */
static const char *str_of(struct ctx *c, const char *key, const struct toml_value *v)
{
	if (memchr(v->u.str.ptr, '\0', v->u.str.len) != NULL) {
		diag(c, v->pos, "\"%s\" must not hold a NUL character", key);
		return NULL;
	}
	return v->u.str.ptr;
}

/* an entry of an array of strings, or NULL (diagnosed) */
static const char *entry_of(struct ctx *c, const char *key, const struct toml_value *v)
{
	if (v->kind != TOML_STRING) {
		diag(c, v->pos, "\"%s\" entries must be strings, not %s", key,
		     toml_kind_name(v->kind));
		return NULL;
	}
	if (memchr(v->u.str.ptr, '\0', v->u.str.len) != NULL) {
		diag(c, v->pos, "\"%s\" entries must not hold a NUL character", key);
		return NULL;
	}
	return v->u.str.ptr;
}

/* ---- [[server]] ----------------------------------------------------------- */

enum server_key {
	K_NAME,
	K_TRANSPORT,
	K_IMAGE,
	K_NETWORK,
	K_NETWORK_PRIVATE,
	K_NETWORK_SEND_MAX,
	K_MOUNTS,
	K_COMMAND,
	K_ARGS,
	K_CREDENTIAL,
	K_POSITION,
	K_MEMORY,
	K_PIDS,
	K_USER,
	K_URL,
	K_CA_FILE,
	K_WORKSPACES,
	K_MANIFEST,
	K_RELAY,
	K_ACCEPT_UNENFORCED,
	K_INSTANCE,
	K_START,
	K_PACKAGES,
	K_HOME,
	K_ENABLED,
	K_ENV,
	K_CONNECT,
	K_TOOLS,
	K_SERVER_COUNT,
};

static const struct key_spec server_keys[K_SERVER_COUNT] = {
    [K_NAME] = {"name", TOML_STRING, "a string", SCOPE_ANY},
    [K_TRANSPORT] = {"transport", TOML_STRING, "a string", SCOPE_ANY},
    [K_IMAGE] = {"image", TOML_STRING, "a string", SCOPE_CONTAINER},
    [K_NETWORK] = {"network", TOML_ARRAY, "an array of strings", SCOPE_CONTAINER},
    [K_NETWORK_PRIVATE] = {"network_private", TOML_ARRAY, "an array of strings", SCOPE_CONTAINER},
    [K_NETWORK_SEND_MAX] = {"network_send_max", TOML_STRING, "a string", SCOPE_CONTAINER},
    [K_MOUNTS] = {"mounts", TOML_ARRAY, "an array of strings", SCOPE_CONTAINER},
    [K_COMMAND] = {"command", TOML_ARRAY, "an array of strings", SCOPE_CONTAINER},
    [K_ARGS] = {"args", TOML_ARRAY, "an array of strings", SCOPE_CONTAINER},
    [K_CREDENTIAL] = {"credential", TOML_STRING, "a string", SCOPE_ANY},
    [K_POSITION] = {"position", TOML_STRING, "a string", SCOPE_ANY},
    [K_MEMORY] = {"memory", TOML_STRING, "a string", SCOPE_CONTAINER},
    [K_PIDS] = {"pids", TOML_INTEGER, "an integer", SCOPE_CONTAINER},
    [K_USER] = {"user", TOML_STRING, "a string", SCOPE_CONTAINER},
    [K_URL] = {"url", TOML_STRING, "a string", SCOPE_REMOTE},
    [K_CA_FILE] = {"ca_file", TOML_STRING, "a string", SCOPE_REMOTE},
    [K_WORKSPACES] = {"workspaces", TOML_ARRAY, "an array of strings", SCOPE_ANY},
    [K_MANIFEST] = {"manifest", TOML_STRING, "a string", SCOPE_ANY},
    [K_RELAY] = {"relay", TOML_ARRAY, "an array of strings", SCOPE_ANY},
    [K_ACCEPT_UNENFORCED] = {"accept_unenforced", TOML_ARRAY, "an array of strings",
                             SCOPE_CONTAINER},
    [K_INSTANCE] = {"instance", TOML_STRING, "a string", SCOPE_CONTAINER},
    [K_START] = {"start", TOML_STRING, "a string", SCOPE_ANY},
    [K_PACKAGES] = {"packages", TOML_ARRAY, "an array of strings", SCOPE_CONTAINER},
    [K_HOME] = {"home", TOML_STRING, "a string", SCOPE_CONTAINER},
    [K_ENABLED] = {"enabled", TOML_BOOL, "a boolean", SCOPE_ANY},
    [K_ENV] = {"env", TOML_TABLE, "a table of strings", SCOPE_CONTAINER},
    [K_CONNECT] = {"connect", TOML_TABLE, "a table of HOST:PORT strings", SCOPE_CONTAINER},
    [K_TOOLS] = {"tools", TOML_TABLE, "a table", SCOPE_ANY},
};

_Static_assert(K_SERVER_COUNT <= KEYS_MAX, "struct keys holds every key of a [[server]]");

enum tool_key { T_ON, T_EFFECT, T_CONFIRM, T_TOOL_COUNT };

static const struct key_spec tool_keys[T_TOOL_COUNT] = {
    [T_ON] = {"on", TOML_BOOL, "a boolean", SCOPE_ANY},
    [T_EFFECT] = {"effect", TOML_STRING, "a string", SCOPE_ANY},
    [T_CONFIRM] = {"confirm", TOML_BOOL, "a boolean", SCOPE_ANY},
};

enum transport_seen { TR_UNKNOWN, TR_CONTAINER, TR_REMOTE };

static void check_name(struct ctx *c, const struct keys *k, const struct toml_value *t,
                       struct cfg_server *s)
{
	if (k->kv[K_NAME] == NULL) {
		if (!k->present[K_NAME])
			diag(c, t->pos, "missing required key \"name\" in [[server]]");
		return;
	}
	const struct toml_value *v = k->kv[K_NAME]->value;
	const char *name = str_of(c, "name", v);
	cleanup_err struct mg_err *e = NULL;
	if (name == NULL)
		return;
	if (cfg_check_server_name(name, "\"name\"", &e) < 0) {
		diag_err(c, v->pos, &e);
		return;
	}
	for (size_t i = 0; i < c->nseen; i++)
		if (strcmp(c->seen[i].name, name) == 0) {
			diag_value(c, v->pos, "\"name\"", name,
			           "is already the name of the server at line %u", c->seen[i].line);
			return;
		}
	c->seen = xreallocarray(c->seen, c->nseen + 1, sizeof(*c->seen));
	c->seen[c->nseen++] = (struct server_name){name, t->pos.line};
	s->name = xstrdup(name);
}

static enum transport_seen check_transport(struct ctx *c, const struct keys *k,
                                           const struct toml_value *t, struct cfg_server *s)
{
	if (k->kv[K_TRANSPORT] == NULL) {
		if (!k->present[K_TRANSPORT])
			diag(c, t->pos,
			     "missing required key \"transport\" in [[server]]: \"container\" or "
			     "\"remote\"");
		return TR_UNKNOWN;
	}
	const struct toml_value *v = k->kv[K_TRANSPORT]->value;
	const char *tr = str_of(c, "transport", v);
	if (tr == NULL)
		return TR_UNKNOWN;
	if (strcmp(tr, "container") == 0) {
		s->transport = CFG_TRANSPORT_CONTAINER;
		return TR_CONTAINER;
	}
	if (strcmp(tr, "remote") == 0) {
		s->transport = CFG_TRANSPORT_REMOTE;
		return TR_REMOTE;
	}
	if (strcmp(tr, "host-process") == 0)
		diag_value(c, v->pos, "\"transport\"", tr,
		           "is refused: no untrusted server runs in mcpgate's process tree; run it "
		           "contained (transport = \"container\")");
	else
		diag_value(c, v->pos, "unknown transport", tr,
		           "(expected \"container\" or \"remote\")");
	return TR_UNKNOWN;
}

/* network and network_private */

/* `server "NAME": "network" entry` for the messages about a wildcard entry,
 * which reaches every name under its own (allocated) */
static char *wildcard_what(const struct keys *k, const struct cfg_server *s, const char *key)
{
	const char *name = s->name;
	if (name == NULL && k->kv[K_NAME] != NULL && k->kv[K_NAME]->value->kind == TOML_STRING)
		name = k->kv[K_NAME]->value->u.str.ptr;
	char *q = name != NULL ? cfg_quote(name, strlen(name)) : xstrdup("(unnamed)");
	char *what = xasprintf("server %s: \"%s\" entry", q, key);
	free(q);
	return what;
}

static const struct cfg_suffixes *suffixes(struct ctx *c)
{
	if (!c->suffixes_tried) {
		c->suffixes_tried = true;
		cleanup_err struct mg_err *e = NULL;
		c->suffixes_path = cfg_suffix_list_path();
		if (cfg_suffixes_open(c->suffixes_path, &c->suffixes, &e) < 0)
			c->suffixes_error = xstrdup(mg_err_msg(e));
	}
	return c->suffixes;
}

/* A wildcard on a public suffix reaches names anyone may register. Returns
 * whether the entry passed (a list that cannot be read fails it). */
static bool check_wildcard_suffix(struct ctx *c, const struct cfg_host *h, struct toml_pos p,
                                  const char *what, const char *text)
{
	const struct cfg_suffixes *list = suffixes(c);
	if (list == NULL) {
		diag_value(c, p, what, text,
		           "cannot be checked against the public suffix list, so it is refused: %s",
		           c->suffixes_error);
		return false;
	}
	cleanup_free char *refusal =
	    cfg_suffixes_wildcard_refusal(list, c->suffixes_path, h->host + 2);
	if (refusal != NULL) {
		diag_value(c, p, what, text, "%s", refusal);
		return false;
	}
	return true;
}

/* The proxy refuses some entries at its start (localhost, host aliases,
 * special addresses, a private literal without network_private, a bad
 * wildcard): the same rules, from the same code, refuse them here with
 * their file:line:col. A wildcard is judged by the public suffix list
 * first, which the proxy cannot read. */
static void check_hosts_against_proxy(struct ctx *c, const struct keys *k,
                                      const struct cfg_server *s)
{
	for (size_t i = 0; i < s->nhosts; i++) {
		const struct cfg_host *h = &s->hosts[i];
		char text[300];
		if (h->port != 0)
			snprintf(text, sizeof(text), "%s:%u", h->host, h->port);
		else
			snprintf(text, sizeof(text), "%s", h->host);
		struct toml_pos p = {h->pos.line, h->pos.col};
		bool wildcard = h->host[0] == '*';
		cleanup_free char *what =
		    wildcard ? wildcard_what(k, s, "network") : xstrdup("\"network\" entry");
		if (wildcard && !check_wildcard_suffix(c, h, p, what, text))
			continue;
		struct egr_allow a;
		const char *why = NULL;
		if (egr_allow_parse(text, h->private_ok, &a, &why) < 0) {
			if (strstr(why, "-allow-private") != NULL)
				diag_value(
				    c, p, what, text,
				    "is a private address (%s): list it in network_private too to "
				    "allow it",
				    a.range);
			else if (a.range != NULL)
				diag_value(c, p, what, text,
				           "is refused by the egress proxy: %s (%s)", why, a.range);
			else
				diag_value(c, p, what, text, "is refused by the egress proxy: %s",
				           why);
		}
	}
}

/* network_send_max: the proxy's -max-bytes-up, so a server with hosts */
static void check_send_max(struct ctx *c, struct keys *k, struct cfg_server *s)
{
	if (k->kv[K_NETWORK_SEND_MAX] == NULL)
		return;
	const struct toml_value *v = k->kv[K_NETWORK_SEND_MAX]->value;
	const char *text = str_of(c, "network_send_max", v);
	struct mg_err *e = NULL;
	if (text == NULL)
		return;
	if (cfg_parse_send_max(text, "\"network_send_max\"", &s->send_max, &e) < 0) {
		diag_err(c, v->pos, &e);
		return;
	}
	if ((k->kv[K_NETWORK] == NULL || k->kv[K_NETWORK]->value->u.array.len == 0) &&
	    (k->kv[K_CONNECT] == NULL || k->kv[K_CONNECT]->value->u.table.len == 0))
		diag(c, v->pos,
		     "\"network_send_max\" is set on a server with no network: nothing goes out to "
		     "cap (list its hosts in \"network\", or its destinations in \"connect\")");
}

static void check_network(struct ctx *c, struct keys *k, struct cfg_server *s)
{
	cleanup_err struct mg_err *e = NULL;
	/* entries that failed their own check: network_private does not
	 * report them again */
	const char **failed = NULL;
	size_t nfailed = 0;
	if (k->kv[K_NETWORK] != NULL) {
		const struct toml_value *arr = k->kv[K_NETWORK]->value;
		s->hosts = xcalloc(arr->u.array.len, sizeof(*s->hosts));
		failed = xcalloc(arr->u.array.len, sizeof(*failed));
		for (size_t i = 0; i < arr->u.array.len; i++) {
			const struct toml_value *v = arr->u.array.items[i];
			const char *entry = entry_of(c, "network", v);
			if (entry == NULL)
				continue;
			struct cfg_host h;
			cleanup_free char *what = strchr(entry, '*') != NULL
			                              ? wildcard_what(k, s, "network")
			                              : xstrdup("\"network\" entry");
			if (cfg_parse_host(entry, what, &h, &e) < 0) {
				diag_err(c, v->pos, &e);
				failed[nfailed++] = entry;
				continue;
			}
			h.pos = pos_of(v->pos);
			size_t j = 0;
			while (j < s->nhosts && !(strcmp(s->hosts[j].host, h.host) == 0 &&
			                          s->hosts[j].port == h.port))
				j++;
			if (j < s->nhosts) {
				diag_value(c, v->pos, "\"network\" entry", entry,
				           "is listed twice (first at %u:%u)", s->hosts[j].pos.line,
				           s->hosts[j].pos.col);
				free(h.host);
				continue;
			}
			s->hosts[s->nhosts++] = h;
		}
	}
	if (k->kv[K_NETWORK_PRIVATE] != NULL) {
		const struct toml_value *arr = k->kv[K_NETWORK_PRIVATE]->value;
		for (size_t i = 0; i < arr->u.array.len; i++) {
			const struct toml_value *v = arr->u.array.items[i];
			const char *entry = entry_of(c, "network_private", v);
			if (entry == NULL)
				continue;
			size_t f = 0;
			while (f < nfailed && strcmp(failed[f], entry) != 0)
				f++;
			if (f < nfailed)
				continue;
			struct cfg_host h = {0};
			size_t j = s->nhosts;
			if (cfg_parse_host(entry, "", &h, NULL) == 0) {
				j = 0;
				while (j < s->nhosts && !(strcmp(s->hosts[j].host, h.host) == 0 &&
				                          s->hosts[j].port == h.port))
					j++;
				free(h.host);
			}
			if (j == s->nhosts)
				diag_value(
				    c, v->pos, "\"network_private\" entry", entry,
				    "is not in \"network\": it marks a listed host as allowed "
				    "to reach a private address");
			else if (s->hosts[j].private_ok)
				diag_value(c, v->pos, "\"network_private\" entry", entry,
				           "is listed twice");
			else
				s->hosts[j].private_ok = true;
		}
	}
	free(failed);
	check_hosts_against_proxy(c, k, s);
}

static void check_mounts(struct ctx *c, const struct keys *k, struct cfg_server *s)
{
	if (k->kv[K_MOUNTS] == NULL)
		return;
	cleanup_err struct mg_err *e = NULL;
	const struct toml_value *arr = k->kv[K_MOUNTS]->value;
	s->mounts = xcalloc(arr->u.array.len, sizeof(*s->mounts));
	for (size_t i = 0; i < arr->u.array.len; i++) {
		const struct toml_value *v = arr->u.array.items[i];
		const char *entry = entry_of(c, "mounts", v);
		if (entry == NULL)
			continue;
		struct cfg_mount m;
		if (cfg_parse_mount(entry, "\"mounts\" entry", &m, &e) < 0) {
			diag_err(c, v->pos, &e);
			continue;
		}
		m.pos = pos_of(v->pos);
		size_t j = 0;
		while (j < s->nmounts && strcmp(s->mounts[j].path, m.path) != 0)
			j++;
		if (j < s->nmounts) {
			diag_value(c, v->pos, "\"mounts\" entry", entry,
			           "names the same folder as the entry at %u:%u",
			           s->mounts[j].pos.line, s->mounts[j].pos.col);
			free(m.path);
			continue;
		}
		s->mounts[s->nmounts++] = m;
	}
}

/* packages: Debian package names, each once */
static void check_packages(struct ctx *c, const struct keys *k, struct cfg_server *s)
{
	if (k->kv[K_PACKAGES] == NULL)
		return;
	const struct toml_value *arr = k->kv[K_PACKAGES]->value;
	s->packages = xcalloc(arr->u.array.len + 1, sizeof(*s->packages));
	for (size_t i = 0; i < arr->u.array.len; i++) {
		const struct toml_value *v = arr->u.array.items[i];
		const char *entry = entry_of(c, "packages", v);
		if (entry == NULL)
			continue;
		if (!deb_name_valid(entry)) {
			diag_value(
			    c, v->pos, "\"packages\" entry", entry,
			    "is not a Debian package's name (lower-case letters, digits, + - "
			    "and ., starting with a letter or digit)");
			continue;
		}
		bool twice = false;
		for (size_t j = 0; j < s->npackages; j++)
			twice = twice || strcmp(s->packages[j], entry) == 0;
		if (twice) {
			diag_value(c, v->pos, "\"packages\" entry", entry, "is listed twice");
			continue;
		}
		s->packages[s->npackages++] = xstrdup(entry);
	}
}

/* home: "session" (a tmpfs, the default) or "workspace:PATH", a folder of
 * the workspace kept from one session to the next, checked as a write mount
 * is and added as the last mount */
static void check_home(struct ctx *c, const struct keys *k, struct cfg_server *s)
{
	if (k->kv[K_HOME] == NULL)
		return;
	const struct toml_value *v = k->kv[K_HOME]->value;
	const char *text = str_of(c, "home", v);
	if (text == NULL || strcmp(text, "session") == 0)
		return;
	cleanup_err struct mg_err *e = NULL;
	const char *pfx = "workspace:";
	if (strncmp(text, pfx, strlen(pfx)) != 0) {
		diag_value(c, v->pos, "\"home\"", text,
		           "is not \"session\" (a writable tmpfs gone with the container) or "
		           "\"workspace:PATH\" (a folder of the workspace, kept)");
		return;
	}
	const char *path = text + strlen(pfx);
	struct cfg_mount m;
	if (path[0] == '\0' || strchr(path, ':') != NULL ||
	    cfg_parse_mount(path, "\"home\" folder", &m, &e) < 0) {
		if (e != NULL)
			diag_err(c, v->pos, &e);
		else
			diag_value(c, v->pos, "\"home\"", text,
			           "names no folder after \"workspace:\" (and takes no :read or "
			           ":write)");
		return;
	}
	if (strcmp(m.path, ".") == 0) {
		diag_value(c, v->pos, "\"home\"", text,
		           "is the workspace itself: name a folder inside it");
		free(m.path);
		return;
	}
	for (size_t j = 0; j < s->nmounts; j++)
		if (strcmp(s->mounts[j].path, m.path) == 0) {
			diag_value(c, v->pos, "\"home\"", text,
			           "names the same folder as the \"mounts\" entry at %u:%u",
			           s->mounts[j].pos.line, s->mounts[j].pos.col);
			free(m.path);
			return;
		}
	m.write = true;
	m.home = true;
	m.pos = pos_of(v->pos);
	s->mounts = xreallocarray(s->mounts, s->nmounts + 1, sizeof(*s->mounts));
	s->mounts[s->nmounts++] = m;
}

/* command and args: NULL-terminated copies */
static char **check_argv(struct ctx *c, const struct toml_kv *kv, const char *key, size_t *n)
{
	const struct toml_value *arr = kv->value;
	char **out = xcalloc(arr->u.array.len + 1, sizeof(*out));
	*n = 0;
	for (size_t i = 0; i < arr->u.array.len; i++) {
		const struct toml_value *v = arr->u.array.items[i];
		const char *entry = entry_of(c, key, v);
		if (entry == NULL)
			continue;
		if (entry[0] == '\0') {
			diag(c, v->pos, "\"%s\" entries must not be empty", key);
			continue;
		}
		out[(*n)++] = xstrdup(entry);
	}
	return out;
}

/* env: settings that are not secret, NAME = "value", by the rules of an
 * env: position (docs/config.md) */
static void check_env(struct ctx *c, const struct toml_kv *kv, struct cfg_server *s)
{
	const struct toml_value *t = kv->value;
	s->env = xcalloc(t->u.table.len + 1, sizeof(*s->env));
	for (size_t i = 0; i < t->u.table.len; i++) {
		const struct toml_kv *e = &t->u.table.items[i];
		const struct toml_value *v = e->value;
		if (strlen(e->key) != e->keylen || !cfg_env_name_valid(e->key)) {
			diag(c, e->keypos,
			     "\"env\" key \"%s\" is not a variable name: [A-Za-z_][A-Za-z0-9_]*",
			     e->key);
			continue;
		}
		if (cfg_env_name_reserved(e->key)) {
			diag(c, e->keypos,
			     "\"env\" key %s names a variable that mcpgate, the container runtime "
			     "or the loader obeys itself (the rule of env: positions, "
			     "docs/config.md): "
			     "choose another",
			     e->key);
			continue;
		}
		if (v->kind != TOML_STRING) {
			diag(c, v->pos, "\"env\" value of %s must be a string, not %s", e->key,
			     toml_kind_name(v->kind));
			continue;
		}
		if (memchr(v->u.str.ptr, '\0', v->u.str.len) != NULL) {
			diag(c, v->pos, "\"env\" value of %s must not hold a NUL character",
			     e->key);
			continue;
		}
		if (v->u.str.len > CFG_ENV_VALUE_MAX) {
			diag(c, v->pos, "\"env\" value of %s is longer than %u bytes", e->key,
			     CFG_ENV_VALUE_MAX);
			continue;
		}
		s->env[s->nenv].name = xstrdup(e->key);
		s->env[s->nenv].value = xstrdup(v->u.str.ptr);
		s->env[s->nenv].pos = (struct cfg_pos){e->keypos.line, e->keypos.col};
		s->nenv++;
	}
}

/* connect: NAME = "HOST:PORT", or NAME = { to = "HOST:PORT", network =
 * "NET" } for a destination on a network of the person's */
static void check_connect(struct ctx *c, const struct toml_kv *kv, struct cfg_server *s)
{
	const struct toml_value *t = kv->value;
	cleanup_err struct mg_err *e = NULL;
	s->connect = xcalloc(t->u.table.len + 1, sizeof(*s->connect));
	if (t->u.table.len > CFG_CONNECT_MAX)
		diag(c, kv->keypos, "\"connect\" holds more than %d destinations", CFG_CONNECT_MAX);
	for (size_t i = 0; i < t->u.table.len && s->nconnect < CFG_CONNECT_MAX; i++) {
		const struct toml_kv *x = &t->u.table.items[i];
		const struct toml_value *v = x->value;
		if (strlen(x->key) != x->keylen || !cfg_connect_name_valid(x->key)) {
			diag(c, x->keypos,
			     "\"connect\" key \"%s\" is not a destination's name: 1-%d of "
			     "[A-Za-z0-9_-], starting with a letter or digit",
			     x->key, CFG_CONNECT_NAME_MAX);
			continue;
		}
		const char *to = NULL, *network = NULL;
		struct toml_pos at = v->pos;
		if (v->kind == TOML_STRING) {
			to = str_of(c, "connect", v);
		} else if (v->kind == TOML_TABLE) {
			bool bad = false;
			for (size_t j = 0; j < v->u.table.len; j++) {
				const struct toml_kv *m = &v->u.table.items[j];
				bool is_to = strcmp(m->key, "to") == 0;
				if ((!is_to && strcmp(m->key, "network") != 0) ||
				    m->value->kind != TOML_STRING) {
					diag(c, m->keypos,
					     "\"connect\" entry %s: a table holds to = "
					     "\"HOST:PORT\" and "
					     "network = \"NAME\" (strings), and nothing else",
					     x->key);
					bad = true;
					continue;
				}
				const char *val = str_of(c, m->key, m->value);
				if (is_to) {
					to = val;
					at = m->value->pos;
				} else {
					network = val;
				}
			}
			if (!bad && to == NULL)
				diag(c, v->pos, "\"connect\" entry %s has no to = \"HOST:PORT\"",
				     x->key);
			if (bad || to == NULL)
				continue;
		} else {
			diag(c, v->pos,
			     "\"connect\" entry %s must be a string \"HOST:PORT\" or a table, not "
			     "%s",
			     x->key, toml_kind_name(v->kind));
			continue;
		}
		if (to == NULL)
			continue;
		struct cfg_connect *d = &s->connect[s->nconnect];
		if (cfg_parse_connect(to, network, d, &e) < 0) {
			diag(c, at, "\"connect\" entry %s: %s", x->key, mg_err_msg(e));
			mg_err_clear(&e);
			continue;
		}
		d->name = xstrdup(x->key);
		d->pos = (struct cfg_pos){x->keypos.line, x->keypos.col};
		s->nconnect++;
	}
}

/* Every {connect.NAME} in command, args and env names an entry, and every
 * entry is named somewhere: that is how the server learns where to connect */
static void check_connect_refs(struct ctx *c, const struct keys *k, const struct cfg_server *s)
{
	cleanup_err struct mg_err *e = NULL;
	/* a reference to an entry that is wrong itself is not wrong again */
	const struct toml_kv *table = k->kv[K_CONNECT];
	size_t n = table != NULL ? table->value->u.table.len : 0;
	const char **names = xcalloc(n + 1, sizeof(*names));
	for (size_t i = 0; i < n; i++)
		names[i] = table->value->u.table.items[i].key;
	bool *used = xcalloc(n + 1, sizeof(*used));
	static const enum server_key arrays[] = {K_COMMAND, K_ARGS};
	for (size_t a = 0; a < sizeof(arrays) / sizeof(arrays[0]); a++) {
		const struct toml_kv *kv = k->kv[arrays[a]];
		for (size_t i = 0; kv != NULL && i < kv->value->u.array.len; i++) {
			const struct toml_value *v = kv->value->u.array.items[i];
			if (v->kind == TOML_STRING &&
			    cfg_connect_refs(v->u.str.ptr, names, n, used, &e) < 0) {
				diag(c, v->pos, "\"%s\" entry: %s", server_keys[arrays[a]].name,
				     mg_err_msg(e));
				mg_err_clear(&e);
			}
		}
	}
	const struct toml_kv *env = k->kv[K_ENV];
	for (size_t i = 0; env != NULL && i < env->value->u.table.len; i++) {
		const struct toml_kv *x = &env->value->u.table.items[i];
		if (x->value->kind == TOML_STRING &&
		    cfg_connect_refs(x->value->u.str.ptr, names, n, used, &e) < 0) {
			diag(c, x->value->pos, "\"env\" value of %s: %s", x->key, mg_err_msg(e));
			mg_err_clear(&e);
		}
	}
	/* (an entry that is wrong itself is said once) */
	for (size_t i = 0, j = 0; i < n; i++) {
		while (j < s->nconnect && strcmp(s->connect[j].name, names[i]) != 0)
			j++;
		bool valid = j < s->nconnect;
		j = valid ? j : 0;
		if (valid && !used[i])
			diag(c, table->value->u.table.items[i].keypos,
			     "\"connect\" entry %s is named nowhere: put {connect.%s} in args or "
			     "env, "
			     "where the server reads the address it is reached at",
			     names[i], names[i]);
	}
	free(used);
	free(names);
}

static void check_credential(struct ctx *c, const struct keys *k, enum transport_seen tr,
                             struct cfg_server *s)
{
	cleanup_err struct mg_err *e = NULL;
	const struct toml_value *cv = k->kv[K_CREDENTIAL] ? k->kv[K_CREDENTIAL]->value : NULL;
	const struct toml_value *pv = k->kv[K_POSITION] ? k->kv[K_POSITION]->value : NULL;
	if (cv != NULL) {
		const char *name = str_of(c, "credential", cv);
		if (name != NULL && cfg_check_credential_name(name, "\"credential\"", &e) < 0)
			diag_err(c, cv->pos, &e);
		else if (name != NULL)
			s->credential = xstrdup(name);
		if (!k->present[K_POSITION])
			diag(c, cv->pos,
			     "\"credential\" needs \"position\": env:NAME on a container server, "
			     "header:NAME on a remote one");
		if (tr == TR_CONTAINER &&
		    (!k->present[K_NETWORK] ||
		     (k->kv[K_NETWORK] != NULL && k->kv[K_NETWORK]->value->u.array.len == 0)))
			diag(c, cv->pos,
			     "\"credential\" is set on a server with no network: the secret would "
			     "have nowhere to go (list the hosts it is for in \"network\")");
	}
	if (pv != NULL) {
		const char *pos = str_of(c, "position", pv);
		if (pos != NULL && cfg_parse_position(pos, "\"position\"", &s->position,
		                                      &s->position_name, &e) < 0) {
			diag_err(c, pv->pos, &e);
		} else if (pos != NULL && tr == TR_CONTAINER &&
		           s->position == CFG_POSITION_HEADER) {
			diag_value(c, pv->pos, "\"position\"", pos,
			           "is for remote servers: a container server takes its credential "
			           "in an environment variable, env:NAME");
		} else if (pos != NULL && tr == TR_REMOTE && s->position == CFG_POSITION_ENV) {
			diag_value(c, pv->pos, "\"position\"", pos,
			           "is for container servers: a remote server takes its credential "
			           "in a header, header:NAME");
		}
		if (!k->present[K_CREDENTIAL])
			diag(c, pv->pos,
			     "\"position\" needs \"credential\": the name of a secret in the "
			     "keychain");
	}
}

/* one workspace path: absolute, or ~/ expanded; NULL (diagnosed) when bad */
static char *workspace_path(struct ctx *c, const struct toml_value *v, const char *entry)
{
	const char *what = "\"workspaces\" entry";
	const char *rest = entry;
	const char *home = NULL;
	if (entry[0] == '\0') {
		diag(c, v->pos, "\"workspaces\" entry is empty");
		return NULL;
	}
	if (entry[0] == '~') {
		if (entry[1] != '\0' && entry[1] != '/') {
			diag_value(
			    c, v->pos, what, entry,
			    "starts with \"~\" but not \"~/\": only ~/ (your home) is expanded");
			return NULL;
		}
		if (c->home == NULL || c->home[0] != '/') {
			diag_value(c, v->pos, what, entry,
			           "starts with ~/ but $HOME is not set to an absolute path");
			return NULL;
		}
		home = c->home;
		rest = entry + 1;
	} else if (entry[0] != '/') {
		diag_value(c, v->pos, what, entry,
		           "is relative: write an absolute path or one starting with ~/");
		return NULL;
	}
	/* join home and rest, one "/" between components, none at the end */
	size_t hl = home != NULL ? strlen(home) : 0;
	char *out = xmalloc(hl + strlen(rest) + 2);
	size_t o = 0;
	const char *parts[2] = {home, rest};
	for (int p = 0; p < 2; p++) {
		const char *s = parts[p];
		while (s != NULL && *s != '\0') {
			size_t n = strcspn(s, "/");
			if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.')) {
				if (p == 1) {
					diag_value(
					    c, v->pos, what, entry,
					    "has a \".\" or \"..\" component: write the path "
					    "plainly");
					free(out);
					return NULL;
				}
			}
			if (n > 0) {
				out[o++] = '/';
				memcpy(out + o, s, n);
				o += n;
			}
			s += n;
			while (*s == '/')
				s++;
		}
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = '\0';
	return out;
}

static void check_workspaces(struct ctx *c, const struct keys *k, struct cfg_server *s)
{
	if (k->kv[K_WORKSPACES] == NULL)
		return;
	const struct toml_value *arr = k->kv[K_WORKSPACES]->value;
	s->workspaces = xcalloc(arr->u.array.len + 1, sizeof(*s->workspaces));
	for (size_t i = 0; i < arr->u.array.len; i++) {
		const struct toml_value *v = arr->u.array.items[i];
		const char *entry = entry_of(c, "workspaces", v);
		if (entry == NULL)
			continue;
		char *path = workspace_path(c, v, entry);
		if (path != NULL)
			s->workspaces[s->nworkspaces++] = path;
	}
}

/* An array of words from a fixed set, each at most once, as bits (bit i
 * for words[i]); every other word, or a repeated one, is an error at its
 * place naming the set (expect) */
static unsigned check_words(struct ctx *c, const struct toml_kv *kv, const char *key,
                            const char *const *words, size_t n, const char *expect)
{
	unsigned bits = 0;
	if (kv == NULL)
		return 0;
	cleanup_free char *what = xasprintf("\"%s\" entry", key);
	const struct toml_value *arr = kv->value;
	for (size_t i = 0; i < arr->u.array.len; i++) {
		const struct toml_value *v = arr->u.array.items[i];
		const char *entry = entry_of(c, key, v);
		if (entry == NULL)
			continue;
		size_t w = 0;
		while (w < n && strcmp(entry, words[w]) != 0)
			w++;
		if (w == n)
			diag_value(c, v->pos, what, entry, "%s", expect);
		else if (bits & (1u << w))
			diag_value(c, v->pos, what, entry, "is listed twice");
		else
			bits |= 1u << w;
	}
	return bits;
}

/* relay: which requests of the server reach the client */
static void check_relay(struct ctx *c, const struct keys *k, struct cfg_server *s)
{
	static const char *const words[] = {"sampling", "elicitation", "roots"};
	unsigned bits = check_words(c, k->kv[K_RELAY], "relay", words, 3,
	                            "is not one of \"sampling\", \"elicitation\" and \"roots\"");
	s->relay_sampling = bits & 1u;
	s->relay_elicitation = bits & 2u;
	s->relay_roots = bits & 4u;
}

const char *cfg_instance_name(enum cfg_instance i)
{
	switch (i) {
	case CFG_INSTANCE_SHARED:
		return "shared";
	case CFG_INSTANCE_EXCLUSIVE:
		return "exclusive";
	case CFG_INSTANCE_SESSION:
		break;
	}
	return "session";
}

const char *cfg_start_name(enum cfg_start s)
{
	return s == CFG_START_LAZY ? "lazy" : "eager";
}

/* start: "eager" or "lazy", in a [[server]] or in config.toml's [mcp] */
static bool start_of(struct ctx *c, const struct toml_value *v, enum cfg_start *out)
{
	const char *text = str_of(c, "start", v);
	if (text == NULL)
		return false;
	for (int i = CFG_START_EAGER; i <= CFG_START_LAZY; i++)
		if (strcmp(text, cfg_start_name((enum cfg_start)i)) == 0) {
			*out = (enum cfg_start)i;
			return true;
		}
	diag_value(c, v->pos, "\"start\"", text,
	           "is not \"eager\" (started with the session) or \"lazy\" (started at its "
	           "first use; its approved tools are offered from the pin meanwhile)");
	return false;
}

/* instance: "session" (the default), "shared" or "exclusive" */
static void check_instance(struct ctx *c, const struct keys *k, struct cfg_server *s)
{
	if (k->kv[K_INSTANCE] == NULL)
		return;
	const struct toml_value *v = k->kv[K_INSTANCE]->value;
	const char *text = str_of(c, "instance", v);
	if (text == NULL)
		return;
	for (int i = CFG_INSTANCE_SESSION; i <= CFG_INSTANCE_EXCLUSIVE; i++)
		if (strcmp(text, cfg_instance_name((enum cfg_instance)i)) == 0) {
			s->instance = (enum cfg_instance)i;
			return;
		}
	diag_value(c, v->pos, "\"instance\"", text,
	           "is not one of \"session\" (a container per client session), \"shared\" (one "
	           "for every client) and \"exclusive\" (one, for one client at a time)");
}

const char *cfg_property_name(unsigned bit)
{
	switch (bit) {
	case CFG_PROP_MEMORY:
		return "memory";
	case CFG_PROP_PIDS:
		return "pids";
	default:
		return NULL;
	}
}

/* accept_unenforced: the properties a person lets go where they cannot hold
 * (bit i is CFG_PROP_* 1 << i) */
static void check_accept(struct ctx *c, const struct keys *k, struct cfg_server *s)
{
	static const char *const words[CFG_PROP_COUNT] = {"memory", "pids"};
	s->accept_unenforced =
	    check_words(c, k->kv[K_ACCEPT_UNENFORCED], "accept_unenforced", words, CFG_PROP_COUNT,
	                "is not one of \"memory\" and \"pids\"");
}

static void check_tool(struct ctx *c, const struct toml_kv *kv, struct cfg_server *s,
                       const char *server_name)
{
	cleanup_err struct mg_err *e = NULL;
	cleanup_free char *q = cfg_quote(kv->key, kv->keylen);
	bool name_ok = true;
	if (memchr(kv->key, '\0', kv->keylen) != NULL) {
		diag(c, kv->keypos, "tool name %s must not hold a NUL character", q);
		name_ok = false;
	} else if (cfg_check_tool_name(kv->key, "tool name", &e) < 0) {
		diag_err(c, kv->keypos, &e);
		name_ok = false;
	} else if (server_name != NULL &&
	           strlen(server_name) + 2 + kv->keylen > CFG_TOOL_NAME_MAX) {
		diag(c, kv->keypos,
		     "tool name %s is too long: with the server's name, SERVER__TOOL would be %zu "
		     "characters, more than %d",
		     q, strlen(server_name) + 2 + kv->keylen, CFG_TOOL_NAME_MAX);
		name_ok = false;
	}
	const struct toml_value *t = kv->value;
	if (t->kind != TOML_TABLE) {
		diag(c, t->pos, "tool %s must be a table ([server.tools.NAME]), not %s", q,
		     toml_kind_name(t->kind));
		return;
	}
	cleanup_free char *where =
	    name_ok ? xasprintf("in [server.tools.%s]", kv->key) : xasprintf("in tool %s", q);
	struct keys k;
	match_keys(c, t, tool_keys, T_TOOL_COUNT, where, &k);
	struct cfg_tool tool = {0};
	tool.pos = pos_of(t->pos);
	tool.confirm = true;
	if (k.kv[T_ON] != NULL) {
		tool.on = k.kv[T_ON]->value->u.boolean;
		tool.on_pos = pos_of(k.kv[T_ON]->keypos);
	}
	if (k.kv[T_EFFECT] != NULL) {
		const struct toml_value *v = k.kv[T_EFFECT]->value;
		const char *effect = str_of(c, "effect", v);
		tool.effect_pos = pos_of(k.kv[T_EFFECT]->keypos);
		if (effect != NULL && strcmp(effect, "read") == 0)
			tool.effect = CFG_EFFECT_READ;
		else if (effect != NULL && strcmp(effect, "write") == 0)
			tool.effect = CFG_EFFECT_WRITE;
		else if (effect != NULL)
			diag_value(c, v->pos, "\"effect\"", effect,
			           "must be \"read\" or \"write\" (leave it out for undeclared)");
	}
	if (k.kv[T_CONFIRM] != NULL) {
		tool.confirm = k.kv[T_CONFIRM]->value->u.boolean;
		tool.confirm_pos = pos_of(k.kv[T_CONFIRM]->keypos);
		if (!tool.confirm && tool.effect != CFG_EFFECT_WRITE)
			diag(c, k.kv[T_CONFIRM]->keypos,
			     "\"confirm\" = false %s is for a tool whose effect is write: a read "
			     "tool is never asked about, and an undeclared one must be declared "
			     "first",
			     where);
	}
	if (name_ok) {
		tool.name = xstrdup(kv->key);
		s->tools[s->ntools++] = tool;
	}
}

static void check_server(struct ctx *c, const struct toml_value *t, struct cfg_server *s)
{
	cleanup_err struct mg_err *e = NULL;
	struct keys k;
	s->pos = pos_of(t->pos);
	s->memory = CFG_MEMORY_DEFAULT;
	s->pids = CFG_PIDS_DEFAULT;
	s->enabled = true;
	match_keys(c, t, server_keys, K_SERVER_COUNT, "in [[server]]", &k);

	check_name(c, &k, t, s);
	enum transport_seen tr = check_transport(c, &k, t, s);

	/* a key of the other transport is an error, and not checked further */
	if (tr != TR_UNKNOWN) {
		for (size_t i = 0; i < K_SERVER_COUNT; i++) {
			enum scope wrong = tr == TR_CONTAINER ? SCOPE_REMOTE : SCOPE_CONTAINER;
			if (!k.present[i] || server_keys[i].scope != wrong)
				continue;
			diag(c, k.written[i]->keypos,
			     "\"%s\" does not apply to a %s server (only to %s ones)",
			     server_keys[i].name, tr == TR_CONTAINER ? "container" : "remote",
			     tr == TR_CONTAINER ? "remote" : "container");
			k.kv[i] = NULL;
			k.present[i] = false;
		}
	}
	if (tr == TR_CONTAINER && !k.present[K_IMAGE])
		diag(c, t->pos,
		     "missing required key \"image\" in [[server]]: a container server runs an "
		     "image pinned by digest, NAME@sha256:<64 hex>");
	if (tr == TR_REMOTE && !k.present[K_URL])
		diag(c, t->pos,
		     "missing required key \"url\" in [[server]]: a remote server is reached at "
		     "an https:// URL");

	if (k.kv[K_ENABLED] != NULL) {
		s->enabled = k.kv[K_ENABLED]->value->u.boolean;
		s->enabled_pos = pos_of(k.kv[K_ENABLED]->keypos);
	}
	if (k.kv[K_IMAGE] != NULL) {
		const struct toml_value *v = k.kv[K_IMAGE]->value;
		const char *image = str_of(c, "image", v);
		s->image_pos = pos_of(k.kv[K_IMAGE]->keypos);
		if (image != NULL &&
		    cfg_parse_image(image, "\"image\"", &s->image_name, &s->image_digest, &e) < 0)
			diag_err(c, v->pos, &e);
		else if (image != NULL)
			s->image = xstrdup(image);
	}
	check_network(c, &k, s);
	check_send_max(c, &k, s);
	check_instance(c, &k, s);
	if (k.kv[K_START] != NULL)
		s->start_set = start_of(c, k.kv[K_START]->value, &s->start);
	check_mounts(c, &k, s);
	check_home(c, &k, s);
	check_packages(c, &k, s);
	if (k.kv[K_COMMAND] != NULL) {
		if (k.kv[K_COMMAND]->value->u.array.len == 0)
			diag(
			    c, k.kv[K_COMMAND]->value->pos,
			    "\"command\" is empty: leave it out to run the image's own entrypoint");
		s->command = check_argv(c, k.kv[K_COMMAND], "command", &s->ncommand);
	}
	if (k.kv[K_ARGS] != NULL)
		s->args = check_argv(c, k.kv[K_ARGS], "args", &s->nargs);
	check_credential(c, &k, tr, s);
	if (k.kv[K_ENV] != NULL)
		check_env(c, k.kv[K_ENV], s);
	if (k.kv[K_CONNECT] != NULL)
		check_connect(c, k.kv[K_CONNECT], s);
	check_connect_refs(c, &k, s);
	for (size_t i = 0; s->position_name != NULL && i < s->nenv; i++)
		if (strcmp(s->env[i].name, s->position_name) == 0)
			diag(c, (struct toml_pos){s->env[i].pos.line, s->env[i].pos.col},
			     "\"env\" key %s is also the credential's position: the secret goes "
			     "there; set one or the other",
			     s->env[i].name);
	if (k.kv[K_MEMORY] != NULL) {
		const struct toml_value *v = k.kv[K_MEMORY]->value;
		const char *mem = str_of(c, "memory", v);
		if (mem != NULL && cfg_parse_memory(mem, "\"memory\"", &s->memory, &e) < 0)
			diag_err(c, v->pos, &e);
	}
	if (k.kv[K_USER] != NULL) {
		const struct toml_value *v = k.kv[K_USER]->value;
		const char *u = str_of(c, "user", v);
		unsigned long long uid = 0, gid = 0;
		int used = 0;
		bool ok = u != NULL && (sscanf(u, "%llu:%llu%n", &uid, &gid, &used) == 2 ||
		                        (gid = 0, sscanf(u, "%llu%n", &uid, &used) == 1));
		if (ok && (used != (int)strlen(u) || u[0] < '0' || u[0] > '9' || uid > 0x7ffffffe ||
		           gid > 0x7ffffffe))
			ok = false;
		if (u != NULL && !ok)
			diag_value(
			    c, v->pos, "\"user\"", u,
			    "is not UID or UID:GID (numbers from 0 to 2147483646; names need "
			    "the image's /etc/passwd, which mcpgate does not read)");
		else if (u != NULL) {
			s->user_set = true;
			s->uid = (unsigned)uid;
			s->gid = strchr(u, ':') != NULL ? (unsigned)gid : (unsigned)uid;
		}
	}
	if (k.kv[K_PIDS] != NULL) {
		const struct toml_value *v = k.kv[K_PIDS]->value;
		if (v->u.integer < CFG_PIDS_MIN || v->u.integer > CFG_PIDS_MAX)
			diag(c, v->pos, "\"pids\" %lld is out of range: from %d to %d",
			     (long long)v->u.integer, CFG_PIDS_MIN, CFG_PIDS_MAX);
		else
			s->pids = (unsigned)v->u.integer;
	}
	if (k.kv[K_URL] != NULL) {
		const struct toml_value *v = k.kv[K_URL]->value;
		const char *url = str_of(c, "url", v);
		if (url != NULL &&
		    cfg_parse_url(url, "\"url\"", &s->url_host, &s->url_port, &e) < 0)
			diag_err(c, v->pos, &e);
		else if (url != NULL)
			s->url = xstrdup(url);
	}
	if (k.kv[K_CA_FILE] != NULL) {
		/* a private CA bundle: TLS is still verified, against it */
		const struct toml_value *v = k.kv[K_CA_FILE]->value;
		const char *ca = str_of(c, "ca_file", v);
		if (ca != NULL && ca[0] != '/')
			diag(c, v->pos, "\"ca_file\" \"%s\" must be an absolute path", ca);
		else if (ca != NULL)
			s->ca_file = xstrdup(ca);
	}
	check_workspaces(c, &k, s);
	check_accept(c, &k, s);
	if (k.kv[K_MANIFEST] != NULL) {
		const struct toml_value *v = k.kv[K_MANIFEST]->value;
		const char *manifest = str_of(c, "manifest", v);
		s->manifest_pos = pos_of(k.kv[K_MANIFEST]->keypos);
		if (manifest != NULL && cfg_check_manifest(manifest, "\"manifest\"", &e) < 0)
			diag_err(c, v->pos, &e);
		else if (manifest != NULL)
			s->manifest = xstrdup(manifest);
	}
	check_relay(c, &k, s);
	if (k.kv[K_TOOLS] != NULL) {
		const struct toml_value *tools = k.kv[K_TOOLS]->value;
		const char *server_name = s->name;
		if (server_name == NULL && k.kv[K_NAME] != NULL)
			server_name = k.kv[K_NAME]->value->u.str.ptr;
		s->tools = xcalloc(tools->u.table.len, sizeof(*s->tools));
		for (size_t i = 0; i < tools->u.table.len; i++)
			check_tool(c, &tools->u.table.items[i], s, server_name);
	}
}

static const struct key_spec mcp_top_keys[] = {
    {"server", TOML_ARRAY, "an array of tables ([[server]])", SCOPE_ANY},
};

static void check_mcp_file(struct ctx *c, const struct toml_value *root, struct cfg *cfg)
{
	const struct toml_value *servers = NULL;
	for (size_t i = 0; i < root->u.table.len; i++) {
		const struct toml_kv *kv = &root->u.table.items[i];
		if (kv->keylen != 6 || memcmp(kv->key, "server", 6) != 0) {
			diag_unknown(
			    c, kv,
			    "at the top level of mcp.toml, which holds only [[server]] tables",
			    mcp_top_keys, 1);
			continue;
		}
		if (kv->value->kind != TOML_ARRAY) {
			diag(c, kv->value->pos,
			     "\"server\" must be an array of tables ([[server]]), not %s",
			     toml_kind_name(kv->value->kind));
			continue;
		}
		servers = kv->value;
	}
	if (servers == NULL)
		return;
	cfg->servers = xcalloc(servers->u.array.len, sizeof(*cfg->servers));
	for (size_t i = 0; i < servers->u.array.len; i++) {
		const struct toml_value *t = servers->u.array.items[i];
		if (t->kind != TOML_TABLE) {
			diag(c, t->pos, "\"server\" entries must be tables ([[server]]), not %s",
			     toml_kind_name(t->kind));
			continue;
		}
		check_server(c, t, &cfg->servers[cfg->nservers++]);
	}
}

/* ---- config.toml ---------------------------------------------------------- */

enum mcp_key {
	M_RUNTIME,
	M_EGRESS,
	M_SWARM_REGISTRY,
	M_LINE_MAX,
	M_START,
	M_CALL,
	M_STOP,
	M_LISTEN_CLIENTS,
	M_LISTEN_REQUESTS,
	M_LISTEN_BODY,
	M_LISTEN_IDLE,
	M_LISTEN_READ,
	M_START_MODE,
	M_KEEP_LOGS,
	M_CLIENT_QUEUE,
	M_MCP_COUNT
};

static const struct key_spec mcp_keys[M_MCP_COUNT] = {
    [M_RUNTIME] = {"runtime", TOML_STRING, "a string", SCOPE_ANY},
    [M_EGRESS] = {"egress", TOML_STRING, "a string", SCOPE_ANY},
    [M_SWARM_REGISTRY] = {"swarm_registry", TOML_STRING, "a string", SCOPE_ANY},
    [M_LINE_MAX] = {"line_max", TOML_INTEGER, "an integer", SCOPE_ANY},
    [M_START] = {"start_timeout", TOML_INTEGER, "an integer", SCOPE_ANY},
    [M_CALL] = {"call_timeout", TOML_INTEGER, "an integer", SCOPE_ANY},
    [M_STOP] = {"stop_timeout", TOML_INTEGER, "an integer", SCOPE_ANY},
    [M_LISTEN_CLIENTS] = {"listen_clients", TOML_INTEGER, "an integer", SCOPE_ANY},
    [M_LISTEN_REQUESTS] = {"listen_requests", TOML_INTEGER, "an integer", SCOPE_ANY},
    [M_LISTEN_BODY] = {"listen_body_max", TOML_INTEGER, "an integer", SCOPE_ANY},
    [M_LISTEN_IDLE] = {"listen_idle_timeout", TOML_INTEGER, "an integer", SCOPE_ANY},
    [M_LISTEN_READ] = {"listen_read_timeout", TOML_INTEGER, "an integer", SCOPE_ANY},
    [M_START_MODE] = {"start", TOML_STRING, "a string", SCOPE_ANY},
    [M_KEEP_LOGS] = {"keep_logs_days", TOML_INTEGER, "an integer", SCOPE_ANY},
    [M_CLIENT_QUEUE] = {"client_queue_max", TOML_INTEGER, "an integer", SCOPE_ANY},
};

enum top_key { T_MCP, T_DEBIAN, T_COUNT };

static const struct key_spec config_top_keys[T_COUNT] = {
    [T_MCP] = {"mcp", TOML_TABLE, "a table ([mcp])", SCOPE_ANY},
    [T_DEBIAN] = {"debian", TOML_TABLE, "a table ([debian])", SCOPE_ANY},
};

enum debian_key { D_MIRROR, D_SECURITY, D_KEYRING, D_COUNT };

static const struct key_spec debian_keys[D_COUNT] = {
    [D_MIRROR] = {"mirror", TOML_STRING, "a string", SCOPE_ANY},
    [D_SECURITY] = {"security", TOML_STRING, "a string", SCOPE_ANY},
    [D_KEYRING] = {"keyring", TOML_STRING, "a string", SCOPE_ANY},
};

/* an integer key in [min, max]; false (diagnosed) when out of range */
/* HOST[:PORT] as an image reference begins with it: a name of letters,
 * digits, dots and dashes, a port of digits */
static bool registry_name_ok(const char *s)
{
	size_t i = 0;
	for (; s[i] != '\0' && s[i] != ':'; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '-'))
			return false;
	if (i == 0 || i > 253)
		return false;
	if (s[i] == '\0')
		return true;
	uint64_t port = 0;
	return mg_parse_u64(s + i + 1, 1, 65535, "port", &port, NULL) == 0;
}

static bool int_in(struct ctx *c, const struct toml_kv *kv, const char *unit, int64_t min,
                   int64_t max, uint64_t *out)
{
	const struct toml_value *v = kv->value;
	if (v->u.integer < min || v->u.integer > max) {
		diag(c, v->pos, "\"%s\" %lld is out of range: from %lld to %lld%s", kv->key,
		     (long long)v->u.integer, (long long)min, (long long)max, unit);
		return false;
	}
	*out = (uint64_t)v->u.integer;
	return true;
}

/* [debian]: the archive add takes packages from; each value checked as
 * apt will be given it */
static void check_debian(struct ctx *c, const struct toml_value *t, struct cfg_debian *d)
{
	struct keys k;
	match_keys(c, t, debian_keys, D_COUNT, "in [debian]", &k);
	char **slots[D_COUNT] = {
	    [D_MIRROR] = &d->mirror, [D_SECURITY] = &d->security, [D_KEYRING] = &d->keyring};
	for (size_t i = 0; i < D_COUNT; i++) {
		if (k.kv[i] == NULL)
			continue;
		const struct toml_value *v = k.kv[i]->value;
		const char *text = str_of(c, debian_keys[i].name, v);
		if (text == NULL)
			continue;
		cleanup_free char *what = xasprintf("\"%s\"", debian_keys[i].name);
		cleanup_err struct mg_err *e = NULL;
		int r = i == D_KEYRING ? cfg_check_keyring_path(text, what, &e)
		                       : cfg_check_archive_url(text, what, &e);
		if (r < 0)
			diag_err(c, v->pos, &e);
		else
			*slots[i] = xstrdup(text);
	}
}

static void check_config_file(struct ctx *c, const struct toml_value *root, struct cfg *cfg)
{
	struct keys top;
	match_keys(
	    c, root, config_top_keys, T_COUNT,
	    "at the top level of config.toml, which holds only the [mcp] and [debian] tables",
	    &top);
	if (top.kv[T_DEBIAN] != NULL)
		check_debian(c, top.kv[T_DEBIAN]->value, &cfg->debian);
	if (top.kv[T_MCP] == NULL)
		return;
	const struct toml_value *t = top.kv[T_MCP]->value;
	struct cfg_mcp *m = &cfg->mcp;
	struct keys k;
	match_keys(c, t, mcp_keys, M_MCP_COUNT, "in [mcp]", &k);
	if (k.kv[M_RUNTIME] != NULL) {
		const struct toml_value *v = k.kv[M_RUNTIME]->value;
		const char *rt = str_of(c, "runtime", v);
		if (rt != NULL && strcmp(rt, "podman") == 0)
			m->runtime = CFG_RUNTIME_PODMAN;
		else if (rt != NULL && strcmp(rt, "docker") == 0)
			m->runtime = CFG_RUNTIME_DOCKER;
		else if (rt != NULL && strcmp(rt, "swarm") == 0)
			m->runtime = CFG_RUNTIME_SWARM;
		else if (rt != NULL)
			diag_value(c, v->pos, "\"runtime\"", rt,
			           "must be \"podman\", \"docker\" or \"swarm\" (leave it out for "
			           "podman when it is on PATH, else docker)");
	}
	if (k.kv[M_EGRESS] != NULL) {
		const struct toml_value *v = k.kv[M_EGRESS]->value;
		const char *path = str_of(c, "egress", v);
		if (path != NULL && path[0] != '/')
			diag_value(c, v->pos, "\"egress\"", path, "must be an absolute path");
		else if (path != NULL)
			m->egress = xstrdup(path);
	}
	if (k.kv[M_SWARM_REGISTRY] != NULL) {
		const struct toml_value *v = k.kv[M_SWARM_REGISTRY]->value;
		const char *reg = str_of(c, "swarm_registry", v);
		if (reg != NULL && !registry_name_ok(reg))
			diag_value(c, v->pos, "\"swarm_registry\"", reg,
			           "must be a registry's HOST[:PORT] as images name it, e.g. "
			           "\"registry.example:5000\" (no scheme, no path)");
		else if (reg != NULL)
			m->swarm_registry = xstrdup(reg);
	}
	uint64_t n;
	if (k.kv[M_LINE_MAX] != NULL &&
	    int_in(c, k.kv[M_LINE_MAX], " bytes", CFG_LINE_MAX_MIN, CFG_LINE_MAX_MAX, &n))
		m->line_max = n;
	if (k.kv[M_CLIENT_QUEUE] != NULL && int_in(c, k.kv[M_CLIENT_QUEUE], " bytes",
	                                           CFG_CLIENT_QUEUE_MIN, CFG_CLIENT_QUEUE_MAX, &n))
		m->client_queue_max = n;
	if (k.kv[M_START] != NULL && int_in(c, k.kv[M_START], " seconds", 1, 600, &n))
		m->start_timeout = (unsigned)n;
	if (k.kv[M_CALL] != NULL && int_in(c, k.kv[M_CALL], " seconds", 1, 86400, &n))
		m->call_timeout = (unsigned)n;
	if (k.kv[M_STOP] != NULL && int_in(c, k.kv[M_STOP], " seconds", 1, 60, &n))
		m->stop_timeout = (unsigned)n;
	if (k.kv[M_LISTEN_CLIENTS] != NULL &&
	    int_in(c, k.kv[M_LISTEN_CLIENTS], " clients", 1, CFG_LISTEN_CLIENTS_MAX, &n))
		m->listen_clients = (unsigned)n;
	if (k.kv[M_LISTEN_REQUESTS] != NULL &&
	    int_in(c, k.kv[M_LISTEN_REQUESTS], " requests", 1, CFG_LISTEN_REQUESTS_MAX, &n))
		m->listen_requests = (unsigned)n;
	if (k.kv[M_LISTEN_BODY] != NULL &&
	    int_in(c, k.kv[M_LISTEN_BODY], " bytes", CFG_LINE_MAX_MIN, CFG_LINE_MAX_MAX, &n))
		m->listen_body_max = n;
	if (k.kv[M_START_MODE] != NULL)
		start_of(c, k.kv[M_START_MODE]->value, &m->start);
	if (k.kv[M_LISTEN_IDLE] != NULL &&
	    int_in(c, k.kv[M_LISTEN_IDLE], " seconds", 1, CFG_LISTEN_IDLE_MAX, &n))
		m->listen_idle_timeout = (unsigned)n;
	if (k.kv[M_KEEP_LOGS] != NULL &&
	    int_in(c, k.kv[M_KEEP_LOGS], " days", 1, CFG_KEEP_LOGS_MAX, &n))
		m->keep_logs_days = (unsigned)n;
	if (k.kv[M_LISTEN_READ] != NULL &&
	    int_in(c, k.kv[M_LISTEN_READ], " seconds", 1, CFG_LISTEN_READ_MAX, &n))
		m->listen_read_timeout = (unsigned)n;
	/* a body is one JSON-RPC line for the session: never more than it takes */
	if (m->listen_body_max > m->line_max)
		m->listen_body_max = m->line_max;
}

/* ---- entry points ----------------------------------------------------------- */

static void parse_one(struct ctx *c, enum cfg_file file, const char *text, size_t len,
                      struct cfg *cfg)
{
	struct toml_value *root = NULL;
	cleanup_err struct mg_err *e = NULL;
	c->file = file;
	if (toml_parse(text, len, c->names[file], &root, &e) < 0) {
		diag_add(c, file, 0, 0, xstrdup(mg_err_msg(e)));
		return;
	}
	if (root->kind == TOML_TABLE) {
		if (file == FILE_MCP)
			check_mcp_file(c, root, cfg);
		else
			check_config_file(c, root, cfg);
	}
	toml_free(root);
}

int cfg_parse(const char *mcp_text, size_t mcp_len, const char *mcp_name, const char *config_text,
              size_t config_len, const char *config_name, struct cfg **out, struct mg_err **err)
{
	if (mcp_name == NULL)
		mcp_name = "mcp.toml";
	if (config_name == NULL)
		config_name = "config.toml";
	struct ctx c = {.names = {mcp_name, config_name}, .home = getenv("HOME")};
	struct cfg *cfg = xcalloc(1, sizeof(*cfg));
	cfg->mcp.runtime = CFG_RUNTIME_UNSET;
	cfg->mcp.line_max = CFG_LINE_MAX_DEFAULT;
	cfg->mcp.client_queue_max = CFG_CLIENT_QUEUE_DEFAULT;
	cfg->mcp.start_timeout = CFG_START_TIMEOUT_DEFAULT;
	cfg->mcp.call_timeout = CFG_CALL_TIMEOUT_DEFAULT;
	cfg->mcp.stop_timeout = CFG_STOP_TIMEOUT_DEFAULT;
	cfg->mcp.listen_clients = CFG_LISTEN_CLIENTS_DEFAULT;
	cfg->mcp.listen_requests = CFG_LISTEN_REQUESTS_DEFAULT;
	cfg->mcp.listen_body_max = CFG_LISTEN_BODY_DEFAULT;
	cfg->mcp.listen_idle_timeout = CFG_LISTEN_IDLE_DEFAULT;
	cfg->mcp.listen_read_timeout = CFG_LISTEN_READ_DEFAULT;
	cfg->mcp_path = xstrdup(mcp_name);
	cfg->config_path = config_text != NULL ? xstrdup(config_name) : NULL;

	parse_one(&c, FILE_MCP, mcp_text, mcp_len, cfg);
	if (config_text != NULL)
		parse_one(&c, FILE_CONFIG, config_text, config_len, cfg);

	if (c.ndiags > 0) {
		diag_report(&c, err);
		ctx_free(&c);
		cfg_free(cfg);
		return -1;
	}
	ctx_free(&c);
	*out = cfg;
	return 0;
}

static int read_file(const char *path, char **text, size_t *len, struct mg_err **err)
{
	return mg_read_file(path, CFG_FILE_MAX, text, len, err);
}

int cfg_load_files(const char *mcp_path, const char *config_path, struct cfg **out,
                   struct mg_err **err)
{
	cleanup_free char *mcp_text = NULL;
	cleanup_free char *config_text = NULL;
	size_t mcp_len = 0, config_len = 0;
	if (read_file(mcp_path, &mcp_text, &mcp_len, err) < 0)
		return -1;
	if (config_path != NULL && read_file(config_path, &config_text, &config_len, err) < 0)
		return -1;
	return cfg_parse(mcp_text, mcp_len, mcp_path, config_text, config_len, config_path, out,
	                 err);
}

/* hand *e to the caller's err; returns -1 */
static int pass_err(struct mg_err **err, struct mg_err **e)
{
	if (err != NULL) {
		mg_err_clear(err);
		*err = steal_pointer(e);
	}
	return -1;
}

char *cfg_example_path(void)
{
	/* installed (PREFIX/bin/mcpgate), or the source tree's (./mcpgate,
	 * build/san/mcpgate) */
	static const char *const places[] = {"../share/mcpgate/mcp.toml.example",
	                                     "mcp.toml.example", "../../mcp.toml.example", NULL};
	return mg_find_beside_self(places, R_OK);
}

int cfg_load(const char *config_dir, struct cfg **out, struct mg_err **err)
{
	if (config_dir[0] == '\0')
		config_dir = ".";
	size_t dl = strlen(config_dir);
	while (dl > 1 && config_dir[dl - 1] == '/')
		dl--;
	if (dl == 1 && config_dir[0] == '/')
		dl = 0; /* "/" itself: "/mcp.toml", not "//mcp.toml" */
	cleanup_free char *mcp_path = xasprintf("%.*s/mcp.toml", (int)dl, config_dir);
	cleanup_free char *config_path = xasprintf("%.*s/config.toml", (int)dl, config_dir);
	cleanup_free char *mcp_text = NULL;
	cleanup_free char *config_text = NULL;
	size_t mcp_len = 0, config_len = 0;
	cleanup_err struct mg_err *e = NULL;
	if (read_file(config_path, &config_text, &config_len, &e) < 0 && errno != ENOENT)
		return pass_err(err, &e);
	mg_err_clear(&e);
	if (read_file(mcp_path, &mcp_text, &mcp_len, &e) < 0) {
		if (errno != ENOENT)
			return pass_err(err, &e);
		cleanup_free char *example = cfg_example_path();
		mg_err_set(err,
		           "%s does not exist: mcp.toml lists the servers mcpgate runs (start from "
		           "%s)",
		           mcp_path, example != NULL ? example : "mcp.toml.example");
		if (err != NULL)
			(*err)->code = ENOENT;
		return -1;
	}
	return cfg_parse(mcp_text, mcp_len, mcp_path, config_text, config_len,
	                 config_text != NULL ? config_path : NULL, out, err);
}

void cfg_free(struct cfg *cfg)
{
	if (cfg == NULL)
		return;
	for (size_t i = 0; i < cfg->nservers; i++) {
		struct cfg_server *s = &cfg->servers[i];
		free(s->name);
		free(s->image);
		free(s->image_name);
		free(s->image_digest);
		for (size_t j = 0; j < s->nhosts; j++)
			free(s->hosts[j].host);
		free(s->hosts);
		for (size_t j = 0; j < s->nmounts; j++)
			free(s->mounts[j].path);
		free(s->mounts);
		for (size_t j = 0; j < s->npackages; j++)
			free(s->packages[j]);
		free(s->packages);
		for (size_t j = 0; j < s->ncommand; j++)
			free(s->command[j]);
		free(s->command);
		for (size_t j = 0; j < s->nargs; j++)
			free(s->args[j]);
		free(s->args);
		free(s->url);
		free(s->url_host);
		free(s->ca_file);
		free(s->credential);
		free(s->position_name);
		for (size_t j = 0; j < s->nenv; j++) {
			free(s->env[j].name);
			free(s->env[j].value);
		}
		free(s->env);
		for (size_t j = 0; j < s->nconnect; j++) {
			free(s->connect[j].name);
			free(s->connect[j].host);
			free(s->connect[j].network);
		}
		free(s->connect);
		for (size_t j = 0; j < s->nworkspaces; j++)
			free(s->workspaces[j]);
		free(s->workspaces);
		free(s->manifest);
		for (size_t j = 0; j < s->ntools; j++)
			free(s->tools[j].name);
		free(s->tools);
	}
	free(cfg->servers);
	free(cfg->mcp.egress);
	free(cfg->mcp.swarm_registry);
	free(cfg->debian.mirror);
	free(cfg->debian.security);
	free(cfg->debian.keyring);
	free(cfg->mcp_path);
	free(cfg->config_path);
	free(cfg);
}

const struct cfg_server *cfg_find_server(const struct cfg *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->nservers; i++)
		if (cfg->servers[i].name != NULL && strcmp(cfg->servers[i].name, name) == 0)
			return &cfg->servers[i];
	return NULL;
}

/* ---- places ------------------------------------------------------------------ */

static int xdg_dir(const char *var, const char *fallback, const char *what, char **out,
                   struct mg_err **err)
{
	const char *base = getenv(var);
	const char *sub = "mcpgate";
	if (base == NULL || base[0] != '/') {
		base = getenv("HOME");
		sub = fallback;
	}
	if (base == NULL || base[0] != '/')
		return mg_err_set(err,
		                  "cannot find the %s folder: neither $%s nor $HOME is set to an "
		                  "absolute path",
		                  what, var);
	size_t n = strlen(base);
	while (n > 1 && base[n - 1] == '/')
		n--;
	if (n == 1)
		n = 0; /* "/" itself: no doubled slash */
	*out = xasprintf("%.*s/%s", (int)n, base, sub);
	return 0;
}

int cfg_default_config_dir(char **out, struct mg_err **err)
{
	return xdg_dir("XDG_CONFIG_HOME", ".config/mcpgate", "configuration", out, err);
}

int cfg_default_data_dir(char **out, struct mg_err **err)
{
	return xdg_dir("XDG_DATA_HOME", ".local/share/mcpgate", "data", out, err);
}

int cfg_default_state_dir(char **out, struct mg_err **err)
{
	return xdg_dir("XDG_STATE_HOME", ".local/state/mcpgate", "state", out, err);
}
