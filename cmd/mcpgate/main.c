/* mcpgate: a gateway that runs MCP servers nobody reviewed, contained.
 * main stays thin: a table of commands (help.c holds the texts). */
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <string.h>

#include "cmd/mcpgate/commands.h"
#include "cmd/mcpgate/opts.h"
#include "internal/base/cleanup.h"
#include "internal/base/utf8.h"
#include "internal/base/err.h"
#include "internal/base/log.h"
#include "internal/base/suggest.h"
#include "internal/container/container.h"
#include "internal/container/swarm.h"

static const char *const mcp_verbs[] = {"add", "list", "pull", "review", "approve", "remove", NULL};

static int is_mcp_verb(const char *name)
{
	for (size_t i = 0; mcp_verbs[i] != NULL; i++)
		if (strcmp(mcp_verbs[i], name) == 0)
			return 1;
	return 0;
}

/* mcpgate holds secrets: no core file of it, and no process of the same
 * user may trace it or read its memory (/proc/PID/mem, environ):
 * non-dumpable from the first instruction that matters */
static void guard_memory(void)
{
	struct rlimit none = {0, 0};
	setrlimit(RLIMIT_CORE, &none);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

int main(int argc, char **argv)
{
	guard_memory();
	cleanup_err struct mg_err *err = NULL;
	if (mg_log_init(&err) < 0) {
		fprintf(stderr, "mcpgate: %s\n", mg_err_msg(err));
		return EXIT_USAGE;
	}
	if (argc < 2) {
		help_print(NULL);
		return EXIT_USAGE;
	}
	const char *name = argv[1];
	/* not a command of the person's: what rootless podman runs in its own
	 * namespace to stage a server's mounts (docs/mounts.md) */
	if (strcmp(name, "__stage") == 0)
		return ctr_mounts_stage_main(argc - 1, argv + 1);
	/* what runtime = "swarm" runs for each server (docs/2026-12-02-swarm.md) */
	if (strcmp(name, "__swarm-run") == 0)
		return ctr_swarm_run_main(argc - 1, argv + 1);
	if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0)
		return help_print(argc > 2 ? argv[2] : NULL);
	if (strcmp(name, "--version") == 0) {
		printf("mcpgate %s\n", MCPGATE_VERSION);
		return EXIT_OK;
	}
	int shift = 1;
	if (strcmp(name, "mcp") == 0) {
		if (argc >= 3 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0))
			return help_print("mcp");
		if (argc < 3 || !is_mcp_verb(argv[2])) {
			const char *meant = argc < 3 ? NULL : mg_suggest(argv[2], mcp_verbs);
			if (meant != NULL)
				fprintf(stderr,
				        "mcpgate: unknown verb \"%s\"; did you mean \"%s\"?\n",
				        argv[2], meant);
			fprintf(stderr, "mcpgate: usage: %s\n", MCP_USAGE);
			return EXIT_USAGE;
		}
		name = argv[2];
		shift = 2;
	}
	const struct command *cmd = command_find(name);
	if (cmd == NULL) {
		const char *meant = command_suggest(name);
		if (meant != NULL)
			fprintf(stderr, "mcpgate: unknown command \"%s\"; did you mean \"%s\"?\n",
			        name, meant);
		else
			fprintf(stderr, "mcpgate: unknown command \"%s\" (see: mcpgate --help)\n",
			        name);
		return EXIT_USAGE;
	}
	/* --help and unknown options, alike for every command */
	int scan = opts_scan(cmd, argc - shift, argv + shift);
	if (scan != 0)
		return scan > 0 ? help_print(cmd->name) : EXIT_USAGE;
	int status = cmd->run(argc - shift, argv + shift, &err);
	if (err != NULL) {
		/* an error may carry a stranger's words (a path, a package's name,
		 * a server's answer): shown as the one renderer shows them */
		cleanup_free char *shown = mg_shown_lines(mg_err_msg(err), strlen(mg_err_msg(err)));
		fprintf(stderr, "mcpgate %s: %s\n", cmd->name, shown);
		if (status == EXIT_OK)
			status = EXIT_FAIL;
	}
	return status;
}
