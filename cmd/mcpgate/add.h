/* What `mcpgate add` shares between its files: the images it keeps and the
 * contained step that runs npm's install scripts (add_scripts.c). */
#ifndef MG_CMD_ADD_H
#define MG_CMD_ADD_H

#include <sys/types.h>

#include "internal/base/err.h"
#include "internal/base/strv.h"
#include "internal/config/config.h"
#include "internal/container/container.h"
#include "internal/debian/debian.h"
#include "internal/json/json.h"
#include "internal/pack/pack.h"

struct progress;

/* An npm package as resolved (npm view, or a local tarball's package.json) */
struct npm_pkg {
	char *name;      /* as the registry spells it */
	char *version;   /* the exact version resolved */
	char *integrity; /* dist.integrity, "sha512-..." */
	char *bin;       /* the entry point, relative to the package's folder */
	char *spec;      /* what package.json depends on: the version, or file:TARBALL */
};
void add_npm_pkg_free(struct npm_pkg *p);

/* npm view PACKAGE@VERSION (a version, range or tag): the exact version,
 * its bin and integrity, or an error saying why not */
int add_npm_resolve(const char *npm, const char *pkg, const char *version, struct npm_pkg *out,
                    struct mg_err **err);
/* node_modules of p in dir, scripts off: npm ci from the lockfile kept
 * there for this very package.json, else npm install, which writes it */
int add_npm_install(const char *npm, const char *dir, const struct npm_pkg *p, struct mg_err **err);
/* The "packages" object of dir's package-lock.json, or NULL (none, or not
 * JSON); *doc holds the whole parse, which the caller frees */
const struct json_value *add_lock_packages(const char *dir, struct json_value **doc);
/* The packages in dir's lockfile whose install scripts did not run */
void add_scripts_skipped(const char *dir, struct strv *out);
struct add_layers;
/* The image of the package installed in work, over layers (the Debian
 * base, node, the server's Debian set), kept in DATA/images by its digest;
 * *image is the pin for mcp.toml */
int add_make_image(const char *work, const char *data, const char *name, const struct npm_pkg *p,
                   const struct add_layers *layers, char **image, char **archive,
                   struct mg_err **err);

/* npm on PATH, and node (node_opt, else the one on PATH) as a real path */
int add_find_tools(const char *node_opt, char **npm, char **node, struct mg_err **err);

/* On stderr, before the long steps: the limits d cannot hold here that
 * accept (--accept-unenforced) does not accept, and what to give */
void add_say_unenforced(const char *cmd, const struct ctr_driver *d, const struct strv *accept);

/* What add and update build a server's image with */
struct add_build {
	const char *cmd; /* "add", "update": messages say who speaks */
	const struct cfg *cfg;
	struct ctr_driver *d;
	const char *npm, *node, *data;
	const char *name;            /* the server's: the image's repository */
	const char *work;            /* the install folder: DATA/npm/NAME (update: NAME.update) */
	bool scripts;                /* --scripts: the skipped install scripts run, contained */
	bool refresh;                /* --refresh-packages: the Debian sets resolved again */
	const struct strv *packages; /* the Debian packages to put in the image (--with) */
	const struct strv *accept;   /* --accept-unenforced, for that step */
	struct progress *progress;   /* where the steps are said */
	unsigned steps;              /* of the command, before a scripts step */
};
/* npm install into b->work, the image built over the node layer, kept and
 * loaded into the runtime, and found there by its pin (*image; *archive
 * the kept archive), each step said on b->progress */
int add_npm_build(const struct add_build *b, const struct npm_pkg *p, char **image, char **archive,
                  struct mg_err **err);

/* The kept archive loaded into b->d and found there by its pin *image, said
 * on b->progress as a step of its own; on a swarm also pushed to the
 * registry every node pulls from (a step more), and *image replaced by its
 * pin there */
int add_load_image(const struct add_build *b, char **image, const char *archive,
                   struct mg_err **err);
/* The size of archive (NULL: nothing) said on b->progress */
void add_progress_made(const struct add_build *b, const char *archive);

/* "PATH:PATH" for --base-add: the absolute paths ldd lists for binary (its
 * loader and libraries), appended to adds unless already there. */
int add_ldd_libs(const char *binary, struct strv *adds, struct mg_err **err);

