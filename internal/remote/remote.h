/* Remote MCP servers over streamable HTTP (MCP 2025-11-25, basic/transports,
 * and 2026-07-28's binding for requests whose _meta names that version).
 *
 * A bridge makes a remote server look to the gateway exactly like a local
 * one: on one end of a socketpair it speaks newline-delimited JSON-RPC (what
 * an rpc_peer speaks to a container's stdin and stdout); on the other it
 * sends every message as its own HTTP POST through libcurl's multi interface,
 * driven by the caller's event loop (no thread, no blocking transfer), and
 * writes what the server answers (JSON or an SSE stream) back as lines.
 * docs/remote.md says what is checked and what is sent.
 *
 * The server is hostile by assumption: every buffer is bounded, and anything
 * it sends that is not what the protocol allows becomes an error response for
 * the request it answered, never a crash.
 *
 * The SSE parser (sse.c) is public for its tests and stands alone. */
#ifndef MG_REMOTE_REMOTE_H
#define MG_REMOTE_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal/base/buf.h"
#include "internal/base/err.h"
#include "internal/base/strv.h"
#include "internal/json/json.h"
#include "internal/proc/loop.h"

/* ---- the bridge (bridge.c) ----------------------------------------------- */

/* How long remote_bridge_end() spends on its DELETE at most */
#define REMOTE_CLOSE_TIMEOUT_MS 3000
/* The longest Mcp-Session-Id taken (a longer one fails initialize) */
#define REMOTE_SESSION_ID_MAX 1024
/* Resumptions (GET with Last-Event-ID) of one request's event stream */
#define REMOTE_RESUMES_MAX 16

struct remote_options {
	const char *server; /* its name, for messages and logs; copied */
	const char *url;    /* https://..., or http:// to loopback; copied */
	/* the credential's header and value, or NULLs: the value is copied into
	 * sodium_malloc memory and never logged */
	const char *header_name;
	const void *header_value;
	size_t header_len;
	const char *ca_file;     /* a private CA bundle, or NULL (system store); copied */
	long connect_timeout_ms; /* <= 0: 10 s */
	/* each message's whole exchange, resumptions included; <= 0: 300 s */
	long request_timeout_ms;
	/* the cap on one JSON answer, one SSE event, one line from the
	 * gateway; 0: 16 MiB */
	size_t response_max;
};

struct remote_bridge;

/* On the loop's thread: serve bridge_fd (one end of a SOCK_STREAM socketpair
 * the caller made; the other end carries newline JSON-RPC for the gateway's
 * rpc_peer) until remote_bridge_detach(). The bridge owns bridge_fd from this
 * call on, even when it fails (then it is closed). The first bridge of the
 * process initialises libcurl (curl_global_init), so make it on the loop's
 * thread before any other thread uses libcurl.
 *
 * Fails on a header value holding CR, LF or NUL, or when libcurl cannot
 * start. When the gateway closes its end, transfers in flight are dropped and
 * the bridge idles until it is closed. */
int remote_bridge_new(struct loop *loop, const struct remote_options *opt, int bridge_fd,
                      struct remote_bridge **out, struct mg_err **err);

/* Closing is in two steps, so the DELETE never holds the loop up.
 * remote_bridge_detach(), on the loop's thread: drop what is in flight and
 * close bridge_fd; from then on the bridge touches neither the loop nor
 * anything of its thread. remote_bridge_end(), on any one thread (a job's,
 * loop.h): DELETE the session when the server gave one (best effort, blocking
 * for REMOTE_CLOSE_TIMEOUT_MS at most; 405 and failures are only logged),
 * then free. remote_bridge_end() of a bridge not yet detached detaches it
 * first, so it must then be on the loop's thread. NULL does nothing. */
void remote_bridge_detach(struct remote_bridge *b);
void remote_bridge_end(struct remote_bridge *b);

/* The session id the server gave (NULL before initialize, or when it gives
 * none); borrowed, valid until the next loop round. For tests and logs. */
const char *remote_bridge_session(const struct remote_bridge *b);

/* ---- 2026-07-28's request headers (headers.c) ---------------------------- */

/* The longest x-mcp-header name taken, and the most a tool may have */
#define REMOTE_PARAM_NAME_MAX 128
#define REMOTE_PARAMS_MAX     64
/* The longest Mcp-Param value sent, encoded: HTTP servers commonly take
 * 8 KiB of headers in all, so a longer one is refused here, by name */
#define REMOTE_PARAM_VALUE_MAX 4096

enum remote_param_type { REMOTE_PARAM_STRING, REMOTE_PARAM_INTEGER, REMOTE_PARAM_BOOLEAN };

