#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/err.h"
#include "internal/base/fs.h"
#include "internal/base/log.h"
#include "internal/base/num.h"
#include "internal/base/quote.h"
#include "internal/base/strv.h"
#include "internal/base/suggest.h"
#include "internal/base/testing.h"
#include "internal/base/utf8.h"
#include "internal/base/xalloc.h"

static int fail_inner(struct mg_err **err)
{
	return mg_err_set(err, "duplicate key \"%s\"", "image");
}

static int fail_outer(struct mg_err **err)
{
	if (fail_inner(err) < 0)
		return mg_err_wrap(err, "reading %s", "mcp.toml");
	return 0;
}

static void test_err(void)
{
	struct mg_err *err = NULL;
	T_INT(fail_outer(&err), -1, "a failing call returns -1");
	T_STR(mg_err_msg(err), "reading mcp.toml: duplicate key \"image\"",
	      "context is prefixed on the way up");
	mg_err_clear(&err);
	T_OK(err == NULL, "mg_err_clear leaves NULL");

	T_INT(mg_err_sys(&err, ENOENT, "opening %s", "x"), -1, "mg_err_sys returns -1");
	T_STR(mg_err_msg(err), "opening x: No such file or directory", "strerror is appended");
	T_INT(err->code, ENOENT, "the errno value is kept");
	mg_err_free(err);

	T_INT(fail_outer(NULL), -1, "a NULL err pointer is allowed");
	T_STR(mg_err_msg(NULL), "", "mg_err_msg(NULL) is empty");
	mg_err_free(NULL);
}

static void test_buf(void)
{
	struct mg_buf b = MG_BUF_INIT(8);
	struct mg_err *err = NULL;
	T_STR(mg_buf_str(&b), "", "an empty buffer reads as \"\"");
	T_INT(mg_buf_puts(&b, "abcd", &err), 0, "append within the limit");
	T_INT(mg_buf_printf(&b, &err, "%d", 1234), 0, "printf up to the limit");
	T_STR(mg_buf_str(&b), "abcd1234", "content is kept");
	T_INT(mg_buf_putc(&b, 'x', &err), -1, "one byte past the limit is refused");
	T_OK(err != NULL && strstr(err->msg, "limit of 8 bytes") != NULL,
	     "the error names the limit");
	mg_err_clear(&err);
	T_INT((long long)b.len, 8, "a refused append changes nothing");
	mg_buf_consume(&b, 3);
	T_STR(mg_buf_str(&b), "d1234", "consume drops the front");
	mg_buf_truncate(&b, 9);
	T_STR(mg_buf_str(&b), "d1234", "truncate past the end changes nothing");
	mg_buf_truncate(&b, 4);
	T_STR(mg_buf_str(&b), "d123", "truncate keeps the first bytes");
	mg_buf_putc(&b, '4', NULL);
	T_INT(mg_buf_printf(&b, &err, "%s", "abcdef"), -1, "printf past the limit is refused");
	mg_err_clear(&err);
	size_t len;
	char *s = mg_buf_steal(&b, &len);
	T_STR(s, "d1234", "steal hands over the text");
	T_INT((long long)len, 5, "steal gives the length");
	T_OK(b.data == NULL && b.len == 0, "steal leaves the buffer empty");
	free(s);
	mg_buf_free(&b);
	mg_buf_free(NULL);

	struct mg_buf big = MG_BUF_INIT(1 << 20);
	for (int i = 0; i < 1000; i++)
		mg_buf_puts(&big, "0123456789", NULL);
	T_INT((long long)big.len, 10000, "growth over many appends");
	mg_buf_free(&big);
}

