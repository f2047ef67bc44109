/* The checks of single configuration values: hosts, image references, mounts,
 * URLs, sizes, names. Each refuses with `WHAT "VALUE" reason`, the reason
 * saying what is accepted and, where it is not obvious, why. */
#define _GNU_SOURCE
#include "internal/config/config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal/base/num.h"
#include "internal/base/utf8.h"
#include "internal/base/xalloc.h"
#include "internal/debian/debian.h"

#define QUOTE_CUT 120

char *cfg_quote(const char *s, size_t len)
{
	size_t cut = len;
	if (len > QUOTE_CUT) {
		cut = QUOTE_CUT;
		while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
			cut--;
	}
	/* each byte takes at most 6 ("\u001f"), plus quotes, "..." and NUL */
	char *q = xmalloc(cut * 6 + 6);
	size_t o = 0;
	q[o++] = '"';
	for (size_t i = 0; i < cut;) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\') {
			q[o++] = '\\';
			q[o++] = (char)c;
			i++;
		} else if (c == '\n' || c == '\t' || c == '\r') {
			q[o++] = '\\';
			q[o++] = c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			snprintf(q + o, 7, "\\u%04x", c);
			o += 6;
			i++;
		} else if (c < 0x80) {
			q[o++] = (char)c;
			i++;
		} else {
			uint32_t cp;
			size_t n = mg_utf8_seq((const unsigned char *)s + i, cut - i, &cp);
			if (n == 0) {
				snprintf(q + o, 7, "\\x%02x", c);
				o += 4;
				i++;
			} else {
				memcpy(q + o, s + i, n);
				o += n;
				i += n;
			}
		}
	}
	q[o++] = '"';
	if (cut < len) {
		memcpy(q + o, "...", 3);
		o += 3;
	}
	q[o] = '\0';
	return q;
}

/* mg_err_set with `WHAT "VALUE" reason` */
__attribute__((format(printf, 4, 5))) static int fail(struct mg_err **err, const char *what,
                                                      const char *value, const char *fmt, ...)
{
	if (err == NULL)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	char *reason = xvasprintf(fmt, ap);
	va_end(ap);
	char *q = cfg_quote(value, strlen(value));
	mg_err_set(err, "%s %s %s", what, q, reason);
	free(q);
	free(reason);
	return -1;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || is_digit(c);
}

static bool is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_alnum(char c)
{
	return is_alpha(c) || is_digit(c);
}

static bool is_hex_lower(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f');
}

/* "sha256:" and 64 lower-case hex digits, nothing else */
static bool is_sha256(const char *s)
{
	if (strncmp(s, "sha256:", 7) != 0)
		return false;
	s += 7;
	for (size_t i = 0; i < 64; i++)
		if (!is_hex_lower(s[i]))
			return false;
	return s[64] == '\0';
}

/* decimal 1-65535 */
static int parse_port(const char *p, size_t n, unsigned *port)
{
	uint64_t v;
	if (mg_parse_u64n(p, n, 1, 65535, "port", &v, NULL) < 0)
		return -1;
	*port = (unsigned)v;
	return 0;
}

/* four decimal octets 0-255 without leading zeros */
static bool ipv4_canonical(const char *h, size_t n)
{
	size_t i = 0;
	for (int octet = 0; octet < 4; octet++) {
		if (octet > 0) {
			if (i >= n || h[i] != '.')
				return false;
			i++;
		}
		size_t start = i;
		unsigned v = 0;
		while (i < n && is_digit(h[i]) && i - start < 3)
			v = v * 10 + (unsigned)(h[i++] - '0');
		size_t digits = i - start;
		if (digits == 0 || v > 255 || (digits > 1 && h[start] == '0'))
			return false;
	}
	return i == n;
}

static const char reason_numeric[] =
    "looks like an IP address but is not in canonical form: IP literals are accepted only as "
    "four decimal octets without leading zeros (127.0.0.1) or, for IPv6, in brackets";

