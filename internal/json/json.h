/* JSON over yajl: a tree with limits, generation, and the canonical form
 * used for hashing (docs/canonical-json.md; a golden test guards it).
 *
 * Ownership: json_parse() and the json_new_* builders return a tree the
 * caller frees with json_free(); json_object_set()/json_array_push() take
 * ownership of the value they are given. Lookups borrow. */
#ifndef MG_JSON_JSON_H
#define MG_JSON_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal/base/buf.h"
#include "internal/base/err.h"

enum json_kind { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };

struct json_value;

struct json_member {
	char *key; /* UTF-8, NUL-terminated; keylen excludes the NUL */
	size_t keylen;
	struct json_value *value;
};

struct json_value {
	enum json_kind kind;
	union {
		bool boolean;
		/* JSON_NUMBER keeps the literal text as received (or as built) */
		struct {
			char *ptr;
			size_t len;
		} num;
		struct {
			char *ptr; /* UTF-8, NUL-terminated; len excludes the NUL */
			size_t len;
		} str;
		struct {
			struct json_value **items;
			size_t len;
			size_t cap;
		} arr;
		struct {
			struct json_member *items; /* in the order received */
			size_t len;
			size_t cap;
		} obj;
	} u;
};

struct json_limits {
	size_t max_bytes;   /* the whole text */
	unsigned max_depth; /* nesting of arrays and objects */
	/* values in the whole text; 0 means JSON_VALUES_DEFAULT. A tree costs
	 * about 45 bytes a value: without this cap a 16 MiB line of [0,0,...]
	 * would take some 700 MB. */
	size_t max_values;
};

#define JSON_VALUES_DEFAULT ((size_t)1 << 20)

/* 16 MiB and depth 64 */
extern const struct json_limits json_default_limits;

/* Parse exactly one JSON text. Invalid UTF-8, duplicate object keys, going
 * past a limit, or trailing content are errors naming the byte offset. */
int json_parse(const char *text, size_t len, const struct json_limits *limits,
               struct json_value **out, struct mg_err **err);
void json_free(struct json_value *v);

/* Builders */
struct json_value *json_new_null(void);
struct json_value *json_new_bool(bool b);
struct json_value *json_new_int(int64_t i);
/* n must be a valid JSON number literal; returns NULL otherwise */
struct json_value *json_new_number_text(const char *n, size_t len);
/* Whether n is a JSON number literal (RFC 8259: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?) */
bool json_number_valid(const char *n, size_t len);
struct json_value *json_new_string(const char *s);
struct json_value *json_new_stringn(const char *s, size_t len);
struct json_value *json_new_array(void);
struct json_value *json_new_object(void);
/* Replaces an existing member of the same key. Takes ownership of v. */
void json_object_set(struct json_value *obj, const char *key, struct json_value *v);
/* Appends a member even when one of that key is there (a JSONC file a person
 * wrote may hold a key twice). Takes ownership of v. */
void json_object_add(struct json_value *obj, const char *key, size_t keylen, struct json_value *v);
/* Removes the first member of key; whether there was one */
bool json_object_remove(struct json_value *obj, const char *key);
void json_array_push(struct json_value *arr, struct json_value *v);
/* Deep copy */
struct json_value *json_copy(const struct json_value *v);

/* Lookups: NULL when absent or of another kind */
const struct json_value *json_get(const struct json_value *obj, const char *key);
const char *json_get_string(const struct json_value *obj, const char *key);
/* A number that is an integer in int64 range; -1 when not. */
int json_number_int64(const struct json_value *v, int64_t *out);

/* 0 when got holds what want holds: objects as sets of members (a key
 * written twice matched occurrence by occurrence), arrays in order, numbers
 * by their literal text. Else -1, and err names the first place they
 * differ as a path ("mcpServers.x.args[2]"). */
int json_compare(const struct json_value *want, const struct json_value *got, struct mg_err **err);

/* Append compact JSON (members in stored order) to out. */
int json_generate(const struct json_value *v, struct mg_buf *out, struct mg_err **err);
/* json_generate's text as a person is shown it: the same JSON value, with
 * every character that hides, reorders or breaks text (mg_cp_hidden)
 * written as a \u escape, so all of it can be seen (the renderer of
 * internal/base/utf8.h, for JSON) */
int json_shown(const struct json_value *v, struct mg_buf *out, struct mg_err **err);
/* Append the canonical form (docs/canonical-json.md) to out. */
int json_canonical(const struct json_value *v, struct mg_buf *out, struct mg_err **err);

/* Append the exact form: the canonical form's keys and strings, with every
 * number as its literal text as received (1, 1.0 and -0.0 stay apart; a
 * number past 2^63 keeps its digits). What a confirmation binds, since a
 * server reads the literal the gateway forwards (docs/canonical-json.md). */
int json_exact(const struct json_value *v, struct mg_buf *out, struct mg_err **err);
/* Sort every object's members by key, as the canonical and exact forms do,
 * in place: json_generate of the result is then json_exact's text */
void json_sort_keys(struct json_value *v);

/* Append s as a JSON string literal, escaped the one canonical way. */
int json_quote(const char *s, size_t len, struct mg_buf *out, struct mg_err **err);
/* Append s as a JSON string literal for a file another program parses or a
 * person reads (an MCP client's configuration): json_quote's escapes, and
 * \uXXXX for C1 controls, U+2028, U+2029 and what hides text, which some
 * readers take for a line end (internal/base/quote.h). */
int json_quote_text(const char *s, size_t len, struct mg_buf *out, struct mg_err **err);

#endif
