/* TOML 1.0.0 parser. One pass over the text, no lexer: each parse_* function
 * starts at p->off and, on success, leaves p->off after what it read.
 *
 * The tree records how each table came to be (flags below) so that the
 * redefinition rules of the spec can be checked when a header or a dotted
 * key reaches it. Lookups during the parse go through one hash index for the
 * whole document (table pointer + key); it is dropped when the parse ends. */
#include "internal/toml/toml.h"
#include "internal/toml/toml-internal.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/num.h"
#include "internal/base/utf8.h"
#include "internal/base/xalloc.h"

/* Containers (tables and arrays) deeper than this below the root are refused,
 * so every walk over a tree, ours or a caller's, has a bounded depth. */
#define TOML_MAX_DEPTH 128

/* Error messages name keys at most this long (bytes of escaped text). */
#define KEY_NAME_MAX 100

struct key_part {
	char *s; /* owned; table_insert() copies it */
	size_t len;
	struct toml_pos pos;
};

struct key {
	struct key_part *parts;
	size_t n;
	size_t cap;
};

struct slot {
	struct toml_value *table; /* NULL: empty slot */
	size_t idx;               /* index into table->u.table.items */
	uint64_t hash;
};

struct parser {
	const char *text;
	size_t len;
	size_t off;
	unsigned line;
	size_t lstart; /* offset where the current line starts */
	const char *filename;
	struct mg_err **err;
	struct slot *slots; /* open addressing, size a power of two */
	size_t nslots;
	size_t nused;
};

/* ---- positions and errors ------------------------------------------------ */

static struct toml_pos pos_at(const struct parser *p, size_t off)
{
	size_t col = off - p->lstart + 1;
	struct toml_pos pos = {p->line, col > 0xFFFFFFFFu ? 0xFFFFFFFFu : (unsigned)col};
	return pos;
}

static struct toml_pos here(const struct parser *p)
{
	return pos_at(p, p->off);
}

__attribute__((format(printf, 3, 4))) static int fail(struct parser *p, struct toml_pos pos,
                                                      const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cleanup_free char *msg = xvasprintf(fmt, ap);
	va_end(ap);
	return mg_err_set(p->err, "%s:%u:%u: %s", p->filename, pos.line, pos.col, msg);
}

/* "expected WHAT, found X" where X describes the text at p->off. */
static int fail_found(struct parser *p, const char *what)
{
	struct toml_pos at = here(p);
	if (p->off >= p->len)
		return fail(p, at, "expected %s, found end of file", what);
	const unsigned char *u = (const unsigned char *)p->text + p->off;
	size_t avail = p->len - p->off;
	if (u[0] == '\n' || (u[0] == '\r' && avail > 1 && u[1] == '\n'))
		return fail(p, at, "expected %s, found newline", what);
	if (u[0] == '\r')
		return fail(p, at, "expected %s, found carriage return without newline", what);
	if (u[0] > 0x20 && u[0] < 0x7F)
		return fail(p, at, "expected %s, found '%c'", what, u[0]);
	uint32_t cp = u[0];
	if (mg_utf8_seq(u, avail, &cp) == 0)
		cp = u[0];
	return fail(p, at, "expected %s, found U+%04X", what, (unsigned)cp);
}

/* A control character the spec refuses in this context (tab is fine). */
static bool is_bad_control(unsigned char c)
{
	return (c < 0x20 && c != '\t') || c == 0x7F;
}

static int fail_control(struct parser *p, const char *where)
{
	unsigned char c = (unsigned char)p->text[p->off];
	if (c == '\r')
		return fail(p, here(p), "carriage return without newline in %s", where);
	return fail(p, here(p), "control character U+%04X in %s", c, where);
}

/* The key parts [0, upto] as text for an error message: dot-joined, quotes,
 * backslashes and control characters escaped, long names cut short. */
static char *key_name(const struct key *k, size_t upto)
{
	struct mg_buf b = MG_BUF_INIT(KEY_NAME_MAX + 16);
	for (size_t i = 0; i <= upto && i < k->n; i++) {
		const unsigned char *s = (const unsigned char *)k->parts[i].s;
		if (i > 0 && b.len >= KEY_NAME_MAX) {
			(void)mg_buf_puts(&b, "...", NULL);
			break;
		}
		if (i > 0 && mg_buf_putc(&b, '.', NULL) < 0)
			break;
		for (size_t j = 0; j < k->parts[i].len; j++) {
			/* cut only at the start of a UTF-8 sequence */
			if (b.len >= KEY_NAME_MAX && (s[j] & 0xC0) != 0x80) {
				(void)mg_buf_puts(&b, "...", NULL);
				goto done;
			}
			int r;
			if (s[j] == '"' || s[j] == '\\')
				r = mg_buf_printf(&b, NULL, "\\%c", s[j]);
			else if (is_bad_control(s[j]) || s[j] == '\t')
				r = mg_buf_printf(&b, NULL, "\\u%04X", s[j]);
			else
				r = mg_buf_putc(&b, (char)s[j], NULL);
			if (r < 0)
				goto done;
		}
	}
done:
	return mg_buf_steal(&b, NULL);
}

/* "BEFORE "KEY" AFTER", naming the key parts [0, upto]. */
static int fail_key(struct parser *p, struct toml_pos pos, const struct key *k, size_t upto,
                    const char *before, const char *after)
{
	cleanup_free char *name = key_name(k, upto);
	return fail(p, pos, "%s \"%s\"%s", before, name, after);
}

/* ---- reading characters --------------------------------------------------- */

static int peek(const struct parser *p)
{
	return p->off < p->len ? (unsigned char)p->text[p->off] : -1;
}

