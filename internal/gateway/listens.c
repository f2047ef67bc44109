/* subscriptions/listen (MCP 2026-07-28): a client's long request on which
 * mcpgate sends the list changes it asked for, each tagged with the
 * request's id, until the client cancels it or the session ends
 * (docs/2026-12-01-protocol-eras.md). */
#include <stdlib.h>
#include <string.h>

#include "internal/base/cleanup.h"
#include "internal/base/xalloc.h"
#include "internal/gateway/gateway-internal.h"

/* At most this many open at once per session */
#define LISTENS_MAX 16

/* What a listen may ask for, as the filter names it, and what mcpgate sends */
static const struct {
	const char *filter;
	const char *method;
	enum gw_listen_kind kind;
} kinds[] = {
    {"toolsListChanged", "notifications/tools/list_changed", GW_LISTEN_TOOLS},
    {"promptsListChanged", "notifications/prompts/list_changed", GW_LISTEN_PROMPTS},
    {"resourcesListChanged", "notifications/resources/list_changed", GW_LISTEN_RESOURCES},
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

struct gw_listen {
	struct json_value *id; /* the client's, a copy */
	char *key;             /* rpc_id_key(id) */
	bool wants[NKINDS];
	struct gw_listen *next;
};

static struct json_value *tagged(const struct gw_listen *l)
{
	return gw_fields("_meta", gw_fields(MCP_META_SUBSCRIPTION_ID, json_copy(l->id), NULL),
	                 NULL);
}

void gw_listen_open(struct session *s, struct rpc_msg *msg)
{
	if (s->era != GW_ERA_MODERN) {
		gw_client_error(
		    s, msg->id, RPC_METHOD_NOT_FOUND,
		    "subscriptions/listen belongs to MCP %s; this connection speaks %s, "
		    "whose notifications need no request",
		    MCP_PROTOCOL_MODERN,
		    s->client_version != NULL ? s->client_version : "2025-11-25");
		return;
	}
	const struct json_value *filter = json_get(msg->params, "notifications");
	if (filter == NULL || filter->kind != JSON_OBJECT) {
		gw_client_error(s, msg->id, RPC_INVALID_PARAMS,
		                "subscriptions/listen: params.notifications must be an object "
		                "(toolsListChanged, promptsListChanged, resourcesListChanged, "
		                "resourceSubscriptions)");
		return;
	}
	struct gw_listen *l = xcalloc(1, sizeof(*l));
	for (size_t i = 0; i < filter->u.obj.len; i++) {
		const struct json_member *m = &filter->u.obj.items[i];
		size_t k = 0;
		while (k < NKINDS && strcmp(kinds[k].filter, m->key) != 0)
			k++;
		bool known = k < NKINDS || strcmp(m->key, "resourceSubscriptions") == 0;
		bool typed =
		    k < NKINDS ? m->value->kind == JSON_BOOL : m->value->kind == JSON_ARRAY;
		if (!known || !typed) {
			gw_client_error(
			    s, msg->id, RPC_INVALID_PARAMS,
			    known ? "subscriptions/listen: notifications.%.64s must be %s"
			          : "subscriptions/listen: notifications.%.64s is not a "
			            "filter of MCP 2026-07-28%s",
			    m->key,
			    known ? (k < NKINDS ? "true or false" : "an array of URIs") : "");
			free(l);
			return;
		}
		if (k < NKINDS)
			l->wants[k] = m->value->u.boolean;
	}
	size_t open = 0;
	for (const struct gw_listen *o = s->listens; o != NULL; o = o->next)
		open++;
	cleanup_free char *key = rpc_id_key(msg->id);
	for (const struct gw_listen *o = s->listens; o != NULL && key != NULL; o = o->next)
		if (strcmp(o->key, key) == 0) {
			gw_client_error(
			    s, msg->id, RPC_INVALID_REQUEST,
			    "subscriptions/listen: a listen with this id is open already");
			free(l);
			return;
		}
	if (open >= LISTENS_MAX || key == NULL) {
		gw_client_error(s, msg->id, RPC_INVALID_REQUEST,
		                key == NULL
		                    ? "subscriptions/listen needs an id"
		                    : "subscriptions/listen: %d are open already; cancel one",
		                LISTENS_MAX);
		free(l);
		return;
	}
	l->id = json_copy(msg->id);
	l->key = xstrdup(key);
	l->next = s->listens;
	s->listens = l;
	/* what mcpgate will send: the list changes asked for, and no resource
	 * subscriptions (resourceSubscriptions is not honoured: left out) */
	struct json_value *agreed = json_new_object();
	for (size_t k = 0; k < NKINDS; k++)
		if (l->wants[k])
			json_object_set(agreed, kinds[k].filter, json_new_bool(true));
	struct json_value *p = tagged(l);
	json_object_set(p, "notifications", agreed);
	audit_record(s->audit, "client.listen",
	             gw_fields("notifications", json_copy(agreed), NULL));
	rpc_peer_send_notification(s->client, "notifications/subscriptions/acknowledged", p, NULL);
	json_free(p);
}

bool gw_listen_cancel(struct session *s, const char *key)
{
	for (struct gw_listen **pp = &s->listens; *pp != NULL; pp = &(*pp)->next) {
		struct gw_listen *l = *pp;
		if (strcmp(l->key, key) != 0)
			continue;
		*pp = l->next;
		json_free(l->id);
		free(l->key);
		free(l);
		return true;
	}
	return false;
}

void gw_listens_notify(struct session *s, enum gw_listen_kind kind)
{
	if (s->stopping || s->client == NULL)
		return;
	for (const struct gw_listen *l = s->listens; l != NULL; l = l->next) {
		if (!l->wants[kind])
			continue;
		struct json_value *p = tagged(l);
		rpc_peer_send_notification(s->client, kinds[kind].method, p, NULL);
		json_free(p);
	}
}

void gw_listens_free(struct session *s)
{
	while (s->listens != NULL) {
		struct gw_listen *l = s->listens;
		s->listens = l->next;
		json_free(l->id);
		free(l->key);
		free(l);
	}
}
