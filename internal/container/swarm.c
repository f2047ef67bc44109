/* The swarm driver (docs/2026-12-02-swarm.md): each contained server a
 * one-task service on a Docker swarm, reached through the manager's engine
 * (DOCKER_HOST, the docker command). What a manager's engine answers like any
 * docker's is the CLI table's: the image on the manager (pulled by digest
 * from the registry the swarm reaches), the platform, the topology's networks
 * (overlays here, ctr_cli_network_create) and the sidecar's container. Its
 * own: the run command, which is mcpgate's helper (`mcpgate __swarm-run`,
 * swarm_run.c), the removal of a server's service, secrets and network, and
 * the sweep of services and secrets. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal/base/cleanup.h"
#include "internal/base/log.h"
#include "internal/base/xalloc.h"
#include "internal/container/container-internal.h"
#include "internal/container/swarm.h"

static int sw_platform(const struct ctr_driver *d, struct ctr_platform *out, struct mg_err **err)
{
	return ctr_cli_ops.platform(d, out, err);
}

bool ctr_swarm_in_registry(const struct ctr_driver *d, const char *image)
{
	size_t n = d->registry != NULL ? strlen(d->registry) : 0;
	return n > 0 && strncmp(image, d->registry, n) == 0 && image[n] == '/';
}

#define NO_REGISTRY                                                                       \
	"runtime \"swarm\" needs the registry its nodes pull from: set swarm_registry = " \
	"\"HOST:PORT\" in config.toml's [mcp]"

/* 0 when every node can pull image, else why not and the fix: the reason
 * the gateway gives begins with the server's name */
static int registry_check(const struct ctr_driver *d, const char *image, struct mg_err **err)
{
	if (d->registry == NULL)
		return mg_err_set(err,
		                  NO_REGISTRY ", then `mcpgate pull` of this server pushes its "
		                              "image there");
	if (ctr_swarm_in_registry(d, image))
		return 0;
	return mg_err_set(err,
	                  "its image %s is not in the swarm's registry %s (swarm_registry in "
	                  "config.toml), which every node pulls from: `mcpgate pull` of this "
	                  "server pushes it there and pins its entry to the digest there",
	                  image, d->registry);
}

/* on the manager; an image no node could pull is not present for the swarm */
static int sw_image_present(const struct ctr_driver *d, const char *image, struct mg_err **err)
{
	if (registry_check(d, image, err) < 0)
		return -1;
	return ctr_cli_ops.image_present(d, image, err);
}

/* REGISTRY/PATH for image NAME@DIGEST: NAME less the registry it names, if
 * any (a first part with a dot or a colon, or localhost) */
static char *registry_repo(const struct ctr_driver *d, const char *image, const char *at)
{
	const char *name = image;
	const char *slash = memchr(image, '/', (size_t)(at - image));
	if (slash != NULL) {
		size_t n = (size_t)(slash - image);
		if (memchr(image, '.', n) != NULL || memchr(image, ':', n) != NULL ||
		    (n == 9 && strncmp(image, "localhost", 9) == 0))
			name = slash + 1;
	}
	return xasprintf("%s/%.*s", d->registry, (int)(at - name), name);
}

/* the digest the registry gave ref's image under repo, from the manager's record */
static int pushed_digest(const struct ctr_driver *d, const char *ref, const char *repo,
                         char **digest, struct mg_err **err)
{
	const char *args[] = {"image",    "inspect",
	                      "--format", "{{range .RepoDigests}}{{println .}}{{end}}",
	                      ref,        NULL};
	struct proc_result res;
	if (ctr_cli_run_in(d, "image inspect", args, -1, &res, err) < 0)
		return -1;
	size_t n = strlen(repo);
	for (char *line = res.out.data; line != NULL && *line != '\0';) {
		char *nl = strchr(line, '\n');
		if (nl != NULL)
			*nl = '\0';
		if (strncmp(line, repo, n) == 0 && strncmp(line + n, "@sha256:", 8) == 0 &&
		    strlen(line + n + 1) == CTR_ID_LEN) {
			*digest = xstrdup(line + n + 1);
			proc_result_free(&res);
			return 0;
		}
		line = nl != NULL ? nl + 1 : NULL;
	}
	proc_result_free(&res);
	return mg_err_set(err, "%s: the manager keeps no digest of %s after the push", ref, repo);
}

