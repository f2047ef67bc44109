/* update's PyPI source: a server made by `mcpgate add pypi:NAME[==VERSION]`
 * made again from another release (docs/2026-12-02-pypi.md).
 *
 * The image's label says pypi:NAME==VERSION. pip resolves the release as
 * add does (wheels only, for the image's python), into the update's own
 * folder DATA/pypi/NAME.update: the new lock is written there, and
 * add_pypi_build, asked for the version resolved, takes that lock as kept,
 * installs exactly it (hashes required) and makes the image. The entry's
 * folder DATA/pypi/NAME, with its lock, stays as it is until the entry
 * switches (update.c). An entry added from a local wheel has no release on
 * an index to move to: it is refused, with the way to add the new wheel. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/mcpgate/add.h"
#include "cmd/mcpgate/update.h"
#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/tree.h"
#include "internal/base/utf8.h"
#include "internal/base/xalloc.h"

/* A release as pip resolved it: pkg as locked (then as built) */
struct pypi_update {
	char *name; /* as the image's label names it */
	struct pypi_pkg pkg;
};

/* Was DATA/pypi/NAME resolved for a local file: a wheel, or a source
 * distribution built into one? Its request says so (as add_pypi_build
 * writes it), else its lock, which names the wheel by its path. NULL:
 * nothing says so. */
static const char *from_local_file(const char *data, const char *name)
{
	cleanup_free char *request = xasprintf("%s/pypi/%s/request", data, name);
	cleanup_free char *lock = xasprintf("%s/pypi/%s/requirements.lock", data, name);
	cleanup_free char *text = NULL;
	size_t len = 0;
	if (mg_read_file(request, 1 << 16, &text, &len, NULL) == 0)
		return strstr(text, " wheel sha256:") != NULL   ? "a local wheel"
		       : strstr(text, " sdist sha256:") != NULL ? "a source distribution"
		                                                : NULL;
	if (mg_read_file(lock, 16u << 20, &text, &len, NULL) < 0)
		return NULL;
	for (const char *line = text; *line != '\0';) {
		if (line[0] == '/')
			return "a local wheel";
		size_t n = strcspn(line, "\n");
		line += n + (line[n] == '\n');
	}
	return NULL;
}

/* The module add ran with --module: its label (ADD_PYPI_LABEL_MODULE), or,
 * on an image made before add wrote that label, its entrypoint
 * (/usr/bin/python3 -s -m MODULE); NULL when the image runs a console
 * script */
static int module_of(const struct made_from *m, const char *server, char **module,
                     struct mg_err **err)
{
	const struct ctr_image_config *c = &m->config;
	const char *found = NULL;
	for (size_t i = 0; found == NULL && i + 1 < c->labels.n; i += 2)
		if (strcmp(c->labels.v[i], ADD_PYPI_LABEL_MODULE) == 0)
			found = c->labels.v[i + 1];
	if (found == NULL && c->entrypoint.n == 4 &&
	    strcmp(c->entrypoint.v[0], "/usr/bin/python3") == 0 &&
	    strcmp(c->entrypoint.v[1], "-s") == 0 && strcmp(c->entrypoint.v[2], "-m") == 0)
		found = c->entrypoint.v[3];
	*module = NULL;
	if (found == NULL)
		return 0;
	if (!add_pypi_module_ok(found)) {
		cleanup_free char *shown = mg_shown(found, strlen(found));
		return mg_err_set(err,
		                  "server %s's image runs the module \"%s\", which is not a Python "
		                  "module's dotted name: it was not made by mcpgate add",
		                  server, shown);
	}
	*module = xstrdup(found);
	return 0;
}

static int pypi_check(struct update_ctx *c, const struct made_from *m, struct mg_err **err)
{
	const char *name = c->s->name;
	/* the label's text goes to pip as a requirement: a name, nothing more
	 * (no URL, no marker, no option) */
	if (!add_pypi_name_ok(m->package)) {
		cleanup_free char *shown = mg_shown(m->package, strlen(m->package));
		return mg_err_set(err,
		                  "server %s's image names the package \"%s\", which is not a "
		                  "Python package's name: it was not made by mcpgate add",
		                  name, shown);
	}
	const char *local = from_local_file(c->data, name);
	if (local != NULL)
		return mg_err_set(
		    err,
		    "server %s was added from %s (pypi:%s==%s): no index has a "
		    "release of it to update to; add the new one (mcpgate remove %s, "
		    "then mcpgate add pypi:./%s --name %s)",
		    name, local, m->package, m->version, name,
		    strstr(local, "wheel") != NULL ? "NEW.whl" : "NAME-VERSION.tar.gz", name);
	if (c->scripts)
		return mg_err_set(err,
		                  "server %s is a Python package: --scripts is for npm's install "
		                  "scripts; a wheel has none",
		                  name);
	if (c->node_opt != NULL)
		return mg_err_set(err,
		                  "server %s is a Python package: --node is for an npm package's "
		                  "image; a Python image has Debian's python3",
		                  name);
	free(c->module);
	return module_of(m, name, &c->module, err);
}

