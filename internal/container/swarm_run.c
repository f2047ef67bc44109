/* `mcpgate __swarm-run`: one contained server on a swarm, as the gateway's
 * child whose stdin and stdout are the server's (docs/2026-12-02-swarm.md).
 *
 *   1. the secret variables' block, when --secrets, from stdin (exactly it)
 *   2. a token; the swarm secrets NAME-tok (and NAME-env, the block)
 *   3. NAME-net, an internal overlay, when the server has no egress network
 *   4. the service NAME: one task, hardened, on a node labelled mcpgate,
 *      mcpgate-launch --listen as entrypoint, the secrets as tmpfs files
 *   5. its task running (or why not, naming the node)
 *   6. the relay on the manager: docker run -i of mcpgate-launch --connect on
 *      the same network; the token on its stdin, then ours
 *   7. when the relay ends, or on SIGTERM/SIGINT/SIGHUP: service, secrets,
 *      network removed; the relay's status is ours
 * The relay's stdout and stderr are ours, unchanged: the gateway reads MCP
 * and the launcher's refusal there. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <poll.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal/base/cleanup.h"
#include "internal/base/num.h"
#include "internal/base/xalloc.h"
#include "internal/container/container-internal.h"
#include "internal/container/swarm.h"
#include "launch/launch.h"

extern char **environ;

/* how long a task may take to run (the first pull on a node included) */
#define TASK_WAIT_MS 120000

struct run_opts {
	const char *docker, *name, *server, *session, *image, *user;
	const char *launcher, *seccomp, *memory, *pids;
	/* read-only file SRC:DEST beside the launcher (the egress proxy), or NULL */
	const char *bind;
	pid_t owner;
	bool secrets;
	bool early;      /* mcpgate-launch --listen-early: the command starts before its peer */
	struct strv env; /* names */
	struct strv networks; /* the service's, in order; the last the relay's */
	char **cmd;
	int ncmd;
};

static int parse(int argc, char **argv, struct run_opts *o, struct mg_err **err)
{
	*o = (struct run_opts){.env = STRV_INIT, .networks = STRV_INIT};
	int i = 1;
	for (; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (strcmp(a, "--secrets") == 0) {
			o->secrets = true;
			continue;
		}
		if (strcmp(a, "--early") == 0) {
			o->early = true;
			continue;
		}
		if (i + 1 >= argc)
			return mg_err_set(err, "%s needs a value", a);
		const char *v = argv[++i];
		if (strcmp(a, "--docker") == 0)
			o->docker = v;
		else if (strcmp(a, "--name") == 0)
			o->name = v;
		else if (strcmp(a, "--server") == 0)
			o->server = v;
		else if (strcmp(a, "--session") == 0)
			o->session = v;
		else if (strcmp(a, "--image") == 0)
			o->image = v;
		else if (strcmp(a, "--user") == 0)
			o->user = v;
		else if (strcmp(a, "--network") == 0)
			strv_push(&o->networks, v);
		else if (strcmp(a, "--bind") == 0)
			o->bind = v;
		else if (strcmp(a, "--launcher") == 0)
			o->launcher = v;
		else if (strcmp(a, "--seccomp") == 0)
			o->seccomp = v;
		else if (strcmp(a, "--memory") == 0)
			o->memory = v;
		else if (strcmp(a, "--pids") == 0)
			o->pids = v;
		else if (strcmp(a, "--pid") == 0) {
			uint64_t pid = 0;
			if (mg_parse_u64(v, 1, INT32_MAX, "--pid", &pid, err) < 0)
				return -1;
			o->owner = (pid_t)pid;
		} else if (strcmp(a, "--env") == 0)
			strv_push(&o->env, v);
		else
			return mg_err_set(err, "unknown option %s", a);
	}
	o->cmd = argv + i;
	o->ncmd = argc - i;
	if (o->docker == NULL || o->name == NULL || o->server == NULL || o->session == NULL ||
	    o->image == NULL || o->user == NULL || o->networks.n == 0 || o->launcher == NULL ||
	    o->seccomp == NULL || o->memory == NULL || o->pids == NULL || o->owner <= 0 ||
	    o->ncmd < 1)
		return mg_err_set(err, "missing options (this is mcpgate's own helper)");
	if (strchr(o->launcher, ',') != NULL)
		return mg_err_set(err, "the path of mcpgate-launch %s holds a comma", o->launcher);
	if (o->bind != NULL && (strchr(o->bind, ',') != NULL || strchr(o->bind, ':') == NULL))
		return mg_err_set(err, "--bind %s is not SRC:DEST without a comma", o->bind);
	return 0;
}

