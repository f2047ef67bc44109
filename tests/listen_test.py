#!/usr/bin/env python3
"""mcpgate serve --listen against the fake runtime: MCP over streamable HTTP.

Each case starts `mcpgate serve --listen 127.0.0.1:0` (or a unix socket) in a
gwtest Fixture and speaks HTTP to it with http.client or raw sockets. Nothing
here measures time: where an order matters, the test waits for a state (a
metric, a record) with a deadline, and then checks what came first.
Environment: MCPGATE, FAKES (as serve_test.py).
"""
import base64
import glob
import http.client
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from mcpclient import Tap  # noqa: E402

from gwtest import Fixture, learn_probe_hash  # noqa: E402
import gwtest  # noqa: E402
import listenclient  # noqa: E402
from listenclient import (ACCEPT, MODERN, error_of, modern_request, read_events,  # noqa: E402
                          sse_messages, state_of, text_of, wait_until)

TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
t = Tap()
PROBE_HASH = None


def server(name, tools_on=("echo",), args=None, extra=""):
    return gwtest.server(name, PROBE_HASH, tools_on, args, extra)


def Listener(f, address="127.0.0.1:0", extra=()):
    """mcpgate serve --listen ADDRESS in a Fixture"""
    return listenclient.Listener(f.argv(*extra), f.env(), f.dir, f.state, address)


def session_files(f):
    out = {}
    for path in glob.glob(os.path.join(f.state, "mcpgate", "sessions", "*.jsonl")):
        with open(path) as fh:
            recs = [json.loads(line) for line in fh]
        names = [r.get("client") for r in recs if r["event"] == "client.initialize"]
        out[path] = (names, recs)
    return out


def test_two_clients():
    f = Fixture(server("alpha", ("echo",)))
    lst = Listener(f)
    t.ok(lst.port is not None, "serve --listen 127.0.0.1:0 says where it listens", lst.stderr())
    st_a, sid_a, init_a = lst.initialize("client-a")
    st_b, sid_b, init_b = lst.initialize("client-b")
    t.ok(st_a == 200 and st_b == 200 and init_a["result"]["protocolVersion"] == "2025-11-25",
         "initialize over POST is answered", (st_a, init_a))
    t.ok(sid_a and sid_b and sid_a != sid_b and re.fullmatch(r"[0-9a-f]{32}", sid_a),
         "each client its own Mcp-Session-Id (128 bits, hex)", (sid_a, sid_b))
    _, ans_a, _, _ = lst.call(sid_a, "alpha__echo", {"text": "from a"})
    _, ans_b, _, _ = lst.call(sid_b, "alpha__echo", {"text": "from b"})
    t.ok(text_of(ans_a) == "from a" and text_of(ans_b) == "from b",
         "each client's call reaches its server and returns to it", (ans_a, ans_b))
    status, listing, _, _ = lst.rpc(sid_a, "tools/list")
    t.ok(status == 200 and [x["name"] for x in listing["result"]["tools"]] == ["alpha__echo"],
         "tools/list over HTTP", listing)
    files = session_files(f)
    by_client = {tuple(names): recs for names, recs in files.values()}
    t.ok(len(files) == 2 and ("client-a",) in by_client and ("client-b",) in by_client,
         "each client session has an audit file of its own", list(files.values()))
    calls_a = [r for r in by_client.get(("client-a",), []) if r["event"] == "tool.call"]
    t.ok(len(calls_a) == 1 and calls_a[0]["outcome"] == "ok",
         "a's audit file holds a's call only", calls_a)
    names = sorted(c for c in f.containers())
    t.ok(len(names) == 2 and len({n.rsplit("-", 1)[1] for n in names}) == 2,
         "each client session has containers of its own", names)
    st, _, body = lst.http("POST", body={"jsonrpc": "2.0", "method": "notifications/x"}, sid=sid_a)
    t.ok(st == 202 and body == "", "a notification POSTed gets 202 and no body", (st, body))
    st, _, body = lst.http("POST", body={"jsonrpc": "2.0", "id": 7, "method": "tools/list"})
    t.ok(st == 400 and "Mcp-Session-Id" in body, "no Mcp-Session-Id on a request: 400", (st, body))
    st, _, body = lst.http("POST", body={"jsonrpc": "2.0", "id": 7, "method": "tools/list"},
                           sid="0" * 32)
    t.ok(st == 404 and "no such session" in body, "an unknown session: 404", (st, body))
    st, _, _ = lst.http("GET", sid="f" * 32, accept="text/event-stream")
    t.ok(st == 404, "an unknown session's GET: 404", st)
    st, _, body = lst.http("POST", body=b"{not json", sid=sid_a)
    t.ok(st == 400 and "-32700" in body, "a body that is not JSON: 400 with a parse error", body)
    st, _, body = lst.http("POST", body={"jsonrpc": "2.0", "id": 8, "method": "tools/list"},
                           sid=sid_a, headers={"MCP-Protocol-Version": "1999-01-01"})
    t.ok(st == 400 and "1999-01-01" in body, "an unsupported MCP-Protocol-Version: 400", body)
    st, _, _ = lst.http("DELETE", sid=sid_a)
    t.ok(st == 204, "DELETE ends a session", st)
    st, _, _ = lst.rpc(sid_a, "tools/list")[:3]
    t.ok(st == 404, "its id then gets 404", st)
    _, ans_b, _, _ = lst.call(sid_b, "alpha__echo", {"text": "still"})
    t.ok(text_of(ans_b) == "still", "the other session goes on", ans_b)
    ended = wait_until(lambda: [r for n, (names, recs) in session_files(f).items()
                                if names == ["client-a"] for r in recs
                                if r["event"] == "session.end"])
    t.ok(bool(ended), "the deleted session ended (session.end in its audit file)")
    status = lst.stop()
    t.ok(status == 0, "SIGTERM ends the listener with status 0", (status, lst.stderr()[-2000:]))
    ends = [r for names, recs in session_files(f).values() for r in recs
            if r["event"] == "session.end"]
    t.ok(len(ends) == 2, "every session ended, each with session.end", ends)
    t.ok(f.containers() == [], "and removed its containers", f.containers())
    f.cleanup()