int ctr_swarm_publish(const struct ctr_driver *d, const char *image, char **pinned,
                      struct mg_err **err)
{
	*pinned = NULL;
	if (d->registry == NULL)
		return mg_err_set(err, NO_REGISTRY);
	const char *at = strstr(image, "@sha256:");
	if (at == NULL || strlen(at + 1) != CTR_ID_LEN)
		return mg_err_set(err, "image %s is not pinned by digest", image);
	if (ctr_swarm_in_registry(d, image)) {
		if (ctr_cli_transfer(d, "pull", image, err) < 0)
			return mg_err_wrap(err, "the swarm's registry %s does not give it",
			                   d->registry);
		return 0;
	}
	int present = ctr_cli_ops.image_present(d, image, err);
	if (present < 0)
		return -1;
	/* one mcpgate made (add, pack) is kept as an archive by its digest;
	 * no registry serves localhost/ */
	cleanup_free char *kept =
	    d->images_dir != NULL ? xasprintf("%s/sha256-%s.tar", d->images_dir, at + 8) : NULL;
	if (present == 0 && strncmp(image, "localhost/", 10) == 0) {
		if (kept == NULL || access(kept, R_OK) != 0)
			return mg_err_set(err,
			                  "image %s is not on the manager, and no archive of it is "
			                  "kept (%s): make it again (mcpgate add)",
			                  image, kept != NULL ? kept : "no data folder");
		if (ctr_cli_ops.load(d, kept, err) < 0)
			return mg_err_wrap(err, "loading %s into the manager", kept);
	} else if (present == 0 && ctr_cli_transfer(d, "pull", image, err) < 0)
		return mg_err_wrap(err, "the manager fetching it from where it names");
	cleanup_free char *repo = registry_repo(d, image, at);
	cleanup_free char *tag = xasprintf("%s:mcpgate-%.12s", repo, at + 8);
	/* docker keeps no digest of an image it loaded: its ID then */
	char id[CTR_ID_LEN + 1];
	const char *tag_args[] = {"tag", ctr_run_ref(d, image, id), tag, NULL};
	struct proc_result res;
	if (ctr_cli_run_in(d, "tag", tag_args, -1, &res, err) < 0)
		return -1;
	proc_result_free(&res);
	cleanup_free char *digest = NULL;
	int r = ctr_cli_transfer(d, "push", tag, err);
	if (r == 0)
		r = pushed_digest(d, tag, repo, &digest, err);
	/* the tag was the push's means only (its removal takes the repository's
	 * digest on the manager with it: the pull below gives it back) */
	const char *untag[] = {"rmi", tag, NULL};
	if (ctr_cli_run_in(d, "rmi", untag, -1, &res, NULL) == 0)
		proc_result_free(&res);
	if (r < 0)
		return -1;
	char *ref = xasprintf("%s@%s", repo, digest);
	/* from the registry by digest: what every node will do */
	if (ctr_cli_transfer(d, "pull", ref, err) < 0) {
		free(ref);
		return mg_err_wrap(err, "pulling it back from the swarm's registry");
	}
	*pinned = ref;
	return 0;
}

/* the helper needs the image's command always: the task's entrypoint is
 * the launcher, which then runs it */
static int sw_image_config(const struct ctr_driver *d, const char *image, bool command,
                           struct ctr_image_config *out, struct mg_err **err)
{
	(void)command;
	if (registry_check(d, image, err) < 0)
		return -1;
	return ctr_cli_ops.image_config(d, image, true, out, err);
}

static int sw_pull(const struct ctr_driver *d, const char *image, struct mg_err **err)
{
	return ctr_cli_ops.pull(d, image, err);
}

/* into the manager, from where ctr_swarm_publish pushes it to the registry */
static int sw_load(const struct ctr_driver *d, const char *archive, struct mg_err **err)
{
	return ctr_cli_ops.load(d, archive, err);
}

char *ctr_swarm_self_path(void)
{
	char buf[4096];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	return xstrdup(buf);
}

/* one task the helper places: a server's, or its proxy's */
struct helper_task {
	const char *name, *server, *session;
	pid_t owner;
	const char *user; /* NULL: 65534:65534 */
	unsigned long long memory;
	unsigned pids;
	const char *launcher;
};

