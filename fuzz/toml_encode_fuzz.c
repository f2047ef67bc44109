/* libFuzzer target: the TOML encoder against the parser. The first byte
 * picks what the rest is: a string value, a key, a comment's text, or a
 * document whose every top-level value is written back. It traps when a
 * value encoded does not parse back as that very value (one key, the same
 * bytes), when a comment does not stay one comment line, or when text that
 * is not UTF-8 is encoded at all. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal/base/buf.h"
#include "internal/base/utf8.h"
#include "internal/base/xalloc.h"
#include "internal/toml/toml.h"
#include "internal/toml/toml_change.h"
#include "internal/toml/toml_encode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct toml_value *parse_or_trap(const struct mg_buf *b)
{
	struct toml_value *root = NULL;
	if (toml_parse(b->data, b->len, "fuzz.toml", &root, NULL) < 0)
		__builtin_trap();
	return root;
}

static void as_value(const char *s, size_t n)
{
	struct mg_buf b = MG_BUF_INIT((size_t)1 << 24);
	mg_buf_puts(&b, "k = ", NULL);
	bool utf8 = mg_utf8_check(s, n) == n;
	if (toml_encode_string(&b, s, n, NULL) < 0) {
		if (utf8 || b.len != 4)
			__builtin_trap();
		mg_buf_free(&b);
		return;
	}
	if (!utf8)
		__builtin_trap();
	mg_buf_puts(&b, "\nafter = 1\n", NULL);
	struct toml_value *root = parse_or_trap(&b);
	const struct toml_value *k = toml_get(root, "k");
	if (root->u.table.len != 2 || k == NULL || k->kind != TOML_STRING || k->u.str.len != n ||
	    memcmp(k->u.str.ptr, s, n) != 0)
		__builtin_trap();
	for (size_t i = 0; i < b.len; i++) {
		uint32_t cp = 0;
		size_t len = mg_utf8_seq((const unsigned char *)b.data + i, b.len - i, &cp);
		if (len == 0 || (mg_cp_hidden(cp) && cp != '\n'))
			__builtin_trap();
		i += len - 1;
	}
	toml_free(root);
	mg_buf_free(&b);
}

static void as_key(const char *s, size_t n)
{
	struct mg_buf b = MG_BUF_INIT((size_t)1 << 24);
	if (toml_encode_key(&b, s, n, NULL) < 0) {
		if (mg_utf8_check(s, n) == n)
			__builtin_trap();
		mg_buf_free(&b);
		return;
	}
	mg_buf_puts(&b, " = 1\n", NULL);
	struct toml_value *root = parse_or_trap(&b);
	if (root->u.table.len != 1 || root->u.table.items[0].keylen != n ||
	    memcmp(root->u.table.items[0].key, s, n) != 0)
		__builtin_trap();
	toml_free(root);
	mg_buf_free(&b);
}

static void as_comment(const char *s, size_t n)
{
	char *text = xstrndup(s, n);
	struct mg_buf b = MG_BUF_INIT((size_t)1 << 24);
	if (toml_encode_comment(&b, text, "\n", NULL) < 0)
		__builtin_trap();
	size_t line = b.len;
	mg_buf_puts(&b, "only = 1\n", NULL);
	struct toml_value *root = parse_or_trap(&b);
	if (root->u.table.len != 1 || toml_get(root, "only") == NULL ||
	    memchr(b.data, '\n', line - 1) != NULL)
		__builtin_trap();
	toml_free(root);
	mg_buf_free(&b);
	free(text);
}

/* every top-level value of a document that parses, written back */
static void as_document(const char *s, size_t n)
{
	struct toml_value *root = NULL;
	if (toml_parse(s, n, "fuzz.toml", &root, NULL) < 0)
		return;
	struct mg_buf b = MG_BUF_INIT((size_t)1 << 26);
	for (size_t i = 0; i < root->u.table.len; i++) {
		const struct toml_kv *kv = &root->u.table.items[i];
		if (toml_encode_key(&b, kv->key, kv->keylen, NULL) < 0 ||
		    mg_buf_puts(&b, " = ", NULL) < 0 ||
		    toml_encode_value(&b, kv->value, NULL) < 0 || mg_buf_putc(&b, '\n', NULL) < 0)
			__builtin_trap();
	}
	struct toml_value *again = NULL;
	if (toml_parse(b.data != NULL ? b.data : "", b.len, "again.toml", &again, NULL) < 0 ||
	    toml_compare(root, again, NULL) < 0)
		__builtin_trap();
	toml_free(again);
	toml_free(root);
	mg_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	const char *s = (const char *)data + 1;
	size_t n = size - 1;
	switch (data[0] % 4) {
	case 0:
		as_value(s, n);
		break;
	case 1:
		as_key(s, n);
		break;
	case 2:
		as_comment(s, n);
		break;
	default:
		as_document(s, n);
		break;
	}
	return 0;
}