static void test_num(void)
{
	struct mg_err *err = NULL;
	uint64_t u = 0;
	int64_t i = 0;
	T_INT(mg_parse_u64("65535", 1, 65535, "port", &u, &err), 0, "u64 in range");
	T_INT((long long)u, 65535, "u64 value");
	const char *bad[] = {"", " 1", "1 ", "+1", "-1", "1x", "0x10", "1.0", "65536"};
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		T_INT(mg_parse_u64(bad[k], 1, 65535, "port", &u, &err), -1, "u64 refuses \"%s\"",
		      bad[k]);
		T_OK(err != NULL && strncmp(err->msg, "port: ", 6) == 0, "the error names port");
		mg_err_clear(&err);
	}
	T_INT(mg_parse_u64("18446744073709551615", 0, UINT64_MAX, "n", &u, &err), 0, "u64 max");
	T_INT(mg_parse_u64("18446744073709551616", 0, UINT64_MAX, "n", &u, &err), -1,
	      "u64 overflow refused");
	mg_err_clear(&err);
	T_INT(mg_parse_i64("-9223372036854775808", INT64_MIN, INT64_MAX, "n", &i, &err), 0,
	      "i64 min");
	T_OK(i == INT64_MIN, "i64 min value");
	T_INT(mg_parse_i64("9223372036854775808", INT64_MIN, INT64_MAX, "n", &i, &err), -1,
	      "i64 overflow refused");
	mg_err_clear(&err);
	T_INT(mg_parse_i64("-", INT64_MIN, INT64_MAX, "n", &i, &err), -1, "a lone minus refused");
	mg_err_clear(&err);
	T_INT(mg_parse_i64("-5", 0, 10, "n", &i, &err), -1, "i64 below min refused");
	mg_err_clear(&err);
}

static void test_utf8(void)
{
	T_INT((long long)mg_utf8_check("h\xc3\xa9llo", 6), 6, "valid UTF-8");
	T_INT((long long)mg_utf8_check("a\xc0\x80", 3), 1, "overlong NUL refused");
	T_INT((long long)mg_utf8_check("\xed\xa0\x80", 3), 0, "surrogate refused");
	T_INT((long long)mg_utf8_check("\xf4\x90\x80\x80", 4), 0, "past U+10FFFF refused");
	T_INT((long long)mg_utf8_check("ab\xe2\x82", 4), 2, "truncated sequence refused");
	char out[4];
	T_INT((long long)mg_utf8_encode(0x20AC, out), 3, "encode U+20AC");
	T_OK(memcmp(out, "\xe2\x82\xac", 3) == 0, "encode bytes");
	T_INT((long long)mg_utf8_encode(0xD800, out), 0, "encode refuses a surrogate");
	uint32_t cp = 0;
	T_INT((long long)mg_utf8_seq((const unsigned char *)"\xf0\x9f\x98\x80", 4, &cp), 4,
	      "4-byte sequence");
	T_INT(cp, 0x1F600, "code point decoded");
}

static void test_log(void)
{
	struct mg_err *err = NULL;
	setenv("MCPGATE_LOG", "warn", 1);
	T_INT(mg_log_init(&err), 0, "MCPGATE_LOG=warn accepted");
	T_OK(!mg_log_enabled(MG_LOG_INFO) && mg_log_enabled(MG_LOG_ERROR), "warn level filters");
	setenv("MCPGATE_LOG", "loud", 1);
	T_INT(mg_log_init(&err), -1, "an unknown level is refused");
	T_OK(err != NULL && strstr(err->msg, "MCPGATE_LOG=loud") != NULL, "the error names it");
	mg_err_clear(&err);
	unsetenv("MCPGATE_LOG");
}

/* a filter that replaces every byte *data with '*' */
static char *star_filter(const char *text, size_t len, size_t *out_len, void *data)
{
	char c = *(const char *)data;
	if (memchr(text, c, len) == NULL)
		return NULL;
	char *out = xstrndup(text, len);
	for (size_t i = 0; i < len; i++)
		if (out[i] == c)
			out[i] = '*';
	*out_len = len;
	return out;
}

