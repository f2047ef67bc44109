/* The container runtime driver: podman and docker behind one table of
 * operations, so a later Kubernetes driver fits the same interface.
 *
 * Every runtime process starts with a fixed short environment (PATH, HOME,
 * XDG_RUNTIME_DIR and the runtime's own variables), never mcpgate's whole
 * environment. A setting for a contained server reaches the runtime only as
 * NAME=value in that environment; its argv says --env=NAME. A secret never
 * reaches the runtime at all: mcpgate-launch, mounted as the entrypoint,
 * reads it from the server's standard input (ctr_launch_block).
 *
 * Ownership: ctr_driver_new() hands a driver to free with ctr_driver_free().
 * Strings in the specs are borrowed for the duration of the call. */
#ifndef MG_CONTAINER_CONTAINER_H
#define MG_CONTAINER_CONTAINER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "internal/base/buf.h"
#include "internal/base/err.h"
#include "internal/base/strv.h"
#include "internal/config/config.h"
#include "internal/json/json.h"

/* Labels on every container and network mcpgate makes */
#define CTR_LABEL_SESSION "mcpgate.session"
#define CTR_LABEL_SERVER  "mcpgate.mcp"
#define CTR_LABEL_PID     "mcpgate.pid"
/* BOOT/PIDNS/PID/START: the owner beyond doubt (owner.c); the sweep judges by it */
#define CTR_LABEL_OWNER "mcpgate.owner"

/* What a runtime command may print before mcpgate stops reading it */
#define CTR_OUTPUT_MAX (4u << 20)

enum ctr_kind {
	CTR_PODMAN,
	CTR_DOCKER,
	CTR_SWARM, /* a swarm's manager, through the docker command (swarm.c) */
};

struct ctr_driver;

/* One variable for the server. A setting's value goes only into the
 * runtime's environment, the argv names it; a secret's goes through the
 * launcher (ctr_run_spec.secrets). */
struct ctr_env {
	const char *name;
	const char *value;
	bool own; /* mcpgate's own (the proxy variables), not the configuration's */
};

/* One mount, opened beneath the workspace (mounts.c, docs/mounts.md) */
struct ctr_mount_src {
	int fd;       /* O_PATH of the directory itself, held until released */
	char *real;   /* its path, as the kernel names it */
	char *staged; /* root: the private bind of it that the runtime gets */
	char *host;   /* what the runtime's --mount names: staged, else real */
};

struct ctr_mounts {
	struct ctr_mount_src *v; /* parallel to the server's mounts */
	size_t n;
};

struct ctr_mount_plan {
	const struct cfg *cfg; /* every server's write mounts (no staging) */
	const struct cfg_server *server;
	const char *workspace;
	const char *const *protected_dirs; /* mcpgate's own folders, NULL-terminated */
	const char *stage_dir;             /* root: where staged binds go; NULL: none */
	const char *tag;                   /* names the staged folders (the container) */
	/* the runtime; rootless podman stages in its own namespace; NULL: none */
	const struct ctr_driver *driver;
};

/* Open every mount of plan->server, check it and, as root, stage it. The
 * runtime must have mounted them before ctr_mounts_release(). */
int ctr_mounts_open(const struct ctr_mount_plan *plan, struct ctr_mounts *out, struct mg_err **err);
void ctr_mounts_release(struct ctr_mounts *m);
/* `mcpgate __stage ...`, which ctr_mounts_open runs under `podman unshare` */
int ctr_mounts_stage_main(int argc, char **argv);
/* Unbind and remove what dead mcpgate processes staged in stage_dir */
void ctr_mounts_sweep(const char *stage_dir);
/* One mount: its O_PATH fd and real path, or an error naming it */
int ctr_mount_open(const char *workspace, const char *path, const char *const *protected_dirs,
                   int *fd, char **real, struct mg_err **err);

