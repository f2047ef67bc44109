/* Records: JSON lines on standard output, whole lines only, gathered over
 * one pass of the event loop and written with one write. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "egress/egress.h"

struct jbuf {
	char *p;
	size_t n, cap;
	bool full;
};

static void jraw(struct jbuf *b, const char *s, size_t n)
{
	if (b->full || n > b->cap - b->n) {
		b->full = true;
		return;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
}

static void jlit(struct jbuf *b, const char *s)
{
	jraw(b, s, strlen(s));
}

/* A JSON string. Bytes outside printable ASCII become \u00XX, so the line
 * is valid JSON (and ASCII) whatever a peer managed to put in a field. */
static void jstr(struct jbuf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	if (s == NULL) {
		jlit(b, "null");
		return;
	}
	jlit(b, "\"");
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			char e[2] = {'\\', (char)c};
			jraw(b, e, 2);
		} else if (c < 0x20 || c >= 0x7f) {
			char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
			jraw(b, e, 6);
		} else {
			jraw(b, (const char *)&c, 1);
		}
	}
	jlit(b, "\"");
}

static void juint(struct jbuf *b, uint64_t v)
{
	char d[24];
	size_t n = 0;
	do {
		d[sizeof(d) - 1 - n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v > 0);
	jraw(b, d + sizeof(d) - n, n);
}

static void jport(struct jbuf *b, int port)
{
	if (port < 0)
		jlit(b, "null");
	else
		juint(b, (uint64_t)port);
}

/* NUL after the line (not counted), so tests can compare it as a string */
static int terminate(struct jbuf *b)
{
	jraw(b, "", 1);
	return b->full ? -1 : (int)b->n - 1;
}

int egr_format_attempt(char *buf, size_t cap, const char *method, const char *host, int port,
                       const char *address, bool allowed, const char *reason)
{
	struct jbuf b = {buf, 0, cap, false};
	jlit(&b, "{\"event\":\"attempt\",\"method\":");
	jstr(&b, method);
	jlit(&b, ",\"host\":");
	jstr(&b, host);
	jlit(&b, ",\"port\":");
	jport(&b, port);
	jlit(&b, ",\"address\":");
	jstr(&b, address);
	jlit(&b, allowed ? ",\"allowed\":true,\"reason\":" : ",\"allowed\":false,\"reason\":");
	jstr(&b, reason);
	jlit(&b, "}\n");
	return terminate(&b);
}

int egr_format_close(char *buf, size_t cap, const char *host, int port, uint64_t bytes_up,
                     uint64_t bytes_down, uint64_t ms)
{
	struct jbuf b = {buf, 0, cap, false};
	jlit(&b, "{\"event\":\"close\",\"host\":");
	jstr(&b, host);
	jlit(&b, ",\"port\":");
	jport(&b, port);
	jlit(&b, ",\"bytes_up\":");
	juint(&b, bytes_up);
	jlit(&b, ",\"bytes_down\":");
	juint(&b, bytes_down);
	jlit(&b, ",\"ms\":");
	juint(&b, ms);
	jlit(&b, "}\n");
	return terminate(&b);
}

/* Standard output is a pipe to mcpgate (through the runtime): a reader
 * that lags makes the proxy wait, never drops a line. A descriptor someone
 * made non-blocking is waited on with poll, a minute at most per line; only a
 * reader that is gone (or that stalled that long) loses lines, and stderr
 * says how many. */
#define EMIT_WAIT_MS 60000

static unsigned long long dropped;

int egr_format_limit(char *buf, size_t cap, const char *host, int port, uint64_t session_bytes_up,
                     uint64_t max_bytes_up)
{
	struct jbuf b = {buf, 0, cap, false};
	jlit(&b, "{\"event\":\"limit\",\"host\":");
	jstr(&b, host);
	jlit(&b, ",\"port\":");
	jport(&b, port);
	jlit(&b, ",\"session_bytes_up\":");
	juint(&b, session_bytes_up);
	jlit(&b, ",\"max_bytes_up\":");
	juint(&b, max_bytes_up);
	jlit(&b, "}\n");
	return terminate(&b);
}

static void emit(const char *line, size_t n)
{
	size_t off = 0;
	while (off < n) {
		ssize_t w = write(STDOUT_FILENO, line + off, n - off);
		if (w > 0) {
			off += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			struct pollfd pfd = {.fd = STDOUT_FILENO, .events = POLLOUT};
			int r = poll(&pfd, 1, EMIT_WAIT_MS);
			if (r > 0 || (r < 0 && errno == EINTR))
				continue;
		}
		/* the reader is gone (-lifeline ends us soon) or stalled */
		if (dropped++ == 0)
			fprintf(stderr, "mcpgate-egress: standard output: %s: records are lost\n",
			        w < 0 && errno != EAGAIN ? strerror(errno)
			                                 : "no progress in a minute");
		return;
	}
}

/* method <= 31, host <= 253, address <= 45, reason <= ~400 bytes: even
 * with every byte escaped six-fold this fits */
#define LINE_MAX_BYTES 8192

/* The lines of one pass of the loop: a write each was a tenth of a short
 * tunnel's system calls. Flushed at the end of each pass (egr_log_flush),
 * and sooner when full. */
static char pending[64u << 10];
static size_t npending;

void egr_log_flush(void)
{
	if (npending > 0)
		emit(pending, npending);
	npending = 0;
}

static void queue(const char *line, int n)
{
	if (n < 0) {
		/* every field is bounded well under the buffer; this is a broken invariant */
		fputs("mcpgate-egress: record too long, dropped\n", stderr);
		return;
	}
	if ((size_t)n > sizeof(pending) - npending)
		egr_log_flush();
	memcpy(pending + npending, line, (size_t)n);
	npending += (size_t)n;
}

void egr_log_attempt(const char *method, const char *host, int port, const char *address,
                     bool allowed, const char *reason)
{
	char line[LINE_MAX_BYTES];
	queue(line,
	      egr_format_attempt(line, sizeof(line), method, host, port, address, allowed, reason));
}

void egr_log_close(const char *host, int port, uint64_t bytes_up, uint64_t bytes_down, uint64_t ms)
{
	char line[LINE_MAX_BYTES];
	queue(line, egr_format_close(line, sizeof(line), host, port, bytes_up, bytes_down, ms));
}

void egr_log_limit(const char *host, int port, uint64_t session_bytes_up, uint64_t max_bytes_up)
{
	char line[LINE_MAX_BYTES];
	queue(line,
	      egr_format_limit(line, sizeof(line), host, port, session_bytes_up, max_bytes_up));
}
