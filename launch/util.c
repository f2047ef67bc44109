/* What mcpgate-launch's modes share: errors, exact reads, the block of
 * variables and the exec that sets them. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launch/launch-internal.h"
#include "launch/launch.h"

extern char **environ;

void die(const char *fmt, ...)
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

int read_exact(int fd, char *p, size_t n)
{
	while (n > 0) {
		ssize_t r = read(fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die("reading the variables: %s", strerror(errno));
		if (r == 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

long read_line(int fd, char *buf, size_t n)
{
	size_t i = 0;
	for (;;) {
		if (i + 1 >= n)
			return -1;
		ssize_t r = read(fd, buf + i, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		if (buf[i] == '\n')
			break;
		i++;
	}
	buf[i] = '\0';
	return (long)i;
}

/* the length the header line announces */
static size_t read_header(int fd)
{
	char head[LAUNCH_HEAD_MAX];
	size_t n = 0;
	for (;;) {
		if (n == sizeof(head) - 1)
			die("the header of the variables is longer than %d bytes", LAUNCH_HEAD_MAX);
		if (read_exact(fd, head + n, 1) < 0)
			die("the variables' input ended before them");
		if (head[n] == '\n')
			break;
		n++;
	}
	head[n] = '\0';
	size_t m = strlen(LAUNCH_MAGIC);
	if (strncmp(head, LAUNCH_MAGIC, m) != 0)
		die("the input does not begin with the variables");
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

char *read_block(int fd, size_t *len_out)
{
	size_t len = read_header(fd);
	char *block = malloc(len + 1);
	if (block == NULL)
		die("out of memory");
	if (read_exact(fd, block, len) < 0)
		die("the input ended inside the variables");
	block[len] = '\0';
	if (block[len - 1] != '\0')
		die("the last variable is not terminated");
	size_t given = 0;
	for (size_t off = 0; off < len; off += strlen(block + off) + 1) {
		if (name_len(block + off) == 0)
			die("variable %zu of the block is not NAME=VALUE", given + 1);
		given++;
	}
	*len_out = len;
	return block;
}

void exec_with(char *block, size_t len, char **argv)
{
	size_t given = 0;
	for (size_t off = 0; off < len; off += strlen(block + off) + 1)
		given++;
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
	execvp(argv[0], argv);
	die("%s: %s", argv[0], strerror(errno));
}
