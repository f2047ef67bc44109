/* mcpgate sweep: remove what dead mcpgate processes left, by owner pid. */
#include <stdio.h>

#include "cmd/mcpgate/commands.h"
#include "cmd/mcpgate/opts.h"
#include "cmd/mcpgate/setup.h"

int cmd_sweep(int argc, char **argv, struct mg_err **err)
{
	const struct command *self = command_find("sweep");
	const char *dir = NULL;
	for (int i = 1; i < argc; i++) {
		int r = opt_value(argc, argv, &i, "config", &dir);
		if (r < 0)
			return EXIT_USAGE;
		if (r == 0)
			return usage_error(self, "unexpected argument \"%s\"", argv[i]);
	}
	struct cfg *cfg = NULL;
	struct ctr_driver *d = NULL;
	int status = EXIT_FAIL;
	unsigned removed = 0;
	if (setup_config(dir, &cfg, err) < 0 || setup_driver(cfg, &d, err) < 0)
		goto out;
	if (d->ops->sweep(d, &removed, err) < 0)
		goto out;
	printf("swept %u container%s and network%s left by dead mcpgate processes (%s)\n", removed,
	       removed == 1 ? "" : "s", removed == 1 ? "" : "s", d->name);
	status = EXIT_OK;
out:
	ctr_driver_free(d);
	cfg_free(cfg);
	return status;
}
