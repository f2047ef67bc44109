/* pack_build: the inputs become a finished tree; the layer goes to an
 * unlinked temporary file next to the output; then the JSON documents; then
 * the outer archive goes to a second temporary file that replaces the output
 * only once it is whole. Every JSON text is built in a fixed member order, so
 * the same inputs always give the same bytes and digests. */
#define _GNU_SOURCE /* mkostemp */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/num.h"
#include "internal/base/xalloc.h"
#include "internal/json/json.h"
#include "internal/pack/pack-internal.h"

#define MEDIA_INDEX    "application/vnd.oci.image.index.v1+json"
#define MEDIA_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define MEDIA_CONFIG   "application/vnd.oci.image.config.v1+json"
#define MEDIA_LAYER    "application/vnd.oci.image.layer.v1.tar+gzip"
/* containerd and docker name an image from the first, podman too; the OCI
 * image layout's own annotation holds only the tag */
#define ANNOTATION_NAME "io.containerd.image.name"
#define ANNOTATION_REF  "org.opencontainers.image.ref.name"

#define DEFAULT_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
/* 9999-12-31T23:59:59Z: the last time an RFC 3339 "created" can say */
#define MAX_MTIME  253402300799ull
#define DOC_MAX    (16u << 20)
#define COPY_BUF   (64u * 1024u)
#define TAR_BLOCK  10240
#define MAX_REF    255u
#define MAX_TAG    128u
#define MAX_UIDGID 4294967294ull

/* ---- names: architecture, reference -------------------------------------- */

static const struct {
	const char *machine; /* uname -m */
	const char *arch;    /* OCI: ARCH[/VARIANT] */
} machines[] = {
    {"x86_64", "amd64"},     {"amd64", "amd64"},
    {"aarch64", "arm64/v8"}, {"arm64", "arm64/v8"},
    {"armv7l", "arm/v7"},    {"armv6l", "arm/v6"},
    {"i386", "386"},         {"i486", "386"},
    {"i586", "386"},         {"i686", "386"},
    {"ppc64le", "ppc64le"},  {"s390x", "s390x"},
    {"riscv64", "riscv64"},  {"loongarch64", "loong64"},
};

static const char *const known_arches[] = {"amd64",    "arm64",   "arm",   "386",
                                           "ppc64le",  "ppc64",   "s390x", "riscv64",
                                           "mips64le", "loong64", NULL};

int pack_machine_arch(const char **arch, struct mg_err **err)
{
	struct utsname u;
	if (uname(&u) < 0)
		return mg_err_sys(err, errno, "uname");
	for (size_t i = 0; i < sizeof(machines) / sizeof(machines[0]); i++) {
		if (strcmp(u.machine, machines[i].machine) == 0) {
			*arch = machines[i].arch;
			return 0;
		}
	}
	return mg_err_set(err, "this machine is \"%s\", which pack cannot name: give --arch",
	                  u.machine);
}

static bool lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool word_char(char c)
{
	return lower_alnum(c) || (c >= 'A' && c <= 'Z') || c == '_';
}

/* ARCH[/VARIANT] into its parts (pointing into a copy the caller frees) */
static int check_arch(const char *s, char **arch, char **variant, struct mg_err **err)
{
	char *copy = xstrdup(s);
	char *slash = strchr(copy, '/');
	if (slash != NULL)
		*slash = '\0';
	bool known = false;
	for (size_t i = 0; known_arches[i] != NULL; i++)
		known = known || strcmp(copy, known_arches[i]) == 0;
	bool variant_ok = slash == NULL || (slash[1] != '\0' && strlen(slash + 1) <= 8);
	for (const char *p = slash != NULL ? slash + 1 : ""; *p != '\0'; p++)
		variant_ok = variant_ok && lower_alnum(*p);
	if (!known || !variant_ok) {
		free(copy);
		return mg_err_set(
		    err,
		    "--arch: \"%s\" is not ARCH[/VARIANT] with ARCH one of amd64, arm64, "
		    "arm, 386, ppc64le, ppc64, s390x, riscv64, mips64le, loong64",
		    s);
	}
	*arch = copy;
	*variant = slash != NULL ? slash + 1 : NULL;
	return 0;
}

/* path-component := [a-z0-9]+ (separator [a-z0-9]+)*, separator := "." | "_" | "__" | "-"+ */
static bool path_component_ok(const char *p, size_t n)
{
	if (n == 0 || !lower_alnum(p[0]) || !lower_alnum(p[n - 1]))
		return false;
	for (size_t i = 0; i < n;) {
		if (lower_alnum(p[i])) {
			i++;
			continue;
		}
		size_t j = i;
		while (j < n && !lower_alnum(p[j]))
			j++;
		size_t sep = j - i;
		bool dashes = true;
		for (size_t k = i; k < j; k++)
			dashes = dashes && p[k] == '-';
		if (!(dashes || (sep == 1 && (p[i] == '.' || p[i] == '_')) ||
		      (sep == 2 && p[i] == '_' && p[i + 1] == '_')))
			return false;
		i = j;
	}
	return true;
}

/* host[:port]: lower-case DNS labels joined by '.', a port 1-65535 */
static bool domain_ok(const char *p, size_t n)
{
	const char *colon = memchr(p, ':', n);
	size_t host = colon != NULL ? (size_t)(colon - p) : n;
	uint64_t port;
	if (colon != NULL &&
	    mg_parse_u64n(colon + 1, n - host - 1, 1, 65535, "port", &port, NULL) < 0)
		return false;
	size_t label = 0;
	for (size_t i = 0; i <= host; i++) {
		if (i == host || p[i] == '.') {
			if (label == 0 || label > 63 || p[i - label] == '-' || p[i - 1] == '-')
				return false;
			label = 0;
			continue;
		}
		if (!lower_alnum(p[i]) && p[i] != '-')
			return false;
		label++;
	}
	return true;
}