static const char reason_wildcard[] =
    "is not a wildcard mcpgate takes: the star is a whole first label before a name, "
    "\"*.example.com\" (it matches a.example.com, not example.com nor a.b.example.com)";

/* Check a host (no port) of n bytes: a DNS name, a canonical IPv4 address or
 * an IPv6 address in brackets. On success *out is its normal form (lower
 * case, no trailing dot, IPv6 as inet_ntop writes it). */
static int normalize_host(const char *h, size_t n, char **out, const char **reason)
{
	if (n == 0) {
		*reason = "has an empty host";
		return -1;
	}
	if (h[0] == '[') {
		char inner[INET6_ADDRSTRLEN];
		struct in6_addr a6;
		if (h[n - 1] != ']' || n - 2 >= sizeof(inner)) {
			*reason = "is not a valid IPv6 address in brackets";
			return -1;
		}
		memcpy(inner, h + 1, n - 2);
		inner[n - 2] = '\0';
		if (inet_pton(AF_INET6, inner, &a6) != 1) {
			*reason = "is not a valid IPv6 address in brackets";
			return -1;
		}
		char text[INET6_ADDRSTRLEN];
		if (inet_ntop(AF_INET6, &a6, text, sizeof(text)) == NULL) {
			*reason = "is not a valid IPv6 address in brackets";
			return -1;
		}
		*out = xasprintf("[%s]", text);
		return 0;
	}
	if (strspn(h, "0123456789.") >= n) {
		if (!ipv4_canonical(h, n)) {
			*reason = reason_numeric;
			return -1;
		}
		*out = xstrndup(h, n);
		return 0;
	}
	if (h[n - 1] == '.')
		n--;
	if (n > 253) {
		*reason = "is not a valid host name: it is longer than 253 characters";
		return -1;
	}
	char *name = xstrndup(h, n);
	size_t label = 0;
	bool all_digits = true;
	for (size_t i = 0; i <= n; i++) {
		char c = name[i];
		if (i == n || c == '.') {
			if (label == 0)
				*reason = "is not a valid host name: it has an empty label";
			else if (label > 63)
				*reason = "is not a valid host name: a label is longer than 63 "
				          "characters";
			else if (name[i - 1] == '-' || name[i - label] == '-')
				*reason =
				    "is not a valid host name: a label starts or ends with \"-\"";
			else {
				if (i < n) {
					label = 0;
					all_digits = true;
				}
				continue;
			}
			free(name);
			return -1;
		}
		if (!is_alnum(c) && c != '-') {
			*reason =
			    "is not a valid host name: a host name holds only letters, digits, "
			    "\"-\" and \".\"";
			free(name);
			return -1;
		}
		if (c >= 'A' && c <= 'Z')
			name[i] = (char)(c - 'A' + 'a');
		if (!is_digit(c))
			all_digits = false;
		label++;
	}
	/* A name whose last label is all digits, or one inet_aton would read as
	 * an address (0x7f.1, 0x7f000001), is an address in disguise: a
	 * resolver or the proxy could read it otherwise than a person does. */
	struct in_addr a4;
	if (all_digits || inet_aton(name, &a4) != 0) {
		*reason = reason_numeric;
		free(name);
		return -1;
	}
	*out = name;
	return 0;
}

