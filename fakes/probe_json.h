/* A tiny JSON reader and writer for the test fakes (mcpgate-probe, fake-runtime).
 *
 * libc only, so the probe links statically against musl. The reader does not
 * build a tree: pj_parse checks that a text is one JSON value (depth-limited)
 * and returns its span; members and elements are then found by walking spans
 * of the same, already checked, text. Spans point into the caller's text and
 * own nothing.
 */
#ifndef MCPGATE_FAKES_PROBE_JSON_H
#define MCPGATE_FAKES_PROBE_JSON_H

#include <stddef.h>

#define PJ_MAX_DEPTH 64

/* Raw text of one JSON value, without surrounding whitespace. */
struct pj_span {
	const char *p;
	size_t n;
};

enum pj_kind { PJ_INVALID, PJ_NULL, PJ_BOOL, PJ_NUMBER, PJ_STRING, PJ_ARRAY, PJ_OBJECT };

/* 0 and *value set when text[0..len) is exactly one JSON value (whitespace
 * around it allowed, nesting at most PJ_MAX_DEPTH); -1 otherwise. */
int pj_parse(const char *text, size_t len, struct pj_span *value);

/* The kind of a span returned by this module (PJ_INVALID for an empty span). */
enum pj_kind pj_kind(struct pj_span v);

/* Walks the members of an object or the elements of an array. */
struct pj_iter {
	const char *p;
	const char *end;
	int is_object;
};
void pj_iter_init(struct pj_iter *it, struct pj_span container);
/* 1 with the next member (key is the raw key string; for an array key.p is
 * NULL), 0 at the end. */
int pj_iter_next(struct pj_iter *it, struct pj_span *key, struct pj_span *value);

/* 1 and *value set when obj is an object with a member named key (the first
 * one when a key repeats); 0 otherwise (also when obj is not an object). */
int pj_member(struct pj_span obj, const char *key, struct pj_span *value);

/* The decoded string (escapes resolved, a lone surrogate becomes U+FFFD),
 * NUL-terminated, in memory the caller frees; *len (if not NULL) is its length,
 * which may be less than strlen when it holds \u0000. NULL when v is not a string. */
char *pj_string(struct pj_span v, size_t *len);

/* 1 when v is a string whose decoded text equals s (no embedded NUL). */
int pj_string_eq(struct pj_span v, const char *s);

/* 0 and *out set when v is an integer number (no fraction, no exponent) in
 * range; -1 otherwise. */
int pj_integer(struct pj_span v, long long *out);

/* A growable output buffer; xmalloc-style: running out of memory aborts. */
struct pj_buf {
	char *p;
	size_t len;
	size_t cap;
};
void pj_buf_add(struct pj_buf *b, const char *s, size_t n);
void pj_buf_adds(struct pj_buf *b, const char *s);
void pj_buf_addf(struct pj_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends n bytes the caller fills in; returns where they start. */
char *pj_buf_extend(struct pj_buf *b, size_t n);
void pj_buf_free(struct pj_buf *b);

/* Appends s[0..n) as a JSON string with quotes: control characters, quote
 * and backslash escaped; invalid UTF-8 bytes become U+FFFD so the output is
 * always valid JSON. */
void pj_put_string(struct pj_buf *b, const char *s, size_t n);
void pj_put_cstring(struct pj_buf *b, const char *s);

void *pj_xmalloc(size_t n);
void *pj_xrealloc(void *p, size_t n);
char *pj_xstrdup(const char *s);

#endif
