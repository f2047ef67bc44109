/* The table of MCP clients and their files, and what both editors share.
 * Each client's format, file and shape, and the version it was taken from:
 * docs/clients.md. */
#include "internal/clients/clients.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/base/cleanup.h"
#include "internal/base/utf8.h"
#include "internal/base/xalloc.h"
#include "internal/clients/clients-internal.h"
#include "internal/json/json.h"

#define NAME_MAX_LEN 64

const struct clients_client clients_table[] = {
    {"claude-desktop", "Claude Desktop", CLIENTS_JSONC, "mcpServers", NULL, NULL, CLIENTS_BASE_APP,
     "Claude", "claude_desktop_config.json", NULL, CLIENTS_USER},
    {"claude-code", "Claude Code", CLIENTS_JSONC, "mcpServers", "stdio", "CLAUDE_CONFIG_DIR",
     CLIENTS_BASE_HOME, "", ".claude.json", ".mcp.json", CLIENTS_USER},
    {"cursor", "Cursor", CLIENTS_JSONC, "mcpServers", NULL, NULL, CLIENTS_BASE_HOME, ".cursor",
     "mcp.json", ".cursor/mcp.json", CLIENTS_USER},
    {"vscode", "VS Code", CLIENTS_JSONC, "servers", "stdio", NULL, CLIENTS_BASE_APP, "Code/User",
     "mcp.json", ".vscode/mcp.json", CLIENTS_PROJECT},
    {"windsurf", "Windsurf", CLIENTS_JSONC, "mcpServers", NULL, NULL, CLIENTS_BASE_HOME,
     ".codeium/windsurf", "mcp_config.json", NULL, CLIENTS_USER},
    {"zed", "Zed", CLIENTS_JSONC, "context_servers", NULL, NULL, CLIENTS_BASE_CONFIG, "zed",
     "settings.json", NULL, CLIENTS_USER},
    {"codex", "Codex CLI", CLIENTS_TOML, "mcp_servers", NULL, "CODEX_HOME", CLIENTS_BASE_HOME,
     ".codex", "config.toml", ".codex/config.toml", CLIENTS_USER},
    {"gemini", "Gemini CLI", CLIENTS_JSONC, "mcpServers", NULL, NULL, CLIENTS_BASE_HOME, ".gemini",
     "settings.json", ".gemini/settings.json", CLIENTS_USER},
    {NULL, NULL, CLIENTS_JSONC, NULL, NULL, NULL, CLIENTS_BASE_HOME, NULL, NULL, NULL,
     CLIENTS_USER},
};

