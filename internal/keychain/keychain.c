/* The store: the key, the lock, and reading, verifying and writing
 * DATA_DIR/keychain in the format docs/credentials.md gives byte by byte.
 *
 * Every byte read is distrusted until the file's tag and each entry's AEAD
 * tag check; nothing is written back from a file that did not read whole. */
#define _GNU_SOURCE
#include "internal/keychain/keychain.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/num.h"
#include "internal/base/xalloc.h"
#include "internal/keychain/keychain-internal.h"

#define KC_MAGIC           "MGKCHAIN"
#define KC_MAGIC_BYTES     8
#define KC_VERSION         1
#define KC_KIND_KEY_FILE   1
#define KC_KIND_PASSPHRASE 2
#define KC_POS_ENV         1 /* a binding's position kinds */
#define KC_POS_HEADER      2
#define KC_KEY_BYTES       32
#define KC_SALT_BYTES      16
#define KC_DIGEST_BYTES    16
#define KC_CHECK_BYTES     16
#define KC_MAC_BYTES       32
#define KC_HEADER_BYTES    76
#define KC_FILE_MAX        (64u << 20)
#define KC_KDF_CONTEXT     "mcpgkc01"
#define KC_KDF_ALG         crypto_pwhash_ALG_ARGON2ID13
#define KC_OPSLIMIT        crypto_pwhash_argon2id_OPSLIMIT_INTERACTIVE
#define KC_MEMLIMIT        crypto_pwhash_argon2id_MEMLIMIT_INTERACTIVE

/* header offsets */
#define H_VERSION  8
#define H_KIND     9
#define H_KDF_ALG  10
#define H_RESERVED 11
#define H_OPSLIMIT 12
#define H_MEMLIMIT 16
#define H_SALT     24
#define H_DIGEST   40
#define H_CHECK    56
#define H_COUNT    72

_Static_assert(crypto_pwhash_argon2id_SALTBYTES == KC_SALT_BYTES, "salt size");
_Static_assert(crypto_kdf_KEYBYTES == KC_KEY_BYTES, "kdf key size");
_Static_assert(crypto_aead_xchacha20poly1305_ietf_KEYBYTES == KC_KEY_BYTES, "aead key size");
_Static_assert(sizeof(KC_KDF_CONTEXT) - 1 == crypto_kdf_CONTEXTBYTES, "kdf context size");
_Static_assert(KC_NONCE_BYTES == 24 && KC_TAG_BYTES == 16, "xchacha20poly1305 sizes");

/* The keys used on the file, derived from the master key (the key file's
 * bytes or the passphrase's Argon2id output), which is wiped at once. */
struct kc_keys {
	unsigned char entry[KC_KEY_BYTES];   /* crypto_kdf id 1: the entries' AEAD */
	unsigned char mac[KC_KEY_BYTES];     /* id 2: the file's tag (keyed BLAKE2b) */
	unsigned char check[KC_CHECK_BYTES]; /* id 3: stored in the header */
};

struct kc {
	char *dir;
	char *path;
	char *key_path;
	char *lock_path;
	struct kc_secret *passphrase;      /* NULL: the key file */
	struct kc_keys *keys;              /* sodium_malloc; NULL until a file needed them */
	unsigned char salt[KC_SALT_BYTES]; /* the salt keys was derived with */
	struct kc_state st;
};

/* ---- secret values ------------------------------------------------------ */

struct kc_secret *kc_secret_new(size_t len)
{
	if (len >= SIZE_MAX - 1 || sodium_init() < 0)
		abort();
	struct kc_secret *s = xmalloc(sizeof(*s));
	s->bytes = sodium_malloc(len + 1);
	if (s->bytes == NULL)
		abort();
	sodium_memzero(s->bytes, len + 1);
	s->len = len;
	return s;
}

void kc_secret_free(struct kc_secret *s)
{
	if (s == NULL)
		return;
	sodium_memzero(s->bytes, s->len);
	sodium_free(s->bytes);
	free(s);
}

bool kc_secret_equal(const struct kc_secret *s, const void *value, size_t len)
{
	return s != NULL && s->len == len && sodium_memcmp(s->bytes, value, len) == 0;
}

/* ---- the state ---------------------------------------------------------- */

static void sealed_clear(struct kc_sealed *s)
{
	free(s->ad);
	free(s->ct);
	kc_secret_free(s->plain);
	memset(s, 0, sizeof(*s));
}

static void info_clear(struct kc_info *info)
{
	free(info->name);
	for (size_t i = 0; i < info->nbindings; i++)
		kc_binding_clear(&info->bindings[i]);
	free(info->bindings);
	memset(info, 0, sizeof(*info));
}

static void state_clear(struct kc_state *st)
{
	for (size_t i = 0; i < st->n; i++) {
		info_clear(&st->info[i]);
		sealed_clear(&st->sealed[i]);
	}
	free(st->info);
	free(st->sealed);
	memset(st, 0, sizeof(*st));
}

/* drop every entry's value (after a change) */
static void state_wipe_plain(struct kc_state *st)
{
	for (size_t i = 0; i < st->n; i++) {
		kc_secret_free(st->sealed[i].plain);
		st->sealed[i].plain = NULL;
	}
}

long kc_state_find(const struct kc_state *st, const char *name)
{
	for (size_t i = 0; i < st->n; i++)
		if (strcmp(st->info[i].name, name) == 0)
			return (long)i;
	return -1;
}

