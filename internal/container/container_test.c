/* The runtime driver without a runtime: the exact argv and environment of
 * `run` for podman and docker (golden files in testdata/container/), mounts
 * resolved through links, reserved variables, owner liveness. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/testing.h"
#include "internal/base/utf8.h"
#include "internal/base/xalloc.h"
#include "internal/config/config.h"
#include "internal/container/container.h"
#include "internal/container/container-internal.h"
#include "internal/json/json.h"

static char workspace[PATH_MAX];

static char *join_lines(char *const *v, const char *ws)
{
	struct mg_buf b = MG_BUF_INIT(1 << 20);
	size_t wl = strlen(ws);
	for (size_t i = 0; v[i] != NULL; i++) {
		const char *s = v[i];
		const char *hit;
		/* the owner label names this boot and process: @OWNER@ in golden files */
		if (strncmp(s, CTR_LABEL_OWNER "=", strlen(CTR_LABEL_OWNER) + 1) == 0) {
			mg_buf_puts(&b, CTR_LABEL_OWNER "=@OWNER@\n", NULL);
			continue;
		}
		/* the temporary workspace reads as @WS@ in golden files */
		while ((hit = strstr(s, ws)) != NULL) {
			mg_buf_append(&b, s, (size_t)(hit - s), NULL);
			mg_buf_puts(&b, "@WS@", NULL);
			s = hit + wl;
		}
		mg_buf_puts(&b, s, NULL);
		mg_buf_putc(&b, '\n', NULL);
	}
	return mg_buf_steal(&b, NULL);
}

static void check_golden(const char *got, const char *path)
{
	if (getenv("MCPGATE_UPDATE_GOLDEN") != NULL) {
		FILE *f = fopen(path, "w");
		if (f != NULL) {
			fputs(got, f);
			fclose(f);
		}
	}
	cleanup_free char *want = t_read_file(path, NULL);
	T_STR(got, want, "%s", path);
}

static void test_argv(const struct cfg *cfg, enum ctr_kind kind)
{
	char *environment[] = {"PATH=/usr/bin:/bin",
	                       "HOME=/home/u",
	                       "XDG_RUNTIME_DIR=/run/user/1000",
	                       "MCPGATE_LOG=debug",
	                       "AWS_SECRET_ACCESS_KEY=not-for-the-runtime",
	                       "CONTAINER_HOST=unix:///run/podman.sock",
	                       "DOCKER_HOST=unix:///run/docker.sock",
	                       NULL};
	struct ctr_driver *d = ctr_driver_for(
	    kind, kind == CTR_PODMAN ? "/usr/bin/podman" : "/usr/bin/docker", environment);
	d->seccomp = xstrdup("/seccomp/mcpgate.json");
	for (size_t i = 0; i < cfg->nservers; i++) {
		const struct cfg_server *s = &cfg->servers[i];
		struct ctr_env env[] = {{"HTTPS_PROXY", "http://10.89.0.2:3128", true}};
		struct ctr_env secret[] = {{"GITHUB_TOKEN", "ghp_value_never_in_argv", false}};
		struct ctr_image_config image = {0};
		strv_push(&image.entrypoint, "/app/server");
		strv_push(&image.cmd, "--stdio");
		strv_push(&image.volumes, "/data");
		struct ctr_run_spec spec = {
		    .server = s,
		    .session = "s1",
		    .owner = 4242,
		    .workspace = workspace,
		    .image = &image,
		    .network = s->nhosts > 0 ? "mcpgate-full-s1-in" : NULL,
		    .env = s->nhosts > 0 ? env : NULL,
		    .nenv = s->nhosts > 0 ? 1 : 0,
		    .secrets = s->credential != NULL ? secret : NULL,
		    .nsecrets = s->credential != NULL ? 1 : 0,
		    .launcher = "/data/mcpgate/launch/mcpgate-launch-abc",
		};
		struct strv argv = STRV_INIT, envp = STRV_INIT;
		struct mg_err *err = NULL;
		struct ctr_mounts mounts;
		struct ctr_mount_plan plan = {.server = s, .workspace = workspace, .tag = "t"};
		T_INT(ctr_mounts_open(&plan, &mounts, &err), 0, "%s %s: mounts open %s", d->name,
		      s->name, mg_err_msg(err));
		spec.mounts = &mounts;
		int r = d->ops->run_command(d, &spec, &argv, &envp, &err);
		ctr_mounts_release(&mounts);
		T_INT(r, 0, "%s %s: run argv built %s", d->name, s->name, mg_err_msg(err));
		mg_err_clear(&err);
		if (r < 0)
			continue;
		cleanup_free char *a = join_lines(strv_array(&argv), workspace);
		cleanup_free char *e = join_lines(strv_array(&envp), workspace);
		cleanup_free char *ga =
		    xasprintf("testdata/container/%s.%s.argv", s->name, d->name);
		cleanup_free char *ge = xasprintf("testdata/container/%s.%s.env", s->name, d->name);
		check_golden(a, ga);
		check_golden(e, ge);
		T_OK(strstr(a, "ghp_value_never_in_argv") == NULL &&
		         strstr(e, "ghp_value_never_in_argv") == NULL,
		     "%s %s: a secret's value is neither in argv nor in the runtime's environment",
		     d->name, s->name);
		strv_free(&argv);
		strv_free(&envp);
		if (s->credential != NULL && s->command == NULL) {
			/* an image that names no command: nothing to launch */
			struct ctr_image_config bare = {0};
			spec.image = &bare;
			T_INT(d->ops->run_command(d, &spec, &argv, &envp, &err), -1,
			      "%s %s: an image without Entrypoint or Cmd is refused", d->name,
			      s->name);
			T_OK(strstr(mg_err_msg(err), "names no command") != NULL &&
			         strstr(mg_err_msg(err), "set command in mcp.toml") != NULL,
			     "%s: and says what to do: %s", d->name, mg_err_msg(err));
			mg_err_clear(&err);
			spec.launcher = NULL;
			spec.image = &image;
			T_INT(d->ops->run_command(d, &spec, &argv, &envp, &err), -1,
			      "%s %s: a secret without the launcher is refused, never put in the "
			      "environment",
			      d->name, s->name);
			mg_err_clear(&err);
		}
		ctr_image_config_free(&image);
	}
	ctr_driver_free(d);
}

static void test_launch_block(void)
{
	struct ctr_env v[] = {{"A_TOKEN", "s3cret", false}, {"B", "x=y", false}};
	size_t len = 0;
	struct mg_err *err = NULL;
	char *b = ctr_launch_block(v, 2, &len, &err);
	static const char want[] = "mcpgate-launch 1 21\nA_TOKEN=s3cret\0B=x=y\0";
	T_OK(b != NULL && len == sizeof(want) - 1 && memcmp(b, want, len) == 0,
	     "the launcher's block: header, then NAME=VALUE entries, each NUL-terminated");
	ctr_launch_block_free(b, len);
	struct ctr_env bad[] = {{"1X", "v", false}};
	T_OK(ctr_launch_block(bad, 1, &len, &err) == NULL && strstr(mg_err_msg(err), "1X") != NULL,
	     "a name that is not a variable's is refused: %s", mg_err_msg(err));
	mg_err_clear(&err);
	T_OK(ctr_launch_block(v, 0, &len, &err) == NULL, "no variables: no block");
	mg_err_clear(&err);
	char *big = xmalloc((256u << 10) + 1);
	memset(big, 'v', 256u << 10);
	big[256u << 10] = '\0';
	struct ctr_env huge[] = {{"H", big, false}};
	T_OK(ctr_launch_block(huge, 1, &len, &err) == NULL &&
	         strstr(mg_err_msg(err), "bytes") != NULL,
	     "more than the launcher takes is refused here: %s", mg_err_msg(err));
	mg_err_clear(&err);
	free(big);
}

static void test_sidecar(const struct cfg *cfg, enum ctr_kind kind)
{
	char *environment[] = {"PATH=/usr/bin:/bin", "HOME=/home/u", "SECRET=not-for-it", NULL};
	struct ctr_driver *d = ctr_driver_for(
	    kind, kind == CTR_PODMAN ? "/usr/bin/podman" : "/usr/bin/docker", environment);
	d->seccomp = xstrdup("/seccomp/mcpgate.json");
	const char *args[] = {"-listen",       "0.0.0.0:3128", "-allow",    "api.github.com",
	                      "-deny-address", "10.89.0.0/24", "-lifeline", NULL};
	struct ctr_topology topo = {
	    .net_in = (char *)"mcpgate-full-s1-in",
	    .net_out = (char *)"mcpgate-full-s1-out",
	    .sidecar = (char *)"mcpgate-full-s1-egress",
	};
	struct ctr_sidecar_spec spec = {
	    .server = cfg_find_server(cfg, "full"),
	    .session = "s1",
	    .owner = 4242,
	    .topology = &topo,
	    .binary = "/data/mcpgate/egress/mcpgate-egress-0123abcd",
	    .args = args,
	};
	struct strv argv = STRV_INIT, envp = STRV_INIT;
	struct mg_err *err = NULL;
	T_INT(d->ops->sidecar_command(d, &spec, &argv, &envp, &err), 0, "%s: sidecar argv %s",
	      d->name, mg_err_msg(err));
	mg_err_clear(&err);
	cleanup_free char *a = join_lines(strv_array(&argv), workspace);
	cleanup_free char *g = xasprintf("testdata/container/sidecar.%s.argv", d->name);
	check_golden(a, g);
	T_OK(strv_find(&envp, "SECRET=not-for-it") < 0,
	     "%s: the sidecar's runtime gets the fixed "
	     "environment only",
	     d->name);
	strv_free(&argv);
	strv_free(&envp);
	ctr_driver_free(d);
}

