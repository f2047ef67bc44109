#!/usr/bin/env python3
"""mcpgate logs on the fake runtime (make check; docs/audit-log.md): the
audit logs read for a person, review's included; filters by server,
session, kind and time; --json for machines; --follow; every text a server
chose (its stderr, its tool's answer) shown with its controls escaped, never
as it is. Environment: MCPGATE, FAKES.
"""
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from mcpclient import Tap  # noqa: E402
from gwtest import MCPGATE, Fixture, learn_probe_hash, server  # noqa: E402

t = Tap()
HOSTILE = "boom \x1b[2J\x1b[31mred\x1b]0;title\x07 \u202eevil\u202c\rover"


def logs(f, *args):
    return subprocess.run([MCPGATE, "logs"] + list(args), env=f.env(), capture_output=True,
                          text=True, timeout=60)


def main():
    probe_hash = learn_probe_hash()
    f = Fixture(server("good", probe_hash, tools_on=("echo", "stderr", "crash")) +
                server("bad", None, args=["--stderr-banner", HOSTILE, "--protocol",
                                          "1999-01-01"]))
    r = f.mcpgate("review", "bad")
    t.ok(r.returncode == 1 and "mcpgate logs --session" in r.stderr,
         "a review that fails names the session whose log holds why", r.stderr)
    session = re.search(r"mcpgate logs --session ([0-9a-f]+)", r.stderr).group(1)
    c = f.start()
    c.initialize()
    f.wait_settled()
    c.call("good__echo", {"text": "hello"})
    c.call("good__stderr", {"text": HOSTILE})
    c.call("good__crash", {"code": 3})
    time.sleep(0.5)
    c.close()

    r = logs(f, "bad")
    out = r.stdout
    t.ok(r.returncode == 0 and "(review" in out and "bad" in out and "unavailable" in out and
         "| boom" in out, "review's log is read too: the start-up failure and its stderr",
         out)
    t.ok("\x1b" not in out and "\u202e" not in out and "\r" not in out and
         "\\x1b[2J" in out and "\\u{202E}" in out.replace("\\u{202e}", "\\u{202E}"),
         "a server's stderr is shown with every control escaped, never as it is", repr(out))
    r = logs(f, "--session", session)
    t.ok(r.returncode == 0 and "-- session " + session in r.stdout and
         all(line.startswith(("--", "  ", "    ")) or session in line
             for line in r.stdout.splitlines() if line),
         "--session ID (or its start) is that session alone", r.stdout)
    r = logs(f, "good", "--kind", "call")
    calls = [line for line in r.stdout.splitlines() if "call " in line]
    t.ok(r.returncode == 0 and any("call echo: ok" in line for line in calls) and
         "bad" not in r.stdout and "ready" not in r.stdout,
         "NAME and --kind call: that server's calls only", r.stdout)
    r = logs(f, "good", "--kind", "stderr,failure")
    t.ok(r.returncode == 0 and "exited, status 3" in r.stdout and "| boom" in r.stdout and
         "call echo" not in r.stdout,
         "--kind stderr,failure: the exit and what it said", r.stdout)
    r = logs(f, "--kind", "server.ready")
    t.ok(r.returncode == 0 and "ready in" in r.stdout and "call" not in r.stdout,
         "--kind takes an event's name", r.stdout)
    r = logs(f, "--json", "good")
    recs = [json.loads(line) for line in r.stdout.splitlines()]
    t.ok(r.returncode == 0 and recs and all(x.get("server") == "good" for x in recs) and
         any(x["event"] == "tool.call" for x in recs),
         "--json: the records as they are, for machines", r.stdout[:500])
    r = logs(f, "--since", "2999-01-01")
    t.ok(r.returncode == 0 and r.stdout == "" and "no record matches" in r.stderr,
         "--since a time to come: nothing, and says so", (r.stdout, r.stderr))
    r = logs(f, "--since", "1h", "--until", "2999-01-01")
    t.ok(r.returncode == 0 and "call echo" in r.stdout, "--since 1h: all of it", r.stdout)
    r = logs(f, "--kind", "nonsense")
    t.ok(r.returncode == 2 and "a kind is call" in r.stderr, "an unknown kind is a usage error",
         r.stderr)
    r = logs(f, "--since", "yesterday")
    t.ok(r.returncode == 1 and "is not a time" in r.stderr, "a time it cannot read is named",
         r.stderr)

    # --follow: what a new session writes, as it writes it
    p = subprocess.Popen([MCPGATE, "logs", "--follow", "--kind", "call"], env=f.env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)
    c = f.start()
    c.initialize()
    f.wait_settled()
    c.call("good__echo", {"text": "followed"})
    c.close()
    seen = ""
    deadline = time.monotonic() + 20
    os.set_blocking(p.stdout.fileno(), False)
    while time.monotonic() < deadline and seen.count("call echo: ok") < 2:
        chunk = p.stdout.read()
        if chunk:
            seen += chunk
        time.sleep(0.1)
    p.terminate()
    p.wait(10)
    t.ok(seen.count("call echo: ok") >= 2 and re.search(r"^\d{4}-\d\d-\d\d ", seen, re.M),
         "--follow prints the old records, then the new ones as they come, dated", seen)
    f.cleanup()
    t.done()


main()
