#define _GNU_SOURCE
#include "internal/audit/audit.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/log.h"
#include "internal/base/xalloc.h"

/* A record larger than this is cut (its fields replaced by a note) */
#define AUDIT_RECORD_MAX (1u << 20)

struct audit {
	int fd;
	bool owns_fd;
	bool warned;
	/* the last record could not be written (why in error); a torn one
	 * could not be undone, so the next begins on a line of its own */
	bool failing;
	bool torn;
	char error[256];
	char *path;
	char *session;
	pthread_mutex_t lock;
	mg_text_filter filter; /* every line passes it before it is written */
	void *filter_data;
	audit_observer observer; /* told of every record */
	void *observer_data;
	struct source *sources; /* what each peer made this log write so far */
	size_t nsources;
	uint64_t max_records, max_bytes;
};

struct source {
	char *who;
	uint64_t records, bytes, dropped;
	bool capped;
};

void audit_set_source_cap(struct audit *a, uint64_t records, uint64_t bytes)
{
	a->max_records = records;
	a->max_bytes = bytes;
}

void audit_set_filter(struct audit *a, mg_text_filter fn, void *data)
{
	if (a == NULL)
		return;
	pthread_mutex_lock(&a->lock);
	a->filter = fn;
	a->filter_data = data;
	pthread_mutex_unlock(&a->lock);
}

void audit_set_observer(struct audit *a, audit_observer fn, void *data)
{
	if (a == NULL)
		return;
	pthread_mutex_lock(&a->lock);
	a->observer = fn;
	a->observer_data = data;
	pthread_mutex_unlock(&a->lock);
}

int audit_open(const char *state_dir, const char *session, struct audit **out, struct mg_err **err)
{
	cleanup_free char *dir = xasprintf("%s/sessions", state_dir);
	if (mg_mkdir_p(dir, 0700, err) < 0)
		return mg_err_wrap(err, "audit log");
	char *path = xasprintf("%s/%s.jsonl", dir, session);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0) {
		int e = errno;
		mg_err_sys(err, e, "creating audit log %s", path);
		free(path);
		return -1;
	}
	struct audit *a = audit_from_fd(fd, session);
	a->owns_fd = true;
	a->path = path;
	*out = a;
	return 0;
}

struct audit *audit_from_fd(int fd, const char *session)
{
	struct audit *a = xcalloc(1, sizeof(*a));
	a->max_records = AUDIT_SOURCE_RECORDS_MAX;
	a->max_bytes = AUDIT_SOURCE_BYTES_MAX;
	a->fd = fd;
	a->session = xstrdup(session);
	pthread_mutex_init(&a->lock, NULL);
	return a;
}

const char *audit_path(const struct audit *a)
{
	return a->path;
}

static void timestamp(char *buf, size_t len)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	char base[32];
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03ldZ", base, ts.tv_nsec / 1000000);
}

static int build_line(struct audit *a, const char *event, const struct json_value *fields,
                      struct mg_buf *line, struct mg_err **err)
{
	char ts[48];
	timestamp(ts, sizeof(ts));
	if (mg_buf_puts(line, "{\"ts\":", err) < 0 || json_quote(ts, strlen(ts), line, err) < 0 ||
	    mg_buf_puts(line, ",\"session\":", err) < 0 ||
	    json_quote(a->session, strlen(a->session), line, err) < 0 ||
	    mg_buf_puts(line, ",\"event\":", err) < 0 ||
	    json_quote(event, strlen(event), line, err) < 0)
		return -1;
	if (fields != NULL && fields->kind == JSON_OBJECT) {
		for (size_t i = 0; i < fields->u.obj.len; i++) {
			const struct json_member *m = &fields->u.obj.items[i];
			if (mg_buf_putc(line, ',', err) < 0 ||
			    json_quote(m->key, m->keylen, line, err) < 0 ||
			    mg_buf_putc(line, ':', err) < 0 ||
			    json_generate(m->value, line, err) < 0)
				return -1;
		}
	}
	return mg_buf_puts(line, "}\n", err);
}

/* One record, whole or not at all: a write that stops short (a full disk,
 * a file size limit) is undone by cutting the file back to where it was, so
 * no torn line is left to merge with the next record; when even that fails,
 * the next record starts on a line of its own. Under the lock. */
static int write_whole(struct audit *a, struct mg_buf *line)
{
	struct stat st;
	off_t before = fstat(a->fd, &st) == 0 && S_ISREG(st.st_mode) ? st.st_size : -1;
	if (a->torn && before >= 0) {
		ssize_t w = write(a->fd, "\n", 1);
		if (w == 1) {
			a->torn = false;
			before++;
		}
	}
	size_t off = 0;
	int e = 0;
	while (off < line->len) {
		ssize_t w = write(a->fd, line->data + off, line->len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			e = w < 0 ? errno : ENOSPC;
			break;
		}
		off += (size_t)w;
	}
	if (off == line->len && !a->torn) {
		if (a->failing)
			mg_info("audit log %s: written again", a->path != NULL ? a->path : "(fd)");
		a->failing = false;
		return 0;
	}
	if (off > 0 && (before < 0 || ftruncate(a->fd, before) < 0))
		a->torn = true;
	snprintf(a->error, sizeof(a->error), "%s", e != 0 ? strerror(e) : "a torn record");
	if (!a->failing || !a->warned)
		mg_warn("audit log %s: %s", a->path != NULL ? a->path : "(fd)", a->error);
	a->warned = true;
	a->failing = true;
	return -1;
}

