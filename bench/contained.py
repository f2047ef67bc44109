#!/usr/bin/env python3
"""Benchmarks of mcpgate's contained-server gateway.

Three measurements, printed side by side in one run, with medians and ratios
(bench/README.md says what each figure means):

  1. tools/call round trip (echo): the probe driven directly, versus the same
     probe behind `mcpgate serve` on the fake runtime (what mcpgate costs).
  2. the same round trip through a real container: `mcpgate serve` on podman
     or docker versus `RUNTIME run --rm -i ... IMAGE` driven directly.
  3. session start: spawn of `mcpgate serve` to the answer of its first
     tools/list, 1 server versus 8 (fake runtime; and real containers against
     8 bare parallel `RUNTIME run`).

Parts 2 and 3b run only with MCPGATE_BENCH_RUNTIME=podman or docker.
Nothing here asserts on time. Every wait has a deadline; every container,
image, temporary folder and helper daemon the bench made is removed at the
end, also on failure. Exit status: 0, or 1 when something misbehaved (an
error answer, a hang, a leaked container, a setup failure): see "anomalies".

Environment: MCPGATE (the binary, default ./mcpgate), FAKES (the folder with
fake-runtime and mcpgate-probe, default build/fakes), MCPGATE_BENCH_RUNTIME.
`--quick` divides every count by ten, to try the script itself.
"""
import datetime
import gc
import glob
import hashlib
import json
import math
import os
import platform
import resource
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
from mcpclient import Client  # noqa: E402
from gwtest import UNMATCHED_PIN, wait_settled  # noqa: E402
from benchlib import (CLOCK_TICK, anomalies, anomaly, first_line, fmt, measure,  # noqa: E402
                      on_term, pct, process_tree, ratio, report_anomalies, rx, sh, summary,
                      table, tree_cpu)

MCPGATE = os.path.abspath(os.environ.get("MCPGATE", os.path.join(TOP, "mcpgate")))
MINRELAY = os.path.abspath(os.environ.get("MINRELAY", os.path.join(TOP, "build", "bench",
                                                                   "minrelay")))
SOCAT = shutil.which("socat")
FAKES = os.path.abspath(os.environ.get("FAKES", os.path.join(TOP, "build", "fakes")))
RUNTIME = os.environ.get("MCPGATE_BENCH_RUNTIME", "").strip()
# podman, docker, or both ("podman,docker"): parts 2 and 3b for each, and the
# aims of issue 25 printed side by side at the end
RUNTIMES = [x.strip() for x in RUNTIME.split(",") if x.strip()]
QUICK = "--quick" in sys.argv[1:]
# --only 1,3b: those parts alone (1, 2, 3a, 3b); every part by default
ONLY = None
for _i, _a in enumerate(sys.argv[1:]):
    if _a.startswith("--only="):
        ONLY = set(_a.split("=", 1)[1].split(","))
    elif _a == "--only" and _i + 2 < len(sys.argv):
        ONLY = set(sys.argv[_i + 2].split(","))


def wanted(part):
    return ONLY is None or part in ONLY

