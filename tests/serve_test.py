#!/usr/bin/env python3
"""mcpgate serve against the fake runtime: no podman, docker, image or network.

Each case makes its own folder with a copy of fake-runtime named podman, the
probe beside it, a config and a state folder, then drives `mcpgate serve` as
an MCP client would. Environment: MCPGATE (the binary), FAKES (the folder
holding fake-runtime and mcpgate-probe).
"""
import glob
import json
import os
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from mcpclient import Client, Tap, text_of  # noqa: E402

MCPGATE = os.path.abspath(os.environ.get("MCPGATE", "./mcpgate"))
FAKES = os.path.abspath(os.environ.get("FAKES", "build/fakes"))
DIGEST = "sha256:" + "ab" * 32
IMAGE = "localhost:5000/probe@" + DIGEST

t = Tap()


class Fixture:
    def __init__(self, servers, config="", images=(IMAGE,)):
        self.dir = tempfile.mkdtemp(prefix="mcpgate-serve-test-")
        self.rt = os.path.join(self.dir, "rt")
        self.conf = os.path.join(self.dir, "conf")
        self.state = os.path.join(self.dir, "state")
        self.ws = os.path.join(self.dir, "ws")
        for d in (self.rt, self.conf, self.state, self.ws):
            os.makedirs(d)
        shutil.copy(os.path.join(FAKES, "fake-runtime"), os.path.join(self.rt, "podman"))
        shutil.copy(os.path.join(FAKES, "mcpgate-probe"), os.path.join(self.rt, "mcpgate-probe"))
        with open(os.path.join(self.rt, "images"), "w") as f:
            f.write("".join(i + "\n" for i in images))
        with open(os.path.join(self.conf, "mcp.toml"), "w") as f:
            f.write(servers)
        with open(os.path.join(self.conf, "config.toml"), "w") as f:
            f.write('[mcp]\nruntime = "podman"\n' + config)

    def env(self, extra=None):
        e = {
            "PATH": self.rt + ":/usr/bin:/bin",
            "HOME": self.dir,
            "XDG_STATE_HOME": self.state,
            "XDG_CONFIG_HOME": os.path.join(self.dir, "nowhere"),
            "MCPGATE_LOG": "debug",
            "MCPGATE_TEST_NOT_FOR_SERVERS": "leak-canary",
        }
        if extra:
            e.update(extra)
        return e

    def start(self, extra_env=None):
        self.stderr = open(os.path.join(self.dir, "stderr.log"), "wb")
        return Client([MCPGATE, "serve", "--config", self.conf, "--workspace", self.ws],
                      env=self.env(extra_env), stderr=self.stderr)

    def audit(self):
        files = glob.glob(os.path.join(self.state, "mcpgate", "sessions", "*.jsonl"))
        out = []
        for f in files:
            with open(f) as fh:
                out += [json.loads(line) for line in fh]
        return out

    def runtime_log(self):
        path = os.path.join(self.rt, "runtime-log.jsonl")
        if not os.path.exists(path):
            return []
        with open(path) as fh:
            return [json.loads(line) for line in fh]

    def containers(self):
        d = os.path.join(self.rt, "containers")
        return sorted(os.listdir(d)) if os.path.isdir(d) else []

    def stderr_text(self):
        self.stderr.flush()
        with open(os.path.join(self.dir, "stderr.log"), errors="replace") as fh:
            return fh.read()

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def server(name, tools_on=("echo",), args=None, image=IMAGE, extra=""):
    s = '[[server]]\nname = "%s"\ntransport = "container"\nimage = "%s"\n' % (name, image)
    if args:
        s += "args = [%s]\n" % ", ".join(json.dumps(a) for a in args)
    s += extra
    for tool in tools_on:
        s += "[server.tools.%s]\non = true\n" % tool
    return s


def tool_names(listing):
    return [tool["name"] for tool in listing["result"]["tools"]]


def events(audit, name):
    return [r for r in audit if r["event"] == name]


def pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def test_basic_session():
    f = Fixture(server("alpha", ("echo", "env")) + server("beta", ("echo",)))
    c = f.start()
    init = c.initialize()
    t.ok(init["result"]["protocolVersion"] == "2025-11-25", "initialize answers 2025-11-25",
         init)
    t.ok(init["result"]["capabilities"].get("tools") == {"listChanged": True},
         "the gateway offers tools with listChanged")
    listing = c.request("tools/list")
    names = tool_names(listing)
    t.ok(names == ["alpha__echo", "alpha__env", "beta__echo"],
         "tools that are on, prefixed, in mcp.toml order", names)
    r = c.call("alpha__echo", {"text": "hello through the gateway"})
    t.ok(text_of(r) == "hello through the gateway", "a call reaches its server and returns", r)
    r = c.call("beta__echo", {"text": "second"})
    t.ok(text_of(r) == "second", "two servers with the same tool: each by its prefix", r)
    r = c.call("alpha__env", {"name": "MCPGATE_TEST_NOT_FOR_SERVERS"})
    t.ok(r["result"].get("isError") is True and text_of(r) == "unset",
         "mcpgate's own environment does not reach a server", r)
    r = c.call("alpha__status")
    t.ok(r.get("error", {}).get("code") == -32602 and "unknown tool" in r["error"]["message"],
         "a tool that is off is an unknown tool", r)
    r = c.call("nosuch__tool")
    t.ok(r.get("error", {}).get("code") == -32602, "an unknown tool gets -32602", r)
    r = c.request("resources/list")
    t.ok(r.get("error", {}).get("code") == -32601, "a method mcpgate does not offer gets -32601")
    r = c.request("ping")
    t.ok(r.get("result") == {}, "ping answers {}")
    status = c.close()
    t.ok(status == 0, "end of input ends the session with status 0", status)
    audit = f.audit()
    kinds = [r["event"] for r in audit]
    for e in ("session.start", "server.start", "server.ready", "tool.call", "server.exit",
              "session.end"):
        t.ok(e in kinds, "the audit log has %s" % e, kinds)
    starts = events(audit, "server.start")
    t.ok(len(starts) == 2 and starts[0]["argv"][1] == "run" and "--read-only" in starts[0]["argv"],
         "server.start records the argv", starts[:1])
    calls = events(audit, "tool.call")
    t.ok(len(calls) == 5 and all("arguments" not in c for c in calls),
         "each call is recorded, without its arguments", calls)
    t.ok([c["outcome"] for c in calls] == ["ok", "ok", "tool-error", "refused", "refused"],
         "with its outcome", [c["outcome"] for c in calls])
    log = f.runtime_log()
    runs = [r for r in log if r["argv"][1:2] == ["run"]]
    allowed = {"PATH", "HOME", "XDG_RUNTIME_DIR", "TMPDIR", "CONTAINER_HOST", "CONTAINER_CONNECTION",
               "CONTAINER_SSHKEY", "CONTAINERS_CONF", "CONTAINERS_REGISTRIES_CONF",
               "CONTAINERS_STORAGE_CONF", "REGISTRY_AUTH_FILE"}
    t.ok(runs and all(set(r["env"]) <= allowed for r in log),
         "every runtime process gets only the fixed short environment",
         [sorted(set(r["env"]) - allowed) for r in log])
    t.ok(all("leak-canary" not in json.dumps(r) for r in log),
         "mcpgate's other variables never reach the runtime")
    t.ok(f.containers() == [], "no container is left after the session", f.containers())
    f.cleanup()


def test_parallel_start():
    barrier = tempfile.mkdtemp(prefix="mcpgate-barrier-")
    servers = "".join(server(n, args=["--barrier", barrier + ":3"]) for n in ("a", "b", "c"))
    f = Fixture(servers, config="start_timeout = 20\n")
    c = f.start()
    c.initialize()
    t0 = time.monotonic()
    names = tool_names(c.request("tools/list", timeout=40))
    t.ok(names == ["a__echo", "b__echo", "c__echo"],
         "three servers whose answers each wait for the others all connect", names)
    t.ok(time.monotonic() - t0 < 15, "and well before the start deadline")
    c.close()
    t.ok(len(events(f.audit(), "server.ready")) == 3, "all three are recorded ready")
    shutil.rmtree(barrier, ignore_errors=True)
    f.cleanup()

    # the same barrier with one server missing: nobody gets past it, so each
    # server fails on its deadline; this is what a one-at-a-time start would do
    barrier = tempfile.mkdtemp(prefix="mcpgate-barrier-")
    servers = "".join(server(n, args=["--barrier", barrier + ":3", "--barrier-timeout", "60000"])
                      for n in ("a", "b"))
    f = Fixture(servers, config="start_timeout = 2\n")
    c = f.start()
    c.initialize()
    names = tool_names(c.request("tools/list", timeout=30))
    t.ok(names == [], "servers that never answer are not offered", names)
    c.close()
    unavailable = events(f.audit(), "server.unavailable")
    t.ok(len(unavailable) == 2 and all("timed out" in u["reason"] for u in unavailable),
         "each is unavailable because initialize timed out", unavailable)
    t.ok(f.containers() == [], "and their containers were removed", f.containers())
    shutil.rmtree(barrier, ignore_errors=True)
    f.cleanup()


