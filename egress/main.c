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
#include <sys/stat.h>
#include <sys/un.h>
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

static int listen_on(const struct sockaddr_storage *ss, socklen_t len)
{
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	int one = 1;
	if (ss->ss_family != AF_UNIX) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		/* accepted sockets inherit it: no call per connection */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	if (bind(fd, (const struct sockaddr *)ss, len) < 0 || listen(fd, 256) < 0) {
		int saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

/* A -forward's listener. A unix: one replaces a socket left at its path
 * (never any other file) and is made 0666: who may connect is decided by
 * the folder it is in, which mcpgate makes and mounts into its sidecar
 * alone. */
static int forward_listen(const struct egr_endpoint *e)
{
	struct sockaddr_storage ss;
	socklen_t len;
	memset(&ss, 0, sizeof(ss));
	if (e->is_unix) {
		struct sockaddr_un *sun = (struct sockaddr_un *)&ss;
		struct stat st;
		if (lstat(e->path, &st) == 0 && S_ISSOCK(st.st_mode))
			unlink(e->path);
		sun->sun_family = AF_UNIX;
		memcpy(sun->sun_path, e->path, strlen(e->path) + 1);
		len = (socklen_t)sizeof(*sun);
	} else if (e->host.kind == EGR_HOST_IPV4) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
		sin->sin_family = AF_INET;
		sin->sin_port = htons(e->port);
		memcpy(&sin->sin_addr, e->host.addr.b, 4);
		len = (socklen_t)sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(e->port);
		memcpy(&sin6->sin6_addr, e->host.addr.b, 16);
		len = (socklen_t)sizeof(*sin6);
	}
	int fd = listen_on(&ss, len);
	if (fd >= 0 && e->is_unix && chmod(e->path, 0666) < 0) {
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
	int fd = o.have_listen ? listen_on(&o.listen, o.listen_len) : -1;
	if (o.have_listen && fd < 0) {
		fprintf(stderr, "mcpgate-egress: -listen: %s\n", strerror(errno));
		egr_opts_free(&o);
		return 1;
	}
	int forward_fds[EGR_FORWARDS_MAX];
	for (size_t i = 0; i < o.nforwards; i++) {
		forward_fds[i] = forward_listen(&o.forwards[i].listen);
		if (forward_fds[i] < 0) {
			fprintf(stderr, "mcpgate-egress: -forward %s%s: %s\n",
			        o.forwards[i].listen.is_unix ? "unix:" : "",
			        o.forwards[i].listen.is_unix ? o.forwards[i].listen.path
			                                     : o.forwards[i].listen.host.name,
			        strerror(errno));
			while (i > 0)
				close(forward_fds[--i]);
			if (fd >= 0)
				close(fd);
			egr_opts_free(&o);
			return 1;
		}
	}
	size_t nown;
	struct egr_cidr *own = own_addresses(&nown);
	if (o.have_listen && o.nallow == 0)
		fputs("mcpgate-egress: no -allow entry: every destination is refused\n", stderr);
	r = egr_run(&o, fd, forward_fds, own, nown);
	if (fd >= 0)
		close(fd);
	for (size_t i = 0; i < o.nforwards; i++) {
		close(forward_fds[i]);
		if (o.forwards[i].listen.is_unix)
			unlink(o.forwards[i].listen.path);
	}
	free(own);
	egr_opts_free(&o);
	return r;
}
