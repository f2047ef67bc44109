/* Starting one contained server and ending it: shared by a session and by
 * `mcpgate review`/`approve`, which start a server with the same isolation
 * to read its manifest. */
#ifndef MG_GATEWAY_LAUNCH_H
#define MG_GATEWAY_LAUNCH_H

#include <stdbool.h>
#include <stdint.h>

#include "internal/base/err.h"
#include "internal/base/strv.h"
#include "internal/config/config.h"
#include "internal/container/container.h"
#include "internal/json/json.h"
#include "internal/jsonrpc/jsonrpc.h"
#include "internal/mcp/mcp.h"
#include "internal/proc/proc.h"

/* A started runtime process: the peer owns its stdin and stdout, err_fd
 * (non-blocking) is its stderr. */
struct gw_launch {
	struct proc proc;
	struct strv argv;
	struct rpc_peer *peer;
	int err_fd;
	struct ctr_mounts mounts; /* held until the runtime has mounted them */
	/* where an image mcpgate add made came from (its label
	 * org.opencontainers.image.source, "npm:PACKAGE@VERSION"), or NULL */
	char *source;
};

#define GW_LAUNCH_INIT                                          \
	{                                                       \
		PROC_INIT, STRV_INIT, NULL, -1, {NULL, 0}, NULL \
	}

/* Run spec's server and put an MCP peer (configured by pc) on its pipes.
 * Its mounts are opened first as plan says (workspace, mcpgate's own
 * folders, staging), spec->mounts is ignored. */
int gw_launch_start(const struct ctr_driver *d, const struct ctr_run_spec *spec,
                    const struct ctr_mount_plan *plan, const struct rpc_peer_config *pc,
                    struct gw_launch *l, struct mg_err **err);

/* The container is running (it answered): its mounts are made, so the
 * staged binds and held folders are let go. Idempotent. */
void gw_launch_mounted(struct gw_launch *l);

/* mcpgate's own folders, which no mount may be, hold or lie inside, and the
 * staging folder (state_dir/mounts) for a launch: filled into out, which
 * the caller frees with gw_mount_plan_free */
struct gw_mount_plan {
	struct ctr_mount_plan plan;
	char *dirs[5];
	char *stage;
};
void gw_mount_plan_init(struct gw_mount_plan *out, const struct cfg *cfg,
                        const struct cfg_server *s, const char *workspace, const char *data_dir,
                        const char *state_dir, const char *tag);
void gw_mount_plan_free(struct gw_mount_plan *p);

/* Close its input, wait for it until deadline_ms, then remove the container
 * at once and reap. *status is the wait status; *forced says whether it had
 * to be removed. Blocks: off the loop's thread only. */
void gw_launch_stop(const struct ctr_driver *d, const char *container, struct gw_launch *l,
                    int64_t deadline_ms, int *status, bool *forced);

/* The same for a runtime process p whose input is closed already (a
 * session's stop job has it on its own, away from the peer) */
void gw_launch_reap(const struct ctr_driver *d, const char *container, struct proc *p,
                    int64_t deadline_ms, int *status, bool *forced);

/* What the person is told when text (a server's stderr or a tool's answer)
 * says a command is missing from server s's image: the command, the Debian
 * package that gives it, and the add line that puts it in (source: where
 * the image came from, or NULL). Allocated; NULL when text names no command
 * mcpgate knows a package for. */
char *gw_missing_command_hint(const struct cfg_server *s, const char *source, const char *text,
                              size_t len);

/* The fix, in one line, for a start that failed (start_error: mcpgate's
 * reason, or NULL) with text on the server's stderr: a command its image
 * lacks (gw_missing_command_hint), an MCP revision mcpgate does not speak,
 * a server that speaks HTTP and never answers on stdio, a path it could not
 * write. Allocated; NULL when no usual cause is recognised. */
char *gw_start_cause(const struct cfg_server *s, const char *source, const char *text, size_t len,
                     const char *start_error);

/* The fix, in one line, for a tool call of server s that failed with text
 * (its answer's text or its error's message): what gw_start_cause
 * recognises in a failure that only a call shows. Allocated; NULL when no
 * usual cause is recognised. */
char *gw_call_cause(const struct cfg_server *s, const char *source, const char *text, size_t len);

/* The last max_lines lines of text that are not blank (at most
 * GW_TAIL_LINES_MAX), each shown by mg_shown (escaped, on one line, cut at
 * about 200 bytes) after "  | ", joined by newlines; *nshown how many.
 * Allocated; NULL when there is none. */
#define GW_TAIL_LINES_MAX 16
#define GW_TAIL_LINES     8
char *gw_stderr_tail(const char *text, size_t len, size_t max_lines, size_t *nshown);

/* The last non-empty line of text (at most 300 bytes), allocated; NULL if none */
char *gw_last_line(const char *text, size_t len);

/* Close what is left (not the process) */
void gw_launch_free(struct gw_launch *l);

/* Why server c may not start on platform p (allocated): a property that
 * does not hold there and is not accepted, or no word from the runtime
 * (probe_error); NULL when it may start */
char *gw_unenforced_refusal(const struct ctr_platform *p, const char *probe_error,
                            const struct cfg_server *c);

/* What `review` learns of a server: start it alone through the start
 * pipeline of every session (gw_session_fetch: the same isolation, egress,
 * secret and capabilities, so the manifest approved is the one a session
 * sees), list every tool, stop it. Its audit log goes under the state
 * folder's reviews/sessions/. */
struct gw_manifest_fetch {
	struct json_value *tools; /* the tools/list array */
	struct mcp_server_info info;
	char *stderr_text; /* the last bytes it wrote to stderr, or NULL */
	/* the properties accepted as unenforced that do not hold here (a JSON
	 * array), or NULL */
	struct json_value *accepted;
};

int gw_fetch_manifest(const struct cfg *cfg, const struct ctr_driver *d,
                      const struct cfg_server *server, const char *workspace,
                      struct gw_manifest_fetch *out, struct mg_err **err);
void gw_manifest_fetch_free(struct gw_manifest_fetch *f);

#endif
