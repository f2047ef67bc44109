/* JSON-RPC 2.0 over newline-delimited byte streams (MCP's stdio transport).
 *
 * Three layers, each usable alone:
 *   framing  (frame.c)    struct rpc_reader: bytes in, complete lines out, each
 *                         line capped at line_max; memory stays bounded.
 *   messages (message.c)  rpc_parse() classifies one line; rpc_build_*() make
 *                         one complete line ("...\n") from parts.
 *   peer     (peer.c)     struct rpc_peer: one connection over two fds with a
 *                         bounded write queue, fresh ids, pending requests with
 *                         deadlines. It runs without an event loop (linear
 *                         code with rpc_peer_call_sync()) or attached to one
 *                         (rpc_peer_attach()): then it watches its own fds,
 *                         reads what comes, and asks for writability only
 *                         while output is queued. The caller arms a timer
 *                         for rpc_peer_next_deadline().
 *
 * The other side is hostile by assumption: lines of any length, garbage,
 * wrong ids and floods are reported through callbacks, never fatal.
 *
 * Times are milliseconds of CLOCK_MONOTONIC (rpc_now_ms()); a deadline of 0
 * means none. Errors follow internal/base/err.h. */
#ifndef MG_JSONRPC_JSONRPC_H
#define MG_JSONRPC_JSONRPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "internal/base/buf.h"
#include "internal/base/err.h"
#include "internal/base/log.h"
#include "internal/json/json.h"

/* Error codes: JSON-RPC 2.0's, MCP's, and the gateway's own. */
#define RPC_PARSE_ERROR        (-32700)
#define RPC_INVALID_REQUEST    (-32600)
#define RPC_METHOD_NOT_FOUND   (-32601)
#define RPC_INVALID_PARAMS     (-32602)
#define RPC_INTERNAL_ERROR     (-32603)
#define RPC_RESOURCE_NOT_FOUND (-32002) /* MCP: resources/read of an unknown URI */
#define RPC_SERVER_ERROR       (-32000) /* a failure on the gateway's side */
/* MCP 2026-07-28: the request's _meta protocol version is not served */
#define RPC_UNSUPPORTED_PROTOCOL_VERSION (-32022)

#define RPC_LINE_MAX_DEFAULT        ((size_t)16 << 20)
#define RPC_WRITE_QUEUE_MAX_DEFAULT ((size_t)64 << 20)
#define RPC_MAX_DEPTH_DEFAULT       64
#define RPC_MAX_PENDING_DEFAULT     4096
/* rpc_reader_read_fd() reads at most this much per call */
#define RPC_READ_CHUNK ((size_t)64 << 10)

int64_t rpc_now_ms(void);

/* ---- framing ------------------------------------------------------------- */

/* rpc_reader_next(): a line was longer than line_max (not an error) */
#define RPC_OVERFLOW (-2)
/* rpc_reader_read_fd(): nothing to read now (EAGAIN; not an error) */
#define RPC_AGAIN (-3)

/* A line is the bytes before "\n", with one trailing "\r" removed; empty lines
 * are skipped. A line longer than line_max is reported once, as soon as it is
 * known to be too long (RPC_OVERFLOW), and the rest of it is dropped up to its
 * newline without being buffered. When the caller calls rpc_reader_next()
 * until it returns 0 after each feed or read, the buffer never holds more than
 * line_max + 1 + the last feed's bytes.
 *
 * The fields are private; the struct is public only so it can be embedded. */
struct rpc_reader {
	char *buf;
	size_t cap;
	size_t start; /* first unread byte */
	size_t end;   /* end of the data */
	size_t scan;  /* [start, scan) is known to hold no newline */
	size_t line_max;
	size_t overflow_bytes;
	bool discarding; /* dropping the rest of an overlong line */
	bool overflow_pending;
};

