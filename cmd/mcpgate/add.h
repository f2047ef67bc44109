/* What `mcpgate add` shares between its files: the images it keeps and the
 * contained step that runs npm's install scripts (add_scripts.c). */
#ifndef MG_CMD_ADD_H
#define MG_CMD_ADD_H

#include "internal/base/err.h"
#include "internal/base/strv.h"
#include "internal/config/config.h"
#include "internal/container/container.h"
#include "internal/json/json.h"
#include "internal/pack/pack.h"

/* "PATH:PATH" for --base-add: the absolute paths ldd lists for binary (its
 * loader and libraries), appended to adds unless already there. */
int add_ldd_libs(const char *binary, struct strv *adds, struct mg_err **err);

/* Build spec (its output a temporary name in DATA/images) and keep the
 * archive by its digest, with its manifest beside it (pull loads it again,
 * docker's pin is checked against the manifest). *image is the pin
 * localhost/REPO@sha256:..., *archive the kept archive's path. */
int add_pack_kept(struct pack_spec *spec, const char *images, const char *repo,
                  struct pack_result *res, char **image, char **archive, struct mg_err **err);

/* The install scripts npm skipped (the packages of pkgs, lockfile keys
 * "node_modules/..."), run in a container with a server's isolation: no
 * network, the install folder work read-only at /workspace and only its
 * node_modules writable, its limits held or refused as a server's (accept:
 * the accept_unenforced the person gave). base is the node layer. Nothing of the packages
 * runs on the host; what the scripts left is cleared of setuid and setgid
 * bits. */
int add_run_scripts(const struct cfg *cfg, struct ctr_driver *d, const char *work, const char *data,
                    const char *name, const struct strv *base, const struct strv *pkgs,
                    const struct strv *accept, struct mg_err **err);

/* Remove work's node_modules, links never followed: what npm installs on
 * the host is never installed over a tree an install script had. */
int add_remove_modules(const char *work, struct mg_err **err);

/* Below work's node_modules, links never followed: setuid and setgid bits
 * cleared and anything that is not a file, folder or link removed, as
 * strangers' tarballs and install scripts may leave them (npm keeps a
 * tarball's mode 6755 when it unpacks as root). *cleared: how many. */
int add_clear_modules(const char *work, unsigned *cleared, struct mg_err **err);

/* A local package tarball (npm pack's output): its package.json, parsed,
 * and its integrity as npm records it ("sha512-" and base64). Nothing of
 * it runs. */
int add_read_tarball(const char *path, struct json_value **package, char **integrity,
                     struct mg_err **err);

#endif
