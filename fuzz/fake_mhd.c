/* libmicrohttpd, the calls internal/listen/http.c makes, in process: the
 * session fuzzer hands the listener requests as MHD would (the access
 * handler called first with no data, then with the body, then until it
 * queues an answer or suspends), and reads the answers and event streams it
 * queues, with no socket and no HTTP parsing. Suspend and resume, the
 * completion callback and the response's free callback come in the order
 * MHD gives them; a connection the client hung up is finished when it is
 * next run, as MHD finds a broken socket. Only MHD_run and the fuzzer's
 * calls change it, both on the listener's thread. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "fuzz/session_fuzz.h"
#include "internal/base/xalloc.h"

#define READ_BLOCK ((size_t)16 << 10)
/* handler calls that neither answer nor suspend before this is a bug of
 * the listener's (MHD would call it again for ever) */
#define IDLE_CALLS_MAX 4

struct MHD_Response {
	int refs;
	char *body; /* a buffer's copy */
	size_t len;
	MHD_ContentReaderCallback reader; /* or a stream */
	void *reader_cls;
	MHD_ContentReaderFreeCallback reader_free;
	struct strv headers; /* "Name: value" */
};

enum phase { PH_FIRST, PH_UPLOAD, PH_HANDLER, PH_ANSWER, PH_DONE };

struct MHD_Connection {
	struct MHD_Daemon *d;
	char *method, *url;
	struct strv headers;
	char *body;
	size_t len;
	enum phase phase;
	bool suspended, hung_up;
	bool called; /* the handler saw it: its completion is told */
	unsigned idle_calls;
	void *req_cls;
	struct MHD_Response *resp;
	unsigned status;
	uint64_t pos;
	int fds[2]; /* [0] the listener's end (connect_fd), [1] the client's */
	union MHD_ConnectionInfo info;
	void *socket_context; /* MHD_OPTION_NOTIFY_CONNECTION's */
	struct sf_http *exchange;
	struct MHD_Connection *next;
};

struct MHD_Daemon {
	MHD_AccessHandlerCallback handler;
	void *handler_cls;
	MHD_RequestCompletedCallback completed;
	void *completed_cls;
	MHD_NotifyConnectionCallback notify;
	void *notify_cls;
	int listen_fd;
	union MHD_DaemonInfo info;
	struct MHD_Connection *conns;
	bool running;
};

static const char *lookup(const struct strv *h, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < h->n; i++)
		if (strncasecmp(h->v[i], name, n) == 0 && h->v[i][n] == ':')
			return h->v[i] + n + 2;
	return NULL;
}

static void response_unref(struct MHD_Response *r)
{
	if (r == NULL || --r->refs > 0)
		return;
	if (r->reader_free != NULL)
		r->reader_free(r->reader_cls);
	free(r->body);
	strv_free(&r->headers);
	free(r);
}

/* ---- what http.c calls ---------------------------------------------------- */

struct MHD_Response *MHD_create_response_from_buffer(size_t size, void *buffer,
                                                     enum MHD_ResponseMemoryMode mode)
{
	if (mode != MHD_RESPMEM_MUST_COPY)
		sf_finding("fake_mhd: only MHD_RESPMEM_MUST_COPY is modelled");
	struct MHD_Response *r = xcalloc(1, sizeof(*r));
	r->refs = 1;
	r->body = xmemdup(buffer, size);
	r->len = size;
	return r;
}

struct MHD_Response *MHD_create_response_from_callback(uint64_t size, size_t block_size,
                                                       MHD_ContentReaderCallback crc, void *crc_cls,
                                                       MHD_ContentReaderFreeCallback crfc)
{
	(void)size;
	(void)block_size;
	struct MHD_Response *r = xcalloc(1, sizeof(*r));
	r->refs = 1;
	r->reader = crc;
	r->reader_cls = crc_cls;
	r->reader_free = crfc;
	return r;
}

