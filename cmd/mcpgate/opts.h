/* Reading a command's options: "--name VALUE", "--name=VALUE" and flags.
 * No option takes a secret: secrets come from standard input or a file. */
#ifndef MG_CMD_OPTS_H
#define MG_CMD_OPTS_H

#include <stdbool.h>

#include "cmd/mcpgate/commands.h"

/* When argv[*i] is --NAME or --NAME=VALUE: store the value in *value (from
 * the next argument or after '='), advance *i past what was used and return
 * 1. Return 0 when argv[*i] is another option, -1 (with a message printed)
 * when the value is missing. */
int opt_value(int argc, char **argv, int *i, const char *name, const char **value);

/* When argv[*i] is exactly --NAME: set *flag and return 1; else 0. */
int opt_flag(char **argv, int i, const char *name, bool *flag);

/* What main does before a command reads its arguments (argv[0] is its name),
 * so that every command and subcommand behaves alike: --help or -h anywhere
 * but as an option's value asks for the command's help (returns 1); a long
 * option not in cmd->options is a usage error naming the closest one it
 * takes (printed; returns -1). Otherwise 0: the command reads the rest. */
int opts_scan(const struct command *cmd, int argc, char **argv);

#endif
