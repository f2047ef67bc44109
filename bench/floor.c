/* The least an HTTP proxy can be, as bench/egress.py's floor for
 * mcpgate-egress:
 *
 *   floor RELAY_PORT HANDSHAKE_PORT UPSTREAM_ADDR UPSTREAM_PORT
 *
 * listens on 127.0.0.1:RELAY_PORT and 127.0.0.1:HANDSHAKE_PORT and sends
 * every connection to the one fixed upstream (an IPv4 address), whatever
 * the request names. On RELAY_PORT: read the request head (up to its blank
 * line, nothing parsed but whether it begins with "CONNECT "), connect,
 * answer 200 to a CONNECT or pass the head on as it came for anything else,
 * then splice both ways through a pipe per direction (made with the
 * direction's first byte, as mcpgate-egress does), with the pipe sizes
 * mcpgate-egress uses (the default pipe, 1 MiB once a direction has carried
 * 1 MiB), passing each end on with shutdown(SHUT_WR) and closing both
 * sockets once both ends have passed or either side fails. On
 * HANDSHAKE_PORT: read the CONNECT head, connect, answer 200, close.
 *
 * No checks, no records, no limits beyond the head buffer: one thread, one
 * epoll set, every socket non-blocking and edge-triggered. It exits when
 * its standard input ends (the bench's lifeline). Bench only: built by
 * `make bench-egress`, not part of mcpgate. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define HEAD_MAX        8192
#define PIPE_BIG        (1u << 20)
#define PIPE_GROW_AFTER (1u << 20)
#define SPLICE_CHUNK    (1u << 16)
#define ACCEPT_BATCH    64
#define EVENTS          256

/* epoll data: a connection pointer with the low bit set for its upstream
 * side, or one of these small tags */
#define TAG_STDIN     1u
#define TAG_RELAY     2u
#define TAG_HANDSHAKE 3u

static const char answer_200[] = "HTTP/1.1 200 Connection established\r\n\r\n";

enum state { ST_HEAD, ST_CONNECTING, ST_RELAY };

struct dir {
	int src, dst;
	bool *src_ready, *dst_ready;
	int pipe_r, pipe_w;
	size_t in_pipe;
	uint64_t bytes;
	bool big, eof, shut;
};

struct conn {
	enum state state;
	bool handshake_only; /* HANDSHAKE_PORT: 200, then close */
	bool is_connect;
	int cfd, ufd;
	bool c_read, c_write, u_read, u_write;
	struct dir up, down; /* client to upstream, upstream to client */
	size_t head_len;
	char head[HEAD_MAX];
};

static int ep = -1;
static struct sockaddr_in upstream;
/* Closed connections' memory is kept for the next ones: musl's free gives
 * an 8 KiB block back with madvise each time, a system call per connection
 * that mcpgate-egress (which keeps its own) does not make */
#define SPARE_CONNS 64
static struct conn *spare[SPARE_CONNS];
static size_t nspare;

static int parse_port(const char *s, unsigned short *port)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < 1 || v > 65535)
		return -1;
	*port = (unsigned short)v;
	return 0;
}

