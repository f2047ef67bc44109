#include "cmd/mcpgate/setup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/log.h"
#include "internal/base/xalloc.h"

int setup_config(const char *dir, struct cfg **out, struct mg_err **err)
{
	cleanup_free char *def = NULL;
	if (dir == NULL) {
		if (cfg_default_config_dir(&def, err) < 0)
			return -1;
		dir = def;
	}
	return cfg_load(dir, out, err);
}

/* DATA/runtime: the runtime mcpgate last put an image in (add, update,
 * pull), a word on one line */
static char *runtime_record(const char *data)
{
	return xasprintf("%s/runtime", data);
}

/* Said once a process: the runtime found is not the one that holds the
 * images mcpgate put in one, so every server will be missing its image, and
 * the runtime's own error (docker's "Cannot connect to the Docker daemon")
 * would not say why */
static char *runtime_note;

const char *setup_runtime_note(void)
{
	return runtime_note;
}

static void warn_other_runtime(const struct cfg *cfg, const struct ctr_driver *d, const char *data)
{
	static bool said;
	cleanup_free char *path = runtime_record(data);
	cleanup_free char *text = NULL;
	size_t len = 0;
	struct mg_err *rerr = NULL;
	if (said || mg_read_file(path, 64, &text, &len, &rerr) < 0) {
		mg_err_free(rerr);
		return;
	}
	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == ' '))
		text[--len] = '\0';
	if (len == 0 || strcmp(text, d->name) == 0 ||
	    (strcmp(text, "podman") != 0 && strcmp(text, "docker") != 0))
		return;
	said = true;
	if (cfg->mcp.runtime == CFG_RUNTIME_UNSET)
		runtime_note = xasprintf(
		    "%s is used (%s), but the images mcpgate put in a runtime are in %s (as %s "
		    "records): install %s again, or set runtime = \"%s\" in config.toml and add or "
		    "pull the servers again with it",
		    d->name,
		    strcmp(text, "podman") == 0 ? "podman is not on PATH"
		                                : "podman, found on PATH, comes first",
		    text, path, text, d->name);
	else
		runtime_note = xasprintf(
		    "%s is used (runtime in config.toml), but the images mcpgate put in a runtime "
		    "are in %s (as %s records): set runtime = \"%s\", or add or pull the servers "
		    "again with %s",
		    d->name, text, path, text, d->name);
	mg_warn("%s", runtime_note);
}

void setup_remember_runtime(const struct ctr_driver *d)
{
	cleanup_free char *data = NULL;
	struct mg_err *err = NULL;
	if (cfg_default_data_dir(&data, &err) == 0 && mg_mkdir_p(data, 0700, &err) == 0) {
		cleanup_free char *path = runtime_record(data);
		cleanup_free char *line = xasprintf("%s\n", d->name);
		if (mg_write_file_atomic(path, line, strlen(line), 0600, &err) == 0)
			return;
	}
	mg_info("cannot record the runtime the image is in: %s", mg_err_msg(err));
	mg_err_free(err);
}

int setup_driver(const struct cfg *cfg, struct ctr_driver **out, struct mg_err **err)
{
	if (ctr_driver_new(cfg->mcp.runtime, getenv("PATH"), out, err) < 0)
		return -1;
	/* every container it runs gets mcpgate's seccomp profile, or none runs */
	cleanup_free char *data = NULL, *state = NULL;
	struct mg_err *derr = NULL;
	/* what the runtime said that stays true is kept here between sessions */
	if (cfg_default_state_dir(&state, NULL) == 0)
		(*out)->cache_dir = xasprintf("%s/cache", state);
	if (cfg->mcp.swarm_registry != NULL)
		(*out)->registry = xstrdup(cfg->mcp.swarm_registry);
	if (cfg_default_data_dir(&data, &derr) == 0) {
		ctr_driver_use_seccomp(*out, data);
		(*out)->images_dir = xasprintf("%s/images", data);
		warn_other_runtime(cfg, *out, data);
	} else
		(*out)->seccomp_error = xstrdup(mg_err_msg(derr));
	mg_err_free(derr);
	return 0;
}

const struct cfg_server *setup_server(const struct cfg *cfg, const char *name, struct mg_err **err)
{
	const struct cfg_server *s = cfg_find_server(cfg, name);
	if (s == NULL)
		mg_err_set(err, "no server \"%s\" in %s", name, cfg->mcp_path);
	return s;
}

void setup_warn_forward(const struct cfg *cfg, const struct ctr_driver *d, const char *only)
{
	bool hosts = false;
	for (size_t i = 0; i < cfg->nservers; i++)
		hosts |= cfg_server_has_egress(&cfg->servers[i]) &&
		         (only == NULL || strcmp(cfg->servers[i].name, only) == 0);
	/* only root reads the host's chains, and only rootful podman uses them */
	if (!hosts || geteuid() != 0)
		return;
	struct ctr_driver *own = NULL;
	if (d == NULL && setup_driver(cfg, &own, NULL) == 0)
		d = own;
	cleanup_free char *problem = NULL;
	if (d != NULL && d->kind == CTR_PODMAN && ctr_forward_problem(NULL, &problem, NULL) == 0 &&
	    problem != NULL)
		fprintf(stderr, "mcpgate: warning: %s servers with hosts will be unavailable: %s\n",
		        d->name, problem);
	ctr_driver_free(own);
}
