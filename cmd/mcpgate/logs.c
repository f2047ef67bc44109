/* mcpgate logs [NAME]: the audit logs read for a person (docs/audit-log.md):
 * the sessions of serve and those review, approve and update started, each
 * record one line (what happened, to which server, when), a server's
 * stderr below the record that holds it; filtered by server, session,
 * kind and time; --follow for what comes; --json gives the records as
 * they are, for machines. Every text of a record may be a server's words:
 * each goes through the one renderer (mg_shown). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd/mcpgate/commands.h"
#include "cmd/mcpgate/opts.h"
#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/num.h"
#include "internal/base/strv.h"
#include "internal/base/utf8.h"
#include "internal/base/xalloc.h"
#include "internal/config/config.h"
#include "internal/json/json.h"

/* The longest record read: a server's capped fields and its stderr fit */
#define LOG_LINE_MAX ((size_t)16 << 20)
/* Follow: how often the files are looked at when no event came */
#define FOLLOW_POLL_MS 1000

/* The kinds --kind takes, and the events of each */
static const struct {
	const char *kind;
	const char *const events[12];
	const char *what;
} kinds[] = {
    {"call", {"tool.call", "client.request", NULL}, "tool calls and relayed requests"},
    {"confirm", {"tool.confirm", "tool.unconfirmed", NULL}, "the person asked, or not asked"},
    {"egress",
     {"mcp.egress", "mcp.egress.close", "mcp.egress.limit", "mcp.egress.dropped", "egress.check",
      "egress.start", NULL},
     "what servers reached, or tried to"},
    {"stderr", {NULL}, "records that hold a server's standard error"},
    {"failure",
     {"server.unavailable", "server.withheld", "server.restart", "server.protocol_error",
      "session.config_error", "audit.capped", "audit.dropped", NULL},
     "start-up failures, exits, withheld manifests, protocol errors"},
    {"server", {NULL}, "every server.* record"},
    {"session", {NULL}, "session, client and configuration records"},
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

struct filter {
	const char *server;        /* NULL: any */
	const char *session;       /* a prefix of the id, NULL: any */
	struct strv kinds;         /* empty: any */
	char since[32], until[32]; /* RFC 3339 UTC, "" for none */
	bool json;
};

static bool has_stderr(const struct json_value *r)
{
	const char *e = json_get_string(r, "stderr");
	return e != NULL && e[0] != '\0';
}

static bool failure(const char *event, const struct json_value *r)
{
	if (strcmp(event, "server.exit") == 0) {
		int64_t status = 0;
		const struct json_value *forced = json_get(r, "forced");
		return json_number_int64(json_get(r, "status"), &status) == 0 && status != 0 &&
		       !(forced != NULL && forced->kind == JSON_BOOL && forced->u.boolean);
	}
	if (strcmp(event, "config.reload") == 0)
		return json_get(r, "error") != NULL;
	return false;
}

static bool of_kind(const char *kind, const char *event, const struct json_value *r)
{
	if (strchr(kind, '.') != NULL)
		return strcmp(kind, event) == 0; /* an event's own name */
	if (strcmp(kind, "stderr") == 0)
		return has_stderr(r);
	if (strcmp(kind, "server") == 0)
		return strncmp(event, "server.", 7) == 0;
	if (strcmp(kind, "session") == 0)
		return strncmp(event, "session.", 8) == 0 || strncmp(event, "client.", 7) == 0 ||
		       strcmp(event, "sweep") == 0 || strcmp(event, "config.reload") == 0;
	if (strcmp(kind, "failure") == 0 && failure(event, r))
		return true;
	for (size_t k = 0; k < NKINDS; k++)
		if (strcmp(kinds[k].kind, kind) == 0)
			for (size_t e = 0; kinds[k].events[e] != NULL; e++)
				if (strcmp(kinds[k].events[e], event) == 0)
					return true;
	return false;
}

static bool wanted(const struct filter *f, const struct json_value *r)
{
	const char *event = json_get_string(r, "event");
	const char *ts = json_get_string(r, "ts");
	if (event == NULL || ts == NULL)
		return false;
	if (f->since[0] != '\0' && strcmp(ts, f->since) < 0)
		return false;
	if (f->until[0] != '\0' && strcmp(ts, f->until) > 0)
		return false;
	if (f->server != NULL) {
		const char *s = json_get_string(r, "server");
		if (s == NULL || strcmp(s, f->server) != 0)
			return false;
	}
	if (f->kinds.n == 0)
		return true;
	for (size_t i = 0; i < f->kinds.n; i++)
		if (of_kind(f->kinds.v[i], event, r))
			return true;
	return false;
}

/* ---- showing a record ------------------------------------------------------- */

/* v as a person reads it: a string through the renderer, anything else as
 * compact JSON (rendered too: a key of a server's may be in it) */
static char *value_text(const struct json_value *v)
{
	if (v == NULL)
		return xstrdup("");
	if (v->kind == JSON_STRING)
		return mg_shown(v->u.str.ptr, v->u.str.len);
	struct mg_buf b = MG_BUF_INIT(1 << 20);
	char *text = json_generate(v, &b, NULL) == 0 ? mg_shown(b.data, b.len) : xstrdup("?");
	mg_buf_free(&b);
	return text;
}

static char *field(const struct json_value *r, const char *key)
{
	return value_text(json_get(r, key));
}

static bool flag(const struct json_value *r, const char *key)
{
	const struct json_value *v = json_get(r, key);
	return v != NULL && v->kind == JSON_BOOL && v->u.boolean;
}

/* The record's one line after its time and server */
static void describe(const char *event, const struct json_value *r, struct mg_buf *o)
{
	cleanup_free char *tool = field(r, "tool"), *outcome = field(r, "outcome");
	cleanup_free char *ms = field(r, "ms"), *reason = field(r, "reason");
	cleanup_free char *detail = field(r, "detail");
	if (strcmp(event, "tool.call") == 0) {
		mg_buf_printf(o, NULL, "call %s: %s, %s ms", tool, outcome, ms);
		if (detail[0] != '\0')
			mg_buf_printf(o, NULL, " (%s)", detail);
	} else if (strcmp(event, "client.request") == 0) {
		cleanup_free char *method = field(r, "method");
		mg_buf_printf(o, NULL, "%s: %s, %s ms", method, outcome, ms);
	} else if (strcmp(event, "tool.confirm") == 0) {
		cleanup_free char *action = field(r, "action");
		mg_buf_printf(o, NULL, "asked the person about %s: %s", tool, action);
	} else if (strcmp(event, "tool.unconfirmed") == 0) {
		mg_buf_printf(o, NULL, "called %s without asking (confirm = false)", tool);
	} else if (strcmp(event, "server.start") == 0) {
		cleanup_free char *c = field(r, "container"), *u = field(r, "user");
		mg_buf_printf(o, NULL, "started: container %s, as %s", c, u);
	} else if (strcmp(event, "server.ready") == 0) {
		const struct json_value *info = json_get(r, "serverInfo");
		cleanup_free char *n = field(info, "name"), *v = field(info, "version");
		cleanup_free char *pv = field(r, "protocolVersion"), *t = field(r, "tools");
		cleanup_free char *sm = field(r, "start_ms");
		mg_buf_printf(o, NULL, "ready in %s ms: %s %s, MCP %s, %s tools", sm, n, v, pv, t);
	} else if (strcmp(event, "server.unavailable") == 0) {
		mg_buf_printf(o, NULL, "unavailable: %s", reason);
	} else if (strcmp(event, "server.exit") == 0) {
		cleanup_free char *st = field(r, "status");
		mg_buf_printf(o, NULL, "exited, status %s%s%s%s", st,
		              flag(r, "forced") ? " (removed by mcpgate)" : "",
		              reason[0] != '\0' ? ": " : "", reason);
	} else if (strcmp(event, "server.withheld") == 0) {
		cleanup_free char *a = field(r, "approved"), *l = field(r, "live");
		mg_buf_printf(o, NULL, "withheld (%s): approved %s, live %s", reason, a, l);
	} else if (strcmp(event, "server.restart") == 0) {
		cleanup_free char *a = field(r, "attempt");
		mg_buf_printf(o, NULL,
		              flag(r, "given_up") ? "given up after %s starts"
		                                  : "starts again (attempt %s)",
		              a);
	} else if (strcmp(event, "mcp.egress") == 0) {
		cleanup_free char *m = field(r, "method"), *h = field(r, "host"),
		                  *p = field(r, "port");
		cleanup_free char *a = field(r, "address");
		mg_buf_printf(o, NULL, "egress %s %s:%s%s%s%s: %s%s%s", m, h, p, a[0] ? " (" : "",
		              a, a[0] ? ")" : "", flag(r, "allowed") ? "allowed" : "refused",
		              reason[0] != '\0' ? ", " : "", reason);
	} else if (strcmp(event, "mcp.egress.close") == 0) {
		cleanup_free char *h = field(r, "host"), *p = field(r, "port");
		cleanup_free char *up = field(r, "bytes_up"), *down = field(r, "bytes_down");
		mg_buf_printf(o, NULL, "egress %s:%s closed: %s bytes up, %s down, %s ms", h, p, up,
		              down, ms);
	} else if (strcmp(event, "session.start") == 0) {
		cleanup_free char *w = field(r, "workspace"), *rt = field(r, "runtime");
		cleanup_free char *sv = field(r, "servers");
		mg_buf_printf(o, NULL, "session began: workspace %s, runtime %s, servers %s", w, rt,
		              sv);
	} else if (strcmp(event, "server.registered") == 0) {
		cleanup_free char *l = field(r, "listed"), *on = field(r, "offered");
		cleanup_free char *from = field(r, "from");
		mg_buf_printf(o, NULL, "offers %s of its %s tools (from its %s)", on, l, from);
	} else if (strcmp(event, "session.end") == 0) {
		mg_buf_printf(o, NULL, "session ended: %s", reason);
	} else {
		/* any other record: its event and its fields */
		mg_buf_puts(o, event, NULL);
		for (size_t i = 0; r->kind == JSON_OBJECT && i < r->u.obj.len; i++) {
			const struct json_member *m = &r->u.obj.items[i];
			if (strcmp(m->key, "ts") == 0 || strcmp(m->key, "session") == 0 ||
			    strcmp(m->key, "event") == 0 || strcmp(m->key, "server") == 0 ||
			    strcmp(m->key, "stderr") == 0)
				continue;
			cleanup_free char *k = mg_shown(m->key, m->keylen);
			cleanup_free char *v = value_text(m->value);
			mg_buf_printf(o, NULL, " %s=%s", k, v);
		}
	}
}

static void show(const struct json_value *r, bool with_date, bool review)
{
	const char *event = json_get_string(r, "event");
	const char *ts = json_get_string(r, "ts");
	cleanup_free char *server = field(r, "server");
	cleanup_free char *session = field(r, "session");
	struct mg_buf line = MG_BUF_INIT(LOG_LINE_MAX);
	describe(event, r, &line);
	/* 2026-12-02T10:11:12.345Z: the time, and the date when asked */
	size_t tlen = strlen(ts);
	const char *time_part = tlen > 11 ? ts + 11 : ts;
	printf("%.*s%s%.12s  %s%s  %-14s %s\n", with_date ? 10 : 0, ts, with_date ? " " : "",
	       time_part, session, review ? " (review)" : "", server[0] != '\0' ? server : "-",
	       mg_buf_str(&line));
	mg_buf_free(&line);
	const char *err = json_get_string(r, "stderr");
	if (err != NULL && err[0] != '\0') {
		printf("    its stderr:\n");
		for (const char *p = err; *p != '\0';) {
			size_t n = strcspn(p, "\n");
			cleanup_free char *l = mg_shown(p, n);
			printf("    | %s\n", l);
			p += n + (p[n] == '\n');
		}
	}
}

/* ---- reading the files --------------------------------------------------------- */

struct log_file {
	char *path;
	char id[32];
	bool review;
	char first_ts[32];
	long offset; /* what was read of it */
};

struct log_files {
	struct log_file *v;
	size_t n;
};

static void files_free(struct log_files *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].path);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static bool known(const struct log_files *l, const char *path)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i].path, path) == 0)
			return true;
	return false;
}