def test_security():
    f = Fixture(server("alpha"))
    lst = Listener(f)
    mode = stat.S_IMODE(os.stat(lst.token_path).st_mode)
    t.ok(re.fullmatch(r"[0-9a-f]{64}", lst.token) and mode == 0o600,
         "the token is made at first use: 64 hex digits, its file 0600", (lst.token, oct(mode)))
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "x", "version": "1"}}}
    st, hdrs, text = lst.http("POST", body=body, token=False)
    t.ok(st == 401 and hdrs.get("www-authenticate", "").startswith("Bearer")
         and json.loads(text)["error"]["message"].startswith("this listener needs"),
         "no token: 401, WWW-Authenticate: Bearer, a JSON-RPC error naming it", (st, hdrs, text))
    st, _, text = lst.http("POST", body=body, token="Bearer " + "0" * 64)
    t.ok(st == 401 and "not this listener's" in text, "a wrong token: 401", (st, text))
    st, _, _ = lst.http("GET", "/metrics", token=False)
    t.ok(st == 401, "/metrics needs the token too", st)
    st, _, _ = lst.http("GET", "/health", token=False)
    t.ok(st == 401, "/health needs the token too", st)
    st, _, text = lst.http("POST", body=body, host="evil.com:%d" % lst.port)
    t.ok(st == 403 and "Host" in json.loads(text)["error"]["message"],
         "DNS rebinding: Host evil.com is refused with 403 and says why", (st, text))
    st, _, text = lst.http("POST", body=body, host="evil.com")
    t.ok(st == 403, "Host evil.com without a port: 403", st)
    st, _, text = lst.http("POST", body=body, headers={"Origin": "http://evil.com"})
    t.ok(st == 403 and "Origin" in json.loads(text)["error"]["message"],
         "Origin http://evil.com is refused with 403", (st, text))
    st, _, text = lst.http("POST", body=body, headers={"Origin": "http://localhost:%d" % lst.port})
    t.ok(st == 200, "an Origin of this listener is taken", (st, text))
    st, _, text = lst.http("GET", "/nothing")
    t.ok(st == 404, "another path: 404 (after the checks)", st)
    st, _, text = lst.http("GET", "/nothing", token=False)
    t.ok(st == 401, "another path without the token: 401, nothing learnt", st)
    st, _, text = lst.http("PUT", body=body)
    t.ok(st == 405, "PUT on /mcp: 405", st)
    st, _, text = lst.http("POST", body=body, accept="text/html")
    t.ok(st == 406, "an Accept without JSON or an event stream: 406", st)
    st, _, text = lst.http("GET", "/health")
    t.ok(st == 200 and json.loads(text)["status"] == "ok", "/health", text)
    token = lst.token
    lst.stop()
    lst = Listener(f)
    t.ok(lst.token == token and lst.port is not None, "the token file is reused by the next run")
    lst.stop()

    r = f.run("--listen", "192.0.2.1:8080")
    t.ok(r.returncode == 2 and "--listen-any" in r.stderr,
         "a non-loopback address is refused without --listen-any", r.stderr)
    r = f.run("--listen", "0.0.0.0:8080", "--listen-any")
    t.ok(r.returncode == 2 and "every address" in r.stderr, "0.0.0.0 is refused even with it",
         r.stderr)

    sock = os.path.join(f.dir, "mcpgate.sock")
    lst = Listener(f, "unix:" + sock)
    mode = stat.S_IMODE(os.stat(sock).st_mode) if os.path.exists(sock) else None
    t.ok(stat.S_ISSOCK(os.stat(sock).st_mode) and mode == 0o600, "the unix socket is 0600",
         oct(mode or 0))
    st, sid, init = lst.initialize("unix-client")
    t.ok(st == 200 and sid, "MCP over the unix socket", (st, init))
    _, ans, _, _ = lst.call(sid, "alpha__echo", {"text": "over unix"})
    t.ok(text_of(ans) == "over unix", "a call over the unix socket", ans)
    st, _, _ = lst.http("GET", "/health", token=False)
    t.ok(st == 401, "the unix socket needs the token too", st)
    lst.stop()
    t.ok(not os.path.exists(sock), "the socket is removed at the end")
    f.cleanup()