int pack_parse_ref(const char *ref, char **repo, char **tag, struct mg_err **err)
{
	if (strchr(ref, '@') != NULL)
		return mg_err_set(err,
		                  "--name: \"%s\" holds a digest: give NAME[:TAG]; the digest is "
		                  "what pack prints",
		                  ref);
	size_t len = strlen(ref);
	const char *colon = strrchr(ref, ':');
	if (colon != NULL && strchr(colon, '/') != NULL)
		colon = NULL;
	size_t name_len = colon != NULL ? (size_t)(colon - ref) : len;
	if (colon != NULL) {
		const char *t = colon + 1;
		size_t tlen = strlen(t);
		bool ok = tlen > 0 && tlen <= MAX_TAG && t[0] != '.' && t[0] != '-';
		for (size_t i = 0; ok && i < tlen; i++)
			ok = word_char(t[i]) || t[i] == '.' || t[i] == '-';
		if (!ok)
			return mg_err_set(err,
			                  "--name: the tag \"%s\" is not 1 to %u of [A-Za-z0-9_.-] "
			                  "starting with a letter, digit or '_'",
			                  t, MAX_TAG);
	}
	if (name_len == 0 || name_len > MAX_REF)
		return mg_err_set(err, "--name: \"%s\" is not a name of 1 to %u characters", ref,
		                  MAX_REF);
	for (size_t i = 0; i < name_len; i++)
		if (ref[i] >= 'A' && ref[i] <= 'Z')
			return mg_err_set(err,
			                  "--name: \"%.*s\" has upper case, which image names "
			                  "cannot",
			                  (int)name_len, ref);
	/* the first of several components is a registry when it holds a '.' or
	 * a ':' or is localhost (as mcp.toml's image reads it) */
	const char *p = ref, *end = ref + name_len;
	const char *slash = memchr(p, '/', name_len);
	if (slash != NULL) {
		size_t n = (size_t)(slash - p);
		bool is_domain = memchr(p, '.', n) != NULL || memchr(p, ':', n) != NULL ||
		                 (n == 9 && memcmp(p, "localhost", 9) == 0);
		if (is_domain) {
			if (!domain_ok(p, n))
				return mg_err_set(
				    err,
				    "--name: \"%.*s\" is not a registry: lower-case DNS "
				    "labels and an optional :PORT",
				    (int)n, p);
			p = slash + 1;
		}
	}
	while (p <= end) {
		const char *q = memchr(p, '/', (size_t)(end - p));
		if (q == NULL)
			q = end;
		if (!path_component_ok(p, (size_t)(q - p)))
			return mg_err_set(
			    err,
			    "--name: \"%.*s\" in \"%s\" is not lower-case letters and "
			    "digits joined by '.', '_', '__' or dashes",
			    (int)(q - p), p, ref);
		p = q + 1;
	}
	*repo = xstrndup(ref, name_len);
	*tag = xstrdup(colon != NULL ? colon + 1 : "latest");
	return 0;
}

int pack_parse_entrypoint(const char *json, struct strv *out, struct mg_err **err)
{
	struct json_value *v = NULL;
	if (json_parse(json, strlen(json), NULL, &v, err) < 0)
		return mg_err_wrap(err, "--entrypoint is not JSON");
	int r = 0;
	if (v->kind != JSON_ARRAY || v->u.arr.len == 0) {
		r = mg_err_set(err, "--entrypoint: expected a JSON array of one or more strings, "
		                    "like [\"/server\",\"--stdio\"]");
		goto out;
	}
	for (size_t i = 0; i < v->u.arr.len; i++) {
		const struct json_value *s = v->u.arr.items[i];
		if (s->kind != JSON_STRING) {
			r = mg_err_set(err, "--entrypoint: element %zu is not a string", i);
			goto out;
		}
		if (strlen(s->u.str.ptr) != s->u.str.len) {
			r = mg_err_set(err, "--entrypoint: element %zu holds a NUL character", i);
			goto out;
		}
	}
	if (v->u.arr.items[0]->u.str.len == 0) {
		r = mg_err_set(err, "--entrypoint: the program (element 0) is empty");
		goto out;
	}
	for (size_t i = 0; i < v->u.arr.len; i++)
		strv_push(out, v->u.arr.items[i]->u.str.ptr);
out:
	json_free(v);
	return r;
}

void pack_result_free(struct pack_result *r)
{
	if (r == NULL)
		return;
	strv_free(&r->warnings);
	free(r->manifest);
	r->manifest = NULL;
}

/* ---- the image configuration --------------------------------------------- */

struct image_conf {
	struct strv entrypoint;
	struct strv env;
	struct json_value *labels; /* object, or NULL when none */
	char *user;                /* NULL when none */
	char *workdir;             /* "/..." */
	char *workdir_image;       /* its tree form ("" for "/") */
	char *arch, *variant;      /* variant points into arch's allocation */
	char *repo, *tag;          /* NULL without a name */
	char *binary_dest;         /* the binary's tree form, NULL without one */
};

static void image_conf_free(struct image_conf *c)
{
	strv_free(&c->entrypoint);
	strv_free(&c->env);
	json_free(c->labels);
	free(c->user);
	free(c->workdir);
	free(c->workdir_image);
	free(c->arch);
	free(c->repo);
	free(c->tag);
	free(c->binary_dest);
}

static bool env_name_ok(const char *s, size_t n)
{
	if (n == 0 || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!word_char(s[i]))
			return false;
	return true;
}

static void env_set(struct strv *env, const char *var, size_t name_len)
{
	for (size_t i = 0; i < env->n; i++) {
		if (strncmp(env->v[i], var, name_len + 1) == 0) {
			free(env->v[i]);
			env->v[i] = xstrdup(var);
			return;
		}
	}
	strv_push(env, var);
}

