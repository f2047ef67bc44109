/* The public suffix list, through libpsl: see config-internal.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libpsl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/xalloc.h"
#include "internal/config/config-internal.h"
#include "internal/config/config.h"

struct cfg_suffixes {
	psl_ctx_t *psl;
};

char *cfg_suffix_list_path(void)
{
	const char *env = getenv("MCPGATE_PUBLIC_SUFFIX_LIST");
	if (env != NULL && env[0] == '/')
		return xstrdup(env);
	/* installed (PREFIX/bin/mcpgate), or the source tree's (./mcpgate,
	 * build/san/mcpgate) */
	static const char *const places[] = {CFG_SUFFIX_LIST_INSTALLED, CFG_SUFFIX_LIST_TREE,
	                                     "../../" CFG_SUFFIX_LIST_TREE, NULL};
	char *found = mg_find_beside_self(places, F_OK);
	if (found != NULL)
		return found;
	char *expected = mg_path_beside_self(CFG_SUFFIX_LIST_INSTALLED);
	return expected != NULL ? expected : xstrdup(CFG_SUFFIX_LIST_INSTALLED);
}

int cfg_suffixes_open(const char *path, struct cfg_suffixes **out, struct mg_err **err)
{
	*out = NULL;
	/* libpsl says only NULL: open it first for the reason a person can act on */
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return mg_err_set(err,
		                  "the public suffix list %s cannot be read: %s (make install puts "
		                  "mcpgate's own copy in PREFIX/share/mcpgate)",
		                  path, strerror(errno));
	close(fd);
	psl_ctx_t *psl = psl_load_file(path);
	if (psl == NULL)
		return mg_err_set(err, "the public suffix list %s is not one libpsl can read",
		                  path);
	/* an empty or foreign file loads too, and with only the default rule
	 * left it would pass *.co.uk; one without its private section would
	 * pass *.github.io: a list must know its best-known rules of both */
	int icann = PSL_TYPE_ICANN | PSL_TYPE_NO_STAR_RULE;
	int private = PSL_TYPE_PRIVATE | PSL_TYPE_NO_STAR_RULE;
	if (psl_is_public_suffix2(psl, "com", icann) != 1 ||
	    psl_is_public_suffix2(psl, "co.uk", icann) != 1 ||
	    psl_is_public_suffix2(psl, "github.io", private) != 1) {
		psl_free(psl);
		return mg_err_set(err,
		                  "%s is not a whole public suffix list: it does not list com and "
		                  "co.uk in its ICANN section and github.io in its private one",
		                  path);
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

const char *cfg_suffixes_private_parent(const struct cfg_suffixes *s, const char *name)
{
	for (const char *p = strchr(name, '.'); p != NULL; p = strchr(p + 1, '.'))
		if (psl_is_public_suffix2(s->psl, p + 1,
		                          PSL_TYPE_PRIVATE | PSL_TYPE_NO_STAR_RULE) == 1)
			return p + 1;
	return NULL;
}

char *cfg_suffixes_wildcard_refusal(const struct cfg_suffixes *s, const char *path,
                                    const char *base)
{
	if (cfg_suffixes_public(s, base))
		return xasprintf("is a wildcard on a public suffix: the public suffix list (%s) "
		                 "counts %s as one, so the names under it belong to whoever "
		                 "registers them; list each host, or a wildcard under a domain "
		                 "with one owner",
		                 path, base);
	const char *parent = cfg_suffixes_private_parent(s, base);
	if (parent != NULL)
		return xasprintf("is a wildcard under %s, a suffix of the private section of the "
		                 "public suffix list (%s): its operator hands out the names there "
		                 "by rules the list does not describe below %s, so the names "
		                 "under %s may be anyone's; list each host",
		                 parent, path, parent, base);
	return NULL;
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
	cleanup_free char *path = cfg_suffix_list_path();
	struct cfg_suffixes *list = NULL;
	if (cfg_suffixes_open(path, &list, err) < 0)
		return mg_err_wrap(err, "%s %s cannot be checked, so it is refused", what, host);
	cleanup_free char *refusal = cfg_suffixes_wildcard_refusal(list, path, host + 2);
	cfg_suffixes_free(list);
	if (refusal != NULL)
		return mg_err_set(err, "%s %s %s", what, host, refusal);
	return 0;
}
