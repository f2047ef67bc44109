/* What the configuration module shares with its own files and its tests
 * only. */
#ifndef MG_CONFIG_CONFIG_INTERNAL_H
#define MG_CONFIG_CONFIG_INTERNAL_H

#include <stdbool.h>

#include "internal/base/err.h"

/* The public suffix list wildcard entries are judged by: the file Debian's
 * publicsuffix package keeps, in the compiled form libpsl reads
 * (docs/wildcards.md says why this one). */
#define CFG_SUFFIX_LIST "/usr/share/publicsuffix/public_suffix_list.dafsa"

/* The list to read: $MCPGATE_PUBLIC_SUFFIX_LIST when it is an absolute path
 * (the tests point it elsewhere), else CFG_SUFFIX_LIST. Static or the
 * environment's; not to be freed. */
const char *cfg_suffix_list_path(void);

struct cfg_suffixes;

/* Read the list at path. Fails, naming the file, when it cannot be read or
 * is not a public suffix list (one that does not list com and co.uk is
 * taken for a wrong or empty file, never for a list that allows all): a
 * missing list refuses wildcards rather than passing them. *out is owned by
 * the caller (cfg_suffixes_free). */
int cfg_suffixes_open(const char *path, struct cfg_suffixes **out, struct mg_err **err);

/* Whether name (lower case, ASCII, punycode for IDN, no trailing dot) is a
 * public suffix: a rule of the list, ICANN's section or the private one,
 * or implied by one (a wildcard rule *.ck makes ck and every x.ck one), or
 * a single label unknown to the list (the list's default rule, "*"). */
bool cfg_suffixes_public(const struct cfg_suffixes *s, const char *name);

void cfg_suffixes_free(struct cfg_suffixes *s);

#endif
