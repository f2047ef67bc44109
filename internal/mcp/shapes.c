/* The shape of every MCP message mcpgate reads, by method and direction,
 * for both eras: what a client sends mcpgate (its requests and
 * notifications, and its answers to mcpgate's requests) and what a server
 * sends (the same three). Each line names a member some handler reads and
 * the JSON types it reads it as; the peers check a message against its
 * lines before any handler sees it (internal/json/shape.h). A method with
 * no lines of its own still has the lines every message of its kind has. */
#include <stdlib.h>
#include <string.h>

#include "internal/base/xalloc.h"
#include "internal/json/shape.h"
#include "internal/mcp/mcp.h"

#define OBJ JS_OBJ
#define STR JS_STR
#define ID  (JS_STR | JS_INT)
#define ANY (JS_NULL | JS_BOOL | JS_NUM | JS_STR | JS_ARR | JS_OBJ)
#define REQ true
#define OPT false
#define SELF         \
	{            \
		NULL \
	}

#define N(a) (sizeof(a) / sizeof((a)[0]))

struct shape {
	const char *method;
	const struct json_shape_member *lines;
	size_t n;
	/* a method 2026-07-28 removed: a request of that revision for it is
	 * not found, whatever its params, so its lines are not checked there
	 * (what cannot be found has no wrong params) */
	bool before_modern;
};

#define SHAPE(m, arr)                 \
	{                             \
		m, arr, N(arr), false \
	}
#define SHAPE_BEFORE_MODERN(m, arr)  \
	{                            \
		m, arr, N(arr), true \
	}

/* ---- every message -------------------------------------------------------- */

/* every request's and notification's params, from either side: an object,
 * and its _meta as mcpgate reads it (2026-07-28's envelope included) */
static const struct json_shape_member params_common[] = {
    {SELF, OBJ, OPT},
    {{"_meta"}, OBJ, OPT},
    {{"_meta", "progressToken"}, ID, OPT},
    {{"_meta", "traceparent"}, STR, OPT},
    {{"_meta", MCP_META_PROTOCOL_VERSION}, STR, OPT},
    {{"_meta", MCP_META_CLIENT_CAPS}, OBJ, OPT},
    {{"_meta", MCP_META_CLIENT_INFO}, OBJ, OPT},
    {{"_meta", MCP_META_LOG_LEVEL}, STR, OPT},
    {{"_meta", MCP_META_SUBSCRIPTION_ID}, ID, OPT},
};

/* every result, from either side */
static const struct json_shape_member result_common[] = {
    {SELF, OBJ, OPT},
    {{"_meta"}, OBJ, OPT},
    {{"resultType"}, STR, OPT},
};

/* 2026-07-28's multi round-trip members: in a retry's params, and in an
 * input_required result */
#define ROUND_PARAMS                                                  \
	{{"requestState"}, STR, OPT}, {{"inputResponses"}, OBJ, OPT}, \
	    {{"inputResponses", "*"}, OBJ, OPT},                      \
	{                                                             \
		{"inputResponses", "*", "action"}, STR, OPT           \
	}
#define ROUND_RESULT                                                                          \
	{{"requestState"}, STR, OPT}, {{"inputRequests"}, OBJ, OPT},                          \
	    {{"inputRequests", "*"}, OBJ, OPT}, {{"inputRequests", "*", "method"}, STR, REQ}, \
	{                                                                                     \
		{"inputRequests", "*", "params"}, OBJ, OPT                                    \
	}

/* ---- what a client sends mcpgate ------------------------------------------ */

