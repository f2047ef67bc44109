/* mcpgate update NAME [VERSION] and mcpgate outdated: a server made by add
 * made again from a newer release (docs/2026-12-02-daily-use.md).
 *
 * Where an image came from is in its labels (under the digest pin):
 * org.opencontainers.image.source=npm:PACKAGE@VERSION (pypi:NAME==VERSION).
 * Each source has its own step: what the newest release is, and how its
 * image is made, with add's own pipeline. npm's is here, PyPI's in
 * update_pypi.c; each makes the new release in DATA/TREE/NAME.update, which
 * becomes DATA/TREE/NAME only when the entry switches. update then starts the
 * new image isolated, as review does, shows what changed against the
 * approved manifest, keeps every tool setting whose tool is unchanged and
 * turns off the others, and switches the entry (image and pin, the checked
 * edit) only when the person says so. Until then the old image stays and
 * the new one goes again when the answer is no. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/mcpgate/add.h"
#include "cmd/mcpgate/commands.h"
#include "cmd/mcpgate/opts.h"
#include "cmd/mcpgate/progress.h"
#include "cmd/mcpgate/review.h"
#include "cmd/mcpgate/setup.h"
#include "cmd/mcpgate/store.h"
#include "cmd/mcpgate/update.h"
#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/tree.h"
#include "internal/base/utf8.h"
#include "internal/base/xalloc.h"
#include "internal/gateway/launch.h"
#include "internal/json/json.h"
#include "internal/mcp/manifest.h"

#define SOURCE_LABEL "org.opencontainers.image.source"

static void made_from_free(struct made_from *m)
{
	free(m->scheme);
	free(m->package);
	free(m->version);
	ctr_image_config_free(&m->config);
	memset(m, 0, sizeof(*m));
}

/* ---- the sources ------------------------------------------------------------ */

/* An entry added from a local tarball is not updated from a registry */
static int npm_check(struct update_ctx *c, const struct made_from *m, struct mg_err **err)
{
	const char *name = c->s->name;
	cleanup_free char *pkg_json = xasprintf("%s/npm/%s/package.json", c->data, name);
	cleanup_free char *text = NULL;
	size_t len = 0;
	struct json_value *v = NULL;
	bool tarball = false;
	if (mg_read_file(pkg_json, 1 << 20, &text, &len, NULL) == 0 &&
	    json_parse(text, len, NULL, &v, NULL) == 0) {
		const char *spec = json_get_string(json_get(v, "dependencies"), m->package);
		tarball = spec != NULL && strncmp(spec, "file:", 5) == 0;
		json_free(v);
	}
	if (tarball)
		return mg_err_set(err,
		                  "server %s was added from a local tarball: add the new one "
		                  "(mcpgate remove %s, then mcpgate add npm:./NEW.tgz)",
		                  name, name);
	return 0;
}

static char *npm_resolving(const char *package, const char *want)
{
	return xasprintf("npm view %s@%s", package, want);
}

static int npm_resolve(struct update_ctx *c, const char *package, const char *want, char **version,
                       void **resolved, struct mg_err **err)
{
	if (c->npm == NULL && add_find_tools(c->node_opt, &c->npm, &c->node, err) < 0)
		return -1;
	struct npm_pkg *p = xcalloc(1, sizeof(*p));
	if (add_npm_resolve(c->npm, package, want, p, err) < 0) {
		add_npm_pkg_free(p);
		free(p);
		return -1;
	}
	*version = xstrdup(p->version);
	*resolved = p;
	return 0;
}

struct add_build update_build_of(struct update_ctx *c, const struct update_source *src,
                                 struct strv *packages)
{
	/* the same Debian packages as the image it replaces */
	for (size_t i = 0; i < c->s->npackages; i++)
		strv_push(packages, c->s->packages[i]);
	return (struct add_build){
	    .cmd = "update",
	    .cfg = c->cfg,
	    .d = c->d,
	    .data = c->data,
	    .name = c->s->name,
	    .work = c->work,
	    .accept = &c->accept,
	    .progress = c->progress,
	    .steps = src->steps,
	    .packages = packages,
	};
}

static const struct update_source update_npm;

static int npm_build(struct update_ctx *c, void *resolved, char **image, char **archive,
                     struct mg_err **err)
{
	struct strv packages = STRV_INIT;
	struct add_build b = update_build_of(c, &update_npm, &packages);
	b.npm = c->npm;
	b.node = c->node;
	b.scripts = c->scripts;
	int r = add_npm_build(&b, resolved, image, archive, err);
	strv_free(&packages);
	return r;
}

