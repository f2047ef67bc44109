/* The event loop of mcpgate-egress: one thread, one epoll set, every socket
 * non-blocking and edge-triggered. A connection moves through
 *
 *   HEAD -> (DNS) -> CONNECT -> (SNI) -> RELAY
 *        \-> ANSWER -> LINGER        (a refusal or an error)
 *
 * A -forward connection has no head: its destination is its listener's,
 * so it goes to (DNS) -> CONNECT -> RELAY at once, and a refusal closes it
 * (it speaks no HTTP).
 *
 * Name lookups run in a short detached thread each (getaddrinfo has no
 * timeout of its own that we control); the thread hands its job back
 * through a pipe, and a job whose connection gave up is just freed.
 *
 * Relaying uses splice(2) through a pipe per direction, so bytes never
 * enter user space and a tunnel costs a fixed few hundred bytes here. The
 * request direction of a plain HTTP request goes through a bounded buffer
 * instead: its body is framed (Content-Length or chunked) so that nothing
 * after it reaches the upstream. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "egress/egress.h"

#define MAX_ADDRS    64
#define LINGER_MS    2000
#define LINGER_BYTES (1u << 20)
#define SPLICE_CHUNK (1u << 16)
/* A direction that has carried PIPE_GROW_AFTER bytes gets a pipe of
 * PIPE_BIG bytes: a splice then moves up to that much, and a bulk transfer
 * costs fewer system calls (measured on a 1 GiB download: about 0.29 s of
 * the proxy's CPU per GiB before, 0.18 s after). Pipe pages are the kernel's memory, counted against the sidecar's
 * limit and against a per-user budget (fs/pipe-user-pages-soft) that all
 * processes of uid 65534 share, so at most PIPE_BIG_MAX pipes are big at
 * once; a refused resize leaves the pipe as it was. */
#define PIPE_BIG        (1u << 20)
#define PIPE_BIG_MAX    8
#define PIPE_GROW_AFTER (1u << 20)
/* Empty pipes of closed tunnels are kept for the next ones, and so are the
 * connections' memory and head buffers (malloc gives them back with madvise
 * and munmap, one system call or two each time) */
#define PIPE_POOL  64
#define CONN_CACHE 64
/* and given back after a second with no connection at all, so an idle proxy
 * stays as small as a fresh one */
#define TRIM_AFTER_MS 1000
#define DNS_STACK     (512u << 10)

/* epoll tags: a connection pointer (low bit: upstream side) or these */
#define TAG_LISTEN   0x10u
#define TAG_SIGNAL   0x20u
#define TAG_LIFELINE 0x30u
#define TAG_DNS      0x40u
/* TAG_FORWARD + i: the listener of -forward i */
#define TAG_FORWARD 0x100u

enum state { S_HEAD, S_DNS, S_CONNECT, S_SNI, S_RELAY, S_ANSWER, S_LINGER };

enum framing {
	F_ALL,     /* everything passes (tunnels, responses) */
	F_LENGTH,  /* `left` bytes of body, then F_DISCARD */
	F_CHUNKED, /* a chunked body, then F_DISCARD */
	F_DISCARD, /* the request is complete: read and drop */
};

struct dir {
	int src, dst;
	int pipe_r, pipe_w; /* -1 for a buffered direction */
	size_t in_pipe;
	bool pipe_big, pipe_grow_tried;
	/* the connection's readiness flags of src (to read) and dst (to write):
	 * set by every epoll event, cleared by EAGAIN, so that a pump tries
	 * only what may move (each EAGAIN is a system call for nothing) */
	bool *src_ready, *dst_ready;
	bool capped; /* its bytes count against -max-bytes-up (client to upstream) */
	char *buf;   /* owned: bytes [off, len) go to dst before anything else */
	size_t off, len, cap;
	bool buffered; /* read into buf instead of splicing (HTTP request direction) */
	enum framing framing;
	uint64_t left;
	struct egr_chunked ch;
	bool eof, shut;
	uint64_t bytes, uncounted; /* written to dst; our own bytes not to report */
};

struct conn;

struct dns_job {
	struct dns_job *prev, *next; /* the loop's jobs in flight; loop thread only */
	struct conn *conn;           /* NULL once the connection gave up; loop thread only */
	char host[EGR_HOST_MAX + 1];
	int gai;
	struct egr_addr addrs[MAX_ADDRS];
	size_t naddrs;
	bool too_many;
};

struct conn {
	struct conn *prev, *next;
	enum state state;
	bool dead;
	int cfd, ufd;
	uint64_t deadline, t_start;
	bool established;            /* relaying: a close record is due */
	bool c_rd, c_wr, u_rd, u_wr; /* readiness, see struct dir */
	bool half_closed;            /* a tunnel whose client has sent its end */
	bool attempt_logged;
	char *head;
	size_t head_len;
	struct egr_scan scan;
	/* what records say */
	char method[EGR_METHOD_MAX + 1];
	bool have_method, have_host, have_address, is_connect, private_ok;
	struct egr_host host;
	uint16_t port;
	char address[INET6_ADDRSTRLEN];
	struct egr_addr addrs[MAX_ADDRS];
	size_t naddrs, next_addr;
	int last_err;
	struct dns_job *job;
	struct dir up, down;
	size_t linger_bytes;
	char reason[512];
	const struct egr_forward *fwd; /* a -forward connection: its forward */
};

struct loop {
	const struct egr_opts *o;
	struct egr_policy pol;
	int ep, lfd, sfd, dns_r; /* lfd: the HTTP proxy's listener, or -1 */
	const int *forward_fds;  /* o->nforwards listeners */
	struct conn *conns, *dead;
	size_t nconns;
	size_t nhalf; /* of nconns, tunnels whose client has sent its end */
	struct dns_job *jobs;
	size_t njobs;
	int pool[PIPE_POOL][2]; /* empty pipes, read end then write end */
	size_t npool, nbig;
	uint64_t trim_at;               /* when the caches below go, if no connection came */
	uint64_t sent_up;               /* by every tunnel and request: what -max-bytes-up caps */
	struct conn *spare[CONN_CACHE]; /* freed connections */
	size_t nspare;
	char *heads[CONN_CACHE]; /* head buffers (-max-header-bytes) no one uses */
	size_t nheads;
	uint64_t next_scan;
	bool listen_paused;
	uint64_t listen_resume, last_busy_note;
};

/* written by lookup threads, read by the loop; set once before any thread */
static int dns_pipe_w = -1;

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void set_deadline(struct loop *l, struct conn *c, uint64_t ms_from_now)
{
	c->deadline = now_ms() + ms_from_now;
	if (c->deadline < l->next_scan)
		l->next_scan = c->deadline;
}

