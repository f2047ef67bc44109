/* Allocation that never returns NULL: out of memory aborts the process.
 * There are no half-handled out-of-memory paths in mcpgate. */
#ifndef MG_BASE_XALLOC_H
#define MG_BASE_XALLOC_H

#include <stdarg.h>
#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
/* realloc for count elements of size bytes, aborting on overflow */
void *xreallocarray(void *p, size_t count, size_t size);
char *xstrdup(const char *s);
/* copies n bytes and adds a NUL */
char *xstrndup(const char *s, size_t n);
void *xmemdup(const void *p, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

#endif
