/* What most commands do first: read the configuration, find the runtime. */
#ifndef MG_CMD_SETUP_H
#define MG_CMD_SETUP_H

#include "internal/base/err.h"
#include "internal/config/config.h"
#include "internal/container/container.h"

/* Load DIR (NULL: the default place); every error printed by the caller. */
int setup_config(const char *dir, struct cfg **out, struct mg_err **err);

/* The runtime that config.toml names, or podman when on PATH, else docker. */
int setup_driver(const struct cfg *cfg, struct ctr_driver **out, struct mg_err **err);

/* DATA/runtime says d holds the images mcpgate put in a runtime: setup_driver
 * warns when it finds another (podman gone, so docker found) */
/* The warning setup_driver gave when the runtime found is not the one
 * holding mcpgate's images (serve tells the client too), or NULL */
const char *setup_runtime_note(void);

void setup_remember_runtime(const struct ctr_driver *d);

/* The server NAME, which must exist. */
const struct cfg_server *setup_server(const struct cfg *cfg, const char *name, struct mg_err **err);

/* On stderr, when podman's servers with hosts (only, when not NULL: that one)
 * could not reach their egress sidecar through the host's firewall: what,
 * and the rule that fixes it. d may be NULL (the runtime is then found). */
void setup_warn_forward(const struct cfg *cfg, const struct ctr_driver *d, const char *only);

#endif
