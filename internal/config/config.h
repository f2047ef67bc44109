/* mcpgate's configuration: mcp.toml (the servers) and config.toml (the [mcp]
 * settings) read into typed structs.
 *
 * Every rule is checked at load (docs/config.md lists them): an unknown key, a
 * wrong type or a bad value is an error, never a silent default, so a typo can
 * not weaken isolation. All errors of both files are reported at once: one
 * mg_err whose message holds one line per error, "FILE:LINE:COL: message",
 * ordered by file (mcp.toml first), then line, then column.
 *
 * Ownership: cfg_load*() and cfg_parse() hand the caller a struct cfg to free
 * with cfg_free(); every string and array in it belongs to it. */
#ifndef MG_CONFIG_CONFIG_H
#define MG_CONFIG_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal/base/err.h"

#define CFG_NAME_MAX       48  /* a server's name */
#define CFG_TOOL_NAME_MAX  128 /* a tool's name, and SERVER__TOOL as a whole */
#define CFG_CREDENTIAL_MAX 64  /* a credential's name */

#define CFG_MEMORY_MIN (16ull << 20)
#define CFG_MEMORY_MAX (64ull << 30)
/* network_send_max: what a server may send out through its proxy in one
 * session, all tunnels and requests together */
#define CFG_SEND_MAX_MIN   (1ull << 10)
#define CFG_SEND_MAX_MAX   (1ull << 40)
#define CFG_MEMORY_DEFAULT (512ull << 20)
#define CFG_PIDS_MIN       8
#define CFG_PIDS_MAX       4096
#define CFG_PIDS_DEFAULT   128

#define CFG_LINE_MAX_MIN     1024ull
#define CFG_LINE_MAX_MAX     1073741824ull
#define CFG_LINE_MAX_DEFAULT 16777216ull
/* client_queue_max: what may wait to be written to the client */
#define CFG_CLIENT_QUEUE_MIN      (1ull << 20)
#define CFG_CLIENT_QUEUE_MAX      (1ull << 30)
#define CFG_CLIENT_QUEUE_DEFAULT  (64ull << 20)
#define CFG_START_TIMEOUT_DEFAULT 60
#define CFG_CALL_TIMEOUT_DEFAULT  300
#define CFG_STOP_TIMEOUT_DEFAULT  5
/* serve --listen's limits (docs/listener.md) */
#define CFG_LISTEN_CLIENTS_DEFAULT  16
#define CFG_LISTEN_CLIENTS_MAX      256
#define CFG_LISTEN_REQUESTS_DEFAULT 32
#define CFG_LISTEN_REQUESTS_MAX     1024
#define CFG_LISTEN_BODY_DEFAULT     (4ull << 20)
#define CFG_LISTEN_IDLE_DEFAULT     1800
#define CFG_LISTEN_IDLE_MAX         604800
#define CFG_KEEP_LOGS_MAX           36500
#define CFG_LISTEN_READ_DEFAULT     30
#define CFG_LISTEN_READ_MAX         3600

/* The largest mcp.toml or config.toml cfg_load reads. */
#define CFG_FILE_MAX (4u << 20)

/* Where something was written: 1-based line and byte column; {0, 0} when it
 * was not written at all. */
struct cfg_pos {
	unsigned line;
	unsigned col;
};

enum cfg_transport {
	CFG_TRANSPORT_CONTAINER,
	CFG_TRANSPORT_REMOTE,
};

enum cfg_effect {
	CFG_EFFECT_UNDECLARED,
	CFG_EFFECT_READ,
	CFG_EFFECT_WRITE,
};

/* Where a server's credential goes. */
enum cfg_position {
	CFG_POSITION_NONE,   /* no credential */
	CFG_POSITION_ENV,    /* container: an environment variable */
	CFG_POSITION_HEADER, /* remote: an HTTP request header */
};

/* What mcpgate asks the runtime to enforce that a platform may not
 * (docs/unenforced.md): one bit each, named as mcp.toml's
 * accept_unenforced writes them. */
enum cfg_property {
	CFG_PROP_MEMORY = 1u << 0, /* --memory */
	CFG_PROP_PIDS = 1u << 1,   /* --pids-limit */
};
#define CFG_PROP_COUNT 2

