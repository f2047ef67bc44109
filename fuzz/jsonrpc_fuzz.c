/* libFuzzer target for internal/jsonrpc framing and parsing.
 *
 * The input goes through a reader with a small line cap twice: in chunks of
 * varying size (derived from the input) and in one piece. Both must give the
 * same lines and overflows, the chunked reader's buffer must stay within the
 * cap plus one chunk, and every line goes through rpc_parse. A message that
 * parses is built again with the builders and must parse to the same kind,
 * method and id. The sanitizers report memory errors and leaks. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal/jsonrpc/jsonrpc.h"

#define LINE_MAX_FUZZ 4096
#define CHUNK_MAX     300

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		__builtin_trap();
}

static bool same_str(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* Build msg again from its parts; it must come back the same. */
static void round_trip(const struct rpc_msg *m)
{
	struct mg_buf out = MG_BUF_INIT((size_t)1 << 24);
	int r = -1;
	switch (m->kind) {
	case RPC_REQUEST:
		r = rpc_build_request(m->id, m->method, m->params, &out, NULL);
		break;
	case RPC_NOTIFICATION:
		r = rpc_build_notification(m->method, m->params, &out, NULL);
		break;
	case RPC_RESULT:
		r = rpc_build_result(m->id, m->result, &out, NULL);
		break;
	case RPC_ERROR:
		r = rpc_build_error(m->id, m->error_code, m->error_message, m->error_data, &out,
		                    NULL);
		break;
	case RPC_INVALID:
		__builtin_trap();
	}
	check(r == 0);
	check(out.len > 0 && out.data[out.len - 1] == '\n');
	check(memchr(out.data, '\n', out.len - 1) == NULL);

	struct rpc_msg again;
	struct mg_err *err = NULL;
	check(rpc_parse(out.data, out.len - 1, 0, &again, &err) == 0);
	check(again.kind == m->kind);
	check(same_str(again.method, m->method));
	char *k1 = rpc_id_key(m->id), *k2 = rpc_id_key(again.id);
	check(same_str(k1, k2));
	if (m->kind == RPC_ERROR)
		check(again.error_code == m->error_code);
	free(k1);
	free(k2);
	mg_err_free(err);
	rpc_msg_free(&again);
	mg_buf_free(&out);
}

static void parse_line(const char *line, size_t len)
{
	check(len > 0 && len <= LINE_MAX_FUZZ && line[len] == '\0');
	check(memchr(line, '\n', len) == NULL);
	struct rpc_msg m;
	struct mg_err *err = NULL;
	if (rpc_parse(line, len, 16, &m, &err) < 0) {
		check(err != NULL && err->msg != NULL && m.kind == RPC_INVALID);
		check(m.root != NULL || m.id == NULL);
		if (m.id != NULL) {
			char *key = rpc_id_key(m.id);
			check(key != NULL);
			free(key);
		}
	} else {
		check(err == NULL);
		switch (m.kind) {
		case RPC_REQUEST:
			check(m.method != NULL && m.id != NULL);
			break;
		case RPC_NOTIFICATION:
			check(m.method != NULL && m.id == NULL);
			break;
		case RPC_RESULT:
			check(m.result != NULL && m.id != NULL);
			break;
		case RPC_ERROR:
			check(m.error_message != NULL && m.id != NULL);
			break;
		case RPC_INVALID:
			__builtin_trap();
		}
		char *key = rpc_id_key(m.id);
		check(m.id == NULL || key != NULL || m.id->kind == JSON_NULL);
		free(key);
		round_trip(&m);
	}
	mg_err_free(err);
	rpc_msg_free(&m);
}

/* Take every line now; record each as "L<line>\n" and each overflow as
 * "O\n" (lines hold no newline, so the record is unambiguous). */
static void take(struct rpc_reader *r, struct mg_buf *record, bool parse)
{
	const char *line;
	size_t len;
	int k;
	while ((k = rpc_reader_next(r, &line, &len)) != 0) {
		if (k == RPC_OVERFLOW) {
			check(rpc_reader_overflow_bytes(r) > LINE_MAX_FUZZ);
			check(mg_buf_puts(record, "O\n", NULL) == 0);
			continue;
		}
		check(k == 1);
		check(mg_buf_putc(record, 'L', NULL) == 0 &&
		      mg_buf_append(record, line, len, NULL) == 0 &&
		      mg_buf_putc(record, '\n', NULL) == 0);
		if (parse)
			parse_line(line, len);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* chunk sizes from a small generator seeded by the input */
	uint32_t state = 2166136261u;
	for (size_t i = 0; i < size && i < 8; i++)
		state = (state ^ data[i]) * 16777619u;

	struct mg_buf chunked = MG_BUF_INIT((size_t)1 << 26);
	struct mg_buf whole = MG_BUF_INIT((size_t)1 << 26);
	struct rpc_reader r;
	rpc_reader_init(&r, LINE_MAX_FUZZ);
	size_t pos = 0;
	while (pos < size) {
		state = state * 1103515245u + 12345u;
		size_t n = 1 + (state >> 16) % CHUNK_MAX;
		if (n > size - pos)
			n = size - pos;
		rpc_reader_feed(&r, (const char *)data + pos, n);
		pos += n;
		check(rpc_reader_capacity(&r) <= LINE_MAX_FUZZ + 2 + CHUNK_MAX);
		take(&r, &chunked, true);
		check(rpc_reader_buffered(&r) <= LINE_MAX_FUZZ + 1);
	}
	rpc_reader_free(&r);

	rpc_reader_init(&r, LINE_MAX_FUZZ);
	rpc_reader_feed(&r, (const char *)data, size);
	take(&r, &whole, false);
	rpc_reader_free(&r);
	check(chunked.len == whole.len &&
	      (chunked.len == 0 || memcmp(chunked.data, whole.data, chunked.len) == 0));

	mg_buf_free(&chunked);
	mg_buf_free(&whole);
	return 0;
}
