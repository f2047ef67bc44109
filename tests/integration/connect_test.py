#!/usr/bin/env python3
"""connect on a real runtime (MCPGATE_CONTAINER_TEST_RUNTIME=podman|docker),
with a real PostgreSQL and Redis from Debian (docs/2026-12-02-connect.md).

The test starts PostgreSQL and Redis itself on free ports of the host's
loopback (as nobody when it runs as root; PostgreSQL refuses root) and stops
them. It adds @modelcontextprotocol/server-postgres 0.6.2 (MCP 2024-11-05)
and @modelcontextprotocol/server-redis with `mcpgate add`, as a person
would, names each database in "connect", reviews, approves and serves them,
and has them answer real queries through mcpgate. Then the probe, granted
Redis on the loopback and a web server on a network of the test's own, tries
every other way: the sidecar's other ports, its own loopback, the host's
addresses and aliases, the destination's address on the person's network
directly; each fails, and each connection that went through is an
mcp.egress record. Nothing is left behind.

Needs postgresql and redis-server (scripts/setup), node and npm (and the npm
registry for the first install); without them it reports skipped. Traffic:
the npm registry (npm itself), loopback, and the test's own containers.
"""
import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import containers_test as ct  # noqa: E402
import add_test as at  # noqa: E402  (add as a person does, and the images it leaves)
import egress_test as et  # noqa: E402  (the host, tried past the proxy)
from mcpclient import text_of  # noqa: E402

t = ct.t
RT = ct.RT
EGRESS = os.path.abspath(os.environ.get("MCPGATE_EGRESS", "mcpgate-egress"))
PG_PKG, PG_VERSION = "@modelcontextprotocol/server-postgres", "0.6.2"
REDIS_PKG, REDIS_VERSION = "@modelcontextprotocol/server-redis", "2025.4.25"
PG_BIN = (sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres")) or [None])[-1]
ROOT = os.geteuid() == 0
NOBODY = 65534


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def as_service(argv, **kw):
    """Run a service's command as nobody when root (PostgreSQL refuses root)"""
    if ROOT:
        kw.update(user=NOBODY, group=NOBODY, extra_groups=[])
    return kw


class Services:
    """PostgreSQL and Redis of the test's own, on loopback ports"""

    def __init__(self, base):
        self.dir = tempfile.mkdtemp(prefix="svc-", dir=base)
        os.chmod(base, 0o755)
        if ROOT:
            os.chown(self.dir, NOBODY, NOBODY)
        self.procs = []
        self.pg_port = free_port()
        self.redis_port = free_port()

    def start(self):
        bindir = os.path.dirname(PG_BIN)
        data = os.path.join(self.dir, "pg")
        r = subprocess.run([os.path.join(bindir, "initdb"), "-D", data, "-A", "trust", "-U",
                            "postgres", "-E", "UTF8", "--no-sync"], capture_output=True,
                           text=True, timeout=300, **as_service(None))
        if r.returncode != 0:
            raise RuntimeError("initdb: " + r.stderr[-500:])
        self.procs.append(subprocess.Popen(
            [PG_BIN, "-D", data, "-k", self.dir, "-p", str(self.pg_port), "-c",
             "listen_addresses=127.0.0.1", "-c", "fsync=off"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.dir, "pg.log"), "w"),
            **as_service(None)))
        self.procs.append(subprocess.Popen(
            ["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", self.dir],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **as_service(None)))
        for _ in range(200):
            ok_pg = self.psql("postgres", "SELECT 1").returncode == 0
            ok_redis = self.redis("PING").stdout.strip() == "PONG"
            if ok_pg and ok_redis:
                break
            time.sleep(0.1)
        else:
            raise RuntimeError("PostgreSQL or Redis did not start: " +
                               open(os.path.join(self.dir, "pg.log")).read()[-500:])
        self.psql("postgres", "CREATE DATABASE testdb")
        r = self.psql("testdb", "CREATE TABLE pets (name text, kind text); "
                      "INSERT INTO pets VALUES ('Rex', 'dog'), ('Tom', 'cat')")
        if r.returncode != 0:
            raise RuntimeError("psql: " + r.stderr[-300:])
        self.redis("SET", "greeting", "hello from redis")

    def psql(self, db, sql):
        return subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(self.pg_port), "-U",
                               "postgres", "-d", db, "-v", "ON_ERROR_STOP=1", "-c", sql],
                              capture_output=True, text=True, timeout=30)

    def redis(self, *args):
        return subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(self.redis_port)] +
                              list(args), capture_output=True, text=True, timeout=30)

    def stop(self):
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def entry(name, image, args, connect, tools, extra=""):
    s = '[[server]]\nname = "%s"\ntransport = "container"\nimage = "%s"\n' % (name, image)
    s += ct.accept_line()
    s += "args = %s\n" % json.dumps(args)
    s += "connect = { %s }\n" % ", ".join('%s = %s' % (k, v if v.startswith("{") else
                                                       json.dumps(v))
                                          for k, v in connect.items())
    s += extra
    for tool in tools:
        s += '[server.tools.%s]\non = true\neffect = "read"\n' % tool
    return s


