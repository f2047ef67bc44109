/* One contained server: its start-up thread (image check, run, initialize,
 * tools/list, each under the start deadline), its stderr, its end. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal/base/cleanup.h"
#include "internal/base/log.h"
#include "internal/base/xalloc.h"
#include "internal/gateway/gateway-internal.h"

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
	while (srv->err_fd >= 0) {
		ssize_t n = read(srv->err_fd, chunk, sizeof(chunk));
		if (n > 0) {
			stderr_keep(srv, chunk, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		loop_unwatch(srv->sess->loop, srv->err_fd);
		close(srv->err_fd);
		srv->err_fd = -1;
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
	if (srv->err_fd < 0)
		return;
	struct mg_err *err = NULL;
	if (loop_watch(loop, srv->err_fd, EPOLLIN, on_stderr, srv, &err) < 0) {
		mg_warn("server %s: cannot watch its stderr: %s", srv->cfg->name, mg_err_msg(err));
		mg_err_free(err);
	}
}

char *gw_server_stderr_last_line(struct gw_server *srv)
{
	pthread_mutex_lock(&srv->err_lock);
	const char *t = mg_buf_str(&srv->err_tail);
	size_t end = srv->err_tail.len;
	while (end > 0 && (t[end - 1] == '\n' || t[end - 1] == '\r' || t[end - 1] == ' '))
		end--;
	size_t start = end;
	while (start > 0 && t[start - 1] != '\n')
		start--;
	if (end - start > 300)
		start = end - 300;
	char *line = end > start ? xstrndup(t + start, end - start) : NULL;
	pthread_mutex_unlock(&srv->err_lock);
	return line;
}

static struct json_value *stderr_json(struct gw_server *srv)
{
	pthread_mutex_lock(&srv->err_lock);
	/* the kept bytes may cut a UTF-8 sequence: only valid text is recorded */
	struct json_value *v = json_new_stringn(
	    srv->err_tail.data != NULL ? srv->err_tail.data : "", srv->err_tail.len);
	pthread_mutex_unlock(&srv->err_lock);
	return v != NULL ? v : json_new_string("(stderr is not valid UTF-8)");
}

/* ---- start-up, on the server's own thread ------------------------------- */

static struct rpc_peer_config peer_config(struct gw_server *srv, char *name)
{
	struct rpc_peer_config pc = {
	    .name = name,
	    .line_max = (size_t)srv->sess->cfg->mcp.line_max,
	    .on_request = gw_server_on_request,
	    .on_notification = gw_server_on_notification,
	    .on_bad_line = gw_server_on_bad_line,
	    .on_closed = gw_server_on_closed,
	    .data = srv,
	};
	return pc;
}

static int start_process(struct gw_server *srv, struct mg_err **err)
{
	struct session *s = srv->sess;
	const struct cfg_server *c = srv->cfg;
	struct strv envp = STRV_INIT;
	struct ctr_run_spec spec = {
	    .server = c,
	    .session = s->id,
	    .owner = s->owner,
	    .workspace = s->workspace,
	    .network = NULL,
	};
	if (s->driver->ops->run_command(s->driver, &spec, &srv->argv, &envp, err) < 0)
		return -1;
	struct proc_spec ps = {
	    .path = srv->argv.v[0],
	    .argv = (const char *const *)srv->argv.v,
	    .envp = (const char *const *)strv_array(&envp),
	    .stdio = {{PROC_STDIO_PIPE, -1, false},
	              {PROC_STDIO_PIPE, -1, false},
	              {PROC_STDIO_PIPE, -1, true}},
	};
	int r = proc_spawn(&ps, &srv->proc, err);
	strv_free(&envp);
	if (r < 0)
		return -1;
	struct json_value *argv = json_new_array();
	for (size_t i = 0; i < srv->argv.n; i++)
		json_array_push(argv, json_new_string(srv->argv.v[i]));
	audit_record(s->audit, "server.start",
	             gw_fields("server", json_new_string(c->name), "container",
	                       json_new_string(srv->container), "argv", argv, "pid",
	                       json_new_int(srv->proc.pid), NULL));
	srv->err_fd = srv->proc.err_fd;
	srv->proc.err_fd = -1;
	loop_post(s->loop, gw_server_watch_stderr, srv);

	cleanup_free char *name = xasprintf("server %s", c->name);
	struct rpc_peer_config pc = peer_config(srv, name);
	int in = srv->proc.out_fd, out = srv->proc.in_fd;
	srv->proc.out_fd = srv->proc.in_fd = -1; /* the peer owns them now */
	return rpc_peer_new(in, out, &pc, &srv->peer, err);
}

