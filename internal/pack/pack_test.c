/* Tests of internal/pack: the archive read back with libarchive (layout,
 * digests, configuration, the layer's entries), byte-identical output from
 * the same inputs, and the errors a person meets. Run from the repository
 * top (reads testdata/pack/); everything written goes under one temporary
 * folder, removed at the end. */
#define _GNU_SOURCE
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <locale.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sodium.h>

#include "internal/base/cleanup.h"
#include "internal/base/testing.h"
#include "internal/base/xalloc.h"
#include "internal/json/json.h"
#include "internal/pack/pack.h"

#define SERVER       "testdata/pack/server"
#define TREE         "testdata/pack/tree"
#define DEFAULT_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define N_ELEMS(a)   (sizeof(a) / sizeof((a)[0]))

static char base[] = "/tmp/mcpgate-pack-test-XXXXXX";

/* ---- helpers ----------------------------------------------------------- */

static char *in_base(const char *name)
{
	return xasprintf("%s/%s", base, name);
}

static void bail(const char *what, const char *path)
{
	printf("Bail out! %s %s: %s\n", what, path, strerror(errno));
	exit(1);
}

static void spill(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	size_t n = strlen(text);
	if (fd < 0 || write(fd, text, n) != (ssize_t)n || fchmod(fd, mode) < 0)
		bail("cannot write", path);
	close(fd);
}

static void make_dir(const char *path, mode_t mode)
{
	if (mkdir(path, 0700) < 0 || chmod(path, mode) < 0)
		bail("cannot make", path);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		chmod(path, 0700);
	remove(path);
	return 0;
}

static void rm_rf(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* a copy of a folder: files (with their modes), folders, symlinks */
static void copy_tree(const char *from, const char *to)
{
	make_dir(to, 0755);
	DIR *d = opendir(from);
	if (d == NULL)
		bail("cannot open", from);
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		cleanup_free char *src = xasprintf("%s/%s", from, de->d_name);
		cleanup_free char *dst = xasprintf("%s/%s", to, de->d_name);
		struct stat st;
		if (lstat(src, &st) < 0)
			bail("cannot stat", src);
		if (S_ISDIR(st.st_mode)) {
			copy_tree(src, dst);
		} else if (S_ISLNK(st.st_mode)) {
			char target[4096];
			ssize_t n = readlink(src, target, sizeof(target) - 1);
			if (n < 0)
				bail("cannot read", src);
			target[n] = '\0';
			if (symlink(target, dst) < 0)
				bail("cannot make", dst);
		} else {
			cleanup_free char *text = t_read_file(src, NULL);
			spill(dst, text, st.st_mode & 07777);
		}
	}
	closedir(d);
}

static int touch_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	struct timespec ts[2] = {{1234567890, 0}, {1234567890 + ftw->level, 0}};
	utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW);
	return 0;
}

/* every time stamp under path changed (links too, not their targets) */
static void touch_all(const char *path)
{
	nftw(path, touch_one, 16, FTW_PHYS);
}

static void sha256_hex(const void *p, size_t n, char out[72])
{
	unsigned char h[crypto_hash_sha256_BYTES];
	crypto_hash_sha256(h, p, n);
	memcpy(out, "sha256:", 7);
	sodium_bin2hex(out + 7, 65, h, sizeof(h));
}

static char *file_bytes(const char *path, size_t *len)
{
	return t_read_file(path, len);
}

/* ---- reading archives back ------------------------------------------- */

struct t_entry {
	char *path;
	unsigned type, perm;
	long long uid, gid, mtime;
	bool uname, gname, atime, ctime, birthtime;
	int xattrs;
	char *link;
	char *data;
	size_t size;
};

struct t_tar {
	struct t_entry *v;
	size_t n;
};

static void t_tar_free(struct t_tar *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->v[i].path);
		free(t->v[i].link);
		free(t->v[i].data);
	}
	free(t->v);
	memset(t, 0, sizeof(*t));
}

/* A tar (gzip-compressed or not) in memory; 0, or -1 with a note */
static int tar_read(const char *data, size_t len, struct t_tar *out)
{
	struct archive *a = archive_read_new();
	archive_read_support_filter_gzip(a);
	archive_read_support_format_tar(a);
	int r = archive_read_open_memory(a, data, len);
	struct archive_entry *e;
	while (r == ARCHIVE_OK && (r = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		out->v = xreallocarray(out->v, out->n + 1, sizeof(*out->v));
		struct t_entry *t = &out->v[out->n++];
		memset(t, 0, sizeof(*t));
		t->path = xstrdup(archive_entry_pathname(e));
		t->type = archive_entry_filetype(e);
		t->perm = archive_entry_perm(e);
		t->uid = archive_entry_uid(e);
		t->gid = archive_entry_gid(e);
		t->mtime = archive_entry_mtime(e);
		t->uname = archive_entry_uname(e) != NULL && archive_entry_uname(e)[0] != '\0';
		t->gname = archive_entry_gname(e) != NULL && archive_entry_gname(e)[0] != '\0';
		t->atime = archive_entry_atime_is_set(e);
		t->ctime = archive_entry_ctime_is_set(e);
		t->birthtime = archive_entry_birthtime_is_set(e);
		t->xattrs = archive_entry_xattr_count(e);
		if (archive_entry_symlink(e) != NULL)
			t->link = xstrdup(archive_entry_symlink(e));
		size_t size = (size_t)archive_entry_size(e);
		t->data = xmalloc(size + 1);
		la_ssize_t n = size > 0 ? archive_read_data(a, t->data, size) : 0;
		if (n < 0 || (size_t)n != size) {
			r = ARCHIVE_FATAL;
			break;
		}
		t->data[size] = '\0';
		t->size = size;
	}
	if (r != ARCHIVE_EOF)
		t_note("reading a tar: %s", archive_error_string(a));
	archive_read_free(a);
	return r == ARCHIVE_EOF ? 0 : -1;
}

static const struct t_entry *tar_find(const struct t_tar *t, const char *path)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->v[i].path, path) == 0)
			return &t->v[i];
	return NULL;
}

/* sha256 and length of a gzip stream's content */
static int gunzip_digest(const char *data, size_t len, char out[72], size_t *size)
{
	struct archive *a = archive_read_new();
	archive_read_support_filter_gzip(a);
	archive_read_support_format_raw(a);
	struct archive_entry *e;
	int r = -1;
	crypto_hash_sha256_state st;
	crypto_hash_sha256_init(&st);
	*size = 0;
	if (archive_read_open_memory(a, data, len) == ARCHIVE_OK &&
	    archive_read_next_header(a, &e) == ARCHIVE_OK) {
		char buf[65536];
		la_ssize_t n;
		while ((n = archive_read_data(a, buf, sizeof(buf))) > 0) {
			crypto_hash_sha256_update(&st, (unsigned char *)buf, (size_t)n);
			*size += (size_t)n;
		}
		r = n == 0 ? 0 : -1;
	}
	unsigned char h[crypto_hash_sha256_BYTES];
	crypto_hash_sha256_final(&st, h);
	memcpy(out, "sha256:", 7);
	sodium_bin2hex(out + 7, 65, h, sizeof(h));
	archive_read_free(a);
	return r;
}

static char *gen(const struct json_value *v)
{
	if (v == NULL)
		return xstrdup("(absent)");
	struct mg_buf b = MG_BUF_INIT(1u << 20);
	if (json_generate(v, &b, NULL) < 0) {
		mg_buf_free(&b);
		return xstrdup("(error)");
	}
	return mg_buf_steal(&b, NULL);
}

