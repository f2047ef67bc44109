/* fake-runtime: a stand-in for the podman and docker command lines.
 *
 * Tests copy (or hard-link) this program into a temporary DIR as DIR/podman or
 * DIR/docker and put DIR first in PATH. DIR is also the fake's state: the log
 * of every invocation (runtime-log.jsonl), the known images (images), the
 * containers and networks (containers/NAME, networks/NAME, one JSON object
 * each) and the knobs (run-fails, pull-fails, inspect-delay-ms,
 * rm-delay-ms, ps-hold). A container is DIR/mcpgate-probe run as a child with only
 * the --env variables. The argv[0] basename picks the flavour of messages
 * and exit codes ("docker", or podman for anything else). What is
 * supported is listed in fakes/README.md.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe_json.h"

#define MAX_STATE_FILE ((size_t)4 << 20)

extern char **environ;

enum flavor { FLAVOR_PODMAN, FLAVOR_DOCKER };

static enum flavor flavor = FLAVOR_PODMAN;
static char *state_dir;  /* DIR, where this executable lives */
static char *self_exe;   /* DIR/<argv0 as linked> */
static char *probe_path; /* DIR/mcpgate-probe */
static const char *prog; /* argv[0] basename */

/* ---- small helpers ------------------------------------------------------ */

static void die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void die(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

/* The usual failure status: podman 125, docker 1. */
static int err_status(void)
{
	return flavor == FLAVOR_DOCKER ? 1 : 125;
}

static char *path_join(const char *a, const char *b)
{
	struct pj_buf p = {0};
	pj_buf_adds(&p, a);
	pj_buf_adds(&p, "/");
	pj_buf_adds(&p, b);
	return p.p;
}

static char *state_path(const char *name)
{
	return path_join(state_dir, name);
}

/* Whole file, NUL-terminated, or NULL with errno set (EFBIG past max). */
static char *read_file(const char *path, size_t max, size_t *len)
{
	struct pj_buf b = {0};
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	pj_buf_add(&b, "", 0);
	for (;;) {
		char chunk[8192];
		ssize_t r = read(fd, chunk, sizeof chunk);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			close(fd);
			pj_buf_free(&b);
			errno = e;
			return NULL;
		}
		if (r == 0)
			break;
		if (b.len + (size_t)r > max) {
			close(fd);
			pj_buf_free(&b);
			errno = EFBIG;
			return NULL;
		}
		pj_buf_add(&b, chunk, (size_t)r);
	}
	close(fd);
	if (len != NULL)
		*len = b.len;
	return b.p;
}

static int file_exists(const char *name)
{
	char *p = state_path(name);
	int ok = access(p, F_OK) == 0;
	free(p);
	return ok;
}

/* A knob file's content on stderr, for run-fails and pull-fails. */
static void print_knob_file(const char *name)
{
	char *p = state_path(name);
	size_t n = 0;
	char *text = read_file(p, MAX_STATE_FILE, &n);
	if (text != NULL) {
		fwrite(text, 1, n, stderr);
		if (n == 0 || text[n - 1] != '\n')
			fputc('\n', stderr);
	}
	free(text);
	free(p);
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			die(125, "fake-runtime: write: %s", strerror(errno));
		p += w;
		n -= (size_t)w;
	}
}

static void out(struct pj_buf *b)
{
	fflush(stdout);
	write_all(1, b->p, b->len);
	b->len = 0;
}

