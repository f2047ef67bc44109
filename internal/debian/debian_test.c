/* Tests of internal/debian without a network or an archive: names and sets,
 * the lock's text both ways, .debs built here (dpkg-deb --build, and by
 * hand for the hostile ones) unpacked and packed into a layer that comes out
 * the same, byte for byte, from another unpacking; what maintainer scripts
 * would have made; and the command hints. Everything written goes under one
 * temporary folder, removed at the end. */
#define _GNU_SOURCE
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sodium.h>

#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/testing.h"
#include "internal/base/xalloc.h"
#include "internal/debian/debian-internal.h"
#include "internal/proc/proc.h"

static char base[] = "/tmp/mcpgate-debian-test-XXXXXX";

static void bail(const char *what, const char *path)
{
	printf("Bail out! %s %s: %s\n", what, path, strerror(errno));
	exit(1);
}

static void spill(const char *path, const char *text, mode_t mode)
{
	cleanup_free char *dir = xstrdup(path);
	*strrchr(dir, '/') = '\0';
	if (mg_mkdir_p(dir, 0755, NULL) < 0)
		bail("cannot make", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	size_t n = strlen(text);
	if (fd < 0 || write(fd, text, n) != (ssize_t)n || fchmod(fd, mode) < 0)
		bail("cannot write", path);
	close(fd);
}

static int run(const char *const *argv)
{
	const char *env[] = {"PATH=/usr/bin:/bin:/usr/sbin:/sbin", "LC_ALL=C", NULL};
	struct proc_result res;
	struct mg_err *err = NULL;
	int r = proc_run(argv, env, 60000, 1 << 20, &res, &err);
	if (r == 0 && !(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 0)) {
		t_note("%s failed: %s", argv[0], mg_buf_str(&res.err));
		r = -1;
	}
	if (err != NULL)
		t_note("%s: %s", argv[0], mg_err_msg(err));
	mg_err_free(err);
	proc_result_free(&res);
	return r;
}

/* DIR/DEBIAN/control for name, then dpkg-deb --build DIR OUT */
static char *build_deb(const char *name, const char *dir)
{
	cleanup_free char *control = xasprintf("%s/DEBIAN/control", dir);
	cleanup_free char *text = xasprintf("Package: %s\nVersion: 1:1.0-1\nArchitecture: all\n"
	                                    "Maintainer: mcpgate tests <t@example.invalid>\n"
	                                    "Description: a package of the unit test\n",
	                                    name);
	spill(control, text, 0644);
	char *out = xasprintf("%s/%s_1%%3a1.0-1_all.deb", base, name);
	const char *argv[] = {
	    "/usr/bin/dpkg-deb", "--root-owner-group", "-Zgzip", "--build", dir, out, NULL};
	if (run(argv) < 0)
		bail("dpkg-deb --build failed for", dir);
	return out;
}

/* ---- names, sets, locks ---------------------------------------------------- */

static void test_names(void)
{
	T_OK(deb_name_valid("git") && deb_name_valid("libstdc++6") && deb_name_valid("g++") &&
	         deb_name_valid("python3.11") && deb_name_valid("0ad"),
	     "Debian names are taken");
	T_OK(!deb_name_valid("Git") && !deb_name_valid("g") && !deb_name_valid("-x") &&
	         !deb_name_valid("git=1.0") && !deb_name_valid("git/bookworm") &&
	         !deb_name_valid("a b") && !deb_name_valid("") && !deb_name_valid(NULL),
	     "upper case, one letter, a leading dash, a version, a suite, a space are not names");
	const char *in[] = {"python3", "git", "python3", "curl"};
	struct strv out = STRV_INIT;
	T_OK(deb_set_normalise(in, 4, "--with", &out, NULL) == 0 && out.n == 3 &&
	         strcmp(out.v[0], "curl") == 0 && strcmp(out.v[1], "git") == 0 &&
	         strcmp(out.v[2], "python3") == 0,
	     "a set is sorted, each name once");
	strv_free(&out);
	const char *bad[] = {"git", "Bad Name"};
	struct mg_err *err = NULL;
	T_OK(deb_set_normalise(bad, 2, "--with", &out, &err) < 0 && err != NULL &&
	         strstr(mg_err_msg(err), "--with \"Bad Name\" is not a Debian package's name"),
	     "a bad name is refused by name: %s", err != NULL ? mg_err_msg(err) : "");
	mg_err_free(err);
	strv_free(&out);
}

static void fill_lock(struct deb_lock *l)
{
	memset(l, 0, sizeof(*l));
	strv_push(&l->set, "git");
	l->suite = xstrdup("bookworm");
	l->arch = xstrdup("amd64");
	l->below = xstrdup("ab"
	                   "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcd");
	l->pkgs = xcalloc(2, sizeof(l->pkgs[0]));
	l->pkgs[0] = (struct deb_pkg){
	    xstrdup("perl"), xstrdup("5.36.0-7+deb12u4"), xstrdup("amd64"),
	    xstrdup("1111111111111111111111111111111111111111111111111111111111111111")};
	l->pkgs[1] = (struct deb_pkg){
	    xstrdup("git"), xstrdup("1:2.39.5-0+deb12u3"), xstrdup("amd64"),
	    xstrdup("2222222222222222222222222222222222222222222222222222222222222222")};
	l->n = 2;
	deb_lock_sort(l);
}

static void test_lock(void)
{
	struct deb_lock l, back;
	fill_lock(&l);
	T_STR(l.pkgs[0].name, "git", "a lock's packages are sorted by name");
	size_t len;
	cleanup_free char *text = deb_lock_render(&l, &len);
	T_STR(
	    text,
	    "{\"mcpgate_debian_lock\":1,\"set\":[\"git\"],\"suite\":\"bookworm\",\"arch\":"
	    "\"amd64\",\"below\":\"ab0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
	    "abcd\",\"packages\":[{\"name\":\"git\",\"version\":\"1:2.39.5-0+deb12u3\",\"arch\":"
	    "\"amd64\",\"sha256\":\"2222222222222222222222222222222222222222222222222222222222222"
	    "222\"},{\"name\":\"perl\",\"version\":\"5.36.0-7+deb12u4\",\"arch\":\"amd64\","
	    "\"sha256\":\"1111111111111111111111111111111111111111111111111111111111111111\"}]}\n",
	    "the lock's text: fixed member order, sorted packages");
	int r = deb_lock_parse(text, len, "x.lock", &back, NULL);
	size_t len2 = 0;
	cleanup_free char *again = r == 0 ? deb_lock_render(&back, &len2) : NULL;
	T_OK(r == 0 && again != NULL && len2 == len && memcmp(again, text, len) == 0,
	     "a lock read back renders to the same bytes");
	deb_lock_free(&back);
	deb_lock_free(&l);

	static const struct {
		const char *text, *want;
	} bad[] = {
	    {"{\"mcpgate_debian_lock\":2}", "not an mcpgate Debian lock of format 1"},
	    {"[]", "not an mcpgate Debian lock"},
	    {"{\"mcpgate_debian_lock\":1,\"set\":[],\"suite\":\"b\",\"arch\":\"amd64\",\"below\":"
	     "\"\",\"packages\":[]}",
	     "lacks set, suite, arch, below or packages"},
	    {"{\"mcpgate_debian_lock\":1,\"set\":[\"git\"],\"suite\":\"b\",\"arch\":\"amd64\","
	     "\"below\":\"\",\"packages\":[{\"name\":\"git\",\"version\":\"1.0\",\"arch\":"
	     "\"amd64\",\"sha256\":\"abc\"}]}",
	     "package 1 lacks a valid name, version, arch or sha256"},
	    {"{\"mcpgate_debian_lock\":1,\"set\":[\"git\"],\"suite\":\"b\",\"arch\":\"amd64\","
	     "\"below\":\"\",\"packages\":[{\"name\":\"git\",\"version\":\"1.0 ; rm\",\"arch\":"
	     "\"amd64\",\"sha256\":"
	     "\"1111111111111111111111111111111111111111111111111111111111111111"
	     "\"}]}",
	     "package 1 lacks a valid name, version"},
	    {"{\"mcpgate_debian_lock\":1,\"set\":[\"git\"],\"suite\":\"b\",\"arch\":\"amd64\","
	     "\"below\":\"\",\"packages\":[{\"name\":\"zz\",\"version\":\"1\",\"arch\":\"all\","
	     "\"sha256\":\"1111111111111111111111111111111111111111111111111111111111111111\"},"
	     "{\"name\":\"aa\",\"version\":\"1\",\"arch\":\"all\",\"sha256\":\"111111111111111111"
	     "1111111111111111111111111111111111111111111111\"}]}",
	     "not sorted by name"},
	    {"{\"mcpgate_debian_lock\":1", "the lock x.lock"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct mg_err *err = NULL;
		struct deb_lock x;
		int rr = deb_lock_parse(bad[i].text, strlen(bad[i].text), "x.lock", &x, &err);
		T_OK(rr < 0 && err != NULL && strstr(mg_err_msg(err), bad[i].want) != NULL &&
		         strstr(mg_err_msg(err), "x.lock") != NULL,
		     "a bad lock is refused with its path: %s", err != NULL ? mg_err_msg(err) : "");
		mg_err_free(err);
	}
}

/* ---- .debs --------------------------------------------------------------- */

/* tiny packages of the test's own, as an archive would have them */
struct debs {
	char *tool, *certs, *awk;
};

static void make_debs(struct debs *d)
{
	cleanup_free char *t = xasprintf("%s/src-tool", base);
	char *f = xasprintf("%s/usr/bin/tool", t);
	spill(f, "#!/bin/sh\necho tool\n", 04755); /* setuid in the package: dropped */
	free(f);
	f = xasprintf("%s/usr/share/tool/README", t);
	spill(f, "read me\n", 0600);
	free(f);
	f = xasprintf("%s/usr/share/doc/tool/README", t);
	spill(f, "documentation\n", 0644);
	free(f);
	f = xasprintf("%s/usr/share/doc/tool/copyright", t);
	spill(f, "the licence\n", 0644);
	free(f);
	f = xasprintf("%s/tmp/.keep", t);
	spill(f, "", 0644);
	free(f);
	f = xasprintf("%s/usr/share/man/man1/tool.1", t);
	spill(f, ".TH tool\n", 0644);
	free(f);
	f = xasprintf("%s/usr/bin/tool-link", t);
	if (symlink("tool", f) < 0)
		bail("symlink", f);
	free(f);
	f = xasprintf("%s/usr/bin/tool-hard", t);
	cleanup_free char *tool = xasprintf("%s/usr/bin/tool", t);
	if (link(tool, f) < 0)
		bail("link", f);
	free(f);
	d->tool = build_deb("tool", t);

	cleanup_free char *c = xasprintf("%s/src-certs", base);
	f = xasprintf("%s/usr/share/ca-certificates/mozilla/B_Root.crt", c);
	spill(f, "-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----", 0644);
	free(f);
	f = xasprintf("%s/usr/share/ca-certificates/mozilla/A_Root.crt", c);
	spill(f, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", 0644);
	free(f);
	f = xasprintf("%s/usr/share/ca-certificates/mozilla/notes.txt", c);
	spill(f, "not a certificate\n", 0644);
	free(f);
	d->certs = build_deb("ca-certificates", c);

	cleanup_free char *a = xasprintf("%s/src-awk", base);
	f = xasprintf("%s/usr/bin/mawk", a);
	spill(f, "#!/bin/sh\n", 0755);
	free(f);
	d->awk = build_deb("mawk", a);
}

static void fake_lock(struct deb_lock *l, const char *const *names, size_t n)
{
	memset(l, 0, sizeof(*l));
	l->pkgs = xcalloc(n, sizeof(l->pkgs[0]));
	for (size_t i = 0; i < n; i++)
		l->pkgs[l->n++] =
		    (struct deb_pkg){xstrdup(names[i]), xstrdup("1:1.0-1"), xstrdup("all"), NULL};
}

/* the debs unpacked in order into DIR, the fixups, packed into OUT */
static int layer_of(const char *const *debs, size_t n, const char *dir, const char *out,
                    struct pack_layer_info *info, struct mg_err **err)
{
	if (mkdir(dir, 0755) < 0)
		bail("mkdir", dir);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r = 0;
	for (size_t i = 0; r == 0 && i < n; i++)
		r = deb_unpack(debs[i], fd, err);
	const char *names[] = {"ca-certificates", "mawk", "tool"};
	struct deb_lock l;
	fake_lock(&l, names, 3);
	if (r == 0)
		r = deb_fixups(fd, &l, err);
	deb_lock_free(&l);
	close(fd);
	cleanup_free char *add = xasprintf("%s:/", dir);
	const char *adds[] = {add};
	if (r == 0)
		r = pack_build_layer(adds, 1, 0, out, info, err);
	return r;
}

static void test_unpack(const struct debs *d)
{
	cleanup_free char *control = NULL;
	size_t len = 0;
	int r = deb_read_control(d->tool, &control, &len, NULL);
	cleanup_free char *pkg = r == 0 ? deb_control_field(control, "Package") : NULL;
	cleanup_free char *ver = r == 0 ? deb_control_field(control, "version") : NULL;
	T_OK(r == 0 && pkg != NULL && strcmp(pkg, "tool") == 0 && ver != NULL &&
	         strcmp(ver, "1:1.0-1") == 0 && control[len - 1] != '\n',
	     "a .deb's control stanza is read, its fields by name in any case");

	const char *order1[] = {d->tool, d->certs, d->awk};
	cleanup_free char *dir1 = xasprintf("%s/root1", base);
	cleanup_free char *out1 = xasprintf("%s/layer1.tar.gz", base);
	struct pack_layer_info a, b;
	struct mg_err *err = NULL;
	r = layer_of(order1, 3, dir1, out1, &a, &err);
	T_OK(r == 0, "three packages become a layer: %s", err != NULL ? mg_err_msg(err) : "");
	mg_err_clear(&err);
	struct stat st;
	cleanup_free char *tool = xasprintf("%s/usr/bin/tool", dir1);
	cleanup_free char *hard = xasprintf("%s/usr/bin/tool-hard", dir1);
	cleanup_free char *readme = xasprintf("%s/usr/share/tool/README", dir1);
	cleanup_free char *doc = xasprintf("%s/usr/share/doc/tool/README", dir1);
	cleanup_free char *copyright = xasprintf("%s/usr/share/doc/tool/copyright", dir1);
	cleanup_free char *man = xasprintf("%s/usr/share/man", dir1);
	T_OK(access(doc, F_OK) != 0 && access(man, F_OK) != 0 && access(copyright, F_OK) == 0,
	     "documentation and manual pages are left out, each package's copyright kept");
	cleanup_free char *tmp = xasprintf("%s/tmp", dir1);
	T_OK(access(tmp, F_OK) != 0, "/tmp is left out: the runtime makes it, 1777");
	T_OK(stat(tool, &st) == 0 && (st.st_mode & 07777) == 0755,
	     "an executable is 0755, its setuid bit dropped (%o)", st.st_mode & 07777);
	T_OK(stat(readme, &st) == 0 && (st.st_mode & 07777) == 0644, "a file is 0644");
	struct stat hs;
	T_OK(lstat(hard, &hs) == 0 && S_ISREG(hs.st_mode) && hs.st_size == st.st_size * 0 + 20 &&
	         stat(tool, &st) == 0 && hs.st_ino != st.st_ino,
	     "a hard link is a copy of its own");
	char target[64] = "";
	cleanup_free char *lnk = xasprintf("%s/usr/bin/tool-link", dir1);
	ssize_t n = readlink(lnk, target, sizeof(target) - 1);
	T_OK(n == 4 && memcmp(target, "tool", 4) == 0, "a link stays a link");
	cleanup_free char *bundle_path = xasprintf("%s/etc/ssl/certs/ca-certificates.crt", dir1);
	size_t blen = 0;
	cleanup_free char *bundle = t_read_file(bundle_path, &blen);
	T_STR(bundle,
	      "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
	      "-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----\n",
	      "the CA bundle: every .crt in name order, each ended by a newline");
	cleanup_free char *awk = xasprintf("%s/usr/bin/awk", dir1);
	n = readlink(awk, target, sizeof(target) - 1);
	T_OK(n == 4 && memcmp(target, "mawk", 4) == 0, "awk is a link to mawk, as its "
	                                               "alternative would be");

	/* the same packages, unpacked in another order a second later: one layer */
	sleep(1);
	const char *order2[] = {d->awk, d->certs, d->tool};
	cleanup_free char *dir2 = xasprintf("%s/root2", base);
	cleanup_free char *out2 = xasprintf("%s/layer2.tar.gz", base);
	r = layer_of(order2, 3, dir2, out2, &b, &err);
	size_t l1 = 0, l2 = 0;
	cleanup_free char *b1 = t_read_file(out1, &l1);
	cleanup_free char *b2 = t_read_file(out2, &l2);
	T_OK(r == 0 && strcmp(a.digest, b.digest) == 0 && l1 == l2 && memcmp(b1, b2, l1) == 0,
	     "the same .debs give the same layer, byte for byte: %s", a.digest);
	mg_err_clear(&err);
}

/* A .deb made by hand: debian-binary, a control.tar.gz, and a data.tar.gz
 * holding the entries given (name, type, link target or content) */
struct ent {
	const char *name;
	mode_t type;
	const char *text; /* a link's target, a file's content, a hard link's target */
	bool hard;
};

static char *hostile_deb(const char *file, const struct ent *ents, size_t n)
{
	cleanup_free char *dir = xasprintf("%s/h-%s", base, file);
	if (mkdir(dir, 0755) < 0)
		bail("mkdir", dir);
	cleanup_free char *bin = xasprintf("%s/debian-binary", dir);
	spill(bin, "2.0\n", 0644);
	const char *names[] = {"control.tar.gz", "data.tar.gz"};
	for (int k = 0; k < 2; k++) {
		cleanup_free char *path = xasprintf("%s/%s", dir, names[k]);
		struct archive *a = archive_write_new();
		archive_write_set_format_pax_restricted(a);
		archive_write_add_filter_gzip(a);
		if (archive_write_open_filename(a, path) != ARCHIVE_OK)
			bail("archive", path);
		for (size_t i = 0; i < (k == 0 ? 1 : n); i++) {
			struct ent c = {"./control", AE_IFREG,
			                "Package: bad\nVersion: 1\nArchitecture: all\n", false};
			const struct ent *e = k == 0 ? &c : &ents[i];
			struct archive_entry *ae = archive_entry_new();
			archive_entry_set_pathname(ae, e->name);
			archive_entry_set_filetype(ae, e->type);
			archive_entry_set_perm(ae, 0644);
			if (e->hard) {
				archive_entry_set_hardlink(ae, e->text);
			} else if (e->type == AE_IFLNK) {
				archive_entry_set_symlink(ae, e->text);
			} else if (e->type == AE_IFREG) {
				archive_entry_set_size(ae, (la_int64_t)strlen(e->text));
			}
			archive_write_header(a, ae);
			if (e->type == AE_IFREG && !e->hard)
				archive_write_data(a, e->text, strlen(e->text));
			archive_entry_free(ae);
		}
		archive_write_close(a);
		archive_write_free(a);
	}
	char *out = xasprintf("%s/%s", base, file);
	cleanup_free char *ctl = xasprintf("%s/control.tar.gz", dir);
	cleanup_free char *data = xasprintf("%s/data.tar.gz", dir);
	const char *argv[] = {"/usr/bin/ar", "rc", out, bin, ctl, data, NULL};
	if (run(argv) < 0)
		bail("ar failed for", out);
	return out;
}

static void test_hostile(void)
{
	cleanup_free char *outside = xasprintf("%s/outside", base);
	if (mkdir(outside, 0755) < 0)
		bail("mkdir", outside);
	static const struct {
		const char *file;
		struct ent ents[3];
		size_t n;
		const char *want;
	} cases[] = {
	    {"dotdot.deb",
	     {{"./usr/../../escaped", AE_IFREG, "x", false}},
	     1,
	     "leaves the package"},
	    {"through-link.deb",
	     {{"./usr/", AE_IFDIR, NULL, false},
	      {"./usr/out", AE_IFLNK, "OUTSIDE", false},
	      {"./usr/out/planted", AE_IFREG, "x", false}},
	     3,
	     "lies below a link or a file"},
	    {"hard-out.deb",
	     {{"./x", AE_IFREG, "../../../etc/passwd", true}},
	     1,
	     "outside the package"},
	    {"hard-abs.deb",
	     {{"./x", AE_IFREG, "/etc/passwd", true}},
	     1,
	     "not a file unpacked before"},
	    {"fifo.deb", {{"./fifo", AE_IFIFO, NULL, false}}, 1, "a device, pipe or socket"},
	    /* in a layer it would delete the base's /usr/bin */
	    {"whiteout.deb", {{"./usr/.wh.bin", AE_IFREG, "x", false}}, 1, "marks a deletion"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ent ents[3];
		memcpy(ents, cases[i].ents, sizeof(ents));
		cleanup_free char *target = NULL;
		for (size_t k = 0; k < cases[i].n; k++)
			if (ents[k].text != NULL && strcmp(ents[k].text, "OUTSIDE") == 0)
				ents[k].text = target = xstrdup(outside);
		cleanup_free char *deb = hostile_deb(cases[i].file, ents, cases[i].n);
		cleanup_free char *dir = xasprintf("%s/hroot-%zu", base, i);
		if (mkdir(dir, 0755) < 0)
			bail("mkdir", dir);
		int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		struct mg_err *err = NULL;
		int r = deb_unpack(deb, fd, &err);
		close(fd);
		cleanup_free char *planted = xasprintf("%s/planted", outside);
		cleanup_free char *escaped = xasprintf("%s/escaped", base);
		T_OK(r < 0 && err != NULL && strstr(mg_err_msg(err), cases[i].want) != NULL &&
		         access(planted, F_OK) != 0 && access(escaped, F_OK) != 0,
		     "%s is refused and writes nothing outside: %s", cases[i].file,
		     err != NULL ? mg_err_msg(err) : "(no error)");
		mg_err_free(err);
	}
	cleanup_free char *notdeb = xasprintf("%s/not.deb", base);
	spill(notdeb, "!<arch>\nnothing\n", 0644);
	struct mg_err *err = NULL;
	cleanup_free char *control = NULL;
	size_t len;
	T_OK(deb_read_control(notdeb, &control, &len, &err) < 0 && err != NULL &&
	         strstr(mg_err_msg(err), "not.deb") != NULL,
	     "a file that is not a .deb is refused by name: %s",
	     err != NULL ? mg_err_msg(err) : "");
	mg_err_free(err);
}

/* ---- hints ----------------------------------------------------------------- */

static void test_hints(void)
{
	static const struct {
		const char *text, *command, *package;
	} cases[] = {
	    {"Error: spawn git ENOENT\n    at ChildProcess._handle.onexit", "git", "git"},
	    {"Error: spawn /bin/sh ENOENT", "sh", "dash"},
	    {"spawnSync python3 ENOENT", "python3", "python3"},
	    {"bash: line 1: rg: command not found", "rg", "ripgrep"},
	    {"/bin/sh: 1: sqlite3: not found", "sqlite3", "sqlite3"},
	    {"Error: Git command not found", "git", "git"},
	    {"exec: \"psql\": executable file not found in $PATH", "psql", "postgresql-client"},
	    {"Error: not found: java", "java", "default-jre-headless"},
	    {"browserType.launch: Executable doesn't exist at "
	     "/app/.cache/ms-playwright/chromium-1148/chrome-linux/chrome",
	     "chromium", "chromium"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct deb_hint h = {0};
		int r = deb_hint_find(cases[i].text, strlen(cases[i].text), &h);
		T_OK(r == 1 && strcmp(h.command, cases[i].command) == 0 &&
		         strcmp(h.package, cases[i].package) == 0,
		     "case %zu names %s, in %s", i + 1, cases[i].command, cases[i].package);
	}
	static const char *none[] = {
	    "config.json: file not found",
	    "Tool not found: find",
	    "Error: spawn frobnicate ENOENT",
	    "all is well",
	    "ENOENT: no such file or directory, mkdir '/app/.mongodb'",
	};
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		struct deb_hint h = {0};
		T_OK(deb_hint_find(none[i], strlen(none[i]), &h) == 0, "\"%s\" names no package",
		     none[i]);
	}
	for (size_t i = 0; deb_hints[i].command != NULL; i++)
		if (!deb_name_valid(deb_hints[i].package))
			T_OK(false, "the hint for %s names a valid package", deb_hints[i].command);
}

int main(void)
{
	if (sodium_init() < 0 || mkdtemp(base) == NULL) {
		printf("Bail out! cannot start\n");
		return 1;
	}
	test_names();
	test_lock();
	test_hints();
	if (access("/usr/bin/dpkg-deb", X_OK) == 0 && access("/usr/bin/ar", X_OK) == 0) {
		struct debs d;
		make_debs(&d);
		test_unpack(&d);
		test_hostile();
		free(d.tool);
		free(d.certs);
		free(d.awk);
	} else {
		printf("ok - .debs built here # SKIP no dpkg-deb or ar\n");
	}
	mg_remove_tree(base, NULL);
	return t_done();
}
