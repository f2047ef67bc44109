/* apt-get, steered by a configuration of mcpgate's own (APT_CONFIG): its
 * own sources (Debian's archive, checked against the archive's keyring,
 * nothing insecure allowed), its own lists and cache, and none of the
 * host's apt.conf.d, whose hooks (update notifiers, cache cleaners) would
 * otherwise run. The dpkg status apt resolves against is named on each
 * call: empty for the base, the base's packages for a set over it. apt
 * downloads and checks; nothing it fetched is installed or run. A proxy in
 * the environment (http_proxy) is honoured, as apt does. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/xalloc.h"
#include "internal/debian/debian-internal.h"
#include "internal/proc/proc.h"

extern char **environ;

#define APT_TIMEOUT_MS (30 * 60 * 1000)
#define APT_OUTPUT_MAX (8u << 20)

static bool conf_safe(const char *s)
{
	return strpbrk(s, "\"\n;{}") == NULL;
}

int deb_apt_prepare(const struct deb_store *s, struct mg_err **err)
{
	const char *paths[] = {s->dir, s->suite, s->arch};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (!conf_safe(paths[i]) || strchr(paths[i], ' ') != NULL)
			return mg_err_set(err,
			                  "\"%s\" holds a space, quote, semicolon or brace, which "
			                  "apt's configuration cannot carry",
			                  paths[i]);
	/* config.toml's [debian] checked these at load; the defaults pass */
	const char *sources[] = {s->mirror, s->security, s->keyring};
	for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]); i++)
		if (!deb_source_value_safe(sources[i]))
			return mg_err_set(
			    err,
			    "\"%s\" holds a space, control character, quote, semicolon, "
			    "brace, comma or bracket, which apt's sources cannot carry",
			    sources[i]);
	cleanup_free char *etc = xasprintf("%s/apt/etc", s->dir);
	cleanup_free char *parts = xasprintf("%s/apt/etc/apt.conf.d", s->dir);
	cleanup_free char *lists = xasprintf("%s/apt/state/lists/partial", s->dir);
	cleanup_free char *cache = xasprintf("%s/apt/cache/archives/partial", s->dir);
	cleanup_free char *log = xasprintf("%s/apt/log", s->dir);
	if (mg_mkdir_p(parts, 0700, err) < 0 || mg_mkdir_p(lists, 0700, err) < 0 ||
	    mg_mkdir_p(cache, 0700, err) < 0 || mg_mkdir_p(log, 0700, err) < 0)
		return -1;
	struct mg_buf conf = MG_BUF_INIT(1 << 16);
	mg_buf_printf(&conf, NULL,
	              "// mcpgate's own apt configuration: Debian's archive only, nothing of "
	              "the host's\n"
	              "Dir::Etc \"%s\";\n"
	              "Dir::Etc::Main \"apt.conf\";\n"
	              "Dir::Etc::Parts \"apt.conf.d\";\n"
	              "Dir::Etc::SourceList \"sources.list\";\n"
	              "Dir::Etc::SourceParts \"sources.list.d\";\n"
	              "Dir::Etc::Preferences \"preferences\";\n"
	              "Dir::Etc::PreferencesParts \"preferences.d\";\n"
	              "Dir::Etc::Trusted \"trusted.gpg\";\n"
	              "Dir::Etc::TrustedParts \"trusted.gpg.d\";\n"
	              "Dir::State \"%s/apt/state\";\n"
	              "Dir::Cache \"%s/apt/cache\";\n"
	              "Dir::Log \"%s/apt/log\";\n"
	              "APT::Architecture \"%s\";\n"
	              "APT::Architectures { \"%s\"; };\n"
	              "pkgCacheGen::Essential \"none\";\n"
	              "APT::Install-Recommends \"false\";\n"
	              "APT::Install-Suggests \"false\";\n"
	              "Acquire::Languages \"none\";\n"
	              "Acquire::AllowInsecureRepositories \"false\";\n"
	              "Acquire::AllowDowngradeToInsecureRepositories \"false\";\n"
	              "Acquire::AllowWeakRepositories \"false\";\n"
	              "APT::Get::AllowUnauthenticated \"false\";\n"
	              "Debug::NoLocking \"true\";\n"
	              "%s",
	              etc, s->dir, s->dir, s->dir, s->arch, s->arch,
	              /* as root, apt would hand downloads to _apt, who cannot
	               * enter mcpgate's 0700 folders */
	              geteuid() == 0 ? "APT::Sandbox::User \"root\";\n" : "");
	struct mg_buf src = MG_BUF_INIT(1 << 16);
	mg_buf_printf(&src, NULL,
	              "deb [signed-by=%s] %s %s main\n"
	              "deb [signed-by=%s] %s %s-updates main\n"
	              "deb [signed-by=%s] %s %s-security main\n",
	              s->keyring, s->mirror, s->suite, s->keyring, s->mirror, s->suite, s->keyring,
	              s->security, s->suite);
	cleanup_free char *conf_path = xasprintf("%s/apt.conf", etc);
	cleanup_free char *src_path = xasprintf("%s/sources.list", etc);
	int r = mg_write_file_atomic(conf_path, conf.data, conf.len, 0600, err) < 0 ||
	                mg_write_file_atomic(src_path, src.data, src.len, 0600, err) < 0
	            ? -1
	            : 0;
	mg_buf_free(&conf);
	mg_buf_free(&src);
	return r;
}

