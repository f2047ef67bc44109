/* Tests of the configuration module. Run from the repository's top.
 *
 * Failing files are data: every file in testdata/config/bad/ (loaded as
 * mcp.toml) and testdata/config/bad-config/ (loaded as config.toml beside
 * testdata/config/good-minimal.toml) starts with one "# expect: " line per
 * error, the exact line of the report, path included. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/testing.h"
#include "internal/base/xalloc.h"
#include "internal/config/config-internal.h"
#include "internal/config/config.h"
#include "internal/toml/toml.h"

#define DIGEST   "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define MANIFEST "sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
#define MINIMAL  "testdata/config/good-minimal.toml"

/* the "# expect: " lines at the top of text, joined by "\n" */
static char *expectations(const char *text)
{
	struct mg_buf b = MG_BUF_INIT(1u << 20);
	static const char tag[] = "# expect: ";
	const char *p = text;
	while (strncmp(p, tag, sizeof(tag) - 1) == 0) {
		p += sizeof(tag) - 1;
		size_t n = strcspn(p, "\n");
		if (b.len > 0)
			mg_buf_putc(&b, '\n', NULL);
		mg_buf_append(&b, p, n, NULL);
		p += n + (p[n] == '\n');
	}
	size_t len;
	return mg_buf_steal(&b, &len);
}

/* mcpgate's own public suffix list, as every test here reads it unless it
 * says otherwise (main sets $MCPGATE_PUBLIC_SUFFIX_LIST to it) */
static char *suffix_list;

/* text (freed) with every key replaced by value, allocated */
static char *subst(char *text, const char *key, const char *value)
{
	struct mg_buf b = MG_BUF_INIT(1u << 20);
	const char *p = text, *hit;
	while ((hit = strstr(p, key)) != NULL) {
		mg_buf_append(&b, p, (size_t)(hit - p), NULL);
		mg_buf_append(&b, value, strlen(value), NULL);
		p = hit + strlen(key);
	}
	mg_buf_append(&b, p, strlen(p), NULL);
	free(text);
	size_t len;
	return mg_buf_steal(&b, &len);
}

static void run_bad_dir(const char *dir, bool as_config, size_t at_least)
{
	size_t n;
	char **names = t_list_dir(dir, ".toml", &n);
	T_OK(n >= at_least, "%s holds %zu failing files (at least %zu)", dir, n, at_least);
	for (size_t i = 0; i < n; i++) {
		cleanup_free char *path = xasprintf("%s/%s", dir, names[i]);
		cleanup_free char *text = t_read_file(path, NULL);
		cleanup_free char *want = subst(expectations(text), "@SUFFIX_LIST@", suffix_list);
		struct cfg *cfg = NULL;
		cleanup_err struct mg_err *err = NULL;
		int r = as_config ? cfg_load_files(MINIMAL, path, &cfg, &err)
		                  : cfg_load_files(path, NULL, &cfg, &err);
		T_OK(want[0] != '\0', "%s has an expect line", path);
		T_INT(r, -1, "%s is refused", path);
		T_STR(mg_err_msg(err), want, "%s: the report", path);
		cfg_free(cfg);
		free(names[i]);
	}
	free(names);
}

static struct cfg *load(const char *mcp, const char *config)
{
	struct cfg *cfg = NULL;
	cleanup_err struct mg_err *err = NULL;
	int r = cfg_load_files(mcp, config, &cfg, &err);
	T_INT(r, 0, "%s loads", mcp);
	if (r < 0)
		t_note("%s", mg_err_msg(err));
	return cfg;
}

static void test_minimal(void)
{
	struct cfg *cfg = load(MINIMAL, NULL);
	if (cfg == NULL)
		return;
	T_INT(cfg->nservers, 1, "minimal: one server");
	const struct cfg_server *s = &cfg->servers[0];
	T_STR(s->name, "probe", "minimal: name");
	T_INT(s->transport, CFG_TRANSPORT_CONTAINER, "minimal: transport");
	T_INT(s->pos.line, 2, "minimal: header line");
	T_INT(s->pos.col, 1, "minimal: header column");
	T_STR(s->image_name, "localhost/probe", "minimal: image name");
	T_STR(s->image_digest, "sha256:" DIGEST, "minimal: image digest");
	T_INT(s->nhosts, 0, "minimal: no network");
	T_INT(s->nmounts, 0, "minimal: no mounts");
	T_OK(s->command == NULL && s->args == NULL, "minimal: no command or args");
	T_INT((long long)s->memory, 512ll << 20, "minimal: memory defaults to 512m");
	T_INT(s->pids, 128, "minimal: pids default to 128");
	T_OK(s->credential == NULL && s->position == CFG_POSITION_NONE, "minimal: no credential");
	T_OK(s->workspaces == NULL, "minimal: every workspace");
	T_OK(s->manifest == NULL && s->manifest_pos.line == 0, "minimal: unapproved");
	T_INT(s->ntools, 0, "minimal: no tools");
	T_OK(s->url == NULL, "minimal: no url");
	T_INT(cfg->mcp.runtime, CFG_RUNTIME_UNSET, "defaults: runtime unset");
	T_OK(cfg->mcp.egress == NULL, "defaults: no egress path");
	T_OK(cfg->debian.mirror == NULL && cfg->debian.security == NULL &&
	         cfg->debian.keyring == NULL,
	     "defaults: no [debian], Debian's own archive");
	T_INT((long long)cfg->mcp.line_max, 16777216, "defaults: line_max 16 MiB");
	T_INT(cfg->mcp.start_timeout, 60, "defaults: start_timeout");
	T_INT(cfg->mcp.call_timeout, 300, "defaults: call_timeout");
	T_INT(cfg->mcp.stop_timeout, 5, "defaults: stop_timeout");
	T_INT(cfg->mcp.listen_clients, 16, "defaults: listen_clients");
	T_INT(cfg->mcp.listen_requests, 32, "defaults: listen_requests");
	T_INT((long long)cfg->mcp.listen_body_max, 4194304, "defaults: listen_body_max 4 MiB");
	T_INT(cfg->mcp.listen_idle_timeout, 1800, "defaults: listen_idle_timeout");
	T_INT(cfg->mcp.listen_read_timeout, 30, "defaults: listen_read_timeout");
	T_STR(cfg->mcp_path, MINIMAL, "the mcp.toml path is kept");
	T_OK(cfg->config_path == NULL, "no config.toml path");
	T_OK(cfg_find_server(cfg, "probe") == s, "cfg_find_server finds probe");
	T_OK(cfg_find_server(cfg, "nope") == NULL, "cfg_find_server: no such server");
	cfg_free(cfg);
}

