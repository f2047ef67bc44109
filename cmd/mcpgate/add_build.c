/* From a resolved npm package to a pinned image in the runtime: what add
 * and update share (add.h), each long step said as it goes (progress.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/mcpgate/add.h"
#include "cmd/mcpgate/progress.h"
#include "cmd/mcpgate/setup.h"
#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/xalloc.h"
#include "internal/container/swarm.h"
#include "internal/proc/proc.h"

int add_find_tools(const char *node_opt, char **npm, char **node, struct mg_err **err)
{
	*npm = proc_find_in_path("npm", getenv("PATH"));
	if (*npm == NULL)
		return mg_err_set(err, "no npm on this machine (PATH): install it, e.g. apt-get "
		                       "install npm; mcp.toml is left as it was");
	*node = node_opt != NULL ? realpath(node_opt, NULL) : NULL;
	if (*node == NULL) {
		cleanup_free char *found =
		    node_opt != NULL ? NULL : proc_find_in_path("node", getenv("PATH"));
		*node = found != NULL ? realpath(found, NULL) : NULL;
	}
	if (*node == NULL)
		return mg_err_set(
		    err, "no node %s: the image is made with this machine's node (--node PATH)",
		    node_opt != NULL ? node_opt : "on PATH");
	return 0;
}

void add_say_unenforced(const char *cmd, const struct ctr_driver *d, const struct strv *accept)
{
	struct ctr_platform p = {0};
	if (d->ops->platform(d, &p, NULL) < 0) {
		ctr_platform_free(&p);
		return;
	}
	unsigned accepted = 0;
	for (size_t i = 0; i < accept->n; i++)
		for (unsigned b = 0; b < CFG_PROP_COUNT; b++)
			if (strcmp(accept->v[i], cfg_property_name(1u << b)) == 0)
				accepted |= 1u << b;
	for (unsigned b = 0; b < CFG_PROP_COUNT; b++) {
		if (!(p.unenforced & (1u << b)) || (accepted & (1u << b)))
			continue;
		fprintf(stderr,
		        "mcpgate %s: warning: %s cannot hold a server's %s limit here (%s): the "
		        "server will not start unless its entry accepts that; give "
		        "--accept-unenforced %s to accept it (docs/unenforced.md)\n",
		        cmd, d->name, cfg_property_name(1u << b),
		        p.why[b] != NULL ? p.why[b] : "the runtime says so",
		        cfg_property_name(1u << b));
	}
	ctr_platform_free(&p);
}

void add_progress_made(const struct add_build *b, const char *archive)
{
	struct stat st;
	if (archive != NULL && stat(archive, &st) == 0)
		progress_made(b->progress, (uint64_t)st.st_size);
}

int add_load_image(const struct add_build *b, char **image, const char *archive,
                   struct mg_err **err)
{
	struct stat st;
	struct progress_read reading = {archive,
	                                stat(archive, &st) == 0 ? (uint64_t)st.st_size : 0};
	cleanup_free char *what = xasprintf("the load into %s", b->d->name);
	progress_begin(b->progress, what, progress_gauge_read, &reading);
	int r = b->d->ops->load(b->d, archive, err);
	progress_end(b->progress, r == 0);
	if (r < 0)
		return -1;
	if (b->d->kind == CTR_SWARM) {
		/* of use only where every node pulls: the entry pins it there */
		char *pinned = NULL;
		progress_one_more(b->progress);
		cleanup_free char *push =
		    xasprintf("the push to the swarm's registry %s",
		              b->d->registry != NULL ? b->d->registry : "(none set)");
		progress_begin_quiet(b->progress, push);
		r = ctr_swarm_publish(b->d, *image, &pinned, err);
		progress_end(b->progress, r == 0);
		if (r < 0)
			return -1;
		free(*image);
		*image = pinned;
	}
	int present = b->d->ops->image_present(b->d, *image, err);
	if (present == 0)
		mg_err_set(err,
		           "%s load took %s, but it holds no image %s: %s names loaded images "
		           "by their digest only when they come from a registry",
		           b->d->name, archive, *image, b->d->name);
	if (present <= 0)
		return -1;
	setup_remember_runtime(b->d);
	return 0;
}

