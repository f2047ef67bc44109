/* Tests of internal/clients. Run from the repository's top.
 *
 * The cases are data: testdata/clients/CLIENT/CASE/ holds in.EXT (the file
 * as found; empty for a file not there yet) and what each operation must
 * give, the exact bytes or the exact error:
 *   add.EXT or add.err        after adding the entry below
 *   remove.EXT or remove.err  after removing "mcpgate" from in.EXT (without
 *                             either, in.EXT must come back unchanged)
 *   roundtrip.EXT             after add, then remove (without it: in.EXT)
 * A second add must change nothing, and the added entry must be found as
 * mcpgate's. EXT is json or toml, by the client's format. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal/base/cleanup.h"
#include "internal/base/strv.h"
#include "internal/base/testing.h"
#include "internal/base/xalloc.h"
#include "internal/clients/clients.h"

#define CASES "testdata/clients"

static const char *const entry_args[] = {"serve", "--workspace", "/home/dev/project"};
static const struct clients_entry entry = {"mcpgate", "/usr/local/bin/mcpgate", entry_args, 3};

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* The file's text, or NULL when it is not there */
static char *read_opt(const char *dir, const char *name, const char *ext, size_t *len)
{
	cleanup_free char *path = xasprintf("%s/%s%s%s", dir, name, ext[0] ? "." : "", ext);
	if (!exists(path))
		return NULL;
	return t_read_file(path, len);
}

/* The one line of an .err file, without its newline */
static char *read_err(const char *dir, const char *name)
{
	char *text = read_opt(dir, name, "err", NULL);
	if (text != NULL)
		text[strcspn(text, "\n")] = '\0';
	return text;
}

static bool has_name(const struct strv *names, const char *name)
{
	return strv_find(names, name) >= 0;
}

/* The bytes are as expected; on a difference, the diff is shown */
static void same_text(const char *got, size_t got_len, const char *want, size_t want_len,
                      const char *dir, const char *what)
{
	bool ok = got != NULL && got_len == want_len && memcmp(got, want, want_len) == 0;
	T_OK(ok, "%s: %s", dir, what);
	if (ok || got == NULL)
		return;
	struct mg_buf d = MG_BUF_INIT(1 << 24);
	clients_diff(want, want_len, got, got_len, "want", "got", &d, NULL);
	for (const char *p = mg_buf_str(&d); *p != '\0';) {
		size_t n = strcspn(p, "\n");
		printf("#   %.*s\n", (int)n, p);
		p += n + (p[n] == '\n');
	}
	mg_buf_free(&d);
}

