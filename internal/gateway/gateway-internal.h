/* The session's parts, shared by session.c, server.c and client.c. */
#ifndef MG_GATEWAY_INTERNAL_H
#define MG_GATEWAY_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "internal/audit/audit.h"
#include "internal/base/buf.h"
#include "internal/base/strv.h"
#include "internal/gateway/confirm_state.h"
#include "internal/gateway/gateway.h"
#include "internal/gateway/launch.h"
#include "internal/json/json.h"
#include "internal/jsonrpc/jsonrpc.h"
#include "internal/keychain/keychain.h"
#include "internal/mcp/manifest.h"
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
	GW_IDLE,        /* start = "lazy": not started until its first use; its
	                 * approved tools are offered from the pin meanwhile */
	GW_DISABLED,    /* enabled = false, or no longer in mcp.toml, or its
	                 * entry changed and it is on its way to starting again
	                 * with it (watch.c): reason says which */
};

struct gw_call;
struct gw_relayed;
struct confirm_keeper;

/* Which MCP the client speaks (era.c): decided by its first request */
enum gw_era {
	GW_ERA_UNKNOWN, /* nothing asked yet */
	GW_ERA_LEGACY,  /* it sent initialize: 2025-11-25 and earlier, a session */
	GW_ERA_MODERN,  /* 2026-07-28: every request carries its _meta */
};

#define GW_VERSION      "0.1.0"
#define GW_INSTRUCTIONS "Tools are offered as SERVER__TOOL; each server runs contained."
/* ttlMs of 2026-07-28 results: the client has no list_changed without
 * subscriptions/listen, so a list is fresh for a few seconds only; a read
 * is the server's and may change at any time */
#define GW_TTL_LIST_MS     5000
#define GW_TTL_READ_MS     0
#define GW_TTL_DISCOVER_MS 60000

/* Requests that wait (waiting.c): a call, a read or a prompt for a server
 * still starting, until its start ends; a list for a client that cannot
 * hear that the list changed, until every server's first start ended or
 * GW_LIST_WAIT_MS passed. Kept whole, in the order they came; one more is
 * refused with "ask again" (docs/2026-12-02-never-wait.md). */
#define GW_WAITING_MAX  64
#define GW_LIST_WAIT_MS 2000
/* What waits for a server's start is answered this long after its start
 * deadline (start_timeout) at the latest, whatever the start still does */
#define GW_START_GRACE_MS 500
/* A server that exits mid-session is started again after 0.5 s, 1 s, 2 s...
 * (at most GW_RESTART_DELAY_MAX_MS), at most GW_RESTARTS_MAX times */
#define GW_RESTARTS_MAX         5
#define GW_RESTART_DELAY_MS     500
#define GW_RESTART_DELAY_MAX_MS 30000

/* mcpgate's host side of a server's connect destinations on the host's
 * loopback (connect.c, docs/2026-12-02-connect.md): mcpgate-egress run on
 * the host, forwarding from a unix socket each to its destination, its
 * sockets in a folder of mcpgate's that the sidecar alone mounts */
struct gw_connect_host {
	struct proc proc; /* stdin is its lifeline */
	char *dir;        /* the private folder made for it (0700), removed at the end */
	char *sockets;    /* dir/d (0711): what the sidecar mounts */
	int out_fd;       /* its records, as the sidecar's */
	struct mg_buf line;
};

/* A server's way out, when it lists hosts or connect destinations (egress.c) */
struct gw_egress {
	struct ctr_topology topo; /* its networks and the proxy's container, made by the driver */
	struct proc proc;         /* its runtime process: stdin is the lifeline */
	int out_fd;               /* its records, one JSON line each */
	/* the loop watches out_fd and the proxy's stderr: set on the loop
	 * thread once the server is ready, never before, so a start that fails
	 * on the server's own thread touches no watch of the loop's */
	bool watched;
	struct mg_buf line;
	unsigned records, dropped;
	char *proxy_url; /* http://ADDRESS:PORT on the internal network; NULL without hosts */
	struct gw_connect_host host;
	/* where each connect destination is reached in the server's network,
	 * parallel to its cfg->connect (the sidecar's address and ports) */
	char **connect_hosts;
	unsigned *connect_ports;
};

/* A sidecar's end, in three steps (egress.c): begin on the thread that owns
 * the server, work anywhere (it waits and runs the runtime), done back on
 * the owner's thread */
struct gw_egress_end {
	struct proc proc;         /* the sidecar's runtime process and lifeline */
	struct ctr_topology topo; /* its container and networks, to remove */
	struct proc host;         /* the host side's process and lifeline */
	char *host_dir;           /* its folder, to remove */
};

/* How a server's start spent its time, by phase (milliseconds; the audit
 * log's server.ready has them, docs/audit-log.md). Each phase is set by the
 * code that runs it, on the server's start thread. */
