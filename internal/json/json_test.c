/* Unit tests for internal/json. Run from the repository top: the golden test
 * reads testdata/json/. */
#include "internal/json/json.h"
#include "internal/json/shape.h"

#include <locale.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/base/cleanup.h"
#include "internal/base/testing.h"
#include "internal/base/xalloc.h"

#define OUT_MAX    (1u << 24)
#define GOLDEN_IN  "testdata/json/canonical-input.json"
#define GOLDEN_OUT "testdata/json/canonical-golden.txt"

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* ---- helpers ---------------------------------------------------------- */

/* The output of json_generate or json_canonical as a string, or "ERROR: msg". */
static char *render(const struct json_value *v, bool canonical)
{
	struct mg_buf out = MG_BUF_INIT(OUT_MAX);
	cleanup_err struct mg_err *err = NULL;
	int r = canonical ? json_canonical(v, &out, &err) : json_generate(v, &out, &err);
	if (r < 0) {
		mg_buf_free(&out);
		return xasprintf("ERROR: %s", mg_err_msg(err));
	}
	return mg_buf_steal(&out, NULL);
}

static struct json_value *parse_text(const char *text, size_t len)
{
	struct json_value *v = NULL;
	cleanup_err struct mg_err *err = NULL;
	if (json_parse(text, len, NULL, &v, &err) < 0) {
		t_note("unexpected parse error: %s", mg_err_msg(err));
		return NULL;
	}
	return v;
}

/* parse, then generate or canonicalise; "PARSE ERROR: msg" when it does not parse */
static char *reparse(const char *text, size_t len, bool canonical)
{
	struct json_value *v = NULL;
	cleanup_err struct mg_err *err = NULL;
	if (json_parse(text, len, NULL, &v, &err) < 0)
		return xasprintf("PARSE ERROR: %s", mg_err_msg(err));
	char *s = render(v, canonical);
	json_free(v);
	return s;
}

static void parse_fails(const char *name, const char *text, size_t len,
                        const struct json_limits *limits, const char *const *words)
{
	struct json_value *v = NULL;
	cleanup_err struct mg_err *err = NULL;
	int r = json_parse(text, len, limits, &v, &err);
	T_OK(r < 0 && err != NULL && v == NULL, "parse refuses %s", name);
	const char *msg = mg_err_msg(err);
	for (size_t i = 0; words[i] != NULL; i++)
		T_OK(strstr(msg, words[i]) != NULL, "%s: message \"%s\" says \"%s\"", name, msg,
		     words[i]);
	json_free(v);
}

/* text is a string literal (it may hold NUL bytes); then the words the error must hold */
#define PARSE_FAILS(name, text, limits, ...) \
	parse_fails(name, text, sizeof(text) - 1, limits, (const char *const[]){__VA_ARGS__, NULL})

static char *nested(const char *open, const char *close, unsigned depth)
{
	size_t lo = strlen(open), lc = strlen(close);
	char *s = xmalloc(depth * (lo + lc) + 1);
	size_t n = 0;
	for (unsigned i = 0; i < depth; i++, n += lo)
		memcpy(s + n, open, lo);
	for (unsigned i = 0; i < depth; i++, n += lc)
		memcpy(s + n, close, lc);
	s[n] = '\0';
	return s;
}

/* ---- parsing ---------------------------------------------------------- */