enum MHD_Result MHD_add_response_header(struct MHD_Response *response, const char *header,
                                        const char *content)
{
	strv_pushf(&response->headers, "%s: %s", header, content);
	return MHD_YES;
}

void MHD_destroy_response(struct MHD_Response *response)
{
	response_unref(response);
}

enum MHD_Result MHD_queue_response(struct MHD_Connection *connection, unsigned int status_code,
                                   struct MHD_Response *response)
{
	if (connection->resp != NULL || connection->phase == PH_DONE)
		return MHD_NO;
	response->refs++;
	connection->resp = response;
	connection->status = status_code;
	return MHD_YES;
}

const char *MHD_lookup_connection_value(struct MHD_Connection *connection, enum MHD_ValueKind kind,
                                        const char *key)
{
	if (kind != MHD_HEADER_KIND)
		return NULL;
	return lookup(&connection->headers, key);
}

void MHD_suspend_connection(struct MHD_Connection *connection)
{
	connection->suspended = true;
}

void MHD_resume_connection(struct MHD_Connection *connection)
{
	connection->suspended = false;
}

const union MHD_ConnectionInfo *MHD_get_connection_info(struct MHD_Connection *connection,
                                                        enum MHD_ConnectionInfoType info_type, ...)
{
	if (info_type == MHD_CONNECTION_INFO_SOCKET_CONTEXT) {
		connection->info.socket_context = connection->socket_context;
		return &connection->info;
	}
	if (info_type != MHD_CONNECTION_INFO_CONNECTION_FD)
		return NULL;
	connection->info.connect_fd = connection->fds[0];
	return &connection->info;
}

struct MHD_Daemon *MHD_start_daemon(unsigned int flags, uint16_t port, MHD_AcceptPolicyCallback apc,
                                    void *apc_cls, MHD_AccessHandlerCallback dh, void *dh_cls, ...)
{
	(void)flags;
	(void)port;
	(void)apc;
	(void)apc_cls;
	struct MHD_Daemon *d = xcalloc(1, sizeof(*d));
	d->handler = dh;
	d->handler_cls = dh_cls;
	d->listen_fd = -1;
	va_list ap;
	va_start(ap, dh_cls);
	for (;;) {
		enum MHD_OPTION o = va_arg(ap, enum MHD_OPTION);
		if (o == MHD_OPTION_END)
			break;
		if (o == MHD_OPTION_EXTERNAL_LOGGER) {
			(void)va_arg(ap, MHD_LogCallback);
			(void)va_arg(ap, void *);
		} else if (o == MHD_OPTION_LISTEN_SOCKET) {
			d->listen_fd = va_arg(ap, MHD_socket);
		} else if (o == MHD_OPTION_NOTIFY_COMPLETED) {
			d->completed = va_arg(ap, MHD_RequestCompletedCallback);
			d->completed_cls = va_arg(ap, void *);
		} else if (o == MHD_OPTION_NOTIFY_CONNECTION) {
			d->notify = va_arg(ap, MHD_NotifyConnectionCallback);
			d->notify_cls = va_arg(ap, void *);
		} else if (o == MHD_OPTION_CONNECTION_LIMIT || o == MHD_OPTION_CONNECTION_TIMEOUT) {
			(void)va_arg(ap, unsigned int);
		} else {
			sf_finding("fake_mhd: option %d is not modelled", (int)o);
		}
	}
	va_end(ap);
	/* the loop watches it; nothing ever makes it ready (MHD_get_timeout
	 * says when to run) */
	d->info.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (d->info.epoll_fd < 0)
		abort();
	return d;
}

const union MHD_DaemonInfo *MHD_get_daemon_info(struct MHD_Daemon *daemon,
                                                enum MHD_DaemonInfoType info_type, ...)
{
	return info_type == MHD_DAEMON_INFO_EPOLL_FD ? &daemon->info : NULL;
}

/* the listener accepts and adds each connection; the fuzzer adds its own
 * (sf_mhd_request), so nothing is accepted here */
