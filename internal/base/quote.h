/* The one escaper of string literals that mcpgate writes: a JSON string and
 * a TOML basic string are the same text here ("...", with \" \\ \b \t \n \f
 * \r and \uXXXX), so JSON (internal/json) and TOML (internal/toml's encoder)
 * both quote through it. */
#ifndef MG_BASE_QUOTE_H
#define MG_BASE_QUOTE_H

#include <stddef.h>

#include "internal/base/buf.h"
#include "internal/base/err.h"

enum mg_quote_mode {
	/* C0 controls and DEL escaped, every other character as it is: the
	 * canonical JSON that manifest pins hash (docs/canonical-json.md) */
	MG_QUOTE_CANONICAL,
	/* also every character mg_cp_hidden() names (C1 controls, U+2028,
	 * U+2029, what reorders or hides text) as \uXXXX: for a file another
	 * program parses or a person reads, where no reader may take a value's
	 * character for a line end and nothing in a value hides from the eye */
	MG_QUOTE_TEXT,
};

/* Append s (len bytes, which may hold NUL) as a quoted string literal. Text
 * that is not UTF-8 is an error naming the byte; out is then as it was. */
int mg_quote(const char *s, size_t len, enum mg_quote_mode mode, struct mg_buf *out,
             struct mg_err **err);

#endif
