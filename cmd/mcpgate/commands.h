/* The command table of mcpgate: one file per command, this header binds them. */
#ifndef MG_CMD_COMMANDS_H
#define MG_CMD_COMMANDS_H

#include "internal/base/err.h"

#define MCPGATE_VERSION "0.1.0-dev"

/* `mcpgate mcp VERB` is the familiar spelling of these commands */
#define MCP_USAGE "mcpgate mcp add|list|pull|review|approve|remove ..."

/* Exit statuses of every command */
enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

struct command {
	const char *name;
	/* argv[0] is the command's name; returns an exit status. Errors that end
	 * the command are left in *err for main to print. */
	int (*run)(int argc, char **argv, struct mg_err **err);
	const char *usage;   /* one line: "mcpgate check [--config DIR]" */
	const char *summary; /* what it does, one line */
	const char *help;    /* the options, one per line, for `mcpgate help NAME` */
	/* the long options it takes, for opts_scan(): "config= json" (a name
	 * with "=" takes a value) */
	const char *options;
};

extern const struct command mg_commands[];

const struct command *command_find(const char *name);
/* The command most likely meant by a mistyped name, or NULL */
const char *command_suggest(const char *name);
/* The general help (to stdout) or a command's help; returns EXIT_OK, or
 * EXIT_USAGE for an unknown name. */
int help_print(const char *name);
/* "mcpgate NAME: usage: ..." to stderr; returns EXIT_USAGE */
int usage_error(const struct command *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The one server name a command takes: kept in *name; an option nobody
 * knows or a second name is a usage error (printed; returns -1) */
int usage_server_name(const struct command *cmd, const char *arg, const char **name);

/* The whole argv of a command that takes --config DIR (and --workspace DIR
 * when ws is not NULL) and one server's name, which it needs: 0, or
 * EXIT_USAGE with the message printed */
int usage_server_args(const struct command *cmd, int argc, char **argv, const char **dir,
                      const char **ws, const char **name);

int cmd_help(int argc, char **argv, struct mg_err **err);
int cmd_check(int argc, char **argv, struct mg_err **err);
int cmd_list(int argc, char **argv, struct mg_err **err);
int cmd_pull(int argc, char **argv, struct mg_err **err);
int cmd_sweep(int argc, char **argv, struct mg_err **err);
int cmd_serve(int argc, char **argv, struct mg_err **err);
int cmd_review(int argc, char **argv, struct mg_err **err);
int cmd_approve(int argc, char **argv, struct mg_err **err);
int cmd_secret(int argc, char **argv, struct mg_err **err);
int cmd_pack(int argc, char **argv, struct mg_err **err);
int cmd_add(int argc, char **argv, struct mg_err **err);
int cmd_client(int argc, char **argv, struct mg_err **err);
int cmd_remove(int argc, char **argv, struct mg_err **err);
int cmd_enable(int argc, char **argv, struct mg_err **err);
int cmd_disable(int argc, char **argv, struct mg_err **err);
int cmd_prune(int argc, char **argv, struct mg_err **err);
int cmd_update(int argc, char **argv, struct mg_err **err);
int cmd_outdated(int argc, char **argv, struct mg_err **err);
int cmd_logs(int argc, char **argv, struct mg_err **err);

#endif
