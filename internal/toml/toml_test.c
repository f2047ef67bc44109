/* Unit tests of the TOML parser: positions, the error messages callers show
 * to users, the lookups, and inputs the fuzzer found. The toml-test corpus
 * (tests/toml-test.sh) covers the language itself. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal/base/cleanup.h"
#include "internal/base/testing.h"
#include "internal/base/xalloc.h"
#include "internal/toml/toml.h"

/* Parse text; returns the tree or NULL, and the error message in *msg
 * (owned by the caller, "" on success). */
static struct toml_value *parse_n(const char *text, size_t len, char **msg)
{
	struct toml_value *root = (struct toml_value *)1; /* must be overwritten */
	struct mg_err *err = NULL;
	int r = toml_parse(text, len, "t.toml", &root, &err);
	*msg = xstrdup(mg_err_msg(err));
	if (r < 0 && root != NULL) {
		t_note("toml_parse failed without clearing *out");
		root = NULL;
	}
	if ((r < 0) != (err != NULL))
		t_note("toml_parse returned %d with err %s", r, err != NULL ? "set" : "unset");
	mg_err_free(err);
	return r < 0 ? NULL : root;
}

static struct toml_value *parse(const char *text, char **msg)
{
	return parse_n(text, strlen(text), msg);
}

/* The error message for text, or "(parsed)" when it parses. */
static char *error_of_n(const char *text, size_t len)
{
	char *msg;
	struct toml_value *root = parse_n(text, len, &msg);
	if (root != NULL) {
		toml_free(root);
		free(msg);
		return xstrdup("(parsed)");
	}
	return msg;
}

static char *error_of(const char *text)
{
	return error_of_n(text, strlen(text));
}

static void expect_error(const char *text, const char *want, const char *name)
{
	cleanup_free char *got = error_of(text);
	T_STR(got, want, "error: %s", name);
}

static void expect_ok(const char *text, const char *name)
{
	cleanup_free char *msg = NULL;
	struct toml_value *root = parse(text, &msg);
	T_OK(root != NULL, "parses: %s", name);
	if (root == NULL)
		t_note("%s", msg);
	toml_free(root);
}

static void test_empty(void)
{
	const char *docs[] = {"", "\n", "   \t\n\r\n", "# only a comment", "\xEF\xBB\xBF"};
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		cleanup_free char *msg = NULL;
		struct toml_value *root = parse(docs[i], &msg);
		T_OK(root != NULL && root->kind == TOML_TABLE && root->u.table.len == 0,
		     "empty document %zu is an empty table", i);
		if (root != NULL) {
			T_INT(root->pos.line, 1, "root line");
			T_INT(root->pos.col, 1, "root col");
		}
		toml_free(root);
	}
	struct toml_value *root = (struct toml_value *)1;
	T_INT(toml_parse(NULL, 0, NULL, &root, NULL), 0, "NULL text of length 0 parses");
	T_OK(root != NULL && root->u.table.len == 0, "to an empty table");
	toml_free(root);
	root = (struct toml_value *)1;
	T_INT(toml_parse("a =", 3, NULL, &root, NULL), -1, "a failure with err NULL returns -1");
	T_OK(root == NULL, "and leaves *out NULL");
	toml_free(NULL);
	T_OK(1, "toml_free(NULL) does nothing");
}

static void expect_pos(const struct toml_pos pos, unsigned line, unsigned col, const char *what)
{
	T_INT(pos.line, line, "%s line", what);
	T_INT(pos.col, col, "%s col", what);
}

static const struct toml_kv *kv_of(const struct toml_value *t, const char *key)
{
	if (t == NULL || t->kind != TOML_TABLE)
		return NULL;
	for (size_t i = 0; i < t->u.table.len; i++) {
		if (strcmp(t->u.table.items[i].key, key) == 0)
			return &t->u.table.items[i];
	}
	return NULL;
}