enum MHD_Result MHD_add_connection(struct MHD_Daemon *daemon, MHD_socket client_socket,
                                   const struct sockaddr *addr, socklen_t addrlen)
{
	(void)daemon;
	(void)addr;
	(void)addrlen;
	sf_finding("fake_mhd: a connection was accepted from the listen socket");
	close(client_socket);
	return MHD_NO;
}

enum MHD_Result MHD_get_timeout(struct MHD_Daemon *daemon, MHD_UNSIGNED_LONG_LONG *timeout)
{
	int delay = sf_listen_delay_ms();
	*timeout = sf_mhd_busy(daemon) || delay < 0 ? 0 : (MHD_UNSIGNED_LONG_LONG)delay;
	return sf_mhd_busy(daemon) || delay >= 0 ? MHD_YES : MHD_NO;
}

/* ---- running connections -------------------------------------------------- */

static void finish(struct MHD_Connection *c, enum MHD_RequestTerminationCode toe)
{
	if (c->phase == PH_DONE)
		return;
	c->phase = PH_DONE;
	struct MHD_Daemon *d = c->d;
	if (d->completed != NULL && c->called)
		d->completed(d->completed_cls, c, &c->req_cls, toe);
	/* one request a connection: it closes with it */
	if (d->notify != NULL)
		d->notify(d->notify_cls, c, &c->socket_context, MHD_CONNECTION_NOTIFY_CLOSED);
	response_unref(c->resp);
	c->resp = NULL;
	sf_http_closed(c->exchange);
	c->exchange = NULL;
}

static void reap(struct MHD_Daemon *d)
{
	for (struct MHD_Connection **p = &d->conns; *p != NULL;) {
		struct MHD_Connection *c = *p;
		if (c->phase != PH_DONE) {
			p = &c->next;
			continue;
		}
		*p = c->next;
		close(c->fds[0]);
		if (c->fds[1] >= 0)
			close(c->fds[1]);
		free(c->method);
		free(c->url);
		free(c->body);
		strv_free(&c->headers);
		free(c);
	}
}

static enum MHD_Result call_handler(struct MHD_Connection *c, const char *data, size_t *size)
{
	c->called = true;
	return c->d->handler(c->d->handler_cls, c, c->url, c->method, "HTTP/1.1", data, size,
	                     &c->req_cls);
}

static void answer(struct MHD_Connection *c)
{
	struct MHD_Response *r = c->resp;
	const char *sid = lookup(&r->headers, "Mcp-Session-Id");
	if (r->reader == NULL) {
		sf_http_bytes(c->exchange, c->status, sid, r->body, r->len, false);
		finish(c, MHD_REQUEST_TERMINATED_COMPLETED_OK);
		return;
	}
	char *buf = xmalloc(READ_BLOCK);
	for (;;) {
		ssize_t n = r->reader(r->reader_cls, c->pos, buf, READ_BLOCK);
		if (n > 0) {
			c->pos += (uint64_t)n;
			sf_http_bytes(c->exchange, c->status, sid, buf, (size_t)n, true);
			continue;
		}
		if (n == MHD_CONTENT_READER_END_OF_STREAM)
			finish(c, MHD_REQUEST_TERMINATED_COMPLETED_OK);
		else if (n == MHD_CONTENT_READER_END_WITH_ERROR)
			finish(c, MHD_REQUEST_TERMINATED_WITH_ERROR);
		else if (n == 0 && !c->suspended)
			sf_finding("fake_mhd: a stream's reader gave nothing and did not suspend");
		break;
	}
	free(buf);
}