static int parse_user(const char *s, char **out, struct mg_err **err)
{
	const char *colon = strchr(s, ':');
	uint64_t uid, gid;
	if (mg_parse_u64n(s, colon != NULL ? (size_t)(colon - s) : strlen(s), 0, MAX_UIDGID,
	                  "--user UID", &uid, err) < 0)
		return mg_err_wrap(err,
		                   "--user takes numbers, UID or UID:GID (an image from pack has "
		                   "no /etc/passwd)");
	if (colon == NULL) {
		*out = xasprintf("%llu", (unsigned long long)uid);
		return 0;
	}
	if (mg_parse_u64(colon + 1, 0, MAX_UIDGID, "--user GID", &gid, err) < 0)
		return mg_err_wrap(err,
		                   "--user takes numbers, UID or UID:GID (an image from pack has "
		                   "no /etc/passwd)");
	*out = xasprintf("%llu:%llu", (unsigned long long)uid, (unsigned long long)gid);
	return 0;
}

static int image_conf_init(const struct pack_spec *spec, struct image_conf *c, struct mg_err **err)
{
	const char *arch = spec->arch;
	if (arch == NULL && pack_machine_arch(&arch, err) < 0)
		return -1;
	if (check_arch(arch, &c->arch, &c->variant, err) < 0)
		return -1;
	if (spec->name != NULL && pack_parse_ref(spec->name, &c->repo, &c->tag, err) < 0)
		return -1;
	if (spec->binary != NULL) {
		const char *dest = spec->binary_dest;
		cleanup_free char *fallback = NULL;
		if (dest == NULL) {
			const char *base = strrchr(spec->binary, '/');
			base = base != NULL ? base + 1 : spec->binary;
			fallback = xasprintf("/%s", base);
			dest = fallback;
		}
		if (pack_image_path(dest, "--path-in-image", &c->binary_dest, err) < 0)
			return -1;
		if (c->binary_dest[0] == '\0')
			return mg_err_set(
			    err, "--path-in-image: \"%s\" is the root folder, not a file", dest);
	} else if (spec->binary_dest != NULL) {
		return mg_err_set(err, "--path-in-image places --binary, and there is none");
	}
	if (pack_image_path(spec->workdir != NULL ? spec->workdir : "/", "--workdir",
	                    &c->workdir_image, err) < 0)
		return -1;
	c->workdir = xasprintf("/%s", c->workdir_image);

	for (size_t i = 0; i < spec->n_entrypoint; i++)
		strv_push(&c->entrypoint, spec->entrypoint[i]);
	if (spec->n_entrypoint == 0 && c->binary_dest != NULL)
		strv_pushf(&c->entrypoint, "/%s", c->binary_dest);
	if (c->entrypoint.n > 0 && c->entrypoint.v[0][0] == '\0')
		return mg_err_set(err, "--entrypoint: the program is empty");
	if (c->entrypoint.n == 0 && spec->n_entrypoint_args > 0)
		return mg_err_set(err, "--entrypoint-arg needs a program first: --binary or "
		                       "--entrypoint");
	for (size_t i = 0; i < spec->n_entrypoint_args; i++)
		strv_push(&c->entrypoint, spec->entrypoint_args[i]);

	bool has_path = false;
	for (size_t i = 0; i < spec->n_env; i++) {
		const char *eq = strchr(spec->env[i], '=');
		size_t n = eq != NULL ? (size_t)(eq - spec->env[i]) : 0;
		if (eq == NULL || !env_name_ok(spec->env[i], n))
			return mg_err_set(err,
			                  "--env: \"%s\" is not NAME=VALUE with NAME of letters, "
			                  "digits and '_' (not starting with a digit)",
			                  spec->env[i]);
		has_path = has_path || (n == 4 && memcmp(spec->env[i], "PATH", 4) == 0);
	}
	if (!has_path)
		strv_push(&c->env, DEFAULT_PATH);
	for (size_t i = 0; i < spec->n_env; i++)
		env_set(&c->env, spec->env[i], (size_t)(strchr(spec->env[i], '=') - spec->env[i]));

	for (size_t i = 0; i < spec->n_labels; i++) {
		const char *eq = strchr(spec->labels[i], '=');
		if (eq == NULL || eq == spec->labels[i])
			return mg_err_set(err, "--label: \"%s\" is not KEY=VALUE", spec->labels[i]);
		if (c->labels == NULL)
			c->labels = json_new_object();
		cleanup_free char *key = xstrndup(spec->labels[i], (size_t)(eq - spec->labels[i]));
		json_object_set(c->labels, key, json_new_string(eq + 1));
	}
	if (spec->user != NULL && parse_user(spec->user, &c->user, err) < 0)
		return -1;
	return 0;
}

static struct json_value *string_array(const struct strv *s)
{
	struct json_value *a = json_new_array();
	for (size_t i = 0; i < s->n; i++)
		json_array_push(a, json_new_string(s->v[i]));
	return a;
}

static struct json_value *descriptor(const char *media, const char *digest, uint64_t size)
{
	struct json_value *d = json_new_object();
	json_object_set(d, "mediaType", json_new_string(media));
	json_object_set(d, "digest", json_new_string(digest));
	json_object_set(d, "size", json_new_int((int64_t)size));
	return d;
}

static int render(struct json_value *v, struct mg_buf *out, struct mg_err **err)
{
	int r = json_generate(v, out, err);
	json_free(v);
	return r;
}

/* The image's layers, bottom first: the lower ones (when given), then the top */
struct layers {
	size_t n;
	struct pack_layer_info info[PACK_MAX_LAYERS];
	int fd[PACK_MAX_LAYERS];
};

