#!/usr/bin/env python3
"""End to end on a real runtime (MCPGATE_CONTAINER_TEST_RUNTIME=podman|docker):
a published MCP server, a real MCP client, mcpgate between them.

Builds an image of @modelcontextprotocol/server-everything (pinned by
tests/e2e/everything/package-lock.json) with tests/e2e/build-everything-image.sh,
which pushes it to the local registry on 127.0.0.1:5000 and prints its
digest; writes a configuration with that server (no network, three tools on),
then does what a person does: `mcpgate pull`, `mcpgate review`,
`mcpgate approve`. Then tests/e2e/client.mjs, the TypeScript SDK's own client,
starts `mcpgate serve` and lists and calls the tools (with progress); its TAP
lines are folded into these. Last, the audit log and the runtime are checked:
every call recorded, nothing left running. Everything it made is removed.

Needs node and npm (and the npm registry for the first install); without
them it reports skipped. Traffic: the npm registry (install), loopback (the
local registry), and a container with no network.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from mcpclient import Tap  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import containers_test as ct  # noqa: E402  (the runtime, sessions and labels: one way to do them)

TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
RT = os.environ.get("MCPGATE_CONTAINER_TEST_RUNTIME", "podman")
MCPGATE = os.path.abspath(os.environ.get("MCPGATE", os.path.join(TOP, "mcpgate")))
BUILD = os.path.join(TOP, "tests", "e2e", "build-everything-image.sh")
CLIENT = os.path.join(TOP, "tests", "e2e", "client.mjs")
MODULES = os.path.join(TOP, "build", "e2e", "everything", "node_modules")
NODE = os.environ.get("NODE") or ("/usr/bin/node" if os.path.exists("/usr/bin/node")
                                  else shutil.which("node"))
TAG = "itest-%d-%d" % (os.getpid(), int(time.time()))
TOOLS = ("echo", "get-sum", "trigger-long-running-operation")

t = Tap()
made = {"images": [], "sessions": []}


def npm_reachable():
    try:
        return subprocess.run(["npm", "ping"], capture_output=True, timeout=60).returncode == 0
    except Exception:
        return False


def everything_server(image):
    servers = ('[[server]]\nname = "everything"\ntransport = "container"\n'
               'image = "%s"\nnetwork = []\n' % image) + ct.accept_line()
    for tool in TOOLS:
        servers += '\n[server.tools.%s]\non = true\neffect = "read"\n' % tool
    return servers


def fold_client(out, rc):
    """The client's TAP lines become ours; its plan and summary are dropped."""
    summary = False
    failed = 0
    for line in out.splitlines():
        m = re.match(r"^(not ok|ok) \d+ - (.*)$", line)
        if m:
            failed += m.group(1) == "not ok"
            t.ok(m.group(1) == "ok", "client.mjs: " + m.group(2))
        elif re.match(r"^\d+ passed, \d+ failed", line):
            summary = True
        elif line.startswith("#"):
            print(line, flush=True)
    if not summary or (rc != 0 and failed == 0):
        t.ok(False, "client.mjs ended with its summary and status 0 (status %s)" % rc)


