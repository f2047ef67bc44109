/* Tests of the keychain: the store, the bindings, the file's defences (wrong
 * key, altered and truncated files leave everything as it was), concurrent
 * writers, passphrase mode. Every test works in its own folder under one
 * temporary folder, removed at the end. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sodium.h>

#include "internal/base/cleanup.h"
#include "internal/base/testing.h"
#include "internal/base/xalloc.h"
#include "internal/keychain/keychain.h"

#define VALUE  "s3cret-Value-that-must-never-leak"
#define VALUE2 "another-Value-0123456789"

static char base[] = "/tmp/mcpgate-keychain-test-XXXXXX";

static char *new_dir(const char *name)
{
	return xasprintf("%s/%s", base, name);
}

/* a file's bytes, or NULL when it cannot be read */
static unsigned char *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return NULL;
	}
	unsigned char *p = xmalloc((size_t)st.st_size + 1);
	ssize_t n = read(fd, p, (size_t)st.st_size);
	close(fd);
	if (n != st.st_size) {
		free(p);
		return NULL;
	}
	*len = (size_t)n;
	return p;
}

static void spill(const char *path, const void *data, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0 || write(fd, data, len) != (ssize_t)len || fchmod(fd, mode) < 0) {
		printf("Bail out! cannot write %s\n", path);
		exit(1);
	}
	close(fd);
}

static bool same_file(const char *path, const unsigned char *want, size_t want_len)
{
	size_t len = 0;
	cleanup_free unsigned char *got = slurp(path, &len);
	return got != NULL && len == want_len && memcmp(got, want, len) == 0;
}

static bool has(const char *s, const char *part)
{
	return s != NULL && strstr(s, part) != NULL;
}

static bool value_is(const struct kc *kc, const char *name, const char *want)
{
	struct kc_secret *v = NULL;
	if (kc_get(kc, name, &v, NULL) < 0)
		return false;
	bool ok = kc_secret_equal(v, want, strlen(want)) && v->bytes[v->len] == '\0';
	kc_secret_free(v);
	return ok;
}

static struct kc *open_ok(const char *dir)
{
	struct kc *kc = NULL;
	cleanup_err struct mg_err *err = NULL;
	if (kc_open(dir, &kc, &err) < 0) {
		printf("Bail out! kc_open %s: %s\n", dir, mg_err_msg(err));
		exit(1);
	}
	return kc;
}

static int set(struct kc *kc, const char *name, const char *value)
{
	cleanup_err struct mg_err *err = NULL;
	int r = kc_set(kc, name, value, strlen(value), &err);
	if (r < 0)
		t_note("kc_set %s: %s", name, mg_err_msg(err));
	return r;
}

static struct cfg_host host(const char *text)
{
	struct cfg_host h = {0};
	if (cfg_parse_host(text, "host", &h, NULL) < 0) {
		printf("Bail out! bad host %s\n", text);
		exit(1);
	}
	return h;
}

static int bind(struct kc *kc, const char *name, const char *h1, const char *h2,
                enum cfg_position position, const char *pname)
{
	struct cfg_host hosts[2] = {host(h1), h2 != NULL ? host(h2) : (struct cfg_host){0}};
	cleanup_err struct mg_err *err = NULL;
	int r = kc_bind(kc, name, hosts, h2 != NULL ? 2 : 1, position, pname, &err);
	if (r < 0)
		t_note("kc_bind %s: %s", name, mg_err_msg(err));
	free(hosts[0].host);
	free(hosts[1].host);
	return r;
}

/* MCPGATE_PASSPHRASE_FD names a pipe that holds text */
static int passphrase_pipe(const char *text)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0 || write(p[1], text, strlen(text)) != (ssize_t)strlen(text)) {
		printf("Bail out! pipe\n");
		exit(1);
	}
	close(p[1]);
	char fd[16];
	snprintf(fd, sizeof(fd), "%d", p[0]);
	setenv(KC_PASSPHRASE_FD, fd, 1);
	return p[0];
}

