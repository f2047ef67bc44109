/* What `mcpgate add` shares between its files: the images it keeps and the
 * contained step that runs npm's install scripts (add_scripts.c). */
#ifndef MG_CMD_ADD_H
#define MG_CMD_ADD_H

#include "internal/base/err.h"
#include "internal/base/strv.h"
#include "internal/config/config.h"
#include "internal/container/container.h"
#include "internal/debian/debian.h"
#include "internal/json/json.h"
#include "internal/pack/pack.h"

/* "PATH:PATH" for --base-add: the absolute paths ldd lists for binary (its
 * loader and libraries), appended to adds unless already there. */
int add_ldd_libs(const char *binary, struct strv *adds, struct mg_err **err);

/* The layers below a package's own (add_layers.c): the Debian base, node,
 * the server's Debian packages; and for the install step, where native code
 * is built, the build tools and what node-gyp needs. */
struct add_layers {
	struct deb_store store;
	bool store_open;
	struct deb_layer base;  /* the Debian base set */
	struct deb_layer set;   /* the --with packages; blob NULL when none */
	struct deb_layer tools; /* the build tools; blob NULL unless native code is built */
	struct strv node;       /* node and its libraries, "SRC:DEST" */
	char *node_blob;        /* their layer, kept (DATA/images/node-KEY.tar.gz) */
	struct pack_layer_info node_info;
	struct strv native; /* node's headers, npm's node-gyp, "SRC:DEST" */
	char *node_path, *node_version;
};
/* node's layer from node, the Debian base and (packages not empty) the
 * set's layer over it, from the store under data; refresh resolves the
 * sets again */
int add_layers_prepare(struct add_layers *l, const char *data, const char *node,
                       const struct strv *packages, bool refresh, struct mg_err **err);
/* the build tools' layer, node's headers and npm's node-gyp (npm: its path) */
int add_layers_native(struct add_layers *l, const char *data, const char *npm, bool refresh,
                      struct mg_err **err);
/* out (bottom first): a server's image (step false), or the install step's
 * (step true: no set, the build tools when prepared); the count */
size_t add_layers_lower(const struct add_layers *l, bool step, struct pack_lower out[4]);
/* the labels that say what the layers are */
void add_layers_labels(const struct add_layers *l, struct strv *labels);
/* the locks of the image's Debian layers, beside its archive */
int add_layers_keep_locks(const struct add_layers *l, const char *archive, struct mg_err **err);
void add_layers_free(struct add_layers *l);
/* lockfile keys ("node_modules/...") of the packages in work that build
 * native code at install (binding.gyp, gypfile, node-gyp in a script) */
void add_native_packages(const char *work, struct strv *out);

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
 * the accept_unenforced the person gave). The image is layers' step image:
 * the Debian base and node, and the build tools where native code is built
 * (then a package with a binding.gyp and no install script gets npm's
 * implied `node-gyp rebuild`). Nothing of the packages runs on the host;
 * what the scripts left is cleared of setuid and setgid bits. */
int add_run_scripts(const struct cfg *cfg, struct ctr_driver *d, const char *work, const char *data,
                    const char *name, const struct add_layers *layers, const struct strv *pkgs,
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
