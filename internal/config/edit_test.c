/* Tests of the edits mcpgate makes to mcp.toml: approve's and add's, each
 * written by the one encoder and checked before it is written. Values a
 * stranger chooses (a tool's name, a path, a version) must never become
 * structure, and an edit that would change anything past what it means
 * writes nothing. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/testing.h"
#include "internal/base/xalloc.h"
#include "internal/config/config.h"
#include "internal/config/edit.h"
#include "internal/toml/toml.h"

#define IMAGE \
	"example.org/x@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define MANIFEST "sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

static const char base_text[] = "# the person's own comment\n"
                                "[[server]]\n"
                                "name = \"a\"\n"
                                "transport = \"container\"\n"
                                "image = \"" IMAGE "\"\n"
                                "\n"
                                "[server.tools.read]\n"
                                "on = false\n";

static char *file_text(const char *path)
{
	char *text = NULL;
	size_t len = 0;
	if (mg_read_file(path, 1 << 20, &text, &len, NULL) < 0)
		return xstrdup("(unreadable)");
	return text;
}

static void put_file(const char *path, const char *text)
{
	if (mg_write_file_atomic(path, text, strlen(text), 0600, NULL) < 0)
		t_note("cannot write %s", path);
}

static const struct cfg_tool *tool_named(const struct cfg_server *s, const char *name)
{
	for (size_t i = 0; s != NULL && i < s->ntools; i++)
		if (strcmp(s->tools[i].name, name) == 0)
			return &s->tools[i];
	return NULL;
}

static void test_approve(void)
{
	/* a tool name with a dot is one key: quoted, not a table in a table */
	struct cfg_tool_change dotted = {"files.read", 1, CFG_EFFECT_READ, -1};
	char *out = NULL;
	size_t out_len = 0;
	cleanup_err struct mg_err *e = NULL;
	int r = cfg_edit_server(base_text, strlen(base_text), "m.toml", "a", MANIFEST, &dotted, 1,
	                        &out, &out_len, &e);
	struct cfg *cfg = NULL;
	if (T_OK(r == 0, "a tool named files.read is approved (%s)", mg_err_msg(e)) &&
	    T_OK(cfg_parse(out, out_len, "m.toml", NULL, 0, NULL, &cfg, NULL) == 0, "it loads")) {
		const struct cfg_tool *t = tool_named(&cfg->servers[0], "files.read");
		T_OK(t != NULL && t->on && t->effect == CFG_EFFECT_READ &&
		         strstr(out,
		                "[server.tools.\"files.read\"]\non = true\neffect = \"read\"\n") !=
		             NULL &&
		         strncmp(out, base_text, 100) == 0 &&
		         strstr(out, "\n\n[server.tools.read]\non = false\n") != NULL,
		     "its table is [server.tools.\"files.read\"], the rest of the file kept: %s",
		     out);
		cfg_free(cfg);
	}
	free(out);
	out = NULL;
	mg_err_clear(&e);

	/* a server without tools, its last line without a newline: the pin and
	 * the new table at the same place, the pin first */
	static const char bare[] = "[[server]]\nname = \"a\"\ntransport = \"container\"\n"
	                           "image = \"" IMAGE "\"";
	r = cfg_edit_server(bare, strlen(bare), "m.toml", "a", MANIFEST, &dotted, 1, &out, &out_len,
	                    &e);
	T_OK(r == 0 && strcmp(out + strlen(bare),
	                      "\nmanifest = \"" MANIFEST "\"\n\n[server.tools.\"files.read\"]\n"
	                      "on = true\neffect = \"read\"\n") == 0,
	     "a bare server gets its pin, then the tool's table (%s): %s", mg_err_msg(e),
	     out != NULL ? out : "");
	free(out);
	out = NULL;
	mg_err_clear(&e);

	/* names a hostile server offers: each refused, nothing handed back */
	static const char *const names[] = {
	    "x]\non = true\n[server.tools.y",
	    "x\"]\n[[server]]\nname = \"evil\"",
	    "ls\xe2\x80\xa8[[server]]",
	    "",
	    "a b",
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct cfg_tool_change c = {names[i], 1, CFG_EFFECT_READ, -1};
		r = cfg_edit_server(base_text, strlen(base_text), "m.toml", "a", MANIFEST, &c, 1,
		                    &out, &out_len, &e);
		T_OK(r < 0 && out == NULL &&
		         strstr(mg_err_msg(e), "server a offers a tool whose name mcp.toml cannot "
		                               "hold (it stays off)") != NULL,
		     "hostile tool name %zu is refused: %s", i, mg_err_msg(e));
		mg_err_clear(&e);
	}

	/* an existing tool's settings (a line inserted above one replaced) and
	 * a new one's, and the pin */
	struct cfg_tool_change two[] = {{"read", 1, CFG_EFFECT_READ, -1},
	                                {"write", 1, CFG_EFFECT_WRITE, 0}};
	r = cfg_edit_server(base_text, strlen(base_text), "m.toml", "a", MANIFEST, two, 2, &out,
	                    &out_len, &e);
	cfg = NULL;
	if (T_OK(r == 0, "two tools approved (%s)", mg_err_msg(e)) &&
	    T_OK(cfg_parse(out, out_len, "m.toml", NULL, 0, NULL, &cfg, NULL) == 0, "it loads")) {
		const struct cfg_tool *rd = tool_named(&cfg->servers[0], "read");
		const struct cfg_tool *wr = tool_named(&cfg->servers[0], "write");
		T_OK(rd != NULL && rd->on && wr != NULL && wr->on && !wr->confirm &&
		         wr->effect == CFG_EFFECT_WRITE &&
		         strcmp(cfg->servers[0].manifest, MANIFEST) == 0,
		     "each as asked, and the manifest pinned");
		cfg_free(cfg);
	}
	free(out);
	out = NULL;
	mg_err_clear(&e);
}

