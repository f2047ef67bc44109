/* A contained step of mcpgate add: a program of mcpgate's run over a
 * stranger's package in a container with a server's isolation, never on
 * the host. npm's install scripts (add_scripts.c) and the build of a Python
 * source distribution (add_pypi_sdist.c) are such steps.
 *
 * The step is a server of its own to the configuration (so it gets the same
 * checks and the same run argv as any server: read-only root, no
 * capabilities, seccomp, no network, limits held or refused): the work
 * folder read-only at /workspace, one folder of it writable, the runner
 * written into work for the run and removed after. Its image is the Debian
 * base and the language's layer, with the build tools when native code is
 * built; its top a marker saying what it is. Kept like a server's image, so
 * docker runs it by its ID. What the step left in its folder is treated as
 * hostile afterwards: setuid and setgid bits are cleared and anything that
 * is not a file, folder or link removed. */
#define _GNU_SOURCE
#include <errno.h>
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

#define STEP_TIMEOUT_MS (15 * 60 * 1000)
#define STEP_OUTPUT_MAX (1u << 20)
/* whom the step runs as when root runs add: nobody, as a server would not
 * run as root either */
#define STEP_NOBODY 65534

static int step_image(const char *data, const char *name, const struct add_layers *layers,
                      const struct add_step *st, char **image, char **archive, struct mg_err **err)
{
	cleanup_free char *images = xasprintf("%s/images", data);
	cleanup_free char *marker = xasprintf("%s/install-step", images);
	const char text[] = "the contained install step of mcpgate add\n";
	if (mg_mkdir_p(images, 0700, err) < 0 ||
	    mg_write_file_atomic(marker, text, sizeof(text) - 1, 0644, err) < 0)
		return -1;
	cleanup_free char *add = xasprintf("%s:/etc/mcpgate-install-step", marker);
	const char *adds[] = {add};
	cleanup_free char *repo = xasprintf("mcpgate-%s", st->kind);
	cleanup_free char *out = xasprintf("%s/%s-%s.tar.new", images, st->kind, name);
	cleanup_free char *ref = xasprintf("%s:%s", repo, name);
	struct strv labels = STRV_INIT;
	strv_pushf(&labels, "%s=%s", st->label, st->what);
	struct pack_spec spec = {
	    .output = out,
	    .adds = adds,
	    .n_adds = 1,
	    .entrypoint = st->entrypoint,
	    .n_entrypoint = st->n_entrypoint,
	    .env = st->env,
	    .n_env = st->n_env,
	    .workdir = "/workspace",
	    .name = ref,
	};
	struct pack_result res = {0};
	int r =
	    add_pack_over(&spec, layers, true, &labels, images, repo, &res, image, archive, err);
	pack_result_free(&res);
	strv_free(&labels);
	return r;
}

/* The step as a server of its own: the configuration gives it the same
 * checks and the same run argv as any server */
