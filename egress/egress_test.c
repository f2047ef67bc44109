/* Unit tests of mcpgate-egress: canonical hosts, numeric-looking names,
 * every special range, allowlist matching, each parser refusal, chunked
 * framing, the forwarded header, SNI, records and options. Tables first,
 * so a new case is a new line. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress/egress.h"
#include "internal/base/testing.h"

static const struct egr_limits lim = {16384, 8192};

/* ---- hosts ---------------------------------------------------------------- */

struct host_case {
	const char *in;
	int ok; /* 0: refused (400) */
	enum egr_host_kind kind;
	const char *canon;
};

static const struct host_case host_cases[] = {
    {"Example.COM", 1, EGR_HOST_NAME, "example.com"},
    {"example.com.", 1, EGR_HOST_NAME, "example.com"},
    {"example.com..", 0, EGR_HOST_NAME, NULL},
    {".example.com", 0, EGR_HOST_NAME, NULL},
    {"a..b", 0, EGR_HOST_NAME, NULL},
    {"xn--bcher-kva.example", 1, EGR_HOST_NAME, "xn--bcher-kva.example"},
    {"-a.example", 0, EGR_HOST_NAME, NULL},
    {"a-.example", 0, EGR_HOST_NAME, NULL},
    {"a_b.example", 0, EGR_HOST_NAME, NULL},
    {"b\xc3\xbc"
     "cher.example",
     0, EGR_HOST_NAME, NULL},
    {"exa mple.com", 0, EGR_HOST_NAME, NULL},
    {"example.com%2f", 0, EGR_HOST_NAME, NULL},
    {"", 0, EGR_HOST_NAME, NULL},
    {".", 0, EGR_HOST_NAME, NULL},
    {"1.2.3.4", 1, EGR_HOST_IPV4, "1.2.3.4"},
    {"1.2.3.4.", 1, EGR_HOST_IPV4, "1.2.3.4"},
    {"255.255.255.255", 1, EGR_HOST_IPV4, "255.255.255.255"},
    {"2130706433", 1, EGR_HOST_NUMERIC, "2130706433"},
    {"0x7f.1", 1, EGR_HOST_NUMERIC, "0x7f.1"},
    {"0X7F.0.0.1", 1, EGR_HOST_NUMERIC, "0x7f.0.0.1"},
    {"0177.0.0.1", 1, EGR_HOST_NUMERIC, "0177.0.0.1"},
    {"127.1", 1, EGR_HOST_NUMERIC, "127.1"},
    {"127.0.1", 1, EGR_HOST_NUMERIC, "127.0.1"},
    {"0x7f000001", 1, EGR_HOST_NUMERIC, "0x7f000001"},
    {"256.1.1.1", 1, EGR_HOST_NUMERIC, "256.1.1.1"},
    {"1.2.3.4.5", 1, EGR_HOST_NUMERIC, "1.2.3.4.5"},
    {"01.2.3.4", 1, EGR_HOST_NUMERIC, "01.2.3.4"},
    {"foo.0x10", 1, EGR_HOST_NUMERIC, "foo.0x10"},
    {"foo.123", 1, EGR_HOST_NUMERIC, "foo.123"},
    {"0x", 1, EGR_HOST_NUMERIC, "0x"},
    {"123.example", 1, EGR_HOST_NAME, "123.example"},
    {"0x7f.example", 1, EGR_HOST_NAME, "0x7f.example"},
    {"deadbeef", 1, EGR_HOST_NAME, "deadbeef"},
    {"[::1]", 1, EGR_HOST_IPV6, "::1"},
    {"[2001:DB8:0:0::1]", 1, EGR_HOST_IPV6, "2001:db8::1"},
    {"[::ffff:127.0.0.1]", 1, EGR_HOST_IPV6, "::ffff:127.0.0.1"},
    {"[fe80::1%eth0]", 0, EGR_HOST_IPV6, NULL},
    {"[fe80::1%25eth0]", 0, EGR_HOST_IPV6, NULL},
    {"[v1.fe]", 0, EGR_HOST_IPV6, NULL},
    {"[1.2.3.4]", 0, EGR_HOST_IPV6, NULL},
    {"[::1", 0, EGR_HOST_IPV6, NULL},
    {"::1", 0, EGR_HOST_IPV6, NULL},
    {"[]", 0, EGR_HOST_IPV6, NULL},
};

static void test_hosts(void)
{
	for (size_t i = 0; i < sizeof(host_cases) / sizeof(host_cases[0]); i++) {
		const struct host_case *t = &host_cases[i];
		struct egr_host h;
		const char *why = NULL;
		int r = egr_host_parse(t->in, strlen(t->in), &h, &why);
		if (!t->ok) {
			T_OK(r < 0 && why != NULL, "host \"%s\" is refused (%s)", t->in,
			     why != NULL ? why : "-");
			continue;
		}
		T_OK(r == 0 && h.kind == t->kind && strcmp(h.name, t->canon) == 0,
		     "host \"%s\" -> kind %d \"%s\"", t->in, (int)t->kind, t->canon);
	}
	/* 253 characters pass, 254 do not; a label of 63 passes, 64 does not */
	char longname[300];
	memset(longname, 'a', sizeof(longname));
	for (size_t i = 63; i < sizeof(longname); i += 64)
		longname[i] = '.';
	struct egr_host h;
	const char *why;
	T_OK(egr_host_parse(longname, 253, &h, &why) == 0, "a 253-character name passes");
	T_OK(egr_host_parse(longname, 254, &h, &why) < 0, "a 254-character name is refused");
	longname[253] = '.';
	T_OK(egr_host_parse(longname, 254, &h, &why) == 0,
	     "253 characters and a trailing dot pass");
	char label[70];
	memset(label, 'b', sizeof(label));
	T_OK(egr_host_parse(label, 63, &h, &why) == 0, "a 63-character label passes");
	T_OK(egr_host_parse(label, 64, &h, &why) < 0, "a 64-character label is refused");
}

static void test_refused_names(void)
{
	static const char *const refused[] = {"host.containers.internal", "host.docker.internal",
	                                      "gateway.docker.internal", "localhost",
	                                      "a.localhost"};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		T_OK(egr_name_always_refused(refused[i]), "%s is always refused", refused[i]);
	T_OK(!egr_name_always_refused("localhost.example"),
	     "localhost.example is an ordinary name");
	T_OK(!egr_name_always_refused("xlocalhost"), "xlocalhost is an ordinary name");
}

/* ---- authorities and numbers --------------------------------------------- */

struct auth_case {
	const char *in;
	uint16_t def;
	int ok;
	const char *host;
	uint16_t port;
};

static const struct auth_case auth_cases[] = {
    {"example.com:443", 0, 1, "example.com", 443},
    {"EXAMPLE.com.:8443", 0, 1, "example.com", 8443},
    {"example.com", 0, 0, NULL, 0},
    {"example.com", 80, 1, "example.com", 80},
    {"example.com:", 80, 0, NULL, 0},
    {"example.com:0", 0, 0, NULL, 0},
    {"example.com:65535", 0, 1, "example.com", 65535},
    {"example.com:65536", 0, 0, NULL, 0},
    {"example.com:0443", 0, 0, NULL, 0},
    {"example.com:+443", 0, 0, NULL, 0},
    {"example.com:44 3", 0, 0, NULL, 0},
    {"example.com:443x", 0, 0, NULL, 0},
    {"example.com:0x1bb", 0, 0, NULL, 0},
    {"user@example.com:443", 0, 0, NULL, 0},
    {"user:pw@example.com:443", 0, 0, NULL, 0},
    {"[2001:db8::1]:443", 0, 1, "2001:db8::1", 443},
    {"[2001:db8::1]", 80, 1, "2001:db8::1", 80},
    {"[2001:db8::1]x:443", 0, 0, NULL, 0},
    {"2001:db8::1:443", 0, 0, NULL, 0},
    {"[fe80::1%25lo]:443", 0, 0, NULL, 0},
    {":443", 0, 0, NULL, 0},
};

static void test_authorities(void)
{
	for (size_t i = 0; i < sizeof(auth_cases) / sizeof(auth_cases[0]); i++) {
		const struct auth_case *t = &auth_cases[i];
		struct egr_host h;
		uint16_t port = 0;
		const char *why = NULL;
		int r = egr_authority_parse(t->in, strlen(t->in), t->def, &h, &port, &why);
		if (!t->ok)
			T_OK(r < 0, "authority \"%s\" is refused (%s)", t->in,
			     why != NULL ? why : "-");
		else
			T_OK(r == 0 && strcmp(h.name, t->host) == 0 && port == t->port,
			     "authority \"%s\" -> %s port %u", t->in, t->host, t->port);
	}
	uint64_t v;
	T_OK(egr_parse_uint("0", 1, 0, 10, &v) == 0 && v == 0, "number: 0");
	T_OK(egr_parse_uint("18446744073709551615", 20, 0, UINT64_MAX, &v) == 0 && v == UINT64_MAX,
	     "number: the largest");
	T_OK(egr_parse_uint("18446744073709551616", 20, 0, UINT64_MAX, &v) < 0,
	     "number: overflow refused");
	T_OK(egr_parse_uint("", 0, 0, 10, &v) < 0, "number: empty refused");
	T_OK(egr_parse_uint("-1", 2, 0, 10, &v) < 0, "number: sign refused");
	T_OK(egr_parse_uint("11", 2, 0, 10, &v) < 0, "number: over the range refused");
}

/* ---- addresses ----------------------------------------------------------- */

struct addr_case {
	const char *addr;
	enum egr_addr_class cls;
	const char *range; /* how the range the record names starts */
};

