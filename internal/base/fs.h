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

/* mg_read_file for what only this user may have written (a cache whose
 * content mcpgate trusts): the file is not a link, is a regular file of the
 * effective user's with none of open_bits in its mode (077: private; 022:
 * others may read it), and its folder is the user's and writable by no one
 * else. -1 with errno set and *err saying which of these failed (ENOENT when
 * it is not there, EPERM or ELOOP when it is not the user's own). */
int mg_read_own_file(const char *path, size_t max, mode_t open_bits, char **text, size_t *len,
                     struct mg_err **err);

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

/* path (relative to the folder of the running program) joined to that
 * folder, whether or not it exists: where mcpgate expects a file it could
 * not find. Allocated; NULL when /proc/self/exe cannot be read. */
char *mg_path_beside_self(const char *path);

#endif
