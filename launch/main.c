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

#include "launch/launch.h"

extern char **environ;

__attribute__((noreturn, format(printf, 1, 2))) static void die(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof(msg) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n > sizeof(msg) - 2)
		n = (int)sizeof(msg) - 2;
	msg[n++] = '\n';
	const char *who = "mcpgate-launch: ";
	(void)!write(STDERR_FILENO, who, strlen(who));
	(void)!write(STDERR_FILENO, msg, (size_t)n);
	_exit(127);
}

/* exactly n bytes of fd 0; 0 on success, -1 when it ends first */
static int read_exact(char *p, size_t n)
{
	while (n > 0) {
		ssize_t r = read(STDIN_FILENO, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die("reading standard input: %s", strerror(errno));
		if (r == 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* the length the header line announces */
static size_t read_header(void)
{
	char head[LAUNCH_HEAD_MAX];
	size_t n = 0;
	for (;;) {
		if (n == sizeof(head) - 1)
			die("the header of the variables is longer than %d bytes", LAUNCH_HEAD_MAX);
		if (read_exact(head + n, 1) < 0)
			die("standard input ended before the variables");
		if (head[n] == '\n')
			break;
		n++;
	}
	head[n] = '\0';
	size_t m = strlen(LAUNCH_MAGIC);
	if (strncmp(head, LAUNCH_MAGIC, m) != 0)
		die("standard input does not begin with the variables");
	const char *num = head + m;
	if (*num < '1' || *num > '9')
		die("the length of the variables is not a number");
	size_t len = 0;
	for (; *num >= '0' && *num <= '9'; num++) {
		len = len * 10 + (size_t)(*num - '0');
		if (len > LAUNCH_BLOCK_MAX)
			die("the variables are longer than %u bytes", LAUNCH_BLOCK_MAX);
	}
	if (*num != '\0')
		die("the length of the variables is not a number");
	return len;
}

/* the length of NAME in "NAME=VALUE", or 0 when it is not a variable name */
static size_t name_len(const char *entry)
{
	size_t i = 0;
	for (; entry[i] != '\0' && entry[i] != '='; i++) {
		char c = entry[i];
		bool ok = c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		          (i > 0 && c >= '0' && c <= '9');
		if (!ok)
			return 0;
	}
	return entry[i] == '=' ? i : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		die("no command to run (usage: mcpgate-launch COMMAND [ARG...])");
	size_t len = read_header();
	char *block = malloc(len + 1);
	if (block == NULL)
		die("out of memory");
	if (read_exact(block, len) < 0)
		die("standard input ended inside the variables");
	block[len] = '\0';
	if (block[len - 1] != '\0')
		die("the last variable is not terminated");

	size_t given = 0;
	for (size_t off = 0; off < len; off += strlen(block + off) + 1) {
		if (name_len(block + off) == 0)
			die("variable %zu of the block is not NAME=VALUE", given + 1);
		given++;
	}
	size_t have = 0;
	while (environ != NULL && environ[have] != NULL)
		have++;
	char **env = calloc(have + given + 1, sizeof(*env));
	if (env == NULL)
		die("out of memory");
	size_t n = 0;
	/* the image's and the runtime's variables, less any the block sets */
	for (size_t i = 0; i < have; i++) {
		size_t nl = name_len(environ[i]);
		bool replaced = false;
		for (size_t off = 0; nl > 0 && off < len && !replaced;
		     off += strlen(block + off) + 1)
			replaced = name_len(block + off) == nl &&
			           strncmp(block + off, environ[i], nl + 1) == 0;
		if (!replaced)
			env[n++] = environ[i];
	}
	for (size_t off = 0; off < len; off += strlen(block + off) + 1)
		env[n++] = block + off;
	env[n] = NULL;
	environ = env;
	execvp(argv[1], argv + 1);
	die("%s: %s", argv[1], strerror(errno));
}