static int peek_at(const struct parser *p, size_t k)
{
	return p->len - p->off > k ? (unsigned char)p->text[p->off + k] : -1;
}

static bool at_newline(const struct parser *p)
{
	int c = peek(p);
	return c == '\n' || (c == '\r' && peek_at(p, 1) == '\n');
}

/* Consume "\n" or "\r\n" (the caller checked at_newline). */
static void eat_newline(struct parser *p)
{
	p->off += p->text[p->off] == '\r' ? 2 : 1;
	p->line++;
	p->lstart = p->off;
}

static void skip_ws(struct parser *p)
{
	while (p->off < p->len && (p->text[p->off] == ' ' || p->text[p->off] == '\t'))
		p->off++;
}

/* At '#': the comment up to (not including) the end of the line. */
static int skip_comment(struct parser *p)
{
	p->off++;
	while (p->off < p->len && !at_newline(p)) {
		if (is_bad_control((unsigned char)p->text[p->off]))
			return fail_control(p, "comment");
		p->off++;
	}
	return 0;
}

/* Whitespace, comments and newlines, as between array elements. */
static int skip_ws_lines(struct parser *p)
{
	for (;;) {
		skip_ws(p);
		if (peek(p) == '#') {
			if (skip_comment(p) < 0)
				return -1;
		} else if (at_newline(p)) {
			eat_newline(p);
		} else {
			return 0;
		}
	}
}

static bool is_bare_key_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-';
}

static bool is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int hex_value(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* ---- tree ------------------------------------------------------------------ */

static unsigned depth_of(const struct toml_value *v)
{
	return v->flags >> TF_DEPTH_SHIFT;
}

static struct toml_value *value_new(enum toml_kind kind, struct toml_pos pos, unsigned depth)
{
	struct toml_value *v = xcalloc(1, sizeof(*v));
	v->kind = kind;
	v->pos = pos;
	v->flags = depth << TF_DEPTH_SHIFT;
	return v;
}

/* A new container at the given depth, or NULL (error set) when that is
 * too deep. */
static struct toml_value *container_new(struct parser *p, enum toml_kind kind, struct toml_pos pos,
                                        unsigned depth)
{
	if (depth > TOML_MAX_DEPTH) {
		fail(p, pos, "nesting too deep (more than %d levels)", TOML_MAX_DEPTH);
		return NULL;
	}
	return value_new(kind, pos, depth);
}

void toml_free(struct toml_value *v)
{
	if (v == NULL)
		return;
	switch (v->kind) {
	case TOML_TABLE:
		for (size_t i = 0; i < v->u.table.len; i++) {
			free(v->u.table.items[i].key);
			toml_free(v->u.table.items[i].value);
		}
		free(v->u.table.items);
		break;
	case TOML_ARRAY:
		for (size_t i = 0; i < v->u.array.len; i++)
			toml_free(v->u.array.items[i]);
		free(v->u.array.items);
		break;
	case TOML_STRING:
	case TOML_DATETIME:
	case TOML_DATETIME_LOCAL:
	case TOML_DATE_LOCAL:
	case TOML_TIME_LOCAL:
		free(v->u.str.ptr);
		break;
	case TOML_INTEGER:
	case TOML_FLOAT:
	case TOML_BOOL:
		break;
	}
	free(v);
}

static void array_push(struct toml_value *a, struct toml_value *v)
{
	if (a->u.array.len == a->u.array.cap) {
		size_t cap = a->u.array.cap != 0 ? a->u.array.cap * 2 : 4;
		a->u.array.items = xreallocarray(a->u.array.items, cap, sizeof(*a->u.array.items));
		a->u.array.cap = cap;
	}
	a->u.array.items[a->u.array.len++] = v;
}

static uint64_t key_hash(const struct toml_value *t, const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull ^ ((uint64_t)(uintptr_t)t * 0x9E3779B97F4A7C15ull);
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ull;
	}
	return h ^ (h >> 29);
}

/* The entry for key in table t, or NULL. The pointer is good until the next
 * insertion into t. */
static struct toml_kv *lookup(const struct parser *p, struct toml_value *t, const char *s, size_t n)
{
	if (p->nslots == 0)
		return NULL;
	uint64_t h = key_hash(t, s, n);
	size_t mask = p->nslots - 1;
	for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
		const struct slot *sl = &p->slots[i];
		if (sl->table == NULL)
			return NULL;
		if (sl->hash == h && sl->table == t) {
			struct toml_kv *kv = &t->u.table.items[sl->idx];
			if (kv->keylen == n && memcmp(kv->key, s, n) == 0)
				return kv;
		}
	}
}

static void slot_put(struct slot *slots, size_t nslots, struct toml_value *t, size_t idx,
                     uint64_t h)
{
	size_t mask = nslots - 1;
	size_t i = (size_t)h & mask;
	while (slots[i].table != NULL)
		i = (i + 1) & mask;
	slots[i].table = t;
	slots[i].idx = idx;
	slots[i].hash = h;
}

/* Add a key that lookup() did not find (the key text is copied). */
static void table_insert(struct parser *p, struct toml_value *t, const struct key_part *part,
                         struct toml_value *v)
{
	if (t->u.table.len == t->u.table.cap) {
		size_t cap = t->u.table.cap != 0 ? t->u.table.cap * 2 : 4;
		t->u.table.items = xreallocarray(t->u.table.items, cap, sizeof(*t->u.table.items));
		t->u.table.cap = cap;
	}
	struct toml_kv *kv = &t->u.table.items[t->u.table.len];
	kv->key = xstrndup(part->s, part->len);
	kv->keylen = part->len;
	kv->keypos = part->pos;
	kv->value = v;

