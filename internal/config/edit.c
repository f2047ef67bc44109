/* Editing mcp.toml in place for `mcpgate approve`: the manifest pin and tool
 * settings of one server change, everything else (comments, order, spacing)
 * stays as the person wrote it. The result is parsed again and checked
 * before it is written (atomically). */
#define _GNU_SOURCE
#include "internal/config/edit.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/xalloc.h"

/* The text as lines, each with its own line ending */
struct lines {
	char **v;
	size_t n;
};

static void lines_split(const char *text, size_t len, struct lines *l)
{
	l->v = NULL;
	l->n = 0;
	size_t start = 0, cap = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && text[i] != '\n')
			continue;
		if (i == len && start == len)
			break;
		size_t end = i < len ? i + 1 : i;
		if (l->n == cap) {
			cap = cap ? cap * 2 : 64;
			l->v = xreallocarray(l->v, cap, sizeof(*l->v));
		}
		l->v[l->n++] = xstrndup(text + start, end - start);
		start = end;
	}
}

static void lines_insert(struct lines *l, size_t at, char *line)
{
	l->v = xreallocarray(l->v, l->n + 1, sizeof(*l->v));
	memmove(l->v + at + 1, l->v + at, (l->n - at) * sizeof(*l->v));
	l->v[at] = line;
	l->n++;
}

