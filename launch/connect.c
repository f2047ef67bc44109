/* mcpgate-launch --connect HOST PORT
 *
 * The gateway's side of a server's stdio on a cluster, in a container on the
 * session's network. Its first line of stdin is the token (written by
 * mcpgate, so it is in no argument list or inspect); it connects to HOST
 * (retrying while the task starts), proves the token, reads the launcher's
 * answer and then carries bytes both ways unchanged: stdin to the server,
 * the server's stdout to stdout and its stderr to stderr (the launcher's
 * frames). The end of stdin half-closes the connection (the server reads
 * EOF); the server's exit status ends this process with that status. */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "launch/launch-internal.h"

/* how long the task may take to listen after it is running */
#define CONNECT_WAIT_S 60

static int try_connect(const char *host, const char *port)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res = NULL;
	if (getaddrinfo(host, port, &hints, &res) != 0)
		return -1;
	int s = -1;
	for (struct addrinfo *a = res; a != NULL && s < 0; a = a->ai_next) {
		s = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (s >= 0 && connect(s, a->ai_addr, a->ai_addrlen) < 0) {
			close(s);
			s = -1;
		}
	}
	freeaddrinfo(res);
	return s;
}

/* from fd in to fd out until in ends; 0 at its end, -1 on an error */
static int pump(int in, int out)
{
	char buf[65536];
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			return 0;
		if (write_all(out, buf, (size_t)n) < 0)
			return -1;
	}
}

/* exactly n bytes of s: 1, or 0 when it ends first (at a frame's start
 * only a clean end), or -1 on an error */
static int read_all(int s, unsigned char *p, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(s, p + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			return 0;
		got += (size_t)r;
	}
	return 1;
}

/* the launcher's frames (launch-internal.h): stdout to ours, stderr to
 * ours; the server's exit status, which ends this process with it */
static int unframe(int s, const char *where)
{
	static unsigned char buf[LAUNCH_FRAME_MAX];
	bool out_open = true;
	for (;;) {
		unsigned char head[LAUNCH_FRAME_HEAD];
		int r = read_all(s, head, sizeof(head));
		if (r <= 0)
			die("%s: the connection ended before the server's exit status (%s)", where,
			    r < 0 ? strerror(errno) : "its task was stopped");
		size_t n =
		    (size_t)head[1] << 24 | (size_t)head[2] << 16 | (size_t)head[3] << 8 | head[4];
		if (n > LAUNCH_FRAME_MAX)
			die("%s: a frame of %zu bytes, more than %d", where, n, LAUNCH_FRAME_MAX);
		if (read_all(s, buf, n) <= 0)
			die("%s: the connection ended inside a frame", where);
		switch (head[0]) {
		case LAUNCH_FRAME_OUT:
			/* the gateway gone is its own end; the rest is still read for the status */
			if (out_open && write_all(STDOUT_FILENO, (const char *)buf, n) < 0)
				out_open = false;
			break;
		case LAUNCH_FRAME_ERR:
			(void)write_all(STDERR_FILENO, (const char *)buf, n);
			break;
		case LAUNCH_FRAME_EXIT:
			if (n != 4)
				die("%s: an exit frame of %zu bytes", where, n);
			return buf[3];
		default:
			die("%s: a frame of unknown type %d", where, head[0]);
		}
	}
}

void launch_connect(int argc, char **argv)
{
	if (argc != 4)
		die("usage: mcpgate-launch --connect HOST PORT");
	char token[LAUNCH_TOKEN_LEN + 8];
	if (read_line(STDIN_FILENO, token, sizeof(token)) != LAUNCH_TOKEN_LEN)
		die("standard input does not begin with the token");
	int s = -1;
	time_t until = time(NULL) + CONNECT_WAIT_S;
	while ((s = try_connect(argv[2], argv[3])) < 0) {
		if (time(NULL) >= until)
			die("cannot reach %s:%s in %d s", argv[2], argv[3], CONNECT_WAIT_S);
		struct timespec ts = {0, 200 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	token[LAUNCH_TOKEN_LEN] = '\n';
	if (write_all(s, token, LAUNCH_TOKEN_LEN + 1) < 0)
		die("%s:%s: %s", argv[2], argv[3], strerror(errno));
	memset(token, 0, sizeof(token));
	char answer[1024];
	if (read_line(s, answer, sizeof(answer)) < 0)
		die("%s:%s closed without an answer (a wrong token, or not mcpgate-launch)",
		    argv[2], argv[3]);
	if (strcmp(answer, "ok") == 0)
		die("%s:%s: the node's mcpgate-launch is older than this one (it does not carry "
		    "the server's stderr): install this mcpgate's on every node labelled for "
		    "mcpgate",
		    argv[2], argv[3]);
	if (strcmp(answer, LAUNCH_ANSWER_OK) != 0)
		die("%s", answer);
	signal(SIGPIPE, SIG_IGN);
	pid_t child = fork();
	if (child < 0)
		die("fork: %s", strerror(errno));
	if (child == 0) {
		/* the gateway's bytes to the server; its end is the server's EOF */
		int r = pump(STDIN_FILENO, s);
		shutdown(s, SHUT_WR);
		_exit(r < 0 ? 1 : 0);
	}
	/* the server's bytes to the gateway, until the server is gone */
	char where[300];
	snprintf(where, sizeof(where), "%s:%s", argv[2], argv[3]);
	int status = unframe(s, where);
	kill(child, SIGKILL);
	(void)waitpid(child, NULL, 0);
	_exit(status);
}
