/* A folder of mcpgate's own as a whole: its size, and its removal. Links
 * are never followed (a link is counted and removed as a link), the walk
 * never leaves the file system the folder is on, and it is at most
 * MG_TREE_DEPTH_MAX folders deep. What mcpgate keeps (npm trees, image
 * archives) may hold what a stranger's package made. */
#ifndef MG_BASE_TREE_H
#define MG_BASE_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "internal/base/err.h"

#define MG_TREE_DEPTH_MAX 256

struct mg_tree_size {
	uint64_t bytes; /* what it takes on disk (st_blocks), links and folders too */
	uint64_t files; /* every entry but the folders */
};

/* The size of what is at path (a file, a link or a folder and all below
 * it). A path that is not there is 0 bytes, and no error. */
int mg_tree_size(const char *path, struct mg_tree_size *out, struct mg_err **err);

/* Remove what is at path, all of it; a path that is not there is done. */
int mg_tree_remove(const char *path, struct mg_err **err);

/* "1.4 GB", "911 MB", "12 kB", "512 B": decimal units, as a person reads
 * them, into buf */
const char *mg_size_text(uint64_t bytes, char *buf, size_t len);

#endif
