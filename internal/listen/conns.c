/* The listener's connections, from accept to libmicrohttpd's close
 * (docs/listener.md, "Slow clients and strangers"). The listener accepts
 * them itself and hands each to libmicrohttpd, so that:
 *
 *  - a request's head and body must all be in within listen_read_timeout of
 *    its connection's beginning to wait for it, however slowly the bytes
 *    come: each second every connection past it is shut down (shutdown(),
 *    and libmicrohttpd closes it), since libmicrohttpd's own timeout starts
 *    again at every byte;
 *  - a connection whose request carries no token (yet) is "pending", and
 *    pending ones are capped: LST_PEER_PENDING_MAX of one peer, and
 *    LST_PENDING_MAX in all. A new connection over either cap is let in by
 *    closing a pending one: of its own peer's first, else of the peer with
 *    the most; its oldest that never carried the token, and only then one
 *    that did;
 *  - a connection whose request carries the token is never closed for
 *    room, and room is kept for it: pending ones never take more than their
 *    cap of what libmicrohttpd holds.
 *
 * So strangers, however many and however slow, cost each other their
 * places, never a token holder's: a new connection is always let in, and
 * the token holder's, once its head is read, is out of their reach. */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <microhttpd.h>

#include "internal/base/log.h"
#include "internal/base/xalloc.h"
#include "internal/listen/listen-internal.h"

#define ACCEPT_BATCH    64  /* connections taken in one turn of the loop */
#define ACCEPT_PAUSE_MS 100 /* out of fds: accepting waits this long */

enum { LST_PEER_UID = 1, LST_PEER_V4, LST_PEER_V6 };

/* ---- who the peer is ------------------------------------------------------ */

static bool is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss->ss_family != AF_INET6)
		return false;
	const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
	return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
}

/* The local user of a loopback TCP peer: the owner of its socket, which the
 * kernel tells (sock_diag, as `ss -e` asks it); -1 when it does not */
static int loopback_uid(int fd, const struct sockaddr_storage *peer, uint32_t *uid)
{
	struct sockaddr_storage local;
	socklen_t llen = sizeof(local);
	if (getsockname(fd, (struct sockaddr *)&local, &llen) < 0 ||
	    local.ss_family != peer->ss_family)
		return -1;
	struct {
		struct nlmsghdr nh;
		struct inet_diag_req_v2 req;
	} msg = {0};
	msg.nh.nlmsg_len = sizeof(msg);
	msg.nh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	msg.nh.nlmsg_flags = NLM_F_REQUEST;
	msg.req.sdiag_family = (uint8_t)peer->ss_family;
	msg.req.sdiag_protocol = IPPROTO_TCP;
	msg.req.idiag_states = ~0u;
	msg.req.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
	msg.req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	/* the peer's own socket: its source is the peer, its destination us */
	if (peer->ss_family == AF_INET) {
		const struct sockaddr_in *p = (const struct sockaddr_in *)peer;
		const struct sockaddr_in *l = (const struct sockaddr_in *)&local;
		msg.req.id.idiag_sport = p->sin_port;
		msg.req.id.idiag_dport = l->sin_port;
		memcpy(msg.req.id.idiag_src, &p->sin_addr, 4);
		memcpy(msg.req.id.idiag_dst, &l->sin_addr, 4);
	} else {
		const struct sockaddr_in6 *p = (const struct sockaddr_in6 *)peer;
		const struct sockaddr_in6 *l = (const struct sockaddr_in6 *)&local;
		msg.req.id.idiag_sport = p->sin6_port;
		msg.req.id.idiag_dport = l->sin6_port;
		memcpy(msg.req.id.idiag_src, &p->sin6_addr, 16);
		memcpy(msg.req.id.idiag_dst, &l->sin6_addr, 16);
	}
	int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (nl < 0)
		return -1;
	int r = -1;
	union {
		struct nlmsghdr nh;
		char bytes[1024];
	} answer;
	/* the kernel answers within the send: nothing to wait for after */
	if (send(nl, &msg, sizeof(msg), 0) == (ssize_t)sizeof(msg)) {
		ssize_t n = recv(nl, &answer, sizeof(answer), MSG_DONTWAIT);
		if (n >= (ssize_t)NLMSG_LENGTH(sizeof(struct inet_diag_msg)) &&
		    answer.nh.nlmsg_type == SOCK_DIAG_BY_FAMILY &&
		    answer.nh.nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
			const struct inet_diag_msg *m = NLMSG_DATA(&answer.nh);
			*uid = m->idiag_uid;
			r = 0;
		}
	}
	close(nl);
	return r;
}

