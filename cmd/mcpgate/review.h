/* What review shows, and approve's walk through the tools, shared with
 * update (which reviews and approves a new image in one go). */
#ifndef MG_CMD_REVIEW_H
#define MG_CMD_REVIEW_H

#include <stddef.h>
#include <sys/types.h>

#include "internal/base/strv.h"
#include "internal/config/config.h"
#include "internal/config/edit.h"
#include "internal/json/json.h"

/* DATA/reviews/SERVER.json: the manifest review read last (allocated) */
char *review_path(const char *data, const char *server);

/* One tool of a tools/list as review shows it: its name and description
 * through the one renderer, its settings in s, its input, its hints */
void review_show_tool(const struct cfg_server *s, const struct json_value *t);

/* "changes since the approved manifest (N):" and a line per change, from
 * old_tools to new_tools; returns N */
size_t review_show_diff(const struct json_value *old_tools, const struct json_value *new_tools);

/* On a terminal, each tool of tools shown and asked for: read, write (and
 * whether each call asks), off, or kept (Enter); q stops. changes[0..cap)
 * get the answers (tool names kept in names). Returns how many, or -1 when
 * the person stopped: then nothing is to be written. */
ssize_t review_walk_tools(const struct cfg_server *s, const struct json_value *tools,
                          struct cfg_tool_change *changes, size_t cap, struct strv *names);

#endif