static void lines_free(struct lines *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

static bool is_header(const char *line)
{
	line += strspn(line, " \t");
	return *line == '[';
}

static bool is_content(const char *line)
{
	line += strspn(line, " \t");
	return *line != '\0' && *line != '\n' && *line != '\r' && *line != '#';
}

/* Replace the value after "key =" on line (key at 1-based col) by value. */
static int replace_value(char **line, unsigned col, const char *value, struct mg_err **err)
{
	char *s = *line;
	size_t n = strlen(s);
	if (col == 0 || col > n)
		return mg_err_set(err, "cannot find the key on its line");
	const char *eq = strchr(s + col - 1, '=');
	if (eq == NULL)
		return mg_err_set(err, "cannot find '=' after the key");
	const char *v = eq + 1 + strspn(eq + 1, " \t");
	const char *end = v;
	if (*v == '"') {
		for (end = v + 1; *end != '\0' && *end != '"'; end++)
			if (*end == '\\' && end[1] != '\0')
				end++;
		if (*end != '"')
			return mg_err_set(err, "the value is not a one-line string");
		end++;
	} else {
		while ((*end >= 'a' && *end <= 'z'))
			end++;
		if (end == v)
			return mg_err_set(err, "the value is not a boolean or a string");
	}
	char *out = xasprintf("%.*s%s%s", (int)(v - s), s, value, end);
	free(*line);
	*line = out;
	return 0;
}

static const struct cfg_tool *tool_of(const struct cfg_server *s, const char *name)
{
	for (size_t i = 0; i < s->ntools; i++)
		if (strcmp(s->tools[i].name, name) == 0)
			return &s->tools[i];
	return NULL;
}

static const char *effect_text(enum cfg_effect e)
{
	switch (e) {
	case CFG_EFFECT_READ:
		return "\"read\"";
	case CFG_EFFECT_WRITE:
		return "\"write\"";
	case CFG_EFFECT_UNDECLARED:
		break;
	}
	return NULL;
}

/* Line ranges (0-based, end exclusive) of the server's section and of its
 * main table within it */
static void server_ranges(const struct cfg *cfg, const struct cfg_server *s, const struct lines *l,
                          size_t *start, size_t *main_end, size_t *end)
{
	*start = s->pos.line - 1;
	*end = l->n;
	for (size_t i = 0; i < cfg->nservers; i++) {
		size_t h = cfg->servers[i].pos.line - 1;
		if (h > *start && h < *end)
			*end = h;
	}
	*main_end = *end;
	for (size_t i = *start + 1; i < *end; i++)
		if (is_header(l->v[i])) {
			*main_end = i;
			break;
		}
}

/* Where a new line goes at the end of [from, to): after its last content line */
static size_t after_last_content(const struct lines *l, size_t from, size_t to)
{
	size_t at = from;
	for (size_t i = from; i < to; i++)
		if (is_content(l->v[i]))
			at = i + 1;
	return at;
}

/* key = text in tool t's table: its value replaced where it is written, else
 * a line added under the table's header */
static int set_key(const struct cfg *cfg, const struct cfg_tool *t, struct lines *l,
                   const char *key, struct cfg_pos at, const char *text, struct mg_err **err)
{
	if (at.line == 0) {
		lines_insert(l, t->pos.line, xasprintf("%s = %s\n", key, text));
		return 0;
	}
	if (replace_value(&l->v[at.line - 1], at.col, text, err) < 0)
		return mg_err_wrap(err, "%s:%u", cfg->mcp_path, at.line);
	return 0;
}

/* Edits bottom-up, so earlier line numbers stay valid */
static int apply(const struct cfg *cfg, const struct cfg_server *s, struct lines *l,
                 const char *manifest, const struct cfg_tool_change *changes, size_t n,
                 struct mg_err **err)
{
	size_t start, main_end, end;
	server_ranges(cfg, s, l, &start, &main_end, &end);

	/* new tool tables at the end of the server's section, in the order given */
	size_t append_at = after_last_content(l, start, end);
	for (size_t k = n; k-- > 0;) {
		const struct cfg_tool_change *c = &changes[k];
		if (tool_of(s, c->tool) != NULL)
			continue;
		struct mg_buf b = MG_BUF_INIT(4096);
		mg_buf_printf(&b, NULL, "\n[server.tools.%s]\n", c->tool);
		if (c->on >= 0)
			mg_buf_printf(&b, NULL, "on = %s\n", c->on ? "true" : "false");
		if (c->effect >= 0 && effect_text((enum cfg_effect)c->effect) != NULL)
			mg_buf_printf(&b, NULL, "effect = %s\n",
			              effect_text((enum cfg_effect)c->effect));
		if (c->confirm >= 0)
			mg_buf_printf(&b, NULL, "confirm = %s\n", c->confirm ? "true" : "false");
		if (append_at > 0) {
			/* a last line without its newline gets one before the new table */
			char *prev = l->v[append_at - 1];
			size_t plen = strlen(prev);
			if (plen == 0 || prev[plen - 1] != '\n') {
				l->v[append_at - 1] = xasprintf("%s\n", prev);
				free(prev);
			}
		}
		lines_insert(l, append_at, mg_buf_steal(&b, NULL));
	}

	/* existing tool tables: from the lowest on the page up */
	for (size_t k = 0; k < n; k++) {
		const struct cfg_tool_change *c = &changes[k];
		const struct cfg_tool *t = tool_of(s, c->tool);
		if (t == NULL)
			continue;
		if (c->effect >= 0) {
			const char *text = effect_text((enum cfg_effect)c->effect);
			if (text == NULL)
				return mg_err_set(err, "tool %s: an effect is read or write",
				                  c->tool);
			if (t->effect_pos.line != 0) {
				if (replace_value(&l->v[t->effect_pos.line - 1], t->effect_pos.col,
				                  text, err) < 0)
					return mg_err_wrap(err, "%s:%u", cfg->mcp_path,
					                   t->effect_pos.line);
			} else {
				lines_insert(l, t->pos.line, xasprintf("effect = %s\n", text));
			}
		}
		if (c->on >= 0 &&
		    set_key(cfg, t, l, "on", t->on_pos, c->on ? "true" : "false", err) < 0)
			return -1;
		if (c->confirm >= 0 && set_key(cfg, t, l, "confirm", t->confirm_pos,
		                               c->confirm ? "true" : "false", err) < 0)
			return -1;
	}

	if (manifest != NULL) {
		cleanup_free char *quoted = xasprintf("\"%s\"", manifest);
		if (s->manifest_pos.line != 0) {
			if (replace_value(&l->v[s->manifest_pos.line - 1], s->manifest_pos.col,
			                  quoted, err) < 0)
				return mg_err_wrap(err, "%s:%u", cfg->mcp_path,
				                   s->manifest_pos.line);
		} else {
			size_t at = after_last_content(l, start, main_end);
			lines_insert(l, at, xasprintf("manifest = %s\n", quoted));
		}
	}
	return 0;
}

/* Is the edited text what was asked for, and is the rest unchanged? */
static int verify(const struct cfg *before, const struct cfg *after, const char *server,
                  const char *manifest, const struct cfg_tool_change *changes, size_t n,
                  struct mg_err **err)
{
	if (after->nservers != before->nservers)
		return mg_err_set(err, "the edit changed the number of servers");
	const struct cfg_server *s = cfg_find_server(after, server);
	if (s == NULL)
		return mg_err_set(err, "the edit lost server %s", server);
	if (manifest != NULL && (s->manifest == NULL || strcmp(s->manifest, manifest) != 0))
		return mg_err_set(err, "the edit did not set the manifest of %s", server);
	for (size_t k = 0; k < n; k++) {
		const struct cfg_tool *t = tool_of(s, changes[k].tool);
		if (t == NULL || (changes[k].on >= 0 && t->on != (changes[k].on != 0)) ||
		    (changes[k].effect >= 0 && (int)t->effect != changes[k].effect) ||
		    (changes[k].confirm >= 0 && t->confirm != (changes[k].confirm != 0)))
			return mg_err_set(err, "the edit did not set tool %s of %s",
			                  changes[k].tool, server);
	}
	return 0;
}

int cfg_edit_server(const char *text, size_t len, const char *name, const char *server,
                    const char *manifest, const struct cfg_tool_change *changes, size_t n,
                    char **out, size_t *out_len, struct mg_err **err)
{
	struct cfg *before = NULL, *after = NULL;
	if (cfg_parse(text, len, name, NULL, 0, NULL, &before, err) < 0)
		return -1;
	const struct cfg_server *s = cfg_find_server(before, server);
	if (s == NULL) {
		cfg_free(before);
		return mg_err_set(err, "no server \"%s\" in %s", server, name);
	}
	struct lines l;
	lines_split(text, len, &l);
	int r = apply(before, s, &l, manifest, changes, n, err);
	struct mg_buf b = MG_BUF_INIT((size_t)CFG_FILE_MAX * 2);
	for (size_t i = 0; r == 0 && i < l.n; i++)
		r = mg_buf_puts(&b, l.v[i], err);
	lines_free(&l);
	if (r == 0 && cfg_parse(b.data, b.len, name, NULL, 0, NULL, &after, err) < 0)
		r = mg_err_wrap(err, "the edited text does not load");
	if (r == 0 && verify(before, after, server, manifest, changes, n, err) < 0)
		r = -1;
	cfg_free(before);
	cfg_free(after);
	if (r < 0) {
		mg_buf_free(&b);
		return mg_err_wrap(err,
		                   "cannot edit %s (tools written as [server.tools.NAME] "
		                   "tables and one-line values can be edited)",
		                   name);
	}
	*out = mg_buf_steal(&b, out_len);
	return 0;
}

int cfg_write_atomic(const char *path, const char *text, size_t len, struct mg_err **err)
{
	return mg_write_file_atomic(path, text, len, 0600, err);
}
