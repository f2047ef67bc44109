#!/usr/bin/env python3
"""connect: TCP destinations a person names (docs/2026-12-02-connect.md),
on the fake runtime with the real mcpgate-egress as mcpgate's host side.

What mcpgate hands the runtime is checked (the sidecar's -forward
arguments and the mount of the host side's sockets, the server's args and
env with each {connect.NAME} the sidecar's address, no HTTP proxy without
hosts, a network of the person's joined and its gateway refused), and the
host side is used as the sidecar would use it: the test connects to its
socket and reaches a service of its own on loopback, recorded as an egress
attempt; then the session ends and nothing of it is left. Environment:
MCPGATE, FAKES (and mcpgate-egress beside MCPGATE).
"""
import json
import os
import re
import socket
import stat
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from mcpclient import Tap, text_of  # noqa: E402
from gwtest import MCPGATE, Fixture, IMAGE, UNMATCHED_PIN, events, server  # noqa: E402

t = Tap()
EGRESS = os.path.join(os.path.dirname(MCPGATE), "mcpgate-egress")


def loopback_service():
    """A service on the host's loopback: answers "svc:" and what it read"""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)

    def serve():
        while True:
            try:
                c, _ = s.accept()
            except OSError:
                return
            with c:
                data = c.recv(4096)
                c.sendall(b"svc:" + data)
    threading.Thread(target=serve, daemon=True).start()
    return s, s.getsockname()[1]


def pinned(f):
    """mcp.toml with each server's live manifest pinned, as approve would"""
    with open(os.path.join(f.conf, "mcp.toml")) as fh:
        text = fh.read()
    names = re.findall(r'^name = "([^"]+)"', text, re.M)
    for name in names:
        r = f.mcpgate("review", name)
        m = re.search(r"^manifest: (sha256:[0-9a-f]{64})$", r.stdout, re.M)
        if not m:
            raise RuntimeError("review %s: %s %s" % (name, r.stdout, r.stderr))
        text = text.replace('name = "%s"\n' % name,
                            'name = "%s"\nmanifest = "%s"\n' % (name, m.group(1)), 1)
    with open(os.path.join(f.conf, "mcp.toml"), "w") as fh:
        fh.write(text)


def runs(f, session):
    """The runs of one session, by container name"""
    log = f.runtime_log()
    return {x["argv"][x["argv"].index("--name") + 1]: x for x in log
            if x["argv"][1:2] == ["run"] and
            x["argv"][x["argv"].index("--name") + 1].endswith(session) or
            x["argv"][1:2] == ["run"] and
            x["argv"][x["argv"].index("--name") + 1].endswith(session + "-egress")}


def talk(path, data):
    c = socket.socket(socket.AF_UNIX)
    c.settimeout(10)
    c.connect(path)
    got = b""
    try:
        c.sendall(data)
        c.shutdown(socket.SHUT_WR)
        while True:
            chunk = c.recv(4096)
            if not chunk:
                break
            got += chunk
    except (ConnectionResetError, BrokenPipeError):
        pass  # closed before or with our bytes unread: nothing came back
    c.close()
    return got


