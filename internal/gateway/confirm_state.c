/* requestState for confirmations asked as multi round-trip requests: made,
 * checked and taken once (confirm_state.h). */
#include "internal/gateway/confirm_state.h"

#include <sodium.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "internal/base/buf.h"
#include "internal/base/xalloc.h"

#define NONCE_LEN 16
#define TAG_LEN   8
/* nonce, deadline (big-endian), session tag, call tag, MAC */
#define STATE_BIN_LEN (NONCE_LEN + 8 + TAG_LEN + TAG_LEN + crypto_auth_BYTES)
#define ARGS_MAX      ((size_t)64 << 20)

struct confirm_pending {
	unsigned char nonce[NONCE_LEN];
	int64_t deadline_ms;
};

struct confirm_keeper {
	unsigned char *key; /* crypto_auth_KEYBYTES in sodium_malloc memory */
	struct confirm_pending pending[CONFIRM_PENDING_MAX]; /* oldest first */
	size_t npending;
};

int confirm_keeper_new(struct confirm_keeper **out, struct mg_err **err)
{
	if (sodium_init() < 0)
		return mg_err_set(err, "confirmation state: libsodium did not initialise");
	struct confirm_keeper *k = xcalloc(1, sizeof(*k));
	k->key = sodium_malloc(crypto_auth_KEYBYTES);
	if (k->key == NULL) {
		free(k);
		return mg_err_set(err, "confirmation state: no secure memory for its key");
	}
	crypto_auth_keygen(k->key);
	*out = k;
	return 0;
}

void confirm_keeper_free(struct confirm_keeper *k)
{
	if (k == NULL)
		return;
	sodium_free(k->key); /* wipes it */
	sodium_memzero(k->pending, sizeof(k->pending));
	free(k);
}

/* What a state is bound to, in the forms the MAC and the tags take */
struct binding {
	enum confirm_kind kind;
	const char *session, *tool;
	const char *carried; /* a round's: the server's state */
	size_t carried_len;
	unsigned char args_hash[crypto_hash_sha256_BYTES];
	unsigned char session_tag[TAG_LEN], call_tag[TAG_LEN];
};

static void be64_put(unsigned char b[8], uint64_t n)
{
	for (int i = 7; i >= 0; i--, n >>= 8)
		b[i] = (unsigned char)(n & 0xff);
}

static void put_str(crypto_generichash_state *h, const char *s)
{
	unsigned char len[8];
	be64_put(len, strlen(s));
	crypto_generichash_update(h, len, sizeof(len));
	crypto_generichash_update(h, (const unsigned char *)s, strlen(s));
}

static int bind(struct binding *b, const struct confirm_call *call, const char *carried,
                size_t carried_len, struct mg_err **err)
{
	const char *session = call->session, *tool = call->tool;
	const struct json_value *args = call->args;
	b->kind = call->kind;
	b->session = session;
	b->tool = tool;
	b->carried = call->kind != CONFIRM_QUESTION ? carried : NULL;
	b->carried_len = call->kind != CONFIRM_QUESTION ? carried_len : 0;
	/* the exact form: a number is bound as the literal the server reads,
	 * not as the double it rounds to */
	struct mg_buf canon = MG_BUF_INIT(ARGS_MAX);
	struct json_value *empty = args == NULL ? json_new_object() : NULL;
	int r = json_exact(args != NULL ? args : empty, &canon, err);
	json_free(empty);
	if (r < 0) {
		mg_buf_free(&canon);
		return mg_err_wrap(err, "confirmation state: the arguments");
	}
	crypto_hash_sha256(b->args_hash, (const unsigned char *)canon.data, canon.len);
	mg_buf_free(&canon);
	/* the tags are not secret: they only say which binding a state that
	 * failed its MAC was made for, so the refusal can name it */
	crypto_generichash_state h;
	crypto_generichash_init(&h, NULL, 0, TAG_LEN);
	put_str(&h, "mcpgate confirm session");
	put_str(&h, session);
	crypto_generichash_final(&h, b->session_tag, TAG_LEN);
	crypto_generichash_init(&h, NULL, 0, TAG_LEN);
	put_str(&h, "mcpgate confirm call");
	put_str(&h, tool);
	crypto_generichash_update(&h, b->args_hash, sizeof(b->args_hash));
	crypto_generichash_final(&h, b->call_tag, TAG_LEN);
	return 0;
}

