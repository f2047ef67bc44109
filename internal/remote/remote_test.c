/* Tests of internal/remote's SSE parser (every split of the input gives the
 * same events; fields, comments, line ends, ids, retry and the size cap) and
 * of its 2026-07-28 request headers (the value encoding, x-mcp-header rules,
 * the Mcp-Param-* lines of a call). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/base/buf.h"
#include "internal/base/testing.h"
#include "internal/base/xalloc.h"
#include "internal/remote/remote.h"

/* What the callback saw: one "[type|data|id]" per event, "[too big]" for an
 * overlong one; non-printable bytes as \xHH. */
struct seen {
	struct mg_buf log;
	int stop_after; /* return -1 from the Nth event (0: never) */
	int count;
};

static void put_escaped(struct mg_buf *b, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f && c != '\\')
			mg_buf_putc(b, (char)c, NULL);
		else
			mg_buf_printf(b, NULL, "\\x%02x", c);
	}
}

static int record(const struct sse_event *ev, void *data)
{
	struct seen *s = data;
	s->count++;
	if (ev->too_big) {
		mg_buf_puts(&s->log, "[too big]", NULL);
	} else {
		mg_buf_putc(&s->log, '[', NULL);
		put_escaped(&s->log, ev->type, ev->type_len);
		mg_buf_putc(&s->log, '|', NULL);
		put_escaped(&s->log, ev->data, ev->data_len);
		mg_buf_putc(&s->log, '|', NULL);
		put_escaped(&s->log, ev->id, ev->id_len);
		mg_buf_putc(&s->log, ']', NULL);
	}
	return s->stop_after > 0 && s->count >= s->stop_after ? -1 : 0;
}

/* Feed text in pieces of chunk bytes (0: all at once); returns the log,
 * allocated, and the parser's last id and retry through the pointers. */
static char *parse_split(const char *text, size_t len, size_t chunk, size_t event_max,
                         char **last_id, long long *retry)
{
	struct sse_parser p;
	sse_init(&p, event_max);
	struct seen s = {MG_BUF_INIT(1 << 20), 0, 0};
	mg_buf_puts(&s.log, "", NULL);
	if (chunk == 0)
		chunk = len > 0 ? len : 1;
	for (size_t off = 0; off < len; off += chunk) {
		size_t n = len - off < chunk ? len - off : chunk;
		if (sse_feed(&p, text + off, n, record, &s) < 0)
			break;
	}
	if (last_id != NULL) {
		size_t n;
		const char *id = sse_last_id(&p, &n);
		*last_id = xstrndup(id, n);
	}
	if (retry != NULL)
		*retry = sse_retry_ms(&p);
	sse_free(&p);
	return mg_buf_steal(&s.log, NULL);
}

static char *parse(const char *text, size_t event_max)
{
	return parse_split(text, strlen(text), 0, event_max, NULL, NULL);
}

/* The same events whether fed at once, byte by byte, or in chunks of 2..13. */
static void check_splits(const char *name, const char *text, size_t len, const char *want)
{
	char *whole = parse_split(text, len, 0, 0, NULL, NULL);
	T_STR(whole, want, "%s: fed at once", name);
	char *bytes = parse_split(text, len, 1, 0, NULL, NULL);
	T_STR(bytes, want, "%s: fed byte by byte", name);
	int same = 1;
	for (size_t c = 2; c <= 13; c++) {
		char *got = parse_split(text, len, c, 0, NULL, NULL);
		if (strcmp(got, want) != 0) {
			same = 0;
			t_note("chunks of %zu: %s", c, got);
		}
		free(got);
	}
	T_OK(same, "%s: fed in chunks of 2 to 13 bytes", name);
	free(whole);
	free(bytes);
}