/* apt-get ARGS with status, the private configuration, the caller's
 * environment otherwise (a proxy); its output in res */
static int apt_run(const struct deb_store *s, const char *status, const struct strv *args,
                   struct proc_result *res, struct mg_err **err)
{
	struct strv argv = STRV_INIT, env = STRV_INIT;
	strv_push(&argv, s->apt_get);
	strv_pushf(&argv, "-oDir::State::status=%s", status);
	for (size_t i = 0; i < args->n; i++)
		strv_push(&argv, args->v[i]);
	for (size_t i = 0; environ[i] != NULL; i++)
		if (strncmp(environ[i], "APT_CONFIG=", 11) != 0 &&
		    strncmp(environ[i], "LC_ALL=", 7) != 0 &&
		    strncmp(environ[i], "DEBIAN_FRONTEND=", 16) != 0)
			strv_push(&env, environ[i]);
	strv_pushf(&env, "APT_CONFIG=%s/apt/etc/apt.conf", s->dir);
	strv_push(&env, "LC_ALL=C");
	strv_push(&env, "DEBIAN_FRONTEND=noninteractive");
	int r =
	    proc_run((const char *const *)strv_array(&argv), (const char *const *)strv_array(&env),
	             APT_TIMEOUT_MS, APT_OUTPUT_MAX, res, err);
	strv_free(&argv);
	strv_free(&env);
	if (r < 0) {
		proc_result_free(res);
		return mg_err_wrap(err, "apt-get");
	}
	return 0;
}

/* apt's own complaint: its "E: " lines, else the last line */
static int apt_failed(const char *what, const struct proc_result *res, struct mg_err **err)
{
	struct mg_buf b = MG_BUF_INIT(4096);
	const char *text = mg_buf_str(&res->err);
	const char *last = NULL;
	size_t last_n = 0;
	for (const char *line = text; *line != '\0';) {
		size_t n = strcspn(line, "\n");
		if (n > 3 && strncmp(line, "E: ", 3) == 0 && b.len < 800) {
			if (b.len > 0)
				mg_buf_puts(&b, "; ", NULL);
			mg_buf_append(&b, line + 3, n - 3, NULL);
		}
		if (n > 0) {
			last = line;
			last_n = n;
		}
		line += n + (line[n] == '\n');
	}
	if (b.len == 0 && last != NULL)
		mg_buf_append(&b, last, last_n, NULL);
	int r = mg_err_set(err, "apt-get %s failed: %s", what,
	                   b.len > 0 ? mg_buf_str(&b) : "(it said nothing)");
	mg_buf_free(&b);
	return r;
}

