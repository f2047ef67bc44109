#include "internal/mcp/manifest.h"

#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "internal/base/buf.h"
#include "internal/base/fs.h"
#include "internal/base/xalloc.h"

static const char *const pinned_fields[] = {"name",        "title",        "description",
                                            "inputSchema", "outputSchema", "annotations"};
#define NFIELDS (sizeof(pinned_fields) / sizeof(pinned_fields[0]))

static int by_name(const void *a, const void *b)
{
	const struct json_value *x = *(const struct json_value *const *)a;
	const struct json_value *y = *(const struct json_value *const *)b;
	return strcmp(json_get_string(x, "name"), json_get_string(y, "name"));
}

struct json_value *manifest_tool(const struct json_value *t)
{
	struct json_value *o = json_new_object();
	for (size_t f = 0; f < NFIELDS; f++) {
		const struct json_value *v = json_get(t, pinned_fields[f]);
		if (v != NULL)
			json_object_set(o, pinned_fields[f], json_copy(v));
	}
	return o;
}

struct json_value *manifest_of(const struct json_value *tools)
{
	struct json_value *m = json_new_array();
	if (tools == NULL || tools->kind != JSON_ARRAY)
		return m;
	for (size_t i = 0; i < tools->u.arr.len; i++) {
		const struct json_value *t = tools->u.arr.items[i];
		if (json_get_string(t, "name") == NULL)
			continue;
		json_array_push(m, manifest_tool(t));
	}
	if (m->u.arr.len > 1)
		qsort(m->u.arr.items, m->u.arr.len, sizeof(*m->u.arr.items), by_name);
	return m;
}

int manifest_hash(const struct json_value *tools, char out[MANIFEST_HASH_LEN], struct mg_err **err)
{
	struct json_value *m = manifest_of(tools);
	struct mg_buf canon = MG_BUF_INIT((size_t)256 << 20);
	int r = json_canonical(m, &canon, err);
	json_free(m);
	if (r < 0) {
		mg_buf_free(&canon);
		return mg_err_wrap(err, "hashing the manifest");
	}
	unsigned char digest[crypto_hash_sha256_BYTES];
	crypto_hash_sha256(digest, (const unsigned char *)mg_buf_str(&canon), canon.len);
	mg_buf_free(&canon);
	memcpy(out, "sha256:", 7);
	sodium_bin2hex(out + 7, MANIFEST_HASH_LEN - 7, digest, sizeof(digest));
	return 0;
}

static const struct json_value *find_tool(const struct json_value *tools, const char *name)
{
	for (size_t i = 0; i < tools->u.arr.len; i++)
		if (strcmp(json_get_string(tools->u.arr.items[i], "name"), name) == 0)
			return tools->u.arr.items[i];
	return NULL;
}

/* Two values are the same when their canonical forms are */
static int same_value(const struct json_value *a, const struct json_value *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	struct mg_buf x = MG_BUF_INIT((size_t)64 << 20), y = MG_BUF_INIT((size_t)64 << 20);
	int same = json_canonical(a, &x, NULL) == 0 && json_canonical(b, &y, NULL) == 0 &&
	           x.len == y.len && memcmp(mg_buf_str(&x), mg_buf_str(&y), x.len) == 0;
	mg_buf_free(&x);
	mg_buf_free(&y);
	return same;
}

size_t manifest_diff(const struct json_value *old_tools, const struct json_value *new_tools,
                     struct mg_buf *out)
{
	struct json_value *a = manifest_of(old_tools), *b = manifest_of(new_tools);
	size_t n = 0;
	for (size_t i = 0; i < b->u.arr.len; i++) {
		const char *name = json_get_string(b->u.arr.items[i], "name");
		const struct json_value *before = find_tool(a, name);
		if (before == NULL) {
			mg_buf_printf(out, NULL, "added %s\n", name);
			n++;
			continue;
		}
		for (size_t f = 1; f < NFIELDS; f++) {
			if (same_value(json_get(before, pinned_fields[f]),
			               json_get(b->u.arr.items[i], pinned_fields[f])))
				continue;
			mg_buf_printf(out, NULL, "changed %s: %s\n", name, pinned_fields[f]);
			n++;
		}
	}
	for (size_t i = 0; i < a->u.arr.len; i++) {
		const char *name = json_get_string(a->u.arr.items[i], "name");
		if (find_tool(b, name) == NULL) {
			mg_buf_printf(out, NULL, "removed %s\n", name);
			n++;
		}
	}
	json_free(a);
	json_free(b);
	return n;
}

