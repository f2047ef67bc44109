#!/usr/bin/env python3
"""The MCP conformance suite's server scenarios against `mcpgate serve
--listen 127.0.0.1:0 --passthrough`, on the fake runtime: the listener and
the relay as the suite sees them, without a container runtime.

The fake runtime runs its "container" as a child process (fakes/README.md);
here that process is a fixture server under /usr/bin/node, the one that
tests/integration/conformance_server_test.py runs contained. Two eras, each
with a listener of its own (tests/lib/conformance_suite.py's ERAS): the
suite 0.1.16 (build/conformance) against tests/conformance/fixture-server.mjs
for 2025-11-25, and the suite 0.2.0-alpha.12 (build/conformance-2026) with
--spec-version 2026-07-28 against tests/conformance/fixture-server-2026.mjs.
A suite comes from tests/conformance/run.sh --install-only [--era], which
installs it from the npm registry the first time, and only where
MCPGATE_TESTS_NETWORK=1 says the run may use the network, as make test and
make integration do; without node, an era whose suite is missing reports
that era skipped (and the test skipped when neither ran).
Environment: MCPGATE, FAKES (as serve_test.py); MCPGATE_CONFORMANCE_ERAS
(default "2025-11-25 2026-07-28") names the eras to run.
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


def run_era(era):
    """One era: its fixture behind a listener on the fake runtime, the suite
    against it. False when its suite is not there and may not be installed."""
    if not os.path.exists(era.cli) and os.environ.get("MCPGATE_TESTS_NETWORK") != "1":
        print("# %s: skipped, the conformance suite is not in %s and make check uses no "
              "network (make test installs it; or tests/conformance/run.sh --install-only "
              "--era %s)" % (era.name, os.path.relpath(era.suite_dir, cs.TOP), era.name))
        return False
    rc, out = cs.install(era)
    if rc == 77:
        print("# %s: skipped, the conformance suite could not be installed (no npm registry?)"
              % era.name)
        return False
    if rc != 0:
        t.ok(False, "tests/conformance/run.sh --install-only --era %s installs the suite"
             % era.name, out)
        return True

    f = Fixture(cs.server_entry(IMAGE, era=era), config=cs.CONFIG)
    failed_before = t.failed
    # the fixture on its own first: a scenario that fails behind mcpgate
    # only is mcpgate's
    cs.fixture_alone(t, era, f.dir)
    # the fake's container is DIR/mcpgate-probe: here the fixture, which
    # finds the suite's SDK in the node_modules beside it
    app = os.path.join(f.dir, "app")
    os.makedirs(app)
    os.symlink(os.path.join(era.suite_dir, "node_modules"), os.path.join(app, "node_modules"))
    name = os.path.basename(era.fixture)
    with open(era.fixture) as src, open(os.path.join(app, name), "w") as dst:
        dst.write(src.read())
    probe = os.path.join(f.rt, "mcpgate-probe")
    os.remove(probe)
    with open(probe, "w") as fh:
        fh.write("#!/bin/sh\nexec %s %s/%s\n" % (NODE, app, name))
    os.chmod(probe, 0o755)

    label = "conformance server %s" % era.name
    r = f.mcpgate("review", "fixture", "--workspace", f.ws)
    t.ok(r.returncode == 0 and all(
        re.search(r"^  %s  \[effect: read, on\]$" % x, r.stdout, re.M) for x in era.tools),
        "%s: review lists every tool of the fixture as read and on" % label,
        r.stdout + r.stderr)
    r = f.mcpgate("approve", "fixture", "--workspace", f.ws)
    t.ok(r.returncode == 0, "%s: approve pins its manifest" % label, r.stdout + r.stderr)

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
    if t.ok(url is not None, "%s: serve --listen --passthrough says where it listens" % label,
            open(log_path, errors="replace").read()[-2000:]):
        cs.run(t, url, os.path.join(f.state, "mcpgate", "listener-token"), f.dir, label, era)
    p.terminate()
    try:
        rc = p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = p.wait()
    t.ok(rc == 0, "%s: serve ends with status 0 at SIGTERM" % label,
         open(log_path, errors="replace").read()[-1500:])
    if t.failed == failed_before:
        f.cleanup()
    else:
        print("# kept for a look: %s" % f.dir)
    return True


def main():
    if not os.access(NODE, os.X_OK):
        return skip("needs %s to run the fixture server (apt-get install nodejs)" % NODE)
    names = os.environ.get("MCPGATE_CONFORMANCE_ERAS", " ".join(cs.ERAS)).split()
    unknown = [n for n in names if n not in cs.ERAS]
    if unknown:
        t.ok(False, "MCPGATE_CONFORMANCE_ERAS names eras of tests/lib/conformance_suite.py "
             "(%s), not %s" % (", ".join(cs.ERAS), ", ".join(unknown)))
        return t.done()
    ran = [run_era(cs.ERAS[n]) for n in names]
    if not any(ran):
        return skip("no era's conformance suite is here and make check uses no network "
                    "(make test installs them; or tests/conformance/run.sh --install-only "
                    "[--era 2026-07-28])")
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
