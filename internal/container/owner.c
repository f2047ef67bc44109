/* Who made a container or network, so that a sweep removes only what it can
 * prove dead (docs/operations.md, the sweep). A pid alone names no process:
 * in another pid namespace pid 2 was an mcpgate, and to a sweep on the host
 * it read as kthreadd, so a live session's container was removed. The
 * owner label is BOOT/PIDNS/PID/START: the boot id, the pid namespace's
 * inode, the pid in it, and the process's start time in clock ticks. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal/base/xalloc.h"
#include "internal/container/container.h"

struct owner_id {
	char boot[40];
	unsigned long long pidns;
	long pid;
	unsigned long long start;
};

static bool read_small(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	if (f == NULL)
		return false;
	size_t n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	return n > 0;
}

static void boot_id(char out[40])
{
	char b[64];
	out[0] = '\0';
	if (read_small("/proc/sys/kernel/random/boot_id", b, sizeof(b))) {
		b[strcspn(b, "\n")] = '\0';
		snprintf(out, 40, "%.39s", b);
	}
}

/* The start time of pid (field 22 of /proc/PID/stat), 0 when unknown */
static unsigned long long start_time(long pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if (!read_small(path, buf, sizeof(buf)))
		return 0;
	const char *p = strrchr(buf, ')'); /* the name may hold anything */
	if (p == NULL)
		return 0;
	p++;
	for (int field = 3; field < 22 && p != NULL; field++)
		p = strchr(p + 1, ' ');
	return p != NULL ? strtoull(p + 1, NULL, 10) : 0;
}

static unsigned long long pid_ns(long pid)
{
	char path[64], link[64];
	snprintf(path, sizeof(path), "/proc/%ld/ns/pid", pid);
	ssize_t n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return 0;
	link[n] = '\0';
	const char *b = strchr(link, '[');
	return b != NULL ? strtoull(b + 1, NULL, 10) : 0;
}

char *ctr_owner_label(pid_t pid)
{
	char boot[40];
	boot_id(boot);
	return xasprintf("%s/%llu/%ld/%llu", boot[0] ? boot : "unknown", pid_ns((long)pid),
	                 (long)pid, start_time((long)pid));
}

static bool parse(const char *label, struct owner_id *o)
{
	const char *s1 = strchr(label, '/');
	if (s1 == NULL || (size_t)(s1 - label) >= sizeof(o->boot) || s1 == label)
		return false;
	memcpy(o->boot, label, (size_t)(s1 - label));
	o->boot[s1 - label] = '\0';
	char tail;
	return sscanf(s1 + 1, "%llu/%ld/%llu%c", &o->pidns, &o->pid, &o->start, &tail) == 3 &&
	       o->pid > 0;
}

enum ctr_owner_verdict ctr_owner_judge(const char *label)
{
	struct owner_id o;
	if (label == NULL || !parse(label, &o))
		return CTR_OWNER_UNKNOWN;
	char boot[40];
	boot_id(boot);
	if (boot[0] == '\0')
		return CTR_OWNER_UNKNOWN;
	/* made before this boot: nothing of that boot runs now */
	if (strcmp(o.boot, boot) != 0)
		return CTR_OWNER_DEAD;
	/* another pid namespace: its pids mean nothing here */
	if (o.pidns == 0 || o.pidns != pid_ns((long)getpid()))
		return CTR_OWNER_UNKNOWN;
	if (!ctr_owner_alive((pid_t)o.pid))
		return CTR_OWNER_DEAD;
	/* the pid is an mcpgate; the same one only if it started when it did */
	unsigned long long now = start_time(o.pid);
	if (now == 0)
		return CTR_OWNER_UNKNOWN;
	return now == o.start ? CTR_OWNER_ALIVE : CTR_OWNER_DEAD;
}