/* The first record's ts, for the order of sessions */
static void first_ts(struct log_file *f)
{
	FILE *in = fopen(f->path, "re");
	char buf[256];
	f->first_ts[0] = '\0';
	if (in != NULL && fgets(buf, sizeof(buf), in) != NULL) {
		const char *ts = strstr(buf, "\"ts\":\"");
		if (ts != NULL)
			snprintf(f->first_ts, sizeof(f->first_ts), "%.24s", ts + 6);
	}
	if (in != NULL)
		fclose(in);
}

/* The log files of dir that the filter may want (by id and time) */
static void find_files(const char *dir, bool review, const struct filter *flt,
                       struct log_files *out)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL) {
		size_t n = strlen(e->d_name);
		if (n < 7 || strcmp(e->d_name + n - 6, ".jsonl") != 0 || n - 6 >= 32)
			continue;
		if (flt->session != NULL &&
		    strncmp(e->d_name, flt->session, strlen(flt->session)) != 0)
			continue;
		cleanup_free char *path = xasprintf("%s/%s", dir, e->d_name);
		if (known(out, path))
			continue;
		out->v = xreallocarray(out->v, out->n + 1, sizeof(*out->v));
		struct log_file *f = &out->v[out->n++];
		memset(f, 0, sizeof(*f));
		f->path = steal_pointer(&path);
		snprintf(f->id, sizeof(f->id), "%.*s", (int)(n - 6), e->d_name);
		f->review = review;
		first_ts(f);
	}
	if (d != NULL)
		closedir(d);
}

