#!/usr/bin/env python3
"""mcpgate serve with a remote server (streamable HTTP) played by fakes/mcp_http.

Each case starts the fake on a free loopback port, writes a config with one
remote server pointing at it, drives `mcpgate serve` as a client would, then
reads the fake's log (one JSON line per HTTP request) and mcpgate's audit log.
Environment: MCPGATE (the binary), FAKES (the folder holding mcp-http).
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from mcpclient import Client, Tap, text_of  # noqa: E402
from gwtest import UNMATCHED_PIN, wait_settled  # noqa: E402

MCPGATE = os.path.abspath(os.environ.get("MCPGATE", "./mcpgate"))
FAKES = os.path.abspath(os.environ.get("FAKES", "build/fakes"))
MCP_HTTP = os.path.join(FAKES, "mcp-http")
SECRET = "remote-api-key-1f0e9d8c7b6a"

t = Tap()
LIVE = []  # fixtures not cleaned up yet: a case that raised leaves its own


class Fake:
    """One mcp-http process and its log."""

    def __init__(self, folder, name, *args):
        self.log_path = os.path.join(folder, name + ".jsonl")
        self.proc = subprocess.Popen([MCP_HTTP, "-port", "0", "-log", self.log_path] + list(args),
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        line = self.proc.stdout.readline().decode()
        m = re.match(r"port (\d+)", line)
        if not m:
            raise RuntimeError("mcp-http printed no port: %r" % line)
        self.port = int(m.group(1))
        self.url = "http://127.0.0.1:%d/mcp" % self.port

    def log(self):
        if not os.path.exists(self.log_path):
            return []
        with open(self.log_path) as fh:
            return [json.loads(line) for line in fh]

    def posts(self, method=None):
        return [r for r in self.log() if r["method"] == "POST" and
                (method is None or (isinstance(r["body"], dict) and r["body"].get("method") == method))]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


class Fixture:
    def __init__(self, name="remote"):
        self.name = name
        self.clients = []
        self.dir = tempfile.mkdtemp(prefix="mcpgate-remote-test-")
        self.conf = os.path.join(self.dir, "conf")
        self.state = os.path.join(self.dir, "state")
        self.ws = os.path.join(self.dir, "ws")
        for d in (self.conf, self.state, self.ws):
            os.makedirs(d)
        self.fakes = []
        self.stderr = None
        LIVE.append(self)

    def fake(self, *args):
        f = Fake(self.dir, "fake%d" % len(self.fakes), *args)
        self.fakes.append(f)
        return f

    def write(self, servers, config=""):
        with open(os.path.join(self.conf, "mcp.toml"), "w") as fh:
            fh.write(servers)
        with open(os.path.join(self.conf, "config.toml"), "w") as fh:
            fh.write("[mcp]\n" + config)

    def env(self):
        return {
            "PATH": "/usr/bin:/bin",
            "HOME": self.dir,
            "XDG_STATE_HOME": self.state,
            "XDG_DATA_HOME": os.path.join(self.dir, "data"),
            "XDG_CONFIG_HOME": os.path.join(self.dir, "nowhere"),
            "MCPGATE_LOG": "debug",
        }

    def mcpgate(self, *args, stdin=None):
        return subprocess.run([MCPGATE] + list(args), env=self.env(), input=stdin,
                              capture_output=True, text=True, timeout=60, cwd=self.ws)

    def start(self):
        self.stderr = open(os.path.join(self.dir, "stderr.log"), "ab")
        c = Client([MCPGATE, "serve", "--config", self.conf, "--workspace", self.ws],
                   env=self.env(), stderr=self.stderr)
        self.clients.append(c)
        return c

    def stderr_text(self):
        if self.stderr is not None:
            self.stderr.flush()
        path = os.path.join(self.dir, "stderr.log")
        if not os.path.exists(path):
            return ""
        with open(path, errors="replace") as fh:
            return fh.read()

    def audit(self):
        out = []
        for name in sorted(glob.glob(os.path.join(self.state, "mcpgate", "sessions", "*.jsonl"))):
            with open(name) as fh:
                out += [json.loads(line) for line in fh]
        return out

    def audit_text(self):
        text = ""
        for name in glob.glob(os.path.join(self.state, "mcpgate", "sessions", "*.jsonl")):
            with open(name, errors="replace") as fh:
                text += fh.read()
        return text

    def abandon(self):
        """After a case raised: end what it started, without verdicts."""
        for c in self.clients:
            if c.proc.poll() is None:
                c.proc.kill()
                c.proc.wait()
        for f in self.fakes:
            f.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def cleanup(self):
        LIVE.remove(self)
        statuses = []
        for c in self.clients:
            if c.proc.poll() is None:
                c.close()
            statuses.append(c.proc.returncode)
        if self.clients:
            text = self.stderr_text()
            t.ok(all(s == 0 for s in statuses) and "Sanitizer" not in text and
                 "runtime error" not in text,
                 "%s: every mcpgate serve ended with status 0, no sanitizer report" % self.name,
                 "statuses %s\n%s" % (statuses, text[-3000:]))
        for f in self.fakes:
            f.stop()
        if self.stderr is not None:
            self.stderr.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def server(name, url, manifest=UNMATCHED_PIN, tools=("echo", "slow"), extra=""):
    s = '[[server]]\nname = "%s"\ntransport = "remote"\nurl = "%s"\n' % (name, url)
    if manifest:
        s += 'manifest = "%s"\n' % manifest
    s += extra
    for tool in tools:
        s += '[server.tools.%s]\non = true\neffect = "read"\n' % tool
    return s


def events(audit, name):
    return [r for r in audit if r["event"] == name]


def notices(c):
    return " ".join(n["params"]["data"] for n in c.notifications
                    if n["method"] == "notifications/message")


def tool_names(listing):
    return [tool["name"] for tool in listing["result"]["tools"]]


MANIFEST = None


def learn_manifest():
    """The fake's manifest hash, as a person would approve it: one session
    without a pin, the live hash from its server.withheld record."""
    f = Fixture("approval")
    try:
        fake = f.fake("-mode", "json")
        f.write(server("web", fake.url))
        c = f.start()
        c.initialize()
        wait_settled(f.state)
        c.request("tools/list")
        wait_settled(f.state)
        c.close()
        live = [e["live"] for e in events(f.audit(), "server.withheld") if e["server"] == "web"]
        if not live:
            raise RuntimeError("no server.withheld record: %s" % f.stderr_text())
        return live[0]
    finally:
        f.cleanup()


def test_plain_http_refused():
    f = Fixture()
    f.write(server("far", "http://example.com/mcp"))
    r = f.mcpgate("check", "--config", f.conf)
    t.ok(r.returncode != 0 and "uses http:// with a host that is not loopback" in r.stderr,
         "http:// to a host that is not loopback is refused when the config is read",
         r.stdout + r.stderr)
    f.write(server("near", "http://127.0.0.1:1/mcp"))
    r = f.mcpgate("check", "--config", f.conf)
    t.ok("not loopback" not in r.stdout + r.stderr, "http:// to 127.0.0.1 is accepted",
         r.stdout + r.stderr)
    f.cleanup()


def check_probe(fake, what):
    """The first request is the 2026-07-28 probe, which a server of the old
    era refuses; then initialize. Returns the requests after the probe."""
    log = fake.log()
    first = log[0] if log else {"body": None, "headers": {}}
    probe = [r for r in log if isinstance(r["body"], dict) and
             r["body"].get("method") == "server/discover"]
    t.ok(len(probe) == 1 and probe[0] is first and first["status"] == 400 and
         "mcp-session-id" not in first["headers"] and
         first["headers"].get("mcp-protocol-version") == "2026-07-28" and
         first["headers"].get("mcp-method") == "server/discover" and
         first["body"]["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28",
         "%s: server/discover of 2026-07-28 comes first, once, with its headers; the old "
         "server refuses it (400)" % what, [(r["method"], r["headers"], r["body"]) for r in log[:2]])
    t.ok(len(log) > 1 and isinstance(log[1]["body"], dict) and
         log[1]["body"].get("method") == "initialize",
         "%s: then initialize: the server is of the old era" % what,
         [(r["method"], r["body"]) for r in log[:3]])
    return [r for r in log if r not in probe]


def check_headers(fake, what):
    """Every request after initialize carries the session and the version."""
    log = check_probe(fake, what)
    init = [r for r in log if isinstance(r["body"], dict) and r["body"].get("method") == "initialize"]
    later = [r for r in log if r not in init]
    ok = bool(init) and all(
        r["headers"].get("accept") == "application/json, text/event-stream" and
        r["headers"].get("content-type") == "application/json" for r in log if r["method"] == "POST")
    t.ok(ok, "%s: every POST accepts JSON and event streams and sends JSON" % what,
         [r["headers"] for r in log])
    t.ok(all("mcp-session-id" not in r["headers"] and "mcp-protocol-version" not in r["headers"]
             for r in init), "%s: initialize carries no session and no version" % what)
    t.ok(later and all(re.fullmatch(r"sess-\d+", r["headers"].get("mcp-session-id", "")) and
                       r["headers"].get("mcp-protocol-version") == "2025-11-25" for r in later),
         "%s: every later request carries Mcp-Session-Id and MCP-Protocol-Version" % what,
         [(r["method"], r["headers"]) for r in later])


def test_json():
    f = Fixture("json")
    fake = f.fake("-mode", "json")
    f.write(server("web", fake.url, MANIFEST))
    c = f.start()
    c.initialize()
    wait_settled(f.state)
    names = tool_names(c.request("tools/list"))
    t.ok(names == ["web__echo", "web__slow"], "json: the remote server's tools are offered", names)
    r = c.call("web__echo", {"text": "hello over json"})
    t.ok("result" in r and text_of(r) == "hello over json", "json: a call is answered", r)
    r = c.call("web__nothing")
    t.ok("error" in r, "json: an unknown tool is still refused by the gateway")
    status = c.close()
    t.ok(status == 0, "json: the session ends cleanly", f.stderr_text()[-2000:])
    check_headers(fake, "json")
    inits = fake.posts("initialize")
    initialized = fake.posts("notifications/initialized")
    t.ok(len(inits) == 1 and len(initialized) == 1 and initialized[0]["status"] == 202,
         "json: one initialize, then notifications/initialized (202)", fake.log())
    deletes = [r for r in fake.log() if r["method"] == "DELETE"]
    sid = inits[0]["headers"].get("mcp-session-id") if inits else None
    used = {r["headers"].get("mcp-session-id") for r in fake.posts("tools/call")}
    t.ok(len(deletes) == 1 and len(used) == 1 and deletes[0]["headers"].get("mcp-session-id") in used
         and sid is None, "json: closing sends DELETE with the session id",
         [(r["method"], r["headers"].get("mcp-session-id")) for r in fake.log()])
    ready = events(f.audit(), "server.ready")
    t.ok(ready and ready[0]["server"] == "web", "json: server.ready is on the record", ready)
    f.cleanup()


def test_sse():
    f = Fixture("sse")
    fake = f.fake("-mode", "sse")
    f.write(server("web", fake.url, MANIFEST))
    c = f.start()
    c.initialize()
    wait_settled(f.state)
    names = tool_names(c.request("tools/list"))
    t.ok(names == ["web__echo", "web__slow"], "sse: tools listed over an event stream", names)
    before = len(c.notifications)
    r = c.call("web__echo", {"text": "hello over sse"}, meta={"progressToken": "client-tok-7"})
    progress = [n for n in c.notifications[before:] if n["method"] == "notifications/progress"]
    t.ok("result" in r and text_of(r) == "hello over sse", "sse: a call is answered", r)
    t.ok(len(progress) == 2 and all(p["params"]["progressToken"] == "client-tok-7" for p in progress)
         and [p["params"]["progress"] for p in progress] == [1, 2],
         "sse: progress from the stream reaches the client before the result, under its own token",
         c.notifications)
    upstream_tokens = [r["body"]["params"]["_meta"]["progressToken"] for r in fake.posts("tools/call")]
    t.ok(upstream_tokens and upstream_tokens[0] != "client-tok-7",
         "sse: the server saw the gateway's token, not the client's", upstream_tokens)
    t.ok(r["result"]["content"][1]["text"] == "pong received",
         "sse: the server's ping in the stream was answered (a POST of its own)", r)
    pongs = [x for x in fake.log() if x["method"] == "POST" and isinstance(x["body"], dict)
             and "method" not in x["body"] and str(x["body"].get("id", "")).startswith("ping-")]
    t.ok(len(pongs) == 1 and pongs[0]["status"] == 202 and pongs[0]["body"].get("result") == {},
         "sse: the pong was a response POST, accepted with 202", pongs)
    rs = [c.call("web__slow", {"ms": 100, "text": "s%d" % i}) for i in range(3)]
    t.ok(all("result" in x and text_of(x) == "s%d" % i for i, x in enumerate(rs)),
         "sse: slow calls, one after another", rs)
    c.close()
    check_headers(fake, "sse")
    deletes = [x for x in fake.log() if x["method"] == "DELETE"]
    t.ok(len(deletes) == 1, "sse: DELETE at close", deletes)
    f.cleanup()


def test_expiry():
    f = Fixture("expiry")
    # session requests: notifications/initialized (1), tools/list (2), the first call (3)
    fake = f.fake("-mode", "json", "-expire-after", "3")
    f.write(server("web", fake.url, MANIFEST))
    c = f.start()
    c.initialize()
    wait_settled(f.state)
    c.request("tools/list")
    ids, lines = [], b""
    for i in range(3):
        c.next_id += 1
        ids.append(c.next_id)
        lines += json.dumps({"jsonrpc": "2.0", "id": c.next_id, "method": "tools/call",
                             "params": {"name": "web__slow",
                                        "arguments": {"ms": 300, "text": "call %d" % i}}}).encode()
        lines += b"\n"
    c.proc.stdin.write(lines)  # one write: the three are in flight together
    c.proc.stdin.flush()
    got = {}
    deadline = time.monotonic() + 30
    while len(got) < len(ids) and time.monotonic() < deadline:
        msg = c.read_message(max(0.1, deadline - time.monotonic()))
        if msg is None:
            break
        if msg.get("id") in ids and "method" not in msg:
            got[msg["id"]] = msg
    answers = [got.get(i, {}) for i in ids]
    t.ok(all("result" in a and text_of(a) == "call %d" % i for i, a in enumerate(answers)),
         "expiry: three concurrent calls that met the session's end are all answered", answers)
    inits = fake.posts("initialize")
    t.ok(len(inits) == 2, "expiry: exactly one new initialize for all of them (%d in all)" % len(inits),
         [(x["method"], x["body"]) for x in fake.log()])
    first_params = inits[0]["body"]["params"] if inits else None
    t.ok(len(inits) == 2 and inits[1]["body"]["params"] == first_params,
         "expiry: the new initialize replays the original params")
    calls = fake.posts("tools/call")
    expired = [x for x in calls if x["status"] == 404]
    again = [x for x in calls if x["status"] == 200]
    new_sid = [x for x in fake.log() if x["method"] == "POST" and x["status"] == 200 and
               x["body"].get("method") == "initialize"]
    t.ok(len(expired) == 3 and len(again) == 3 and
         len({x["headers"]["mcp-session-id"] for x in again}) == 1 and
         all(x["headers"]["mcp-session-id"] != expired[0]["headers"]["mcp-session-id"] for x in again),
         "expiry: all three met the end (404); each is sent once more, in the new session",
         [(x["status"], x["headers"].get("mcp-session-id")) for x in calls])
    inited = fake.posts("notifications/initialized")
    t.ok(len(inited) == 2, "expiry: the new session gets notifications/initialized", len(inited))
    t.ok(len(new_sid) == 2, "expiry: both initializes succeeded")
    r = c.call("web__echo", {"text": "after"})
    t.ok("result" in r and text_of(r) == "after", "expiry: later calls use the new session", r)
    c.close()
    deletes = [x for x in fake.log() if x["method"] == "DELETE"]
    t.ok(len(deletes) == 1 and deletes[0]["headers"].get("mcp-session-id") ==
         (again[0]["headers"]["mcp-session-id"] if again else None),
         "expiry: DELETE names the new session", deletes)
    f.cleanup()


def test_redirect():
    f = Fixture("redirect")
    fake = f.fake("-mode", "json", "-redirect")
    f.write(server("web", fake.url, MANIFEST))
    c = f.start()
    c.initialize()
    wait_settled(f.state)
    names = tool_names(c.request("tools/list"))
    text = notices(c)
    t.ok(names == [], "redirect: the server offers nothing", names)
    t.ok("HTTP 307" in text and "redirect" in text and "does not follow" in text,
         "redirect: the client is told why, clearly", text)
    r = c.call("web__echo", {"text": "x"})
    t.ok("error" in r, "redirect: a call fails", r)
    c.close()
    un = events(f.audit(), "server.unavailable")
    t.ok(un and "HTTP 307" in un[0]["reason"], "redirect: server.unavailable says so", un)
    paths = [x["path"] for x in fake.log()]
    methods = [x["body"].get("method") for x in fake.log() if isinstance(x["body"], dict)]
    t.ok("/moved" not in paths and paths == ["/mcp", "/mcp"] and
         methods == ["server/discover", "initialize"],
         "redirect: the redirect is not followed (the probe, then initialize; none to its target)",
         list(zip(paths, methods)))
    f.cleanup()


def test_credential():
    f = Fixture("credential")
    fake = f.fake("-mode", "sse", "-require-header", "X-Api-Key:" + SECRET)
    other = f.fake("-mode", "json", "-require-header", "X-Api-Key:" + SECRET)
    cred = 'credential = "api"\nposition = "header:X-Api-Key"\n'
    f.write(server("web", fake.url, MANIFEST, extra=cred) +
            server("other", other.url, MANIFEST, extra=cred))
    r = f.mcpgate("secret", "set", "api", stdin=SECRET + "\n")
    t.ok(r.returncode == 0, "credential: secret set", r.stderr)
    r = f.mcpgate("secret", "bind", "api", "--host", "127.0.0.1:%d" % fake.port,
                  "--position", "header:X-Api-Key")
    t.ok(r.returncode == 0, "credential: secret bind to the first server's host and port", r.stderr)
    c = f.start()
    c.initialize()
    wait_settled(f.state)
    names = tool_names(c.request("tools/list"))
    t.ok(names == ["web__echo", "web__slow"],
         "credential: the bound server is offered; one on an unbound port is not", names)
    text = notices(c)
    t.ok("not bound for host 127.0.0.1:%d at header:X-Api-Key" % other.port in text and
         SECRET not in text, "credential: the refusal names host and position, never the value", text)
    r = c.call("web__echo", {"text": "with a key"}, meta={"progressToken": 1})
    t.ok("result" in r and text_of(r) == "with a key", "credential: a call goes through", r)
    c.close()
    log = fake.log()
    kinds = sorted({x["method"] + " " + (x["body"].get("method", "(response)")
                                         if isinstance(x["body"], dict) else "") for x in log})
    t.ok(log and all(x["headers"].get("x-api-key") == SECRET for x in log) and
         any(x["method"] == "DELETE" for x in log),
         "credential: the header is on every request: %s" % ", ".join(kinds),
         [(x["method"], x["status"]) for x in log])
    t.ok(other.log() == [], "credential: nothing at all reached the unbound server", other.log())
    t.ok(SECRET not in f.stderr_text(), "credential: never in mcpgate's stderr (debug level)")
    t.ok(SECRET not in f.audit_text(), "credential: never in the audit log")
    checks = events(f.audit(), "egress.check")
    t.ok(any(x["server"] == "web" and x["allowed"] for x in checks) and
         any(x["server"] == "other" and not x["allowed"] for x in checks),
         "credential: each lookup is an egress.check record", checks)
    f.cleanup()


def test_timeout():
    f = Fixture("timeout")
    fake = f.fake("-mode", "json")
    f.write(server("web", fake.url, MANIFEST), config="call_timeout = 1\n")
    c = f.start()
    c.initialize()
    wait_settled(f.state)
    c.request("tools/list")
    t0 = time.monotonic()
    r = c.call("web__slow", {"ms": 4000})
    took = time.monotonic() - t0
    t.ok("error" in r and took < 3.5, "timeout: a call past call_timeout fails (%.1f s)" % took, r)
    r = c.call("web__echo", {"text": "still here"})
    t.ok("result" in r and text_of(r) == "still here", "timeout: the next call works", r)
    c.close()
    f.cleanup()


def test_down():
    f = Fixture("down")
    fake = f.fake("-mode", "json")
    port = fake.port
    fake.stop()
    f.fakes.remove(fake)
    f.write(server("web", "http://127.0.0.1:%d/mcp" % port, MANIFEST))
    c = f.start()
    c.initialize()
    wait_settled(f.state)
    names = tool_names(c.request("tools/list"))
    text = notices(c)
    t.ok(names == [] and "server web is unavailable" in text and "request failed" in text,
         "down: a server nobody answers for is unavailable, with the reason", text)
    t0 = time.monotonic()
    status = c.close()
    t.ok(status == 0 and time.monotonic() - t0 < 5, "down: the session still ends promptly")
    f.cleanup()


class Hostile(BaseHTTPRequestHandler):
    """A server that answers tools/call badly, in the way its argument asks."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, ctype, body, close=False):
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
        self.send_header("Mcp-Session-Id", "hostile-1")
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        else:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_DELETE(self):
        self.reply(405, "text/plain", b"no")

    def do_POST(self):
        msg = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        method, rid = msg.get("method"), msg.get("id")

        def result(res, id_=rid):
            return json.dumps({"jsonrpc": "2.0", "id": id_, "result": res}).encode()
        if method is None or rid is None:
            return self.reply(202, None, b"")
        if method == "initialize":
            return self.reply(200, "application/json", result(
                {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                 "serverInfo": {"name": "hostile", "version": "0"}}))
        if method == "tools/list":
            return self.reply(200, "application/json", result({"tools": [
                {"name": "bad", "inputSchema": {"type": "object"}}]}))
        kind = msg["params"]["arguments"]["kind"]
        good = result({"content": [{"type": "text", "text": "fine"}]})
        sse = "text/event-stream"
        if kind == "badjson":
            self.reply(200, "application/json", b"{not json")
        elif kind == "wrongtype":
            self.reply(200, "text/html", b"<html>hello</html>")
        elif kind == "huge":
            self.reply(200, "application/json", result({"x": "a" * 200000}))
        elif kind == "status":
            self.reply(500, "text/plain", b"boom\x01\nsecond line")
        elif kind == "nullid":
            self.reply(200, "application/json", json.dumps(
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "cannot read"}}
            ).encode())
        elif kind == "otherid":
            self.reply(200, "application/json", result({}, id_=987654))
        elif kind == "ssegarbage":
            self.reply(200, sse, b"data: {broken\n\nevent: other\ndata: 1\n\n: c\n"
                       b"retry: x\nid\x00: y\ndata: [1,2]\n\ndata: " + good + b"\n\n", close=True)
        elif kind == "ssehuge":
            self.reply(200, sse, b"data: " + b"b" * 200000 + b"\n\n", close=True)
        elif kind == "sseend":
            self.reply(200, sse, b": nothing\n\n", close=True)
        else:
            self.reply(200, "application/json", good)


