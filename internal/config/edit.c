/* Editing mcp.toml: approve's manifest pin and tool settings, add's new
 * [[server]]. What is written comes from the one encoder
 * (internal/toml/toml_encode.h), everything else in the file (comments,
 * order, spacing) stays as the person wrote it, and every edit is checked
 * before it is written: the file after must be the file before with exactly
 * the change meant (internal/toml/toml_change.h), and load as mcp.toml.
 * Otherwise nothing is written. */
#define _GNU_SOURCE
#include "internal/config/edit.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/xalloc.h"
#include "internal/toml/toml_encode.h"

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

/* A tool's settings as approve writes them (and as the file must hold them):
 * the ones the change sets */
static struct toml_value *new_tool_table(const struct cfg_tool_change *c)
{
	struct toml_value *t = toml_new_table();
	if (c->on >= 0)
		toml_table_set(t, "on", 2, toml_new_bool(c->on != 0));
	if (c->effect >= 0 && effect_text((enum cfg_effect)c->effect) != NULL)
		toml_table_set(t, "effect", 6,
		               toml_new_string(cfg_effect_name((enum cfg_effect)c->effect)));
	if (c->confirm >= 0)
		toml_table_set(t, "confirm", 7, toml_new_bool(c->confirm != 0));
	return t;
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

/* A line to insert before line index at (0-based, of the text as read) */
struct insert {
	size_t at;
	size_t order; /* inserts at one place keep the order they were made in */
	char *text;
};

struct inserts {
	struct insert *v;
	size_t n;
};

static void insert_at(struct inserts *ins, size_t at, char *text)
{
	ins->v = xreallocarray(ins->v, ins->n + 1, sizeof(*ins->v));
	ins->v[ins->n] = (struct insert){at, ins->n, text};
	ins->n++;
}

static int later_first(const void *a, const void *b)
{
	const struct insert *x = a, *y = b;
	if (x->at != y->at)
		return x->at < y->at ? 1 : -1;
	return x->order < y->order ? 1 : -1;
}

/* Every insert made, from the bottom of the text up: each index is one of
 * the text as read, and no insert moves a line another one names */
static void inserts_apply(struct inserts *ins, struct lines *l)
{
	if (ins->n > 1)
		qsort(ins->v, ins->n, sizeof(*ins->v), later_first);
	for (size_t i = 0; i < ins->n; i++) {
		size_t at = ins->v[i].at;
		/* a last line without its newline gets one before what follows */
		char *prev = at > 0 ? l->v[at - 1] : NULL;
		size_t plen = prev != NULL ? strlen(prev) : 0;
		if (prev != NULL && (plen == 0 || prev[plen - 1] != '\n')) {
			l->v[at - 1] = xasprintf("%s\n", prev);
			free(prev);
		}
		lines_insert(l, at, ins->v[i].text);
	}
	free(ins->v);
	*ins = (struct inserts){0};
}

static void inserts_free(struct inserts *ins)
{
	for (size_t i = 0; i < ins->n; i++)
		free(ins->v[i].text);
	free(ins->v);
	*ins = (struct inserts){0};
}

/* key = text in tool t's table: its value replaced where it is written, else
 * a line under the table's header */
static int set_key(const struct cfg *cfg, const struct cfg_tool *t, struct lines *l,
                   struct inserts *ins, const char *key, struct cfg_pos at, const char *text,
                   struct mg_err **err)
{
	if (at.line == 0) {
		insert_at(ins, t->pos.line, xasprintf("%s = %s\n", key, text));
		return 0;
	}
	if (replace_value(&l->v[at.line - 1], at.col, text, err) < 0)
		return mg_err_wrap(err, "%s:%u", cfg->mcp_path, at.line);
	return 0;
}

/* The table of a tool new to the file, "\n[server.tools.NAME]\n..." */
static char *tool_table_text(const struct cfg_tool_change *c, struct mg_err **err)
{
	struct mg_buf b = MG_BUF_INIT((size_t)1 << 16);
	struct toml_value *table = new_tool_table(c);
	const char *path[] = {"server", "tools", c->tool};
	int r = mg_buf_putc(&b, '\n', err) < 0 ||
	                toml_encode_table(&b, path, 3, false, table, "\n", err) < 0
	            ? -1
	            : 0;
	toml_free(table);
	if (r < 0) {
		mg_buf_free(&b);
		mg_err_wrap(err, "tool %s", c->tool);
		return NULL;
	}
	return mg_buf_steal(&b, NULL);
}

/* enabled = true is the default: the key's line goes when it holds only
 * the key and its value (the file is as it was before disable), else the
 * value becomes true. *removed says which. */
static int enable_line(const struct cfg *cfg, const struct cfg_server *s, struct lines *l,
                       bool *removed, struct mg_err **err)
{
	char *line = l->v[s->enabled_pos.line - 1];
	const char *p = line + strspn(line, " \t");
	*removed = false;
	if (strncmp(p, "enabled", 7) == 0) {
		p += 7 + strspn(p + 7, " \t");
		if (*p == '=') {
			p++;
			p += strspn(p, " \t");
			size_t word = strspn(p, "abcdefghijklmnopqrstuvwxyz");
			p += word;
			p += strspn(p, " \t\r\n");
			if (word > 0 && *p == '\0') {
				line[0] = '\0'; /* joined, an empty line is no line */
				*removed = true;
				return 0;
			}
		}
	}
	if (replace_value(&l->v[s->enabled_pos.line - 1], s->enabled_pos.col, "true", err) < 0)
		return mg_err_wrap(err, "%s:%u", cfg->mcp_path, s->enabled_pos.line);
	return 0;
}

/* Values replaced where they stand, lines inserted last */
static size_t note_start(const struct lines *l, size_t h, size_t floor);

/* A note's line that says where its server came from, as add and update
 * write it */
static bool is_origin(const char *line)
{
	line += strspn(line, " \t");
	if (*line != '#')
		return false;
	line += 1 + strspn(line + 1, " \t");
	return strncmp(line, "added by `mcpgate ", 18) == 0 ||
	       strncmp(line, "updated by `mcpgate ", 20) == 0;
}

/* The origin line of the note above header line start replaced by text (a
 * comment the encoder writes: nothing of text can leave it), or put right
 * above the header */
static int set_origin(struct lines *l, size_t start, struct inserts *ins, const char *text,
                      struct mg_err **err)
{
	struct mg_buf b = MG_BUF_INIT(4096);
	if (toml_encode_comment(&b, text, "\n", err) < 0) {
		mg_buf_free(&b);
		return mg_err_wrap(err, "the server's note");
	}
	char *line = mg_buf_steal(&b, NULL);
	for (size_t i = note_start(l, start, 0); i < start; i++)
		if (is_origin(l->v[i])) {
			free(l->v[i]);
			l->v[i] = line;
			return 0;
		}
	insert_at(ins, start, line);
	return 0;
}

static int apply(const struct cfg *cfg, const struct cfg_server *s, struct lines *l,
                 const struct cfg_server_change *ch, bool *enabled_removed, struct mg_err **err)
{
	const char *manifest = ch->manifest;
	const struct cfg_tool_change *changes = ch->tools;
	size_t n = ch->ntools;
	size_t start, main_end, end;
	server_ranges(cfg, s, l, &start, &main_end, &end);
	struct inserts ins = {0};
	int r = 0;
	*enabled_removed = false;

	if (ch->image != NULL) {
		struct mg_buf q = MG_BUF_INIT(4096);
		if (s->image_pos.line == 0)
			r = mg_err_set(err, "server %s has no image to change", s->name);
		else if (toml_encode_string(&q, ch->image, strlen(ch->image), err) < 0)
			r = mg_err_wrap(err, "the image");
		else if (replace_value(&l->v[s->image_pos.line - 1], s->image_pos.col,
		                       mg_buf_str(&q), err) < 0)
			r = mg_err_wrap(err, "%s:%u", cfg->mcp_path, s->image_pos.line);
		mg_buf_free(&q);
	}
	if (r == 0 && ch->origin != NULL)
		r = set_origin(l, start, &ins, ch->origin, err);
	if (r == 0 && ch->enabled == 0 && s->enabled_pos.line != 0 &&
	    replace_value(&l->v[s->enabled_pos.line - 1], s->enabled_pos.col, "false", err) < 0)
		r = mg_err_wrap(err, "%s:%u", cfg->mcp_path, s->enabled_pos.line);
	else if (r == 0 && ch->enabled == 0 && s->enabled_pos.line == 0)
		insert_at(&ins, after_last_content(l, start, main_end),
		          xasprintf("enabled = false\n"));
	else if (r == 0 && ch->enabled == 1 && s->enabled_pos.line != 0)
		r = enable_line(cfg, s, l, enabled_removed, err);

	/* the pin first: a new tool table may go in at the same line, after it */
	if (r == 0 && manifest != NULL) {
		struct mg_buf q = MG_BUF_INIT(4096);
		if (toml_encode_string(&q, manifest, strlen(manifest), err) < 0)
			r = mg_err_wrap(err, "the manifest hash");
		cleanup_free char *quoted = mg_buf_steal(&q, NULL);
		if (r == 0 && s->manifest_pos.line != 0) {
			if (replace_value(&l->v[s->manifest_pos.line - 1], s->manifest_pos.col,
			                  quoted, err) < 0)
				r = mg_err_wrap(err, "%s:%u", cfg->mcp_path, s->manifest_pos.line);
		} else if (r == 0) {
			insert_at(&ins, after_last_content(l, start, main_end),
			          xasprintf("manifest = %s\n", quoted));
		}
	}

	/* new tool tables at the end of the server's section, in the order given */
	size_t append_at = after_last_content(l, start, end);
	for (size_t k = 0; r == 0 && k < n; k++) {
		const struct cfg_tool_change *c = &changes[k];
		if (tool_of(s, c->tool) != NULL)
			continue;
		char *text = tool_table_text(c, err);
		if (text == NULL)
			r = -1;
		else
			insert_at(&ins, append_at, text);
	}

	/* existing tool tables */
	for (size_t k = 0; r == 0 && k < n; k++) {
		const struct cfg_tool_change *c = &changes[k];
		const struct cfg_tool *t = tool_of(s, c->tool);
		if (t == NULL)
			continue;
		if (c->effect >= 0)
			r = set_key(cfg, t, l, &ins, "effect", t->effect_pos,
			            effect_text((enum cfg_effect)c->effect), err);
		if (r == 0 && c->on >= 0)
			r = set_key(cfg, t, l, &ins, "on", t->on_pos, c->on ? "true" : "false",
			            err);
		if (r == 0 && c->confirm >= 0)
			r = set_key(cfg, t, l, &ins, "confirm", t->confirm_pos,
			            c->confirm ? "true" : "false", err);
	}
	if (r < 0) {
		inserts_free(&ins);
		return -1;
	}
	inserts_apply(&ins, l);
	return 0;
}

/* ---- the change approve means --------------------------------------------- */

/* Four steps at most: the server, tools, the tool, its key */
#define STEPS_PER_CHANGE 4

struct meant {
	struct toml_change *v;
	size_t n;
	struct toml_step *steps;
	struct toml_value **values; /* owned, one per change */
};

static void meant_free(struct meant *m)
{
	for (size_t i = 0; i < m->n; i++)
		toml_free(m->values[i]);
	free(m->values);
	free(m->steps);
	free(m->v);
}

/* SET of the steps the server, then keys (NULL-ended), to value (owned) */
static void meant_set(struct meant *m, const char *server, struct toml_value *value, ...)
{
	struct toml_step *steps = &m->steps[m->n * STEPS_PER_CHANGE];
	size_t k = 0;
	steps[k++] = (struct toml_step){"server", "name", server};
	va_list ap;
	va_start(ap, value);
	for (const char *key; (key = va_arg(ap, const char *)) != NULL && k < STEPS_PER_CHANGE;)
		steps[k++] = (struct toml_step){key, NULL, NULL};
	va_end(ap);
	m->values[m->n] = value;
	m->v[m->n++] = (struct toml_change){TOML_CHANGE_SET, steps, k, value};
}

/* The changes ch means, as apply() made them (enabled_removed: the key
 * went rather than became true): the image, enabled, the manifest set, and
 * each tool's settings: a new tool's table as a whole, an existing one's
 * keys one by one. The steps borrow server and the tools' names, not s. */
static void change_meant(const struct cfg_server *s, const char *server,
                         const struct cfg_server_change *ch, bool enabled_removed, struct meant *m)
{
	size_t n = ch->ntools;
	size_t cap = 3 + 3 * n;
	m->n = 0;
	m->v = xcalloc(cap, sizeof(*m->v));
	m->steps = xcalloc(cap * STEPS_PER_CHANGE, sizeof(*m->steps));
	m->values = xcalloc(cap, sizeof(*m->values));
	if (ch->image != NULL)
		meant_set(m, server, toml_new_string(ch->image), "image", NULL);
	if (ch->enabled == 0)
		meant_set(m, server, toml_new_bool(false), "enabled", NULL);
	else if (ch->enabled == 1 && s->enabled_pos.line != 0 && !enabled_removed)
		meant_set(m, server, toml_new_bool(true), "enabled", NULL);
	else if (ch->enabled == 1 && s->enabled_pos.line != 0) {
		struct toml_step *steps = &m->steps[m->n * STEPS_PER_CHANGE];
		steps[0] = (struct toml_step){"server", "name", server};
		steps[1] = (struct toml_step){"enabled", NULL, NULL};
		m->values[m->n] = NULL;
		m->v[m->n++] = (struct toml_change){TOML_CHANGE_REMOVE, steps, 2, NULL};
	}
	if (ch->manifest != NULL)
		meant_set(m, server, toml_new_string(ch->manifest), "manifest", NULL);
	for (size_t k = 0; k < n; k++) {
		const struct cfg_tool_change *c = &ch->tools[k];
		if (tool_of(s, c->tool) == NULL) {
			meant_set(m, server, new_tool_table(c), "tools", c->tool, NULL);
			continue;
		}
		if (c->on >= 0)
			meant_set(m, server, toml_new_bool(c->on != 0), "tools", c->tool, "on",
			          NULL);
		if (c->effect >= 0)
			meant_set(m, server,
			          toml_new_string(cfg_effect_name((enum cfg_effect)c->effect)),
			          "tools", c->tool, "effect", NULL);
		if (c->confirm >= 0)
			meant_set(m, server, toml_new_bool(c->confirm != 0), "tools", c->tool,
			          "confirm", NULL);
	}
}

/* The edited text and what it is meant to change; nothing checked yet */
static int compose_change(const char *text, size_t len, const char *name, const char *server,
                          const struct cfg_server_change *ch, char **out, size_t *out_len,
                          struct meant *m, struct mg_err **err)
{
	struct cfg *before = NULL;
	*m = (struct meant){0};
	for (size_t k = 0; k < ch->ntools; k++) {
		if (cfg_check_tool_name(ch->tools[k].tool, "the tool's name", err) < 0)
			return mg_err_wrap(
			    err,
			    "server %s offers a tool whose name mcp.toml cannot hold "
			    "(it stays off)",
			    server);
		if (ch->tools[k].effect >= 0 &&
		    effect_text((enum cfg_effect)ch->tools[k].effect) == NULL)
			return mg_err_set(err, "tool %s: an effect is read or write",
			                  ch->tools[k].tool);
	}
	if (cfg_parse(text, len, name, NULL, 0, NULL, &before, err) < 0)
		return -1;
	const struct cfg_server *s = cfg_find_server(before, server);
	if (s == NULL) {
		cfg_free(before);
		return mg_err_set(err, "no server \"%s\" in %s", server, name);
	}
	struct lines l;
	lines_split(text, len, &l);
	bool enabled_removed = false;
	int r = apply(before, s, &l, ch, &enabled_removed, err);
	struct mg_buf b = MG_BUF_INIT((size_t)CFG_FILE_MAX * 2);
	for (size_t i = 0; r == 0 && i < l.n; i++)
		r = mg_buf_puts(&b, l.v[i], err);
	lines_free(&l);
	if (r == 0)
		change_meant(s, server, ch, enabled_removed, m);
	cfg_free(before);
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

/* The edited text loads as mcp.toml, and differs from text by exactly what
 * was meant */
static int check_edit(const char *name, const char *before, size_t before_len, const char *after,
                      size_t after_len, const struct toml_change *changes, size_t n,
                      struct mg_err **err)
{
	struct cfg *loaded = NULL;
	int r = toml_check_edit(before, before_len, after, after_len, name, changes, n, err);
	if (r == 0 && cfg_parse(after, after_len, name, NULL, 0, NULL, &loaded, err) < 0)
		r = mg_err_wrap(err, "the edited text does not load");
	cfg_free(loaded);
	return r;
}

int cfg_change_server_text(const char *text, size_t len, const char *name, const char *server,
                           const struct cfg_server_change *ch, char **out, size_t *out_len,
                           struct mg_err **err)
{
	struct meant m;
	if (compose_change(text, len, name, server, ch, out, out_len, &m, err) < 0)
		return -1;
	int r = check_edit(name, text, len, *out, *out_len, m.v, m.n, err);
	meant_free(&m);
	if (r < 0) {
		free(*out);
		*out = NULL;
		return mg_err_wrap(err, "%s is left as it was", name);
	}
	return 0;
}

int cfg_edit_server(const char *text, size_t len, const char *name, const char *server,
                    const char *manifest, const struct cfg_tool_change *changes, size_t n,
                    char **out, size_t *out_len, struct mg_err **err)
{
	struct cfg_server_change ch = CFG_SERVER_CHANGE_INIT;
	ch.manifest = manifest;
	ch.tools = changes;
	ch.ntools = n;
	return cfg_change_server_text(text, len, name, server, &ch, out, out_len, err);
}

int cfg_change_server(const char *path, const char *server, const struct cfg_server_change *ch,
                      struct mg_err **err)
{
	cleanup_free char *text = NULL, *edited = NULL;
	size_t len = 0, out_len = 0;
	struct meant m;
	if (mg_read_file(path, CFG_FILE_MAX, &text, &len, err) < 0)
		return -1;
	if (compose_change(text, len, path, server, ch, &edited, &out_len, &m, err) < 0)
		return mg_err_wrap(err, "nothing was written to %s", path);
	int r = cfg_write_checked(path, text, len, edited, out_len, m.v, m.n, err);
	meant_free(&m);
	return r;
}

int cfg_approve(const char *path, const char *server, const char *manifest,
                const struct cfg_tool_change *changes, size_t n, struct mg_err **err)
{
	struct cfg_server_change ch = CFG_SERVER_CHANGE_INIT;
	ch.manifest = manifest;
	ch.tools = changes;
	ch.ntools = n;
	return cfg_change_server(path, server, &ch, err);
}

/* ---- remove: one [[server]] fewer ---------------------------------------- */

static bool is_comment(const char *line)
{
	line += strspn(line, " \t");
	return *line == '#';
}

static bool is_blank(const char *line)
{
	return line[strspn(line, " \t\r\n")] == '\0';
}

/* The first line (0-based) of the comment lines right above header line h
 * (h itself when there are none): a server's own note, as add writes it */
static size_t note_start(const struct lines *l, size_t h, size_t floor)
{
	while (h > floor && is_comment(l->v[h - 1]))
		h--;
	return h;
}

int cfg_remove_server_text(const char *text, size_t len, const char *name, const char *server,
                           char **out, size_t *out_len, unsigned *first, unsigned *last,
                           struct mg_err **err)
{
	struct cfg *cfg = NULL;
	if (cfg_parse(text, len, name, NULL, 0, NULL, &cfg, err) < 0)
		return mg_err_wrap(err, "%s is left as it was", name);
	const struct cfg_server *s = cfg_find_server(cfg, server);
	if (s == NULL) {
		cfg_free(cfg);
		return mg_err_set(err, "no server \"%s\" in %s", server, name);
	}
	struct lines l;
	lines_split(text, len, &l);
	size_t start, main_end, end;
	server_ranges(cfg, s, &l, &start, &main_end, &end);
	/* from its note above its header to the next server's note, or the end */
	size_t from = note_start(&l, start, 0);
	size_t to = end < l.n ? note_start(&l, end, start + 1) : l.n;
	if (to == l.n)
		while (from > 0 && is_blank(l.v[from - 1]))
			from--; /* the last one: no blank lines left at the end */
	*first = (unsigned)from + 1;
	*last = (unsigned)to;
	struct mg_buf b = MG_BUF_INIT((size_t)CFG_FILE_MAX * 2);
	int r = 0;
	for (size_t i = 0; r == 0 && i < l.n; i++)
		if (i < from || i >= to)
			r = mg_buf_puts(&b, l.v[i], err);
	lines_free(&l);
	cfg_free(cfg);
	const struct toml_step step = {"server", "name", server};
	const struct toml_change change = {TOML_CHANGE_REMOVE, &step, 1, NULL};
	if (r == 0)
		r = check_edit(name, text, len, b.data, b.len, &change, 1, err);
	if (r < 0) {
		mg_buf_free(&b);
		return mg_err_wrap(err, "%s is left as it was", name);
	}
	*out = mg_buf_steal(&b, out_len);
	return 0;
}

/* ---- add: one [[server]] more ---------------------------------------------- */

#define NEW_FILE_HEAD "# mcp.toml: the servers mcpgate runs (mcp.toml(5))\n"

/* The text of the file at path with entry appended under comment (its
 * text read into *before, NULL when there is none) */
static int compose_append(const char *path, const char *const *comment, size_t ncomment,
                          const struct toml_value *entry, char **before, size_t *before_len,
                          struct mg_buf *b, struct mg_err **err)
{
	*before = NULL;
	*before_len = 0;
	bool exists = mg_read_file(path, CFG_FILE_MAX, before, before_len, NULL) == 0;
	if (!exists && errno != ENOENT)
		return mg_err_sys(err, errno, "%s", path);
	const char *steps_key = "server";
	int r = 0;
	if (exists) {
		r = mg_buf_append(b, *before, *before_len, err);
		if (r == 0 && *before_len > 0 && (*before)[*before_len - 1] != '\n')
			r = mg_buf_putc(b, '\n', err);
	} else {
		r = mg_buf_puts(b, NEW_FILE_HEAD, err);
	}
	if (r == 0)
		r = mg_buf_putc(b, '\n', err);
	for (size_t i = 0; r == 0 && i < ncomment; i++)
		r = toml_encode_comment(b, comment[i], "\n", err);
	if (r == 0)
		r = toml_encode_table(b, &steps_key, 1, true, entry, "\n", err);
	return r;
}

int cfg_append_server(const char *path, const char *const *comment, size_t ncomment,
                      const struct toml_value *entry, struct mg_err **err)
{
	cleanup_free char *text = NULL;
	size_t len = 0;
	struct mg_buf b = MG_BUF_INIT((size_t)CFG_FILE_MAX * 2);
	const char *steps_key = "server";
	const struct toml_step step = {steps_key, NULL, NULL};
	const struct toml_change change = {TOML_CHANGE_APPEND, &step, 1, entry};
	int r = compose_append(path, comment, ncomment, entry, &text, &len, &b, err);
	if (r == 0)
		r = cfg_write_checked(path, text, len, b.data, b.len, &change, 1, err);
	else
		mg_err_wrap(err, "the new entry cannot be written: nothing was written to %s",
		            path);
	mg_buf_free(&b);
	return r;
}

int cfg_append_check(const char *path, const char *config_path, const struct toml_value *entry,
                     struct mg_err **err)
{
	cleanup_free char *text = NULL, *config = NULL;
	size_t len = 0, config_len = 0;
	bool has_config = config_path != NULL &&
	                  mg_read_file(config_path, CFG_FILE_MAX, &config, &config_len, NULL) == 0;
	if (config_path != NULL && !has_config && errno != ENOENT)
		return mg_err_sys(err, errno, "%s", config_path);
	struct mg_buf b = MG_BUF_INIT((size_t)CFG_FILE_MAX * 2);
	struct cfg *loaded = NULL;
	int r = compose_append(path, NULL, 0, entry, &text, &len, &b, err);
	if (r == 0)
		r = cfg_parse(b.data, b.len, path, has_config ? config : NULL, config_len,
		              has_config ? config_path : NULL, &loaded, err);
	cfg_free(loaded);
	mg_buf_free(&b);
	return r;
}

/* ---- writing ----------------------------------------------------------------- */

int cfg_write_checked(const char *path, const char *before, size_t before_len, const char *after,
                      size_t after_len, const struct toml_change *changes, size_t n,
                      struct mg_err **err)
{
	if (check_edit(path, before, before_len, after, after_len, changes, n, err) < 0)
		return mg_err_wrap(err, "nothing was written to %s", path);
	/* what was read is what is there still: an edit of someone else's since
	 * is not written over */
	cleanup_free char *now = NULL;
	size_t now_len = 0;
	bool there = mg_read_file(path, CFG_FILE_MAX, &now, &now_len, NULL) == 0;
	if (!there && errno != ENOENT)
		return mg_err_sys(err, errno, "%s", path);
	if (there != (before != NULL) ||
	    (there && (now_len != before_len || memcmp(now, before, now_len) != 0)))
		return mg_err_set(err,
		                  "%s changed while mcpgate edited it: nothing was written; try "
		                  "again",
		                  path);
	return cfg_write_atomic(path, after, after_len, err);
}

int cfg_write_atomic(const char *path, const char *text, size_t len, struct mg_err **err)
{
	return mg_write_file_atomic(path, text, len, 0600, err);
}