static const struct addr_case addr_cases[] = {
    /* IPv4: IANA's special-purpose registry, every row at both ends */
    {"0.0.0.0", EGR_ADDR_SPECIAL, "0.0.0.0/32 "},
    {"0.0.0.1", EGR_ADDR_SPECIAL, "0.0.0.0/8 "},
    {"0.255.255.255", EGR_ADDR_SPECIAL, "0.0.0.0/8 "},
    {"10.0.0.0", EGR_ADDR_PRIVATE, "10.0.0.0/8 "},
    {"10.255.255.255", EGR_ADDR_PRIVATE, "10.0.0.0/8 "},
    {"100.64.0.0", EGR_ADDR_SPECIAL, "100.64.0.0/10 "},
    {"100.127.255.255", EGR_ADDR_SPECIAL, "100.64.0.0/10 "},
    {"127.0.0.0", EGR_ADDR_SPECIAL, "127.0.0.0/8 "},
    {"127.255.255.255", EGR_ADDR_SPECIAL, "127.0.0.0/8 "},
    {"169.254.0.0", EGR_ADDR_SPECIAL, "169.254.0.0/16 "},
    {"169.254.255.255", EGR_ADDR_SPECIAL, "169.254.0.0/16 "},
    {"172.16.0.0", EGR_ADDR_PRIVATE, "172.16.0.0/12 "},
    {"172.31.255.255", EGR_ADDR_PRIVATE, "172.16.0.0/12 "},
    {"192.0.0.0", EGR_ADDR_SPECIAL, "192.0.0.0/29 "},
    {"192.0.0.7", EGR_ADDR_SPECIAL, "192.0.0.0/29 "},
    {"192.0.0.8", EGR_ADDR_SPECIAL, "192.0.0.8/32 "},
    {"192.0.0.9", EGR_ADDR_SPECIAL, "192.0.0.9/32 "},
    {"192.0.0.10", EGR_ADDR_SPECIAL, "192.0.0.10/32 "},
    {"192.0.0.11", EGR_ADDR_SPECIAL, "192.0.0.0/24 "},
    {"192.0.0.170", EGR_ADDR_SPECIAL, "192.0.0.170/32 "},
    {"192.0.0.171", EGR_ADDR_SPECIAL, "192.0.0.171/32 "},
    {"192.0.0.255", EGR_ADDR_SPECIAL, "192.0.0.0/24 "},
    {"192.0.2.0", EGR_ADDR_SPECIAL, "192.0.2.0/24 "},
    {"192.0.2.255", EGR_ADDR_SPECIAL, "192.0.2.0/24 "},
    {"192.31.196.0", EGR_ADDR_SPECIAL, "192.31.196.0/24 "},
    {"192.31.196.255", EGR_ADDR_SPECIAL, "192.31.196.0/24 "},
    {"192.52.193.0", EGR_ADDR_SPECIAL, "192.52.193.0/24 "},
    {"192.52.193.255", EGR_ADDR_SPECIAL, "192.52.193.0/24 "},
    {"192.88.99.0", EGR_ADDR_SPECIAL, "192.88.99.0/24 "},
    {"192.88.99.2", EGR_ADDR_SPECIAL, "192.88.99.2/32 "},
    {"192.88.99.255", EGR_ADDR_SPECIAL, "192.88.99.0/24 "},
    {"192.168.0.0", EGR_ADDR_PRIVATE, "192.168.0.0/16 "},
    {"192.168.255.255", EGR_ADDR_PRIVATE, "192.168.0.0/16 "},
    {"192.175.48.0", EGR_ADDR_SPECIAL, "192.175.48.0/24 "},
    {"192.175.48.255", EGR_ADDR_SPECIAL, "192.175.48.0/24 "},
    {"198.18.0.0", EGR_ADDR_SPECIAL, "198.18.0.0/15 "},
    {"198.19.255.255", EGR_ADDR_SPECIAL, "198.18.0.0/15 "},
    {"198.51.100.0", EGR_ADDR_SPECIAL, "198.51.100.0/24 "},
    {"198.51.100.255", EGR_ADDR_SPECIAL, "198.51.100.0/24 "},
    {"203.0.113.0", EGR_ADDR_SPECIAL, "203.0.113.0/24 "},
    {"203.0.113.255", EGR_ADDR_SPECIAL, "203.0.113.0/24 "},
    {"240.0.0.0", EGR_ADDR_SPECIAL, "240.0.0.0/4 "},
    {"255.255.255.254", EGR_ADDR_SPECIAL, "240.0.0.0/4 "},
    {"255.255.255.255", EGR_ADDR_SPECIAL, "255.255.255.255 "},
    /* IPv4: multicast, from the address space registry */
    {"224.0.0.0", EGR_ADDR_SPECIAL, "224.0.0.0/4 "},
    {"239.255.255.255", EGR_ADDR_SPECIAL, "224.0.0.0/4 "},
    /* IPv4: the platforms, inside special, private and public space alike */
    {"169.254.169.254", EGR_ADDR_PLATFORM, "169.254.169.254/32 "},
    {"169.254.169.253", EGR_ADDR_PLATFORM, "169.254.169.253/32 "},
    {"169.254.169.123", EGR_ADDR_PLATFORM, "169.254.169.123/32 "},
    {"169.254.169.252", EGR_ADDR_PLATFORM, "169.254.169.252/32 "},
    {"169.254.170.2", EGR_ADDR_PLATFORM, "169.254.170.2/32 "},
    {"169.254.170.23", EGR_ADDR_PLATFORM, "169.254.170.23/32 "},
    {"169.254.0.23", EGR_ADDR_PLATFORM, "169.254.0.23/32 "},
    {"169.254.42.42", EGR_ADDR_PLATFORM, "169.254.42.42/32 "},
    {"169.254.20.10", EGR_ADDR_PLATFORM, "169.254.20.10/32 "},
    {"168.63.129.16", EGR_ADDR_PLATFORM, "168.63.129.16/32 "},
    {"100.100.100.200", EGR_ADDR_PLATFORM, "100.100.100.200/32 "},
    {"100.100.100.100", EGR_ADDR_PLATFORM, "100.100.100.100/32 "},
    {"192.0.0.192", EGR_ADDR_PLATFORM, "192.0.0.192/32 "},
    /* IPv4: the neighbours, public */
    {"1.1.1.1", EGR_ADDR_PUBLIC, "public"},
    {"11.0.0.1", EGR_ADDR_PUBLIC, "public"},
    {"100.63.255.255", EGR_ADDR_PUBLIC, "public"},
    {"100.128.0.0", EGR_ADDR_PUBLIC, "public"},
    {"126.255.255.255", EGR_ADDR_PUBLIC, "public"},
    {"128.0.0.1", EGR_ADDR_PUBLIC, "public"},
    {"168.63.129.15", EGR_ADDR_PUBLIC, "public"},
    {"168.63.129.17", EGR_ADDR_PUBLIC, "public"},
    {"169.253.255.255", EGR_ADDR_PUBLIC, "public"},
    {"169.255.0.0", EGR_ADDR_PUBLIC, "public"},
    {"172.15.255.255", EGR_ADDR_PUBLIC, "public"},
    {"172.32.0.0", EGR_ADDR_PUBLIC, "public"},
    {"192.0.1.255", EGR_ADDR_PUBLIC, "public"},
    {"192.0.3.0", EGR_ADDR_PUBLIC, "public"},
    {"192.31.195.255", EGR_ADDR_PUBLIC, "public"},
    {"192.31.197.0", EGR_ADDR_PUBLIC, "public"},
    {"192.52.192.255", EGR_ADDR_PUBLIC, "public"},
    {"192.52.194.0", EGR_ADDR_PUBLIC, "public"},
    {"192.88.98.255", EGR_ADDR_PUBLIC, "public"},
    {"192.88.100.0", EGR_ADDR_PUBLIC, "public"},
    {"192.167.255.255", EGR_ADDR_PUBLIC, "public"},
    {"192.169.0.0", EGR_ADDR_PUBLIC, "public"},
    {"192.175.47.255", EGR_ADDR_PUBLIC, "public"},
    {"192.175.49.0", EGR_ADDR_PUBLIC, "public"},
    {"198.17.255.255", EGR_ADDR_PUBLIC, "public"},
    {"198.20.0.0", EGR_ADDR_PUBLIC, "public"},
    {"198.51.99.255", EGR_ADDR_PUBLIC, "public"},
    {"198.51.101.0", EGR_ADDR_PUBLIC, "public"},
    {"203.0.112.255", EGR_ADDR_PUBLIC, "public"},
    {"203.0.114.0", EGR_ADDR_PUBLIC, "public"},
    {"223.255.255.255", EGR_ADDR_PUBLIC, "public"},
    /* IPv6: IANA's special-purpose registry, every row at both ends */
    {"::", EGR_ADDR_SPECIAL, ":: "},
    {"::1", EGR_ADDR_SPECIAL, "::1 "},
    {"64:ff9b::", EGR_ADDR_SPECIAL, "64:ff9b::/96 "},
    {"64:ff9b::ffff:ffff", EGR_ADDR_SPECIAL, "64:ff9b::/96 "},
    {"64:ff9b::a9fe:a9fe", EGR_ADDR_SPECIAL, "64:ff9b::/96 "},
    {"64:ff9b:1::", EGR_ADDR_SPECIAL, "64:ff9b:1::/48 "},
    {"64:ff9b:1:ffff:ffff:ffff:ffff:ffff", EGR_ADDR_SPECIAL, "64:ff9b:1::/48 "},
    {"100::", EGR_ADDR_SPECIAL, "100::/64 "},
    {"100::ffff:ffff:ffff:ffff", EGR_ADDR_SPECIAL, "100::/64 "},
    {"100:0:0:1::", EGR_ADDR_SPECIAL, "100:0:0:1::/64 "},
    {"100:0:0:1:ffff:ffff:ffff:ffff", EGR_ADDR_SPECIAL, "100:0:0:1::/64 "},
    {"2001::", EGR_ADDR_SPECIAL, "2001::/32 "},
    {"2001:0:ffff:ffff:ffff:ffff:ffff:ffff", EGR_ADDR_SPECIAL, "2001::/32 "},
    {"2001:1::", EGR_ADDR_SPECIAL, "2001::/23 "},
    {"2001:1::1", EGR_ADDR_SPECIAL, "2001:1::1 "},
    {"2001:1::2", EGR_ADDR_SPECIAL, "2001:1::2 "},
    {"2001:1::3", EGR_ADDR_SPECIAL, "2001:1::3 "},
    {"2001:1::4", EGR_ADDR_SPECIAL, "2001::/23 "},
    {"2001:2::", EGR_ADDR_SPECIAL, "2001:2::/48 "},
    {"2001:2:0:ffff:ffff:ffff:ffff:ffff", EGR_ADDR_SPECIAL, "2001:2::/48 "},
    {"2001:2:1::", EGR_ADDR_SPECIAL, "2001::/23 "},
    {"2001:3::", EGR_ADDR_SPECIAL, "2001:3::/32 "},
    {"2001:3:ffff:ffff:ffff:ffff:ffff:ffff", EGR_ADDR_SPECIAL, "2001:3::/32 "},
    {"2001:4:112::", EGR_ADDR_SPECIAL, "2001:4:112::/48 "},
    {"2001:4:112:ffff:ffff:ffff:ffff:ffff", EGR_ADDR_SPECIAL, "2001:4:112::/48 "},
    {"2001:10::", EGR_ADDR_SPECIAL, "2001:10::/28 "},
    {"2001:1f:ffff:ffff:ffff:ffff:ffff:ffff", EGR_ADDR_SPECIAL, "2001:10::/28 "},
    {"2001:20::", EGR_ADDR_SPECIAL, "2001:20::/28 "},
    {"2001:2f:ffff:ffff:ffff:ffff:ffff:ffff", EGR_ADDR_SPECIAL, "2001:20::/28 "},
    {"2001:30::", EGR_ADDR_SPECIAL, "2001:30::/28 "},
    {"2001:3f:ffff:ffff:ffff:ffff:ffff:ffff", EGR_ADDR_SPECIAL, "2001:30::/28 "},
    {"2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", EGR_ADDR_SPECIAL, "2001::/23 "},
    {"2001:db8::", EGR_ADDR_SPECIAL, "2001:db8::/32 "},
    {"2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", EGR_ADDR_SPECIAL, "2001:db8::/32 "},
    {"2002::", EGR_ADDR_SPECIAL, "2002::/16 "},
    {"2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", EGR_ADDR_SPECIAL, "2002::/16 "},
    {"2620:4f:8000::", EGR_ADDR_SPECIAL, "2620:4f:8000::/48 "},
    {"2620:4f:8000:ffff:ffff:ffff:ffff:ffff", EGR_ADDR_SPECIAL, "2620:4f:8000::/48 "},
    {"3fff::", EGR_ADDR_SPECIAL, "3fff::/20 "},
    {"3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", EGR_ADDR_SPECIAL, "3fff::/20 "},
    {"5f00::", EGR_ADDR_SPECIAL, "5f00::/16 "},
    {"5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff", EGR_ADDR_SPECIAL, "5f00::/16 "},
    {"fc00::", EGR_ADDR_PRIVATE, "fc00::/7 "},
    {"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", EGR_ADDR_PRIVATE, "fc00::/7 "},
    {"fd12:3456::1", EGR_ADDR_PRIVATE, "fc00::/7 "},
    {"fe80::", EGR_ADDR_SPECIAL, "fe80::/10 "},
    {"febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", EGR_ADDR_SPECIAL, "fe80::/10 "},
    /* IPv6: the address space registry's reserved blocks and multicast */
    {"::2", EGR_ADDR_SPECIAL, "::/96 "},
    {"::1.2.3.4", EGR_ADDR_SPECIAL, "::/96 "},
    {"::1:0:0", EGR_ADDR_SPECIAL, "::/8 "},
    {"ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", EGR_ADDR_SPECIAL, "::/8 "},
    {"::ffff:0:1.2.3.4", EGR_ADDR_SPECIAL, "::ffff:0:0:0/96 "},
    {"64:ff9b:2::1", EGR_ADDR_SPECIAL, "::/8 "},
    {"100:0:0:2::", EGR_ADDR_SPECIAL, "100::/8 "},
    {"1ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", EGR_ADDR_SPECIAL, "100::/8 "},
    {"200::", EGR_ADDR_SPECIAL, "200::/7 "},
    {"400::", EGR_ADDR_SPECIAL, "400::/6 "},
    {"800::", EGR_ADDR_SPECIAL, "800::/5 "},
    {"1::1", EGR_ADDR_SPECIAL, "::/8 "},
    {"1000::", EGR_ADDR_SPECIAL, "1000::/4 "},
    {"1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", EGR_ADDR_SPECIAL, "1000::/4 "},
    {"4000::", EGR_ADDR_SPECIAL, "4000::/3 "},
    {"6000::", EGR_ADDR_SPECIAL, "6000::/3 "},
    {"8000::", EGR_ADDR_SPECIAL, "8000::/3 "},
    {"a000::", EGR_ADDR_SPECIAL, "a000::/3 "},
    {"c000::", EGR_ADDR_SPECIAL, "c000::/3 "},
    {"e000::", EGR_ADDR_SPECIAL, "e000::/4 "},
    {"f000::", EGR_ADDR_SPECIAL, "f000::/5 "},
    {"f800::", EGR_ADDR_SPECIAL, "f800::/6 "},
    {"fe00::", EGR_ADDR_SPECIAL, "fe00::/9 "},
    {"fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", EGR_ADDR_SPECIAL, "fe00::/9 "},
    {"fec0::", EGR_ADDR_SPECIAL, "fec0::/10 "},
    {"feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", EGR_ADDR_SPECIAL, "fec0::/10 "},
    {"ff00::", EGR_ADDR_SPECIAL, "ff00::/8 "},
    {"ff02::1", EGR_ADDR_SPECIAL, "ff00::/8 "},
    {"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", EGR_ADDR_SPECIAL, "ff00::/8 "},
    /* IPv6: the platforms, inside ULA and link-local space */
    {"fd00:ec2::254", EGR_ADDR_PLATFORM, "fd00:ec2::/32 "},
    {"fd00:ec2::253", EGR_ADDR_PLATFORM, "fd00:ec2::/32 "},
    {"fd00:ec2::123", EGR_ADDR_PLATFORM, "fd00:ec2::/32 "},
    {"fd00:ec2::23", EGR_ADDR_PLATFORM, "fd00:ec2::/32 "},
    {"fd00:ec2::", EGR_ADDR_PLATFORM, "fd00:ec2::/32 "},
    {"fd00:ec2:ffff:ffff:ffff:ffff:ffff:ffff", EGR_ADDR_PLATFORM, "fd00:ec2::/32 "},
    {"fd20:ce::254", EGR_ADDR_PLATFORM, "fd20:ce::254 "},
    {"fd00:c1::a9fe:a9fe", EGR_ADDR_PLATFORM, "fd00:c1::a9fe:a9fe "},
    {"fd00:a9fe:a9fe::1", EGR_ADDR_PLATFORM, "fd00:a9fe:a9fe::1 "},
    {"fd00:42::42", EGR_ADDR_PLATFORM, "fd00:42::42 "},
    {"fd00:100::100:200", EGR_ADDR_PLATFORM, "fd00:100::100:200 "},
    {"fe80::a9fe:a9fe", EGR_ADDR_PLATFORM, "fe80::a9fe:a9fe "},
    {"fd00:ec1:ffff:ffff:ffff:ffff:ffff:ffff", EGR_ADDR_PRIVATE, "fc00::/7 "},
    {"fd00:ec3::", EGR_ADDR_PRIVATE, "fc00::/7 "},
    {"fd20:ce::253", EGR_ADDR_PRIVATE, "fc00::/7 "},
    /* IPv6: the neighbours, public */
    {"2000::", EGR_ADDR_PUBLIC, "public"},
    {"2001:200::", EGR_ADDR_PUBLIC, "public"},
    {"2001:4860:4860::8888", EGR_ADDR_PUBLIC, "public"},
    {"2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", EGR_ADDR_PUBLIC, "public"},
    {"2001:db9::", EGR_ADDR_PUBLIC, "public"},
    {"2003::1", EGR_ADDR_PUBLIC, "public"},
    {"2606:4700::1111", EGR_ADDR_PUBLIC, "public"},
    {"2620:4f:7fff:ffff:ffff:ffff:ffff:ffff", EGR_ADDR_PUBLIC, "public"},
    {"2620:4f:8001::", EGR_ADDR_PUBLIC, "public"},
    {"3ffe::1", EGR_ADDR_PUBLIC, "public"},
    {"3fff:1000::", EGR_ADDR_PUBLIC, "public"},
    {"3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", EGR_ADDR_PUBLIC, "public"},
    /* IPv4-mapped: judged as the IPv4 address it carries */
    {"::ffff:127.0.0.1", EGR_ADDR_SPECIAL, "127.0.0.0/8 "},
    {"::ffff:0.0.0.0", EGR_ADDR_SPECIAL, "0.0.0.0/32 "},
    {"::ffff:7f00:1", EGR_ADDR_SPECIAL, "127.0.0.0/8 "},
    {"::ffff:169.254.169.254", EGR_ADDR_PLATFORM, "169.254.169.254/32 "},
    {"::ffff:168.63.129.16", EGR_ADDR_PLATFORM, "168.63.129.16/32 "},
    {"::ffff:100.100.100.200", EGR_ADDR_PLATFORM, "100.100.100.200/32 "},
    {"::ffff:10.1.2.3", EGR_ADDR_PRIVATE, "10.0.0.0/8 "},
    {"::ffff:100.64.0.1", EGR_ADDR_SPECIAL, "100.64.0.0/10 "},
    {"::ffff:1.1.1.1", EGR_ADDR_PUBLIC, "public"},
};