static void test_append(const char *dir)
{
	cleanup_free char *path = xasprintf("%s/mcp.toml", dir);
	put_file(path, base_text);
	/* what a cloned repository puts in a path, and a registry in a version */
	const char *comment[] = {
	    "added by `mcpgate add npm:x@1.0.0, the tarball /tmp/a\n[[server]]\nname = \"evil\"\n"
	    "transport = \"remote\"\nurl = \"https://evil.example\"\n/x.tgz` on 2026-12-02",
	    "integrity sha512-\r\n[server.tools.all]\ron = true\xe2\x80\xa8[x]\xc2\x85[y]",
	};
	struct toml_value *entry = toml_new_table();
	toml_table_set(entry, "name", 4, toml_new_string("b"));
	toml_table_set(entry, "transport", 9, toml_new_string("container"));
	toml_table_set(entry, "image", 5, toml_new_string(IMAGE));
	struct toml_value *args = toml_new_array();
	toml_array_push(args, toml_new_string("\"]\nmounts = [\".:read\"]\n#"));
	toml_array_push(args, toml_new_string("\"\"\"\n[[server]]\n\"\"\""));
	toml_array_push(args, toml_new_string("ls\xe2\x80\xa8ps\xe2\x80\xa9nel\xc2\x85"));
	toml_table_set(entry, "args", 4, args);
	cleanup_err struct mg_err *e = NULL;
	int r = cfg_append_server(path, comment, 2, entry, &e);
	cleanup_free char *after = file_text(path);
	struct cfg *cfg = NULL;
	if (T_OK(r == 0, "the entry is appended (%s)", mg_err_msg(e)) &&
	    T_OK(cfg_parse(after, strlen(after), path, NULL, 0, NULL, &cfg, NULL) == 0,
	         "the file loads")) {
		const struct cfg_server *b = cfg_find_server(cfg, "b");
		T_OK(cfg->nservers == 2 && b != NULL && b->ntools == 0 && b->nmounts == 0 &&
		         b->nargs == 3 && strcmp(b->args[1], "\"\"\"\n[[server]]\n\"\"\"") == 0 &&
		         strncmp(after, base_text, strlen(base_text)) == 0,
		     "one server more, every tool off, no mount, its values as given, the file "
		     "before kept");
		T_OK(strstr(after, "\xe2\x80\xa8") == NULL && strstr(after, "\xc2\x85") == NULL &&
		         strchr(after, '\r') == NULL,
		     "no line separator, next line or carriage return reaches the file");
		cfg_free(cfg);
	}
	mg_err_clear(&e);

	/* what the check refuses: the file would differ by more than the entry */
	cleanup_free char *before = file_text(path);
	const struct toml_step server = {"server", NULL, NULL};
	const struct toml_change append = {TOML_CHANGE_APPEND, &server, 1, entry};
	cleanup_free char *two =
	    xasprintf("%s\n[[server]]\nname = \"evil\"\ntransport = \"remote\"\n"
	              "url = \"https://evil.example/mcp\"\n\n[[server]]\nname = \"b\"\n"
	              "transport = \"container\"\nimage = \"%s\"\n",
	              before, IMAGE);
	r = cfg_write_checked(path, before, strlen(before), two, strlen(two), &append, 1, &e);
	cleanup_free char *still = file_text(path);
	T_OK(r < 0 && strcmp(still, before) == 0 &&
	         strstr(mg_err_msg(e), "nothing was written to ") != NULL &&
	         strstr(mg_err_msg(e), "is not the change meant: server would hold 4 elements, "
	                               "where 3 were meant") != NULL,
	     "a second server beside the one meant: nothing written (%s)", mg_err_msg(e));
	mg_err_clear(&e);
	/* someone else's edit since the file was read is not written over */
	struct toml_value *b2 = toml_copy(entry);
	toml_table_set(b2, "name", 4, toml_new_string("b2"));
	const struct toml_change append2 = {TOML_CHANGE_APPEND, &server, 1, b2};
	cleanup_free char *one_full =
	    xasprintf("%s\n[[server]]\nname = \"b2\"\ntransport = \"container\"\nimage = \"%s\"\n"
	              "args = [\"\\\"]\\nmounts = [\\\".:read\\\"]\\n#\", "
	              "\"\\\"\\\"\\\"\\n[[server]]\\n\\\"\\\"\\\"\", "
	              "\"ls\\u2028ps\\u2029nel\\u0085\"]\n",
	              before, IMAGE);
	put_file(path, "# changed meanwhile\n");
	r = cfg_write_checked(path, before, strlen(before), one_full, strlen(one_full), &append2, 1,
	                      &e);
	cleanup_free char *meanwhile = file_text(path);
	T_OK(r < 0 && strcmp(meanwhile, "# changed meanwhile\n") == 0 &&
	         strstr(mg_err_msg(e), "changed while mcpgate edited it") != NULL,
	     "a file changed since it was read is left as it is (%s)", mg_err_msg(e));
	mg_err_clear(&e);
	put_file(path, before);
	r = cfg_write_checked(path, before, strlen(before), one_full, strlen(one_full), &append2, 1,
	                      &e);
	T_OK(r == 0, "the same edit on the file as read is written (%s)", mg_err_msg(e));
	mg_err_clear(&e);
	toml_free(b2);

	/* a new file: its first line, then the entry */
	cleanup_free char *fresh = xasprintf("%s/new/mcp.toml", dir);
	cleanup_free char *fresh_dir = xasprintf("%s/new", dir);
	mg_mkdir_p(fresh_dir, 0700, NULL);
	r = cfg_append_server(fresh, comment, 1, entry, &e);
	cleanup_free char *made = file_text(fresh);
	T_OK(r == 0 && strncmp(made, "# mcp.toml: the servers", 23) == 0 &&
	         strstr(made, "\n[[server]]\nname = \"b\"\n") != NULL,
	     "a missing mcp.toml is made with the entry (%s)", mg_err_msg(e));
	mg_err_clear(&e);
	unlink(fresh);
	rmdir(fresh_dir);
	toml_free(entry);
}

