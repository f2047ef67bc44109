/* The JSON tree: parsing with yajl's callback API, builders, lookups, compact
 * generation and the one string escaping (json_quote). The canonical form is
 * in canonical.c. */
#include "internal/json/json.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yajl_parse.h>

#include "internal/base/cleanup.h"
#include "internal/base/log.h"
#include "internal/base/num.h"
#include "internal/base/quote.h"
#include "internal/base/utf8.h"
#include "internal/base/xalloc.h"

const struct json_limits json_default_limits = {16u << 20, 64, JSON_VALUES_DEFAULT};

/* Longest key prefix quoted in an error message. */
#define KEY_IN_MESSAGE_MAX 64

/* Misuse of the builders by our own code is a broken invariant, not a peer's
 * doing: stop loudly rather than build a tree that is not what it claims. */
__attribute__((noreturn)) static void json_bug(const char *what)
{
	mg_error("json: %s", what);
	abort();
}

static struct json_value *value_new(enum json_kind kind)
{
	struct json_value *v = xcalloc(1, sizeof(*v));
	v->kind = kind;
	return v;
}

void json_free(struct json_value *v)
{
	if (v == NULL)
		return;
	switch (v->kind) {
	case JSON_NULL:
	case JSON_BOOL:
		break;
	case JSON_NUMBER:
		free(v->u.num.ptr);
		break;
	case JSON_STRING:
		free(v->u.str.ptr);
		break;
	case JSON_ARRAY:
		for (size_t i = 0; i < v->u.arr.len; i++)
			json_free(v->u.arr.items[i]);
		free(v->u.arr.items);
		break;
	case JSON_OBJECT:
		for (size_t i = 0; i < v->u.obj.len; i++) {
			free(v->u.obj.items[i].key);
			json_free(v->u.obj.items[i].value);
		}
		free(v->u.obj.items);
		break;
	}
	free(v);
}

static void array_append(struct json_value *arr, struct json_value *v)
{
	if (arr->u.arr.len == arr->u.arr.cap) {
		size_t cap = arr->u.arr.cap != 0 ? arr->u.arr.cap * 2 : 4;
		arr->u.arr.items = xreallocarray(arr->u.arr.items, cap, sizeof(*arr->u.arr.items));
		arr->u.arr.cap = cap;
	}
	arr->u.arr.items[arr->u.arr.len++] = v;
}

/* Takes ownership of key (NUL-terminated, keylen bytes before the NUL) and v. */
static void object_append(struct json_value *obj, char *key, size_t keylen, struct json_value *v)
{
	if (obj->u.obj.len == obj->u.obj.cap) {
		size_t cap = obj->u.obj.cap != 0 ? obj->u.obj.cap * 2 : 4;
		obj->u.obj.items = xreallocarray(obj->u.obj.items, cap, sizeof(*obj->u.obj.items));
		obj->u.obj.cap = cap;
	}
	struct json_member *m = &obj->u.obj.items[obj->u.obj.len++];
	m->key = key;
	m->keylen = keylen;
	m->value = v;
}

/* Drop whatever a failed writer appended, so out is as the caller left it. */
/* ---- numbers ---------------------------------------------------------- */

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static size_t skip_digits(const char *n, size_t i, size_t len)
{
	while (i < len && is_digit(n[i]))
		i++;
	return i;
}

bool json_number_valid(const char *n, size_t len)
{
	if (n == NULL)
		return false;
	size_t i = 0;
	if (i < len && n[i] == '-')
		i++;
	if (i >= len)
		return false;
	if (n[i] == '0')
		i++;
	else if (n[i] >= '1' && n[i] <= '9')
		i = skip_digits(n, i + 1, len);
	else
		return false;
	if (i < len && n[i] == '.') {
		size_t start = ++i;
		i = skip_digits(n, i, len);
		if (i == start)
			return false;
	}
	if (i < len && (n[i] == 'e' || n[i] == 'E')) {
		i++;
		if (i < len && (n[i] == '+' || n[i] == '-'))
			i++;
		size_t start = i;
		i = skip_digits(n, i, len);
		if (i == start)
			return false;
	}
	return i == len;
}