int cfg_parse_host(const char *s, const char *what, struct cfg_host *out, struct mg_err **err)
{
	size_t len = strlen(s);
	if (len == 0)
		return mg_err_set(err, "%s is empty", what);
	if (strstr(s, "://") != NULL)
		return fail(err, what, s, "has a scheme: list a host or host:port only");
	if (strchr(s, '@') != NULL)
		return fail(err, what, s, "holds userinfo (\"@\"): list a host or host:port only");
	if (strchr(s, '/') != NULL)
		return fail(err, what, s, "holds a path (\"/\"): list a host or host:port only");
	size_t hlen = len;
	const char *port = NULL;
	if (s[0] == '[') {
		const char *rb = strchr(s, ']');
		if (rb == NULL)
			return fail(err, what, s, "has no closing \"]\"");
		hlen = (size_t)(rb - s) + 1;
		if (rb[1] == ':')
			port = rb + 2;
		else if (rb[1] != '\0')
			return fail(err, what, s, "has text after \"]\" that is not :PORT");
	} else {
		const char *colon = strchr(s, ':');
		if (colon != NULL && strchr(colon + 1, ':') != NULL)
			return fail(
			    err, what, s,
			    "looks like an IPv6 address: write it in brackets, as [2001:db8::1] "
			    "or [2001:db8::1]:8443");
		if (colon != NULL) {
			hlen = (size_t)(colon - s);
			port = colon + 1;
		}
	}
	unsigned p = 0;
	if (port != NULL && parse_port(port, strlen(port), &p) < 0)
		return fail(err, what, s, "has a bad port: a port is a decimal number 1-65535");
	/* *.NAME: the star is the whole first label, over a name */
	bool wildcard = s[0] == '*';
	if (memchr(s, '*', hlen) != NULL &&
	    (!wildcard || hlen < 3 || s[1] != '.' || memchr(s + 1, '*', hlen - 1) != NULL))
		return fail(err, what, s, "%s", reason_wildcard);
	const char *name = wildcard ? s + 2 : s;
	size_t nlen = wildcard ? hlen - 2 : hlen;
	if (wildcard &&
	    (name[0] == '[' || (strspn(name, "0123456789.") >= nlen && ipv4_canonical(name, nlen))))
		return fail(err, what, s,
		            "is a wildcard over an IP address: a wildcard matches names only");
	char *host;
	const char *reason;
	if (normalize_host(name, nlen, &host, &reason) < 0)
		return fail(err, what, s, "%s", reason);
	if (wildcard) {
		char *w = xasprintf("*.%s", host);
		free(host);
		host = w;
	}
	out->host = host;
	out->port = p;
	out->private_ok = false;
	return 0;
}

static bool is_loopback(const char *host)
{
	return strcmp(host, "localhost") == 0 || strncmp(host, "127.", 4) == 0 ||
	       strcmp(host, "[::1]") == 0;
}

int cfg_parse_url(const char *s, const char *what, char **host_out, unsigned *port_out,
                  struct mg_err **err)
{
	bool https;
	const char *rest;
	if (strncmp(s, "https://", 8) == 0) {
		https = true;
		rest = s + 8;
	} else if (strncmp(s, "http://", 7) == 0) {
		https = false;
		rest = s + 7;
	} else {
		return fail(err, what, s,
		            "must start with https:// (or http:// for a loopback host)");
	}
	for (const char *p = s; *p != '\0'; p++)
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
			return fail(err, what, s,
			            "holds a space, a control character or a non-ASCII byte: "
			            "percent-encode it");
	if (strchr(s, '#') != NULL)
		return fail(err, what, s,
		            "has a fragment (\"#\"), which is never sent to a server: remove it");
	size_t alen = strcspn(rest, "/?");
	if (memchr(rest, '@', alen) != NULL)
		return fail(err, what, s,
		            "holds userinfo (\"@\"): keep secrets out of the URL and bind a "
		            "\"credential\" instead");
	if (alen == 0)
		return fail(err, what, s, "has no host");
	size_t hlen = alen;
	const char *port = NULL;
	if (rest[0] == '[') {
		const char *rb = memchr(rest, ']', alen);
		if (rb == NULL)
			return fail(err, what, s, "has no closing \"]\" after its IPv6 host");
		hlen = (size_t)(rb - rest) + 1;
		if (hlen < alen && rest[hlen] != ':')
			return fail(err, what, s, "has text after \"]\" that is not :PORT");
	} else {
		const char *colon = memchr(rest, ':', alen);
		if (colon != NULL)
			hlen = (size_t)(colon - rest);
	}
	if (hlen < alen)
		port = rest + hlen + 1;
	unsigned p = https ? 443 : 80;
	if (port != NULL && parse_port(port, alen - hlen - 1, &p) < 0)
		return fail(err, what, s, "has a bad port: a port is a decimal number 1-65535");
	if (hlen == 0)
		return fail(err, what, s, "has no host");
	char *host;
	const char *reason;
	if (normalize_host(rest, hlen, &host, &reason) < 0)
		return fail(err, what, s, "%s", reason);
	if (!https && !is_loopback(host)) {
		free(host);
		return fail(
		    err, what, s,
		    "uses http:// with a host that is not loopback: use https:// (http:// is "
		    "allowed only for localhost, 127.0.0.0/8 and [::1])");
	}
	*host_out = host;
	*port_out = p;
	return 0;
}

