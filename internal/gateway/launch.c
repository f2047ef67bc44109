/* One contained server's runtime process with an MCP peer on its pipes. */
#define _GNU_SOURCE
#include "internal/gateway/launch.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/utf8.h"
#include "internal/base/xalloc.h"
#include "internal/gateway/gateway-internal.h"

/* The folder a file is in (allocated) */
static char *folder_of(const char *path)
{
	char *copy = xstrdup(path);
	char *folder = xstrdup(dirname(copy));
	free(copy);
	return folder;
}

void gw_mount_plan_init(struct gw_mount_plan *out, const struct cfg *cfg,
                        const struct cfg_server *s, const char *workspace, const char *data_dir,
                        const char *state_dir, const char *tag)
{
	memset(out, 0, sizeof(*out));
	size_t n = 0;
	out->dirs[n++] = folder_of(cfg->mcp_path);
	if (cfg->config_path != NULL)
		out->dirs[n++] = folder_of(cfg->config_path);
	if (data_dir != NULL)
		out->dirs[n++] = xstrdup(data_dir);
	if (state_dir != NULL) {
		out->dirs[n++] = xstrdup(state_dir);
		out->stage = xasprintf("%s/mounts", state_dir);
		/* what a killed mcpgate staged is let go first */
		ctr_mounts_sweep(out->stage);
	}
	out->dirs[n] = NULL;
	out->plan = (struct ctr_mount_plan){
	    .cfg = cfg,
	    .server = s,
	    .workspace = workspace,
	    .protected_dirs = (const char *const *)out->dirs,
	    .stage_dir = out->stage,
	    .tag = tag,
	};
}

void gw_mount_plan_free(struct gw_mount_plan *p)
{
	for (size_t i = 0; i < sizeof(p->dirs) / sizeof(p->dirs[0]); i++)
		free(p->dirs[i]);
	free(p->stage);
	memset(p, 0, sizeof(*p));
}

void gw_launch_mounted(struct gw_launch *l)
{
	ctr_mounts_release(&l->mounts);
}

/* The secrets' block on the server's standard input, ahead of any MCP: the
 * pipe takes it at once unless it is larger than the pipe, so a deadline
 * bounds the wait for a runtime that does not read */
static int write_secrets(int fd, const struct ctr_run_spec *spec, struct mg_err **err)
{
	size_t len = 0;
	char *block = ctr_launch_block(spec->secrets, spec->nsecrets, &len, err);
	if (block == NULL)
		return mg_err_wrap(err, "server %s", spec->server->name);
	int r = proc_write_all(fd, block, len, proc_now_ms() + 10000, err);
	ctr_launch_block_free(block, len);
	if (r < 0)
		return mg_err_wrap(err, "handing server %s its secret", spec->server->name);
	return 0;
}

int gw_launch_start(const struct ctr_driver *d, const struct ctr_run_spec *spec,
                    const struct ctr_mount_plan *plan, const struct rpc_peer_config *pc,
                    struct gw_launch *l, struct mg_err **err)
{
	struct strv envp = STRV_INIT;
	struct ctr_run_spec with = *spec;
	/* mcp.toml's env settings after mcpgate's own variables, for review
	 * and serve alike */
	const struct cfg_server *c = spec->server;
	cleanup_free struct ctr_env *env = xcalloc(spec->nenv + c->nenv + 1, sizeof(*env));
	for (size_t i = 0; i < spec->nenv; i++)
		env[i] = spec->env[i];
	for (size_t i = 0; i < c->nenv; i++)
		env[spec->nenv + i] = (struct ctr_env){c->env[i].name, c->env[i].value, false};
	with.env = env;
	with.nenv = spec->nenv + c->nenv;
	struct ctr_image_config image;
	if (d->ops->image_config(d, spec->server->image, spec->nsecrets > 0, &image, err) < 0)
		return -1;
	with.image = &image;
	struct ctr_mount_plan staged_by = plan != NULL ? *plan : (struct ctr_mount_plan){0};
	staged_by.driver = d; /* a rootless runtime may stage in its own namespace */
	if (plan != NULL && ctr_mounts_open(&staged_by, &l->mounts, err) < 0) {
		ctr_image_config_free(&image);
		return -1;
	}
	with.mounts = &l->mounts;
	int built = d->ops->run_command(d, &with, &l->argv, &envp, err);
	ctr_image_config_free(&image);
	if (built < 0) {
		ctr_mounts_release(&l->mounts);
		return -1;
	}
	struct proc_spec ps = {
	    .path = l->argv.v[0],
	    .argv = (const char *const *)l->argv.v,
	    .envp = (const char *const *)strv_array(&envp),
	    .stdio = {{PROC_STDIO_PIPE, -1, false},
	              {PROC_STDIO_PIPE, -1, false},
	              {PROC_STDIO_PIPE, -1, true}},
	};
	int r = proc_spawn(&ps, &l->proc, err);
	strv_free(&envp);
	if (r < 0)
		return -1;
	l->err_fd = l->proc.err_fd;
	l->proc.err_fd = -1;
	if (spec->nsecrets > 0 && write_secrets(l->proc.in_fd, spec, err) < 0)
		return -1;
	int in = l->proc.out_fd, out = l->proc.in_fd;
	l->proc.out_fd = l->proc.in_fd = -1; /* the peer owns them now */
	return rpc_peer_new(in, out, pc, &l->peer, err);
}

