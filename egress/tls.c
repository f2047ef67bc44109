/* The SNI of a TLS ClientHello (RFC 8446 4.1.2, RFC 6066 3), read without
 * any TLS library: bounds-checked walking over length-prefixed fields. */
#include "egress/egress.h"

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

int egr_tls_sni(const unsigned char *buf, size_t len, const char **name, size_t *name_len,
                const char **why)
{
	*why = "not a TLS ClientHello";
	if (len >= 1 && buf[0] != 0x16) /* handshake record */
		return -1;
	if (len >= 2 && buf[1] != 0x03)
		return -1;
	if (len < 5)
		return 0;
	size_t rec = (size_t)buf[3] << 8 | buf[4];
	if (rec == 0 || rec > 16384 + 256) {
		*why = "bad TLS record length";
		return -1;
	}
	if (len < 5 + rec)
		return 0;
	struct rd r = {buf + 5, rec}, hello, ext, exts;
	size_t type, v;
	if (!u8(&r, &type) || type != 1) /* client_hello */
		return -1;
	if (r.n < 3)
		return -1;
	size_t hlen = (size_t)r.p[0] << 16 | (size_t)r.p[1] << 8 | r.p[2];
	take(&r, 3, NULL);
	if (!take(&r, hlen, &hello)) {
		*why = "ClientHello split across TLS records";
		return -1;
	}
	*why = "malformed ClientHello";
	if (!take(&hello, 2 + 32, NULL) || !vec(&hello, 1, NULL) || !vec(&hello, 2, NULL) ||
	    !vec(&hello, 1, NULL))
		return -1;
	if (hello.n == 0) {
		*why = "ClientHello without server name";
		return -1;
	}
	if (!vec(&hello, 2, &exts) || hello.n != 0)
		return -1;
	bool found = false, seen = false;
	while (exts.n > 0) {
		size_t etype;
		if (!u16(&exts, &etype) || !vec(&exts, 2, &ext))
			return -1;
		if (etype != 0) /* server_name */
			continue;
		if (seen) {
			*why = "two server_name extensions";
			return -1;
		}
		seen = true;
		struct rd list;
		if (!vec(&ext, 2, &list) || ext.n != 0)
			return -1;
		while (list.n > 0) {
			struct rd host;
			if (!u8(&list, &v) || !vec(&list, 2, &host))
				return -1;
			if (v != 0) /* only host_name is defined */
				continue;
			if (found || host.n == 0) {
				*why = "bad server name list";
				return -1;
			}
			found = true;
			*name = (const char *)host.p;
			*name_len = host.n;
		}
	}
	if (!found) {
		*why = "ClientHello without server name";
		return -1;
	}
	return 1;
}
