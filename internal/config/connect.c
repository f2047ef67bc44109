/* A server's "connect" entries (docs/2026-12-02-connect.md): the TCP
 * destinations a person names, judged by the egress proxy's own rule, and
 * the {connect.NAME} references in args and env that tell the server where
 * its sidecar forwards each one. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress/addr.h"
#include "internal/base/buf.h"
#include "internal/base/xalloc.h"
#include "internal/config/config.h"

#define REF_OPEN "{connect."

bool cfg_connect_name_valid(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > CFG_CONNECT_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		bool alnum =
		    (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!alnum && (i == 0 || (c != '_' && c != '-')))
			return false;
	}
	return true;
}

bool cfg_network_name_valid(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		bool alnum =
		    (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!alnum && (i == 0 || (c != '_' && c != '.' && c != '-')))
			return false;
	}
	return true;
}

int cfg_parse_connect(const char *to, const char *network, struct cfg_connect *out,
                      struct mg_err **err)
{
	memset(out, 0, sizeof(out[0]));
	if (network != NULL) {
		if (!cfg_network_name_valid(network))
			return mg_err_set(err,
			                  "network \"%s\" is not a network's name: "
			                  "[A-Za-z0-9][A-Za-z0-9_.-]*, at most 64",
			                  network);
		if (strncmp(network, "mcpgate-", 8) == 0)
			return mg_err_set(
			    err,
			    "network \"%s\" is one of mcpgate's own (mcpgate-...): name a "
			    "network of yours",
			    network);
		if (strcmp(network, "host") == 0 || strcmp(network, "none") == 0)
			return mg_err_set(
			    err,
			    "network \"%s\" is the runtime's %s mode, not a network to "
			    "join",
			    network, network);
	}
	struct cfg_host h;
	if (cfg_parse_host(to, "destination", &h, err) < 0)
		return -1;
	if (h.host[0] == '*') {
		free(h.host);
		return mg_err_set(err, "destination \"%s\" is a wildcard: name one host", to);
	}
	if (h.port == 0) {
		free(h.host);
		return mg_err_set(err, "destination \"%s\" has no port: write HOST:PORT", to);
	}
	/* localhost is the host's loopback, written as the proxy reads it */
	if (strcmp(h.host, "localhost") == 0) {
		free(h.host);
		h.host = xstrdup("127.0.0.1");
	}
	char text[300];
	snprintf(text, sizeof(text), "%s:%u", h.host, h.port);
	struct egr_host eh = {0};
	uint16_t port;
	const char *range = NULL, *why = NULL;
	if (egr_forward_target_parse(text, strlen(text), network == NULL, &eh, &port, &range,
	                             &why) < 0) {
		free(h.host);
		if (network != NULL && strstr(why, "special") != NULL &&
		    egr_addr_is_loopback(&eh.addr))
			return mg_err_set(
			    err,
			    "destination \"%s\" is a loopback address, which on a network "
			    "is nobody's: name the container or its address there",
			    to);
		if (strstr(why, "localhost") != NULL)
			return mg_err_set(
			    err,
			    "destination \"%s\" is refused: the runtime's host alias "
			    "reaches the host through its bridge, which mcpgate never "
			    "opens; for a service on the host's loopback write "
			    "127.0.0.1:PORT",
			    to);
		return range != NULL
		           ? mg_err_set(err, "destination \"%s\" is refused: %s (%s)", to, why,
		                        range)
		           : mg_err_set(err, "destination \"%s\" is refused: %s", to, why);
	}
	out->host = h.host;
	out->port = h.port;
	out->loopback = eh.kind != EGR_HOST_NAME && egr_addr_is_loopback(&eh.addr);
	out->network = network != NULL ? xstrdup(network) : NULL;
	return 0;
}

/* The name of the reference at text (which starts "{connect."): its index
 * in names, the part asked (0: HOST:PORT, 1: HOST, 2: PORT) and the
 * reference's length from the "{"; -1 when it is not a whole reference to
 * one of names */
static int ref_at(const char *text, const char *const *names, size_t nnames, int *part, size_t *len,
                  char *name, size_t name_cap)
{
	const char *body = text + strlen(REF_OPEN);
	const char *close = strchr(body, '}');
	if (close == NULL)
		return -1;
	size_t n = (size_t)(close - body);
	*part = 0;
	if (n > 5 && memcmp(close - 5, ".host", 5) == 0) {
		*part = 1;
		n -= 5;
	} else if (n > 5 && memcmp(close - 5, ".port", 5) == 0) {
		*part = 2;
		n -= 5;
	}
	if (n == 0 || n >= name_cap)
		return -1;
	memcpy(name, body, n);
	name[n] = '\0';
	*len = (size_t)(close - text) + 1;
	for (size_t i = 0; i < nnames; i++)
		if (strcmp(names[i], name) == 0)
			return (int)i;
	return -1;
}

int cfg_connect_refs(const char *text, const char *const *names, size_t nnames, bool *used,
                     struct mg_err **err)
{
	for (const char *p = strstr(text, REF_OPEN); p != NULL; p = strstr(p + 1, REF_OPEN)) {
		int part;
		size_t len;
		char name[CFG_CONNECT_NAME_MAX + 16];
		int i = ref_at(p, names, nnames, &part, &len, name, sizeof(name));
		if (i < 0) {
			const char *close = strchr(p, '}');
			int shown = close != NULL && close - p < 80 ? (int)(close - p) + 1 : 24;
			return mg_err_set(
			    err,
			    "\"%.*s\" names no entry of \"connect\" (write "
			    "{connect.NAME}, {connect.NAME.host} or {connect.NAME.port})",
			    shown, p);
		}
		if (used != NULL)
			used[i] = true;
	}
	return 0;
}

char *cfg_connect_expand(const char *text, const struct cfg_server *s, const char *const *hosts,
                         const unsigned *ports)
{
	if (strstr(text, REF_OPEN) == NULL || hosts == NULL)
		return xstrdup(text);
	const char *names[CFG_CONNECT_MAX];
	for (size_t i = 0; i < s->nconnect && i < CFG_CONNECT_MAX; i++)
		names[i] = s->connect[i].name;
	struct mg_buf b = MG_BUF_INIT(1 << 20);
	const char *p = text;
	for (const char *at = strstr(p, REF_OPEN); at != NULL; at = strstr(p, REF_OPEN)) {
		int part;
		size_t len;
		char name[CFG_CONNECT_NAME_MAX + 16];
		int i = ref_at(at, names, s->nconnect, &part, &len, name, sizeof(name));
		mg_buf_append(&b, p, (size_t)(at - p), NULL);
		if (i < 0) {
			/* checked when the file was read: not one, so kept as written */
			mg_buf_append(&b, at, strlen(REF_OPEN), NULL);
			p = at + strlen(REF_OPEN);
			continue;
		}
		if (part == 0)
			mg_buf_printf(&b, NULL, "%s:%u", hosts[i], ports[i]);
		else if (part == 1)
			mg_buf_puts(&b, hosts[i], NULL);
		else
			mg_buf_printf(&b, NULL, "%u", ports[i]);
		p = at + len;
	}
	mg_buf_puts(&b, p, NULL);
	return mg_buf_steal(&b, NULL);
}

bool cfg_server_has_egress(const struct cfg_server *s)
{
	return s->nhosts > 0 || s->nconnect > 0;
}
