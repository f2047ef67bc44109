/* OCI image archives built without a Dockerfile or a registry (docs/packing.md).
 *
 * pack_build() turns a static binary and/or a folder, plus added files, into
 * one tar in the OCI image layout: oci-layout, index.json, the blobs
 * (manifest, config, one gzip layer, or a base layer below it), and a docker-archive manifest.json
 * beside them, so `podman load` and `docker load` both take it. The same
 * inputs and options always give a byte-identical archive: fixed times, sorted
 * entries, owner 0:0, normalised modes, a gzip header without time or name.
 *
 * Ownership: a spec only borrows its strings; a result owns its warnings
 * (pack_result_free). */
#ifndef MG_PACK_PACK_H
#define MG_PACK_PACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal/base/err.h"
#include "internal/base/strv.h"

/* "sha256:" + 64 lower-case hex digits */
#define PACK_DIGEST_LEN 71

/* At most this many entries (files, folders, symlinks) in one image */
#define PACK_MAX_ENTRIES 1000000u
/* At most this many folders deep */
#define PACK_MAX_DEPTH 256u
/* At most this many layers in one image, the top one included */
#define PACK_MAX_LAYERS 16u

/* One layer's identity: what a manifest and a configuration name it by */
struct pack_layer_info {
	char digest[PACK_DIGEST_LEN + 1];  /* sha256 of the gzip stream (the blob) */
	char diff_id[PACK_DIGEST_LEN + 1]; /* sha256 of the tar inside it */
	uint64_t size, tar_size;
};

/* A layer below the top one: files ("SRC:DEST" as pack_spec.adds), or a
 * layer built before by pack_build_layer (blob: its file; info: what that
 * call returned; the file's bytes must still hash to info->digest) */
struct pack_lower {
	const char *const *adds;
	size_t n_adds;
	const char *blob;
	const struct pack_layer_info *info;
};

struct pack_spec {
	const char *output; /* the archive to write; replaced only once it is whole */

	const char *binary;      /* NULL or a file (symlinks followed): mode 0755 in the image */
	const char *binary_dest; /* where it goes; NULL: "/" + its base name */
	const char *folder;      /* NULL or a folder whose tree is the root filesystem */
	/* "SRC:DEST": a file or folder SRC (a symlink there is followed) at the
	 * absolute path DEST; the split is at the last ':' that a '/' follows */
	const char *const *adds;
	size_t n_adds;
	/* "SRC:DEST" as adds, but in a layer of their own below the rest: the
	 * same base_adds give the same layer (one blob, stored once by the
	 * runtime, whatever image is on top); none: one layer */
	const char *const *base_adds;
	size_t n_base_adds;
	/* more layers below the top one, bottom first, above base_adds' */
	const struct pack_lower *lower;
	size_t n_lower;

	/* The entrypoint: entrypoint[] when n_entrypoint > 0, else [binary_dest]
	 * with a binary, else none; then entrypoint_args[] appended. */
	const char *const *entrypoint;
	size_t n_entrypoint;
	const char *const *entrypoint_args;
	size_t n_entrypoint_args;

	const char *const *env; /* "NAME=VALUE"; a later NAME replaces an earlier one */
	size_t n_env;
	const char *const *labels; /* "KEY=VALUE"; a later KEY replaces an earlier one */
	size_t n_labels;
	const char *user;      /* NULL (the runtime's default, root) or "UID" or "UID:GID" */
	const char *workdir;   /* NULL: "/" */
	unsigned workdir_mode; /* the working directory's folder when no add gives it; 0: 0755 */
	const char *arch;      /* NULL: this machine's (pack_machine_arch); else ARCH[/VARIANT] */
	const char *name;      /* NULL or NAME[:TAG] (TAG defaults to "latest") */
	uint64_t mtime;        /* every time stamp written: SOURCE_DATE_EPOCH or 0 */
};

struct pack_result {
	char manifest_digest[PACK_DIGEST_LEN + 1]; /* what `pack` prints; the image's digest */
	char config_digest[PACK_DIGEST_LEN + 1];   /* the image ID runtimes show */
	char layer_digest[PACK_DIGEST_LEN + 1];    /* of the (top) layer's gzip blob */
	char base_digest[PACK_DIGEST_LEN + 1];     /* of the lowest layer's, or "" (one layer) */
	uint64_t base_size;                        /* bytes of the lowest layer's blob */
	size_t n_layers;                           /* every layer, the top one included */
	char diff_id[PACK_DIGEST_LEN + 1];         /* of the uncompressed layer tar */
	uint64_t layer_size;                       /* bytes of the gzip blob */
	uint64_t layer_tar_size;                   /* bytes of the uncompressed layer tar */
	uint64_t archive_size;                     /* bytes of the whole output */
	size_t files, dirs, symlinks;              /* entries in the layer */
	char platform[32];                         /* "linux/amd64", "linux/arm64/v8" */
	char ref[400];                             /* "NAME:TAG", or "" without a name */
	char *manifest;                            /* the manifest's bytes (owned) */
	size_t manifest_len;
	/* What may keep the image from starting, one sentence each: a binary
	 * that is dynamically linked and whose loader is not in the image, or
	 * built for another architecture; an entrypoint that is not in it, or
	 * none. Owned: pack_result_free() after pack_build, whatever it returned. */
	struct strv warnings;
};

/* Write spec->output. On failure nothing is left behind (not even a partial
 * output), and the message names the path or the option at fault. */
int pack_build(const struct pack_spec *spec, struct pack_result *out, struct mg_err **err);

/* One layer on its own, for pack_spec.lower: adds ("SRC:DEST", "DIR:/" for
 * a folder's tree as the root) written to output (replaced only once it is
 * whole) as a gzip layer, every time stamp mtime, with the same rules as an
 * image's layers; info tells what the manifest names it by. */
int pack_build_layer(const char *const *adds, size_t n_adds, uint64_t mtime, const char *output,
                     struct pack_layer_info *info, struct mg_err **err);

/* A layer's info kept beside it as JSON (digest, diff_id, sizes): load
 * gives -1 when the file is missing or not such a document; save writes it
 * atomically, 0600 */
int pack_layer_info_load(const char *path, struct pack_layer_info *info);
int pack_layer_info_save(const char *path, const struct pack_layer_info *info, struct mg_err **err);

/* Free what a result owns; NULL does nothing. */
void pack_result_free(struct pack_result *r);

/* This machine's architecture as OCI names it, ARCH[/VARIANT] (x86_64 ->
 * "amd64", aarch64 -> "arm64/v8", ...); a static string. Fails on a machine
 * pack has no name for. */
int pack_machine_arch(const char **arch, struct mg_err **err);

/* A JSON array of one or more strings ("[\"/server\",\"--stdio\"]") into out
 * (appended; owned by out). No string may hold a NUL. */
int pack_parse_entrypoint(const char *json, struct strv *out, struct mg_err **err);

/* Split and check NAME[:TAG]: the distribution reference grammar without a
 * digest, lower case as mcp.toml's image wants it (docs/config.md). *repo and
 * *tag are the caller's to free; *tag is "latest" when none is given. */
int pack_parse_ref(const char *ref, char **repo, char **tag, struct mg_err **err);

/* An absolute image path ("/usr//bin/./x/") in the tree's form ("usr/bin/x";
 * "" for "/"). Refuses relative paths, "..", and whiteout names (".wh."). */
int pack_image_path(const char *path, const char *what, char **out, struct mg_err **err);

#endif
