/* The layers below a package's own in the images `mcpgate add` makes, bottom
 * first (docs/2026-12-02-packages.md):
 *
 *   the Debian base  a shell, coreutils, grep, sed, find, CA certificates and
 *                    the C++ runtime, from Debian's archive: one layer for
 *                    every image made here
 *   node             this machine's node and the libraries it loads, as ldd
 *                    lists them: one layer for every image made here
 *   --with PKG...    the server's Debian packages, over the base: one layer
 *                    for every image that asks for the same set
 *
 * Kept in this order so that a runtime stores the node layer once (a layer
 * is stored per chain of layers below it), and two images with the same set
 * share every layer but their own.
 *
 * The install step that runs npm's scripts gets the base and node; where a
 * package builds native code it gets, in its own image only, the build
 * tools (g++, make, python3, as a Debian layer of their own), node's headers
 * from the node that goes into the image, and npm's own node-gyp (with the
 * modules npm keeps beside it, which it needs). */
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sodium.h>

#include "cmd/mcpgate/add.h"
#include "cmd/mcpgate/progress.h"
#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/xalloc.h"
#include "internal/json/json.h"
#include "internal/proc/proc.h"

/* what node-gyp needs to build an addon: a C++ compiler, make, python3 */
static const char *const build_tools[] = {"g++", "make", "python3"};

#define NODE_GYP_WRAPPER \
	"#!/bin/sh\nexec /usr/bin/node /opt/npm/node_modules/node-gyp/bin/node-gyp.js \"$@\"\n"

int add_ldd_libs(const char *binary, struct strv *adds, struct mg_err **err)
{
	const char *ldd_argv[] = {"/usr/bin/ldd", binary, NULL};
	const char *env[] = {"PATH=/usr/bin:/bin", "LC_ALL=C", NULL};
	struct proc_result res;
	if (proc_run(ldd_argv, env, 30000, 1 << 20, &res, err) < 0) {
		proc_result_free(&res);
		return mg_err_wrap(err, "ldd %s", binary);
	}
	int r = 0;
	size_t had = adds->n;
	if (!(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 0))
		r = mg_err_set(err, "ldd %s failed: %s", binary, mg_buf_str(&res.err));
	for (char *line = res.out.data; r == 0 && line != NULL && *line != '\0';) {
		char *nl = strchr(line, '\n');
		if (nl != NULL)
			*nl = '\0';
		char *arrow = strstr(line, "=> ");
		char *path = arrow != NULL ? arrow + 3 : line;
		while (*path == ' ' || *path == '\t')
			path++;
		if (*path == '/') {
			char *end = strchr(path, ' ');
			if (end != NULL)
				*end = '\0';
			strv_pushf(adds, "%s:%s", path, path);
		}
		line = nl != NULL ? nl + 1 : NULL;
	}
	proc_result_free(&res);
	if (r == 0 && adds->n == had)
		r = mg_err_set(err, "ldd %s listed no libraries: is it a program for this machine?",
		               binary);
	return r;
}

/* node and what `ldd` says it loads, each "PATH:PATH". ldd runs the host's
 * loader on the host's node: the person's own programs. */
static int node_layer(const char *node, struct strv *adds, char **version, struct mg_err **err)
{
	const char *env[] = {"PATH=/usr/bin:/bin", "LC_ALL=C", NULL};
	struct proc_result res;
	strv_pushf(adds, "%s:/usr/bin/node", node);
	if (add_ldd_libs(node, adds, err) < 0)
		return -1;
	const char *v_argv[] = {node, "--version", NULL};
	if (proc_run(v_argv, env, 30000, 4096, &res, err) < 0 ||
	    !(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 0)) {
		proc_result_free(&res);
		return mg_err_set(err, "%s --version failed", node);
	}
	*version = xstrndup(res.out.data, strcspn(res.out.data, "\n"));
	proc_result_free(&res);
	return 0;
}

