#include "internal/mcp/mcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/base/cleanup.h"
#include "internal/base/strv.h"
#include "internal/base/utf8.h"
#include "internal/base/xalloc.h"

const char *const mcp_protocol_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", NULL};

bool mcp_version_supported(const char *version)
{
	for (size_t i = 0; mcp_protocol_versions[i] != NULL; i++)
		if (strcmp(version, mcp_protocol_versions[i]) == 0)
			return true;
	return false;
}

const char *mcp_versions_text(void)
{
	return "2025-11-25, 2025-06-18, 2025-03-26";
}

bool mcp_tool_name_valid(const char *name, size_t len)
{
	if (len == 0 || len > 128)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == '-'))
			return false;
	}
	return true;
}

void mcp_server_info_free(struct mcp_server_info *info)
{
	if (info == NULL)
		return;
	free(info->protocol_version);
	free(info->name);
	free(info->version);
	json_free(info->capabilities);
	free(info->instructions);
	memset(info, 0, sizeof(*info));
}

char *mcp_error_text(const struct rpc_msg *reply)
{
	size_t n = reply->error_message_len > 500 ? 500 : reply->error_message_len;
	return xasprintf("code %lld: %.*s", (long long)reply->error_code, (int)n,
	                 reply->error_message != NULL ? reply->error_message : "");
}

/* A reply that must be a result: an error reply becomes an error. */
static int expect_result(const struct rpc_msg *reply, const char *method, struct mg_err **err)
{
	if (reply->kind == RPC_RESULT && reply->result != NULL &&
	    reply->result->kind == JSON_OBJECT)
		return 0;
	if (reply->kind == RPC_ERROR) {
		cleanup_free char *text = mcp_error_text(reply);
		return mg_err_set(err, "%s failed: %s", method, text);
	}
	return mg_err_set(err, "%s: the result is not an object", method);
}

static char *dup_string(const struct json_value *obj, const char *key)
{
	const char *s = json_get_string(obj, key);
	return s != NULL ? xstrdup(s) : NULL;
}

/* What an initialize or discover result says of the server */
static void fill_info(struct mcp_server_info *info, const char *version,
                      const struct json_value *server, const struct json_value *result)
{
	info->protocol_version = xstrdup(version);
	info->name = dup_string(server, "name");
	info->version = dup_string(server, "version");
	const struct json_value *caps = json_get(result, "capabilities");
	info->capabilities =
	    caps != NULL && caps->kind == JSON_OBJECT ? json_copy(caps) : json_new_object();
	info->instructions = dup_string(result, "instructions");
}

/* Who mcpgate is, to a server of either era */
static struct json_value *client_info(void)
{
	struct json_value *client = json_new_object();
	json_object_set(client, "name", json_new_string("mcpgate"));
	json_object_set(client, "version", json_new_string("0.1.0"));
	return client;
}

int mcp_initialize(struct rpc_peer *peer, int64_t deadline_ms,
                   const struct json_value *capabilities, struct mcp_server_info *info,
                   struct mg_err **err)
{
	memset(info, 0, sizeof(*info));
	struct json_value *params = json_new_object();
	json_object_set(params, "protocolVersion", json_new_string(MCP_PROTOCOL_LATEST));
	json_object_set(params, "capabilities",
	                capabilities != NULL ? json_copy(capabilities) : json_new_object());
	json_object_set(params, "clientInfo", client_info());

	struct rpc_msg reply;
	memset(&reply, 0, sizeof(reply));
	int r = rpc_peer_call_sync(peer, "initialize", params, deadline_ms, &reply, err);
	json_free(params);
	if (r < 0)
		return -1;
	if (expect_result(&reply, "initialize", err) < 0) {
		rpc_msg_free(&reply);
		return -1;
	}
	const char *version = json_get_string(reply.result, "protocolVersion");
	if (version == NULL) {
		rpc_msg_free(&reply);
		return mg_err_set(err, "initialize: the answer has no protocolVersion");
	}
	if (!mcp_server_version_supported(version)) {
		size_t n = strlen(version) > 40 ? 40 : strlen(version);
		char *shown = mg_shown(version, n);
		mg_err_set(err,
		           "the server answered protocol version \"%s\", which mcpgate does not "
		           "speak (it speaks %s)",
		           shown, mcp_server_versions_text());
		free(shown);
		rpc_msg_free(&reply);
		return -1;
	}
	fill_info(info, version, json_get(reply.result, "serverInfo"), reply.result);
	rpc_msg_free(&reply);
	/* 2025-03-26 alone has batches, which its servers may send */
	rpc_peer_set_batches(peer,
	                     mcp_rev_has(mcp_rev_of(info->protocol_version), MCP_HAS_BATCHES));

	if (rpc_peer_send_notification(peer, "notifications/initialized", NULL, err) < 0) {
		mcp_server_info_free(info);
		return mg_err_wrap(err, "notifications/initialized");
	}
	return 0;
}

