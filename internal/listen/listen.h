/* serve --listen: MCP's streamable HTTP transport (2025-11-25,
 * basic/transports) at /mcp on loopback or a unix socket, one gateway
 * session per MCP client session, plus /metrics and /health.
 * docs/listener.md says what is checked and why.
 *
 * HTTP is libmicrohttpd's, driven by the listener's own event loop on the
 * thread that calls lst_run(); each client session runs session_run() on a
 * thread of its own and speaks newline JSON-RPC to the listener over a
 * socketpair, as it would to a client on stdio. */
#ifndef MG_LISTEN_LISTEN_H
#define MG_LISTEN_LISTEN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "internal/base/err.h"
#include "internal/config/config.h"
#include "internal/container/container.h"

/* ---- where it listens (address.c) ---------------------------------------- */

enum lst_family { LST_INET, LST_INET6, LST_UNIX };

struct lst_address {
	enum lst_family family;
	char host[64];  /* the numeric address ("127.0.0.1", "::1"); "" for unix */
	unsigned port;  /* 0 until bound when 0 was asked */
	char path[108]; /* unix: the socket's path */
	bool loopback;  /* 127.0.0.0/8, ::1, or a unix socket */
};

/* "127.0.0.1:PORT", "[::1]:PORT", "localhost:PORT" (127.0.0.1) or
 * "unix:PATH"; PORT 0 is any free port. Another numeric address only with
 * any_address; 0.0.0.0 and :: never (name one interface's address). */
int lst_address_parse(const char *text, bool any_address, struct lst_address *out,
                      struct mg_err **err);
/* A listening socket (close-on-exec) at a; a->port becomes the bound one.
 * A unix socket is made 0600; a stale one (nobody accepts on it) is
 * replaced, a live one or another kind of file is refused. */
int lst_address_bind(struct lst_address *a, int *fd_out, struct mg_err **err);
/* The url clients use: http://127.0.0.1:PORT/mcp, or http://localhost/mcp
 * for a unix socket (the socket named beside it). Allocated. */
char *lst_address_url(const struct lst_address *a);

/* DNS rebinding: the Host header must name this listener (127.0.0.1:PORT,
 * localhost:PORT or [::1]:PORT on loopback; the address itself otherwise;
 * localhost on a unix socket). NULL when it does, else why not (static). */
const char *lst_check_host(const struct lst_address *a, const char *host);
/* Origin, when present, must be http:// and a Host lst_check_host()
 * allows. NULL (absent) passes. */
const char *lst_check_origin(const struct lst_address *a, const char *origin);

/* ---- the token (token.c) -------------------------------------------------- */

#define LST_TOKEN_BYTES 32
#define LST_TOKEN_HEX   (2 * LST_TOKEN_BYTES)
/* The name of its file in mcpgate's state folder */
#define LST_TOKEN_FILE "listener-token"

/* The token in path: read when the file exists (a regular file of ours,
 * mode 0600 or stricter, 64 hex digits and a newline), else made (32
 * random bytes, written to a temporary file and linked in, so two
 * listeners starting at once end with the same one). *token is in
 * sodium_malloc memory, NUL-terminated; free it with lst_token_free().
 * *created says which. */
int lst_token_load(const char *path, char **token, bool *created, struct mg_err **err);
void lst_token_free(char *token);
/* "Bearer TOKEN", compared in constant time (sodium_memcmp) */
bool lst_token_matches(const char *token, const char *authorization);

/* ---- the listener (http.c) ------------------------------------------------ */

struct lst_options {
	const struct lst_address *address; /* parsed, not yet bound */
	/* what every session is made with (see session_options) */
	struct cfg *cfg;
	struct ctr_driver *driver;
	const char *state_dir;
	const char *data_dir;
	const char *workspace;
	const char *config_error;
	const char *workspace_error; /* session_options' */
	const char *workspace_note;
	const char *runtime_note;
	const char *token_path; /* NULL: STATE_DIR/mcpgate/listener-token */
	pid_t owner;
	bool watch_config;                /* every session follows mcp.toml (session_options') */
	void *(*start_thread)(void *srv); /* session_options' (tests and fuzzing only) */
};

/* Bind, then serve until SIGTERM, SIGINT or SIGHUP, then end every session
 * (each stops its servers) and return 0. Call before any other thread
 * starts: it blocks the signals it reads. */
int lst_run(const struct lst_options *opt, struct mg_err **err);

#endif
