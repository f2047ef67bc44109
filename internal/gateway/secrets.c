/* Credentials in a session (docs/credentials.md): the binding rule at start
 * and before every call, delivery as an environment variable through the
 * runtime, and the scanner that refuses a secret in what leaves for a server
 * it is not bound for and redacts it from everything that comes back.
 *
 * Every form of every stored value, and the prefix tables that find them,
 * live in sodium_malloc memory for the session and are wiped at its end.
 *
 * How the scanner works (docs/credentials.md, "What the scanner catches"):
 * each value is kept in several encoded forms, each form once as it is and
 * once with its separators removed. A message is scanned as one text, the
 * join of all its strings and numbers in order (member names each on their
 * own), and as a copy of that join with its separators removed. Every form
 * is looked up by its first SCAN_WINDOW bytes, case-folded, at every
 * position: one pass over each text, whatever the number of forms. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sodium.h>

#include "internal/base/cleanup.h"
#include "internal/base/log.h"
#include "internal/base/xalloc.h"
#include "internal/gateway/gateway-internal.h"

/* Thresholds, by the length of the value (docs/credentials.md): shorter
 * values are not looked for in that form, as it would match ordinary text */
#define SECRET_SCAN_MIN 4  /* the value, hex, percent, json, base64 as it ends */
#define SHIFT_B64_MIN   6  /* base64 at every alignment: middles of 7+ characters */
#define REVERSED_MIN    8  /* the value reversed */
#define FOLD_MIN        10 /* the value (and reversed, percent) in any letter case */
/* By the length of the form: with separators removed (of the form and of the
 * text), and found across two strings of one message */
#define STRIP_MIN 12
#define JOIN_MIN  12

#define SCAN_WINDOW  4 /* every form is found by its first 4 bytes */
#define FILTER_BITS  16
#define FILTER_BYTES ((size_t)1 << (FILTER_BITS - 3))
/* What one scan of a message keeps (past it, each string holding one of them
 * is replaced whole), how many cuts one round makes at most, and how many
 * rounds of scan and cut a message gets before all of it is replaced */
#define HITS_MAX      65536
#define ACTIONS_MAX   ((size_t)1 << 18)
#define REDACT_ROUNDS 3

#define FORM_FOLD     1u /* matched without regard to ASCII case; stored lower-case */
#define FORM_STRIPPED 2u /* matched in the text with its separators removed */

/* One encoded form of one secret */
struct secret_form {
	const unsigned char *bytes; /* in its secret's arena (sodium_malloc) */
	size_t len;
	size_t off;      /* while it is built: where in the scratch */
	const char *how; /* "value", "base64", "reversed", ... */
	unsigned flags;
	uint32_t secret;
};

struct gw_secret {
	char *name;
	unsigned char *arena; /* sodium_malloc: the bytes of all its forms */
};

/* Every form of one kind (as is, or stripped) by its first bytes */
struct prefix_ent {
	uint32_t key; /* the first SCAN_WINDOW bytes, case-folded */
	uint32_t form;
};

struct prefix_table {
	struct prefix_ent *ents; /* sodium_malloc, sorted by key */
	size_t n;
	unsigned char *filter; /* sodium_malloc: 1 << FILTER_BITS bits, one per key hash */
};

struct gw_secrets {
	struct gw_secret *v;
	size_t n;
	struct secret_form *forms;
	size_t nforms;
	struct prefix_table plain, stripped;
	struct stat seen; /* the keychain file when it was read */
	bool had_file;
};

/* ASCII case folding, and the separators the stripped copy leaves out, by
 * table: the scan looks up every byte of every message */
#define FOLD_OF(c) ((c) >= 'A' && (c) <= 'Z' ? (c) + ('a' - 'A') : (c))
#define SEP_OF(c)                                                                                 \
	((c) == ' ' || (c) == '\n' || (c) == '\r' || (c) == '\t' || (c) == '\f' || (c) == '\v' || \
	 (c) == ',' || (c) == '-' || (c) == '.' || (c) == '_')
#define BYTES4(M, b)  M(b), M((b) + 1), M((b) + 2), M((b) + 3)
#define BYTES16(M, b) BYTES4(M, b), BYTES4(M, (b) + 4), BYTES4(M, (b) + 8), BYTES4(M, (b) + 12)
#define BYTES64(M, b) \
	BYTES16(M, b), BYTES16(M, (b) + 16), BYTES16(M, (b) + 32), BYTES16(M, (b) + 48)
#define BYTES256(M) BYTES64(M, 0), BYTES64(M, 64), BYTES64(M, 128), BYTES64(M, 192)

static const unsigned char fold_table[256] = {BYTES256(FOLD_OF)};
static const bool sep_table[256] = {BYTES256(SEP_OF)};

static inline unsigned char fold(unsigned char c)
{
	return fold_table[c];
}

/* What the separator-stripped copy leaves out */
static inline bool is_sep(unsigned char c)
{
	return sep_table[c];
}

static size_t strip_copy(unsigned char *dst, const unsigned char *src, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		dst[k] = src[i];
		k += !is_sep(src[i]);
	}
	return k;
}

static void *secure_alloc(size_t n)
{
	void *p = sodium_malloc(n > 0 ? n : 1);
	if (p == NULL)
		abort();
	return p;
}

/* ---- the forms of a value ------------------------------------------------ */

/* Forms are built in one scratch buffer, then moved to an arena of their
 * exact size */
struct form_builder {
	struct gw_secrets *all;
	uint32_t secret;
	size_t first;       /* its first form in all->forms */
	unsigned char *buf; /* sodium_malloc */
	size_t len, cap;
};

