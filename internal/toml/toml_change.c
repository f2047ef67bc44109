/* The tree a file should hold after an edit, and the comparison of that
 * tree with the one it does hold (toml_change.h). */
#define _GNU_SOURCE
#include "internal/toml/toml_change.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/utf8.h"
#include "internal/base/xalloc.h"
#include "internal/toml/toml-internal.h"
#include "internal/toml/toml_encode.h"

/* A value in a message: its TOML text, at most this many bytes */
#define SHOWN_MAX 60
/* A path in a message: bytes at most */
#define PATH_MAX_SHOWN 400

/* ---- paths in messages ---------------------------------------------------- */

static void path_key(struct mg_buf *p, const char *key, size_t len)
{
	if (p->len > 0)
		mg_buf_putc(p, '.', NULL);
	if (toml_encode_key(p, key, len, NULL) < 0) {
		cleanup_free char *shown = mg_shown(key, len);
		mg_buf_puts(p, shown, NULL);
	}
}

static void path_index(struct mg_buf *p, size_t i)
{
	mg_buf_printf(p, NULL, "[%zu]", i);
}

static const char *path_text(const struct mg_buf *p)
{
	return p->len > 0 ? mg_buf_str(p) : "the document";
}

/* The steps [0, n) as text */
static char *steps_text(const struct toml_step *path, size_t n)
{
	struct mg_buf p = MG_BUF_INIT(PATH_MAX_SHOWN * 4);
	for (size_t i = 0; i < n; i++) {
		path_key(&p, path[i].key, strlen(path[i].key));
		if (path[i].match_key != NULL) {
			mg_buf_putc(&p, '[', NULL);
			toml_encode_key(&p, path[i].match_key, strlen(path[i].match_key), NULL);
			mg_buf_puts(&p, " = ", NULL);
			toml_encode_string(&p, path[i].match, strlen(path[i].match), NULL);
			mg_buf_putc(&p, ']', NULL);
		}
	}
	if (p.len == 0)
		mg_buf_puts(&p, "the document", NULL);
	return mg_buf_steal(&p, NULL);
}

/* ---- making the changes ----------------------------------------------------- */

/* The element of array a whose string key is match; NULL with err when
 * there is none or more than one */
static struct toml_value *match_element(struct toml_value *a, const struct toml_step *s,
                                        const char *where, struct mg_err **err)
{
	struct toml_value *found = NULL;
	size_t count = 0;
	for (size_t i = 0; i < a->u.array.len; i++) {
		struct toml_value *e = a->u.array.items[i];
		const struct toml_value *k = toml_get(e, s->match_key);
		if (k != NULL && k->kind == TOML_STRING && k->u.str.len == strlen(s->match) &&
		    memcmp(k->u.str.ptr, s->match, k->u.str.len) == 0) {
			found = e;
			count++;
		}
	}
	if (count != 1) {
		mg_err_set(err, "%s: %s", where, count == 0 ? "no such element" : "more than one");
		return NULL;
	}
	return found;
}

/* The member key of table t: made (an empty table) when absent and make */
static struct toml_value *member(struct toml_value *t, const char *key, bool make)
{
	const struct toml_value *v = toml_get(t, key);
	if (v == NULL && make) {
		toml_table_set(t, key, strlen(key), toml_new_table());
		v = toml_get(t, key);
	}
	return (struct toml_value *)v;
}