/* After a failed start: make sure nothing of it runs. */
static void start_cleanup(struct gw_server *srv)
{
	struct session *s = srv->sess;
	rpc_peer_free(srv->peer);
	srv->peer = NULL;
	if (srv->proc.pid <= 0)
		return;
	int status = 0;
	/* it may have ended on its own: that exit status is the reason */
	if (proc_wait(&srv->proc, proc_now_ms() + 300, &status, NULL) < 0) {
		s->driver->ops->remove(s->driver, srv->container, NULL);
		if (proc_wait(&srv->proc, proc_now_ms() + 5000, &status, NULL) < 0)
			proc_stop(&srv->proc, 0, &status);
	}
	srv->exit_status = status;
	srv->exit_known = true;
}

void *gw_server_start_thread(void *arg)
{
	struct gw_server *srv = arg;
	struct session *s = srv->sess;
	const struct cfg_server *c = srv->cfg;
	struct mg_err *err = NULL;
	int64_t deadline = proc_now_ms() + (int64_t)s->cfg->mcp.start_timeout * 1000;
	srv->start_ms = proc_now_ms();

	int present = s->driver->ops->image_present(s->driver, c->image, &err);
	if (present <= 0) {
		srv->start_error = present < 0
		                       ? xasprintf("cannot check its image: %s", mg_err_msg(err))
		                       : xasprintf("image %s is not present; run: mcpgate pull %s",
		                                   c->image, c->name);
		goto done;
	}
	if (start_process(srv, &err) < 0 ||
	    mcp_initialize(srv->peer, deadline, NULL, &srv->info, &err) < 0 ||
	    mcp_list_tools(srv->peer, deadline, &srv->tools, &err) < 0) {
		srv->start_error = xstrdup(mg_err_msg(err));
		start_cleanup(srv);
		goto done;
	}
	srv->ready_ms = proc_now_ms();
done:
	mg_err_free(err);
	loop_post(s->loop, gw_server_started, srv);
	return NULL;
}

/* ---- on the loop thread ------------------------------------------------- */

static void on_server_input(struct loop *loop, int fd, uint32_t events, void *data);
static void on_server_output(struct loop *loop, int fd, uint32_t events, void *data);

static void exit_reason(struct gw_server *srv, int status)
{
	char why[PROC_STATUS_MAX];
	proc_status_describe(status, why, sizeof(why));
	cleanup_free char *last = gw_server_stderr_last_line(srv);
	gw_server_set_reason(srv, GW_EXITED, "server %s %s%s%s", srv->cfg->name, why,
	                     last != NULL ? "; its last words: " : "", last != NULL ? last : "");
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

static void on_child_exit(struct loop *loop, pid_t pid, int status, void *data)
{
	(void)loop;
	(void)pid;
	struct gw_server *srv = data;
	srv->proc.pid = -1; /* reaped by the loop */
	stderr_drain(srv);
	if (srv->state == GW_READY)
		exit_reason(srv, status);
	audit_record(srv->sess->audit, "server.exit",
	             gw_fields("server", json_new_string(srv->cfg->name), "status",
	                       json_new_int(WIFEXITED(status) ? WEXITSTATUS(status)
	                                                      : 128 + WTERMSIG(status)),
	                       "reason", json_new_string(srv->reason != NULL ? srv->reason : ""),
	                       "stderr", stderr_json(srv), NULL));
	if (srv->peer != NULL) {
		loop_unwatch(srv->sess->loop, rpc_peer_in_fd(srv->peer));
		loop_unwatch(srv->sess->loop, rpc_peer_out_fd(srv->peer));
		rpc_peer_free(srv->peer); /* its pending calls learn the reason */
		srv->peer = NULL;
	}
	answer_orphans(srv);
	gw_session_update_io(srv->sess);
}

void gw_server_started(struct loop *loop, void *data)
{
	struct gw_server *srv = data;
	struct session *s = srv->sess;
	pthread_join(srv->thread, NULL);
	srv->thread_started = false;
	if (srv->start_error != NULL) {
		stderr_drain(srv);
		cleanup_free char *last = gw_server_stderr_last_line(srv);
		char why[PROC_STATUS_MAX] = "";
		if (srv->exit_known)
			proc_status_describe(srv->exit_status, why, sizeof(why));
		gw_server_set_reason(srv, GW_UNAVAILABLE, "server %s is unavailable: %s%s%s%s%s",
		                     srv->cfg->name, srv->start_error, why[0] ? " (" : "", why,
		                     why[0] ? ")" : "", "");
		if (last != NULL) {
			char *r = xasprintf("%s; its last words: %s", srv->reason, last);
			free(srv->reason);
			srv->reason = r;
		}
		audit_record(s->audit, "server.unavailable",
		             gw_fields("server", json_new_string(srv->cfg->name), "reason",
		                       json_new_string(srv->reason), "stderr", stderr_json(srv),
		                       NULL));
		gw_client_notice(s, "warning", srv->reason);
	} else {
		srv->state = GW_READY;
		struct mg_err *err = NULL;
		if (loop_watch(loop, rpc_peer_in_fd(srv->peer), EPOLLIN, on_server_input, srv,
		               &err) < 0 ||
		    (rpc_peer_out_fd(srv->peer) != rpc_peer_in_fd(srv->peer) &&
		     loop_watch(loop, rpc_peer_out_fd(srv->peer), 0, on_server_output, srv, &err) <
		         0) ||
		    loop_watch_child(loop, srv->proc.pid, srv->proc.pidfd, on_child_exit, srv) <
		        0) {
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
		              json_new_int(srv->ready_ms - srv->start_ms), NULL));
	}
	if (--s->starting == 0)
		gw_session_register(s);
	gw_session_update_io(s);
}

