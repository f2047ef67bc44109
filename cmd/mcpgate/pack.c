/* mcpgate pack: an OCI image archive from a static binary or a folder, with
 * no Dockerfile and no registry (docs/packing.md). stdout gets the manifest
 * digest alone, for scripts and mcp.toml; stderr a short summary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/mcpgate/commands.h"
#include "cmd/mcpgate/opts.h"
#include "internal/base/cleanup.h"
#include "internal/base/num.h"
#include "internal/base/xalloc.h"
#include "internal/pack/pack.h"

/* the last second an image's "created" date can name (9999-12-31T23:59:59Z) */
#define MAX_EPOCH 253402300799ull

struct repeated {
	const char **v;
	size_t n;
};

/* one value each; a second is a usage error */
struct single {
	const char *name;
	const char **value;
};

static void human_size(uint64_t n, char *out, size_t size)
{
	static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)n;
	size_t u = 0;
	while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	int r = u == 0 ? snprintf(out, size, "%llu bytes", (unsigned long long)n)
	               : snprintf(out, size, "%.1f %s", v, units[u]);
	if (r < 0 || (size_t)r >= size)
		out[0] = '\0';
}

static int source_date_epoch(uint64_t *out, struct mg_err **err)
{
	const char *s = getenv("SOURCE_DATE_EPOCH");
	*out = 0;
	if (s == NULL || s[0] == '\0')
		return 0;
	return mg_parse_u64(s, 0, MAX_EPOCH, "SOURCE_DATE_EPOCH", out, err);
}

static void summary(const struct pack_spec *spec, const struct pack_result *res)
{
	char archive[32], layer[32];
	human_size(res->archive_size, archive, sizeof(archive));
	human_size(res->layer_tar_size, layer, sizeof(layer));
	fprintf(stderr,
	        "mcpgate pack: wrote %s (%s): %zu file%s, %zu folder%s, %zu symlink%s "
	        "(%s unpacked), %s, image ID %.19s...\n",
	        spec->output, archive, res->files, res->files == 1 ? "" : "s", res->dirs,
	        res->dirs == 1 ? "" : "s", res->symlinks, res->symlinks == 1 ? "" : "s", layer,
	        res->platform, res->config_digest);
	if (res->base_digest[0] != '\0')
		fprintf(stderr, "mcpgate pack: its base layer %.19s... (%llu bytes compressed)\n",
		        res->base_digest, (unsigned long long)res->base_size);
	for (size_t i = 0; i < res->warnings.n; i++)
		fprintf(stderr, "mcpgate pack: warning: %s\n", res->warnings.v[i]);
	if (res->ref[0] != '\0')
		fprintf(stderr,
		        "mcpgate pack: `podman load -i %s` or `docker load -i %s` names it %s\n",
		        spec->output, spec->output, res->ref);
	else
		fprintf(stderr,
		        "mcpgate pack: load it with `podman load -i %s` or `docker load -i %s`\n",
		        spec->output, spec->output);
}

int cmd_pack(int argc, char **argv, struct mg_err **err)
{
	const struct command *self = command_find("pack");
	struct pack_spec spec = {0};
	const char *entrypoint = NULL;
	struct single singles[] = {
	    {"output", &spec.output},
	    {"binary", &spec.binary},
	    {"path-in-image", &spec.binary_dest},
	    {"folder", &spec.folder},
	    {"user", &spec.user},
	    {"workdir", &spec.workdir},
	    {"arch", &spec.arch},
	    {"name", &spec.name},
	    {"entrypoint", &entrypoint},
	};
	/* every repeated option has at most argc values */
	cleanup_free const char **adds = xcalloc((size_t)argc, sizeof(char *));
	cleanup_free const char **args = xcalloc((size_t)argc, sizeof(char *));
	cleanup_free const char **env = xcalloc((size_t)argc, sizeof(char *));
	cleanup_free const char **labels = xcalloc((size_t)argc, sizeof(char *));
	cleanup_free const char **base = xcalloc((size_t)argc, sizeof(char *));
	struct {
		const char *name;
		struct repeated r;
	} repeats[] = {
	    {"add", {adds, 0}},     {"entrypoint-arg", {args, 0}}, {"env", {env, 0}},
	    {"label", {labels, 0}}, {"base-add", {base, 0}},
	};
	const size_t n_singles = sizeof(singles) / sizeof(singles[0]);
	const size_t n_repeats = sizeof(repeats) / sizeof(repeats[0]);

	for (int i = 1; i < argc; i++) {
		int r = 0;
		const char *value = NULL;
		for (size_t k = 0; r == 0 && k < n_singles; k++) {
			r = opt_value(argc, argv, &i, singles[k].name, &value);
			if (r > 0 && *singles[k].value != NULL)
				return usage_error(self, "--%s given twice", singles[k].name);
			if (r > 0)
				*singles[k].value = value;
		}
		for (size_t k = 0; r == 0 && k < n_repeats; k++) {
			r = opt_value(argc, argv, &i, repeats[k].name, &value);
			if (r > 0)
				repeats[k].r.v[repeats[k].r.n++] = value;
		}
		if (r < 0)
			return EXIT_USAGE;
		if (r == 0)
			return usage_error(self, "unexpected argument \"%s\"", argv[i]);
	}
	if (spec.output == NULL)
		return usage_error(self, "where to? (--output FILE.tar)");
	if (spec.binary == NULL && spec.folder == NULL && repeats[0].r.n == 0)
		return usage_error(self, "what to pack? (--binary PATH or --folder DIR)");
	spec.adds = repeats[0].r.v;
	spec.n_adds = repeats[0].r.n;
	spec.entrypoint_args = repeats[1].r.v;
	spec.n_entrypoint_args = repeats[1].r.n;
	spec.env = repeats[2].r.v;
	spec.n_env = repeats[2].r.n;
	spec.labels = repeats[3].r.v;
	spec.n_labels = repeats[3].r.n;
	spec.base_adds = repeats[4].r.v;
	spec.n_base_adds = repeats[4].r.n;

	struct strv ep = STRV_INIT;
	struct pack_result res = {0};
	int status = EXIT_FAIL;
	if (entrypoint != NULL) {
		if (pack_parse_entrypoint(entrypoint, &ep, err) < 0)
			goto out;
		spec.entrypoint = (const char *const *)ep.v;
		spec.n_entrypoint = ep.n;
	}
	if (source_date_epoch(&spec.mtime, err) < 0)
		goto out;
	if (pack_build(&spec, &res, err) < 0)
		goto out;
	printf("%s\n", res.manifest_digest);
	if (fflush(stdout) != 0) {
		mg_err_set(err, "cannot write the digest to standard output");
		goto out;
	}
	summary(&spec, &res);
	status = EXIT_OK;
out:
	pack_result_free(&res);
	strv_free(&ep);
	return status;
}