static int listen_on(unsigned short port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* as mcpgate-egress's listener: accepted sockets inherit it, so the
	 * answer's last partial segment goes out without waiting for an ACK */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 4096) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void conn_close(struct conn *c)
{
	if (c->cfd >= 0)
		close(c->cfd);
	if (c->ufd >= 0)
		close(c->ufd);
	struct dir *ds[] = {&c->up, &c->down};
	for (size_t i = 0; i < 2; i++) {
		if (ds[i]->pipe_r >= 0) {
			close(ds[i]->pipe_r);
			close(ds[i]->pipe_w);
		}
	}
	if (nspare < SPARE_CONNS)
		spare[nspare++] = c;
	else
		free(c);
}

static void dir_init(struct dir *d, int src, int dst, bool *src_ready, bool *dst_ready)
{
	d->src = src;
	d->dst = dst;
	d->src_ready = src_ready;
	d->dst_ready = dst_ready;
	d->pipe_r = d->pipe_w = -1;
}

/* A direction's pipe is made with its first byte: a tunnel that never
 * carries one (a handshake) needs none, and any proxy can do without it.
 * 1: a byte waits and the pipe is there; 0: nothing yet, or the end. */
static int pipe_need(struct dir *d)
{
	char byte;
	ssize_t n = recv(d->src, &byte, 1, MSG_PEEK);
	if (n == 0) {
		d->eof = true;
		return 0;
	}
	if (n < 0) {
		if (errno == EAGAIN)
			*d->src_ready = false;
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	}
	int p[2];
	if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
		return -1;
	d->pipe_r = p[0];
	d->pipe_w = p[1];
	return 1;
}

/* Move what can move in one direction now. -1: the connection must close. */
static int pump(struct dir *d)
{
	for (;;) {
		bool progress = false;
		if (d->pipe_r < 0 && !d->eof && *d->src_ready) {
			int r = pipe_need(d);
			if (r < 0)
				return -1;
			if (r == 0)
				break;
		}
		if (d->in_pipe > 0 && *d->dst_ready) {
			ssize_t n = splice(d->pipe_r, NULL, d->dst, NULL, d->in_pipe,
			                   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0) {
				d->in_pipe -= (size_t)n;
				d->bytes += (uint64_t)n;
				progress = true;
				if (!d->big && d->bytes >= PIPE_GROW_AFTER) {
					d->big = true;
					if (fcntl(d->pipe_w, F_SETPIPE_SZ, PIPE_BIG) < 0)
						fprintf(stderr, "floor: F_SETPIPE_SZ: %s\n",
						        strerror(errno));
				}
			} else if (n < 0 && errno == EAGAIN) {
				*d->dst_ready = false;
			} else if (n < 0 && errno != EINTR) {
				return -1;
			}
		}
		if (!d->eof && *d->src_ready && d->pipe_r >= 0) {
			ssize_t n =
			    splice(d->src, NULL, d->pipe_w, NULL, d->big ? PIPE_BIG : SPLICE_CHUNK,
			           SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0) {
				d->in_pipe += (size_t)n;
				progress = true;
			} else if (n == 0) {
				d->eof = true;
				progress = true;
			} else if (errno == EAGAIN) {
				/* an empty socket, or a full pipe waiting for dst */
				if (d->in_pipe == 0)
					*d->src_ready = false;
				else if (!*d->dst_ready)
					break;
			} else if (errno != EINTR) {
				return -1;
			}
		}
		if (!progress)
			break;
	}
	if (d->eof && d->in_pipe == 0 && !d->shut) {
		shutdown(d->dst, SHUT_WR);
		d->shut = true;
	}
	return 0;
}

static int start_relay(struct conn *c, const char *rest, size_t rest_len)
{
	dir_init(&c->up, c->cfd, c->ufd, &c->c_read, &c->u_write);
	dir_init(&c->down, c->ufd, c->cfd, &c->u_read, &c->c_write);
	/* a fresh socket's send buffer holds a head and what came with it */
	if (rest_len > 0 && send(c->ufd, rest, rest_len, MSG_NOSIGNAL) != (ssize_t)rest_len) {
		fprintf(stderr, "floor: could not pass %zu bytes on at once\n", rest_len);
		return -1;
	}
	c->state = ST_RELAY;
	return 0;
}

/* The upstream connection is made: answer, or pass the head on. */
static int connected(struct conn *c)
{
	const char *end = memmem(c->head, c->head_len, "\r\n\r\n", 4);
	size_t head_end = (size_t)(end - c->head) + 4;
	if (c->is_connect) {
		if (send(c->cfd, answer_200, sizeof(answer_200) - 1, MSG_NOSIGNAL) !=
		    (ssize_t)(sizeof(answer_200) - 1))
			return -1;
		if (c->handshake_only)
			return 1;
		return start_relay(c, c->head + head_end, c->head_len - head_end);
	}
	return start_relay(c, c->head, c->head_len);
}

static int read_head(struct conn *c)
{
	for (;;) {
		if (c->head_len == sizeof(c->head))
			return -1;
		ssize_t n = recv(c->cfd, c->head + c->head_len, sizeof(c->head) - c->head_len, 0);
		if (n == 0)
			return -1;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				c->c_read = false;
				return 0;
			}
			return -1;
		}
		c->head_len += (size_t)n;
		if (memmem(c->head, c->head_len, "\r\n\r\n", 4) != NULL)
			break;
	}
	c->is_connect = c->head_len >= 8 && memcmp(c->head, "CONNECT ", 8) == 0;
	if (c->handshake_only && !c->is_connect)
		return -1;
	c->ufd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->ufd < 0)
		return -1;
	struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET};
	ev.data.u64 = (uint64_t)(uintptr_t)c | 1u;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, c->ufd, &ev) < 0)
		return -1;
	if (connect(c->ufd, (struct sockaddr *)&upstream, sizeof(upstream)) < 0 &&
	    errno != EINPROGRESS)
		return -1;
	c->state = ST_CONNECTING;
	return 0;
}

