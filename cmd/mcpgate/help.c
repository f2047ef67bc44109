/* The command table and the texts of `mcpgate --help` / `mcpgate help NAME`.
 * Keep them true: a command is listed here only once it works. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cmd/mcpgate/commands.h"
#include "cmd/mcpgate/opts.h"
#include "internal/base/suggest.h"

const struct command mg_commands[] = {
    {"serve", cmd_serve,
     "mcpgate serve [--config DIR] [--workspace DIR] [--passthrough] [--listen ADDRESS "
     "[--listen-any]]",
     "the MCP server on stdin/stdout that an MCP client starts: the main job",
     "  --config DIR     the folder holding mcp.toml and config.toml\n"
     "  --workspace DIR  the workspace (default: the current folder); mounts resolve\n"
     "                   under it and `workspaces` in mcp.toml is matched against it\n"
     "  --passthrough    offer the one server of this workspace under its own names:\n"
     "                   tools and prompts without SERVER__, resource URIs as it writes\n"
     "                   them (for protocol test suites); refused when more than one\n"
     "                   server is offered here\n"
     "  --listen ADDRESS 127.0.0.1:PORT, [::1]:PORT or unix:PATH: serve MCP clients\n"
     "                   over streamable HTTP at /mcp instead of stdin/stdout, each in\n"
     "                   a session of its own; every request needs the header\n"
     "                   \"Authorization: Bearer TOKEN\" (the token is made at first use\n"
     "                   in $XDG_STATE_HOME/mcpgate/listener-token); /metrics and\n"
     "                   /health beside it. See docs/listener.md\n"
     "  --listen-any     allow --listen on an address that is not loopback\n"
     "Every server offered here starts at once, contained; tools that are on are\n"
     "offered as SERVER__TOOL, prompts as SERVER__PROMPT, resources as\n"
     "mcpgate://SERVER/URI. Logs go to stderr and to the session's audit log in\n"
     "$XDG_STATE_HOME/mcpgate/sessions/ID.jsonl; stdout carries only MCP.\n",
     "config= workspace= passthrough listen= listen-any"},
    {"list", cmd_list, "mcpgate list [--config DIR] [--json]",
     "one line per server: transport, image present or not, manifest state",
     "  --config DIR  the folder holding mcp.toml and config.toml\n"
     "  --json        a JSON array instead of lines\n",
     "config= json"},
    {"pull", cmd_pull, "mcpgate pull [--config DIR] NAME",
     "pull server NAME's image by its pinned digest (the runtime's progress is shown)",
     "  --config DIR  the folder holding mcp.toml and config.toml\n"
     "A session never pulls: a missing image makes its server unavailable with\n"
     "this command as the fix. With runtime = \"swarm\", the image goes to the\n"
     "registry config.toml's swarm_registry names, and an image pinned elsewhere\n"
     "is pushed there and its entry pinned to the digest there.\n"
     "Also spelled `mcpgate mcp pull NAME`.\n",
     "config="},
    {"review", cmd_review, "mcpgate review [--config DIR] [--workspace DIR] NAME",
     "start NAME with its isolation, show its tools and what changed since approval",
     "  --config DIR     the folder holding mcp.toml and config.toml\n"
     "  --workspace DIR  where its mounts resolve (default: the current folder)\n"
     "Shows each tool (name, declared effect, description, a summary of its input)\n"
     "and, when an approved manifest is recorded, the tools added, removed and\n"
     "changed field by field. The reviewed manifest is stored under the data dir;\n"
     "the container is removed. Also spelled `mcpgate mcp review NAME`.\n",
     "config= workspace="},
    {"approve", cmd_approve,
     "mcpgate approve [--config DIR] NAME [--each | --tool T[,T2...] [--on|--off] "
     "[--effect read|write] [--no-confirm]]...",
     "pin NAME's reviewed manifest in mcp.toml, with tool settings",
     "  --config DIR        the folder holding mcp.toml and config.toml\n"
     "  --workspace DIR     where its mounts resolve (default: the current folder)\n"
     "  --each              go through the tools one by one, asking for each (the\n"
     "                      default on a terminal when no --tool is given)\n"
     "  --tool T[,T2...]    the tools the following options set (one or several)\n"
     "  --on, --off         offer T to the client, or not\n"
     "  --effect read|write what T does; write (and undeclared) tools ask every call\n"
     "  --no-confirm        a write tool T is called without asking (confirm = false;\n"
     "                      every such call is in the audit log); --confirm undoes it\n"
     "The live manifest is read again and must be the one reviewed; then its hash\n"
     "and the settings are written into mcp.toml, keeping the rest of the file as\n"
     "it was (comments, order), atomically. Also spelled `mcpgate mcp approve NAME`.\n",
     "config= workspace= each tool= on off effect= confirm no-confirm"},
    {"sweep", cmd_sweep, "mcpgate sweep [--config DIR]",
     "remove containers and networks left by mcpgate processes that are gone",
     "  --config DIR  the folder holding mcp.toml and config.toml\n"
     "Only what carries the label mcpgate.pid=P, where P is not a running mcpgate,\n"
     "is removed: containers first, then networks. serve does this by itself.\n",
     "config="},
    {"secret", cmd_secret,
     "mcpgate secret set|list|rm|bind|unbind [NAME] [--host H]... [--position P] [--data DIR]",
     "the keychain: store secrets, and bind each to the hosts and position it may go to",
     "  set NAME          store NAME's value, read from standard input (not an argument;\n"
     "                    one trailing newline dropped; 1 byte to 64 KiB); replacing a\n"
     "                    value keeps its bindings\n"
     "  list              every secret's name and bindings, never a value\n"
     "  rm NAME           remove NAME and its bindings\n"
     "  bind NAME --host H [--host H2]... --position env:VAR|header:NAME\n"
     "                    let NAME go to H (host or host:port, as in \"network\") in that\n"
     "                    position; a server gets a secret only where a binding says so\n"
     "  unbind NAME [--host H]\n"
     "                    remove NAME's bindings (only those to H)\n"
     "  --data DIR        the data folder (default $XDG_DATA_HOME/mcpgate, else\n"
     "                    ~/.local/share/mcpgate)\n"
     "Values are sealed in DIR/keychain with DIR/keychain.key (made on first use), or\n"
     "with a passphrase read from the descriptor MCPGATE_PASSPHRASE_FD names.\n",
     "data= host= position="},
    {"add", cmd_add,
     "mcpgate add (npm:PACKAGE[@VERSION] | pypi:NAME[==VERSION] | --server-json FILE) [--name "
     "NAME] [--module MODULE] [--arg A]... [--mount "
     "PATH[:write]]... "
     "[--network HOST]... [--env NAME=VALUE]... [--with PKG]... [--scripts] "
     "[--refresh-packages] [--accept-unenforced L] [--node PATH] [--config DIR]",
     "make an npm or Python package a contained server: a pinned image and an entry, tools "
     "off",
     "  npm:PACKAGE[@VERSION]  the package; VERSION a version, range or tag (default latest)\n"
     "  npm:./FILE.tgz         a package from a local tarball (npm pack's output)\n"
     "  pypi:NAME[==VERSION]   a Python package from pip's index (pip.conf, PIP_INDEX_URL);\n"
     "                         wheels only (an index's sdist is not built)\n"
     "  pypi:./FILE.whl        a local wheel; its dependencies come from the index\n"
     "  pypi:./N-V.tar.gz      a source distribution, built into a wheel in a contained\n"
     "                         step (no network, build needs locked from the index)\n"
     "  --server-json FILE     the MCP registry's description of a server (offline): its\n"
     "                         npm package, or its OCI image pinned by digest, with the\n"
     "                         settings it declares (defaults; a secret is only named)\n"
     "  --name NAME            the server's name (default: the package's last part)\n"
     "  --module MODULE        pypi: run python3 -m MODULE, not the console script\n"
     "  --arg A                an argument for the server (repeatable; args in mcp.toml)\n"
     "  --mount PATH[:write]   a workspace folder for it (repeatable; mounts in mcp.toml)\n"
     "  --network HOST         a host it may reach (repeatable; network in mcp.toml)\n"
     "  --env NAME=VALUE       a setting, not secret (repeatable; env in mcp.toml)\n"
     "  --with PKG             a Debian package in the image, e.g. git (repeatable;\n"
     "                         packages in mcp.toml): a layer of its own, from Debian's\n"
     "                         archive (or config.toml's [debian] mirror), pinned in a\n"
     "                         lock, no package script run\n"
     "  --scripts              run the install scripts npm skipped, in a container with a\n"
     "                         server's isolation (no network; only node_modules writable);\n"
     "                         native addons are built there from source, with a compiler\n"
     "                         that stays out of the server's image\n"
     "  --refresh-packages     resolve the Debian packages again (newer versions)\n"
     "  --accept-unenforced L  limits this runtime cannot hold, accepted (memory,pids):\n"
     "                         accept_unenforced in the entry, and for the install step\n"
     "  --node PATH            the node to put in the image (default: node on PATH)\n"
     "  --config DIR           the configuration folder (default $XDG_CONFIG_HOME/mcpgate)\n"
     "npm resolves and installs it with every install script off, from a lockfile kept\n"
     "in DATA/npm/NAME (the same input, the same image); the image is a Debian base\n"
     "(sh, coreutils, CA certificates), this machine's node and its libraries (one\n"
     "layer each, shared by every such image), the --with packages, and the package;\n"
     "it is loaded into the runtime and pinned by digest, and mcp.toml gets its\n"
     "[[server]] with every tool off. Prints the pinned image. See docs/adding.md.\n"
     "pypi: pip resolves for the image's python (Debian's python3, a layer shared by\n"
     "every Python image) without running package code; every wheel is locked by its\n"
     "sha256 in DATA/pypi/NAME/requirements.lock and installed from that lock only.\n",
     "name= arg= mount= network= env= with= scripts refresh-packages accept-unenforced= node= "
     "config= server-json= module="},
    {"remove", cmd_remove, "mcpgate remove [--config DIR] [--dry-run] [--forget-secret] NAME",
     "take server NAME out of mcp.toml, with its image, archive and npm or python tree",
     "  --config DIR     the folder holding mcp.toml and config.toml\n"
     "  --dry-run        show what would go, with sizes, and remove nothing\n"
     "  --forget-secret  also remove its credential's bindings to its hosts, and the\n"
     "                   secret itself when no other entry names it\n"
     "Its [[server]] goes first (with the comment above it), through the same checked\n"
     "edit as add; then its image in the runtime and the archive add kept (unless\n"
     "another entry runs the same image), its npm tree (DATA/npm/NAME) and its review\n"
     "and approval records. A running serve stops the server when mcp.toml changes;\n"
     "remove waits for that before the image goes. Also `mcpgate mcp remove NAME`.\n",
     "config= dry-run forget-secret"},
    {"enable", cmd_enable, "mcpgate enable [--config DIR] NAME",
     "offer server NAME again: a running serve starts it",
     "  --config DIR  the folder holding mcp.toml and config.toml\n"
     "Removes `enabled = false` from its entry (the checked edit). A serve that runs\n"
     "(stdio or --listen) sees mcp.toml change and starts the server, without the\n"
     "client being restarted.\n",
     "config="},
    {"disable", cmd_disable, "mcpgate disable [--config DIR] NAME",
     "keep server NAME in mcp.toml but offer it nowhere: a running serve stops it",
     "  --config DIR  the folder holding mcp.toml and config.toml\n"
     "Writes `enabled = false` into its entry (the checked edit). A serve that runs\n"
     "(stdio or --listen) sees mcp.toml change, stops the server and withdraws its\n"
     "tools (the client hears the list changed). `mcpgate enable NAME` undoes it.\n",
     "config="},
    {"update", cmd_update,
     "mcpgate update [--config DIR] [--workspace DIR] [--yes] [--scripts] [--node PATH] NAME "
     "[VERSION]",
     "make server NAME again from a newer release, review it and switch to it",
     "  VERSION          npm: a version, range or tag; pypi: an exact version\n"
     "                   (default: the latest)\n"
     "  --config DIR     the folder holding mcp.toml and config.toml\n"
     "  --workspace DIR  where its mounts resolve while it is started (default: .)\n"
     "  --yes            switch without asking (needed when not on a terminal)\n"
     "  --scripts        npm: run the install scripts npm skipped, contained (as add)\n"
     "  --node PATH      npm: the node to put in the image (default: node on PATH)\n"
     "Where the image came from is in its labels (npm:PACKAGE@VERSION, or\n"
     "pypi:NAME==VERSION: pip resolves the newest release with wheels for the\n"
     "image's python, every wheel locked anew by sha256, --module kept). The new\n"
     "release is installed and packed as add does, loaded, and started with its\n"
     "isolation as review does; what changed against the approved manifest is shown,\n"
     "every tool setting whose tool is unchanged is kept, and the others are turned\n"
     "off (on a terminal you are asked about each). Only when you say so are the\n"
     "image and its pin switched in mcp.toml (the checked edit); the old image then\n"
     "goes, unless another entry runs it. Otherwise the new image goes again, and\n"
     "the entry's install folder and lock are as they were. An entry added from a\n"
     "local tarball or wheel is not updated: add the new one.\n",
     "config= workspace= yes scripts node="},
    {"outdated", cmd_outdated, "mcpgate outdated [--config DIR] [--json]",
     "for each server made by add: the version it runs, and the latest",
     "  --config DIR  the folder holding mcp.toml and config.toml\n"
     "  --json        a JSON array instead of lines\n"
     "Asks the registry for each package's latest release: npm view, or pip for a\n"
     "pypi: entry (the newest with wheels for the image's python).\n",
     "config= json"},
    {"logs", cmd_logs,
     "mcpgate logs [NAME] [--session ID] [--kind K[,K2...]] [--since T] [--until T] "
     "[--follow] [--json]",
     "the audit logs, for a person: calls, questions, egress, stderr, failures",
     "  NAME          only the records of this server\n"
     "  --session ID  only this session (the start of its id is enough)\n"
     "  --kind K      call, confirm, egress, stderr (records holding a server's stderr),\n"
     "                failure (start-up failures, exits, withheld manifests), server,\n"
     "                session, or an event's name (server.exit); several with commas\n"
     "  --since T     only records since T: 30s, 10m, 2h or 3d ago, or 2026-12-02, or\n"
     "                2026-12-02T10:00:00 (UTC)\n"
     "  --until T     only records until T (the same forms)\n"
     "  --follow      then print what the sessions write, as they write it\n"
     "  --json        the records as they are, one JSON object a line\n"
     "Reads $XDG_STATE_HOME/mcpgate/sessions/ (serve's sessions) and reviews/sessions/\n"
     "(those review, approve and update started), each session under a line of its\n"
     "own. A server's text (its stderr, its errors) is shown with every control\n"
     "character escaped. See docs/audit-log.md.\n",
     "session= kind= since= until= follow json"},
    {"prune", cmd_prune, "mcpgate prune [--config DIR] [--dry-run] [--yes] [--keep-logs DAYS]",
     "remove what no entry of mcp.toml uses: images, archives, npm trees, old logs",
     "  --config DIR     the folder holding mcp.toml and config.toml\n"
     "  --dry-run        show what would go, with sizes, and remove nothing\n"
     "  --yes            do not ask first (on a terminal prune asks before it removes)\n"
     "  --keep-logs DAYS audit and review logs older than this go (default:\n"
     "                   keep_logs_days in config.toml; unset, every log is kept)\n"
     "Only what this mcpgate made is looked at: the images whose archives are in its\n"
     "data folder and that no entry runs (with those archives), unfinished archives,\n"
     "npm trees, review and approval records of servers not in mcp.toml (and approval\n"
     "records of pins a server no longer has), and review logs of servers not in\n"
     "mcp.toml. An image a container still uses stays, and says so.\n",
     "config= dry-run yes keep-logs="},
    {"pack", cmd_pack,
     "mcpgate pack --output FILE.tar (--binary PATH | --folder DIR | --add SRC:DEST)... [OPTIONS]",
     "build an image archive from a static binary or a folder, without a Dockerfile",
     "  --output FILE          the archive to write (replaced only once it is whole)\n"
     "  --binary PATH          a program (static, ideally) at /NAME, mode 0755; the entrypoint\n"
     "  --path-in-image PATH   where --binary goes instead of /NAME\n"
     "  --folder DIR           DIR's tree becomes the root filesystem\n"
     "  --add SRC:DEST         also a file or folder SRC at absolute DEST (repeatable)\n"
     "  --base-add SRC:DEST    the same, in a base layer of its own below the rest: the\n"
     "                         same base gives the same layer, stored once (repeatable)\n"
     "  --entrypoint JSON      the entrypoint, a JSON array: '[\"/server\",\"--stdio\"]'\n"
     "  --entrypoint-arg ARG   one more argument after the entrypoint (repeatable)\n"
     "  --env NAME=VALUE       an environment variable (repeatable; PATH has a default)\n"
     "  --label KEY=VALUE      an image label (repeatable)\n"
     "  --user UID[:GID]       numeric user to run as (default: the runtime's, root)\n"
     "  --workdir DIR          the working directory (default /)\n"
     "  --arch ARCH[/VARIANT]  the image's architecture (default: this machine's, amd64...)\n"
     "  --name NAME[:TAG]      the name `podman load` and `docker load` give it\n"
     "Prints the manifest digest (sha256:...) on stdout: pin it in mcp.toml. The\n"
     "same inputs give the same archive byte for byte: times are SOURCE_DATE_EPOCH\n"
     "or 0, owners 0:0, modes 0755 or 0644. Symlinks in a folder stay symlinks;\n"
     "devices, pipes and sockets are refused. See docs/packing.md.\n",
     "output= binary= path-in-image= folder= add= base-add= entrypoint= entrypoint-arg= env= "
     "label= user= workdir= arch= name="},
    {"check", cmd_check, "mcpgate check [--config DIR] [--mcp FILE] [--global FILE]",
     "validate the configuration; prints \"configuration OK\"",
     "  --config DIR   the folder holding mcp.toml and config.toml\n"
     "                 (default $XDG_CONFIG_HOME/mcpgate, else ~/.config/mcpgate)\n"
     "  --mcp FILE     check this file as mcp.toml (config.toml from --global, or none)\n"
     "  --global FILE  check this file as config.toml\n"
     "Every error is printed, one per line, as FILE:LINE:COL: what is wrong;\n"
     "the exit status is 0 when the configuration is valid, 1 when it is not.\n",
     "config= mcp= global="},
    {"client", cmd_client,
     "mcpgate client add|remove|list [CLIENT] [--scope user|project] [--file PATH] [--name NAME] "
     "[--workspace DIR] [--config DIR] [--dry-run]",
     "add or remove the mcpgate entry in an MCP client's own configuration file",
     "  add CLIENT       add the entry, or replace mcpgate's own entry of that name; it\n"
     "                   runs MCPGATE serve --workspace DIR [--config DIR]\n"
     "  remove CLIENT    remove mcpgate's entry of that name\n"
     "  list             each client's files (scope, state, path); * marks the scope\n"
     "                   add and remove use when --scope is not given\n"
     "  --scope S        user (the file in your home) or project (the workspace's)\n"
     "  --file PATH      edit PATH, in the client's format, instead of its own file\n"
     "  --name NAME      the entry's name (default mcpgate; letters, digits, _ and -)\n"
     "  --workspace DIR  the workspace serve is given, and where a project's file is\n"
     "                   (default: the current folder)\n"
     "  --config DIR     also give serve --config DIR (add only)\n"
     "  --dry-run        print the change as a unified diff and write nothing\n"
     "CLIENT: claude-desktop, claude-code, cursor, vscode, windsurf, zed, codex, gemini.\n"
     "The rest of the file stays byte for byte (comments, order, other servers); an\n"
     "entry of that name that is not mcpgate's is never touched. The file is replaced\n"
     "atomically and keeps its mode; a new one is made 0600 (0644 in a project), with\n"
     "its folder. MCPGATE is this binary's absolute path, or the mcpgate first on PATH\n"
     "when that is the same file. See docs/clients.md.\n",
     "scope= file= name= workspace= config= dry-run"},
    {"help", cmd_help, "mcpgate help [COMMAND]", "show this text, or one command's",
     "  COMMAND  a command's name\n", ""},
    {NULL, NULL, NULL, NULL, NULL, NULL},
};

const struct command *command_find(const char *name)
{
	for (const struct command *c = mg_commands; c->name != NULL; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

const char *command_suggest(const char *name)
{
	/* what main takes besides the table: the "mcp" spelling and its options */
	const char *names[sizeof(mg_commands) / sizeof(mg_commands[0]) + 3];
	size_t n = 0;
	for (const struct command *c = mg_commands; c->name != NULL; c++)
		names[n++] = c->name;
	names[n++] = "mcp";
	names[n++] = "--help";
	names[n++] = "--version";
	names[n] = NULL;
	return mg_suggest(name, names);
}