/* node's layer, built once and kept in DATA/images as node-KEY.tar.gz: KEY
 * is the hash of what goes in (each file's path in the image, and where it
 * comes from: path, size, time, inode), so another node, or a library
 * replaced by an upgrade, is another layer; pack checks the kept file
 * against its digest whenever it goes into an image */
static int node_blob(struct add_layers *l, const char *data, struct mg_err **err)
{
	struct mg_buf key = MG_BUF_INIT(1 << 20);
	for (size_t i = 0; i < l->node.n; i++) {
		const char *sep = strrchr(l->node.v[i], ':');
		cleanup_free char *src = xstrndup(l->node.v[i], (size_t)(sep - l->node.v[i]));
		struct stat st;
		if (stat(src, &st) < 0) {
			mg_buf_free(&key);
			return mg_err_sys(err, errno, "%s", src);
		}
		mg_buf_printf(&key, NULL, "%s %lld %lld.%09ld %llu\n", l->node.v[i],
		              (long long)st.st_size, (long long)st.st_mtim.tv_sec,
		              st.st_mtim.tv_nsec, (unsigned long long)st.st_ino);
	}
	unsigned char sum[crypto_hash_sha256_BYTES];
	char hex[65];
	crypto_hash_sha256(sum, (const unsigned char *)key.data, key.len);
	sodium_bin2hex(hex, sizeof(hex), sum, sizeof(sum));
	mg_buf_free(&key);
	cleanup_free char *images = xasprintf("%s/images", data);
	cleanup_free char *info = xasprintf("%s/node-%s.json", images, hex);
	l->node_blob = xasprintf("%s/node-%s.tar.gz", images, hex);
	if (pack_layer_info_load(info, &l->node_info) == 0 && access(l->node_blob, R_OK) == 0)
		return 0;
	if (mg_mkdir_p(images, 0700, err) < 0 ||
	    pack_build_layer((const char *const *)l->node.v, l->node.n, 0, l->node_blob,
	                     &l->node_info, err) < 0 ||
	    pack_layer_info_save(info, &l->node_info, err) < 0)
		return -1;
	return 0;
}

int add_layers_prepare(struct add_layers *l, const char *data, const struct cfg *cfg,
                       const char *node, const struct strv *packages, bool refresh,
                       struct mg_err **err)
{
	struct deb_archive archive = {0};
	if (cfg != NULL)
		archive = (struct deb_archive){cfg->debian.mirror, cfg->debian.security,
		                               cfg->debian.keyring};
	if (node != NULL &&
	    (node_layer(node, &l->node, &l->node_version, err) < 0 || node_blob(l, data, err) < 0))
		return -1;
	l->node_path = node != NULL ? xstrdup(node) : NULL;
	if (deb_store_open(data, &archive, &l->store, err) < 0)
		return -1;
	l->store_open = true;
	if (deb_layer_get(&l->store, NULL, NULL, refresh, &l->base, err) < 0)
		return -1;
	if (node == NULL) {
		/* a Python image: Debian's python3 in a layer of its own over the
		 * base, the same for every Python image (docs/2026-12-02-pypi.md) */
		struct strv python = STRV_INIT;
		strv_push(&python, "python3");
		int r = deb_layer_get(&l->store, &python, &l->base, refresh, &l->python, err);
		strv_free(&python);
		if (r < 0)
			return -1;
	}
	if (packages->n > 0 &&
	    deb_layer_get(&l->store, packages, &l->base, refresh, &l->set, err) < 0)
		return -1;
	return 0;
}

static size_t push_lower(struct pack_lower *out, size_t n, const struct deb_layer *d)
{
	out[n] = (struct pack_lower){.blob = d->blob, .info = &d->info};
	return n + 1;
}