static void run_case(const struct clients_client *c, const char *dir)
{
	const char *ext = c->format == CLIENTS_TOML ? "toml" : "json";
	size_t in_len = 0, want_len = 0, add_len = 0, again_len = 0, back_len = 0;
	cleanup_free char *in_path = xasprintf("%s/in.%s", dir, ext);
	cleanup_free char *in = read_opt(dir, "in", ext, &in_len);
	if (in == NULL) {
		T_OK(0, "%s has in.%s", dir, ext);
		return;
	}
	cleanup_err struct mg_err *err = NULL;
	struct strv before = STRV_INIT;
	bool had = clients_find_entries(c, in, in_len, in_path, &before, NULL) == 0 &&
	           has_name(&before, "mcpgate");
	strv_free(&before);

	/* add */
	cleanup_free char *added = NULL;
	cleanup_free char *add_err = read_err(dir, "add");
	cleanup_free char *want_add = read_opt(dir, "add", ext, &want_len);
	int r = clients_add(c, in, in_len, in_path, &entry, &added, &add_len, &err);
	if (add_err != NULL) {
		T_INT(r, -1, "%s: add fails", dir);
		T_STR(mg_err_msg(err), add_err, "%s: with the message in add.err", dir);
		T_OK(added == NULL, "%s: and hands back no text", dir);
	} else if (want_add == NULL) {
		T_OK(0, "%s has add.%s or add.err", dir, ext);
	} else {
		T_INT(r, had ? CLIENTS_REPLACED : CLIENTS_ADDED, "%s: add %s the entry (%s)", dir,
		      had ? "replaces" : "adds", mg_err_msg(err));
		same_text(added, add_len, want_add, want_len, dir, "add gives add.EXT");
		mg_err_clear(&err);

		cleanup_free char *again = NULL;
		r = clients_add(c, added, add_len, in_path, &entry, &again, &again_len, &err);
		T_INT(r, CLIENTS_UNCHANGED, "%s: a second add changes nothing (%s)", dir,
		      mg_err_msg(err));
		same_text(again, again_len, added, add_len, dir,
		          "the second add gives the same bytes");
		mg_err_clear(&err);

		struct strv names = STRV_INIT;
		r = clients_find_entries(c, added, add_len, in_path, &names, &err);
		T_OK(r == 0 && has_name(&names, "mcpgate"), "%s: the added entry is mcpgate's",
		     dir);
		strv_free(&names);
		mg_err_clear(&err);

		cleanup_free char *back = NULL;
		size_t want_back_len = in_len;
		cleanup_free char *want_back = read_opt(dir, "roundtrip", ext, &want_back_len);
		r = clients_remove(c, added, add_len, in_path, "mcpgate", &back, &back_len, &err);
		T_INT(r, CLIENTS_REMOVED, "%s: remove after add removes it (%s)", dir,
		      mg_err_msg(err));
		if (want_back != NULL)
			same_text(back, back_len, want_back, want_back_len, dir,
			          "add then remove gives roundtrip.EXT");
		else if (!had)
			same_text(back, back_len, in, in_len, dir,
			          "add then remove gives back the bytes of in.EXT");
		mg_err_clear(&err);
	}
	mg_err_clear(&err);

	/* remove */
	cleanup_free char *removed = NULL;
	size_t removed_len = 0, want_rm_len = 0;
	cleanup_free char *rm_err = read_err(dir, "remove");
	cleanup_free char *want_rm = read_opt(dir, "remove", ext, &want_rm_len);
	r = clients_remove(c, in, in_len, in_path, "mcpgate", &removed, &removed_len, &err);
	if (rm_err != NULL) {
		T_INT(r, -1, "%s: remove fails", dir);
		T_STR(mg_err_msg(err), rm_err, "%s: with the message in remove.err", dir);
	} else if (want_rm != NULL) {
		T_INT(r, CLIENTS_REMOVED, "%s: remove removes the entry (%s)", dir,
		      mg_err_msg(err));
		same_text(removed, removed_len, want_rm, want_rm_len, dir,
		          "remove gives remove.EXT");
	} else {
		T_INT(r, CLIENTS_UNCHANGED, "%s: remove finds nothing to remove (%s)", dir,
		      mg_err_msg(err));
		same_text(removed, removed_len, in, in_len, dir,
		          "and gives back the bytes of in.EXT");
	}
}

static void test_cases(void)
{
	size_t ncases = 0;
	for (const struct clients_client *c = clients_table; c->name != NULL; c++) {
		cleanup_free char *dir = xasprintf("%s/%s", CASES, c->name);
		size_t n;
		char **cases = t_list_dir(dir, "", &n);
		T_OK(n >= 4, "%s has cases (%zu)", dir, n);
		for (size_t i = 0; i < n; i++) {
			cleanup_free char *d = xasprintf("%s/%s", dir, cases[i]);
			run_case(c, d);
			free(cases[i]);
		}
		free(cases);
		ncases += n;
	}
	t_note("%zu cases", ncases);
}