static void test_parse_errors(void)
{
	PARSE_FAILS("a truncated array", "{\"a\": [1, 2", NULL, "premature EOF", "byte 11");
	PARSE_FAILS("a truncated string", "[\"abc", NULL, "premature EOF", "byte 5");
	PARSE_FAILS("a truncated literal", "tru", NULL, "byte 3");
	PARSE_FAILS("empty text", "", NULL, "premature EOF", "byte 0");
	PARSE_FAILS("only whitespace", " \n\t ", NULL, "premature EOF");
	PARSE_FAILS("garbage after an object", "{\"a\":1} x", NULL, "trailing garbage", "byte");
	PARSE_FAILS("a second value", "[1] 2", NULL, "trailing garbage", "byte 5");
	PARSE_FAILS("two numbers", "1 2", NULL, "trailing garbage");
	PARSE_FAILS("a second object", "{}{}", NULL, "trailing garbage");
	PARSE_FAILS("a comment", "/* c */ 1", NULL, "comment");
	PARSE_FAILS("a leading zero", "[01]", NULL, "byte");
	PARSE_FAILS("a bare decimal point", "[1.]", NULL, "decimal point");
	PARSE_FAILS("NaN", "[NaN]", NULL, "invalid");
	PARSE_FAILS("a raw control character",
	            "[\"a\x01"
	            "b\"]",
	            NULL, "invalid character inside string", "byte");
	PARSE_FAILS("a NUL byte", "[1,\0]", NULL, "byte");
	PARSE_FAILS("a single quote", "['a']", NULL, "invalid");
	PARSE_FAILS("a trailing comma", "[1,]", NULL, "byte");
	PARSE_FAILS("a key that is not a string", "{1:2}", NULL, "object key");

	/* yajl's lexer refuses what is not shaped like UTF-8 */
	PARSE_FAILS("a stray byte 0xff", "\"\xff\"", NULL, "UTF8", "byte");
	PARSE_FAILS("a lone continuation byte", "[\"a\x80\"]", NULL, "UTF8");
	/* and this module refuses what yajl takes for UTF-8 but is not */
	PARSE_FAILS("an overlong '/'", "[\"\xc0\xaf\"]", NULL, "invalid UTF-8", "byte 2");
	PARSE_FAILS("an encoded surrogate", "\"ab\xed\xa0\x80\"", NULL, "invalid UTF-8", "byte 3");
	PARSE_FAILS("a code point past U+10FFFF", "\"\xf4\x90\x80\x80\"", NULL, "invalid UTF-8");
	PARSE_FAILS("invalid UTF-8 in a key", "{\"\xc0\xaf\":1}", NULL, "invalid UTF-8", "byte 2");
	PARSE_FAILS("a lone high surrogate escape", "[\"\\ud800\"]", NULL,
	            "unpaired UTF-16 surrogate", "byte 2");
	PARSE_FAILS("a high surrogate before text", "\"\\ud800abc\"", NULL, "surrogate");
	PARSE_FAILS("a high surrogate before a non-surrogate escape", "\"x\\uD800\\u0041\"", NULL,
	            "surrogate", "byte 2");
	PARSE_FAILS("two high surrogates", "\"\\ud800\\ud800\"", NULL, "surrogate");
	PARSE_FAILS("a lone low surrogate escape", "\"\\udc00\"", NULL, "surrogate", "byte 1");
	PARSE_FAILS("a surrogate escape in a key", "{\"a\":1,\"\\udfff\":2}", NULL, "surrogate");

	PARSE_FAILS("a duplicate key", "{\"a\":1,\"b\":2,\"a\":3}", NULL, "duplicate key \"a\"",
	            "byte 18");
	PARSE_FAILS("a duplicate key deeper down", "[{\"x\":{\"k\":[],\"k\":{}}}]", NULL,
	            "duplicate key \"k\"");
	PARSE_FAILS("a duplicate key spelt two ways", "{\"\xc3\xa9\":1,\"\\u00e9\":2}", NULL,
	            "duplicate key \"\xc3\xa9\"");
	PARSE_FAILS("a duplicate key with a control character", "{\"a\\nb\":1,\"a\\nb\":1}", NULL,
	            "duplicate key \"a\\nb\"");

	char *deep = nested("[", "]", 65);
	parse_fails("65 nested arrays", deep, strlen(deep), NULL,
	            (const char *const[]){"nesting depth", "limit of 64", "byte 64", NULL});
	free(deep);
	deep = nested("{\"a\":", "}", 65);
	parse_fails("65 nested objects", deep, strlen(deep), NULL,
	            (const char *const[]){"nesting depth", "limit of 64", NULL});
	free(deep);
	const struct json_limits depth2 = {1024, 2, 0};
	PARSE_FAILS("depth 3 under a limit of 2", "{\"a\":[{}]}", &depth2, "nesting depth",
	            "limit of 2", "byte 6");
	const struct json_limits depth0 = {1024, 0, 0};
	PARSE_FAILS("an array under a limit of 0", "[]", &depth0, "limit of 0");

	const struct json_limits ten = {10, 64, 0};
	PARSE_FAILS("13 bytes under a limit of 10", "[1,2,3,4,5,6]", &ten, "13 bytes",
	            "limit of 10 bytes");
	const struct json_limits none = {0, 64, 0};
	PARSE_FAILS("1 byte under a limit of 0", "1", &none, "limit of 0 bytes");
}

static void test_parse_accepts(void)
{
	struct json_value *v = NULL;
	cleanup_err struct mg_err *err = NULL;

	char *deep = nested("[", "]", 64);
	T_OK(json_parse(deep, strlen(deep), NULL, &v, &err) == 0, "64 nested arrays parse");
	json_free(v);
	v = NULL;
	free(deep);

	const struct json_limits depth2 = {1024, 2, 0};
	T_OK(json_parse("{\"a\":[1]}", 9, &depth2, &v, &err) == 0, "depth 2 under a limit of 2");
	json_free(v);
	v = NULL;
	const struct json_limits depth0 = {1024, 0, 0};
	T_OK(json_parse("\"x\"", 3, &depth0, &v, &err) == 0, "a scalar under a limit of 0");
	json_free(v);
	v = NULL;
	const struct json_limits ten = {10, 64, 0};
	T_OK(json_parse("[1,2,3,45]", 10, &ten, &v, &err) == 0, "10 bytes under a limit of 10");
	json_free(v);
	v = NULL;

	/* a key and the same key with a NUL after it are different keys */
	static const char nul_keys[] = "{\"a\":1,\"a\\u0000\":2}";
	T_OK(json_parse(nul_keys, sizeof(nul_keys) - 1, NULL, &v, &err) == 0,
	     "keys differing by a trailing U+0000 are not duplicates");
	T_INT(v != NULL ? (long long)v->u.obj.len : -1, 2, "both members kept");
	json_free(v);
	v = NULL;

	static const char doc[] = " {\"s\" : \"a\\u0000b\\/\", \"n\":-1.50e+3, \"t\":true, "
	                          "\"f\":false, \"z\":null, \"a\":[1, \"x\", []], "
	                          "\"e\":\"\\ud83d\\ude00\\u00e9\"} \n";
	T_OK(json_parse(doc, sizeof(doc) - 1, NULL, &v, &err) == 0, "a document parses");
	if (v == NULL)
		return;
	T_INT(v->kind, JSON_OBJECT, "the root is an object");
	T_INT((long long)v->u.obj.len, 7, "with 7 members");
	T_STR(v->u.obj.items[0].key, "s", "members keep their order (first)");
	T_STR(v->u.obj.items[6].key, "e", "members keep their order (last)");
	const struct json_value *s = json_get(v, "s");
	T_OK(s != NULL && s->kind == JSON_STRING && s->u.str.len == 4 &&
	         memcmp(s->u.str.ptr, "a\0b/", 5) == 0,
	     "a string with U+0000 keeps its length and is NUL-terminated");
	const struct json_value *n = json_get(v, "n");
	T_OK(n != NULL && n->kind == JSON_NUMBER, "a number");
	T_STR(n != NULL ? n->u.num.ptr : NULL, "-1.50e+3", "a number keeps its literal text");
	T_OK(json_get(v, "t") != NULL && json_get(v, "t")->u.boolean, "true");
	T_OK(json_get(v, "f") != NULL && !json_get(v, "f")->u.boolean, "false");
	T_INT(json_get(v, "z") != NULL ? (long long)json_get(v, "z")->kind : -1, JSON_NULL, "null");
	const struct json_value *a = json_get(v, "a");
	T_INT(a != NULL && a->kind == JSON_ARRAY ? (long long)a->u.arr.len : -1, 3, "an array");
	T_STR(json_get_string(v, "e"), "\xf0\x9f\x98\x80\xc3\xa9", "a surrogate pair decodes");
	json_free(v);
	v = NULL;

	static const char *const scalars[][2] = {
	    {"42", "42"},         {" \"x\" ", "\"x\""},   {"true", "true"},     {"false", "false"},
	    {"\nnull\t", "null"}, {"-0.0e-0", "-0.0e-0"}, {"\"\\/\"", "\"/\""},
	};
	for (size_t i = 0; i < N_ELEMS(scalars); i++) {
		cleanup_free char *got = reparse(scalars[i][0], strlen(scalars[i][0]), false);
		T_STR(got, scalars[i][1], "a top-level scalar: %s", scalars[i][1]);
	}

	int sentinel;
	v = (struct json_value *)&sentinel;
	T_OK(json_parse("[", 1, NULL, &v, NULL) < 0, "a failed parse with err NULL");
	T_OK(v == (struct json_value *)&sentinel, "a failed parse leaves *out alone");
}

