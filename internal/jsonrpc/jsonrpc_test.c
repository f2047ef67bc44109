/* Tests of internal/jsonrpc: framing, messages, and a peer over real pipes. */
#define _GNU_SOURCE /* pipe2, F_SETPIPE_SZ */
#include "internal/jsonrpc/jsonrpc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal/base/log.h"
#include "internal/base/testing.h"
#include "internal/base/xalloc.h"
#include "internal/proc/loop.h"

/* ---- helpers ---------------------------------------------------------------- */

/* What the callbacks saw, one event a line, compared as a whole. */
static struct mg_buf events = MG_BUF_INIT(16 << 20);

static void ev(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void ev(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (mg_buf_vprintf(&events, NULL, fmt, ap) < 0 || mg_buf_putc(&events, '\n', NULL) < 0)
		abort();
	va_end(ap);
}

/* The events so far, as a string the caller frees; the log starts again. */
static char *take_events(void)
{
	return mg_buf_steal(&events, NULL);
}

static bool check_events(const char *want, const char *what)
{
	char *got = take_events();
	bool ok = T_STR(got, want, "%s", what);
	free(got);
	return ok;
}

static char *json_text(const struct json_value *v)
{
	if (v == NULL)
		return xstrdup("-");
	struct mg_buf b = MG_BUF_INIT(1 << 20);
	if (json_generate(v, &b, NULL) < 0)
		abort();
	return mg_buf_steal(&b, NULL);
}

static struct json_value *parse_json(const char *s)
{
	struct json_value *v = NULL;
	if (json_parse(s, strlen(s), NULL, &v, NULL) < 0)
		abort();
	return v;
}

static bool has(const char *hay, const char *needle)
{
	return hay != NULL && strstr(hay, needle) != NULL;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (d == NULL)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory's own fd */
}

static void write_all(int fd, const char *s, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			abort();
		s += w;
		n -= (size_t)w;
	}
}

static void write_str(int fd, const char *s)
{
	write_all(fd, s, strlen(s));
}

/* Everything readable now from a non-blocking fd. */
static char *drain(int fd)
{
	struct mg_buf b = MG_BUF_INIT(256 << 20);
	char chunk[65536];
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (mg_buf_append(&b, chunk, (size_t)n, NULL) < 0)
			abort();
	}
	return mg_buf_steal(&b, NULL);
}

/* Both directions of a connection: the peer reads peer_in and writes
 * peer_out; the test plays the other side on srv_out and srv_in. */
struct conn {
	int peer_in, peer_out;
	int srv_out, srv_in;
};

static void conn_open(struct conn *c, bool srv_nonblock)
{
	int a[2], b[2];
	if (pipe2(a, O_CLOEXEC) < 0 || pipe2(b, O_CLOEXEC) < 0)
		abort();
	c->peer_in = a[0];
	c->srv_out = a[1];
	c->srv_in = b[0];
	c->peer_out = b[1];
	if (srv_nonblock && fcntl(c->srv_in, F_SETFL, O_NONBLOCK) < 0)
		abort();
}

static void conn_close_srv(struct conn *c)
{
	if (c->srv_out >= 0)
		close(c->srv_out);
	if (c->srv_in >= 0)
		close(c->srv_in);
	c->srv_out = c->srv_in = -1;
}

/* ---- callbacks that record ---------------------------------------------------- */

static void noop_fd(struct loop *loop, int fd, uint32_t ready, void *data)
{
	(void)loop;
	(void)fd;
	(void)ready;
	(void)data;
}

static char *id_text(const struct json_value *id)
{
	return id != NULL ? json_text(id) : xstrdup("none");
}

static void rec_done(struct rpc_peer *p, struct rpc_msg *reply, const struct mg_err *why,
                     void *data)
{
	(void)p;
	const char *label = data;
	if (reply == NULL) {
		ev("%s failed: %s", label, mg_err_msg(why));
		return;
	}
	char *id = id_text(reply->id);
	if (reply->kind == RPC_RESULT) {
		char *r = json_text(reply->result);
		ev("%s id=%s result=%s", label, id, r);
		free(r);
	} else {
		ev("%s id=%s error=%" PRId64 " %.*s", label, id, reply->error_code,
		   (int)reply->error_message_len, reply->error_message);
	}
	free(id);
}

/* keeps the reply past the callback */
static struct rpc_msg kept;
static void keep_done(struct rpc_peer *p, struct rpc_msg *reply, const struct mg_err *why,
                      void *data)
{
	(void)p;
	(void)why;
	(void)data;
	if (reply != NULL)
		rpc_msg_move(&kept, reply);
	ev("kept");
}

static void rec_request(struct rpc_peer *p, struct rpc_msg *msg, void *data)
{
	(void)data;
	char *id = id_text(msg->id);
	char *params = json_text(msg->params);
	ev("request %s id=%s params=%s", msg->method, id, params);
	free(id);
	free(params);
	if (strcmp(msg->method, "ping") == 0) {
		struct mg_err *err = NULL;
		if (rpc_peer_send_result(p, msg->id, NULL, &err) < 0)
			ev("ping answer failed: %s", mg_err_msg(err));
		mg_err_free(err);
	}
}

static void rec_notification(struct rpc_peer *p, struct rpc_msg *msg, void *data)
{
	(void)p;
	(void)data;
	ev("notification %s", msg->method);
}

static void rec_response(struct rpc_peer *p, struct rpc_msg *msg, void *data)
{
	(void)p;
	(void)data;
	char *id = id_text(msg->id);
	ev("unmatched id=%s", id);
	free(id);
}

static void rec_bad(struct rpc_peer *p, const struct rpc_bad_line *bad, void *data)
{
	(void)p;
	(void)data;
	char *id = id_text(bad->id);
	ev("bad code=%" PRId64 " overflow=%d len=%zu id=%s: %s", bad->code, bad->overflow, bad->len,
	   id, bad->reason);
	free(id);
}

static void rec_closed(struct rpc_peer *p, const struct mg_err *why, void *data)
{
	(void)p;
	(void)data;
	ev("closed: %s", why != NULL ? mg_err_msg(why) : "end of input");
}

static struct rpc_peer_config rec_config(void)
{
	struct rpc_peer_config cfg = {
	    .name = "server test",
	    .on_request = rec_request,
	    .on_notification = rec_notification,
	    .on_response = rec_response,
	    .on_bad_line = rec_bad,
	    .on_closed = rec_closed,
	};
	return cfg;
}

static struct rpc_peer *peer_open(struct conn *c, const struct rpc_peer_config *cfg)
{
	struct rpc_peer *p = NULL;
	struct mg_err *err = NULL;
	if (rpc_peer_new(c->peer_in, c->peer_out, cfg, &p, &err) < 0) {
		printf("Bail out! rpc_peer_new: %s\n", mg_err_msg(err));
		exit(1);
	}
	return p;
}

/* ---- framing -------------------------------------------------------------------- */

/* All lines the reader gives now, each followed by "|"; overflows as "!N|". */
static void take_lines(struct rpc_reader *r, struct mg_buf *out)
{
	const char *line;
	size_t len;
	int k;
	while ((k = rpc_reader_next(r, &line, &len)) != 0) {
		if (k == RPC_OVERFLOW) {
			mg_buf_printf(out, NULL, "!%zu|", rpc_reader_overflow_bytes(r));
			continue;
		}
		if (line[len] != '\0')
			mg_buf_puts(out, "(not terminated)", NULL);
		mg_buf_append(out, line, len, NULL);
		mg_buf_putc(out, '|', NULL);
	}
}

static char *frame_bytewise(size_t line_max, const char *in)
{
	struct rpc_reader r;
	rpc_reader_init(&r, line_max);
	struct mg_buf out = MG_BUF_INIT(1 << 20);
	for (const char *c = in; *c != '\0'; c++) {
		rpc_reader_feed(&r, c, 1);
		take_lines(&r, &out);
	}
	rpc_reader_free(&r);
	return mg_buf_steal(&out, NULL);
}

static char *frame_whole(size_t line_max, const char *in)
{
	struct rpc_reader r;
	rpc_reader_init(&r, line_max);
	struct mg_buf out = MG_BUF_INIT(1 << 20);
	rpc_reader_feed(&r, in, strlen(in));
	take_lines(&r, &out);
	rpc_reader_free(&r);
	return mg_buf_steal(&out, NULL);
}