/* The layers below a package's own (add_layers.c): the Debian base, node,
 * the server's Debian packages; and for the install step, where native code
 * is built, the build tools and what node-gyp needs. */
struct add_layers {
	struct deb_store store;
	bool store_open;
	struct deb_layer base;   /* the Debian base set */
	struct deb_layer python; /* Debian's python3 over the base; blob NULL but for Python */
	struct deb_layer set;    /* the --with packages; blob NULL when none */
	struct deb_layer tools;  /* the build tools; blob NULL unless native code is built */
	struct strv node;        /* node and its libraries, "SRC:DEST" */
	char *node_blob;         /* their layer, kept (DATA/images/node-KEY.tar.gz) */
	struct pack_layer_info node_info;
	struct strv native; /* node's headers, npm's node-gyp, "SRC:DEST" */
	char *node_path, *node_version;
};
/* node's layer from node (NULL: a Python image, which gets Debian's
 * python3 as a layer of its own instead), the Debian base and (packages
 * not empty) the set's layer over it, from the store under data and the
 * archive cfg's [debian] names (cfg NULL: Debian's); refresh resolves the
 * sets again */
int add_layers_prepare(struct add_layers *l, const char *data, const struct cfg *cfg,
                       const char *node, const struct strv *packages, bool refresh,
                       struct mg_err **err);
/* the build tools' layer, node's headers and npm's node-gyp (npm: its path) */
int add_layers_native(struct add_layers *l, const char *data, const char *npm, bool refresh,
                      struct mg_err **err);
/* the build tools of a Python source distribution: a C compiler and
 * python3's headers, as a Debian layer of their own over the base */
int add_layers_python_tools(struct add_layers *l, bool refresh, struct mg_err **err);
/* out (bottom first): a server's image (step false), or the install step's
 * (step true: the --with set too, and the build tools when prepared);
 * the count */
size_t add_layers_lower(const struct add_layers *l, bool step, struct pack_lower out[5]);
/* the labels that say what the layers are */
void add_layers_labels(const struct add_layers *l, struct strv *labels);
/* spec built over l's layers (step: the install step's, else a server's)
 * with their labels appended to labels, and kept (add_pack_kept); a
 * server's image gets its Debian locks beside its archive, and a line on
 * the progress saying its layers */
int add_pack_over(struct pack_spec *spec, const struct add_layers *l, bool step,
                  struct strv *labels, const char *images, const char *repo,
                  struct pack_result *res, char **image, char **archive, struct mg_err **err);
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
/* Today as YYYY-MM-DD (UTC), for the notes add and update write */
void add_today(char day[static 16]);

int add_pack_kept(struct pack_spec *spec, const char *images, const char *repo,
                  struct pack_result *res, char **image, char **archive, struct mg_err **err);

/* A contained step of add (add_step.c): runner, a program of mcpgate's
 * written into work for the run, executed by the step's image (entrypoint)
 * in a container with a server's isolation: no network, work read-only at
 * /workspace and only work/WRITE writable, its limits held or refused as a
 * server's (accept: the accept_unenforced the person gave). The image is
 * layers' step image: the Debian base and the language's layer, with the
 * build tools when prepared. What the step left in WRITE is cleared of
 * setuid and setgid bits and special files. */
struct add_step {
	const char *kind;  /* "npm-scripts": image mcpgate-KIND, container NAME-KIND */
	const char *what;  /* "the install scripts of 2 package(s)", for messages */
	const char *label; /* the image's label key saying it is this step (prune) */
	const char *runner_name, *runner;
	size_t runner_len;
	const char *const *entrypoint;
	size_t n_entrypoint;
	const char *const *env; /* the image's */
	size_t n_env;
	const char *write;       /* the one folder of work it may write */
	const struct strv *args; /* after the entrypoint, or NULL */
	int quiet_status;        /* a status other than 0 that is no failure (0: none) */
};
/* *status: the step's exit status; 0 returned when it ran at all */
int add_step_run(const struct cfg *cfg, struct ctr_driver *d, const char *work, const char *data,
                 const char *name, const struct add_layers *layers, const struct add_step *st,
                 const struct strv *accept, int *status, struct mg_err **err);

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
/* The same below dir (a Python package tree) */
int add_clear_tree(const char *dir, unsigned *cleared, struct mg_err **err);
/* The same, and dir with everything below it given to to (lchown) */
struct add_owner {
	uid_t uid;
	gid_t gid;
};
int add_clear_tree_to(const char *dir, const struct add_owner *to, unsigned *cleared,
                      struct mg_err **err);

