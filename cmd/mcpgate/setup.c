#include "cmd/mcpgate/setup.h"

#include <stdlib.h>

#include "internal/base/cleanup.h"

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
	return ctr_driver_new(cfg->mcp.runtime, getenv("PATH"), out, err);
}

const struct cfg_server *setup_server(const struct cfg *cfg, const char *name, struct mg_err **err)
{
	const struct cfg_server *s = cfg_find_server(cfg, name);
	if (s == NULL)
		mg_err_set(err, "no server \"%s\" in %s", name, cfg->mcp_path);
	return s;
}