static const struct json_shape_member c_initialize[] = {
    /* absent: mcpgate answers its newest (client.c's initialize) */
    {{"protocolVersion"}, STR, OPT},
    {{"capabilities"}, OBJ, OPT},
    {{"clientInfo"}, OBJ, OPT},
    {{"clientInfo", "name"}, STR, OPT},
    {{"clientInfo", "version"}, STR, OPT},
};
static const struct json_shape_member c_list[] = {
    {{"cursor"}, STR, OPT},
};
static const struct json_shape_member c_tools_call[] = {
    {{"name"}, STR, REQ},
    {{"arguments"}, OBJ, OPT},
    ROUND_PARAMS,
};
static const struct json_shape_member c_by_uri[] = {
    {{"uri"}, STR, REQ},
    ROUND_PARAMS,
};
static const struct json_shape_member c_prompts_get[] = {
    {{"name"}, STR, REQ},
    {{"arguments"}, OBJ, OPT},
    {{"arguments", "*"}, STR, OPT},
    ROUND_PARAMS,
};
static const struct json_shape_member c_complete[] = {
    {{"ref"}, OBJ, REQ},
    {{"ref", "type"}, STR, REQ},
    {{"ref", "name"}, STR, OPT},
    {{"ref", "uri"}, STR, OPT},
    {{"argument"}, OBJ, REQ},
    {{"argument", "name"}, STR, REQ},
    {{"argument", "value"}, STR, REQ},
    {{"context"}, OBJ, OPT},
    {{"context", "arguments"}, OBJ, OPT},
    {{"context", "arguments", "*"}, STR, OPT},
};
static const struct json_shape_member c_set_level[] = {
    {{"level"}, STR, REQ},
};
static const struct json_shape_member c_listen[] = {
    {{"notifications"}, OBJ, OPT},
    {{"notifications", "resourceSubscriptions"}, JS_ARR, OPT},
    {{"notifications", "resourceSubscriptions", "*"}, STR, OPT},
};
static const struct json_shape_member cancelled[] = {
    {{"requestId"}, ID, REQ},
    {{"reason"}, STR, OPT},
};

static const struct shape client_requests[] = {
    SHAPE_BEFORE_MODERN("initialize", c_initialize),
    SHAPE("tools/list", c_list),
    SHAPE("resources/list", c_list),
    SHAPE("resources/templates/list", c_list),
    SHAPE("prompts/list", c_list),
    SHAPE("tools/call", c_tools_call),
    SHAPE("resources/read", c_by_uri),
    SHAPE_BEFORE_MODERN("resources/subscribe", c_by_uri),
    SHAPE_BEFORE_MODERN("resources/unsubscribe", c_by_uri),
    SHAPE("prompts/get", c_prompts_get),
    SHAPE("completion/complete", c_complete),
    SHAPE_BEFORE_MODERN("logging/setLevel", c_set_level),
    SHAPE("subscriptions/listen", c_listen),
};

static const struct shape client_notifications[] = {
    SHAPE("notifications/cancelled", cancelled),
};

/* a client's answers to what mcpgate asks it (its own confirmation, or a
 * server's request relayed) */
static const struct json_shape_member c_elicit_result[] = {
    {{"action"}, STR, REQ},
    {{"content"}, OBJ, OPT},
};
static const struct json_shape_member c_sampling_result[] = {
    {{"role"}, STR, OPT},
    {{"model"}, STR, OPT},
    {{"stopReason"}, STR, OPT},
    {{"content"}, JS_OBJ | JS_ARR, OPT},
};
static const struct json_shape_member c_roots_result[] = {
    {{"roots"}, JS_ARR, REQ},
    {{"roots", "*"}, OBJ, OPT},
    {{"roots", "*", "uri"}, STR, REQ},
    {{"roots", "*", "name"}, STR, OPT},
};

static const struct shape client_results[] = {
    SHAPE("elicitation/create", c_elicit_result),
    SHAPE("sampling/createMessage", c_sampling_result),
    SHAPE("roots/list", c_roots_result),
};

/* ---- what a server sends mcpgate ------------------------------------------ */

