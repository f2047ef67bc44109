/* The one way mcpgate writes TOML: mcp.toml, and an MCP client's
 * config.toml (docs/2026-12-02-one-encoder.md).
 *
 * Every value, key and comment that reaches a file goes through here, and
 * whatever its bytes (a path, a package's name, a tool's name, a stranger's
 * text), it comes out as one token that a TOML reader takes back as that
 * very value: a string is a basic string with every quote, backslash and
 * control character escaped, and C1 controls, U+2028, U+2029 and what hides
 * text escaped too (mg_quote's MG_QUOTE_TEXT); a key is bare only when it is
 * [A-Za-z0-9_-]+, else a quoted string; a comment is one line, its control
 * and line-ending characters shown as escapes (mg_shown). Text that is not
 * UTF-8 cannot be a TOML string or key, and is refused.
 *
 * Each function appends to b; on failure b is as it was. */
#ifndef MG_TOML_TOML_ENCODE_H
#define MG_TOML_TOML_ENCODE_H

#include <stdbool.h>
#include <stddef.h>

#include "internal/base/buf.h"
#include "internal/base/err.h"
#include "internal/toml/toml.h"

int toml_encode_string(struct mg_buf *b, const char *s, size_t len, struct mg_err **err);

int toml_encode_key(struct mg_buf *b, const char *s, size_t len, struct mg_err **err);

/* Any value on one line: arrays as [a, b], tables as inline { k = v } */
int toml_encode_value(struct mg_buf *b, const struct toml_value *v, struct mg_err **err);

/* "# TEXT" and eol ("\n" or "\r\n") */
int toml_encode_comment(struct mg_buf *b, const char *text, const char *eol, struct mg_err **err);

/* The table t under its header, the keys path[0..n) ([a.b], or [[a.b]]
 * when element, an array of tables' next element), then a line "key =
 * value" for each member, in t's order; a member that is a table is
 * written inline. Lines end in eol ("\n" or "\r\n"). */
int toml_encode_table(struct mg_buf *b, const char *const *path, size_t n, bool element,
                      const struct toml_value *t, const char *eol, struct mg_err **err);

#endif
