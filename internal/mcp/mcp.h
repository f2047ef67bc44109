/* The MCP client side that every transport shares: the handshake, listing
 * tools over every page, and what a tool definition must look like.
 *
 * These run on a start-up thread over an rpc_peer with rpc_peer_call_sync();
 * calls during the session go through the gateway's event loop. */
#ifndef MG_MCP_MCP_H
#define MG_MCP_MCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal/base/err.h"
#include "internal/base/strv.h"
#include "internal/json/json.h"
#include "internal/jsonrpc/jsonrpc.h"

/* The version mcpgate asks for first, and the ones it accepts in answers */
#define MCP_PROTOCOL_LATEST "2025-11-25"
extern const char *const mcp_protocol_versions[]; /* newest first, NULL-terminated */
/* The version without a handshake, served to clients per request (the
 * gateway's client side only: servers are asked for MCP_PROTOCOL_LATEST) */
#define MCP_PROTOCOL_MODERN "2026-07-28"

/* Limits on what a server may hand us while listing */
#define MCP_LIST_PAGES_MAX 1000
#define MCP_TOOLS_MAX      10000

/* The versions mcpgate answers a client's initialize with */
bool mcp_version_supported(const char *version);

/* A comma-separated list of the versions, for messages */
const char *mcp_versions_text(void);

/* ---- a server's revision (revisions.c, docs/2026-12-02-server-revisions.md) */

/* The versions a server's initialize answer may name: mcp_protocol_versions
 * and the older 2024-11-05. A server is spoken to in its revision; what a
 * client sees stays mcpgate's. */
extern const char *const mcp_server_versions[]; /* newest first, NULL-terminated */
bool mcp_server_version_supported(const char *version);
const char *mcp_server_versions_text(void);

/* The revisions, oldest first, so that they compare */
enum mcp_rev {
	MCP_REV_UNKNOWN,
	MCP_REV_2024_11_05,
	MCP_REV_2025_03_26,
	MCP_REV_2025_06_18,
	MCP_REV_2025_11_25,
	MCP_REV_2026_07_28,
};
enum mcp_rev mcp_rev_of(const char *version); /* MCP_REV_UNKNOWN for any other text */
const char *mcp_rev_name(enum mcp_rev rev);

/* What a server's revision may lack, where mcpgate must hold it to it */
enum mcp_feature {
	MCP_HAS_AUDIO,              /* 2025-03-26: audio content */
	MCP_HAS_COMPLETIONS_CAP,    /* 2025-03-26: completion is declared by a capability */
	MCP_HAS_BATCHES,            /* 2025-03-26 only: JSON-RPC batches */
	MCP_HAS_ELICITATION,        /* 2025-06-18: elicitation/create (form) */
	MCP_HAS_COMPLETION_CONTEXT, /* 2025-06-18: completion/complete's context */
	MCP_HAS_URL_ELICITATION,    /* 2025-11-25: elicitation in url mode */
	MCP_HAS_SAMPLING_TOOLS,     /* 2025-11-25: tools in sampling, content lists */
	MCP_FEATURE_COUNT,
};
/* MCP_REV_UNKNOWN counts as mcpgate's own revision (2025-11-25) */
bool mcp_rev_has(enum mcp_rev rev, enum mcp_feature f);
const char *mcp_feature_name(enum mcp_feature f);

/* Why a server of rev may not put method (with params) to the client: a
 * request its revision does not have (elicitation before 2025-06-18, url
 * mode before 2025-11-25, sampling with tools before 2025-11-25); allocated,
 * or NULL when it is of its revision. */
char *mcp_rev_request_refusal(enum mcp_rev rev, const char *method,
                              const struct json_value *params);
/* The client's sampling/createMessage result, made one a server of rev
 * reads, in place: before 2025-11-25 a list of one content block becomes
 * the block. NULL when it now is, else why it cannot be (allocated): several
 * blocks, or a block of a type its sampling message cannot hold (audio
 * before 2025-03-26; anything but text, image and audio before 2025-11-25). */
char *mcp_rev_sampling_answer(enum mcp_rev rev, struct json_value *result);
/* completion/complete's params for a server of rev, in place: context goes
 * before 2025-06-18 */
void mcp_rev_complete_params(enum mcp_rev rev, struct json_value *params);

