/* A confirmation asked as a multi round-trip request (MCP 2026-07-28): the
 * requestState that travels through the client with the question and comes
 * back with the answer (docs/2026-12-01-protocol-eras.md).
 *
 * A state binds one question to one call: the session, the tool's public
 * name, the SHA-256 of the arguments' exact JSON (json_exact: the canonical
 * form with every number as the literal the server receives),
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
/* What a question's state is called in the text: "mcs1." and 96 characters */
#define CONFIRM_STATE_PREFIX "mcs1."
/* A round's: "mcr1.", 96 characters, "." and what it carries (rounds.c: the
 * questions asked so far, ":", the server's requestState) */
#define CONFIRM_ROUND_PREFIX "mcr1."
/* A parked call's: "mcp1.", 96 characters, "." and the call's park id */
#define CONFIRM_PARKED_PREFIX "mcp1."
/* The longest server requestState a round carries */
#define CONFIRM_CARRIED_MAX ((size_t)64 << 10)

/* What a state stands for. A question: mcpgate asks the person whether the
 * call may run. A round: the call was let through, its server answered
 * input_required, and the server's own requestState rides inside ours, so
 * the retry reaches the server with the state it gave, for this call only,
 * once. Parked: a server of the old era asked the client within the call,
 * which goes on in mcpgate; the state carries which call (its park id), so
 * the retry's answers reach that server's request, for this call only, once.
 * No kind ever stands for another (the MAC says which). */
enum confirm_kind { CONFIRM_QUESTION, CONFIRM_ROUND, CONFIRM_PARKED };

/* The call a state is bound to */
struct confirm_call {
	enum confirm_kind kind;
	const char *session;
	const char *tool;              /* its public name */
	const struct json_value *args; /* NULL is {} */
};

struct confirm_keeper;

/* A keeper with a fresh random key; confirm_keeper_free() */
int confirm_keeper_new(struct confirm_keeper **out, struct mg_err **err);
void confirm_keeper_free(struct confirm_keeper *k);

/* A state (allocated) for call, good until deadline_ms (any clock, the
 * same one take is given); a round's carries the server's state (carried,
 * carried_len bytes, at most CONFIRM_CARRIED_MAX; ignored for a question).
 * Its nonce is outstanding from now. -1 when args cannot be made canonical
 * or carried is too long. */
int confirm_state_make(struct confirm_keeper *k, const struct confirm_call *call,
                       const char *carried, size_t carried_len, int64_t deadline_ms, char **out,
                       struct mg_err **err);

/* The kind a state's prefix names, or -1 when it names neither */
int confirm_state_kind(const char *state, size_t len);

/* 0 when state is one this keeper made for exactly this call (kind, session,
 * tool and arguments), before its deadline, and not taken yet: it is taken
 * now, and a round's *carried (into state) and *carried_len are the server's
 * state it carries. -1 with what is wrong otherwise (malformed, forged or
 * altered in any part, carried one included, another kind, another session,
 * another tool or other arguments, expired, already used). */
int confirm_state_take(struct confirm_keeper *k, const char *state, size_t len,
                       const struct confirm_call *call, int64_t now_ms, const char **carried,
                       size_t *carried_len, struct mg_err **err);

#endif