	if ((p->nused + 1) * 2 > p->nslots) {
		size_t nslots = p->nslots != 0 ? p->nslots * 2 : 64;
		struct slot *slots = xcalloc(nslots, sizeof(*slots));
		for (size_t i = 0; i < p->nslots; i++) {
			if (p->slots[i].table != NULL)
				slot_put(slots, nslots, p->slots[i].table, p->slots[i].idx,
				         p->slots[i].hash);
		}
		free(p->slots);
		p->slots = slots;
		p->nslots = nslots;
	}
	slot_put(p->slots, p->nslots, t, t->u.table.len, key_hash(t, kv->key, kv->keylen));
	p->nused++;
	t->u.table.len++;
}

/* ---- strings ------------------------------------------------------------- */

static int buf_add(struct parser *p, struct mg_buf *b, const char *s, size_t n)
{
	struct mg_err *e = NULL;
	if (mg_buf_append(b, s, n, &e) < 0) {
		/* cannot happen: decoded text is never longer than the input */
		int r = fail(p, here(p), "string too long: %s", mg_err_msg(e));
		mg_err_free(e);
		return r;
	}
	return 0;
}

/* At '\\' in a basic string: append the escaped character. */
static int parse_escape(struct parser *p, struct mg_buf *b)
{
	struct toml_pos at = here(p);
	int c = peek_at(p, 1);
	char ch;
	switch (c) {
	case 'b':
		ch = '\b';
		break;
	case 't':
		ch = '\t';
		break;
	case 'n':
		ch = '\n';
		break;
	case 'f':
		ch = '\f';
		break;
	case 'r':
		ch = '\r';
		break;
	case '"':
		ch = '"';
		break;
	case '\\':
		ch = '\\';
		break;
	case 'u':
	case 'U': {
		size_t ndig = c == 'u' ? 4 : 8;
		uint32_t cp = 0;
		for (size_t i = 0; i < ndig; i++) {
			int h = hex_value(peek_at(p, 2 + i));
			if (h < 0)
				return fail(p, at, "invalid escape: \\%c needs %zu hex digits", c,
				            ndig);
			cp = cp << 4 | (uint32_t)h;
		}
		char enc[4];
		size_t n = mg_utf8_encode(cp, enc);
		if (n == 0)
			return fail(p, at, "invalid escape: U+%X is not a unicode scalar value",
			            (unsigned)cp);
		p->off += 2 + ndig;
		return buf_add(p, b, enc, n);
	}
	default:
		if (c >= 0x20 && c < 0x7F)
			return fail(p, at, "invalid escape \"\\%c\"", c);
		return fail(p, at, "invalid escape");
	}
	p->off += 2;
	return buf_add(p, b, &ch, 1);
}

/* Append the run of ordinary characters at p->off (none of stop, no
 * backslash when escapes apply, no newline or control character). */
static int add_run(struct parser *p, struct mg_buf *b, char stop, bool escapes)
{
	size_t start = p->off;
	while (p->off < p->len) {
		unsigned char c = (unsigned char)p->text[p->off];
		if (c == (unsigned char)stop || (escapes && c == '\\') || is_bad_control(c))
			break;
		p->off++;
	}
	return buf_add(p, b, p->text + start, p->off - start);
}

/* A one-line string at the opening quote: basic ("...") or literal ('...'). */
static int parse_line_string(struct parser *p, char **out, size_t *outlen)
{
	struct toml_pos at = here(p);
	char q = p->text[p->off];
	bool escapes = q == '"';
	struct mg_buf b = MG_BUF_INIT(p->len);
	p->off++;
	for (;;) {
		int c = peek(p);
		if (c < 0 || c == '\n' || (c == '\r' && peek_at(p, 1) == '\n')) {
			fail(p, at, "unterminated string");
			goto fail;
		}
		if (c == q) {
			p->off++;
			break;
		}
		if (escapes && c == '\\') {
			if (parse_escape(p, &b) < 0)
				goto fail;
		} else if (is_bad_control((unsigned char)c)) {
			fail_control(p, "string");
			goto fail;
		} else if (add_run(p, &b, q, escapes) < 0) {
			goto fail;
		}
	}
	*out = mg_buf_steal(&b, outlen);
	return 0;
fail:
	mg_buf_free(&b);
	return -1;
}

/* A multi-line string at the first of its three opening quotes. */
static int parse_multi_string(struct parser *p, char **out, size_t *outlen)
{
	struct toml_pos at = here(p);
	char q = p->text[p->off];
	bool escapes = q == '"';
	struct mg_buf b = MG_BUF_INIT(p->len);
	p->off += 3;
	if (at_newline(p))
		eat_newline(p); /* a newline right after the delimiter is trimmed */
	for (;;) {
		int c = peek(p);
		if (c < 0) {
			fail(p, at, "unterminated multi-line string");
			goto fail;
		}
		if (c == q) {
			size_t run = 0;
			while (peek_at(p, run) == q)
				run++;
			if (run >= 3) {
				/* up to two quotes may end the content before the delimiter */
				if (run > 5) {
					fail(p, pos_at(p, p->off + 5),
					     "too many quotes in multi-line string");
					goto fail;
				}
				if (buf_add(p, &b, p->text + p->off, run - 3) < 0)
					goto fail;
				p->off += run;
				break;
			}
			if (buf_add(p, &b, p->text + p->off, run) < 0)
				goto fail;
			p->off += run;
		} else if (at_newline(p)) {
			if (buf_add(p, &b, "\n", 1) < 0)
				goto fail;
			eat_newline(p);
		} else if (escapes && c == '\\') {
			/* a backslash ending a line trims all whitespace and newlines after it */
			size_t k = 1;
			while (peek_at(p, k) == ' ' || peek_at(p, k) == '\t')
				k++;
			int nc = peek_at(p, k);
			if (nc == '\n' || (nc == '\r' && peek_at(p, k + 1) == '\n')) {
				p->off += k;
				while (at_newline(p) || peek(p) == ' ' || peek(p) == '\t') {
					if (at_newline(p))
						eat_newline(p);
					else
						p->off++;
				}
			} else if (parse_escape(p, &b) < 0) {
				goto fail;
			}
		} else if (is_bad_control((unsigned char)c)) {
			fail_control(p, "string");
			goto fail;
		} else if (add_run(p, &b, q, escapes) < 0) {
			goto fail;
		}
	}
	*out = mg_buf_steal(&b, outlen);
	return 0;
fail:
	mg_buf_free(&b);
	return -1;
}