const struct clients_client *clients_find(const char *name)
{
	for (const struct clients_client *c = clients_table; c->name != NULL; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

const char *clients_scope_name(enum clients_scope scope)
{
	return scope == CLIENTS_PROJECT ? "project" : "user";
}

/* $var when it is an absolute path (without trailing slashes), else NULL */
static char *env_dir(const char *var)
{
	const char *v = var != NULL ? getenv(var) : NULL;
	if (v == NULL || v[0] != '/')
		return NULL;
	size_t n = strlen(v);
	while (n > 1 && v[n - 1] == '/')
		n--;
	return xstrndup(v, n == 1 ? 0 : n);
}

#ifdef __APPLE__
static const bool on_macos = true;
#else
static const bool on_macos = false;
#endif

static int base_dir(enum clients_base base, char **out, struct mg_err **err)
{
	char *home = env_dir("HOME");
	if (home == NULL)
		return mg_err_set(err,
		                  "cannot find the home folder: $HOME is not an absolute path");
	if (base == CLIENTS_BASE_HOME) {
		*out = home;
		return 0;
	}
	if (base == CLIENTS_BASE_APP && on_macos) {
		*out = xasprintf("%s/Library/Application Support", home);
		free(home);
		return 0;
	}
	/* Linux applications keep theirs in the XDG folder; Zed on macOS in ~/.config */
	char *xdg = on_macos ? NULL : env_dir("XDG_CONFIG_HOME");
	*out = xdg != NULL ? xdg : xasprintf("%s/.config", home);
	free(home);
	return 0;
}

int clients_path(const struct clients_client *c, enum clients_scope scope, const char *workspace,
                 char **out, struct mg_err **err)
{
	if (scope == CLIENTS_PROJECT) {
		if (c->project_file == NULL)
			return mg_err_set(err, "%s has no project file; its file is the user's",
			                  c->title);
		*out = xasprintf("%s/%s", strcmp(workspace, "/") == 0 ? "" : workspace,
		                 c->project_file);
		return 0;
	}
	if (c->user_file == NULL)
		return mg_err_set(err,
		                  "%s has no user file; its file is the project's (--scope "
		                  "project)",
		                  c->title);
	char *dir = env_dir(c->user_env);
	if (dir == NULL) {
		char *base = NULL;
		if (base_dir(c->user_base, &base, err) < 0)
			return -1;
		dir =
		    c->user_dir[0] != '\0' ? xasprintf("%s/%s", base, c->user_dir) : xstrdup(base);
		free(base);
	}
	*out = xasprintf("%s/%s", dir, c->user_file);
	free(dir);
	return 0;
}

int clients_check_name(const char *name, struct mg_err **err)
{
	size_t n = strlen(name);
	if (n == 0 || n > NAME_MAX_LEN ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyz"
	                 "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != n)
		return mg_err_set(err,
		                  "the entry's name \"%s\" is not 1 to %d letters, digits, '_' or "
		                  "'-'",
		                  name, NAME_MAX_LEN);
	return 0;
}

/* What goes into a client's file: UTF-8 without control characters. (The
 * encoders would escape them; a path that holds one is refused all the same,
 * as no workspace or mcpgate a person means has one.) */
static int check_text(const char *filename, const char *what, const char *s, struct mg_err **err)
{
	size_t n = strlen(s);
	const char *why = NULL;
	if (mg_utf8_check(s, n) != n)
		why = "is not valid UTF-8";
	for (size_t i = 0; why == NULL && i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			why = "holds a control character";
	if (why == NULL)
		return 0;
	cleanup_free char *shown = mg_shown(s, n);
	return mg_err_set(err, "%s (\"%s\") %s: nothing was written to %s", what, shown, why,
	                  filename);
}

static int check_entry(const char *filename, const struct clients_entry *e, struct mg_err **err)
{
	if (clients_check_name(e->name, err) < 0 ||
	    check_text(filename, "the command", e->command, err) < 0)
		return -1;
	if (e->command[0] == '\0')
		return mg_err_set(err, "the command is empty");
	for (size_t i = 0; i < e->nargs; i++) {
		char what[64];
		snprintf(what, sizeof(what), "argument %zu", i + 1);
		if (check_text(filename, what, e->args[i], err) < 0)
			return -1;
	}
	return 0;
}

int clients_add(const struct clients_client *c, const char *text, size_t len, const char *filename,
                const struct clients_entry *e, char **out, size_t *out_len, struct mg_err **err)
{
	if (check_entry(filename, e, err) < 0)
		return -1;
	if (c->format == CLIENTS_TOML)
		return clients_toml_add(c, text, len, filename, e, out, out_len, err);
	return clients_jsonc_add(c, text, len, filename, e, out, out_len, err);
}

int clients_remove(const struct clients_client *c, const char *text, size_t len,
                   const char *filename, const char *name, char **out, size_t *out_len,
                   struct mg_err **err)
{
	if (clients_check_name(name, err) < 0)
		return -1;
	if (c->format == CLIENTS_TOML)
		return clients_toml_remove(c, text, len, filename, name, out, out_len, err);
	return clients_jsonc_remove(c, text, len, filename, name, out, out_len, err);
}

int clients_find_entries(const struct clients_client *c, const char *text, size_t len,
                         const char *filename, struct strv *names, struct mg_err **err)
{
	if (c->format == CLIENTS_TOML)
		return clients_toml_entries(c, text, len, filename, names, err);
	return clients_jsonc_entries(c, text, len, filename, names, err);
}

/* ---- shared by the editors ---------------------------------------------- */

void clients_edits_add(struct clients_edits *e, size_t start, size_t end, char *text)
{
	e->v = xreallocarray(e->v, e->n + 1, sizeof(*e->v));
	e->v[e->n++] = (struct clients_edit){start, end, text};
}

int clients_edits_apply(const char *text, size_t len, const struct clients_edits *e, char **out,
                        size_t *out_len, struct mg_err **err)
{
	/* stable: edits at one offset keep the order they were added in */
	size_t *order = xcalloc(e->n + 1, sizeof(*order));
	for (size_t i = 0; i < e->n; i++) {
		size_t j = i;
		while (j > 0 && e->v[order[j - 1]].start > e->v[i].start) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	struct mg_buf b = MG_BUF_INIT(CLIENTS_FILE_MAX * 2);
	size_t at = 0;
	int r = 0;
	for (size_t k = 0; k < e->n && r == 0; k++) {
		const struct clients_edit *x = &e->v[order[k]];
		if (x->start < at || x->end < x->start || x->end > len) {
			r = mg_err_set(err, "overlapping edits at bytes %zu-%zu (a bug)", x->start,
			               x->end);
			break;
		}
		if (mg_buf_append(&b, text + at, x->start - at, err) < 0 ||
		    mg_buf_puts(&b, x->text, err) < 0)
			r = -1;
		at = x->end;
	}
	if (r == 0)
		r = mg_buf_append(&b, text + at, len - at, err);
	free(order);
	if (r < 0) {
		mg_buf_free(&b);
		return -1;
	}
	*out = mg_buf_steal(&b, out_len);
	return 0;
}

void clients_edits_free(struct clients_edits *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->v[i].text);
	free(e->v);
	e->v = NULL;
	e->n = 0;
}

int clients_checked(int verified, const char *filename, char **out, struct mg_err **err)
{
	if (verified == 0)
		return 0;
	free(*out);
	*out = NULL;
	return mg_err_wrap(err,
	                   "the edit of %s went wrong (a bug of mcpgate's); the file is left as "
	                   "it was",
	                   filename);
}

const char *clients_eol(const char *text, size_t len)
{
	bool any = false;
	for (const char *p = text, *end = text + len;
	     (p = memchr(p, '\n', (size_t)(end - p))) != NULL; p++) {
		if (p == text || p[-1] != '\r')
			return "\n";
		any = true;
	}
	return any ? "\r\n" : "\n";
}

void clients_line_col(const char *text, size_t off, unsigned *line, unsigned *col)
{
	unsigned l = 1;
	size_t start = 0;
	for (size_t i = 0; i < off; i++)
		if (text[i] == '\n') {
			l++;
			start = i + 1;
		}
	*line = l;
	*col = (unsigned)(off - start + 1);
}

bool clients_is_mcpgate(const char *command, size_t len)
{
	size_t start = len;
	while (start > 0 && command[start - 1] != '/' && command[start - 1] != '\\')
		start--;
	return len - start == 7 && memcmp(command + start, "mcpgate", 7) == 0;
}

int clients_not_ours(const char *filename, unsigned line, unsigned col, const char *servers_key,
                     const char *name, const char *command, size_t len, struct mg_err **err)
{
	cleanup_free char *shown = command != NULL ? mg_shown(command, len) : NULL;
	cleanup_free char *what =
	    shown != NULL ? xasprintf("it runs \"%s\"", shown) : xstrdup("it has no command");
	return mg_err_set(err,
	                  "%s:%u:%u: the entry \"%s\" in %s is not mcpgate's (%s): it is left as "
	                  "it is; choose another name",
	                  filename, line, col, name, servers_key, what);
}

void clients_quote(struct mg_buf *b, const char *s)
{
	/* the entry was checked (valid UTF-8) and the buffer's cap is twice the
	 * largest file: quoting cannot fail */
	json_quote_text(s, strlen(s), b, NULL);
}