static void peer_of(int fd, const struct sockaddr_storage *ss, struct lst_peer *key)
{
	memset(key, 0, sizeof(*key));
	if (ss->ss_family == AF_UNIX) {
		struct ucred cred;
		socklen_t len = sizeof(cred);
		key->kind = LST_PEER_UID;
		/* a unix socket's peer the kernel cannot name: all such are one */
		key->uid = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0
		               ? (uint32_t)cred.uid
		               : UINT32_MAX;
		return;
	}
	if (is_loopback(ss) && loopback_uid(fd, ss, &key->uid) == 0) {
		key->kind = LST_PEER_UID;
		return;
	}
	if (ss->ss_family == AF_INET) {
		key->kind = LST_PEER_V4;
		memcpy(key->addr, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		/* one holder of a /64 has them all */
		key->kind = LST_PEER_V6;
		memcpy(key->addr, &((const struct sockaddr_in6 *)ss)->sin6_addr, 8);
	}
}

static struct lst_peer *peer_get(struct lst *l, const struct lst_peer *key)
{
	for (struct lst_peer *p = l->peers; p != NULL; p = p->next)
		if (p->kind == key->kind && p->uid == key->uid &&
		    memcmp(p->addr, key->addr, sizeof(p->addr)) == 0)
			return p;
	struct lst_peer *p = xcalloc(1, sizeof(*p));
	p->kind = key->kind;
	p->uid = key->uid;
	memcpy(p->addr, key->addr, sizeof(p->addr));
	p->next = l->peers;
	if (l->peers != NULL)
		l->peers->prev = p;
	l->peers = p;
	return p;
}

static void peer_put(struct lst *l, struct lst_peer *p)
{
	if (p->refs > 0)
		return;
	if (p->prev != NULL)
		p->prev->next = p->next;
	else
		l->peers = p->next;
	if (p->next != NULL)
		p->next->prev = p->prev;
	free(p);
}

/* ---- counting --------------------------------------------------------------- */

static bool pending(const struct lst_conn *c)
{
	return !c->closing && !c->authed;
}

static void count(struct lst_conn *c, int by)
{
	c->l->pending += (unsigned)by;
	c->peer->pending += (unsigned)by;
	if (!c->known)
		c->peer->strangers += (unsigned)by;
}

/* The pending connection to close for room: peer's (NULL: that of the
 * peer with the most strangers, else any), a stranger before one that
 * carried the token, the oldest first */
static struct lst_conn *victim(struct lst *l, const struct lst_peer *peer)
{
	if (peer == NULL) {
		for (const struct lst_peer *p = l->peers; p != NULL; p = p->next)
			if (p->strangers > 0 && (peer == NULL || p->strangers > peer->strangers))
				peer = p;
	}
	struct lst_conn *best = NULL;
	for (struct lst_conn *c = l->conns; c != NULL; c = c->next) {
		if (!pending(c) || (peer != NULL && c->peer != peer))
			continue;
		if (best == NULL || (best->known && !c->known) ||
		    (best->known == c->known && c->since_ms < best->since_ms))
			best = c;
	}
	return best;
}

/* Shut c down: libmicrohttpd sees it end and closes it, then tells us */
static void close_conn(struct lst_conn *c, const char *reason)
{
	struct lst *l = c->l;
	if (pending(c))
		count(c, -1);
	c->closing = true;
	c->peer->conns--;
	l->live--;
	shutdown(c->fd, SHUT_RDWR);
	lst_metrics_closed(l->metrics, reason);
}

/* ---- in and out ----------------------------------------------------------- */

static void admit(struct lst *l, int fd, const struct sockaddr_storage *ss, socklen_t len)
{
	struct lst_peer key;
	peer_of(fd, ss, &key);
	struct lst_peer *p = peer_get(l, &key);
	struct lst_conn *v;
	if (p->pending >= l->peer_max && (v = victim(l, p)) != NULL)
		close_conn(v, "peer");
	if (l->pending >= l->pending_max && (v = victim(l, NULL)) != NULL)
		close_conn(v, "pending");
	if (l->live >= l->conn_max) {
		/* every place holds a request with the token */
		close(fd);
		peer_put(l, p);
		lst_metrics_closed(l->metrics, "full");
		return;
	}
	struct lst_conn *c = xcalloc(1, sizeof(*c));
	c->l = l;
	c->fd = fd;
	c->peer = p;
	c->since_ms = rpc_now_ms();
	c->reading = true;
	p->refs++;
	p->conns++;
	l->live++;
	count(c, 1);
	c->next = l->conns;
	if (l->conns != NULL)
		l->conns->prev = c;
	l->conns = c;
	l->adding = c;
	/* it closes fd when it cannot take it, and then c was not started (or
	 * was, and is freed already: adding is NULL then) */
	if (MHD_add_connection(l->mhd, fd, (const struct sockaddr *)ss, len) != MHD_YES &&
	    l->adding == c && c->mhd == NULL) {
		mg_debug("listener: libmicrohttpd took no connection: %s", strerror(errno));
		c->fd = -1;
		close_conn(c, "refused");
		lst_conns_notify(l, NULL, (void **)&c, MHD_CONNECTION_NOTIFY_CLOSED);
	}
	l->adding = NULL;
}

static void resume_accept(struct loop *loop, void *data)
{
	struct lst *l = data;
	l->accept_timer = NULL;
	l->accept_paused = false;
	if (loop_watch(loop, l->listen_fd, EPOLLIN, lst_conns_accept, l, NULL) < 0)
		l->accept_paused = true;
}

void lst_conns_accept(struct loop *loop, int fd, uint32_t events, void *data)
{
	(void)events;
	struct lst *l = data;
	if (l->stopping) {
		/* nothing new while it ends: what waits stays in the backlog */
		loop_unwatch(loop, fd);
		l->accept_paused = true;
		return;
	}
	for (int i = 0; i < ACCEPT_BATCH; i++) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		int c = accept4(fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (c >= 0) {
			admit(l, c, &ss, len);
			continue;
		}
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK && !l->accept_paused) {
			/* out of fds (or memory): the listen fd stays readable, so
			 * wait rather than spin */
			mg_warn("listener: accept: %s; accepting again in %d ms", strerror(errno),
			        ACCEPT_PAUSE_MS);
			loop_unwatch(loop, fd);
			l->accept_paused = true;
			l->accept_timer = loop_timer_add(loop, ACCEPT_PAUSE_MS, resume_accept, l);
		}
		break;
	}
	lst_mhd_run(l);
}