struct gw_start_phases {
	int64_t platform_wait_ms; /* waiting for what the runtime enforces here */
	int64_t platform_ms;      /* finding it: kept (a read) or asked (info) */
	bool platform_kept;
	int64_t image_check_ms;     /* a failed start's check of its image */
	int64_t image_wait_ms;      /* waiting for that check's answer */
	int64_t egress_topology_ms; /* its networks (hosts only) */
	int64_t sidecar_ready_ms;   /* its proxy's run until it has an address */
	int64_t run_prepare_ms;     /* the image's configuration, mounts, argv */
	int64_t first_byte_ms;      /* the run spawned to the server's first output */
	int64_t initialize_ms;      /* that first output to the end of initialize */
	int64_t tools_list_ms;
	int64_t manifest_hash_ms;
};

struct gw_server {
	struct session *sess;
	const struct cfg_server *cfg;
	enum gw_state state;
	char *reason;

	/* the runtime process, its MCP peer, its stderr (read by the loop
	 * thread from the start) */
	struct gw_launch launch;
	char *container; /* its name */
	struct gw_egress egress;
	struct kc_secret *secret; /* its credential's value until it is started */
	struct gw_remote *remote; /* a remote server's bridge (remote_side.c) */
	pthread_mutex_t err_lock;
	struct mg_buf err_tail; /* the last GW_STDERR_KEEP bytes, under err_lock */
	size_t err_total;

	/* start-up results, written by the thread, read after it posted */
	pthread_t thread;
	bool thread_started;
	struct mcp_server_info info;
	struct json_value *tools; /* the server's tool list, as listed */
	/* a lazy server's approved tools (its record), offered while its first
	 * start runs; freed once it is ready or failed */
	struct json_value *pinned;
	char live_hash[MANIFEST_HASH_LEN];
	bool relisting; /* a tools/list after list_changed is under way */
	int64_t start_ms, ready_ms;
	struct gw_start_phases phases;
	int exit_status; /* when the thread saw it end */
	bool exit_known;
	char *start_error;
	bool hinted; /* a missing command was named to the person already */

	/* calls whose reply was lost because the server ended: answered once
	 * its exit status is known */
	struct gw_call *orphans;
	bool output_closed;
	/* gw_server_stop() ran: its job has what is left of the server */
	bool stop_started;
	/* attached to its one instance (instance.c), not started here */
	bool attached;
	/* attached: the instance's server is of 2026-07-28, so a call's answer
	 * may be input_required (set at attach, under the instances' lock) */
	bool instance_modern;
	/* its tools are in the session's table (session.c's gw_server_offer) */
	bool offered;
	/* its first start ended, ready or not: lists wait for it no more */
	bool settled;
	/* after an exit mid-session (server.c): starts again so far, and the
	 * timer of the next */
	unsigned restarts;
	struct loop_timer *restart_timer;
	bool restart_wanted;    /* its end is being cleaned, then it starts again */
	uint64_t pressure_mark; /* pressure.c: bytes read from it when all was calm */
	/* its start's deadline (plus GW_START_GRACE_MS): what waits for it is
	 * answered then; overdue once it passed with the start still running */
	struct loop_timer *start_timer;
	bool start_overdue;
	/* watch.c: its entry as mcp.toml has it now. disabled: enabled =
	 * false (or removed: gone from mcp.toml); next_cfg: a changed entry
	 * it starts with next; start_wanted: it starts once its stop is done;
	 * down_on_start: taken down once the start under way ends */
	bool disabled, removed, start_wanted, down_on_start;
	const struct cfg_server *next_cfg;
	/* its end is a job not yet done (gw_server_stop to stop_done) */
	bool stop_pending;
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
	struct json_value *params; /* for the server, kept for a retry (rounds.c) */
	bool awaiting_confirm;     /* a question (ours or its server's) is with the client */
	struct json_value *caps;   /* 2026-07-28: the request's client capabilities */
	struct gw_round *round;    /* rounds.c: its server's input requests, or NULL */
	struct gw_park *park;      /* rounds.c: its server's requests, for a new client */
	int log_rank;              /* 2026-07-28: the request's logLevel, or -1 */
	char *traceparent;         /* the client's W3C trace context, when well formed */
	bool cancelled;            /* the client cancelled it while we asked */
	unsigned asks;             /* questions its server put to the client in it (asks.c) */
	int64_t seq;               /* its number in the audit log (tool.call.start), 0: none yet */
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
	char *data_dir;
	char *egress_binary;          /* the private copy of mcpgate-egress, or NULL */
	char *egress_error;           /* why there is none */
	char *launch_binary;          /* the private copy of mcpgate-launch, or NULL */
	char *launch_error;           /* why there is none */
	struct ctr_platform platform; /* what the runtime enforces here */
	char *platform_error;         /* why that is not known: no server starts */
	struct gw_startup *startup;   /* startup.c: what the starts share */
	struct kc *keychain;          /* NULL when it cannot be read */
	char *keychain_error;
	struct gw_secrets *secrets; /* every stored value's forms, for the scanner */
	char *config_error;         /* why there is no configuration, or NULL */
	char *workspace_error;      /* why serve's workspace cannot be used, or NULL */