static void test_round_trip(void)
{
	cleanup_free char *dir = new_dir("round/data/mcpgate");
	struct kc *kc = open_ok(dir);
	size_t n = 9;
	kc_list(kc, &n);
	T_INT((long long)n, 0, "a keychain that does not exist yet is empty");
	struct stat st;
	T_OK(stat(dir, &st) < 0 && errno == ENOENT, "opening creates nothing");
	T_INT(set(kc, "gh.token", VALUE), 0, "set a new secret returns 0");
	T_OK(value_is(kc, "gh.token", VALUE), "get returns the value set");
	T_INT(set(kc, "gh.token", VALUE2), 1, "set again replaces (returns 1)");
	T_OK(value_is(kc, "gh.token", VALUE2), "get returns the new value");
	T_INT(set(kc, "a-first", VALUE), 0, "a second secret");
	kc_free(kc);

	kc = open_ok(dir);
	T_OK(value_is(kc, "gh.token", VALUE2) && value_is(kc, "a-first", VALUE),
	     "both read back from the file by a new kc");
	const struct kc_info *info = kc_list(kc, &n);
	T_OK(n == 2 && strcmp(info[0].name, "a-first") == 0 &&
	         strcmp(info[1].name, "gh.token") == 0,
	     "list gives the names in order");
	struct kc_secret *v = NULL;
	cleanup_err struct mg_err *err = NULL;
	T_INT(kc_get(kc, "nope", &v, &err), -1, "get of an unknown name fails");
	T_OK(has(mg_err_msg(err), "no secret nope"), "and says so: %s", mg_err_msg(err));
	mg_err_clear(&err);

	int sr = stat(dir, &st);
	T_OK(sr == 0 && (st.st_mode & 07777) == 0700, "the folder is 0700 (%o)",
	     st.st_mode & 07777);
	cleanup_free char *parent = new_dir("round/data");
	T_OK(stat(parent, &st) == 0 && (st.st_mode & 07777) == 0700, "a parent made is 0700 too");
	sr = stat(kc_path(kc), &st);
	T_OK(sr == 0 && (st.st_mode & 07777) == 0600, "the file is 0600 (%o)", st.st_mode & 07777);
	T_OK(stat(kc_key_path(kc), &st) == 0 && (st.st_mode & 07777) == 0600 && st.st_size == 32,
	     "keychain.key is 0600, 32 bytes");
	cleanup_free char *lock = xasprintf("%s/keychain.lock", dir);
	T_OK(stat(lock, &st) == 0 && (st.st_mode & 07777) == 0600, "keychain.lock is 0600");

	size_t len = 0;
	cleanup_free unsigned char *bytes = slurp(kc_path(kc), &len);
	T_OK(bytes != NULL && memmem(bytes, len, VALUE, strlen(VALUE)) == NULL &&
	         memmem(bytes, len, VALUE2, strlen(VALUE2)) == NULL &&
	         memmem(bytes, len, "s3cret", 6) == NULL,
	     "no value appears in the file in clear");
	T_OK(bytes != NULL && memmem(bytes, len, "gh.token", 8) != NULL,
	     "names are in the file in clear (they are not secret)");
	T_OK(bytes != NULL && memcmp(bytes, "MGKCHAIN\x01\x01", 10) == 0,
	     "magic, version 1, key kind 1 (key file)");
	cleanup_free char *tmp = xasprintf("%s/.keychain.tmp", dir);
	T_OK(access(tmp, F_OK) < 0, "no temporary file is left behind");

	/* every write seals every entry again with a fresh nonce */
	T_INT(set(kc, "a-first", VALUE), 1, "rewrite with the same values");
	size_t len2 = 0;
	cleanup_free unsigned char *bytes2 = slurp(kc_path(kc), &len2);
	T_OK(bytes2 != NULL && len2 == len && memcmp(bytes, bytes2, len) != 0,
	     "the same content is written with new nonces (the bytes differ)");

	T_INT(kc_remove(kc, "a-first", &err), 0, "rm");
	T_OK(kc_find(kc, "a-first") == NULL && kc_get(kc, "a-first", &v, NULL) < 0,
	     "a removed secret is gone");
	T_INT(kc_remove(kc, "a-first", &err), -1, "rm of a name not there fails");
	T_OK(has(mg_err_msg(err), "no secret a-first"), "and names it: %s", mg_err_msg(err));
	mg_err_clear(&err);
	kc_free(kc);
	kc = open_ok(dir);
	kc_list(kc, &n);
	T_OK(n == 1 && value_is(kc, "gh.token", VALUE2), "rm is in the file");
	kc_free(kc);
}

static void test_limits(void)
{
	cleanup_free char *dir = new_dir("limits");
	struct kc *kc = open_ok(dir);
	cleanup_err struct mg_err *err = NULL;
	T_INT(kc_set(kc, "x", "", 0, &err), -1, "an empty value is refused");
	mg_err_clear(&err);
	T_INT(kc_set(kc, "bad/name", "v", 1, &err), -1, "a bad name is refused");
	T_OK(has(mg_err_msg(err), "bad/name"), "and named: %s", mg_err_msg(err));
	mg_err_clear(&err);
	cleanup_free char *big = xmalloc(KC_SECRET_MAX + 1);
	memset(big, 'q', KC_SECRET_MAX + 1);
	T_INT(kc_set(kc, "big", big, KC_SECRET_MAX + 1, &err), -1,
	      "a value over 64 KiB is refused");
	T_OK(!has(mg_err_msg(err), "qqqq"), "without the value in the message: %s",
	     mg_err_msg(err));
	mg_err_clear(&err);
	T_INT(kc_set(kc, "big", big, KC_SECRET_MAX, &err), 0, "a value of exactly 64 KiB is kept");
	struct kc_secret *v = NULL;
	T_OK(kc_get(kc, "big", &v, NULL) == 0 && kc_secret_equal(v, big, KC_SECRET_MAX),
	     "and read back whole");
	kc_secret_free(v);
	kc_secret_free(NULL);
	static const unsigned char binary[] = {0, 1, 2, 0xff, '\n', 0};
	T_INT(kc_set(kc, "bin", binary, sizeof(binary), &err), 0, "any bytes are stored");
	T_OK(kc_get(kc, "bin", &v, NULL) == 0 && kc_secret_equal(v, binary, sizeof(binary)),
	     "and read back exactly");
	kc_secret_free(v);
	kc_free(kc);
}

