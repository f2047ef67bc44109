/* One JSON-RPC connection over two non-blocking fds.
 *
 * Pending requests sit in a hash table by id (ids are sequential, so the low
 * bits spread them evenly) and, when they have a deadline, in a binary heap by
 * deadline, so expiry and lookup stay cheap with thousands outstanding. The
 * write queue is a ring: partial writes never move bytes around. */
#include "internal/jsonrpc/jsonrpc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal/base/log.h"
#include "internal/base/num.h"
#include "internal/base/xalloc.h"
#include "internal/proc/loop.h"

#define NO_HEAP       SIZE_MAX
#define FIRST_BUCKETS 16
/* bytes one rpc_peer_read() takes before giving other fds a turn */
#define READ_BUDGET ((size_t)1 << 20)
/* protocol errors logged per peer by the default handlers before going quiet */
#define NOISE_BURST 10
/* an empty write queue larger than this is given back */
#define QUEUE_KEEP ((size_t)256 << 10)

struct rpc_pending {
	int64_t id;
	char *method;
	int64_t sent_ms;
	int64_t deadline_ms;
	rpc_done_cb cb;
	void *data;
	struct rpc_pending *next; /* hash chain */
	size_t heap_pos;          /* index in the deadline heap, or NO_HEAP */
};

struct rpc_peer {
	char *name;
	int in_fd;
	int out_fd;
	struct rpc_peer_config cfg; /* name points at our copy */
	struct rpc_reader reader;
	bool in_closed;
	bool reading;          /* inside rpc_peer_read(): no nested reads */
	mg_text_filter filter; /* every line sent passes it */
	void *filter_data;
	struct json_value *meta; /* merged into every request's params._meta, or NULL */
	unsigned noise;          /* protocol errors logged so far */
	int64_t first_read_ms;   /* when its first bytes came, or 0 */

	/* write queue: a ring of qcap bytes, qlen of them queued from qhead */
	char *q;
	size_t qcap;
	size_t qhead;
	size_t qlen;
	bool out_broken;
	int out_errno;
	bool told_broken; /* on_write_failed was called */

	/* attached to a loop: the events each fd is watched for (0: not watched) */
	struct loop *loop;
	uint32_t in_events, out_events;
	bool no_reading; /* rpc_peer_stop_reading() */
	bool paused;     /* rpc_peer_pause_reading() */

	/* what went through: bytes read, lines shed, and where each queued
	 * response ends in the stream of bytes queued (to count those not
	 * written yet) */
	uint64_t bytes_read;
	uint64_t shed;
	uint64_t queued_total, written_total;
	uint64_t *response_ends;
	size_t nresponse_ends, response_ends_cap;

	int64_t next_id;
	struct rpc_pending **buckets;
	size_t nbuckets;
	size_t npending;
	struct rpc_pending **heap;
	size_t heap_len;
	size_t heap_cap;
};

/* ---- pending table -------------------------------------------------------- */

static size_t bucket_of(const struct rpc_peer *p, int64_t id)
{
	return (size_t)((uint64_t)id & (p->nbuckets - 1));
}

static void table_grow(struct rpc_peer *p)
{
	size_t n = p->nbuckets != 0 ? p->nbuckets * 2 : FIRST_BUCKETS;
	struct rpc_pending **old = p->buckets;
	size_t oldn = p->nbuckets;
	p->buckets = xcalloc(n, sizeof(*p->buckets));
	p->nbuckets = n;
	for (size_t i = 0; i < oldn; i++) {
		struct rpc_pending *e = old[i];
		while (e != NULL) {
			struct rpc_pending *next = e->next;
			size_t b = bucket_of(p, e->id);
			e->next = p->buckets[b];
			p->buckets[b] = e;
			e = next;
		}
	}
	free(old);
}

static bool heap_before(const struct rpc_pending *a, const struct rpc_pending *b)
{
	return a->deadline_ms < b->deadline_ms ||
	       (a->deadline_ms == b->deadline_ms && a->id < b->id);
}

static void heap_set(struct rpc_peer *p, size_t i, struct rpc_pending *e)
{
	p->heap[i] = e;
	e->heap_pos = i;
}

static void heap_up(struct rpc_peer *p, size_t i)
{
	struct rpc_pending *e = p->heap[i];
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (!heap_before(e, p->heap[parent]))
			break;
		heap_set(p, i, p->heap[parent]);
		i = parent;
	}
	heap_set(p, i, e);
}

static void heap_down(struct rpc_peer *p, size_t i)
{
	struct rpc_pending *e = p->heap[i];
	for (;;) {
		size_t child = 2 * i + 1;
		if (child >= p->heap_len)
			break;
		if (child + 1 < p->heap_len && heap_before(p->heap[child + 1], p->heap[child]))
			child++;
		if (!heap_before(p->heap[child], e))
			break;
		heap_set(p, i, p->heap[child]);
		i = child;
	}
	heap_set(p, i, e);
}

