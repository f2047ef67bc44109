/* mcpgate client add|remove|list: the mcpgate entry in an MCP client's own
 * configuration file. The editing is internal/clients' (docs/clients.md);
 * this file finds the file, the workspace and mcpgate itself, shows or
 * writes the change, and says what it did. */
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/mcpgate/commands.h"
#include "cmd/mcpgate/opts.h"
#include "internal/base/cleanup.h"
#include "internal/base/fs.h"
#include "internal/base/strv.h"
#include "internal/base/suggest.h"
#include "internal/base/utf8.h"
#include "internal/base/xalloc.h"
#include "internal/clients/clients.h"

/* A file changed by someone else between our read and our write is read and
 * edited again, this many times at most */
#define CLIENT_EDIT_TRIES 3

/* Client names a near miss is matched against (the table has 8) */
#define CLIENT_NAMES_MAX 32

struct client_args {
	const char *verb;
	const char *client;
	const char *file;
	const char *name;
	const char *workspace;
	const char *config;
	const char *scope;
	bool dry_run;
};

static void client_names(char *buf, size_t size)
{
	size_t n = 0;
	buf[0] = '\0';
	for (const struct clients_client *c = clients_table; c->name != NULL; c++) {
		int w = snprintf(buf + n, size - n, "%s%s", n > 0 ? ", " : "", c->name);
		if (w < 0 || (size_t)w >= size - n)
			break;
		n += (size_t)w;
	}
}

static int parse_args(const struct command *self, int argc, char **argv, struct client_args *a)
{
	const char *extra = NULL;
	for (int i = 1; i < argc; i++) {
		int r;
		if (opt_flag(argv, i, "dry-run", &a->dry_run))
			continue;
		if ((r = opt_value(argc, argv, &i, "file", &a->file)) != 0 ||
		    (r = opt_value(argc, argv, &i, "name", &a->name)) != 0 ||
		    (r = opt_value(argc, argv, &i, "workspace", &a->workspace)) != 0 ||
		    (r = opt_value(argc, argv, &i, "config", &a->config)) != 0 ||
		    (r = opt_value(argc, argv, &i, "scope", &a->scope)) != 0) {
			if (r < 0)
				return EXIT_USAGE;
			continue;
		}
		if (argv[i][0] == '-')
			return usage_error(self, "unknown argument \"%s\"", argv[i]);
		if (a->verb == NULL)
			a->verb = argv[i];
		else if (a->client == NULL)
			a->client = argv[i];
		else if (extra == NULL)
			extra = argv[i];
	}
	if (a->verb == NULL)
		return usage_error(self, "which action? add, remove or list");
	bool is_add = strcmp(a->verb, "add") == 0, is_remove = strcmp(a->verb, "remove") == 0;
	bool is_list = strcmp(a->verb, "list") == 0;
	if (!is_add && !is_remove && !is_list) {
		static const char *const verbs[] = {"add", "remove", "list", NULL};
		const char *meant = mg_suggest(a->verb, verbs);
		if (meant != NULL)
			return usage_error(self, "unknown action \"%s\"; did you mean \"%s\"?",
			                   a->verb, meant);
		return usage_error(self, "unknown action \"%s\": add, remove or list", a->verb);
	}
	if (extra != NULL || (is_list && a->client != NULL))
		return usage_error(self, "unexpected argument \"%s\"",
		                   extra != NULL ? extra : a->client);
	char names[256];
	client_names(names, sizeof(names));
	if (is_list && (a->file != NULL || a->name != NULL || a->config != NULL ||
	                a->scope != NULL || a->dry_run))
		return usage_error(self, "list takes --workspace only");
	if (is_list)
		return EXIT_OK;
	if (a->client == NULL)
		return usage_error(self, "%s which client? one of %s", a->verb, names);
	if (clients_find(a->client) == NULL) {
		const char *known[CLIENT_NAMES_MAX + 1] = {NULL};
		size_t n = 0;
		for (const struct clients_client *c = clients_table;
		     c->name != NULL && n < CLIENT_NAMES_MAX; c++)
			known[n++] = c->name;
		const char *meant = mg_suggest(a->client, known);
		if (meant != NULL)
			return usage_error(self, "unknown client \"%s\"; did you mean \"%s\"?",
			                   a->client, meant);
		return usage_error(self, "unknown client \"%s\": one of %s", a->client, names);
	}
	if (is_remove && a->config != NULL)
		return usage_error(self, "--config belongs to add");
	if (a->file != NULL && a->scope != NULL)
		return usage_error(self, "--file names the file: --scope has nothing to choose");
	if (a->scope != NULL && strcmp(a->scope, "user") != 0 && strcmp(a->scope, "project") != 0)
		return usage_error(self, "--scope is user or project, not \"%s\"", a->scope);
	if (a->name == NULL)
		a->name = "mcpgate";
	cleanup_err struct mg_err *e = NULL;
	if (clients_check_name(a->name, &e) < 0)
		return usage_error(self, "--name: %s", mg_err_msg(e));
	return EXIT_OK;
}

