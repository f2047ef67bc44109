/* Credentials in a session (docs/credentials.md): the binding rule at start
 * and before every call, delivery as an environment variable through the
 * runtime, and the scanner that refuses a secret in arguments bound for the
 * wrong server and redacts it from everything that comes back.
 *
 * Every form of every stored value lives in sodium_malloc memory for the
 * session and is wiped at its end. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sodium.h>

#include "internal/base/cleanup.h"
#include "internal/base/log.h"
#include "internal/base/xalloc.h"
#include "internal/gateway/gateway-internal.h"

/* Values shorter than this are not scanned for: they would match everywhere */
#define SECRET_SCAN_MIN 4

/* One encoded form of one secret */
struct secret_form {
	unsigned char *bytes; /* sodium_malloc */
	size_t len;
	const char *how; /* "value", "base64", "base64url", "hex", "percent" */
};

struct gw_secret {
	char *name;
	struct secret_form forms[8];
	size_t nforms;
};

struct gw_secrets {
	struct gw_secret *v;
	size_t n;
	struct stat seen; /* the keychain file when it was read */
	bool had_file;
};

static void form_add(struct gw_secret *s, const char *how, const void *bytes, size_t len)
{
	if (len < SECRET_SCAN_MIN || s->nforms == sizeof(s->forms) / sizeof(s->forms[0]))
		return;
	for (size_t i = 0; i < s->nforms; i++)
		if (s->forms[i].len == len && sodium_memcmp(s->forms[i].bytes, bytes, len) == 0)
			return; /* the same bytes in another form: once is enough */
	unsigned char *p = sodium_malloc(len);
	if (p == NULL)
		abort();
	memcpy(p, bytes, len);
	s->forms[s->nforms++] = (struct secret_form){p, len, how};
}

static void add_b64(struct gw_secret *s, const struct kc_secret *v, int variant, const char *how)
{
	size_t cap = sodium_base64_encoded_len(v->len, variant);
	char *out = sodium_malloc(cap);
	if (out == NULL)
		abort();
	sodium_bin2base64(out, cap, v->bytes, v->len, variant);
	size_t len = strlen(out);
	/* padding depends on what follows in a longer text: match without it */
	while (len > 0 && out[len - 1] == '=')
		len--;
	form_add(s, how, out, len);
	sodium_free(out);
}

static void add_hex(struct gw_secret *s, const struct kc_secret *v)
{
	size_t cap = v->len * 2 + 1;
	char *out = sodium_malloc(cap);
	if (out == NULL)
		abort();
	sodium_bin2hex(out, cap, v->bytes, v->len);
	form_add(s, "hex", out, v->len * 2);
	for (size_t i = 0; i < v->len * 2; i++)
		if (out[i] >= 'a' && out[i] <= 'f')
			out[i] = (char)(out[i] - 'a' + 'A');
	form_add(s, "hex", out, v->len * 2);
	sodium_free(out);
}

static bool unreserved(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~';
}

static void add_percent(struct gw_secret *s, const struct kc_secret *v)
{
	static const char digits[] = "0123456789ABCDEF";
	char *out = sodium_malloc(v->len * 3 + 1);
	if (out == NULL)
		abort();
	size_t n = 0;
	for (size_t i = 0; i < v->len; i++) {
		unsigned char c = v->bytes[i];
		if (unreserved(c)) {
			out[n++] = (char)c;
		} else {
			out[n++] = '%';
			out[n++] = digits[c >> 4];
			out[n++] = digits[c & 15];
		}
	}
	form_add(s, "percent", out, n);
	sodium_free(out);
}

/* As it stands inside a JSON string on a line (a quote, a backslash or a
 * control character is escaped there), where the line-level filter looks */
static void add_json(struct gw_secret *s, const struct kc_secret *v)
{
	char *out = sodium_malloc(v->len * 6 + 1);
	if (out == NULL)
		abort();
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
	form_add(s, "json", out, n);
	sodium_free(out);
}

static int collect(const char *name, const struct kc_secret *value, void *data, struct mg_err **err)
{
	(void)err;
	struct gw_secrets *all = data;
	all->v = xreallocarray(all->v, all->n + 1, sizeof(*all->v));
	struct gw_secret *s = &all->v[all->n++];
	memset(s, 0, sizeof(*s));
	s->name = xstrdup(name);
	form_add(s, "value", value->bytes, value->len);
	add_b64(s, value, sodium_base64_VARIANT_ORIGINAL, "base64");
	add_b64(s, value, sodium_base64_VARIANT_URLSAFE, "base64url");
	add_hex(s, value);
	add_percent(s, value);
	add_json(s, value);
	return 0;
}

