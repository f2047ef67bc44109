#!/usr/bin/env python3
"""The listener's bench: `mcpgate serve --listen` with 1, 10 and 50 MCP
clients over streamable HTTP, each making 200 echo calls (issue 15).

For each client count and driver, a fresh listener on the fake runtime (the
probe as the one server); every client, on one keep-alive http.client
connection, does initialize, notifications/initialized and tools/list, waits
for the others, then makes its calls one at a time, each with a text no other
call has: from a thread of its own with http.client (driver "threads"), or
all clients from one thread with raw requests on the same connections
(driver "epoll", a cheaper driver: above one client the threads' GIL bounds
the rate). Printed per client count: calls per second (all clients together),
latency p50 and p99, memory per client session (RSS of mcpgate and of its
process tree, before and after the sessions opened, over the clients), and
every answer lost, duplicated, misrouted (another call's or another client's)
or wrong. Beside them, the same calls over stdio to one `mcpgate serve`, so
the cost of HTTP shows. bench/README.md says how each figure is taken.

Nothing here asserts on time. Exit status: 0, or 1 when anything misbehaved
(an answer lost, duplicated, misrouted or wrong, a session that would not
start or end, a warning in mcpgate's log, a process left): see "anomalies";
2 when the binaries are missing.

Environment: MCPGATE (default ./mcpgate), FAKES (default build/fakes).
Options: --quick (calls / 10), --clients 1,10,50, --calls 200, --drivers
threads,epoll, --keep (the temporary folders, with mcpgate's logs and audit
files, are left).
"""
import datetime
import glob
import hashlib
import http.client
import json
import os
import platform
import re
import resource
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
from mcpclient import Client  # noqa: E402
from listenclient import sse_messages  # noqa: E402
from benchlib import (anomalies, anomaly, first_line, measure, on_term,  # noqa: E402
                      process_tree, report_anomalies, sh, status_kib, summary, table,
                      tree_cpu)

MCPGATE = os.path.abspath(os.environ.get("MCPGATE", os.path.join(TOP, "mcpgate")))
FAKES = os.path.abspath(os.environ.get("FAKES", os.path.join(TOP, "build", "fakes")))


def option(name, default):
    args = sys.argv[1:]
    for i, a in enumerate(args):
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
        if a == name and i + 1 < len(args):
            return args[i + 1]
    return default


QUICK = "--quick" in sys.argv[1:]
KEEP = "--keep" in sys.argv[1:]  # leave the temporary folders (mcpgate's logs, audit files)
CLIENT_COUNTS = [int(x) for x in option("--clients", "1,10,50").split(",") if x]
CALLS = int(option("--calls", "20" if QUICK else "200"))
# threads: a thread per client, http.client on a keep-alive connection each;
# epoll: the same connections driven from one thread with raw requests
DRIVERS = option("--drivers", "threads,epoll").split(",")
CALL_TIMEOUT = 60.0    # s, one call's answer
OPEN_TIMEOUT = 300.0   # s, every client's initialize and tools/list (50 starts on 2 cores)
END_TIMEOUT = 60.0     # s, every session's end after DELETE; the listener's after SIGTERM
ACCEPT = "application/json, text/event-stream"
TOOL = "s1__echo"
IMAGE = "localhost:5000/mcpgate-bench-probe@sha256:" + "be" * 32

temp_dirs = []
listeners = []  # every mcpgate started (Popen), ended at the end whatever happened
results = {"runs": {}}


def tempdir(prefix):
    d = tempfile.mkdtemp(prefix=prefix)
    temp_dirs.append(d)
    return d


# ---- memory of a process tree -------------------------------------------------

def pss_kib(pid):
    try:
        with open("/proc/%d/smaps_rollup" % pid) as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def memory(pid):
    """mcpgate's own RSS and threads, and its tree's (mcpgate, every fake
    runtime and probe) RSS sum, PSS sum and process count, in KiB"""
    tree = process_tree(pid)
    return {"mcpgate_rss": status_kib(pid, "VmRSS"), "threads": status_kib(pid, "Threads"),
            "tree_rss": sum(status_kib(p, "VmRSS") for p in tree),
            "tree_pss": sum(pss_kib(p) for p in tree), "processes": len(tree)}


def mcpgate_cpu_ns(pid):
    return tree_cpu([pid])[0]


def driver_cpu_s():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


# ---- the configuration ------------------------------------------------------

