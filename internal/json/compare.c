/* Two JSON trees compared as a reader sees them: what a checked edit of an
 * MCP client's file compares, the tree meant against the tree written. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/base/cleanup.h"
#include "internal/base/utf8.h"
#include "internal/base/xalloc.h"
#include "internal/json/json.h"

/* A value in a message: its JSON text, at most this many bytes */
#define SHOWN_MAX 60

static const char *kind_name(enum json_kind k)
{
	switch (k) {
	case JSON_NULL:
		return "null";
	case JSON_BOOL:
		return "a boolean";
	case JSON_NUMBER:
		return "a number";
	case JSON_STRING:
		return "a string";
	case JSON_ARRAY:
		return "an array";
	case JSON_OBJECT:
		return "an object";
	}
	return "unknown";
}

static void path_key(struct mg_buf *p, const char *key, size_t len)
{
	if (p->len > 0)
		mg_buf_putc(p, '.', NULL);
	cleanup_free char *shown = mg_shown(key, len);
	mg_buf_puts(p, shown, NULL);
}

static char *shown_value(const struct json_value *v)
{
	if (v->kind == JSON_OBJECT || v->kind == JSON_ARRAY)
		return xstrdup(kind_name(v->kind));
	struct mg_buf b = MG_BUF_INIT((size_t)1 << 20);
	if (json_generate(v, &b, NULL) < 0)
		mg_buf_puts(&b, "(a value that cannot be shown)", NULL);
	if (b.len > SHOWN_MAX) {
		size_t cut = SHOWN_MAX;
		while (cut > 0 && ((unsigned char)b.data[cut] & 0xC0) == 0x80)
			cut--;
		mg_buf_truncate(&b, cut);
		mg_buf_puts(&b, "...", NULL);
	}
	char *text = mg_buf_steal(&b, NULL);
	char *shown = mg_shown(text, strlen(text));
	free(text);
	return shown;
}

static int differs(const struct mg_buf *path, struct mg_err **err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int differs(const struct mg_buf *path, struct mg_err **err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cleanup_free char *what = xvasprintf(fmt, ap);
	va_end(ap);
	return mg_err_set(err, "%s %s", path->len > 0 ? mg_buf_str(path) : "the document", what);
}

/* A member and where it stood: sorted by key, then place, the k-th of a
 * key in one object meets the k-th of that key in the other */
struct placed {
	const struct json_member *m;
	size_t at;
};

static int key_cmp(const struct json_member *a, const struct json_member *b)
{
	size_t n = a->keylen < b->keylen ? a->keylen : b->keylen;
	int c = memcmp(a->key, b->key, n);
	return c != 0 ? c : (a->keylen > b->keylen) - (a->keylen < b->keylen);
}

static int placed_cmp(const void *x, const void *y)
{
	const struct placed *a = x, *b = y;
	int c = key_cmp(a->m, b->m);
	return c != 0 ? c : (a->at > b->at) - (a->at < b->at);
}

static struct placed *sorted_members(const struct json_value *o)
{
	struct placed *v = xcalloc(o->u.obj.len + 1, sizeof(*v));
	for (size_t i = 0; i < o->u.obj.len; i++)
		v[i] = (struct placed){&o->u.obj.items[i], i};
	if (o->u.obj.len > 1)
		qsort(v, o->u.obj.len, sizeof(*v), placed_cmp);
	return v;
}

static int compare(const struct json_value *want, const struct json_value *got, struct mg_buf *path,
                   struct mg_err **err);

static int compare_objects(const struct json_value *want, const struct json_value *got,
                           struct mg_buf *path, struct mg_err **err)
{
	size_t at = path->len;
	cleanup_free struct placed *w = sorted_members(want);
	cleanup_free struct placed *g = sorted_members(got);
	size_t i = 0, k = 0, nw = want->u.obj.len, ng = got->u.obj.len;
	while (i < nw || k < ng) {
		/* the same key as the member before it: its next occurrence */
		int c = i == nw ? 1 : k == ng ? -1 : key_cmp(w[i].m, g[k].m);
		const struct json_member *m = c <= 0 ? w[i].m : g[k].m;
		path_key(path, m->key, m->keylen);
		int r = 0;
		if (c < 0) {
			r = differs(path, err, "would be missing");
		} else if (c > 0) {
			cleanup_free char *v = shown_value(m->value);
			r = differs(path, err, "would be there (%s), which no change meant", v);
		} else {
			r = compare(w[i].m->value, g[k].m->value, path, err);
		}
		if (r < 0)
			return -1;
		mg_buf_truncate(path, at);
		i += c <= 0;
		k += c >= 0;
	}
	return 0;
}

static int compare(const struct json_value *want, const struct json_value *got, struct mg_buf *path,
                   struct mg_err **err)
{
	if (want->kind != got->kind)
		return differs(path, err, "would be %s, where %s was meant", kind_name(got->kind),
		               kind_name(want->kind));
	size_t at = path->len;
	switch (want->kind) {
	case JSON_OBJECT:
		return compare_objects(want, got, path, err);
	case JSON_ARRAY:
		if (want->u.arr.len != got->u.arr.len)
			return differs(path, err, "would hold %zu elements, where %zu were meant",
			               got->u.arr.len, want->u.arr.len);
		for (size_t i = 0; i < want->u.arr.len; i++) {
			mg_buf_printf(path, NULL, "[%zu]", i);
			if (compare(want->u.arr.items[i], got->u.arr.items[i], path, err) < 0)
				return -1;
			mg_buf_truncate(path, at);
		}
		return 0;
	case JSON_STRING:
		if (want->u.str.len == got->u.str.len &&
		    memcmp(want->u.str.ptr, got->u.str.ptr, want->u.str.len) == 0)
			return 0;
		break;
	case JSON_NUMBER:
		if (want->u.num.len == got->u.num.len &&
		    memcmp(want->u.num.ptr, got->u.num.ptr, want->u.num.len) == 0)
			return 0;
		break;
	case JSON_BOOL:
		if (want->u.boolean == got->u.boolean)
			return 0;
		break;
	case JSON_NULL:
		return 0;
	}
	cleanup_free char *g = shown_value(got);
	cleanup_free char *w = shown_value(want);
	return differs(path, err, "would be %s, where %s was meant", g, w);
}

int json_compare(const struct json_value *want, const struct json_value *got, struct mg_err **err)
{
	struct mg_buf path = MG_BUF_INIT((size_t)1 << 20);
	int r = compare(want, got, &path, err);
	mg_buf_free(&path);
	return r;
}