static int by_start(const void *a, const void *b)
{
	const struct log_file *x = a, *y = b;
	return strcmp(x->first_ts, y->first_ts);
}

/* The records of f past its offset, complete lines only; each wanted one
 * shown (json: as it is). Returns how many were shown. */
static size_t read_file_from(struct log_file *f, const struct filter *flt, bool header)
{
	FILE *in = fopen(f->path, "re");
	if (in == NULL || fseek(in, f->offset, SEEK_SET) < 0) {
		if (in != NULL)
			fclose(in);
		return 0;
	}
	char *line = NULL;
	size_t cap = 0, shown = 0;
	ssize_t n;
	bool said_header = !header;
	while ((n = getline(&line, &cap, in)) > 0) {
		if (line[n - 1] != '\n')
			break; /* a record being written: read it whole next time */
		f->offset += n;
		if ((size_t)n > LOG_LINE_MAX)
			continue;
		struct json_value *r = NULL;
		if (json_parse(line, (size_t)n, NULL, &r, NULL) < 0)
			continue;
		if (wanted(flt, r)) {
			if (flt->json) {
				fwrite(line, 1, (size_t)n, stdout);
			} else {
				if (!said_header) {
					printf("-- session %s%s, %.10s\n", f->id,
					       f->review ? " (review, approve or update)" : "",
					       json_get_string(r, "ts"));
					said_header = true;
				}
				show(r, !header, f->review);
			}
			shown++;
		}
		json_free(r);
	}
	free(line);
	fclose(in);
	fflush(stdout);
	return shown;
}

