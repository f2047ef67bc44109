/* libFuzzer target: mcpgate-egress's names and addresses. Invariants:
 *   - a canonical host is NUL-terminated, at most 253 characters, and
 *     parsing it again gives the same kind and text (idempotent);
 *   - a name judged EGR_HOST_NAME is never an address to libc: neither
 *     inet_aton nor inet_pton read it (no numeric-looking bypass);
 *   - an IPv4-mapped address classifies exactly as its IPv4 address;
 *   - a parsed range contains its own address;
 *   - a wildcard entry (*.NAME) never matches NAME, matches x.NAME and not
 *     x.y.NAME;
 *   - authorities, ranges and allow entries never crash on any bytes. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress/addr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_host(const char *s, size_t n)
{
	struct egr_host h, again;
	const char *why;
	if (egr_host_parse(s, n, &h, &why) < 0) {
		if (why == NULL)
			__builtin_trap();
		return;
	}
	size_t len = strnlen(h.name, sizeof(h.name));
	if (len == sizeof(h.name) || len > EGR_HOST_MAX || len == 0)
		__builtin_trap();
	char text[EGR_HOST_MAX + 3];
	size_t tn = len;
	if (h.kind == EGR_HOST_IPV6) {
		text[0] = '[';
		memcpy(text + 1, h.name, len);
		text[len + 1] = ']';
		tn = len + 2;
	} else {
		memcpy(text, h.name, len);
	}
	if (egr_host_parse(text, tn, &again, &why) < 0 || again.kind != h.kind ||
	    strcmp(again.name, h.name) != 0)
		__builtin_trap();
	if (h.kind == EGR_HOST_NAME || h.kind == EGR_HOST_NUMERIC) {
		for (size_t i = 0; i < len; i++) {
			char c = h.name[i];
			if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
			      c == '.'))
				__builtin_trap();
		}
	}
	struct in_addr a4;
	struct in6_addr a6;
	if (h.kind == EGR_HOST_NAME &&
	    (inet_aton(h.name, &a4) != 0 || inet_pton(AF_INET6, h.name, &a6) == 1))
		__builtin_trap();
	if (h.kind == EGR_HOST_IPV4) {
		char back[64];
		egr_addr_format(&h.addr, back, sizeof(back));
		if (strcmp(back, h.name) != 0)
			__builtin_trap();
	}
}

/* A wildcard entry is over a name of two labels or more; it never matches
 * that name itself, and matches one label more. */
static void check_wildcard(const struct egr_allow *e, bool private_ok)
{
	bool got_private;
	uint16_t p = e->port != 0 ? e->port : 443;
	if (e->host.kind != EGR_HOST_NAME || strchr(e->host.name, '.') == NULL ||
	    egr_allow_match(e, 1, &e->host, p, &got_private) != EGR_MATCH_NONE)
		__builtin_trap();
	char child[EGR_HOST_MAX + 8];
	int n = snprintf(child, sizeof(child), "x.%s", e->host.name);
	struct egr_host h;
	const char *why;
	if (n > 0 && n <= EGR_HOST_MAX && egr_host_parse(child, (size_t)n, &h, &why) == 0 &&
	    (egr_allow_match(e, 1, &h, p, &got_private) != EGR_MATCH_OK ||
	     got_private != private_ok))
		__builtin_trap();
	n = snprintf(child, sizeof(child), "x.y.%s", e->host.name);
	if (n > 0 && n <= EGR_HOST_MAX && egr_host_parse(child, (size_t)n, &h, &why) == 0 &&
	    egr_allow_match(e, 1, &h, p, &got_private) != EGR_MATCH_NONE)
		__builtin_trap();
}

static void check_class(const uint8_t *data, size_t size)
{
	if (size < 17)
		return;
	struct egr_addr a, m;
	memset(&a, 0, sizeof(a));
	a.family = data[0] & 1 ? 6 : 4;
	memcpy(a.b, data + 1, a.family == 6 ? 16 : 4);
	const char *r1, *r2;
	enum egr_addr_class c = egr_addr_classify(&a, &r1);
	if (r1 == NULL)
		__builtin_trap();
	if (a.family == 4) {
		memset(&m, 0, sizeof(m));
		m.family = 6;
		m.b[10] = m.b[11] = 0xff;
		memcpy(m.b + 12, a.b, 4);
		if (egr_addr_classify(&m, &r2) != c || strcmp(r1, r2) != 0)
			__builtin_trap();
		struct egr_addr u = m;
		egr_addr_unmap(&u);
		if (u.family != 4 || memcmp(u.b, a.b, 4) != 0)
			__builtin_trap();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	memcpy(s, data, size);
	s[size] = '\0';
	check_host(s, size);

	struct egr_host h;
	uint16_t port;
	const char *why;
	if (egr_authority_parse(s, size, 0, &h, &port, &why) == 0 && port == 0)
		__builtin_trap();
	if (egr_authority_parse(s, size, 80, &h, &port, &why) == 0 && port == 0)
		__builtin_trap();

	struct egr_cidr c;
	if (egr_cidr_parse(s, size, &c, &why) == 0) {
		if (!egr_cidr_match(&c, &c.addr) || c.prefix > (c.addr.family == 4 ? 32u : 128u))
			__builtin_trap();
	}
	struct egr_allow e;
	bool private_ok = size > 0 && (data[0] & 1);
	if (egr_allow_parse(s, private_ok, &e, &why) == 0 && !e.wildcard) {
		bool got_private;
		uint16_t p = e.port != 0 ? e.port : 443;
		if (e.host.kind == EGR_HOST_NUMERIC ||
		    egr_allow_match(&e, 1, &e.host, p, &got_private) != EGR_MATCH_OK ||
		    got_private != private_ok)
			__builtin_trap();
	} else if (egr_allow_parse(s, private_ok, &e, &why) == 0) {
		check_wildcard(&e, private_ok);
	}
	check_class(data, size);
	free(s);
	return 0;
}