struct ctr_run_spec {
	const struct cfg_server *server;
	const char *session;   /* the session id */
	pid_t owner;           /* the mcpgate that owns it (label mcpgate.pid) */
	const char *workspace; /* absolute; mounts resolve under it; NULL: no mounts allowed */
	const struct ctr_mounts *mounts; /* the server's mounts, opened (ctr_mounts_open) */
	/* what the image declares (its VOLUMEs, docker; its command, when a
	 * secret is given), from the image_config op */
	const struct ctr_image_config *image;
	const char *network; /* a network to attach to; NULL: --network=none */
	const char *user;    /* "UID:GID" it runs as (ctr_default_user); NULL: 65534:65534 */
	const struct ctr_env *env;
	size_t nenv;
	/* variables written on the server's standard input ahead of MCP and
	 * set by the launcher (ctr_launch_block), so that no runtime stores them */
	const struct ctr_env *secrets;
	size_t nsecrets;
	const char *launcher; /* host path of mcpgate-launch; needed with secrets */
	/* where each of the server's connect destinations is reached in its
	 * network (its sidecar's address and port), parallel to
	 * server->connect: {connect.NAME} in its command, args and env values
	 * becomes that (cfg_connect_expand). Required when it has any. */
	const char *const *connect_hosts;
	const unsigned *connect_ports;
};

/* What an image declares, as far as the driver needs it */
struct ctr_image_config {
	struct strv volumes;    /* VOLUME paths */
	struct strv entrypoint; /* Entrypoint */
	struct strv cmd;        /* Cmd */
	struct strv labels;     /* Labels: key, value, key, value... */
};
void ctr_image_config_free(struct ctr_image_config *c);

/* The block mcpgate-launch reads (launch/launch.h) for vars[0..n), in
 * sodium_malloc'd memory to free with ctr_launch_block_free; NULL with err
 * when the variables are too long or a name is not a variable's */
char *ctr_launch_block(const struct ctr_env *vars, size_t n, size_t *len, struct mg_err **err);
void ctr_launch_block_free(char *block, size_t len);

/* A server's egress topology (docs/egress.md): the networks the driver made
 * for it and the sidecar between them. The gateway holds it and hands it
 * back to the driver's topology operations; it reads net_in (the network the
 * server joins, its only one), sidecar (for its records) and deny. What is
 * made is set as it is made, so topology_remove undoes a half-made one. */
struct ctr_topology {
	char *net_in;     /* the server's network: no way out but the sidecar */
	char *net_out;    /* the sidecar's way out */
	char *sidecar;    /* the sidecar's container */
	struct strv deny; /* never a destination: the inner network whole, both gateways */
	/* the inner network's subnets: the only peers the sidecar's listeners
	 * accept (a network of the person's it joins holds others) */
	struct strv from;
	bool joined; /* the sidecar is on both networks */
	/* networks of the person's the sidecar joins too (connect entries'
	 * "network"), joined by sidecar_ready; never made or removed by mcpgate */
	struct strv join;
	size_t joined_own; /* of join, how many it has joined */
};
/* Frees its strings only; topology_remove is what removes it */
void ctr_topology_free(struct ctr_topology *t);

/* What a topology is made for */
struct ctr_topology_spec {
	const struct cfg_server *server;
	const char *session;
	pid_t owner;
	const char *container; /* the server's container: the topology is named after it */
	bool rootless;         /* the runtime's bridges live in a namespace of its own */
	/* networks of the person's its sidecar joins, NULL-terminated (NULL:
	 * none): their gateways are refused like the topology's own */
	const char *const *join;
};

/* The egress sidecar of one server (docs/egress.md) */
struct ctr_sidecar_spec {
	const struct cfg_server *server; /* its image is the sidecar's root filesystem */
	const char *session;
	pid_t owner;
	const struct ctr_topology *topology; /* its networks and its name */
	const char *binary;                  /* host path of the private copy of mcpgate-egress */
	const char *const *args;             /* the proxy's arguments, NULL-terminated */
	/* a folder of mcpgate's host side's sockets (the host's loopback for
	 * connect), mounted read-only at CTR_CONNECT_DIR; NULL: none */
	const char *connect_dir;
	/* what the server's image declares (its VOLUMEs, docker), from the
	 * image_config op; NULL: it declares none */
	const struct ctr_image_config *image;
	/* host path of mcpgate-launch: on a cluster the sidecar's task runs
	 * it as entrypoint, as a server's does; NULL: none */
	const char *launcher;
};
#define CTR_CONNECT_DIR "/mcpgate-connect"