static int collect(const char *name, const struct kc_secret *value, void *data, struct mg_err **err)
{
	char *text = data; /* 256 bytes */
	size_t n = strlen(text);
	snprintf(text + n, 256 - n, "%s=%zu%s;", name, value->len,
	         kc_secret_equal(value, VALUE, strlen(VALUE))     ? "v1"
	         : kc_secret_equal(value, VALUE2, strlen(VALUE2)) ? "v2"
	                                                          : "?");
	if (strcmp(name, "stop") == 0)
		return mg_err_set(err, "stopped at %s", name);
	return 0;
}

static void test_each(void)
{
	cleanup_free char *dir = new_dir("each");
	struct kc *kc = open_ok(dir);
	set(kc, "b", VALUE2);
	set(kc, "a", VALUE);
	char seen[256] = "";
	T_INT(kc_each_secret(kc, collect, seen, NULL), 0, "kc_each_secret walks them all");
	T_STR(seen, "a=33v1;b=24v2;", "in name order, each value whole");
	set(kc, "stop", VALUE);
	set(kc, "z", VALUE);
	seen[0] = '\0';
	cleanup_err struct mg_err *err = NULL;
	T_INT(kc_each_secret(kc, collect, seen, &err), -1, "a callback's failure stops the walk");
	T_STR(seen, "a=33v1;b=24v2;stop=33v1;", "at that secret");
	T_STR(mg_err_msg(err), "stopped at stop", "with the callback's message");
	kc_free(kc);
}