/* ---- keys ------------------------------------------------------------------ */

static void key_free(struct key *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->parts[i].s);
	free(k->parts);
	k->parts = NULL;
	k->n = k->cap = 0;
}

/* simple-key *( ws "." ws simple-key ), then any whitespace after it. */
static int parse_key(struct parser *p, struct key *k)
{
	for (;;) {
		struct key_part part = {NULL, 0, here(p)};
		int c = peek(p);
		if (c == '"' || c == '\'') {
			if (parse_line_string(p, &part.s, &part.len) < 0)
				return -1;
		} else if (is_bare_key_char(c)) {
			size_t start = p->off;
			while (is_bare_key_char(peek(p)))
				p->off++;
			part.len = p->off - start;
			part.s = xstrndup(p->text + start, part.len);
		} else {
			return fail_found(p, "a key");
		}
		if (k->n == k->cap) {
			k->cap = k->cap != 0 ? k->cap * 2 : 4;
			k->parts = xreallocarray(k->parts, k->cap, sizeof(*k->parts));
		}
		k->parts[k->n++] = part;
		if (k->n > TOML_MAX_DEPTH)
			return fail(p, part.pos, "nesting too deep (more than %d levels)",
			            TOML_MAX_DEPTH);
		skip_ws(p);
		if (peek(p) != '.')
			return 0;
		p->off++;
		skip_ws(p);
	}
}

/* ---- scalars --------------------------------------------------------------- */

static bool is_token_char(int c)
{
	return is_bare_key_char(c) || c == '+' || c == '.' || c == ':';
}

static bool is_base_digit(int c, int base)
{
	switch (base) {
	case 2:
		return c == '0' || c == '1';
	case 8:
		return c >= '0' && c <= '7';
	case 16:
		return hex_value(c) >= 0;
	default:
		return is_digit(c);
	}
}

/* Length of the digits at s (single underscores between digits allowed);
 * 0 when there is no digit or an underscore is misplaced. */
static size_t digits_len(const char *s, size_t n, int base)
{
	if (n == 0 || !is_base_digit(s[0], base))
		return 0;
	size_t i = 1;
	while (i < n) {
		if (s[i] == '_') {
			if (i + 1 >= n || !is_base_digit(s[i + 1], base))
				return 0;
			i += 2;
		} else if (is_base_digit(s[i], base)) {
			i++;
		} else {
			break;
		}
	}
	return i;
}

/* Copy s without underscores into a new string. */
static char *strip_underscores(const char *s, size_t n, size_t *outlen)
{
	char *d = xmalloc(n + 1);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '_')
			d[k++] = s[i];
	}
	d[k] = '\0';
	*outlen = k;
	return d;
}

static int parse_number(struct parser *p, struct toml_pos at, const char *s, size_t n,
                        struct toml_value **out)
{
	int tn = n > 64 ? 64 : (int)n; /* how much of the token messages show */
	size_t i = 0;
	bool neg = false;
	if (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-';
		i = 1;
	}
	const char *r = s + i;
	size_t rn = n - i;
	if ((rn == 3 && memcmp(r, "inf", 3) == 0) || (rn == 3 && memcmp(r, "nan", 3) == 0)) {
		*out = value_new(TOML_FLOAT, at, 0);
		double v = r[0] == 'i' ? INFINITY : NAN;
		(*out)->u.flt = neg ? -v : v;
		return 0;
	}
	if (rn > 2 && r[0] == '0' && (r[1] == 'x' || r[1] == 'o' || r[1] == 'b')) {
		int base = r[1] == 'x' ? 16 : r[1] == 'o' ? 8 : 2;
		if (i != 0)
			return fail(p, at,
			            "invalid integer \"%.*s\": no sign allowed with a prefix", tn,
			            s);
		size_t d = digits_len(r + 2, rn - 2, base);
		if (d == 0 || d != rn - 2)
			return fail(p, at, "invalid integer \"%.*s\"", tn, s);
		uint64_t v = 0;
		for (size_t j = 2; j < rn; j++) {
			if (r[j] == '_')
				continue;
			unsigned dv = (unsigned)hex_value(r[j]);
			if (v > ((uint64_t)INT64_MAX - dv) / (unsigned)base)
				return fail(p, at, "integer \"%.*s\" out of range", tn, s);
			v = v * (unsigned)base + dv;
		}
		*out = value_new(TOML_INTEGER, at, 0);
		(*out)->u.integer = (int64_t)v;
		return 0;
	}