/* A runtime that logs each command, one argument a line and "--" after
 * it, and answers the inspects a topology asks: the inner network
 * 10.89.0.0/24, the outer 10.89.1.0/24, the sidecar at 10.89.0.2 */
static const char topology_runtime[] =
    "#!/bin/sh\n"
    "for a in \"$@\"; do printf '%s\\n' \"$a\" >> \"$0.log\"; done\n"
    "echo -- >> \"$0.log\"\n"
    "case \"$1 $2 $3\" in\n"
    "'network inspect '*-in) echo '[{\"subnets\": [{\"subnet\": \"10.89.0.0/24\", "
    "\"gateway\": \"10.89.0.1\"}]}]' ;;\n"
    "'network inspect '*-out) echo '[{\"IPAM\": {\"Config\": [{\"Subnet\": "
    "\"10.89.1.0/24\", \"Gateway\": \"10.89.1.1\"}]}}]' ;;\n"
    "'container inspect '*) echo '[{\"NetworkSettings\": {\"Networks\": "
    "{\"mcpgate-full-s1-in\": {\"IPAddress\": \"10.89.0.2\"}}}}]' ;;\n"
    "'network connect '*) [ -e \"$0.connect-fails\" ] && { echo 'Error: no such container' >&2; "
    "exit 1; } ;;\n"
    "esac\n"
    "exit 0\n";

static char *log_lines(const char *path)
{
	cleanup_free char *text = t_read_file(path, NULL);
	struct strv lines = STRV_INIT;
	for (char *line = text; line != NULL && *line != '\0';) {
		char *nl = strchr(line, '\n');
		if (nl != NULL)
			*nl = '\0';
		strv_push(&lines, line);
		line = nl != NULL ? nl + 1 : NULL;
	}
	char *joined = join_lines(strv_array(&lines), workspace);
	strv_free(&lines);
	return joined;
}

/* The topology's whole life against that runtime: the commands it runs
 * (golden), what the proxy must refuse, the sidecar's address, the
 * sweep once per runtime */
static void test_topology(const struct cfg *cfg, enum ctr_kind kind)
{
	char dir[] = "/tmp/mcpgate-topology-XXXXXX";
	T_OK(mkdtemp(dir) != NULL, "a folder for the runtime");
	cleanup_free char *path = xasprintf("%s/%s", dir, kind == CTR_PODMAN ? "podman" : "docker");
	cleanup_free char *log = xasprintf("%s.log", path);
	cleanup_free char *fails = xasprintf("%s.connect-fails", path);
	FILE *f = fopen(path, "w");
	T_OK(f != NULL && fputs(topology_runtime, f) >= 0 && fclose(f) == 0 &&
	         chmod(path, 0755) == 0,
	     "the runtime script is written");
	char *environment[] = {"PATH=/usr/bin:/bin", NULL};
	struct ctr_driver *d = ctr_driver_for(kind, path, environment);
	d->seccomp = xstrdup("/seccomp/mcpgate.json");
	struct ctr_topology_spec spec = {
	    .server = cfg_find_server(cfg, "full"),
	    .session = "s1",
	    .owner = 4242,
	    .container = "mcpgate-full-s1",
	};
	struct ctr_topology topo;
	struct mg_err *err = NULL;
	T_INT(d->ops->topology_create(d, &spec, &topo, &err), 0, "%s: topology made %s", d->name,
	      mg_err_msg(err));
	mg_err_clear(&err);
	cleanup_free char *deny = join_lines(strv_array(&topo.deny), workspace);
	T_STR(deny, "10.89.0.0/24\n10.89.0.1\n10.89.1.1\n",
	      "%s: the proxy refuses the inner network whole and both gateways", d->name);
	T_STR(topo.sidecar, "mcpgate-full-s1-egress", "%s: the sidecar is named for the server",
	      d->name);
	char *address = NULL;
	if (kind == CTR_DOCKER) {
		FILE *k = fopen(fails, "w");
		if (k != NULL)
			fclose(k);
		T_INT(d->ops->sidecar_ready(d, &topo, &address, &err), -1,
		      "%s: not ready while the inner network cannot be joined", d->name);
		T_OK(strstr(mg_err_msg(err),
		            "connecting the egress sidecar to mcpgate-full-s1-in: docker network "
		            "connect exited with status 1: Error: no such container") != NULL,
		     "%s: and it says why: %s", d->name, mg_err_msg(err));
		mg_err_clear(&err);
		unlink(fails);
	}
	for (int i = 0; i < 2; i++) {
		T_INT(d->ops->sidecar_ready(d, &topo, &address, &err), 0, "%s: ready (%d) %s",
		      d->name, i, mg_err_msg(err));
		T_STR(address, "10.89.0.2", "%s: the proxy's address on the inner network",
		      d->name);
		free(address);
		address = NULL;
		mg_err_clear(&err);
	}
	T_INT(d->ops->topology_remove(d, &topo, &err), 0, "%s: topology removed %s", d->name,
	      mg_err_msg(err));
	mg_err_clear(&err);
	T_OK(topo.sidecar == NULL && topo.net_in == NULL && topo.net_out == NULL,
	     "%s: what went is cleared", d->name);
	ctr_topology_free(&topo);
	cleanup_free char *got = log_lines(log);
	cleanup_free char *golden = xasprintf("testdata/container/topology.%s.log", d->name);
	check_golden(got, golden);

	unsigned removed = 7;
	T_INT(ctr_sweep_once(d, &removed, &err), 1, "%s: the first sweep sweeps %s", d->name,
	      mg_err_msg(err));
	mg_err_clear(&err);
	T_INT(ctr_sweep_once(d, &removed, &err), 0, "%s: once per runtime and process", d->name);
	T_INT((int)removed, 0, "%s: and removed nothing then", d->name);
	ctr_driver_free(d);
	unlink(log);
	unlink(path);
	rmdir(dir);
}

/* The run argv of server s (its mounts opened) with the image declaring
 * volumes; r its status, err why not */
static int argv_with_volumes(struct ctr_driver *d, const struct cfg_server *s,
                             const char *const *volumes, size_t n, char **text, struct mg_err **err)
{
	struct ctr_image_config image = {0};
	for (size_t i = 0; i < n; i++)
		strv_push(&image.volumes, volumes[i]);
	struct ctr_mounts mounts;
	struct ctr_mount_plan plan = {.server = s, .workspace = workspace, .tag = "v"};
	if (ctr_mounts_open(&plan, &mounts, err) < 0) {
		ctr_image_config_free(&image);
		return -1;
	}
	struct ctr_run_spec spec = {.server = s,
	                            .session = "s1",
	                            .owner = 1,
	                            .workspace = workspace,
	                            .mounts = &mounts,
	                            .image = &image};
	struct strv argv = STRV_INIT, envp = STRV_INIT;
	int r = d->ops->run_command(d, &spec, &argv, &envp, err);
	ctr_mounts_release(&mounts);
	ctr_image_config_free(&image);
	*text = r == 0 ? join_lines(strv_array(&argv), workspace) : NULL;
	strv_free(&argv);
	strv_free(&envp);
	return r;
}

/* Every argument built from image or configuration data, in the runtime's
 * option syntax: a comma, a colon or a quote is carried whole (podman and
 * docker read --mount as CSV), what cannot be carried is refused by name,
 * never skipped */
