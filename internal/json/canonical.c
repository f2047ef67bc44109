/* The canonical form of a JSON value, the bytes manifest pinning hashes.
 * docs/canonical-json.md states the rule; testdata/json/canonical-golden.txt
 * guards it. Changing any output here changes every pinned hash. */
#include "internal/json/json.h"

#include <errno.h>
#include <inttypes.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/base/cleanup.h"
#include "internal/base/num.h"
#include "internal/base/xalloc.h"

/* 2^53: below it every integer is a double, and printed as an integer */
#define EXACT_INT_LIMIT 9007199254740992.0

/* Longest part of a literal or key quoted in an error message. */
#define TEXT_IN_MESSAGE_MAX 64

/* Rule (a): a literal without fraction and exponent whose value fits int64.
 * Returns 1 and sets *out when it applies, 0 when rule (b) does. */
static int integer_literal(const char *n, size_t len, int64_t *out)
{
	if (memchr(n, '.', len) != NULL || memchr(n, 'e', len) != NULL ||
	    memchr(n, 'E', len) != NULL)
		return 0;
	bool neg = n[0] == '-';
	/* the magnitude of INT64_MIN is INT64_MAX + 1 */
	uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	uint64_t mag;
	if (mg_parse_u64n(n + neg, len - neg, 0, limit, "number", &mag, NULL) < 0)
		return 0;
	*out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
	return 1;
}

/* Append s with the exponent of a "%g" result normalised: no '+', no leading
 * zeros ("1e+21" -> "1e21", "1.5e-07" -> "1.5e-7"). */
static int append_normalised(const char *s, struct mg_buf *out, struct mg_err **err)
{
	const char *e = strchr(s, 'e');
	if (e == NULL)
		return mg_buf_puts(out, s, err);
	if (mg_buf_append(out, s, (size_t)(e - s) + 1, err) < 0)
		return -1;
	const char *p = e + 1;
	if (*p == '+') {
		p++;
	} else if (*p == '-') {
		if (mg_buf_putc(out, '-', err) < 0)
			return -1;
		p++;
	}
	while (p[0] == '0' && p[1] != '\0')
		p++;
	return mg_buf_puts(out, p, err);
}

/* Rule (b), in the C locale so that '.' is the decimal point whatever the
 * process's LC_NUMERIC says. */
static int append_double(const char *lit, size_t len, struct mg_buf *out, struct mg_err **err)
{
	char *end = NULL;
	double x = strtod(lit, &end);
	if (end != lit + len)
		return mg_err_set(err, "cannot read the number %.*s", TEXT_IN_MESSAGE_MAX, lit);
	if (!__builtin_isfinite(x))
		return mg_err_set(err, "the number %.*s%s is out of range of a double",
		                  TEXT_IN_MESSAGE_MAX, lit, len > TEXT_IN_MESSAGE_MAX ? "..." : "");
	if (x > -EXACT_INT_LIMIT && x < EXACT_INT_LIMIT) {
		/* the cast is exact in this range; -0.0 comes out as 0 */
		int64_t i = (int64_t)x;
		if ((double)i == x)
			return mg_buf_printf(out, err, "%" PRId64, i);
	}
	char text[40];
	for (int p = 1; p <= 17; p++) {
		int n = snprintf(text, sizeof(text), "%.*g", p, x);
		if (n < 0 || (size_t)n >= sizeof(text))
			return mg_err_set(err, "cannot format the number %.*s", TEXT_IN_MESSAGE_MAX,
			                  lit);
		if (strtod(text, NULL) == x)
			return append_normalised(text, out, err);
	}
	/* 17 significant digits always read back to the same double */
	return mg_err_set(err, "cannot format the number %.*s", TEXT_IN_MESSAGE_MAX, lit);
}

static int canonical_number(const struct json_value *v, struct mg_buf *out, struct mg_err **err)
{
	const char *lit = v->u.num.ptr;
	size_t len = v->u.num.len;
	if (!json_number_valid(lit, len))
		return mg_err_set(err, "invalid JSON number literal");
	int64_t i;
	if (integer_literal(lit, len, &i))
		return mg_buf_printf(out, err, "%" PRId64, i);

	/* strtod needs the NUL the stored literal may not have */
	cleanup_free char *copy = xstrndup(lit, len);
	locale_t c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
	if (c_locale == (locale_t)0)
		return mg_err_sys(err, errno, "cannot make the C locale");
	locale_t previous = uselocale(c_locale);
	int r = append_double(copy, len, out, err);
	uselocale(previous);
	freelocale(c_locale);
	return r;
}

