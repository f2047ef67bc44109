/* Names and addresses for mcpgate-egress: the canonical host, numeric-looking
 * names, the address classifier, deny ranges and the allowlist.
 *
 * Everything here is pure (no I/O, no allocation), so the unit tests and the
 * fuzz target exercise exactly what the proxy runs. Text passed in is
 * (pointer, length), never assumed NUL-terminated. */
#ifndef MG_EGRESS_ADDR_H
#define MG_EGRESS_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EGR_HOST_MAX 253 /* a DNS name in text form, without the trailing dot */

enum egr_host_kind {
	EGR_HOST_NAME,    /* letters-digits-hyphen labels */
	EGR_HOST_IPV4,    /* a strict dotted quad a.b.c.d, each part 0-255, no leading zeros */
	EGR_HOST_IPV6,    /* a bracketed IPv6 literal without a zone id */
	EGR_HOST_NUMERIC, /* looks like a number to some resolver (2130706433, 0x7f.1, 127.1) */
};

/* An address: family is 4 or 6; an IPv4 address lives in b[0..3]. */
struct egr_addr {
	int family;
	unsigned char b[16];
};

/* A host as the proxy judges it. `name` is the canonical text: lower-case,
 * one trailing dot stripped; an IPv6 literal in its compressed form without
 * brackets. For EGR_HOST_IPV4/IPV6 `addr` holds the address. */
struct egr_host {
	enum egr_host_kind kind;
	char name[EGR_HOST_MAX + 1];
	struct egr_addr addr;
};

/* Parse a host as it appears in an authority: a name, a dotted quad, or
 * "[IPv6]". Returns 0 and fills *out (a numeric-looking name is a success of
 * kind EGR_HOST_NUMERIC: syntax is fine, policy refuses it), or -1 with *why
 * set to a static reason (bad character, empty label, zone id, too long). */
int egr_host_parse(const char *s, size_t n, struct egr_host *out, const char **why);

/* Parse "host:port", "host" or "[v6]:port". When there is no port,
 * default_port is used, or the authority is refused when default_port is 0.
 * Userinfo ("user@host") is refused. Ports are decimal 1-65535 without
 * leading zeros. Returns 0 or -1 with *why. */
int egr_authority_parse(const char *s, size_t n, uint16_t default_port, struct egr_host *host,
                        uint16_t *port, const char **why);

/* Strict decimal: digits only, no sign, no space, no leading zero (unless the
 * number is 0), value within [min, max]. Returns 0 or -1. */
int egr_parse_uint(const char *s, size_t n, uint64_t min, uint64_t max, uint64_t *out);

/* Names that are refused whatever the allowlist says: the container
 * runtimes' aliases for the host (host.containers.internal,
 * host.docker.internal, gateway.docker.internal) and localhost with its
 * subdomains. Takes a canonical name. */
bool egr_name_always_refused(const char *name);

/* Whether the wildcard *.base matches name, both canonical names: name is
 * exactly one label, a dot and base. */
bool egr_wildcard_covers(const char *base, const char *name);

/* In order of strictness: an address in several ranges takes the strictest. */
enum egr_addr_class {
	EGR_ADDR_PUBLIC,
	EGR_ADDR_PRIVATE,  /* 10/8, 172.16/12, 192.168/16, fc00::/7: only with
	                    * -allow-private */
	EGR_ADDR_SPECIAL,  /* IANA's special-purpose, reserved and multicast ranges: always
	                    * refused */
	EGR_ADDR_PLATFORM, /* a cloud platform's metadata or service address: always refused,
	                    * even inside a private range */
};

/* IPv4-mapped IPv6 (::ffff:a.b.c.d) becomes the IPv4 address; anything else
 * is unchanged. The proxy unmaps before it classifies and connects. */
void egr_addr_unmap(struct egr_addr *a);