def closed_port():
    """A loopback port nothing listens on"""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_connect(runtime):
    svc, port = loopback_service()
    shut = closed_port()
    extra = ('args = ["--describe-suffix", " postgres://{connect.pg}/app", "--tool-extra", '
             '"\\"_meta\\": {\\"lan\\": \\"{connect.lan.host}\\", \\"port\\": {connect.lan.port}}"]\n'
             'env = { CACHE = "redis://{connect.cache}/0", PLAIN = "x" }\n'
             'connect = { pg = "127.0.0.1:%d", cache = "localhost:%d", lan = "192.168.7.7:%d", '
             'onnet = { to = "redis-box:6379", network = "personnet" } }\n'
             'command = ["/mcpgate-probe", "--stderr-banner={connect.onnet}"]\n'
             % (port, shut, shut))
    f = Fixture(server("db", None, tools_on=("echo", "env"), extra=extra),
                config='egress = "%s"\n' % EGRESS, runtime=runtime)
    # the person's network, which the sidecar joins
    r = subprocess.run([os.path.join(f.rt, runtime), "network", "create", "personnet"],
                       capture_output=True, text=True, env=f.env())
    t.ok(r.returncode == 0, "%s: a network of the person's" % runtime, r.stderr)
    pinned(f)
    c = f.start()
    c.initialize()
    f.wait_settled()
    audit = f.audit()
    sid = audit[-1]["session"]
    audit = [e for e in audit if e["session"] == sid]
    ready = [e for e in events(audit, "server.ready") if e["server"] == "db"]
    t.ok(ready, "%s: the server with connect destinations starts" % runtime,
         events(audit, "server.unavailable"))
    side = {n: x for n, x in runs(f, sid).items() if n.endswith("-egress")}
    srv = {n: x for n, x in runs(f, sid).items() if n.startswith("mcpgate-db-") and
           not n.endswith("-egress")}
    sargv = list(side.values())[0]["argv"] if side else []
    args = sargv[sargv.index(IMAGE) + 1:] if IMAGE in sargv else []
    fwd = [args[i + 1] for i, a in enumerate(args) if a == "-forward"]
    t.ok(sorted(fwd) == sorted(["0.0.0.0:%d=unix:/mcpgate-connect/pg.sock" % port,
                                "0.0.0.0:40001=unix:/mcpgate-connect/cache.sock",
                                "0.0.0.0:40002=192.168.7.7:%d" % shut,
                                "0.0.0.0:6379=redis-box:6379"]),
         "%s: the sidecar forwards each destination, the host's loopback through the host "
         "side's socket, a port two name moved (40001, 40002)" % runtime, args)
    t.ok("-listen" not in args and "-allow" not in args and "-lifeline" in args,
         "%s: no HTTP proxy without hosts, nothing allowed but the forwards" % runtime, args)
    mount = [a for a in sargv if "target=/mcpgate-connect" in a]
    t.ok(len(mount) == 1 and mount[0].endswith(",readonly"),
         "%s: the host side's folder is mounted into the sidecar, read-only" % runtime, mount)
    sock_dir = re.search(r"source=([^,]+),", mount[0]).group(1) if mount else "/nonexistent"
    connects = [x["argv"][3:5] for x in f.runtime_log() if x["argv"][1:3] == ["network", "connect"]]
    t.ok(any(a[0] == "personnet" and a[1].endswith("-egress") for a in connects),
         "%s: the sidecar joins the person's network" % runtime, connects)
    t.ok(args.count("-deny-address") >= 4,
         "%s: the person's network's gateway is refused too" % runtime, args)
    frm = [args[i + 1] for i, a in enumerate(args) if a == "-from"]
    # the inner network's subnet is the one subnet it refuses as a destination
    inner = [args[i + 1] for i, a in enumerate(args) if a == "-deny-address" and
             "/" in args[i + 1]]
    t.ok(len(frm) == 1 and re.fullmatch(r"10\.99\.\d+\.0/24", frm[0]) is not None and
         frm == inner,
         "%s: its listeners accept only the server's own network (-from its subnet), not "
         "the person's network it joined" % runtime, (frm, args))

    v = list(srv.values())[0] if srv else {"argv": [], "env": {}}
    m = re.search(r"postgres://(10\.99\.\d+\.\d+):(\d+)/app", " ".join(v["argv"]))
    t.ok(m is not None and m.group(2) == str(port) and
         '"_meta": {"lan": "%s", "port": 40002}' % m.group(1) in v["argv"] and
         "--stderr-banner=%s:6379" % m.group(1) in v["argv"] and
         not any("{connect." in a for a in v["argv"]),
         "%s: the server's command and args name the sidecar's address and ports" % runtime,
         v["argv"])
    t.ok(m is not None and v["env"].get("CACHE") == "redis://%s:40001/0" % m.group(1) and
         v["env"].get("PLAIN") == "x" and "--env=CACHE" in v["argv"] and
         not any(a.startswith("--env=HTTP_PROXY") for a in v["argv"]),
         "%s: and so does its env (through the runtime's environment, never argv); no proxy "
         "variables" % runtime, v["env"])
    nets = [a for a in v["argv"] if a.startswith("--network")]
    t.ok(len(nets) == 1 and nets[0].endswith("-in"),
         "%s: the server is on its inner network alone" % runtime, nets)

    parent = os.path.dirname(sock_dir)
    st_parent = os.stat(parent) if os.path.isdir(parent) else None
    st_dir = os.stat(sock_dir) if os.path.isdir(sock_dir) else None
    sock = os.path.join(sock_dir, "pg.sock")
    st_sock = os.lstat(sock) if os.path.exists(sock) else None
    t.ok(st_parent is not None and stat.S_IMODE(st_parent.st_mode) == 0o700 and
         st_dir is not None and stat.S_IMODE(st_dir.st_mode) == 0o711 and
         st_sock is not None and stat.S_ISSOCK(st_sock.st_mode),
         "%s: the host side's sockets are in a 0711 folder inside a 0700 one of mcpgate's"
         % runtime, (parent, st_parent and oct(st_parent.st_mode), st_dir and oct(st_dir.st_mode)))
    got = talk(sock, b"SELECT 1") if st_sock is not None else b""
    t.ok(got == b"svc:SELECT 1",
         "%s: through the host side's socket a service on the host's loopback answers"
         % runtime, got)
    cache = os.path.join(sock_dir, "cache.sock")
    got = talk(cache, b"x") if os.path.exists(cache) else b"(no socket)"
    t.ok(got == b"", "%s: a destination with nothing listening is closed without a byte"
         % runtime, got)
    # the host side records the refused connect as it happens: wait for the
    # record (not a time) before the session ends
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(
            e.get("event") == "mcp.egress" and e.get("port") == shut
            for e in f.audit() if e["session"] == sid):
        time.sleep(0.05)
    status = c.close(timeout=60)
    audit = [e for e in f.audit() if e["session"] == sid]
    eg = events(audit, "mcp.egress")
    tcp = [e for e in eg if e.get("method") == "TCP"]
    t.ok(any(e["host"] == "127.0.0.1" and e["port"] == port and e["allowed"] and
             e["server"] == "db" for e in tcp) and
         any(e["port"] == shut and e["host"] == "127.0.0.1" and
             str(e.get("reason", "")).startswith("connect:") for e in tcp),
         "%s: each connection through the host side is an mcp.egress record (TCP), the "
         "refused connect with its reason" % runtime, tcp)
    closes = [e for e in events(audit, "mcp.egress.close") if e.get("port") == port]
    t.ok(closes and closes[0]["bytes_up"] == 8 and closes[0]["bytes_down"] == 12,
         "%s: and its close record counts the bytes" % runtime, closes)
    host = events(audit, "egress.host")
    t.ok(host and "/mcpgate-egress-" in host[0]["argv"][0] and
         "-lifeline" in host[0]["argv"] and
         sum(a == "-forward" for a in host[0]["argv"]) == 2,
         "%s: the host side's start is recorded: only the loopback destinations" % runtime, host)
    gone = False
    for _ in range(100):
        if not os.path.exists(parent):
            gone = True
            break
        time.sleep(0.05)
    ps = subprocess.run(["pgrep", "-f", sock_dir], capture_output=True, text=True)
    t.ok(status == 0 and gone and ps.stdout.strip() == "",
         "%s: at the end the host side is gone, and its folder" % runtime, (status, ps.stdout))
    svc.close()
    f.cleanup()