static struct json_value *parse_entry(const struct t_tar *t, const char *path)
{
	const struct t_entry *e = tar_find(t, path);
	struct json_value *v = NULL;
	cleanup_err struct mg_err *err = NULL;
	if (e == NULL || json_parse(e->data, e->size, NULL, &v, &err) < 0) {
		t_note("%s: %s", path, e == NULL ? "absent" : mg_err_msg(err));
		return NULL;
	}
	return v;
}

/* "path kind perm uid:gid mtime [-> link]" per entry, one a line */
static char *listing(const struct t_tar *t)
{
	struct mg_buf b = MG_BUF_INIT(1u << 20);
	for (size_t i = 0; i < t->n; i++) {
		const struct t_entry *e = &t->v[i];
		char kind = e->type == AE_IFDIR   ? 'd'
		            : e->type == AE_IFLNK ? 'l'
		            : e->type == AE_IFREG ? 'f'
		                                  : '?';
		mg_buf_printf(&b, NULL, "%s %c %04o %lld:%lld %lld%s%s\n", e->path, kind, e->perm,
		              e->uid, e->gid, e->mtime, e->link != NULL ? " -> " : "",
		              e->link != NULL ? e->link : "");
	}
	return mg_buf_steal(&b, NULL);
}

static int pack_ok(const struct pack_spec *spec, struct pack_result *res, const char *what)
{
	cleanup_err struct mg_err *err = NULL;
	int r = pack_build(spec, res, &err);
	if (!T_OK(r == 0, "%s: packs", what))
		t_note("error: %s", mg_err_msg(err));
	return r;
}

/* pack_build fails, and its message holds every word */
static void pack_fails(const struct pack_spec *spec, const char *what, const char *const *words)
{
	struct pack_result res;
	cleanup_err struct mg_err *err = NULL;
	struct stat st;
	bool existed = spec->output != NULL && lstat(spec->output, &st) == 0;
	int r = pack_build(spec, &res, &err);
	T_OK(r < 0 && err != NULL, "%s: refused", what);
	const char *msg = mg_err_msg(err);
	for (size_t i = 0; words[i] != NULL; i++)
		T_OK(strstr(msg, words[i]) != NULL, "%s: message \"%s\" says \"%s\"", what, msg,
		     words[i]);
	T_OK(existed || spec->output == NULL || lstat(spec->output, &st) < 0,
	     "%s: no output file is left behind", what);
	pack_result_free(&res);
}

#define PACK_FAILS(spec, what, ...) pack_fails(spec, what, (const char *const[]){__VA_ARGS__, NULL})

/* files in a folder, other than . and .. */
static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	if (d == NULL)
		return -1;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL)
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(d);
	return n;
}

/* ---- the odd-modes folder ----------------------------------------------- */

static char *make_odd(const char *name)
{
	char *odd = in_base(name);
	make_dir(odd, 0750);
	cleanup_free char *secret = xasprintf("%s/secret", odd);
	cleanup_free char *tool = xasprintf("%s/tool", odd);
	cleanup_free char *ro = xasprintf("%s/ro", odd);
	cleanup_free char *suid = xasprintf("%s/suid", odd);
	cleanup_free char *gx = xasprintf("%s/gx", odd);
	cleanup_free char *priv = xasprintf("%s/private", odd);
	cleanup_free char *empty = xasprintf("%s/private/empty", odd);
	spill(secret, "only the owner could read this\n", 0600);
	spill(tool, "#!/bin/sh\n", 0700);
	spill(ro, "read only\n", 0444);
	spill(suid, "setuid, which an image never gets\n", 04755);
	spill(gx, "group may run it\n", 0610);
	make_dir(priv, 0700);
	make_dir(empty, 0500);
	return odd;
}

/* ---- tests --------------------------------------------------------------- */

static void test_parse_ref(void)
{
	static const struct {
		const char *ref, *repo, *tag;
	} good[] = {
	    {"server", "server", "latest"},
	    {"mcp-hello:1", "mcp-hello", "1"},
	    {"example.test/pack/server:v1.2_rc-3", "example.test/pack/server", "v1.2_rc-3"},
	    {"localhost:5000/a/b", "localhost:5000/a/b", "latest"},
	    {"localhost:5000/a/b:t", "localhost:5000/a/b", "t"},
	    {"registry.example:443/x__y/z.w---q:T", "registry.example:443/x__y/z.w---q", "T"},
	    {"localhost/x", "localhost/x", "latest"},
	};
	for (size_t i = 0; i < N_ELEMS(good); i++) {
		char *repo = NULL, *tag = NULL;
		cleanup_err struct mg_err *err = NULL;
		int r = pack_parse_ref(good[i].ref, &repo, &tag, &err);
		T_OK(r == 0, "ref %s parses (%s)", good[i].ref, mg_err_msg(err));
		T_STR(repo, good[i].repo, "ref %s: name", good[i].ref);
		T_STR(tag, good[i].tag, "ref %s: tag", good[i].ref);
		free(repo);
		free(tag);
	}
	static const char *const bad[] = {
	    "",
	    "Server",
	    "a//b",
	    "a/",
	    "/a",
	    "a:",
	    "a:.x",
	    "a:-x",
	    "a..b",
	    "a-",
	    "_a",
	    "a@sha256:00",
	    "a:t@sha256:00",
	    "a:"
	    "toolongtoolongtoolongtoolongtoolongtoolongtoolongtoolongtoolong"
	    "toolongtoolongtoolongtoolongtoolongtoolongtoolongtoolongtoolongtoolong",
	    "bad_host.example:x/a",
	    "-host.example/a",
	    "a b",
	    "a/b!c",
	    "Registry.example/a",
	    "localhost:0/a",
	    "localhost:65536/a",
	    "localhost:/a",
	    "host.-x/a",
	};
	for (size_t i = 0; i < N_ELEMS(bad); i++) {
		char *repo = NULL, *tag = NULL;
		cleanup_err struct mg_err *err = NULL;
		int r = pack_parse_ref(bad[i], &repo, &tag, &err);
		T_OK(r < 0 && strstr(mg_err_msg(err), "--name") != NULL && repo == NULL,
		     "ref \"%s\" is refused (%s)", bad[i], mg_err_msg(err));
	}
	cleanup_free char *long_name = xmalloc(300);
	memset(long_name, 'a', 299);
	long_name[299] = '\0';
	char *repo = NULL, *tag = NULL;
	T_OK(pack_parse_ref(long_name, &repo, &tag, NULL) < 0,
	     "a name of 299 characters is refused");
}

static void test_parse_entrypoint(void)
{
	struct strv v = STRV_INIT;
	cleanup_err struct mg_err *err = NULL;
	T_OK(pack_parse_entrypoint("[\"/busybox\", \"echo\", \"hi there\", \"\\u00e9\"]", &v,
	                           &err) == 0,
	     "an entrypoint array parses");
	T_INT((long long)v.n, 4, "four arguments");
	T_STR(v.n == 4 ? v.v[2] : NULL, "hi there", "spaces kept");
	T_STR(v.n == 4 ? v.v[3] : NULL, "\xc3\xa9", "escapes decoded");
	strv_free(&v);
	static const struct {
		const char *json, *word;
	} bad[] = {
	    {"", "not JSON"},           {"/server", "not JSON"},
	    {"[]", "one or more"},      {"\"/x\"", "array"},
	    {"[1]", "not a string"},    {"[\"/x\", null]", "element 1"},
	    {"[\"\"]", "empty"},        {"[\"/x\\u0000y\"]", "NUL"},
	    {"[\"/x\"] x", "not JSON"}, {"{\"a\":\"b\"}", "array"},
	};
	for (size_t i = 0; i < N_ELEMS(bad); i++) {
		mg_err_clear(&err);
		int r = pack_parse_entrypoint(bad[i].json, &v, &err);
		T_OK(r < 0 && strstr(mg_err_msg(err), bad[i].word) != NULL && v.n == 0,
		     "entrypoint %s is refused, saying \"%s\" (%s)", bad[i].json, bad[i].word,
		     mg_err_msg(err));
		strv_free(&v);
	}
}

