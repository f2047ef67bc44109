/* An incremental parser of text/event-stream (WHATWG HTML, "Server-sent
 * events", event stream interpretation), bounded by event_max. */
#include <string.h>

#include "internal/remote/remote.h"

#define SSE_EVENT_MAX_DEFAULT ((size_t)16 << 20)
/* room for a field name and its colon on top of event_max bytes of value */
#define SSE_LINE_SLACK 64

void sse_init(struct sse_parser *p, size_t event_max)
{
	memset(p, 0, sizeof(*p));
	p->event_max = event_max > 0 ? event_max : SSE_EVENT_MAX_DEFAULT;
	mg_buf_init(&p->line, p->event_max + SSE_LINE_SLACK);
	/* each data line adds a "\n": the last one is dropped at dispatch */
	mg_buf_init(&p->data, p->event_max + 1);
	mg_buf_init(&p->type, p->event_max + SSE_LINE_SLACK);
	p->retry_ms = -1;
}

void sse_free(struct sse_parser *p)
{
	mg_buf_free(&p->line);
	mg_buf_free(&p->data);
	mg_buf_free(&p->type);
}

void sse_reconnect(struct sse_parser *p)
{
	mg_buf_reset(&p->line);
	mg_buf_reset(&p->data);
	mg_buf_reset(&p->type);
	/* the id buffer goes back to the id last dispatched */
	memcpy(p->id_buf, p->last_id, p->last_id_len);
	p->id_buf_len = p->last_id_len;
	p->skip_lf = false;
	p->bom_checked = false;
	p->discarding = false;
}

const char *sse_last_id(const struct sse_parser *p, size_t *len)
{
	*len = p->last_id_len;
	return p->last_id;
}

int64_t sse_retry_ms(const struct sse_parser *p)
{
	return p->retry_ms;
}

/* The event is over the limit: drop it up to its blank line, and say so once. */
static int overflow(struct sse_parser *p, sse_event_cb cb, void *data)
{
	mg_buf_reset(&p->line);
	mg_buf_reset(&p->data);
	mg_buf_reset(&p->type);
	if (p->discarding)
		return 0;
	p->discarding = true;
	struct sse_event ev = {.type = "", .data = "", .id = "", .too_big = true};
	return cb(&ev, data);
}

static int dispatch(struct sse_parser *p, sse_event_cb cb, void *data)
{
	memcpy(p->last_id, p->id_buf, p->id_buf_len);
	p->last_id_len = p->id_buf_len;
	if (p->discarding) {
		p->discarding = false;
		return 0;
	}
	if (p->data.len == 0) {
		mg_buf_reset(&p->type);
		return 0;
	}
	struct sse_event ev = {
	    .type = p->type.len > 0 ? p->type.data : "message",
	    .type_len = p->type.len > 0 ? p->type.len : 7,
	    .data = p->data.data,
	    .data_len = p->data.len - 1, /* without the last "\n" */
	    .id = p->last_id,
	    .id_len = p->last_id_len,
	};
	int r = cb(&ev, data);
	mg_buf_reset(&p->data);
	mg_buf_reset(&p->type);
	return r < 0 ? r : 0;
}

static bool field_is(const char *name, size_t n, const char *want)
{
	return strlen(want) == n && memcmp(name, want, n) == 0;
}

static void set_retry(struct sse_parser *p, const char *v, size_t n)
{
	if (n == 0)
		return;
	int64_t ms = 0;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return; /* not only digits: ignored */
		if (ms <= SSE_RETRY_MAX_MS)
			ms = ms * 10 + (v[i] - '0');
	}
	p->retry_ms = ms > SSE_RETRY_MAX_MS ? SSE_RETRY_MAX_MS : ms;
}

/* One complete line (without its end). */
static int process_line(struct sse_parser *p, const char *line, size_t n, sse_event_cb cb,
                        void *data)
{
	if (n == 0)
		return dispatch(p, cb, data);
	if (p->discarding || line[0] == ':') /* a dropped event, or a comment */
		return 0;
	const char *colon = memchr(line, ':', n);
	size_t name_len = colon != NULL ? (size_t)(colon - line) : n;
	const char *value = colon != NULL ? colon + 1 : line + n;
	size_t value_len = colon != NULL ? n - name_len - 1 : 0;
	if (value_len > 0 && value[0] == ' ') {
		value++;
		value_len--;
	}
	if (field_is(line, name_len, "data")) {
		if (mg_buf_append(&p->data, value, value_len, NULL) < 0 ||
		    mg_buf_putc(&p->data, '\n', NULL) < 0)
			return overflow(p, cb, data);
	} else if (field_is(line, name_len, "event")) {
		mg_buf_reset(&p->type);
		if (mg_buf_append(&p->type, value, value_len, NULL) < 0)
			return overflow(p, cb, data);
	} else if (field_is(line, name_len, "id")) {
		/* an id with NUL is ignored (the standard); so is an overlong one */
		if (memchr(value, '\0', value_len) == NULL && value_len <= SSE_ID_MAX) {
			memcpy(p->id_buf, value, value_len);
			p->id_buf_len = value_len;
		}
	} else if (field_is(line, name_len, "retry")) {
		set_retry(p, value, value_len);
	}
	return 0;
}

int sse_feed(struct sse_parser *p, const char *buf, size_t n, sse_event_cb cb, void *data)
{
	size_t i = 0;
	if (!p->bom_checked && n > 0) {
		/* the BOM may itself arrive in pieces: hold bytes that may start one */
		static const char bom[] = "\xEF\xBB\xBF";
		size_t have = p->line.len;
		while (have < 3 && i < n && buf[i] == bom[have]) {
			mg_buf_putc(&p->line, buf[i], NULL);
			have++;
			i++;
		}
		if (have == 3) {
			mg_buf_reset(&p->line);
			p->bom_checked = true;
		} else if (i < n) {
			p->bom_checked = true; /* not a BOM: those bytes are the line's */
		}
	}
	while (i < n) {
		if (p->skip_lf) {
			p->skip_lf = false;
			if (buf[i] == '\n') {
				i++;
				continue;
			}
		}
		/* the next line end, if any */
		size_t j = i;
		while (j < n && buf[j] != '\n' && buf[j] != '\r')
			j++;
		size_t seg = j - i;
		int r = 0;
		if (!p->discarding && p->line.len + seg > p->line.max)
			r = overflow(p, cb, data); /* the event is dropped */
		if (r < 0)
			return r;
		if (p->discarding) {
			/* only whether the line is empty matters (a blank line
			 * ends the dropped event): one byte stands for the rest */
			if (seg > 0 && p->line.len == 0)
				mg_buf_putc(&p->line, 'x', NULL);
		} else {
			mg_buf_append(&p->line, buf + i, seg, NULL);
		}
		if (j == n)
			break;
		p->skip_lf = buf[j] == '\r';
		i = j + 1;
		r = process_line(p, p->line.len > 0 ? p->line.data : "", p->line.len, cb, data);
		mg_buf_reset(&p->line);
		if (r < 0)
			return r;
	}
	return 0;
}
