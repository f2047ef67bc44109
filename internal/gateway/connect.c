/* A server's connect destinations (docs/2026-12-02-connect.md): the
 * sidecar's -forward arguments, the address the server is told of each, and
 * mcpgate's host side for the destinations on the host's loopback, which no
 * container reaches. The host side is mcpgate-egress itself, run on the
 * host with -forward unix:SOCKET=127.0.0.1:PORT for each of them alone; its
 * sockets are in a folder mcpgate makes (0700, and a 0711 folder in it that
 * only the sidecar mounts), and its records go to the audit log as the
 * sidecar's do. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal/base/cleanup.h"
#include "internal/base/xalloc.h"
#include "internal/gateway/gateway-internal.h"

/* the proxy's own port (egress.c), which no forward takes */
#define PROXY_PORT 3128
/* a forward whose destination's port is taken listens here plus its index */
#define FORWARD_PORT_BASE 40000
/* sockets: unix:/PATH, at most 107 bytes */
#define SOCKET_PATH_MAX 107

unsigned gw_connect_port(const struct cfg_server *c, size_t i)
{
	unsigned want = c->connect[i].port;
	bool taken = want == PROXY_PORT;
	for (size_t j = 0; j < c->nconnect && !taken; j++)
		taken = j != i && c->connect[j].port == want;
	return taken ? FORWARD_PORT_BASE + (unsigned)i : want;
}

void gw_connect_forward_args(const struct cfg_server *c, struct strv *args)
{
	for (size_t i = 0; i < c->nconnect; i++) {
		const struct cfg_connect *d = &c->connect[i];
		strv_push(args, "-forward");
		/* the host's loopback: through the host side's socket */
		if (d->loopback)
			strv_pushf(args, "0.0.0.0:%u=unix:" CTR_CONNECT_DIR "/%s.sock",
			           gw_connect_port(c, i), d->name);
		else
			strv_pushf(args, "0.0.0.0:%u=%s:%u", gw_connect_port(c, i), d->host,
			           d->port);
	}
}

void gw_connect_addresses(struct gw_server *srv, const char *address)
{
	const struct cfg_server *c = srv->cfg;
	struct gw_egress *e = &srv->egress;
	if (c->nconnect == 0)
		return;
	e->connect_hosts = xcalloc(c->nconnect + 1, sizeof(*e->connect_hosts));
	e->connect_ports = xcalloc(c->nconnect, sizeof(*e->connect_ports));
	for (size_t i = 0; i < c->nconnect; i++) {
		e->connect_hosts[i] = xstrdup(address);
		e->connect_ports[i] = gw_connect_port(c, i);
	}
}

/* Where the host side's folder goes: the person's runtime folder when it is
 * theirs alone, else TMPDIR or /tmp (the folder made there is 0700) */
static const char *base_dir(void)
{
	const char *run = getenv("XDG_RUNTIME_DIR");
	struct stat st;
	if (run != NULL && run[0] == '/' && strlen(run) < 40 && lstat(run, &st) == 0 &&
	    S_ISDIR(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 077) == 0)
		return run;
	const char *tmp = getenv("TMPDIR");
	return tmp != NULL && tmp[0] == '/' && strlen(tmp) < 40 ? tmp : "/tmp";
}

void gw_connect_host_remove_dir(const char *dir)
{
	if (dir == NULL)
		return;
	cleanup_free char *sockets = xasprintf("%s/d", dir);
	int fd = open(sockets, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		/* only sockets were ever made here; the forwarder unlinks its own */
		DIR *d = fdopendir(fd);
		struct dirent *ent;
		while (d != NULL && (ent = readdir(d)) != NULL)
			if (ent->d_name[0] != '.')
				unlinkat(fd, ent->d_name, 0);
		if (d != NULL)
			closedir(d);
		else
			close(fd);
	}
	rmdir(sockets);
	rmdir(dir);
}