	struct rpc_peer *client;
	enum gw_era era;
	int request_log_rank; /* 2026-07-28: the logLevel of the request served now, or -1 */
	struct confirm_keeper *confirm; /* 2026-07-28: confirmations' requestState */
	bool client_initialized;        /* it sent notifications/initialized */
	bool answered_initialize;
	struct json_value *client_caps;
	struct gw_listen *listens; /* listens.c: open subscriptions/listen requests */
	bool told_unlisted;        /* the client was told which tools it cannot call */
	char *workspace_note;      /* a warning about serve's workspace, or NULL */
	char *runtime_note;        /* one about its runtime, or NULL */
	char *client_version;      /* the protocol version agreed with the client */
	struct strv notices;       /* notifications/message texts held until initialize */

	struct gw_server *servers; /* in mcp.toml order, only those offered here */
	size_t nservers;
	size_t starting;
	bool registered;
	struct gw_tool *tools;
	size_t ntools;
	struct gw_waiting *waiting; /* waiting.c: GW_WAITING_MAX of them */
	size_t nwaiting;
	struct loop_timer *list_timer; /* the lists' bound (GW_LIST_WAIT_MS) */
	/* the client was answered a list of each kind (enum gw_listen_kind):
	 * a client of 2025-11-25 hears a kind changed only once it listed it */
	bool listed[3];
	bool no_wait; /* what is dispatched now waits no more */

	struct gw_call *calls;
	int64_t next_token;
	int64_t next_call; /* the calls' numbers in the audit log */
	/* pressure.c: servers not read while the way to the client is full,
	 * and the lines shed to it that a record counted */
	size_t paused_servers;
	uint64_t shed_told;
	bool told_audit; /* the person was told the audit log fails */
	/* asks.c: the questions servers may still put to the client now, and
	 * when the bucket last refilled */
	int64_t asks_tokens;
	int64_t asks_at_ms;

	struct loop_timer *expire_timer;

	/* relay.c: nothing here needs freeing at the end (what is pending
	 * frees itself when its peer fails it) */
	struct gw_relayed *relayed; /* servers' requests with the client */
	char log_level[16];         /* the client's logging/setLevel, or "" */
	bool stopping;
	int64_t stop_deadline; /* from the session's end: stop_timeout from then */
	int signal;
	bool signals_elsewhere; /* session_options' */
	/* session_options' start_thread (tests and fuzzing only), or NULL */
	void *(*start_thread)(void *srv);
	/* instance.c: the listener's instances, where this session attaches its
	 * shared and exclusive servers (or NULL); and, in the session that is
	 * one such instance, what it serves (else NULL) */
	struct gw_instances *instances;
	struct gw_host *host;
	/* gw_session_fetch: the session starts its one server to read its
	 * manifest (review), and ends once that is read */
	bool fetching;
	/* watch.c: the session follows mcp.toml (joined the process's watch);
	 * gen is the configuration its servers' entries come from */
	bool watching;
	size_t gen;
	unsigned watch_errors; /* the reads that failed, as far as told */
};

/* server.c: the phases as the audit log's object (those a start had) */
struct json_value *gw_start_phases_json(const struct gw_start_phases *p);

/* startup.c: what the starts share, found once per session: the platform
 * (kept or asked) on a thread from begin on, the image checks on demand (one
 * per distinct image), the sweep, a job of the loop begun once no start is
 * under way. end waits for the thread; free also frees what was found. */
struct gw_startup;
void gw_startup_begin(struct session *s);
void gw_startup_end(struct session *s);
void gw_startup_free(struct session *s);
/* loop_post callback, after a start ends: the sweep begins when none is
 * under way any more (s->starting is 0) */
void gw_startup_sweep_when_idle(struct loop *loop, void *data);
/* on a start thread: 0 once s->platform and s->platform_error are set, -1
 * when deadline_ms (proc_now_ms's clock) passed first; phases (or NULL)
 * gets the wait and how the platform was found */
int gw_startup_platform_wait(struct session *s, int64_t deadline_ms,
                             struct gw_start_phases *phases);
/* image_present for image, asked of the runtime once per session: the
 * first start that asks checks it for all, the others wait for its answer
 * until deadline_ms */
int gw_startup_image_present(struct session *s, const char *image, int64_t deadline_ms,
                             struct gw_start_phases *phases, struct mg_err **err);

/* server.c */
/* The peer of a server of srv's (a container's pipes, a remote bridge, an
 * instance), named name (borrowed until rpc_peer_new copies it): its
 * callbacks, its limits, and the shapes of what a server may send */
struct rpc_peer_config gw_server_peer_config(struct gw_server *srv, const char *name);
void *gw_server_start_thread(void *arg);
void gw_server_started(struct loop *loop, void *data); /* loop_post callback */
void gw_server_watch_stderr(struct loop *loop, void *data);
/* What a start thread that succeeded leaves, with no runtime (for the
 * start_thread of gateway_test.c and the session fuzzer): srv's MCP peer on
 * in_fd and out_fd (owned from here, also on failure), info and tools as its
 * initialize and tools/list answered (both taken), its live hash, and for a
 * server of 2026-07-28 (info's version) the request meta naming it; then
 * the start is handed to the loop as gw_server_start_thread hands it. */