bool manifest_tool_same(const struct json_value *old_tools, const struct json_value *new_tools,
                        const char *name)
{
	struct json_value *a = manifest_of(old_tools), *b = manifest_of(new_tools);
	const struct json_value *x = find_tool(a, name), *y = find_tool(b, name);
	bool same = x != NULL && y != NULL;
	for (size_t f = 1; same && f < NFIELDS; f++)
		same = same_value(json_get(x, pinned_fields[f]), json_get(y, pinned_fields[f]));
	json_free(a);
	json_free(b);
	return same;
}

/* ---- records ------------------------------------------------------------- */

/* A record holds a whole tools/list: as large as the lists read */
#define RECORD_MAX ((size_t)64 << 20)

char *manifest_record_path(const char *data_dir, const char *server, const char *hash)
{
	const char *hex = strncmp(hash, "sha256:", 7) == 0 ? hash + 7 : hash;
	return xasprintf("%s/manifests/%s/%s.json", data_dir, server, hex);
}

int manifest_record_save(const char *path, const char *server, const char *image, const char *hash,
                         const struct json_value *tools, struct mg_err **err)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash != NULL ? xstrndup(path, (size_t)(slash - path)) : xstrdup(".");
	int r = mg_mkdir_p(dir, 0700, err);
	free(dir);
	if (r < 0)
		return -1;
	struct json_value *rec = json_new_object();
	json_object_set(rec, "server", json_new_string(server));
	json_object_set(rec, "image", image != NULL ? json_new_string(image) : json_new_null());
	json_object_set(rec, "hash", json_new_string(hash));
	json_object_set(rec, "tools", json_copy(tools));
	struct mg_buf b = MG_BUF_INIT(RECORD_MAX);
	r = json_generate(rec, &b, err);
	json_free(rec);
	if (r == 0)
		r = mg_buf_putc(&b, '\n', err);
	if (r == 0)
		r = mg_write_file_atomic(path, b.data, b.len, 0600, err);
	mg_buf_free(&b);
	return r;
}

struct json_value *manifest_record_load(const char *path, struct mg_err **err)
{
	char *text = NULL;
	size_t len = 0;
	if (mg_read_file(path, RECORD_MAX, &text, &len, err) < 0) {
		mg_err_wrap(err, "%s", path);
		return NULL;
	}
	struct json_value *v = NULL;
	int r = json_parse(text, len, NULL, &v, err);
	free(text);
	if (r < 0) {
		mg_err_wrap(err, "%s", path);
		return NULL;
	}
	const struct json_value *tools = json_get(v, "tools");
	if (json_get_string(v, "hash") == NULL || tools == NULL || tools->kind != JSON_ARRAY) {
		json_free(v);
		mg_err_set(err, "%s is not a manifest record", path);
		return NULL;
	}
	return v;
}

struct json_value *manifest_approved_tools(const char *data_dir, const char *server,
                                           const char *pin, struct mg_err **err)
{
	char *path = manifest_record_path(data_dir, server, pin);
	struct json_value *rec = manifest_record_load(path, err);
	free(path);
	if (rec == NULL)
		return NULL;
	struct json_value *tools = json_copy(json_get(rec, "tools"));
	json_free(rec);
	char hash[MANIFEST_HASH_LEN];
	if (manifest_hash(tools, hash, err) < 0 || strcmp(hash, pin) != 0) {
		if (err != NULL && *err == NULL)
			mg_err_set(err, "its approved manifest's record hashes to %s, not %s", hash,
			           pin);
		json_free(tools);
		return NULL;
	}
	return tools;
}
