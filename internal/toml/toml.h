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

/* ---- trees built by a caller ---------------------------------------------
 * For a value mcpgate means to write (toml_encode.h) or to compare with what
 * a file holds (toml_change.h). Positions are 0:0. Every builder returns a
 * value to free with toml_free() unless it is handed to a container. */
struct toml_value *toml_new_table(void);
struct toml_value *toml_new_array(void);
struct toml_value *toml_new_string(const char *s);
struct toml_value *toml_new_stringn(const char *s, size_t len);
struct toml_value *toml_new_bool(bool b);
struct toml_value *toml_new_integer(int64_t i);
/* key (len bytes) of table t becomes v, which t then owns; a value of that
 * key is freed and replaced where it stood */
void toml_table_set(struct toml_value *t, const char *key, size_t len, struct toml_value *v);
/* Remove key from table t; whether it was there */
bool toml_table_remove(struct toml_value *t, const char *key, size_t len);
/* Append v (owned) to array a */
void toml_array_push(struct toml_value *a, struct toml_value *v);
/* Remove and free element i of array a (i < len) */
void toml_array_remove(struct toml_value *a, size_t i);
/* A deep copy, positions and the parser's bookkeeping kept */
struct toml_value *toml_copy(const struct toml_value *v);

/* "table", "array", "string", "integer", "float", "boolean", "datetime",
 * "local datetime", "local date", "local time" */
const char *toml_kind_name(enum toml_kind kind);

#endif