static void heap_push(struct rpc_peer *p, struct rpc_pending *e)
{
	if (p->heap_len == p->heap_cap) {
		p->heap_cap = p->heap_cap != 0 ? p->heap_cap * 2 : 16;
		p->heap = xreallocarray(p->heap, p->heap_cap, sizeof(*p->heap));
	}
	heap_set(p, p->heap_len++, e);
	heap_up(p, e->heap_pos);
}

static void heap_remove(struct rpc_peer *p, struct rpc_pending *e)
{
	size_t i = e->heap_pos;
	e->heap_pos = NO_HEAP;
	struct rpc_pending *last = p->heap[--p->heap_len];
	if (i == p->heap_len)
		return;
	heap_set(p, i, last);
	heap_up(p, i);
	heap_down(p, last->heap_pos);
}

static void pending_insert(struct rpc_peer *p, struct rpc_pending *e)
{
	if (p->npending >= p->nbuckets)
		table_grow(p);
	size_t b = bucket_of(p, e->id);
	e->next = p->buckets[b];
	p->buckets[b] = e;
	p->npending++;
	e->heap_pos = NO_HEAP;
	if (e->deadline_ms != 0)
		heap_push(p, e);
}

/* Remove the entry with this id from the table and the heap. */
static struct rpc_pending *pending_take(struct rpc_peer *p, int64_t id)
{
	if (p->nbuckets == 0)
		return NULL;
	struct rpc_pending **link = &p->buckets[bucket_of(p, id)];
	while (*link != NULL && (*link)->id != id)
		link = &(*link)->next;
	struct rpc_pending *e = *link;
	if (e == NULL)
		return NULL;
	*link = e->next;
	e->next = NULL;
	p->npending--;
	if (e->heap_pos != NO_HEAP)
		heap_remove(p, e);
	return e;
}

static void pending_free(struct rpc_pending *e)
{
	if (e == NULL)
		return;
	free(e->method);
	free(e);
}

/* ---- logging of what the other side got wrong ----------------------------- */

static bool noise_ok(struct rpc_peer *p)
{
	if (p->noise < NOISE_BURST) {
		p->noise++;
		return true;
	}
	if (p->noise == NOISE_BURST) {
		p->noise++;
		mg_warn("%s: further protocol errors are not logged", p->name);
	}
	return false;
}

/* ---- write queue ---------------------------------------------------------- */

void rpc_peer_set_filter(struct rpc_peer *p, mg_text_filter fn, void *data)
{
	p->filter = fn;
	p->filter_data = data;
}

static int queue_raw(struct rpc_peer *p, const char *line, size_t len, size_t max,
                     struct mg_err **err);

/* Every line that leaves passes the filter, whichever way it was made. A
 * response may go past write_queue_max, into as much again: what the other
 * side asked for is never dropped while it may still read (its peer's owner
 * stops feeding the queue long before: the session's backpressure); any
 * other line past it is refused, and counted as shed. */
static int queue_append(struct rpc_peer *p, const char *line, size_t len, bool response,
                        struct mg_err **err)
{
	size_t max = p->cfg.write_queue_max;
	if (response)
		max = max > SIZE_MAX / 2 ? SIZE_MAX : max * 2;
	size_t clean_len = 0;
	char *clean =
	    p->filter != NULL && len > 0 ? p->filter(line, len, &clean_len, p->filter_data) : NULL;
	int r = clean == NULL ? queue_raw(p, line, len, max, err)
	                      : queue_raw(p, clean, clean_len, max, err);
	size_t queued = clean == NULL ? len : clean_len;
	free(clean);
	if (r < 0) {
		p->shed++;
		return -1;
	}
	p->queued_total += queued;
	if (response) {
		if (p->nresponse_ends == p->response_ends_cap) {
			p->response_ends_cap =
			    p->response_ends_cap > 0 ? 2 * p->response_ends_cap : 16;
			p->response_ends = xreallocarray(p->response_ends, p->response_ends_cap,
			                                 sizeof(*p->response_ends));
		}
		p->response_ends[p->nresponse_ends++] = p->queued_total;
	}
	return 0;
}

static int queue_raw(struct rpc_peer *p, const char *line, size_t len, size_t max,
                     struct mg_err **err)
{
	if (len == 0)
		return 0;
	if (len > max || p->qlen > max - len)
		return mg_err_set(err,
		                  "the write queue to %s is full (%zu bytes waiting, limit %zu)",
		                  p->name, p->qlen, max);
	if (p->qcap - p->qlen < len) {
		size_t cap = p->qcap != 0 ? p->qcap : 4096;
		while (cap < p->qlen + len)
			cap = cap > max / 2 ? max : cap * 2;
		if (cap > max)
			cap = max;
		char *q = xmalloc(cap);
		size_t first = p->qlen < p->qcap - p->qhead ? p->qlen : p->qcap - p->qhead;
		if (p->qlen != 0) {
			memcpy(q, p->q + p->qhead, first);
			memcpy(q + first, p->q, p->qlen - first);
		}
		free(p->q);
		p->q = q;
		p->qcap = cap;
		p->qhead = 0;
	}
	size_t tail = (p->qhead + p->qlen) % p->qcap;
	size_t first = len < p->qcap - tail ? len : p->qcap - tail;
	memcpy(p->q + tail, line, first);
	memcpy(p->q, line + first, len - first);
	p->qlen += len;
	return 0;
}