static int apply_one(struct toml_value *root, const struct toml_change *c, struct mg_err **err)
{
	cleanup_free char *where = steps_text(c->path, c->npath);
	if (c->npath == 0)
		return mg_err_set(err, "a change at %s: a change names a key", where);
	const struct toml_step *last = &c->path[c->npath - 1];
	if ((c->kind != TOML_CHANGE_REMOVE) != (c->value != NULL))
		return mg_err_set(err, "%s: a value is what set and append take", where);
	if (c->kind == TOML_CHANGE_APPEND && last->match_key != NULL)
		return mg_err_set(err, "%s: append names an array", where);
	bool make = c->kind != TOML_CHANGE_REMOVE;
	struct toml_value *t = root;
	/* the tables on the way, each in the one before it (root first) */
	cleanup_free struct toml_value **way = xcalloc(c->npath, sizeof(*way));
	way[0] = root;
	for (size_t i = 0; i + 1 < c->npath; i++) {
		const struct toml_step *s = &c->path[i];
		struct toml_value *v;
		if (s->match_key == NULL) {
			v = member(t, s->key, make);
			if (v == NULL)
				return mg_err_set(err, "%s: nothing there", where);
		} else {
			struct toml_value *a = member(t, s->key, false);
			if (a == NULL || a->kind != TOML_ARRAY)
				return mg_err_set(err, "%s: no such array", where);
			if ((v = match_element(a, s, where, err)) == NULL)
				return -1;
		}
		if (v->kind != TOML_TABLE)
			return mg_err_set(err, "%s: %s is not a table on the way", where, s->key);
		t = way[i + 1] = v;
	}
	struct toml_value *arr = member(t, last->key, false);
	if (last->match_key != NULL) {
		if (arr == NULL || arr->kind != TOML_ARRAY)
			return mg_err_set(err, "%s: no such array", where);
		struct toml_value *e = match_element(arr, last, where, err);
		if (e == NULL)
			return -1;
		size_t i = 0;
		while (arr->u.array.items[i] != e)
			i++;
		if (c->kind == TOML_CHANGE_REMOVE) {
			toml_array_remove(arr, i);
			/* an array of tables exists only through its [[headers]]: with
			 * the last of them gone, so is the key */
			if (arr->u.array.len == 0 && (arr->flags & TF_AOT))
				toml_table_remove(t, last->key, strlen(last->key));
		} else {
			toml_free(e);
			arr->u.array.items[i] = toml_copy(c->value);
		}
		return 0;
	}
	switch (c->kind) {
	case TOML_CHANGE_SET:
		toml_table_set(t, last->key, strlen(last->key), toml_copy(c->value));
		return 0;
	case TOML_CHANGE_APPEND:
		if (arr == NULL) {
			toml_table_set(t, last->key, strlen(last->key), toml_new_array());
			arr = member(t, last->key, false);
		}
		if (arr->kind != TOML_ARRAY)
			return mg_err_set(err, "%s: not an array, which append needs", where);
		toml_array_push(arr, toml_copy(c->value));
		return 0;
	case TOML_CHANGE_REMOVE:
		if (!toml_table_remove(t, last->key, strlen(last->key)))
			return mg_err_set(err, "%s: nothing there to remove", where);
		/* a table that only the headers below it made ([a.b] makes a) is
		 * gone with the last of them, as a parser sees the text */
		for (size_t i = c->npath - 1; i > 0; i--) {
			const struct toml_step *s = &c->path[i - 1];
			struct toml_value *v = way[i];
			if (s->match_key != NULL || v->u.table.len > 0 || !(v->flags & TF_IMPLICIT))
				break;
			toml_table_remove(way[i - 1], s->key, strlen(s->key));
		}
		return 0;
	}
	return mg_err_set(err, "%s: a change of unknown kind %d", where, (int)c->kind);
}

int toml_apply_changes(const struct toml_value *before, const struct toml_change *changes, size_t n,
                       struct toml_value **out, struct mg_err **err)
{
	struct toml_value *t = before != NULL ? toml_copy(before) : toml_new_table();
	for (size_t i = 0; i < n; i++)
		if (apply_one(t, &changes[i], err) < 0) {
			toml_free(t);
			return mg_err_wrap(err,
			                   "the change meant does not apply (a bug of mcpgate's)");
		}
	*out = t;
	return 0;
}

/* ---- comparing ------------------------------------------------------------- */

static char *shown_value(const struct toml_value *v)
{
	struct mg_buf b = MG_BUF_INIT((size_t)1 << 20);
	if (v->kind == TOML_TABLE || v->kind == TOML_ARRAY) {
		mg_buf_puts(&b, toml_kind_name(v->kind), NULL);
	} else if (toml_encode_value(&b, v, NULL) < 0) {
		mg_buf_puts(&b, "(a value that cannot be shown)", NULL);
	} else if (b.len > SHOWN_MAX) {
		size_t cut = SHOWN_MAX;
		while (cut > 0 && ((unsigned char)b.data[cut] & 0xC0) == 0x80)
			cut--;
		mg_buf_truncate(&b, cut);
		mg_buf_puts(&b, "...", NULL);
	}
	return mg_buf_steal(&b, NULL);
}

