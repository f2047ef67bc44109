/* mcpgate review NAME / mcpgate approve NAME: a person looks at what a server
 * offers before its tools reach a model, and pins it (docs/trust.md). */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/mcpgate/commands.h"
#include "cmd/mcpgate/opts.h"
#include "cmd/mcpgate/review.h"
#include "cmd/mcpgate/setup.h"
#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/utf8.h"
#include "internal/base/fs.h"
#include "internal/base/strv.h"
#include "internal/base/xalloc.h"
#include "internal/config/edit.h"
#include "internal/gateway/launch.h"
#include "internal/mcp/manifest.h"

/* ---- the files under the data dir -------------------------------------- */

char *review_path(const char *data, const char *server)
{
	return xasprintf("%s/reviews/%s.json", data, server);
}

/* ---- showing a manifest -------------------------------------------------- */

/* A tool's settings in mcp.toml: its effect's name, and whether it is on */
static const char *effect_name(const struct cfg_server *s, const char *tool, bool *on)
{
	*on = false;
	for (size_t i = 0; i < s->ntools; i++) {
		if (strcmp(s->tools[i].name, tool) == 0) {
			*on = s->tools[i].on;
			return cfg_effect_name(s->tools[i].effect);
		}
	}
	return cfg_effect_name(CFG_EFFECT_UNDECLARED);
}

/* "text: string (required), count: integer" */
static void schema_summary(const struct json_value *schema, struct mg_buf *out)
{
	const struct json_value *props = json_get(schema, "properties");
	const struct json_value *req = json_get(schema, "required");
	if (props == NULL || props->kind != JSON_OBJECT || props->u.obj.len == 0) {
		mg_buf_puts(out, "(no arguments)", NULL);
		return;
	}
	for (size_t i = 0; i < props->u.obj.len; i++) {
		const struct json_member *m = &props->u.obj.items[i];
		const char *type = json_get_string(m->value, "type");
		bool required = false;
		for (size_t k = 0; req != NULL && req->kind == JSON_ARRAY && k < req->u.arr.len;
		     k++)
			if (req->u.arr.items[k]->kind == JSON_STRING &&
			    strcmp(req->u.arr.items[k]->u.str.ptr, m->key) == 0)
				required = true;
		cleanup_free char *key = mg_shown(m->key, m->keylen);
		cleanup_free char *ty =
		    mg_shown(type != NULL ? type : "any", strlen(type != NULL ? type : "any"));
		mg_buf_printf(out, NULL, "%s%s: %s%s", i > 0 ? ", " : "", key, ty,
		              required ? " (required)" : "");
	}
}

/* Where the image came from, as its labels say (under the digest pin):
 * mcpgate add writes the npm package, version and integrity there */
static void show_origin(const struct ctr_driver *d, const char *image)
{
	struct ctr_image_config c;
	if (d->ops->image_config(d, image, true, &c, NULL) < 0)
		return;
	static const char *const keys[] = {"org.opencontainers.image.source",
	                                   "io.mcpgate.npm.integrity", "io.mcpgate.node"};
	static const char *const what[] = {"from", "npm integrity", "node"};
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		for (size_t i = 0; i + 1 < c.labels.n; i += 2)
			if (strcmp(c.labels.v[i], keys[k]) == 0) {
				cleanup_free char *v =
				    mg_shown(c.labels.v[i + 1], strlen(c.labels.v[i + 1]));
				printf("image %s: %s\n", what[k], v);
			}
	ctr_image_config_free(&c);
}

/* The tool's own hints (readOnlyHint, destructiveHint, ...): the server's
 * claim, which mcpgate's effect does not take on trust */
