/* The runtime driver's fixed parts: finding the runtime, its environment,
 * names, mounts, and the argv of `run` (docs/contained-servers.md says why
 * each flag is there). */
#define _GNU_SOURCE
#include "internal/container/container.h"
#include "internal/container/container-internal.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/log.h"
#include "internal/base/xalloc.h"
#include "internal/json/json.h"
#include "internal/proc/proc.h"
#include "launch/launch.h"

extern char **environ;

/* What the runtime's own command may see of mcpgate's environment */
static const char *const common_env[] = {"PATH", "HOME", "XDG_RUNTIME_DIR", "TMPDIR", NULL};
static const char *const podman_env[] = {"CONTAINER_HOST",
                                         "CONTAINER_CONNECTION",
                                         "CONTAINER_SSHKEY",
                                         "CONTAINERS_CONF",
                                         "CONTAINERS_REGISTRIES_CONF",
                                         "CONTAINERS_STORAGE_CONF",
                                         "REGISTRY_AUTH_FILE",
                                         NULL};
static const char *const docker_env[] = {"DOCKER_HOST",
                                         "DOCKER_CONTEXT",
                                         "DOCKER_CONFIG",
                                         "DOCKER_TLS_VERIFY",
                                         "DOCKER_CERT_PATH",
                                         "DOCKER_API_VERSION",
                                         NULL};

static const char *env_lookup(char *const *environment, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; environment != NULL && environment[i] != NULL; i++)
		if (strncmp(environment[i], name, n) == 0 && environment[i][n] == '=')
			return environment[i] + n + 1;
	return NULL;
}

static void env_take(struct strv *env, char *const *environment, const char *const *names)
{
	for (size_t i = 0; names[i] != NULL; i++) {
		const char *v = env_lookup(environment, names[i]);
		if (v != NULL)
			strv_pushf(env, "%s=%s", names[i], v);
	}
}

bool ctr_env_name_reserved(const char *name)
{
	/* one rule for the whole tree: the configuration's */
	if (cfg_env_name_reserved(name))
		return true;
	const char *const *lists[] = {common_env, podman_env, docker_env};
	for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++)
		for (size_t i = 0; lists[l][i] != NULL; i++)
			if (strcasecmp(lists[l][i], name) == 0)
				return true;
	return false;
}

/* Rootless podman without XDG_RUNTIME_DIR (a login by su, a cron job, a
 * service) fails when it sets up the networks of a server with hosts
 * ("failed to mount runtime directory for rootless netns"). Give it the
 * directory a login would have, /run/user/UID, when that is ours; else a
 * private one of mcpgate's under TMPDIR, made 0700 and checked to be ours
 * and no link, since /tmp is everyone's. NULL when neither is to be had. */
