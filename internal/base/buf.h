/* Bounded growable byte buffers (after curl's dynbuf).
 *
 * Every buffer has a hard maximum fixed at init: growing past it is an error
 * (never an allocation without end). data is always NUL-terminated once
 * anything was appended, so text can be read as a C string; len excludes the
 * NUL. The buffer owns data until mg_buf_steal(). */
#ifndef MG_BASE_BUF_H
#define MG_BASE_BUF_H

#include <stdarg.h>
#include <stddef.h>

#include "internal/base/err.h"

struct mg_buf {
	char *data;
	size_t len;
	size_t cap;
	size_t max;
};

#define MG_BUF_INIT(maximum)          \
	{                             \
		NULL, 0, 0, (maximum) \
	}

void mg_buf_init(struct mg_buf *b, size_t max);
int mg_buf_append(struct mg_buf *b, const void *p, size_t n, struct mg_err **err);
int mg_buf_puts(struct mg_buf *b, const char *s, struct mg_err **err);
int mg_buf_putc(struct mg_buf *b, char c, struct mg_err **err);
int mg_buf_printf(struct mg_buf *b, struct mg_err **err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int mg_buf_vprintf(struct mg_buf *b, struct mg_err **err, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
/* "" when empty; never NULL */
const char *mg_buf_str(const struct mg_buf *b);
/* drop the first n bytes (n <= len) */
void mg_buf_consume(struct mg_buf *b, size_t n);
/* back to its first len bytes (len <= len now), as after a failed append
 * of several parts */
void mg_buf_truncate(struct mg_buf *b, size_t len);
/* empty it, keeping the allocation */
void mg_buf_reset(struct mg_buf *b);
/* hand data to the caller (NUL-terminated, never NULL); the buffer is left empty */
char *mg_buf_steal(struct mg_buf *b, size_t *len);
void mg_buf_free(struct mg_buf *b);

#endif