static void show_hints(const struct json_value *a)
{
	if (a == NULL || a->kind != JSON_OBJECT)
		return;
	struct mg_buf b = MG_BUF_INIT(1 << 16);
	for (size_t i = 0; i < a->u.obj.len; i++) {
		const struct json_member *m = &a->u.obj.items[i];
		if (m->value->kind != JSON_BOOL || m->keylen < 5 ||
		    strcmp(m->key + m->keylen - 4, "Hint") != 0)
			continue;
		cleanup_free char *key = mg_shown(m->key, m->keylen);
		mg_buf_printf(&b, NULL, "%s%s=%s", b.len > 0 ? ", " : "", key,
		              m->value->u.boolean ? "true" : "false");
	}
	if (b.len > 0)
		printf("      the server claims: %s\n", mg_buf_str(&b));
	mg_buf_free(&b);
}

void review_show_tool(const struct cfg_server *s, const struct json_value *t)
{
	{
		const char *name = json_get_string(t, "name");
		bool on;
		const char *effect = effect_name(s, name, &on);
		const char *desc = json_get_string(t, "description");
		/* the server's text, every control character escaped: a terminal
		 * must not hide from the person what the model will read */
		cleanup_free char *shown_name = mg_shown(name, strlen(name));
		cleanup_free char *shown_desc = desc != NULL ? mg_shown(desc, strlen(desc)) : NULL;
		const struct cfg_tool *set = NULL;
		for (size_t k = 0; k < s->ntools; k++)
			if (strcmp(s->tools[k].name, name) == 0)
				set = &s->tools[k];
		printf("  %s  [effect: %s, %s%s]\n", shown_name, effect, on ? "on" : "off",
		       set != NULL && set->effect == CFG_EFFECT_WRITE && !set->confirm
		           ? ", no confirmation (confirm = false)"
		           : "");
		printf("      %s\n", shown_desc != NULL ? shown_desc : "(no description)");
		struct mg_buf sum = MG_BUF_INIT(1 << 16);
		schema_summary(json_get(t, "inputSchema"), &sum);
		printf("      input: %s\n", mg_buf_str(&sum));
		mg_buf_free(&sum);
		show_hints(json_get(t, "annotations"));
	}
}

static void show_tools(const struct cfg_server *s, const struct json_value *tools)
{
	struct json_value *m = manifest_of(tools);
	printf("tools (%zu):\n", m->u.arr.len);
	for (size_t i = 0; i < m->u.arr.len; i++)
		review_show_tool(s, m->u.arr.items[i]);
	json_free(m);
}

size_t review_show_diff(const struct json_value *old_tools, const struct json_value *new_tools)
{
	struct mg_buf diff = MG_BUF_INIT(1 << 20);
	size_t n = manifest_diff(old_tools, new_tools, &diff);
	printf("changes since the approved manifest (%zu):\n", n);
	for (char *line = diff.data; line != NULL && *line != '\0';) {
		char *nl = strchr(line, '\n');
		size_t ll = nl != NULL ? (size_t)(nl - line) : strlen(line);
		cleanup_free char *shown_line = mg_shown(line, ll);
		printf("  %s\n", shown_line);
		line = nl != NULL ? nl + 1 : NULL;
	}
	mg_buf_free(&diff);
	return n;
}

/* ---- shared start -------------------------------------------------------- */

struct target {
	struct cfg *cfg;
	struct ctr_driver *driver;
	const struct cfg_server *server;
	char *data_dir;
	char workspace[PATH_MAX];
};

static int target_open(const char *dir, const char *name, const char *workspace, struct target *t,
                       struct mg_err **err)
{
	memset(t, 0, sizeof(*t));
	if (realpath(workspace != NULL ? workspace : ".", t->workspace) == NULL)
		return mg_err_sys(err, errno, "workspace %s", workspace != NULL ? workspace : ".");
	if (setup_config(dir, &t->cfg, err) < 0 ||
	    (t->server = setup_server(t->cfg, name, err)) == NULL ||
	    cfg_default_data_dir(&t->data_dir, err) < 0)
		return -1;
	if (t->server->transport != CFG_TRANSPORT_CONTAINER)
		return mg_err_set(err, "server %s is remote: review starts container servers only",
		                  name);
	return setup_driver(t->cfg, &t->driver, err);
}

