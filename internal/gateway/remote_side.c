/* A remote server in a session: a socketpair whose one end the bridge
 * (internal/remote) serves on the loop thread, and whose other end is the
 * server's MCP peer, exactly as a container's pipes are. The rest of the
 * gateway cannot tell the two kinds apart (docs/remote.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal/base/cleanup.h"
#include "internal/base/log.h"
#include "internal/base/xalloc.h"
#include "internal/gateway/gateway-internal.h"
#include "internal/remote/remote.h"

/* The connect timeout never exceeds this, nor the start deadline */
#define REMOTE_CONNECT_TIMEOUT_MS 10000

/* Owned by the server from gw_remote_start() to gw_remote_detach(). */
struct gw_remote {
	int bridge_fd;            /* until the loop thread hands it to the bridge */
	struct kc_secret *secret; /* the credential's value, until then */
	struct remote_bridge *bridge;
};

/* On the loop thread: the bridge takes its end of the socketpair. */
static void open_bridge(struct loop *loop, void *data)
{
	struct gw_server *srv = data;
	struct gw_remote *r = srv->remote;
	if (r == NULL || r->bridge_fd < 0)
		return; /* stopped before the loop came to it */
	const struct cfg_server *c = srv->cfg;
	const struct cfg_mcp *m = &srv->sess->cfg->mcp;
	long start_ms = (long)m->start_timeout * 1000;
	struct remote_options opt = {
	    .server = c->name,
	    .url = c->url,
	    .header_name = r->secret != NULL ? c->position_name : NULL,
	    .header_value = r->secret != NULL ? r->secret->bytes : NULL,
	    .header_len = r->secret != NULL ? r->secret->len : 0,
	    .ca_file = c->ca_file,
	    .connect_timeout_ms = start_ms > 0 && start_ms < REMOTE_CONNECT_TIMEOUT_MS
	                              ? start_ms
	                              : REMOTE_CONNECT_TIMEOUT_MS,
	    .request_timeout_ms = (long)m->call_timeout * 1000,
	    .response_max = (size_t)m->line_max,
	};
	struct mg_err *err = NULL;
	int fd = steal_fd(&r->bridge_fd);
	if (remote_bridge_new(loop, &opt, fd, &r->bridge, &err) < 0) {
		/* the peer sees its end close: start-up fails, this says why */
		mg_warn("server %s: %s", c->name, mg_err_msg(err));
		mg_err_free(err);
	}
	/* the bridge has its own copy now */
	kc_secret_free(r->secret);
	r->secret = NULL;
}

int gw_remote_start(struct gw_server *srv, struct mg_err **err)
{
	struct session *s = srv->sess;
	const struct cfg_server *c = srv->cfg;
	if (c->credential != NULL && c->position != CFG_POSITION_HEADER)
		return mg_err_set(err,
		                  "its credential goes in a header only (position header:NAME)");
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return mg_err_sys(err, errno, "socketpair");
	/* the peer watches its input and output separately: two fds, one socket */
	int out_fd = fcntl(sv[0], F_DUPFD_CLOEXEC, 3);
	if (out_fd < 0) {
		int e = errno;
		close(sv[0]);
		close(sv[1]);
		return mg_err_sys(err, e, "dup");
	}
	struct gw_remote *r = xcalloc(1, sizeof(*r));
	r->bridge_fd = sv[1];
	r->secret = steal_pointer(&srv->secret);
	srv->remote = r;
	audit_record(s->audit, "server.start",
	             gw_fields("server", json_new_string(c->name), "transport",
	                       json_new_string("remote"), "url", json_new_string(c->url), NULL));
	loop_post(s->loop, open_bridge, srv);
	cleanup_free char *name = xasprintf("server %s", c->name);
	struct rpc_peer_config pc = gw_server_peer_config(srv, name);
	return rpc_peer_new(sv[0], out_fd, &pc, &srv->launch.peer, err);
}

struct remote_bridge *gw_remote_detach(struct gw_server *srv)
{
	struct gw_remote *r = steal_pointer(&srv->remote);
	if (r == NULL)
		return NULL;
	struct remote_bridge *b = steal_pointer(&r->bridge);
	remote_bridge_detach(b);
	if (r->bridge_fd >= 0)
		close(r->bridge_fd);
	kc_secret_free(r->secret);
	free(r);
	if (srv->state == GW_READY)
		gw_server_set_reason(srv, GW_STOPPED, "server %s stopped at the end of the session",
		                     srv->cfg->name);
	return b;
}
