/* Package names, sets, and the lock that pins what a set resolved to. The
 * lock is JSON written in one fixed order, so one resolution gives one
 * text, and the text's sha256 names the layer built from it. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/xalloc.h"
#include "internal/debian/debian-internal.h"
#include "internal/json/json.h"

#define LOCK_FORMAT  1
#define NAME_MAX_LEN 100 /* as deb_name.c says */

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int deb_set_normalise(const char *const *names, size_t n, const char *what, struct strv *out,
                      struct mg_err **err)
{
	if (n > DEB_SET_MAX)
		return mg_err_set(err, "%s: %zu packages, at most %d", what, n, DEB_SET_MAX);
	struct strv tmp = STRV_INIT;
	for (size_t i = 0; i < n; i++) {
		if (!deb_name_valid(names[i])) {
			strv_free(&tmp);
			return mg_err_set(err,
			                  "%s \"%s\" is not a Debian package's name (lower-case "
			                  "letters, digits, + - and ., 2 to %d, starting with a "
			                  "letter or digit)",
			                  what, names[i], NAME_MAX_LEN);
		}
		strv_push(&tmp, names[i]);
	}
	if (tmp.n > 0)
		qsort(tmp.v, tmp.n, sizeof(tmp.v[0]), str_cmp);
	for (size_t i = 0; i < tmp.n; i++)
		if (i == 0 || strcmp(tmp.v[i], tmp.v[i - 1]) != 0)
			strv_push(out, tmp.v[i]);
	strv_free(&tmp);
	return 0;
}

void deb_lock_free(struct deb_lock *l)
{
	if (l == NULL)
		return;
	strv_free(&l->set);
	free(l->suite);
	free(l->arch);
	free(l->below);
	for (size_t i = 0; i < l->n; i++) {
		free(l->pkgs[i].name);
		free(l->pkgs[i].version);
		free(l->pkgs[i].arch);
		free(l->pkgs[i].sha256);
	}
	free(l->pkgs);
	memset(l, 0, sizeof(*l));
}

char *deb_lock_render(const struct deb_lock *l, size_t *len)
{
	struct json_value *doc = json_new_object();
	json_object_set(doc, "mcpgate_debian_lock", json_new_int(LOCK_FORMAT));
	struct json_value *set = json_new_array();
	for (size_t i = 0; i < l->set.n; i++)
		json_array_push(set, json_new_string(l->set.v[i]));
	json_object_set(doc, "set", set);
	json_object_set(doc, "suite", json_new_string(l->suite));
	json_object_set(doc, "arch", json_new_string(l->arch));
	json_object_set(doc, "below", json_new_string(l->below != NULL ? l->below : ""));
	struct json_value *pkgs = json_new_array();
	for (size_t i = 0; i < l->n; i++) {
		struct json_value *p = json_new_object();
		json_object_set(p, "name", json_new_string(l->pkgs[i].name));
		json_object_set(p, "version", json_new_string(l->pkgs[i].version));
		json_object_set(p, "arch", json_new_string(l->pkgs[i].arch));
		json_object_set(p, "sha256", json_new_string(l->pkgs[i].sha256));
		json_array_push(pkgs, p);
	}
	json_object_set(doc, "packages", pkgs);
	struct mg_buf b = MG_BUF_INIT(8u << 20);
	if (json_generate(doc, &b, NULL) < 0)
		abort(); /* every string here was checked to be UTF-8 */
	json_free(doc);
	mg_buf_putc(&b, '\n', NULL);
	*len = b.len;
	return mg_buf_steal(&b, NULL);
}

static bool hex64(const char *s)
{
	return s != NULL && strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64;
}

