/* Newline framing with a cap on the line length.
 *
 * The unread bytes are buf[start, end). Lines are taken by moving start, so
 * many lines in one read cost no copying; the unread tail is moved to the
 * front only when new data does not fit behind it. [start, scan) is known to
 * hold no newline, so a long line arriving in small pieces is scanned once. */
#include "internal/jsonrpc/jsonrpc.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal/base/xalloc.h"

/* An empty buffer larger than this is given back rather than kept, so one
 * long line does not pin its memory for the life of a connection. */
#define READER_KEEP ((size_t)256 << 10)
#define READER_MIN  ((size_t)4096)

int64_t rpc_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void rpc_reader_init(struct rpc_reader *r, size_t line_max)
{
	memset(r, 0, sizeof(*r));
	r->line_max = line_max != 0 ? line_max : RPC_LINE_MAX_DEFAULT;
}

void rpc_reader_free(struct rpc_reader *r)
{
	if (r == NULL)
		return;
	free(r->buf);
	r->buf = NULL;
	r->cap = r->start = r->end = r->scan = 0;
}

static size_t add_sat(size_t a, size_t b)
{
	return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

/* Called where no line handed out earlier is still valid. */
static void reader_settle(struct rpc_reader *r)
{
	if (r->start != r->end)
		return;
	r->start = r->end = r->scan = 0;
	if (r->cap > READER_KEEP) {
		free(r->buf);
		r->buf = NULL;
		r->cap = 0;
	}
}

/* Make room for n more bytes at buf + end. */
static void reader_reserve(struct rpc_reader *r, size_t n)
{
	reader_settle(r);
	if (r->cap - r->end >= n)
		return;
	size_t live = r->end - r->start;
	if (r->start > 0) {
		memmove(r->buf, r->buf + r->start, live);
		r->scan -= r->start;
		r->end = live;
		r->start = 0;
		if (r->cap - r->end >= n)
			return;
	}
	if (n > SIZE_MAX - live)
		abort(); /* no read or feed is this large */
	size_t need = live + n;
	size_t cap = r->cap != 0 ? r->cap : READER_MIN;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	/* a partial line is at most line_max + 1 bytes ("\r" pending) */
	size_t bound = add_sat(add_sat(r->line_max, 2), n);
	if (cap > bound)
		cap = bound > need ? bound : need;
	r->buf = xrealloc(r->buf, cap);
	r->cap = cap;
}

static char *find_newline(const struct rpc_reader *r)
{
	if (r->scan == r->end)
		return NULL;
	return memchr(r->buf + r->scan, '\n', r->end - r->scan);
}

/* The line being received will be longer than line_max. */
static bool tail_too_long(const struct rpc_reader *r)
{
	size_t live = r->end - r->start;
	if (live != 0 && r->buf[r->end - 1] == '\r')
		live--;
	return live > r->line_max;
}

/* No newline is buffered and the partial line is already too long: drop it
 * and the rest of it as it comes. */
static void start_discarding(struct rpc_reader *r)
{
	r->overflow_bytes = r->end - r->start;
	r->discarding = true;
	r->start = r->end = r->scan = 0;
	reader_settle(r);
}

/* n new bytes were placed at buf + end. */
static void reader_commit(struct rpc_reader *r, size_t n)
{
	char *p = r->buf + r->end;
	if (r->discarding) {
		char *nl = memchr(p, '\n', n);
		if (nl == NULL)
			return;
		size_t skip = (size_t)(nl - p) + 1;
		memmove(p, p + skip, n - skip);
		n -= skip;
		r->discarding = false;
	}
	r->end += n;
	/* Catch an endless first line even if the caller feeds without taking
	 * lines; when a newline is buffered, rpc_reader_next() checks the tail. */
	if (find_newline(r) != NULL)
		return;
	r->scan = r->end;
	if (tail_too_long(r)) {
		start_discarding(r);
		r->overflow_pending = true;
	}
}

void rpc_reader_feed(struct rpc_reader *r, const char *data, size_t n)
{
	if (n == 0)
		return;
	if (r->discarding) {
		const char *nl = memchr(data, '\n', n);
		if (nl == NULL)
			return;
		size_t skip = (size_t)(nl - data) + 1;
		data += skip;
		n -= skip;
		r->discarding = false;
	}
	if (n == 0)
		return;
	reader_reserve(r, n);
	memcpy(r->buf + r->end, data, n);
	reader_commit(r, n);
}

ssize_t rpc_reader_read_fd(struct rpc_reader *r, int fd, struct mg_err **err)
{
	reader_reserve(r, RPC_READ_CHUNK);
	ssize_t got;
	do
		got = read(fd, r->buf + r->end, RPC_READ_CHUNK);
	while (got < 0 && errno == EINTR);
	if (got < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return RPC_AGAIN;
		return mg_err_sys(err, errno, "read");
	}
	if (got > 0)
		reader_commit(r, (size_t)got);
	return got;
}

int rpc_reader_next(struct rpc_reader *r, const char **line, size_t *len)
{
	if (r->overflow_pending) {
		r->overflow_pending = false;
		return RPC_OVERFLOW;
	}
	reader_settle(r);
	for (;;) {
		char *nl = find_newline(r);
		if (nl == NULL) {
			r->scan = r->end;
			if (!tail_too_long(r))
				return 0;
			start_discarding(r);
			return RPC_OVERFLOW;
		}
		size_t first = r->start;
		size_t n = (size_t)(nl - (r->buf + first));
		r->start = r->scan = (size_t)(nl - r->buf) + 1;
		if (n != 0 && r->buf[first + n - 1] == '\r')
			n--;
		r->buf[first + n] = '\0';
		if (n == 0)
			continue;
		if (n > r->line_max) {
			r->overflow_bytes = n;
			return RPC_OVERFLOW;
		}
		*line = r->buf + first;
		*len = n;
		return 1;
	}
}

size_t rpc_reader_overflow_bytes(const struct rpc_reader *r)
{
	return r->overflow_bytes;
}

size_t rpc_reader_buffered(const struct rpc_reader *r)
{
	return r->end - r->start;
}

size_t rpc_reader_capacity(const struct rpc_reader *r)
{
	return r->cap;
}
