/* The session fuzzer's parts: session_fuzz.c (how an input runs, on stdio,
 * and what is checked of what the gateway sends), session_fuzz_program.c
 * (what an input says: its ops, the messages and edits),
 * session_fuzz_listen.c (the listener's request path), fake_mhd.c
 * (libmicrohttpd in process), session_fuzz_mutator.c (mutations by op). */
#ifndef MG_FUZZ_SESSION_FUZZ_H
#define MG_FUZZ_SESSION_FUZZ_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "internal/base/strv.h"
#include "internal/gateway/gateway_fakes.h"
#include "internal/listen/listen-internal.h"

#define SF_SERVERS 3  /* alpha, beta and gamma in every session */
#define SF_CLIENTS 4  /* listener: two clients of 2025-11-25, two of 2026-07-28 */
#define SF_PENDING 32 /* requests one side is owed an answer to, kept */
#define SF_EDITS   16 /* edits of the next message */
#define SF_HEADERS 8  /* header edits of the next HTTP request */
#define SF_STATES  4  /* requestStates a client was given, newest last */
#define SF_OPS_MAX 512

/* The first byte of an input */
enum {
	SF_LISTEN = 1 << 0,         /* through serve --listen's request path, else stdio */
	SF_MODERN = 1 << 1,         /* stdio: the client speaks 2026-07-28 */
	SF_HOLD = 1 << 2,           /* servers start only when an op releases them */
	SF_ALPHA_MODERN = 1 << 3,   /* alpha answers as a server of 2026-07-28 */
	SF_BETA_MODERN = 1 << 4,    /* so does beta */
	SF_SECRET = 1 << 5,         /* a credential is stored: no line may carry it */
	SF_GAMMA_UNPINNED = 1 << 6, /* gamma's manifest is not approved */
	SF_PASSTHROUGH = 1 << 7,    /* alpha alone, under its own names */
};

/* A request one side sent and the other owes an answer to */
struct sf_req {
	struct json_value *id;
	char method[48];
	char token[48];            /* a tools/call to a server: its progress token */
	struct json_value *params; /* a client's: what it asked, for a retry */
};

struct sf_reqs {
	struct sf_req v[SF_PENDING];
	size_t n;
	bool overflowed; /* the oldest were dropped: an answer to one is no finding */
};

/* A server of one session as the fuzzer plays it */
struct sf_server {
	struct gw_fake fake;
	struct sf_reqs asked; /* the gateway's requests to it, unanswered */
	struct sf_reqs own;   /* its requests to the gateway, unanswered */
	int64_t next_id;
	bool held;    /* its start waits for a release */
	bool closed;  /* its output ended (OP_CLOSE) */
	bool started; /* its start thread took it: one never started (not
	               * approved) has no reader, so nothing is sent to it */
};

/* A gateway session and its servers' fakes, made by the first of its
 * servers' start threads (stdio: before it runs) */
struct sf_session {
	struct session *s;
	char id[SESSION_ID_LEN + 1];
	struct sf_server srv[SF_SERVERS];
	atomic_int waiting; /* its start threads blocked on a hold */
};

/* A requestState a client was given, with the request it answered */
struct sf_state {
	char *state;
	char *method;
	struct json_value *params; /* the request's params, for the retry */
	struct json_value *keys;   /* its inputRequests (keys and methods) */
};

/* A client as the fuzzer plays it */
struct sf_client {
	bool modern;                          /* sends 2026-07-28's _meta on every request */
	unsigned caps;                        /* which capabilities it declares */
	char http_id[LST_SESSION_ID_LEN + 1]; /* listener, 2025-11-25: its Mcp-Session-Id */
	struct sf_reqs asked;                 /* the gateway's requests to it */
	struct sf_reqs own;                   /* its requests not answered yet */
	struct json_value *tokens;            /* every progress token it used (an array) */
	struct json_value *last_id;           /* its last request's id */
	int64_t next_id;
	struct sf_state states[SF_STATES];
	size_t nstates;
};

struct sf_edit {
	uint8_t target, kind, param;
};

struct MHD_Connection;

/* One HTTP exchange with the listener, from the request to its end */
struct sf_http {
	struct sf_http *next;
	struct MHD_Connection *conn;
	size_t client;            /* whose */
	char kind;                /* 'P' a POST, 'G' a GET stream, 'D' DELETE, 'M' /metrics */
	bool modern;              /* a POST of 2026-07-28 */
	bool initialize;          /* its answer names the session */
	struct json_value *id;    /* a POSTed request's id, or NULL */
	struct json_value *token; /* its progress token, or NULL */
	struct mg_buf events;     /* a stream's bytes not yet a whole event */
};

