/* Logging: stderr only (stdout of `serve` is the MCP channel).
 * The level comes from MCPGATE_LOG=debug|info|warn|error (default info). */
#ifndef MG_BASE_LOG_H
#define MG_BASE_LOG_H

#include <stddef.h>

#include "internal/base/err.h"

enum mg_log_level { MG_LOG_DEBUG, MG_LOG_INFO, MG_LOG_WARN, MG_LOG_ERROR };

/* Read MCPGATE_LOG; an unknown value is an error naming it. */
/* A text filter: a changed copy (allocated, its length in *out_len), or
 * NULL when the text passes as it is. The redaction of secrets is one. */
typedef char *(*mg_text_filter)(const char *text, size_t len, size_t *out_len, void *data);

int mg_log_init(struct mg_err **err);
/* Every log line passes through fn (with data) from now on, after the
 * filters added before it: each session in a process adds its own
 * redaction. Thread-safe; a filter must not log. */
void mg_log_add_filter(mg_text_filter fn, void *data);
/* Remove the filter added with fn and data; once this returns, fn is not
 * running and will not run with data, so data may be freed. */
void mg_log_remove_filter(mg_text_filter fn, void *data);
void mg_log_set_level(enum mg_log_level level);
int mg_log_enabled(enum mg_log_level level);
void mg_log(enum mg_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define mg_debug(...) mg_log(MG_LOG_DEBUG, __VA_ARGS__)
#define mg_info(...)  mg_log(MG_LOG_INFO, __VA_ARGS__)
#define mg_warn(...)  mg_log(MG_LOG_WARN, __VA_ARGS__)
#define mg_error(...) mg_log(MG_LOG_ERROR, __VA_ARGS__)

#endif
