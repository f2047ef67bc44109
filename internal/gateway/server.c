/* One contained server: its start-up thread (image check, run, initialize,
 * tools/list, each under the start deadline), its stderr, its end. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/log.h"
#include "internal/base/utf8.h"
#include "internal/base/xalloc.h"
#include "internal/gateway/gateway-internal.h"
#include "internal/mcp/manifest.h"
#include "internal/remote/remote.h"

void gw_server_set_reason(struct gw_server *srv, enum gw_state state, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *r = xvasprintf(fmt, ap);
	va_end(ap);
	free(srv->reason);
	srv->reason = r;
	srv->state = state;
}

/* ---- stderr: kept (the last GW_STDERR_KEEP bytes), never shown to the model */

static void stderr_keep(struct gw_server *srv, const char *data, size_t n)
{
	pthread_mutex_lock(&srv->err_lock);
	srv->err_total += n;
	if (n >= GW_STDERR_KEEP) {
		data += n - GW_STDERR_KEEP;
		n = GW_STDERR_KEEP;
	}
	if (srv->err_tail.len + n > GW_STDERR_KEEP)
		mg_buf_consume(&srv->err_tail, srv->err_tail.len + n - GW_STDERR_KEEP);
	mg_buf_append(&srv->err_tail, data, n, NULL);
	pthread_mutex_unlock(&srv->err_lock);
}