static void test_positions(void)
{
	const char *text = "title = \"x\"\n"                /* 1 */
	                   "\n"                             /* 2 */
	                   "[server]\r\n"                   /* 3: CRLF */
	                   "  port = 8080\n"                /* 4 */
	                   "  doc = \"\"\"\n"               /* 5 */
	                   "two\n"                          /* 6 */
	                   "lines\"\"\"  # c\n"             /* 7 */
	                   "  tags = [ \"a\",\n"            /* 8 */
	                   "     { k.j = 1 } ]\n"           /* 9 */
	                   "[[srv.list]]\n"                 /* 10 */
	                   "\tname.first = 'n'\n"           /* 11 */
	                   "[[srv.list]]\n"                 /* 12 */
	                   "when = 1979-05-27 07:32:00Z\n"; /* 13 */
	cleanup_free char *msg = NULL;
	struct toml_value *root = parse(text, &msg);
	T_OK(root != NULL, "positions document parses");
	if (root == NULL) {
		t_note("%s", msg);
		return;
	}
	const struct toml_kv *kv = kv_of(root, "title");
	T_OK(kv != NULL, "title is there");
	if (kv != NULL) {
		expect_pos(kv->keypos, 1, 1, "title key");
		expect_pos(kv->value->pos, 1, 9, "title value");
	}
	kv = kv_of(root, "server");
	T_OK(kv != NULL, "server is there");
	if (kv == NULL)
		goto out;
	expect_pos(kv->keypos, 3, 2, "server key");
	expect_pos(kv->value->pos, 3, 1, "server table (its header)");
	const struct toml_value *server = kv->value;
	kv = kv_of(server, "port");
	T_OK(kv != NULL && kv->value->kind == TOML_INTEGER && kv->value->u.integer == 8080,
	     "port = 8080");
	if (kv != NULL) {
		expect_pos(kv->keypos, 4, 3, "port key (after a CRLF line)");
		expect_pos(kv->value->pos, 4, 10, "port value");
	}
	kv = kv_of(server, "doc");
	T_OK(kv != NULL && kv->value->kind == TOML_STRING, "doc is a string");
	if (kv != NULL) {
		T_STR(kv->value->u.str.ptr, "two\nlines",
		      "multi-line string, first newline trimmed");
		expect_pos(kv->value->pos, 5, 9, "multi-line string value");
	}
	kv = kv_of(server, "tags");
	T_OK(kv != NULL && kv->value->kind == TOML_ARRAY && kv->value->u.array.len == 2,
	     "tags is an array of 2");
	if (kv != NULL && kv->value->kind == TOML_ARRAY && kv->value->u.array.len == 2) {
		expect_pos(kv->keypos, 8, 3, "tags key (after a multi-line string)");
		expect_pos(kv->value->pos, 8, 10, "tags array");
		expect_pos(kv->value->u.array.items[0]->pos, 8, 12, "tags[0]");
		const struct toml_value *it = kv->value->u.array.items[1];
		expect_pos(it->pos, 9, 6, "tags[1] inline table");
		const struct toml_kv *k = kv_of(it, "k");
		T_OK(k != NULL, "inline table has k");
		if (k != NULL) {
			expect_pos(k->keypos, 9, 8, "dotted key part k");
			const struct toml_kv *j = kv_of(k->value, "j");
			T_OK(j != NULL, "k has j");
			if (j != NULL) {
				expect_pos(j->keypos, 9, 10, "last dotted part j");
				expect_pos(j->value->pos, 9, 14, "j value");
			}
		}
	}
	kv = kv_of(root, "srv");
	const struct toml_kv *list = kv != NULL ? kv_of(kv->value, "list") : NULL;
	T_OK(list != NULL && list->value->kind == TOML_ARRAY && list->value->u.array.len == 2,
	     "srv.list is an array of 2 tables");
	if (list != NULL && list->value->kind == TOML_ARRAY && list->value->u.array.len == 2) {
		expect_pos(kv->keypos, 10, 3, "implicit table srv key");
		expect_pos(list->keypos, 10, 7, "array of tables key");
		expect_pos(list->value->pos, 10, 1, "array of tables");
		expect_pos(list->value->u.array.items[0]->pos, 10, 1, "first element");
		expect_pos(list->value->u.array.items[1]->pos, 12, 1, "second element");
		const struct toml_kv *name = kv_of(list->value->u.array.items[0], "name");
		const struct toml_kv *first = name != NULL ? kv_of(name->value, "first") : NULL;
		T_OK(first != NULL, "first element has name.first");
		if (first != NULL) {
			expect_pos(name->keypos, 11, 2, "name key after a tab");
			expect_pos(first->keypos, 11, 7, "first key");
			expect_pos(first->value->pos, 11, 15, "literal string value");
		}
		const struct toml_kv *when = kv_of(list->value->u.array.items[1], "when");
		T_OK(when != NULL && when->value->kind == TOML_DATETIME, "when is a datetime");
		if (when != NULL) {
			T_STR(when->value->u.str.ptr, "1979-05-27T07:32:00Z",
			      "datetime text uses T");
			expect_pos(when->value->pos, 13, 8, "datetime value");
		}
	}
out:
	toml_free(root);
}

