/* Fake servers for a session without a container runtime, shared by
 * gateway_test.c and fuzz/session_fuzz.c (test support: mcpgate itself never
 * links it). A fake is one socketpair: the gateway gets one end as a server's
 * peer, from a start thread (session_options.start_thread) that hands it over
 * with the initialize answer and tool list given here; the test reads and
 * writes JSON-RPC lines on the other end. A client is a fake too, whose
 * gateway ends become session_options.client_in and client_out. */
#ifndef MG_GATEWAY_GATEWAY_FAKES_H
#define MG_GATEWAY_GATEWAY_FAKES_H

#include <stdbool.h>
#include <sys/types.h>

#include "internal/base/buf.h"
#include "internal/gateway/gateway-internal.h"

/* The image every fake server is configured with (never run) */
#define GW_FAKE_IMAGE                                                                      \
	"example.org/fake@sha256:0123456789abcdef0123456789abcdef0123456789abcdef01234567" \
	"89abcdef"

struct gw_fake {
	char name[32];            /* its server's name, or "client" */
	int fd;                   /* the test's end, non-blocking */
	int gw_in, gw_out;        /* the gateway's ends until it takes them (one socket, two fds:
	                     * the peer watches each alone) */
	const char *caps;         /* a server's initialize capabilities (JSON, ' for ") */
	const char *tools;        /* a server's tools/list array (JSON, ' for ") */
	const char *version;      /* the protocol version it answers with; NULL: the latest */
	struct rpc_reader reader; /* what the gateway sent it, not yet taken */
	struct mg_buf out;        /* what it sends, not yet written (gw_fake_queue) */
	char *last;               /* the last line taken, for messages */
	bool eof;                 /* the gateway closed its end */
	int hold_rd, hold_wr;     /* its start waits for a byte here (gw_fake_hold) */
};

void gw_fake_open(struct gw_fake *f, const char *name, const char *caps, const char *tools);
/* The server's start waits until gw_fake_release (or gw_fake_close) */
void gw_fake_hold(struct gw_fake *f);
void gw_fake_release(struct gw_fake *f);
/* Closes what is left of it; the fake can be opened again */
void gw_fake_close(struct gw_fake *f);

/* On the server's start thread: wait while it is held, then hand srv the
 * gateway's ends, an initialize answer (f's version, caps) and f's tools */
void gw_fake_await_release(struct gw_fake *f);
void gw_fake_hand_over(struct gw_server *srv, struct gw_fake *f);

/* Bytes to send: queued, then written as far as the socket takes them now.
 * gw_fake_flush returns -1 once the gateway's end is gone (the rest is
 * dropped), else 0; gw_fake_write_all waits until all is written. */
void gw_fake_queue(struct gw_fake *f, const char *data, size_t len);
int gw_fake_flush(struct gw_fake *f);
void gw_fake_write_all(struct gw_fake *f, const char *data, size_t len);
/* One read of what the gateway sent into f->reader: bytes read, 0 at the end
 * (f->eof set), or RPC_AGAIN when nothing is there now */
ssize_t gw_fake_read(struct gw_fake *f);

/* JSON written with single quotes for double ones (no apostrophe in a text
 * can be meant then): converted, parsed; aborts when it is not JSON */
char *gw_fake_unquote(const char *text);
struct json_value *gw_fake_json(const char *text);
/* The manifest pin of a tool list written as above */
char *gw_fake_pin(const char *tools);
/* mcp.toml's [[server]] of a fake: pin NULL for none; settings follow it */
char *gw_fake_server_toml(const char *name, const char *pin, const char *settings);
/* rm -r dir (what a test made under /tmp) */
void gw_fake_remove_tree(const char *dir);

#endif
