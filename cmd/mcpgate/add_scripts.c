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
#include <unistd.h>

#include "cmd/mcpgate/add.h"
#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/xalloc.h"

#define RUNNER_NAME    "mcpgate-npm-scripts.js"
#define WALK_DEPTH_MAX 64

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
 * folder or link removed; with to, every node given to to's owner. Links
 * are never followed. */
static int walk_left(int dirfd, const char *where, unsigned depth, const struct add_owner *to,
                     unsigned *count, struct mg_err **err)
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
		if (S_ISLNK(st.st_mode)) {
			if (to != NULL &&
			    fchownat(dirfd, e->d_name, to->uid, to->gid, AT_SYMLINK_NOFOLLOW) < 0)
				r = mg_err_sys(err, errno, "giving %s to %u:%u", path,
				               (unsigned)to->uid, (unsigned)to->gid);
			continue;
		}
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
		/* after the bits are cleared: a chown clears some by itself,
		 * and they are to be counted */
		if (r == 0 && to != NULL && fchown(child, to->uid, to->gid) < 0)
			r = mg_err_sys(err, errno, "giving %s to %u:%u", path, (unsigned)to->uid,
			               (unsigned)to->gid);
		if (r == 0 && S_ISDIR(cst.st_mode))
			r = walk_left(child, path, depth + 1, to, count, err);
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

int add_clear_tree_to(const char *dir, const struct add_owner *to, unsigned *cleared,
                      struct mg_err **err)
{
	*cleared = 0;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return mg_err_sys(err, errno, "%s", dir);
	int r = 0;
	if (to != NULL && fchown(fd, to->uid, to->gid) < 0)
		r = mg_err_sys(err, errno, "giving %s to %u:%u", dir, (unsigned)to->uid,
		               (unsigned)to->gid);
	if (r == 0)
		r = walk_left(fd, dir, 0, to, cleared, err);
	close(fd);
	return r;
}

int add_clear_tree(const char *dir, unsigned *cleared, struct mg_err **err)
{
	return add_clear_tree_to(dir, NULL, cleared, err);
}

int add_clear_modules(const char *work, unsigned *cleared, struct mg_err **err)
{
	cleanup_free char *modules = xasprintf("%s/node_modules", work);
	return add_clear_tree(modules, cleared, err);
}

/* ---- the step ------------------------------------------------------------- */

int add_run_scripts(const struct cfg *cfg, struct ctr_driver *d, const char *work, const char *data,
                    const char *name, const struct add_layers *layers, const struct strv *pkgs,
                    const struct strv *accept, struct mg_err **err)
{
	const char *ep[] = {"/usr/bin/node", "/workspace/" RUNNER_NAME};
	/* what builds native code finds the headers here (node-gyp's nodedir) */
	const char *env[] = {"npm_config_nodedir=/usr", "npm_config_build_from_source=true",
	                     "PYTHON=/usr/bin/python3"};
	cleanup_free char *what =
	    xasprintf("the install scripts of %zu package(s)", pkgs != NULL ? pkgs->n : 0);
	struct add_step st = {
	    .kind = "npm-scripts",
	    .what = what,
	    .label = CTR_IMAGE_LABEL_SCRIPTS,
	    .runner_name = RUNNER_NAME,
	    .runner = runner,
	    .runner_len = sizeof(runner) - 1,
	    .entrypoint = ep,
	    .n_entrypoint = 2,
	    .env = env,
	    .n_env = layers->tools.blob != NULL ? 3 : 0,
	    .write = "node_modules",
	    .args = pkgs,
	};
	int status = -1;
	if (add_step_run(cfg, d, work, data, name, layers, &st, accept, &status, err) < 0)
		return -1;
	if (status != 0)
		return mg_err_set(err,
		                  "an install script failed in its container (status %d; its "
		                  "output is above); mcp.toml is left as it was",
		                  status);
	return 0;
}