/* A forward to a unix: target is a hop to mcpgate's host side, which
 * records the connection to its destination: this side records only the
 * hop's failure */
static bool hop_quiet(const struct conn *c)
{
	return c->fwd != NULL && c->fwd->target.is_unix;
}

static void log_attempt(struct conn *c, bool allowed, const char *reason)
{
	if (c->attempt_logged)
		return;
	c->attempt_logged = true;
	if (allowed && hop_quiet(c))
		return;
	egr_log_attempt(c->have_method ? c->method : NULL, c->have_host ? c->host.name : NULL,
	                c->have_host ? c->port : -1, c->have_address ? c->address : NULL, allowed,
	                reason);
}

static void close_fd(int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
}

/* A head buffer lives only until its request is parsed: a tunnel holds none */
static void head_put(struct loop *l, struct conn *c)
{
	if (c->head == NULL)
		return;
	if (l->nheads < CONN_CACHE)
		l->heads[l->nheads++] = c->head;
	else
		free(c->head);
	c->head = NULL;
}

static void dir_release(struct loop *l, struct dir *d)
{
	if (d->pipe_big) {
		l->nbig--;
		d->pipe_big = false;
		/* back to the default size (the pipe is in the pool's budget then);
		 * refused when bytes are still in it, and then it is closed */
		if (d->in_pipe > 0 || fcntl(d->pipe_w, F_SETPIPE_SZ, SPLICE_CHUNK) < 0)
			d->in_pipe = 1;
	}
	if (d->pipe_r >= 0 && d->in_pipe == 0 && l->npool < PIPE_POOL) {
		l->pool[l->npool][0] = d->pipe_r;
		l->pool[l->npool][1] = d->pipe_w;
		l->npool++;
		d->pipe_r = d->pipe_w = -1;
	}
	close_fd(&d->pipe_r);
	close_fd(&d->pipe_w);
	free(d->buf);
	d->buf = NULL;
	d->off = d->len = d->cap = 0;
	d->in_pipe = 0;
}

static void dir_init(struct dir *d)
{
	memset(d, 0, sizeof(*d));
	d->src = d->dst = d->pipe_r = d->pipe_w = -1;
}

/* Close a connection now; its memory goes when the current batch of events
 * is done, since another event of the batch may still name it. Whatever the
 * path, a connection that sent a byte leaves its attempt record (`why` is its
 * reason when none was written yet), and one that was relaying its close
 * record: the records hold every attempt, not the ones that ended well. */
static void conn_close(struct loop *l, struct conn *c, const char *why)
{
	if (c->dead)
		return;
	if (!c->attempt_logged && (c->head_len > 0 || c->state != S_HEAD))
		log_attempt(c, false, why);
	if (c->established && !hop_quiet(c)) {
		uint64_t up =
		    c->up.bytes - (c->up.uncounted < c->up.bytes ? c->up.uncounted : c->up.bytes);
		uint64_t down =
		    c->down.bytes -
		    (c->down.uncounted < c->down.bytes ? c->down.uncounted : c->down.bytes);
		egr_log_close(c->host.name, c->port, up, down, now_ms() - c->t_start);
	}
	if (c->job != NULL) {
		c->job->conn = NULL;
		c->job = NULL;
	}
	close_fd(&c->cfd);
	close_fd(&c->ufd);
	dir_release(l, &c->up);
	dir_release(l, &c->down);
	head_put(l, c);
	c->dead = true;
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		l->conns = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	c->next = l->dead;
	c->prev = NULL;
	l->dead = c;
	l->nconns--;
	if (l->nconns == 0) {
		l->trim_at = now_ms() + TRIM_AFTER_MS;
		if (l->trim_at < l->next_scan)
			l->next_scan = l->trim_at;
	}
	if (c->half_closed)
		l->nhalf--;
}

static const char *status_text(int status)
{
	switch (status) {
	case 400:
		return "Bad Request";
	case 403:
		return "Forbidden";
	case 408:
		return "Request Timeout";
	case 502:
		return "Bad Gateway";
	case 503:
		return "Service Unavailable";
	case 504:
		return "Gateway Timeout";
	default:
		return "Error";
	}
}

static void answer_pump(struct loop *l, struct conn *c);

/* An HTTP error to the client, then a lingering close: shut our side, read
 * and drop what the client still sends for a short while, so the answer is
 * not lost to a reset. */
static void answer(struct loop *l, struct conn *c, int status, const char *reason)
{
	close_fd(&c->ufd);
	dir_release(l, &c->up);
	dir_release(l, &c->down);
	if (c->job != NULL) {
		c->job->conn = NULL;
		c->job = NULL;
	}
	char body[600];
	int bn = snprintf(body, sizeof(body), "mcpgate-egress: %s: %s\n",
	                  status == 403 ? "refused" : status_text(status), reason);
	if (bn < 0 || (size_t)bn >= sizeof(body))
		bn = snprintf(body, sizeof(body), "mcpgate-egress: %s\n", status_text(status));
	size_t cap = (size_t)bn + 200;
	char *msg = malloc(cap);
	if (msg == NULL) {
		fputs("mcpgate-egress: out of memory\n", stderr);
		abort();
	}
	int n = snprintf(msg, cap,
	                 "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
	                 "Content-Length: %d\r\nConnection: close\r\n\r\n%s",
	                 status, status_text(status), bn, body);
	if (n < 0 || (size_t)n >= cap)
		n = 0; /* cannot happen: cap has room for the status line and headers */
	c->down.buf = msg;
	c->down.cap = cap;
	c->down.off = 0;
	c->down.len = (size_t)n;
	c->down.dst = c->cfd;
	c->state = S_ANSWER;
	set_deadline(l, c, LINGER_MS);
	answer_pump(l, c);
}

static void refuse(struct loop *l, struct conn *c, int status, const char *reason)
{
	log_attempt(c, false, reason);
	if (c->fwd != NULL) {
		conn_close(l, c, reason); /* a byte stream: no answer to give */
		return;
	}
	answer(l, c, status, reason);
}

static void answer_pump(struct loop *l, struct conn *c)
{
	struct dir *d = &c->down;
	if (c->state == S_ANSWER) {
		while (d->off < d->len) {
			ssize_t n = send(c->cfd, d->buf + d->off, d->len - d->off, MSG_NOSIGNAL);
			if (n > 0) {
				d->off += (size_t)n;
			} else if (n < 0 && errno == EINTR) {
				continue;
			} else if (n < 0 && errno == EAGAIN) {
				return;
			} else {
				conn_close(l, c, "the client closed before the answer");
				return;
			}
		}
		shutdown(c->cfd, SHUT_WR);
		dir_release(l, d);
		c->state = S_LINGER;
	}
	char sink[4096];
	for (;;) {
		ssize_t n = recv(c->cfd, sink, sizeof(sink), 0);
		if (n > 0) {
			c->linger_bytes += (size_t)n;
			if (c->linger_bytes > LINGER_BYTES) {
				conn_close(l, c, "the client sent too much after the answer");
				return;
			}
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else if (n < 0 && errno == EAGAIN) {
			return;
		} else {
			conn_close(l, c, "the client closed after the answer");
			return;
		}
	}
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n != 0 ? n : 1);
	if (p == NULL) {
		fputs("mcpgate-egress: out of memory\n", stderr);
		abort();
	}
	return p;
}