static void on_server_input(struct loop *loop, int fd, uint32_t events, void *data)
{
	(void)loop;
	(void)fd;
	(void)events;
	struct gw_server *srv = data;
	struct mg_err *err = NULL;
	if (srv->peer == NULL)
		return;
	int r = rpc_peer_read(srv->peer, &err);
	if (r == RPC_READ_CLOSED || r < 0) {
		loop_unwatch(srv->sess->loop, rpc_peer_in_fd(srv->peer));
		if (r < 0)
			mg_debug("server %s: %s", srv->cfg->name, mg_err_msg(err));
	}
	mg_err_free(err);
	gw_session_update_io(srv->sess);
}

static void on_server_output(struct loop *loop, int fd, uint32_t events, void *data)
{
	(void)loop;
	(void)fd;
	(void)events;
	struct gw_server *srv = data;
	if (srv->peer != NULL && rpc_peer_flush(srv->peer, NULL) < 0)
		loop_modify(srv->sess->loop, rpc_peer_out_fd(srv->peer), 0, NULL);
	gw_session_update_io(srv->sess);
}

/* ---- the end ------------------------------------------------------------ */

void gw_server_stop(struct gw_server *srv, int64_t deadline_ms)
{
	struct session *s = srv->sess;
	if (srv->thread_started) {
		pthread_join(srv->thread, NULL);
		srv->thread_started = false;
	}
	if (srv->peer != NULL) {
		loop_unwatch(s->loop, rpc_peer_in_fd(srv->peer));
		if (rpc_peer_out_fd(srv->peer) != rpc_peer_in_fd(srv->peer))
			loop_unwatch(s->loop, rpc_peer_out_fd(srv->peer));
		/* closing its input asks it to end; many servers ignore that */
		rpc_peer_free(srv->peer);
		srv->peer = NULL;
	}
	if (srv->proc.pid > 0) {
		loop_unwatch_child(s->loop, srv->proc.pid);
		int status = 0;
		bool forced = false;
		if (proc_wait(&srv->proc, deadline_ms, &status, NULL) < 0) {
			forced = true;
			struct mg_err *err = NULL;
			if (s->driver->ops->remove(s->driver, srv->container, &err) < 0) {
				mg_warn("server %s: %s", srv->cfg->name, mg_err_msg(err));
				mg_err_free(err);
			}
			if (proc_wait(&srv->proc, proc_now_ms() + 5000, &status, NULL) < 0)
				proc_stop(&srv->proc, 0, &status);
		}
		stderr_drain(srv);
		if (srv->state == GW_READY)
			gw_server_set_reason(srv, GW_STOPPED,
			                     "server %s stopped at the end of the session",
			                     srv->cfg->name);
		audit_record(s->audit, "server.exit",
		             gw_fields("server", json_new_string(srv->cfg->name), "status",
		                       json_new_int(WIFEXITED(status) ? WEXITSTATUS(status)
		                                                      : 128 + WTERMSIG(status)),
		                       "forced", json_new_bool(forced), "reason",
		                       json_new_string(srv->reason != NULL ? srv->reason : ""),
		                       "stderr", stderr_json(srv), NULL));
	}
	if (srv->err_fd >= 0) {
		loop_unwatch(s->loop, srv->err_fd);
		close(srv->err_fd);
		srv->err_fd = -1;
	}
	proc_close(&srv->proc);
}

void gw_server_free(struct gw_server *srv)
{
	rpc_peer_free(srv->peer);
	srv->peer = NULL;
	proc_close(&srv->proc);
	if (srv->err_fd >= 0)
		close(srv->err_fd);
	free(srv->reason);
	free(srv->container);
	free(srv->start_error);
	strv_free(&srv->argv);
	mg_buf_free(&srv->err_tail);
	pthread_mutex_destroy(&srv->err_lock);
	mcp_server_info_free(&srv->info);
	json_free(srv->tools);
}