/* Whether list (a JSON array) holds the string v */
static bool lists(const struct json_value *list, const char *v)
{
	if (list == NULL || list->kind != JSON_ARRAY)
		return false;
	for (size_t i = 0; i < list->u.arr.len; i++) {
		const struct json_value *x = list->u.arr.items[i];
		if (x->kind == JSON_STRING && strcmp(x->u.str.ptr, v) == 0)
			return true;
	}
	return false;
}

/* server/discover with meta until until_ms: 1 when the answer makes it a
 * server of 2026-07-28 (info filled, the peer's request meta set), 0 when
 * it makes it one of the old era, or none came (*answered false), -1 when
 * the server is gone or speaks no version mcpgate does */
static int discover(struct rpc_peer *peer, const struct json_value *meta, int64_t until_ms,
                    bool probe, struct mcp_server_info *info, bool *answered, struct mg_err **err)
{
	struct json_value *params = json_new_object();
	json_object_set(params, "_meta", json_copy(meta));
	struct rpc_msg reply;
	memset(&reply, 0, sizeof(reply));
	struct mg_err *perr = NULL;
	/* a server of the old era slow to start answers the probe late, in
	 * order, just before initialize: nothing to warn about */
	int r = probe
	            ? rpc_peer_probe_sync(peer, "server/discover", params, until_ms, &reply, &perr)
	            : rpc_peer_call_sync(peer, "server/discover", params, until_ms, &reply, &perr);
	json_free(params);
	*answered = r == 0;
	if (r < 0 && rpc_peer_closed(peer)) {
		/* it ended (or never spoke): that is the answer, not an era */
		if (err != NULL) {
			mg_err_free(*err);
			*err = perr;
		} else {
			mg_err_free(perr);
		}
		return mg_err_wrap(err, "server/discover");
	}
	mg_err_free(perr);
	const struct json_value *supported =
	    r == 0 && reply.kind == RPC_RESULT ? json_get(reply.result, "supportedVersions")
	    : r == 0 && reply.kind == RPC_ERROR && reply.error_code == MCP_UNSUPPORTED_VERSION
	        ? json_get(reply.error_data, "supported")
	        : NULL;
	/* a result is a DiscoverResult only with versions in it: a server of the
	 * old era that answers {} to any method is of the old era */
	bool listed =
	    supported != NULL && supported->kind == JSON_ARRAY && supported->u.arr.len > 0;
	bool modern_server =
	    r == 0 && ((reply.kind == RPC_RESULT && listed) ||
	               (reply.kind == RPC_ERROR && reply.error_code == MCP_UNSUPPORTED_VERSION));
	if (modern_server && reply.kind == RPC_RESULT && lists(supported, MCP_PROTOCOL_MODERN)) {
		/* 2026-07-28 names the server in the result's _meta */
		fill_info(info, MCP_PROTOCOL_MODERN,
		          json_get(json_get(reply.result, "_meta"), MCP_META_SERVER_INFO),
		          reply.result);
		rpc_msg_free(&reply);
		/* every request from here on says who asks, in which version */
		rpc_peer_set_request_meta(peer, meta);
		return 1;
	}
	bool legacy_listed = false;
	for (size_t i = 0; mcp_server_versions[i] != NULL; i++)
		legacy_listed |= lists(supported, mcp_server_versions[i]);
	rpc_msg_free(&reply);
	if (modern_server && !legacy_listed)
		return mg_err_set(
		    err,
		    "server/discover: the server speaks MCP of the 2026-07-28 era, but "
		    "not a version mcpgate speaks (it speaks %s and %s)",
		    MCP_PROTOCOL_MODERN, mcp_server_versions_text());
	return 0;
}

int mcp_start(struct rpc_peer *peer, int64_t deadline_ms, const struct json_value *capabilities,
              int64_t probe_wait_ms, struct mcp_server_info *info, struct mg_err **err)
{
	memset(info, 0, sizeof(*info));
	struct json_value *meta = json_new_object();
	json_object_set(meta, MCP_META_PROTOCOL_VERSION, json_new_string(MCP_PROTOCOL_MODERN));
	json_object_set(meta, MCP_META_CLIENT_INFO, client_info());
	struct json_value *asked =
	    capabilities != NULL ? json_copy(capabilities) : json_new_object();
	/* 2026-07-28 has no notifications/roots/list_changed to promise */
	if (json_get(asked, "roots") != NULL)
		json_object_set(asked, "roots", json_new_object());
	json_object_set(meta, MCP_META_CLIENT_CAPS, asked);
	/* the probe: a server of the old era answers an error, or nothing */
	int64_t probe_until = rpc_now_ms() + probe_wait_ms;
	bool answered = false;
	int r = discover(peer, meta, probe_until < deadline_ms ? probe_until : deadline_ms, true,
	                 info, &answered, err);
	if (r != 0) {
		json_free(meta);
		return r < 0 ? -1 : 0;
	}
	/* an error that is not of the new era, or no answer: the old era */
	struct mg_err *ierr = NULL;
	if (mcp_initialize(peer, deadline_ms, capabilities, info, &ierr) == 0) {
		json_free(meta);
		return 0;
	}
	if (!answered && !rpc_peer_closed(peer) && rpc_now_ms() < deadline_ms) {
		/* the probe had no answer in its time, and initialize failed: a
		 * server slow to start is asked again, until the start deadline */
		mcp_server_info_free(info);
		memset(info, 0, sizeof(*info));
		struct mg_err *rerr = NULL;
		r = discover(peer, meta, deadline_ms, false, info, &answered, &rerr);
		mg_err_free(rerr);
		if (r == 1) {
			json_free(meta);
			mg_err_free(ierr);
			return 0;
		}
	}
	json_free(meta);
	if (err != NULL) {
		mg_err_free(*err);
		*err = ierr;
	} else {
		mg_err_free(ierr);
	}
	return -1;
}

