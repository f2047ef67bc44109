/* The least a stdio relay can be, as the bench's yardstick for mcpgate's:
 *
 *   minrelay COMMAND [ARGS...]
 *
 * spawns COMMAND with pipes on its stdin and stdout (stderr inherited) and
 * copies bytes both ways with poll() and read()/write(): standard input to
 * the command, the command's output to standard output. No framing, no
 * parsing, nothing buffered beyond one read. At the end of standard input
 * the command's input is closed; at the end of its output minrelay waits
 * for it and exits with its status. Bench only: not built by `make`, not
 * part of mcpgate. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Write all of buf: 1, or 0 when the reader is gone. */
static int write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		buf += n;
		len -= (size_t)n;
	}
	return 1;
}

static pid_t spawn(char **argv, int *to_child, int *from_child)
{
	int in[2], out[2];
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0) {
		perror("minrelay: pipe2");
		return -1;
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
	posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
	posix_spawnattr_t attr;
	posix_spawnattr_init(&attr);
	sigset_t none, all;
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	pid_t pid;
	int e = posix_spawnp(&pid, argv[0], &fa, &attr, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(in[0]);
	close(out[1]);
	if (e != 0) {
		fprintf(stderr, "minrelay: %s: %s\n", argv[0], strerror(e));
		return -1;
	}
	*to_child = in[1];
	*from_child = out[0];
	return pid;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: minrelay COMMAND [ARGS...]\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	int to_child, from_child;
	pid_t pid = spawn(argv + 1, &to_child, &from_child);
	if (pid < 0)
		return 1;
	static char buf[65536];
	struct pollfd p[2] = {{.fd = STDIN_FILENO, .events = POLLIN},
	                      {.fd = from_child, .events = POLLIN}};
	while (p[1].fd >= 0) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			perror("minrelay: poll");
			return 1;
		}
		if (p[0].fd >= 0 && p[0].revents != 0) {
			ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0 || !write_all(to_child, buf, (size_t)n)) {
				close(to_child);
				p[0].fd = -1;
			}
		}
		if (p[1].revents != 0) {
			ssize_t n = read(from_child, buf, sizeof(buf));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0 || !write_all(STDOUT_FILENO, buf, (size_t)n)) {
				close(from_child);
				p[1].fd = -1;
			}
		}
	}
	if (p[0].fd >= 0)
		close(to_child);
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