static char *rootless_runtime_dir(char *const *environment)
{
	uid_t uid = geteuid();
	char *run = xasprintf("/run/user/%u", (unsigned)uid);
	struct stat st;
	if (lstat(run, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid &&
	    (st.st_mode & 077) == 0)
		return run;
	free(run);
	const char *tmp = env_lookup(environment, "TMPDIR");
	if (tmp == NULL || tmp[0] != '/')
		tmp = "/tmp";
	char *own = xasprintf("%s/mcpgate-run-%u", tmp, (unsigned)uid);
	if (mkdir(own, 0700) < 0 && errno != EEXIST) {
		free(own);
		return NULL;
	}
	if (lstat(own, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid ||
	    (st.st_mode & 077) != 0) {
		mg_warn("%s is not a private directory of this user: rootless podman gets no "
		        "XDG_RUNTIME_DIR",
		        own);
		free(own);
		return NULL;
	}
	return own;
}

struct ctr_driver *ctr_driver_for(enum ctr_kind kind, const char *path, char *const *environment)
{
	struct ctr_driver *d = xcalloc(1, sizeof(*d));
	d->kind = kind;
	d->name = kind == CTR_PODMAN ? "podman" : kind == CTR_SWARM ? "swarm" : "docker";
	d->path = xstrdup(path);
	d->timeout_ms = 60000;
	d->ops = kind == CTR_SWARM ? &ctr_swarm_ops : &ctr_cli_ops;
	env_take(&d->env, environment, common_env);
	env_take(&d->env, environment, kind == CTR_PODMAN ? podman_env : docker_env);
	const char *xdg = env_lookup(environment, "XDG_RUNTIME_DIR");
	if (kind == CTR_PODMAN && geteuid() != 0 && xdg == NULL) {
		char *dir = rootless_runtime_dir(environment);
		if (dir != NULL)
			strv_pushf(&d->env, "XDG_RUNTIME_DIR=%s", dir);
		free(dir);
	}
	return d;
}

int ctr_driver_new(enum cfg_runtime runtime, const char *path_var, struct ctr_driver **out,
                   struct mg_err **err)
{
	if (path_var == NULL || *path_var == '\0')
		path_var = "/usr/local/bin:/usr/bin:/bin";
	if (runtime == CFG_RUNTIME_SWARM) {
		/* the manager's engine, through the docker command (DOCKER_HOST) */
		cleanup_free char *docker = proc_find_in_path("docker", path_var);
		if (docker == NULL)
			return mg_err_set(
			    err, "runtime \"swarm\" (config.toml) needs the docker command "
			         "on PATH (apt-get install docker.io)");
		*out = ctr_driver_for(CTR_SWARM, docker, environ);
		return 0;
	}
	cleanup_free char *podman = NULL;
	cleanup_free char *docker = NULL;
	if (runtime != CFG_RUNTIME_DOCKER)
		podman = proc_find_in_path("podman", path_var);
	if (runtime != CFG_RUNTIME_PODMAN && (runtime == CFG_RUNTIME_DOCKER || podman == NULL))
		docker = proc_find_in_path("docker", path_var);
	if (podman != NULL) {
		*out = ctr_driver_for(CTR_PODMAN, podman, environ);
		return 0;
	}
	if (docker != NULL) {
		*out = ctr_driver_for(CTR_DOCKER, docker, environ);
		return 0;
	}
	switch (runtime) {
	case CFG_RUNTIME_PODMAN:
		return mg_err_set(err, "runtime \"podman\" (config.toml) is not on PATH; "
		                       "install it (apt-get install podman runc) or choose docker");
	case CFG_RUNTIME_DOCKER:
		return mg_err_set(err, "runtime \"docker\" (config.toml) is not on PATH; "
		                       "install it (apt-get install docker.io) or choose podman");
	case CFG_RUNTIME_SWARM:
		break;
	case CFG_RUNTIME_UNSET:
		break;
	}
	return mg_err_set(err, "no container runtime: neither podman nor docker is on PATH "
	                       "(apt-get install podman runc, or docker.io)");
}

void ctr_driver_use_seccomp(struct ctr_driver *d, const char *data_dir)
{
	free(d->seccomp);
	free(d->seccomp_error);
	d->seccomp = d->seccomp_error = NULL;
	struct mg_err *err = NULL;
	if (ctr_seccomp_prepare(d, data_dir, &d->seccomp, &err) < 0)
		d->seccomp_error = xstrdup(mg_err_msg(err));
	mg_err_free(err);
}

void ctr_driver_free(struct ctr_driver *d)
{
	if (d == NULL)
		return;
	free(d->seccomp);
	free(d->seccomp_error);
	free(d->images_dir);
	free(d->cache_dir);
	free(d->registry);
	free(d->path);
	strv_free(&d->env);
	free(d);
}

/* Sessions start on several threads under the listener; a runtime is swept
 * once in a process, and a session that asks meanwhile waits for that sweep
 * to end (start-up ends after it: docs/2026-12-01-session-start.md) */
static pthread_mutex_t sweep_lock = PTHREAD_MUTEX_INITIALIZER;
static bool swept[CTR_SWARM + 1]; /* by enum ctr_kind: a kind after swarm widens it */

int ctr_sweep_once(const struct ctr_driver *d, unsigned *removed, struct mg_err **err)
{
	*removed = 0;
	pthread_mutex_lock(&sweep_lock);
	int r = 0;
	if (!swept[d->kind]) {
		swept[d->kind] = true;
		r = d->ops->sweep(d, removed, err) < 0 ? -1 : 1;
	}
	pthread_mutex_unlock(&sweep_lock);
	return r;
}

char *ctr_container_name(const char *server, const char *session)
{
	return xasprintf("mcpgate-%s-%s", server, session);
}

const char *ctr_default_user(const struct cfg_server *s, bool rootless, const char *workspace,
                             char *buf, size_t len)
{
	struct stat st;
	if (s->user_set)
		snprintf(buf, len, "%u:%u", s->uid, s->gid);
	else if (rootless)
		snprintf(buf, len, "0:0");
	else if (workspace != NULL && stat(workspace, &st) == 0 && st.st_uid != 0)
		snprintf(buf, len, "%u:%u", (unsigned)st.st_uid, (unsigned)st.st_gid);
	else
		snprintf(buf, len, "65534:65534");
	return buf;
}

bool ctr_owner_alive(pid_t pid)
{
	if (pid <= 0)
		return false;
	char link[64], exe[PATH_MAX];
	int n = snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	if (n < 0 || (size_t)n >= sizeof(link))
		return false;
	ssize_t len = readlink(link, exe, sizeof(exe) - 1);
	if (len < 0)
		/* gone, or not ours to look at (EACCES): a live process we cannot
		 * inspect is not swept */
		return errno == EACCES;
	exe[len] = '\0';
	const char *base = strrchr(exe, '/');
	base = base != NULL ? base + 1 : exe;
	return strncmp(base, "mcpgate", 7) == 0 && (base[7] == '\0' || base[7] == ' ');
}

void ctr_push_labels(struct strv *a, const char *session, const char *server, pid_t owner)
{
	char *who = ctr_owner_label(owner);
	strv_push(a, "--label");
	strv_pushf(a, CTR_LABEL_SESSION "=%s", session);
	strv_push(a, "--label");
	strv_pushf(a, CTR_LABEL_SERVER "=%s", server);
	strv_push(a, "--label");
	strv_pushf(a, CTR_LABEL_PID "=%d", (int)owner);
	strv_push(a, "--label");
	strv_pushf(a, CTR_LABEL_OWNER "=%s", who);
	free(who);
}

static char *memory_arg(uint64_t bytes);

/* `run` and the flags every contained process gets, server or sidecar,
 * running as user ("UID:GID") */
static int push_isolation(const struct ctr_driver *d, struct strv *a, uint64_t memory,
                          unsigned pids, const char *user, struct mg_err **err)
{
	strv_push(a, "run");
	strv_pushf(a, "--security-opt=seccomp=%s", d->seccomp);
	strv_push(a, "--rm");
	strv_push(a, "-i");
	strv_push(a, "--pull=never");
	strv_push(a, "--log-driver=none");
	strv_push(a, "--read-only");
	strv_push(a, "--cap-drop=ALL");
	strv_push(a, "--security-opt=no-new-privileges");
	strv_push_owned(a, memory_arg(memory));
	strv_pushf(a, "--pids-limit=%u", pids);
	if (ctr_push_places(d, a, user, err) < 0)
		return -1;
	/* nothing the image declares widens what mcp.toml allows: no health
	 * check run beside it, no volume of the image's own */
	strv_push(a, "--no-healthcheck");
	if (d->kind == CTR_PODMAN) {
		strv_push(a, "--http-proxy=false");
		strv_push(a, "--image-volume=ignore");
	}
	return 0;
}

/* HOME for the server: a tmpfs of its own, writable by the user it runs
 * as, capped and not executable, gone with the container; or the folder
 * "home" names (its last mount). Servers that write a dot-folder in their
 * home at start need one; the image's root stays read-only. */
static void push_home(const struct ctr_driver *d, struct strv *a, const struct cfg_server *s,
                      const char *user)
{
	bool kept = s->nmounts > 0 && s->mounts[s->nmounts - 1].home;
	if (!kept) {
		strv_push(a, "--tmpfs");
		if (d->kind == CTR_PODMAN) {
			/* podman takes no uid=: U gives the tmpfs to --user */
			strv_push(a, CFG_HOME_PATH
			          ":rw,noexec,nosuid,nodev,mode=0700,size=" CFG_HOME_SIZE ",U");
		} else {
			unsigned uid = 65534, gid = 65534;
			if (sscanf(user, "%u:%u", &uid, &gid) != 2)
				gid = uid;
			strv_pushf(a,
			           CFG_HOME_PATH
			           ":rw,noexec,nosuid,nodev,mode=0700,size=" CFG_HOME_SIZE
			           ",uid=%u,gid=%u",
			           uid, gid);
		}
	}
	strv_push(a, "--env=HOME=" CFG_HOME_PATH);
}

static char *memory_arg(uint64_t bytes)
{
	if (bytes % (1ull << 20) == 0)
		return xasprintf("--memory=%llum", (unsigned long long)(bytes >> 20));
	return xasprintf("--memory=%llub", (unsigned long long)bytes);
}

/* A binary of mcpgate's, read-only at target in the container; relabelled
 * (:z) where SELinux is on, through --volume, whose fields a colon ends */
static int push_binary_mount(struct strv *a, const char *host, const char *target,
                             struct mg_err **err)
{
	if (access("/sys/fs/selinux/enforce", F_OK) == 0) {
		if (strpbrk(host, ":,") != NULL)
			return mg_err_set(
			    err,
			    "the path %s of mcpgate's own %s holds a comma or a colon, "
			    "which --volume (SELinux's relabelling) would misread",
			    host, target);
		strv_push(a, "--volume");
		strv_pushf(a, "%s:%s:ro,z", host, target);
		return 0;
	}
	cleanup_free char *source = xasprintf("source=%s", host);
	cleanup_free char *dest = xasprintf("target=%s", target);
	cleanup_free char *what = xasprintf("the path of mcpgate's own %s", target);
	const char *fields[] = {"type=bind", source, dest, "readonly"};
	return ctr_push_mount(a, fields, 4, what, err);
}

/* A command, argument or setting as the server gets it: each {connect.NAME}
 * the address its sidecar forwards that destination at (allocated) */
static char *with_connect(const struct ctr_run_spec *spec, const char *text)
{
	return cfg_connect_expand(text, spec->server, spec->connect_hosts, spec->connect_ports);
}

int ctr_server_command(const struct ctr_run_spec *spec, struct strv *cmd, struct mg_err **err)
{
	const struct cfg_server *s = spec->server;
	if (s->command == NULL && spec->image == NULL)
		return mg_err_set(err, "server %s: the command of its image is not known", s->name);
	/* each {connect.NAME} the address its sidecar forwards it at */
	if (s->command != NULL)
		for (size_t i = 0; i < s->ncommand; i++)
			strv_push_owned(cmd, with_connect(spec, s->command[i]));
	else
		for (size_t i = 0; i < spec->image->entrypoint.n; i++)
			strv_push(cmd, spec->image->entrypoint.v[i]);
	if (s->nargs > 0)
		for (size_t i = 0; i < s->nargs; i++)
			strv_push_owned(cmd, with_connect(spec, s->args[i]));
	else if (s->command == NULL)
		for (size_t i = 0; i < spec->image->cmd.n; i++)
			strv_push(cmd, spec->image->cmd.v[i]);
	if (cmd->n == 0) {
		strv_free(cmd);
		return mg_err_set(err,
		                  "server %s: its image %s names no command (no Entrypoint, no "
		                  "Cmd): set command in mcp.toml",
		                  s->name, s->image);
	}
	return 0;
}

/* The server's own command under mcpgate-launch: what the runtime would run
 * (mcp.toml's command, else the image's Entrypoint; the args, else the
 * image's Cmd), spelled out, since --entrypoint drops the image's Cmd */
static int push_launcher(const struct ctr_driver *d, const struct ctr_run_spec *spec,
                         struct strv *a, struct mg_err **err)
{
	const struct cfg_server *s = spec->server;
	if (spec->launcher == NULL)
		return mg_err_set(err, "server %s: no mcpgate-launch to hand it its secret",
		                  s->name);
	struct strv cmd = STRV_INIT;
	if (ctr_server_command(spec, &cmd, err) < 0)
		return -1;
	char id[CTR_ID_LEN + 1];
	if (push_binary_mount(a, spec->launcher, LAUNCH_PATH, err) < 0) {
		strv_free(&cmd);
		return -1;
	}
	strv_push(a, "--entrypoint=" LAUNCH_PATH);
	strv_push(a, ctr_run_ref(d, s->image, id));
	for (size_t i = 0; i < cmd.n; i++)
		strv_push(a, cmd.v[i]);
	strv_free(&cmd);
	return 0;
}

/* --entrypoint=COMMAND: podman reads a value that is a JSON array as the
 * whole command, so there it is always one, of the one string */
static int push_entrypoint(const struct ctr_driver *d, struct strv *a, const char *command,
                           struct mg_err **err)
{
	if (d->kind != CTR_PODMAN) {
		strv_pushf(a, "--entrypoint=%s", command);
		return 0;
	}
	struct mg_buf b = MG_BUF_INIT(1 << 20);
	if (mg_buf_puts(&b, "--entrypoint=[", err) < 0 ||
	    json_quote(command, strlen(command), &b, err) < 0 || mg_buf_putc(&b, ']', err) < 0) {
		mg_buf_free(&b);
		return mg_err_wrap(err, "the command %s", command);
	}
	strv_push_owned(a, mg_buf_steal(&b, NULL));
	return 0;
}

int ctr_cli_run_command(const struct ctr_driver *d, const struct ctr_run_spec *spec,
                        struct strv *argv, struct strv *envp, struct mg_err **err)
{
	const struct cfg_server *s = spec->server;
	if (s->transport != CFG_TRANSPORT_CONTAINER)
		return mg_err_set(err, "server %s is not a container server", s->name);
	if (d->seccomp == NULL)
		return mg_err_set(err, "server %s is not started: %s", s->name,
		                  d->seccomp_error != NULL ? d->seccomp_error
		                                           : "no seccomp profile was prepared");
	if (s->nconnect > 0 && (spec->connect_hosts == NULL || spec->connect_ports == NULL))
		return mg_err_set(err,
		                  "server %s: where its connect destinations are reached is not "
		                  "known (it has no sidecar)",
		                  s->name);
	struct strv a = STRV_INIT, e = STRV_INIT, targets = STRV_INIT;
	const char *user = spec->user != NULL ? spec->user : "65534:65534";

	strv_push(&a, d->path);
	if (push_isolation(d, &a, s->memory, s->pids, user, err) < 0) {
		mg_err_wrap(err, "server %s", s->name);
		goto fail;
	}
	if (spec->network != NULL)
		strv_pushf(&a, "--network=%s", spec->network);
	else
		strv_push(&a, "--network=none");
	/* no IPv6 at all: on its network a link-local address reached the host
	 * (through the bridge's fe80:: address), past the proxy */
	strv_push(&a, "--sysctl=net.ipv6.conf.all.disable_ipv6=1");
	strv_push(&a, "--sysctl=net.ipv6.conf.default.disable_ipv6=1");
	strv_pushf(&a, "--user=%s", user);
	push_home(d, &a, s, user);
	/* a tmpfs home is a place of its own: a VOLUME there needs no cover */
	if (s->nmounts == 0 || !s->mounts[s->nmounts - 1].home)
		strv_push(&targets, CFG_HOME_PATH);
	strv_push(&a, "--name");
	strv_push_owned(&a, ctr_container_name(s->name, spec->session));
	/* the same host name at every start: a server that names its host in a
	 * tool's description (desktop-commander does) would otherwise change
	 * its manifest with every container's random name */
	strv_pushf(&a, "--hostname=%s", s->name);
	ctr_push_labels(&a, spec->session, s->name, spec->owner);

	for (size_t i = 0; i < d->env.n; i++)
		strv_push(&e, d->env.v[i]);
	for (size_t i = 0; i < spec->nenv + spec->nsecrets; i++) {
		bool secret = i >= spec->nenv;
		const struct ctr_env *v = secret ? &spec->secrets[i - spec->nenv] : &spec->env[i];
		if (!v->own && ctr_env_name_reserved(v->name)) {
			mg_err_set(err,
			           "server %s: variable %s would steer the runtime's own command",
			           s->name, v->name);
			goto fail;
		}
		if (secret)
			continue; /* through the launcher, never the runtime */
		/* the value stays in the runtime's environment, never in argv */
		strv_pushf(&a, "--env=%s", v->name);
		cleanup_free char *value =
		    v->own ? xstrdup(v->value) : with_connect(spec, v->value);
		strv_pushf(&e, "%s=%s", v->name, value);
	}

	if (s->nmounts > 0 && (spec->mounts == NULL || spec->mounts->n != s->nmounts)) {
		mg_err_set(err, "server %s: its mounts were not opened", s->name);
		goto fail;
	}
	for (size_t i = 0; i < s->nmounts; i++) {
		/* non-recursive: a mount below the folder never comes along, so
		 * read-only is read-only all the way down */
		bool root = strcmp(s->mounts[i].path, ".") == 0;
		/* the kept home: not executable (podman says so itself; for
		 * docker the staged bind carries noexec) */
		bool home = s->mounts[i].home;
		char *target = home ? xstrdup(CFG_HOME_PATH)
		                    : xasprintf("/workspace%s%s", root ? "" : "/",
		                                root ? "" : s->mounts[i].path);
		strv_push_owned(&targets, target);
		cleanup_free char *source = xasprintf("source=%s", spec->mounts->v[i].host);
		cleanup_free char *dest = xasprintf("target=%s", target);
		cleanup_free char *what =
		    xasprintf("server %s: mount %s", s->name, s->mounts[i].path);
		const char *fields[5] = {"type=bind", source, dest, "bind-nonrecursive"};
		size_t nfields = 4;
		if (home && d->kind == CTR_PODMAN)
			fields[nfields++] = "noexec";
		else if (!home && !s->mounts[i].write)
			fields[nfields++] = "readonly";
		if (ctr_push_mount(&a, fields, nfields, what, err) < 0)
			goto fail;
	}
	/* docker makes a writable volume on the host's disk for each VOLUME of
	 * the image that nothing covers */
	if (ctr_push_volume_covers(d, &a, spec->image, &targets, s->name, err) < 0)
		goto fail;

	char id[CTR_ID_LEN + 1];
	if (spec->nsecrets > 0) {
		if (push_launcher(d, spec, &a, err) < 0)
			goto fail;
	} else {
		if (s->command != NULL) {
			cleanup_free char *entry = with_connect(spec, s->command[0]);
			if (push_entrypoint(d, &a, entry, err) < 0)
				goto fail;
		}
		strv_push(&a, ctr_run_ref(d, s->image, id));
		for (size_t i = 1; i < s->ncommand; i++)
			strv_push_owned(&a, with_connect(spec, s->command[i]));
		for (size_t i = 0; i < s->nargs; i++)
			strv_push_owned(&a, with_connect(spec, s->args[i]));
	}

	strv_free(&targets);
	*argv = a;
	*envp = e;
	return 0;
fail:
	strv_free(&a);
	strv_free(&e);
	strv_free(&targets);
	return -1;
}

/* The proxy needs little: a small memory and process limit of its own */

int ctr_cli_sidecar_command(const struct ctr_driver *d, const struct ctr_sidecar_spec *spec,
                            struct strv *argv, struct strv *envp, struct mg_err **err)
{
	if (d->seccomp == NULL)
		return mg_err_set(err, "the egress sidecar is not started: %s",
		                  d->seccomp_error != NULL ? d->seccomp_error
		                                           : "no seccomp profile was prepared");
	struct strv a = STRV_INIT, e = STRV_INIT;
	strv_push(&a, d->path);
	if (push_isolation(d, &a, SIDECAR_MEMORY, SIDECAR_PIDS, "65534:65534", err) < 0)
		goto fail;
	strv_pushf(&a, "--network=%s", spec->topology->net_out);
	/* where it cannot start on both, it joins net_in after (sidecar_ready) */
	if (ctr_cli_starts_on_networks(d))
		strv_pushf(&a, "--network=%s", spec->topology->net_in);
	strv_push(&a, "--user=65534:65534");
	strv_push(&a, "--name");
	strv_push(&a, spec->topology->sidecar);
	ctr_push_labels(&a, spec->session, spec->server->name, spec->owner);
	if (push_binary_mount(&a, spec->binary, "/mcpgate-egress", err) < 0)
		goto fail;
	/* mcpgate's host side: the sockets it reaches the host's loopback by;
	 * read-only, since connecting to a socket writes nothing to its folder */
	if (spec->connect_dir != NULL &&
	    push_binary_mount(&a, spec->connect_dir, CTR_CONNECT_DIR, err) < 0)
		goto fail;
	/* it runs from the server's image: the same covers of its VOLUMEs */
	if (ctr_push_volume_covers(d, &a, spec->image, NULL, spec->server->name, err) < 0)
		goto fail;
	char id[CTR_ID_LEN + 1];
	strv_push(&a, "--entrypoint=/mcpgate-egress");
	strv_push(&a, ctr_run_ref(d, spec->server->image, id));
	for (size_t i = 0; spec->args[i] != NULL; i++)
		strv_push(&a, spec->args[i]);
	for (size_t i = 0; i < d->env.n; i++)
		strv_push(&e, d->env.v[i]);
	*argv = a;
	*envp = e;
	return 0;
fail:
	strv_free(&a);
	return mg_err_wrap(err, "the egress sidecar of server %s", spec->server->name);
}

void ctr_image_config_free(struct ctr_image_config *c)
{
	strv_free(&c->volumes);
	strv_free(&c->entrypoint);
	strv_free(&c->cmd);
	strv_free(&c->labels);
}

void ctr_image_info_free(struct ctr_image_info *i)
{
	free(i->id);
	free(i->digest);
	strv_free(&i->tags);
	strv_free(&i->digests);
	strv_free(&i->labels);
	memset(i, 0, sizeof(*i));
}

void ctr_images_free(struct ctr_images *l)
{
	for (size_t i = 0; i < l->n; i++)
		ctr_image_info_free(&l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

const char *ctr_image_label(const struct ctr_image_info *i, const char *key)
{
	for (size_t k = 0; k + 1 < i->labels.n; k += 2)
		if (strcmp(i->labels.v[k], key) == 0)
			return i->labels.v[k + 1];
	return NULL;
}

bool ctr_image_is(const struct ctr_driver *d, const struct ctr_image_info *i, const char *image)
{
	const char *at = strstr(image, "@sha256:");
	if (at == NULL)
		return false;
	const char *digest = at + 1;
	if (i->digest != NULL && strcmp(i->digest, digest) == 0)
		return true;
	for (size_t k = 0; k < i->digests.n; k++) {
		const char *d_at = strstr(i->digests.v[k], "@sha256:");
		if (d_at != NULL && strcmp(d_at + 1, digest) == 0)
			return true;
	}
	char id[CTR_ID_LEN + 1];
	return ctr_local_image_id(d, image, id) != NULL && strcmp(id, i->id) == 0;
}

/* ---- the launcher's block (launch/launch.h) ----------------------------- */

char *ctr_launch_block(const struct ctr_env *vars, size_t n, size_t *len, struct mg_err **err)
{
	size_t body = 0;
	for (size_t i = 0; i < n; i++) {
		if (!cfg_env_name_valid(vars[i].name))
			return mg_err_set(err, "%s is not a variable's name", vars[i].name), NULL;
		body += strlen(vars[i].name) + 1 + strlen(vars[i].value) + 1;
	}
	if (body == 0 || body > LAUNCH_BLOCK_MAX)
		return mg_err_set(err, "the variables for mcpgate-launch take %zu bytes (1 to %u)",
		                  body, LAUNCH_BLOCK_MAX),
		       NULL;
	char head[LAUNCH_HEAD_MAX];
	int h = snprintf(head, sizeof(head), LAUNCH_MAGIC "%zu\n", body);
	if (h < 0 || (size_t)h >= sizeof(head))
		return mg_err_set(err, "the header for mcpgate-launch does not fit"), NULL;
	char *block = sodium_init() >= 0 ? sodium_malloc((size_t)h + body) : NULL;
	if (block == NULL)
		return mg_err_set(err, "no locked memory for a secret"), NULL;
	memcpy(block, head, (size_t)h);
	size_t off = (size_t)h;
	for (size_t i = 0; i < n; i++) {
		size_t nl = strlen(vars[i].name), vl = strlen(vars[i].value);
		memcpy(block + off, vars[i].name, nl);
		block[off + nl] = '=';
		memcpy(block + off + nl + 1, vars[i].value, vl);
		block[off + nl + 1 + vl] = '\0';
		off += nl + vl + 2;
	}
	*len = off;
	return block;
}

void ctr_launch_block_free(char *block, size_t len)
{
	if (block == NULL)
		return;
	sodium_memzero(block, len);
	sodium_free(block);
}

/* ---- images mcpgate made, on docker --------------------------------------- */

const char *ctr_local_image_id(const struct ctr_driver *d, const char *image,
                               char id[CTR_ID_LEN + 1])
{
	const char *at = strstr(image, "@sha256:");
	/* a swarm's manager is a docker: mcpgate add loads there too */
	if ((d->kind != CTR_DOCKER && d->kind != CTR_SWARM) || d->images_dir == NULL ||
	    at == NULL || strlen(at + 8) != 64)
		return NULL;
	cleanup_free char *path = xasprintf("%s/sha256-%s.manifest", d->images_dir, at + 8);
	cleanup_free char *text = NULL;
	size_t len = 0;
	if (mg_read_file(path, 1 << 20, &text, &len, NULL) < 0)
		return NULL;
	unsigned char sum[crypto_hash_sha256_BYTES];
	char hex[65];
	crypto_hash_sha256(sum, (const unsigned char *)text, len);
	sodium_bin2hex(hex, sizeof(hex), sum, sizeof(sum));
	if (strcmp(hex, at + 8) != 0)
		return NULL; /* not the manifest the pin names */
	struct json_value *m = NULL;
	if (json_parse(text, len, NULL, &m, NULL) < 0)
		return NULL;
	const struct json_value *config = json_get(m, "config");
	const char *digest = config != NULL ? json_get_string(config, "digest") : NULL;
	const char *r = NULL;
	if (digest != NULL && strlen(digest) == CTR_ID_LEN && strncmp(digest, "sha256:", 7) == 0 &&
	    strspn(digest + 7, "0123456789abcdef") == 64) {
		memcpy(id, digest, CTR_ID_LEN + 1);
		r = id;
	}
	json_free(m);
	return r;
}

const char *ctr_run_ref(const struct ctr_driver *d, const char *image, char id[CTR_ID_LEN + 1])
{
	const char *local = ctr_local_image_id(d, image, id);
	return local != NULL ? local : image;
}