static void test_values(void)
{
	const char *text = "i = -9223372036854775808\n"
	                   "j = 0x7FFF_FFFF_FFFF_FFFF\n"
	                   "k = 0o17\n"
	                   "l = 0b101\n"
	                   "f = -1_000.5e-3\n"
	                   "inf = -inf\n"
	                   "nan = +nan\n"
	                   "b = false\n"
	                   "s = 'C:\\path'\n"
	                   "e = \"tab\\there \\u00e9 \\U0001F600\"\n"
	                   "ld = 2024-02-29\n"
	                   "lt = 23:59:60.5\n"
	                   "ldt = 2024-01-01t00:00:00\n"
	                   "odt = 2024-01-01 00:00:00.123+05:30\n"
	                   "cont = \"\"\"a \\\n    b\"\"\"\n";
	cleanup_free char *msg = NULL;
	struct toml_value *root = parse(text, &msg);
	T_OK(root != NULL, "values document parses");
	if (root == NULL) {
		t_note("%s", msg);
		return;
	}
	const struct toml_value *v;
	v = toml_get(root, "i");
	T_OK(v != NULL && v->kind == TOML_INTEGER && v->u.integer == INT64_MIN, "INT64_MIN");
	v = toml_get(root, "j");
	T_OK(v != NULL && v->kind == TOML_INTEGER && v->u.integer == INT64_MAX, "hex INT64_MAX");
	v = toml_get(root, "k");
	T_OK(v != NULL && v->u.integer == 15, "octal");
	v = toml_get(root, "l");
	T_OK(v != NULL && v->u.integer == 5, "binary");
	v = toml_get(root, "f");
	T_OK(v != NULL && v->kind == TOML_FLOAT && v->u.flt == -1.0005, "float with underscores");
	v = toml_get(root, "inf");
	T_OK(v != NULL && v->kind == TOML_FLOAT && isinf(v->u.flt) && v->u.flt < 0, "-inf");
	v = toml_get(root, "nan");
	T_OK(v != NULL && v->kind == TOML_FLOAT && isnan(v->u.flt), "nan");
	v = toml_get(root, "b");
	T_OK(v != NULL && v->kind == TOML_BOOL && !v->u.boolean, "false");
	v = toml_get(root, "s");
	T_STR(v != NULL ? v->u.str.ptr : NULL, "C:\\path", "literal string keeps backslashes");
	v = toml_get(root, "e");
	T_STR(v != NULL ? v->u.str.ptr : NULL, "tab\there \xC3\xA9 \xF0\x9F\x98\x80", "escapes");
	v = toml_get(root, "ld");
	T_OK(v != NULL && v->kind == TOML_DATE_LOCAL, "local date on a leap day");
	v = toml_get(root, "lt");
	T_OK(v != NULL && v->kind == TOML_TIME_LOCAL, "local time with a leap second");
	v = toml_get(root, "ldt");
	T_OK(v != NULL && v->kind == TOML_DATETIME_LOCAL, "local date-time");
	T_STR(v != NULL ? v->u.str.ptr : NULL, "2024-01-01T00:00:00", "'t' stored as 'T'");
	v = toml_get(root, "odt");
	T_OK(v != NULL && v->kind == TOML_DATETIME, "offset date-time");
	T_STR(v != NULL ? v->u.str.ptr : NULL, "2024-01-01T00:00:00.123+05:30",
	      "' ' stored as 'T'");
	v = toml_get(root, "cont");
	T_STR(v != NULL ? v->u.str.ptr : NULL, "a b", "line-ending backslash");
	toml_free(root);
}

