"""A gateway session on the fake runtime, for tests of `mcpgate serve`.

Each Fixture makes its own folder with a copy of fake-runtime named podman,
the probe beside it, a config and a state folder; start() runs `mcpgate serve`
as an MCP client would. Environment: MCPGATE (the binary), FAKES (the folder
holding fake-runtime and mcpgate-probe).
"""
import glob
import json
import os
import re
import select
import shutil
import subprocess
import tempfile
import time

from mcpclient import Client

MCPGATE = os.path.abspath(os.environ.get("MCPGATE", "./mcpgate"))
FAKES = os.path.abspath(os.environ.get("FAKES", "build/fakes"))
DIGEST = "sha256:" + "ab" * 32
IMAGE = "localhost:5000/probe@" + DIGEST
SECCOMP_BASE = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                            "testdata", "seccomp", "base.json"))


class Fixture:
    def __init__(self, servers, config="", images=(IMAGE,), runtime="podman"):
        self.dir = tempfile.mkdtemp(prefix="mcpgate-gw-test-")
        self.rt = os.path.join(self.dir, "rt")
        self.conf = os.path.join(self.dir, "conf")
        self.state = os.path.join(self.dir, "state")
        self.ws = os.path.join(self.dir, "ws")
        for d in (self.rt, self.conf, self.state, self.ws):
            os.makedirs(d)
        self.runtime = runtime
        shutil.copy(os.path.join(FAKES, "fake-runtime"), os.path.join(self.rt, runtime))
        shutil.copy(os.path.join(FAKES, "mcpgate-probe"), os.path.join(self.rt, "mcpgate-probe"))
        with open(os.path.join(self.rt, "images"), "w") as f:
            f.write("".join(i + "\n" for i in images))
        with open(os.path.join(self.conf, "mcp.toml"), "w") as f:
            f.write(servers)
        with open(os.path.join(self.conf, "config.toml"), "w") as f:
            f.write('[mcp]\nruntime = "%s"\n' % runtime + config)
        self.stderr = None

    def env(self):
        return {
            "PATH": self.rt + ":/usr/bin:/bin",
            "HOME": self.dir,
            "XDG_STATE_HOME": self.state,
            "XDG_DATA_HOME": os.path.join(self.dir, "data"),
            "XDG_CONFIG_HOME": os.path.join(self.dir, "nowhere"),
            "MCPGATE_LOG": "debug",
            # mcpgate derives its seccomp profile from the runtime's default;
            # here from a small base of the project's own (testdata/seccomp)
            "MCPGATE_SECCOMP_BASE": SECCOMP_BASE,
            # a variable of mcpgate's own that must reach no server and no runtime
            "MCPGATE_TEST_NOT_FOR_SERVERS": "leak-canary",
        }

    def argv(self, *extra):
        return [MCPGATE, "serve", "--config", self.conf, "--workspace", self.ws] + list(extra)

    def mcpgate(self, *args, input=None):
        return subprocess.run([MCPGATE] + list(args) + ["--config", self.conf],
                              env=self.env(), capture_output=True, text=True, timeout=60,
                              cwd=self.ws, input=input)

    def mcpgate_tty(self, *args, input=""):
        """args run on a terminal of their own (a pty): what it showed, and the status"""
        return run_tty([MCPGATE] + list(args) + ["--config", self.conf], self.env(), self.ws,
                       input, 60)

    def start(self, *extra):
        self.stderr = open(os.path.join(self.dir, "stderr.log"), "wb")
        return Client(self.argv(*extra), env=self.env(), stderr=self.stderr)

    def run(self, *extra, timeout=60):
        """serve with no client: its status and stderr"""
        return subprocess.run(self.argv(*extra), env=self.env(), input="",
                              capture_output=True, text=True, timeout=timeout)

    def audit(self):
        """Every session's records, the sessions in the order they began"""
        sessions = []
        for path in glob.glob(os.path.join(self.state, "mcpgate", "sessions", "*.jsonl")):
            with open(path) as fh:
                records = [json.loads(line) for line in fh]
            if records:
                sessions.append(records)
        sessions.sort(key=lambda records: records[0]["ts"])
        return [r for records in sessions for r in records]

    def wait_settled(self, timeout=60):
        return wait_settled(self.state, timeout)

    def stderr_text(self):
        self.stderr.flush()
        with open(os.path.join(self.dir, "stderr.log"), errors="replace") as fh:
            return fh.read()

    def runtime_log(self):
        """Every invocation of the fake runtime: its argv and environment"""
        path = os.path.join(self.rt, "runtime-log.jsonl")
        if not os.path.exists(path):
            return []
        with open(path) as fh:
            return [json.loads(line) for line in fh]

    def mcp_toml(self):
        with open(os.path.join(self.conf, "mcp.toml")) as fh:
            return fh.read()

    def containers(self):
        d = os.path.join(self.rt, "containers")
        return sorted(os.listdir(d)) if os.path.isdir(d) else []

    def cleanup(self):
        if self.stderr is not None:
            self.stderr.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def learn_probe_hash():
    """The probe's manifest hash, through `mcpgate review`"""
    f = Fixture('[[server]]\nname = "probe"\ntransport = "container"\nimage = "%s"\n' % IMAGE)
    r = f.mcpgate("review", "probe")
    f.cleanup()
    m = re.search(r"^manifest: (sha256:[0-9a-f]{64})$", r.stdout, re.M)
    if not m:
        raise RuntimeError("mcpgate review printed no manifest: %s %s" % (r.stdout, r.stderr))
    return m.group(1)