/* Only a literal written as an integer counts: 1.0 and 1e2 are not integers
 * here, whatever their value (json_canonical has its own, separate rule). */
int json_number_int64(const struct json_value *v, int64_t *out)
{
	if (v == NULL || v->kind != JSON_NUMBER)
		return -1;
	const char *n = v->u.num.ptr;
	size_t len = v->u.num.len;
	if (!json_number_valid(n, len) || memchr(n, '.', len) != NULL ||
	    memchr(n, 'e', len) != NULL || memchr(n, 'E', len) != NULL)
		return -1;
	bool neg = n[0] == '-';
	/* the magnitude of INT64_MIN is INT64_MAX + 1 */
	uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	uint64_t mag;
	if (mg_parse_u64n(n + neg, len - neg, 0, limit, "number", &mag, NULL) < 0)
		return -1;
	*out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
	return 0;
}

/* ---- builders --------------------------------------------------------- */

struct json_value *json_new_null(void)
{
	return value_new(JSON_NULL);
}

struct json_value *json_new_bool(bool b)
{
	struct json_value *v = value_new(JSON_BOOL);
	v->u.boolean = b;
	return v;
}

struct json_value *json_new_int(int64_t i)
{
	char text[32];
	int n = snprintf(text, sizeof(text), "%" PRId64, i);
	if (n < 0 || (size_t)n >= sizeof(text))
		json_bug("cannot format an integer");
	struct json_value *v = value_new(JSON_NUMBER);
	v->u.num.ptr = xstrndup(text, (size_t)n);
	v->u.num.len = (size_t)n;
	return v;
}

struct json_value *json_new_number_text(const char *n, size_t len)
{
	if (!json_number_valid(n, len))
		return NULL;
	struct json_value *v = value_new(JSON_NUMBER);
	v->u.num.ptr = xstrndup(n, len);
	v->u.num.len = len;
	return v;
}

struct json_value *json_new_string(const char *s)
{
	return json_new_stringn(s, strlen(s));
}

struct json_value *json_new_stringn(const char *s, size_t len)
{
	struct json_value *v = value_new(JSON_STRING);
	v->u.str.ptr = len != 0 ? xstrndup(s, len) : xstrdup("");
	v->u.str.len = len;
	return v;
}

struct json_value *json_new_array(void)
{
	return value_new(JSON_ARRAY);
}

struct json_value *json_new_object(void)
{
	return value_new(JSON_OBJECT);
}

static bool key_equals(const struct json_member *m, const char *key, size_t keylen)
{
	return m->keylen == keylen && memcmp(m->key, key, keylen) == 0;
}

void json_object_set(struct json_value *obj, const char *key, struct json_value *v)
{
	if (obj == NULL || obj->kind != JSON_OBJECT)
		json_bug("json_object_set on something that is not an object");
	if (key == NULL || v == NULL)
		json_bug("json_object_set without a key or a value");
	size_t keylen = strlen(key);
	for (size_t i = 0; i < obj->u.obj.len; i++) {
		struct json_member *m = &obj->u.obj.items[i];
		if (key_equals(m, key, keylen)) {
			json_free(m->value);
			m->value = v;
			return;
		}
	}
	object_append(obj, xstrndup(key, keylen), keylen, v);
}

void json_object_add(struct json_value *obj, const char *key, size_t keylen, struct json_value *v)
{
	if (obj == NULL || obj->kind != JSON_OBJECT)
		json_bug("json_object_add on something that is not an object");
	if (key == NULL || v == NULL)
		json_bug("json_object_add without a key or a value");
	object_append(obj, xstrndup(key, keylen), keylen, v);
}

bool json_object_remove(struct json_value *obj, const char *key)
{
	if (obj == NULL || obj->kind != JSON_OBJECT)
		json_bug("json_object_remove on something that is not an object");
	size_t keylen = strlen(key);
	for (size_t i = 0; i < obj->u.obj.len; i++) {
		struct json_member *m = &obj->u.obj.items[i];
		if (!key_equals(m, key, keylen))
			continue;
		free(m->key);
		json_free(m->value);
		memmove(m, m + 1, (obj->u.obj.len - i - 1) * sizeof(*m));
		obj->u.obj.len--;
		return true;
	}
	return false;
}

