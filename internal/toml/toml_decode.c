/* toml-decode: the decoder toml-test drives. Reads one TOML document on
 * standard input; prints toml-test's tagged JSON on standard output and
 * exits 0, or prints the parse error on standard error and exits 1.
 * The JSON is written by hand so this program links only toml and base. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/base/cleanup.h"
#include "internal/base/xalloc.h"
#include "internal/toml/toml.h"

#define INPUT_MAX ((size_t)64 << 20)

static void put_string(FILE *f, const char *s, size_t n)
{
	fputc('"', f);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c == 0x7F)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* The shortest "%.Ng" text that reads back as the same double. */
static void put_float(FILE *f, double v)
{
	if (isnan(v)) {
		fputs("\"nan\"", f);
		return;
	}
	if (isinf(v)) {
		fputs(v < 0 ? "\"-inf\"" : "\"inf\"", f);
		return;
	}
	char text[64];
	for (int prec = 15; prec <= 17; prec++) {
		int n = snprintf(text, sizeof(text), "%.*g", prec, v);
		if (n < 0 || (size_t)n >= sizeof(text)) {
			fputs("\"nan\"", f); /* cannot happen: %.17g of a double fits */
			return;
		}
		if (strtod(text, NULL) == v)
			break;
	}
	fprintf(f, "\"%s\"", text);
}

static void put_tagged(FILE *f, const char *type, const char *s, size_t n)
{
	fprintf(f, "{\"type\":\"%s\",\"value\":", type);
	put_string(f, s, n);
	fputc('}', f);
}

/* Depth is bounded: the parser refuses trees deeper than 128 containers. */
static void put_value(FILE *f, const struct toml_value *v)
{
	char num[32];
	switch (v->kind) {
	case TOML_TABLE:
		fputc('{', f);
		for (size_t i = 0; i < v->u.table.len; i++) {
			if (i > 0)
				fputc(',', f);
			put_string(f, v->u.table.items[i].key, v->u.table.items[i].keylen);
			fputc(':', f);
			put_value(f, v->u.table.items[i].value);
		}
		fputc('}', f);
		break;
	case TOML_ARRAY:
		fputc('[', f);
		for (size_t i = 0; i < v->u.array.len; i++) {
			if (i > 0)
				fputc(',', f);
			put_value(f, v->u.array.items[i]);
		}
		fputc(']', f);
		break;
	case TOML_STRING:
		put_tagged(f, "string", v->u.str.ptr, v->u.str.len);
		break;
	case TOML_INTEGER: {
		int n = snprintf(num, sizeof(num), "%" PRId64, v->u.integer);
		if (n < 0 || (size_t)n >= sizeof(num))
			n = 0;
		put_tagged(f, "integer", num, (size_t)n);
		break;
	}
	case TOML_FLOAT:
		fputs("{\"type\":\"float\",\"value\":", f);
		put_float(f, v->u.flt);
		fputc('}', f);
		break;
	case TOML_BOOL:
		put_tagged(f, "bool", v->u.boolean ? "true" : "false", v->u.boolean ? 4 : 5);
		break;
	case TOML_DATETIME:
		put_tagged(f, "datetime", v->u.str.ptr, v->u.str.len);
		break;
	case TOML_DATETIME_LOCAL:
		put_tagged(f, "datetime-local", v->u.str.ptr, v->u.str.len);
		break;
	case TOML_DATE_LOCAL:
		put_tagged(f, "date-local", v->u.str.ptr, v->u.str.len);
		break;
	case TOML_TIME_LOCAL:
		put_tagged(f, "time-local", v->u.str.ptr, v->u.str.len);
		break;
	}
}

/* All of stdin, up to INPUT_MAX bytes; NULL (message printed) when larger
 * or unreadable. */
static char *read_stdin(size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *p = xmalloc(cap);
	for (;;) {
		if (n == cap) {
			if (cap > INPUT_MAX) {
				fprintf(stderr, "toml-decode: input exceeds %zu bytes\n",
				        INPUT_MAX);
				free(p);
				return NULL;
			}
			cap = cap * 2 > INPUT_MAX + 1 ? INPUT_MAX + 1 : cap * 2;
			p = xrealloc(p, cap);
		}
		size_t r = fread(p + n, 1, cap - n, stdin);
		n += r;
		if (r == 0)
			break;
	}
	if (ferror(stdin)) {
		fprintf(stderr, "toml-decode: cannot read standard input\n");
		free(p);
		return NULL;
	}
	if (n > INPUT_MAX) {
		fprintf(stderr, "toml-decode: input exceeds %zu bytes\n", INPUT_MAX);
		free(p);
		return NULL;
	}
	*len = n;
	return p;
}

int main(void)
{
	size_t len;
	cleanup_free char *text = read_stdin(&len);
	if (text == NULL)
		return 1;
	struct toml_value *root = NULL;
	cleanup_err struct mg_err *err = NULL;
	if (toml_parse(text, len, "<stdin>", &root, &err) < 0) {
		fprintf(stderr, "%s\n", mg_err_msg(err));
		return 1;
	}
	put_value(stdout, root);
	fputc('\n', stdout);
	toml_free(root);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "toml-decode: cannot write standard output\n");
		return 1;
	}
	return 0;
}
