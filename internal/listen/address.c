/* Where the listener listens, and the Host and Origin checks that keep a
 * web page's DNS rebinding out. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "internal/base/cleanup.h"
#include "internal/base/num.h"
#include "internal/base/xalloc.h"
#include "internal/listen/listen.h"

#define LISTEN_BACKLOG 64

static int parse_port(const char *text, unsigned *port, struct mg_err **err)
{
	uint64_t n;
	if (mg_parse_u64(text, 0, 65535, "port", &n, err) < 0)
		return -1;
	*port = (unsigned)n;
	return 0;
}

int lst_address_parse(const char *text, bool any_address, struct lst_address *out,
                      struct mg_err **err)
{
	memset(out, 0, sizeof(*out));
	if (strncmp(text, "unix:", 5) == 0) {
		const char *path = text + 5;
		if (*path == '\0')
			return mg_err_set(err, "--listen unix:PATH: the path is empty");
		if (strlen(path) >= sizeof(out->path))
			return mg_err_set(err,
			                  "--listen %s: the path is longer than a socket's %zu",
			                  text, sizeof(out->path) - 1);
		out->family = LST_UNIX;
		snprintf(out->path, sizeof(out->path), "%s", path);
		out->loopback = true;
		return 0;
	}
	char host[64];
	const char *port;
	if (text[0] == '[') {
		const char *end = strchr(text, ']');
		if (end == NULL || end[1] != ':' || (size_t)(end - text - 1) >= sizeof(host))
			return mg_err_set(err, "--listen %s: expected [ADDRESS]:PORT", text);
		memcpy(host, text + 1, (size_t)(end - text - 1));
		host[end - text - 1] = '\0';
		port = end + 2;
		out->family = LST_INET6;
	} else {
		const char *colon = strrchr(text, ':');
		if (colon == NULL || (size_t)(colon - text) >= sizeof(host) ||
		    memchr(text, ':', (size_t)(colon - text)) != NULL)
			return mg_err_set(
			    err, "--listen %s: expected 127.0.0.1:PORT, [::1]:PORT or unix:PATH",
			    text);
		memcpy(host, text, (size_t)(colon - text));
		host[colon - text] = '\0';
		port = colon + 1;
		out->family = LST_INET;
		if (strcmp(host, "localhost") == 0)
			snprintf(host, sizeof(host), "127.0.0.1");
	}
	cleanup_err struct mg_err *perr = NULL;
	if (parse_port(port, &out->port, &perr) < 0)
		return mg_err_set(err, "--listen %s: %s", text, mg_err_msg(perr));
	unsigned char raw[16];
	if (inet_pton(out->family == LST_INET6 ? AF_INET6 : AF_INET, host, raw) != 1)
		return mg_err_set(err, "--listen %s: \"%s\" is not a numeric address", text, host);
	snprintf(out->host, sizeof(out->host), "%s", host);
	static const unsigned char v6_loopback[16] = {[15] = 1};
	static const unsigned char v6_any[16] = {0};
	if (out->family == LST_INET) {
		out->loopback = raw[0] == 127;
		if (memcmp(raw, v6_any, 4) == 0)
			return mg_err_set(err,
			                  "--listen %s: mcpgate does not listen on every address; "
			                  "name one interface's address",
			                  text);
	} else {
		out->loopback = memcmp(raw, v6_loopback, 16) == 0;
		if (memcmp(raw, v6_any, 16) == 0)
			return mg_err_set(err,
			                  "--listen %s: mcpgate does not listen on every address; "
			                  "name one interface's address",
			                  text);
	}
	if (!out->loopback && !any_address)
		return mg_err_set(err,
		                  "--listen %s: %s is not a loopback address; mcpgate listens on "
		                  "127.0.0.1, [::1] or a unix socket unless --listen-any is given "
		                  "(and then every request still needs the token)",
		                  text, host);
	return 0;
}

/* A unix socket path already there: stale (nobody accepts) is removed */
static int clear_stale_socket(const char *path, struct mg_err **err)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : mg_err_sys(err, errno, "%s", path);
	if (!S_ISSOCK(st.st_mode))
		return mg_err_set(err, "%s exists and is not a socket; mcpgate does not replace it",
		                  path);
	cleanup_close int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return mg_err_set(err, "%s: another process listens on it", path);
	if (unlink(path) < 0)
		return mg_err_sys(err, errno, "removing the stale socket %s", path);
	return 0;
}