static void test_data_args(const struct cfg *cfg)
{
	const struct cfg_server *full = &cfg->servers[1]; /* mounts src and out:write */
	struct ctr_driver *d = ctr_driver_for(CTR_DOCKER, "/usr/bin/docker", NULL);
	d->seccomp = xstrdup("/seccomp/mcpgate.json");
	struct mg_err *err = NULL;
	char *text = NULL;
	/* docker made a writable volume on the host for each of these */
	const char *carried[] = {"/vc,x",       "/vk:y",      "/vq\"z",  "/data/",
	                         "/a/./b/../c", "/tmp/cache", "/dev/shm"};
	T_INT(
	    argv_with_volumes(d, full, carried, sizeof(carried) / sizeof(carried[0]), &text, &err),
	    0, "docker: VOLUMEs with a comma, a colon, a quote, a trailing slash: %s",
	    mg_err_msg(err));
	mg_err_clear(&err);
	const char *want[] = {
	    "--mount\ntype=tmpfs,\"destination=/vc,x\",tmpfs-size=4096,readonly\n",
	    "--mount\ntype=tmpfs,destination=/vk:y,tmpfs-size=4096,readonly\n",
	    "--mount\ntype=tmpfs,\"destination=/vq\"\"z\",tmpfs-size=4096,readonly\n",
	    "--mount\ntype=tmpfs,destination=/data,tmpfs-size=4096,readonly\n",
	    "--mount\ntype=tmpfs,destination=/a/c,tmpfs-size=4096,readonly\n",
	    "--mount\ntype=tmpfs,destination=/tmp/cache,tmpfs-size=4096,readonly\n",
	    "--mount\ntype=tmpfs,destination=/dev/shm,tmpfs-size=4096,readonly\n",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		T_OK(text != NULL && strstr(text, want[i]) != NULL, "docker covers it: %.*s",
		     (int)strlen(want[i]) - 9, want[i] + 8);
	free(text);
	text = NULL;
	/* a place of mcpgate's or a mount's target is that very path: no second mount */
	const char *same[] = {"/tmp", "/var/tmp/", "/run", "/workspace/out", "/workspace//src"};
	T_INT(argv_with_volumes(d, full, same, 5, &text, &err), 0, "docker: VOLUMEs on places");
	T_OK(text != NULL && strstr(text, "type=tmpfs") == NULL,
	     "a VOLUME where a writable place or a mount is already gets no second mount");
	free(text);
	text = NULL;
	struct {
		const char *volume, *why;
	} refused[] = {
	    {"data", "not an absolute path"}, {"/", "the root itself"}, {"/../", "the root itself"},
	    {"/x\ny", "a control character"}, {"/x\xff", "not UTF-8"},
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		T_INT(argv_with_volumes(d, full, &refused[i].volume, 1, &text, &err), -1,
		      "docker: VOLUME %zu is refused", i);
		/* a stranger's path, rendered: no raw newline in mcpgate's text */
		cleanup_free char *shown = mg_shown(refused[i].volume, strlen(refused[i].volume));
		cleanup_free char *named = xasprintf("its image declares VOLUME %s,", shown);
		T_OK(err != NULL && strstr(mg_err_msg(err), "server full: ") != NULL &&
		         strstr(mg_err_msg(err), named) != NULL &&
		         strstr(mg_err_msg(err), refused[i].why) != NULL &&
		         strstr(mg_err_msg(err), "podman") != NULL,
		     "naming it, why and the fix: %s", mg_err_msg(err));
		mg_err_clear(&err);
	}
	ctr_driver_free(d);

	/* podman ignores VOLUMEs (--image-volume=ignore); an entrypoint that
	 * reads as a JSON array is never taken as one */
	d = ctr_driver_for(CTR_PODMAN, "/usr/bin/podman", NULL);
	d->seccomp = xstrdup("/seccomp/mcpgate.json");
	T_INT(argv_with_volumes(d, full, &refused[3].volume, 1, &text, &err), 0,
	      "podman: an image's VOLUMEs are not on its command line: %s", mg_err_msg(err));
	T_OK(text != NULL && strstr(text, "--entrypoint=[\"/usr/bin/node\"]\n") != NULL,
	     "podman: the entrypoint is a JSON array of the one command");
	free(text);
	struct cfg_server hostile = *full;
	char *command[] = {"[\"/bin/sh\",\"-c\",\"id\"]", NULL};
	hostile.command = command;
	hostile.ncommand = 1;
	T_INT(argv_with_volumes(d, &hostile, NULL, 0, &text, &err), 0, "podman: a command [...]");
	T_OK(text != NULL &&
	         strstr(text, "--entrypoint=[\"[\\\"/bin/sh\\\",\\\"-c\\\",\\\"id\\\"]\"]\n") !=
	             NULL,
	     "podman: a command that reads as a JSON array is one string in one");
	free(text);
	ctr_driver_free(d);

	/* a mount's host path with a comma and a quote is carried; a newline is
	 * refused by what it came from */
	struct strv a = STRV_INIT;
	const char *ok[] = {"type=bind", "source=/st,a\"te", "target=/workspace/x"};
	T_INT(ctr_push_mount(&a, ok, 3, "test", &err), 0, "a source with , and \"");
	T_STR(a.n == 2 ? a.v[1] : "", "type=bind,\"source=/st,a\"\"te\",target=/workspace/x",
	      "quoted as one CSV field, its quote doubled");
	const char *bad[] = {"type=bind", "source=/st\nate"};
	T_INT(ctr_push_mount(&a, bad, 2, "server x: mount m", &err), -1, "a newline is refused");
	T_OK(err != NULL && strstr(mg_err_msg(err), "server x: mount m") != NULL &&
	         strstr(mg_err_msg(err), "source=/st\\nate") != NULL &&
	         strchr(mg_err_msg(err), '\n') == NULL,
	     "naming where it came from and the field, rendered (no raw newline): %s",
	     mg_err_msg(err));
	mg_err_clear(&err);
	T_OK(a.n == 2, "and nothing of it is pushed");
	strv_free(&a);
}

static void test_reserved(const struct cfg *cfg)
{
	struct ctr_driver *d = ctr_driver_for(CTR_DOCKER, "/usr/bin/docker", NULL);
	d->seccomp = xstrdup("/seccomp/mcpgate.json");
	/* the names a hostile configuration got through before, and their kin */
	const char *bad[] = {"DOCKER_HOST",
	                     "LD_PRELOAD",
	                     "PATH",
	                     "CONTAINERS_CONF",
	                     "STORAGE_DRIVER",
	                     "STORAGE_OPTS",
	                     "XDG_CONFIG_HOME",
	                     "XDG_DATA_HOME",
	                     "NOTIFY_SOCKET",
	                     "GODEBUG",
	                     "container",
	                     "Http_Proxy",
	                     "ld_preload",
	                     "GOMAXPROCS",
	                     "_CONTAINERS_ROOTLESS_UID",
	                     "SSL_CERT_FILE",
	                     "DBUS_SESSION_BUS_ADDRESS",
	                     "LISTEN_FDS",
	                     "GCONV_PATH",
	                     "LC_ALL",
	                     "TZ",
	                     "all_proxy"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ctr_env env[] = {{bad[i], "x", false}};
		struct ctr_run_spec spec = {
		    .server = &cfg->servers[0], .session = "s1", .owner = 1, .env = env, .nenv = 1};
		struct strv argv = STRV_INIT, envp = STRV_INIT;
		struct mg_err *err = NULL;
		T_INT(d->ops->run_command(d, &spec, &argv, &envp, &err), -1,
		      "variable %s for a server is refused", bad[i]);
		T_OK(err != NULL && strstr(err->msg, bad[i]) != NULL &&
		         strstr(err->msg, "steer the runtime") != NULL,
		     "the error names %s and why", bad[i]);
		mg_err_clear(&err);
		T_OK(argv.n == 0 && envp.n == 0, "nothing is handed back on failure");
	}
	const char *fine[] = {"GITHUB_TOKEN", "GOOGLE_API_KEY", "MEMORY_FILE_PATH", "API_KEY",
	                      "OPENAI_API_KEY"};
	for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++)
		T_OK(!ctr_env_name_reserved(fine[i]) && !cfg_env_name_reserved(fine[i]),
		     "%s is a server's to take", fine[i]);
	struct ctr_env own[] = {{"HTTP_PROXY", "http://10.0.0.2:3128", true}};
	struct ctr_run_spec spec = {
	    .server = &cfg->servers[0], .session = "s1", .owner = 1, .env = own, .nenv = 1};
	struct strv argv = STRV_INIT, envp = STRV_INIT;
	T_INT(d->ops->run_command(d, &spec, &argv, &envp, NULL), 0,
	      "mcpgate's own proxy variables pass");
	strv_free(&argv);
	strv_free(&envp);
	ctr_driver_free(d);
}

/* One mount, opened (its fd is closed here; ctr_mounts_open holds it) */
static int open_mount(const char *path, char **host, struct mg_err **err)
{
	int fd;
	int r = ctr_mount_open(workspace, path, NULL, &fd, host, err);
	if (r == 0)
		close(fd);
	return r;
}

static void test_mounts(void)
{
	struct mg_err *err = NULL;
	char *host = NULL;
	T_INT(open_mount("src", &host, &err), 0, "a folder inside resolves");
	cleanup_free char *want = xasprintf("%s/src", workspace);
	T_STR(host, want, "to its real path");
	free(host);
	host = NULL;
	T_INT(open_mount("escape", &host, &err), -1, "a link that leaves the workspace is refused");
	T_OK(err != NULL && strstr(err->msg, "outside the workspace") != NULL,
	     "and says where it leads: %s", mg_err_msg(err));
	mg_err_clear(&err);
	T_INT(open_mount("root", &host, &err), -1, "a link to the workspace root is refused");
	mg_err_clear(&err);
	T_INT(open_mount("state", &host, &err), -1, "a link into .mcpgate is refused");
	T_OK(err != NULL && strstr(err->msg, "mcpgate's own state") != NULL, "and says why");
	mg_err_clear(&err);
	T_INT(open_mount("missing", &host, &err), -1, "a missing folder is refused");
	T_OK(err != NULL && strstr(err->msg, "No such file") != NULL, "with the system's reason");
	mg_err_clear(&err);
	T_INT(open_mount("a,b", &host, &err), -1, "a comma in the path is refused");
	mg_err_clear(&err);
}

/* The workspace root, read-only: the workspace itself, never with .mcpgate
 * or one of mcpgate's folders in it, at /workspace in the container */
