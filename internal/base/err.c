#include "internal/base/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/base/xalloc.h"

static int err_fill(struct mg_err **err, int code, char *msg)
{
	if (err == NULL) {
		free(msg);
		return -1;
	}
	mg_err_free(*err);
	*err = xmalloc(sizeof(**err));
	(*err)->code = code;
	(*err)->msg = msg;
	return -1;
}

int mg_err_set(struct mg_err **err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = xvasprintf(fmt, ap);
	va_end(ap);
	return err_fill(err, 0, msg);
}

int mg_err_sys(struct mg_err **err, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *head = xvasprintf(fmt, ap);
	va_end(ap);
	char *msg = xasprintf("%s: %s", head, strerror(code));
	free(head);
	return err_fill(err, code, msg);
}

int mg_err_wrap(struct mg_err **err, const char *fmt, ...)
{
	if (err == NULL)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	char *ctx = xvasprintf(fmt, ap);
	va_end(ap);
	if (*err == NULL)
		return err_fill(err, 0, ctx);
	char *msg = xasprintf("%s: %s", ctx, (*err)->msg);
	free(ctx);
	free((*err)->msg);
	(*err)->msg = msg;
	return -1;
}

const char *mg_err_msg(const struct mg_err *err)
{
	return err != NULL ? err->msg : "";
}

void mg_err_free(struct mg_err *err)
{
	if (err == NULL)
		return;
	free(err->msg);
	free(err);
}

void mg_err_clear(struct mg_err **err)
{
	if (err == NULL)
		return;
	mg_err_free(*err);
	*err = NULL;
}
