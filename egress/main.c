/* mcpgate-egress: the static allowlisting HTTP proxy of mcpgate. main() only
 * sets the process up (options, signals, limits, the listening socket, the
 * proxy's own addresses) and hands over to the loop in relay.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "egress/egress.h"

/* fds a connection may hold: client, upstream, two pipes of two ends; the
 * spare room holds relay.c's pool of 64 empty pipes (128) and the rest */
#define FDS_PER_CONN 6
#define FDS_SPARE    192

static void raise_fd_limit(struct egr_opts *o)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	/* room for the cap, and as many tunnels again whose client has left */
	rlim_t need = (rlim_t)o->max_tunnels * 2 * FDS_PER_CONN + FDS_SPARE;
	if (rl.rlim_cur < need) {
		rl.rlim_cur =
		    rl.rlim_max == RLIM_INFINITY || rl.rlim_max > need ? need : rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur < need) {
		unsigned fit = rl.rlim_cur > FDS_SPARE * 2
		                   ? (unsigned)((rl.rlim_cur - FDS_SPARE) / (2 * FDS_PER_CONN))
		                   : 1;
		fprintf(stderr,
		        "mcpgate-egress: only %llu file descriptors: -max-tunnels lowered to %u\n",
		        (unsigned long long)rl.rlim_cur, fit);
		o->max_tunnels = fit;
	}
}

/* The proxy's own interface addresses, refused as destinations on any port. */
static struct egr_cidr *own_addresses(size_t *n)
{
	struct ifaddrs *ifs = NULL;
	*n = 0;
	if (getifaddrs(&ifs) < 0) {
		fprintf(stderr, "mcpgate-egress: getifaddrs: %s (own addresses not known)\n",
		        strerror(errno));
		return NULL;
	}
	size_t cap = 0;
	for (struct ifaddrs *i = ifs; i != NULL; i = i->ifa_next)
		cap++;
	struct egr_cidr *own = calloc(cap + 1, sizeof(*own));
	if (own == NULL) {
		fputs("mcpgate-egress: out of memory\n", stderr);
		abort();
	}
	for (struct ifaddrs *i = ifs; i != NULL; i = i->ifa_next) {
		if (i->ifa_addr == NULL)
			continue;
		struct egr_cidr *c = &own[*n];
		if (i->ifa_addr->sa_family == AF_INET) {
			c->addr.family = 4;
			memcpy(c->addr.b, &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr,
			       4);
			c->prefix = 32;
		} else if (i->ifa_addr->sa_family == AF_INET6) {
			c->addr.family = 6;
			memcpy(c->addr.b, &((struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr,
			       16);
			c->prefix = 128;
		} else {
			continue;
		}
		(*n)++;
	}
	freeifaddrs(ifs);
	return own;
}

static int listen_on(const struct egr_opts *o)
{
	int fd = socket(o->listen.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* accepted sockets inherit it: no call per connection */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)&o->listen, o->listen_len) < 0 ||
	    listen(fd, 256) < 0) {
		int saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

int main(int argc, char **argv)
{
	struct egr_opts o;
	char err[512];
	int r = egr_opts_parse(argc, argv, &o, err, sizeof(err));
	if (r != 0) {
		egr_opts_free(&o);
		if (r > 0) {
			fputs(egr_usage, stdout);
			return 0;
		}
		fprintf(stderr, "mcpgate-egress: %s\n", err);
		return 2;
	}
	/* a peer that goes away is an error on a write, not a signal; the
	 * signals that end us are read from a signalfd in the loop, and every
	 * lookup thread inherits the blocked mask */
	signal(SIGPIPE, SIG_IGN);
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGQUIT);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	raise_fd_limit(&o);
	int fd = listen_on(&o);
	if (fd < 0) {
		fprintf(stderr, "mcpgate-egress: -listen: %s\n", strerror(errno));
		egr_opts_free(&o);
		return 1;
	}
	size_t nown;
	struct egr_cidr *own = own_addresses(&nown);
	if (o.nallow == 0)
		fputs("mcpgate-egress: no -allow entry: every destination is refused\n", stderr);
	r = egr_run(&o, fd, own, nown);
	close(fd);
	free(own);
	egr_opts_free(&o);
	return r;
}