	/* decimal: dec-int [ "." digits ] [ ("e" / "E") [sign] digits ] */
	size_t intlen = digits_len(r, rn, 10);
	if (intlen == 0)
		return fail(p, at, "invalid number \"%.*s\"", tn, s);
	if (r[0] == '0' && intlen > 1)
		return fail(p, at, "invalid number \"%.*s\": leading zero", tn, s);
	size_t j = intlen;
	if (j == rn) {
		size_t dn;
		cleanup_free char *digits = strip_underscores(r, rn, &dn);
		uint64_t mag;
		uint64_t max = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
		if (mg_parse_u64n(digits, dn, 0, max, "integer", &mag, NULL) < 0)
			return fail(p, at, "integer \"%.*s\" out of range", tn, s);
		*out = value_new(TOML_INTEGER, at, 0);
		(*out)->u.integer = neg ? (int64_t)(0 - mag) : (int64_t)mag;
		return 0;
	}
	bool is_float = false;
	if (r[j] == '.') {
		size_t f = digits_len(r + j + 1, rn - j - 1, 10);
		if (f == 0)
			return fail(p, at, "invalid float \"%.*s\"", tn, s);
		j += 1 + f;
		is_float = true;
	}
	if (j < rn && (r[j] == 'e' || r[j] == 'E')) {
		j++;
		if (j < rn && (r[j] == '+' || r[j] == '-'))
			j++;
		size_t e = digits_len(r + j, rn - j, 10);
		if (e == 0)
			return fail(p, at, "invalid float \"%.*s\"", tn, s);
		j += e;
		is_float = true;
	}
	if (!is_float || j != rn)
		return fail(p, at, "invalid number \"%.*s\"", tn, s);
	size_t dn;
	cleanup_free char *digits = strip_underscores(s, n, &dn);
	errno = 0;
	char *end = NULL;
	double v = strtod(digits, &end);
	if (end != digits + dn)
		return fail(p, at, "invalid float \"%.*s\"", tn, s);
	if (errno == ERANGE && isinf(v))
		return fail(p, at, "float \"%.*s\" out of range", tn, s);
	*out = value_new(TOML_FLOAT, at, 0);
	(*out)->u.flt = v;
	return 0;
}

/* The 2-digit number at s (both checked to be digits by the caller). */
static unsigned two(const char *s)
{
	return (unsigned)(s[0] - '0') * 10 + (unsigned)(s[1] - '0');
}

static bool digits_at(const char *s, size_t n, size_t off, size_t count)
{
	if (off > n || n - off < count)
		return false;
	for (size_t i = 0; i < count; i++) {
		if (!is_digit(s[off + i]))
			return false;
	}
	return true;
}

static unsigned days_in_month(unsigned year, unsigned month)
{
	static const unsigned char days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	if (month == 2 && (year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)))
		return 29;
	return days[month - 1];
}

/* s[0, n) looks like a date (DDDD-) or a time (DD:). */
static int parse_datetime(struct parser *p, struct toml_pos at, const char *s, size_t n,
                          struct toml_value **out)
{
	int tn = n > 64 ? 64 : (int)n;
	size_t i = 0;
	bool has_date = false, has_time = false, has_offset = false;
	if (n >= 5 && s[4] == '-') {
		if (!digits_at(s, n, 0, 4) || !digits_at(s, n, 5, 2) || n < 8 || s[7] != '-' ||
		    !digits_at(s, n, 8, 2))
			return fail(p, at, "malformed date \"%.*s\"", tn, s);
		unsigned year = two(s) * 100 + two(s + 2), month = two(s + 5), day = two(s + 8);
		if (month < 1 || month > 12 || day < 1 || day > days_in_month(year, month))
			return fail(p, at, "invalid date \"%.*s\"", tn, s);
		has_date = true;
		i = 10;
		if (i < n) {
			if (s[i] != 'T' && s[i] != 't' && s[i] != ' ')
				return fail(p, at, "malformed date-time \"%.*s\"", tn, s);
			i++;
			has_time = true;
		}
	} else {
		has_time = true;
	}
	if (has_time) {
		if (!digits_at(s, n, i, 2) || n - i < 3 || s[i + 2] != ':' ||
		    !digits_at(s, n, i + 3, 2) || n - i < 6 || s[i + 5] != ':' ||
		    !digits_at(s, n, i + 6, 2))
			return fail(p, at, "malformed time \"%.*s\"", tn, s);
		/* seconds may be 60: RFC 3339 allows a leap second */
		if (two(s + i) > 23 || two(s + i + 3) > 59 || two(s + i + 6) > 60)
			return fail(p, at, "invalid time \"%.*s\"", tn, s);
		i += 8;
		if (i < n && s[i] == '.') {
			size_t d = 0;
			while (i + 1 + d < n && is_digit(s[i + 1 + d]))
				d++;
			if (d == 0)
				return fail(p, at, "malformed time \"%.*s\"", tn, s);
			i += 1 + d;
		}
		if (has_date && i < n) {
			if (s[i] == 'Z' || s[i] == 'z') {
				i++;
			} else if (s[i] == '+' || s[i] == '-') {
				if (!digits_at(s, n, i + 1, 2) || n - i < 4 || s[i + 3] != ':' ||
				    !digits_at(s, n, i + 4, 2))
					return fail(p, at, "malformed time offset \"%.*s\"", tn, s);
				if (two(s + i + 1) > 23 || two(s + i + 4) > 59)
					return fail(p, at, "invalid time offset \"%.*s\"", tn, s);
				i += 6;
			} else {
				return fail(p, at, "malformed date-time \"%.*s\"", tn, s);
			}
			has_offset = true;
		}
	}
	if (i != n)
		return fail(p, at, "malformed date-time \"%.*s\"", tn, s);
	enum toml_kind kind = !has_time    ? TOML_DATE_LOCAL
	                      : !has_date  ? TOML_TIME_LOCAL
	                      : has_offset ? TOML_DATETIME
	                                   : TOML_DATETIME_LOCAL;
	struct toml_value *v = value_new(kind, at, 0);
	v->u.str.ptr = xstrndup(s, n);
	v->u.str.len = n;
	if (has_date && has_time)
		v->u.str.ptr[10] = 'T';
	if (has_offset && v->u.str.ptr[n - 1] == 'z')
		v->u.str.ptr[n - 1] = 'Z';
	*out = v;
	return 0;
}