/* The expected layer of SERVER + TREE + the odd folder at /odd */
static const char expected_layer[] = "README.txt f 0644 0:0 0\n"
                                     "bin/ d 0755 0:0 0\n"
                                     "bin/run.sh f 0755 0:0 0\n"
                                     "lib/ d 0755 0:0 0\n"
                                     "lib/app/ d 0755 0:0 0\n"
                                     "lib/app/main.js f 0644 0:0 0\n"
                                     "lib/app/package.json f 0644 0:0 0\n"
                                     "lib/current l 0777 0:0 0 -> app\n"
                                     "link l 0777 0:0 0 -> lib/app/main.js\n"
                                     "odd/ d 0755 0:0 0\n"
                                     "odd/gx f 0755 0:0 0\n"
                                     "odd/private/ d 0755 0:0 0\n"
                                     "odd/private/empty/ d 0755 0:0 0\n"
                                     "odd/ro f 0644 0:0 0\n"
                                     "odd/secret f 0644 0:0 0\n"
                                     "odd/suid f 0755 0:0 0\n"
                                     "odd/tool f 0755 0:0 0\n"
                                     "opt/ d 0755 0:0 0\n"
                                     "opt/work/ d 0755 0:0 0\n"
                                     "server f 0755 0:0 0\n";

static void check_layer(const struct t_tar *outer, const char *digest, const char *diff_id)
{
	cleanup_free char *name = xasprintf("blobs/sha256/%s", digest + 7);
	const struct t_entry *blob = tar_find(outer, name);
	if (!T_OK(blob != NULL, "the layer blob is there"))
		return;
	const unsigned char *g = (const unsigned char *)blob->data;
	T_OK(blob->size > 10 && g[0] == 0x1f && g[1] == 0x8b && g[2] == 8,
	     "the layer is a gzip stream");
	T_OK(blob->size > 10 && g[3] == 0 && g[4] == 0 && g[5] == 0 && g[6] == 0 && g[7] == 0,
	     "its gzip header has no name and no time stamp");
	char got[72];
	size_t tar_size = 0;
	T_OK(gunzip_digest(blob->data, blob->size, got, &tar_size) == 0, "the layer decompresses");
	T_STR(got, diff_id, "the config's diff_id is the sha256 of the uncompressed layer");

	struct t_tar layer = {0};
	if (!T_OK(tar_read(blob->data, blob->size, &layer) == 0, "the layer reads as a tar"))
		return;
	cleanup_free char *list = listing(&layer);
	T_STR(list, expected_layer, "the layer's entries: sorted, 0:0, time 0, modes normalised");
	bool sorted = true, clean = true;
	for (size_t i = 0; i < layer.n; i++) {
		const struct t_entry *e = &layer.v[i];
		if (i > 0 && strcmp(layer.v[i - 1].path, e->path) >= 0)
			sorted = false;
		if (e->uname || e->gname || e->atime || e->ctime || e->birthtime || e->xattrs != 0)
			clean = false;
	}
	T_OK(sorted, "entries in byte order of their paths");
	T_OK(clean, "no owner names, no atime/ctime/birthtime, no xattrs");
	size_t n;
	cleanup_free char *server = file_bytes(SERVER, &n);
	const struct t_entry *s = tar_find(&layer, "server");
	T_OK(s != NULL && s->size == n && memcmp(s->data, server, n) == 0,
	     "the binary's bytes are in the layer");
	const struct t_entry *js = tar_find(&layer, "lib/app/main.js");
	cleanup_free char *main_js = file_bytes(TREE "/lib/app/main.js", &n);
	T_OK(js != NULL && js->size == n && memcmp(js->data, main_js, n) == 0,
	     "a folder's file is in the layer");
	t_tar_free(&layer);
}

