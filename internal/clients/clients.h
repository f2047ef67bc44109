/* The MCP configuration files of the common MCP clients, and the one entry
 * mcpgate writes in them (docs/clients.md).
 *
 * Editing is text-level: the file is parsed only to find where things are,
 * and the result is the original bytes with the entry inserted, replaced or
 * cut out, so comments, order, formatting and every other server stay as the
 * person (or the client) wrote them. An edited text is parsed again before
 * it is handed back.
 *
 * Ownership: every char ** output is allocated for the caller to free. The
 * client table is static. */
#ifndef MG_CLIENTS_CLIENTS_H
#define MG_CLIENTS_CLIENTS_H

#include <stdbool.h>
#include <stddef.h>

#include "internal/base/buf.h"
#include "internal/base/err.h"
#include "internal/base/strv.h"

/* The largest configuration file read (~/.claude.json grows with history) */
#define CLIENTS_FILE_MAX ((size_t)64 << 20)

enum clients_format {
	CLIENTS_JSONC, /* JSON; // and block comments and trailing commas accepted */
	CLIENTS_TOML,
};

enum clients_scope {
	CLIENTS_USER,    /* a file under the home folder */
	CLIENTS_PROJECT, /* a file under the workspace */
};

/* Where a user-scope file's folder starts */
enum clients_base {
	CLIENTS_BASE_HOME,   /* $HOME */
	CLIENTS_BASE_CONFIG, /* $XDG_CONFIG_HOME, else ~/.config (also on macOS) */
	CLIENTS_BASE_APP,    /* Linux: as CONFIG; macOS: ~/Library/Application Support */
};

struct clients_client {
	const char *name;  /* on the command line: "claude-desktop" */
	const char *title; /* "Claude Desktop" */
	enum clients_format format;
	const char *servers_key; /* the top-level member or table: "mcpServers" */
	const char *type;        /* "type" written in the entry ("stdio"), or NULL */
	/* the user-scope file: $env when set to an absolute path, else base/dir;
	 * then /file. user_file NULL: no user-scope file. */
	const char *user_env;
	enum clients_base user_base;
	const char *user_dir;
	const char *user_file;
	const char *project_file; /* under the workspace, or NULL */
	enum clients_scope default_scope;
};

/* The table, ended by an element whose name is NULL */
extern const struct clients_client clients_table[];

const struct clients_client *clients_find(const char *name);

/* The client's file of that scope (allocated); workspace is absolute and
 * used for the project scope only. An error names the client when it has no
 * file of that scope, or when $HOME is not an absolute path. */
int clients_path(const struct clients_client *c, enum clients_scope scope, const char *workspace,
                 char **out, struct mg_err **err);

/* "user" or "project" */
const char *clients_scope_name(enum clients_scope scope);

/* What the entry runs: command and args (UTF-8, no control characters) */
struct clients_entry {
	const char *name; /* [A-Za-z0-9_-], 1 to 64 bytes (clients_check_name) */
	const char *command;
	const char *const *args;
	size_t nargs;
};

int clients_check_name(const char *name, struct mg_err **err);

/* What an edit did */
enum clients_change {
	CLIENTS_ADDED,     /* the entry was not there */
	CLIENTS_REPLACED,  /* an mcpgate entry of that name was, and differed */
	CLIENTS_UNCHANGED, /* nothing to do: already so, or nothing to remove */
	CLIENTS_REMOVED,
};

/* The text of c's file (filename names it in messages; len 0 for a file that
 * does not exist yet) with e added, or with the mcpgate entry of the same
 * name replaced; in *out, *out_len. An entry of that name whose command is
 * not mcpgate is an error, and so is text that does not parse
 * (FILE:LINE:COL) or a servers member of the wrong kind. Returns the
 * enum clients_change, or -1. */
int clients_add(const struct clients_client *c, const char *text, size_t len, const char *filename,
                const struct clients_entry *e, char **out, size_t *out_len, struct mg_err **err);

/* The text without the mcpgate entry called name. No such entry is
 * CLIENTS_UNCHANGED (*out a copy); one whose command is not mcpgate is an
 * error. */
int clients_remove(const struct clients_client *c, const char *text, size_t len,
                   const char *filename, const char *name, char **out, size_t *out_len,
                   struct mg_err **err);

/* The names of the entries whose command is an mcpgate (its last path
 * component is "mcpgate"), in file order, pushed onto names. */
int clients_find_entries(const struct clients_client *c, const char *text, size_t len,
                         const char *filename, struct strv *names, struct mg_err **err);

/* A unified diff of before and after, by lines with 3 lines of context,
 * headed "--- LABEL" and "+++ LABEL" (after_label), appended to out.
 * Nothing is appended when the texts are equal. */
int clients_diff(const char *before, size_t before_len, const char *after, size_t after_len,
                 const char *label, const char *after_label, struct mg_buf *out,
                 struct mg_err **err);

#endif