/* What the runtime can enforce here (platform.c, docs/unenforced.md) */
struct ctr_platform {
	bool known; /* the runtime answered */
	bool rootless;
	int cgroup;          /* 1 or 2; 0 when the runtime did not say */
	unsigned unenforced; /* CFG_PROP_* bits that would not hold */
	char *why[CFG_PROP_COUNT];
};

/* Read `podman info --format json` / `docker info --format '{{json .}}'` */
int ctr_platform_from_info(enum ctr_kind kind, const char *text, size_t len,
                           struct ctr_platform *out, struct mg_err **err);
void ctr_platform_free(struct ctr_platform *p);
/* Why server s may not start here (allocated), or NULL when every property
 * holds or is accepted in its accept_unenforced */
char *ctr_platform_refusal(const struct ctr_platform *p, const struct cfg_server *s);
/* The accepted properties that do not hold here, as a JSON array for the
 * audit log; NULL when there are none */
struct json_value *ctr_platform_accepted_json(const struct ctr_platform *p,
                                              const struct cfg_server *s);

/* podman beside dockerd (forward.c): would the host's FORWARD chain drop
 * traffic within podman bridge ifname (NULL: any of podman's)? *problem is
 * why and the rule that fixes it (allocated), or NULL when nothing says so */
int ctr_forward_problem(const char *ifname, char **problem, struct mg_err **err);
/* the decision from `iptables -S` and the br_netfilter sysctl (tests) */
char *ctr_forward_verdict(const char *iptables_s, bool bridge_nf, const char *ifname);

/* The labels that say mcpgate made an image (add's, and the contained
 * steps that run install scripts and build source distributions): what
 * prune looks for in the runtime's store */
#define CTR_IMAGE_LABEL_NPM        "io.mcpgate.npm.package"
#define CTR_IMAGE_LABEL_PYPI       "io.mcpgate.pypi.package"
#define CTR_IMAGE_LABEL_SCRIPTS    "io.mcpgate.npm.scripts"
#define CTR_IMAGE_LABEL_PYPI_BUILD "io.mcpgate.pypi.build"

/* An image in the runtime's store, as image_list finds it */
struct ctr_image_info {
	char *id;            /* "sha256:" and 64 hex, whatever the runtime writes */
	char *digest;        /* podman's manifest digest ("Digest"), or NULL */
	struct strv tags;    /* RepoTags */
	struct strv digests; /* RepoDigests: NAME@sha256:... */
	struct strv labels;  /* key, value, key, value... */
	uint64_t size;       /* bytes, as the runtime counts them */
};
struct ctr_images {
	struct ctr_image_info *v;
	size_t n;
};
void ctr_image_info_free(struct ctr_image_info *i);
void ctr_images_free(struct ctr_images *l);
/* The value of label key on image i, or NULL */
const char *ctr_image_label(const struct ctr_image_info *i, const char *key);
/* image (a pin NAME@sha256:..., as mcp.toml writes it) is i: its digest is
 * i's, or (docker, an image mcpgate loaded) its kept manifest names i's ID */
bool ctr_image_is(const struct ctr_driver *d, const struct ctr_image_info *i, const char *image);