/* a path component of an image name: [a-z0-9]+ joined by ".", "_", "__" or
 * runs of "-" */
static bool image_component_ok(const char *c, size_t n)
{
	if (n == 0 || !is_lower_alnum(c[0]) || !is_lower_alnum(c[n - 1]))
		return false;
	for (size_t i = 0; i < n;) {
		if (is_lower_alnum(c[i])) {
			i++;
			continue;
		}
		size_t j = i;
		while (j < n && !is_lower_alnum(c[j]))
			j++;
		size_t run = j - i;
		bool ok = (run == 1 && (c[i] == '.' || c[i] == '_')) ||
		          (run == 2 && c[i] == '_' && c[i + 1] == '_') || strspn(c + i, "-") >= run;
		if (!ok)
			return false;
		i = j;
	}
	return true;
}

/* a registry host: lower-case DNS labels and an optional :PORT */
static bool image_registry_ok(const char *c, size_t n)
{
	const char *colon = memchr(c, ':', n);
	size_t hlen = colon != NULL ? (size_t)(colon - c) : n;
	unsigned port;
	if (colon != NULL && parse_port(colon + 1, n - hlen - 1, &port) < 0)
		return false;
	if (hlen == 0)
		return false;
	size_t label = 0;
	for (size_t i = 0; i <= hlen; i++) {
		if (i == hlen || c[i] == '.') {
			if (label == 0 || c[i - 1] == '-' || c[i - label] == '-')
				return false;
			label = 0;
			continue;
		}
		if (!is_lower_alnum(c[i]) && c[i] != '-')
			return false;
		label++;
	}
	return true;
}