/* ---- generation ------------------------------------------------------- */

static void test_round_trip(void)
{
	static const char *const same[] = {
	    "{\"b\":1,\"a\":[true,false,null],\"c\":{\"d\":\"e\"}}",
	    "[1.0,1e2,-0,1E+2,0.5e-3,123456789012345678901234567890,-9223372036854775809]",
	    "\"quote \\\" backslash \\\\ tab \\t nl \\n cr \\r ff \\f bs \\b\"",
	    "\"ctl \\u0001 \\u001f del \\u007f slash / \xc3\xa9 \xe2\x80\xa8 \xf0\x9f\x98\x80\"",
	    "[]",
	    "{}",
	    "[[],{},[[]],{\"\":{}}]",
	    "\"\"",
	    "{\"z\":0,\"y\":-0.0,\"x\":1e-400}",
	};
	for (size_t i = 0; i < N_ELEMS(same); i++) {
		cleanup_free char *got = reparse(same[i], strlen(same[i]), false);
		T_STR(got, same[i], "generate(parse(x)) == x: %s", same[i]);
	}

	static const char with_nul[] = "{\"a\\u0000b\":\"\\u0000\"}";
	cleanup_free char *got = reparse(with_nul, sizeof(with_nul) - 1, false);
	T_STR(got, with_nul, "generate(parse(x)) == x with U+0000");

	static const char *const compact[][2] = {
	    {" { \"a\" : [ 1 , 2 ] ,\n\t\"b\" : { } } ", "{\"a\":[1,2],\"b\":{}}"},
	    {"\"\\/\\u00e9\\u00E9\\u2028\"", "\"/\xc3\xa9\xc3\xa9\xe2\x80\xa8\""},
	    {"\"\\u0008\\u0009\\u000a\\u000C\\u000d\\u0022\\u005c\\u007F\"",
	     "\"\\b\\t\\n\\f\\r\\\"\\\\\\u007f\""},
	};
	for (size_t i = 0; i < N_ELEMS(compact); i++) {
		cleanup_free char *g = reparse(compact[i][0], strlen(compact[i][0]), false);
		T_STR(g, compact[i][1], "generate writes compact JSON: %s", compact[i][1]);
	}
}

static void test_generate_errors(void)
{
	cleanup_err struct mg_err *err = NULL;

	struct json_value *bad = json_new_stringn("a\xff", 2);
	struct mg_buf out = MG_BUF_INIT(1024);
	T_OK(mg_buf_puts(&out, "keep", NULL) == 0, "a buffer with text in it");
	T_OK(json_generate(bad, &out, &err) < 0, "generate refuses invalid UTF-8");
	T_OK(strstr(mg_err_msg(err), "UTF-8") != NULL, "and says so: %s", mg_err_msg(err));
	T_STR(mg_buf_str(&out), "keep", "a failed generate leaves the buffer as it was");
	mg_err_clear(&err);
	T_OK(json_canonical(bad, &out, &err) < 0, "canonical refuses invalid UTF-8");
	T_STR(mg_buf_str(&out), "keep", "a failed canonical leaves the buffer as it was");
	mg_err_clear(&err);
	json_free(bad);

	struct json_value *arr = json_new_array();
	json_array_push(arr, json_new_string("0123456789"));
	struct mg_buf small = MG_BUF_INIT(8);
	T_OK(json_generate(arr, &small, &err) < 0, "generate past the buffer limit fails");
	T_OK(strstr(mg_err_msg(err), "limit") != NULL, "naming the limit: %s", mg_err_msg(err));
	T_INT((long long)small.len, 0, "and leaves nothing behind");
	mg_err_clear(&err);
	json_free(arr);
	mg_buf_free(&small);

	/* a number literal set by hand, past the builders */
	struct json_value *num = json_new_int(1);
	free(num->u.num.ptr);
	num->u.num.ptr = xstrdup("0x10");
	num->u.num.len = 4;
	T_OK(json_generate(num, &out, &err) < 0, "generate refuses a bad number literal");
	mg_err_clear(&err);
	T_OK(json_canonical(num, &out, &err) < 0, "canonical refuses a bad number literal");
	mg_err_clear(&err);
	json_free(num);
	mg_buf_free(&out);
}

