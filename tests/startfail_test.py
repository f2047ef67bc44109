#!/usr/bin/env python3
"""Start-up failures a person can read (issue 24, item 7), on the fake runtime.

`mcpgate review` and `mcpgate serve` show the last lines of a failing
server's stderr escaped by the one renderer, say where all of it is, and give
the fix for the usual causes in one line: a command the image lacks, a path
it could not write, a server that speaks HTTP and never answers on stdio, an
MCP revision mcpgate does not speak. A hostile server's stderr (ANSI escapes,
U+202E, 50 empty lines) never reaches the terminal raw, and never the client.
Environment: MCPGATE, FAKES.
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from mcpclient import Tap  # noqa: E402

import gwtest  # noqa: E402
from gwtest import Fixture, events  # noqa: E402

t = Tap()

HOME = "/home/mcpgate"

# each usual cause: the probe's arguments, config.toml's extra lines, and
# the fix mcpgate must give, word for word
CAUSES = [
    ("git", ["--stderr-banner", "Error: spawn git ENOENT", "--exit-at-start", "1"], "",
     "server git looks for the command git, which its image lacks: Debian's package git has "
     "it. Make its image again with it, `mcpgate add npm:PACKAGE@VERSION --name git --with "
     "git` (remove its entry first), which writes packages = [\"git\"] in its entry"),
    ("rofs", ["--stderr-banner", "Error: EROFS: read-only file system, mkdir '/app/.mongodb'",
              "--exit-at-start", "1"], "",
     "server rofs could not write a path its stderr names (a read-only file system): in its "
     "container only its home (%s), /tmp and the mounts its entry lists with :write can be "
     "written; point it at its home in its entry (args or env, e.g. a path under %s), or "
     "mount a folder there with :write" % (HOME, HOME)),
    ("denied", ["--stderr-banner",
                "PermissionError: [Errno 13] Permission denied: '/srv/cache/x.db'",
                "--exit-at-start", "1"], "",
     "server denied could not write a path its stderr names (permission denied): in its "
     "container only its home (%s), /tmp and the mounts its entry lists with :write can be "
     "written; point it at its home in its entry (args or env, e.g. a path under %s), or "
     "mount a folder there with :write" % (HOME, HOME)),
    # sqlite3 of mcp-sqlite 1.0.9 added without --scripts
    ("native", ["--stderr-banner", "Error: Could not locate the bindings file. Tried:",
                "--exit-at-start", "1"], "",
     "server native loads a native addon that was not built (add runs no package's install "
     "script unless asked): make its image again with the addon built from source in a "
     "contained step, `mcpgate add npm:PACKAGE@VERSION --name native --scripts` (remove its "
     "entry first)"),
    # @gongrzhe/server-redis-mcp 1.0.0 given redis://127.0.0.1:PORT
    ("loop", ["--stderr-banner", "Redis Client Error: connect ECONNREFUSED 127.0.0.1:56379",
              "--exit-at-start", "1"], "",
     "server loop could not connect to a service on the loopback, which in its container is "
     "the container itself, not this machine: to let it reach a service on this machine, "
     "grant it in its entry, connect = { NAME = \"127.0.0.1:56379\" }, and give it "
     "{connect.NAME} where it takes the address (args or env), which mcpgate replaces with "
     "the address it reaches it at"),
    # it never answers: the start deadline ends the wait
    ("web", ["--stderr-banner", "MCP server listening on port 3000 (http://localhost:3000/mcp)",
             "--initialize-delay", "600000"], "start_timeout = 2\n",
     "server web seems to serve MCP over HTTP (its stderr says where it listens) and never "
     "answered initialize on its standard input, the one way mcpgate speaks to it: start it "
     "in its stdio mode with the argument its documentation names, often args = "
     "[\"--stdio\"] or [\"stdio\"] in its entry"),
    ("old", ["--protocol", "1999-01-01"], "",
     "server old speaks an MCP revision mcpgate does not (mcpgate speaks 2025-11-25, "
     "2025-06-18, 2025-03-26, 2024-11-05): add a release of it that speaks one of those, `mcpgate add "
     "npm:PACKAGE@VERSION --name old` (remove its entry first)"),
]


def entry(name, args, pin=None):
    return gwtest.server(name, pin, (), args)


def audit_logs(f):
    """the audit logs under the state folder (review's and sessions')"""
    out = []
    for root, _, files in os.walk(os.path.join(f.state, "mcpgate")):
        out += [os.path.join(root, x) for x in files if x.endswith(".jsonl")]
    return out


def test_review_causes():
    for name, args, conf, fix in CAUSES:
        f = Fixture(entry(name, args), config=conf)
        r = f.mcpgate("review", name)
        last = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""
        # review then names the session whose log holds it (mcpgate logs)
        tail = re.sub(r" \(`mcpgate logs --session [0-9a-f]+` shows what it said\)$", "", last)
        t.ok(r.returncode != 0 and last.startswith("mcpgate review: server %s is unavailable: "
                                                   % name) and tail.endswith(". " + fix),
             "review of %s ends with the reason and its fix, word for word" % name, last)
        m = re.search(r"all of its stderr is in (\S+\.jsonl)", last)
        if name != "old":
            t.ok(m is not None and os.path.isfile(m.group(1)) and m.group(1) in audit_logs(f),
                 "review of %s says where all of its stderr is, a file that exists" % name,
                 last)
            banner = args[1]
            t.ok("  | " + banner in r.stderr.splitlines(),
                 "and shows the last line of its stderr", r.stderr)
        f.cleanup()


def test_serve_causes():
    # a pin no manifest hashes to: a session starts them (and would withhold them)
    servers = "".join(entry(name, args, gwtest.UNMATCHED_PIN) for name, args, _, _ in CAUSES)
    f = Fixture(servers, config="start_timeout = 2\n")
    c = f.start()
    c.initialize()
    f.wait_settled()
    c.request("tools/list")  # what the client was told came before its answer
    c.close()
    un = {e["server"]: e["reason"] for e in events(f.audit(), "server.unavailable")}
    log = f.stderr_text()
    notices = " ".join(n["params"]["data"] for n in c.notifications
                       if n["method"] == "notifications/message")
    for name, args, _, fix in CAUSES:
        reason = un.get(name, "")
        t.ok(reason.endswith(". " + fix), "serve: server.unavailable of %s ends with its fix"
             % name, reason)
        t.ok(fix in notices, "serve: the client is told %s's fix" % name, notices[-300:])
        lines = log.splitlines()
        warn = [i for i, x in enumerate(lines) if x.startswith("mcpgate: warn: " + reason)]
        if name == "old":
            continue
        t.ok(warn and lines[warn[0] + 1].startswith("the last 1 line of server %s's stderr "
                                                    "(all of it: the audit log " % name) and
             lines[warn[0] + 2] == "  | " + args[1],
             "serve's log says %s's reason, where all of its stderr is, and its last line" % name,
             lines[warn[0]:warn[0] + 3] if warn else log[-600:])
        t.ok(args[1] not in notices, "but the client is not shown %s's stderr" % name)
    f.cleanup()


HOSTILE_SHOWN = ["  | \\x1b[2J\\x1b[31mhostile red\\x1b[0m",
                 "  | reversed \\u{202E} txet",
                 "  | \\x1b]0;owned title\\x07last words"]


def raw_check(data, what):
    """no escape, no U+202E, no carriage return, no run of empty lines"""
    bad = [b for b in (b"\x1b", "\u202e".encode(), b"\r", b"\x07", b"\n\n\n") if b in data]
    t.ok(not bad, "%s: nothing of the hostile stderr reaches the terminal raw" % what, bad)


def test_hostile_review():
    f = Fixture(entry("hostile", ["--stderr-hostile", "--exit-at-start", "3"]))
    out, status = f.mcpgate_tty("review", "hostile")
    # the terminal itself ends each line with \r\n
    raw_check(out.replace("\r\n", "\n").encode(), "review on a terminal")
    lines = out.replace("\r\n", "\n").splitlines()
    at = [i for i, x in enumerate(lines) if "the last 3 lines of server hostile's stderr" in x]
    t.ok(status != 0 and at and lines[at[0] + 1:at[0] + 4] == HOSTILE_SHOWN,
         "review shows the last 3 lines escaped, the 50 empty ones left out",
         lines[at[0]:at[0] + 4] if at else lines[-8:])
    f.cleanup()


def test_hostile_serve():
    f = Fixture(entry("hostile", ["--stderr-hostile", "--exit-at-start", "3"],
                      gwtest.UNMATCHED_PIN))
    c = f.start()
    c.initialize()
    f.wait_settled()
    c.close()
    with open(os.path.join(f.dir, "stderr.log"), "rb") as fh:
        data = fh.read()
    raw_check(data, "serve's log")
    lines = data.decode().splitlines()
    at = [i for i, x in enumerate(lines) if "the last 3 lines of server hostile's stderr" in x]
    t.ok(at and lines[at[0] + 1:at[0] + 4] == HOSTILE_SHOWN,
         "serve's log shows the last 3 lines escaped", lines[at[0]:at[0] + 4] if at else "")
    seen = " ".join(c.received)
    t.ok("hostile red" not in seen and "txet" not in seen,
         "and the client is shown none of it")
    un = events(f.audit(), "server.unavailable")
    t.ok(un and "\x1b[2J" in un[0].get("stderr", "") and "\u202e" in un[0].get("stderr", ""),
         "the audit log keeps all of it, as it was (JSON escapes it)", un)
    f.cleanup()


for case in (test_review_causes, test_serve_causes, test_hostile_review, test_hostile_serve):
    try:
        case()
    except Exception as e:  # a case that blows up is a failure, not a crash of the runner
        t.ok(False, "%s raised %s: %s" % (case.__name__, type(e).__name__, e))
sys.exit(t.done())
