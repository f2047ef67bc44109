/* mcpgate pull NAME: the person's act of fetching a server's pinned image. */
#include <stdio.h>

#include "cmd/mcpgate/commands.h"
#include "cmd/mcpgate/opts.h"
#include "cmd/mcpgate/setup.h"

int cmd_pull(int argc, char **argv, struct mg_err **err)
{
	const struct command *self = command_find("pull");
	const char *dir = NULL, *name = NULL;
	for (int i = 1; i < argc; i++) {
		int r = opt_value(argc, argv, &i, "config", &dir);
		if (r < 0)
			return EXIT_USAGE;
		if (r > 0)
			continue;
		if (usage_server_name(self, argv[i], &name) < 0)
			return EXIT_USAGE;
	}
	if (name == NULL)
		return usage_error(self, "which server? (see: mcpgate list)");

	struct cfg *cfg = NULL;
	struct ctr_driver *d = NULL;
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
	fprintf(stderr, "mcpgate: %s pull %s\n", d->name, s->image);
	if (d->ops->pull(d, s->image, err) < 0)
		goto out;
	int present = d->ops->image_present(d, s->image, err);
	if (present < 0)
		goto out;
	if (present == 0) {
		mg_err_set(err, "%s pulled %s, but no image with digest %s is present afterwards",
		           d->name, s->image, s->image_digest);
		goto out;
	}
	printf("%s: %s is present\n", name, s->image);
	status = EXIT_OK;
out:
	ctr_driver_free(d);
	cfg_free(cfg);
	return status;
}
