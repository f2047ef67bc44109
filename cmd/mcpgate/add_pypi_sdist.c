/* pypi:./NAME-VERSION.tar.gz: a Python source distribution, built into a
 * wheel in a contained step (docs/2026-12-02-pypi-sdist.md).
 *
 * Building an sdist runs its code (setup.py, its build backend), so it is
 * never built on the host. Here, on the host, only its pyproject.toml is
 * read (build-system: what the build needs, which backend builds it); pip
 * installs what the build needs from the person's index as wheels, locked
 * by sha256 like the server's own, into DATA/pypi/NAME/build-env. The step
 * (add_step.c) is a container with a server's isolation and no network: the
 * work folder read-only at /workspace, only its build folder writable; its
 * image is the Debian base, python3 and the build tools (gcc, python3's
 * headers), which the server's image does not get. The runner below unpacks
 * the sdist there and calls the backend as PEP 517 says. When the backend
 * asks for more than pyproject.toml named (get_requires_for_build_wheel),
 * the step says which and exits 3; the host installs them, locked, and the
 * step runs once more. The wheel it leaves is the person's local wheel from
 * then on: its name and version must be the sdist's. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/mcpgate/add.h"
#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/xalloc.h"
#include "internal/toml/toml.h"

#define SDIST_MAX         (256u << 20)
#define PYPROJECT_MAX     (1u << 20)
#define REQUIRES_MAX      64
#define REQUIREMENT_MAX   200
#define RUNNER_NAME       "mcpgate-pypi-build.py"
#define STATUS_MORE       3
#define REQUIRES_JSON_MAX (1u << 16)

/* Runs in the container: /workspace is the work folder (read-only), its
 * build folder writable. argv: the sdist's file name in /workspace/sdist,
 * the backend, the backend-path entries. */
static const char runner[] =
    "# mcpgate add pypi: a source distribution built by its PEP 517 backend, contained\n"
    "import importlib, importlib.metadata, json, os, re, sys, tarfile\n"
    "W = '/workspace'\n"
    "OUT = W + '/build'\n"
    "sdist, backend, paths = sys.argv[1], sys.argv[2], sys.argv[3:]\n"
    "src, tmp = OUT + '/src', OUT + '/tmp'\n"
    "os.makedirs(tmp, exist_ok=True)\n"
    "os.environ['TMPDIR'] = tmp\n"
    "with tarfile.open(os.path.join(W, 'sdist', sdist), 'r:gz') as tf:\n"
    "    take = []\n"
    "    for m in tf.getmembers():\n"
    "        parts = m.name.split('/')\n"
    "        if m.name.startswith('/') or '..' in parts or not (m.isfile() or m.isdir()):\n"
    "            print('mcpgate: not unpacked (not a file or folder below the top): %r' % "
    "m.name, file=sys.stderr)\n"
    "            continue\n"
    "        m.mode = 0o755 if m.isdir() else (0o755 if m.mode & 0o100 else 0o644)\n"
    "        m.uid = m.gid = 0\n"
    "        m.uname = m.gname = ''\n"
    "        take.append(m)\n"
    "    tf.extractall(src, members=take)\n"
    "tops = os.listdir(src)\n"
    "if len(tops) != 1 or not os.path.isdir(os.path.join(src, tops[0])):\n"
    "    sys.exit('mcpgate: the sdist holds %d entries at its top, not one folder' % "
    "len(tops))\n"
    "top = os.path.join(src, tops[0])\n"
    "os.chdir(top)\n"
    "sys.path[:0] = [os.path.join(top, p) for p in paths] + [W + '/build-env']\n"
    "mod, _, attr = backend.partition(':')\n"
    "be = importlib.import_module(mod)\n"
    "for a in attr.split('.') if attr else []:\n"
    "    be = getattr(be, a)\n"
    "hook = getattr(be, 'get_requires_for_build_wheel', None)\n"
    "asked = list(hook({})) if hook is not None else []\n"
    "missing = []\n"
    "for req in asked:\n"
    "    m = re.match(r'\\s*([A-Za-z0-9][A-Za-z0-9._-]*)', req)\n"
    "    try:\n"
    "        importlib.metadata.distribution(m.group(1) if m else req)\n"
    "    except importlib.metadata.PackageNotFoundError:\n"
    "        missing.append(req)\n"
    "if missing:\n"
    "    with open(OUT + '/requires.json', 'w') as fh:\n"
    "        json.dump(missing, fh)\n"
    "    print('mcpgate: the backend asks for more to build: ' + ', '.join(missing), "
    "file=sys.stderr)\n"
    "    sys.exit(3)\n"
    "os.makedirs(OUT + '/dist', exist_ok=True)\n"
    "name = be.build_wheel(OUT + '/dist', {})\n"
    "print('mcpgate: built ' + str(name), file=sys.stderr)\n";

void add_pypi_sdist_free(struct pypi_sdist *s)
{
	free(s->backend);
	strv_free(&s->requires);
	strv_free(&s->backend_path);
	memset(s, 0, sizeof(*s));
}

