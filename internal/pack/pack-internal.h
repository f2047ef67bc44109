/* Inside internal/pack: the list of what goes into the layer (tree.c), the
 * layer writer (layer.c), ELF inspection (elf.c), and digests. */
#ifndef MG_PACK_PACK_INTERNAL_H
#define MG_PACK_PACK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <archive.h>
#include <sodium.h>

#include "internal/base/err.h"
#include "internal/pack/pack.h"

enum pack_kind { PACK_DIR, PACK_FILE, PACK_SYMLINK };

struct pack_entry {
	char *path; /* in the image without the leading '/': "bin/busybox"; never "" */
	enum pack_kind kind;
	unsigned mode; /* the permission bits written: 0755 or 0644; 0777 for symlinks */
	uint64_t size; /* PACK_FILE: its size when listed; reading it must give as much */
	char *src;     /* where it comes from on this machine (PACK_FILE: read from here) */
	char *target;  /* PACK_SYMLINK: the link's text, kept as it is */
	bool follow;   /* PACK_FILE: src was named by the person; a symlink there is followed */
	bool implied;  /* a folder nobody named, the parent of something that was */
	bool in_walk;  /* listed by a folder walk, which lists its parent too */
};

/* What goes into the layer. Owns its entries; sorted by path (byte order)
 * and without duplicates once pack_tree_finish() succeeded. */
struct pack_tree {
	struct pack_entry *v;
	size_t n, cap;
	size_t files, dirs, symlinks; /* counted by pack_tree_finish() */
};

void pack_tree_free(struct pack_tree *t);
/* A file (symlinks followed) at dest with mode 0755, whatever its own mode. */
int pack_tree_add_binary(struct pack_tree *t, const char *src, const char *dest,
                         struct mg_err **err);
/* src at dest: a file (symlinks followed) or the whole tree of a folder, in
 * which symlinks stay symlinks and anything but files, folders and symlinks
 * is refused. dest "/" with a folder makes its tree the root. */
int pack_tree_add_path(struct pack_tree *t, const char *src, const char *dest, struct mg_err **err);
/* A folder at dest (the working directory), unless something is there. */
void pack_tree_add_implied_dir(struct pack_tree *t, const char *dest, unsigned mode);
/* Add missing parent folders, sort, merge folders named twice, refuse two
 * different things at one path, and count. */
int pack_tree_finish(struct pack_tree *t, struct mg_err **err);
/* The entry at an image path ("bin/x"), or NULL; only after pack_tree_finish(). */
const struct pack_entry *pack_tree_find(const struct pack_tree *t, const char *path);

/* Write the layer (a tar, gzip-compressed without time stamp or name) of a
 * finished tree to fd, every time stamp mtime and every owner 0:0. */
int pack_write_layer(const struct pack_tree *t, uint64_t mtime, int fd,
                     struct pack_layer_info *info, struct mg_err **err);

/* "sha256:<hex>" of a finished hash state */
void pack_digest_final(crypto_hash_sha256_state *st, char out[PACK_DIGEST_LEN + 1]);

struct pack_elf {
	bool is_elf;
	char arch[16];    /* OCI name of e_machine, "" when pack does not know it */
	char interp[256]; /* PT_INTERP, "" for a static binary */
};

/* Look into a file: is it ELF, for which machine, with which interpreter.
 * Fails only when the file cannot be read; anything else is "not ELF". */
int pack_elf_inspect(const char *path, struct pack_elf *out, struct mg_err **err);

/* write(2) all of buf to fd for a libarchive write callback; a failure sets
 * *write_errno and the archive's error (what says what was being written) */
la_ssize_t pack_write_fd(struct archive *a, int fd, int *write_errno, const void *buf, size_t len,
                         const char *what);

#endif