static bool exited_ok(const struct proc_result *res)
{
	return WIFEXITED(res->status) && WEXITSTATUS(res->status) == 0;
}

/* The lists are fetched again when they are older than this: what a new
 * resolution sees is at most this old, and adds in a row ask once */
#define LISTS_FRESH_SECONDS (60 * 60)
#define SOURCES_MAX         (1u << 16)

/* The stamp holds the sources the lists were fetched from: another archive
 * named in config.toml is fetched at once, however fresh the lists are */
int deb_apt_update(const struct deb_store *s, struct mg_err **err)
{
	cleanup_free char *stamp = xasprintf("%s/apt/updated", s->dir);
	cleanup_free char *src_path = xasprintf("%s/apt/etc/sources.list", s->dir);
	cleanup_free char *sources = NULL, *was = NULL;
	size_t sources_len = 0, was_len = 0;
	if (mg_read_file(src_path, SOURCES_MAX, &sources, &sources_len, err) < 0)
		return -1;
	struct stat st;
	if (stat(stamp, &st) == 0 && time(NULL) - st.st_mtime >= 0 &&
	    time(NULL) - st.st_mtime < LISTS_FRESH_SECONDS &&
	    mg_read_file(stamp, SOURCES_MAX, &was, &was_len, NULL) == 0 && was_len == sources_len &&
	    memcmp(was, sources, was_len) == 0)
		return 0;
	if (!s->quiet)
		fprintf(stderr, "mcpgate: apt-get update of Debian %s (%s), mcpgate's own lists\n",
		        s->suite, s->mirror);
	cleanup_free char *status = xasprintf("%s/apt/empty-status", s->dir);
	if (mg_write_file_atomic(status, "", 0, 0600, err) < 0)
		return -1;
	struct strv args = STRV_INIT;
	strv_push(&args, "update");
	strv_push(&args, "-q");
	struct proc_result res;
	int r = apt_run(s, status, &args, &res, err);
	strv_free(&args);
	if (r < 0)
		return -1;
	/* apt-get update says W: and exits 0 when a list could not be fetched */
	if (!exited_ok(&res) || strstr(mg_buf_str(&res.err), "W: Failed to fetch") != NULL ||
	    strstr(mg_buf_str(&res.err), "E: ") != NULL)
		r = apt_failed("update", &res, err);
	proc_result_free(&res);
	if (r == 0)
		r = mg_write_file_atomic(stamp, sources, sources_len, 0600, err);
	return r;
}

/* "Inst NAME (VERSION ORIGIN [ARCH])"; an upgrade is "Inst NAME [OLD] (...)" */
static int parse_inst(const char *line, size_t n, struct deb_lock *out, struct mg_err **err)
{
	cleanup_free char *l = xstrndup(line, n);
	char *name = l + 5;
	char *sp = strchr(name, ' ');
	if (sp == NULL)
		return mg_err_set(err, "apt-get said \"%s\", which mcpgate cannot read", l);
	*sp = '\0';
	char *rest = sp + 1;
	if (rest[0] == '[') {
		char *end = strchr(rest, ']');
		return mg_err_set(err,
		                  "the package %s below would have to change (%.*s) for this set: "
		                  "resolve the base again (mcpgate add --refresh-packages)",
		                  name, end != NULL ? (int)(end - rest - 1) : 0, rest + 1);
	}
	/* "(VERSION ORIGIN [ARCH])", maybe followed by " []" */
	char *close = strchr(rest, ')');
	char *arch = NULL;
	for (char *q = close; q != NULL && q > rest && arch == NULL; q--)
		if (*q == '[')
			arch = q;
	char *vend = rest[0] == '(' ? strchr(rest, ' ') : NULL;
	if (rest[0] != '(' || close == NULL || arch == NULL || vend == NULL || arch > close ||
	    close[-1] != ']')
		return mg_err_set(err, "apt-get said \"%s\", which mcpgate cannot read", l);
	*vend = '\0';
	close[-1] = '\0';
	char *colon = strchr(name, ':'); /* NAME:ARCH when apt qualifies it */
	if (colon != NULL)
		*colon = '\0';
	if (!deb_name_valid(name))
		return mg_err_set(err, "apt-get named \"%s\", not a package's name", name);
	if (out->n >= DEB_LOCK_MAX)
		return mg_err_set(err, "the set needs more than %d packages", DEB_LOCK_MAX);
	out->pkgs = xreallocarray(out->pkgs, out->n + 1, sizeof(out->pkgs[0]));
	out->pkgs[out->n++] =
	    (struct deb_pkg){xstrdup(name), xstrdup(rest + 1), xstrdup(arch + 1), NULL};
	return 0;
}