/* line_max 0 means RPC_LINE_MAX_DEFAULT. Allocates nothing. */
void rpc_reader_init(struct rpc_reader *r, size_t line_max);
/* Frees the buffer (not r); r can be initialised again. */
void rpc_reader_free(struct rpc_reader *r);
/* Copy n bytes in. Never fails (out of memory aborts). */
void rpc_reader_feed(struct rpc_reader *r, const char *data, size_t n);
/* One read(2) of at most RPC_READ_CHUNK bytes from fd into the reader, retried
 * on EINTR. Returns the number of bytes read (> 0), 0 at end of file,
 * RPC_AGAIN when fd is non-blocking and has nothing now (err untouched), or -1
 * on a read error (err filled). */
ssize_t rpc_reader_read_fd(struct rpc_reader *r, int fd, struct mg_err **err);
/* Returns 1 with the next line in *line and *len, 0 when no complete line is
 * buffered, or RPC_OVERFLOW when a line was too long (see
 * rpc_reader_overflow_bytes()). The line is borrowed from the reader and
 * valid until the next call on r; it is NUL-terminated, but may itself hold
 * NUL bytes: use len. */
int rpc_reader_next(struct rpc_reader *r, const char **line, size_t *len);
/* For the last RPC_OVERFLOW: bytes of that line seen when it was reported
 * (more than line_max; the line may have gone on). */
size_t rpc_reader_overflow_bytes(const struct rpc_reader *r);
/* Unread bytes held (an incomplete last line at end of input shows here). */
size_t rpc_reader_buffered(const struct rpc_reader *r);
/* Bytes allocated for the buffer. */
size_t rpc_reader_capacity(const struct rpc_reader *r);

/* ---- messages ------------------------------------------------------------ */

enum rpc_kind {
	RPC_INVALID,      /* not a message (after a failed rpc_parse, or empty) */
	RPC_REQUEST,      /* method and id */
	RPC_NOTIFICATION, /* method, no id */
	RPC_RESULT,       /* a response with "result" */
	RPC_ERROR,        /* a response with "error" */
};

/* A parsed message. It owns root; every other pointer borrows from root and
 * is NULL when the member is absent. */
struct rpc_msg {
	enum rpc_kind kind;
	struct json_value *root;
	const char *method;              /* requests, notifications; no NUL inside */
	const struct json_value *id;     /* a string or an integer; JSON null only in
	                                 * an error response; NULL for notifications */
	const struct json_value *params; /* an object or an array */
	const struct json_value *result; /* any JSON value */
	int64_t error_code;
	const char *error_message; /* may hold NUL bytes (error_message_len) */
	size_t error_message_len;
	const struct json_value *error_data;
};

/* Parse one line (without its newline) as one JSON-RPC 2.0 message: at most
 * len bytes, nesting at most max_depth (0: RPC_MAX_DEPTH_DEFAULT). Batches
 * (JSON arrays) are refused: MCP 2025-06-18 removed them.
 *
 * On failure err says what is wrong, and out is still filled as far as it
 * could be: out->root is NULL when the line is not JSON (answer
 * RPC_PARSE_ERROR) and set when it is JSON but not a valid message (answer
 * RPC_INVALID_REQUEST); out->id is set when the message carried a usable id,
 * so the answer can name it. Call rpc_msg_free(out) after success and failure
 * alike. */
int rpc_parse(const char *line, size_t len, size_t max_depth, struct rpc_msg *out,
              struct mg_err **err);
/* Frees what msg owns and zeroes it (msg itself is the caller's); NULL and an
 * emptied message do nothing. */
void rpc_msg_free(struct rpc_msg *msg);
/* Move src's contents into dst (which must be empty or freed) and leave src
 * empty: how a callback keeps a message it was lent. */
void rpc_msg_move(struct rpc_msg *dst, struct rpc_msg *src);

/* A canonical key for maps of ids, so 42 and "42" never collide: "n:42" for an
 * integer, "s:" and the text for a string (NUL written as "\0" and backslash
 * as "\\"). Returns an allocated string the caller frees, or NULL when id is
 * not a string or an integer in int64 range. */
char *rpc_id_key(const struct json_value *id);
/* The key of an integer id, as rpc_id_key() writes it. Caller frees. */
char *rpc_id_key_int(int64_t id);

/* Builders: each appends exactly one complete line (compact JSON and "\n") to
 * out, members in the order jsonrpc, id, method/result/error, params. Values
 * are borrowed. On failure (out's maximum, a value that cannot be written)
 * out is left as it was. */
