/* Unit tests of what mcpgate writes as TOML and how an edit is checked:
 * every value, key and comment a stranger chooses comes back from the
 * parser as that very value (or the comment stays a comment), and the
 * checked edit refuses anything past the change meant. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/testing.h"
#include "internal/base/xalloc.h"
#include "internal/toml/toml.h"
#include "internal/toml/toml_change.h"
#include "internal/toml/toml_encode.h"

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

#define H(text)                        \
	{                              \
		text, sizeof(text) - 1 \
	}

/* What an attacker puts in a value: line ends of every kind, quotes,
 * brackets, TOML's own multi-line quotes, controls, invalid-looking escapes */
static const struct {
	const char *s;
	size_t len;
} hostile[] = {
    H("plain"),
    H(""),
    H("a\n[[server]]\nname = \"evil\"\nmounts = [\".:read\"]"),
    H("\"\"\"\n[[server]]\n\"\"\""),
    H("'''\n[x]\n'''"),
    H("x\"]\n[server.tools.evil]\non = true\n#"),
    H("cr\ronly"),
    H("crlf\r\n[t]"),
    H("tab\tand\\backslash\\u0041"),
    H("ls\xe2\x80\xa8[[server]]"),
    H("ps\xe2\x80\xa9name"),
    H("nel\xc2\x85[t]"),
    H("nul\0after"),
    H("del\x7f esc\x1b[2J bell\x07"),
    H("rlo\xe2\x80\xae reversed"),
    H("# not a comment"),
    H("key = \"value\""),
    H("caf\xc3\xa9 \xf0\x9f\x98\x80"),
};

/* text parsed, or NULL (the message noted) */
static struct toml_value *parse(const char *text, size_t len)
{
	struct toml_value *root = NULL;
	cleanup_err struct mg_err *err = NULL;
	if (toml_parse(text, len, "t.toml", &root, &err) < 0)
		t_note("does not parse: %s", mg_err_msg(err));
	return root;
}

static void test_strings_and_keys(void)
{
	for (size_t i = 0; i < N_ELEMS(hostile); i++) {
		const char *s = hostile[i].s;
		size_t n = hostile[i].len;
		/* as a value */
		struct mg_buf b = MG_BUF_INIT(1 << 16);
		mg_buf_puts(&b, "k = ", NULL);
		T_INT(toml_encode_string(&b, s, n, NULL), 0, "hostile %zu encodes as a string", i);
		mg_buf_puts(&b, "\nafter = 1\n", NULL);
		struct toml_value *root = parse(b.data, b.len);
		const struct toml_value *k = toml_get(root, "k");
		T_OK(root != NULL && root->u.table.len == 2 && k != NULL &&
		         k->kind == TOML_STRING && k->u.str.len == n &&
		         memcmp(k->u.str.ptr, s, n) == 0 && toml_get(root, "after") != NULL,
		     "hostile %zu is read back as the very string, one key beside it", i);
		toml_free(root);
		/* as a key, and as a header's key */
		mg_buf_reset(&b);
		T_INT(toml_encode_key(&b, s, n, NULL), 0, "hostile %zu encodes as a key", i);
		mg_buf_puts(&b, " = 1\n", NULL);
		root = parse(b.data, b.len);
		T_OK(root != NULL && root->u.table.len == 1 && root->u.table.items[0].keylen == n &&
		         memcmp(root->u.table.items[0].key, s, n) == 0,
		     "hostile %zu is read back as the very key", i);
		toml_free(root);
		/* in a comment: the comment stays one line, the key after it is read */
		mg_buf_reset(&b);
		cleanup_free char *text = xstrndup(s, n);
		T_INT(toml_encode_comment(&b, text, "\n", NULL), 0, "hostile %zu in a comment", i);
		size_t comment_len = b.len;
		mg_buf_puts(&b, "only = true\n", NULL);
		root = parse(b.data, b.len);
		T_OK(root != NULL && root->u.table.len == 1 && toml_get(root, "only") != NULL &&
		         memchr(b.data, '\n', comment_len - 1) == NULL &&
		         memchr(b.data, '\r', comment_len) == NULL &&
		         strstr(b.data, "\xe2\x80\xa8") == NULL &&
		         strstr(b.data, "\xc2\x85") == NULL,
		     "hostile %zu stays inside its comment line", i);
		toml_free(root);
		mg_buf_free(&b);
	}
	struct mg_buf b = MG_BUF_INIT(64);
	T_OK(toml_encode_key(&b, "bare_key-1", 10, NULL) == 0 &&
	         strcmp(mg_buf_str(&b), "bare_key-1") == 0,
	     "a key of letters, digits, _ and - is written bare");
	mg_buf_reset(&b);
	T_OK(toml_encode_key(&b, "a.b", 3, NULL) == 0 && strcmp(mg_buf_str(&b), "\"a.b\"") == 0,
	     "a key with a dot is quoted: it is one key, not two");
	mg_buf_reset(&b);
	cleanup_err struct mg_err *e = NULL;
	T_OK(toml_encode_string(&b, "x\xff", 2, &e) < 0 && b.len == 0 &&
	         strstr(mg_err_msg(e), "invalid UTF-8") != NULL,
	     "text that is not UTF-8 is refused, nothing written");
	mg_err_clear(&e);
	T_OK(toml_encode_comment(&b, "x", "\n\n", &e) < 0, "a comment ends in one line end");
	mg_buf_free(&b);
}