static void test_errors(void)
{
	expect_error("a = 1\na = 2\n", "t.toml:2:1: duplicate key \"a\"", "duplicate key");
	expect_error("[srv]\nimage = 'x'\n  image = 'y'\n", "t.toml:3:3: duplicate key \"image\"",
	             "duplicate key in a table");
	expect_error("a.b = 1\na.b = 2\n", "t.toml:2:3: duplicate key \"a.b\"",
	             "duplicate dotted key");
	expect_error("a = 1\na.b = 2\n", "t.toml:2:1: duplicate key \"a\"",
	             "dotted key through a value");
	expect_error("[a]\nx = 1\n[a]\n", "t.toml:3:2: table \"a\" redefined", "table redefined");
	expect_error("[a.b]\n[ a . b ]\n", "t.toml:2:7: table \"a.b\" redefined",
	             "dotted table redefined");
	expect_error("[a]\nb.c = 1\n[a.b]\n", "t.toml:3:4: table \"a.b\" redefined",
	             "table made by a dotted key redefined by a header");
	expect_error("[a.b]\n[a]\nb.c = 1\n",
	             "t.toml:3:1: dotted key cannot extend table \"b\" defined by a header",
	             "dotted key into a header table");
	expect_error("s = \"a\\qb\"\n", "t.toml:1:7: invalid escape \"\\q\"", "invalid escape");
	expect_error("s = \"\"\"\nline\\x\"\"\"\n", "t.toml:2:5: invalid escape \"\\x\"",
	             "invalid escape in a multi-line string");
	expect_error("s = \"\\uD800\"",
	             "t.toml:1:6: invalid escape: U+D800 is not a unicode scalar value",
	             "surrogate escape");
	expect_error("a = 1\ns = \"\xC3\x28\"\n", "t.toml:2:6: invalid UTF-8", "invalid UTF-8");
	expect_error("# \xED\xA0\x80\n", "t.toml:1:3: invalid UTF-8", "encoded surrogate");
	expect_error("n = 9223372036854775808\n",
	             "t.toml:1:5: integer \"9223372036854775808\" out of range",
	             "integer overflow");
	expect_error("n = -9_223_372_036_854_775_809\n",
	             "t.toml:1:5: integer \"-9_223_372_036_854_775_809\" out of range",
	             "negative integer overflow");
	expect_error("n = 0x8000000000000000\n",
	             "t.toml:1:5: integer \"0x8000000000000000\" out of range",
	             "hex integer overflow");
	expect_error("s = \"abc\n", "t.toml:1:5: unterminated string", "unterminated string");
	expect_error("\n  k = 'abc", "t.toml:2:7: unterminated string",
	             "unterminated literal string");
	expect_error("s = '''abc\n\n", "t.toml:1:5: unterminated multi-line string",
	             "unterminated multi-line string");
	expect_error("d = 2023-02-29\n", "t.toml:1:5: invalid date \"2023-02-29\"", "bad date");
	expect_error("d = 1900-02-29T00:00:00Z\n",
	             "t.toml:1:5: invalid date \"1900-02-29T00:00:00Z\"", "no leap day in 1900");
	expect_error("t = 12:60:00\n", "t.toml:1:5: invalid time \"12:60:00\"", "bad time");
	expect_error("a = {b = 1}\na.c = 2\n", "t.toml:2:1: cannot extend inline table \"a\"",
	             "extending an inline table with a dotted key");
	expect_error("a = {b = 1}\n[a.c]\n", "t.toml:2:2: cannot extend inline table \"a\"",
	             "extending an inline table with a header");
	expect_error("a = {b = {c = 1}}\n[a]\n", "t.toml:2:2: cannot extend inline table \"a\"",
	             "an inline table as a [table]");
	expect_error("a = [1]\n[[a]]\n", "t.toml:2:3: cannot append to static array \"a\"",
	             "appending to a static array");
	expect_error("[[a]]\n[a]\n", "t.toml:2:2: table \"a\" redefined",
	             "array of tables as a table");
	expect_error("a = 1 b = 2\n", "t.toml:1:7: expected a newline after a value, found 'b'",
	             "two pairs on a line");
	expect_error("a = {b = 1,}\n", "t.toml:1:12: trailing comma in inline table",
	             "trailing comma");
	expect_error("a = {b = 1,\nc = 2}\n", "t.toml:1:12: expected a key, found newline",
	             "newline in an inline table");
	expect_error("a = 1\rb = 2\n",
	             "t.toml:1:6: expected a newline after a value, found carriage return without "
	             "newline",
	             "bare carriage return");
	expect_error("s = \"a\x01\"\n", "t.toml:1:7: control character U+0001 in string",
	             "control character in a string");
	expect_error("\"a\\u0000b\" = 1\n\"a\\u0000b\" = 2\n",
	             "t.toml:2:1: duplicate key \"a\\u0000b\"", "names a key with U+0000 escaped");
	expect_ok("x = 1", "no newline at the end");
}