static void put_form(struct form_builder *b, const char *how, unsigned flags,
                     const unsigned char *p, size_t n)
{
	size_t min = (flags & FORM_STRIPPED) != 0 ? STRIP_MIN : SCAN_WINDOW;
	if (n < min)
		return;
	if (b->cap - b->len < n)
		abort(); /* the scratch is sized for every form: never */
	unsigned char *dst = b->buf + b->len;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = p[i];
		if ((flags & FORM_STRIPPED) != 0 && is_sep(c))
			continue;
		dst[k++] = (flags & FORM_FOLD) != 0 ? fold(c) : c;
	}
	struct gw_secrets *all = b->all;
	bool again = k < min;
	for (size_t i = b->first; i < all->nforms && !again; i++) {
		const struct secret_form *f = &all->forms[i];
		again =
		    f->flags == flags && f->len == k && sodium_memcmp(b->buf + f->off, dst, k) == 0;
	}
	if (again) { /* too short, or these bytes in another form: once is enough */
		sodium_memzero(dst, k);
		return;
	}
	all->forms = xreallocarray(all->forms, all->nforms + 1, sizeof(*all->forms));
	all->forms[all->nforms++] = (struct secret_form){
	    .off = b->len, .len = k, .how = how, .flags = flags, .secret = b->secret};
	b->len += k;
}

/* A form as it is and with its separators removed */
static void form_add(struct form_builder *b, const char *how, unsigned fold_flag, const void *p,
                     size_t n)
{
	put_form(b, how, fold_flag, p, n);
	put_form(b, how, fold_flag | FORM_STRIPPED, p, n);
}

/* base64 of the value alone: matches where the value ends a text, and is
 * cut out whole */
static void add_b64(struct form_builder *b, const struct kc_secret *v, int variant, const char *how)
{
	size_t cap = sodium_base64_encoded_len(v->len, variant);
	char *out = secure_alloc(cap);
	sodium_bin2base64(out, cap, v->bytes, v->len, variant);
	size_t len = strlen(out);
	/* padding depends on what follows in a longer text: match without it */
	while (len > 0 && out[len - 1] == '=')
		len--;
	form_add(b, how, 0, out, len);
	sodium_free(out);
}

/* base64 of the value after 0, 1 or 2 other bytes: three different strings.
 * Of each, the characters made of the value's bits alone (the stable middle)
 * are the same whatever comes before and after. */
static void add_b64_shifted(struct form_builder *b, const struct kc_secret *v, int variant,
                            const char *how)
{
	for (size_t k = 0; k < 3; k++) {
		size_t n = v->len + k;
		unsigned char *in = secure_alloc(n);
		memset(in, 0, k);
		memcpy(in + k, v->bytes, v->len);
		size_t cap = sodium_base64_encoded_len(n, variant);
		char *out = secure_alloc(cap);
		sodium_bin2base64(out, cap, in, n, variant);
		/* character i holds bits [6i, 6i+6); the value's are [8k, 8n) */
		size_t first = (8 * k + 5) / 6, end = 8 * n / 6;
		if (end > first)
			form_add(b, how, 0, out + first, end - first);
		sodium_free(out);
		sodium_free(in);
	}
}

static void add_hex(struct form_builder *b, const struct kc_secret *v)
{
	size_t cap = v->len * 2 + 1;
	char *out = secure_alloc(cap);
	sodium_bin2hex(out, cap, v->bytes, v->len);
	form_add(b, "hex", FORM_FOLD, out, v->len * 2); /* either case, even mixed */
	sodium_free(out);
}

static bool unreserved(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~';
}

/* Percent-encoding of what a URL must encode (hex digits in either case; the
 * rest in any case for a long enough value), and of every byte */
static void add_percent(struct form_builder *b, const struct kc_secret *v)
{
	static const char upper[] = "0123456789ABCDEF", lower[] = "0123456789abcdef";
	char *out = secure_alloc(v->len * 3 + 1);
	for (int pass = 0; pass < 3; pass++) {
		const char *digits = pass == 1 ? lower : upper;
		size_t n = 0;
		for (size_t i = 0; i < v->len; i++) {
			unsigned char c = v->bytes[i];
			if (unreserved(c) && pass < 2) {
				out[n++] = (char)c;
			} else {
				out[n++] = '%';
				out[n++] = digits[c >> 4];
				out[n++] = digits[c & 15];
			}
		}
		if (pass < 2)
			form_add(b, "percent", 0, out, n);
		else
			form_add(b, "percent-every-byte", FORM_FOLD, out, n);
		if (pass == 0 && v->len >= FOLD_MIN)
			form_add(b, "case-changed percent", FORM_FOLD, out, n);
	}
	sodium_free(out);
}

/* As it stands inside a JSON string on a line (a quote, a backslash or a
 * control character is escaped there), where the line-level filter looks */
static void add_json(struct form_builder *b, const struct kc_secret *v)
{
	char *out = secure_alloc(v->len * 6 + 1);
	size_t n = 0;
	for (size_t i = 0; i < v->len; i++) {
		unsigned char c = v->bytes[i];
		if (c == '"' || c == '\\') {
			out[n++] = '\\';
			out[n++] = (char)c;
		} else if (c < 0x20) {
			static const char shortform[] = "\bb\ff\nn\rr\tt";
			const char *sf = memchr(shortform, c, sizeof(shortform) - 1);
			if (sf != NULL && ((sf - shortform) % 2) == 0) {
				out[n++] = '\\';
				out[n++] = sf[1];
			} else {
				n += (size_t)snprintf(out + n, 7, "\\u%04x", c);
			}
		} else {
			out[n++] = (char)c;
		}
	}
	form_add(b, "json", 0, out, n);
	sodium_free(out);
}

static void add_reversed(struct form_builder *b, const struct kc_secret *v)
{
	unsigned char *out = secure_alloc(v->len);
	for (size_t i = 0; i < v->len; i++)
		out[i] = v->bytes[v->len - 1 - i];
	form_add(b, "reversed", 0, out, v->len);
	if (v->len >= FOLD_MIN)
		form_add(b, "case-changed reversed", FORM_FOLD, out, v->len);
	sodium_free(out);
}