static void test_layout(void)
{
	cleanup_free char *odd = make_odd("odd");
	cleanup_free char *add = xasprintf("%s:/odd", odd);
	cleanup_free char *out = in_base("layout.tar");
	const char *adds[] = {add};
	const char *args[] = {"--stdio"};
	const char *env[] = {"A=1", "B=x=y", "A=2", "EMPTY="};
	const char *labels[] = {"org.example.k=v", "empty=", "org.example.k=w"};
	struct pack_spec spec = {.output = out,
	                         .binary = SERVER,
	                         .folder = TREE,
	                         .adds = adds,
	                         .n_adds = 1,
	                         .entrypoint_args = args,
	                         .n_entrypoint_args = 1,
	                         .env = env,
	                         .n_env = N_ELEMS(env),
	                         .labels = labels,
	                         .n_labels = N_ELEMS(labels),
	                         .user = "1000:100",
	                         .workdir = "/opt/work/",
	                         .name = "example.test/pack/server:v1"};
	struct pack_result res;
	if (pack_ok(&spec, &res, "binary + folder + add") < 0) {
		pack_result_free(&res);
		return;
	}
	T_INT((long long)res.files, 10, "10 files");
	T_INT((long long)res.dirs, 8, "8 folders");
	T_INT((long long)res.symlinks, 2, "2 symlinks");
	T_STR(res.ref, "example.test/pack/server:v1", "the name");
	T_INT((long long)res.warnings.n, 0, "no warnings for a complete image");

	size_t len;
	cleanup_free char *bytes = file_bytes(out, &len);
	T_INT((long long)len, (long long)res.archive_size, "the archive's size is reported");
	struct stat st;
	T_OK(stat(out, &st) == 0 && (st.st_mode & 0777) == 0644, "the archive is mode 0644");
	T_INT(count_entries(base), 2, "no temporary file is left beside the output");
	struct t_tar outer = {0};
	if (!T_OK(tar_read(bytes, len, &outer) == 0, "the archive reads as a tar")) {
		pack_result_free(&res);
		return;
	}
	/* the names, in order, with the blobs in digest order */
	char blobs[3][72];
	memcpy(blobs[0], res.manifest_digest, 72);
	memcpy(blobs[1], res.config_digest, 72);
	memcpy(blobs[2], res.layer_digest, 72);
	qsort(blobs, 3, 72, (int (*)(const void *, const void *))strcmp);
	cleanup_free char *want =
	    xasprintf("blobs/\nblobs/sha256/\nblobs/sha256/%s\nblobs/sha256/%s\n"
	              "blobs/sha256/%s\nindex.json\nmanifest.json\noci-layout\n",
	              blobs[0] + 7, blobs[1] + 7, blobs[2] + 7);
	struct mg_buf names = MG_BUF_INIT(1u << 20);
	bool meta = true;
	for (size_t i = 0; i < outer.n; i++) {
		mg_buf_printf(&names, NULL, "%s\n", outer.v[i].path);
		const struct t_entry *e = &outer.v[i];
		meta = meta && e->uid == 0 && e->gid == 0 && e->mtime == 0 &&
		       e->perm == (e->type == AE_IFDIR ? 0755u : 0644u);
	}
	T_STR(mg_buf_str(&names), want, "the archive's entries");
	T_OK(meta, "the archive's entries: 0:0, time 0, 0755 folders and 0644 files");
	mg_buf_free(&names);

	const struct t_entry *layout = tar_find(&outer, "oci-layout");
	T_STR(layout != NULL ? layout->data : NULL, "{\"imageLayoutVersion\":\"1.0.0\"}",
	      "oci-layout");
	bool names_ok = true;
	for (size_t i = 0; i < outer.n; i++) {
		const struct t_entry *e = &outer.v[i];
		if (strncmp(e->path, "blobs/sha256/", 13) != 0 || e->type != AE_IFREG)
			continue;
		char d[72];
		sha256_hex(e->data, e->size, d);
		if (strcmp(d + 7, e->path + 13) != 0) {
			names_ok = false;
			t_note("%s has digest %s", e->path, d);
		}
	}
	T_OK(names_ok, "every blob's name is the sha256 of its bytes");

	struct json_value *index = parse_entry(&outer, "index.json");
	cleanup_free char *index_text = gen(index);
	json_free(index);

	cleanup_free char *mname = xasprintf("blobs/sha256/%s", res.manifest_digest + 7);
	cleanup_free char *cname = xasprintf("blobs/sha256/%s", res.config_digest + 7);
	const struct t_entry *mblob = tar_find(&outer, mname);
	const struct t_entry *cblob = tar_find(&outer, cname);
	const struct t_entry *lblob = NULL;
	{
		cleanup_free char *lname = xasprintf("blobs/sha256/%s", res.layer_digest + 7);
		lblob = tar_find(&outer, lname);
	}
	if (!T_OK(mblob != NULL && cblob != NULL && lblob != NULL,
	          "manifest, config, layer blobs")) {
		t_tar_free(&outer);
		pack_result_free(&res);
		return;
	}
	cleanup_free char *want_index = xasprintf(
	    "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\","
	    "\"manifests\":[{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
	    "\"digest\":\"%s\",\"size\":%zu,\"annotations\":{\"io.containerd.image.name\":"
	    "\"example.test/pack/server:v1\",\"org.opencontainers.image.ref.name\":\"v1\"}}]}",
	    res.manifest_digest, mblob->size);
	T_STR(index_text, want_index, "index.json points at the manifest, named");

	cleanup_free char *want_manifest = xasprintf(
	    "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
	    "\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":"
	    "\"%s\",\"size\":%zu},\"layers\":[{\"mediaType\":"
	    "\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"%s\",\"size\":%zu}]}",
	    res.config_digest, cblob->size, res.layer_digest, lblob->size);
	T_STR(mblob->data, want_manifest, "the manifest points at the config and the layer");

	struct json_value *config = parse_entry(&outer, cname);
	const char *arch = NULL;
	pack_machine_arch(&arch, NULL);
	cleanup_free char *arch_only = xstrndup(arch, strcspn(arch, "/"));
	T_STR(json_get_string(config, "architecture"), arch_only, "architecture of this machine");
	T_STR(json_get_string(config, "os"), "linux", "os linux");
	T_STR(json_get_string(config, "created"), "1970-01-01T00:00:00Z", "created at time 0");
	const struct json_value *c = json_get(config, "config");
	cleanup_free char *ep = gen(json_get(c, "Entrypoint"));
	T_STR(ep, "[\"/server\",\"--stdio\"]", "Entrypoint: the binary, then --entrypoint-arg");
	cleanup_free char *envs = gen(json_get(c, "Env"));
	T_STR(envs, "[\"" DEFAULT_PATH "\",\"A=2\",\"B=x=y\",\"EMPTY=\"]",
	      "Env: the default PATH, a later A replacing the earlier in place");
	cleanup_free char *labels_text = gen(json_get(c, "Labels"));
	T_STR(labels_text, "{\"org.example.k\":\"w\",\"empty\":\"\"}", "Labels");
	T_STR(json_get_string(c, "User"), "1000:100", "User");
	T_STR(json_get_string(c, "WorkingDir"), "/opt/work", "WorkingDir");
	cleanup_free char *rootfs = gen(json_get(config, "rootfs"));
	cleanup_free char *want_rootfs =
	    xasprintf("{\"type\":\"layers\",\"diff_ids\":[\"%s\"]}", res.diff_id);
	T_STR(rootfs, want_rootfs, "rootfs: one diff_id");
	json_free(config);

	const struct t_entry *docker = tar_find(&outer, "manifest.json");
	cleanup_free char *want_docker = xasprintf(
	    "[{\"Config\":\"blobs/sha256/%s\",\"RepoTags\":[\"example.test/pack/server:v1\"],"
	    "\"Layers\":[\"blobs/sha256/%s\"]}]",
	    res.config_digest + 7, res.layer_digest + 7);
	T_STR(docker != NULL ? docker->data : NULL, want_docker, "docker's manifest.json");

	check_layer(&outer, res.layer_digest, res.diff_id);
	t_tar_free(&outer);
	pack_result_free(&res);
}

/* A base layer: the same base_adds under two different tops give the same
 * base blob; each image lists base then top, in the manifest, the config's
 * diff_ids and docker's manifest.json */
static void test_base_layer(void)
{
	cleanup_free char *out_a = in_base("base-a.tar");
	cleanup_free char *out_b = in_base("base-b.tar");
	cleanup_free char *base_add = xasprintf("%s:/opt/runtime", TREE);
	const char *bases[] = {base_add};
	cleanup_free char *top_a = xasprintf("%s:/app/server", SERVER);
	cleanup_free char *top_b = xasprintf("%s:/app/other", SERVER);
	const char *adds_a[] = {top_a}, *adds_b[] = {top_b};
	const char *ep[] = {"/app/server"};
	struct pack_spec spec = {.output = out_a,
	                         .adds = adds_a,
	                         .n_adds = 1,
	                         .base_adds = bases,
	                         .n_base_adds = 1,
	                         .entrypoint = ep,
	                         .n_entrypoint = 1};
	struct pack_result a, b;
	int ra = pack_ok(&spec, &a, "an image with a base layer");
	spec.output = out_b;
	spec.adds = adds_b;
	int rb = pack_ok(&spec, &b, "another top on the same base");
	if (ra < 0 || rb < 0) {
		pack_result_free(&a);
		pack_result_free(&b);
		return;
	}
	T_OK(a.base_digest[0] != '\0' && strcmp(a.base_digest, b.base_digest) == 0,
	     "the same base gives the same base layer digest: %s", a.base_digest);
	T_OK(strcmp(a.layer_digest, b.layer_digest) != 0 && strcmp(a.base_digest, a.layer_digest),
	     "the tops differ, and differ from the base");
	T_INT((long long)a.warnings.n, 0, "no warning: the entrypoint is found in the top");
	size_t len;
	cleanup_free char *bytes = file_bytes(out_a, &len);
	struct t_tar outer = {0};
	if (!T_OK(tar_read(bytes, len, &outer) == 0, "the two-layer archive reads as a tar")) {
		pack_result_free(&a);
		pack_result_free(&b);
		return;
	}
	cleanup_free char *mname = xasprintf("blobs/sha256/%s", a.manifest_digest + 7);
	cleanup_free char *cname = xasprintf("blobs/sha256/%s", a.config_digest + 7);
	struct json_value *m = parse_entry(&outer, mname);
	const struct json_value *layers = m != NULL ? json_get(m, "layers") : NULL;
	T_OK(layers != NULL && layers->kind == JSON_ARRAY && layers->u.arr.len == 2 &&
	         strcmp(json_get_string(layers->u.arr.items[0], "digest"), a.base_digest) == 0 &&
	         strcmp(json_get_string(layers->u.arr.items[1], "digest"), a.layer_digest) == 0,
	     "the manifest lists the base, then the top");
	json_free(m);
	struct json_value *config = parse_entry(&outer, cname);
	const struct json_value *rootfs = config != NULL ? json_get(config, "rootfs") : NULL;
	const struct json_value *ids = rootfs != NULL ? json_get(rootfs, "diff_ids") : NULL;
	T_OK(ids != NULL && ids->kind == JSON_ARRAY && ids->u.arr.len == 2 &&
	         strcmp(ids->u.arr.items[1]->u.str.ptr, a.diff_id) == 0,
	     "the config has two diff_ids, the top's last");
	json_free(config);
	const struct t_entry *docker = tar_find(&outer, "manifest.json");
	cleanup_free char *want = xasprintf("\"Layers\":[\"blobs/sha256/%s\",\"blobs/sha256/%s\"]",
	                                    a.base_digest + 7, a.layer_digest + 7);
	T_OK(docker != NULL && strstr(docker->data, want) != NULL,
	     "docker's manifest.json lists both layers, base first");
	cleanup_free char *bname = xasprintf("blobs/sha256/%s", a.base_digest + 7);
	const struct t_entry *bblob = tar_find(&outer, bname);
	T_OK(bblob != NULL && bblob->size == a.base_size, "the base blob is in the archive");
	t_tar_free(&outer);
	pack_result_free(&a);
	pack_result_free(&b);
}

