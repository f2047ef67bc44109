/* A NULL-terminated, growable vector of owned strings: argv and envp lists. */
#ifndef MG_BASE_STRV_H
#define MG_BASE_STRV_H

#include <stddef.h>

struct strv {
	char **v; /* NULL-terminated once anything was pushed; may be NULL when empty */
	size_t n;
	size_t cap;
};

#define STRV_INIT          \
	{                  \
		NULL, 0, 0 \
	}

void strv_push(struct strv *s, const char *str);
void strv_pushf(struct strv *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* takes ownership of str */
void strv_push_owned(struct strv *s, char *str);
/* a NULL-terminated array, never NULL (an empty vector gives {NULL}) */
char *const *strv_array(struct strv *s);
/* index of the first element equal to str, or -1 */
long strv_find(const struct strv *s, const char *str);
void strv_free(struct strv *s);

#endif