static void test_depth(void)
{
	char buf[600];
	size_t n = 0;
	memcpy(buf, "a = ", 4);
	n = 4;
	for (int i = 0; i < 128; i++)
		buf[n++] = '[';
	for (int i = 0; i < 128; i++)
		buf[n++] = ']';
	buf[n] = '\0';
	expect_ok(buf, "arrays nested 128 deep");

	n = 4;
	for (int i = 0; i < 129; i++)
		buf[n++] = '[';
	for (int i = 0; i < 129; i++)
		buf[n++] = ']';
	buf[n] = '\0';
	expect_error(buf, "t.toml:1:133: nesting too deep (more than 128 levels)",
	             "arrays nested 129 deep");

	n = 4;
	for (int i = 0; i < 129; i++) {
		memcpy(buf + n, "{a=", 3);
		n += 3;
	}
	buf[n++] = '1';
	for (int i = 0; i < 129; i++)
		buf[n++] = '}';
	buf[n] = '\0';
	expect_error(buf, "t.toml:1:389: nesting too deep (more than 128 levels)",
	             "inline tables nested 129 deep");

	/* 129 dotted parts: the 129th table would be one level too deep */
	n = 0;
	buf[n++] = '[';
	for (int i = 0; i < 129; i++) {
		if (i > 0)
			buf[n++] = '.';
		buf[n++] = 'k';
	}
	buf[n++] = ']';
	buf[n] = '\0';
	expect_error(buf, "t.toml:1:258: nesting too deep (more than 128 levels)",
	             "a header 129 tables deep");
}