static int collect(const char *name, const struct kc_secret *value, void *data, struct mg_err **err)
{
	(void)err;
	struct gw_secrets *all = data;
	all->v = xreallocarray(all->v, all->n + 1, sizeof(*all->v));
	struct gw_secret *s = &all->v[all->n];
	memset(s, 0, sizeof(*s));
	s->name = xstrdup(name);
	/* every form below, each at most 6 bytes a byte of the value, twice */
	struct form_builder b = {.all = all,
	                         .secret = (uint32_t)all->n,
	                         .first = all->nforms,
	                         .cap = 80 * value->len + 256};
	b.buf = secure_alloc(b.cap);
	all->n++;
	if (value->len >= SECRET_SCAN_MIN) {
		form_add(&b, "value", 0, value->bytes, value->len);
		add_json(&b, value);
		add_b64(&b, value, sodium_base64_VARIANT_ORIGINAL, "base64");
		add_b64(&b, value, sodium_base64_VARIANT_URLSAFE, "base64url");
		add_hex(&b, value);
		add_percent(&b, value);
	}
	if (value->len >= SHIFT_B64_MIN) {
		add_b64_shifted(&b, value, sodium_base64_VARIANT_ORIGINAL, "base64");
		add_b64_shifted(&b, value, sodium_base64_VARIANT_URLSAFE, "base64url");
	}
	if (value->len >= FOLD_MIN)
		form_add(&b, "case-changed", FORM_FOLD, value->bytes, value->len);
	if (value->len >= REVERSED_MIN)
		add_reversed(&b, value);
	if (b.len > 0) {
		s->arena = secure_alloc(b.len);
		memcpy(s->arena, b.buf, b.len);
		for (size_t i = b.first; i < all->nforms; i++)
			all->forms[i].bytes = s->arena + all->forms[i].off;
	}
	sodium_free(b.buf);
	return 0;
}

static uint32_t prefix_key(const unsigned char *p)
{
	return (uint32_t)fold(p[0]) << 24 | (uint32_t)fold(p[1]) << 16 | (uint32_t)fold(p[2]) << 8 |
	       (uint32_t)fold(p[3]);
}

static inline uint32_t filter_slot(uint32_t key)
{
	return (key * 0x9E3779B1u) >> (32 - FILTER_BITS);
}

static int ent_cmp(const void *a, const void *b)
{
	const struct prefix_ent *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->form < y->form ? -1 : x->form > y->form;
}

static void table_build(struct prefix_table *t, const struct gw_secrets *all, unsigned stripped)
{
	size_t n = 0;
	for (size_t i = 0; i < all->nforms; i++)
		n += (all->forms[i].flags & FORM_STRIPPED) == stripped;
	if (n == 0)
		return;
	t->ents = secure_alloc(n * sizeof(*t->ents));
	t->filter = secure_alloc(FILTER_BYTES);
	memset(t->filter, 0, FILTER_BYTES);
	for (size_t i = 0; i < all->nforms; i++) {
		const struct secret_form *f = &all->forms[i];
		if ((f->flags & FORM_STRIPPED) != stripped)
			continue;
		uint32_t key = prefix_key(f->bytes);
		uint32_t slot = filter_slot(key);
		t->filter[slot >> 3] |= (unsigned char)(1u << (slot & 7));
		t->ents[t->n++] = (struct prefix_ent){key, (uint32_t)i};
	}
	qsort(t->ents, t->n, sizeof(*t->ents), ent_cmp);
}

static void table_free(struct prefix_table *t)
{
	if (t->ents != NULL)
		sodium_free(t->ents);
	if (t->filter != NULL)
		sodium_free(t->filter);
}

static void secrets_free(struct gw_secrets *all)
{
	if (all == NULL)
		return;
	for (size_t i = 0; i < all->n; i++) {
		if (all->v[i].arena != NULL)
			sodium_free(all->v[i].arena);
		free(all->v[i].name);
	}
	table_free(&all->plain);
	table_free(&all->stripped);
	free(all->forms);
	free(all->v);
	free(all);
}

/* ---- at session start --------------------------------------------------- */

static bool keychain_changed(const struct session *s)
{
	struct stat st;
	bool has = stat(kc_path(s->keychain), &st) == 0;
	if (has != s->secrets->had_file)
		return true;
	const struct stat *was = &s->secrets->seen;
	return has && (st.st_ino != was->st_ino || st.st_size != was->st_size ||
	               st.st_mtim.tv_sec != was->st_mtim.tv_sec ||
	               st.st_mtim.tv_nsec != was->st_mtim.tv_nsec);
}

static void remember_file(struct session *s)
{
	s->secrets->had_file = stat(kc_path(s->keychain), &s->secrets->seen) == 0;
}

int gw_secrets_open(struct session *s, struct mg_err **err)
{
	if (kc_open(s->data_dir, &s->keychain, err) < 0)
		return mg_err_wrap(err, "the keychain");
	s->secrets = xcalloc(1, sizeof(*s->secrets));
	remember_file(s);
	if (kc_each_secret(s->keychain, collect, s->secrets, err) < 0)
		return mg_err_wrap(err, "reading the keychain");
	table_build(&s->secrets->plain, s->secrets, 0);
	table_build(&s->secrets->stripped, s->secrets, FORM_STRIPPED);
	return 0;
}

void gw_secrets_close(struct session *s)
{
	secrets_free(s->secrets);
	s->secrets = NULL;
	kc_free(s->keychain);
	s->keychain = NULL;
}

/* Is the server's credential bound for every host it may reach, at its
 * position? Each lookup is on the record. Returns NULL when it is, else the
 * first host that is not (allocated). */
/* Where a server's traffic may go: a container's listed hosts, or a remote
 * server's URL host and port (one, filled into *one). */
static size_t destinations(const struct cfg_server *c, const struct cfg_host **out,
                           struct cfg_host *one)
{
	if (c->transport == CFG_TRANSPORT_REMOTE) {
		*one = (struct cfg_host){.host = c->url_host, .port = c->url_port};
		*out = one;
		return 1;
	}
	*out = c->hosts;
	return c->nhosts;
}

/* Is the server's credential bound for every host it may reach, at its
 * position? Each lookup is on the record. Returns NULL when it is, else the
 * first host that is not (allocated). */