/* a version as dpkg takes it: [epoch:]upstream[-revision], of these bytes */
static bool version_ok(const char *v)
{
	return v != NULL && v[0] >= '0' && v[0] <= '9' && strlen(v) <= 200 &&
	       strspn(v, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.+-~:") ==
	           strlen(v);
}

static bool arch_ok(const char *a)
{
	return a != NULL && a[0] != '\0' && strlen(a) <= 32 &&
	       strspn(a, "abcdefghijklmnopqrstuvwxyz0123456789-") == strlen(a);
}

static int pkg_cmp(const void *a, const void *b)
{
	return strcmp(((const struct deb_pkg *)a)->name, ((const struct deb_pkg *)b)->name);
}

int deb_lock_parse(const char *text, size_t len, const char *path, struct deb_lock *out,
                   struct mg_err **err)
{
	memset(out, 0, sizeof(*out));
	struct json_value *doc = NULL;
	if (json_parse(text, len, NULL, &doc, err) < 0)
		return mg_err_wrap(err, "the lock %s", path);
	int r = -1;
	int64_t format = 0;
	const struct json_value *f = json_get(doc, "mcpgate_debian_lock");
	const struct json_value *set = json_get(doc, "set");
	const struct json_value *pkgs = json_get(doc, "packages");
	const char *suite = json_get_string(doc, "suite");
	const char *arch = json_get_string(doc, "arch");
	const char *below = json_get_string(doc, "below");
	if (doc->kind != JSON_OBJECT || f == NULL || json_number_int64(f, &format) < 0 ||
	    format != LOCK_FORMAT) {
		mg_err_set(err, "the lock %s is not an mcpgate Debian lock of format %d", path,
		           LOCK_FORMAT);
		goto out;
	}
	if (set == NULL || set->kind != JSON_ARRAY || pkgs == NULL || pkgs->kind != JSON_ARRAY ||
	    suite == NULL || !arch_ok(arch) || below == NULL ||
	    (below[0] != '\0' && !hex64(below)) || pkgs->u.arr.len == 0 ||
	    pkgs->u.arr.len > DEB_LOCK_MAX) {
		mg_err_set(err, "the lock %s lacks set, suite, arch, below or packages (1 to %d)",
		           path, DEB_LOCK_MAX);
		goto out;
	}
	for (size_t i = 0; i < set->u.arr.len; i++) {
		const struct json_value *s = set->u.arr.items[i];
		if (s->kind != JSON_STRING || !deb_name_valid(s->u.str.ptr)) {
			mg_err_set(err, "the lock %s: set entry %zu is not a package's name", path,
			           i + 1);
			goto out;
		}
		strv_push(&out->set, s->u.str.ptr);
	}
	out->suite = xstrdup(suite);
	out->arch = xstrdup(arch);
	out->below = xstrdup(below);
	out->pkgs = xcalloc(pkgs->u.arr.len, sizeof(out->pkgs[0]));
	for (size_t i = 0; i < pkgs->u.arr.len; i++) {
		const struct json_value *p = pkgs->u.arr.items[i];
		const char *name = json_get_string(p, "name");
		const char *version = json_get_string(p, "version");
		const char *parch = json_get_string(p, "arch");
		const char *sha = json_get_string(p, "sha256");
		if (!deb_name_valid(name) || !version_ok(version) || !arch_ok(parch) ||
		    !hex64(sha)) {
			mg_err_set(err,
			           "the lock %s: package %zu lacks a valid name, version, arch or "
			           "sha256",
			           path, i + 1);
			goto out;
		}
		out->pkgs[out->n++] =
		    (struct deb_pkg){xstrdup(name), xstrdup(version), xstrdup(parch), xstrdup(sha)};
		if (out->n > 1 && strcmp(out->pkgs[out->n - 2].name, name) >= 0) {
			mg_err_set(err,
			           "the lock %s: the packages are not sorted by name, once each",
			           path);
			goto out;
		}
	}
	r = 0;
out:
	json_free(doc);
	if (r < 0)
		deb_lock_free(out);
	return r;
}

void deb_lock_sort(struct deb_lock *l)
{
	if (l->n > 1)
		qsort(l->pkgs, l->n, sizeof(l->pkgs[0]), pkg_cmp);
}
