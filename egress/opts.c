/* The command line of mcpgate-egress. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress/egress.h"

const char egr_usage[] =
    "usage: mcpgate-egress -listen ADDR:PORT [-allow HOST[:PORT]]... [options]\n"
    "       mcpgate-egress -forward LISTEN=TARGET... [options]\n"
    "\n"
    "The static allowlisting HTTP proxy of mcpgate: CONNECT host:port and plain\n"
    "http://host[:port]/path requests to listed destinations only, and plain TCP\n"
    "forwarding to named destinations. One JSON line per attempt and per closed\n"
    "tunnel on standard output; diagnostics on stderr.\n"
    "\n"
    "  -listen ADDR:PORT          where the HTTP proxy listens: a.b.c.d:PORT or\n"
    "                             [IPv6]:PORT (required without -forward)\n"
    "  -forward LISTEN=TARGET     relay every connection to LISTEN (ADDR:PORT, or\n"
    "                             unix:/PATH) as bytes to TARGET (HOST:PORT, or\n"
    "                             unix:/PATH) and nowhere else (repeatable, at most\n"
    "                             64): a name is looked up for each connection and\n"
    "                             every address judged (private allowed, special and\n"
    "                             platform refused); a literal is judged at start; the\n"
    "                             host's loopback (127.0.0.0/8, [::1]) only from a\n"
    "                             unix: listener; a unix: listener is made 0666\n"
    "  -allow HOST[:PORT]         allow a destination (repeatable): a bare host means\n"
    "                             ports 80 and 443, host:port exactly that port; names\n"
    "                             match exactly; *.NAME matches one label under NAME\n"
    "                             (a.NAME, not NAME, not a.b.NAME, never an address);\n"
    "                             an IP literal must be requested exactly as listed;\n"
    "                             CONNECT to port 80 is refused (plain HTTP goes as a\n"
    "                             proxy request)\n"
    "  -allow-private HOST[:PORT] like -allow, and that entry may resolve to a private\n"
    "                             range (10/8, 172.16/12, 192.168/16, fc00::/7),\n"
    "                             never to a cloud platform's metadata or\n"
    "                             service address, even one inside such a range\n"
    "  -deny-address ADDR[/PREFIX]  always refuse these addresses (repeatable): the\n"
    "                             proxy's networks and gateways; its own interface\n"
    "                             addresses are refused without being named\n"
    "  -from ADDR[/PREFIX]        accept connections to a TCP listener (-listen, or a\n"
    "                             -forward's ADDR:PORT) only from these addresses\n"
    "                             (repeatable; default: any): the server's own network,\n"
    "                             not another the proxy is on. Others are closed and\n"
    "                             recorded\n"
    "  -lifeline                  exit when standard input ends\n"
    "  -no-sni-check              on CONNECT to port 443, do not require a TLS\n"
    "                             ClientHello first whose SNI is the host (a name) or\n"
    "                             absent or the address itself (an IP literal)\n"
    "  -max-header-bytes N        cap on the request header section (default 16384)\n"
    "  -max-request-line N        cap on the request line (default 8192)\n"
    "  -header-timeout MS         to receive the header section (default 10000)\n"
    "  -dns-timeout MS            for one name lookup (default 5000)\n"
    "  -connect-timeout MS        for one connect (default 10000)\n"
    "  -idle-timeout MS           a tunnel with no traffic either way is closed (default 300000)\n"
    "  -max-tunnels N             concurrent client connections (default 256)\n"
    "  -max-bytes-up N            bytes all tunnels and requests of the session together\n"
    "                             may send upstream (default: no cap); past it the\n"
    "                             tunnel is closed, a limit record written, and every\n"
    "                             later request refused\n"
    "  -h                         this help\n"
    "\n"
    "Exit status: 0 after a signal or the end of standard input (-lifeline),\n"
    "2 on a bad command line, 1 when it cannot start.\n";

static void *grow(void *p, size_t n, size_t size)
{
	void *q = realloc(p, (n + 1) * size);
	if (q == NULL) {
		fputs("mcpgate-egress: out of memory\n", stderr);
		abort();
	}
	return q;
}

static int fail(char *errbuf, size_t errsz, const char *opt, const char *val, const char *why)
{
	int n = val != NULL ? snprintf(errbuf, errsz, "%s %s: %s", opt, val, why)
	                    : snprintf(errbuf, errsz, "%s: %s", opt, why);
	if (n < 0)
		snprintf(errbuf, errsz, "%s: bad value", opt);
	else if ((size_t)n >= errsz && errsz > 4)
		memcpy(errbuf + errsz - 4, "...", 4); /* cut: say so; the option name stays */
	return -1;
}

