/* A session of `mcpgate serve`: start every offered server at once, register
 * their tools in mcp.toml order as SERVER__TOOL, and serve one MCP client on
 * a pair of fds.
 *
 * A session is an object, never global state, so a later listener can hold
 * several in one process. Start-up runs one thread per server (linear code
 * with a deadline); from registration on, only the loop thread touches the
 * session's tables. */
#ifndef MG_GATEWAY_GATEWAY_H
#define MG_GATEWAY_GATEWAY_H

#include <stdio.h>
#include <sys/types.h>

#include "internal/audit/audit.h"
#include "internal/base/err.h"
#include "internal/config/config.h"
#include "internal/container/container.h"

struct session;
struct gw_instances;
struct rpc_msg;

/* era.c: server/discover, or a request other than initialize whose _meta
 * names a protocol version: a request of 2026-07-28. Public so that the
 * listener routes by the same rule the session decides its era by. */
bool gw_era_claims_modern(const struct rpc_msg *msg);

struct session_options {
	struct cfg *cfg;           /* borrowed; outlives the session */
	struct ctr_driver *driver; /* borrowed; NULL when no container server is offered */
	const char *state_dir;     /* audit logs go under STATE_DIR/sessions/ */
	const char *data_dir;      /* the egress proxy's private copy goes under DATA_DIR/egress/ */
	const char *workspace;     /* absolute */
	int client_in, client_out; /* the client's fds; the session owns them */
	pid_t owner;               /* the pid on every label (getpid()) */
	const char *session_id;    /* NULL: a random one */
	/* Not NULL: the configuration could not be loaded, and this says why
	 * (as `mcpgate check` prints it). The session then starts no server
	 * (cfg is an empty one), answers initialize and ping, refuses every other
	 * request with this text, and tells the person once the client is
	 * initialized (notifications/message, level error). */
	const char *config_error;
	/* Not NULL: serve's --workspace cannot be used, and this says why. The
	 * session is then as with config_error (no server, every request refused
	 * with it, the person told once), for what a server would be given of
	 * the workspace is not known */
	const char *workspace_error;
	/* Not NULL: a warning told to the person once the client is initialized
	 * (and logged): serve's workspace is not one a person meant */
	const char *workspace_note;
	/* Not NULL: the same for the runtime: the one found is not the one
	 * holding the images mcpgate put in a runtime (every server will miss
	 * its image) */
	const char *runtime_note;
	/* Not NULL: told of every record of the session's audit log (see
	 * audit_observer), from any of its threads: a listener's metrics */
	audit_observer on_record;
	void *record_data;
	/* true: SIGTERM, SIGINT and SIGHUP are not the session's to read; who
	 * runs it (a listener holding several) ends it by closing its input */
	bool signals_elsewhere;
	/* Not NULL (a listener's): a server whose instance is "shared" or
	 * "exclusive" is not started by this session; it is attached to the one
	 * instance ins keeps of it (docs/sharing.md) */
	struct gw_instances *instances;
	/* Not NULL (instance.c only): this session is that one instance of
	 * server host_of: it starts only it, has no client of its own, and serves
	 * the sessions attached to it */
	const struct cfg_server *host_of;
	/* Not NULL: the audit log goes under AUDIT_DIR/sessions/ instead of
	 * STATE_DIR/sessions/ (review's, which are not client sessions) */
	const char *audit_dir;
	/* true: the session follows cfg->mcp_path while it runs (serve's):
	 * a server disabled or removed there stops and its tools are
	 * withdrawn, one enabled starts, one whose entry changed starts again
	 * with it; it starts from what the file says now, not cfg, when the
	 * process has read the file again since (gw_watch_end frees those) */
	bool watch_config;
	/* Not NULL (tests and fuzzing only): each server's start thread runs
	 * this instead of starting it through the driver; it ends with
	 * gw_server_start_on_fds, and no runtime is needed */
	void *(*start_thread)(void *srv);
};

/* Create the session: open its audit log, sweep what dead mcpgate processes
 * left (once per runtime and process). Nothing is started yet. */
int session_new(const struct session_options *opt, struct session **out, struct mg_err **err);

/* Start the servers, serve the client until its input ends or a signal
 * (TERM, INT, HUP) comes, then stop every server and remove what was made.
 * Returns 0 for an orderly end. */
int session_run(struct session *s, struct mg_err **err);

const char *session_id(const struct session *s);
const char *session_audit_path(const struct session *s);

void session_free(struct session *s);

/* The instances of the "shared" and "exclusive" servers of a listener's
 * sessions: each is started at its first attach, as a session of its own
 * (its own audit log, made with base's cfg, driver, folders, workspace and
 * owner), and ends when ins is freed, or when its server ends (the next
 * attach then starts another). */
struct gw_instances *gw_instances_new(const struct session_options *base);
/* End every instance and wait for each: after the sessions attached */
void gw_instances_free(struct gw_instances *ins);

/* The end of the process's watch of mcp.toml (watch.c), after every
 * session ended: its thread, and the configurations it read */
void gw_watch_end(void);

/* The session id's form: 12 lower-case hex characters from libsodium */
#define SESSION_ID_LEN 12

#endif