/* What the entry runs: the mcpgate first on PATH when that is this very
 * file (so an upgrade through a symlink there keeps working), else this
 * binary's real path; absolute either way, since a GUI client's PATH is
 * seldom the shell's. */
static int self_command(char **out, struct mg_err **err)
{
	char self[PATH_MAX];
	struct stat me, st;
	if (realpath("/proc/self/exe", self) == NULL || stat(self, &me) < 0)
		return mg_err_sys(err, errno, "finding mcpgate's own path (/proc/self/exe)");
	const char *path = getenv("PATH");
	for (const char *p = path != NULL ? path : ""; *p != '\0';) {
		size_t n = strcspn(p, ":");
		size_t d = n;
		while (d > 1 && p[d - 1] == '/')
			d--;
		if (n > 0 && p[0] == '/') {
			cleanup_free char *cand =
			    xasprintf("%.*s/mcpgate", (int)(d == 1 ? 0 : d), p);
			if (access(cand, X_OK) == 0 && stat(cand, &st) == 0 &&
			    S_ISREG(st.st_mode)) {
				bool same = st.st_dev == me.st_dev && st.st_ino == me.st_ino;
				*out = same ? steal_pointer(&cand) : xstrdup(self);
				return 0;
			}
		}
		p += n + (p[n] == ':');
	}
	*out = xstrdup(self);
	return 0;
}

static int absolute_dir(const char *what, const char *dir, char **out, struct mg_err **err)
{
	char buf[PATH_MAX];
	struct stat st;
	if (realpath(dir, buf) == NULL)
		return mg_err_sys(err, errno, "%s %s", what, dir);
	if (stat(buf, &st) < 0 || !S_ISDIR(st.st_mode))
		return mg_err_set(err, "%s %s is not a folder", what, dir);
	*out = xstrdup(buf);
	return 0;
}

/* The file as it is now: *exists false (and no text) when it is not there */
static int read_config(const char *path, char **text, size_t *len, bool *exists,
                       struct mg_err **err)
{
	*text = NULL;
	*len = 0;
	*exists = true;
	if (mg_read_file(path, CLIENTS_FILE_MAX, text, len, err) == 0)
		return 0;
	if (errno != ENOENT)
		return -1;
	mg_err_clear(err);
	*exists = false;
	*text = xstrdup("");
	return 0;
}

/* The file a write lands in: a symbolic link's target (a dotfiles checkout,
 * say) is edited, not replaced by a file */
static int write_target(const char *path, char **out, struct mg_err **err)
{
	struct stat st;
	if (lstat(path, &st) < 0 || !S_ISLNK(st.st_mode)) {
		*out = xstrdup(path);
		return 0;
	}
	char buf[PATH_MAX];
	if (realpath(path, buf) == NULL)
		return mg_err_sys(err, errno, "%s is a symbolic link, and its target", path);
	*out = xstrdup(buf);
	return 0;
}

struct client_job {
	const struct client_args *a;
	const struct clients_client *c;
	const char *path;
	bool project;                      /* a project's file: 0644 in a 0755 folder when new */
	const struct clients_entry *entry; /* add; NULL for remove */
};