def test_limits():
    f = Fixture(server("alpha", ("echo", "slow")),
                config="listen_clients = 1\nlisten_requests = 1\nlisten_body_max = 1024\n"
                       "listen_idle_timeout = 1\n")
    lst = Listener(f)
    st, sid, _ = lst.initialize("first")
    st2, sid2, _ = lst.initialize("second")
    _, _, text = lst.http("POST", body={"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                         "params": {}})
    t.ok(st == 200 and st2 == 503 and sid2 is None and "listen_clients" in text,
         "one client more than listen_clients: 503 naming the key", (st, st2, text))
    st3, _, msgs3, _ = lst.modern("server/discover")
    t.ok(st3 == 503 and "listen_clients" in json.dumps(msgs3),
         "the modern session counts against listen_clients like any session", (st3, msgs3))
    # a call in flight: a second request is over listen_requests
    c = lst.conn()
    slow = json.dumps({"jsonrpc": "2.0", "id": 900, "method": "tools/call",
                       "params": {"name": "alpha__slow", "arguments": {"ms": 60000}}}).encode()
    c.request("POST", "/mcp", slow, {"Authorization": "Bearer " + lst.token,
                                     "Content-Type": "application/json", "Accept": ACCEPT,
                                     "Mcp-Session-Id": sid})
    got = {}

    def second():
        st, ans, _, _ = lst.rpc(sid, "tools/list")
        got["st"] = st
        return st != 200 or None
    wait_until(second, 10)
    t.ok(got.get("st") == 429, "a request over listen_requests in flight: 429", got)
    st, _, text = lst.http("POST", body=b'{"jsonrpc":"2.0","method":"x","params":{"p":"'
                           + b"a" * 2048 + b'"}}', sid=sid)
    t.ok(st == 413 and "listen_body_max" in text, "a body over listen_body_max: 413", (st, text))
    c.close()  # a client gone while its call runs: the listener notices, nothing is in flight
    # idle: with nothing in flight and no stream, the session ends; then 404
    # (watched through /health: a request of the session's own would be activity)
    ended = wait_until(lambda: json.loads(lst.http("GET", "/health")[2])["sessions"] == 0, 60)
    t.ok(ended and lst.rpc(sid, "ping")[0] == 404,
         "a session idle past listen_idle_timeout ends: its id gets 404")
    st, sid3, _ = lst.initialize("third")
    t.ok(st == 200 and sid3, "and its place is free for another client", st)
    lst.stop()
    f.cleanup()


def test_streams_and_metrics():
    f = Fixture(server("alpha", ("echo", "progress", "log")))
    lst = Listener(f)
    _, sid, _ = lst.initialize("streams")
    lst.next_id += 1
    st, hdrs, text = lst.http("POST", body={
        "jsonrpc": "2.0", "id": lst.next_id, "method": "tools/call",
        "params": {"name": "alpha__progress", "arguments": {"steps": 3, "ms": 1},
                   "_meta": {"progressToken": "tok-1"}}}, sid=sid)
    msgs = sse_messages(text) if hdrs.get("content-type", "").startswith("text/event-stream") else []
    kinds = [m.get("method", "answer") for m in msgs]
    t.ok(st == 200 and kinds == ["notifications/progress"] * 3 + ["answer"]
         and msgs[-1]["id"] == lst.next_id,
         "progress before the answer: the POST is answered with an event stream, "
         "progress first, then the answer", (st, hdrs, text[:500]))
    _, ans, msgs, hdrs = lst.call(sid, "alpha__echo", {"text": "plain"})
    t.ok(hdrs.get("content-type") == "application/json" and text_of(ans) == "plain",
         "an answer that comes first is plain JSON", hdrs)
    _, ans, _, hdrs = lst.call(sid, "alpha__echo", {"text": "sse only"}, accept="text/event-stream")
    t.ok(hdrs.get("content-type") == "text/event-stream" and text_of(ans) == "sse only",
         "a client that takes only event streams gets one", hdrs)
    # a notification with no request of its own goes to the GET stream
    g = lst.conn(timeout=30)
    g.request("GET", "/mcp", headers={"Authorization": "Bearer " + lst.token,
                                      "Accept": "text/event-stream", "Mcp-Session-Id": sid})
    gr = g.getresponse()
    t.ok(gr.status == 200 and gr.getheader("Content-Type") == "text/event-stream",
         "GET opens the session's event stream", gr.status)
    _, ans, msgs, _ = lst.call(sid, "alpha__log", {"level": "info", "text": "to the stream"})
    buf = b""
    deadline = time.monotonic() + 30
    while b"to the stream" not in buf and time.monotonic() < deadline:
        chunk = gr.read1(65536)
        if not chunk:
            break
        buf += chunk
    got = sse_messages(buf.decode())
    t.ok(text_of(ans) == "logged" and any(m.get("method") == "notifications/message" and
                                           m["params"]["data"] == "to the stream" for m in got)
         and not any(m.get("method") == "notifications/message" for m in msgs),
         "a server's log message goes to the GET stream, not to the call's POST",
         (ans, got, msgs))
    g.close()

    _, ans, _, _ = lst.call(sid, "alpha__nosuch")
    st, text = lst.metrics()
    lines = [x for x in text.splitlines() if x]
    sample = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="[^"\\\n]*",?)*\})? '
                        r'-?[0-9.e+Inf]+$')
    bad = [x for x in lines if not x.startswith("#") and not sample.match(x)]
    t.ok(st == 200 and lines and not bad, "/metrics is Prometheus text, every line parsable",
         bad[:5])
    t.ok(lst.metric("mcpgate_sessions_open") == 1 and lst.metric("mcpgate_sessions_total") == 1,
         "sessions open and begun", text[:400])
    t.ok('mcpgate_tool_calls_total{server="alpha",tool="echo",outcome="ok"} 2' in text,
         "calls counted by server, tool and outcome", text)
    t.ok(re.search(r'mcpgate_tool_call_duration_seconds_count\{server="alpha"\} [1-9]', text)
         and 'le="+Inf"' in text, "call latency as a histogram")
    t.ok('mcpgate_servers{server="alpha",state="ready"} 1' in text, "servers by state")
    t.ok(re.search(r'mcpgate_http_requests_total\{code="200"\} [1-9]', text),
         "requests by status")
    lst.stop()
    f.cleanup()


def test_slow_client():
    """a client that never reads its stream holds its own session, never another's"""
    f = Fixture(server("alpha", ("echo", "log")))
    lst = Listener(f)
    _, sid_a, _ = lst.initialize("slow")
    # a's GET stream, never read, with a small receive buffer
    slow = socket.create_connection(("127.0.0.1", lst.port))
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    slow.sendall(("GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
                  "Accept: text/event-stream\r\nMcp-Session-Id: %s\r\n\r\n"
                  % (lst.port, lst.token, sid_a)).encode())
    wait_until(lambda: lst.metric("mcpgate_streams_open") >= 1, 10)
    # log calls, each sending a notification of 256 KiB to that stream
    big = "x" * (256 << 10)
    answered = []
    for i in range(40):
        if lst.metric("mcpgate_sessions_blocked") >= 1:
            break
        c = lst.conn(timeout=30)
        lst.next_id += 1
        c.request("POST", "/mcp", json.dumps({
            "jsonrpc": "2.0", "id": lst.next_id, "method": "tools/call",
            "params": {"name": "alpha__log", "arguments": {"level": "info", "text": big}}}),
            {"Authorization": "Bearer " + lst.token, "Content-Type": "application/json",
             "Accept": "application/json", "Mcp-Session-Id": sid_a})
        c.sock.settimeout(2)
        try:
            answered.append(json.loads(c.getresponse().read()))
        except (socket.timeout, TimeoutError):
            pass  # blocked behind the full stream: what this case builds up to
        c.close()
    blocked = wait_until(lambda: lst.metric("mcpgate_sessions_blocked") >= 1, 30)
    t.ok(blocked, "a client that does not read its stream: its session's output waits "
         "(mcpgate_sessions_blocked)", len(answered))
    # meanwhile another client initializes and calls, and is answered
    st, sid_b, _ = lst.initialize("fast")
    _, ans_b, _, _ = lst.call(sid_b, "alpha__echo", {"text": "not held up"})
    still = lst.metric("mcpgate_sessions_blocked") >= 1
    t.ok(st == 200 and text_of(ans_b) == "not held up" and still,
         "another client's session starts and its call is answered while the slow one "
         "is still blocked", (st, ans_b, still))
    # the slow client reads at last: its stream and its session go on
    slow.settimeout(5)
    got = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if lst.metric("mcpgate_sessions_blocked") == 0 and got.count(b"notifications/message") \
                >= len(answered) + 1:
            break
        try:
            chunk = slow.recv(1 << 20)
        except (socket.timeout, TimeoutError):
            continue
        if not chunk:
            break
        got += chunk
    t.ok(lst.metric("mcpgate_sessions_blocked") == 0 and got.count(b'"level":"info"') >= 1,
         "once it reads, the stream drains and the session goes on",
         (lst.metric("mcpgate_sessions_blocked"), got.count(b"notifications/message")))
    _, ans_a, _, _ = lst.call(sid_a, "alpha__echo", {"text": "a again"})
    t.ok(text_of(ans_a) == "a again", "and the slow client's session answers again", ans_a)
    slow.close()
    lst.stop()
    f.cleanup()


def crash(lst):
    """the sanitizer's report in the listener's stderr (from its first line), else its tail"""
    text = lst.stderr()
    at = text.find("ERROR: AddressSanitizer")
    return text[at:] if at >= 0 else text[-2000:]


