#include "internal/base/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/base/xalloc.h"

void mg_buf_init(struct mg_buf *b, size_t max)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	/* room for the NUL and the doubling below must never wrap */
	b->max = max > ((size_t)-1) / 4 ? ((size_t)-1) / 4 : max;
}

static int buf_reserve(struct mg_buf *b, size_t n, struct mg_err **err)
{
	if (b->max > ((size_t)-1) / 4) /* MG_BUF_INIT with a huge maximum */
		b->max = ((size_t)-1) / 4;
	if (n > b->max || b->len > b->max - n)
		return mg_err_set(err, "data exceeds the limit of %zu bytes", b->max);
	size_t need = b->len + n + 1;
	if (need <= b->cap)
		return 0;
	size_t cap = b->cap != 0 ? b->cap : 64;
	while (cap < need)
		cap = cap > ((size_t)-1) / 2 ? need : cap * 2;
	if (cap > b->max + 1)
		cap = b->max + 1;
	b->data = xrealloc(b->data, cap);
	b->cap = cap;
	return 0;
}

int mg_buf_append(struct mg_buf *b, const void *p, size_t n, struct mg_err **err)
{
	if (buf_reserve(b, n, err) < 0)
		return -1;
	if (n != 0)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int mg_buf_puts(struct mg_buf *b, const char *s, struct mg_err **err)
{
	return mg_buf_append(b, s, strlen(s), err);
}

int mg_buf_putc(struct mg_buf *b, char c, struct mg_err **err)
{
	return mg_buf_append(b, &c, 1, err);
}

int mg_buf_vprintf(struct mg_buf *b, struct mg_err **err, const char *fmt, va_list ap)
{
	va_list copy;
	va_copy(copy, ap);
	int n = vsnprintf(NULL, 0, fmt, copy);
	va_end(copy);
	if (n < 0)
		return mg_err_set(err, "cannot format text");
	if (buf_reserve(b, (size_t)n, err) < 0)
		return -1;
	int w = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
	if (w != n)
		return mg_err_set(err, "cannot format text");
	b->len += (size_t)n;
	return 0;
}

int mg_buf_printf(struct mg_buf *b, struct mg_err **err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = mg_buf_vprintf(b, err, fmt, ap);
	va_end(ap);
	return r;
}

const char *mg_buf_str(const struct mg_buf *b)
{
	return b->data != NULL ? b->data : "";
}

void mg_buf_consume(struct mg_buf *b, size_t n)
{
	if (n >= b->len) {
		mg_buf_reset(b);
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
	b->data[b->len] = '\0';
}

void mg_buf_truncate(struct mg_buf *b, size_t len)
{
	if (b->data == NULL || len > b->len)
		return;
	b->len = len;
	b->data[len] = '\0';
}

void mg_buf_reset(struct mg_buf *b)
{
	b->len = 0;
	if (b->data != NULL)
		b->data[0] = '\0';
}

char *mg_buf_steal(struct mg_buf *b, size_t *len)
{
	char *p = b->data != NULL ? b->data : xstrdup("");
	if (len != NULL)
		*len = b->len;
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	return p;
}

void mg_buf_free(struct mg_buf *b)
{
	if (b == NULL)
		return;
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}