void json_array_push(struct json_value *arr, struct json_value *v)
{
	if (arr == NULL || arr->kind != JSON_ARRAY)
		json_bug("json_array_push on something that is not an array");
	if (v == NULL)
		json_bug("json_array_push without a value");
	array_append(arr, v);
}

struct json_value *json_copy(const struct json_value *v)
{
	if (v == NULL)
		return NULL;
	struct json_value *c = value_new(v->kind);
	switch (v->kind) {
	case JSON_NULL:
		break;
	case JSON_BOOL:
		c->u.boolean = v->u.boolean;
		break;
	case JSON_NUMBER:
		c->u.num.ptr = xstrndup(v->u.num.ptr, v->u.num.len);
		c->u.num.len = v->u.num.len;
		break;
	case JSON_STRING:
		c->u.str.ptr = xstrndup(v->u.str.ptr, v->u.str.len);
		c->u.str.len = v->u.str.len;
		break;
	case JSON_ARRAY:
		for (size_t i = 0; i < v->u.arr.len; i++)
			array_append(c, json_copy(v->u.arr.items[i]));
		break;
	case JSON_OBJECT:
		for (size_t i = 0; i < v->u.obj.len; i++) {
			const struct json_member *m = &v->u.obj.items[i];
			object_append(c, xstrndup(m->key, m->keylen), m->keylen,
			              json_copy(m->value));
		}
		break;
	}
	return c;
}

/* ---- lookups ---------------------------------------------------------- */

const struct json_value *json_get(const struct json_value *obj, const char *key)
{
	if (obj == NULL || obj->kind != JSON_OBJECT || key == NULL)
		return NULL;
	size_t keylen = strlen(key);
	for (size_t i = 0; i < obj->u.obj.len; i++) {
		if (key_equals(&obj->u.obj.items[i], key, keylen))
			return obj->u.obj.items[i].value;
	}
	return NULL;
}

/* A string holding U+0000 has no C-string form that says the same thing as
 * the JSON ("ls\u0000 -la" would read as "ls"), so it is not offered as one. */
const char *json_get_string(const struct json_value *obj, const char *key)
{
	const struct json_value *v = json_get(obj, key);
	if (v == NULL || v->kind != JSON_STRING)
		return NULL;
	if (memchr(v->u.str.ptr, '\0', v->u.str.len) != NULL)
		return NULL;
	return v->u.str.ptr;
}

/* ---- quoting and generation ------------------------------------------- */

/* shown: a code point that hides, reorders or breaks text (mg_cp_hidden)
 * is written as \uXXXX too (the text mode of internal/base/quote.c), so
 * the text is the same JSON value and every character of it can be seen */
static int quote_append(const char *s, size_t len, bool shown, struct mg_buf *out,
                        struct mg_err **err)
{
	return mg_quote(s, len, shown ? MG_QUOTE_TEXT : MG_QUOTE_CANONICAL, out, err);
}

int json_quote(const char *s, size_t len, struct mg_buf *out, struct mg_err **err)
{
	return mg_quote(s, len, MG_QUOTE_CANONICAL, out, err);
}

int json_quote_text(const char *s, size_t len, struct mg_buf *out, struct mg_err **err)
{
	return mg_quote(s, len, MG_QUOTE_TEXT, out, err);
}