int cfg_parse_image(const char *s, const char *what, char **name, char **digest,
                    struct mg_err **err)
{
	size_t len = strlen(s);
	if (len == 0)
		return mg_err_set(err, "%s is empty", what);
	const char *at = strchr(s, '@');
	size_t nlen = at != NULL ? (size_t)(at - s) : len;
	/* a tag is a ":" in the last path component; one in the first stands
	 * for a registry's port (localhost:5000/probe) */
	const char *slash = memrchr(s, '/', nlen);
	const char *last = slash != NULL ? slash + 1 : s;
	bool tagged = memchr(last, ':', nlen - (size_t)(last - s)) != NULL;
	if (at == NULL && tagged)
		return fail(err, what, s,
		            "is pinned by a tag only: a tag can move; pin the image by digest, "
		            "NAME@sha256:<64 hex> (`mcpgate pull` prints it)");
	if (at == NULL)
		return fail(err, what, s,
		            "has no digest: pin the image by digest, NAME@sha256:<64 hex> "
		            "(`mcpgate pull` prints it)");
	if (tagged)
		return fail(
		    err, what, s,
		    "has a tag beside the digest: a tag can move and only misleads the "
		    "reader here; pin by digest alone, NAME@sha256:<64 hex> (`mcpgate pull` "
		    "prints it)");
	if (!is_sha256(at + 1))
		return fail(err, what, s,
		            "has a bad digest: it must be sha256: and 64 lower-case hex digits");
	if (nlen == 0)
		return fail(err, what, s, "has no name before \"@\"");
	for (size_t i = 0; i < nlen; i++)
		if (s[i] >= 'A' && s[i] <= 'Z')
			return fail(err, what, s,
			            "has upper case in its name: image names, registry host "
			            "included, are written in lower case here");
	size_t ncomp = 1;
	for (size_t i = 0; i < nlen; i++)
		ncomp += s[i] == '/';
	const char *c = s;
	for (size_t k = 0; k < ncomp; k++) {
		const char *end = memchr(c, '/', nlen - (size_t)(c - s));
		size_t clen = end != NULL ? (size_t)(end - c) : nlen - (size_t)(c - s);
		bool registry = k == 0 && ncomp > 1 &&
		                (memchr(c, '.', clen) != NULL || memchr(c, ':', clen) != NULL ||
		                 (clen == 9 && memcmp(c, "localhost", 9) == 0));
		if (registry && !image_registry_ok(c, clen))
			return fail(
			    err, what, s,
			    "has a bad registry host: lower-case DNS labels and an optional "
			    ":PORT (1-65535)");
		if (!registry && !image_component_ok(c, clen))
			return fail(err, what, s,
			            "has a bad name: path components are lower-case letters and "
			            "digits, separated by \".\", \"_\", \"__\" or \"-\"");
		c += clen + 1;
	}
	*name = xstrndup(s, nlen);
	*digest = xstrdup(at + 1);
	return 0;
}

int cfg_parse_mount(const char *s, const char *what, struct cfg_mount *out, struct mg_err **err)
{
	size_t len = strlen(s);
	if (len == 0)
		return mg_err_set(err, "%s is empty", what);
	bool write = false;
	size_t plen = len;
	const char *colon = strrchr(s, ':');
	if (colon != NULL) {
		const char *access = colon + 1;
		if (strcmp(access, "write") == 0)
			write = true;
		else if (strcmp(access, "read") != 0)
			return fail(
			    err, what, s,
			    "has an access word other than \"read\" or \"write\" after \":\"");
		plen = (size_t)(colon - s);
		if (memchr(s, ':', plen) != NULL)
			return fail(
			    err, what, s,
			    "holds \":\" in its path, which the runtime's mount syntax would "
			    "misread");
	}
	if (plen == 0)
		return fail(err, what, s, "has an empty path");
	if (s[0] == '/')
		return fail(
		    err, what, s,
		    "is absolute: a mount is a folder inside the workspace, written relative "
		    "to it");
	if (s[0] == '~')
		return fail(err, what, s,
		            "starts with \"~\": a mount is a folder inside the workspace, written "
		            "relative to it");
	for (size_t i = 0; i < plen; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f || s[i] == ',' || s[i] == '"')
			return fail(
			    err, what, s,
			    "holds a comma, a double quote or a control character, which the "
			    "runtime's mount syntax would misread");
	char *path = xmalloc(plen + 1);
	size_t o = 0;
	bool first = true;
	for (size_t i = 0; i < plen;) {
		size_t n = strcspn(s + i, "/");
		if (n > plen - i)
			n = plen - i;
		const char *comp = s + i;
		i += n + 1;
		if (n == 0 || (n == 1 && comp[0] == '.'))
			continue;
		if (n == 2 && comp[0] == '.' && comp[1] == '.') {
			free(path);
			return fail(err, what, s,
			            "has a \"..\" component: a mount stays inside the workspace");
		}
		if (first && n == 8 && strncasecmp(comp, ".mcpgate", 8) == 0) {
			free(path);
			return fail(err, what, s,
			            "is inside .mcpgate, which holds mcpgate's own state");
		}
		if (!first)
			path[o++] = '/';
		memcpy(path + o, comp, n);
		o += n;
		first = false;
	}
	if (o == 0 && write) {
		free(path);
		return fail(
		    err, what, s,
		    "names the workspace root with write access: a server that can write "
		    "the root can write .git/hooks, .vscode/tasks.json or a Makefile, which "
		    "run code on the host when the project is next used; mount the root "
		    "read-only (\".:read\") and a folder inside it for writing");
	}
	/* the root itself, read-only: "." */
	if (o == 0)
		path[o++] = '.';
	path[o] = '\0';
	memset(out, 0, sizeof(*out));
	out->path = path;
	out->write = write;
	return 0;
}