struct ctr_ops {
	/* argv and environment of `run` for spec; argv[0] is the runtime's path */
	int (*run_command)(const struct ctr_driver *d, const struct ctr_run_spec *spec,
	                   struct strv *argv, struct strv *envp, struct mg_err **err);
	/* 1 when image NAME@DIGEST is present with that digest, 0 when it is not */
	int (*image_present)(const struct ctr_driver *d, const char *image, struct mg_err **err);
	/* what image declares: the VOLUME paths where the runtime would make a
	 * volume of its own (docker; podman: none, --image-volume=ignore) and,
	 * when command is true, its Entrypoint and Cmd. Nothing is asked of the
	 * runtime when nothing is needed. */
	int (*image_config)(const struct ctr_driver *d, const char *image, bool command,
	                    struct ctr_image_config *out, struct mg_err **err);
	/* pull image NAME@DIGEST, the runtime's progress on mcpgate's stderr */
	int (*pull)(const struct ctr_driver *d, const char *image, struct mg_err **err);
	/* load an image archive (mcpgate pack's) into the runtime's store */
	int (*load)(const struct ctr_driver *d, const char *archive, struct mg_err **err);
	/* the images that carry label (any value), each once */
	int (*image_list)(const struct ctr_driver *d, const char *label, struct ctr_images *out,
	                  struct mg_err **err);
	/* remove image (a pin, or an ID) from the store, every name of it: 1
	 * when it went, 0 when it was not there. A container (running or not)
	 * that uses it keeps it: an error naming the container, *in_use set,
	 * and nothing removed; nothing is ever forced. */
	int (*image_remove)(const struct ctr_driver *d, const char *image, bool *in_use,
	                    struct mg_err **err);
	/* remove a container now, whatever it is doing; absent is fine */
	int (*remove)(const struct ctr_driver *d, const char *name, struct mg_err **err);
	/* A server's egress topology, in the order of its life. Nothing above
	 * the driver knows what a runtime needs for it. */
	/* make the networks of spec's server (the inner one internal, labelled
	 * like containers), check that the host's firewall passes what stays on
	 * the inner one, and find the addresses the proxy must refuse (out->deny) */
	int (*topology_create)(const struct ctr_driver *d, const struct ctr_topology_spec *spec,
	                       struct ctr_topology *out, struct mg_err **err);
	/* argv of `run` for the sidecar: the same isolation, uid 65534, the
	 * binary mounted read-only as entrypoint, on what of the topology the
	 * runtime lets a container start on */
	int (*sidecar_command)(const struct ctr_driver *d, const struct ctr_sidecar_spec *spec,
	                       struct strv *argv, struct strv *envp, struct mg_err **err);
	/* once its run is spawned, one try at finishing the sidecar: it joins
	 * what it could not start on (once), then its address on net_in
	 * (allocated). An error until both hold; the caller tries again until
	 * its deadline, and the error says which is missing. */
	int (*sidecar_ready)(const struct ctr_driver *d, struct ctr_topology *t, char **address,
	                     struct mg_err **err);
	/* remove the sidecar's container and then the networks; what went is
	 * cleared from t. The networks that could not go are in the error. */
	int (*topology_remove)(const struct ctr_driver *d, struct ctr_topology *t,
	                       struct mg_err **err);
	/* what the runtime says it can enforce on this platform */
	int (*platform)(const struct ctr_driver *d, struct ctr_platform *out, struct mg_err **err);
	/* the text that names everything that would change platform's answer
	 * here, appended to key: 1, or 0 when the answer may change without
	 * anything mcpgate can see (a runtime elsewhere), and is asked every
	 * time. NULL: never kept. */
	int (*platform_key)(const struct ctr_driver *d, struct mg_buf *key);
	/* remove what dead mcpgate processes left: containers, then networks;
	 * *removed counts what went */
	int (*sweep)(const struct ctr_driver *d, unsigned *removed, struct mg_err **err);
};

/* The sweep of d's runtime, once per runtime and process, whichever thread
 * or session asks first; the others wait until it has ended. 1 when this
 * call swept (*removed counts what went), 0 when it was swept already, -1
 * with err when this call's sweep failed (it is not tried again). */
int ctr_sweep_once(const struct ctr_driver *d, unsigned *removed, struct mg_err **err);

struct ctr_driver {
	enum ctr_kind kind;
	const char *name;    /* "podman" or "docker" */
	char *path;          /* absolute path of the runtime's command */
	char *seccomp;       /* mcpgate's profile (seccomp.c), given to every container */
	char *seccomp_error; /* why there is none: then nothing is run */
	struct strv env;     /* the fixed environment every runtime process gets */
	int64_t timeout_ms;  /* for runtime commands other than run and pull */
	/* DATA/images: the manifests of images mcpgate made (ctr_local_image_id) */
	char *images_dir;
	/* STATE/cache: what the runtime said that is kept between sessions
	 * (cache.c); NULL keeps nothing */
	char *cache_dir;
	/* runtime "swarm": HOST[:PORT] of the registry every node pulls from
	 * (config.toml's swarm_registry), or NULL */
	char *registry;
	const struct ctr_ops *ops;
};

