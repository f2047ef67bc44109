/* mcpgate add pypi:NAME[==VERSION] (or pypi:./WHEEL.whl): a Python package
 * from a package index to a pinned image (docs/2026-12-02-pypi.md).
 *
 * No package code runs on the host. pip (the person's, with their pip.conf
 * and PIP_INDEX_URL) resolves with --only-binary=:all: and --dry-run: a
 * wheel's metadata is read, nothing of it runs, and a package with no wheel
 * is refused rather than built. The resolution is for the image's python
 * (Debian's python3, its version and glibc read from the Debian locks), not
 * the host's. What it resolved is kept as a lock, one wheel a line with its
 * sha256, in DATA/pypi/NAME/requirements.lock; pip installs exactly that
 * (--require-hashes, --no-deps) into DATA/pypi/NAME/site, which is the
 * image's layer at /app/site, over the Debian base and python3. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>

#include "cmd/mcpgate/add.h"
#include "cmd/mcpgate/progress.h"
#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/xalloc.h"
#include "internal/proc/proc.h"

extern char **environ;

#define PIP_TIMEOUT_MS (15 * 60 * 1000)
#define PIP_OUTPUT_MAX (8u << 20)
#define PYPI_LOCK_MAX  4096 /* wheels in one lock */
#define WHEEL_MAX      (512u << 20)

void add_pypi_req_free(struct pypi_req *r)
{
	free(r->name);
	free(r->version);
	free(r->wheel);
	free(r->sdist);
	memset(r, 0, sizeof(*r));
}

void add_pypi_pkg_free(struct pypi_pkg *p)
{
	free(p->name);
	free(p->version);
	free(p->sha256);
	free(p->lock_hex);
	free(p->command);
	memset(p, 0, sizeof(*p));
}

/* ---- names ---------------------------------------------------------------- */

static bool alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool add_pypi_name_ok(const char *s)
{
	/* PEP 508: letters and digits at both ends, . _ - between */
	size_t n = strlen(s);
	if (n == 0 || n > 200 || !alnum(s[0]) || !alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(alnum(s[i]) || s[i] == '.' || s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

/* PEP 440's characters, at most 100 of them: a version goes into pip's
 * requirements file and an image's tag, so nothing else passes */
static bool version_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 100 || !alnum(s[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(alnum(s[i]) || s[i] == '.' || s[i] == '_' || s[i] == '-' || s[i] == '+' ||
		      s[i] == '!'))
			return false;
	return true;
}

/* PEP 503's normal form: lower case, each run of - _ . one - */
static char *normal_name(const char *s, size_t n)
{
	char *out = xmalloc(n + 1);
	size_t j = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '-' || c == '_' || c == '.') {
			if (j == 0 || out[j - 1] != '-')
				out[j++] = '-';
			continue;
		}
		out[j++] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
	}
	out[j] = '\0';
	return out;
}

/* a dotted Python name: identifiers of ASCII letters, digits and _ */
static bool dotted_ok(const char *s, size_t n)
{
	if (n == 0 || n > 200)
		return false;
	bool start = true;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '.') {
			if (start)
				return false;
			start = true;
			continue;
		}
		if (!(alnum(c) || c == '_') || (start && c >= '0' && c <= '9'))
			return false;
		start = false;
	}
	return !start;
}

bool add_pypi_module_ok(const char *s)
{
	return dotted_ok(s, strlen(s));
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), m = strlen(tail);
	return n >= m && strcmp(s + n - m, tail) == 0;
}

/* A wheel's file name as pip takes it, NAME-VERSION[-BUILD]-PY-ABI-PLAT.whl,
 * or a source distribution's, NAME-VERSION.tar.gz (tail) */
static bool package_file_ok(const char *base, const char *tail)
{
	if (!alnum(base[0]) || !ends_with(base, tail) || strlen(base) > 250)
		return false;
	for (const char *p = base; *p != '\0'; p++)
		if (!(alnum(*p) || *p == '.' || *p == '_' || *p == '-' || *p == '+' || *p == '!'))
			return false;
	return true;
}

int add_pypi_parse(const char *src, struct pypi_req *out, struct mg_err **err)
{
	memset(out, 0, sizeof(*out));
	const char *spec = src + 5; /* after "pypi:" */
	if (ends_with(spec, ".zip") || ends_with(spec, ".tar.bz2") || ends_with(spec, ".tgz"))
		return mg_err_set(err,
		                  "%s: a source distribution is taken as NAME-VERSION.tar.gz "
		                  "(PEP 625, what python3 -m build --sdist writes), not this "
		                  "kind of file",
		                  src);
	bool sdist = ends_with(spec, ".tar.gz");
	if (strchr(spec, '/') != NULL || ends_with(spec, ".whl") || sdist) {
		const char *slash = strrchr(spec, '/');
		const char *base = slash != NULL ? slash + 1 : spec;
		if (!package_file_ok(base, sdist ? ".tar.gz" : ".whl"))
			return mg_err_set(
			    err,
			    sdist ? "%s: \"%s\" is not a source distribution's file "
			            "name (NAME-VERSION.tar.gz, letters, digits and "
			            ". _ - + !)"
			          : "%s: \"%s\" is not a wheel's file name "
			            "(NAME-VERSION-PY-ABI-PLATFORM.whl, letters, digits "
			            "and . _ - + !)",
			    src, base);
		/* NAME and VERSION from the file's name; the wheel's METADATA
		 * says them again when pip reads it, and the two must agree. A
		 * source distribution's name is all before its last dash. */
		size_t len = strlen(base) - (sdist ? 7 : 0);
		const char *last = memrchr(base, '-', len);
		size_t n1 =
		    sdist ? (last != NULL ? (size_t)(last - base) : len) : strcspn(base, "-");
		const char *v = base + n1 + (base[n1] == '-');
		size_t n2 = sdist ? (size_t)(base + len - v) : strcspn(v, "-");
		out->name = normal_name(base, n1);
		out->version = xstrndup(v, n2);
		if (!add_pypi_name_ok(out->name) || !version_ok(out->version) ||
		    !(out->version[0] >= '0' && out->version[0] <= '9'))
			return mg_err_set(err, "%s: no name and version in the %s's file name", src,
			                  sdist ? "source distribution" : "wheel");
		char *real = realpath(spec, NULL);
		if (real == NULL)
			return mg_err_sys(err, errno, "%s: the %s %s", src,
			                  sdist ? "source distribution" : "wheel", spec);
		*(sdist ? &out->sdist : &out->wheel) = real;
		return 0;
	}
	const char *eq = strstr(spec, "==");
	out->name = eq != NULL ? xstrndup(spec, (size_t)(eq - spec)) : xstrdup(spec);
	out->version = eq != NULL ? xstrdup(eq + 2) : NULL;
	if (!add_pypi_name_ok(out->name))
		return mg_err_set(err,
		                  "%s: \"%s\" is not a Python package name (PEP 508: letters and "
		                  "digits, with . _ - between them)",
		                  src, out->name);
	if (out->version != NULL && !version_ok(out->version))
		return mg_err_set(err,
		                  "%s: \"%s\" is not a version (give NAME==VERSION, an exact "
		                  "version such as 1.2.0)",
		                  src, out->version);
	return 0;
}