/* One step of c; true when it moved */
static bool run_connection(struct MHD_Connection *c)
{
	if (c->phase == PH_DONE || c->suspended)
		return false;
	if (c->hung_up && c->phase != PH_FIRST) {
		finish(c, MHD_REQUEST_TERMINATED_CLIENT_ABORT);
		return true;
	}
	size_t size = 0;
	enum MHD_Result ok = MHD_NO;
	switch (c->phase) {
	case PH_FIRST:
		ok = call_handler(c, NULL, &size);
		c->phase = c->len > 0 ? PH_UPLOAD : PH_HANDLER;
		break;
	case PH_UPLOAD:
		if (c->resp != NULL) {
			c->phase = PH_ANSWER; /* answered before the body: it is not read */
			return true;
		}
		size = c->len;
		ok = call_handler(c, c->body, &size);
		if (size != 0)
			sf_finding("fake_mhd: the handler left %zu bytes of the body unread", size);
		c->phase = PH_HANDLER;
		break;
	case PH_HANDLER:
		ok = call_handler(c, NULL, &size);
		break;
	case PH_ANSWER:
		answer(c);
		return true;
	case PH_DONE:
		return false;
	}
	if (ok != MHD_YES) {
		finish(c, MHD_REQUEST_TERMINATED_WITH_ERROR);
		return true;
	}
	if (c->resp != NULL && c->phase != PH_UPLOAD)
		c->phase = PH_ANSWER;
	else if (c->phase == PH_HANDLER && !c->suspended && c->resp == NULL &&
	         ++c->idle_calls > IDLE_CALLS_MAX)
		sf_finding("fake_mhd: the handler neither answered %s %s nor suspended it",
		           c->method, c->url);
	return true;
}

static void run_all(struct MHD_Daemon *d)
{
	for (bool moved = true; moved;) {
		moved = false;
		for (struct MHD_Connection *c = d->conns; c != NULL; c = c->next)
			moved |= run_connection(c);
		reap(d);
	}
}

enum MHD_Result MHD_run(struct MHD_Daemon *daemon)
{
	if (daemon->running)
		sf_finding("fake_mhd: MHD_run inside MHD_run");
	daemon->running = true;
	run_all(daemon);
	sf_listen_step(daemon->handler_cls);
	run_all(daemon);
	daemon->running = false;
	return MHD_YES;
}

void MHD_stop_daemon(struct MHD_Daemon *daemon)
{
	for (struct MHD_Connection *c = daemon->conns; c != NULL; c = c->next)
		finish(c, MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN);
	reap(daemon);
	if (daemon->listen_fd >= 0)
		close(daemon->listen_fd);
	close(daemon->info.epoll_fd);
	free(daemon);
}

/* ---- what the fuzzer calls -------------------------------------------------- */

struct MHD_Connection *sf_mhd_request(struct MHD_Daemon *d, const char *method, const char *url,
                                      const struct strv *headers, const char *body, size_t len,
                                      struct sf_http *exchange)
{
	struct MHD_Connection *c = xcalloc(1, sizeof(*c));
	c->d = d;
	c->method = xstrdup(method);
	c->url = xstrdup(url);
	for (size_t i = 0; i < headers->n; i++)
		strv_push(&c->headers, headers->v[i]);
	c->body = len > 0 ? xmemdup(body, len) : NULL;
	c->len = len;
	c->exchange = exchange;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, c->fds) < 0)
		abort();
	/* the fuzzer hands connections in itself, as if the listener had
	 * accepted them: the listener's notification sees one it did not */
	if (d->notify != NULL)
		d->notify(d->notify_cls, c, &c->socket_context, MHD_CONNECTION_NOTIFY_STARTED);
	struct MHD_Connection **tail = &d->conns;
	while (*tail != NULL)
		tail = &(*tail)->next;
	*tail = c;
	return c;
}

void sf_mhd_hang_up(struct MHD_Connection *c)
{
	c->hung_up = true;
	if (c->fds[1] >= 0)
		close(c->fds[1]);
	c->fds[1] = -1;
}

bool sf_mhd_busy(const struct MHD_Daemon *d)
{
	for (const struct MHD_Connection *c = d->conns; c != NULL; c = c->next)
		if (c->phase != PH_DONE && !c->suspended)
			return true;
	return false;
}