static int config_json(const struct image_conf *c, uint64_t mtime, const struct layers *l,
                       struct mg_buf *out, struct mg_err **err)
{
	time_t t = (time_t)mtime;
	struct tm tm;
	char created[32];
	if (gmtime_r(&t, &tm) == NULL ||
	    strftime(created, sizeof(created), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		return mg_err_set(err, "the time %llu cannot be written as a date",
		                  (unsigned long long)mtime);
	struct json_value *cfg = json_new_object();
	if (c->user != NULL)
		json_object_set(cfg, "User", json_new_string(c->user));
	json_object_set(cfg, "Env", string_array(&c->env));
	if (c->entrypoint.n > 0)
		json_object_set(cfg, "Entrypoint", string_array(&c->entrypoint));
	json_object_set(cfg, "WorkingDir", json_new_string(c->workdir));
	if (c->labels != NULL)
		json_object_set(cfg, "Labels", json_copy(c->labels));

	struct json_value *rootfs = json_new_object();
	json_object_set(rootfs, "type", json_new_string("layers"));
	struct json_value *diff_ids = json_new_array();
	for (size_t i = 0; i < l->n; i++)
		json_array_push(diff_ids, json_new_string(l->info[i].diff_id));
	json_object_set(rootfs, "diff_ids", diff_ids);

	struct json_value *doc = json_new_object();
	json_object_set(doc, "created", json_new_string(created));
	json_object_set(doc, "architecture", json_new_string(c->arch));
	if (c->variant != NULL)
		json_object_set(doc, "variant", json_new_string(c->variant));
	json_object_set(doc, "os", json_new_string("linux"));
	json_object_set(doc, "config", cfg);
	json_object_set(doc, "rootfs", rootfs);
	return render(doc, out, err);
}

static int manifest_json(const char *config_digest, uint64_t config_size, const struct layers *l,
                         struct mg_buf *out, struct mg_err **err)
{
	struct json_value *doc = json_new_object();
	json_object_set(doc, "schemaVersion", json_new_int(2));
	json_object_set(doc, "mediaType", json_new_string(MEDIA_MANIFEST));
	json_object_set(doc, "config", descriptor(MEDIA_CONFIG, config_digest, config_size));
	struct json_value *layers = json_new_array();
	for (size_t i = 0; i < l->n; i++)
		json_array_push(layers,
		                descriptor(MEDIA_LAYER, l->info[i].digest, l->info[i].size));
	json_object_set(doc, "layers", layers);
	return render(doc, out, err);
}

static int index_json(const struct image_conf *c, const char *manifest_digest,
                      uint64_t manifest_size, struct mg_buf *out, struct mg_err **err)
{
	struct json_value *m = descriptor(MEDIA_MANIFEST, manifest_digest, manifest_size);
	if (c->repo != NULL) {
		struct json_value *a = json_new_object();
		cleanup_free char *full = xasprintf("%s:%s", c->repo, c->tag);
		json_object_set(a, ANNOTATION_NAME, json_new_string(full));
		json_object_set(a, ANNOTATION_REF, json_new_string(c->tag));
		json_object_set(m, "annotations", a);
	}
	struct json_value *manifests = json_new_array();
	json_array_push(manifests, m);
	struct json_value *doc = json_new_object();
	json_object_set(doc, "schemaVersion", json_new_int(2));
	json_object_set(doc, "mediaType", json_new_string(MEDIA_INDEX));
	json_object_set(doc, "manifests", manifests);
	return render(doc, out, err);
}

/* docker-archive's manifest.json: docker before 25 loads only this */
static int docker_manifest_json(const struct image_conf *c, const char *config_digest,
                                const struct layers *l, struct mg_buf *out, struct mg_err **err)
{
	struct json_value *e = json_new_object();
	cleanup_free char *config = xasprintf("blobs/sha256/%s", config_digest + 7);
	json_object_set(e, "Config", json_new_string(config));
	struct json_value *tags = json_new_array();
	if (c->repo != NULL) {
		cleanup_free char *full = xasprintf("%s:%s", c->repo, c->tag);
		json_array_push(tags, json_new_string(full));
	}
	json_object_set(e, "RepoTags", tags);
	struct json_value *layers = json_new_array();
	for (size_t i = 0; i < l->n; i++) {
		cleanup_free char *layer = xasprintf("blobs/sha256/%s", l->info[i].digest + 7);
		json_array_push(layers, json_new_string(layer));
	}
	json_object_set(e, "Layers", layers);
	struct json_value *doc = json_new_array();
	json_array_push(doc, e);
	return render(doc, out, err);
}

static void digest_of(const struct mg_buf *b, char out[PACK_DIGEST_LEN + 1])
{
	crypto_hash_sha256_state st;
	crypto_hash_sha256_init(&st);
	crypto_hash_sha256_update(&st, (const unsigned char *)mg_buf_str(b), b->len);
	pack_digest_final(&st, out);
}

/* ---- the outer archive ---------------------------------------------------- */

struct out_sink {
	int fd;
	uint64_t size;
	int write_errno;
};

la_ssize_t pack_write_fd(struct archive *a, int fd, int *write_errno, const void *buf, size_t len,
                         const char *what)
{
	const char *p = buf;
	size_t left = len;
	while (left > 0) {
		ssize_t w = write(fd, p, left);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			*write_errno = errno;
			archive_set_error(a, errno, "%s", what);
			return -1;
		}
		p += w;
		left -= (size_t)w;
	}
	return (la_ssize_t)len;
}

static la_ssize_t out_write(struct archive *a, void *data, const void *buf, size_t len)
{
	struct out_sink *s = data;
	la_ssize_t w = pack_write_fd(a, s->fd, &s->write_errno, buf, len, "write");
	if (w > 0)
		s->size += len;
	return w;
}

static int out_fail(const struct out_sink *s, struct archive *a, const char *what,
                    struct mg_err **err)
{
	if (s->write_errno != 0)
		return mg_err_sys(err, s->write_errno, "writing %s", what);
	const char *why = archive_error_string(a);
	return mg_err_set(err, "writing %s: %s", what, why != NULL ? why : "libarchive failed");
}

static int out_header(struct archive *a, const struct out_sink *s, const char *name, bool dir,
                      uint64_t size, uint64_t mtime, struct mg_err **err)
{
	struct archive_entry *e = archive_entry_new();
	if (e == NULL)
		abort();
	archive_entry_set_pathname(e, name);
	archive_entry_set_filetype(e, dir ? AE_IFDIR : AE_IFREG);
	archive_entry_set_perm(e, dir ? 0755 : 0644);
	archive_entry_set_uid(e, 0);
	archive_entry_set_gid(e, 0);
	archive_entry_set_mtime(e, (time_t)mtime, 0);
	archive_entry_set_size(e, (la_int64_t)size);
	int r = archive_write_header(a, e);
	archive_entry_free(e);
	if (r != ARCHIVE_OK)
		return out_fail(s, a, name, err);
	return 0;
}

static int out_bytes(struct archive *a, const struct out_sink *s, const char *name,
                     const struct mg_buf *b, uint64_t mtime, struct mg_err **err)
{
	if (out_header(a, s, name, false, b->len, mtime, err) < 0)
		return -1;
	la_ssize_t w = archive_write_data(a, mg_buf_str(b), b->len);
	if (w < 0 || (size_t)w != b->len)
		return out_fail(s, a, name, err);
	return 0;
}

static int out_layer(struct archive *a, const struct out_sink *s, const char *name, int fd,
                     uint64_t size, uint64_t mtime, struct mg_err **err)
{
	if (lseek(fd, 0, SEEK_SET) < 0)
		return mg_err_sys(err, errno, "rewinding the layer");
	if (out_header(a, s, name, false, size, mtime, err) < 0)
		return -1;
	cleanup_free char *buf = xmalloc(COPY_BUF);
	uint64_t left = size;
	while (left > 0) {
		ssize_t n = read(fd, buf, left < COPY_BUF ? (size_t)left : COPY_BUF);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return mg_err_sys(err, errno, "reading the layer back");
		if (n == 0)
			return mg_err_set(err, "the layer is shorter than it was written");
		la_ssize_t w = archive_write_data(a, buf, (size_t)n);
		if (w < 0 || w != n)
			return out_fail(s, a, name, err);
		left -= (uint64_t)n;
	}
	return 0;
}

struct blob {
	const char *digest;
	const struct mg_buf *bytes; /* NULL: a layer, from its file */
	int fd;
	uint64_t size;
};

static int blob_cmp(const void *a, const void *b)
{
	return strcmp(((const struct blob *)a)->digest, ((const struct blob *)b)->digest);
}

struct docs {
	struct mg_buf config, manifest, index, docker, layout;
	char config_digest[PACK_DIGEST_LEN + 1];
	char manifest_digest[PACK_DIGEST_LEN + 1];
};

/* Entries in byte order of their names, like the layer's */
static int write_outer(int fd, const struct docs *d, const struct layers *l, uint64_t mtime,
                       uint64_t *size, struct mg_err **err)
{
	struct out_sink s = {.fd = fd};
	struct archive *a = archive_write_new();
	if (a == NULL)
		abort();
	int r = -1;
	if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
	    archive_write_add_filter_none(a) != ARCHIVE_OK ||
	    archive_write_set_bytes_per_block(a, TAR_BLOCK) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK ||
	    archive_write_open(a, &s, NULL, out_write, NULL) != ARCHIVE_OK) {
		out_fail(&s, a, "the archive", err);
		goto out;
	}
	struct blob blobs[PACK_MAX_LAYERS + 2] = {{d->config_digest, &d->config, -1, 0},
	                                          {d->manifest_digest, &d->manifest, -1, 0}};
	size_t nb = 2;
	for (size_t i = 0; i < l->n; i++) {
		/* two identical layers (an empty one over an empty one) are one blob */
		bool seen = false;
		for (size_t k = 0; k < i; k++)
			seen = seen || strcmp(l->info[i].digest, l->info[k].digest) == 0;
		if (!seen)
			blobs[nb++] =
			    (struct blob){l->info[i].digest, NULL, l->fd[i], l->info[i].size};
	}
	qsort(blobs, nb, sizeof(blobs[0]), blob_cmp);
	if (out_header(a, &s, "blobs/", true, 0, mtime, err) < 0 ||
	    out_header(a, &s, "blobs/sha256/", true, 0, mtime, err) < 0)
		goto out;
	for (size_t i = 0; i < nb; i++) {
		char name[sizeof("blobs/sha256/") + PACK_DIGEST_LEN];
		int n = snprintf(name, sizeof(name), "blobs/sha256/%s", blobs[i].digest + 7);
		if (n < 0 || (size_t)n >= sizeof(name))
			abort();
		int w = blobs[i].bytes != NULL
		            ? out_bytes(a, &s, name, blobs[i].bytes, mtime, err)
		            : out_layer(a, &s, name, blobs[i].fd, blobs[i].size, mtime, err);
		if (w < 0)
			goto out;
	}
	if (out_bytes(a, &s, "index.json", &d->index, mtime, err) < 0 ||
	    out_bytes(a, &s, "manifest.json", &d->docker, mtime, err) < 0 ||
	    out_bytes(a, &s, "oci-layout", &d->layout, mtime, err) < 0)
		goto out;
	if (archive_write_close(a) != ARCHIVE_OK) {
		out_fail(&s, a, "the end of the archive", err);
		goto out;
	}
	*size = s.size;
	r = 0;
out:
	archive_write_free(a);
	return r;
}