static void test_log_filters(void)
{
	char path[] = "/tmp/mcpgate-base-test-log-XXXXXX";
	int fd = mkstemp(path);
	int saved = dup(STDERR_FILENO);
	fflush(stderr);
	dup2(fd, STDERR_FILENO);
	static const char a = 'a', b = 'b';
	mg_log_add_filter(star_filter, (void *)&a);
	mg_log_add_filter(star_filter, (void *)&b);
	mg_error("abc");
	mg_log_remove_filter(star_filter, (void *)&a);
	mg_error("abc");
	mg_log_remove_filter(star_filter, (void *)&b);
	mg_error("abc");
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(fd);
	char *text = t_read_file(path, NULL);
	T_STR(text, "mcpgate: error: **c\nmcpgate: error: a*c\nmcpgate: error: abc\n",
	      "log filters: each session's filter in turn; one removed no longer runs");
	free(text);
	unlink(path);
}

static void test_cleanup(void)
{
	cleanup_free char *p = xstrdup("x");
	char *q = steal_pointer(&p);
	T_OK(p == NULL && q != NULL, "steal_pointer moves ownership");
	free(q);
	cleanup_close int fd = -1;
	T_INT(steal_fd(&fd), -1, "steal_fd on -1");
	char *d = xstrndup("abcdef", 3);
	T_STR(d, "abc", "xstrndup copies n bytes");
	free(d);
	char *f = xasprintf("%s-%d", "a", 7);
	T_STR(f, "a-7", "xasprintf");
	free(f);
}

static void test_strv(void)
{
	struct strv s = STRV_INIT;
	T_OK(strv_array(&s)[0] == NULL, "an empty vector is a NULL-terminated array");
	for (int i = 0; i < 20; i++)
		strv_pushf(&s, "--label=k%d", i);
	strv_push(&s, "x");
	T_INT((long long)s.n, 21, "pushes are counted");
	T_OK(s.v[21] == NULL, "the array stays NULL-terminated");
	T_STR(s.v[19], "--label=k19", "pushf formats");
	T_INT(strv_find(&s, "x"), 20, "find returns the index");
	T_INT(strv_find(&s, "y"), -1, "find returns -1 when absent");
	strv_free(&s);
	T_OK(s.v == NULL && s.n == 0, "free empties");
}

/* An existing file keeps its mode through an atomic write, whatever the
 * umask; a new one gets the mode asked for, less the umask */
static void test_write_atomic(void)
{
	char dir[] = "/tmp/mg-base-test-XXXXXX";
	if (mkdtemp(dir) == NULL) {
		T_OK(0, "mkdtemp");
		return;
	}
	char *path = xasprintf("%s/file", dir);
	mode_t old = umask(022);
	struct stat st;
	T_INT(mg_write_file_atomic(path, "one", 3, 0600, NULL), 0, "a new file is written");
	T_INT(stat(path, &st) == 0 ? (long long)(st.st_mode & 07777) : -1, 0600,
	      "a new file gets the mode asked for");
	chmod(path, 0664);
	T_INT(mg_write_file_atomic(path, "two", 3, 0600, NULL), 0, "an existing file is replaced");
	T_INT(stat(path, &st) == 0 ? (long long)(st.st_mode & 07777) : -1, 0664,
	      "and keeps its mode 0664 under umask 022");
	umask(old);
	char *text = NULL;
	size_t len = 0;
	T_INT(mg_read_file(path, 100, &text, &len, NULL), 0, "it reads back");
	T_STR(text, "two", "with the new bytes");
	free(text);
	unlink(path);
	rmdir(dir);
	free(path);
}

