/* The swarm driver's names and its helper process (docs/2026-12-02-swarm.md).
 * A server NAME (ctr_container_name) is, on the swarm: the service NAME, the
 * secrets NAME-tok (the relay's token) and NAME-env (the secret variables'
 * block, when it has a secret), the relay container NAME-relay on the
 * manager, and NAME-net, its internal overlay when it has no egress. */
#ifndef MG_CONTAINER_SWARM_H
#define MG_CONTAINER_SWARM_H

#include <stdbool.h>

#include "internal/base/err.h"

struct ctr_driver;

#define CTR_SWARM_TOKEN_SUFFIX "-tok"
#define CTR_SWARM_ENV_SUFFIX   "-env"
#define CTR_SWARM_RELAY_SUFFIX "-relay"
#define CTR_SWARM_NET_SUFFIX   "-net"
/* where the launcher listens in the task, on the session's overlay */
#define CTR_SWARM_PORT "7000"

/* `mcpgate __swarm-run ...`: places one server and is its stdio until it
 * ends (swarm_run.c); the exit status is the relay's */
int ctr_swarm_run_main(int argc, char **argv);

/* remove server NAME's service, secrets, relay and (network) its own
 * network; absent is fine */
int ctr_swarm_remove_server(const struct ctr_driver *d, const char *name, bool network,
                            struct mg_err **err);

/* image is pinned in the swarm's registry (d->registry) */
bool ctr_swarm_in_registry(const struct ctr_driver *d, const char *image);

/* mcpgate pull on a swarm. An image pinned in the swarm's registry: the
 * manager pulls it from there (the proof the nodes can), *pinned NULL. Any
 * other: the manager fetches it from where it names, pushes it to the
 * swarm's registry and pulls it back from there by digest; *pinned
 * (allocated) is its reference there, REGISTRY/PATH@sha256:..., which the
 * entry must pin now (a push may give another digest: its layers are
 * compressed again) */
int ctr_swarm_publish(const struct ctr_driver *d, const char *image, char **pinned,
                      struct mg_err **err);

/* mcpgate's own path (allocated), NULL when /proc does not say */
char *ctr_swarm_self_path(void);

#endif