void gw_server_start_on_fds(struct gw_server *srv, int in_fd, int out_fd,
                            struct mcp_server_info *info, struct json_value *tools);
/* On the loop's thread: close its input and hand the rest of its end to a
 * job (loop.h): its runtime process waited for until deadline_ms, then
 * removed; its sidecar and networks; a remote server's DELETE. Its exit is
 * recorded when the job is done. Once only; later calls do nothing. */
void gw_server_stop(struct gw_server *srv, int64_t deadline_ms);
void gw_server_set_reason(struct gw_server *srv, enum gw_state state, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A tool's answer (text) that says a command is missing from the image:
 * the person is told once per server (log, audit, the client's log), with
 * the package and the add line; the answer itself is left as it is */
void gw_server_tool_hint(struct gw_server *srv, const char *text, size_t len);
/* It speaks MCP 2026-07-28 (server/discover answered at its start) */
bool gw_server_modern(const struct gw_server *srv);
/* Its answer to a call may be input_required: a server of 2026-07-28,
 * itself or behind the instance it is attached to */
bool gw_server_asks_by_result(const struct gw_server *srv);
/* A server of 2026-07-28 has no logging/setLevel: level goes on each of its
 * requests from now on, beside the version (the peer's request meta) */
void gw_server_log_level(struct gw_server *srv, const char *level);
void gw_server_free(struct gw_server *srv);

/* remote_side.c: a remote server's bridge and peer, instead of a container */
struct remote_bridge;
int gw_remote_start(struct gw_server *srv, struct mg_err **err); /* start thread */
/* On the loop's thread, idempotent: the bridge leaves the loop; what is
 * returned (or NULL) is for remote_bridge_end() on a job's thread */
struct remote_bridge *gw_remote_detach(struct gw_server *srv);

/* egress.c */
int gw_egress_prepare(struct session *s, struct mg_err **err);
/* The private copy of mcpgate's binary NAME (configured, else found beside
 * mcpgate) in DATA/folder, named by its content hash (binaries.c) */
int gw_binary_prepare(struct session *s, const char *name, const char *configured,
                      const char *folder, char **out, struct mg_err **err);
/* A server's way out, in two steps on its start thread: its networks (what
 * is made is in srv->egress.topo, which the end removes, also after a
 * failure), then its proxy's sidecar, run and waited for until deadline */
int gw_egress_topology(struct gw_server *srv, struct mg_err **err);
int gw_egress_sidecar(struct gw_server *srv, int64_t deadline, struct mg_err **err);
/* A server's egress as session_new makes it: nothing started */
void gw_egress_init(struct gw_egress *e);
/* connect.c: the sidecar's port for connect entry i of c (its
 * destination's own port where no other entry or the proxy has it) */
unsigned gw_connect_port(const struct cfg_server *c, size_t i);
/* The proxy's -forward arguments for c's connect entries */
void gw_connect_forward_args(const struct cfg_server *c, struct strv *args);
/* The host side, for c's entries on the host's loopback (none: nothing
 * runs, 0): started with the session's egress binary, and waited for until
 * its sockets are there */
int gw_connect_host_start(struct gw_server *srv, int64_t deadline, struct mg_err **err);
/* Its folder and what is left in it, gone (the end's work) */
void gw_connect_host_remove_dir(const char *dir);
/* What the server is told of each destination: address, the sidecar's
 * port */
void gw_connect_addresses(struct gw_server *srv, const char *address);
size_t gw_egress_env(const struct gw_server *srv, struct ctr_env *env, size_t max);
void gw_egress_watch(struct loop *loop, void *data);
void gw_egress_end_begin(struct gw_server *srv, struct gw_egress_end *end);
bool gw_egress_end_pending(const struct gw_egress_end *end);
void gw_egress_end_work(struct gw_server *srv, struct gw_egress_end *end, int64_t deadline_ms);
void gw_egress_end_done(struct gw_server *srv, struct gw_egress_end *end);
/* The three at once, on a start-up thread (nothing of it is the loop's yet) */
void gw_egress_stop(struct gw_server *srv, int64_t deadline_ms);
void gw_egress_free(struct gw_egress *e);

/* secrets.c */
struct gw_secrets;
int gw_secrets_open(struct session *s, struct mg_err **err);
void gw_secrets_close(struct session *s);
/* the binding rule at start: fills srv->secret, or says why not */
int gw_secrets_for_server(struct gw_server *srv, struct mg_err **err);
/* the binding rule again, before every call */
int gw_secrets_recheck(struct gw_server *srv, struct mg_err **err);
/* NULL when params (a request's or notification's whole params: arguments,
 * _meta and every other member) may go to srv, else why not (allocated;
 * names the credential and the form it was found in) */
char *gw_secrets_check_leaving(const struct gw_server *srv, const struct json_value *params);
/* replace every stored value, in any of its forms, by [redacted:NAME];
 * returns how many strings changed */
size_t gw_secrets_redact(const struct session *s, struct json_value *v);
char *gw_secrets_redact_text(const struct session *s, const char *text, size_t len);
/* The same as an mg_text_filter (data: the session), for every line that
 * leaves for the client, the audit log and mcpgate's stderr */
char *gw_secrets_filter(const char *text, size_t len, size_t *out_len, void *data);

/* relist.c */
void gw_server_relist(struct gw_server *srv);

/* client.c */
/* Answers to the client; a failure to send is logged, nothing more */
void gw_client_error_data(struct session *s, const struct json_value *id, int64_t code,
                          const struct json_value *data, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
#define gw_client_error(s, id, code, ...) gw_client_error_data(s, id, code, NULL, __VA_ARGS__)
void gw_client_result(struct session *s, const struct json_value *id,
                      const struct json_value *result);
/* result as it is, without the era's rewriting (mcpgate's own input_required) */
void gw_client_result_raw(struct session *s, const struct json_value *id,
                          const struct json_value *result);
/* A server's error reply, passed to the client under client_id with every
 * stored secret redacted; returns the (redacted) text for the audit log */
char *gw_client_forward_error(struct session *s, const struct json_value *client_id,
                              const struct rpc_msg *reply);
void gw_client_tools_changed(struct session *s); /* notifications/tools/list_changed */
int gw_client_open(struct session *s, int in_fd, int out_fd, struct mg_err **err);
/* A client's request, dispatched by its method and era as when it came
 * (what waited comes back here) */
void gw_client_dispatch(struct session *s, struct rpc_msg *msg);
void gw_client_notice(struct session *s, const char *level, const char *text);
void gw_call_finish_error(struct gw_call *c, int64_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void gw_call_free(struct gw_call *c);
/* Send the call to its server with params (c->params, or a retry's) */
void gw_call_send(struct gw_call *c, const struct json_value *params);
/* Answer the call with result as it is (no era rewriting), record it with
 * outcome and detail, and forget it */
void gw_call_answer_raw(struct gw_call *c, const char *outcome, const char *detail,
                        const struct json_value *result);
/* Forget a call unanswered, recorded as cancelled for why (NULL: not
 * recorded) */
void gw_call_drop(struct gw_call *c, const char *why);
/* The key of mcpgate's confirmation in inputRequests and inputResponses */
#define GW_CONFIRM_INPUT_KEY "mcpgate-confirm"

enum gw_listen_kind { GW_LISTEN_TOOLS, GW_LISTEN_PROMPTS, GW_LISTEN_RESOURCES };

/* waiting.c: requests that wait for a server's start, or a list for every
 * server's first start (docs/2026-12-02-never-wait.md) */
struct gw_waiting {
	struct rpc_msg msg;
	struct gw_server *srv; /* NULL: a list, for every server's first start */
	int64_t deadline_ms;   /* a list's: GW_LIST_WAIT_MS from when it came */
};
/* msg (moved from) waits for srv's start to end, a lazy srv being started
 * now; srv NULL: a list that waits for every server's first start, at
 * most GW_LIST_WAIT_MS. Refused (answered; false) when GW_WAITING_MAX
 * wait. */
bool gw_wait(struct session *s, struct rpc_msg *msg, struct gw_server *srv);
/* msg (moved from) waits for the starts under way (lazy servers its list
 * started) to end, at most start_timeout */
void gw_wait_starts(struct session *s, struct rpc_msg *msg);
/* srv's start ended (ready or not): what waited for it is dispatched again,
 * and once every server's first start ended, the lists too */
void gw_waiting_settled(struct session *s, struct gw_server *srv);
/* srv's start passed its deadline and runs on: what waited for it is
 * dispatched again, to be answered why (it waits no more) */
void gw_waiting_overdue(struct session *s, struct gw_server *srv);
/* The client cancelled request key: true when it was waiting (dropped) */
bool gw_waiting_cancel(struct session *s, const char *key);
void gw_waiting_free(struct session *s);
bool gw_all_settled(const struct session *s);
/* The client hears that a list of kind changed (list_changed, or a listen
 * of 2026-07-28 that asked for it): its lists are answered at once */
bool gw_client_hears_changes(const struct session *s, enum gw_listen_kind kind);

/* listens.c: subscriptions/listen (2026-07-28) */
struct gw_listen;
void gw_listen_open(struct session *s, struct rpc_msg *msg); /* its handler */
/* The client cancelled request key: true when it was a listen (now closed) */
bool gw_listen_cancel(struct session *s, const char *key);
/* A list changed: every listen that asked for it hears so */
void gw_listens_notify(struct session *s, enum gw_listen_kind kind);
/* A listen open asks for changes of kind */
bool gw_listens_want(const struct session *s, enum gw_listen_kind kind);
/* A resource a listen subscribed to (its public URI) was updated */
void gw_listens_updated(struct session *s, const char *uri);
void gw_listens_free(struct session *s);
/* A listen's subscription of a public resource URI: sent to its server as
 * resources/subscribe (or unsubscribe) when that server is of 2025-11-25
 * and offers subscriptions; false when no server can take it */
bool gw_relay_listen_subscribe(struct session *s, const char *uri, bool subscribe);

/* pressure.c: the way to the client full, the servers feeding it are not
 * read, the noisiest first; read again once it drained (every turn of the
 * loop). _end: what the client did not get, recorded at the session's end */
void gw_pressure(struct session *s);
void gw_pressure_end(struct session *s);

/* asks.c: questions servers put to the client (elicitation, sampling,
 * roots; either era, every way of asking): at most GW_ASKS_PER_CALL within
 * one call or request of the client's, and over the session a bucket of
 * GW_ASKS_BURST refilled one every GW_ASKS_REFILL_MS */
#define GW_ASKS_PER_CALL  16
#define GW_ASKS_BURST     64
#define GW_ASKS_REFILL_MS 5000
void gw_asks_init(struct session *s);
/* 0 when n more questions of srv's may go to the client now (counted, in
 * *call_asks too when it is not NULL: the call's or request's count);
 * -1 with why (allocated) when a limit is reached; the caller records */
int gw_asks_take(struct gw_server *srv, unsigned *call_asks, size_t n, char **why);

/* rounds.c: a 2026-07-28 server's input_required answer to a call */
struct gw_round;
/* reply is its input_required result: relayed, or the call ends saying why */
void gw_round_result(struct gw_call *c, const struct rpc_msg *reply);
/* A 2026-07-28 client's retry (params) with one of mcpgate's round states:
 * the server gets its own state and the answers, or the call is refused */
void gw_round_retry(struct gw_call *c, const char *public_name, const struct json_value *params);
/* The client cancelled a call whose server's questions are with it */
void gw_round_cancel(struct gw_call *c);
void gw_round_free(struct gw_round *r);
/* A retry's round state taken for bound (a tool's public name, or a
 * request and its name) and args: the members the server gets back
 * (inputResponses less mcpgate's, its own requestState) set in up, and
 * *asked the questions asked so far in the call (the state carries them).
 * -1 with why otherwise. */
int gw_round_take(struct session *s, const char *bound, const struct json_value *args,
                  const struct json_value *params, struct json_value *up, unsigned *asked,
                  struct mg_err **err);
/* A 2026-07-28 server's input_required answer (result) to a request other
 * than tools/call, bound to bound and args: the result for a 2026-07-28
 * client (allocated; the server's state inside a round state), or NULL
 * with why in *refusal (allocated; a 2025-11-25 client is not asked) */
struct json_value *gw_round_forwarded(struct session *s, struct gw_server *srv, const char *bound,
                                      const struct json_value *args, const struct json_value *caps,
                                      const struct json_value *result, unsigned *asks,
                                      char **refusal);
/* A 2025-11-25 server's request (sampling, elicitation, roots) while its
 * client speaks 2026-07-28: the one call of the client's to it in flight
 * answers input_required with it, and the retry's answer goes to the
 * server. NULL when taken; else why not (the caller refuses it). */
const char *gw_park_server_request(struct gw_server *srv, struct rpc_msg *msg);
/* A 2026-07-28 client's retry (carrier, a call made for it, is consumed)
 * with a parked call's state */
void gw_park_resume(struct gw_call *carrier, const char *public_name,
                    const struct json_value *params);
/* A call whose client is away with its server's questions: its end is
 * recorded, nobody is answered */
bool gw_park_away(const struct gw_call *c);
void gw_park_free(struct gw_call *c);
/* Answer the client now with result (as it is), and keep the call: its
 * server goes on with it; a retry attaches the client again */
void gw_call_detach(struct gw_call *c, const char *outcome, const char *detail,
                    const struct json_value *result);
/* A W3C traceparent in its form (version, trace id, parent id, flags) */
bool gw_traceparent_valid(const char *traceparent);
/* client.c's handlers, by method (methods.c's tables name them) */
void gw_client_tools_list(struct session *s, struct rpc_msg *msg);
void gw_client_tools_call(struct session *s, struct rpc_msg *msg);
void gw_client_initialized(struct session *s, struct rpc_msg *msg);
void gw_client_cancelled(struct session *s, struct rpc_msg *msg);
void gw_client_roots_changed(struct session *s, struct rpc_msg *msg);

/* methods.c: the handlers by method on both sides */
struct gw_client_method {
	const char *method;
	void (*fn)(struct session *s, struct rpc_msg *msg);
	/* a list (enum gw_listen_kind) that waits for servers still starting
	 * when the client cannot hear it changed; -1: none (waiting.c) */
	int list;
	bool object_params; /* params, when present, must be an object */
};
/* A request the session serves once initialized, or NULL (refused) */
const struct gw_client_method *gw_client_method(const char *method);
void gw_client_notification(struct session *s, struct rpc_msg *msg);
/* the server peers' callbacks */
void gw_server_on_request(struct rpc_peer *peer, struct rpc_msg *msg, void *data);
void gw_server_on_notification(struct rpc_peer *peer, struct rpc_msg *msg, void *data);
void gw_server_on_bad_line(struct rpc_peer *peer, const struct rpc_bad_line *bad, void *data);
void gw_server_on_closed(struct rpc_peer *peer, const struct mg_err *why, void *data);

/* relay.c: resources, prompts, completion, logging, and the servers'
 * sampling, elicitation and roots (docs/relay.md) */
#define GW_PAGE_MAX 100 /* items in one page of a list the client gets */
/* The client's requests relay.c serves, by method (methods.c names them);
 * only logging/setLevel comes before start-up is over */
void gw_relay_set_level(struct session *s, struct rpc_msg *msg);
void gw_relay_resources_list(struct session *s, struct rpc_msg *msg);
void gw_relay_templates_list(struct session *s, struct rpc_msg *msg);
void gw_relay_prompts_list(struct session *s, struct rpc_msg *msg);
void gw_relay_resource(struct session *s, struct rpc_msg *msg); /* read, (un)subscribe */
void gw_relay_prompt_get(struct session *s, struct rpc_msg *msg);
void gw_relay_complete(struct session *s, struct rpc_msg *msg);
/* srv became ready: the client's level goes to it, and the client hears
 * its prompts and resources joined the lists */
void gw_relay_server_ready(struct gw_server *srv);
/* The server offered here that a public name (SERVER__NAME; any name with
 * --passthrough) belongs to, ready or not; NULL when none */
struct gw_server *gw_relay_owner_of_name(struct session *s, const char *pub);
/* notifications/roots/list_changed from the client */
void gw_relay_roots_changed(struct session *s);
/* A server's request other than ping: true when relay.c took it (relayed to
 * the client, or refused with the reason) */
bool gw_relay_server_request(struct gw_server *srv, struct rpc_msg *msg);
/* A 2026-07-28 server's input request (method, params) as the client gets
 * it (allocated), when its relay = [...] allows it and caps (the client's
 * capabilities, NULL for none) declare it; else NULL, recorded, with why in
 * *refusal (allocated). The one rule gw_relay_server_request applies too. */
/* The client's answer to method, asked by srv, made one of srv's MCP
 * revision in place (a sampling answer: mcp_rev_sampling_answer); NULL, or
 * why it cannot be (allocated): then the server gets an error instead */
char *gw_relay_fit_answer(const struct gw_server *srv, const char *method,
                          struct json_value *answer);
struct json_value *gw_relay_input_params(const struct gw_server *srv, const struct json_value *caps,
                                         const char *method, const struct json_value *params,
                                         char **refusal);
/* A server's notifications relay.c serves, by method */
void gw_relay_server_cancelled(struct gw_server *srv, struct rpc_msg *msg);
void gw_relay_resource_updated(struct gw_server *srv, struct rpc_msg *msg);
void gw_relay_list_changed(struct gw_server *srv, struct rpc_msg *msg);
void gw_relay_elicitation_complete(struct gw_server *srv, struct rpc_msg *msg);
/* One page of a merged list (items borrowed, in public form) for the
 * client: key is the result's array ("tools"), cursor the client's (or NULL) */
void gw_relay_send_page(struct session *s, const struct json_value *id, const char *key,
                        const struct json_value *items, const struct json_value *cursor);
/* What a server is offered under: SERVER__NAME, or NAME with --passthrough */
char *gw_relay_public_name(const struct gw_server *srv, const char *name);
/* mcpgate://SERVER/URI, or URI with --passthrough */
char *gw_relay_public_uri(const struct gw_server *srv, const char *uri);
/* --passthrough with more than one server offered here: -1 and why */
int gw_relay_passthrough_check(const struct session *s, struct mg_err **err);
/* The capabilities mcpgate declares in its initialize to a server: those its
 * relay = [...] allows. Borrowed, shared, never freed; safe from any thread. */
const struct json_value *gw_relay_server_capabilities(const struct cfg_server *c);
/* What a server of 2026-07-28 is told the client can be asked, for one
 * request (allocated): the client's capabilities (caps, NULL for none) that
 * c's relay = [...] allows, roots without listChanged */
struct json_value *gw_relay_caps_for_server(const struct cfg_server *c,
                                            const struct json_value *caps);

/* instance.c */
struct gw_host;
/* srv is attached to an instance instead of started by its session */
bool gw_instance_attaches(const struct gw_server *srv);
/* On srv's start thread: a socketpair end (close-on-exec) whose other end
 * the instance of srv's server serves as that server, once that instance
 * started; -1 and why when it did not by deadline_ms (proc_now_ms) */
int gw_instances_attach(struct gw_server *srv, int64_t deadline_ms, struct mg_err **err);
/* In the session that is an instance (s->host set) */
void gw_host_registered(struct session *s);
void gw_host_server_request(struct gw_server *srv, struct rpc_msg *msg);
void gw_host_server_notification(struct gw_server *srv, struct rpc_msg *msg);
void gw_host_server_ended(struct gw_server *srv);
/* After session_run, on the instance's thread: every attached session's
 * connection closes (each sees its server end) */
void gw_host_close(struct session *s);

/* era.c: 2026-07-28 beside 2025-11-25 (docs/2026-12-01-protocol-eras.md) */
/* A request of 2026-07-28: 0 when its _meta is good (the era is modern from
 * now, s->client_caps are this request's, s->request_log_rank its level),
 * else -1 and the client was answered why (-32022 for a version) */
int gw_era_admit(struct session *s, const struct rpc_msg *msg);
/* Why method is not served to a 2026-07-28 client, or NULL */
const char *gw_era_removed(const char *method);
void gw_era_discover(struct session *s, const struct json_value *id);
/* ttlMs and cacheScope on a result, for a 2026-07-28 client */
void gw_era_cacheable(const struct session *s, struct json_value *result, int64_t ttl_ms);
/* params for srv (a copy): 2026-07-28's additions and the client's
 * io.modelcontextprotocol/ _meta taken out; for a server of 2026-07-28, what
 * the client may be asked (gw_relay_caps_for_server) put in */
struct json_value *gw_era_upstream_params(const struct session *s, const struct gw_server *srv,
                                          const struct json_value *params);
/* result as a 2026-07-28 client gets it (a copy with resultType "complete"
 * and serverInfo), or NULL for a client of the old era */
struct json_value *gw_era_result(const struct session *s, const struct json_value *result);
/* debug 0 ... emergency 7; -1 for anything else */
int gw_log_level_rank(const char *level);
const char *gw_log_level_name(int rank);

/* session.c */
/* Start srv now, on a thread of its own (a lazy one at its first use, one
 * that exited at its restart); its end comes to gw_server_started */
void gw_server_start(struct gw_server *srv);
void gw_server_start_overdue(struct loop *loop, void *data); /* its start_timer's */
/* srv is ready (or, lazy, offers its approved tools): the pin checked, its
 * tools that are on put in the session's table, the client told its list
 * changed; withheld, or retired with no tool on, otherwise */
void gw_server_offer(struct gw_server *srv);
/* srv offers nothing any more (it exited, or was withheld): its tools
 * leave the table, and the client hears the list changed */
void gw_server_withdraw(struct gw_server *srv);
/* review's start: a session of opt->host_of alone, started through the one
 * start pipeline every session uses (its isolation, egress, secret,
 * mounts, the capabilities a session declares), read, then stopped */
int gw_session_fetch(const struct session_options *opt, struct gw_manifest_fetch *out,
                     struct mg_err **err);
void gw_session_stop(struct session *s);
/* srv's start ended, ready or not: lists and requests waiting for it go
 * on; once every server's first start ended, review's fetch and an
 * instance's attached sessions go on */
void gw_session_settled(struct gw_server *srv);
/* Stop a server mcpgate has no use for (withheld, no tool on); its tools are
 * no longer offered */
void gw_server_retire(struct gw_server *srv, const char *why);
/* A server is offered in this session's workspace */
bool gw_offered_here(const struct cfg_server *c, const char *workspace);
/* srv starts as a session begins it: not when never approved (said), from
 * its pin when lazy, else now. After a stop (watch.c: enabled again, or its
 * entry changed) it starts anew, with next_cfg when there is one; while a
 * start or a stop of it is under way it starts once that is over. */
void gw_server_bring_up(struct gw_server *srv);
/* srv is disabled, removed from mcp.toml, or its entry changed (watch.c):
 * its tools withdrawn, it stopped (a start under way first ends); a
 * changed one then starts again with its new entry */
void gw_server_take_down(struct gw_server *srv);
/* server.c: what a start left is let go, so the start thread finds srv as
 * session_new made it (its stderr tail and reason stay, for the person) */
void gw_server_reset_for_start(struct gw_server *srv);

/* watch.c: mcp.toml followed while the session runs
 * (docs/2026-12-02-daily-use.md). join: s->cfg becomes the newest
 * configuration the process loaded (a listener's later clients get what
 * mcp.toml says now; an instance, host_of's), s->gen its generation, and
 * s hears of every change from now on; leave: no more. */
void gw_watch_join(struct session *s, const struct cfg_server *host_of);
void gw_watch_leave(struct session *s);
/* a and b are one entry: the same, or entries of one name that differ in
 * nothing in the files they were read from (an instance made for one
 * serves the other) */
bool gw_watch_same_entry(const struct cfg_server *a, const struct cfg_server *b);
/* The changes since s->gen applied to s's servers (on its loop) */
void gw_watch_apply(struct loop *loop, void *data);
struct json_value *gw_fields(const char *key, ...); /* key, json_value*, ..., NULL */

#endif
