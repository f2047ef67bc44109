#define _GNU_SOURCE
#include "internal/base/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((noreturn)) static void oom(void)
{
	static const char msg[] = "mcpgate: out of memory\n";
	ssize_t r = write(STDERR_FILENO, msg, sizeof(msg) - 1);
	(void)r;
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n != 0 ? n : 1);
	if (p == NULL)
		oom();
	return p;
}

void *xcalloc(size_t count, size_t size)
{
	void *p = calloc(count != 0 ? count : 1, size != 0 ? size : 1);
	if (p == NULL)
		oom();
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n != 0 ? n : 1);
	if (q == NULL)
		oom();
	return q;
}

void *xreallocarray(void *p, size_t count, size_t size)
{
	if (size != 0 && count > (size_t)-1 / size)
		oom();
	return xrealloc(p, count * size);
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

void *xmemdup(const void *p, size_t n)
{
	void *q = xmalloc(n);
	if (n != 0)
		memcpy(q, p, n);
	return q;
}

char *xvasprintf(const char *fmt, va_list ap)
{
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		oom();
	return s;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = xvasprintf(fmt, ap);
	va_end(ap);
	return s;
}