static void test_full(void)
{
	setenv("HOME", "/home/tester/", 1);
	struct cfg *cfg =
	    load("testdata/config/good-full.toml", "testdata/config/good-config.toml");
	if (cfg == NULL)
		return;
	T_INT(cfg->nservers, 4, "full: four servers in file order");
	if (cfg->nservers != 4) {
		cfg_free(cfg);
		return;
	}
	const struct cfg_server *s = &cfg->servers[0];
	T_STR(s->name, "files", "full: first server");
	T_INT(s->pos.line, 2, "full: its header line");
	T_STR(s->image, "localhost:5000/mcp/files@sha256:" DIGEST, "full: image as written");
	T_STR(s->image_name, "localhost:5000/mcp/files", "full: image name with registry port");
	T_STR(s->image_digest, "sha256:" DIGEST, "full: image digest");
	T_INT(s->nhosts, 4, "full: four hosts");
	if (s->nhosts == 4) {
		T_STR(s->hosts[0].host, "api.example.com", "full: host lower case, no dot");
		T_INT(s->hosts[0].port, 0, "full: bare host");
		T_OK(!s->hosts[0].private_ok, "full: public host");
		T_STR(s->hosts[1].host, "10.1.2.3", "full: IPv4 host");
		T_INT(s->hosts[1].port, 8443, "full: IPv4 port");
		T_OK(s->hosts[1].private_ok, "full: network_private marks the host");
		T_STR(s->hosts[2].host, "[2606:4700::1111]", "full: IPv6 in inet_ntop form");
		T_INT(s->hosts[2].port, 8443, "full: IPv6 port");
		T_INT(s->hosts[2].pos.line, 6, "full: host line");
		T_INT(s->hosts[2].pos.col, 49, "full: host column");
		T_STR(s->hosts[3].host, "registry.example.org", "full: fourth host");
	}
	T_INT(s->nmounts, 3, "full: three mounts");
	if (s->nmounts == 3) {
		T_STR(s->mounts[0].path, "docs", "full: mount read by default");
		T_OK(!s->mounts[0].write, "full: read-only by default");
		T_STR(s->mounts[1].path, "out", "full: mount normalised");
		T_OK(s->mounts[1].write, "full: :write");
		T_STR(s->mounts[2].path, "src/lib", "full: doubled slash dropped");
		T_OK(!s->mounts[2].write, "full: :read");
	}
	T_INT(s->ncommand, 1, "full: command");
	T_STR(s->command[0], "/bin/files-server", "full: command[0]");
	T_OK(s->command[1] == NULL, "full: command NULL-terminated");
	T_INT(s->nargs, 3, "full: args");
	T_STR(s->args[2], "--verbose", "full: args[2]");
	T_OK(s->args[3] == NULL, "full: args NULL-terminated");
	T_STR(s->credential, "files.token", "full: credential");
	T_INT(s->position, CFG_POSITION_ENV, "full: env position");
	T_STR(s->position_name, "FILES_TOKEN", "full: env name");
	T_INT((long long)s->memory, 1ll << 30, "full: memory 1g");
	T_INT(s->pids, 256, "full: pids");
	T_INT(s->nworkspaces, 2, "full: workspaces");
	if (s->nworkspaces == 2) {
		T_STR(s->workspaces[0], "/srv/projects", "full: trailing slash dropped");
		T_STR(s->workspaces[1], "/home/tester/src/app", "full: ~/ expanded from $HOME");
		T_OK(s->workspaces[2] == NULL, "full: workspaces NULL-terminated");
	}
	T_STR(s->manifest, MANIFEST, "full: manifest");
	T_INT(s->manifest_pos.line, 16, "full: manifest line");
	T_INT(s->nenv, 2, "full: two env settings");
	if (s->nenv == 2) {
		T_STR(s->env[0].name, "MEMORY_FILE_PATH", "full: env name, in file order");
		T_STR(s->env[0].value, "/tmp/memory.jsonl", "full: env value");
		T_STR(s->env[1].name, "files_mode", "full: a lower-case env name");
		T_STR(s->env[1].value, "read only", "full: a value with a space");
		T_INT(s->env[0].pos.line, 17, "full: env key line");
	}
	T_INT(s->manifest_pos.col, 1, "full: manifest column");
	T_INT(s->ntools, 3, "full: three tools");
	if (s->ntools == 3) {
		T_STR(s->tools[0].name, "read_file", "full: tool 0");
		T_OK(s->tools[0].on, "full: tool 0 on");
		T_INT(s->tools[0].effect, CFG_EFFECT_READ, "full: tool 0 read");
		T_INT(s->tools[0].pos.line, 19, "full: tool 0 line");
		T_INT(s->tools[0].on_pos.line, 20, "full: tool 0 on line");
		T_INT(s->tools[0].effect_pos.line, 21, "full: tool 0 effect line");
		T_INT(s->tools[1].effect, CFG_EFFECT_WRITE, "full: tool 1 write");
		T_STR(s->tools[2].name, "list.dirs", "full: quoted tool name");
		T_OK(!s->tools[2].on, "full: a tool is off by default");
		T_INT(s->tools[2].effect, CFG_EFFECT_UNDECLARED, "full: effect undeclared");
		T_INT(s->tools[2].on_pos.line, 0, "full: no on key");
	}

	s = &cfg->servers[1];
	T_STR(s->name, "search", "full: remote server");
	T_INT(s->transport, CFG_TRANSPORT_REMOTE, "full: remote transport");
	T_STR(s->url, "https://MCP.example.com:8443/v1/mcp?x=1", "full: url as written");
	T_STR(s->url_host, "mcp.example.com", "full: url host lower case");
	T_INT(s->url_port, 8443, "full: url port");
	T_INT(s->position, CFG_POSITION_HEADER, "full: header position");
	T_STR(s->position_name, "Authorization", "full: header name");
	T_OK(s->image == NULL && s->nhosts == 0 && s->nmounts == 0, "full: no container keys");
	T_INT(s->ntools, 1, "full: inline tool table");
	if (s->ntools == 1) {
		T_STR(s->tools[0].name, "query", "full: dotted tool name");
		T_OK(s->tools[0].on, "full: inline on");
		T_INT(s->tools[0].effect, CFG_EFFECT_READ, "full: inline effect");
	}
	s = &cfg->servers[2];
	T_STR(s->url_host, "127.0.0.1", "full: http on 127.0.0.1");
	T_INT(s->url_port, 3000, "full: loopback port");
	T_OK(s->workspaces != NULL && s->workspaces[0] == NULL && s->nworkspaces == 0,
	     "full: workspaces = [] is no workspace");
	s = &cfg->servers[3];
	T_STR(s->url_host, "[::1]", "full: http on [::1]");
	T_INT(s->url_port, 80, "full: http's default port");

	T_INT(cfg->mcp.runtime, CFG_RUNTIME_DOCKER, "config: runtime");
	T_STR(cfg->mcp.egress, "/usr/libexec/mcpgate/mcpgate-egress", "config: egress");
	T_STR(cfg->mcp.swarm_registry, "registry.example:5000", "config: swarm_registry");
	T_INT((long long)cfg->mcp.line_max, 1048576, "config: line_max");
	T_INT(cfg->mcp.start_timeout, 120, "config: start_timeout");
	T_INT(cfg->mcp.call_timeout, 86400, "config: call_timeout");
	T_INT(cfg->mcp.stop_timeout, 1, "config: stop_timeout");
	T_INT(cfg->mcp.listen_clients, 4, "config: listen_clients");
	T_INT(cfg->mcp.listen_requests, 8, "config: listen_requests");
	T_INT((long long)cfg->mcp.listen_body_max, 1048576,
	      "config: listen_body_max, cut to line_max");
	T_INT(cfg->mcp.listen_idle_timeout, 60, "config: listen_idle_timeout");
	T_INT(cfg->mcp.listen_read_timeout, 10, "config: listen_read_timeout");
	T_STR(cfg->config_path, "testdata/config/good-config.toml", "config: path kept");
	T_STR(cfg->debian.mirror, "https://mirror.example.com/debian", "config: [debian] mirror");
	T_STR(cfg->debian.security, "file:/srv/mirror/debian-security",
	      "config: [debian] security");
	T_STR(cfg->debian.keyring, "/etc/mcpgate/mirror-keyring.gpg", "config: [debian] keyring");
	cfg_free(cfg);
}