size_t add_layers_lower(const struct add_layers *l, bool step, struct pack_lower out[5])
{
	size_t n = push_lower(out, 0, &l->base);
	if (l->node_blob != NULL)
		out[n++] = (struct pack_lower){.blob = l->node_blob, .info = &l->node_info};
	if (l->python.blob != NULL)
		n = push_lower(out, n, &l->python);
	/* the step gets the set too: a build that needs a library's headers
	 * finds them where --with names them (libpq-dev), and the library
	 * itself is then in the server's image */
	if (l->set.blob != NULL)
		n = push_lower(out, n, &l->set);
	if (step && l->tools.blob != NULL)
		n = push_lower(out, n, &l->tools);
	if (step && l->native.n > 0)
		out[n++] = (struct pack_lower){.adds = (const char *const *)l->native.v,
		                               .n_adds = l->native.n};
	return n;
}

void add_layers_labels(const struct add_layers *l, struct strv *labels)
{
	if (l->node_path != NULL)
		strv_pushf(labels, "io.mcpgate.node=%s %s", l->node_path, l->node_version);
	if (l->python.blob != NULL)
		strv_pushf(labels, "io.mcpgate.debian.python=sha256:%s", l->python.lock_hex);
	strv_pushf(labels, "io.mcpgate.debian.base=%s %s sha256:%s", l->store.suite, l->store.arch,
	           l->base.lock_hex);
	if (l->set.blob == NULL)
		return;
	struct mg_buf b = MG_BUF_INIT(1 << 16);
	for (size_t i = 0; i < l->set.lock.set.n; i++)
		mg_buf_printf(&b, NULL, "%s%s", i > 0 ? " " : "", l->set.lock.set.v[i]);
	strv_pushf(labels, "io.mcpgate.debian.packages=%s", mg_buf_str(&b));
	strv_pushf(labels, "io.mcpgate.debian.lock=sha256:%s", l->set.lock_hex);
	mg_buf_free(&b);
}

int add_layers_keep_locks(const struct add_layers *l, const char *archive, struct mg_err **err)
{
	/* DATA/images/sha256-HEX.tar -> sha256-HEX.debian.lock: one lock a line */
	cleanup_free char *path = xstrdup(archive);
	size_t n = strlen(path);
	if (n > 4 && strcmp(path + n - 4, ".tar") == 0)
		path[n - 4] = '\0';
	cleanup_free char *dest = xasprintf("%s.debian.lock", path);
	struct mg_buf b = MG_BUF_INIT(16u << 20);
	const struct deb_layer *layers[] = {&l->base, &l->python, &l->set};
	int r = 0;
	for (size_t i = 0; r == 0 && i < 3; i++) {
		if (layers[i]->lock_path == NULL)
			continue;
		cleanup_free char *text = NULL;
		size_t len = 0;
		r = mg_read_file(layers[i]->lock_path, 8u << 20, &text, &len, err);
		if (r == 0)
			r = mg_buf_append(&b, text, len, err);
	}
	if (r == 0)
		r = mg_write_file_atomic(dest, b.data, b.len, 0644, err);
	mg_buf_free(&b);
	return r;
}

/* ---- native addons ------------------------------------------------------ */

/* scripts of a package.json that build native code at install */
static bool builds_native(const struct json_value *pkg, bool has_gyp)
{
	const struct json_value *gypfile = json_get(pkg, "gypfile");
	if (has_gyp && !(gypfile != NULL && gypfile->kind == JSON_BOOL && !gypfile->u.boolean))
		return true;
	if (gypfile != NULL && gypfile->kind == JSON_BOOL && gypfile->u.boolean)
		return true;
	const struct json_value *scripts = json_get(pkg, "scripts");
	static const char *const events[] = {"preinstall", "install", "postinstall"};
	static const char *const tools[] = {"node-gyp", "prebuild-install", "node-pre-gyp",
	                                    "cmake-js"};
	for (size_t e = 0; scripts != NULL && e < 3; e++) {
		const char *s = json_get_string(scripts, events[e]);
		for (size_t t = 0; s != NULL && t < sizeof(tools) / sizeof(tools[0]); t++)
			if (strstr(s, tools[t]) != NULL)
				return true;
	}
	return false;
}

