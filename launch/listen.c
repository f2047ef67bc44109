/* mcpgate-launch --listen PORT TOKEN_FILE ENV_FILE|- COMMAND [ARG...]
 *
 * The task's side of a server's stdio on a cluster. It checks its own
 * isolation, then listens on PORT and serves exactly one peer: the first
 * that sends the token of TOKEN_FILE (a tmpfs file only this task sees) as
 * its first line. A peer with anything else is closed unanswered and the
 * wait goes on. The accepted peer hears LAUNCH_ANSWER_OK, then is the
 * server's stdin and hears its stdout, its stderr and at last its exit status
 * in frames (launch-internal.h); or, when this node does not isolate it,
 * "refused NODE: why", and the server's code never runs. ENV_FILE holds
 * the block of secret variables (launch.h), set for the server's process
 * only.
 *
 * --listen-early: the same, but the command starts as soon as the isolation
 * holds, before the peer comes (the egress proxy, which the server needs
 * listening); what it writes waits in its pipes for the peer. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
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

static pid_t server_pid = -1;

/* the engine's stop reaches this process (the container's first): the
 * server hears it too */
static void pass_signal(int sig)
{
	if (server_pid > 0)
		kill(server_pid, sig);
}

static void send_frame(int c, char type, const char *p, size_t n)
{
	unsigned char head[LAUNCH_FRAME_HEAD] = {(unsigned char)type, (unsigned char)(n >> 24),
	                                         (unsigned char)(n >> 16), (unsigned char)(n >> 8),
	                                         (unsigned char)n};
	/* the peer gone is the end: the server loses its stdin and ends */
	if (write_all(c, (const char *)head, sizeof(head)) < 0 || write_all(c, p, n) < 0) {
		if (server_pid > 0)
			kill(server_pid, SIGKILL);
		_exit(1);
	}
}

/* the connection to the server's stdin, in a process of its own so that a
 * server that does not read never holds up its stdout and stderr; the
 * connection's end (the gateway half-closed it) is the server's EOF */
static pid_t stdin_pump(int c, int to_server)
{
	pid_t p = fork();
	if (p < 0)
		die("fork: %s", strerror(errno));
	if (p > 0)
		return p;
	char buf[65536];
	for (;;) {
		ssize_t n = read(c, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || write_all(to_server, buf, (size_t)n) < 0)
			_exit(0);
	}
}

/* the server's ends of its pipes, held by this process */
struct server_pipes {
	int in, out, err;
};

/* the server as this process's child, with pipes for its stdio; the block
 * of variables is set for it alone, and wiped here */
static void start_server(char *block, size_t len, char **argv, struct server_pipes *p)
{
	int in[2], out[2], err[2];
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0)
		die("pipe2: %s", strerror(errno));
	signal(SIGPIPE, SIG_IGN);
	server_pid = fork();
	if (server_pid < 0)
		die("fork: %s", strerror(errno));
	if (server_pid == 0) {
		signal(SIGPIPE, SIG_DFL);
		if (dup2(in[0], STDIN_FILENO) < 0 || dup2(out[1], STDOUT_FILENO) < 0 ||
		    dup2(err[1], STDERR_FILENO) < 0)
			die("dup2: %s", strerror(errno));
		exec_with(block, len, argv);
	}
	if (block != NULL) {
		memset(block, 0, len);
		free(block);
	}
	struct sigaction sa = {.sa_handler = pass_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	close(in[0]);
	close(out[1]);
	close(err[1]);
	*p = (struct server_pipes){in[1], out[0], err[0]};
}

/* the server's stdin from the connection, its stdout and stderr to the
 * connection in frames, then its exit status; the status is this
 * process's too */
__attribute__((noreturn)) static void serve_framed(int c, const struct server_pipes *p)
{
	pid_t pump = stdin_pump(c, p->in);
	close(p->in);
	struct pollfd fds[2] = {{p->out, POLLIN, 0}, {p->err, POLLIN, 0}};
	const char types[2] = {LAUNCH_FRAME_OUT, LAUNCH_FRAME_ERR};
	char buf[LAUNCH_FRAME_MAX];
	while (fds[0].fd >= 0 || fds[1].fd >= 0) {
		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll: %s", strerror(errno));
		}
		for (int i = 0; i < 2; i++) {
			if (fds[i].fd < 0 || fds[i].revents == 0)
				continue;
			ssize_t n = read(fds[i].fd, buf, sizeof(buf));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				close(fds[i].fd);
				fds[i].fd = -1;
				continue;
			}
			send_frame(c, types[i], buf, (size_t)n);
		}
	}
	int status = 0;
	while (waitpid(server_pid, &status, 0) < 0 && errno == EINTR)
		;
	int code = WIFEXITED(status)     ? WEXITSTATUS(status)
	           : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
	                                 : 1;
	char st[4] = {0, 0, 0, (char)code};
	send_frame(c, LAUNCH_FRAME_EXIT, st, sizeof(st));
	kill(pump, SIGKILL);
	(void)waitpid(pump, NULL, 0);
	/* until the peer has read it all and closed: a close with the gateway's
	 * bytes unread would reset the connection and lose the last frames */
	shutdown(c, SHUT_WR);
	struct timeval tv = {.tv_sec = 10};
	(void)setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (read(c, buf, sizeof(buf)) > 0)
		;
	_exit(code);
}

/* the block of variables of path, or NULL for "-" */
static char *read_env(const char *path, size_t *len)
{
	*len = 0;
	if (strcmp(path, "-") == 0)
		return NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("%s: %s", path, strerror(errno));
	char *block = read_block(fd, len);
	close(fd);
	return block;
}

void launch_listen(int argc, char **argv)
{
	size_t len = 0;
	if (argc < 6)
		die("usage: mcpgate-launch --listen PORT TOKEN_FILE ENV_FILE|- COMMAND [ARG...]");
	char *end = NULL;
	long port = strtol(argv[2], &end, 10);
	if (*end != '\0' || port < 1 || port > 65535)
		die("--listen: %s is not a port", argv[2]);
	char token[LAUNCH_TOKEN_LEN + 1];
	read_token(argv[3], token);
	const char *problem = launch_isolation_problem();
	/* --listen-early: a process others wait for (the egress proxy) starts
	 * once its isolation holds, not once its peer comes; its output waits in
	 * its pipes until then */
	bool early = strcmp(argv[1], "--listen-early") == 0;
	struct server_pipes pipes = {-1, -1, -1};
	if (early && problem == NULL) {
		char *block = read_env(argv[4], &len);
		start_server(block, len, argv + 5, &pipes);
	}

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
	if (!early) {
		char *block = read_env(argv[4], &len);
		start_server(block, len, argv + 5, &pipes);
	}
	if (write_all(c, LAUNCH_ANSWER_OK "\n", strlen(LAUNCH_ANSWER_OK) + 1) < 0)
		die("the peer went: %s", strerror(errno));
	serve_framed(c, &pipes);
}