void gw_launch_reap(const struct ctr_driver *d, const char *container, struct proc *p,
                    int64_t deadline_ms, int *status, bool *forced)
{
	*status = 0;
	*forced = false;
	if (p->pid <= 0)
		return;
	if (proc_wait(p, deadline_ms, status, NULL) == 0)
		return;
	*forced = true;
	d->ops->remove(d, container, NULL);
	if (proc_wait(p, proc_now_ms() + 5000, status, NULL) < 0)
		proc_stop(p, 0, status);
}

void gw_launch_stop(const struct ctr_driver *d, const char *container, struct gw_launch *l,
                    int64_t deadline_ms, int *status, bool *forced)
{
	/* closing its input asks it to end; many servers ignore that */
	rpc_peer_free(steal_pointer(&l->peer));
	gw_launch_reap(d, container, &l->proc, deadline_ms, status, forced);
}

char *gw_last_line(const char *text, size_t len)
{
	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' '))
		len--;
	size_t start = len;
	while (start > 0 && text[start - 1] != '\n')
		start--;
	if (len - start > 300)
		start = len - 300;
	if (len <= start)
		return NULL;
	/* a stranger's text: shown as it is, control characters escaped */
	return mg_shown(text + start, len - start);
}

void gw_launch_free(struct gw_launch *l)
{
	ctr_mounts_release(&l->mounts);
	rpc_peer_free(steal_pointer(&l->peer));
	proc_close(&l->proc);
	if (l->err_fd >= 0)
		close(l->err_fd);
	l->err_fd = -1;
	strv_free(&l->argv);
}

char *gw_unenforced_refusal(const struct ctr_platform *p, const char *probe_error,
                            const struct cfg_server *c)
{
	if (probe_error != NULL)
		return xasprintf(
		    "cannot tell what the runtime enforces here, so nothing starts: %s",
		    probe_error);
	return ctr_platform_refusal(p, c);
}

/* ---- review: a manifest without a session ------------------------------- */

static void review_request(struct rpc_peer *peer, struct rpc_msg *msg, void *data)
{
	(void)data;
	if (strcmp(msg->method, "ping") == 0)
		rpc_peer_send_result(peer, msg->id, NULL, NULL);
	else
		rpc_peer_send_error(peer, msg->id, RPC_METHOD_NOT_FOUND,
		                    "mcpgate is reviewing this server and relays nothing", NULL,
		                    NULL);
}

static char *read_stderr(int fd)
{
	struct mg_buf b = MG_BUF_INIT(8192);
	char chunk[4096];
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		/* the last 8 KiB are kept; chunk is smaller than that */
		if (b.len + (size_t)n > 8192)
			mg_buf_consume(&b, b.len + (size_t)n - 8192);
		mg_buf_append(&b, chunk, (size_t)n, NULL);
	}
	if (b.len == 0) {
		mg_buf_free(&b);
		return NULL;
	}
	return mg_buf_steal(&b, NULL);
}