static int to_addr(const char *s, struct egr_addr *a)
{
	struct egr_cidr c;
	const char *why;
	if (egr_cidr_parse(s, strlen(s), &c, &why) < 0)
		return -1;
	*a = c.addr;
	return 0;
}

static void test_classifier(void)
{
	static const char *const names[] = {"public", "private", "special", "platform"};
	for (size_t i = 0; i < sizeof(addr_cases) / sizeof(addr_cases[0]); i++) {
		const struct addr_case *t = &addr_cases[i];
		struct egr_addr a;
		const char *range = NULL;
		if (to_addr(t->addr, &a) < 0) {
			T_OK(0, "address %s parses", t->addr);
			continue;
		}
		enum egr_addr_class got = egr_addr_classify(&a, &range);
		T_OK(got == t->cls && range != NULL &&
		         strncmp(range, t->range, strlen(t->range)) == 0,
		     "%s is %s (%s)", t->addr, names[t->cls], range != NULL ? range : "-");
	}
	/* nothing outside 2000::/3 is public: every /16 of the rest, at its
	 * first and last address */
	size_t public_outside = 0;
	for (unsigned top = 0; top <= 0xffff; top++) {
		if ((top & 0xe000) == 0x2000)
			continue;
		for (int end = 0; end < 2; end++) {
			struct egr_addr v6;
			memset(&v6, 0, sizeof(v6));
			v6.family = 6;
			memset(v6.b + 2, end ? 0xff : 0, 14);
			v6.b[0] = (unsigned char)(top >> 8);
			v6.b[1] = (unsigned char)top;
			const char *r;
			/* ::ffff:a.b.c.d is IPv4 and judged as such: not this test's */
			struct egr_addr u = v6;
			egr_addr_unmap(&u);
			if (u.family == 6 && egr_addr_classify(&v6, &r) == EGR_ADDR_PUBLIC)
				public_outside++;
		}
	}
	T_INT((long long)public_outside, 0, "no address outside 2000::/3 is public");
	/* a mapped address unmaps to IPv4 */
	struct egr_addr a;
	memset(&a, 0, sizeof(a));
	a.family = 6;
	a.b[10] = a.b[11] = 0xff;
	a.b[12] = 8;
	a.b[15] = 8;
	egr_addr_unmap(&a);
	char text[64];
	egr_addr_format(&a, text, sizeof(text));
	T_OK(a.family == 4, "::ffff:8.0.0.8 unmaps to IPv4");
	T_STR(text, "8.0.0.8", "and formats as a dotted quad");
}

