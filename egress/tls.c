/* The TLS ClientHello of a CONNECT tunnel (RFC 8446 4.1.2, RFC 6066 3), read
 * without any TLS library: bounds-checked walking over length-prefixed
 * fields, and the rule its server name must follow (egress.h).
 *
 * The proxy and the server behind the listed address must see the same
 * server name, so every shape on which two parsers could disagree is refused
 * rather than read one way: a second server_name, a list of more than one
 * name or of another name type, bytes left over in a vector it walks, a
 * hello that does not fill its record exactly, and a hello whose real name
 * is encrypted (ECH). */
#include <string.h>

#include "egress/egress.h"

/* RFC 8446 5.1: a plaintext record carries at most 2^14 bytes */
#define RECORD_BODY_MAX 16384

/* extension types */
#define EXT_SERVER_NAME 0x0000
#define EXT_ECH         0xfe0d /* encrypted_client_hello (draft-ietf-tls-esni) */
#define EXT_ESNI        0xffce /* encrypted_server_name (the ECH drafts' forerunner) */

struct rd {
	const unsigned char *p;
	size_t n;
};

static bool take(struct rd *r, size_t k, struct rd *out)
{
	if (k > r->n)
		return false;
	if (out != NULL) {
		out->p = r->p;
		out->n = k;
	}
	r->p += k;
	r->n -= k;
	return true;
}

static bool u8(struct rd *r, size_t *v)
{
	if (r->n < 1)
		return false;
	*v = r->p[0];
	return take(r, 1, NULL);
}

static bool u16(struct rd *r, size_t *v)
{
	if (r->n < 2)
		return false;
	*v = (size_t)r->p[0] << 8 | r->p[1];
	return take(r, 2, NULL);
}

/* a vector with a length prefix of `width` bytes */
static bool vec(struct rd *r, int width, struct rd *out)
{
	size_t len;
	if (!(width == 1 ? u8(r, &len) : u16(r, &len)))
		return false;
	return take(r, len, out);
}

/* TLS 1.0, 1.1 and 1.2 on the wire (1.3 says 1.2 there): SSL 3.0 and
 * anything unassigned are refused, not guessed at */
static bool tls_version(unsigned char major, unsigned char minor)
{
	return major == 3 && minor >= 1 && minor <= 3;
}

/* The server_name extension's body: exactly one entry, of type host_name,
 * not empty, filling the list and the extension. RFC 6066 allows one name of
 * each type, and servers differ on the rest: some read only the first entry,
 * some the first host_name, some refuse. */
static int server_name_ext(struct rd ext, struct egr_hello *h, const char **why)
{
	struct rd list, host;
	size_t type;
	*why = "bad server name list (want one host_name)";
	if (!vec(&ext, 2, &list) || ext.n != 0)
		return -1;
	if (!u8(&list, &type) || type != 0 || !vec(&list, 2, &host) || list.n != 0 || host.n == 0)
		return -1;
	h->sni = (const char *)host.p;
	h->sni_len = host.n;
	return 0;
}

static int extensions(struct rd exts, struct egr_hello *h, const char **why)
{
	bool seen = false;
	while (exts.n > 0) {
		size_t type;
		struct rd ext;
		*why = "malformed ClientHello";
		if (!u16(&exts, &type) || !vec(&exts, 2, &ext))
			return -1;
		if (type == EXT_ECH || type == EXT_ESNI) {
			*why = "encrypted ClientHello (ECH): the real server name is hidden";
			return -1;
		}
		if (type != EXT_SERVER_NAME)
			continue;
		if (seen) {
			*why = "two server_name extensions";
			return -1;
		}
		seen = true;
		if (server_name_ext(ext, h, why) < 0)
			return -1;
	}
	return 0;
}