class Setup:
    """A config folder, a state folder, a workspace, and a folder with the
    fake runtime as podman and the probe beside it; one server, s1, whose
    echo is on and declared read (a write or undeclared tool would ask the
    person at every call), its manifest pinned as a person approves it."""

    def __init__(self):
        self.dir = tempdir("mcpgate-bench-listen-")
        self.rt = os.path.join(self.dir, "rt")
        self.conf = os.path.join(self.dir, "conf")
        self.state = os.path.join(self.dir, "state")
        self.ws = os.path.join(self.dir, "ws")
        for d in (self.rt, self.conf, self.state, self.ws):
            os.makedirs(d)
        shutil.copy(os.path.join(FAKES, "fake-runtime"), os.path.join(self.rt, "podman"))
        shutil.copy(os.path.join(FAKES, "mcpgate-probe"), os.path.join(self.rt, "mcpgate-probe"))
        with open(os.path.join(self.rt, "images"), "w") as f:
            f.write(IMAGE + "\n")
        self.write_servers(None)
        self.write_config(16)
        r = sh([MCPGATE, "review", "s1", "--config", self.conf], env=self.env(), timeout=120)
        m = re.search(r"^manifest: (sha256:[0-9a-f]{64})$", r.stdout, re.M)
        if m is None:
            raise RuntimeError("mcpgate review s1 printed no manifest: %s %s" %
                               (r.stdout[-400:], r.stderr[-400:]))
        self.manifest = m.group(1)
        self.write_servers(self.manifest)
        self.nlog = 0

    def write_servers(self, manifest):
        s = '[[server]]\nname = "s1"\ntransport = "container"\nimage = "%s"\n' % IMAGE
        if manifest:
            s += 'manifest = "%s"\n' % manifest
        s += '[server.tools.echo]\non = true\neffect = "read"\n'
        with open(os.path.join(self.conf, "mcp.toml"), "w") as f:
            f.write(s)

    def write_config(self, clients):
        # listen_clients defaults to 16: the 50-client run needs it raised
        with open(os.path.join(self.conf, "config.toml"), "w") as f:
            f.write('[mcp]\nruntime = "podman"\nlisten_clients = %d\n' % max(16, clients))

    def env(self):
        return {"PATH": self.rt + ":/usr/bin:/bin", "HOME": self.dir,
                "XDG_STATE_HOME": self.state,
                "XDG_DATA_HOME": os.path.join(self.dir, "data"),
                "XDG_CONFIG_HOME": os.path.join(self.dir, "nowhere")}

    def argv(self, *extra):
        return [MCPGATE, "serve", "--config", self.conf, "--workspace", self.ws] + list(extra)

    def stderr_file(self, what):
        self.nlog += 1
        return os.path.join(self.dir, "stderr-%d-%s.log" % (self.nlog, what))

    def containers(self):
        d = os.path.join(self.rt, "containers")
        return sorted(os.listdir(d)) if os.path.isdir(d) else []

    def audit_files(self):
        return set(glob.glob(os.path.join(self.state, "mcpgate", "sessions", "*.jsonl")))


def complaints(path):
    with open(path, errors="replace") as fh:
        return [ln.rstrip() for ln in fh if ln.startswith(("mcpgate: warn", "mcpgate: error"))]


def end_process(proc, what, sig=signal.SIGTERM, timeout=END_TIMEOUT):
    """Signal a process we started and wait; kill it (by its pid) if it does
    not end. Returns its status, None when killed."""
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        anomaly("%s did not end within %.0f s (killed)" % (what, timeout))
        proc.kill()
        proc.wait()
        return None


