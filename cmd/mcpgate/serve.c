/* mcpgate serve: the main job. An MCP server on stdin/stdout for one client;
 * the real servers run contained. Nothing but MCP goes to stdout. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/mcpgate/commands.h"
#include "cmd/mcpgate/opts.h"
#include "cmd/mcpgate/setup.h"
#include "internal/base/buf.h"
#include "internal/base/cleanup.h"
#include "internal/base/log.h"
#include "internal/base/utf8.h"
#include "internal/base/xalloc.h"
#include "internal/gateway/gateway.h"
#include "internal/listen/listen.h"

/* The client's channel moves to fresh fds; fd 0 becomes /dev/null and fd 1 a
 * copy of stderr, so a stray write can never corrupt the MCP stream. */
static int take_stdio(int *in, int *out, struct mg_err **err)
{
	*in = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
	*out = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	if (*in < 0 || *out < 0)
		return mg_err_sys(err, errno, "taking standard input and output");
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
		return mg_err_sys(err, errno, "moving standard input and output aside");
	close(null);
	return 0;
}

/* serve run without --workspace from / or the home folder (a client that
 * starts it wherever it is): what that means for the servers' mounts, said
 * to the person through the client */
static char *workspace_note(const struct cfg *cfg, const char *ws)
{
	const char *home = getenv("HOME");
	bool root = strcmp(ws, "/") == 0;
	char home_real[PATH_MAX];
	bool at_home =
	    home != NULL && realpath(home, home_real) != NULL && strcmp(home_real, ws) == 0;
	if (!root && !at_home)
		return NULL;
	struct mg_buf b = MG_BUF_INIT(1 << 16);
	for (size_t i = 0; i < cfg->nservers; i++)
		for (size_t j = 0; j < cfg->servers[i].nmounts; j++)
			mg_buf_printf(&b, NULL, "%s%s's %s%s", b.len > 0 ? ", " : "",
			              cfg->servers[i].name, cfg->servers[i].mounts[j].path,
			              cfg->servers[i].mounts[j].write ? " (write)" : "");
	char *text = xasprintf(
	    "mcpgate serve was started without --workspace, in %s (%s)%s%s. A workspace is "
	    "the project folder the servers' mounts are taken from; %s. Give it in the "
	    "client's configuration: \"args\": [\"serve\", \"--workspace\", \"/path/to/project\"]",
	    ws, root ? "the root folder" : "your home folder",
	    b.len > 0 ? ": these mounts would be taken from there: " : "",
	    b.len > 0 ? mg_buf_str(&b) : "",
	    root ? "the whole machine is no project, and mcpgate's own folders are below it"
	         : "your home holds mcpgate's own folders (configuration, keychain) and every "
	           "other project, so a mount there reaches far more than one project");
	mg_buf_free(&b);
	return text;
}

/* Why serve's workspace (the current folder without --workspace) cannot be
 * used, or NULL with its real path in ws */
static char *workspace_problem(const char *workspace, char ws[PATH_MAX])
{
	const char *given = workspace != NULL ? workspace : ".";
	const char *how = workspace != NULL ? "serve --workspace" : "the folder serve started in";
	cleanup_free char *shown = mg_shown(given, strlen(given));
	struct stat st;
	if (realpath(given, ws) == NULL || stat(ws, &st) < 0) {
		int e = errno;
		ws[0] = '/', ws[1] = '\0';
		return xasprintf("workspace \"%s\" (%s): %s", shown, how, strerror(e));
	}
	if (!S_ISDIR(st.st_mode)) {
		ws[0] = '/', ws[1] = '\0';
		return xasprintf("workspace \"%s\" (%s): not a folder", shown, how);
	}
	return NULL;
}

