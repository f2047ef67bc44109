/* JSON with comments (JSONC), edited as text.
 *
 * The parser accepts JSON plus // and block comments and trailing commas
 * (what VS Code, Zed and Gemini CLI read), checks the whole text, and keeps
 * where things are: the span of every member of the top-level object, of the
 * servers object's members, and of the entries' members (which is all the
 * editor needs; deeper values are checked and forgotten, so a large
 * ~/.claude.json costs little). The editor then inserts, replaces or cuts
 * text at those spans, in the file's own indentation and line endings. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal/base/cleanup.h"
#include "internal/base/utf8.h"
#include "internal/base/xalloc.h"
#include "internal/clients/clients-internal.h"
#include "internal/json/json.h"

#define JSONC_DEPTH_MAX 512
#define NO_COMMA        SIZE_MAX

enum jkind { J_NONE, J_OBJECT, J_ARRAY, J_STRING, J_NUMBER, J_BOOL, J_NULL };

struct jmember;

struct jnode {
	enum jkind kind;
	size_t start; /* the value's text is [start, end) */
	size_t end;
	struct jmember *members; /* objects that are kept */
	size_t n;
	size_t cap;
	char *str; /* strings that are kept: decoded, NUL-terminated */
	size_t len;
};

struct jmember {
	size_t key_start; /* at its opening quote */
	char *key;        /* decoded when the object is kept */
	size_t keylen;
	struct jnode value;
	size_t comma; /* the ',' after the value, or NO_COMMA */
};

struct jparser {
	const char *text;
	size_t len;
	size_t off;
	const char *filename;
	const char *servers_key;
	struct mg_err **err;
};

struct jdoc {
	const char *text;
	size_t len;
	const char *filename;
	struct jnode root; /* J_NONE: the text holds no value */
};

static void jnode_free(struct jnode *v)
{
	for (size_t i = 0; i < v->n; i++) {
		free(v->members[i].key);
		jnode_free(&v->members[i].value);
	}
	free(v->members);
	free(v->str);
}

static const char *a_kind(enum jkind k)
{
	switch (k) {
	case J_OBJECT:
		return "an object";
	case J_ARRAY:
		return "an array";
	case J_STRING:
		return "a string";
	case J_NUMBER:
		return "a number";
	case J_BOOL:
		return "a boolean";
	case J_NULL:
		return "null";
	case J_NONE:
		break;
	}
	return "nothing";
}

__attribute__((format(printf, 3, 4))) static int fail_at(const struct jparser *p, size_t off,
                                                         const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cleanup_free char *msg = xvasprintf(fmt, ap);
	va_end(ap);
	unsigned line, col;
	clients_line_col(p->text, off, &line, &col);
	return mg_err_set(p->err, "%s:%u:%u: %s", p->filename, line, col, msg);
}

/* What stands at the parser's offset, for "expected X, found Y" */
static const char *found(const struct jparser *p, char buf[16])
{
	if (p->off >= p->len)
		return "the end of the file";
	unsigned char c = (unsigned char)p->text[p->off];
	if (c > 0x20 && c < 0x7f)
		snprintf(buf, 16, "'%c'", c);
	else
		snprintf(buf, 16, "byte 0x%02x", c);
	return buf;
}

static bool at(const struct jparser *p, char c)
{
	return p->off < p->len && p->text[p->off] == c;
}

static bool at2(const struct jparser *p, char c1, char c2)
{
	return p->off + 1 < p->len && p->text[p->off] == c1 && p->text[p->off + 1] == c2;
}

/* Whitespace and comments */
static int skip_blank(struct jparser *p)
{
	for (;;) {
		while (at(p, ' ') || at(p, '\t') || at(p, '\r') || at(p, '\n'))
			p->off++;
		if (at2(p, '/', '/')) {
			while (p->off < p->len && p->text[p->off] != '\n')
				p->off++;
			continue;
		}
		if (at2(p, '/', '*')) {
			size_t start = p->off;
			p->off += 2;
			while (!at2(p, '*', '/')) {
				if (p->off >= p->len)
					return fail_at(p, start,
					               "a comment that does not end (no */)");
				p->off++;
			}
			p->off += 2;
			continue;
		}
		return 0;
	}
}

static int hex4(const struct jparser *p, size_t off, uint32_t *out)
{
	uint32_t v = 0;
	for (size_t i = 0; i < 4; i++) {
		char c = off + i < p->len ? p->text[off + i] : '\0';
		int d = c >= '0' && c <= '9'   ? c - '0'
		        : c >= 'a' && c <= 'f' ? c - 'a' + 10
		        : c >= 'A' && c <= 'F' ? c - 'A' + 10
		                               : -1;
		if (d < 0)
			return fail_at(p, off - 2, "\\u needs four hex digits");
		v = v * 16 + (uint32_t)d;
	}
	*out = v;
	return 0;
}