int egr_endpoint_parse(const char *s, bool listen_addr, bool loopback_ok, struct egr_endpoint *out,
                       const char **why)
{
	memset(out, 0, sizeof(*out));
	if (strncmp(s, "unix:", 5) == 0) {
		size_t n = strlen(s + 5);
		if (s[5] != '/' || n > EGR_UNIX_PATH_MAX) {
			*why = "want unix:/PATH, an absolute path of at most 107 bytes";
			return -1;
		}
		out->is_unix = true;
		memcpy(out->path, s + 5, n + 1);
		return 0;
	}
	if (!listen_addr)
		return egr_forward_target_parse(s, strlen(s), loopback_ok, &out->host, &out->port,
		                                &out->range, why);
	if (egr_authority_parse(s, strlen(s), 0, &out->host, &out->port, why) < 0)
		return -1;
	if (out->host.kind != EGR_HOST_IPV4 && out->host.kind != EGR_HOST_IPV6) {
		*why = "want an IP address: a.b.c.d:PORT or [IPv6]:PORT";
		return -1;
	}
	return 0;
}

static int parse_listen(const char *s, struct egr_opts *o, const char **why)
{
	struct egr_endpoint e;
	if (egr_endpoint_parse(s, true, false, &e, why) < 0)
		return -1;
	if (e.is_unix) {
		*why = "want an IP address: a.b.c.d:PORT or [IPv6]:PORT";
		return -1;
	}
	memset(&o->listen, 0, sizeof(o->listen));
	if (e.host.kind == EGR_HOST_IPV4) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&o->listen;
		sin->sin_family = AF_INET;
		sin->sin_port = htons(e.port);
		memcpy(&sin->sin_addr, e.host.addr.b, 4);
		o->listen_len = sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&o->listen;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(e.port);
		memcpy(&sin6->sin6_addr, e.host.addr.b, 16);
		o->listen_len = sizeof(*sin6);
	}
	o->have_listen = true;
	return 0;
}

/* LISTEN=TARGET: a loopback target only from a unix: listener, two
 * listeners never the same */
static int parse_forward(const char *s, struct egr_opts *o, const char **why)
{
	const char *eq = strchr(s, '=');
	if (eq == NULL) {
		*why = "want LISTEN=TARGET";
		return -1;
	}
	if (o->nforwards == EGR_FORWARDS_MAX) {
		*why = "more than 64 -forward";
		return -1;
	}
	char listen[EGR_UNIX_PATH_MAX + 64];
	if ((size_t)(eq - s) >= sizeof(listen)) {
		*why = "LISTEN is too long";
		return -1;
	}
	memcpy(listen, s, (size_t)(eq - s));
	listen[eq - s] = '\0';
	o->forwards = grow(o->forwards, o->nforwards, sizeof(*o->forwards));
	struct egr_forward *f = &o->forwards[o->nforwards];
	memset(f, 0, sizeof(*f));
	if (egr_endpoint_parse(listen, true, false, &f->listen, why) < 0)
		return -1;
	if (egr_endpoint_parse(eq + 1, false, f->listen.is_unix, &f->target, why) < 0) {
		if (strcmp(*why, "a special address is always refused") == 0 &&
		    egr_addr_is_loopback(&f->target.host.addr))
			*why = "the host's loopback is reached only from a unix: listener "
			       "(mcpgate's host side)";
		return -1;
	}
	f->loopback = !f->target.is_unix && f->target.host.kind != EGR_HOST_NAME &&
	              egr_addr_is_loopback(&f->target.host.addr);
	for (size_t i = 0; i < o->nforwards; i++) {
		const struct egr_endpoint *a = &o->forwards[i].listen, *b = &f->listen;
		if (a->is_unix == b->is_unix &&
		    (a->is_unix ? strcmp(a->path, b->path) == 0
		                : a->port == b->port && strcmp(a->host.name, b->host.name) == 0)) {
			*why = "listens where another -forward does";
			return -1;
		}
	}
	o->nforwards++;
	return 0;
}

