/* A confirmation asked as a multi round-trip request (MCP 2026-07-28): the
 * requestState that travels through the client with the question and comes
 * back with the answer (docs/2026-12-01-protocol-eras.md).
 *
 * A state binds one question to one call: the session, the tool's public
 * name, the SHA-256 of the arguments' canonical JSON (docs/canonical-json.md),
 * a deadline and a one-time nonce, under a MAC (crypto_auth, HMAC-SHA-512-256)
 * with a key of the keeper's that never leaves the process. It is taken once:
 * the keeper remembers the nonces it gave out and not yet taken (at most
 * CONFIRM_PENDING_MAX; the oldest goes first), so a state is good only while
 * its nonce is outstanding. Bounded, and no replay slips through when the
 * set is full: an evicted nonce is refused, never forgotten into "unused". */
#ifndef MG_GATEWAY_CONFIRM_STATE_H
#define MG_GATEWAY_CONFIRM_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "internal/base/err.h"
#include "internal/json/json.h"

#define CONFIRM_PENDING_MAX 64
/* What a state is called in the text: "mcs1." and 96 characters */
#define CONFIRM_STATE_PREFIX "mcs1."

struct confirm_keeper;

/* A keeper with a fresh random key; confirm_keeper_free() */
int confirm_keeper_new(struct confirm_keeper **out, struct mg_err **err);
void confirm_keeper_free(struct confirm_keeper *k);

/* A state (allocated) for a call of tool with args (NULL is {}) in session,
 * good until deadline_ms (any clock, the same one take is given). Its nonce
 * is outstanding from now. -1 when args cannot be made canonical. */
int confirm_state_make(struct confirm_keeper *k, const char *session, const char *tool,
                       const struct json_value *args, int64_t deadline_ms, char **out,
                       struct mg_err **err);

/* 0 when state is one this keeper made for exactly this session, tool and
 * arguments, before its deadline, and not taken yet: it is taken now. -1 with
 * what is wrong otherwise (malformed, forged or altered, another session,
 * another tool or other arguments, expired, already used). */
int confirm_state_take(struct confirm_keeper *k, const char *state, size_t len, const char *session,
                       const char *tool, const struct json_value *args, int64_t now_ms,
                       struct mg_err **err);

#endif