/* ---- time ------------------------------------------------------------------------ */

/* "30s", "10m", "2h", "3d" ago, or a date "2026-12-02", or a time
 * "2026-12-02T10:00:00" (UTC), into an RFC 3339 text records compare with */
static int parse_time(const char *text, char out[32], struct mg_err **err)
{
	size_t n = strlen(text);
	static const char units[] = "smhd";
	static const int64_t seconds[] = {1, 60, 3600, 86400};
	const char *u = n > 1 ? strchr(units, text[n - 1]) : NULL;
	if (u != NULL && *u != '\0') {
		uint64_t count = 0;
		cleanup_free char *digits = xstrndup(text, n - 1);
		if (mg_parse_u64(digits, 0, 100000, "the time", &count, err) < 0)
			return -1;
		time_t at = time(NULL) - (time_t)(count * (uint64_t)seconds[u - units]);
		struct tm tm;
		gmtime_r(&at, &tm);
		strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
		return 0;
	}
	struct tm tm = {0};
	const char *end = strptime(text, "%Y-%m-%d", &tm);
	if (end != NULL && *end == 'T')
		end = strptime(end + 1, "%H:%M:%S", &tm);
	if (end == NULL || *end != '\0' || n >= 32)
		return mg_err_set(err,
		                  "\"%s\" is not a time: give 30s, 10m, 2h or 3d ago, or "
		                  "2026-12-02 or 2026-12-02T10:00:00 (UTC)",
		                  text);
	snprintf(out, 32, "%s", text);
	return 0;
}

/* ---- follow ------------------------------------------------------------------------ */