/* Layers built on their own (pack_build_layer) below the top: the same
 * inputs give the same blob; an image lists them bottom first with their
 * digests and diff_ids as built; a blob whose bytes changed is refused */
static void test_lower_blobs(void)
{
	cleanup_free char *blob_a = in_base("lower-a.tar.gz");
	cleanup_free char *blob_b = in_base("lower-b.tar.gz");
	cleanup_free char *tree_add = xasprintf("%s:/", TREE);
	const char *adds[] = {tree_add};
	struct pack_layer_info a, b;
	int ra = pack_build_layer(adds, 1, 0, blob_a, &a, NULL);
	int rb = pack_build_layer(adds, 1, 0, blob_b, &b, NULL);
	T_OK(ra == 0 && rb == 0 && strcmp(a.digest, b.digest) == 0 &&
	         strcmp(a.diff_id, b.diff_id) == 0 && a.size > 0 && a.tar_size > a.size / 2,
	     "a layer built twice from a folder is the same blob: %s", a.digest);
	if (ra < 0 || rb < 0)
		return;
	cleanup_free char *out = in_base("lower.tar");
	cleanup_free char *top = xasprintf("%s:/app/server", SERVER);
	cleanup_free char *mid = xasprintf("%s:/opt/mid", SERVER);
	const char *tops[] = {top}, *mids[] = {mid};
	const char *ep[] = {"/app/server"};
	struct pack_lower lower[] = {{.blob = blob_a, .info = &a}, {.adds = mids, .n_adds = 1}};
	struct pack_spec spec = {.output = out,
	                         .adds = tops,
	                         .n_adds = 1,
	                         .lower = lower,
	                         .n_lower = 2,
	                         .entrypoint = ep,
	                         .n_entrypoint = 1};
	struct pack_result res;
	if (pack_ok(&spec, &res, "an image over a layer built before and one of files") < 0)
		return;
	T_INT((long long)res.n_layers, 3, "three layers");
	T_STR(res.base_digest, a.digest, "the lowest is the blob built before");
	size_t len;
	cleanup_free char *bytes = file_bytes(out, &len);
	struct t_tar outer = {0};
	tar_read(bytes, len, &outer);
	cleanup_free char *mname = xasprintf("blobs/sha256/%s", res.manifest_digest + 7);
	cleanup_free char *cname = xasprintf("blobs/sha256/%s", res.config_digest + 7);
	struct json_value *m = parse_entry(&outer, mname);
	const struct json_value *layers = m != NULL ? json_get(m, "layers") : NULL;
	T_OK(layers != NULL && layers->kind == JSON_ARRAY && layers->u.arr.len == 3 &&
	         strcmp(json_get_string(layers->u.arr.items[0], "digest"), a.digest) == 0 &&
	         strcmp(json_get_string(layers->u.arr.items[2], "digest"), res.layer_digest) == 0,
	     "the manifest lists the blob, the middle, then the top");
	json_free(m);
	struct json_value *config = parse_entry(&outer, cname);
	const struct json_value *rootfs = config != NULL ? json_get(config, "rootfs") : NULL;
	const struct json_value *ids = rootfs != NULL ? json_get(rootfs, "diff_ids") : NULL;
	T_OK(ids != NULL && ids->kind == JSON_ARRAY && ids->u.arr.len == 3 &&
	         strcmp(ids->u.arr.items[0]->u.str.ptr, a.diff_id) == 0,
	     "the config's first diff_id is the blob's");
	json_free(config);
	cleanup_free char *bname = xasprintf("blobs/sha256/%s", a.digest + 7);
	const struct t_entry *bblob = tar_find(&outer, bname);
	size_t blen;
	cleanup_free char *bbytes = file_bytes(blob_a, &blen);
	T_OK(bblob != NULL && bblob->size == blen && memcmp(bblob->data, bbytes, blen) == 0,
	     "the blob is in the archive byte for byte");
	t_tar_free(&outer);
	pack_result_free(&res);

	/* one byte changed: refused, and nothing written */
	int fd = open(blob_b, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || pwrite(fd, "X", 1, 20) != 1)
		bail("cannot change", blob_b);
	close(fd);
	cleanup_free char *out2 = in_base("lower-changed.tar");
	lower[0].blob = blob_b;
	lower[0].info = &b;
	spec.output = out2;
	struct mg_err *err = NULL;
	int r = pack_build(&spec, &res, &err);
	T_OK(r < 0 && err != NULL && strstr(mg_err_msg(err), "is not the one built") != NULL &&
	         access(out2, F_OK) != 0,
	     "a layer file that changed is refused: %s", err != NULL ? mg_err_msg(err) : "");
	mg_err_free(err);
	pack_result_free(&res);
}

