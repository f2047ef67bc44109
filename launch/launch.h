/* What mcpgate and mcpgate-launch share: the form of the block of variables
 * mcpgate writes on a contained server's standard input ahead of MCP
 * (docs/credentials.md, "How the value reaches the server").
 *
 *   "mcpgate-launch 1 LEN\n" then LEN bytes: NAME=VALUE\0, once or more
 *
 * Nothing else: no stdio, no includes beyond libc. */
#ifndef MCPGATE_LAUNCH_H
#define MCPGATE_LAUNCH_H

#define LAUNCH_MAGIC     "mcpgate-launch 1 "
#define LAUNCH_HEAD_MAX  64                /* the header line, its newline included */
#define LAUNCH_BLOCK_MAX (256u << 10)      /* the variables, all together */
#define LAUNCH_PATH      "/mcpgate-launch" /* where it is mounted in the container */

#endif