struct sf_world {
	const uint8_t *ops;
	size_t nops, next;
	uint8_t flags, variant;
	char dir[96]; /* this input's folder: state, workspace, listener */
	struct cfg *cfg;
	bool trace; /* SESSION_FUZZ_TRACE: each op and line on stderr */
	struct sf_edit edits[SF_EDITS];
	size_t nedits;
	struct sf_edit headers[SF_HEADERS];
	size_t nheaders;
	struct sf_client clients[SF_CLIENTS];
	size_t nclients;
	pthread_mutex_t lock; /* sessions: start threads add them */
	struct sf_session **sessions;
	size_t nsessions;
	bool ending; /* every op ran: the client's input ends */
	int64_t unquiet_since;
	unsigned unquiet_rounds;
	bool slow; /* listener: the step waits a millisecond */
	/* stdio */
	struct gw_fake client;
	/* listener */
	struct lst *lst;
	struct sf_http *http; /* its exchanges still open */
	bool stopped;         /* the listener was told to end */
};

extern struct sf_world *sf_world;

/* ---- session_fuzz.c --------------------------------------------------------- */

/* The value stored as a credential (SF_SECRET); no line may hold it */
#define SF_SECRET_VALUE "qv7-Ferret-Lantern-3319"
/* alpha's tool list with echo's description changed (a relist's answer) */
extern const char sf_alpha_tools_changed[];
/* Requests owed an answer: id copied, params taken */
void sf_reqs_push(struct sf_reqs *q, const struct json_value *id, const char *method,
                  const char *token, struct json_value *params);
void sf_reqs_remove(struct sf_reqs *q, size_t i);
/* The sessions started so far (allocated, NULL-terminated, *n of them) */
struct sf_session **sf_sessions_snapshot(size_t *n);
/* Servers in every session: 3, or 1 with --passthrough */
size_t sf_nservers(void);
/* JSON text of v (allocated) */
char *sf_text(const struct json_value *v);
/* Bytes in fd's socket not yet read by this end (in) or by the other (out) */
int sf_queued_in(int fd);
int sf_queued_out(int fd);
/* Report what must not happen (the input is kept as a crash) */
void sf_finding(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void sf_trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A line the gateway sent client cl; exchange: the HTTP exchange it came
 * on, or NULL (stdio). JSON-RPC lines only, unless lenient (a listener's
 * refusal may be an error without an id) */
void sf_client_line(struct sf_client *cl, const char *line, size_t len, struct sf_http *exchange,
                    bool lenient);
/* The fakes' lines taken, their queued lines written; false when one of
 * them still has bytes on the way */
bool sf_fakes_settled(struct sf_session *sess);
/* On the session's own thread: idle (nothing queued to write or to read,
 * nothing starting, no job), busy, or waiting for a thread of its own */
enum sf_busy { SF_IDLE, SF_BUSY, SF_BUSY_ELSEWHERE };
enum sf_busy sf_session_busy(struct sf_session *sess);
/* Release the held servers of sess (of the first session holding any when
 * NULL); false when there were none */
bool sf_release(struct sf_session *sess);
/* Not quiet yet (a finding when it lasts 30 s); true when the wait has been
 * long enough to sleep a millisecond before looking again */
int sf_unquiet(void);
void sf_quiet(void);
/* The data folder sessions read their keychain from */
char *sf_data_dir(void);
struct sf_session *sf_session_by_id(const char *id);
/* The start thread every session gets */
void *sf_start_thread(void *srv);

/* ---- session_fuzz_program.c ------------------------------------------------ */

/* Run the next op; false when none is left */
bool sf_next_op(void);

/* ---- session_fuzz_listen.c ---------------------------------------------- */

/* Run the input through serve --listen's request path */
void sf_listen_run(void);
/* Send client cl's message (a POST; raw bytes when msg is NULL) */
void sf_listen_post(size_t cl, const struct json_value *msg, const char *raw, size_t raw_len);
/* OP_HTTP */
void sf_listen_http(uint8_t action, uint8_t which, size_t cl);

/* ---- fake_mhd.c ----------------------------------------------------------- */

struct MHD_Daemon;
/* A request from a client: headers "Name: value" each */
struct MHD_Connection *sf_mhd_request(struct MHD_Daemon *d, const char *method, const char *url,
                                      const struct strv *headers, const char *body, size_t len,
                                      struct sf_http *exchange);
/* The client closes the connection */
void sf_mhd_hang_up(struct MHD_Connection *c);
/* A connection is ready to be run (not suspended, not done) */
bool sf_mhd_busy(const struct MHD_Daemon *d);
/* What fake_mhd.c tells the listener's side: bytes of an answer (status,
 * its Mcp-Session-Id header or NULL; stream: a piece of an event stream,
 * else the whole body), the end of an exchange, and the end of a run of
 * the daemon (the step: the next op, when all is quiet) */
void sf_http_bytes(struct sf_http *x, unsigned status, const char *session_id, const char *data,
                   size_t len, bool stream);
void sf_http_closed(struct sf_http *x);
void sf_listen_step(void *listener);
/* When fake MHD_run should run again for the next step: 0 or 1 ms, or -1
 * when the listener ends (only its connections then) */
int sf_listen_delay_ms(void);

#endif
