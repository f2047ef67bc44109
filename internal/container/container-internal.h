/* Between the driver's files; not for other modules. */
#ifndef MG_CONTAINER_INTERNAL_H
#define MG_CONTAINER_INTERNAL_H

#include "internal/container/container.h"
#include "internal/proc/proc.h"

extern const struct ctr_ops ctr_cli_ops;
extern const struct ctr_ops ctr_swarm_ops;

/* the runtime with args (what names the command in errors), in_fd its stdin
 * (-1: /dev/null); an error unless it exits 0 (res is freed then) */
int ctr_cli_run_in(const struct ctr_driver *d, const char *what, const char *const *args, int in_fd,
                   struct proc_result *res, struct mg_err **err);
/* mcpgate's images (by label), and one removed: the CLI's, which the swarm
 * driver shares for the manager's images (those pull put there) */
int ctr_cli_image_list(const struct ctr_driver *d, const char *label, struct ctr_images *out,
                       struct mg_err **err);
int ctr_cli_image_remove(const struct ctr_driver *d, const char *image, bool *in_use,
                         struct mg_err **err);
/* `pull IMAGE` or `push IMAGE` (verb), the runtime's progress on our
 * stderr, an hour at most */
int ctr_cli_transfer(const struct ctr_driver *d, const char *verb, const char *image,
                     struct mg_err **err);
/* the egress sidecar's limits, on any runtime */
#define SIDECAR_MEMORY (64ull << 20)
#define SIDECAR_PIDS   32

/* rm --force of a container; absent is fine */
int ctr_cli_remove(const struct ctr_driver *d, const char *name, struct mg_err **err);
/* the sweep of containers and then networks of dead owners */
int ctr_cli_sweep(const struct ctr_driver *d, unsigned *removed, struct mg_err **err);
/* the sweep's judgement of an owner label: true only when proved dead;
 * *left counts what it cannot judge */
bool ctr_owner_dead(const char *label, unsigned *left);
/* the server's whole command under mcpgate-launch: mcp.toml's command, else
 * the image's Entrypoint; its args, else the image's Cmd */
int ctr_server_command(const struct ctr_run_spec *spec, struct strv *cmd, struct mg_err **err);

int ctr_cli_run_command(const struct ctr_driver *d, const struct ctr_run_spec *spec,
                        struct strv *argv, struct strv *envp, struct mg_err **err);

/* runargs.c: the arguments of `run` built from data */
/* --mount and its value from fields[0..n) ("key=value" or a flag), each
 * quoted as podman and docker read it; a field that cannot be carried is an
 * error naming what (where the data came from) */
int ctr_push_mount(struct strv *a, const char *const *fields, size_t n, const char *what,
                   struct mg_err **err);
/* The writable places of a contained process running as user ("UID:GID"):
 * each a capped noexec tmpfs of its own, owned by user; and nothing else of
 * the runtime's that it could write, but /dev/shm (capped) */
int ctr_push_places(const struct ctr_driver *d, struct strv *a, const char *user,
                    struct mg_err **err);
/* docker: a read-only tmpfs over each VOLUME of image (none where a place
 * or one of targets, the mounts' targets, is that very path); a VOLUME it
 * cannot cover is an error naming it, and the fix. Nothing for podman
 * (--image-volume=ignore) or without an image. */
int ctr_push_volume_covers(const struct ctr_driver *d, struct strv *a,
                           const struct ctr_image_config *image, const struct strv *targets,
                           const char *server, struct mg_err **err);

/* --label K=V for each of the labels every container and network carries */
void ctr_push_labels(struct strv *a, const char *session, const char *server, pid_t owner);

/* The runtime commands a server's egress topology is made of (topology.c) */
/* a network of this session and server, labelled like containers;
 * internal: no route out (and no DNS on podman) */
int ctr_cli_network_create(const struct ctr_driver *d, const char *name, bool internal,
                           const char *session, const char *server, pid_t owner,
                           struct mg_err **err);
/* its subnets and gateways, as text ("10.89.0.0/24", "10.89.0.1") */
int ctr_cli_network_addresses(const struct ctr_driver *d, const char *name, struct strv *out,
                              struct mg_err **err);
/* the host's bridge interface of a network whose traffic the host's
 * firewall sees (podman's "network_interface"); *ifname NULL when the
 * runtime keeps its own rules for it (docker) or names none */
int ctr_cli_network_interface(const struct ctr_driver *d, const char *name, char **ifname,
                              struct mg_err **err);
/* absent is fine */
int ctr_cli_network_remove(const struct ctr_driver *d, const char *name, struct mg_err **err);
int ctr_cli_network_connect(const struct ctr_driver *d, const char *network, const char *container,
                            struct mg_err **err);
/* the container's address on network (allocated), or an error */
int ctr_cli_container_address(const struct ctr_driver *d, const char *container,
                              const char *network, char **address, struct mg_err **err);
/* podman starts a container on several networks; docker on one, and the
 * rest are joined after the start */
bool ctr_cli_starts_on_networks(const struct ctr_driver *d);

int ctr_cli_topology_create(const struct ctr_driver *d, const struct ctr_topology_spec *spec,
                            struct ctr_topology *out, struct mg_err **err);
int ctr_cli_sidecar_ready(const struct ctr_driver *d, struct ctr_topology *t, char **address,
                          struct mg_err **err);
int ctr_cli_topology_remove(const struct ctr_driver *d, struct ctr_topology *t,
                            struct mg_err **err);

int ctr_cli_sidecar_command(const struct ctr_driver *d, const struct ctr_sidecar_spec *spec,
                            struct strv *argv, struct strv *envp, struct mg_err **err);

/* podman here, local: its rootless namespaces can be entered (unshare) */
bool ctr_can_unshare(const struct ctr_driver *d);
/* podman unshare ARGS...: a command in rootless podman's user and mount
 * namespace, in_fd its stdin (-1: /dev/null); an error for docker */
int ctr_cli_unshare(const struct ctr_driver *d, const char *const *args, int in_fd,
                    struct mg_err **err);

/* platform_key.c: the key of `info` for podman and docker */
int ctr_cli_platform_key(const struct ctr_driver *d, struct mg_buf *key);

/* cache.c: d->cache_dir/name holds body under key: 1 with *body (owned by
 * the caller) when it does, 0 when there is nothing usable (absent, another
 * key, unreadable, or refused with a warning: not private to this user) */
int ctr_cache_get(const struct ctr_driver *d, const char *name, const char *key,
                  struct json_value **body);
/* keep body (taken) under key, privately; a failure is only logged */
void ctr_cache_put(const struct ctr_driver *d, const char *name, const char *key,
                   struct json_value *body);
/* an image's configuration (its `inspect` .Config) kept by its pinned name,
 * or NULL; and keeping it */
struct json_value *ctr_cache_image_config(const struct ctr_driver *d, const char *image);
void ctr_cache_keep_image_config(const struct ctr_driver *d, const char *image,
                                 const struct json_value *config);

#endif