/* At '"'. Decoded into *s when keep (else only checked). */
static int parse_string(struct jparser *p, bool keep, char **s, size_t *n)
{
	size_t start = p->off++;
	struct mg_buf b = MG_BUF_INIT(CLIENTS_FILE_MAX);
	int r = -1;
	for (;;) {
		if (p->off >= p->len) {
			fail_at(p, start, "a string that does not end (no closing '\"')");
			goto out;
		}
		unsigned char c = (unsigned char)p->text[p->off];
		if (c == '"') {
			p->off++;
			break;
		}
		if (c < 0x20) {
			fail_at(p, p->off, "a control character (byte 0x%02x) in a string", c);
			goto out;
		}
		if (c >= 0x80) {
			size_t k = mg_utf8_seq((const unsigned char *)p->text + p->off,
			                       p->len - p->off, NULL);
			if (k == 0) {
				fail_at(p, p->off, "invalid UTF-8 in a string");
				goto out;
			}
			if (keep)
				mg_buf_append(&b, p->text + p->off, k, NULL);
			p->off += k;
			continue;
		}
		if (c != '\\') {
			/* the plain run up to the next quote, backslash, control or
			 * non-ASCII byte, in one append */
			size_t end = p->off + 1;
			while (end < p->len && p->text[end] != '"' && p->text[end] != '\\' &&
			       (unsigned char)p->text[end] >= 0x20 &&
			       (unsigned char)p->text[end] < 0x80)
				end++;
			if (keep)
				mg_buf_append(&b, p->text + p->off, end - p->off, NULL);
			p->off = end;
			continue;
		}
		char e = p->off + 1 < p->len ? p->text[p->off + 1] : '\0';
		const char *plain = strchr("\"\\/bfnrt", e);
		if (e != '\0' && plain != NULL) {
			static const char decoded[] = "\"\\/\b\f\n\r\t";
			if (keep)
				mg_buf_putc(&b, decoded[plain - "\"\\/bfnrt"], NULL);
			p->off += 2;
			continue;
		}
		if (e != 'u') {
			fail_at(p, p->off, "an escape that JSON does not have (\\%c)",
			        e > 0x20 ? e : '?');
			goto out;
		}
		uint32_t cp, low;
		if (hex4(p, p->off + 2, &cp) < 0)
			goto out;
		size_t esc = p->off;
		p->off += 6;
		if (cp >= 0xD800 && cp <= 0xDBFF) {
			if (!at2(p, '\\', 'u') || hex4(p, p->off + 2, &low) < 0 || low < 0xDC00 ||
			    low > 0xDFFF) {
				fail_at(p, esc, "a \\u escape of half a surrogate pair");
				goto out;
			}
			cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
			p->off += 6;
		} else if (cp >= 0xDC00 && cp <= 0xDFFF) {
			fail_at(p, esc, "a \\u escape of half a surrogate pair");
			goto out;
		}
		char u[4];
		size_t k = mg_utf8_encode(cp, u);
		if (keep)
			mg_buf_append(&b, u, k, NULL);
	}
	r = 0;
	if (keep)
		*s = mg_buf_steal(&b, n);
out:
	mg_buf_free(&b);
	return r;
}

static int parse_value(struct jparser *p, unsigned depth, struct jnode *v, bool keep,
                       struct json_value **tree);

static bool is_servers_key(const struct jparser *p, const struct jmember *m)
{
	return m->key != NULL && m->keylen == strlen(p->servers_key) &&
	       memcmp(m->key, p->servers_key, m->keylen) == 0;
}

/* At '{'. When keep, the members are recorded; their values are kept on the
 * way to the entries: the servers member of the top level, then the entries
 * and their members (a command may be an object, as Zed once wrote it). */
