/* A set of Debian packages as one layer, kept under DATA/debian:
 *
 *   apt/            mcpgate's apt: configuration, lists, the .debs (cache)
 *   locks/KEY.lock  what a set resolved to (KEY: its names joined by '+')
 *   layers/HEX-rN.* the layer built from the lock whose sha256 is HEX by the
 *                   rules of number N, and its digests (.json)
 *
 * One process at a time works here (flock on DATA/debian/.lock). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/xalloc.h"
#include "internal/debian/debian-internal.h"
#include "internal/json/json.h"
#include "internal/proc/proc.h"

#define LOCK_FILE_MAX (4u << 20)
/* what a layer holds is the lock's packages and these rules (what is left
 * out, what the scripts would have made): a change to them is a new
 * number, so a layer built by older rules is never taken for a newer one */
#define LAYER_RULES 2
#define KEY_MAX     160

static const struct {
	const char *machine, *dpkg;
} dpkg_arches[] = {
    {"amd64", "amd64"}, {"arm64/v8", "arm64"},  {"arm/v7", "armhf"},
    {"386", "i386"},    {"ppc64le", "ppc64el"}, {"s390x", "s390x"},
};

int deb_store_open(const char *data, const struct deb_archive *archive, struct deb_store *out,
                   struct mg_err **err)
{
	memset(out, 0, sizeof(*out));
	const struct deb_archive none = {0};
	if (archive == NULL)
		archive = &none;
	const char *arch = NULL;
	if (pack_machine_arch(&arch, err) < 0)
		return -1;
	for (size_t i = 0; i < sizeof(dpkg_arches) / sizeof(dpkg_arches[0]); i++)
		if (strcmp(dpkg_arches[i].machine, arch) == 0)
			out->arch = xstrdup(dpkg_arches[i].dpkg);
	if (out->arch == NULL)
		return mg_err_set(err, "Debian has no architecture for this machine (%s)", arch);
	out->apt_get = proc_find_in_path("apt-get", getenv("PATH"));
	if (out->apt_get == NULL)
		out->apt_get =
		    access("/usr/bin/apt-get", X_OK) == 0 ? xstrdup("/usr/bin/apt-get") : NULL;
	if (out->apt_get == NULL) {
		deb_store_free(out);
		return mg_err_set(err,
		                  "no apt-get on this machine: Debian packages in an image "
		                  "come from Debian's archive through apt (apt-get install apt "
		                  "debian-archive-keyring)");
	}
	out->dir = xasprintf("%s/debian", data);
	out->suite = xstrdup("bookworm");
	out->mirror = xstrdup(archive->mirror != NULL ? archive->mirror : DEB_DEFAULT_MIRROR);
	out->security =
	    xstrdup(archive->security != NULL ? archive->security : DEB_DEFAULT_SECURITY);
	out->keyring = xstrdup(archive->keyring != NULL ? archive->keyring : DEB_DEFAULT_KEYRING);
	if (access(out->keyring, R_OK) != 0) {
		int e = errno;
		mg_err_sys(err, e, "%s, the keys the archive is checked with (%s)", out->keyring,
		           archive->keyring != NULL ? "config.toml's [debian] keyring"
		                                    : "apt-get install debian-archive-keyring");
		deb_store_free(out);
		return -1;
	}
	return 0;
}

void deb_store_free(struct deb_store *s)
{
	if (s == NULL)
		return;
	free(s->dir);
	free(s->arch);
	free(s->suite);
	free(s->mirror);
	free(s->security);
	free(s->keyring);
	free(s->apt_get);
	memset(s, 0, sizeof(*s));
}

void deb_layer_free(struct deb_layer *l)
{
	if (l == NULL)
		return;
	deb_lock_free(&l->lock);
	free(l->lock_path);
	free(l->lock_hex);
	free(l->blob);
	memset(l, 0, sizeof(*l));
}

static char *hex_of(const void *data, size_t len)
{
	unsigned char sum[crypto_hash_sha256_BYTES];
	crypto_hash_sha256(sum, data, len);
	char *hex = xmalloc(65);
	sodium_bin2hex(hex, 65, sum, sizeof(sum));
	return hex;
}

/* the set's file name: its names joined, or their hash when that is long */
static char *set_key(const struct strv *set, bool base)
{
	if (base)
		return xstrdup("base");
	struct mg_buf b = MG_BUF_INIT(1 << 16);
	for (size_t i = 0; i < set->n; i++)
		mg_buf_printf(&b, NULL, "%s%s", i > 0 ? "+" : "", set->v[i]);
	char *key = mg_buf_steal(&b, NULL);
	if (strlen(key) > KEY_MAX) {
		char *h = hex_of(key, strlen(key));
		free(key);
		key = xasprintf("set-%s", h);
		free(h);
	}
	return key;
}

static bool same_set(const struct strv *a, const struct strv *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->v[i], b->v[i]) != 0)
			return false;
	return true;
}

