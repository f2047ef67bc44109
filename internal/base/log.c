#include "internal/base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static enum mg_log_level current_level = MG_LOG_INFO;
static mg_text_filter filter_fn;
static void *filter_data;

void mg_log_set_filter(mg_text_filter fn, void *data)
{
	filter_fn = fn;
	filter_data = data;
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
	size_t len = (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1, clean_len = 0;
	char *clean = filter_fn != NULL ? filter_fn(line, len, &clean_len, filter_data) : NULL;
	/* a truncated line is still worth printing; it says so */
	fprintf(stderr, "mcpgate: %s: %.*s%s\n", level_names[level],
	        (int)(clean != NULL ? clean_len : len), clean != NULL ? clean : line,
	        (size_t)n >= sizeof(line) ? " [truncated]" : "");
	free(clean);
}