static int check_tool(const struct json_value *tool, size_t page, struct mg_err **err)
{
	if (tool->kind != JSON_OBJECT)
		return mg_err_set(err, "tools/list page %zu: a tool is not an object", page);
	const struct json_value *name = json_get(tool, "name");
	if (name == NULL || name->kind != JSON_STRING)
		return mg_err_set(err, "tools/list page %zu: a tool has no name", page);
	if (!mcp_tool_name_valid(name->u.str.ptr, name->u.str.len)) {
		/* the server's text, its line ends and controls shown as escapes */
		cleanup_free char *shown =
		    mg_shown(name->u.str.ptr, name->u.str.len > 64 ? 64 : name->u.str.len);
		return mg_err_set(err,
		                  "tools/list: tool name \"%s\" is not 1-128 characters of "
		                  "[A-Za-z0-9_.-]",
		                  shown);
	}
	const struct json_value *schema = json_get(tool, "inputSchema");
	if (schema == NULL || schema->kind != JSON_OBJECT)
		return mg_err_set(err, "tools/list: tool \"%s\" has no inputSchema object",
		                  name->u.str.ptr);
	return 0;
}

static bool has_tool(const struct json_value *tools, const char *name)
{
	for (size_t i = 0; i < tools->u.arr.len; i++)
		if (strcmp(json_get_string(tools->u.arr.items[i], "name"), name) == 0)
			return true;
	return false;
}

int mcp_tools_page(struct json_value *tools, const struct rpc_msg *reply, size_t page,
                   struct strv *cursors, const char **next_cursor, struct mg_err **err)
{
	*next_cursor = NULL;
	if (page > MCP_LIST_PAGES_MAX)
		return mg_err_set(err, "tools/list: more than %d pages", MCP_LIST_PAGES_MAX);
	if (expect_result(reply, "tools/list", err) < 0)
		return -1;
	const struct json_value *list = json_get(reply->result, "tools");
	if (list == NULL || list->kind != JSON_ARRAY)
		return mg_err_set(err, "tools/list page %zu: no tools array", page);
	for (size_t i = 0; i < list->u.arr.len; i++) {
		const struct json_value *t = list->u.arr.items[i];
		if (check_tool(t, page, err) < 0)
			return -1;
		if (has_tool(tools, json_get_string(t, "name")))
			return mg_err_set(err, "tools/list: tool \"%s\" is listed twice",
			                  json_get_string(t, "name"));
		if (tools->u.arr.len >= MCP_TOOLS_MAX)
			return mg_err_set(err, "tools/list: more than %d tools", MCP_TOOLS_MAX);
		json_array_push(tools, json_copy(t));
	}
	const struct json_value *next = json_get(reply->result, "nextCursor");
	if (next == NULL || next->kind == JSON_NULL)
		return 0;
	if (next->kind != JSON_STRING || strv_find(cursors, next->u.str.ptr) >= 0)
		return mg_err_set(err, "tools/list page %zu: the nextCursor is %s", page,
		                  next->kind != JSON_STRING ? "not a string"
		                                            : "one already given (a loop)");
	strv_push(cursors, next->u.str.ptr);
	*next_cursor = cursors->v[cursors->n - 1];
	return 1;
}

struct json_value *mcp_cursor_params(const char *cursor)
{
	if (cursor == NULL)
		return NULL;
	struct json_value *params = json_new_object();
	json_object_set(params, "cursor", json_new_string(cursor));
	return params;
}

int mcp_list_tools(struct rpc_peer *peer, int64_t deadline_ms, struct json_value **tools_out,
                   struct mg_err **err)
{
	struct json_value *tools = json_new_array();
	struct strv cursors = STRV_INIT;
	const char *cursor = NULL;
	int r;
	size_t page = 0;
	do {
		struct json_value *params = mcp_cursor_params(cursor);
		struct rpc_msg reply;
		memset(&reply, 0, sizeof(reply));
		r = rpc_peer_call_sync(peer, "tools/list", params, deadline_ms, &reply, err);
		json_free(params);
		if (r == 0)
			r = mcp_tools_page(tools, &reply, ++page, &cursors, &cursor, err);
		rpc_msg_free(&reply);
	} while (r > 0);
	strv_free(&cursors);
	if (r < 0) {
		json_free(tools);
		return -1;
	}
	*tools_out = tools;
	return 0;
}
