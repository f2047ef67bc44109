/* The host side of egress (docs/egress.md): for a server with hosts or
 * connect destinations, the driver's egress topology (its networks and the
 * sidecar between them), the mcpgate-egress sidecar's process with its
 * standard input held as a lifeline, the proxy's arguments, the proxy
 * variables for the server, and the sidecar's JSON lines (and those of the
 * host side of connect, connect.c) into the audit log. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/log.h"
#include "internal/base/xalloc.h"
#include "internal/gateway/gateway-internal.h"

#define EGRESS_PORT        3128
#define EGRESS_RECORDS_MAX 1000
#define EGRESS_LINE_MAX    8192

void gw_egress_init(struct gw_egress *e)
{
	memset(e, 0, sizeof(*e));
	e->proc = (struct proc)PROC_INIT;
	e->out_fd = -1;
	mg_buf_init(&e->line, EGRESS_LINE_MAX);
	e->host.proc = (struct proc)PROC_INIT;
	e->host.out_fd = -1;
	mg_buf_init(&e->host.line, EGRESS_LINE_MAX);
	e->topo = (struct ctr_topology){.deny = STRV_INIT, .join = STRV_INIT, .from = STRV_INIT};
}

int gw_egress_prepare(struct session *s, struct mg_err **err)
{
	if (gw_binary_prepare(s, "mcpgate-egress", s->cfg->mcp.egress, "egress", &s->egress_binary,
	                      err) < 0)
		return mg_err_wrap(err,
		                   "the egress proxy (set egress = \"/path/to/mcpgate-egress\" "
		                   "under [mcp] in config.toml, or install it beside mcpgate)");
	return 0;
}

/* ---- start-up, on the server's thread ----------------------------------- */

/* Did the sidecar's runtime process end already? Then nothing is worth
 * waiting for: its own error text (the last line it wrote) is the reason. */
static bool sidecar_failed(struct gw_egress *e, struct mg_err **err)
{
	int status;
	if (e->proc.pid <= 0 || proc_wait(&e->proc, proc_now_ms(), &status, NULL) != 0)
		return false;
	struct mg_buf text = MG_BUF_INIT(4096);
	char chunk[1024];
	ssize_t n;
	while (e->proc.err_fd >= 0 && (n = read(e->proc.err_fd, chunk, sizeof(chunk))) > 0) {
		if (text.len + (size_t)n > 4096)
			mg_buf_consume(&text, text.len + (size_t)n - 4096);
		mg_buf_append(&text, chunk, (size_t)n, NULL);
	}
	char why[PROC_STATUS_MAX];
	proc_status_describe(status, why, sizeof(why));
	cleanup_free char *last = gw_last_line(mg_buf_str(&text), text.len);
	mg_err_set(err, "the egress sidecar's runtime %s: %s", why,
	           last != NULL ? last : "(it said nothing)");
	mg_buf_free(&text);
	return true;
}

/* The driver finishes the sidecar once its run is spawned (it joins what it
 * could not start on, then has an address): tried until the deadline,
 * given up at once when the sidecar's runtime process has ended. */
static int wait_ready(struct gw_server *srv, int64_t deadline, struct mg_err **err)
{
	const struct ctr_driver *d = srv->sess->driver;
	struct gw_egress *e = &srv->egress;
	for (;;) {
		if (sidecar_failed(e, err))
			return -1;
		char *ip = NULL;
		struct mg_err *lerr = NULL;
		if (d->ops->sidecar_ready(d, &e->topo, &ip, &lerr) == 0) {
			if (srv->cfg->nhosts > 0)
				e->proxy_url = xasprintf("http://%s:%d", ip, EGRESS_PORT);
			gw_connect_addresses(srv, ip);
			free(ip);
			return 0;
		}
		if (proc_now_ms() >= deadline) {
			mg_err_set(err, "%s", mg_err_msg(lerr));
			mg_err_free(lerr);
			return -1;
		}
		mg_err_free(lerr);
		usleep(50 * 1000);
	}
}

/* The proxy's arguments: the listed hosts (an HTTP proxy only for them),
 * the connect destinations, what it must refuse (from the topology), the
 * cap on bytes sent, the lifeline */
