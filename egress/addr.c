/* Names and addresses: see addr.h for the contracts. */
#define _GNU_SOURCE
#include "egress/addr.h"

#include <arpa/inet.h>
#include <string.h>

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_hex(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

int egr_parse_uint(const char *s, size_t n, uint64_t min, uint64_t max, uint64_t *out)
{
	if (n == 0 || n > 20 || (n > 1 && s[0] == '0'))
		return -1;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (!is_digit(s[i]))
			return -1;
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	if (v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* a.b.c.d exactly: four parts, 1-3 digits, no leading zero, each <= 255 */
static bool parse_dotted_quad(const char *s, size_t n, unsigned char out[4])
{
	size_t i = 0;
	for (int part = 0; part < 4; part++) {
		size_t start = i;
		while (i < n && is_digit(s[i]))
			i++;
		uint64_t v;
		if (i - start > 3 || egr_parse_uint(s + start, i - start, 0, 255, &v) < 0)
			return false;
		out[part] = (unsigned char)v;
		if (part < 3) {
			if (i >= n || s[i] != '.')
				return false;
			i++;
		}
	}
	return i == n;
}

/* The WHATWG URL rule, which is also what inet_aton-style parsers do: when
 * the last label is a number (decimal, octal with a leading 0, or hex with
 * 0x), the whole host is read as an IPv4 address by somebody. */
static bool last_label_numeric(const char *s, size_t n)
{
	size_t start = n;
	while (start > 0 && s[start - 1] != '.')
		start--;
	const char *l = s + start;
	size_t ln = n - start;
	if (ln == 0)
		return false;
	if (ln >= 2 && l[0] == '0' && (l[1] == 'x' || l[1] == 'X')) {
		for (size_t i = 2; i < ln; i++)
			if (!is_hex(l[i]))
				return false;
		return true;
	}
	for (size_t i = 0; i < ln; i++)
		if (!is_digit(l[i]))
			return false;
	return true;
}

static int parse_ipv6_literal(const char *s, size_t n, struct egr_host *out, const char **why)
{
	/* s is the text inside the brackets */
	if (memchr(s, '%', n) != NULL) {
		*why = "IPv6 zone id";
		return -1;
	}
	char tmp[INET6_ADDRSTRLEN];
	if (n == 0 || n >= sizeof(tmp)) {
		*why = "bad IPv6 literal";
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		if (!is_hex(s[i]) && s[i] != ':' && s[i] != '.') {
			*why = "bad IPv6 literal";
			return -1;
		}
	}
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	struct in6_addr a6;
	if (inet_pton(AF_INET6, tmp, &a6) != 1) {
		*why = "bad IPv6 literal";
		return -1;
	}
	out->kind = EGR_HOST_IPV6;
	out->addr.family = 6;
	memcpy(out->addr.b, &a6, 16);
	egr_addr_format(&out->addr, out->name, sizeof(out->name));
	return 0;
}

int egr_host_parse(const char *s, size_t n, struct egr_host *out, const char **why)
{
	memset(out, 0, sizeof(*out));
	if (n == 0) {
		*why = "empty host";
		return -1;
	}
	if (s[0] == '[') {
		if (n < 2 || s[n - 1] != ']') {
			*why = "bad IPv6 literal";
			return -1;
		}
		return parse_ipv6_literal(s + 1, n - 2, out, why);
	}
	if (s[n - 1] == '.')
		n--;
	if (n == 0) {
		*why = "empty host";
		return -1;
	}
	if (n > EGR_HOST_MAX) {
		*why = "host name longer than 253 characters";
		return -1;
	}
	size_t label = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '.') {
			if (label == 0 || s[i - 1] == '-') {
				*why =
				    label == 0 ? "empty label in host" : "label ends with a hyphen";
				return -1;
			}
			label = 0;
		} else if (is_alpha(c) || is_digit(c) || c == '-') {
			if (label == 0 && c == '-') {
				*why = "label starts with a hyphen";
				return -1;
			}
			if (++label > 63) {
				*why = "label longer than 63 characters";
				return -1;
			}
		} else {
			*why = c == '%'   ? "IPv6 zone id or percent-encoding in host"
			       : c == ':' ? "IPv6 literal without brackets"
			                  : "bad character in host";
			return -1;
		}
		out->name[i] = lower(c);
	}
	if (label == 0 || s[n - 1] == '-') {
		*why = label == 0 ? "empty label in host" : "label ends with a hyphen";
		return -1;
	}
	out->name[n] = '\0';
	if (!last_label_numeric(s, n)) {
		out->kind = EGR_HOST_NAME;
		return 0;
	}
	if (parse_dotted_quad(s, n, out->addr.b)) {
		out->kind = EGR_HOST_IPV4;
		out->addr.family = 4;
		return 0;
	}
	out->kind = EGR_HOST_NUMERIC;
	return 0;
}

/* Split an authority into host text and optional port text. */
static int authority_split(const char *s, size_t n, size_t *host_n, const char **port_s,
                           size_t *port_n, bool *has_port, const char **why)
{
	if (memchr(s, '@', n) != NULL) {
		*why = "userinfo in authority";
		return -1;
	}
	size_t hn;
	if (n > 0 && s[0] == '[') {
		const char *close = memchr(s, ']', n);
		if (close == NULL) {
			*why = "bad IPv6 literal";
			return -1;
		}
		hn = (size_t)(close - s) + 1;
		if (hn < n && s[hn] != ':') {
			*why = "junk after IPv6 literal";
			return -1;
		}
	} else {
		const char *colon = memchr(s, ':', n);
		hn = colon != NULL ? (size_t)(colon - s) : n;
		if (colon != NULL && memchr(colon + 1, ':', n - hn - 1) != NULL) {
			*why = "IPv6 literal without brackets";
			return -1;
		}
	}
	*host_n = hn;
	*has_port = hn < n;
	*port_s = *has_port ? s + hn + 1 : s + n;
	*port_n = *has_port ? n - hn - 1 : 0;
	return 0;
}

static int parse_port(const char *s, size_t n, uint16_t *port, const char **why)
{
	uint64_t v;
	if (n == 0) {
		*why = "empty port";
		return -1;
	}
	if (egr_parse_uint(s, n, 1, 65535, &v) < 0) {
		*why = "bad port (decimal 1-65535)";
		return -1;
	}
	*port = (uint16_t)v;
	return 0;
}

int egr_authority_parse(const char *s, size_t n, uint16_t default_port, struct egr_host *host,
                        uint16_t *port, const char **why)
{
	size_t hn, pn;
	const char *ps;
	bool has_port;
	if (authority_split(s, n, &hn, &ps, &pn, &has_port, why) < 0)
		return -1;
	if (egr_host_parse(s, hn, host, why) < 0)
		return -1;
	if (has_port)
		return parse_port(ps, pn, port, why);
	if (default_port == 0) {
		*why = "port missing";
		return -1;
	}
	*port = default_port;
	return 0;
}

static const char *const host_aliases[] = {
    "host.containers.internal",
    "host.docker.internal",
    "gateway.docker.internal",
    "localhost",
};

bool egr_name_always_refused(const char *name)
{
	for (size_t i = 0; i < sizeof(host_aliases) / sizeof(host_aliases[0]); i++)
		if (strcmp(name, host_aliases[i]) == 0)
			return true;
	size_t n = strlen(name);
	static const char suffix[] = ".localhost";
	return n >= sizeof(suffix) - 1 && strcmp(name + n - (sizeof(suffix) - 1), suffix) == 0;
}

bool egr_wildcard_covers(const char *base, const char *name)
{
	size_t bn = strlen(base), nn = strlen(name);
	if (bn == 0 || nn < bn + 2)
		return false;
	size_t label = nn - bn - 1;
	return name[label] == '.' && strcmp(name + label + 1, base) == 0 &&
	       memchr(name, '.', label) == NULL;
}

/* A wildcard whose matches include a name that is always refused: a
 * mistake to show at start-up, not a rule that silently never applies. */
static bool wildcard_hits_refused(const char *base)
{
	if (egr_name_always_refused(base))
		return true;
	for (size_t i = 0; i < sizeof(host_aliases) / sizeof(host_aliases[0]); i++)
		if (egr_wildcard_covers(base, host_aliases[i]))
			return true;
	return false;
}

void egr_addr_unmap(struct egr_addr *a)
{
	static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	if (a->family == 6 && memcmp(a->b, mapped, 12) == 0) {
		unsigned char v4[4];
		memcpy(v4, a->b + 12, 4);
		memset(a->b, 0, sizeof(a->b));
		memcpy(a->b, v4, 4);
		a->family = 4;
	}
}

static bool prefix_match(const unsigned char *a, const unsigned char *net, unsigned bits)
{
	unsigned whole = bits / 8, rest = bits % 8;
	if (memcmp(a, net, whole) != 0)
		return false;
	if (rest == 0)
		return true;
	unsigned char mask = (unsigned char)(0xff << (8 - rest));
	return (a[whole] & mask) == (net[whole] & mask);
}

struct range {
	unsigned char net[16];
	unsigned bits;
	enum egr_addr_class cls;
	const char *name;
};

/* an address's bytes: V4(192, 0, 2, 1), V6(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1) */
#define V4(a, b, c, d)             a, b, c, d
#define G(x)                       (unsigned char)((x) >> 8), (unsigned char)((x)&0xff)
#define V6(a, b, c, d, e, f, g, h) G(a), G(b), G(c), G(d), G(e), G(f), G(g), G(h)

/* The table every address is judged by: the proxy at connect time, and the
 * proxy and `mcpgate check` for a listed IP literal. Its rows are IANA's
 * IPv4 and IPv6 Special-Purpose Address Registries (updated 2025-10-09) in
 * full, the blocks IANA's address space registries keep reserved or
 * multicast, the private ranges -allow-private opens, and the cloud
 * platforms' metadata and service addresses; docs/egress.md says where each
 * row comes from. Order does not matter: an address takes the strictest
 * class among the rows it falls in (platform, then special, then private),
 * and the longest of those rows names it. An address in no row is public. */
static const struct range v4_ranges[] = {
    /* IANA IPv4 Special-Purpose Address Registry */
    {{V4(0, 0, 0, 0)}, 8, EGR_ADDR_SPECIAL, "0.0.0.0/8 this network"},
    {{V4(0, 0, 0, 0)}, 32, EGR_ADDR_SPECIAL, "0.0.0.0/32 this host on this network"},
    {{V4(10, 0, 0, 0)}, 8, EGR_ADDR_PRIVATE, "10.0.0.0/8 private"},
    {{V4(100, 64, 0, 0)}, 10, EGR_ADDR_SPECIAL, "100.64.0.0/10 shared address space"},
    {{V4(127, 0, 0, 0)}, 8, EGR_ADDR_SPECIAL, "127.0.0.0/8 loopback"},
    {{V4(169, 254, 0, 0)}, 16, EGR_ADDR_SPECIAL, "169.254.0.0/16 link-local"},
    {{V4(172, 16, 0, 0)}, 12, EGR_ADDR_PRIVATE, "172.16.0.0/12 private"},
    {{V4(192, 0, 0, 0)}, 24, EGR_ADDR_SPECIAL, "192.0.0.0/24 IETF protocol assignments"},
    {{V4(192, 0, 0, 0)}, 29, EGR_ADDR_SPECIAL, "192.0.0.0/29 IPv4 service continuity"},
    {{V4(192, 0, 0, 8)}, 32, EGR_ADDR_SPECIAL, "192.0.0.8/32 IPv4 dummy address"},
    {{V4(192, 0, 0, 9)}, 32, EGR_ADDR_SPECIAL, "192.0.0.9/32 PCP anycast"},
    {{V4(192, 0, 0, 10)}, 32, EGR_ADDR_SPECIAL, "192.0.0.10/32 TURN anycast"},
    {{V4(192, 0, 0, 170)}, 32, EGR_ADDR_SPECIAL, "192.0.0.170/32 NAT64/DNS64 discovery"},
    {{V4(192, 0, 0, 171)}, 32, EGR_ADDR_SPECIAL, "192.0.0.171/32 NAT64/DNS64 discovery"},
    {{V4(192, 0, 2, 0)}, 24, EGR_ADDR_SPECIAL, "192.0.2.0/24 documentation"},
    {{V4(192, 31, 196, 0)}, 24, EGR_ADDR_SPECIAL, "192.31.196.0/24 AS112"},
    {{V4(192, 52, 193, 0)}, 24, EGR_ADDR_SPECIAL, "192.52.193.0/24 AMT"},
    {{V4(192, 88, 99, 0)}, 24, EGR_ADDR_SPECIAL, "192.88.99.0/24 6to4 relay anycast"},
    {{V4(192, 88, 99, 2)}, 32, EGR_ADDR_SPECIAL, "192.88.99.2/32 6a44 relay anycast"},
    {{V4(192, 168, 0, 0)}, 16, EGR_ADDR_PRIVATE, "192.168.0.0/16 private"},
    {{V4(192, 175, 48, 0)}, 24, EGR_ADDR_SPECIAL, "192.175.48.0/24 AS112 direct delegation"},
    {{V4(198, 18, 0, 0)}, 15, EGR_ADDR_SPECIAL, "198.18.0.0/15 benchmarking"},
    {{V4(198, 51, 100, 0)}, 24, EGR_ADDR_SPECIAL, "198.51.100.0/24 documentation"},
    {{V4(203, 0, 113, 0)}, 24, EGR_ADDR_SPECIAL, "203.0.113.0/24 documentation"},
    {{V4(240, 0, 0, 0)}, 4, EGR_ADDR_SPECIAL, "240.0.0.0/4 reserved"},
    {{V4(255, 255, 255, 255)}, 32, EGR_ADDR_SPECIAL, "255.255.255.255 broadcast"},
    /* IANA IPv4 Address Space Registry */
    {{V4(224, 0, 0, 0)}, 4, EGR_ADDR_SPECIAL, "224.0.0.0/4 multicast"},
    /* cloud platforms and orchestrators */
    {{V4(169, 254, 169, 254)},
     32,
     EGR_ADDR_PLATFORM,
     "169.254.169.254/32 instance metadata (AWS, Azure, GCP, Oracle, IBM, DigitalOcean, Hetzner, "
     "Huawei, OpenStack, Akamai)"},
    {{V4(169, 254, 169, 253)}, 32, EGR_ADDR_PLATFORM, "169.254.169.253/32 AWS DNS"},
    {{V4(169, 254, 169, 123)}, 32, EGR_ADDR_PLATFORM, "169.254.169.123/32 AWS time sync"},
    {{V4(169, 254, 169, 252)}, 32, EGR_ADDR_PLATFORM, "169.254.169.252/32 GKE metadata server"},
    {{V4(169, 254, 170, 2)}, 32, EGR_ADDR_PLATFORM, "169.254.170.2/32 AWS ECS task credentials"},
    {{V4(169, 254, 170, 23)}, 32, EGR_ADDR_PLATFORM, "169.254.170.23/32 AWS EKS Pod Identity"},
    {{V4(169, 254, 0, 23)}, 32, EGR_ADDR_PLATFORM, "169.254.0.23/32 Tencent Cloud metadata"},
    {{V4(169, 254, 42, 42)}, 32, EGR_ADDR_PLATFORM, "169.254.42.42/32 Scaleway metadata"},
    {{V4(169, 254, 20, 10)}, 32, EGR_ADDR_PLATFORM, "169.254.20.10/32 Kubernetes NodeLocal DNS"},
    {{V4(168, 63, 129, 16)}, 32, EGR_ADDR_PLATFORM, "168.63.129.16/32 Azure WireServer"},
    {{V4(100, 100, 100, 200)}, 32, EGR_ADDR_PLATFORM, "100.100.100.200/32 Alibaba Cloud metadata"},
    {{V4(100, 100, 100, 100)}, 32, EGR_ADDR_PLATFORM, "100.100.100.100/32 Tailscale service"},
    {{V4(192, 0, 0, 192)}, 32, EGR_ADDR_PLATFORM, "192.0.0.192/32 Oracle Cloud Classic metadata"},
};

static const struct range v6_ranges[] = {
    /* IANA IPv6 Special-Purpose Address Registry (::ffff:0:0/96, IPv4-mapped,
     * is unmapped and judged as IPv4 before this table is read) */
    {{V6(0, 0, 0, 0, 0, 0, 0, 0)}, 128, EGR_ADDR_SPECIAL, ":: unspecified"},
    {{V6(0, 0, 0, 0, 0, 0, 0, 1)}, 128, EGR_ADDR_SPECIAL, "::1 loopback"},
    {{V6(0x64, 0xff9b, 0, 0, 0, 0, 0, 0)}, 96, EGR_ADDR_SPECIAL, "64:ff9b::/96 NAT64"},
    {{V6(0x64, 0xff9b, 1, 0, 0, 0, 0, 0)}, 48, EGR_ADDR_SPECIAL, "64:ff9b:1::/48 NAT64"},
    {{V6(0x100, 0, 0, 0, 0, 0, 0, 0)}, 64, EGR_ADDR_SPECIAL, "100::/64 discard-only"},
    {{V6(0x100, 0, 0, 1, 0, 0, 0, 0)}, 64, EGR_ADDR_SPECIAL, "100:0:0:1::/64 dummy prefix"},
    {{V6(0x2001, 0, 0, 0, 0, 0, 0, 0)},
     23,
     EGR_ADDR_SPECIAL,
     "2001::/23 IETF protocol assignments"},
    {{V6(0x2001, 0, 0, 0, 0, 0, 0, 0)}, 32, EGR_ADDR_SPECIAL, "2001::/32 Teredo"},
    {{V6(0x2001, 1, 0, 0, 0, 0, 0, 1)}, 128, EGR_ADDR_SPECIAL, "2001:1::1 PCP anycast"},
    {{V6(0x2001, 1, 0, 0, 0, 0, 0, 2)}, 128, EGR_ADDR_SPECIAL, "2001:1::2 TURN anycast"},
    {{V6(0x2001, 1, 0, 0, 0, 0, 0, 3)}, 128, EGR_ADDR_SPECIAL, "2001:1::3 DNS-SD SRP anycast"},
    {{V6(0x2001, 2, 0, 0, 0, 0, 0, 0)}, 48, EGR_ADDR_SPECIAL, "2001:2::/48 benchmarking"},
    {{V6(0x2001, 3, 0, 0, 0, 0, 0, 0)}, 32, EGR_ADDR_SPECIAL, "2001:3::/32 AMT"},
    {{V6(0x2001, 4, 0x112, 0, 0, 0, 0, 0)}, 48, EGR_ADDR_SPECIAL, "2001:4:112::/48 AS112"},
    {{V6(0x2001, 0x10, 0, 0, 0, 0, 0, 0)}, 28, EGR_ADDR_SPECIAL, "2001:10::/28 ORCHID"},
    {{V6(0x2001, 0x20, 0, 0, 0, 0, 0, 0)}, 28, EGR_ADDR_SPECIAL, "2001:20::/28 ORCHIDv2"},
    {{V6(0x2001, 0x30, 0, 0, 0, 0, 0, 0)}, 28, EGR_ADDR_SPECIAL, "2001:30::/28 drone remote ID"},
    {{V6(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0)}, 32, EGR_ADDR_SPECIAL, "2001:db8::/32 documentation"},
    {{V6(0x2002, 0, 0, 0, 0, 0, 0, 0)}, 16, EGR_ADDR_SPECIAL, "2002::/16 6to4"},
    {{V6(0x2620, 0x4f, 0x8000, 0, 0, 0, 0, 0)},
     48,
     EGR_ADDR_SPECIAL,
     "2620:4f:8000::/48 AS112 direct delegation"},
    {{V6(0x3fff, 0, 0, 0, 0, 0, 0, 0)}, 20, EGR_ADDR_SPECIAL, "3fff::/20 documentation"},
    {{V6(0x5f00, 0, 0, 0, 0, 0, 0, 0)}, 16, EGR_ADDR_SPECIAL, "5f00::/16 SRv6 SIDs"},
    {{V6(0xfc00, 0, 0, 0, 0, 0, 0, 0)}, 7, EGR_ADDR_PRIVATE, "fc00::/7 unique local"},
    {{V6(0xfe80, 0, 0, 0, 0, 0, 0, 0)}, 10, EGR_ADDR_SPECIAL, "fe80::/10 link-local"},
    /* IANA IPv6 Address Space Registry: everything outside 2000::/3 global
     * unicast, fc00::/7 and fe80::/10 is reserved or multicast */
    {{V6(0, 0, 0, 0, 0, 0, 0, 0)}, 8, EGR_ADDR_SPECIAL, "::/8 reserved"},
    {{V6(0, 0, 0, 0, 0, 0, 0, 0)}, 96, EGR_ADDR_SPECIAL, "::/96 IPv4-compatible"},
    {{V6(0, 0, 0, 0, 0xffff, 0, 0, 0)}, 96, EGR_ADDR_SPECIAL, "::ffff:0:0:0/96 IPv4-translated"},
    {{V6(0x100, 0, 0, 0, 0, 0, 0, 0)}, 8, EGR_ADDR_SPECIAL, "100::/8 reserved"},
    {{V6(0x200, 0, 0, 0, 0, 0, 0, 0)}, 7, EGR_ADDR_SPECIAL, "200::/7 reserved"},
    {{V6(0x400, 0, 0, 0, 0, 0, 0, 0)}, 6, EGR_ADDR_SPECIAL, "400::/6 reserved"},
    {{V6(0x800, 0, 0, 0, 0, 0, 0, 0)}, 5, EGR_ADDR_SPECIAL, "800::/5 reserved"},
    {{V6(0x1000, 0, 0, 0, 0, 0, 0, 0)}, 4, EGR_ADDR_SPECIAL, "1000::/4 reserved"},
    {{V6(0x4000, 0, 0, 0, 0, 0, 0, 0)}, 3, EGR_ADDR_SPECIAL, "4000::/3 reserved"},
    {{V6(0x6000, 0, 0, 0, 0, 0, 0, 0)}, 3, EGR_ADDR_SPECIAL, "6000::/3 reserved"},
    {{V6(0x8000, 0, 0, 0, 0, 0, 0, 0)}, 3, EGR_ADDR_SPECIAL, "8000::/3 reserved"},
    {{V6(0xa000, 0, 0, 0, 0, 0, 0, 0)}, 3, EGR_ADDR_SPECIAL, "a000::/3 reserved"},
    {{V6(0xc000, 0, 0, 0, 0, 0, 0, 0)}, 3, EGR_ADDR_SPECIAL, "c000::/3 reserved"},
    {{V6(0xe000, 0, 0, 0, 0, 0, 0, 0)}, 4, EGR_ADDR_SPECIAL, "e000::/4 reserved"},
    {{V6(0xf000, 0, 0, 0, 0, 0, 0, 0)}, 5, EGR_ADDR_SPECIAL, "f000::/5 reserved"},
    {{V6(0xf800, 0, 0, 0, 0, 0, 0, 0)}, 6, EGR_ADDR_SPECIAL, "f800::/6 reserved"},
    {{V6(0xfe00, 0, 0, 0, 0, 0, 0, 0)}, 9, EGR_ADDR_SPECIAL, "fe00::/9 reserved"},
    {{V6(0xfec0, 0, 0, 0, 0, 0, 0, 0)}, 10, EGR_ADDR_SPECIAL, "fec0::/10 site-local"},
    {{V6(0xff00, 0, 0, 0, 0, 0, 0, 0)}, 8, EGR_ADDR_SPECIAL, "ff00::/8 multicast"},
    /* cloud platforms */
    {{V6(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0)},
     32,
     EGR_ADDR_PLATFORM,
     "fd00:ec2::/32 AWS instance services (metadata, DNS, time, EKS Pod Identity)"},
    {{V6(0xfd20, 0xce, 0, 0, 0, 0, 0, 0x254)}, 128, EGR_ADDR_PLATFORM, "fd20:ce::254 GCP metadata"},
    {{V6(0xfd00, 0xc1, 0, 0, 0, 0, 0xa9fe, 0xa9fe)},
     128,
     EGR_ADDR_PLATFORM,
     "fd00:c1::a9fe:a9fe Oracle Cloud metadata"},
    {{V6(0xfd00, 0xa9fe, 0xa9fe, 0, 0, 0, 0, 1)},
     128,
     EGR_ADDR_PLATFORM,
     "fd00:a9fe:a9fe::1 Akamai metadata"},
    {{V6(0xfd00, 0x42, 0, 0, 0, 0, 0, 0x42)},
     128,
     EGR_ADDR_PLATFORM,
     "fd00:42::42 Scaleway metadata"},
    {{V6(0xfd00, 0x100, 0, 0, 0, 0, 0x100, 0x200)},
     128,
     EGR_ADDR_PLATFORM,
     "fd00:100::100:200 Alibaba Cloud metadata"},
    {{V6(0xfe80, 0, 0, 0, 0, 0, 0xa9fe, 0xa9fe)},
     128,
     EGR_ADDR_PLATFORM,
     "fe80::a9fe:a9fe OpenStack metadata"},
};

#undef V4
#undef G
#undef V6

enum egr_addr_class egr_addr_classify(const struct egr_addr *in, const char **range)
{
	struct egr_addr a = *in;
	egr_addr_unmap(&a);
	if (a.family != 4 && a.family != 6) {
		*range = "unknown address family";
		return EGR_ADDR_SPECIAL;
	}
	const struct range *r = a.family == 4 ? v4_ranges : v6_ranges;
	size_t n = a.family == 4 ? sizeof(v4_ranges) / sizeof(v4_ranges[0])
	                         : sizeof(v6_ranges) / sizeof(v6_ranges[0]);
	const struct range *best = NULL;
	for (size_t i = 0; i < n; i++) {
		if (!prefix_match(a.b, r[i].net, r[i].bits))
			continue;
		if (best == NULL || r[i].cls > best->cls ||
		    (r[i].cls == best->cls && r[i].bits > best->bits))
			best = &r[i];
	}
	if (best == NULL) {
		*range = "public";
		return EGR_ADDR_PUBLIC;
	}
	*range = best->name;
	return best->cls;
}

void egr_addr_format(const struct egr_addr *a, char *buf, size_t size)
{
	if (inet_ntop(a->family == 4 ? AF_INET : AF_INET6, a->b, buf, (socklen_t)size) == NULL &&
	    size > 0)
		buf[0] = '\0';
}

int egr_cidr_parse(const char *s, size_t n, struct egr_cidr *out, const char **why)
{
	memset(out, 0, sizeof(*out));
	const char *slash = memchr(s, '/', n);
	size_t an = slash != NULL ? (size_t)(slash - s) : n;
	*why = "bad address (want ADDR or ADDR/PREFIX)";
	if (an == 0)
		return -1;
	unsigned maxbits;
	if (parse_dotted_quad(s, an, out->addr.b)) {
		out->addr.family = 4;
		maxbits = 32;
	} else {
		struct egr_host h;
		const char *ignored;
		const char *a = s;
		size_t len = an;
		if (len >= 2 && a[0] == '[' && a[len - 1] == ']') {
			a++;
			len -= 2;
		}
		if (parse_ipv6_literal(a, len, &h, &ignored) < 0)
			return -1;
		out->addr = h.addr;
		maxbits = 128;
	}
	uint64_t bits = maxbits;
	if (slash != NULL && egr_parse_uint(slash + 1, n - an - 1, 0, maxbits, &bits) < 0) {
		*why = "bad prefix length";
		return -1;
	}
	out->prefix = (unsigned)bits;
	if (out->addr.family == 6 && out->prefix >= 96) {
		struct egr_addr a = out->addr;
		egr_addr_unmap(&a);
		if (a.family == 4) {
			out->addr = a;
			out->prefix -= 96;
		}
	}
	/* clear the bits past the prefix so matching is a plain compare */
	unsigned nbytes = out->addr.family == 4 ? 4 : 16;
	for (unsigned i = 0; i < nbytes; i++) {
		unsigned keep = out->prefix > i * 8 ? out->prefix - i * 8 : 0;
		if (keep < 8)
			out->addr.b[i] &= (unsigned char)(0xff << (8 - keep));
	}
	return 0;
}

bool egr_cidr_match(const struct egr_cidr *c, const struct egr_addr *in)
{
	struct egr_addr a = *in;
	egr_addr_unmap(&a);
	return a.family == c->addr.family && prefix_match(a.b, c->addr.b, c->prefix);
}

/* The host of a wildcard entry, "*.NAME" (hn bytes at s): NAME must be a
 * name of two labels or more (not an address, not numeric-looking). */
static int wildcard_parse(const char *s, size_t hn, struct egr_allow *out, const char **why)
{
	if (hn < 2 || s[1] != '.' || memchr(s + 1, '*', hn - 1) != NULL) {
		*why = "a wildcard is \"*.\" and a name, the star a whole first label "
		       "(*.example.com)";
		return -1;
	}
	if (egr_host_parse(s + 2, hn - 2, &out->host, why) < 0)
		return -1;
	switch (out->host.kind) {
	case EGR_HOST_NAME:
		break;
	case EGR_HOST_IPV4:
	case EGR_HOST_IPV6:
	case EGR_HOST_NUMERIC:
		*why = "a wildcard matches names, never an IP address or a numeric-looking name";
		return -1;
	}
	if (strchr(out->host.name, '.') == NULL) {
		*why = "a wildcard over a single label is over a public suffix (*.com): give two "
		       "labels or more after \"*.\"";
		return -1;
	}
	if (wildcard_hits_refused(out->host.name)) {
		*why = "a wildcard that matches the runtime's host alias or localhost";
		return -1;
	}
	out->wildcard = true;
	return 0;
}

int egr_allow_parse(const char *s, bool private_ok, struct egr_allow *out, const char **why)
{
	memset(out, 0, sizeof(*out));
	size_t n = strlen(s), hn, pn;
	const char *ps;
	bool has_port;
	if (authority_split(s, n, &hn, &ps, &pn, &has_port, why) < 0)
		return -1;
	if (hn > 0 && s[0] == '*') {
		if (wildcard_parse(s, hn, out, why) < 0)
			return -1;
	} else if (memchr(s, '*', hn) != NULL) {
		*why = "a wildcard may only be the whole first label (*.example.com)";
		return -1;
	} else if (egr_host_parse(s, hn, &out->host, why) < 0) {
		return -1;
	}
	if (has_port && parse_port(ps, pn, &out->port, why) < 0)
		return -1;
	out->private_ok = private_ok;
	if (out->wildcard)
		return 0;
	switch (out->host.kind) {
	case EGR_HOST_NUMERIC:
		*why = "numeric-looking name (write an IPv4 address as a.b.c.d)";
		return -1;
	case EGR_HOST_NAME:
		if (egr_name_always_refused(out->host.name)) {
			*why = "the runtime's host alias and localhost are always refused";
			return -1;
		}
		return 0;
	case EGR_HOST_IPV4:
	case EGR_HOST_IPV6:
		switch (egr_addr_classify(&out->host.addr, &out->range)) {
		case EGR_ADDR_PLATFORM:
			*why = "a cloud platform's metadata or service address is always refused";
			return -1;
		case EGR_ADDR_SPECIAL:
			*why = "a special address is always refused";
			return -1;
		case EGR_ADDR_PRIVATE:
			if (!private_ok) {
				*why = "a private address needs -allow-private";
				return -1;
			}
			return 0;
		case EGR_ADDR_PUBLIC:
			return 0;
		}
	}
	*why = "bad host";
	return -1;
}

/* Whether entry e names host h, ports aside */
static bool entry_names(const struct egr_allow *e, const struct egr_host *h)
{
	if (e->wildcard)
		return h->kind == EGR_HOST_NAME && egr_wildcard_covers(e->host.name, h->name);
	return e->host.kind == h->kind && strcmp(e->host.name, h->name) == 0;
}

enum egr_match egr_allow_match(const struct egr_allow *list, size_t n, const struct egr_host *h,
                               uint16_t port, bool *private_ok)
{
	enum egr_match best = EGR_MATCH_NONE;
	*private_ok = false;
	for (size_t i = 0; i < n; i++) {
		const struct egr_allow *e = &list[i];
		if (!entry_names(e, h))
			continue;
		if (e->port == port || (e->port == 0 && (port == 80 || port == 443))) {
			best = EGR_MATCH_OK;
			*private_ok = *private_ok || e->private_ok;
		} else if (best == EGR_MATCH_NONE) {
			best = EGR_MATCH_PORT;
		}
	}
	return best;
}

int egr_addrs_check(const struct egr_policy *pol, bool private_ok, struct egr_addr *addrs, size_t n,
                    size_t *bad, const char **reason, const char **range)
{
	for (size_t i = 0; i < n; i++) {
		egr_addr_unmap(&addrs[i]);
		*bad = i;
		switch (egr_addr_classify(&addrs[i], range)) {
		case EGR_ADDR_PLATFORM:
			*reason = "platform address";
			return -1;
		case EGR_ADDR_SPECIAL:
			*reason = "special address";
			return -1;
		case EGR_ADDR_PRIVATE:
			if (!private_ok) {
				*reason = "private address (not -allow-private)";
				return -1;
			}
			break;
		case EGR_ADDR_PUBLIC:
			break;
		}
		for (size_t j = 0; j < pol->nown; j++) {
			if (egr_cidr_match(&pol->own[j], &addrs[i])) {
				*reason = "own address";
				*range = "the proxy's own address";
				return -1;
			}
		}
		for (size_t j = 0; j < pol->ndeny; j++) {
			if (egr_cidr_match(&pol->deny[j], &addrs[i])) {
				*reason = "denied address";
				*range = "-deny-address";
				return -1;
			}
		}
	}
	return 0;
}