/* How many of n request bytes belong to the body; -1 on broken framing. */
static ssize_t frame(struct dir *d, const char *p, size_t n, const char **why)
{
	switch (d->framing) {
	case F_ALL:
		return (ssize_t)n;
	case F_DISCARD:
		return 0;
	case F_LENGTH: {
		size_t take = n < d->left ? n : (size_t)d->left;
		d->left -= take;
		if (d->left == 0)
			d->framing = F_DISCARD;
		return (ssize_t)take;
	}
	case F_CHUNKED: {
		bool done;
		ssize_t take = egr_chunked_feed(&d->ch, p, n, &done, why);
		if (take >= 0 && done)
			d->framing = F_DISCARD;
		return take;
	}
	}
	*why = "framing state broken";
	return -1;
}

/* Move what can move in one direction without blocking. Returns -1 when the
 * connection must close (an error, a reset, broken framing), else 0; sets
 * *moved when any byte moved. Every exit without progress waits on an edge
 * that will come: src readable (nothing buffered) or dst writable. */
/* A direction that carries a bulk transfer gets a bigger pipe, if the
 * budget allows; tried once per direction */
static void pipe_grow(struct loop *l, struct dir *d)
{
	d->pipe_grow_tried = true;
	if (l->nbig >= PIPE_BIG_MAX || fcntl(d->pipe_w, F_SETPIPE_SZ, PIPE_BIG) < 0)
		return;
	d->pipe_big = true;
	l->nbig++;
}

/* A direction's pipe comes when its first byte does: most short tunnels
 * (a handshake, a refused TLS session) never carry one, and two pipes made
 * and closed for nothing were a fifth of their cost. 1: there is a byte and
 * a pipe for it; 0: nothing yet (EAGAIN; src not ready), or the end
 * (d->eof); -1: an error. */
static int pipe_need(struct loop *l, struct dir *d)
{
	char byte;
	ssize_t n = recv(d->src, &byte, 1, MSG_PEEK);
	if (n == 0) {
		d->eof = true;
		return 0;
	}
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR) {
			if (errno == EAGAIN)
				*d->src_ready = false;
			return 0;
		}
		return -1;
	}
	int p[2];
	if (l->npool > 0) {
		l->npool--;
		p[0] = l->pool[l->npool][0];
		p[1] = l->pool[l->npool][1];
	} else if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0) {
		fprintf(stderr, "mcpgate-egress: pipe: %s\n", strerror(errno));
		return -1;
	}
	d->pipe_r = p[0];
	d->pipe_w = p[1];
	return 1;
}

/* How much of `want` bytes a direction may write now: all of it, unless it
 * counts against the session's -max-bytes-up; 0 when that is reached. */
static size_t room(const struct loop *l, const struct dir *d, size_t want)
{
	uint64_t max = l->o->max_bytes_up;
	if (!d->capped || max == 0)
		return want;
	uint64_t left = l->sent_up < max ? max - l->sent_up : 0;
	return want < left ? want : (size_t)left;
}

#define PUMP_CAPPED (-2)

/* Returns 0, -1 (close), or PUMP_CAPPED: bytes wait that the session's cap
 * does not let through. */
static int pump(struct loop *l, struct dir *d, bool *moved)
{
	for (;;) {
		bool progress = false;
		size_t want = d->off < d->len ? d->len - d->off : d->in_pipe;
		size_t may = room(l, d, want);
		if (want > 0 && may == 0)
			return PUMP_CAPPED;
		if (d->off < d->len && *d->dst_ready) {
			ssize_t n = send(d->dst, d->buf + d->off, may, MSG_NOSIGNAL);
			if (n > 0) {
				d->off += (size_t)n;
				d->bytes += (uint64_t)n;
				if (d->capped)
					l->sent_up += (uint64_t)n;
				progress = true;
				if (d->off == d->len && !d->buffered) {
					/* a prefix (our 200, early tunnel bytes) is done with */
					free(d->buf);
					d->buf = NULL;
					d->off = d->len = d->cap = 0;
				}
			} else if (n < 0 && errno == EAGAIN) {
				*d->dst_ready = false;
			} else if (n < 0 && errno != EINTR) {
				return -1;
			}
		} else if (d->off >= d->len && d->in_pipe > 0 && *d->dst_ready) {
			ssize_t n = splice(d->pipe_r, NULL, d->dst, NULL, may,
			                   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0) {
				d->in_pipe -= (size_t)n;
				d->bytes += (uint64_t)n;
				if (d->capped)
					l->sent_up += (uint64_t)n;
				progress = true;
			} else if (n < 0 && errno == EAGAIN) {
				*d->dst_ready = false;
			} else if (n < 0 && errno != EINTR) {
				return -1;
			}
		}
		if (!d->eof && d->buffered && d->off >= d->len && *d->src_ready) {
			ssize_t n = recv(d->src, d->buf, d->cap, 0);
			if (n > 0) {
				const char *why;
				ssize_t take = frame(d, d->buf, (size_t)n, &why);
				if (take < 0)
					return -1;
				d->off = 0;
				d->len = (size_t)take;
				progress = true;
			} else if (n == 0) {
				d->eof = true;
				progress = true;
			} else if (errno == EAGAIN) {
				*d->src_ready = false;
			} else if (errno != EINTR) {
				return -1;
			}
		} else if (!d->eof && !d->buffered && *d->src_ready) {
			if (d->pipe_r < 0) {
				int r = pipe_need(l, d);
				if (r < 0)
					return -1;
				if (r == 0) {
					progress = d->eof;
					goto next;
				}
			}
			ssize_t n = splice(d->src, NULL, d->pipe_w, NULL,
			                   d->pipe_big ? PIPE_BIG : SPLICE_CHUNK,
			                   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0) {
				d->in_pipe += (size_t)n;
				progress = true;
				if (!d->pipe_grow_tried && d->bytes >= PIPE_GROW_AFTER)
					pipe_grow(l, d);
			} else if (n == 0) {
				d->eof = true;
				progress = true;
			} else if (errno == EAGAIN) {
				/* the socket is empty, or the pipe is full: a pipe that
				 * holds bytes waits for dst, whose edge comes back here */
				if (d->in_pipe == 0)
					*d->src_ready = false;
				else
					break;
			} else if (errno != EINTR) {
				return -1;
			}
		}
	next:
		if (!progress)
			break;
		*moved = true;
	}
	/* pass an end on (tunnels and responses; a request's end stays ours) */
	if (d->eof && !d->buffered && d->off >= d->len && d->in_pipe == 0 && !d->shut) {
		shutdown(d->dst, SHUT_WR);
		d->shut = true;
	}
	return 0;
}