static void target_close(struct target *t)
{
	ctr_driver_free(t->driver);
	cfg_free(t->cfg);
	free(t->data_dir);
}

static int parse_common(int argc, char **argv, int *i, const char **dir, const char **ws)
{
	int r = opt_value(argc, argv, i, "config", dir);
	if (r == 0)
		r = opt_value(argc, argv, i, "workspace", ws);
	return r;
}

/* ---- review -------------------------------------------------------------- */

int cmd_review(int argc, char **argv, struct mg_err **err)
{
	const struct command *self = command_find("review");
	const char *dir = NULL, *ws = NULL, *name = NULL;
	if (usage_server_args(self, argc, argv, &dir, &ws, &name) != 0)
		return EXIT_USAGE;
	struct target t;
	struct gw_manifest_fetch f = {0};
	int status = EXIT_FAIL;
	char hash[MANIFEST_HASH_LEN];
	cleanup_free char *path = NULL;
	if (target_open(dir, name, ws, &t, err) < 0)
		goto out;
	setup_warn_forward(t.cfg, t.driver, name);
	fprintf(stderr, "mcpgate: starting %s with its isolation to read its manifest\n", name);
	if (gw_fetch_manifest(t.cfg, t.driver, t.server, t.workspace, &f, err) < 0 ||
	    manifest_hash(f.tools, hash, err) < 0)
		goto out;
	const struct cfg_server *s = t.server;
	printf("server %s: %s\n", s->name, s->image);
	printf("runs in: a %s container, network: %s\n", t.driver->name,
	       s->nhosts > 0     ? "its listed hosts, through the egress proxy"
	       : s->nconnect > 0 ? "its connect destinations alone, through its sidecar"
	                         : "none");
	for (size_t i = 0; i < s->nconnect; i++) {
		const struct cfg_connect *d = &s->connect[i];
		printf("connect: %s = %s:%u%s%s%s\n", d->name, d->host, d->port,
		       d->loopback ? " (the host's loopback, through mcpgate's host side)" : "",
		       d->network != NULL ? " on network " : "",
		       d->network != NULL ? d->network : "");
	}
	for (size_t i = 0; i < s->nmounts; i++) {
		bool root = strcmp(s->mounts[i].path, ".") == 0;
		if (s->mounts[i].home) {
			printf("home: %s/%s at " CFG_HOME_PATH
			       ", read-write, not executable, kept\n",
			       t.workspace, s->mounts[i].path);
			continue;
		}
		printf("mount: %s%s%s at /workspace%s%s%s\n", t.workspace, root ? "" : "/",
		       root ? "" : s->mounts[i].path, root ? "" : "/",
		       root ? "" : s->mounts[i].path,
		       root                 ? ", read-only: the whole workspace"
		       : s->mounts[i].write ? ", read-write"
		                            : ", read-only");
	}
	if (s->nmounts == 0 || !s->mounts[s->nmounts - 1].home)
		printf("home: " CFG_HOME_PATH ", a tmpfs of " CFG_HOME_SIZE
		       ", read-write, not executable, gone with the container\n");
	for (size_t i = 0; i < s->npackages; i++)
		printf("Debian package: %s\n", s->packages[i]);
	for (size_t i = 0; i < s->nenv; i++) {
		cleanup_free char *v = mg_shown(s->env[i].value, strlen(s->env[i].value));
		printf("setting (env): %s=%s\n", s->env[i].name, v);
	}
	show_origin(t.driver, s->image);
	if (f.accepted != NULL) {
		printf("unenforced here, accepted in mcp.toml (accept_unenforced):");
		for (size_t i = 0; i < f.accepted->u.arr.len; i++)
			printf(" %s", f.accepted->u.arr.items[i]->u.str.ptr);
		printf(": it runs without %s\n",
		       f.accepted->u.arr.len == 1 ? "that limit" : "those limits");
	}
	{
		const char *iname = f.info.name ? f.info.name : "(unnamed)";
		const char *iver = f.info.version ? f.info.version : "";
		cleanup_free char *a = mg_shown(iname, strlen(iname));
		cleanup_free char *b = mg_shown(iver, strlen(iver));
		cleanup_free char *c =
		    mg_shown(f.info.protocol_version, strlen(f.info.protocol_version));
		printf("says it is: %s %s (MCP %s)\n", a, b, c);
	}
	printf("manifest: %s\n", hash);
	if (s->manifest == NULL)
		printf("approved: none yet\n");
	else if (strcmp(s->manifest, hash) == 0)
		printf("approved: %s (the same)\n", s->manifest);
	else
		printf("approved: %s (DIFFERENT)\n", s->manifest);
	show_tools(s, f.tools);

	if (s->manifest != NULL && strcmp(s->manifest, hash) != 0) {
		cleanup_free char *old_path =
		    manifest_record_path(t.data_dir, s->name, s->manifest);
		struct mg_err *lerr = NULL;
		struct json_value *old = manifest_record_load(old_path, &lerr);
		if (old == NULL) {
			printf("changes: the approved manifest's content is not stored here (%s), "
			       "so only the hashes can be compared\n",
			       mg_err_msg(lerr));
			mg_err_free(lerr);
		} else {
			review_show_diff(json_get(old, "tools"), f.tools);
			json_free(old);
		}
	}
	path = review_path(t.data_dir, s->name);
	if (manifest_record_save(path, s->name, s->image, hash, f.tools, err) < 0)
		goto out;
	printf("reviewed manifest stored in %s\n", path);
	printf("to approve it: mcpgate approve %s [--tool TOOL --on --effect read|write]...\n",
	       s->name);
	status = EXIT_OK;
out:
	gw_manifest_fetch_free(&f);
	target_close(&t);
	return status;
}