static void sleep_ms(long long ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int parse_number(const char *s, long long min, long long max, long long *val)
{
	struct pj_span v = {s, strlen(s)};
	long long x;
	if (pj_integer(v, &x) < 0 || x < min || x > max)
		return -1;
	*val = x;
	return 0;
}

/* A knob file holding a number of milliseconds (0-600000), or -1 when there
 * is none or it holds something else. */
static long long knob_ms(const char *name)
{
	char *p = state_path(name);
	char *text = read_file(p, 64, NULL);
	long long ms = -1;
	free(p);
	if (text != NULL) {
		char *nl = strchr(text, '\n');
		if (nl != NULL)
			*nl = '\0';
		if (parse_number(text, 0, 600000, &ms) < 0)
			ms = -1;
	}
	free(text);
	return ms;
}

/* The knob ps-hold: while it is there, ps waits (a minute at most), as a
 * runtime busy with its store would; a test removes it to let ps go on */
static void ps_hold(void)
{
	for (int i = 0; i < 6000 && file_exists("ps-hold"); i++)
		sleep_ms(10);
}

/* Names of containers and networks become file names: podman's own rule. */
static int valid_name(const char *s)
{
	size_t i;
	if (s[0] == '\0' || strlen(s) > 200)
		return 0;
	for (i = 0; s[i] != '\0'; i++) {
		char c = s[i];
		int alnum =
		    (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!alnum && (i == 0 || (c != '_' && c != '.' && c != '-')))
			return 0;
	}
	return 1;
}

static void ensure_dir(const char *name)
{
	char *p = state_path(name);
	if (mkdir(p, 0755) < 0 && errno != EEXIST)
		die(125, "fake-runtime: mkdir %s: %s", p, strerror(errno));
	free(p);
}

/* Writes a state file in one piece: a temporary file, then link() when the
 * name must be new (exclusive) or rename() when it replaces. -1 with errno
 * EEXIST when exclusive and the name is taken. */
static int write_state_file(const char *dir, const char *name, const char *text, size_t n,
                            int exclusive)
{
	struct pj_buf tmp = {0};
	char *final;
	int fd, rc = 0, e = 0;

	pj_buf_addf(&tmp, "%s/%s/.%s.%ld.tmp", state_dir, dir, name, (long)getpid());
	final = state_path(dir);
	{
		char *f = path_join(final, name);
		free(final);
		final = f;
	}
	fd = open(tmp.p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		die(125, "fake-runtime: %s: %s", tmp.p, strerror(errno));
	write_all(fd, text, n);
	if (close(fd) < 0)
		die(125, "fake-runtime: %s: %s", tmp.p, strerror(errno));
	if (exclusive) {
		if (link(tmp.p, final) < 0) {
			rc = -1;
			e = errno;
		}
		unlink(tmp.p);
	} else if (rename(tmp.p, final) < 0) {
		die(125, "fake-runtime: rename %s: %s", final, strerror(errno));
	}
	if (rc < 0 && e != EEXIST)
		die(125, "fake-runtime: link %s: %s", final, strerror(e));
	free(final);
	pj_buf_free(&tmp);
	errno = e;
	return rc;
}

/* ---- the invocation log ------------------------------------------------- */

static void log_invocation(int argc, char **argv)
{
	struct pj_buf b = {0};
	char **e;
	int i, fd, first = 1;
	char *path;

	pj_buf_adds(&b, "{\"argv\":[");
	for (i = 0; i < argc; i++) {
		if (i > 0)
			pj_buf_adds(&b, ",");
		pj_put_cstring(&b, i == 0 ? prog : argv[i]);
	}
	pj_buf_adds(&b, "],\"env\":{");
	for (e = environ; e != NULL && *e != NULL; e++) {
		const char *eq = strchr(*e, '=');
		if (eq == NULL)
			continue;
		if (!first)
			pj_buf_adds(&b, ",");
		first = 0;
		pj_put_string(&b, *e, (size_t)(eq - *e));
		pj_buf_adds(&b, ":");
		pj_put_cstring(&b, eq + 1);
	}
	pj_buf_addf(&b, "},\"pid\":%ld}\n", (long)getpid());
	path = state_path("runtime-log.jsonl");
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		die(125, "fake-runtime: %s: %s", path, strerror(errno));
	/* One write() per line: concurrent invocations do not interleave. */
	if (write(fd, b.p, b.len) != (ssize_t)b.len)
		die(125, "fake-runtime: %s: short write", path);
	close(fd);
	free(path);
	pj_buf_free(&b);
}

/* ---- option parsing ----------------------------------------------------- */

struct opt {
	const char *name; /* long name without "--" */
	char short_name;  /* 0 for none */
	int has_value;
};

struct args {
	int argc;
	char **argv;
	int i;
	const char *cluster; /* the rest of a "-abc" cluster of short flags */
};

static const struct opt *find_short(const struct opt *table, char c)
{
	const struct opt *o;
	for (o = table; o->name != NULL; o++)
		if (o->short_name == c)
			return o;
	die(125, "fake-runtime: unknown option -%c", c);
}

/* The next option of a subcommand. 1 with *name (the long name, or the
 * unknown "--x" of an unknown "--x=y") and *value (NULL for a flag given
 * without "="); 0 at the first operand (a->i at it) or after "--". Unknown
 * options without "=" end the program: a test should notice them. Short
 * options: a cluster of flags ("-it"), or one taking a value ("-e X", "-eX"). */
static int next_opt(struct args *a, const struct opt *table, const char **name, const char **value)
{
	const char *arg;
	const struct opt *o;

	if (a->cluster != NULL && *a->cluster != '\0') {
		o = find_short(table, *a->cluster++);
		if (o->has_value)
			die(125, "fake-runtime: option -%c takes a value: give it alone",
			    o->short_name);
		*name = o->name;
		*value = NULL;
		return 1;
	}
	a->cluster = NULL;
	if (a->i >= a->argc)
		return 0;
	arg = a->argv[a->i];
	if (strcmp(arg, "--") == 0) {
		a->i++;
		return 0;
	}
	if (arg[0] != '-' || arg[1] == '\0')
		return 0;
	a->i++;
	if (arg[1] != '-') {
		o = find_short(table, arg[1]);
		*name = o->name;
		*value = NULL;
		if (!o->has_value) {
			a->cluster = arg + 2;
		} else if (arg[2] != '\0') {
			*value = arg[2] == '=' ? arg + 3 : arg + 2;
		} else {
			if (a->i >= a->argc)
				die(125, "fake-runtime: option -%c needs a value", arg[1]);
			*value = a->argv[a->i++];
		}
		return 1;
	}
	{
		const char *body = arg + 2, *eq = strchr(body, '=');
		size_t n = eq != NULL ? (size_t)(eq - body) : strlen(body);
		for (o = table; o->name != NULL; o++)
			if (strlen(o->name) == n && strncmp(o->name, body, n) == 0)
				break;
		if (o->name == NULL) {
			if (eq == NULL)
				die(125, "fake-runtime: unknown option %s", arg);
			/* Unknown --x=y: accepted as some option with a value. */
			*name = body;
			*value = eq + 1;
			return 1;
		}
		*name = o->name;
		if (eq != NULL) {
			*value = eq + 1;
		} else if (o->has_value) {
			if (a->i >= a->argc)
				die(125, "fake-runtime: option --%s needs a value", o->name);
			*value = a->argv[a->i++];
		} else {
			*value = NULL;
		}
		return 1;
	}
}

/* A flag's truth: "--x" and "--x=true" are true, "--x=false" false. */
static int flag_value(const char *name, const char *value)
{
	if (value == NULL || strcmp(value, "true") == 0)
		return 1;
	if (strcmp(value, "false") == 0)
		return 0;
	die(125, "fake-runtime: --%s: \"%s\" is not true or false", name, value);
}

/* ---- images ------------------------------------------------------------- */

/* The line of DIR/images that ref names (NAME@sha256:HEX itself, or NAME;
 * the last such line wins), copied; NULL when none. */
static char *find_image(const char *ref)
{
	char *path = state_path("images");
	char *text = read_file(path, MAX_STATE_FILE, NULL), *line, *found = NULL;
	free(path);
	if (text == NULL)
		return NULL;
	line = text;
	while (*line != '\0') {
		char *nl = strchr(line, '\n'), *end, *at;
		if (nl != NULL)
			*nl = '\0';
		end = line + strlen(line);
		while (end > line && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
			*--end = '\0';
		while (*line == ' ' || *line == '\t')
			line++;
		at = strchr(line, '@');
		if (*line != '\0' &&
		    (strcmp(line, ref) == 0 || (at != NULL && (size_t)(at - line) == strlen(ref) &&
		                                strncmp(line, ref, (size_t)(at - line)) == 0))) {
			free(found);
			found = pj_xstrdup(line);
		}
		if (nl == NULL)
			break;
		line = nl + 1;
	}
	free(text);
	return found;
}

/* NAME@sha256:<64 lowercase hex>. */
static int is_digest_ref(const char *ref)
{
	const char *at = strstr(ref, "@sha256:");
	size_t i;
	if (at == NULL || at == ref)
		return 0;
	at += 8;
	for (i = 0; at[i] != '\0'; i++)
		if (!((at[i] >= '0' && at[i] <= '9') || (at[i] >= 'a' && at[i] <= 'f')))
			return 0;
	return i == 64;
}

/* The hex of an image line's digest, and its image id: a real runtime's id
 * (the config's digest) differs from the manifest digest; here it is the
 * digest's hex reversed. The caller frees *id. */
static const char *image_hex(const char *line, char **id)
{
	const char *hex = strstr(line, "@sha256:");
	size_t n, i;
	hex = hex != NULL ? hex + 8 : "";
	n = strlen(hex);
	*id = pj_xmalloc(n + 1);
	for (i = 0; i < n; i++)
		(*id)[i] = hex[n - 1 - i];
	(*id)[n] = '\0';
	return hex;
}

/* Every image is the probe: its entrypoint, no Cmd, no volumes */
static void put_image_config(struct pj_buf *b)
{
	pj_buf_adds(b, "{\"Entrypoint\":[\"/mcpgate-probe\"],\"User\":\"\",\"Cmd\":null,"
	               "\"Env\":null,\"Volumes\":null}");
}

static void put_image_json(struct pj_buf *b, const char *line)
{
	struct pj_buf t = {0};
	char *id;
	const char *hex = image_hex(line, &id);

	pj_buf_adds(b, "{\"Id\":");
	pj_buf_addf(&t, "sha256:%s", id);
	pj_put_string(b, t.p, t.len);
	pj_buf_adds(b, ",\"Digest\":");
	t.len = 0;
	pj_buf_addf(&t, "sha256:%s", hex);
	pj_put_string(b, t.p, t.len);
	pj_buf_adds(b, ",\"RepoTags\":[],\"RepoDigests\":[");
	pj_put_cstring(b, line);
	pj_buf_adds(b, "],\"Config\":");
	put_image_config(b);
	pj_buf_adds(b, "}");
	pj_buf_free(&t);
	free(id);
}

static void image_not_found(const char *ref)
{
	if (flavor == FLAVOR_DOCKER)
		die(1, "Error: No such image: %s", ref);
	die(125, "Error: failed to find image %s: image not known", ref);
}

static int cmd_image_inspect(struct args *a)
{
	static const struct opt opts[] = {{"format", 'f', 1}, {"type", 0, 1}, {NULL, 0, 0}};
	const char *name, *value, *format = NULL;
	struct pj_buf b = {0};
	long long delay;
	int i, digests_only;

	while (next_opt(a, opts, &name, &value))
		if (strcmp(name, "format") == 0)
			format = value;
	if (a->i >= a->argc)
		die(err_status(), "Error: image inspect needs an image");
	if (file_exists("inspect-fails")) {
		print_knob_file("inspect-fails");
		return err_status();
	}
	delay = knob_ms("inspect-delay-ms");
	if (delay > 0)
		sleep_ms(delay);
	digests_only = format != NULL && strcmp(format, "{{json .RepoDigests}}") == 0;
	if (format != NULL && strcmp(format, "{{json .Config}}") == 0) {
		for (i = a->i; i < a->argc; i++) {
			char *line = find_image(a->argv[i]);
			if (line == NULL)
				image_not_found(a->argv[i]);
			free(line);
			put_image_config(&b);
			pj_buf_adds(&b, "\n");
		}
		out(&b);
		pj_buf_free(&b);
		return 0;
	}
	if (!digests_only)
		pj_buf_adds(&b, "[");
	for (i = a->i; i < a->argc; i++) {
		char *line = find_image(a->argv[i]);
		if (line == NULL) {
			pj_buf_free(&b);
			image_not_found(a->argv[i]);
		}
		if (digests_only) {
			pj_buf_adds(&b, "[");
			pj_put_cstring(&b, line);
			pj_buf_adds(&b, "]\n");
		} else {
			if (i > a->i)
				pj_buf_adds(&b, ",");
			put_image_json(&b, line);
		}
		free(line);
	}
	if (!digests_only)
		pj_buf_adds(&b, "]\n");
	out(&b);
	pj_buf_free(&b);
	return 0;
}

static int cmd_image_exists(struct args *a)
{
	static const struct opt opts[] = {{NULL, 0, 0}};
	const char *name, *value;
	char *line;
	while (next_opt(a, opts, &name, &value))
		;
	if (a->i + 1 != a->argc)
		die(125, "Error: image exists needs one image");
	line = find_image(a->argv[a->i]);
	free(line);
	return line != NULL ? 0 : 1;
}

static int cmd_pull(struct args *a)
{
	static const struct opt opts[] = {
	    {"quiet", 'q', 0},    {"tls-verify", 0, 1}, {"policy", 0, 1},   {"platform", 0, 1},
	    {"all-tags", 'a', 0}, {"arch", 0, 1},       {"os", 0, 1},       {"variant", 0, 1},
	    {"retry", 0, 1},      {"creds", 0, 1},      {"authfile", 0, 1}, {NULL, 0, 0},
	};
	const char *name, *value, *ref;
	char *line, *path;
	int fd, quiet = 0;
	struct pj_buf b = {0};

	while (next_opt(a, opts, &name, &value))
		if (strcmp(name, "quiet") == 0)
			quiet = flag_value(name, value);
	if (a->i + 1 != a->argc)
		die(err_status(), "Error: pull needs exactly one image reference");
	ref = a->argv[a->i];
	if (file_exists("pull-fails")) {
		print_knob_file("pull-fails");
		return err_status();
	}
	if (!is_digest_ref(ref))
		die(err_status(), "Error: fake-runtime pulls only NAME@sha256:<64 hex>, not %s",
		    ref);
	line = find_image(ref);
	if (line == NULL) {
		path = state_path("images");
		fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (fd < 0)
			die(125, "fake-runtime: %s: %s", path, strerror(errno));
		pj_buf_adds(&b, ref);
		pj_buf_adds(&b, "\n");
		write_all(fd, b.p, b.len);
		close(fd);
		free(path);
		b.len = 0;
	}
	free(line);
	if (flavor == FLAVOR_DOCKER) {
		if (!quiet) {
			const char *at = strchr(ref, '@');
			pj_buf_addf(&b, "%.*s: Pulling from fake\nDigest: %s\n", (int)(at - ref),
			            ref, at + 1);
			pj_buf_addf(&b, "Status: Downloaded newer image for %s\n", ref);
		}
		pj_buf_addf(&b, "%s\n", ref);
	} else {
		if (!quiet)
			fprintf(stderr,
			        "Trying to pull %s...\nWriting manifest to image "
			        "destination\n",
			        ref);
		/* podman prints the image id. */
		char *id;
		image_hex(ref, &id);
		pj_buf_addf(&b, "%s\n", id);
		free(id);
	}
	out(&b);
	pj_buf_free(&b);
	return 0;
}

/* load -i ARCHIVE: an OCI archive as mcpgate pack writes it; its
 * index.json names the manifest digest and the image's NAME:TAG, and the
 * image is recorded as localhost/NAME@DIGEST (podman's name for a loaded
 * image without a registry). Nothing else of the archive is read. */
static int cmd_load(struct args *a)
{
	static const struct opt opts[] = {{"input", 'i', 1}, {"quiet", 'q', 0}, {NULL, 0, 0}};
	const char *name, *value, *input = NULL;
	char hdr[512], *index = NULL, *digest = NULL, *full = NULL, *colon, *path;
	long long size = 0;
	int fd;
	struct pj_span doc, manifests, k, m, v, ann;
	struct pj_iter it;
	struct pj_buf b = {0};

	while (next_opt(a, opts, &name, &value))
		if (strcmp(name, "input") == 0)
			input = value;
	if (input == NULL)
		die(err_status(), "Error: load needs -i ARCHIVE");
	if (file_exists("load-fails")) {
		print_knob_file("load-fails");
		return err_status();
	}
	fd = open(input, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die(err_status(), "Error: %s: %s", input, strerror(errno));
	while (index == NULL && read(fd, hdr, sizeof hdr) == (ssize_t)sizeof hdr &&
	       hdr[0] != '\0') {
		char octal[13];
		memcpy(octal, hdr + 124, 12);
		octal[12] = '\0';
		size = strtoll(octal, NULL, 8);
		if (size < 0 || size > (1LL << 40))
			die(err_status(), "Error: %s: a tar header of size %lld", input, size);
		if (strncmp(hdr, "index.json", 100) == 0 && size < (1 << 20)) {
			index = pj_xmalloc((size_t)size + 1);
			if (read(fd, index, (size_t)size) != (ssize_t)size)
				die(err_status(), "Error: %s: index.json is cut short", input);
			index[size] = '\0';
		} else if (lseek(fd, (off_t)((size + 511) / 512 * 512), SEEK_CUR) < 0) {
			die(err_status(), "Error: %s: %s", input, strerror(errno));
		}
	}
	close(fd);
	if (index == NULL || pj_parse(index, (size_t)size, &doc) < 0 ||
	    !pj_member(doc, "manifests", &manifests))
		die(err_status(), "Error: %s holds no OCI index.json", input);
	pj_iter_init(&it, manifests);
	if (!pj_iter_next(&it, &k, &m) || !pj_member(m, "digest", &v) ||
	    (digest = pj_string(v, NULL)) == NULL || !pj_member(m, "annotations", &ann) ||
	    !pj_member(ann, "io.containerd.image.name", &v) || (full = pj_string(v, NULL)) == NULL)
		die(err_status(), "Error: %s: its index.json names no image", input);
	colon = strrchr(full, ':');
	if (colon != NULL)
		*colon = '\0';
	pj_buf_addf(&b, "localhost/%s@%s", full, digest);
	if (!is_digest_ref(b.p))
		die(err_status(), "Error: %s: %s is no image reference", input, b.p);
	pj_buf_adds(&b, "\n");
	path = state_path("images");
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		die(125, "fake-runtime: %s: %s", path, strerror(errno));
	write_all(fd, b.p, b.len);
	close(fd);
	printf("Loaded image: %s", b.p);
	free(path);
	free(index);
	free(digest);
	free(full);
	pj_buf_free(&b);
	return 0;
}

/* ---- state records (containers/NAME, networks/NAME) --------------------- */

struct record {
	char *text;
	struct pj_span v;
	char *name;
	long long pid;
};

static void record_free(struct record *r)
{
	free(r->text);
	free(r->name);
	memset(r, 0, sizeof *r);
}

/* 0 and *r filled, or -1 when DIR/kind/name is missing or unreadable. */
static int record_load(const char *kind, const char *name, struct record *r)
{
	struct pj_buf path = {0};
	struct pj_span v;
	size_t n;

	memset(r, 0, sizeof *r);
	if (!valid_name(name))
		return -1;
	pj_buf_addf(&path, "%s/%s/%s", state_dir, kind, name);
	r->text = read_file(path.p, MAX_STATE_FILE, &n);
	pj_buf_free(&path);
	if (r->text == NULL || pj_parse(r->text, n, &r->v) < 0 || pj_kind(r->v) != PJ_OBJECT) {
		record_free(r);
		return -1;
	}
	if (pj_member(r->v, "name", &v))
		r->name = pj_string(v, NULL);
	if (r->name == NULL)
		r->name = pj_xstrdup(name);
	if (!pj_member(r->v, "pid", &v) || pj_integer(v, &r->pid) < 0)
		r->pid = 0;
	return 0;
}

static void record_unlink(const char *kind, const char *name)
{
	struct pj_buf path = {0};
	pj_buf_addf(&path, "%s/%s/%s", state_dir, kind, name);
	if (unlink(path.p) < 0 && errno != ENOENT)
		die(125, "fake-runtime: unlink %s: %s", path.p, strerror(errno));
	pj_buf_free(&path);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Names in DIR/kind, sorted, NULL-terminated; the caller frees each and the
 * array. */
static char **record_names(const char *kind)
{
	char *path = state_path(kind);
	DIR *d = opendir(path);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0;

	free(path);
	if (d != NULL) {
		while ((e = readdir(d)) != NULL) {
			if (e->d_name[0] == '.' || !valid_name(e->d_name))
				continue;
			names = pj_xrealloc(names, (n + 2) * sizeof *names);
			names[n++] = pj_xstrdup(e->d_name);
		}
		closedir(d);
	}
	names = pj_xrealloc(names, (n + 1) * sizeof *names);
	names[n] = NULL;
	qsort(names, n, sizeof *names, cmp_str);
	return names;
}

static void free_names(char **names)
{
	size_t i;
	for (i = 0; names[i] != NULL; i++)
		free(names[i]);
	free(names);
}

/* The label K's value in a record as a new string, or NULL when absent. */
static char *record_label(const struct record *r, const char *key)
{
	struct pj_span labels, v;
	if (!pj_member(r->v, "labels", &labels) || !pj_member(labels, key, &v))
		return NULL;
	return pj_string(v, NULL);
}

/* Whether pid is (still) a container's process: our probe, or our own
 * child before it executes the probe. Guards kill() against reused pids. */
static int pid_is_container(long long pid)
{
	char link[64], target[PATH_MAX];
	ssize_t n;
	size_t plen = strlen(probe_path), slen = strlen(self_exe);
	if (pid <= 0 || pid > INT_MAX)
		return 0;
	snprintf(link, sizeof link, "/proc/%lld/exe", pid);
	n = readlink(link, target, sizeof target - 1);
	if (n < 0)
		return 0; /* gone, or a zombie */
	target[n] = '\0';
	return (strncmp(target, probe_path, plen) == 0 &&
	        (target[plen] == '\0' || strcmp(target + plen, " (deleted)") == 0)) ||
	       (strncmp(target, self_exe, slen) == 0 &&
	        (target[slen] == '\0' || strcmp(target + slen, " (deleted)") == 0));
}

static int container_running(const struct record *r)
{
	return pid_is_container(r->pid);
}

/* ---- filters and formats ------------------------------------------------ */

/* "label=K=V", "label=K", "name=N" (substring), "status=running|exited"
 * (containers only); anything else ends the program. */
static int filter_match(const struct record *r, const char *filter, int is_container)
{
	if (strncmp(filter, "label=", 6) == 0) {
		const char *kv = filter + 6, *eq = strchr(kv, '=');
		struct pj_buf key = {0};
		char *val;
		int ok;
		pj_buf_add(&key, kv, eq != NULL ? (size_t)(eq - kv) : strlen(kv));
		val = record_label(r, key.p);
		ok = val != NULL && (eq == NULL || strcmp(val, eq + 1) == 0);
		free(val);
		pj_buf_free(&key);
		return ok;
	}
	if (strncmp(filter, "name=", 5) == 0)
		return strstr(r->name, filter + 5) != NULL;
	if (is_container && strncmp(filter, "status=", 7) == 0) {
		const char *state = container_running(r) ? "running" : "exited";
		return strcmp(state, filter + 7) == 0;
	}
	die(125, "fake-runtime: unsupported filter %s", filter);
}

static void put_labels_kv(struct pj_buf *b, const struct record *r)
{
	struct pj_span labels, k, v;
	struct pj_iter it;
	int first = 1;
	if (!pj_member(r->v, "labels", &labels))
		return;
	pj_iter_init(&it, labels);
	while (pj_iter_next(&it, &k, &v)) {
		char *ks = pj_string(k, NULL), *vs = pj_string(v, NULL);
		pj_buf_addf(b, "%s%s=%s", first ? "" : ",", ks, vs != NULL ? vs : "");
		first = 0;
		free(ks);
		free(vs);
	}
}

static void put_member_raw(struct pj_buf *b, const struct record *r, const char *key,
                           const char *otherwise)
{
	struct pj_span v;
	if (pj_member(r->v, key, &v))
		pj_buf_add(b, v.p, v.n);
	else
		pj_buf_adds(b, otherwise);
}

static void put_member_text(struct pj_buf *b, const struct record *r, const char *key)
{
	struct pj_span v;
	char *s;
	if (!pj_member(r->v, key, &v))
		return;
	if (pj_kind(v) == PJ_ARRAY) {
		struct pj_iter it;
		struct pj_span k, e;
		int first = 1;
		pj_iter_init(&it, v);
		while (pj_iter_next(&it, &k, &e)) {
			s = pj_string(e, NULL);
			pj_buf_addf(b, "%s%s", first ? "" : ",", s != NULL ? s : "");
			first = 0;
			free(s);
		}
		return;
	}
	s = pj_string(v, NULL);
	if (s != NULL)
		pj_buf_adds(b, s);
	else
		pj_buf_add(b, v.p, v.n);
	free(s);
}

/* A quoted Go template string ("K", no escapes) at *p; advances past it. */
static char *template_string(const char **p, const char *end)
{
	const char *s = *p, *q;
	if (s >= end || *s != '"')
		return NULL;
	q = memchr(s + 1, '"', (size_t)(end - s - 1));
	if (q == NULL || memchr(s + 1, '\\', (size_t)(q - s - 1)) != NULL)
		return NULL;
	*p = q + 1;
	{
		struct pj_buf b = {0};
		pj_buf_add(&b, s + 1, (size_t)(q - s - 1));
		return b.p;
	}
}

/* One {{ action }} of a --format template for record r. */
static void template_action(struct pj_buf *b, const struct record *r, const char *act, size_t n,
                            int is_container)
{
	const char *end = act + n, *p;
	struct pj_buf a = {0};

	while (act < end && *act == ' ')
		act++;
	while (end > act && end[-1] == ' ')
		end--;
	pj_buf_add(&a, act, (size_t)(end - act));

	if (strcmp(a.p, ".Names") == 0 || strcmp(a.p, ".Name") == 0 || strcmp(a.p, ".ID") == 0 ||
	    strcmp(a.p, ".Id") == 0) {
		pj_buf_adds(b, r->name);
	} else if (strcmp(a.p, ".Image") == 0) {
		put_member_text(b, r, "image");
	} else if (strcmp(a.p, ".Networks") == 0) {
		put_member_text(b, r, "networks");
	} else if (strcmp(a.p, ".Labels") == 0) {
		put_labels_kv(b, r);
	} else if (strcmp(a.p, "json .Labels") == 0) {
		put_member_raw(b, r, "labels", "{}");
	} else if (strcmp(a.p, "json .") == 0) {
		pj_buf_add(b, r->v.p, r->v.n);
	} else if (strcmp(a.p, ".Pid") == 0 && is_container) {
		pj_buf_addf(b, "%lld", container_running(r) ? r->pid : 0);
	} else if (strcmp(a.p, ".State") == 0 && is_container) {
		pj_buf_adds(b, container_running(r) ? "running" : "exited");
	} else if (strcmp(a.p, ".Internal") == 0 && !is_container) {
		put_member_raw(b, r, "internal", "false");
	} else if (strcmp(a.p, ".Driver") == 0 && !is_container) {
		pj_buf_adds(b, "bridge");
	} else if (strncmp(a.p, ".Label ", 7) == 0 || strncmp(a.p, "index .Labels ", 14) == 0) {
		char *key, *val;
		p = a.p + (a.p[0] == '.' ? 7 : 14);
		while (*p == ' ')
			p++;
		key = template_string(&p, a.p + a.len);
		if (key == NULL || *p != '\0')
			die(125, "fake-runtime: unsupported format action {{%s}}", a.p);
		val = record_label(r, key);
		if (val != NULL)
			pj_buf_adds(b, val);
		free(val);
		free(key);
	} else {
		die(125, "fake-runtime: unsupported format action {{%s}}", a.p);
	}
	pj_buf_free(&a);
}

/* Prints one line for record r with a Go-template-like format. */
static void template_line(struct pj_buf *b, const struct record *r, const char *format,
                          int is_container)
{
	const char *p = format;
	while (*p != '\0') {
		const char *open = strstr(p, "{{"), *close;
		if (open == NULL) {
			pj_buf_adds(b, p);
			break;
		}
		pj_buf_add(b, p, (size_t)(open - p));
		close = strstr(open + 2, "}}");
		if (close == NULL)
			die(125, "fake-runtime: unterminated {{ in format %s", format);
		template_action(b, r, open + 2, (size_t)(close - open - 2), is_container);
		p = close + 2;
	}
	pj_buf_adds(b, "\n");
}

/* ---- run ---------------------------------------------------------------- */

static volatile sig_atomic_t child_pid;

static void forward_signal(int sig)
{
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

struct strv {
	char **v;
	size_t n;
};

static void strv_push(struct strv *s, char *item)
{
	s->v = pj_xrealloc(s->v, (s->n + 2) * sizeof *s->v);
	s->v[s->n++] = item;
	s->v[s->n] = NULL;
}

static void strv_free(struct strv *s)
{
	size_t i;
	for (i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

static void put_container_record(struct pj_buf *b, const char *name, const struct strv *labels,
                                 long long pid, const char *image, const struct strv *networks)
{
	size_t i;
	pj_buf_adds(b, "{\"name\":");
	pj_put_cstring(b, name);
	pj_buf_adds(b, ",\"labels\":{");
	for (i = 0; i < labels->n; i++) {
		const char *kv = labels->v[i], *eq = strchr(kv, '=');
		if (i > 0)
			pj_buf_adds(b, ",");
		pj_put_string(b, kv, eq != NULL ? (size_t)(eq - kv) : strlen(kv));
		pj_buf_adds(b, ":");
		pj_put_cstring(b, eq != NULL ? eq + 1 : "");
	}
	pj_buf_addf(b, "},\"pid\":%lld,\"image\":", pid);
	pj_put_cstring(b, image);
	pj_buf_adds(b, ",\"networks\":[");
	for (i = 0; i < networks->n; i++) {
		if (i > 0)
			pj_buf_adds(b, ",");
		pj_put_cstring(b, networks->v[i]);
	}
	pj_buf_adds(b, "]}\n");
}

static const char *path_basename(const char *p)
{
	const char *s = strrchr(p, '/');
	return s != NULL ? s + 1 : p;
}

/* The egress sidecar, faked: one allowed record per -allow host, one refused
 * record, then it lives until its input (the lifeline) ends. */
/* --entrypoint=/mcpgate-launch: the launcher mounted there (its source on
 * the host) runs, and what it runs in the image, /mcpgate-probe, is the probe */
static void fake_launch(const struct strv *mounts, char **args, char **env)
    __attribute__((noreturn));
static void fake_launch(const struct strv *mounts, char **args, char **env)
{
	const char *source = NULL;
	size_t i, n = 0;
	char **v;
	for (i = 0; i < mounts->n && source == NULL; i++) {
		const char *m = mounts->v[i], *src = strstr(m, "source=");
		if (strstr(m, "target=/mcpgate-launch") != NULL && src != NULL) {
			char *copy = pj_xstrdup(src + 7), *comma = strchr(copy, ',');
			if (comma != NULL)
				*comma = '\0';
			source = copy;
		}
	}
	if (source == NULL) {
		fprintf(stderr, "Error: /mcpgate-launch: no such file or directory\n");
		_exit(127);
	}
	while (args[n] != NULL)
		n++;
	/* args are the probe's (the image's entrypoint, /mcpgate-probe, is left
	 * out of them): the launcher runs the probe with them */
	v = pj_xmalloc((n + 2) * sizeof(*v));
	v[0] = (char *)source;
	v[1] = probe_path;
	for (i = 1; i < n; i++)
		v[i + 1] = args[i];
	v[n + 1] = NULL;
	execve(source, v, env != NULL ? env : (char *[]){NULL});
	fprintf(stderr, "Error: exec %s: %s\n", source, strerror(errno));
	_exit(127);
}

static void fake_egress(char **args) __attribute__((noreturn));
static void fake_egress(char **args)
{
	struct pj_buf b = {0};
	for (size_t i = 1; args[i] != NULL; i++) {
		if ((strcmp(args[i], "-allow") != 0 && strcmp(args[i], "-allow-private") != 0) ||
		    args[i + 1] == NULL)
			continue;
		pj_buf_adds(&b, "{\"event\":\"attempt\",\"method\":\"CONNECT\",\"host\":");
		pj_put_cstring(&b, args[i + 1]);
		pj_buf_adds(&b, ",\"port\":443,\"address\":\"192.0.2.10\",\"allowed\":true,"
		                "\"reason\":\"listed\"}\n");
	}
	pj_buf_adds(&b,
	            "{\"event\":\"attempt\",\"method\":\"CONNECT\",\"host\":\"unlisted.example\","
	            "\"port\":443,\"address\":null,\"allowed\":false,\"reason\":\"not listed\"}\n");
	/* DIR/egress-records N: that many more refused attempts (the record cap) */
	char *path = state_path("egress-records");
	char *extra_text = read_file(path, 64, NULL);
	long long extra = 0;
	free(path);
	if (extra_text != NULL) {
		extra_text[strcspn(extra_text, "\n")] = '\0';
		if (parse_number(extra_text, 0, 100000, &extra) < 0)
			extra = 0;
		free(extra_text);
	}
	for (long long i = 0; i < extra; i++)
		pj_buf_addf(
		    &b,
		    "{\"event\":\"attempt\",\"method\":\"CONNECT\",\"host\":\"n%lld.example\","
		    "\"port\":443,\"address\":null,\"allowed\":false,\"reason\":\"not listed\"}\n",
		    i);
	write_all(1, b.p, b.len);
	pj_buf_free(&b);
	char buf[256];
	while (read(0, buf, sizeof buf) > 0)
		;
	_exit(0);
}

static int cmd_run(struct args *a)
{
	static const struct opt opts[] = {
	    {"rm", 0, 0},
	    {"interactive", 'i', 0},
	    {"tty", 't', 0},
	    {"read-only", 0, 0},
	    {"read-only-tmpfs", 0, 0},
	    {"init", 0, 0},
	    {"privileged", 0, 0},
	    {"http-proxy", 0, 0},
	    {"no-hosts", 0, 0},
	    {"no-healthcheck", 0, 0},
	    {"replace", 0, 0},
	    {"quiet", 'q', 0},
	    {"sig-proxy", 0, 0},
	    {"oom-kill-disable", 0, 0},
	    {"env-host", 0, 0},
	    {"detach", 'd', 0},
	    {"name", 0, 1},
	    {"label", 'l', 1},
	    {"env", 'e', 1},
	    {"network", 0, 1},
	    {"net", 0, 1},
	    {"mount", 0, 1},
	    {"volume", 'v', 1},
	    {"entrypoint", 0, 1},
	    {"cap-drop", 0, 1},
	    {"cap-add", 0, 1},
	    {"security-opt", 0, 1},
	    {"pull", 0, 1},
	    {"log-driver", 0, 1},
	    {"log-opt", 0, 1},
	    {"memory", 'm', 1},
	    {"memory-swap", 0, 1},
	    {"memory-reservation", 0, 1},
	    {"pids-limit", 0, 1},
	    {"cpus", 0, 1},
	    {"tmpfs", 0, 1},
	    {"user", 'u', 1},
	    {"userns", 0, 1},
	    {"ulimit", 0, 1},
	    {"runtime", 0, 1},
	    {"add-host", 0, 1},
	    {"dns", 0, 1},
	    {"dns-search", 0, 1},
	    {"dns-option", 0, 1},
	    {"hostname", 'h', 1},
	    {"workdir", 'w', 1},
	    {"stop-signal", 0, 1},
	    {"stop-timeout", 0, 1},
	    {"network-alias", 0, 1},
	    {"ip", 0, 1},
	    {"ip6", 0, 1},
	    {"shm-size", 0, 1},
	    {"sysctl", 0, 1},
	    {"umask", 0, 1},
	    {"annotation", 0, 1},
	    {"timeout", 0, 1},
	    {"platform", 0, 1},
	    {"group-add", 0, 1},
	    {"device", 0, 1},
	    {"cgroupns", 0, 1},
	    {"ipc", 0, 1},
	    {"pid", 0, 1},
	    {"uts", 0, 1},
	    {"init-path", 0, 1},
	    {"env-file", 0, 1},
	    {"label-file", 0, 1},
	    {NULL, 0, 0},
	};
	const char *name, *value, *image, *cname = NULL;
	struct strv labels = {0}, networks = {0}, env = {0}, argv = {0}, mounts = {0};
	struct pj_buf rec = {0}, gen = {0};
	int rm = 0, interactive = 0, go[2], status, code, i;
	const char *entrypoint = NULL;
	char *image_line;
	sigset_t block, old;
	struct sigaction sa;
	pid_t pid;

	while (next_opt(a, opts, &name, &value)) {
		if (strcmp(name, "rm") == 0) {
			rm = flag_value(name, value);
		} else if (strcmp(name, "interactive") == 0) {
			interactive = flag_value(name, value);
		} else if (strcmp(name, "detach") == 0) {
			if (flag_value(name, value))
				die(125, "fake-runtime: run --detach is not supported");
		} else if (strcmp(name, "env-file") == 0 || strcmp(name, "label-file") == 0) {
			die(125, "fake-runtime: run --%s is not supported", name);
		} else if (strcmp(name, "name") == 0) {
			cname = value;
		} else if (strcmp(name, "entrypoint") == 0) {
			entrypoint = value;
		} else if (strcmp(name, "label") == 0) {
			strv_push(&labels, pj_xstrdup(value));
		} else if (strcmp(name, "mount") == 0) {
			strv_push(&mounts, pj_xstrdup(value));
		} else if (strcmp(name, "network") == 0 || strcmp(name, "net") == 0) {
			strv_push(&networks, pj_xstrdup(value));
		} else if (strcmp(name, "env") == 0) {
			const char *eq = strchr(value, '=');
			if (eq != NULL) {
				strv_push(&env, pj_xstrdup(value));
			} else {
				/* --env NAME: the value from our environment, or
				 * nothing when we have none (as podman does). */
				const char *v = getenv(value);
				if (v != NULL) {
					struct pj_buf e = {0};
					pj_buf_addf(&e, "%s=%s", value, v);
					strv_push(&env, e.p);
				}
			}
		}
	}
	if (a->i >= a->argc)
		die(125, "Error: run needs an image");
	image = a->argv[a->i++];

	if (file_exists("run-fails")) {
		print_knob_file("run-fails");
		return 125;
	}
	/* the egress sidecar's run alone fails */
	if (entrypoint != NULL && strcmp(entrypoint, "/mcpgate-egress") == 0 &&
	    file_exists("sidecar-run-fails")) {
		print_knob_file("sidecar-run-fails");
		return 125;
	}
	image_line = find_image(image);
	if (image_line == NULL) {
		if (flavor == FLAVOR_DOCKER)
			die(125,
			    "Unable to find image '%s' locally\ndocker: Error response from "
			    "daemon: No such image: %s.",
			    image, image);
		die(125, "Error: %s: image not known", image);
	}
	free(image_line);
	if (cname == NULL) {
		pj_buf_addf(&gen, "fake-%ld", (long)getpid());
		cname = gen.p;
	}
	if (!valid_name(cname))
		die(125, "Error: invalid container name \"%s\"", cname);
	ensure_dir("containers");

	strv_push(&argv, pj_xstrdup("mcpgate-probe"));
	for (i = a->i; i < a->argc; i++) {
		if (i == a->i && strcmp(path_basename(a->argv[i]), "mcpgate-probe") == 0)
			continue;
		strv_push(&argv, pj_xstrdup(a->argv[i]));
	}
	if (access(probe_path, X_OK) < 0)
		die(127, "Error: %s: %s", probe_path, strerror(errno));

	/* The child waits on go[] until the record exists: rm finds every
	 * container it could see running. */
	if (pipe2(go, O_CLOEXEC) < 0)
		die(125, "fake-runtime: pipe: %s", strerror(errno));
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &old);
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die(125, "fake-runtime: fork: %s", strerror(errno));
	if (pid == 0) {
		char byte;
		ssize_t r;
		int sig;
		/* A container starts with default dispositions, whatever ours
		 * are (a shell's background job ignores SIGINT, we ignore SIGPIPE). */
		for (sig = 1; sig < NSIG; sig++)
			signal(sig, SIG_DFL);
		sigemptyset(&old);
		sigprocmask(SIG_SETMASK, &old, NULL);
		close(go[1]);
		if (!interactive) {
			int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
			if (null < 0 || dup2(null, 0) < 0)
				_exit(125);
		}
		do
			r = read(go[0], &byte, 1);
		while (r < 0 && errno == EINTR);
		if (r != 1)
			_exit(125);
		if (entrypoint != NULL && strcmp(entrypoint, "/mcpgate-egress") == 0)
			fake_egress(argv.v);
		if (entrypoint != NULL && strcmp(entrypoint, "/mcpgate-launch") == 0)
			fake_launch(&mounts, argv.v, env.v);
		execve(probe_path, argv.v, env.v != NULL ? env.v : (char *[]){NULL});
		fprintf(stderr, "Error: exec %s: %s\n", probe_path, strerror(errno));
		_exit(127);
	}
	close(go[0]);
	child_pid = pid;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = forward_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	put_container_record(&rec, cname, &labels, pid, image, &networks);
	if (write_state_file("containers", cname, rec.p, rec.len, 1) < 0) {
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		die(125, "Error: the container name \"%s\" is already in use", cname);
	}
	if (write(go[1], "g", 1) != 1)
		die(125, "fake-runtime: pipe: %s", strerror(errno));
	close(go[1]);
	sigprocmask(SIG_SETMASK, &old, NULL);

	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			die(125, "fake-runtime: waitpid: %s", strerror(errno));
	}
	child_pid = 0;
	code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

	/* Only our own record: rm may have removed it, and another run may
	 * have taken the name since. */
	{
		struct record r;
		if (record_load("containers", cname, &r) == 0 && r.pid == pid) {
			if (rm) {
				record_unlink("containers", cname);
			} else {
				rec.len = 0;
				put_container_record(&rec, cname, &labels, 0, image, &networks);
				write_state_file("containers", cname, rec.p, rec.len, 0);
			}
		}
		record_free(&r);
	}
	strv_free(&labels);
	strv_free(&networks);
	strv_free(&env);
	strv_free(&argv);
	pj_buf_free(&rec);
	pj_buf_free(&gen);
	return code;
}

/* ---- rm, stop, ps ------------------------------------------------------- */

/* Waits up to ms for pid to stop being a container process. */
static int wait_gone(long long pid, long long ms)
{
	long long waited;
	for (waited = 0; waited < ms; waited += 10) {
		if (!pid_is_container(pid))
			return 1;
		sleep_ms(10);
	}
	return !pid_is_container(pid);
}

static void no_such_container(const char *name)
{
	if (flavor == FLAVOR_DOCKER)
		fprintf(stderr, "Error: No such container: %s\n", name);
	else
		fprintf(stderr,
		        "Error: no container with name or ID \"%s\" found: no such container\n",
		        name);
}

/* One line "WHAT NAME..." appended to rm-events with one write(), so a test
 * sees when an rm began and when it was done, whatever else runs. */
static void rm_event(const char *what, struct args *a)
{
	struct pj_buf b = {0};
	int i, fd;
	char *path = state_path("rm-events");
	pj_buf_adds(&b, what);
	for (i = a->i; i < a->argc; i++)
		pj_buf_addf(&b, " %s", a->argv[i]);
	pj_buf_adds(&b, "\n");
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, b.p, b.len) != (ssize_t)b.len)
		die(125, "fake-runtime: %s: %s", path, strerror(errno));
	close(fd);
	free(path);
	pj_buf_free(&b);
}

/* The knob rm-delay-ms: wait that long before removing anything, or until
 * the file rm-release appears, whichever comes first. */
static void rm_delay(void)
{
	long long left = knob_ms("rm-delay-ms");
	while (left > 0 && !file_exists("rm-release")) {
		sleep_ms(left < 10 ? left : 10);
		left -= 10;
	}
}

static int cmd_rm(struct args *a)
{
	static const struct opt opts[] = {
	    {"force", 'f', 0}, {"ignore", 'i', 0}, {"volumes", 'v', 0},
	    {"time", 't', 1},  {"depend", 0, 0},   {NULL, 0, 0},
	};
	const char *name, *value;
	int force = 0, ignore = 0, rc = 0, i;
	struct pj_buf b = {0};

	while (next_opt(a, opts, &name, &value)) {
		if (strcmp(name, "force") == 0)
			force = flag_value(name, value);
		else if (strcmp(name, "ignore") == 0)
			ignore = flag_value(name, value);
	}
	rm_event("start", a);
	rm_delay();
	for (i = a->i; i < a->argc; i++) {
		struct record r;
		const char *cname = a->argv[i];
		if (record_load("containers", cname, &r) < 0) {
			no_such_container(cname);
			if (!force && !ignore)
				rc = 1;
			continue;
		}
		if (container_running(&r)) {
			if (!force) {
				fprintf(
				    stderr,
				    "Error: cannot remove container %s as it is running - running "
				    "or paused containers cannot be removed without force: "
				    "container state improper\n",
				    cname);
				rc = flavor == FLAVOR_DOCKER ? 1 : 2;
				record_free(&r);
				continue;
			}
			kill((pid_t)r.pid, SIGKILL);
			wait_gone(r.pid, 5000);
		}
		record_unlink("containers", cname);
		pj_buf_addf(&b, "%s\n", cname);
		record_free(&r);
	}
	out(&b);
	pj_buf_free(&b);
	rm_event("end", a);
	return rc;
}

static int cmd_stop(struct args *a)
{
	static const struct opt opts[] = {{"time", 't', 1}, {"ignore", 'i', 0}, {NULL, 0, 0}};
	const char *name, *value;
	long long seconds = 10;
	int rc = 0, i;
	struct pj_buf b = {0};

	while (next_opt(a, opts, &name, &value))
		if (strcmp(name, "time") == 0 && parse_number(value, 0, 3600, &seconds) < 0)
			die(125, "Error: --time: bad number %s", value);
	for (i = a->i; i < a->argc; i++) {
		struct record r;
		if (record_load("containers", a->argv[i], &r) < 0) {
			no_such_container(a->argv[i]);
			rc = err_status();
			continue;
		}
		if (container_running(&r)) {
			kill((pid_t)r.pid, SIGTERM);
			if (!wait_gone(r.pid, seconds * 1000)) {
				kill((pid_t)r.pid, SIGKILL);
				wait_gone(r.pid, 5000);
			}
		}
		pj_buf_addf(&b, "%s\n", a->argv[i]);
		record_free(&r);
	}
	out(&b);
	pj_buf_free(&b);
	return rc;
}

static void put_container_json(struct pj_buf *b, const struct record *r)
{
	int running = container_running(r);
	pj_buf_adds(b, "{\"Id\":");
	pj_put_cstring(b, r->name);
	pj_buf_adds(b, ",\"Names\":[");
	pj_put_cstring(b, r->name);
	pj_buf_adds(b, "],\"Image\":");
	put_member_raw(b, r, "image", "\"\"");
	pj_buf_adds(b, ",\"Labels\":");
	put_member_raw(b, r, "labels", "{}");
	pj_buf_adds(b, ",\"Networks\":");
	put_member_raw(b, r, "networks", "[]");
	pj_buf_addf(b, ",\"Pid\":%lld,\"State\":\"%s\"}", running ? r->pid : 0,
	            running ? "running" : "exited");
}

/* ps and network ls: the records of kind that pass every filter. */
static int list_records(struct args *a, const char *kind, int is_container)
{
	static const struct opt ps_opts[] = {
	    {"all", 'a', 0},   {"filter", 'f', 1},  {"format", 0, 1},
	    {"quiet", 'q', 0}, {"no-trunc", 0, 0},  {"noheading", 0, 0},
	    {"size", 's', 0},  {"namespace", 0, 0}, {NULL, 0, 0},
	};
	static const struct opt ls_opts[] = {
	    {"filter", 'f', 1}, {"format", 0, 1},    {"quiet", 'q', 0},
	    {"no-trunc", 0, 0}, {"noheading", 0, 0}, {NULL, 0, 0},
	};
	const char *name, *value, *format = "{{.Names}}";
	struct strv filters = {0};
	struct pj_buf b = {0};
	char **names;
	int all = !is_container, json = 0, first = 1;
	size_t i, f;

	while (next_opt(a, is_container ? ps_opts : ls_opts, &name, &value)) {
		if (strcmp(name, "all") == 0)
			all = flag_value(name, value);
		else if (strcmp(name, "filter") == 0)
			strv_push(&filters, pj_xstrdup(value));
		else if (strcmp(name, "format") == 0)
			format = value;
		else if (strcmp(name, "quiet") == 0 && flag_value(name, value))
			format = "{{.Names}}";
	}
	if (a->i != a->argc)
		die(125, "fake-runtime: unexpected argument %s", a->argv[a->i]);
	json = strcmp(format, "json") == 0;
	names = record_names(kind);
	if (json)
		pj_buf_adds(&b, "[");
	for (i = 0; names[i] != NULL; i++) {
		struct record r;
		int ok = 1;
		if (record_load(kind, names[i], &r) < 0)
			continue;
		if (is_container && !all && !container_running(&r))
			ok = 0;
		for (f = 0; ok && f < filters.n; f++)
			ok = filter_match(&r, filters.v[f], is_container);
		if (ok && json) {
			if (!first)
				pj_buf_adds(&b, ",");
			if (is_container)
				put_container_json(&b, &r);
			else
				pj_buf_add(&b, r.v.p, r.v.n);
			first = 0;
		} else if (ok) {
			template_line(&b, &r, format, is_container);
		}
		record_free(&r);
	}
	if (json)
		pj_buf_adds(&b, "]\n");
	out(&b);
	pj_buf_free(&b);
	free_names(names);
	strv_free(&filters);
	return 0;
}

/* ---- networks ----------------------------------------------------------- */

static void no_such_network(const char *name)
{
	if (flavor == FLAVOR_DOCKER)
		fprintf(stderr, "Error: No such network: %s\n", name);
	else
		fprintf(stderr,
		        "Error: unable to find network with name or ID %s: network not found\n",
		        name);
}

/* A stable octet (1-250) for a name: fake subnets and addresses */
static unsigned name_octet(const char *name)
{
	unsigned h = 5381;
	for (; *name != '\0'; name++)
		h = h * 33u + (unsigned char)*name;
	return 1 + h % 250;
}

static int cmd_network_create(struct args *a)
{
	static const struct opt opts[] = {
	    {"internal", 0, 0}, {"disable-dns", 0, 0}, {"label", 'l', 1},    {"driver", 'd', 1},
	    {"subnet", 0, 1},   {"gateway", 0, 1},     {"ip-range", 0, 1},   {"ipv6", 0, 0},
	    {"opt", 'o', 1},    {"ignore", 0, 0},      {"attachable", 0, 0}, {"dns", 0, 1},
	    {NULL, 0, 0},
	};
	const char *name, *value, *net;
	struct strv labels = {0};
	struct pj_buf rec = {0};
	int internal = 0, disable_dns = 0, ignore = 0;
	size_t i;

	while (next_opt(a, opts, &name, &value)) {
		if (strcmp(name, "internal") == 0)
			internal = flag_value(name, value);
		else if (strcmp(name, "disable-dns") == 0)
			disable_dns = flag_value(name, value);
		else if (strcmp(name, "ignore") == 0)
			ignore = flag_value(name, value);
		else if (strcmp(name, "label") == 0)
			strv_push(&labels, pj_xstrdup(value));
	}
	if (a->i + 1 != a->argc)
		die(err_status(), "Error: network create needs exactly one name");
	net = a->argv[a->i];
	if (!valid_name(net))
		die(err_status(), "Error: invalid network name \"%s\"", net);
	ensure_dir("networks");
	pj_buf_adds(&rec, "{\"name\":");
	pj_put_cstring(&rec, net);
	pj_buf_adds(&rec, ",\"id\":");
	pj_put_cstring(&rec, net);
	pj_buf_adds(&rec, ",\"driver\":\"bridge\",\"labels\":{");
	for (i = 0; i < labels.n; i++) {
		const char *kv = labels.v[i], *eq = strchr(kv, '=');
		if (i > 0)
			pj_buf_adds(&rec, ",");
		pj_put_string(&rec, kv, eq != NULL ? (size_t)(eq - kv) : strlen(kv));
		pj_buf_adds(&rec, ":");
		pj_put_cstring(&rec, eq != NULL ? eq + 1 : "");
	}
	pj_buf_addf(&rec,
	            "},\"internal\":%s,\"dns_enabled\":%s,"
	            "\"subnets\":[{\"subnet\":\"10.99.%u.0/24\",\"gateway\":\"10.99.%u.1\"}]}\n",
	            internal ? "true" : "false", disable_dns ? "false" : "true", name_octet(net),
	            name_octet(net));
	if (write_state_file("networks", net, rec.p, rec.len, 1) < 0 && !ignore) {
		if (flavor == FLAVOR_DOCKER)
			die(1, "Error response from daemon: network with name %s already exists",
			    net);
		die(125, "Error: network name %s already used: network already exists", net);
	}
	printf("%s\n", net);
	strv_free(&labels);
	pj_buf_free(&rec);
	return 0;
}

/* Whether a running container names network net in its --network values. */
static int network_in_use(const char *net)
{
	char **names = record_names("containers");
	size_t i;
	int used = 0;
	for (i = 0; names[i] != NULL && !used; i++) {
		struct record r;
		struct pj_span nets, k, v;
		struct pj_iter it;
		if (record_load("containers", names[i], &r) < 0)
			continue;
		if (container_running(&r) && pj_member(r.v, "networks", &nets)) {
			pj_iter_init(&it, nets);
			while (!used && pj_iter_next(&it, &k, &v))
				used = pj_string_eq(v, net);
		}
		record_free(&r);
	}
	free_names(names);
	return used;
}

static int cmd_network_rm(struct args *a)
{
	static const struct opt opts[] = {{"force", 'f', 0}, {"time", 't', 1}, {NULL, 0, 0}};
	const char *name, *value;
	int force = 0, rc = 0, i;
	struct pj_buf b = {0};

	while (next_opt(a, opts, &name, &value))
		if (strcmp(name, "force") == 0)
			force = flag_value(name, value);
	for (i = a->i; i < a->argc; i++) {
		struct record r;
		if (record_load("networks", a->argv[i], &r) < 0) {
			no_such_network(a->argv[i]);
			if (!force)
				rc = 1;
			continue;
		}
		record_free(&r);
		if (!force && network_in_use(a->argv[i])) {
			fprintf(stderr, "Error: %s: network is being used\n", a->argv[i]);
			rc = flavor == FLAVOR_DOCKER ? 1 : 2;
			continue;
		}
		record_unlink("networks", a->argv[i]);
		pj_buf_addf(&b, "%s\n", a->argv[i]);
	}
	out(&b);
	pj_buf_free(&b);
	return rc;
}

static int cmd_network_inspect(struct args *a)
{
	static const struct opt opts[] = {{"format", 'f', 1}, {NULL, 0, 0}};
	const char *name, *value, *format = NULL;
	struct pj_buf b = {0};
	int i;

	while (next_opt(a, opts, &name, &value))
		if (strcmp(name, "format") == 0)
			format = value;
	if (a->i >= a->argc)
		die(err_status(), "Error: network inspect needs a network");
	if (format == NULL)
		pj_buf_adds(&b, "[");
	for (i = a->i; i < a->argc; i++) {
		struct record r;
		if (record_load("networks", a->argv[i], &r) < 0) {
			no_such_network(a->argv[i]);
			pj_buf_free(&b);
			return err_status();
		}
		if (format != NULL) {
			template_line(&b, &r, format, 0);
		} else {
			if (i > a->i)
				pj_buf_adds(&b, ",");
			pj_buf_add(&b, r.v.p, r.v.n);
		}
		record_free(&r);
	}
	if (format == NULL)
		pj_buf_adds(&b, "]\n");
	out(&b);
	pj_buf_free(&b);
	return 0;
}

/* network connect NET NAME: remembered in connected/NAME, one network a line */
static int cmd_network_connect(struct args *a)
{
	struct record r;
	if (a->i + 2 != a->argc)
		die(err_status(), "Error: network connect needs a network and a container");
	const char *net = a->argv[a->i], *cname = a->argv[a->i + 1];
	if (record_load("networks", net, &r) < 0) {
		no_such_network(net);
		return err_status();
	}
	record_free(&r);
	if (record_load("containers", cname, &r) < 0)
		die(err_status(), "Error: no such container %s", cname);
	record_free(&r);
	ensure_dir("connected");
	char *path = state_path("connected");
	char *file = path_join(path, cname);
	int fd = open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		die(125, "fake-runtime: %s: %s", file, strerror(errno));
	write_all(fd, net, strlen(net));
	write_all(fd, "\n", 1);
	close(fd);
	free(file);
	free(path);
	return 0;
}

/* container inspect NAME: its networks, each with an address */
static int cmd_container_inspect(struct args *a)
{
	struct record r;
	struct pj_buf b = {0};
	if (a->i + 1 != a->argc)
		die(err_status(), "Error: container inspect needs one container");
	const char *cname = a->argv[a->i];
	if (record_load("containers", cname, &r) < 0)
		die(err_status(), "Error: no such container %s", cname);
	pj_buf_adds(&b, "[{\"Name\":");
	pj_put_cstring(&b, cname);
	pj_buf_adds(&b, ",\"NetworkSettings\":{\"Networks\":{");
	int first = 1;
	struct pj_span nets, k, v;
	struct pj_iter it;
	if (pj_member(r.v, "networks", &nets)) {
		pj_iter_init(&it, nets);
		while (pj_iter_next(&it, &k, &v)) {
			char *net = pj_string(v, NULL);
			if (net != NULL && strcmp(net, "none") != 0) {
				pj_buf_addf(&b, "%s", first ? "" : ",");
				pj_put_cstring(&b, net);
				pj_buf_addf(&b, ":{\"IPAddress\":\"10.99.%u.%u\"}", name_octet(net),
				            1 + name_octet(cname) % 250 + 1);
				first = 0;
			}
			free(net);
		}
	}
	char *path = state_path("connected");
	char *file = path_join(path, cname);
	size_t len = 0;
	char *text = read_file(file, 1 << 20, &len);
	for (char *line = text; line != NULL && *line != '\0';) {
		char *nl = strchr(line, '\n');
		if (nl != NULL)
			*nl = '\0';
		if (*line != '\0') {
			pj_buf_addf(&b, "%s", first ? "" : ",");
			pj_put_cstring(&b, line);
			pj_buf_addf(&b, ":{\"IPAddress\":\"10.99.%u.%u\"}", name_octet(line),
			            1 + name_octet(cname) % 250 + 1);
			first = 0;
		}
		line = nl != NULL ? nl + 1 : NULL;
	}
	free(text);
	free(file);
	free(path);
	pj_buf_adds(&b, "}}}]\n");
	out(&b);
	pj_buf_free(&b);
	record_free(&r);
	return 0;
}

static int cmd_network_exists(struct args *a)
{
	struct record r;
	int found;
	if (a->i + 1 != a->argc)
		die(125, "Error: network exists needs one network");
	found = record_load("networks", a->argv[a->i], &r) == 0;
	record_free(&r);
	return found ? 0 : 1;
}

/* ---- main --------------------------------------------------------------- */

static void find_state_dir(void)
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
	char *slash;
	if (n < 0)
		die(125, "fake-runtime: readlink /proc/self/exe: %s", strerror(errno));
	buf[n] = '\0';
	self_exe = pj_xstrdup(buf);
	slash = strrchr(buf, '/');
	if (slash == NULL)
		die(125, "fake-runtime: odd executable path %s", buf);
	*slash = '\0';
	state_dir = pj_xstrdup(buf[0] != '\0' ? buf : "/");
	probe_path = path_join(state_dir, "mcpgate-probe");
}

/* Global options before the command (podman --runtime runc ..., docker -H ...). */
static void skip_global_options(struct args *a)
{
	static const struct opt opts[] = {
	    {"runtime", 0, 1},
	    {"root", 0, 1},
	    {"runroot", 0, 1},
	    {"log-level", 0, 1},
	    {"cgroup-manager", 0, 1},
	    {"storage-driver", 0, 1},
	    {"url", 0, 1},
	    {"connection", 'c', 1},
	    {"host", 'H', 1},
	    {"context", 0, 1},
	    {"config", 0, 1},
	    {"tmpdir", 0, 1},
	    {"events-backend", 0, 1},
	    {"debug", 'D', 0},
	    {"remote", 'r', 0},
	    {"syslog", 0, 0},
	    {"version", 'v', 0},
	    {NULL, 0, 0},
	};
	const char *name, *value;
	while (next_opt(a, opts, &name, &value)) {
		if (strcmp(name, "version") == 0) {
			printf("fake-runtime 1\n");
			exit(0);
		}
	}
}

static int unsupported(const char *what)
{
	fprintf(stderr, "fake-runtime: unsupported command %s\n", what);
	return 125;
}

int main(int argc, char **argv)
{
	struct args a = {argc, argv, 1, NULL};
	const char *cmd, *sub;

	signal(SIGPIPE, SIG_IGN);
	prog = path_basename(argc > 0 ? argv[0] : "fake-runtime");
	if (strcmp(prog, "docker") == 0)
		flavor = FLAVOR_DOCKER;
	find_state_dir();
	log_invocation(argc, argv);

	skip_global_options(&a);
	if (a.i >= argc)
		return unsupported("(none)");
	cmd = argv[a.i++];
	if (strcmp(cmd, "container") == 0 || strcmp(cmd, "image") == 0 ||
	    strcmp(cmd, "network") == 0) {
		if (a.i >= argc)
			return unsupported(cmd);
		sub = argv[a.i++];
	} else {
		sub = NULL;
	}

	if (sub == NULL || strcmp(cmd, "container") == 0) {
		const char *verb = sub != NULL ? sub : cmd;
		if (strcmp(verb, "version") == 0 && sub == NULL) {
			printf("fake-runtime 1\n");
			return 0;
		}
		if (strcmp(verb, "info") == 0 && sub == NULL) {
			/* the knob "info" is the whole answer; "info-fails" fails it */
			if (file_exists("info-fails")) {
				print_knob_file("info-fails");
				return err_status();
			}
			char *p = state_path("info");
			size_t n = 0;
			char *text = read_file(p, MAX_STATE_FILE, &n);
			free(p);
			if (text != NULL) {
				fwrite(text, 1, n, stdout);
				free(text);
			} else if (flavor == FLAVOR_DOCKER) {
				printf("{\"MemoryLimit\":true,\"PidsLimit\":true,\"CgroupVersion\":"
				       "\"2\","
				       "\"SecurityOptions\":[\"name=seccomp,profile=builtin\"]}\n");
			} else {
				printf("{\"host\":{\"cgroupVersion\":\"v2\",\"cgroupControllers\":"
				       "[\"cpu\",\"io\",\"memory\",\"pids\"],\"security\":"
				       "{\"rootless\":false}}}\n");
			}
			return 0;
		}
		if (strcmp(verb, "pull") == 0 && sub == NULL)
			return cmd_pull(&a);
		if (strcmp(verb, "load") == 0 && sub == NULL)
			return cmd_load(&a);
		if (strcmp(verb, "run") == 0)
			return cmd_run(&a);
		if (strcmp(verb, "rm") == 0)
			return cmd_rm(&a);
		if (strcmp(verb, "stop") == 0)
			return cmd_stop(&a);
		if (strcmp(verb, "ps") == 0 || (strcmp(verb, "ls") == 0 && sub != NULL)) {
			ps_hold();
			return list_records(&a, "containers", 1);
		}
		if (strcmp(verb, "inspect") == 0 && sub != NULL)
			return cmd_container_inspect(&a);
		return unsupported(verb);
	}
	if (strcmp(cmd, "image") == 0) {
		if (strcmp(sub, "inspect") == 0)
			return cmd_image_inspect(&a);
		if (strcmp(sub, "exists") == 0)
			return cmd_image_exists(&a);
		if (strcmp(sub, "pull") == 0)
			return cmd_pull(&a);
		return unsupported(sub);
	}
	if (strcmp(sub, "create") == 0)
		return cmd_network_create(&a);
	if (strcmp(sub, "rm") == 0)
		return cmd_network_rm(&a);
	if (strcmp(sub, "ls") == 0)
		return list_records(&a, "networks", 0);
	if (strcmp(sub, "inspect") == 0)
		return cmd_network_inspect(&a);
	if (strcmp(sub, "connect") == 0)
		return cmd_network_connect(&a);
	if (strcmp(sub, "exists") == 0)
		return cmd_network_exists(&a);
	return unsupported(sub);
}
