#include "cmd/mcpgate/setup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal/base/cleanup.h"
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
	if (cfg_default_data_dir(&data, &derr) == 0) {
		ctr_driver_use_seccomp(*out, data);
		(*out)->images_dir = xasprintf("%s/images", data);
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
		hosts |= cfg->servers[i].nhosts > 0 &&
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
