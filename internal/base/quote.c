/* String literals for JSON and TOML basic strings, escaped one way. */
#include "internal/base/quote.h"

#include <stdint.h>

#include "internal/base/utf8.h"

static int quote_append(const char *s, size_t len, enum mg_quote_mode mode, struct mg_buf *out,
                        struct mg_err **err)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	size_t run = 0; /* start of the bytes not yet written */
	size_t i = 0;

	if (mg_buf_putc(out, '"', err) < 0)
		return -1;
	while (i < len) {
		uint32_t cp = u[i];
		size_t k = 1;
		if (u[i] >= 0x80) {
			k = mg_utf8_seq(u + i, len - i, &cp);
			if (k == 0)
				return mg_err_set(err, "invalid UTF-8 at byte %zu of a string", i);
			if (mode == MG_QUOTE_CANONICAL || !mg_cp_hidden(cp)) {
				i += k;
				continue;
			}
		}
		char esc[12] = {'\\', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
		size_t esclen = 2;
		switch (cp) {
		case '"':
			esc[1] = '"';
			break;
		case '\\':
			esc[1] = '\\';
			break;
		case '\b':
			esc[1] = 'b';
			break;
		case '\t':
			esc[1] = 't';
			break;
		case '\n':
			esc[1] = 'n';
			break;
		case '\f':
			esc[1] = 'f';
			break;
		case '\r':
			esc[1] = 'r';
			break;
		default:
			if (cp >= 0x20 && cp != 0x7f && cp < 0x80) {
				i++;
				continue;
			}
			/* a C0 control or DEL, or (text) a character that must not
			 * stand as it is; past the BMP (a tag character) as its
			 * UTF-16 surrogate pair, as JSON writes it */
			esclen = 0;
			uint32_t units[2] = {cp, 0};
			size_t nunits = 1;
			if (cp > 0xffff) {
				units[0] = 0xd800 + ((cp - 0x10000) >> 10);
				units[1] = 0xdc00 + ((cp - 0x10000) & 0x3ff);
				nunits = 2;
			}
			for (size_t n = 0; n < nunits; n++) {
				esc[esclen++] = '\\';
				esc[esclen++] = 'u';
				esc[esclen++] = hex[(units[n] >> 12) & 0xf];
				esc[esclen++] = hex[(units[n] >> 8) & 0xf];
				esc[esclen++] = hex[(units[n] >> 4) & 0xf];
				esc[esclen++] = hex[units[n] & 0xf];
			}
			break;
		}
		if (mg_buf_append(out, s + run, i - run, err) < 0 ||
		    mg_buf_append(out, esc, esclen, err) < 0)
			return -1;
		i += k;
		run = i;
	}
	if (mg_buf_append(out, s + run, len - run, err) < 0 || mg_buf_putc(out, '"', err) < 0)
		return -1;
	return 0;
}

int mg_quote(const char *s, size_t len, enum mg_quote_mode mode, struct mg_buf *out,
             struct mg_err **err)
{
	size_t start = out->len;
	if (quote_append(s, len, mode, out, err) < 0) {
		mg_buf_truncate(out, start);
		return -1;
	}
	return 0;
}
