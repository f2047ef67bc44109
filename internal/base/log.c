#include "internal/base/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/base/utf8.h"
#include "internal/base/xalloc.h"

static enum mg_log_level current_level = MG_LOG_INFO;

/* The filters, under filters_lock; a line is filtered and printed with the
 * lock held, so a filter removed is no longer running anywhere */
struct log_filter {
	mg_text_filter fn;
	void *data;
};
static pthread_mutex_t filters_lock = PTHREAD_MUTEX_INITIALIZER;
static struct log_filter *filters;
static size_t nfilters, filters_cap;

void mg_log_add_filter(mg_text_filter fn, void *data)
{
	pthread_mutex_lock(&filters_lock);
	if (nfilters == filters_cap) {
		filters_cap = filters_cap > 0 ? 2 * filters_cap : 8;
		filters = xreallocarray(filters, filters_cap, sizeof(*filters));
	}
	filters[nfilters++] = (struct log_filter){fn, data};
	pthread_mutex_unlock(&filters_lock);
}

void mg_log_remove_filter(mg_text_filter fn, void *data)
{
	pthread_mutex_lock(&filters_lock);
	for (size_t i = 0; i < nfilters; i++) {
		if (filters[i].fn == fn && filters[i].data == data) {
			memmove(&filters[i], &filters[i + 1],
			        (nfilters - i - 1) * sizeof(*filters));
			nfilters--;
			break;
		}
	}
	if (nfilters == 0) {
		free(filters);
		filters = NULL;
		filters_cap = 0;
	}
	pthread_mutex_unlock(&filters_lock);
}

static const char *const level_names[] = {"debug", "info", "warn", "error"};

int mg_log_init(struct mg_err **err)
{
	const char *v = getenv("MCPGATE_LOG");
	if (v == NULL || *v == '\0')
		return 0;
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcmp(v, level_names[i]) == 0) {
			current_level = (enum mg_log_level)i;
			return 0;
		}
	}
	return mg_err_set(err, "MCPGATE_LOG=%s: expected debug, info, warn or error", v);
}

void mg_log_set_level(enum mg_log_level level)
{
	current_level = level;
}

int mg_log_enabled(enum mg_log_level level)
{
	return level >= current_level;
}

void mg_log(enum mg_log_level level, const char *fmt, ...)
{
	if (!mg_log_enabled(level))
		return;
	char line[4096];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	size_t len = (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;
	pthread_mutex_lock(&filters_lock);
	/* each filter sees what the one before it left */
	char *clean = NULL;
	for (size_t i = 0; i < nfilters; i++) {
		size_t next_len = 0;
		char *next =
		    filters[i].fn(clean != NULL ? clean : line, len, &next_len, filters[i].data);
		if (next != NULL) {
			free(clean);
			clean = next;
			len = next_len;
		}
	}
	/* a truncated line is still worth printing; it says so. What a peer
	 * put in it is shown as the one renderer shows it */
	char *shown = mg_shown_lines(clean != NULL ? clean : line, len);
	fprintf(stderr, "mcpgate: %s: %s%s\n", level_names[level], shown,
	        (size_t)n >= sizeof(line) ? " [truncated]" : "");
	pthread_mutex_unlock(&filters_lock);
	free(shown);
	free(clean);
}
