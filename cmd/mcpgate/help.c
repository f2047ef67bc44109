/* The command table and the texts of `mcpgate --help` / `mcpgate help NAME`.
 * Keep them true: a command is listed here only once it works. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cmd/mcpgate/commands.h"

const struct command mg_commands[] = {
    {"serve", cmd_serve, "mcpgate serve [--config DIR] [--workspace DIR]",
     "the MCP server on stdin/stdout that an MCP client starts: the main job",
     "  --config DIR     the folder holding mcp.toml and config.toml\n"
     "  --workspace DIR  the workspace (default: the current folder); mounts resolve\n"
     "                   under it and `workspaces` in mcp.toml is matched against it\n"
     "Every server offered here starts at once, contained; tools that are on are\n"
     "offered as SERVER__TOOL. Logs go to stderr and to the session's audit log in\n"
     "$XDG_STATE_HOME/mcpgate/sessions/ID.jsonl; stdout carries only MCP.\n"},
    {"list", cmd_list, "mcpgate list [--config DIR] [--json]",
     "one line per server: transport, image present or not, manifest state",
     "  --config DIR  the folder holding mcp.toml and config.toml\n"
     "  --json        a JSON array instead of lines\n"},
    {"pull", cmd_pull, "mcpgate pull [--config DIR] NAME",
     "pull server NAME's image by its pinned digest (the runtime's progress is shown)",
     "  --config DIR  the folder holding mcp.toml and config.toml\n"
     "A session never pulls: a missing image makes its server unavailable with\n"
     "this command as the fix. Also spelled `mcpgate mcp pull NAME`.\n"},
    {"sweep", cmd_sweep, "mcpgate sweep [--config DIR]",
     "remove containers and networks left by mcpgate processes that are gone",
     "  --config DIR  the folder holding mcp.toml and config.toml\n"
     "Only what carries the label mcpgate.pid=P, where P is not a running mcpgate,\n"
     "is removed: containers first, then networks. serve does this by itself.\n"},
    {"check", cmd_check, "mcpgate check [--config DIR] [--mcp FILE] [--global FILE]",
     "validate the configuration; prints \"configuration OK\"",
     "  --config DIR   the folder holding mcp.toml and config.toml\n"
     "                 (default $XDG_CONFIG_HOME/mcpgate, else ~/.config/mcpgate)\n"
     "  --mcp FILE     check this file as mcp.toml (config.toml from --global, or none)\n"
     "  --global FILE  check this file as config.toml\n"
     "Every error is printed, one per line, as FILE:LINE:COL: what is wrong;\n"
     "the exit status is 0 when the configuration is valid, 1 when it is not.\n"},
    {"help", cmd_help, "mcpgate help [COMMAND]", "show this text, or one command's",
     "  COMMAND  a command's name\n"},
    {NULL, NULL, NULL, NULL, NULL},
};

const struct command *command_find(const char *name)
{
	for (const struct command *c = mg_commands; c->name != NULL; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

int help_print(const char *name)
{
	if (name != NULL) {
		const struct command *c = command_find(name);
		if (c == NULL) {
			fprintf(stderr, "mcpgate: no command \"%s\" (see: mcpgate --help)\n", name);
			return EXIT_USAGE;
		}
		printf("usage: %s\n\n%s.\n\n%s", c->usage, c->summary, c->help);
		return EXIT_OK;
	}
	printf("mcpgate %s: run MCP servers nobody reviewed, contained.\n\n"
	       "An MCP client starts `mcpgate serve` as its one MCP server; mcpgate runs\n"
	       "each real server in a container with a pinned image, declared network and\n"
	       "mounts, and offers its tools as SERVER__TOOL.\n\n"
	       "usage: mcpgate COMMAND [OPTIONS]\n\ncommands:\n",
	       MCPGATE_VERSION);
	for (const struct command *c = mg_commands; c->name != NULL; c++)
		printf("  %-9s %s\n", c->name, c->summary);
	printf("\n`mcpgate help COMMAND` shows a command's options.\n"
	       "Environment: MCPGATE_LOG=debug|info|warn|error (stderr only).\n"
	       "Files: $XDG_CONFIG_HOME/mcpgate/{mcp.toml,config.toml}; see mcp.toml(5).\n");
	return EXIT_OK;
}

int usage_error(const struct command *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "mcpgate %s: ", cmd->name);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\nusage: %s\n", cmd->usage);
	va_end(ap);
	return EXIT_USAGE;
}

int cmd_help(int argc, char **argv, struct mg_err **err)
{
	(void)err;
	if (argc > 2)
		return usage_error(command_find("help"), "too many arguments");
	return help_print(argc == 2 ? argv[1] : NULL);
}