/* "memory" or "pids"; NULL for anything else */
const char *cfg_property_name(unsigned bit);

enum cfg_runtime {
	CFG_RUNTIME_UNSET, /* the caller decides: podman if on PATH, else docker */
	CFG_RUNTIME_PODMAN,
	CFG_RUNTIME_DOCKER,
	CFG_RUNTIME_SWARM, /* a Docker swarm's manager (DOCKER_HOST): docs/2026-12-02-swarm.md */
};

/* One entry of "network". host is lower case without a trailing dot: a DNS
 * name, a canonical dotted-quad IPv4 address, or an IPv6 address in
 * brackets in inet_ntop's form ("[2001:db8::1]"). */
struct cfg_host {
	char *host;
	unsigned port;   /* 0: the bare host, on ports 80 and 443 */
	bool private_ok; /* listed in network_private: may resolve to a private range */
	struct cfg_pos pos;
};

/* One entry of "mounts": path is relative to the workspace, normalised (no
 * "." or empty components, no trailing "/"). */
struct cfg_mount {
	char *path;
	bool write; /* false: read-only */
	/* the server's home ("home" = "workspace:PATH"): written, not
	 * executable, at CFG_HOME_PATH rather than under /workspace; always the
	 * last of a server's mounts */
	bool home;
	struct cfg_pos pos;
};

/* Where a contained server's home is (HOME in its environment): a capped,
 * writable, not executable tmpfs gone with the container, or the folder
 * "home" = "workspace:PATH" names (the last of its mounts) */
#define CFG_HOME_PATH "/home/mcpgate"
#define CFG_HOME_SIZE "64m"

struct cfg_tool {
	char *name;
	bool on;
	enum cfg_effect effect;
	struct cfg_pos pos;        /* its table: [server.tools.NAME] */
	struct cfg_pos on_pos;     /* the "on" key, {0, 0} when absent */
	struct cfg_pos effect_pos; /* the "effect" key, {0, 0} when absent */
	/* confirm = false: a write tool called without asking the person, every
	 * such call in the audit log (the only way a client that cannot ask
	 * calls one); true by default */
	bool confirm;
	struct cfg_pos confirm_pos; /* the "confirm" key, {0, 0} when absent */
};

/* One setting of a server's env table */
struct cfg_env {
	char *name;
	char *value;
	struct cfg_pos pos; /* its key */
};

/* One entry of a server's "connect" (docs/2026-12-02-connect.md): a TCP
 * destination the person names, which the server reaches through its
 * sidecar at the address {connect.NAME} becomes in its args and env */
struct cfg_connect {
	char *name;
	char *host;         /* a name (lower case), a.b.c.d or [v6]; localhost is 127.0.0.1 */
	unsigned port;      /* 1-65535 */
	char *network;      /* a network of the person's the sidecar joins to reach it, or NULL */
	bool loopback;      /* the host's own loopback: reached through mcpgate's host side */
	struct cfg_pos pos; /* its key */
};
#define CFG_CONNECT_NAME_MAX 32
#define CFG_CONNECT_MAX      16

/* The longest value of an env setting */
#define CFG_ENV_VALUE_MAX (32u << 10)

/* A container server's instance sharing (the key "instance") */
enum cfg_instance {
	CFG_INSTANCE_SESSION,   /* "session": one container per client session (default) */
	CFG_INSTANCE_SHARED,    /* "shared": one container for every client */
	CFG_INSTANCE_EXCLUSIVE, /* "exclusive": one container, one client at a time */
};
const char *cfg_instance_name(enum cfg_instance i);

/* When a server starts (the key "start", in a [[server]] or [mcp]) */
enum cfg_start {
	CFG_START_EAGER, /* "eager": with the session (the default) */
	CFG_START_LAZY,  /* "lazy": at its first use; its approved tools are offered
	                  * from the pin meanwhile (docs/2026-12-02-never-wait.md) */
};
const char *cfg_start_name(enum cfg_start s);

struct cfg_server {
	char *name;
	enum cfg_transport transport;
	struct cfg_pos pos; /* its [[server]] header */

