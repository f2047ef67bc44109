/* The two eras of MCP a client may speak to mcpgate: 2025-11-25 and earlier
 * (an initialize handshake, then a session) and 2026-07-28 (no handshake:
 * every request carries its version, capabilities and log level in _meta).
 * The first request decides; docs/2026-12-01-protocol-eras.md. The servers
 * behind mcpgate speak the old era whatever the client speaks: what crosses
 * is translated here. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/base/cleanup.h"
#include "internal/base/xalloc.h"
#include "internal/gateway/gateway-internal.h"

static const char *const log_levels[] = {"debug", "info",     "notice", "warning",
                                         "error", "critical", "alert",  "emergency"};
#define LOG_LEVELS (sizeof(log_levels) / sizeof(log_levels[0]))

int gw_log_level_rank(const char *level)
{
	for (size_t i = 0; level != NULL && i < LOG_LEVELS; i++)
		if (strcmp(level, log_levels[i]) == 0)
			return (int)i;
	return -1;
}

const char *gw_log_level_name(int rank)
{
	return rank >= 0 && (size_t)rank < LOG_LEVELS ? log_levels[rank] : NULL;
}

static const struct json_value *request_meta(const struct rpc_msg *msg)
{
	const struct json_value *meta = json_get(msg->params, "_meta");
	return meta != NULL && meta->kind == JSON_OBJECT ? meta : NULL;
}

bool gw_era_claims_modern(const struct rpc_msg *msg)
{
	if (strcmp(msg->method, "initialize") == 0)
		return false; /* the old era's opening, whatever its _meta says */
	return strcmp(msg->method, "server/discover") == 0 ||
	       json_get(request_meta(msg), MCP_META_PROTOCOL_VERSION) != NULL;
}

/* The versions mcpgate serves, newest first: 2026-07-28 per request, the
 * others through initialize */
static struct json_value *supported_versions(void)
{
	struct json_value *v = json_new_array();
	json_array_push(v, json_new_string(MCP_PROTOCOL_MODERN));
	for (size_t i = 0; mcp_protocol_versions[i] != NULL; i++)
		json_array_push(v, json_new_string(mcp_protocol_versions[i]));
	return v;
}

int gw_era_admit(struct session *s, const struct rpc_msg *msg)
{
	const char *m = msg->method;
	if (msg->params != NULL && msg->params->kind != JSON_OBJECT) {
		gw_client_error(s, msg->id, RPC_INVALID_PARAMS, "%.64s: params must be an object",
		                m);
		return -1;
	}
	const struct json_value *meta = request_meta(msg);
	const struct json_value *version = json_get(meta, MCP_META_PROTOCOL_VERSION);
	if (version == NULL || version->kind != JSON_STRING) {
		gw_client_error(s, msg->id, RPC_INVALID_PARAMS,
		                "%.64s: params._meta[\"" MCP_META_PROTOCOL_VERSION
		                "\"] must be a string: "
		                "MCP %s carries the protocol version on every request",
		                m, MCP_PROTOCOL_MODERN);
		return -1;
	}
	if (strcmp(version->u.str.ptr, MCP_PROTOCOL_MODERN) != 0 ||
	    strlen(version->u.str.ptr) != version->u.str.len) {
		struct json_value *data =
		    gw_fields("supported", supported_versions(), "requested",
		              json_new_stringn(version->u.str.ptr, version->u.str.len), NULL);
		gw_client_error_data(s, msg->id, RPC_UNSUPPORTED_PROTOCOL_VERSION, data,
		                     "Unsupported protocol version \"%.64s\": mcpgate serves %s "
		                     "per request, and %s through initialize",
		                     version->u.str.ptr, MCP_PROTOCOL_MODERN, mcp_versions_text());
		json_free(data);
		return -1;
	}
	const struct json_value *caps = json_get(meta, MCP_META_CLIENT_CAPS);
	if (caps == NULL || caps->kind != JSON_OBJECT) {
		/* 2026-07-28 requires it on every request (the envelope) */
		gw_client_error(s, msg->id, RPC_INVALID_PARAMS,
		                "%.64s: params._meta[\"" MCP_META_CLIENT_CAPS
		                "\"] must be an object (every 2026-07-28 request carries it; {} "
		                "for none)",
		                m);
		return -1;
	}
	const struct json_value *level = json_get(meta, MCP_META_LOG_LEVEL);
	int rank = -1;
	if (level != NULL) {
		rank = gw_log_level_rank(json_get_string(meta, MCP_META_LOG_LEVEL));
		if (rank < 0) {
			gw_client_error(s, msg->id, RPC_INVALID_PARAMS,
			                "%.64s: params._meta[\"" MCP_META_LOG_LEVEL
			                "\"] must be one of "
			                "debug, info, notice, warning, error, critical, alert or "
			                "emergency",
			                m);
			return -1;
		}
	}
	s->era = GW_ERA_MODERN;
	/* capabilities hold for this request only: none is inferred from another */
	json_free(s->client_caps);
	s->client_caps = caps != NULL ? json_copy(caps) : json_new_object();
	s->request_log_rank = rank;
	return 0;
}