/* The dpkg status apt resolves against: below's packages as installed (their
 * control stanzas, from the .debs themselves), or nothing */
static int write_status(const struct deb_store *s, const struct deb_layer *below, const char *path,
                        struct mg_err **err)
{
	struct mg_buf b = MG_BUF_INIT(64u << 20);
	int r = 0;
	for (size_t i = 0; below != NULL && r == 0 && i < below->lock.n; i++) {
		cleanup_free char *deb = deb_apt_cached(s, &below->lock.pkgs[i]);
		cleanup_free char *control = NULL;
		size_t len = 0;
		if (deb_read_control(deb, &control, &len, err) < 0) {
			r = -1;
			break;
		}
		mg_buf_append(&b, control, len, NULL);
		r = mg_buf_puts(&b, "\nStatus: install ok installed\n\n", err);
	}
	if (r == 0)
		r = mg_write_file_atomic(path, b.data != NULL ? b.data : "", b.len, 0600, err);
	mg_buf_free(&b);
	return r;
}

/* every .deb of l in the cache, as the lock says it is: what is missing
 * (or differs) is downloaded at its exact version and checked again */
static int ensure_debs(const struct deb_store *s, const char *status, struct deb_lock *l, bool fill,
                       struct mg_err **err)
{
	for (int round = 0; round < 2; round++) {
		size_t missing = 0;
		for (size_t i = 0; i < l->n; i++) {
			struct deb_pkg *p = &l->pkgs[i];
			cleanup_free char *deb = deb_apt_cached(s, p);
			char hex[65];
			if (deb_file_sha256(deb, hex, NULL) < 0) {
				missing++;
				continue;
			}
			if (fill && p->sha256 == NULL && round == 1) {
				/* as apt downloaded and checked it now */
				cleanup_free char *control = NULL;
				size_t len = 0;
				if (deb_read_control(deb, &control, &len, err) < 0)
					return -1;
				cleanup_free char *name = deb_control_field(control, "Package");
				cleanup_free char *version = deb_control_field(control, "Version");
				if (name == NULL || version == NULL || strcmp(name, p->name) != 0 ||
				    strcmp(version, p->version) != 0)
					return mg_err_set(err,
					                  "%s is not %s %s by its control file",
					                  deb, p->name, p->version);
				p->sha256 = xstrdup(hex);
			} else if (p->sha256 != NULL && strcmp(hex, p->sha256) != 0) {
				if (round == 1)
					return mg_err_set(err,
					                  "%s %s: the archive's .deb (sha256 %s) "
					                  "is not the one the "
					                  "lock pins (%s): the archive changed it; "
					                  "resolve the set "
					                  "again (mcpgate add --refresh-packages)",
					                  p->name, p->version, hex, p->sha256);
				unlink(deb);
				missing++;
			} else if (p->sha256 == NULL) {
				missing++;
			}
		}
		if (missing == 0)
			return 0;
		if (round == 1)
			return mg_err_set(err,
			                  "%zu package(s) of the set are still not in the cache "
			                  "after apt downloaded them",
			                  missing);
		if (deb_apt_download(s, status, l, err) < 0)
			return mg_err_wrap(
			    err, "the packages the lock pins (if the archive no longer has "
			         "a version, resolve the set again: mcpgate add "
			         "--refresh-packages)");
	}
	return 0;
}

/* The layer of the lock: its .debs unpacked in name order into a folder
 * of ours, what the maintainer scripts would have made, then packed */
