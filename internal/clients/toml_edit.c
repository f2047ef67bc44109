/* Codex CLI's config.toml, edited a table at a time.
 *
 * The file is parsed by internal/toml, which keeps the line of every
 * [table] header; a table's text runs from its header to the next header,
 * less the blank and comment lines just before that one (they belong to
 * what follows). The entry is the table [mcp_servers.NAME] and its
 * sub-tables: adding writes a new table after the last mcp_servers table
 * (or at the end), replacing rewrites the table, removing cuts it with the
 * blank line before it. What is written comes from the one TOML encoder
 * (internal/toml/toml_encode.h), and the result is checked: its tree must
 * be the tree before with exactly the entry set or removed. */
#include <stdlib.h>
#include <string.h>

#include "internal/base/cleanup.h"
#include "internal/base/xalloc.h"
#include "internal/clients/clients-internal.h"
#include "internal/toml/toml.h"
#include "internal/toml/toml_change.h"
#include "internal/toml/toml_encode.h"

struct tdoc {
	const char *text;
	size_t len;
	const char *filename;
	struct toml_value *root;
	size_t *line_off; /* line L (1-based) is [line_off[L-1], line_off[L]) */
	size_t nlines;
	unsigned *headers; /* the lines of every header, ascending */
	size_t nheaders;
	size_t bom; /* 3 when the text starts with one: line 1 starts after it, as its columns */
};

struct lines_of {
	unsigned *v;
	size_t n;
	size_t cap;
};

static void push_line(struct lines_of *l, unsigned line)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		l->v = xreallocarray(l->v, l->cap, sizeof(*l->v));
	}
	l->v[l->n++] = line;
}

static size_t off_of(const struct tdoc *d, struct toml_pos pos)
{
	if (pos.line == 0 || pos.line > d->nlines)
		return d->len;
	size_t off = d->line_off[pos.line - 1] + (pos.col > 0 ? pos.col - 1 : 0);
	return off < d->len ? off : d->len;
}

static char char_at(const struct tdoc *d, struct toml_pos pos)
{
	size_t off = off_of(d, pos);
	return off < d->len ? d->text[off] : '\0';
}

static bool is_header(const struct tdoc *d, const struct toml_value *v)
{
	return v->kind == TOML_TABLE && char_at(d, v->pos) == '[';
}

/* The header lines of v and everything below it (the parser bounds the depth) */
static void collect_headers(const struct tdoc *d, const struct toml_value *v, struct lines_of *out)
{
	if (v->kind == TOML_TABLE) {
		if (is_header(d, v))
			push_line(out, v->pos.line);
		for (size_t i = 0; i < v->u.table.len; i++)
			collect_headers(d, v->u.table.items[i].value, out);
	} else if (v->kind == TOML_ARRAY) {
		for (size_t i = 0; i < v->u.array.len; i++)
			collect_headers(d, v->u.array.items[i], out);
	}
}

static int cmp_line(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	return x < y ? -1 : x > y;
}

static void tdoc_free(struct tdoc *d)
{
	toml_free(d->root);
	free(d->line_off);
	free(d->headers);
}

static int tdoc_parse(struct tdoc *d, const char *text, size_t len, const char *filename,
                      struct mg_err **err)
{
	*d = (struct tdoc){.text = text, .len = len, .filename = filename};
	if (toml_parse(text, len, filename, &d->root, err) < 0)
		return -1;
	d->bom = len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += text[i] == '\n';
	d->nlines = n + (len > 0 && text[len - 1] != '\n');
	d->line_off = xcalloc(d->nlines + 1, sizeof(*d->line_off));
	d->line_off[0] = d->bom;
	size_t l = 1;
	for (size_t i = 0; i < len && l < d->nlines; i++)
		if (text[i] == '\n')
			d->line_off[l++] = i + 1;
	d->line_off[d->nlines] = len;
	struct lines_of h = {0};
	for (size_t i = 0; i < d->root->u.table.len; i++)
		collect_headers(d, d->root->u.table.items[i].value, &h);
	if (h.n > 1)
		qsort(h.v, h.n, sizeof(*h.v), cmp_line);
	d->headers = h.v;
	d->nheaders = h.n;
	return 0;
}