def start_time(pid):
    """A process's start (clock ticks since boot): with its pid, it names
    that process and no later one given the same pid"""
    try:
        with open("/proc/%d/stat" % pid) as fh:
            stat = fh.read()
        return int(stat[stat.rindex(")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def kill_leftovers(tree, what):
    """Processes of a tree [(pid, start time)] still alive after its root
    ended: listed, killed by pid"""
    left = [pid for pid, start in tree if start is not None and start_time(pid) == start]
    if left:
        anomaly("%s: processes left after mcpgate ended: %s (killed)" % (what, left))
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


# ---- one HTTP client ---------------------------------------------------------

class CountingConnection(http.client.HTTPConnection):
    """http.client's keep-alive connection, counting the TCP connections it
    makes: one per client unless the listener closed one"""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.connects = 0

    def connect(self):
        self.connects += 1
        super().connect()


class HttpClient:
    def __init__(self, port, token, index):
        self.port, self.token, self.index = port, token, index
        self.conn = CountingConnection("127.0.0.1", port, timeout=CALL_TIMEOUT)
        self.sid = None
        self.failed = None      # why this client could not take part, or None
        self.times = []         # each timed call's round trip, us
        self.received = []      # (call index, the answer's id, its text or None, the message)
        self.lost = []          # (call index, why) for calls with no answer at all
        self.other = 0          # messages that are not responses (notifications, requests)

    def post(self, msg):
        """(status, [messages]); raises on a connection error or timeout"""
        headers = {"Authorization": "Bearer " + self.token, "Accept": ACCEPT,
                   "Content-Type": "application/json"}
        if self.sid:
            headers["Mcp-Session-Id"] = self.sid
        self.conn.request("POST", "/mcp", json.dumps(msg).encode(), headers)
        r = self.conn.getresponse()
        data = r.read().decode("utf-8", "replace")
        if r.status == 200 and self.sid is None:
            self.sid = r.getheader("Mcp-Session-Id")
        ctype = r.getheader("Content-Type") or ""
        if ctype.startswith("text/event-stream"):
            return r.status, sse_messages(data)
        return r.status, ([json.loads(data)] if data.strip() else [])

    def open(self):
        """initialize, notifications/initialized, tools/list: the session is
        open and its server ready (mcpgate answers tools/list once it is)"""
        st, msgs = self.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "bench-c%d" % self.index, "version": "1"}}})
        if st != 200 or not self.sid or not any(m.get("id") == 1 and "result" in m for m in msgs):
            raise RuntimeError("initialize: HTTP %d, session id %r, %s" %
                               (st, self.sid, json.dumps(msgs)[:300]))
        st, msgs = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        if st != 202:
            raise RuntimeError("notifications/initialized: HTTP %d" % st)
        st, msgs = self.post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        answer = [m for m in msgs if m.get("id") == 2 and "result" in m]
        names = [t["name"] for t in answer[0]["result"]["tools"]] if answer else None
        if st != 200 or names != [TOOL]:
            raise RuntimeError("tools/list: HTTP %d, tools %s" % (st, names))

    def calls(self, texts):
        """texts[k] is call k's; its id is 1000 + k (the same ids in every
        session: a session's answer reaching another shows by its text)"""
        for k, text in enumerate(texts):
            msg = self.call_message(k, text)
            t0 = time.perf_counter_ns()
            try:
                st, msgs = self.post(msg)
            except (OSError, http.client.HTTPException, ValueError) as e:
                # the connection's state is unknown: a new one for the next call
                self.lost.append((k, "%s: %s" % (type(e).__name__, e)))
                self.conn.close()
                continue
            self.times.append((time.perf_counter_ns() - t0) / 1000.0)
            self.take(k, st, msgs)

    def call_message(self, k, text):
        return {"jsonrpc": "2.0", "id": 1000 + k, "method": "tools/call",
                "params": {"name": TOOL, "arguments": {"text": text}}}

    def raw_request(self, k, text):
        """call k as the bytes of one POST on the open keep-alive connection"""
        body = json.dumps(self.call_message(k, text)).encode()
        return (("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
                 "Accept: %s\r\nContent-Type: application/json\r\nMcp-Session-Id: %s\r\n"
                 "Content-Length: %d\r\n\r\n" % (self.port, self.token, ACCEPT, self.sid,
                                                   len(body))).encode() + body)

    def take(self, k, st, msgs):
        """call k's HTTP answer: its status and messages"""
        if st != 200:
            self.lost.append((k, "HTTP %d: %s" % (st, json.dumps(msgs)[:200])))
            return
        for m in msgs:
            if "method" in m:
                self.other += 1
                continue
            content = (m.get("result") or {}).get("content") or [{}]
            got = content[0].get("text") if not m.get("result", {}).get("isError") else None
            self.received.append((k, m.get("id"), got, m))

    def delete(self):
        headers = {"Authorization": "Bearer " + self.token, "Mcp-Session-Id": self.sid}
        self.conn.request("DELETE", "/mcp", headers=headers)
        r = self.conn.getresponse()
        r.read()
        return r.status


def parse_response(buf):
    """(status, content type, body, bytes used) of the first whole HTTP
    response in buf, or None while it is not whole (Content-Length or chunked)"""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    lines = buf[:end].decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    hdrs = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    pos = end + 4
    if "content-length" in hdrs:
        n = int(hdrs["content-length"])
        if len(buf) < pos + n:
            return None
        return status, hdrs.get("content-type", ""), buf[pos:pos + n], pos + n
    if hdrs.get("transfer-encoding", "").lower() == "chunked":
        body = b""
        while True:
            eol = buf.find(b"\r\n", pos)
            if eol < 0:
                return None
            size = int(buf[pos:eol].split(b";")[0], 16)
            if len(buf) < eol + 2 + size + 2:
                return None
            body += buf[eol + 2:eol + 2 + size]
            pos = eol + 2 + size + 2
            if size == 0:
                # no trailers from libmicrohttpd: the last chunk ends the response
                return status, hdrs.get("content-type", ""), body, pos
    return status, hdrs.get("content-type", ""), b"", pos  # 202, 204: no body


