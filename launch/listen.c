/* mcpgate-launch --listen PORT TOKEN_FILE ENV_FILE|- COMMAND [ARG...]
 *
 * The task's side of a server's stdio on a cluster. It checks its own
 * isolation, then listens on PORT and serves exactly one peer: the first
 * that sends the token of TOKEN_FILE (a tmpfs file only this task sees) as
 * its first line. A peer with anything else is closed unanswered and the
 * wait goes on. The accepted peer hears "ok" and then is the server's stdin
 * and stdout; or, when this node does not isolate it, "refused NODE: why",
 * and the server's code never runs. ENV_FILE holds the block of secret
 * variables (launch.h), set for the server's process only. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "launch/launch-internal.h"

/* peers with a wrong token before it gives up: someone on the network is guessing */
#define LISTEN_WRONG_MAX 32

static void read_token(const char *path, char token[LAUNCH_TOKEN_LEN + 1])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("%s: %s", path, strerror(errno));
	char buf[LAUNCH_TOKEN_LEN + 2];
	ssize_t n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < LAUNCH_TOKEN_LEN)
		die("%s: not a token", path);
	for (int i = 0; i < LAUNCH_TOKEN_LEN; i++)
		if (!((buf[i] >= '0' && buf[i] <= '9') || (buf[i] >= 'a' && buf[i] <= 'f')))
			die("%s: not a token", path);
	memcpy(token, buf, LAUNCH_TOKEN_LEN);
	token[LAUNCH_TOKEN_LEN] = '\0';
}

/* in time independent of where they differ */
static int same_token(const char *a, const char *b, long blen)
{
	unsigned char d = blen == LAUNCH_TOKEN_LEN ? 0 : 1;
	for (int i = 0; i < LAUNCH_TOKEN_LEN; i++)
		d |= (unsigned char)(a[i] ^ (i < blen ? b[i] : 0));
	return d == 0;
}

void launch_listen(int argc, char **argv)
{
	if (argc < 6)
		die("usage: mcpgate-launch --listen PORT TOKEN_FILE ENV_FILE|- COMMAND [ARG...]");
	char *end = NULL;
	long port = strtol(argv[2], &end, 10);
	if (*end != '\0' || port < 1 || port > 65535)
		die("--listen: %s is not a port", argv[2]);
	char token[LAUNCH_TOKEN_LEN + 1];
	read_token(argv[3], token);
	const char *problem = launch_isolation_problem();

	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ls < 0)
		die("socket: %s", strerror(errno));
	int one = 1;
	(void)setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
	if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(ls, 4) < 0)
		die("listening on port %ld: %s", port, strerror(errno));
	int wrong = 0;
	int c = -1;
	for (;;) {
		c = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0 && errno == EINTR)
			continue;
		if (c < 0)
			die("accept: %s", strerror(errno));
		/* a peer that says nothing does not hold the door */
		struct timeval tv = {.tv_sec = 10};
		(void)setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		char line[LAUNCH_TOKEN_LEN + 8];
		long n = read_line(c, line, sizeof(line));
		if (n >= 0 && same_token(token, line, n))
			break;
		close(c);
		if (++wrong >= LISTEN_WRONG_MAX)
			die("%d peers without the token: giving up", wrong);
	}
	close(ls); /* exactly one peer */
	struct timeval none = {0};
	(void)setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof(none));
	if (problem != NULL) {
		char host[256] = "?";
		(void)gethostname(host, sizeof(host) - 1);
		char msg[1024];
		int m = snprintf(msg, sizeof(msg), "refused %s: %s\n", host, problem);
		(void)write_all(c, msg, m > 0 && (size_t)m < sizeof(msg) ? (size_t)m : 0);
		close(c);
		_exit(126);
	}
	char *block = NULL;
	size_t len = 0;
	if (strcmp(argv[4], "-") != 0) {
		int fd = open(argv[4], O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			die("%s: %s", argv[4], strerror(errno));
		block = read_block(fd, &len);
		close(fd);
	}
	if (write_all(c, "ok\n", 3) < 0)
		die("the peer went: %s", strerror(errno));
	if (dup2(c, STDIN_FILENO) < 0 || dup2(c, STDOUT_FILENO) < 0)
		die("dup2: %s", strerror(errno));
	close(c);
	exec_with(block, len, argv + 5);
}