SCALE = 10 if QUICK else 1
N_FAKE = 5000 // SCALE        # round trips per side, fake runtime
N_REAL = 500 // SCALE         # round trips per side, real container
BLOCKS = 10                   # the two sides alternate in this many blocks
RELAY_BLOCKS = 20             # part 1's four sides take turns in this many
WARMUP = 20                   # untimed calls per side first
STARTS_FAKE = max(2, 20 // SCALE)
STARTS_REAL = max(2, 5 // SCALE)
for _i, _a in enumerate(sys.argv[1:]):  # --real-runs N: part 3b's runs (the machine may be shared)
    if _a.startswith("--real-runs="):
        STARTS_REAL = max(1, int(_a.split("=", 1)[1]))
    elif _a == "--real-runs" and _i + 2 < len(sys.argv):
        STARTS_REAL = max(1, int(sys.argv[_i + 2]))
CALL_TIMEOUT = 30.0           # s, one call
START_TIMEOUT = 120.0         # s, one session start (the gateway's own default is 60)
CLOSE_TIMEOUT = 60.0          # s, a session's end after its input closes

FAKE_DIGEST = "sha256:" + "be" * 32
FAKE_IMAGE = "localhost:5000/mcpgate-bench-probe@" + FAKE_DIGEST
REGISTRY = "127.0.0.1:5000"
REPO = "mcpgate-bench-probe"
ME = os.getpid()
# the bare baselines' containers carry this label, never mcpgate.pid: a
# starting mcpgate sweeps mcpgate.pid containers whose owner is not a live
# mcpgate process, and this script is python
BENCH_LABEL = "mcpgate-bench.pid"

# the variables mcpgate passes to the runtime (docs/contained-servers.md)
RUNTIME_ENV = ("PATH", "HOME", "XDG_RUNTIME_DIR", "TMPDIR", "CONTAINER_HOST",
               "CONTAINER_CONNECTION", "CONTAINER_SSHKEY", "CONTAINERS_CONF",
               "CONTAINERS_REGISTRIES_CONF", "CONTAINERS_STORAGE_CONF", "REGISTRY_AUTH_FILE",
               "DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_CONFIG", "DOCKER_TLS_VERIFY",
               "DOCKER_CERT_PATH", "DOCKER_API_VERSION")

temp_dirs = []      # removed at the end
gateways = []       # every mcpgate process started (Popen), for the leak check and the end
real_gateways = set()  # pids of those that ran a real runtime
results = {}


def tempdir(prefix):
    d = tempfile.mkdtemp(prefix=prefix)
    temp_dirs.append(d)
    return d


# ---- statistics and printing ---------------------------------------------

def skipped(title, why):
    print()
    print("== " + title)
    print("  skipped: " + why)
    sys.stdout.flush()


# ---- processes ---------------------------------------------------------------

def finish(proc, timeout):
    """Wait for a process we started; kill it (by its pid) after timeout.
    Returns its exit status, or None when it had to be killed."""
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None


def close_client(client, what, timeout=CLOSE_TIMEOUT):
    """End a session by closing its input; returns seconds it took to end."""
    t0 = time.perf_counter()
    try:
        client.proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass
    status = finish(client.proc, timeout)
    took = time.perf_counter() - t0
    if status is None:
        anomaly("%s did not end within %.0f s of the end of its input (killed)" % (what, timeout))
    elif status != 0:
        anomaly("%s exited with status %d" % (what, status))
    for stream in (client.proc.stdout,):
        try:
            stream.close()
        except OSError:
            pass
    return took


def echo_block(client, tool, n, times, errors, tag):
    """n echo calls one at a time; append each round trip in microseconds."""
    for i in range(n):
        text = "mcpgate bench %s %d" % (tag, i)
        t0 = time.perf_counter_ns()
        r = client.call(tool, {"text": text}, timeout=CALL_TIMEOUT)
        t1 = time.perf_counter_ns()
        times.append((t1 - t0) / 1000.0)
        content = r.get("result", {}).get("content") or [{}]
        if "result" not in r or r["result"].get("isError") or content[0].get("text") != text:
            errors.append(r)


def compare_round_trips(sides, n, blocks=BLOCKS, cpu=False):
    """sides: [(label, client, tool)]. Warm up, then take turns in blocks (a
    different side first in each) so that every side sees the same machine;
    returns {label: (times, errors, cpu)}. With cpu, cpu has one (ns, system
    ticks, calls) per block of the side: its process tree's (its client's
    process and every descendant, read once after the warm-up) over that
    block alone, while the other sides wait in poll."""
    out = {label: ([], [], []) for label, _, _ in sides}
    for label, client, tool in sides:
        echo_block(client, tool, WARMUP, [], out[label][1], "warmup")
    trees = {label: process_tree(client.proc.pid) for label, client, _ in sides} if cpu else {}
    block = max(1, n // blocks)
    gc.disable()
    try:
        for b in range(blocks):
            k = b % len(sides)
            for label, client, tool in sides[k:] + sides[:k]:
                before = tree_cpu(trees[label]) if cpu else None
                calls = block if b < blocks - 1 else n - block * b
                echo_block(client, tool, calls, out[label][0], out[label][1], "%d" % b)
                if cpu:
                    after = tree_cpu(trees[label])
                    out[label][2].append((after[0] - before[0], after[1] - before[1], calls))
    finally:
        gc.enable()
    for label, (times, errors, _) in out.items():
        if errors:
            anomaly("%s: %d of %d echo calls did not come back right; first: %s" %
                    (label, len(errors), n + WARMUP, json.dumps(errors[0])[:300]))
    return out


def round_trip_rows(stats):
    """The two sides, their ratios and their difference."""
    rows = []
    for label, s in stats.items():
        rows.append([label, s.get("median"), s.get("p90"), s.get("p99"), s.get("mean"),
                     s.get("n", 0), s.get("errors", 0)])
    d, g = list(stats.values())
    if d.get("errors") or g.get("errors"):
        rows.append(["(answers were wrong: the times are not round trips; see anomalies)",
                     "", "", "", "", "", ""])
        return rows
    rows.append(["gateway / direct", rx(g["median"], d["median"]), rx(g["p90"], d["p90"]),
                 rx(g["p99"], d["p99"]), rx(g["mean"], d["mean"]), "", ""])
    rows.append(["gateway - direct (us)", g["median"] - d["median"], g["p90"] - d["p90"],
                 g["p99"] - d["p99"], g["mean"] - d["mean"], "", ""])
    return rows


# ---- the fake runtime ------------------------------------------------------

def server_toml(name, image, tools=("echo",), args=None, manifest=None):
    s = '[[server]]\nname = "%s"\ntransport = "container"\nimage = "%s"\n' % (name, image)
    if manifest:
        s += 'manifest = "%s"\n' % manifest
    if args:
        s += "args = [%s]\n" % ", ".join(json.dumps(a) for a in args)
    for tool in tools:
        # echo only reads: declared so, a call goes straight through (a write or
        # undeclared tool asks the person at every call, through elicitation)
        s += '[server.tools.%s]\non = true\neffect = "read"\n' % tool
    return s


class Setup:
    """A config folder, a state folder, a workspace, and for the fake runtime
    a folder with fake-runtime as podman and the probe beside it."""

    def __init__(self, nservers, runtime="podman", image=FAKE_IMAGE, fake=True, args=None, rt=None):
        self.dir = tempdir("mcpgate-bench-")
        self.rt = os.path.join(self.dir, "rt")
        self.conf = os.path.join(self.dir, "conf")
        self.state = os.path.join(self.dir, "state")
        self.ws = os.path.join(self.dir, "ws")
        self.fake = fake
        for d in (self.rt, self.conf, self.state, self.ws):
            os.makedirs(d)
        if fake:
            shutil.copy(os.path.join(FAKES, "fake-runtime"), os.path.join(self.rt, runtime))
            shutil.copy(os.path.join(FAKES, "mcpgate-probe"), os.path.join(self.rt, "mcpgate-probe"))
            with open(os.path.join(self.rt, "images"), "w") as f:
                f.write(image + "\n")
        self.nservers, self.image, self.args = nservers, image, args
        self.write_servers({})
        with open(os.path.join(self.conf, "config.toml"), "w") as f:
            f.write('[mcp]\nruntime = "%s"\n' % runtime)
        self.nlog = 0
        self.spawned = {}  # mcpgate's pid: the wall-clock ms of its spawn
        self.old_audit = set()
        self.approved = self.approve(rt)

    def write_servers(self, manifests):
        with open(os.path.join(self.conf, "mcp.toml"), "w") as f:
            for i in range(self.nservers):
                name = "s%d" % (i + 1)
                f.write(server_toml(name, self.image, args=self.args, manifest=manifests.get(name)))

    def approve(self, rt):
        """Pin every server's manifest as a person would approve it: one
        untimed session with a pin no manifest has (a server never approved
        is not started), the live hash from the audit log's server.withheld
        records once every server started, written as `manifest` in
        mcp.toml. A build without manifest pinning withholds nothing, and
        nothing is written."""
        self.write_servers({"s%d" % (i + 1): UNMATCHED_PIN for i in range(self.nservers)})
        c = self.start()
        try:
            c.initialize()
            c.request("tools/list", timeout=START_TIMEOUT)
            wait_settled(self.state, START_TIMEOUT)
        finally:
            pid = c.proc.pid
            close_client(c, "mcpgate serve (approval session, %d servers)" % self.nservers)
            session_checks(self, "approval session, %d servers" % self.nservers, rt, pid)
        live = {e["server"]: e["live"] for e in self.audit()
                if e.get("event") == "server.withheld" and e.get("live")}
        self.write_servers(live)
        self.old_audit = set(self.audit_files())
        return live

    def audit_files(self):
        return glob.glob(os.path.join(self.state, "mcpgate", "sessions", "*.jsonl"))

    def env(self):
        if self.fake:
            e = {"PATH": self.rt + ":/usr/bin:/bin", "HOME": self.dir}
        else:
            e = {k: os.environ[k] for k in RUNTIME_ENV if k in os.environ}
            e.setdefault("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
            e.setdefault("HOME", "/root")
        e["XDG_STATE_HOME"] = self.state
        e["XDG_CONFIG_HOME"] = os.path.join(self.dir, "nowhere")
        return e

    def start(self):
        self.nlog += 1
        self.stderr_path = os.path.join(self.dir, "stderr-%d.log" % self.nlog)
        with open(self.stderr_path, "wb") as err:
            c = Client([MCPGATE, "serve", "--config", self.conf, "--workspace", self.ws],
                       env=self.env(), stderr=err)
        gateways.append(c.proc)
        if not self.fake:
            real_gateways.add(c.proc.pid)
        return c

    def complaints(self):
        """mcpgate's warn and error lines of the last session."""
        with open(self.stderr_path, errors="replace") as fh:
            return [ln.rstrip() for ln in fh if ln.startswith(("mcpgate: warn", "mcpgate: error"))]

    def fake_containers(self):
        d = os.path.join(self.rt, "containers")
        return sorted(os.listdir(d)) if os.path.isdir(d) else []

    def audit(self):
        """The audit records of every session since the approval session."""
        out = []
        for path in self.audit_files():
            if path in self.old_audit:
                continue
            with open(path) as fh:
                out += [json.loads(line) for line in fh if line.strip()]
        return out


def session_checks(setup, what, rt=None, pid=None):
    for line in setup.complaints():
        anomaly("%s: mcpgate said: %s" % (what, line[:600]))
    if setup.fake:
        left = setup.fake_containers()
        if left:
            anomaly("%s: containers left in the fake runtime after the session: %s" % (what, left))
    elif rt is not None and pid is not None:
        left = rt.wait_gone("label=mcpgate.pid=%d" % pid)
        if left:
            anomaly("%s: containers left after the session ended: %s (removed now)" % (what, left))
            rt.remove(left)


def probe_client():
    return Client([os.path.join(FAKES, "mcpgate-probe")], env={"PATH": "/usr/bin:/bin"},
                  stderr=subprocess.DEVNULL)


def relay_client(argv):
    """A relay in front of the probe: argv, then the probe's path."""
    return Client(argv, env={"PATH": "/usr/bin:/bin"}, stderr=subprocess.DEVNULL)


def socat_argv(probe):
    # pipes to the probe, as the minimal relay and mcpgate have (socat's
    # default would be a socketpair)
    return [SOCAT, "STDIO", "EXEC:%s,pipes" % probe]


RELAY_SIDES = ("direct probe", "minimal relay", "socat", "mcpgate serve (fake runtime)")


def bench_round_trip_fake():
    title = ("1. tools/call round trip (echo): the probe directly, behind the minimal relay, "
             "socat and mcpgate (fake runtime); %d calls each, microseconds" % N_FAKE)
    setup = Setup(1)
    if setup.approved:
        print("  (this mcpgate withholds tools of unapproved servers: the bench approved the "
              "probe's manifest %s in mcp.toml)" % sorted(set(setup.approved.values()))[0])
    results["approved_manifests"] = sorted(set(setup.approved.values()))
    probe = os.path.join(FAKES, "mcpgate-probe")
    clients = []
    gw = None
    try:
        for label, argv in (("direct probe", None), ("minimal relay", [MINRELAY, probe]),
                            ("socat", socat_argv(probe))):
            c = probe_client() if argv is None else relay_client(argv)
            clients.append((label, c))
            r = c.initialize()
            if "result" not in r:
                raise RuntimeError("the probe (%s) did not answer initialize: %s" % (label, r))
        gw = setup.start()
        gw.initialize()
        names = [t["name"] for t in gw.request("tools/list", timeout=START_TIMEOUT)["result"]["tools"]]
        if names != ["s1__echo"]:
            raise RuntimeError("mcpgate offers %s, not s1__echo" % names)
        sides = [(label, c, "echo") for label, c in clients]
        sides.append((RELAY_SIDES[3], gw, "s1__echo"))
        out = compare_round_trips(sides, N_FAKE, blocks=RELAY_BLOCKS, cpu=True)
    finally:
        for label, c in clients:
            close_client(c, "the probe (%s)" % label)
        if gw is not None:
            close_client(gw, "mcpgate serve (fake runtime, round trip)")
            session_checks(setup, "round trip, fake runtime")
    stats = {}
    for label, (times, errors, cpu) in out.items():
        ns = sum(x[0] for x in cpu)
        # the median of the blocks' CPU per call: a block that a neighbour on
        # the host slowed (its time counts as ours in a guest) moves it little
        per_block = [x[0] / 1000.0 / x[2] for x in cpu if x[2]]
        stats[label] = dict(summary(times), errors=len(errors),
                            cpu_us=statistics.median(per_block) if per_block else None,
                            cpu_us_total=ns / 1000.0 / max(1, len(times)),
                            sys_share=(sum(x[1] for x in cpu) / CLOCK_TICK * 1e9 / ns)
                            if ns else None)
    d = stats[RELAY_SIDES[0]]
    m, so, g = (stats[k] for k in RELAY_SIDES[1:])
    rows = [[label, st.get("mean"), st.get("median"), st.get("p90"), st.get("p99"),
             st.get("cpu_us"), "-" if st.get("sys_share") is None else "%.0f%%" %
             (100 * st["sys_share"]), st.get("n", 0), st.get("errors", 0)]
            for label, st in stats.items()]
    if any(st.get("errors") for st in stats.values()):
        rows.append(["(answers were wrong: the times are not round trips; see anomalies)"] +
                    [""] * 8)
    else:
        def diff(label, a, b):
            return [label, a["mean"] - b["mean"], a["median"] - b["median"], a["p90"] - b["p90"],
                    a["p99"] - b["p99"], a["cpu_us"] - b["cpu_us"], "", "", ""]

        def quot(label, a, b):
            return [label, rx(a["mean"], b["mean"]), rx(a["median"], b["median"]),
                    rx(a["p90"], b["p90"]), rx(a["p99"], b["p99"]),
                    rx(a["cpu_us"], b["cpu_us"]), "", "", ""]
        rows += [diff("minimal relay - direct", m, d), diff("socat - direct", so, d),
                 diff("mcpgate - direct", g, d), diff("mcpgate - minimal relay", g, m),
                 quot("mcpgate / minimal relay", g, m), quot("socat / minimal relay", so, m)]
    table(title, ["", "mean", "p50", "p90", "p99", "cpu/call", "sys", "calls", "errors"], rows)
    print("  (latency: the driver's send to its read of the answer; cpu/call: on-CPU time of\n"
          "   the side's whole process tree per call, the probe's included, from\n"
          "   /proc/PID/task/TID/schedstat, the median over its %d blocks; sys: the system\n"
          "   share of it, from /proc/PID/stat ticks. \"- direct\" is what a relay adds)"
          % RELAY_BLOCKS)
    if not any(st.get("errors") for st in stats.values()):
        print("  aim (issue 15): mcpgate within 10 us of the minimal relay: %+.1f us mean, "
              "%+.1f us p50; CPU per call within 1.5x of it: %s" %
              (g["mean"] - m["mean"], g["median"] - m["median"], rx(g["cpu_us"], m["cpu_us"])))
    results["round_trip_fake"] = {
        "unit": "us", "calls": N_FAKE, "blocks": RELAY_BLOCKS,
        "socat": socat_version(),
        "direct": d, "minimal_relay": m, "socat_relay": so, "gateway": g,
        "ratio_median": ratio(g["median"], d["median"]),
        "ratio_p90": ratio(g["p90"], d["p90"]),
        "ratio_p99": ratio(g["p99"], d["p99"]),
        "added_median_us": g["median"] - d["median"],
        "gateway_minus_minimal_mean_us": g["mean"] - m["mean"],
        "gateway_minus_minimal_median_us": g["median"] - m["median"],
        "ratio_cpu_gateway_minimal": ratio(g["cpu_us"], m["cpu_us"])}


def socat_version():
    """socat's version line (it prints several on stdout)"""
    try:
        r = sh([SOCAT, "-V"], timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in r.stdout.splitlines():
        if line.startswith("socat version"):
            return line.split(" on ")[0].strip()
    return None


def children_cpu_ms():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r.ru_utime + r.ru_stime) * 1000.0


def timed_session_start(setup, nservers, cpu=None):
    """Spawn to the answer of the first tools/list, in ms; and the end, in ms.
    cpu, a list, gets the CPU time of the session: mcpgate and every process
    under it that was waited for (with the fake runtime: all of them)."""
    c0 = children_cpu_ms()
    t0 = time.perf_counter()
    wall0 = time.time() * 1000.0
    c = setup.start()
    setup.spawned[c.proc.pid] = wall0
    ok = True
    try:
        c.initialize()
        r = c.request("tools/list", timeout=START_TIMEOUT)
        t1 = time.perf_counter()
        names = [t["name"] for t in r.get("result", {}).get("tools", [])]
        want = ["s%d__echo" % (i + 1) for i in range(nservers)]
        if names != want:
            ok = False
            anomaly("session start with %d servers: tools/list offered %s, not %s" %
                    (nservers, names, want))
    finally:
        pid = c.proc.pid
        end = close_client(c, "mcpgate serve (%d servers)" % nservers)
        if cpu is not None:
            cpu.append(children_cpu_ms() - c0)
    return (t1 - t0) * 1000.0, end * 1000.0, ok, pid


def ready_ms(setup):
    """Each server's own start (image check, run, initialize, tools/list) as
    mcpgate recorded it, over every session of setup."""
    return summary([float(e["start_ms"]) for e in setup.audit()
                    if e.get("event") == "server.ready" and "start_ms" in e])


def audit_ms(ts):
    t = datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ")
    return t.timestamp() * 1000.0


def sweep_ms(setup):
    """Per session: the sweep (runtime ps, beside the first starts), from the
    audit log's session.start and sweep records (millisecond stamps)."""
    start, out = {}, []
    for e in setup.audit():
        try:
            if e.get("event") == "session.start":
                start[e["session"]] = audit_ms(e["ts"])
            elif e.get("event") == "sweep" and e.get("session") in start:
                out.append(audit_ms(e["ts"]) - start[e["session"]])
        except (KeyError, ValueError):
            pass
    return summary(out)


def first_run_ms(setup):
    """Per session: from session.start to its first server.start (the first
    runtime `run` spawned), from the audit log: what comes before any run."""
    start, first = {}, {}
    for e in setup.audit():
        try:
            if e.get("event") == "session.start":
                start[e["session"]] = audit_ms(e["ts"])
            elif e.get("event") == "server.start" and e.get("session") in start:
                t = audit_ms(e["ts"]) - start[e["session"]]
                first[e["session"]] = min(t, first.get(e["session"], t))
        except (KeyError, ValueError):
            pass
    return summary(list(first.values()))


# server.ready's phases (docs/audit-log.md), in the order a start has them
PHASES = ("platform_wait_ms", "image_check_ms", "image_wait_ms", "egress_topology_ms",
          "sidecar_ready_ms", "run_prepare_ms", "first_byte_ms", "initialize_ms",
          "tools_list_ms", "manifest_hash_ms")


def phases_ms(setup):
    """Each phase of every server's start (server.ready's phases), and how the
    platform was found (kept/asked, counted), over every session of setup"""
    out = {k: [] for k in PHASES}
    found = {}
    for e in setup.audit():
        if e.get("event") != "server.ready":
            continue
        ph = e.get("phases", {})
        for k in PHASES:
            if isinstance(ph.get(k), int):
                out[k].append(float(ph[k]))
        if ph.get("platform"):
            found[ph["platform"]] = found.get(ph["platform"], 0) + 1
    return {k: summary(v) for k, v in out.items() if v}, found


def own_start_ms(setup):
    """Per session: from the driver's spawn of mcpgate to its session.start
    record (the process, its libraries, the configuration, the seccomp
    profile, the audit log), by the record's pid; and from the last
    server.ready to ... (not known here: the answer's time is the driver's)"""
    out = []
    for e in setup.audit():
        if e.get("event") == "session.start" and e.get("pid") in setup.spawned:
            try:
                out.append(audit_ms(e["ts"]) - setup.spawned[e["pid"]])
            except (KeyError, ValueError):
                pass
    return summary(out)


INIT_DELAY_MS = 100   # 3a's second pair: each probe answers initialize after this long


def bench_session_start_fake():
    title = ("3a. session start, fake runtime: spawn of mcpgate serve to the answer of its "
             "first tools/list, %d runs each, ms" % STARTS_FAKE)
    delay = ["--initialize-delay", str(INIT_DELAY_MS)]
    # (key, servers, probe args, runs)
    variants = [("1", 1, None, STARTS_FAKE), ("8", 8, None, STARTS_FAKE),
                ("1d", 1, delay, max(2, STARTS_FAKE // 2)), ("8d", 8, delay, max(2, STARTS_FAKE // 2))]
    setups = {k: Setup(n, args=a) for k, n, a, _ in variants}
    times = {k: [] for k, _, _, _ in variants}
    ends = {k: [] for k, _, _, _ in variants}
    cpus = {k: [] for k, _, _, _ in variants}
    for run in range(STARTS_FAKE):
        order = variants if run % 2 == 0 else list(reversed(variants))
        for key, n, _, runs in order:
            if run >= runs:
                continue
            what = "session start, fake runtime, %d servers%s, run %d" % (
                n, ", initialize delayed" if key.endswith("d") else "", run + 1)
            try:
                ms, end, ok, _ = timed_session_start(setups[key], n, cpus[key])
            except Exception as e:  # noqa: BLE001 - one bad run is reported, the rest go on
                anomaly("%s: %s: %s" % (what, type(e).__name__, e))
                continue
            finally:
                session_checks(setups[key], what)
            if ok:
                times[key].append(ms)
                ends[key].append(end)
    S = {k: summary(v) for k, v in times.items()}
    E = {k: summary(v) for k, v in ends.items()}
    C = {k: summary(v) for k, v in cpus.items()}
    R = {k: ready_ms(v) for k, v in setups.items()}
    W = {k: sweep_ms(v) for k, v in setups.items()}
    F = {k: first_run_ms(v) for k, v in setups.items()}

    def row(label, k):
        return [label, S[k].get("median"), S[k].get("p90"), S[k].get("min"), S[k].get("max"),
                W[k].get("median"), F[k].get("median"), R[k].get("median"), E[k].get("median"),
                C[k].get("median"), S[k]["n"]]

    def ratio_row(label, a, b):
        return [label, rx(S[a].get("median"), S[b].get("median")),
                rx(S[a].get("p90"), S[b].get("p90")), "", "", "", "",
                rx(R[a].get("median"), R[b].get("median")),
                rx(E[a].get("median"), E[b].get("median")),
                rx(C[a].get("median"), C[b].get("median")), ""]
    d = "initialize after %d ms" % INIT_DELAY_MS
    rows = [row("1 server", "1"), row("8 servers", "8"), ratio_row("8 / 1", "8", "1"),
            row("1 server, " + d, "1d"), row("8 servers, " + d, "8d"),
            ratio_row("8 / 1, " + d, "8d", "1d")]
    table(title, ["", "median", "p90", "min", "max", "sweep", "1st run", "one server", "end",
                  "cpu", "runs"], rows)
    print("  (medians over the runs. sweep: session.start to sweep in the audit log, the sweep\n"
          "   beside the first starts; 1st run: session.start to the first server.start, what\n"
          "   comes before any run; one server: each server's own start, image check to its tools/list,\n"
          "   the audit log's server.ready start_ms; end: closing mcpgate's input to its exit;\n"
          "   cpu: user+sys of the whole session, mcpgate, fake runtimes and probes. With\n"
          "   --initialize-delay each probe waits without using CPU: a serial start would add\n"
          "   %d ms per server)" % INIT_DELAY_MS)
    results["session_start_fake"] = {
        "unit": "ms", "runs": STARTS_FAKE, "initialize_delay_ms": INIT_DELAY_MS,
        "1": S["1"], "8": S["8"], "1_delayed": S["1d"], "8_delayed": S["8d"],
        "cpu_1": C["1"], "cpu_8": C["8"], "cpu_1_delayed": C["1d"], "cpu_8_delayed": C["8d"],
        "sweep_1": W["1"], "sweep_8": W["8"], "first_run_1": F["1"], "first_run_8": F["8"],
        "server_ready_1": R["1"], "server_ready_8": R["8"],
        "server_ready_1_delayed": R["1d"], "server_ready_8_delayed": R["8d"],
        "end_1": E["1"], "end_8": E["8"],
        "ratio_8_1": ratio(S["8"].get("median"), S["1"].get("median")),
        "ratio_8_1_delayed": ratio(S["8d"].get("median"), S["1d"].get("median"))}


# ---- a real runtime --------------------------------------------------------

class Runtime:
    """podman or docker, with the helpers this bench needs; undoes what it did."""

    def __init__(self, kind):
        self.kind = kind
        self.path = shutil.which(kind)
        self.dockerd = None
        self.registry = None
        self.image_id = None
        self.local_tags = []
        self.image = None
        self.versions = {}
        self.dir = tempdir("mcpgate-bench-%s-" % kind)

    def cmd(self, *args, timeout=120, check=False):
        return sh([self.path] + list(args), timeout=timeout, check=check)

    def works(self):
        try:
            r = self.cmd("info" if self.kind == "podman" else "version", timeout=30)
            return r.returncode == 0, (r.stderr or r.stdout).strip()[:300]
        except (OSError, subprocess.TimeoutExpired) as e:
            return False, str(e)

    def prepare(self):
        """Returns None when ready, else why not."""
        if self.path is None:
            return "%s is not on PATH" % self.kind
        ok, why = self.works()
        if not ok and self.kind == "docker":
            dockerd = shutil.which("dockerd")
            if dockerd is None:
                return "docker does not answer and there is no dockerd: %s" % why
            logpath = os.path.join(self.dir, "dockerd.log")
            for attempt in range(3):  # a dockerd someone else is stopping holds the pid file a while
                if attempt > 0:
                    time.sleep(3)
                ok, why = self.works()
                if ok:
                    break
                log = open(logpath, "ab")
                self.dockerd = subprocess.Popen([dockerd], stdout=log, stderr=log,
                                                stdin=subprocess.DEVNULL, start_new_session=True)
                log.close()
                print("  started dockerd (pid %d); it is stopped at the end" % self.dockerd.pid)
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline and self.dockerd.poll() is None:
                    ok, why = self.works()
                    if ok:
                        break
                    time.sleep(0.5)
                if ok:
                    break
                if self.dockerd.poll() is not None:
                    with open(logpath, errors="replace") as fh:
                        tail = [ln.strip() for ln in fh if ln.strip()][-1:]
                    why = "dockerd exited with status %s: %s" % (self.dockerd.returncode,
                                                                 tail[0][:300] if tail else "")
                    print("  " + why)
                    self.dockerd = None
                else:
                    break
        if not ok:
            return "%s does not work here: %s" % (self.kind, why)
        if self.kind == "podman":
            self.versions["podman"] = first_line([self.path, "--version"])
        else:
            r = self.cmd("version", "--format", "{{.Client.Version}} {{.Server.Version}}", timeout=30)
            cv, _, sv = r.stdout.strip().partition(" ")
            self.versions["docker client"] = cv
            self.versions["docker server"] = sv
        return self.ensure_registry()

    def ensure_registry(self):
        status = registry_status()
        if status == 200:
            return None
        if status is not None:
            return ("something answers on %s with HTTP %d (a registry asking for a login?); "
                    "the bench needs one without auth" % (REGISTRY, status))
        exe = shutil.which("docker-registry")
        if exe is None:
            return "no registry on %s and no docker-registry to start one" % REGISTRY
        cfg = os.path.join(self.dir, "registry.yml")
        with open(cfg, "w") as f:
            f.write("version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n"
                    "    rootdirectory: %s\nhttp:\n  addr: %s\n"
                    % (os.path.join(self.dir, "registry-data"), REGISTRY))
        log = open(os.path.join(self.dir, "registry.log"), "wb")
        self.registry = subprocess.Popen([exe, "serve", cfg], stdout=log, stderr=log,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        print("  started docker-registry on %s (pid %d); it is stopped at the end"
              % (REGISTRY, self.registry.pid))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and self.registry.poll() is None:
            if registry_status() == 200:
                return None
            time.sleep(0.2)
        return "the registry started on %s did not answer" % REGISTRY

    def build_image(self):
        """The probe image, pushed, pulled by digest; sets self.image."""
        root = os.path.join(self.dir, "root")
        os.makedirs(root)
        shutil.copy(os.path.join(FAKES, "mcpgate-probe"), os.path.join(root, "mcpgate-probe"))
        tar = os.path.join(self.dir, "probe.tar")
        sh(["tar", "-C", root, "-cf", tar, "."], check=True)
        tag = "%s-%d" % (self.kind, ME)
        local = "localhost/%s:%s" % (REPO, tag)
        pushed = "localhost:5000/%s:%s" % (REPO, tag)
        r = self.cmd("import", "--change", 'ENTRYPOINT ["/mcpgate-probe"]', tar, local, check=True)
        self.image_id = r.stdout.strip().splitlines()[-1]
        self.local_tags += [local, pushed]
        self.cmd("tag", local, pushed, check=True)
        tls = ["--tls-verify=false"] if self.kind == "podman" else []
        self.cmd("push", *tls, pushed, check=True)
        req = urllib.request.Request(
            "http://%s/v2/%s/manifests/%s" % (REGISTRY, REPO, tag), method="HEAD",
            headers={"Accept": "application/vnd.oci.image.manifest.v1+json, "
                               "application/vnd.docker.distribution.manifest.v2+json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            digest = resp.headers.get("Docker-Content-Digest")
        if not digest or not digest.startswith("sha256:"):
            raise RuntimeError("the registry gave no Docker-Content-Digest for %s" % pushed)
        self.image = "localhost:5000/%s@%s" % (REPO, digest)
        self.cmd("pull", *tls, self.image, check=True)
        r = self.cmd("image", "inspect", "--format", "{{json .RepoDigests}}", self.image, check=True)
        if not any(d.endswith("@" + digest) for d in json.loads(r.stdout.strip().splitlines()[0])):
            raise RuntimeError("%s has no RepoDigest %s after the pull" % (self.image, digest))

    def names(self, filt):
        r = self.cmd("ps", "-a", "--filter", filt, "--format", "{{.Names}}", timeout=60)
        return [n for n in r.stdout.split() if n]

    def wait_gone(self, filt, seconds=10):
        """Containers matching filt that are still there after seconds (docker
        removes --rm containers after run has returned)."""
        deadline = time.monotonic() + seconds
        while True:
            left = self.names(filt)
            if not left or time.monotonic() > deadline:
                return left
            time.sleep(0.25)

    def remove(self, names):
        if not names:
            return
        force = ["--force", "--time=0"] if self.kind == "podman" else ["--force"]
        self.cmd("rm", *force, *names, timeout=120)

    def cleanup(self):
        try:
            if self.path is not None and (self.dockerd is None or self.dockerd.poll() is None):
                left = self.names("label=" + BENCH_LABEL + "=%d" % ME)
                for p in gateways:
                    if p.pid in real_gateways:
                        left += self.names("label=mcpgate.pid=%d" % p.pid)
                if left:
                    anomaly("containers still there at the end: %s (removed now)" % left)
                    self.remove(left)
                if self.image_id:
                    self.cmd("rmi", "--force", self.image_id, timeout=120)
                for tag in self.local_tags:  # whatever the rmi left
                    self.cmd("rmi", tag, timeout=60)
                if self.image_id and self.cmd("image", "inspect", self.image_id).returncode == 0:
                    print("  the bench image %s could not be removed" % self.image_id)
        except Exception as e:  # noqa: BLE001 - cleanup goes on
            print("  cleanup of %s: %s" % (self.kind, e))
        for proc, what in ((self.registry, "docker-registry"), (self.dockerd, "dockerd")):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                if finish(proc, 30) is None:
                    print("  %s did not stop on SIGTERM within 30 s; killed" % what)


def registry_status():
    try:
        with urllib.request.urlopen("http://%s/v2/" % REGISTRY, timeout=3) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code
    except (urllib.error.URLError, OSError):
        return None


def direct_argv(gateway_argv, session, name):
    """mcpgate's own run argv (from its audit log), with its name and labels
    made the bench's: everything else byte for byte the same."""
    out = list(gateway_argv)
    for i in range(len(out) - 1):
        if out[i] == "--name":
            out[i + 1] = "mcpgate-bench-%d-%s" % (ME, name)
        elif out[i] == "--label" and out[i + 1].startswith("mcpgate."):
            key = out[i + 1].split("=", 1)[0]
            out[i + 1] = {"mcpgate.pid": "%s=%d" % (BENCH_LABEL, ME),
                          "mcpgate.session": "mcpgate-bench.session=%d-%s" % (ME, session),
                          "mcpgate.mcp": "mcpgate-bench.mcp=%s" % name}.get(key, out[i + 1])
    return out


def session_filter(session):
    return "label=mcpgate-bench.session=%d-%s" % (ME, session)


def learn_run_argv(rt):
    """Start one real session and read the argv mcpgate ran, from its audit log."""
    setup = Setup(1, runtime=rt.kind, image=rt.image, fake=False, rt=rt)
    c = setup.start()
    try:
        c.initialize()
        r = c.request("tools/list", timeout=START_TIMEOUT)
        names = [t["name"] for t in r.get("result", {}).get("tools", [])]
        if names != ["s1__echo"]:
            raise RuntimeError("mcpgate on %s offers %s, not s1__echo; its stderr: %s" %
                               (rt.kind, names, open(setup.stderr_path).read()[-600:]))
    finally:
        pid = c.proc.pid
        close_client(c, "mcpgate serve (%s, first session)" % rt.kind)
        session_checks(setup, "first session on %s" % rt.kind, rt, pid)
    starts = [e for e in setup.audit() if e.get("event") == "server.start"]
    if not starts:
        raise RuntimeError("the audit log has no server.start record")
    return starts[0]["argv"], setup


def bench_round_trip_real(rt, gw_argv):
    title = ("2. tools/call round trip (echo) through a real %s container: %d calls each, "
             "microseconds per call" % (rt.kind, N_REAL))
    setup = Setup(1, runtime=rt.kind, image=rt.image, fake=False, rt=rt)
    env = {k: v for k, v in setup.env().items() if k in RUNTIME_ENV}
    argv = direct_argv(gw_argv, "rt", "direct")
    direct = Client(argv, env=env, stderr=subprocess.DEVNULL)
    gw = None
    out = None
    try:
        r = direct.initialize()
        if "result" not in r:
            raise RuntimeError("the direct container did not answer initialize: %s" % r)
        gw = setup.start()
        gw.initialize()
        names = [t["name"] for t in gw.request("tools/list", timeout=START_TIMEOUT)["result"]["tools"]]
        if names != ["s1__echo"]:
            raise RuntimeError("mcpgate offers %s, not s1__echo" % names)
        out = compare_round_trips([("%s run -i, direct" % rt.kind, direct, "echo"),
                                   ("mcpgate serve (%s)" % rt.kind, gw, "s1__echo")], N_REAL)
    finally:
        close_client(direct, "the direct %s run" % rt.kind)
        left = rt.wait_gone(session_filter("rt"))
        if left:
            anomaly("%s run --rm left %s (removed now)" % (rt.kind, left))
            rt.remove(left)
        if gw is not None:
            pid = gw.proc.pid
            close_client(gw, "mcpgate serve (%s, round trip)" % rt.kind)
            session_checks(setup, "round trip on %s" % rt.kind, rt, pid)
    stats = {label: dict(summary(t), errors=len(e)) for label, (t, e, _) in out.items()}
    labels = list(stats)
    d, g = stats[labels[0]], stats[labels[1]]
    rows = round_trip_rows(stats)
    table(title, ["", "median", "p90", "p99", "mean", "calls", "errors"], rows)
    results.setdefault("round_trip_real", {})[rt.kind] = {"runtime": rt.kind, "unit": "us", "calls": N_REAL,
                                  "direct_argv": argv, "direct": d, "gateway": g,
                                  "ratio_median": ratio(g["median"], d["median"]),
                                  "ratio_p90": ratio(g["p90"], d["p90"]),
                                  "ratio_p99": ratio(g["p99"], d["p99"]),
                                  "added_median_us": g["median"] - d["median"]}


def bare_parallel_start(rt, gw_argv, env, n, run):
    """n `RUNTIME run` at once, each fed initialize, then notifications/initialized
    and tools/list once initialize is answered (as mcpgate does); ms until all
    n have answered tools/list."""
    tag = "bare%d-%d" % (n, run)
    procs = []
    init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "mcpgate-bench", "version": "1"}}}) + "\n"
    follow = (json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n" +
              json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}) + "\n")
    t0 = time.perf_counter()
    took = None
    try:
        for i in range(n):
            p = subprocess.Popen(direct_argv(gw_argv, tag, "%s-%d" % (tag, i)), env=env,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL)
            procs.append(p)
            p.stdin.write(init.encode())
            p.stdin.flush()
        bufs = {p.stdout.fileno(): b"" for p in procs}
        byfd = {p.stdout.fileno(): p for p in procs}
        pending = set(bufs)
        deadline = time.monotonic() + START_TIMEOUT
        while pending and time.monotonic() < deadline:
            ready, _, _ = select.select(list(pending), [], [], deadline - time.monotonic())
            for fd in ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    pending.discard(fd)
                    anomaly("bare %s run %s ended before answering tools/list" % (rt.kind, tag))
                    continue
                bufs[fd] += chunk
                while b"\n" in bufs[fd]:
                    line, bufs[fd] = bufs[fd].split(b"\n", 1)
                    msg = json.loads(line)
                    if msg.get("id") == 1:
                        byfd[fd].stdin.write(follow.encode())
                        byfd[fd].stdin.flush()
                    elif msg.get("id") == 2:
                        pending.discard(fd)
        if pending:
            anomaly("bare %s run %s: %d of %d never answered tools/list" % (rt.kind, tag,
                                                                         len(pending), n))
        else:
            took = (time.perf_counter() - t0) * 1000.0
    finally:
        for p in procs:
            try:
                p.stdin.close()
            except OSError:
                pass
        for p in procs:
            finish(p, 30)
            p.stdout.close()
        left = rt.wait_gone(session_filter(tag)) if procs else []
        if left:
            anomaly("bare %s run --rm left %s (removed now)" % (rt.kind, left))
            rt.remove(left)
    return took


def bench_session_start_real(rt, gw_argv):
    title = ("3b. session start through real %s containers: spawn to the answer of the first "
             "tools/list, %d runs each, ms" % (rt.kind, STARTS_REAL))
    setups = {1: Setup(1, runtime=rt.kind, image=rt.image, fake=False, rt=rt),
              8: Setup(8, runtime=rt.kind, image=rt.image, fake=False, rt=rt)}
    env = {k: v for k, v in setups[1].env().items() if k in RUNTIME_ENV}
    gw = {1: [], 8: []}
    ends = {1: [], 8: []}
    bare = {1: [], 8: []}
    for run in range(STARTS_REAL):
        for n in ((1, 8) if run % 2 == 0 else (8, 1)):
            what = "session start on %s, %d servers, run %d" % (rt.kind, n, run + 1)
            try:
                ms, end, ok, pid = timed_session_start(setups[n], n)
            except Exception as e:  # noqa: BLE001 - one bad run is reported, the rest go on
                anomaly("%s: %s: %s" % (what, type(e).__name__, e))
                session_checks(setups[n], what, rt, gateways[-1].pid)
                continue
            session_checks(setups[n], what, rt, pid)
            if ok:
                gw[n].append(ms)
                ends[n].append(end)
            b = bare_parallel_start(rt, gw_argv, env, n, run)
            if b is not None:
                bare[n].append(b)
    s = {k: summary(v) for k, v in gw.items()}
    e = {k: summary(v) for k, v in ends.items()}
    b = {k: summary(v) for k, v in bare.items()}
    r = {k: ready_ms(v) for k, v in setups.items()}
    w = {k: sweep_ms(v) for k, v in setups.items()}
    f = {k: first_run_ms(v) for k, v in setups.items()}
    o = {k: own_start_ms(v) for k, v in setups.items()}
    ph = {k: phases_ms(v) for k, v in setups.items()}

    def gw_row(label, k):
        return [label, s[k].get("median"), s[k].get("min"), s[k].get("max"), o[k].get("median"),
                f[k].get("median"), r[k].get("median"), w[k].get("median"), e[k].get("median"),
                s[k]["n"]]

    def bare_row(label, k):
        return [label, b[k].get("median"), b[k].get("min"), b[k].get("max"), "", "", "", "", "",
                b[k]["n"]]

    def ratio_row(label, x, y, ready=""):
        return [label, rx(x.get("median"), y.get("median")), "", "", "", "", ready, "", "", ""]
    rows = [gw_row("mcpgate serve, 1 server", 1), bare_row("bare %s run, 1" % rt.kind, 1),
            gw_row("mcpgate serve, 8 servers", 8),
            bare_row("8 bare %s run at once" % rt.kind, 8),
            ratio_row("mcpgate 8 / bare 8", s[8], b[8]),
            ratio_row("mcpgate 1 / bare 1", s[1], b[1]),
            ratio_row("mcpgate 8 / mcpgate 1", s[8], s[1],
                      rx(r[8].get("median"), r[1].get("median"))),
            ratio_row("bare 8 / bare 1", b[8], b[1])]
    table(title, ["", "median", "min", "max", "own start", "1st run", "one server", "sweep",
                  "end", "runs"], rows)
    print("  (bare: initialize, then tools/list, to each container, as mcpgate does, until all\n"
          "   have answered. own start: the spawn of mcpgate to its session.start record; 1st\n"
          "   run, one server, sweep and end as in 3a; the sweep runs once the starts are over)")
    print("  aims (issue 25): mcpgate 1 / bare 1 at most 1.25x: %s; mcpgate 8 / bare 8 at most "
          "1.15x: %s" % (rx(s[1].get("median"), b[1].get("median")),
                         rx(s[8].get("median"), b[8].get("median"))))
    prow = []
    for k in PHASES:
        if k in ph[1][0] or k in ph[8][0]:
            prow.append([k[:-3].replace("_", " "), ph[1][0].get(k, {}).get("median"),
                         ph[1][0].get(k, {}).get("max"), ph[8][0].get(k, {}).get("median"),
                         ph[8][0].get(k, {}).get("max")])
    table("3b. where a server's start went on %s (server.ready's phases, ms, over every "
          "server of every run)" % rt.kind,
          ["phase", "1 server: median", "max", "8 servers: median", "max"], prow)
    print("  platform: %s (1 server), %s (8 servers): kept from an earlier session, or asked of "
          "the runtime" % (ph[1][1], ph[8][1]))
    results.setdefault("session_start_real", {})[rt.kind] = {
        "own_start_1": o[1], "own_start_8": o[8],
        "phases_1": ph[1][0], "phases_8": ph[8][0],
        "platform_1": ph[1][1], "platform_8": ph[8][1],
        "runtime": rt.kind, "unit": "ms", "runs": STARTS_REAL,
        "gateway_1": s[1], "gateway_8": s[8], "bare_1": b[1], "bare_8": b[8],
        "server_ready_1": r[1], "server_ready_8": r[8], "sweep_1": w[1], "sweep_8": w[8],
        "first_run_1": f[1], "first_run_8": f[8],
        "end_1": e[1], "end_8": e[8],
        "ratio_gateway8_bare8": ratio(s[8].get("median"), b[8].get("median")),
        "ratio_gateway1_bare1": ratio(s[1].get("median"), b[1].get("median")),
        "ratio_gateway8_gateway1": ratio(s[8].get("median"), s[1].get("median")),
        "ratio_bare8_bare1": ratio(b[8].get("median"), b[1].get("median"))}


def prepare_runtime(kind):
    """A Runtime ready for parts 2 and 3b, with mcpgate's own run argv; or
    (None, None, why)"""
    rt = Runtime(kind)
    print()
    print("== preparing %s: probe image, local registry, pull by digest" % kind)
    why = rt.prepare()
    results["versions"].update(rt.versions)
    for k, v in rt.versions.items():
        print("  %s: %s" % (k, v))
    gw_argv = None
    if why is None:
        try:
            rt.build_image()
            print("  image %s" % rt.image)
            gw_argv, _ = learn_run_argv(rt)
            print("  mcpgate runs: %s" % " ".join(gw_argv))
        except Exception as e:  # noqa: BLE001
            why = "preparing %s failed: %s: %s" % (kind, type(e).__name__, e)
    if why is not None:
        anomaly("setup: " + why)
    return rt, gw_argv, why


def run_all():
    """1, 3a, then 2 and 3b for each real runtime asked for (podman, docker,
    or both), one after the other"""
    why = None
    if not RUNTIMES:
        why = "set MCPGATE_BENCH_RUNTIME=podman, docker or podman,docker"
    elif any(k not in ("podman", "docker") for k in RUNTIMES):
        why = ("MCPGATE_BENCH_RUNTIME=%s names something that is neither podman nor docker; "
               "set it to podman, docker or podman,docker" % RUNTIME)
        anomaly("setup: " + why)
    elif not (wanted("2") or wanted("3b")):
        why = "--only leaves out the parts on a real runtime"
    if why is not None:
        results["round_trip_real"] = results["session_start_real"] = {"skipped": why}
    try:
        if wanted("1"):
            measure(bench_round_trip_fake)
        if wanted("3a"):
            measure(bench_session_start_fake)
        for kind in (RUNTIMES if why is None else []):
            rt = None
            try:
                rt, gw_argv, rwhy = prepare_runtime(kind)
                if rwhy is not None:
                    results.setdefault("round_trip_real", {})[kind] = {"skipped": rwhy}
                    results.setdefault("session_start_real", {})[kind] = {"skipped": rwhy}
                if wanted("2") and rwhy is None:
                    measure(bench_round_trip_real, rt, gw_argv)
                elif wanted("2"):
                    skipped("2. tools/call round trip through a real %s container" % kind, rwhy)
                if wanted("3b") and rwhy is None:
                    measure(bench_session_start_real, rt, gw_argv)
                elif wanted("3b"):
                    skipped("3b. session start through real %s containers" % kind, rwhy)
            finally:
                end_gateways()
                if rt is not None:
                    rt.cleanup()
        if why is not None:
            if wanted("2"):
                skipped("2. tools/call round trip through a real container", why)
            if wanted("3b"):
                skipped("3b. session start through real containers", why)
    finally:
        end_gateways()


def end_gateways():
    """Any mcpgate still running (after an interruption): close its input so it
    stops its servers itself, and kill it only if it does not end."""
    for p in gateways:
        if p.poll() is None:
            anomaly("mcpgate serve pid %d still running at the end" % p.pid)
            try:
                p.stdin.close()
            except OSError:
                pass
            if finish(p, 20) is None:
                anomaly("mcpgate serve pid %d did not end within 20 s of its input closing "
                        "(killed)" % p.pid)


# ---- the run ---------------------------------------------------------------

def header():
    now = datetime.datetime.now().astimezone()
    cpu = ""
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), "")
    except OSError:
        pass
    commit = first_line(["git", "-C", TOP, "rev-parse", "--short", "HEAD"]) or "?"
    try:
        if sh(["git", "-C", TOP, "status", "--porcelain", "--untracked-files=no"], timeout=20).stdout.strip():
            commit += " (+ uncommitted changes)"
    except (OSError, subprocess.TimeoutExpired):
        pass
    versions = {
        "mcpgate": first_line([MCPGATE, "--version"]),
        "fake-runtime": first_line([os.path.join(FAKES, "fake-runtime"), "--version"]),
        "python": platform.python_version(),
        "socat": socat_version(),
    }
    for tool in ("podman", "docker"):
        if shutil.which(tool):
            versions.setdefault(tool + " (installed)", first_line([tool, "--version"]))
    machine = {"nproc": os.cpu_count(), "kernel": platform.release(), "cpu": cpu,
               "loadavg": [round(x, 2) for x in os.getloadavg()]}
    results.update({"date": now.isoformat(timespec="seconds"), "commit": commit,
                    "machine": machine, "versions": versions, "quick": QUICK,
                    "runtime": RUNTIME or None})
    print("mcpgate contained-server benchmarks%s" % (" (--quick: counts / 10)" if QUICK else ""))
    print("  date     %s" % results["date"])
    print("  machine  nproc %s, kernel %s, %s; load average %s" %
          (machine["nproc"], machine["kernel"], cpu or "?", " ".join("%.2f" % x for x in machine["loadavg"])))
    print("  tree     %s, binary %s (sha256 %s)" % (commit, results["binary"]["path"],
                                                      results["binary"]["sha256"][:12]))
    print("  versions " + "; ".join("%s %s" % (k, v) for k, v in versions.items() if v))
    print("  real runtime: %s" % (RUNTIME or "none (fake runtime only)"))
    print("  figures: medians of one run; no figure is a pass/fail threshold")
    sys.stdout.flush()
    return now


def ratios_block():
    print()
    print("== ratios")
    lines = []

    def add(build):
        """One line; a measurement that gave no figure gives no line."""
        try:
            lines.extend(build())
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            pass

    def med(d, key):
        return d[key]["median"]

    def clean(d):
        if d.get("gateway", {}).get("errors") or d.get("direct", {}).get("errors"):
            raise ValueError("wrong answers")
        return d

    rf = results.get("round_trip_fake", {})
    add(lambda: clean(rf) and ["round trip, fake runtime: mcpgate / direct %s median (p90 %s, p99 %s); "
                 "mcpgate adds %.0f us per call (median)" %
                 (rx(med(rf, "gateway"), med(rf, "direct")),
                  rx(rf["gateway"]["p90"], rf["direct"]["p90"]),
                  rx(rf["gateway"]["p99"], rf["direct"]["p99"]), rf["added_median_us"]),
                 "  beside the minimal relay: mcpgate %+.1f us mean, %+.1f us p50, CPU per call "
                 "%s (socat %+.1f us mean, CPU %s)" %
                 (rf["gateway_minus_minimal_mean_us"], rf["gateway_minus_minimal_median_us"],
                  rx(rf["gateway"]["cpu_us"], rf["minimal_relay"]["cpu_us"]),
                  rf["socat_relay"]["mean"] - rf["minimal_relay"]["mean"],
                  rx(rf["socat_relay"]["cpu_us"], rf["minimal_relay"]["cpu_us"]))])
    for kind, rr in sorted(results.get("round_trip_real", {}).items()):
        if not isinstance(rr, dict) or "skipped" in rr:
            continue
        add(lambda rr=rr: clean(rr) and [
            "round trip, %s container: mcpgate / direct %s median (p90 %s, p99 %s); "
            "mcpgate adds %.0f us per call (median)" %
            (rr["runtime"], rx(med(rr, "gateway"), med(rr, "direct")),
             rx(rr["gateway"]["p90"], rr["direct"]["p90"]),
             rx(rr["gateway"]["p99"], rr["direct"]["p99"]), rr["added_median_us"])])
    sf = results.get("session_start_fake", {})
    cores = os.cpu_count() or 1
    add(lambda: ["session start, fake runtime: 8 servers / 1 server %s "
                 "(about 1 is a parallel start, 8 a serial one)" % rx(med(sf, "8"), med(sf, "1")),
                 "  one server after the other would take about %.1f ms (%s); the 8-server "
                 "session's CPU time alone, spread over %d cores, is %.1f ms (%s)" %
                 (med(sf, "1") + 7 * med(sf, "server_ready_1"),
                  rx(med(sf, "1") + 7 * med(sf, "server_ready_1"), med(sf, "1")), cores,
                  med(sf, "cpu_8") / cores, rx(med(sf, "cpu_8") / cores, med(sf, "1")))])
    add(lambda: ["session start, fake runtime, each server answering initialize after %d ms: "
                 "8 / 1 %s (serial would be about %s)" %
                 (sf["initialize_delay_ms"], rx(med(sf, "8_delayed"), med(sf, "1_delayed")),
                  rx(med(sf, "1_delayed") + 7 * med(sf, "server_ready_1_delayed"),
                     med(sf, "1_delayed")))])
    for kind, sr in sorted(results.get("session_start_real", {}).items()):
        if not isinstance(sr, dict) or "skipped" in sr:
            continue
        add(lambda sr=sr: ["session start, %s: mcpgate 8 / bare 8 %s; mcpgate 1 / bare 1 %s; "
                           "mcpgate 8 / 1 %s; bare 8 / 1 %s" %
                           (sr["runtime"], rx(med(sr, "gateway_8"), med(sr, "bare_8")),
                            rx(med(sr, "gateway_1"), med(sr, "bare_1")),
                            rx(med(sr, "gateway_8"), med(sr, "gateway_1")),
                            rx(med(sr, "bare_8"), med(sr, "bare_1")))])
    for key in ("round_trip_real", "session_start_real"):
        v = results.get(key, {})
        if "skipped" in v:
            lines.append("%s: skipped (%s)" % (key, v["skipped"]))
        for kind, x in sorted(v.items()):
            if isinstance(x, dict) and "skipped" in x:
                lines.append("%s, %s: skipped (%s)" % (key, kind, x["skipped"]))
    for line in lines:
        print("  " + line)
    results["ratios"] = lines
    aims_block()


# issue 25's aims: (label, figure, aim)
AIMS = (("session to first tools/list, 1 server / 1 bare run", "start_1", 1.25),
        ("session to first tools/list, 8 servers / 8 bare runs at once", "start_8", 1.15),
        ("tools/call through the container / run -i direct (median)", "call", 1.10))


def aim_figures(kind):
    """The three ratios of issue 25 for one runtime (None where not measured)"""
    sr = results.get("session_start_real", {}).get(kind, {})
    rr = results.get("round_trip_real", {}).get(kind, {})

    def q(d, a, b):
        try:
            return ratio(d[a]["median"], d[b]["median"])
        except (KeyError, TypeError):
            return None
    call = None if rr.get("gateway", {}).get("errors") or rr.get("direct", {}).get("errors") \
        else q(rr, "gateway", "direct")
    return {"start_1": q(sr, "gateway_1", "bare_1"), "start_8": q(sr, "gateway_8", "bare_8"),
            "call": call}


def aims_block():
    kinds = [k for k in RUNTIMES if k in ("podman", "docker")]
    if not kinds:
        return
    figs = {k: aim_figures(k) for k in kinds}
    rows = []
    for label, key, aim in AIMS:
        row = [label]
        for k in kinds:
            v = figs[k][key]
            row.append("-" if v is None or (isinstance(v, float) and math.isnan(v)) else
                       "%.2fx %s" % (v, "met" if v <= aim else "missed"))
        row.append("%.2fx" % aim)
        rows.append(row)
    table("aims (issue 25), each a ratio of medians measured side by side in this run",
          [""] + kinds + ["aim"], rows)
    results["aims"] = {k: figs[k] for k in kinds}


def write_json(now):
    d = os.path.join(HERE, "results")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "contained-%s%s.json" % (now.strftime("%Y-%m-%d-%H%M%S"),
                                                   "-" + "+".join(RUNTIMES) if RUNTIMES else ""))

    def clean(x):  # NaN is not JSON
        if isinstance(x, float):
            return None if math.isnan(x) else round(x, 3)
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, list):
            return [clean(v) for v in x]
        return x
    with open(path, "w") as f:
        json.dump(clean(results), f, indent=2, sort_keys=True)
        f.write("\n")
    return path


