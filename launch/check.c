/* The isolation a contained server must have, checked from inside the
 * container before any of its code runs. On a cluster a node's engine may
 * drop what mcpgate asked for without a word (Debian's docker 20.10 drops a
 * service's seccomp and no-new-privileges): this is where it is found. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "launch/launch-internal.h"

#ifndef SYS_io_uring_setup
#define SYS_io_uring_setup 425
#endif

/* the value after "Name:\t" in /proc/self/status, into out */
static bool status_field(const char *text, const char *name, char *out, size_t n)
{
	size_t nl = strlen(name);
	for (const char *p = text; p != NULL && *p != '\0';) {
		if (strncmp(p, name, nl) == 0 && p[nl] == ':') {
			p += nl + 1;
			while (*p == '\t' || *p == ' ')
				p++;
			size_t i = 0;
			while (p[i] != '\0' && p[i] != '\n' && i + 1 < n) {
				out[i] = p[i];
				i++;
			}
			out[i] = '\0';
			return true;
		}
		p = strchr(p, '\n');
		if (p != NULL)
			p++;
	}
	return false;
}

static bool all_zero(const char *hex)
{
	if (*hex == '\0')
		return false;
	for (; *hex != '\0'; hex++)
		if (*hex != '0')
			return false;
	return true;
}

const char *launch_isolation_problem(void)
{
	char text[8192];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return "cannot read /proc/self/status";
	ssize_t n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return "cannot read /proc/self/status";
	text[n] = '\0';
	char v[128];
	if (!status_field(text, "NoNewPrivs", v, sizeof(v)) || strcmp(v, "1") != 0)
		return "no-new-privileges is not set (NoNewPrivs is not 1): the node's engine "
		       "dropped it; set \"no-new-privileges\": true in its daemon.json";
	if (!status_field(text, "Seccomp", v, sizeof(v)) || strcmp(v, "2") != 0)
		return "no seccomp filter (Seccomp is not 2): the node's engine dropped it; set "
		       "\"seccomp-profile\" to mcpgate's profile in its daemon.json";
	if (!status_field(text, "CapEff", v, sizeof(v)) || !all_zero(v) ||
	    !status_field(text, "CapBnd", v, sizeof(v)) || !all_zero(v))
		return "the server would have capabilities (CapEff or CapBnd is not 0)";
	if (getuid() == 0 || geteuid() == 0)
		return "the server would run as root";
	/* mcpgate's profile refuses io_uring with EPERM; the engines' defaults
	 * (docker 20.10's included) let it through, and no filter at all gives
	 * EFAULT for the null parameters */
	errno = 0;
	long r = syscall(SYS_io_uring_setup, 1, NULL);
	if (r >= 0 || errno != EPERM)
		return "the seccomp filter is not mcpgate's (io_uring_setup was not refused "
		       "with EPERM): set \"seccomp-profile\" to mcpgate's profile in the node's "
		       "daemon.json";
	struct statvfs st;
	if (statvfs("/", &st) < 0 || (st.f_flag & ST_RDONLY) == 0)
		return "the root filesystem is writable";
	if (statvfs("/tmp", &st) == 0 && (st.f_flag & ST_NOEXEC) == 0)
		return "/tmp is not noexec";
	return NULL;
}