/* The host side ended before its sockets were there: its last words */
static int host_failed(struct gw_connect_host *h, struct mg_err **err)
{
	char text[4096];
	ssize_t n = h->proc.err_fd >= 0 ? read(h->proc.err_fd, text, sizeof(text) - 1) : 0;
	text[n > 0 ? n : 0] = '\0';
	cleanup_free char *last = gw_last_line(text, strlen(text));
	return mg_err_set(err, "mcpgate's host side for connect ended: %s",
	                  last != NULL ? last : "(it said nothing)");
}

int gw_connect_host_start(struct gw_server *srv, int64_t deadline, struct mg_err **err)
{
	const struct cfg_server *c = srv->cfg;
	struct session *s = srv->sess;
	struct gw_connect_host *h = &srv->egress.host;
	size_t nloop = 0;
	for (size_t i = 0; i < c->nconnect; i++)
		nloop += c->connect[i].loopback;
	if (nloop == 0)
		return 0;
	char *dir = xasprintf("%s/mcpgate-connect-XXXXXX", base_dir());
	if (mkdtemp(dir) == NULL) {
		mg_err_sys(err, errno, "making a folder for mcpgate's host side in %s", base_dir());
		free(dir);
		return -1;
	}
	h->dir = dir;
	h->sockets = xasprintf("%s/d", dir);
	/* the sidecar (uid 65534, or its subuid rootless) passes through to
	 * the sockets; nobody else on the host reaches the 0700 folder above */
	if (mkdir(h->sockets, 0711) < 0 || chmod(h->sockets, 0711) < 0)
		return mg_err_sys(err, errno, "making %s", h->sockets);
	struct strv argv = STRV_INIT;
	strv_push(&argv, s->egress_binary);
	for (size_t i = 0; i < c->nconnect; i++) {
		const struct cfg_connect *d = &c->connect[i];
		if (!d->loopback)
			continue;
		cleanup_free char *path = xasprintf("%s/%s.sock", h->sockets, d->name);
		if (strlen(path) > SOCKET_PATH_MAX) {
			strv_free(&argv);
			return mg_err_set(err,
			                  "the socket %s of mcpgate's host side is longer than %d "
			                  "bytes: set TMPDIR to a shorter folder",
			                  path, SOCKET_PATH_MAX);
		}
		strv_push(&argv, "-forward");
		strv_pushf(&argv, "unix:%s=%s:%u", path, d->host, d->port);
	}
	strv_push(&argv, "-lifeline");
	struct proc_spec ps = {
	    .path = s->egress_binary,
	    .argv = (const char *const *)strv_array(&argv),
	    .envp = NULL,
	    .stdio = {{PROC_STDIO_PIPE, -1, false},
	              {PROC_STDIO_PIPE, -1, true},
	              {PROC_STDIO_PIPE, -1, true}},
	};
	int r = proc_spawn(&ps, &h->proc, err);
	struct json_value *jargv = json_new_array();
	for (size_t i = 0; i < argv.n; i++)
		json_array_push(jargv, json_new_string(argv.v[i]));
	strv_free(&argv);
	if (r < 0) {
		json_free(jargv);
		return mg_err_wrap(err, "starting mcpgate's host side for connect");
	}
	h->out_fd = steal_fd(&h->proc.out_fd);
	audit_record(s->audit, "egress.host",
	             gw_fields("server", json_new_string(c->name), "argv", jargv, NULL));
	/* ready once every socket is there */
	for (;;) {
		size_t there = 0;
		for (size_t i = 0; i < c->nconnect; i++) {
			if (!c->connect[i].loopback)
				continue;
			cleanup_free char *path =
			    xasprintf("%s/%s.sock", h->sockets, c->connect[i].name);
			struct stat st;
			there += lstat(path, &st) == 0 && S_ISSOCK(st.st_mode);
		}
		if (there == nloop)
			return 0;
		int status;
		if (proc_wait(&h->proc, proc_now_ms(), &status, NULL) == 0)
			return host_failed(h, err);
		if (proc_now_ms() >= deadline)
			return mg_err_set(err,
			                  "mcpgate's host side for connect made no socket in time");
		usleep(10 * 1000);
	}
}