static void test_cidr(void)
{
	struct egr_cidr c;
	struct egr_addr a;
	const char *why;
	T_OK(egr_cidr_parse("10.88.0.0/16", 12, &c, &why) == 0, "cidr 10.88.0.0/16");
	to_addr("10.88.3.4", &a);
	T_OK(egr_cidr_match(&c, &a), "10.88.3.4 is inside");
	to_addr("::ffff:10.88.3.4", &a);
	T_OK(egr_cidr_match(&c, &a), "::ffff:10.88.3.4 is inside too");
	to_addr("10.89.0.1", &a);
	T_OK(!egr_cidr_match(&c, &a), "10.89.0.1 is outside");
	T_OK(egr_cidr_parse("10.88.7.9/16", 12, &c, &why) == 0 && c.addr.b[2] == 0 &&
	         c.addr.b[3] == 0,
	     "host bits past the prefix are cleared");
	T_OK(egr_cidr_parse("10.0.0.1", 8, &c, &why) == 0 && c.prefix == 32, "no prefix is /32");
	T_OK(egr_cidr_parse("[fd00::1]/64", 12, &c, &why) == 0 && c.prefix == 64,
	     "bracketed IPv6 with a prefix");
	T_OK(egr_cidr_parse("fd00::/8", 8, &c, &why) == 0, "bare IPv6 with a prefix");
	T_OK(egr_cidr_parse("::ffff:10.0.0.0/104", 19, &c, &why) == 0 && c.addr.family == 4 &&
	         c.prefix == 8,
	     "a mapped range is stored as IPv4");
	static const char *const bad[] = {"10.0.0.0/33", "10.0.0.0/",   "10.0.0/8", "fd00::/129",
	                                  "example.com", "10.0.0.0/08", "",         "/8",
	                                  "fe80::1%lo"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		T_OK(egr_cidr_parse(bad[i], strlen(bad[i]), &c, &why) < 0, "cidr \"%s\" is refused",
		     bad[i]);
}

/* ---- allowlist ----------------------------------------------------------- */

/* A request's authority and what the allowlist says of it */
struct match {
	const char *authority;
	enum egr_match want;
	bool private_ok;
};

static void check_matches(const struct egr_allow *list, size_t n, const struct match *cases,
                          size_t ncases, const char *what)
{
	const char *why = NULL;
	for (size_t i = 0; i < ncases; i++) {
		struct egr_host h;
		uint16_t port;
		bool private_ok = false;
		const char *a = cases[i].authority;
		if (egr_authority_parse(a, strlen(a), 0, &h, &port, &why) < 0) {
			T_OK(0, "authority %s parses", a);
			continue;
		}
		enum egr_match m = egr_allow_match(list, n, &h, port, &private_ok);
		T_OK(m == cases[i].want && private_ok == cases[i].private_ok,
		     "%s %s -> %d%s (got %d)", what, a, (int)cases[i].want,
		     cases[i].private_ok ? " (private ok)" : "", (int)m);
	}
}

static void test_allowlist(void)
{
	struct egr_allow list[6];
	const char *why = NULL;
	T_OK(egr_allow_parse("api.example.com", false, &list[0], &why) == 0, "allow a bare host");
	T_OK(egr_allow_parse("Files.Example.com.:8443", false, &list[1], &why) == 0,
	     "allow host:port, canonicalised");
	T_OK(egr_allow_parse("1.1.1.1:853", false, &list[2], &why) == 0, "allow an IPv4 literal");
	T_OK(egr_allow_parse("[2606:4700::1111]", false, &list[3], &why) == 0,
	     "allow an IPv6 literal");
	T_OK(egr_allow_parse("internal.test", true, &list[4], &why) == 0, "allow-private a name");
	T_OK(egr_allow_parse("internal.test:9000", false, &list[5], &why) == 0,
	     "the same name on another port, not private");
	size_t n = 6;
	static const struct match cases[] = {
	    {"api.example.com:443", EGR_MATCH_OK, false},
	    {"api.example.com:80", EGR_MATCH_OK, false},
	    {"API.EXAMPLE.COM.:443", EGR_MATCH_OK, false},
	    {"api.example.com:8443", EGR_MATCH_PORT, false},
	    {"api.example.com:22", EGR_MATCH_PORT, false},
	    {"example.com:443", EGR_MATCH_NONE, false},
	    {"x.api.example.com:443", EGR_MATCH_NONE, false},
	    {"api.example.com.evil:443", EGR_MATCH_NONE, false},
	    {"files.example.com:8443", EGR_MATCH_OK, false},
	    {"files.example.com:443", EGR_MATCH_PORT, false},
	    {"1.1.1.1:853", EGR_MATCH_OK, false},
	    {"1.1.1.1:443", EGR_MATCH_PORT, false},
	    {"1.0.0.1:853", EGR_MATCH_NONE, false},
	    {"[2606:4700:0::1111]:443", EGR_MATCH_OK, false},
	    {"[::ffff:1.1.1.1]:853", EGR_MATCH_NONE, false},
	    {"internal.test:443", EGR_MATCH_OK, true},
	    {"internal.test:9000", EGR_MATCH_OK, false},
	};
	check_matches(list, n, cases, sizeof(cases) / sizeof(cases[0]), "match");
	struct refused {
		const char *entry;
		bool private_ok;
	};
	static const struct refused bad[] = {
	    {"2130706433", false},
	    {"127.1", false},
	    {"0x7f.0.0.1", false},
	    {"localhost", true},
	    {"host.docker.internal", true},
	    {"host.containers.internal:80", true},
	    {"127.0.0.1:80", true},
	    {"169.254.169.254", true},
	    {"[::1]:443", true},
	    {"10.0.0.1:80", false},
	    {"[fd00::1]:80", false},
	    {"example.com:0", false},
	    {"example.com:", false},
	    {"user@example.com", false},
	    {"", false},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct egr_allow e;
		T_OK(egr_allow_parse(bad[i].entry, bad[i].private_ok, &e, &why) < 0,
		     "-allow%s %s is refused (%s)", bad[i].private_ok ? "-private" : "",
		     bad[i].entry, why);
	}
	struct egr_allow e;
	T_OK(egr_allow_parse("10.0.0.1:80", true, &e, &why) == 0,
	     "-allow-private takes a private literal");
	T_OK(egr_allow_parse("100.64.0.5:5432", true, &e, &why) < 0 &&
	         strncmp(e.range, "100.64.0.0/10 ", 14) == 0,
	     "-allow-private does not take a shared address space literal either (%s)", e.range);
	T_OK(egr_allow_parse("api.example.com", false, &e, &why) == 0 && e.range == NULL,
	     "a name has no range");
	/* a platform's address, as a literal in any form and in any section of
	 * the list, is refused, naming its range */
	static const struct {
		const char *entry, *range;
	} platform[] = {
	    {"168.63.129.16", "168.63.129.16/32 "},
	    {"169.254.169.254:80", "169.254.169.254/32 "},
	    {"100.100.100.200", "100.100.100.200/32 "},
	    {"[fd00:ec2::254]", "fd00:ec2::/32 "},
	    {"[fd00:ec2::23]:80", "fd00:ec2::/32 "},
	    {"[fd20:ce::254]", "fd20:ce::254 "},
	    {"[::ffff:168.63.129.16]:443", "168.63.129.16/32 "},
	    {"[::ffff:a9fe:aa02]", "169.254.170.2/32 "},
	};
	for (size_t i = 0; i < sizeof(platform) / sizeof(platform[0]); i++) {
		for (int priv = 0; priv < 2; priv++) {
			int r = egr_allow_parse(platform[i].entry, priv, &e, &why);
			T_OK(r < 0 && strstr(why, "platform") != NULL && e.range != NULL &&
			         strncmp(e.range, platform[i].range, strlen(platform[i].range)) ==
			             0,
			     "-allow%s %s is refused: %s (%s)", priv ? "-private" : "",
			     platform[i].entry, why, e.range != NULL ? e.range : "-");
		}
	}
	/* the special-purpose rows a listed literal may not name either */
	static const char *const special[] = {"[2001:2::1]",   "[2001:20::1]",      "[3fff::1]",
	                                      "[2001:1::1]",   "192.31.196.1",      "192.52.193.1",
	                                      "192.175.48.53", "[2620:4f:8000::53]"};
	for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); i++)
		T_OK(egr_allow_parse(special[i], true, &e, &why) < 0 &&
		         strstr(why, "special") != NULL,
		     "-allow-private %s is refused: %s (%s)", special[i], why,
		     e.range != NULL ? e.range : "-");
}

/* ---- wildcard entries ---------------------------------------------------- */

static void test_wildcards(void)
{
	struct egr_allow list[3];
	const char *why = NULL;
	T_OK(egr_allow_parse("*.Example.COM.", false, &list[0], &why) == 0,
	     "allow a wildcard, canonicalised (%s)", why != NULL ? why : "ok");
	T_OK(list[0].wildcard && list[0].host.kind == EGR_HOST_NAME &&
	         strcmp(list[0].host.name, "example.com") == 0 && list[0].port == 0,
	     "the wildcard keeps its canonical name after \"*.\"");
	T_OK(egr_allow_parse("*.files.test:8443", true, &list[1], &why) == 0,
	     "allow-private a wildcard with a port (%s)", why != NULL ? why : "ok");
	T_OK(egr_allow_parse("api.example.com", false, &list[2], &why) == 0 && !list[2].wildcard,
	     "a plain entry is no wildcard");
	static const struct match cases[] = {
	    {"a.example.com:443", EGR_MATCH_OK, false},
	    {"a.example.com:80", EGR_MATCH_OK, false},
	    {"A.EXAMPLE.COM.:443", EGR_MATCH_OK, false},
	    {"xn--bcher-kva.example.com:443", EGR_MATCH_OK, false},
	    {"0x7f.example.com:443", EGR_MATCH_OK, false},
	    {"a.example.com:8443", EGR_MATCH_PORT, false},
	    {"example.com:443", EGR_MATCH_NONE, false},
	    {"example.com.:443", EGR_MATCH_NONE, false},
	    {"EXAMPLE.COM:443", EGR_MATCH_NONE, false},
	    {"a.b.example.com:443", EGR_MATCH_NONE, false},
	    {"badexample.com:443", EGR_MATCH_NONE, false},
	    {"a.badexample.com:443", EGR_MATCH_NONE, false},
	    {"xexample.com:443", EGR_MATCH_NONE, false},
	    {"x.example.com.evil.net:443", EGR_MATCH_NONE, false},
	    {"example.com.evil.net:443", EGR_MATCH_NONE, false},
	    {"a.example.co:443", EGR_MATCH_NONE, false},
	    {"a.example.comm:443", EGR_MATCH_NONE, false},
	    {"api.example.com:443", EGR_MATCH_OK, false},
	    {"a.files.test:8443", EGR_MATCH_OK, true},
	    {"a.files.test:443", EGR_MATCH_PORT, false},
	    {"files.test:8443", EGR_MATCH_NONE, false},
	    {"1.2.3.4:443", EGR_MATCH_NONE, false},
	    {"[2001:db8::1]:443", EGR_MATCH_NONE, false},
	};
	check_matches(list, 3, cases, sizeof(cases) / sizeof(cases[0]), "wildcard match");

	/* the kind decides before the text: an address whose text would end in
	 * the wildcard's name is still no name (an entry made by hand, since
	 * egr_allow_parse refuses a wildcard over an address) */
	struct egr_allow forged = {.wildcard = true, .host = {.kind = EGR_HOST_NAME}};
	memcpy(forged.host.name, "2.3.4", 6);
	struct egr_host addr;
	uint16_t port;
	bool private_ok;
	T_OK(egr_authority_parse("1.2.3.4:443", 11, 0, &addr, &port, &why) == 0 &&
	         addr.kind == EGR_HOST_IPV4,
	     "1.2.3.4 is an IPv4 literal");
	T_OK(egr_allow_match(&forged, 1, &addr, port, &private_ok) == EGR_MATCH_NONE,
	     "a wildcard never matches an IPv4 literal, whatever its text");
	struct egr_host numeric;
	T_OK(egr_host_parse("0x7f.2.3.4", 10, &numeric, &why) == 0 &&
	         numeric.kind == EGR_HOST_NUMERIC,
	     "0x7f.2.3.4 is numeric-looking");
	T_OK(egr_allow_match(&forged, 1, &numeric, 443, &private_ok) == EGR_MATCH_NONE,
	     "a wildcard never matches a numeric-looking name");

	static const char *const covers[][3] = {
	    {"example.com", "a.example.com", "1"},
	    {"example.com", "example.com", "0"},
	    {"example.com", ".example.com", "0"},
	    {"example.com", "a.b.example.com", "0"},
	    {"example.com", "aexample.com", "0"},
	    {"example.com", "a.example.com.x", "0"},
	    {"example.com", "a-b.example.com", "1"},
	    {"b.c", "a.b.c", "1"},
	    {"", "a.", "0"},
	};
	for (size_t i = 0; i < sizeof(covers) / sizeof(covers[0]); i++)
		T_OK(egr_wildcard_covers(covers[i][0], covers[i][1]) == (covers[i][2][0] == '1'),
		     "*.%s %s %s", covers[i][0],
		     covers[i][2][0] == '1' ? "covers" : "does not cover", covers[i][1]);

	static const char *const bad[] = {
	    "*",
	    "*.",
	    "*:443",
	    "*.:443",
	    "**.x.com",
	    "*x.com",
	    "x*.com",
	    "a.*.com",
	    "a.*.com:443",
	    "*.a.*.com",
	    "*.*.com",
	    "*.com",
	    "*.com.",
	    "*.1.2.3.4",
	    "*.1.2.3.4:443",
	    "*.[::1]",
	    "*.[2001:db8::1]:443",
	    "*.127.1",
	    "*.0x7f.1",
	    "*.example.123",
	    "*.localhost",
	    "*.a.localhost",
	    "*.docker.internal",
	    "*.containers.internal",
	    "*..example.com",
	    "*.-a.example.com",
	    "*.example.com:0",
	    "*.example.com:",
	    "*.ex ample.com",
	    "u@*.example.com",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct egr_allow e;
		why = NULL;
		T_OK(egr_allow_parse(bad[i], true, &e, &why) < 0 && why != NULL,
		     "-allow %s is refused (%s)", bad[i], why != NULL ? why : "no reason");
	}
	struct egr_allow e;
	T_OK(egr_allow_parse("*.internal.docker", false, &e, &why) == 0,
	     "*.internal.docker matches no alias and is fine");
}

