#!/usr/bin/env python3
"""The MCP conformance suite's server scenarios against `mcpgate serve
--listen`, on a real runtime (MCPGATE_CONTAINER_TEST_RUNTIME=podman|docker).

The suite (@modelcontextprotocol/conformance, pinned by
tests/conformance/package-lock.json and installed by tests/conformance/run.sh)
is the MCP client; mcpgate's listener is the server under test; behind it, in
`--passthrough` so the suite's fixed names reach it unchanged, one contained
server, built into an image by tests/conformance/build-fixture-image.sh,
pulled by digest from the local registry, reviewed and approved as a person
does, run with no network. Two eras, one after the other, each with its own
image, workspace and listener (tests/lib/conformance_suite.py's ERAS): the
suite 0.1.16 against tests/conformance/fixture-server.mjs (2025-11-25), and
the suite 0.2.0-alpha.12, `--suite all --spec-version 2026-07-28`, against
tests/conformance/fixture-server-2026.mjs (SDK 2.x), which the suite first
checks on its own (its --http on loopback, outside any container), so that
a scenario failing only behind mcpgate is known to be mcpgate's.
MCPGATE_CONFORMANCE_ERAS (default both) names the eras to run.

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


def run(base, era):
    label = "conformance server %s" % era.name
    title = "mcpgate-conformance-fixture" + ("-2026" if era.name == "2026-07-28" else "")
    r = subprocess.run([os.path.join(cs.CONF, "build-fixture-image.sh"), "--era", era.name,
                        "--runtime", RT, "--tag", TAG], env=dict(os.environ, MCPGATE=MCPGATE),
                       capture_output=True, text=True, timeout=900)
    image = r.stdout.strip()
    if not t.ok(r.returncode == 0 and re.fullmatch(
            r"localhost:5000/%s@sha256:[0-9a-f]{64}" % title, image),
            "%s: build-fixture-image.sh --era %s packs, pushes and prints "
            "localhost:5000/%s@sha256:..." % (label, era.name, title),
            r.stdout + r.stderr[-1500:]):
        return
    made["images"].append(image)
    os.makedirs(base)
    w = ct.Session(base, cs.server_entry(image, ct.accept_line(), era=era), config=cs.CONFIG)

    r = w.mcpgate("pull", "fixture")
    t.ok(r.returncode == 0 and "is present" in r.stdout,
         "%s: mcpgate pull fetches it by digest" % label, r.stdout + r.stderr[-800:])
    r = w.mcpgate("review", "fixture", "--workspace", w.ws)
    out = r.stdout
    t.ok(r.returncode == 0 and re.search(r"says it is: %s\b" % title, out) and
         "network: none" in out and
         all(re.search(r"^  %s  \[effect: read, on\]$" % x, out, re.M) for x in era.tools),
         "%s: review starts it contained and lists every tool as read and on" % label,
         out + r.stderr)
    reviewed = re.search(r"^manifest: (sha256:[0-9a-f]{64})$", out, re.M)
    r = w.mcpgate("approve", "fixture", "--workspace", w.ws)
    t.ok(r.returncode == 0 and reviewed is not None and w.pinned("fixture") == reviewed.group(1),
         "%s: approve pins the reviewed manifest" % label, r.stdout + r.stderr)

    # the fixture on its own first (outside a container, on loopback)
    cs.fixture_alone(t, era, w.dir)
    p, url, serve_err = ct.start_listener(w, made, "--passthrough", log="serve.stderr")
    if not t.ok(url is not None,
                "%s: serve --listen 127.0.0.1:0 --passthrough says where it listens" % label,
                open(serve_err, errors="replace").read()[-2000:]):
        return
    cs.run(t, url, os.path.join(w.state, "mcpgate", "listener-token"), w.dir, label, era)

    rc = ct.stop_listener(p)
    made["serve"] = None
    t.ok(rc == 0, "%s: serve ends with status 0 at SIGTERM (status %s)" % (label, rc))
    sids = w.session_ids()
    left = [n for sid in sids for n in ct.labelled("containers", "mcpgate.session=" + sid)]
    t.ok(sids and not left, "%s: no container of the %d sessions is left" % (label, len(sids)),
         left)
    if t.failed:
        with open(serve_err, errors="replace") as fh:
            text = fh.read()
        # warnings, errors and a sanitizer's report first: a session's end
        # is one line each
        ct.comment("\n".join(x for x in text.splitlines() if re.search(
            r"mcpgate: (warning|error)|^==\d+==|ERROR: |SUMMARY: |^ *#\d+ 0x", x)), 60)
        ct.comment(text, 20)


def cleanup():
    ct.stop_listener(made["serve"])
    for image in made["images"]:
        ct.rt("rmi", "-f", image, check=False)


def main():
    if shutil.which(RT) is None:
        return ct.skip("%s is not installed" % RT)
    if not os.path.exists("/usr/bin/node"):
        return ct.skip("needs /usr/bin/node for the fixture's image (apt-get install nodejs)")
    if not ct.registry_up():
        return ct.skip("no registry on 127.0.0.1:5000 (tests/integration/run.sh starts one)")
    names = os.environ.get("MCPGATE_CONFORMANCE_ERAS", " ".join(cs.ERAS)).split()
    unknown = [n for n in names if n not in cs.ERAS]
    if unknown:
        t.ok(False, "MCPGATE_CONFORMANCE_ERAS names eras of tests/lib/conformance_suite.py "
             "(%s), not %s" % (", ".join(cs.ERAS), ", ".join(unknown)))
        return t.done()
    eras = []
    for name in names:
        rc, out = cs.install(cs.ERAS[name])
        if rc == 77:
            why = [x for x in out.splitlines() if "SKIP" in x]
            print("# %s: skipped, the conformance suite could not be installed: %s" % (
                name, why[0].split("SKIP", 1)[1].strip() if why else "npm ci failed"))
        elif rc != 0:
            t.ok(False, "tests/conformance/run.sh --install-only --era %s installs the suite"
                 % name, out)
        else:
            eras.append(cs.ERAS[name])
    if not eras and t.failed == 0:
        return ct.skip("no era's conformance suite could be installed (no npm registry?)")
    print("# runtime: %s" % RT, flush=True)
    base = tempfile.mkdtemp(prefix="mcpgate-itest-conformance-")
    try:
        ct.unenforced_here(base)
        for era in eras:
            try:
                run(os.path.join(base, era.name), era)
            except Exception as e:
                t.ok(False, "the conformance case %s on %s raised %s: %s" % (
                    era.name, RT, type(e).__name__, e))
            finally:
                ct.stop_listener(made["serve"])
                made["serve"] = None
    finally:
        cleanup()
        shutil.rmtree(base, ignore_errors=True)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