static void test_defaults(void)
{
	cleanup_free char *out = in_base("defaults.tar");
	struct pack_spec spec = {.output = out, .binary = SERVER, .binary_dest = "/usr/bin//mcp"};
	struct pack_result res;
	if (pack_ok(&spec, &res, "a binary alone, placed") == 0) {
		size_t len;
		cleanup_free char *bytes = file_bytes(out, &len);
		struct t_tar outer = {0};
		tar_read(bytes, len, &outer);
		cleanup_free char *cname = xasprintf("blobs/sha256/%s", res.config_digest + 7);
		struct json_value *config = parse_entry(&outer, cname);
		const struct json_value *c = json_get(config, "config");
		cleanup_free char *text = gen(c);
		T_STR(text,
		      "{\"Env\":[\"" DEFAULT_PATH "\"],\"Entrypoint\":[\"/usr/bin/mcp\"],"
		      "\"WorkingDir\":\"/\"}",
		      "defaults: PATH, the binary as the entrypoint, /, no user, no labels");
		const struct t_entry *index = tar_find(&outer, "index.json");
		T_OK(index != NULL && strstr(index->data, "annotations") == NULL,
		     "no name, no annotations");
		const struct t_entry *docker = tar_find(&outer, "manifest.json");
		T_OK(docker != NULL && strstr(docker->data, "\"RepoTags\":[]") != NULL,
		     "no name, no RepoTags");
		const struct t_entry *lblob = NULL;
		cleanup_free char *lname = xasprintf("blobs/sha256/%s", res.layer_digest + 7);
		lblob = tar_find(&outer, lname);
		struct t_tar layer = {0};
		if (lblob != NULL && tar_read(lblob->data, lblob->size, &layer) == 0) {
			cleanup_free char *list = listing(&layer);
			T_STR(
			    list,
			    "usr/ d 0755 0:0 0\nusr/bin/ d 0755 0:0 0\nusr/bin/mcp f 0755 0:0 0\n",
			    "--path-in-image: the binary and its parent folders");
		}
		t_tar_free(&layer);
		json_free(config);
		t_tar_free(&outer);
	}
	pack_result_free(&res);

	/* a symlink named as the binary is followed; PATH given replaces the default */
	cleanup_free char *link = in_base("server-link");
	cleanup_free char *real = realpath(SERVER, NULL);
	if (symlink(real, link) < 0)
		bail("cannot make", link);
	const char *env[] = {"PATH=/bin"};
	struct pack_spec s2 = {
	    .output = out, .binary = link, .env = env, .n_env = 1, .mtime = 1700000000};
	if (pack_ok(&s2, &res, "a symlink as the binary") == 0) {
		size_t len;
		cleanup_free char *bytes = file_bytes(out, &len);
		struct t_tar outer = {0};
		tar_read(bytes, len, &outer);
		cleanup_free char *cname = xasprintf("blobs/sha256/%s", res.config_digest + 7);
		struct json_value *config = parse_entry(&outer, cname);
		cleanup_free char *envs = gen(json_get(json_get(config, "config"), "Env"));
		T_STR(envs, "[\"PATH=/bin\"]", "a PATH given replaces the default");
		T_STR(json_get_string(config, "created"), "2023-11-14T22:13:20Z",
		      "created is SOURCE_DATE_EPOCH");
		cleanup_free char *lname = xasprintf("blobs/sha256/%s", res.layer_digest + 7);
		const struct t_entry *lblob = tar_find(&outer, lname);
		struct t_tar layer = {0};
		if (lblob != NULL && tar_read(lblob->data, lblob->size, &layer) == 0) {
			cleanup_free char *list = listing(&layer);
			T_STR(list, "server-link f 0755 0:0 1700000000\n",
			      "the link's target is packed as a file, at the time given");
		}
		bool times = true;
		for (size_t i = 0; i < outer.n; i++)
			times = times && outer.v[i].mtime == 1700000000;
		T_OK(times, "every entry of the archive has the time given");
		t_tar_free(&layer);
		json_free(config);
		t_tar_free(&outer);
	}
	pack_result_free(&res);
	unlink(out);
}

/* long names (past ustar's 100 bytes), UTF-8 names and a symlink to one
 * read back as the same bytes; names that are not UTF-8 refused */
static void test_names(void)
{
	cleanup_free char *dir = in_base("names");
	cleanup_free char *out = in_base("names.tar");
	char longname[201];
	memset(longname, 'n', 200);
	longname[200] = '\0';
	cleanup_free char *deep = xasprintf("%s/%s", dir, longname);
	cleanup_free char *deep_file = xasprintf("%s/%s/%s", dir, longname, longname);
	cleanup_free char *utf8 = xasprintf("%s/caf\xc3\xa9 \xe2\x9c\x93.txt", dir);
	cleanup_free char *link = xasprintf("%s/to-caf\xc3\xa9", dir);
	make_dir(dir, 0755);
	make_dir(deep, 0755);
	spill(deep_file, "deep\n", 0644);
	spill(utf8, "utf-8\n", 0644);
	if (symlink("caf\xc3\xa9 \xe2\x9c\x93.txt", link) < 0)
		bail("cannot make", link);
	const char *ep[] = {"/x"};
	struct pack_spec spec = {.output = out, .folder = dir, .entrypoint = ep, .n_entrypoint = 1};
	struct pack_result res;
	if (pack_ok(&spec, &res, "long and non-ASCII names") == 0) {
		size_t len;
		cleanup_free char *bytes = file_bytes(out, &len);
		struct t_tar outer = {0}, layer = {0};
		tar_read(bytes, len, &outer);
		cleanup_free char *lname = xasprintf("blobs/sha256/%s", res.layer_digest + 7);
		const struct t_entry *lblob = tar_find(&outer, lname);
		if (lblob != NULL && tar_read(lblob->data, lblob->size, &layer) == 0) {
			cleanup_free char *list = listing(&layer);
			cleanup_free char *want = xasprintf(
			    "caf\xc3\xa9 \xe2\x9c\x93.txt f 0644 0:0 0\n"
			    "%s/ d 0755 0:0 0\n"
			    "%s/%s f 0644 0:0 0\n"
			    "to-caf\xc3\xa9 l 0777 0:0 0 -> caf\xc3\xa9 \xe2\x9c\x93.txt\n",
			    longname, longname, longname);
			T_STR(list, want, "names come back byte for byte");
		}
		t_tar_free(&layer);
		t_tar_free(&outer);
	}
	pack_result_free(&res);
	unlink(out);

	cleanup_free char *bad_dir = in_base("bad-names");
	cleanup_free char *bad = xasprintf("%s/bad\xffname", bad_dir);
	make_dir(bad_dir, 0755);
	spill(bad, "bytes\n", 0644);
	spec.folder = bad_dir;
	PACK_FAILS(&spec, "a name that is not UTF-8", bad, "not UTF-8");
	unlink(bad);
	cleanup_free char *bad_link = xasprintf("%s/link", bad_dir);
	if (symlink("bad\xfftarget", bad_link) < 0)
		bail("cannot make", bad_link);
	PACK_FAILS(&spec, "a symlink target that is not UTF-8", bad_link, "target is not UTF-8");
	spec = (struct pack_spec){.output = out, .binary = SERVER, .binary_dest = "/x\xff"};
	PACK_FAILS(&spec, "a --path-in-image that is not UTF-8", "--path-in-image", "not UTF-8");
}

static char *pack_digest(const struct pack_spec *spec, const char *what)
{
	struct pack_result res;
	char *d = pack_ok(spec, &res, what) == 0 ? xstrdup(res.manifest_digest) : xstrdup("failed");
	pack_result_free(&res);
	return d;
}