static void test_mount_root(void)
{
	char tmpl[] = "/tmp/mcpgate-ctr-root-XXXXXX";
	char ws[PATH_MAX];
	if (mkdtemp(tmpl) == NULL || realpath(tmpl, ws) == NULL) {
		T_OK(false, "a workspace for the root mount");
		return;
	}
	struct mg_err *err = NULL;
	char *real = NULL;
	int fd = -1;
	T_INT(ctr_mount_open(ws, ".", NULL, &fd, &real, &err), 0, "the root opens as \".\": %s",
	      mg_err_msg(err));
	T_STR(real, ws, "the root is the workspace itself");
	if (fd >= 0)
		close(fd);
	free(real);
	real = NULL;
	mg_err_clear(&err);

	static const char text[] =
	    "[[server]]\nname = \"whole\"\ntransport = \"container\"\nimage = \"a/b@sha256:"
	    "2222222222222222222222222222222222222222222222222222222222222222\"\n"
	    "mounts = [\".:read\"]\n";
	struct cfg *cfg = NULL;
	T_INT(cfg_parse(text, sizeof(text) - 1, "whole.toml", NULL, 0, NULL, &cfg, &err), 0,
	      "a read-only root mount parses: %s", mg_err_msg(err));
	mg_err_clear(&err);
	struct ctr_driver *d = ctr_driver_for(CTR_PODMAN, "/usr/bin/podman", NULL);
	d->seccomp = xstrdup("/data/mcpgate/seccomp.json");
	if (cfg != NULL) {
		struct ctr_mounts mounts;
		struct ctr_mount_plan plan = {
		    .server = &cfg->servers[0], .workspace = ws, .tag = "t"};
		T_INT(ctr_mounts_open(&plan, &mounts, &err), 0, "the root mount opens: %s",
		      mg_err_msg(err));
		mg_err_clear(&err);
		struct ctr_run_spec spec = {
		    .server = &cfg->servers[0], .session = "s1", .owner = 1, .mounts = &mounts};
		struct strv argv = STRV_INIT, envp = STRV_INIT;
		T_INT(d->ops->run_command(d, &spec, &argv, &envp, &err), 0, "its argv: %s",
		      mg_err_msg(err));
		mg_err_clear(&err);
		ctr_mounts_release(&mounts);
		cleanup_free char *want = xasprintf(
		    "type=bind,source=%s,target=/workspace,bind-nonrecursive,readonly", ws);
		bool found = false;
		for (size_t i = 0; i < argv.n; i++)
			found = found || strcmp(argv.v[i], want) == 0;
		T_OK(found, "the root is bound read-only at /workspace");
		strv_free(&argv);
		strv_free(&envp);
	}
	cfg_free(cfg);
	ctr_driver_free(d);

	char p[PATH_MAX + 32];
	snprintf(p, sizeof(p), "%s/.mcpgate", ws);
	mkdir(p, 0700);
	T_INT(ctr_mount_open(ws, ".", NULL, &fd, &real, &err), -1,
	      "a root that holds .mcpgate is refused");
	T_OK(err != NULL && strstr(err->msg, "holds .mcpgate") != NULL, "and says why: %s",
	     mg_err_msg(err));
	mg_err_clear(&err);
	rmdir(p);
	snprintf(p, sizeof(p), "%s/data", ws);
	mkdir(p, 0700);
	const char *protected_dirs[] = {p, NULL};
	T_INT(ctr_mount_open(ws, ".", protected_dirs, &fd, &real, &err), -1,
	      "a root that holds mcpgate's data folder is refused");
	T_OK(err != NULL && strstr(err->msg, "one of mcpgate's own folders") != NULL,
	     "and says why: %s", mg_err_msg(err));
	mg_err_clear(&err);
	rmdir(p);
	rmdir(ws);
}

static void test_owner_label(void)
{
	char *self = ctr_owner_label(getpid());
	T_OK(self != NULL && strchr(self, '/') != NULL, "the owner label: %s", self);
	/* this test is not an mcpgate: a label of its own names a live
	 * non-mcpgate, which is not an owner */
	T_INT(ctr_owner_judge(self), CTR_OWNER_DEAD, "a live process that is not mcpgate: dead");
	char boot[64] = "", ns[64] = "";
	sscanf(self, "%63[^/]/%63[^/]/", boot, ns);
	cleanup_free char *gone = xasprintf("%s/%s/%d/1", boot, ns, 0x7ffffff0);
	T_INT(ctr_owner_judge(gone), CTR_OWNER_DEAD, "no such process in this namespace: dead");
	cleanup_free char *other_ns = xasprintf("%s/1/1/1", boot);
	T_INT(ctr_owner_judge(other_ns), CTR_OWNER_UNKNOWN,
	      "another pid namespace: not judged (pid 1 there is not pid 1 here)");
	T_INT(ctr_owner_judge("00000000-0000-0000-0000-000000000000/1/2/3"), CTR_OWNER_DEAD,
	      "another boot: dead");
	T_INT(ctr_owner_judge("2"), CTR_OWNER_UNKNOWN, "a bare pid (an older label): not judged");
	T_INT(ctr_owner_judge("x/y/z/w"), CTR_OWNER_UNKNOWN, "garbage: not judged");
	T_INT(ctr_owner_judge(NULL), CTR_OWNER_UNKNOWN, "no label: not judged");
	free(self);
}

static void test_names_and_owner(void)
{
	cleanup_free char *n = ctr_container_name("files", "abc123");
	T_STR(n, "mcpgate-files-abc123", "container names read mcpgate-SERVER-SESSION");
	T_OK(!ctr_owner_alive(getpid()), "a live process that is not mcpgate is not an owner");
	T_OK(!ctr_owner_alive(0x7ffffff0), "a pid that does not exist is not an owner");
	T_OK(ctr_env_name_reserved("DOCKER_CONFIG"), "DOCKER_CONFIG is reserved");
	T_OK(!ctr_env_name_reserved("GITHUB_TOKEN"), "GITHUB_TOKEN is not");
}

static void make_workspace(void)
{
	char tmpl[] = "/tmp/mcpgate-ctr-test-XXXXXX";
	if (mkdtemp(tmpl) == NULL || realpath(tmpl, workspace) == NULL) {
		printf("Bail out! cannot make a workspace\n");
		exit(1);
	}
	char p[PATH_MAX + 32];
	const char *dirs[] = {"src", "out", ".mcpgate", "a,b", "home"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", workspace, dirs[i]);
		mkdir(p, 0700);
	}
	snprintf(p, sizeof(p), "%s/escape", workspace);
	symlink("/etc", p);
	snprintf(p, sizeof(p), "%s/root", workspace);
	symlink(".", p);
	snprintf(p, sizeof(p), "%s/state", workspace);
	symlink(".mcpgate", p);
}

static void remove_workspace(void)
{
	const char *names[] = {"src", "out", ".mcpgate", "a,b", "escape", "root", "state", "home"};
	char p[PATH_MAX + 32];
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", workspace, names[i]);
		if (unlink(p) < 0)
			rmdir(p);
	}
	rmdir(workspace);
}

/* What the runtime reports decides what holds (platform.c): one case per
 * kind of platform, from the JSON podman and docker print */
static void platform_case(enum ctr_kind kind, const char *json, unsigned want, const char *what)
{
	struct ctr_platform p;
	struct mg_err *err = NULL;
	int r = ctr_platform_from_info(kind, json, strlen(json), &p, &err);
	T_OK(r == 0, "%s: read (%s)", what, r < 0 ? mg_err_msg(err) : "ok");
	T_INT(p.unenforced, want, "%s: the unenforced properties", what);
	for (unsigned b = 0; b < CFG_PROP_COUNT; b++)
		T_OK(((want >> b) & 1) == (p.why[b] != NULL),
		     "%s: a reason for each, and only those", what);
	ctr_platform_free(&p);
	mg_err_free(err);
}