static const struct json_shape_member s_elicit[] = {
    {{"message"}, STR, OPT},
    {{"mode"}, STR, OPT},
    {{"url"}, STR, OPT},
    {{"elicitationId"}, STR, OPT},
    {{"requestedSchema"}, OBJ, OPT},
};
static const struct json_shape_member s_sampling[] = {
    {{"messages"}, JS_ARR, REQ},  {{"messages", "*"}, OBJ, OPT}, {{"includeContext"}, STR, OPT},
    {{"systemPrompt"}, STR, OPT}, {{"maxTokens"}, JS_INT, OPT},
};
static const struct shape server_requests[] = {
    SHAPE("elicitation/create", s_elicit),
    SHAPE("sampling/createMessage", s_sampling),
};

static const struct json_shape_member s_message[] = {
    {{"level"}, STR, REQ},
    {{"logger"}, STR, OPT},
    {{"data"}, ANY, OPT},
};
static const struct json_shape_member s_progress[] = {
    {{"progressToken"}, ID, REQ},
    {{"progress"}, JS_NUM, REQ},
    {{"total"}, JS_NUM, OPT},
    {{"message"}, STR, OPT},
};
static const struct json_shape_member s_updated[] = {
    {{"uri"}, STR, REQ},
};
static const struct json_shape_member s_elicit_complete[] = {
    {{"elicitationId"}, STR, REQ},
};
static const struct shape server_notifications[] = {
    SHAPE("notifications/message", s_message),
    SHAPE("notifications/progress", s_progress),
    SHAPE("notifications/cancelled", cancelled),
    SHAPE("notifications/resources/updated", s_updated),
    SHAPE("notifications/elicitation/complete", s_elicit_complete),
};

/* a server's answers to what mcpgate asks it */
static const struct json_shape_member s_initialize_result[] = {
    {{"protocolVersion"}, STR, REQ},
    {{"capabilities"}, OBJ, OPT},
    {{"serverInfo"}, OBJ, OPT},
    {{"serverInfo", "name"}, STR, OPT},
    {{"serverInfo", "version"}, STR, OPT},
    {{"instructions"}, STR, OPT},
};
static const struct json_shape_member s_discover_result[] = {
    {{"supportedVersions"}, JS_ARR, OPT},
    {{"supportedVersions", "*"}, STR, OPT},
    {{"capabilities"}, OBJ, OPT},
    {{"instructions"}, STR, OPT},
};
static const struct json_shape_member s_tools_list[] = {
    {{"tools"}, JS_ARR, REQ},
    {{"tools", "*"}, OBJ, OPT},
    {{"tools", "*", "name"}, STR, REQ},
    {{"tools", "*", "title"}, STR, OPT},
    {{"tools", "*", "description"}, STR, OPT},
    {{"tools", "*", "inputSchema"}, OBJ, OPT},
    {{"tools", "*", "outputSchema"}, OBJ, OPT},
    {{"tools", "*", "annotations"}, OBJ, OPT},
    {{"nextCursor"}, STR, OPT},
};
static const struct json_shape_member s_tools_call[] = {
    {{"content"}, JS_ARR, OPT},           {{"content", "*"}, OBJ, OPT},
    {{"content", "*", "type"}, STR, OPT}, {{"isError"}, JS_BOOL, OPT},
    {{"structuredContent"}, OBJ, OPT},    ROUND_RESULT,
};
static const struct json_shape_member s_resources_list[] = {
    {{"resources"}, JS_ARR, REQ},
    {{"resources", "*"}, OBJ, OPT},
    {{"resources", "*", "uri"}, STR, REQ},
    {{"nextCursor"}, STR, OPT},
};
static const struct json_shape_member s_templates_list[] = {
    {{"resourceTemplates"}, JS_ARR, REQ},
    {{"resourceTemplates", "*"}, OBJ, OPT},
    {{"resourceTemplates", "*", "uriTemplate"}, STR, REQ},
    {{"nextCursor"}, STR, OPT},
};
static const struct json_shape_member s_prompts_list[] = {
    {{"prompts"}, JS_ARR, REQ},
    {{"prompts", "*"}, OBJ, OPT},
    {{"prompts", "*", "name"}, STR, REQ},
    {{"nextCursor"}, STR, OPT},
};
static const struct json_shape_member s_read[] = {
    {{"contents"}, JS_ARR, OPT},
    {{"contents", "*"}, OBJ, OPT},
    {{"contents", "*", "uri"}, STR, OPT},
    ROUND_RESULT,
};
static const struct json_shape_member s_prompt_get[] = {
    {{"description"}, STR, OPT},
    {{"messages"}, JS_ARR, OPT},
    {{"messages", "*"}, OBJ, OPT},
    {{"messages", "*", "content"}, OBJ, OPT},
    {{"messages", "*", "content", "type"}, STR, OPT},
    {{"messages", "*", "content", "resource"}, OBJ, OPT},
    {{"messages", "*", "content", "resource", "uri"}, STR, OPT},
    ROUND_RESULT,
};
static const struct json_shape_member s_complete[] = {
    {{"completion"}, OBJ, OPT},
    {{"completion", "values"}, JS_ARR, OPT},
    {{"completion", "values", "*"}, STR, OPT},
};
static const struct shape server_results[] = {
    SHAPE("initialize", s_initialize_result),  SHAPE("server/discover", s_discover_result),
    SHAPE("tools/list", s_tools_list),         SHAPE("tools/call", s_tools_call),
    SHAPE("resources/list", s_resources_list), SHAPE("resources/templates/list", s_templates_list),
    SHAPE("prompts/list", s_prompts_list),     SHAPE("resources/read", s_read),
    SHAPE("prompts/get", s_prompt_get),        SHAPE("completion/complete", s_complete),
};

