/* mcpgate add --scripts: npm's install scripts, run contained.
 *
 * npm installed the package on the host with every script off. Where a
 * package needs its scripts, they run here in a container with a server's
 * isolation (read-only root, no capabilities, seccomp, no network, limits),
 * never on the host: the install folder is mounted read-only at /workspace
 * and its node_modules is the one folder the scripts may write. The image
 * is this machine's node (the very layer every server image here shares), a
 * shell, and nothing else; the runner below, kept in the install folder,
 * does what npm would do for each package in the lockfile that has scripts
 * (preinstall, install, postinstall, dependencies first). What the scripts
 * left behind is then treated as hostile: setuid and setgid bits are
 * cleared, and pack refuses anything that is not a file, folder or link. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sodium.h>

#include "cmd/mcpgate/add.h"
#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/xalloc.h"
#include "internal/gateway/launch.h"
#include "internal/proc/proc.h"
#include "internal/toml/toml_encode.h"

#define SCRIPTS_TIMEOUT_MS (15 * 60 * 1000)
#define SCRIPTS_OUTPUT_MAX (1u << 20)
#define RUNNER_NAME        "mcpgate-npm-scripts.js"
#define WALK_DEPTH_MAX     64

/* Runs in the container: /workspace is the install folder (read-only), its
 * node_modules writable. Every line goes to stderr. */
static const char runner[] =
    "'use strict';\n"
    "// mcpgate add --scripts: the install scripts npm skipped, run contained\n"
    "const fs = require('fs'), path = require('path'), cp = require('child_process');\n"
    "const root = '/workspace';\n"
    "const lock = JSON.parse(fs.readFileSync(path.join(root, 'package-lock.json'), 'utf8'));\n"
    "const wanted = new Set(process.argv.slice(2));\n"
    "const keys = Object.keys(lock.packages || {}).filter((k) => wanted.has(k));\n"
    "// dependencies before what depends on them: the deepest first\n"
    "const depth = (k) => k.split('node_modules/').length;\n"
    "keys.sort((a, b) => depth(b) - depth(a) || (a < b ? -1 : 1));\n"
    "for (const key of keys) {\n"
    "  const dir = path.join(root, key);\n"
    "  if (!dir.startsWith(root + '/node_modules/')) { console.error(key + ': not in "
    "node_modules'); "
    "process.exit(2); }\n"
    "  const pj = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));\n"
    "  const sc = pj.scripts || {};\n"
    "  // npm's own rule: a binding.gyp without an install script is built\n"
    "  if (!sc.install && !sc.preinstall && pj.gypfile !== false &&\n"
    "      fs.existsSync(path.join(dir, 'binding.gyp'))) {\n"
    "    if (!fs.existsSync('/usr/local/bin/node-gyp')) {\n"
    "      console.error(key + ': its binding.gyp needs node-gyp and a compiler, which this "
    "step does not have');\n"
    "      process.exit(3);\n"
    "    }\n"
    "    sc.install = 'node-gyp rebuild';\n"
    "  }\n"
    "  const events = ['preinstall', 'install', 'postinstall'].filter((e) => typeof sc[e] === "
    "'string');\n"
    "  const bins = [];\n"
    "  for (let d = dir; d.startsWith(root); d = path.dirname(d)) bins.push(path.join(d, "
    "'node_modules', '.bin'));\n"
    "  for (const e of events) {\n"
    "    console.error('> ' + pj.name + '@' + pj.version + ' ' + e + ': ' + sc[e]);\n"
    "    const env = { PATH: bins.concat(['/usr/local/bin', '/usr/bin', '/bin']).join(':'), "
    "HOME: '/tmp', TMPDIR: '/tmp',\n"
    "      npm_config_nodedir: process.env.npm_config_nodedir || '',\n"
    "      npm_config_build_from_source: process.env.npm_config_build_from_source || '',\n"
    "      PYTHON: process.env.PYTHON || '', npm_config_devdir: '/tmp/.node-gyp',\n"
    "      INIT_CWD: root, NODE: '/usr/bin/node', npm_node_execpath: '/usr/bin/node',\n"
    "      npm_lifecycle_event: e, npm_lifecycle_script: sc[e], npm_package_name: pj.name,\n"
    "      npm_package_version: pj.version, npm_package_json: path.join(dir, 'package.json'),\n"
    "      npm_config_ignore_scripts: '', npm_command: 'install' };\n"
    "    const r = cp.spawnSync('/bin/sh', ['-c', sc[e]], { cwd: dir, env, stdio: ['ignore', 2, "
    "2] });\n"
    "    if (r.status !== 0) {\n"
    "      console.error(key + ': ' + e + ' failed (' + (r.error ? r.error.message : r.signal || "
    "'status ' + r.status) + ')');\n"
    "      process.exit(1);\n"
    "    }\n"
    "  }\n"
    "}\n"
    "console.error('mcpgate: ' + keys.length + ' package(s) ran their install scripts');\n";