static void test_platform(void)
{
	const unsigned both = CFG_PROP_MEMORY | CFG_PROP_PIDS;
	platform_case(CTR_PODMAN,
	              "{\"host\":{\"cgroupVersion\":\"v1\",\"cgroupControllers\":[],"
	              "\"security\":{\"rootless\":true}}}",
	              both, "rootless podman on cgroup v1");
	platform_case(CTR_PODMAN,
	              "{\"host\":{\"cgroupVersion\":\"v1\",\"cgroupControllers\":[\"cpu\","
	              "\"memory\",\"pids\"],\"security\":{\"rootless\":false}}}",
	              0, "podman as root on cgroup v1");
	platform_case(CTR_PODMAN,
	              "{\"host\":{\"cgroupVersion\":\"v2\",\"cgroupControllers\":[\"cpu\","
	              "\"memory\"],\"security\":{\"rootless\":true}}}",
	              CFG_PROP_PIDS, "rootless podman on v2 without pids delegated");
	platform_case(CTR_PODMAN,
	              "{\"host\":{\"cgroupVersion\":\"v2\",\"cgroupControllers\":[\"memory\","
	              "\"pids\"],\"security\":{\"rootless\":true}}}",
	              0, "rootless podman on v2 with both delegated");
	platform_case(CTR_PODMAN, "{\"host\":{}}", both, "podman that says nothing");
	platform_case(CTR_DOCKER,
	              "{\"MemoryLimit\":true,\"PidsLimit\":true,\"CgroupVersion\":\"1\"}", 0,
	              "dockerd with both");
	platform_case(CTR_DOCKER,
	              "{\"MemoryLimit\":false,\"PidsLimit\":true,\"CgroupVersion\":\"2\"}",
	              CFG_PROP_MEMORY, "dockerd without memory limits");
	platform_case(CTR_DOCKER, "{\"CgroupVersion\":\"2\"}", both, "dockerd that says nothing");
	platform_case(CTR_DOCKER,
	              "{\"MemoryLimit\":true,\"PidsLimit\":true,\"CgroupVersion\":\"1\","
	              "\"SecurityOptions\":[\"name=seccomp,profile=builtin\",\"name=rootless\"]}",
	              both, "rootless dockerd on cgroup v1");

	struct ctr_platform p;
	struct mg_err *err = NULL;
	T_OK(ctr_platform_from_info(CTR_PODMAN, "[1]", 3, &p, &err) < 0 && err != NULL,
	     "info that is not an object is an error");
	mg_err_clear(&err);
	T_OK(ctr_platform_from_info(CTR_DOCKER, "{", 1, &p, &err) < 0 && err != NULL,
	     "info that is not JSON is an error");
	mg_err_clear(&err);

	const char *v1 = "{\"host\":{\"cgroupVersion\":\"v1\",\"security\":{\"rootless\":true}}}";
	ctr_platform_from_info(CTR_PODMAN, v1, strlen(v1), &p, NULL);
	struct cfg_server s = {.name = "srv"};
	char *why = ctr_platform_refusal(&p, &s);
	T_OK(why != NULL &&
	         strstr(why, "its memory limit cannot hold here: rootless podman on "
	                     "cgroup v1 ignores --memory") != NULL &&
	         strstr(why, "its pids limit cannot hold here") != NULL &&
	         strstr(why, "accept_unenforced = [\"memory\", \"pids\"]") != NULL,
	     "the refusal names each property, why, and the key that accepts it: %s",
	     why ? why : "(none)");
	free(why);
	T_OK(ctr_platform_accepted_json(&p, &s) == NULL, "nothing accepted: no audit field");
	s.accept_unenforced = CFG_PROP_MEMORY;
	why = ctr_platform_refusal(&p, &s);
	T_OK(why != NULL && strstr(why, "memory limit") == NULL && strstr(why, "pids limit") &&
	         strstr(why, "accept_unenforced = [\"memory\", \"pids\"]") != NULL,
	     "with memory accepted, only pids is refused: %s", why ? why : "(none)");
	free(why);
	s.accept_unenforced = CFG_PROP_MEMORY | CFG_PROP_PIDS;
	T_OK(ctr_platform_refusal(&p, &s) == NULL, "with both accepted it may start");
	struct json_value *acc = ctr_platform_accepted_json(&p, &s);
	struct mg_buf b = MG_BUF_INIT(1024);
	json_generate(acc, &b, NULL);
	T_STR(mg_buf_str(&b), "[\"memory\",\"pids\"]",
	      "the accepted properties, for the audit log");
	mg_buf_free(&b);
	json_free(acc);
	ctr_platform_free(&p);
}

/* podman beside dockerd: the host's chains decide (forward.c) */
static void test_forward(void)
{
	const char *docker_drop = "-P INPUT ACCEPT\n-P FORWARD DROP\n-P OUTPUT ACCEPT\n"
	                          "-N DOCKER\n-N DOCKER-USER\n-A FORWARD -j DOCKER-USER\n"
	                          "-A FORWARD -o docker0 -m conntrack --ctstate "
	                          "RELATED,ESTABLISHED -j ACCEPT\n"
	                          "-A FORWARD -i docker0 ! -o docker0 -j ACCEPT\n"
	                          "-A FORWARD -i docker0 -o docker0 -j ACCEPT\n"
	                          "-A DOCKER-USER -j RETURN\n";
	char *why = ctr_forward_verdict(docker_drop, true, "podman3");
	T_OK(why != NULL && strstr(why, "FORWARD policy is DROP") != NULL &&
	         strstr(why, "iptables -I FORWARD -i podman+ -o podman+ -j ACCEPT") != NULL &&
	         strstr(why, "podman3") != NULL,
	     "dockerd's DROP with br_netfilter: refused, naming the bridge and the rule: %s",
	     why ? why : "(none)");
	free(why);
	T_OK(ctr_forward_verdict(docker_drop, false, "podman3") == NULL,
	     "without br_netfilter bridged traffic skips the chain");
	T_OK(ctr_forward_verdict("-P FORWARD ACCEPT\n-A FORWARD -j DOCKER-USER\n", true,
	                         "podman3") == NULL,
	     "an ACCEPT policy lets it through");
	struct {
		const char *rule;
		bool accepts;
		const char *what;
	} rules[] = {
	    {"-A FORWARD -i podman+ -o podman+ -j ACCEPT", true, "the documented rule"},
	    {"-A DOCKER-USER -i podman3 -o podman3 -j ACCEPT", true,
	     "the bridge itself in DOCKER-USER"},
	    {"-A FORWARD -j ACCEPT", true, "an unconditional accept"},
	    {"-A FORWARD -i podman+ -j ACCEPT", true, "any output from podman's bridges"},
	    {"-A FORWARD -i podman1 -o podman1 -j ACCEPT", false, "another bridge"},
	    {"-A FORWARD -i podman+ -o podman+ -j DROP", false, "a DROP"},
	    {"-A FORWARD -s 10.89.0.0/24 -j ACCEPT", false, "an address match (not counted on)"},
	    {"-A OTHER -i podman+ -o podman+ -j ACCEPT", false, "a chain FORWARD may not reach"},
	};
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		char *text = xasprintf("-P FORWARD DROP\n%s\n", rules[i].rule);
		char *v = ctr_forward_verdict(text, true, "podman3");
		T_OK((v == NULL) == rules[i].accepts, "%s: %s", rules[i].what,
		     rules[i].accepts ? "let through" : "still refused");
		free(v);
		free(text);
	}
}

/* ---- mounts opened without a race (mounts.c) ---------------------------- */

static volatile int swapping;

/* What a hostile server with a write mount does: swap a folder and a link
 * to / under the same name, as fast as it can */
static void *swapper(void *arg)
{
	const char *dir = arg;
	char sub[PATH_MAX + 16], parked[PATH_MAX + 16], link[PATH_MAX + 16];
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	snprintf(parked, sizeof(parked), "%s/sub.d", dir);
	snprintf(link, sizeof(link), "%s/sub.l", dir);
	while (swapping) {
		if (symlink("/", link) < 0)
			unlink(link);
		rename(sub, parked);
		rename(link, sub);
		unlink(sub);
		rename(parked, sub);
	}
	return NULL;
}

static void test_mount_race(void)
{
	char shared[PATH_MAX + 16], sub[PATH_MAX + 32];
	snprintf(shared, sizeof(shared), "%s/shared", workspace);
	snprintf(sub, sizeof(sub), "%s/sub", shared);
	mkdir(shared, 0700);
	mkdir(sub, 0700);
	struct stat want;
	stat(sub, &want);
	swapping = 1;
	pthread_t th;
	pthread_create(&th, NULL, swapper, shared);
	unsigned opened = 0, refused = 0, escaped = 0;
	for (int i = 0; i < 20000; i++) {
		int fd;
		char *real = NULL;
		struct mg_err *err = NULL;
		if (ctr_mount_open(workspace, "shared/sub", NULL, &fd, &real, &err) == 0) {
			opened++;
			/* the folder itself (it may be renamed since: the name is not
			 * the proof, the inode is) */
			struct stat st;
			if (fstat(fd, &st) < 0 || st.st_dev != want.st_dev ||
			    st.st_ino != want.st_ino)
				escaped++;
			close(fd);
			free(real);
		} else {
			refused++;
		}
		mg_err_free(err);
	}
	swapping = 0;
	pthread_join(th, NULL);
	t_note("20000 opens against a swapping link: %u opened the folder, %u refused", opened,
	       refused);
	T_INT(escaped, 0,
	      "no open, of 20000 raced against a swap to /, led anywhere but the folder");
	T_OK(opened > 0, "and the folder itself still opens (%u times)", opened);
	rmdir(sub);
	char p[PATH_MAX + 32];
	snprintf(p, sizeof(p), "%s/sub.d", shared);
	rmdir(p);
	snprintf(p, sizeof(p), "%s/sub.l", shared);
	unlink(p);
	rmdir(shared);
}