def test_many_ends():
    """many sessions ending at once: a session whose thread is seen ending
    before the end of its output is freed with that end, and nothing of it
    is touched after (bench/listen.py's 10 clients crashed the listener so)"""
    f = Fixture(server("alpha", ("echo",)))
    lst = Listener(f)
    rounds, n = 3, 12
    for round_ in range(rounds):
        sids = [lst.initialize("end-%d-%d" % (round_, i))[1] for i in range(n)]
        for i, sid in enumerate(sids):  # each session's server started, to be stopped
            lst.call(sid, "alpha__echo", {"text": "c%d" % i})
        # every DELETE sent before any answer is read: the sessions end together
        conns = []
        for sid in sids:
            c = lst.conn()
            c.request("DELETE", "/mcp", headers={"Authorization": "Bearer " + lst.token,
                                                 "Mcp-Session-Id": sid})
            conns.append(c)
        codes = []
        for c in conns:
            try:
                codes.append(c.getresponse().status)
            except (OSError, http.client.HTTPException) as e:
                codes.append(type(e).__name__)
            c.close()

        def all_ended():
            if lst.proc.poll() is not None:
                return True
            try:
                return json.loads(lst.http("GET", "/health")[2])["sessions"] == 0
            except (OSError, http.client.HTTPException, ValueError):
                return False
        ended = wait_until(all_ended, 60)
        if not t.ok(all(s is not None for s in sids) and codes == [204] * n and ended
                    and lst.proc.poll() is None,
                    "round %d: %d sessions DELETEd at once all end, and the listener goes on"
                    % (round_ + 1, n), "%s, status %s\n%s" % (codes, lst.proc.poll(), crash(lst))):
            break
    status = lst.stop()
    t.ok(status == 0, "then SIGTERM ends it with status 0", "%s\n%s" % (status, crash(lst)))
    ends = [r for r in f.audit() if r["event"] == "session.end"]
    t.ok(len(ends) == rounds * n, "every session ended, each with session.end", len(ends))
    t.ok(f.containers() == [], "and removed its containers", f.containers())
    f.cleanup()


def find_sdk():
    for sub in ("everything", "clients"):
        d = os.path.join(TOP, "build", "e2e", sub, "node_modules")
        if os.path.exists(os.path.join(d, "@modelcontextprotocol", "sdk", "package.json")):
            return d
    return None


def test_sdk_client():
    modules = find_sdk()
    if modules is None or shutil.which("node") is None:
        t.skip("the TypeScript SDK's StreamableHTTPClientTransport through the listener",
               "no build/e2e/{everything,clients}/node_modules with @modelcontextprotocol/sdk")
        return
    f = Fixture(server("alpha", ("echo",)))
    lst = Listener(f)
    r = subprocess.run(["node", os.path.join(TOP, "tests", "e2e", "http_client.mjs"),
                        "--url", "http://127.0.0.1:%d/mcp" % lst.port, "--token-file",
                        lst.token_path, "--modules", modules],
                       capture_output=True, text=True, timeout=120)
    for line in r.stdout.splitlines():
        print("# sdk: " + line)
    t.ok(r.returncode == 0 and "0 failed" in r.stdout,
         "the TypeScript SDK's StreamableHTTPClientTransport: tools/list and tools/call "
         "through the listener", r.stdout[-2000:] + r.stderr[-2000:])
    lst.stop()
    ends = [r for r in f.audit() if r["event"] == "session.end"]
    t.ok(len(ends) == 1, "the SDK's session ended (its close sends DELETE)", ends)
    f.cleanup()


def progress_call(lst, sid, tool, token, out):
    _, hdrs, text = lst.http("POST", body={
        "jsonrpc": "2.0", "id": 77, "method": "tools/call",
        "params": {"name": tool, "arguments": {"steps": 4, "ms": 50},
                   "_meta": {"progressToken": token}}}, sid=sid)
    out[token] = sse_messages(text) if hdrs.get("content-type", "").startswith(
        "text/event-stream") else [json.loads(text)]