static void test_addrs_check(void)
{
	struct egr_cidr deny[1], own[1];
	const char *why;
	egr_cidr_parse("10.89.0.0/24", 12, &deny[0], &why);
	egr_cidr_parse("10.90.0.5", 9, &own[0], &why);
	struct egr_policy pol = {deny, 1, own, 1};
	struct set {
		const char *addrs[3];
		bool private_ok;
		int ok;
		size_t bad;
		const char *reason;
	};
	static const struct set sets[] = {
	    {{"1.1.1.1", "2606:4700::1111", NULL}, false, 1, 0, NULL},
	    {{"1.1.1.1", "127.0.0.1", NULL}, false, 0, 1, "special address"},
	    {{"::ffff:127.0.0.1", NULL, NULL}, true, 0, 0, "special address"},
	    {{"1.1.1.1", "10.0.0.1", NULL}, false, 0, 1, "private address (not -allow-private)"},
	    {{"1.1.1.1", "10.0.0.1", NULL}, true, 1, 0, NULL},
	    {{"10.0.0.1", "::1", NULL}, true, 0, 1, "special address"},
	    {{"10.89.0.7", NULL, NULL}, true, 0, 0, "denied address"},
	    {{"::ffff:10.89.0.7", NULL, NULL}, true, 0, 0, "denied address"},
	    {{"10.90.0.5", NULL, NULL}, true, 0, 0, "own address"},
	    {{"fd00::5", "1.1.1.1", "fe80::1"}, true, 0, 2, "special address"},
	    /* -allow-private opens private ranges, never a platform's address
	     * inside one, nor one outside */
	    {{"fd00::5", "fd00:ec2::254", NULL}, true, 0, 1, "platform address"},
	    {{"10.64.0.5", "100.100.100.200", NULL}, true, 0, 1, "platform address"},
	    {{"1.1.1.1", "168.63.129.16", NULL}, true, 0, 1, "platform address"},
	    {{"::ffff:169.254.170.2", NULL, NULL}, true, 0, 0, "platform address"},
	    {{"10.64.0.5", NULL, NULL}, false, 0, 0, "private address (not -allow-private)"},
	    {{"100.64.0.5", NULL, NULL}, true, 0, 0, "special address"},
	    {{"10.64.0.5", "fd20:ce::253", NULL}, true, 1, 0, NULL},
	};
	for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++) {
		struct egr_addr a[3];
		size_t n = 0;
		for (; n < 3 && sets[i].addrs[n] != NULL; n++)
			to_addr(sets[i].addrs[n], &a[n]);
		size_t bad = 99;
		const char *reason = NULL, *range = NULL;
		int r = egr_addrs_check(&pol, sets[i].private_ok, a, n, &bad, &reason, &range);
		if (sets[i].ok)
			T_OK(r == 0, "address set %zu passes", i);
		else
			T_OK(r < 0 && bad == sets[i].bad && strcmp(reason, sets[i].reason) == 0,
			     "address set %zu: #%zu refused as %s (%s)", i, sets[i].bad,
			     sets[i].reason, range != NULL ? range : "-");
	}
}

/* ---- the request parser -------------------------------------------------- */

struct req_case {
	const char *name;
	const char *req;
	int want;        /* 1 complete, 0 need more, -1 refused */
	const char *why; /* a piece of the reason, for refusals */
};