/* A byte count with an optional k, m or g (binary units), min..max */
static int parse_size(const char *s, const char *what, uint64_t min, uint64_t max,
                      const char *range, uint64_t *out, struct mg_err **err)
{
	size_t len = strlen(s);
	unsigned shift = 0;
	if (len > 0) {
		switch (s[len - 1]) {
		case 'k':
		case 'K':
			shift = 10;
			break;
		case 'm':
		case 'M':
			shift = 20;
			break;
		case 'g':
		case 'G':
			shift = 30;
			break;
		default:
			break;
		}
	}
	size_t digits = len - (shift != 0);
	if (digits == 0 || strspn(s, "0123456789") != digits)
		return fail(err, what, s,
		            "must be a number of bytes with an optional k, m or g suffix (binary "
		            "units), like \"512m\"");
	uint64_t v;
	if (mg_parse_u64n(s, digits, 0, UINT64_MAX >> shift, what, &v, NULL) < 0 ||
	    (v << shift) < min || (v << shift) > max)
		return fail(err, what, s, "is out of range: %s", range);
	*out = v << shift;
	return 0;
}

int cfg_parse_memory(const char *s, const char *what, uint64_t *out, struct mg_err **err)
{
	return parse_size(s, what, CFG_MEMORY_MIN, CFG_MEMORY_MAX, "from 16m to 64g", out, err);
}

int cfg_parse_send_max(const char *s, const char *what, uint64_t *out, struct mg_err **err)
{
	return parse_size(s, what, CFG_SEND_MAX_MIN, CFG_SEND_MAX_MAX, "from 1k to 1024g", out,
	                  err);
}

bool cfg_env_name_valid(const char *s)
{
	if (!is_alpha(s[0]) && s[0] != '_')
		return false;
	for (const char *p = s + 1; *p != '\0'; p++)
		if (!is_alnum(*p) && *p != '_')
			return false;
	return true;
}

/* HTTP token characters (RFC 9110, tchar) */
static bool is_token(const char *s)
{
	if (s[0] == '\0')
		return false;
	for (const char *p = s; *p != '\0'; p++)
		if (!is_alnum(*p) && strchr("!#$%&'*+-.^_`|~", *p) == NULL)
			return false;
	return true;
}

/* Variables a server may not take (docs/config.md, position): its value
 * reaches the runtime's own environment (for --env=NAME), so nothing the
 * runtime, its Go runtime, the C loader or mcpgate itself obeys. Decided by
 * rule, without regard to case (Http_Proxy is HTTP_PROXY to some readers):
 * the proxy family (every name ending in PROXY), whole namespaces of the
 * runtimes and their libraries, Go's runtime knobs (GO and no underscore),
 * and what every process reads. */
static const char *const env_reserved_prefix[] = {
    "DOCKER",  "CONTAINER", "PODMAN",  "BUILDAH", "STORAGE_", "REGISTRY_", "XDG_",
    "LD_",     "DBUS_",     "NOTIFY_", "LISTEN_", "SYSTEMD_", "SSL_",      "GCONV_",
    "MALLOC_", "LC_",       "RES_",    "RESOLV_", "_",        NULL,
};
static const char *const env_reserved[] = {
    "PATH",        "HOME",     "TMPDIR", "TMP",      "TEMP", "USER",    "LOGNAME", "SHELL",
    "LANG",        "LANGUAGE", "TZ",     "TZDIR",    "TERM", "NLSPATH", "LOCPATH", "HOSTALIASES",
    "LOCALDOMAIN", "IFS",      "ENV",    "BASH_ENV", "PWD",  "OLDPWD",  NULL,
};