static void proxy_args(const struct cfg_server *c, const struct ctr_topology *topo,
                       struct strv *args)
{
	const struct strv *deny = &topo->deny;
	if (c->nhosts > 0) {
		strv_push(args, "-listen");
		strv_pushf(args, "0.0.0.0:%d", EGRESS_PORT);
	}
	gw_connect_forward_args(c, args);
	for (size_t i = 0; i < c->nhosts; i++) {
		const struct cfg_host *h = &c->hosts[i];
		strv_push(args, h->private_ok ? "-allow-private" : "-allow");
		if (h->port != 0)
			strv_pushf(args, "%s:%u", h->host, h->port);
		else
			strv_push(args, h->host);
	}
	/* its listeners: for the server's network alone */
	for (size_t i = 0; i < topo->from.n; i++) {
		strv_push(args, "-from");
		strv_push(args, topo->from.v[i]);
	}
	/* its own networks' subnets and gateways: never a destination */
	for (size_t i = 0; i < deny->n; i++) {
		strv_push(args, "-deny-address");
		strv_push(args, deny->v[i]);
	}
	if (c->send_max != 0) {
		strv_push(args, "-max-bytes-up");
		strv_pushf(args, "%llu", (unsigned long long)c->send_max);
	}
	strv_push(args, "-lifeline");
}

int gw_egress_topology(struct gw_server *srv, struct mg_err **err)
{
	struct session *s = srv->sess;
	const struct cfg_server *c = srv->cfg;
	const struct ctr_driver *d = s->driver;
	if (s->egress_binary == NULL)
		return mg_err_set(err, "%s",
		                  s->egress_error != NULL ? s->egress_error : "no egress proxy");
	/* the networks of the person's that destinations are on, each once */
	struct strv join = STRV_INIT;
	for (size_t i = 0; i < c->nconnect; i++)
		if (c->connect[i].network != NULL && strv_find(&join, c->connect[i].network) < 0)
			strv_push(&join, c->connect[i].network);
	struct ctr_topology_spec topo = {
	    .server = c,
	    .session = s->id,
	    .owner = s->owner,
	    .container = srv->container,
	    .rootless = s->platform.rootless,
	    .join = (const char *const *)strv_array(&join),
	};
	int64_t t0 = proc_now_ms();
	/* what was made before a failure is in e->topo: the end removes it */
	int r = d->ops->topology_create(d, &topo, &srv->egress.topo, err);
	strv_free(&join);
	srv->phases.egress_topology_ms = proc_now_ms() - t0;
	return r;
}

int gw_egress_sidecar(struct gw_server *srv, int64_t deadline, struct mg_err **err)
{
	struct session *s = srv->sess;
	const struct cfg_server *c = srv->cfg;
	const struct ctr_driver *d = s->driver;
	struct gw_egress *e = &srv->egress;
	int64_t t0 = proc_now_ms();
	/* the host's loopback is reached from the host: that side first, so
	 * its sockets are there to mount */
	if (gw_connect_host_start(srv, deadline, err) < 0)
		return -1;
	/* the sidecar runs from the server's image: what it declares counts */
	struct ctr_image_config image;
	if (d->ops->image_config(d, c->image, false, &image, err) < 0)
		return -1;
	struct strv args = STRV_INIT;
	proxy_args(c, &e->topo, &args);
	struct ctr_sidecar_spec spec = {
	    .server = c,
	    .session = s->id,
	    .owner = s->owner,
	    .topology = &e->topo,
	    .binary = s->egress_binary,
	    .args = (const char *const *)strv_array(&args),
	    .connect_dir = e->host.sockets,
	    .image = &image,
	    .launcher = s->launch_binary,
	};
	struct strv argv = STRV_INIT, envp = STRV_INIT;
	int r = d->ops->sidecar_command(d, &spec, &argv, &envp, err);
	strv_free(&args);
	ctr_image_config_free(&image);
	if (r < 0)
		return -1;
	struct proc_spec ps = {
	    .path = argv.v[0],
	    .argv = (const char *const *)argv.v,
	    .envp = (const char *const *)strv_array(&envp),
	    .stdio = {{PROC_STDIO_PIPE, -1, false},
	              {PROC_STDIO_PIPE, -1, true},
	              {PROC_STDIO_PIPE, -1, true}},
	};
	r = proc_spawn(&ps, &e->proc, err);
	struct json_value *jargv = json_new_array();
	for (size_t i = 0; i < argv.n; i++)
		json_array_push(jargv, json_new_string(argv.v[i]));
	strv_free(&argv);
	strv_free(&envp);
	if (r < 0) {
		json_free(jargv);
		return mg_err_wrap(err, "starting the egress sidecar");
	}
	audit_record(s->audit, "egress.start",
	             gw_fields("server", json_new_string(c->name), "container",
	                       json_new_string(e->topo.sidecar), "argv", jargv, NULL));
	/* its records and stderr go to the loop once the server is ready
	 * (gw_egress_watch, on the loop thread); until then they wait in the pipe */
	r = wait_ready(srv, deadline, err);
	srv->phases.sidecar_ready_ms = proc_now_ms() - t0;
	return r;
}