static void test_load_dir(void)
{
	struct cfg *cfg = NULL;
	cleanup_err struct mg_err *err = NULL;
	T_INT(cfg_load("testdata/config/dir/", &cfg, &err), 0, "cfg_load reads a folder");
	if (cfg != NULL) {
		T_STR(cfg->mcp_path, "testdata/config/dir/mcp.toml", "cfg_load: mcp.toml path");
		T_STR(cfg->config_path, "testdata/config/dir/config.toml",
		      "cfg_load: config.toml path");
		T_INT(cfg->mcp.runtime, CFG_RUNTIME_PODMAN, "cfg_load: config.toml read");
		T_INT(cfg->mcp.stop_timeout, 10, "cfg_load: stop_timeout from config.toml");
		cfg_free(cfg);
		cfg = NULL;
	}
	T_INT(cfg_load("testdata/config/dir-no-config", &cfg, &err), 0,
	      "cfg_load: config.toml is optional");
	if (cfg != NULL) {
		T_OK(cfg->config_path == NULL, "cfg_load: no config.toml path");
		T_INT(cfg->mcp.stop_timeout, 5, "cfg_load: defaults without config.toml");
		cfg_free(cfg);
		cfg = NULL;
	}
	T_INT(cfg_load("testdata/config/no-such-dir", &cfg, &err), -1,
	      "cfg_load: mcp.toml is required");
	T_STR(mg_err_msg(err),
	      "testdata/config/no-such-dir/mcp.toml does not exist: mcp.toml lists the servers "
	      "mcpgate runs (start from mcp.toml.example)",
	      "cfg_load: the message names the path");
	T_OK(cfg == NULL, "cfg_load: nothing returned on failure");
	mg_err_clear(&err);
	T_INT(cfg_load_files("testdata/config/none.toml", NULL, &cfg, &err), -1,
	      "cfg_load_files: a missing file");
	T_STR(mg_err_msg(err), "cannot read testdata/config/none.toml: No such file or directory",
	      "cfg_load_files: the message names the path");
	mg_err_clear(&err);
	T_INT(cfg_load_files("testdata/config", NULL, &cfg, &err), -1,
	      "cfg_load_files: a folder is not a file");
	T_STR(mg_err_msg(err), "cannot read testdata/config: not a regular file",
	      "cfg_load_files: not a regular file");
	mg_err_clear(&err);
	T_INT(cfg_load_files(MINIMAL, "testdata/config/none.toml", &cfg, &err), -1,
	      "cfg_load_files: a config.toml named is required");
	cfg_free(NULL);
	T_OK(1, "cfg_free(NULL) does nothing");
}

static void expect_parse(const char *mcp, const char *config, const char *want, const char *what)
{
	struct cfg *cfg = NULL;
	cleanup_err struct mg_err *err = NULL;
	int r = cfg_parse(mcp, strlen(mcp), "mcp.toml", config, config != NULL ? strlen(config) : 0,
	                  "config.toml", &cfg, &err);
	if (want == NULL) {
		T_INT(r, 0, "%s: loads", what);
		if (r < 0)
			t_note("%s", mg_err_msg(err));
	} else {
		T_INT(r, -1, "%s: refused", what);
		T_STR(mg_err_msg(err), want, "%s: the report", what);
	}
	cfg_free(cfg);
}

#define SERVER_C \
	"[[server]]\nname = \"s\"\ntransport = \"container\"\nimage = \"a@sha256:" DIGEST "\"\n"

static void test_parse(void)
{
	expect_parse(
	    SERVER_C "memory = 1\n", "[mcp]\nruntime = \"crun\"\nline_max = 1\n",
	    "mcp.toml:5:10: \"memory\" must be a string, not integer\n"
	    "config.toml:2:11: \"runtime\" \"crun\" must be \"podman\", \"docker\" or \"swarm\" "
	    "(leave it out for podman when it is on PATH, else docker)\n"
	    "config.toml:3:12: \"line_max\" 1 is out of range: from 1024 to 1073741824 "
	    "bytes",
	    "errors of both files, mcp.toml first");
	expect_parse("", NULL, NULL, "an empty mcp.toml: no servers");
	expect_parse(SERVER_C, "", NULL, "an empty config.toml");
	/* a typo far from any key gets no suggestion; one close gets one */
	expect_parse(SERVER_C "Image = \"x\"\n", NULL,
	             "mcp.toml:5:1: unknown key \"Image\" in [[server]] (did you mean \"image\"?)",
	             "a key in the wrong case");
	/* a key of the other transport is reported once, not checked again */
	expect_parse("[[server]]\nname = \"r\"\ntransport = \"remote\"\nurl = "
	             "\"https://a.example/\"\nnetwork = [\"*\"]\n",
	             NULL,
	             "mcp.toml:5:1: \"network\" does not apply to a remote server (only to "
	             "container ones)",
	             "a container key on a remote server");
	/* with the transport unknown, every value is still checked */
	expect_parse("[[server]]\nname = \"s\"\ntransport = \"podman\"\nmemory = \"1\"\n", NULL,
	             "mcp.toml:3:13: unknown transport \"podman\" (expected \"container\" or "
	             "\"remote\")\n"
	             "mcp.toml:4:10: \"memory\" \"1\" is out of range: from 16m to 64g",
	             "an unknown transport");
	/* a bad network entry is not reported again by network_private */
	expect_parse(SERVER_C "network = [\"127.1\"]\nnetwork_private = [\"127.1\"]\n", NULL,
	             "mcp.toml:5:12: \"network\" entry \"127.1\" looks like an IP address but is "
	             "not in canonical form: IP literals are accepted only as four decimal octets "
	             "without leading zeros (127.0.0.1) or, for IPv6, in brackets",
	             "network_private of a bad entry");
	expect_parse(SERVER_C "network = [\"a.example\"]\nnetwork_private = [\"a.example\", "
	                      "\"A.example.\"]\n",
	             NULL,
	             "mcp.toml:6:33: \"network_private\" entry \"A.example.\" is listed twice",
	             "network_private twice");
	expect_parse(SERVER_C "network = [\"a.example\", \"a.example:443\", \"a.example:8443\"]\n",
	             NULL, NULL, "the same host with and without ports");
	/* the last character of the quoted value stays whole */
	expect_parse(SERVER_C "network = [\"bad\\u0001\"]\n", NULL,
	             "mcp.toml:5:12: \"network\" entry \"bad\\u0001\" is not a valid host name: a "
	             "host name holds only letters, digits, \"-\" and \".\"",
	             "a control character is escaped in the message");
	expect_parse(SERVER_C "[server.tools.a]\n[server.tools.b]\n", NULL, NULL,
	             "tools are tables after the header");

	unsetenv("HOME");
	expect_parse(SERVER_C "workspaces = [\"~/src\", \"/srv\"]\n", NULL,
	             "mcp.toml:5:15: \"workspaces\" entry \"~/src\" starts with ~/ but $HOME is "
	             "not set to an absolute path",
	             "~/ without $HOME");
	setenv("HOME", "/", 1);
	struct cfg *cfg = NULL;
	const char *text = SERVER_C "workspaces = [\"~\", \"~/x/\", \"/\"]\n";
	T_INT(cfg_parse(text, strlen(text), "m", NULL, 0, NULL, &cfg, NULL), 0,
	      "workspaces with HOME=/");
	if (cfg != NULL) {
		T_STR(cfg->servers[0].workspaces[0], "/", "~ alone is $HOME");
		T_STR(cfg->servers[0].workspaces[1], "/x", "~/x/ under HOME=/");
		T_STR(cfg->servers[0].workspaces[2], "/", "/ stays /");
		cfg_free(cfg);
	}
	/* a NULL err is allowed */
	cfg = NULL;
	T_INT(cfg_parse("x = 1", 5, "m", NULL, 0, NULL, &cfg, NULL), -1, "NULL err");
	T_OK(cfg == NULL, "NULL err: nothing returned");
}