static char *unbound_host(struct session *s, const struct cfg_server *c)
{
	char *missing = NULL;
	struct cfg_host one;
	const struct cfg_host *hosts;
	size_t n = destinations(c, &hosts, &one);
	for (size_t i = 0; i < n; i++) {
		const struct cfg_host *h = &hosts[i];
		bool ok = kc_bound_for(s->keychain, c->credential, h->host, h->port, c->position,
		                       c->position_name);
		cleanup_free char *host = kc_host_text(h->host, h->port);
		cleanup_free char *pos = kc_position_text(c->position, c->position_name);
		audit_record(s->audit, "egress.check",
		             gw_fields("server", json_new_string(c->name), "credential",
		                       json_new_string(c->credential), "host",
		                       json_new_string(host), "position", json_new_string(pos),
		                       "allowed", json_new_bool(ok), NULL));
		if (!ok && missing == NULL)
			missing = xstrdup(host);
	}
	return missing;
}

int gw_secrets_for_server(struct gw_server *srv, struct mg_err **err)
{
	struct session *s = srv->sess;
	const struct cfg_server *c = srv->cfg;
	if (c->credential == NULL)
		return 0;
	if (s->keychain == NULL)
		return mg_err_set(err, "its credential %s cannot be read: %s", c->credential,
		                  s->keychain_error != NULL ? s->keychain_error : "no keychain");
	if (kc_find(s->keychain, c->credential) == NULL)
		return mg_err_set(err,
		                  "its credential %s is not in the keychain (mcpgate secret "
		                  "set %s)",
		                  c->credential, c->credential);
	cleanup_free char *host = unbound_host(s, c);
	if (host != NULL) {
		cleanup_free char *pos = kc_position_text(c->position, c->position_name);
		return mg_err_set(
		    err,
		    "its credential %s is not bound for host %s at %s (mcpgate secret "
		    "bind %s --host %s --position %s)",
		    c->credential, host, pos, c->credential, host, pos);
	}
	return kc_get(s->keychain, c->credential, &srv->secret, err);
}

/* ---- before every call --------------------------------------------------- */

int gw_secrets_recheck(struct gw_server *srv, struct mg_err **err)
{
	struct session *s = srv->sess;
	if (srv->cfg->credential == NULL)
		return 0;
	if (s->keychain == NULL)
		return mg_err_set(err, "the keychain cannot be read");
	if (keychain_changed(s)) {
		/* read it again: a binding may be gone */
		struct kc *fresh = NULL;
		if (kc_open(s->data_dir, &fresh, err) < 0)
			return mg_err_wrap(err, "the keychain changed and cannot be read again");
		kc_free(s->keychain);
		s->keychain = fresh;
		remember_file(s);
	}
	cleanup_free char *host = unbound_host(s, srv->cfg);
	if (host != NULL)
		return mg_err_set(err, "refused: credential %s is no longer bound for host %s",
		                  srv->cfg->credential, host);
	return 0;
}

/* ---- the scan ------------------------------------------------------------ */

/* How much of f stands at p (the caller made sure f->len bytes are there) */
static size_t match_len(const struct secret_form *f, const unsigned char *p)
{
	size_t k = 0;
	if ((f->flags & FORM_FOLD) != 0)
		while (k < f->len && fold(p[k]) == f->bytes[k])
			k++;
	else
		while (k < f->len && p[k] == f->bytes[k])
			k++;
	return k;
}

struct scan;
/* One form found at [a, b) of the text; false stops the scan */
typedef bool (*hit_fn)(struct scan *sc, size_t a, size_t b, uint32_t form);

struct scan {
	const struct gw_secrets *all;
	const bool *skip; /* secrets not to look for (by index), or NULL */
	bool stripped;    /* the text scanned is the stripped copy */
	hit_fn hit;
	void *data;
};