/* `mcpgate __swarm-run` and what every task it places has: its name and
 * labels, the server's image, its user and limits, the launcher, the
 * profile (swarm_run.c reads them) */
static void helper_argv(const struct ctr_driver *d, const char *self, const struct cfg_server *s,
                        const struct helper_task *t, struct strv *a)
{
	strv_push(a, self);
	strv_push(a, "__swarm-run");
	strv_push(a, "--docker");
	strv_push(a, d->path);
	strv_push(a, "--name");
	strv_push(a, t->name);
	strv_push(a, "--server");
	strv_push(a, t->server);
	strv_push(a, "--session");
	strv_push(a, t->session);
	strv_push(a, "--pid");
	strv_pushf(a, "%d", (int)t->owner);
	strv_push(a, "--image");
	strv_push(a, s->image);
	strv_push(a, "--user");
	strv_push(a, t->user != NULL ? t->user : "65534:65534");
	strv_push(a, "--memory");
	strv_pushf(a, "%llu", t->memory);
	strv_push(a, "--pids");
	strv_pushf(a, "%u", t->pids);
	strv_push(a, "--launcher");
	strv_push(a, t->launcher);
	strv_push(a, "--seccomp");
	strv_push(a, d->seccomp);
}

static int sw_run_command(const struct ctr_driver *d, const struct ctr_run_spec *spec,
                          struct strv *argv, struct strv *envp, struct mg_err **err)
{
	const struct cfg_server *s = spec->server;
	if (s->transport != CFG_TRANSPORT_CONTAINER)
		return mg_err_set(err, "server %s is not a container server", s->name);
	if (registry_check(d, s->image, err) < 0)
		return -1;
	if (d->seccomp == NULL)
		return mg_err_set(err, "server %s is not started: %s", s->name,
		                  d->seccomp_error != NULL ? d->seccomp_error
		                                           : "no seccomp profile was prepared");
	if (s->nmounts > 0)
		return mg_err_set(err,
		                  "server %s: mounts are not possible on runtime \"swarm\" (the "
		                  "workspace is not on the swarm's nodes)",
		                  s->name);
	if (spec->launcher == NULL)
		return mg_err_set(err,
		                  "server %s: no mcpgate-launch, which its task runs as entrypoint",
		                  s->name);
	cleanup_free char *self = ctr_swarm_self_path();
	if (self == NULL)
		return mg_err_set(err, "server %s: cannot find mcpgate's own path", s->name);
	struct strv cmd = STRV_INIT;
	if (ctr_server_command(spec, &cmd, err) < 0)
		return -1;
	struct strv a = STRV_INIT, e = STRV_INIT;
	cleanup_free char *name = ctr_container_name(s->name, spec->session);
	const struct helper_task task = {.name = name,
	                                 .server = s->name,
	                                 .session = spec->session,
	                                 .owner = spec->owner,
	                                 .user = spec->user,
	                                 .memory = s->memory,
	                                 .pids = s->pids,
	                                 .launcher = spec->launcher};
	helper_argv(d, self, s, &task, &a);
	strv_push(&a, "--network");
	strv_push(&a, spec->network != NULL ? spec->network : "-");
	if (spec->nsecrets > 0)
		strv_push(&a, "--secrets");
	for (size_t i = 0; i < d->env.n; i++)
		strv_push(&e, d->env.v[i]);
	for (size_t i = 0; i < spec->nenv; i++) {
		const struct ctr_env *v = &spec->env[i];
		if (!v->own && ctr_env_name_reserved(v->name)) {
			mg_err_set(err,
			           "server %s: variable %s would steer the runtime's own command",
			           s->name, v->name);
			strv_free(&a);
			strv_free(&e);
			strv_free(&cmd);
			return -1;
		}
		/* the value in the helper's environment, which docker reads */
		strv_push(&a, "--env");
		strv_push(&a, v->name);
		strv_pushf(&e, "%s=%s", v->name, v->value);
	}
	strv_push(&a, "--");
	for (size_t i = 0; i < cmd.n; i++)
		strv_push(&a, cmd.v[i]);
	strv_free(&cmd);
	*argv = a;
	*envp = e;
	return 0;
}