static void test_bindings(void)
{
	cleanup_free char *dir = new_dir("bind");
	struct kc *kc = open_ok(dir);
	cleanup_err struct mg_err *err = NULL;
	struct cfg_host h = host("api.github.com");
	T_INT(kc_bind(kc, "gh.token", &h, 1, CFG_POSITION_ENV, "GH_TOKEN", &err), -1,
	      "binding a secret not stored fails");
	T_OK(has(mg_err_msg(err), "no secret gh.token"), "and says so: %s", mg_err_msg(err));
	mg_err_clear(&err);
	free(h.host);

	set(kc, "gh.token", VALUE);
	set(kc, "unbound", VALUE2);
	T_INT(
	    bind(kc, "gh.token", "api.github.com", "GitHub.com:8443", CFG_POSITION_ENV, "GH_TOKEN"),
	    2, "bind to two hosts adds two bindings");
	T_INT(bind(kc, "gh.token", "api.github.com", NULL, CFG_POSITION_ENV, "GH_TOKEN"), 0,
	      "binding again adds nothing");
	T_INT(bind(kc, "gh.token", "[2001:db8::1]", NULL, CFG_POSITION_HEADER, "Authorization"), 1,
	      "a header binding to an IPv6 host");
	T_INT(set(kc, "gh.token", VALUE2), 1, "replacing the value...");
	kc_free(kc);
	kc = open_ok(dir);

	const struct kc_info *info = kc_find(kc, "gh.token");
	T_OK(info != NULL && info->nbindings == 3, "...keeps the bindings, in the file");
	if (info != NULL && info->nbindings == 3) {
		T_OK(strcmp(info->bindings[0].host, "api.github.com") == 0 &&
		         info->bindings[0].port == 0 &&
		         info->bindings[0].position == CFG_POSITION_ENV &&
		         strcmp(info->bindings[0].position_name, "GH_TOKEN") == 0,
		     "binding 1: api.github.com env:GH_TOKEN");
		T_OK(strcmp(info->bindings[1].host, "github.com") == 0 &&
		         info->bindings[1].port == 8443,
		     "binding 2: github.com:8443, lower-cased");
		T_OK(strcmp(info->bindings[2].host, "[2001:db8::1]") == 0 &&
		         info->bindings[2].position == CFG_POSITION_HEADER,
		     "binding 3: [2001:db8::1] header:Authorization");
	}
	size_t n;
	const struct kc_info *all = kc_list(kc, &n);
	T_OK(n == 2 && all[1].nbindings == 0, "list shows a secret with no binding");

	T_OK(kc_bound_for(kc, "gh.token", "api.github.com", 443, CFG_POSITION_ENV, "GH_TOKEN"),
	     "bound: the bare host covers 443");
	T_OK(kc_bound_for(kc, "gh.token", "api.github.com", 80, CFG_POSITION_ENV, "GH_TOKEN"),
	     "bound: the bare host covers 80");
	T_OK(kc_bound_for(kc, "gh.token", "api.github.com", 0, CFG_POSITION_ENV, "GH_TOKEN"),
	     "bound: the bare host asked as a bare host");
	T_OK(!kc_bound_for(kc, "gh.token", "api.github.com", 8080, CFG_POSITION_ENV, "GH_TOKEN"),
	     "refused: another port than the bare host's");
	T_OK(kc_bound_for(kc, "gh.token", "github.com", 8443, CFG_POSITION_ENV, "GH_TOKEN"),
	     "bound: host:port");
	T_OK(!kc_bound_for(kc, "gh.token", "github.com", 443, CFG_POSITION_ENV, "GH_TOKEN"),
	     "refused: a host bound on a port, asked on 443");
	T_OK(!kc_bound_for(kc, "gh.token", "github.com", 0, CFG_POSITION_ENV, "GH_TOKEN"),
	     "refused: a host bound on a port, asked as a bare host");
	T_OK(!kc_bound_for(kc, "gh.token", "evil.example", 443, CFG_POSITION_ENV, "GH_TOKEN"),
	     "refused: wrong host");
	T_OK(!kc_bound_for(kc, "gh.token", "api.github.com.evil.example", 443, CFG_POSITION_ENV,
	                   "GH_TOKEN"),
	     "refused: a host that only starts with a bound one");
	T_OK(!kc_bound_for(kc, "gh.token", "api.github.com", 443, CFG_POSITION_HEADER, "GH_TOKEN"),
	     "refused: wrong position kind (header, bound as env)");
	T_OK(!kc_bound_for(kc, "gh.token", "api.github.com", 443, CFG_POSITION_ENV, "GITHUB_TOKEN"),
	     "refused: wrong position name");
	T_OK(!kc_bound_for(kc, "gh.token", "api.github.com", 443, CFG_POSITION_ENV, "gh_token"),
	     "refused: environment names compare exactly");
	T_OK(!kc_bound_for(kc, "gh.token", "api.github.com", 443, CFG_POSITION_NONE, "GH_TOKEN"),
	     "refused: no position");
	T_OK(kc_bound_for(kc, "gh.token", "[2001:db8::1]", 443, CFG_POSITION_HEADER,
	                  "authorization"),
	     "bound: header names compare without case");
	T_OK(!kc_bound_for(kc, "gh.token", "[2001:db8::1]", 443, CFG_POSITION_ENV, "Authorization"),
	     "refused: the header binding asked as env");
	T_OK(!kc_bound_for(kc, "unbound", "api.github.com", 443, CFG_POSITION_ENV, "GH_TOKEN"),
	     "refused: a secret with no binding");
	T_OK(!kc_bound_for(kc, "missing", "api.github.com", 443, CFG_POSITION_ENV, "GH_TOKEN"),
	     "refused: no such secret");
	T_OK(!kc_bound_for(kc, "gh.token", NULL, 443, CFG_POSITION_ENV, "GH_TOKEN"),
	     "refused: no host");

	h = host("evil.example");
	T_INT(kc_bind(kc, "gh.token", &h, 1, CFG_POSITION_ENV, "PATH", &err), -1,
	      "a reserved variable is refused as a position");
	T_OK(has(mg_err_msg(err), "PATH"), "and named: %s", mg_err_msg(err));
	mg_err_clear(&err);
	T_INT(kc_bind(kc, "gh.token", &h, 1, CFG_POSITION_NONE, "X", &err), -1,
	      "no position is refused");
	mg_err_clear(&err);
	free(h.host);
	struct cfg_host raw = {.host = "Evil.Example", .port = 0};
	T_INT(kc_bind(kc, "gh.token", &raw, 1, CFG_POSITION_ENV, "X", &err), -1,
	      "a host not in normal form is refused");
	mg_err_clear(&err);

	T_INT(kc_unbind(kc, "gh.token", "github.com", 443, &err), 0,
	      "unbind of a host:port not bound removes nothing");
	T_INT(kc_unbind(kc, "gh.token", "github.com", 8443, &err), 1, "unbind one host:port");
	T_OK(!kc_bound_for(kc, "gh.token", "github.com", 8443, CFG_POSITION_ENV, "GH_TOKEN"),
	     "it is refused afterwards");
	T_OK(kc_bound_for(kc, "gh.token", "api.github.com", 443, CFG_POSITION_ENV, "GH_TOKEN"),
	     "the other binding stays");
	T_INT(kc_unbind(kc, "gh.token", NULL, 0, &err), 2, "unbind every binding");
	T_OK(!kc_bound_for(kc, "gh.token", "api.github.com", 443, CFG_POSITION_ENV, "GH_TOKEN"),
	     "nothing is bound afterwards");
	T_INT(kc_unbind(kc, "nope", NULL, 0, &err), -1, "unbind of an unknown secret fails");
	mg_err_clear(&err);
	kc_free(kc);
	kc = open_ok(dir);
	info = kc_find(kc, "gh.token");
	T_OK(info != NULL && info->nbindings == 0 && value_is(kc, "gh.token", VALUE2),
	     "unbind is in the file; the value stays");
	bind(kc, "unbound", "db.example", NULL, CFG_POSITION_ENV, "DB");
	cleanup_err struct mg_err *e2 = NULL;
	kc_remove(kc, "unbound", &e2);
	set(kc, "unbound", VALUE);
	info = kc_find(kc, "unbound");
	T_OK(info != NULL && info->nbindings == 0, "rm takes the bindings with the secret");
	kc_free(kc);
}