/* ---- the whole ------------------------------------------------------------ */

/* The output's folder, resolved; NULL when it cannot be (writing there then
 * fails with its own message) */
static char *output_dir(const char *output)
{
	cleanup_free char *copy = xstrdup(output);
	char *slash = strrchr(copy, '/');
	if (slash == NULL)
		return realpath(".", NULL);
	if (slash == copy)
		return realpath("/", NULL);
	*slash = '\0';
	return realpath(copy, NULL);
}

/* An archive written inside a folder that is packed would be packed into the
 * next archive: the same command would give another digest each time. */
static int refuse_output_inside(const char *out_dir, const char *output, const char *src,
                                const char *what, struct mg_err **err)
{
	cleanup_free char *real = out_dir != NULL ? realpath(src, NULL) : NULL;
	if (real == NULL)
		return 0;
	size_t n = strlen(real);
	bool inside = strcmp(real, "/") == 0 ||
	              (strncmp(out_dir, real, n) == 0 && (out_dir[n] == '\0' || out_dir[n] == '/'));
	if (inside)
		return mg_err_set(err,
		                  "--output %s is inside %s %s, which is packed: write it "
		                  "elsewhere",
		                  output, what, src);
	return 0;
}

/* Each "SRC:DEST" of adds into t; opt names them in messages */
static int add_all(const struct pack_spec *spec, const char *out_dir, const char *const *adds,
                   size_t n, const char *opt, struct pack_tree *t, struct mg_err **err)
{
	for (size_t i = 0; i < n; i++) {
		const char *a = adds[i];
		const char *sep = NULL;
		for (const char *p = a; (p = strchr(p, ':')) != NULL; p++)
			if (p[1] == '/')
				sep = p;
		if (sep == NULL || sep == a)
			return mg_err_set(err, "%s: \"%s\" is not SRC:DEST with an absolute DEST",
			                  opt, a);
		cleanup_free char *src = xstrndup(a, (size_t)(sep - a));
		if (refuse_output_inside(out_dir, spec->output, src, opt, err) < 0)
			return -1;
		if (pack_tree_add_path(t, src, sep + 1, err) < 0)
			return mg_err_wrap(err, "%s %s", opt, a);
	}
	return 0;
}