/* Read what stderr has; at its end, stop watching and close it. */
static void stderr_drain(struct gw_server *srv)
{
	char chunk[4096];
	while (srv->launch.err_fd >= 0) {
		ssize_t n = read(srv->launch.err_fd, chunk, sizeof(chunk));
		if (n > 0) {
			stderr_keep(srv, chunk, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		loop_unwatch(srv->sess->loop, srv->launch.err_fd);
		close(srv->launch.err_fd);
		srv->launch.err_fd = -1;
	}
}

static void on_stderr(struct loop *loop, int fd, uint32_t events, void *data)
{
	(void)loop;
	(void)fd;
	(void)events;
	stderr_drain(data);
}

void gw_server_watch_stderr(struct loop *loop, void *data)
{
	struct gw_server *srv = data;
	if (srv->launch.err_fd < 0)
		return;
	struct mg_err *err = NULL;
	if (loop_watch(loop, srv->launch.err_fd, EPOLLIN, on_stderr, srv, &err) < 0) {
		mg_warn("server %s: cannot watch its stderr: %s", srv->cfg->name, mg_err_msg(err));
		mg_err_free(err);
	}
}

/* Its stderr as the person sees it: the reason (said already elsewhere
 * when lead is NULL), the last lines escaped, and where all of it is */
static void stderr_show(struct gw_server *srv, const char *lead, const char *text, size_t len)
{
	size_t n = 0;
	cleanup_free char *tail = gw_stderr_tail(text, len, GW_TAIL_LINES, &n);
	if (tail == NULL)
		return;
	const char *log = audit_path(srv->sess->audit);
	mg_warn("%s%sthe last %zu line%s of server %s's stderr (all of it: %s%s):\n%s",
	        lead != NULL ? lead : "", lead != NULL ? "\n" : "", n, n == 1 ? "" : "s",
	        srv->cfg->name, log != NULL ? "the audit log " : "the audit log",
	        log != NULL ? log : "", tail);
}

/* Its stderr with the session's secrets out of it (allocated) */
static char *stderr_clean(struct gw_server *srv)
{
	pthread_mutex_lock(&srv->err_lock);
	char *clean =
	    gw_secrets_redact_text(srv->sess, mg_buf_str(&srv->err_tail), srv->err_tail.len);
	pthread_mutex_unlock(&srv->err_lock);
	return clean;
}

/* The reason, with where its stderr is and the fix for a usual cause
 * (gw_start_cause), shown to the person with the last lines of its stderr */
static void explain_failure(struct gw_server *srv, const char *start_error)
{
	cleanup_free char *clean = stderr_clean(srv);
	size_t len = strlen(clean);
	cleanup_free char *fix =
	    gw_start_cause(srv->cfg, srv->launch.source, clean, len, start_error);
	const char *log = audit_path(srv->sess->audit);
	bool said = len > 0 && log != NULL;
	char *r = xasprintf("%s%s%s%s%s", srv->reason, said ? "; all of its stderr is in " : "",
	                    said ? log : "", fix != NULL ? ". " : "", fix != NULL ? fix : "");
	free(srv->reason);
	srv->reason = r;
	/* review says the reason as its error; a session's log says it here */
	stderr_show(srv, srv->sess->fetching ? NULL : srv->reason, clean, len);
}

void gw_server_tool_hint(struct gw_server *srv, const char *text, size_t len)
{
	if (srv->hinted || srv->cfg->transport != CFG_TRANSPORT_CONTAINER)
		return;
	char *hint = gw_call_cause(srv->cfg, srv->launch.source, text, len);
	if (hint == NULL)
		return;
	srv->hinted = true;
	mg_warn("%s", hint);
	audit_record(srv->sess->audit, "server.hint",
	             gw_fields("server", json_new_string(srv->cfg->name), "hint",
	                       json_new_string(hint), NULL));
	gw_client_notice(srv->sess, "warning", hint);
	free(hint);
}

static struct json_value *stderr_json(struct gw_server *srv)
{
	pthread_mutex_lock(&srv->err_lock);
	/* the kept bytes may cut a UTF-8 sequence, and a server may write any
	 * bytes: each invalid one becomes U+FFFD, the rest is kept */
	char *clean =
	    gw_secrets_redact_text(srv->sess, mg_buf_str(&srv->err_tail), srv->err_tail.len);
	pthread_mutex_unlock(&srv->err_lock);
	size_t n = 0;
	char *valid = mg_utf8_lossy(clean, strlen(clean), &n);
	free(clean);
	struct json_value *v = json_new_stringn(valid, n);
	free(valid);
	return v != NULL ? v : json_new_string("(stderr could not be recorded)");
}

/* ---- start-up, on the server's own thread ------------------------------- */

struct rpc_peer_config gw_server_peer_config(struct gw_server *srv, const char *name)
{
	struct rpc_peer_config pc = {
	    .name = name,
	    .line_max = (size_t)srv->sess->cfg->mcp.line_max,
	    .on_request = gw_server_on_request,
	    .on_notification = gw_server_on_notification,
	    .on_bad_line = gw_server_on_bad_line,
	    .on_closed = gw_server_on_closed,
	    .check = mcp_shape_from_server,
	    .data = srv,
	};
	return pc;
}

static int start_process(struct gw_server *srv, struct mg_err **err)
{
	struct session *s = srv->sess;
	const struct cfg_server *c = srv->cfg;
	struct ctr_env env[8];
	char user[32];
	struct ctr_run_spec spec = {
	    .server = c,
	    .session = s->id,
	    .owner = s->owner,
	    .workspace = s->workspace,
	    .user = ctr_default_user(c, s->platform.rootless, s->workspace, user, sizeof(user)),
	    .network = srv->egress.topo.net_in,
	    .env = env,
	    .nenv = gw_egress_env(srv, env, sizeof(env) / sizeof(env[0])),
	    .connect_hosts = (const char *const *)srv->egress.connect_hosts,
	    .connect_ports = srv->egress.connect_ports,
	    .launcher = s->launch_binary,
	};
	/* the value goes on the server's standard input, through mcpgate-launch,
	 * never to the runtime (which would keep it in its record) */
	struct ctr_env secret;
	if (srv->secret != NULL) {
		if (s->launch_binary == NULL) {
			kc_secret_free(steal_pointer(&srv->secret));
			return mg_err_set(err, "it cannot be handed its secret: %s",
			                  s->launch_error != NULL ? s->launch_error
			                                          : "no mcpgate-launch");
		}
		secret =
		    (struct ctr_env){c->position_name, (const char *)srv->secret->bytes, false};
		spec.secrets = &secret;
		spec.nsecrets = 1;
		spec.launcher = s->launch_binary;
	}
	cleanup_free char *name = xasprintf("server %s", c->name);
	struct rpc_peer_config pc = gw_server_peer_config(srv, name);
	struct gw_launch *l = &srv->launch;
	struct gw_mount_plan mp;
	gw_mount_plan_init(&mp, s->cfg, c, s->workspace, s->data_dir, s->state_dir, srv->container);
	int r = gw_launch_start(s->driver, &spec, &mp.plan, &pc, l, err);
	gw_mount_plan_free(&mp);
	/* the runtime has it now; mcpgate keeps no copy */
	kc_secret_free(srv->secret);
	srv->secret = NULL;
	if (l->proc.pid > 0) {
		struct json_value *argv = json_new_array();
		for (size_t i = 0; i < l->argv.n; i++)
			json_array_push(argv, json_new_string(l->argv.v[i]));
		audit_record(s->audit, "server.start",
		             gw_fields("server", json_new_string(c->name), "container",
		                       json_new_string(srv->container), "argv", argv, "pid",
		                       json_new_int(l->proc.pid), "user", json_new_string(user),
		                       NULL));
	}
	if (l->err_fd >= 0)
		loop_post(s->loop, gw_server_watch_stderr, srv);
	return r;
}

/* Attached to the listener's instance of it: the other end of the
 * socketpair speaks as the server (instance.c) */
static int attach_instance(struct gw_server *srv, int64_t deadline, struct mg_err **err)
{
	/* the instance holds the value; this session only checks what leaves */
	kc_secret_free(steal_pointer(&srv->secret));
	int fd = gw_instances_attach(srv, deadline, err);
	if (fd < 0)
		return -1;
	srv->attached = true;
	cleanup_free char *name = xasprintf("server %s", srv->cfg->name);
	struct rpc_peer_config pc = gw_server_peer_config(srv, name);
	return rpc_peer_new(fd, fd, &pc, &srv->launch.peer, err);
}

bool gw_server_modern(const struct gw_server *srv)
{
	return srv->info.protocol_version != NULL &&
	       strcmp(srv->info.protocol_version, MCP_PROTOCOL_MODERN) == 0;
}

bool gw_server_asks_by_result(const struct gw_server *srv)
{
	return gw_server_modern(srv) || (srv->attached && srv->instance_modern);
}

void gw_server_log_level(struct gw_server *srv, const char *level)
{
	struct json_value *m = json_copy(rpc_peer_request_meta(srv->launch.peer));
	json_object_set(m, MCP_META_LOG_LEVEL, json_new_string(level));
	rpc_peer_set_request_meta(srv->launch.peer, m);
	json_free(m);
}

/* review's probe waits this long: it runs once, a person waits for it, and
 * what it learns is remembered for the sessions */
#define GW_DISCOVER_REVIEW_MS 10000

/* STATE/eras/SHA256(image): "2026-07-28" once a server of that image answered
 * server/discover as one of the new era (the image is pinned by digest, so
 * a new image is probed afresh) */
static char *era_path(const struct session *s, const char *image)
{
	unsigned char h[crypto_hash_sha256_BYTES];
	char hex[2 * sizeof(h) + 1];
	crypto_hash_sha256(h, (const unsigned char *)image, strlen(image));
	sodium_bin2hex(hex, sizeof(hex), h, sizeof(h));
	return xasprintf("%s/eras/%s", s->state_dir, hex);
}

static bool era_known_modern(const char *path)
{
	char buf[32] = {0};
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 && strncmp(buf, MCP_PROTOCOL_MODERN, strlen(MCP_PROTOCOL_MODERN)) == 0;
}

/* A contained server of either era: server/discover, else initialize. An
 * instance speaks the old era to the sessions attached (it answers their
 * initialize itself); a remote server is probed the same way, through its
 * bridge (docs/2026-12-01-remote-eras.md). The era a server's
 * image answered in once is remembered, as versioning.mdx allows: a server
 * known to be of 2026-07-28 is given its whole start deadline to answer
 * server/discover, and one that then answers as the old era is forgotten,
 * so the next start probes afresh. */
static int start_mcp(struct gw_server *srv, bool attach, int64_t deadline, struct mg_err **err)
{
	const struct json_value *caps = gw_relay_server_capabilities(srv->cfg);
	if (attach)
		return mcp_initialize(srv->launch.peer, deadline, caps, &srv->info, err);
	struct session *s = srv->sess;
	cleanup_free char *path = srv->cfg->image != NULL ? era_path(s, srv->cfg->image) : NULL;
	bool known = path != NULL && era_known_modern(path);
	int64_t wait = known         ? deadline - proc_now_ms()
	               : s->fetching ? GW_DISCOVER_REVIEW_MS
	                             : MCP_DISCOVER_WAIT_MS;
	if (mcp_start(srv->launch.peer, deadline, caps, wait, &srv->info, err) < 0)
		return -1;
	bool modern = gw_server_modern(srv);
	if (path != NULL && modern && !known) {
		cleanup_free char *dir = xasprintf("%s/eras", s->state_dir);
		struct mg_err *werr = NULL;
		if (mg_mkdir_p(dir, 0700, &werr) < 0 ||
		    mg_write_file_atomic(path, MCP_PROTOCOL_MODERN "\n",
		                         strlen(MCP_PROTOCOL_MODERN "\n"), 0600, &werr) < 0) {
			mg_info("server %s: cannot remember its era: %s", srv->cfg->name,
			        mg_err_msg(werr));
			mg_err_free(werr);
		}
	} else if (path != NULL && !modern && known) {
		unlink(path); /* the remembered era failed: probe afresh next time */
	}
	return 0;
}

static void on_upstream_listen_end(struct rpc_peer *peer, struct rpc_msg *reply,
                                   const struct mg_err *why, void *data)
{
	(void)peer;
	struct gw_server *srv = data;
	if (srv->sess->stopping)
		return;
	cleanup_free char *text = reply != NULL && reply->kind == RPC_ERROR
	                              ? mcp_error_text(reply)
	                              : xstrdup(reply != NULL ? "ended by the server"
	                                        : why != NULL ? mg_err_msg(why)
	                                                      : "no answer");
	mg_info("server %s: its subscriptions/listen: %s", srv->cfg->name, text);
}

/* A server of 2026-07-28 tells of its changes only on a subscriptions/listen:
 * mcpgate opens one for what a relist needs (its tools, and the prompts and
 * resources it passes on), for the server's whole life. Its notifications
 * are served by method as any server's (methods.c); the manifest check
 * follows a tools list_changed as for the old era. */
static void listen_upstream(struct gw_server *srv)
{
	struct json_value *p = gw_fields(
	    "notifications",
	    gw_fields("toolsListChanged", json_new_bool(true), "promptsListChanged",
	              json_new_bool(true), "resourcesListChanged", json_new_bool(true), NULL),
	    NULL);
	struct mg_err *err = NULL;
	if (rpc_peer_send_request(srv->launch.peer, "subscriptions/listen", p, 0,
	                          on_upstream_listen_end, srv, NULL, &err) < 0) {
		mg_info("server %s: cannot open its subscriptions/listen: %s", srv->cfg->name,
		        mg_err_msg(err));
		mg_err_free(err);
	}
	json_free(p);
}

/* After a failed start: make sure nothing of it runs. */
static void start_cleanup(struct gw_server *srv)
{
	bool forced;
	/* it may have ended on its own: that exit status is the reason */
	gw_launch_stop(srv->sess->driver, srv->container, &srv->launch, proc_now_ms() + 300,
	               &srv->exit_status, &forced);
	srv->exit_known = srv->launch.proc.pid == -1 && srv->launch.argv.n > 0;
	gw_egress_stop(srv, proc_now_ms() + 1000);
}

/* The approved manifest's record, kept when this start listed exactly it
 * and none is kept yet (approve keeps one; a pin written by hand had
 * none): a lazy start offers from it next time. On the start thread. */
static void keep_approved(struct gw_server *srv)
{
	struct session *s = srv->sess;
	const struct cfg_server *c = srv->cfg;
	if (s->fetching || c->manifest == NULL || strcmp(c->manifest, srv->live_hash) != 0)
		return;
	cleanup_free char *path = manifest_record_path(s->data_dir, c->name, c->manifest);
	if (access(path, F_OK) == 0)
		return;
	struct mg_err *err = NULL;
	if (manifest_record_save(path, c->name, c->image, c->manifest, srv->tools, &err) < 0) {
		mg_info("server %s: cannot keep its approved manifest: %s", c->name,
		        mg_err_msg(err));
		mg_err_free(err);
	}
}

struct json_value *gw_start_phases_json(const struct gw_start_phases *p)
{
	static const struct {
		const char *name;
		size_t offset;
	} fields[] = {
	    {"platform_wait_ms", offsetof(struct gw_start_phases, platform_wait_ms)},
	    {"platform_ms", offsetof(struct gw_start_phases, platform_ms)},
	    {"image_check_ms", offsetof(struct gw_start_phases, image_check_ms)},
	    {"image_wait_ms", offsetof(struct gw_start_phases, image_wait_ms)},
	    {"egress_topology_ms", offsetof(struct gw_start_phases, egress_topology_ms)},
	    {"sidecar_ready_ms", offsetof(struct gw_start_phases, sidecar_ready_ms)},
	    {"run_prepare_ms", offsetof(struct gw_start_phases, run_prepare_ms)},
	    {"first_byte_ms", offsetof(struct gw_start_phases, first_byte_ms)},
	    {"initialize_ms", offsetof(struct gw_start_phases, initialize_ms)},
	    {"tools_list_ms", offsetof(struct gw_start_phases, tools_list_ms)},
	    {"manifest_hash_ms", offsetof(struct gw_start_phases, manifest_hash_ms)},
	};
	struct json_value *o = json_new_object();
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		int64_t v;
		memcpy(&v, (const char *)p + fields[i].offset, sizeof(v));
		/* a phase this start did not have is left out */
		if (v >= 0)
			json_object_set(o, fields[i].name, json_new_int(v));
		if (i == 1 && p->platform_ms >= 0)
			json_object_set(o, "platform",
			                json_new_string(p->platform_kept ? "kept" : "asked"));
	}
	return o;
}

/* Every phase unset: a start that never reaches one leaves it out */
static void phases_init(struct gw_start_phases *p)
{
	*p = (struct gw_start_phases){
	    .platform_wait_ms = -1,
	    .platform_ms = -1,
	    .image_check_ms = -1,
	    .image_wait_ms = -1,
	    .egress_topology_ms = -1,
	    .sidecar_ready_ms = -1,
	    .run_prepare_ms = -1,
	    .first_byte_ms = -1,
	    .initialize_ms = -1,
	    .tools_list_ms = -1,
	    .manifest_hash_ms = -1,
	};
}

/* After a failed start of a contained server: was its image there? The run
 * names it by digest with --pull=never, so a missing image fails the run at
 * once (never by the deadline), and only the check can say so in words a
 * person can act on. NULL when the image is there, the check itself failed,
 * or the start ran out of time (the start's own error stands); else the
 * reason with the command that fixes it. */
static char *missing_image(struct gw_server *srv, int64_t deadline)
{
	const struct cfg_server *c = srv->cfg;
	if (proc_now_ms() >= deadline)
		return NULL;
	int present = gw_startup_image_present(srv->sess, c->image, deadline, &srv->phases, NULL);
	return present == 0
	           ? xasprintf("image %s is not present; run: mcpgate pull %s", c->image, c->name)
	           : NULL;
}

/* The server's own process (or its instance, or its remote bridge) and its
 * first exchange, each phase timed */
static int start_and_initialize(struct gw_server *srv, bool attach, int64_t deadline,
                                struct mg_err **err)
{
	const struct cfg_server *c = srv->cfg;
	struct gw_start_phases *ph = &srv->phases;
	int64_t t0 = proc_now_ms();
	int r = c->transport == CFG_TRANSPORT_REMOTE ? gw_remote_start(srv, err)
	        : attach                             ? attach_instance(srv, deadline, err)
	                                             : start_process(srv, err);
	int64_t spawned = proc_now_ms();
	ph->run_prepare_ms = spawned - t0;
	if (r < 0)
		return -1;
	r = start_mcp(srv, attach, deadline, err);
	int64_t first = srv->launch.peer != NULL ? rpc_peer_first_read_ms(srv->launch.peer) : 0;
	if (first > 0) {
		ph->first_byte_ms = first > spawned ? first - spawned : 0;
		ph->initialize_ms = proc_now_ms() - (first > spawned ? first : spawned);
	}
	return r;
}

void *gw_server_start_thread(void *arg)
{
	struct gw_server *srv = arg;
	struct session *s = srv->sess;
	const struct cfg_server *c = srv->cfg;
	struct gw_start_phases *ph = &srv->phases;
	struct mg_err *err = NULL;
	int64_t deadline = proc_now_ms() + (int64_t)s->cfg->mcp.start_timeout * 1000;
	srv->start_ms = proc_now_ms();
	phases_init(ph);

	/* an instance of the listener's has it: everything below is its own */
	bool attach = gw_instance_attaches(srv);
	bool contained = c->transport == CFG_TRANSPORT_CONTAINER && !attach;
	/* what the runtime enforces, before anything is judged or run by it */
	if (!attach && (c->transport == CFG_TRANSPORT_CONTAINER || cfg_server_has_egress(c)) &&
	    gw_startup_platform_wait(s, deadline, ph) < 0) {
		srv->start_error =
		    xstrdup("the runtime did not say what it enforces here before the start "
		            "deadline, so nothing starts");
		goto done;
	}
	if (contained) {
		/* fail closed: a limit the platform would drop is not assumed */
		srv->start_error = gw_unenforced_refusal(&s->platform, s->platform_error, c);
		if (srv->start_error != NULL)
			goto done;
		struct json_value *accepted = ctr_platform_accepted_json(&s->platform, c);
		if (accepted != NULL) {
			struct json_value *why = json_new_array();
			for (unsigned b = 0; b < CFG_PROP_COUNT; b++)
				if ((c->accept_unenforced & s->platform.unenforced) & (1u << b))
					json_array_push(why, json_new_string(s->platform.why[b]));
			audit_record(s->audit, "server.unenforced",
			             gw_fields("server", json_new_string(c->name), "accepted",
			                       accepted, "why", why, NULL));
		}
	}
	/* nothing is checked before the run: it names the image by digest with
	 * --pull=never, so the runtime runs that image or none
	 * (docs/2026-12-02-start-path.md) */
	bool hosts = !attach && cfg_server_has_egress(c);
	int r = hosts && (gw_egress_topology(srv, &err) < 0 ||
	                  gw_egress_sidecar(srv, deadline, &err) < 0)
	            ? -1
	            : 0;
	if (r == 0)
		r = start_and_initialize(srv, attach, deadline, &err);
	/* it answered (or failed): the runtime is past its mounts either way */
	gw_launch_mounted(&srv->launch);
	if (r < 0 && contained && (srv->start_error = missing_image(srv, deadline)) != NULL) {
		start_cleanup(srv);
		goto done;
	}
	int64_t t0 = proc_now_ms();
	if (r == 0 && mcp_list_tools(srv->launch.peer, deadline, &srv->tools, &err) < 0)
		r = -1;
	int64_t t1 = proc_now_ms();
	if (r == 0) {
		ph->tools_list_ms = t1 - t0;
		r = manifest_hash(srv->tools, srv->live_hash, &err);
		ph->manifest_hash_ms = proc_now_ms() - t1;
	}
	if (r < 0) {
		srv->start_error = xstrdup(mg_err_msg(err));
		start_cleanup(srv);
		goto done;
	}
	if (!s->fetching && c->transport == CFG_TRANSPORT_CONTAINER && gw_server_modern(srv))
		listen_upstream(srv);
	keep_approved(srv);
	srv->ready_ms = proc_now_ms();
done:
	mg_err_free(err);
	loop_post(s->loop, gw_server_started, srv);
	/* after its start's end is counted (posts run in order): the sweep
	 * waits until no start is under way */
	loop_post(s->loop, gw_startup_sweep_when_idle, s);
	return NULL;
}

void gw_server_start_on_fds(struct gw_server *srv, int in_fd, int out_fd,
                            struct mcp_server_info *info, struct json_value *tools)
{
	struct mg_err *err = NULL;
	srv->start_ms = proc_now_ms();
	phases_init(&srv->phases);
	cleanup_free char *name = xasprintf("server %s", srv->cfg->name);
	struct rpc_peer_config pc = gw_server_peer_config(srv, name);
	srv->info = *info;
	*info = (struct mcp_server_info){0};
	srv->tools = tools;
	if (rpc_peer_new(in_fd, out_fd, &pc, &srv->launch.peer, &err) < 0 ||
	    manifest_hash(srv->tools, srv->live_hash, &err) < 0)
		srv->start_error = xstrdup(mg_err_msg(err));
	if (srv->launch.peer != NULL && gw_server_modern(srv)) {
		/* as mcp_start leaves a server of 2026-07-28: its requests say so */
		struct json_value *meta = gw_fields(MCP_META_PROTOCOL_VERSION,
		                                    json_new_string(MCP_PROTOCOL_MODERN), NULL);
		rpc_peer_set_request_meta(srv->launch.peer, meta);
		json_free(meta);
	}
	srv->ready_ms = proc_now_ms();
	mg_err_free(err);
	loop_post(srv->sess->loop, gw_server_started, srv);
}

/* ---- on the loop thread ------------------------------------------------- */

static void exit_reason(struct gw_server *srv, int status)
{
	char why[PROC_STATUS_MAX];
	proc_status_describe(status, why, sizeof(why));
	/* its stderr is the server's own text: the person's log and the audit
	 * log have it, the model does not */
	gw_server_set_reason(srv, GW_EXITED, "server %s %s", srv->cfg->name, why);
	explain_failure(srv, NULL);
}

static void answer_orphans(struct gw_server *srv)
{
	while (srv->orphans != NULL) {
		struct gw_call *c = srv->orphans;
		srv->orphans = c->next;
		c->next = c->prev = NULL;
		gw_call_finish_error(c, RPC_SERVER_ERROR, "%s", srv->reason);
	}
}

/* A contained server of this session's own that ended on its own while it
 * served is started again (after its tools left and its end was cleaned) */
static bool restartable(const struct gw_server *srv)
{
	const struct session *s = srv->sess;
	return srv->state == GW_READY && !s->stopping && !s->fetching && s->host == NULL &&
	       !srv->attached && srv->cfg->transport == CFG_TRANSPORT_CONTAINER &&
	       s->start_thread == NULL;
}

static void on_child_exit(struct loop *loop, pid_t pid, int status, void *data)
{
	(void)loop;
	(void)pid;
	struct gw_server *srv = data;
	srv->launch.proc.pid = -1; /* reaped by the loop */
	stderr_drain(srv);
	bool restart = restartable(srv);
	if (srv->state == GW_READY)
		exit_reason(srv, status);
	audit_record(srv->sess->audit, "server.exit",
	             gw_fields("server", json_new_string(srv->cfg->name), "status",
	                       json_new_int(WIFEXITED(status) ? WEXITSTATUS(status)
	                                                      : 128 + WTERMSIG(status)),
	                       "reason", json_new_string(srv->reason != NULL ? srv->reason : ""),
	                       "stderr", stderr_json(srv), NULL));
	/* its pending calls learn the reason */
	rpc_peer_free(steal_pointer(&srv->launch.peer));
	answer_orphans(srv);
	if (srv->sess->host != NULL)
		gw_host_server_ended(srv);
	gw_server_withdraw(srv);
	if (restart) {
		/* its sidecar and networks go first (names are reused), then the
		 * restart is timed (stop_done) */
		srv->restart_wanted = true;
		gw_server_stop(srv, proc_now_ms());
	}
}

/* ---- after an exit: the same server again, with backoff ---------------- */

/* Everything a start leaves, gone, so the start thread finds a server as
 * session_new made it (its stderr tail and reason stay, for the person) */
void gw_server_reset_for_start(struct gw_server *srv)
{
	gw_launch_free(&srv->launch);
	srv->launch = (struct gw_launch)GW_LAUNCH_INIT;
	gw_egress_free(&srv->egress);
	gw_egress_init(&srv->egress);
	mcp_server_info_free(&srv->info);
	srv->stop_started = false;
	srv->output_closed = false;
	srv->exit_known = false;
	srv->relisting = false;
	srv->restart_wanted = false;
}

static void on_restart_timer(struct loop *loop, void *data)
{
	(void)loop;
	struct gw_server *srv = data;
	struct session *s = srv->sess;
	srv->restart_timer = NULL;
	if (s->stopping)
		return;
	gw_server_reset_for_start(srv);
	srv->restarts++;
	audit_record(s->audit, "server.restart",
	             gw_fields("server", json_new_string(srv->cfg->name), "attempt",
	                       json_new_int(srv->restarts), NULL));
	gw_server_start(srv);
}

/* Its end is cleaned: the next start after 1 s, 2 s, 4 s... or none more */
static void schedule_restart(struct gw_server *srv)
{
	struct session *s = srv->sess;
	if (srv->restarts >= GW_RESTARTS_MAX) {
		cleanup_free char *text =
		    xasprintf("server %s ended %u times this session; it is not started again (%s)",
		              srv->cfg->name, srv->restarts + 1, srv->reason);
		audit_record(s->audit, "server.restart",
		             gw_fields("server", json_new_string(srv->cfg->name), "attempt",
		                       json_new_int(srv->restarts + 1), "given_up",
		                       json_new_bool(true), NULL));
		gw_client_notice(s, "warning", text);
		return;
	}
	int64_t delay = (int64_t)GW_RESTART_DELAY_MS << srv->restarts;
	if (delay > GW_RESTART_DELAY_MAX_MS)
		delay = GW_RESTART_DELAY_MAX_MS;
	cleanup_free char *text =
	    xasprintf("%s; it starts again in %lld ms", srv->reason, (long long)delay);
	gw_client_notice(s, "warning", text);
	srv->restart_timer = loop_timer_add(s->loop, delay, on_restart_timer, srv);
}

void gw_server_started(struct loop *loop, void *data)
{
	struct gw_server *srv = data;
	struct session *s = srv->sess;
	pthread_join(srv->thread, NULL);
	srv->thread_started = false;
	loop_timer_cancel(loop, srv->start_timer);
	srv->start_timer = NULL;
	if (s->stopping) {
		/* the session ended while it started: what it started stops now */
		if (srv->start_error == NULL)
			srv->state = GW_READY;
		s->starting--;
		gw_server_stop(srv, s->stop_deadline);
		return;
	}
	if (srv->start_error != NULL) {
		stderr_drain(srv);
		char why[PROC_STATUS_MAX] = "";
		if (srv->exit_known)
			proc_status_describe(srv->exit_status, why, sizeof(why));
		gw_server_set_reason(srv, GW_UNAVAILABLE, "server %s is unavailable: %s%s%s%s",
		                     srv->cfg->name, srv->start_error, why[0] ? " (" : "", why,
		                     why[0] ? ")" : "");
		/* the server's own text, or its runtime's: for the person
		 * (mcpgate's log, review's terminal, the audit log), never for
		 * the model; the reason says where it is and the fix */
		explain_failure(srv, srv->start_error);
		audit_record(s->audit, "server.unavailable",
		             gw_fields("server", json_new_string(srv->cfg->name), "reason",
		                       json_new_string(srv->reason), "stderr", stderr_json(srv),
		                       "phases", gw_start_phases_json(&srv->phases), NULL));
		gw_client_notice(s, "warning", srv->reason);
	} else {
		srv->state = GW_READY;
		gw_egress_watch(loop, srv); /* its proxy's records, from now on */
		struct mg_err *err = NULL;
		if (rpc_peer_attach(srv->launch.peer, loop, &err) < 0 ||
		    (srv->launch.proc.pid > 0 &&
		     loop_watch_child(loop, srv->launch.proc.pid, srv->launch.proc.pidfd,
		                      on_child_exit, srv) < 0)) {
			mg_warn("server %s: %s", srv->cfg->name, mg_err_msg(err));
			mg_err_free(err);
		}
		audit_record(
		    s->audit, "server.ready",
		    gw_fields("server", json_new_string(srv->cfg->name), "protocolVersion",
		              json_new_string(srv->info.protocol_version), "serverInfo",
		              gw_fields("name",
		                        json_new_string(srv->info.name ? srv->info.name : ""),
		                        "version",
		                        json_new_string(srv->info.version ? srv->info.version : ""),
		                        NULL),
		              "tools", json_new_int((int64_t)srv->tools->u.arr.len), "start_ms",
		              json_new_int(srv->ready_ms - srv->start_ms), "phases",
		              gw_start_phases_json(&srv->phases), NULL));
	}
	s->starting--;
	if (srv->down_on_start) {
		/* disabled, removed or changed in mcp.toml while it started */
		srv->down_on_start = false;
		json_free(steal_pointer(&srv->pinned));
		gw_server_take_down(srv);
		gw_session_settled(srv);
		return;
	}
	if (srv->state == GW_READY)
		gw_server_offer(srv); /* its pin checked, its tools offered */
	else
		gw_server_withdraw(srv);
	/* a lazy server's approved list served while it started: the table
	 * points into the live one now, or into nothing */
	json_free(steal_pointer(&srv->pinned));
	gw_session_settled(srv);
}

/* ---- the end ------------------------------------------------------------ */

/* What a server's end does off the loop's thread: the job owns these from
 * gw_server_stop() until stop_done() has run. */
struct gw_stop {
	struct gw_server *srv;
	int64_t deadline_ms;
	struct proc proc; /* its runtime process, when it still had one */
	bool had_process;
	int status;
	bool forced;
	struct remote_bridge *bridge; /* a remote server's, out of the loop */
	struct gw_egress_end egress;
};

/* On the job's thread: every wait, runtime command and DELETE of the end */
static void stop_work(void *data)
{
	struct gw_stop *st = data;
	struct gw_server *srv = st->srv;
	remote_bridge_end(steal_pointer(&st->bridge));
	if (st->had_process)
		gw_launch_reap(srv->sess->driver, srv->container, &st->proc, st->deadline_ms,
		               &st->status, &st->forced);
	/* the sidecar has a second at least to write its last records */
	int64_t egress_deadline = proc_now_ms() + 1000;
	gw_egress_end_work(srv, &st->egress,
	                   st->deadline_ms > egress_deadline ? st->deadline_ms : egress_deadline);
}

/* Back on the loop's thread: record the exit, close what the loop watched */
static void stop_done(struct loop *loop, void *data)
{
	(void)loop;
	struct gw_stop *st = data;
	struct gw_server *srv = st->srv;
	struct session *s = srv->sess;
	stderr_drain(srv);
	if (st->had_process)
		audit_record(
		    s->audit, "server.exit",
		    gw_fields("server", json_new_string(srv->cfg->name), "status",
		              json_new_int(WIFEXITED(st->status) ? WEXITSTATUS(st->status)
		                                                 : 128 + WTERMSIG(st->status)),
		              "forced", json_new_bool(st->forced), "reason",
		              json_new_string(srv->reason != NULL ? srv->reason : ""), "stderr",
		              stderr_json(srv), NULL));
	gw_egress_end_done(srv, &st->egress);
	if (srv->launch.err_fd >= 0) {
		loop_unwatch(s->loop, srv->launch.err_fd);
		close(srv->launch.err_fd);
		srv->launch.err_fd = -1;
	}
	proc_close(&st->proc);
	free(st);
	srv->stop_pending = false;
	answer_orphans(srv);
	if (srv->restart_wanted && !s->stopping)
		schedule_restart(srv);
	else if (srv->start_wanted && !s->stopping)
		gw_server_bring_up(srv); /* enabled, or changed, while it stopped */
}

void gw_server_stop(struct gw_server *srv, int64_t deadline_ms)
{
	struct session *s = srv->sess;
	if (srv->stop_started)
		return;
	srv->stop_started = true;
	/* closing its input asks it to end; many servers ignore that */
	rpc_peer_free(steal_pointer(&srv->launch.peer));
	struct gw_stop *st = xcalloc(1, sizeof(*st));
	st->srv = srv;
	st->deadline_ms = deadline_ms;
	st->proc = (struct proc)PROC_INIT;
	st->bridge = gw_remote_detach(srv); /* a remote server: its DELETE is the job's */
	if (srv->launch.proc.pid > 0) {
		/* the job waits for it now, not the loop */
		loop_unwatch_child(s->loop, srv->launch.proc.pid);
		st->proc = srv->launch.proc;
		srv->launch.proc = (struct proc)PROC_INIT;
		st->had_process = true;
		if (srv->state == GW_READY)
			gw_server_set_reason(srv, GW_STOPPED,
			                     "server %s stopped at the end of the session",
			                     srv->cfg->name);
	}
	gw_egress_end_begin(srv, &st->egress);
	srv->stop_pending = true;
	if (st->had_process || st->bridge != NULL || gw_egress_end_pending(&st->egress))
		loop_job(s->loop, stop_work, stop_done, st);
	else
		stop_done(s->loop, st); /* nothing that waits: no thread for it */
}

void gw_server_free(struct gw_server *srv)
{
	json_free(srv->pinned);
	gw_launch_free(&srv->launch);
	gw_egress_free(&srv->egress);
	kc_secret_free(srv->secret);
	free(srv->reason);
	free(srv->container);
	free(srv->start_error);
	mg_buf_free(&srv->err_tail);
	pthread_mutex_destroy(&srv->err_lock);
	mcp_server_info_free(&srv->info);
	json_free(srv->tools);
}