struct num_opt {
	const char *name;
	uint64_t min, max;
	size_t offset;
	bool is_size;
};

#define MS_MAX (24ull * 3600 * 1000)

static const struct num_opt num_opts[] = {
    {"-max-header-bytes", 1024, 1 << 20, offsetof(struct egr_opts, lim.max_header_bytes), true},
    {"-max-request-line", 256, 1 << 20, offsetof(struct egr_opts, lim.max_request_line), true},
    {"-header-timeout", 1, MS_MAX, offsetof(struct egr_opts, header_timeout_ms), false},
    {"-dns-timeout", 1, MS_MAX, offsetof(struct egr_opts, dns_timeout_ms), false},
    {"-connect-timeout", 1, MS_MAX, offsetof(struct egr_opts, connect_timeout_ms), false},
    {"-idle-timeout", 1, MS_MAX, offsetof(struct egr_opts, idle_timeout_ms), false},
    {"-max-tunnels", 1, 65536, offsetof(struct egr_opts, max_tunnels), false},
    {"-max-bytes-up", 1, SIZE_MAX >> 2, offsetof(struct egr_opts, max_bytes_up), true},
};

int egr_opts_parse(int argc, char **argv, struct egr_opts *o, char *errbuf, size_t errsz)
{
	memset(o, 0, sizeof(*o));
	o->sni_check = true;
	o->lim.max_header_bytes = 16384;
	o->lim.max_request_line = 8192;
	o->header_timeout_ms = 10000;
	o->dns_timeout_ms = 5000;
	o->connect_timeout_ms = 10000;
	o->idle_timeout_ms = 300000;
	o->max_tunnels = 256;
	errbuf[0] = '\0';
	for (int i = 1; i < argc; i++) {
		const char *opt = argv[i];
		const char *why;
		if (strcmp(opt, "-h") == 0 || strcmp(opt, "-help") == 0 ||
		    strcmp(opt, "--help") == 0)
			return 1;
		if (strcmp(opt, "-lifeline") == 0) {
			o->lifeline = true;
			continue;
		}
		if (strcmp(opt, "-no-sni-check") == 0) {
			o->sni_check = false;
			continue;
		}
		const struct num_opt *num = NULL;
		for (size_t k = 0; k < sizeof(num_opts) / sizeof(num_opts[0]); k++)
			if (strcmp(opt, num_opts[k].name) == 0)
				num = &num_opts[k];
		bool known = num != NULL || strcmp(opt, "-listen") == 0 ||
		             strcmp(opt, "-allow") == 0 || strcmp(opt, "-allow-private") == 0 ||
		             strcmp(opt, "-deny-address") == 0 || strcmp(opt, "-forward") == 0 ||
		             strcmp(opt, "-from") == 0;
		if (!known)
			return fail(errbuf, errsz, opt, NULL, "unknown option (see -h)");
		if (i + 1 >= argc)
			return fail(errbuf, errsz, opt, NULL, "needs a value");
		const char *val = argv[++i];
		if (num != NULL) {
			uint64_t v;
			if (egr_parse_uint(val, strlen(val), num->min, num->max, &v) < 0) {
				char range[96];
				int rn = snprintf(
				    range, sizeof(range), "want a decimal number from %llu to %llu",
				    (unsigned long long)num->min, (unsigned long long)num->max);
				return fail(errbuf, errsz, opt, val,
				            rn > 0 && (size_t)rn < sizeof(range) ? range
				                                                 : "bad number");
			}
			if (num->is_size)
				*(size_t *)(void *)((char *)o + num->offset) = (size_t)v;
			else
				*(unsigned *)(void *)((char *)o + num->offset) = (unsigned)v;
		} else if (strcmp(opt, "-listen") == 0) {
			if (parse_listen(val, o, &why) < 0)
				return fail(errbuf, errsz, opt, val, why);
		} else if (strcmp(opt, "-forward") == 0) {
			if (parse_forward(val, o, &why) < 0)
				return fail(errbuf, errsz, opt, val, why);
		} else if (strcmp(opt, "-deny-address") == 0) {
			o->deny = grow(o->deny, o->ndeny, sizeof(*o->deny));
			if (egr_cidr_parse(val, strlen(val), &o->deny[o->ndeny], &why) < 0)
				return fail(errbuf, errsz, opt, val, why);
			o->ndeny++;
		} else if (strcmp(opt, "-from") == 0) {
			o->from = grow(o->from, o->nfrom, sizeof(*o->from));
			if (egr_cidr_parse(val, strlen(val), &o->from[o->nfrom], &why) < 0)
				return fail(errbuf, errsz, opt, val, why);
			o->nfrom++;
		} else {
			bool private_ok = strcmp(opt, "-allow-private") == 0;
			o->allow = grow(o->allow, o->nallow, sizeof(*o->allow));
			const struct egr_allow *a = &o->allow[o->nallow];
			if (egr_allow_parse(val, private_ok, &o->allow[o->nallow], &why) < 0) {
				char with_range[256];
				int rn = a->range != NULL ? snprintf(with_range, sizeof(with_range),
				                                     "%s (%s)", why, a->range)
				                          : -1;
				return fail(errbuf, errsz, opt, val,
				            rn > 0 && (size_t)rn < sizeof(with_range) ? with_range
				                                                      : why);
			}
			o->nallow++;
		}
	}
	if (!o->have_listen && o->nforwards == 0)
		return fail(errbuf, errsz, "-listen", NULL, "is required (or -forward)");
	if (o->lim.max_request_line + 4 > o->lim.max_header_bytes)
		return fail(errbuf, errsz, "-max-request-line", NULL,
		            "must be smaller than -max-header-bytes");
	return 0;
}

void egr_opts_free(struct egr_opts *o)
{
	free(o->allow);
	free(o->deny);
	free(o->from);
	free(o->forwards);
	o->allow = NULL;
	o->deny = NULL;
	o->from = NULL;
	o->forwards = NULL;
	o->nallow = o->ndeny = o->nforwards = 0;
}

/* -from's judgement of a listener's peer (egress.h) */
bool egr_peer_allowed(const struct egr_cidr *from, size_t nfrom, const struct sockaddr *sa,
                      char *text, size_t cap)
{
	struct egr_addr a = {0};
	if (sa->sa_family == AF_INET) {
		a.family = 4;
		memcpy(a.b, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		a.family = 6;
		memcpy(a.b, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
		egr_addr_unmap(&a);
	} else {
		/* a unix listener: who connects is decided by its folder */
		snprintf(text, cap, "unix");
		return true;
	}
	egr_addr_format(&a, text, cap);
	if (nfrom == 0)
		return true;
	for (size_t i = 0; i < nfrom; i++)
		if (egr_cidr_match(&from[i], &a))
			return true;
	return false;
}