/* Each client's file, from $HOME and the variables that move it */
static void test_paths(void)
{
	setenv("HOME", "/home/dev", 1);
	unsetenv("XDG_CONFIG_HOME");
	unsetenv("CODEX_HOME");
	unsetenv("CLAUDE_CONFIG_DIR");
	struct {
		const char *client;
		enum clients_scope scope;
		const char *want;
	} cases[] = {
	    {"claude-desktop", CLIENTS_USER, "/home/dev/.config/Claude/claude_desktop_config.json"},
	    {"claude-code", CLIENTS_USER, "/home/dev/.claude.json"},
	    {"claude-code", CLIENTS_PROJECT, "/work/app/.mcp.json"},
	    {"cursor", CLIENTS_USER, "/home/dev/.cursor/mcp.json"},
	    {"cursor", CLIENTS_PROJECT, "/work/app/.cursor/mcp.json"},
	    {"vscode", CLIENTS_USER, "/home/dev/.config/Code/User/mcp.json"},
	    {"vscode", CLIENTS_PROJECT, "/work/app/.vscode/mcp.json"},
	    {"windsurf", CLIENTS_USER, "/home/dev/.codeium/windsurf/mcp_config.json"},
	    {"zed", CLIENTS_USER, "/home/dev/.config/zed/settings.json"},
	    {"codex", CLIENTS_USER, "/home/dev/.codex/config.toml"},
	    {"codex", CLIENTS_PROJECT, "/work/app/.codex/config.toml"},
	    {"gemini", CLIENTS_USER, "/home/dev/.gemini/settings.json"},
	    {"gemini", CLIENTS_PROJECT, "/work/app/.gemini/settings.json"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *path = NULL;
		const struct clients_client *c = clients_find(cases[i].client);
		T_OK(c != NULL, "client %s is known", cases[i].client);
		if (c == NULL)
			continue;
		int r = clients_path(c, cases[i].scope, "/work/app", &path, NULL);
		T_STR(r == 0 ? path : NULL, cases[i].want, "%s %s file", cases[i].client,
		      clients_scope_name(cases[i].scope));
		free(path);
	}
	char *path = NULL;
	setenv("XDG_CONFIG_HOME", "/xdg/", 1);
	setenv("CODEX_HOME", "/codex", 1);
	setenv("CLAUDE_CONFIG_DIR", "relative/not/used", 1);
	clients_path(clients_find("zed"), CLIENTS_USER, "/w", &path, NULL);
	T_STR(path, "/xdg/zed/settings.json", "XDG_CONFIG_HOME moves Zed's file");
	free(path);
	clients_path(clients_find("codex"), CLIENTS_USER, "/w", &path, NULL);
	T_STR(path, "/codex/config.toml", "CODEX_HOME moves Codex's file");
	free(path);
	clients_path(clients_find("claude-code"), CLIENTS_USER, "/w", &path, NULL);
	T_STR(path, "/home/dev/.claude.json", "a relative CLAUDE_CONFIG_DIR is ignored");
	free(path);
	cleanup_err struct mg_err *err = NULL;
	path = NULL;
	T_INT(clients_path(clients_find("windsurf"), CLIENTS_PROJECT, "/w", &path, &err), -1,
	      "Windsurf has no project file");
	T_STR(mg_err_msg(err), "Windsurf has no project file; its file is the user's",
	      "and says so");
	mg_err_clear(&err);
	setenv("HOME", "relative", 1);
	T_INT(clients_path(clients_find("cursor"), CLIENTS_USER, "/w", &path, &err), -1,
	      "a relative $HOME is refused");
	T_STR(mg_err_msg(err), "cannot find the home folder: $HOME is not an absolute path",
	      "and named");
	unsetenv("XDG_CONFIG_HOME");
	unsetenv("CODEX_HOME");
	unsetenv("CLAUDE_CONFIG_DIR");
}

/* What is refused before any file is looked at */
static void test_entry_checks(void)
{
	const struct clients_client *c = clients_find("cursor");
	char *out = NULL;
	size_t len;
	cleanup_err struct mg_err *err = NULL;
	struct clients_entry e = entry;
	e.name = "my server";
	T_INT(clients_add(c, "", 0, "f", &e, &out, &len, &err), -1,
	      "a name with a space is refused");
	T_STR(mg_err_msg(err),
	      "the entry's name \"my server\" is not 1 to 64 letters, digits, '_' or '-'",
	      "and the name is shown");
	mg_err_clear(&err);
	const char *const nl_args[] = {"serve", "--workspace", "/home/dev/a\nb"};
	e = entry;
	e.args = nl_args;
	T_INT(clients_add(c, "", 0, "f", &e, &out, &len, &err), -1,
	      "a newline in a path is refused");
	T_STR(mg_err_msg(err),
	      "argument 3 (\"/home/dev/a\\nb\") holds a control character: nothing was written "
	      "to f",
	      "and the argument named and shown, and the file");
	mg_err_clear(&err);
	T_INT(clients_remove(c, "{}", 2, "f", "a.b", &out, &len, &err), -1,
	      "remove checks the name too");
	T_OK(out == NULL, "and hands back nothing");
}

/* Another name, more arguments, and a path that needs escapes */
static void test_other_entry(void)
{
	const struct clients_client *c = clients_find("claude-desktop");
	const char *const args[] = {"serve", "--workspace", "/home/dev/\"q\" \\ caf\xc3\xa9",
	                            "--config", "/etc/mcpgate"};
	struct clients_entry e = {"gate-2", "/opt/mcp gate/mcpgate", args, 5};
	const char *in = "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"args\": []}}}\n";
	char *out = NULL;
	size_t len;
	int r = clients_add(c, in, strlen(in), "f", &e, &out, &len, NULL);
	T_INT(r, CLIENTS_ADDED, "an entry of another name is added");
	T_STR(out,
	      "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"args\": []}, \"gate-2\": "
	      "{\"command\": "
	      "\"/opt/mcp gate/mcpgate\", \"args\": [\"serve\", \"--workspace\", "
	      "\"/home/dev/\\\"q\\\" "
	      "\\\\ caf\xc3\xa9\", \"--config\", \"/etc/mcpgate\"]}}}\n",
	      "on one line, as the object is, with its quotes and backslash escaped");
	free(out);

	c = clients_find("codex");
	in = "model = \"o3\"\n";
	r = clients_add(c, in, strlen(in), "f", &e, &out, &len, NULL);
	T_INT(r, CLIENTS_ADDED, "and added to TOML");
	T_STR(
	    out,
	    "model = \"o3\"\n\n[mcp_servers.gate-2]\ncommand = \"/opt/mcp gate/mcpgate\"\nargs = "
	    "[\"serve\", \"--workspace\", \"/home/dev/\\\"q\\\" \\\\ caf\xc3\xa9\", \"--config\", "
	    "\"/etc/mcpgate\"]\n",
	    "with the same escapes, which TOML reads alike");
	free(out);
}

/* A workspace path a cloned repository chose: each character that ends a
 * string, a line or a comment to some reader comes out escaped, and the
 * file reads back with the path as it is */
static void test_hostile_paths(void)
{
	static const char *const paths[] = {
	    "/tmp/x\"], \"--config\", \"/evil\"]}, \"evil\": {\"command\": \"/bin/sh",
	    "/tmp/ls\xe2\x80\xa8ps\xe2\x80\xa9nel\xc2\x85/\"\"\"/'''",
	    "/tmp/x\"]\n[mcp_servers.evil]\ncommand = \"/bin/sh\"\n#",
	    "/tmp/comment // and /* block */ and # hash and \\ backslash",
	    "/tmp/rlo\xe2\x80\xae bidi\xef\xbb\xbf bom",
	};
	static const char *const names[] = {"cursor", "vscode", "codex"};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		/* a newline is refused before any encoder sees it */
		bool control = strchr(paths[i], '\n') != NULL;
		const char *const args[] = {"serve", "--workspace", paths[i]};
		struct clients_entry e = {"mcpgate", "/usr/local/bin/mcpgate", args, 3};
		for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
			const struct clients_client *c = clients_find(names[k]);
			bool toml = c->format == CLIENTS_TOML;
			const char *in =
			    toml ? "model = \"o3\"\n" : "{\n  // mine\n  \"a\": 1\n}\n";
			char *out = NULL;
			size_t len = 0;
			cleanup_err struct mg_err *err = NULL;
			int r = clients_add(c, in, strlen(in), "f", &e, &out, &len, &err);
			if (control) {
				T_OK(r < 0 && out == NULL &&
				         strstr(mg_err_msg(err), "nothing was written to f") !=
				             NULL,
				     "%s: path %zu with a newline is refused: %s", names[k], i,
				     mg_err_msg(err));
				continue;
			}
			if (!T_OK(r == CLIENTS_ADDED, "%s: path %zu is added (%s)", names[k], i,
			          mg_err_msg(err)))
				continue;
			T_OK(strstr(out, "\xe2\x80\xa8") == NULL &&
			         strstr(out, "\xe2\x80\xa9") == NULL &&
			         strstr(out, "\xc2\x85") == NULL &&
			         strstr(out, "\xe2\x80\xae") == NULL &&
			         strncmp(out, in, strlen(in) - (toml ? 0 : 4)) == 0,
			     "%s: path %zu: no line separator, next line or bidi character is "
			     "written "
			     "as it is, and the file before is kept",
			     names[k], i);
			/* the file has one entry, mcpgate's, and no other */
			struct strv found = STRV_INIT;
			T_OK(clients_find_entries(c, out, len, "f", &found, NULL) == 0 &&
			         found.n == 1 && has_name(&found, "mcpgate"),
			     "%s: path %zu: the file reads back with the one entry", names[k], i);
			strv_free(&found);
			/* and adding it again changes nothing: it reads back as written */
			char *again = NULL;
			size_t again_len = 0;
			T_INT(clients_add(c, out, len, "f", &e, &again, &again_len, NULL),
			      CLIENTS_UNCHANGED,
			      "%s: path %zu: a second add finds it as it would write it", names[k],
			      i);
			free(again);
			free(out);
		}
	}
}

