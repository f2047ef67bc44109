/* The checked edit: a file mcpgate edits must differ from what it was by
 * exactly the change meant, or nothing is written
 * (docs/2026-12-02-one-encoder.md).
 *
 * The change is said in terms of the tree, not the text: set a key, append
 * to an array, remove a key or an element, each at a path of keys (and of
 * "the element of this array of tables whose KEY is VALUE", which is how
 * mcp.toml names a server). toml_check_edit() parses the text before and
 * after, makes the changes on the tree before, and compares that with the
 * tree after: everything must be equal. Comments are not in the tree; that
 * a value stays inside its comment is the encoder's to keep
 * (toml_encode.h). */
#ifndef MG_TOML_TOML_CHANGE_H
#define MG_TOML_TOML_CHANGE_H

#include <stddef.h>

#include "internal/base/err.h"
#include "internal/toml/toml.h"

/* A member of a table: key. With match_key, key names an array of tables,
 * and the step is its one element whose string match_key equals match. */
struct toml_step {
	const char *key;
	const char *match_key;
	const char *match;
};

enum toml_change_kind {
	TOML_CHANGE_SET,    /* the member at path becomes value; tables on the way are made */
	TOML_CHANGE_APPEND, /* value joins the end of the array at path (made when absent) */
	/* the member at path, or the element it matches, is gone; and so is a
	 * table on the way that only the headers of what is gone made (the
	 * text [a.b] alone makes a table a, which goes with it), and an array
	 * of [[tables]] whose last element went */
	TOML_CHANGE_REMOVE,
};

struct toml_change {
	enum toml_change_kind kind;
	const struct toml_step *path;
	size_t npath;
	const struct toml_value *value; /* SET and APPEND; borrowed */
};

/* before (NULL: an empty document) with the changes made in order, in *out
 * (to free). A path that does not lead where its change can be made is an
 * error naming it. */
int toml_apply_changes(const struct toml_value *before, const struct toml_change *changes, size_t n,
                       struct toml_value **out, struct mg_err **err);

/* 0 when got holds what want holds: tables as sets of keys, arrays in
 * order, values by kind and content (positions, and whether a table was
 * written [inline] or as a header, do not count). Else -1, and err names the
 * first place they differ, as a dotted path ("server[2].tools.x.on"). */
int toml_compare(const struct toml_value *want, const struct toml_value *got, struct mg_err **err);

/* The text after (named name in messages) parses, and its tree is the tree
 * of before with exactly the changes made; before NULL is a file that was
 * not there. Else -1 with err saying what differs. */
int toml_check_edit(const char *before, size_t before_len, const char *after, size_t after_len,
                    const char *name, const struct toml_change *changes, size_t n,
                    struct mg_err **err);

#endif