/* ---- the image's python, as pip's target --------------------------------- */

struct pip_target {
	char *python; /* "3.11" */
	char *abi;    /* "cp311" */
	struct strv platforms;
};

static void pip_target_free(struct pip_target *t)
{
	free(t->python);
	free(t->abi);
	strv_free(&t->platforms);
}

static const char *lock_version(const struct deb_lock *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->pkgs[i].name, name) == 0)
			return l->pkgs[i].version;
	return NULL;
}

/* python3's version in the python layer, glibc's in the base: the wheels
 * pip may pick are those that run there (manylinux down to glibc 2.17) */
static int pip_target_of(const struct add_layers *l, bool built_here, struct pip_target *t,
                         struct mg_err **err)
{
	const char *pv = lock_version(&l->python.lock, "python3");
	const char *lv = lock_version(&l->base.lock, "libc6");
	unsigned major = 0, minor = 0, glibc = 0;
	if (pv == NULL || sscanf(pv, "%u.%u", &major, &minor) != 2 || major != 3 || minor > 99)
		return mg_err_set(err, "the python3 layer's lock has no python3 3.N version (%s)",
		                  pv != NULL ? pv : "none");
	if (lv == NULL || sscanf(lv, "2.%u", &glibc) != 1 || glibc < 17 || glibc > 99)
		return mg_err_set(err, "the Debian base's lock has no libc6 2.N version (%s)",
		                  lv != NULL ? lv : "none");
	t->python = xasprintf("%u.%u", major, minor);
	t->abi = xasprintf("cp%u%u", major, minor);
	const char *machine = strcmp(l->store.arch, "amd64") == 0   ? "x86_64"
	                      : strcmp(l->store.arch, "arm64") == 0 ? "aarch64"
	                                                            : NULL;
	if (machine == NULL)
		return mg_err_set(err, "Python wheels for Debian's %s are not known to mcpgate",
		                  l->store.arch);
	for (unsigned g = glibc; g >= 17; g--)
		strv_pushf(&t->platforms, "manylinux_2_%u_%s", g, machine);
	strv_pushf(&t->platforms, "manylinux2014_%s", machine);
	/* a wheel built from source in the step, for this very python, is
	 * tagged for plain linux; the index's never are */
	if (built_here)
		strv_pushf(&t->platforms, "linux_%s", machine);
	return 0;
}

static void push_all(struct strv *argv, const char *const *args, size_t n)
{
	for (size_t i = 0; i < n; i++)
		strv_push(argv, args[i]);
}

static void push_target(struct strv *argv, const struct pip_target *t)
{
	strv_push(argv, "--python-version");
	strv_push(argv, t->python);
	strv_push(argv, "--implementation");
	strv_push(argv, "cp");
	strv_push(argv, "--abi");
	strv_push(argv, t->abi);
	strv_push(argv, "--abi");
	strv_push(argv, "abi3");
	strv_push(argv, "--abi");
	strv_push(argv, "none");
	for (size_t i = 0; i < t->platforms.n; i++) {
		strv_push(argv, "--platform");
		strv_push(argv, t->platforms.v[i]);
	}
}

/* ---- pip ------------------------------------------------------------------- */

int add_find_pip(char **python, struct mg_err **err)
{
	*python = proc_find_in_path("python3", getenv("PATH"));
	if (*python == NULL)
		return mg_err_set(err, "no python3 on this machine (PATH): pip resolves Python "
		                       "packages (apt-get install python3-pip); mcp.toml is left "
		                       "as it was");
	const char *argv[] = {*python, "-m", "pip", "--version", NULL};
	struct proc_result res;
	int r = proc_run(argv, (const char *const *)environ, 60000, 1 << 16, &res, err);
	if (r == 0 && !(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 0))
		r = mg_err_set(err,
		               "%s has no pip (python3 -m pip --version failed): apt-get install "
		               "python3-pip; mcp.toml is left as it was",
		               *python);
	proc_result_free(&res);
	return r;
}

/* python3 -m pip ARGS, the person's environment (their index, proxy,
 * certificates) but for what would move pip's output elsewhere */
static int pip_run(const char *python, const struct strv *args, struct proc_result *res,
                   struct mg_err **err)
{
	static const char *const dropped[] = {"PIP_TARGET=", "PIP_PREFIX=",    "PIP_ROOT=",
	                                      "PIP_USER=",   "PIP_NO_BINARY=", "PIP_ONLY_BINARY="};
	struct strv argv = STRV_INIT, env = STRV_INIT;
	strv_push(&argv, python);
	strv_push(&argv, "-m");
	strv_push(&argv, "pip");
	for (size_t i = 0; i < args->n; i++)
		strv_push(&argv, args->v[i]);
	for (size_t i = 0; environ[i] != NULL; i++) {
		bool drop = false;
		for (size_t k = 0; k < sizeof(dropped) / sizeof(dropped[0]); k++)
			drop = drop || strncmp(environ[i], dropped[k], strlen(dropped[k])) == 0;
		if (!drop)
			strv_push(&env, environ[i]);
	}
	strv_push(&env, "PIP_DISABLE_PIP_VERSION_CHECK=1");
	strv_push(&env, "PYTHONDONTWRITEBYTECODE=1");
	int r =
	    proc_run((const char *const *)strv_array(&argv), (const char *const *)strv_array(&env),
	             PIP_TIMEOUT_MS, PIP_OUTPUT_MAX, res, err);
	strv_free(&argv);
	strv_free(&env);
	return r;
}