/* ---- quoting ---------------------------------------------------------- */

struct quote_case {
	const char *in;
	size_t len;
	const char *want; /* NULL: an error */
};

#define Q(s, w)                     \
	{                           \
		s, sizeof(s) - 1, w \
	}

static void test_quote(void)
{
	static const struct quote_case cases[] = {
	    Q("", "\"\""),
	    Q("plain", "\"plain\""),
	    Q("a\"b", "\"a\\\"b\""),
	    Q("a\\b", "\"a\\\\b\""),
	    Q("\b", "\"\\b\""),
	    Q("\t", "\"\\t\""),
	    Q("\n", "\"\\n\""),
	    Q("\f", "\"\\f\""),
	    Q("\r", "\"\\r\""),
	    Q("\0", "\"\\u0000\""),
	    Q("\x01", "\"\\u0001\""),
	    Q("\x0b", "\"\\u000b\""),
	    Q("\x1a", "\"\\u001a\""),
	    Q("\x1f", "\"\\u001f\""),
	    Q("\x7f", "\"\\u007f\""),
	    Q(" ~", "\" ~\""),
	    Q("/", "\"/\""),
	    Q("<script>&'", "\"<script>&'\""),
	    Q("\xc3\xa9", "\"\xc3\xa9\""),
	    Q("\xc2\x80\xc2\x9f", "\"\xc2\x80\xc2\x9f\""),
	    Q("\xe2\x80\xa8\xe2\x80\xa9", "\"\xe2\x80\xa8\xe2\x80\xa9\""),
	    Q("\xef\xbb\xbf\xef\xbf\xbf", "\"\xef\xbb\xbf\xef\xbf\xbf\""),
	    Q("\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf", "\"\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\""),
	    Q("tab\there \xc3\xa9\x1f", "\"tab\\there \xc3\xa9\\u001f\""),
	    Q("\xff", NULL),
	    Q("a\x80", NULL),
	    Q("\xc0\xaf", NULL),
	    Q("\xe0\x80\xaf", NULL),
	    Q("\xed\xa0\x80", NULL),
	    Q("\xed\xbf\xbf", NULL),
	    Q("\xf4\x90\x80\x80", NULL),
	    Q("\xe2\x82", NULL),
	    Q("\xf8\x88\x80\x80\x80", NULL),
	};
	for (size_t i = 0; i < N_ELEMS(cases); i++) {
		struct mg_buf out = MG_BUF_INIT(1024);
		cleanup_err struct mg_err *err = NULL;
		int r = json_quote(cases[i].in, cases[i].len, &out, &err);
		if (cases[i].want == NULL) {
			T_OK(r < 0 && strstr(mg_err_msg(err), "invalid UTF-8") != NULL &&
			         out.len == 0,
			     "quote refuses invalid UTF-8 (case %zu): %s", i, mg_err_msg(err));
		} else {
			T_OK(r == 0, "quote case %zu succeeds", i);
			T_STR(mg_buf_str(&out), cases[i].want, "quote case %zu", i);
			/* the same escaping inside generate and canonical */
			struct json_value *s = json_new_stringn(cases[i].in, cases[i].len);
			cleanup_free char *g = render(s, false);
			cleanup_free char *c = render(s, true);
			T_OK(strcmp(g, cases[i].want) == 0 && strcmp(c, cases[i].want) == 0,
			     "generate and canonical escape case %zu the same way", i);
			json_free(s);
		}
		mg_buf_free(&out);
	}
}

/* ---- canonical form --------------------------------------------------- */

static void test_canonical_keys(void)
{
	static const char in[] = "{\"b\":1,\"a\":2,\"ab\":3,\"\":4,\"B\":5,\"\xc3\xa9\":6,\"z\":7,"
	                         "\"\xf0\x9f\x98\x80\":8,\"\xef\xbd\xa1\":9,\"a\\u0000\":10,"
	                         "\"aa\":{\"y\":[3,1,2],\"x\":{\"d\":1,\"c\":2}}}";
	static const char want[] =
	    "{\"\":4,\"B\":5,\"a\":2,\"a\\u0000\":10,\"aa\":{\"x\":{\"c\":2,"
	    "\"d\":1},\"y\":[3,1,2]},\"ab\":3,\"b\":1,\"z\":7,\"\xc3\xa9\":6,"
	    "\"\xef\xbd\xa1\":9,\"\xf0\x9f\x98\x80\":8}";
	cleanup_free char *got = reparse(in, sizeof(in) - 1, true);
	T_STR(got, want, "canonical sorts keys as UTF-8 bytes, shorter first, arrays kept");

	static const char spaced[] = " {\n \"b\" : [ true , false , null ] ,\t\"a\" : \"\" } ";
	cleanup_free char *got2 = reparse(spaced, sizeof(spaced) - 1, true);
	T_STR(got2, "{\"a\":\"\",\"b\":[true,false,null]}", "canonical drops whitespace");

	/* two members with one key can only be built by hand; they have no canonical form */
	struct json_value *obj = json_new_object();
	json_object_set(obj, "a", json_new_int(1));
	json_object_set(obj, "b", json_new_int(2));
	free(obj->u.obj.items[1].key);
	obj->u.obj.items[1].key = xstrdup("a");
	obj->u.obj.items[1].keylen = 1;
	cleanup_free char *dup = render(obj, true);
	T_OK(strstr(dup, "ERROR") != NULL && strstr(dup, "duplicate key \"a\"") != NULL,
	     "canonical refuses duplicate keys: %s", dup);
	json_free(obj);
}

