#include "internal/base/utf8.h"

#include <stdbool.h>

#include "internal/base/buf.h"

size_t mg_utf8_seq(const unsigned char *p, size_t avail, uint32_t *cp)
{
	if (avail == 0)
		return 0;
	unsigned char c = p[0];
	size_t n;
	uint32_t v, min;
	if (c < 0x80) {
		if (cp != NULL)
			*cp = c;
		return 1;
	} else if ((c & 0xE0) == 0xC0) {
		n = 2, v = c & 0x1F, min = 0x80;
	} else if ((c & 0xF0) == 0xE0) {
		n = 3, v = c & 0x0F, min = 0x800;
	} else if ((c & 0xF8) == 0xF0) {
		n = 4, v = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (avail < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		v = (v << 6) | (p[i] & 0x3F);
	}
	if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
		return 0;
	if (cp != NULL)
		*cp = v;
	return n;
}

size_t mg_utf8_check(const char *p, size_t n)
{
	const unsigned char *u = (const unsigned char *)p;
	size_t i = 0;
	while (i < n) {
		if (u[i] < 0x80) {
			i++;
			continue;
		}
		size_t k = mg_utf8_seq(u + i, n - i, NULL);
		if (k == 0)
			return i;
		i += k;
	}
	return n;
}

size_t mg_utf8_encode(uint32_t cp, char *out)
{
	if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
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

bool mg_cp_hidden(uint32_t cp)
{
	/* controls, lines and paragraphs that are not \n, and Unicode's
	 * default-ignorable code points: bidi controls, zero-width characters,
	 * fillers, variation selectors, tags */
	static const struct {
		uint32_t lo, hi;
	} ranges[] = {
	    {0x00, 0x1f},       {0x7f, 0x9f},       {0xad, 0xad},       {0x34f, 0x34f},
	    {0x61c, 0x61c},     {0x115f, 0x1160},   {0x17b4, 0x17b5},   {0x180b, 0x180f},
	    {0x200b, 0x200f},   {0x2028, 0x202e},   {0x2060, 0x206f},   {0x3164, 0x3164},
	    {0xfe00, 0xfe0f},   {0xfeff, 0xfeff},   {0xffa0, 0xffa0},   {0xfff0, 0xfffb},
	    {0x1bca0, 0x1bca3}, {0x1d173, 0x1d17a}, {0xe0000, 0xe0fff},
	};
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
		if (cp >= ranges[i].lo && cp <= ranges[i].hi)
			return true;
	return false;
}

static char *shown(const char *s, size_t len, bool keep_lines, bool escape_backslash)
{
	struct mg_buf b = MG_BUF_INIT(len * 10 + 1);
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	while (i < len) {
		uint32_t cp = 0;
		size_t n = mg_utf8_seq(p + i, len - i, &cp);
		if (n == 0) {
			mg_buf_printf(&b, NULL, "\\x%02x", p[i]);
			i++;
			continue;
		}
		if (cp == '\n' && keep_lines)
			mg_buf_putc(&b, '\n', NULL);
		else if (cp == '\n')
			mg_buf_puts(&b, "\\n", NULL);
		else if (cp == '\r')
			mg_buf_puts(&b, "\\r", NULL);
		else if (cp == '\t')
			mg_buf_puts(&b, "\\t", NULL);
		else if (cp == '\\' && escape_backslash)
			mg_buf_puts(&b, "\\\\", NULL);
		else if (cp < 0x20 || cp == 0x7f)
			mg_buf_printf(&b, NULL, "\\x%02x", (unsigned)cp);
		else if (mg_cp_hidden(cp))
			mg_buf_printf(&b, NULL, "\\u{%04X}", (unsigned)cp);
		else
			mg_buf_append(&b, p + i, n, NULL);
		i += n;
	}
	return mg_buf_steal(&b, NULL);
}

char *mg_shown(const char *s, size_t len)
{
	return shown(s, len, false, true);
}

char *mg_shown_lines(const char *s, size_t len)
{
	return shown(s, len, true, false);
}

char *mg_utf8_lossy(const char *s, size_t len, size_t *out_len)
{
	struct mg_buf b = MG_BUF_INIT(len * 3 + 1);
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	while (i < len) {
		uint32_t cp;
		size_t n = mg_utf8_seq(p + i, len - i, &cp);
		if (n == 0) {
			mg_buf_append(&b, "\xef\xbf\xbd", 3, NULL);
			i++;
		} else {
			mg_buf_append(&b, p + i, n, NULL);
			i += n;
		}
	}
	return mg_buf_steal(&b, out_len);
}
