/* The listener's parts, shared by http.c, client.c and metrics.c. Everything
 * here but the metrics is touched on the listener's thread only. */
#ifndef MG_LISTEN_INTERNAL_H
#define MG_LISTEN_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal/base/buf.h"
#include "internal/base/strv.h"
#include "internal/gateway/gateway.h"
#include "internal/json/json.h"
#include "internal/jsonrpc/jsonrpc.h"
#include "internal/listen/listen.h"
#include "internal/proc/loop.h"

struct MHD_Daemon;
struct MHD_Connection;

/* An Mcp-Session-Id: 128 random bits in hex */
#define LST_SESSION_ID_LEN 32
/* A stream's bytes not yet taken by its connection: past this the
 * session's output waits (its reading pauses) until they are taken */
#define LST_STREAM_HIGH ((size_t)256 << 10)
/* Messages kept for a client that has no stream open to take them */
#define LST_QUEUED_MAX       256
#define LST_QUEUED_BYTES_MAX ((size_t)4 << 20)
/* An SSE comment on every open stream this often: a client gone is found
 * (a suspended connection is not watched by libmicrohttpd) */
#define LST_KEEPALIVE_MS 15000
/* MCP 2026-07-28's HeaderMismatch: Mcp-Method, Mcp-Name or
 * MCP-Protocol-Version missing, malformed or not the body's */
#define LST_HEADER_MISMATCH (-32020)
/* MCP 2026-07-28's MissingRequiredClientCapabilityError: HTTP 400 */
#define LST_MISSING_CAPABILITY (-32021)
/* Tools whose x-mcp-header annotations the listener keeps (from the
 * tools/list answers it passed on), and the length of a name in one */
#define LST_PARAM_TOOLS_MAX  4096
#define LST_PARAM_HEADER_MAX 64

/* ---- metrics.c ----------------------------------------------------------- */

struct lst_metrics;
struct lst_stats; /* one session's part */

struct lst_gauges {
	size_t sessions_open, sessions_blocked, streams_open;
	size_t conns_pending, conns_token; /* connections without and with the token */
};

struct lst_metrics *lst_metrics_new(void);
void lst_metrics_free(struct lst_metrics *m);
void lst_metrics_http(struct lst_metrics *m, unsigned code);
void lst_metrics_refused(struct lst_metrics *m, const char *reason);
void lst_metrics_dropped(struct lst_metrics *m, const char *reason);
/* a connection the listener closed: "deadline", "peer", "pending", "full" */
void lst_metrics_closed(struct lst_metrics *m, const char *reason);
/* A new session's part; counted as begun */
struct lst_stats *lst_metrics_session(struct lst_metrics *m);
/* Its thread has ended: no more records come for it. NULL does nothing. */
void lst_metrics_session_end(struct lst_stats *st);
/* The sessions' audit_observer; data: its lst_stats */
void lst_metrics_observe(const char *event, const struct json_value *fields, void *data);
int lst_metrics_render(struct lst_metrics *m, const struct lst_gauges *g, struct mg_buf *out,
                       struct mg_err **err);

/* ---- conns.c: connections from accept to libmicrohttpd's close ----------- */

/* Connections that carry no token now, at most: in all, and of one peer;
 * both are lowered to what the fd limit allows */
#define LST_PENDING_MAX      256
#define LST_PEER_PENDING_MAX 32

/* A peer, as the limits count it: the local user of a loopback or unix
 * socket connection (its uid, from the kernel), else its address (IPv6 by
 * its /64) */
struct lst_peer {
	uint8_t kind; /* LST_PEER_UID, _V4, _V6 */
	uint8_t addr[16];
	uint32_t uid;
	unsigned refs;      /* connections that name it, closing ones too */
	unsigned conns;     /* its connections not yet closing */
	unsigned pending;   /* of them, those without a request that carries the token */
	unsigned strangers; /* of those, the ones that never carried it */
	struct lst_peer *next, *prev;
};

/* One connection. "Pending" while no request on it carries the token (it
 * waits for one, or sends one whose token is not read yet or is wrong). */
