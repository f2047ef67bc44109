#include "internal/json/shape.h"

#include <stdlib.h>
#include <string.h>

#include "internal/base/buf.h"
#include "internal/base/utf8.h"
#include "internal/base/xalloc.h"

/* longest key of a peer's shown in a message */
#define KEY_SHOWN_MAX 64

static unsigned type_of(const struct json_value *v)
{
	int64_t i;
	switch (v->kind) {
	case JSON_NULL:
		return JS_NULL;
	case JSON_BOOL:
		return JS_BOOL;
	case JSON_NUMBER:
		return json_number_int64(v, &i) == 0 ? JS_INT | JS_NUM : JS_NUM;
	case JSON_STRING:
		return strlen(v->u.str.ptr) == v->u.str.len ? JS_STR : 0;
	case JSON_ARRAY:
		return JS_ARR;
	case JSON_OBJECT:
		return JS_OBJ;
	}
	return 0;
}

static const char *kind_name(const struct json_value *v)
{
	int64_t i;
	switch (v->kind) {
	case JSON_NULL:
		return "null";
	case JSON_BOOL:
		return "a boolean";
	case JSON_NUMBER:
		return json_number_int64(v, &i) == 0 ? "an integer" : "a number";
	case JSON_STRING:
		return strlen(v->u.str.ptr) == v->u.str.len ? "a string" : "a string holding NUL";
	case JSON_ARRAY:
		return "an array";
	case JSON_OBJECT:
		return "an object";
	}
	return "?";
}

static void types_text(struct mg_buf *b, unsigned types)
{
	static const struct {
		unsigned bit;
		const char *name;
	} names[] = {
	    {JS_STR, "a string"},   {JS_INT, "an integer"}, {JS_NUM, "a number"},
	    {JS_BOOL, "a boolean"}, {JS_OBJ, "an object"},  {JS_ARR, "an array"},
	    {JS_NULL, "null"},
	};
	size_t n = 0, total = 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if ((types & names[i].bit) && !(names[i].bit == JS_INT && (types & JS_NUM)))
			total++;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!(types & names[i].bit) || (names[i].bit == JS_INT && (types & JS_NUM)))
			continue;
		mg_buf_puts(b, n == 0 ? "" : n + 1 == total ? " or " : ", ", NULL);
		mg_buf_puts(b, names[i].name, NULL);
		n++;
	}
}

/* where, then each step: .key for a plain key, ["key"] for another, [i] */
struct step {
	const char *key; /* NULL for an array index */
	size_t keylen;
	size_t index;
};

static void path_text(struct mg_buf *b, const char *where, const struct step *steps, size_t n)
{
	mg_buf_puts(b, where, NULL);
	for (size_t i = 0; i < n; i++) {
		if (steps[i].key == NULL) {
			mg_buf_printf(b, NULL, "[%zu]", steps[i].index);
			continue;
		}
		bool plain = steps[i].keylen > 0 && steps[i].keylen <= KEY_SHOWN_MAX;
		for (size_t k = 0; plain && k < steps[i].keylen; k++) {
			char c = steps[i].key[k];
			plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			        (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '/' ||
			        c == '.';
		}
		if (plain) {
			mg_buf_printf(b, NULL, ".%.*s", (int)steps[i].keylen, steps[i].key);
			continue;
		}
		size_t len = steps[i].keylen > KEY_SHOWN_MAX ? KEY_SHOWN_MAX : steps[i].keylen;
		while (len > 0 && len < steps[i].keylen &&
		       ((unsigned char)steps[i].key[len] & 0xC0) == 0x80)
			len--; /* not inside a character */
		char *shown = mg_shown(steps[i].key, len);
		mg_buf_printf(b, NULL, "[\"%s%s\"]", shown, len < steps[i].keylen ? "..." : "");
		free(shown);
	}
}

struct walk {
	const struct json_shape_member *m;
	const char *where;
	struct step steps[JSON_SHAPE_DEPTH];
	char *why;
};

static void walk(struct walk *w, const struct json_value *v, size_t depth)
{
	const struct json_shape_member *m = w->m;
	const char *key = depth < JSON_SHAPE_DEPTH ? m->path[depth] : NULL;
	if (key == NULL) {
		if (type_of(v) & m->types)
			return;
		struct mg_buf b = MG_BUF_INIT(4096);
		path_text(&b, w->where, w->steps, depth);
		mg_buf_puts(&b, " must be ", NULL);
		types_text(&b, m->types);
		mg_buf_printf(&b, NULL, " (it is %s)", kind_name(v));
		w->why = mg_buf_steal(&b, NULL);
		return;
	}
	bool last = depth + 1 == JSON_SHAPE_DEPTH || m->path[depth + 1] == NULL;
	if (strcmp(key, "*") == 0) {
		if (v->kind == JSON_ARRAY) {
			for (size_t i = 0; w->why == NULL && i < v->u.arr.len; i++) {
				w->steps[depth] = (struct step){NULL, 0, i};
				walk(w, v->u.arr.items[i], depth + 1);
			}
		} else if (v->kind == JSON_OBJECT) {
			for (size_t i = 0; w->why == NULL && i < v->u.obj.len; i++) {
				const struct json_member *jm = &v->u.obj.items[i];
				w->steps[depth] = (struct step){jm->key, jm->keylen, 0};
				walk(w, jm->value, depth + 1);
			}
		}
		return;
	}
	if (v->kind != JSON_OBJECT)
		return;
	const struct json_value *x = json_get(v, key);
	w->steps[depth] = (struct step){key, strlen(key), 0};
	if (x != NULL) {
		walk(w, x, depth + 1);
		return;
	}
	if (last && m->required) {
		struct mg_buf b = MG_BUF_INIT(4096);
		path_text(&b, w->where, w->steps, depth + 1);
		mg_buf_puts(&b, " is missing: it must be ", NULL);
		types_text(&b, m->types);
		w->why = mg_buf_steal(&b, NULL);
	}
}

char *json_shape_check(const struct json_value *v, const char *where,
                       const struct json_shape_member *shape, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct walk w = {.m = &shape[i], .where = where};
		if (v == NULL) {
			/* an absent value: only its required top members can fail */
			if (shape[i].required && shape[i].path[0] != NULL &&
			    shape[i].path[1] == NULL && strcmp(shape[i].path[0], "*") != 0) {
				struct mg_buf b = MG_BUF_INIT(4096);
				mg_buf_printf(&b, NULL, "%s.%s is missing: it must be ", where,
				              shape[i].path[0]);
				types_text(&b, shape[i].types);
				return mg_buf_steal(&b, NULL);
			}
			continue;
		}
		walk(&w, v, 0);
		if (w.why != NULL)
			return w.why;
	}
	return NULL;
}