/* A table written under its header reads back as the same tree */
static void test_table(void)
{
	struct toml_value *t = toml_new_table();
	toml_table_set(t, "name", 4, toml_new_string("n"));
	struct toml_value *args = toml_new_array();
	for (size_t i = 0; i < N_ELEMS(hostile); i++)
		toml_array_push(args, toml_new_stringn(hostile[i].s, hostile[i].len));
	toml_table_set(t, "args", 4, args);
	struct toml_value *env = toml_new_table();
	toml_table_set(env, "A", 1, toml_new_string("x\n[[server]]"));
	toml_table_set(env, "needs quotes", 12, toml_new_string(""));
	toml_table_set(t, "env", 3, env);
	toml_table_set(t, "empty", 5, toml_new_table());
	toml_table_set(t, "on", 2, toml_new_bool(true));
	toml_table_set(t, "n", 1, toml_new_integer(-42));
	const char *path[] = {"server", "tools", "x]\n[evil"};
	struct mg_buf b = MG_BUF_INIT(1 << 16);
	T_INT(toml_encode_table(&b, path, 3, false, t, "\r\n", NULL), 0, "a table is written");
	struct toml_value *root = parse(b.data, b.len);
	const struct toml_value *server = toml_get(root, "server");
	const struct toml_value *tools = toml_get(server, "tools");
	T_OK(root != NULL && root->u.table.len == 1 && tools != NULL && tools->u.table.len == 1 &&
	         toml_compare(t, toml_get(tools, "x]\n[evil"), NULL) == 0,
	     "it reads back under the one header, every value the same");
	toml_free(root);
	mg_buf_reset(&b);
	const char *aot = "server";
	T_INT(toml_encode_table(&b, &aot, 1, true, t, "\n", NULL), 0, "an element is written");
	T_INT(toml_encode_table(&b, &aot, 1, true, t, "\n", NULL), 0, "and a second");
	root = parse(b.data, b.len);
	server = toml_get(root, "server");
	T_OK(server != NULL && server->kind == TOML_ARRAY && server->u.array.len == 2 &&
	         toml_compare(t, server->u.array.items[1], NULL) == 0,
	     "[[server]] twice is an array of two, each the table");
	toml_free(root);
	mg_buf_free(&b);
	toml_free(t);
}

