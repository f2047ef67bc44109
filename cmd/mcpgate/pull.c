/* mcpgate pull NAME: the person's act of fetching a server's pinned image. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/mcpgate/commands.h"
#include "cmd/mcpgate/opts.h"
#include "cmd/mcpgate/progress.h"
#include "cmd/mcpgate/setup.h"
#include "internal/base/cleanup.h"
#include "internal/base/xalloc.h"
#include "internal/config/edit.h"
#include "internal/container/swarm.h"

/* localhost/NAME (no port): podman's name for an image built or loaded
 * here; no registry answers for it */
static bool local_only(const char *image_name)
{
	return strncmp(image_name, "localhost/", 10) == 0;
}

/* on a swarm: the image into the registry every node pulls from, and the
 * entry pinned to its digest there (docs/2026-12-02-swarm.md) */
static int pull_to_swarm(const struct cfg *cfg, const struct cfg_server *s,
                         const struct ctr_driver *d, struct mg_err **err)
{
	cleanup_free char *pinned = NULL;
	if (ctr_swarm_publish(d, s->image, &pinned, err) < 0)
		return mg_err_wrap(err, "server %s on the swarm", s->name);
	if (pinned == NULL) {
		printf("%s: %s is in the swarm's registry\n", s->name, s->image);
		return 0;
	}
	struct cfg_server_change ch = CFG_SERVER_CHANGE_INIT;
	ch.image = pinned;
	if (cfg_change_server(cfg->mcp_path, s->name, &ch, err) < 0)
		return mg_err_wrap(err, "pinning server %s to %s", s->name, pinned);
	printf("%s: %s is in the swarm's registry as %s, which %s pins now\n", s->name, s->image,
	       pinned, cfg->mcp_path);
	return 0;
}

int cmd_pull(int argc, char **argv, struct mg_err **err)
{
	const struct command *self = command_find("pull");
	const char *dir = NULL, *name = NULL;
	if (usage_server_args(self, argc, argv, &dir, NULL, &name) != 0)
		return EXIT_USAGE;

	struct cfg *cfg = NULL;
	cleanup_free char *kept = NULL, *pulling = NULL;
	struct ctr_driver *d = NULL;
	struct progress *progress = progress_new("pull", 0);
	int status = EXIT_FAIL;
	if (setup_config(dir, &cfg, err) < 0)
		goto out;
	const struct cfg_server *s = setup_server(cfg, name, err);
	if (s == NULL)
		goto out;
	if (s->transport != CFG_TRANSPORT_CONTAINER) {
		mg_err_set(err, "server %s is remote: there is no image to pull", name);
		goto out;
	}
	if (setup_driver(cfg, &d, err) < 0)
		goto out;
	if (d->kind == CTR_SWARM) {
		if (pull_to_swarm(cfg, s, d, err) == 0) {
			setup_remember_runtime(d);
			status = EXIT_OK;
		}
		goto out;
	}
	/* a present image is not fetched again */
	int present = d->ops->image_present(d, s->image, err);
	if (present < 0) {
		mg_err_wrap(err, "cannot tell whether %s's image is present", name);
		goto out;
	}
	if (present > 0) {
		printf("%s: %s is present already: nothing to pull\n", name, s->image);
		status = EXIT_OK;
		goto out;
	}
	if (d->images_dir != NULL && strlen(s->image_digest) == 71)
		kept = xasprintf("%s/sha256-%s.tar", d->images_dir, s->image_digest + 7);
	if (local_only(s->image_name) && kept != NULL && access(kept, R_OK) == 0) {
		/* one mcpgate made (mcpgate add): its archive is kept by digest */
		struct stat st;
		struct progress_read reading = {kept,
		                                stat(kept, &st) == 0 ? (uint64_t)st.st_size : 0};
		cleanup_free char *what = xasprintf("%s load -i %s", d->name, kept);
		progress_begin(progress, what, progress_gauge_read, &reading);
		int loaded = d->ops->load(d, kept, err);
		progress_end(progress, loaded == 0);
		if (loaded < 0)
			goto out;
		present = d->ops->image_present(d, s->image, err);
		if (present <= 0) {
			if (present == 0)
				mg_err_set(err,
				           "%s loaded %s, but no image %s is present afterwards",
				           d->name, kept, s->image);
			goto out;
		}
		setup_remember_runtime(d);
		printf("%s: %s loaded from %s\n", name, s->image, kept);
		status = EXIT_OK;
		goto out;
	}
	if (local_only(s->image_name)) {
		mg_err_set(err,
		           "image %s is not present, and localhost/ names an image made on this "
		           "machine that no registry serves: load it (%s load -i ARCHIVE, for one "
		           "made by mcpgate pack), then see: mcpgate list",
		           s->image, d->name);
		goto out;
	}
	pulling = xasprintf("%s pull %s", d->name, s->image);
	progress_begin_quiet(progress, pulling);
	int pulled = d->ops->pull(d, s->image, err);
	progress_end(progress, pulled == 0);
	if (pulled < 0)
		goto out;
	present = d->ops->image_present(d, s->image, err);
	if (present < 0)
		goto out;
	if (present == 0) {
		mg_err_set(err, "%s pulled %s, but no image with digest %s is present afterwards",
		           d->name, s->image, s->image_digest);
		goto out;
	}
	setup_remember_runtime(d);
	printf("%s: %s is present\n", name, s->image);
	status = EXIT_OK;
out:
	progress_free(progress);
	ctr_driver_free(d);
	cfg_free(cfg);
	return status;
}