/* ---- approve ------------------------------------------------------------- */

static bool manifest_has(const struct json_value *tools, const char *name)
{
	for (size_t i = 0; i < tools->u.arr.len; i++)
		if (strcmp(json_get_string(tools->u.arr.items[i], "name"), name) == 0)
			return true;
	return false;
}

/* One answer from the person, its first word lower-cased; "" for Enter,
 * NULL at the end of the input */
static const char *ask(const char *question, char *buf, size_t len)
{
	printf("%s", question);
	fflush(stdout);
	if (fgets(buf, (int)len, stdin) == NULL)
		return NULL;
	if (strchr(buf, '\n') == NULL && !feof(stdin)) {
		int c;
		while ((c = getchar()) != EOF && c != '\n')
			;
	}
	char *p = buf + strspn(buf, " \t");
	p[strcspn(p, " \t\r\n")] = '\0';
	for (char *q = p; *q != '\0'; q++)
		*q = (char)tolower((unsigned char)*q);
	return p;
}

/* approve on a terminal, tool by tool: each tool shown as review shows it,
 * then read, write (asked or not), off, or kept as it is. Returns the number
 * of changes, or -1 when the person stopped (nothing is written then). */
ssize_t review_walk_tools(const struct cfg_server *s, const struct json_value *tools,
                          struct cfg_tool_change *changes, size_t cap, struct strv *names)
{
	struct json_value *m = manifest_of(tools);
	size_t n = 0;
	ssize_t r = 0;
	printf("%zu tools; for each: r (on, reads only), w (on, writes), o (off), Enter "
	       "(keep as it is), q (stop, write nothing)\n",
	       m->u.arr.len);
	for (size_t i = 0; r == 0 && i < m->u.arr.len && n < cap; i++) {
		const struct json_value *t = m->u.arr.items[i];
		printf("\n[%zu/%zu]\n", i + 1, m->u.arr.len);
		review_show_tool(s, t);
		if (cfg_check_tool_name(json_get_string(t, "name"), "its name", NULL) < 0) {
			printf("  its name cannot be written in mcp.toml (letters, digits, _ . - "
			       "only): it stays off\n");
			continue;
		}
		char buf[64];
		for (;;) {
			const char *a = ask("  r/w/o/Enter/q? ", buf, sizeof(buf));
			struct cfg_tool_change c = {json_get_string(t, "name"), -1, -1, -1};
			if (a == NULL || strcmp(a, "q") == 0 || strcmp(a, "quit") == 0) {
				r = -1;
				break;
			}
			if (a[0] == '\0')
				break;
			if (strcmp(a, "r") == 0 || strcmp(a, "read") == 0) {
				c.on = 1;
				c.effect = CFG_EFFECT_READ;
			} else if (strcmp(a, "o") == 0 || strcmp(a, "off") == 0) {
				c.on = 0;
			} else if (strcmp(a, "w") == 0 || strcmp(a, "write") == 0) {
				c.on = 1;
				c.effect = CFG_EFFECT_WRITE;
				const char *q = NULL;
				for (;;) {
					q = ask("  ask before each call (a client that cannot ask "
					        "never gets it)? Y/n ",
					        buf, sizeof(buf));
					if (q == NULL || q[0] == '\0' || strcmp(q, "y") == 0 ||
					    strcmp(q, "yes") == 0 || strcmp(q, "n") == 0 ||
					    strcmp(q, "no") == 0)
						break;
					printf(
					    "  \"%s\" is not an answer here: y (or Enter) or n\n",
					    q);
				}
				if (q == NULL) {
					r = -1;
					break;
				}
				c.confirm = q[0] == 'n' ? 0 : 1;
			} else {
				printf("  \"%s\" is not an answer here\n", a);
				continue;
			}
			strv_push(names, c.tool); /* the manifest's copy is freed here */
			c.tool = names->v[names->n - 1];
			changes[n++] = c;
			break;
		}
	}
	json_free(m);
	if (r < 0)
		return -1;
	return (ssize_t)n;
}