def test_missing_network():
    extra = ('args = ["--stderr-banner", "{connect.x}"]\n'
             'connect = { x = { to = "db:5432", network = "nosuchnet" } }\n')
    f = Fixture(server("lost", UNMATCHED_PIN, extra=extra), config='egress = "%s"\n' % EGRESS)
    f.mcpgate("check")
    c = f.start()
    c.initialize()
    f.wait_settled()
    bad = [e for e in events(f.audit(), "server.unavailable") if e["server"] == "lost"]
    t.ok(bad and "nosuchnet" in bad[0]["reason"],
         "a network of the person's that is not there: the server is unavailable, naming it",
         bad)
    c.close()
    f.cleanup()


def test_review():
    extra = ('args = ["--stderr-banner", "{connect.pg}"]\nconnect = { pg = "localhost:5432" }\n')
    f = Fixture(server("rv", None, extra=extra), config='egress = "%s"\n' % EGRESS)
    r = f.mcpgate("review", "rv")
    t.ok(r.returncode == 0 and "connect: pg = 127.0.0.1:5432 (the host's loopback, through "
         "mcpgate's host side)" in r.stdout and
         "network: its connect destinations alone, through its sidecar" in r.stdout,
         "review says where the server connects", r.stdout + r.stderr)
    f.cleanup()


def main():
    if not os.access(EGRESS, os.X_OK):
        print("not ok 1 - no mcpgate-egress beside %s" % MCPGATE)
        return 1
    for case in (lambda: test_connect("podman"), lambda: test_connect("docker"),
                 test_missing_network, test_review):
        try:
            case()
        except Exception as e:  # a case that blows up is a failure, not a crash
            t.ok(False, "a case raised %s: %s" % (type(e).__name__, e))
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