bool cfg_env_name_reserved(const char *n)
{
	size_t len = strlen(n);
	if (len >= 5 && strcasecmp(n + len - 5, "PROXY") == 0)
		return true;
	for (size_t i = 0; env_reserved_prefix[i] != NULL; i++)
		if (strncasecmp(n, env_reserved_prefix[i], strlen(env_reserved_prefix[i])) == 0)
			return true;
	if (strncasecmp(n, "GO", 2) == 0 && strchr(n, '_') == NULL)
		return true;
	for (size_t i = 0; env_reserved[i] != NULL; i++)
		if (strcasecmp(n, env_reserved[i]) == 0)
			return true;
	return false;
}

/* headers mcpgate or HTTP itself controls (compared case-insensitively) */
static const char *const header_reserved[] = {
    "Host",
    "Content-Length",
    "Content-Type",
    "Accept",
    "Mcp-Session-Id",
    "MCP-Protocol-Version",
    "Transfer-Encoding",
    "Connection",
    "Last-Event-ID",
    NULL,
};

int cfg_parse_position(const char *s, const char *what, enum cfg_position *position, char **name,
                       struct mg_err **err)
{
	if (strncmp(s, "env:", 4) == 0) {
		const char *n = s + 4;
		if (!cfg_env_name_valid(n))
			return fail(err, what, s,
			            "has a bad variable name: env:NAME takes a POSIX name, "
			            "[A-Za-z_][A-Za-z0-9_]*");
		if (cfg_env_name_reserved(n))
			return fail(
			    err, what, s,
			    "names a variable that mcpgate, the container runtime or the "
			    "loader obeys itself (in any case: the *PROXY family, DOCKER*, "
			    "CONTAINER*, PODMAN*, BUILDAH*, STORAGE_*, REGISTRY_*, XDG_*, "
			    "LD_*, DBUS_*, NOTIFY_*, LISTEN_*, SYSTEMD_*, SSL_*, GCONV_*, "
			    "MALLOC_*, LC_*, RES_*, _*, GO without an underscore, and PATH, "
			    "HOME, TMPDIR, LANG, TZ and the like): choose another");
		*position = CFG_POSITION_ENV;
		*name = xstrdup(n);
		return 0;
	}
	if (strncmp(s, "header:", 7) == 0) {
		const char *n = s + 7;
		if (!is_token(n))
			return fail(
			    err, what, s,
			    "has a bad header name: header:NAME takes an HTTP token (letters, "
			    "digits and !#$%%&'*+-.^_`|~)");
		for (size_t i = 0; header_reserved[i] != NULL; i++)
			if (strcasecmp(n, header_reserved[i]) == 0)
				return fail(err, what, s,
				            "names a header mcpgate or HTTP sets itself (Host, "
				            "Content-Length, Content-Type, Accept, Mcp-Session-Id, "
				            "MCP-Protocol-Version, ...): choose another");
		*position = CFG_POSITION_HEADER;
		*name = xstrdup(n);
		return 0;
	}
	return fail(err, what, s,
	            "must be env:NAME (a container server) or header:NAME (a remote server)");
}