int add_npm_build(const struct add_build *b, const struct npm_pkg *p, char **image, char **archive,
                  struct mg_err **err)
{
	struct strv skipped = STRV_INIT, native = STRV_INIT;
	struct add_layers layers = {0};
	unsigned steps = b->steps;
	cleanup_free char *what = NULL;
	cleanup_free char *modules = xasprintf("%s/node_modules", b->work);
	cleanup_free char *packing = xasprintf("%s/images/npm-%s.tar.new", b->data, b->name);
	struct progress_tree tree = {modules};
	struct progress_file file = {packing, 0};
	struct strv none = STRV_INIT;
	int r = -1;
	*image = *archive = NULL;

	if (mg_mkdir_p(b->work, 0700, err) < 0)
		goto out;
	what = xasprintf("npm install %s@%s, install scripts off", p->name, p->version);
	progress_begin(b->progress, what, progress_gauge_tree, &tree);
	r = add_npm_install(b->npm, b->work, p, err);
	progress_end(b->progress, r == 0);
	if (r < 0)
		goto out;
	/* the layers below the package's: the Debian base, node, its set */
	free(what);
	what = xstrdup("the layers below the package's: Debian base, node, packages");
	progress_begin(b->progress, what, NULL, NULL);
	r = add_layers_prepare(&layers, b->data, b->cfg, b->node,
	                       b->packages != NULL ? b->packages : &none, b->refresh, err);
	progress_end(b->progress, r == 0);
	if (r < 0)
		goto out;
	add_scripts_skipped(b->work, &skipped);
	add_native_packages(b->work, &native);
	for (size_t i = 0; !b->scripts && i < native.n; i++)
		progress_note("warning: %s builds native code at install, which was not done "
		              "(--scripts builds it from source in a contained step with a "
		              "compiler; the server's image gets what it built and no compiler)",
		              native.v[i]);
	for (size_t i = 0; !b->scripts && i < skipped.n; i++)
		if (strv_find(&native, skipped.v[i]) < 0)
			progress_note("warning: %s has an install script, which was not run (no "
			              "package code runs on the host; --scripts runs it in a "
			              "container)",
			              skipped.v[i]);
	/* a package whose binding.gyp npm builds without a script of its own */
	for (size_t i = 0; b->scripts && i < native.n; i++)
		if (strv_find(&skipped, native.v[i]) < 0)
			strv_push(&skipped, native.v[i]);
	if (b->scripts && skipped.n > 0) {
		progress_steps(b->progress, ++steps);
		progress_begin(b->progress, "the install scripts, in a container", NULL, NULL);
		r = native.n > 0 ? add_layers_native(&layers, b->data, b->npm, b->refresh, err) : 0;
		if (r == 0)
			r = add_run_scripts(b->cfg, b->d, b->work, b->data, b->name, &layers,
			                    &skipped, b->accept, err);
		progress_end(b->progress, r == 0);
		if (r < 0)
			goto out;
	}
	free(what);
	what = xasprintf("the image of %s@%s", p->name, p->version);
	progress_begin(b->progress, what, progress_gauge_file, &file);
	r = add_make_image(b->work, b->data, b->name, p, &layers, image, archive, err);
	add_progress_made(b, r == 0 ? *archive : NULL);
	progress_end(b->progress, r == 0);
	if (r < 0)
		goto out;
	r = add_load_image(b, image, *archive, err);
out:
	if (r < 0) {
		free(steal_pointer(image));
		free(steal_pointer(archive));
	}
	strv_free(&skipped);
	strv_free(&native);
	add_layers_free(&layers);
	return r;
}