int lst_address_bind(struct lst_address *a, int *fd_out, struct mg_err **err)
{
	int domain = a->family == LST_UNIX ? AF_UNIX : a->family == LST_INET6 ? AF_INET6 : AF_INET;
	cleanup_close int fd = socket(domain, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return mg_err_sys(err, errno, "socket");
	if (a->family == LST_UNIX) {
		if (clear_stale_socket(a->path, err) < 0)
			return -1;
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", a->path);
		/* made 0600 from the start: no moment in which another user could
		 * connect (no thread runs yet, so the umask is ours alone) */
		mode_t old = umask(0177);
		int r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
		int e = errno;
		umask(old);
		if (r < 0)
			return mg_err_sys(err, e, "binding %s", a->path);
		if (chmod(a->path, 0600) < 0)
			return mg_err_sys(err, errno, "chmod 0600 %s", a->path);
	} else {
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		struct sockaddr_storage ss = {0};
		socklen_t len;
		if (a->family == LST_INET6) {
			struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
			s6->sin6_family = AF_INET6;
			s6->sin6_port = htons((uint16_t)a->port);
			inet_pton(AF_INET6, a->host, &s6->sin6_addr);
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
			len = sizeof(*s6);
		} else {
			struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
			s4->sin_family = AF_INET;
			s4->sin_port = htons((uint16_t)a->port);
			inet_pton(AF_INET, a->host, &s4->sin_addr);
			len = sizeof(*s4);
		}
		if (bind(fd, (struct sockaddr *)&ss, len) < 0)
			return mg_err_sys(err, errno, "binding %s port %u", a->host, a->port);
		len = sizeof(ss);
		if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
			return mg_err_sys(err, errno, "getsockname");
		a->port = ntohs(a->family == LST_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
		                                       : ((struct sockaddr_in *)&ss)->sin_port);
	}
	if (listen(fd, LISTEN_BACKLOG) < 0)
		return mg_err_sys(err, errno, "listen");
	*fd_out = steal_fd(&fd);
	return 0;
}

char *lst_address_url(const struct lst_address *a)
{
	if (a->family == LST_UNIX)
		return xstrdup("http://localhost/mcp");
	if (a->family == LST_INET6)
		return xasprintf("http://[%s]:%u/mcp", a->host, a->port);
	return xasprintf("http://%s:%u/mcp", a->host, a->port);
}

/* host (no port) names this listener */
static bool host_name_ok(const struct lst_address *a, const char *name, size_t len)
{
	char literal[80];
	int n = snprintf(literal, sizeof(literal), a->family == LST_INET6 ? "[%s]" : "%s", a->host);
	if (a->family != LST_UNIX && n > 0 && (size_t)n == len &&
	    strncasecmp(name, literal, len) == 0)
		return true;
	if (!a->loopback)
		return false;
	static const char *const loopback_names[] = {"localhost", "127.0.0.1", "[::1]"};
	for (size_t i = 0; i < sizeof(loopback_names) / sizeof(loopback_names[0]); i++)
		if (strlen(loopback_names[i]) == len &&
		    strncasecmp(name, loopback_names[i], len) == 0)
			return a->family != LST_UNIX || i == 0;
	return false;
}

const char *lst_check_host(const struct lst_address *a, const char *host)
{
	if (host == NULL || *host == '\0')
		return "the request has no Host header";
	/* NAME, NAME:PORT, [V6] or [V6]:PORT */
	const char *port = NULL;
	size_t name_len;
	if (host[0] == '[') {
		const char *end = strchr(host, ']');
		if (end == NULL)
			return "the Host header is not a host name";
		name_len = (size_t)(end - host) + 1;
		if (end[1] == ':')
			port = end + 2;
		else if (end[1] != '\0')
			return "the Host header is not a host name";
	} else {
		const char *colon = strchr(host, ':');
		name_len = colon != NULL ? (size_t)(colon - host) : strlen(host);
		if (colon != NULL)
			port = colon + 1;
	}
	if (!host_name_ok(a, host, name_len))
		return "the Host header does not name this listener (a DNS rebinding attempt?)";
	if (a->family == LST_UNIX)
		return NULL; /* no port behind a socket path */
	unsigned p = 80;
	if (port != NULL && parse_port(port, &p, NULL) < 0)
		return "the Host header's port is not a number";
	if (p != a->port)
		return "the Host header names another port than this listener's";
	return NULL;
}

const char *lst_check_origin(const struct lst_address *a, const char *origin)
{
	if (origin == NULL)
		return NULL;
	if (strncasecmp(origin, "http://", 7) != 0)
		return "the Origin is not an http:// origin of this listener";
	const char *why = lst_check_host(a, origin + 7);
	return why == NULL ? NULL : "the Origin is not this listener (a web page of another site?)";
}