MODERN = "2026-07-28"
REGION_TOOL = {"name": "region", "inputSchema": {"type": "object", "properties": {
    "region": {"type": "string", "x-mcp-header": "Region"},
    "priority": {"type": "integer", "x-mcp-header": "Priority"},
    "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
    "where": {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}},
    "query": {"type": "string"}}}}
MODERN_TOOLS = [
    {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
    REGION_TOOL,
    {"name": "streamed", "inputSchema": {"type": "object"}},
    {"name": "mismatch", "inputSchema": {"type": "object"}},
    # an annotation on a number: a client MUST leave the tool out
    {"name": "scored", "inputSchema": {"type": "object", "properties": {
        "score": {"type": "number", "x-mcp-header": "Score"}}}},
]


def decode_header(value):
    m = re.fullmatch(r"=\?base64\?(.*)\?=", value or "")
    import base64
    return base64.b64decode(m.group(1)).decode() if m else value


class Modern(BaseHTTPRequestHandler):
    """A server of MCP 2026-07-28 only: no sessions, no GET or DELETE; it
    checks every POST's headers against its body as the spec tells a server
    to, and logs what it got in server.seen."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body, ctype="application/json"):
        data = json.dumps(body).encode() if not isinstance(body, bytes) else body
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        # a session id of its own: a client of 2026-07-28 must not send it back
        self.send_header("Mcp-Session-Id", "modern-should-be-ignored")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def record(self, body, status):
        self.server.seen.append({"method": self.command, "headers": dict(
            (k.lower(), v) for k, v in self.headers.items()), "body": body, "status": status})

    def refuse(self):
        self.record(None, 405)
        self.reply(405, b"", "text/plain")

    do_GET = refuse
    do_DELETE = refuse

    def do_POST(self):
        msg = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}

        def error(status, code, text, data=None):
            self.record(msg, status)
            e = {"code": code, "message": text}
            if data is not None:
                e["data"] = data
            self.reply(status, {"jsonrpc": "2.0", "id": rid, "error": e})

        def result(res):
            self.record(msg, 200)
            res = dict(res, resultType="complete")
            self.reply(200, {"jsonrpc": "2.0", "id": rid, "result": res})
        if rid is None or method is None:
            return error(400, -32600, "2026-07-28 has no client notifications or responses")
        meta = params.get("_meta") or {}
        version = self.headers.get("MCP-Protocol-Version")
        if version != meta.get("io.modelcontextprotocol/protocolVersion"):
            return error(400, -32020, "Header mismatch: MCP-Protocol-Version %r" % version)
        if version != MODERN:
            return error(400, -32022, "Unsupported protocol version",
                         {"supported": [MODERN], "requested": version})
        if self.headers.get("Mcp-Method") != method:
            return error(400, -32020, "Header mismatch: Mcp-Method")
        if method in ("tools/call", "prompts/get") and \
                decode_header(self.headers.get("Mcp-Name")) != params.get("name"):
            return error(400, -32020, "Header mismatch: Mcp-Name")
        if method == "server/discover":
            return result({"supportedVersions": [MODERN], "capabilities": {"tools": {}},
                           "_meta": {"io.modelcontextprotocol/serverInfo":
                                     {"name": "modern-fake", "version": "1.0"}}})
        if method == "tools/list":
            return result({"tools": MODERN_TOOLS, "ttlMs": 0, "cacheScope": "private"})
        if method != "tools/call":
            return error(404, -32601, "Method not found: %s" % method)
        name, args = params.get("name"), params.get("arguments") or {}
        if name == "region":
            for prop, hdr in (("region", "Region"), ("priority", "Priority"),
                              ("verbose", "Verbose")):
                want = args.get(prop)
                got = self.headers.get("Mcp-Param-" + hdr)
                if want is None and got is None:
                    continue
                want = json.dumps(want) if not isinstance(want, str) else want
                if got is None or decode_header(got) != want:
                    return error(400, -32020, "Header mismatch: Mcp-Param-%s %r" % (hdr, got))
        if name == "mismatch":
            return error(400, -32020, "Header mismatch: this server wants Mcp-Param-Nothing")
        if name == "streamed":
            self.record(msg, 200)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.close_connection = True
            self.end_headers()
            token = meta.get("progressToken")
            events = []
            if token is not None:
                events.append({"jsonrpc": "2.0", "method": "notifications/progress",
                               "params": {"progressToken": token, "progress": 1}})
            # a request on the stream: 2026-07-28 forbids it, a client drops it
            events.append({"jsonrpc": "2.0", "id": "srv-1", "method": "roots/list"})
            events.append({"jsonrpc": "2.0", "id": rid, "result": {
                "resultType": "complete", "content": [{"type": "text", "text": "streamed"}]}})
            self.wfile.write(b"".join(b"id: e%d\ndata: %s\n\n" % (i, json.dumps(e).encode())
                                      for i, e in enumerate(events)))
            return
        seen = sorted("%s=%s" % (k.lower(), v) for k, v in self.headers.items()
                      if k.lower().startswith("mcp-param-"))
        return result({"content": [{"type": "text", "text": json.dumps(
            {"args": args, "params": seen})}]})


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # mcpgate cutting an answer short is what some cases test


def test_hostile():
    f = Fixture("hostile")
    httpd = QuietServer(("127.0.0.1", 0), Hostile)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d/mcp" % httpd.server_address[1]
    try:
        f.write(server("bad", url, tools=("bad",)), config="line_max = 65536\n")
        c = f.start()
        c.initialize()
        wait_settled(f.state)
        c.request("tools/list")
        wait_settled(f.state)
        c.close()
        live = [e["live"] for e in events(f.audit(), "server.withheld")]
        f.write(server("bad", url, live[0] if live else None, tools=("bad",)),
                config="line_max = 65536\n")
        c = f.start()
        c.initialize()
        wait_settled(f.state)
        c.request("tools/list")
        cases = [("badjson", "not a JSON-RPC message"),
                 ("wrongtype", 'content type "text/html"'),
                 ("huge", "over 65536 bytes"),
                 ("status", "HTTP 500: boom? second line"),
                 ("nullid", "cannot read"),
                 ("otherid", "no response"),
                 ("ssehuge", "over 65536 bytes"),
                 ("sseend", "ended without the response")]
        for kind, want in cases:
            r = c.call("bad__bad", {"kind": kind})
            msg = r.get("error", {}).get("message", "")
            t.ok(want in msg, "hostile: %s is an error for that call (%s)" % (kind, msg[:120]), r)
        r = c.call("bad__bad", {"kind": "ssegarbage"})
        t.ok("result" in r and text_of(r) == "fine",
             "hostile: garbage events in a stream are dropped; the response still comes", r)
        r = c.call("bad__bad", {"kind": "fine"})
        t.ok("result" in r, "hostile: the server still works after all that", r)
        c.close()
    finally:
        httpd.shutdown()
        httpd.server_close()
    f.cleanup()


def modern_server():
    httpd = QuietServer(("127.0.0.1", 0), Modern)
    httpd.seen = []
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, "http://127.0.0.1:%d/mcp" % httpd.server_address[1]


def test_modern():
    f = Fixture("modern")
    httpd, url = modern_server()
    tools = ("echo", "region", "streamed", "mismatch", "scored")
    try:
        f.write(server("new", url, tools=tools))
        c = f.start()
        c.initialize()
        wait_settled(f.state)
        c.request("tools/list")
        wait_settled(f.state)
        c.close()
        live = [e["live"] for e in events(f.audit(), "server.withheld")]
        f.write(server("new", url, live[0] if live else None, tools=tools))
        httpd.seen.clear()
        c = f.start()
        c.initialize()
        wait_settled(f.state)
        names = tool_names(c.request("tools/list"))
        t.ok(names == ["new__echo", "new__region", "new__streamed", "new__mismatch"],
             "modern: the server's tools are offered, but not the one whose x-mcp-header is on a "
             "number", names)
        warned = re.search(r"server new: tool scored is left out of its tools/list: property "
                           r"score carries x-mcp-header \"Score\" but its type is \"number\"",
                           f.stderr_text())
        t.ok(warned, "modern: a warning names the server, the tool and the reason",
             f.stderr_text()[-2000:])
        r = c.call("new__echo", {"text": "hi"})
        t.ok("result" in r and json.loads(text_of(r)) == {"args": {"text": "hi"}, "params": []},
             "modern: a call is answered; a tool without x-mcp-header gets no Mcp-Param header", r)
        args = {"region": "us-west1", "priority": 42, "verbose": True, "query": "q",
                "where": {"zone": "Zürich "}}
        r = c.call("new__region", args)
        got = json.loads(text_of(r)) if "result" in r else {}
        t.ok(got.get("params") == ["mcp-param-priority=42", "mcp-param-region=us-west1",
                                   "mcp-param-verbose=true",
                                   "mcp-param-zone==?base64?WsO8cmljaCA=?="],
             "modern: each x-mcp-header argument goes in its Mcp-Param header, encoded as it "
             "needs (the nested one too); the unannotated one does not", r)
        r = c.call("new__region", {"region": "Hello, 世界", "query": "q"})
        t.ok("result" in r, "modern: a non-ASCII value goes in base64 and the server's check "
             "of header against body passes", r)
        before = len(httpd.seen)
        r = c.call("new__region", {"region": "x", "priority": 2 ** 53})
        msg = r.get("error", {}).get("message", "")
        t.ok("server new, tool region: argument priority goes in header Mcp-Param-Priority, so it "
             "must be an integer" in msg and len(httpd.seen) == before,
             "modern: an integer past JavaScript's safe range is refused, naming server and tool, "
             "and nothing is sent", (msg, httpd.seen[before:]))
        r = c.call("new__mismatch")
        msg = r.get("error", {}).get("message", "")
        t.ok(r.get("error", {}).get("code") == -32020 and "wants Mcp-Param-Nothing" in msg,
             "modern: the server's HeaderMismatch (HTTP 400) reaches the client as its own error",
             r)
        before = len(c.notifications)
        r = c.call("new__streamed", meta={"progressToken": "tok-1"})
        progress = [n for n in c.notifications[before:] if n["method"] == "notifications/progress"]
        t.ok("result" in r and text_of(r) == "streamed" and len(progress) == 1,
             "modern: an event stream's progress and result come through", (r, progress))
        time.sleep(0.3)
        c.close()
        seen = list(httpd.seen)
        posts = [x for x in seen if x["method"] == "POST"]
        methods = [x["body"]["method"] for x in posts]
        t.ok(methods and methods[0] == "server/discover" and "initialize" not in methods,
             "modern: server/discover first, then no initialize", methods)
        t.ok(all(x["method"] == "POST" for x in seen),
             "modern: no GET stream and no DELETE", [x["method"] for x in seen])
        t.ok(all("mcp-session-id" not in x["headers"] for x in seen),
             "modern: no request carries Mcp-Session-Id, though every answer gave one",
             [x["headers"] for x in seen if "mcp-session-id" in x["headers"]])
        t.ok(all("id" in x["body"] and "method" in x["body"] for x in posts),
             "modern: only requests are posted (no notifications, no answer to the server's "
             "request in the stream)", [x["body"] for x in posts])
        t.ok(all(x["headers"].get("mcp-protocol-version") == MODERN and
                 x["headers"].get("mcp-method") == x["body"]["method"] and
                 x["body"]["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == MODERN
                 for x in posts),
             "modern: every POST has MCP-Protocol-Version and Mcp-Method matching its body",
             [(x["headers"], x["body"]) for x in posts])
        calls = [x for x in posts if x["body"]["method"] == "tools/call"]
        t.ok(calls and all(x["headers"].get("mcp-name") == x["body"]["params"]["name"]
                           for x in calls) and all(x["status"] in (200, 400) for x in calls),
             "modern: every tools/call has Mcp-Name, and no check of the server's failed but "
             "the one it was made to fail", [(x["status"], x["headers"]) for x in calls])
        t.ok([x["body"]["params"]["name"] for x in calls if x["status"] == 400] == ["mismatch"],
             "modern: the server refused no header of mcpgate's",
             [(x["status"], x["body"]) for x in calls])
    finally:
        httpd.shutdown()
        httpd.server_close()
    f.cleanup()


def test_modern_version_retry():
    """A 2026-07-28 server that refuses the version it then names as
    supported (as the conformance suite's request-metadata does once) is
    asked once more, not taken for an old one."""
    f = Fixture("modern-retry")
    httpd, url = modern_server()
    refused = []

    class Once(Modern):
        def do_POST(self):
            if not refused:
                refused.append(True)
                length = int(self.headers.get("Content-Length", "0"))
                msg = json.loads(self.rfile.read(length))
                self.record(msg, 400)
                return self.reply(400, {"jsonrpc": "2.0", "id": msg.get("id"), "error": {
                    "code": -32022, "message": "Unsupported protocol version",
                    "data": {"supported": [MODERN], "requested": MODERN}}})
            Modern.do_POST(self)
    httpd.RequestHandlerClass = Once
    try:
        f.write(server("new", url, tools=("echo",)))
        c = f.start()
        c.initialize()
        wait_settled(f.state)
        c.request("tools/list")
        wait_settled(f.state)
        c.close()
        methods = [(x["body"] or {}).get("method") for x in httpd.seen]
        statuses = [x["status"] for x in httpd.seen]
        t.ok(methods[:3] == ["server/discover", "server/discover", "tools/list"] and
             statuses[:2] == [400, 200] and "initialize" not in methods,
             "modern: a -32022 that lists the version asked is followed by the same request "
             "once more, and the server stays modern", list(zip(methods, statuses)))
    finally:
        httpd.shutdown()
        httpd.server_close()
    f.cleanup()


class Lenient(BaseHTTPRequestHandler):
    """A server of the old era without sessions that answers {} to any
    method it does not know, server/discover included (as the 0.1.16
    conformance suite's mock does)."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        msg = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        self.server.seen.append(msg.get("method"))
        if msg.get("id") is None:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        res = {}
        if msg["method"] == "initialize":
            res = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                   "serverInfo": {"name": "lenient", "version": "0"}}
        elif msg["method"] == "tools/list":
            res = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
        data = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": res}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_old_answers_anything():
    f = Fixture("lenient")
    httpd = QuietServer(("127.0.0.1", 0), Lenient)
    httpd.seen = []
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d/mcp" % httpd.server_address[1]
    try:
        f.write(server("old", url, tools=("echo",)))
        c = f.start()
        c.initialize()
        wait_settled(f.state)
        c.request("tools/list")
        wait_settled(f.state)
        c.close()
        live = [e["live"] for e in events(f.audit(), "server.withheld")]
        t.ok(httpd.seen[:3] == ["server/discover", "initialize", "notifications/initialized"]
             and live, "lenient: a {} to server/discover is no DiscoverResult: the server is "
             "of the old era, initialized and listed", (httpd.seen, f.stderr_text()[-1500:]))
    finally:
        httpd.shutdown()
        httpd.server_close()
    f.cleanup()


def main():
    global MANIFEST
    if not os.path.exists(MCP_HTTP):
        print("ok 1 # SKIP %s is not built (make fakes)" % MCP_HTTP)
        print("0 passed, 0 failed")
        return 77
    MANIFEST = learn_manifest()
    for test in (test_plain_http_refused, test_json, test_sse, test_expiry, test_redirect,
                 test_credential, test_timeout, test_down, test_hostile, test_modern,
                 test_modern_version_retry, test_old_answers_anything):
        try:
            test()
        except Exception as e:  # a broken case is a failure, and the rest still run
            t.ok(False, "%s raised %s: %s" % (test.__name__, type(e).__name__, e))
        while LIVE:
            LIVE.pop().abandon()
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