/* toml_parse's own message for a file */
static char *toml_message(const char *path)
{
	size_t len;
	cleanup_free char *text = t_read_file(path, &len);
	struct toml_value *root = NULL;
	cleanup_err struct mg_err *err = NULL;
	if (toml_parse(text, len, path, &root, &err) == 0) {
		toml_free(root);
		return xstrdup("(parsed)");
	}
	return xstrdup(mg_err_msg(err));
}

/* A syntax error is reported as the parser words it, and stops only the
 * checks of its own file. */
static void test_syntax(void)
{
	const char *mcp = "testdata/config/syntax/syntax-error.toml";
	const char *conf = "testdata/config/syntax/config-syntax.toml";
	cleanup_free char *mcp_msg = toml_message(mcp);
	cleanup_free char *conf_msg = toml_message(conf);
	cleanup_free char *both = xasprintf("%s\n%s", mcp_msg, conf_msg);
	struct cfg *cfg = NULL;
	cleanup_err struct mg_err *err = NULL;
	T_INT(cfg_load_files(mcp, conf, &cfg, &err), -1, "syntax errors refused");
	T_STR(mg_err_msg(err), both, "each file's syntax error, mcp.toml first");
	mg_err_clear(&err);
	T_INT(cfg_load_files(MINIMAL, conf, &cfg, &err), -1, "config.toml syntax error");
	T_STR(mg_err_msg(err), conf_msg, "config.toml's syntax error alone");
	mg_err_clear(&err);
	cleanup_free char *with_cfg = xasprintf(
	    "%s\ntestdata/config/bad-config/cfg-runtime.toml:4:11: \"runtime\" "
	    "\"crun\" must be \"podman\", \"docker\" or \"swarm\" (leave it out for podman when "
	    "it is on PATH, else docker)",
	    mcp_msg);
	T_INT(cfg_load_files(mcp, "testdata/config/bad-config/cfg-runtime.toml", &cfg, &err), -1,
	      "a syntax error beside a rule's error");
	T_STR(mg_err_msg(err), with_cfg, "config.toml is still checked");
}

static void test_many_errors(void)
{
	struct mg_buf b = MG_BUF_INIT(1u << 20);
	mg_buf_puts(&b, SERVER_C, NULL);
	mg_buf_puts(&b, "network = [", NULL);
	for (int i = 0; i < 250; i++)
		mg_buf_printf(&b, NULL, "%s\"*\"", i ? ", " : "");
	mg_buf_puts(&b, "]\n", NULL);
	struct cfg *cfg = NULL;
	cleanup_err struct mg_err *err = NULL;
	T_INT(cfg_parse(b.data, b.len, "m", NULL, 0, NULL, &cfg, &err), -1, "250 errors");
	const char *msg = mg_err_msg(err);
	size_t lines = 1;
	for (const char *p = msg; *p != '\0'; p++)
		lines += *p == '\n';
	T_INT(lines, 201, "200 errors listed, then a count");
	const char *last = strrchr(msg, '\n');
	T_STR(last != NULL ? last + 1 : NULL, "(50 more errors)", "the count of the rest");
	mg_buf_free(&b);
}

struct check_case {
	const char *in;
	const char *want; /* the normal form, or NULL when refused */
	unsigned port;
};

