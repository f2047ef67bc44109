/* The shape of a JSON value a handler will read: which members it reads,
 * of which JSON types, and which must be there. Checked before any handler
 * runs, so that a handler reads typed values only: a peer's true where a
 * string is read is refused by the check, with the member named, never met
 * by the handler (docs/2026-12-02-message-shapes.md).
 *
 * A member is named by a path of up to JSON_SHAPE_DEPTH keys from the value
 * checked; "*" stands for every item of an array or every member value of an
 * object (a key "*" is never read by a path). A path is checked only where
 * every value on the way to it is present and of a type that has members;
 * what a step's own type must be is said by its own line. */
#ifndef MG_JSON_SHAPE_H
#define MG_JSON_SHAPE_H

#include <stdbool.h>

#include "internal/json/json.h"

#define JSON_SHAPE_DEPTH 5

enum json_shape_type {
	JS_NULL = 1 << 0,
	JS_BOOL = 1 << 1,
	JS_INT = 1 << 2, /* a number that is an integer in int64 range */
	JS_NUM = 1 << 3, /* any number */
	JS_STR = 1 << 4, /* a string without NUL */
	JS_ARR = 1 << 5,
	JS_OBJ = 1 << 6,
};

struct json_shape_member {
	const char *path[JSON_SHAPE_DEPTH]; /* ends at the first NULL */
	unsigned types;                     /* enum json_shape_type bits */
	bool required;                      /* where its parent is there */
};

/* The first member of shape (n lines) that v breaks, as text (allocated):
 * "params.arguments must be an object (it is an array)", with where, the
 * name of v ("params", "result"), leading the path. NULL when v has the
 * shape. v NULL is an absent value: only required top members can fail. */
char *json_shape_check(const struct json_value *v, const char *where,
                       const struct json_shape_member *shape, size_t n);

#endif
