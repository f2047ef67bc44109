/* notifications/tools/list_changed from a server: list again, check the pin
 * again; a manifest that changed mid-session withdraws that server's tools
 * and tells the client its list changed. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "internal/base/cleanup.h"
#include "internal/base/log.h"
#include "internal/base/xalloc.h"
#include "internal/gateway/gateway-internal.h"

struct relist {
	struct gw_server *srv;
	struct json_value *tools;
	struct strv cursors;
	size_t page;
};

static void relist_free(struct relist *r)
{
	json_free(r->tools);
	strv_free(&r->cursors);
	r->srv->relisting = false;
	free(r);
}

static void relist_send(struct relist *r, const char *cursor);

/* Retiring frees the server's peer, which cannot happen inside one of its
 * callbacks: the state changes now (no new call goes out), the rest after */
static void retire_posted(struct loop *loop, void *data)
{
	(void)loop;
	struct gw_server *srv = data;
	gw_server_retire(srv, NULL);
}

static void retire_soon(struct gw_server *srv, const char *text)
{
	gw_server_set_reason(srv, GW_STOPPED, "%s", text);
	gw_server_withdraw(srv); /* its tools leave the list now */
	loop_post(srv->sess->loop, retire_posted, srv);
}

static void withdraw(struct gw_server *srv, const char *live)
{
	struct session *s = srv->sess;
	audit_record(s->audit, "server.withheld",
	             gw_fields("server", json_new_string(srv->cfg->name), "reason",
	                       json_new_string("changed"), "approved",
	                       json_new_string(srv->cfg->manifest), "live", json_new_string(live),
	                       "during", json_new_string("session"), NULL));
	cleanup_free char *text =
	    xasprintf("server %s's tools are withdrawn: its manifest changed during the session "
	              "(approved %s, live %s); see what changed with `mcpgate review %s`",
	              srv->cfg->name, srv->cfg->manifest, live, srv->cfg->name);
	retire_soon(srv, text);
	gw_client_notice(s, "warning", text);
}

static void on_page(struct rpc_peer *peer, struct rpc_msg *reply, const struct mg_err *why,
                    void *data)
{
	(void)peer;
	struct relist *r = data;
	struct gw_server *srv = r->srv;
	struct mg_err *err = NULL;
	const char *next = NULL;
	int more = -1;
	if (reply != NULL)
		more = mcp_tools_page(r->tools, reply, ++r->page, &r->cursors, &next, &err);
	if (more > 0 && srv->state == GW_READY) {
		relist_send(r, next);
		return;
	}
	if (more == 0 && srv->state == GW_READY) {
		char live[MANIFEST_HASH_LEN];
		if (manifest_hash(r->tools, live, &err) == 0 && strcmp(live, srv->live_hash) != 0)
			withdraw(srv, live);
	} else if (srv->state == GW_READY) {
		/* a list we cannot read is a list we cannot check */
		cleanup_free char *text = xasprintf(
		    "server %s's tools are withdrawn: it said its tools changed, and listing them "
		    "again failed: %s",
		    srv->cfg->name, why != NULL ? mg_err_msg(why) : mg_err_msg(err));
		audit_record(srv->sess->audit, "server.withheld",
		             gw_fields("server", json_new_string(srv->cfg->name), "reason",
		                       json_new_string("relist-failed"), NULL));
		retire_soon(srv, text);
		gw_client_notice(srv->sess, "warning", text);
	}
	mg_err_free(err);
	relist_free(r);
}

static void relist_send(struct relist *r, const char *cursor)
{
	struct gw_server *srv = r->srv;
	struct json_value *params = mcp_cursor_params(cursor);
	int64_t deadline = proc_now_ms() + (int64_t)srv->sess->cfg->mcp.start_timeout * 1000;
	struct mg_err *err = NULL;
	int rc = rpc_peer_send_request(srv->launch.peer, "tools/list", params, deadline, on_page, r,
	                               NULL, &err);
	json_free(params);
	if (rc < 0) {
		mg_warn("server %s: listing again: %s", srv->cfg->name, mg_err_msg(err));
		mg_err_free(err);
		relist_free(r);
	}
}

void gw_server_relist(struct gw_server *srv)
{
	if (srv->relisting || srv->state != GW_READY || srv->launch.peer == NULL)
		return; /* the list being read will see the change too */
	audit_record_by(srv->sess->audit, srv->cfg->name, "server.list_changed",
	                gw_fields("server", json_new_string(srv->cfg->name), NULL));
	struct relist *r = xcalloc(1, sizeof(*r));
	r->srv = srv;
	r->tools = json_new_array();
	srv->relisting = true;
	relist_send(r, NULL);
}