/* Open dir and expect failure with a message holding each of the words;
 * the file must be byte for byte as it was. */
static void expect_refused(const char *dir, const char *what, const char *word,
                           const unsigned char *bytes, size_t len)
{
	struct kc *kc = NULL;
	cleanup_err struct mg_err *err = NULL;
	cleanup_free char *path = xasprintf("%s/keychain", dir);
	int r = kc_open(dir, &kc, &err);
	T_INT(r, -1, "%s: refused", what);
	if (r == 0)
		kc_free(kc);
	const char *msg = mg_err_msg(err);
	T_OK(has(msg, path) && has(msg, word) && !has(msg, "s3cret"),
	     "%s: the message names the file and says \"%s\": %s", what, word, msg);
	T_OK(same_file(path, bytes, len), "%s: the file is untouched", what);
}

/* A kc opened on the good file; then the file is replaced by bad bytes;
 * a change must fail and leave the bad file exactly as it is. */
static void expect_change_refused(const char *dir, const char *what, const unsigned char *good,
                                  size_t good_len, const unsigned char *bad, size_t bad_len)
{
	cleanup_free char *path = xasprintf("%s/keychain", dir);
	spill(path, good, good_len, 0600);
	struct kc *kc = open_ok(dir);
	spill(path, bad, bad_len, 0600);
	cleanup_err struct mg_err *err = NULL;
	T_INT(kc_set(kc, "new.one", VALUE2, strlen(VALUE2), &err), -1,
	      "%s: a change on it is refused", what);
	T_OK(same_file(path, bad, bad_len), "%s: and the file is not rewritten", what);
	struct cfg_host h = host("x.example");
	T_INT(kc_bind(kc, "a.key", &h, 1, CFG_POSITION_ENV, "TOKEN", NULL), -1, "%s: so is a bind",
	      what);
	free(h.host);
	T_OK(same_file(path, bad, bad_len), "%s: still not rewritten", what);
	kc_free(kc);
}

static void test_damage(void)
{
	cleanup_free char *dir = new_dir("damage");
	struct kc *kc = open_ok(dir);
	set(kc, "a.key", VALUE);
	bind(kc, "a.key", "api.example.com", NULL, CFG_POSITION_ENV, "TOKEN");
	cleanup_free char *path = xstrdup(kc_path(kc));
	kc_free(kc);
	size_t len = 0;
	cleanup_free unsigned char *good = slurp(path, &len);
	/* docs/credentials.md's layout: the header (76 bytes), then the entry:
	 * name length (76), name (77-81), binding count (82-83), the binding
	 * (84-108: kind, length, "TOKEN", length, "api.example.com", port),
	 * nonce (109-132), sealed length (133-136), sealed value (137-...), then
	 * the 32-byte tag */
	size_t vlen = strlen(VALUE);
	T_INT((long long)len, 76 + 61 + (long long)vlen + 16 + 32, "the file is %zu bytes", len);
	if (len != 76 + 61 + vlen + 16 + 32)
		return;
	struct {
		size_t at;
		const char *what;
		const char *word;
	} flips[] = {
	    {0, "magic", "not an mcpgate keychain"},
	    {8, "version", "version 0"},
	    {9, "key kind", "digest"},
	    {12, "kdf settings", "digest"},
	    {30, "salt", "digest"},
	    {40, "header digest", "digest"},
	    {60, "key check", "key check does not match"},
	    {72, "entry count", "altered"},
	    {76, "name length", "altered"},
	    {79, "name", "altered"},
	    {82, "binding count", "altered"},
	    {84, "binding kind", "altered"},
	    {87, "binding position name", "altered"},
	    {95, "binding host", "altered"},
	    {107, "binding port", "altered"},
	    {109, "nonce (first byte)", "altered"},
	    {132, "nonce (last byte)", "altered"},
	    {133, "sealed length", "altered"},
	    {137, "ciphertext (first byte)", "altered"},
	    {137 + vlen + 3, "ciphertext (its tag)", "altered"},
	    {len - 32, "file tag (first byte)", "altered"},
	    {len - 1, "file tag (last byte)", "altered"},
	};
	for (size_t i = 0; i < sizeof(flips) / sizeof(flips[0]); i++) {
		cleanup_free unsigned char *bad = xmemdup(good, len);
		bad[flips[i].at] ^= 0x01;
		spill(path, bad, len, 0600);
		cleanup_free char *what =
		    xasprintf("a flipped byte at %zu (%s)", flips[i].at, flips[i].what);
		expect_refused(dir, what, flips[i].word, bad, len);
		expect_change_refused(dir, what, good, len, bad, len);
	}

	size_t cuts[] = {0, 5, 75, 76 + 32 - 1, 90, 140, len - 33, len - 32, len - 1};
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		spill(path, good, cuts[i], 0600);
		cleanup_free char *what = xasprintf("a file cut to %zu bytes", cuts[i]);
		expect_refused(dir, what, "truncated", good, cuts[i]);
		expect_change_refused(dir, what, good, len, good, cuts[i]);
	}

	cleanup_free unsigned char *longer = xmalloc(len + 1);
	memcpy(longer, good, len);
	longer[len] = 'x';
	spill(path, longer, len + 1, 0600);
	expect_refused(dir, "a byte appended", "altered", longer, len + 1);

	spill(path, good, len, 0600);
	kc = open_ok(dir);
	T_OK(value_is(kc, "a.key", VALUE), "the good file reads again");
	kc_free(kc);
}