/* A bare value: boolean, number or date/time. */
static int parse_bare_value(struct parser *p, struct toml_value **out)
{
	struct toml_pos at = here(p);
	size_t start = p->off;
	while (is_token_char(peek(p)))
		p->off++;
	/* a date, a space, then a time: one local or offset date-time */
	if (p->off - start == 10 && p->text[start + 4] == '-' && peek(p) == ' ' &&
	    is_digit(peek_at(p, 1)) && is_digit(peek_at(p, 2)) && peek_at(p, 3) == ':') {
		p->off++;
		while (is_token_char(peek(p)))
			p->off++;
	}
	const char *s = p->text + start;
	size_t n = p->off - start;
	if (n == 0)
		return fail_found(p, "a value");
	if (n == 4 && memcmp(s, "true", 4) == 0) {
		*out = value_new(TOML_BOOL, at, 0);
		(*out)->u.boolean = true;
		return 0;
	}
	if (n == 5 && memcmp(s, "false", 5) == 0) {
		*out = value_new(TOML_BOOL, at, 0);
		(*out)->u.boolean = false;
		return 0;
	}
	if ((n >= 5 && digits_at(s, n, 0, 4) && s[4] == '-') ||
	    (n >= 3 && digits_at(s, n, 0, 2) && s[2] == ':'))
		return parse_datetime(p, at, s, n, out);
	if (is_digit(s[0]) || s[0] == '+' || s[0] == '-' || s[0] == 'i' || s[0] == 'n')
		return parse_number(p, at, s, n, out);
	return fail(p, at, "invalid value \"%.*s\"", n > 64 ? 64 : (int)n, s);
}

/* ---- values ---------------------------------------------------------------- */

static int parse_value(struct parser *p, unsigned depth, struct toml_value **out);
static int put_keyval(struct parser *p, struct toml_value *tbl);

static int parse_array(struct parser *p, unsigned depth, struct toml_value **out)
{
	struct toml_value *a = container_new(p, TOML_ARRAY, here(p), depth);
	if (a == NULL)
		return -1;
	p->off++;
	for (;;) {
		if (skip_ws_lines(p) < 0)
			goto fail;
		if (peek(p) == ']') {
			p->off++;
			break;
		}
		struct toml_value *v;
		if (parse_value(p, depth + 1, &v) < 0)
			goto fail;
		array_push(a, v);
		if (skip_ws_lines(p) < 0)
			goto fail;
		if (peek(p) == ',') {
			p->off++;
		} else if (peek(p) == ']') {
			p->off++;
			break;
		} else {
			fail_found(p, "',' or ']' in array");
			goto fail;
		}
	}
	*out = a;
	return 0;
fail:
	toml_free(a);
	return -1;
}

static int parse_inline_table(struct parser *p, unsigned depth, struct toml_value **out)
{
	struct toml_value *t = container_new(p, TOML_TABLE, here(p), depth);
	if (t == NULL)
		return -1;
	p->off++;
	skip_ws(p);
	if (peek(p) == '}') {
		p->off++;
	} else {
		for (;;) {
			if (put_keyval(p, t) < 0)
				goto fail;
			skip_ws(p);
			if (peek(p) == '}') {
				p->off++;
				break;
			}
			if (peek(p) != ',') {
				fail_found(p, "',' or '}' in inline table");
				goto fail;
			}
			p->off++;
			skip_ws(p);
			if (peek(p) == '}') {
				fail(p, here(p), "trailing comma in inline table");
				goto fail;
			}
		}
	}
	t->flags |= TF_INLINE;
	*out = t;
	return 0;
fail:
	toml_free(t);
	return -1;
}

/* The value at p->off; depth is the depth it will have in the tree. */
static int parse_value(struct parser *p, unsigned depth, struct toml_value **out)
{
	struct toml_pos at = here(p);
	int c = peek(p);
	if (c == '"' || c == '\'') {
		char *s;
		size_t n;
		int r = peek_at(p, 1) == c && peek_at(p, 2) == c ? parse_multi_string(p, &s, &n)
		                                                 : parse_line_string(p, &s, &n);
		if (r < 0)
			return -1;
		*out = value_new(TOML_STRING, at, depth);
		(*out)->u.str.ptr = s;
		(*out)->u.str.len = n;
		return 0;
	}
	if (c == '[')
		return parse_array(p, depth, out);
	if (c == '{')
		return parse_inline_table(p, depth, out);
	if (!is_token_char(c))
		return fail_found(p, "a value");
	return parse_bare_value(p, out);
}

/* ---- key/value pairs and headers ------------------------------------------ */

/* Walk the dotted key k from tbl to the table that gets its last part,
 * creating tables on the way. NULL (error set) when the way is closed or
 * the last part is already there. */