/* How long a tunnel lives on in silence once its client has sent its end */
#define HALF_CLOSE_LINGER_MS 2000

static void relay_pump(struct loop *l, struct conn *c)
{
	bool moved = false;
	int r = pump(l, &c->up, &moved);
	if (r == PUMP_CAPPED) {
		egr_log_limit(c->host.name, c->port, l->sent_up, l->o->max_bytes_up);
		conn_close(l, c, "over -max-bytes-up");
		return;
	}
	if (r < 0 || pump(l, &c->down, &moved) < 0) {
		conn_close(l, c, "relay error");
		return;
	}
	/* A client that has sent its end gets the rest of the answer, but a
	 * tunnel whose upstream then falls silent must not hold its place (and
	 * its six descriptors) against -max-tunnels for the whole idle timeout */
	bool half_closed = c->is_connect && c->up.shut && !c->down.shut;
	if (moved || (half_closed && !c->half_closed)) {
		int64_t idle = l->o->idle_timeout_ms;
		set_deadline(
		    l, c, half_closed && idle > HALF_CLOSE_LINGER_MS ? HALF_CLOSE_LINGER_MS : idle);
	}
	if (half_closed != c->half_closed) {
		if (half_closed)
			l->nhalf++;
		else
			l->nhalf--;
	}
	c->half_closed = half_closed;
	bool done;
	if (c->is_connect)
		done = c->up.shut && c->down.shut;
	else /* the response has ended, or the client gave up mid-request */
		done = c->down.shut || (c->up.eof && c->up.framing != F_DISCARD);
	if (done)
		conn_close(l, c, "done");
}

static int add_fd(struct loop *l, int fd, uint64_t tag, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.u64 = tag};
	return epoll_ctl(l->ep, EPOLL_CTL_ADD, fd, &ev);
}

/* The destination passed every check: its allowed attempt record, and from
 * here on a close record is due, whatever happens next */
static void start_relay(struct loop *l, struct conn *c)
{
	log_attempt(c, true, "ok");
	c->established = true;
	c->t_start = now_ms();
	c->up.src = c->down.dst = c->cfd;
	c->up.dst = c->down.src = c->ufd;
	/* what came before the relay is not known in full: try each once */
	c->c_rd = c->c_wr = c->u_wr = true;
	c->up.capped = true;
	c->up.src_ready = &c->c_rd;
	c->up.dst_ready = &c->u_wr;
	c->down.src_ready = &c->u_rd;
	c->down.dst_ready = &c->c_wr;
	c->state = S_RELAY;
	set_deadline(l, c, l->o->idle_timeout_ms);
	relay_pump(l, c);
}

static void sni_step(struct loop *l, struct conn *c)
{
	/* the 200 first, then the ClientHello; neither waits for the other */
	struct dir *down = &c->down;
	while (down->off < down->len) {
		ssize_t n =
		    send(c->cfd, down->buf + down->off, down->len - down->off, MSG_NOSIGNAL);
		if (n > 0) {
			down->off += (size_t)n;
			down->bytes += (uint64_t)n;
		} else if (n < 0 && errno == EAGAIN) {
			break;
		} else if (!(n < 0 && errno == EINTR)) {
			conn_close(l, c, "tls: the client closed before its ClientHello");
			return;
		}
	}
	struct dir *up = &c->up;
	for (;;) {
		const char *why;
		struct egr_hello hello;
		int r = egr_tls_hello((const unsigned char *)up->buf, up->len, &hello, &why);
		if (r > 0) {
			why = egr_sni_refusal(&c->host, hello.sni, hello.sni_len);
			if (why == NULL) {
				start_relay(l, c);
				return;
			}
		}
		/* a record fits the buffer (connected() sized it), so "too large"
		 * is a guard, not a case */
		if (r != 0 || up->len == up->cap) {
			snprintf(c->reason, sizeof(c->reason), "tls: %s",
			         r != 0 ? why : "ClientHello too large");
			conn_close(l, c, c->reason);
			return;
		}
		ssize_t n = recv(c->cfd, up->buf + up->len, up->cap - up->len, 0);
		if (n > 0) {
			up->len += (size_t)n;
		} else if (n == 0) {
			conn_close(l, c, "tls: the client closed before its ClientHello");
			return;
		} else if (errno == EAGAIN) {
			return;
		} else if (errno != EINTR) {
			conn_close(l, c, "tls: the client closed before its ClientHello");
			return;
		}
	}
}