static void test_basics(void)
{
	const char *text = "data: hello\n\n";
	check_splits("one event", text, strlen(text), "[message|hello|]");

	text = "event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"
	       "data: second\n\n";
	check_splits("two events, the id stays", text, strlen(text),
	             "[message|{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}|1][message|second|1]");

	text = "data: line one\ndata: line two\ndata:\ndata: four\n\n";
	check_splits("multi-line data", text, strlen(text),
	             "[message|line one\\x0aline two\\x0a\\x0afour|]");

	text = "data:no space\n\ndata:  two spaces\n\ndata\n\n";
	check_splits("one leading space is dropped; a bare field name has an empty value", text,
	             strlen(text), "[message|no space|][message| two spaces|][message||]");
}

static void test_line_ends(void)
{
	const char *text = "data: a\r\n\r\ndata: b\r\rdata: c\n\ndata: d\r\ndata: e\r\r\n";
	check_splits("CRLF, CR and LF, mixed", text, strlen(text),
	             "[message|a|][message|b|][message|c|][message|d\\x0ae|]");

	/* a CR at the end of one chunk and the LF at the start of the next
	 * make one line end, not two (which would dispatch early) */
	struct sse_parser p;
	sse_init(&p, 0);
	struct seen s = {MG_BUF_INIT(4096), 0, 0};
	mg_buf_puts(&s.log, "", NULL);
	sse_feed(&p, "data: x\r", 8, record, &s);
	sse_feed(&p, "\ndata: y\r", 9, record, &s);
	sse_feed(&p, "\n\r", 2, record, &s);
	sse_feed(&p, "\n", 1, record, &s);
	T_STR(mg_buf_str(&s.log), "[message|x\\x0ay|]",
	      "a CRLF split across feeds is one line end");
	sse_free(&p);
	mg_buf_free(&s.log);
}

static void test_fields(void)
{
	const char *text = ": a comment\n:\ndata: a\n: another\n\n";
	check_splits("comments are ignored", text, strlen(text), "[message|a|]");

	text = ": only a comment\n\n";
	check_splits("a block of comments dispatches nothing", text, strlen(text), "");

	text = "event: ping\ndata: 1\n\ndata: 2\n\n";
	check_splits("event names the type, for one event only", text, strlen(text),
	             "[ping|1|][message|2|]");

	text = "event\ndata: x\n\n";
	check_splits("an empty event name is message", text, strlen(text), "[message|x|]");

	text = "foo: bar\nDATA: no\ndata : no\ndata: yes\n\n";
	check_splits("unknown fields (and case or spaces in names) are ignored", text, strlen(text),
	             "[message|yes|]");

	text = "data: a:b: c\n\n";
	check_splits("only the first colon splits", text, strlen(text), "[message|a:b: c|]");

	text = "data: no end";
	check_splits("an event cut off at the end is not dispatched", text, strlen(text), "");

	text = "data: x\n";
	check_splits("nor one without its blank line", text, strlen(text), "");
}