static int apply(const struct client_job *j, const char *text, size_t len, char **out,
                 size_t *out_len, struct mg_err **err)
{
	if (j->entry != NULL)
		return clients_add(j->c, text, len, j->path, j->entry, out, out_len, err);
	return clients_remove(j->c, text, len, j->path, j->a->name, out, out_len, err);
}

static void report(const struct client_job *j, int change, bool existed)
{
	const char *name = j->a->name;
	switch ((enum clients_change)change) {
	case CLIENTS_ADDED:
	case CLIENTS_REPLACED: {
		/* the paths as a terminal should show them (a workspace's name may
		 * hold what reorders or hides text) */
		cleanup_free char *cmd = mg_shown(j->entry->command, strlen(j->entry->command));
		printf("%s \"%s\" %s %s (%s): %s", change == CLIENTS_ADDED ? "added" : "replaced",
		       name, change == CLIENTS_ADDED ? "to" : "in", j->path, j->c->title, cmd);
		for (size_t i = 0; i < j->entry->nargs; i++) {
			cleanup_free char *arg =
			    mg_shown(j->entry->args[i], strlen(j->entry->args[i]));
			printf(" %s", arg);
		}
		printf("\nrestart %s, or have it reload its MCP servers, to use it\n", j->c->title);
		break;
	}
	case CLIENTS_REMOVED:
		printf("removed \"%s\" from %s (%s)\n", name, j->path, j->c->title);
		break;
	case CLIENTS_UNCHANGED:
		if (j->entry != NULL)
			printf("\"%s\" in %s is already as it would be written: nothing to do\n",
			       name, j->path);
		else if (existed)
			printf("no mcpgate entry \"%s\" in %s: nothing to do\n", name, j->path);
		else
			printf("%s does not exist: nothing to do\n", j->path);
		break;
	}
}

static int run_job(const struct client_job *j, struct mg_err **err)
{
	for (int attempt = 1;; attempt++) {
		cleanup_free char *text = NULL, *out = NULL, *target = NULL, *now = NULL;
		size_t len, out_len, now_len;
		bool exists, still;
		if (read_config(j->path, &text, &len, &exists, err) < 0)
			return EXIT_FAIL;
		int change = apply(j, text, len, &out, &out_len, err);
		if (change < 0)
			return EXIT_FAIL;
		if (j->a->dry_run) {
			struct mg_buf diff = MG_BUF_INIT(CLIENTS_FILE_MAX * 4);
			cleanup_free char *after = xasprintf("%s (after %s)", j->path, j->a->verb);
			if (clients_diff(text, len, out, out_len, exists ? j->path : "/dev/null",
			                 after, &diff, err) < 0) {
				mg_buf_free(&diff);
				return EXIT_FAIL;
			}
			fwrite(diff.data != NULL ? diff.data : "", 1, diff.len, stdout);
			mg_buf_free(&diff);
			if (change == CLIENTS_UNCHANGED)
				report(j, change, exists);
			fprintf(stderr, "mcpgate client: dry run: %s is not written\n", j->path);
			return EXIT_OK;
		}
		if (change == CLIENTS_UNCHANGED) {
			report(j, change, exists);
			return EXIT_OK;
		}
		if (write_target(j->path, &target, err) < 0)
			return EXIT_FAIL;
		if (!exists) {
			cleanup_free char *copy = xstrdup(target);
			if (mg_mkdir_p(dirname(copy), j->project ? 0755 : 0700, err) < 0)
				return EXIT_FAIL;
		}
		if (read_config(j->path, &now, &now_len, &still, err) < 0)
			return EXIT_FAIL;
		if (still != exists || now_len != len || memcmp(now, text, len) != 0) {
			if (attempt < CLIENT_EDIT_TRIES)
				continue;
			mg_err_set(err,
			           "%s keeps changing while it is edited (is %s writing it?): "
			           "it is left as it is; try again",
			           j->path, j->c->title);
			return EXIT_FAIL;
		}
		if (mg_write_file_atomic(target, out, out_len, j->project ? 0644 : 0600, err) < 0)
			return EXIT_FAIL;
		report(j, change, exists);
		return EXIT_OK;
	}
}

