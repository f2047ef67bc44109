/* What the runtime said that does not change between sessions, kept in
 * d->cache_dir (STATE/cache) so a session start does not ask again
 * (docs/2026-12-02-start-path.md): the platform's facts, keyed by what
 * would change them (platform_key.c); an image's configuration, keyed by
 * its digest.
 *
 * A kept answer is used only when it is exactly what this user wrote: a
 * file that is not private to the user (another owner, a mode open to
 * others, a link, a folder others may write) is refused with a warning, and
 * one that cannot be read, does not parse, or was kept under another key is
 * asked afresh and written again. Nothing kept is ever trusted more than
 * the runtime's own answer would be. */
#define _GNU_SOURCE
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/log.h"
#include "internal/base/xalloc.h"
#include "internal/container/container-internal.h"

/* A kept answer is small; anything larger is not one of ours */
#define CACHE_FILE_MAX (1u << 20)

static void sha256_hex(const void *data, size_t len, char hex[2 * crypto_hash_sha256_BYTES + 1])
{
	unsigned char h[crypto_hash_sha256_BYTES];
	crypto_hash_sha256(h, data, len);
	sodium_bin2hex(hex, 2 * crypto_hash_sha256_BYTES + 1, h, sizeof(h));
}

int ctr_cache_get(const struct ctr_driver *d, const char *name, const char *key,
                  struct json_value **body)
{
	*body = NULL;
	if (d->cache_dir == NULL)
		return 0;
	cleanup_free char *path = xasprintf("%s/%s", d->cache_dir, name);
	char *text = NULL;
	size_t len = 0;
	struct mg_err *err = NULL;
	if (mg_read_own_file(path, CACHE_FILE_MAX, 077, &text, &len, &err) < 0) {
		if (errno == EPERM || errno == ELOOP)
			/* someone else's, or open to others: never used */
			mg_warn("not using %s: %s; asking %s again", path, mg_err_msg(err),
			        d->name);
		mg_err_free(err);
		return 0;
	}
	struct json_value *v = NULL;
	int r = json_parse(text, len, NULL, &v, NULL);
	free(text);
	if (r < 0 || v->kind != JSON_OBJECT) {
		json_free(v);
		return 0;
	}
	const char *kept = json_get_string(v, "key");
	const struct json_value *b = json_get(v, "body");
	if (kept == NULL || strcmp(kept, key) != 0 || b == NULL) {
		json_free(v);
		return 0;
	}
	*body = json_copy(b);
	json_free(v);
	return 1;
}

void ctr_cache_put(const struct ctr_driver *d, const char *name, const char *key,
                   struct json_value *body)
{
	if (d->cache_dir == NULL) {
		json_free(body);
		return;
	}
	struct json_value *v = json_new_object();
	json_object_set(v, "key", json_new_string(key));
	json_object_set(v, "body", body);
	struct mg_buf text = MG_BUF_INIT(CACHE_FILE_MAX);
	struct mg_err *err = NULL;
	cleanup_free char *path = xasprintf("%s/%s", d->cache_dir, name);
	if (json_generate(v, &text, &err) == 0 && mg_mkdir_p(d->cache_dir, 0700, &err) == 0) {
		/* a refused file (another's, or open to others) is not kept's
		 * model: the new one is private whatever the old one was */
		char *old = NULL;
		size_t olen = 0;
		if (mg_read_own_file(path, CACHE_FILE_MAX, 077, &old, &olen, NULL) == 0)
			free(old);
		else if (errno != ENOENT)
			unlink(path);
		if (mg_write_file_atomic(path, text.data, text.len, 0600, &err) < 0)
			mg_info("cannot keep %s: %s", path, mg_err_msg(err));
	} else {
		mg_info("cannot keep %s: %s", path, mg_err_msg(err));
	}
	mg_err_free(err);
	mg_buf_free(&text);
	json_free(v);
}

/* ---- the platform ------------------------------------------------------- */

static struct json_value *platform_json(const struct ctr_platform *p)
{
	struct json_value *o = json_new_object();
	json_object_set(o, "rootless", json_new_bool(p->rootless));
	json_object_set(o, "cgroup", json_new_int(p->cgroup));
	struct json_value *u = json_new_object();
	for (unsigned b = 0; b < CFG_PROP_COUNT; b++)
		if (p->unenforced & (1u << b))
			json_object_set(u, cfg_property_name(1u << b),
			                json_new_string(p->why[b] != NULL ? p->why[b] : ""));
	json_object_set(o, "unenforced", u);
	return o;
}