/* a new empty entry for name at its place in name order */
static size_t state_insert(struct kc_state *st, const char *name)
{
	size_t at = 0;
	while (at < st->n && strcmp(st->info[at].name, name) < 0)
		at++;
	st->info = xreallocarray(st->info, st->n + 1, sizeof(*st->info));
	st->sealed = xreallocarray(st->sealed, st->n + 1, sizeof(*st->sealed));
	memmove(st->info + at + 1, st->info + at, (st->n - at) * sizeof(*st->info));
	memmove(st->sealed + at + 1, st->sealed + at, (st->n - at) * sizeof(*st->sealed));
	memset(&st->info[at], 0, sizeof(st->info[at]));
	memset(&st->sealed[at], 0, sizeof(st->sealed[at]));
	st->info[at].name = xstrdup(name);
	st->n++;
	return at;
}

static void state_remove(struct kc_state *st, size_t at)
{
	info_clear(&st->info[at]);
	sealed_clear(&st->sealed[at]);
	memmove(st->info + at, st->info + at + 1, (st->n - at - 1) * sizeof(*st->info));
	memmove(st->sealed + at, st->sealed + at + 1, (st->n - at - 1) * sizeof(*st->sealed));
	st->n--;
}

/* ---- bytes -------------------------------------------------------------- */