/* Offset where line L starts (L = nlines + 1: the end) */
static size_t line_at(const struct tdoc *d, unsigned line)
{
	return line <= d->nlines ? d->line_off[line - 1] : d->len;
}

static bool blank_line(const struct tdoc *d, unsigned line, bool comment_too)
{
	size_t i = line_at(d, line), end = line_at(d, line + 1);
	while (i < end && (d->text[i] == ' ' || d->text[i] == '\t'))
		i++;
	return i == end || d->text[i] == '\n' || d->text[i] == '\r' ||
	       (comment_too && d->text[i] == '#');
}

/* The lines [header, *end) of the table whose header is on that line */
static unsigned region_end(const struct tdoc *d, unsigned header)
{
	unsigned end = (unsigned)d->nlines + 1;
	for (size_t i = 0; i < d->nheaders; i++)
		if (d->headers[i] > header) {
			end = d->headers[i];
			break;
		}
	while (end - 1 > header && blank_line(d, end - 1, true))
		end--;
	return end;
}

static const char *an(const char *word)
{
	return strchr("aeiou", word[0]) != NULL ? "an" : "a";
}

static int tdoc_fail_kind(const struct tdoc *d, const struct toml_value *v, const char *what,
                          struct mg_err **err)
{
	const char *kind = toml_kind_name(v->kind);
	return mg_err_set(err, "%s:%u:%u: %s is %s %s, not a table", d->filename, v->pos.line,
	                  v->pos.col, what, an(kind), kind);
}

static const struct toml_value *entry_command(const struct toml_value *entry)
{
	const struct toml_value *cmd = toml_get(entry, "command");
	return cmd != NULL && cmd->kind == TOML_STRING ? cmd : NULL;
}

/* The servers table, NULL when absent */
static int tdoc_servers(const struct tdoc *d, const struct clients_client *c,
                        const struct toml_value **servers, struct mg_err **err)
{
	*servers = toml_get(d->root, c->servers_key);
	if (*servers != NULL && (*servers)->kind != TOML_TABLE)
		return tdoc_fail_kind(d, *servers, c->servers_key, err);
	return 0;
}

/* The servers table and the entry called name in it (each NULL when absent);
 * the entry must be mcpgate's and written as its own table */
static int tdoc_entry(const struct tdoc *d, const struct clients_client *c, const char *name,
                      const struct toml_value **servers, const struct toml_value **entry,
                      struct mg_err **err)
{
	*entry = NULL;
	if (tdoc_servers(d, c, servers, err) < 0)
		return -1;
	if (*servers == NULL)
		return 0;
	const struct toml_value *e = toml_get(*servers, name);
	if (e == NULL)
		return 0;
	cleanup_free char *what = xasprintf("%s.%s", c->servers_key, name);
	if (e->kind != TOML_TABLE)
		return tdoc_fail_kind(d, e, what, err);
	const struct toml_value *cmd = entry_command(e);
	if (cmd == NULL || !clients_is_mcpgate(cmd->u.str.ptr, cmd->u.str.len))
		return clients_not_ours(d->filename, e->pos.line, e->pos.col, c->servers_key, name,
		                        cmd != NULL ? cmd->u.str.ptr : NULL,
		                        cmd != NULL ? cmd->u.str.len : 0, err);
	if (!is_header(d, e))
		return mg_err_set(
		    err,
		    "%s:%u:%u: %s is written %s; mcpgate rewrites only a [%s] table: "
		    "change it by hand",
		    d->filename, e->pos.line, e->pos.col, what,
		    char_at(d, e->pos) == '{' ? "as an inline table" : "with dotted keys", what);
	*entry = e;
	return 0;
}

/* The document, and tdoc_entry's servers and entry; on failure nothing is
 * left to free */