/* pip's own complaint: its ERROR lines with the indented lines under them
 * (which wheel, the hash expected and got), and the first line that says
 * the index could not be reached */
static char *pip_complaint(const struct proc_result *res, bool *unreachable)
{
	struct mg_buf b = MG_BUF_INIT(4096);
	const char *text = mg_buf_str(&res->err);
	bool in_error = false;
	*unreachable = false;
	for (const char *line = text; *line != '\0';) {
		size_t n = strcspn(line, "\n");
		size_t lead = strspn(line, " ");
		bool error = n > 7 && strncmp(line, "ERROR: ", 7) == 0;
		bool under = in_error && lead > 0 && lead < n;
		bool reach = !*unreachable && n > 9 && strncmp(line, "WARNING: ", 9) == 0 &&
		             (memmem(line, n, "connection", 10) != NULL ||
		              memmem(line, n, "Could not fetch", 15) != NULL);
		size_t skip = error ? 7 : reach ? 9 : lead;
		if ((error || reach || under) && b.len < 1500) {
			if (b.len > 0)
				mg_buf_puts(&b, under ? " " : "; ", NULL);
			mg_buf_append(&b, line + skip, n - skip, NULL);
		}
		*unreachable = *unreachable || reach;
		in_error = error || under;
		line += n + (line[n] == '\n');
	}
	if (b.len == 0)
		mg_buf_puts(&b, "(pip said nothing on stderr)", NULL);
	return mg_buf_steal(&b, NULL);
}

/* The index pip asks, as the person's configuration names it (for
 * messages): PIP_INDEX_URL, else pip config's index-url, else pip's own */
static char *pip_index(const char *python)
{
	const char *env = getenv("PIP_INDEX_URL");
	if (env != NULL && *env != '\0')
		return xstrdup(env);
	struct strv args = STRV_INIT;
	strv_push(&args, "config");
	strv_push(&args, "list");
	struct proc_result res;
	char *url = NULL;
	if (pip_run(python, &args, &res, NULL) == 0)
		for (const char *line = mg_buf_str(&res.out); *line != '\0' && url == NULL;) {
			size_t n = strcspn(line, "\n");
			const char *key = memmem(line, n, "index-url='", 11);
			if (key != NULL && (key == line || key[-1] == '.') && n > 0 &&
			    line[n - 1] == '\'')
				url = xstrndup(key + 11, (size_t)(line + n - 1 - (key + 11)));
			line += n + (line[n] == '\n');
		}
	proc_result_free(&res);
	strv_free(&args);
	return url != NULL ? url : xstrdup("https://pypi.org/simple (pip's default)");
}

static int pip_check(const char *python, const char *what, struct proc_result *res,
                     struct mg_err **err)
{
	if (WIFEXITED(res->status) && WEXITSTATUS(res->status) == 0)
		return 0;
	bool unreachable = false;
	cleanup_free char *why = pip_complaint(res, &unreachable);
	cleanup_free char *index = pip_index(python);
	bool no_match = strstr(why, "No matching distribution") != NULL;
	return mg_err_set(err, "pip could not %s from the index %s%s: %s%s", what, index,
	                  unreachable ? ", which it could not reach" : "", why,
	                  no_match && !unreachable
	                      ? " (from an index mcpgate takes wheels only, since building a "
	                        "source distribution runs its code: download the package's "
	                        "NAME-VERSION.tar.gz and add pypi:./NAME-VERSION.tar.gz, "
	                        "which is built in a contained step)"
	                      : "");
}

/* ---- the lock -------------------------------------------------------------- */

struct locked {
	char *name, *version, *sha256;
	bool requested;
};

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct locked *)a)->name, ((const struct locked *)b)->name);
}

static bool hex64(const char *s)
{
	if (s == NULL || strlen(s) != 64)
		return false;
	for (const char *p = s; *p != '\0'; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

/* pip's installation report: each wheel's name, version and sha256, every
 * one checked before it goes into the lock (the index's text is a
 * stranger's) */
static int read_report(const char *path, const char *local_sha, struct locked **out, size_t *n,
                       struct mg_err **err)
{
	cleanup_free char *text = NULL;
	size_t len = 0;
	struct json_value *doc = NULL;
	if (mg_read_file(path, 64u << 20, &text, &len, err) < 0 ||
	    json_parse(text, len, NULL, &doc, err) < 0)
		return mg_err_wrap(err, "pip's report %s", path);
	const struct json_value *install = json_get(doc, "install");
	int r = 0;
	if (install == NULL || install->kind != JSON_ARRAY || install->u.arr.len == 0 ||
	    install->u.arr.len > PYPI_LOCK_MAX) {
		r = mg_err_set(err, "pip's report %s lists no packages to install", path);
		goto out;
	}
	*out = xcalloc(install->u.arr.len, sizeof(**out));
	for (size_t i = 0; i < install->u.arr.len; i++) {
		const struct json_value *item = install->u.arr.items[i];
		const struct json_value *meta = json_get(item, "metadata");
		const struct json_value *dl = json_get(item, "download_info");
		const struct json_value *ai = dl != NULL ? json_get(dl, "archive_info") : NULL;
		const struct json_value *hashes = ai != NULL ? json_get(ai, "hashes") : NULL;
		const struct json_value *req = json_get(item, "requested");
		const char *name = meta != NULL ? json_get_string(meta, "name") : NULL;
		const char *version = meta != NULL ? json_get_string(meta, "version") : NULL;
		const char *sha = hashes != NULL ? json_get_string(hashes, "sha256") : NULL;
		const char *url = dl != NULL ? json_get_string(dl, "url") : NULL;
		/* the local wheel, which pip read from where add copied it */
		if (sha == NULL && local_sha != NULL && url != NULL &&
		    strncmp(url, "file:", 5) == 0)
			sha = local_sha;
		if (name == NULL || !add_pypi_name_ok(name) || version == NULL ||
		    !version_ok(version)) {
			r = mg_err_set(
			    err,
			    "pip's report names package %zu \"%s\" version \"%s\", which "
			    "is not a Python package's name and version",
			    i + 1, name != NULL ? name : "", version != NULL ? version : "");
			goto out;
		}
		if (!hex64(sha)) {
			r = mg_err_set(err,
			               "the index gave no sha256 for %s %s (%s): without it the "
			               "wheel cannot be locked",
			               name, version, url != NULL ? url : "no url");
			goto out;
		}
		(*out)[i] =
		    (struct locked){normal_name(name, strlen(name)), xstrdup(version), xstrdup(sha),
		                    req != NULL && req->kind == JSON_BOOL && req->u.boolean};
		*n = i + 1;
	}
	qsort(*out, *n, sizeof(**out), by_name);
out:
	json_free(doc);
	return r;
}

static void locked_free(struct locked *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].version);
		free(v[i].sha256);
	}
	free(v);
}

