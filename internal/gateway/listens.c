/* subscriptions/listen (MCP 2026-07-28): a client's long request on which
 * mcpgate sends the list changes it asked for, each tagged with the
 * request's id, until the client cancels it or the session ends
 * (docs/2026-12-01-protocol-eras.md). */
#include <stdlib.h>
#include <string.h>

#include "internal/base/cleanup.h"
#include "internal/base/strv.h"
#include "internal/base/xalloc.h"
#include "internal/gateway/gateway-internal.h"

/* At most this many open at once per session, and URIs per listen */
#define LISTENS_MAX      16
#define LISTEN_URIS_MAX  64
#define LISTEN_URI_BYTES 2048

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
	struct strv uris; /* the resource URIs it subscribed to, honoured */
	struct gw_listen *next;
};

/* Whether a listen other than l holds uri */
static bool held_elsewhere(const struct session *s, const struct gw_listen *l, const char *uri)
{
	for (const struct gw_listen *o = s->listens; o != NULL; o = o->next)
		if (o != l && strv_find(&o->uris, uri) >= 0)
			return true;
	return false;
}

static void listen_free(struct gw_listen *l)
{
	json_free(l->id);
	free(l->key);
	strv_free(&l->uris);
	free(l);
}

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
		for (size_t u = 0; typed && k == NKINDS && u < m->value->u.arr.len; u++) {
			const struct json_value *uri = m->value->u.arr.items[u];
			typed = uri->kind == JSON_STRING && uri->u.str.len <= LISTEN_URI_BYTES &&
			        strlen(uri->u.str.ptr) == uri->u.str.len;
		}
		if (typed && k == NKINDS && m->value->u.arr.len > LISTEN_URIS_MAX) {
			gw_client_error(s, msg->id, RPC_INVALID_PARAMS,
			                "subscriptions/listen: notifications.resourceSubscriptions "
			                "holds more than %d URIs",
			                LISTEN_URIS_MAX);
			free(l);
			return;
		}
		if (!known || !typed) {
			gw_client_error(
			    s, msg->id, RPC_INVALID_PARAMS,
			    known ? "subscriptions/listen: notifications.%.64s must be %s"
			          : "subscriptions/listen: notifications.%.64s is not a "
			            "filter of MCP 2026-07-28%s",
			    m->key,
			    known
			        ? (k < NKINDS ? "true or false"
			                      : "an array of URIs (strings of at most 2048 bytes)")
			        : "");
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
	/* what mcpgate will send: the list changes asked for, and updates of
	 * the resources whose server takes a subscription (the others are left
	 * out, so the client knows) */
	struct json_value *agreed = json_new_object();
	for (size_t k = 0; k < NKINDS; k++)
		if (l->wants[k])
			json_object_set(agreed, kinds[k].filter, json_new_bool(true));
	const struct json_value *uris = json_get(filter, "resourceSubscriptions");
	if (uris != NULL) {
		struct json_value *honoured = json_new_array();
		for (size_t u = 0; u < uris->u.arr.len; u++) {
			const char *uri = uris->u.arr.items[u]->u.str.ptr;
			if (strv_find(&l->uris, uri) >= 0)
				continue;
			/* one subscription upstream per URI, however many listens */
			if (held_elsewhere(s, l, uri) || gw_relay_listen_subscribe(s, uri, true)) {
				strv_push(&l->uris, uri);
				json_array_push(honoured, json_new_string(uri));
			}
		}
		json_object_set(agreed, "resourceSubscriptions", honoured);
	}
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
		for (size_t u = 0; u < l->uris.n; u++)
			if (!held_elsewhere(s, l, l->uris.v[u]))
				gw_relay_listen_subscribe(s, l->uris.v[u], false);
		audit_record(s->audit, "client.listen.end",
		             gw_fields("reason", json_new_string("cancelled by the client"), NULL));
		listen_free(l);
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

bool gw_listens_want(const struct session *s, enum gw_listen_kind kind)
{
	for (const struct gw_listen *l = s->listens; l != NULL; l = l->next)
		if (l->wants[kind])
			return true;
	return false;
}

void gw_listens_updated(struct session *s, const char *uri)
{
	if (s->stopping || s->client == NULL || uri == NULL)
		return;
	for (const struct gw_listen *l = s->listens; l != NULL; l = l->next) {
		if (strv_find(&l->uris, uri) < 0)
			continue;
		struct json_value *p = tagged(l);
		json_object_set(p, "uri", json_new_string(uri));
		rpc_peer_send_notification(s->client, "notifications/resources/updated", p, NULL);
		json_free(p);
	}
}

void gw_listens_free(struct session *s)
{
	while (s->listens != NULL) {
		struct gw_listen *l = s->listens;
		s->listens = l->next;
		listen_free(l);
	}
}