struct lst_conn {
	struct lst *l;
	int fd;
	struct lst_peer *peer;
	struct MHD_Connection *mhd;   /* once libmicrohttpd has it */
	int64_t since_ms;             /* when it began waiting for its current request */
	bool reading;                 /* that request's head or body is not all in */
	bool authed;                  /* that request carries the token */
	bool known;                   /* a request on it carried the token before */
	bool closing;                 /* shut down here; libmicrohttpd closes it next */
	struct lst_conn *next, *prev; /* in lst.conns */
};

/* Stop: the listen fd is watched no more, every connection is gone (after
 * MHD_stop_daemon) */
void lst_conns_free(struct lst *l);
/* The listen fd is readable: accept what waits, admit each */
void lst_conns_accept(struct loop *loop, int fd, uint32_t events, void *data);
/* libmicrohttpd's connection notifications (MHD_OPTION_NOTIFY_CONNECTION;
 * toe its MHD_ConnectionNotificationCode) */
void lst_conns_notify(void *cls, struct MHD_Connection *mhd, void **socket_context, int toe);
/* the listener's connection of a libmicrohttpd one, or NULL */
struct lst_conn *lst_conn_of(struct MHD_Connection *mhd);
/* its request carries the token: never closed for room, no deadline once read */
void lst_conn_authed(struct lst_conn *c);
/* its request's head and body are all in, or an answer is on its way */
void lst_conn_read(struct lst_conn *c);
/* its request is over: it waits for the next one, from now */
void lst_conn_request_done(struct lst_conn *c);
/* Every second: close what is past its deadline */
void lst_conns_tick(struct lst *l, int64_t now);

/* ---- http.c and client.c ------------------------------------------------- */

enum lst_req_kind {
	REQ_POST,   /* a message for /mcp */
	REQ_GET,    /* /mcp's event stream */
	REQ_DELETE, /* /mcp: end the session */
	REQ_METRICS,
	REQ_HEALTH,
	REQ_ANSWERED, /* a response is queued: nothing more to do */
};

/* One HTTP request. Freed once libmicrohttpd is done with it and with the
 * response that reads from it (refs). */
struct lst_req {
	struct lst *l;
	struct MHD_Connection *conn;
	struct lst_conn *lconn; /* its connection's, NULL once that is gone */
	enum lst_req_kind kind;
	int refs;
	struct mg_buf body;
	bool accept_json, accept_sse;
	char *session_hdr; /* Mcp-Session-Id as sent, or NULL */

	/* an exchange: a POSTed request waiting for its answer, or a GET */
	struct lst_client *client; /* NULL once detached */
	struct lst_req *next, *prev;
	struct json_value *id; /* the request's id (a copy) */
	char *id_key;
	char *progress_key; /* its progress token's rpc_id_key, or NULL */
	/* a 2026-07-28 request in the listener's modern session: id_key and
	 * progress_key are those of session_id, which replaced the client's id
	 * and token (id, progress_token) in what went in */
	bool modern;
	int64_t session_id;
	struct json_value *progress_token;
	unsigned answer_status; /* the JSON answer's HTTP status; 0: 200 */
	bool lists_tools;       /* a modern tools/list: its answer's x-mcp-headers are kept */
	bool is_initialize;
	bool suspended;
	bool answered; /* its response came (or will never: the session ended) */
	bool streaming;
	bool want_stream;                     /* something for it came before its answer */
	bool finished;                        /* the stream ends once out is taken */
	bool processed;                       /* the body was read and acted on */
	bool token_ok;                        /* it carries the listener's token */
	char http_id[LST_SESSION_ID_LEN + 1]; /* the client's, for the initialize answer */
	struct lst_req *all_next, *all_prev;  /* in lst.reqs */
	char *answer;                         /* a JSON answer, until queued */
	size_t answer_len;
	struct mg_buf out; /* event-stream bytes not yet taken */
	int64_t last_write_ms;
};