static int build_tree(const struct pack_spec *spec, const struct image_conf *c, struct pack_tree *t,
                      struct mg_err **err)
{
	cleanup_free char *out_dir = output_dir(spec->output);
	if (spec->folder != NULL) {
		struct stat st;
		if (stat(spec->folder, &st) < 0)
			return mg_err_sys(err, errno, "--folder %s", spec->folder);
		if (!S_ISDIR(st.st_mode))
			return mg_err_set(err, "--folder %s is not a folder", spec->folder);
		if (refuse_output_inside(out_dir, spec->output, spec->folder, "--folder", err) <
		        0 ||
		    pack_tree_add_path(t, spec->folder, "/", err) < 0)
			return -1;
	}
	if (spec->binary != NULL) {
		cleanup_free char *dest = xasprintf("/%s", c->binary_dest);
		if (pack_tree_add_binary(t, spec->binary, dest, err) < 0)
			return mg_err_wrap(err, "--binary");
	}
	if (add_all(spec, out_dir, spec->adds, spec->n_adds, "--add", t, err) < 0)
		return -1;
	pack_tree_add_implied_dir(t, c->workdir_image, spec->workdir_mode);
	return pack_tree_finish(t, err);
}

/* A lower layer of files: adds alone */
static int build_lower(const struct pack_spec *spec, const char *const *adds, size_t n,
                       struct pack_tree *t, struct mg_err **err)
{
	cleanup_free char *out_dir = output_dir(spec->output);
	if (add_all(spec, out_dir, adds, n, "--base-add", t, err) < 0)
		return -1;
	return pack_tree_finish(t, err);
}

/* path (an image path's tree form) in the top layer or a lower one of files;
 * a layer built before is not looked into */
static bool in_image(const struct pack_tree *t, const struct pack_tree *lower, size_t n_lower,
                     const char *path)
{
	if (pack_tree_find(t, path) != NULL)
		return true;
	for (size_t i = 0; i < n_lower; i++)
		if (pack_tree_find(&lower[i], path) != NULL)
			return true;
	return false;
}

static void check_startable(const struct pack_spec *spec, const struct image_conf *c,
                            const struct pack_tree *t, const struct pack_tree *lower,
                            size_t n_lower, bool blobs, struct pack_result *out)
{
	if (spec->binary != NULL) {
		struct pack_elf elf;
		if (pack_elf_inspect(spec->binary, &elf, NULL) == 0 && elf.is_elf) {
			if (elf.arch[0] != '\0' && strcmp(elf.arch, c->arch) != 0)
				strv_pushf(&out->warnings,
				           "%s is built for %s, but the image says %s (see --arch)",
				           spec->binary, elf.arch, c->arch);
			cleanup_free char *interp = NULL;
			if (elf.interp[0] != '\0' &&
			    (pack_image_path(elf.interp, "PT_INTERP", &interp, NULL) < 0 ||
			     (!blobs && !in_image(t, lower, n_lower, interp))))
				strv_pushf(
				    &out->warnings,
				    "%s is dynamically linked and the image has no %s: add it "
				    "and the libraries `ldd %s` lists (docs/packing.md)",
				    spec->binary, elf.interp, spec->binary);
		}
	}
	if (c->entrypoint.n == 0) {
		strv_push(&out->warnings, "the image has no entrypoint: give --entrypoint, or a "
		                          "command in mcp.toml");
	} else if (c->entrypoint.v[0][0] == '/') {
		cleanup_free char *prog = NULL;
		if (pack_image_path(c->entrypoint.v[0], "--entrypoint", &prog, NULL) < 0 ||
		    (!blobs && !in_image(t, lower, n_lower, prog)))
			strv_pushf(&out->warnings, "the entrypoint %s is not in the image",
			           c->entrypoint.v[0]);
	}
}

static int make_docs(const struct image_conf *c, const struct layers *l, uint64_t mtime,
                     struct docs *d, struct mg_err **err)
{
	if (config_json(c, mtime, l, &d->config, err) < 0)
		return mg_err_wrap(err, "the image configuration");
	digest_of(&d->config, d->config_digest);
	if (manifest_json(d->config_digest, d->config.len, l, &d->manifest, err) < 0)
		return mg_err_wrap(err, "the manifest");
	digest_of(&d->manifest, d->manifest_digest);
	if (index_json(c, d->manifest_digest, d->manifest.len, &d->index, err) < 0 ||
	    docker_manifest_json(c, d->config_digest, l, &d->docker, err) < 0 ||
	    mg_buf_puts(&d->layout, "{\"imageLayoutVersion\":\"1.0.0\"}", err) < 0)
		return mg_err_wrap(err, "the index");
	return 0;
}

static void docs_free(struct docs *d)
{
	mg_buf_free(&d->config);
	mg_buf_free(&d->manifest);
	mg_buf_free(&d->index);
	mg_buf_free(&d->docker);
	mg_buf_free(&d->layout);
}