static void frame_case(size_t line_max, const char *in, const char *want, const char *what)
{
	char *got = frame_whole(line_max, in);
	T_STR(got, want, "framing, one feed: %s", what);
	free(got);
	got = frame_bytewise(line_max, in);
	T_STR(got, want, "framing, byte by byte: %s", what);
	free(got);
}

static void test_framing(void)
{
	frame_case(0, "{\"a\":1}\nsecond line\r\nthird\n", "{\"a\":1}|second line|third|",
	           "lines, LF and CRLF");
	frame_case(0, "\n\n\r\n\r\n", "", "empty lines are skipped");
	frame_case(0, "a\r\r\nb\rc\n", "a\r|b\rc|", "only one \\r is stripped, inner \\r stays");
	frame_case(0, "tail without newline", "", "an incomplete line waits");
	frame_case(16, "0123456789abcdef\n", "0123456789abcdef|", "a line exactly at the cap");
	frame_case(16, "0123456789abcdef\r\n", "0123456789abcdef|", "at the cap, with CRLF");
	frame_case(16, "0123456789abcdefg\nnext\n", "!17|next|", "one byte over: one overflow");
	frame_case(16, "0123456789abcdef\rX\nok\n", "!18|ok|", "a \\r not before \\n counts");
	/* an overflow is reported when it is known: with the whole line at
	 * hand its length, else as soon as one byte too many has come */
	char *got = frame_whole(4, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\nb\nccccccc\nd\n");
	T_STR(got, "!31|b|!7|d|", "framing, one feed: several overflows");
	free(got);
	got = frame_bytewise(4, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\nb\nccccccc\nd\n");
	T_STR(got, "!5|b|!5|d|", "framing, byte by byte: several overflows, each once");
	free(got);
	got = frame_bytewise(4, "abcd\r");
	T_STR(got, "", "framing, byte by byte: a \\r after a full line may still end it");
	free(got);

	/* many lines in one feed come out in order without copying per line */
	struct rpc_reader r;
	rpc_reader_init(&r, 0);
	struct mg_buf in = MG_BUF_INIT(64 << 20);
	for (int i = 0; i < 200000; i++)
		mg_buf_printf(&in, NULL, "line %d\n", i);
	rpc_reader_feed(&r, NULL, 0);
	rpc_reader_feed(&r, in.data, in.len);
	int n = 0, in_order = 1;
	const char *line;
	size_t len;
	int k;
	while ((k = rpc_reader_next(&r, &line, &len)) == 1) {
		char want[32];
		int w = snprintf(want, sizeof(want), "line %d", n);
		in_order &= (size_t)w == len && memcmp(line, want, len) == 0;
		n++;
	}
	T_INT(k, 0, "many lines: no error at the end");
	T_INT(n, 200000, "many lines in one feed: all of them");
	T_OK(in_order, "many lines in one feed: in order");
	T_OK(rpc_reader_capacity(&r) <= in.len + 4096, "many lines: the buffer holds the feed");
	mg_buf_free(&in);
	rpc_reader_free(&r);
}

/* 100 MB of one endless line in 64 KiB chunks against the default cap. */
static void test_framing_bounded(void)
{
	const size_t chunk = 64 << 10;
	char *x = xmalloc(chunk);
	memset(x, 'x', chunk);
	for (int drained = 1; drained >= 0; drained--) {
		struct rpc_reader r;
		rpc_reader_init(&r, 0);
		size_t max_cap = 0;
		int overflows = 0, lines = 0;
		for (size_t fed = 0; fed < (size_t)100 << 20; fed += chunk) {
			rpc_reader_feed(&r, x, chunk);
			if (rpc_reader_capacity(&r) > max_cap)
				max_cap = rpc_reader_capacity(&r);
			if (!drained)
				continue;
			const char *line;
			size_t len;
			int k;
			while ((k = rpc_reader_next(&r, &line, &len)) != 0) {
				overflows += k == RPC_OVERFLOW;
				lines += k == 1;
			}
		}
		rpc_reader_feed(&r, "\r\n{\"ok\":1}\n", 11);
		const char *line = NULL;
		size_t len = 0;
		int k;
		while ((k = rpc_reader_next(&r, &line, &len)) == RPC_OVERFLOW)
			overflows++;
		const char *how = drained ? "taking lines after each feed" : "feeding only";
		T_OK(max_cap <= RPC_LINE_MAX_DEFAULT + chunk + 2,
		     "100 MB endless line, %s: buffer stays within cap + chunk (max %zu)", how,
		     max_cap);
		T_INT(overflows, 1, "100 MB endless line, %s: one overflow", how);
		T_INT(lines, 0, "100 MB endless line, %s: no line before its end", how);
		T_OK(k == 1 && len == 8 && memcmp(line, "{\"ok\":1}", 8) == 0,
		     "100 MB endless line, %s: the next line is read fine", how);
		T_INT((long long)rpc_reader_capacity(&r), 4096,
		      "100 MB endless line, %s: the big buffer was given back", how);
		rpc_reader_free(&r);
	}
	free(x);
}

static void test_reader_fd(void)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0)
		abort();
	struct rpc_reader r;
	rpc_reader_init(&r, 0);
	struct mg_err *err = NULL;
	T_INT(rpc_reader_read_fd(&r, fds[0], &err), RPC_AGAIN, "read_fd: nothing yet is RPC_AGAIN");
	T_OK(err == NULL, "read_fd: RPC_AGAIN leaves err alone");
	write_str(fds[1], "one\ntw");
	T_INT(rpc_reader_read_fd(&r, fds[0], &err), 6, "read_fd: returns the bytes read");
	struct mg_buf out = MG_BUF_INIT(1024);
	take_lines(&r, &out);
	T_STR(mg_buf_str(&out), "one|", "read_fd: the complete line");
	write_str(fds[1], "o\n");
	rpc_reader_read_fd(&r, fds[0], &err);
	take_lines(&r, &out);
	T_STR(mg_buf_str(&out), "one|two|", "read_fd: a line across reads");
	write_str(fds[1], "part");
	close(fds[1]);
	T_INT(rpc_reader_read_fd(&r, fds[0], &err), 4, "read_fd: the last bytes");
	T_INT(rpc_reader_read_fd(&r, fds[0], &err), 0, "read_fd: 0 at end of file");
	T_INT((long long)rpc_reader_buffered(&r), 4, "read_fd: an incomplete last line stays");
	close(fds[0]);
	T_INT(rpc_reader_read_fd(&r, fds[0], &err), -1, "read_fd: a closed fd is an error");
	T_OK(has(mg_err_msg(err), "Bad file descriptor"), "read_fd: the error says why: %s",
	     mg_err_msg(err));
	mg_err_free(err);
	mg_buf_free(&out);
	rpc_reader_free(&r);
}

/* ---- messages --------------------------------------------------------------------- */

static void parse_ok(const char *line, enum rpc_kind kind, const char *summary)
{
	struct rpc_msg m;
	struct mg_err *err = NULL;
	int r = rpc_parse(line, strlen(line), 0, &m, &err);
	T_OK(r == 0 && m.kind == kind, "parse %s: kind %d (%s)", line, (int)m.kind,
	     mg_err_msg(err));
	char *id = id_text(m.id), *params = json_text(m.params), *result = json_text(m.result),
	     *data = json_text(m.error_data);
	char *got = xasprintf("method=%s id=%s params=%s result=%s error=%" PRId64 "/%s/%s",
	                      m.method != NULL ? m.method : "-", id, params, result, m.error_code,
	                      m.error_message != NULL ? m.error_message : "-", data);
	T_STR(got, summary, "parse %s: members", line);
	free(got);
	free(id);
	free(params);
	free(result);
	free(data);
	mg_err_free(err);
	rpc_msg_free(&m);
}

static void parse_bad(const char *line, const char *want_msg, bool want_root, const char *want_id)
{
	struct rpc_msg m;
	struct mg_err *err = NULL;
	int r = rpc_parse(line, strlen(line), 4, &m, &err);
	T_OK(r < 0 && has(mg_err_msg(err), want_msg), "refuse %s: \"%s\"", line, mg_err_msg(err));
	T_OK(m.kind == RPC_INVALID && (m.root != NULL) == want_root, "refuse %s: root kept: %d",
	     line, m.root != NULL);
	char *id = id_text(m.id);
	T_STR(id, want_id, "refuse %s: the usable id", line);
	free(id);
	mg_err_free(err);
	rpc_msg_free(&m);
}