static void test_wrong_key(void)
{
	cleanup_free char *dir = new_dir("key-a");
	cleanup_free char *other = new_dir("key-b");
	struct kc *kc = open_ok(dir);
	set(kc, "a.key", VALUE);
	kc_free(kc);
	size_t len = 0;
	cleanup_free char *path = xasprintf("%s/keychain", dir);
	cleanup_free char *key_path = xasprintf("%s/keychain.key", dir);
	cleanup_free unsigned char *good = slurp(path, &len);
	size_t klen = 0;
	cleanup_free unsigned char *key = slurp(key_path, &klen);

	/* the same file beside another key */
	mkdir(other, 0700);
	cleanup_free char *other_path = xasprintf("%s/keychain", other);
	cleanup_free char *other_key = xasprintf("%s/keychain.key", other);
	unsigned char k2[32];
	randombytes_buf(k2, sizeof(k2));
	spill(other_key, k2, sizeof(k2), 0600);
	spill(other_path, good, len, 0600);
	expect_refused(other, "another key file", "wrong key", good, len);

	/* a kc opened with the right key, then the key file replaced */
	kc = open_ok(dir);
	spill(key_path, k2, sizeof(k2), 0600);
	cleanup_err struct mg_err *err = NULL;
	T_INT(kc_set(kc, "b.key", VALUE2, strlen(VALUE2), &err), -1,
	      "a change after the key file was swapped is refused");
	T_OK(has(mg_err_msg(err), "wrong key"), "as a wrong key: %s", mg_err_msg(err));
	T_OK(same_file(path, good, len), "and the file is untouched");
	kc_free(kc);
	mg_err_clear(&err);

	/* the key file missing: never made again over an existing keychain */
	unlink(key_path);
	expect_refused(dir, "a missing key file", "missing", good, len);
	kc = NULL;
	cleanup_free char *empty = new_dir("key-c");
	mkdir(empty, 0700);
	cleanup_free char *empty_path = xasprintf("%s/keychain", empty);
	spill(empty_path, good, len, 0600);
	T_INT(kc_open(empty, &kc, &err), -1, "a keychain without its key file does not open");
	mg_err_clear(&err);
	cleanup_free char *empty_key = xasprintf("%s/keychain.key", empty);
	T_OK(access(empty_key, F_OK) < 0, "and no new key file is made for it");

	/* the key file readable by others */
	spill(key_path, key, klen, 0644);
	expect_refused(dir, "a key file others may read", "chmod 600", good, len);
	spill(key_path, k2, 16, 0600);
	expect_refused(dir, "a key file of 16 bytes", "exactly 32", good, len);
	spill(key_path, key, klen, 0600);
	kc = open_ok(dir);
	T_OK(value_is(kc, "a.key", VALUE), "with its own key back, the file reads");
	kc_free(kc);
}

static void test_dir_mode(void)
{
	cleanup_free char *dir = new_dir("open-dir");
	mkdir(dir, 0755);
	chmod(dir, 0755);
	struct kc *kc = open_ok(dir);
	set(kc, "a", VALUE);
	kc_free(kc);
	struct stat st;
	T_OK(stat(dir, &st) == 0 && (st.st_mode & 07777) == 0700,
	     "a data folder open to others is closed to 0700 on the first write");
}

/* each child sets 50 names of its own, each in its own change, once the
 * parent closes the start pipe */
static void writer(const char *dir, int id, int start)
{
	char c;
	while (read(start, &c, 1) < 0 && errno == EINTR)
		;
	struct kc *kc = NULL;
	if (kc_open(dir, &kc, NULL) < 0)
		_exit(10);
	for (int i = 0; i < 50; i++) {
		char name[32], value[64];
		snprintf(name, sizeof(name), "w%d.n%02d", id, i);
		snprintf(value, sizeof(value), "value-%d-%d", id, i);
		cleanup_err struct mg_err *err = NULL;
		if (kc_set(kc, name, value, strlen(value), &err) < 0) {
			fprintf(stderr, "writer %d: %s\n", id, mg_err_msg(err));
			_exit(11);
		}
	}
	kc_free(kc);
	_exit(0);
}