static void test_ids_and_retry(void)
{
	char *id = NULL;
	long long retry = 0;
	const char *text = "id: 7\ndata: a\n\ndata: b\n\nid\ndata: c\n\n";
	char *log = parse_split(text, strlen(text), 0, 0, &id, &retry);
	T_STR(log, "[message|a|7][message|b|7][message|c|]",
	      "an id lasts until another; an empty one clears it");
	T_STR(id, "", "the last id is empty after id with no value");
	T_INT(retry, -1, "no retry field: -1");
	free(log);
	free(id);

	text = "id: e1\nretry: 500\ndata: \n\n";
	log = parse_split(text, strlen(text), 3, 0, &id, &retry);
	T_STR(log, "[message||e1]", "a priming event: an id and empty data");
	T_STR(id, "e1", "its id is the last id");
	T_INT(retry, 500, "retry sets the reconnection time");
	free(log);
	free(id);

	text = "id: 9\n\n";
	log = parse_split(text, strlen(text), 0, 0, &id, NULL);
	T_STR(log, "", "an event without data is not dispatched");
	T_STR(id, "9", "but its id becomes the last id");
	free(log);
	free(id);

	text = "data: x\nid: late\n";
	log = parse_split(text, strlen(text), 0, 0, &id, NULL);
	T_STR(id, "", "an id of an event that never ended is not the last id");
	free(log);
	free(id);

	static const char nul_id[] = "id: 1\n\nid: a\0b\ndata: x\n\n";
	log = parse_split(nul_id, sizeof(nul_id) - 1, 0, 0, &id, NULL);
	T_STR(log, "[message|x|1]", "an id holding NUL is ignored");
	free(log);
	free(id);

	struct mg_buf long_id = MG_BUF_INIT(1 << 20);
	mg_buf_puts(&long_id, "id: 2\n\nid: ", NULL);
	for (int i = 0; i < SSE_ID_MAX + 1; i++)
		mg_buf_putc(&long_id, 'z', NULL);
	mg_buf_puts(&long_id, "\ndata: x\n\n", NULL);
	log = parse_split(long_id.data, long_id.len, 0, 0, &id, NULL);
	T_STR(log, "[message|x|2]", "an id over SSE_ID_MAX is ignored");
	free(log);
	free(id);
	mg_buf_free(&long_id);

	text = "retry: 250\nretry: 5x\nretry: -1\nretry:\n\n";
	log = parse_split(text, strlen(text), 0, 0, NULL, &retry);
	T_INT(retry, 250, "a retry that is not only digits is ignored");
	free(log);
	text = "retry: 99999999999999999999999\n\n";
	log = parse_split(text, strlen(text), 0, 0, NULL, &retry);
	T_INT(retry, SSE_RETRY_MAX_MS, "a huge retry is capped");
	free(log);
}

static void test_bom(void)
{
	const char *text = "\xEF\xBB\xBF"
	                   "data: x\n\n";
	check_splits("a leading BOM is dropped", text, strlen(text), "[message|x|]");
	text = "\xEF\xBB\xBF"
	       "\xEF\xBB\xBF"
	       "data: x\n\n";
	check_splits("only one", text, strlen(text), "");
	text = "\xEF\xBB"
	       "data: y\n\n";
	check_splits("half a BOM is part of the line", text, strlen(text), "");
	text = "data: \xEF\xBB\xBF\n\n";
	check_splits("one later is data", text, strlen(text), "[message|\\xef\\xbb\\xbf|]");
}

static void test_cap(void)
{
	/* event_max 16: an event of 16 bytes passes, 17 does not */
	char *log = parse("data: 0123456789abcdef\n\n", 16);
	T_STR(log, "[message|0123456789abcdef|]", "an event of event_max bytes passes");
	free(log);
	log = parse("data: 0123456789abcdefg\n\ndata: next\n\n", 16);
	T_STR(log, "[too big][message|next|]",
	      "one byte more is too big, said once; the next event is read");
	free(log);
	log = parse("data: 01234567\ndata: 01234567\ndata: x\n\ndata: ok\n\n", 16);
	T_STR(log, "[too big][message|ok|]", "data lines that add up past the cap are too big");
	free(log);
	log = parse("event: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123"
	            "456789abcdef\ndata: x\n\ndata: y\n\n",
	            16);
	T_STR(log, "[too big][message|y|]", "an overlong line of any field is too big");
	free(log);

	/* an endless line in small pieces: memory stays bounded */
	struct sse_parser p;
	sse_init(&p, 1024);
	struct seen s = {MG_BUF_INIT(4096), 0, 0};
	mg_buf_puts(&s.log, "", NULL);
	sse_feed(&p, "data: ", 6, record, &s);
	char chunk[4096];
	memset(chunk, 'a', sizeof(chunk));
	for (int i = 0; i < 1024; i++)
		sse_feed(&p, chunk, sizeof(chunk), record, &s);
	T_OK(p.line.cap <= 1024 + 128 && p.data.cap <= 1024 + 2,
	     "4 MiB in one line keeps the buffers under the cap (line %zu, data %zu)", p.line.cap,
	     p.data.cap);
	sse_feed(&p, "\n\ndata: after\n\n", 15, record, &s);
	T_STR(mg_buf_str(&s.log), "[too big][message|after|]",
	      "reported once, and the stream goes on after its blank line");
	sse_free(&p);
	mg_buf_free(&s.log);
}