/* A file next to the output, so the last rename stays on one file system */
static int temp_beside(const char *output, const char *kind, char **path, struct mg_err **err)
{
	char *tmpl = xasprintf("%s.%s-XXXXXX", output, kind);
	int fd = mkostemp(tmpl, O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		free(tmpl);
		return mg_err_sys(err, e, "cannot write %s", output);
	}
	*path = tmpl;
	return fd;
}

static int check_output(const char *output, struct mg_err **err)
{
	size_t n = output != NULL ? strlen(output) : 0;
	struct stat st;
	if (n == 0)
		return mg_err_set(err, "--output: no file named");
	if (output[n - 1] == '/' || (stat(output, &st) == 0 && S_ISDIR(st.st_mode)))
		return mg_err_set(err, "cannot write %s: it is a folder (name the archive file)",
		                  output);
	return 0;
}

/* A layer built before, opened, when its bytes are still the ones its info
 * names (the file is mcpgate's, but a pin must never rest on a file that
 * changed since) */
static int open_blob(const struct pack_lower *lw, struct mg_err **err)
{
	if (lw->info == NULL)
		return mg_err_set(err, "the layer %s comes without its digest", lw->blob);
	int fd = open(lw->blob, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return mg_err_sys(err, errno, "the layer %s", lw->blob);
	crypto_hash_sha256_state st;
	crypto_hash_sha256_init(&st);
	cleanup_free char *buf = xmalloc(COPY_BUF);
	uint64_t size = 0;
	for (;;) {
		ssize_t n = read(fd, buf, COPY_BUF);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			close(fd);
			return mg_err_sys(err, e, "reading the layer %s", lw->blob);
		}
		if (n == 0)
			break;
		crypto_hash_sha256_update(&st, (const unsigned char *)buf, (size_t)n);
		size += (uint64_t)n;
	}
	char digest[PACK_DIGEST_LEN + 1];
	pack_digest_final(&st, digest);
	if (size != lw->info->size || strcmp(digest, lw->info->digest) != 0) {
		close(fd);
		return mg_err_set(err,
		                  "the layer %s is not the one built (%s, %llu bytes; it is %s, "
		                  "%llu bytes): remove it so it is built again",
		                  lw->blob, lw->info->digest, (unsigned long long)lw->info->size,
		                  digest, (unsigned long long)size);
	}
	return fd;
}

int pack_build_layer(const char *const *adds, size_t n_adds, uint64_t mtime, const char *output,
                     struct pack_layer_info *info, struct mg_err **err)
{
	memset(info, 0, sizeof(*info));
	if (sodium_init() < 0)
		return mg_err_set(err, "libsodium could not start");
	if (check_output(output, err) < 0)
		return -1;
	if (mtime > MAX_MTIME)
		return mg_err_set(err, "the time %llu is after the year 9999",
		                  (unsigned long long)mtime);
	struct pack_spec spec = {.output = output};
	struct pack_tree t = {0};
	char *tmp = NULL;
	int fd = -1, r = -1;
	if (build_lower(&spec, adds, n_adds, &t, err) < 0 ||
	    (fd = temp_beside(output, "tmp", &tmp, err)) < 0)
		goto out;
	if (pack_write_layer(&t, mtime, fd, info, err) < 0) {
		mg_err_wrap(err, "%s", output);
		goto out;
	}
	if (fchmod(fd, 0644) < 0 || fsync(fd) < 0) {
		mg_err_sys(err, errno, "writing %s", output);
		goto out;
	}
	if (rename(tmp, output) < 0) {
		mg_err_sys(err, errno, "cannot write %s", output);
		goto out;
	}
	free(steal_pointer(&tmp));
	r = 0;
out:
	if (fd >= 0)
		close(fd);
	if (tmp != NULL) {
		unlink(tmp);
		free(tmp);
	}
	pack_tree_free(&t);
	return r;
}

int pack_layer_info_load(const char *path, struct pack_layer_info *info)
{
	cleanup_free char *text = NULL;
	size_t len = 0;
	struct json_value *v = NULL;
	if (mg_read_file(path, 1 << 16, &text, &len, NULL) < 0 ||
	    json_parse(text, len, NULL, &v, NULL) < 0)
		return -1;
	const char *digest = json_get_string(v, "digest");
	const char *diff_id = json_get_string(v, "diff_id");
	int64_t size = -1, tar_size = -1;
	const struct json_value *sz = json_get(v, "size");
	const struct json_value *tsz = json_get(v, "tar_size");
	int r = -1;
	if (digest != NULL && diff_id != NULL && strlen(digest) == PACK_DIGEST_LEN &&
	    strlen(diff_id) == PACK_DIGEST_LEN && sz != NULL && tsz != NULL &&
	    json_number_int64(sz, &size) == 0 && json_number_int64(tsz, &tar_size) == 0 &&
	    size > 0 && tar_size > 0) {
		memcpy(info->digest, digest, PACK_DIGEST_LEN + 1);
		memcpy(info->diff_id, diff_id, PACK_DIGEST_LEN + 1);
		info->size = (uint64_t)size;
		info->tar_size = (uint64_t)tar_size;
		r = 0;
	}
	json_free(v);
	return r;
}

int pack_layer_info_save(const char *path, const struct pack_layer_info *info, struct mg_err **err)
{
	struct json_value *v = json_new_object();
	json_object_set(v, "digest", json_new_string(info->digest));
	json_object_set(v, "diff_id", json_new_string(info->diff_id));
	json_object_set(v, "size", json_new_int((int64_t)info->size));
	json_object_set(v, "tar_size", json_new_int((int64_t)info->tar_size));
	struct mg_buf b = MG_BUF_INIT(1 << 16);
	int r = json_generate(v, &b, err);
	json_free(v);
	if (r == 0)
		r = mg_write_file_atomic(path, b.data, b.len, 0600, err);
	mg_buf_free(&b);
	return r;
}