static struct toml_value *walk_dotted(struct parser *p, struct toml_value *tbl, const struct key *k)
{
	struct toml_value *t = tbl;
	for (size_t i = 0; i + 1 < k->n; i++) {
		const struct key_part *part = &k->parts[i];
		struct toml_kv *kv = lookup(p, t, part->s, part->len);
		if (kv == NULL) {
			struct toml_value *sub =
			    container_new(p, TOML_TABLE, part->pos, depth_of(t) + 1);
			if (sub == NULL)
				return NULL;
			sub->flags |= TF_DOTTED;
			table_insert(p, t, part, sub);
			t = sub;
			continue;
		}
		struct toml_value *v = kv->value;
		if (v->kind != TOML_TABLE) {
			fail_key(p, part->pos, k, i, "duplicate key", "");
			return NULL;
		}
		if (v->flags & TF_INLINE) {
			fail_key(p, part->pos, k, i, "cannot extend inline table", "");
			return NULL;
		}
		if (v->flags & TF_HEADER) {
			fail_key(p, part->pos, k, i, "dotted key cannot extend table",
			         " defined by a header");
			return NULL;
		}
		if (v->flags & TF_IMPLICIT) {
			/* from now on it counts as defined by dotted keys */
			v->flags = (v->flags & ~(unsigned)TF_IMPLICIT) | TF_DOTTED;
		}
		t = v;
	}
	const struct key_part *last = &k->parts[k->n - 1];
	if (lookup(p, t, last->s, last->len) != NULL) {
		fail_key(p, last->pos, k, k->n - 1, "duplicate key", "");
		return NULL;
	}
	return t;
}

/* key = value, into tbl (the current section's table, or an inline table). */
static int put_keyval(struct parser *p, struct toml_value *tbl)
{
	struct key k = {NULL, 0, 0};
	struct toml_value *parent, *v;
	int r = -1;
	if (parse_key(p, &k) < 0)
		goto out;
	if (peek(p) != '=') {
		fail_found(p, "'=' after a key");
		goto out;
	}
	p->off++;
	skip_ws(p);
	if ((parent = walk_dotted(p, tbl, &k)) == NULL)
		goto out;
	if (parse_value(p, depth_of(parent) + 1, &v) < 0)
		goto out;
	table_insert(p, parent, &k.parts[k.n - 1], v);
	r = 0;
out:
	key_free(&k);
	return r;
}

/* The table a [header] or [[header]] path leads to through all parts but
 * the last, creating missing ones as implicit tables; NULL (error set) when
 * the way is closed. */
static struct toml_value *walk_header(struct parser *p, struct toml_value *root,
                                      const struct key *k)
{
	struct toml_value *t = root;
	for (size_t i = 0; i + 1 < k->n; i++) {
		const struct key_part *part = &k->parts[i];
		struct toml_kv *kv = lookup(p, t, part->s, part->len);
		if (kv == NULL) {
			struct toml_value *sub =
			    container_new(p, TOML_TABLE, part->pos, depth_of(t) + 1);
			if (sub == NULL)
				return NULL;
			sub->flags |= TF_IMPLICIT;
			table_insert(p, t, part, sub);
			t = sub;
			continue;
		}
		struct toml_value *v = kv->value;
		if (v->kind == TOML_ARRAY && (v->flags & TF_AOT)) {
			/* the most recent element of an array of tables */
			t = v->u.array.items[v->u.array.len - 1];
		} else if (v->kind == TOML_ARRAY) {
			fail_key(p, part->pos, k, i, "cannot extend static array", "");
			return NULL;
		} else if (v->kind != TOML_TABLE) {
			fail_key(p, part->pos, k, i, "duplicate key", "");
			return NULL;
		} else if (v->flags & TF_INLINE) {
			fail_key(p, part->pos, k, i, "cannot extend inline table", "");
			return NULL;
		} else {
			t = v;
		}
	}
	return t;
}

static int define_table(struct parser *p, struct toml_value *root, const struct key *k,
                        struct toml_pos at, struct toml_value **cur)
{
	struct toml_value *t = walk_header(p, root, k);
	if (t == NULL)
		return -1;
	const struct key_part *last = &k->parts[k->n - 1];
	struct toml_kv *kv = lookup(p, t, last->s, last->len);
	if (kv == NULL) {
		struct toml_value *sub = container_new(p, TOML_TABLE, at, depth_of(t) + 1);
		if (sub == NULL)
			return -1;
		sub->flags |= TF_HEADER;
		table_insert(p, t, last, sub);
		*cur = sub;
		return 0;
	}
	struct toml_value *v = kv->value;
	if (v->kind == TOML_TABLE && (v->flags & TF_INLINE))
		return fail_key(p, last->pos, k, k->n - 1, "cannot extend inline table", "");
	if (v->kind == TOML_TABLE && (v->flags & TF_IMPLICIT)) {
		v->flags = (v->flags & ~(unsigned)TF_IMPLICIT) | TF_HEADER;
		v->pos = at;
		kv->keypos = last->pos;
		*cur = v;
		return 0;
	}
	if (v->kind == TOML_TABLE || (v->kind == TOML_ARRAY && (v->flags & TF_AOT)))
		return fail_key(p, last->pos, k, k->n - 1, "table", " redefined");
	return fail_key(p, last->pos, k, k->n - 1, "duplicate key", "");
}

