/* libFuzzer target: mcpgate-egress's request parser, the incremental head
 * scan, the forwarded head, chunked framing and the TLS SNI reader, with
 * invariants checked against each other:
 *   - the parser moves *p only on success, and then to just past CRLFCRLF;
 *   - the scan, fed in pieces, agrees with the parser on the head's end;
 *   - the forwarded head is one well-formed header section with no Proxy-*
 *     field, whatever the request held;
 *   - chunked framing gives the same answer whole and byte by byte;
 *   - an SNI name lies inside the input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "egress/egress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_forward(const struct egr_request *req, const struct egr_limits *lim)
{
	size_t cap = lim->max_header_bytes * 2 + 1024;
	char *out = malloc(cap);
	ssize_t n = egr_build_forward(req, out, cap);
	if (n < 0)
		__builtin_trap(); /* the cap always has room */
	struct egr_limits big = {cap + 16, cap + 16};
	struct egr_scan sc;
	memset(&sc, 0, sizeof(sc));
	size_t head_len = 0;
	const char *why;
	if (egr_scan_head(&sc, out, (size_t)n, &big, &head_len, &why) != 1 || head_len != (size_t)n)
		__builtin_trap();
	/* no Proxy-* field and no Host but ours */
	size_t hosts = 0;
	for (size_t i = 0; i + 2 < (size_t)n; i++) {
		if (out[i] != '\n')
			continue;
		struct egr_span name = {out + i + 1, 0};
		while (i + 1 + name.n < (size_t)n && out[i + 1 + name.n] != ':' &&
		       out[i + 1 + name.n] != '\r')
			name.n++;
		struct egr_span head6 = {name.p, name.n < 6 ? name.n : 6};
		if (egr_span_is(head6, "proxy-") || egr_span_is(name, "proxy"))
			__builtin_trap();
		hosts += egr_span_is(name, "host");
	}
	if (hosts != 1)
		__builtin_trap();
	free(out);
}

static void check_chunked(const char *p, size_t n)
{
	struct egr_chunked whole, bytes;
	memset(&whole, 0, sizeof(whole));
	memset(&bytes, 0, sizeof(bytes));
	bool done_whole = false, done_bytes = false;
	const char *why;
	ssize_t a = egr_chunked_feed(&whole, p, n, &done_whole, &why);
	ssize_t b = 0;
	for (size_t i = 0; i < n && !done_bytes; i++) {
		ssize_t r = egr_chunked_feed(&bytes, p + i, 1, &done_bytes, &why);
		if (r < 0) {
			b = -1;
			break;
		}
		b += r;
	}
	if (a > (ssize_t)n || a != b || (a >= 0 && done_whole != done_bytes))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct egr_limits lim = {2048, 512};
	char *buf = malloc(size + 1);
	memcpy(buf, data, size);
	const char *p = buf, *why = NULL;
	struct egr_request req;
	int r = egr_parse_request(&p, buf + size, &lim, &req, &why);
	if (r == 1) {
		size_t used = (size_t)(p - buf);
		if (used < 4 || used > size || memcmp(p - 4, "\r\n\r\n", 4) != 0)
			__builtin_trap();
	} else if (p != buf || (r < 0 && why == NULL)) {
		__builtin_trap();
	}

	/* the scan, in pieces cut where the input says */
	struct egr_scan sc;
	memset(&sc, 0, sizeof(sc));
	size_t head_len = 0, fed = 0;
	int s = 0;
	unsigned step = size > 0 ? (unsigned)data[0] % 7 + 1 : 1;
	while (s == 0 && fed < size) {
		fed = fed + step > size ? size : fed + step;
		s = egr_scan_head(&sc, buf, fed, &lim, &head_len, &why);
	}
	if (r == 1 && (s != 1 || head_len != (size_t)(p - buf)))
		__builtin_trap();
	if (s == 1 && r == 0)
		__builtin_trap();
	if (s < 0 && r == 1)
		__builtin_trap();

	if (r == 1 && req.kind == EGR_REQ_HTTP)
		check_forward(&req, &lim);
	if (r == 1)
		check_chunked(p, size - (size_t)(p - buf));
	else
		check_chunked(buf, size);

	const char *name;
	size_t name_len;
	if (egr_tls_sni(data, size, &name, &name_len, &why) == 1 &&
	    (name < (const char *)data || name + name_len > (const char *)data + size))
		__builtin_trap();
	free(buf);
	return 0;
}