/* The lock's text: a comment, then pip's requirements, one wheel a line,
 * sorted, each with its sha256; the requested wheel, when it is a local
 * one, by its path (kept in work). The same resolution gives the same
 * bytes. */
static char *render_lock(const struct pypi_req *req, const char *kept_wheel, const struct locked *v,
                         size_t n, struct pypi_pkg *p, size_t *len)
{
	struct mg_buf b = MG_BUF_INIT(1u << 22);
	mg_buf_printf(&b, NULL,
	              "# mcpgate's lock of %s%s: every wheel %s, checked by its sha256 when "
	              "pip installs it (--require-hashes)\n",
	              req != NULL ? "pypi:" : "what a source distribution's build needs",
	              req != NULL ? req->name : "", req != NULL ? "of the image" : "of the build");
	cleanup_free char *want = req != NULL ? normal_name(req->name, strlen(req->name)) : NULL;
	for (size_t i = 0; i < n; i++) {
		bool top = want != NULL && strcmp(v[i].name, want) == 0;
		if (top) {
			p->name = xstrdup(v[i].name);
			p->version = xstrdup(v[i].version);
			p->sha256 = xstrdup(v[i].sha256);
		}
		if (top && kept_wheel != NULL)
			mg_buf_printf(&b, NULL, "%s --hash=sha256:%s\n", kept_wheel, v[i].sha256);
		else
			mg_buf_printf(&b, NULL, "%s==%s --hash=sha256:%s\n", v[i].name,
			              v[i].version, v[i].sha256);
	}
	*len = b.len;
	return mg_buf_steal(&b, NULL);
}

/* What the lock in work was resolved for: the request and the target. A
 * kept lock for the same request is used as it is (pip then installs what
 * it pins, or refuses a wheel that is no longer the one locked). */
static char *request_text(const struct pypi_req *req, const char *wheel_sha,
                          const struct pip_target *t)
{
	return xasprintf("pypi:%s%s%s%s%s python %s %s %s\n", req->name,
	                 req->version != NULL ? "==" : "", req->version != NULL ? req->version : "",
	                 req->wheel != NULL   ? " wheel sha256:"
	                 : req->sdist != NULL ? " sdist sha256:"
	                                      : "",
	                 req->wheel != NULL || req->sdist != NULL ? wheel_sha : "", t->python,
	                 t->abi, t->platforms.n > 0 ? t->platforms.v[0] : "");
}

/* A local wheel copied into work/wheels (the lock names it there, where
 * nothing else writes), or a source distribution into work/sdist, and its
 * sha256 */
static int keep_file(const char *work, const char *sub, const char *wheel, char **kept,
                     char hex[65], struct mg_err **err)
{
	cleanup_free char *data = NULL;
	size_t len = 0;
	const char *base = strrchr(wheel, '/') + 1;
	cleanup_free char *dir = xasprintf("%s/%s", work, sub);
	*kept = xasprintf("%s/%s", dir, base);
	if (mg_read_file(wheel, WHEEL_MAX, &data, &len, err) < 0 ||
	    mg_mkdir_p(dir, 0755, err) < 0 ||
	    mg_write_file_atomic(*kept, data, len, 0644, err) < 0 ||
	    deb_file_sha256(*kept, hex, err) < 0)
		return mg_err_wrap(err, "%s", wheel);
	return 0;
}

/* pip's resolution of specs for t, wheels only, each wheel checked (the
 * local one, file:, has local_sha) and sorted by name */
static int pip_lock(const char *python, const char *work, const struct strv *specs,
                    const char *local_sha, const struct pip_target *t, struct locked **v, size_t *n,
                    struct mg_err **err)
{
	cleanup_free char *report = xasprintf("%s/report.json", work);
	cleanup_free char *nowhere = xasprintf("%s/resolve.target", work);
	struct strv args = STRV_INIT;
	const char *fixed[] = {"install",
	                       "--dry-run",
	                       "--ignore-installed",
	                       "--quiet",
	                       "--only-binary=:all:",
	                       "--report",
	                       report,
	                       "--target",
	                       nowhere,
	                       "--retries",
	                       "2",
	                       "--timeout",
	                       "30"};
	push_all(&args, fixed, sizeof(fixed) / sizeof(fixed[0]));
	push_target(&args, t);
	strv_push(&args, "--");
	struct mg_buf said = MG_BUF_INIT(4096);
	for (size_t i = 0; i < specs->n; i++) {
		strv_push(&args, specs->v[i]);
		mg_buf_printf(&said, NULL, "%s%s", i > 0 ? " " : "", specs->v[i]);
	}
	struct proc_result res;
	unlink(report);
	int r = pip_run(python, &args, &res, err);
	strv_free(&args);
	cleanup_free char *what = xasprintf("resolve %s", mg_buf_str(&said));
	mg_buf_free(&said);
	if (r == 0)
		r = pip_check(python, what, &res, err);
	proc_result_free(&res);
	if (r == 0)
		r = read_report(report, local_sha, v, n, err);
	unlink(report);
	return r;
}

