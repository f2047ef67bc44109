/* mcpgate add npm:PACKAGE[@VERSION]: from a package on the npm registry to a
 * pinned image in the runtime and a [[server]] entry in mcp.toml with every
 * tool off (docs/adding.md).
 *
 * No package code runs on the host: npm resolves and installs with every
 * lifecycle script off (--ignore-scripts and npm_config_ignore_scripts), from
 * a lockfile kept in DATA/npm/NAME, so the same input gives the same image.
 * The image is two layers: this machine's node with the libraries it loads
 * (one layer, byte for byte the same for every server made here, so the
 * runtime stores it once) and the package's node_modules. Where the package
 * came from (name, version, npm integrity, node) is in the image's labels,
 * under the digest pin, and review shows them. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd/mcpgate/add.h"
#include "cmd/mcpgate/commands.h"
#include "cmd/mcpgate/opts.h"
#include "cmd/mcpgate/progress.h"
#include "cmd/mcpgate/setup.h"
#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/log.h"
#include "internal/base/strv.h"
#include "internal/base/xalloc.h"
#include "internal/config/edit.h"
#include "internal/json/json.h"
#include "internal/pack/pack.h"
#include "internal/proc/proc.h"
#include "internal/toml/toml.h"

extern char **environ;

#define NPM_TIMEOUT_MS (15 * 60 * 1000)
#define NPM_OUTPUT_MAX (8u << 20)

void add_npm_pkg_free(struct npm_pkg *p)
{
	free(p->name);
	free(p->version);
	free(p->integrity);
	free(p->bin);
	free(p->spec);
}

/* ---- the package's name ------------------------------------------------- */

static bool npm_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
	       c == '_' || c == '~';
}

/* [@scope/]name as npm takes it: lower case, no leading dot or underscore */
static bool npm_name_ok(const char *s)
{
	const char *p = s;
	if (*p == '@') {
		p++;
		const char *slash = strchr(p, '/');
		if (slash == NULL || slash == p)
			return false;
		for (; p < slash; p++)
			if (!npm_char(*p))
				return false;
		p++;
	}
	if (*p == '\0' || *p == '.' || *p == '_' || strlen(s) > 214)
		return false;
	for (; *p != '\0'; p++)
		if (!npm_char(*p))
			return false;
	return true;
}

/* "npm:PACKAGE[@VERSION]" into its parts (allocated) */
static int parse_source(const char *src, char **pkg, char **version, struct mg_err **err)
{
	if (strncmp(src, "npm:", 4) != 0)
		return mg_err_set(err,
		                  "%s: give npm:PACKAGE[@VERSION], pypi:NAME[==VERSION] (or "
		                  "--server-json FILE); other sources are not supported",
		                  src);
	const char *spec = src + 4;
	const char *at = strchr(spec[0] == '@' ? spec + 1 : spec, '@');
	*pkg = at != NULL ? xstrndup(spec, (size_t)(at - spec)) : xstrdup(spec);
	*version = at != NULL ? xstrdup(at + 1) : xstrdup("latest");
	if (!npm_name_ok(*pkg))
		return mg_err_set(
		    err,
		    "%s: \"%s\" is not an npm package name ([@scope/]name, lower case "
		    "letters, digits, - . _ ~)",
		    src, *pkg);
	for (const char *p = *version; *p != '\0'; p++)
		if (!(npm_char(*p) || *p == '^' || *p == '<' || *p == '>' || *p == '=' ||
		      *p == '*' || *p == '+' || *p == ' ' || *p == '|' || *p == 'x'))
			return mg_err_set(err, "%s: \"%s\" is not a version or range", src,
			                  *version);
	if ((*version)[0] == '\0')
		return mg_err_set(err, "%s: the version after @ is empty", src);
	return 0;
}

