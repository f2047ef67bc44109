/* Inside internal/debian: apt with mcpgate's private configuration
 * (deb_apt.c), and the order of a lock's packages. */
#ifndef MG_DEBIAN_DEBIAN_INTERNAL_H
#define MG_DEBIAN_DEBIAN_INTERNAL_H

#include "internal/debian/debian.h"

/* the packages of l sorted by name */
void deb_lock_sort(struct deb_lock *l);

/* DIR/apt: its configuration (apt.conf, sources.list, no part of the
 * host's apt configuration), its lists and its cache */
int deb_apt_prepare(const struct deb_store *s, struct mg_err **err);
/* apt-get update of the private lists */
int deb_apt_update(const struct deb_store *s, struct mg_err **err);
/* The closure of names over the packages status (a dpkg status file) holds,
 * as apt would install it (no recommends, no package taken as essential):
 * out->pkgs gets name, version and arch of each (sha256 NULL). A package
 * of status that would have to change is an error naming it. */
int deb_apt_resolve(const struct deb_store *s, const char *status, const struct strv *names,
                    struct deb_lock *out, struct mg_err **err);
/* The .debs of l's packages, those missing from the cache downloaded at
 * their exact versions (apt checks each against the signed index). */
int deb_apt_download(const struct deb_store *s, const char *status, const struct deb_lock *l,
                     struct mg_err **err);
/* Where the cache keeps p's .deb (allocated) */
char *deb_apt_cached(const struct deb_store *s, const struct deb_pkg *p);

#endif
