/* TOML 1.0 parser into a small tree that keeps where each key and value
 * stands (1-based line and column, columns counted in bytes).
 *
 * Ownership: toml_parse() hands the caller a tree to free with toml_free().
 * Pointers returned by the lookup functions borrow from that tree. */
#ifndef MG_TOML_TOML_H
#define MG_TOML_TOML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal/base/err.h"

enum toml_kind {
	TOML_TABLE,
	TOML_ARRAY,
	TOML_STRING,
	TOML_INTEGER,
	TOML_FLOAT,
	TOML_BOOL,
	TOML_DATETIME,       /* offset date-time */
	TOML_DATETIME_LOCAL, /* local date-time */
	TOML_DATE_LOCAL,
	TOML_TIME_LOCAL,
};

struct toml_pos {
	unsigned line;
	unsigned col;
};

struct toml_value;

struct toml_kv {
	char *key; /* UTF-8, NUL-terminated; keylen excludes the NUL (a key may hold U+0000) */
	size_t keylen;
	struct toml_pos keypos; /* where the key was written (last dotted part) */
	struct toml_value *value;
};

struct toml_value {
	enum toml_kind kind;
	struct toml_pos pos; /* where the value starts; for a [table], its header */
	union {
		struct {
			struct toml_kv *items; /* in the order they were first written */
			size_t len;
			size_t cap;
		} table;
		struct {
			struct toml_value **items;
			size_t len;
			size_t cap;
		} array;
		/* TOML_STRING: the decoded UTF-8 text (NUL-terminated, len excludes it).
		 * The date/time kinds: the text as written, with 'T' for the separator
		 * when a space or 't' was used, and 'Z' for 'z'. */
		struct {
			char *ptr;
			size_t len;
		} str;
		int64_t integer;
		double flt;
		bool boolean;
	} u;
	/* parser bookkeeping (which tables were defined how); not for callers */
	unsigned flags;
};

/* Parse text (need not be NUL-terminated). filename is used only in error
 * messages, which read "FILE:LINE:COL: what is wrong". */
int toml_parse(const char *text, size_t len, const char *filename, struct toml_value **out,
               struct mg_err **err);

void toml_free(struct toml_value *v);

/* The value stored under key in a table, or NULL (also when t is not a table). */
const struct toml_value *toml_get(const struct toml_value *t, const char *key);

/* "table", "array", "string", "integer", "float", "boolean", "datetime",
 * "local datetime", "local date", "local time" */
const char *toml_kind_name(enum toml_kind kind);

#endif