static void connected(struct loop *l, struct conn *c)
{
	int one = 1;
	/* (the client's socket has it from the listening one) */
	if (c->fwd == NULL || !c->fwd->target.is_unix)
		setsockopt(c->ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (!c->is_connect || c->fwd != NULL) {
		start_relay(l, c);
		return;
	}
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	c->down.buf = xmalloc(sizeof(ok));
	memcpy(c->down.buf, ok, sizeof(ok) - 1);
	c->down.off = 0;
	c->down.len = c->down.cap = sizeof(ok) - 1;
	c->down.uncounted = sizeof(ok) - 1;
	/* 443 is TLS whatever the entry: a name, an address, bare or :443 */
	if (l->o->sni_check && c->port == 443) {
		/* room for one whole TLS record after what came early */
		if (c->up.cap < EGR_TLS_RECORD_MAX) {
			char *buf = realloc(c->up.buf, EGR_TLS_RECORD_MAX);
			if (buf == NULL) {
				fputs("mcpgate-egress: out of memory\n", stderr);
				abort();
			}
			c->up.buf = buf;
			c->up.cap = EGR_TLS_RECORD_MAX;
		}
		c->state = S_SNI;
		set_deadline(l, c, l->o->header_timeout_ms);
		sni_step(l, c);
		return;
	}
	start_relay(l, c);
}

static void connect_failed(struct loop *l, struct conn *c)
{
	if (c->last_err == ETIMEDOUT) {
		refuse(l, c, 504, "connect timeout");
		return;
	}
	snprintf(c->reason, sizeof(c->reason), "connect: %s", strerror(c->last_err));
	refuse(l, c, 502, c->reason);
}

/* A forward's hop to a unix: socket (mcpgate's host side) */
static void connect_unix(struct loop *l, struct conn *c)
{
	struct sockaddr_un sun;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, c->fwd->target.path, strlen(c->fwd->target.path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		/* a unix socket connects at once, or not at all (EAGAIN: its
		 * backlog is full) */
		snprintf(c->reason, sizeof(c->reason), "connect: mcpgate's host side: %s",
		         strerror(errno));
		if (fd >= 0)
			close(fd);
		refuse(l, c, 502, c->reason);
		return;
	}
	c->ufd = fd;
	c->u_rd = c->u_wr = false;
	if (add_fd(l, fd, (uint64_t)(uintptr_t)c | 1u, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET) <
	    0) {
		close_fd(&c->ufd);
		refuse(l, c, 502, "connect: mcpgate's host side: epoll");
		return;
	}
	connected(l, c);
}

static void try_connect(struct loop *l, struct conn *c)
{
	while (c->next_addr < c->naddrs) {
		const struct egr_addr *a = &c->addrs[c->next_addr++];
		egr_addr_format(a, c->address, sizeof(c->address));
		c->have_address = true;
		struct sockaddr_storage ss;
		socklen_t slen;
		memset(&ss, 0, sizeof(ss));
		if (a->family == 4) {
			struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
			sin->sin_family = AF_INET;
			sin->sin_port = htons(c->port);
			memcpy(&sin->sin_addr, a->b, 4);
			slen = sizeof(*sin);
		} else {
			struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
			sin6->sin6_family = AF_INET6;
			sin6->sin6_port = htons(c->port);
			memcpy(&sin6->sin6_addr, a->b, 16);
			slen = sizeof(*sin6);
		}
		int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			c->last_err = errno;
			continue;
		}
		int r = connect(fd, (struct sockaddr *)&ss, slen);
		if (r < 0 && errno != EINPROGRESS) {
			c->last_err = errno;
			close(fd);
			continue;
		}
		c->ufd = fd;
		c->u_rd = c->u_wr = false; /* from this socket's events on */
		if (add_fd(l, fd, (uint64_t)(uintptr_t)c | 1u,
		           EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET) < 0) {
			c->last_err = errno;
			close_fd(&c->ufd);
			continue;
		}
		if (r == 0) {
			connected(l, c);
			return;
		}
		c->state = S_CONNECT;
		set_deadline(l, c, l->o->connect_timeout_ms);
		return;
	}
	connect_failed(l, c);
}

static void connect_done(struct loop *l, struct conn *c, uint32_t events)
{
	int err = 0;
	socklen_t len = sizeof(err);
	/* writable without an error is connected; only a failure needs asking */
	if ((events & (EPOLLERR | EPOLLHUP)) || !(events & EPOLLOUT)) {
		if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			err = errno;
		if (err == 0 && !(events & EPOLLOUT))
			return; /* not yet: the edge of the connect comes */
	}
	if (err == 0) {
		connected(l, c);
		return;
	}
	if (err == EINPROGRESS)
		return;
	c->last_err = err;
	close_fd(&c->ufd);
	try_connect(l, c);
}

static void check_and_connect(struct loop *l, struct conn *c)
{
	size_t bad;
	const char *reason, *range;
	/* the host's loopback, judged at start: mcpgate's host side is the
	 * one way there */
	bool loopback = c->fwd != NULL && c->fwd->loopback;
	if (!loopback && egr_addrs_check(&l->pol, c->private_ok, c->addrs, c->naddrs, &bad, &reason,
	                                 &range) < 0) {
		egr_addr_format(&c->addrs[bad], c->address, sizeof(c->address));
		c->have_address = true;
		snprintf(c->reason, sizeof(c->reason), "%s (%s)", reason, range);
		refuse(l, c, 403, c->reason);
		return;
	}
	c->next_addr = 0;
	try_connect(l, c);
}

static void *dns_thread(void *arg)
{
	struct dns_job *job = arg;
	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_protocol = IPPROTO_TCP;
	job->gai = getaddrinfo(job->host, NULL, &hints, &res);
	for (struct addrinfo *ai = job->gai == 0 ? res : NULL; ai != NULL; ai = ai->ai_next) {
		struct egr_addr a;
		memset(&a, 0, sizeof(a));
		if (ai->ai_family == AF_INET) {
			a.family = 4;
			memcpy(a.b, &((struct sockaddr_in *)(void *)ai->ai_addr)->sin_addr, 4);
		} else if (ai->ai_family == AF_INET6) {
			a.family = 6;
			memcpy(a.b, &((struct sockaddr_in6 *)(void *)ai->ai_addr)->sin6_addr, 16);
		} else {
			continue;
		}
		bool dup = false;
		for (size_t i = 0; i < job->naddrs && !dup; i++)
			dup = memcmp(&job->addrs[i], &a, sizeof(a)) == 0;
		if (dup)
			continue;
		if (job->naddrs == MAX_ADDRS) {
			job->too_many = true;
			break;
		}
		job->addrs[job->naddrs++] = a;
	}
	if (res != NULL)
		freeaddrinfo(res);
	ssize_t w;
	do
		w = write(dns_pipe_w, &job, sizeof(job));
	while (w < 0 && errno == EINTR);
	if (w != (ssize_t)sizeof(job))
		abort(); /* the loop would wait for this job forever */
	return NULL;
}

static void start_dns(struct loop *l, struct conn *c)
{
	if (l->njobs >= 2 * (size_t)l->o->max_tunnels) {
		refuse(l, c, 502, "dns: too many lookups in flight");
		return;
	}
	struct dns_job *job = calloc(1, sizeof(*job));
	if (job == NULL) {
		fputs("mcpgate-egress: out of memory\n", stderr);
		abort();
	}
	memcpy(job->host, c->host.name, sizeof(job->host));
	pthread_attr_t attr;
	pthread_t tid;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, DNS_STACK);
	int r = pthread_create(&tid, &attr, dns_thread, job);
	pthread_attr_destroy(&attr);
	if (r != 0) {
		free(job);
		snprintf(c->reason, sizeof(c->reason), "dns: cannot start a lookup: %s",
		         strerror(r));
		refuse(l, c, 502, c->reason);
		return;
	}
	job->conn = c;
	job->next = l->jobs;
	if (l->jobs != NULL)
		l->jobs->prev = job;
	l->jobs = job;
	l->njobs++;
	c->job = job;
	c->state = S_DNS;
	set_deadline(l, c, l->o->dns_timeout_ms);
}

static void dns_done(struct loop *l, struct conn *c, struct dns_job *job)
{
	if (job->gai != 0) {
		snprintf(c->reason, sizeof(c->reason), "dns: %s", gai_strerror(job->gai));
		refuse(l, c, 502, c->reason);
		return;
	}
	if (job->too_many) {
		refuse(l, c, 403, "too many addresses to check");
		return;
	}
	if (job->naddrs == 0) {
		refuse(l, c, 502, "dns: no address");
		return;
	}
	memcpy(c->addrs, job->addrs, job->naddrs * sizeof(job->addrs[0]));
	c->naddrs = job->naddrs;
	check_and_connect(l, c);
}