static void npm_free(void *resolved)
{
	add_npm_pkg_free(resolved);
	free(resolved);
}

static char *npm_note(struct update_ctx *c, void *resolved)
{
	(void)c;
	const struct npm_pkg *p = resolved;
	return xasprintf("; npm integrity %s", p->integrity);
}

static const struct update_source update_npm = {
    .scheme = "npm",
    .tree = "npm",
    .tree_what = "npm tree of the update",
    .sep = "@",
    .steps = 6,
    .check = npm_check,
    .resolving = npm_resolving,
    .resolve = npm_resolve,
    .build = npm_build,
    .resolved_free = npm_free,
    .note = npm_note,
};

static const struct update_source *const sources[] = {&update_npm, &update_pypi};

/* m's source, and what it says of the entry beyond the label (c->s's) */
static const struct update_source *source_of(struct update_ctx *c, const struct made_from *m,
                                             struct mg_err **err)
{
	for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]); i++)
		if (strcmp(sources[i]->scheme, m->scheme) == 0)
			return sources[i]->check(c, m, err) < 0 ? NULL : sources[i];
	mg_err_set(err, "server %s was made from %s:%s, which update does not know", c->s->name,
	           m->scheme, m->package);
	return NULL;
}

/* ---- where an image came from ------------------------------------------------- */

/* SCHEME:PACKAGE@VERSION, or pypi:NAME==VERSION as add pypi: writes it */
static bool parse_source(const char *text, struct made_from *out)
{
	const char *colon = strchr(text, ':');
	if (colon == NULL || colon == text)
		return false;
	const char *spec = colon + 1;
	bool pypi = (size_t)(colon - text) == 4 && strncmp(text, "pypi", 4) == 0;
	const char *sep = pypi ? strstr(spec, "==") : strrchr(spec, '@');
	size_t seplen = pypi ? 2 : 1;
	if (sep == NULL || sep == spec || sep[seplen] == '\0')
		return false;
	out->scheme = xstrndup(text, (size_t)(colon - text));
	out->package = xstrndup(spec, (size_t)(sep - spec));
	out->version = xstrdup(sep + seplen);
	return true;
}

/* The image's labels say (under its pin); out->config is the image's */
static int image_made_from(const struct ctr_driver *d, const struct cfg_server *s,
                           struct made_from *out, struct mg_err **err)
{
	memset(out, 0, sizeof(*out));
	if (d->ops->image_config(d, s->image, true, &out->config, err) < 0)
		return mg_err_wrap(err, "the labels of server %s's image (mcpgate pull %s first?)",
		                   s->name, s->name);
	const struct strv *labels = &out->config.labels;
	bool found = false;
	for (size_t i = 0; !found && i + 1 < labels->n; i += 2)
		if (strcmp(labels->v[i], SOURCE_LABEL) == 0)
			found = parse_source(labels->v[i + 1], out);
	if (!found) {
		made_from_free(out);
		return mg_err_set(
		    err,
		    "server %s's image does not say where it came from (no %s label): "
		    "it was not made by mcpgate add; pin a newer image by hand, then "
		    "review and approve it",
		    s->name, SOURCE_LABEL);
	}
	return 0;
}

/* ---- the new image's tools against the approved ones -------------------------- */

/* Each tool setting that holds no more (its tool changed or is gone) turned
 * off; the new and changed tools listed for the person (into fresh) */
static size_t settings_after(const struct cfg_server *s, const struct json_value *approved,
                             const struct json_value *tools, struct cfg_tool_change *changes,
                             size_t cap, struct json_value *fresh)
{
	size_t n = 0;
	for (size_t i = 0; i < s->ntools && n < cap; i++) {
		const struct cfg_tool *t = &s->tools[i];
		bool same = approved != NULL && manifest_tool_same(approved, tools, t->name);
		cleanup_free char *name = mg_shown(t->name, strlen(t->name));
		if (same) {
			printf("  kept: %s (%s, %s)\n", name, t->on ? "on" : "off",
			       cfg_effect_name(t->effect));
		} else if (t->on) {
			bool offered = manifest_tool_same(tools, tools, t->name);
			printf("  turned off: %s (%s)\n", name,
			       approved == NULL ? "nothing kept says it is the one approved"
			       : offered        ? "it changed since it was approved"
			                        : "the new image does not offer it");
			changes[n++] = (struct cfg_tool_change){t->name, 0, -1, -1};
		}
	}
	for (size_t i = 0; i < tools->u.arr.len; i++) {
		const char *name = json_get_string(tools->u.arr.items[i], "name");
		if (approved == NULL || !manifest_tool_same(approved, tools, name))
			json_array_push(fresh, json_copy(tools->u.arr.items[i]));
	}
	return n;
}

