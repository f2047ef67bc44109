/* Small filesystem helpers shared by the modules. */
#ifndef MG_BASE_FS_H
#define MG_BASE_FS_H

#include <stddef.h>
#include <sys/types.h>

#include "internal/base/err.h"

/* mkdir -p: every missing folder of path is made with mode (existing ones are
 * left as they are). */
int mg_mkdir_p(const char *path, mode_t mode, struct mg_err **err);

/* Read a whole regular file of at most max bytes into *text (allocated,
 * NUL-terminated, *len its length). -1 with errno set and *err filled on
 * failure (EFBIG when larger, EINVAL when not a regular file). */
int mg_read_file(const char *path, size_t max, char **text, size_t *len, struct mg_err **err);

/* Replace path with len bytes of data, atomically: a temporary file beside
 * it, fsync, rename, fsync of the folder. A new file gets mode; an existing
 * one keeps its own. */
int mg_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode,
                         struct mg_err **err);

/* Remove path and everything below it, links never followed (a link is
 * removed, not what it names); absent is fine. */
int mg_remove_tree(const char *path, struct mg_err **err);

/* The first of paths (NULL-terminated, each relative to the folder of the
 * running program, /proc/self/exe) that access(2) allows with amode: its
 * real path, allocated. NULL when there is none. Finds what is installed
 * beside mcpgate (bin/../share/...) or lies in its build tree. */
char *mg_find_beside_self(const char *const *paths, int amode);

#endif
