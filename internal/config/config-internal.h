/* What the configuration module shares with its own files and its tests
 * only. */
#ifndef MG_CONFIG_CONFIG_INTERNAL_H
#define MG_CONFIG_CONFIG_INTERNAL_H

#include <stdbool.h>

#include "internal/base/err.h"

/* The public suffix list wildcard entries are judged by: mcpgate's own copy
 * (third_party/publicsuffix/README.md says where it comes from), which
 * `make install` puts beside the program; docs/wildcards.md says why this
 * one. Both paths are relative to the folder of the mcpgate binary. */
#define CFG_SUFFIX_LIST_INSTALLED "../share/mcpgate/public_suffix_list.dat"
#define CFG_SUFFIX_LIST_TREE      "third_party/publicsuffix/public_suffix_list.dat"

/* The list to read, allocated: $MCPGATE_PUBLIC_SUFFIX_LIST when it is an
 * absolute path (the tests point it elsewhere), else the installed copy
 * beside this mcpgate, else the source tree's for a mcpgate built in it;
 * when neither is there, where the installed one should be (opening it then
 * fails, naming that place). Never the system's list. */
char *cfg_suffix_list_path(void);

struct cfg_suffixes;

/* Read the list at path. Fails, naming the file, when it cannot be read or
 * is not a whole public suffix list (one that does not list com and co.uk
 * in its ICANN section and github.io in its private one is taken for a
 * wrong, empty or cut file, never for a list that allows all): a missing
 * list refuses wildcards rather than passing them. *out is owned by the
 * caller (cfg_suffixes_free). */
int cfg_suffixes_open(const char *path, struct cfg_suffixes **out, struct mg_err **err);

/* Whether name (lower case, ASCII, punycode for IDN, no trailing dot) is a
 * public suffix: a rule of the list, ICANN's section or the private one,
 * or implied by one (a wildcard rule *.ck makes ck and every x.ck one), or
 * a single label unknown to the list (the list's default rule, "*"). */
bool cfg_suffixes_public(const struct cfg_suffixes *s, const char *name);

/* The nearest parent of name (a pointer into name) that is a suffix of the
 * list's private section, or NULL when none is: storage.googleapis.com
 * gives googleapis.com, api.example.com gives NULL. */
const char *cfg_suffixes_private_parent(const struct cfg_suffixes *s, const char *name);

/* Why the wildcard *.base is refused, allocated, to follow the entry in a
 * message ("is a wildcard on a public suffix: ..."), or NULL when it is
 * not: base is a public suffix, or lies under a suffix of the private
 * section. path names the list in the message. */
char *cfg_suffixes_wildcard_refusal(const struct cfg_suffixes *s, const char *path,
                                    const char *base);

void cfg_suffixes_free(struct cfg_suffixes *s);

#endif
