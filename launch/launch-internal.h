/* Between mcpgate-launch's files: libc only, nothing from internal/. */
#ifndef MCPGATE_LAUNCH_INTERNAL_H
#define MCPGATE_LAUNCH_INTERNAL_H

#include <stddef.h>

/* "mcpgate-launch: MESSAGE" on stderr, then exit 127 */
__attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...);
/* exactly n bytes of fd; 0 on success, -1 when it ends first */
int read_exact(int fd, char *p, size_t n);
/* write all of p to fd; 0, or -1 with errno */
int write_all(int fd, const char *p, size_t n);
/* one line of fd, byte by byte (nothing past its newline is taken), without
 * the newline, into buf of size n; its length, or -1 when fd ends or the
 * line does not fit */
long read_line(int fd, char *buf, size_t n);
/* the block of variables on fd (launch.h), allocated; *len its length */
char *read_block(int fd, size_t *len);
/* set the variables of block (read_block's) and become argv[0] */
__attribute__((noreturn)) void exec_with(char *block, size_t len, char **argv);

/* --listen and --connect: a contained server's stdio over a cluster's
 * network, to exactly one peer that proves the token (docs/2026-12-02-swarm.md) */
__attribute__((noreturn)) void launch_listen(int argc, char **argv);
__attribute__((noreturn)) void launch_connect(int argc, char **argv);
/* why this process is not isolated as mcpgate requires (static text), or
 * NULL when it is: no new privileges, mcpgate's seccomp profile, no
 * capability, not root, a read-only root, a noexec /tmp */
const char *launch_isolation_problem(void);

/* what the token line may hold: 64 hex digits */
#define LAUNCH_TOKEN_LEN 64

/* After the answer, what the server says comes in frames, so that its
 * stderr and its exit status cross on the one authenticated connection
 * beside its stdout (nothing of them is left to the engine's log driver):
 * a type byte, the payload's length (4 bytes, big-endian, at most
 * LAUNCH_FRAME_MAX), the payload. The gateway's side stays a plain byte
 * stream: the server's stdin. */
#define LAUNCH_ANSWER_OK  "ok framed" /* the answer of a launcher that frames */
#define LAUNCH_FRAME_OUT  'o'         /* the server's stdout */
#define LAUNCH_FRAME_ERR  'e'         /* the server's stderr */
#define LAUNCH_FRAME_EXIT 'x'         /* 4 bytes: its exit status, 128+N for signal N; last */
#define LAUNCH_FRAME_MAX  65536
#define LAUNCH_FRAME_HEAD 5

#endif
