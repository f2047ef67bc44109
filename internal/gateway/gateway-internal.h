/* The session's parts, shared by session.c, server.c and client.c. */
#ifndef MG_GATEWAY_INTERNAL_H
#define MG_GATEWAY_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "internal/audit/audit.h"
#include "internal/base/buf.h"
#include "internal/base/strv.h"
#include "internal/gateway/gateway.h"
#include "internal/json/json.h"
#include "internal/jsonrpc/jsonrpc.h"
#include "internal/mcp/mcp.h"
#include "internal/proc/loop.h"
#include "internal/proc/proc.h"

/* The last bytes of a server's stderr that are kept (for the audit log and
 * the reason a server stopped; never for the model) */
#define GW_STDERR_KEEP 8192

enum gw_state {
	GW_STARTING,    /* its start-up thread owns it */
	GW_READY,       /* serving calls */
	GW_UNAVAILABLE, /* never started, or start-up failed: reason says why */
	GW_STOPPED,     /* stopped by mcpgate (no tool on, or the session ended) */
	GW_EXITED,      /* ended on its own: reason holds the exit status */
};

struct gw_call;

struct gw_server {
	struct session *sess;
	const struct cfg_server *cfg;
	enum gw_state state;
	char *reason;

	/* the runtime process and its pipes */
	struct proc proc;
	char *container; /* its name */
	struct strv argv;
	struct rpc_peer *peer;
	int err_fd; /* read by the loop thread from the start */
	pthread_mutex_t err_lock;
	struct mg_buf err_tail; /* the last GW_STDERR_KEEP bytes, under err_lock */
	size_t err_total;

	/* start-up results, written by the thread, read after it posted */
	pthread_t thread;
	bool thread_started;
	struct mcp_server_info info;
	struct json_value *tools; /* the server's tool list, as listed */
	int64_t start_ms, ready_ms;
	int exit_status; /* when the thread saw it end */
	bool exit_known;
	char *start_error;

	/* calls whose reply was lost because the server ended: answered once
	 * its exit status is known */
	struct gw_call *orphans;
	bool output_closed;
};

/* A tool offered to the client */
struct gw_tool {
	char *public_name; /* SERVER__TOOL */
	struct gw_server *server;
	const char *name;             /* the server's own name for it */
	const struct cfg_tool *cfg;   /* its settings in mcp.toml */
	const struct json_value *def; /* the definition as listed, borrowed */
};

/* A client's tools/call in flight */
struct gw_call {
	struct session *sess;
	struct gw_server *server;
	struct json_value *client_id; /* a copy */
	char *client_key;
	int64_t upstream_id;
	char *progress_token; /* ours, "mcpgate-N", or NULL */
	struct json_value *client_progress_token;
	char *tool;
	int64_t start_ms;
	struct gw_call *next, *prev;
};

struct session {
	struct cfg *cfg;
	struct ctr_driver *driver;
	struct audit *audit;
	struct loop *loop;
	char id[SESSION_ID_LEN + 1];
	pid_t owner;
	char *workspace;
	char *state_dir;

	struct rpc_peer *client;
	bool client_initialized; /* it sent notifications/initialized */
	bool answered_initialize;
	struct json_value *client_caps;
	struct strv notices; /* notifications/message texts held until initialize */

	struct gw_server *servers; /* in mcp.toml order, only those offered here */
	size_t nservers;
	size_t starting;
	bool registered;
	struct gw_tool *tools;
	size_t ntools;
	struct json_value *deferred_lists; /* ids of tools/list waiting for start-up */

	struct gw_call *calls;
	int64_t next_token;

	struct loop_timer *expire_timer;
	bool stopping;
	int signal;
};

/* server.c */
void *gw_server_start_thread(void *arg);
void gw_server_started(struct loop *loop, void *data); /* loop_post callback */
void gw_server_watch_stderr(struct loop *loop, void *data);
void gw_server_stop(struct gw_server *srv, int64_t deadline_ms);
void gw_server_set_reason(struct gw_server *srv, enum gw_state state, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
char *gw_server_stderr_last_line(struct gw_server *srv);
void gw_server_free(struct gw_server *srv);

/* client.c */
int gw_client_open(struct session *s, int in_fd, int out_fd, struct mg_err **err);
void gw_client_registered(struct session *s); /* start-up is over: answer what waited */
void gw_client_notice(struct session *s, const char *level, const char *text);
void gw_call_finish_error(struct gw_call *c, int64_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void gw_call_free(struct gw_call *c);
void gw_server_on_request(struct rpc_peer *peer, struct rpc_msg *msg, void *data);
void gw_server_on_notification(struct rpc_peer *peer, struct rpc_msg *msg, void *data);
void gw_server_on_bad_line(struct rpc_peer *peer, const struct rpc_bad_line *bad, void *data);
void gw_server_on_closed(struct rpc_peer *peer, const struct mg_err *why, void *data);

/* session.c */
void gw_session_update_io(struct session *s); /* watch for output where queued, arm timers */
void gw_session_stop(struct session *s);
/* start-up is over: build the tool table in mcp.toml order, retire servers
 * with no tool on, answer what waited */
void gw_session_register(struct session *s);
struct json_value *gw_fields(const char *key, ...); /* key, json_value*, ..., NULL */

#endif