void add_native_packages(const char *work, struct strv *out)
{
	struct json_value *v = NULL;
	const struct json_value *pkgs = add_lock_packages(work, &v);
	for (size_t i = 0; pkgs != NULL && pkgs->kind == JSON_OBJECT && i < pkgs->u.obj.len; i++) {
		const char *key = pkgs->u.obj.items[i].key;
		if (strncmp(key, "node_modules/", 13) != 0 || strstr(key, "..") != NULL)
			continue;
		cleanup_free char *pj = xasprintf("%s/%s/package.json", work, key);
		cleanup_free char *gyp = xasprintf("%s/%s/binding.gyp", work, key);
		cleanup_free char *ptext = NULL;
		size_t plen = 0;
		struct json_value *pv = NULL;
		struct stat st;
		if (mg_read_file(pj, 4u << 20, &ptext, &plen, NULL) < 0 ||
		    json_parse(ptext, plen, NULL, &pv, NULL) < 0)
			continue;
		bool has_gyp = lstat(gyp, &st) == 0 && S_ISREG(st.st_mode);
		if (builds_native(pv, has_gyp))
			strv_push(out, key);
		json_free(pv);
	}
	json_free(v);
}

/* node's headers for the node that goes into the image: PREFIX/include/node
 * beside PREFIX/bin/node, of the very version */
static int node_headers(const char *node, const char *version, char **dir, struct mg_err **err)
{
	cleanup_free char *copy = xstrdup(node);
	cleanup_free char *bin = xstrdup(dirname(copy));
	cleanup_free char *prefix = xstrdup(dirname(bin));
	*dir = xasprintf("%s/include/node", strcmp(prefix, "/") == 0 ? "" : prefix);
	cleanup_free char *vh = xasprintf("%s/node_version.h", *dir);
	cleanup_free char *text = NULL;
	size_t len = 0;
	if (mg_read_file(vh, 1 << 20, &text, &len, NULL) < 0)
		return mg_err_set(err,
		                  "no headers for %s at %s (node_version.h): a native addon is "
		                  "built against the headers of the node that runs it",
		                  node, *dir);
	const char *names[] = {"NODE_MAJOR_VERSION", "NODE_MINOR_VERSION", "NODE_PATCH_VERSION"};
	struct mg_buf b = MG_BUF_INIT(64);
	mg_buf_putc(&b, 'v', NULL);
	for (size_t i = 0; i < 3; i++) {
		cleanup_free char *def = xasprintf("#define %s ", names[i]);
		const char *p = strstr(text, def);
		if (p == NULL)
			break;
		p += strlen(def);
		mg_buf_printf(&b, NULL, "%s%.*s", i > 0 ? "." : "", (int)strspn(p, "0123456789"),
		              p);
	}
	int r = strcmp(mg_buf_str(&b), version) == 0
	            ? 0
	            : mg_err_set(err, "the headers at %s are node %s's, not %s's (%s)", *dir,
	                         mg_buf_str(&b), node, version);
	mg_buf_free(&b);
	return r;
}

/* npm's own modules, NPM_ROOT/node_modules beside npm-cli.js, when its
 * node-gyp is there (node-gyp finds its own dependencies beside it, where
 * npm put them) */
static char *npm_modules(const char *npm)
{
	cleanup_free char *real = realpath(npm, NULL);
	if (real == NULL)
		return NULL;
	cleanup_free char *bin = xstrdup(dirname(real));
	cleanup_free char *root = xstrdup(dirname(bin));
	char *modules = xasprintf("%s/node_modules", root);
	cleanup_free char *js = xasprintf("%s/node-gyp/bin/node-gyp.js", modules);
	if (access(js, R_OK) != 0) {
		free(modules);
		return NULL;
	}
	return modules;
}

