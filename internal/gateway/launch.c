/* One contained server's runtime process with an MCP peer on its pipes. */
#define _GNU_SOURCE
#include "internal/gateway/launch.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/utf8.h"
#include "internal/base/xalloc.h"
#include "internal/debian/debian.h"
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
	/* an image mcpgate add made says where it came from: a hint for a
	 * missing command names the add line that makes it again */
	bool added = strncmp(spec->server->image, "localhost/mcpgate-npm-", 22) == 0;
	if (d->ops->image_config(d, spec->server->image, spec->nsecrets > 0 || added, &image, err) <
	    0)
		return -1;
	for (size_t i = 0; i + 1 < image.labels.n && l->source == NULL; i += 2)
		if (strcmp(image.labels.v[i], "org.opencontainers.image.source") == 0)
			l->source = xstrdup(image.labels.v[i + 1]);
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
	/* a stranger's text, kept as it is (invalid bytes as U+FFFD): whatever
	 * shows it to a person renders it (mg_shown), and it is shown once */
	return mg_utf8_lossy(text + start, len - start, NULL);
}

char *gw_missing_command_hint(const struct cfg_server *s, const char *source, const char *text,
                              size_t len)
{
	struct deb_hint h;
	if (text == NULL || deb_hint_find(text, len, &h) == 0)
		return NULL;
	bool in_base = false, listed = false;
	for (size_t i = 0; deb_base_set[i] != NULL; i++)
		in_base = in_base || strcmp(deb_base_set[i], h.package) == 0;
	for (size_t i = 0; i < s->npackages; i++)
		listed = listed || strcmp(s->packages[i], h.package) == 0;
	struct mg_buf b = MG_BUF_INIT(1 << 16);
	mg_buf_printf(&b, NULL,
	              "server %s looks for the command %s, which its image lacks: Debian's "
	              "package %s has it. ",
	              s->name, h.command, h.package);
	if (in_base)
		mg_buf_puts(&b, "Every image mcpgate add makes now has it: make its image again, ",
		            NULL);
	else if (listed)
		mg_buf_puts(&b,
		            "Its entry lists it, so its image is older than its entry: make it "
		            "again, ",
		            NULL);
	else
		mg_buf_puts(&b, "Make its image again with it, ", NULL);
	mg_buf_printf(&b, NULL, "`mcpgate add %s --name %s",
	              source != NULL ? source : "npm:PACKAGE@VERSION", s->name);
	for (size_t i = 0; i < s->npackages; i++)
		mg_buf_printf(&b, NULL, " --with %s", s->packages[i]);
	if (!in_base && !listed)
		mg_buf_printf(&b, NULL, " --with %s", h.package);
	mg_buf_puts(&b, "` (remove its entry first)", NULL);
	if (!in_base && !listed) {
		mg_buf_puts(&b, ", which writes packages = [", NULL);
		for (size_t i = 0; i < s->npackages; i++)
			mg_buf_printf(&b, NULL, "\"%s\", ", s->packages[i]);
		mg_buf_printf(&b, NULL, "\"%s\"] in its entry", h.package);
	}
	return mg_buf_steal(&b, NULL);
}

void gw_launch_free(struct gw_launch *l)
{
	ctr_mounts_release(&l->mounts);
	rpc_peer_free(steal_pointer(&l->peer));
	proc_close(&l->proc);
	free(l->source);
	l->source = NULL;
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

int gw_fetch_manifest(const struct cfg *cfg, const struct ctr_driver *d,
                      const struct cfg_server *server, const char *workspace,
                      struct gw_manifest_fetch *out, struct mg_err **err)
{
	memset(out, 0, sizeof(*out));
	if (server->transport != CFG_TRANSPORT_CONTAINER)
		return mg_err_set(err, "server %s is not a container server", server->name);
	cleanup_free char *data = NULL, *state = NULL, *reviews = NULL;
	if (cfg_default_data_dir(&data, err) < 0 || cfg_default_state_dir(&state, err) < 0)
		return -1;
	reviews = xasprintf("%s/reviews", state);
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
		return mg_err_sys(err, errno, "socketpair");
	/* nobody speaks on the client's side: the session only starts its server */
	struct session_options o = {
	    .cfg = (struct cfg *)cfg,
	    .driver = (struct ctr_driver *)d,
	    .state_dir = state,
	    .data_dir = data,
	    .workspace = workspace,
	    .client_in = sp[1],
	    .client_out = sp[1],
	    .owner = getpid(),
	    .signals_elsewhere = true,
	    .host_of = server,
	    .audit_dir = reviews,
	};
	/* a failure's reason says where the server's stderr went (mcpgate's
	 * log has its last line, the review's audit log all of it) */
	int r = gw_session_fetch(&o, out, err);
	close(sp[0]);
	return r;
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
