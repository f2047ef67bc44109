/* mcpgate-probe: an MCP server on stdio for testing the gateway.
 *
 * Newline-delimited JSON-RPC 2.0 on stdin/stdout, one message a line. It is
 * built statically against musl and runs as the only file of a container
 * image, so it uses libc alone. Its tools report what the sandbox lets it do
 * (environment, files, network, capabilities) and misbehave on request
 * (crash, garbage, huge lines, slow answers). See fakes/README.md.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe_json.h"

#define MAX_LINE         ((size_t)256 << 20)
#define READ_CHUNK       ((size_t)64 << 10)
#define CONNECT_TIMEOUT  3000
#define DEFAULT_PROTOCOL "2025-11-25"

struct tool {
	const char *name;
	const char *description;
	const char *input_schema; /* raw JSON */
	const char *annotations;  /* raw JSON or NULL */
};

#define NO_ARGS   "{\"type\":\"object\",\"properties\":{},\"required\":[]}"
#define READ_ONLY "{\"readOnlyHint\":true,\"openWorldHint\":false}"

static const struct tool tools[] = {
    {"echo", "Returns its text argument.",
     "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},\"required\":[\"text\"]"
     "}",
     "{\"title\":\"Echo\",\"readOnlyHint\":true,\"openWorldHint\":false}"},
    {"env", "Returns the value of an environment variable, or an error result \"unset\".",
     "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}},\"required\":[\"name\"]"
     "}",
     READ_ONLY},
    {"write_file",
     "Creates or truncates a file and writes text (default \"probe\\n\") to it; "
     "with mode (say 2541, which is 04755), chmods it after.",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"text\":{\"type\":"
     "\"string\"},\"mode\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":4095}},"
     "\"required\":[\"path\"]}",
     "{\"readOnlyHint\":false,\"destructiveHint\":true,\"idempotentHint\":true,"
     "\"openWorldHint\":false}"},
    {"connect", "Opens a TCP connection to host:port (3 s timeout) and closes it.",
     "{\"type\":\"object\",\"properties\":{\"host\":{\"type\":\"string\"},\"port\":{\"type\":"
     "\"integer\",\"minimum\":1,\"maximum\":65535}},\"required\":[\"host\",\"port\"]}",
     "{\"readOnlyHint\":true,\"openWorldHint\":true}"},
    {"raw",
     "Connects to host:port, sends data (and then, once an answer's header ended, "
     "then), and returns what came back (64 KiB at most, 3 s idle).",
     "{\"type\":\"object\",\"properties\":{\"host\":{\"type\":\"string\"},\"port\":{\"type\":"
     "\"integer\",\"minimum\":1,\"maximum\":65535},\"data\":{\"type\":\"string\"},\"then\":{"
     "\"type\":\"string\"}},\"required\":[\"host\",\"port\",\"data\"]}",
     "{\"readOnlyHint\":true,\"openWorldHint\":true}"},
    {"read_file", "Returns the first 64 KiB of a file.",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}},\"required\":["
     "\"path\"]}",
     READ_ONLY},
    {"status", "Returns uid, effective capabilities, no_new_privs, hostname and pid as JSON.",
     NO_ARGS, READ_ONLY},
    {"syscalls",
     "Tries calls a contained server should not make (namespaces, tracing, bpf, "
     "io_uring, the key store, raw sockets, mounting) and returns, for each, ok "
     "or the errno as JSON.",
     NO_ARGS, READ_ONLY},
    {"slow", "Sleeps ms milliseconds, then answers.",
     "{\"type\":\"object\",\"properties\":{\"ms\":{\"type\":\"integer\",\"minimum\":0}},"
     "\"required\":[\"ms\"]}",
     READ_ONLY},
    {"progress", "Sends a progress notification after each of steps steps of ms milliseconds.",
     "{\"type\":\"object\",\"properties\":{\"steps\":{\"type\":\"integer\",\"minimum\":0},"
     "\"ms\":{\"type\":\"integer\",\"minimum\":0}},\"required\":[]}",
     READ_ONLY},
    {"crash", "Exits at once with the given code, without answering.",
     "{\"type\":\"object\",\"properties\":{\"code\":{\"type\":\"integer\",\"minimum\":0,"
     "\"maximum\":255}},\"required\":[]}",
     NULL},
    {"garbage", "Writes a line that is not JSON, then answers.", NO_ARGS, NULL},
    {"huge", "Answers with a text of the given number of bytes.",
     "{\"type\":\"object\",\"properties\":{\"bytes\":{\"type\":\"integer\",\"minimum\":0}},"
     "\"required\":[\"bytes\"]}",
     READ_ONLY},
    {"stderr", "Writes text to standard error.",
     "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},\"required\":[\"text\"]"
     "}",
     NULL},
    {"changed", "Changes the tool list and sends notifications/tools/list_changed.", NO_ARGS, NULL},
    {"touch", "Sends notifications/resources/updated for uri when it is subscribed.",
     "{\"type\":\"object\",\"properties\":{\"uri\":{\"type\":\"string\"}},\"required\":[\"uri\"]}",
     NULL},
    {"log", "Sends notifications/message with the given level and text (count times).",
     "{\"type\":\"object\",\"properties\":{\"level\":{\"type\":\"string\"},\"text\":{\"type\":"
     "\"string\"},\"count\":{\"type\":\"integer\",\"minimum\":1}},\"required\":[\"level\","
     "\"text\"]}",
     NULL},
    {"ask_sampling",
     "Asks the client sampling/createMessage; returns the answer as JSON text. With cancel, "
     "cancels the request at once and answers \"cancelled\".",
     "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"},\"cancel\":{"
     "\"type\":\"boolean\"}},\"required\":[]}",
     NULL},
    {"ask_elicitation", "Asks the client elicitation/create; returns the answer as JSON text.",
     "{\"type\":\"object\",\"properties\":{\"message\":{\"type\":\"string\"},\"mode\":{"
     "\"type\":\"string\",\"enum\":[\"form\",\"url\"]}},\"required\":[]}",
     NULL},
    {"ask_roots", "Asks the client roots/list; returns the answer as JSON text.", NO_ARGS, NULL},
    {"notify", "Sends the notification method, with params (an object) when given.",
     "{\"type\":\"object\",\"properties\":{\"method\":{\"type\":\"string\"},\"params\":{"
     "\"type\":\"object\"}},\"required\":[\"method\"]}",
     NULL},
    {"state",
     "Returns as JSON text the logging level set, the subscriptions, and the capabilities the "
     "client declared.",
     NO_ARGS, READ_ONLY},
    {"reflect", "Returns its arguments as it received them, byte for byte.",
     "{\"type\":\"object\",\"properties\":{},\"required\":[]}", NULL},
    {"answer",
     "Writes each of lines as it is (one line each), then answers this call with result as it "
     "is: any JSON value, a hostile server's answer.",
     "{\"type\":\"object\",\"properties\":{\"lines\":{\"type\":\"array\",\"items\":{"
     "\"type\":\"string\"}},\"result\":{}},\"required\":[]}",
     NULL},
    {"places",
     "Returns as JSON every place this process can write (each mount of a storage "
     "filesystem, and the folders two levels into it): its flags, size, mode and owner; "
     "and the mode and owner of /tmp, /var/tmp, /run and /dev/shm.",
     NO_ARGS, READ_ONLY},
    {"seccomp",
     "Returns as JSON this process's seccomp mode and filter count, and what an x32 "
     "unshare(CLONE_NEWUSER) (nr 0x40000110) gets: the x32 rules' EPERM, or the filter's "
     "answer for an architecture it does not know.",
     NO_ARGS, READ_ONLY},
};
#define N_TOOLS (sizeof tools / sizeof tools[0])

struct resource {
	const char *uri;
	const char *name;
	const char *mime;
	const char *text;
};

static const struct resource resources[] = {
    {"probe://greeting", "greeting", "text/plain", "Hello from the probe"},
    {"probe://data.json", "data", "application/json", "{\"probe\":true}"},
};
#define N_RESOURCES   (sizeof resources / sizeof resources[0])
#define ITEM_PREFIX   "probe://item/"
#define ECHO_PREFIX   "probe://echo/"
#define ECHO_TEMPLATE ECHO_PREFIX "{text}"

struct prompt {
	const char *name;
	const char *description;
	const char *arguments; /* raw JSON array, or NULL */
};

static const struct prompt prompts[] = {
    {"greet", "Greets someone by name.",
     "[{\"name\":\"name\",\"description\":\"who to greet\",\"required\":true}]"},
    {"plain", "A prompt without arguments.", NULL},
    {"with_resource", "A prompt that embeds probe://greeting and links probe://data.json.", NULL},
};
#define N_PROMPTS (sizeof prompts / sizeof prompts[0])

static const char *const log_levels[] = {"debug", "info",     "notice", "warning",
                                         "error", "critical", "alert",  "emergency"};

/* Input: lines of stdin, read on demand (also while a tool waits for the
 * client's answer to a request of ours). */
struct reader {
	char *buf;
	size_t cap, len, scan;
	int discarding; /* dropping the rest of a line over MAX_LINE */
	int eof;
	int record_fd; /* --record-input: every line read is appended here; -1: none */
};

struct probe {
	const char *protocol; /* --protocol, or NULL to echo the client's */
	/* the revision it speaks once initialized: what it lists and declares
	 * is that revision's (no tool annotations before 2025-03-26, no
	 * completions capability before 2025-03-26) */
	const char *version;
	int no_complete; /* --no-complete: completion/complete is not a method */
	long long page_size;
	long long crash_after; /* 0: never */
	int ignore_eof;
	const char *banner;
	const char *describe_suffix;
	int describe_caps; /* each description ends with the client's capabilities */
	int modern;        /* --modern: MCP 2026-07-28 only (server/discover, no initialize) */
	struct pj_span call_params; /* the tools/call being served */
	char *listen;               /* --modern: the filter of an open subscriptions/listen */
	char *barrier_dir;
	long long barrier_count;
	long long barrier_timeout_ms;
	long long initialize_delay_ms;
	long long start_delay_ms; /* --start-delay: reads nothing for this long (a slow start) */
	/* --leak-env NAME:WHERE: a hostile server's ways of putting a value it
	 * holds into what mcpgate reports (WHERE: initialize-error, protocol,
	 * name) */
	const char *leak_value;
	/* --tool-extra MEMBERS: JSON members added to every tool ("_meta":{...}) */
	const char *tool_extra;
	/* --echo-name NAME: the echo tool offered (and called) under a name a
	 * stranger chose */
	const char *echo_name;
	const char *leak_where;
	int garbage_first;
	long long flood;         /* --flood N: N lines that are not JSON, before anything else */
	int stderr_invalid;      /* --stderr-invalid: a line with a byte that is not UTF-8 */
	int stderr_hostile;      /* --stderr-hostile: escapes, U+202E and 50 newlines on stderr */
	long long exit_at_start; /* --exit-at-start CODE: exit (CODE) after the stderr options */
	long long huge_first;
	unsigned char offered[N_TOOLS];

	int changed;
	long long calls_answered;
	char instance[17]; /* random hex: which process answers (the state tool) */

	struct reader in;
	long long extra_resources; /* --resources N */
	long long asked;           /* requests we sent the client */
	char *log_level;           /* the last logging/setLevel, or NULL */
	char **subs;               /* subscribed URIs */
	size_t nsubs;
	char *client_caps;   /* raw JSON of initialize's capabilities, or NULL */
	char *last_complete; /* raw JSON of the last completion/complete's params, or NULL */
};

static void usage(const char *why)
{
	if (why != NULL)
		fprintf(stderr, "mcpgate-probe: %s\n", why);
	fputs(
	    "usage: mcpgate-probe [--tools a,b] [--page-size N] [--protocol V] [--crash-after N]\n"
	    "         [--ignore-eof] [--stderr-banner TEXT] [--describe-suffix S] "
	    "[--describe-caps]\n"
	    "         [--barrier DIR:N] [--barrier-timeout MS] [--initialize-delay MS]\n"
	    "         [--leak-env NAME:WHERE] [--tool-extra MEMBERS] [--echo-name NAME]\n"
	    "         [--garbage-first] [--huge-first BYTES] [--resources N] [--modern] "
	    "[--start-delay MS]\n"
	    "         [--stderr-hostile] [--exit-at-start CODE]\n"
	    "         [--no-complete] [--record-input FILE]\n",
	    stderr);
	exit(2);
}