def epoll_calls(clients, texts):
    """Every client's calls from one thread: each client one request at a
    time on its own keep-alive connection (the one it opened its session on),
    the next sent as soon as its answer is whole. The driver's cost per call
    is far below http.client's in threads (no GIL handoff), so the listener
    is nearer to being what bounds the rate."""
    sel = selectors.DefaultSelector()
    state = {}
    for c in clients:
        if c.failed or c.conn.sock is None:
            continue
        st = {"k": 0, "buf": b"", "t0": 0, "deadline": 0.0}
        state[c.index] = st
        sel.register(c.conn.sock, selectors.EVENT_READ, c)

    def send(c, st):
        st["t0"] = time.perf_counter_ns()
        st["deadline"] = time.monotonic() + CALL_TIMEOUT
        c.conn.sock.sendall(c.raw_request(st["k"], texts[c.index][st["k"]]))

    def stop(c, why=None):
        sel.unregister(c.conn.sock)
        if why is not None:
            # the connection's state is unknown: every call left is lost
            for k in range(state[c.index]["k"], len(texts[c.index])):
                c.lost.append((k, why))
            c.conn.close()
        del state[c.index]

    for c in clients:
        if c.index in state:
            if texts[c.index]:
                send(c, state[c.index])
            else:
                stop(c)
    while state:
        for key, _ in sel.select(1.0):
            c = key.data
            st = state[c.index]
            try:
                chunk = c.conn.sock.recv(1 << 16)
            except OSError as e:
                stop(c, "%s: %s" % (type(e).__name__, e))
                continue
            if not chunk:
                stop(c, "the listener closed the connection")
                continue
            st["buf"] += chunk
            try:
                got = parse_response(st["buf"])
            except (ValueError, IndexError) as e:
                stop(c, "not an HTTP response: %s: %r" % (e, st["buf"][:200]))
                continue
            if got is None:
                continue
            status, ctype, body, used = got
            c.times.append((time.perf_counter_ns() - st["t0"]) / 1000.0)
            st["buf"] = st["buf"][used:]
            text = body.decode("utf-8", "replace")
            try:
                msgs = sse_messages(text) if ctype.startswith("text/event-stream") else \
                    ([json.loads(text)] if text.strip() else [])
            except ValueError:
                msgs = [{"id": None, "not json": text[:200]}]
            c.take(st["k"], status, msgs)
            st["k"] += 1
            if st["buf"]:
                stop(c, "bytes after the answer: %r" % st["buf"][:200])
            elif st["k"] < len(texts[c.index]):
                send(c, st)
            else:
                stop(c)
        now = time.monotonic()
        for c in clients:
            if c.index in state and now > state[c.index]["deadline"]:
                stop(c, "no answer within %.0f s" % CALL_TIMEOUT)
    sel.close()


# ---- the listener --------------------------------------------------------------

class Listener:
    def __init__(self, setup, clients):
        setup.write_config(clients)
        self.setup = setup
        self.log_path = setup.stderr_file("listen-%d" % clients)
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(setup.argv("--listen", "127.0.0.1:0"), env=setup.env(),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self.log)
        listeners.append(self.proc)
        self.port = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and self.proc.poll() is None:
            with open(self.log_path, errors="replace") as fh:
                m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/mcp", fh.read())
            if m:
                self.port = int(m.group(1))
                break
            time.sleep(0.05)
        if self.port is None:
            raise RuntimeError("mcpgate serve --listen did not say where it listens: %s" %
                               open(self.log_path, errors="replace").read()[-600:])
        with open(os.path.join(setup.state, "mcpgate", "listener-token")) as fh:
            self.token = fh.read().strip()

    def get(self, path):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            c.request("GET", path, headers={"Authorization": "Bearer " + self.token})
            r = c.getresponse()
            return r.status, r.read().decode("utf-8", "replace")
        finally:
            c.close()

    def metrics(self):
        """{series (name and labels as printed): value}"""
        st, text = self.get("/metrics")
        if st != 200:
            raise RuntimeError("/metrics: HTTP %d" % st)
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                k, v = line.rsplit(" ", 1)
                out[k] = float(v)
        return out

    def sessions(self):
        try:
            st, text = self.get("/health")
            return json.loads(text)["sessions"] if st == 200 else None
        except (OSError, http.client.HTTPException, ValueError):
            return None


def end_listener(lst, what, tree):
    """SIGTERM, its status, what it left; a listener that died before is the
    first thing said (with the end of its log: a sanitizer's report or a
    crash)"""
    died = lst.proc.poll()
    if died is not None:
        with open(lst.log_path, errors="replace") as fh:
            tail = fh.read()[-800:]
        anomaly("%s: mcpgate serve --listen ended by itself (status %d) while clients were "
                "connected; its log ends: %s" % (what, died, tail))
    else:
        status = end_process(lst.proc, "mcpgate serve --listen (%s)" % what)
        if status != 0:
            anomaly("%s: mcpgate serve --listen exited with status %s after SIGTERM" %
                    (what, status))
    lst.log.close()
    kill_leftovers(tree, what)
    for line in complaints(lst.log_path):
        anomaly("%s: mcpgate said: %s" % (what, line[:600]))
    if lst.setup.containers():
        anomaly("%s: containers left in the fake runtime: %s" % (what, lst.setup.containers()))