/* The MAC over the state's clear part (nonce, deadline, tags) and the whole
 * binding: its kind, session, tool, arguments' hash, and a round's carried
 * state */
static void state_mac(const struct confirm_keeper *k, const unsigned char *clear, size_t clear_len,
                      const struct binding *b, unsigned char mac[crypto_auth_BYTES])
{
	crypto_auth_hmacsha512256_state st;
	crypto_auth_hmacsha512256_init(&st, k->key, crypto_auth_KEYBYTES);
	static const char *const domains[] = {
	    [CONFIRM_QUESTION] = "mcpgate confirm v1",
	    [CONFIRM_ROUND] = "mcpgate round v1",
	    [CONFIRM_PARKED] = "mcpgate parked v1",
	};
	const char *domain = domains[b->kind];
	crypto_auth_hmacsha512256_update(&st, (const unsigned char *)domain, strlen(domain) + 1);
	crypto_auth_hmacsha512256_update(&st, clear, clear_len);
	unsigned char len[8];
	const char *parts[2] = {b->session, b->tool};
	for (int p = 0; p < 2; p++) {
		be64_put(len, strlen(parts[p]));
		crypto_auth_hmacsha512256_update(&st, len, sizeof(len));
		crypto_auth_hmacsha512256_update(&st, (const unsigned char *)parts[p],
		                                 strlen(parts[p]));
	}
	crypto_auth_hmacsha512256_update(&st, b->args_hash, sizeof(b->args_hash));
	if (b->kind != CONFIRM_QUESTION) {
		be64_put(len, b->carried_len);
		crypto_auth_hmacsha512256_update(&st, len, sizeof(len));
		crypto_auth_hmacsha512256_update(&st, (const unsigned char *)b->carried,
		                                 b->carried_len);
	}
	crypto_auth_hmacsha512256_final(&st, mac);
	sodium_memzero(&st, sizeof(st));
}

static void pending_drop(struct confirm_keeper *k, size_t i)
{
	memmove(&k->pending[i], &k->pending[i + 1], (k->npending - i - 1) * sizeof(k->pending[0]));
	k->npending--;
}

static const char *prefix_of(enum confirm_kind kind)
{
	switch (kind) {
	case CONFIRM_QUESTION:
		return CONFIRM_STATE_PREFIX;
	case CONFIRM_ROUND:
		return CONFIRM_ROUND_PREFIX;
	case CONFIRM_PARKED:
		return CONFIRM_PARKED_PREFIX;
	}
	return CONFIRM_STATE_PREFIX;
}

static const char *kind_name(enum confirm_kind kind)
{
	switch (kind) {
	case CONFIRM_QUESTION:
		return "one of mcpgate's questions";
	case CONFIRM_ROUND:
		return "a server's round";
	case CONFIRM_PARKED:
		return "a server's question within a call";
	}
	return "?";
}

int confirm_state_kind(const char *state, size_t len)
{
	static const enum confirm_kind kinds[] = {CONFIRM_QUESTION, CONFIRM_ROUND, CONFIRM_PARKED};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		const char *p = prefix_of(kinds[i]);
		if (len >= strlen(p) && memcmp(state, p, strlen(p)) == 0)
			return (int)kinds[i];
	}
	return -1;
}