static void test_reproducible(void)
{
	cleanup_free char *tree = in_base("repro-tree");
	cleanup_free char *odd = make_odd("repro-odd");
	cleanup_free char *add = xasprintf("%s:/odd", odd);
	cleanup_free char *out1 = in_base("repro1.tar");
	cleanup_free char *out2 = in_base("repro2.tar");
	copy_tree(TREE, tree);
	const char *adds[] = {add};
	const char *labels[] = {"a=b"};
	struct pack_spec spec = {.output = out1,
	                         .binary = SERVER,
	                         .folder = tree,
	                         .adds = adds,
	                         .n_adds = 1,
	                         .labels = labels,
	                         .n_labels = 1,
	                         .name = "repro:1"};
	cleanup_free char *d1 = pack_digest(&spec, "first packing");

	/* a second later, every time stamp changed, modes changed within their class */
	sleep(1);
	touch_all(tree);
	touch_all(odd);
	cleanup_free char *readme = xasprintf("%s/README.txt", tree);
	cleanup_free char *run = xasprintf("%s/bin/run.sh", tree);
	chmod(readme, 0600);
	chmod(run, 0711);
	spec.output = out2;
	cleanup_free char *d2 = pack_digest(&spec, "second packing");
	T_STR(d2, d1, "the same inputs, touched and packed later, give the same digest");
	cleanup_free char *out3 = in_base("repro3.tar");
	spec.output = out3;
	pid_t child = fork();
	if (child == 0) {
		struct pack_result r;
		_exit(pack_build(&spec, &r, NULL) == 0 ? 0 : 1);
	}
	int wstatus = -1;
	waitpid(child, &wstatus, 0);
	T_OK(child > 0 && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0,
	     "another process packs the same inputs");
	size_t n1, n2, n3;
	cleanup_free char *b3 = file_bytes(out3, &n3);
	cleanup_free char *b1 = file_bytes(out1, &n1);
	cleanup_free char *b2 = file_bytes(out2, &n2);
	T_OK(n1 == n2 && memcmp(b1, b2, n1) == 0, "and byte-identical archives");
	T_OK(n1 == n3 && memcmp(b1, b3, n1) == 0, "another process writes the same bytes too");
	unlink(out3);

	/* folders whose entries were made in opposite orders */
	cleanup_free char *fwd = in_base("order-a");
	cleanup_free char *rev = in_base("order-b");
	static const char *const names[] = {"z", "a", "m", "b-c", "b.c", "b", "B", "0"};
	make_dir(fwd, 0755);
	make_dir(rev, 0755);
	for (size_t i = 0; i < N_ELEMS(names); i++) {
		cleanup_free char *p = xasprintf("%s/%s", fwd, names[i]);
		cleanup_free char *q = xasprintf("%s/%s", rev, names[N_ELEMS(names) - 1 - i]);
		spill(p, names[i], 0644);
		spill(q, names[N_ELEMS(names) - 1 - i], 0644);
	}
	struct pack_spec a = {
	    .output = out1, .folder = fwd, .entrypoint = (const char *[]){"/z"}, .n_entrypoint = 1};
	struct pack_spec b = a;
	b.output = out2;
	b.folder = rev;
	cleanup_free char *da = pack_digest(&a, "a folder made in one order");
	cleanup_free char *db = pack_digest(&b, "the same folder made in the other order");
	T_STR(db, da, "readdir order does not matter");

	/* what must change the digest does */
	spec.output = out1;
	spec.mtime = 1;
	cleanup_free char *d3 = pack_digest(&spec, "packing at another time stamp");
	T_OK(strcmp(d3, d1) != 0, "another SOURCE_DATE_EPOCH, another digest");
	spec.mtime = 0;
	chmod(readme, 0700);
	cleanup_free char *d4 = pack_digest(&spec, "packing with an executable bit added");
	T_OK(strcmp(d4, d1) != 0, "an executable bit added, another digest");
	chmod(readme, 0644);
	spill(readme, "changed\n", 0644);
	cleanup_free char *d5 = pack_digest(&spec, "packing changed content");
	T_OK(strcmp(d5, d1) != 0, "changed content, another digest");
	unlink(out1);
	unlink(out2);
}