/* ---- on a loop: the peer's own watches ----------------------------------- */

static void on_fd(struct loop *loop, int fd, uint32_t events, void *data);

/* Watch fd for want, changing only what differs from *cur */
static void watch_set(struct rpc_peer *p, int fd, uint32_t *cur, uint32_t want)
{
	if (want == *cur)
		return;
	struct mg_err *err = NULL;
	int r = 0;
	if (*cur == 0)
		r = loop_watch(p->loop, fd, want, on_fd, p, &err);
	else if (want == 0)
		loop_unwatch(p->loop, fd);
	else
		r = loop_modify(p->loop, fd, want, &err);
	if (r < 0) {
		mg_warn("%s: %s", p->name, mg_err_msg(err));
		mg_err_free(err);
		return;
	}
	*cur = want;
}

/* Input while it lasts; output only while some is queued. A watch with no
 * events is none at all: a hung-up fd would otherwise wake the loop for
 * ever. */
static void watches_update(struct rpc_peer *p)
{
	if (p->loop == NULL)
		return;
	uint32_t in = !p->in_closed && !p->no_reading && !p->paused ? EPOLLIN : 0;
	uint32_t out = rpc_peer_wants_write(p) ? EPOLLOUT : 0;
	if (p->in_fd == p->out_fd) {
		watch_set(p, p->in_fd, &p->in_events, in | out);
		return;
	}
	watch_set(p, p->in_fd, &p->in_events, in);
	watch_set(p, p->out_fd, &p->out_events, out);
}

static void on_fd(struct loop *loop, int fd, uint32_t events, void *data)
{
	(void)loop;
	struct rpc_peer *p = data;
	uint32_t watched = fd == p->in_fd ? p->in_events : p->out_events;
	if (fd == p->in_fd && (watched & EPOLLIN) != 0 &&
	    (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0) {
		struct mg_err *err = NULL;
		/* the end of input, or a failure, reaches on_closed */
		rpc_peer_read(p, &err);
		mg_err_free(err);
	}
	if (fd == p->out_fd && (watched & EPOLLOUT) != 0 &&
	    (events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) != 0)
		rpc_peer_flush(p, NULL); /* a failure reaches on_write_failed */
	watches_update(p);
}

int rpc_peer_attach(struct rpc_peer *p, struct loop *loop, struct mg_err **err)
{
	if (p->loop != NULL)
		return mg_err_set(err, "%s is attached to a loop already", p->name);
	p->loop = loop;
	uint32_t in = !p->in_closed && !p->no_reading ? EPOLLIN : 0;
	uint32_t out = rpc_peer_wants_write(p) ? EPOLLOUT : 0;
	if (p->in_fd == p->out_fd)
		in |= out, out = 0;
	if (in != 0 && loop_watch(loop, p->in_fd, in, on_fd, p, err) < 0)
		goto fail;
	p->in_events = in;
	if (out != 0 && loop_watch(loop, p->out_fd, out, on_fd, p, err) < 0)
		goto fail;
	p->out_events = out;
	return 0;
fail:
	if (p->in_events != 0)
		loop_unwatch(loop, p->in_fd);
	p->in_events = 0;
	p->loop = NULL;
	return mg_err_wrap(err, "%s", p->name);
}

void rpc_peer_stop_reading(struct rpc_peer *p)
{
	p->no_reading = true;
	watches_update(p);
}

void rpc_peer_pause_reading(struct rpc_peer *p, bool paused)
{
	if (p == NULL || p->paused == paused)
		return;
	p->paused = paused;
	watches_update(p);
}

bool rpc_peer_paused(const struct rpc_peer *p)
{
	return p->paused;
}

uint64_t rpc_peer_bytes_read(const struct rpc_peer *p)
{
	return p->bytes_read;
}

uint64_t rpc_peer_shed(const struct rpc_peer *p)
{
	return p->shed;
}

size_t rpc_peer_queued_responses(const struct rpc_peer *p)
{
	size_t n = 0;
	for (size_t i = 0; i < p->nresponse_ends; i++)
		n += p->response_ends[i] > p->written_total;
	return n;
}

/* The output broke: said once, to whoever asked */
static void write_failed(struct rpc_peer *p)
{
	if (p->told_broken)
		return;
	p->told_broken = true;
	if (p->cfg.on_write_failed != NULL) {
		struct mg_err *why = NULL;
		mg_err_sys(&why, p->out_errno, "writing to %s", p->name);
		p->cfg.on_write_failed(p, why, p->cfg.data);
		mg_err_free(why);
	}
}

static int flush_queue(struct rpc_peer *p, struct mg_err **err);

int rpc_peer_flush(struct rpc_peer *p, struct mg_err **err)
{
	int r = flush_queue(p, err);
	watches_update(p);
	if (r < 0)
		write_failed(p);
	return r;
}

static int flush_queue(struct rpc_peer *p, struct mg_err **err)
{
	if (p->out_broken)
		return mg_err_sys(err, p->out_errno, "writing to %s", p->name);
	while (p->qlen != 0) {
		struct iovec iov[2];
		size_t first = p->qlen < p->qcap - p->qhead ? p->qlen : p->qcap - p->qhead;
		iov[0].iov_base = p->q + p->qhead;
		iov[0].iov_len = first;
		iov[1].iov_base = p->q;
		iov[1].iov_len = p->qlen - first;
		ssize_t w = writev(p->out_fd, iov, iov[1].iov_len != 0 ? 2 : 1);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			p->out_broken = true;
			p->out_errno = errno;
			return mg_err_sys(err, errno, "writing to %s", p->name);
		}
		p->qhead = (p->qhead + (size_t)w) % p->qcap;
		p->qlen -= (size_t)w;
		p->written_total += (size_t)w;
		/* the responses wholly written are no longer waiting */
		size_t done = 0;
		while (done < p->nresponse_ends && p->response_ends[done] <= p->written_total)
			done++;
		if (done > 0) {
			memmove(p->response_ends, p->response_ends + done,
			        (p->nresponse_ends - done) * sizeof(*p->response_ends));
			p->nresponse_ends -= done;
		}
	}
	p->qhead = 0;
	if (p->qcap > QUEUE_KEEP) {
		free(p->q);
		p->q = NULL;
		p->qcap = 0;
	}
	return 0;
}