static void on_dns(struct loop *l)
{
	for (;;) {
		struct dns_job *job;
		ssize_t n = read(l->dns_r, &job, sizeof(job));
		if (n != (ssize_t)sizeof(job)) {
			if (n < 0 && errno == EINTR)
				continue;
			return;
		}
		if (job->prev != NULL)
			job->prev->next = job->next;
		else
			l->jobs = job->next;
		if (job->next != NULL)
			job->next->prev = job->prev;
		l->njobs--;
		struct conn *c = job->conn;
		if (c != NULL && !c->dead) {
			c->job = NULL;
			dns_done(l, c, job);
		}
		free(job);
	}
}

/* The request's header section is complete: decide by name and port, then
 * by address (after a lookup for a name). */
static void process(struct loop *l, struct conn *c, size_t head_len)
{
	const struct egr_opts *o = l->o;
	struct egr_request req;
	const char *p = c->head, *why = "incomplete header section";
	int r = egr_parse_request(&p, c->head + c->head_len, &o->lim, &req, &why);
	if (req.have_method) {
		memcpy(c->method, req.method, sizeof(c->method));
		c->have_method = true;
	}
	if (req.have_target) {
		c->host = req.host;
		c->port = req.port;
		c->have_host = true;
	}
	if (r != 1 || (size_t)(p - c->head) != head_len) {
		snprintf(c->reason, sizeof(c->reason), "bad request: %s", why);
		refuse(l, c, 400, c->reason);
		return;
	}
	c->is_connect = req.kind == EGR_REQ_CONNECT;
	if (o->max_bytes_up != 0 && l->sent_up >= o->max_bytes_up) {
		refuse(l, c, 403, "the session has sent its -max-bytes-up");
		return;
	}
	if (c->host.kind == EGR_HOST_NUMERIC) {
		refuse(l, c, 403, "numeric-looking name");
		return;
	}
	if (c->host.kind == EGR_HOST_NAME && egr_name_always_refused(c->host.name)) {
		refuse(l, c, 403, "the runtime's host alias or localhost");
		return;
	}
	switch (egr_allow_match(o->allow, o->nallow, &c->host, c->port, &c->private_ok)) {
	case EGR_MATCH_NONE:
		refuse(l, c, 403, "not listed");
		return;
	case EGR_MATCH_PORT:
		refuse(l, c, 403, "port not listed");
		return;
	case EGR_MATCH_OK:
		break;
	}
	/* A tunnel to 80 would carry any Host header past the check a plain
	 * request gets, to any virtual host at the listed address */
	if (c->is_connect && c->port == 80) {
		refuse(l, c, 403, "CONNECT to port 80 (send plain HTTP as a proxy request)");
		return;
	}
	const char *rest = c->head + head_len;
	size_t rest_len = c->head_len - head_len;
	if (!c->is_connect) {
		size_t cap = o->lim.max_header_bytes * 2 + 1024;
		char *buf = xmalloc(cap);
		ssize_t n = egr_build_forward(&req, buf, cap);
		c->up.framing = req.body == EGR_BODY_LENGTH    ? F_LENGTH
		                : req.body == EGR_BODY_CHUNKED ? F_CHUNKED
		                                               : F_DISCARD;
		c->up.left = req.content_length;
		ssize_t take = n < 0 ? -1 : frame(&c->up, rest, rest_len, &why);
		if (n < 0 || take < 0) {
			free(buf);
			snprintf(c->reason, sizeof(c->reason), "bad request: %s",
			         n < 0 ? "too large to forward" : why);
			refuse(l, c, 400, c->reason);
			return;
		}
		memcpy(buf + n, rest, (size_t)take);
		c->up.buf = buf;
		c->up.cap = cap;
		c->up.len = (size_t)n + (size_t)take;
		c->up.buffered = true;
	} else {
		/* early tunnel bytes (the start of a ClientHello, usually) go first */
		if (rest_len > 0) {
			c->up.buf = xmalloc(rest_len);
			memcpy(c->up.buf, rest, rest_len);
			c->up.cap = c->up.len = rest_len;
		}
	}
	head_put(l, c);
	if (c->host.kind == EGR_HOST_NAME) {
		start_dns(l, c);
		return;
	}
	c->addrs[0] = c->host.addr;
	c->naddrs = 1;
	check_and_connect(l, c);
}

static void head_read(struct loop *l, struct conn *c)
{
	size_t cap = l->o->lim.max_header_bytes;
	for (;;) {
		ssize_t n = recv(c->cfd, c->head + c->head_len, cap - c->head_len, 0);
		if (n > 0) {
			c->head_len += (size_t)n;
			size_t head_len;
			const char *why;
			int r = egr_scan_head(&c->scan, c->head, c->head_len, &l->o->lim, &head_len,
			                      &why);
			if (r < 0) {
				snprintf(c->reason, sizeof(c->reason), "bad request: %s", why);
				refuse(l, c, 400, c->reason);
				return;
			}
			if (r > 0) {
				process(l, c, head_len);
				return;
			}
			if (c->head_len == cap) {
				refuse(l, c, 400, "bad request: header section over the cap");
				return;
			}
		} else if (n == 0) {
			conn_close(l, c, "the client closed during the header section");
			return;
		} else if (errno == EAGAIN) {
			return;
		} else if (errno != EINTR) {
			conn_close(l, c, "the client closed during the header section");
			return;
		}
	}
}

#define EV_READ  (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)
#define EV_WRITE (EPOLLOUT | EPOLLHUP | EPOLLERR)

static void on_client(struct loop *l, struct conn *c, uint32_t events)
{
	c->c_rd |= (events & EV_READ) != 0;
	c->c_wr |= (events & EV_WRITE) != 0;
	switch (c->state) {
	case S_HEAD:
		head_read(l, c);
		return;
	case S_DNS:
	case S_CONNECT:
		if (events & (EPOLLERR | EPOLLHUP))
			conn_close(l, c, "the client closed before the upstream answered");
		return;
	case S_SNI:
		sni_step(l, c);
		return;
	case S_RELAY:
		relay_pump(l, c);
		return;
	case S_ANSWER:
	case S_LINGER:
		answer_pump(l, c);
		return;
	}
}

