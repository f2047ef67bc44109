/* What the editors of internal/clients share: a list of text edits made on
 * the original bytes, and the few rules both formats follow. */
#ifndef MG_CLIENTS_INTERNAL_H
#define MG_CLIENTS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "internal/base/buf.h"
#include "internal/base/err.h"
#include "internal/clients/clients.h"

/* Replace [start, end) of the original text by text (owned; "" to cut) */
struct clients_edit {
	size_t start;
	size_t end;
	char *text;
};

struct clients_edits {
	struct clients_edit *v;
	size_t n;
};

/* Takes ownership of text */
void clients_edits_add(struct clients_edits *e, size_t start, size_t end, char *text);
/* The original with every edit made; edits at one offset in the order added.
 * Overlapping edits are a bug of ours, reported as an error. */
int clients_edits_apply(const char *text, size_t len, const struct clients_edits *e, char **out,
                        size_t *out_len, struct mg_err **err);
void clients_edits_free(struct clients_edits *e);

/* verified: the format's check of the edited text in *out (0 or -1 with err
 * set). When it failed the edit is a bug of ours: *out is freed and the
 * error says the file is left as it was. */
int clients_checked(int verified, const char *filename, char **out, struct mg_err **err);

/* "\r\n" when every line of the text ends so, else "\n": what is written
 * keeps a file all CRLF or not, so a second edit sees what the first did */
const char *clients_eol(const char *text, size_t len);

/* 1-based line and column (in bytes) of offset off */
void clients_line_col(const char *text, size_t off, unsigned *line, unsigned *col);

/* Whether a command's last path component is "mcpgate" */
bool clients_is_mcpgate(const char *command, size_t len);

/* The error for an entry of the name asked for that is not mcpgate's
 * (command NULL: it has none), which is never touched; returns -1 */
int clients_not_ours(const char *filename, unsigned line, unsigned col, const char *servers_key,
                     const char *name, const char *command, size_t len, struct mg_err **err);

/* s as a JSON string literal for a client's JSON file (json_quote_text:
 * no character of s can end the string or a line to any reader) */
void clients_quote(struct mg_buf *b, const char *s);

/* The formats */
int clients_jsonc_add(const struct clients_client *c, const char *text, size_t len,
                      const char *filename, const struct clients_entry *e, char **out,
                      size_t *out_len, struct mg_err **err);
int clients_jsonc_remove(const struct clients_client *c, const char *text, size_t len,
                         const char *filename, const char *name, char **out, size_t *out_len,
                         struct mg_err **err);
int clients_jsonc_entries(const struct clients_client *c, const char *text, size_t len,
                          const char *filename, struct strv *names, struct mg_err **err);
int clients_toml_add(const struct clients_client *c, const char *text, size_t len,
                     const char *filename, const struct clients_entry *e, char **out,
                     size_t *out_len, struct mg_err **err);
int clients_toml_remove(const struct clients_client *c, const char *text, size_t len,
                        const char *filename, const char *name, char **out, size_t *out_len,
                        struct mg_err **err);
int clients_toml_entries(const struct clients_client *c, const char *text, size_t len,
                         const char *filename, struct strv *names, struct mg_err **err);

#endif