/* The server's variables: every client that honours them goes through the
 * proxy; one that does not reaches nothing (its network has no way out). */
size_t gw_egress_env(const struct gw_server *srv, struct ctr_env *env, size_t max)
{
	static const char *const names[] = {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
	                                    "https_proxy"};
	size_t n = 0;
	const char *url = srv->egress.proxy_url;
	if (url == NULL)
		return 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && n < max; i++)
		env[n++] = (struct ctr_env){names[i], url, true};
	if (n + 3 <= max) {
		env[n++] = (struct ctr_env){"NO_PROXY", "localhost,127.0.0.1,::1", true};
		env[n++] = (struct ctr_env){"no_proxy", "localhost,127.0.0.1,::1", true};
		env[n++] = (struct ctr_env){"NODE_USE_ENV_PROXY", "1", true};
	}
	return n;
}

/* ---- its records, on the loop thread ------------------------------------ */

static void record_line(struct gw_server *srv, const char *line, size_t len)
{
	struct gw_egress *e = &srv->egress;
	/* a limit record (network_send_max reached; one per tunnel it closed,
	 * so at most -max-tunnels at once) is kept past the cap: it says why
	 * the server's traffic stopped */
	bool limit = len > 17 && memcmp(line, "{\"event\":\"limit\",", 17) == 0;
	if (e->records >= EGRESS_RECORDS_MAX && !limit) {
		e->dropped++;
		return;
	}
	struct json_value *v = NULL;
	if (json_parse(line, len, NULL, &v, NULL) < 0 || v->kind != JSON_OBJECT) {
		json_free(v);
		return;
	}
	e->records++;
	const char *event = json_get_string(v, "event");
	bool close = event != NULL && strcmp(event, "close") == 0;
	limit = event != NULL && strcmp(event, "limit") == 0;
	struct json_value *f = gw_fields("server", json_new_string(srv->cfg->name), NULL);
	static const char *const attempt_keys[] = {"method",  "host",    "port",
	                                           "address", "allowed", "reason"};
	static const char *const close_keys[] = {"host", "port", "bytes_up", "bytes_down", "ms"};
	static const char *const limit_keys[] = {"host", "port", "session_bytes_up",
	                                         "max_bytes_up"};
	const char *const *keys = limit ? limit_keys : close ? close_keys : attempt_keys;
	size_t nkeys = limit ? 4 : close ? 5 : 6;
	for (size_t i = 0; i < nkeys; i++) {
		const struct json_value *x = json_get(v, keys[i]);
		json_object_set(f, keys[i], x != NULL ? json_copy(x) : json_new_null());
	}
	json_free(v);
	audit_record_by(srv->sess->audit, srv->cfg->name,
	                limit   ? "mcp.egress.limit"
	                : close ? "mcp.egress.close"
	                        : "mcp.egress",
	                f);
}

