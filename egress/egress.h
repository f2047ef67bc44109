/* mcpgate-egress internals shared by main.c, opts.c, relay.c, log.c and
 * tls.c. The proxy is self-contained: libc only, so it links statically
 * against musl. */
#ifndef MG_EGRESS_EGRESS_H
#define MG_EGRESS_EGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "egress/addr.h"
#include "egress/parse.h"

/* Where the proxy listens or connects: an address and port, or a Unix
 * socket's path */
#define EGR_UNIX_PATH_MAX 107
struct egr_endpoint {
	bool is_unix;
	char path[EGR_UNIX_PATH_MAX + 1]; /* is_unix */
	struct egr_host host;             /* !is_unix: for a listen address, a literal */
	uint16_t port;
	const char *range; /* a target literal's row, for messages */
};

/* One -forward LISTEN=TARGET: every connection to LISTEN is relayed, as
 * bytes, to TARGET and nowhere else (egr_forward_target_parse judges it; a
 * loopback target only from a Unix listener: mcpgate's host side) */
struct egr_forward {
	struct egr_endpoint listen, target;
	bool loopback; /* the target is the host's loopback literal */
};
#define EGR_FORWARDS_MAX 64

struct egr_opts {
	struct sockaddr_storage listen;
	socklen_t listen_len;
	bool have_listen;
	struct egr_forward *forwards; /* owned; -forward in order */
	size_t nforwards;
	struct egr_allow *allow; /* owned; -allow and -allow-private in order */
	size_t nallow;
	struct egr_cidr *deny; /* owned; -deny-address */
	size_t ndeny;
	struct egr_cidr *from; /* owned; -from: none means any peer */
	size_t nfrom;
	bool lifeline;
	bool sni_check; /* CONNECT to 443 opens with a ClientHello egr_sni_refusal passes */
	struct egr_limits lim;
	unsigned header_timeout_ms, dns_timeout_ms, connect_timeout_ms, idle_timeout_ms;
	unsigned max_tunnels;
	size_t max_bytes_up; /* 0: no cap; else what the session may send upstream in all */
};

/* Parse the command line into *o (defaults first). Returns 0 to run, 1 when
 * -h asked for help (the caller prints egr_usage), -1 on a bad option with a
 * message naming it in errbuf. egr_opts_free releases what it allocated,
 * also after a failure. */
int egr_opts_parse(int argc, char **argv, struct egr_opts *o, char *errbuf, size_t errsz);
void egr_opts_free(struct egr_opts *o);
extern const char egr_usage[];

/* Whether a listener accepts a connection from sa: a unix peer always (its
 * folder decides), an IPv4 or IPv6 one (mapped forms as IPv4) when nfrom is
 * 0 or it is inside one of from. text gets the peer's address, for records. */
bool egr_peer_allowed(const struct egr_cidr *from, size_t nfrom, const struct sockaddr *sa,
                      char *text, size_t cap);

/* Records: one JSON line each on standard output, always whole lines.
 * Nothing else goes to standard output. method, host and address may be
 * NULL (written as null); port < 0 is null. The lines wait in a buffer until
 * egr_log_flush (the loop calls it at the end of each pass, and before it
 * exits) or until the buffer is full. */
void egr_log_attempt(const char *method, const char *host, int port, const char *address,
                     bool allowed, const char *reason);
void egr_log_close(const char *host, int port, uint64_t bytes_up, uint64_t bytes_down, uint64_t ms);
/* The session's cap on bytes sent was reached on a tunnel or request to
 * host:port, which is closed: session_bytes_up is what all of them sent. */
void egr_log_limit(const char *host, int port, uint64_t session_bytes_up, uint64_t max_bytes_up);
void egr_log_flush(void);
/* The same lines into buf, NUL-terminated; returns the length (newline
 * included, NUL not), or -1 if cap is too small. */
int egr_format_attempt(char *buf, size_t cap, const char *method, const char *host, int port,
                       const char *address, bool allowed, const char *reason);
int egr_format_close(char *buf, size_t cap, const char *host, int port, uint64_t bytes_up,
                     uint64_t bytes_down, uint64_t ms);
int egr_format_limit(char *buf, size_t cap, const char *host, int port, uint64_t session_bytes_up,
                     uint64_t max_bytes_up);

/* TLS ClientHello: the first record of a CONNECT tunnel to port 443.
 * 1: a whole, well-formed ClientHello that fills its record exactly; h->sni
 * and h->sni_len point into buf at its one host_name, or h->sni is NULL when
 * it has no server_name extension. 0: need more bytes. -1: refused, *why
 * says why: not a handshake record, a record version other than TLS 1.0-1.2,
 * a record over 16384 bytes, a ClientHello split across records or followed
 * by more in its record, a second server_name, a name list of anything but
 * one host_name, an encrypted ClientHello (ECH), or malformed. Judged as the
 * bytes arrive: plain text is refused at its first byte. */
#define EGR_TLS_RECORD_MAX (5 + 16384)
struct egr_hello {
	const char *sni; /* NULL: no server name */
	size_t sni_len;
};
int egr_tls_hello(const unsigned char *buf, size_t len, struct egr_hello *h, const char **why);
/* The same, for callers that need a server name: a ClientHello without one
 * is refused (-1); on 1, *name and *name_len point into buf. */
int egr_tls_sni(const unsigned char *buf, size_t len, const char **name, size_t *name_len,
                const char **why);
/* Whether a ClientHello's server name (sni NULL: none) fits the CONNECT
 * host: NULL when it does, else a static reason. A name must be sent as
 * exactly its canonical text (lower case, no trailing dot; so a missing SNI
 * is refused); an address takes no SNI, or exactly its canonical text. */
const char *egr_sni_refusal(const struct egr_host *host, const char *sni, size_t sni_len);

/* Parse an endpoint: "unix:PATH" (absolute), or ADDR:PORT (a literal, for
 * a listener: listen_addr) or HOST:PORT (egr_forward_target_parse, for a
 * target; loopback_ok as there). Returns 0 or -1 with *why. */
int egr_endpoint_parse(const char *s, bool listen_addr, bool loopback_ok, struct egr_endpoint *out,
                       const char **why);

/* The event loop: listens, serves until a signal or (with -lifeline) the end
 * of standard input. Returns the exit status. listen_fd is the HTTP proxy's
 * socket (-1: none); forward_fds[i] listens for o->forwards[i]. `own` are
 * the proxy's own interface addresses, refused like -deny-address entries. */
int egr_run(const struct egr_opts *o, int listen_fd, const int *forward_fds,
            const struct egr_cidr *own, size_t nown);

#endif