static void test_stop_and_reconnect(void)
{
	struct sse_parser p;
	sse_init(&p, 0);
	struct seen s = {MG_BUF_INIT(4096), 1, 0};
	mg_buf_puts(&s.log, "", NULL);
	const char *text = "data: 1\n\ndata: 2\n\n";
	T_INT(sse_feed(&p, text, strlen(text), record, &s), -1,
	      "a negative return of the callback is returned");
	T_STR(mg_buf_str(&s.log), "[message|1|]", "and nothing after it is dispatched");
	sse_free(&p);
	mg_buf_free(&s.log);

	sse_init(&p, 0);
	struct seen r = {MG_BUF_INIT(4096), 0, 0};
	mg_buf_puts(&r.log, "", NULL);
	text = "retry: 300\nid: e5\ndata: a\n\nid: e6\ndata: half";
	sse_feed(&p, text, strlen(text), record, &r);
	sse_reconnect(&p);
	text = "data: b\n\n";
	sse_feed(&p, text, strlen(text), record, &r);
	size_t n;
	const char *id = sse_last_id(&p, &n);
	T_STR(mg_buf_str(&r.log), "[message|a|e5][message|b|e5]",
	      "a reconnection drops the half event and its id");
	T_OK(n == 2 && memcmp(id, "e5", 2) == 0 && sse_retry_ms(&p) == 300,
	     "and keeps the last id and the retry time");
	sse_free(&p);
	mg_buf_free(&r.log);
}

static int count_only(const struct sse_event *ev, void *data)
{
	(void)ev;
	(*(int *)data)++;
	return 0;
}

static void test_garbage(void)
{
	/* random bytes, NULs and line ends in every split: no crash, bounded */
	unsigned state = 12345;
	char buf[8192];
	int events = 0;
	for (int round = 0; round < 64; round++) {
		struct sse_parser p;
		sse_init(&p, 256);
		for (size_t i = 0; i < sizeof(buf); i++) {
			state = state * 1103515245u + 12345u;
			unsigned v = (state >> 16) & 0xff;
			static const char some[] = "data:id\n\r: \x00\xEF";
			buf[i] = v < 128 ? some[v % (sizeof(some) - 1)] : (char)v;
		}
		for (size_t off = 0; off < sizeof(buf);) {
			state = state * 1103515245u + 12345u;
			size_t n = 1 + (state >> 16) % 97;
			if (n > sizeof(buf) - off)
				n = sizeof(buf) - off;
			sse_feed(&p, buf + off, n, count_only, &events);
			off += n;
		}
		if (p.line.cap > 256 + 128 || p.data.cap > 256 + 2) {
			T_OK(0, "garbage round %d went past the cap", round);
			sse_free(&p);
			return;
		}
		sse_free(&p);
	}
	T_OK(1, "64 rounds of 8 KiB of garbage: no crash, buffers bounded (%d events)", events);
}

/* ---- 2026-07-28's headers ---------------------------------------------- */

static void value_is(const char *in, size_t len, const char *want, const char *why)
{
	char *got = remote_header_value(in, len);
	T_STR(got, want, "header value of %s", why);
	free(got);
}