int audit_record(struct audit *a, const char *event, struct json_value *fields)
{
	if (a == NULL) {
		json_free(fields);
		return 0;
	}
	struct mg_buf line = MG_BUF_INIT(AUDIT_RECORD_MAX);
	struct mg_err *err = NULL;
	if (build_line(a, event, fields, &line, &err) < 0) {
		mg_buf_reset(&line);
		struct json_value *note = json_new_object();
		json_object_set(note, "note", json_new_string(mg_err_msg(err)));
		mg_err_clear(&err);
		if (build_line(a, event, note, &line, &err) < 0)
			mg_err_clear(&err);
		json_free(note);
	}
	pthread_mutex_lock(&a->lock);
	audit_observer observer = a->observer;
	void *observer_data = a->observer_data;
	pthread_mutex_unlock(&a->lock);
	if (observer != NULL)
		observer(event, fields, observer_data);
	json_free(fields);
	pthread_mutex_lock(&a->lock);
	size_t clean_len = 0;
	char *clean =
	    a->filter != NULL ? a->filter(line.data, line.len, &clean_len, a->filter_data) : NULL;
	if (clean != NULL) {
		mg_buf_reset(&line);
		mg_buf_append(&line, clean, clean_len, NULL);
		free(clean);
	}
	int r = write_whole(a, &line);
	pthread_mutex_unlock(&a->lock);
	mg_buf_free(&line);
	return r;
}

static struct source *source_of(struct audit *a, const char *who)
{
	for (size_t i = 0; i < a->nsources; i++)
		if (strcmp(a->sources[i].who, who) == 0)
			return &a->sources[i];
	a->sources = xreallocarray(a->sources, a->nsources + 1, sizeof(*a->sources));
	struct source *s = &a->sources[a->nsources++];
	memset(s, 0, sizeof(*s));
	s->who = xstrdup(who);
	return s;
}

bool audit_failing(struct audit *a, char *why, size_t len)
{
	if (a == NULL)
		return false;
	pthread_mutex_lock(&a->lock);
	bool failing = a->failing;
	if (why != NULL && len > 0)
		snprintf(why, len, "%s", a->error);
	pthread_mutex_unlock(&a->lock);
	return failing;
}

void audit_record_by(struct audit *a, const char *who, const char *event, struct json_value *fields)
{
	if (a == NULL) {
		json_free(fields);
		return;
	}
	struct mg_buf probe = MG_BUF_INIT(AUDIT_RECORD_MAX);
	size_t size = json_generate(fields, &probe, NULL) == 0 ? probe.len : AUDIT_RECORD_MAX;
	mg_buf_free(&probe);
	pthread_mutex_lock(&a->lock);
	struct source *s = source_of(a, who);
	bool over = s->records + 1 > a->max_records || s->bytes + size > a->max_bytes;
	bool first = over && !s->capped;
	if (over) {
		s->capped = true;
		s->dropped++;
	} else {
		s->records++;
		s->bytes += size;
	}
	uint64_t records = s->records, bytes = s->bytes;
	pthread_mutex_unlock(&a->lock);
	if (!over) {
		audit_record(a, event, fields);
		return;
	}
	json_free(fields);
	if (first) {
		struct json_value *f = json_new_object();
		json_object_set(f, "server", json_new_string(who));
		json_object_set(f, "records", json_new_int((int64_t)records));
		json_object_set(f, "bytes", json_new_int((int64_t)bytes));
		json_object_set(f, "note",
		                json_new_string("what this server makes mcpgate write "
		                                "reached its cap: further records of it "
		                                "are counted, not written"));
		audit_record(a, "audit.capped", f);
	}
}

void audit_report_dropped(struct audit *a)
{
	if (a == NULL)
		return;
	for (size_t i = 0; i < a->nsources; i++) {
		struct source *s = &a->sources[i];
		pthread_mutex_lock(&a->lock);
		uint64_t dropped = s->dropped;
		s->dropped = 0;
		pthread_mutex_unlock(&a->lock);
		if (dropped > 0) {
			struct json_value *f = json_new_object();
			json_object_set(f, "server", json_new_string(s->who));
			json_object_set(f, "dropped", json_new_int((int64_t)dropped));
			audit_record(a, "audit.dropped", f);
		}
	}
}

void audit_close(struct audit *a)
{
	if (a == NULL)
		return;
	audit_report_dropped(a);
	for (size_t i = 0; i < a->nsources; i++)
		free(a->sources[i].who);
	free(a->sources);
	if (a->owns_fd && a->fd >= 0)
		close(a->fd);
	pthread_mutex_destroy(&a->lock);
	free(a->path);
	free(a->session);
	free(a);
}
