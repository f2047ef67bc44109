/* What the TOML parser records in a tree beyond the tree itself, for the
 * files of internal/toml only. */
#ifndef MG_TOML_TOML_INTERNAL_H
#define MG_TOML_TOML_INTERNAL_H

/* Bits of toml_value.flags; the nesting depth sits above them. */
enum {
	TF_IMPLICIT = 1u << 0, /* table created as a parent in a [header] path */
	TF_HEADER = 1u << 1,   /* table defined by its own [header] or [[header]] */
	TF_DOTTED = 1u << 2,   /* table created (or taken over) by a dotted key */
	TF_INLINE = 1u << 3,   /* inline table: closed to any addition */
	TF_AOT = 1u << 4,      /* array made by [[header]]: may be appended to */
};
#define TF_DEPTH_SHIFT 8u

#endif
