/* mcpgate enable NAME / mcpgate disable NAME: `enabled = false` in the
 * server's entry (the checked edit), kept in mcp.toml beside the rest of
 * what is reviewed. A disabled server is offered nowhere and never started;
 * a running serve (stdio or --listen) sees mcp.toml change, stops it and
 * withdraws its tools, and starts it again once it is enabled
 * (docs/2026-12-02-daily-use.md). */
#include <stdio.h>
#include <string.h>

#include "cmd/mcpgate/commands.h"
#include "cmd/mcpgate/opts.h"
#include "cmd/mcpgate/setup.h"
#include "internal/config/edit.h"

static int toggle(const char *cmd, int argc, char **argv, bool on, struct mg_err **err)
{
	const struct command *self = command_find(cmd);
	const char *dir = NULL, *name = NULL;
	if (usage_server_args(self, argc, argv, &dir, NULL, &name) != 0)
		return EXIT_USAGE;
	struct cfg *cfg = NULL;
	const struct cfg_server *s = NULL;
	int status = EXIT_FAIL;
	if (setup_config(dir, &cfg, err) < 0 || (s = setup_server(cfg, name, err)) == NULL)
		goto out;
	if (s->enabled == on) {
		printf("server %s is %s already; %s is as it was\n", name,
		       on ? "enabled" : "disabled", cfg->mcp_path);
		status = EXIT_OK;
		goto out;
	}
	struct cfg_server_change ch = CFG_SERVER_CHANGE_INIT;
	ch.enabled = on ? 1 : 0;
	if (cfg_change_server(cfg->mcp_path, name, &ch, err) < 0)
		goto out;
	if (on)
		printf("enabled %s in %s: a running serve starts it now%s\n", name, cfg->mcp_path,
		       s->manifest == NULL ? " (once approved: mcpgate review, then approve)" : "");
	else
		printf("disabled %s in %s (enabled = false): a running serve stops it and "
		       "withdraws its tools now; mcpgate enable %s undoes it\n",
		       name, cfg->mcp_path, name);
	status = EXIT_OK;
out:
	cfg_free(cfg);
	return status;
}

int cmd_enable(int argc, char **argv, struct mg_err **err)
{
	return toggle("enable", argc, argv, true, err);
}

int cmd_disable(int argc, char **argv, struct mg_err **err)
{
	return toggle("disable", argc, argv, false, err);
}
