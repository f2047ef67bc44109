/* HTTP/1.x request parsing: see parse.h for the contracts. */
#define _GNU_SOURCE
#include "egress/parse.h"

#include <string.h>

static bool is_tchar(unsigned char c)
{
	if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
		return true;
	return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

bool egr_span_is(struct egr_span s, const char *word)
{
	size_t n = strlen(word);
	if (s.n != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (lower(s.p[i]) != word[i])
			return false;
	return true;
}

static bool span_has_prefix(struct egr_span s, const char *word)
{
	size_t n = strlen(word);
	if (s.n < n)
		return false;
	struct egr_span head = {s.p, n};
	return egr_span_is(head, word);
}

int egr_scan_head(struct egr_scan *sc, const char *buf, size_t len, const struct egr_limits *lim,
                  size_t *head_len, const char **why)
{
	size_t i = sc->off;
	for (; i < len; i++) {
		char c = buf[i];
		if (c == '\0') {
			*why = "NUL in header section";
			return -1;
		}
		if (c == '\n') {
			*why = "bare LF in header section";
			return -1;
		}
		if (!sc->first_done && i - sc->line_start > lim->max_request_line) {
			*why = "request line over the cap";
			return -1;
		}
		if (i + 2 > lim->max_header_bytes) {
			*why = "header section over the cap";
			return -1;
		}
		if (c != '\r')
			continue;
		if (i + 1 >= len)
			break; /* wait for the byte after CR */
		if (buf[i + 1] != '\n') {
			*why = "bare CR in header section";
			return -1;
		}
		size_t line_len = i - sc->line_start;
		if (!sc->first_done) {
			if (line_len == 0) {
				*why = "empty request line";
				return -1;
			}
			sc->first_done = true;
		} else if (line_len == 0) {
			sc->off = i + 2;
			*head_len = i + 2;
			return 1;
		}
		i++;
		sc->line_start = i + 1;
	}
	sc->off = i;
	return 0;
}

/* One line ending in CRLF starting at s: 1 with *len (without CRLF), 0 when
 * incomplete, -1 on NUL, bare CR, bare LF or a line longer than cap. */
static int next_line(const char *s, size_t avail, size_t cap, size_t *len, const char **why,
                     const char *over_cap)
{
	for (size_t i = 0; i < avail; i++) {
		if (s[i] == '\0') {
			*why = "NUL in header section";
			return -1;
		}
		if (s[i] == '\n') {
			*why = "bare LF in header section";
			return -1;
		}
		if (i > cap) {
			*why = over_cap;
			return -1;
		}
		if (s[i] == '\r') {
			if (i + 1 >= avail)
				return 0;
			if (s[i + 1] != '\n') {
				*why = "bare CR in header section";
				return -1;
			}
			*len = i;
			return 1;
		}
	}
	return 0;
}

static int parse_request_line(const char *s, size_t n, struct egr_request *req, const char **why)
{
	size_t i = 0;
	while (i < n && is_tchar((unsigned char)s[i]))
		i++;
	if (i == 0 || i >= n || s[i] != ' ') {
		*why = "bad request line (want METHOD SP target SP HTTP/1.1)";
		return -1;
	}
	if (i > EGR_METHOD_MAX) {
		*why = "method name too long";
		return -1;
	}
	memcpy(req->method, s, i);
	req->method[i] = '\0';
	req->have_method = true;
	req->kind = strcmp(req->method, "CONNECT") == 0 ? EGR_REQ_CONNECT : EGR_REQ_HTTP;
	size_t t0 = ++i;
	while (i < n && (unsigned char)s[i] > 0x20 && (unsigned char)s[i] < 0x7f)
		i++;
	size_t tn = i - t0;
	if (tn == 0 || i >= n || s[i] != ' ') {
		*why = "bad request line (want METHOD SP target SP HTTP/1.1)";
		return -1;
	}
	i++;
	if (n - i == 8 && memcmp(s + i, "HTTP/1.", 7) == 0 &&
	    (s[i + 7] == '0' || s[i + 7] == '1')) {
		req->minor = s[i + 7] - '0';
	} else {
		*why = "bad HTTP version (want HTTP/1.0 or HTTP/1.1)";
		return -1;
	}
	const char *t = s + t0;
	if (req->kind == EGR_REQ_CONNECT) {
		if (egr_authority_parse(t, tn, 0, &req->host, &req->port, why) < 0)
			return -1;
		req->have_target = true;
		return 0;
	}
	if (t[0] == '/' || (tn == 1 && t[0] == '*')) {
		*why = "origin-form request: this is a proxy, not a web server";
		return -1;
	}
	struct egr_span target = {t, tn};
	if (span_has_prefix(target, "https://")) {
		*why = "https:// target: use CONNECT for TLS";
		return -1;
	}
	if (!span_has_prefix(target, "http://")) {
		*why = "bad request target (want http://host[:port]/path)";
		return -1;
	}
	const char *a = t + 7;
	size_t an = 0;
	while (7 + an < tn && a[an] != '/' && a[an] != '?' && a[an] != '#')
		an++;
	if (7 + an == tn || a[an] != '/') {
		*why = "absolute URI without a path";
		return -1;
	}
	if (memchr(a + an, '#', tn - 7 - an) != NULL) {
		*why = "fragment in request target";
		return -1;
	}
	if (egr_authority_parse(a, an, 80, &req->host, &req->port, why) < 0)
		return -1;
	req->have_target = true;
	req->path.p = a + an;
	req->path.n = tn - 7 - an;
	return 0;
}

static int parse_header_line(const char *s, size_t n, struct egr_header *h, const char **why)
{
	if (s[0] == ' ' || s[0] == '\t') {
		*why = "obs-fold (a header line starting with whitespace)";
		return -1;
	}
	size_t i = 0;
	while (i < n && is_tchar((unsigned char)s[i]))
		i++;
	if (i < n && (s[i] == ' ' || s[i] == '\t')) {
		*why = "whitespace before a colon";
		return -1;
	}
	if (i == 0 || i >= n || s[i] != ':') {
		*why = "bad header field name";
		return -1;
	}
	h->name.p = s;
	h->name.n = i;
	i++;
	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	size_t end = n;
	while (end > i && (s[end - 1] == ' ' || s[end - 1] == '\t'))
		end--;
	for (size_t k = i; k < end; k++) {
		unsigned char c = (unsigned char)s[k];
		if ((c < 0x20 && c != '\t') || c == 0x7f) {
			*why = "control character in a header value";
			return -1;
		}
	}
	h->value.p = s + i;
	h->value.n = end - i;
	return 0;
}

static int check_framing(struct egr_request *req, const char **why)
{
	const struct egr_header *cl = NULL, *te = NULL;
	for (size_t i = 0; i < req->nheaders; i++) {
		const struct egr_header *h = &req->headers[i];
		if (egr_span_is(h->name, "content-length")) {
			if (cl != NULL) {
				*why = "duplicate Content-Length";
				return -1;
			}
			cl = h;
		} else if (egr_span_is(h->name, "transfer-encoding")) {
			if (te != NULL) {
				*why = "duplicate Transfer-Encoding";
				return -1;
			}
			te = h;
		}
	}
	req->body = EGR_BODY_NONE;
	if (cl != NULL && te != NULL) {
		*why = "Content-Length together with Transfer-Encoding";
		return -1;
	}
	if (te != NULL) {
		if (!egr_span_is(te->value, "chunked")) {
			*why = "Transfer-Encoding other than chunked";
			return -1;
		}
		if (req->minor == 0) {
			*why = "Transfer-Encoding in an HTTP/1.0 request";
			return -1;
		}
		req->body = EGR_BODY_CHUNKED;
	}
	if (cl != NULL) {
		/* 2^53: any larger body is an attack, not an upload */
		if (egr_parse_uint(cl->value.p, cl->value.n, 0, (uint64_t)1 << 53,
		                   &req->content_length) < 0) {
			*why = "bad Content-Length";
			return -1;
		}
		req->body = req->content_length > 0 ? EGR_BODY_LENGTH : EGR_BODY_NONE;
	}
	if (req->kind == EGR_REQ_CONNECT && req->body != EGR_BODY_NONE) {
		*why = "CONNECT with a body";
		return -1;
	}
	return 0;
}

static int check_host_header(struct egr_request *req, const char **why)
{
	const struct egr_header *host = NULL;
	for (size_t i = 0; i < req->nheaders; i++) {
		if (!egr_span_is(req->headers[i].name, "host"))
			continue;
		if (host != NULL) {
			*why = "duplicate Host";
			return -1;
		}
		host = &req->headers[i];
	}
	if (host == NULL)
		return 0;
	struct egr_host h;
	uint16_t port;
	const char *ignored;
	/* CONNECT's Host may leave the port out; it then names the target's */
	uint16_t default_port = req->kind == EGR_REQ_CONNECT ? req->port : 80;
	if (egr_authority_parse(host->value.p, host->value.n, default_port, &h, &port, &ignored) <
	        0 ||
	    h.kind != req->host.kind || strcmp(h.name, req->host.name) != 0 || port != req->port) {
		*why = "Host header does not match the request target";
		return -1;
	}
	return 0;
}

int egr_parse_request(const char **p, const char *end, const struct egr_limits *lim,
                      struct egr_request *req, const char **why)
{
	memset(req, 0, sizeof(*req));
	const char *s = *p;
	size_t avail = (size_t)(end - s), off = 0, len;
	if (avail > lim->max_header_bytes)
		avail = lim->max_header_bytes;
	int r = next_line(s, avail, lim->max_request_line, &len, why, "request line over the cap");
	if (r <= 0) {
		if (r == 0 && avail == lim->max_header_bytes) {
			*why = "header section over the cap";
			return -1;
		}
		return r;
	}
	if (len == 0) {
		*why = "empty request line";
		return -1;
	}
	if (parse_request_line(s, len, req, why) < 0)
		return -1;
	off = len + 2;
	for (;;) {
		r = next_line(s + off, avail - off, avail - off, &len, why,
		              "header section over the cap");
		if (r < 0)
			return -1;
		if (r == 0) {
			if (avail == lim->max_header_bytes) {
				*why = "header section over the cap";
				return -1;
			}
			return 0;
		}
		const char *line = s + off;
		off += len + 2;
		if (len == 0)
			break;
		if (req->nheaders == EGR_MAX_HEADERS) {
			*why = "too many header fields";
			return -1;
		}
		if (parse_header_line(line, len, &req->headers[req->nheaders], why) < 0)
			return -1;
		req->nheaders++;
	}
	if (check_framing(req, why) < 0 || check_host_header(req, why) < 0)
		return -1;
	*p = s + off;
	return 1;
}

static bool is_hop_by_hop(const struct egr_request *req, struct egr_span name)
{
	/* "proxy" too: CGI turns it into HTTP_PROXY (httpoxy) */
	static const char *const fixed[] = {"connection", "keep-alive", "te",   "trailer",
	                                    "upgrade",    "host",       "proxy"};
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (egr_span_is(name, fixed[i]))
			return true;
	if (span_has_prefix(name, "proxy-"))
		return true;
	/* and every field that a Connection header names */
	for (size_t i = 0; i < req->nheaders; i++) {
		const struct egr_header *h = &req->headers[i];
		if (!egr_span_is(h->name, "connection"))
			continue;
		size_t k = 0;
		while (k < h->value.n) {
			while (k < h->value.n && (h->value.p[k] == ',' || h->value.p[k] == ' ' ||
			                          h->value.p[k] == '\t'))
				k++;
			size_t t0 = k;
			while (k < h->value.n && h->value.p[k] != ',' && h->value.p[k] != ' ' &&
			       h->value.p[k] != '\t')
				k++;
			if (k > t0 && name.n == k - t0) {
				bool same = true;
				for (size_t j = 0; j < name.n && same; j++)
					same = lower(name.p[j]) == lower(h->value.p[t0 + j]);
				if (same)
					return true;
			}
		}
	}
	return false;
}

struct out {
	char *p;
	size_t n, cap;
	bool full;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->full || n > o->cap - o->n) {
		o->full = true;
		return;
	}
	memcpy(o->p + o->n, s, n);
	o->n += n;
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

ssize_t egr_build_forward(const struct egr_request *req, char *buf, size_t cap)
{
	struct out o = {buf, 0, cap, false};
	puts_(&o, req->method);
	puts_(&o, " ");
	put(&o, req->path.p, req->path.n);
	puts_(&o, " HTTP/1.1\r\nHost: ");
	if (req->host.kind == EGR_HOST_IPV6)
		puts_(&o, "[");
	puts_(&o, req->host.name);
	if (req->host.kind == EGR_HOST_IPV6)
		puts_(&o, "]");
	if (req->port != 80) {
		char port[8];
		size_t n = 0;
		char digits[6];
		unsigned v = req->port;
		do {
			digits[n++] = (char)('0' + v % 10);
			v /= 10;
		} while (v > 0);
		port[0] = ':';
		for (size_t i = 0; i < n; i++)
			port[1 + i] = digits[n - 1 - i];
		put(&o, port, n + 1);
	}
	puts_(&o, "\r\n");
	for (size_t i = 0; i < req->nheaders; i++) {
		const struct egr_header *h = &req->headers[i];
		if (is_hop_by_hop(req, h->name))
			continue;
		put(&o, h->name.p, h->name.n);
		puts_(&o, ": ");
		put(&o, h->value.p, h->value.n);
		puts_(&o, "\r\n");
	}
	puts_(&o, "Connection: close\r\n\r\n");
	return o.full ? -1 : (ssize_t)o.n;
}

enum {
	CH_SIZE,      /* hex digits of a chunk size */
	CH_EXT,       /* a chunk extension, up to CR */
	CH_SIZE_LF,   /* LF after the size line */
	CH_DATA,      /* chunk data */
	CH_DATA_CR,   /* CR after chunk data */
	CH_DATA_LF,   /* LF after chunk data */
	CH_TRAILER,   /* start of a trailer line (or the final CRLF) */
	CH_TRAILER_X, /* inside a trailer line */
	CH_TRAILER_LF,
	CH_FINAL_LF,
	CH_DONE,
};

#define CH_LINE_MAX    4096
#define CH_TRAILER_MAX 16384

ssize_t egr_chunked_feed(struct egr_chunked *c, const char *p, size_t n, bool *done,
                         const char **why)
{
	size_t i = 0;
	*done = c->state == CH_DONE;
	while (i < n && c->state != CH_DONE) {
		unsigned char ch = (unsigned char)p[i];
		switch (c->state) {
		case CH_SIZE:
			if ((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') ||
			    (ch >= 'A' && ch <= 'F')) {
				if (++c->digits > 15) {
					*why = "chunk size too large";
					return -1;
				}
				unsigned d = ch <= '9'   ? ch - '0'
				             : ch >= 'a' ? ch - 'a' + 10
				                         : ch - 'A' + 10;
				c->size = c->size * 16 + d;
			} else if (c->digits > 0 && (ch == ';' || ch == '\r')) {
				c->state = ch == ';' ? CH_EXT : CH_SIZE_LF;
				c->line = 0;
			} else {
				*why = "bad chunk size";
				return -1;
			}
			i++;
			break;
		case CH_EXT:
			if (ch == '\r') {
				c->state = CH_SIZE_LF;
			} else if ((ch < 0x20 && ch != '\t') || ch == 0x7f ||
			           ++c->line > CH_LINE_MAX) {
				*why = "bad chunk extension";
				return -1;
			}
			i++;
			break;
		case CH_SIZE_LF:
			if (ch != '\n') {
				*why = "bare CR in chunked body";
				return -1;
			}
			i++;
			c->digits = 0;
			c->state = c->size == 0 ? CH_TRAILER : CH_DATA;
			break;
		case CH_DATA: {
			size_t take = n - i;
			if (take > c->size)
				take = (size_t)c->size;
			c->size -= take;
			i += take;
			if (c->size == 0)
				c->state = CH_DATA_CR;
			break;
		}
		case CH_DATA_CR:
		case CH_DATA_LF:
			if (ch != (c->state == CH_DATA_CR ? '\r' : '\n')) {
				*why = "chunk data not followed by CRLF";
				return -1;
			}
			c->state = c->state == CH_DATA_CR ? CH_DATA_LF : CH_SIZE;
			i++;
			break;
		case CH_TRAILER:
		case CH_TRAILER_X:
			if (++c->trailers > CH_TRAILER_MAX) {
				*why = "trailer section over the cap";
				return -1;
			}
			if (ch == '\r') {
				c->state = c->state == CH_TRAILER ? CH_FINAL_LF : CH_TRAILER_LF;
			} else if (ch == '\0' || ch == '\n') {
				*why = "bad trailer line";
				return -1;
			} else {
				c->state = CH_TRAILER_X;
			}
			i++;
			break;
		case CH_TRAILER_LF:
		case CH_FINAL_LF:
			if (ch != '\n') {
				*why = "bare CR in trailer section";
				return -1;
			}
			c->state = c->state == CH_FINAL_LF ? CH_DONE : CH_TRAILER;
			i++;
			break;
		default:
			*why = "chunked state broken";
			return -1;
		}
	}
	*done = c->state == CH_DONE;
	return (ssize_t)i;
}