static void test_parse(void)
{
	parse_ok("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{}}",
	         RPC_REQUEST, "method=tools/list id=1 params={} result=- error=0/-/-");
	parse_ok("{\"method\":\"a\",\"params\":[1],\"id\":\"x-1\",\"jsonrpc\":\"2.0\"}",
	         RPC_REQUEST, "method=a id=\"x-1\" params=[1] result=- error=0/-/-");
	parse_ok("{\"jsonrpc\":\"2.0\",\"id\":-9223372036854775808,\"method\":\"m\"}", RPC_REQUEST,
	         "method=m id=-9223372036854775808 params=- result=- error=0/-/-");
	parse_ok("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", RPC_NOTIFICATION,
	         "method=notifications/initialized id=none params=- result=- error=0/-/-");
	parse_ok("{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"x\":[true,null]}}", RPC_RESULT,
	         "method=- id=2 params=- result={\"x\":[true,null]} error=0/-/-");
	parse_ok("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":null}", RPC_RESULT,
	         "method=- id=3 params=- result=null error=0/-/-");
	parse_ok("{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":-32601,\"message\":\"nope\","
	         "\"data\":[1]}}",
	         RPC_ERROR, "method=- id=3 params=- result=- error=-32601/nope/[1]");
	parse_ok(
	    "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"bad\"}}",
	    RPC_ERROR, "method=- id=null params=- result=- error=-32700/bad/-");
	/* a key with a NUL inside is not "id": this is a notification */
	parse_ok("{\"jsonrpc\":\"2.0\",\"id\\u0000\":1,\"method\":\"m\"}", RPC_NOTIFICATION,
	         "method=m id=none params=- result=- error=0/-/-");

	parse_bad("[{\"jsonrpc\":\"2.0\",\"method\":\"a\"}]", "batches are not supported", true,
	          "none");
	parse_bad("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"a\"}", "\"jsonrpc\" must be \"2.0\"",
	          true, "1");
	parse_bad("{\"jsonrpc\":2.0,\"method\":\"a\"}", "\"jsonrpc\" must be \"2.0\"", true,
	          "none");
	parse_bad("{\"id\":1,\"method\":\"a\"}", "missing \"jsonrpc\"", true, "1");
	parse_bad("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"a\"}",
	          "id must be a string or an integer, not null", true, "none");
	parse_bad("{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"a\"}",
	          "id must be a string or an integer in the 64-bit range, not 1.5", true, "none");
	parse_bad("{\"jsonrpc\":\"2.0\",\"id\":1e3,\"method\":\"a\"}", "not 1e3", true, "none");
	parse_bad("{\"jsonrpc\":\"2.0\",\"id\":9223372036854775808,\"method\":\"a\"}",
	          "in the 64-bit range", true, "none");
	parse_bad("{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"a\"}", "not a boolean", true,
	          "none");
	parse_bad("{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"a\"}", "not an object", true,
	          "none");
	parse_bad("{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"a\"}", "not an array", true,
	          "none");
	parse_bad("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"a\",\"params\":\"s\"}",
	          "params must be an object or an array", true, "7");
	parse_bad("{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"params\":null}",
	          "params must be an object or an array", true, "none");
	parse_bad("{\"jsonrpc\":\"2.0\",\"id\":1}", "missing method", true, "1");
	parse_bad("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}", "method must be a string", true,
	          "1");
	parse_bad("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\"}", "method must not be empty",
	          true, "1");
	parse_bad("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\\u0000b\"}", "NUL", true, "1");
	parse_bad("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"result\":1}",
	          "cannot carry result or error", true, "1");
	parse_bad("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1,\"error\":{}}",
	          "both result and error", true, "1");
	parse_bad("{\"jsonrpc\":\"2.0\",\"result\":1}", "a response needs an id", true, "none");
	parse_bad("{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":1}", "not null", true, "none");
	parse_bad("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":\"x\"}", "error must be an object", true,
	          "1");
	parse_bad("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":\"1\",\"message\":\"m\"}}",
	          "error.code must be an integer", true, "1");
	parse_bad("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1.5,\"message\":\"m\"}}",
	          "error.code must be an integer", true, "1");
	parse_bad("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1}}", "missing error.message",
	          true, "1");
	parse_bad("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"message\":\"m\"}}",
	          "missing error.code", true, "1");
	parse_bad("42", "a message must be a JSON object", true, "none");
	parse_bad("{\"jsonrpc\":\"2.0\",\"method\"", "not JSON", false, "none");
	parse_bad("{\"jsonrpc\":\"2.0\",\"method\":\"a\"} x", "not JSON", false, "none");
	parse_bad("{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"a\"}", "not JSON", false,
	          "none");
	parse_bad("{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"params\":[[[[[1]]]]]}", "not JSON",
	          false, "none");
}

static void id_key_case(const char *json, const char *want)
{
	struct json_value *v = parse_json(json);
	char *key = rpc_id_key(v);
	T_STR(key, want, "id key of %s", json);
	free(key);
	json_free(v);
}

static void test_id_keys(void)
{
	id_key_case("42", "n:42");
	id_key_case("\"42\"", "s:42");
	id_key_case("-7", "n:-7");
	id_key_case("-0", "n:0");
	id_key_case("\"abc\"", "s:abc");
	id_key_case("\"\"", "s:");
	id_key_case("\"a\\u0000b\"", "s:a\\0b");
	id_key_case("\"a\\\\0b\"", "s:a\\\\0b");
	id_key_case("null", NULL);
	id_key_case("1.5", NULL);
	id_key_case("true", NULL);
	id_key_case("{}", NULL);
	id_key_case("99999999999999999999", NULL);
	char *k = rpc_id_key_int(42);
	T_STR(k, "n:42", "rpc_id_key_int(42)");
	free(k);
	T_OK(rpc_id_key(NULL) == NULL, "rpc_id_key(NULL)");
}

static void test_builders(void)
{
	struct mg_buf out = MG_BUF_INIT(1 << 20);
	struct mg_err *err = NULL;
	struct json_value *one = json_new_int(1);
	struct json_value *sid = json_new_string("r-1");
	struct json_value *params = parse_json("{\"a\":[1,\"x\"],\"b\":{}}");
	struct json_value *result = parse_json("{\"k\":true}");
	struct json_value *null = json_new_null();

	T_INT(rpc_build_request(one, "ping", NULL, &out, &err), 0, "build a request");
	T_STR(mg_buf_str(&out), "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n",
	      "request without params");
	mg_buf_reset(&out);
	rpc_build_request(sid, "tools/call", params, &out, &err);
	T_STR(mg_buf_str(&out),
	      "{\"jsonrpc\":\"2.0\",\"id\":\"r-1\",\"method\":\"tools/call\","
	      "\"params\":{\"a\":[1,\"x\"],\"b\":{}}}\n",
	      "request with params and a string id");
	mg_buf_reset(&out);
	rpc_build_notification("notifications/initialized", NULL, &out, &err);
	T_STR(mg_buf_str(&out), "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n",
	      "notification");
	mg_buf_reset(&out);
	rpc_build_notification("notifications/progress", params, &out, &err);
	T_STR(mg_buf_str(&out),
	      "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
	      "\"params\":{\"a\":[1,\"x\"],\"b\":{}}}\n",
	      "notification with params");
	mg_buf_reset(&out);
	rpc_build_result(one, NULL, &out, &err);
	T_STR(mg_buf_str(&out), "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n", "empty result");
	mg_buf_reset(&out);
	rpc_build_result(sid, result, &out, &err);
	T_STR(mg_buf_str(&out), "{\"jsonrpc\":\"2.0\",\"id\":\"r-1\",\"result\":{\"k\":true}}\n",
	      "result");
	mg_buf_reset(&out);
	rpc_build_error(NULL, RPC_PARSE_ERROR, "Parse error", NULL, &out, &err);
	T_STR(mg_buf_str(&out),
	      "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"Parse "
	      "error\"}}\n",
	      "error with a null id");
	mg_buf_reset(&out);
	rpc_build_error(one, RPC_SERVER_ERROR, "line\nbreak \"quoted\"", result, &out, &err);
	T_STR(mg_buf_str(&out),
	      "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32000,\"message\":\"line\\nbreak "
	      "\\\"quoted\\\"\",\"data\":{\"k\":true}}}\n",
	      "error with data and a message that needs escaping");
	T_OK(err == NULL, "builders: no error so far");

	/* what was built parses back to the same thing */
	struct rpc_msg m;
	T_INT(rpc_parse(out.data, out.len - 1, 0, &m, &err), 0, "a built error parses");
	T_OK(m.kind == RPC_ERROR && m.error_code == -32000 &&
	         strcmp(m.error_message, "line\nbreak \"quoted\"") == 0,
	     "a built error parses back to its parts");
	rpc_msg_free(&m);
	rpc_msg_free(&m); /* an emptied message frees to nothing */
	rpc_msg_free(NULL);

	/* failures leave out as it was */
	mg_buf_reset(&out);
	mg_buf_puts(&out, "keep", NULL);
	T_INT(rpc_build_request(null, "ping", NULL, &out, &err), -1, "a request with a null id");
	T_OK(has(mg_err_msg(err), "id must be a string or an integer"), "says why: %s",
	     mg_err_msg(err));
	mg_err_clear(&err);
	T_INT(rpc_build_result(NULL, NULL, &out, &err), -1, "a result without id");
	mg_err_clear(&err);
	T_INT(rpc_build_request(one, "", NULL, &out, &err), -1, "a request without method");
	mg_err_clear(&err);
	T_INT(rpc_build_error(one, 1, "\xff", NULL, &out, &err), -1, "invalid UTF-8 in a message");
	mg_err_clear(&err);
	T_STR(mg_buf_str(&out), "keep", "failed builders leave the buffer as it was");
	struct mg_buf small = MG_BUF_INIT(30);
	T_INT(rpc_build_request(one, "tools/list", params, &small, &err), -1,
	      "a request past the buffer's maximum");
	T_OK(small.len == 0 && has(mg_err_msg(err), "building a request"),
	     "nothing half-written: %s", mg_err_msg(err));
	mg_err_clear(&err);
	mg_buf_free(&small);

	json_free(one);
	json_free(sid);
	json_free(params);
	json_free(result);
	json_free(null);
	mg_buf_free(&out);
}