/* 1-128 characters of [A-Za-z0-9_.-] */
bool mcp_tool_name_valid(const char *name, size_t len);

/* shapes.c: why a message (its params, or the result of a request of
 * method) breaks the shape mcpgate reads it by, or NULL; allocated. The
 * client side's and the servers' (struct rpc_peer_config's check). */
char *mcp_shape_from_client(enum rpc_kind kind, const char *method, const struct json_value *body);
char *mcp_shape_from_server(enum rpc_kind kind, const char *method, const struct json_value *body);

/* What initialize told us. Owned strings; mcp_server_info_free(). */
struct mcp_server_info {
	char *protocol_version;
	char *name;
	char *version;
	struct json_value *capabilities; /* an object */
	char *instructions;              /* or NULL */
};

void mcp_server_info_free(struct mcp_server_info *info);

/* 2026-07-28's names: its _meta keys, its version error */
#define MCP_META_PREFIX           "io.modelcontextprotocol/"
#define MCP_META_PROTOCOL_VERSION MCP_META_PREFIX "protocolVersion"
#define MCP_META_CLIENT_CAPS      MCP_META_PREFIX "clientCapabilities"
#define MCP_META_CLIENT_INFO      MCP_META_PREFIX "clientInfo"
#define MCP_META_SERVER_INFO      MCP_META_PREFIX "serverInfo"
#define MCP_META_LOG_LEVEL        MCP_META_PREFIX "logLevel"
#define MCP_META_SUBSCRIPTION_ID  MCP_META_PREFIX "subscriptionId"
#define MCP_UNSUPPORTED_VERSION   (-32022)
/* How long server/discover may go unanswered before a server is taken to be
 * of the old era (one that ignores what comes before initialize), unless the
 * caller knows better (mcp_start's probe_wait_ms) */
#define MCP_DISCOVER_WAIT_MS 3000

/* Start speaking to a server of either era, as 2026-07-28's stdio binding
 * says: server/discover first (with the version, mcpgate's identity and
 * capabilities in _meta); a discover result listing 2026-07-28 makes it a
 * server of the new era, whose requests from then on carry that _meta (the
 * peer's request meta) and info->protocol_version is 2026-07-28; any error
 * that is not of the new era, or no answer within probe_wait_ms, makes it
 * one of the old, and mcp_initialize follows. When the probe had no answer
 * and initialize then fails, the server may have been slow to start:
 * server/discover is asked again, until deadline_ms. */
int mcp_start(struct rpc_peer *peer, int64_t deadline_ms, const struct json_value *capabilities,
              int64_t probe_wait_ms, struct mcp_server_info *info, struct mg_err **err);

/* initialize (asking for MCP_PROTOCOL_LATEST with the given capabilities,
 * borrowed, NULL for none), check the answer's version (one of
 * mcp_server_versions), then send notifications/initialized. A server of
 * 2025-03-26 may send JSON-RPC batches: its peer then takes them. */
int mcp_initialize(struct rpc_peer *peer, int64_t deadline_ms,
                   const struct json_value *capabilities, struct mcp_server_info *info,
                   struct mg_err **err);

/* tools/list over every page into one array of tool objects (owned by the
 * caller). A tool without a valid name or an object inputSchema, a name that
 * appears twice, a cursor that repeats, or more than MCP_LIST_PAGES_MAX
 * pages or MCP_TOOLS_MAX tools is an error naming what is wrong. */
int mcp_list_tools(struct rpc_peer *peer, int64_t deadline_ms, struct json_value **tools,
                   struct mg_err **err);

/* One page of tools/list: check each tool of reply (as mcp_list_tools does)
 * and append it to tools. Returns 1 with *next_cursor (borrowed from
 * cursors, which remembers every cursor given) when another page follows,
 * 0 after the last page, -1 on a bad page. page counts from 1. */
int mcp_tools_page(struct json_value *tools, const struct rpc_msg *reply, size_t page,
                   struct strv *cursors, const char **next_cursor, struct mg_err **err);

/* {"cursor": cursor}, or NULL for the first page */
struct json_value *mcp_cursor_params(const char *cursor);

/* The message of a JSON-RPC error reply, for errors ("code -32601: Method not found") */
char *mcp_error_text(const struct rpc_msg *reply);

#endif
