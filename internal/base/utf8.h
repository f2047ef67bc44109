/* UTF-8 checks shared by the TOML and JSON code. */
#ifndef MG_BASE_UTF8_H
#define MG_BASE_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Length of the valid UTF-8 sequence at p (1-4), or 0 when it is not valid
 * UTF-8 (overlong forms, surrogates and values past U+10FFFF are invalid). */
size_t mg_utf8_seq(const unsigned char *p, size_t avail, uint32_t *cp);

/* Offset of the first invalid byte, or n when all of p is valid. */
size_t mg_utf8_check(const char *p, size_t n);

/* Encode a scalar value; returns bytes written (1-4) or 0 if cp is not a
 * Unicode scalar value. out must have room for 4 bytes. */
size_t mg_utf8_encode(uint32_t cp, char *out);

/* The one renderer of text shown to a person (review, questions, notices,
 * errors, log lines; docs/2026-12-02-shown-text.md). A stranger's text as
 * a terminal or a client should show it (allocated): every control
 * character (C0, DEL, C1) as \n, \r, \t or \xNN, what breaks lines or
 * reorders or hides text (U+2028, U+2029, bidi controls, zero-width and
 * other default-ignorable characters) as \u{XXXX}, an invalid byte as
 * \xNN, and the backslash itself as \\, so that what is seen is all that
 * is there, on one line. */
char *mg_shown(const char *s, size_t len);
/* What every text shown to a person passes last (errors, notices, log
 * lines): the same escapes, but \n kept as a line break and the backslash
 * as it is, so mcpgate's own text of several lines, whose stranger's parts
 * were escaped with mg_shown where they went in, is shown as it was and
 * nothing in it can still hide or break a line */
char *mg_shown_lines(const char *s, size_t len);
/* What mg_shown writes as an escape rather than as itself (besides \ and
 * invalid bytes): the code points that hide, reorder or break text */
bool mg_cp_hidden(uint32_t cp);

/* s with every invalid byte replaced by U+FFFD (allocated; *out_len its
 * length): text from a stranger kept whole where it must be valid UTF-8 */
char *mg_utf8_lossy(const char *s, size_t len, size_t *out_len);

#endif