def family(metrics, name):
    return sum(v for k, v in metrics.items() if k == name or k.startswith(name + "{"))


# ---- the HTTP runs ------------------------------------------------------------

def run_http(setup, n, nonce, driver):
    what = "%d client%s (%s)" % (n, "" if n == 1 else "s", driver)
    before_files = setup.audit_files()
    lst = Listener(setup, n)
    pid = lst.proc.pid
    out = {"clients": n, "calls_per_client": CALLS, "driver": driver}
    results["runs"]["http_%d_%s" % (n, driver)] = out
    tree = []
    try:
        idle = memory(pid)
        clients = [HttpClient(lst.port, lst.token, i) for i in range(n)]
        texts = [["listen-bench %s %s n%d c%d k%d" % (nonce, driver, n, i, k) for k in range(CALLS)]
                 for i in range(n)]
        owner = {t: (i, k) for i, row in enumerate(texts) for k, t in enumerate(row)}
        ready = threading.Barrier(n + 1)
        go = threading.Event()

        def client_main(c):
            try:
                c.open()
            except Exception as e:  # noqa: BLE001
                c.failed = "%s: %s" % (type(e).__name__, e)
            try:
                ready.wait(OPEN_TIMEOUT)
            except threading.BrokenBarrierError:
                c.failed = c.failed or "the others did not open in time"
                return
            if driver != "threads" or not go.wait(OPEN_TIMEOUT) or c.failed:
                return
            c.calls(texts[c.index])

        threads = [threading.Thread(target=client_main, args=(c,), daemon=True) for c in clients]
        t_open = time.perf_counter()
        for th in threads:
            th.start()
        try:
            ready.wait(OPEN_TIMEOUT)
        except threading.BrokenBarrierError:
            pass
        out["open_s"] = time.perf_counter() - t_open
        opened = memory(pid)
        tree = [(p, start_time(p)) for p in process_tree(pid) if p != pid]
        for c in clients:
            if c.failed:
                anomaly("%s: client %d did not open its session: %s" % (what, c.index, c.failed))
        cpu0, drv0 = mcpgate_cpu_ns(pid), driver_cpu_s()
        t0 = time.perf_counter()
        if driver == "threads":
            go.set()
            deadline = time.monotonic() + CALL_TIMEOUT * (CALLS + 2)
            for th in threads:
                th.join(max(0.0, deadline - time.monotonic()))
        else:
            for th in threads:
                th.join(CALL_TIMEOUT)
            epoll_calls(clients, texts)
        wall = time.perf_counter() - t0
        cpu1, drv1 = mcpgate_cpu_ns(pid), driver_cpu_s()
        hung = [c.index for c, th in zip(clients, threads) if th.is_alive()]
        if hung:
            anomaly("%s: clients %s still calling at the deadline" % (what, hung))
        after = memory(pid)
        metrics = lst.metrics()

        # every answer, against the call it was sent for and the call its text names
        lost = dup = misrouted = wrong = 0
        answered = {}
        examples = []
        for c in clients:
            if c.failed:
                continue
            for k, why in c.lost:
                if len(examples) < 5:
                    examples.append("client %d call %d: %s" % (c.index, k, why))
            for k, rid, got, m in c.received:
                own = got == texts[c.index][k] and rid == 1000 + k
                if own:
                    answered[(c.index, k)] = answered.get((c.index, k), 0) + 1
                elif got in owner:
                    misrouted += 1
                    if len(examples) < 5:
                        examples.append("client %d call %d (id %d) got id %r text %r (client %d "
                                        "call %d's)" % ((c.index, k, 1000 + k, rid, got) +
                                                        owner[got]))
                else:
                    wrong += 1
                    if len(examples) < 5:
                        examples.append("client %d call %d: %s" % (c.index, k,
                                                                    json.dumps(m)[:200]))
        expected = sum(CALLS for c in clients if not c.failed)
        lost = sum(1 for c in clients if not c.failed for k in range(CALLS)
                   if (c.index, k) not in answered)
        dup = sum(v - 1 for v in answered.values() if v > 1)
        times = [x for c in clients for x in c.times]
        s = summary(times)
        calls_done = sum(answered.values())
        out.update({
            "latency_us": s, "wall_s": wall, "calls_per_s": calls_done / wall if wall else None,
            "lost": lost, "duplicated": dup, "misrouted": misrouted, "wrong": wrong,
            "calls_expected": expected, "clients_failed": sum(1 for c in clients if c.failed),
            "connections": sum(c.conn.connects for c in clients),
            "other_messages": sum(c.other for c in clients),
            "memory_kib": {"idle": idle, "opened": opened, "after_calls": after},
            "mcpgate_cpu_us_per_call": (cpu1 - cpu0) / 1000.0 / calls_done if calls_done else None,
            "driver_cpu_share": (drv1 - drv0) / wall if wall else None,
            "examples": examples})
        if lost or dup or misrouted or wrong:
            anomaly("%s: of %d calls, %d lost, %d duplicated, %d misrouted, %d wrong; "
                    "first: %s" % (what, expected, lost, dup, misrouted, wrong,
                                   "; ".join(examples) or "-"))
        if out["connections"] > n:
            print("  note: %s made %d TCP connections (one a client expected): a keep-alive "
                  "connection was closed" % (what, out["connections"]))
        # the listener's own count: every call answered ok, nothing dropped
        ok_calls = metrics.get('mcpgate_tool_calls_total{server="s1",tool="echo",outcome="ok"}', 0)
        all_calls = family(metrics, "mcpgate_tool_calls_total")
        dropped = family(metrics, "mcpgate_messages_dropped_total")
        out["metrics"] = {"tool_calls_ok": ok_calls, "tool_calls": all_calls, "dropped": dropped,
                          "sessions_open": metrics.get("mcpgate_sessions_open")}
        if ok_calls != expected or all_calls != expected or dropped:
            anomaly("%s: /metrics counts %d calls (%d ok) for %d made, and %d messages "
                    "dropped" % (what, all_calls, ok_calls, expected, dropped))

        # the end: DELETE every session, then every session's audit file
        refused = []
        for c in clients:
            if c.sid:
                try:
                    st = c.delete()
                except (OSError, http.client.HTTPException) as e:
                    st = "%s: %s" % (type(e).__name__, e)
                if st != 204:
                    refused.append("client %d: %s" % (c.index, st))
            c.conn.close()
        if refused:
            anomaly("%s: %d DELETEs not answered 204; first: %s" %
                    (what, len(refused), "; ".join(refused[:3])))
        deadline = time.monotonic() + END_TIMEOUT
        while time.monotonic() < deadline and lst.proc.poll() is None and lst.sessions() != 0:
            time.sleep(0.1)
        if lst.proc.poll() is None and lst.sessions() != 0:
            anomaly("%s: %s sessions still open %.0f s after DELETE" %
                    (what, lst.sessions(), END_TIMEOUT))
        out["memory_kib"]["ended"] = memory(pid)
    finally:
        end_listener(lst, what, tree)
    per_client = {}
    for path in setup.audit_files() - before_files:
        with open(path) as fh:
            recs = [json.loads(line) for line in fh if line.strip()]
        names = [r.get("client") for r in recs if r.get("event") == "client.initialize"]
        calls = [r for r in recs if r.get("event") == "tool.call"]
        per_client[names[0] if names else path] = (
            sum(1 for r in calls if r.get("outcome") == "ok"), len(calls),
            any(r.get("event") == "session.end" for r in recs))
    bad = {k: v for k, v in per_client.items() if v != (CALLS, CALLS, True)}
    if len(per_client) != n or bad:
        anomaly("%s: %d audit files for %d sessions; not (%d ok calls, %d calls, session.end): "
                "%s" % (what, len(per_client), n, CALLS, CALLS, dict(list(bad.items())[:5])))
    return out