/* ---- what the scripts left ------------------------------------------------ */

/* Below dirfd: setuid and setgid bits cleared and a node that is not a file,
 * folder or link removed. Links are never followed. */
static int walk_left(int dirfd, const char *where, unsigned depth, unsigned *count,
                     struct mg_err **err)
{
	if (depth > WALK_DEPTH_MAX)
		return mg_err_set(err, "%s: more than %d folders deep", where, WALK_DEPTH_MAX);
	int fd = dup(dirfd);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
	if (dir == NULL) {
		if (fd >= 0)
			close(fd);
		return mg_err_sys(err, errno, "reading %s", where);
	}
	int r = 0;
	struct dirent *e;
	while (r == 0 && (e = readdir(dir)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		struct stat st;
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = mg_err_sys(err, errno, "%s/%s", where, e->d_name);
			break;
		}
		cleanup_free char *path = xasprintf("%s/%s", where, e->d_name);
		bool special = !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode);
		if (!S_ISDIR(st.st_mode) && special) {
			/* a pipe or socket a script made has no place in an image */
			if (unlinkat(dirfd, e->d_name, 0) < 0)
				r = mg_err_sys(err, errno, "removing %s", path);
			(*count)++;
			continue;
		}
		if (S_ISLNK(st.st_mode))
			continue;
		int child = openat(dirfd, e->d_name,
		                   O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK |
		                       (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0));
		if (child < 0) {
			r = mg_err_sys(err, errno, "opening %s", path);
			break;
		}
		struct stat cst;
		if (fstat(child, &cst) < 0 || cst.st_ino != st.st_ino || cst.st_dev != st.st_dev)
			r = mg_err_set(err, "%s changed while it was read", path);
		else if ((cst.st_mode & (S_ISUID | S_ISGID)) != 0) {
			if (fchmod(child, cst.st_mode & 0777) < 0)
				r = mg_err_sys(err, errno, "clearing the setuid bit of %s", path);
			(*count)++;
		}
		if (r == 0 && S_ISDIR(cst.st_mode))
			r = walk_left(child, path, depth + 1, count, err);
		close(child);
	}
	closedir(dir);
	return r;
}

int add_remove_modules(const char *work, struct mg_err **err)
{
	cleanup_free char *modules = xasprintf("%s/node_modules", work);
	return mg_remove_tree(modules, err);
}

int add_clear_tree(const char *dir, unsigned *cleared, struct mg_err **err)
{
	*cleared = 0;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return mg_err_sys(err, errno, "%s", dir);
	int r = walk_left(fd, dir, 0, cleared, err);
	close(fd);
	return r;
}

int add_clear_modules(const char *work, unsigned *cleared, struct mg_err **err)
{
	cleanup_free char *modules = xasprintf("%s/node_modules", work);
	return add_clear_tree(modules, cleared, err);
}

/* ---- the step ------------------------------------------------------------- */

/* The step's image: the Debian base, node, and where native code is built
 * the build tools with node's headers and node-gyp; its top a marker of
 * what it is. Kept like a server's image, so docker runs it by its ID. */
static int scripts_image(const char *data, const char *name, const struct add_layers *layers,
                         char **image, char **archive, struct mg_err **err)
{
	cleanup_free char *images = xasprintf("%s/images", data);
	cleanup_free char *marker = xasprintf("%s/install-step", images);
	const char text[] = "the contained install step of mcpgate add\n";
	if (mg_mkdir_p(images, 0700, err) < 0 ||
	    mg_write_file_atomic(marker, text, sizeof(text) - 1, 0644, err) < 0)
		return -1;
	cleanup_free char *add = xasprintf("%s:/etc/mcpgate-install-step", marker);
	const char *adds[] = {add};
	cleanup_free char *out = xasprintf("%s/npm-scripts-%s.tar.new", images, name);
	cleanup_free char *ref = xasprintf("mcpgate-npm-scripts:%s", name);
	const char *ep[] = {"/usr/bin/node", "/workspace/" RUNNER_NAME};
	struct strv labels = STRV_INIT;
	strv_push(&labels, "io.mcpgate.npm.scripts=the contained install step of mcpgate add");
	/* what builds native code finds the headers here (node-gyp's nodedir) */
	const char *env[] = {"npm_config_nodedir=/usr", "npm_config_build_from_source=true",
	                     "PYTHON=/usr/bin/python3"};
	bool native = layers->tools.blob != NULL;
	struct pack_spec spec = {
	    .output = out,
	    .adds = adds,
	    .n_adds = 1,
	    .entrypoint = ep,
	    .n_entrypoint = 2,
	    .env = env,
	    .n_env = native ? 3 : 0,
	    .workdir = "/workspace",
	    .name = ref,
	};
	struct pack_result res = {0};
	int r = add_pack_over(&spec, layers, true, &labels, images, "mcpgate-npm-scripts", &res,
	                      image, archive, err);
	pack_result_free(&res);
	strv_free(&labels);
	return r;
}