static bool yes_no(const char *question)
{
	printf("%s [y/N] ", question);
	fflush(stdout);
	char buf[32];
	if (fgets(buf, sizeof(buf), stdin) == NULL)
		return false;
	buf[strcspn(buf, "\r\n")] = '\0';
	return strcmp(buf, "y") == 0 || strcmp(buf, "Y") == 0 || strcmp(buf, "yes") == 0;
}

/* The image update made goes again (unless an entry runs it), its archive
 * and its install folder (what: which) with it */
static void drop_new(const struct cfg *cfg, const struct ctr_driver *d, const char *data,
                     const char *image, const char *work, const char *what)
{
	struct store_plan p = {0};
	if (image != NULL && store_image_user(cfg, image, NULL) == NULL) {
		long with = store_add_image(&p, "new image", image, 0, false);
		cleanup_free char *archive = store_archive_path(data, image, ".tar");
		cleanup_free char *manifest = store_archive_path(data, image, ".manifest");
		store_add_path_with(&p, "new image's archive", archive, with);
		store_add_path_with(&p, "new image's manifest", manifest, with);
	}
	store_add_path(&p, what, work);
	store_carry_out(&p, d, 0);
	store_plan_free(&p);
}

/* DATA/TREE/NAME becomes what the update installed in NAME.update */
static int take_tree(const char *data, const char *top, const char *name, const char *work,
                     struct mg_err **err)
{
	cleanup_free char *tree = xasprintf("%s/%s/%s", data, top, name);
	cleanup_free char *old = xasprintf("%s/%s/%s.old", data, top, name);
	if (mg_tree_remove(old, err) < 0)
		return -1;
	if (rename(tree, old) < 0 && errno != ENOENT)
		return mg_err_sys(err, errno, "moving %s aside", tree);
	if (rename(work, tree) < 0)
		return mg_err_sys(err, errno, "moving %s to %s", work, tree);
	return mg_tree_remove(old, err);
}

/* The old image and its archive, unless another entry runs it */
static void drop_old(const struct cfg *cfg, const struct ctr_driver *d, const char *data,
                     const struct cfg_server *s)
{
	const char *other = store_image_user(cfg, s->image, s->name);
	if (other != NULL) {
		printf("the old image stays: server %s runs it too\n", other);
		return;
	}
	struct store_plan p = {0};
	long with = store_add_image(&p, "old image", s->image, 0, false);
	cleanup_free char *archive = store_archive_path(data, s->image, ".tar");
	cleanup_free char *manifest = store_archive_path(data, s->image, ".manifest");
	if (archive != NULL) {
		store_add_path_with(&p, "old image's archive", archive, with);
		store_add_path_with(&p, "old image's manifest", manifest, with);
	}
	/* a serve that runs the server starts it again with the new entry,
	 * which lets the old image go */
	store_carry_out(&p, d, ((int64_t)cfg->mcp.stop_timeout + 10) * 1000);
	if (p.removed > 0)
		printf("the old image and its archive are removed\n");
	store_plan_free(&p);
}

/* mcp.toml as it would be with image: loaded, for the isolated start */
static int with_image(const struct cfg *cfg, const char *name, const char *image, struct cfg **out,
                      struct mg_err **err)
{
	cleanup_free char *text = NULL, *after = NULL, *config = NULL;
	size_t len = 0, after_len = 0, config_len = 0;
	struct cfg_server_change ch = CFG_SERVER_CHANGE_INIT;
	ch.image = image;
	if (mg_read_file(cfg->mcp_path, CFG_FILE_MAX, &text, &len, err) < 0 ||
	    cfg_change_server_text(text, len, cfg->mcp_path, name, &ch, &after, &after_len, err) <
	        0)
		return -1;
	if (cfg->config_path != NULL &&
	    mg_read_file(cfg->config_path, CFG_FILE_MAX, &config, &config_len, err) < 0)
		return -1;
	return cfg_parse(after, after_len, cfg->mcp_path, config, config_len, cfg->config_path, out,
	                 err);
}

