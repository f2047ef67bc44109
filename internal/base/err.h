/* The one error contract of mcpgate.
 *
 * A function that can fail returns int (negative on failure) and takes
 * `struct mg_err **err` as its last parameter. On failure it fills *err (if
 * err is not NULL) and returns a negative value; on success it returns 0 or
 * more and leaves *err alone. Callers add context on the way up with
 * mg_err_wrap() and return. Only main() and a session's reporting print.
 */
#ifndef MG_BASE_ERR_H
#define MG_BASE_ERR_H

struct mg_err {
	int code;  /* errno value when the cause was a system call, else 0 */
	char *msg; /* owned; never NULL once filled */
};

/* Fill *err with a formatted message; returns -1. */
int mg_err_set(struct mg_err **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Like mg_err_set, with ": strerror(code)" appended and code kept. */
int mg_err_sys(struct mg_err **err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefix the message already in *err with "context: "; returns -1. */
int mg_err_wrap(struct mg_err **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The message, or "" for NULL. */
const char *mg_err_msg(const struct mg_err *err);

/* Free and set *err to NULL; NULL and *err == NULL do nothing. */
void mg_err_clear(struct mg_err **err);

void mg_err_free(struct mg_err *err);

#endif