/* One parameter a tool's inputSchema marks with x-mcp-header */
struct remote_param {
	char *header;     /* the name after Mcp-Param- */
	struct strv path; /* the properties chain from the root to it */
	enum remote_param_type type;
};

struct remote_tool_params {
	char *tool;
	struct remote_param *params;
	size_t n;
};

/* A header value of MCP 2026-07-28 ("Value Encoding"): value as it is when
 * it is printable ASCII without a leading or trailing space and not of the
 * form =?base64?...?=, else "=?base64?" BASE64 "?=" of its bytes. Allocated,
 * NUL-terminated. */
char *remote_header_value(const char *value, size_t len);

/* A tool's x-mcp-header annotations (tool is one entry of a tools/list
 * result). 0 with *out (allocated; n may be 0), or -1 with *why (allocated)
 * saying what breaks the rules: a name that is empty, over
 * REMOTE_PARAM_NAME_MAX or not an RFC 9110 token, one that repeats another
 * (without case), a property that is not of type string, integer or
 * boolean, or an annotation not reached from the root through properties
 * alone. Such a tool must not be offered. */
int remote_tool_params(const struct json_value *tool, struct remote_tool_params **out, char **why);
void remote_tool_params_free(struct remote_tool_params *p);

/* Append to lines one "Mcp-Param-NAME: VALUE" (libcurl's "Mcp-Param-NAME;"
 * for an empty value) per annotated parameter that arguments hold and that
 * is not null. -1 with *why (allocated) when a value is not of the type its
 * schema names (an integer outside JavaScript's safe range included) or is
 * over REMOTE_PARAM_VALUE_MAX encoded: such a call is not sent. p NULL adds
 * nothing. */
int remote_param_headers(const struct remote_tool_params *p, const struct json_value *arguments,
                         struct strv *lines, char **why);

/* ---- server-sent events (sse.c) ------------------------------------------ */

/* An event id longer than this is ignored (the last one stays) */
#define SSE_ID_MAX 1024
/* retry: values above this count as this */
#define SSE_RETRY_MAX_MS 3600000

/* One dispatched event (WHATWG HTML, "event stream interpretation"). Every
 * pointer borrows from the parser and is valid during the callback only;
 * none is NUL-terminated: use the lengths. */
struct sse_event {
	const char *type; /* "message" when the event named none */
	size_t type_len;
	const char *data; /* the data lines joined by "\n" */
	size_t data_len;
	const char *id; /* the last event id as of this event ("" when none) */
	size_t id_len;
	/* the event (or one of its lines) was over event_max: it is dropped,
	 * and this call says so once; the other fields are empty */
	bool too_big;
};

/* A negative return stops sse_feed(), which returns it. */
typedef int (*sse_event_cb)(const struct sse_event *ev, void *data);

/* An incremental parser: bytes in any split, events out. Lines end in CRLF,
 * LF or CR; a leading BOM is dropped; ":" lines are comments; unknown fields
 * are ignored. Memory stays under about 3 * event_max + 2 * SSE_ID_MAX. The
 * fields are private. */
struct sse_parser {
	size_t event_max;
	struct mg_buf line; /* the line being read */
	struct mg_buf data; /* the event's data so far, each line followed by \n */
	struct mg_buf type;
	char id_buf[SSE_ID_MAX];
	size_t id_buf_len;
	char last_id[SSE_ID_MAX];
	size_t last_id_len;
	int64_t retry_ms; /* -1 until a retry: field */
	bool skip_lf;     /* the last byte was CR: a following LF ends nothing */
	bool bom_checked;
	bool discarding; /* an overlong event: skip to its end */
};

/* event_max 0 means 16 MiB. Allocates nothing yet. */
void sse_init(struct sse_parser *p, size_t event_max);
void sse_free(struct sse_parser *p);
/* A new connection of the same stream: what was half read is dropped; the
 * last event id and the retry time are kept (as an EventSource keeps them). */
void sse_reconnect(struct sse_parser *p);
/* Parse n bytes. Returns 0, or the first negative value cb returned (parsing
 * stopped there: feed no more). */
int sse_feed(struct sse_parser *p, const char *buf, size_t n, sse_event_cb cb, void *data);
/* The last event id as of the last dispatched (or empty) event: what a
 * reconnection sends as Last-Event-ID. *len 0: none. */
const char *sse_last_id(const struct sse_parser *p, size_t *len);
/* The reconnection time the stream set, in ms, or -1 when it set none. */
int64_t sse_retry_ms(const struct sse_parser *p);

#endif