# ---- the stdio reference -------------------------------------------------------

def run_stdio(setup, nonce):
    what = "stdio, 1 client"
    setup.write_config(1)
    log_path = setup.stderr_file("stdio")
    with open(log_path, "wb") as err:
        c = Client(setup.argv(), env=setup.env(), stderr=err)
    listeners.append(c.proc)
    pid = c.proc.pid
    out = {"clients": 1, "calls_per_client": CALLS, "stdio": True}
    results["runs"]["stdio_1"] = out
    tree = []
    try:
        c.initialize()
        names = [t["name"] for t in c.request("tools/list", timeout=OPEN_TIMEOUT)["result"]["tools"]]
        if names != [TOOL]:
            raise RuntimeError("mcpgate serve offers %s, not %s" % (names, TOOL))
        opened = memory(pid)
        tree = [(p, start_time(p)) for p in process_tree(pid) if p != pid]
        texts = ["listen-bench %s stdio k%d" % (nonce, k) for k in range(CALLS)]
        times, wrong, examples = [], 0, []
        cpu0, drv0 = mcpgate_cpu_ns(pid), driver_cpu_s()
        t0 = time.perf_counter()
        lost = 0
        for k, text in enumerate(texts):
            t1 = time.perf_counter_ns()
            try:
                r = c.call(TOOL, {"text": text}, timeout=CALL_TIMEOUT)
            except Exception as e:  # noqa: BLE001
                lost += 1
                examples.append("call %d: %s: %s" % (k, type(e).__name__, e))
                break  # a stdio session that stops answering answers nothing after
            times.append((time.perf_counter_ns() - t1) / 1000.0)
            content = (r.get("result") or {}).get("content") or [{}]
            if r.get("result", {}).get("isError") or content[0].get("text") != text:
                wrong += 1
                examples.append("call %d: %s" % (k, json.dumps(r)[:200]))
        lost = CALLS - len(times)  # the call that failed, and those after it not made
        wall = time.perf_counter() - t0
        cpu1, drv1 = mcpgate_cpu_ns(pid), driver_cpu_s()
        done = len(times) - wrong
        # Client.wait_for passes over answers to other ids: every line is looked at again
        answers = [json.loads(x) for x in c.received]
        ids = [m.get("id") for m in answers if "method" not in m and m.get("id", 0) >= 3]
        dup = len(ids) - len(set(ids))
        out.update({"latency_us": summary(times), "wall_s": wall,
                    "calls_per_s": done / wall if wall else None, "lost": lost,
                    "duplicated": dup, "misrouted": 0, "wrong": wrong,
                    "memory_kib": {"opened": opened, "after_calls": memory(pid)},
                    "mcpgate_cpu_us_per_call": (cpu1 - cpu0) / 1000.0 / done if done else None,
                    "driver_cpu_share": (drv1 - drv0) / wall if wall else None,
                    "examples": examples[:5]})
        if lost or wrong or dup:
            anomaly("%s: of %d calls, %d lost, %d duplicated, %d wrong; first: %s" %
                    (what, CALLS, lost, dup, wrong, "; ".join(examples[:5]) or "-"))
    finally:
        try:
            c.proc.stdin.close()
        except OSError:
            pass
        try:
            status = c.proc.wait(END_TIMEOUT)
        except subprocess.TimeoutExpired:
            status = end_process(c.proc, "mcpgate serve (stdio)", signal.SIGKILL)
    if status != 0:
        anomaly("%s: mcpgate serve exited with status %s after its input closed" % (what, status))
    kill_leftovers(tree, what)
    for line in complaints(log_path):
        anomaly("%s: mcpgate said: %s" % (what, line[:600]))
    if setup.containers():
        anomaly("%s: containers left in the fake runtime: %s" % (what, setup.containers()))
    return out