int cfg_check_server_name(const char *s, const char *what, struct mg_err **err)
{
	size_t len = strlen(s);
	if (len == 0)
		return mg_err_set(err, "%s is empty", what);
	if (len > CFG_NAME_MAX)
		return fail(err, what, s, "is longer than %d characters", CFG_NAME_MAX);
	for (size_t i = 0; i < len; i++)
		if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_')
			return fail(err, what, s, "may hold only letters, digits, \"-\" and \"_\"");
	if (!is_alnum(s[0]))
		return fail(err, what, s, "must start with a letter or a digit");
	if (strstr(s, "__") != NULL)
		return fail(err, what, s,
		            "holds \"__\": tools are offered as SERVER__TOOL, so it would be "
		            "ambiguous");
	if (s[len - 1] == '_')
		return fail(err, what, s,
		            "ends with \"_\": tools are offered as SERVER__TOOL, so it would be "
		            "ambiguous");
	return 0;
}

static bool name_chars_ok(const char *s)
{
	for (const char *p = s; *p != '\0'; p++)
		if (!is_alnum(*p) && *p != '_' && *p != '.' && *p != '-')
			return false;
	return true;
}

int cfg_check_tool_name(const char *s, const char *what, struct mg_err **err)
{
	size_t len = strlen(s);
	if (len == 0)
		return mg_err_set(err, "%s is empty", what);
	if (len > CFG_TOOL_NAME_MAX)
		return fail(err, what, s, "is longer than %d characters", CFG_TOOL_NAME_MAX);
	if (!name_chars_ok(s))
		return fail(err, what, s, "may hold only letters, digits, \"_\", \".\" and \"-\"");
	return 0;
}

int cfg_check_credential_name(const char *s, const char *what, struct mg_err **err)
{
	size_t len = strlen(s);
	if (len == 0)
		return mg_err_set(err, "%s is empty", what);
	if (len > CFG_CREDENTIAL_MAX)
		return fail(err, what, s, "is longer than %d characters", CFG_CREDENTIAL_MAX);
	if (!name_chars_ok(s))
		return fail(err, what, s, "may hold only letters, digits, \"_\", \".\" and \"-\"");
	return 0;
}

#define ARCHIVE_VALUE_MAX 1024

/* what [debian]'s values share: a bound, and nothing apt's sources would
 * read as more than the one value */
static int source_value_check(const char *s, const char *what, struct mg_err **err)
{
	if (strlen(s) > ARCHIVE_VALUE_MAX)
		return fail(err, what, s, "is longer than %d bytes", ARCHIVE_VALUE_MAX);
	if (!deb_source_value_safe(s))
		return fail(err, what, s,
		            "holds a space, control character, quote, semicolon, brace, comma or "
		            "bracket, which apt's sources cannot carry");
	return 0;
}

int cfg_check_archive_url(const char *s, const char *what, struct mg_err **err)
{
	if (source_value_check(s, what, err) < 0)
		return -1;
	bool web = (strncmp(s, "http://", 7) == 0 && s[7] != '\0' && s[7] != '/') ||
	           (strncmp(s, "https://", 8) == 0 && s[8] != '\0' && s[8] != '/');
	bool file = strncmp(s, "file:/", 6) == 0;
	if (!web && !file)
		return fail(err, what, s,
		            "must be an http://HOST/..., https://HOST/... or file:/PATH URL of a "
		            "Debian archive");
	return 0;
}

int cfg_check_keyring_path(const char *s, const char *what, struct mg_err **err)
{
	if (s[0] != '/')
		return fail(err, what, s, "must be an absolute path");
	return source_value_check(s, what, err);
}

int cfg_check_manifest(const char *s, const char *what, struct mg_err **err)
{
	if (!is_sha256(s))
		return fail(
		    err, what, s,
		    "must be sha256: and 64 lower-case hex digits (`mcpgate approve` writes "
		    "it)");
	return 0;
}

const char *cfg_effect_name(enum cfg_effect effect)
{
	switch (effect) {
	case CFG_EFFECT_READ:
		return "read";
	case CFG_EFFECT_WRITE:
		return "write";
	case CFG_EFFECT_UNDECLARED:
		break;
	}
	return "undeclared";
}
