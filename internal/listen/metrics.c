/* The listener's counters, and /metrics in Prometheus' text format (0.0.4).
 *
 * What the sessions did comes from their audit records (session_options'
 * on_record), on whichever thread wrote them, so every count is under one
 * lock. Label values are names of [A-Za-z0-9_.-] (1-128) or "(other)", and
 * each family holds at most LST_SERIES_MAX series: what a client or server
 * names cannot make the page grow without end. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/base/xalloc.h"
#include "internal/listen/listen-internal.h"

#define LST_SERIES_MAX  2000
#define LST_SERVERS_MAX 256 /* per session, for the state gauge */

struct series {
	char *labels; /* rendered: name="value",... */
	uint64_t value;
};

struct family {
	struct series *items;
	size_t n, cap;
};

/* upper bounds in ms; the last bucket is +Inf */
static const int64_t latency_ms[] = {5,    10,   25,   50,    100,   250,   500,
                                     1000, 2500, 5000, 10000, 30000, 60000, 300000};
#define NBUCKETS (sizeof(latency_ms) / sizeof(latency_ms[0]))

struct histogram {
	char *labels;
	uint64_t buckets[NBUCKETS + 1]; /* not cumulative; the last is over the top */
	uint64_t count;
	int64_t sum_ms;
};

struct server_state {
	char *name;
	const char *state; /* static */
};

struct lst_stats {
	struct lst_metrics *m;
	struct server_state *servers;
	size_t nservers;
	struct lst_stats *next, *prev;
};

struct lst_metrics {
	pthread_mutex_t lock;
	uint64_t sessions_total;
	struct family http;    /* code */
	struct family refused; /* reason */
	struct family calls;   /* server, tool, outcome */
	struct family egress;  /* server, outcome */
	struct family dropped; /* reason: messages for a client that no stream could take */
	struct family closed;  /* reason: connections the listener closed */
	struct histogram *latency;
	size_t nlatency;
	struct lst_stats *open; /* sessions not yet ended */
};

struct lst_metrics *lst_metrics_new(void)
{
	struct lst_metrics *m = xcalloc(1, sizeof(*m));
	pthread_mutex_init(&m->lock, NULL);
	return m;
}

static void family_free(struct family *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->items[i].labels);
	free(f->items);
}

static void stats_free(struct lst_stats *st)
{
	for (size_t i = 0; i < st->nservers; i++)
		free(st->servers[i].name);
	free(st->servers);
	free(st);
}

void lst_metrics_free(struct lst_metrics *m)
{
	if (m == NULL)
		return;
	family_free(&m->http);
	family_free(&m->refused);
	family_free(&m->calls);
	family_free(&m->egress);
	family_free(&m->dropped);
	family_free(&m->closed);
	for (size_t i = 0; i < m->nlatency; i++)
		free(m->latency[i].labels);
	free(m->latency);
	while (m->open != NULL) {
		struct lst_stats *st = m->open;
		m->open = st->next;
		stats_free(st);
	}
	pthread_mutex_destroy(&m->lock);
	free(m);
}