static int parse_object(struct jparser *p, unsigned depth, struct jnode *v, bool keep,
                        struct json_value **tree)
{
	char buf[16];
	v->kind = J_OBJECT;
	if (tree != NULL)
		*tree = json_new_object();
	p->off++;
	if (skip_blank(p) < 0)
		return -1;
	if (at(p, '}')) {
		p->off++;
		return 0;
	}
	for (;;) {
		if (!at(p, '"'))
			return fail_at(p, p->off,
			               "expected a member name in double quotes, found %s",
			               found(p, buf));
		struct jmember m = {.key_start = p->off, .comma = NO_COMMA};
		struct json_value *child = NULL;
		if (parse_string(p, keep || tree != NULL, &m.key, &m.keylen) < 0 ||
		    skip_blank(p) < 0)
			goto fail;
		if (!at(p, ':')) {
			fail_at(p, p->off, "expected ':' after the member name, found %s",
			        found(p, buf));
			goto fail;
		}
		p->off++;
		bool keep_value = keep && (depth == 0 ? is_servers_key(p, &m) : depth <= 3);
		if (skip_blank(p) < 0 || parse_value(p, depth + 1, &m.value, keep_value,
		                                     tree != NULL ? &child : NULL) < 0)
			goto fail;
		if (tree != NULL) {
			json_object_add(*tree, m.key, m.keylen, child);
			child = NULL;
		}
		if (skip_blank(p) < 0)
			goto fail;
		bool more = at(p, ',');
		if (more) {
			m.comma = p->off++;
			if (skip_blank(p) < 0)
				goto fail;
		}
		if (keep) {
			if (v->n == v->cap) {
				v->cap = v->cap ? v->cap * 2 : 8;
				v->members = xreallocarray(v->members, v->cap, sizeof(*v->members));
			}
			v->members[v->n++] = m;
		} else {
			free(m.key);
			m.key = NULL;
			jnode_free(&m.value);
		}
		if (at(p, '}')) {
			p->off++;
			return 0;
		}
		if (!more)
			return fail_at(p, p->off, "expected ',' or '}' after a member, found %s",
			               found(p, buf));
		continue;
	fail:
		json_free(child);
		free(m.key);
		jnode_free(&m.value);
		return -1;
	}
}

static int parse_array(struct jparser *p, unsigned depth, struct jnode *v, struct json_value **tree)
{
	char buf[16];
	v->kind = J_ARRAY;
	if (tree != NULL)
		*tree = json_new_array();
	p->off++;
	if (skip_blank(p) < 0)
		return -1;
	while (!at(p, ']')) {
		struct jnode item = {0};
		struct json_value *child = NULL;
		int r = parse_value(p, depth + 1, &item, false, tree != NULL ? &child : NULL);
		jnode_free(&item);
		if (child != NULL)
			json_array_push(*tree, child);
		if (r < 0 || skip_blank(p) < 0)
			return -1;
		if (at(p, ',')) {
			p->off++;
			if (skip_blank(p) < 0)
				return -1;
		} else if (!at(p, ']')) {
			return fail_at(p, p->off, "expected ',' or ']' after an element, found %s",
			               found(p, buf));
		}
	}
	p->off++;
	return 0;
}

static int parse_literal(struct jparser *p, struct jnode *v, struct json_value **tree)
{
	static const struct {
		const char *word;
		enum jkind kind;
	} words[] = {{"true", J_BOOL}, {"false", J_BOOL}, {"null", J_NULL}};
	char buf[16];
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		size_t n = strlen(words[i].word);
		if (p->len - p->off < n || memcmp(p->text + p->off, words[i].word, n) != 0)
			continue;
		char next = p->off + n < p->len ? p->text[p->off + n] : '\0';
		if ((next >= 'a' && next <= 'z') || (next >= 'A' && next <= 'Z') ||
		    (next >= '0' && next <= '9') || next == '_')
			break;
		v->kind = words[i].kind;
		p->off += n;
		if (tree != NULL)
			*tree = v->kind == J_NULL ? json_new_null() : json_new_bool(i == 0);
		return 0;
	}
	return fail_at(p, p->off, "expected a value, found %s", found(p, buf));
}

/* At a value: its spans in v (and the members kept when keep), and when
 * tree is not NULL the whole value as a tree in *tree (what was made of it
 * so far on failure, for the caller to free) */
static int parse_value(struct jparser *p, unsigned depth, struct jnode *v, bool keep,
                       struct json_value **tree)
{
	char buf[16];
	if (depth > JSONC_DEPTH_MAX)
		return fail_at(p, p->off, "nested deeper than %d levels", JSONC_DEPTH_MAX);
	v->start = p->off;
	int r;
	char c = p->off < p->len ? p->text[p->off] : '\0';
	if (c == '{') {
		r = parse_object(p, depth, v, keep, tree);
	} else if (c == '[') {
		r = parse_array(p, depth, v, tree);
	} else if (c == '"') {
		v->kind = J_STRING;
		r = parse_string(p, keep || tree != NULL, &v->str, &v->len);
		if (r == 0 && tree != NULL)
			*tree = json_new_stringn(v->str, v->len);
		if (r == 0 && !keep) {
			free(v->str);
			v->str = NULL;
		}
	} else if (c == '-' || (c >= '0' && c <= '9')) {
		size_t start = p->off;
		while (p->off < p->len && p->text[p->off] != '\0' &&
		       strchr("+-.0123456789eE", p->text[p->off]) != NULL)
			p->off++;
		v->kind = J_NUMBER;
		r = json_number_valid(p->text + start, p->off - start)
		        ? 0
		        : fail_at(p, start, "an invalid number");
		if (r == 0 && tree != NULL)
			*tree = json_new_number_text(p->text + start, p->off - start);
	} else if (c == 't' || c == 'f' || c == 'n') {
		r = parse_literal(p, v, tree);
	} else {
		r = fail_at(p, p->off, "expected a value, found %s", found(p, buf));
	}
	v->end = p->off;
	return r;
}