static int define_array_table(struct parser *p, struct toml_value *root, const struct key *k,
                              struct toml_pos at, struct toml_value **cur)
{
	struct toml_value *t = walk_header(p, root, k);
	if (t == NULL)
		return -1;
	const struct key_part *last = &k->parts[k->n - 1];
	struct toml_kv *kv = lookup(p, t, last->s, last->len);
	struct toml_value *arr;
	if (kv == NULL) {
		arr = container_new(p, TOML_ARRAY, at, depth_of(t) + 1);
		if (arr == NULL)
			return -1;
		/* check the element's depth before the array goes into the tree */
		if (depth_of(arr) + 1 > TOML_MAX_DEPTH) {
			toml_free(arr);
			return fail(p, at, "nesting too deep (more than %d levels)",
			            TOML_MAX_DEPTH);
		}
		arr->flags |= TF_AOT;
		table_insert(p, t, last, arr);
	} else if (kv->value->kind == TOML_ARRAY && (kv->value->flags & TF_AOT)) {
		arr = kv->value;
	} else if (kv->value->kind == TOML_ARRAY) {
		return fail_key(p, last->pos, k, k->n - 1, "cannot append to static array", "");
	} else if (kv->value->kind == TOML_TABLE) {
		return fail_key(p, last->pos, k, k->n - 1, "table", " redefined");
	} else {
		return fail_key(p, last->pos, k, k->n - 1, "duplicate key", "");
	}
	struct toml_value *elem = container_new(p, TOML_TABLE, at, depth_of(arr) + 1);
	if (elem == NULL)
		return -1;
	elem->flags |= TF_HEADER;
	array_push(arr, elem);
	*cur = elem;
	return 0;
}

/* At '[': a [table] or [[array of tables]] header; *cur becomes its table. */
static int parse_header(struct parser *p, struct toml_value *root, struct toml_value **cur)
{
	struct toml_pos at = here(p);
	bool aot = peek_at(p, 1) == '[';
	struct key k = {NULL, 0, 0};
	int r = -1;
	p->off += aot ? 2 : 1;
	skip_ws(p);
	if (parse_key(p, &k) < 0)
		goto out;
	if (peek(p) != ']' || (aot && peek_at(p, 1) != ']')) {
		fail_found(p, aot ? "']]' after the array of tables name"
		                  : "']' after the table name");
		goto out;
	}
	p->off += aot ? 2 : 1;
	r = aot ? define_array_table(p, root, &k, at, cur) : define_table(p, root, &k, at, cur);
out:
	key_free(&k);
	return r;
}

/* After an expression: whitespace, an optional comment, then a newline or
 * the end of the text. */
static int end_of_line(struct parser *p, const char *after)
{
	skip_ws(p);
	if (peek(p) == '#' && skip_comment(p) < 0)
		return -1;
	if (p->off >= p->len)
		return 0;
	if (at_newline(p)) {
		eat_newline(p);
		return 0;
	}
	cleanup_free char *what = xasprintf("a newline after %s", after);
	return fail_found(p, what);
}

/* Line and column of a byte offset, counted from the start (for the one
 * error that is found before the parse walks the text). */
static struct toml_pos pos_of_offset(const char *text, size_t off)
{
	struct toml_pos pos = {1, 1};
	size_t lstart = 0;
	for (size_t i = 0; i < off; i++) {
		if (text[i] == '\n') {
			pos.line++;
			lstart = i + 1;
		}
	}
	size_t col = off - lstart + 1;
	pos.col = col > 0xFFFFFFFFu ? 0xFFFFFFFFu : (unsigned)col;
	return pos;
}

int toml_parse(const char *text, size_t len, const char *filename, struct toml_value **out,
               struct mg_err **err)
{
	struct parser p = {
	    .text = text != NULL ? text : "",
	    .len = text != NULL ? len : 0,
	    .line = 1,
	    .filename = filename != NULL ? filename : "<input>",
	    .err = err,
	};
	*out = NULL;
	size_t bad = mg_utf8_check(p.text, p.len);
	if (bad != p.len)
		return fail(&p, pos_of_offset(p.text, bad), "invalid UTF-8");
	if (p.len >= 3 && memcmp(p.text, "\xEF\xBB\xBF", 3) == 0)
		p.off = p.lstart = 3;

	struct toml_pos start = {1, 1};
	struct toml_value *root = value_new(TOML_TABLE, start, 0);
	struct toml_value *cur = root;
	for (;;) {
		skip_ws(&p);
		if (p.off >= p.len)
			break;
		int c = peek(&p);
		const char *after = "a comment";
		if (c == '[') {
			if (parse_header(&p, root, &cur) < 0)
				goto fail;
			after = "a table header";
		} else if (c != '#' && !at_newline(&p)) {
			if (put_keyval(&p, cur) < 0)
				goto fail;
			after = "a value";
		}
		if (end_of_line(&p, after) < 0)
			goto fail;
	}
	free(p.slots);
	*out = root;
	return 0;
fail:
	free(p.slots);
	toml_free(root);
	return -1;
}

/* ---- lookups ----------------------------------------------------------------- */

const struct toml_value *toml_get(const struct toml_value *t, const char *key)
{
	if (t == NULL || key == NULL || t->kind != TOML_TABLE)
		return NULL;
	size_t n = strlen(key);
	for (size_t i = 0; i < t->u.table.len; i++) {
		const struct toml_kv *kv = &t->u.table.items[i];
		if (kv->keylen == n && memcmp(kv->key, key, n) == 0)
			return kv->value;
	}
	return NULL;
}

const char *toml_kind_name(enum toml_kind kind)
{
	switch (kind) {
	case TOML_TABLE:
		return "table";
	case TOML_ARRAY:
		return "array";
	case TOML_STRING:
		return "string";
	case TOML_INTEGER:
		return "integer";
	case TOML_FLOAT:
		return "float";
	case TOML_BOOL:
		return "boolean";
	case TOML_DATETIME:
		return "datetime";
	case TOML_DATETIME_LOCAL:
		return "local datetime";
	case TOML_DATE_LOCAL:
		return "local date";
	case TOML_TIME_LOCAL:
		return "local time";
	}
	return "unknown";
}