def snapshot_binaries():
    """Run copies of mcpgate and the fakes, taken once: a rebuild in the tree
    while the bench runs (other people work in it) cannot change them midway.
    The copy keeps the name mcpgate: the sweep judges an owner by it."""
    global MCPGATE, FAKES, MINRELAY
    d = tempdir("mcpgate-bench-bin-")
    os.makedirs(os.path.join(d, "fakes"))
    shutil.copy2(MCPGATE, os.path.join(d, "mcpgate"))
    for name in ("fake-runtime", "mcpgate-probe"):
        shutil.copy2(os.path.join(FAKES, name), os.path.join(d, "fakes", name))
    with open(os.path.join(d, "mcpgate"), "rb") as fh:
        digest = hashlib.sha256(fh.read()).hexdigest()
    shutil.copy2(MINRELAY, os.path.join(d, "minrelay"))
    origin = MCPGATE
    MCPGATE, FAKES = os.path.join(d, "mcpgate"), os.path.join(d, "fakes")
    MINRELAY = os.path.join(d, "minrelay")
    return origin, digest


def main():
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)
    for path in (MCPGATE, os.path.join(FAKES, "fake-runtime"), os.path.join(FAKES, "mcpgate-probe"),
                 MINRELAY):
        if not os.access(path, os.X_OK):
            print("bench: %s is missing; run make, make fakes and make build/bench/minrelay "
                  "(make bench does all three)" % path)
            return 2
    if SOCAT is None:
        # part 1 compares mcpgate with socat: without it there is no such comparison
        print("bench: socat is not installed; install it with: apt-get install -y socat")
        return 2
    origin, digest = snapshot_binaries()
    results["binary"] = {"path": origin, "sha256": digest}
    now = header()
    try:
        run_all()
    except KeyboardInterrupt as e:
        anomaly("interrupted (%s)" % (e or "SIGINT"))
    finally:
        end_gateways()
        for d in temp_dirs:
            shutil.rmtree(d, ignore_errors=True)
    ratios_block()
    results["anomalies"] = anomalies
    status = report_anomalies("every answer was right, every session ended with status 0, "
                              "no container was left")
    path = write_json(now)
    print()
    print("results: %s" % os.path.relpath(path, TOP))
    return status


if __name__ == "__main__":
    sys.exit(main())