struct number_case {
	const char *literal;
	const char *want; /* NULL: an error */
};

static void test_canonical_numbers(void)
{
	static const struct number_case cases[] = {
	    {"0", "0"},
	    {"-0", "0"},
	    {"-0.0", "0"},
	    {"0e0", "0"},
	    {"1.0", "1"},
	    {"1e2", "100"},
	    {"1E2", "100"},
	    {"1e+2", "100"},
	    {"100", "100"},
	    {"2.5E+3", "2500"},
	    {"-12.5e-1", "-1.25"},
	    {"0.1", "0.1"},
	    {"0.30000000000000004", "0.30000000000000004"},
	    {"123.456", "123.456"},
	    {"0.0001", "0.0001"},
	    {"0.00001", "1e-5"},
	    {"1.5e-7", "1.5e-7"},
	    {"1e15", "1000000000000000"},
	    {"1e16", "1e16"},
	    {"1e21", "1e21"},
	    {"-1E+021", "-1e21"},
	    {"100000000000000000000", "1e20"},
	    {"123456789012345678901234567890", "1.2345678901234568e29"},
	    {"-9223372036854775808", "-9223372036854775808"},
	    {"9223372036854775807", "9223372036854775807"},
	    {"9223372036854775808", "9.223372036854776e18"},
	    {"-9223372036854775809", "-9.223372036854776e18"},
	    {"9007199254740992.0", "9007199254740992"},
	    {"9007199254740991.0", "9007199254740991"},
	    {"9007199254740993", "9007199254740993"},
	    {"9007199254740993.0", "9007199254740992"},
	    {"9007199254740992", "9007199254740992"},
	    {"1.7976931348623157e308", "1.7976931348623157e308"},
	    {"5e-324", "5e-324"},
	    {"2.2250738585072014e-308", "2.2250738585072014e-308"},
	    {"1e-400", "0"},
	    {"-1e-400", "0"},
	    {"1e400", NULL},
	    {"-1e400", NULL},
	    {"1.8e308", NULL},
	};
	for (size_t i = 0; i < N_ELEMS(cases); i++) {
		const char *lit = cases[i].literal;
		struct json_value *v = json_new_number_text(lit, strlen(lit));
		if (!T_OK(v != NULL, "%s is a number literal", lit))
			continue;
		cleanup_free char *got = render(v, true);
		if (cases[i].want == NULL)
			T_OK(strstr(got, "ERROR") != NULL && strstr(got, "out of range") != NULL,
			     "canonical %s is an error: %s", lit, got);
		else
			T_STR(got, cases[i].want, "canonical %s", lit);
		json_free(v);

		/* the same through the parser, inside an array */
		cleanup_free char *text = xasprintf("[%s]", lit);
		cleanup_free char *want =
		    cases[i].want != NULL ? xasprintf("[%s]", cases[i].want) : NULL;
		cleanup_free char *got2 = reparse(text, strlen(text), true);
		if (want != NULL)
			T_STR(got2, want, "canonical %s after parsing", text);
		else
			T_OK(strncmp(got2, "ERROR", 5) == 0, "canonical %s after parsing fails",
			     text);
	}

	/* the rule does not depend on the process's locale */
	if (setlocale(LC_NUMERIC, "de_DE.UTF-8") != NULL) {
		struct json_value *v = json_new_number_text("0.5", 3);
		cleanup_free char *got = render(v, true);
		T_STR(got, "0.5", "canonical 0.5 under a locale with a decimal comma");
		json_free(v);
		setlocale(LC_NUMERIC, "C");
	} else {
		t_note("no de_DE.UTF-8 locale here; the decimal-comma check is skipped");
	}
}

static void test_doc_example(void)
{
	/* docs/canonical-json.md shows this input and these bytes */
	static const char in[] = "{\n  \"zeta\": \"tab\\there \xc3\xa9\\u001F\",\n"
	                         "  \"alpha\": [1.0, 1e2, -0],\n"
	                         "  \"Beta\": {\"y\": true, \"x\": null}\n}\n";
	static const char want[] = "{\"Beta\":{\"x\":null,\"y\":true},\"alpha\":[1,100,0],"
	                           "\"zeta\":\"tab\\there \xc3\xa9\\u001f\"}";
	cleanup_free char *got = reparse(in, sizeof(in) - 1, true);
	T_STR(got, want, "the worked example of docs/canonical-json.md");
}