/* a label value as it may appear: a name, or "(other)" */
static const char *label_value(const char *v)
{
	if (v == NULL || *v == '\0' || strlen(v) > 128)
		return "(other)";
	for (const char *p = v; *p != '\0'; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_' || *p == '.' || *p == '-'))
			return "(other)";
	return v;
}

/* under m->lock */
static void family_add(struct family *f, const char *labels, uint64_t by)
{
	for (size_t i = 0; i < f->n; i++) {
		if (strcmp(f->items[i].labels, labels) == 0) {
			f->items[i].value += by;
			return;
		}
	}
	if (f->n >= LST_SERIES_MAX) {
		/* the last series stands for every one past the cap */
		f->items[f->n - 1].value += by;
		return;
	}
	if (f->n == f->cap) {
		f->cap = f->cap > 0 ? 2 * f->cap : 16;
		f->items = xreallocarray(f->items, f->cap, sizeof(*f->items));
	}
	f->items[f->n++] = (struct series){xstrdup(labels), by};
}

static void add_latency(struct lst_metrics *m, const char *labels, int64_t ms)
{
	struct histogram *h = NULL;
	for (size_t i = 0; i < m->nlatency && h == NULL; i++)
		if (strcmp(m->latency[i].labels, labels) == 0)
			h = &m->latency[i];
	if (h == NULL && m->nlatency >= LST_SERIES_MAX)
		h = &m->latency[m->nlatency - 1];
	if (h == NULL) {
		m->latency = xreallocarray(m->latency, m->nlatency + 1, sizeof(*m->latency));
		h = &m->latency[m->nlatency++];
		memset(h, 0, sizeof(*h));
		h->labels = xstrdup(labels);
	}
	size_t b = 0;
	while (b < NBUCKETS && ms > latency_ms[b])
		b++;
	h->buckets[b]++;
	h->count++;
	h->sum_ms += ms < 0 ? 0 : ms;
}

void lst_metrics_http(struct lst_metrics *m, unsigned code)
{
	char labels[32];
	snprintf(labels, sizeof(labels), "code=\"%u\"", code);
	pthread_mutex_lock(&m->lock);
	family_add(&m->http, labels, 1);
	pthread_mutex_unlock(&m->lock);
}

void lst_metrics_refused(struct lst_metrics *m, const char *reason)
{
	char *labels = xasprintf("reason=\"%s\"", label_value(reason));
	pthread_mutex_lock(&m->lock);
	family_add(&m->refused, labels, 1);
	pthread_mutex_unlock(&m->lock);
	free(labels);
}

void lst_metrics_dropped(struct lst_metrics *m, const char *reason)
{
	char *labels = xasprintf("reason=\"%s\"", label_value(reason));
	pthread_mutex_lock(&m->lock);
	family_add(&m->dropped, labels, 1);
	pthread_mutex_unlock(&m->lock);
	free(labels);
}

void lst_metrics_closed(struct lst_metrics *m, const char *reason)
{
	char *labels = xasprintf("reason=\"%s\"", label_value(reason));
	pthread_mutex_lock(&m->lock);
	family_add(&m->closed, labels, 1);
	pthread_mutex_unlock(&m->lock);
	free(labels);
}

struct lst_stats *lst_metrics_session(struct lst_metrics *m)
{
	struct lst_stats *st = xcalloc(1, sizeof(*st));
	st->m = m;
	pthread_mutex_lock(&m->lock);
	m->sessions_total++;
	st->next = m->open;
	if (m->open != NULL)
		m->open->prev = st;
	m->open = st;
	pthread_mutex_unlock(&m->lock);
	return st;
}

void lst_metrics_session_end(struct lst_stats *st)
{
	if (st == NULL)
		return;
	struct lst_metrics *m = st->m;
	pthread_mutex_lock(&m->lock);
	if (st->prev != NULL)
		st->prev->next = st->next;
	else
		m->open = st->next;
	if (st->next != NULL)
		st->next->prev = st->prev;
	pthread_mutex_unlock(&m->lock);
	stats_free(st);
}

/* under m->lock */
static void set_state(struct lst_stats *st, const char *server, const char *state)
{
	const char *name = label_value(server);
	for (size_t i = 0; i < st->nservers; i++) {
		if (strcmp(st->servers[i].name, name) == 0) {
			st->servers[i].state = state;
			return;
		}
	}
	if (st->nservers >= LST_SERVERS_MAX)
		return;
	st->servers = xreallocarray(st->servers, st->nservers + 1, sizeof(*st->servers));
	st->servers[st->nservers++] = (struct server_state){xstrdup(name), state};
}

static const struct {
	const char *event, *state;
} state_events[] = {
    {"server.ready", "ready"},     {"server.unavailable", "unavailable"},
    {"server.stopped", "stopped"}, {"server.withheld", "withheld"},
    {"server.exit", "exited"},
};

void lst_metrics_observe(const char *event, const struct json_value *fields, void *data)
{
	struct lst_stats *st = data;
	struct lst_metrics *m = st->m;
	const char *server = json_get_string(fields, "server");
	pthread_mutex_lock(&m->lock);
	if (strcmp(event, "tool.call") == 0) {
		char *labels =
		    xasprintf("server=\"%s\",tool=\"%s\",outcome=\"%s\"", label_value(server),
		              label_value(json_get_string(fields, "tool")),
		              label_value(json_get_string(fields, "outcome")));
		family_add(&m->calls, labels, 1);
		free(labels);
		int64_t ms = 0;
		const struct json_value *v = json_get(fields, "ms");
		if (v != NULL && json_number_int64(v, &ms) == 0) {
			labels = xasprintf("server=\"%s\"", label_value(server));
			add_latency(m, labels, ms);
			free(labels);
		}
	} else if (strcmp(event, "mcp.egress") == 0) {
		const struct json_value *v = json_get(fields, "allowed");
		bool allowed = v != NULL && v->kind == JSON_BOOL && v->u.boolean;
		char *labels = xasprintf("server=\"%s\",outcome=\"%s\"", label_value(server),
		                         allowed ? "allowed" : "refused");
		family_add(&m->egress, labels, 1);
		free(labels);
	} else if (strcmp(event, "session.start") == 0) {
		const struct json_value *names = json_get(fields, "servers");
		if (names != NULL && names->kind == JSON_ARRAY)
			for (size_t i = 0; i < names->u.arr.len; i++)
				if (names->u.arr.items[i]->kind == JSON_STRING)
					set_state(st, names->u.arr.items[i]->u.str.ptr, "starting");
	} else {
		for (size_t i = 0; i < sizeof(state_events) / sizeof(state_events[0]); i++)
			if (strcmp(event, state_events[i].event) == 0 && server != NULL)
				set_state(st, server, state_events[i].state);
	}
	pthread_mutex_unlock(&m->lock);
}

/* mg_buf_printf that remembers a failure (the page's maximum) */
__attribute__((format(printf, 3, 4))) static void emit(struct mg_buf *out, bool *full,
                                                       const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (mg_buf_vprintf(out, NULL, fmt, ap) < 0)
		*full = true;
	va_end(ap);
}

static void put_family(struct mg_buf *out, bool *full, const char *name, const char *type,
                       const char *help, const struct family *f)
{
	emit(out, full, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
	for (size_t i = 0; i < f->n; i++)
		emit(out, full, "%s{%s} %llu\n", name, f->items[i].labels,
		     (unsigned long long)f->items[i].value);
}

int lst_metrics_render(struct lst_metrics *m, const struct lst_gauges *g, struct mg_buf *out,
                       struct mg_err **err)
{
	bool full = false;
	pthread_mutex_lock(&m->lock);
	emit(out, &full,
	     "# HELP mcpgate_sessions_open MCP client sessions the listener holds.\n"
	     "# TYPE mcpgate_sessions_open gauge\n"
	     "mcpgate_sessions_open %zu\n"
	     "# HELP mcpgate_sessions_total MCP client sessions begun.\n"
	     "# TYPE mcpgate_sessions_total counter\n"
	     "mcpgate_sessions_total %llu\n"
	     "# HELP mcpgate_sessions_blocked Sessions whose output waits for a client "
	     "that does not read its stream.\n"
	     "# TYPE mcpgate_sessions_blocked gauge\n"
	     "mcpgate_sessions_blocked %zu\n"
	     "# HELP mcpgate_streams_open Event streams open (GET, and POSTs answered "
	     "with a stream).\n"
	     "# TYPE mcpgate_streams_open gauge\n"
	     "mcpgate_streams_open %zu\n"
	     "# HELP mcpgate_http_connections Connections the listener holds: with a "
	     "request that carries the token, and pending (waiting for a request, or one "
	     "whose token is not read yet).\n"
	     "# TYPE mcpgate_http_connections gauge\n"
	     "mcpgate_http_connections{state=\"token\"} %zu\n"
	     "mcpgate_http_connections{state=\"pending\"} %zu\n",
	     g->sessions_open, (unsigned long long)m->sessions_total, g->sessions_blocked,
	     g->streams_open, g->conns_token, g->conns_pending);
	put_family(out, &full, "mcpgate_http_requests_total", "counter",
	           "HTTP requests answered, by status.", &m->http);
	put_family(out, &full, "mcpgate_http_refused_total", "counter",
	           "HTTP requests refused, by what was wrong.", &m->refused);
	put_family(out, &full, "mcpgate_http_connections_closed_total", "counter",
	           "Connections the listener closed: past listen_read_timeout (deadline), for "
	           "room (peer, pending), or with every place taken (full).",
	           &m->closed);
	put_family(out, &full, "mcpgate_messages_dropped_total", "counter",
	           "Messages for a client that no request or stream could take.", &m->dropped);
	put_family(out, &full, "mcpgate_tool_calls_total", "counter",
	           "Tool calls, by server, tool and outcome.", &m->calls);
	emit(out, &full,
	     "# HELP mcpgate_tool_call_duration_seconds Tool call latency, by server.\n"
	     "# TYPE mcpgate_tool_call_duration_seconds histogram\n");
	for (size_t i = 0; i < m->nlatency; i++) {
		const struct histogram *h = &m->latency[i];
		uint64_t cum = 0;
		for (size_t b = 0; b < NBUCKETS; b++) {
			cum += h->buckets[b];
			emit(out, &full,
			     "mcpgate_tool_call_duration_seconds_bucket{%s,le=\"%g\"} %llu\n",
			     h->labels, (double)latency_ms[b] / 1000.0, (unsigned long long)cum);
		}
		emit(out, &full,
		     "mcpgate_tool_call_duration_seconds_bucket{%s,le=\"+Inf\"} %llu\n"
		     "mcpgate_tool_call_duration_seconds_sum{%s} %.3f\n"
		     "mcpgate_tool_call_duration_seconds_count{%s} %llu\n",
		     h->labels, (unsigned long long)h->count, h->labels, (double)h->sum_ms / 1000.0,
		     h->labels, (unsigned long long)h->count);
	}
	put_family(out, &full, "mcpgate_egress_attempts_total", "counter",
	           "Connections servers tried through their egress proxy, by outcome.", &m->egress);
	struct family states = {0};
	for (const struct lst_stats *st = m->open; st != NULL; st = st->next) {
		for (size_t i = 0; i < st->nservers; i++) {
			char *labels = xasprintf("server=\"%s\",state=\"%s\"", st->servers[i].name,
			                         st->servers[i].state);
			family_add(&states, labels, 1);
			free(labels);
		}
	}
	put_family(out, &full, "mcpgate_servers", "gauge",
	           "Servers of the open sessions, by state.", &states);
	family_free(&states);
	pthread_mutex_unlock(&m->lock);
	if (full)
		return mg_err_set(err, "the metrics page is over %zu bytes", out->max);
	return 0;
}