/* The step as a server of its own: the configuration gives it the same
 * checks and the same run argv as any server */
static int scripts_server(const char *name, const char *image, const struct strv *accept,
                          struct cfg **out, struct mg_err **err)
{
	struct toml_value *t = toml_new_table();
	cleanup_free char *step_name = xasprintf("%s-scripts", name);
	toml_table_set(t, "name", 4, toml_new_string(step_name));
	toml_table_set(t, "transport", 9, toml_new_string("container"));
	toml_table_set(t, "image", 5, toml_new_string(image));
	struct toml_value *mounts = toml_new_array();
	toml_array_push(mounts, toml_new_string(".:read"));
	toml_array_push(mounts, toml_new_string("node_modules:write"));
	toml_table_set(t, "mounts", 6, mounts);
	toml_table_set(t, "memory", 6, toml_new_string("1g"));
	if (accept->n > 0) {
		struct toml_value *a = toml_new_array();
		for (size_t i = 0; i < accept->n; i++)
			toml_array_push(a, toml_new_string(accept->v[i]));
		toml_table_set(t, "accept_unenforced", 17, a);
	}
	struct mg_buf b = MG_BUF_INIT(1 << 16);
	const char *header = "server";
	int r = toml_encode_table(&b, &header, 1, true, t, "\n", err);
	toml_free(t);
	if (r == 0)
		r = cfg_parse(b.data, b.len, "the install step (--accept-unenforced)", NULL, 0,
		              NULL, out, err);
	mg_buf_free(&b);
	return r;
}

/* The step's limits hold here, or the person accepted that they do not, as
 * for a server (docs/unenforced.md) */
static int scripts_limits(const struct ctr_driver *d, const struct cfg_server *s,
                          struct mg_err **err)
{
	struct ctr_platform platform;
	struct mg_err *perr = NULL;
	bool kept = false;
	int pr = ctr_platform_get(d, &platform, &kept, &perr);
	cleanup_free char *refusal =
	    gw_unenforced_refusal(&platform, pr < 0 ? mg_err_msg(perr) : NULL, s);
	mg_err_free(perr);
	if (pr == 0)
		ctr_platform_free(&platform);
	if (refusal != NULL)
		return mg_err_set(
		    err,
		    "the install scripts are not run: %s (for add: --accept-unenforced "
		    "LIST, which the server's entry then says too)",
		    refusal);
	return 0;
}

/* The step's output, its last lines (keep) or all of it (keep 0): a
 * compiler's warnings fill screens nobody reads when the step succeeded */
static void show_output(const struct mg_buf *b, size_t keep)
{
	const char *p = mg_buf_str(b);
	size_t lines = 0;
	for (const char *q = p; *q != '\0'; q++)
		lines += *q == '\n';
	for (size_t skip = keep > 0 && lines > keep ? lines - keep : 0; skip > 0; skip--)
		p = strchr(p, '\n') + 1;
	if (p != mg_buf_str(b))
		fprintf(stderr, "mcpgate add: [contained] (%zu lines before these)\n",
		        lines - keep);
	while (*p != '\0') {
		size_t n = strcspn(p, "\n");
		fprintf(stderr, "mcpgate add: [contained] %.*s\n", (int)n, p);
		p += n + (p[n] == '\n');
	}
}

