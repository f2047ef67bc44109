/* The session's audit log: one JSON object per line in
 * STATE_DIR/sessions/SESSION.jsonl (0600, its folders 0700).
 *
 * Every record has "ts" (UTC, RFC 3339 with milliseconds), "session" and
 * "event" first, then the fields given. Records come from any thread; each
 * is written with one write() under a lock. A secret value never goes in. */
#ifndef MG_AUDIT_AUDIT_H
#define MG_AUDIT_AUDIT_H

#include <stdint.h>

#include "internal/base/err.h"
#include "internal/base/log.h"
#include "internal/json/json.h"

struct audit;

/* Create (exclusively) STATE_DIR/sessions/SESSION.jsonl. */
int audit_open(const char *state_dir, const char *session, struct audit **out, struct mg_err **err);

/* A log that writes to an fd the caller owns (tests) */
struct audit *audit_from_fd(int fd, const char *session);

/* The file's path (borrowed), or NULL for an fd log */
const char *audit_path(const struct audit *a);

/* Append one record, whole or not at all (a short write is undone).
 * Takes ownership of fields (an object, or NULL). -1 when it could not be
 * written (logged to stderr; audit_failing() says why): what depends on
 * its record, a call, does not go on (docs/2026-12-02-pressure.md). */
int audit_record(struct audit *a, const char *event, struct json_value *fields);
/* The last record could not be written; why gets the reason */
bool audit_failing(struct audit *a, char *why, size_t len);

/* What one peer (a server) may make the log write in a session, in records
 * and bytes of fields; past either the peer's records are counted, one
 * audit.capped record says so, and audit_close() writes audit.dropped */
#define AUDIT_SOURCE_RECORDS_MAX 20000
#define AUDIT_SOURCE_BYTES_MAX   (8u << 20)

/* A record that who (a server) caused by its own doing: counted against
 * who's cap */
void audit_record_by(struct audit *a, const char *who, const char *event,
                     struct json_value *fields);
void audit_set_source_cap(struct audit *a, uint64_t records, uint64_t bytes);
/* One audit.dropped record per peer whose records were dropped since the
 * last report (a session calls it before session.end; close does too) */
void audit_report_dropped(struct audit *a);

/* Every record passes through fn from now on (the session's redaction) */
void audit_set_filter(struct audit *a, mg_text_filter fn, void *data);

/* Told of every record written with audit_record() (or through
 * audit_record_by() under its cap), from the thread that wrote it, outside
 * the log's lock: event, and fields (an object, or NULL) lent for the call
 * and not yet redacted, so an observer keeps only names, outcomes and
 * numbers. A listener's metrics are one. */
typedef void (*audit_observer)(const char *event, const struct json_value *fields, void *data);
void audit_set_observer(struct audit *a, audit_observer fn, void *data);

void audit_close(struct audit *a);

#endif