/* One connection's events: 1 when it is done with (closed), else 0. */
static int on_event(struct conn *c, bool upstream_side, uint32_t events)
{
	bool readable = events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR);
	bool writable = events & (EPOLLOUT | EPOLLHUP | EPOLLERR);
	if (upstream_side) {
		c->u_read |= readable;
		c->u_write |= writable;
	} else {
		c->c_read |= readable;
		c->c_write |= writable;
	}
	int r = 0;
	switch (c->state) {
	case ST_HEAD:
		if (c->c_read)
			r = read_head(c);
		break;
	case ST_CONNECTING:
		if (upstream_side && (events & (EPOLLERR | EPOLLHUP)))
			r = -1;
		else if (upstream_side && writable)
			r = connected(c);
		break;
	case ST_RELAY:
		break;
	}
	if (r == 0 && c->state == ST_RELAY) {
		if (pump(&c->up) < 0 || pump(&c->down) < 0)
			r = -1;
		else if (c->up.shut && c->down.shut)
			r = 1;
	}
	if (r != 0) {
		conn_close(c);
		return 1;
	}
	return 0;
}

static void accept_all(int lfd, bool handshake_only)
{
	for (int i = 0; i < ACCEPT_BATCH; i++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				fprintf(stderr, "floor: accept: %s\n", strerror(errno));
			return;
		}
		/* the head buffer is not cleared: only what was read is looked at */
		struct conn *c = nspare > 0 ? spare[--nspare] : malloc(sizeof(*c));
		if (c == NULL) {
			fprintf(stderr, "floor: out of memory\n");
			close(fd);
			return;
		}
		memset(c, 0, offsetof(struct conn, head));
		c->cfd = fd;
		c->ufd = -1;
		c->up.pipe_r = c->down.pipe_r = -1;
		c->handshake_only = handshake_only;
		struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET};
		ev.data.u64 = (uint64_t)(uintptr_t)c;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
			fprintf(stderr, "floor: epoll_ctl: %s\n", strerror(errno));
			conn_close(c);
			continue;
		}
	}
}

int main(int argc, char **argv)
{
	unsigned short relay_port, hs_port, up_port;
	if (argc != 5 || parse_port(argv[1], &relay_port) < 0 ||
	    parse_port(argv[2], &hs_port) < 0 || parse_port(argv[4], &up_port) < 0) {
		fprintf(stderr,
		        "usage: floor RELAY_PORT HANDSHAKE_PORT UPSTREAM_ADDR UPSTREAM_PORT\n");
		return 2;
	}
	upstream.sin_family = AF_INET;
	upstream.sin_port = htons(up_port);
	if (inet_pton(AF_INET, argv[3], &upstream.sin_addr) != 1) {
		fprintf(stderr, "floor: %s is not an IPv4 address\n", argv[3]);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	int relay_fd = listen_on(relay_port);
	int hs_fd = listen_on(hs_port);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (relay_fd < 0 || hs_fd < 0 || ep < 0) {
		fprintf(stderr, "floor: cannot listen on 127.0.0.1:%u and :%u: %s\n", relay_port,
		        hs_port, strerror(errno));
		return 1;
	}
	struct epoll_event ev = {.events = EPOLLIN};
	ev.data.u64 = TAG_RELAY;
	epoll_ctl(ep, EPOLL_CTL_ADD, relay_fd, &ev);
	ev.data.u64 = TAG_HANDSHAKE;
	epoll_ctl(ep, EPOLL_CTL_ADD, hs_fd, &ev);
	ev.data.u64 = TAG_STDIN;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, STDIN_FILENO, &ev) < 0) {
		fprintf(stderr, "floor: standard input must be a pipe (the lifeline): %s\n",
		        strerror(errno));
		return 1;
	}
	struct epoll_event events[EVENTS];
	for (;;) {
		int n = epoll_wait(ep, events, EVENTS, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "floor: epoll_wait: %s\n", strerror(errno));
			return 1;
		}
		for (int i = 0; i < n; i++) {
			uint64_t tag = events[i].data.u64;
			if (tag == 0)
				continue;
			if (tag == TAG_STDIN) {
				char buf[256];
				if (read(STDIN_FILENO, buf, sizeof(buf)) <= 0)
					return 0;
			} else if (tag == TAG_RELAY) {
				accept_all(relay_fd, false);
			} else if (tag == TAG_HANDSHAKE) {
				accept_all(hs_fd, true);
			} else {
				struct conn *c = (struct conn *)(uintptr_t)(tag & ~(uint64_t)1);
				bool up = tag & 1u;
				if (on_event(c, up, events[i].events)) {
					/* later events of this pass may name c: drop them */
					for (int j = i + 1; j < n; j++) {
						uint64_t t = events[j].data.u64;
						if ((t & ~(uint64_t)1) == (uint64_t)(uintptr_t)c)
							events[j].data.u64 = 0;
					}
				}
			}
		}
	}
}