int egr_tls_hello(const unsigned char *buf, size_t len, struct egr_hello *h, const char **why)
{
	h->sni = NULL;
	h->sni_len = 0;
	/* judged as bytes arrive, so plain text is refused at its first byte */
	*why = "not a TLS ClientHello";
	if (len >= 1 && buf[0] != 0x16) /* handshake record */
		return -1;
	if (len >= 2 && buf[1] != 3)
		return -1;
	if (len >= 3 && !tls_version(buf[1], buf[2])) {
		*why = "TLS record version not TLS 1.0-1.2 (0x0301-0x0303)";
		return -1;
	}
	if (len < 5)
		return 0;
	size_t rec = (size_t)buf[3] << 8 | buf[4];
	if (rec == 0 || rec > RECORD_BODY_MAX) {
		*why = "bad TLS record length (1-16384)";
		return -1;
	}
	if (len < 5 + rec)
		return 0;
	struct rd r = {buf + 5, rec}, hello, exts;
	size_t type;
	if (!u8(&r, &type) || type != 1) /* client_hello */
		return -1;
	*why = "malformed ClientHello";
	if (r.n < 3)
		return -1;
	size_t hlen = (size_t)r.p[0] << 16 | (size_t)r.p[1] << 8 | r.p[2];
	take(&r, 3, NULL);
	if (!take(&r, hlen, &hello)) {
		*why = "ClientHello split across TLS records";
		return -1;
	}
	if (r.n != 0) {
		*why = "more than a ClientHello in its TLS record";
		return -1;
	}
	if (hello.n < 2 || !tls_version(hello.p[0], hello.p[1])) {
		*why = "ClientHello version not TLS 1.0-1.2 (0x0301-0x0303)";
		return -1;
	}
	struct rd session;
	if (!take(&hello, 2 + 32, NULL) || !vec(&hello, 1, &session) || session.n > 32 ||
	    !vec(&hello, 2, NULL) || !vec(&hello, 1, NULL))
		return -1;
	if (hello.n == 0) /* no extensions at all: no server name */
		return 1;
	if (!vec(&hello, 2, &exts) || hello.n != 0)
		return -1;
	return extensions(exts, h, why) < 0 ? -1 : 1;
}

int egr_tls_sni(const unsigned char *buf, size_t len, const char **name, size_t *name_len,
                const char **why)
{
	struct egr_hello h;
	int r = egr_tls_hello(buf, len, &h, why);
	if (r <= 0)
		return r;
	if (h.sni == NULL) {
		*why = "ClientHello without server name";
		return -1;
	}
	*name = h.sni;
	*name_len = h.sni_len;
	return 1;
}

static bool ldh_or_dot(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.';
}

static bool same_ignoring_case(const char *a, const char *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char x = a[i] >= 'A' && a[i] <= 'Z' ? (char)(a[i] - 'A' + 'a') : a[i];
		if (x != b[i])
			return false;
	}
	return true;
}

/* A listed name: the SNI is exactly its canonical text. Anything a server
 * might route elsewhere is refused with its own reason, so that a refused
 * client can be told what to change: a trailing dot (RFC 6066 forbids it; a
 * server may take "name." for another virtual host or its default) and upper
 * case (a server that matches names byte for byte would). */
static const char *name_refusal(const char *want, const char *sni, size_t n)
{
	if (sni == NULL)
		return "ClientHello without server name";
	for (size_t i = 0; i < n; i++)
		if (!ldh_or_dot(sni[i]))
			return "SNI with a byte that is not a letter, digit, hyphen or dot";
	if (sni[n - 1] == '.')
		return "SNI with a trailing dot";
	size_t wn = strlen(want);
	if (n == wn && memcmp(sni, want, n) == 0)
		return NULL;
	if (n == wn && same_ignoring_case(sni, want, n))
		return "SNI not in lower case";
	return "the ClientHello's SNI is not the CONNECT host";
}

/* A listed address: RFC 6066 puts no address in SNI, so a client that names
 * anything there is asking the server at that address for a virtual host
 * of some name; the one name that is still the listed address is its own
 * canonical text (a dotted quad, or the compressed IPv6 form without
 * brackets), as a few clients send it. Any other form of the same address
 * (an IPv4-mapped IPv6, brackets, leading zeros, upper case) is refused:
 * the proxy does not guess how a server reads it. */
static const char *address_refusal(const char *want, const char *sni, size_t n)
{
	if (sni == NULL)
		return NULL;
	if (n == strlen(want) && memcmp(sni, want, n) == 0)
		return NULL;
	return "the ClientHello's SNI is not the CONNECT address";
}

const char *egr_sni_refusal(const struct egr_host *host, const char *sni, size_t sni_len)
{
	if (sni != NULL && sni_len == 0)
		return "bad server name list (want one host_name)";
	switch (host->kind) {
	case EGR_HOST_NAME:
		return name_refusal(host->name, sni, sni_len);
	case EGR_HOST_IPV4:
	case EGR_HOST_IPV6:
		return address_refusal(host->name, sni, sni_len);
	case EGR_HOST_NUMERIC:
		break;
	}
	return "the ClientHello's SNI is not the CONNECT host";
}