/* 0 when v is what platform_json wrote; -1 for anything else */
static int platform_from_json(const struct json_value *v, struct ctr_platform *out)
{
	memset(out, 0, sizeof(*out));
	const struct json_value *rootless = json_get(v, "rootless");
	const struct json_value *u = json_get(v, "unenforced");
	int64_t cgroup = 0;
	if (v->kind != JSON_OBJECT || rootless == NULL || rootless->kind != JSON_BOOL ||
	    json_number_int64(json_get(v, "cgroup"), &cgroup) < 0 || cgroup < 0 || cgroup > 2 ||
	    u == NULL || u->kind != JSON_OBJECT)
		return -1;
	out->rootless = rootless->u.boolean;
	out->cgroup = (int)cgroup;
	for (size_t i = 0; i < u->u.obj.len; i++) {
		const struct json_member *m = &u->u.obj.items[i];
		unsigned bit = 0;
		for (unsigned b = 0; b < CFG_PROP_COUNT && bit == 0; b++)
			if (strcmp(m->key, cfg_property_name(1u << b)) == 0)
				bit = 1u << b;
		if (bit == 0 || m->value->kind != JSON_STRING || (out->unenforced & bit)) {
			ctr_platform_free(out);
			return -1;
		}
		out->unenforced |= bit;
		for (unsigned b = 0; b < CFG_PROP_COUNT; b++)
			if (bit == 1u << b)
				out->why[b] = xstrdup(m->value->u.str.ptr);
	}
	out->known = true;
	return 0;
}

int ctr_platform_get(const struct ctr_driver *d, struct ctr_platform *out, bool *kept,
                     struct mg_err **err)
{
	*kept = false;
	char key[2 * crypto_hash_sha256_BYTES + 1] = "";
	if (d->cache_dir != NULL && d->ops->platform_key != NULL) {
		struct mg_buf k = MG_BUF_INIT(4u << 20);
		if (d->ops->platform_key(d, &k) == 1)
			sha256_hex(k.data, k.len, key);
		mg_buf_free(&k);
	}
	cleanup_free char *name = xasprintf("platform-%s.json", d->name);
	struct json_value *body = NULL;
	if (key[0] != '\0' && ctr_cache_get(d, name, key, &body) == 1) {
		int r = platform_from_json(body, out);
		json_free(body);
		if (r == 0) {
			*kept = true;
			return 0;
		}
	}
	if (d->ops->platform(d, out, err) < 0)
		return -1;
	/* only an answer is kept: a failure is asked again next time */
	if (key[0] != '\0')
		ctr_cache_put(d, name, key, platform_json(out));
	return 0;
}

/* ---- an image's configuration ------------------------------------------ */

/* Named by the image, which pins its content by digest: what it declares
 * cannot change while the name stays */
static char *image_cache_name(const struct ctr_driver *d, const char *image, char *key,
                              size_t key_len)
{
	int n = snprintf(key, key_len, "%s %s", d->name, image);
	if (n < 0 || (size_t)n >= key_len)
		return NULL;
	char hex[2 * crypto_hash_sha256_BYTES + 1];
	sha256_hex(key, strlen(key), hex);
	hex[32] = '\0';
	return xasprintf("image-%s.json", hex);
}

struct json_value *ctr_cache_image_config(const struct ctr_driver *d, const char *image)
{
	if (strstr(image, "@sha256:") == NULL)
		return NULL;
	char key[1024];
	cleanup_free char *name = image_cache_name(d, image, key, sizeof(key));
	struct json_value *body = NULL;
	return name != NULL && ctr_cache_get(d, name, key, &body) == 1 ? body : NULL;
}

void ctr_cache_keep_image_config(const struct ctr_driver *d, const char *image,
                                 const struct json_value *config)
{
	if (strstr(image, "@sha256:") == NULL)
		return;
	char key[1024];
	cleanup_free char *name = image_cache_name(d, image, key, sizeof(key));
	if (name != NULL)
		ctr_cache_put(d, name, key, json_copy(config));
}