# ---- the tables ---------------------------------------------------------------

def per_session(run, key):
    """stdio: the whole process (and its tree) is the one session"""
    m = run.get("memory_kib", {})
    try:
        if run.get("stdio"):
            return m["opened"][key]
        return (m["opened"][key] - m["idle"][key]) / run["clients"]
    except (KeyError, TypeError, ZeroDivisionError):
        return None


def tables():
    rows = []
    for name, run in results["runs"].items():
        s = run.get("latency_us", {})
        label = "stdio, 1 client (reference)" if run.get("stdio") else \
            "HTTP, %d client%s, %s" % (run["clients"], "" if run["clients"] == 1 else "s",
                                       run["driver"])
        rows.append([label, run["clients"] * run["calls_per_client"], run.get("calls_per_s"),
                     s.get("median", 0) / 1000.0 if s.get("n") else None,
                     s.get("p99", 0) / 1000.0 if s.get("n") else None,
                     per_session(run, "mcpgate_rss"), per_session(run, "tree_rss"),
                     run.get("lost"), run.get("duplicated"), run.get("misrouted"),
                     run.get("wrong")])
    table("the listener: calls per client count (latency in ms; memory in KiB per client "
          "session: RSS after the sessions opened - before, / clients)",
          ["", "calls", "calls/s", "p50", "p99", "mcpgate/sess", "tree/sess", "lost", "dup",
           "misrouted", "wrong"], rows, digits=[0, 0, 2, 2, 0, 0, 0, 0, 0, 0])
    rows = []
    for name, run in results["runs"].items():
        m = run.get("memory_kib", {})
        label = "stdio 1" if run.get("stdio") else "HTTP %d %s" % (run["clients"], run["driver"])

        def g(phase, key):
            return m.get(phase, {}).get(key)
        rows.append([label, g("idle", "mcpgate_rss"), g("opened", "mcpgate_rss"),
                     g("after_calls", "mcpgate_rss"), g("ended", "mcpgate_rss"),
                     g("opened", "threads"), g("opened", "processes"), g("idle", "tree_pss"),
                     g("opened", "tree_pss"), per_session(run, "tree_pss"),
                     run.get("mcpgate_cpu_us_per_call"),
                     "-" if run.get("driver_cpu_share") is None
                     else "%.0f%%" % (100 * run["driver_cpu_share"])])
    table("memory (KiB: mcpgate's VmRSS idle, with the sessions open, after the calls, after "
          "every session ended; its threads and its tree's processes; the tree's PSS) and CPU",
          ["", "idle", "open", "calls", "ended", "threads", "procs", "PSS idle", "PSS open",
           "PSS/sess", "mcpgate us/call", "driver CPU"], rows,
          digits=[0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0])