/* pip's resolution of req for t, written as the lock */
static int resolve(const char *python, const char *work, const struct pypi_req *req,
                   const char *kept_wheel, const char *wheel_hex, const struct pip_target *t,
                   struct pypi_pkg *p, char **lock_text, size_t *lock_len, struct mg_err **err)
{
	cleanup_free char *spec =
	    kept_wheel != NULL ? xstrdup(kept_wheel)
	                       : xasprintf("%s%s%s", req->name, req->version != NULL ? "==" : "",
	                                   req->version != NULL ? req->version : "");
	struct strv specs = STRV_INIT;
	strv_push(&specs, spec);
	struct locked *v = NULL;
	size_t n = 0;
	int r =
	    pip_lock(python, work, &specs, kept_wheel != NULL ? wheel_hex : NULL, t, &v, &n, err);
	strv_free(&specs);
	if (r == 0) {
		*lock_text = render_lock(req, kept_wheel, v, n, p, lock_len);
		if (p->name == NULL)
			r = mg_err_set(err, "pip's resolution of %s does not hold %s itself", spec,
			               req->name);
		else if (req->version != NULL && strcmp(p->version, req->version) != 0)
			r = mg_err_set(err, "pip resolved %s to version %s, not %s", spec,
			               p->version, req->version);
	}
	locked_free(v, n);
	return r;
}

/* pip installs exactly the lock into work/DEST (site: the image's): no
 * resolution, every wheel checked by its hash, no .pyc written; nothing of
 * a wheel runs */
static int install(const char *python, const char *work, const char *lock, const char *dest,
                   const struct pip_target *t, struct mg_err **err)
{
	cleanup_free char *fresh = xasprintf("%s/%s.new", work, dest);
	cleanup_free char *site = xasprintf("%s/%s", work, dest);
	cleanup_free char *bin = xasprintf("%s/%s.new/bin", work, dest);
	if (mg_remove_tree(fresh, err) < 0)
		return -1;
	struct strv args = STRV_INIT;
	const char *fixed[] = {"install",          "--quiet",
	                       "--no-deps",        "--no-compile",
	                       "--require-hashes", "--only-binary=:all:",
	                       "--target",         fresh,
	                       "--retries",        "2",
	                       "--timeout",        "30"};
	push_all(&args, fixed, sizeof(fixed) / sizeof(fixed[0]));
	push_target(&args, t);
	strv_push(&args, "-r");
	strv_push(&args, lock);
	struct proc_result res;
	int r = pip_run(python, &args, &res, err);
	strv_free(&args);
	if (r == 0)
		r = pip_check(python,
		              "install the locked wheels (a wheel that is not the one locked is "
		              "refused: if the index changed it, that is why)",
		              &res, err);
	proc_result_free(&res);
	unsigned cleared = 0;
	/* pip's launchers name the host's python; the image has its own */
	if (r == 0)
		r = mg_remove_tree(bin, err);
	if (r == 0)
		r = add_clear_tree(fresh, &cleared, err);
	if (r == 0)
		r = mg_remove_tree(site, err);
	if (r == 0 && rename(fresh, site) < 0)
		r = mg_err_sys(err, errno, "%s to %s", fresh, site);
	if (r < 0) {
		struct mg_err *e2 = NULL;
		mg_remove_tree(fresh, &e2);
		mg_err_free(e2);
	}
	if (cleared > 0)
		progress_note("cleared %u setuid, setgid or special file(s) the wheels held",
		              cleared);
	return r;
}

/* ---- a source distribution ---------------------------------------------------- */

/* What the build needs (reqs), locked by pip into work/build.lock and
 * installed from it into work/build-env: wheels only, hashes required */
static int build_env(const char *python, const char *work, const struct strv *reqs,
                     const struct pip_target *t, struct mg_err **err)
{
	cleanup_free char *lock = xasprintf("%s/build.lock", work);
	cleanup_free char *env = xasprintf("%s/build-env", work);
	struct locked *v = NULL;
	size_t n = 0, len = 0;
	struct pypi_pkg none = {0};
	if (reqs->n == 0) {
		const char text[] = "# the build needs nothing from the index\n";
		if (mg_remove_tree(env, err) < 0 || mg_mkdir_p(env, 0700, err) < 0)
			return -1;
		return mg_write_file_atomic(lock, text, sizeof(text) - 1, 0600, err);
	}
	int r = pip_lock(python, work, reqs, NULL, t, &v, &n, err);
	if (r == 0) {
		cleanup_free char *text = render_lock(NULL, NULL, v, n, &none, &len);
		r = mg_write_file_atomic(lock, text, len, 0600, err);
	}
	locked_free(v, n);
	if (r == 0)
		r = install(python, work, lock, "build-env", t, err);
	return r < 0 ? mg_err_wrap(err, "what the build needs (build-system.requires)") : 0;
}

/* the wheel's file name says the sdist's own name and version */
static int wheel_is_sdists(const char *wheel, const struct pypi_req *req, struct mg_err **err)
{
	const char *base = strrchr(wheel, '/') + 1;
	size_t n1 = strcspn(base, "-");
	const char *v = base + n1 + (base[n1] == '-');
	cleanup_free char *name = normal_name(base, n1);
	cleanup_free char *want = normal_name(req->name, strlen(req->name));
	cleanup_free char *version = xstrndup(v, strcspn(v, "-"));
	if (!package_file_ok(base, ".whl") || strcmp(name, want) != 0 ||
	    strcmp(version, req->version) != 0)
		return mg_err_set(err,
		                  "the build of %s left %s, which is not a wheel of %s %s; "
		                  "mcp.toml is left as it was",
		                  strrchr(req->sdist, '/') + 1, base, req->name, req->version);
	return 0;
}

/* The sdist (kept in work/sdist) built in its contained step
 * (add_pypi_sdist.c), with what its build needs installed, once more when
 * the backend asks for more; the wheel it left, checked, kept in
 * work/wheels as a local wheel is. The build's trees go after; its lock
 * (work/build.lock) stays as the record of what built the wheel. */