bool rpc_peer_wants_write(const struct rpc_peer *p)
{
	return p->qlen != 0 && !p->out_broken;
}

size_t rpc_peer_queued_bytes(const struct rpc_peer *p)
{
	return p->qlen;
}

static int send_one(struct rpc_peer *p, const char *line, size_t len, bool response,
                    struct mg_err **err)
{
	if (len == 0 || line[len - 1] != '\n' || memchr(line, '\n', len - 1) != NULL)
		return mg_err_set(err, "sending to %s: not one line ending in a newline", p->name);
	if (p->out_broken)
		return mg_err_sys(err, p->out_errno, "sending to %s", p->name);
	if (queue_append(p, line, len, response, err) < 0)
		return -1;
	return rpc_peer_flush(p, err);
}

int rpc_peer_send_line(struct rpc_peer *p, const char *line, size_t len, struct mg_err **err)
{
	return send_one(p, line, len, false, err);
}

/* Build into a scratch buffer, then queue. */
static int send_built(struct rpc_peer *p, struct mg_buf *b, int built, bool response,
                      struct mg_err **err)
{
	int r = built < 0 ? -1 : send_one(p, b->data, b->len, response, err);
	mg_buf_free(b);
	return r;
}

int rpc_peer_send_result(struct rpc_peer *p, const struct json_value *id,
                         const struct json_value *result, struct mg_err **err)
{
	struct mg_buf b = MG_BUF_INIT(p->cfg.write_queue_max);
	return send_built(p, &b, rpc_build_result(id, result, &b, err), true, err);
}

int rpc_peer_send_error(struct rpc_peer *p, const struct json_value *id, int64_t code,
                        const char *message, const struct json_value *data, struct mg_err **err)
{
	struct mg_buf b = MG_BUF_INIT(p->cfg.write_queue_max);
	return send_built(p, &b, rpc_build_error(id, code, message, data, &b, err), true, err);
}

int rpc_peer_send_notification(struct rpc_peer *p, const char *method,
                               const struct json_value *params, struct mg_err **err)
{
	struct mg_buf b = MG_BUF_INIT(p->cfg.write_queue_max);
	return send_built(p, &b, rpc_build_notification(method, params, &b, err), false, err);
}

/* ---- requests ------------------------------------------------------------- */

/* params (an object, or none) with meta's members set in its _meta: a copy */
static struct json_value *params_with_meta(const struct json_value *params,
                                           const struct json_value *meta)
{
	struct json_value *out =
	    params != NULL && params->kind == JSON_OBJECT ? json_copy(params) : json_new_object();
	const struct json_value *had = json_get(out, "_meta");
	struct json_value *m =
	    had != NULL && had->kind == JSON_OBJECT ? json_copy(had) : json_new_object();
	for (size_t i = 0; i < meta->u.obj.len; i++)
		if (json_get(m, meta->u.obj.items[i].key) == NULL)
			json_object_set(m, meta->u.obj.items[i].key,
			                json_copy(meta->u.obj.items[i].value));
	json_object_set(out, "_meta", m);
	return out;
}

void rpc_peer_set_request_meta(struct rpc_peer *p, const struct json_value *meta)
{
	json_free(p->meta);
	p->meta = meta != NULL && meta->kind == JSON_OBJECT ? json_copy(meta) : NULL;
}

const struct json_value *rpc_peer_request_meta(const struct rpc_peer *p)
{
	return p->meta;
}