/* ---- peer ------------------------------------------------------------------------- */

static void test_peer_requests(void)
{
	struct conn c;
	conn_open(&c, true);
	struct rpc_peer_config cfg = rec_config();
	struct rpc_peer *p = peer_open(&c, &cfg);
	struct mg_err *err = NULL;
	T_STR(rpc_peer_name(p), "server test", "peer name");

	int64_t id1 = 0, id2 = 0, id3 = 0;
	struct json_value *params = parse_json("{\"cursor\":\"c\"}");
	T_INT(rpc_peer_send_request(p, "tools/list", NULL, 0, rec_done, "first", &id1, &err), 0,
	      "send a request");
	T_INT(rpc_peer_send_request(p, "tools/list", params, 0, rec_done, "second", &id2, &err), 0,
	      "send another");
	T_INT(rpc_peer_send_request(p, "tools/call", NULL, 0, rec_done, "third", &id3, &err), 0,
	      "and a third");
	json_free(params);
	T_OK(id1 == 1 && id2 == 2 && id3 == 3, "ids count from 1: %" PRId64 " %" PRId64 " %" PRId64,
	     id1, id2, id3);
	T_INT((long long)rpc_peer_pending_count(p), 3, "three pending");
	T_OK(!rpc_peer_wants_write(p), "a pipe with room took everything");
	char *sent = drain(c.srv_in);
	T_STR(sent,
	      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n"
	      "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/"
	      "list\",\"params\":{\"cursor\":\"c\"}}\n"
	      "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\"}\n",
	      "the requests as sent");
	free(sent);

	/* out of order, an error reply, a string id that is not ours */
	write_str(c.srv_out, "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"n\":2}}\n"
	                     "{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"result\":{}}\r\n"
	                     "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"n\":1}}\n"
	                     "{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":-32602,"
	                     "\"message\":\"bad args\"}}\n"
	                     "{\"jsonrpc\":\"2.0\",\"id\":77,\"result\":{}}\n");
	T_INT(rpc_peer_read(p, &err), RPC_READ_DRAINED, "read the replies");
	check_events("second id=2 result={\"n\":2}\n"
	             "unmatched id=\"1\"\n"
	             "first id=1 result={\"n\":1}\n"
	             "third id=3 error=-32602 bad args\n"
	             "unmatched id=77\n",
	             "replies reach their callbacks, in the order they came; \"1\" is not 1");
	T_INT((long long)rpc_peer_pending_count(p), 0, "nothing pending");

	/* a callback keeps its reply */
	int64_t id4;
	rpc_peer_send_request(p, "resources/read", NULL, 0, keep_done, NULL, &id4, &err);
	free(drain(c.srv_in));
	write_str(c.srv_out, "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"contents\":[]}}\n");
	rpc_peer_read(p, &err);
	check_events("kept\n", "the keeping callback ran");
	char *kept_result = json_text(kept.result);
	T_STR(kept_result, "{\"contents\":[]}", "a moved reply outlives the callback");
	free(kept_result);
	rpc_msg_free(&kept);

	/* requests and notifications from the other side */
	write_str(c.srv_out,
	          "{\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":\"ping\"}\n"
	          "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n"
	          "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"roots/list\",\"params\":{}}\n");
	rpc_peer_read(p, &err);
	check_events("request ping id=\"s1\" params=-\n"
	             "notification notifications/tools/list_changed\n"
	             "request roots/list id=5 params={}\n",
	             "requests and notifications reach their callbacks");
	sent = drain(c.srv_in);
	T_STR(sent, "{\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"result\":{}}\n", "the ping was answered");
	free(sent);

	/* lines that are not messages */
	write_str(c.srv_out, "hello\n"
	                     "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"x\",\"params\":\"s\"}\n"
	                     "[1]\n");
	rpc_peer_read(p, &err);
	char *got = take_events();
	T_OK(has(got, "bad code=-32700 overflow=0 len=5 id=none: not JSON") &&
	         has(got, "bad code=-32600 overflow=0 len=50 id=9: params must be an object or an "
	                  "array\n") &&
	         has(got, "bad code=-32600 overflow=0 len=3 id=none: batches are not supported"),
	     "bad lines are reported with their code, id and reason");
	if (!has(got, "batches"))
		t_note("%s", got);
	free(got);
	T_OK(err == NULL, "no errors from the reads");

	rpc_peer_free(p);
	conn_close_srv(&c);
}

/* refuses a member "bad" in any params or result, naming the method */
static char *refuse_bad(enum rpc_kind kind, const char *method, const struct json_value *body)
{
	if (json_get(body, "bad") == NULL)
		return NULL;
	return xasprintf("%s %s: bad is not read", kind == RPC_RESULT ? "result of" : "params of",
	                 method);
}

/* The peer's check: a request answered -32602, a notification dropped, a
 * result turned into an error reply to its request; each told to
 * on_bad_line as answered, and none reaching a handler */
static void test_peer_check(void)
{
	struct conn c;
	conn_open(&c, true);
	struct rpc_peer_config cfg = rec_config();
	cfg.check = refuse_bad;
	struct rpc_peer *p = peer_open(&c, &cfg);
	struct mg_err *err = NULL;
	int64_t id = 0;
	rpc_peer_send_request(p, "tools/call", NULL, 0, rec_done, "call", &id, &err);
	rpc_peer_send_request(p, "tools/list", NULL, 0, rec_done, "list", NULL, &err);
	free(drain(c.srv_in));
	write_str(c.srv_out,
	          "{\"jsonrpc\":\"2.0\",\"id\":\"r\",\"method\":\"x/y\",\"params\":{\"bad\":1}}\n"
	          "{\"jsonrpc\":\"2.0\",\"method\":\"n/z\",\"params\":{\"bad\":1}}\n"
	          "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"bad\":true}}\n"
	          "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"good\":true}}\n"
	          "{\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{\"bad\":true}}\n");
	rpc_peer_read(p, &err);
	char *got = take_events();
	T_STR(got,
	      "bad code=-32602 overflow=0 len=60 id=\"r\": params of x/y: bad is not read\n"
	      "bad code=-32602 overflow=0 len=51 id=none: params of n/z: bad is not read\n"
	      "bad code=-32602 overflow=0 len=46 id=1: result of tools/call: bad is not read\n"
	      "call id=1 error=-32603 server test answered tools/call with a result that is not "
	      "valid MCP: result of tools/call: bad is not read\n"
	      "list id=2 result={\"good\":true}\n"
	      "unmatched id=99\n",
	      "checked before dispatch: refused, dropped, turned into an error reply");
	free(got);
	char *sent = drain(c.srv_in);
	T_STR(sent,
	      "{\"jsonrpc\":\"2.0\",\"id\":\"r\",\"error\":{\"code\":-32602,\"message\":"
	      "\"params of x/y: bad is not read\"}}\n",
	      "the refused request is answered -32602 with why, and nothing else is sent");
	free(sent);
	T_OK(err == NULL, "no errors from the read");
	rpc_peer_free(p);
	conn_close_srv(&c);
}

