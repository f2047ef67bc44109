#!/usr/bin/env python3
"""The MCP conformance suite's server scenarios against `mcpgate serve
--listen 127.0.0.1:0 --passthrough`, on the fake runtime: the listener and
the relay as the suite sees them, without a container runtime.

The fake runtime runs its "container" as a child process (fakes/README.md);
here that process is tests/conformance/fixture-server.mjs under
/usr/bin/node, the server that tests/integration/conformance_server_test.py
runs contained. The suite comes from build/conformance
(tests/conformance/run.sh --install-only, which installs it from the npm
registry the first time, and only where MCPGATE_TESTS_NETWORK=1 says the
run may use the network, as make test and make integration do); without
node or the suite this reports skipped.
Environment: MCPGATE, FAKES (as serve_test.py).
"""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from mcpclient import Tap  # noqa: E402
from gwtest import Fixture, IMAGE  # noqa: E402
import conformance_suite as cs  # noqa: E402

t = Tap()
NODE = "/usr/bin/node"


def skip(why):
    print("ok 1 # SKIP %s" % why)
    print("0 passed, 0 failed")
    return 77


def main():
    if not os.access(NODE, os.X_OK):
        return skip("needs %s to run the fixture server (apt-get install nodejs)" % NODE)
    # make check uses no network: the suite is installed only by a run that
    # may reach the npm registry (make test, make integration), else used
    # when it is there already
    if not os.path.exists(cs.CLI) and os.environ.get("MCPGATE_TESTS_NETWORK") != "1":
        return skip("the conformance suite is not in build/conformance and make check uses "
                    "no network (make test installs it; or tests/conformance/run.sh "
                    "--install-only)")
    rc, out = cs.install()
    if rc == 77:
        return skip("the conformance suite could not be installed (no npm registry?)")
    if rc != 0:
        t.ok(False, "tests/conformance/run.sh --install-only installs the suite", out)
        return t.done()

    f = Fixture(cs.server_entry(IMAGE), config=cs.CONFIG)
    # the fake's container is DIR/mcpgate-probe: here the fixture, which
    # finds the suite's SDK in the node_modules beside it
    app = os.path.join(f.dir, "app")
    os.makedirs(app)
    os.symlink(os.path.join(cs.SUITE_DIR, "node_modules"), os.path.join(app, "node_modules"))
    with open(cs.FIXTURE) as src, open(os.path.join(app, "fixture-server.mjs"), "w") as dst:
        dst.write(src.read())
    probe = os.path.join(f.rt, "mcpgate-probe")
    os.remove(probe)
    with open(probe, "w") as fh:
        fh.write("#!/bin/sh\nexec %s %s/fixture-server.mjs\n" % (NODE, app))
    os.chmod(probe, 0o755)

    r = f.mcpgate("review", "fixture", "--workspace", f.ws)
    t.ok(r.returncode == 0 and all(
        re.search(r"^  %s  \[effect: read, on\]$" % x, r.stdout, re.M) for x in cs.TOOLS),
        "review lists every tool of the fixture as read and on", r.stdout + r.stderr)
    r = f.mcpgate("approve", "fixture", "--workspace", f.ws)
    t.ok(r.returncode == 0, "approve pins its manifest", r.stdout + r.stderr)

    log_path = os.path.join(f.dir, "listen-stderr.log")
    with open(log_path, "wb") as log:
        p = subprocess.Popen(f.argv("--listen", "127.0.0.1:0", "--passthrough"), env=f.env(),
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
    url = None
    deadline = time.monotonic() + 30
    while url is None and time.monotonic() < deadline and p.poll() is None:
        with open(log_path, errors="replace") as fh:
            m = re.search(r"listening on (http://127\.0\.0\.1:\d+/mcp)", fh.read())
        url = m.group(1) if m else None
        time.sleep(0.05)
    if t.ok(url is not None, "serve --listen --passthrough says where it listens",
            open(log_path, errors="replace").read()[-2000:]):
        cs.run(t, url, os.path.join(f.state, "mcpgate", "listener-token"), f.dir)
    p.terminate()
    try:
        rc = p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = p.wait()
    t.ok(rc == 0, "serve ends with status 0 at SIGTERM",
         open(log_path, errors="replace").read()[-1500:])
    if t.failed == 0:
        f.cleanup()
    else:
        print("# kept for a look: %s" % f.dir)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
