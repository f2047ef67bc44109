/* Backpressure: when the way to the client is full, mcpgate stops reading
 * from the servers that feed it, the noisiest first, instead of dropping
 * what they send (docs/2026-12-02-pressure.md). A server not read waits on
 * its own pipe; nothing it said is lost, and the client's answers from the
 * other servers still go out. Checked once per turn of the session's loop. */
#include <stdlib.h>

#include "internal/base/log.h"
#include "internal/gateway/gateway-internal.h"

/* bytes queued for the client, of client_queue_max (64 MiB by default):
 * past an eighth the noisiest server is paused, past each further eighth
 * the next noisiest, past a half all; under a sixty-fourth every server is
 * read again */
#define PRESSURE_HIGH(s) ((size_t)(s)->cfg->mcp.client_queue_max / 8)
#define PRESSURE_FULL(s) ((size_t)(s)->cfg->mcp.client_queue_max / 2)
#define PRESSURE_LOW(s)  ((size_t)(s)->cfg->mcp.client_queue_max / 64)

static bool feeds(const struct gw_server *srv)
{
	return srv->launch.peer != NULL && srv->state == GW_READY &&
	       !rpc_peer_paused(srv->launch.peer);
}

/* The server that sent the most since the last time none was paused */
static struct gw_server *noisiest(struct session *s)
{
	struct gw_server *top = NULL;
	uint64_t most = 0;
	for (size_t i = 0; i < s->nservers; i++) {
		struct gw_server *srv = &s->servers[i];
		if (!feeds(srv))
			continue;
		uint64_t sent = rpc_peer_bytes_read(srv->launch.peer) - srv->pressure_mark;
		if (top == NULL || sent > most) {
			top = srv;
			most = sent;
		}
	}
	return top;
}

static void pause_server(struct session *s, struct gw_server *srv, size_t queued)
{
	rpc_peer_pause_reading(srv->launch.peer, true);
	s->paused_servers++;
	audit_record(s->audit, "client.backpressure",
	             gw_fields("server", json_new_string(srv->cfg->name), "queued",
	                       json_new_int((int64_t)queued), "sent",
	                       json_new_int((int64_t)(rpc_peer_bytes_read(srv->launch.peer) -
	                                              srv->pressure_mark)),
	                       NULL));
}

static void resume_all(struct session *s, size_t queued)
{
	for (size_t i = 0; i < s->nservers; i++) {
		struct gw_server *srv = &s->servers[i];
		if (srv->launch.peer != NULL && rpc_peer_paused(srv->launch.peer))
			rpc_peer_pause_reading(srv->launch.peer, false);
	}
	uint64_t shed = rpc_peer_shed(s->client);
	audit_record(s->audit, "client.backpressure.end",
	             gw_fields("queued", json_new_int((int64_t)queued), "paused",
	                       json_new_int((int64_t)s->paused_servers), "shed",
	                       json_new_int((int64_t)(shed - s->shed_told)), NULL));
	s->shed_told = shed;
	s->paused_servers = 0;
}

void gw_pressure(struct session *s)
{
	if (s->client == NULL)
		return;
	size_t queued = rpc_peer_queued_bytes(s->client);
	if (s->paused_servers > 0 && queued <= PRESSURE_LOW(s)) {
		resume_all(s, queued);
		for (size_t i = 0; i < s->nservers; i++)
			if (s->servers[i].launch.peer != NULL)
				s->servers[i].pressure_mark =
				    rpc_peer_bytes_read(s->servers[i].launch.peer);
		return;
	}
	if (s->paused_servers == 0 && queued <= PRESSURE_LOW(s)) {
		/* calm: what each server sends from here is measured afresh */
		for (size_t i = 0; i < s->nservers; i++)
			if (s->servers[i].launch.peer != NULL)
				s->servers[i].pressure_mark =
				    rpc_peer_bytes_read(s->servers[i].launch.peer);
		return;
	}
	/* one more server paused per HIGH bytes queued; all of them past FULL */
	size_t want = queued >= PRESSURE_FULL(s) ? s->nservers : queued / PRESSURE_HIGH(s);
	while (s->paused_servers < want) {
		struct gw_server *srv = noisiest(s);
		if (srv == NULL)
			break;
		pause_server(s, srv, queued);
	}
}

void gw_pressure_end(struct session *s)
{
	if (s->client == NULL)
		return;
	uint64_t shed = rpc_peer_shed(s->client);
	size_t undelivered = rpc_peer_queued_responses(s->client);
	if (shed > s->shed_told || undelivered > 0)
		audit_record(s->audit, "client.undelivered",
		             gw_fields("responses", json_new_int((int64_t)undelivered), "shed",
		                       json_new_int((int64_t)(shed - s->shed_told)), "bytes",
		                       json_new_int((int64_t)rpc_peer_queued_bytes(s->client)),
		                       NULL));
	s->shed_told = shed;
}
