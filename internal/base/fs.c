#include "internal/base/fs.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "internal/base/xalloc.h"

int mg_mkdir_p(const char *path, mode_t mode, struct mg_err **err)
{
	char *p = xstrdup(path);
	int r = 0;
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST) {
			r = mg_err_sys(err, errno, "creating %s", p);
			break;
		}
		*s = c;
		if (c == '\0')
			break;
	}
	free(p);
	return r;
}