static int build_sdist(const struct add_build *b, const char *python, const struct pypi_req *req,
                       const struct pypi_sdist *sd, const char *kept_sdist,
                       struct add_layers *layers, const struct pip_target *t, char **kept_wheel,
                       char wheel_hex[65], struct mg_err **err)
{
	const char *base = strrchr(kept_sdist, '/') + 1;
	cleanup_free char *env = xasprintf("%s/build-env", b->work);
	cleanup_free char *build = xasprintf("%s/build", b->work);
	cleanup_free char *built = NULL;
	cleanup_free char *what = xasprintf("the build of %s, in a container", base);
	struct strv reqs = STRV_INIT, more = STRV_INIT;
	progress_steps(b->progress, b->steps + 1);
	progress_begin(b->progress, what, NULL, NULL);
	int r = add_layers_python_tools(layers, b->refresh, err);
	for (size_t i = 0; i < sd->requires.n; i++)
		strv_push(&reqs, sd->requires.v[i]);
	for (int round = 0; r == 0 && built == NULL; round++) {
		if (round == 2) {
			r = mg_err_set(err,
			               "the build backend of %s asked for more again once it had "
			               "what it asked for (%s...); mcp.toml is left as it was",
			               base, more.n > 0 ? more.v[0] : "");
			break;
		}
		for (size_t i = 0; i < more.n; i++)
			strv_push(&reqs, more.v[i]);
		strv_free(&more);
		r = build_env(python, b->work, &reqs, t, err);
		if (r == 0)
			r = add_pypi_sdist_step(b, layers, base, sd, &more, &built, err);
	}
	if (r == 0)
		r = wheel_is_sdists(built, req, err);
	if (r == 0)
		r = keep_file(b->work, "wheels", built, kept_wheel, wheel_hex, err);
	progress_end(b->progress, r == 0);
	struct mg_err *rm = NULL;
	if ((mg_remove_tree(build, &rm) < 0 || mg_remove_tree(env, &rm) < 0) && r == 0)
		r = mg_err_set(err, "after the build: %s", mg_err_msg(rm));
	mg_err_free(rm);
	strv_free(&reqs);
	strv_free(&more);
	return r;
}

/* ---- the command ------------------------------------------------------------ */

/* the console script of p's own dist-info in site: [console_scripts] of
 * entry_points.txt, the one named as the package or the only one */
static int console_script(const char *site, struct pypi_pkg *p, struct mg_err **err)
{
	DIR *dir = opendir(site);
	if (dir == NULL)
		return mg_err_sys(err, errno, "%s", site);
	cleanup_free char *info = NULL;
	struct dirent *de;
	while ((de = readdir(dir)) != NULL && info == NULL) {
		size_t dash = strcspn(de->d_name, "-");
		if (!ends_with(de->d_name, ".dist-info") || de->d_name[dash] == '\0')
			continue;
		cleanup_free char *n = normal_name(de->d_name, dash);
		if (strcmp(n, p->name) == 0)
			info = xasprintf("%s/%s/entry_points.txt", site, de->d_name);
	}
	closedir(dir);
	cleanup_free char *text = NULL;
	size_t len = 0;
	if (info == NULL || mg_read_file(info, 1 << 20, &text, &len, NULL) < 0)
		text = xstrdup("");
	struct strv names = STRV_INIT, values = STRV_INIT;
	bool in = false;
	for (char *line = text; line != NULL && *line != '\0';) {
		char *nl = strchr(line, '\n');
		if (nl != NULL)
			*nl = '\0';
		char *s = line + strspn(line, " \t");
		size_t n = strlen(s);
		while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
			s[--n] = '\0';
		if (s[0] == '[')
			in = strcmp(s, "[console_scripts]") == 0;
		else if (in && s[0] != '#' && s[0] != ';' && strchr(s, '=') != NULL) {
			char *eq = strchr(s, '=');
			size_t kn = (size_t)(eq - s);
			while (kn > 0 && (s[kn - 1] == ' ' || s[kn - 1] == '\t'))
				kn--;
			char *v = eq + 1 + strspn(eq + 1, " \t");
			v[strcspn(v, " \t[")] = '\0';
			strv_push_owned(&names, xstrndup(s, kn));
			strv_push(&values, v);
		}
		line = nl != NULL ? nl + 1 : NULL;
	}
	long pick = -1;
	for (size_t i = 0; i < names.n && pick < 0; i++) {
		cleanup_free char *n = normal_name(names.v[i], strlen(names.v[i]));
		if (strcmp(n, p->name) == 0)
			pick = (long)i;
	}
	if (pick < 0 && names.n == 1)
		pick = 0;
	int r = 0;
	if (pick < 0) {
		struct mg_buf b = MG_BUF_INIT(4096);
		for (size_t i = 0; i < names.n && b.len < 400; i++)
			mg_buf_printf(&b, NULL, "%s%s", i > 0 ? ", " : "", names.v[i]);
		r = mg_err_set(err,
		               "pypi:%s==%s has %s console script%s%s%s%s: nothing says which one "
		               "starts the server; give --module MODULE to run python3 -m MODULE",
		               p->name, p->version, names.n == 0 ? "no" : "several",
		               names.n == 1 ? "" : "s", names.n > 0 ? " (" : "", mg_buf_str(&b),
		               names.n > 0 ? ")" : "");
		mg_buf_free(&b);
	} else {
		const char *v = values.v[pick];
		const char *colon = strchr(v, ':');
		size_t mlen = colon != NULL ? (size_t)(colon - v) : strlen(v);
		if (!dotted_ok(v, mlen) ||
		    (colon != NULL && !dotted_ok(colon + 1, strlen(colon + 1))))
			r = mg_err_set(
			    err,
			    "pypi:%s==%s: its console script %s names \"%s\", which is not "
			    "MODULE:FUNCTION of Python names",
			    p->name, p->version, names.v[pick], v);
		else
			p->command = xstrdup(v);
	}
	strv_free(&names);
	strv_free(&values);
	return r;
}

