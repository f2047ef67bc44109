/* How many questions servers may put to the client: one limit for both eras
 * and every way of asking (a 2025-11-25 server's elicitation, sampling or
 * roots request, relayed or parked; a 2026-07-28 server's input requests),
 * per call and per session over time (docs/2026-12-02-asking.md). A
 * hostile server that sends 300 elicitations in one call reaches the person
 * GW_ASKS_PER_CALL times, and a session's servers together no more often
 * than the bucket refills. */
#define _GNU_SOURCE
#include <stdlib.h>

#include "internal/base/xalloc.h"
#include "internal/gateway/gateway-internal.h"

void gw_asks_init(struct session *s)
{
	s->asks_tokens = GW_ASKS_BURST;
	s->asks_at_ms = proc_now_ms();
}

int gw_asks_take(struct gw_server *srv, unsigned *call_asks, size_t n, char **why)
{
	struct session *s = srv->sess;
	int64_t now = proc_now_ms();
	if (now > s->asks_at_ms) {
		/* the bucket refills one question every GW_ASKS_REFILL_MS */
		int64_t gained = (now - s->asks_at_ms) / GW_ASKS_REFILL_MS;
		if (gained > 0) {
			s->asks_tokens += gained;
			s->asks_at_ms += gained * GW_ASKS_REFILL_MS;
		}
		if (s->asks_tokens >= GW_ASKS_BURST) {
			s->asks_tokens = GW_ASKS_BURST;
			s->asks_at_ms = now;
		}
	}
	bool refused = true;
	if (call_asks != NULL && *call_asks + n > GW_ASKS_PER_CALL)
		*why = xasprintf("server %s asked the client more than %d questions within one "
		                 "call (%u asked, %zu more); mcpgate relays at most %d a call",
		                 srv->cfg->name, GW_ASKS_PER_CALL, *call_asks, n, GW_ASKS_PER_CALL);
	else if ((int64_t)n > s->asks_tokens)
		*why = xasprintf("server %s asked the client too often: this session's servers may "
		                 "ask %d questions at once and one more every %d s, and the rest "
		                 "is spent",
		                 srv->cfg->name, GW_ASKS_BURST, GW_ASKS_REFILL_MS / 1000);
	else
		refused = false;
	if (refused)
		return -1;
	s->asks_tokens -= (int64_t)n;
	if (call_asks != NULL)
		*call_asks += (unsigned)n;
	return 0;
}