static void test_golden(void)
{
	size_t in_len, golden_len;
	cleanup_free char *in = t_read_file(GOLDEN_IN, &in_len);
	cleanup_free char *golden = t_read_file(GOLDEN_OUT, &golden_len);
	struct json_value *v = parse_text(in, in_len);
	T_OK(v != NULL, "%s parses", GOLDEN_IN);
	if (v == NULL)
		return;
	struct mg_buf out = MG_BUF_INIT(OUT_MAX);
	cleanup_err struct mg_err *err = NULL;
	T_OK(json_canonical(v, &out, &err) == 0, "%s canonicalises: %s", GOLDEN_IN,
	     mg_err_msg(err));
	bool same = out.len == golden_len && memcmp(mg_buf_str(&out), golden, golden_len) == 0;
	T_OK(same, "canonical(%s) is byte for byte %s", GOLDEN_IN, GOLDEN_OUT);
	if (!same) {
		t_note("got %zu bytes, want %zu", out.len, golden_len);
		t_note("got: %s", mg_buf_str(&out));
	}
	json_free(v);
	mg_buf_free(&out);

	/* the canonical form is a fixed point of both writers */
	cleanup_free char *again = reparse(golden, golden_len, true);
	T_OK(strlen(again) == golden_len && memcmp(again, golden, golden_len) == 0,
	     "canonical(canonical(x)) == canonical(x)");
	cleanup_free char *gen = reparse(golden, golden_len, false);
	T_OK(strlen(gen) == golden_len && memcmp(gen, golden, golden_len) == 0,
	     "generate(canonical(x)) == canonical(x)");
}

/* ---- builders, lookups, copies ---------------------------------------- */

static void test_builders(void)
{
	struct json_value *obj = json_new_object();
	json_object_set(obj, "name", json_new_string("srv"));
	json_object_set(obj, "n", json_new_int(42));
	json_object_set(obj, "min", json_new_int(INT64_MIN));
	struct json_value *list = json_new_array();
	json_array_push(list, json_new_bool(true));
	json_array_push(list, json_new_null());
	json_array_push(list, json_new_number_text("1.5e3", 5));
	json_array_push(list, json_new_stringn("a\0b", 3));
	json_object_set(obj, "list", list);
	json_object_set(obj, "n", json_new_int(-7)); /* replaces, keeps the place */
	json_object_set(obj, "", json_new_object());

	cleanup_free char *got = render(obj, false);
	T_STR(got,
	      "{\"name\":\"srv\",\"n\":-7,\"min\":-9223372036854775808,"
	      "\"list\":[true,null,1.5e3,\"a\\u0000b\"],\"\":{}}",
	      "builders and generate");
	T_INT((long long)obj->u.obj.len, 5, "setting a key again does not add a member");

	T_STR(json_get_string(obj, "name"), "srv", "json_get_string");
	T_OK(json_get_string(obj, "n") == NULL, "json_get_string of a number is NULL");
	T_OK(json_get_string(obj, "nope") == NULL, "json_get_string of a missing key is NULL");
	T_OK(json_get(obj, "nope") == NULL, "json_get of a missing key is NULL");
	T_OK(json_get(obj, "nam") == NULL && json_get(obj, "names") == NULL,
	     "json_get matches whole keys only");
	T_OK(json_get(obj, "") != NULL && json_get(obj, "")->kind == JSON_OBJECT,
	     "json_get of the empty key");
	T_OK(json_get(list, "name") == NULL, "json_get on an array is NULL");
	T_OK(json_get(NULL, "name") == NULL, "json_get on NULL is NULL");
	T_OK(json_get_string(NULL, "name") == NULL, "json_get_string on NULL is NULL");

	struct json_value *holder = json_new_object();
	json_object_set(holder, "cmd", json_new_stringn("ls\0 -la", 7));
	T_OK(json_get(holder, "cmd") != NULL, "a string with U+0000 is there");
	T_OK(json_get_string(holder, "cmd") == NULL,
	     "json_get_string does not hand out a string cut at U+0000");
	json_free(holder);

	int64_t i = 0;
	T_OK(json_number_int64(json_get(obj, "n"), &i) == 0 && i == -7, "json_number_int64 -7");
	T_OK(json_number_int64(json_get(obj, "min"), &i) == 0 && i == INT64_MIN,
	     "json_number_int64 INT64_MIN");

	static const char *const valid[] = {"0",     "-0",   "7",         "-1.5",        "1e9",
	                                    "1E+9",  "1e-9", "0.0e0",     "123.456E-78", "10",
	                                    "-0.01", "9e99", "1234567890"};
	for (size_t k = 0; k < N_ELEMS(valid); k++) {
		struct json_value *v = json_new_number_text(valid[k], strlen(valid[k]));
		T_OK(v != NULL && json_number_valid(valid[k], strlen(valid[k])),
		     "%s is a JSON number", valid[k]);
		json_free(v);
	}
	static const char *const invalid[] = {
	    "",     "-",   "+1",        "01", "-01", "1.",    ".5",  "1e",  "1e+",   "1.e5",
	    "0x10", "NaN", "-Infinity", " 1", "1 ",  "1_000", "1,5", "--1", "1e5.0", "١"};
	for (size_t k = 0; k < N_ELEMS(invalid); k++) {
		T_OK(json_new_number_text(invalid[k], strlen(invalid[k])) == NULL &&
		         !json_number_valid(invalid[k], strlen(invalid[k])),
		     "\"%s\" is not a JSON number", invalid[k]);
	}
	struct json_value *one = json_new_number_text("12", 1);
	T_STR(one != NULL ? one->u.num.ptr : NULL, "1",
	      "json_new_number_text reads len bytes and stores them NUL-terminated");
	json_free(one);

	json_free(obj);
	json_free(NULL);
}