int cmd_serve(int argc, char **argv, struct mg_err **err)
{
	const struct command *self = command_find("serve");
	const char *dir = NULL, *workspace = NULL, *listen = NULL;
	bool passthrough = false, listen_any = false;
	for (int i = 1; i < argc; i++) {
		int r;
		if (opt_flag(argv, i, "passthrough", &passthrough) ||
		    opt_flag(argv, i, "listen-any", &listen_any))
			continue;
		if ((r = opt_value(argc, argv, &i, "config", &dir)) != 0 ||
		    (r = opt_value(argc, argv, &i, "workspace", &workspace)) != 0 ||
		    (r = opt_value(argc, argv, &i, "listen", &listen)) != 0) {
			if (r < 0)
				return EXIT_USAGE;
			continue;
		}
		return usage_error(self, "unexpected argument \"%s\"", argv[i]);
	}
	if (listen_any && listen == NULL)
		return usage_error(self, "--listen-any goes with --listen ADDRESS");
	struct lst_address address;
	if (listen != NULL && lst_address_parse(listen, listen_any, &address, err) < 0)
		return EXIT_USAGE;
	char ws[PATH_MAX];
	/* a workspace that cannot be used: the client still gets an MCP server,
	 * one that says what is wrong in answer to everything it asks, as for a
	 * broken configuration (ending here, it would see its connection close) */
	cleanup_free char *workspace_error = workspace_problem(workspace, ws);

	struct cfg *cfg = NULL;
	struct ctr_driver *driver = NULL;
	struct session *s = NULL;
	cleanup_free char *state = NULL;
	cleanup_free char *data = NULL;
	cleanup_free char *config_error = NULL;
	cleanup_free char *note = NULL;
	int status = EXIT_FAIL;
	if (workspace_error != NULL) {
		if (cfg_parse("", 0, NULL, NULL, 0, NULL, &cfg, err) < 0)
			goto out;
	} else if (setup_config(dir, &cfg, err) < 0) {
		/* the client still gets an MCP server, one that says what to fix
		 * in answer to everything it asks: ending here, it would see only
		 * its connection close */
		config_error = xstrdup(mg_err_msg(*err));
		mg_err_clear(err);
		if (cfg_parse("", 0, NULL, NULL, 0, NULL, &cfg, err) < 0)
			goto out;
	}
	cfg->passthrough = passthrough;
	if (cfg_default_state_dir(&state, err) < 0 || cfg_default_data_dir(&data, err) < 0)
		goto out;
	bool containers = false;
	for (size_t i = 0; i < cfg->nservers; i++)
		containers |= cfg->servers[i].transport == CFG_TRANSPORT_CONTAINER;
	struct mg_err *derr = NULL;
	if (containers && setup_driver(cfg, &driver, &derr) < 0) {
		/* the session still serves what needs no runtime, and says why */
		mg_warn("%s", mg_err_msg(derr));
		mg_err_free(derr);
	}
	if (workspace == NULL && workspace_error == NULL)
		note = workspace_note(cfg, ws);
	if (listen != NULL) {
		/* stdout is no MCP channel here: clients come over HTTP */
		struct lst_options lo = {
		    .address = &address,
		    .cfg = cfg,
		    .driver = driver,
		    .state_dir = state,
		    .data_dir = data,
		    .workspace = ws,
		    .config_error = config_error,
		    .workspace_error = workspace_error,
		    .workspace_note = note,
		    .runtime_note = setup_runtime_note(),
		    .owner = getpid(),
		    .watch_config = true,
		};
		if (lst_run(&lo, err) == 0 && config_error == NULL && workspace_error == NULL)
			status = EXIT_OK;
		goto out;
	}
	int in, outfd;
	if (take_stdio(&in, &outfd, err) < 0)
		goto out;
	struct session_options opt = {
	    .cfg = cfg,
	    .driver = driver,
	    .state_dir = state,
	    .data_dir = data,
	    .workspace = ws,
	    .client_in = in,
	    .client_out = outfd,
	    .owner = getpid(),
	    .config_error = config_error,
	    .workspace_error = workspace_error,
	    .workspace_note = note,
	    .runtime_note = setup_runtime_note(),
	    .watch_config = true,
	};
	if (session_new(&opt, &s, err) < 0)
		goto out;
	mg_info("session %s: audit log %s", session_id(s), session_audit_path(s));
	if (session_run(s, err) == 0 && config_error == NULL && workspace_error == NULL)
		status = EXIT_OK;
out:
	session_free(s);
	/* the configurations read since the start live until every session ended */
	gw_watch_end();
	ctr_driver_free(driver);
	cfg_free(cfg);
	return status;
}