/* The egress proxy as a service of its own, on the outer overlay and then
 * the inner one, placed and carried as a server is (mcpgate __swarm-run):
 * its records reach the gateway on the launcher's frames, as its stdout */
static int sw_sidecar_command(const struct ctr_driver *d, const struct ctr_sidecar_spec *spec,
                              struct strv *argv, struct strv *envp, struct mg_err **err)
{
	const struct cfg_server *s = spec->server;
	const struct ctr_topology *t = spec->topology;
	if (registry_check(d, s->image, err) < 0)
		return mg_err_wrap(err, "the egress proxy of server %s runs from its image",
		                   s->name);
	if (d->seccomp == NULL)
		return mg_err_set(err, "the egress proxy of server %s is not started: %s", s->name,
		                  d->seccomp_error != NULL ? d->seccomp_error
		                                           : "no seccomp profile was prepared");
	if (spec->connect_dir != NULL || t->join.n > 0)
		return mg_err_set(err,
		                  "server %s: connect to the gateway's loopback or to a network of "
		                  "the person's is not possible on runtime \"swarm\" (its proxy "
		                  "runs on another node)",
		                  s->name);
	if (spec->launcher == NULL)
		return mg_err_set(err, "the egress proxy of server %s: no mcpgate-launch", s->name);
	cleanup_free char *self = ctr_swarm_self_path();
	if (self == NULL)
		return mg_err_set(err, "server %s: cannot find mcpgate's own path", s->name);
	struct strv a = STRV_INIT, e = STRV_INIT;
	const struct helper_task task = {.name = t->sidecar,
	                                 .server = s->name,
	                                 .session = spec->session,
	                                 .owner = spec->owner,
	                                 .memory = SIDECAR_MEMORY,
	                                 .pids = SIDECAR_PIDS,
	                                 .launcher = spec->launcher};
	helper_argv(d, self, s, &task, &a);
	strv_push(&a, "--network");
	strv_push(&a, t->net_out);
	strv_push(&a, "--network");
	strv_push(&a, t->net_in);
	strv_push(&a, "--bind");
	strv_pushf(&a, "%s:/mcpgate-egress", spec->binary);
	/* listening once its task runs: sidecar_ready says so then */
	strv_push(&a, "--early");
	strv_push(&a, "--");
	strv_push(&a, "/mcpgate-egress");
	for (size_t i = 0; spec->args[i] != NULL; i++)
		strv_push(&a, spec->args[i]);
	for (size_t i = 0; i < d->env.n; i++)
		strv_push(&e, d->env.v[i]);
	*argv = a;
	*envp = e;
	return 0;
}

/* the proxy task's address on the inner overlay, from the manager's record
 * of the task (its node's engine is not asked) */
static int sw_sidecar_ready(const struct ctr_driver *d, struct ctr_topology *t, char **address,
                            struct mg_err **err)
{
	*address = NULL;
	const char *ps[] = {"service",  "ps", "-q", "--filter", "desired-state=running",
	                    t->sidecar, NULL};
	struct proc_result res;
	if (ctr_cli_run_in(d, "service ps", ps, -1, &res, err) < 0)
		return -1;
	char task[128] = "";
	sscanf(mg_buf_str(&res.out), "%127s", task);
	proc_result_free(&res);
	if (task[0] == '\0')
		return mg_err_set(err, "the egress proxy's task %s is not running yet", t->sidecar);
	const char *fmt = "{{range .NetworksAttachments}}{{.Network.Spec.Name}}={{range "
	                  ".Addresses}}{{.}} {{end}}{{println}}{{end}}";
	const char *insp[] = {"inspect", "--type", "task", "--format", fmt, task, NULL};
	if (ctr_cli_run_in(d, "inspect", insp, -1, &res, err) < 0)
		return -1;
	size_t n = strlen(t->net_in);
	for (char *line = res.out.data; line != NULL && *line != '\0' && *address == NULL;) {
		char *nl = strchr(line, '\n');
		if (nl != NULL)
			*nl = '\0';
		if (strncmp(line, t->net_in, n) == 0 && line[n] == '=') {
			size_t len = strcspn(line + n + 1, "/ ");
			if (len > 0 && len < 46)
				*address = xasprintf("%.*s", (int)len, line + n + 1);
		}
		line = nl != NULL ? nl + 1 : NULL;
	}
	proc_result_free(&res);
	if (*address == NULL)
		return mg_err_set(err, "the egress proxy's task has no address on %s yet",
		                  t->net_in);
	return 0;
}