bool add_pypi_requirement_ok(const char *s)
{
	/* PEP 508 with names, versions, extras and markers; no direct
	 * reference (NAME @ URL): what the build needs comes from the index */
	size_t n = strlen(s);
	if (n == 0 || n > REQUIREMENT_MAX ||
	    !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') ||
	      (s[0] >= '0' && s[0] <= '9')))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		          (c >= '0' && c <= '9') || strchr(" ._-[],<>=!~;()'\"*+", c) != NULL;
		if (!ok)
			return false;
	}
	return true;
}

/* a backend-path entry: a relative path inside the source tree */
static bool inside_path_ok(const char *s)
{
	if (s[0] == '\0' || s[0] == '/' || strlen(s) > 200)
		return false;
	for (const char *p = s; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || *p == '\\')
			return false;
	for (const char *p = s; *p != '\0';) {
		size_t n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return false;
		p += n + (p[n] == '/');
	}
	return true;
}

static int strings_of(const char *path, const struct toml_value *build, const char *key, size_t max,
                      bool (*ok)(const char *), struct strv *out, struct mg_err **err)
{
	const struct toml_value *v = toml_get(build, key);
	if (v == NULL)
		return 0;
	if (v->kind != TOML_ARRAY || v->u.array.len > max)
		return mg_err_set(err,
		                  "%s: pyproject.toml:%u: build-system.%s is not an array of "
		                  "at most %zu strings",
		                  path, v->pos.line, key, max);
	for (size_t i = 0; i < v->u.array.len; i++) {
		const struct toml_value *s = v->u.array.items[i];
		if (s->kind != TOML_STRING || strlen(s->u.str.ptr) != s->u.str.len ||
		    !ok(s->u.str.ptr))
			return mg_err_set(
			    err,
			    "%s: pyproject.toml:%u: build-system.%s holds %s%s%s, which mcpgate "
			    "does not take (%s)",
			    path, s->pos.line, key,
			    s->kind == TOML_STRING ? "\"" : "an item of type ",
			    s->kind == TOML_STRING ? s->u.str.ptr : toml_kind_name(s->kind),
			    s->kind == TOML_STRING ? "\"" : "",
			    ok == add_pypi_requirement_ok ? "a requirement is NAME[extras] with "
			                                    "versions and markers, from the "
			                                    "index, never a URL"
			                                  : "a path below the source's top folder");
		strv_push(out, s->u.str.ptr);
	}
	return 0;
}

static bool backend_ok(const char *s)
{
	const char *colon = strchr(s, ':');
	size_t mlen = colon != NULL ? (size_t)(colon - s) : strlen(s);
	cleanup_free char *mod = xstrndup(s, mlen);
	return add_pypi_module_ok(mod) && (colon == NULL || add_pypi_module_ok(colon + 1));
}

int add_pypi_sdist_read(const char *path, struct pypi_sdist *out, struct mg_err **err)
{
	memset(out, 0, sizeof(*out));
	cleanup_free char *data = NULL, *text = NULL;
	size_t len = 0, n = 0;
	if (mg_read_file(path, SDIST_MAX, &data, &len, err) < 0)
		return mg_err_wrap(err, "the source distribution");
	int r = add_tar_member(path, data, len, "pyproject.toml", PYPROJECT_MAX, &text, &n, err);
	if (r < 0)
		return mg_err_wrap(err, "the source distribution (NAME-VERSION.tar.gz)");
	struct toml_value *doc = NULL;
	const struct toml_value *build = NULL;
	if (r == 1) {
		cleanup_free char *where = xasprintf("%s: pyproject.toml", path);
		if (toml_parse(text, n, where, &doc, err) < 0)
			return -1;
		build = toml_get(doc, "build-system");
		if (build != NULL && build->kind != TOML_TABLE) {
			unsigned line = build->pos.line;
			toml_free(doc);
			return mg_err_set(err, "%s: pyproject.toml:%u: build-system is not a table",
			                  path, line);
		}
	}
	r = 0;
	if (build == NULL) {
		/* PEP 517's rule for a source without build-system: setuptools,
		 * as setup.py alone was built */
		strv_push(&out->requires, "setuptools>=40.8.0");
		out->backend = xstrdup("setuptools.build_meta:__legacy__");
		goto out;
	}
	const struct toml_value *be = toml_get(build, "build-backend");
	if (be != NULL && (be->kind != TOML_STRING || strlen(be->u.str.ptr) != be->u.str.len ||
	                   !backend_ok(be->u.str.ptr))) {
		r = mg_err_set(err,
		               "%s: pyproject.toml:%u: build-system.build-backend is not "
		               "MODULE[:OBJECT] of Python names",
		               path, be->pos.line);
		goto out;
	}
	out->backend = xstrdup(be != NULL ? be->u.str.ptr : "setuptools.build_meta:__legacy__");
	if (toml_get(build, "requires") == NULL) {
		r = mg_err_set(err, "%s: pyproject.toml: build-system has no requires (PEP 518)",
		               path);
		goto out;
	}
	r = strings_of(path, build, "requires", REQUIRES_MAX, add_pypi_requirement_ok,
	               &out->requires, err);
	if (r == 0)
		r = strings_of(path, build, "backend-path", 16, inside_path_ok, &out->backend_path,
		               err);
out:
	toml_free(doc);
	if (r < 0)
		add_pypi_sdist_free(out);
	return r;
}