int help_print(const char *name)
{
	if (name != NULL && strcmp(name, "mcp") == 0) {
		printf("usage: %s\n\nthe familiar spelling of mcpgate add, list, pull, review, "
		       "approve and remove; `mcpgate help VERB` shows each one's options.\n",
		       MCP_USAGE);
		return EXIT_OK;
	}
	if (name != NULL) {
		const struct command *c = command_find(name);
		if (c == NULL) {
			const char *meant = command_suggest(name);
			if (meant != NULL)
				fprintf(stderr,
				        "mcpgate: no command \"%s\"; did you mean \"%s\"?\n", name,
				        meant);
			else
				fprintf(stderr,
				        "mcpgate: no command \"%s\" (see: mcpgate --help)\n", name);
			return EXIT_USAGE;
		}
		printf("usage: %s\n\n%s.\n\n%s", c->usage, c->summary, c->help);
		return EXIT_OK;
	}
	printf("mcpgate %s: run MCP servers nobody reviewed, contained.\n\n"
	       "An MCP client starts `mcpgate serve` as its one MCP server; mcpgate runs\n"
	       "each real server in a container with a pinned image, declared network and\n"
	       "mounts, and offers its tools as SERVER__TOOL.\n\n"
	       "usage: mcpgate COMMAND [OPTIONS]\n\ncommands:\n",
	       MCPGATE_VERSION);
	for (const struct command *c = mg_commands; c->name != NULL; c++)
		printf("  %-9s %s\n", c->name, c->summary);
	printf("\n`mcpgate help COMMAND` shows a command's options.\n"
	       "Environment: MCPGATE_LOG=debug|info|warn|error (stderr only).\n"
	       "Files: $XDG_CONFIG_HOME/mcpgate/{mcp.toml,config.toml}; see mcp.toml(5).\n");
	return EXIT_OK;
}