static int client_edit(const struct client_args *a, struct mg_err **err)
{
	const struct clients_client *c = clients_find(a->client);
	cleanup_free char *ws = NULL, *config = NULL, *path = NULL, *command = NULL;
	if (absolute_dir("workspace", a->workspace != NULL ? a->workspace : ".", &ws, err) < 0)
		return EXIT_FAIL;
	if (a->config != NULL && absolute_dir("--config", a->config, &config, err) < 0)
		return EXIT_FAIL;
	enum clients_scope scope = c->default_scope;
	if (a->scope != NULL)
		scope = strcmp(a->scope, "project") == 0 ? CLIENTS_PROJECT : CLIENTS_USER;
	if (a->file != NULL)
		path = xstrdup(a->file);
	else if (clients_path(c, scope, ws, &path, err) < 0)
		return EXIT_FAIL;
	struct client_job j = {a, c, path, a->file == NULL && scope == CLIENTS_PROJECT, NULL};
	if (strcmp(a->verb, "remove") == 0)
		return run_job(&j, err);
	if (self_command(&command, err) < 0)
		return EXIT_FAIL;
	const char *args[] = {"serve", "--workspace", ws, "--config", config};
	struct clients_entry entry = {a->name, command, args, config != NULL ? 5 : 3};
	j.entry = &entry;
	return run_job(&j, err);
}

/* CLIENT SCOPE STATE FILE, one line per client's file; the scope add and
 * remove use by default is starred */
static int client_list(const struct client_args *a, struct mg_err **err)
{
	cleanup_free char *ws = NULL;
	if (absolute_dir("workspace", a->workspace != NULL ? a->workspace : ".", &ws, err) < 0)
		return EXIT_FAIL;
	int status = EXIT_OK;
	for (const struct clients_client *c = clients_table; c->name != NULL; c++) {
		for (int s = CLIENTS_USER; s <= CLIENTS_PROJECT; s++) {
			enum clients_scope scope = (enum clients_scope)s;
			if ((scope == CLIENTS_USER ? c->user_file : c->project_file) == NULL)
				continue;
			cleanup_free char *path = NULL, *text = NULL;
			cleanup_err struct mg_err *e = NULL;
			struct strv names = STRV_INIT;
			struct mg_buf state = MG_BUF_INIT(4096);
			size_t len;
			bool exists;
			if (clients_path(c, scope, ws, &path, &e) < 0 ||
			    read_config(path, &text, &len, &exists, &e) < 0 ||
			    (exists && clients_find_entries(c, text, len, path, &names, &e) < 0)) {
				fprintf(stderr, "mcpgate client: %s\n", mg_err_msg(e));
				mg_buf_puts(&state, "unreadable", NULL);
				status = EXIT_FAIL;
			} else if (!exists) {
				mg_buf_puts(&state, "no file", NULL);
			} else if (names.n == 0) {
				mg_buf_puts(&state, "no mcpgate entry", NULL);
			} else {
				mg_buf_puts(&state, names.n == 1 ? "entry" : "entries", NULL);
				for (size_t i = 0; i < names.n; i++)
					mg_buf_printf(&state, NULL, "%s %s", i > 0 ? "," : "",
					              names.v[i]);
			}
			cleanup_free char *scope_text =
			    xasprintf("%s%s", clients_scope_name(scope),
			              scope == c->default_scope ? "*" : "");
			printf("%-15s %-8s %-18s %s\n", c->name, scope_text, mg_buf_str(&state),
			       path != NULL ? path : "-");
			mg_buf_free(&state);
			strv_free(&names);
		}
	}
	return status;
}

int cmd_client(int argc, char **argv, struct mg_err **err)
{
	const struct command *self = command_find("client");
	struct client_args a = {0};
	int status = parse_args(self, argc, argv, &a);
	if (status != EXIT_OK)
		return status;
	if (strcmp(a.verb, "list") == 0)
		return client_list(&a, err);
	return client_edit(&a, err);
}
