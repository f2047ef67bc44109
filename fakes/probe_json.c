/* A tiny JSON reader and writer for the test fakes; see probe_json.h. */
#include "probe_json.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *pj_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (p == NULL)
		abort();
	return p;
}

void *pj_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (q == NULL)
		abort();
	return q;
}

char *pj_xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = pj_xmalloc(n);
	memcpy(d, s, n);
	return d;
}

/* Length of the valid UTF-8 sequence at s (at most avail bytes), or 0 when
 * it is not one: no overlong forms, no surrogates, nothing above U+10FFFF. */
static size_t utf8_seq_len(const unsigned char *s, size_t avail)
{
	unsigned char c = s[0];
	size_t len, i;
	unsigned char lo = 0x80, hi = 0xBF;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF) {
		len = 2;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		if (c == 0xE0)
			lo = 0xA0;
		else if (c == 0xED)
			hi = 0x9F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F;
	} else {
		return 0;
	}
	if (avail < len)
		return 0;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xBF)
			return 0;
	return len;
}

static const char *skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Four hex digits at p (p+4 <= end checked by the caller), or -1. */
static long hex4(const char *p)
{
	long v = 0;
	int i;
	for (i = 0; i < 4; i++) {
		int h = hex_value(p[i]);
		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

/* *pp at the opening quote; on success *pp is just past the closing quote. */
static int parse_string(const char **pp, const char *end)
{
	const char *p = *pp;
	if (p >= end || *p != '"')
		return -1;
	p++;
	while (p < end) {
		unsigned char c = (unsigned char)*p;
		if (c == '"') {
			*pp = p + 1;
			return 0;
		}
		if (c < 0x20)
			return -1;
		if (c == '\\') {
			if (p + 1 >= end)
				return -1;
			switch (p[1]) {
			case '"':
			case '\\':
			case '/':
			case 'b':
			case 'f':
			case 'n':
			case 'r':
			case 't':
				p += 2;
				break;
			case 'u':
				if (end - p < 6 || hex4(p + 2) < 0)
					return -1;
				p += 6;
				break;
			default:
				return -1;
			}
			continue;
		}
		size_t len = utf8_seq_len((const unsigned char *)p, (size_t)(end - p));
		if (len == 0)
			return -1;
		p += len;
	}
	return -1;
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int parse_number(const char **pp, const char *end)
{
	const char *p = *pp;
	if (p < end && *p == '-')
		p++;
	if (p >= end || !is_digit(*p))
		return -1;
	if (*p == '0') {
		p++;
	} else {
		while (p < end && is_digit(*p))
			p++;
	}
	if (p < end && *p == '.') {
		p++;
		if (p >= end || !is_digit(*p))
			return -1;
		while (p < end && is_digit(*p))
			p++;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		if (p >= end || !is_digit(*p))
			return -1;
		while (p < end && is_digit(*p))
			p++;
	}
	*pp = p;
	return 0;
}

static int parse_literal(const char **pp, const char *end, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(end - *pp) < n || memcmp(*pp, word, n) != 0)
		return -1;
	*pp += n;
	return 0;
}

/* *pp at the first character of a value (no leading whitespace); on success
 * *pp is just past it. depth counts the containers already open. */
static int parse_value(const char **pp, const char *end, int depth)
{
	const char *p = *pp;
	if (p >= end)
		return -1;
	switch (*p) {
	case '"':
		if (parse_string(&p, end) < 0)
			return -1;
		break;
	case 't':
		if (parse_literal(&p, end, "true") < 0)
			return -1;
		break;
	case 'f':
		if (parse_literal(&p, end, "false") < 0)
			return -1;
		break;
	case 'n':
		if (parse_literal(&p, end, "null") < 0)
			return -1;
		break;
	case '[':
	case '{': {
		char close = *p == '[' ? ']' : '}';
		int is_object = *p == '{';
		if (depth >= PJ_MAX_DEPTH)
			return -1;
		p = skip_ws(p + 1, end);
		if (p < end && *p == close) {
			p++;
			break;
		}
		for (;;) {
			if (is_object) {
				if (parse_string(&p, end) < 0)
					return -1;
				p = skip_ws(p, end);
				if (p >= end || *p != ':')
					return -1;
				p = skip_ws(p + 1, end);
			}
			if (parse_value(&p, end, depth + 1) < 0)
				return -1;
			p = skip_ws(p, end);
			if (p >= end)
				return -1;
			if (*p == close) {
				p++;
				break;
			}
			if (*p != ',')
				return -1;
			p = skip_ws(p + 1, end);
		}
		break;
	}
	default:
		if (parse_number(&p, end) < 0)
			return -1;
		break;
	}
	*pp = p;
	return 0;
}

int pj_parse(const char *text, size_t len, struct pj_span *value)
{
	const char *end = text + len;
	const char *start = skip_ws(text, end);
	const char *p = start;
	if (parse_value(&p, end, 0) < 0)
		return -1;
	if (skip_ws(p, end) != end)
		return -1;
	value->p = start;
	value->n = (size_t)(p - start);
	return 0;
}

enum pj_kind pj_kind(struct pj_span v)
{
	if (v.p == NULL || v.n == 0)
		return PJ_INVALID;
	switch (v.p[0]) {
	case 'n':
		return PJ_NULL;
	case 't':
	case 'f':
		return PJ_BOOL;
	case '"':
		return PJ_STRING;
	case '[':
		return PJ_ARRAY;
	case '{':
		return PJ_OBJECT;
	default:
		return PJ_NUMBER;
	}
}

void pj_iter_init(struct pj_iter *it, struct pj_span container)
{
	enum pj_kind k = pj_kind(container);
	if (k != PJ_ARRAY && k != PJ_OBJECT) {
		it->p = it->end = NULL;
		it->is_object = 0;
		return;
	}
	it->is_object = k == PJ_OBJECT;
	/* Inside the brackets. */
	it->p = container.p + 1;
	it->end = container.p + container.n - 1;
}

int pj_iter_next(struct pj_iter *it, struct pj_span *key, struct pj_span *value)
{
	const char *p = it->p, *end = it->end;
	if (p == NULL)
		return 0;
	p = skip_ws(p, end);
	if (p < end && *p == ',')
		p = skip_ws(p + 1, end);
	if (p >= end)
		return 0;
	key->p = NULL;
	key->n = 0;
	if (it->is_object) {
		const char *k = p;
		if (parse_string(&p, end) < 0)
			return 0;
		key->p = k;
		key->n = (size_t)(p - k);
		p = skip_ws(p, end);
		if (p >= end || *p != ':')
			return 0;
		p = skip_ws(p + 1, end);
	}
	const char *v = p;
	if (parse_value(&p, end, 0) < 0)
		return 0;
	value->p = v;
	value->n = (size_t)(p - v);
	it->p = p;
	return 1;
}

int pj_member(struct pj_span obj, const char *key, struct pj_span *value)
{
	struct pj_iter it;
	struct pj_span k, v;
	if (pj_kind(obj) != PJ_OBJECT)
		return 0;
	pj_iter_init(&it, obj);
	while (pj_iter_next(&it, &k, &v)) {
		if (pj_string_eq(k, key)) {
			*value = v;
			return 1;
		}
	}
	return 0;
}

static size_t put_utf8(char *out, unsigned long cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xC0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xE0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		out[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (char)(0xF0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
	out[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

char *pj_string(struct pj_span v, size_t *len)
{
	const char *p, *end;
	char *out, *o;

	if (pj_kind(v) != PJ_STRING || v.n < 2)
		return NULL;
	p = v.p + 1;
	end = v.p + v.n - 1;
	/* Decoding never grows: \uXXXX (6 bytes) gives at most 3, a pair (12) 4. */
	out = pj_xmalloc(v.n);
	o = out;
	while (p < end) {
		if (*p != '\\') {
			*o++ = *p++;
			continue;
		}
		if (p + 1 >= end)
			break;
		char e = p[1];
		p += 2;
		switch (e) {
		case 'b':
			*o++ = '\b';
			break;
		case 'f':
			*o++ = '\f';
			break;
		case 'n':
			*o++ = '\n';
			break;
		case 'r':
			*o++ = '\r';
			break;
		case 't':
			*o++ = '\t';
			break;
		case 'u': {
			long cp = end - p >= 4 ? hex4(p) : -1;
			if (cp < 0) {
				free(out);
				return NULL;
			}
			p += 4;
			if (cp >= 0xD800 && cp <= 0xDBFF && end - p >= 6 && p[0] == '\\' &&
			    p[1] == 'u') {
				long lo = hex4(p + 2);
				if (lo >= 0xDC00 && lo <= 0xDFFF) {
					cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
					p += 6;
				}
			}
			if (cp >= 0xD800 && cp <= 0xDFFF)
				cp = 0xFFFD;
			o += put_utf8(o, (unsigned long)cp);
			break;
		}
		default: /* '"', '\\', '/' */
			*o++ = e;
			break;
		}
	}
	*o = '\0';
	if (len != NULL)
		*len = (size_t)(o - out);
	return out;
}

int pj_string_eq(struct pj_span v, const char *s)
{
	size_t n;
	char *d = pj_string(v, &n);
	int eq;
	if (d == NULL)
		return 0;
	eq = n == strlen(s) && memcmp(d, s, n) == 0;
	free(d);
	return eq;
}

int pj_integer(struct pj_span v, long long *out)
{
	char tmp[32];
	size_t i = 0;
	char *endp;
	long long x;

	if (v.n == 0 || v.n >= sizeof tmp)
		return -1;
	if (v.p[0] == '-')
		i = 1;
	if (i == v.n)
		return -1;
	for (; i < v.n; i++)
		if (!is_digit(v.p[i]))
			return -1;
	memcpy(tmp, v.p, v.n);
	tmp[v.n] = '\0';
	errno = 0;
	x = strtoll(tmp, &endp, 10);
	if (errno != 0 || *endp != '\0')
		return -1;
	*out = x;
	return 0;
}

static void buf_reserve(struct pj_buf *b, size_t more)
{
	size_t need, cap;
	if (more > SIZE_MAX - b->len - 1)
		abort();
	need = b->len + more + 1;
	if (need <= b->cap)
		return;
	cap = b->cap ? b->cap : 256;
	while (cap < need) {
		if (cap > SIZE_MAX / 2)
			abort();
		cap *= 2;
	}
	b->p = pj_xrealloc(b->p, cap);
	b->cap = cap;
}

void pj_buf_add(struct pj_buf *b, const char *s, size_t n)
{
	buf_reserve(b, n);
	if (n > 0)
		memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void pj_buf_adds(struct pj_buf *b, const char *s)
{
	pj_buf_add(b, s, strlen(s));
}

void pj_buf_addf(struct pj_buf *b, const char *fmt, ...)
{
	va_list ap;
	char probe[1];
	int n;

	va_start(ap, fmt);
	n = vsnprintf(probe, sizeof probe, fmt, ap);
	va_end(ap);
	if (n < 0)
		abort();
	buf_reserve(b, (size_t)n);
	va_start(ap, fmt);
	if (vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap) != n)
		abort();
	va_end(ap);
	b->len += (size_t)n;
}

char *pj_buf_extend(struct pj_buf *b, size_t n)
{
	char *p;
	buf_reserve(b, n);
	p = b->p + b->len;
	b->len += n;
	b->p[b->len] = '\0';
	return p;
}

void pj_buf_free(struct pj_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

void pj_put_string(struct pj_buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;

	buf_reserve(b, n + 2);
	pj_buf_add(b, "\"", 1);
	while (i < n) {
		size_t start = i, len;
		unsigned char c;
		/* Copy runs of bytes that need no escape in one go. */
		for (;;) {
			if (i >= n)
				break;
			c = u[i];
			if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\')
				len = 1;
			else if (c >= 0x80)
				len = utf8_seq_len(u + i, n - i);
			else
				len = 0;
			if (len == 0)
				break;
			i += len;
		}
		if (i > start)
			pj_buf_add(b, s + start, i - start);
		if (i >= n)
			break;
		c = u[i++];
		switch (c) {
		case '"':
			pj_buf_add(b, "\\\"", 2);
			break;
		case '\\':
			pj_buf_add(b, "\\\\", 2);
			break;
		case '\n':
			pj_buf_add(b, "\\n", 2);
			break;
		case '\r':
			pj_buf_add(b, "\\r", 2);
			break;
		case '\t':
			pj_buf_add(b, "\\t", 2);
			break;
		case '\b':
			pj_buf_add(b, "\\b", 2);
			break;
		case '\f':
			pj_buf_add(b, "\\f", 2);
			break;
		default:
			if (c < 0x20) {
				char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
				pj_buf_add(b, esc, sizeof esc);
			} else {
				pj_buf_add(b, "\xEF\xBF\xBD", 3); /* an invalid UTF-8 byte */
			}
			break;
		}
	}
	pj_buf_add(b, "\"", 1);
}

void pj_put_cstring(struct pj_buf *b, const char *s)
{
	pj_put_string(b, s, strlen(s));
}
