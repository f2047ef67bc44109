/* Editing mcp.toml (approve, add), keeping the rest of the file as the
 * person wrote it (comments, order, spacing). Every edit is checked before
 * it is written: the text after must load, and differ from the text before
 * by exactly the change meant (internal/toml/toml_change.h); otherwise
 * nothing is written and the error says so, naming the file. */
#ifndef MG_CONFIG_EDIT_H
#define MG_CONFIG_EDIT_H

#include <stddef.h>

#include "internal/base/err.h"
#include "internal/config/config.h"
#include "internal/toml/toml_change.h"

/* One tool's new settings; -1 leaves a setting as it is */
struct cfg_tool_change {
	const char *tool;
	int on;      /* 0 off, 1 on */
	int effect;  /* an enum cfg_effect other than UNDECLARED */
	int confirm; /* 0: no question for this write tool; 1: asked (the default) */
};

/* What to change in one server; NULL, -1 and 0 tools leave a thing as it is */
struct cfg_server_change {
	const char *manifest; /* the pin */
	const char *image;    /* NAME@sha256:<64 hex>, replacing the one written */
	/* 0: enabled = false; 1: enabled again (the key's line goes when it
	 * holds only that key, else it becomes true) */
	int enabled;
	const struct cfg_tool_change *tools;
	size_t ntools;
	/* the line of the server's note (the comment right above its header)
	 * that says where it came from (`added by `mcpgate add ...`, or updated
	 * by ...), replaced by this text as one comment line; put above the
	 * header when the note has none. NULL: as it is */
	const char *origin;
};
#define CFG_SERVER_CHANGE_INIT                \
	{                                     \
		NULL, NULL, -1, NULL, 0, NULL \
	}

/* The text of mcp.toml (named name in messages) with server changed as ch
 * says (*out, allocated), checked as cfg_write_checked() checks. A tool
 * whose name mcp.toml cannot hold (cfg_check_tool_name) is an error. */
int cfg_change_server_text(const char *text, size_t len, const char *name, const char *server,
                           const struct cfg_server_change *ch, char **out, size_t *out_len,
                           struct mg_err **err);

/* cfg_change_server_text() on the file at path, written by
 * cfg_write_checked() */
int cfg_change_server(const char *path, const char *server, const struct cfg_server_change *ch,
                      struct mg_err **err);

/* The text of mcp.toml (named name in messages) with server's manifest set
 * (NULL: unchanged) and the tool changes made (*out, allocated), checked as
 * cfg_write_checked() checks. A tool whose name mcp.toml cannot hold
 * (cfg_check_tool_name) is an error. */
int cfg_edit_server(const char *text, size_t len, const char *name, const char *server,
                    const char *manifest, const struct cfg_tool_change *changes, size_t n,
                    char **out, size_t *out_len, struct mg_err **err);

/* cfg_edit_server() on the file at path, written by cfg_write_checked() */
int cfg_approve(const char *path, const char *server, const char *manifest,
                const struct cfg_tool_change *changes, size_t n, struct mg_err **err);

/* The file at path (none yet: a new one) with one [[server]] more, entry (a
 * table), under comment lines (any text: each is shown on one line, its
 * control characters escaped), written by cfg_write_checked() with the one
 * change: entry appended to server. */
int cfg_append_server(const char *path, const char *const *comment, size_t ncomment,
                      const struct toml_value *entry, struct mg_err **err);

/* The text of mcp.toml (named name) without server's [[server]]: its
 * header, keys and tool tables, and the comment lines right above its
 * header (its note, as add writes it), checked as cfg_write_checked()
 * checks (the one change: that element of server removed). *first and
 * *last are the 1-based lines of the text that went. cfg_write_checked()
 * with that change writes it. */
int cfg_remove_server_text(const char *text, size_t len, const char *name, const char *server,
                           char **out, size_t *out_len, unsigned *first, unsigned *last,
                           struct mg_err **err);
/* What `mcpgate check` would say of the file at path (none yet: a new
 * one) with entry appended, read with config.toml at config_path (NULL or
 * absent: none): 0 when it loads, else its errors. Nothing is written. */
int cfg_append_check(const char *path, const char *config_path, const struct toml_value *entry,
                     struct mg_err **err);

/* Write after to path when it loads as mcp.toml and is before (the text
 * read; NULL: there was no file) with exactly the changes made
 * (toml_check_edit), and path still holds before; else nothing is written
 * and the error names path and says why. The one way mcp.toml is written. */
int cfg_write_checked(const char *path, const char *before, size_t before_len, const char *after,
                      size_t after_len, const struct toml_change *changes, size_t n,
                      struct mg_err **err);

/* Replace path by text: a temporary file beside it, fsync, rename, fsync the
 * folder; the file keeps its mode (0600 when new). */
int cfg_write_atomic(const char *path, const char *text, size_t len, struct mg_err **err);

#endif
