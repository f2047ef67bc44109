/* podman beside dockerd (docs/operations.md): dockerd may set the host's
 * FORWARD policy to DROP, and with br_netfilter loaded even traffic that
 * stays on one bridge goes through that chain. netavark adds no accept rule
 * for an --internal network, so a server could not reach its own egress
 * sidecar. Told from the evidence (the sysctl, `iptables -S`) before a
 * session waits on it. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal/base/cleanup.h"
#include "internal/base/xalloc.h"
#include "internal/container/container.h"
#include "internal/proc/proc.h"

#define FIX_RULE "iptables -I FORWARD -i podman+ -o podman+ -j ACCEPT"

/* Does one "-A CHAIN ..." rule accept traffic from ifname to ifname? An
 * unconditional ACCEPT does; so does one whose -i and -o (each absent, the
 * interface, or a prefix+ of it) all match. Any other match (addresses,
 * states, marks) is not counted on. */
static bool rule_accepts(const char *rule, const char *ifname)
{
	if (strstr(rule, " -j ACCEPT") == NULL)
		return false;
	cleanup_free char *copy = xstrdup(rule);
	bool in_ok = true, out_ok = true, other = false;
	char *save = NULL;
	strtok_r(copy, " ", &save); /* -A */
	strtok_r(NULL, " ", &save); /* the chain */
	for (char *w = strtok_r(NULL, " ", &save); w != NULL; w = strtok_r(NULL, " ", &save)) {
		bool in = strcmp(w, "-i") == 0, out = strcmp(w, "-o") == 0;
		if (in || out) {
			const char *v = strtok_r(NULL, " ", &save);
			if (v == NULL)
				return false;
			size_t n = strlen(v);
			bool match = v[n - 1] == '+' ? strncmp(v, ifname, n - 1) == 0
			                             : strcmp(v, ifname) == 0;
			if (in)
				in_ok = match;
			else
				out_ok = match;
		} else if (strcmp(w, "-j") == 0) {
			break;
		} else {
			other = true;
		}
	}
	return in_ok && out_ok && !other;
}

char *ctr_forward_verdict(const char *iptables_s, bool bridge_nf, const char *ifname)
{
	if (!bridge_nf)
		return NULL;
	if (ifname == NULL)
		ifname = "podman1"; /* any bridge of podman's */
	bool drop = false, accepted = false;
	const char *line = iptables_s;
	while (line != NULL && *line != '\0') {
		const char *nl = strchr(line, '\n');
		size_t len = nl != NULL ? (size_t)(nl - line) : strlen(line);
		cleanup_free char *l = xstrndup(line, len);
		if (strcmp(l, "-P FORWARD DROP") == 0 || strcmp(l, "-P FORWARD REJECT") == 0)
			drop = true;
		/* FORWARD itself, and DOCKER-USER, which docker jumps to first */
		if ((strncmp(l, "-A FORWARD ", 11) == 0 ||
		     strncmp(l, "-A DOCKER-USER ", 15) == 0) &&
		    rule_accepts(l, ifname))
			accepted = true;
		line = nl != NULL ? nl + 1 : NULL;
	}
	if (!drop || accepted)
		return NULL;
	return xasprintf("the host's FORWARD policy is DROP (dockerd sets it) and br_netfilter "
	                 "sends traffic within a bridge through it, so a server cannot reach "
	                 "its egress sidecar on podman's internal bridge%s%s; allow traffic that "
	                 "stays on podman's bridges (nothing leaves an internal one): " FIX_RULE
	                 " (docs/operations.md)",
	                 strcmp(ifname, "podman1") != 0 ? " " : "",
	                 strcmp(ifname, "podman1") != 0 ? ifname : "");
}

int ctr_forward_problem(const char *ifname, char **problem, struct mg_err **err)
{
	*problem = NULL;
	FILE *f = fopen("/proc/sys/net/bridge/bridge-nf-call-iptables", "re");
	if (f == NULL)
		return 0; /* no br_netfilter: bridged traffic skips iptables */
	int c = fgetc(f);
	fclose(f);
	if (c != '1')
		return 0;
	cleanup_free char *iptables =
	    proc_find_in_path("iptables", "/usr/sbin:/sbin:/usr/bin:/bin");
	if (iptables == NULL)
		return 0; /* dockerd needs iptables: without it, it set nothing */
	const char *argv[] = {iptables, "-S", NULL};
	const char *envp[] = {"PATH=/usr/sbin:/sbin:/usr/bin:/bin", "LC_ALL=C", NULL};
	struct proc_result res;
	/* within a second: this is what stands between a person and a timeout */
	if (proc_run(argv, envp, 1000, 1u << 20, &res, err) < 0)
		return mg_err_wrap(err, "reading the host's FORWARD chain");
	if (!WIFEXITED(res.status) || WEXITSTATUS(res.status) != 0) {
		/* not root: not a rootful podman's problem to judge */
		proc_result_free(&res);
		return 0;
	}
	*problem = ctr_forward_verdict(res.out.data, true, ifname);
	proc_result_free(&res);
	return 0;
}