# ---- the run ----------------------------------------------------------------

def snapshot_binaries():
    """Run copies taken once: a rebuild in the tree during the run cannot
    change them midway. The copy keeps the name mcpgate (the sweep judges an
    owner by it)."""
    global MCPGATE, FAKES
    d = tempdir("mcpgate-bench-bin-")
    os.makedirs(os.path.join(d, "fakes"))
    shutil.copy2(MCPGATE, os.path.join(d, "mcpgate"))
    for name in ("fake-runtime", "mcpgate-probe"):
        shutil.copy2(os.path.join(FAKES, name), os.path.join(d, "fakes", name))
    with open(os.path.join(d, "mcpgate"), "rb") as fh:
        digest = hashlib.sha256(fh.read()).hexdigest()
    origin = MCPGATE
    MCPGATE, FAKES = os.path.join(d, "mcpgate"), os.path.join(d, "fakes")
    return origin, digest


def header(origin, digest):
    now = datetime.datetime.now().astimezone()
    cpu = ""
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), "")
    except OSError:
        pass
    commit = first_line(["git", "-C", TOP, "rev-parse", "--short", "HEAD"]) or "?"
    try:
        if sh(["git", "-C", TOP, "status", "--porcelain", "--untracked-files=no"],
              timeout=20).stdout.strip():
            commit += " (+ uncommitted changes)"
    except (OSError, subprocess.TimeoutExpired):
        pass
    load = [round(x, 2) for x in os.getloadavg()]
    results.update({"date": now.isoformat(timespec="seconds"), "commit": commit,
                    "binary": {"path": origin, "sha256": digest},
                    "machine": {"nproc": os.cpu_count(), "kernel": platform.release(),
                                "cpu": cpu, "loadavg": load},
                    "versions": {"mcpgate": first_line([MCPGATE, "--version"]),
                                 "python": platform.python_version()},
                    "clients": CLIENT_COUNTS, "calls": CALLS})
    print("mcpgate listener bench: %s clients, %d calls each" %
          (", ".join(map(str, CLIENT_COUNTS)), CALLS))
    print("  date     %s" % results["date"])
    print("  machine  nproc %s, kernel %s, %s; load average %s" %
          (os.cpu_count(), platform.release(), cpu or "?", " ".join("%.2f" % x for x in load)))
    print("  tree     %s, binary %s (sha256 %s)" % (commit, origin, digest[:12]))
    print("  versions mcpgate %s; python %s" % (results["versions"]["mcpgate"],
                                                platform.python_version()))
    print("  figures: one run; no figure is a pass/fail threshold")
    sys.stdout.flush()
    return now


def write_json(now):
    d = os.path.join(HERE, "results")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "listen-%s.json" % now.strftime("%Y-%m-%d-%H%M%S"))
    for run in results["runs"].values():
        if "latency_us" in run:
            run["latency_us"] = {k: round(v, 1) if isinstance(v, float) else v
                                 for k, v in run["latency_us"].items()}
    with open(path, "w") as f:
        json.dump(results, f, indent=2, sort_keys=True, default=str)
        f.write("\n")
    return path


def main():
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)
    for path in (MCPGATE, os.path.join(FAKES, "fake-runtime"), os.path.join(FAKES, "mcpgate-probe")):
        if not os.access(path, os.X_OK):
            print("bench: %s is missing; run make and make fakes (make bench-listen does both)"
                  % path)
            return 2
    origin, digest = snapshot_binaries()
    now = header(origin, digest)
    nonce = secrets.token_hex(4)
    try:
        setup = Setup()
        print("  (the probe's manifest %s pinned in mcp.toml)" % setup.manifest)
        measure(run_stdio, setup, nonce)
        for n in CLIENT_COUNTS:
            for driver in DRIVERS:
                print("  %d client%s, %s ..." % (n, "" if n == 1 else "s", driver), flush=True)
                measure(run_http, setup, n, nonce, driver)
    except KeyboardInterrupt as e:
        anomaly("interrupted (%s)" % (e or "SIGINT"))
    except Exception as e:  # noqa: BLE001
        anomaly("setup failed: %s: %s" % (type(e).__name__, e))
    finally:
        for p in listeners:
            if p.poll() is None:
                anomaly("mcpgate pid %d still running at the end" % p.pid)
                end_process(p, "mcpgate pid %d" % p.pid)
        for d in temp_dirs:
            if KEEP:
                print("  kept %s" % d)
            else:
                shutil.rmtree(d, ignore_errors=True)
    tables()
    results["anomalies"] = anomalies
    status = report_anomalies("every call answered once, to its own client; every session "
                              "ended; no warning from mcpgate; no process or container left")
    path = write_json(now)
    print()
    print("results: %s" % os.path.relpath(path, TOP))
    return status


if __name__ == "__main__":
    sys.exit(main())
