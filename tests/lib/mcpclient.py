"""A small scripted MCP client over stdio for mcpgate's tests and benchmarks.

It starts a command (usually `mcpgate serve`), speaks newline-delimited
JSON-RPC on its stdin/stdout, and keeps whatever notifications arrive while
waiting for an answer. Every wait has a deadline.
"""
import json
import os
import select
import subprocess
import time


class Timeout(Exception):
    pass


class Client:
    def __init__(self, argv, env=None, cwd=None, stderr=None):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=stderr, env=env, cwd=cwd)
        self.buf = b""
        self.next_id = 0
        self.notifications = []
        self.requests = []  # requests the gateway sent to us
        self.received = []  # every line the gateway wrote, as text

    def send(self, obj):
        self.proc.stdin.write((json.dumps(obj) + "\n").encode())
        self.proc.stdin.flush()

    def read_message(self, timeout=30.0):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Timeout("no message within %.1f s" % timeout)
            r, _, _ = select.select([self.proc.stdout], [], [], left)
            if not r:
                continue
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        self.received.append(line.decode("utf-8", "replace"))
        return json.loads(line)

    def request(self, method, params=None, timeout=30.0):
        """Send a request; return its response (result or error object)."""
        self.next_id += 1
        rid = self.next_id
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.wait_for(rid, timeout)

    def wait_for(self, rid, timeout=30.0):
        deadline = time.monotonic() + timeout
        while True:
            msg = self.read_message(max(0.0, deadline - time.monotonic()))
            if msg is None:
                raise EOFError("the gateway closed its output")
            if "method" in msg and "id" in msg:
                self.requests.append(msg)
            elif "method" in msg:
                self.notifications.append(msg)
            elif msg.get("id") == rid:
                return msg

    def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    def initialize(self, capabilities=None, version="2025-11-25"):
        r = self.request("initialize", {"protocolVersion": version,
                                        "capabilities": capabilities or {},
                                        "clientInfo": {"name": "mcpgate-tests", "version": "1"}})
        self.notify("notifications/initialized")
        return r

    def call(self, name, arguments=None, meta=None, timeout=30.0):
        params = {"name": name, "arguments": arguments or {}}
        if meta is not None:
            params["_meta"] = meta
        return self.request("tools/call", params, timeout)

    def close(self, timeout=30.0):
        """End input; return the exit status."""
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise Timeout("the gateway did not end within %.1f s of end of input" % timeout)


def text_of(response):
    """The text of a tools/call result's first content item."""
    return response["result"]["content"][0]["text"]


class Tap:
    """TAP lines and the closing 'N passed, N failed'."""

    def __init__(self):
        self.n = self.passed = self.failed = 0

    def ok(self, cond, name, detail=None):
        self.n += 1
        if cond:
            self.passed += 1
            print("ok %d - %s" % (self.n, name), flush=True)
        else:
            self.failed += 1
            print("not ok %d - %s" % (self.n, name), flush=True)
            if detail is not None:
                for line in str(detail).splitlines()[:20]:
                    print("#   " + line, flush=True)
        return cond

    def skip(self, name, why):
        self.n += 1
        print("ok %d - %s # SKIP %s" % (self.n, name, why), flush=True)

    def done(self):
        print("1..%d" % self.n)
        print("%d passed, %d failed" % (self.passed, self.failed))
        return 0 if self.failed == 0 else 1