/* "sha256:" and 64 hex digits */
#define CTR_ID_LEN 71

/* docker keeps no digest for an image it loaded from an archive. For one
 * that mcpgate made, d->images_dir holds its manifest, named by the digest
 * image pins (sha256-HEX.manifest, checked against it): the config digest
 * it names is the image's ID, which docker runs it by. That ID in id and
 * returned; NULL for podman, for other images, or without the manifest. */
const char *ctr_local_image_id(const struct ctr_driver *d, const char *image,
                               char id[CTR_ID_LEN + 1]);
/* The reference run and inspect use for image: its local ID, else itself */
const char *ctr_run_ref(const struct ctr_driver *d, const char *image, char id[CTR_ID_LEN + 1]);

/* Find the runtime: runtime UNSET means podman when it is on PATH, else
 * docker. path_var is the PATH to search (mcpgate's own). The fixed
 * environment is taken from environ's values of the allowed names. */
int ctr_driver_new(enum cfg_runtime runtime, const char *path_var, struct ctr_driver **out,
                   struct mg_err **err);

/* A driver for a known command path (tests, and `runtime_path`). */
struct ctr_driver *ctr_driver_for(enum ctr_kind kind, const char *path, char *const *environment);

void ctr_driver_free(struct ctr_driver *d);

/* mcpgate's seccomp profile (docs/seccomp.md), derived from the runtime's
 * default by rule: the JSON of base in, the JSON of ours out */
int ctr_seccomp_derive(const char *base, size_t len, struct mg_buf *out, struct mg_err **err);
/* Derive it (once per base) into DATA_DIR/seccomp/ and name it in *path;
 * with d's cache, a profile derived before from the same base by the same
 * mcpgate is used without deriving it again */
int ctr_seccomp_prepare(const struct ctr_driver *d, const char *data_dir, char **path,
                        struct mg_err **err);
/* The driver gives that profile to every container it runs; without one it
 * runs none (the reason is kept for run_command's error) */
void ctr_driver_use_seccomp(struct ctr_driver *d, const char *data_dir);

/* "mcpgate-SERVER-SESSION" (allocated) */
char *ctr_container_name(const char *server, const char *session);

/* What the runtime enforces here: its answer kept from an earlier session
 * when nothing that would change it has changed since (*kept true), else
 * ops->platform's, which is then kept for the next (cache.c). */
int ctr_platform_get(const struct ctr_driver *d, struct ctr_platform *out, bool *kept,
                     struct mg_err **err);

/* Is pid a running mcpgate? (what runs as pid, not only that pid exists) */
bool ctr_owner_alive(pid_t pid);

/* The owner label of process pid (allocated), "BOOT/PIDNS/PID/START" */
char *ctr_owner_label(pid_t pid);

enum ctr_owner_verdict {
	CTR_OWNER_ALIVE,   /* that very mcpgate still runs */
	CTR_OWNER_DEAD,    /* proved: another boot, or no such process since */
	CTR_OWNER_UNKNOWN, /* another pid namespace, or a label it cannot read */
};
/* What the sweep may do with what carries label: only DEAD is removed */
enum ctr_owner_verdict ctr_owner_judge(const char *label);

/* The user a server runs as (into buf, "UID:GID"): mcp.toml's user when set;
 * rootless, 0:0 (which is the person: files it writes are the person's);
 * else the owner of the workspace when that is not root, and 65534:65534
 * when it is. A server never leaves a file that runs with more rights than
 * the person whose workspace it is (docs/contained-servers.md). */
const char *ctr_default_user(const struct cfg_server *s, bool rootless, const char *workspace,
                             char *buf, size_t len);

/* Variables a server may not take: they steer the runtime's own command */
bool ctr_env_name_reserved(const char *name);

#endif