static void test_mount_rules(const struct cfg *cfg)
{
	/* mcpgate's own folders: never, not holding, not inside */
	char data[PATH_MAX + 32];
	snprintf(data, sizeof(data), "%s/src/mcpgate-data", workspace);
	mkdir(data, 0700);
	const char *protected_dirs[] = {data, NULL};
	int fd;
	char *real = NULL;
	struct mg_err *err = NULL;
	T_INT(ctr_mount_open(workspace, "src", protected_dirs, &fd, &real, &err), -1,
	      "a mount that holds mcpgate's data folder is refused");
	T_OK(err != NULL && strstr(err->msg, "one of mcpgate's own folders") != NULL,
	     "and says why: %s", mg_err_msg(err));
	mg_err_clear(&err);
	T_INT(ctr_mount_open(workspace, "src/mcpgate-data", protected_dirs, &fd, &real, &err), -1,
	      "the data folder itself is refused");
	mg_err_clear(&err);
	T_INT(ctr_mount_open(workspace, "out", protected_dirs, &fd, &real, &err), 0,
	      "a folder beside it is fine");
	close(fd);
	free(real);
	rmdir(data);

	/* without staging, a mount inside another server's write mount */
	(void)cfg;
	static const char text[] =
	    "[[server]]\nname = \"full\"\ntransport = \"container\"\nimage = \"a/b@sha256:"
	    "2222222222222222222222222222222222222222222222222222222222222222\"\n"
	    "mounts = [\"out:write\"]\n"
	    "[[server]]\nname = \"nested\"\ntransport = \"container\"\nimage = \"a/b@sha256:"
	    "2222222222222222222222222222222222222222222222222222222222222222\"\n"
	    "mounts = [\"out/inner\"]\n";
	struct cfg *two = NULL;
	T_INT(cfg_parse(text, sizeof(text) - 1, "two.toml", NULL, 0, NULL, &two, &err), 0,
	      "two servers, one mount inside the other's write mount: %s", mg_err_msg(err));
	mg_err_clear(&err);
	const struct cfg_server *inner = two != NULL ? cfg_find_server(two, "nested") : NULL;
	T_OK(inner != NULL, "the nested server is in servers.toml");
	if (inner != NULL) {
		char p[PATH_MAX + 16];
		snprintf(p, sizeof(p), "%s/out/inner", workspace);
		mkdir(p, 0700);
		struct ctr_mounts m;
		struct ctr_mount_plan plan = {
		    .cfg = two, .server = inner, .workspace = workspace, .tag = "t"};
		T_INT(ctr_mounts_open(&plan, &m, &err), -1,
		      "unstaged, a mount inside another server's write mount is refused");
		T_OK(err != NULL && strstr(err->msg, "inside a write mount of server full") != NULL,
		     "naming that server: %s", mg_err_msg(err));
		mg_err_clear(&err);
		if (geteuid() == 0) {
			char stage[PATH_MAX + 32];
			snprintf(stage, sizeof(stage), "%s/.mcpgate/stage", workspace);
			plan.stage_dir = stage;
			int r = ctr_mounts_open(&plan, &m, &err);
			T_INT(r, 0, "as root it is staged instead: %s", mg_err_msg(err));
			mg_err_clear(&err);
			if (r == 0) {
				struct statvfs sv;
				T_OK(statvfs(m.v[0].host, &sv) == 0 && (sv.f_flag & ST_RDONLY) &&
				         (sv.f_flag & ST_NOSUID),
				     "the staged bind is read-only and nosuid: %s", m.v[0].host);
				cleanup_free char *staged = xstrdup(m.v[0].host);
				ctr_mounts_release(&m);
				T_OK(access(staged, F_OK) < 0,
				     "released, the staged folder is gone");
			}
		} else {
			t_note("not root: staging not tried");
		}
		rmdir(p);
	}
	cfg_free(two);
}

/* mcpgate's seccomp profile, derived from a base of the project's own */
static void test_seccomp(void)
{
	char *text = NULL;
	size_t len = 0;
	struct mg_err *err = NULL;
	T_INT(mg_read_file("testdata/seccomp/base.json", 1u << 20, &text, &len, &err), 0,
	      "the test base profile reads");
	struct mg_buf out = MG_BUF_INIT(1u << 22);
	T_INT(ctr_seccomp_derive(text, len, &out, &err), 0, "derived: %s", mg_err_msg(err));
	free(text);
	struct json_value *p = NULL;
	T_INT(json_parse(out.data, out.len, NULL, &p, &err), 0, "the result is JSON");
	mg_buf_free(&out);
	if (p == NULL)
		return;
	T_STR(json_get_string(p, "defaultAction"), "SCMP_ACT_ERRNO", "the default action is kept");
	const struct json_value *calls = json_get(p, "syscalls");
	/* what each name ends as: its allowing rules, and its refusals */
	const char *names[] = {"read",   "unshare", "setns", "mount",  "keyctl",
	                       "ptrace", "bpf",     "clone", "clone3", "socket"};
	for (size_t n = 0; n < sizeof(names) / sizeof(names[0]); n++) {
		unsigned allow_plain = 0, allow_args = 0, deny = 0;
		int64_t errno_ret = 0;
		bool caps = false;
		for (size_t i = 0; calls != NULL && i < calls->u.arr.len; i++) {
			const struct json_value *r = calls->u.arr.items[i];
			const struct json_value *nm = json_get(r, "names");
			bool hit = false;
			for (size_t k = 0; nm != NULL && k < nm->u.arr.len; k++)
				hit |= strcmp(nm->u.arr.items[k]->u.str.ptr, names[n]) == 0;
			if (!hit)
				continue;
			const struct json_value *inc = json_get(json_get(r, "includes"), "caps");
			const struct json_value *exc = json_get(json_get(r, "excludes"), "caps");
			caps |= (inc != NULL && inc->u.arr.len > 0) ||
			        (exc != NULL && exc->u.arr.len > 0);
			const struct json_value *args = json_get(r, "args");
			bool has_args =
			    args != NULL && args->kind == JSON_ARRAY && args->u.arr.len > 0;
			if (strcmp(json_get_string(r, "action"), "SCMP_ACT_ALLOW") == 0) {
				if (has_args)
					allow_args++;
				else
					allow_plain++;
			} else {
				deny++;
				json_number_int64(json_get(r, "errnoRet"), &errno_ret);
			}
		}
		T_OK(!caps, "%s: no rule is left that depends on a capability", names[n]);
		if (strcmp(names[n], "read") == 0)
			T_OK(allow_plain == 1 && deny == 0,
			     "read is allowed as the base allows it");
		else if (strcmp(names[n], "clone") == 0)
			T_OK(allow_plain == 0 && allow_args == 1,
			     "clone is allowed only with its namespace flags masked out");
		else if (strcmp(names[n], "clone3") == 0)
			T_OK(allow_plain + allow_args == 0 && deny == 1 && errno_ret == 38,
			     "clone3 answers ENOSYS");
		else if (strcmp(names[n], "socket") == 0)
			T_OK(allow_plain == 0 && allow_args == 2 + (40 - 18) + 1,
			     "socket is allowed by family, AF_PACKET and AF_VSOCK left out (%u "
			     "rules)",
			     allow_args);
		else
			T_OK(allow_plain + allow_args == 0 && deny >= 1 && errno_ret == 1,
			     "%s: no allowing rule is left, and it is refused with EPERM",
			     names[n]);
	}
	/* the machine's architecture alone: i386's socketcall carries the socket
	 * family in memory, out of the socket rules' reach */
	const struct json_value *map = json_get(p, "archMap");
	const struct json_value *entry =
	    map != NULL && map->kind == JSON_ARRAY && map->u.arr.len == 1 ? map->u.arr.items[0]
	                                                                  : NULL;
	const struct json_value *subs = json_get(entry, "subArchitectures");
	T_OK(entry != NULL && json_get_string(entry, "architecture") != NULL &&
	         strcmp(json_get_string(entry, "architecture"), "SCMP_ARCH_X86_64") == 0 &&
	         subs != NULL && subs->kind == JSON_ARRAY && subs->u.arr.len == 0,
	     "archMap keeps x86-64 without its sub-architectures (x86, x32)");
	json_free(p);
#if defined(__x86_64__) && !defined(__ILP32__)
	static const char flat[] =
	    "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"architectures\":[\"SCMP_ARCH_X86\","
	    "\"SCMP_ARCH_X86_64\",\"SCMP_ARCH_X32\"],\"syscalls\":[{\"names\":[\"read\"],"
	    "\"action\":\"SCMP_ACT_ALLOW\"}]}";
	T_INT(ctr_seccomp_derive(flat, sizeof(flat) - 1, &out, &err), 0, "a flat list: %s",
	      mg_err_msg(err));
	p = NULL;
	json_parse(out.data, out.len, NULL, &p, NULL);
	const struct json_value *archs = json_get(p, "architectures");
	T_OK(archs != NULL && archs->kind == JSON_ARRAY && archs->u.arr.len == 1 &&
	         strcmp(archs->u.arr.items[0]->u.str.ptr, "SCMP_ARCH_X86_64") == 0,
	     "a flat \"architectures\" list becomes x86-64 alone");
	json_free(p);
	mg_buf_free(&out);
	static const char other[] =
	    "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"architectures\":[\"SCMP_ARCH_ARM\"],"
	    "\"syscalls\":[{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\"}]}";
	T_INT(ctr_seccomp_derive(other, sizeof(other) - 1, &out, &err), -1,
	      "a list without this machine's architecture is refused");
	T_OK(err != NULL && strstr(mg_err_msg(err), "SCMP_ARCH_X86_64") != NULL, "naming it: %s",
	     mg_err_msg(err));
	mg_err_clear(&err);
	mg_buf_free(&out);
#endif
	T_INT(ctr_seccomp_derive("{}", 2, &out, &err), -1, "a base without syscalls is refused");
	mg_err_clear(&err);
	mg_buf_free(&out);
}

/* The key of what the runtime said about this platform: one byte changed
 * in a file it reads changes it, and a runtime elsewhere has none */