static void test_errors(void)
{
	cleanup_free char *dir = in_base("errors");
	make_dir(dir, 0755);
	cleanup_free char *out = in_base("errors/out.tar");
	struct pack_spec spec = {.output = out, .binary = "testdata/pack/no-such-file"};
	PACK_FAILS(&spec, "a missing binary", "testdata/pack/no-such-file",
	           "No such file or directory");
	spec = (struct pack_spec){.output = out, .folder = "testdata/pack/no-such-folder"};
	PACK_FAILS(&spec, "a missing folder", "testdata/pack/no-such-folder", "No such file");
	spec = (struct pack_spec){.output = out, .folder = SERVER};
	PACK_FAILS(&spec, "a file as --folder", SERVER, "not a folder");
	spec = (struct pack_spec){.output = out, .binary = TREE};
	PACK_FAILS(&spec, "a folder as --binary", TREE, "is a folder");

	/* a named pipe in a folder */
	cleanup_free char *fifo_dir = in_base("errors/with-fifo");
	cleanup_free char *sub = in_base("errors/with-fifo/sub");
	cleanup_free char *fifo = in_base("errors/with-fifo/sub/pipe");
	make_dir(fifo_dir, 0755);
	make_dir(sub, 0755);
	if (mkfifo(fifo, 0644) < 0)
		bail("cannot make", fifo);
	spec = (struct pack_spec){.output = out, .folder = fifo_dir};
	PACK_FAILS(&spec, "a named pipe in the folder", fifo, "named pipe",
	           "only files, folders and symlinks");
	cleanup_free char *add = xasprintf("%s:/p", fifo);
	const char *adds[] = {add};
	spec = (struct pack_spec){.output = out, .binary = SERVER, .adds = adds, .n_adds = 1};
	PACK_FAILS(&spec, "a named pipe as --add", fifo, "named pipe");
	T_INT(count_entries(dir), 1, "failures leave nothing beside the output");

	/* outputs that cannot be written */
	spec = (struct pack_spec){.output = "/nonexistent-mcpgate-dir/out.tar", .binary = SERVER};
	PACK_FAILS(&spec, "an output in a missing folder", "/nonexistent-mcpgate-dir/out.tar",
	           "No such file or directory");
	spec = (struct pack_spec){.output = dir, .binary = SERVER};
	pack_fails(&spec, "an output that is a folder",
	           (const char *const[]){dir, "is a folder", NULL});
	spec = (struct pack_spec){.output = "/proc/mcpgate-pack-test.tar", .binary = SERVER};
	PACK_FAILS(&spec, "an output on /proc", "/proc/mcpgate-pack-test.tar", "cannot write");
	spec = (struct pack_spec){.binary = SERVER};
	PACK_FAILS(&spec, "no output", "--output");
	spec = (struct pack_spec){.output = out};
	PACK_FAILS(&spec, "nothing to pack", "nothing to pack");

	/* an output inside what is packed */
	cleanup_free char *inside = in_base("errors/with-fifo/sub/out.tar");
	spec = (struct pack_spec){.output = inside, .folder = fifo_dir};
	PACK_FAILS(&spec, "an output inside --folder", inside, "inside --folder", fifo_dir);
	cleanup_free char *add_dir = xasprintf("%s:/x", sub);
	const char *add_dirs[] = {add_dir};
	spec =
	    (struct pack_spec){.output = inside, .binary = SERVER, .adds = add_dirs, .n_adds = 1};
	PACK_FAILS(&spec, "an output inside an --add folder", "inside --add", sub);

	/* two things at one path, and paths that cannot be */
	cleanup_free char *add_bin = xasprintf("%s:/bin", SERVER);
	const char *clash[] = {add_bin};
	spec = (struct pack_spec){.output = out, .folder = TREE, .adds = clash, .n_adds = 1};
	PACK_FAILS(&spec, "a file where the folder has a folder", "two things at /bin",
	           "the file " SERVER, "the folder " TREE "/bin");
	cleanup_free char *add_under = xasprintf("%s:/server/x", SERVER);
	const char *under[] = {add_under};
	spec = (struct pack_spec){.output = out, .binary = SERVER, .adds = under, .n_adds = 1};
	PACK_FAILS(&spec, "a file under a file", "two things at /server", "a folder needed by");
	cleanup_free char *add_link = xasprintf("%s:/link/x", SERVER);
	const char *under_link[] = {add_link};
	spec = (struct pack_spec){.output = out, .folder = TREE, .adds = under_link, .n_adds = 1};
	PACK_FAILS(&spec, "a file under a symlink", "two things at /link", "the symlink");
	spec = (struct pack_spec){.output = out, .binary = SERVER, .binary_dest = "/a/../etc/x"};
	PACK_FAILS(&spec, "a .. in --path-in-image", "--path-in-image", "\"..\"");
	spec = (struct pack_spec){.output = out, .binary = SERVER, .binary_dest = "relative"};
	PACK_FAILS(&spec, "a relative --path-in-image", "not an absolute path");
	spec = (struct pack_spec){.output = out, .binary = SERVER, .binary_dest = "//"};
	PACK_FAILS(&spec, "the root as --path-in-image", "root folder");
	cleanup_free char *wh_dir = in_base("errors/whiteout");
	cleanup_free char *wh = in_base("errors/whiteout/.wh.etc");
	make_dir(wh_dir, 0755);
	spill(wh, "", 0644);
	spec = (struct pack_spec){.output = out, .folder = wh_dir};
	PACK_FAILS(&spec, "a whiteout name in the folder", wh, "deletion");
	const char *no_dest[] = {SERVER};
	spec = (struct pack_spec){.output = out, .adds = no_dest, .n_adds = 1};
	PACK_FAILS(&spec, "--add without a DEST", "--add", "SRC:DEST");
	const char *rel_dest[] = {SERVER ":x"};
	spec = (struct pack_spec){.output = out, .adds = rel_dest, .n_adds = 1};
	PACK_FAILS(&spec, "--add with a relative DEST", "SRC:DEST");
	const char *root_file[] = {SERVER ":/"};
	spec = (struct pack_spec){.output = out, .adds = root_file, .n_adds = 1};
	PACK_FAILS(&spec, "--add of a file at /", "root folder");

	/* the configuration's values */
	const char *bad_env[] = {"1X=2"};
	spec = (struct pack_spec){.output = out, .binary = SERVER, .env = bad_env, .n_env = 1};
	PACK_FAILS(&spec, "an environment name starting with a digit", "--env", "1X=2");
	const char *no_eq[] = {"NAME"};
	spec = (struct pack_spec){.output = out, .binary = SERVER, .env = no_eq, .n_env = 1};
	PACK_FAILS(&spec, "an environment variable without =", "--env", "NAME=VALUE");
	const char *bad_label[] = {"=v"};
	spec =
	    (struct pack_spec){.output = out, .binary = SERVER, .labels = bad_label, .n_labels = 1};
	PACK_FAILS(&spec, "a label without a key", "--label", "KEY=VALUE");
	spec = (struct pack_spec){.output = out, .binary = SERVER, .user = "root"};
	PACK_FAILS(&spec, "a user name", "--user", "numbers");
	spec = (struct pack_spec){.output = out, .binary = SERVER, .user = "1:"};
	PACK_FAILS(&spec, "a user with an empty group", "--user");
	spec = (struct pack_spec){.output = out, .binary = SERVER, .user = "4294967295"};
	PACK_FAILS(&spec, "a user out of range", "--user", "out of range");
	spec = (struct pack_spec){.output = out, .binary = SERVER, .name = "Bad/Name"};
	PACK_FAILS(&spec, "a bad name", "--name");
	spec = (struct pack_spec){.output = out, .binary = SERVER, .arch = "sparc"};
	PACK_FAILS(&spec, "an unknown architecture", "--arch", "sparc");
	spec = (struct pack_spec){.output = out, .binary = SERVER, .arch = "arm/V7"};
	PACK_FAILS(&spec, "a bad variant", "--arch");
	const char *args[] = {"x"};
	spec = (struct pack_spec){
	    .output = out, .folder = TREE, .entrypoint_args = args, .n_entrypoint_args = 1};
	PACK_FAILS(&spec, "--entrypoint-arg without a program", "--entrypoint-arg");
	spec = (struct pack_spec){.output = out, .folder = TREE, .binary_dest = "/x"};
	PACK_FAILS(&spec, "--path-in-image without --binary", "--path-in-image");
	spec = (struct pack_spec){.output = out, .binary = SERVER, .mtime = 253402300800ull};
	PACK_FAILS(&spec, "a time after 9999", "9999");
	T_INT(count_entries(dir), 2, "failures leave nothing beside the output (the inputs only)");
}

static void test_warnings(void)
{
	cleanup_free char *out = in_base("warn.tar");
	struct pack_result res;
	/* this test program is dynamically linked (sanitizers need it) */
	struct pack_spec spec = {.output = out, .binary = "/proc/self/exe"};
	if (pack_ok(&spec, &res, "a dynamically linked binary") == 0) {
		T_INT((long long)res.warnings.n, 1, "one warning");
		T_OK(res.warnings.n == 1 &&
		         strstr(res.warnings.v[0], "dynamically linked") != NULL &&
		         strstr(res.warnings.v[0], "/proc/self/exe") != NULL,
		     "it says the binary is dynamically linked: %s",
		     res.warnings.n > 0 ? res.warnings.v[0] : "");
	}
	pack_result_free(&res);
	spec = (struct pack_spec){.output = out, .binary = "/proc/self/exe", .arch = "s390x"};
	if (pack_ok(&spec, &res, "a binary for another architecture") == 0) {
		bool said = false;
		for (size_t i = 0; i < res.warnings.n; i++)
			said =
			    said || strstr(res.warnings.v[i], "but the image says s390x") != NULL;
		T_OK(said, "a warning says the architectures differ");
		T_STR(res.platform, "linux/s390x", "the platform given");
	}
	pack_result_free(&res);
	spec = (struct pack_spec){.output = out, .folder = TREE};
	if (pack_ok(&spec, &res, "a folder without an entrypoint") == 0)
		T_OK(res.warnings.n == 1 && strstr(res.warnings.v[0], "no entrypoint") != NULL,
		     "a warning says there is no entrypoint");
	pack_result_free(&res);
	const char *ep[] = {"/nope", "x"};
	spec =
	    (struct pack_spec){.output = out, .folder = TREE, .entrypoint = ep, .n_entrypoint = 2};
	if (pack_ok(&spec, &res, "an entrypoint that is not in the image") == 0)
		T_OK(res.warnings.n == 1 && strstr(res.warnings.v[0], "/nope is not in") != NULL,
		     "a warning names the missing entrypoint");
	pack_result_free(&res);
	const char *ep2[] = {"/bin/run.sh"};
	spec =
	    (struct pack_spec){.output = out, .folder = TREE, .entrypoint = ep2, .n_entrypoint = 1};
	if (pack_ok(&spec, &res, "a folder with its entrypoint") == 0)
		T_INT((long long)res.warnings.n, 0, "no warning");
	pack_result_free(&res);
	unlink(out);
}

int main(void)
{
	/* names in layers are UTF-8; libarchive reads them through the locale */
	if (sodium_init() < 0 || setlocale(LC_CTYPE, "C.UTF-8") == NULL || mkdtemp(base) == NULL) {
		printf("Bail out! cannot start\n");
		return 1;
	}
	test_parse_ref();
	test_parse_entrypoint();
	test_layout();
	test_base_layer();
	test_lower_blobs();
	test_defaults();
	test_names();
	test_reproducible();
	test_errors();
	test_warnings();
	rm_rf(base);
	return t_done();
}