def tool_names(c):
    r = c.request("tools/list", timeout=120)
    return [x["name"] for x in r.get("result", {}).get("tools", [])]


def session_of(s):
    return s.session_ids()[-1]


def test_real_servers(base, svc):
    s = ct.Session(base, "", config='egress = "%s"\n' % EGRESS)
    ct.npm_env(s.env)
    pins = {}
    for name, pkg, version in (("pg", PG_PKG, PG_VERSION), ("redis", REDIS_PKG, REDIS_VERSION)):
        started = time.monotonic()
        r = at.add(s, "npm:%s@%s" % (pkg, version), "--name", name)
        pin = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
        at.remember(pin, name, version)
        t.ok(r.returncode == 0 and "@sha256:" in pin,
             "%s: mcpgate add npm:%s@%s (%.0f s)" % (RT, pkg, version, time.monotonic() - started),
             (r.stdout + r.stderr)[-800:])
        pins[name] = pin
    if not all(pins.values()):
        return
    config = (entry("pg", pins["pg"], ["postgresql://postgres@{connect.db}/testdb"],
                    {"db": "127.0.0.1:%d" % svc.pg_port}, ("query",)) +
              entry("redis", pins["redis"], ["redis://{connect.cache}"],
                    {"cache": "localhost:%d" % svc.redis_port}, ("get",)))
    with open(os.path.join(s.conf, "mcp.toml"), "w") as fh:
        fh.write(config)
    r = s.mcpgate("check")
    t.ok(r.returncode == 0 and "configuration OK" in r.stdout,
         "%s: mcpgate check takes both connect entries" % RT, r.stdout + r.stderr)
    for name in ("pg", "redis"):
        r = s.mcpgate("review", name)
        t.ok(r.returncode == 0 and re.search(r"^connect: \w+ = 127\.0\.0\.1:\d+ \(the host's "
                                             r"loopback", r.stdout, re.M) is not None,
             "%s: review starts %s contained and says where it connects" % (RT, name),
             (r.stdout + r.stderr)[-800:])
        r = s.mcpgate("approve", name)
        t.ok(r.returncode == 0 and s.pinned(name), "%s: approve %s" % (RT, name), r.stderr[-400:])
    c = s.serve()
    c.initialize()
    # tools/list answers at once with the servers that are up: wait for both
    ct.wait_settled(s.state, timeout=300)
    names = tool_names(c)
    t.ok("pg__query" in names and "redis__get" in names,
         "%s: both servers start behind their sidecars and offer their tools" % RT, names)
    r = c.call("pg__query", {"sql": "SELECT name, kind FROM pets ORDER BY name"}, timeout=120)
    text = text_of(r) if "result" in r else json.dumps(r)
    t.ok("Rex" in text and "Tom" in text and "cat" in text,
         "%s: server-postgres answers a real query through mcpgate" % RT, text[:400])
    r = c.call("redis__get", {"key": "greeting"}, timeout=120)
    text = text_of(r) if "result" in r else json.dumps(r)
    t.ok("hello from redis" in text,
         "%s: server-redis reads a real key through mcpgate" % RT, text[:400])
    sid = session_of(s)
    c.close(timeout=120)
    audit = s.audit(sid)
    ready = {e["server"]: e for e in audit if e["event"] == "server.ready"}
    t.ok(ready.get("pg", {}).get("protocolVersion") == "2024-11-05",
         "%s: server-postgres 0.6.2 is spoken to in MCP 2024-11-05" % RT,
         {k: v.get("protocolVersion") for k, v in ready.items()})
    tcp = [e for e in audit if e["event"] == "mcp.egress" and e.get("method") == "TCP"]
    t.ok(any(e["server"] == "pg" and e["port"] == svc.pg_port and e["allowed"] for e in tcp) and
         any(e["server"] == "redis" and e["port"] == svc.redis_port and e["allowed"]
             for e in tcp),
         "%s: each database connection is an mcp.egress record of its server" % RT, tcp[:6])
    closes = [e for e in audit if e["event"] == "mcp.egress.close" and
              e.get("port") in (svc.pg_port, svc.redis_port)]
    t.ok(closes and all(e["bytes_up"] > 0 and e["bytes_down"] > 0 for e in closes),
         "%s: and its close record counts the bytes both ways" % RT, closes[:4])
    # the host side's folders, as its argv on the record names its sockets
    socks = [a[len("unix:"):a.index("=")] for e in audit if e["event"] == "egress.host"
             for a in e["argv"] if a.startswith("unix:")]
    left = (ct.labelled("containers", "mcpgate.session=" + sid) +
            ct.labelled("networks", "mcpgate.session=" + sid) +
            [os.path.dirname(os.path.dirname(p)) for p in socks
             if os.path.lexists(os.path.dirname(os.path.dirname(p)))])
    t.ok(len(socks) == 2 and left == [],
         "%s: nothing of the session is left (containers, networks, the host side's folders)"
         % RT, (socks, left))