void lst_conns_notify(void *cls, struct MHD_Connection *mhd, void **socket_context, int toe)
{
	struct lst *l = cls;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *info =
		    MHD_get_connection_info(mhd, MHD_CONNECTION_INFO_CONNECTION_FD);
		struct lst_conn *c = l->adding;
		if (c == NULL || info == NULL || c->fd != info->connect_fd)
			for (c = l->conns; c != NULL; c = c->next)
				if (c->mhd == NULL && info != NULL && c->fd == info->connect_fd)
					break;
		if (c != NULL)
			c->mhd = mhd;
		*socket_context = c;
		return;
	}
	struct lst_conn *c = *socket_context;
	if (c == NULL)
		return;
	*socket_context = NULL;
	if (!c->closing) {
		if (pending(c))
			count(c, -1);
		c->peer->conns--;
		l->live--;
	}
	for (struct lst_req *r = l->reqs; r != NULL; r = r->all_next)
		if (r->lconn == c)
			r->lconn = NULL;
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		l->conns = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	if (l->adding == c)
		l->adding = NULL;
	c->peer->refs--;
	peer_put(l, c->peer);
	free(c);
}

struct lst_conn *lst_conn_of(struct MHD_Connection *mhd)
{
	const union MHD_ConnectionInfo *info =
	    mhd != NULL ? MHD_get_connection_info(mhd, MHD_CONNECTION_INFO_SOCKET_CONTEXT) : NULL;
	return info != NULL ? info->socket_context : NULL;
}

void lst_conn_authed(struct lst_conn *c)
{
	if (c == NULL || c->closing || c->authed)
		return;
	count(c, -1);
	c->authed = true;
}

void lst_conn_read(struct lst_conn *c)
{
	if (c != NULL)
		c->reading = false;
}

void lst_conn_request_done(struct lst_conn *c)
{
	if (c == NULL || c->closing)
		return;
	if (c->authed) {
		c->authed = false;
		c->known = true;
		count(c, 1);
	}
	c->reading = true;
	c->since_ms = rpc_now_ms();
}

void lst_conns_tick(struct lst *l, int64_t now)
{
	for (struct lst_conn *c = l->conns; c != NULL; c = c->next)
		if (!c->closing && (c->reading || !c->authed) &&
		    now - c->since_ms >= l->read_timeout_ms)
			close_conn(c, "deadline");
}

void lst_conns_free(struct lst *l)
{
	loop_timer_cancel(l->loop, l->accept_timer);
	l->accept_timer = NULL;
	/* what libmicrohttpd never closed (it was stopped first) */
	while (l->conns != NULL) {
		struct lst_conn *c = l->conns;
		void *ctx = c;
		lst_conns_notify(l, NULL, &ctx, MHD_CONNECTION_NOTIFY_CLOSED);
	}
}