static char *platform_key(struct ctr_driver *d, int *r)
{
	struct mg_buf k = MG_BUF_INIT(4u << 20);
	*r = d->ops->platform_key(d, &k);
	return mg_buf_steal(&k, NULL);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (f != NULL) {
		fputs(text, f);
		fclose(f);
	}
}

static int bind_socket(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	unlink(path);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static void test_platform_key(void)
{
	char dir[] = "/tmp/mcpgate-key-XXXXXX";
	T_OK(mkdtemp(dir) != NULL, "a temporary home");
	cleanup_free char *home = xasprintf("HOME=%s", dir);
	cleanup_free char *conf = xasprintf("%s/.config/containers/containers.conf.d", dir);
	T_INT(mg_mkdir_p(conf, 0700, NULL), 0, "its containers.conf.d");
	char *env[] = {"PATH=/usr/bin:/bin", home, NULL};
	struct ctr_driver *d = ctr_driver_for(CTR_PODMAN, "/bin/sh", env);
	int r = 0;
	cleanup_free char *k1 = platform_key(d, &r);
	T_INT(r, 1, "podman here has a key");
	cleanup_free char *again = platform_key(d, &r);
	T_STR(again, k1, "the same while nothing changes");
	cleanup_free char *file = xasprintf("%s/50-a.conf", conf);
	write_text(file, "[engine]\ncgroup_manager = \"cgroupfs\"\n");
	cleanup_free char *k2 = platform_key(d, &r);
	T_OK(strcmp(k1, k2) != 0, "a file added to the user's containers.conf.d changes it");
	write_text(file, "[engine]\ncgroup_manager = \"systemd\"\n\n");
	struct stat st;
	stat(file, &st);
	struct timespec same[2] = {st.st_atim, st.st_mtim};
	cleanup_free char *k3 = platform_key(d, &r);
	T_OK(strcmp(k2, k3) != 0, "so does a change of its content");
	write_text(file, "[engine]\ncgroup_manager = \"cgroupfs\"\n\n");
	utimensat(AT_FDCWD, file, same, 0);
	cleanup_free char *k4 = platform_key(d, &r);
	T_OK(strcmp(k3, k4) != 0, "even one of the same size and modification time");
	cleanup_free char *storage = xasprintf("%s/.config/containers/storage.conf", dir);
	write_text(storage, "[storage]\n");
	cleanup_free char *k5 = platform_key(d, &r);
	T_OK(strcmp(k4, k5) != 0, "so does the user's storage.conf");
	T_OK(strstr(k5, "boot_id") != NULL && strstr(k5, "uname ") != NULL,
	     "and the kernel and this boot are in it");
	ctr_driver_free(d);

	char *remote[] = {"PATH=/usr/bin:/bin", home, "CONTAINER_HOST=ssh://h/run/podman.sock",
	                  NULL};
	d = ctr_driver_for(CTR_PODMAN, "/bin/sh", remote);
	cleanup_free char *none = platform_key(d, &r);
	T_INT(r, 0, "podman talking to a service elsewhere: nothing is kept");
	ctr_driver_free(d);

	cleanup_free char *sock = xasprintf("%s/docker.sock", dir);
	cleanup_free char *host = xasprintf("DOCKER_HOST=unix://%s", sock);
	char *docker[] = {"PATH=/usr/bin:/bin", home, host, NULL};
	d = ctr_driver_for(CTR_DOCKER, "/bin/sh", docker);
	cleanup_free char *no_daemon = platform_key(d, &r);
	T_INT(r, 0, "docker without its socket: nothing is kept");
	int fd = bind_socket(sock);
	cleanup_free char *d1 = platform_key(d, &r);
	T_INT(r, 1, "docker with a local socket has a key");
	close(fd);
	fd = bind_socket(sock);
	cleanup_free char *d2 = platform_key(d, &r);
	T_OK(r == 1 && strcmp(d1, d2) != 0, "a daemon that made its socket anew changes it");
	cleanup_free char *cfgdir = xasprintf("%s/.docker", dir);
	cleanup_free char *cfgfile = xasprintf("%s/config.json", cfgdir);
	mg_mkdir_p(cfgdir, 0700, NULL);
	write_text(cfgfile, "{\"currentContext\": \"far\"}");
	cleanup_free char *ctx = platform_key(d, &r);
	T_INT(r, 0, "a docker context (a daemon maybe elsewhere): nothing is kept");
	unlink(cfgfile);
	ctr_driver_free(d);
	char *tcp[] = {"PATH=/usr/bin:/bin", home, "DOCKER_HOST=tcp://10.0.0.1:2375", NULL};
	d = ctr_driver_for(CTR_DOCKER, "/bin/sh", tcp);
	cleanup_free char *far = platform_key(d, &r);
	T_INT(r, 0, "DOCKER_HOST over tcp: nothing is kept");
	ctr_driver_free(d);
	if (fd >= 0)
		close(fd);
	t_remove_tree(dir);
}

/* The profile file is used only when it holds what was derived: one planted
 * under its name, or changed after it was kept, is written again */
static void test_seccomp_kept(void)
{
	char dir[] = "/tmp/mcpgate-seccomp-XXXXXX";
	T_OK(mkdtemp(dir) != NULL, "a temporary data folder");
	char base[PATH_MAX];
	T_OK(realpath("testdata/seccomp/base.json", base) != NULL, "the test base profile");
	setenv("MCPGATE_SECCOMP_BASE", base, 1);
	char *env[] = {"PATH=/usr/bin:/bin", NULL};
	struct ctr_driver *d = ctr_driver_for(CTR_PODMAN, "/bin/sh", env);
	d->cache_dir = xasprintf("%s/cache", dir);
	struct mg_err *err = NULL;
	cleanup_free char *first = NULL;
	T_INT(ctr_seccomp_prepare(NULL, dir, &first, &err), 0, "derived without a cache: %s",
	      mg_err_msg(err));
	cleanup_free char *derived = first != NULL ? t_read_file(first, NULL) : NULL;
	write_text(first, "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[]}");
	cleanup_free char *second = NULL;
	T_INT(ctr_seccomp_prepare(NULL, dir, &second, &err), 0, "derived again");
	cleanup_free char *now = second != NULL ? t_read_file(second, NULL) : NULL;
	T_OK(second != NULL && strcmp(second, first) == 0 && now != NULL && derived != NULL &&
	         strcmp(now, derived) == 0,
	     "a file planted under the profile's name is replaced by the derived profile");
	cleanup_free char *kept = NULL, *again = NULL;
	T_INT(ctr_seccomp_prepare(d, dir, &kept, &err), 0, "derived, and kept in the cache");
	T_INT(ctr_seccomp_prepare(d, dir, &again, &err), 0, "found in the cache");
	T_OK(kept != NULL && again != NULL && strcmp(kept, again) == 0, "the same profile");
	write_text(again, "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[]}");
	cleanup_free char *third = NULL;
	T_INT(ctr_seccomp_prepare(d, dir, &third, &err), 0, "asked once more");
	cleanup_free char *after = third != NULL ? t_read_file(third, NULL) : NULL;
	T_OK(after != NULL && derived != NULL && strcmp(after, derived) == 0,
	     "a kept profile changed since is not used: it is derived and written again");
	unsetenv("MCPGATE_SECCOMP_BASE");
	t_remove_tree(dir);
	ctr_driver_free(d);
}

/* runtime = "swarm": the run command is mcpgate's own helper with the
 * server's whole command after "--"; no secret's value in its argv or
 * environment; a server with mounts, or without the launcher, refused */
static bool has_pair(struct strv *a, const char *k, const char *v)
{
	for (size_t i = 0; i + 1 < a->n; i++)
		if (strcmp(a->v[i], k) == 0 && strcmp(a->v[i + 1], v) == 0)
			return true;
	return false;
}

static void test_swarm_argv(const struct cfg *cfg)
{
	char *environment[] = {"PATH=/usr/bin:/bin", "DOCKER_HOST=unix:///run/manager.sock",
	                       "AWS_SECRET_ACCESS_KEY=not-for-the-runtime", NULL};
	struct ctr_driver *d = ctr_driver_for(CTR_SWARM, "/usr/bin/docker", environment);
	d->seccomp = xstrdup("/seccomp/mcpgate.json");
	T_STR(d->name, "swarm", "the swarm driver's name");
	for (size_t i = 0; i < cfg->nservers; i++) {
		const struct cfg_server *s = &cfg->servers[i];
		struct ctr_env env[] = {{"HTTPS_PROXY", "http://10.232.0.2:3128", true}};
		struct ctr_env secret[] = {{"GITHUB_TOKEN", "ghp_value_never_in_argv", false}};
		struct ctr_image_config image = {0};
		strv_push(&image.entrypoint, "/app/server");
		strv_push(&image.cmd, "--stdio");
		struct ctr_mounts none = {0};
		struct ctr_run_spec spec = {
		    .server = s,
		    .session = "s1",
		    .owner = 4242,
		    .image = &image,
		    .mounts = &none,
		    .network = s->nhosts > 0 ? "mcpgate-keyed-s1-in" : NULL,
		    .env = s->nhosts > 0 ? env : NULL,
		    .nenv = s->nhosts > 0 ? 1 : 0,
		    .secrets = s->credential != NULL ? secret : NULL,
		    .nsecrets = s->credential != NULL ? 1 : 0,
		    .launcher = "/data/mcpgate/launch/mcpgate-launch-abc",
		};
		struct strv argv = STRV_INIT, envp = STRV_INIT;
		struct mg_err *err = NULL;
		/* an image no node can pull is refused first, naming the
		 * registry they pull from, or the key that names none */
		free(d->registry);
		d->registry = NULL;
		T_INT(d->ops->run_command(d, &spec, &argv, &envp, &err), -1,
		      "swarm %s: without swarm_registry nothing is placed", s->name);
		T_OK(err != NULL && strstr(mg_err_msg(err), "set swarm_registry") != NULL,
		     "swarm %s: and the key is named: %s", s->name, mg_err_msg(err));
		mg_err_clear(&err);
		d->registry = xstrdup("elsewhere.example:5000");
		T_INT(d->ops->run_command(d, &spec, &argv, &envp, &err), -1,
		      "swarm %s: an image outside the swarm's registry is refused", s->name);
		T_OK(err != NULL &&
		         strstr(mg_err_msg(err), "not in the swarm's registry "
		                                 "elsewhere.example:5000") != NULL &&
		         strstr(mg_err_msg(err), "`mcpgate pull`") != NULL,
		     "swarm %s: naming the registry and the fix: %s", s->name, mg_err_msg(err));
		mg_err_clear(&err);
		free(d->registry);
		d->registry = xstrndup(s->image, (size_t)(strchr(s->image, '/') - s->image));
		int r = d->ops->run_command(d, &spec, &argv, &envp, &err);
		if (s->nmounts > 0) {
			T_INT(r, -1, "swarm %s: a server with mounts is refused", s->name);
			T_OK(err != NULL &&
			         strstr(mg_err_msg(err), "mounts are not possible") != NULL,
			     "swarm %s: and says why: %s", s->name, mg_err_msg(err));
			mg_err_clear(&err);
			ctr_image_config_free(&image);
			continue;
		}
		T_INT(r, 0, "swarm %s: the helper's argv built %s", s->name, mg_err_msg(err));
		mg_err_clear(&err);
		if (r < 0) {
			ctr_image_config_free(&image);
			continue;
		}
		cleanup_free char *a = join_lines(strv_array(&argv), "/nowhere");
		cleanup_free char *e = join_lines(strv_array(&envp), "/nowhere");
		T_OK(argv.n > 2 && strcmp(argv.v[1], "__swarm-run") == 0,
		     "swarm %s: mcpgate's own helper runs it: %s", s->name, a);
		T_OK(has_pair(&argv, "--network", s->nhosts > 0 ? "mcpgate-keyed-s1-in" : "-") &&
		         has_pair(&argv, "--image", s->image) &&
		         has_pair(&argv, "--launcher", "/data/mcpgate/launch/mcpgate-launch-abc") &&
		         has_pair(&argv, "--seccomp", "/seccomp/mcpgate.json"),
		     "swarm %s: its network (or one of its own), pinned image, launcher, profile",
		     s->name);
		bool secrets = false;
		size_t dash = 0;
		for (size_t k = 0; k < argv.n; k++) {
			secrets |= strcmp(argv.v[k], "--secrets") == 0;
			if (dash == 0 && strcmp(argv.v[k], "--") == 0)
				dash = k;
		}
		T_OK(secrets == (s->credential != NULL),
		     "swarm %s: --secrets exactly when it has a credential", s->name);
		const char *first = s->command != NULL ? s->command[0] : "/app/server";
		T_OK(dash > 0 && dash + 1 < argv.n && strcmp(argv.v[dash + 1], first) == 0,
		     "swarm %s: its whole command after \"--\" (%s)", s->name, first);
		T_OK(strstr(a, "ghp_value_never_in_argv") == NULL &&
		         strstr(e, "ghp_value_never_in_argv") == NULL &&
		         strstr(e, "not-for-the-runtime") == NULL,
		     "swarm %s: no secret in the helper's argv or environment", s->name);
		if (s->nhosts > 0)
			T_OK(has_pair(&argv, "--env", "HTTPS_PROXY") &&
			         strstr(e, "HTTPS_PROXY=http://10.232.0.2:3128") != NULL &&
			         strstr(a, "10.232.0.2") == NULL,
			     "swarm %s: a setting by name, its value in the environment only",
			     s->name);
		strv_free(&argv);
		strv_free(&envp);
		spec.launcher = NULL;
		T_INT(d->ops->run_command(d, &spec, &argv, &envp, &err), -1,
		      "swarm %s: without mcpgate-launch nothing is placed", s->name);
		mg_err_clear(&err);
		ctr_image_config_free(&image);
	}
	ctr_driver_free(d);
}

/* the egress proxy on a swarm: a service of its own placed by the helper,
 * on the outer overlay and then the inner one (the relay's), the proxy
 * bind-mounted beside the launcher, started before its peer; what cannot
 * follow it onto another node refused */
static void test_swarm_sidecar(const struct cfg *cfg)
{
	char *environment[] = {"PATH=/usr/bin:/bin", "SECRET=not-for-it", NULL};
	struct ctr_driver *d = ctr_driver_for(CTR_SWARM, "/usr/bin/docker", environment);
	d->seccomp = xstrdup("/seccomp/mcpgate.json");
	const struct cfg_server *s = cfg_find_server(cfg, "full");
	d->registry = xstrndup(s->image, (size_t)(strchr(s->image, '/') - s->image));
	const char *args[] = {"-listen", "0.0.0.0:3128", "-lifeline", NULL};
	struct ctr_topology topo = {
	    .net_in = (char *)"mcpgate-full-s1-in",
	    .net_out = (char *)"mcpgate-full-s1-out",
	    .sidecar = (char *)"mcpgate-full-s1-egress",
	    .join = STRV_INIT,
	};
	struct ctr_sidecar_spec spec = {
	    .server = s,
	    .session = "s1",
	    .owner = 4242,
	    .topology = &topo,
	    .binary = "/data/mcpgate/egress/mcpgate-egress-0123abcd",
	    .args = args,
	    .launcher = "/data/mcpgate/launch/mcpgate-launch-abc",
	};
	struct strv argv = STRV_INIT, envp = STRV_INIT;
	struct mg_err *err = NULL;
	T_INT(d->ops->sidecar_command(d, &spec, &argv, &envp, &err), 0, "swarm: sidecar argv %s",
	      mg_err_msg(err));
	mg_err_clear(&err);
	cleanup_free char *a = join_lines(strv_array(&argv), "/nowhere");
	int out = strv_find(&argv, "mcpgate-full-s1-out"),
	    in = strv_find(&argv, "mcpgate-full-s1-in");
	T_OK(argv.n > 2 && strcmp(argv.v[1], "__swarm-run") == 0 &&
	         has_pair(&argv, "--name", "mcpgate-full-s1-egress") && out > 0 && in > out &&
	         strcmp(argv.v[out - 1], "--network") == 0 &&
	         strcmp(argv.v[in - 1], "--network") == 0 &&
	         has_pair(&argv, "--bind",
	                  "/data/mcpgate/egress/mcpgate-egress-0123abcd:/mcpgate-egress") &&
	         strv_find(&argv, "--early") > 0 && has_pair(&argv, "--", "/mcpgate-egress") &&
	         has_pair(&argv, "--user", "65534:65534"),
	     "swarm: the proxy is a service on the outer overlay, then the inner one: %s", a);
	T_OK(strv_find(&envp, "SECRET=not-for-it") < 0,
	     "swarm: the proxy's helper gets the fixed environment only");
	strv_free(&argv);
	strv_free(&envp);
	spec.connect_dir = "/state/connect";
	T_INT(d->ops->sidecar_command(d, &spec, &argv, &envp, &err), -1,
	      "swarm: connect to the gateway's loopback is refused");
	T_OK(err != NULL && strstr(mg_err_msg(err), "not possible on runtime") != NULL,
	     "swarm: and says why: %s", mg_err_msg(err));
	mg_err_clear(&err);
	ctr_driver_free(d);
}

int main(void)
{
	make_workspace();
	struct cfg *cfg = NULL;
	struct mg_err *err = NULL;
	if (cfg_load_files("testdata/container/servers.toml", NULL, &cfg, &err) < 0) {
		printf("Bail out! %s\n", mg_err_msg(err));
		return 1;
	}
	test_argv(cfg, CTR_PODMAN);
	test_argv(cfg, CTR_DOCKER);
	test_swarm_argv(cfg);
	test_swarm_sidecar(cfg);
	test_launch_block();
	test_sidecar(cfg, CTR_PODMAN);
	test_sidecar(cfg, CTR_DOCKER);
	test_topology(cfg, CTR_PODMAN);
	test_topology(cfg, CTR_DOCKER);
	test_reserved(cfg);
	test_data_args(cfg);
	test_mounts();
	test_names_and_owner();
	test_owner_label();
	test_seccomp();
	test_platform();
	test_platform_key();
	test_seccomp_kept();
	test_forward();
	test_mount_race();
	test_mount_rules(cfg);
	test_mount_root();
	cfg_free(cfg);
	remove_workspace();
	return t_done();
}