/* what the backend asked for beyond what was installed: a JSON array of
 * requirement strings, each checked as pyproject.toml's are (the step's
 * output is a stranger's) */
static int read_more(const char *path, struct strv *more, struct mg_err **err)
{
	cleanup_free char *text = NULL;
	size_t len = 0;
	struct json_value *doc = NULL;
	if (mg_read_file(path, REQUIRES_JSON_MAX, &text, &len, err) < 0 ||
	    json_parse(text, len, NULL, &doc, err) < 0)
		return mg_err_wrap(err, "what the build backend asked for");
	int r = 0;
	if (doc->kind != JSON_ARRAY || doc->u.arr.len == 0 || doc->u.arr.len > REQUIRES_MAX)
		r = mg_err_set(err, "%s: not an array of 1 to %d requirements", path, REQUIRES_MAX);
	for (size_t i = 0; r == 0 && i < doc->u.arr.len; i++) {
		const struct json_value *v = doc->u.arr.items[i];
		if (v->kind != JSON_STRING || !add_pypi_requirement_ok(v->u.str.ptr))
			r = mg_err_set(
			    err,
			    "the build backend asked for %s, which is not a requirement "
			    "mcpgate takes (NAME[extras] with versions and markers, from "
			    "the index, never a URL)",
			    v->kind == JSON_STRING ? v->u.str.ptr : "something other");
		else
			strv_push(more, v->u.str.ptr);
	}
	json_free(doc);
	return r;
}

/* the one wheel the step left in dist */
static int built_wheel(const char *dist, char **wheel, struct mg_err **err)
{
	DIR *dir = opendir(dist);
	if (dir == NULL)
		return mg_err_sys(err, errno, "the build left no wheel (%s)", dist);
	struct dirent *de;
	int found = 0;
	while ((de = readdir(dir)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		found++;
		if (*wheel == NULL)
			*wheel = xasprintf("%s/%s", dist, de->d_name);
	}
	closedir(dir);
	if (found != 1) {
		free(steal_pointer(wheel));
		return mg_err_set(err, "the build left %d files in %s, where one wheel was wanted",
		                  found, dist);
	}
	return 0;
}

int add_pypi_sdist_step(const struct add_build *b, const struct add_layers *l,
                        const char *sdist_base, const struct pypi_sdist *s, struct strv *more,
                        char **wheel, struct mg_err **err)
{
	cleanup_free char *build = xasprintf("%s/build", b->work);
	cleanup_free char *dist = xasprintf("%s/dist", build);
	cleanup_free char *requires = xasprintf("%s/requires.json", build);
	cleanup_free char *what = xasprintf("the build of %s", sdist_base);
	*wheel = NULL;
	if (mg_remove_tree(build, err) < 0 || mg_mkdir_p(build, 0700, err) < 0)
		return -1;
	struct strv args = STRV_INIT;
	strv_push(&args, sdist_base);
	strv_push(&args, s->backend);
	for (size_t i = 0; i < s->backend_path.n; i++)
		strv_push(&args, s->backend_path.v[i]);
	const char *ep[] = {"/usr/bin/python3", "-s", "/workspace/" RUNNER_NAME};
	/* the same sdist gives the same wheel: its files' times are this one */
	const char *env[] = {"SOURCE_DATE_EPOCH=315532800", "PYTHONHASHSEED=0",
	                     "PYTHONDONTWRITEBYTECODE=1"};
	struct add_step st = {
	    .kind = "pypi-build",
	    .what = what,
	    .label = CTR_IMAGE_LABEL_PYPI_BUILD,
	    .runner_name = RUNNER_NAME,
	    .runner = runner,
	    .runner_len = sizeof(runner) - 1,
	    .entrypoint = ep,
	    .n_entrypoint = 3,
	    .env = env,
	    .n_env = 3,
	    .write = "build",
	    .args = &args,
	    .quiet_status = STATUS_MORE,
	};
	int status = -1;
	int r =
	    add_step_run(b->cfg, b->d, b->work, b->data, b->name, l, &st, b->accept, &status, err);
	strv_free(&args);
	if (r < 0)
		return -1;
	if (status == STATUS_MORE)
		return read_more(requires, more, err);
	if (status != 0)
		return mg_err_set(err,
		                  "%s failed in its container (status %d; its output is above); "
		                  "mcp.toml is left as it was",
		                  what, status);
	return built_wheel(dist, wheel, err);
}