/* A peer that takes batches (a server of MCP 2025-03-26): each message of
 * a batch dispatched in order, the answers to its requests held and sent
 * as one array once the last is given, whatever their order; responses in
 * a batch reach their requests; a batch in a batch, an empty one and a bad
 * member are bad lines; an answer to a request of no batch goes at once */
static void test_peer_batches(void)
{
	struct conn c;
	conn_open(&c, true);
	struct rpc_peer_config cfg = rec_config();
	cfg.check = refuse_bad;
	struct rpc_peer *p = peer_open(&c, &cfg);
	struct mg_err *err = NULL;
	rpc_peer_set_batches(p, true);
	rpc_peer_send_request(p, "tools/list", NULL, 0, rec_done, "list", NULL, &err);
	free(drain(c.srv_in));
	write_str(c.srv_out, " [{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"},"
	                     "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"roots/list\"},"
	                     "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"},"
	                     "{\"jsonrpc\":\"2.0\",\"id\":\"b\",\"method\":\"x\",\"params\":{"
	                     "\"bad\":1}},"
	                     "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}},"
	                     "[{\"jsonrpc\":\"2.0\",\"method\":\"n\"}],"
	                     "{\"jsonrpc\":\"1.0\",\"id\":8,\"method\":\"ping\"}]\n");
	rpc_peer_read(p, &err);
	char *got = take_events();
	T_OK(has(got, "notification notifications/message\n"
	              "request roots/list id=\"a\" params=-\n"
	              "request ping id=7 params=-\n") &&
	         has(got, "id=\"b\": params of x: bad is not read") &&
	         has(got, "list id=1 result={\"tools\":[]}") &&
	         has(got, "a batch inside a batch") && has(got, "\"jsonrpc\" must be \"2.0\""),
	     "a batch's messages are dispatched in order; its bad members are bad lines");
	if (!has(got, "inside"))
		t_note("%s", got);
	free(got);
	char *sent = drain(c.srv_in);
	T_STR(sent, "", "nothing is sent while a request of the batch waits for its answer");
	free(sent);
	/* an answer to a request of no batch goes at once */
	struct json_value *other = parse_json("\"z\"");
	rpc_peer_send_result(p, other, NULL, &err);
	json_free(other);
	sent = drain(c.srv_in);
	T_STR(sent, "{\"jsonrpc\":\"2.0\",\"id\":\"z\",\"result\":{}}\n",
	      "an answer to another request goes at once");
	free(sent);
	struct json_value *a = parse_json("\"a\"");
	struct json_value *roots = parse_json("{\"roots\":[]}");
	rpc_peer_send_result(p, a, roots, &err);
	json_free(a);
	json_free(roots);
	sent = drain(c.srv_in);
	T_STR(sent,
	      "[{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}},"
	      "{\"jsonrpc\":\"2.0\",\"id\":\"b\",\"error\":{\"code\":-32602,\"message\":"
	      "\"params of x: bad is not read\"}},"
	      "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":{\"roots\":[]}}]\n",
	      "the batch's answers go as one array once the last is given, in the order given");
	free(sent);
	write_str(c.srv_out, "[]\n[1\n");
	rpc_peer_read(p, &err);
	got = take_events();
	T_OK(has(got, "bad code=-32600 overflow=0 len=2 id=none: an empty batch") &&
	         has(got, "bad code=-32700 overflow=0 len=2"),
	     "an empty batch and a broken one are bad lines");
	free(got);
	rpc_peer_set_batches(p, false);
	write_str(c.srv_out, "[{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}]\n");
	rpc_peer_read(p, &err);
	got = take_events();
	T_OK(has(got, "batches are not supported"), "off again, a batch is refused: %s", got);
	free(got);
	T_OK(err == NULL, "no errors from the reads");
	rpc_peer_free(p);
	conn_close_srv(&c);
}

static void test_peer_defaults(void)
{
	struct conn c;
	conn_open(&c, true);
	struct rpc_peer_config cfg = {.name = "server quiet", .line_max = 64};
	struct rpc_peer *p = peer_open(&c, &cfg);
	struct mg_err *err = NULL;
	mg_log_set_level(MG_LOG_ERROR); /* the defaults log; keep the output clean */
	write_str(c.srv_out,
	          "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"sampling/createMessage\"}\n"
	          "{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n"
	          "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}\n"
	          "garbage\n");
	for (int i = 0; i < 100; i++)
		write_str(
		    c.srv_out,
		    "0123456789012345678901234567890123456789012345678901234567890123456789\n");
	write_str(c.srv_out, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\"}\n");
	T_INT(rpc_peer_read(p, &err), RPC_READ_DRAINED, "defaults: read");
	char *sent = drain(c.srv_in);
	T_STR(
	    sent,
	    "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"error\":{\"code\":-32601,\"message\":\"Method not "
	    "found\"}}\n"
	    "{\"jsonrpc\":\"2.0\",\"id\":6,\"error\":{\"code\":-32601,\"message\":\"Method not "
	    "found\"}}\n",
	    "defaults: requests are answered method-not-found, the rest dropped");
	free(sent);
	mg_log_set_level(MG_LOG_INFO);
	rpc_peer_free(p);
	conn_close_srv(&c);
}

static void test_peer_overflow(void)
{
	struct conn c;
	conn_open(&c, true);
	struct rpc_peer_config cfg = rec_config();
	cfg.line_max = 100;
	struct rpc_peer *p = peer_open(&c, &cfg);
	struct mg_err *err = NULL;
	char big[300];
	memset(big, 'z', sizeof(big));
	write_all(c.srv_out, big, sizeof(big));
	T_INT(rpc_peer_read(p, &err), RPC_READ_DRAINED, "overflow: read");
	write_all(c.srv_out, big, sizeof(big));
	write_str(c.srv_out, "\n{\"jsonrpc\":\"2.0\",\"method\":\"after\"}\n");
	T_INT(rpc_peer_read(p, &err), RPC_READ_DRAINED, "overflow: read the rest");
	check_events("bad code=-32700 overflow=1 len=300 id=none: a line longer than 100 bytes\n"
	             "notification after\n",
	             "an overlong line is reported once, the next line is read");
	rpc_peer_free(p);
	conn_close_srv(&c);
}

/* A label per request, for the callbacks. */
static const char *const labels[] = {"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9"};

static void order_done(struct rpc_peer *p, struct rpc_msg *reply, const struct mg_err *why,
                       void *data)
{
	(void)p;
	(void)reply;
	(void)why;
	ev("%" PRIdPTR, (intptr_t)data);
}