/* the proxy's service, then the overlays, each tried again while the
 * tasks' endpoints leave them */
static int sw_topology_remove(const struct ctr_driver *d, struct ctr_topology *t,
                              struct mg_err **err)
{
	int r = 0;
	if (t->sidecar != NULL && ctr_swarm_remove_server(d, t->sidecar, false, err) < 0)
		r = -1;
	char **nets[] = {&t->net_in, &t->net_out};
	for (size_t i = 0; i < 2; i++) {
		if (*nets[i] == NULL)
			continue;
		for (int k = 0; k < 40; k++) {
			struct mg_err *e = NULL;
			if (ctr_cli_network_remove(d, *nets[i], &e) == 0)
				break;
			if (k == 39) {
				if (r == 0)
					mg_err_set(err, "%s", mg_err_msg(e));
				r = -1;
			}
			mg_err_free(e);
			usleep(250 * 1000);
		}
	}
	free(t->sidecar);
	t->sidecar = NULL;
	free(t->net_in);
	t->net_in = NULL;
	free(t->net_out);
	t->net_out = NULL;
	return r;
}

/* docker ARGS..., where absent is fine: "not found" is not an error */
static int run_absent_ok(const struct ctr_driver *d, const char *what, const char *const *args,
                         struct mg_err **err)
{
	struct proc_result res;
	struct mg_err *e = NULL;
	if (ctr_cli_run_in(d, what, args, -1, &res, &e) == 0) {
		proc_result_free(&res);
		return 0;
	}
	const char *m = mg_err_msg(e);
	int r = 0;
	if (strstr(m, "not found") == NULL && strstr(m, "No such") == NULL &&
	    strstr(m, "no such") == NULL) {
		mg_err_set(err, "%s", m);
		r = -1;
	}
	mg_err_free(e);
	return r;
}

int ctr_swarm_remove_server(const struct ctr_driver *d, const char *name, bool network,
                            struct mg_err **err)
{
	int r = 0;
	const char *svc[] = {"service", "rm", name, NULL};
	if (run_absent_ok(d, "service rm", svc, err) < 0)
		r = -1;
	cleanup_free char *tok = xasprintf("%s%s", name, CTR_SWARM_TOKEN_SUFFIX);
	cleanup_free char *env = xasprintf("%s%s", name, CTR_SWARM_ENV_SUFFIX);
	cleanup_free char *relay = xasprintf("%s%s", name, CTR_SWARM_RELAY_SUFFIX);
	const char *sec1[] = {"secret", "rm", tok, NULL};
	const char *sec2[] = {"secret", "rm", env, NULL};
	if (run_absent_ok(d, "secret rm", sec1, r < 0 ? NULL : err) < 0)
		r = -1;
	if (run_absent_ok(d, "secret rm", sec2, r < 0 ? NULL : err) < 0)
		r = -1;
	if (ctr_cli_remove(d, relay, r < 0 ? NULL : err) < 0)
		r = -1;
	if (!network)
		return r;
	/* the task's endpoint leaves the network a little after the service */
	cleanup_free char *net = xasprintf("%s%s", name, CTR_SWARM_NET_SUFFIX);
	const char *nrm[] = {"network", "rm", net, NULL};
	for (int i = 0; i < 40; i++) {
		struct mg_err *e = NULL;
		if (run_absent_ok(d, "network rm", nrm, &e) == 0)
			return r;
		if (i == 39) {
			if (r == 0)
				mg_err_set(err, "%s", mg_err_msg(e));
			mg_err_free(e);
			return -1;
		}
		mg_err_free(e);
		usleep(250 * 1000);
	}
	return r;
}

/* a server's service, secrets, relay and own network; or a sidecar's
 * container: whatever of name is there */
static int sw_remove(const struct ctr_driver *d, const char *name, struct mg_err **err)
{
	int r = ctr_swarm_remove_server(d, name, true, err);
	if (ctr_cli_remove(d, name, r < 0 ? NULL : err) < 0)
		r = -1;
	return r;
}

