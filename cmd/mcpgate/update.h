/* What `mcpgate update` (update.c) shares with the files of its sources:
 * npm's is in update.c, PyPI's in update_pypi.c. */
#ifndef MG_CMD_UPDATE_H
#define MG_CMD_UPDATE_H

#include <stdbool.h>

#include "cmd/mcpgate/add.h"
#include "internal/base/err.h"
#include "internal/base/strv.h"
#include "internal/config/config.h"
#include "internal/container/container.h"

struct progress;

/* What an image says it was made from (SCHEME:PACKAGE@VERSION, PyPI's
 * pypi:NAME==VERSION), and its config, which a source may read further */
struct made_from {
	char *scheme, *package, *version;
	struct ctr_image_config config;
};

struct update_ctx {
	const struct cfg *cfg;
	const struct cfg_server *s;
	struct ctr_driver *d;
	const char *data, *node_opt;
	bool scripts;
	struct strv accept;
	struct progress *progress;
	/* the folder the new release is made in (DATA/TREE/NAME.update);
	 * NULL for outdated, which makes nothing */
	const char *work;
	char *npm, *node; /* npm's tools, found at its first resolve */
	char *python;     /* pip's python, found at PyPI's first resolve */
	char *module;     /* PyPI: python3 -m MODULE, as the entry was added */
};

/* One source of servers: the newest release of a package that want names
 * ("latest", or what the person gave), and the image of it, made in
 * c->work */
struct update_source {
	const char *scheme;
	const char *tree;      /* DATA/TREE/NAME holds what an entry's image is made of */
	const char *tree_what; /* how a removal names DATA/TREE/NAME.update */
	const char *sep;       /* between package and version: "@", "==" */
	unsigned steps;        /* of update, as the progress counts them */
	/* what the image and the data folder say beyond the source label:
	 * an entry the registry cannot update refused (a local tarball or
	 * wheel), and what the build must take again (--module) kept in c */
	int (*check)(struct update_ctx *c, const struct made_from *m, struct mg_err **err);
	/* the step's text while it resolves */
	char *(*resolving)(const char *package, const char *want);
	int (*resolve)(struct update_ctx *c, const char *package, const char *want, char **version,
	               void **resolved, struct mg_err **err);
	int (*build)(struct update_ctx *c, void *resolved, char **image, char **archive,
	             struct mg_err **err);
	void (*resolved_free)(void *resolved);
	/* what the entry's note says of the release after its version ("; npm
	 * integrity ...", as add writes it) */
	char *(*note)(struct update_ctx *c, void *resolved);
};

extern const struct update_source update_pypi;

/* What add_npm_build or add_pypi_build is asked to make for c: the entry's
 * own Debian packages (into packages, which the caller frees), its name and
 * work folder, src's step count; what only one source needs is then set */
struct add_build update_build_of(struct update_ctx *c, const struct update_source *src,
                                 struct strv *packages);

#endif