static void test_number_int64(void)
{
	static const struct {
		const char *literal;
		int ok;
		int64_t want;
	} cases[] = {
	    {"42", 1, 42},
	    {"0", 1, 0},
	    {"-0", 1, 0},
	    {"-1", 1, -1},
	    {"9223372036854775807", 1, INT64_MAX},
	    {"-9223372036854775808", 1, INT64_MIN},
	    {"9223372036854775808", 0, 0},
	    {"-9223372036854775809", 0, 0},
	    {"123456789012345678901234567890", 0, 0},
	    {"1.0", 0, 0},
	    {"1e2", 0, 0},
	    {"1E2", 0, 0},
	    {"0.5", 0, 0},
	};
	for (size_t k = 0; k < N_ELEMS(cases); k++) {
		struct json_value *v =
		    json_new_number_text(cases[k].literal, strlen(cases[k].literal));
		int64_t got = 12345;
		int r = json_number_int64(v, &got);
		if (cases[k].ok)
			T_OK(r == 0 && got == cases[k].want, "json_number_int64(%s)",
			     cases[k].literal);
		else
			T_OK(r == -1 && got == 12345, "json_number_int64(%s) is -1, out untouched",
			     cases[k].literal);
		json_free(v);
	}
	int64_t got = 0;
	struct json_value *s = json_new_string("42");
	T_INT(json_number_int64(s, &got), -1, "json_number_int64 of a string is -1");
	T_INT(json_number_int64(NULL, &got), -1, "json_number_int64 of NULL is -1");
	json_free(s);
}

static void test_copy(void)
{
	static const char doc[] = "{\"b\":[1.50,\"x\\u0000y\",{\"k\":null}],\"a\":true,\"c\":-0}";
	struct json_value *v = parse_text(doc, sizeof(doc) - 1);
	struct json_value *c = json_copy(v);
	T_OK(c != NULL && c != v, "json_copy makes a new tree");
	cleanup_free char *gv = render(v, false);
	cleanup_free char *gc = render(c, false);
	T_STR(gc, gv, "the copy generates the same text");
	T_STR(gc, doc, "which is the original text");

	json_object_set(c, "a", json_new_bool(false));
	struct json_value *inner = c->u.obj.items[0].value;
	json_array_push(inner, json_new_int(9));
	cleanup_free char *gv2 = render(v, false);
	T_STR(gv2, doc, "changing the copy leaves the original alone");
	T_OK(v->u.obj.items[0].value->u.arr.items[0]->u.num.ptr !=
	         c->u.obj.items[0].value->u.arr.items[0]->u.num.ptr,
	     "the copy shares no storage");
	T_OK(json_copy(NULL) == NULL, "json_copy(NULL) is NULL");
	json_free(v);
	json_free(c);
}

/* json_shape_check: the first member of the wrong type or missing, named
 * by its whole path; arrays and objects walked with "*" */
static void test_shape(void)
{
	static const struct json_shape_member shape[] = {
	    {{NULL}, JS_OBJ, false},
	    {{"name"}, JS_STR, true},
	    {{"_meta"}, JS_OBJ, false},
	    {{"_meta", "progressToken"}, JS_STR | JS_INT, false},
	    {{"items"}, JS_ARR, false},
	    {{"items", "*"}, JS_OBJ, false},
	    {{"items", "*", "uri"}, JS_STR, true},
	    {{"map", "*", "n"}, JS_NUM, false},
	    /* as deep as a path goes */
	    {{"d", "*", "e", "f", "g"}, JS_STR, false},
	};
	static const struct {
		const char *in, *want;
	} cases[] = {
	    {"{\"name\":\"x\"}", NULL},
	    {"{\"name\":\"x\",\"_meta\":{\"progressToken\":7}}", NULL},
	    {"{\"name\":\"x\",\"_meta\":{\"progressToken\":true}}",
	     "params._meta.progressToken must be a string or an integer (it is a boolean)"},
	    {"{\"name\":\"x\",\"_meta\":{\"progressToken\":1.5}}",
	     "params._meta.progressToken must be a string or an integer (it is a number)"},
	    {"{\"name\":\"x\",\"_meta\":{\"progressToken\":{}}}",
	     "params._meta.progressToken must be a string or an integer (it is an object)"},
	    {"{\"name\":\"x\",\"_meta\":[]}", "params._meta must be an object (it is an array)"},
	    {"{}", "params.name is missing: it must be a string"},
	    {"{\"name\":\"a\\u0000b\"}",
	     "params.name must be a string (it is a string holding NUL)"},
	    {"[]", "params must be an object (it is an array)"},
	    {"{\"name\":\"x\",\"items\":[{\"uri\":\"u\"},{\"uri\":null}]}",
	     "params.items[1].uri must be a string (it is null)"},
	    {"{\"name\":\"x\",\"items\":[{\"uri\":\"u\"},{}]}",
	     "params.items[1].uri is missing: it must be a string"},
	    {"{\"name\":\"x\",\"items\":[3]}",
	     "params.items[0] must be an object (it is an integer)"},
	    {"{\"name\":\"x\",\"map\":{\"a b\":{\"n\":\"1\"}}}",
	     "params.map[\"a b\"].n must be a number (it is a string)"},
	    {"{\"name\":\"x\",\"map\":{\"a\":{\"n\":1e400}}}", NULL},
	    {"{\"name\":\"x\",\"map\":[{\"n\":true}]}",
	     "params.map[0].n must be a number (it is a boolean)"},
	    {"{\"name\":\"x\",\"d\":[{\"e\":{\"f\":{\"g\":\"ok\"}}},{\"e\":{\"f\":{\"g\":1}}}]}",
	     "params.d[1].e.f.g must be a string (it is an integer)"},
	};
	for (size_t i = 0; i < N_ELEMS(cases); i++) {
		struct json_value *v = parse_text(cases[i].in, strlen(cases[i].in));
		cleanup_free char *why = json_shape_check(v, "params", shape, N_ELEMS(shape));
		if (cases[i].want == NULL)
			T_OK(why == NULL, "shape: %s passes (%s)", cases[i].in, why ? why : "");
		else
			T_STR(why, cases[i].want, "shape: %s", cases[i].in);
		json_free(v);
	}
	cleanup_free char *absent = json_shape_check(NULL, "params", shape, N_ELEMS(shape));
	T_STR(absent, "params.name is missing: it must be a string",
	      "shape: absent params miss a required member");
	/* a key of a peer's is shown escaped and cut, never raw */
	cleanup_free char *key_text =
	    xasprintf("{\"name\":\"x\",\"map\":{\"%s\\u202e\\n\":{\"n\":[]}}}",
	              "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk");
	struct json_value *v = parse_text(key_text, strlen(key_text));
	cleanup_free char *why = json_shape_check(v, "params", shape, N_ELEMS(shape));
	T_OK(why != NULL && strstr(why, "...\"].n must be a number") != NULL &&
	         strchr(why, '\n') == NULL,
	     "shape: a long key with controls is cut and escaped: %s", why ? why : "(none)");
	json_free(v);
}