def test_sharing():
    """instance = session, shared and exclusive: two clients, one listener"""
    tools = ("state", "progress", "slow", "ask_roots")
    cfg = (server("solo", tools) + server("common", tools,
                                                  extra='instance = "shared"\nrelay = ["roots"]\n') +
           server("single", tools, extra='instance = "exclusive"\n'))
    f = Fixture(cfg)
    lst = Listener(f)
    _, sid_a, init_a = lst.initialize("client-a")
    f.wait_settled()
    _, sid_b, init_b = lst.initialize("client-b")
    f.wait_settled()
    _, listing, _, _ = lst.rpc(sid_b, "tools/list")
    names = sorted(x["name"] for x in (listing or {}).get("result", {}).get("tools", []))
    t.ok(names == sorted("%s__%s" % (srv, tool) for srv in ("solo", "common", "single")
                         for tool in tools),
         "every server's tools are offered to a client attached to shared instances", listing)
    by_server = {}
    for name in f.containers():
        for srv in ("solo", "common", "single"):
            if "-%s-" % srv in name and not name.endswith("-egress"):
                by_server.setdefault(srv, []).append(name)
    t.ok([len(by_server.get(x, [])) for x in ("solo", "common", "single")] == [2, 1, 1],
         "two clients: two containers of a session server, one of a shared and of an "
         "exclusive one", f.containers())

    sa, _ = state_of(lst, sid_a, "solo__state")
    sb, _ = state_of(lst, sid_b, "solo__state")
    t.ok(sa and sb and sa["instance"] != sb["instance"],
         "instance = \"session\": each client its own instance", (sa, sb))
    ca, _ = state_of(lst, sid_a, "common__state")
    cb, _ = state_of(lst, sid_b, "common__state")
    t.ok(ca and cb and ca["instance"] == cb["instance"],
         "instance = \"shared\": both clients reach the same instance", (ca, cb))
    st, ans, _, _ = lst.rpc(sid_a, "logging/setLevel", {"level": "debug"})
    ca2, _ = state_of(lst, sid_a, "common__state")
    cb2, _ = state_of(lst, sid_b, "common__state")
    sb2, _ = state_of(lst, sid_b, "solo__state")
    t.ok(ans is not None and "result" in ans and cb2 and cb2["level"] == "debug" and
         sb2 and sb2["level"] is None,
         "a shared instance's state is one: a's log level is what b's call sees there, "
         "and not on b's own instance", (ans, ca2, cb2, sb2))

    # the same request id from both clients, each with its own progress token,
    # at once: each gets its own progress and its own answer
    import threading
    out = {}
    ths = [threading.Thread(target=progress_call, args=(lst, sid, "common__progress", tok, out))
           for sid, tok in ((sid_a, "tok-a"), (sid_b, "tok-b"))]
    for th in ths:
        th.start()
    for th in ths:
        th.join(60)
    ok = True
    for tok in ("tok-a", "tok-b"):
        msgs = out.get(tok, [])
        prog = [m for m in msgs if m.get("method") == "notifications/progress"]
        answers = [m for m in msgs if m.get("id") == 77 and "result" in m]
        ok &= len(prog) == 4 and all(m["params"]["progressToken"] == tok for m in prog) and \
            len(answers) == 1
    t.ok(ok, "two clients' calls on a shared instance under one request id: each gets its "
         "own four progress notifications under its own token, and one answer", out)

    # the server's own request goes to the one client with a call in flight:
    # c's ask_roots makes the server ask roots/list, which reaches c; while c
    # has not answered, b's ask_roots makes a second, and with two clients
    # in flight nothing says whose it is: refused, saying why
    _, sid_c, _ = lst.initialize("client-c", {"roots": {}})
    conn = lst.conn(timeout=60)
    conn.request("POST", "/mcp", body=json.dumps({
        "jsonrpc": "2.0", "id": 501, "method": "tools/call",
        "params": {"name": "common__ask_roots", "arguments": {}}}).encode(),
        headers={"Authorization": "Bearer " + lst.token, "Accept": ACCEPT,
                 "Content-Type": "application/json", "Mcp-Session-Id": sid_c})
    resp = conn.getresponse()
    buf, seen = b"", []

    def read_until(pred):
        nonlocal buf, seen
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                seen = sse_messages(buf.decode())
            except ValueError:
                seen = []
            found = [m for m in seen if pred(m)]
            if found:
                return found[0]
            chunk = resp.read1(65536)
            if not chunk:
                return None
            buf += chunk
        return None
    ask = read_until(lambda m: m.get("method") == "roots/list")
    t.ok(ask is not None,
         "a shared server's roots/list during c's call (the only one in flight) reaches c",
         buf[:500])
    _, ans_b, _, _ = lst.call(sid_b, "common__ask_roots")
    t.ok("cannot tell which client" in json.dumps(ans_b),
         "its roots/list while two clients have calls with it is refused, and says why",
         ans_b)
    if ask is not None:
        lst.http("POST", body={"jsonrpc": "2.0", "id": ask["id"],
                               "result": {"roots": [{"uri": "file:///c", "name": "c"}]}},
                 sid=sid_c)
    done = read_until(lambda m: m.get("id") == 501 and "method" not in m)
    conn.close()
    t.ok(done is not None and "file:///c" in (text_of(done) or ""),
         "c's answer goes back to the server, and c's call ends with it", done)

    # exclusive: the first client holds it; the other is told it is busy
    xa, _ = state_of(lst, sid_a, "single__state")
    xb, ans_xb = state_of(lst, sid_b, "single__state")
    err = error_of(ans_xb) or ""
    t.ok(xa is not None and xb is None and "busy" in err and "exclusive" in err,
         "instance = \"exclusive\": the first client's calls go through, the second's get "
         "a busy error naming why", (xa, ans_xb))
    st, _, _ = lst.http("DELETE", sid=sid_a)
    xb2 = wait_until(lambda: state_of(lst, sid_b, "single__state")[0], 30)
    t.ok(st == 204 and xb2 is not None and xb2["instance"] == xa["instance"],
         "once the holder's session ends, the other client holds the exclusive instance",
         (st, xb2, xa))
    cb3, _ = state_of(lst, sid_b, "common__state")
    t.ok(cb3 and cb3["instance"] == ca["instance"],
         "a shared instance outlives the session that started it", (cb3, ca))
    status = lst.stop()
    t.ok(status == 0, "the listener ends with status 0", (status, lst.stderr()[-2000:]))
    hosts = [recs for names_, recs in session_files(f).values() if not names_]
    ends = [r for recs in hosts for r in recs if r["event"] == "session.end"]
    attach = [r for recs in hosts for r in recs if r["event"] == "instance.attach"]
    t.ok(len(hosts) == 2 and len(ends) == 2 and len(attach) == 6,
         "each instance is a session with its own audit log: its attaches, its end",
         [(r["event"], r.get("server")) for recs in hosts for r in recs])
    t.ok(f.containers() == [], "and every container is removed", f.containers())
    f.cleanup()


def test_shared_modern():
    """a shared instance of a 2026-07-28 server: it is spoken to in its era
    (the sessions attached speak the old one to the instance), and a
    client's log level goes on each request there"""
    f = Fixture(server("common", ("state", "ask_roots"), args=["--modern"],
                       extra='instance = "shared"\nrelay = ["roots"]\n'))
    lst = Listener(f)
    _, sid_a, _ = lst.initialize("client-a")
    _, sid_b, _ = lst.initialize("client-b")
    st, ans, _, _ = lst.rpc(sid_a, "logging/setLevel", {"level": "error"})
    # a's session passes the level on after it answered a; a's next call on
    # the same connection comes after it, and b's after that
    state_of(lst, sid_a, "common__state")
    sb, ans_b = state_of(lst, sid_b, "common__state")
    meta = (sb or {}).get("meta") or {}
    t.ok(ans is not None and "result" in ans and sb is not None and
         meta.get("io.modelcontextprotocol/protocolVersion") == "2026-07-28" and
         sb.get("level") == "error",
         "a shared 2026-07-28 server: its requests carry its era's _meta, and a's log level "
         "is on b's call to it", (ans, ans_b))
    # its input_required answers one session's own request: that session relays it
    roots = {"roots": [{"uri": "file:///w", "name": "w"}]}
    st, ans, _, _ = lst.modern("tools/call", {"name": "common__ask_roots", "arguments": {}},
                               capabilities={"roots": {}})
    res = (ans or {}).get("result", {})
    state = res.get("requestState", "")
    st2, ans2, _, _ = lst.modern("tools/call", {
        "name": "common__ask_roots", "arguments": {}, "inputResponses": {"ask": roots},
        "requestState": state}, capabilities={"roots": {}})
    got = json.loads(text_of(ans2) or "{}")
    t.ok(res.get("resultType") == "input_required" and state.startswith("mcr1.") and
         got.get("result") == roots and got.get("requestState") == "probe-state-1",
         "its input_required through the shared instance reaches the client whose call it "
         "answers, and the retry goes back through the instance", (ans, ans2))
    t.ok(lst.stop() == 0 and f.containers() == [], "the listener ends, nothing left",
         f.containers())
    f.cleanup()