/* The image: site at /app/site over the Debian base and python3 (and the
 * --with set); python3 runs the console script, or -m the module */
static int make_image(const struct add_build *b, const struct pypi_pkg *p, const char *module,
                      const struct add_layers *layers, char **image, char **archive,
                      struct mg_err **err)
{
	cleanup_free char *site = xasprintf("%s/site:/app/site", b->work);
	cleanup_free char *repo = xasprintf("mcpgate-pypi-%s", b->name);
	cleanup_free char *tag = xstrdup(p->version);
	for (char *c = tag; *c != '\0'; c++)
		if (!(alnum(*c) || *c == '.' || *c == '_' || *c == '-'))
			*c = '_';
	cleanup_free char *ref = xasprintf("%s:%s", repo, tag);
	cleanup_free char *images = xasprintf("%s/images", b->data);
	cleanup_free char *out = xasprintf("%s/pypi-%s.tar.new", images, b->name);
	cleanup_free char *code = NULL;
	if (module == NULL) {
		/* MODULE:FUNC, each part checked as Python names: the call
		 * console_scripts describe, as pip's own launcher makes it */
		const char *colon = strchr(p->command, ':');
		cleanup_free char *mod = colon != NULL
		                             ? xstrndup(p->command, (size_t)(colon - p->command))
		                             : xstrdup(p->command);
		const char *attr = colon != NULL ? colon + 1 : NULL;
		size_t first = attr != NULL ? strcspn(attr, ".") : 0;
		code = attr != NULL ? xasprintf("import sys; from %s import %.*s; sys.exit(%s())",
		                                mod, (int)first, attr, attr)
		                    : xasprintf("import runpy; runpy.run_module('%s', run_name="
		                                "'__main__', alter_sys=True)",
		                                mod);
	}
	const char *ep_script[] = {"/usr/bin/python3", "-s", "-c", code};
	const char *ep_module[] = {"/usr/bin/python3", "-s", "-m", module};
	const char *adds[] = {site};
	const char *envs[] = {"PYTHONPATH=/app/site", "PYTHONDONTWRITEBYTECODE=1",
	                      "PYTHONUNBUFFERED=1"};
	struct strv labels = STRV_INIT;
	strv_pushf(&labels, "org.opencontainers.image.source=pypi:%s==%s", p->name, p->version);
	strv_pushf(&labels, "%s=%s", CTR_IMAGE_LABEL_PYPI, p->name);
	strv_pushf(&labels, "io.mcpgate.pypi.version=%s", p->version);
	strv_pushf(&labels, "io.mcpgate.pypi.sha256=%s", p->sha256);
	strv_pushf(&labels, "io.mcpgate.pypi.lock=sha256:%s", p->lock_hex);
	if (module != NULL) /* update makes it again with the same */
		strv_pushf(&labels, "%s=%s", ADD_PYPI_LABEL_MODULE, module);
	struct pack_spec spec = {
	    .output = out,
	    .adds = adds,
	    .n_adds = 1,
	    .entrypoint = module != NULL ? ep_module : ep_script,
	    .n_entrypoint = 4,
	    .env = envs,
	    .n_env = 3,
	    .workdir = "/app",
	    .name = ref,
	};
	struct pack_result res = {0};
	int r =
	    add_pack_over(&spec, layers, false, &labels, images, repo, &res, image, archive, err);
	strv_free(&labels);
	pack_result_free(&res);
	return r;
}

int add_pypi_build(const struct add_build *b, const char *python, const struct pypi_req *req,
                   const char *module, struct pypi_pkg *p, char **image, char **archive,
                   struct mg_err **err)
{
	struct add_layers layers = {0};
	struct pip_target t = {0};
	struct strv none = STRV_INIT;
	cleanup_free char *lock = xasprintf("%s/requirements.lock", b->work);
	cleanup_free char *request = xasprintf("%s/request", b->work);
	cleanup_free char *site = xasprintf("%s/site", b->work);
	cleanup_free char *built_path = xasprintf("%s/sdist.wheel", b->work);
	cleanup_free char *kept_wheel = NULL, *lock_text = NULL, *want = NULL, *have = NULL;
	cleanup_free char *kept_sdist = NULL;
	cleanup_free char *what = NULL;
	struct progress_tree tree = {site};
	char wheel_hex[65] = "", sdist_hex[65] = "";
	struct pypi_sdist sd = {0};
	size_t lock_len = 0, have_len = 0;
	int r = -1;
	*image = *archive = NULL;