static void test_get_and_names(void)
{
	cleanup_free char *msg = NULL;
	struct toml_value *root = parse("\"a\\u0000b\" = 1\nname = 'x'\n[t]\ny = 2\n", &msg);
	T_OK(root != NULL, "lookup document parses");
	if (root == NULL)
		return;
	const struct toml_kv *kv = &root->u.table.items[0];
	T_INT((long long)kv->keylen, 3, "a key with U+0000 keeps its length");
	T_OK(memcmp(kv->key, "a\0b", 4) == 0, "and its bytes, NUL-terminated");
	T_OK(toml_get(root, "a") == NULL, "toml_get does not match at the U+0000");
	const struct toml_value *v = toml_get(root, "name");
	T_OK(v != NULL && v->kind == TOML_STRING, "toml_get finds a string");
	v = toml_get(root, "t");
	T_OK(v != NULL && v->kind == TOML_TABLE, "toml_get finds a table");
	const struct toml_value *y = toml_get(v, "y");
	T_OK(y != NULL && y->u.integer == 2, "toml_get in a sub-table");
	T_OK(toml_get(root, "missing") == NULL, "toml_get of a missing key is NULL");
	T_OK(toml_get(y, "y") == NULL, "toml_get on a non-table is NULL");
	T_OK(toml_get(NULL, "y") == NULL, "toml_get on NULL is NULL");
	toml_free(root);

	T_STR(toml_kind_name(TOML_TABLE), "table", "kind name table");
	T_STR(toml_kind_name(TOML_ARRAY), "array", "kind name array");
	T_STR(toml_kind_name(TOML_STRING), "string", "kind name string");
	T_STR(toml_kind_name(TOML_INTEGER), "integer", "kind name integer");
	T_STR(toml_kind_name(TOML_FLOAT), "float", "kind name float");
	T_STR(toml_kind_name(TOML_BOOL), "boolean", "kind name boolean");
	T_STR(toml_kind_name(TOML_DATETIME), "datetime", "kind name datetime");
	T_STR(toml_kind_name(TOML_DATETIME_LOCAL), "local datetime", "kind name local datetime");
	T_STR(toml_kind_name(TOML_DATE_LOCAL), "local date", "kind name local date");
	T_STR(toml_kind_name(TOML_TIME_LOCAL), "local time", "kind name local time");
}

static void test_not_terminated(void)
{
	/* the parser reads len bytes, never up to a NUL */
	char text[] = {'a', ' ', '=', ' ', '1', '2'};
	cleanup_free char *msg = NULL;
	struct toml_value *root = parse_n(text, 5, &msg);
	const struct toml_value *a = toml_get(root, "a");
	T_OK(a != NULL && a->u.integer == 1, "text of length 5 reads \"a = 1\"");
	toml_free(root);
	cleanup_free char *e = error_of_n("k = \"x\0\"", 8);
	T_STR(e, "t.toml:1:7: control character U+0000 in string", "a raw NUL inside the length");
}

static void test_many_keys(void)
{
	/* 50000 keys in one table and 50000 tables: lookups must not be quadratic */
	size_t cap = 50000 * 24, n = 0;
	cleanup_free char *text = xmalloc(cap);
	for (int i = 0; i < 50000; i++)
		n += (size_t)snprintf(text + n, cap - n, "k%d = %d\n", i, i);
	for (int i = 0; i < 50000 && n < cap - 32; i++)
		n += (size_t)snprintf(text + n, cap - n, "[t%d]\n", i);
	cleanup_free char *msg = NULL;
	struct toml_value *root = parse_n(text, n, &msg);
	T_OK(root != NULL && root->u.table.len == 50000 + 50000, "100000 keys in the root table");
	const struct toml_value *v = toml_get(root, "k49999");
	T_OK(v != NULL && v->u.integer == 49999, "the last one is there");
	toml_free(root);
}

static void test_sample_file(void)
{
	size_t len;
	cleanup_free char *text = t_read_file("testdata/toml/sample.toml", &len);
	cleanup_free char *msg = NULL;
	struct toml_value *root = parse_n(text, len, &msg);
	T_OK(root != NULL, "testdata/toml/sample.toml parses");
	if (root == NULL)
		t_note("%s", msg);
	const struct toml_value *servers = toml_get(root, "server");
	T_OK(servers != NULL && servers->kind == TOML_ARRAY && servers->u.array.len == 2,
	     "it has two [[server]] entries");
	toml_free(root);
}

int main(void)
{
	test_empty();
	test_positions();
	test_values();
	test_errors();
	test_depth();
	test_get_and_names();
	test_not_terminated();
	test_many_keys();
	test_sample_file();
	return t_done();
}
