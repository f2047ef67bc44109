/* The credential store: DATA_DIR/keychain, each secret sealed with
 * XChaCha20-Poly1305, and its bindings (the hosts and the position a secret
 * may go to). docs/credentials.md describes the model and the file byte by
 * byte.
 *
 * The key is DATA_DIR/keychain.key (32 random bytes, made on the first write)
 * or, when the environment names a descriptor in MCPGATE_PASSPHRASE_FD, a key
 * derived from the passphrase read from it (Argon2id, salt in the file). The
 * file records which; the other kind is refused.
 *
 * A struct kc is a verified snapshot of the file as of kc_open() or its last
 * change. Every change (kc_set, kc_remove, kc_bind, kc_unbind) takes the lock
 * DATA_DIR/keychain.lock, reads the file again, applies itself and replaces
 * the file atomically, so concurrent writers never lose an entry. A file that
 * cannot be read (wrong key, altered, truncated) is never rewritten.
 *
 * Secret values exist in the clear only in sodium_malloc memory (struct
 * kc_secret), for as long as a caller holds one. No message of this module
 * holds a value. Not thread-safe: one struct kc per thread. */
#ifndef MG_KEYCHAIN_KEYCHAIN_H
#define MG_KEYCHAIN_KEYCHAIN_H

#include <stdbool.h>
#include <stddef.h>

#include "internal/base/err.h"
#include "internal/config/config.h"

#define KC_FILE_NAME     "keychain"
#define KC_KEY_FILE_NAME "keychain.key"
#define KC_LOCK_NAME     "keychain.lock"
#define KC_PASSPHRASE_FD "MCPGATE_PASSPHRASE_FD"

#define KC_SECRET_MAX     (64u << 10) /* bytes of one value */
#define KC_ENTRIES_MAX    1024        /* secrets in one keychain */
#define KC_BINDINGS_MAX   256         /* bindings of one secret */
#define KC_PASSPHRASE_MAX 1024        /* bytes read from MCPGATE_PASSPHRASE_FD */
#define KC_LOCK_TIMEOUT   10          /* seconds a change waits for keychain.lock */

/* A secret value. bytes is sodium_malloc memory holding len bytes and a NUL
 * after them (so a value without NUL bytes reads as a C string). The holder
 * owns it and ends it with kc_secret_free(), which wipes it. */
struct kc_secret {
	unsigned char *bytes;
	size_t len;
};

/* One binding: the secret may go to host (port) in position. host is in
 * cfg_parse_host()'s form without the port; port 0 is the bare host (ports
 * 80 and 443), as in "network". */
struct kc_binding {
	char *host;
	unsigned port;
	enum cfg_position position; /* CFG_POSITION_ENV or CFG_POSITION_HEADER */
	char *position_name;
};

/* A secret as kc_list() shows it: never its value. */
struct kc_info {
	char *name;
	struct kc_binding *bindings; /* in the order they were made */
	size_t nbindings;
};

struct kc;

/* Which key the store uses: a passphrase when MCPGATE_PASSPHRASE_FD is set
 * (the descriptor is read to its end now and closed unless it is 0-2), else
 * the key file. Reads and verifies DATA_DIR/keychain when it exists (absent
 * is an empty keychain; nothing is created until the first change). The
 * caller owns *out (kc_free). */
int kc_open(const char *data_dir, struct kc **out, struct mg_err **err);
void kc_free(struct kc *kc);

/* Borrowed paths, for messages: DATA_DIR/keychain and its key file. */
const char *kc_path(const struct kc *kc);
const char *kc_key_path(const struct kc *kc);
/* true when the key is derived from a passphrase */
bool kc_uses_passphrase(const struct kc *kc);

/* Store value[0..len) (1..KC_SECRET_MAX bytes) as name, keeping the
 * bindings of a secret it replaces. The caller keeps value. Returns 0 when
 * name is new, 1 when it replaced a value. */
int kc_set(struct kc *kc, const char *name, const void *value, size_t len, struct mg_err **err);

/* Remove name and its bindings; an error when there is no such secret. */
int kc_remove(struct kc *kc, const char *name, struct mg_err **err);

/* name's value, decrypted into *out, which the caller owns (kc_secret_free).
 * An error when there is no such secret. */
int kc_get(const struct kc *kc, const char *name, struct kc_secret **out, struct mg_err **err);

/* Every secret's name and bindings, in name order; never a value. The array
 * belongs to kc and lives until its next change or kc_free. */
const struct kc_info *kc_list(const struct kc *kc, size_t *n);

/* The secret name, or NULL. Belongs to kc, as kc_list's. */
const struct kc_info *kc_find(const struct kc *kc, const char *name);

/* Hand each secret's value to cb, in name order, in sodium_malloc memory
 * that is wiped when cb returns (cb copies what it keeps, into its own secure
 * memory). A negative return of cb stops the walk and is returned (cb fills
 * err); else 0. For the scanner that checks arguments and redacts results. */
typedef int (*kc_each_fn)(const char *name, const struct kc_secret *value, void *data,
                          struct mg_err **err);
int kc_each_secret(const struct kc *kc, kc_each_fn cb, void *data, struct mg_err **err);

/* ---- bindings (bindings.c) --------------------------------------------- */

/* Let name go to each of hosts (as cfg_parse_host fills them; private_ok and
 * pos are ignored) in position position_name. Bindings already there are
 * kept once. Returns how many were added (0 or more). */
int kc_bind(struct kc *kc, const char *name, const struct cfg_host *hosts, size_t nhosts,
            enum cfg_position position, const char *position_name, struct mg_err **err);

/* Remove name's bindings to host:port (host NULL: every binding). Returns how
 * many were removed; 0 changes nothing and writes nothing. */
int kc_unbind(struct kc *kc, const char *name, const char *host, unsigned port,
              struct mg_err **err);

/* May the secret name go to host:port in position position_name? host in
 * cfg_parse_host()'s form; port 0 asks for the bare host (80 and 443). A
 * binding's port must equal port, or be 0 when port is 0, 80 or 443.
 * Environment variable names compare exactly, header names without regard to
 * ASCII case. false when there is no such secret or binding. */
bool kc_bound_for(const struct kc *kc, const char *name, const char *host, unsigned port,
                  enum cfg_position position, const char *position_name);

/* "env:NAME" or "header:NAME", allocated */
char *kc_position_text(enum cfg_position position, const char *position_name);
/* "host" or "host:port", allocated */
char *kc_host_text(const char *host, unsigned port);

/* ---- secret values ------------------------------------------------------ */

/* len zero bytes (and the NUL after them) in sodium_malloc memory; the caller
 * owns it. Aborts when out of memory, like xmalloc. */
struct kc_secret *kc_secret_new(size_t len);
/* Wipe and free; NULL does nothing. */
void kc_secret_free(struct kc_secret *s);
/* Constant-time in the bytes (sodium_memcmp); lengths compare first. */
bool kc_secret_equal(const struct kc_secret *s, const void *value, size_t len);

#endif