	/* what a source distribution says of its build is checked first */
	if (req->sdist != NULL && add_pypi_sdist_read(req->sdist, &sd, err) < 0)
		return -1;
	progress_begin(b->progress,
	               "the layers below the package's: Debian base, python3, "
	               "packages",
	               NULL, NULL);
	r = add_layers_prepare(&layers, b->data, b->cfg, NULL,
	                       b->packages != NULL ? b->packages : &none, b->refresh, err);
	if (r == 0)
		r = pip_target_of(&layers, req->sdist != NULL, &t, err);
	progress_end(b->progress, r == 0);
	if (r < 0)
		goto out;
	r = mg_mkdir_p(b->work, 0700, err);
	if (r == 0 && req->wheel != NULL)
		r = keep_file(b->work, "wheels", req->wheel, &kept_wheel, wheel_hex, err);
	if (r == 0 && req->sdist != NULL)
		r = keep_file(b->work, "sdist", req->sdist, &kept_sdist, sdist_hex, err);
	if (r < 0)
		goto out;
	if (strpbrk(b->work, " \t#\\\"'") != NULL) {
		r = mg_err_set(err,
		               "%s holds a space, quote, # or backslash, which pip's "
		               "requirements file cannot carry",
		               b->work);
		goto out;
	}
	want = request_text(req, req->sdist != NULL ? sdist_hex : wheel_hex, &t);
	bool kept = mg_read_file(request, 1 << 16, &have, &have_len, NULL) == 0 &&
	            strcmp(have, want) == 0 &&
	            mg_read_file(lock, 16u << 20, &lock_text, &lock_len, NULL) == 0;
	if (req->sdist != NULL) {
		/* the wheel a build of this very sdist left (its path beside the
		 * lock), else the build */
		cleanup_free char *built = NULL;
		size_t built_len = 0;
		kept = kept && mg_read_file(built_path, 4096, &built, &built_len, NULL) == 0 &&
		       strlen(built) == built_len && access(built, R_OK) == 0 &&
		       deb_file_sha256(built, wheel_hex, NULL) == 0;
		if (kept)
			kept_wheel = steal_pointer(&built);
		else
			r = build_sdist(b, python, req, &sd, kept_sdist, &layers, &t, &kept_wheel,
			                wheel_hex, err);
		if (r == 0 && !kept)
			r = mg_write_file_atomic(built_path, kept_wheel, strlen(kept_wheel), 0600,
			                         err);
		if (r < 0)
			goto out;
	}
	what = xasprintf("pip resolves %s for python %s, wheels only%s", req->name, t.python,
	                 kept ? " (the kept lock)" : "");
	progress_begin(b->progress, what, NULL, NULL);
	if (kept) {
		/* the lock's own top line names the package; its first pin is it */
		r = 0;
		cleanup_free char *norm = normal_name(req->name, strlen(req->name));
		for (char *line = lock_text; r == 0 && line != NULL && *line != '\0';) {
			char *nl = strchr(line, '\n');
			size_t n = nl != NULL ? (size_t)(nl - line) : strlen(line);
			char *hash = memmem(line, n, " --hash=sha256:", 15);
			char *eqeq = memmem(line, n, "==", 2);
			size_t name_len = eqeq != NULL ? (size_t)(eqeq - line) : 0;
			bool top = (kept_wheel != NULL &&
			            strncmp(line, kept_wheel, strlen(kept_wheel)) == 0) ||
			           (eqeq != NULL && name_len == strlen(norm) &&
			            strncmp(line, norm, name_len) == 0);
			if (line[0] != '#' && hash != NULL && top && p->name == NULL) {
				p->name = xstrdup(norm);
				p->version = kept_wheel != NULL
				                 ? xstrdup(req->version)
				                 : xstrndup(eqeq + 2, (size_t)(hash - eqeq - 2));
				p->sha256 = xstrndup(hash + 15, 64);
			}
			line = nl != NULL ? nl + 1 : NULL;
		}
		if (p->name == NULL)
			r = mg_err_set(err, "%s does not pin %s: remove it to resolve again", lock,
			               req->name);
	} else {
		r = resolve(python, b->work, req, kept_wheel, wheel_hex, &t, p, &lock_text,
		            &lock_len, err);
		if (r == 0)
			r = mg_write_file_atomic(lock, lock_text, lock_len, 0600, err);
		if (r == 0)
			r = mg_write_file_atomic(request, want, strlen(want), 0600, err);
	}
	progress_end(b->progress, r == 0);
	if (r < 0)
		goto out;
	{
		char hex[65];
		if (deb_file_sha256(lock, hex, err) < 0) {
			r = -1;
			goto out;
		}
		p->lock_hex = xstrdup(hex);
	}
	progress_note("pypi:%s resolves to %s==%s (sha256 %s), the lock %s", req->name, p->name,
	              p->version, p->sha256, lock);
	free(what);
	what = xasprintf("pip install of the locked wheels, hashes required");
	progress_begin(b->progress, what, progress_gauge_tree, &tree);
	r = install(python, b->work, lock, "site", &t, err);
	if (r == 0 && module == NULL)
		r = console_script(site, p, err);
	progress_end(b->progress, r == 0);
	if (r < 0)
		goto out;
	free(what);
	what = xasprintf("the image of %s==%s", p->name, p->version);
	progress_begin(b->progress, what, NULL, NULL);
	r = make_image(b, p, module, &layers, image, archive, err);
	add_progress_made(b, r == 0 ? *archive : NULL);
	progress_end(b->progress, r == 0);
	if (r == 0)
		r = add_load_image(b, image, *archive, err);
out:
	if (r < 0) {
		free(steal_pointer(image));
		free(steal_pointer(archive));
	}
	add_pypi_sdist_free(&sd);
	pip_target_free(&t);
	add_layers_free(&layers);
	return r;
}

/* ---- update's resolution (update.c) ----------------------------------------- */

int add_pypi_resolve(const struct cfg *cfg, const char *data, const char *python,
                     const struct pypi_req *req, const char *work, struct pypi_pkg *p,
                     struct mg_err **err)
{
	if (req->wheel != NULL)
		return mg_err_set(err, "%s: a local wheel is not resolved from an index",
		                  req->wheel);
	struct add_layers layers = {0};
	struct pip_target t = {0};
	struct strv none = STRV_INIT;
	cleanup_free char *lock_text = NULL, *want = NULL;
	cleanup_free char *lock = xasprintf("%s/requirements.lock", work);
	cleanup_free char *request = xasprintf("%s/request", work);
	size_t lock_len = 0;
	/* the target is the python layer's and the base's, whatever set a
	 * server adds over them */
	int r = add_layers_prepare(&layers, data, cfg, NULL, &none, false, err);
	if (r == 0)
		r = pip_target_of(&layers, false, &t, err);
	if (r == 0)
		r = mg_mkdir_p(work, 0700, err);
	if (r == 0 && strpbrk(work, " \t#\\\"'") != NULL)
		r = mg_err_set(err,
		               "%s holds a space, quote, # or backslash, which pip's "
		               "requirements file cannot carry",
		               work);
	if (r == 0)
		r = resolve(python, work, req, NULL, NULL, &t, p, &lock_text, &lock_len, err);
	if (r == 0) {
		/* what add_pypi_build is asked next: the exact version resolved,
		 * which finds this lock as kept */
		struct pypi_req exact = {.name = req->name, .version = p->version};
		want = request_text(&exact, "", &t);
		r = mg_write_file_atomic(lock, lock_text, lock_len, 0600, err);
		if (r == 0)
			r = mg_write_file_atomic(request, want, strlen(want), 0600, err);
	}
	pip_target_free(&t);
	add_layers_free(&layers);
	return r;
}