/* Keys as byte strings of UTF-8: memcmp, and on a common prefix the shorter
 * first. For UTF-8 this is code-point order. */
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

static int duplicate_key(const struct json_member *m, struct mg_err **err)
{
	struct mg_buf b = MG_BUF_INIT(16 * TEXT_IN_MESSAGE_MAX);
	size_t n = m->keylen;
	if (n > TEXT_IN_MESSAGE_MAX) {
		n = TEXT_IN_MESSAGE_MAX;
		while (n > 0 && ((unsigned char)m->key[n] & 0xC0) == 0x80)
			n--;
	}
	if (json_quote(m->key, n, &b, NULL) < 0)
		mg_buf_reset(&b);
	mg_err_set(err, "duplicate key %s%s in an object: it has no canonical form", mg_buf_str(&b),
	           n < m->keylen ? "..." : "");
	mg_buf_free(&b);
	return -1;
}

/* literal: numbers as their literal text (json_exact), else the canonical
 * number rule (json_canonical) */
static int canonical_value(const struct json_value *v, bool literal, struct mg_buf *out,
                           struct mg_err **err);

static int canonical_object(const struct json_value *v, bool literal, struct mg_buf *out,
                            struct mg_err **err)
{
	size_t n = v->u.obj.len;
	if (n == 0)
		return mg_buf_puts(out, "{}", err);
	cleanup_free const struct json_member **sorted = xreallocarray(NULL, n, sizeof(*sorted));
	for (size_t i = 0; i < n; i++)
		sorted[i] = &v->u.obj.items[i];
	qsort(sorted, n, sizeof(*sorted), member_cmp);
	if (mg_buf_putc(out, '{', err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (i > 0) {
			if (member_cmp(&sorted[i - 1], &sorted[i]) == 0)
				return duplicate_key(sorted[i], err);
			if (mg_buf_putc(out, ',', err) < 0)
				return -1;
		}
		if (json_quote(sorted[i]->key, sorted[i]->keylen, out, err) < 0 ||
		    mg_buf_putc(out, ':', err) < 0 ||
		    canonical_value(sorted[i]->value, literal, out, err) < 0)
			return -1;
	}
	return mg_buf_putc(out, '}', err);
}

static int canonical_value(const struct json_value *v, bool literal, struct mg_buf *out,
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
		if (!literal)
			return canonical_number(v, out, err);
		if (!json_number_valid(v->u.num.ptr, v->u.num.len))
			return mg_err_set(err, "invalid JSON number literal");
		return mg_buf_append(out, v->u.num.ptr, v->u.num.len, err);
	case JSON_STRING:
		return json_quote(v->u.str.ptr, v->u.str.len, out, err);
	case JSON_ARRAY:
		if (mg_buf_putc(out, '[', err) < 0)
			return -1;
		for (size_t i = 0; i < v->u.arr.len; i++) {
			if (i > 0 && mg_buf_putc(out, ',', err) < 0)
				return -1;
			if (canonical_value(v->u.arr.items[i], literal, out, err) < 0)
				return -1;
		}
		return mg_buf_putc(out, ']', err);
	case JSON_OBJECT:
		return canonical_object(v, literal, out, err);
	}
	return mg_err_set(err, "unknown JSON value kind %d", (int)v->kind);
}

static int sorted_text(const struct json_value *v, bool literal, struct mg_buf *out,
                       struct mg_err **err)
{
	size_t start = out->len;
	if (canonical_value(v, literal, out, err) < 0) {
		mg_buf_truncate(out, start);
		return -1;
	}
	return 0;
}

int json_canonical(const struct json_value *v, struct mg_buf *out, struct mg_err **err)
{
	return sorted_text(v, false, out, err);
}

int json_exact(const struct json_value *v, struct mg_buf *out, struct mg_err **err)
{
	return sorted_text(v, true, out, err);
}

static int member_value_cmp(const void *a, const void *b)
{
	const struct json_member *x = a, *y = b;
	return member_cmp(&x, &y);
}

void json_sort_keys(struct json_value *v)
{
	if (v == NULL)
		return;
	if (v->kind == JSON_ARRAY)
		for (size_t i = 0; i < v->u.arr.len; i++)
			json_sort_keys(v->u.arr.items[i]);
	if (v->kind != JSON_OBJECT)
		return;
	if (v->u.obj.len > 1)
		qsort(v->u.obj.items, v->u.obj.len, sizeof(v->u.obj.items[0]), member_value_cmp);
	for (size_t i = 0; i < v->u.obj.len; i++)
		json_sort_keys(v->u.obj.items[i].value);
}