	/* container servers (NULL, 0 or defaults on a remote one) */
	char *image;              /* as written: NAME@sha256:<64 hex> */
	struct cfg_pos image_pos; /* the "image" key */
	char *image_name;         /* NAME, with its registry if any */
	char *image_digest;       /* sha256:<64 hex> */
	struct cfg_host *hosts;   /* empty: --network=none */
	size_t nhosts;
	struct cfg_mount *mounts;
	size_t nmounts;
	char **command; /* NULL-terminated; NULL when absent (the image's entrypoint) */
	size_t ncommand;
	char **args; /* NULL-terminated; NULL when absent */
	size_t nargs;
	/* packages: the Debian packages its image was made with (add --with),
	 * each a valid name, once; NULL when absent */
	char **packages;
	size_t npackages;
	uint64_t memory;   /* bytes */
	uint64_t send_max; /* network_send_max in bytes; 0: no cap */
	unsigned pids;
	/* user: "UID" or "UID:GID" the server runs as; unset, mcpgate chooses
	 * (docs/contained-servers.md, the user) */
	bool user_set;
	unsigned uid, gid;

	/* remote servers (NULL, 0 on a container one) */
	char *url;
	char *url_host;    /* lower case; an IPv6 address in brackets */
	unsigned url_port; /* as written, else 443 for https and 80 for http */
	char *ca_file;     /* a private CA bundle for its TLS, or NULL (the system's) */

	/* both */
	char *credential; /* the secret's name in the keychain, or NULL */
	enum cfg_position position;
	char *position_name; /* the variable or header NAME, or NULL */
	char **workspaces;   /* NULL-terminated absolute paths, "~/" expanded;
	                        NULL when absent: offered in every workspace */
	size_t nworkspaces;
	char *manifest;              /* the approved hash "sha256:<64 hex>", or NULL */
	struct cfg_pos manifest_pos; /* the "manifest" key, {0, 0} when absent */
	struct cfg_tool *tools;      /* in file order */
	size_t ntools;
	/* relay: the server's requests that may reach the client (each also
	 * needs the client to have declared the capability) */
	bool relay_sampling;    /* sampling/createMessage */
	bool relay_elicitation; /* elicitation/create */
	bool relay_roots;       /* roots/list */
	/* env: settings for the server, not secret (passed as --env=NAME) */
	struct cfg_env *env;
	size_t nenv;
	/* connect: TCP destinations reached through the sidecar, in file order */
	struct cfg_connect *connect;
	size_t nconnect;
	/* accept_unenforced: CFG_PROP_* bits the person accepts may not hold
	 * on this platform; the server starts anyway, and says so */
	unsigned accept_unenforced;
	/* instance: how many clients of one gateway (serve --listen) share one
	 * container of it (docs/sharing.md) */
	enum cfg_instance instance;
	/* start: its own, when start_set; else [mcp]'s */
	enum cfg_start start;
	bool start_set;
	/* enabled = false: kept in mcp.toml, offered nowhere, never started;
	 * a running serve stops it and withdraws its tools (mcpgate disable) */
	bool enabled;
	struct cfg_pos enabled_pos; /* the "enabled" key, {0, 0} when absent */
};

/* config.toml's [mcp] table */
struct cfg_mcp {
	enum cfg_runtime runtime;
	char *egress; /* absolute path of the egress proxy binary, or NULL */
	/* runtime "swarm": HOST[:PORT] of the registry every node pulls from;
	 * mcpgate pull pushes images there (docs/2026-12-02-swarm.md) */
	char *swarm_registry;
	uint64_t line_max; /* bytes: the cap on one JSON-RPC line */
	/* bytes that may wait to be written to the client; the servers feeding
	 * it stop being read long before (docs/2026-12-02-pressure.md) */
	uint64_t client_queue_max;
	unsigned start_timeout; /* seconds */
	unsigned call_timeout;  /* seconds */
	unsigned stop_timeout;  /* seconds */
	/* serve --listen: clients (MCP sessions) at once, requests in flight
	 * per client, the largest request body, and how long a client with
	 * nothing in flight and no stream open keeps its session */
	unsigned listen_clients;
	unsigned listen_requests;
	uint64_t listen_body_max;     /* bytes, never above line_max */
	unsigned listen_idle_timeout; /* seconds */
	/* keep_logs_days: prune removes audit logs (and review logs) older than
	 * this; 0 (unset): it keeps every one */
	unsigned keep_logs_days;
	/* seconds from a connection's waiting for a request to that request's
	 * head and body being all in; no byte sent extends it */
	unsigned listen_read_timeout;
	enum cfg_start start; /* the servers' default */
};

