/* TOML out of values, keys and comments, escaped so that nothing in them
 * is ever structure (toml_encode.h). */
#define _GNU_SOURCE
#include "internal/toml/toml_encode.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/base/cleanup.h"
#include "internal/base/quote.h"
#include "internal/base/utf8.h"

/* Nesting of arrays and inline tables written; the parser refuses trees
 * deeper than this, so a tree it made always fits */
#define ENCODE_DEPTH_MAX 256

int toml_encode_string(struct mg_buf *b, const char *s, size_t len, struct mg_err **err)
{
	return mg_quote(s, len, MG_QUOTE_TEXT, b, err);
}

static bool bare_key(const char *s, size_t len)
{
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-'))
			return false;
	}
	return true;
}

int toml_encode_key(struct mg_buf *b, const char *s, size_t len, struct mg_err **err)
{
	if (bare_key(s, len))
		return mg_buf_append(b, s, len, err);
	return toml_encode_string(b, s, len, err);
}

/* The text of a date or time as the parser keeps it: digits and - : . T Z + */
static bool datetime_text(const char *s, size_t len)
{
	return len > 0 && strspn(s, "0123456789-:.TZ+") == len && len == strlen(s);
}

static int encode_float(struct mg_buf *b, double d, struct mg_err **err)
{
	if (isnan(d))
		return mg_buf_puts(b, signbit(d) ? "-nan" : "nan", err);
	if (isinf(d))
		return mg_buf_puts(b, d < 0 ? "-inf" : "inf", err);
	char text[64];
	int n = snprintf(text, sizeof(text), "%.17g", d);
	if (n < 0 || (size_t)n >= sizeof(text))
		return mg_err_set(err, "a float that does not fit in %zu characters", sizeof(text));
	/* TOML's float needs a fraction or an exponent: 1 is an integer */
	bool whole = strpbrk(text, ".e") == NULL;
	return mg_buf_puts(b, text, err) < 0 || (whole && mg_buf_puts(b, ".0", err) < 0) ? -1 : 0;
}

static int encode_value(struct mg_buf *b, const struct toml_value *v, unsigned depth,
                        struct mg_err **err);

static int encode_inline_table(struct mg_buf *b, const struct toml_value *t, unsigned depth,
                               struct mg_err **err)
{
	if (t->u.table.len == 0)
		return mg_buf_puts(b, "{}", err);
	if (mg_buf_puts(b, "{ ", err) < 0)
		return -1;
	for (size_t i = 0; i < t->u.table.len; i++) {
		const struct toml_kv *kv = &t->u.table.items[i];
		if ((i > 0 && mg_buf_puts(b, ", ", err) < 0) ||
		    toml_encode_key(b, kv->key, kv->keylen, err) < 0 ||
		    mg_buf_puts(b, " = ", err) < 0 ||
		    encode_value(b, kv->value, depth + 1, err) < 0)
			return -1;
	}
	return mg_buf_puts(b, " }", err);
}

static int encode_value(struct mg_buf *b, const struct toml_value *v, unsigned depth,
                        struct mg_err **err)
{
	if (depth > ENCODE_DEPTH_MAX)
		return mg_err_set(err, "a value nested more than %d levels deep", ENCODE_DEPTH_MAX);
	switch (v->kind) {
	case TOML_STRING:
		return toml_encode_string(b, v->u.str.ptr, v->u.str.len, err);
	case TOML_INTEGER:
		return mg_buf_printf(b, err, "%" PRId64, v->u.integer);
	case TOML_FLOAT:
		return encode_float(b, v->u.flt, err);
	case TOML_BOOL:
		return mg_buf_puts(b, v->u.boolean ? "true" : "false", err);
	case TOML_DATETIME:
	case TOML_DATETIME_LOCAL:
	case TOML_DATE_LOCAL:
	case TOML_TIME_LOCAL:
		if (!datetime_text(v->u.str.ptr, v->u.str.len)) {
			cleanup_free char *shown = mg_shown(v->u.str.ptr, v->u.str.len);
			return mg_err_set(err, "\"%s\" is not a date or time", shown);
		}
		return mg_buf_append(b, v->u.str.ptr, v->u.str.len, err);
	case TOML_ARRAY:
		if (mg_buf_putc(b, '[', err) < 0)
			return -1;
		for (size_t i = 0; i < v->u.array.len; i++)
			if ((i > 0 && mg_buf_puts(b, ", ", err) < 0) ||
			    encode_value(b, v->u.array.items[i], depth + 1, err) < 0)
				return -1;
		return mg_buf_putc(b, ']', err);
	case TOML_TABLE:
		return encode_inline_table(b, v, depth, err);
	}
	return mg_err_set(err, "a TOML value of unknown kind %d", (int)v->kind);
}

int toml_encode_value(struct mg_buf *b, const struct toml_value *v, struct mg_err **err)
{
	size_t start = b->len;
	if (encode_value(b, v, 0, err) < 0) {
		mg_buf_truncate(b, start);
		return -1;
	}
	return 0;
}

static int check_eol(const char *eol, struct mg_err **err)
{
	if (strcmp(eol, "\n") != 0 && strcmp(eol, "\r\n") != 0)
		return mg_err_set(err, "a TOML line ends in \\n or \\r\\n (a bug of mcpgate's)");
	return 0;
}

int toml_encode_comment(struct mg_buf *b, const char *text, const char *eol, struct mg_err **err)
{
	if (check_eol(eol, err) < 0)
		return -1;
	/* every control character, line end or hiding character in text is
	 * shown as an escape: the comment stays one line whatever text holds */
	cleanup_free char *shown = mg_shown(text, strlen(text));
	size_t start = b->len;
	if (mg_buf_puts(b, shown[0] != '\0' ? "# " : "#", err) < 0 ||
	    mg_buf_puts(b, shown, err) < 0 || mg_buf_puts(b, eol, err) < 0) {
		mg_buf_truncate(b, start);
		return -1;
	}
	return 0;
}

int toml_encode_table(struct mg_buf *b, const char *const *path, size_t n, bool element,
                      const struct toml_value *t, const char *eol, struct mg_err **err)
{
	if (check_eol(eol, err) < 0)
		return -1;
	if (n == 0 || t->kind != TOML_TABLE)
		return mg_err_set(err, "a table is written under a header of one key or more");
	size_t start = b->len;
	int r = mg_buf_puts(b, element ? "[[" : "[", err);
	for (size_t i = 0; r == 0 && i < n; i++)
		if ((i > 0 && mg_buf_putc(b, '.', err) < 0) ||
		    toml_encode_key(b, path[i], strlen(path[i]), err) < 0)
			r = -1;
	if (r == 0 &&
	    (mg_buf_puts(b, element ? "]]" : "]", err) < 0 || mg_buf_puts(b, eol, err) < 0))
		r = -1;
	for (size_t i = 0; r == 0 && i < t->u.table.len; i++) {
		const struct toml_kv *kv = &t->u.table.items[i];
		if (toml_encode_key(b, kv->key, kv->keylen, err) < 0 ||
		    mg_buf_puts(b, " = ", err) < 0 || encode_value(b, kv->value, 0, err) < 0 ||
		    mg_buf_puts(b, eol, err) < 0)
			r = -1;
	}
	if (r < 0)
		mg_buf_truncate(b, start);
	return r;
}