int add_run_scripts(const struct cfg *cfg, struct ctr_driver *d, const char *work, const char *data,
                    const char *name, const struct add_layers *layers, const struct strv *pkgs,
                    const struct strv *accept, struct mg_err **err)
{
	cleanup_free char *image = NULL, *archive = NULL, *state = NULL, *stage = NULL;
	cleanup_free char *cfg_dir = NULL, *state_dir = NULL, *cname = NULL;
	cleanup_free char *runner_path = xasprintf("%s/%s", work, RUNNER_NAME);
	cleanup_free char *modules = xasprintf("%s/node_modules", work);
	struct cfg *step = NULL;
	struct ctr_mounts mounts = {0};
	struct strv argv = STRV_INIT, envp = STRV_INIT;
	struct proc_result res = {0};
	struct ctr_mount_plan plan;
	struct ctr_run_spec spec;
	struct stat st;
	char session[13], user[32];
	unsigned char raw[6];
	int r = -1;

	if (mg_write_file_atomic(runner_path, runner, sizeof(runner) - 1, 0644, err) < 0 ||
	    scripts_image(data, name, layers, &image, &archive, err) < 0 ||
	    d->ops->load(d, archive, err) < 0 ||
	    scripts_server(name, image, accept, &step, err) < 0 ||
	    scripts_limits(d, &step->servers[0], err) < 0 || cfg_default_state_dir(&state, err) < 0)
		goto out;
	if (stat(modules, &st) < 0) {
		mg_err_sys(err, errno, "%s", modules);
		goto out;
	}
	cfg_dir = xstrdup(cfg->mcp_path);
	if (strrchr(cfg_dir, '/') != NULL)
		*strrchr(cfg_dir, '/') = '\0';
	randombytes_buf(raw, sizeof(raw));
	sodium_bin2hex(session, sizeof(session), raw, sizeof(raw));
	state_dir = xasprintf("%s/mcpgate", state);
	stage = xasprintf("%s/mounts", state_dir);
	/* the install folder is inside mcpgate's data folder, which therefore
	 * is not among the protected ones here; the configuration and the
	 * state (where the staged binds are) are */
	const char *protected_dirs[] = {cfg_dir, state_dir, NULL};
	plan = (struct ctr_mount_plan){
	    .cfg = step,
	    .server = &step->servers[0],
	    .workspace = work,
	    .protected_dirs = protected_dirs,
	    .stage_dir = stage,
	    .tag = session,
	    .driver = d,
	};
	if (ctr_mounts_open(&plan, &mounts, err) < 0)
		goto out;
	/* the scripts write node_modules as the one who owns it: the person
	 * (rootless podman's root is the person too) */
	if (d->kind == CTR_PODMAN && geteuid() != 0)
		snprintf(user, sizeof(user), "0:0");
	else
		snprintf(user, sizeof(user), "%u:%u", (unsigned)st.st_uid, (unsigned)st.st_gid);
	spec = (struct ctr_run_spec){
	    .server = &step->servers[0],
	    .session = session,
	    .owner = getpid(),
	    .workspace = work,
	    .mounts = &mounts,
	    .user = user,
	};
	if (d->ops->run_command(d, &spec, &argv, &envp, err) < 0)
		goto out;
	for (size_t i = 0; i < pkgs->n; i++)
		strv_push(&argv, pkgs->v[i]);
	fprintf(stderr,
	        "mcpgate add: running the install scripts of %zu package(s) in a container (no "
	        "network, only node_modules writable)\n",
	        pkgs->n);
	cname = ctr_container_name(step->servers[0].name, session);
	if (proc_run((const char *const *)strv_array(&argv), (const char *const *)strv_array(&envp),
	             SCRIPTS_TIMEOUT_MS, SCRIPTS_OUTPUT_MAX, &res, err) < 0) {
		mg_err_wrap(err, "the contained install step of %s", name);
		goto out;
	}
	bool ok = WIFEXITED(res.status) && WEXITSTATUS(res.status) == 0;
	show_output(&res.out, ok ? 20 : 0);
	show_output(&res.err, ok ? 20 : 0);
	if (!ok) {
		mg_err_set(err,
		           "an install script failed in its container (status %d; its output is "
		           "above); mcp.toml is left as it was",
		           WIFEXITED(res.status) ? WEXITSTATUS(res.status) : -1);
		goto out;
	}
	r = 0;
out:
	/* a timeout leaves it running: gone either way */
	if (cname != NULL)
		d->ops->remove(d, cname, NULL);
	ctr_mounts_release(&mounts);
	if (cname != NULL) {
		unsigned cleared = 0;
		struct mg_err *werr = NULL;
		if (add_clear_modules(work, &cleared, &werr) < 0 && r == 0)
			r = mg_err_set(err, "after the install scripts: %s", mg_err_msg(werr));
		mg_err_clear(&werr);
		if (cleared > 0)
			fprintf(
			    stderr,
			    "mcpgate add: cleared %u setuid, setgid or special file(s) the scripts "
			    "left\n",
			    cleared);
	}
	unlink(runner_path);
	proc_result_free(&res);
	strv_free(&argv);
	strv_free(&envp);
	cfg_free(step);
	return r;
}