/* config.toml's [debian] table: the archive `mcpgate add` takes Debian
 * packages from (docs/2026-12-02-debian-archive.md). Each NULL when not
 * written: Debian's own (DEB_DEFAULT_* in debian.h). Whatever is named,
 * apt checks the archive's Release against the keyring, and an unsigned
 * or insecure one is refused. */
struct cfg_debian {
	char *mirror;   /* http://, https:// or file:/ URL of a Debian mirror */
	char *security; /* the same, of its security archive */
	char *keyring;  /* an absolute path: the keys that sign both */
};

struct cfg {
	struct cfg_server *servers; /* in file order */
	size_t nservers;
	struct cfg_mcp mcp;
	struct cfg_debian debian;
	char *mcp_path;    /* the name mcp.toml was read as */
	char *config_path; /* the name config.toml was read as, or NULL when none was */
	/* `mcpgate serve --passthrough`: the one server offered is served under
	 * its own names (no SERVER__ prefix, URIs as it writes them). Set by
	 * the command line, never read from a file. */
	bool passthrough;
};

/* Read CONFIG_DIR/config.toml (optional: absent means the defaults) and
 * CONFIG_DIR/mcp.toml (required: absent is an error naming the path, and the
 * example to start from). */
int cfg_load(const char *config_dir, struct cfg **out, struct mg_err **err);

/* Read mcp_path and, when config_path is not NULL, config_path (then
 * required). */
int cfg_load_files(const char *mcp_path, const char *config_path, struct cfg **out,
                   struct mg_err **err);

/* Check texts already in memory; the names stand for the files in messages.
 * config_text may be NULL (no config.toml). The texts need not be
 * NUL-terminated. */
int cfg_parse(const char *mcp_text, size_t mcp_len, const char *mcp_name, const char *config_text,
              size_t config_len, const char *config_name, struct cfg **out, struct mg_err **err);

void cfg_free(struct cfg *cfg);

/* The commented example every key is documented in: where `make install`
 * put it beside this mcpgate (PREFIX/share/mcpgate/mcp.toml.example), else
 * the source tree's. Allocated; NULL when neither is there. */
char *cfg_example_path(void);

/* The server named name, or NULL. */
const struct cfg_server *cfg_find_server(const struct cfg *cfg, const char *name);

/* The default places, allocated for the caller: $XDG_CONFIG_HOME/mcpgate
 * (else $HOME/.config/mcpgate), $XDG_DATA_HOME/mcpgate (else
 * $HOME/.local/share/mcpgate), $XDG_STATE_HOME/mcpgate (else
 * $HOME/.local/state/mcpgate). An XDG variable that is empty or not absolute
 * is ignored (the XDG spec); an error when neither it nor $HOME is usable. */
int cfg_default_config_dir(char **out, struct mg_err **err);
int cfg_default_data_dir(char **out, struct mg_err **err);
int cfg_default_state_dir(char **out, struct mg_err **err);

/* ---- the checks of single values, shared with other commands ----------
 * Each takes a NUL-terminated value and `what` naming it for the message
 * ("\"network\" entry"); on failure the message reads `WHAT "VALUE" reason`. */

/* "host" or "host:port" as in "network"; fills out (out->host allocated,
 * private_ok false, pos untouched). */
int cfg_parse_host(const char *s, const char *what, struct cfg_host *out, struct mg_err **err);

/* A host as cfg_parse_host gives it: a wildcard "*.NAME" on a public suffix
 * (or with no list to judge it by) is refused, as check refuses it in
 * network; any other host passes. */
int cfg_check_wildcard_host(const char *host, const char *what, struct mg_err **err);

