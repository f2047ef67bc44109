"""A client of `mcpgate serve --listen`: HTTP with the listener's token,
the answers of POSTs (JSON or event streams), the probe's state tool."""
import http.client
import os
import json
import re
import signal
import socket
import subprocess
import time

ACCEPT = "application/json, text/event-stream"


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=30):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.unix_path)


def sse_messages(text):
    """The JSON-RPC messages of an event stream's text"""
    out = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        data = [line[5:].lstrip() for line in block.split("\n") if line.startswith("data:")]
        if data and "".join(data).strip():
            out.append(json.loads("\n".join(data)))
    return out


class Listener:
    """mcpgate serve --listen ADDRESS in a Fixture"""

    def __init__(self, argv, env, log_dir, state_dir, address="127.0.0.1:0", cwd=None,
                 timeout=30):
        """argv: `mcpgate serve ...` without --listen; env its environment"""
        self.log_path = os.path.join(log_dir, "listen-stderr.log")
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(list(argv) + ["--listen", address], env=env, cwd=cwd,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self.log)
        self.port = None
        self.unix = address[5:] if address.startswith("unix:") else None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            m = re.search(r"listening on (http://127\.0\.0\.1:(\d+)/mcp|unix:)", self.stderr())
            if m:
                self.port = int(m.group(2)) if m.group(2) else None
                break
            time.sleep(0.05)
        self.token_path = os.path.join(state_dir, "mcpgate", "listener-token")
        self.token = open(self.token_path).read().strip() if os.path.exists(self.token_path) else ""
        self.next_id = 100

    def stderr(self):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path, errors="replace") as fh:
            return fh.read()

    def conn(self, timeout=30):
        if self.unix:
            return UnixHTTPConnection(self.unix, timeout=timeout)
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def host(self):
        return "localhost" if self.unix else "127.0.0.1:%d" % self.port

    def http(self, method, path="/mcp", body=None, sid=None, token=True, host=None, headers=None,
             accept=ACCEPT, timeout=30):
        """(status, headers (lower-case names), body text)"""
        c = self.conn(timeout)
        c.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        c.putheader("Host", host or self.host())
        if token is True:
            c.putheader("Authorization", "Bearer " + self.token)
        elif token:
            c.putheader("Authorization", token)
        if accept:
            c.putheader("Accept", accept)
        if sid:
            c.putheader("Mcp-Session-Id", sid)
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            c.putheader("Content-Type", "application/json")
            c.putheader("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            c.putheader(k, v)
        c.endheaders(data)
        r = c.getresponse()
        text = r.read().decode("utf-8", "replace")
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        c.close()
        return r.status, hdrs, text

    def post(self, msg, sid=None, **kw):
        """POST one request: (status, its answer or None, every message, headers)"""
        status, hdrs, text = self.http("POST", body=msg, sid=sid, **kw)
        if hdrs.get("content-type", "").startswith("text/event-stream"):
            msgs = sse_messages(text)
        else:
            msgs = [json.loads(text)] if text else []
        answer = [m for m in msgs if m.get("id") == msg.get("id") and "method" not in m]
        return status, (answer[0] if answer else None), msgs, hdrs

    def rpc(self, sid, method, params=None, **kw):
        """a request's answer (from JSON or the stream), with every message"""
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        return self.post(msg, sid=sid, **kw)

    def modern(self, method, params=None, rid=None, headers=None, capabilities=None, **kw):
        """a 2026-07-28 request without a session: _meta and the mirrored headers
        (modern_headers) made from the body; headers= adds or overrides them (a
        value None leaves that header out). (status, answer, messages, headers)"""
        if rid is None:
            self.next_id += 1
            rid = self.next_id
        msg, hdrs = modern_request(method, params, rid, headers, capabilities)
        return self.post(msg, headers=hdrs, **kw)

    def modern_call(self, tool, args=None, **kw):
        return self.modern("tools/call", {"name": tool, "arguments": args or {}}, **kw)

    def open_post(self, msg, headers=None, sid=None):
        """POST msg; (connection, response) once the response's headers came, its
        body (a stream) still to read while other requests go on"""
        c = self.conn()
        h = {"Authorization": "Bearer " + self.token, "Content-Type": "application/json",
             "Accept": ACCEPT}
        if sid:
            h["Mcp-Session-Id"] = sid
        h.update(headers or {})
        c.request("POST", "/mcp", json.dumps(msg).encode(), h)
        return c, c.getresponse()

    def initialize(self, name="client", capabilities=None):
        status, answer, _, hdrs = self.rpc(None, "initialize", {
            "protocolVersion": "2025-11-25", "capabilities": capabilities or {},
            "clientInfo": {"name": name, "version": "1"}})
        sid = hdrs.get("mcp-session-id")
        if sid:
            self.http("POST", body={"jsonrpc": "2.0", "method": "notifications/initialized"},
                      sid=sid)
        return status, sid, answer

    def call(self, sid, tool, args=None, **kw):
        return self.rpc(sid, "tools/call", {"name": tool, "arguments": args or {}}, **kw)

    def metrics(self):
        status, _, text = self.http("GET", "/metrics", accept="text/plain")
        return status, text

    def metric(self, name):
        """the sum of every series named name"""
        _, text = self.metrics()
        total = 0.0
        for line in text.splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                total += float(line.rsplit(" ", 1)[1])
        return total

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            status = self.proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            status = self.proc.wait()
        self.log.close()
        return status


MODERN = "2026-07-28"


def modern_params(params=None, capabilities=None):
    """params with the _meta every 2026-07-28 request carries (its own _meta kept)"""
    p = dict(params or {})
    meta = dict(p.get("_meta", {}))
    meta.setdefault("io.modelcontextprotocol/protocolVersion", MODERN)
    meta.setdefault("io.modelcontextprotocol/clientInfo", {"name": "modern", "version": "1"})
    meta.setdefault("io.modelcontextprotocol/clientCapabilities", capabilities or {})
    p["_meta"] = meta
    return p


def modern_request(method, params=None, rid=1, headers=None, capabilities=None):
    """(message, headers) of a 2026-07-28 request: headers= adds to or overrides
    modern_headers(); a value None leaves that header out"""
    msg = {"jsonrpc": "2.0", "id": rid, "method": method,
           "params": modern_params(params, capabilities)}
    hdrs = modern_headers(msg)
    hdrs.update(headers or {})
    return msg, {k: v for k, v in hdrs.items() if v is not None}


def read_events(resp, count):
    """at least count messages of an event stream's response, as they come"""
    buf = b""
    while sum(1 for block in buf.split(b"\n\n")[:-1] if b"data:" in block) < count:
        chunk = resp.read1(65536)
        if not chunk:
            break
        buf += chunk
    return buf


def modern_headers(msg):
    """the headers 2026-07-28's HTTP binding mirrors from a request's body"""
    params = msg.get("params", {})
    hdrs = {"MCP-Protocol-Version":
            params.get("_meta", {}).get("io.modelcontextprotocol/protocolVersion", MODERN),
            "Mcp-Method": msg["method"]}
    name = params.get("uri" if msg["method"] == "resources/read" else "name")
    if msg["method"] in ("tools/call", "prompts/get", "resources/read") and name is not None:
        hdrs["Mcp-Name"] = name
    return hdrs


def wait_until(cond, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    return cond()


def text_of(answer):
    return answer["result"]["content"][0]["text"] if answer and "result" in answer else None


def error_of(answer):
    """a tools/call's error text: a JSON-RPC error's message or an isError result's"""
    if answer and "error" in answer:
        return answer["error"]["message"]
    if answer and answer.get("result", {}).get("isError"):
        return text_of(answer)
    return None


def state_of(lst, sid, tool, **kw):
    """the probe's state tool through session sid: (its JSON or None, the answer)"""
    _, ans, _, _ = lst.call(sid, tool, **kw)
    try:
        return json.loads(text_of(ans)), ans
    except (TypeError, ValueError):
        return None, ans
