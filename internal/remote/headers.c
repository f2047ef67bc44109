/* The request headers of MCP 2026-07-28's streamable HTTP (basic/transports,
 * "Request Metadata"): a value's header form, a tool's x-mcp-header
 * annotations checked and read, and a call's Mcp-Param-* lines. Pure
 * functions of their arguments, for the bridge and its tests. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sodium.h>

#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/xalloc.h"
#include "internal/remote/remote.h"

#define SENTINEL_PREFIX "=?base64?"
#define SENTINEL_SUFFIX "?="
/* JavaScript's safe integers: what an integer parameter may carry */
#define SAFE_INTEGER_MAX 9007199254740991LL

/* The header form of value: as it is when every byte is visible ASCII or an
 * inner space and it cannot be read as the sentinel, else the sentinel form
 * of its base64. A tab is encoded too: it is whitespace a proxy may fold. */
char *remote_header_value(const char *value, size_t len)
{
	bool plain = len == 0 || (value[0] != ' ' && value[len - 1] != ' ');
	for (size_t i = 0; plain && i < len; i++)
		if ((unsigned char)value[i] < 0x20 || (unsigned char)value[i] > 0x7e)
			plain = false;
	size_t pre = sizeof(SENTINEL_PREFIX) - 1, suf = sizeof(SENTINEL_SUFFIX) - 1;
	if (plain && len >= pre + suf && memcmp(value, SENTINEL_PREFIX, pre) == 0 &&
	    memcmp(value + len - suf, SENTINEL_SUFFIX, suf) == 0)
		plain = false;
	if (plain)
		return xstrndup(value, len);
	size_t b64 = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL);
	char *out = xmalloc(pre + b64 + suf);
	memcpy(out, SENTINEL_PREFIX, pre);
	sodium_bin2base64(out + pre, b64, (const unsigned char *)value, len,
	                  sodium_base64_VARIANT_ORIGINAL);
	size_t at = pre + strlen(out + pre);
	memcpy(out + at, SENTINEL_SUFFIX, suf + 1);
	return out;
}

/* RFC 9110's tchar */
static bool tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* Printable for a message: the name as given when it is printable ASCII */
static void put_shown(struct mg_buf *b, const char *s, size_t n)
{
	for (size_t i = 0; i < n && i < 64; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f)
			mg_buf_putc(b, (char)c, NULL);
		else
			mg_buf_printf(b, NULL, "\\x%02x", c);
	}
}

void remote_tool_params_free(struct remote_tool_params *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->n; i++) {
		free(p->params[i].header);
		strv_free(&p->params[i].path);
	}
	free(p->params);
	free(p->tool);
	free(p);
}

/* Keywords whose values are instances, not schemas: a key named x-mcp-header
 * in them is data */
static bool instance_keyword(const char *key)
{
	return strcmp(key, "const") == 0 || strcmp(key, "default") == 0 ||
	       strcmp(key, "enum") == 0 || strcmp(key, "examples") == 0;
}

struct walk {
	struct remote_tool_params *p;
	struct strv path; /* the properties chain to the schema in hand */
	struct mg_buf why;
};