/* Every kind of value the parser makes is written back as itself */
static void test_round_trip(void)
{
	static const char text[] =
	    "s = \"a\\u0000b\"\ni = -9223372036854775808\nf = 1e300\ng = -0.0\nh = 0.1\n"
	    "inf1 = -inf\nnan1 = nan\nb = false\nd1 = 1979-05-27T07:32:00Z\n"
	    "d2 = 1979-05-27T00:32:00.999999-07:00\nd3 = 1979-05-27 07:32:00\nd4 = 1979-05-27\n"
	    "d5 = 07:32:00.5\na = [[1, 2], [\"x\"], [], {k = {}}]\n"
	    "[t.\"odd key\".'x.y']\nv = { \"\" = 1, a.b = 2 }\n[[aot]]\n[[aot]]\nz = 1\n";
	struct toml_value *root = parse(text, strlen(text));
	if (!T_OK(root != NULL, "the sample parses"))
		return;
	struct mg_buf b = MG_BUF_INIT(1 << 16);
	for (size_t i = 0; i < root->u.table.len; i++) {
		const struct toml_kv *kv = &root->u.table.items[i];
		toml_encode_key(&b, kv->key, kv->keylen, NULL);
		mg_buf_puts(&b, " = ", NULL);
		T_INT(toml_encode_value(&b, kv->value, NULL), 0, "%s is written", kv->key);
		mg_buf_putc(&b, '\n', NULL);
	}
	struct toml_value *again = parse(b.data, b.len);
	cleanup_err struct mg_err *e = NULL;
	T_OK(again != NULL && toml_compare(root, again, &e) == 0,
	     "every kind of value reads back the same (%s)", mg_err_msg(e));
	struct toml_value *copy = toml_copy(root);
	T_OK(toml_compare(root, copy, NULL) == 0, "a copy is the same tree");
	toml_free(copy);
	toml_free(again);
	toml_free(root);
	mg_buf_free(&b);
	struct toml_value bad = {.kind = TOML_DATETIME, .u.str = {"1979\n[x]", 8}};
	struct mg_buf c = MG_BUF_INIT(64);
	T_OK(toml_encode_value(&c, &bad, NULL) < 0 && c.len == 0,
	     "a date whose text is not a date's is refused");
	mg_buf_free(&c);
}

/* the first difference, or "" */
static char *check(const char *before, const char *after, const struct toml_change *c, size_t n)
{
	cleanup_err struct mg_err *e = NULL;
	toml_check_edit(before, before != NULL ? strlen(before) : 0, after, strlen(after), "m.toml",
	                c, n, &e);
	return xstrdup(mg_err_msg(e));
}