def run(base):
    r = subprocess.run([BUILD, "--runtime", RT, "--tag", TAG],
                       env=dict(os.environ, MCPGATE=MCPGATE), capture_output=True, text=True,
                       timeout=900)
    image = r.stdout.strip()
    ok = t.ok(r.returncode == 0 and re.fullmatch(
        r"localhost:5000/mcpgate-e2e-everything@sha256:[0-9a-f]{64}", image) is not None,
        "build-everything-image.sh packs, pushes and prints localhost:5000/NAME@sha256:...",
        r.stdout + r.stderr[-1500:])
    if not ok:
        return
    made["images"].append(image)
    w = ct.Session(base, everything_server(image))

    r = w.mcpgate("check")
    t.ok(r.returncode == 0 and "configuration OK" in r.stdout, "the configuration checks",
         r.stdout + r.stderr)
    r = w.mcpgate("list")
    # the build removes its local tags, but the same digest pulled earlier
    # (the image is reproducible) may still be here: that is not checked
    t.ok(r.returncode == 0 and re.search(r"^everything +container image (missing|present)", r.stdout,
                                         re.M) is not None and "manifest unapproved" in r.stdout,
         "mcpgate list shows the server, its image state and no approval yet",
         r.stdout + r.stderr)
    r = w.mcpgate("pull", "everything")
    t.ok(r.returncode == 0 and "is present" in r.stdout,
         "mcpgate pull fetches it by digest", r.stdout + r.stderr[-800:])
    r = w.mcpgate("review", "everything", "--workspace", w.ws)
    out = r.stdout
    t.ok(r.returncode == 0 and "says it is: mcp-servers/everything" in out and
         "network: none" in out and "approved: none yet" in out,
         "review starts it contained and names the server", out + r.stderr)
    t.ok(all(re.search(r"^  %s  \[effect: read, on\]$" % re.escape(x), out, re.M) for x in TOOLS),
         "review lists the three tools as read and on", out)
    t.ok(re.search(r"^  get-env  \[effect: undeclared, off\]$", out, re.M) is not None,
         "review lists the tools left off", out)
    reviewed = re.search(r"^manifest: (sha256:[0-9a-f]{64})$", out, re.M)
    r = w.mcpgate("approve", "everything", "--workspace", w.ws)
    pinned = w.pinned("everything")
    t.ok(r.returncode == 0 and reviewed is not None and pinned == reviewed.group(1),
         "approve pins the reviewed manifest in mcp.toml", r.stdout + r.stderr)

    serve_err = os.path.join(base, "serve.stderr")
    try:
        c = subprocess.run([NODE, CLIENT, "--mcpgate", MCPGATE, "--config", w.conf,
                            "--workspace", w.ws, "--modules", MODULES, "--stderr", serve_err],
                           env=w.env, capture_output=True, text=True, timeout=420)
        fold_client(c.stdout, c.returncode)
        if c.returncode != 0:
            ct.comment(c.stderr)
    except subprocess.TimeoutExpired as e:
        fold_client(e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), None)
        t.ok(False, "client.mjs finished within 420 s")
    if t.failed and os.path.exists(serve_err):
        with open(serve_err) as fh:
            ct.comment(fh.read())

    sids = w.session_ids()
    t.ok(len(sids) == 1, "the client's session has one audit log", sids)
    if not sids:
        return
    sid = sids[0]
    made["sessions"].append(sid)
    audit = w.audit(sid)
    calls = {e["tool"]: e["outcome"] for e in audit if e["event"] == "tool.call"}
    t.ok(all(calls.get(x) == "ok" for x in TOOLS),
         "the audit log records the three calls as ok", calls)
    t.ok(calls.get("everything__get-env") == "refused",
         "and the call to the tool that is off as refused", calls)
    ready = [e for e in audit if e["event"] == "server.ready"]
    t.ok(ready and ready[0]["serverInfo"].get("name") == "mcp-servers/everything",
         "server.ready names the published server", ready)
    start = [e for e in audit if e["event"] == "server.start"]
    argv = start[0]["argv"] if start else []
    t.ok("--network=none" in argv and "--read-only" in argv and "--cap-drop=ALL" in argv and
         any(a.endswith(image.split("@", 1)[1]) for a in argv),
         "it ran with no network, a read-only root, no capabilities, by digest", argv)
    exits = [e for e in audit if e["event"] == "server.exit"]
    t.ok(exits and exits[0]["forced"] is False, "the server ended at the end of the session",
         exits)
    t.ok([e["event"] for e in audit][-1] == "session.end", "the log ends with session.end")
    t.ok(ct.labelled("containers", "mcpgate.session=" + sid) == [],
         "no container of the session is left")


def cleanup():
    for sid in made["sessions"]:
        for name in ct.labelled("containers", "mcpgate.session=" + sid):
            ct.rt("rm", "-f", *(["--time=0"] if RT == "podman" else []), name, check=False)
    for image in made["images"]:
        ct.rt("rmi", "-f", image, check=False)


def main():
    if shutil.which(RT) is None:
        return ct.skip("%s is not installed" % RT)
    if NODE is None or shutil.which("npm") is None:
        return ct.skip("needs node and npm (apt-get install nodejs npm; scripts/setup does)")
    if not ct.registry_up():
        return ct.skip("no registry on 127.0.0.1:5000 (tests/integration/run.sh starts one)")
    if not os.path.isdir(MODULES) and not npm_reachable():
        return ct.skip("the npm registry is not reachable for the first install of the pinned "
                    "packages")
    return ct.run_cases("everything", run, tap=t, after=cleanup)


if __name__ == "__main__":
    sys.exit(main())