static size_t first_ent(const struct prefix_table *t, uint32_t key)
{
	size_t lo = 0, hi = t->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->ents[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The forms left to memmem once checking went past its budget, each
 * searched for (linear in the text) from where it was left */
static bool scan_fallback(struct scan *sc, const struct prefix_table *t, const unsigned char *h,
                          size_t n, const bool *later, const size_t *next)
{
	unsigned char *low = NULL;
	bool go = true;
	for (size_t e = 0; go && e < t->n; e++) {
		if (!later[e])
			continue;
		const struct secret_form *f = &sc->all->forms[t->ents[e].form];
		const unsigned char *text = h;
		if ((f->flags & FORM_FOLD) != 0) {
			if (low == NULL) {
				low = xmalloc(n);
				for (size_t i = 0; i < n; i++)
					low[i] = fold(h[i]);
			}
			text = low;
		}
		for (size_t at = next[e]; go && at < n;) {
			const unsigned char *p = memmem(text + at, n - at, f->bytes, f->len);
			if (p == NULL)
				break;
			size_t a = (size_t)(p - text);
			go = sc->hit(sc, a, a + f->len, t->ents[e].form);
			at = a + f->len;
		}
	}
	if (low != NULL) {
		sodium_memzero(low, n);
		free(low);
	}
	return go;
}

/* The first position at or after i where a form of the table may start (n
 * when none), its key in *key: the loop every byte of a message goes through */
static size_t next_candidate(const unsigned char *restrict h, size_t i, size_t n,
                             const unsigned char *restrict filter, uint32_t *key)
{
	if (n - i < SCAN_WINDOW)
		return n;
	uint32_t k = (uint32_t)fold(h[i]) << 16 | (uint32_t)fold(h[i + 1]) << 8 | fold(h[i + 2]);
	for (const unsigned char *p = h + i + SCAN_WINDOW - 1, *end = h + n; p < end; p++) {
		k = k << 8 | fold(*p);
		uint32_t slot = filter_slot(k);
		if ((filter[slot >> 3] >> (slot & 7) & 1) != 0) {
			*key = k;
			return (size_t)(p - h) - (SCAN_WINDOW - 1);
		}
	}
	return n;
}

/* Every form of table t in h: one pass, each position looked up by its
 * first SCAN_WINDOW bytes. A form is reported where it does not overlap its
 * own last report (enough to redact it). Checking candidates costs at most
 * about 2 bytes a byte of text in all; past that every form with a candidate
 * is searched with memmem instead (linear in the text), so a text made to
 * resemble a form costs a few passes more, not a pass per position. */
static bool scan_text(struct scan *sc, const struct prefix_table *t, const unsigned char *h,
                      size_t n)
{
	if (t->n == 0 || n < SCAN_WINDOW)
		return true;
	bool *later = NULL;  /* left to memmem */
	size_t *next = NULL; /* where each form may next be reported */
	size_t spent = 0, budget = 2 * n + 65536;
	bool go = true, fallback = false, moved = false;
	const unsigned char *filter = t->filter;
	unsigned char *mine = NULL; /* the filter without the forms left to memmem */
	uint32_t key = 0;
	for (size_t i = 0; go && (i = next_candidate(h, i, n, filter, &key)) < n; i++) {
		if (next == NULL) {
			later = xcalloc(t->n, sizeof(*later));
			next = xcalloc(t->n, sizeof(*next));
		}
		for (size_t e = first_ent(t, key); go && e < t->n && t->ents[e].key == key; e++) {
			const struct secret_form *f = &sc->all->forms[t->ents[e].form];
			if (later[e] || i < next[e] || f->len > n - i ||
			    (sc->skip != NULL && sc->skip[f->secret]))
				continue;
			if (spent > budget) {
				later[e] = true;
				next[e] = i;
				fallback = moved = true;
				continue;
			}
			size_t m = match_len(f, h + i);
			spent += m + 1;
			if (m == f->len) {
				next[e] = i + f->len;
				go = sc->hit(sc, i, i + f->len, t->ents[e].form);
			}
		}
		if (moved) {
			/* a form went to memmem: the filter keeps only the others */
			moved = false;
			if (mine == NULL)
				mine = secure_alloc(FILTER_BYTES);
			memset(mine, 0, FILTER_BYTES);
			for (size_t e = 0; e < t->n; e++) {
				uint32_t slot = filter_slot(t->ents[e].key);
				if (!later[e])
					mine[slot >> 3] |= (unsigned char)(1u << (slot & 7));
			}
			filter = mine;
		}
	}
	if (mine != NULL)
		sodium_free(mine);
	if (go && fallback)
		go = scan_fallback(sc, t, h, n, later, next);
	free(later);
	free(next);
	return go;
}

/* ---- a message as one text ------------------------------------------------ */

/* A string or number of the message, where it stands in the join */
struct leaf {
	struct json_value *v;
	size_t h0; /* in the join */
	size_t s0; /* in the stripped join */
};

/* The join of a message's strings and numbers, in order, and the join with
 * its separators removed. For one text alone, h is that text (borrowed). */
struct joined {
	struct leaf *leaves;
	size_t n;
	unsigned char *h;
	size_t hn;
	bool own_h;
	unsigned char *s; /* NULL when no form is looked for stripped */
	size_t sn;
};

static const char *leaf_text(const struct json_value *v, size_t *len)
{
	if (v->kind == JSON_NUMBER) {
		*len = v->u.num.len;
		return v->u.num.ptr;
	}
	*len = v->u.str.len;
	return v->u.str.ptr;
}

static void count_leaves(const struct json_value *v, size_t *n)
{
	switch (v->kind) {
	case JSON_STRING:
	case JSON_NUMBER:
		(*n)++;
		break;
	case JSON_ARRAY:
		for (size_t i = 0; i < v->u.arr.len; i++)
			count_leaves(v->u.arr.items[i], n);
		break;
	case JSON_OBJECT:
		for (size_t i = 0; i < v->u.obj.len; i++)
			count_leaves(v->u.obj.items[i].value, n);
		break;
	case JSON_NULL:
	case JSON_BOOL:
		break;
	}
}

static void fill_leaves(struct json_value *v, struct leaf *out, size_t *n)
{
	switch (v->kind) {
	case JSON_STRING:
	case JSON_NUMBER:
		out[(*n)++].v = v;
		break;
	case JSON_ARRAY:
		for (size_t i = 0; i < v->u.arr.len; i++)
			fill_leaves(v->u.arr.items[i], out, n);
		break;
	case JSON_OBJECT:
		for (size_t i = 0; i < v->u.obj.len; i++)
			fill_leaves(v->u.obj.items[i].value, out, n);
		break;
	case JSON_NULL:
	case JSON_BOOL:
		break;
	}
}

static void joined_release(struct joined *j)
{
	if (j->own_h && j->h != NULL) {
		sodium_memzero(j->h, j->hn);
		free(j->h);
	}
	if (j->s != NULL) {
		sodium_memzero(j->s, j->sn);
		free(j->s);
	}
	j->h = j->s = NULL;
	j->hn = j->sn = 0;
}

static void joined_free(struct joined *j)
{
	joined_release(j);
	free(j->leaves);
	j->leaves = NULL;
}

/* (Re)make the texts from the leaves as they stand now */
static void joined_texts(const struct gw_secrets *all, struct joined *j)
{
	joined_release(j);
	if (j->n == 1 && !j->own_h) {
		size_t len;
		j->h = (unsigned char *)leaf_text(j->leaves[0].v, &len);
		j->hn = len;
	} else {
		j->own_h = true;
		size_t total = 0;
		for (size_t i = 0; i < j->n; i++) {
			size_t len;
			leaf_text(j->leaves[i].v, &len);
			total += len;
		}
		j->h = xmalloc(total + 1);
		for (size_t i = 0; i < j->n; i++) {
			size_t len;
			const char *p = leaf_text(j->leaves[i].v, &len);
			j->leaves[i].h0 = j->hn;
			memcpy(j->h + j->hn, p, len);
			j->hn += len;
		}
	}
	if (all->stripped.n == 0 || j->hn < STRIP_MIN)
		return;
	j->s = xmalloc(j->hn + 1);
	for (size_t i = 0; i < j->n; i++) {
		size_t len;
		const char *p = leaf_text(j->leaves[i].v, &len);
		j->leaves[i].s0 = j->sn;
		j->sn += strip_copy(j->s + j->sn, (const unsigned char *)p, len);
	}
}

static void joined_tree(const struct gw_secrets *all, struct json_value *v, struct joined *j)
{
	memset(j, 0, sizeof(*j));
	size_t n = 0;
	count_leaves(v, &n);
	j->leaves = xcalloc(n > 0 ? n : 1, sizeof(*j->leaves));
	fill_leaves(v, j->leaves, &j->n);
	j->own_h = true;
	joined_texts(all, j);
}

/* One text alone (a member name, a line): v is a string made to point at it */
static void joined_one(const struct gw_secrets *all, struct json_value *v, struct joined *j)
{
	memset(j, 0, sizeof(*j));
	j->leaves = xcalloc(1, sizeof(*j->leaves));
	j->leaves[0].v = v;
	j->n = 1;
	joined_texts(all, j);
}

static size_t leaf_start(const struct joined *j, size_t i, bool stripped)
{
	return stripped ? j->leaves[i].s0 : j->leaves[i].h0;
}

static size_t leaf_end(const struct joined *j, size_t i, bool stripped)
{
	if (i + 1 < j->n)
		return leaf_start(j, i + 1, stripped);
	return stripped ? j->sn : j->hn;
}

/* The leaf that holds position pos of the join (or of the stripped join) */
static size_t leaf_at(const struct joined *j, size_t pos, bool stripped)
{
	size_t lo = 0, hi = j->n; /* the last leaf that starts at or before pos */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (leaf_start(j, mid, stripped) <= pos)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* ---- what leaves ---------------------------------------------------------- */

struct detect {
	const struct joined *j;
	const struct secret_form *form;
	bool stripped, across;
};

static bool on_detect(struct scan *sc, size_t a, size_t b, uint32_t form)
{
	struct detect *d = sc->data;
	const struct secret_form *f = &sc->all->forms[form];
	bool across = leaf_at(d->j, a, sc->stripped) != leaf_at(d->j, b - 1, sc->stripped);
	if (across && f->len < JOIN_MIN)
		return true; /* a short form across two strings: ordinary text makes those */
	d->form = f;
	d->stripped = sc->stripped;
	d->across = across;
	return false;
}

/* The first form of a secret not in skip in j, or NULL */
static const struct secret_form *detect(const struct gw_secrets *all, const struct joined *j,
                                        const bool *skip, struct detect *d)
{
	memset(d, 0, sizeof(*d));
	d->j = j;
	struct scan sc = {.all = all, .skip = skip, .hit = on_detect, .data = d};
	if (scan_text(&sc, &all->plain, j->h, j->hn) && j->s != NULL) {
		sc.stripped = true;
		scan_text(&sc, &all->stripped, j->s, j->sn);
	}
	return d->form;
}

static const struct secret_form *detect_keys(const struct gw_secrets *all,
                                             const struct json_value *v, const bool *skip,
                                             struct detect *d)
{
	const struct secret_form *f = NULL;
	if (v->kind == JSON_ARRAY)
		for (size_t i = 0; f == NULL && i < v->u.arr.len; i++)
			f = detect_keys(all, v->u.arr.items[i], skip, d);
	if (v->kind != JSON_OBJECT)
		return f;
	for (size_t i = 0; f == NULL && i < v->u.obj.len; i++) {
		const struct json_member *m = &v->u.obj.items[i];
		struct json_value key = {.kind = JSON_STRING};
		key.u.str.ptr = m->key;
		key.u.str.len = m->keylen;
		struct joined j;
		joined_one(all, &key, &j);
		f = detect(all, &j, skip, d);
		joined_free(&j);
		if (f == NULL)
			f = detect_keys(all, m->value, skip, d);
	}
	return f;
}

/* May secret name go to a server that can reach its hosts? Bound for every
 * one of them, at any position; a server with no network gets none. */
static bool may_carry(const struct session *s, const struct cfg_server *c, const char *name)
{
	struct cfg_host one;
	const struct cfg_host *hosts;
	size_t n = destinations(c, &hosts, &one);
	if (n == 0 || s->keychain == NULL)
		return false;
	const struct kc_info *info = kc_find(s->keychain, name);
	if (info == NULL)
		return false;
	for (size_t i = 0; i < n; i++) {
		bool bound = false;
		for (size_t b = 0; b < info->nbindings && !bound; b++) {
			const struct kc_binding *kb = &info->bindings[b];
			bound = strcmp(kb->host, hosts[i].host) == 0 &&
			        (kb->port == hosts[i].port ||
			         (kb->port == 0 && (hosts[i].port == 80 || hosts[i].port == 443)));
		}
		if (!bound)
			return false;
	}
	return true;
}

char *gw_secrets_check_leaving(const struct gw_server *srv, const struct json_value *params)
{
	const struct session *s = srv->sess;
	const struct gw_secrets *all = s->secrets;
	if (params == NULL || all == NULL || all->nforms == 0)
		return NULL;
	/* the secrets this server may carry are not looked for; the others are */
	bool *skip = xcalloc(all->n, sizeof(*skip));
	bool any = false;
	for (size_t i = 0; i < all->n; i++) {
		skip[i] = may_carry(s, srv->cfg, all->v[i].name);
		any = any || !skip[i];
	}
	struct detect d;
	const struct secret_form *f = NULL;
	if (any) {
		struct joined j;
		/* the scan does not change the message: it only reads the leaves */
		joined_tree(all, (struct json_value *)params, &j);
		f = detect(all, &j, skip, &d);
		joined_free(&j);
		if (f == NULL)
			f = detect_keys(all, params, skip, &d);
	}
	free(skip);
	if (f == NULL)
		return NULL;
	return xasprintf("refused: the request holds credential %s (its %s form%s%s), which is not "
	                 "bound for every host server %s can reach",
	                 all->v[f->secret].name, f->how,
	                 d.stripped ? ", spread out with separators" : "",
	                 d.across ? ", split across strings" : "", srv->cfg->name);
}

/* ---- what returns ---------------------------------------------------------- */

struct hit {
	size_t a, b;
	uint32_t form;
	bool stripped;
};

enum cut_kind { CUT_PLAIN, CUT_STRIPPED, CUT_WHOLE };

/* What to do to one leaf: cut [a, b) of it (in its stripped text for
 * CUT_STRIPPED), or replace all of it */
struct cut {
	size_t leaf;
	size_t a, b;
	uint32_t secret;
	enum cut_kind kind;
};

struct redaction {
	const struct gw_secrets *all;
	struct joined j;
	struct hit *hits;
	size_t nhits, cap;
	bool overflow;
	/* put text (allocated) in place of leaf i */
	void (*install)(struct redaction *r, size_t i, char *text, size_t len);
	void *data;
	size_t changed;
};

static bool on_redact(struct scan *sc, size_t a, size_t b, uint32_t form)
{
	struct redaction *r = sc->data;
	if (r->nhits == HITS_MAX) {
		r->overflow = true;
		return false;
	}
	if (r->nhits == r->cap) {
		r->cap = r->cap > 0 ? r->cap * 2 : 16;
		r->hits = xreallocarray(r->hits, r->cap, sizeof(*r->hits));
	}
	r->hits[r->nhits++] = (struct hit){a, b, form, sc->stripped};
	return true;
}

static char *whole_mark(const struct gw_secrets *all, uint32_t secret, size_t *len)
{
	char *m = xasprintf("[redacted:%s, whole string]", all->v[secret].name);
	*len = strlen(m);
	return m;
}

/* Every leaf that holds anything, replaced whole */
static void replace_all(struct redaction *r, uint32_t secret)
{
	for (size_t i = 0; i < r->j.n; i++) {
		size_t len;
		leaf_text(r->j.leaves[i].v, &len);
		if (len == 0)
			continue;
		char *m = whole_mark(r->all, secret, &len);
		r->install(r, i, m, len);
	}
}

static int cut_cmp(const void *x, const void *y)
{
	const struct cut *a = x, *b = y;
	if (a->leaf != b->leaf)
		return a->leaf < b->leaf ? -1 : 1;
	if (a->a != b->a)
		return a->a < b->a ? -1 : 1;
	return a->b < b->b ? -1 : a->b > b->b;
}

struct point {
	size_t pos;
	size_t *out;
	bool end;
};

static int point_cmp(const void *x, const void *y)
{
	const struct point *a = x, *b = y;
	return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* Cuts of stripped positions to positions in the text: from the first
 * character found to the last, all that lies between */
static void map_stripped(const char *text, size_t len, struct cut *c, size_t n)
{
	size_t np = 0;
	for (size_t i = 0; i < n; i++)
		np += c[i].kind == CUT_STRIPPED ? 2 : 0;
	if (np == 0)
		return;
	struct point *p = xcalloc(np, sizeof(*p));
	np = 0;
	for (size_t i = 0; i < n; i++) {
		if (c[i].kind != CUT_STRIPPED)
			continue;
		p[np++] = (struct point){c[i].a, &c[i].a, false};
		p[np++] = (struct point){c[i].b - 1, &c[i].b, true};
	}
	qsort(p, np, sizeof(*p), point_cmp);
	size_t k = 0, at = 0;
	for (size_t i = 0; i < len && k < np; i++) {
		if (is_sep((unsigned char)text[i]))
			continue;
		while (k < np && p[k].pos == at) {
			*p[k].out = p[k].end ? i + 1 : i;
			k++;
		}
		at++;
	}
	for (size_t i = 0; i < n; i++)
		if (c[i].kind == CUT_STRIPPED)
			c[i].kind = CUT_PLAIN;
	free(p);
}

/* The leaf with its cuts (sorted, CUT_PLAIN) made, each run of overlapping
 * ones one mark */
static char *apply_cuts(const struct gw_secrets *all, const char *text, size_t len,
                        const struct cut *c, size_t n, size_t *out_len)
{
	struct mg_buf b = MG_BUF_INIT((size_t)1 << 31);
	size_t at = 0;
	for (size_t i = 0; i < n;) {
		size_t a = c[i].a, e = c[i].b;
		uint32_t secret = c[i].secret;
		for (i++; i < n && c[i].a < e; i++)
			if (c[i].b > e)
				e = c[i].b;
		if (a < at)
			a = at;
		mg_buf_append(&b, text + at, a - at, NULL);
		cleanup_free char *mark = xasprintf("[redacted:%s]", all->v[secret].name);
		mg_buf_puts(&b, mark, NULL);
		at = e;
	}
	mg_buf_append(&b, text + at, len - at, NULL);
	return mg_buf_steal(&b, out_len);
}

/* Act on what the scan found: a form within one leaf is cut out of it; one
 * across leaves replaces each of them whole, and so does any find when the
 * scan found more than it keeps. false: too much to act on. */
static bool resolve(struct redaction *r)
{
	const struct gw_secrets *all = r->all;
	struct cut *c = NULL;
	size_t n = 0, cap = 0;
	bool ok = true;
	for (size_t h = 0; h < r->nhits && ok; h++) {
		const struct hit *x = &r->hits[h];
		const struct secret_form *f = &all->forms[x->form];
		size_t li = leaf_at(&r->j, x->a, x->stripped);
		size_t lj = leaf_at(&r->j, x->b - 1, x->stripped);
		if (li != lj && f->len < JOIN_MIN)
			continue;
		for (size_t i = li; i <= lj && ok; i++) {
			size_t s0 = leaf_start(&r->j, i, x->stripped);
			if (li != lj && leaf_end(&r->j, i, x->stripped) == s0)
				continue; /* holds nothing of it */
			if (n == cap) {
				cap = cap > 0 ? cap * 2 : 16;
				c = xreallocarray(c, cap, sizeof(*c));
			}
			enum cut_kind kind = li != lj || r->overflow ? CUT_WHOLE
			                     : x->stripped           ? CUT_STRIPPED
			                                             : CUT_PLAIN;
			c[n++] = kind == CUT_WHOLE
			             ? (struct cut){i, 0, 0, f->secret, kind}
			             : (struct cut){i, x->a - s0, x->b - s0, f->secret, kind};
			ok = n < ACTIONS_MAX;
		}
	}
	if (ok && n > 0) {
		qsort(c, n, sizeof(*c), cut_cmp);
		for (size_t i = 0; i < n;) {
			size_t k = i, leaf = c[i].leaf;
			const struct cut *whole = NULL;
			for (; k < n && c[k].leaf == leaf; k++)
				if (c[k].kind == CUT_WHOLE && whole == NULL)
					whole = &c[k];
			size_t len, out_len;
			const char *text = leaf_text(r->j.leaves[leaf].v, &len);
			char *out;
			if (whole != NULL) {
				out = whole_mark(all, whole->secret, &out_len);
			} else {
				map_stripped(text, len, c + i, k - i);
				qsort(c + i, k - i, sizeof(*c), cut_cmp);
				out = apply_cuts(all, text, len, c + i, k - i, &out_len);
			}
			r->install(r, leaf, out, out_len);
			i = k;
		}
	}
	free(c);
	return ok;
}

/* Redact r->j: cut what can be cut, then look again, up to REDACT_ROUNDS
 * times; what is still found then (or more than can be acted on) has every
 * leaf replaced whole */
static void redact_joined(struct redaction *r)
{
	const struct gw_secrets *all = r->all;
	for (int round = 0; round < REDACT_ROUNDS; round++) {
		if (round > 0)
			joined_texts(all, &r->j);
		r->nhits = 0;
		r->overflow = false;
		struct scan sc = {.all = all, .hit = on_redact, .data = r};
		if (scan_text(&sc, &all->plain, r->j.h, r->j.hn) && r->j.s != NULL) {
			sc.stripped = true;
			scan_text(&sc, &all->stripped, r->j.s, r->j.sn);
		}
		if (r->nhits == 0)
			return;
		size_t before = r->changed;
		if (!resolve(r)) {
			replace_all(r, all->forms[r->hits[0].form].secret);
			return;
		}
		if (r->changed == before)
			return; /* only short forms across strings: nothing */
	}
	joined_texts(all, &r->j);
	struct detect d;
	const struct secret_form *f = detect(all, &r->j, NULL, &d);
	if (f != NULL)
		replace_all(r, f->secret);
}

static void install_tree(struct redaction *r, size_t i, char *text, size_t len)
{
	struct json_value *v = r->j.leaves[i].v;
	if (v->kind == JSON_NUMBER) {
		sodium_memzero(v->u.num.ptr, v->u.num.len);
		free(v->u.num.ptr);
		v->kind = JSON_STRING; /* a number that held a value is a string now */
	} else {
		sodium_memzero(v->u.str.ptr, v->u.str.len);
		free(v->u.str.ptr);
	}
	v->u.str.ptr = text;
	v->u.str.len = len;
	r->changed++;
}

/* One text: the fake leaf points at the text, then at each new version */
static void install_one(struct redaction *r, size_t i, char *text, size_t len)
{
	(void)i;
	struct json_value *v = r->j.leaves[0].v;
	char **owned = r->data;
	if (*owned != NULL) {
		sodium_memzero(*owned, v->u.str.len);
		free(*owned);
	}
	*owned = text;
	v->u.str.ptr = text;
	v->u.str.len = len;
	r->changed++;
}

/* Every form of every secret in text replaced; NULL when nothing was found */
static char *redact_text(const struct gw_secrets *all, const char *text, size_t len,
                         size_t *out_len)
{
	if (all == NULL || all->nforms == 0 || len < SCAN_WINDOW)
		return NULL;
	struct json_value v = {.kind = JSON_STRING};
	v.u.str.ptr = (char *)text; /* read only: a new text is installed, never this one */
	v.u.str.len = len;
	char *out = NULL;
	struct redaction r = {.all = all, .install = install_one, .data = &out};
	joined_one(all, &v, &r.j);
	redact_joined(&r);
	joined_free(&r.j);
	free(r.hits);
	if (out != NULL)
		*out_len = v.u.str.len;
	return out;
}

static size_t redact_keys(const struct gw_secrets *all, struct json_value *v)
{
	size_t n = 0;
	if (v->kind == JSON_ARRAY)
		for (size_t i = 0; i < v->u.arr.len; i++)
			n += redact_keys(all, v->u.arr.items[i]);
	if (v->kind != JSON_OBJECT)
		return n;
	for (size_t i = 0; i < v->u.obj.len; i++) {
		struct json_member *m = &v->u.obj.items[i];
		size_t len = 0;
		char *clean = redact_text(all, m->key, m->keylen, &len);
		if (clean != NULL) {
			sodium_memzero(m->key, m->keylen);
			free(m->key);
			m->key = clean;
			m->keylen = len;
			n++;
		}
		n += redact_keys(all, m->value);
	}
	return n;
}

size_t gw_secrets_redact(const struct session *s, struct json_value *v)
{
	const struct gw_secrets *all = s->secrets;
	if (all == NULL || v == NULL || all->nforms == 0)
		return 0;
	struct redaction r = {.all = all, .install = install_tree};
	joined_tree(all, v, &r.j);
	redact_joined(&r);
	joined_free(&r.j);
	free(r.hits);
	return r.changed + redact_keys(all, v);
}

char *gw_secrets_filter(const char *text, size_t len, size_t *out_len, void *data)
{
	const struct session *s = data;
	return s->secrets != NULL ? redact_text(s->secrets, text, len, out_len) : NULL;
}

char *gw_secrets_redact_text(const struct session *s, const char *text, size_t len)
{
	size_t out_len = 0;
	char *clean = redact_text(s->secrets, text, len, &out_len);
	return clean != NULL ? clean : xstrndup(text, len);
}