static void test_checked_edit(void)
{
	static const char before[] = "# mine\n[[server]]\nname = \"a\"\nimage = \"i\"\n"
	                             "[server.tools.t]\non = false\n";
	struct toml_value *entry = toml_new_table();
	toml_table_set(entry, "name", 4, toml_new_string("b"));
	toml_table_set(entry, "image", 5, toml_new_string("j"));
	const struct toml_step server = {"server", NULL, NULL};
	const struct toml_change append = {TOML_CHANGE_APPEND, &server, 1, entry};
	static const char appended[] = "# mine\n[[server]]\nname = \"a\"\nimage = \"i\"\n"
	                               "[server.tools.t]\non = false\n\n# new\n[[server]]\n"
	                               "name = \"b\"\nimage = \"j\"\n";
	char *got = check(before, appended, &append, 1);
	T_STR(got, "", "one [[server]] appended is the change meant");
	free(got);
	/* what the tarball attack wrote: a second server in the comment's place */
	static const char injected[] = "# mine\n[[server]]\nname = \"a\"\nimage = \"i\"\n"
	                               "[server.tools.t]\non = false\n\n# added from /x\n"
	                               "[[server]]\nname = \"evil\"\nimage = \"e\"\n"
	                               "[server.tools.all]\non = true\n\n"
	                               "[[server]]\nname = \"b\"\nimage = \"j\"\n";
	got = check(before, injected, &append, 1);
	T_STR(got,
	      "the edit of m.toml is not the change meant: server would hold 3 elements, "
	      "where 2 were meant",
	      "a second server that no change meant is refused");
	free(got);
	static const char turned_on[] = "# mine\n[[server]]\nname = \"a\"\nimage = \"i\"\n"
	                                "[server.tools.t]\non = true\n\n[[server]]\n"
	                                "name = \"b\"\nimage = \"j\"\n";
	got = check(before, turned_on, &append, 1);
	T_STR(got,
	      "the edit of m.toml is not the change meant: server[0].tools.t.on would be true, "
	      "where false was meant",
	      "a tool of another server turned on is refused");
	free(got);
	static const char extra_key[] = "# mine\n[[server]]\nname = \"a\"\nimage = \"i\"\n"
	                                "[server.tools.t]\non = false\n\n[[server]]\n"
	                                "name = \"b\"\nimage = \"j\"\nmounts = [\".:read\"]\n";
	got = check(before, extra_key, &append, 1);
	T_STR(got,
	      "the edit of m.toml is not the change meant: server[1].mounts would be there "
	      "(array), which no change meant",
	      "a key more in the new server is refused");
	free(got);
	got = check(NULL, "[[server]]\nname = \"b\"\nimage = \"j\"\n", &append, 1);
	T_STR(got, "", "a new file with the one server");
	free(got);
	got = check(before, "[[server]\n", &append, 1);
	T_OK(strstr(got, "the edited text does not parse") != NULL, "text that does not parse: %s",
	     got);
	free(got);

	/* approve: one server's key, by its name */
	const struct toml_step on_path[] = {
	    {"server", "name", "a"}, {"tools", NULL, NULL}, {"t", NULL, NULL}, {"on", NULL, NULL}};
	struct toml_value *yes = toml_new_bool(true);
	const struct toml_change set = {TOML_CHANGE_SET, on_path, 4, yes};
	got = check(before, turned_on, &set, 1);
	T_STR(got,
	      "the edit of m.toml is not the change meant: server would hold 2 elements, where 1 "
	      "were meant",
	      "setting a key does not also add a server");
	free(got);
	static const char set_only[] = "# mine\n[[server]]\nname = \"a\"\nimage = \"i\"\n"
	                               "[server.tools.t]\non = true\n";
	got = check(before, set_only, &set, 1);
	T_STR(got, "", "the one key set is the change meant");
	free(got);
	const struct toml_step nobody[] = {{"server", "name", "zz"}, {"image", NULL, NULL}};
	const struct toml_change set_nobody = {TOML_CHANGE_SET, nobody, 2, yes};
	got = check(before, set_only, &set_nobody, 1);
	T_STR(got,
	      "the change meant does not apply (a bug of mcpgate's): server[name = \"zz\"].image: "
	      "no such element",
	      "a change at a server that is not there is an error");
	free(got);
	/* remove, as `mcpgate remove` does: the last [[server]] gone takes the
	 * array with it, as a parser reads a file without one */
	const struct toml_step a_server[] = {{"server", "name", "a"}};
	const struct toml_change remove = {TOML_CHANGE_REMOVE, a_server, 1, NULL};
	got = check(before, "# mine\n", &remove, 1);
	T_STR(got, "", "the server removed, and nothing else");
	free(got);
	got = check(before, "# mine\nserver = []\n", &remove, 1);
	T_STR(got,
	      "the edit of m.toml is not the change meant: server would be there (array), which "
	      "no change meant",
	      "an empty array written in its place is not the same");
	free(got);
	/* a table only headers below it made goes with the last of them; one
	 * written as [a] itself stays */
	const struct toml_step ab[] = {{"a", NULL, NULL}, {"b", NULL, NULL}};
	const struct toml_change cut = {TOML_CHANGE_REMOVE, ab, 2, NULL};
	got = check("[a.b]\nx = 1\n", "", &cut, 1);
	T_STR(got, "", "[a.b] cut: a is gone too, as it only came from [a.b]");
	free(got);
	got = check("[a]\n[a.b]\nx = 1\n", "[a]\n", &cut, 1);
	T_STR(got, "", "[a] written itself stays");
	free(got);
	got = check("[a]\n[a.b]\nx = 1\n", "", &cut, 1);
	T_STR(got, "the edit of m.toml is not the change meant: a would be missing",
	      "and must stay");
	free(got);
	toml_free(yes);
	toml_free(entry);
}

int main(void)
{
	test_strings_and_keys();
	test_table();
	test_round_trip();
	test_checked_edit();
	return t_done();
}
