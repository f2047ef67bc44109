/* A server's tool manifest and its pin (docs/trust.md).
 *
 * The manifest is the JSON array of every tool's name, title, description,
 * inputSchema, outputSchema and annotations (those present; nothing else),
 * sorted by name. Its hash is "sha256:" and the lower-case hex SHA-256 of the
 * manifest's canonical JSON (docs/canonical-json.md). */
#ifndef MG_MCP_MANIFEST_H
#define MG_MCP_MANIFEST_H

#include <stdbool.h>

#include "internal/base/err.h"
#include "internal/json/json.h"

/* "sha256:" + 64 hex + NUL */
#define MANIFEST_HASH_LEN (7 + 64 + 1)

/* The manifest of a tools/list result (an array of tool objects), owned by
 * the caller. */
struct json_value *manifest_of(const struct json_value *tools);
/* One tool as the pin sees it: its pinned fields only (allocated). What a
 * client is shown of a tool is this and nothing more: a member outside the
 * hash (_meta, icons, anything unknown) could change unseen. */
struct json_value *manifest_tool(const struct json_value *tool);

/* The hash of tools (a tools/list array; the manifest is made from it). */
int manifest_hash(const struct json_value *tools, char out[MANIFEST_HASH_LEN], struct mg_err **err);

/* One line per difference between two manifests (arrays as manifest_of
 * makes them): "added TOOL", "removed TOOL", "changed TOOL: FIELD". Returns
 * the number of differences; lines are appended to out (one per line). */
size_t manifest_diff(const struct json_value *old_tools, const struct json_value *new_tools,
                     struct mg_buf *out);

/* Tool name is in both tools/list arrays, every pinned field the same (an
 * approval of it in the old one holds for it in the new one) */
bool manifest_tool_same(const struct json_value *old_tools, const struct json_value *new_tools,
                        const char *name);

/* A manifest record, a file of {"server", "image", "hash", "tools"}: what
 * review read (DATA/reviews/SERVER.json) and what approve approved
 * (manifest_record_path), so a later review shows what changed and a server
 * started lazily offers its approved tools before it runs. */
char *manifest_record_path(const char *data_dir, const char *server, const char *hash);
/* Written atomically, 0600, its folder made (0700) */
int manifest_record_save(const char *path, const char *server, const char *image, const char *hash,
                         const struct json_value *tools, struct mg_err **err);
/* The record at path (allocated), or NULL with why */
struct json_value *manifest_record_load(const char *path, struct mg_err **err);
/* The tools approved as pin for server (allocated, as listed): its record,
 * whose tools must hash to pin; NULL with why when there is none or it does
 * not */
struct json_value *manifest_approved_tools(const char *data_dir, const char *server,
                                           const char *pin, struct mg_err **err);

#endif