/* what a Python package's C extension is built with: gcc, libc's and
 * python3's headers (python3-dev brings them with python3's own) */
static const char *const python_build_tools[] = {"gcc", "libc6-dev", "python3-dev"};

static int tools_layer(struct add_layers *l, const char *const *names, size_t n, bool refresh,
                       struct mg_err **err)
{
	struct strv tools = STRV_INIT;
	for (size_t i = 0; i < n; i++)
		strv_push(&tools, names[i]);
	int r = deb_layer_get(&l->store, &tools, &l->base, refresh, &l->tools, err);
	strv_free(&tools);
	return r;
}

int add_layers_python_tools(struct add_layers *l, bool refresh, struct mg_err **err)
{
	return tools_layer(l, python_build_tools,
	                   sizeof(python_build_tools) / sizeof(python_build_tools[0]), refresh,
	                   err);
}

int add_layers_native(struct add_layers *l, const char *data, const char *npm, bool refresh,
                      struct mg_err **err)
{
	cleanup_free char *headers = NULL;
	if (node_headers(l->node_path, l->node_version, &headers, err) < 0)
		return mg_err_wrap(err, "the native build");
	cleanup_free char *gyp = npm_modules(npm);
	if (gyp == NULL)
		return mg_err_set(err,
		                  "the native build needs npm's own node-gyp, which is not "
		                  "beside %s",
		                  npm);
	if (tools_layer(l, build_tools, sizeof(build_tools) / sizeof(build_tools[0]), refresh,
	                err) < 0)
		return -1;
	cleanup_free char *images = xasprintf("%s/images", data);
	cleanup_free char *wrapper = xasprintf("%s/node-gyp", images);
	if (mg_mkdir_p(images, 0700, err) < 0)
		return -1;
	if (mg_write_file_atomic(wrapper, NODE_GYP_WRAPPER, strlen(NODE_GYP_WRAPPER), 0755, err) <
	    0)
		return -1;
	strv_pushf(&l->native, "%s:/usr/include/node", headers);
	strv_pushf(&l->native, "%s:/opt/npm/node_modules", gyp);
	strv_pushf(&l->native, "%s:/usr/local/bin/node-gyp", wrapper);
	return 0;
}

int add_pack_over(struct pack_spec *spec, const struct add_layers *l, bool step,
                  struct strv *labels, const char *images, const char *repo,
                  struct pack_result *res, char **image, char **archive, struct mg_err **err)
{
	struct pack_lower lower[5];
	add_layers_labels(l, labels);
	spec->lower = lower;
	spec->n_lower = add_layers_lower(l, step, lower);
	spec->labels = (const char *const *)labels->v;
	spec->n_labels = labels->n;
	int r = add_pack_kept(spec, images, repo, res, image, archive, err);
	spec->lower = NULL;
	spec->n_lower = 0;
	if (r == 0 && !step)
		r = add_layers_keep_locks(l, *archive, err);
	if (r == 0 && !step)
		progress_note("packed %s: %zu layers: Debian base %.19s..., %s%s%spackage layer "
		              "%.19s...",
		              *archive, res->n_layers, res->base_digest,
		              l->node_blob != NULL ? "node, " : "",
		              l->python.blob != NULL ? "python3, " : "",
		              l->set.blob != NULL ? "Debian packages, " : "", res->layer_digest);
	return r;
}

void add_layers_free(struct add_layers *l)
{
	deb_layer_free(&l->base);
	deb_layer_free(&l->python);
	deb_layer_free(&l->set);
	deb_layer_free(&l->tools);
	if (l->store_open)
		deb_store_free(&l->store);
	strv_free(&l->node);
	strv_free(&l->native);
	free(l->node_version);
	free(l->node_path);
	free(l->node_blob);
	memset(l, 0, sizeof(*l));
}