int rpc_peer_send_request(struct rpc_peer *p, const char *method, const struct json_value *params,
                          int64_t deadline_ms, rpc_done_cb cb, void *data, int64_t *id_out,
                          struct mg_err **err)
{
	if (p->out_broken)
		return mg_err_sys(err, p->out_errno, "sending %s to %s", method, p->name);
	if (p->in_closed)
		return mg_err_set(err, "sending %s to %s: its output has ended, no reply can come",
		                  method, p->name);
	if (p->npending >= p->cfg.max_pending)
		return mg_err_set(err,
		                  "sending %s to %s: %zu requests are already waiting for replies",
		                  method, p->name, p->npending);
	if (p->next_id == INT64_MAX)
		return mg_err_set(err, "sending %s to %s: no ids left", method, p->name);
	struct json_value *id = json_new_int(p->next_id);
	struct mg_buf b = MG_BUF_INIT(p->cfg.write_queue_max);
	struct json_value *with_meta = p->meta != NULL ? params_with_meta(params, p->meta) : NULL;
	int r = rpc_build_request(id, method, with_meta != NULL ? with_meta : params, &b, err);
	json_free(with_meta);
	json_free(id);
	if (r < 0 || queue_append(p, b.data, b.len, false, err) < 0) {
		mg_buf_free(&b);
		return mg_err_wrap(err, "sending %s to %s", method, p->name);
	}
	mg_buf_free(&b);

	struct rpc_pending *e = xcalloc(1, sizeof(*e));
	e->id = p->next_id++;
	e->method = xstrdup(method);
	e->sent_ms = rpc_now_ms();
	e->deadline_ms = deadline_ms;
	e->cb = cb;
	e->data = data;
	pending_insert(p, e);
	if (rpc_peer_flush(p, err) < 0) {
		pending_free(pending_take(p, e->id));
		return -1;
	}
	if (id_out != NULL)
		*id_out = e->id;
	return 0;
}

void rpc_peer_expire(struct rpc_peer *p, int64_t now_ms)
{
	while (p->heap_len != 0 && p->heap[0]->deadline_ms <= now_ms) {
		struct rpc_pending *e = pending_take(p, p->heap[0]->id);
		int64_t waited = e->deadline_ms - e->sent_ms;
		struct mg_err *why = NULL;
		mg_err_set(&why, "timed out after %" PRId64 " ms waiting for %s from %s",
		           waited > 0 ? waited : 0, e->method, p->name);
		if (e->cb != NULL)
			e->cb(p, NULL, why, e->data);
		mg_err_free(why);
		pending_free(e);
	}
}

int64_t rpc_peer_next_deadline(const struct rpc_peer *p)
{
	return p->heap_len != 0 ? p->heap[0]->deadline_ms : 0;
}

static int by_id(const void *a, const void *b)
{
	int64_t x = (*(struct rpc_pending *const *)a)->id;
	int64_t y = (*(struct rpc_pending *const *)b)->id;
	return (x > y) - (x < y);
}

void rpc_peer_fail_all(struct rpc_peer *p, const char *why)
{
	if (p->npending == 0)
		return;
	/* detach them all first: callbacks may send new requests */
	size_t n = 0;
	struct rpc_pending **all = xreallocarray(NULL, p->npending, sizeof(*all));
	for (size_t i = 0; i < p->nbuckets; i++) {
		for (struct rpc_pending *e = p->buckets[i]; e != NULL; e = e->next)
			all[n++] = e;
		p->buckets[i] = NULL;
	}
	p->npending = 0;
	p->heap_len = 0;
	qsort(all, n, sizeof(*all), by_id);
	for (size_t i = 0; i < n; i++) {
		struct rpc_pending *e = all[i];
		struct mg_err *err = NULL;
		mg_err_set(&err, "no reply to %s from %s: %s", e->method, p->name, why);
		if (e->cb != NULL)
			e->cb(p, NULL, err, e->data);
		mg_err_free(err);
		pending_free(e);
	}
	free(all);
}

int rpc_peer_cancel(struct rpc_peer *p, const char *id_key)
{
	int64_t id;
	if (id_key == NULL || strncmp(id_key, "n:", 2) != 0 ||
	    mg_parse_i64(id_key + 2, INT64_MIN, INT64_MAX, "id", &id, NULL) < 0)
		return 0;
	struct rpc_pending *e = pending_take(p, id);
	if (e == NULL)
		return 0;
	pending_free(e);
	return 1;
}

size_t rpc_peer_pending_count(const struct rpc_peer *p)
{
	return p->npending;
}

/* ---- input ----------------------------------------------------------------- */

static void bad_line(struct rpc_peer *p, const struct rpc_bad_line *bad)
{
	if (p->cfg.on_bad_line != NULL) {
		p->cfg.on_bad_line(p, bad, p->cfg.data);
		return;
	}
	if (noise_ok(p))
		mg_warn("%s sent a bad line (%zu bytes): %s", p->name, bad->len, bad->reason);
}