/* The member TOP/BASE of the gzipped tar in data (path: for messages), at
 * most max bytes, into *text (NUL-terminated) and *text_len: 1 found, 0
 * not there, -1 an error. Nothing of it is written anywhere. */
int add_tar_member(const char *path, const char *data, size_t len, const char *base, size_t max,
                   char **text, size_t *text_len, struct mg_err **err);
/* A local package tarball (npm pack's output): its package.json, parsed,
 * and its integrity as npm records it ("sha512-" and base64). Nothing of
 * it runs. */
int add_read_tarball(const char *path, struct json_value **package, char **integrity,
                     struct mg_err **err);

/* ---- Python packages (add_pypi.c) ---------------------------------------- */

/* What pypi:SOURCE asks for */
struct pypi_req {
	char *name;    /* as given (a wheel: from its file name, normal form) */
	char *version; /* ==VERSION, a wheel's; NULL: the newest */
	char *wheel;   /* a local wheel's real path, or NULL */
	char *sdist;   /* a local source distribution's real path, or NULL */
};
void add_pypi_req_free(struct pypi_req *r);

/* A Python package as locked */
struct pypi_pkg {
	char *name;     /* normal form (PEP 503) */
	char *version;  /* the exact version */
	char *sha256;   /* of its wheel */
	char *lock_hex; /* sha256 of the lock's bytes */
	char *command;  /* its console script's MODULE[:FUNC], unless --module */
};
void add_pypi_pkg_free(struct pypi_pkg *p);

/* PEP 508's name; a dotted Python module name */
bool add_pypi_name_ok(const char *s);
bool add_pypi_module_ok(const char *s);
/* "pypi:NAME[==VERSION]" or "pypi:PATH.whl" into out; a source
 * distribution is refused, with why */
int add_pypi_parse(const char *src, struct pypi_req *out, struct mg_err **err);
/* python3 on PATH, with pip */
int add_find_pip(char **python, struct mg_err **err);
/* The Debian layers (base, python3, b->packages), the lock in b->work
 * (kept for the same request, else pip resolves it), pip's install of
 * exactly the lock into b->work/site, the image (python3 runs p's console
 * script, or -m module) kept and loaded into the runtime: *image its pin */
int add_pypi_build(const struct add_build *b, const char *python, const struct pypi_req *req,
                   const char *module, struct pypi_pkg *p, char **image, char **archive,
                   struct mg_err **err);
/* The label of an image add made with --module: the module */
#define ADD_PYPI_LABEL_MODULE "io.mcpgate.pypi.module"
/* For update: pip's resolution of req (an index's package; version NULL:
 * the newest with wheels for the image's python) as add_pypi_build makes
 * it, nothing installed: p as locked, and the lock and what it was resolved
 * for written into work, where add_pypi_build of req's name at p->version
 * takes that lock as kept rather than resolve again */
int add_pypi_resolve(const struct cfg *cfg, const char *data, const char *python,
                     const struct pypi_req *req, const char *work, struct pypi_pkg *p,
                     struct mg_err **err);

/* What a source distribution says of its build (pyproject.toml's
 * build-system, or PEP 517's default for setuptools), each value checked */
struct pypi_sdist {
	char *backend;            /* MODULE[:OBJECT] */
	struct strv requires;     /* PEP 508 requirements, no URL among them */
	struct strv backend_path; /* paths below the source's top folder */
};
void add_pypi_sdist_free(struct pypi_sdist *s);
/* a PEP 508 requirement mcpgate hands pip: no direct reference (URL) */
bool add_pypi_requirement_ok(const char *s);
/* path's pyproject.toml, read from the tar without unpacking anything */
int add_pypi_sdist_read(const char *path, struct pypi_sdist *out, struct mg_err **err);
/* The contained build of b->work/sdist/SDIST_BASE with b->work/build-env
 * (what it needs, installed): *wheel the one wheel it left in
 * b->work/build/dist; or, *wheel NULL, more holds what the backend asked
 * for beyond build-env (get_requires_for_build_wheel) */
int add_pypi_sdist_step(const struct add_build *b, const struct add_layers *l,
                        const char *sdist_base, const struct pypi_sdist *s, struct strv *more,
                        char **wheel, struct mg_err **err);

#endif