static int tdoc_open(struct tdoc *d, const struct clients_client *c, const char *text, size_t len,
                     const char *filename, const char *name, const struct toml_value **servers,
                     const struct toml_value **entry, struct mg_err **err)
{
	*servers = *entry = NULL;
	if (tdoc_parse(d, text, len, filename, err) < 0 ||
	    tdoc_entry(d, c, name, servers, entry, err) < 0) {
		tdoc_free(d);
		*d = (struct tdoc){0};
		return -1;
	}
	return 0;
}

/* Cut the table whose header is on that line, with the blank line before it */
static void cut_table(const struct tdoc *d, unsigned header, struct clients_edits *ed)
{
	unsigned from = header > 1 && blank_line(d, header - 1, false) ? header - 1 : header;
	clients_edits_add(ed, line_at(d, from), line_at(d, region_end(d, header)), xstrdup(""));
}

/* A file that did not start with a blank line does not after a cut at its
 * top (the blank line that separated the cut table from the next) */
static void trim_top(const struct tdoc *d, char *out, size_t *len)
{
	if (d->nlines == 0 || blank_line(d, 1, false))
		return;
	size_t at = d->bom, i = at;
	while (i < *len) {
		size_t j = i;
		while (j < *len && (out[j] == ' ' || out[j] == '\t' || out[j] == '\r'))
			j++;
		if (j >= *len || out[j] != '\n')
			break;
		i = j + 1;
	}
	memmove(out + at, out + i, *len - i + 1);
	*len -= i - at;
}

/* The entry as the table [SERVERS.NAME] holds it */
static struct toml_value *entry_table(const struct clients_entry *e)
{
	struct toml_value *t = toml_new_table();
	toml_table_set(t, "command", 7, toml_new_string(e->command));
	struct toml_value *args = toml_new_array();
	for (size_t i = 0; i < e->nargs; i++)
		toml_array_push(args, toml_new_string(e->args[i]));
	toml_table_set(t, "args", 4, args);
	return t;
}

/* The entry's table, written by the one encoder (the entry was checked:
 * valid UTF-8, so encoding cannot fail) */
static char *table_text(const struct clients_client *c, const struct clients_entry *e,
                        const char *eol)
{
	struct mg_buf b = MG_BUF_INIT(CLIENTS_FILE_MAX);
	struct toml_value *t = entry_table(e);
	const char *path[] = {c->servers_key, e->name};
	toml_encode_table(&b, path, 2, false, t, eol, NULL);
	toml_free(t);
	return mg_buf_steal(&b, NULL);
}

/* The checked edit: the edited text is the text as read with exactly the
 * entry set to e (added or replaced) or removed (e NULL, and there) */
static int check_edit(const struct clients_client *c, const struct tdoc *d, const char *after,
                      size_t after_len, const char *name, const struct clients_entry *e,
                      bool removed, struct mg_err **err)
{
	const struct toml_step path[] = {{c->servers_key, NULL, NULL}, {name, NULL, NULL}};
	struct toml_value *t = e != NULL ? entry_table(e) : NULL;
	const struct toml_change change = {e != NULL ? TOML_CHANGE_SET : TOML_CHANGE_REMOVE, path,
	                                   2, t};
	int r = toml_check_edit(d->text, d->len, after, after_len, d->filename, &change,
	                        e != NULL || removed ? 1 : 0, err);
	toml_free(t);
	return r;
}

/* Make the edits (the top trimmed after a cut at it), check the result */
static int finish(const struct clients_client *c, const struct tdoc *d, struct clients_edits *ed,
                  const char *name, const struct clients_entry *e, bool removed, char **out,
                  size_t *out_len, struct mg_err **err)
{
	int r = clients_edits_apply(d->text, d->len, ed, out, out_len, err);
	clients_edits_free(ed);
	if (r < 0)
		return -1;
	if (removed)
		trim_top(d, *out, out_len);
	return clients_checked(check_edit(c, d, *out, *out_len, name, e, removed, err), d->filename,
	                       out, err);
}