int usage_error(const struct command *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "mcpgate %s: ", cmd->name);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\nusage: %s\n", cmd->usage);
	va_end(ap);
	return EXIT_USAGE;
}

int usage_server_name(const struct command *cmd, const char *arg, const char **name)
{
	if (arg[0] == '-' || *name != NULL) {
		usage_error(cmd, "unexpected argument \"%s\"", arg);
		return -1;
	}
	*name = arg;
	return 0;
}

int usage_server_args(const struct command *cmd, int argc, char **argv, const char **dir,
                      const char **ws, const char **name)
{
	for (int i = 1; i < argc; i++) {
		int r = opt_value(argc, argv, &i, "config", dir);
		if (r == 0 && ws != NULL)
			r = opt_value(argc, argv, &i, "workspace", ws);
		if (r < 0)
			return EXIT_USAGE;
		if (r == 0 && usage_server_name(cmd, argv[i], name) < 0)
			return EXIT_USAGE;
	}
	if (*name == NULL)
		return usage_error(cmd, "which server? (see: mcpgate list)");
	return 0;
}

int cmd_help(int argc, char **argv, struct mg_err **err)
{
	(void)err;
	if (argc > 2)
		return usage_error(command_find("help"), "too many arguments");
	return help_print(argc == 2 ? argv[1] : NULL);
}