def test_attacks(base, svc, probe_image, busybox_image):
    """The probe, granted Redis on the host's loopback and a web server on a
    network of the person's, tries every other way out"""
    net = "itest-person-" + ct.TAG  # the person's: not named as mcpgate's own
    ct.rt("network", "create", net)
    ct.made["networks"].append(net)
    up = "mcpgate-itest-web-" + ct.TAG
    ct.rt("run", "-d", "--rm", "--name", up, "--network", net, busybox_image,
          "httpd", "-f", "-p", "8080", "-h", "/www")
    ct.made["containers"].append(up)
    up_ip = ""
    for _ in range(50):
        up_ip = ct.rt("inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
                      up).stdout.strip()
        if up_ip:
            break
        time.sleep(0.1)
    server = ct.probe_server(
        "probe", probe_image, tools=("echo", "env", "connect", "raw", "read_file"),
        extra='env = { CACHE_AT = "{connect.cache}", WEB_AT = "{connect.web}" }\n'
              'connect = { cache = "127.0.0.1:%d", web = { to = "%s:8080", network = "%s" } }\n'
              % (svc.redis_port, up, net))
    s = ct.Session(base, server, config='egress = "%s"\n' % EGRESS)
    pl = s.mcpgate("pull", "probe")
    t.ok(pl.returncode == 0, "%s: mcpgate pull probe" % RT, pl.stderr[-400:])
    rv = s.mcpgate("review", "probe")
    r = s.mcpgate("approve", "probe")
    t.ok(rv.returncode == 0 and r.returncode == 0,
         "%s: the probe with connect entries is reviewed and approved" % RT,
         (rv.stdout + rv.stderr)[-800:] + r.stderr[-400:])
    c = s.serve()
    c.initialize()
    ct.wait_settled(s.state, timeout=300)
    names = tool_names(c)
    t.ok("probe__raw" in names, "%s: the probe starts behind its sidecar" % RT, names)
    sid = session_of(s)
    cache_at = text_of(c.call("probe__env", {"name": "CACHE_AT"}))
    web_at = text_of(c.call("probe__env", {"name": "WEB_AT"}))
    m = re.fullmatch(r"([0-9.]+):(\d+)", cache_at)
    t.ok(m is not None and re.fullmatch(r"[0-9.]+:8080", web_at) is not None,
         "%s: inside, the server is told an address of its sidecar for each" % RT,
         (cache_at, web_at))
    side_ip, cache_port = (m.group(1), int(m.group(2))) if m else ("0.0.0.0", 1)
    reply = text_of(c.call("probe__raw", {"host": side_ip, "port": cache_port,
                                           "data": "PING\r\n"}, timeout=60))
    t.ok("+PONG" in reply, "%s: through it Redis on the host's loopback answers" % RT, reply)
    for _ in range(20):  # the runtime's DNS learns a joined container a moment late
        reply = text_of(c.call("probe__raw", {"host": side_ip, "port": 8080, "data":
                                               "GET / HTTP/1.0\r\nHost: x\r\n\r\n"}, timeout=60))
        if "upstream-answer" in reply:
            break
        time.sleep(0.25)
    t.ok("upstream-answer" in reply,
         "%s: and the web server on a network of the person's answers" % RT, reply[:200])

    tries = {
        "the sidecar on PostgreSQL's port (not granted)": (side_ip, svc.pg_port),
        "the sidecar on the HTTP proxy's port (no hosts)": (side_ip, 3128),
        "the sidecar on another port": (side_ip, 22),
        "its own loopback on Redis's port": ("127.0.0.1", svc.redis_port),
        "host.containers.internal on Redis's port": ("host.containers.internal", svc.redis_port),
        "host.docker.internal on Redis's port": ("host.docker.internal", svc.redis_port),
        "the web server's own address, directly": (up_ip, 8080),
        "the web server's name, directly": (up, 8080),
    }
    in_net = "mcpgate-probe-%s-in" % sid
    out_net = "mcpgate-probe-%s-out" % sid
    for netname in (in_net, out_net, net):
        gws, _ = et.network_facts(netname)
        for gw in gws:
            tries["the gateway %s on Redis's port" % gw] = (gw, svc.redis_port)
    r = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"],
                       capture_output=True, text=True)
    for a in re.findall(r"inet ([0-9.]+)/", r.stdout):
        tries["the host's address %s on Redis's port" % a] = (a, svc.redis_port)
    reached = {}
    for what, (host, port) in tries.items():
        r = c.call("probe__connect", {"host": host, "port": port}, timeout=60)
        if r.get("result", {}).get("isError") is not True:
            reached[what] = text_of(r)
    t.ok(reached == {}, "%s: inside, every other way fails: %d tried (the sidecar's other "
         "ports, its own loopback, the host's aliases, gateways and addresses, the person's "
         "network directly)" % (RT, len(tries)), reached)
    et.host_reach(c, in_net, out_net)

    # A neighbour: another container of the person's network, which the
    # sidecar joined for the web server. It was granted nothing: the
    # sidecar's address there, on the port that leads to Redis on the
    # host's loopback, must not answer it.
    sidecar = [n for n in ct.labelled("containers", "mcpgate.session=" + sid)
               if n.endswith("-egress")]
    side_there = ct.rt("inspect", "-f", '{{with index .NetworkSettings.Networks "%s"}}'
                       '{{.IPAddress}}{{end}}' % net, sidecar[0]).stdout.strip() if sidecar else ""
    script = ('for p in %d 8080 3128; do printf "PING\\r\\n" | nc -w 3 %s $p 2>&1; '
              'echo " [$p done]"; done' % (cache_port, side_there))
    r = ct.rt("run", "--rm", "--network", net, busybox_image, "sh", "-c", script,
              check=False, timeout=120)
    t.ok(side_there != "" and r.returncode == 0 and "[3128 done]" in r.stdout and
         "PONG" not in r.stdout and "upstream-answer" not in r.stdout,
         "%s: a neighbour on the person's network reaches nothing through the sidecar "
         "(%s, the ports to Redis and the web server)" % (RT, side_there or "no address"),
         r.stdout + r.stderr)
    c.close(timeout=120)
    audit = s.audit(sid)
    tcp = [e for e in audit if e["event"] == "mcp.egress" and e.get("method") == "TCP"]
    t.ok(any(e["host"] == "127.0.0.1" and e["port"] == svc.redis_port and e["allowed"]
             for e in tcp) and
         any(e["host"] == up and e["port"] == 8080 and e["allowed"] for e in tcp),
         "%s: what went through is on the record, each destination by its name" % RT, tcp)
    closed = [e for e in audit if e["event"] == "mcp.egress" and not e["allowed"] and
              "outside -from" in (e.get("reason") or "")]
    t.ok(side_there != "" and len(closed) >= 2,
         "%s: and each of the neighbour's connections is a refusal on the record" % RT,
         closed or tcp)
    ct.rt("rm", "-f", *(["--time=0"] if RT == "podman" else []), up, check=False)
    t.ok(ct.labelled("containers", "mcpgate.session=" + sid) == [] and
         ct.labelled("networks", "mcpgate.session=" + sid) == [] and
         ct.rt("network", "exists", net, check=False).returncode == 0
         if RT == "podman" else True,
         "%s: mcpgate's own are gone; the person's network is still there (not mcpgate's)" % RT)