static int generate_value(const struct json_value *v, bool shown, struct mg_buf *out,
                          struct mg_err **err)
{
	if (v == NULL)
		return mg_err_set(err, "missing JSON value");
	switch (v->kind) {
	case JSON_NULL:
		return mg_buf_puts(out, "null", err);
	case JSON_BOOL:
		return mg_buf_puts(out, v->u.boolean ? "true" : "false", err);
	case JSON_NUMBER:
		if (!json_number_valid(v->u.num.ptr, v->u.num.len))
			return mg_err_set(err, "invalid JSON number literal");
		return mg_buf_append(out, v->u.num.ptr, v->u.num.len, err);
	case JSON_STRING:
		return quote_append(v->u.str.ptr, v->u.str.len, shown, out, err);
	case JSON_ARRAY:
		if (mg_buf_putc(out, '[', err) < 0)
			return -1;
		for (size_t i = 0; i < v->u.arr.len; i++) {
			if (i > 0 && mg_buf_putc(out, ',', err) < 0)
				return -1;
			if (generate_value(v->u.arr.items[i], shown, out, err) < 0)
				return -1;
		}
		return mg_buf_putc(out, ']', err);
	case JSON_OBJECT:
		if (mg_buf_putc(out, '{', err) < 0)
			return -1;
		for (size_t i = 0; i < v->u.obj.len; i++) {
			const struct json_member *m = &v->u.obj.items[i];
			if (i > 0 && mg_buf_putc(out, ',', err) < 0)
				return -1;
			if (quote_append(m->key, m->keylen, shown, out, err) < 0 ||
			    mg_buf_putc(out, ':', err) < 0 ||
			    generate_value(m->value, shown, out, err) < 0)
				return -1;
		}
		return mg_buf_putc(out, '}', err);
	}
	return mg_err_set(err, "unknown JSON value kind %d", (int)v->kind);
}

static int generate(const struct json_value *v, bool shown, struct mg_buf *out, struct mg_err **err)
{
	size_t start = out->len;
	if (generate_value(v, shown, out, err) < 0) {
		mg_buf_truncate(out, start);
		return -1;
	}
	return 0;
}

int json_generate(const struct json_value *v, struct mg_buf *out, struct mg_err **err)
{
	return generate(v, false, out, err);
}

int json_shown(const struct json_value *v, struct mg_buf *out, struct mg_err **err)
{
	return generate(v, true, out, err);
}

/* ---- parsing ---------------------------------------------------------- */

struct parse_ctx {
	yajl_handle h;
	const unsigned char *text;
	const struct json_limits *limits;
	struct json_value *root;
	/* open arrays and objects, innermost last; borrowed from root */
	struct json_value **stack;
	size_t depth;
	size_t values; /* made so far, against limits->max_values */
	size_t stack_cap;
	/* the key read for the value that comes next in the innermost object */
	char *key;
	size_t keylen;
	/* where the last token handed to a callback ended (strings start after it) */
	size_t last_end;
	/* set by a callback that stops the parse */
	struct mg_err *err;
};

/* A key, quoted and cut short, for an error message. */
static char *key_for_message(const char *key, size_t len)
{
	struct mg_buf b = MG_BUF_INIT(16 * KEY_IN_MESSAGE_MAX);
	size_t n = len;
	bool cut = false;
	if (n > KEY_IN_MESSAGE_MAX) {
		n = KEY_IN_MESSAGE_MAX;
		while (n > 0 && ((unsigned char)key[n] & 0xC0) == 0x80)
			n--;
		cut = true;
	}
	if (json_quote(key, n, &b, NULL) < 0 || (cut && mg_buf_puts(&b, "...", NULL) < 0)) {
		mg_buf_free(&b);
		return xstrdup("(a key that cannot be shown)");
	}
	return mg_buf_steal(&b, NULL);
}

static size_t consumed(const struct parse_ctx *c)
{
	return yajl_get_bytes_consumed(c->h);
}