/* IDs of kind ("service", "secret") with an owner label, with that label:
 * "ID<TAB>OWNER" lines */
static int list_owned(const struct ctr_driver *d, const char *kind, struct proc_result *res,
                      struct mg_err **err)
{
	/* services and secrets both keep their labels in Spec */
	const char *fmt = "{{.ID}}\t{{index .Spec.Labels \"" CTR_LABEL_OWNER "\"}}";
	const char *ls[] = {kind, "ls", "-q", "--filter", "label=" CTR_LABEL_PID, NULL};
	struct proc_result ids;
	if (ctr_cli_run_in(d, "ls", ls, -1, &ids, err) < 0)
		return mg_err_wrap(err, "%s ls", kind);
	struct strv args = STRV_INIT;
	strv_push(&args, kind);
	strv_push(&args, "inspect");
	strv_push(&args, "--format");
	strv_push(&args, fmt);
	size_t n = args.n;
	for (char *p = ids.out.data; p != NULL && *p != '\0';) {
		char *nl = strchr(p, '\n');
		if (nl != NULL)
			*nl = '\0';
		if (*p != '\0')
			strv_push(&args, p);
		p = nl != NULL ? nl + 1 : NULL;
	}
	proc_result_free(&ids);
	if (args.n == n) {
		strv_free(&args);
		*res = (struct proc_result){0};
		mg_buf_init(&res->out, 1);
		mg_buf_init(&res->err, 1);
		return 0;
	}
	int r = ctr_cli_run_in(d, "inspect", (const char *const *)strv_array(&args), -1, res, err);
	strv_free(&args);
	return r;
}

static int sweep_kind(const struct ctr_driver *d, const char *kind, unsigned *removed,
                      unsigned *left, struct mg_err **err)
{
	struct proc_result res;
	if (list_owned(d, kind, &res, err) < 0)
		return -1;
	int r = 0;
	for (char *line = res.out.data; line != NULL && *line != '\0';) {
		char *nl = strchr(line, '\n');
		if (nl != NULL)
			*nl = '\0';
		char *tab = strchr(line, '\t');
		if (tab != NULL && ctr_owner_dead(tab + 1, left)) {
			*tab = '\0';
			const char *rm[] = {kind, "rm", line, NULL};
			if (run_absent_ok(d, "rm", rm, r < 0 ? NULL : err) < 0)
				r = -1;
			else
				(*removed)++;
		}
		line = nl != NULL ? nl + 1 : NULL;
	}
	proc_result_free(&res);
	return r;
}

/* services first (their tasks hold the secrets and networks), then the
 * secrets, then the CLI's sweep of containers (relays, sidecars) and
 * networks, tried again while tasks leave the networks */
static int sw_sweep(const struct ctr_driver *d, unsigned *removed, struct mg_err **err)
{
	*removed = 0;
	unsigned left = 0;
	if (sweep_kind(d, "service", removed, &left, err) < 0)
		return mg_err_wrap(err, "sweeping services");
	if (sweep_kind(d, "secret", removed, &left, err) < 0)
		return mg_err_wrap(err, "sweeping secrets");
	if (left > 0)
		mg_info("sweep: left %u service(s) and secret(s) whose owner it cannot judge",
		        left);
	for (int i = 0;; i++) {
		unsigned more = 0;
		struct mg_err *e = NULL;
		if (ctr_cli_sweep(d, &more, &e) == 0) {
			*removed += more;
			return 0;
		}
		*removed += more;
		if (i == 40) {
			mg_err_set(err, "%s", mg_err_msg(e));
			mg_err_free(e);
			return -1;
		}
		mg_err_free(e);
		usleep(250 * 1000);
	}
}

const struct ctr_ops ctr_swarm_ops = {
    .platform = sw_platform,
    .run_command = sw_run_command,
    .topology_create = ctr_cli_topology_create,
    .sidecar_command = sw_sidecar_command,
    .sidecar_ready = sw_sidecar_ready,
    .topology_remove = sw_topology_remove,
    .image_present = sw_image_present,
    .image_config = sw_image_config,
    .image_list = ctr_cli_image_list,
    .image_remove = ctr_cli_image_remove,
    .pull = sw_pull,
    .load = sw_load,
    .remove = sw_remove,
    .sweep = sw_sweep,
};