def test_modern_listen():
    """subscriptions/listen over HTTP: its POST's stream stays open with the
    acknowledgement, then each list change it asked for, tagged with the
    client's own id; closing the stream ends the listen"""
    f = Fixture(server("alpha", ("echo", "changed")))
    lst = Listener(f)
    msg, hdrs = modern_request("subscriptions/listen",
                               {"notifications": {"toolsListChanged": True}}, rid="sub-1")
    conn, resp = lst.open_post(msg, hdrs)
    first = sse_messages(read_events(resp, 1).decode())
    st, ans, _, _ = lst.modern_call("alpha__changed", {})
    # the session relists the changed server, then tells the listen
    conn.sock.settimeout(15)
    more = sse_messages(read_events(resp, 1).decode())
    t.ok(resp.status == 200 and [m.get("method") for m in first] ==
         ["notifications/subscriptions/acknowledged"] and
         first[0]["params"]["_meta"].get("io.modelcontextprotocol/subscriptionId") == "sub-1",
         "the listen's stream opens with the acknowledgement, under the client's id",
         (resp.status, first))
    t.ok([m.get("method") for m in more] == ["notifications/tools/list_changed"] and
         more[0]["params"]["_meta"].get("io.modelcontextprotocol/subscriptionId") == "sub-1",
         "a tool list change comes on it, under the client's id", more)
    conn.close()
    deadline = time.monotonic() + 10
    ended = []
    while not ended and time.monotonic() < deadline:
        st, ans, _, _ = lst.modern("tools/list")
        ended = [r for names_, recs in session_files(f).values() for r in recs
                 if r["event"] == "client.listen.end"]
    recs = [r for names_, recs in session_files(f).values() for r in recs
            if r["event"] == "client.listen"]
    t.ok(len(recs) == 1 and len(ended) == 1 and st == 200 and "result" in (ans or {}),
         "closing the stream ends the listen in the session, and the listener goes on",
         (recs, ended, ans))
    t.ok(lst.stop() == 0, "the listener ends")
    f.cleanup()


def test_shared_unavailable():
    """a shared server whose instance cannot start (its image is missing):
    each client is told why, as for a server of its own, and the rest works"""
    other = "localhost:5000/other@sha256:" + "cd" * 32
    f = Fixture(gwtest.server("gone", PROBE_HASH, ("echo",), None,
                              'instance = "shared"\n', image=other) + server("here"))
    lst = Listener(f)
    _, sid, _ = lst.initialize("client-a")
    f.wait_settled()
    _, listing, _, _ = lst.rpc(sid, "tools/list")
    names = [x["name"] for x in (listing or {}).get("result", {}).get("tools", [])]
    t.ok(names == ["here__echo"], "a shared server without its image is left out", listing)
    _, ans, _, _ = lst.call(sid, "gone__echo", {"text": "x"})
    err = error_of(ans) or ""
    t.ok("mcpgate pull gone" in err, "a call to it says what fixes it", ans)
    recs = [r for names_, recs in session_files(f).values() if names_ == ["client-a"]
            for r in recs]
    un = [r for r in recs if r["event"] == "server.unavailable"]
    t.ok(len(un) == 1 and "mcpgate pull gone" in un[0]["reason"] and
         un[0]["reason"].count("is unavailable") == 1,
         "the client's session records it unavailable, its reason said once", un)
    t.ok(lst.stop() == 0 and f.containers() == [], "the listener ends, nothing left",
         f.containers())
    f.cleanup()


def modern_records(f, event):
    """the records of the modern session's audit file (it has no initialize)"""
    return [r for names, recs in session_files(f).values() if not names for r in recs
            if r["event"] == event]


def modern_error(answer):
    return (answer or {}).get("error", {})