static void test_peer_deadlines(void)
{
	struct conn c;
	conn_open(&c, true);
	struct rpc_peer_config cfg = rec_config();
	struct rpc_peer *p = peer_open(&c, &cfg);
	struct mg_err *err = NULL;
	int64_t now = rpc_now_ms();

	T_OK(rpc_peer_next_deadline(p) == 0, "no deadline when nothing is pending");
	rpc_peer_send_request(p, "tools/call", NULL, now + 5000, rec_done, (void *)labels[0], NULL,
	                      &err);
	rpc_peer_send_request(p, "tools/list", NULL, 0, rec_done, (void *)labels[1], NULL, &err);
	rpc_peer_send_request(p, "prompts/get", NULL, now + 1000, rec_done, (void *)labels[2], NULL,
	                      &err);
	T_OK(rpc_peer_next_deadline(p) == now + 1000, "the earliest deadline");
	rpc_peer_expire(p, now + 999);
	check_events("", "nothing expires before its deadline");
	rpc_peer_expire(p, now + 1000);
	char *got = take_events();
	T_OK(has(got, "r2 failed: timed out after ") &&
	         has(got, " ms waiting for prompts/get from server test\n") &&
	         strchr(got, '\n') == got + strlen(got) - 1,
	     "one request timed out: %.*s", (int)strcspn(got, "\n"), got);
	free(got);
	T_OK(rpc_peer_next_deadline(p) == now + 5000, "the next deadline");
	rpc_peer_expire(p, now + 10000);
	got = take_events();
	T_OK(has(got, "r0 failed: timed out after ") &&
	         has(got, "waiting for tools/call from server test"),
	     "the other timed out: %.*s", (int)strcspn(got, "\n"), got);
	free(got);
	T_OK(rpc_peer_next_deadline(p) == 0, "the request without deadline has none");
	T_INT((long long)rpc_peer_pending_count(p), 1, "it is still pending");

	/* late replies go to on_response */
	free(drain(c.srv_in));
	write_str(c.srv_out, "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"late\":true}}\n");
	rpc_peer_read(p, &err);
	check_events("unmatched id=3\n", "a late reply goes to on_response");

	/* cancel */
	char *key = rpc_id_key_int(2);
	T_INT(rpc_peer_cancel(p, key), 1, "cancel a pending request");
	T_INT(rpc_peer_cancel(p, key), 0, "cancel it again: not pending");
	free(key);
	T_INT(rpc_peer_cancel(p, "s:2"), 0, "a string key is never ours");
	T_INT(rpc_peer_cancel(p, "n:x"), 0, "a bad key");
	T_INT((long long)rpc_peer_pending_count(p), 0, "nothing pending after the cancel");
	write_str(c.srv_out, "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n");
	rpc_peer_read(p, &err);
	check_events("unmatched id=2\n", "the reply to a cancelled request goes to on_response");

	/* many deadlines expire in deadline order, with removals in between */
	int64_t base = now + 100000;
	int64_t ids[200];
	for (intptr_t i = 0; i < 200; i++)
		rpc_peer_send_request(p, "m", NULL, base + (i * 37) % 200, order_done, (void *)i,
		                      &ids[i], &err);
	for (int i = 0; i < 200; i += 7) {
		char *k = rpc_id_key_int(ids[i]);
		rpc_peer_cancel(p, k);
		free(k);
	}
	free(drain(c.srv_in));
	bool ordered = true;
	int fired = 0;
	for (int64_t t = base; t < base + 200; t += 13) {
		rpc_peer_expire(p, t);
		char *list = take_events();
		for (char *s = list; *s != '\0';) {
			char *end;
			long i = strtol(s, &end, 10);
			int64_t d = base + (i * 37) % 200;
			ordered &= d <= t && i % 7 != 0;
			fired++;
			s = end + 1;
		}
		free(list);
	}
	rpc_peer_expire(p, base + 200);
	char *rest = take_events();
	for (char *s = rest; *s != '\0'; s++)
		fired += *s == '\n';
	free(rest);
	T_OK(ordered, "each expiry fires only requests past their deadline, never cancelled ones");
	T_INT(fired, 200 - 29, "every uncancelled request expired once");
	T_INT((long long)rpc_peer_pending_count(p), 0, "none left");

	/* fail_all */
	rpc_peer_send_request(p, "initialize", NULL, now + 5000, rec_done, (void *)labels[3], NULL,
	                      &err);
	rpc_peer_send_request(p, "tools/list", NULL, 0, rec_done, (void *)labels[4], NULL, &err);
	rpc_peer_fail_all(p, "its container exited");
	check_events("r3 failed: no reply to initialize from server test: its container exited\n"
	             "r4 failed: no reply to tools/list from server test: its container exited\n",
	             "fail_all fails every pending request, in id order");
	T_OK(rpc_peer_pending_count(p) == 0 && rpc_peer_next_deadline(p) == 0,
	     "fail_all leaves nothing pending");

	/* freeing fails what is still pending */
	rpc_peer_send_request(p, "tools/call", NULL, 0, rec_done, (void *)labels[5], NULL, &err);
	T_OK(err == NULL, "no errors: %s", mg_err_msg(err));
	rpc_peer_free(p);
	check_events(
	    "r5 failed: no reply to tools/call from server test: the connection was closed\n",
	    "free fails the pending requests");
	conn_close_srv(&c);
}

static void test_peer_write_queue(void)
{
	struct conn c;
	conn_open(&c, true);
	if (fcntl(c.peer_out, F_SETPIPE_SZ, 4096) < 0)
		t_note("cannot shrink the pipe: %s", strerror(errno));
	struct rpc_peer_config cfg = rec_config();
	cfg.write_queue_max = 10000;
	struct rpc_peer *p = peer_open(&c, &cfg);
	struct mg_err *err = NULL;
	char line[101];
	memset(line, 'a', 100);
	line[0] = '[';
	line[98] = ']';
	line[99] = '\n';
	line[100] = '\0';
	int sent = 0;
	while (rpc_peer_send_line(p, line, 100, &err) == 0)
		sent++;
	T_OK(has(mg_err_msg(err), "the write queue to server test is full"),
	     "a full queue refuses: %s", mg_err_msg(err));
	mg_err_clear(&err);
	T_OK(rpc_peer_queued_bytes(p) <= 10000 && rpc_peer_queued_bytes(p) > 10000 - 100,
	     "the queue is bounded: %zu bytes", rpc_peer_queued_bytes(p));
	T_OK(rpc_peer_wants_write(p), "a full queue wants writing");
	T_INT(rpc_peer_send_request(p, "tools/list", NULL, 0, rec_done, (void *)labels[0], NULL,
	                            &err),
	      -1, "a request does not fit either");
	T_INT((long long)rpc_peer_pending_count(p), 0, "and is not pending");
	mg_err_clear(&err);

	struct mg_buf received = MG_BUF_INIT(1 << 20);
	for (int round = 0; round < 1000 && (rpc_peer_wants_write(p) || round == 0); round++) {
		char *got = drain(c.srv_in);
		mg_buf_puts(&received, got, NULL);
		free(got);
		if (rpc_peer_flush(p, &err) < 0)
			break;
	}
	char *got = drain(c.srv_in);
	mg_buf_puts(&received, got, NULL);
	free(got);
	bool whole = true;
	for (size_t i = 0; i + 100 <= received.len; i += 100)
		whole &= memcmp(received.data + i, line, 100) == 0;
	T_OK(!rpc_peer_wants_write(p) && rpc_peer_queued_bytes(p) == 0, "flushed out");
	T_INT((long long)received.len, (long long)sent * 100, "every queued line arrived, once");
	T_OK(whole, "in order and whole");
	mg_buf_free(&received);
	T_INT(rpc_peer_send_line(p, "no newline", 10, &err), -1, "a line must end in a newline");
	mg_err_clear(&err);
	T_INT(rpc_peer_send_line(p, "two\nlines\n", 10, &err), -1, "one line only");
	mg_err_clear(&err);

	/* the reader of our output goes away */
	close(c.srv_in);
	c.srv_in = -1;
	T_INT(rpc_peer_send_line(p, line, 100, &err), -1, "writing to a closed pipe fails");
	T_OK(has(mg_err_msg(err), "Broken pipe"), "and says so: %s", mg_err_msg(err));
	mg_err_clear(&err);
	T_OK(!rpc_peer_wants_write(p), "a broken output wants no writing");
	T_INT(rpc_peer_send_request(p, "ping", NULL, 0, rec_done, (void *)labels[0], NULL, &err),
	      -1, "later requests fail");
	mg_err_clear(&err);
	T_INT(rpc_peer_flush(p, &err), -1, "so does flush");
	mg_err_clear(&err);
	rpc_peer_free(p);
	conn_close_srv(&c);
	check_events("", "no callback ran for refused requests");
}

/* Is fd watched on loop? loop_watch refuses an fd that is. */
static bool watched_on(struct loop *loop, int fd)
{
	struct mg_err *err = NULL;
	if (loop_watch(loop, fd, EPOLLIN, noop_fd, NULL, &err) < 0) {
		mg_err_free(err);
		return true;
	}
	loop_unwatch(loop, fd);
	return false;
}

static void rec_write_failed(struct rpc_peer *p, const struct mg_err *why, void *data)
{
	(void)p;
	(void)data;
	ev("write failed: %s", mg_err_msg(why));
}

/* Attached to a loop, the peer reads what comes and watches its output only
 * while some is queued. */