static void unmatched_response(struct rpc_peer *p, struct rpc_msg *msg)
{
	if (p->cfg.on_response != NULL) {
		p->cfg.on_response(p, msg, p->cfg.data);
		return;
	}
	if (!noise_ok(p))
		return;
	int64_t id;
	if (msg->id->kind == JSON_NUMBER && json_number_int64(msg->id, &id) == 0 && id > 0 &&
	    id < p->next_id)
		mg_warn("%s: dropped a late response to request %" PRId64
		        " (timed out or cancelled)",
		        p->name, id);
	else
		mg_warn("%s: dropped a response to an id that was never sent", p->name);
}

static void dispatch_response(struct rpc_peer *p, struct rpc_msg *msg)
{
	int64_t id;
	struct rpc_pending *e = NULL;
	if (msg->id->kind == JSON_NUMBER && json_number_int64(msg->id, &id) == 0)
		e = pending_take(p, id);
	if (e == NULL) {
		unmatched_response(p, msg);
		return;
	}
	if (e->cb != NULL)
		e->cb(p, msg, NULL, e->data);
	pending_free(e);
}

static struct rpc_pending *pending_find(struct rpc_peer *p, const struct json_value *id)
{
	int64_t n;
	if (p->nbuckets == 0 || id == NULL || id->kind != JSON_NUMBER ||
	    json_number_int64(id, &n) < 0)
		return NULL;
	struct rpc_pending *e = p->buckets[bucket_of(p, n)];
	while (e != NULL && e->id != n)
		e = e->next;
	return e;
}

/* msg against the peer's check: true when it goes on as it is. A request
 * that fails is answered here, a notification dropped, and a result is
 * replaced by an error reply to its request (msg then holds that). */
static bool admit(struct rpc_peer *p, struct rpc_msg *msg, size_t len)
{
	const char *method = msg->method;
	const struct json_value *body = msg->params;
	if (msg->kind == RPC_RESULT || msg->kind == RPC_ERROR) {
		const struct rpc_pending *e = pending_find(p, msg->id);
		if (e == NULL || msg->kind == RPC_ERROR)
			return true; /* unmatched responses go their own way */
		method = e->method;
		body = msg->result;
	}
	char *why = p->cfg.check(msg->kind, method, body);
	if (why == NULL)
		return true;
	struct mg_err *err = NULL;
	struct rpc_bad_line bad = {
	    .code = RPC_INVALID_PARAMS,
	    .reason = why,
	    .id = msg->id,
	    .len = len,
	    .answered = true,
	};
	bad_line(p, &bad);
	bool keep = false;
	if (msg->kind == RPC_REQUEST) {
		if (rpc_peer_send_error(p, msg->id, RPC_INVALID_PARAMS, why, NULL, &err) < 0) {
			if (noise_ok(p))
				mg_warn("%s: %s", p->name, mg_err_msg(err));
			mg_err_free(err);
		}
	} else if (msg->kind == RPC_RESULT) {
		/* its request is answered with what was wrong, never with it */
		struct mg_buf line = MG_BUF_INIT(RPC_LINE_MAX_DEFAULT);
		char *text = xasprintf("%s answered %s with a result that is not valid MCP: %s",
		                       p->name, method, why);
		struct rpc_msg reply;
		memset(&reply, 0, sizeof(reply));
		if (rpc_build_error(msg->id, RPC_INTERNAL_ERROR, text, NULL, &line, NULL) == 0 &&
		    rpc_parse(line.data, line.len - 1, 0, &reply, NULL) == 0) {
			rpc_msg_free(msg);
			rpc_msg_move(msg, &reply);
			keep = true;
		}
		rpc_msg_free(&reply);
		free(text);
		mg_buf_free(&line);
	}
	free(why);
	return keep;
}

static void dispatch_line(struct rpc_peer *p, const char *line, size_t len)
{
	struct rpc_msg msg;
	struct mg_err *err = NULL;
	if (rpc_parse(line, len, p->cfg.max_depth, &msg, &err) < 0) {
		struct rpc_bad_line bad = {
		    .code = msg.root != NULL ? RPC_INVALID_REQUEST : RPC_PARSE_ERROR,
		    .reason = mg_err_msg(err),
		    .id = msg.id,
		    .len = len,
		    .overflow = false,
		};
		bad_line(p, &bad);
		mg_err_free(err);
		rpc_msg_free(&msg);
		return;
	}
	if (p->cfg.check != NULL && !admit(p, &msg, len)) {
		rpc_msg_free(&msg);
		return;
	}
	switch (msg.kind) {
	case RPC_REQUEST:
		if (p->cfg.on_request != NULL) {
			p->cfg.on_request(p, &msg, p->cfg.data);
		} else if (rpc_peer_send_error(p, msg.id, RPC_METHOD_NOT_FOUND, "Method not found",
		                               NULL, &err) < 0) {
			if (noise_ok(p))
				mg_warn("%s: %s", p->name, mg_err_msg(err));
			mg_err_free(err);
		}
		break;
	case RPC_NOTIFICATION:
		if (p->cfg.on_notification != NULL)
			p->cfg.on_notification(p, &msg, p->cfg.data);
		break;
	case RPC_RESULT:
	case RPC_ERROR:
		dispatch_response(p, &msg);
		break;
	case RPC_INVALID:
		break;
	}
	rpc_msg_free(&msg);
}