/* NAME@sha256:<64 hex>; *name and *digest allocated. */
int cfg_parse_image(const char *s, const char *what, char **name, char **digest,
                    struct mg_err **err);

/* "path", "path:read" or "path:write" inside the workspace; out->path allocated. */
int cfg_parse_mount(const char *s, const char *what, struct cfg_mount *out, struct mg_err **err);

/* https://... (http:// for a loopback host); *host allocated. */
int cfg_parse_url(const char *s, const char *what, char **host, unsigned *port,
                  struct mg_err **err);

/* "512m", "2g", "65536k", "33554432": binary units, CFG_MEMORY_MIN..MAX. */
int cfg_parse_memory(const char *s, const char *what, uint64_t *out, struct mg_err **err);
/* The same syntax, CFG_SEND_MAX_MIN..MAX (1k to 1024g): network_send_max. */
int cfg_parse_send_max(const char *s, const char *what, uint64_t *out, struct mg_err **err);

/* env:NAME or header:NAME; *name allocated. */
int cfg_parse_position(const char *s, const char *what, enum cfg_position *position, char **name,
                       struct mg_err **err);

int cfg_check_server_name(const char *s, const char *what, struct mg_err **err);
int cfg_check_tool_name(const char *s, const char *what, struct mg_err **err);
int cfg_check_credential_name(const char *s, const char *what, struct mg_err **err);
/* A Debian archive's URL as [debian] takes it: http://, https:// or file:/,
 * nothing apt's configuration cannot carry (a space, quote, semicolon,
 * brace, a control character) */
int cfg_check_archive_url(const char *s, const char *what, struct mg_err **err);
/* The keyring [debian] takes: an absolute path, with the same characters */
int cfg_check_keyring_path(const char *s, const char *what, struct mg_err **err);
/* sha256:<64 lower-case hex> */
int cfg_check_manifest(const char *s, const char *what, struct mg_err **err);

/* ---- connect (connect.c) ---- */

/* A connect entry's name: 1-32 of [A-Za-z0-9_-], starting with a letter or
 * digit */
bool cfg_connect_name_valid(const char *name);
/* A runtime network's name: [A-Za-z0-9][A-Za-z0-9_.-]*, at most 64 */
bool cfg_network_name_valid(const char *name);
/* An entry's destination, HOST:PORT (and the network of the person's it is
 * on, or NULL), judged by the egress proxy's rule for a forward
 * (egr_forward_target_parse): a private address allowed, a special or
 * platform one refused, the host's loopback (127.0.0.0/8, [::1],
 * localhost) only without a network; a host alias refused with how to name
 * the host's loopback. out's strings allocated; its name and pos untouched. */
int cfg_parse_connect(const char *to, const char *network, struct cfg_connect *out,
                      struct mg_err **err);
/* Every {connect.NAME}, {connect.NAME.host} and {connect.NAME.port} in text
 * names one of names (the entries'): 0, each one's used[i] set (used may
 * be NULL), or -1 with err naming the first that does not */
int cfg_connect_refs(const char *text, const char *const *names, size_t nnames, bool *used,
                     struct mg_err **err);
/* text with each reference replaced by where entry i is reached,
 * hosts[i]:ports[i] (allocated); hosts NULL: text as it is */
char *cfg_connect_expand(const char *text, const struct cfg_server *s, const char *const *hosts,
                         const unsigned *ports);
/* Whether the server needs its egress topology: listed hosts, or connect */
bool cfg_server_has_egress(const struct cfg_server *s);

/* A POSIX variable name, [A-Za-z_][A-Za-z0-9_]* */
bool cfg_env_name_valid(const char *name);
/* A variable a server may not take: the runtime, its libraries, the loader
 * or mcpgate would obey it (by rule, in any case; config_check.c) */
bool cfg_env_name_reserved(const char *name);

/* "read", "write" or "undeclared", as mcp.toml and messages say it */
const char *cfg_effect_name(enum cfg_effect effect);

/* s[0..len) as a double-quoted string for a message: \" \\ \n \t \r and
 * \uXXXX for other control characters; cut after 120 bytes with "...".
 * Allocated. */
char *cfg_quote(const char *s, size_t len);

#endif