/* disable, enable, a new image: keys of one server, each change checked */
static void test_server_keys(void)
{
	struct mg_err *e = NULL;
	char *out = NULL, *back = NULL;
	size_t out_len = 0, back_len = 0;
	struct cfg_server_change off = CFG_SERVER_CHANGE_INIT;
	off.enabled = 0;
	int r = cfg_change_server_text(base_text, strlen(base_text), "m.toml", "a", &off, &out,
	                               &out_len, &e);
	struct cfg *cfg = NULL;
	T_OK(r == 0 && strstr(out, "image = \"" IMAGE "\"\nenabled = false\n\n[server.tools") &&
	         cfg_parse(out, out_len, "m.toml", NULL, 0, NULL, &cfg, NULL) == 0 &&
	         !cfg->servers[0].enabled,
	     "disable writes enabled = false in the server's own table (%s)", mg_err_msg(e));
	cfg_free(cfg);
	mg_err_clear(&e);
	struct cfg_server_change on = CFG_SERVER_CHANGE_INIT;
	on.enabled = 1;
	r = cfg_change_server_text(out, out_len, "m.toml", "a", &on, &back, &back_len, &e);
	T_OK(r == 0 && back_len == strlen(base_text) && memcmp(back, base_text, back_len) == 0,
	     "enable takes the line away: the file is as it was before disable (%s)",
	     mg_err_msg(e));
	mg_err_clear(&e);
	free(back);
	back = NULL;
	/* a comment on the line stays: the value becomes true */
	const char *at = strstr(out, "enabled = false\n");
	char *noted = xasprintf("%.*senabled = false # broken on Tuesday\n%s", (int)(at - out), out,
	                        at + strlen("enabled = false\n"));
	r = cfg_change_server_text(noted, strlen(noted), "m.toml", "a", &on, &back, &back_len, &e);
	T_OK(r == 0 && strstr(back, "enabled = true # broken on Tuesday\n") != NULL,
	     "enable keeps a comment on the key's line and sets it true (%s)", mg_err_msg(e));
	mg_err_clear(&e);
	free(back);
	free(noted);
	r = cfg_change_server_text(out, out_len, "m.toml", "a", &off, &back, &back_len, &e);
	T_OK(r == 0 && back_len == out_len && memcmp(back, out, out_len) == 0,
	     "disable of a disabled server changes nothing (%s)", mg_err_msg(e));
	mg_err_clear(&e);
	free(back);
	free(out);

	static const char *const image2 =
	    "example.org/x@sha256:1111111111111111111111111111111111111111111111111111111111111111";
	struct cfg_server_change img = CFG_SERVER_CHANGE_INIT;
	struct cfg_tool_change read_off = {"read", 0, -1, -1};
	img.image = image2;
	img.manifest = MANIFEST;
	img.tools = &read_off;
	img.ntools = 1;
	r = cfg_change_server_text(base_text, strlen(base_text), "m.toml", "a", &img, &out,
	                           &out_len, &e);
	T_OK(r == 0 && strstr(out, "image = \"") != NULL && strstr(out, image2) != NULL &&
	         strstr(out, IMAGE "\"") == NULL && strstr(out, "manifest = \"" MANIFEST "\"\n"),
	     "a new image and its pin in one checked edit (%s)", mg_err_msg(e));
	mg_err_clear(&e);
	free(out);
	/* an image that is not pinned is refused by the load, nothing written */
	img.image = "example.org/x:latest";
	r = cfg_change_server_text(base_text, strlen(base_text), "m.toml", "a", &img, &out,
	                           &out_len, &e);
	T_OK(r < 0 && strstr(mg_err_msg(e), "left as it was") != NULL,
	     "an image by tag is refused (%s)", mg_err_msg(e));
	mg_err_clear(&e);
	/* a value that would be structure stays one string, or is refused */
	img.image = IMAGE "\"\n[[server]]\nname = \"evil";
	r = cfg_change_server_text(base_text, strlen(base_text), "m.toml", "a", &img, &out,
	                           &out_len, &e);
	T_OK(r < 0, "an image holding TOML is never written as TOML (%s)", mg_err_msg(e));
	mg_err_clear(&e);
}