static int build_layer(const struct deb_store *s, struct deb_layer *out, const char *info_path,
                       struct mg_err **err)
{
	cleanup_free char *stage_parent = xasprintf("%s/stage", s->dir);
	cleanup_free char *stage =
	    xasprintf("%s/%d-%s", stage_parent, (int)getpid(), out->lock_hex);
	if (mg_mkdir_p(stage_parent, 0700, err) < 0 || mg_remove_tree(stage, err) < 0)
		return -1;
	if (mkdir(stage, 0755) < 0)
		return mg_err_sys(err, errno, "making %s", stage);
	int rootfd = open(stage, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int r = rootfd < 0 ? mg_err_sys(err, errno, "%s", stage) : 0;
	if (!s->quiet && r == 0)
		fprintf(stderr,
		        "mcpgate: unpacking %zu Debian package(s) into a layer (no package "
		        "script runs)\n",
		        out->lock.n);
	for (size_t i = 0; r == 0 && i < out->lock.n; i++) {
		cleanup_free char *deb = deb_apt_cached(s, &out->lock.pkgs[i]);
		r = deb_unpack(deb, rootfd, err);
	}
	if (r == 0)
		r = deb_fixups(rootfd, &out->lock, err);
	if (rootfd >= 0)
		close(rootfd);
	cleanup_free char *add = xasprintf("%s:/", stage);
	const char *adds[] = {add};
	if (r == 0)
		r = pack_build_layer(adds, 1, 0, out->blob, &out->info, err);
	if (r == 0)
		r = pack_layer_info_save(info_path, &out->info, err);
	struct mg_err *rm = NULL;
	if (mg_remove_tree(stage, &rm) < 0 && r == 0)
		r = mg_err_set(err, "%s", mg_err_msg(rm));
	mg_err_free(rm);
	return r;
}

static int layer_locked(const struct deb_store *s, const struct strv *names,
                        const struct deb_layer *below, bool refresh, struct deb_layer *out,
                        struct mg_err **err)
{
	struct strv set = STRV_INIT;
	bool base = names == NULL;
	cleanup_free char *key = NULL, *locks = NULL, *layers = NULL, *status = NULL;
	cleanup_free char *text = NULL, *info_path = NULL;
	size_t len = 0;
	int r = -1;
	if (base) {
		size_t n = 0;
		while (deb_base_set[n] != NULL)
			n++;
		if (deb_set_normalise(deb_base_set, n, "the base set", &set, err) < 0)
			goto out;
	} else if (deb_set_normalise((const char *const *)names->v, names->n, "the set", &set,
	                             err) < 0) {
		goto out;
	}
	if (set.n == 0) {
		mg_err_set(err, "an empty set of packages has no layer");
		goto out;
	}
	key = set_key(&set, base);
	locks = xasprintf("%s/locks", s->dir);
	layers = xasprintf("%s/layers", s->dir);
	status = xasprintf("%s/apt/status-%s", s->dir, key);
	const char *below_hex = below != NULL ? below->lock_hex : "";
	out->lock_path = xasprintf("%s/%s.lock", locks, key);
	if (mg_mkdir_p(locks, 0700, err) < 0 || mg_mkdir_p(layers, 0700, err) < 0 ||
	    deb_apt_prepare(s, err) < 0 || write_status(s, below, status, err) < 0)
		goto out;

	/* a lock that does not read is an error, never replaced silently */
	bool have = false;
	if (!refresh && mg_read_file(out->lock_path, LOCK_FILE_MAX, &text, &len, NULL) == 0) {
		if (deb_lock_parse(text, len, out->lock_path, &out->lock, err) < 0) {
			mg_err_wrap(err,
			            "remove it, or give --refresh-packages, to resolve the set "
			            "again");
			goto out;
		}
		have = same_set(&out->lock.set, &set) && strcmp(out->lock.below, below_hex) == 0 &&
		       strcmp(out->lock.suite, s->suite) == 0 &&
		       strcmp(out->lock.arch, s->arch) == 0;
	}
	if (have) {
		if (ensure_debs(s, status, &out->lock, false, err) < 0)
			goto out;
	} else {
		free(text);
		text = NULL;
		deb_lock_free(&out->lock);
		for (size_t i = 0; i < set.n; i++)
			strv_push(&out->lock.set, set.v[i]);
		out->lock.suite = xstrdup(s->suite);
		out->lock.arch = xstrdup(s->arch);
		out->lock.below = xstrdup(below_hex);
		if (!s->quiet)
			fprintf(stderr, "mcpgate: resolving the Debian packages %s%s\n", key,
			        below != NULL ? " over the base" : "");
		if (deb_apt_update(s, err) < 0 ||
		    deb_apt_resolve(s, status, &set, &out->lock, err) < 0 ||
		    ensure_debs(s, status, &out->lock, true, err) < 0)
			goto out;
		text = deb_lock_render(&out->lock, &len);
		if (mg_write_file_atomic(out->lock_path, text, len, 0600, err) < 0)
			goto out;
	}
	out->lock_hex = hex_of(text, len);
	out->blob = xasprintf("%s/%s-r%d.tar.gz", layers, out->lock_hex, LAYER_RULES);
	info_path = xasprintf("%s/%s-r%d.json", layers, out->lock_hex, LAYER_RULES);
	if (pack_layer_info_load(info_path, &out->info) == 0 && access(out->blob, R_OK) == 0) {
		r = 0;
		goto out;
	}
	r = build_layer(s, out, info_path, err);
out:
	strv_free(&set);
	return r;
}

int deb_layer_get(const struct deb_store *s, const struct strv *names,
                  const struct deb_layer *below, bool refresh, struct deb_layer *out,
                  struct mg_err **err)
{
	memset(out, 0, sizeof(*out));
	if (mg_mkdir_p(s->dir, 0700, err) < 0)
		return -1;
	cleanup_free char *lock = xasprintf("%s/.lock", s->dir);
	int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return mg_err_sys(err, errno, "%s", lock);
	if (flock(fd, LOCK_EX) < 0) {
		int e = errno;
		close(fd);
		return mg_err_sys(err, e, "locking %s", lock);
	}
	int r = layer_locked(s, names, below, refresh, out, err);
	close(fd);
	if (r < 0) {
		deb_layer_free(out);
		return mg_err_wrap(err, "Debian packages");
	}
	return 0;
}