static void test_peer_attached(void)
{
	struct loop *loop = loop_new(NULL);
	if (!T_OK(loop != NULL, "loop_new"))
		return;
	struct conn c;
	conn_open(&c, true);
	if (fcntl(c.peer_out, F_SETPIPE_SZ, 4096) < 0)
		t_note("cannot shrink the pipe: %s", strerror(errno));
	struct rpc_peer_config cfg = rec_config();
	cfg.on_write_failed = rec_write_failed;
	struct rpc_peer *p = peer_open(&c, &cfg);
	struct mg_err *err = NULL;
	T_INT(rpc_peer_attach(p, loop, &err), 0, "attach");
	T_INT(rpc_peer_attach(p, loop, &err), -1, "once only");
	mg_err_clear(&err);
	T_OK(watched_on(loop, c.peer_in), "its input is watched");
	T_OK(!watched_on(loop, c.peer_out), "its output is not, with nothing queued");

	write_str(c.srv_out, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
	loop_run_once(loop, 1000, NULL);
	check_events("request ping id=1 params=-\n", "what comes is read by the loop");
	char *got = drain(c.srv_in);
	T_STR(got, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n", "the answer went at once");
	free(got);
	T_OK(!watched_on(loop, c.peer_out), "so the output is still not watched");

	char line[101];
	memset(line, 'a', 100);
	line[0] = '[';
	line[98] = ']';
	line[99] = '\n';
	line[100] = '\0';
	while (rpc_peer_queued_bytes(p) == 0 && rpc_peer_send_line(p, line, 100, &err) == 0)
		;
	T_OK(err == NULL && rpc_peer_wants_write(p), "a full pipe leaves output queued");
	T_OK(watched_on(loop, c.peer_out), "then the output is watched");
	size_t total = 0;
	for (int round = 0; round < 1000 && rpc_peer_wants_write(p); round++) {
		got = drain(c.srv_in);
		total += strlen(got);
		free(got);
		loop_run_once(loop, 1000, NULL);
	}
	got = drain(c.srv_in);
	total += strlen(got);
	free(got);
	T_OK(!rpc_peer_wants_write(p) && total % 100 == 0 && total > 0,
	     "the loop wrote it all out (%zu bytes)", total);
	T_OK(!watched_on(loop, c.peer_out), "and the output is no longer watched");

	/* freed with output queued: nothing of it stays watched (new fds
	 * take the freed numbers) */
	struct conn c2;
	conn_open(&c2, true);
	struct rpc_peer *p2 = peer_open(&c2, &cfg);
	rpc_peer_attach(p2, loop, NULL);
	if (fcntl(c2.peer_out, F_SETPIPE_SZ, 4096) < 0)
		t_note("cannot shrink the pipe: %s", strerror(errno));
	while (rpc_peer_queued_bytes(p2) == 0 && rpc_peer_send_line(p2, line, 100, NULL) == 0)
		;
	int was_in = c2.peer_in, was_out = c2.peer_out;
	rpc_peer_free(p2);
	int again[2];
	if (pipe2(again, O_CLOEXEC) < 0)
		abort();
	T_OK((again[0] == was_in || again[0] == was_out) && !watched_on(loop, again[0]) &&
	         !watched_on(loop, again[1]),
	     "free unwatches both fds");
	close(again[0]);
	close(again[1]);
	conn_close_srv(&c2);

	rpc_peer_stop_reading(p);
	T_OK(!watched_on(loop, c.peer_in), "stop_reading: the input is not watched");
	close(c.srv_in);
	c.srv_in = -1;
	T_INT(rpc_peer_send_line(p, line, 100, &err), -1, "a write to a closed reader fails");
	mg_err_clear(&err);
	rpc_peer_send_line(p, line, 100, NULL);
	check_events("write failed: writing to server test: Broken pipe\n",
	             "on_write_failed is told, once");
	rpc_peer_free(p);
	conn_close_srv(&c);

	/* the end of input: on_closed, and the input is no longer watched */
	conn_open(&c, true);
	p = peer_open(&c, &cfg);
	rpc_peer_attach(p, loop, NULL);
	close(c.srv_out);
	c.srv_out = -1;
	loop_run_once(loop, 1000, NULL);
	check_events("closed: end of input\n", "the loop reads the end of input");
	T_OK(!watched_on(loop, c.peer_in), "and stops watching it");
	rpc_peer_free(p);
	conn_close_srv(&c);
	loop_free(loop);
}

static void test_peer_closed(void)
{
	struct conn c;
	conn_open(&c, true);
	struct rpc_peer_config cfg = rec_config();
	struct rpc_peer *p = peer_open(&c, &cfg);
	struct mg_err *err = NULL;
	rpc_peer_send_request(p, "initialize", NULL, rpc_now_ms() + 5000, rec_done,
	                      (void *)labels[0], NULL, &err);
	write_str(c.srv_out, "{\"jsonrpc\":\"2.0\",\"method\":\"last\"}\n{\"jsonrpc\"");
	close(c.srv_out);
	c.srv_out = -1;
	/* the first read is short, so it stops there (a level-triggered watcher
	 * wakes again); the next one finds the end */
	T_INT(rpc_peer_read(p, &err), RPC_READ_DRAINED, "a short read: the fd is taken as drained");
	T_OK(!rpc_peer_closed(p), "not closed yet");
	T_INT(rpc_peer_read(p, &err), RPC_READ_CLOSED, "end of input is RPC_READ_CLOSED");
	T_OK(rpc_peer_closed(p), "the peer says it is closed");
	check_events("notification last\n"
	             "bad code=-32700 overflow=0 len=10 id=none: an incomplete line at the end of "
	             "input\n"
	             "r0 failed: no reply to initialize from server test: end of input\n"
	             "closed: end of input\n",
	             "lines before the end, the incomplete one, pending failed, then on_closed");
	T_INT(rpc_peer_read(p, &err), RPC_READ_CLOSED, "reading again: still closed");
	check_events("", "and nothing is called again");
	T_OK(err == NULL, "no error at a clean end");
	T_INT(rpc_peer_send_request(p, "ping", NULL, 0, rec_done, (void *)labels[1], NULL, &err),
	      -1, "no request to a peer whose input ended");
	T_OK(has(mg_err_msg(err), "no reply can come"), "says why: %s", mg_err_msg(err));
	mg_err_clear(&err);
	T_INT(rpc_peer_send_line(p, "{}\n", 3, &err), 0, "but lines can still be sent");
	rpc_peer_free(p);
	conn_close_srv(&c);
}

static void nested_request(struct rpc_peer *p, struct rpc_msg *msg, void *data)
{
	(void)msg;
	(void)data;
	struct rpc_msg reply;
	struct mg_err *err = NULL;
	int r = rpc_peer_call_sync(p, "roots/list", NULL, rpc_now_ms() + 1000, &reply, &err);
	ev("nested call_sync: %d %s", r, mg_err_msg(err));
	mg_err_clear(&err);
	r = rpc_peer_read(p, &err);
	ev("nested read: %d %s", r, mg_err_msg(err));
	mg_err_free(err);
}

static void test_peer_limits(void)
{
	struct conn c;
	conn_open(&c, true);
	struct rpc_peer_config cfg = rec_config();
	cfg.max_pending = 2;
	cfg.on_request = nested_request;
	struct rpc_peer *p = peer_open(&c, &cfg);
	struct mg_err *err = NULL;
	int64_t id = 0;
	rpc_peer_send_request(p, "a", NULL, 0, rec_done, (void *)labels[0], NULL, &err);
	rpc_peer_send_request(p, "b", NULL, 0, rec_done, (void *)labels[1], NULL, &err);
	T_INT(rpc_peer_send_request(p, "c", NULL, 0, rec_done, (void *)labels[2], &id, &err), -1,
	      "max_pending: the third request is refused");
	T_OK(has(mg_err_msg(err), "2 requests are already waiting"), "says why: %s",
	     mg_err_msg(err));
	mg_err_clear(&err);
	write_str(c.srv_out, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
	rpc_peer_read(p, &err);
	T_INT(rpc_peer_send_request(p, "c", NULL, 0, rec_done, (void *)labels[2], &id, &err), 0,
	      "max_pending: room again after a reply");
	T_INT(id, 3, "a refused request used no id");
	free(take_events());

	write_str(c.srv_out, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}\n");
	rpc_peer_read(p, &err);
	check_events("nested call_sync: -1 calling roots/list on server test inside one of its "
	             "callbacks\n"
	             "nested read: -1 reading from server test inside one of its callbacks\n",
	             "no call_sync or read from inside a callback");
	T_INT((long long)rpc_peer_pending_count(p), 2, "the refused nested call left nothing");
	rpc_peer_free(p);
	free(take_events());
	conn_close_srv(&c);
}

/* in and out on one socket */
static void test_peer_socket(void)
{
	int s[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s) < 0)
		abort();
	struct rpc_peer_config cfg = rec_config();
	struct rpc_peer *p = NULL;
	struct mg_err *err = NULL;
	T_INT(rpc_peer_new(s[0], s[0], &cfg, &p, &err), 0, "a peer on one socket");
	write_str(s[1], "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
	rpc_peer_read(p, &err);
	check_events("request ping id=1 params=-\n", "the socket peer got the ping");
	fcntl(s[1], F_SETFL, O_NONBLOCK);
	char *got = drain(s[1]);
	T_STR(got, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n", "and answered on the same fd");
	free(got);
	rpc_peer_free(p);
	close(s[1]);

	/* the fds belong to the peer even when it cannot be made */
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0)
		abort();
	T_INT(rpc_peer_new(fds[0], -1, &cfg, &p, &err), -1, "a peer without an output fd");
	T_OK(p == NULL && has(mg_err_msg(err), "server test"), "is refused: %s", mg_err_msg(err));
	mg_err_clear(&err);
	T_OK(fcntl(fds[0], F_GETFD) < 0 && errno == EBADF, "and its fds were closed anyway");
	close(fds[1]);
	rpc_peer_free(NULL);
}

/* A fair share per read: a level-triggered loop gets to other fds. */
static void test_peer_budget(void)
{
	struct conn c;
	conn_open(&c, true);
	if (fcntl(c.srv_out, F_SETPIPE_SZ, 1 << 20) < (1 << 20)) {
		T_OK(1, "# SKIP cannot grow a pipe to 1 MiB: %s", strerror(errno));
		conn_close_srv(&c);
		close(c.peer_in);
		close(c.peer_out);
		return;
	}
	struct rpc_peer_config cfg = rec_config();
	cfg.on_notification = NULL;
	struct rpc_peer *p = peer_open(&c, &cfg);
	struct mg_err *err = NULL;
	/* 1 MiB of 64-byte notifications */
	const char *n = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}";
	char *all = xmalloc(1 << 20);
	for (size_t i = 0; i < (1 << 20); i += 64) {
		memset(all + i, ' ', 64);
		memcpy(all + i, n, strlen(n) - 1);
		all[i + 62] = '}';
		all[i + 63] = '\n';
	}
	write_all(c.srv_out, all, 1 << 20);
	free(all);
	T_INT(rpc_peer_read(p, &err), RPC_READ_MORE,
	      "1 MiB waiting: the read stops after its share");
	T_INT(rpc_peer_read(p, &err), RPC_READ_DRAINED, "the next read finds the pipe empty");
	check_events("", "the notifications were good JSON-RPC");
	rpc_peer_free(p);
	conn_close_srv(&c);
}

/* ---- call_sync against a server thread ---------------------------------------------- */

struct server {
	int in, out;        /* blocking: what the peer writes, what it reads */
	const char *script; /* "ping-then-reply", "silent", "close", "error" */
	char *seen;         /* every line the server read */
};

static char *read_line_blocking(int fd)
{
	struct mg_buf b = MG_BUF_INIT(1 << 20);
	char ch;
	for (;;) {
		ssize_t n = read(fd, &ch, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			mg_buf_free(&b);
			return NULL;
		}
		mg_buf_putc(&b, ch, NULL);
		if (ch == '\n')
			return mg_buf_steal(&b, NULL);
	}
}

static void *server_main(void *arg)
{
	struct server *s = arg;
	struct mg_buf seen = MG_BUF_INIT(1 << 20);
	if (strcmp(s->script, "ping-then-reply") == 0) {
		write_str(s->out, "{\"jsonrpc\":\"2.0\",\"id\":\"srv-1\",\"method\":\"ping\"}\n");
		/* the request and the answer to the ping, in either order */
		for (int i = 0; i < 2; i++) {
			char *line = read_line_blocking(s->in);
			if (line == NULL)
				break;
			mg_buf_puts(&seen, line, NULL);
			free(line);
		}
		write_str(s->out, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":"
		                  "\"2025-11-25\"}}\n");
	} else if (strcmp(s->script, "error") == 0) {
		char *line = read_line_blocking(s->in);
		free(line);
		write_str(s->out, "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32601,"
		                  "\"message\":\"no such method\"}}\n");
	} else if (strcmp(s->script, "close") == 0) {
		char *line = read_line_blocking(s->in);
		free(line);
		close(s->out);
		s->out = -1;
	} else {
		char *line = read_line_blocking(s->in);
		free(line);
	}
	s->seen = mg_buf_steal(&seen, NULL);
	return NULL;
}

static void sync_case(const char *script, const char *method, int64_t timeout_ms, int want_ret,
                      const char *want)
{
	struct conn c;
	conn_open(&c, false);
	struct rpc_peer_config cfg = rec_config();
	struct rpc_peer *p = peer_open(&c, &cfg);
	struct server s = {.in = c.srv_in, .out = c.srv_out, .script = script};
	pthread_t t;
	if (pthread_create(&t, NULL, server_main, &s) != 0)
		abort();
	struct json_value *params = parse_json("{\"protocolVersion\":\"2025-11-25\"}");
	struct rpc_msg reply;
	struct mg_err *err = NULL;
	int r = rpc_peer_call_sync(p, method, params, rpc_now_ms() + timeout_ms, &reply, &err);
	json_free(params);
	T_INT(r, want_ret, "call_sync %s: returns %d", script, want_ret);
	char *got;
	if (r == 0 && reply.kind == RPC_RESULT)
		got = json_text(reply.result);
	else if (r == 0)
		got = xasprintf("error %" PRId64 " %s", reply.error_code, reply.error_message);
	else
		got = xstrdup(mg_err_msg(err));
	T_OK(has(got, want), "call_sync %s: %s", script, got);
	free(got);
	T_INT((long long)rpc_peer_pending_count(p), 0, "call_sync %s: nothing left pending",
	      script);
	rpc_msg_free(&reply);
	mg_err_free(err);
	/* let a silent server's read end */
	rpc_peer_free(p);
	pthread_join(t, NULL);
	if (strcmp(script, "ping-then-reply") == 0) {
		check_events("request ping id=\"srv-1\" params=-\n",
		             "call_sync: the server's ping reached on_request meanwhile");
		T_OK(has(s.seen, "{\"jsonrpc\":\"2.0\",\"id\":\"srv-1\",\"result\":{}}\n") &&
		         has(s.seen, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
		                     "\"params\":{\"protocolVersion\":\"2025-11-25\"}}\n"),
		     "call_sync: the server got the request and the ping's answer");
	} else {
		free(take_events());
	}
	free(s.seen);
	if (s.out >= 0)
		close(s.out);
	close(s.in);
}

static void test_call_sync(void)
{
	sync_case("ping-then-reply", "initialize", 5000, 0, "{\"protocolVersion\":\"2025-11-25\"}");
	sync_case("error", "tools/list", 5000, 0, "error -32601 no such method");
	int64_t t0 = rpc_now_ms();
	sync_case("silent", "tools/list", 200, -1, "ms waiting for tools/list from server test");
	int64_t took = rpc_now_ms() - t0;
	T_OK(took >= 200 && took < 3000, "call_sync: the timeout came on time (%" PRId64 " ms)",
	     took);
	sync_case("close", "initialize", 5000, -1,
	          "no reply to initialize from server test: end of input");
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	int fds_before = count_fds();
	test_framing();
	test_framing_bounded();
	test_reader_fd();
	test_parse();
	test_id_keys();
	test_builders();
	test_peer_requests();
	test_peer_check();
	test_peer_batches();
	test_peer_defaults();
	test_peer_overflow();
	test_peer_deadlines();
	test_peer_write_queue();
	test_peer_attached();
	test_peer_closed();
	test_peer_limits();
	test_peer_socket();
	test_peer_budget();
	test_call_sync();
	T_INT(count_fds(), fds_before, "no fd leaked");
	mg_buf_free(&events);
	return t_done();
}