int cmd_approve(int argc, char **argv, struct mg_err **err)
{
	const struct command *self = command_find("approve");
	const char *dir = NULL, *ws = NULL, *name = NULL;
	struct cfg_tool_change changes[256];
	size_t n = 0, group = 0;
	bool each = false;
	/* owns the tool names split out of --tool a,b */
	__attribute__((cleanup(strv_free))) struct strv names = STRV_INIT;
	for (int i = 1; i < argc; i++) {
		const char *v = NULL;
		int r = parse_common(argc, argv, &i, &dir, &ws);
		if (r < 0)
			return EXIT_USAGE;
		if (r > 0)
			continue;
		if ((r = opt_value(argc, argv, &i, "tool", &v)) != 0) {
			if (r < 0)
				return EXIT_USAGE;
			/* --tool a,b,c: one group, which the options after it set */
			group = n;
			for (const char *p = v; *p != '\0';) {
				size_t len = strcspn(p, ",");
				if (len == 0)
					return usage_error(self, "--tool %s names an empty tool",
					                   v);
				if (n == sizeof(changes) / sizeof(changes[0]))
					return usage_error(self, "too many tools");
				strv_push_owned(&names, xstrndup(p, len));
				changes[n++] =
				    (struct cfg_tool_change){names.v[names.n - 1], -1, -1, -1};
				p += len + (p[len] == ',');
			}
			continue;
		}
		bool on = false, off = false, noconfirm = false, confirm = false;
		if (opt_flag(argv, i, "each", &each))
			continue;
		if (opt_flag(argv, i, "no-confirm", &noconfirm) ||
		    opt_flag(argv, i, "confirm", &confirm)) {
			if (n == 0)
				return usage_error(self, "%s needs a --tool before it", argv[i]);
			for (size_t k = group; k < n; k++)
				changes[k].confirm = noconfirm ? 0 : 1;
			continue;
		}
		if (opt_flag(argv, i, "on", &on) || opt_flag(argv, i, "off", &off)) {
			if (n == 0)
				return usage_error(self, "%s needs a --tool before it", argv[i]);
			for (size_t k = group; k < n; k++)
				changes[k].on = on ? 1 : 0;
			continue;
		}
		if ((r = opt_value(argc, argv, &i, "effect", &v)) != 0) {
			if (r < 0)
				return EXIT_USAGE;
			if (n == 0)
				return usage_error(self, "--effect needs a --tool before it");
			int effect = strcmp(v, "read") == 0    ? CFG_EFFECT_READ
			             : strcmp(v, "write") == 0 ? CFG_EFFECT_WRITE
			                                       : -1;
			for (size_t k = group; effect >= 0 && k < n; k++)
				changes[k].effect = effect;
			if (effect < 0)
				return usage_error(self, "--effect is read or write, not \"%s\"",
				                   v);
			continue;
		}
		if (usage_server_name(self, argv[i], &name) < 0)
			return EXIT_USAGE;
	}
	if (name == NULL)
		return usage_error(self, "which server? (see: mcpgate list)");
	if (each && n > 0)
		return usage_error(self, "--each goes through every tool: give it without --tool");
	/* a person at a terminal who names no tool is asked tool by tool */
	if (n == 0 && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO))
		each = true;

	struct target t;
	struct gw_manifest_fetch f = {0};
	struct json_value *reviewed = NULL;
	cleanup_free char *rpath = NULL, *mpath = NULL;
	int status = EXIT_FAIL;
	char hash[MANIFEST_HASH_LEN];
	if (target_open(dir, name, ws, &t, err) < 0)
		goto out;
	rpath = review_path(t.data_dir, name);
	if (access(rpath, F_OK) != 0) {
		mg_err_set(err, "server %s has not been reviewed: run mcpgate review %s first",
		           name, name);
		goto out;
	}
	if ((reviewed = manifest_record_load(rpath, err)) == NULL)
		goto out;
	fprintf(stderr, "mcpgate: starting %s again to check its manifest is the one reviewed\n",
	        name);
	if (gw_fetch_manifest(t.cfg, t.driver, t.server, t.workspace, &f, err) < 0 ||
	    manifest_hash(f.tools, hash, err) < 0)
		goto out;
	const char *was = json_get_string(reviewed, "hash");
	if (strcmp(was, hash) != 0 ||
	    strcmp(json_get_string(reviewed, "image") ? json_get_string(reviewed, "image") : "",
	           t.server->image) != 0) {
		mg_err_set(
		    err,
		    "refused: the live manifest of %s (%s) is not the one reviewed (%s); run "
		    "mcpgate review %s again",
		    name, hash, was, name);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (!manifest_has(f.tools, changes[i].tool)) {
			mg_err_set(err, "server %s offers no tool \"%s\" (see: mcpgate review %s)",
			           name, changes[i].tool, name);
			goto out;
		}
	}
	if (each) {
		ssize_t got = review_walk_tools(t.server, f.tools, changes,
		                                sizeof(changes) / sizeof(changes[0]), &names);
		if (got < 0) {
			mg_err_set(err, "stopped: nothing was written to %s", t.cfg->mcp_path);
			goto out;
		}
		n = (size_t)got;
	}
	if (cfg_approve(t.cfg->mcp_path, name, hash, changes, n, err) < 0)
		goto out;
	mpath = manifest_record_path(t.data_dir, name, hash);
	if (manifest_record_save(mpath, name, t.server->image, hash, f.tools, err) < 0)
		goto out;
	printf("approved %s: manifest = \"%s\" written to %s\n", name, hash, t.cfg->mcp_path);
	status = EXIT_OK;
out:
	json_free(reviewed);
	gw_manifest_fetch_free(&f);
	target_close(&t);
	return status;
}