static const char three_text[] = "# mcp.toml: the servers\n"
                                 "\n"
                                 "# added by `mcpgate add npm:a@1`.\n"
                                 "# Every tool is off.\n"
                                 "[[server]]\n"
                                 "name = \"a\"\n"
                                 "transport = \"container\"\n"
                                 "image = \"" IMAGE "\"\n"
                                 "[server.tools.read]\n"
                                 "on = true\n"
                                 "\n"
                                 "# added by `mcpgate add npm:b@1`.\n"
                                 "[[server]]\n"
                                 "name = \"b\"\n"
                                 "transport = \"container\"\n"
                                 "image = \"" IMAGE "\"\n"
                                 "\n"
                                 "[[server]]\n"
                                 "name = \"c\"\n"
                                 "transport = \"remote\"\n"
                                 "url = \"https://example.org/mcp\"\n";

/* update's note: the line saying where the server came from replaced,
 * the person's own comment lines kept, one put above a header without any;
 * a stranger's newline stays inside the one comment line */
static void test_origin(void)
{
	static const char text[] =
	    "# mine: keep this\n"
	    "[[server]]\nname = \"z\"\ntransport = \"remote\"\n"
	    "url = \"https://z.example/mcp\"\n\n"
	    "# my own words\n"
	    "# added by `mcpgate add npm:a@1.0.0` on 2026-12-01; npm integrity x.\n"
	    "# Every tool is off.\n"
	    "[[server]]\nname = \"a\"\ntransport = \"remote\"\n"
	    "url = \"https://a.example/mcp\"\n";
	struct mg_err *e = NULL;
	char *out = NULL, *again = NULL;
	size_t out_len = 0, again_len = 0;
	struct cfg_server_change ch = CFG_SERVER_CHANGE_INIT;
	ch.origin = "updated by `mcpgate update a` to npm:a@2.0.0 on 2026-12-02; npm integrity y.";
	int r = cfg_change_server_text(text, strlen(text), "m.toml", "a", &ch, &out, &out_len, &e);
	T_OK(r == 0 &&
	         strstr(out, "# my own words\n# updated by `mcpgate update a` to "
	                     "npm:a@2.0.0 on 2026-12-02; npm integrity y.\n"
	                     "# Every tool is off.\n[[server]]\nname = \"a\"") != NULL &&
	         strstr(out, "npm:a@1.0.0") == NULL && strstr(out, "# mine: keep this\n") != NULL,
	     "update's note replaces the line that said where the server came from (%s)",
	     mg_err_msg(e));
	mg_err_clear(&e);
	ch.origin = "updated by `mcpgate update a` to npm:a@3.0.0 on 2026-12-02.";
	r = cfg_change_server_text(out, out_len, "m.toml", "a", &ch, &again, &again_len, &e);
	T_OK(r == 0 && strstr(again, "to npm:a@3.0.0") != NULL &&
	         strstr(again, "to npm:a@2.0.0") == NULL,
	     "and the line an update wrote, at the next update (%s)", mg_err_msg(e));
	mg_err_clear(&e);
	free(again);
	free(out);
	ch.origin = "updated by `mcpgate update z` to npm:z@1\n[[server]]\nname = \"evil\"";
	r = cfg_change_server_text(text, strlen(text), "m.toml", "z", &ch, &out, &out_len, &e);
	struct cfg *cfg = NULL;
	T_OK(r == 0 && strstr(out, "# mine: keep this\n# updated by `mcpgate update z`") != NULL &&
	         cfg_parse(out, out_len, "m.toml", NULL, 0, NULL, &cfg, NULL) == 0 &&
	         cfg->nservers == 2 && strstr(out, "\n[[server]]\nname = \"evil\"") == NULL,
	     "a note without such a line gets one above the header; a newline in it stays "
	     "in the comment (%s)",
	     mg_err_msg(e));
	cfg_free(cfg);
	mg_err_clear(&e);
	free(out);
}