static void test_concurrent(void)
{
	cleanup_free char *dir = new_dir("concurrent");
	fflush(stdout);
	int start[2];
	if (pipe2(start, O_CLOEXEC) < 0) {
		printf("Bail out! pipe\n");
		exit(1);
	}
	pid_t pids[2];
	for (int i = 0; i < 2; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			close(start[1]);
			writer(dir, i, start[0]);
		}
	}
	close(start[0]);
	close(start[1]); /* both start at once, on an empty folder: no key file yet */
	for (int i = 0; i < 2; i++) {
		int status = -1;
		waitpid(pids[i], &status, 0);
		T_OK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer %d ends well (%d)", i,
		     status);
	}
	struct kc *kc = open_ok(dir);
	size_t n;
	kc_list(kc, &n);
	T_INT((long long)n, 100, "two concurrent writers of 50 names each keep all 100 entries");
	bool all = true;
	for (int id = 0; id < 2; id++)
		for (int i = 0; i < 50; i++) {
			char name[32], value[64];
			snprintf(name, sizeof(name), "w%d.n%02d", id, i);
			snprintf(value, sizeof(value), "value-%d-%d", id, i);
			all = all && value_is(kc, name, value);
		}
	T_OK(all, "each with its own value");
	kc_free(kc);
}

static void test_passphrase(void)
{
	cleanup_free char *dir = new_dir("pass");
	cleanup_free char *path = xasprintf("%s/keychain", dir);
	int fd = passphrase_pipe("correct horse battery\n");
	struct kc *kc = open_ok(dir);
	T_OK(kc_uses_passphrase(kc), "MCPGATE_PASSPHRASE_FD selects a passphrase");
	T_OK(fcntl(fd, F_GETFD) < 0 && errno == EBADF, "the descriptor was read and closed");
	set(kc, "p.key", VALUE);
	T_OK(value_is(kc, "p.key", VALUE), "set and get with a passphrase");
	kc_free(kc);
	cleanup_free char *key_path = xasprintf("%s/keychain.key", dir);
	T_OK(access(key_path, F_OK) < 0, "no key file is made in passphrase mode");
	size_t len = 0;
	cleanup_free unsigned char *good = slurp(path, &len);
	T_OK(good != NULL && len > 60 && good[9] == 2 && good[10] == 2,
	     "the header says passphrase (kind 2), Argon2id13 (2)");
	T_OK(good != NULL && memmem(good, len, "correct horse", 13) == NULL &&
	         memmem(good, len, VALUE, strlen(VALUE)) == NULL,
	     "neither passphrase nor value is in the file");

	passphrase_pipe("correct horse battery"); /* no newline: the same passphrase */
	kc = open_ok(dir);
	T_OK(value_is(kc, "p.key", VALUE), "the same passphrase (without newline) reads it");
	set(kc, "p.two", VALUE2);
	kc_free(kc);
	size_t len2 = 0;
	cleanup_free unsigned char *after = slurp(path, &len2);
	T_OK(after != NULL && memcmp(after + 24, good + 24, 16) == 0, "a rewrite keeps the salt");
	free(good);
	good = steal_pointer(&after);
	len = len2;

	passphrase_pipe("correct horse battery staple\n");
	expect_refused(dir, "another passphrase", "wrong passphrase", good, len);
	passphrase_pipe("correct horse battery\n\n");
	expect_refused(dir, "the passphrase with a second newline", "wrong passphrase", good, len);
	passphrase_pipe("");
	expect_refused(dir, "an empty passphrase", "", good, len);
	unsetenv(KC_PASSPHRASE_FD);
	expect_refused(dir, "no passphrase for a passphrase keychain", KC_PASSPHRASE_FD, good, len);
	struct kc *tmp = NULL;
	cleanup_err struct mg_err *err = NULL;
	setenv(KC_PASSPHRASE_FD, "999", 1);
	T_INT(kc_open(dir, &tmp, &err), -1, "a descriptor that is not open is refused");
	T_OK(has(mg_err_msg(err), "999"), "naming it: %s", mg_err_msg(err));
	mg_err_clear(&err);
	setenv(KC_PASSPHRASE_FD, "3x", 1);
	T_INT(kc_open(dir, &tmp, &err), -1, "a descriptor that is not a number is refused");
	mg_err_clear(&err);

	/* a key-file keychain with a passphrase */
	cleanup_free char *kdir = new_dir("pass-keyfile");
	unsetenv(KC_PASSPHRASE_FD);
	kc = open_ok(kdir);
	set(kc, "k", VALUE);
	kc_free(kc);
	cleanup_free char *kpath = xasprintf("%s/keychain", kdir);
	size_t klen = 0;
	cleanup_free unsigned char *kbytes = slurp(kpath, &klen);
	passphrase_pipe("correct horse battery\n");
	expect_refused(kdir, "a passphrase for a key-file keychain", "unset " KC_PASSPHRASE_FD,
	               kbytes, klen);

	/* the key check altered in passphrase mode: an alteration, not a wrong passphrase */
	cleanup_free unsigned char *bad = xmemdup(good, len);
	bad[60] ^= 0x80;
	spill(path, bad, len, 0600);
	passphrase_pipe("correct horse battery\n");
	expect_refused(dir, "passphrase mode, a flipped key check byte", "altered", bad, len);
	spill(path, good, len, 0600);
	unsetenv(KC_PASSPHRASE_FD);
}