static void test_diff(void)
{
	const char *a = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n";
	const char *b =
	    "1\n2\n3\n4\nfour and a half\n5\n6\n7\n8\n9\n10\n11\n12\n13\nfourteen\n15\n16";
	struct mg_buf d = MG_BUF_INIT(1 << 20);
	T_INT(clients_diff(a, strlen(a), b, strlen(b), "x", "x (after)", &d, NULL), 0,
	      "a diff is made");
	T_STR(mg_buf_str(&d),
	      "--- x\n+++ x (after)\n"
	      "@@ -2,6 +2,7 @@\n 2\n 3\n 4\n+four and a half\n 5\n 6\n 7\n"
	      "@@ -11,6 +12,6 @@\n 11\n 12\n 13\n-14\n+fourteen\n 15\n-16\n+16\n"
	      "\\ No newline at end of file\n",
	      "two hunks with three lines of context, and the missing newline shown");
	mg_buf_reset(&d);
	T_INT(clients_diff("", 0, "{}\n", 3, "/dev/null", "new", &d, NULL), 0, "a new file");
	T_STR(mg_buf_str(&d), "--- /dev/null\n+++ new\n@@ -0,0 +1,1 @@\n+{}\n",
	      "is all added lines");
	mg_buf_reset(&d);
	T_INT(clients_diff(a, strlen(a), a, strlen(a), "x", "y", &d, NULL), 0, "equal texts");
	T_INT((long long)d.len, 0, "give no diff at all");
	mg_buf_free(&d);
}

int main(void)
{
	test_cases();
	test_paths();
	test_entry_checks();
	test_other_entry();
	test_hostile_paths();
	test_diff();
	return t_done();
}