static int parse_fail(struct parse_ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Record why the parse stops; returns 0, which cancels it. */
static int parse_fail(struct parse_ctx *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = xvasprintf(fmt, ap);
	va_end(ap);
	mg_err_set(&c->err, "%s", msg);
	free(msg);
	return 0;
}

/* Attach v to the innermost open container (or make it the root); takes
 * ownership of v. Returns 1 to continue, 0 to cancel. */
static int add_value(struct parse_ctx *c, struct json_value *v)
{
	size_t cap = c->limits->max_values != 0 ? c->limits->max_values : JSON_VALUES_DEFAULT;
	if (++c->values > cap) {
		json_free(v);
		return parse_fail(c, "JSON text holds more than %zu values (at byte %zu)", cap,
		                  consumed(c));
	}
	if (c->depth == 0) {
		if (c->root != NULL) {
			json_free(v);
			return parse_fail(c, "JSON text holds more than one value at byte %zu",
			                  consumed(c));
		}
		c->root = v;
		return 1;
	}
	struct json_value *top = c->stack[c->depth - 1];
	if (top->kind == JSON_ARRAY) {
		array_append(top, v);
		return 1;
	}
	if (c->key == NULL) {
		json_free(v);
		return parse_fail(c, "JSON object value without a key at byte %zu", consumed(c));
	}
	object_append(top, steal_pointer(&c->key), c->keylen, v);
	return 1;
}

static int cb_null(void *ctx)
{
	struct parse_ctx *c = ctx;
	c->last_end = consumed(c);
	return add_value(c, json_new_null());
}

static int cb_boolean(void *ctx, int b)
{
	struct parse_ctx *c = ctx;
	c->last_end = consumed(c);
	return add_value(c, json_new_bool(b != 0));
}

/* The literal text, as yajl's lexer accepted it (it follows the grammar). */
static int cb_number(void *ctx, const char *n, size_t len)
{
	struct parse_ctx *c = ctx;
	c->last_end = consumed(c);
	struct json_value *v = value_new(JSON_NUMBER);
	v->u.num.ptr = xstrndup(n, len);
	v->u.num.len = len;
	return add_value(c, v);
}

static int hex4(const unsigned char *p, uint32_t *out)
{
	uint32_t v = 0;
	for (int i = 0; i < 4; i++) {
		unsigned char h = p[i];
		uint32_t d;
		if (h >= '0' && h <= '9')
			d = h - '0';
		else if (h >= 'a' && h <= 'f')
			d = h - 'a' + 10;
		else if (h >= 'A' && h <= 'F')
			d = h - 'A' + 10;
		else
			return -1;
		v = v << 4 | d;
	}
	*out = v;
	return 0;
}

/* Check the raw text of a string token (between its quotes, starting at byte
 * base of the text) for what yajl lets through: its lexer checks only the
 * shape of UTF-8 sequences (not overlong forms, surrogates or values past
 * U+10FFFF), and its decoder turns a lone or mismatched \u surrogate escape
 * into '?' or a wrong code point. Returns the offset of the first bad byte
 * relative to raw, or len when all is well; *what says what was wrong. */
static size_t check_raw_string(const unsigned char *raw, size_t len, const char **what)
{
	size_t bad = mg_utf8_check((const char *)raw, len);
	if (bad < len) {
		*what = "invalid UTF-8";
		return bad;
	}
	for (size_t i = 0; i < len; i++) {
		if (raw[i] != '\\')
			continue;
		if (i + 1 >= len)
			break;
		if (raw[i + 1] != 'u') {
			i++; /* the escaped character, maybe a backslash */
			continue;
		}
		uint32_t cp, lo;
		if (i + 6 > len || hex4(raw + i + 2, &cp) < 0) {
			*what = "malformed \\u escape";
			return i;
		}
		if (cp >= 0xDC00 && cp <= 0xDFFF) {
			*what = "unpaired UTF-16 surrogate escape";
			return i;
		}
		if (cp >= 0xD800 && cp <= 0xDBFF) {
			if (i + 12 > len || raw[i + 6] != '\\' || raw[i + 7] != 'u' ||
			    hex4(raw + i + 8, &lo) < 0 || lo < 0xDC00 || lo > 0xDFFF) {
				*what = "unpaired UTF-16 surrogate escape";
				return i;
			}
			i += 11;
		} else {
			i += 5;
		}
	}
	return len;
}

/* Validate the string token that ends where yajl has consumed up to, and its
 * decoded form s. Returns 1 to continue, 0 to cancel. */
static int check_string(struct parse_ctx *c, const unsigned char *s, size_t len)
{
	size_t end = consumed(c); /* one past the closing quote */
	size_t start = c->last_end;
	/* only whitespace, ',' and ':' separate the previous token from this one */
	while (start < end && c->text[start] != '"')
		start++;
	if (end < 2 || start >= end - 1 || c->text[end - 1] != '"')
		return parse_fail(c, "JSON parser lost track of a string near byte %zu", end);
	const char *what = NULL;
	size_t rawlen = end - 1 - (start + 1);
	size_t bad = check_raw_string(c->text + start + 1, rawlen, &what);
	if (bad < rawlen)
		return parse_fail(c, "%s in a JSON string at byte %zu", what, start + 1 + bad);
	if (mg_utf8_check((const char *)s, len) < len)
		return parse_fail(c, "invalid UTF-8 in a JSON string at byte %zu", start);
	c->last_end = end;
	return 1;
}

static int cb_string(void *ctx, const unsigned char *s, size_t len)
{
	struct parse_ctx *c = ctx;
	if (!check_string(c, s, len))
		return 0;
	return add_value(c, json_new_stringn((const char *)s, len));
}

static int cb_map_key(void *ctx, const unsigned char *s, size_t len)
{
	struct parse_ctx *c = ctx;
	if (!check_string(c, s, len))
		return 0;
	free(c->key);
	c->key = xstrndup((const char *)s, len);
	c->keylen = len;
	return 1;
}

static int open_container(struct parse_ctx *c, enum json_kind kind)
{
	c->last_end = consumed(c);
	if (c->depth >= c->limits->max_depth)
		return parse_fail(c, "JSON nesting depth exceeds the limit of %u at byte %zu",
		                  c->limits->max_depth, c->last_end - 1);
	struct json_value *v = value_new(kind);
	if (!add_value(c, v))
		return 0;
	if (c->depth == c->stack_cap) {
		c->stack_cap = c->stack_cap != 0 ? c->stack_cap * 2 : 8;
		c->stack = xreallocarray(c->stack, c->stack_cap, sizeof(*c->stack));
	}
	c->stack[c->depth++] = v;
	return 1;
}

static int cb_start_map(void *ctx)
{
	return open_container(ctx, JSON_OBJECT);
}

static int cb_start_array(void *ctx)
{
	return open_container(ctx, JSON_ARRAY);
}

static int member_cmp(const void *a, const void *b)
{
	const struct json_member *x = *(const struct json_member *const *)a;
	const struct json_member *y = *(const struct json_member *const *)b;
	size_t n = x->keylen < y->keylen ? x->keylen : y->keylen;
	int r = memcmp(x->key, y->key, n);
	if (r != 0)
		return r;
	return x->keylen < y->keylen ? -1 : x->keylen > y->keylen;
}

/* Two members with the same key would let two readers see different values
 * (first wins, last wins). Sorting keeps a huge object at n log n. */
static int check_unique_keys(struct parse_ctx *c, const struct json_value *obj)
{
	size_t n = obj->u.obj.len;
	if (n < 2)
		return 1;
	cleanup_free const struct json_member **sorted = xreallocarray(NULL, n, sizeof(*sorted));
	for (size_t i = 0; i < n; i++)
		sorted[i] = &obj->u.obj.items[i];
	qsort(sorted, n, sizeof(*sorted), member_cmp);
	for (size_t i = 1; i < n; i++) {
		if (member_cmp(&sorted[i - 1], &sorted[i]) == 0) {
			cleanup_free char *key = key_for_message(sorted[i]->key, sorted[i]->keylen);
			return parse_fail(c,
			                  "duplicate key %s in the JSON object ending at byte %zu",
			                  key, c->last_end - 1);
		}
	}
	return 1;
}

static int close_container(struct parse_ctx *c)
{
	c->last_end = consumed(c);
	if (c->depth == 0)
		return parse_fail(c, "unbalanced JSON container at byte %zu", c->last_end);
	struct json_value *top = c->stack[c->depth - 1];
	if (top->kind == JSON_OBJECT && !check_unique_keys(c, top))
		return 0;
	c->depth--;
	return 1;
}

static int cb_end_map(void *ctx)
{
	return close_container(ctx);
}

static int cb_end_array(void *ctx)
{
	return close_container(ctx);
}

static const yajl_callbacks parse_callbacks = {
    .yajl_null = cb_null,
    .yajl_boolean = cb_boolean,
    .yajl_integer = NULL,
    .yajl_double = NULL,
    .yajl_number = cb_number,
    .yajl_string = cb_string,
    .yajl_start_map = cb_start_map,
    .yajl_map_key = cb_map_key,
    .yajl_end_map = cb_end_map,
    .yajl_start_array = cb_start_array,
    .yajl_end_array = cb_end_array,
};

/* yajl's own allocations also abort on out-of-memory rather than crash later */
static void *yajl_xmalloc(void *ctx, size_t n)
{
	(void)ctx;
	return xmalloc(n);
}

static void *yajl_xrealloc(void *ctx, void *p, size_t n)
{
	(void)ctx;
	return xrealloc(p, n);
}

static void yajl_xfree(void *ctx, void *p)
{
	(void)ctx;
	free(p);
}

/* The error of a parse yajl stopped with status st at byte offset. */
static int yajl_failure(struct parse_ctx *c, yajl_status st, size_t offset, struct mg_err **err)
{
	switch (st) {
	case yajl_status_client_canceled:
		if (c->err != NULL) {
			if (err != NULL) {
				mg_err_free(*err);
				*err = steal_pointer(&c->err);
			}
			return -1;
		}
		return mg_err_set(err, "JSON parse stopped at byte %zu", offset);
	case yajl_status_error: {
		unsigned char *text = yajl_get_error(c->h, 0, NULL, 0);
		size_t n = text != NULL ? strlen((const char *)text) : 0;
		while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == ' '))
			n--;
		mg_err_set(err, "JSON parse failed at byte %zu: %.*s", offset, (int)n,
		           text != NULL ? (char *)text : "unknown error");
		if (text != NULL)
			yajl_free_error(c->h, text);
		return -1;
	}
	case yajl_status_ok:
		break;
	}
	return mg_err_set(err, "JSON parse failed at byte %zu", offset);
}