/* A server name from the package: its last part, as mcp.toml names take it */
static char *default_name(const char *pkg)
{
	const char *slash = strrchr(pkg, '/');
	const char *base = slash != NULL ? slash + 1 : pkg;
	char *out = xstrdup(base);
	for (char *p = out; *p != '\0'; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-'))
			*p = '-';
	return out;
}

/* ---- npm ---------------------------------------------------------------- */

/* The person's environment, with npm's scripts off whatever their npmrc says */
static struct strv npm_env(void)
{
	struct strv e = STRV_INIT;
	for (size_t i = 0; environ[i] != NULL; i++)
		if (strncasecmp(environ[i], "npm_config_ignore_scripts=", 26) != 0)
			strv_push(&e, environ[i]);
	strv_push(&e, "npm_config_ignore_scripts=true");
	strv_push(&e, "npm_config_audit=false");
	strv_push(&e, "npm_config_fund=false");
	strv_push(&e, "npm_config_update_notifier=false");
	return e;
}

/* npm with args, in dir (NULL: where add runs) */
static int npm_run(const char *npm, const char *dir, const char *const *args,
                   struct proc_result *res, struct mg_err **err)
{
	struct strv argv = STRV_INIT;
	strv_push(&argv, npm);
	for (size_t i = 0; args[i] != NULL; i++)
		strv_push(&argv, args[i]);
	struct strv env = npm_env();
	int r = proc_run_at((const char *const *)strv_array(&argv),
	                    (const char *const *)strv_array(&env), dir, NPM_TIMEOUT_MS,
	                    NPM_OUTPUT_MAX, res, err);
	strv_free(&argv);
	strv_free(&env);
	return r;
}

/* npm's own complaint: its "npm error" lines, else the last line */
static char *npm_complaint(const struct proc_result *res)
{
	struct mg_buf b = MG_BUF_INIT(4096);
	const char *text = mg_buf_str(&res->err);
	for (const char *line = text; line != NULL && *line != '\0';) {
		const char *nl = strchr(line, '\n');
		size_t n = nl != NULL ? (size_t)(nl - line) : strlen(line);
		if (n > 10 && strncmp(line, "npm error ", 10) == 0 && b.len < 600 &&
		    memmem(line, n, "complete log", 12) == NULL) {
			if (b.len > 0)
				mg_buf_puts(&b, "; ", NULL);
			mg_buf_append(&b, line + 10, n - 10, NULL);
		}
		line = nl != NULL ? nl + 1 : NULL;
	}
	if (b.len == 0)
		mg_buf_puts(&b, "(npm said nothing on stderr)", NULL);
	return mg_buf_steal(&b, NULL);
}

/* The entry point of bin (a string, or an object of commands) */
static char *pick_bin(const struct json_value *bin, const char *pkg, struct mg_err **err)
{
	if (bin != NULL && bin->kind == JSON_STRING)
		return xstrdup(bin->u.str.ptr);
	if (bin == NULL || bin->kind != JSON_OBJECT || bin->u.obj.len == 0)
		return mg_err_set(err,
		                  "npm:%s has no \"bin\" in its package.json: nothing says which "
		                  "file starts the server",
		                  pkg),
		       NULL;
	const char *slash = strrchr(pkg, '/');
	const char *base = slash != NULL ? slash + 1 : pkg;
	const struct json_value *only = NULL;
	for (size_t i = 0; i < bin->u.obj.len; i++) {
		const struct json_member *m = &bin->u.obj.items[i];
		if (m->value->kind != JSON_STRING)
			continue;
		if (bin->u.obj.len == 1 || strcmp(m->key, base) == 0 || strcmp(m->key, pkg) == 0)
			only = m->value;
	}
	if (only == NULL) {
		struct mg_buf names = MG_BUF_INIT(4096);
		for (size_t i = 0; i < bin->u.obj.len; i++)
			mg_buf_printf(&names, NULL, "%s%s", i > 0 ? ", " : "",
			              bin->u.obj.items[i].key);
		mg_err_set(err, "npm:%s has several commands in \"bin\" (%s) and none is named %s",
		           pkg, mg_buf_str(&names), base);
		mg_buf_free(&names);
		return NULL;
	}
	return xstrdup(only->u.str.ptr);
}

/* An integrity as npm writes it: "sha512-" (or sha384, sha256) and base64 */
static bool integrity_ok(const char *s)
{
	static const char b64[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=";
	if (s == NULL)
		return false;
	const char *dash = strchr(s, '-');
	return dash != NULL &&
	       (strncmp(s, "sha512-", 7) == 0 || strncmp(s, "sha384-", 7) == 0 ||
	        strncmp(s, "sha256-", 7) == 0) &&
	       dash[1] != '\0' && strspn(dash + 1, b64) == strlen(dash + 1) && strlen(s) <= 128;
}

int add_npm_resolve(const char *npm, const char *pkg, const char *version, struct npm_pkg *out,
                    struct mg_err **err)
{
	memset(out, 0, sizeof(*out));
	cleanup_free char *spec = xasprintf("%s@%s", pkg, version);
	/* an exact version's document never changes: npm's cache may answer;
	 * a range or a tag asks the registry */
	bool exact =
	    strspn(version, "0123456789.") == strlen(version) && strchr(version, '.') != NULL;
	const char *args[] = {"view",
	                      "--json",
	                      spec,
	                      "name",
	                      "version",
	                      "bin",
	                      "dist.integrity",
	                      exact ? "--prefer-offline" : NULL,
	                      NULL};
	struct proc_result res;
	if (npm_run(npm, NULL, args, &res, err) < 0) {
		proc_result_free(&res);
		return mg_err_wrap(err, "npm view %s", spec);
	}
	struct json_value *v = NULL;
	int r = 0;
	if (res.out.len == 0 && WIFEXITED(res.status) && WEXITSTATUS(res.status) == 0) {
		r = mg_err_set(err, "npm:%s: no version matches %s", pkg, version);
	} else if (json_parse(res.out.data, res.out.len, NULL, &v, NULL) < 0) {
		cleanup_free char *why = npm_complaint(&res);
		r = mg_err_set(err, "npm view %s failed: %s", spec, why);
	} else {
		/* a range matches several: the last is the highest */
		const struct json_value *doc = v;
		if (v->kind == JSON_ARRAY)
			doc = v->u.arr.len > 0 ? v->u.arr.items[v->u.arr.len - 1] : NULL;
		const struct json_value *e = doc != NULL ? json_get(doc, "error") : NULL;
		const char *summary = e != NULL ? json_get_string(e, "summary") : NULL;
		const char *code = e != NULL ? json_get_string(e, "code") : NULL;
		if (e != NULL && code != NULL && strcmp(code, "E404") == 0 && summary != NULL &&
		    strstr(summary, "No match found for version") != NULL)
			r = mg_err_set(err, "npm:%s: no version matches %s (npm: %s)", pkg, version,
			               summary);
		else if (e != NULL && code != NULL && strcmp(code, "E404") == 0)
			r = mg_err_set(err, "npm:%s: no such package in the npm registry", pkg);
		else if (e != NULL)
			r = mg_err_set(err, "npm view %s failed: %s", spec,
			               summary != NULL ? summary : "(no summary)");
		else if (doc == NULL || json_get_string(doc, "name") == NULL ||
		         json_get_string(doc, "version") == NULL)
			r = mg_err_set(err, "npm:%s: npm view gave no name and version", pkg);
		else if (!integrity_ok(json_get_string(doc, "dist.integrity")))
			r = mg_err_set(err,
			               "npm:%s: the registry gives no integrity hash of npm's form "
			               "(sha512- and base64)",
			               pkg);
		else {
			out->name = xstrdup(json_get_string(doc, "name"));
			out->version = xstrdup(json_get_string(doc, "version"));
			out->integrity = xstrdup(json_get_string(doc, "dist.integrity"));
			out->bin = pick_bin(json_get(doc, "bin"), pkg, err);
			if (out->bin == NULL)
				r = -1;
		}
	}
	json_free(v);
	proc_result_free(&res);
	return r;
}

/* npm:./PACKAGE.tgz, npm:/path/PACKAGE.tgz: a local tarball */
static bool tarball_source(const char *spec)
{
	return spec[0] == '/' || strncmp(spec, "./", 2) == 0 || strncmp(spec, "../", 3) == 0;
}

static int tarball_resolve(const char *path, struct npm_pkg *out, struct mg_err **err)
{
	memset(out, 0, sizeof(*out));
	cleanup_free char *abs = realpath(path, NULL);
	if (abs == NULL)
		return mg_err_sys(err, errno, "the package tarball %s", path);
	struct json_value *pkg = NULL;
	char *integrity = NULL;
	if (add_read_tarball(abs, &pkg, &integrity, err) < 0)
		return -1;
	const char *name = json_get_string(pkg, "name");
	const char *version = json_get_string(pkg, "version");
	int r = 0;
	if (name == NULL || !npm_name_ok(name))
		r = mg_err_set(err, "%s: its package.json has no valid \"name\"", abs);
	/* the version names the image's tag: the characters a tag takes */
	else if (version == NULL || version[0] == '\0' || strlen(version) > 64 ||
	         strspn(version,
	                "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-") !=
	             strlen(version))
		r = mg_err_set(err,
		               "%s: its package.json has no \"version\" of letters, digits, . "
		               "and - (64 at most)",
		               abs);
	else if ((out->bin = pick_bin(json_get(pkg, "bin"), name, err)) == NULL)
		r = -1;
	if (r == 0) {
		out->name = xstrdup(name);
		out->version = xstrdup(version);
		out->integrity = integrity;
		out->spec = xasprintf("file:%s", abs);
		integrity = NULL;
	}
	free(integrity);
	json_free(pkg);
	return r;
}

/* package.json of the folder the package is installed in: that one
 * dependency at that exact version */
static int write_manifest(const char *dir, const struct npm_pkg *p, struct mg_err **err)
{
	struct json_value *deps = json_new_object();
	json_object_set(deps, p->name, json_new_string(p->spec != NULL ? p->spec : p->version));
	struct json_value *doc = json_new_object();
	json_object_set(doc, "name", json_new_string("mcpgate-npm-server"));
	json_object_set(doc, "private", json_new_bool(true));
	json_object_set(doc, "dependencies", deps);
	struct mg_buf b = MG_BUF_INIT(1 << 20);
	int r = json_generate(doc, &b, err);
	json_free(doc);
	cleanup_free char *path = xasprintf("%s/package.json", dir);
	if (r == 0)
		r = mg_write_file_atomic(path, b.data, b.len, 0644, err);
	mg_buf_free(&b);
	return r;
}

/* The kept lockfile's package.json, when it is this one */
static bool same_file(const char *path, const char *text, size_t len)
{
	cleanup_free char *have = NULL;
	size_t n = 0;
	return mg_read_file(path, 1 << 20, &have, &n, NULL) == 0 && n == len &&
	       memcmp(have, text, len) == 0;
}

/* node_modules in dir, scripts off: npm ci from the kept lockfile when there
 * is one for this very package.json, else npm install, which writes it */
int add_npm_install(const char *npm, const char *dir, const struct npm_pkg *p, struct mg_err **err)
{
	cleanup_free char *lock = xasprintf("%s/package-lock.json", dir);
	cleanup_free char *manifest = xasprintf("%s/package.json", dir);
	cleanup_free char *kept = xasprintf("%s/package.json.locked", dir);
	cleanup_free char *text = NULL;
	size_t len = 0;
	if (write_manifest(dir, p, err) < 0 ||
	    mg_read_file(manifest, 1 << 20, &text, &len, err) < 0)
		return -1;
	bool ci = access(lock, F_OK) == 0 && same_file(kept, text, len);
	/* npm starts from nothing, as npm ci does: never from a tree that an
	 * install script may have shaped (links, a hidden lockfile) */
	if (add_remove_modules(dir, err) < 0)
		return -1;
	/* the version is exact and every tarball is checked by its integrity, so
	 * what npm's cache holds is used before the network is asked. npm runs
	 * in dir, whose package.json makes it the project, rather than with
	 * --prefix: a prefix given on its command line moves npm's global
	 * npmrc to PREFIX/etc/npmrc, so the person's (a cafile, a registry, a
	 * proxy) would go unread where a plain `npm install` reads it */
	const char *args_ci[] = {"ci",        "--ignore-scripts", "--omit=dev", "--no-audit",
	                         "--no-fund", "--prefer-offline", NULL};
	const char *args_install[] = {
	    "install",   "--ignore-scripts", "--omit=dev",       "--no-audit",
	    "--no-fund", "--save-exact",     "--prefer-offline", NULL};
	progress_note("npm %s %s@%s, with install scripts off",
	              ci ? "ci (the kept lockfile)" : "install", p->name, p->version);
	struct proc_result res;
	int r = npm_run(npm, dir, ci ? args_ci : args_install, &res, err);
	if (r == 0 && !(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 0)) {
		cleanup_free char *why = npm_complaint(&res);
		r = mg_err_set(err, "npm could not install %s@%s: %s", p->name, p->version, why);
	}
	proc_result_free(&res);
	if (r == 0 && !ci)
		r = mg_write_file_atomic(kept, text, len, 0644, err);
	/* npm unpacks a tarball's modes as they are: as root a 6755 file of a
	 * stranger's would be setuid root in the data folder */
	unsigned cleared = 0;
	if (r == 0 && add_clear_modules(dir, &cleared, err) < 0)
		r = mg_err_wrap(err, "after npm installed %s@%s", p->name, p->version);
	if (cleared > 0)
		fprintf(stderr,
		        "mcpgate add: cleared %u setuid, setgid or special file(s) the packages "
		        "held\n",
		        cleared);
	return r;
}

const struct json_value *add_lock_packages(const char *dir, struct json_value **doc)
{
	cleanup_free char *lock = xasprintf("%s/package-lock.json", dir);
	cleanup_free char *text = NULL;
	size_t len = 0;
	*doc = NULL;
	if (mg_read_file(lock, 64u << 20, &text, &len, NULL) < 0 ||
	    json_parse(text, len, NULL, doc, NULL) < 0)
		return NULL;
	const struct json_value *pkgs = json_get(*doc, "packages");
	return pkgs != NULL && pkgs->kind == JSON_OBJECT ? pkgs : NULL;
}

/* Packages in the lockfile whose install scripts were not run */
void add_scripts_skipped(const char *dir, struct strv *out)
{
	struct json_value *v = NULL;
	const struct json_value *pkgs = add_lock_packages(dir, &v);
	for (size_t i = 0; pkgs != NULL && pkgs->kind == JSON_OBJECT && i < pkgs->u.obj.len; i++) {
		const struct json_value *h =
		    json_get(pkgs->u.obj.items[i].value, "hasInstallScript");
		if (h != NULL && h->kind == JSON_BOOL && h->u.boolean)
			strv_push(out, pkgs->u.obj.items[i].key);
	}
	json_free(v);
}

/* ---- mcp.toml ------------------------------------------------------------- */

struct entry_opts {
	struct strv args, mounts, network, env; /* env: "NAME=VALUE" */
	struct strv accept;                     /* accept_unenforced */
	struct strv packages;                   /* Debian packages (--with) */
};

static void string_array(struct toml_value *t, const char *key, const struct strv *v)
{
	if (v->n == 0)
		return;
	struct toml_value *a = toml_new_array();
	for (size_t i = 0; i < v->n; i++)
		toml_array_push(a, toml_new_string(v->v[i]));
	toml_table_set(t, key, strlen(key), a);
}

/* The [[server]] entry, every tool off (no tools table: off is the default).
 * This tree is what the file must hold after the write, key for key
 * (cfg_append_server checks it). */
static struct toml_value *server_entry(const char *name, const char *image,
                                       const struct entry_opts *o)
{
	struct toml_value *t = toml_new_table();
	toml_table_set(t, "name", 4, toml_new_string(name));
	toml_table_set(t, "transport", 9, toml_new_string("container"));
	toml_table_set(t, "image", 5, toml_new_string(image));
	string_array(t, "args", &o->args);
	string_array(t, "mounts", &o->mounts);
	string_array(t, "network", &o->network);
	string_array(t, "accept_unenforced", &o->accept);
	string_array(t, "packages", &o->packages);
	if (o->env.n > 0) {
		struct toml_value *env = toml_new_table();
		for (size_t i = 0; i < o->env.n; i++) {
			const char *eq = strchr(o->env.v[i], '=');
			toml_table_set(env, o->env.v[i], (size_t)(eq - o->env.v[i]),
			               toml_new_string(eq + 1));
		}
		toml_table_set(t, "env", 3, env);
	}
	return t;
}

void add_today(char day[static 16])
{
	time_t now = time(NULL);
	struct tm tm;
	day[0] = '\0';
	if (gmtime_r(&now, &tm) != NULL)
		strftime(day, 16, "%Y-%m-%d", &tm);
}

/* The entry appended to mcp.toml under a comment saying where it came from
 * (what and note hold a stranger's text: a path, a version, an integrity;
 * the encoder keeps each inside its comment line) */
static int write_entry(const char *mcp_path, const char *name, const char *image, const char *what,
                       const char *note, const struct entry_opts *o, struct mg_err **err)
{
	char day[16];
	add_today(day);
	cleanup_free char *added = xasprintf("added by `mcpgate add %s` on %s%s.", what, day, note);
	cleanup_free char *next = xasprintf(
	    "Every tool is off: `mcpgate review %s`, then `mcpgate approve %s`.", name, name);
	const char *comment[] = {added, next};
	struct toml_value *entry = server_entry(name, image, o);
	int r = cfg_append_server(mcp_path, comment, 2, entry, err);
	toml_free(entry);
	return r;
}

int add_pack_kept(struct pack_spec *spec, const char *images, const char *repo,
                  struct pack_result *res, char **image, char **archive, struct mg_err **err)
{
	int r = mg_mkdir_p(images, 0700, err) < 0 ? -1 : pack_build(spec, res, err);
	for (size_t i = 0; r == 0 && i < res->warnings.n; i++)
		fprintf(stderr, "mcpgate add: warning: %s\n", res->warnings.v[i]);
	if (r < 0)
		return -1;
	char *kept = xasprintf("%s/sha256-%s.tar", images, res->manifest_digest + 7);
	cleanup_free char *mpath =
	    xasprintf("%s/sha256-%s.manifest", images, res->manifest_digest + 7);
	if (rename(spec->output, kept) < 0)
		r = mg_err_sys(err, errno, "keeping %s", kept);
	else if (mg_write_file_atomic(mpath, res->manifest, res->manifest_len, 0644, err) < 0)
		r = -1;
	if (r < 0) {
		free(kept);
		return -1;
	}
	*image = xasprintf("localhost/%s@%s", repo, res->manifest_digest);
	*archive = kept;
	return 0;
}

/* The image of the package installed in work, packed over the node layer
 * (base), kept in DATA/images by its digest; *image is the pin for mcp.toml */
int add_make_image(const char *work, const char *data, const char *name, const struct npm_pkg *p,
                   const struct add_layers *layers, char **image, char **archive,
                   struct mg_err **err)
{
	cleanup_free char *entry_file = xasprintf("%s/node_modules/%s/%s", work, p->name, p->bin);
	struct stat st;
	if (stat(entry_file, &st) < 0 || !S_ISREG(st.st_mode))
		return mg_err_set(err, "npm:%s@%s: its bin %s is not a file after the install",
		                  p->name, p->version, p->bin);
	struct strv labels = STRV_INIT;
	cleanup_free char *modules = xasprintf("%s/node_modules:/app/node_modules", work);
	cleanup_free char *manifest = xasprintf("%s/package.json:/app/package.json", work);
	cleanup_free char *entry = xasprintf("/app/node_modules/%s/%s", p->name, p->bin);
	cleanup_free char *ref = xasprintf("mcpgate-npm-%s:%s", name, p->version);
	cleanup_free char *repo = xasprintf("mcpgate-npm-%s", name);
	cleanup_free char *images = xasprintf("%s/images", data);
	cleanup_free char *out = xasprintf("%s/npm-%s.tar.new", images, name);
	const char *adds[] = {modules, manifest};
	const char *ep[] = {"/usr/bin/node", entry};
	const char *envs[] = {"NODE_ENV=production"};
	strv_pushf(&labels, "org.opencontainers.image.source=npm:%s@%s", p->name, p->version);
	strv_pushf(&labels, "io.mcpgate.npm.package=%s", p->name);
	strv_pushf(&labels, "io.mcpgate.npm.version=%s", p->version);
	strv_pushf(&labels, "io.mcpgate.npm.integrity=%s", p->integrity);
	struct pack_spec spec = {
	    .output = out,
	    .adds = adds,
	    .n_adds = 2,
	    .entrypoint = ep,
	    .n_entrypoint = 2,
	    .env = envs,
	    .n_env = 1,
	    /* where it runs is its home, writable as the person's folder is
	     * under npx: a server's ./database.db or ./.cache goes there, not
	     * into the read-only /app its code is in */
	    .workdir = CFG_HOME_PATH,
	    /* podman's tmpfs over a folder keeps the folder's mode: the home
	     * stays 0700 */
	    .workdir_mode = 0700,
	    .name = ref,
	};
	struct pack_result res = {0};
	int r =
	    add_pack_over(&spec, layers, false, &labels, images, repo, &res, image, archive, err);
	strv_free(&labels);
	pack_result_free(&res);
	return r;
}

/* mcp.toml of dir (NULL: the default place) and its configuration, where no
 * server is named name yet; a missing mcp.toml is an empty one */
static int open_target(const char *dir, const char *name, char **mcp_path, struct cfg **cfg,
                       struct mg_err **err)
{
	cleanup_free char *def_dir = NULL;
	if (dir == NULL) {
		if (cfg_default_config_dir(&def_dir, err) < 0)
			return -1;
		dir = def_dir;
	}
	*mcp_path = xasprintf("%s/mcp.toml", dir);
	if (access(*mcp_path, F_OK) != 0) {
		/* no servers yet, but config.toml (the runtime) counts already */
		cleanup_free char *config_path = xasprintf("%s/config.toml", dir);
		cleanup_free char *config = NULL;
		size_t len = 0;
		bool has = mg_read_file(config_path, CFG_FILE_MAX, &config, &len, NULL) == 0;
		if (!has && errno != ENOENT)
			return mg_err_sys(err, errno, "%s", config_path);
		return mg_mkdir_p(dir, 0700, err) < 0
		           ? -1
		           : cfg_parse("", 0, *mcp_path, has ? config : NULL, len,
		                       has ? config_path : NULL, cfg, err);
	}
	if (cfg_load(dir, cfg, err) < 0)
		return -1;
	if (cfg_find_server(*cfg, name) != NULL)
		return mg_err_set(
		    err,
		    "a server named %s is already in %s: choose another with --name, or "
		    "remove that entry first",
		    name, *mcp_path);
	return 0;
}

/* The entry add will write, read with the rest of mcp.toml and config.toml
 * as `mcpgate check` reads them (network, mounts, names, every rule),
 * before anything is fetched or installed; the image's digest is not known
 * yet, and one of the same form stands in for it */
static int check_entry(const char *mcp_path, const char *name, const struct entry_opts *o,
                       struct mg_err **err)
{
	cleanup_free char *image = xasprintf("localhost/mcpgate-add-%s@sha256:%064d", name, 0);
	cleanup_free char *conf_dir = xstrndup(mcp_path, strlen(mcp_path) - strlen("/mcp.toml"));
	cleanup_free char *config_path = xasprintf("%s/config.toml", conf_dir);
	struct toml_value *entry = server_entry(name, image, o);
	int r = cfg_append_check(mcp_path, config_path, entry, err);
	toml_free(entry);
	if (r < 0)
		return mg_err_wrap(err,
		                   "the entry add would write is refused, so nothing was fetched "
		                   "or installed and %s is left as it was (a place named is where "
		                   "the entry would go)",
		                   mcp_path);
	return 0;
}

/* ---- server.json (the MCP registry's format) ----------------------------- */

struct from_json {
	char *source; /* npm:IDENTIFIER@VERSION, or NULL for an OCI image */
	char *image;  /* an OCI package pinned by digest */
	char *name;   /* the last part of its name */
};

static bool has_env(const struct strv *env, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < env->n; i++)
		if (strncmp(env->v[i], name, n) == 0 && env->v[i][n] == '=')
			return true;
	return false;
}

/* The package of FILE (offline) that add can take, with its declared
 * variables (a default for each setting not given; a secret named, never
 * set) and its arguments; o gets them */
static int read_server_json(const char *file, struct entry_opts *o, struct from_json *out,
                            struct mg_err **err)
{
	memset(out, 0, sizeof(*out));
	cleanup_free char *text = NULL;
	size_t len = 0;
	struct json_value *doc = NULL;
	if (mg_read_file(file, 4u << 20, &text, &len, err) < 0)
		return -1;
	if (json_parse(text, len, NULL, &doc, err) < 0)
		return mg_err_wrap(err, "%s", file);
	int r = 0;
	const char *sname = json_get_string(doc, "name");
	const struct json_value *pkgs = json_get(doc, "packages");
	const struct json_value *pick = NULL;
	for (size_t i = 0; pkgs != NULL && pkgs->kind == JSON_ARRAY && i < pkgs->u.arr.len; i++) {
		const struct json_value *p = pkgs->u.arr.items[i];
		const char *type = json_get_string(p, "registryType");
		const struct json_value *tr = json_get(p, "transport");
		const char *tt = tr != NULL ? json_get_string(tr, "type") : "stdio";
		if (type != NULL && tt != NULL && strcmp(tt, "stdio") == 0 &&
		    (strcmp(type, "npm") == 0 || strcmp(type, "oci") == 0) && pick == NULL)
			pick = p;
	}
	if (sname == NULL) {
		r = mg_err_set(err, "%s: no \"name\": not a server.json", file);
		goto done;
	}
	if (pick == NULL) {
		r = mg_err_set(err,
		               "%s: no package add can take (an npm or oci package with stdio "
		               "transport in \"packages\")",
		               file);
		goto done;
	}
	const char *slash = strrchr(sname, '/');
	out->name = default_name(slash != NULL ? slash + 1 : sname);
	const char *type = json_get_string(pick, "registryType");
	const char *id = json_get_string(pick, "identifier");
	const char *version = json_get_string(pick, "version");
	if (id == NULL) {
		r = mg_err_set(err, "%s: its %s package has no \"identifier\"", file, type);
		goto done;
	}
	if (strcmp(type, "npm") == 0) {
		out->source = xasprintf("npm:%s@%s", id, version != NULL ? version : "latest");
	} else if (strstr(id, "@sha256:") != NULL) {
		out->image = xstrdup(id);
	} else {
		r = mg_err_set(err,
		               "%s: its oci package %s%s%s is not pinned by digest: mcpgate runs "
		               "images by NAME@sha256:DIGEST only",
		               file, id, version != NULL ? ":" : "",
		               version != NULL ? version : "");
		goto done;
	}
	const struct json_value *vars = json_get(pick, "environmentVariables");
	for (size_t i = 0; vars != NULL && vars->kind == JSON_ARRAY && i < vars->u.arr.len; i++) {
		const struct json_value *v = vars->u.arr.items[i];
		const char *n = json_get_string(v, "name");
		const char *def = json_get_string(v, "default");
		const struct json_value *sec = json_get(v, "isSecret");
		const struct json_value *req = json_get(v, "isRequired");
		bool secret = sec != NULL && sec->kind == JSON_BOOL && sec->u.boolean;
		bool required = req != NULL && req->kind == JSON_BOOL && req->u.boolean;
		if (n == NULL || !cfg_env_name_valid(n)) {
			r = mg_err_set(err, "%s: environment variable %zu has no valid name", file,
			               i + 1);
			goto done;
		}
		if (secret) {
			fprintf(stderr,
			        "mcpgate add: %s declares the secret %s: it is not set here; keep "
			        "it in "
			        "the keychain (mcpgate secret set NAME, then secret bind) and name "
			        "it in "
			        "the entry's credential and position = \"env:%s\"\n",
			        file, n, n);
			continue;
		}
		if (has_env(&o->env, n))
			continue;
		if (def != NULL)
			strv_pushf(&o->env, "%s=%s", n, def);
		else if (required) {
			r = mg_err_set(err,
			               "%s: the setting %s is required and has no default: give "
			               "--env %s=VALUE",
			               file, n, n);
			goto done;
		}
	}
	const struct json_value *args = json_get(pick, "packageArguments");
	for (size_t i = 0; args != NULL && args->kind == JSON_ARRAY && i < args->u.arr.len; i++) {
		const struct json_value *a = args->u.arr.items[i];
		const char *kind = json_get_string(a, "type");
		const char *value = json_get_string(a, "value");
		if (value == NULL)
			value = json_get_string(a, "default");
		if (kind != NULL && strcmp(kind, "named") == 0 &&
		    json_get_string(a, "name") != NULL)
			strv_push(&o->args, json_get_string(a, "name"));
		if (value != NULL)
			strv_push(&o->args, value);
	}
done:
	json_free(doc);
	return r;
}

/* An OCI package pinned by digest: its entry, every tool off; no image is
 * made here (the person pulls it) */
static int add_image_entry(const char *dir, const char *name_opt, const char *image,
                           const char *file, const struct entry_opts *o, struct mg_err **err)
{
	cleanup_free char *name = xstrdup(name_opt != NULL ? name_opt : "server");
	cleanup_free char *mcp_path = NULL;
	cleanup_free char *what = xasprintf("--server-json %s", file);
	struct cfg *cfg = NULL;
	int r = cfg_check_server_name(name, "the server's name (--name)", err) < 0 ||
	                open_target(dir, name, &mcp_path, &cfg, err) < 0
	            ? -1
	            : 0;
	cfg_free(cfg);
	if (r < 0)
		return -1;
	if (write_entry(mcp_path, name, image, what, "; an OCI image to pull", o, err) < 0)
		return -1;
	printf("%s\n", image);
	fprintf(stderr,
	        "mcpgate add: server %s is in %s with every tool off; next: mcpgate pull %s, "
	        "then mcpgate review %s\n",
	        name, mcp_path, name, name);
	return 0;
}

static void from_json_free(struct from_json *f)
{
	free(f->source);
	free(f->image);
	free(f->name);
}

/* ---- the command ------------------------------------------------------------ */

static int check_env_opt(const char *v, const struct strv *given, struct mg_err **err)
{
	const char *eq = strchr(v, '=');
	cleanup_free char *name = eq != NULL ? xstrndup(v, (size_t)(eq - v)) : NULL;
	if (name == NULL || !cfg_env_name_valid(name))
		return mg_err_set(err, "--env %s: give NAME=VALUE with a variable name", v);
	if (has_env(given, name))
		return mg_err_set(err, "--env %s: %s is given twice", v, name);
	return 0;
}

/* pypi:SOURCE: as npm's, from a Python package (add_pypi.c) */
static int add_pypi(const char *dir, const char *name_opt, const char *source, const char *module,
                    const struct entry_opts *o, bool scripts, bool refresh, struct mg_err **err)
{
	struct pypi_req req = {0};
	struct pypi_pkg p = {0};
	cleanup_free char *name = NULL, *mcp_path = NULL, *python = NULL, *data = NULL;
	cleanup_free char *work = NULL, *image = NULL, *archive = NULL, *what = NULL, *note = NULL;
	struct cfg *cfg = NULL;
	struct ctr_driver *d = NULL;
	struct progress *progress = NULL;
	bool fresh = false;
	int r = -1;
	if (scripts) {
		mg_err_set(err,
		           "%s: --scripts is for npm's install scripts; a wheel has none, and "
		           "a source distribution (pypi:./NAME-VERSION.tar.gz) is always built "
		           "in a contained step",
		           source);
		goto out;
	}
	if (add_pypi_parse(source, &req, err) < 0)
		goto out;
	if (name_opt == NULL) {
		cleanup_free char *lower = xstrdup(req.name);
		for (char *c = lower; *c != '\0'; c++)
			if (*c >= 'A' && *c <= 'Z')
				*c = (char)(*c - 'A' + 'a');
		name = default_name(lower);
	} else {
		name = xstrdup(name_opt);
	}
	if (cfg_check_server_name(name, "the server's name (--name)", err) < 0 ||
	    open_target(dir, name, &mcp_path, &cfg, err) < 0 ||
	    check_entry(mcp_path, name, o, err) < 0 || add_find_pip(&python, err) < 0 ||
	    setup_driver(cfg, &d, err) < 0 || cfg_default_data_dir(&data, err) < 0)
		goto out;
	add_say_unenforced("add", d, &o->accept);
	progress = progress_new("add", 5);
	work = xasprintf("%s/pypi/%s", data, name);
	/* a tree this add made goes when it fails; one kept from before (its
	 * lock) stays as it was */
	fresh = access(work, F_OK) != 0;
	struct add_build build = {
	    .cmd = "add",
	    .cfg = cfg,
	    .d = d,
	    .data = data,
	    .name = name,
	    .work = work,
	    .refresh = refresh,
	    .packages = &o->packages,
	    .accept = &o->accept,
	    .progress = progress,
	    .steps = 5,
	};
	if (add_pypi_build(&build, python, &req, module, &p, &image, &archive, err) < 0)
		goto out;
	what = req.wheel != NULL
	           ? xasprintf("pypi:%s==%s, the wheel %s", p.name, p.version, req.wheel)
	       : req.sdist != NULL
	           ? xasprintf("pypi:%s==%s, built contained from %s", p.name, p.version, req.sdist)
	           : xasprintf("pypi:%s==%s", p.name, p.version);
	note = xasprintf("; wheel sha256 %s, every wheel locked in %s/requirements.lock", p.sha256,
	                 work);
	if (write_entry(mcp_path, name, image, what, note, o, err) < 0)
		goto out;
	printf("%s\n", image);
	fprintf(stderr,
	        "mcpgate add: server %s is in %s with every tool off; next: mcpgate review %s\n",
	        name, mcp_path, name);
	r = 0;
out:
	if (r < 0 && fresh && work != NULL) {
		struct mg_err *rm = NULL;
		mg_remove_tree(work, &rm);
		mg_err_free(rm);
	}
	add_pypi_req_free(&req);
	add_pypi_pkg_free(&p);
	progress_free(progress);
	ctr_driver_free(d);
	cfg_free(cfg);
	return r;
}

int cmd_add(int argc, char **argv, struct mg_err **err)
{
	const struct command *self = command_find("add");
	const char *dir = NULL, *name_opt = NULL, *source = NULL, *node_opt = NULL;
	const char *json_file = NULL, *module = NULL;
	struct from_json fj = {0};

	struct entry_opts o = {STRV_INIT, STRV_INIT, STRV_INIT, STRV_INIT, STRV_INIT, STRV_INIT};
	struct npm_pkg p = {0};
	cleanup_free char *pkg = NULL, *version = NULL, *name = NULL, *data = NULL, *node = NULL;
	cleanup_free char *work = NULL, *archive = NULL, *image = NULL;
	cleanup_free char *mcp_path = NULL, *npm = NULL, *what = NULL, *note = NULL;
	struct strv with = STRV_INIT;
	struct progress *progress = NULL;
	bool scripts = false, refresh = false;
	struct cfg *cfg = NULL;
	struct ctr_driver *d = NULL;
	int status = EXIT_FAIL;
	for (int i = 1; i < argc; i++) {
		const char *v = NULL;
		int r = opt_value(argc, argv, &i, "config", &dir);
		if (r == 0)
			r = opt_value(argc, argv, &i, "name", &name_opt);
		if (r == 0)
			r = opt_value(argc, argv, &i, "node", &node_opt);
		if (r == 0)
			r = opt_value(argc, argv, &i, "server-json", &json_file);
		if (r == 0)
			r = opt_value(argc, argv, &i, "module", &module);
		if (r == 0 && opt_flag(argv, i, "scripts", &scripts))
			continue;
		if (r == 0 && opt_flag(argv, i, "refresh-packages", &refresh))
			continue;
		if (r == 0 && (r = opt_value(argc, argv, &i, "with", &v)) > 0)
			strv_push(&with, v);
		if (r == 0 && (r = opt_value(argc, argv, &i, "arg", &v)) > 0)
			strv_push(&o.args, v);
		if (r == 0 && (r = opt_value(argc, argv, &i, "mount", &v)) > 0)
			strv_push(&o.mounts, v);
		if (r == 0 && (r = opt_value(argc, argv, &i, "network", &v)) > 0)
			strv_push(&o.network, v);
		if (r == 0 && (r = opt_value(argc, argv, &i, "accept-unenforced", &v)) > 0)
			for (const char *q = v; *q != '\0';) {
				size_t len = strcspn(q, ",");
				if (len > 0)
					strv_push_owned(&o.accept, xstrndup(q, len));
				q += len + (q[len] == ',');
			}
		if (r == 0 && (r = opt_value(argc, argv, &i, "env", &v)) > 0) {
			if (check_env_opt(v, &o.env, err) < 0)
				goto out;
			strv_push(&o.env, v);
		}
		if (r < 0) {
			status = EXIT_USAGE;
			goto out;
		}
		if (r > 0)
			continue;
		if (argv[i][0] == '-' || source != NULL) {
			status = usage_error(self, "unexpected argument \"%s\"", argv[i]);
			goto out;
		}
		source = argv[i];
	}
	/* Debian's names, checked before anything is fetched; the entry says
	 * them sorted, each once */
	if (deb_set_normalise((const char *const *)with.v, with.n, "--with", &o.packages, err) < 0)
		goto out;
	if (json_file != NULL && source != NULL) {
		status = usage_error(self, "give npm:PACKAGE or --server-json FILE, not both");
		goto out;
	}
	if (json_file != NULL) {
		if (read_server_json(json_file, &o, &fj, err) < 0)
			goto out;
		source = fj.source;
		if (name_opt == NULL)
			name_opt = fj.name;
	}
	if (source == NULL && fj.image == NULL) {
		status =
		    usage_error(self, "what to add? (npm:PACKAGE[@VERSION] or --server-json FILE)");
		goto out;
	}
	if (source == NULL && o.packages.n > 0) {
		mg_err_set(err, "--with puts Debian packages into the image mcpgate makes; an OCI "
		                "image from a server.json is used as it is");
		goto out;
	}
	if (source == NULL) {
		/* an OCI image pinned by digest: its entry; the person pulls it */
		if (add_image_entry(dir, name_opt, fj.image, json_file, &o, err) < 0)
			goto out;
		status = EXIT_OK;
		goto out;
	}
	bool pypi = strncmp(source, "pypi:", 5) == 0;
	if (!pypi && module != NULL) {
		status = usage_error(self, "--module is for pypi: packages");
		goto out;
	}
	if (module != NULL && !add_pypi_module_ok(module)) {
		mg_err_set(err, "--module %s: give a Python module's dotted name (pkg.server)",
		           module);
		goto out;
	}
	if (pypi) {
		if (add_pypi(dir, name_opt, source, module, &o, scripts, refresh, err) < 0)
			goto out;
		status = EXIT_OK;
		goto out;
	}
	bool tarball = strncmp(source, "npm:", 4) == 0 && tarball_source(source + 4);
	/* a tarball is read first: its package.json names it */
	if (tarball ? tarball_resolve(source + 4, &p, err) < 0
	            : parse_source(source, &pkg, &version, err) < 0)
		goto out;
	if (tarball)
		pkg = xstrdup(p.name);
	name = xstrdup(name_opt != NULL ? name_opt : "");
	if (name_opt == NULL) {
		free(name);
		name = default_name(pkg);
	}
	if (cfg_check_server_name(name, "the server's name (--name)", err) < 0)
		goto out;

	/* the configuration first: a name taken fails before anything is
	 * fetched, and so does an entry `mcpgate check` would refuse */
	if (open_target(dir, name, &mcp_path, &cfg, err) < 0 ||
	    check_entry(mcp_path, name, &o, err) < 0)
		goto out;
	if (add_find_tools(node_opt, &npm, &node, err) < 0 || setup_driver(cfg, &d, err) < 0)
		goto out;
	/* a limit the runtime cannot hold is said now, not first at review */
	add_say_unenforced("add", d, &o.accept);
	progress = progress_new("add", tarball ? 4 : 5);
	if (!tarball) {
		cleanup_free char *resolving = xasprintf("npm view %s@%s", pkg, version);
		progress_begin(progress, resolving, NULL, NULL);
		int resolved = add_npm_resolve(npm, pkg, version, &p, err);
		progress_end(progress, resolved == 0);
		if (resolved < 0)
			goto out;
	}
	fprintf(stderr, "mcpgate add: npm:%s resolves to %s@%s (%s)\n", source + 4, p.name,
	        p.version, p.integrity);
	if (cfg_default_data_dir(&data, err) < 0)
		goto out;
	work = xasprintf("%s/npm/%s", data, name);
	struct add_build build = {
	    .cmd = "add",
	    .cfg = cfg,
	    .d = d,
	    .npm = npm,
	    .node = node,
	    .data = data,
	    .name = name,
	    .work = work,
	    .scripts = scripts,
	    .refresh = refresh,
	    .packages = &o.packages,
	    .accept = &o.accept,
	    .progress = progress,
	    .steps = tarball ? 4 : 5,
	};
	if (add_npm_build(&build, &p, &image, &archive, err) < 0)
		goto out;
	what = tarball ? xasprintf("npm:%s@%s, the tarball %s", p.name, p.version, p.spec + 5)
	               : xasprintf("npm:%s@%s", p.name, p.version);
	note = xasprintf("; npm integrity %s", p.integrity);
	if (write_entry(mcp_path, name, image, what, note, &o, err) < 0)
		goto out;
	printf("%s\n", image);
	fprintf(stderr,
	        "mcpgate add: server %s is in %s with every tool off; next: mcpgate review %s\n",
	        name, mcp_path, name);
	status = EXIT_OK;
out:
	from_json_free(&fj);
	add_npm_pkg_free(&p);
	strv_free(&o.args);
	strv_free(&o.mounts);
	strv_free(&o.network);
	strv_free(&o.env);
	strv_free(&o.accept);
	strv_free(&o.packages);
	strv_free(&with);
	progress_free(progress);
	ctr_driver_free(d);
	cfg_free(cfg);
	return status;
}