def test_registration_order():
    servers = (server("slow", args=["--initialize-delay", "700"]) +
               server("fast") + server("middle", args=["--initialize-delay", "300"]))
    f = Fixture(servers)
    c = f.start()
    c.initialize()
    names = tool_names(c.request("tools/list"))
    t.ok(names == ["slow__echo", "fast__echo", "middle__echo"],
         "registration follows mcp.toml, not the order the answers came in", names)
    ready = [r["server"] for r in events(f.audit(), "server.ready")]
    t.ok(ready[0] == "fast", "(the fast one was ready first)", ready)
    c.close()
    f.cleanup()


def test_crash():
    f = Fixture(server("probe", ("echo", "crash")) +
                server("flaky", ("echo",), args=["--crash-after", "1"]))
    c = f.start()
    c.initialize()
    c.request("tools/list")
    r = c.call("flaky__echo", {"text": "one"})
    t.ok(text_of(r) == "one", "the first call works")
    r = c.call("flaky__echo", {"text": "two"})
    t.ok(r.get("result", {}).get("content") is not None or "error" in r, "a second call")
    r = c.call("flaky__echo", {"text": "three"})
    msg = r.get("error", {}).get("message", "")
    t.ok("flaky" in msg and "exited with status 1" in msg,
         "a server that died makes its calls fail naming it and its exit status", r)
    r = c.call("probe__crash", {"code": 7})
    msg = r.get("error", {}).get("message", "")
    t.ok("server probe exited with status 7" in msg,
         "the call during which a server dies fails with its exit status", r)
    c.close()
    exits = {e["server"]: e for e in events(f.audit(), "server.exit")}
    t.ok(exits.get("probe", {}).get("status") == 7, "server.exit records the status", exits)
    f.cleanup()


def test_huge_and_garbage():
    f = Fixture(server("probe", ("echo", "huge", "garbage", "stderr")), config="line_max = 4096\n")
    c = f.start()
    c.initialize()
    c.request("tools/list")
    r = c.call("probe__huge", {"bytes": 100000})
    msg = r.get("error", {}).get("message", "")
    t.ok("line of more than" in msg and "4096" in msg,
         "a line over line_max fails the call with the limit named", r)
    r = c.call("probe__echo", {"text": "still here"})
    t.ok(text_of(r) == "still here", "the server keeps working after an overlong line", r)
    r = c.call("probe__garbage")
    t.ok("result" in r, "a garbage line does not stop the answer that follows it", r)
    r = c.call("probe__stderr", {"text": "secret-looking log line"})
    t.ok("result" in r and "secret-looking" not in json.dumps(r),
         "a server's stderr never reaches the client")
    c.close()
    errors = events(f.audit(), "server.protocol_error")
    t.ok(len(errors) >= 2, "overlong and garbage lines are recorded", errors)
    exits = events(f.audit(), "server.exit")
    t.ok(exits and "secret-looking log line" in exits[0]["stderr"],
         "its stderr is kept in the audit log", exits)
    f.cleanup()


def test_missing_image():
    other = "localhost:5000/other@sha256:" + "cd" * 32
    f = Fixture(server("gone", image=other) + server("here"))
    c = f.start()
    c.initialize()
    names = tool_names(c.request("tools/list"))
    t.ok(names == ["here__echo"], "a server without its image is left out, the rest works", names)
    notes = [n for n in c.notifications if n["method"] == "notifications/message"]
    text = " ".join(n["params"]["data"] for n in notes)
    t.ok("mcpgate pull gone" in text, "the client is told the command that fixes it", notes)
    t.ok(all(n["params"]["level"] == "warning" for n in notes), "as a warning")
    c.close()
    un = events(f.audit(), "server.unavailable")
    t.ok(len(un) == 1 and un[0]["server"] == "gone" and "mcpgate pull gone" in un[0]["reason"],
         "server.unavailable gives the reason", un)
    runs = [r for r in f.runtime_log() if r["argv"][1:2] == ["run"]]
    t.ok(len(runs) == 1, "nothing is run for it, and nothing is pulled",
         [r["argv"][:2] for r in f.runtime_log()])
    t.ok(not any(r["argv"][1:2] == ["pull"] for r in f.runtime_log()), "a session never pulls")
    f.cleanup()