static void secrets_free(struct gw_secrets *all)
{
	if (all == NULL)
		return;
	for (size_t i = 0; i < all->n; i++) {
		for (size_t k = 0; k < all->v[i].nforms; k++)
			sodium_free(all->v[i].forms[k].bytes);
		free(all->v[i].name);
	}
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

/* ---- what leaves ---------------------------------------------------------- */

static const struct gw_secret *find_in(const struct gw_secrets *all, const char *text, size_t len,
                                       const char **how)
{
	for (size_t i = 0; all != NULL && i < all->n; i++)
		for (size_t k = 0; k < all->v[i].nforms; k++)
			if (memmem(text, len, all->v[i].forms[k].bytes, all->v[i].forms[k].len) !=
			    NULL) {
				*how = all->v[i].forms[k].how;
				return &all->v[i];
			}
	return NULL;
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

static const struct gw_secret *scan_value(const struct gw_secrets *all, const struct json_value *v,
                                          const char **how)
{
	switch (v->kind) {
	case JSON_STRING:
		return find_in(all, v->u.str.ptr, v->u.str.len, how);
	case JSON_ARRAY:
		for (size_t i = 0; i < v->u.arr.len; i++) {
			const struct gw_secret *s = scan_value(all, v->u.arr.items[i], how);
			if (s != NULL)
				return s;
		}
		return NULL;
	case JSON_OBJECT:
		for (size_t i = 0; i < v->u.obj.len; i++) {
			const struct json_member *m = &v->u.obj.items[i];
			const struct gw_secret *s = find_in(all, m->key, m->keylen, how);
			if (s == NULL)
				s = scan_value(all, m->value, how);
			if (s != NULL)
				return s;
		}
		return NULL;
	case JSON_NULL:
	case JSON_BOOL:
	case JSON_NUMBER:
		break;
	}
	return NULL;
}

char *gw_secrets_check_leaving(const struct gw_server *srv, const struct json_value *args)
{
	const struct session *s = srv->sess;
	if (args == NULL || s->secrets == NULL)
		return NULL;
	const char *how = NULL;
	const struct gw_secret *found = scan_value(s->secrets, args, &how);
	if (found == NULL || may_carry(s, srv->cfg, found->name))
		return NULL;
	return xasprintf("refused: the arguments hold credential %s (its %s form), which is not "
	                 "bound for every host server %s can reach",
	                 found->name, how, srv->cfg->name);
}

/* ---- what returns ---------------------------------------------------------- */

/* Replace every form of every secret in text; NULL when nothing was found. */
static char *redact_text(const struct gw_secrets *all, const char *text, size_t len,
                         size_t *out_len)
{
	char *cur = NULL;
	size_t cur_len = len;
	const char *src = text;
	for (size_t i = 0; all != NULL && i < all->n; i++) {
		for (size_t k = 0; k < all->v[i].nforms; k++) {
			const struct secret_form *f = &all->v[i].forms[k];
			if (memmem(src, cur_len, f->bytes, f->len) == NULL)
				continue;
			cleanup_free char *mark = xasprintf("[redacted:%s]", all->v[i].name);
			size_t ml = strlen(mark);
			struct mg_buf b = MG_BUF_INIT((size_t)1 << 30);
			const char *p = src, *end = src + cur_len;
			const char *hit;
			while ((hit = memmem(p, (size_t)(end - p), f->bytes, f->len)) != NULL) {
				mg_buf_append(&b, p, (size_t)(hit - p), NULL);
				mg_buf_append(&b, mark, ml, NULL);
				p = hit + f->len;
			}
			mg_buf_append(&b, p, (size_t)(end - p), NULL);
			free(cur);
			cur = mg_buf_steal(&b, &cur_len);
			src = cur;
		}
	}
	if (cur != NULL)
		*out_len = cur_len;
	return cur;
}

size_t gw_secrets_redact(const struct session *s, struct json_value *v)
{
	if (s->secrets == NULL || v == NULL)
		return 0;
	size_t n = 0;
	switch (v->kind) {
	case JSON_STRING: {
		size_t len = 0;
		char *clean = redact_text(s->secrets, v->u.str.ptr, v->u.str.len, &len);
		if (clean != NULL) {
			sodium_memzero(v->u.str.ptr, v->u.str.len);
			free(v->u.str.ptr);
			v->u.str.ptr = clean;
			v->u.str.len = len;
			n++;
		}
		break;
	}
	case JSON_ARRAY:
		for (size_t i = 0; i < v->u.arr.len; i++)
			n += gw_secrets_redact(s, v->u.arr.items[i]);
		break;
	case JSON_OBJECT:
		for (size_t i = 0; i < v->u.obj.len; i++) {
			struct json_member *m = &v->u.obj.items[i];
			size_t len = 0;
			char *clean = redact_text(s->secrets, m->key, m->keylen, &len);
			if (clean != NULL) {
				free(m->key);
				m->key = clean;
				m->keylen = len;
				n++;
			}
			n += gw_secrets_redact(s, m->value);
		}
		break;
	case JSON_NULL:
	case JSON_BOOL:
	case JSON_NUMBER:
		break;
	}
	return n;
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