static void dispatch_lines(struct rpc_peer *p)
{
	for (;;) {
		const char *line;
		size_t len;
		int k = rpc_reader_next(&p->reader, &line, &len);
		if (k == 0)
			return;
		if (k == RPC_OVERFLOW) {
			struct mg_err *err = NULL;
			mg_err_set(&err, "a line longer than %zu bytes", p->reader.line_max);
			struct rpc_bad_line bad = {
			    .code = RPC_PARSE_ERROR,
			    .reason = mg_err_msg(err),
			    .id = NULL,
			    .len = rpc_reader_overflow_bytes(&p->reader),
			    .overflow = true,
			};
			bad_line(p, &bad);
			mg_err_free(err);
			continue;
		}
		dispatch_line(p, line, len);
	}
}

static void input_ended(struct rpc_peer *p, const struct mg_err *why)
{
	p->in_closed = true;
	size_t rest = rpc_reader_buffered(&p->reader);
	if (rest != 0) {
		struct rpc_bad_line bad = {
		    .code = RPC_PARSE_ERROR,
		    .reason = "an incomplete line at the end of input",
		    .id = NULL,
		    .len = rest,
		    .overflow = false,
		};
		bad_line(p, &bad);
	}
	rpc_reader_free(&p->reader);
	rpc_peer_fail_all(p, why != NULL ? mg_err_msg(why) : "end of input");
	if (p->cfg.on_closed != NULL)
		p->cfg.on_closed(p, why, p->cfg.data);
}

int rpc_peer_read(struct rpc_peer *p, struct mg_err **err)
{
	if (p->in_closed)
		return RPC_READ_CLOSED;
	if (p->reading)
		return mg_err_set(err, "reading from %s inside one of its callbacks", p->name);
	p->reading = true;
	size_t taken = 0;
	int ret;
	for (;;) {
		struct mg_err *rerr = NULL;
		ssize_t n = rpc_reader_read_fd(&p->reader, p->in_fd, &rerr);
		if (n == RPC_AGAIN) {
			ret = RPC_READ_DRAINED;
			break;
		}
		if (n < 0) {
			mg_err_wrap(&rerr, "reading from %s", p->name);
			input_ended(p, rerr);
			if (err != NULL) {
				mg_err_free(*err);
				*err = rerr;
			} else {
				mg_err_free(rerr);
			}
			ret = -1;
			break;
		}
		if (n == 0) {
			input_ended(p, NULL);
			ret = RPC_READ_CLOSED;
			break;
		}
		p->bytes_read += (uint64_t)n;
		if (p->first_read_ms == 0)
			p->first_read_ms = rpc_now_ms();
		dispatch_lines(p);
		taken += (size_t)n;
		if (taken >= READ_BUDGET) {
			ret = RPC_READ_MORE;
			break;
		}
		/* a pipe or socket returns all it holds: a short read leaves it
		 * empty, and a read more would only say EAGAIN (one system call
		 * per message saved; every watcher here is level-triggered, so
		 * what comes next wakes it again, an end of input too) */
		if ((size_t)n < RPC_READ_CHUNK) {
			ret = RPC_READ_DRAINED;
			break;
		}
	}
	p->reading = false;
	return ret;
}

bool rpc_peer_closed(const struct rpc_peer *p)
{
	return p->in_closed;
}

int64_t rpc_peer_first_read_ms(const struct rpc_peer *p)
{
	return p->first_read_ms;
}

/* ---- life ------------------------------------------------------------------ */

static int set_nonblock(int fd, struct mg_err **err)
{
	int flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return mg_err_sys(err, errno, "making fd %d non-blocking", fd);
	return 0;
}

static void close_fds(int in_fd, int out_fd)
{
	if (in_fd >= 0)
		close(in_fd);
	if (out_fd >= 0 && out_fd != in_fd)
		close(out_fd);
}

int rpc_peer_new(int in_fd, int out_fd, const struct rpc_peer_config *cfg, struct rpc_peer **out,
                 struct mg_err **err)
{
	*out = NULL;
	const char *name = cfg->name != NULL && *cfg->name != '\0' ? cfg->name : "peer";
	if (in_fd < 0 || out_fd < 0) {
		close_fds(in_fd, out_fd);
		return mg_err_set(err, "%s: invalid fd", name);
	}
	if (set_nonblock(in_fd, err) < 0 || set_nonblock(out_fd, err) < 0) {
		close_fds(in_fd, out_fd);
		return mg_err_wrap(err, "%s", name);
	}
	struct rpc_peer *p = xcalloc(1, sizeof(*p));
	p->cfg = *cfg;
	p->name = xstrdup(name);
	p->cfg.name = p->name;
	if (p->cfg.line_max == 0)
		p->cfg.line_max = RPC_LINE_MAX_DEFAULT;
	if (p->cfg.write_queue_max == 0)
		p->cfg.write_queue_max = RPC_WRITE_QUEUE_MAX_DEFAULT;
	if (p->cfg.max_depth == 0)
		p->cfg.max_depth = RPC_MAX_DEPTH_DEFAULT;
	if (p->cfg.max_pending == 0)
		p->cfg.max_pending = RPC_MAX_PENDING_DEFAULT;
	p->in_fd = in_fd;
	p->out_fd = out_fd;
	p->next_id = 1;
	rpc_reader_init(&p->reader, p->cfg.line_max);
	*out = p;
	return 0;
}