/* exactly the block mcpgate-launch reads (launch.h), header included, from
 * fd 0: nothing past it is taken, that is MCP */
static int read_block(struct mg_buf *out, struct mg_err **err)
{
	char head[LAUNCH_HEAD_MAX];
	size_t n = 0;
	for (;;) {
		if (n == sizeof(head) - 1)
			return mg_err_set(err, "the header of the secret's block is too long");
		ssize_t r = read(STDIN_FILENO, head + n, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return mg_err_set(err, "standard input ended before the secret's block");
		if (head[n++] == '\n')
			break;
	}
	size_t m = strlen(LAUNCH_MAGIC);
	if (n <= m || strncmp(head, LAUNCH_MAGIC, m) != 0)
		return mg_err_set(err, "standard input does not begin with the secret's block");
	size_t len = 0;
	for (size_t i = m; i < n - 1; i++) {
		if (head[i] < '0' || head[i] > '9' || len > LAUNCH_BLOCK_MAX)
			return mg_err_set(err, "the length of the secret's block is not a number");
		len = len * 10 + (size_t)(head[i] - '0');
	}
	if (len == 0 || len > LAUNCH_BLOCK_MAX)
		return mg_err_set(err, "the secret's block has a bad length");
	if (mg_buf_append(out, head, n, err) < 0)
		return -1;
	char buf[4096];
	while (len > 0) {
		ssize_t r = read(STDIN_FILENO, buf, len < sizeof(buf) ? len : sizeof(buf));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return mg_err_set(err, "standard input ended inside the secret's block");
		if (mg_buf_append(out, buf, (size_t)r, err) < 0)
			return -1;
		len -= (size_t)r;
	}
	sodium_memzero(buf, sizeof(buf));
	return 0;
}

/* a swarm secret NAME holding value, labelled like the service; the value
 * reaches docker on its stdin from memory, never a file on disk or argv */
static int secret_create(const struct ctr_driver *d, const struct run_opts *o, const char *name,
                         const void *value, size_t len, struct mg_err **err)
{
	cleanup_close int fd = memfd_create("mcpgate-secret", MFD_CLOEXEC);
	if (fd < 0)
		return mg_err_set(err, "memfd_create: %s", strerror(errno));
	if (proc_write_all(fd, value, len, proc_now_ms() + 10000, err) < 0 ||
	    lseek(fd, 0, SEEK_SET) < 0)
		return mg_err_wrap(err, "secret %s", name);
	struct strv a = STRV_INIT;
	strv_push(&a, "secret");
	strv_push(&a, "create");
	ctr_push_labels(&a, o->session, o->server, o->owner);
	strv_push(&a, name);
	strv_push(&a, "-");
	struct proc_result res;
	int r =
	    ctr_cli_run_in(d, "secret create", (const char *const *)strv_array(&a), fd, &res, err);
	strv_free(&a);
	if (r == 0)
		proc_result_free(&res);
	return r;
}

static int network_create(const struct ctr_driver *d, const struct run_opts *o, const char *name,
                          struct mg_err **err)
{
	return ctr_cli_network_create(d, name, true, o->session, o->server, o->owner, err);
}

static int service_create(const struct ctr_driver *d, const struct run_opts *o,
                          const struct strv *nets, struct mg_err **err)
{
	struct strv a = STRV_INIT;
	strv_push(&a, "service");
	strv_push(&a, "create");
	strv_push(&a, "--quiet");
	strv_push(&a, "--detach");
	strv_push(&a, "--name");
	strv_push(&a, o->name);
	ctr_push_labels(&a, o->session, o->server, o->owner);
	/* one task, never restarted, never published (dnsrr: no VIP) */
	strv_push(&a, "--replicas=1");
	strv_push(&a, "--restart-condition=none");
	strv_push(&a, "--endpoint-mode=dnsrr");
	strv_push(&a, "--constraint=node.labels.mcpgate==true");
	/* the node's name, for the launcher's refusal */
	strv_push(&a, "--hostname={{.Node.Hostname}}");
	/* the same isolation as on one machine; seccomp and no-new-privileges
	 * are the node's (20.10 drops them from a spec), checked by the launcher */
	strv_push(&a, "--read-only");
	strv_push(&a, "--cap-drop=ALL");
	strv_pushf(&a, "--user=%s", o->user);
	strv_pushf(&a, "--limit-memory=%sb", o->memory);
	strv_pushf(&a, "--limit-pids=%s", o->pids);
	strv_push(&a, "--limit-cpu=1");
	strv_push(&a, "--ulimit=nofile=1024:1024");
	strv_push(&a, "--ulimit=nproc=512:512");
	strv_push(&a, "--sysctl=net.ipv6.conf.all.disable_ipv6=1");
	strv_push(&a, "--sysctl=net.ipv6.conf.default.disable_ipv6=1");
	strv_push(&a, "--mount=type=tmpfs,destination=/tmp,tmpfs-size=67108864,tmpfs-mode=1777");
	strv_push(&a, "--no-healthcheck");
	for (size_t i = 0; i < nets->n; i++)
		strv_pushf(&a, "--network=%s", nets->v[i]);
	strv_pushf(&a, "--mount=type=bind,source=%s,destination=" LAUNCH_PATH ",readonly",
	           o->launcher);
	if (o->bind != NULL) {
		const char *colon = strchr(o->bind, ':');
		strv_pushf(&a, "--mount=type=bind,source=%.*s,destination=%s,readonly",
		           (int)(colon - o->bind), o->bind, colon + 1);
	}
	strv_push(&a, "--entrypoint=" LAUNCH_PATH);
	/* uid/gid of the server's user: files it alone may read */
	char uid[16] = "65534", gid[16] = "65534";
	sscanf(o->user, "%15[0-9]:%15[0-9]", uid, gid);
	strv_pushf(&a,
	           "--secret=source=%s" CTR_SWARM_TOKEN_SUFFIX
	           ",target=mcpgate-token,uid=%s,gid=%s,mode=0400",
	           o->name, uid, gid);
	if (o->secrets)
		strv_pushf(&a,
		           "--secret=source=%s" CTR_SWARM_ENV_SUFFIX
		           ",target=mcpgate-env,uid=%s,gid=%s,mode=0400",
		           o->name, uid, gid);
	/* the settings' values from our environment, in a file docker reads
	 * on its stdin: never in an argument list (a service's --env NAME takes
	 * no value from the environment, as run's does) */
	cleanup_close int envfd = -1;
	if (o->env.n > 0) {
		struct mg_buf text;
		mg_buf_init(&text, 4u << 20);
		int r = 0;
		for (size_t i = 0; i < o->env.n && r == 0; i++) {
			const char *v = getenv(o->env.v[i]);
			if (v == NULL || strchr(v, '\n') != NULL)
				r = mg_err_set(
				    err,
				    "variable %s: a value with a newline cannot be given "
				    "to a service",
				    o->env.v[i]);
			else
				r = mg_buf_printf(&text, err, "%s=%s\n", o->env.v[i], v);
		}
		if (r == 0 && (envfd = memfd_create("mcpgate-env", MFD_CLOEXEC)) < 0)
			r = mg_err_set(err, "memfd_create: %s", strerror(errno));
		if (r == 0 &&
		    (proc_write_all(envfd, text.data, text.len, proc_now_ms() + 10000, err) < 0 ||
		     lseek(envfd, 0, SEEK_SET) < 0))
			r = -1;
		mg_buf_free(&text);
		if (r < 0) {
			strv_free(&a);
			return -1;
		}
		strv_push(&a, "--env-file=/dev/stdin");
	}
	strv_push(&a, o->image);
	strv_push(&a, o->early ? "--listen-early" : "--listen");
	strv_push(&a, CTR_SWARM_PORT);
	strv_push(&a, "/run/secrets/mcpgate-token");
	strv_push(&a, o->secrets ? "/run/secrets/mcpgate-env" : "-");
	for (int i = 0; i < o->ncmd; i++)
		strv_push(&a, o->cmd[i]);
	struct proc_result res;
	int r = ctr_cli_run_in(d, "service create", (const char *const *)strv_array(&a), envfd,
	                       &res, err);
	strv_free(&a);
	if (r == 0)
		proc_result_free(&res);
	return r;
}

/* until the task runs: 0, or an error naming the node and why not */
static int task_wait(const struct ctr_driver *d, const struct run_opts *o, struct mg_err **err)
{
	const char *args[] = {
	    "service", "ps", "--no-trunc", "--format", "{{.CurrentState}}\t{{.Node}}\t{{.Error}}",
	    o->name,   NULL};
	int64_t until = proc_now_ms() + TASK_WAIT_MS;
	char last[512] = "no task yet";
	while (proc_now_ms() < until) {
		struct proc_result res;
		if (ctr_cli_run_in(d, "service ps", args, -1, &res, err) < 0)
			return -1;
		char *line = res.out.data;
		char *nl = strchr(line, '\n');
		if (nl != NULL)
			*nl = '\0';
		snprintf(last, sizeof(last), "%s", line);
		proc_result_free(&res);
		if (strncmp(last, "Running", 7) == 0)
			return 0;
		if (strncmp(last, "Failed", 6) == 0 || strncmp(last, "Rejected", 8) == 0 ||
		    strncmp(last, "Complete", 8) == 0 || strncmp(last, "Shutdown", 8) == 0) {
			for (char *p = last; *p != '\0'; p++)
				if (*p == '\t')
					*p = ' ';
			return mg_err_set(err, "its task ended before it ran: %s", last);
		}
		usleep(200 * 1000);
	}
	for (char *p = last; *p != '\0'; p++)
		if (*p == '\t')
			*p = ' ';
	return mg_err_set(err,
	                  "its task did not run in %d s (is a node labelled mcpgate=true, and "
	                  "does it reach the registry?): %s",
	                  TASK_WAIT_MS / 1000, last);
}

/* the relay's argv: on the manager, as hardened as a server */
static void relay_argv(const struct run_opts *o, const char *net, struct strv *a)
{
	strv_push(a, o->docker);
	strv_push(a, "run");
	strv_push(a, "--rm");
	strv_push(a, "-i");
	strv_push(a, "--name");
	strv_pushf(a, "%s" CTR_SWARM_RELAY_SUFFIX, o->name);
	ctr_push_labels(a, o->session, o->server, o->owner);
	strv_pushf(a, "--network=%s", net);
	strv_push(a, "--read-only");
	strv_push(a, "--cap-drop=ALL");
	strv_push(a, "--security-opt=no-new-privileges");
	strv_pushf(a, "--security-opt=seccomp=%s", o->seccomp);
	strv_push(a, "--user=65534:65534");
	strv_push(a, "--log-driver=none");
	strv_push(a, "--memory=32m");
	strv_push(a, "--pids-limit=8");
	strv_push(a, "--sysctl=net.ipv6.conf.all.disable_ipv6=1");
	strv_push(a, "--no-healthcheck");
	strv_pushf(a, "--mount=type=bind,source=%s,destination=" LAUNCH_PATH ",readonly",
	           o->launcher);
	strv_push(a, "--entrypoint=" LAUNCH_PATH);
	strv_push(a, o->image);
	strv_push(a, "--connect");
	strv_pushf(a, "tasks.%s", o->name);
	strv_push(a, CTR_SWARM_PORT);
}

/* stdin to the relay until either ends or a signal comes; the relay's
 * exit status (128+N for a signal) */
static int relay(const struct ctr_driver *d, const struct run_opts *o, const char *net,
                 const char *token, int sfd, struct mg_err **err)
{
	struct strv a = STRV_INIT;
	relay_argv(o, net, &a);
	struct proc_spec ps = {
	    .path = a.v[0],
	    .argv = (const char *const *)strv_array(&a),
	    .stdio = {{PROC_STDIO_PIPE, -1, false},
	              {PROC_STDIO_FD, STDOUT_FILENO, false},
	              {PROC_STDIO_FD, STDERR_FILENO, false}},
	};
	struct strv env = STRV_INIT;
	for (size_t i = 0; i < d->env.n; i++)
		strv_push(&env, d->env.v[i]);
	ps.envp = (const char *const *)strv_array(&env);
	struct proc p = PROC_INIT;
	int r = proc_spawn(&ps, &p, err);
	strv_free(&a);
	strv_free(&env);
	if (r < 0)
		return -1;
	char line[80];
	snprintf(line, sizeof(line), "%s\n", token);
	if (proc_write_all(p.in_fd, line, strlen(line), proc_now_ms() + 10000, NULL) < 0) {
		close(p.in_fd);
		p.in_fd = -1;
	}
	sodium_memzero(line, sizeof(line));
	bool in_open = p.in_fd >= 0;
	char buf[65536];
	while (in_open) {
		struct pollfd fds[3] = {
		    {STDIN_FILENO, POLLIN, 0}, {p.pidfd, POLLIN, 0}, {sfd, POLLIN, 0}};
		if (poll(fds, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (fds[2].revents != 0) {
			/* the gateway or a person asks it to end: the relay goes with
			 * the task, which the caller removes */
			proc_signal(&p, SIGTERM, NULL);
			break;
		}
		if (fds[1].revents != 0)
			break; /* the relay ended: the server is gone */
		if (fds[0].revents != 0) {
			ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0 || proc_write_all(p.in_fd, buf, (size_t)n, INT64_MAX, NULL) < 0)
				in_open = false;
		}
	}
	/* the end of our stdin is the end of the server's: the relay half-closes */
	if (p.in_fd >= 0)
		close(p.in_fd);
	p.in_fd = -1;
	int status = 0;
	/* the task ends on EOF; a server that ignores it ends with its service */
	if (proc_wait(&p, proc_now_ms() + 10000, &status, NULL) != 0) {
		ctr_swarm_remove_server(d, o->name, false, NULL);
		if (proc_wait(&p, proc_now_ms() + 15000, &status, NULL) != 0)
			proc_stop(&p, 0, &status);
	}
	proc_close(&p);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

int ctr_swarm_run_main(int argc, char **argv)
{
	struct run_opts o;
	struct mg_err *err = NULL;
	if (parse(argc, argv, &o, &err) < 0) {
		fprintf(stderr, "mcpgate __swarm-run: %s\n", mg_err_msg(err));
		mg_err_free(err);
		strv_free(&o.env);
		strv_free(&o.networks);
		return 125;
	}
	struct ctr_driver *d = ctr_driver_for(CTR_SWARM, o.docker, environ);
	/* our own signals through a signalfd: ending always removes what we made */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	int sfd = signalfd(-1, &set, SFD_CLOEXEC);
	int rc = 125;
	bool own_net = strcmp(o.networks.v[0], "-") == 0;
	if (own_net) {
		free(o.networks.v[0]);
		o.networks.v[0] = xasprintf("%s%s", o.name, CTR_SWARM_NET_SUFFIX);
	}
	/* the relay reaches the task on the last: the inner one */
	const char *net = o.networks.v[o.networks.n - 1];
	cleanup_free char *tok_name = xasprintf("%s%s", o.name, CTR_SWARM_TOKEN_SUFFIX);
	cleanup_free char *env_name = xasprintf("%s%s", o.name, CTR_SWARM_ENV_SUFFIX);
	char token[65] = "";
	struct mg_buf block;
	mg_buf_init(&block, LAUNCH_HEAD_MAX + LAUNCH_BLOCK_MAX);
	if (sodium_init() < 0) {
		mg_err_set(&err, "libsodium did not initialise");
		goto out;
	}
	unsigned char raw[32];
	randombytes_buf(raw, sizeof(raw));
	sodium_bin2hex(token, sizeof(token), raw, sizeof(raw));
	sodium_memzero(raw, sizeof(raw));
	if (o.secrets && read_block(&block, &err) < 0)
		goto out;
	if (secret_create(d, &o, tok_name, token, strlen(token), &err) < 0)
		goto out;
	if (o.secrets) {
		int r = secret_create(d, &o, env_name, block.data, block.len, &err);
		sodium_memzero(block.data, block.len);
		if (r < 0)
			goto out;
	}
	if (own_net && network_create(d, &o, net, &err) < 0)
		goto out;
	if (service_create(d, &o, &o.networks, &err) < 0 || task_wait(d, &o, &err) < 0)
		goto out;
	rc = relay(d, &o, net, token, sfd, &err);
	if (rc < 0)
		rc = 125;
out:
	sodium_memzero(token, sizeof(token));
	if (block.data != NULL)
		sodium_memzero(block.data, block.len);
	mg_buf_free(&block);
	if (err != NULL)
		fprintf(stderr, "mcpgate: server %s on the swarm: %s\n", o.server, mg_err_msg(err));
	mg_err_free(err);
	err = NULL;
	if (ctr_swarm_remove_server(d, o.name, own_net, &err) < 0) {
		fprintf(stderr, "mcpgate: server %s on the swarm: removing it: %s\n", o.server,
		        mg_err_msg(err));
		mg_err_free(err);
	}
	if (sfd >= 0)
		close(sfd);
	ctr_driver_free(d);
	strv_free(&o.env);
	strv_free(&o.networks);
	return rc;
}