/* One MCP client session: a gateway session on its own thread */
struct lst_client {
	struct lst *l;
	char http_id[LST_SESSION_ID_LEN + 1]; /* never given out when modern */
	/* the listener's one 2026-07-28 session: every HTTP client with the
	 * token shares it, so each request's id and progress token are
	 * replaced by next_request_id, unique within it */
	bool modern;
	int64_t next_request_id;
	char session_id[SESSION_ID_LEN + 1]; /* the gateway's, in names and the audit log */
	struct session *session;             /* its thread's from start to end */
	struct lst_stats *stats;
	pthread_t thread;
	bool thread_running;
	int fd;            /* our end of the socketpair; -1 once closed */
	bool input_closed; /* we shut our writing down: the session ends */
	bool output_ended; /* the session closed its end */
	bool gone;         /* its id is no longer served (404) */
	struct mg_buf to_session;
	struct rpc_reader from_session;
	bool paused_reading; /* a stream is full: the session's output waits */
	char *held;          /* the line that waits for it */
	size_t held_len;
	struct lst_req *blocked_on;
	struct lst_req *reqs; /* its exchanges and streams */
	struct lst_req *get;  /* its GET stream, or NULL */
	unsigned inflight;
	struct strv queued; /* messages waiting for a stream */
	size_t queued_bytes;
	int64_t active_ms;
	struct lst_client *next, *prev;
};

struct lst {
	struct loop *loop;
	struct MHD_Daemon *mhd;
	struct loop_timer *mhd_timer, *tick;
	int listen_fd, mhd_fd;
	struct lst_address address;
	char *token;
	struct lst_options opt;
	const struct cfg_mcp *limits;
	struct lst_metrics *metrics;
	struct gw_instances *instances; /* the shared and exclusive servers', or NULL */
	struct lst_client *clients;
	struct lst_client *modern; /* the 2026-07-28 session, or NULL */
	/* the x-mcp-header annotations of the tools 2026-07-28 clients were
	 * given: {tool: [{"property", "header", "type"}...]}, the Mcp-Param-*
	 * headers a tools/call of that tool must carry (client.c keeps it,
	 * http.c checks against it) */
	struct json_value *param_headers;
	size_t nclients;
	struct lst_req *reqs; /* every request libmicrohttpd holds */
	bool stopping;
	bool kick; /* a connection was resumed: run libmicrohttpd again */
	int64_t next_keepalive_ms;
	/* conns.c */
	struct lst_conn *conns;
	struct lst_peer *peers;
	struct lst_conn *adding; /* the one MHD_add_connection is taking */
	unsigned live;           /* connections not closing */
	unsigned pending;        /* of them, pending ones */
	unsigned conn_max, pending_max, peer_max;
	int64_t read_timeout_ms;
	bool accept_paused;
	struct loop_timer *accept_timer;
};

/* client.c */
/* A new session: for an initialize POST, or the modern one (l->modern) */
struct lst_client *lst_client_new(struct lst *l, bool modern, struct mg_err **err);
struct lst_client *lst_client_find(struct lst *l, const char *http_id);
/* Queue one line (with its newline) for the session; -1 when its input is
 * over its bound or closed */
int lst_client_send(struct lst_client *c, const char *line, size_t len);
/* Keep the x-mcp-header annotations of a tools/list result's tools in
 * l->param_headers (at most LST_PARAM_TOOLS_MAX tools) */
void lst_params_learn(struct lst *l, const struct json_value *result);
/* End the session: its input closes; its id gives 404 from now on */
void lst_client_end(struct lst_client *c, const char *why);
/* A request or stream of c (linked by the caller) is done with */
void lst_client_unlink(struct lst_client *c, struct lst_req *r);
void lst_client_link(struct lst_client *c, struct lst_req *r);
/* notifications/cancelled from the client: its POST is answered now */
void lst_client_cancelled(struct lst_client *c, const struct json_value *request_id);
/* A GET stream opened: what was queued goes to it */
void lst_client_stream_opened(struct lst_client *c, struct lst_req *r);
/* After libmicrohttpd ran: streams that drained let a paused session go on */
void lst_client_after_run(struct lst_client *c);
/* Every second: the idle limit and keep-alives */
void lst_client_tick(struct lst_client *c, int64_t now);
void lst_client_free(struct lst_client *c);

/* http.c */
/* Something for r (its answer, or bytes on its stream): wake its connection */
void lst_req_wake(struct lst_req *r);
/* The client closed r's connection (looked at while it is suspended) */
bool lst_req_peer_gone(struct lst_req *r);
/* Append one message as an event to r's stream (r->accept_sse) */
void lst_req_event(struct lst_req *r, const char *line, size_t len);
/* Run libmicrohttpd until nothing it resumed is left, and arm its timer */
void lst_mhd_run(struct lst *l);
/* The session ended or the listener stops: there is nothing left to wait
 * for; no client is named */
void lst_maybe_done(struct lst *l);

#endif