static void test_remove(void)
{
	struct mg_err *e = NULL;
	char *out = NULL;
	size_t len = 0;
	unsigned first = 0, last = 0;
	int r = cfg_remove_server_text(three_text, strlen(three_text), "m.toml", "a", &out, &len,
	                               &first, &last, &e);
	static const char head[] = "# mcp.toml: the servers\n\n# added by `mcpgate add npm:b@1`";
	T_OK(r == 0 && strncmp(out, head, strlen(head)) == 0 && strstr(out, "npm:a@1") == NULL &&
	         strstr(out, "[server.tools.read]") == NULL && first == 3 && last == 11,
	     "the first server goes with its note and its tool tables (%s, lines %u-%u)",
	     mg_err_msg(e), first, last);
	mg_err_clear(&e);
	free(out);
	r = cfg_remove_server_text(three_text, strlen(three_text), "m.toml", "b", &out, &len,
	                           &first, &last, &e);
	T_OK(r == 0 && strstr(out, "npm:b@1") == NULL && strstr(out, "name = \"b\"") == NULL &&
	         strstr(out, "on = true\n\n[[server]]\nname = \"c\"") != NULL,
	     "a middle one goes, the next one's header stays where it was (%s)", mg_err_msg(e));
	mg_err_clear(&e);
	free(out);
	r = cfg_remove_server_text(three_text, strlen(three_text), "m.toml", "c", &out, &len,
	                           &first, &last, &e);
	T_OK(r == 0 && len > 2 && strstr(out, "name = \"c\"") == NULL && out[len - 1] == '\n' &&
	         out[len - 2] == '"',
	     "the last one goes without leaving blank lines (%s)", mg_err_msg(e));
	mg_err_clear(&e);
	free(out);
	r = cfg_remove_server_text(base_text, strlen(base_text), "m.toml", "a", &out, &len, &first,
	                           &last, &e);
	struct cfg *cfg = NULL;
	T_OK(r == 0 && len == 0 && cfg_parse(out, len, "m.toml", NULL, 0, NULL, &cfg, NULL) == 0 &&
	         cfg->nservers == 0,
	     "the only one goes, its comment with it: an empty file (%s)", mg_err_msg(e));
	cfg_free(cfg);
	mg_err_clear(&e);
	free(out);
	r = cfg_remove_server_text(three_text, strlen(three_text), "m.toml", "nope", &out, &len,
	                           &first, &last, &e);
	T_OK(r < 0 && strstr(mg_err_msg(e), "no server \"nope\"") != NULL,
	     "a server that is not there is an error (%s)", mg_err_msg(e));
	mg_err_clear(&e);
	/* a server written as an inline table element cannot be cut as lines:
	 * the check refuses what the text cut would be */
	static const char inline_text[] =
	    "server = [{name = \"a\", transport = \"remote\", url = \"https://a.example/mcp\"},\n"
	    "          {name = \"b\", transport = \"remote\", url = \"https://b.example/mcp\"}]\n";
	r = cfg_remove_server_text(inline_text, strlen(inline_text), "m.toml", "a", &out, &len,
	                           &first, &last, &e);
	T_OK(r < 0 && strstr(mg_err_msg(e), "left as it was") != NULL,
	     "what a line cut cannot remove is refused, not half-removed (%s)", mg_err_msg(e));
	mg_err_clear(&e);
}

int main(void)
{
	char tmpl[] = "/tmp/mcpgate-edit-test-XXXXXX";
	char *dir = mkdtemp(tmpl);
	if (dir == NULL)
		return 1;
	test_approve();
	test_append(dir);
	test_server_keys();
	test_origin();
	test_remove();
	cleanup_free char *path = xasprintf("%s/mcp.toml", dir);
	unlink(path);
	rmdir(dir);
	return t_done();
}
