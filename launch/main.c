/* mcpgate-launch: the first process of a contained server that is given a
 * secret. mcpgate writes the secret's variable on the server's standard input
 * ahead of MCP (launch.h); this reads exactly that block, sets the variables
 * and becomes the server's own command (execvp). The value so reaches the
 * server's process without being in an argument list, in the runtime's record
 * of the container (`inspect`), in the runtime's environment or in a file.
 *
 * It runs inside the container as the server's user, before any of the
 * server's code. Static, libc only, no stdio on standard input: one byte past
 * the block would be MCP taken from the server. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launch/launch-internal.h"

int main(int argc, char **argv)
{
	if (argc >= 2 &&
	    (strcmp(argv[1], "--listen") == 0 || strcmp(argv[1], "--listen-early") == 0))
		launch_listen(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "--connect") == 0)
		launch_connect(argc, argv);
	if (argc < 2)
		die("no command to run (usage: mcpgate-launch COMMAND [ARG...])");
	size_t len = 0;
	char *block = read_block(STDIN_FILENO, &len);
	exec_with(block, len, argv + 1);
}