int clients_toml_add(const struct clients_client *c, const char *text, size_t len,
                     const char *filename, const struct clients_entry *e, char **out,
                     size_t *out_len, struct mg_err **err)
{
	struct tdoc d;
	const struct toml_value *servers = NULL, *entry = NULL;
	if (tdoc_open(&d, c, text, len, filename, e->name, &servers, &entry, err) < 0)
		return -1;
	const char *eol = clients_eol(text, len);
	char *table = table_text(c, e, eol);
	struct clients_edits ed = {0};
	int change = CLIENTS_ADDED;
	if (entry != NULL) {
		struct lines_of below = {0};
		collect_headers(&d, entry, &below);
		unsigned h = entry->pos.line;
		size_t start = line_at(&d, h), end = line_at(&d, region_end(&d, h));
		bool same = below.n == 1 && end - start == strlen(table) &&
		            memcmp(text + start, table, end - start) == 0;
		change = same ? CLIENTS_UNCHANGED : CLIENTS_REPLACED;
		clients_edits_add(&ed, start, end, table);
		for (size_t i = 0; i < below.n; i++)
			if (below.v[i] != h)
				cut_table(&d, below.v[i], &ed);
		free(below.v);
	} else if (servers != NULL && char_at(&d, servers->pos) == '{') {
		clients_edits_free(&ed);
		free(table);
		int r = mg_err_set(err,
		                   "%s:%u:%u: %s is an inline table, beside which TOML allows no "
		                   "[%s.%s] table: write its entries as [%s.NAME] tables",
		                   filename, servers->pos.line, servers->pos.col, c->servers_key,
		                   c->servers_key, e->name, c->servers_key);
		tdoc_free(&d);
		return r;
	} else {
		/* after the last table of the servers, else at the end */
		unsigned after = 0;
		struct lines_of tables = {0};
		if (servers != NULL)
			collect_headers(&d, servers, &tables);
		for (size_t i = 0; i < tables.n; i++) {
			unsigned end = region_end(&d, tables.v[i]);
			after = end > after ? end : after;
		}
		free(tables.v);
		size_t at = after > 0 ? line_at(&d, after) : len;
		const char *nl = at == len && len > 0 && text[len - 1] != '\n' ? eol : "";
		clients_edits_add(&ed, at, at, xasprintf("%s%s%s", nl, len > 0 ? eol : "", table));
		free(table);
	}
	int r = finish(c, &d, &ed, e->name, e, false, out, out_len, err);
	tdoc_free(&d);
	return r < 0 ? -1 : change;
}

int clients_toml_remove(const struct clients_client *c, const char *text, size_t len,
                        const char *filename, const char *name, char **out, size_t *out_len,
                        struct mg_err **err)
{
	struct tdoc d;
	const struct toml_value *servers = NULL, *entry = NULL;
	if (tdoc_open(&d, c, text, len, filename, name, &servers, &entry, err) < 0)
		return -1;
	struct clients_edits ed = {0};
	int change = CLIENTS_UNCHANGED;
	if (entry != NULL) {
		struct lines_of tables = {0};
		collect_headers(&d, entry, &tables);
		for (size_t i = 0; i < tables.n; i++)
			cut_table(&d, tables.v[i], &ed);
		free(tables.v);
		change = CLIENTS_REMOVED;
	}
	int r = finish(c, &d, &ed, name, NULL, entry != NULL, out, out_len, err);
	tdoc_free(&d);
	return r < 0 ? -1 : change;
}

int clients_toml_entries(const struct clients_client *c, const char *text, size_t len,
                         const char *filename, struct strv *names, struct mg_err **err)
{
	struct tdoc d;
	const struct toml_value *servers = NULL;
	int r = tdoc_parse(&d, text, len, filename, err);
	if (r == 0)
		r = tdoc_servers(&d, c, &servers, err);
	for (size_t i = 0; r == 0 && servers != NULL && i < servers->u.table.len; i++) {
		const struct toml_kv *kv = &servers->u.table.items[i];
		const struct toml_value *cmd =
		    kv->value->kind == TOML_TABLE ? entry_command(kv->value) : NULL;
		if (cmd != NULL && clients_is_mcpgate(cmd->u.str.ptr, cmd->u.str.len))
			strv_push(names, kv->key);
	}
	tdoc_free(&d);
	return r;
}