static void test_header_values(void)
{
	/* the spec's own table (basic/transports, "Value Encoding") */
	value_is("us-west1", 8, "us-west1", "plain ASCII, as it is");
	value_is("Hello, \xe4\xb8\x96\xe7\x95\x8c", 13,
	         "=?base64?SGVsbG8sIOS4lueVjA==?=", "non-ASCII, in base64 of its UTF-8");
	value_is(" padded ", 8, "=?base64?IHBhZGRlZCA=?=", "leading and trailing spaces");
	value_is("line1\nline2", 11, "=?base64?bGluZTEKbGluZTI=?=", "a line feed");
	value_is("=?base64?literal?=", 18,
	         "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=", "a value that looks like the sentinel");
	value_is("us west 1", 9, "us west 1", "inner spaces, as they are");
	value_is("", 0, "", "the empty string, as it is");
	value_is(" x", 2, "=?base64?IHg=?=", "a leading space alone");
	value_is("x ", 2, "=?base64?eCA=?=", "a trailing space alone");
	value_is("\tx", 2, "=?base64?CXg=?=", "a tab");
	value_is("a\r\nb", 4, "=?base64?YQ0KYg==?=", "CR LF");
	value_is("a\x7f", 2, "=?base64?YX8=?=", "DEL");
	value_is("a\0b", 3, "=?base64?YQBi?=", "a NUL byte");
	value_is("=?base64?", 9, "=?base64?", "the prefix alone is not the sentinel");
	value_is("=?base64?x?", 11, "=?base64?x?", "nor is a value without the suffix");
}

static struct json_value *parse_json(const char *text)
{
	struct json_value *v = NULL;
	struct mg_err *err = NULL;
	if (json_parse(text, strlen(text), NULL, &v, &err) < 0) {
		fprintf(stderr, "bad test JSON: %s\n", mg_err_msg(err));
		abort();
	}
	return v;
}

/* The tool's params as "Header=a.b:type,..." or "refused: why" */
static char *params_of(const char *tool_json)
{
	struct json_value *tool = parse_json(tool_json);
	struct remote_tool_params *p = NULL;
	char *why = NULL;
	struct mg_buf out = MG_BUF_INIT(4096);
	if (remote_tool_params(tool, &p, &why) < 0) {
		mg_buf_printf(&out, NULL, "refused: %s", why);
	} else {
		static const char *const types[] = {"string", "integer", "boolean"};
		for (size_t i = 0; i < p->n; i++) {
			mg_buf_printf(&out, NULL, "%s%s=", i > 0 ? "," : "", p->params[i].header);
			for (size_t k = 0; k < p->params[i].path.n; k++)
				mg_buf_printf(&out, NULL, "%s%s", k > 0 ? "." : "",
				              p->params[i].path.v[k]);
			mg_buf_printf(&out, NULL, ":%s", types[p->params[i].type]);
		}
	}
	free(why);
	remote_tool_params_free(p);
	json_free(tool);
	return mg_buf_steal(&out, NULL);
}

static void params_are(const char *schema, const char *want, const char *why)
{
	char *tool = xasprintf("{\"name\":\"t\",\"inputSchema\":%s}", schema);
	char *got = params_of(tool);
	T_STR(got, want, "x-mcp-header: %s", why);
	free(got);
	free(tool);
}

static void refused(const char *schema, const char *part, const char *why)
{
	char *tool = xasprintf("{\"name\":\"t\",\"inputSchema\":%s}", schema);
	char *got = params_of(tool);
	T_OK(strncmp(got, "refused: ", 9) == 0 && strstr(got, part) != NULL,
	     "x-mcp-header refused: %s (%s)", why, got);
	free(got);
	free(tool);
}

#define PROP(type, name) "{\"type\":\"" type "\",\"x-mcp-header\":\"" name "\"}"