/* The records of the sidecar (out_fd, line) or of the host side */
static void drain_from(struct gw_server *srv, int *fd, struct mg_buf *line)
{
	struct gw_egress *e = &srv->egress;
	char chunk[4096];
	while (*fd >= 0) {
		ssize_t n = read(*fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			if (e->watched)
				loop_unwatch(srv->sess->loop, *fd);
			close(*fd);
			*fd = -1;
			return;
		}
		for (ssize_t i = 0; i < n; i++) {
			if (chunk[i] != '\n') {
				/* an overlong line is cut; the proxy writes short ones */
				if (line->len < EGRESS_LINE_MAX)
					mg_buf_putc(line, chunk[i], NULL);
				continue;
			}
			record_line(srv, mg_buf_str(line), line->len);
			mg_buf_reset(line);
		}
	}
}

static void drain_records(struct gw_server *srv)
{
	struct gw_egress *e = &srv->egress;
	drain_from(srv, &e->out_fd, &e->line);
	drain_from(srv, &e->host.out_fd, &e->host.line);
}

static void on_records(struct loop *loop, int fd, uint32_t events, void *data)
{
	(void)loop;
	(void)fd;
	(void)events;
	drain_records(data);
}

static void on_sidecar_stderr(struct loop *loop, int fd, uint32_t events, void *data)
{
	(void)events;
	struct gw_server *srv = data;
	char chunk[4096];
	ssize_t n = read(fd, chunk, sizeof(chunk));
	if (n > 0) {
		mg_debug("egress %s: %.*s", srv->cfg->name, (int)n, chunk);
		return;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	loop_unwatch(loop, fd);
	close(fd);
	srv->egress.proc.err_fd = -1;
}

void gw_egress_watch(struct loop *loop, void *data)
{
	struct gw_server *srv = data;
	struct gw_egress *e = &srv->egress;
	e->out_fd = e->proc.out_fd;
	e->proc.out_fd = -1;
	e->watched = true;
	if (e->out_fd >= 0)
		loop_watch(loop, e->out_fd, EPOLLIN, on_records, srv, NULL);
	if (e->host.out_fd >= 0)
		loop_watch(loop, e->host.out_fd, EPOLLIN, on_records, srv, NULL);
	if (e->proc.err_fd >= 0)
		loop_watch(loop, e->proc.err_fd, EPOLLIN, on_sidecar_stderr, srv, NULL);
}

/* ---- the end: after its server ------------------------------------------ */

/* On the thread that owns the server: the sidecar's process (its pid and
 * lifeline) and its networks move to end; its records and stderr stay. */
void gw_egress_end_begin(struct gw_server *srv, struct gw_egress_end *end)
{
	struct gw_egress *e = &srv->egress;
	*end = (struct gw_egress_end){.proc = PROC_INIT};
	end->proc.pid = e->proc.pid;
	end->proc.pidfd = steal_fd(&e->proc.pidfd);
	end->proc.in_fd = steal_fd(&e->proc.in_fd);
	e->proc.pid = -1;
	end->topo = e->topo;
	e->topo = (struct ctr_topology){.deny = STRV_INIT, .join = STRV_INIT, .from = STRV_INIT};
	end->host = (struct proc)PROC_INIT;
	end->host.pid = e->host.proc.pid;
	end->host.pidfd = steal_fd(&e->host.proc.pidfd);
	end->host.in_fd = steal_fd(&e->host.proc.in_fd);
	e->host.proc.pid = -1;
	end->host_dir = steal_pointer(&e->host.dir);
}

static bool topology_made(const struct ctr_topology *t)
{
	return t->sidecar != NULL || t->net_in != NULL || t->net_out != NULL;
}

bool gw_egress_end_pending(const struct gw_egress_end *end)
{
	return end->proc.pid > 0 || end->proc.in_fd >= 0 || topology_made(&end->topo) ||
	       end->host.pid > 0 || end->host_dir != NULL;
}

/* The host side: its lifeline ends, it unlinks its sockets and exits */
static void host_end(struct gw_egress_end *end, int64_t deadline_ms)
{
	if (end->host.in_fd >= 0) {
		close(end->host.in_fd);
		end->host.in_fd = -1;
	}
	int status;
	if (end->host.pid > 0 && proc_wait(&end->host, deadline_ms, &status, NULL) < 0)
		proc_stop(&end->host, 0, &status);
	proc_close(&end->host);
	gw_connect_host_remove_dir(end->host_dir);
	free(end->host_dir);
	end->host_dir = NULL;
}

/* Anywhere but the loop's thread (it waits and runs the runtime): the
 * lifeline ends, the sidecar is waited for until deadline_ms (then removed),
 * and its networks go. Touches nothing of the server but what is read-only. */
void gw_egress_end_work(struct gw_server *srv, struct gw_egress_end *end, int64_t deadline_ms)
{
	const struct ctr_driver *d = srv->sess->driver;
	/* the lifeline: its input ends and it exits */
	if (end->proc.in_fd >= 0) {
		close(end->proc.in_fd);
		end->proc.in_fd = -1;
	}
	if (end->proc.pid > 0) {
		int status;
		if (proc_wait(&end->proc, deadline_ms, &status, NULL) < 0) {
			if (end->topo.sidecar != NULL)
				d->ops->remove(d, end->topo.sidecar, NULL);
			if (proc_wait(&end->proc, proc_now_ms() + 5000, &status, NULL) < 0)
				proc_stop(&end->proc, 0, &status);
		}
	}
	proc_close(&end->proc);
	struct mg_err *err = NULL;
	if (topology_made(&end->topo) && d->ops->topology_remove(d, &end->topo, &err) < 0) {
		mg_warn("server %s: %s", srv->cfg->name, mg_err_msg(err));
		mg_err_free(err);
	}
	ctr_topology_free(&end->topo);
	host_end(end, deadline_ms);
}

/* Back on the thread that owns the server: what the sidecar wrote before
 * it ended is read (the pipes do not block) and its fds go. */
void gw_egress_end_done(struct gw_server *srv, struct gw_egress_end *end)
{
	(void)end;
	struct session *s = srv->sess;
	struct gw_egress *e = &srv->egress;
	if (!e->watched && e->proc.out_fd >= 0) {
		/* never handed to the loop: read here, on this thread */
		e->out_fd = e->proc.out_fd;
		e->proc.out_fd = -1;
	}
	drain_records(srv);
	int *fds[] = {&e->out_fd, &e->host.out_fd};
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] < 0)
			continue;
		if (e->watched)
			loop_unwatch(s->loop, *fds[i]);
		close(*fds[i]);
		*fds[i] = -1;
	}
	if (e->dropped > 0)
		audit_record(s->audit, "mcp.egress.dropped",
		             gw_fields("server", json_new_string(srv->cfg->name), "count",
		                       json_new_int(e->dropped), NULL));
	e->dropped = 0;
	if (e->watched && e->proc.err_fd >= 0)
		loop_unwatch(s->loop, e->proc.err_fd);
	e->watched = false;
	proc_close(&e->proc);
}

void gw_egress_stop(struct gw_server *srv, int64_t deadline_ms)
{
	struct gw_egress_end end;
	gw_egress_end_begin(srv, &end);
	gw_egress_end_work(srv, &end, deadline_ms);
	gw_egress_end_done(srv, &end);
}

void gw_egress_free(struct gw_egress *e)
{
	proc_close(&e->proc);
	if (e->out_fd >= 0)
		close(e->out_fd);
	e->out_fd = -1;
	ctr_topology_free(&e->topo);
	free(e->proxy_url);
	mg_buf_free(&e->line);
	proc_close(&e->host.proc);
	if (e->host.out_fd >= 0)
		close(e->host.out_fd);
	e->host.out_fd = -1;
	/* a start that failed before its end took the folder: remove it here */
	gw_connect_host_remove_dir(e->host.dir);
	free(e->host.dir);
	free(e->host.sockets);
	mg_buf_free(&e->host.line);
	for (size_t i = 0; e->connect_hosts != NULL && e->connect_hosts[i] != NULL; i++)
		free(e->connect_hosts[i]);
	free(e->connect_hosts);
	free(e->connect_ports);
}