def test_modern():
    """2026-07-28 clients over HTTP: no session id, the mirrored headers, one
    modern session for the token beside the old era's"""
    f = Fixture(server("alpha", ("echo", "progress", "log")) + server("beta", ("log",)))
    lst = Listener(f)
    st, disc, _, hdrs = lst.modern("server/discover")
    res = (disc or {}).get("result", {})
    t.ok(st == 200 and MODERN in res.get("supportedVersions", []) and
         res.get("resultType") == "complete" and "mcp-session-id" not in hdrs,
         "server/discover over HTTP without a session: answered, no Mcp-Session-Id",
         (st, disc, hdrs))
    st, ans, _, hdrs = lst.modern_call("alpha__echo", {"text": "modern"})
    t.ok(st == 200 and text_of(ans) == "modern" and "mcp-session-id" not in hdrs,
         "tools/call over HTTP without a session reaches the server and comes back",
         (st, ans, hdrs))
    st, ans, _, _ = lst.modern_call("alpha__echo", {"text": "coded"}, headers={
        "Mcp-Name": "=?base64?" + base64.b64encode(b"alpha__echo").decode() + "?="})
    t.ok(st == 200 and text_of(ans) == "coded", "an Mcp-Name in =?base64?...?= is decoded",
         (st, ans))
    st, ans, msgs, hdrs = lst.modern("tools/call", {
        "name": "alpha__log", "arguments": {"level": "info", "text": "mine"},
        "_meta": {"io.modelcontextprotocol/logLevel": "debug"}}, rid=9)
    t.ok(st == 200 and text_of(ans) == "logged" and
         [m["params"]["data"] for m in msgs if m.get("method") == "notifications/message"]
         == ["mine"],
         "a server's log message during the only call waiting goes to that call's stream",
         (st, msgs))

    # two clients, one request id and one progress token, at once
    def progress_msg(steps):
        return modern_request("tools/call", {"name": "alpha__progress",
                                             "arguments": {"steps": steps, "ms": 20},
                                             "_meta": {"progressToken": "tok"}}, rid=5)
    msg_a, hdrs_a = progress_msg(4)
    conn_a, resp_a = lst.open_post(msg_a, hdrs_a)
    first_a = read_events(resp_a, 1)
    # a's call is under way (its first progress came): b's goes in beside it
    msg_b, hdrs_b = progress_msg(2)
    st_b, _, msgs_b, _ = lst.post(msg_b, headers=hdrs_b)
    msgs_a = sse_messages((first_a + resp_a.read()).decode())
    conn_a.close()

    def shape(msgs):
        return ([(m["params"]["progressToken"], m["params"]["progress"], m["params"]["total"])
                 for m in msgs if m.get("method") == "notifications/progress"],
                [m.get("id") for m in msgs if "method" not in m])
    t.ok(resp_a.status == 200 and shape(msgs_a) == ([("tok", i, 4) for i in (1, 2, 3, 4)], [5])
         and shape(msgs_b) == ([("tok", 1, 2), ("tok", 2, 2)], [5]) and st_b == 200,
         "two clients with one id and one progress token at once: each gets its own "
         "progress and answer, with its own id and token", (msgs_a, msgs_b))

    # the mirrored headers
    st, ans, _, _ = lst.modern_call("alpha__echo", {"text": "x"}, rid=41,
                                    headers={"Mcp-Method": "tools/list"})
    t.ok(st == 400 and modern_error(ans).get("code") == -32020 and ans.get("id") == 41 and
         "Mcp-Method" in modern_error(ans).get("message", ""),
         "Mcp-Method not the body's method: 400, -32020 with the request's id", (st, ans))
    st, ans, _, _ = lst.modern_call("alpha__echo", {"text": "x"}, rid=42,
                                    headers={"Mcp-Name": "alpha__other"})
    t.ok(st == 400 and modern_error(ans).get("code") == -32020 and
         "alpha__other" in modern_error(ans).get("message", ""),
         "Mcp-Name not the body's tool: 400, -32020 naming it", (st, ans))
    st, ans, _, _ = lst.modern("tools/list", rid=43,
                               headers={"MCP-Protocol-Version": "2025-11-25"})
    t.ok(st == 400 and modern_error(ans).get("code") == -32020,
         "MCP-Protocol-Version not the body's _meta version: 400, -32020", (st, ans))
    st, ans, _, _ = lst.modern_call("alpha__echo", {"text": "x"},
                                    headers={"Mcp-Name": "alpha__echo\xe9"})
    t.ok(st == 400 and modern_error(ans).get("code") == -32020 and
         "characters" in modern_error(ans).get("message", ""),
         "an Mcp-Name with a byte a header may not hold: 400, -32020", (st, ans))
    for missing in ("Mcp-Method", "Mcp-Name", "MCP-Protocol-Version"):
        st, ans, _, _ = lst.modern_call("alpha__echo", {"text": "x"}, rid=44,
                                        headers={missing: None})
        t.ok(st == 400 and modern_error(ans).get("code") == -32020 and
             "%s header is missing" % missing in modern_error(ans).get("message", ""),
             "no %s header: 400, -32020 saying it is missing" % missing, (st, ans))
    st, ans, _, _ = lst.modern_call("alpha__echo", {"text": "spaced"},
                                    headers={"Mcp-Name": " \talpha__echo \t"})
    t.ok(st == 200 and text_of(ans) == "spaced",
         "spaces and tabs around a header's value are no part of it (RFC 9110)", (st, ans))
    msg, hdrs = modern_request("tools/list", rid=45)
    del msg["params"]["_meta"]
    st, ans, _, _ = lst.post(msg, headers=hdrs)
    t.ok(st == 400 and modern_error(ans).get("code") == -32602 and ans.get("id") == 45 and
         "params._meta is missing" in modern_error(ans).get("message", ""),
         "a modern request without _meta: 400, -32602 saying so (not a header mismatch)",
         (st, ans))
    for key in ("protocolVersion", "clientCapabilities"):
        msg, hdrs = modern_request("tools/list", rid=46)
        del msg["params"]["_meta"]["io.modelcontextprotocol/" + key]
        st, ans, _, _ = lst.post(msg, headers=hdrs)
        t.ok(st == 400 and modern_error(ans).get("code") == -32602 and
             key in modern_error(ans).get("message", ""),
             "a modern request whose _meta has no %s: 400, -32602 naming it" % key, (st, ans))
    st, ans, _, _ = lst.modern("initialize", {"protocolVersion": MODERN, "capabilities": {},
                                              "clientInfo": {"name": "x", "version": "1"}})
    t.ok(st == 404 and modern_error(ans).get("code") == -32601 and
         "no initialize" in modern_error(ans).get("message", ""),
         "initialize that says MCP-Protocol-Version 2026-07-28: 404, -32601", (st, ans))
    st, ans, _, _ = lst.modern("tools/list", {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2099-01-01"}})
    err = modern_error(ans)
    t.ok(st == 400 and err.get("code") == -32022 and
         err.get("data", {}).get("supported", [None])[0] == MODERN and
         err.get("data", {}).get("requested") == "2099-01-01",
         "a version mcpgate does not serve: 400, -32022 with the supported ones", (st, ans))
    st, ans, _, _ = lst.modern("ping")
    t.ok(st == 404 and modern_error(ans).get("code") == -32601,
         "a method 2026-07-28 does not have: 404 with -32601", (st, ans))
    st, _, text = lst.http("POST", body={"jsonrpc": "2.0", "method": "notifications/cancelled",
                                         "params": {"requestId": 5}},
                           headers={"MCP-Protocol-Version": MODERN})
    t.ok(st == 400 and "closing its response stream" in text,
         "notifications/cancelled over HTTP: 400, cancel by closing the stream", (st, text))

    # no GET stream, no session to DELETE
    st, hdrs, text = lst.http("GET", accept="text/event-stream",
                              headers={"MCP-Protocol-Version": MODERN})
    t.ok(st == 405 and hdrs.get("allow") == "POST" and "2026-07-28" in text,
         "GET /mcp for a modern client: 405, Allow: POST", (st, hdrs, text))
    st, _, _ = lst.http("DELETE", headers={"MCP-Protocol-Version": MODERN})
    t.ok(st == 405, "DELETE for a modern client: 405", st)
    st = lst.modern("tools/list", token=False)[0]
    t.ok(st == 401, "the token is checked for a modern request too", st)

    # an old-era client beside: its own session, as before
    _, sid, init = lst.initialize("old-client")
    _, ans_old, _, hdrs_old = lst.call(sid, "alpha__echo", {"text": "old"})
    _, ans_new, _, _ = lst.modern_call("alpha__echo", {"text": "new"})
    t.ok(sid and text_of(ans_old) == "old" and text_of(ans_new) == "new" and
         lst.metric("mcpgate_sessions_open") == 2,
         "an old-era client beside a modern one: both answered, two sessions",
         (sid, ans_old, ans_new))
    st, _, _ = lst.http("GET", sid=sid, accept="text/event-stream", timeout=2,
                        headers={"MCP-Protocol-Version": MODERN})
    t.ok(st == 405, "a GET that says 2026-07-28 is refused even with a session id", st)

    # a client that closes its stream cancels its call
    msg, hdrs = modern_request("tools/call", {"name": "alpha__progress",
                                              "arguments": {"steps": 1000, "ms": 50},
                                              "_meta": {"progressToken": "long"}}, rid=5)
    conn, resp = lst.open_post(msg, hdrs)
    started = read_events(resp, 1)
    # with two calls waiting, a log message names neither: it goes to no one
    _, ans, msgs, _ = lst.modern("tools/call", {
        "name": "beta__log", "arguments": {"level": "info", "text": "whose"},
        "_meta": {"io.modelcontextprotocol/logLevel": "debug"}})
    dropped = wait_until(lambda: lst.metric(
        'mcpgate_messages_dropped_total{reason="unattributed"}') >= 1)
    t.ok(text_of(ans) == "logged" and dropped and
         not any(m.get("method") == "notifications/message" for m in msgs),
         "with two calls waiting, a server's log message goes to neither (dropped, counted)",
         (msgs, dropped))
    conn.close()
    cancelled = wait_until(lambda: [r for r in modern_records(f, "tool.call")
                                    if r.get("tool") == "progress" and
                                    r.get("outcome") == "cancelled"])
    t.ok(b"long" in started and bool(cancelled),
         "a modern client that closes its stream cancels its call (tool.call cancelled)",
         (started, modern_records(f, "tool.call")))
    t.ok(lst.stop() == 0, "the listener ends with its modern session")
    f.cleanup()


# a stdio MCP server of the old era whose one tool mirrors three arguments in
# Mcp-Param-* headers (x-mcp-header), and a fourth under a name no header
# may have; the fake runtime runs it as the server's container
PARAM_SERVER = r"""#!/usr/bin/env python3
import json, sys
TOOL = {"name": "lookup", "description": "Answers its arguments", "inputSchema": {
    "type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "count": {"type": "integer", "x-mcp-header": "Count"},
        "flag": {"type": "boolean", "x-mcp-header": "Flag"},
        "odd": {"type": "string", "x-mcp-header": "Not A Name"},
        "query": {"type": "string"}}}}
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m or "method" not in m:
        continue
    if m["method"] == "initialize":
        r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}},
             "serverInfo": {"name": "param-headers", "version": "1"}}
    elif m["method"] == "tools/list":
        r = {"tools": [TOOL]}
    elif m["method"] == "tools/call":
        r = {"content": [{"type": "text", "text": json.dumps(m["params"].get("arguments"),
                                                             sort_keys=True)}]}
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "error": {
            "code": -32601, "message": "Method not found"}}), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
"""


def test_param_headers():
    """2026-07-28's Mcp-Param-* headers: checked against the x-mcp-header
    annotations of the tools the listener listed"""
    f = Fixture('[[server]]\nname = "hdr"\ntransport = "container"\nimage = "%s"\n'
                'network = []\n[server.tools.lookup]\non = true\neffect = "read"\n'
                % gwtest.IMAGE)
    probe = os.path.join(f.rt, "mcpgate-probe")
    os.remove(probe)
    with open(probe, "w") as fh:
        fh.write(PARAM_SERVER)
    os.chmod(probe, 0o755)
    r = f.mcpgate("review", "hdr", "--workspace", f.ws)
    r2 = f.mcpgate("approve", "hdr", "--workspace", f.ws)
    t.ok(r.returncode == 0 and r2.returncode == 0, "the x-mcp-header server is approved",
         r.stdout + r.stderr + r2.stdout + r2.stderr)
    lst = Listener(f)

    def call(args, headers=None):
        return lst.modern_call("hdr__lookup", args, headers=headers)

    def answered(args, headers, what):
        """the call went through: the server answered its arguments"""
        st, ans, _, _ = call(args, headers)
        t.ok(st == 200 and text_of(ans) == json.dumps(args, sort_keys=True), what, (st, ans))

    st, ans, _, _ = call({"region": "us-west1"})
    t.ok(st == 200 and text_of(ans) == '{"region": "us-west1"}',
         "before any tools/list the listener knows no annotation: nothing is checked",
         (st, ans))
    st, ans, _, _ = lst.modern("tools/list")
    listed = [x for x in (ans or {}).get("result", {}).get("tools", [])
              if x.get("name") == "hdr__lookup"]
    t.ok(st == 200 and listed and
         listed[0]["inputSchema"]["properties"]["region"].get("x-mcp-header") == "Region",
         "tools/list gives the client the tool with its x-mcp-header annotations", (st, ans))
    good = {"Mcp-Param-Region": "us-west1", "Mcp-Param-Count": "42", "Mcp-Param-Flag": "true"}
    answered({"region": "us-west1", "count": 42, "flag": True}, good,
             "a call whose Mcp-Param-* headers are its arguments reaches the server")
    answered({"region": "us-west1"}, {"mcp-param-region": " us-west1\t"},
             "Mcp-Param names in any case, values with spaces around")
    answered({"region": "us-west1", "count": None, "query": "q", "odd": "x"},
             {"Mcp-Param-Region": "us-west1"},
             "an argument that is null, or not annotated, or under a name no header may "
             "have, needs no header")
    coded = "=?base64?" + base64.b64encode("Hello, 世界".encode()).decode() + "?="
    answered({"region": "Hello, 世界"}, {"Mcp-Param-Region": coded},
             "a =?base64?...?= value is decoded before it is compared")
    answered({"region": "=?base64?SGVsbG8"}, {"Mcp-Param-Region": "=?base64?SGVsbG8"},
             "a value without the ?= end is taken as it is")
    for args, headers, what in (
            ({"region": "us-west1"}, {}, "no Mcp-Param-Region for an argument in the body"),
            ({"region": "us-west1"}, {"Mcp-Param-Region": "eu-west1"}, "a value not the body's"),
            ({"region": "Hello"}, {"Mcp-Param-Region": "=?base64?SGVsbG8?="},
             "base64 without its padding"),
            ({"region": "Hello"}, {"Mcp-Param-Region": "=?base64?SGVs!!!bG8=?="},
             "base64 with a character not of it"),
            ({"region": "us-west1", "count": 42},
             {"Mcp-Param-Region": "us-west1", "Mcp-Param-Count": "41"},
             "an integer not the body's"),
            ({"region": "us-west1", "flag": False},
             {"Mcp-Param-Region": "us-west1", "Mcp-Param-Flag": "False"},
             "a boolean not written false")):
        st, ans, _, _ = call(args, headers)
        err = modern_error(ans)
        t.ok(st == 400 and err.get("code") == -32020 and "Mcp-Param-" in err.get("message", ""),
             "%s: 400, -32020 naming the header" % what, (st, ans))
    t.ok(lst.stop() == 0, "the listener ends")
    f.cleanup()


PROBE_HASH = learn_probe_hash()
for case in (test_two_clients, test_security, test_limits, test_streams_and_metrics,
             test_slow_client, test_many_ends, test_sharing, test_shared_unavailable,
             test_shared_modern, test_modern, test_modern_listen, test_param_headers, test_sdk_client):
    try:
        case()
    except Exception as e:  # a case that blows up is a failure, not a crash of the runner
        import traceback
        traceback.print_exc(file=sys.stdout)
        t.ok(False, "%s raised %s: %s" % (case.__name__, type(e).__name__, e))
sys.exit(t.done())
