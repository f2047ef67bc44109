/* Requests that wait, and for what (docs/2026-12-02-never-wait.md). Nothing
 * waits for the session's servers as a whole any more:
 *   - a call, a read, a prompt or a completion for a server still starting
 *     (or not started yet, start = "lazy", which starts it now) waits for
 *     that server's start to end, which its start deadline bounds;
 *   - a list (tools, resources, prompts) is answered at once with what is
 *     ready when the client can hear that the list changed
 *     (list_changed, or a 2026-07-28 listen); a client that cannot waits
 *     until every server's first start ended, or GW_LIST_WAIT_MS.
 * What waited is dispatched again as it came, once its wait is over. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "internal/base/cleanup.h"
#include "internal/base/xalloc.h"
#include "internal/gateway/gateway-internal.h"

bool gw_all_settled(const struct session *s)
{
	for (size_t i = 0; i < s->nservers; i++)
		if (!s->servers[i].settled)
			return false;
	return true;
}

bool gw_client_hears_changes(const struct session *s, enum gw_listen_kind kind)
{
	if (s->era == GW_ERA_MODERN)
		return gw_listens_want(s, kind);
	return s->answered_initialize;
}

static void arm_list_timer(struct session *s);

static void dispatch_from(struct session *s, size_t i)
{
	struct gw_waiting w = s->waiting[i];
	memmove(&s->waiting[i], &s->waiting[i + 1], (s->nwaiting - i - 1) * sizeof(s->waiting[0]));
	s->nwaiting--;
	memset(&s->waiting[s->nwaiting], 0, sizeof(s->waiting[0]));
	gw_client_dispatch(s, &w.msg);
	rpc_msg_free(&w.msg);
}

/* Dispatch again, in the order they came, what waited for srv (when not
 * NULL), and the lists: all of them with lists, else those whose bound
 * passed by now; what is dispatched waits no more for what it waited for */
static void dispatch_waiting(struct session *s, struct gw_server *srv, bool lists, int64_t now)
{
	bool was = s->no_wait;
	for (size_t i = 0; i < s->nwaiting && !s->stopping;) {
		struct gw_waiting *w = &s->waiting[i];
		bool go = w->srv != NULL ? w->srv == srv : lists || w->deadline_ms <= now;
		if (!go) {
			i++;
			continue;
		}
		/* a list past its bound is answered with what is ready */
		s->no_wait = was || w->srv == NULL;
		dispatch_from(s, i);
	}
	s->no_wait = was;
}

static void on_list_timer(struct loop *loop, void *data)
{
	(void)loop;
	struct session *s = data;
	s->list_timer = NULL;
	dispatch_waiting(s, NULL, false, proc_now_ms());
	arm_list_timer(s);
}

static void arm_list_timer(struct session *s)
{
	int64_t first = 0;
	for (size_t i = 0; i < s->nwaiting; i++)
		if (s->waiting[i].srv == NULL && (first == 0 || s->waiting[i].deadline_ms < first))
			first = s->waiting[i].deadline_ms;
	if (s->list_timer != NULL) {
		loop_timer_cancel(s->loop, s->list_timer);
		s->list_timer = NULL;
	}
	if (first != 0) {
		int64_t delay = first - proc_now_ms();
		s->list_timer = loop_timer_add(s->loop, delay > 0 ? delay : 0, on_list_timer, s);
	}
}

bool gw_wait(struct session *s, struct rpc_msg *msg, struct gw_server *srv)
{
	if (s->nwaiting == GW_WAITING_MAX) {
		gw_client_error(s, msg->id, RPC_SERVER_ERROR,
		                "%d requests wait for servers that are starting; ask again",
		                GW_WAITING_MAX);
		return false;
	}
	if (s->waiting == NULL)
		s->waiting = xcalloc(GW_WAITING_MAX, sizeof(*s->waiting));
	struct gw_waiting *w = &s->waiting[s->nwaiting++];
	rpc_msg_move(&w->msg, msg);
	w->srv = srv;
	w->deadline_ms = srv == NULL ? proc_now_ms() + GW_LIST_WAIT_MS : 0;
	if (srv == NULL)
		arm_list_timer(s);
	else if (srv->state == GW_IDLE)
		gw_server_start(srv); /* start = "lazy": its first use starts it */
	return true;
}

void gw_wait_starts(struct session *s, struct rpc_msg *msg)
{
	if (!gw_wait(s, msg, NULL))
		return;
	/* bounded as a call's wait is, by the start deadline */
	struct gw_waiting *w = &s->waiting[s->nwaiting - 1];
	w->deadline_ms =
	    proc_now_ms() + (int64_t)s->cfg->mcp.start_timeout * 1000 + GW_START_GRACE_MS;
	arm_list_timer(s);
}

void gw_waiting_settled(struct session *s, struct gw_server *srv)
{
	/* in the order they came: what waited for srv, and once every first
	 * start ended, the lists too */
	dispatch_waiting(s, srv, gw_all_settled(s), proc_now_ms());
	arm_list_timer(s);
}

void gw_waiting_overdue(struct session *s, struct gw_server *srv)
{
	bool was = s->no_wait;
	s->no_wait = true;
	dispatch_waiting(s, srv, false, 0);
	s->no_wait = was;
}

bool gw_waiting_cancel(struct session *s, const char *key)
{
	for (size_t i = 0; i < s->nwaiting; i++) {
		cleanup_free char *k = rpc_id_key(s->waiting[i].msg.id);
		if (k == NULL || strcmp(k, key) != 0)
			continue;
		const struct rpc_msg *m = &s->waiting[i].msg;
		if (strcmp(m->method, "tools/call") == 0) {
			const char *tool = json_get_string(m->params, "name");
			audit_record(
			    s->audit, "tool.call",
			    gw_fields("tool", json_new_string(tool != NULL ? tool : ""), "outcome",
			              json_new_string("cancelled"), "detail",
			              json_new_string("by the client, while its server started"),
			              NULL));
		}
		rpc_msg_free(&s->waiting[i].msg);
		memmove(&s->waiting[i], &s->waiting[i + 1],
		        (s->nwaiting - i - 1) * sizeof(s->waiting[0]));
		s->nwaiting--;
		memset(&s->waiting[s->nwaiting], 0, sizeof(s->waiting[0]));
		arm_list_timer(s);
		return true;
	}
	return false;
}

void gw_waiting_free(struct session *s)
{
	for (size_t i = 0; i < s->nwaiting; i++)
		rpc_msg_free(&s->waiting[i].msg);
	free(s->waiting);
	s->waiting = NULL;
	s->nwaiting = 0;
}