int gw_fetch_manifest(const struct cfg *cfg, const struct ctr_driver *d,
                      const struct cfg_server *server, const char *workspace,
                      struct gw_manifest_fetch *out, struct mg_err **err)
{
	memset(out, 0, sizeof(*out));
	if (server->transport != CFG_TRANSPORT_CONTAINER)
		return mg_err_set(err, "server %s is not a container server", server->name);
	int present = d->ops->image_present(d, server->image, err);
	if (present < 0)
		return -1;
	if (present == 0)
		return mg_err_set(err, "image %s is not present; run: mcpgate pull %s",
		                  server->image, server->name);
	struct ctr_platform platform;
	struct mg_err *perr = NULL;
	int pr = d->ops->platform(d, &platform, &perr);
	cleanup_free char *refusal =
	    gw_unenforced_refusal(&platform, pr < 0 ? mg_err_msg(perr) : NULL, server);
	out->accepted = pr < 0 ? NULL : ctr_platform_accepted_json(&platform, server);
	bool rootless = pr == 0 && platform.rootless;
	mg_err_free(perr);
	if (pr == 0)
		ctr_platform_free(&platform);
	if (refusal != NULL)
		return mg_err_set(err, "server %s is not started: %s", server->name, refusal);
	if (sodium_init() < 0)
		return mg_err_set(err, "libsodium cannot start");
	unsigned char raw[6];
	char session[13];
	randombytes_buf(raw, sizeof(raw));
	sodium_bin2hex(session, sizeof(session), raw, sizeof(raw));
	cleanup_free char *container = ctr_container_name(server->name, session);
	cleanup_free char *name = xasprintf("server %s", server->name);
	char user[32];
	struct ctr_run_spec spec = {
	    .server = server,
	    .session = session,
	    .owner = getpid(),
	    .workspace = workspace,
	    .user = ctr_default_user(server, rootless, workspace, user, sizeof(user)),
	};
	struct rpc_peer_config pc = {
	    .name = name,
	    .line_max = (size_t)cfg->mcp.line_max,
	    .on_request = review_request,
	};
	struct gw_launch l = GW_LAUNCH_INIT;
	int64_t deadline = proc_now_ms() + (int64_t)cfg->mcp.start_timeout * 1000;
	cleanup_free char *data = NULL, *state = NULL;
	cfg_default_data_dir(&data, NULL);
	cfg_default_state_dir(&state, NULL);
	struct gw_mount_plan mp;
	gw_mount_plan_init(&mp, cfg, server, workspace, data, state, container);
	int r = gw_launch_start(d, &spec, &mp.plan, &pc, &l, err);
	if (r == 0)
		/* the capabilities a session declares to this server, so the manifest
		 * a person approves is the one a session is offered */
		r = mcp_initialize(l.peer, deadline, gw_relay_server_capabilities(server),
		                   &out->info, err);
	gw_launch_mounted(&l);
	gw_mount_plan_free(&mp);
	if (r == 0)
		r = mcp_list_tools(l.peer, deadline, &out->tools, err);
	int status;
	bool forced;
	gw_launch_stop(d, container, &l, proc_now_ms() + (int64_t)cfg->mcp.stop_timeout * 1000,
	               &status, &forced);
	if (l.err_fd >= 0)
		out->stderr_text = read_stderr(l.err_fd);
	gw_launch_free(&l);
	if (r < 0) {
		cleanup_free char *last =
		    out->stderr_text != NULL
		        ? gw_last_line(out->stderr_text, strlen(out->stderr_text))
		        : NULL;
		if (last != NULL)
			mg_err_wrap(err, "server %s (its last words: %s)", server->name, last);
		else
			mg_err_wrap(err, "server %s", server->name);
		gw_manifest_fetch_free(out);
		return -1;
	}
	return 0;
}

void gw_manifest_fetch_free(struct gw_manifest_fetch *f)
{
	json_free(f->tools);
	f->tools = NULL;
	json_free(f->accepted);
	f->accepted = NULL;
	mcp_server_info_free(&f->info);
	free(f->stderr_text);
	f->stderr_text = NULL;
}
