#!/usr/bin/env python3
"""The MCP conformance suite's server scenarios against `mcpgate serve
--listen`, on a real runtime (MCPGATE_CONTAINER_TEST_RUNTIME=podman|docker).

The suite (@modelcontextprotocol/conformance, pinned by
tests/conformance/package-lock.json and installed by tests/conformance/run.sh)
is the MCP client; mcpgate's listener is the server under test; behind it, in
`--passthrough` so the suite's fixed names reach it unchanged, one contained
server: tests/conformance/fixture-server.mjs, built into an image by
tests/conformance/build-fixture-image.sh, pulled by digest from the local
registry, reviewed and approved as a person does, run with no network.

Each tool is on with effect "read" (no confirmation: the suite's client answers
no prompt of mcpgate's, and the fixture's tools touch nothing outside their
container), and the server may relay "sampling" and "elicitation", which
scenarios ask of the client. The suite cannot send a header, so
tests/conformance/bearer.mjs, loaded into the suite's node, adds the
listener's token to its requests to the listener (read from the token file).

Every scenario of the suite's active set is one TAP line; a failing one names
its failed checks with the suite's own messages. No expected-failures list.
Traffic: the npm registry (first install), loopback (the registry, the
listener), a container with no network.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from mcpclient import Tap  # noqa: E402
import conformance_suite as cs  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import containers_test as ct  # noqa: E402

TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
RT = os.environ.get("MCPGATE_CONTAINER_TEST_RUNTIME", "podman")
MCPGATE = os.path.abspath(os.environ.get("MCPGATE", os.path.join(TOP, "mcpgate")))
TAG = "itest-%d-%d" % (os.getpid(), int(time.time()))

t = Tap()
made = {"images": [], "serve": None}


def start_listener(w):
    err = open(os.path.join(w.dir, "serve.stderr"), "w+b")
    p = subprocess.Popen([MCPGATE, "serve", "--config", w.conf, "--workspace", w.ws,
                          "--listen", "127.0.0.1:0", "--passthrough"],
                         env=w.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=err, cwd=w.ws)
    made["serve"] = p
    deadline = time.time() + 30
    while time.time() < deadline and p.poll() is None:
        with open(err.name, errors="replace") as fh:
            m = re.search(r"listening on (http://127\.0\.0\.1:\d+/mcp)", fh.read())
        if m:
            return p, m.group(1), err.name
        time.sleep(0.1)
    return p, None, err.name


def stop_listener(p):
    if p is None or p.poll() is not None:
        return p.returncode if p else None
    p.send_signal(signal.SIGTERM)
    try:
        return p.wait(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        return None


def run(base):
    r = subprocess.run([os.path.join(cs.CONF, "build-fixture-image.sh"), "--runtime", RT,
                        "--tag", TAG], env=dict(os.environ, MCPGATE=MCPGATE),
                       capture_output=True, text=True, timeout=900)
    image = r.stdout.strip()
    if not t.ok(r.returncode == 0 and re.fullmatch(
            r"localhost:5000/mcpgate-conformance-fixture@sha256:[0-9a-f]{64}", image),
            "build-fixture-image.sh packs, pushes and prints localhost:5000/NAME@sha256:...",
            r.stdout + r.stderr[-1500:]):
        return
    made["images"].append(image)
    w = ct.Session(base, cs.server_entry(image, ct.accept_line()), config=cs.CONFIG)

    r = w.mcpgate("pull", "fixture")
    t.ok(r.returncode == 0 and "is present" in r.stdout, "mcpgate pull fetches it by digest",
         r.stdout + r.stderr[-800:])
    r = w.mcpgate("review", "fixture", "--workspace", w.ws)
    out = r.stdout
    t.ok(r.returncode == 0 and "says it is: mcpgate-conformance-fixture" in out and
         "network: none" in out and
         all(re.search(r"^  %s  \[effect: read, on\]$" % x, out, re.M) for x in cs.TOOLS),
         "review starts it contained and lists every tool as read and on", out + r.stderr)
    reviewed = re.search(r"^manifest: (sha256:[0-9a-f]{64})$", out, re.M)
    r = w.mcpgate("approve", "fixture", "--workspace", w.ws)
    t.ok(r.returncode == 0 and reviewed is not None and w.pinned("fixture") == reviewed.group(1),
         "approve pins the reviewed manifest", r.stdout + r.stderr)

    p, url, serve_err = start_listener(w)
    if not t.ok(url is not None, "serve --listen 127.0.0.1:0 --passthrough says where it listens",
                open(serve_err, errors="replace").read()[-2000:]):
        return
    cs.run(t, url, os.path.join(w.state, "mcpgate", "listener-token"), w.dir)

    rc = stop_listener(p)
    t.ok(rc == 0, "serve ends with status 0 at SIGTERM (status %s)" % rc)
    sids = w.session_ids()
    left = [n for sid in sids for n in ct.labelled("containers", "mcpgate.session=" + sid)]
    t.ok(sids and not left, "no container of the %d sessions is left" % len(sids), left)
    if t.failed:
        with open(serve_err, errors="replace") as fh:
            text = fh.read()
        # warnings, errors and a sanitizer's report first: a session's end
        # is one line each
        ct.comment("\n".join(x for x in text.splitlines() if re.search(
            r"mcpgate: (warning|error)|^==\d+==|ERROR: |SUMMARY: |^ *#\d+ 0x", x)), 60)
        ct.comment(text, 20)


def cleanup():
    stop_listener(made["serve"])
    for image in made["images"]:
        ct.rt("rmi", "-f", image, check=False)


def main():
    if shutil.which(RT) is None:
        return ct.skip("%s is not installed" % RT)
    if not os.path.exists("/usr/bin/node"):
        return ct.skip("needs /usr/bin/node for the fixture's image (apt-get install nodejs)")
    if not ct.registry_up():
        return ct.skip("no registry on 127.0.0.1:5000 (tests/integration/run.sh starts one)")
    rc, out = cs.install()
    if rc == 77:
        why = [x for x in out.splitlines() if "SKIP" in x]
        return ct.skip("the conformance suite could not be installed: " +
                    (why[0].split("SKIP", 1)[1].strip() if why else "npm ci failed"))
    if rc != 0:
        t.ok(False, "tests/conformance/run.sh --install-only installs the suite", out)
        return t.done()
    print("# runtime: %s" % RT, flush=True)
    base = tempfile.mkdtemp(prefix="mcpgate-itest-conformance-")
    try:
        ct.unenforced_here(base)
        run(base)
    except Exception as e:
        t.ok(False, "the conformance case on %s raised %s: %s" % (RT, type(e).__name__, e))
    finally:
        cleanup()
        shutil.rmtree(base, ignore_errors=True)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