static void put_le(unsigned char *p, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, size_t n)
{
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* A cursor over bytes that moves only on success. */
struct rd {
	const unsigned char *p;
	size_t left;
};

static bool rd_bytes(struct rd *r, size_t n, const unsigned char **out)
{
	if (r->left < n)
		return false;
	*out = r->p;
	r->p += n;
	r->left -= n;
	return true;
}

static bool rd_uint(struct rd *r, size_t n, uint64_t *out)
{
	const unsigned char *p;
	if (!rd_bytes(r, n, &p))
		return false;
	*out = get_le(p, n);
	return true;
}

static int buf_uint(struct mg_buf *b, uint64_t v, size_t n, struct mg_err **err)
{
	unsigned char p[8];
	put_le(p, v, n);
	return mg_buf_append(b, p, n, err);
}

/* ---- files -------------------------------------------------------------- */

static int write_all(int fd, const void *data, size_t len)
{
	const unsigned char *p = data;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Read a whole regular file of at most max bytes (name relative to dfd, path
 * for messages). Returns 0, 1 when it does not exist, -1 on error. */
static int read_file_at(int dfd, const char *name, const char *path, size_t max,
                        unsigned char **out, size_t *len, struct mg_err **err)
{
	cleanup_close int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		if (errno == ENOENT)
			return 1;
		return mg_err_sys(err, errno, "opening %s", path);
	}
	struct stat st;
	if (fstat(fd, &st) < 0)
		return mg_err_sys(err, errno, "reading %s", path);
	if (!S_ISREG(st.st_mode))
		return mg_err_set(err, "%s: not a regular file", path);
	if ((uint64_t)st.st_size > max)
		return mg_err_set(err, "%s: %lld bytes, more than the %zu a keychain may hold",
		                  path, (long long)st.st_size, max);
	size_t cap = (size_t)st.st_size + 1, n = 0;
	cleanup_free unsigned char *data = xmalloc(cap);
	for (;;) {
		ssize_t r = read(fd, data + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return mg_err_sys(err, errno, "reading %s", path);
		if (r == 0)
			break;
		n += (size_t)r;
		if (n == cap)
			return mg_err_set(err, "%s: changed while being read", path);
	}
	*out = steal_pointer(&data);
	*len = n;
	return 0;
}

/* Write DIR/name whole or not at all: a temporary file beside it (0600),
 * fsync, then rename over it (replace) or link it to a name that must not
 * exist yet (!replace), then fsync the folder. The caller holds the lock,
 * so the temporary name is its own. */
static int write_file_atomic(int dfd, const char *dir, const char *name, const void *data,
                             size_t len, bool replace, struct mg_err **err)
{
	cleanup_free char *path = xasprintf("%s/%s", dir, name);
	cleanup_free char *tmp = xasprintf(".%s.tmp", name);
	if (unlinkat(dfd, tmp, 0) < 0 && errno != ENOENT)
		return mg_err_sys(err, errno, "removing %s/%s", dir, tmp);
	int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return mg_err_sys(err, errno, "creating %s/%s", dir, tmp);
	if (fchmod(fd, 0600) < 0 || write_all(fd, data, len) < 0 || fsync(fd) < 0) {
		int e = errno;
		close(fd);
		unlinkat(dfd, tmp, 0);
		return mg_err_sys(err, e, "writing %s/%s", dir, tmp);
	}
	if (close(fd) < 0) {
		int e = errno;
		unlinkat(dfd, tmp, 0);
		return mg_err_sys(err, e, "writing %s/%s", dir, tmp);
	}
	if (replace) {
		if (renameat(dfd, tmp, dfd, name) < 0) {
			int e = errno;
			unlinkat(dfd, tmp, 0);
			return mg_err_sys(err, e, "replacing %s", path);
		}
	} else {
		int r = linkat(dfd, tmp, dfd, name, 0);
		int e = errno;
		unlinkat(dfd, tmp, 0);
		if (r < 0)
			return mg_err_sys(err, e, "creating %s", path);
	}
	if (fsync(dfd) < 0)
		return mg_err_sys(err, errno, "syncing the folder %s", dir);
	return 0;
}

static int mkdir_private(const char *path, struct mg_err **err)
{
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return mg_err_sys(err, errno, "creating %s", path);
	return 0;
}

/* The data folder, made (0700, with its parents) when missing and closed to
 * others (0700) when it was not; it must be the caller's own. */
static int open_dir(const struct kc *kc, struct mg_err **err)
{
	cleanup_free char *p = xstrdup(kc->dir);
	for (char *s = p + 1; *s != '\0'; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir_private(p, err) < 0)
			return -1;
		*s = '/';
	}
	if (mkdir_private(p, err) < 0)
		return -1;
	cleanup_close int dfd = open(kc->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return mg_err_sys(err, errno, "opening %s", kc->dir);
	struct stat st;
	if (fstat(dfd, &st) < 0)
		return mg_err_sys(err, errno, "reading %s", kc->dir);
	if (st.st_uid != geteuid())
		return mg_err_set(err,
		                  "%s belongs to user %u, not to you (%u): it cannot hold your "
		                  "keychain",
		                  kc->dir, (unsigned)st.st_uid, (unsigned)geteuid());
	if ((st.st_mode & 077) != 0 && fchmod(dfd, 0700) < 0)
		return mg_err_sys(err, errno, "closing %s to others (chmod 700)", kc->dir);
	return steal_fd(&dfd);
}

/* keychain.lock, held (flock) until the returned fd is closed; waits at most
 * KC_LOCK_TIMEOUT seconds. */
static int lock_take(const struct kc *kc, int dfd, struct mg_err **err)
{
	cleanup_close int fd =
	    openat(dfd, KC_LOCK_NAME, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return mg_err_sys(err, errno, "opening %s", kc->lock_path);
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return steal_fd(&fd);
		if (errno == EINTR)
			continue;
		if (errno != EWOULDBLOCK)
			return mg_err_sys(err, errno, "locking %s", kc->lock_path);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec >= KC_LOCK_TIMEOUT)
			return mg_err_set(
			    err,
			    "%s: another mcpgate has held it for %d seconds; try again "
			    "when it is done",
			    kc->lock_path, KC_LOCK_TIMEOUT);
		struct timespec pause = {0, 5 * 1000 * 1000};
		nanosleep(&pause, NULL);
	}
}

/* ---- keys --------------------------------------------------------------- */

static struct kc_keys *keys_from_master(const unsigned char *master)
{
	struct kc_keys *k = sodium_malloc(sizeof(*k));
	if (k == NULL)
		abort();
	crypto_kdf_derive_from_key(k->entry, sizeof(k->entry), 1, KC_KDF_CONTEXT, master);
	crypto_kdf_derive_from_key(k->mac, sizeof(k->mac), 2, KC_KDF_CONTEXT, master);
	crypto_kdf_derive_from_key(k->check, sizeof(k->check), 3, KC_KDF_CONTEXT, master);
	return k;
}

static void keys_set(struct kc *kc, struct kc_keys *k)
{
	if (kc->keys != NULL)
		sodium_free(kc->keys);
	kc->keys = k;
}

/* The key file's 32 bytes into master. Returns 0, 1 when there is no key
 * file, -1 on error. */
static int key_file_read(const struct kc *kc, unsigned char *master, struct mg_err **err)
{
	cleanup_close int fd = open(kc->key_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		if (errno == ENOENT)
			return 1;
		return mg_err_sys(err, errno, "opening %s", kc->key_path);
	}
	struct stat st;
	if (fstat(fd, &st) < 0)
		return mg_err_sys(err, errno, "reading %s", kc->key_path);
	if (!S_ISREG(st.st_mode))
		return mg_err_set(err, "%s: not a regular file", kc->key_path);
	if ((st.st_mode & 077) != 0)
		return mg_err_set(err, "%s: other users may read it (mode %04o): chmod 600 %s",
		                  kc->key_path, (unsigned)(st.st_mode & 07777), kc->key_path);
	if (st.st_size != KC_KEY_BYTES)
		return mg_err_set(err, "%s: %lld bytes, but a keychain key is exactly %d",
		                  kc->key_path, (long long)st.st_size, KC_KEY_BYTES);
	size_t n = 0;
	while (n < KC_KEY_BYTES) {
		ssize_t r = read(fd, master + n, KC_KEY_BYTES - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return mg_err_sys(err, errno, "reading %s", kc->key_path);
		if (r == 0)
			return mg_err_set(err, "%s: shorter than %d bytes", kc->key_path,
			                  KC_KEY_BYTES);
		n += (size_t)r;
	}
	return 0;
}

/* kc->keys from the key file, made (under the lock, dfd >= 0) when create
 * and it is missing. */
static int keys_from_key_file(struct kc *kc, int dfd, bool create, struct mg_err **err)
{
	unsigned char *master = sodium_malloc(KC_KEY_BYTES);
	if (master == NULL)
		abort();
	int r = key_file_read(kc, master, err);
	if (r == 1 && create) {
		randombytes_buf(master, KC_KEY_BYTES);
		r = write_file_atomic(dfd, kc->dir, KC_KEY_FILE_NAME, master, KC_KEY_BYTES, false,
		                      err);
	} else if (r == 1) {
		r = mg_err_set(err,
		               "%s was written with the key file %s, which is missing: without it "
		               "the secrets cannot be read",
		               kc->path, kc->key_path);
	}
	if (r == 0)
		keys_set(kc, keys_from_master(master));
	sodium_free(master);
	return r;
}

/* kc->keys from the passphrase and salt (Argon2id); kept while the salt is
 * the same. */
static int keys_from_passphrase(struct kc *kc, const unsigned char *salt, struct mg_err **err)
{
	if (kc->keys != NULL && memcmp(kc->salt, salt, KC_SALT_BYTES) == 0)
		return 0;
	unsigned char *master = sodium_malloc(KC_KEY_BYTES);
	if (master == NULL)
		abort();
	if (crypto_pwhash(master, KC_KEY_BYTES, (const char *)kc->passphrase->bytes,
	                  kc->passphrase->len, salt, KC_OPSLIMIT, KC_MEMLIMIT, KC_KDF_ALG) != 0) {
		sodium_free(master);
		return mg_err_set(err,
		                  "deriving the key from the passphrase: out of memory (%u MiB "
		                  "needed)",
		                  (unsigned)(KC_MEMLIMIT >> 20));
	}
	keys_set(kc, keys_from_master(master));
	sodium_free(master);
	memcpy(kc->salt, salt, KC_SALT_BYTES);
	return 0;
}

static int read_passphrase(const char *fd_text, struct kc_secret **out, struct mg_err **err)
{
	int64_t v;
	if (mg_parse_i64(fd_text, 0, INT_MAX, KC_PASSPHRASE_FD, &v, err) < 0)
		return -1;
	int fd = (int)v;
	if (fcntl(fd, F_GETFD) < 0)
		return mg_err_sys(err, errno, "%s=%d: no such open descriptor", KC_PASSPHRASE_FD,
		                  fd);
	/* room for the longest passphrase, its newline, and one byte to see more */
	size_t cap = KC_PASSPHRASE_MAX + 2, n = 0;
	struct kc_secret *p = kc_secret_new(cap);
	int rc = 0;
	while (n < cap) {
		ssize_t r = read(fd, p->bytes + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = mg_err_sys(err, errno, "reading the passphrase from %s=%d",
			                KC_PASSPHRASE_FD, fd);
			break;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (fd > 2)
		close(fd);
	if (rc == 0 && n > 0 && p->bytes[n - 1] == '\n')
		n--;
	if (rc == 0 && n > KC_PASSPHRASE_MAX)
		rc = mg_err_set(err, "the passphrase from %s=%d is longer than %d bytes",
		                KC_PASSPHRASE_FD, fd, KC_PASSPHRASE_MAX);
	if (rc == 0 && n == 0)
		rc = mg_err_set(err, "the passphrase from %s=%d is empty", KC_PASSPHRASE_FD, fd);
	if (rc < 0) {
		kc_secret_free(p);
		return -1;
	}
	sodium_memzero(p->bytes + n, p->len + 1 - n);
	p->len = n;
	*out = p;
	return 0;
}

/* ---- the file's digest and tag ------------------------------------------ */

/* BLAKE2b-128 of the header's first 40 bytes (no key): damage to the key
 * settings shows as such, before a key is derived from them. */
static void header_digest(const unsigned char *d, unsigned char *out)
{
	crypto_generichash(out, KC_DIGEST_BYTES, d, H_DIGEST, NULL, 0);
}

/* The tag: keyed BLAKE2b-256 of d[0..body) without the key check, so that a
 * damaged check shows as damage, not as a wrong key. */
static void file_tag(const struct kc_keys *keys, const unsigned char *d, size_t body,
                     unsigned char *out)
{
	crypto_generichash_state st;
	crypto_generichash_init(&st, keys->mac, sizeof(keys->mac), KC_MAC_BYTES);
	crypto_generichash_update(&st, d, H_CHECK);
	crypto_generichash_update(&st, d + H_COUNT, body - H_COUNT);
	crypto_generichash_final(&st, out, KC_MAC_BYTES);
	sodium_memzero(&st, sizeof(st));
}

/* ---- reading the file --------------------------------------------------- */

static int why_set(char **why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* the reason a structure check failed, kept for the message; returns -1 */
static int why_set(char **why, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *text = xvasprintf(fmt, ap);
	va_end(ap);
	free(*why);
	*why = text;
	return -1;
}

/* One binding as the file holds it; checked as `mcpgate secret bind`
 * checks it. */
static int parse_binding(struct rd *r, struct kc_binding *b, char **why, bool *short_read)
{
	uint64_t kind, plen, hlen, port;
	const unsigned char *pname, *host;
	if (!rd_uint(r, 1, &kind) || !rd_uint(r, 1, &plen) || !rd_bytes(r, plen, &pname) ||
	    !rd_uint(r, 1, &hlen) || !rd_bytes(r, hlen, &host) || !rd_uint(r, 2, &port)) {
		*short_read = true;
		return -1;
	}
	if (kind != KC_POS_ENV && kind != KC_POS_HEADER)
		return why_set(why, "a binding's position kind is %u", (unsigned)kind);
	b->position = kind == KC_POS_ENV ? CFG_POSITION_ENV : CFG_POSITION_HEADER;
	b->position_name = xstrndup((const char *)pname, plen);
	b->host = xstrndup((const char *)host, hlen);
	b->port = (unsigned)port;
	if (strlen(b->position_name) != plen || strlen(b->host) != hlen)
		return why_set(why, "a binding holds a NUL byte");
	cleanup_err struct mg_err *e = NULL;
	cleanup_free char *ptext = kc_position_text(b->position, b->position_name);
	enum cfg_position pos;
	cleanup_free char *pn = NULL;
	if (cfg_parse_position(ptext, "position", &pos, &pn, &e) < 0)
		return why_set(why, "%s", mg_err_msg(e));
	struct cfg_host h = {0};
	if (cfg_parse_host(b->host, "host", &h, &e) < 0)
		return why_set(why, "%s", mg_err_msg(e));
	bool same = strcmp(h.host, b->host) == 0 && h.port == 0;
	free(h.host);
	if (!same)
		return why_set(why, "a binding's host is not in its normal form");
	return 0;
}

/* one entry ends before its bytes do: the file was cut (or its count altered) */
static int short_entry(char **why, bool *short_read, uint32_t count, uint32_t i)
{
	*short_read = true;
	return why_set(why, "its header lists %u entries, but the file ends inside entry %u", count,
	               i + 1);
}

/* Entry i of count, appended to st. Returns 0; -1 with *why when a length
 * runs past the end (*short_read) or a value is malformed. */
static int parse_entry(struct rd *r, uint32_t i, uint32_t count, struct kc_state *st, char **why,
                       bool *short_read)
{
	const unsigned char *start = r->p, *name, *nonce, *ct;
	uint64_t nlen, nb, ctlen;
	if (!rd_uint(r, 1, &nlen) || !rd_bytes(r, nlen, &name) || !rd_uint(r, 2, &nb))
		return short_entry(why, short_read, count, i);
	cleanup_free char *n = xstrndup((const char *)name, nlen);
	cleanup_err struct mg_err *e = NULL;
	if (strlen(n) != nlen || cfg_check_credential_name(n, "a secret's name", &e) < 0)
		return why_set(why, "entry %u: %s", i + 1,
		               e != NULL ? mg_err_msg(e) : "its name holds a NUL byte");
	if (st->n > 0 && strcmp(st->info[st->n - 1].name, n) >= 0)
		return why_set(why, "entry %u (%s) is out of order or repeated", i + 1, n);
	if (nb > KC_BINDINGS_MAX)
		return why_set(why, "entry %u (%s) has %u bindings, more than %d", i + 1, n,
		               (unsigned)nb, KC_BINDINGS_MAX);
	size_t at = state_insert(st, n);
	struct kc_info *info = &st->info[at];
	struct kc_sealed *s = &st->sealed[at];
	info->bindings = xcalloc(nb > 0 ? nb : 1, sizeof(*info->bindings));
	for (uint64_t b = 0; b < nb; b++) {
		info->nbindings++;
		if (parse_binding(r, &info->bindings[b], why, short_read) < 0) {
			if (*short_read)
				return short_entry(why, short_read, count, i);
			return why_set(why, "entry %u (%s): %s", i + 1, n, *why);
		}
	}
	s->ad_len = (size_t)(r->p - start);
	s->ad = xmemdup(start, s->ad_len);
	if (!rd_bytes(r, KC_NONCE_BYTES, &nonce) || !rd_uint(r, 4, &ctlen))
		return short_entry(why, short_read, count, i);
	if (ctlen <= KC_TAG_BYTES || ctlen > KC_SECRET_MAX + KC_TAG_BYTES)
		return why_set(why, "entry %u (%s): its sealed value's length %llu is out of range",
		               i + 1, n, (unsigned long long)ctlen);
	if (!rd_bytes(r, ctlen, &ct))
		return short_entry(why, short_read, count, i);
	memcpy(s->nonce, nonce, KC_NONCE_BYTES);
	s->ct_len = ctlen;
	s->ct = xmemdup(ct, ctlen);
	return 0;
}

/* The entries of a file whose header said count, into st. */
static int parse_entries(struct rd *r, uint32_t count, struct kc_state *st, char **why,
                         bool *short_read)
{
	*short_read = false;
	for (uint32_t i = 0; i < count; i++)
		if (parse_entry(r, i, count, st, why, short_read) < 0)
			return -1;
	if (r->left > 0)
		return why_set(why, "%zu bytes follow its last entry", r->left);
	return 0;
}

static int open_sealed(const struct kc *kc, const struct kc_sealed *s, struct kc_secret **out)
{
	struct kc_secret *v = kc_secret_new(s->ct_len - KC_TAG_BYTES);
	unsigned long long len;
	if (crypto_aead_xchacha20poly1305_ietf_decrypt(v->bytes, &len, NULL, s->ct, s->ct_len,
	                                               s->ad, s->ad_len, s->nonce,
	                                               kc->keys->entry) != 0) {
		kc_secret_free(v);
		return -1;
	}
	*out = v;
	return 0;
}

/* Check and read a keychain file into *out; with keep_plain, each entry
 * keeps its value. Sets kc->keys for the file. */
static int parse_file(struct kc *kc, const unsigned char *d, size_t len, bool keep_plain,
                      struct kc_state *out, struct mg_err **err)
{
	const char *path = kc->path;
	if (len < KC_MAGIC_BYTES || memcmp(d, KC_MAGIC, KC_MAGIC_BYTES) != 0) {
		if (len < KC_MAGIC_BYTES && memcmp(d, KC_MAGIC, len) == 0)
			return mg_err_set(err, "%s is truncated: %zu bytes, less than its header",
			                  path, len);
		return mg_err_set(err,
		                  "%s is not an mcpgate keychain (its first bytes are not "
		                  "\"" KC_MAGIC "\")",
		                  path);
	}
	if (len < KC_HEADER_BYTES + KC_MAC_BYTES)
		return mg_err_set(err,
		                  "%s is truncated: %zu bytes, less than its header and tag (%d)",
		                  path, len, KC_HEADER_BYTES + KC_MAC_BYTES);
	if (d[H_VERSION] != KC_VERSION)
		return mg_err_set(err, "%s has format version %u; this mcpgate reads version %d",
		                  path, d[H_VERSION], KC_VERSION);
	unsigned char digest[KC_DIGEST_BYTES];
	header_digest(d, digest);
	if (memcmp(digest, d + H_DIGEST, KC_DIGEST_BYTES) != 0)
		return mg_err_set(
		    err,
		    "%s has been altered or damaged: its header's digest does not match "
		    "its key settings",
		    path);
	unsigned kind = d[H_KIND];
	uint64_t ops = get_le(d + H_OPSLIMIT, 4), mem = get_le(d + H_MEMLIMIT, 8);
	static const unsigned char zero_salt[KC_SALT_BYTES];
	if (kind == KC_KIND_KEY_FILE) {
		if (d[H_KDF_ALG] != 0 || d[H_RESERVED] != 0 || ops != 0 || mem != 0 ||
		    memcmp(d + H_SALT, zero_salt, KC_SALT_BYTES) != 0)
			return mg_err_set(err,
			                  "%s has been altered or damaged: its header holds key "
			                  "derivation settings, but it says it uses a key file",
			                  path);
		if (kc->passphrase != NULL)
			return mg_err_set(
			    err,
			    "%s was made with the key file %s, not a passphrase: unset "
			    "%s to use it",
			    path, kc->key_path, KC_PASSPHRASE_FD);
		if (keys_from_key_file(kc, -1, false, err) < 0)
			return -1;
	} else if (kind == KC_KIND_PASSPHRASE) {
		if (d[H_KDF_ALG] != KC_KDF_ALG || d[H_RESERVED] != 0 || ops != KC_OPSLIMIT ||
		    mem != KC_MEMLIMIT)
			return mg_err_set(err,
			                  "%s has been altered or damaged: its key derivation "
			                  "settings are not Argon2id with ops %u, memory %u",
			                  path, (unsigned)KC_OPSLIMIT, (unsigned)KC_MEMLIMIT);
		if (kc->passphrase == NULL)
			return mg_err_set(
			    err,
			    "%s was made with a passphrase: set %s to a descriptor that "
			    "holds it",
			    path, KC_PASSPHRASE_FD);
		if (keys_from_passphrase(kc, d + H_SALT, err) < 0)
			return -1;
	} else {
		return mg_err_set(err,
		                  "%s has been altered or damaged: its key kind is %u (1 a key "
		                  "file, 2 a passphrase)",
		                  path, kind);
	}

	size_t body = len - KC_MAC_BYTES;
	unsigned char mac[KC_MAC_BYTES];
	file_tag(kc->keys, d, body, mac);
	bool mac_ok = sodium_memcmp(mac, d + body, KC_MAC_BYTES) == 0;
	bool check_ok = sodium_memcmp(kc->keys->check, d + H_CHECK, KC_CHECK_BYTES) == 0;
	if (!check_ok && !mac_ok) {
		if (kc->passphrase != NULL)
			return mg_err_set(
			    err, "%s: wrong passphrase: it was written with another one", path);
		return mg_err_set(err, "%s: wrong key: it was written with another key than %s",
		                  path, kc->key_path);
	}

	struct kc_state st = {0};
	struct rd r = {d + KC_HEADER_BYTES, body - KC_HEADER_BYTES};
	uint32_t count = (uint32_t)get_le(d + H_COUNT, 4);
	cleanup_free char *why = NULL;
	bool short_read = false;
	int parsed =
	    count > KC_ENTRIES_MAX
	        ? why_set(&why, "its header lists %u entries, more than %d", count, KC_ENTRIES_MAX)
	        : parse_entries(&r, count, &st, &why, &short_read);
	if (!mac_ok || !check_ok || parsed < 0) {
		state_clear(&st);
		if (!mac_ok && short_read)
			return mg_err_set(err, "%s is truncated: %s", path, why);
		if (!mac_ok)
			return mg_err_set(err,
			                  "%s has been altered or damaged: its authentication tag "
			                  "does not match its bytes",
			                  path);
		if (!check_ok)
			return mg_err_set(err,
			                  "%s has been altered or damaged: its key check does not "
			                  "match the key, though its tag does",
			                  path);
		return mg_err_set(err, "%s is damaged: %s", path, why);
	}
	for (size_t i = 0; i < st.n; i++) {
		struct kc_secret *v = NULL;
		if (open_sealed(kc, &st.sealed[i], &v) < 0) {
			mg_err_set(err,
			           "%s has been altered or damaged: entry %s does not authenticate",
			           path, st.info[i].name);
			state_clear(&st);
			return -1;
		}
		if (keep_plain)
			st.sealed[i].plain = v;
		else
			kc_secret_free(v);
	}
	*out = st;
	return 0;
}

/* ---- writing the file --------------------------------------------------- */

/* The entry's bytes before its nonce: they are its AEAD associated data. */
static int entry_ad(const struct kc_info *info, struct mg_buf *b, struct mg_err **err)
{
	size_t nlen = strlen(info->name);
	if (nlen == 0 || nlen > CFG_CREDENTIAL_MAX || info->nbindings > KC_BINDINGS_MAX)
		return mg_err_set(err, "secret %s cannot be written", info->name);
	if (buf_uint(b, nlen, 1, err) < 0 || mg_buf_append(b, info->name, nlen, err) < 0 ||
	    buf_uint(b, info->nbindings, 2, err) < 0)
		return -1;
	for (size_t i = 0; i < info->nbindings; i++) {
		const struct kc_binding *bd = &info->bindings[i];
		size_t plen = strlen(bd->position_name), hlen = strlen(bd->host);
		if ((bd->position != CFG_POSITION_ENV && bd->position != CFG_POSITION_HEADER) ||
		    plen == 0 || plen > 255 || hlen == 0 || hlen > 255 || bd->port > 65535)
			return mg_err_set(err, "a binding of %s cannot be written", info->name);
		unsigned kind = bd->position == CFG_POSITION_HEADER ? KC_POS_HEADER : KC_POS_ENV;
		if (buf_uint(b, kind, 1, err) < 0 || buf_uint(b, plen, 1, err) < 0 ||
		    mg_buf_append(b, bd->position_name, plen, err) < 0 ||
		    buf_uint(b, hlen, 1, err) < 0 || mg_buf_append(b, bd->host, hlen, err) < 0 ||
		    buf_uint(b, bd->port, 2, err) < 0)
			return -1;
	}
	return 0;
}

/* The whole file for st (every entry holding its value), each entry sealed
 * again with a fresh nonce; st's sealed parts become what was written. */
static int serialize(const struct kc *kc, struct kc_state *st, struct mg_buf *out,
                     struct mg_err **err)
{
	unsigned char h[KC_HEADER_BYTES] = {0};
	memcpy(h, KC_MAGIC, KC_MAGIC_BYTES);
	h[H_VERSION] = KC_VERSION;
	if (kc->passphrase != NULL) {
		h[H_KIND] = KC_KIND_PASSPHRASE;
		h[H_KDF_ALG] = KC_KDF_ALG;
		put_le(h + H_OPSLIMIT, KC_OPSLIMIT, 4);
		put_le(h + H_MEMLIMIT, KC_MEMLIMIT, 8);
		memcpy(h + H_SALT, kc->salt, KC_SALT_BYTES);
	} else {
		h[H_KIND] = KC_KIND_KEY_FILE;
	}
	header_digest(h, h + H_DIGEST);
	memcpy(h + H_CHECK, kc->keys->check, KC_CHECK_BYTES);
	put_le(h + H_COUNT, st->n, 4);
	if (mg_buf_append(out, h, sizeof(h), err) < 0)
		goto too_big;
	for (size_t i = 0; i < st->n; i++) {
		struct kc_sealed *s = &st->sealed[i];
		struct mg_buf ad = MG_BUF_INIT(1u << 20);
		if (entry_ad(&st->info[i], &ad, err) < 0) {
			mg_buf_free(&ad);
			return -1;
		}
		free(s->ad);
		s->ad = (unsigned char *)mg_buf_steal(&ad, &s->ad_len);
		randombytes_buf(s->nonce, sizeof(s->nonce));
		free(s->ct);
		s->ct_len = s->plain->len + KC_TAG_BYTES;
		s->ct = xmalloc(s->ct_len);
		unsigned long long clen;
		crypto_aead_xchacha20poly1305_ietf_encrypt(s->ct, &clen, s->plain->bytes,
		                                           s->plain->len, s->ad, s->ad_len, NULL,
		                                           s->nonce, kc->keys->entry);
		if (mg_buf_append(out, s->ad, s->ad_len, err) < 0 ||
		    mg_buf_append(out, s->nonce, sizeof(s->nonce), err) < 0 ||
		    buf_uint(out, s->ct_len, 4, err) < 0 ||
		    mg_buf_append(out, s->ct, s->ct_len, err) < 0)
			goto too_big;
	}
	unsigned char mac[KC_MAC_BYTES];
	file_tag(kc->keys, (const unsigned char *)out->data, out->len, mac);
	if (mg_buf_append(out, mac, sizeof(mac), err) < 0)
		goto too_big;
	return 0;
too_big:
	return mg_err_wrap(err, "%s would be too large", kc->path);
}

int kc_change(struct kc *kc, kc_apply_fn apply, void *data, struct mg_err **err)
{
	cleanup_close int dfd = open_dir(kc, err);
	if (dfd < 0)
		return -1;
	cleanup_close int lock = lock_take(kc, dfd, err);
	if (lock < 0)
		return -1;
	cleanup_free unsigned char *raw = NULL;
	size_t len = 0;
	int r = read_file_at(dfd, KC_FILE_NAME, kc->path, KC_FILE_MAX, &raw, &len, err);
	if (r < 0)
		return -1;
	struct kc_state st = {0};
	if (r == 0 && parse_file(kc, raw, len, true, &st, err) < 0)
		return -1;
	int applied = apply(&st, data, err);
	if (applied > 0 && r == 1) {
		/* no file yet: a fresh salt, or the key file (made now if missing) */
		if (kc->passphrase != NULL) {
			unsigned char salt[KC_SALT_BYTES];
			randombytes_buf(salt, sizeof(salt));
			if (keys_from_passphrase(kc, salt, err) < 0)
				applied = -1;
		} else if (keys_from_key_file(kc, dfd, true, err) < 0) {
			applied = -1;
		}
	}
	if (applied > 0) {
		struct mg_buf out = MG_BUF_INIT(KC_FILE_MAX);
		if (serialize(kc, &st, &out, err) < 0 ||
		    write_file_atomic(dfd, kc->dir, KC_FILE_NAME, out.data, out.len, true, err) < 0)
			applied = -1;
		mg_buf_free(&out);
	}
	state_wipe_plain(&st);
	if (applied < 0) {
		state_clear(&st);
		return -1;
	}
	state_clear(&kc->st);
	kc->st = st;
	return applied;
}

/* ---- the API ------------------------------------------------------------ */

int kc_open(const char *data_dir, struct kc **out, struct mg_err **err)
{
	if (sodium_init() < 0)
		return mg_err_set(err, "libsodium cannot start");
	cleanup_free unsigned char *raw = NULL;
	size_t len = 0;
	struct kc *kc = xcalloc(1, sizeof(*kc));
	kc->dir = xstrdup(data_dir);
	kc->path = xasprintf("%s/%s", data_dir, KC_FILE_NAME);
	kc->key_path = xasprintf("%s/%s", data_dir, KC_KEY_FILE_NAME);
	kc->lock_path = xasprintf("%s/%s", data_dir, KC_LOCK_NAME);
	const char *fd_text = getenv(KC_PASSPHRASE_FD);
	if (fd_text != NULL && fd_text[0] != '\0' &&
	    read_passphrase(fd_text, &kc->passphrase, err) < 0) {
		mg_err_wrap(err, "%s", kc->path);
		goto fail;
	}
	int r = read_file_at(AT_FDCWD, kc->path, kc->path, KC_FILE_MAX, &raw, &len, err);
	if (r < 0 || (r == 0 && parse_file(kc, raw, len, false, &kc->st, err) < 0))
		goto fail;
	*out = kc;
	return 0;
fail:
	kc_free(kc);
	return -1;
}

void kc_free(struct kc *kc)
{
	if (kc == NULL)
		return;
	state_clear(&kc->st);
	kc_secret_free(kc->passphrase);
	keys_set(kc, NULL);
	free(kc->dir);
	free(kc->path);
	free(kc->key_path);
	free(kc->lock_path);
	free(kc);
}

const char *kc_path(const struct kc *kc)
{
	return kc->path;
}

const char *kc_key_path(const struct kc *kc)
{
	return kc->key_path;
}

bool kc_uses_passphrase(const struct kc *kc)
{
	return kc->passphrase != NULL;
}

struct set_args {
	const char *name;
	const void *value;
	size_t len;
	bool replaced;
};

static int apply_set(struct kc_state *st, void *data, struct mg_err **err)
{
	struct set_args *a = data;
	long i = kc_state_find(st, a->name);
	if (i < 0) {
		if (st->n >= KC_ENTRIES_MAX)
			return mg_err_set(err, "the keychain holds %d secrets, its most",
			                  KC_ENTRIES_MAX);
		i = (long)state_insert(st, a->name);
	}
	struct kc_sealed *s = &st->sealed[i];
	a->replaced = s->plain != NULL;
	kc_secret_free(s->plain);
	s->plain = kc_secret_new(a->len);
	memcpy(s->plain->bytes, a->value, a->len);
	return 1;
}

int kc_set(struct kc *kc, const char *name, const void *value, size_t len, struct mg_err **err)
{
	if (cfg_check_credential_name(name, "secret name", err) < 0)
		return -1;
	if (len == 0)
		return mg_err_set(err, "secret %s: the value is empty", name);
	if (len > KC_SECRET_MAX)
		return mg_err_set(err, "secret %s: the value is %zu bytes, more than %u", name, len,
		                  KC_SECRET_MAX);
	struct set_args a = {name, value, len, false};
	if (kc_change(kc, apply_set, &a, err) < 0)
		return mg_err_wrap(err, "storing %s", name);
	return a.replaced ? 1 : 0;
}

static int apply_remove(struct kc_state *st, void *data, struct mg_err **err)
{
	const char *name = data;
	long i = kc_state_find(st, name);
	if (i < 0)
		return mg_err_set(err, "there is no secret %s", name);
	state_remove(st, (size_t)i);
	return 1;
}

int kc_remove(struct kc *kc, const char *name, struct mg_err **err)
{
	if (cfg_check_credential_name(name, "secret name", err) < 0)
		return -1;
	if (kc_change(kc, apply_remove, (void *)name, err) < 0)
		return mg_err_wrap(err, "removing %s", name);
	return 0;
}

int kc_get(const struct kc *kc, const char *name, struct kc_secret **out, struct mg_err **err)
{
	long i = kc_state_find(&kc->st, name);
	if (i < 0)
		return mg_err_set(err, "there is no secret %s in %s", name, kc->path);
	if (open_sealed(kc, &kc->st.sealed[i], out) < 0)
		return mg_err_set(err, "%s: secret %s does not authenticate", kc->path, name);
	return 0;
}

const struct kc_info *kc_list(const struct kc *kc, size_t *n)
{
	*n = kc->st.n;
	return kc->st.info;
}

const struct kc_info *kc_find(const struct kc *kc, const char *name)
{
	long i = kc_state_find(&kc->st, name);
	return i < 0 ? NULL : &kc->st.info[i];
}

int kc_each_secret(const struct kc *kc, kc_each_fn cb, void *data, struct mg_err **err)
{
	for (size_t i = 0; i < kc->st.n; i++) {
		struct kc_secret *v = NULL;
		if (kc_get(kc, kc->st.info[i].name, &v, err) < 0)
			return -1;
		int r = cb(kc->st.info[i].name, v, data, err);
		kc_secret_free(v);
		if (r < 0)
			return r;
	}
	return 0;
}