static void on_upstream(struct loop *l, struct conn *c, uint32_t events)
{
	c->u_rd |= (events & EV_READ) != 0;
	c->u_wr |= (events & EV_WRITE) != 0;
	switch (c->state) {
	case S_CONNECT:
		connect_done(l, c, events);
		return;
	case S_RELAY:
		relay_pump(l, c);
		return;
	case S_HEAD:
	case S_DNS:
	case S_SNI: /* upstream bytes wait in its socket until the relay starts */
	case S_ANSWER:
	case S_LINGER:
		return;
	}
}

/* A -forward connection goes to its listener's destination at once, judged
 * as a listed host's is, a private address allowed: the person named it */
static void forward_start(struct loop *l, struct conn *c, const struct egr_forward *f)
{
	c->fwd = f;
	c->is_connect = true; /* a tunnel: bytes both ways until both ends */
	c->private_ok = true;
	memcpy(c->method, "TCP", 4);
	c->have_method = true;
	head_put(l, c);
	if (f->target.is_unix) {
		c->host.kind = EGR_HOST_NAME;
		snprintf(c->host.name, sizeof(c->host.name), "unix:%s", f->target.path);
		c->have_host = true;
	} else {
		c->host = f->target.host;
		c->port = f->target.port;
		c->have_host = true;
	}
	if (l->o->max_bytes_up != 0 && l->sent_up >= l->o->max_bytes_up) {
		refuse(l, c, 403, "the session has sent its -max-bytes-up");
		return;
	}
	if (f->target.is_unix) {
		connect_unix(l, c);
		return;
	}
	if (c->host.kind == EGR_HOST_NAME) {
		start_dns(l, c);
		return;
	}
	c->addrs[0] = c->host.addr;
	c->naddrs = 1;
	check_and_connect(l, c);
}

/* The new connection, or NULL when it could not be watched (closed) */
static struct conn *conn_new(struct loop *l, int fd)
{
	struct conn *c = l->nspare > 0 ? l->spare[--l->nspare] : xmalloc(sizeof(*c));
	memset(c, 0, sizeof(*c));
	c->cfd = fd;
	c->ufd = -1;
	dir_init(&c->up);
	dir_init(&c->down);
	c->head = l->nheads > 0 ? l->heads[--l->nheads] : xmalloc(l->o->lim.max_header_bytes);
	c->state = S_HEAD;
	c->next = l->conns;
	if (l->conns != NULL)
		l->conns->prev = c;
	l->conns = c;
	l->nconns++;
	set_deadline(l, c, l->o->header_timeout_ms);
	if (add_fd(l, fd, (uint64_t)(uintptr_t)c, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET) < 0) {
		fprintf(stderr, "mcpgate-egress: epoll: %s\n", strerror(errno));
		conn_close(l, c, "epoll");
		return NULL;
	}
	return c;
}

/* Close the oldest tunnel whose client has sent its end (new connections
 * go to the head of the list, so the last one found is the oldest); its
 * close record is written as for any other */
static void evict_half_closed(struct loop *l)
{
	struct conn *oldest = NULL;
	for (struct conn *c = l->conns; c != NULL; c = c->next)
		if (c->half_closed)
			oldest = c;
	if (oldest != NULL)
		conn_close(l, oldest, "evicted");
}

/* Every listener watched for new connections again, or paused (events 0) */
static void listeners_watch(struct loop *l, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.u64 = TAG_LISTEN};
	if (l->lfd >= 0)
		epoll_ctl(l->ep, EPOLL_CTL_MOD, l->lfd, &ev);
	for (size_t i = 0; i < l->o->nforwards; i++) {
		ev.data.u64 = TAG_FORWARD + i;
		epoll_ctl(l->ep, EPOLL_CTL_MOD, l->forward_fds[i], &ev);
	}
}

/* From listening socket lfd: the HTTP proxy's (fwd NULL) or a forward's */
static void do_accept(struct loop *l, int lfd, const struct egr_forward *fwd)
{
	static const char busy[] =
	    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
	    "Content-Length: 36\r\nConnection: close\r\n\r\n"
	    "mcpgate-egress: too many tunnels\r\n\r\n";
	for (;;) {
		struct sockaddr_storage peer;
		socklen_t peer_len = sizeof(peer);
		memset(&peer, 0, sizeof(peer));
		int fd =
		    accept4(lfd, (struct sockaddr *)&peer, &peer_len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				/* the backlog stays readable: stop watching it for a moment
				 * rather than spin */
				fprintf(stderr, "mcpgate-egress: accept: %s\n", strerror(errno));
				listeners_watch(l, 0);
				l->listen_paused = true;
				l->listen_resume = now_ms() + 100;
				if (l->listen_resume < l->next_scan)
					l->next_scan = l->listen_resume;
			}
			return;
		}
		/* only the server's own network reaches a listener: another
		 * network the sidecar is on (a person's, for a connect
		 * destination) holds containers that were granted nothing */
		char peer_text[64];
		if (!egr_peer_allowed(l->o->from, l->o->nfrom, (struct sockaddr *)&peer, peer_text,
		                      sizeof(peer_text))) {
			close(fd);
			char why[128];
			snprintf(why, sizeof(why), "a connection from %s, outside -from",
			         peer_text);
			egr_log_attempt(fwd != NULL ? "TCP" : NULL, NULL, -1, peer_text, false,
			                why);
			continue;
		}
		/* a tunnel whose client has left is on its way out (2 s at most):
		 * it does not count against the cap, but no more than the cap of
		 * them is kept (their descriptors stay bounded). When they fill
		 * their share, the oldest makes room: a client that is here comes
		 * before one that has sent its end (an upstream slow to answer an
		 * end, a busy machine, had new clients refused with 503) */
		if (l->nconns - l->nhalf < l->o->max_tunnels &&
		    l->nconns >= 2 * (size_t)l->o->max_tunnels)
			evict_half_closed(l);
		if (l->nconns - l->nhalf >= l->o->max_tunnels ||
		    l->nconns >= 2 * (size_t)l->o->max_tunnels) {
			/* a forward's client speaks no HTTP: it is closed */
			ssize_t w = fwd != NULL ? 0
			                        : send(fd, busy, sizeof(busy) - 1,
			                               MSG_NOSIGNAL | MSG_DONTWAIT);
			(void)w;
			close(fd);
			/* refused before a byte was read: still an attempt on the record */
			egr_log_attempt(NULL, NULL, 0, NULL, false, "too many tunnels");
			uint64_t now = now_ms();
			if (now - l->last_busy_note >= 1000) {
				fprintf(stderr,
				        "mcpgate-egress: -max-tunnels %u reached: refusing\n",
				        l->o->max_tunnels);
				l->last_busy_note = now;
			}
			continue;
		}
		struct conn *c = conn_new(l, fd);
		if (c != NULL && fwd != NULL)
			forward_start(l, c, fwd);
	}
}

