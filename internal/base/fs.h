/* Small filesystem helpers shared by the modules. */
#ifndef MG_BASE_FS_H
#define MG_BASE_FS_H

#include <sys/types.h>

#include "internal/base/err.h"

/* mkdir -p: every missing folder of path is made with mode (existing ones are
 * left as they are). */
int mg_mkdir_p(const char *path, mode_t mode, struct mg_err **err);

#endif