int pack_build(const struct pack_spec *spec, struct pack_result *out, struct mg_err **err)
{
	memset(out, 0, sizeof(*out));
	if (sodium_init() < 0)
		return mg_err_set(err, "libsodium could not start");
	if (check_output(spec->output, err) < 0)
		return -1;
	if (spec->binary == NULL && spec->folder == NULL && spec->n_adds == 0)
		return mg_err_set(err, "nothing to pack: give --binary, --folder or --add");
	if (spec->mtime > MAX_MTIME)
		return mg_err_set(err, "the time %llu is after the year 9999",
		                  (unsigned long long)spec->mtime);

	struct image_conf c = {0};
	struct pack_tree t = {0};
	struct docs d = {MG_BUF_INIT(DOC_MAX),
	                 MG_BUF_INIT(DOC_MAX),
	                 MG_BUF_INIT(DOC_MAX),
	                 MG_BUF_INIT(DOC_MAX),
	                 MG_BUF_INIT(DOC_MAX),
	                 "",
	                 ""};
	/* the lower layers of files, bottom first: base_adds, then lower[] */
	size_t n_lower = (spec->n_base_adds > 0 ? 1 : 0) + spec->n_lower;
	struct pack_tree lower[PACK_MAX_LAYERS] = {{0}};
	struct layers l = {.n = 0};
	for (size_t i = 0; i < PACK_MAX_LAYERS; i++)
		l.fd[i] = -1;
	cleanup_close int out_fd = -1;
	char *out_path = NULL;
	bool blobs = false;
	int r = -1;

	if (n_lower + 1 > PACK_MAX_LAYERS) {
		mg_err_set(err, "%zu layers: an image here has %u at most", n_lower + 1,
		           PACK_MAX_LAYERS);
		goto out;
	}
	if (image_conf_init(spec, &c, err) < 0 || build_tree(spec, &c, &t, err) < 0)
		goto out;
	for (size_t i = 0; i < n_lower; i++) {
		const struct pack_lower *lw = i == 0 && spec->n_base_adds > 0
		                                  ? NULL
		                                  : &spec->lower[i - (spec->n_base_adds > 0)];
		if (lw != NULL && lw->blob != NULL) {
			blobs = true;
			continue;
		}
		if (build_lower(spec, lw != NULL ? lw->adds : spec->base_adds,
		                lw != NULL ? lw->n_adds : spec->n_base_adds, &lower[i], err) < 0)
			goto out;
	}
	check_startable(spec, &c, &t, lower, n_lower, blobs, out);

	for (size_t i = 0; i <= n_lower; i++) {
		const struct pack_lower *lw = i == n_lower || (i == 0 && spec->n_base_adds > 0)
		                                  ? NULL
		                                  : &spec->lower[i - (spec->n_base_adds > 0)];
		if (lw != NULL && lw->blob != NULL) {
			if ((l.fd[l.n] = open_blob(lw, err)) < 0)
				goto out;
			l.info[l.n++] = *lw->info;
			continue;
		}
		cleanup_free char *layer_path = NULL;
		if ((l.fd[l.n] = temp_beside(spec->output, "layer", &layer_path, err)) < 0)
			goto out;
		unlink(layer_path);
		if (pack_write_layer(i == n_lower ? &t : &lower[i], spec->mtime, l.fd[l.n],
		                     &l.info[l.n], err) < 0) {
			mg_err_wrap(err, "%s", spec->output);
			l.n++;
			goto out;
		}
		l.n++;
	}
	const struct pack_layer_info *top = &l.info[l.n - 1];
	if ((out_fd = temp_beside(spec->output, "tmp", &out_path, err)) < 0)
		goto out;
	if (make_docs(&c, &l, spec->mtime, &d, err) < 0)
		goto out;
	if (write_outer(out_fd, &d, &l, spec->mtime, &out->archive_size, err) < 0) {
		mg_err_wrap(err, "%s", spec->output);
		goto out;
	}
	if (fchmod(out_fd, 0644) < 0 || fsync(out_fd) < 0) {
		mg_err_sys(err, errno, "writing %s", spec->output);
		goto out;
	}
	if (rename(out_path, spec->output) < 0) {
		mg_err_sys(err, errno, "cannot write %s", spec->output);
		goto out;
	}
	free(steal_pointer(&out_path));

	memcpy(out->manifest_digest, d.manifest_digest, sizeof(out->manifest_digest));
	memcpy(out->config_digest, d.config_digest, sizeof(out->config_digest));
	out->manifest = xmalloc(d.manifest.len + 1);
	memcpy(out->manifest, d.manifest.data, d.manifest.len);
	out->manifest[d.manifest.len] = '\0';
	out->manifest_len = d.manifest.len;
	memcpy(out->layer_digest, top->digest, sizeof(out->layer_digest));
	memcpy(out->diff_id, top->diff_id, sizeof(out->diff_id));
	out->layer_size = top->size;
	out->layer_tar_size = top->tar_size;
	if (l.n >= 2) {
		memcpy(out->base_digest, l.info[0].digest, sizeof(out->base_digest));
		out->base_size = l.info[0].size;
	}
	out->n_layers = l.n;
	out->files = t.files;
	out->dirs = t.dirs;
	out->symlinks = t.symlinks;
	/* both fit: an architecture and variant are checked short, a name and tag too */
	int n = snprintf(out->platform, sizeof(out->platform), "linux/%s%s%s", c.arch,
	                 c.variant != NULL ? "/" : "", c.variant != NULL ? c.variant : "");
	if (n < 0 || (size_t)n >= sizeof(out->platform))
		abort();
	if (c.repo != NULL) {
		n = snprintf(out->ref, sizeof(out->ref), "%s:%s", c.repo, c.tag);
		if (n < 0 || (size_t)n >= sizeof(out->ref))
			abort();
	}
	r = 0;
out:
	if (out_path != NULL) {
		unlink(out_path);
		free(out_path);
	}
	for (size_t i = 0; i < PACK_MAX_LAYERS; i++) {
		if (l.fd[i] >= 0)
			close(l.fd[i]);
		pack_tree_free(&lower[i]);
	}
	docs_free(&d);
	pack_tree_free(&t);
	image_conf_free(&c);
	return r;
}