static int annotate(struct walk *w, const struct json_value *schema, const struct json_value *name)
{
	struct remote_tool_params *p = w->p;
	struct mg_buf at = MG_BUF_INIT(4096);
	for (size_t i = 0; i < w->path.n; i++)
		mg_buf_printf(&at, NULL, "%s%s", i > 0 ? "." : "", w->path.v[i]);
	cleanup_free char *where = mg_buf_steal(&at, NULL);
	if (name->kind != JSON_STRING) {
		mg_buf_printf(&w->why, NULL, "the x-mcp-header of property %s is not a string",
		              where);
		return -1;
	}
	const char *s = name->u.str.ptr;
	size_t n = name->u.str.len;
	if (n == 0) {
		mg_buf_printf(&w->why, NULL, "the x-mcp-header of property %s is empty", where);
		return -1;
	}
	if (n > REMOTE_PARAM_NAME_MAX) {
		mg_buf_printf(&w->why, NULL,
		              "the x-mcp-header of property %s is over %d characters", where,
		              REMOTE_PARAM_NAME_MAX);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (!tchar((unsigned char)s[i])) {
			mg_buf_printf(&w->why, NULL, "the x-mcp-header \"");
			put_shown(&w->why, s, n);
			mg_buf_printf(&w->why, NULL,
			              "\" of property %s is not a header name (RFC 9110 token "
			              "characters only)",
			              where);
			return -1;
		}
	for (size_t i = 0; i < p->n; i++)
		if (strcasecmp(p->params[i].header, s) == 0) {
			mg_buf_printf(&w->why, NULL,
			              "the x-mcp-header \"%s\" of property %s repeats that of "
			              "property ",
			              s, where);
			for (size_t k = 0; k < p->params[i].path.n; k++)
				mg_buf_printf(&w->why, NULL, "%s%s", k > 0 ? "." : "",
				              p->params[i].path.v[k]);
			mg_buf_puts(&w->why, " (names are compared without case)", NULL);
			return -1;
		}
	const struct json_value *type = json_get(schema, "type");
	enum remote_param_type t;
	if (type != NULL && type->kind == JSON_STRING && strcmp(type->u.str.ptr, "string") == 0)
		t = REMOTE_PARAM_STRING;
	else if (type != NULL && type->kind == JSON_STRING &&
	         strcmp(type->u.str.ptr, "integer") == 0)
		t = REMOTE_PARAM_INTEGER;
	else if (type != NULL && type->kind == JSON_STRING &&
	         strcmp(type->u.str.ptr, "boolean") == 0)
		t = REMOTE_PARAM_BOOLEAN;
	else {
		mg_buf_printf(&w->why, NULL,
		              "property %s carries x-mcp-header \"%s\" but its type is %s%s%s, "
		              "not string, integer or boolean",
		              where, s, type == NULL || type->kind != JSON_STRING ? "" : "\"",
		              type == NULL                ? "not given"
		              : type->kind != JSON_STRING ? "not one type name"
		                                          : type->u.str.ptr,
		              type == NULL || type->kind != JSON_STRING ? "" : "\"");
		return -1;
	}
	if (p->n >= REMOTE_PARAMS_MAX) {
		mg_buf_printf(&w->why, NULL, "it has more than %d x-mcp-header parameters",
		              REMOTE_PARAMS_MAX);
		return -1;
	}
	p->params = xreallocarray(p->params, p->n + 1, sizeof(*p->params));
	struct remote_param *rp = &p->params[p->n++];
	memset(rp, 0, sizeof(*rp));
	rp->header = xstrndup(s, n);
	rp->type = t;
	for (size_t i = 0; i < w->path.n; i++)
		strv_push(&rp->path, w->path.v[i]);
	return 0;
}

/* in_chain: schema is reached from the root through properties alone */
static int walk_schema(struct walk *w, const struct json_value *schema, bool in_chain,
                       unsigned depth)
{
	if (depth > 64) {
		mg_buf_puts(&w->why, "its inputSchema nests deeper than 64", NULL);
		return -1;
	}
	if (schema->kind == JSON_ARRAY) {
		for (size_t i = 0; i < schema->u.arr.len; i++)
			if (walk_schema(w, schema->u.arr.items[i], false, depth + 1) < 0)
				return -1;
		return 0;
	}
	if (schema->kind != JSON_OBJECT)
		return 0;
	for (size_t i = 0; i < schema->u.obj.len; i++) {
		const struct json_member *m = &schema->u.obj.items[i];
		if (strcmp(m->key, "x-mcp-header") == 0) {
			if (in_chain && w->path.n > 0) {
				if (annotate(w, schema, m->value) < 0)
					return -1;
				continue;
			}
			mg_buf_puts(&w->why, "an x-mcp-header is ", NULL);
			mg_buf_puts(&w->why,
			            in_chain ? "on the schema's root, not on a property"
			                     : "on a schema not reached through properties alone "
			                       "(items, $ref, $defs, oneOf, anyOf, allOf, not, "
			                       "if/then/else and the like are not allowed)",
			            NULL);
			return -1;
		}
		if (instance_keyword(m->key))
			continue;
		if (strcmp(m->key, "properties") == 0 && m->value->kind == JSON_OBJECT) {
			for (size_t k = 0; k < m->value->u.obj.len; k++) {
				const struct json_member *prop = &m->value->u.obj.items[k];
				strv_push(&w->path, prop->key);
				int r = walk_schema(w, prop->value, in_chain, depth + 1);
				free(w->path.v[--w->path.n]);
				w->path.v[w->path.n] = NULL;
				if (r < 0)
					return -1;
			}
			continue;
		}
		if (walk_schema(w, m->value, false, depth + 1) < 0)
			return -1;
	}
	return 0;
}

int remote_tool_params(const struct json_value *tool, struct remote_tool_params **out, char **why)
{
	*out = NULL;
	*why = NULL;
	const char *name = json_get_string(tool, "name");
	const struct json_value *schema = json_get(tool, "inputSchema");
	struct walk w = {xcalloc(1, sizeof(*w.p)), STRV_INIT, MG_BUF_INIT(4096)};
	w.p->tool = xstrdup(name != NULL ? name : "");
	int r = schema != NULL ? walk_schema(&w, schema, true, 0) : 0;
	strv_free(&w.path);
	if (r < 0) {
		*why = mg_buf_steal(&w.why, NULL);
		remote_tool_params_free(w.p);
		return -1;
	}
	mg_buf_free(&w.why);
	*out = w.p;
	return 0;
}

/* An integer in JavaScript's safe range, written as one ("42") or with a
 * fraction of zeros ("42.0", which JSON Schema counts as an integer). */
static bool safe_integer(const struct json_value *v, int64_t *out)
{
	if (v->kind != JSON_NUMBER)
		return false;
	const char *dot = memchr(v->u.num.ptr, '.', v->u.num.len);
	struct json_value whole = *v;
	if (dot != NULL) {
		size_t int_len = (size_t)(dot - v->u.num.ptr);
		for (size_t i = int_len + 1; i < v->u.num.len; i++)
			if (v->u.num.ptr[i] != '0')
				return false;
		whole.u.num.len = int_len;
	}
	return json_number_int64(&whole, out) == 0 && *out >= -SAFE_INTEGER_MAX &&
	       *out <= SAFE_INTEGER_MAX;
}

/* The value at path in arguments, or NULL */
static const struct json_value *at_path(const struct json_value *args, const struct strv *path)
{
	const struct json_value *v = args;
	for (size_t i = 0; v != NULL && i < path->n; i++)
		v = json_get(v, path->v[i]);
	return v;
}

/* An argument's path as the person reads it: a.b.c (allocated) */
static char *path_text(const struct strv *path)
{
	struct mg_buf b = MG_BUF_INIT(4096);
	for (size_t k = 0; k < path->n; k++)
		mg_buf_printf(&b, NULL, "%s%s", k > 0 ? "." : "", path->v[k]);
	return mg_buf_steal(&b, NULL);
}

int remote_param_headers(const struct remote_tool_params *p, const struct json_value *arguments,
                         struct strv *lines, char **why)
{
	*why = NULL;
	for (size_t i = 0; p != NULL && i < p->n; i++) {
		const struct remote_param *rp = &p->params[i];
		const struct json_value *v =
		    arguments != NULL ? at_path(arguments, &rp->path) : NULL;
		if (v == NULL || v->kind == JSON_NULL)
			continue; /* no value: no header */
		cleanup_free char *text = NULL;
		const char *want = NULL;
		switch (rp->type) {
		case REMOTE_PARAM_STRING:
			if (v->kind == JSON_STRING)
				text = remote_header_value(v->u.str.ptr, v->u.str.len);
			else
				want = "a string";
			break;
		case REMOTE_PARAM_INTEGER: {
			int64_t n;
			if (safe_integer(v, &n))
				text = xasprintf("%" PRId64, n);
			else
				want = "an integer from -(2^53-1) to 2^53-1";
			break;
		}
		case REMOTE_PARAM_BOOLEAN:
			if (v->kind == JSON_BOOL)
				text = xstrdup(v->u.boolean ? "true" : "false");
			else
				want = "true or false";
			break;
		}
		if (text == NULL) {
			cleanup_free char *name = path_text(&rp->path);
			*why = xasprintf(
			    "argument %s goes in header Mcp-Param-%s, so it must be %s as "
			    "the tool's inputSchema says",
			    name, rp->header, want != NULL ? want : "valid");
			return -1;
		}
		if (strlen(text) > REMOTE_PARAM_VALUE_MAX) {
			cleanup_free char *name = path_text(&rp->path);
			*why = xasprintf(
			    "argument %s goes in header Mcp-Param-%s, and as a header it is "
			    "%zu bytes, over the %d mcpgate sends",
			    name, rp->header, strlen(text), REMOTE_PARAM_VALUE_MAX);
			return -1;
		}
		/* curl sends "Name;" as a header with an empty value ("Name:" drops it) */
		if (text[0] == '\0')
			strv_pushf(lines, "Mcp-Param-%s;", rp->header);
		else
			strv_pushf(lines, "Mcp-Param-%s: %s", rp->header, text);
	}
	return 0;
}
