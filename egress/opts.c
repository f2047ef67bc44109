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
    "\n"
    "The static allowlisting HTTP proxy of mcpgate: CONNECT host:port and plain\n"
    "http://host[:port]/path requests to listed destinations only. One JSON line\n"
    "per attempt and per closed tunnel on standard output; diagnostics on stderr.\n"
    "\n"
    "  -listen ADDR:PORT          where to listen: a.b.c.d:PORT or [IPv6]:PORT (required)\n"
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

static int parse_listen(const char *s, struct egr_opts *o, const char **why)
{
	struct egr_host h;
	uint16_t port;
	if (egr_authority_parse(s, strlen(s), 0, &h, &port, why) < 0)
		return -1;
	memset(&o->listen, 0, sizeof(o->listen));
	if (h.kind == EGR_HOST_IPV4) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&o->listen;
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		memcpy(&sin->sin_addr, h.addr.b, 4);
		o->listen_len = sizeof(*sin);
	} else if (h.kind == EGR_HOST_IPV6) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&o->listen;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		memcpy(&sin6->sin6_addr, h.addr.b, 16);
		o->listen_len = sizeof(*sin6);
	} else {
		*why = "want an IP address: a.b.c.d:PORT or [IPv6]:PORT";
		return -1;
	}
	o->have_listen = true;
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
		             strcmp(opt, "-deny-address") == 0;
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
		} else if (strcmp(opt, "-deny-address") == 0) {
			o->deny = grow(o->deny, o->ndeny, sizeof(*o->deny));
			if (egr_cidr_parse(val, strlen(val), &o->deny[o->ndeny], &why) < 0)
				return fail(errbuf, errsz, opt, val, why);
			o->ndeny++;
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
	if (!o->have_listen)
		return fail(errbuf, errsz, "-listen", NULL, "is required");
	if (o->lim.max_request_line + 4 > o->lim.max_header_bytes)
		return fail(errbuf, errsz, "-max-request-line", NULL,
		            "must be smaller than -max-header-bytes");
	return 0;
}

void egr_opts_free(struct egr_opts *o)
{
	free(o->allow);
	free(o->deny);
	o->allow = NULL;
	o->deny = NULL;
	o->nallow = o->ndeny = 0;
}