/* The file's tag, computed again as docs/credentials.md says: keyed
 * BLAKE2b-256 (key: crypto_kdf id 2, context "mcpgkc01", of keychain.key)
 * over every byte before the tag but the key check (56-71). */
static void retag(const char *dir, unsigned char *d, size_t len)
{
	cleanup_free char *key_path = xasprintf("%s/keychain.key", dir);
	size_t klen = 0;
	cleanup_free unsigned char *master = slurp(key_path, &klen);
	unsigned char mac_key[32];
	crypto_kdf_derive_from_key(mac_key, sizeof(mac_key), 2, "mcpgkc01", master);
	crypto_generichash_state st;
	crypto_generichash_init(&st, mac_key, sizeof(mac_key), 32);
	crypto_generichash_update(&st, d, 56);
	crypto_generichash_update(&st, d + 72, len - 32 - 72);
	crypto_generichash_final(&st, d + len - 32, 32);
}

/* With the file's tag made good again, each entry's own AEAD must still
 * catch a changed name, binding or a sealed value moved to another name. */
static void test_associated_data(void)
{
	cleanup_free char *dir = new_dir("ad");
	struct kc *kc = open_ok(dir);
	set(kc, "a.one", VALUE);
	set(kc, "b.two", "S3CRET-vALUE-THAT-MUST-NEVER-LEAK"); /* as long as VALUE */
	cleanup_free char *path = xstrdup(kc_path(kc));
	kc_free(kc);
	size_t len = 0;
	cleanup_free unsigned char *good = slurp(path, &len);
	/* each entry: 8 bytes before its nonce, 24 nonce, 4 length, 33 + 16 sealed */
	size_t e1 = 76, e2 = 76 + 85;
	T_INT((long long)len, 76 + 2 * 85 + 32, "two entries of 85 bytes");
	if (len != 76 + 2 * 85 + 32)
		return;
	cleanup_free unsigned char *tagged = xmemdup(good, len);
	retag(dir, tagged, len);
	T_OK(memcmp(tagged, good, len) == 0, "the test computes the tag as the file has it");

	cleanup_free unsigned char *swapped = xmemdup(good, len);
	memcpy(swapped + e1 + 8, good + e2 + 8, 77);
	memcpy(swapped + e2 + 8, good + e1 + 8, 77);
	retag(dir, swapped, len);
	spill(path, swapped, len, 0600);
	expect_refused(dir, "sealed values swapped between names (tag made good)",
	               "entry a.one does not authenticate", swapped, len);

	cleanup_free unsigned char *renamed = xmemdup(good, len);
	renamed[e1 + 5] = 'f'; /* a.one -> a.onf, still in order */
	retag(dir, renamed, len);
	spill(path, renamed, len, 0600);
	expect_refused(dir, "a name changed (tag made good)", "entry a.onf does not authenticate",
	               renamed, len);
	spill(path, good, len, 0600);

	kc = open_ok(dir);
	kc_remove(kc, "b.two", NULL);
	bind(kc, "a.one", "api.example.com", NULL, CFG_POSITION_ENV, "TOKEN");
	kc_free(kc);
	free(good);
	good = slurp(path, &len);
	cleanup_free unsigned char *rebound = xmemdup(good, len);
	rebound[e1 + 16] = 'b'; /* the host api.example.com -> bpi.example.com */
	retag(dir, rebound, len);
	spill(path, rebound, len, 0600);
	expect_refused(dir, "a binding's host changed (tag made good)",
	               "entry a.one does not authenticate", rebound, len);
	cleanup_free unsigned char *env = xmemdup(good, len);
	env[e1 + 10] = 'X'; /* env:TOKEN -> env:XOKEN */
	retag(dir, env, len);
	spill(path, env, len, 0600);
	expect_refused(dir, "a binding's variable changed (tag made good)",
	               "entry a.one does not authenticate", env, len);
	spill(path, good, len, 0600);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	chmod(path, 0700);
	return remove(path);
}

int main(void)
{
	unsetenv(KC_PASSPHRASE_FD);
	if (sodium_init() < 0 || mkdtemp(base) == NULL) {
		printf("Bail out! cannot start\n");
		return 1;
	}
	test_round_trip();
	test_limits();
	test_each();
	test_bindings();
	test_damage();
	test_associated_data();
	test_wrong_key();
	test_dir_mode();
	test_concurrent();
	test_passphrase();
	nftw(base, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return t_done();
}