static void on_deadline(struct loop *l, struct conn *c)
{
	switch (c->state) {
	case S_HEAD:
		if (c->head_len == 0) {
			c->attempt_logged = true; /* nothing was asked: no record */
			answer(l, c, 408, "no request in time");
			return;
		}
		refuse(l, c, 408, "header timeout");
		return;
	case S_DNS:
		refuse(l, c, 504, "dns timeout");
		return;
	case S_CONNECT:
		close_fd(&c->ufd);
		c->last_err = ETIMEDOUT;
		try_connect(l, c);
		return;
	case S_SNI:
		conn_close(l, c, "tls: no ClientHello in time");
		return;
	case S_RELAY: /* idle */
	case S_ANSWER:
	case S_LINGER:
		conn_close(l, c, "timeout");
		return;
	}
}

/* Give back what the caches hold: memory, and the pool's descriptors */
static void trim(struct loop *l)
{
	while (l->nspare > 0)
		free(l->spare[--l->nspare]);
	while (l->nheads > 0)
		free(l->heads[--l->nheads]);
	while (l->npool > 0) {
		l->npool--;
		close(l->pool[l->npool][0]);
		close(l->pool[l->npool][1]);
	}
}

static void scan_deadlines(struct loop *l)
{
	uint64_t now = now_ms();
	if (now < l->next_scan)
		return;
	l->next_scan = UINT64_MAX;
	if (l->trim_at != 0 && now >= l->trim_at) {
		if (l->nconns == 0)
			trim(l);
		l->trim_at = 0;
	} else if (l->trim_at != 0) {
		l->next_scan = l->trim_at;
	}
	if (l->listen_paused) {
		if (now >= l->listen_resume) {
			listeners_watch(l, EPOLLIN);
			l->listen_paused = false;
		} else {
			l->next_scan = l->listen_resume;
		}
	}
	struct conn *next;
	for (struct conn *c = l->conns; c != NULL; c = next) {
		next = c->next;
		if (c->deadline <= now)
			on_deadline(l, c); /* may close c or set a new deadline */
		if (!c->dead && c->deadline < l->next_scan)
			l->next_scan = c->deadline;
	}
}

static void free_dead(struct loop *l)
{
	while (l->dead != NULL) {
		struct conn *c = l->dead;
		l->dead = c->next;
		if (l->nspare < CONN_CACHE)
			l->spare[l->nspare++] = c;
		else
			free(c);
	}
}

/* The end of the proxy (a signal, the lifeline): every connection still
 * open is closed the ordinary way, so each has its records, the tunnels
 * still relaying their close records among them. */
static int stop(struct loop *l, int status)
{
	while (l->conns != NULL)
		conn_close(l, l->conns, "the proxy stopped");
	free_dead(l);
	trim(l);
	egr_log_flush();
	return status;
}

int egr_run(const struct egr_opts *o, int listen_fd, const int *forward_fds,
            const struct egr_cidr *own, size_t nown)
{
	static struct loop loop; /* static: reachable for leak checkers at exit */
	struct loop *l = &loop;
	memset(l, 0, sizeof(*l));
	l->o = o;
	l->pol.deny = o->deny;
	l->pol.ndeny = o->ndeny;
	l->pol.own = own;
	l->pol.nown = nown;
	l->lfd = listen_fd;
	l->forward_fds = forward_fds;
	l->next_scan = UINT64_MAX;
	l->ep = epoll_create1(EPOLL_CLOEXEC);
	int dp[2];
	if (l->ep < 0 || pipe2(dp, O_CLOEXEC) < 0) {
		fprintf(stderr, "mcpgate-egress: %s\n", strerror(errno));
		return 1;
	}
	l->dns_r = dp[0];
	dns_pipe_w = dp[1];
	fcntl(l->dns_r, F_SETFL, O_NONBLOCK);
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGQUIT);
	l->sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	for (size_t i = 0; i < o->nforwards; i++)
		if (add_fd(l, forward_fds[i], TAG_FORWARD + i, EPOLLIN) < 0) {
			fprintf(stderr, "mcpgate-egress: %s\n", strerror(errno));
			return 1;
		}
	if (l->sfd < 0 || (l->lfd >= 0 && add_fd(l, l->lfd, TAG_LISTEN, EPOLLIN) < 0) ||
	    add_fd(l, l->sfd, TAG_SIGNAL, EPOLLIN) < 0 ||
	    add_fd(l, l->dns_r, TAG_DNS, EPOLLIN) < 0) {
		fprintf(stderr, "mcpgate-egress: %s\n", strerror(errno));
		return 1;
	}
	if (o->lifeline && add_fd(l, STDIN_FILENO, TAG_LIFELINE, EPOLLIN) < 0) {
		fprintf(stderr, "mcpgate-egress: -lifeline: cannot watch standard input: %s\n",
		        strerror(errno));
		return 1;
	}
	struct epoll_event evs[64];
	for (;;) {
		int timeout = -1;
		if (l->next_scan != UINT64_MAX) {
			uint64_t now = now_ms();
			uint64_t wait = l->next_scan > now ? l->next_scan - now : 0;
			timeout = wait > 60000 ? 60000 : (int)wait;
		}
		int n = epoll_wait(l->ep, evs, 64, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "mcpgate-egress: epoll_wait: %s\n", strerror(errno));
			return stop(l, 1);
		}
		for (int i = 0; i < n; i++) {
			uint64_t tag = evs[i].data.u64;
			if (tag == TAG_LISTEN) {
				do_accept(l, l->lfd, NULL);
			} else if (tag >= TAG_FORWARD && tag < TAG_FORWARD + o->nforwards) {
				do_accept(l, forward_fds[tag - TAG_FORWARD],
				          &o->forwards[tag - TAG_FORWARD]);
			} else if (tag == TAG_SIGNAL) {
				struct signalfd_siginfo si;
				if (read(l->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
					fprintf(stderr, "mcpgate-egress: signal %u: exiting\n",
					        si.ssi_signo);
					return stop(l, 0);
				}
			} else if (tag == TAG_LIFELINE) {
				char sink[256];
				ssize_t r = read(STDIN_FILENO, sink, sizeof(sink));
				if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) {
					fprintf(stderr,
					        "mcpgate-egress: standard input ended: exiting\n");
					return stop(l, 0);
				}
			} else if (tag == TAG_DNS) {
				on_dns(l);
			} else {
				struct conn *c = (struct conn *)(uintptr_t)(tag & ~(uint64_t)1);
				if (c->dead)
					continue;
				if (tag & 1)
					on_upstream(l, c, evs[i].events);
				else
					on_client(l, c, evs[i].events);
			}
		}
		free_dead(l);
		scan_deadlines(l);
		free_dead(l);
		egr_log_flush();
	}
}