const char *gw_era_removed(const char *method)
{
	static const struct {
		const char *method, *why;
	} removed[] = {
	    {"initialize", "this connection speaks 2026-07-28 (its first request did); initialize "
	                   "belongs to 2025-11-25 and earlier: open a new connection for those"},
	    {"ping", "2026-07-28 has no ping"},
	    {"logging/setLevel",
	     "2026-07-28 sets the level per request, in params._meta[\"" MCP_META_LOG_LEVEL "\"]"},
	    {"resources/subscribe", "2026-07-28 subscribes through subscriptions/listen "
	                            "(its resourceSubscriptions)"},
	    {"resources/unsubscribe", "2026-07-28 subscribes through subscriptions/listen "
	                              "(its resourceSubscriptions): cancel the listen"},
	};
	for (size_t i = 0; i < sizeof(removed) / sizeof(removed[0]); i++)
		if (strcmp(method, removed[i].method) == 0)
			return removed[i].why;
	return NULL;
}

static struct json_value *server_info(void)
{
	return gw_fields("name", json_new_string("mcpgate"), "version", json_new_string(GW_VERSION),
	                 NULL);
}

void gw_era_cacheable(const struct session *s, struct json_value *result, int64_t ttl_ms)
{
	if (s->era != GW_ERA_MODERN)
		return;
	json_object_set(result, "ttlMs", json_new_int(ttl_ms));
	/* what a list holds depends on this person's mcp.toml and on what this
	 * client can ask: never for a shared cache */
	json_object_set(result, "cacheScope", json_new_string("private"));
}

/* a list whose changes subscriptions/listen delivers (listens.c) */
static struct json_value *listed(void)
{
	return gw_fields("listChanged", json_new_bool(true), NULL);
}

void gw_era_discover(struct session *s, const struct json_value *id)
{
	struct json_value *result = gw_fields(
	    "supportedVersions", supported_versions(), "capabilities",
	    gw_fields("tools", listed(), "prompts", listed(), "resources", listed(), "logging",
	              json_new_object(), "completions", json_new_object(), NULL),
	    "instructions", json_new_string(GW_INSTRUCTIONS), NULL);
	gw_era_cacheable(s, result, GW_TTL_DISCOVER_MS);
	gw_client_result(s, id, result);
	json_free(result);
}

/* obj without the members named in drop (NULL-terminated) or, when prefix
 * is not NULL, those whose key starts with it. A copy. */
static struct json_value *without(const struct json_value *obj, const char *const *drop,
                                  const char *prefix)
{
	struct json_value *out = json_new_object();
	for (size_t i = 0; i < obj->u.obj.len; i++) {
		const struct json_member *mem = &obj->u.obj.items[i];
		bool dropped = prefix != NULL && strncmp(mem->key, prefix, strlen(prefix)) == 0;
		for (size_t k = 0; drop != NULL && drop[k] != NULL && !dropped; k++)
			dropped = strcmp(mem->key, drop[k]) == 0;
		if (!dropped)
			json_object_set(out, mem->key, json_copy(mem->value));
	}
	return out;
}

struct json_value *gw_era_upstream_params(const struct session *s, const struct gw_server *srv,
                                          const struct json_value *params)
{
	if (params != NULL && params->kind != JSON_OBJECT)
		return json_copy(params);
	/* what 2026-07-28 adds to a request is about the client and mcpgate:
	 * the server gets the request as its era writes it, and of the
	 * io.modelcontextprotocol/ _meta only what mcpgate says (a client of
	 * either era may not speak for mcpgate there) */
	static const char *const mrtr[] = {"inputResponses", "requestState", NULL};
	struct json_value *p = params == NULL            ? json_new_object()
	                       : s->era == GW_ERA_MODERN ? without(params, mrtr, NULL)
	                                                 : json_copy(params);
	const struct json_value *meta = json_get(p, "_meta");
	struct json_value *m =
	    meta != NULL && meta->kind == JSON_OBJECT ? without(meta, NULL, MCP_META_PREFIX) : NULL;
	if (gw_server_asks_by_result(srv)) {
		/* a server of 2026-07-28 hears what this client can be asked, as
		 * far as its relay = [...] lets it ask */
		if (m == NULL)
			m = json_new_object();
		const struct json_value *caps =
		    s->era == GW_ERA_MODERN || s->answered_initialize ? s->client_caps : NULL;
		json_object_set(m, MCP_META_CLIENT_CAPS, gw_relay_caps_for_server(srv->cfg, caps));
	}
	if (m != NULL)
		json_object_set(p, "_meta", m);
	if (params == NULL && m == NULL) {
		json_free(p);
		return NULL;
	}
	return p;
}

struct json_value *gw_era_result(const struct session *s, const struct json_value *result)
{
	if (s->era != GW_ERA_MODERN)
		return NULL;
	/* a server of the old era never asks for input this way: an
	 * input_required result or input requests in what it answered would be
	 * it speaking for mcpgate, so they go */
	static const char *const ours[] = {"resultType", "inputRequests", "requestState", NULL};
	struct json_value *r = result != NULL && result->kind == JSON_OBJECT
	                           ? without(result, ours, NULL)
	                           : json_new_object();
	json_object_set(r, "resultType", json_new_string("complete"));
	const struct json_value *meta = json_get(r, "_meta");
	struct json_value *m =
	    meta != NULL && meta->kind == JSON_OBJECT ? json_copy(meta) : json_new_object();
	json_object_set(m, MCP_META_SERVER_INFO, server_info());
	json_object_set(r, "_meta", m);
	return r;
}
