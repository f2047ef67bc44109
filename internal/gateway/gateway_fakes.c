/* Fake servers on socketpairs for a session without a runtime (test
 * support; see gateway_fakes.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal/base/cleanup.h"
#include "internal/base/xalloc.h"
#include "internal/gateway/gateway_fakes.h"

/* what one fake may have queued and not written (a test's own lines) */
#define FAKE_OUT_MAX ((size_t)64 << 20)

void gw_fake_open(struct gw_fake *f, const char *name, const char *caps, const char *tools)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	memset(f, 0, sizeof(*f));
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->fd = sv[1];
	f->gw_in = sv[0];
	f->gw_out = fcntl(sv[0], F_DUPFD_CLOEXEC, 3);
	if (f->gw_out < 0 || fcntl(f->fd, F_SETFL, O_NONBLOCK) < 0)
		abort();
	f->caps = caps;
	f->tools = tools;
	f->hold_rd = f->hold_wr = -1;
	rpc_reader_init(&f->reader, 0);
	mg_buf_init(&f->out, FAKE_OUT_MAX);
}

void gw_fake_hold(struct gw_fake *f)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		abort();
	f->hold_rd = p[0];
	f->hold_wr = p[1];
}

void gw_fake_release(struct gw_fake *f)
{
	if (f->hold_wr >= 0 && write(f->hold_wr, "", 1) != 1)
		abort();
	if (f->hold_wr >= 0) {
		close(f->hold_wr);
		f->hold_wr = -1;
	}
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void gw_fake_close(struct gw_fake *f)
{
	close_fd(&f->fd);
	close_fd(&f->gw_in);
	close_fd(&f->gw_out);
	close_fd(&f->hold_wr); /* a start still held reads the end of the pipe */
	close_fd(&f->hold_rd);
	rpc_reader_free(&f->reader);
	mg_buf_free(&f->out);
	free(f->last);
	f->last = NULL;
}

void gw_fake_await_release(struct gw_fake *f)
{
	char byte;
	if (f->hold_rd >= 0 && read(f->hold_rd, &byte, 1) < 0)
		abort();
}

void gw_fake_hand_over(struct gw_server *srv, struct gw_fake *f)
{
	struct mcp_server_info info = {
	    .protocol_version = xstrdup(f->version != NULL ? f->version : MCP_PROTOCOL_LATEST),
	    .name = xstrdup(f->name),
	    .version = xstrdup("1.0"),
	    .capabilities = gw_fake_json(f->caps),
	};
	int in = f->gw_in, out = f->gw_out;
	f->gw_in = f->gw_out = -1;
	gw_server_start_on_fds(srv, in, out, &info, gw_fake_json(f->tools));
}

void gw_fake_queue(struct gw_fake *f, const char *data, size_t len)
{
	if (f->fd >= 0 && mg_buf_append(&f->out, data, len, NULL) < 0)
		abort(); /* a test that queues 64 MiB unread is broken */
	gw_fake_flush(f);
}

int gw_fake_flush(struct gw_fake *f)
{
	while (f->out.len > 0) {
		ssize_t w = send(f->fd, f->out.data, f->out.len, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			return 0;
		if (w < 0) {
			mg_buf_reset(
			    &f->out); /* the gateway closed it: what it would read is lost */
			return -1;
		}
		mg_buf_consume(&f->out, (size_t)w);
	}
	return 0;
}

void gw_fake_write_all(struct gw_fake *f, const char *data, size_t len)
{
	gw_fake_queue(f, data, len);
	while (f->out.len > 0 && gw_fake_flush(f) == 0 && f->out.len > 0)
		poll(&(struct pollfd){.fd = f->fd, .events = POLLOUT}, 1, 100);
}

ssize_t gw_fake_read(struct gw_fake *f)
{
	if (f->eof || f->fd < 0)
		return 0;
	ssize_t r = rpc_reader_read_fd(&f->reader, f->fd, NULL);
	if (r == 0 || r == -1) {
		f->eof = true;
		return 0;
	}
	return r;
}

char *gw_fake_unquote(const char *text)
{
	char *s = xstrdup(text);
	for (char *p = s; *p != '\0'; p++)
		if (*p == '\'')
			*p = '"';
	return s;
}

struct json_value *gw_fake_json(const char *text)
{
	cleanup_free char *t = gw_fake_unquote(text);
	struct json_value *v = NULL;
	if (json_parse(t, strlen(t), NULL, &v, NULL) < 0) {
		fprintf(stderr, "a fake's JSON is not JSON: %s\n", t);
		abort();
	}
	return v;
}

char *gw_fake_pin(const char *tools)
{
	struct json_value *t = gw_fake_json(tools);
	char hash[MANIFEST_HASH_LEN];
	if (manifest_hash(t, hash, NULL) < 0)
		abort();
	json_free(t);
	return xstrdup(hash);
}

char *gw_fake_server_toml(const char *name, const char *pin, const char *settings)
{
	return xasprintf("[[server]]\nname = \"%s\"\ntransport = \"container\"\nimage = \"%s\"\n"
	                 "%s%s%s%s\n",
	                 name, GW_FAKE_IMAGE, pin != NULL ? "manifest = \"" : "",
	                 pin != NULL ? pin : "", pin != NULL ? "\"\n" : "", settings);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void gw_fake_remove_tree(const char *dir)
{
	if (dir != NULL && dir[0] != '\0')
		nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}