/* ---- comparing trees ---------------------------------------------------- */

/* The first difference of b from a, or "" when they hold the same */
static char *difference(const char *a, const char *b)
{
	struct json_value *x = parse_text(a, strlen(a)), *y = parse_text(b, strlen(b));
	cleanup_err struct mg_err *e = NULL;
	if (x != NULL && y != NULL)
		json_compare(x, y, &e);
	json_free(x);
	json_free(y);
	return xstrdup(mg_err_msg(e));
}

static void test_compare(void)
{
	static const struct {
		const char *a, *b, *want;
	} cases[] = {
	    {"{\"a\":1,\"b\":[true,null,\"s\"]}", "{\"b\":[true,null,\"s\"],\"a\":1}", ""},
	    {"{\"a\":1}", "{\"a\":1.0}", "a would be 1.0, where 1 was meant"},
	    {"{\"s\":{\"x\":[1,2]}}", "{\"s\":{\"x\":[1,2,3]}}",
	     "s.x would hold 3 elements, where 2 were meant"},
	    {"{\"s\":{}}", "{\"s\":{\"evil\":{\"command\":\"/bin/sh\"}}}",
	     "s.evil would be there (an object), which no change meant"},
	    {"{\"s\":{\"x\":1}}", "{\"s\":{}}", "s.x would be missing"},
	    {"{\"a\":\"x\"}", "{\"a\":[\"x\"]}", "a would be an array, where a string was meant"},
	    {"{\"a\":\"line\\u2028sep\"}", "{\"a\":\"line\"}",
	     "a would be \"line\", where \"line\\u{2028}sep\" was meant"},
	    {"[{\"k\":true}]", "[{\"k\":false}]", "[0].k would be false, where true was meant"},
	};
	for (size_t i = 0; i < N_ELEMS(cases); i++) {
		cleanup_free char *got = difference(cases[i].a, cases[i].b);
		T_STR(got, cases[i].want, "compare case %zu", i);
	}
	/* a key written twice (JSONC allows it): matched occurrence by occurrence */
	struct json_value *x = json_new_object(), *y = json_new_object();
	json_object_add(x, "k", 1, json_new_int(1));
	json_object_add(x, "k", 1, json_new_int(2));
	json_object_add(y, "k", 1, json_new_int(1));
	json_object_add(y, "k", 1, json_new_int(2));
	T_INT(json_compare(x, y, NULL), 0, "a key twice, the same twice");
	json_object_add(y, "k", 1, json_new_int(3));
	cleanup_err struct mg_err *e = NULL;
	T_INT(json_compare(x, y, &e), -1, "a third occurrence is found");
	T_STR(mg_err_msg(e), "k would be there (3), which no change meant", "and named");
	T_OK(json_object_remove(y, "k") && y->u.obj.len == 2 &&
	         strcmp(y->u.obj.items[0].value->u.num.ptr, "2") == 0,
	     "remove takes the first of a key");
	json_free(x);
	json_free(y);
}

int main(void)
{
	test_shape();
	test_parse_errors();
	test_parse_accepts();
	test_round_trip();
	test_generate_errors();
	test_quote();
	test_canonical_keys();
	test_canonical_numbers();
	test_doc_example();
	test_golden();
	test_builders();
	test_number_int64();
	test_copy();
	test_compare();
	{
		/* the value cap: a flat array of many small values is refused */
		const struct json_limits three = {1024, 64, 3};
		struct json_value *v = NULL;
		struct mg_err *e = NULL;
		T_INT(json_parse("[0,0]", 5, &three, &v, &e), 0, "three values fit a cap of three");
		json_free(v);
		v = NULL;
		T_INT(json_parse("[0,0,0]", 7, &three, &v, &e), -1, "a fourth value is refused");
		T_OK(e != NULL && strstr(e->msg, "more than 3 values") != NULL,
		     "naming the cap: %s", mg_err_msg(e));
		mg_err_free(e);
	}
	return t_done();
}