int cmd_update(int argc, char **argv, struct mg_err **err)
{
	const struct command *self = command_find("update");
	const char *dir = NULL, *ws = NULL, *name = NULL, *want = NULL;
	bool yes = false;
	struct update_ctx c = {.accept = STRV_INIT};
	for (int i = 1; i < argc; i++) {
		int r = opt_value(argc, argv, &i, "config", &dir);
		if (r == 0)
			r = opt_value(argc, argv, &i, "workspace", &ws);
		if (r == 0)
			r = opt_value(argc, argv, &i, "node", &c.node_opt);
		if (r < 0)
			return EXIT_USAGE;
		if (r > 0 || opt_flag(argv, i, "yes", &yes) ||
		    opt_flag(argv, i, "scripts", &c.scripts))
			continue;
		if (argv[i][0] == '-' || (name != NULL && want != NULL))
			return usage_error(self, "unexpected argument \"%s\"", argv[i]);
		if (name == NULL)
			name = argv[i];
		else
			want = argv[i];
	}
	if (name == NULL)
		return usage_error(self, "which server? (see: mcpgate outdated)");
	struct cfg *cfg = NULL, *next = NULL;
	struct made_from from = {0};
	struct gw_manifest_fetch f = {0};
	struct json_value *approved_rec = NULL, *fresh = json_new_array();
	void *resolved = NULL;
	const struct update_source *src = NULL;
	cleanup_free char *data = NULL, *version = NULL, *work = NULL;
	cleanup_free char *image = NULL, *archive = NULL, *rpath = NULL, *mpath = NULL;
	cleanup_free char *note = NULL, *origin = NULL;
	char workspace[PATH_MAX];
	char hash[MANIFEST_HASH_LEN];
	__attribute__((cleanup(strv_free))) struct strv names = STRV_INIT;
	int status = EXIT_FAIL;
	if (realpath(ws != NULL ? ws : ".", workspace) == NULL) {
		mg_err_sys(err, errno, "workspace %s", ws != NULL ? ws : ".");
		goto out;
	}
	if (setup_config(dir, &cfg, err) < 0 || (c.s = setup_server(cfg, name, err)) == NULL ||
	    cfg_default_data_dir(&data, err) < 0)
		goto out;
	if (c.s->transport != CFG_TRANSPORT_CONTAINER) {
		mg_err_set(err, "server %s is remote: it updates itself", name);
		goto out;
	}
	c.cfg = cfg;
	c.data = data;
	for (unsigned b = 0; b < CFG_PROP_COUNT; b++)
		if (c.s->accept_unenforced & (1u << b))
			strv_push(&c.accept, cfg_property_name(1u << b));
	if (setup_driver(cfg, &c.d, err) < 0 || image_made_from(c.d, c.s, &from, err) < 0 ||
	    (src = source_of(&c, &from, err)) == NULL)
		goto out;
	/* the new release is made beside the entry's tree, which stays as it
	 * is until the entry switches */
	work = xasprintf("%s/%s/%s.update", data, src->tree, name);
	c.work = work;
	if (mg_tree_remove(work, err) < 0)
		goto out;
	c.progress = progress_new("update", src->steps);
	{
		cleanup_free char *what = src->resolving(from.package, want ? want : "latest");
		progress_begin(c.progress, what, NULL, NULL);
		int r = src->resolve(&c, from.package, want != NULL ? want : "latest", &version,
		                     &resolved, err);
		progress_end(c.progress, r == 0);
		if (r < 0)
			goto fail;
	}
	if (strcmp(version, from.version) == 0) {
		printf("server %s is up to date: %s:%s%s%s%s\n", name, from.scheme, from.package,
		       src->sep, version,
		       want == NULL ? " is the latest (mcpgate update NAME VERSION takes another)"
		                    : "");
		status = EXIT_OK;
		goto fail;
	}
	if (src->build(&c, resolved, &image, &archive, err) < 0)
		goto fail;
	if (strcmp(image, c.s->image) == 0) {
		printf("server %s: %s:%s%s%s makes the image it runs already\n", name, from.scheme,
		       from.package, src->sep, version);
		status = EXIT_OK;
		goto fail;
	}
	if (with_image(cfg, name, image, &next, err) < 0)
		goto fail;
	progress_begin(c.progress, "the new image, started with its isolation", NULL, NULL);
	int fetched = gw_fetch_manifest(next, c.d, cfg_find_server(next, name), workspace, &f, err);
	progress_end(c.progress, fetched == 0);
	if (fetched < 0 || manifest_hash(f.tools, hash, err) < 0)
		goto fail;

	printf("update %s: %s:%s %s -> %s\n", name, from.scheme, from.package, from.version,
	       version);
	printf("image: %s\n   -> %s\n", c.s->image, image);
	{
		const char *iname = f.info.name ? f.info.name : "(unnamed)";
		cleanup_free char *a = mg_shown(iname, strlen(iname));
		const char *iver = f.info.version ? f.info.version : "";
		cleanup_free char *b = mg_shown(iver, strlen(iver));
		printf("says it is: %s %s\n", a, b);
	}
	printf("manifest: %s (%s)\n", hash,
	       c.s->manifest == NULL              ? "none is approved yet"
	       : strcmp(c.s->manifest, hash) == 0 ? "the approved one"
	                                          : "differs from the approved one");
	const struct json_value *approved = NULL;
	if (c.s->manifest != NULL) {
		cleanup_free char *path = manifest_record_path(data, name, c.s->manifest);
		struct mg_err *lerr = NULL;
		approved_rec = manifest_record_load(path, &lerr);
		approved = approved_rec != NULL ? json_get(approved_rec, "tools") : NULL;
		if (approved != NULL)
			review_show_diff(approved, f.tools);
		else
			printf("the approved manifest's content is not kept here (%s): every tool "
			       "counts as changed\n",
			       mg_err_msg(lerr));
		mg_err_free(lerr);
	}
	struct cfg_tool_change changes[256];
	printf("tool settings:\n");
	size_t n = settings_after(c.s, approved, f.tools, changes, 128, fresh);
	if (fresh->u.arr.len > 0)
		printf("  new or changed, off until turned on: %zu tool%s\n", fresh->u.arr.len,
		       fresh->u.arr.len == 1 ? "" : "s");
	bool terminal = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
	if (!yes && !terminal) {
		mg_err_set(err,
		           "not switched: %s runs its image as it was; give --yes to switch to "
		           "%s%s%s (the new image is removed again)",
		           name, from.package, src->sep, version);
		goto fail;
	}
	if (!yes) {
		cleanup_free char *q =
		    xasprintf("switch %s to %s%s%s?", name, from.package, src->sep, version);
		if (!yes_no(q)) {
			printf("not switched: %s runs its image as it was\n", name);
			status = EXIT_OK;
			goto fail;
		}
		if (c.s->manifest != NULL && fresh->u.arr.len > 0) {
			ssize_t got = review_walk_tools(c.s, fresh, changes + n, 128, &names);
			if (got < 0) {
				printf("stopped: not switched\n");
				status = EXIT_OK;
				goto fail;
			}
			n += (size_t)got;
		}
	}
	char day[16];
	add_today(day);
	note = src->note(&c, resolved);
	/* the note above the entry says what it runs now (a stranger's text:
	 * the encoder keeps it inside its comment line) */
	origin = xasprintf("updated by `mcpgate update %s` to %s:%s%s%s on %s%s.", name,
	                   from.scheme, from.package, src->sep, version, day, note);
	struct cfg_server_change ch = CFG_SERVER_CHANGE_INIT;
	ch.origin = origin;
	ch.image = image;
	ch.manifest = c.s->manifest != NULL ? hash : NULL;
	ch.tools = changes;
	ch.ntools = c.s->manifest != NULL ? n : 0;
	if (cfg_change_server(cfg->mcp_path, name, &ch, err) < 0)
		goto fail;
	rpath = review_path(data, name);
	if (manifest_record_save(rpath, name, image, hash, f.tools, err) < 0)
		goto out;
	mpath = c.s->manifest != NULL ? manifest_record_path(data, name, hash) : NULL;
	if (mpath != NULL && manifest_record_save(mpath, name, image, hash, f.tools, err) < 0)
		goto out;
	if (take_tree(data, src->tree, name, work, err) < 0)
		goto out;
	printf("updated %s to %s:%s%s%s in %s%s\n", name, from.scheme, from.package, src->sep,
	       version, cfg->mcp_path,
	       c.s->manifest == NULL ? "; next: mcpgate review, then approve"
	                             : "; a running serve starts it again with it");
	drop_old(cfg, c.d, data, c.s);
	status = EXIT_OK;
	goto out;
fail:
	drop_new(cfg, c.d, data, image, work, src->tree_what);
out:
	if (resolved != NULL)
		src->resolved_free(resolved);
	json_free(fresh);
	json_free(approved_rec);
	gw_manifest_fetch_free(&f);
	made_from_free(&from);
	progress_free(c.progress);
	strv_free(&c.accept);
	free(c.npm);
	free(c.node);
	free(c.python);
	free(c.module);
	ctr_driver_free(c.d);
	cfg_free(next);
	cfg_free(cfg);
	return status;
}

