#include "internal/base/strv.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "internal/base/xalloc.h"

void strv_push_owned(struct strv *s, char *str)
{
	if (s->n + 2 > s->cap) {
		s->cap = s->cap != 0 ? s->cap * 2 : 8;
		s->v = xreallocarray(s->v, s->cap, sizeof(*s->v));
	}
	s->v[s->n++] = str;
	s->v[s->n] = NULL;
}

void strv_push(struct strv *s, const char *str)
{
	strv_push_owned(s, xstrdup(str));
}

void strv_pushf(struct strv *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *str = xvasprintf(fmt, ap);
	va_end(ap);
	strv_push_owned(s, str);
}

char *const *strv_array(struct strv *s)
{
	static char *const empty[] = {NULL};
	return s->v != NULL ? s->v : empty;
}

long strv_find(const struct strv *s, const char *str)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i], str) == 0)
			return (long)i;
	return -1;
}

void strv_free(struct strv *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = 0;
	s->cap = 0;
}
