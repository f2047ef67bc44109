/* HTTP/1.x request parsing for mcpgate-egress: strict, bounded, no
 * allocation. A parser takes `const char **p` and the end of the bytes it may
 * read, and moves *p only when it succeeds, so callers chain parsers and
 * nothing is ever half-consumed. Reasons returned through `why` are static
 * strings, safe to put in a response body and a record. */
#ifndef MG_EGRESS_PARSE_H
#define MG_EGRESS_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "egress/addr.h"

struct egr_limits {
	size_t
	    max_header_bytes; /* the whole header section, request line and final CRLF included */
	size_t max_request_line; /* the request line without its CRLF */
};

/* Incremental scan of the header section as bytes arrive: refuses NUL, bare
 * CR, bare LF, an empty request line, a request line over the cap and a
 * header section over the cap as soon as they are seen, and finds the end
 * (the empty line). Each byte is looked at once. Zero the struct to start. */
struct egr_scan {
	size_t off;        /* bytes examined so far */
	size_t line_start; /* offset of the current line */
	bool first_done;   /* the request line has ended */
};
/* 1: complete, *head_len is the header section's length; 0: need more
 * bytes; -1: malformed, *why says why. */
int egr_scan_head(struct egr_scan *sc, const char *buf, size_t len, const struct egr_limits *lim,
                  size_t *head_len, const char **why);

struct egr_span {
	const char *p;
	size_t n;
};

struct egr_header {
	struct egr_span name, value; /* value without surrounding whitespace */
};

#define EGR_MAX_HEADERS 128
#define EGR_METHOD_MAX  31

enum egr_req_kind {
	EGR_REQ_CONNECT, /* CONNECT host:port */
	EGR_REQ_HTTP,    /* METHOD http://host[:port]/path */
};

enum egr_body {
	EGR_BODY_NONE,
	EGR_BODY_LENGTH,  /* Content-Length */
	EGR_BODY_CHUNKED, /* Transfer-Encoding: chunked */
};

/* A parsed request. Spans point into the caller's bytes, which must outlive
 * the struct. `method`, `host` and `port` are filled as soon as they are
 * known, so a refusal can still name them (`have_method`, `have_target`). */
struct egr_request {
	enum egr_req_kind kind;
	bool have_method, have_target;
	char method[EGR_METHOD_MAX + 1];
	int minor; /* HTTP/1.minor: 0 or 1 */
	struct egr_host host;
	uint16_t port;
	struct egr_span path; /* HTTP: the absolute path and query sent upstream */
	struct egr_header headers[EGR_MAX_HEADERS];
	size_t nheaders;
	enum egr_body body;
	uint64_t content_length;
};

/* Parse one request's header section from *p (up to end). Returns 1 and
 * moves *p past the empty line when the request is complete and valid; 0
 * when more bytes are needed (*p untouched); -1 when it is malformed (*p
 * untouched, *why set). Refuses: anything egr_scan_head refuses, a request
 * line other than `METHOD SP target SP HTTP/1.0|1.1`, origin-form and any
 * target but `http://authority/path` (or `host:port` for CONNECT), userinfo,
 * IPv6 zone ids, fragments, obs-fold, whitespace before a colon, control
 * characters in values, duplicate Host, a Host that differs from the
 * target, duplicate or non-decimal Content-Length, Transfer-Encoding other
 * than exactly `chunked` or twice or with Content-Length or in HTTP/1.0, a
 * CONNECT with a body, more than EGR_MAX_HEADERS fields. */
int egr_parse_request(const char **p, const char *end, const struct egr_limits *lim,
                      struct egr_request *req, const char **why);

/* The header section sent upstream for a plain HTTP request: origin-form
 * request line (always HTTP/1.1), Host rewritten from the target, every
 * hop-by-hop field (Connection and the fields it names, Keep-Alive, TE,
 * Trailer, Upgrade) and every Proxy-* field dropped, `Connection: close`
 * added. Returns the length written, or -1 when it does not fit in cap. */
ssize_t egr_build_forward(const struct egr_request *req, char *out, size_t cap);

/* Bytes of a chunked body as they pass: says how many belong to the body
 * and when it has ended, so nothing after it (a smuggled second request)
 * reaches the upstream. Zero the struct to start. */
struct egr_chunked {
	int state;
	uint64_t size;   /* of the current chunk, then what is left of it */
	unsigned digits; /* hex digits read in the size */
	size_t line;     /* bytes in the current extension or trailer line */
	size_t trailers; /* bytes of trailer section so far */
};
/* Feed n bytes. Returns how many of them belong to the body (the rest is
 * past its end) and sets *done when the body is complete; -1 when the
 * framing is malformed (*why set). */
ssize_t egr_chunked_feed(struct egr_chunked *c, const char *p, size_t n, bool *done,
                         const char **why);

/* Case-insensitive comparison of a span with a NUL-terminated lower-case word. */
bool egr_span_is(struct egr_span s, const char *word);

#endif