int deb_apt_resolve(const struct deb_store *s, const char *status, const struct strv *names,
                    struct deb_lock *out, struct mg_err **err)
{
	struct strv args = STRV_INIT;
	strv_push(&args, "install");
	strv_push(&args, "--simulate");
	strv_push(&args, "-q");
	strv_push(&args, "--no-install-recommends");
	for (size_t i = 0; i < names->n; i++)
		strv_push(&args, names->v[i]);
	struct proc_result res;
	int r = apt_run(s, status, &args, &res, err);
	strv_free(&args);
	if (r < 0)
		return -1;
	if (!exited_ok(&res)) {
		r = apt_failed("install --simulate", &res, err);
		proc_result_free(&res);
		return r;
	}
	const char *text = mg_buf_str(&res.out);
	for (const char *line = text; r == 0 && *line != '\0';) {
		size_t n = strcspn(line, "\n");
		if (n > 5 && strncmp(line, "Inst ", 5) == 0)
			r = parse_inst(line, n, out, err);
		else if (n > 5 && strncmp(line, "Remv ", 5) == 0)
			r = mg_err_set(err, "apt would remove a package below for this set: %.*s",
			               (int)n, line);
		line += n + (line[n] == '\n');
	}
	proc_result_free(&res);
	if (r == 0 && out->n == 0)
		r = mg_err_set(err, "apt has nothing to install for this set: every package of it "
		                    "is below it already");
	if (r == 0)
		deb_lock_sort(out);
	return r;
}

char *deb_apt_cached(const struct deb_store *s, const struct deb_pkg *p)
{
	/* apt names a download NAME_VERSION_ARCH.deb, the epoch's ':' as %3a */
	struct mg_buf b = MG_BUF_INIT(1 << 12);
	mg_buf_printf(&b, NULL, "%s/apt/cache/archives/%s_", s->dir, p->name);
	for (const char *v = p->version; *v != '\0'; v++)
		if (*v == ':')
			mg_buf_puts(&b, "%3a", NULL);
		else
			mg_buf_putc(&b, *v, NULL);
	mg_buf_printf(&b, NULL, "_%s.deb", p->arch);
	return mg_buf_steal(&b, NULL);
}

int deb_apt_download(const struct deb_store *s, const char *status, const struct deb_lock *l,
                     struct mg_err **err)
{
	struct strv args = STRV_INIT;
	strv_push(&args, "install");
	strv_push(&args, "--download-only");
	strv_push(&args, "--yes");
	strv_push(&args, "-q");
	strv_push(&args, "--no-install-recommends");
	strv_push(&args, "--allow-downgrades");
	for (size_t i = 0; i < l->n; i++)
		strv_pushf(&args, "%s=%s", l->pkgs[i].name, l->pkgs[i].version);
	if (!s->quiet)
		fprintf(stderr, "mcpgate: apt-get downloads %zu Debian package(s)\n", l->n);
	struct proc_result res;
	int r = apt_run(s, status, &args, &res, err);
	strv_free(&args);
	if (r < 0)
		return -1;
	if (!exited_ok(&res))
		r = apt_failed("install --download-only", &res, err);
	proc_result_free(&res);
	return r;
}