static bool same_scalar(const struct toml_value *a, const struct toml_value *b)
{
	switch (a->kind) {
	case TOML_STRING:
	case TOML_DATETIME:
	case TOML_DATETIME_LOCAL:
	case TOML_DATE_LOCAL:
	case TOML_TIME_LOCAL:
		return a->u.str.len == b->u.str.len &&
		       memcmp(a->u.str.ptr, b->u.str.ptr, a->u.str.len) == 0;
	case TOML_INTEGER:
		return a->u.integer == b->u.integer;
	case TOML_FLOAT:
		/* nan is the same as nan here; -0.0 and 0.0 are not */
		return (isnan(a->u.flt) && isnan(b->u.flt)) ||
		       (a->u.flt == b->u.flt && signbit(a->u.flt) == signbit(b->u.flt));
	case TOML_BOOL:
		return a->u.boolean == b->u.boolean;
	case TOML_TABLE:
	case TOML_ARRAY:
		break;
	}
	return false;
}

static const struct toml_kv *kv_of(const struct toml_value *t, const struct toml_kv *like)
{
	for (size_t i = 0; i < t->u.table.len; i++)
		if (t->u.table.items[i].keylen == like->keylen &&
		    memcmp(t->u.table.items[i].key, like->key, like->keylen) == 0)
			return &t->u.table.items[i];
	return NULL;
}

static int differs(struct mg_buf *path, struct mg_err **err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int differs(struct mg_buf *path, struct mg_err **err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cleanup_free char *what = xvasprintf(fmt, ap);
	va_end(ap);
	return mg_err_set(err, "%s %s", path_text(path), what);
}

static int compare(const struct toml_value *want, const struct toml_value *got, struct mg_buf *path,
                   struct mg_err **err)
{
	if (want->kind != got->kind)
		return differs(path, err, "would be %s, where %s was meant",
		               toml_kind_name(got->kind), toml_kind_name(want->kind));
	size_t at = path->len;
	if (want->kind == TOML_TABLE) {
		for (size_t i = 0; i < want->u.table.len; i++) {
			const struct toml_kv *w = &want->u.table.items[i];
			const struct toml_kv *g = kv_of(got, w);
			path_key(path, w->key, w->keylen);
			int r = g == NULL ? differs(path, err, "would be missing")
			                  : compare(w->value, g->value, path, err);
			if (r < 0)
				return -1;
			mg_buf_truncate(path, at);
		}
		for (size_t i = 0; i < got->u.table.len; i++) {
			const struct toml_kv *g = &got->u.table.items[i];
			if (kv_of(want, g) != NULL)
				continue;
			path_key(path, g->key, g->keylen);
			cleanup_free char *v = shown_value(g->value);
			return differs(path, err, "would be there (%s), which no change meant", v);
		}
		return 0;
	}
	if (want->kind == TOML_ARRAY) {
		if (want->u.array.len != got->u.array.len)
			return differs(path, err, "would hold %zu elements, where %zu were meant",
			               got->u.array.len, want->u.array.len);
		for (size_t i = 0; i < want->u.array.len; i++) {
			path_index(path, i);
			if (compare(want->u.array.items[i], got->u.array.items[i], path, err) < 0)
				return -1;
			mg_buf_truncate(path, at);
		}
		return 0;
	}
	if (!same_scalar(want, got)) {
		cleanup_free char *g = shown_value(got);
		cleanup_free char *w = shown_value(want);
		return differs(path, err, "would be %s, where %s was meant", g, w);
	}
	return 0;
}

int toml_compare(const struct toml_value *want, const struct toml_value *got, struct mg_err **err)
{
	struct mg_buf path = MG_BUF_INIT((size_t)1 << 20);
	int r = compare(want, got, &path, err);
	mg_buf_free(&path);
	return r;
}

int toml_check_edit(const char *before, size_t before_len, const char *after, size_t after_len,
                    const char *name, const struct toml_change *changes, size_t n,
                    struct mg_err **err)
{
	struct toml_value *was = NULL, *is = NULL, *meant = NULL;
	cleanup_free char *label = xasprintf("%s (as edited)", name);
	int r = 0;
	if (before != NULL && toml_parse(before, before_len, name, &was, err) < 0)
		r = -1;
	else if (toml_parse(after, after_len, label, &is, err) < 0)
		r = mg_err_wrap(err, "the edited text does not parse");
	else if (toml_apply_changes(was, changes, n, &meant, err) < 0)
		r = -1;
	else if (toml_compare(meant, is, err) < 0)
		r = mg_err_wrap(err, "the edit of %s is not the change meant", name);
	toml_free(was);
	toml_free(is);
	toml_free(meant);
	return r;
}