static void test_tool_params(void)
{
	params_are("{\"type\":\"object\"}", "", "a schema without any");
	params_are("{\"type\":\"object\",\"properties\":{\"region\":" PROP(
	               "string", "Region") ",\"q\":{\"type\":\"string\"}}}",
	           "Region=region:string", "one string parameter");
	params_are(
	    "{\"type\":\"object\",\"properties\":{\"n\":" PROP("integer", "N") ",\"b\":" PROP(
	        "boolean",
	        "B") ",\"o\":{\"type\":\"object\",\"properties\":{\"deep\":" PROP("string",
	                                                                          "Deep") "}}}}",
	    "N=n:integer,B=b:boolean,Deep=o.deep:string",
	    "integer, boolean, and a nested property through properties alone");
	params_are("{\"properties\":{\"a\":" PROP("string", "!#$%&'*+-.^_`|~09azAZ") "}}",
	           "!#$%&'*+-.^_`|~09azAZ=a:string", "every token character");
	params_are("{\"properties\":{\"a\":{\"type\":\"string\",\"default\":{\"x-mcp-header\":"
	           "\"X\"}}}}",
	           "", "a key of that name inside a default is data, not an annotation");
	refused("{\"properties\":{\"v\":" PROP("string", "") "}}", "is empty", "an empty name");
	refused("{\"properties\":{\"v\":" PROP("string", "My Region") "}}", "not a header name",
	        "a space");
	refused("{\"properties\":{\"v\":" PROP("string", "Region:Primary") "}}",
	        "not a header name", "a colon");
	refused("{\"properties\":{\"v\":" PROP("string", "R\u00e9gion") "}}", "R\\xc3\\xa9gion",
	        "a non-ASCII name, shown escaped");
	refused("{\"properties\":{\"v\":" PROP("string", "Region\\t1") "}}", "not a header name",
	        "a control character");
	refused("{\"properties\":{\"v\":{\"type\":\"string\",\"x-mcp-header\":7}}}",
	        "is not a string", "a name that is not a string");
	refused("{\"properties\":{\"a\":" PROP("string", "Region") ",\"b\":" PROP("string",
	                                                                          "Region") "}}",
	        "repeats that of property a", "the same name twice");
	refused("{\"properties\":{\"a\":" PROP("string", "MyField") ",\"b\":" PROP("string",
	                                                                           "myfield") "}}",
	        "without case", "names that differ in case only");
	refused("{\"properties\":{\"d\":" PROP("object", "Data") "}}", "\"object\", not string",
	        "an object parameter");
	refused("{\"properties\":{\"d\":" PROP("array", "Items") "}}", "\"array\"",
	        "an array parameter");
	refused("{\"properties\":{\"d\":" PROP("null", "Nil") "}}", "\"null\"", "a null parameter");
	refused("{\"properties\":{\"d\":" PROP("number", "Score") "}}", "\"number\"",
	        "a number parameter");
	refused("{\"properties\":{\"d\":{\"x-mcp-header\":\"D\"}}}", "not given",
	        "a parameter of no type");
	refused("{\"properties\":{\"d\":{\"type\":[\"string\",\"null\"],\"x-mcp-header\":\"D\"}}}",
	        "not one type name", "a parameter of two types");
	refused("{\"type\":\"string\",\"x-mcp-header\":\"Root\"}", "root", "on the root");
	refused("{\"properties\":{\"l\":{\"type\":\"array\",\"items\":" PROP("string", "I") "}}}",
	        "not reached through properties alone", "under items");
	refused("{\"$defs\":{\"x\":" PROP("string", "X") "},\"properties\":{\"a\":{\"$ref\":"
	                                                 "\"#/$defs/x\"}}}",
	        "not reached through properties alone", "under $defs");
	refused("{\"properties\":{\"a\":{\"oneOf\":[" PROP("string", "A") "]}}}",
	        "not reached through properties alone", "under oneOf");
	refused("{\"if\":{\"properties\":{\"a\":" PROP("string", "A") "}}}",
	        "not reached through properties alone", "under if");
	char name[REMOTE_PARAM_NAME_MAX + 2];
	memset(name, 'a', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	char *schema = xasprintf("{\"properties\":{\"a\":" PROP("string", "%s") "}}", name);
	refused(schema, "over 128 characters", "a name over the limit");
	free(schema);
	name[REMOTE_PARAM_NAME_MAX] = '\0';
	schema = xasprintf("{\"properties\":{\"a\":" PROP("string", "%s") "}}", name);
	char *tool = xasprintf("{\"name\":\"t\",\"inputSchema\":%s}", schema);
	char *got = params_of(tool);
	T_OK(strncmp(got, "refused", 7) != 0, "x-mcp-header: a name of exactly the limit is taken");
	free(got);
	free(tool);
	free(schema);
	struct mg_buf many = MG_BUF_INIT(1 << 20);
	mg_buf_puts(&many, "{\"properties\":{", NULL);
	for (int i = 0; i <= REMOTE_PARAMS_MAX; i++)
		mg_buf_printf(&many, NULL, "%s\"p%d\":" PROP("string", "P%d"), i > 0 ? "," : "", i,
		              i);
	mg_buf_puts(&many, "}}", NULL);
	refused(mg_buf_str(&many), "more than 64", "more parameters than the limit");
	mg_buf_free(&many);
}

/* The Mcp-Param lines for arguments, joined by "|", or "refused: why" */
static void lines_are(const char *schema, const char *args, const char *want, const char *why)
{
	char *tool_text = xasprintf("{\"name\":\"t\",\"inputSchema\":%s}", schema);
	struct json_value *tool = parse_json(tool_text);
	struct json_value *arguments = args != NULL ? parse_json(args) : NULL;
	struct remote_tool_params *p = NULL;
	char *perr = NULL, *cerr = NULL;
	struct strv lines = STRV_INIT;
	struct mg_buf out = MG_BUF_INIT(1 << 16);
	if (remote_tool_params(tool, &p, &perr) < 0) {
		mg_buf_printf(&out, NULL, "bad tool: %s", perr);
	} else if (remote_param_headers(p, arguments, &lines, &cerr) < 0) {
		mg_buf_printf(&out, NULL, "refused: %s", cerr);
	} else {
		for (size_t i = 0; i < lines.n; i++)
			mg_buf_printf(&out, NULL, "%s%s", i > 0 ? "|" : "", lines.v[i]);
	}
	T_STR(mg_buf_str(&out), want, "Mcp-Param lines: %s", why);
	mg_buf_free(&out);
	strv_free(&lines);
	free(perr);
	free(cerr);
	remote_tool_params_free(p);
	json_free(arguments);
	json_free(tool);
	free(tool_text);
}

static void test_param_headers(void)
{
	const char *schema =
	    "{\"properties\":{\"region\":" PROP("string", "Region") ",\"priority\":" PROP(
	        "integer", "Priority") ",\"verbose\":" PROP("boolean",
	                                                    "Verbose") ",\"o\":"
	                                                               "{\"properties\":{"
	                                                               "\"deep\":" PROP(
	                                                                   "string",
	                                                                   "Deep") "}}"
	                                                                           ",\"q\":{"
	                                                                           "\"type\":"
	                                                                           "\"string\"}}}";
	lines_are(schema,
	          "{\"region\":\"us-west1\",\"priority\":42,\"verbose\":false,\"q\":\"x\","
	          "\"o\":{\"deep\":\"d\"}}",
	          "Mcp-Param-Region: us-west1|Mcp-Param-Priority: 42|Mcp-Param-Verbose: "
	          "false|Mcp-Param-Deep: d",
	          "each annotated value, in schema order; the others not");
	lines_are(schema, "{\"region\":\"Hello, \u4e16\u754c\",\"priority\":-7,\"verbose\":true}",
	          "Mcp-Param-Region: =?base64?SGVsbG8sIOS4lueVjA==?=|Mcp-Param-Priority: "
	          "-7|Mcp-Param-Verbose: true",
	          "encoded as the value needs");
	lines_are(schema, "{\"region\":null,\"q\":\"x\"}", "", "null and absent values: none");
	lines_are(schema, NULL, "", "no arguments: none");
	lines_are(schema, "{\"region\":\"\"}", "Mcp-Param-Region;", "an empty string, curl's way");
	lines_are(schema, "{\"o\":\"not an object\"}", "", "a path through a non-object: absent");
	lines_are(schema, "{\"priority\":9007199254740991}", "Mcp-Param-Priority: 9007199254740991",
	          "the largest safe integer");
	lines_are(schema, "{\"priority\":-9007199254740991}",
	          "Mcp-Param-Priority: -9007199254740991", "the smallest safe integer");
	lines_are(schema, "{\"priority\":9007199254740992}",
	          "refused: argument priority goes in header Mcp-Param-Priority, so it must be an "
	          "integer from -(2^53-1) to 2^53-1 as the tool's inputSchema says",
	          "past the safe range");
	lines_are(schema, "{\"priority\":42.000}", "Mcp-Param-Priority: 42",
	          "an integer with a fraction of zeros, as JSON Schema counts it");
	lines_are(schema, "{\"priority\":-0.0}", "Mcp-Param-Priority: 0", "minus zero");
	lines_are(schema, "{\"priority\":4.2e1}",
	          "refused: argument priority goes in header Mcp-Param-Priority, so it must be an "
	          "integer from -(2^53-1) to 2^53-1 as the tool's inputSchema says",
	          "an exponent is not taken");
	lines_are(schema, "{\"priority\":3.5}",
	          "refused: argument priority goes in header Mcp-Param-Priority, so it must be an "
	          "integer from -(2^53-1) to 2^53-1 as the tool's inputSchema says",
	          "a fraction for an integer");
	lines_are(
	    schema, "{\"region\":5}",
	    "refused: argument region goes in header Mcp-Param-Region, so it must be a string "
	    "as the tool's inputSchema says",
	    "a number for a string");
	lines_are(
	    schema, "{\"verbose\":\"yes\"}",
	    "refused: argument verbose goes in header Mcp-Param-Verbose, so it must be true or "
	    "false as the tool's inputSchema says",
	    "a string for a boolean");
	char *at_max = xmalloc(REMOTE_PARAM_VALUE_MAX + 32);
	char *args = xmalloc(REMOTE_PARAM_VALUE_MAX + 64);
	memset(at_max, 'v', REMOTE_PARAM_VALUE_MAX);
	at_max[REMOTE_PARAM_VALUE_MAX] = '\0';
	snprintf(args, REMOTE_PARAM_VALUE_MAX + 64, "{\"region\":\"%s\"}", at_max);
	char *want = xasprintf("Mcp-Param-Region: %s", at_max);
	lines_are(schema, args, want, "a value of exactly the limit");
	free(want);
	/* 3073 spaces are 4100 bytes of base64, 4111 with the sentinel: over */
	memset(at_max, ' ', 3073);
	at_max[3073] = '\0';
	snprintf(args, REMOTE_PARAM_VALUE_MAX + 64, "{\"region\":\"%s\"}", at_max);
	lines_are(schema, args,
	          "refused: argument region goes in header Mcp-Param-Region, and as a header it is "
	          "4111 bytes, over the 4096 mcpgate sends",
	          "a value over the limit once encoded");
	free(args);
	free(at_max);
	lines_are(
	    schema, "{\"o\":{\"deep\":[1]}}",
	    "refused: argument o.deep goes in header Mcp-Param-Deep, so it must be a string as "
	    "the tool's inputSchema says",
	    "the nested one names its whole path");
}

int main(void)
{
	test_header_values();
	test_tool_params();
	test_param_headers();
	test_basics();
	test_line_ends();
	test_fields();
	test_ids_and_retry();
	test_bom();
	test_cap();
	test_stop_and_reconnect();
	test_garbage();
	return t_done();
}