/* ---- the check ------------------------------------------------------------ */

/* A request's or notification's refusal names its method (the text is
 * its answer); a result's is told with its request's method already */
/* params._meta names 2026-07-28 as its revision (the common lines have
 * checked _meta is an object and the version a string, when they are
 * there) */
static bool claims_modern(const struct json_value *params)
{
	const char *v = json_get_string(json_get(params, "_meta"), MCP_META_PROTOCOL_VERSION);
	return v != NULL && strcmp(v, MCP_PROTOCOL_MODERN) == 0;
}

static char *check(const struct shape *table, size_t n, const char *method, bool result,
                   const struct json_value *v)
{
	const char *where = result ? "result" : "params";
	char *why = result ? json_shape_check(v, where, result_common, N(result_common))
	                   : json_shape_check(v, where, params_common, N(params_common));
	for (size_t i = 0; why == NULL && method != NULL && i < n; i++)
		if (strcmp(table[i].method, method) == 0 &&
		    !(table[i].before_modern && claims_modern(v)))
			why = json_shape_check(v, where, table[i].lines, table[i].n);
	if (why == NULL || result || method == NULL)
		return why;
	char *named = xasprintf("%.64s: %s", method, why);
	free(why);
	return named;
}

char *mcp_shape_from_client(enum rpc_kind kind, const char *method, const struct json_value *body)
{
	switch (kind) {
	case RPC_REQUEST:
		return check(client_requests, N(client_requests), method, false, body);
	case RPC_NOTIFICATION:
		return check(client_notifications, N(client_notifications), method, false, body);
	case RPC_RESULT:
		return check(client_results, N(client_results), method, true, body);
	case RPC_ERROR:
	case RPC_INVALID:
		break;
	}
	return NULL;
}

char *mcp_shape_from_server(enum rpc_kind kind, const char *method, const struct json_value *body)
{
	switch (kind) {
	case RPC_REQUEST:
		return check(server_requests, N(server_requests), method, false, body);
	case RPC_NOTIFICATION:
		return check(server_notifications, N(server_notifications), method, false, body);
	case RPC_RESULT:
		return check(server_results, N(server_results), method, true, body);
	case RPC_ERROR:
	case RPC_INVALID:
		break;
	}
	return NULL;
}