int json_parse(const char *text, size_t len, const struct json_limits *limits,
               struct json_value **out, struct mg_err **err)
{
	if (limits == NULL)
		limits = &json_default_limits;
	if (len > limits->max_bytes)
		return mg_err_set(err, "JSON text of %zu bytes exceeds the limit of %zu bytes", len,
		                  limits->max_bytes);
	if (text == NULL)
		text = "";

	struct parse_ctx c = {.text = (const unsigned char *)text, .limits = limits};
	yajl_alloc_funcs alloc = {yajl_xmalloc, yajl_xrealloc, yajl_xfree, NULL};
	c.h = yajl_alloc(&parse_callbacks, &alloc, &c);
	if (c.h == NULL)
		json_bug("yajl_alloc failed");
	if (!yajl_config(c.h, yajl_allow_comments, 0) ||
	    !yajl_config(c.h, yajl_allow_trailing_garbage, 0) ||
	    !yajl_config(c.h, yajl_allow_multiple_values, 0) ||
	    !yajl_config(c.h, yajl_allow_partial_values, 0))
		json_bug("yajl_config failed");

	int r = 0;
	yajl_status st = yajl_parse(c.h, c.text, len);
	/* offsets from yajl are into the last chunk it was given */
	size_t offset = yajl_get_bytes_consumed(c.h);
	yajl_status fin = yajl_complete_parse(c.h);
	if (st != yajl_status_ok)
		r = yajl_failure(&c, st, offset, err);
	else if (fin != yajl_status_ok)
		/* complete_parse feeds yajl one byte of its own: the error is at the end */
		r = yajl_failure(&c, fin, len, err);
	else if (c.root == NULL || c.depth != 0)
		r = mg_err_set(err, "JSON text ends early at byte %zu", len);

	yajl_free(c.h);
	free(c.key);
	free(c.stack);
	mg_err_free(c.err);
	if (r < 0) {
		json_free(c.root);
		return -1;
	}
	*out = c.root;
	return 0;
}
