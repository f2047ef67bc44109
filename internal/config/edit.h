/* Editing mcp.toml for `mcpgate approve`, keeping the rest of the file as the
 * person wrote it (comments, order, spacing). */
#ifndef MG_CONFIG_EDIT_H
#define MG_CONFIG_EDIT_H

#include <stddef.h>

#include "internal/base/err.h"
#include "internal/config/config.h"

/* One tool's new settings; -1 leaves a setting as it is */
struct cfg_tool_change {
	const char *tool;
	int on;      /* 0 off, 1 on */
	int effect;  /* an enum cfg_effect other than UNDECLARED */
	int confirm; /* 0: no question for this write tool; 1: asked (the default) */
};

/* The text of mcp.toml (named name in messages) with server's manifest set
 * (NULL: unchanged) and the tool changes made. The result is parsed again
 * and checked before it is handed back (*out, allocated). */
int cfg_edit_server(const char *text, size_t len, const char *name, const char *server,
                    const char *manifest, const struct cfg_tool_change *changes, size_t n,
                    char **out, size_t *out_len, struct mg_err **err);

/* Replace path by text: a temporary file beside it, fsync, rename, fsync the
 * folder; the file keeps its mode (0600 when new). */
int cfg_write_atomic(const char *path, const char *text, size_t len, struct mg_err **err);

#endif