def main():
    if os.environ.get("MCPGATE_CONTAINER_TESTS", "0") != "1":
        return ct.skip("runtime integration tests: set MCPGATE_CONTAINER_TESTS=1 to run them")
    if shutil.which(RT) is None:
        return ct.skip("%s is not installed" % RT)
    if PG_BIN is None or shutil.which("redis-server") is None or shutil.which("psql") is None:
        return ct.skip("needs postgresql and redis-server (scripts/setup installs them)")
    if shutil.which("npm") is None or shutil.which("node") is None:
        return ct.skip("needs node and npm (scripts/setup installs them)")
    if not os.access(EGRESS, os.X_OK):
        print("not ok 1 - no mcpgate-egress at %s (make)" % EGRESS)
        print("0 passed, 1 failed")
        return 1
    if not ct.registry_up():
        return ct.skip("no registry on 127.0.0.1:5000 (tests/integration/run.sh starts one)")

    def body(base):
        svc = Services(base)
        started = time.monotonic()
        try:
            svc.start()
            t.ok(True, "%s: PostgreSQL and Redis run on the host's loopback (%d, %d)"
                 % (RT, svc.pg_port, svc.redis_port))
            test_real_servers(base, svc)
            test_attacks(base, svc, ct.probe_image(), ct.busybox_image())
        finally:
            svc.stop()
            print("# connect_test on %s: %.0f s" % (RT, time.monotonic() - started), flush=True)
    return ct.run_cases("connect", body)


if __name__ == "__main__":
    sys.exit(main())