/* Decimal integer in [min, max]: no sign but '-', no empty string, no junk. */
static int parse_number(const char *s, long long min, long long max, long long *out)
{
	struct pj_span v = {s, strlen(s)};
	long long x;
	if (pj_integer(v, &x) < 0 || x < min || x > max)
		return -1;
	*out = x;
	return 0;
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long long ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			/* Our reader is gone (EPIPE): nothing left to do. */
			if (fd != 2)
				fprintf(stderr, "mcpgate-probe: write: %s\n", strerror(errno));
			exit(1);
		}
		p += w;
		n -= (size_t)w;
	}
}

/* Sends one message: b plus a newline, in one write. */
static void send_line(struct pj_buf *b)
{
	pj_buf_add(b, "\n", 1);
	write_all(1, b->p, b->len);
	b->len = 0;
}

static void begin_message(struct pj_buf *b, const struct pj_span *id)
{
	pj_buf_adds(b, "{\"jsonrpc\":\"2.0\",\"id\":");
	if (id != NULL)
		pj_buf_add(b, id->p, id->n);
	else
		pj_buf_adds(b, "null");
}

static void send_result(const struct pj_span *id, const char *raw_result)
{
	struct pj_buf b = {0};
	begin_message(&b, id);
	pj_buf_adds(&b, ",\"result\":");
	pj_buf_adds(&b, raw_result);
	pj_buf_adds(&b, "}");
	send_line(&b);
	pj_buf_free(&b);
}

static void send_error(const struct pj_span *id, int code, const char *message)
{
	struct pj_buf b = {0};
	begin_message(&b, id);
	pj_buf_addf(&b, ",\"error\":{\"code\":%d,\"message\":", code);
	pj_put_cstring(&b, message);
	pj_buf_adds(&b, "}}");
	send_line(&b);
	pj_buf_free(&b);
}

/* An error with data: raw_data is JSON */
static void send_error_data(const struct pj_span *id, int code, const char *message,
                            const char *raw_data)
{
	struct pj_buf b = {0};
	begin_message(&b, id);
	pj_buf_addf(&b, ",\"error\":{\"code\":%d,\"message\":", code);
	pj_put_cstring(&b, message);
	pj_buf_adds(&b, ",\"data\":");
	pj_buf_adds(&b, raw_data);
	pj_buf_adds(&b, "}}");
	send_line(&b);
	pj_buf_free(&b);
}

static void send_tool_text(const struct pj_span *id, const char *text, size_t n, int is_error)
{
	struct pj_buf b = {0};
	begin_message(&b, id);
	pj_buf_adds(&b, ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":");
	pj_put_string(&b, text, n);
	pj_buf_adds(&b, "}]");
	if (is_error)
		pj_buf_adds(&b, ",\"isError\":true");
	pj_buf_adds(&b, "}}");
	send_line(&b);
	pj_buf_free(&b);
}

static void send_tool_ctext(const struct pj_span *id, const char *text, int is_error)
{
	send_tool_text(id, text, strlen(text), is_error);
}

static void send_tool_errno(const struct pj_span *id, int err)
{
	struct pj_buf b = {0};
	pj_buf_addf(&b, "error: %s", strerror(err));
	send_tool_text(id, b.p, b.len, 1);
	pj_buf_free(&b);
}

/* ---- arguments ---------------------------------------------------------- */

/* 1 and a decoded copy (caller frees) when args.name is a string without NUL;
 * 0 when absent; -1 when of another type. */
static int arg_string(struct pj_span args, const char *name, char **out)
{
	struct pj_span v;
	size_t n;
	if (!pj_member(args, name, &v))
		return 0;
	*out = pj_string(v, &n);
	if (*out == NULL)
		return -1;
	if (n != strlen(*out)) {
		free(*out);
		*out = NULL;
		return -1;
	}
	return 1;
}

/* 1 and *out when args.name is an integer (or a string of one) in [min, max];
 * 0 when absent; -1 otherwise. */
static int arg_integer(struct pj_span args, const char *name, long long min, long long max,
                       long long *out)
{
	struct pj_span v;
	long long x;
	if (!pj_member(args, name, &v))
		return 0;
	if (pj_kind(v) == PJ_STRING) {
		char *s = pj_string(v, NULL);
		int rc = parse_number(s, min, max, &x);
		free(s);
		if (rc < 0)
			return -1;
	} else if (pj_integer(v, &x) < 0 || x < min || x > max) {
		return -1;
	}
	*out = x;
	return 1;
}

static void bad_argument(const struct pj_span *id, const char *name, const char *what)
{
	struct pj_buf b = {0};
	pj_buf_addf(&b, "invalid arguments: %s must be %s", name, what);
	send_tool_text(id, b.p, b.len, 1);
	pj_buf_free(&b);
}

/* ---- tools -------------------------------------------------------------- */

static void tool_echo(struct pj_span id, struct pj_span args)
{
	struct pj_span v;
	size_t n;
	char *text;
	if (!pj_member(args, "text", &v) || (text = pj_string(v, &n)) == NULL) {
		bad_argument(&id, "text", "a string");
		return;
	}
	send_tool_text(&id, text, n, 0);
	free(text);
}

static void tool_env(struct pj_span id, struct pj_span args)
{
	char *name = NULL;
	const char *value;
	if (arg_string(args, "name", &name) != 1 || name[0] == '\0' || strchr(name, '=') != NULL) {
		free(name);
		bad_argument(&id, "name", "a variable name");
		return;
	}
	value = getenv(name);
	free(name);
	if (value == NULL)
		send_tool_ctext(&id, "unset", 1);
	else
		send_tool_ctext(&id, value, 0);
}

static void tool_write_file(struct pj_span id, struct pj_span args)
{
	char *path = NULL, *text = NULL;
	struct pj_span v;
	size_t n = 6;
	int fd, err = 0;
	const char *content = "probe\n";
	long long mode = -1;

	if (pj_member(args, "mode", &v) && arg_integer(args, "mode", 0, 4095, &mode) != 1) {
		bad_argument(&id, "mode", "an integer from 0 to 4095");
		return;
	}
	if (arg_string(args, "path", &path) != 1 || path[0] == '\0') {
		free(path);
		bad_argument(&id, "path", "a non-empty string");
		return;
	}
	if (pj_member(args, "text", &v)) {
		text = pj_string(v, &n);
		if (text == NULL) {
			free(path);
			bad_argument(&id, "text", "a string");
			return;
		}
		content = text;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
	if (fd < 0) {
		err = errno;
	} else {
		size_t off = 0;
		while (off < n) {
			ssize_t w = write(fd, content + off, n - off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				err = errno;
				break;
			}
			off += (size_t)w;
		}
		if (err == 0 && mode >= 0 && fchmod(fd, (mode_t)mode) < 0)
			err = errno;
		if (close(fd) < 0 && err == 0)
			err = errno;
	}
	free(path);
	free(text);
	if (err != 0)
		send_tool_errno(&id, err);
	else
		send_tool_ctext(&id, "ok", 0);
}

/* 0 when connected within the deadline, else an errno value. */
static int try_connect_fd(const struct addrinfo *ai, long long deadline, int *out);

static int try_connect(const struct addrinfo *ai, long long deadline)
{
	return try_connect_fd(ai, deadline, NULL);
}

/* Connect; with out, the connected fd is handed over instead of closed. */
static int try_connect_fd(const struct addrinfo *ai, long long deadline, int *out)
{
	int fd, err = 0;
	socklen_t len = sizeof err;
	struct pollfd pfd;

	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
	if (fd < 0)
		return errno;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
		goto out;
	if (errno != EINPROGRESS) {
		err = errno;
		goto out;
	}
	pfd.fd = fd;
	pfd.events = POLLOUT;
	for (;;) {
		long long left = deadline - now_ms();
		int rc;
		if (left <= 0) {
			err = ETIMEDOUT;
			goto out;
		}
		rc = poll(&pfd, 1, (int)left);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0) {
			err = errno;
			goto out;
		}
		if (rc > 0)
			break;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
out:
	if (out != NULL && err == 0) {
		*out = fd;
		return 0;
	}
	close(fd);
	return err;
}

#define RAW_MAX     (64 * 1024)
#define RAW_IDLE_MS 3000

static int send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			struct pollfd pfd = {fd, POLLOUT, 0};
			poll(&pfd, 1, RAW_IDLE_MS);
			continue;
		}
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void tool_raw(struct pj_span id, struct pj_span args)
{
	char *host = NULL, *data = NULL, *then = NULL;
	char port_text[16];
	long long port;
	struct addrinfo hints, *res = NULL, *ai;
	int fd = -1, err = EHOSTUNREACH, rc;
	if (arg_string(args, "host", &host) != 1 ||
	    arg_integer(args, "port", 1, 65535, &port) != 1 ||
	    arg_string(args, "data", &data) != 1) {
		free(host);
		free(data);
		bad_argument(&id, "host, port, data", "a host, a port and a string");
		return;
	}
	if (arg_string(args, "then", &then) != 1)
		then = NULL;
	rc = snprintf(port_text, sizeof port_text, "%lld", port);
	if (rc < 0 || (size_t)rc >= sizeof port_text)
		abort();
	memset(&hints, 0, sizeof hints);
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	rc = getaddrinfo(host, port_text, &hints, &res);
	free(host);
	if (rc != 0) {
		send_tool_ctext(&id, "error: cannot resolve the host", 1);
		free(data);
		free(then);
		return;
	}
	for (ai = res; ai != NULL && fd < 0; ai = ai->ai_next)
		err = try_connect_fd(ai, now_ms() + CONNECT_TIMEOUT, &fd);
	freeaddrinfo(res);
	if (fd < 0) {
		send_tool_errno(&id, err);
		free(data);
		free(then);
		return;
	}
	struct pj_buf got = {0};
	if (send_all(fd, data, strlen(data)) == 0) {
		for (;;) {
			char chunk[4096];
			struct pollfd pfd = {fd, POLLIN, 0};
			rc = poll(&pfd, 1, RAW_IDLE_MS);
			if (rc < 0 && errno == EINTR)
				continue;
			if (rc <= 0)
				break;
			ssize_t n = recv(fd, chunk, sizeof chunk, 0);
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (n <= 0)
				break;
			if (got.len < RAW_MAX)
				pj_buf_add(&got, chunk,
				           (size_t)n > RAW_MAX - got.len ? RAW_MAX - got.len
				                                         : (size_t)n);
			if (then != NULL && got.len >= 4 &&
			    memmem(got.p, got.len, "\r\n\r\n", 4) != NULL) {
				if (send_all(fd, then, strlen(then)) < 0)
					break;
				free(then);
				then = NULL;
			}
		}
	}
	close(fd);
	send_tool_text(&id, got.p != NULL ? got.p : "", got.len, 0);
	pj_buf_free(&got);
	free(data);
	free(then);
}