def server(name, manifest, tools_on=("echo",), args=None, extra="", effect="read", image=IMAGE):
    """A [[server]] running the probe, pinned to manifest, with tools_on on"""
    s = '[[server]]\nname = "%s"\ntransport = "container"\nimage = "%s"\n' % (name, image)
    if manifest is not None:
        s += 'manifest = "%s"\n' % manifest
    if args:
        s += "args = [%s]\n" % ", ".join(json.dumps(a) for a in args)
    s += extra
    for tool in tools_on:
        s += "[server.tools.%s]\non = true\neffect = \"%s\"\n" % (tool, effect)
    return s


def events(audit, name):
    return [r for r in audit if r["event"] == name]


def wait_settled(state, timeout=60):
    """Until every server of every session still running under the state
    folder ended its first start (ready, unavailable or, lazy, idle):
    tools/list is answered at once with the servers that are ready, so a
    test that wants them all waits for them first
    (docs/2026-12-02-never-wait.md)"""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        waiting = False
        for path in glob.glob(os.path.join(state, "mcpgate", "sessions", "*.jsonl")):
            with open(path) as fh:
                recs = [json.loads(line) for line in fh if line.endswith("\n")]
            start = [r for r in recs if r["event"] == "session.start"]
            if not start or any(r["event"] == "session.end" for r in recs):
                continue
            done = {r.get("server") for r in recs
                    if r["event"] in ("server.ready", "server.unavailable", "server.idle",
                                      "server.disabled")}
            waiting |= not all(n in done for n in start[0].get("servers", []))
        if not waiting:
            return True
        time.sleep(0.02)
    return False


def run_tty(argv, env, cwd, input, timeout):
    """argv on a terminal of its own (a pty), input typed then ^D (a program
    that wants more reads the end of its input): what it showed, its status"""
    import pty
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(cwd)
        os.execve(argv[0], argv, env)
    os.write(fd, input.encode() + b"\x04")
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
            break
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(fd)
    if time.monotonic() >= deadline:
        os.kill(pid, 9)
    _, status = os.waitpid(pid, 0)
    return out.decode(errors="replace"), os.waitstatus_to_exitcode(status)


# A pin no manifest hashes to: a first session with it starts the server (an
# unapproved one is not started) and records its live hash as withheld
UNMATCHED_PIN = "sha256:" + "0" * 64