/* The document's spans in d; with tree, the whole of it in *tree too (NULL
 * when it holds no value) */
static int doc_parse(struct jdoc *d, const struct clients_client *c, const char *text, size_t len,
                     const char *filename, struct json_value **tree, struct mg_err **err)
{
	*d = (struct jdoc){text, len, filename, {0}};
	struct jparser p = {text, len, 0, filename, c->servers_key, err};
	char buf[16];
	if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
		p.off = 3;
	if (skip_blank(&p) < 0)
		return -1;
	if (p.off >= len)
		return 0;
	if (parse_value(&p, 0, &d->root, true, tree) < 0 || skip_blank(&p) < 0)
		return -1;
	if (p.off < len)
		return fail_at(&p, p.off, "%s after the top-level value", found(&p, buf));
	return 0;
}

static int doc_fail(const struct jdoc *d, size_t off, struct mg_err **err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int doc_fail(const struct jdoc *d, size_t off, struct mg_err **err, const char *fmt, ...)
{
	struct jparser p = {d->text, d->len, off, d->filename, NULL, err};
	va_list ap;
	va_start(ap, fmt);
	cleanup_free char *msg = xvasprintf(fmt, ap);
	va_end(ap);
	return fail_at(&p, off, "%s", msg);
}

/* The member key of object o (NULL when absent); a key written twice is an
 * error, since which one the client reads is its own business */
static int find_member(const struct jdoc *d, const struct jnode *o, const char *key,
                       const char *where, const struct jmember **out, struct mg_err **err)
{
	size_t n = strlen(key);
	*out = NULL;
	for (size_t i = 0; i < o->n; i++) {
		const struct jmember *m = &o->members[i];
		if (m->keylen != n || memcmp(m->key, key, n) != 0)
			continue;
		if (*out != NULL) {
			unsigned line, col;
			clients_line_col(d->text, (*out)->key_start, &line, &col);
			return doc_fail(d, m->key_start, err,
			                "\"%s\" is written twice in %s (also at %u:%u)", key, where,
			                line, col);
		}
		*out = m;
	}
	return 0;
}

/* The top-level servers member (NULL when absent), which must hold an object */
static int doc_servers(const struct jdoc *d, const struct clients_client *c,
                       const struct jmember **out, struct mg_err **err)
{
	*out = NULL;
	if (d->root.kind == J_NONE)
		return 0;
	if (d->root.kind != J_OBJECT)
		return doc_fail(d, d->root.start, err, "the top level is %s, not an object",
		                a_kind(d->root.kind));
	if (find_member(d, &d->root, c->servers_key, "the top level", out, err) < 0)
		return -1;
	if (*out != NULL && (*out)->value.kind != J_OBJECT)
		return doc_fail(d, (*out)->value.start, err, "\"%s\" is %s, not an object",
		                c->servers_key, a_kind((*out)->value.kind));
	return 0;
}

/* An entry is mcpgate's when its command is: "command": "/x/mcpgate", or
 * "command": {"path": "/x/mcpgate"} as Zed wrote it before 0.190 */
static const struct jnode *entry_command(const struct jnode *entry)
{
	if (entry->kind != J_OBJECT)
		return NULL;
	for (size_t i = 0; i < entry->n; i++) {
		const struct jmember *m = &entry->members[i];
		if (m->keylen != 7 || memcmp(m->key, "command", 7) != 0)
			continue;
		if (m->value.kind == J_STRING)
			return &m->value;
		for (size_t k = 0; m->value.kind == J_OBJECT && k < m->value.n; k++) {
			const struct jmember *pm = &m->value.members[k];
			if (pm->keylen == 4 && memcmp(pm->key, "path", 4) == 0 &&
			    pm->value.kind == J_STRING)
				return &pm->value;
		}
		return NULL;
	}
	return NULL;
}

static bool entry_is_mcpgate(const struct jnode *entry)
{
	const struct jnode *cmd = entry_command(entry);
	return cmd != NULL && clients_is_mcpgate(cmd->str, cmd->len);
}

/* The entry called name in the servers object, which is not touched unless
 * it is mcpgate's */
static int doc_entry(const struct jdoc *d, const struct clients_client *c,
                     const struct jmember *servers, const char *name, const struct jmember **out,
                     struct mg_err **err)
{
	*out = NULL;
	if (servers == NULL)
		return 0;
	cleanup_free char *where = xasprintf("\"%s\"", c->servers_key);
	if (find_member(d, &servers->value, name, where, out, err) < 0)
		return -1;
	if (*out == NULL || entry_is_mcpgate(&(*out)->value))
		return 0;
	const struct jnode *cmd = entry_command(&(*out)->value);
	unsigned line, col;
	clients_line_col(d->text, (*out)->key_start, &line, &col);
	return clients_not_ours(d->filename, line, col, c->servers_key, name,
	                        cmd != NULL ? cmd->str : NULL, cmd != NULL ? cmd->len : 0, err);
}

/* The document, its servers member and the entry called name (each NULL
 * when absent); on failure nothing is left to free */
static int doc_open(struct jdoc *d, const struct clients_client *c, const char *text, size_t len,
                    const char *filename, const char *name, const struct jmember **servers,
                    const struct jmember **entry, struct mg_err **err)
{
	*servers = *entry = NULL;
	if (doc_parse(d, c, text, len, filename, NULL, err) < 0 ||
	    doc_servers(d, c, servers, err) < 0 ||
	    doc_entry(d, c, *servers, name, entry, err) < 0) {
		jnode_free(&d->root);
		d->root = (struct jnode){0};
		return -1;
	}
	return 0;
}

/* ---- layout --------------------------------------------------------------- */

static size_t line_start(const char *t, size_t off)
{
	while (off > 0 && t[off - 1] != '\n')
		off--;
	return off;
}

static bool begins_line(const char *t, size_t off)
{
	for (size_t i = line_start(t, off); i < off; i++)
		if (t[i] != ' ' && t[i] != '\t')
			return false;
	return true;
}

static char *line_indent(const char *t, size_t len, size_t off)
{
	size_t s = line_start(t, off), e = s;
	while (e < len && (t[e] == ' ' || t[e] == '\t'))
		e++;
	return xstrndup(t + s, e - s);
}

static bool spans_lines(const char *t, const struct jnode *v)
{
	return memchr(t + v->start, '\n', v->end - v->start) != NULL;
}

static bool blank(const char *t, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		if (t[i] != ' ' && t[i] != '\t' && t[i] != '\r' && t[i] != '\n')
			return false;
	return true;
}

/* One level of indentation: what the first member of the top level (or of
 * the servers object) has more than its object's line, else two spaces */
static char *indent_unit(const struct jdoc *d, const struct jnode *servers)
{
	const struct jnode *objs[] = {&d->root, servers};
	for (size_t i = 0; i < 2; i++) {
		const struct jnode *o = objs[i];
		if (o == NULL || o->kind != J_OBJECT || o->n == 0 ||
		    !begins_line(d->text, o->members[0].key_start))
			continue;
		cleanup_free char *outer = line_indent(d->text, d->len, o->start);
		cleanup_free char *inner = line_indent(d->text, d->len, o->members[0].key_start);
		size_t n = strlen(outer);
		if (strlen(inner) > n && strncmp(inner, outer, n) == 0)
			return xstrdup(inner + n);
	}
	return xstrdup("  ");
}

/* Where a new member goes after the last one: past its comma and a comment
 * on the same line */
static size_t line_tail(const char *t, size_t len, size_t from)
{
	size_t end = from, i = from;
	for (;;) {
		while (i < len && (t[i] == ' ' || t[i] == '\t'))
			i++;
		if (i + 1 < len && t[i] == '/' && t[i + 1] == '/') {
			while (i < len && t[i] != '\n')
				i++;
			return i > from && t[i - 1] == '\r' ? i - 1 : i;
		}
		if (i + 1 < len && t[i] == '/' && t[i + 1] == '*') {
			const char *close = memmem(t + i + 2, len - i - 2, "*/", 2);
			const char *nl = memchr(t + i, '\n', len - i);
			if (close == NULL || (nl != NULL && nl < close))
				return end;
			i = end = (size_t)(close - t) + 2;
			continue;
		}
		return end;
	}
}

/* ---- what is written ------------------------------------------------------ */

struct jwrite {
	const struct clients_client *c;
	const struct clients_entry *e;
	const char *unit;
	const char *eol;
};

/* Before a field of an object: on its own line at base+unit, or after ", " */
static void field_sep(struct mg_buf *b, const struct jwrite *w, const char *base, bool first)
{
	if (!first)
		mg_buf_putc(b, ',', NULL);
	if (base != NULL)
		mg_buf_printf(b, NULL, "%s%s%s", w->eol, base, w->unit);
	else if (!first)
		mg_buf_putc(b, ' ', NULL);
}

static void object_end(struct mg_buf *b, const struct jwrite *w, const char *base)
{
	if (base != NULL)
		mg_buf_printf(b, NULL, "%s%s", w->eol, base);
	mg_buf_putc(b, '}', NULL);
}

/* The entry's value; base NULL writes it on one line */
static void put_entry(struct mg_buf *b, const struct jwrite *w, const char *base)
{
	mg_buf_putc(b, '{', NULL);
	bool first = true;
	if (w->c->type != NULL) {
		field_sep(b, w, base, first);
		first = false;
		mg_buf_puts(b, "\"type\": ", NULL);
		clients_quote(b, w->c->type);
	}
	field_sep(b, w, base, first);
	mg_buf_puts(b, "\"command\": ", NULL);
	clients_quote(b, w->e->command);
	field_sep(b, w, base, false);
	mg_buf_puts(b, "\"args\": [", NULL);
	for (size_t i = 0; i < w->e->nargs; i++) {
		if (i > 0)
			mg_buf_puts(b, ", ", NULL);
		clients_quote(b, w->e->args[i]);
	}
	mg_buf_putc(b, ']', NULL);
	object_end(b, w, base);
}

/* A servers object holding the one entry */
static void put_servers(struct mg_buf *b, const struct jwrite *w, const char *base)
{
	mg_buf_putc(b, '{', NULL);
	field_sep(b, w, base, true);
	clients_quote(b, w->e->name);
	mg_buf_puts(b, ": ", NULL);
	cleanup_free char *inner = base != NULL ? xasprintf("%s%s", base, w->unit) : NULL;
	put_entry(b, w, inner);
	object_end(b, w, base);
}

enum jwhat { PUT_ENTRY, PUT_SERVERS };

/* "KEY": VALUE */
static char *member_text(const struct jwrite *w, const char *key, enum jwhat what, const char *base)
{
	struct mg_buf b = MG_BUF_INIT(CLIENTS_FILE_MAX);
	clients_quote(&b, key);
	mg_buf_puts(&b, ": ", NULL);
	if (what == PUT_ENTRY)
		put_entry(&b, w, base);
	else
		put_servers(&b, w, base);
	return mg_buf_steal(&b, NULL);
}

/* A new last member of object o, laid out as its members are */
static void insert_member(const struct jdoc *d, const struct jwrite *w, const struct jnode *o,
                          const char *key, enum jwhat what, struct clients_edits *ed)
{
	const char *t = d->text;
	cleanup_free char *outer = line_indent(t, d->len, o->start);
	if (o->n == 0) {
		size_t in_start = o->start + 1, in_end = o->end - 1;
		cleanup_free char *base = xasprintf("%s%s", outer, w->unit);
		cleanup_free char *m = member_text(w, key, what, base);
		size_t last = in_end;
		while (last > in_start && blank(t, last - 1, last))
			last--;
		if (last == in_start)
			clients_edits_add(ed, in_start, in_end,
			                  xasprintf("%s%s%s%s%s", w->eol, base, m, w->eol, outer));
		else /* comments inside: after them */
			clients_edits_add(ed, last, last, xasprintf("%s%s%s", w->eol, base, m));
		return;
	}
	const struct jmember *last = &o->members[o->n - 1];
	bool comma = last->comma != NO_COMMA;
	if (!spans_lines(t, o)) {
		cleanup_free char *m = member_text(w, key, what, NULL);
		if (comma)
			clients_edits_add(ed, last->comma + 1, last->comma + 1,
			                  xasprintf(" %s,", m));
		else
			clients_edits_add(ed, last->value.end, last->value.end,
			                  xasprintf(", %s", m));
		return;
	}
	cleanup_free char *base = begins_line(t, last->key_start)
	                              ? line_indent(t, d->len, last->key_start)
	                              : xasprintf("%s%s", outer, w->unit);
	cleanup_free char *m = member_text(w, key, what, base);
	size_t at = line_tail(t, d->len, comma ? last->comma + 1 : last->value.end);
	if (!comma)
		clients_edits_add(ed, last->value.end, last->value.end, xstrdup(","));
	clients_edits_add(ed, at, at, xasprintf("%s%s%s%s", w->eol, base, m, comma ? "," : ""));
}

/* Cut member i of object o, with the one comma that separated it, and its
 * line when it had one of its own */
static void cut_member(const struct jdoc *d, const struct jnode *o, size_t i,
                       struct clients_edits *ed)
{
	const char *t = d->text;
	const struct jmember *m = &o->members[i];
	size_t in_start = o->start + 1, in_end = o->end - 1;
	size_t tail = m->comma != NO_COMMA ? m->comma + 1 : m->value.end;
	if (o->n == 1 && blank(t, in_start, m->key_start) && blank(t, tail, in_end)) {
		clients_edits_add(ed, in_start, in_end, xstrdup(""));
		return;
	}
	bool own_line = begins_line(t, m->key_start);
	size_t ls = line_start(t, m->key_start);
	if (m->comma != NO_COMMA) {
		size_t after = tail;
		while (after < d->len && (t[after] == ' ' || t[after] == '\t'))
			after++;
		size_t eol = after < d->len && t[after] == '\n'                               ? 1
		             : after + 1 < d->len && t[after] == '\r' && t[after + 1] == '\n' ? 2
		                                                                              : 0;
		if (own_line && (eol > 0 || after == d->len))
			clients_edits_add(ed, ls, after + eol, xstrdup(""));
		else if (own_line)
			clients_edits_add(ed, ls, after, xstrdup(""));
		else if (i > 0)
			clients_edits_add(ed, o->members[i - 1].comma + 1, tail, xstrdup(""));
		else
			clients_edits_add(ed, m->key_start, after, xstrdup(""));
		return;
	}
	/* the last member, without a comma of its own: the one before loses its
	 * comma. On a line of its own, the line break before it goes too, unless
	 * text follows it there (the object's '}'), which would then join a line
	 * that may end in a // comment: then only the member's own text goes */
	size_t rest = m->value.end;
	while (rest < d->len && (t[rest] == ' ' || t[rest] == '\t' || t[rest] == '\r'))
		rest++;
	bool alone = rest >= d->len || t[rest] == '\n';
	size_t from = own_line ? ls : m->key_start;
	if (own_line && alone && ls > in_start) {
		from = ls - 1;
		if (from > in_start && t[from - 1] == '\r')
			from--;
	}
	if (i == 0) {
		clients_edits_add(ed, from, m->value.end, xstrdup(""));
		return;
	}
	const struct jmember *prev = &o->members[i - 1];
	if (own_line) {
		clients_edits_add(ed, prev->comma, prev->comma + 1, xstrdup(""));
		clients_edits_add(ed, from, m->value.end, xstrdup(""));
	} else {
		clients_edits_add(ed, prev->value.end, m->value.end, xstrdup(""));
	}
}

/* ---- the operations ------------------------------------------------------- */

/* The entry's value as put_entry writes it */
static struct json_value *entry_value(const struct clients_client *c, const struct clients_entry *e)
{
	struct json_value *v = json_new_object();
	if (c->type != NULL)
		json_object_set(v, "type", json_new_string(c->type));
	json_object_set(v, "command", json_new_string(e->command));
	struct json_value *args = json_new_array();
	for (size_t i = 0; i < e->nargs; i++)
		json_array_push(args, json_new_string(e->args[i]));
	json_object_set(v, "args", args);
	return v;
}

/* The member key of object o, NULL when absent */
static struct json_value *member_of(struct json_value *o, const char *key)
{
	size_t n = strlen(key);
	for (size_t i = 0; i < o->u.obj.len; i++)
		if (o->u.obj.items[i].keylen == n && memcmp(o->u.obj.items[i].key, key, n) == 0)
			return o->u.obj.items[i].value;
	return NULL;
}

/* The checked edit: the edited text parses, and its tree is the tree of
 * the text as read with exactly the entry name set to e (added or
 * replaced), or removed (e NULL); nothing else anywhere differs */
static int check_edit(const struct clients_client *c, const char *before, size_t before_len,
                      const char *after, size_t after_len, const char *filename, const char *name,
                      const struct clients_entry *e, struct mg_err **err)
{
	struct jdoc d;
	struct json_value *was = NULL, *is = NULL, *meant = NULL;
	cleanup_free char *label = xasprintf("%s (as edited)", filename);
	int r = doc_parse(&d, c, before, before_len, filename, &was, err);
	jnode_free(&d.root);
	if (r == 0) {
		r = doc_parse(&d, c, after, after_len, label, &is, err);
		jnode_free(&d.root);
	}
	if (r == 0 &&
	    (is == NULL || is->kind != JSON_OBJECT || (was != NULL && was->kind != JSON_OBJECT)))
		r = mg_err_set(err, "%s: the top level is not an object", label);
	if (r == 0) {
		/* the tree before, changed in place: it is ours, and a copy of a
		 * large file's tree costs as much again */
		meant = was != NULL ? was : json_new_object();
		was = NULL;
		struct json_value *servers = member_of(meant, c->servers_key);
		if (e != NULL && servers == NULL) {
			servers = json_new_object();
			json_object_set(meant, c->servers_key, servers);
		}
		if (servers != NULL && servers->kind != JSON_OBJECT)
			r = mg_err_set(err, "%s: \"%s\" is not an object", filename,
			               c->servers_key);
		else if (e != NULL)
			json_object_set(servers, name, entry_value(c, e));
		else if (servers != NULL)
			json_object_remove(servers, name);
	}
	if (r == 0 && json_compare(meant, is, err) < 0)
		r = mg_err_wrap(err, "the edit of %s is not the change meant", filename);
	json_free(was);
	json_free(is);
	json_free(meant);
	return r;
}

int clients_jsonc_add(const struct clients_client *c, const char *text, size_t len,
                      const char *filename, const struct clients_entry *e, char **out,
                      size_t *out_len, struct mg_err **err)
{
	struct jdoc d;
	struct clients_edits ed = {0};
	const struct jmember *servers = NULL, *entry = NULL;
	int change = CLIENTS_ADDED;
	if (doc_open(&d, c, text, len, filename, e->name, &servers, &entry, err) < 0)
		return -1;
	cleanup_free char *unit = indent_unit(&d, servers != NULL ? &servers->value : NULL);
	struct jwrite w = {c, e, unit, clients_eol(text, len)};
	if (d.root.kind == J_NONE) {
		/* a new document, after the comments the text may hold */
		cleanup_free char *m = member_text(&w, c->servers_key, PUT_SERVERS, unit);
		bool nl = len > 0 && text[len - 1] != '\n';
		clients_edits_add(
		    &ed, len, len,
		    xasprintf("%s{%s%s%s%s}%s", nl ? w.eol : "", w.eol, unit, m, w.eol, w.eol));
	} else if (servers == NULL) {
		insert_member(&d, &w, &d.root, c->servers_key, PUT_SERVERS, &ed);
	} else if (entry == NULL) {
		insert_member(&d, &w, &servers->value, e->name, PUT_ENTRY, &ed);
	} else {
		const char *t = d.text;
		cleanup_free char *outer = line_indent(t, len, servers->value.start);
		cleanup_free char *base = begins_line(t, entry->key_start)
		                              ? line_indent(t, len, entry->key_start)
		                              : xasprintf("%s%s", outer, unit);
		struct mg_buf b = MG_BUF_INIT(CLIENTS_FILE_MAX);
		put_entry(&b, &w, spans_lines(t, &servers->value) ? base : NULL);
		size_t vlen = entry->value.end - entry->value.start;
		if (b.len == vlen && memcmp(b.data, t + entry->value.start, vlen) == 0)
			change = CLIENTS_UNCHANGED;
		clients_edits_add(&ed, entry->value.start, entry->value.end,
		                  mg_buf_steal(&b, NULL));
		if (change != CLIENTS_UNCHANGED)
			change = CLIENTS_REPLACED;
	}
	jnode_free(&d.root);
	int r = clients_edits_apply(text, len, &ed, out, out_len, err);
	clients_edits_free(&ed);
	if (r < 0)
		return -1;
	if (clients_checked(check_edit(c, text, len, *out, *out_len, filename, e->name, e, err),
	                    filename, out, err) < 0)
		return -1;
	return change;
}

int clients_jsonc_remove(const struct clients_client *c, const char *text, size_t len,
                         const char *filename, const char *name, char **out, size_t *out_len,
                         struct mg_err **err)
{
	struct jdoc d;
	struct clients_edits ed = {0};
	const struct jmember *servers = NULL, *entry = NULL;
	if (doc_open(&d, c, text, len, filename, name, &servers, &entry, err) < 0)
		return -1;
	if (entry != NULL)
		cut_member(&d, &servers->value, (size_t)(entry - servers->value.members), &ed);
	jnode_free(&d.root);
	int r = clients_edits_apply(text, len, &ed, out, out_len, err);
	bool changed = ed.n > 0;
	clients_edits_free(&ed);
	if (r < 0)
		return -1;
	if (changed &&
	    clients_checked(check_edit(c, text, len, *out, *out_len, filename, name, NULL, err),
	                    filename, out, err) < 0)
		return -1;
	return changed ? CLIENTS_REMOVED : CLIENTS_UNCHANGED;
}

int clients_jsonc_entries(const struct clients_client *c, const char *text, size_t len,
                          const char *filename, struct strv *names, struct mg_err **err)
{
	struct jdoc d;
	const struct jmember *servers = NULL;
	int r = doc_parse(&d, c, text, len, filename, NULL, err);
	if (r == 0)
		r = doc_servers(&d, c, &servers, err);
	for (size_t i = 0; r == 0 && servers != NULL && i < servers->value.n; i++)
		if (entry_is_mcpgate(&servers->value.members[i].value))
			strv_push(names, servers->value.members[i].key);
	jnode_free(&d.root);
	return r;
}
