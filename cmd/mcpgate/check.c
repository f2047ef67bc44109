/* mcpgate check: load the configuration with every rule and say so. */
#include <stdio.h>

#include "cmd/mcpgate/commands.h"
#include "cmd/mcpgate/opts.h"
#include "cmd/mcpgate/setup.h"
#include "internal/base/cleanup.h"
#include "internal/config/config.h"

int cmd_check(int argc, char **argv, struct mg_err **err)
{
	const struct command *self = command_find("check");
	const char *dir = NULL, *mcp = NULL, *global = NULL;
	for (int i = 1; i < argc; i++) {
		int r;
		if ((r = opt_value(argc, argv, &i, "config", &dir)) != 0 ||
		    (r = opt_value(argc, argv, &i, "mcp", &mcp)) != 0 ||
		    (r = opt_value(argc, argv, &i, "global", &global)) != 0) {
			if (r < 0)
				return EXIT_USAGE;
			continue;
		}
		return usage_error(self, "unknown argument \"%s\"", argv[i]);
	}
	if (dir != NULL && (mcp != NULL || global != NULL))
		return usage_error(self, "--config cannot be combined with --mcp or --global");

	struct cfg *cfg = NULL;
	cleanup_free char *default_dir = NULL;
	int r;
	if (mcp != NULL) {
		r = cfg_load_files(mcp, global, &cfg, err);
	} else if (global != NULL) {
		return usage_error(self, "--global needs --mcp");
	} else {
		if (dir == NULL) {
			if (cfg_default_config_dir(&default_dir, err) < 0)
				return EXIT_FAIL;
			dir = default_dir;
		}
		r = cfg_load(dir, &cfg, err);
	}
	if (r < 0) {
		/* every error on its own line, as the config module wrote them */
		fprintf(stderr, "%s\n", mg_err_msg(*err));
		mg_err_clear(err);
		return EXIT_FAIL;
	}
	printf("configuration OK\n");
	setup_warn_forward(cfg, NULL, NULL);
	cfg_free(cfg);
	return EXIT_OK;
}