static void test_hosts(void)
{
	static const struct check_case cases[] = {
	    {"example.com", "example.com", 0},
	    {"EXAMPLE.com.", "example.com", 0},
	    {"localhost:8080", "localhost", 8080},
	    {"0.0.0.0", "0.0.0.0", 0},
	    {"255.255.255.255:1", "255.255.255.255", 1},
	    {"[::1]", "[::1]", 0},
	    {"[2001:0db8:0000::1]:65535", "[2001:db8::1]", 65535},
	    {"[::ffff:10.0.0.1]", "[::ffff:10.0.0.1]", 0},
	    {"xn--bcher-kva.example", "xn--bcher-kva.example", 0},
	    {"1e100.net", "1e100.net", 0},
	    {"a-b.c-d", "a-b.c-d", 0},
	    {"127.0.0.01", NULL, 0},
	    {"1.2.3", NULL, 0},
	    {"1.2.3.4.", NULL, 0},
	    {"0x7f", NULL, 0},
	    {"01.2.3.4", NULL, 0},
	    {"a.b-", NULL, 0},
	    {".", NULL, 0},
	    {"a..", NULL, 0},
	    {"[fe80::1%eth0]", NULL, 0},
	    {"[::1", NULL, 0},
	    {"host:+80", NULL, 0},
	    {"host:-1", NULL, 0},
	    {"host: 80", NULL, 0},
	    {"ho st", NULL, 0},
	    {"例え.jp", NULL, 0},
	    {"*.Example.COM.", "*.example.com", 0},
	    {"*.example.com:8443", "*.example.com", 8443},
	    {"*.xn--bcher-kva.example", "*.xn--bcher-kva.example", 0},
	    {"*.com", "*.com", 0}, /* syntax only: the public suffix list refuses it */
	    {"*", NULL, 0},
	    {"*.", NULL, 0},
	    {"*:443", NULL, 0},
	    {"a.*.com", NULL, 0},
	    {"**.x.com", NULL, 0},
	    {"*x.com", NULL, 0},
	    {"x*.com", NULL, 0},
	    {"*.*.com", NULL, 0},
	    {"*.1.2.3.4", NULL, 0},
	    {"*.1.2.3.4:443", NULL, 0},
	    {"*.[::1]", NULL, 0},
	    {"*.[2001:db8::1]:443", NULL, 0},
	    {"*.127.1", NULL, 0},
	    {"*.0x7f.1", NULL, 0},
	    {"*.example.123", NULL, 0},
	    {"*..example.com", NULL, 0},
	    {"*.example.com:0", NULL, 0},
	    {"https://*.example.com", NULL, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cfg_host h = {0};
		int r = cfg_parse_host(cases[i].in, "host", &h, NULL);
		if (cases[i].want == NULL) {
			T_INT(r, -1, "host %s refused", cases[i].in);
		} else {
			T_INT(r, 0, "host %s accepted", cases[i].in);
			T_STR(h.host, cases[i].want, "host %s normal form", cases[i].in);
			T_INT(h.port, cases[i].port, "host %s port", cases[i].in);
		}
		free(h.host);
	}
}

/* The public suffix list, read as mcpgate reads it */
static void test_suffixes(void)
{
	struct cfg_suffixes *list = NULL;
	cleanup_err struct mg_err *err = NULL;
	T_INT(cfg_suffixes_open(CFG_SUFFIX_LIST_TREE, &list, &err), 0,
	      "mcpgate's own list opens: %s", mg_err_msg(err));
	if (list != NULL) {
		/* both sections, wildcard rules, punycode; and the suffixes under
		 * which anyone gets a name that Debian 12's list lacked */
		static const char *const public[] = {"com",
		                                     "co.uk",
		                                     "uk",
		                                     "ck",
		                                     "foo.ck",
		                                     "github.io",
		                                     "nom.br",
		                                     "x.nom.br",
		                                     "xn--55qx5d.cn",
		                                     "xn--p1ai",
		                                     "zzunknown",
		                                     "s3.us-east-1.amazonaws.com",
		                                     "blob.core.windows.net",
		                                     "ngrok-free.app",
		                                     "execute-api.us-east-1.amazonaws.com",
		                                     "lambda-url.us-east-1.on.aws",
		                                     "r2.dev",
		                                     "trycloudflare.com",
		                                     "ngrok-free.dev",
		                                     "supabase.co",
		                                     NULL};
		for (size_t i = 0; public[i] != NULL; i++)
			T_OK(cfg_suffixes_public(list, public[i]), "%s is a public suffix",
			     public[i]);
		static const char *const owned[] = {"example.com",
		                                    "www.ck",
		                                    "a.foo.ck",
		                                    "bbc.co.uk",
		                                    "a.xn--55qx5d.cn",
		                                    "a.github.io",
		                                    "storage.googleapis.com",
		                                    NULL};
		for (size_t i = 0; owned[i] != NULL; i++)
			T_OK(!cfg_suffixes_public(list, owned[i]), "%s is not a public suffix",
			     owned[i]);
		/* the nearest parent in the private section */
		static const struct {
			const char *name, *parent;
		} parents[] = {
		    {"storage.googleapis.com", "googleapis.com"},
		    {"a.github.io", "github.io"},
		    {"x.a.github.io", "github.io"},
		    {"bucket.s3.amazonaws.com", "s3.amazonaws.com"},
		    {"api.example.com", NULL},
		    {"a.b.example.co.uk", NULL},
		    {"github.io", NULL},
		    {"com", NULL},
		};
		for (size_t i = 0; i < sizeof(parents) / sizeof(parents[0]); i++) {
			const char *got = cfg_suffixes_private_parent(list, parents[i].name);
			T_STR(got != NULL ? got : "(none)",
			      parents[i].parent != NULL ? parents[i].parent : "(none)",
			      "%s lies under a private suffix: %s", parents[i].name,
			      got != NULL ? got : "(none)");
		}
	}
	cfg_suffixes_free(list);
	cfg_suffixes_free(NULL);

	list = NULL;
	T_INT(cfg_suffixes_open("testdata/config/suffix/tiny.dat", &list, &err), 0,
	      "a list of five rules opens: %s", mg_err_msg(err));
	if (list != NULL) {
		T_OK(cfg_suffixes_public(list, "co.uk") && cfg_suffixes_public(list, "foo.ck") &&
		         cfg_suffixes_public(list, "zz") && cfg_suffixes_public(list, "github.io"),
		     "the file's rules decide, and its wildcard rule, and the default rule");
		T_OK(!cfg_suffixes_public(list, "www.ck") &&
		         !cfg_suffixes_public(list, "blob.core.windows.net"),
		     "its exception decides, and what it lacks is no suffix");
	}
	cfg_suffixes_free(list);

	list = NULL;
	T_INT(cfg_suffixes_open("testdata/config/suffix/missing.dat", &list, &err), -1,
	      "a missing list fails");
	T_OK(list == NULL && strstr(mg_err_msg(err), "testdata/config/suffix/missing.dat") &&
	         strstr(mg_err_msg(err), "No such file"),
	     "naming the file and why: %s", mg_err_msg(err));
	mg_err_clear(&err);
	static const char *const partial[] = {"testdata/config/suffix/empty.dat",
	                                      "testdata/config/suffix/icann-only.dat",
	                                      "testdata/config/suffix", NULL};
	for (size_t i = 0; partial[i] != NULL; i++) {
		T_INT(cfg_suffixes_open(partial[i], &list, &err), -1, "%s fails", partial[i]);
		T_OK(list == NULL &&
		         (strstr(mg_err_msg(err), "is not a whole public suffix list") ||
		          strstr(mg_err_msg(err), "is not one libpsl can read")),
		     "as not a whole public suffix list: %s", mg_err_msg(err));
		mg_err_clear(&err);
	}

	/* the default is mcpgate's own copy beside the binary, never the
	 * system's; this test program has none beside it, so it names where
	 * the installed one should be */
	unsetenv("MCPGATE_PUBLIC_SUFFIX_LIST");
	cleanup_free char *path = cfg_suffix_list_path();
	const char *tail = "/" CFG_SUFFIX_LIST_INSTALLED;
	T_OK(strlen(path) > strlen(tail) && strcmp(path + strlen(path) - strlen(tail), tail) == 0,
	     "without the environment, the list is the installed one: %s", path);
	setenv("MCPGATE_PUBLIC_SUFFIX_LIST", "relative.dat", 1);
	cleanup_free char *relative = cfg_suffix_list_path();
	T_STR(relative, path, "a relative override is ignored");
	setenv("MCPGATE_PUBLIC_SUFFIX_LIST", "/elsewhere/list.dat", 1);
	cleanup_free char *absolute = cfg_suffix_list_path();
	T_STR(absolute, "/elsewhere/list.dat", "an absolute one is taken");
	setenv("MCPGATE_PUBLIC_SUFFIX_LIST", suffix_list, 1);
}

/* Wildcard entries in a whole configuration */
static void test_wildcards(void)
{
	struct cfg *cfg = load("testdata/config/good-wildcard.toml", NULL);
	if (cfg != NULL) {
		const struct cfg_server *s = &cfg->servers[0];
		T_INT(s->nhosts, 4, "wildcards: four hosts");
		if (s->nhosts == 4) {
			T_STR(s->hosts[0].host, "*.example.com", "a wildcard in its normal form");
			T_OK(s->hosts[0].port == 0 && !s->hosts[0].private_ok,
			     "a bare public wildcard");
			T_STR(s->hosts[1].host, "*.www.ck", "a wildcard under an exception rule");
			T_OK(s->hosts[2].port == 8443 && s->hosts[2].private_ok,
			     "network_private marks a wildcard with a port");
			T_STR(s->hosts[3].host, "example.com", "the apex is an entry of its own");
		}
		cfg_free(cfg);
	}
	expect_parse(SERVER_C "network = [\"*.a.example\", \"*.A.example.\"]\n", NULL,
	             "mcp.toml:5:27: \"network\" entry \"*.A.example.\" is listed twice (first at "
	             "5:12)",
	             "a wildcard listed twice");

	/* without the list, a wildcard is refused; a configuration without one
	 * does not need it */
	const char *wild = SERVER_C "network = [\"*.example.com\"]\n";
	setenv("MCPGATE_PUBLIC_SUFFIX_LIST", "/nonexistent/public_suffix_list.dat", 1);
	expect_parse(
	    wild, NULL,
	    "mcp.toml:5:12: server \"s\": \"network\" entry \"*.example.com\" cannot be "
	    "checked against the public suffix list, so it is refused: the public "
	    "suffix list /nonexistent/public_suffix_list.dat cannot be read: No such "
	    "file or directory (make install puts mcpgate's own copy in PREFIX/share/mcpgate)",
	    "a wildcard without the list");
	expect_parse(SERVER_C "network = [\"api.example.com\"]\n", NULL, NULL,
	             "no wildcard, no list needed");
	/* the list the environment names decides: a tiny one lacks co.uk's
	 * neighbours and every platform but github.io */
	cleanup_free char *tiny = realpath("testdata/config/suffix/tiny.dat", NULL);
	T_OK(tiny != NULL, "the tiny list is there");
	if (tiny == NULL)
		return;
	setenv("MCPGATE_PUBLIC_SUFFIX_LIST", tiny, 1);
	cleanup_free char *want = xasprintf(
	    "mcp.toml:5:39: server \"s\": \"network\" entry \"*.co.uk\" is a wildcard on a "
	    "public suffix: the public suffix list (%s) counts co.uk as one, so the names under "
	    "it belong to whoever registers them; list each host, or a wildcard under a domain "
	    "with one owner",
	    tiny);
	expect_parse(SERVER_C "network = [\"*.blob.core.windows.net\", \"*.co.uk\"]\n", NULL, want,
	             "the environment's list");
	setenv("MCPGATE_PUBLIC_SUFFIX_LIST", suffix_list, 1);
}

static void test_images(void)
{
	static const struct check_case cases[] = {
	    {"node@sha256:" DIGEST, "node", 0},
	    {"docker.io/library/node@sha256:" DIGEST, "docker.io/library/node", 0},
	    {"localhost:5000/probe@sha256:" DIGEST, "localhost:5000/probe", 0},
	    {"localhost/probe@sha256:" DIGEST, "localhost/probe", 0},
	    {"ghcr.io/a-b/c__d/e.f_g---h@sha256:" DIGEST, "ghcr.io/a-b/c__d/e.f_g---h", 0},
	    {"node@sha256:" DIGEST "0", NULL, 0},
	    {"node@sha512:" DIGEST, NULL, 0},
	    {"node@@sha256:" DIGEST, NULL, 0},
	    {"@sha256:" DIGEST, NULL, 0},
	    {"a/@sha256:" DIGEST, NULL, 0},
	    {"a___b@sha256:" DIGEST, NULL, 0},
	    {"_a@sha256:" DIGEST, NULL, 0},
	    {"a.-b@sha256:" DIGEST, NULL, 0},
	    {"reg.example:0/a@sha256:" DIGEST, NULL, 0},
	    {"-reg.example/a@sha256:" DIGEST, NULL, 0},
	    {"localhost:5000@sha256:" DIGEST, NULL, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *name = NULL, *digest = NULL;
		int r = cfg_parse_image(cases[i].in, "image", &name, &digest, NULL);
		if (cases[i].want == NULL) {
			T_INT(r, -1, "image %s refused", cases[i].in);
		} else {
			T_INT(r, 0, "image %s accepted", cases[i].in);
			T_STR(name, cases[i].want, "image %s name", cases[i].in);
			T_STR(digest, "sha256:" DIGEST, "image %s digest", cases[i].in);
		}
		free(name);
		free(digest);
	}
}

static void test_urls(void)
{
	static const struct check_case cases[] = {
	    {"https://a.example", "a.example", 443},
	    {"https://a.example?x=1", "a.example", 443},
	    {"https://A.example:8443/p", "a.example", 8443},
	    {"http://localhost/mcp", "localhost", 80},
	    {"http://LOCALHOST.:3000/", "localhost", 3000},
	    {"http://127.255.0.1/", "127.255.0.1", 80},
	    {"https://[2001:db8::1]:8443/", "[2001:db8::1]", 8443},
	    {"http://[::1]:1/", "[::1]", 1},
	    {"http://[::2]/", NULL, 0},
	    {"http://128.0.0.1/", NULL, 0},
	    {"http://localhost.example/", NULL, 0},
	    {"https://a.example:/", NULL, 0},
	    {"https://a.example:0/", NULL, 0},
	    {"https://a.example:1:2/", NULL, 0},
	    {"https://[::1/", NULL, 0},
	    {"https://[::1]x/", NULL, 0},
	    {"HTTPS://a.example/", NULL, 0},
	    {"https://", NULL, 0},
	    {"https://@a.example/", NULL, 0},
	    {"https://a.example/\xc3\xa9", NULL, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *host = NULL;
		unsigned port = 0;
		int r = cfg_parse_url(cases[i].in, "url", &host, &port, NULL);
		if (cases[i].want == NULL) {
			T_INT(r, -1, "url %s refused", cases[i].in);
		} else {
			T_INT(r, 0, "url %s accepted", cases[i].in);
			T_STR(host, cases[i].want, "url %s host", cases[i].in);
			T_INT(port, cases[i].port, "url %s port", cases[i].in);
		}
		free(host);
	}
}

static void test_mounts(void)
{
	static const struct check_case cases[] = {
	    /* port stands for write here */
	    {"a", "a", 0},
	    {"a/b/", "a/b", 0},
	    {"./a/./b:write", "a/b", 1},
	    {"a:read", "a", 0},
	    {"sub/.mcpgate", "sub/.mcpgate", 0},
	    {".mcpgate2", ".mcpgate2", 0},
	    {"..a", "..a", 0},
	    {".MCPGATE", NULL, 0},
	    {".mcpgate", NULL, 0},
	    {"a/../b", NULL, 0},
	    {"..", NULL, 0},
	    {"a:", NULL, 0},
	    {"a:Write", NULL, 0},
	    {"a:b:read", NULL, 0},
	    {"a\x01b", NULL, 0},
	    {"//", NULL, 0},
	    {".", ".", 0},
	    {"./", ".", 0},
	    {".:read", ".", 0},
	    {".//.:read", ".", 0},
	    {".:write", NULL, 0},
	    {"./:write", NULL, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cfg_mount m = {0};
		int r = cfg_parse_mount(cases[i].in, "mount", &m, NULL);
		if (cases[i].want == NULL) {
			T_INT(r, -1, "mount %s refused", cases[i].in);
		} else {
			T_INT(r, 0, "mount %s accepted", cases[i].in);
			T_STR(m.path, cases[i].want, "mount %s path", cases[i].in);
			T_INT(m.write, cases[i].port, "mount %s access", cases[i].in);
		}
		free(m.path);
	}
}

static void test_values(void)
{
	static const struct {
		const char *in;
		unsigned long long want; /* 0: refused */
	} mem[] = {
	    {"16m", 16ull << 20},
	    {"64g", 64ull << 30},
	    {"16384k", 16ull << 20},
	    {"16777216", 16ull << 20},
	    {"2G", 2ull << 30},
	    {"16777215", 0},
	    {"68719476737", 0},
	    {"1.5g", 0},
	    {"-1g", 0},
	    {"+1g", 0},
	    {"1 g", 0},
	    {"g", 0},
	    {"18446744073709551616", 0},
	    {"1t", 0},
	};
	for (size_t i = 0; i < sizeof(mem) / sizeof(mem[0]); i++) {
		uint64_t v = 0;
		int r = cfg_parse_memory(mem[i].in, "memory", &v, NULL);
		if (mem[i].want == 0) {
			T_INT(r, -1, "memory %s refused", mem[i].in);
		} else {
			T_INT(r, 0, "memory %s accepted", mem[i].in);
			T_INT((long long)v, (long long)mem[i].want, "memory %s value", mem[i].in);
		}
	}
	static const char *const names_ok[] = {"a", "A-1", "a_b", "0x",
	                                       "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
	static const char *const names_bad[] = {"", "_a", "a_", "a__b", "a.b", "a/b", "é"};
	for (size_t i = 0; i < sizeof(names_ok) / sizeof(names_ok[0]); i++)
		T_INT(cfg_check_server_name(names_ok[i], "name", NULL), 0, "server name %s",
		      names_ok[i]);
	for (size_t i = 0; i < sizeof(names_bad) / sizeof(names_bad[0]); i++)
		T_INT(cfg_check_server_name(names_bad[i], "name", NULL), -1,
		      "server name \"%s\" refused", names_bad[i]);
	T_INT(cfg_check_tool_name("a.b-c_D9", "tool", NULL), 0, "tool name a.b-c_D9");
	T_INT(cfg_check_tool_name("a b", "tool", NULL), -1, "tool name with a space");
	T_INT(cfg_check_credential_name("gh.token-1_x", "cred", NULL), 0, "credential name");
	T_INT(cfg_check_credential_name("gh/token", "cred", NULL), -1, "credential with /");
	T_INT(cfg_check_manifest(MANIFEST, "m", NULL), 0, "manifest accepted");
	T_INT(cfg_check_manifest("SHA256:" DIGEST, "m", NULL), -1, "manifest prefix case");

	enum cfg_position pos = CFG_POSITION_NONE;
	char *name = NULL;
	T_INT(cfg_parse_position("env:X_1", "p", &pos, &name, NULL), 0, "env:X_1");
	T_INT(pos, CFG_POSITION_ENV, "env:X_1 is env");
	T_STR(name, "X_1", "env:X_1 name");
	free(name);
	name = NULL;
	/* a leading underscore is the runtimes' own (podman's _CONTAINERS_*) */
	T_INT(cfg_parse_position("env:_X1", "p", &pos, &name, NULL), -1, "env:_X1 is reserved");
	free(name);
	name = NULL;
	T_INT(cfg_parse_position("header:X-Api-Key", "p", &pos, &name, NULL), 0, "header");
	T_INT(pos, CFG_POSITION_HEADER, "header:X-Api-Key is a header");
	T_STR(name, "X-Api-Key", "header name");
	free(name);
	name = NULL;
	static const char *const pos_bad[] = {
	    "env:",
	    "header:",
	    "env:A-B",
	    "env:NODE_USE_ENV_PROXY",
	    "env:no_proxy",
	    "header:HOST",
	    "header:a:b",
	    "header:Content-Length",
	    "Env:X",
	    "header:Accept",
	    "header:mcp-protocol-version",
	};
	for (size_t i = 0; i < sizeof(pos_bad) / sizeof(pos_bad[0]); i++) {
		T_INT(cfg_parse_position(pos_bad[i], "p", &pos, &name, NULL), -1,
		      "position %s refused", pos_bad[i]);
		T_OK(name == NULL, "position %s: nothing returned", pos_bad[i]);
	}
}

static void test_quote(void)
{
	char *q = cfg_quote("a\"b\\c\n\x7f", 7);
	T_STR(q, "\"a\\\"b\\\\c\\n\\u007f\"", "quote escapes");
	free(q);
	q = cfg_quote("a\0b", 3);
	T_STR(q, "\"a\\u0000b\"", "quote shows a NUL");
	free(q);
	char long_text[200];
	memset(long_text, 'x', sizeof(long_text));
	/* a two-byte character across the cut stays whole */
	long_text[119] = '\xc3';
	long_text[120] = '\xa9';
	q = cfg_quote(long_text, sizeof(long_text));
	T_INT(strlen(q), 1 + 119 + 1 + 3, "quote cuts before a split character");
	free(q);
	q = cfg_quote("\xff", 1);
	T_STR(q, "\"\\xff\"", "quote shows a byte that is not UTF-8");
	free(q);
}

static void test_places(void)
{
	char *dir = NULL;
	cleanup_err struct mg_err *err = NULL;
	setenv("HOME", "/home/me/", 1);
	setenv("XDG_CONFIG_HOME", "/xdg/config", 1);
	setenv("XDG_DATA_HOME", "relative/data", 1);
	unsetenv("XDG_STATE_HOME");
	T_INT(cfg_default_config_dir(&dir, &err), 0, "config dir");
	T_STR(dir, "/xdg/config/mcpgate", "config dir from $XDG_CONFIG_HOME");
	free(dir);
	T_INT(cfg_default_data_dir(&dir, &err), 0, "data dir");
	T_STR(dir, "/home/me/.local/share/mcpgate", "a relative $XDG_DATA_HOME is ignored");
	free(dir);
	T_INT(cfg_default_state_dir(&dir, &err), 0, "state dir");
	T_STR(dir, "/home/me/.local/state/mcpgate", "state dir from $HOME");
	free(dir);
	setenv("XDG_CONFIG_HOME", "", 1);
	T_INT(cfg_default_config_dir(&dir, &err), 0, "config dir, empty XDG");
	T_STR(dir, "/home/me/.config/mcpgate", "an empty $XDG_CONFIG_HOME is ignored");
	free(dir);
	setenv("XDG_STATE_HOME", "/", 1);
	T_INT(cfg_default_state_dir(&dir, &err), 0, "state dir under /");
	T_STR(dir, "/mcpgate", "no doubled slash");
	free(dir);
	unsetenv("HOME");
	unsetenv("XDG_CONFIG_HOME");
	dir = NULL;
	T_INT(cfg_default_config_dir(&dir, &err), -1, "neither variable set");
	T_STR(mg_err_msg(err),
	      "cannot find the configuration folder: neither $XDG_CONFIG_HOME nor $HOME is set to "
	      "an absolute path",
	      "the message names both variables");
	T_OK(dir == NULL, "nothing returned");
}

static void test_example(void)
{
	setenv("HOME", "/home/me", 1);
	struct cfg *cfg = load("mcp.toml.example", NULL);
	T_OK(cfg != NULL && cfg->nservers >= 2, "mcp.toml.example has servers");
	cfg_free(cfg);
}

/* network_send_max: bytes a server may send out in a session */
/* connect: the destinations parsed, the host's loopback known as such,
 * localhost written as 127.0.0.1, a network kept; references expanded to
 * where the sidecar forwards each */
static void test_connect(void)
{
	struct cfg *cfg = load("testdata/config/good-connect.toml", NULL);
	if (cfg == NULL)
		return;
	const struct cfg_server *s = &cfg->servers[0];
	T_INT((long long)s->nconnect, 6, "connect: six destinations");
	T_OK(cfg_server_has_egress(s) && s->nhosts == 0,
	     "connect alone makes a server with egress");
	static const struct {
		const char *name, *host;
		unsigned port;
		bool loopback;
		const char *network;
	} want[] = {
	    {"pg", "127.0.0.1", 5432, true, NULL},      {"cache", "127.0.0.1", 6379, true, NULL},
	    {"lan", "192.168.1.20", 6379, false, NULL}, {"v6", "[::1]", 5433, true, NULL},
	    {"named", "db.example", 5432, false, NULL}, {"onnet", "redis", 6379, false, "my_net.1"},
	};
	for (size_t i = 0; i < s->nconnect && i < sizeof(want) / sizeof(want[0]); i++) {
		const struct cfg_connect *d = &s->connect[i];
		T_OK(strcmp(d->name, want[i].name) == 0 && strcmp(d->host, want[i].host) == 0 &&
		         d->port == want[i].port && d->loopback == want[i].loopback &&
		         (want[i].network == NULL
		              ? d->network == NULL
		              : d->network != NULL && strcmp(d->network, want[i].network) == 0),
		     "connect %s: %s:%u%s%s", d->name, d->host, d->port,
		     d->loopback ? " (the host's loopback)" : "",
		     d->network ? " on a network" : "");
	}
	const char *hosts[] = {"10.89.0.2", "10.89.0.2", "10.89.0.2",
	                       "10.89.0.2", "10.89.0.2", "10.89.0.2"};
	const unsigned ports[] = {5432, 6379, 40002, 5433, 40004, 40005};
	cleanup_free char *a = cfg_connect_expand(s->args[0], s, hosts, ports);
	T_STR(a, "postgres://10.89.0.2:5432/app", "{connect.NAME} is the address in its network");
	cleanup_free char *b = cfg_connect_expand(s->args[2], s, hosts, ports);
	cleanup_free char *c = cfg_connect_expand(s->args[3], s, hosts, ports);
	T_OK(strcmp(b, "10.89.0.2") == 0 && strcmp(c, "6379") == 0, "and .host and .port apart");
	cleanup_free char *d =
	    cfg_connect_expand("{connect.lan}{connect.lan}{x}{connect.", s, hosts, ports);
	T_STR(d, "10.89.0.2:4000210.89.0.2:40002{x}{connect.",
	      "each reference, the rest as written");
	cleanup_free char *e = cfg_connect_expand("{connect.lan}", s, NULL, NULL);
	T_STR(e, "{connect.lan}", "without addresses, as written");
	cfg_free(cfg);
}

static void test_send_max(void)
{
	struct cfg *cfg = load("testdata/config/good-send-max.toml", NULL);
	if (cfg == NULL)
		return;
	T_INT(cfg->nservers, 2, "send_max: two servers");
	T_INT((long long)cfg->servers[0].send_max, 100ll << 20, "send_max: 100m");
	T_INT((long long)cfg->servers[1].send_max, 0, "send_max: none, no cap");
	cfg_free(cfg);
	static const struct {
		const char *in;
		uint64_t want; /* 0: refused */
	} v[] = {{"1k", 1024},
	         {"1024g", 1ull << 40},
	         {"1048576", 1048576},
	         {"1023", 0},
	         {"1025g", 0},
	         {"0", 0},
	         {"", 0},
	         {"1t", 0},
	         {"18446744073709551615k", 0}};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		uint64_t out = 0;
		int r = cfg_parse_send_max(v[i].in, "network_send_max", &out, NULL);
		if (v[i].want == 0)
			T_INT(r, -1, "network_send_max %s refused", v[i].in);
		else
			T_OK(r == 0 && out == v[i].want, "network_send_max %s is %llu", v[i].in,
			     (unsigned long long)v[i].want);
	}
}

/* packages and home: the names kept in order; a kept home is the last
 * mount, written, marked as the home */
static void test_packages_home(void)
{
	struct cfg *cfg = load("testdata/config/good-packages.toml", NULL);
	if (cfg == NULL)
		return;
	const struct cfg_server *g = &cfg->servers[0], *p = &cfg->servers[1];
	T_OK(g->npackages == 2 && strcmp(g->packages[0], "git") == 0 &&
	         strcmp(g->packages[1], "openssh-client") == 0 && g->packages[2] == NULL,
	     "packages: both names, in order");
	T_OK(g->nmounts == 2 && !g->mounts[0].home && g->mounts[1].home && g->mounts[1].write &&
	         strcmp(g->mounts[1].path, ".state/git") == 0,
	     "home = \"workspace:PATH\": the last mount, written, the home");
	T_OK(p->npackages == 0 && p->packages == NULL && p->nmounts == 0,
	     "home = \"session\" and no packages: nothing added");
	cfg_free(cfg);
}

/* instance: session (the default), shared, exclusive */
static void test_instance(void)
{
	struct cfg *cfg = load("testdata/config/good-instance.toml", NULL);
	if (cfg == NULL)
		return;
	T_INT(cfg->nservers, 4, "instance: four servers");
	T_INT(cfg->servers[0].instance, CFG_INSTANCE_SESSION, "instance: session by default");
	T_INT(cfg->servers[1].instance, CFG_INSTANCE_SHARED, "instance: shared");
	T_INT(cfg->servers[2].instance, CFG_INSTANCE_EXCLUSIVE, "instance: exclusive");
	T_INT(cfg->servers[3].instance, CFG_INSTANCE_SESSION, "instance: session written out");
	T_STR(cfg_instance_name(cfg->servers[1].instance), "shared", "instance: its name");
	cfg_free(cfg);
}

int main(void)
{
	suffix_list = realpath(CFG_SUFFIX_LIST_TREE, NULL);
	if (suffix_list == NULL) {
		printf("not ok 1 - %s is not in the tree\n", CFG_SUFFIX_LIST_TREE);
		return 1;
	}
	setenv("MCPGATE_PUBLIC_SUFFIX_LIST", suffix_list, 1);
	run_bad_dir("testdata/config/bad", false, 100);
	run_bad_dir("testdata/config/bad-config", true, 10);
	test_minimal();
	test_instance();
	test_packages_home();
	test_full();
	test_load_dir();
	test_parse();
	test_syntax();
	test_many_errors();
	test_hosts();
	test_suffixes();
	test_wildcards();
	test_images();
	test_urls();
	test_mounts();
	test_values();
	test_quote();
	test_places();
	test_example();
	test_send_max();
	test_connect();
	free(suffix_list);
	return t_done();
}