/* Classify an address by the one table of addr.c (unmapped first by the
 * caller or not: mapped addresses are unmapped here too, and judged as the
 * IPv4 address they carry). Every other IPv6 form that carries an IPv4
 * address (IPv4-compatible, IPv4-translated, NAT64, 6to4, Teredo) is
 * special in its own right, whatever it carries. *range names the row that
 * decided, for records, e.g. "127.0.0.0/8 loopback", or "public"; it is
 * static. Any destination's addresses, an HTTP host's or a TCP one's, are
 * judged by this. */
enum egr_addr_class egr_addr_classify(const struct egr_addr *a, const char **range);

/* "1.2.3.4" or "2001:db8::1" into buf (at least 46 bytes). */
void egr_addr_format(const struct egr_addr *a, char *buf, size_t size);

/* ADDR or ADDR/PREFIX, IPv4 or IPv6 (brackets optional); bits past the prefix
 * are cleared. An IPv4-mapped IPv6 range with prefix >= 96 is stored as
 * IPv4. Returns 0 or -1 with *why. */
struct egr_cidr {
	struct egr_addr addr;
	unsigned prefix;
};
int egr_cidr_parse(const char *s, size_t n, struct egr_cidr *out, const char **why);
bool egr_cidr_match(const struct egr_cidr *c, const struct egr_addr *a);

/* One -allow or -allow-private entry. port 0 means 80 and 443. A wildcard
 * entry (*.NAME) has wildcard set and host the canonical NAME after "*.",
 * always of kind EGR_HOST_NAME. */
struct egr_allow {
	struct egr_host host;
	uint16_t port;
	bool private_ok;
	bool wildcard;
	const char *range; /* an IP literal's range (egr_addr_classify), also when it was
	                    * refused; NULL for a name */
};

/* Parse HOST[:PORT] or *.NAME[:PORT] as given on the command line. A
 * numeric-looking name, an always-refused name, or an IP literal that is
 * special or a platform's (or private without private_ok) is refused here,
 * so a mistake shows at start-up; out->range then names its range. A wildcard is "*." and a name of two labels or more,
 * the star a whole first label: "*", "*.", "*x.com", "**.x.com",
 * "a.*.com", a wildcard over an address or a numeric-looking name, one over
 * a single label ("*.com": every single label is a public suffix) and one
 * that would match an always-refused name ("*.docker.internal") are
 * refused. Returns 0 or -1 with *why. */
int egr_allow_parse(const char *s, bool private_ok, struct egr_allow *out, const char **why);

enum egr_match {
	EGR_MATCH_NONE, /* the host is not listed */
	EGR_MATCH_PORT, /* the host is listed, but not with this port */
	EGR_MATCH_OK,   /* listed; *private_ok says whether private ranges may follow */
};
/* Match of canonical host text and port. A plain entry matches its host
 * exactly (kind and text). A wildcard *.NAME matches a host of kind
 * EGR_HOST_NAME that is one label and a dot before NAME: not NAME itself,
 * not two labels down, never an IP literal. An entry without a port matches
 * 80 and 443. When several entries match, private ranges are allowed if any
 * of them allows them. */
enum egr_match egr_allow_match(const struct egr_allow *list, size_t n, const struct egr_host *h,
                               uint16_t port, bool *private_ok);

/* The policy an address must pass after the name was allowed. */
struct egr_policy {
	const struct egr_cidr *deny; /* -deny-address entries */
	size_t ndeny;
	const struct egr_cidr *own; /* the proxy's own interface addresses */
	size_t nown;
};

/* Judge every address of a destination: refuse when any one is special, a
 * platform's, private without private_ok, or inside a deny range. Returns
 * 0 when all pass, or -1 with *bad the index of the first refused address
 * and *reason a static text ("special address", "platform address",
 * "private address (not -allow-private)", "own address", "denied
 * address") and *range the range it fell in. Addresses are unmapped in
 * place. */
int egr_addrs_check(const struct egr_policy *pol, bool private_ok, struct egr_addr *addrs, size_t n,
                    size_t *bad, const char **reason, const char **range);

#endif