static int follow(struct log_files *files, const char *dirs[2], const struct filter *flt,
                  struct mg_err **err)
{
	int fd = inotify_init1(IN_CLOEXEC);
	if (fd < 0)
		return mg_err_sys(err, errno, "inotify");
	for (size_t i = 0; i < 2; i++)
		inotify_add_watch(fd, dirs[i], IN_CREATE | IN_MODIFY | IN_MOVED_TO);
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	for (;;) {
		struct pollfd p = {fd, POLLIN, 0};
		int r = poll(&p, 1, FOLLOW_POLL_MS);
		if (r < 0 && errno != EINTR)
			break;
		if (r > 0 && read(fd, buf, sizeof(buf)) < 0 && errno != EINTR)
			break;
		for (size_t i = 0; i < 2; i++)
			find_files(dirs[i], i == 1, flt, files);
		for (size_t i = 0; i < files->n; i++)
			read_file_from(&files->v[i], flt, false);
		if (ferror(stdout))
			break; /* the reader went away */
	}
	close(fd);
	return 0;
}

int cmd_logs(int argc, char **argv, struct mg_err **err)
{
	const struct command *self = command_find("logs");
	struct filter flt = {.kinds = STRV_INIT};
	const char *since = NULL, *until = NULL;
	bool do_follow = false;
	int status = EXIT_USAGE;
	cleanup_free char *state = NULL, *sessions = NULL, *reviews = NULL;
	struct log_files files = {0};
	for (int i = 1; i < argc; i++) {
		const char *v = NULL;
		int r = opt_value(argc, argv, &i, "session", &flt.session);
		if (r == 0)
			r = opt_value(argc, argv, &i, "since", &since);
		if (r == 0)
			r = opt_value(argc, argv, &i, "until", &until);
		if (r == 0 && (r = opt_value(argc, argv, &i, "kind", &v)) > 0)
			for (const char *q = v; *q != '\0';) {
				size_t len = strcspn(q, ",");
				if (len > 0)
					strv_push_owned(&flt.kinds, xstrndup(q, len));
				q += len + (q[len] == ',');
			}
		if (r < 0)
			goto out;
		if (r > 0 || opt_flag(argv, i, "follow", &do_follow) ||
		    opt_flag(argv, i, "json", &flt.json))
			continue;
		if (usage_server_name(self, argv[i], &flt.server) < 0)
			goto out;
	}
	for (size_t i = 0; i < flt.kinds.n; i++) {
		bool ok = strchr(flt.kinds.v[i], '.') != NULL;
		for (size_t k = 0; !ok && k < NKINDS; k++)
			ok = strcmp(kinds[k].kind, flt.kinds.v[i]) == 0;
		if (!ok) {
			usage_error(
			    self,
			    "--kind %s: a kind is call, confirm, egress, stderr, failure, server "
			    "or session, or an event's name (server.exit)",
			    flt.kinds.v[i]);
			goto out;
		}
	}
	if ((since != NULL && parse_time(since, flt.since, err) < 0) ||
	    (until != NULL && parse_time(until, flt.until, err) < 0)) {
		status = EXIT_FAIL;
		goto out;
	}
	status = EXIT_FAIL;
	if (cfg_default_state_dir(&state, err) < 0)
		goto out;
	sessions = xasprintf("%s/sessions", state);
	reviews = xasprintf("%s/reviews/sessions", state);
	const char *dirs[2] = {sessions, reviews};
	find_files(sessions, false, &flt, &files);
	find_files(reviews, true, &flt, &files);
	if (files.n > 1)
		qsort(files.v, files.n, sizeof(*files.v), by_start);
	size_t shown = 0;
	for (size_t i = 0; i < files.n; i++)
		shown += read_file_from(&files.v[i], &flt, true);
	if (shown == 0 && !do_follow && !flt.json)
		fprintf(stderr, "mcpgate logs: no record%s in %s or %s\n",
		        flt.server != NULL || flt.session != NULL || flt.kinds.n > 0 ||
		                since != NULL || until != NULL
		            ? " matches"
		            : "",
		        sessions, reviews);
	status = do_follow && follow(&files, dirs, &flt, err) < 0 ? EXIT_FAIL : EXIT_OK;
out:
	files_free(&files);
	strv_free(&flt.kinds);
	return status;
}
