/* The public suffix list, through libpsl: see config-internal.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libpsl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal/base/xalloc.h"
#include "internal/config/config-internal.h"
#include "internal/config/config.h"

struct cfg_suffixes {
	psl_ctx_t *psl;
};

const char *cfg_suffix_list_path(void)
{
	const char *env = getenv("MCPGATE_PUBLIC_SUFFIX_LIST");
	return env != NULL && env[0] == '/' ? env : CFG_SUFFIX_LIST;
}

int cfg_suffixes_open(const char *path, struct cfg_suffixes **out, struct mg_err **err)
{
	*out = NULL;
	/* libpsl says only NULL: open it first for the reason a person can act on */
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return mg_err_set(err,
		                  "the public suffix list %s cannot be read: %s (install "
		                  "publicsuffix; scripts/setup does)",
		                  path, strerror(errno));
	close(fd);
	psl_ctx_t *psl = psl_load_file(path);
	if (psl == NULL)
		return mg_err_set(err, "the public suffix list %s is not one libpsl can read",
		                  path);
	/* an empty or foreign file loads too, and with only the default rule
	 * left it would pass *.co.uk: a list must know its best-known rules */
	int kind = PSL_TYPE_ANY | PSL_TYPE_NO_STAR_RULE;
	if (psl_is_public_suffix2(psl, "com", kind) != 1 ||
	    psl_is_public_suffix2(psl, "co.uk", kind) != 1) {
		psl_free(psl);
		return mg_err_set(
		    err, "%s is not a public suffix list: it does not list com and co.uk", path);
	}
	struct cfg_suffixes *s = xcalloc(1, sizeof(*s));
	s->psl = psl;
	*out = s;
	return 0;
}

bool cfg_suffixes_public(const struct cfg_suffixes *s, const char *name)
{
	return psl_is_public_suffix2(s->psl, name, PSL_TYPE_ANY) != 0;
}

void cfg_suffixes_free(struct cfg_suffixes *s)
{
	if (s == NULL)
		return;
	psl_free(s->psl);
	free(s);
}

int cfg_check_wildcard_host(const char *host, const char *what, struct mg_err **err)
{
	if (strncmp(host, "*.", 2) != 0)
		return 0;
	struct cfg_suffixes *list = NULL;
	if (cfg_suffixes_open(cfg_suffix_list_path(), &list, err) < 0)
		return mg_err_wrap(err, "%s %s cannot be checked, so it is refused", what, host);
	bool public = cfg_suffixes_public(list, host + 2);
	cfg_suffixes_free(list);
	if (public)
		return mg_err_set(
		    err,
		    "%s %s is a wildcard on a public suffix: the names under %s belong "
		    "to whoever registers them",
		    what, host, host + 2);
	return 0;
}