static char *pypi_resolving(const char *package, const char *want)
{
	bool latest = strcmp(want, "latest") == 0;
	return xasprintf("pip resolves %s%s%s for the image's python, wheels only", package,
	                 latest ? ", the newest" : "==", latest ? "" : want);
}

/* pip's resolution of the release want names (latest: the newest with
 * wheels for the image's python) in c->work; outdated, which has none,
 * resolves in a folder of its own beside it and removes it */
static int pypi_resolve(struct update_ctx *c, const char *package, const char *want, char **version,
                        void **resolved, struct mg_err **err)
{
	struct pypi_req req = {0};
	if (strcmp(want, "latest") == 0) {
		req.name = xstrdup(package);
	} else {
		cleanup_free char *src = xasprintf("pypi:%s==%s", package, want);
		if (strchr(want, '/') != NULL || add_pypi_parse(src, &req, NULL) < 0 ||
		    req.wheel != NULL) {
			add_pypi_req_free(&req);
			return mg_err_set(
			    err,
			    "update %s %s: give the exact version of pypi:%s to update "
			    "to (such as 1.2.0); a new local wheel is added (mcpgate add "
			    "pypi:./NEW.whl)",
			    c->s->name, want, package);
		}
	}
	if (c->python == NULL && add_find_pip(&c->python, err) < 0) {
		add_pypi_req_free(&req);
		return -1;
	}
	cleanup_free char *own = NULL;
	if (c->work == NULL) {
		cleanup_free char *top = xasprintf("%s/pypi", c->data);
		own = xasprintf("%s/%s.outdated.XXXXXX", top, c->s->name);
		if (mg_mkdir_p(top, 0700, err) < 0) {
			add_pypi_req_free(&req);
			return -1;
		}
		if (mkdtemp(own) == NULL) {
			int e = errno;
			add_pypi_req_free(&req);
			return mg_err_sys(err, e, "a folder to resolve in (%s)", own);
		}
	}
	struct pypi_update *u = xcalloc(1, sizeof(*u));
	u->name = xstrdup(package);
	int r = add_pypi_resolve(c->cfg, c->data, c->python, &req, own != NULL ? own : c->work,
	                         &u->pkg, err);
	if (own != NULL) {
		struct mg_err *rm = NULL;
		mg_tree_remove(own, &rm);
		mg_err_free(rm);
	}
	add_pypi_req_free(&req);
	if (r < 0) {
		add_pypi_pkg_free(&u->pkg);
		free(u->name);
		free(u);
		return -1;
	}
	*version = xstrdup(u->pkg.version);
	*resolved = u;
	return 0;
}

static int pypi_build(struct update_ctx *c, void *resolved, char **image, char **archive,
                      struct mg_err **err)
{
	struct pypi_update *u = resolved;
	struct strv packages = STRV_INIT;
	struct add_build b = update_build_of(c, &update_pypi, &packages);
	/* the version resolved, which finds the lock pypi_resolve wrote */
	struct pypi_req req = {.name = u->name, .version = u->pkg.version};
	struct pypi_pkg p = {0};
	int r = add_pypi_build(&b, c->python, &req, c->module, &p, image, archive, err);
	strv_free(&packages);
	if (r == 0 && strcmp(p.version, u->pkg.version) != 0) {
		/* the image stays named: the caller removes it again */
		r = mg_err_set(err, "the image of pypi:%s was made of version %s, not %s", u->name,
		               p.version, u->pkg.version);
	}
	if (r < 0) {
		add_pypi_pkg_free(&p);
		return -1;
	}
	add_pypi_pkg_free(&u->pkg);
	u->pkg = p;
	return 0;
}

static void pypi_free(void *resolved)
{
	struct pypi_update *u = resolved;
	add_pypi_pkg_free(&u->pkg);
	free(u->name);
	free(u);
}

/* as add writes it, with the lock where it is once the entry switched */
static char *pypi_note(struct update_ctx *c, void *resolved)
{
	const struct pypi_update *u = resolved;
	return xasprintf("; wheel sha256 %s, every wheel locked in %s/pypi/%s/requirements.lock",
	                 u->pkg.sha256, c->data, c->s->name);
}

const struct update_source update_pypi = {
    .scheme = "pypi",
    .tree = "pypi",
    .tree_what = "python tree and lock of the update",
    .sep = "==",
    .steps = 7,
    .check = pypi_check,
    .resolving = pypi_resolving,
    .resolve = pypi_resolve,
    .build = pypi_build,
    .resolved_free = pypi_free,
    .note = pypi_note,
};