/* ---- outdated ----------------------------------------------------------------- */

int cmd_outdated(int argc, char **argv, struct mg_err **err)
{
	const struct command *self = command_find("outdated");
	const char *dir = NULL;
	bool as_json = false;
	for (int i = 1; i < argc; i++) {
		int r = opt_value(argc, argv, &i, "config", &dir);
		if (r < 0)
			return EXIT_USAGE;
		if (r > 0 || opt_flag(argv, i, "json", &as_json))
			continue;
		return usage_error(self, "unexpected argument \"%s\"", argv[i]);
	}
	struct cfg *cfg = NULL;
	struct update_ctx c = {.accept = STRV_INIT};
	cleanup_free char *data = NULL;
	struct json_value *all = json_new_array();
	int status = EXIT_FAIL;
	if (setup_config(dir, &cfg, err) < 0 || cfg_default_data_dir(&data, err) < 0 ||
	    setup_driver(cfg, &c.d, err) < 0)
		goto out;
	c.cfg = cfg;
	c.data = data;
	for (size_t i = 0; i < cfg->nservers; i++) {
		const struct cfg_server *s = &cfg->servers[i];
		if (s->transport != CFG_TRANSPORT_CONTAINER)
			continue;
		struct made_from from = {0};
		struct mg_err *e = NULL;
		const struct update_source *src = NULL;
		char *latest = NULL;
		void *resolved = NULL;
		c.s = s;
		struct json_value *o = json_new_object();
		json_object_set(o, "name", json_new_string(s->name));
		if (image_made_from(c.d, s, &from, &e) < 0 ||
		    (src = source_of(&c, &from, &e)) == NULL ||
		    src->resolve(&c, from.package, "latest", &latest, &resolved, &e) < 0) {
			json_object_set(o, "error", json_new_string(mg_err_msg(e)));
		} else {
			json_object_set(o, "source", json_new_string(from.scheme));
			json_object_set(o, "package", json_new_string(from.package));
			json_object_set(o, "version", json_new_string(from.version));
			json_object_set(o, "latest", json_new_string(latest));
			json_object_set(o, "outdated",
			                json_new_bool(strcmp(latest, from.version) != 0));
		}
		if (resolved != NULL)
			src->resolved_free(resolved);
		free(latest);
		mg_err_free(e);
		made_from_free(&from);
		json_array_push(all, o);
	}
	if (as_json) {
		struct mg_buf out = MG_BUF_INIT(16u << 20);
		if (json_generate(all, &out, err) < 0)
			goto out;
		printf("%s\n", mg_buf_str(&out));
		mg_buf_free(&out);
	} else {
		for (size_t i = 0; i < all->u.arr.len; i++) {
			const struct json_value *o = all->u.arr.items[i];
			const char *name = json_get_string(o, "name");
			const char *why = json_get_string(o, "error");
			if (why != NULL) {
				cleanup_free char *shown = mg_shown(why, strlen(why));
				printf("%-16s cannot tell: %s\n", name, shown);
				continue;
			}
			const struct json_value *old = json_get(o, "outdated");
			cleanup_free char *pkg = mg_shown(json_get_string(o, "package"),
			                                  strlen(json_get_string(o, "package")));
			printf("%-16s %s:%s %s, latest %s%s%s\n", name,
			       json_get_string(o, "source"), pkg, json_get_string(o, "version"),
			       json_get_string(o, "latest"),
			       old->u.boolean ? ": mcpgate update " : " (up to date)",
			       old->u.boolean ? name : "");
		}
	}
	status = EXIT_OK;
out:
	json_free(all);
	free(c.npm);
	free(c.node);
	free(c.python);
	free(c.module);
	ctr_driver_free(c.d);
	cfg_free(cfg);
	return status;
}