static const struct req_case req_cases[] = {
    {"CONNECT", "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", 1, NULL},
    {"CONNECT without Host", "CONNECT example.com:443 HTTP/1.1\r\n\r\n", 1, NULL},
    {"CONNECT HTTP/1.0", "CONNECT example.com:443 HTTP/1.0\r\n\r\n", 1, NULL},
    {"CONNECT IPv6", "CONNECT [2001:db8::1]:443 HTTP/1.1\r\n\r\n", 1, NULL},
    {"GET absolute", "GET http://example.com/a?b=c HTTP/1.1\r\nHost: example.com\r\n\r\n", 1, NULL},
    {"GET Host with :80", "GET http://example.com/ HTTP/1.1\r\nHost: example.com:80\r\n\r\n", 1,
     NULL},
    {"POST with a length", "POST http://example.com/ HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", 1,
     NULL},
    {"POST chunked",
     "POST http://example.com/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 1, NULL},
    {"incomplete line", "CONNECT example.com:443 HTTP/1.1\r\nHost: exa", 0, NULL},
    {"incomplete CR", "CONNECT example.com:443 HTTP/1.1\r", 0, NULL},
    {"incomplete end", "CONNECT example.com:443 HTTP/1.1\r\n\r", 0, NULL},
    {"origin-form", "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n", -1, "origin-form"},
    {"asterisk", "OPTIONS * HTTP/1.1\r\n\r\n", -1, "origin-form"},
    {"https absolute", "GET https://example.com/ HTTP/1.1\r\n\r\n", -1, "https"},
    {"ftp absolute", "GET ftp://example.com/ HTTP/1.1\r\n\r\n", -1, "bad request target"},
    {"no path", "GET http://example.com HTTP/1.1\r\n\r\n", -1, "without a path"},
    {"query without path", "GET http://example.com?x HTTP/1.1\r\n\r\n", -1, "without a path"},
    {"fragment", "GET http://example.com/#x HTTP/1.1\r\n\r\n", -1, "fragment"},
    {"CONNECT without port", "CONNECT example.com HTTP/1.1\r\n\r\n", -1, "port"},
    {"CONNECT port 0", "CONNECT example.com:0 HTTP/1.1\r\n\r\n", -1, "port"},
    {"CONNECT port 65536", "CONNECT example.com:65536 HTTP/1.1\r\n\r\n", -1, "port"},
    {"CONNECT hex port", "CONNECT example.com:0x1bb HTTP/1.1\r\n\r\n", -1, "port"},
    {"CONNECT absolute", "CONNECT http://example.com:443/ HTTP/1.1\r\n\r\n", -1, NULL},
    {"userinfo CONNECT", "CONNECT user@example.com:443 HTTP/1.1\r\n\r\n", -1, "userinfo"},
    {"userinfo GET", "GET http://u:p@example.com/ HTTP/1.1\r\n\r\n", -1, "userinfo"},
    {"zone id", "CONNECT [fe80::1%25eth0]:443 HTTP/1.1\r\n\r\n", -1, "zone"},
    {"obs-fold", "GET http://example.com/ HTTP/1.1\r\nX-A: 1\r\n 2\r\n\r\n", -1, "obs-fold"},
    {"obs-fold tab", "GET http://example.com/ HTTP/1.1\r\nX-A: 1\r\n\t2\r\n\r\n", -1, "obs-fold"},
    {"space before colon", "GET http://example.com/ HTTP/1.1\r\nHost : example.com\r\n\r\n", -1,
     "whitespace before a colon"},
    {"tab before colon", "GET http://example.com/ HTTP/1.1\r\nHost\t: example.com\r\n\r\n", -1,
     "whitespace before a colon"},
    {"bare LF", "GET http://example.com/ HTTP/1.1\nHost: example.com\r\n\r\n", -1, "bare LF"},
    {"bare LF in header", "GET http://example.com/ HTTP/1.1\r\nA: b\nC: d\r\n\r\n", -1, "bare LF"},
    {"bare CR", "GET http://example.com/ HTTP/1.1\r\nA: b\rC: d\r\n\r\n", -1, "bare CR"},
    {"LF LF", "GET http://example.com/ HTTP/1.1\n\n", -1, "bare LF"},
    {"CL and TE",
     "POST http://example.com/ HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: "
     "chunked\r\n\r\n",
     -1, "Content-Length together with Transfer-Encoding"},
    {"TE gzip", "POST http://example.com/ HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", -1,
     "other than chunked"},
    {"TE gzip, chunked",
     "POST http://example.com/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", -1,
     "other than chunked"},
    {"TE chunked twice",
     "POST http://example.com/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: "
     "chunked\r\n\r\n",
     -1, "duplicate Transfer-Encoding"},
    {"TE in HTTP/1.0", "POST http://example.com/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
     -1, "HTTP/1.0"},
    {"CL twice",
     "POST http://example.com/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", -1,
     "duplicate Content-Length"},
    {"CL list", "POST http://example.com/ HTTP/1.1\r\nContent-Length: 1, 1\r\n\r\n", -1,
     "bad Content-Length"},
    {"CL sign", "POST http://example.com/ HTTP/1.1\r\nContent-Length: +1\r\n\r\n", -1,
     "bad Content-Length"},
    {"CL huge", "POST http://example.com/ HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n",
     -1, "bad Content-Length"},
    {"CONNECT with a body", "CONNECT example.com:443 HTTP/1.1\r\nContent-Length: 4\r\n\r\n", -1,
     "CONNECT with a body"},
    {"duplicate Host",
     "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nhost: example.com\r\n\r\n", -1,
     "duplicate Host"},
    {"Host mismatch", "GET http://example.com/ HTTP/1.1\r\nHost: evil.example\r\n\r\n", -1,
     "does not match"},
    {"Host port mismatch", "GET http://example.com/ HTTP/1.1\r\nHost: example.com:8080\r\n\r\n", -1,
     "does not match"},
    {"Host garbage", "GET http://example.com/ HTTP/1.1\r\nHost: exa mple\r\n\r\n", -1,
     "does not match"},
    {"CONNECT Host mismatch", "CONNECT example.com:443 HTTP/1.1\r\nHost: evil.example\r\n\r\n", -1,
     "does not match"},
    {"NUL in line", "GET http://example.com/ HTTP/1.1\r\nX: a\0b\r\n\r\n", -1, "NUL"},
    {"control in value",
     "GET http://example.com/ HTTP/1.1\r\nX: a\x01"
     "b\r\n\r\n",
     -1, "control character"},
    {"DEL in value",
     "GET http://example.com/ HTTP/1.1\r\nX: a\x7f"
     "b\r\n\r\n",
     -1, "control character"},
    {"empty name", "GET http://example.com/ HTTP/1.1\r\n: x\r\n\r\n", -1, "bad header field"},
    {"no colon", "GET http://example.com/ HTTP/1.1\r\nHost\r\n\r\n", -1, "bad header field"},
    {"bad name char", "GET http://example.com/ HTTP/1.1\r\nX(y): z\r\n\r\n", -1,
     "bad header field"},
    {"HTTP/2.0", "GET http://example.com/ HTTP/2.0\r\n\r\n", -1, "version"},
    {"http/1.1", "GET http://example.com/ http/1.1\r\n\r\n", -1, "version"},
    {"two spaces", "GET  http://example.com/ HTTP/1.1\r\n\r\n", -1, "request line"},
    {"trailing space", "GET http://example.com/ HTTP/1.1 \r\n\r\n", -1, "version"},
    {"no version", "GET http://example.com/\r\n\r\n", -1, "request line"},
    {"empty request line", "\r\nGET http://example.com/ HTTP/1.1\r\n\r\n", -1, "empty"},
    {"space in target", "GET http://example.com/a b HTTP/1.1\r\n\r\n", -1, "version"},
    {"numeric name passes parsing", "CONNECT 2130706433:443 HTTP/1.1\r\n\r\n", 1, NULL},
};

static void test_parser(void)
{
	for (size_t i = 0; i < sizeof(req_cases) / sizeof(req_cases[0]); i++) {
		const struct req_case *t = &req_cases[i];
		size_t len = strlen(t->req);
		if (strcmp(t->name, "NUL in line") == 0)
			len = sizeof("GET http://example.com/ HTTP/1.1\r\nX: a\0b\r\n\r\n") - 1;
		char *copy = malloc(len + 1);
		memcpy(copy, t->req, len);
		const char *p = copy, *why = NULL;
		struct egr_request req;
		int r = egr_parse_request(&p, copy + len, &lim, &req, &why);
		int ok = r == t->want;
		if (r <= 0)
			ok = ok && p == copy;
		if (r < 0 && t->why != NULL)
			ok = ok && why != NULL && strstr(why, t->why) != NULL;
		T_OK(ok, "parse: %s -> %d%s%s", t->name, t->want, r < 0 ? ": " : "",
		     r < 0 && why != NULL ? why : "");
		/* the incremental scan agrees on where the header section ends */
		struct egr_scan sc = {0};
		size_t head_len = 0;
		const char *swhy = NULL;
		int s = 0;
		for (size_t k = 1; k <= len && s == 0; k++)
			s = egr_scan_head(&sc, copy, k, &lim, &head_len, &swhy);
		if (r == 1)
			T_OK(s == 1 && copy + head_len == p, "scan: %s ends where the parser does",
			     t->name);
		free(copy);
	}
}

static void test_parser_fields(void)
{
	const char *s = "POST http://Example.COM:8080/up?x=1 HTTP/1.1\r\nHost: example.com:8080\r\n"
	                "Content-Length: 5\r\n\r\nhello";
	const char *p = s, *why;
	struct egr_request req;
	T_INT(egr_parse_request(&p, s + strlen(s), &lim, &req, &why), 1, "parse a POST");
	T_STR(req.method, "POST", "method");
	T_STR(req.host.name, "example.com", "canonical host");
	T_INT(req.port, 8080, "port");
	T_OK(req.path.n == 7 && memcmp(req.path.p, "/up?x=1", 7) == 0, "path and query");
	T_OK(req.body == EGR_BODY_LENGTH && req.content_length == 5, "Content-Length 5");
	T_STR(p, "hello", "*p is at the body");

	/* the caps: request line and header section */
	struct egr_limits small = {1024, 256};
	char big[2048];
	int n = snprintf(big, sizeof(big), "GET http://example.com/%0250d HTTP/1.1\r\n\r\n", 0);
	p = big;
	T_INT(egr_parse_request(&p, big + n, &small, &req, &why), -1, "request line over the cap");
	T_OK(strstr(why, "request line") != NULL, "and says so (%s)", why);
	struct egr_scan sc = {0};
	size_t hl;
	T_INT(egr_scan_head(&sc, big, (size_t)n, &small, &hl, &why), -1,
	      "scan: request line over the cap");
	n = snprintf(big, sizeof(big), "GET http://example.com/ HTTP/1.1\r\nX: %01000d\r\n\r\n", 0);
	p = big;
	T_INT(egr_parse_request(&p, big + n, &small, &req, &why), -1,
	      "header section over the cap");
	T_OK(strstr(why, "header section") != NULL, "and says so (%s)", why);
	memset(&sc, 0, sizeof(sc));
	T_INT(egr_scan_head(&sc, big, (size_t)n, &small, &hl, &why), -1,
	      "scan: header section over the cap");
	/* a head of exactly the cap passes */
	n = snprintf(big, sizeof(big), "GET http://example.com/ HTTP/1.1\r\nX: %0*d\r\n\r\n",
	             (int)(1024 - 33 - 4 - 4), 0);
	p = big;
	T_INT(n, 1024, "a head of exactly 1024 bytes");
	T_INT(egr_parse_request(&p, big + n, &small, &req, &why), 1, "passes the 1024 cap");
	memset(&sc, 0, sizeof(sc));
	T_INT(egr_scan_head(&sc, big, (size_t)n, &small, &hl, &why), 1, "and the scan agrees");

	/* too many fields */
	size_t off = (size_t)snprintf(big, sizeof(big), "GET http://example.com/ HTTP/1.1\r\n");
	char many[8192];
	memcpy(many, big, off);
	for (int i = 0; i < EGR_MAX_HEADERS + 1; i++)
		off += (size_t)snprintf(many + off, sizeof(many) - off, "X: %d\r\n", i % 10);
	off += (size_t)snprintf(many + off, sizeof(many) - off, "\r\n");
	p = many;
	T_INT(egr_parse_request(&p, many + off, &lim, &req, &why), -1, "too many header fields");
}

static void test_forward(void)
{
	const char *s = "GET http://example.com:8080/x HTTP/1.1\r\n"
	                "Host: example.com:8080\r\n"
	                "Proxy-Authorization: Basic c2VjcmV0\r\n"
	                "Proxy-Connection: keep-alive\r\n"
	                "Connection: keep-alive, X-Secret\r\n"
	                "X-Secret: 1\r\n"
	                "Keep-Alive: 300\r\n"
	                "TE: trailers\r\n"
	                "Upgrade: websocket\r\n"
	                "Trailer: X\r\n"
	                "Proxy: http://evil.example:3128\r\n"
	                "Accept:   */*  \r\n"
	                "\r\n";
	const char *p = s, *why;
	struct egr_request req;
	T_INT(egr_parse_request(&p, s + strlen(s), &lim, &req, &why), 1, "parse for forwarding");
	char out[4096];
	ssize_t n = egr_build_forward(&req, out, sizeof(out));
	T_OK(n > 0, "build the forwarded head");
	out[n > 0 ? n : 0] = '\0';
	T_STR(
	    out,
	    "GET /x HTTP/1.1\r\nHost: example.com:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n",
	    "hop-by-hop and Proxy-* dropped, Host rewritten, Connection: close");
	T_OK(egr_build_forward(&req, out, 20) < 0, "a head that does not fit is refused");

	s = "GET http://[2001:db8::1]/ HTTP/1.0\r\n\r\n";
	p = s;
	egr_parse_request(&p, s + strlen(s), &lim, &req, &why);
	n = egr_build_forward(&req, out, sizeof(out));
	out[n > 0 ? n : 0] = '\0';
	T_STR(out, "GET / HTTP/1.1\r\nHost: [2001:db8::1]\r\nConnection: close\r\n\r\n",
	      "an IPv6 host is bracketed, port 80 left out");
}

struct chunk_case {
	const char *name, *in;
	ssize_t want; /* bytes of body, -1 refused */
	bool done;
};

static void test_chunked(void)
{
	static const struct chunk_case cases[] = {
	    {"one chunk", "5\r\nhello\r\n0\r\n\r\nGET /smuggled", 15, true},
	    {"two chunks", "1\r\na\r\n2\r\nbc\r\n0\r\n\r\n", 18, true},
	    {"extension", "1;x=y\r\na\r\n0\r\n\r\n", 15, true},
	    {"trailer", "0\r\nX-T: 1\r\n\r\nrest", 13, true},
	    {"upper hex", "A\r\n0123456789\r\n0\r\n\r\n", 20, true},
	    {"partial", "5\r\nhel", 6, false},
	    {"bad size", "x\r\n", -1, false},
	    {"empty size", "\r\n", -1, false},
	    {"size then space", "5 \r\n", -1, false},
	    {"bare LF", "5\nhello\r\n", -1, false},
	    {"data without CRLF", "1\r\nab", -1, false},
	    {"huge size", "10000000000000000\r\n", -1, false},
	    {"bare LF in trailer", "0\r\nX: 1\n\r\n", -1, false},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct egr_chunked c;
		memset(&c, 0, sizeof(c));
		bool done = false;
		const char *why;
		ssize_t r = egr_chunked_feed(&c, cases[i].in, strlen(cases[i].in), &done, &why);
		T_OK(r == cases[i].want && done == cases[i].done, "chunked: %s -> %zd%s",
		     cases[i].name, cases[i].want, cases[i].done ? " done" : "");
	}
	/* byte by byte gives the same answer */
	const char *in = "3\r\nabc\r\n0\r\nA: b\r\n\r\nNEXT";
	struct egr_chunked c;
	memset(&c, 0, sizeof(c));
	size_t body = 0;
	bool done = false;
	const char *why;
	for (size_t i = 0; i < strlen(in) && !done; i++) {
		ssize_t r = egr_chunked_feed(&c, in + i, 1, &done, &why);
		body += r > 0 ? (size_t)r : 0;
	}
	T_OK(done && body == strlen(in) - 4, "chunked byte by byte stops before NEXT");
}

/* ---- TLS ----------------------------------------------------------------- */

static size_t put16(unsigned char *p, size_t at, size_t v)
{
	p[at] = (unsigned char)(v >> 8);
	p[at + 1] = (unsigned char)v;
	return at + 2;
}

/* One entry of a server_name list: a name_type and its bytes (may hold NUL) */
struct sn_entry {
	int type; /* -1 ends the list */
	const char *name;
	size_t len;
};

/* One extension: server_name from entries (type 0), or raw bytes */
struct ext_spec {
	unsigned type;
	struct sn_entry e[3];
	const char *raw;
	size_t raw_n;
	size_t list_junk; /* server_name: bytes after its list */
};

struct hello_spec {
	struct ext_spec ext[3];
	size_t next;
	bool no_exts;                     /* no extensions block at all */
	unsigned char rec_v[2], hel_v[2]; /* 0,0: 3,1 and 3,3 */
	size_t session;                   /* session id length */
	size_t pad;                       /* a padding extension of this size, last */
	size_t junk;                      /* bytes after the hello inside its record */
	int hlen_delta;                   /* added to the handshake length */
};

static size_t ext_build(unsigned char *p, size_t n, const struct ext_spec *e)
{
	n = put16(p, n, e->type);
	size_t len_at = n;
	n += 2;
	if (e->type == 0 && e->raw == NULL) {
		size_t list_at = n;
		n += 2;
		for (size_t i = 0; i < 3 && e->e[i].type >= 0; i++) {
			size_t l = e->e[i].len != 0 ? e->e[i].len : strlen(e->e[i].name);
			p[n++] = (unsigned char)e->e[i].type;
			n = put16(p, n, l);
			memcpy(p + n, e->e[i].name, l);
			n += l;
		}
		put16(p, list_at, n - list_at - 2);
		memset(p + n, 0, e->list_junk);
		n += e->list_junk;
	} else {
		memcpy(p + n, e->raw, e->raw_n);
		n += e->raw_n;
	}
	put16(p, len_at, n - len_at - 2);
	return n;
}

/* A TLS record holding a ClientHello as the spec says; returns its length */
static size_t hello_build(unsigned char *out, const struct hello_spec *h)
{
	static unsigned char body[20000];
	size_t n = 0;
	body[n++] = h->hel_v[0] != 0 ? h->hel_v[0] : 3;
	body[n++] = h->hel_v[0] != 0 ? h->hel_v[1] : 3;
	memset(body + n, 7, 32); /* random */
	n += 32;
	body[n++] = (unsigned char)h->session;
	memset(body + n, 9, h->session);
	n += h->session;
	n = put16(body, n, 2); /* cipher suites: TLS_AES_128_GCM_SHA256 */
	body[n++] = 0x13;
	body[n++] = 0x01;
	body[n++] = 1; /* compression: null */
	body[n++] = 0;
	if (!h->no_exts) {
		size_t exts_at = n;
		n += 2;
		for (size_t i = 0; i < h->next; i++)
			n = ext_build(body, n, &h->ext[i]);
		if (h->pad > 0) {
			n = put16(body, n, 0x0015); /* padding */
			n = put16(body, n, h->pad);
			memset(body + n, 0, h->pad);
			n += h->pad;
		}
		put16(body, exts_at, n - exts_at - 2);
	}
	size_t rec = 4 + n + h->junk, k = 0;
	out[k++] = 0x16;
	out[k++] = h->rec_v[0] != 0 ? h->rec_v[0] : 3;
	out[k++] = h->rec_v[0] != 0 ? h->rec_v[1] : 1;
	k = put16(out, k, rec);
	size_t hlen = (size_t)((long)n + h->hlen_delta);
	out[k++] = 1; /* client_hello */
	out[k++] = (unsigned char)(hlen >> 16);
	k = put16(out, k, hlen & 0xffff);
	memcpy(out + k, body, n);
	k += n;
	memset(out + k, 0x16, h->junk);
	return k + h->junk;
}

#define SN(name)                                             \
	{                                                    \
		0, {{0, name, 0}, {-1, NULL, 0}}, NULL, 0, 0 \
	}
#define SN_N(name, n)                                        \
	{                                                    \
		0, {{0, name, n}, {-1, NULL, 0}}, NULL, 0, 0 \
	}
#define RAW(type, raw)                                         \
	{                                                      \
		type, {{-1, NULL, 0}}, raw, sizeof(raw) - 1, 0 \
	}
/* the padding that makes a record body of `rec` bytes around SN("a.example"):
 * 4 (handshake header) + 41 (version to compression) + 2 (extensions length)
 * + 18 (the server_name) + 4 (padding type and length) */
#define PAD_TO(rec) ((rec)-69)

struct tls_case {
	const char *what;
	struct hello_spec h;
	int want;
	const char *sni; /* want 1: the name found, NULL for none */
	const char *why; /* want -1: the reason, a prefix */
};

static const struct tls_case tls_cases[] = {
    {"one host_name", {.ext = {SN("api.example.com")}, .next = 1}, 1, "api.example.com", NULL},
    {"no extensions block: no SNI", {.no_exts = true}, 1, NULL, NULL},
    {"empty extensions: no SNI", {.next = 0}, 1, NULL, NULL},
    {"other extensions, no server_name",
     {.ext = {RAW(0x000a, "\x00\x02\x00\x1d")}, .next = 1},
     1,
     NULL,
     NULL},
    {"server_name among others",
     {.ext = {RAW(0x000a, "\x00\x02\x00\x1d"), SN("a.example"), RAW(0x002b, "\x02\x03\x04")},
      .next = 3},
     1,
     "a.example",
     NULL},
    {"record version 3,3",
     {.ext = {SN("a.example")}, .next = 1, .rec_v = {3, 3}},
     1,
     "a.example",
     NULL},
    {"record version 3,2",
     {.ext = {SN("a.example")}, .next = 1, .rec_v = {3, 2}},
     1,
     "a.example",
     NULL},
    {"a 32-byte session id",
     {.ext = {SN("a.example")}, .next = 1, .session = 32},
     1,
     "a.example",
     NULL},
    {"a ClientHello that fills a 16384-byte record",
     {.ext = {SN("a.example")}, .next = 1, .pad = PAD_TO(16384)},
     1,
     "a.example",
     NULL},
    /* record version tricks */
    {"record version SSL 3.0",
     {.ext = {SN("a.example")}, .next = 1, .rec_v = {3, 0}},
     -1,
     NULL,
     "TLS record version"},
    {"record version 3,4",
     {.ext = {SN("a.example")}, .next = 1, .rec_v = {3, 4}},
     -1,
     NULL,
     "TLS record version"},
    {"record version 3,255",
     {.ext = {SN("a.example")}, .next = 1, .rec_v = {3, 255}},
     -1,
     NULL,
     "TLS record version"},
    {"record version 2,0",
     {.ext = {SN("a.example")}, .next = 1, .rec_v = {2, 0}},
     -1,
     NULL,
     "not a TLS ClientHello"},
    {"ClientHello version SSL 3.0",
     {.ext = {SN("a.example")}, .next = 1, .hel_v = {3, 0}},
     -1,
     NULL,
     "ClientHello version"},
    {"ClientHello version 3,4",
     {.ext = {SN("a.example")}, .next = 1, .hel_v = {3, 4}},
     -1,
     NULL,
     "ClientHello version"},
    {"ClientHello version 4,3",
     {.ext = {SN("a.example")}, .next = 1, .hel_v = {4, 3}},
     -1,
     NULL,
     "ClientHello version"},
    /* sizes and framing */
    {"a record over 16384 bytes",
     {.ext = {SN("a.example")}, .next = 1, .pad = PAD_TO(16385)},
     -1,
     NULL,
     "bad TLS record length"},
    {"a ClientHello longer than its record",
     {.ext = {SN("a.example")}, .next = 1, .hlen_delta = 50},
     -1,
     NULL,
     "ClientHello split across TLS records"},
    {"a ClientHello shorter than its record",
     {.ext = {SN("a.example")}, .next = 1, .hlen_delta = -4},
     -1,
     NULL,
     "more than a ClientHello in its TLS record"},
    {"bytes after the ClientHello in its record",
     {.ext = {SN("a.example")}, .next = 1, .junk = 4},
     -1,
     NULL,
     "more than a ClientHello in its TLS record"},
    {"a 33-byte session id",
     {.ext = {SN("a.example")}, .next = 1, .session = 33},
     -1,
     NULL,
     "malformed ClientHello"},
    /* the server name list */
    {"two server_name extensions",
     {.ext = {SN("a.example"), SN("b.example")}, .next = 2},
     -1,
     NULL,
     "two server_name extensions"},
    {"the same name twice",
     {.ext = {SN("a.example"), SN("a.example")}, .next = 2},
     -1,
     NULL,
     "two server_name extensions"},
    {"two host_names in one list",
     {.ext = {{0, {{0, "a.example", 0}, {0, "b.example", 0}, {-1, NULL, 0}}, NULL, 0, 0}},
      .next = 1},
     -1,
     NULL,
     "bad server name list"},
    {"host_name then another name type",
     {.ext = {{0, {{0, "a.example", 0}, {1, "b.example", 0}, {-1, NULL, 0}}, NULL, 0, 0}},
      .next = 1},
     -1,
     NULL,
     "bad server name list"},
    {"another name type then host_name",
     {.ext = {{0, {{1, "b.example", 0}, {0, "a.example", 0}, {-1, NULL, 0}}, NULL, 0, 0}},
      .next = 1},
     -1,
     NULL,
     "bad server name list"},
    {"another name type alone",
     {.ext = {{0, {{1, "b.example", 0}, {-1, NULL, 0}}, NULL, 0, 0}}, .next = 1},
     -1,
     NULL,
     "bad server name list"},
    {"an empty name list",
     {.ext = {{0, {{-1, NULL, 0}}, NULL, 0, 0}}, .next = 1},
     -1,
     NULL,
     "bad server name list"},
    {"an empty host_name", {.ext = {SN_N("", 0)}, .next = 1}, -1, NULL, "bad server name list"},
    {"bytes after the name list",
     {.ext = {{0, {{0, "a.example", 0}, {-1, NULL, 0}}, NULL, 0, 1}}, .next = 1},
     -1,
     NULL,
     "bad server name list"},
    {"an empty server_name extension",
     {.ext = {RAW(0x0000, "")}, .next = 1},
     -1,
     NULL,
     "bad server name list"},
    {"a name list longer than its extension",
     {.ext = {RAW(0x0000, "\x00\x09\x00\x00\x01a")}, .next = 1},
     -1,
     NULL,
     "bad server name list"},
    /* the real name hidden */
    {"ECH with a listed outer name",
     {.ext = {SN("a.example"), RAW(0xfe0d, "\x00\x01")}, .next = 2},
     -1,
     NULL,
     "encrypted ClientHello"},
    {"ECH before the outer name",
     {.ext = {RAW(0xfe0d, "\x00\x01"), SN("a.example")}, .next = 2},
     -1,
     NULL,
     "encrypted ClientHello"},
    {"ESNI",
     {.ext = {SN("a.example"), RAW(0xffce, "\x00\x01")}, .next = 2},
     -1,
     NULL,
     "encrypted ClientHello"},
};

static void test_tls_hello(void)
{
	static unsigned char rec[20000];
	for (size_t i = 0; i < sizeof(tls_cases) / sizeof(tls_cases[0]); i++) {
		const struct tls_case *tc = &tls_cases[i];
		size_t n = hello_build(rec, &tc->h);
		struct egr_hello h;
		const char *why = "";
		int r = egr_tls_hello(rec, n, &h, &why);
		if (tc->want == 1)
			T_OK(r == 1 &&
			         (tc->sni == NULL ? h.sni == NULL
			                          : h.sni != NULL && h.sni_len == strlen(tc->sni) &&
			                                memcmp(h.sni, tc->sni, h.sni_len) == 0),
			     "ClientHello: %s (r %d, why %s)", tc->what, r, r < 0 ? why : "-");
		else
			T_OK(r == -1 && strncmp(why, tc->why, strlen(tc->why)) == 0,
			     "ClientHello refused: %s (r %d, why %s)", tc->what, r,
			     r < 0 ? why : "-");
	}
}

/* The rule for the server name, per kind of CONNECT host */
struct sni_case {
	const char *host; /* as in an authority */
	const char *sni;  /* NULL: the ClientHello has none */
	size_t len;       /* 0: strlen */
	const char *why;  /* NULL: allowed */
};

static const char not_host[] = "the ClientHello's SNI is not the CONNECT host";
static const char not_addr[] = "the ClientHello's SNI is not the CONNECT address";
static const char bad_byte[] = "SNI with a byte that is not a letter, digit, hyphen or dot";

static const struct sni_case sni_cases[] = {
    /* a name */
    {"upstream.test", "upstream.test", 0, NULL},
    {"UPSTREAM.test.", "upstream.test", 0, NULL}, /* the CONNECT host is canonical */
    {"upstream.test", NULL, 0, "ClientHello without server name"},
    {"upstream.test", "other.test", 0, not_host},
    {"upstream.test", "upstream.test.", 0, "SNI with a trailing dot"},
    {"upstream.test", "upstream.test..", 0, "SNI with a trailing dot"},
    {"upstream.test", "UPSTREAM.TEST", 0, "SNI not in lower case"},
    {"upstream.test", "Upstream.test", 0, "SNI not in lower case"},
    {"upstream.test", "upstream.test\0", 14, bad_byte},
    {"upstream.test", "upstream.test\0other.test", 24, bad_byte},
    {"upstream.test", "upstream\0.test", 14, bad_byte},
    {"upstream.test", "upstream.test\xc0\xae", 0, bad_byte},
    {"upstream.test", "upstream_test", 0, bad_byte},
    {"upstream.test", "upstream.test:443", 0, bad_byte},
    {"upstream.test", "", 0, "bad server name list"},
    {"upstream.test", "upstream.tes", 0, not_host},
    {"upstream.test", "upstream.test.other.test", 0, not_host},
    {"upstream.test", "x.upstream.test", 0, not_host},
    {"upstream.test", "10.233.0.2", 0, not_host},
    /* an IPv4 literal */
    {"10.233.0.2", NULL, 0, NULL},
    {"10.233.0.2", "10.233.0.2", 0, NULL},
    {"10.233.0.2", "other.test", 0, not_addr},
    {"10.233.0.2", "upstream.test", 0, not_addr},
    {"10.233.0.2", "10.233.0.2.", 0, not_addr},
    {"10.233.0.2", "010.233.0.2", 0, not_addr},
    {"10.233.0.2", "10.233.0.20", 0, not_addr},
    {"10.233.0.2", "10.233.0", 0, not_addr},
    {"10.233.0.2", "10.233.0.2\0", 11, not_addr},
    {"10.233.0.2", "10.233.0.2:443", 0, not_addr},
    {"10.233.0.2", "::ffff:10.233.0.2", 0, not_addr},
    {"10.233.0.2", "[::ffff:10.233.0.2]", 0, not_addr},
    {"10.233.0.2", "", 0, "bad server name list"},
    /* an IPv6 literal */
    {"[fd00:233::2]", NULL, 0, NULL},
    {"[fd00:233::2]", "fd00:233::2", 0, NULL},
    {"[FD00:233:0::2]", "fd00:233::2", 0, NULL},
    {"[fd00:233::2]", "[fd00:233::2]", 0, not_addr},
    {"[fd00:233::2]", "FD00:233::2", 0, not_addr},
    {"[fd00:233::2]", "fd00:233:0:0:0:0:0:2", 0, not_addr},
    {"[fd00:233::2]", "fd00:233::2%eth0", 0, not_addr},
    {"[fd00:233::2]", "other.test", 0, not_addr},
    /* an IPv4-mapped IPv6 literal is its own entry, with its own text */
    {"[::ffff:10.233.0.2]", NULL, 0, NULL},
    {"[::ffff:10.233.0.2]", "::ffff:10.233.0.2", 0, NULL},
    {"[::ffff:10.233.0.2]", "10.233.0.2", 0, not_addr},
    {"[::ffff:10.233.0.2]", "::ffff:a:e902", 0, not_addr},
};

static void test_sni_rule(void)
{
	for (size_t i = 0; i < sizeof(sni_cases) / sizeof(sni_cases[0]); i++) {
		const struct sni_case *sc = &sni_cases[i];
		struct egr_host h;
		const char *ignored;
		T_INT(egr_host_parse(sc->host, strlen(sc->host), &h, &ignored), 0, "host %s",
		      sc->host);
		size_t n = sc->sni == NULL ? 0 : sc->len != 0 ? sc->len : strlen(sc->sni);
		const char *why = egr_sni_refusal(&h, sc->sni, n);
		char shown[64];
		size_t k = 0;
		for (size_t j = 0; j < n && k + 5 < sizeof(shown); j++)
			k += (size_t)snprintf(shown + k, sizeof(shown) - k,
			                      sc->sni[j] > 0x20 && sc->sni[j] < 0x7f ? "%c"
			                                                             : "\\x%02x",
			                      (unsigned char)sc->sni[j]);
		shown[k] = '\0';
		if (sc->sni != NULL && n == 0)
			snprintf(shown, sizeof(shown), "(empty)");
		if (sc->why == NULL)
			T_OK(why == NULL, "SNI rule: %s takes %s%s (got: %s)", sc->host,
			     sc->sni == NULL ? "no SNI" : "SNI ", shown, why != NULL ? why : "-");
		else
			T_OK(why != NULL && strncmp(why, sc->why, strlen(sc->why)) == 0,
			     "SNI rule: %s refuses %s%s (got: %s)", sc->host,
			     sc->sni == NULL ? "no SNI" : "SNI ", shown,
			     why != NULL ? why : "allowed");
	}
}

static void test_tls(void)
{
	static unsigned char hello[20000];
	struct hello_spec spec = {.ext = {SN("api.example.com")}, .next = 1};
	size_t n = hello_build(hello, &spec);
	const char *name, *why;
	size_t nl;
	struct egr_hello h;
	T_INT(egr_tls_sni(hello, n, &name, &nl, &why), 1, "SNI found");
	T_OK(nl == 15 && memcmp(name, "api.example.com", 15) == 0, "SNI is api.example.com");
	int need_more = 1;
	for (size_t k = 0; k < n; k++)
		need_more = need_more && egr_tls_hello(hello, k, &h, &why) == 0;
	T_OK(need_more, "every prefix asks for more bytes (a hello split across segments)");
	struct hello_spec none = {.next = 0};
	n = hello_build(hello, &none);
	T_INT(egr_tls_sni(hello, n, &name, &nl, &why), -1, "no SNI: egr_tls_sni refuses");
	T_INT(egr_tls_hello(hello, n, &h, &why), 1, "no SNI: egr_tls_hello reads it");
	T_OK(h.sni == NULL, "no SNI: none found");
	static const struct {
		const char *bytes, *what;
	} plain[] = {
	    {"GET / HTTP/1.1\r\n", "a request line"},
	    {"G", "its first byte"},
	    {"\x16\x02", "a handshake record of major version 2"},
	    {"\x80\x2e\x01", "an SSL 2.0 ClientHello"},
	    {"SSH-2.0-x\r\n", "an SSH banner"},
	};
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
		T_INT(egr_tls_hello((const unsigned char *)plain[i].bytes, strlen(plain[i].bytes),
		                    &h, &why),
		      -1, "not TLS, refused at once: %s", plain[i].what);
	/* the largest record there is, and one byte more (the table's PAD_TO) */
	struct hello_spec big = {.ext = {SN("a.example")}, .next = 1, .pad = PAD_TO(16384)};
	T_INT(hello_build(hello, &big), EGR_TLS_RECORD_MAX, "PAD_TO(16384) builds a full record");
	T_INT(egr_tls_hello(hello, EGR_TLS_RECORD_MAX, &h, &why), 1, "a full record is read");
	big.pad++;
	T_INT(hello_build(hello, &big), EGR_TLS_RECORD_MAX + 1, "PAD_TO(16384) + 1 is one over");
	/* a record header alone is enough to refuse a record that is too large */
	T_INT(egr_tls_hello((const unsigned char *)"\x16\x03\x01\x40\x01", 5, &h, &why), -1,
	      "a 16385-byte record is refused from its header");
	T_INT(egr_tls_hello((const unsigned char *)"\x16\x03\x01\x40\x00", 5, &h, &why), 0,
	      "a 16384-byte record is waited for");
	T_INT(egr_tls_hello((const unsigned char *)"\x16\x03\x01\x00\x00", 5, &h, &why), -1,
	      "an empty record is refused");
	T_INT(egr_tls_hello((const unsigned char *)"\x16\x03\x00", 3, &h, &why), -1,
	      "an SSL 3.0 record is refused from its third byte");
	/* a hello in two records: the first ends early */
	n = hello_build(hello, &spec);
	unsigned char split[600];
	memcpy(split, hello, 5 + 20);
	put16(split, 3, 20);
	T_INT(egr_tls_hello(split, 25, &h, &why), -1, "a ClientHello in two records");
	T_OK(strcmp(why, "ClientHello split across TLS records") == 0, "... said so: %s", why);
}

/* ---- records ------------------------------------------------------------- */

static void test_records(void)
{
	char line[1024];
	int n = egr_format_attempt(line, sizeof(line), "CONNECT", "example.com", 443, "1.2.3.4",
	                           true, "ok");
	T_OK(n > 0, "attempt record");
	T_STR(line,
	      "{\"event\":\"attempt\",\"method\":\"CONNECT\",\"host\":\"example.com\",\"port\":443,"
	      "\"address\":\"1.2.3.4\",\"allowed\":true,\"reason\":\"ok\"}\n",
	      "attempt record text");
	n = egr_format_attempt(line, sizeof(line), NULL, NULL, -1, NULL, false,
	                       "bad \"x\"\\\n\x01\xff");
	T_STR(line,
	      "{\"event\":\"attempt\",\"method\":null,\"host\":null,\"port\":null,\"address\":null,"
	      "\"allowed\":false,\"reason\":\"bad \\\"x\\\"\\\\\\u000a\\u0001\\u00ff\"}\n",
	      "nulls and escapes");
	n = egr_format_close(line, sizeof(line), "example.com", 80, 10, 20, 30);
	T_STR(line,
	      "{\"event\":\"close\",\"host\":\"example.com\",\"port\":80,\"bytes_up\":10,"
	      "\"bytes_down\":20,\"ms\":30}\n",
	      "close record text");
	T_INT(egr_format_close(line, 10, "example.com", 80, 1, 2, 3), -1,
	      "a short buffer is refused");
	n = egr_format_limit(line, sizeof(line), "api.example.com", 443, 1048576, 1048576);
	T_STR(line,
	      "{\"event\":\"limit\",\"host\":\"api.example.com\",\"port\":443,"
	      "\"session_bytes_up\":1048576,\"max_bytes_up\":1048576}\n",
	      "limit record text");
	T_INT(n, (long long)strlen(line), "limit record length");
}

/* ---- options ------------------------------------------------------------- */

static int opts(const char *const *args, struct egr_opts *o, char *err, size_t errsz)
{
	char *argv[32];
	int argc = 0;
	argv[argc++] = (char *)"mcpgate-egress";
	for (; args[argc - 1] != NULL; argc++)
		argv[argc] = (char *)args[argc - 1];
	return egr_opts_parse(argc, argv, o, err, errsz);
}

static void test_options(void)
{
	struct egr_opts o;
	char err[256];
	static const char *const good[] = {
	    "-listen",      "127.0.0.1:3128", "-allow",       "example.com", "-allow-private",
	    "db.test:5432", "-deny-address",  "10.89.0.0/24", "-lifeline",   "-max-tunnels",
	    "10",           "-idle-timeout",  "1000",         NULL};
	T_INT(opts(good, &o, err, sizeof(err)), 0, "good options");
	T_OK(o.nallow == 2 && o.allow[1].private_ok && o.allow[1].port == 5432 && o.ndeny == 1 &&
	         o.lifeline && o.max_tunnels == 10 && o.idle_timeout_ms == 1000 &&
	         o.lim.max_header_bytes == 16384 && o.lim.max_request_line == 8192,
	     "options land in the struct, defaults elsewhere");
	egr_opts_free(&o);
	static const char *const wild[] = {"-listen", "127.0.0.1:3128", "-allow", "*.example.com",
	                                   NULL};
	T_INT(opts(wild, &o, err, sizeof(err)), 0, "a wildcard -allow");
	T_OK(o.nallow == 1 && o.allow[0].wildcard &&
	         strcmp(o.allow[0].host.name, "example.com") == 0,
	     "the wildcard reaches the allowlist intact");
	egr_opts_free(&o);
	static const char *const v6[] = {"-listen", "[::]:8080", NULL};
	T_INT(opts(v6, &o, err, sizeof(err)), 0, "IPv6 listen");
	egr_opts_free(&o);
	static const char *const help[] = {"-h", NULL};
	T_INT(opts(help, &o, err, sizeof(err)), 1, "-h asks for help");
	egr_opts_free(&o);
	struct bad {
		const char *args[5];
		const char *names;
	};
	static const struct bad bad[] = {
	    {{"-allow", "example.com", NULL}, "-listen"},
	    {{"-listen", "example.com:80", NULL}, "-listen"},
	    {{"-listen", "127.0.0.1", NULL}, "-listen"},
	    {{"-listen", "127.0.0.1:99999", NULL}, "-listen"},
	    {{"-listen", NULL}, "-listen"},
	    {{"-listen", "127.0.0.1:1", "-bogus", NULL}, "-bogus"},
	    {{"-listen", "127.0.0.1:1", "-allow", "127.1", NULL}, "-allow"},
	    {{"-listen", "127.0.0.1:1", "-allow", "10.0.0.1", NULL}, "-allow"},
	    {{"-listen", "127.0.0.1:1", "-allow-private", "[fd00:ec2::254]", NULL},
	     "-allow-private [fd00:ec2::254]: a cloud platform's metadata or service address is "
	     "always refused (fd00:ec2::/32 AWS"},
	    {{"-listen", "127.0.0.1:1", "-allow", "168.63.129.16", NULL},
	     "(168.63.129.16/32 Azure WireServer)"},
	    {{"-listen", "127.0.0.1:1", "-allow", "*.com", NULL}, "-allow *.com"},
	    {{"-listen", "127.0.0.1:1", "-allow-private", "a.*.example", NULL},
	     "-allow-private a.*.example"},
	    {{"-listen", "127.0.0.1:1", "-deny-address", "10.0.0.0/40", NULL}, "-deny-address"},
	    {{"-listen", "127.0.0.1:1", "-max-tunnels", "0", NULL}, "-max-tunnels"},
	    {{"-listen", "127.0.0.1:1", "-max-tunnels", "12x", NULL}, "-max-tunnels"},
	    {{"-listen", "127.0.0.1:1", "-max-tunnels", " 12", NULL}, "-max-tunnels"},
	    {{"-listen", "127.0.0.1:1", "-max-tunnels", "-1", NULL}, "-max-tunnels"},
	    {{"-listen", "127.0.0.1:1", "-max-header-bytes", "99999999999", NULL},
	     "-max-header-bytes"},
	    {{"-listen", "127.0.0.1:1", "-dns-timeout", "", NULL}, "-dns-timeout"},
	    {{"-listen", "127.0.0.1:1", "-max-request-line", "20000", NULL}, "-max-request-line"},
	    {{"-listen", "127.0.0.1:1", "-connect-timeout", NULL}, "-connect-timeout"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = opts(bad[i].args, &o, err, sizeof(err));
		T_OK(r == -1 && strstr(err, bad[i].names) != NULL, "bad options #%zu: %s", i, err);
		egr_opts_free(&o);
	}
}

/* -max-bytes-up: off by default, a decimal byte count from 1 */
static void test_max_bytes_up(void)
{
	struct egr_opts o;
	char err[256];
	static const char *const none[] = {"-listen", "127.0.0.1:1", NULL};
	T_INT(opts(none, &o, err, sizeof(err)), 0, "no -max-bytes-up");
	T_INT((long long)o.max_bytes_up, 0, "no cap by default");
	egr_opts_free(&o);
	static const char *const big[] = {"-listen", "127.0.0.1:1", "-max-bytes-up", "107374182400",
	                                  NULL};
	T_INT(opts(big, &o, err, sizeof(err)), 0, "-max-bytes-up 100 GiB");
	T_INT((long long)o.max_bytes_up, 107374182400ll, "-max-bytes-up lands in the struct");
	egr_opts_free(&o);
	static const char *const bad[][5] = {
	    {"-listen", "127.0.0.1:1", "-max-bytes-up", "0", NULL},
	    {"-listen", "127.0.0.1:1", "-max-bytes-up", "10m", NULL},
	    {"-listen", "127.0.0.1:1", "-max-bytes-up", "-1", NULL},
	    {"-listen", "127.0.0.1:1", "-max-bytes-up", "99999999999999999999", NULL},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = opts(bad[i], &o, err, sizeof(err));
		T_OK(r == -1 && strstr(err, "-max-bytes-up") != NULL,
		     "-max-bytes-up %s refused: %s", bad[i][3], err);
		egr_opts_free(&o);
	}
}

int main(void)
{
	test_max_bytes_up();
	test_hosts();
	test_refused_names();
	test_authorities();
	test_classifier();
	test_cidr();
	test_allowlist();
	test_wildcards();
	test_addrs_check();
	test_parser();
	test_parser_fields();
	test_forward();
	test_chunked();
	test_tls();
	test_tls_hello();
	test_sni_rule();
	test_records();
	test_options();
	return t_done();
}
