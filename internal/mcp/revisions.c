/* MCP's revisions as servers answer initialize with them, and what each has
 * that an older one lacks, as far as mcpgate must hold a server to it
 * (docs/2026-12-02-server-revisions.md). A server is spoken to in its
 * revision; a client sees mcpgate's. Everything here is pure: it reads and
 * rewrites JSON, and the gateway decides what to do with the answer. */
#include <stdlib.h>
#include <string.h>

#include "internal/base/xalloc.h"
#include "internal/mcp/mcp.h"

static const struct {
	const char *name;
	enum mcp_rev rev;
} names[] = {
    {"2024-11-05", MCP_REV_2024_11_05},        {"2025-03-26", MCP_REV_2025_03_26},
    {"2025-06-18", MCP_REV_2025_06_18},        {"2025-11-25", MCP_REV_2025_11_25},
    {MCP_PROTOCOL_MODERN, MCP_REV_2026_07_28},
};

/* newest first, as initialize's answer is checked against them */
const char *const mcp_server_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05",
                                           NULL};

bool mcp_server_version_supported(const char *version)
{
	for (size_t i = 0; mcp_server_versions[i] != NULL; i++)
		if (strcmp(version, mcp_server_versions[i]) == 0)
			return true;
	return false;
}

const char *mcp_server_versions_text(void)
{
	return "2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05";
}

enum mcp_rev mcp_rev_of(const char *version)
{
	for (size_t i = 0; version != NULL && i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(version, names[i].name) == 0)
			return names[i].rev;
	return MCP_REV_UNKNOWN;
}

const char *mcp_rev_name(enum mcp_rev rev)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].rev == rev)
			return names[i].name;
	return "(unknown)";
}

/* Each feature from the revision that brought it until the one that
 * removed it (MCP_REV_2026_07_28 when none did), and its name in messages */
static const struct {
	enum mcp_rev from, until;
	const char *what;
} features[MCP_FEATURE_COUNT] = {
    [MCP_HAS_AUDIO] = {MCP_REV_2025_03_26, MCP_REV_2026_07_28, "audio content"},
    [MCP_HAS_COMPLETIONS_CAP] = {MCP_REV_2025_03_26, MCP_REV_2026_07_28,
                                 "the completions capability"},
    [MCP_HAS_BATCHES] = {MCP_REV_2025_03_26, MCP_REV_2025_03_26, "JSON-RPC batches"},
    [MCP_HAS_ELICITATION] = {MCP_REV_2025_06_18, MCP_REV_2026_07_28, "elicitation"},
    [MCP_HAS_COMPLETION_CONTEXT] = {MCP_REV_2025_06_18, MCP_REV_2026_07_28,
                                    "a completion's context"},
    [MCP_HAS_URL_ELICITATION] = {MCP_REV_2025_11_25, MCP_REV_2026_07_28, "URL-mode elicitation"},
    [MCP_HAS_SAMPLING_TOOLS] = {MCP_REV_2025_11_25, MCP_REV_2026_07_28,
                                "tools in sampling (tools, toolChoice, tool_use and "
                                "tool_result content, several content blocks)"},
};

bool mcp_rev_has(enum mcp_rev rev, enum mcp_feature f)
{
	/* a version not known here was refused at initialize; a remote or
	 * instance answer that names none is taken to be mcpgate's own */
	if (rev == MCP_REV_UNKNOWN)
		rev = MCP_REV_2025_11_25;
	return rev >= features[f].from && rev <= features[f].until;
}

const char *mcp_feature_name(enum mcp_feature f)
{
	return features[f].what;
}

static char *lacks(enum mcp_rev rev, enum mcp_feature f)
{
	return xasprintf("it speaks MCP %s, which has no %s", mcp_rev_name(rev), features[f].what);
}

char *mcp_rev_request_refusal(enum mcp_rev rev, const char *method, const struct json_value *params)
{
	if (method == NULL)
		return NULL;
	if (strcmp(method, "elicitation/create") == 0) {
		if (!mcp_rev_has(rev, MCP_HAS_ELICITATION))
			return lacks(rev, MCP_HAS_ELICITATION);
		const char *mode = json_get_string(params, "mode");
		if (mode != NULL && strcmp(mode, "url") == 0 &&
		    !mcp_rev_has(rev, MCP_HAS_URL_ELICITATION))
			return lacks(rev, MCP_HAS_URL_ELICITATION);
	} else if (strcmp(method, "sampling/createMessage") == 0 &&
	           !mcp_rev_has(rev, MCP_HAS_SAMPLING_TOOLS) &&
	           (json_get(params, "tools") != NULL || json_get(params, "toolChoice") != NULL)) {
		return lacks(rev, MCP_HAS_SAMPLING_TOOLS);
	}
	return NULL;
}

char *mcp_rev_sampling_answer(enum mcp_rev rev, struct json_value *result)
{
	/* from 2025-11-25 on, a sampling answer is what the client's is */
	if (mcp_rev_has(rev, MCP_HAS_SAMPLING_TOOLS) || result == NULL ||
	    result->kind != JSON_OBJECT)
		return NULL;
	const struct json_value *content = json_get(result, "content");
	if (content != NULL && content->kind == JSON_ARRAY) {
		/* before 2025-11-25 a message held one block, not a list */
		if (content->u.arr.len != 1)
			return xasprintf("the client answered with %zu content blocks, and MCP %s "
			                 "carries one",
			                 content->u.arr.len, mcp_rev_name(rev));
		struct json_value *one = json_copy(content->u.arr.items[0]);
		json_object_set(result, "content", one);
		content = one;
	}
	/* TextContent and ImageContent are in every revision */
	const char *type = json_get_string(content, "type");
	bool ok = type != NULL && (strcmp(type, "text") == 0 || strcmp(type, "image") == 0 ||
	                           (strcmp(type, "audio") == 0 && mcp_rev_has(rev, MCP_HAS_AUDIO)));
	if (!ok)
		return xasprintf("the client answered with content of type \"%.32s\", which a "
		                 "sampling message of MCP %s cannot hold",
		                 type != NULL ? type : "(none)", mcp_rev_name(rev));
	return NULL;
}

void mcp_rev_complete_params(enum mcp_rev rev, struct json_value *params)
{
	if (params != NULL && params->kind == JSON_OBJECT &&
	    !mcp_rev_has(rev, MCP_HAS_COMPLETION_CONTEXT))
		json_object_remove(params, "context");
}