int rpc_build_request(const struct json_value *id, const char *method,
                      const struct json_value *params /* may be NULL */, struct mg_buf *out,
                      struct mg_err **err);
int rpc_build_notification(const char *method, const struct json_value *params /* may be NULL */,
                           struct mg_buf *out, struct mg_err **err);
/* result NULL writes {} (MCP's empty result, e.g. for ping). */
int rpc_build_result(const struct json_value *id, const struct json_value *result,
                     struct mg_buf *out, struct mg_err **err);
/* id NULL writes "id":null (the id of a request could not be read). */
int rpc_build_error(const struct json_value *id, int64_t code, const char *message,
                    const struct json_value *data /* may be NULL */, struct mg_buf *out,
                    struct mg_err **err);

/* ---- peer ---------------------------------------------------------------- */

struct rpc_peer;

/* A line that is not a JSON-RPC message. */
struct rpc_bad_line {
	int64_t code;                /* RPC_PARSE_ERROR (not JSON, or too long) or
	                             * RPC_INVALID_REQUEST (JSON, not a message) */
	const char *reason;          /* what is wrong; never NULL */
	const struct json_value *id; /* the message's id when it had a usable one */
	size_t len;                  /* bytes of the line (seen so far, if overflow) */
	bool overflow;               /* longer than line_max */
	/* a message that failed the peer's check (code RPC_INVALID_PARAMS):
	 * the peer answered it, or none is due; it is told to be recorded */
	bool answered;
};

/* Completion of rpc_peer_send_request(): exactly one call per request, unless
 * it was cancelled. reply is the response (RPC_RESULT or RPC_ERROR) and why is
 * NULL; or reply is NULL and why says what happened (timed out, the peer
 * closed, the peer was freed). reply is lent for the call: keep it with
 * rpc_msg_move(). */
typedef void (*rpc_done_cb)(struct rpc_peer *peer, struct rpc_msg *reply, const struct mg_err *why,
                            void *data);

/* Callbacks may call any rpc_peer_* function on the peer except
 * rpc_peer_free(), rpc_peer_read() and rpc_peer_call_sync(). Messages are lent
 * for the call (keep one with rpc_msg_move()). A NULL callback gets the
 * default named beside it. */
struct rpc_peer_config {
	const char *name;       /* for messages, like "server github"; copied */
	size_t line_max;        /* 0: RPC_LINE_MAX_DEFAULT */
	size_t write_queue_max; /* bytes queued for output; 0: RPC_WRITE_QUEUE_MAX_DEFAULT */
	size_t max_depth;       /* JSON nesting; 0: RPC_MAX_DEPTH_DEFAULT */
	size_t max_pending;     /* requests awaiting replies; 0: RPC_MAX_PENDING_DEFAULT */
	/* default: answer RPC_METHOD_NOT_FOUND */
	void (*on_request)(struct rpc_peer *peer, struct rpc_msg *msg, void *data);
	/* default: ignore */
	void (*on_notification)(struct rpc_peer *peer, struct rpc_msg *msg, void *data);
	/* a response that matches no pending request: never sent, late after a
	 * timeout, or cancelled. default: drop with a log line */
	void (*on_response)(struct rpc_peer *peer, struct rpc_msg *msg, void *data);
	/* default: a log line (the first few per peer) */
	void (*on_bad_line)(struct rpc_peer *peer, const struct rpc_bad_line *bad, void *data);
	/* the input ended (why NULL) or failed; every pending request has been
	 * failed just before. default: nothing */
	void (*on_closed)(struct rpc_peer *peer, const struct mg_err *why, void *data);
	/* the output broke (a write failed: the reader is gone); once, and
	 * possibly from inside a send on this peer. default: nothing (every
	 * later send fails) */
	void (*on_write_failed)(struct rpc_peer *peer, const struct mg_err *why, void *data);
	/* Every message's members checked before it is dispatched (the shapes
	 * of internal/mcp/shapes.c): NULL when it may go on, else why not
	 * (allocated). method is a request's or notification's own, and for a
	 * response the method of the request it answers; body is the params or
	 * the result. A request that fails is answered RPC_INVALID_PARAMS with
	 * why; a notification is dropped; a result becomes an error reply
	 * (RPC_INTERNAL_ERROR, naming the peer) to its request. Each is told to
	 * on_bad_line as well, with answered set. NULL: nothing is checked. */
	char *(*check)(enum rpc_kind kind, const char *method, const struct json_value *body);
	void *data; /* passed to every callback */
};

