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

/* Whether a character must never stand as it is in text mcpgate writes for
 * another program to parse or a person to read: C0 and C1 controls and DEL,
 * U+2028 and U+2029 (line ends to JavaScript and to some editors), and what
 * reorders or hides text (bidi overrides and isolates, zero-width
 * characters, U+FEFF). mg_shown() escapes them, and so does mg_quote()'s
 * MG_QUOTE_TEXT. */
bool mg_utf8_unsafe(uint32_t cp);

/* A stranger's text as a terminal or a log should show it (allocated):
 * every control character (C0, DEL, C1) as \n, \r, \t or \xNN, the rest
 * of what mg_utf8_unsafe() names as \u{XXXX}, an invalid byte as \xNN, and the
 * backslash itself as \\, so that what is seen is all that is there. */
char *mg_shown(const char *s, size_t len);

/* s with every invalid byte replaced by U+FFFD (allocated; *out_len its
 * length): text from a stranger kept whole where it must be valid UTF-8 */
char *mg_utf8_lossy(const char *s, size_t len, size_t *out_len);

#endif
