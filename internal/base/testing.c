#define _GNU_SOURCE
#include "internal/base/testing.h"

#include <dirent.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal/base/xalloc.h"

static unsigned t_passed, t_failed;

static int t_report(int ok, const char *file, int line, const char *fmt, va_list ap)
{
	unsigned n = t_passed + t_failed + 1;
	printf("%s %u - ", ok ? "ok" : "not ok", n);
	vprintf(fmt, ap);
	printf("\n");
	if (!ok)
		printf("#   at %s:%d\n", file, line);
	if (ok)
		t_passed++;
	else
		t_failed++;
	fflush(stdout);
	return ok;
}

int t_check(int ok, const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	t_report(ok, file, line, fmt, ap);
	va_end(ap);
	return ok;
}

int t_check_str(const char *got, const char *want, const char *file, int line, const char *fmt, ...)
{
	int ok = got != NULL && want != NULL ? strcmp(got, want) == 0 : got == want;
	va_list ap;
	va_start(ap, fmt);
	t_report(ok, file, line, fmt, ap);
	va_end(ap);
	if (!ok) {
		printf("#   got:  %s\n", got != NULL ? got : "(null)");
		printf("#   want: %s\n", want != NULL ? want : "(null)");
	}
	return ok;
}

int t_check_int(long long got, long long want, const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	t_report(got == want, file, line, fmt, ap);
	va_end(ap);
	if (got != want)
		printf("#   got: %lld want: %lld\n", got, want);
	return got == want;
}

void t_note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("# ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
}

char *t_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL) {
		printf("Bail out! cannot open %s\n", path);
		exit(1);
	}
	size_t cap = 4096, n = 0;
	char *p = xmalloc(cap);
	for (;;) {
		if (n + 1 >= cap) {
			if (cap > (64u << 20)) {
				printf("Bail out! %s is too large\n", path);
				exit(1);
			}
			cap *= 2;
			p = xrealloc(p, cap);
		}
		size_t r = fread(p + n, 1, cap - n - 1, f);
		if (r == 0)
			break;
		n += r;
	}
	fclose(f);
	p[n] = '\0';
	if (len != NULL)
		*len = n;
	return p;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char **t_list_dir(const char *dir, const char *suffix, size_t *n)
{
	DIR *d = opendir(dir);
	char **names = NULL;
	size_t want = strlen(suffix);
	*n = 0;
	if (d == NULL)
		return NULL;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		if (e->d_name[0] == '.' || len < want ||
		    strcmp(e->d_name + len - want, suffix) != 0)
			continue;
		names = xreallocarray(names, *n + 1, sizeof(*names));
		names[(*n)++] = xstrdup(e->d_name);
	}
	closedir(d);
	if (*n > 1)
		qsort(names, *n, sizeof(*names), cmp_name);
	return names;
}

int t_done(void)
{
	printf("1..%u\n", t_passed + t_failed);
	printf("%u passed, %u failed\n", t_passed, t_failed);
	return t_failed == 0 ? 0 : 1;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

void t_remove_tree(const char *dir)
{
	nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}