/* Every line this peer sends passes through fn from now on (the session's
 * redaction on the client's peer); what fn returns must still be one line
 * ending in a newline. NULL: none. */
void rpc_peer_set_filter(struct rpc_peer *p, mg_text_filter fn, void *data);

/* A peer reading in_fd and writing out_fd (they may be the same fd). The peer
 * owns both fds from this call on, even when it fails: it sets them
 * non-blocking and closes them in rpc_peer_free(). SIGPIPE must be ignored by
 * the process: a closed output is an error for this peer only. A peer is used
 * by one thread at a time (say a start-up thread with rpc_peer_call_sync(),
 * then the loop's thread); it has no locks. */
int rpc_peer_new(int in_fd, int out_fd, const struct rpc_peer_config *cfg, struct rpc_peer **out,
                 struct mg_err **err);
/* Fails every pending request ("... was closed"), closes both fds, frees.
 * NULL does nothing. Never from inside one of the peer's callbacks. */
void rpc_peer_free(struct rpc_peer *peer);

/* From now on the peer watches its fds on loop (internal/proc/loop.h),
 * whose thread alone uses it from here: in_fd while its input lasts (what
 * comes is read and dispatched as rpc_peer_read() does), out_fd only while
 * output is queued (register EPOLLOUT when a write leaves some behind, drop
 * it once drained), so its owner never has to say when it wants to write.
 * rpc_peer_free() unwatches. Not with rpc_peer_call_sync() any more. */
struct loop;
int rpc_peer_attach(struct rpc_peer *peer, struct loop *loop, struct mg_err **err);
/* Attached: read nothing more (in_fd is no longer watched); queued output
 * still goes. */
void rpc_peer_stop_reading(struct rpc_peer *peer);
/* Attached: read nothing for now (paused), or again: what the other side
 * writes waits in its pipe (backpressure; nothing is lost) */
void rpc_peer_pause_reading(struct rpc_peer *peer, bool paused);
bool rpc_peer_paused(const struct rpc_peer *peer);
/* Bytes read from the other side so far */
uint64_t rpc_peer_bytes_read(const struct rpc_peer *peer);
/* Lines refused so far because the write queue was full: a response may
 * take the queue past write_queue_max into as much again, every other line
 * is refused there (and counted here) */
uint64_t rpc_peer_shed(const struct rpc_peer *peer);
/* Responses queued and not wholly written yet */
size_t rpc_peer_queued_responses(const struct rpc_peer *peer);

const char *rpc_peer_name(const struct rpc_peer *peer);
int rpc_peer_in_fd(const struct rpc_peer *peer);
int rpc_peer_out_fd(const struct rpc_peer *peer);

#define RPC_READ_DRAINED 0 /* read everything available; wait for input */
#define RPC_READ_CLOSED  1 /* the input ended: stop watching in_fd */
#define RPC_READ_MORE    2 /* stopped after a fair share; input may remain */

/* Read what is available and dispatch every complete line to the callbacks
 * (responses to their pending requests). A read shorter than asked is taken
 * to have emptied the fd (a pipe or socket hands over all it holds), so the
 * watcher must be level-triggered, as every one here is; an end of input
 * then comes on the next wake-up. Returns RPC_READ_DRAINED,
 * RPC_READ_MORE (an edge-triggered loop must call again; a level-triggered one
 * will be woken again anyway), RPC_READ_CLOSED at end of input, or -1 when
 * reading failed (err filled; the input counts as closed). On the way to
 * RPC_READ_CLOSED or -1, pending requests are failed and on_closed is called.
 * Once closed, returns RPC_READ_CLOSED without reading. */