static void test_shown(void)
{
	struct {
		const char *in;
		size_t len;
		const char *want;
	} cases[] = {
	    {"plain text", 10, "plain text"},
	    {"a\r\x1b[2Kb", 7, "a\\r\\x1b[2Kb"},
	    {"tab\tnl\n", 7, "tab\\tnl\\n"},
	    {"back\\slash", 10, "back\\\\slash"},
	    {"del\x7f", 4, "del\\x7f"},
	    {"nul\0x", 5, "nul\\x00x"},
	    {"bad\xff", 4, "bad\\xff"},
	    {"c1\xc2\x9b", 4, "c1\\u{009B}"},
	    {"rlo\xe2\x80\xae", 6, "rlo\\u{202E}"},
	    {"zw\xe2\x80\x8b", 5, "zw\\u{200B}"},
	    {"bom\xef\xbb\xbf", 6, "bom\\u{FEFF}"},
	    {"caf\xc3\xa9", 5, "caf\xc3\xa9"},
	    /* what breaks a line but is no control: line and paragraph
	     * separators, NEL */
	    {"ls\xe2\x80\xa8ps\xe2\x80\xa9nel\xc2\x85", 15, "ls\\u{2028}ps\\u{2029}nel\\u{0085}"},
	    /* default-ignorable: soft hyphen, Arabic letter mark, Hangul filler,
	     * word joiner, variation selector, a tag character */
	    {"\xc2\xad\xd8\x9c\xe3\x85\xa4\xe2\x81\xa0\xef\xb8\x8f\xf3\xa0\x81\x81", 17,
	     "\\u{00AD}\\u{061C}\\u{3164}\\u{2060}\\u{FE0F}\\u{E0041}"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = mg_shown(cases[i].in, cases[i].len);
		T_STR(got, cases[i].want, "mg_shown case %zu", i);
		free(got);
	}
	char *lines = mg_shown_lines("one\ntwo\r\xe2\x80\xa8", 11);
	T_STR(lines, "one\ntwo\\r\\u{2028}", "mg_shown_lines keeps \\n and escapes the rest");
	free(lines);
	/* what was escaped where it went in is shown as it was: rendered once */
	char *once = mg_shown("a\nb\\c", 5);
	char *twice = mg_shown_lines(once, strlen(once));
	T_STR(twice, "a\\nb\\\\c", "mg_shown_lines leaves mg_shown's text as it is");
	free(once);
	free(twice);
}

/* Both modes escape what ends a string or a line; the text mode also every
 * character some reader takes for a line end or that hides text */
static void test_quote(void)
{
	struct {
		const char *in;
		size_t len;
		const char *canonical;
		const char *text;
	} cases[] = {
	    {"plain /path", 11, "\"plain /path\"", "\"plain /path\""},
	    {"q\"b\\", 4, "\"q\\\"b\\\\\"", "\"q\\\"b\\\\\""},
	    {"nl\n[[server]]", 13, "\"nl\\n[[server]]\"", "\"nl\\n[[server]]\""},
	    {"cr\r\t\b\f", 6, "\"cr\\r\\t\\b\\f\"", "\"cr\\r\\t\\b\\f\""},
	    {"nul\0del\x7f\x1b", 9, "\"nul\\u0000del\\u007f\\u001b\"",
	     "\"nul\\u0000del\\u007f\\u001b\""},
	    {"ls\xe2\x80\xa8ps\xe2\x80\xa9", 10, "\"ls\xe2\x80\xa8ps\xe2\x80\xa9\"",
	     "\"ls\\u2028ps\\u2029\""},
	    {"nel\xc2\x85", 5, "\"nel\xc2\x85\"", "\"nel\\u0085\""},
	    {"rlo\xe2\x80\xae", 6, "\"rlo\xe2\x80\xae\"", "\"rlo\\u202e\""},
	    {"bom\xef\xbb\xbf", 6, "\"bom\xef\xbb\xbf\"", "\"bom\\ufeff\""},
	    {"caf\xc3\xa9 \xf0\x9f\x98\x80", 10, "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"",
	     "\"caf\xc3\xa9 \xf0\x9f\x98\x80\""},
	    {"\"\"\"", 3, "\"\\\"\\\"\\\"\"", "\"\\\"\\\"\\\"\""},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mg_buf c = MG_BUF_INIT(1024), t = MG_BUF_INIT(1024);
		T_INT(mg_quote(cases[i].in, cases[i].len, MG_QUOTE_CANONICAL, &c, NULL), 0,
		      "quote case %zu (canonical)", i);
		T_INT(mg_quote(cases[i].in, cases[i].len, MG_QUOTE_TEXT, &t, NULL), 0,
		      "quote case %zu (text)", i);
		T_STR(mg_buf_str(&c), cases[i].canonical, "quote case %zu, canonical", i);
		T_STR(mg_buf_str(&t), cases[i].text, "quote case %zu, text", i);
		mg_buf_free(&c);
		mg_buf_free(&t);
	}
	/* no raw byte below 0x20, no DEL, and nothing unsafe, whatever the input */
	unsigned bad = 0x110000;
	for (unsigned cp = 0; cp < 0x3000 && bad == 0x110000; cp++) {
		char in[8];
		size_t n = mg_utf8_encode(cp, in);
		if (n == 0)
			continue;
		struct mg_buf t = MG_BUF_INIT(64);
		bool clean = mg_quote(in, n, MG_QUOTE_TEXT, &t, NULL) == 0;
		for (size_t k = 0; clean && k < t.len; k++) {
			uint32_t c = 0;
			size_t len = mg_utf8_seq((const unsigned char *)t.data + k, t.len - k, &c);
			clean = len > 0 && !mg_cp_hidden(c);
			k += len > 0 ? len - 1 : 0;
		}
		if (!clean)
			bad = cp;
		mg_buf_free(&t);
	}
	T_OK(bad == 0x110000,
	     "every character to U+2FFF quoted as text leaves none unsafe (U+%04X)", bad);
	struct mg_buf b = MG_BUF_INIT(64);
	mg_buf_puts(&b, "kept", NULL);
	cleanup_err struct mg_err *e = NULL;
	T_OK(mg_quote("ok\xff", 3, MG_QUOTE_TEXT, &b, &e) < 0 &&
	         strstr(mg_err_msg(e), "invalid UTF-8 at byte 2") != NULL &&
	         strcmp(mg_buf_str(&b), "kept") == 0,
	     "invalid UTF-8 is refused, naming the byte, and the buffer is as it was");
	mg_buf_free(&b);
}

static void test_suggest(void)
{
	T_INT((long long)mg_edit_distance("review", "review"), 0, "no edits between equal words");
	T_INT((long long)mg_edit_distance("reveiw", "review"), 1, "two neighbours swapped: 1 edit");
	T_INT((long long)mg_edit_distance("srve", "serve"), 1, "a letter left out: 1 edit");
	T_INT((long long)mg_edit_distance("", "abc"), 3, "from nothing: one insert a letter");
	T_INT((long long)mg_edit_distance("kitten", "sitting"), 3, "kitten to sitting: 3 edits");
	T_OK(mg_edit_distance(
	         "x", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa") ==
	         SIZE_MAX,
	     "a word over MG_SUGGEST_WORD_MAX is never close");
	static const char *const commands[] = {"serve",   "list",  "pull",   "review",
	                                       "approve", "sweep", "secret", "pack",
	                                       "check",   "help",  NULL};
	T_STR(mg_suggest("reveiw", commands), "review", "reveiw: review");
	T_STR(mg_suggest("srve", commands), "serve", "srve: serve");
	T_STR(mg_suggest("aprove", commands), "approve", "aprove: approve");
	T_STR(mg_suggest("chek", commands), "check", "chek: check");
	T_STR(mg_suggest("rev", commands), "review", "a unique prefix: rev is review");
	T_STR(mg_suggest("s", commands), NULL, "a prefix of three: no suggestion");
	T_STR(mg_suggest("frobnicate", commands), NULL, "nothing close: no suggestion");
	T_STR(mg_suggest("x", commands), NULL, "one letter is not 1 edit from a word of 4");
	T_STR(mg_suggest("", commands), NULL, "nothing typed: no suggestion");
	static const char *const twins[] = {"pack", "pick", NULL};
	T_STR(mg_suggest("peck", twins), NULL, "two equally close: no suggestion");
	static const char *const options[] = {"config", "json", "help", NULL};
	T_STR(mg_suggest("jsn", options), "json", "jsn: json");
	T_STR(mg_suggest("confg", options), "config", "confg: config");
}

int main(void)
{
	test_strv();
	test_err();
	test_buf();
	test_num();
	test_utf8();
	test_shown();
	test_quote();
	test_log();
	test_log_filters();
	test_cleanup();
	test_suggest();
	test_write_atomic();
	return t_done();
}