int confirm_state_make(struct confirm_keeper *k, const struct confirm_call *call,
                       const char *carried, size_t carried_len, int64_t deadline_ms, char **out,
                       struct mg_err **err)
{
	if (call->kind != CONFIRM_QUESTION && carried_len > CONFIRM_CARRIED_MAX)
		return mg_err_set(err, "the server's requestState is longer than %zu bytes",
		                  CONFIRM_CARRIED_MAX);
	struct binding b;
	if (bind(&b, call, carried, carried_len, err) < 0)
		return -1;
	unsigned char bin[STATE_BIN_LEN];
	unsigned char *p = bin;
	randombytes_buf(p, NONCE_LEN);
	p += NONCE_LEN;
	be64_put(p, (uint64_t)deadline_ms);
	p += 8;
	memcpy(p, b.session_tag, TAG_LEN);
	p += TAG_LEN;
	memcpy(p, b.call_tag, TAG_LEN);
	p += TAG_LEN;
	state_mac(k, bin, (size_t)(p - bin), &b, p);
	if (k->npending == CONFIRM_PENDING_MAX)
		pending_drop(k, 0); /* the oldest question can no longer be answered */
	memcpy(k->pending[k->npending].nonce, bin, NONCE_LEN);
	k->pending[k->npending++].deadline_ms = deadline_ms;
	const char *prefix = prefix_of(call->kind);
	size_t n = strlen(prefix);
	size_t enc =
	    sodium_base64_ENCODED_LEN(STATE_BIN_LEN, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	size_t cap = n + enc + 1 + b.carried_len + 1;
	char *s = xmalloc(cap);
	memcpy(s, prefix, n);
	sodium_bin2base64(s + n, enc, bin, sizeof(bin), sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	if (call->kind != CONFIRM_QUESTION) {
		/* ours, then what it carries as it was given */
		size_t at = strlen(s);
		s[at] = '.';
		memcpy(s + at + 1, b.carried, b.carried_len);
		s[at + 1 + b.carried_len] = '\0';
	}
	*out = s;
	return 0;
}

int confirm_state_take(struct confirm_keeper *k, const char *state, size_t len,
                       const struct confirm_call *call, int64_t now_ms, const char **carried,
                       size_t *carried_len, struct mg_err **err)
{
	const char *prefix = prefix_of(call->kind);
	size_t n = strlen(prefix);
	unsigned char bin[STATE_BIN_LEN];
	size_t got = 0;
	const char *end = NULL;
	int given = confirm_state_kind(state, len);
	if (given >= 0 && given != (int)call->kind)
		return mg_err_set(err, "the requestState is %s, not %s",
		                  kind_name((enum confirm_kind)given), kind_name(call->kind));
	/* a round's or parked call's part of ours ends at its ".", what it
	 * carries follows */
	size_t ours = len;
	if (call->kind != CONFIRM_QUESTION) {
		const char *dot = len > n ? memchr(state + n, '.', len - n) : NULL;
		ours = dot != NULL ? (size_t)(dot - state) : len;
		if (dot == NULL)
			return mg_err_set(err, "the requestState is not one mcpgate makes");
	}
	if (len <= n || memcmp(state, prefix, n) != 0 ||
	    sodium_base642bin(bin, sizeof(bin), state + n, ours - n, NULL, &got, &end,
	                      sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
	    got != sizeof(bin) || end != state + ours)
		return mg_err_set(err, "the requestState is not one mcpgate makes");
	const char *rest = call->kind != CONFIRM_QUESTION ? state + ours + 1 : NULL;
	size_t rest_len = call->kind != CONFIRM_QUESTION ? len - ours - 1 : 0;
	struct binding b;
	if (bind(&b, call, rest, rest_len, err) < 0)
		return -1;
	const unsigned char *nonce = bin, *deadline = bin + NONCE_LEN;
	const unsigned char *session_tag = deadline + 8, *call_tag = session_tag + TAG_LEN;
	const unsigned char *mac = call_tag + TAG_LEN;
	unsigned char want[crypto_auth_BYTES];
	state_mac(k, bin, (size_t)(mac - bin), &b, want);
	if (sodium_memcmp(want, mac, sizeof(want)) != 0) {
		if (sodium_memcmp(session_tag, b.session_tag, TAG_LEN) != 0)
			return mg_err_set(err,
			                  "the requestState is not valid in this session (made for "
			                  "another one, or forged)");
		if (sodium_memcmp(call_tag, b.call_tag, TAG_LEN) != 0)
			return mg_err_set(err,
			                  "the requestState is not valid for this call (made for "
			                  "another tool or other arguments, or forged): a "
			                  "confirmation holds for the exact call asked about");
		return mg_err_set(err, "the requestState is forged or altered (its MAC does not "
		                       "match)");
	}
	uint64_t d = 0;
	for (int i = 0; i < 8; i++)
		d = d << 8 | deadline[i];
	size_t i = 0;
	while (i < k->npending && sodium_memcmp(k->pending[i].nonce, nonce, NONCE_LEN) != 0)
		i++;
	bool outstanding = i < k->npending;
	if (outstanding)
		pending_drop(k, i); /* taken: whatever the outcome, never again */
	if ((int64_t)d <= now_ms)
		return mg_err_set(err, "the requestState expired: the question was asked too long "
		                       "ago; call again to be asked again");
	if (!outstanding)
		return mg_err_set(err,
		                  "the requestState was used already (or more than %d newer "
		                  "questions were asked since); call again to be asked again",
		                  CONFIRM_PENDING_MAX);
	if (carried != NULL)
		*carried = rest;
	if (carried_len != NULL)
		*carried_len = rest_len;
	return 0;
}