static int step_server(const char *name, const char *image, const struct add_step *st,
                       const struct strv *accept, struct cfg **out, struct mg_err **err)
{
	struct toml_value *t = toml_new_table();
	cleanup_free char *step_name = xasprintf("%s-%s", name, st->kind);
	cleanup_free char *writable = xasprintf("%s:write", st->write);
	toml_table_set(t, "name", 4, toml_new_string(step_name));
	toml_table_set(t, "transport", 9, toml_new_string("container"));
	toml_table_set(t, "image", 5, toml_new_string(image));
	struct toml_value *mounts = toml_new_array();
	toml_array_push(mounts, toml_new_string(".:read"));
	toml_array_push(mounts, toml_new_string(writable));
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
static int step_limits(const struct ctr_driver *d, const struct cfg_server *s,
                       const struct add_step *st, struct mg_err **err)
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
		return mg_err_set(err,
		                  "%s: not run in a container here: %s (for add: "
		                  "--accept-unenforced LIST, which the server's entry then says "
		                  "too)",
		                  st->what, refusal);
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

int add_step_run(const struct cfg *cfg, struct ctr_driver *d, const char *work, const char *data,
                 const char *name, const struct add_layers *layers, const struct add_step *st,
                 const struct strv *accept, int *status, struct mg_err **err)
{
	cleanup_free char *image = NULL, *archive = NULL, *state = NULL, *stage = NULL;
	cleanup_free char *cfg_dir = NULL, *state_dir = NULL, *cname = NULL;
	cleanup_free char *runner_path = xasprintf("%s/%s", work, st->runner_name);
	cleanup_free char *writable = xasprintf("%s/%s", work, st->write);
	struct cfg *step = NULL;
	struct ctr_mounts mounts = {0};
	struct strv argv = STRV_INIT, envp = STRV_INIT;
	struct proc_result res = {0};
	struct ctr_mount_plan plan;
	struct ctr_run_spec spec;
	struct stat sb, wb;
	struct add_owner nobody = {STEP_NOBODY, STEP_NOBODY}, back = {0, 0};
	bool given = false, opened = false;
	char session[13], user[32];
	unsigned char raw[6];
	int r = -1;

	*status = -1;
	if (mg_write_file_atomic(runner_path, st->runner, st->runner_len, 0644, err) < 0 ||
	    step_image(data, name, layers, st, &image, &archive, err) < 0 ||
	    d->ops->load(d, archive, err) < 0 ||
	    step_server(name, image, st, accept, &step, err) < 0 ||
	    step_limits(d, &step->servers[0], st, err) < 0 ||
	    cfg_default_state_dir(&state, err) < 0)
		goto out;
	if (stat(writable, &sb) < 0 || stat(work, &wb) < 0) {
		mg_err_sys(err, errno, "%s", writable);
		goto out;
	}
	back = (struct add_owner){sb.st_uid, sb.st_gid};
	cfg_dir = xstrdup(cfg->mcp_path);
	if (strrchr(cfg_dir, '/') != NULL)
		*strrchr(cfg_dir, '/') = '\0';
	randombytes_buf(raw, sizeof(raw));
	sodium_bin2hex(session, sizeof(session), raw, sizeof(raw));
	state_dir = xasprintf("%s/mcpgate", state);
	stage = xasprintf("%s/mounts", state_dir);
	/* the work folder is inside mcpgate's data folder, which therefore is
	 * not among the protected ones here; the configuration and the state
	 * (where the staged binds are) are */
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
	/* the step writes its folder as the one who owns it: the person
	 * (rootless podman's root is the person too); when that is root, as
	 * nobody, its folder given to nobody for the run and the work folder
	 * open to read, both as they were after */
	if (d->kind == CTR_PODMAN && geteuid() != 0) {
		snprintf(user, sizeof(user), "0:0");
	} else if (sb.st_uid == 0) {
		unsigned none = 0;
		given = true;
		if (add_clear_tree_to(writable, &nobody, &none, err) < 0)
			goto out;
		opened = chmod(work, 0755) == 0;
		snprintf(user, sizeof(user), "%u:%u", STEP_NOBODY, STEP_NOBODY);
	} else {
		snprintf(user, sizeof(user), "%u:%u", (unsigned)sb.st_uid, (unsigned)sb.st_gid);
	}
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
	for (size_t i = 0; st->args != NULL && i < st->args->n; i++)
		strv_push(&argv, st->args->v[i]);
	fprintf(stderr, "mcpgate add: %s in a container (no network, only %s writable)\n", st->what,
	        st->write);
	cname = ctr_container_name(step->servers[0].name, session);
	if (proc_run((const char *const *)strv_array(&argv), (const char *const *)strv_array(&envp),
	             STEP_TIMEOUT_MS, STEP_OUTPUT_MAX, &res, err) < 0) {
		mg_err_wrap(err, "%s of %s", st->what, name);
		goto out;
	}
	*status = WIFEXITED(res.status) ? WEXITSTATUS(res.status) : -1;
	bool quiet = *status == 0 || (st->quiet_status != 0 && *status == st->quiet_status);
	show_output(&res.out, quiet ? 20 : 0);
	show_output(&res.err, quiet ? 20 : 0);
	r = 0;
out:
	/* a timeout leaves it running: gone either way */
	if (cname != NULL)
		d->ops->remove(d, cname, NULL);
	ctr_mounts_release(&mounts);
	if (opened)
		chmod(work, wb.st_mode & 07777);
	if (cname != NULL || given) {
		unsigned cleared = 0;
		struct mg_err *werr = NULL;
		if (add_clear_tree_to(writable, given ? &back : NULL, &cleared, &werr) < 0 &&
		    r == 0)
			r = mg_err_set(err, "after %s: %s", st->what, mg_err_msg(werr));
		mg_err_clear(&werr);
		if (cleared > 0)
			fprintf(stderr,
			        "mcpgate add: cleared %u setuid, setgid or special file(s) %s "
			        "left\n",
			        cleared, st->what);
	}
	unlink(runner_path);
	proc_result_free(&res);
	strv_free(&argv);
	strv_free(&envp);
	cfg_free(step);
	return r;
}