def test_all_tools_off():
    f = Fixture(server("quiet", tools_on=()) + server("busy"))
    c = f.start()
    c.initialize()
    names = tool_names(c.request("tools/list"))
    t.ok(names == ["busy__echo"], "a server with every tool off offers nothing", names)
    c.close()
    stopped = events(f.audit(), "server.stopped")
    t.ok(len(stopped) == 1 and "none of its tools is on" in stopped[0]["reason"],
         "and is stopped as soon as its list is read", stopped)
    f.cleanup()


def test_shutdown_ignores_eof():
    f = Fixture(server("stubborn", args=["--ignore-eof"]), config="stop_timeout = 1\n")
    c = f.start()
    c.initialize()
    c.request("tools/list")
    pids = [json.load(open(os.path.join(f.rt, "containers", n)))["pid"] for n in f.containers()]
    t0 = time.monotonic()
    status = c.close(timeout=20)
    took = time.monotonic() - t0
    t.ok(status == 0 and took < 10, "a server that ignores end of input still ends (%.1f s)" % took)
    rms = [r["argv"] for r in f.runtime_log() if r["argv"][1:2] == ["rm"]]
    t.ok(any("--force" in a for a in rms), "by rm --force after the stop deadline", rms)
    t.ok(pids and not any(pid_alive(p) for p in pids), "no process is left behind", pids)
    t.ok(f.containers() == [], "no container is left behind", f.containers())
    exits = events(f.audit(), "server.exit")
    t.ok(exits and exits[0]["forced"] is True, "server.exit says it was forced", exits)
    f.cleanup()


def test_signal():
    f = Fixture(server("probe"))
    c = f.start()
    c.initialize()
    c.request("tools/list")
    c.proc.send_signal(signal.SIGTERM)
    status = c.proc.wait(20)
    t.ok(status == 0, "SIGTERM ends the session in order", status)
    ends = events(f.audit(), "session.end")
    t.ok(ends and "Terminated" in ends[0]["reason"], "session.end names the signal", ends)
    t.ok(f.containers() == [], "nothing is left", f.containers())
    f.cleanup()


def test_sweep():
    f = Fixture(server("probe"))
    cdir = os.path.join(f.rt, "containers")
    os.makedirs(cdir)
    dead = {"name": "mcpgate-old-dead", "labels": {"mcpgate.pid": "2147483000",
                                                   "mcpgate.session": "old", "mcpgate.mcp": "x"},
            "pid": 0, "image": IMAGE, "networks": []}
    foreign = {"name": "someone-else", "labels": {"app": "db"}, "pid": 0, "image": IMAGE,
               "networks": []}
    for rec in (dead, foreign):
        with open(os.path.join(cdir, rec["name"]), "w") as fh:
            json.dump(rec, fh)
    c = f.start()
    c.initialize()
    c.request("tools/list")
    left = f.containers()
    t.ok("mcpgate-old-dead" not in left, "a container of a dead mcpgate is swept", left)
    t.ok("someone-else" in left, "a container without the label is left alone", left)
    mine = [n for n in left if n.startswith("mcpgate-probe-")]
    t.ok(len(mine) == 1, "the live session's own container is not swept", left)
    c.close()
    sweeps = events(f.audit(), "sweep")
    t.ok(sweeps and sweeps[0]["removed"] == 1, "the sweep is recorded with its count", sweeps)
    f.cleanup()


def test_bad_client_lines():
    f = Fixture(server("probe"))
    c = f.start()
    c.send_raw = lambda b: (c.proc.stdin.write(b), c.proc.stdin.flush())
    c.send_raw(b"this is not json\n")
    r = c.read_message()
    t.ok(r.get("error", {}).get("code") == -32700 and r.get("id") is None,
         "a line that is not JSON gets a parse error", r)
    c.send_raw(b'{"jsonrpc":"2.0","id":7,"method":"tools/list"}\n')
    r = c.read_message()
    t.ok(r.get("id") == 7 and "error" in r, "tools/list before initialize is refused", r)
    c.initialize()
    r = c.request("tools/list", {"cursor": "bogus"})
    t.ok(r.get("error", {}).get("code") == -32602, "an unknown cursor is refused", r)
    status = c.close()
    t.ok(status == 0, "the session ends normally after bad lines", status)
    f.cleanup()


for case in (test_basic_session, test_parallel_start, test_registration_order, test_crash,
             test_huge_and_garbage, test_missing_image, test_all_tools_off,
             test_shutdown_ignores_eof, test_signal, test_sweep, test_bad_client_lines):
    try:
        case()
    except Exception as e:  # a case that blows up is a failure, not a crash of the runner
        t.ok(False, "%s raised %s: %s" % (case.__name__, type(e).__name__, e))
sys.exit(t.done())