static void tool_read_file(struct pj_span id, struct pj_span args)
{
	char *path = NULL;
	if (arg_string(args, "path", &path) != 1) {
		bad_argument(&id, "path", "a string");
		return;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	free(path);
	if (fd < 0) {
		send_tool_errno(&id, errno);
		return;
	}
	struct pj_buf b = {0};
	char chunk[4096];
	ssize_t n;
	while (b.len < RAW_MAX && (n = read(fd, chunk, sizeof chunk)) > 0)
		pj_buf_add(&b, chunk, (size_t)n > RAW_MAX - b.len ? RAW_MAX - b.len : (size_t)n);
	close(fd);
	send_tool_text(&id, b.p != NULL ? b.p : "", b.len, 0);
	pj_buf_free(&b);
}

static void tool_connect(struct pj_span id, struct pj_span args)
{
	char *host = NULL;
	char port_text[16];
	long long port;
	struct addrinfo hints, *res = NULL, *ai;
	long long deadline = now_ms() + CONNECT_TIMEOUT;
	int rc, err = EHOSTUNREACH;

	if (arg_string(args, "host", &host) != 1 || host[0] == '\0') {
		free(host);
		bad_argument(&id, "host", "a non-empty string");
		return;
	}
	if (arg_integer(args, "port", 1, 65535, &port) != 1) {
		free(host);
		bad_argument(&id, "port", "an integer from 1 to 65535");
		return;
	}
	rc = snprintf(port_text, sizeof port_text, "%lld", port);
	if (rc < 0 || (size_t)rc >= sizeof port_text)
		abort();
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	rc = getaddrinfo(host, port_text, &hints, &res);
	free(host);
	if (rc != 0) {
		struct pj_buf b = {0};
		pj_buf_addf(&b, "error: %s", rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
		send_tool_text(&id, b.p, b.len, 1);
		pj_buf_free(&b);
		return;
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		err = try_connect(ai, deadline);
		if (err == 0 || err == ETIMEDOUT)
			break;
	}
	freeaddrinfo(res);
	if (err == 0)
		send_tool_ctext(&id, "connected", 0);
	else
		send_tool_errno(&id, err);
}

/* The value after "Key:" in /proc/self/status, whitespace trimmed, into out. */
static void proc_status_field(const char *status, const char *key, char *out, size_t outsz)
{
	size_t klen = strlen(key);
	const char *line = status;
	out[0] = '\0';
	while (line != NULL && *line != '\0') {
		const char *nl = strchr(line, '\n');
		size_t len = nl != NULL ? (size_t)(nl - line) : strlen(line);
		if (len > klen && memcmp(line, key, klen) == 0 && line[klen] == ':') {
			const char *v = line + klen + 1, *end = line + len;
			while (v < end && (*v == ' ' || *v == '\t'))
				v++;
			while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
				end--;
			if ((size_t)(end - v) < outsz) {
				memcpy(out, v, (size_t)(end - v));
				out[end - v] = '\0';
			}
			return;
		}
		line = nl != NULL ? nl + 1 : NULL;
	}
}

static void tool_status(struct pj_span id)
{
	char status[65536], capeff[64], nnp[32], host[256];
	size_t have = 0;
	long long nonewprivs = -1;
	struct pj_buf b = {0};
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		for (;;) {
			ssize_t r = read(fd, status + have, sizeof status - 1 - have);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				break;
			have += (size_t)r;
			if (have == sizeof status - 1)
				break;
		}
		close(fd);
	}
	status[have] = '\0';
	proc_status_field(status, "CapEff", capeff, sizeof capeff);
	proc_status_field(status, "NoNewPrivs", nnp, sizeof nnp);
	if (nnp[0] != '\0' && parse_number(nnp, 0, 1, &nonewprivs) < 0)
		nonewprivs = -1;
	if (gethostname(host, sizeof host) < 0)
		host[0] = '\0';
	host[sizeof host - 1] = '\0';

	pj_buf_addf(&b, "{\"uid\":%u,\"capeff\":", (unsigned)getuid());
	pj_put_cstring(&b, capeff);
	pj_buf_addf(&b, ",\"nonewprivs\":%lld,\"hostname\":", nonewprivs);
	pj_put_cstring(&b, host);
	pj_buf_addf(&b, ",\"pid\":%ld}", (long)getpid());
	send_tool_text(&id, b.p, b.len, 0);
	pj_buf_free(&b);
}

/* One attempt, in a child so that a call that succeeds (unshare, ptrace)
 * changes nothing of the probe's own: 0 or the errno */
static int attempt(int which)
{
	int fds[2];
	if (pipe(fds) < 0)
		return errno;
	pid_t pid = fork();
	if (pid < 0)
		return errno;
	if (pid == 0) {
		long r = -1;
		char buf[16] = "probe", got[16];
		struct iovec local = {got, sizeof got}, remote = {buf, sizeof buf};
		struct {
			unsigned int handle_bytes;
			int handle_type;
			unsigned char f_handle[128];
		} fh = {128, 0, {0}};
		int mnt = 0;
		errno = 0;
		switch (which) {
		case 0:
			r = unshare(CLONE_NEWUSER);
			break;
		case 1:
			r = unshare(CLONE_NEWNET);
			break;
		case 2:
			r = setns(-1, 0);
			break;
		case 3:
			r = syscall(SYS_clone, (long)(CLONE_NEWUSER | SIGCHLD), 0L, 0L, 0L, 0L);
			if (r == 0)
				_exit(0);
			break;
		case 4:
			r = syscall(SYS_clone3, 0L, 0L);
			break;
		case 5:
			r = ptrace(PTRACE_TRACEME, 0, 0, 0);
			break;
		case 6:
			r = syscall(SYS_process_vm_readv, (long)getpid(), &local, 1L, &remote, 1L,
			            0L);
			break;
		case 7:
			r = syscall(SYS_bpf, 0L, 0L, 0L);
			break;
		case 8:
			r = syscall(SYS_perf_event_open, 0L, 0L, -1L, -1L, 0L);
			break;
		case 9:
			r = syscall(SYS_io_uring_setup, 1L, 0L);
			break;
		case 10:
			r = syscall(SYS_userfaultfd, 0L);
			break;
		case 11:
			r = syscall(SYS_keyctl, 0L, -3L, 0L);
			break;
		case 12:
			r = syscall(SYS_name_to_handle_at, (long)AT_FDCWD, "/", &fh, &mnt, 0L);
			break;
		case 13:
			r = syscall(SYS_fanotify_init, 0L, 0L);
			break;
		case 14:
			r = socket(AF_PACKET, SOCK_RAW, 0);
			break;
		case 15:
			r = socket(40 /* AF_VSOCK */, SOCK_STREAM, 0);
			break;
		case 16:
			r = unshare(CLONE_NEWUSER | CLONE_NEWNS);
			if (r == 0)
				r = mount("none", "/tmp", "tmpfs", 0, "size=1m");
			break;
		}
		int e = r < 0 ? errno : 0;
		/* a call that fails for want of its arguments still went through */
		if (e == EFAULT || e == EINVAL || e == EBADF || e == EOVERFLOW || e == EOPNOTSUPP)
			e = 0;
		if (write(fds[1], &e, sizeof e) < 0)
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	int e = -1;
	if (read(fds[0], &e, sizeof e) != (ssize_t)sizeof e)
		e = -1;
	close(fds[0]);
	waitpid(pid, NULL, 0);
	return e;
}

static void tool_syscalls(struct pj_span id)
{
	static const char *const names[] = {"unshare_user",
	                                    "unshare_net",
	                                    "setns",
	                                    "clone_newuser",
	                                    "clone3",
	                                    "ptrace_traceme",
	                                    "process_vm_readv",
	                                    "bpf",
	                                    "perf_event_open",
	                                    "io_uring_setup",
	                                    "userfaultfd",
	                                    "keyctl",
	                                    "name_to_handle_at",
	                                    "fanotify_init",
	                                    "socket_packet",
	                                    "socket_vsock",
	                                    "mount_in_new_ns"};
	struct pj_buf b = {0};
	pj_buf_adds(&b, "{");
	for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++) {
		int e = attempt(i);
		pj_buf_addf(&b, "%s\"%s\":", i ? "," : "", names[i]);
		if (e == 0)
			pj_buf_adds(&b, "\"ok\"");
		else if (e < 0)
			pj_buf_adds(&b, "\"lost\"");
		else
			pj_put_cstring(&b, strerror(e));
	}
	pj_buf_adds(&b, "}");
	send_tool_text(&id, b.p, b.len, 0);
	pj_buf_free(&b);
}

/* ---- places: what this process can write ------------------------------- */

#define PLACES_MAX 512

/* In place: mountinfo's octal escapes (\040 for a space) */
static void unescape_octal(char *s)
{
	char *w = s;
	for (char *r = s; *r != '\0'; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/* Filesystems that hold no files a process could store (or run) */
static int not_storage(const char *fs)
{
	static const char *const skip[] = {
	    "proc", "sysfs",  "cgroup",   "cgroup2", "devpts", "securityfs",  "debugfs", "tracefs",
	    "bpf",  "pstore", "configfs", "fusectl", "nsfs",   "binfmt_misc", NULL};
	for (size_t i = 0; skip[i] != NULL; i++)
		if (strcmp(fs, skip[i]) == 0)
			return 1;
	return 0;
}

/* 1 when this process can make something in the folder dirfd: a nameless
 * file (O_TMPFILE, nothing left behind), else a folder made and removed */
static int can_write_dir(int dirfd)
{
	int fd = openat(dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	if (fd >= 0) {
		close(fd);
		return 1;
	}
	if (errno == EACCES || errno == EROFS || errno == EPERM)
		return 0;
	char name[64];
	snprintf(name, sizeof name, ".mcpgate-probe-%ld", (long)getpid());
	if (mkdirat(dirfd, name, 0700) < 0)
		return 0;
	unlinkat(dirfd, name, AT_REMOVEDIR);
	return 1;
}

/* A message queue made and removed: the one thing an mqueue mount holds */
static int can_make_queue(void)
{
	char name[64];
	snprintf(name, sizeof name, "mcpgate-probe-%ld", (long)getpid());
	long fd = syscall(SYS_mq_open, name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600, NULL);
	if (fd < 0)
		return 0;
	close((int)fd);
	syscall(SYS_mq_unlink, name);
	return 1;
}

static void put_place(struct pj_buf *b, int *first, const char *path, const char *fs, int fd)
{
	struct statvfs v;
	struct stat st;
	if (fstatvfs(fd, &v) < 0 || fstat(fd, &st) < 0)
		return;
	pj_buf_adds(b, *first ? "{\"path\":" : ",{\"path\":");
	*first = 0;
	pj_put_cstring(b, path);
	pj_buf_adds(b, ",\"fs\":");
	pj_put_cstring(b, fs);
	pj_buf_addf(b,
	            ",\"noexec\":%s,\"nosuid\":%s,\"nodev\":%s,\"bytes\":%llu,\"mode\":\"%04o\","
	            "\"uid\":%u,\"gid\":%u}",
	            (v.f_flag & ST_NOEXEC) ? "true" : "false",
	            (v.f_flag & ST_NOSUID) ? "true" : "false",
	            (v.f_flag & ST_NODEV) ? "true" : "false",
	            (unsigned long long)v.f_blocks * (unsigned long long)v.f_frsize,
	            (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid, (unsigned)st.st_gid);
}

/* The folders of one mount, two levels in (the same device only): each
 * this process can write is a place */
static void walk_places(struct pj_buf *b, int *first, unsigned *count, const char *path,
                        const char *fs, int fd, dev_t dev, int depth)
{
	if (*count >= PLACES_MAX)
		return;
	if (can_write_dir(fd)) {
		put_place(b, first, path, fs, fd);
		(*count)++;
	}
	if (depth >= 2)
		return;
	int dfd = dup(fd);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (d == NULL) {
		if (dfd >= 0)
			close(dfd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d)) != NULL && *count < PLACES_MAX) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		int cfd = openat(fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0)
			continue;
		struct stat st;
		if (fstat(cfd, &st) == 0 && st.st_dev == dev) {
			struct pj_buf sub = {0};
			pj_buf_addf(&sub, "%s%s%s", path, strcmp(path, "/") == 0 ? "" : "/",
			            e->d_name);
			walk_places(b, first, count, sub.p, fs, cfd, dev, depth + 1);
			pj_buf_free(&sub);
		}
		close(cfd);
	}
	closedir(d);
}

static void tool_places(struct pj_span id)
{
	struct pj_buf b = {0};
	int first = 1;
	unsigned count = 0;
	FILE *f = fopen("/proc/self/mountinfo", "re");
	pj_buf_addf(&b, "{\"uid\":%u,\"places\":[", (unsigned)getuid());
	char line[8192];
	while (f != NULL && fgets(line, sizeof line, f) != NULL) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER */
		char *fields[8] = {0};
		char *save = NULL, *tok = strtok_r(line, " \n", &save);
		for (int i = 0; tok != NULL && i < 5; i++, tok = strtok_r(NULL, " \n", &save))
			fields[i] = tok;
		while (tok != NULL && strcmp(tok, "-") != 0)
			tok = strtok_r(NULL, " \n", &save);
		char *fs = tok != NULL ? strtok_r(NULL, " \n", &save) : NULL;
		if (fields[4] == NULL || fs == NULL || not_storage(fs))
			continue;
		unescape_octal(fields[4]);
		if (strcmp(fs, "mqueue") == 0) {
			int fd = open(fields[4], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (fd >= 0 && can_make_queue()) {
				put_place(&b, &first, fields[4], fs, fd);
				count++;
			}
			if (fd >= 0)
				close(fd);
			continue;
		}
		int fd = open(fields[4], O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		if (fd < 0)
			continue;
		struct stat st;
		if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
			walk_places(&b, &first, &count, fields[4], fs, fd, st.st_dev, 0);
		} else if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
			/* a file mounted alone (/etc/hosts): writable when it opens so */
			int w = open(fields[4],
			             O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
			if (w >= 0) {
				put_place(&b, &first, fields[4], fs, fd);
				count++;
				close(w);
			}
		}
		close(fd);
	}
	if (f != NULL)
		fclose(f);
	pj_buf_adds(&b, "],\"folders\":{");
	static const char *const named[] = {"/tmp", "/var/tmp", "/run", "/dev/shm"};
	for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
		struct stat st;
		pj_buf_addf(&b, "%s\"%s\":", i ? "," : "", named[i]);
		if (stat(named[i], &st) < 0)
			pj_put_cstring(&b, strerror(errno));
		else
			pj_buf_addf(&b, "{\"mode\":\"%04o\",\"uid\":%u}",
			            (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid);
	}
	pj_buf_adds(&b, "}}");
	send_tool_text(&id, b.p, b.len, 0);
	pj_buf_free(&b);
}

/* ---- seccomp: the filter as this process meets it ----------------------- */

static void tool_seccomp(struct pj_span id)
{
	char status[65536], mode[32], filters[32];
	size_t have = 0;
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t r;
		while (have < sizeof status - 1 &&
		       (r = read(fd, status + have, sizeof status - 1 - have)) > 0)
			have += (size_t)r;
		close(fd);
	}
	status[have] = '\0';
	proc_status_field(status, "Seccomp", mode, sizeof mode);
	proc_status_field(status, "Seccomp_filters", filters, sizeof filters);
	struct pj_buf b = {0};
	pj_buf_adds(&b, "{\"seccomp\":");
	pj_put_cstring(&b, mode);
	pj_buf_adds(&b, ",\"filters\":");
	pj_put_cstring(&b, filters);
	pj_buf_adds(&b, ",\"x32_unshare\":");
#if defined(__x86_64__)
	/* in a child: a filter may kill for an architecture it does not know */
	int fds[2];
	pid_t pid = pipe(fds) == 0 ? fork() : -1;
	if (pid == 0) {
		errno = 0;
		long r = syscall(0x40000000L | 272L /* x32 unshare */, (long)CLONE_NEWUSER);
		int e = r < 0 ? errno : 0;
		if (write(fds[1], &e, sizeof e) < 0)
			_exit(1);
		_exit(0);
	}
	int e = -1, st = 0;
	if (pid > 0) {
		close(fds[1]);
		if (read(fds[0], &e, sizeof e) != (ssize_t)sizeof e)
			e = -1;
		close(fds[0]);
		waitpid(pid, &st, 0);
	}
	if (pid < 0)
		pj_put_cstring(&b, "no child");
	else if (e == 0)
		pj_put_cstring(&b, "ok");
	else if (e > 0)
		pj_put_cstring(&b, strerror(e));
	else if (WIFSIGNALED(st))
		pj_buf_addf(&b, "\"killed by signal %d\"", WTERMSIG(st));
	else
		pj_put_cstring(&b, "lost");
#else
	pj_put_cstring(&b, "not x86-64");
#endif
	pj_buf_adds(&b, "}");
	send_tool_text(&id, b.p, b.len, 0);
	pj_buf_free(&b);
}

static void tool_slow(struct pj_span id, struct pj_span args)
{
	long long ms;
	struct pj_buf b = {0};
	if (arg_integer(args, "ms", 0, 86400000, &ms) != 1) {
		bad_argument(&id, "ms", "an integer from 0 to 86400000");
		return;
	}
	sleep_ms(ms);
	pj_buf_addf(&b, "slept %lld", ms);
	send_tool_text(&id, b.p, b.len, 0);
	pj_buf_free(&b);
}

static void tool_progress(struct pj_span id, struct pj_span params, struct pj_span args)
{
	long long steps = 3, ms = 10, i;
	struct pj_span meta, token;
	int have_token = 0;

	if (arg_integer(args, "steps", 0, 100000, &steps) < 0) {
		bad_argument(&id, "steps", "an integer from 0 to 100000");
		return;
	}
	if (arg_integer(args, "ms", 0, 60000, &ms) < 0) {
		bad_argument(&id, "ms", "an integer from 0 to 60000");
		return;
	}
	if (pj_member(params, "_meta", &meta) && pj_member(meta, "progressToken", &token)) {
		enum pj_kind k = pj_kind(token);
		have_token = k == PJ_STRING || k == PJ_NUMBER;
	}
	for (i = 1; i <= steps; i++) {
		sleep_ms(ms);
		if (have_token) {
			struct pj_buf b = {0};
			pj_buf_adds(&b,
			            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
			            "\"params\":{\"progressToken\":");
			pj_buf_add(&b, token.p, token.n);
			pj_buf_addf(&b, ",\"progress\":%lld,\"total\":%lld}}", i, steps);
			send_line(&b);
			pj_buf_free(&b);
		}
	}
	send_tool_ctext(&id, "done", 0);
}

static void tool_crash(struct pj_span id, struct pj_span args)
{
	long long code = 1;
	if (arg_integer(args, "code", 0, 255, &code) < 0) {
		bad_argument(&id, "code", "an integer from 0 to 255");
		return;
	}
	_exit((int)code);
}

static void tool_reflect(struct pj_span id, struct pj_span args)
{
	char *text = malloc(args.n + 1);
	if (text == NULL)
		abort();
	memcpy(text, args.p, args.n);
	text[args.n] = '\0';
	send_tool_ctext(&id, text, 0);
	free(text);
}

static void tool_answer(struct pj_span id, struct pj_span args)
{
	struct pj_span lines, result, key, line;
	struct pj_iter it;
	if (pj_member(args, "lines", &lines)) {
		if (pj_kind(lines) != PJ_ARRAY) {
			bad_argument(&id, "lines", "an array of strings");
			return;
		}
		pj_iter_init(&it, lines);
		while (pj_iter_next(&it, &key, &line)) {
			size_t n = 0;
			char *text = pj_string(line, &n);
			if (text == NULL)
				continue;
			write_all(1, text, n);
			write_all(1, "\n", 1);
			free(text);
		}
	}
	struct pj_buf b = {0};
	begin_message(&b, &id);
	pj_buf_adds(&b, ",\"result\":");
	if (pj_member(args, "result", &result))
		pj_buf_add(&b, result.p, result.n);
	else
		pj_buf_adds(&b, "{\"content\":[]}");
	pj_buf_adds(&b, "}");
	send_line(&b);
	pj_buf_free(&b);
}

static void tool_garbage(struct pj_span id)
{
	static const char line[] = "this is not json {\n";
	write_all(1, line, sizeof line - 1);
	send_tool_ctext(&id, "ok", 0);
}

static void put_letters(struct pj_buf *b, long long count)
{
	char *p = pj_buf_extend(b, (size_t)count);
	long long i;
	for (i = 0; i < count; i++)
		p[i] = (char)('a' + i % 26);
}

static void tool_huge(struct pj_span id, struct pj_span args)
{
	long long bytes;
	struct pj_buf b = {0};
	if (arg_integer(args, "bytes", 0, (long long)MAX_LINE, &bytes) != 1) {
		bad_argument(&id, "bytes", "an integer from 0 to 268435456");
		return;
	}
	/* Letters need no escaping: they go straight into the message. */
	begin_message(&b, &id);
	pj_buf_adds(&b, ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"");
	put_letters(&b, bytes);
	pj_buf_adds(&b, "\"}]}}");
	send_line(&b);
	pj_buf_free(&b);
}

static void tool_stderr(struct pj_span id, struct pj_span args)
{
	struct pj_span v;
	size_t n;
	char *text;
	if (!pj_member(args, "text", &v) || (text = pj_string(v, &n)) == NULL) {
		bad_argument(&id, "text", "a string");
		return;
	}
	write_all(2, text, n);
	write_all(2, "\n", 1);
	free(text);
	send_tool_ctext(&id, "ok", 0);
}

static void tool_changed(struct probe *p, struct pj_span id)
{
	struct pj_buf b = {0};
	p->changed = 1;
	pj_buf_adds(&b, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}");
	send_line(&b);
	pj_buf_free(&b);
	send_tool_ctext(&id, "ok", 0);
}

/* ---- input -------------------------------------------------------------- */

/* The next line of input: 1 with a copy in *line (the caller frees it) and
 * its length in *n; 2 for a line longer than MAX_LINE (dropped); 0 at the end
 * of input. A last line without a newline still counts. */
static int next_line(struct reader *r, char **line, size_t *n)
{
	for (;;) {
		char *nl =
		    r->len > r->scan ? memchr(r->buf + r->scan, '\n', r->len - r->scan) : NULL;
		ssize_t got;
		if (nl != NULL) {
			size_t end = (size_t)(nl - r->buf);
			int dropped = r->discarding;
			if (!dropped) {
				*line = pj_xmalloc(end + 1);
				memcpy(*line, r->buf, end);
				(*line)[end] = '\0';
				*n = end;
			}
			if (!dropped && r->record_fd >= 0) {
				write_all(r->record_fd, r->buf, end);
				write_all(r->record_fd, "\n", 1);
			}
			memmove(r->buf, nl + 1, r->len - end - 1);
			r->len -= end + 1;
			r->scan = 0;
			r->discarding = 0;
			return dropped ? 2 : 1;
		}
		r->scan = r->len;
		if (r->len > MAX_LINE) {
			r->discarding = 1;
			r->len = r->scan = 0;
		}
		if (r->eof) {
			if (r->discarding) {
				r->discarding = 0;
				return 2;
			}
			if (r->len == 0)
				return 0;
			*line = pj_xmalloc(r->len + 1);
			memcpy(*line, r->buf, r->len);
			(*line)[r->len] = '\0';
			*n = r->len;
			r->len = r->scan = 0;
			return 1;
		}
		if (r->cap - r->len < READ_CHUNK && r->cap < MAX_LINE + READ_CHUNK) {
			size_t cap = r->cap == 0 ? READ_CHUNK : r->cap * 2;
			r->cap = cap < MAX_LINE + READ_CHUNK ? cap : MAX_LINE + READ_CHUNK;
			r->buf = pj_xrealloc(r->buf, r->cap);
		}
		got = read(0, r->buf + r->len, r->cap - r->len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			fprintf(stderr, "mcpgate-probe: read: %s\n", strerror(errno));
		if (got <= 0)
			r->eof = 1;
		else
			r->len += (size_t)got;
	}
}

static void handle_line(struct probe *p, const char *line, size_t n);

/* ---- resources, prompts, logging: tools ---------------------------------- */

static int subscribed(const struct probe *p, const char *uri)
{
	size_t i;
	for (i = 0; i < p->nsubs; i++)
		if (strcmp(p->subs[i], uri) == 0)
			return 1;
	return 0;
}

static void tool_touch(struct probe *p, struct pj_span id, struct pj_span args)
{
	char *uri = NULL;
	struct pj_buf b = {0};
	if (arg_string(args, "uri", &uri) != 1) {
		bad_argument(&id, "uri", "a string");
		return;
	}
	if (!subscribed(p, uri)) {
		free(uri);
		send_tool_ctext(&id, "not subscribed", 0);
		return;
	}
	pj_buf_adds(&b, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/updated\","
	                "\"params\":{\"uri\":");
	pj_put_cstring(&b, uri);
	pj_buf_adds(&b, "}}");
	send_line(&b);
	pj_buf_free(&b);
	free(uri);
	send_tool_ctext(&id, "updated", 0);
}

static void tool_log(struct pj_span id, struct pj_span args)
{
	char *level = NULL, *text = NULL;
	struct pj_buf b = {0};
	if (arg_string(args, "level", &level) != 1 || arg_string(args, "text", &text) != 1) {
		free(level);
		free(text);
		bad_argument(&id, "level and text", "strings");
		return;
	}
	long long count = 1;
	if (arg_integer(args, "count", 1, 100000000, &count) < 0) {
		free(level);
		free(text);
		bad_argument(&id, "count", "an integer from 1 to 100000000");
		return;
	}
	/* a flood, when count is large: each a line of its own, in one go */
	for (long long i = 0; i < count; i++) {
		pj_buf_adds(&b, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\","
		                "\"params\":{\"level\":");
		pj_put_cstring(&b, level);
		pj_buf_adds(&b, ",\"logger\":\"probe\",\"data\":");
		pj_put_cstring(&b, text);
		pj_buf_adds(&b, "}}");
		send_line(&b);
	}
	pj_buf_free(&b);
	free(level);
	free(text);
	send_tool_ctext(&id, "logged", 0);
}

/* Send the client a request and wait for its answer, handling whatever else
 * comes meanwhile; the tool's text is the answer's "result" or "error"
 * member as JSON ({"result": ...} or {"error": ...}; isError for an error). */
static void ask_client(struct probe *p, struct pj_span call_id, const char *method,
                       const char *raw_params, int cancel)
{
	struct pj_buf id_copy = {0}, b = {0}, ask_id = {0};
	struct pj_span id;
	char *line;
	size_t n;
	int k;

	/* the call's id lives in a line the nested reads free */
	pj_buf_add(&id_copy, call_id.p, call_id.n);
	id.p = id_copy.p;
	id.n = id_copy.len;
	if (p->modern) {
		/* 2026-07-28 has no requests from servers: the call's result asks,
		 * and the retry brings the answer and the state, "probe-state-K"
		 * after K rounds; the argument "rounds" (default 1) says how many
		 * the probe asks before it answers */
		struct pj_span st, resp, ans, a, r;
		long long done = 0, want = 1;
		char *state = NULL;
		if (pj_member(p->call_params, "requestState", &st) && pj_kind(st) == PJ_STRING) {
			state = pj_string(st, NULL);
			if (state != NULL && strncmp(state, "probe-state-", 12) == 0)
				done = strtoll(state + 12, NULL, 10);
		}
		if (pj_member(p->call_params, "arguments", &a) && pj_member(a, "rounds", &r))
			pj_integer(r, &want);
		if (pj_member(p->call_params, "inputResponses", &resp) &&
		    pj_member(resp, "ask", &ans) && done >= want) {
			pj_buf_adds(&b, "{\"result\":");
			pj_buf_add(&b, ans.p, ans.n);
			pj_buf_addf(&b, ",\"rounds\":%lld,\"requestState\":", done);
			pj_put_cstring(&b, state);
			pj_buf_adds(&b, "}");
			send_tool_text(&id, b.p, b.len, 0);
			free(state);
			goto out;
		}
		free(state);
		/* the argument "requests" (default 1): that many at once, keyed
		 * ask, ask-2, ask-3, ... */
		long long many = 1;
		if (pj_member(p->call_params, "arguments", &a) && pj_member(a, "requests", &r))
			pj_integer(r, &many);
		pj_buf_adds(&b, "{\"resultType\":\"input_required\",\"inputRequests\":{");
		for (long long i = 1; i <= many; i++) {
			if (i == 1)
				pj_buf_adds(&b, "\"ask\":{\"method\":");
			else
				pj_buf_addf(&b, ",\"ask-%lld\":{\"method\":", i);
			pj_put_cstring(&b, method);
			pj_buf_adds(&b, ",\"params\":");
			pj_buf_adds(&b, raw_params != NULL ? raw_params : "{}");
			pj_buf_adds(&b, "}");
		}
		pj_buf_addf(&b, "},\"requestState\":\"probe-state-%lld\"}", done + 1);
		send_result(&id, b.p);
		goto out;
	}
	pj_buf_addf(&ask_id, "probe-ask-%lld", ++p->asked);
	pj_buf_adds(&b, "{\"jsonrpc\":\"2.0\",\"id\":");
	pj_put_cstring(&b, ask_id.p);
	pj_buf_adds(&b, ",\"method\":");
	pj_put_cstring(&b, method);
	if (raw_params != NULL) {
		pj_buf_adds(&b, ",\"params\":");
		pj_buf_adds(&b, raw_params);
	}
	pj_buf_adds(&b, "}");
	send_line(&b);
	if (cancel) {
		/* changed our mind: no answer is awaited */
		pj_buf_adds(&b, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
		                "\"params\":{\"requestId\":");
		pj_put_cstring(&b, ask_id.p);
		pj_buf_adds(&b, ",\"reason\":\"probe changed its mind\"}}");
		send_line(&b);
		send_tool_ctext(&id, "cancelled", 0);
		goto out;
	}
	while ((k = next_line(&p->in, &line, &n)) != 0) {
		struct pj_span msg, v, mid;
		if (k == 2) {
			send_error(NULL, -32700, "Parse error: line too long");
			continue;
		}
		if (pj_parse(line, n, &msg) == 0 && pj_kind(msg) == PJ_OBJECT &&
		    !pj_member(msg, "method", &v) && pj_member(msg, "id", &mid) &&
		    pj_string_eq(mid, ask_id.p)) {
			int is_error = pj_member(msg, "error", &v);
			pj_buf_adds(&b, is_error ? "{\"error\":" : "{\"result\":");
			if (is_error || pj_member(msg, "result", &v))
				pj_buf_add(&b, v.p, v.n);
			else
				pj_buf_adds(&b, "null");
			pj_buf_adds(&b, "}");
			send_tool_text(&id, b.p, b.len, is_error);
			free(line);
			goto out;
		}
		handle_line(p, line, n);
		free(line);
	}
	send_tool_ctext(&id, "{\"error\":\"the input ended before the answer\"}", 1);
out:
	pj_buf_free(&b);
	pj_buf_free(&ask_id);
	pj_buf_free(&id_copy);
}

static void tool_ask_sampling(struct probe *p, struct pj_span id, struct pj_span args)
{
	char *text = NULL;
	struct pj_buf b = {0};
	struct pj_span cancel;
	int has_cancel = pj_member(args, "cancel", &cancel);
	if (arg_string(args, "text", &text) < 0 || (has_cancel && pj_kind(cancel) != PJ_BOOL)) {
		free(text);
		bad_argument(&id, "text and cancel", "a string and a boolean");
		return;
	}
	pj_buf_adds(&b,
	            "{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":");
	pj_put_cstring(&b, text != NULL ? text : "Say something.");
	pj_buf_adds(&b, "}}],\"maxTokens\":16,\"includeContext\":\"thisServer\"}");
	free(text);
	ask_client(p, id, "sampling/createMessage", b.p,
	           has_cancel && cancel.n == 4 && memcmp(cancel.p, "true", 4) == 0);
	pj_buf_free(&b);
}

static void tool_ask_elicitation(struct probe *p, struct pj_span id, struct pj_span args)
{
	char *message = NULL, *mode = NULL;
	struct pj_buf b = {0};
	if (arg_string(args, "message", &message) < 0 || arg_string(args, "mode", &mode) < 0 ||
	    (mode != NULL && strcmp(mode, "form") != 0 && strcmp(mode, "url") != 0)) {
		free(message);
		free(mode);
		bad_argument(&id, "message and mode", "strings (mode: form or url)");
		return;
	}
	if (mode != NULL && strcmp(mode, "url") == 0) {
		pj_buf_adds(&b, "{\"mode\":\"url\",\"message\":");
		pj_put_cstring(&b, message != NULL ? message : "Open this page.");
		pj_buf_addf(&b,
		            ",\"elicitationId\":\"probe-e-%lld\",\"url\":"
		            "\"https://example.com/probe\"}",
		            p->asked + 1);
	} else {
		pj_buf_adds(&b, "{\"mode\":\"form\",\"message\":");
		pj_put_cstring(&b, message != NULL ? message : "Your name?");
		pj_buf_adds(&b,
		            ",\"requestedSchema\":{\"type\":\"object\",\"properties\":{\"name\":{"
		            "\"type\":\"string\"}},\"required\":[\"name\"]}}");
	}
	free(message);
	free(mode);
	ask_client(p, id, "elicitation/create", b.p, 0);
	pj_buf_free(&b);
}

static void tool_notify(struct pj_span id, struct pj_span args)
{
	char *method = NULL;
	struct pj_span params;
	struct pj_buf b = {0};
	int has_params = pj_member(args, "params", &params);
	if (arg_string(args, "method", &method) != 1 ||
	    (has_params && pj_kind(params) != PJ_OBJECT)) {
		free(method);
		bad_argument(&id, "method and params", "a string and an object");
		return;
	}
	pj_buf_adds(&b, "{\"jsonrpc\":\"2.0\",\"method\":");
	pj_put_cstring(&b, method);
	if (has_params) {
		pj_buf_adds(&b, ",\"params\":");
		pj_buf_add(&b, params.p, params.n);
	}
	pj_buf_adds(&b, "}");
	send_line(&b);
	pj_buf_free(&b);
	free(method);
	send_tool_ctext(&id, "sent", 0);
}

/* 16 hex digits from /dev/urandom (else the pid and the clock): two
 * processes, in containers or not, differ */
static void make_instance_id(char out[17])
{
	unsigned char raw[8];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, raw, sizeof raw) != (ssize_t)sizeof raw) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		unsigned long long v = ((unsigned long long)getpid() << 40) ^
		                       (unsigned long long)ts.tv_nsec ^
		                       ((unsigned long long)ts.tv_sec << 20);
		memcpy(raw, &v, sizeof raw);
	}
	if (fd >= 0)
		close(fd);
	for (int i = 0; i < 8; i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
}

static void tool_state(const struct probe *p, struct pj_span id, struct pj_span params)
{
	struct pj_buf b = {0};
	struct pj_span meta;
	size_t i;
	pj_buf_adds(&b, "{\"instance\":");
	pj_put_cstring(&b, p->instance);
	/* the call's own _meta as it arrived: what the gateway passed on */
	pj_buf_adds(&b, ",\"meta\":");
	if (pj_member(params, "_meta", &meta))
		pj_buf_add(&b, meta.p, meta.n);
	else
		pj_buf_adds(&b, "null");
	pj_buf_adds(&b, ",\"level\":");
	if (p->log_level != NULL)
		pj_put_cstring(&b, p->log_level);
	else
		pj_buf_adds(&b, "null");
	pj_buf_adds(&b, ",\"subscriptions\":[");
	for (i = 0; i < p->nsubs; i++) {
		if (i > 0)
			pj_buf_adds(&b, ",");
		pj_put_cstring(&b, p->subs[i]);
	}
	pj_buf_adds(&b, "],\"capabilities\":");
	pj_buf_adds(&b, p->client_caps != NULL ? p->client_caps : "null");
	pj_buf_adds(&b, ",\"listen\":");
	pj_buf_adds(&b, p->listen != NULL ? p->listen : "null");
	pj_buf_adds(&b, ",\"completion\":");
	pj_buf_adds(&b, p->last_complete != NULL ? p->last_complete : "null");
	pj_buf_adds(&b, "}");
	send_tool_text(&id, b.p, b.len, 0);
	pj_buf_free(&b);
}

/* ---- methods ------------------------------------------------------------ */

/* The page [*start, *end) of a list of count items: "cursor" is the index of
 * the first as a decimal string; pages of --page-size. -1 after answering a
 * bad cursor. */
static int page_bounds(const struct probe *p, struct pj_span id, struct pj_span params,
                       long long count, long long *start, long long *end)
{
	struct pj_span v;
	*start = 0;
	if (pj_member(params, "cursor", &v) && pj_kind(v) != PJ_NULL) {
		char *s = pj_string(v, NULL);
		int bad = s == NULL || parse_number(s, 0, count, start) < 0;
		free(s);
		if (bad) {
			send_error(&id, -32602, "Invalid cursor");
			return -1;
		}
	}
	*end = count;
	if (p->page_size > 0 && *start + p->page_size < count)
		*end = *start + p->page_size;
	return 0;
}

static void end_page(struct pj_buf *b, long long end, long long count)
{
	pj_buf_adds(b, "]");
	if (end < count)
		pj_buf_addf(b, ",\"nextCursor\":\"%lld\"", end);
	pj_buf_adds(b, "}");
}

static void method_resources_list(const struct probe *p, struct pj_span id, struct pj_span params)
{
	long long count = (long long)N_RESOURCES + p->extra_resources, start, end, k;
	struct pj_buf b = {0};
	if (page_bounds(p, id, params, count, &start, &end) < 0)
		return;
	pj_buf_adds(&b, "{\"resources\":[");
	for (k = start; k < end; k++) {
		if (k > start)
			pj_buf_adds(&b, ",");
		if (k < (long long)N_RESOURCES) {
			const struct resource *r = &resources[k];
			pj_buf_adds(&b, "{\"uri\":");
			pj_put_cstring(&b, r->uri);
			pj_buf_adds(&b, ",\"name\":");
			pj_put_cstring(&b, r->name);
			pj_buf_adds(&b, ",\"mimeType\":");
			pj_put_cstring(&b, r->mime);
			pj_buf_adds(&b, "}");
		} else {
			long long item = k - (long long)N_RESOURCES + 1;
			pj_buf_addf(&b,
			            "{\"uri\":\"" ITEM_PREFIX "%lld\",\"name\":\"item-%lld\","
			            "\"mimeType\":\"text/plain\"}",
			            item, item);
		}
	}
	end_page(&b, end, count);
	send_result(&id, b.p);
	pj_buf_free(&b);
}

static void method_templates_list(const struct probe *p, struct pj_span id, struct pj_span params)
{
	long long start, end;
	struct pj_buf b = {0};
	if (page_bounds(p, id, params, 1, &start, &end) < 0)
		return;
	pj_buf_adds(&b, "{\"resourceTemplates\":[");
	if (start < end)
		pj_buf_adds(&b, "{\"uriTemplate\":\"" ECHO_TEMPLATE "\",\"name\":\"echo\","
		                "\"description\":\"Reads back the text in its URI.\","
		                "\"mimeType\":\"text/plain\"}");
	end_page(&b, end, 1);
	send_result(&id, b.p);
	pj_buf_free(&b);
}

static void send_contents(struct pj_span id, const char *uri, const char *mime, const char *text)
{
	struct pj_buf b = {0};
	pj_buf_adds(&b, "{\"contents\":[{\"uri\":");
	pj_put_cstring(&b, uri);
	pj_buf_adds(&b, ",\"mimeType\":");
	pj_put_cstring(&b, mime);
	pj_buf_adds(&b, ",\"text\":");
	pj_put_cstring(&b, text);
	pj_buf_adds(&b, "}]}");
	send_result(&id, b.p);
	pj_buf_free(&b);
}

static void method_resources_read(const struct probe *p, struct pj_span id, struct pj_span params)
{
	char *uri = NULL;
	long long item;
	size_t i;
	if (arg_string(params, "uri", &uri) != 1) {
		send_error(&id, -32602, "resources/read needs a uri");
		return;
	}
	for (i = 0; i < N_RESOURCES; i++)
		if (strcmp(uri, resources[i].uri) == 0) {
			send_contents(id, uri, resources[i].mime, resources[i].text);
			free(uri);
			return;
		}
	if (strncmp(uri, ITEM_PREFIX, strlen(ITEM_PREFIX)) == 0 &&
	    parse_number(uri + strlen(ITEM_PREFIX), 1, p->extra_resources, &item) == 0) {
		struct pj_buf t = {0};
		pj_buf_addf(&t, "item %lld", item);
		send_contents(id, uri, "text/plain", t.p);
		pj_buf_free(&t);
	} else if (strncmp(uri, ECHO_PREFIX, strlen(ECHO_PREFIX)) == 0) {
		send_contents(id, uri, "text/plain", uri + strlen(ECHO_PREFIX));
	} else {
		struct pj_buf d = {0};
		pj_buf_adds(&d, "{\"uri\":");
		pj_put_cstring(&d, uri);
		pj_buf_adds(&d, "}");
		send_error_data(&id, -32002, "Resource not found", d.p);
		pj_buf_free(&d);
	}
	free(uri);
}

static void method_subscribe(struct probe *p, struct pj_span id, struct pj_span params, int on)
{
	char *uri = NULL;
	size_t i;
	if (arg_string(params, "uri", &uri) != 1) {
		send_error(&id, -32602, "a uri is needed");
		return;
	}
	for (i = 0; i < p->nsubs; i++)
		if (strcmp(p->subs[i], uri) == 0)
			break;
	if (on && i == p->nsubs) {
		p->subs = pj_xrealloc(p->subs, (p->nsubs + 1) * sizeof *p->subs);
		p->subs[p->nsubs++] = uri;
		uri = NULL;
	} else if (!on && i < p->nsubs) {
		free(p->subs[i]);
		p->subs[i] = p->subs[--p->nsubs];
	}
	free(uri);
	send_result(&id, "{}");
}

static void method_prompts_list(const struct probe *p, struct pj_span id, struct pj_span params)
{
	long long start, end, k;
	struct pj_buf b = {0};
	if (page_bounds(p, id, params, (long long)N_PROMPTS, &start, &end) < 0)
		return;
	pj_buf_adds(&b, "{\"prompts\":[");
	for (k = start; k < end; k++) {
		const struct prompt *pr = &prompts[k];
		if (k > start)
			pj_buf_adds(&b, ",");
		pj_buf_adds(&b, "{\"name\":");
		pj_put_cstring(&b, pr->name);
		pj_buf_adds(&b, ",\"description\":");
		pj_put_cstring(&b, pr->description);
		if (pr->arguments != NULL) {
			pj_buf_adds(&b, ",\"arguments\":");
			pj_buf_adds(&b, pr->arguments);
		}
		pj_buf_adds(&b, "}");
	}
	end_page(&b, end, (long long)N_PROMPTS);
	send_result(&id, b.p);
	pj_buf_free(&b);
}

static void method_prompts_get(struct pj_span id, struct pj_span params)
{
	struct pj_span v, args = {"{}", 2};
	struct pj_buf b = {0};
	char *who = NULL;
	if (pj_member(params, "arguments", &v) && pj_kind(v) == PJ_OBJECT)
		args = v;
	if (!pj_member(params, "name", &v) || pj_kind(v) != PJ_STRING) {
		send_error(&id, -32602, "prompts/get needs a name");
		return;
	}
	if (pj_string_eq(v, "greet")) {
		if (arg_string(args, "name", &who) != 1) {
			send_error(&id, -32602, "Missing required argument: name");
			return;
		}
		pj_buf_adds(&b,
		            "{\"description\":\"Greets someone by name.\",\"messages\":[{\"role\":"
		            "\"user\",\"content\":{\"type\":\"text\",\"text\":");
		{
			struct pj_buf t = {0};
			pj_buf_addf(&t, "Say hello to %s.", who);
			pj_put_string(&b, t.p, t.len);
			pj_buf_free(&t);
		}
		pj_buf_adds(&b, "}}]}");
		free(who);
	} else if (pj_string_eq(v, "plain")) {
		pj_buf_adds(&b, "{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\","
		                "\"text\":\"A plain prompt.\"}}]}");
	} else if (pj_string_eq(v, "with_resource")) {
		pj_buf_adds(
		    &b, "{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"resource\","
		        "\"resource\":{\"uri\":\"probe://greeting\",\"mimeType\":\"text/plain\","
		        "\"text\":\"Hello from the probe\"}}},{\"role\":\"user\",\"content\":{"
		        "\"type\":\"resource_link\",\"uri\":\"probe://data.json\",\"name\":"
		        "\"data\"}}]}");
	} else {
		char *name = pj_string(v, NULL);
		struct pj_buf m = {0};
		pj_buf_adds(&m, "Unknown prompt: ");
		pj_buf_adds(&m, name);
		send_error(&id, -32602, m.p);
		pj_buf_free(&m);
		free(name);
		return;
	}
	send_result(&id, b.p);
	pj_buf_free(&b);
}

static void method_complete(struct pj_span id, struct pj_span params)
{
	static const char *const names[] = {"alice", "albert", "bob"};
	static const char *const words[] = {"hello", "help", "world"};
	const char *const *from = NULL;
	struct pj_span ref, arg, v;
	char *value = NULL;
	struct pj_buf b = {0};
	size_t i, n = 0;
	if (!pj_member(params, "ref", &ref) || !pj_member(params, "argument", &arg) ||
	    arg_string(arg, "value", &value) != 1) {
		send_error(&id, -32602, "completion/complete needs ref and argument");
		return;
	}
	if (pj_member(ref, "type", &v) && pj_string_eq(v, "ref/prompt") &&
	    pj_member(ref, "name", &v) && pj_string_eq(v, "greet") && pj_member(arg, "name", &v) &&
	    pj_string_eq(v, "name"))
		from = names;
	else if (pj_member(ref, "type", &v) && pj_string_eq(v, "ref/resource") &&
	         pj_member(ref, "uri", &v) && pj_string_eq(v, ECHO_TEMPLATE) &&
	         pj_member(arg, "name", &v) && pj_string_eq(v, "text"))
		from = words;
	if (from == NULL) {
		free(value);
		send_error(&id, -32602, "Unknown reference or argument");
		return;
	}
	pj_buf_adds(&b, "{\"completion\":{\"values\":[");
	for (i = 0; i < 3; i++) {
		if (strncmp(from[i], value, strlen(value)) != 0)
			continue;
		if (n++ > 0)
			pj_buf_adds(&b, ",");
		pj_put_cstring(&b, from[i]);
	}
	pj_buf_addf(&b, "],\"total\":%zu,\"hasMore\":false}}", n);
	free(value);
	send_result(&id, b.p);
	pj_buf_free(&b);
}

static void method_set_level(struct probe *p, struct pj_span id, struct pj_span params)
{
	char *level = NULL;
	size_t i;
	if (arg_string(params, "level", &level) == 1)
		for (i = 0; i < sizeof log_levels / sizeof log_levels[0]; i++)
			if (strcmp(level, log_levels[i]) == 0) {
				free(p->log_level);
				p->log_level = level;
				send_result(&id, "{}");
				return;
			}
	free(level);
	send_error(&id, -32602, "Invalid level");
}

static int barrier_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

static void barrier_wait(const struct probe *p)
{
	long long deadline = now_ms() + p->barrier_timeout_ms;
	for (;;) {
		int n = barrier_entries(p->barrier_dir);
		if (n >= p->barrier_count)
			return;
		if (now_ms() >= deadline) {
			fprintf(stderr,
			        "mcpgate-probe: barrier %s: %d of %lld after %lld ms, giving up\n",
			        p->barrier_dir, n, p->barrier_count, p->barrier_timeout_ms);
			exit(3);
		}
		sleep_ms(10);
	}
}

/* Whether the revision the probe speaks is at least version (the names are
 * dates, so they compare as text) */
static int speaks_since(const struct probe *p, const char *version)
{
	return strcmp(p->version != NULL ? p->version : DEFAULT_PROTOCOL, version) >= 0;
}

static void method_initialize(struct probe *p, struct pj_span id, struct pj_span params)
{
	static const char *const known[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
	const char *version = DEFAULT_PROTOCOL;
	struct pj_span v;
	struct pj_buf b = {0};
	size_t i;

	if (p->initialize_delay_ms > 0)
		sleep_ms(p->initialize_delay_ms);
	if (p->barrier_dir != NULL)
		barrier_wait(p);
	if (pj_member(params, "protocolVersion", &v))
		for (i = 0; i < sizeof known / sizeof known[0]; i++)
			if (pj_string_eq(v, known[i]))
				version = known[i];
	if (p->protocol != NULL)
		version = p->protocol;
	if (p->leak_where != NULL && strcmp(p->leak_where, "initialize-error") == 0) {
		send_error(&id, -32000, p->leak_value);
		return;
	}
	if (p->leak_where != NULL && strcmp(p->leak_where, "protocol") == 0)
		version = p->leak_value;
	if (pj_member(params, "capabilities", &v)) {
		free(p->client_caps);
		p->client_caps = pj_xmalloc(v.n + 1);
		memcpy(p->client_caps, v.p, v.n);
		p->client_caps[v.n] = '\0';
	}
	p->version = version;
	pj_buf_adds(&b, "{\"protocolVersion\":");
	pj_put_cstring(&b, version);
	pj_buf_adds(&b, ",\"capabilities\":{\"tools\":{\"listChanged\":true},\"resources\":{"
	                "\"subscribe\":true,\"listChanged\":true},\"prompts\":{\"listChanged\":"
	                "true},\"logging\":{}");
	/* 2024-11-05 had completion/complete, but no capability naming it */
	if (speaks_since(p, "2025-03-26") && !p->no_complete)
		pj_buf_adds(&b, ",\"completions\":{}");
	pj_buf_adds(&b, "},\"serverInfo\":{\"name\":");
	pj_put_cstring(&b, p->leak_where != NULL && strcmp(p->leak_where, "name") == 0
	                       ? p->leak_value
	                       : "mcpgate-probe");
	pj_buf_adds(&b, ",\"version\":\"1\"}}");
	send_result(&id, b.p);
	pj_buf_free(&b);
}

/* Tool i's name as offered */
static const char *tool_name(const struct probe *p, size_t i)
{
	return i == 0 && p->echo_name != NULL ? p->echo_name : tools[i].name;
}

static void put_tool(const struct probe *p, struct pj_buf *b, const struct tool *t)
{
	pj_buf_adds(b, "{\"name\":");
	pj_put_cstring(b, tool_name(p, (size_t)(t - tools)));
	pj_buf_adds(b, ",\"description\":");
	{
		struct pj_buf d = {0};
		pj_buf_adds(&d, t->description);
		if (p->describe_suffix != NULL)
			pj_buf_adds(&d, p->describe_suffix);
		if (p->describe_caps) {
			pj_buf_adds(&d, " [client capabilities: ");
			pj_buf_adds(&d, p->client_caps != NULL ? p->client_caps : "none");
			pj_buf_adds(&d, "]");
		}
		if (p->changed)
			pj_buf_adds(&d, " (changed)");
		pj_put_string(b, d.p, d.len);
		pj_buf_free(&d);
	}
	pj_buf_adds(b, ",\"inputSchema\":");
	pj_buf_adds(b, t->input_schema);
	if (t->annotations != NULL && speaks_since(p, "2025-03-26")) {
		pj_buf_adds(b, ",\"annotations\":");
		pj_buf_adds(b, t->annotations);
	}
	if (p->tool_extra != NULL) {
		pj_buf_adds(b, ",");
		pj_buf_adds(b, p->tool_extra);
	}
	pj_buf_adds(b, "}");
}

static void method_tools_list(const struct probe *p, struct pj_span id, struct pj_span params)
{
	struct pj_span v;
	long long start = 0, count = 0, end, i, k;
	struct pj_buf b = {0};
	int first = 1;

	for (i = 0; i < (long long)N_TOOLS; i++)
		count += p->offered[i];
	if (pj_member(params, "cursor", &v) && pj_kind(v) != PJ_NULL) {
		char *s = pj_string(v, NULL);
		int bad = s == NULL || parse_number(s, 0, count, &start) < 0;
		free(s);
		if (bad) {
			send_error(&id, -32602, "Invalid cursor");
			return;
		}
	}
	end = count;
	if (p->page_size > 0 && start + p->page_size < count)
		end = start + p->page_size;

	pj_buf_adds(&b, "{\"tools\":[");
	for (i = 0, k = 0; i < (long long)N_TOOLS; i++) {
		if (!p->offered[i])
			continue;
		if (k >= start && k < end) {
			if (!first)
				pj_buf_adds(&b, ",");
			first = 0;
			put_tool(p, &b, &tools[i]);
		}
		k++;
	}
	pj_buf_adds(&b, "]");
	if (end < count)
		pj_buf_addf(&b, ",\"nextCursor\":\"%lld\"", end);
	/* --modern: a list that says it holds for an hour, for anyone: mcpgate
	 * must not lean on it once the server says it changed */
	if (p->modern)
		pj_buf_adds(&b, ",\"resultType\":\"complete\",\"ttlMs\":3600000,"
		                "\"cacheScope\":\"public\"");
	pj_buf_adds(&b, "}");
	send_result(&id, b.p);
	pj_buf_free(&b);
}

static void method_tools_call(struct probe *p, struct pj_span id, struct pj_span params)
{
	struct pj_span v, args = {"{}", 2};
	const char *name = NULL;
	size_t i;

	p->call_params = params;
	if (pj_member(params, "name", &v))
		for (i = 0; i < N_TOOLS; i++)
			if (p->offered[i] && pj_string_eq(v, tool_name(p, i)))
				name = tools[i].name;
	if (name == NULL) {
		struct pj_buf b = {0};
		char *given = pj_member(params, "name", &v) ? pj_string(v, NULL) : NULL;
		pj_buf_adds(&b, "Unknown tool: ");
		pj_buf_adds(&b, given != NULL ? given : "(none)");
		free(given);
		send_error(&id, -32602, b.p);
		pj_buf_free(&b);
	} else if (pj_member(params, "arguments", &v) && pj_kind(v) != PJ_OBJECT &&
	           pj_kind(v) != PJ_NULL) {
		send_error(&id, -32602, "arguments must be an object");
	} else {
		if (pj_member(params, "arguments", &v) && pj_kind(v) == PJ_OBJECT)
			args = v;
		if (strcmp(name, "echo") == 0)
			tool_echo(id, args);
		else if (strcmp(name, "env") == 0)
			tool_env(id, args);
		else if (strcmp(name, "write_file") == 0)
			tool_write_file(id, args);
		else if (strcmp(name, "connect") == 0)
			tool_connect(id, args);
		else if (strcmp(name, "raw") == 0)
			tool_raw(id, args);
		else if (strcmp(name, "read_file") == 0)
			tool_read_file(id, args);
		else if (strcmp(name, "status") == 0)
			tool_status(id);
		else if (strcmp(name, "syscalls") == 0)
			tool_syscalls(id);
		else if (strcmp(name, "slow") == 0)
			tool_slow(id, args);
		else if (strcmp(name, "progress") == 0)
			tool_progress(id, params, args);
		else if (strcmp(name, "crash") == 0)
			tool_crash(id, args);
		else if (strcmp(name, "garbage") == 0)
			tool_garbage(id);
		else if (strcmp(name, "answer") == 0)
			tool_answer(id, args);
		else if (strcmp(name, "reflect") == 0)
			tool_reflect(id, args);
		else if (strcmp(name, "huge") == 0)
			tool_huge(id, args);
		else if (strcmp(name, "stderr") == 0)
			tool_stderr(id, args);
		else if (strcmp(name, "changed") == 0)
			tool_changed(p, id);
		else if (strcmp(name, "touch") == 0)
			tool_touch(p, id, args);
		else if (strcmp(name, "log") == 0)
			tool_log(id, args);
		else if (strcmp(name, "ask_sampling") == 0)
			tool_ask_sampling(p, id, args);
		else if (strcmp(name, "ask_elicitation") == 0)
			tool_ask_elicitation(p, id, args);
		else if (strcmp(name, "ask_roots") == 0)
			ask_client(p, id, "roots/list", NULL, 0);
		else if (strcmp(name, "notify") == 0)
			tool_notify(id, args);
		else if (strcmp(name, "places") == 0)
			tool_places(id);
		else if (strcmp(name, "seccomp") == 0)
			tool_seccomp(id);
		else
			tool_state(p, id, params);
	}
	p->calls_answered++;
	if (p->crash_after > 0 && p->calls_answered >= p->crash_after) {
		fprintf(stderr, "mcpgate-probe: --crash-after %lld reached\n", p->crash_after);
		exit(1);
	}
}

static int is_blank(const char *s, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return 0;
	return 1;
}

/* --modern: a server of MCP 2026-07-28 only. server/discover is answered;
 * initialize, and what that revision removed, are not; every other request
 * must say 2026-07-28 in its _meta (the version error otherwise), and its
 * capabilities there are what the state tool shows. Returns 1 when the
 * request goes on to its method. */
static int modern_admit(struct probe *p, struct pj_span id, struct pj_span method,
                        struct pj_span params)
{
	static const char *const removed[] = {"initialize", "ping", "logging/setLevel",
	                                      "resources/subscribe", "resources/unsubscribe"};
	struct pj_span meta, v;
	size_t i;
	for (i = 0; i < sizeof removed / sizeof removed[0]; i++)
		if (pj_string_eq(method, removed[i])) {
			send_error(&id, -32601,
			           "Method not found: this server speaks MCP 2026-07-28");
			return 0;
		}
	if (!pj_member(params, "_meta", &meta) ||
	    !pj_member(meta, "io.modelcontextprotocol/protocolVersion", &v) ||
	    !pj_string_eq(v, "2026-07-28")) {
		send_error_data(&id, -32022, "Unsupported protocol version",
		                "{\"supported\":[\"2026-07-28\"]}");
		return 0;
	}
	if (pj_member(meta, "io.modelcontextprotocol/clientCapabilities", &v)) {
		free(p->client_caps);
		p->client_caps = pj_xmalloc(v.n + 1);
		memcpy(p->client_caps, v.p, v.n);
		p->client_caps[v.n] = '\0';
	}
	if (pj_member(meta, "io.modelcontextprotocol/logLevel", &v) && pj_kind(v) == PJ_STRING) {
		free(p->log_level);
		p->log_level = pj_string(v, NULL);
	}
	if (pj_string_eq(method, "subscriptions/listen")) {
		/* kept open, never answered; the state tool shows its filter */
		struct pj_span f;
		if (pj_member(params, "notifications", &f)) {
			free(p->listen);
			p->listen = pj_xmalloc(f.n + 1);
			memcpy(p->listen, f.p, f.n);
			p->listen[f.n] = '\0';
		}
		return 0;
	}
	if (pj_string_eq(method, "server/discover")) {
		send_result(&id,
		            "{\"resultType\":\"complete\",\"supportedVersions\":[\"2026-07-28\"],"
		            "\"capabilities\":{\"tools\":{\"listChanged\":true},\"resources\":{"
		            "\"listChanged\":true},\"prompts\":{\"listChanged\":true},"
		            "\"logging\":{},\"completions\":{}},\"_meta\":{"
		            "\"io.modelcontextprotocol/serverInfo\":{\"name\":\"mcpgate-probe\","
		            "\"version\":\"1\"}},\"ttlMs\":0,\"cacheScope\":\"private\"}");
		return 0;
	}
	return 1;
}

static void handle_line(struct probe *p, const char *line, size_t n)
{
	struct pj_span msg, id, method, params = {"{}", 2}, v;
	int has_id;
	enum pj_kind k;

	if (is_blank(line, n))
		return;
	if (pj_parse(line, n, &msg) < 0) {
		send_error(NULL, -32700, "Parse error");
		return;
	}
	if (pj_kind(msg) != PJ_OBJECT) {
		send_error(NULL, -32600, "Invalid Request");
		return;
	}
	has_id = pj_member(msg, "id", &id);
	k = has_id ? pj_kind(id) : PJ_NULL;
	if (k != PJ_STRING && k != PJ_NUMBER && k != PJ_NULL) {
		send_error(NULL, -32600, "Invalid Request: bad id");
		return;
	}
	if (!pj_member(msg, "method", &method)) {
		/* A response to a request we never send, or junk: answer only a
		 * message that claims to be a request. */
		if (has_id && !pj_member(msg, "result", &v) && !pj_member(msg, "error", &v))
			send_error(&id, -32600, "Invalid Request: no method");
		return;
	}
	if (pj_kind(method) != PJ_STRING) {
		if (has_id)
			send_error(&id, -32600, "Invalid Request: method must be a string");
		return;
	}
	if (!has_id)
		return; /* notifications/initialized, notifications/cancelled, ... */
	if (pj_member(msg, "params", &v)) {
		if (pj_kind(v) == PJ_OBJECT) {
			params = v;
		} else if (pj_kind(v) != PJ_NULL) {
			send_error(&id, -32602, "params must be an object");
			return;
		}
	}

	if (p->modern && !modern_admit(p, id, method, params))
		return;
	if (pj_string_eq(method, "initialize")) {
		method_initialize(p, id, params);
	} else if (pj_string_eq(method, "ping")) {
		send_result(&id, "{}");
	} else if (pj_string_eq(method, "tools/list")) {
		method_tools_list(p, id, params);
	} else if (pj_string_eq(method, "tools/call")) {
		method_tools_call(p, id, params);
	} else if (pj_string_eq(method, "resources/list")) {
		method_resources_list(p, id, params);
	} else if (pj_string_eq(method, "resources/templates/list")) {
		method_templates_list(p, id, params);
	} else if (pj_string_eq(method, "resources/read")) {
		method_resources_read(p, id, params);
	} else if (pj_string_eq(method, "resources/subscribe")) {
		method_subscribe(p, id, params, 1);
	} else if (pj_string_eq(method, "resources/unsubscribe")) {
		method_subscribe(p, id, params, 0);
	} else if (pj_string_eq(method, "prompts/list")) {
		method_prompts_list(p, id, params);
	} else if (pj_string_eq(method, "prompts/get")) {
		method_prompts_get(id, params);
	} else if (pj_string_eq(method, "completion/complete") && !p->no_complete) {
		p->last_complete = pj_xrealloc(p->last_complete, params.n + 1);
		memcpy(p->last_complete, params.p, params.n);
		p->last_complete[params.n] = '\0';
		method_complete(id, params);
	} else if (pj_string_eq(method, "logging/setLevel")) {
		method_set_level(p, id, params);
	} else {
		char *name = pj_string(method, NULL);
		struct pj_buf b = {0};
		pj_buf_adds(&b, "Method not found: ");
		pj_buf_adds(&b, name);
		send_error(&id, -32601, b.p);
		pj_buf_free(&b);
		free(name);
	}
}

/* Reads stdin to its end, one message a line; lines longer than MAX_LINE are
 * skipped and answered with a parse error. */
static void serve(struct probe *p)
{
	char *line;
	size_t n;
	int k;
	while ((k = next_line(&p->in, &line, &n)) != 0) {
		if (k == 2) {
			send_error(NULL, -32700, "Parse error: line too long");
			continue;
		}
		handle_line(p, line, n);
		free(line);
	}
}

static void select_tools(struct probe *p, const char *list)
{
	const char *s = list;
	memset(p->offered, 0, sizeof p->offered);
	while (*s != '\0') {
		const char *comma = strchr(s, ',');
		size_t n = comma != NULL ? (size_t)(comma - s) : strlen(s), i;
		int found = 0;
		for (i = 0; i < N_TOOLS; i++) {
			if (strlen(tools[i].name) == n && memcmp(tools[i].name, s, n) == 0) {
				p->offered[i] = 1;
				found = 1;
			}
		}
		if (n > 0 && !found) {
			fprintf(stderr, "mcpgate-probe: --tools: unknown tool \"%.*s\"\n", (int)n,
			        s);
			exit(2);
		}
		s += n;
		if (*s == ',')
			s++;
	}
}

/* Returns the value of option name at argv[*i] ("--name V" or "--name=V"),
 * advancing *i past it; NULL when argv[*i] is not that option. */
static const char *option_value(int argc, char **argv, int *i, const char *name)
{
	size_t n = strlen(name);
	const char *a = argv[*i];
	if (strncmp(a, name, n) != 0)
		return NULL;
	if (a[n] == '=')
		return a + n + 1;
	if (a[n] != '\0')
		return NULL;
	if (*i + 1 >= argc) {
		fprintf(stderr, "mcpgate-probe: %s needs a value\n", name);
		usage(NULL);
	}
	*i += 1;
	return argv[*i];
}

static void number_option(const char *name, const char *v, long long min, long long max,
                          long long *out)
{
	if (parse_number(v, min, max, out) < 0) {
		fprintf(stderr, "mcpgate-probe: %s: \"%s\" is not a number from %lld to %lld\n",
		        name, v, min, max);
		exit(2);
	}
}

static void parse_args(struct probe *p, int argc, char **argv)
{
	int i;
	const char *v;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(NULL);
		} else if (strcmp(a, "--ignore-eof") == 0) {
			p->ignore_eof = 1;
		} else if (strcmp(a, "--garbage-first") == 0) {
			p->garbage_first = 1;
		} else if ((v = option_value(argc, argv, &i, "--tools")) != NULL) {
			select_tools(p, v);
		} else if ((v = option_value(argc, argv, &i, "--resources")) != NULL) {
			number_option("--resources", v, 0, 1000000, &p->extra_resources);
		} else if ((v = option_value(argc, argv, &i, "--page-size")) != NULL) {
			number_option("--page-size", v, 0, 1000000, &p->page_size);
		} else if ((v = option_value(argc, argv, &i, "--protocol")) != NULL) {
			p->protocol = v;
		} else if ((v = option_value(argc, argv, &i, "--crash-after")) != NULL) {
			number_option("--crash-after", v, 1, 1000000000, &p->crash_after);
		} else if ((v = option_value(argc, argv, &i, "--stderr-banner")) != NULL) {
			p->banner = v;
		} else if ((v = option_value(argc, argv, &i, "--describe-suffix")) != NULL) {
			p->describe_suffix = v;
		} else if (strcmp(a, "--describe-caps") == 0) {
			p->describe_caps = 1;
		} else if (strcmp(a, "--modern") == 0) {
			p->modern = 1;
		} else if (strcmp(a, "--no-complete") == 0) {
			p->no_complete = 1;
		} else if ((v = option_value(argc, argv, &i, "--record-input")) != NULL) {
			p->in.record_fd = open(v, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
			if (p->in.record_fd < 0) {
				fprintf(stderr, "mcpgate-probe: --record-input %s: %s\n", v,
				        strerror(errno));
				exit(2);
			}
		} else if (strcmp(a, "--stderr-invalid") == 0) {
			p->stderr_invalid = 1;
		} else if (strcmp(a, "--stderr-hostile") == 0) {
			p->stderr_hostile = 1;
		} else if ((v = option_value(argc, argv, &i, "--exit-at-start")) != NULL) {
			number_option("--exit-at-start", v, 0, 255, &p->exit_at_start);
			p->exit_at_start += 1; /* 0: not asked */
		} else if ((v = option_value(argc, argv, &i, "--flood")) != NULL) {
			number_option("--flood", v, 0, 100000000, &p->flood);
		} else if ((v = option_value(argc, argv, &i, "--echo-name")) != NULL) {
			p->echo_name = v;
		} else if ((v = option_value(argc, argv, &i, "--tool-extra")) != NULL) {
			p->tool_extra = v;
		} else if ((v = option_value(argc, argv, &i, "--barrier-timeout")) != NULL) {
			number_option("--barrier-timeout", v, 0, 86400000, &p->barrier_timeout_ms);
		} else if ((v = option_value(argc, argv, &i, "--barrier")) != NULL) {
			const char *colon = strrchr(v, ':');
			if (colon == NULL || colon == v)
				usage("--barrier wants DIR:N");
			number_option("--barrier", colon + 1, 1, 100000, &p->barrier_count);
			free(p->barrier_dir);
			p->barrier_dir = pj_xmalloc((size_t)(colon - v) + 1);
			memcpy(p->barrier_dir, v, (size_t)(colon - v));
			p->barrier_dir[colon - v] = '\0';
		} else if ((v = option_value(argc, argv, &i, "--leak-env")) != NULL) {
			const char *colon = strchr(v, ':');
			if (colon == NULL || colon == v)
				usage("--leak-env wants NAME:WHERE");
			char *name = pj_xmalloc((size_t)(colon - v) + 1);
			memcpy(name, v, (size_t)(colon - v));
			name[colon - v] = '\0';
			p->leak_value = getenv(name);
			free(name);
			if (p->leak_value == NULL)
				p->leak_value = "(unset)";
			p->leak_where = colon + 1;
		} else if ((v = option_value(argc, argv, &i, "--initialize-delay")) != NULL) {
			number_option("--initialize-delay", v, 0, 86400000,
			              &p->initialize_delay_ms);
		} else if ((v = option_value(argc, argv, &i, "--start-delay")) != NULL) {
			number_option("--start-delay", v, 0, 86400000, &p->start_delay_ms);
		} else if ((v = option_value(argc, argv, &i, "--huge-first")) != NULL) {
			number_option("--huge-first", v, 0, (long long)MAX_LINE, &p->huge_first);
		} else {
			fprintf(stderr, "mcpgate-probe: unknown argument \"%s\"\n", a);
			usage(NULL);
		}
	}
}

static void barrier_arrive(const struct probe *p)
{
	struct pj_buf path = {0};
	int fd;
	pj_buf_addf(&path, "%s/%ld", p->barrier_dir, (long)getpid());
	fd = open(path.p, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY, 0644);
	if (fd < 0) {
		fprintf(stderr, "mcpgate-probe: barrier: %s: %s\n", path.p, strerror(errno));
		exit(3);
	}
	close(fd);
	pj_buf_free(&path);
}

int main(int argc, char **argv)
{
	struct probe p;
	size_t i;

	memset(&p, 0, sizeof p);
	p.in.record_fd = -1;
	for (i = 0; i < N_TOOLS; i++)
		p.offered[i] = 1;
	p.barrier_timeout_ms = 30000;
	make_instance_id(p.instance);
	signal(SIGPIPE, SIG_IGN);
	parse_args(&p, argc, argv);

	if (p.banner != NULL) {
		write_all(2, p.banner, strlen(p.banner));
		write_all(2, "\n", 1);
	}
	if (p.barrier_dir != NULL)
		barrier_arrive(&p);
	if (p.garbage_first)
		write_all(1, "this is not json {\n", 19);
	if (p.stderr_invalid)
		write_all(2, "before \xff after\n", 15);
	if (p.stderr_hostile) {
		/* what a hostile server prints to take over the terminal that
		 * shows its stderr: clear it, recolour it, retitle it, reverse
		 * text (U+202E), push everything off screen */
		static const char head[] = "\x1b[2J\x1b[31mhostile red\x1b[0m\n"
		                           "reversed \xe2\x80\xae txet\n";
		static const char tail[] = "\x1b]0;owned title\x07last words\r\n";
		write_all(2, head, sizeof(head) - 1);
		for (int k = 0; k < 50; k++)
			write_all(2, "\n", 1);
		write_all(2, tail, sizeof(tail) - 1);
	}
	if (p.exit_at_start > 0)
		exit((int)(p.exit_at_start - 1));
	for (long long k = 0; k < p.flood; k++)
		write_all(1, "flooding the audit log {\n", 25);
	if (p.huge_first > 0) {
		struct pj_buf b = {0};
		put_letters(&b, p.huge_first);
		send_line(&b);
		pj_buf_free(&b);
	}

	if (p.start_delay_ms > 0)
		sleep_ms(p.start_delay_ms);
	serve(&p);

	if (p.ignore_eof)
		for (;;)
			pause();
	free(p.barrier_dir);
	free(p.in.buf);
	free(p.log_level);
	free(p.client_caps);
	for (i = 0; i < p.nsubs; i++)
		free(p.subs[i]);
	free(p.subs);
	return 0;
}