void rpc_peer_free(struct rpc_peer *p)
{
	if (p == NULL)
		return;
	if (p->loop != NULL) {
		if (p->in_events != 0)
			loop_unwatch(p->loop, p->in_fd);
		if (p->out_events != 0 && p->out_fd != p->in_fd)
			loop_unwatch(p->loop, p->out_fd);
		p->loop = NULL;
	}
	rpc_peer_fail_all(p, "the connection was closed");
	close_fds(p->in_fd, p->out_fd);
	rpc_reader_free(&p->reader);
	free(p->buckets);
	free(p->heap);
	free(p->q);
	free(p->response_ends);
	json_free(p->meta);
	free(p->name);
	free(p);
}

const char *rpc_peer_name(const struct rpc_peer *p)
{
	return p->name;
}

int rpc_peer_in_fd(const struct rpc_peer *p)
{
	return p->in_fd;
}

int rpc_peer_out_fd(const struct rpc_peer *p)
{
	return p->out_fd;
}

/* ---- blocking call ---------------------------------------------------------- */

struct sync_call {
	bool done;
	struct rpc_msg reply;
	struct mg_err *why;
};

static void sync_done(struct rpc_peer *p, struct rpc_msg *reply, const struct mg_err *why,
                      void *data)
{
	(void)p;
	struct sync_call *call = data;
	call->done = true;
	if (reply != NULL)
		rpc_msg_move(&call->reply, reply);
	else
		mg_err_set(&call->why, "%s", mg_err_msg(why));
}

/* One wait for either fd, up to the earliest pending deadline. */
static int sync_step(struct rpc_peer *p, struct mg_err **err)
{
	struct pollfd fds[2];
	nfds_t n = 0;
	int in_slot = -1, out_slot = -1;
	if (!p->in_closed) {
		fds[n] = (struct pollfd){.fd = p->in_fd, .events = POLLIN};
		in_slot = (int)n++;
	}
	if (rpc_peer_wants_write(p)) {
		if (in_slot >= 0 && p->out_fd == p->in_fd) {
			fds[in_slot].events |= POLLOUT;
			out_slot = in_slot;
		} else {
			fds[n] = (struct pollfd){.fd = p->out_fd, .events = POLLOUT};
			out_slot = (int)n++;
		}
	}
	int timeout = -1;
	int64_t deadline = rpc_peer_next_deadline(p);
	if (deadline != 0) {
		int64_t left = deadline - rpc_now_ms();
		timeout = left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
	}
	if (n == 0 && timeout < 0)
		return mg_err_set(err, "%s is closed and no reply can come", p->name);
	int r = poll(fds, n, timeout);
	if (r < 0) {
		if (errno == EINTR)
			return 0;
		return mg_err_sys(err, errno, "waiting for %s", p->name);
	}
	/* input first: a reply that is already there counts even when the
	 * output has broken meanwhile */
	if (in_slot >= 0 && (fds[in_slot].revents & (POLLIN | POLLERR | POLLHUP)) != 0) {
		struct mg_err *rerr = NULL;
		/* a read failure closes the input and fails the pending call */
		rpc_peer_read(p, &rerr);
		mg_err_free(rerr);
	}
	rpc_peer_expire(p, rpc_now_ms());
	if (out_slot >= 0 && (fds[out_slot].revents & (POLLOUT | POLLERR | POLLHUP)) != 0 &&
	    rpc_peer_flush(p, err) < 0)
		return -1;
	return 0;
}

int rpc_peer_call_sync(struct rpc_peer *p, const char *method, const struct json_value *params,
                       int64_t deadline_ms, struct rpc_msg *reply_out, struct mg_err **err)
{
	memset(reply_out, 0, sizeof(*reply_out));
	if (p->reading)
		return mg_err_set(err, "calling %s on %s inside one of its callbacks", method,
		                  p->name);
	struct sync_call call = {0};
	int64_t id;
	if (rpc_peer_send_request(p, method, params, deadline_ms, sync_done, &call, &id, err) < 0)
		return -1;
	while (!call.done) {
		struct mg_err *step_err = NULL;
		if (sync_step(p, &step_err) < 0 && !call.done) {
			char *key = rpc_id_key_int(id);
			rpc_peer_cancel(p, key);
			free(key);
			if (err != NULL) {
				mg_err_free(*err);
				*err = step_err;
			} else {
				mg_err_free(step_err);
			}
			return mg_err_wrap(err, "calling %s on %s", method, p->name);
		}
		mg_err_free(step_err);
	}
	if (call.why != NULL) {
		mg_err_set(err, "%s", mg_err_msg(call.why));
		mg_err_free(call.why);
		return -1;
	}
	rpc_msg_move(reply_out, &call.reply);
	return 0;
}