int rpc_peer_read(struct rpc_peer *peer, struct mg_err **err);
/* The input has ended (EOF or a read error). */
bool rpc_peer_closed(const struct rpc_peer *peer);
/* When the peer's first bytes came (rpc_now_ms()), or 0 before any */
int64_t rpc_peer_first_read_ms(const struct rpc_peer *peer);

/* From now on every request this peer sends carries meta's members (an
 * object, copied) in its params' _meta, where the caller's _meta has none of
 * the same name (the caller's says it for one request): how a 2026-07-28
 * server is told the version and the capabilities on each request. NULL:
 * none. */
void rpc_peer_set_request_meta(struct rpc_peer *peer, const struct json_value *meta);
const struct json_value *rpc_peer_request_meta(const struct rpc_peer *peer);

/* Send a request with the next id of this peer (1, 2, 3, ...; never reused),
 * record it as pending, queue it and try to write. params is borrowed and may
 * be NULL. deadline_ms is absolute (0: none). *id_out (may be NULL) gets the
 * id, for rpc_id_key_int() and rpc_peer_cancel(). On failure (queue full,
 * too many pending, output broken, input ended) cb is never called. */
int rpc_peer_send_request(struct rpc_peer *peer, const char *method,
                          const struct json_value *params, int64_t deadline_ms, rpc_done_cb cb,
                          void *data, int64_t *id_out, struct mg_err **err);
/* Queue one complete line (ending in its only "\n"), as the rpc_build_*()
 * functions make, and try to write. Fails when the write queue would pass
 * write_queue_max or the output is broken; then nothing was queued. */
int rpc_peer_send_line(struct rpc_peer *peer, const char *line, size_t len, struct mg_err **err);
/* rpc_build_*() and rpc_peer_send_line() in one. */
int rpc_peer_send_result(struct rpc_peer *peer, const struct json_value *id,
                         const struct json_value *result, struct mg_err **err);
int rpc_peer_send_error(struct rpc_peer *peer, const struct json_value *id, int64_t code,
                        const char *message, const struct json_value *data, struct mg_err **err);
int rpc_peer_send_notification(struct rpc_peer *peer, const char *method,
                               const struct json_value *params, struct mg_err **err);
/* Write as much of the queue as the output takes now. 0 when done or the
 * output is full; -1 when the output is broken (EPIPE and the like): every
 * later send fails too. Every send calls it; attached, the loop does too. */
int rpc_peer_flush(struct rpc_peer *peer, struct mg_err **err);
/* Bytes are queued and the output works: watch out_fd for writability. */
bool rpc_peer_wants_write(const struct rpc_peer *peer);
size_t rpc_peer_queued_bytes(const struct rpc_peer *peer);

/* Fail each pending request whose deadline is at or before now_ms: its
 * callback gets reply NULL and "timed out after N ms waiting for METHOD from
 * NAME". A reply that comes later goes to on_response. */
void rpc_peer_expire(struct rpc_peer *peer, int64_t now_ms);
/* The earliest deadline of a pending request, or 0 when none has one. */
int64_t rpc_peer_next_deadline(const struct rpc_peer *peer);
/* Fail every pending request: its callback gets reply NULL and "no reply to
 * METHOD from NAME: WHY". Requests sent by those callbacks stay pending. */
void rpc_peer_fail_all(struct rpc_peer *peer, const char *why);
/* Forget a pending request without calling back (the caller sends
 * notifications/cancelled itself). id_key as from rpc_id_key(). Returns 1 when
 * it was pending, 0 when not. */
int rpc_peer_cancel(struct rpc_peer *peer, const char *id_key);
size_t rpc_peer_pending_count(const struct rpc_peer *peer);

/* For linear start-up code on its own thread, with no event loop: send a
 * request, then poll() both fds, dispatching other messages to the callbacks
 * meanwhile (so a server's ping is answered), until the reply comes or
 * deadline_ms passes. Returns 0 with the reply in *reply_out (the caller frees
 * it with rpc_msg_free(); it may be an RPC_ERROR response: look at kind), or
 * -1 on a timeout naming the method, a closed peer, or a send failure. */
int rpc_peer_call_sync(struct rpc_peer *peer, const char *method, const struct json_value *params,
                       int64_t deadline_ms, struct rpc_msg *reply_out, struct mg_err **err);

#endif
