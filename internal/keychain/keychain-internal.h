/* What keychain.c (the store, the file) and bindings.c share. */
#ifndef MG_KEYCHAIN_KEYCHAIN_INTERNAL_H
#define MG_KEYCHAIN_KEYCHAIN_INTERNAL_H

#include <sodium.h>

#include "internal/keychain/keychain.h"

#define KC_NONCE_BYTES crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
#define KC_TAG_BYTES   crypto_aead_xchacha20poly1305_ietf_ABYTES

/* One secret as the file holds it. ad is the entry's bytes from its name
 * length to its nonce, exactly as read or last written. */
struct kc_sealed {
	unsigned char nonce[KC_NONCE_BYTES];
	unsigned char *ad;
	size_t ad_len;
	unsigned char *ct; /* the ciphertext and its tag */
	size_t ct_len;
	struct kc_secret *plain; /* the value, only while a change is applied */
};

/* The entries, in name order: info[i] and sealed[i] are one secret. */
struct kc_state {
	struct kc_info *info;
	struct kc_sealed *sealed;
	size_t n;
};

/* Index of name in st, or -1. */
long kc_state_find(const struct kc_state *st, const char *name);

/* Apply a change to st, whose entries hold their values (plain). Return a
 * negative value (err filled) to abandon it, 0 when nothing changed (nothing
 * is written), more than 0 when the file is to be written. */
typedef int (*kc_apply_fn)(struct kc_state *st, void *data, struct mg_err **err);

/* Lock, read the file again, apply, write atomically, unlock; the snapshot
 * of kc becomes what was written. Returns apply's result. */
int kc_change(struct kc *kc, kc_apply_fn apply, void *data, struct mg_err **err);

/* Free what b holds (not b itself). */
void kc_binding_clear(struct kc_binding *b);

#endif
