#!/usr/bin/env python3
"""Egress on a real runtime (MCPGATE_CONTAINER_TEST_RUNTIME=podman|docker).

A probe server with one listed host gets its own internal and outer networks
and the mcpgate-egress sidecar. From inside the probe's container every way
out is tried: its routes and DNS, a direct connection to the upstream that
bypasses the proxy, the listed upstream through the proxy (200), and the
refusals (an unlisted name, another port, an address, the proxy itself,
localhost, a Host header naming another host). Each attempt must be in the
audit log as mcp.egress. Killing mcpgate stops the proxy; nothing is left.
The upstream is a busybox httpd container of the test's own; no other
address is ever dialled.
"""
import glob
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import containers_test as ct  # noqa: E402  (images, registry, sessions: one way to do them)
from mcpclient import text_of  # noqa: E402

t = ct.t
RT = ct.RT
EGRESS = os.path.abspath(os.environ.get("MCPGATE_EGRESS", "mcpgate-egress"))


def raw(c, host, port, data, then=None, timeout=60):
    args = {"host": host, "port": port, "data": data}
    if then is not None:
        args["then"] = then
    r = c.call("probe__raw", args, timeout=timeout)
    return text_of(r) if "result" in r else json.dumps(r)


def status_of(reply):
    m = re.match(r"HTTP/1\.[01] (\d{3})", reply)
    return int(m.group(1)) if m else None


def network_facts(net):
    """Its gateways (IPv4 text) and the host's bridge interface for it"""
    info = json.loads(ct.rt("network", "inspect", net).stdout)[0]
    subnets = info.get("subnets") or (info.get("IPAM") or {}).get("Config") or []
    gws = [x.get("gateway") or x.get("Gateway") for x in subnets]
    ifname = info.get("network_interface") or (
        (info.get("Options") or {}).get("com.docker.network.bridge.name") or
        "br-" + info.get("Id", "")[:12])
    return [g for g in gws if g], ifname


def host_reach(c, in_net, out_net):
    """The server tries the host itself, past the proxy: every gateway
    address of its networks (IPv4) and the host bridges' link-local IPv6
    addresses, on a port where the host listens on [::] (dual stack)"""
    lsock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    lsock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("::", 0))
    lsock.listen(16)
    lsock.settimeout(0.2)
    port = lsock.getsockname()[1]
    reached = []
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            try:
                conn, addr = lsock.accept()
                reached.append(addr[0])
                conn.close()
            except socket.timeout:
                pass
    th = threading.Thread(target=accept, daemon=True)
    th.start()
    targets = []
    for net in (in_net, out_net):
        gws, ifname = network_facts(net)
        targets += gws
        r = subprocess.run(["ip", "-6", "-o", "addr", "show", "dev", ifname, "scope", "link"],
                           capture_output=True, text=True)
        for m in re.finditer(r"inet6 (fe80::[0-9a-f:]+)/", r.stdout):
            targets.append("%s%%eth0" % m.group(1))
    # the host's own global addresses too (only this machine's, never another's)
    r = subprocess.run(["ip", "-o", "addr", "show", "scope", "global"], capture_output=True,
                       text=True)
    targets += re.findall(r"inet6? ([0-9a-f.:]+)/", r.stdout)
    results = {}
    for target in targets:
        r = c.call("probe__connect", {"host": target, "port": port}, timeout=60)
        results[target] = text_of(r)
    v6 = text_of(c.call("probe__read_file", {"path": "/proc/net/if_inet6"}))
    time.sleep(0.5)
    stop.set()
    th.join(2)
    lsock.close()
    t.ok(targets and all(v != "connected" for v in results.values()) and reached == [],
         "inside: the host itself is not reached past the proxy, on any address family "
         "(%d addresses: gateways, bridges' link-local, the host's own)" % len(targets),
         (results, reached))
    t.ok("fe80" not in v6 and "eth0" not in v6,
         "inside: no IPv6 address on its interface (no link-local to find the host by)", v6)


# where a runtime keeps what it knows of a container: its record, the OCI
# config.json it hands the OCI runtime, its state; root's and a user's
STORE_DIRS = ("/var/lib/containers/storage/overlay-containers", "/run/containers/storage",
              "/run/libpod", "/var/lib/docker/containers", "/run/docker", "/run/containerd",
              os.path.expanduser("~/.local/share/containers/storage/overlay-containers"),
              os.environ.get("XDG_RUNTIME_DIR", "/nonexistent")) + tuple(
    # rootless without XDG_RUNTIME_DIR: the run folders podman and mcpgate make
    glob.glob("/tmp/mcpgate-run-%d" % os.geteuid()) +
    glob.glob("/tmp/podman-run-%d" % os.geteuid()) +
    glob.glob("/tmp/containers-user-%d" % os.geteuid()))


def files_holding(value, dirs=STORE_DIRS, max_size=16 << 20):
    hits = []
    for top in dirs:
        for root, _, files in os.walk(top):
            for name in files:
                path = os.path.join(root, name)
                try:
                    st = os.lstat(path)
                    if not stat.S_ISREG(st.st_mode) or st.st_size > max_size:
                        continue  # never a FIFO (an open would wait) or an image layer
                    with open(path, "rb") as fh:
                        if value.encode() in fh.read():
                            hits.append(path)
                except OSError:
                    continue
    return hits


def processes_holding(value, inside_pid):
    """Host processes (outside the server's own pid namespace) whose argv or
    environment holds value"""
    try:
        theirs = os.readlink("/proc/%d/ns/pid" % inside_pid)
    except OSError:
        theirs = None
    hits = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if theirs is not None and os.readlink("/proc/%s/ns/pid" % pid) == theirs:
                continue  # the server itself: it is given the value
            for what in ("environ", "cmdline"):
                with open("/proc/%s/%s" % (pid, what), "rb") as fh:
                    if value.encode() in fh.read():
                        hits.append("%s %s" % (pid, what))
        except OSError:
            continue
    return hits


def test_secret_unrecorded(secret, name):
    """12.8: the bound value reaches the server, and is nowhere the runtime
    keeps anything: not in inspect, not in its files, not in the environment
    or argv of a host process"""
    whole = ct.rt("inspect", name).stdout
    t.ok(whole.strip() != "" and secret not in whole,
         "the value is nowhere in `%s inspect` of the server (Config.Env included)" % RT,
         [ln for ln in whole.splitlines() if secret in ln][:3])
    pid = int(ct.rt("inspect", "-f", "{{.State.Pid}}", name).stdout.strip() or 0)
    hits = processes_holding(secret, pid)
    t.ok(pid > 0 and hits == [],
         "no host process has it in its argv or environment (the runtime's included); only "
         "the server's own, in its pid namespace", hits)
    hits = files_holding(secret)
    t.ok(hits == [], "no file of the runtime's holds it (its records, config.json, state)", hits)


def test_egress(base, probe_image, busybox_image):
    up = "mcpgate-itest-up-" + ct.TAG
    server = ct.probe_server("probe", probe_image,
                             tools=("echo", "raw", "read_file", "connect", "env"),
                             extra='network = ["%s:8080"]\nnetwork_private = ["%s:8080"]\n'
                                   'credential = "itest"\nposition = "env:ITEST_TOKEN"\n'
                                   % (up, up))
    s = ct.Session(base, server, config='egress = "%s"\n' % EGRESS)
    secret = "itest-" + ct.TAG + "-Zq9"
    r = subprocess.run([ct.MCPGATE, "secret", "set", "itest"], input=secret + "\n", env=s.env,
                       capture_output=True, text=True, timeout=60)
    r2 = subprocess.run([ct.MCPGATE, "secret", "bind", "itest", "--host", "%s:8080" % up,
                         "--position", "env:ITEST_TOKEN"], env=s.env, capture_output=True,
                        text=True, timeout=60)
    t.ok(r.returncode == 0 and r2.returncode == 0, "a secret bound for the listed host",
         r.stderr + r2.stderr)
    r = s.mcpgate("pull", "probe")
    s.mcpgate("review", "probe")
    r = s.mcpgate("approve", "probe")
    t.ok(r.returncode == 0, "the probe with one listed host is approved", r.stderr)

    # the upstream: its own network first; joined to the session's outer one below
    net = "mcpgate-itest-upnet-" + ct.TAG
    ct.rt("network", "create", net)
    ct.made["networks"].append(net)
    ct.rt("run", "-d", "--rm", "--name", up, "--network", net, busybox_image,
          "httpd", "-f", "-p", "8080", "-h", "/www")
    ct.made["containers"].append(up)

    c = s.serve()
    c.initialize()
    ct.wait_settled(s.state)
    names = [x["name"] for x in c.request("tools/list", timeout=120)["result"]["tools"]]
    t.ok("probe__raw" in names, "the server with hosts starts behind its proxy", names)
    sid = s.session_ids()[0]
    out_net = "mcpgate-probe-%s-out" % sid
    in_net = "mcpgate-probe-%s-in" % sid
    nets = ct.labelled("networks", "mcpgate.session=" + sid)
    t.ok(sorted(nets) == sorted([in_net, out_net]), "two networks of its own, labelled", nets)
    ct.rt("network", "connect", out_net, up)
    up_ip = ct.rt("inspect", "-f", '{{(index .NetworkSettings.Networks "%s").IPAddress}}' % out_net,
                  up).stdout.strip()

    r = c.call("probe__env", {"name": "ITEST_TOKEN"})
    t.ok(text_of(r) == "[redacted:itest]",
         "inside: the declared variable is present (its value comes back redacted)", r)
    test_secret_unrecorded(secret, "mcpgate-probe-" + sid)

    proxy = text_of(c.call("probe__env", {"name": "HTTP_PROXY"}))
    m = re.fullmatch(r"http://([0-9.]+):(\d+)", proxy)
    t.ok(m is not None, "the server's HTTP_PROXY names the sidecar", proxy)
    p_host, p_port = (m.group(1), int(m.group(2))) if m else ("0.0.0.0", 1)

    routes = text_of(c.call("probe__read_file", {"path": "/proc/net/route"}))
    lines = [ln.split() for ln in routes.splitlines()[1:] if ln.strip()]
    if RT == "podman":
        t.ok(lines and all(f[1] != "00000000" for f in lines),
             "inside: no default route, only its own subnet's", routes)
    else:
        # docker gives an --internal network a default route to its bridge and
        # drops what would leave it in the host's firewall: the attempts below
        # (name, address, bypassing the proxy) are what shows it is closed
        t.ok(lines and all(f[1] == "00000000" or f[2] == "00000000" for f in lines),
             "inside: its own subnet and docker's internal bridge only", routes)
    resolv = c.call("probe__read_file", {"path": "/etc/resolv.conf"})
    nameservers = re.findall(r"^nameserver\s+(\S+)", text_of(resolv) if "result" in resolv else "",
                             re.M)
    r = c.call("probe__connect", {"host": up, "port": 8080}, timeout=60)
    t.ok(r["result"].get("isError") is True,
         "inside: the upstream's name does not resolve or connect directly (nameservers %s)"
         % nameservers, r)
    r = c.call("probe__connect", {"host": up_ip, "port": 8080}, timeout=60)
    t.ok(r["result"].get("isError") is True,
         "inside: a direct connection to the upstream's address, bypassing the proxy, fails", r)

    # the listed upstream is found by its name on the outer network: that
    # needs the runtime's name resolution there (podman: netavark with
    # aardvark-dns; on CNI without dnsname a name does not resolve)
    backend = (ct.rt("info", "--format", "{{.Host.NetworkBackend}}").stdout.strip()
               if RT == "podman" else "docker")
    look = None
    for _ in range(20):
        look = ct.rt("run", "--rm", "--network", out_net, busybox_image, "nslookup", up,
                     check=False)
        if look.returncode == 0:
            break
        time.sleep(0.25)
    t.ok(look.returncode == 0,
         "names resolve on the outer network (network backend %s%s)"
         % (backend, "; CNI does not resolve names: run scripts/setup, which says how to "
            "switch to netavark" if backend == "cni" else ""),
         (look.stdout + look.stderr)[-300:])

    get = "GET http://%s:8080/ HTTP/1.1\r\nHost: %s:8080\r\nConnection: close\r\n\r\n" % (up, up)
    # the runtime's DNS learns the joined upstream's name a moment after the
    # connect: until then the proxy answers 502 (a name it cannot resolve)
    for _ in range(20):
        reply = raw(c, p_host, p_port, get)
        if status_of(reply) != 502:
            break
        time.sleep(0.25)
    t.ok(status_of(reply) == 200 and "upstream-answer" in reply,
         "through the proxy the listed upstream answers 200 (plain HTTP)", reply[:300])
    # the same race with the runtime's DNS: aardvark-dns has been seen to
    # answer a name, then not, for a moment (a fresh CI run, 2026-12-01)
    for _ in range(20):
        reply = raw(c, p_host, p_port, "CONNECT %s:8080 HTTP/1.1\r\nHost: %s:8080\r\n\r\n" % (up, up),
                    then="GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % up)
        if status_of(reply) != 502:
            break
        time.sleep(0.25)
    t.ok(status_of(reply) == 200 and "upstream-answer" in reply,
         "through a CONNECT tunnel too", reply[:300])

    host_reach(c, in_net, out_net)

    refused = {
        "an unlisted name on CONNECT": "CONNECT unlisted.invalid:443 HTTP/1.1\r\nHost: unlisted.invalid:443\r\n\r\n",
        "an unlisted name on plain HTTP": "GET http://unlisted.invalid/ HTTP/1.1\r\nHost: unlisted.invalid\r\n\r\n",
        "the listed host on another port": "CONNECT %s:8081 HTTP/1.1\r\nHost: %s:8081\r\n\r\n" % (up, up),
        "an address": "CONNECT %s:8080 HTTP/1.1\r\nHost: %s:8080\r\n\r\n" % (up_ip, up_ip),
        "the proxy itself": "CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (p_host, p_port, p_host, p_port),
        "localhost": "CONNECT localhost:8080 HTTP/1.1\r\nHost: localhost:8080\r\n\r\n",
    }
    for what, req in refused.items():
        reply = raw(c, p_host, p_port, req)
        t.ok(status_of(reply) == 403, "%s is refused with 403" % what, reply[:200])
    reply = raw(c, p_host, p_port, "GET http://%s:8080/ HTTP/1.1\r\nHost: unlisted.invalid\r\n"
                "Connection: close\r\n\r\n" % up)
    t.ok(status_of(reply) in (400, 403) or ("upstream-answer" in reply and status_of(reply) == 200),
         "a Host header naming another host does not move the request", reply[:200])
    ct.rt("network", "disconnect", out_net, up)  # the session removes its own networks
    c.close(timeout=60)

    eg = [e for e in s.audit(sid) if e["event"] == "mcp.egress"]
    allowed = [e for e in eg if e["allowed"]]
    denied = [e for e in eg if not e["allowed"]]
    t.ok(len(allowed) >= 2 and all(e["host"] == up and e["server"] == "probe" for e in allowed),
         "each allowed attempt is an mcp.egress record", allowed)
    t.ok(len(denied) >= len(refused) and all(e.get("reason") for e in denied),
         "each refused attempt is recorded with its reason", denied)
    left = ct.labelled("containers", "mcpgate.session=" + sid)
    nets = ct.labelled("networks", "mcpgate.session=" + sid)
    t.ok(left == [] and nets == [], "no container or network is left after the session",
         (left, nets))
    leaked = []
    for d in (s.conf, s.env["XDG_DATA_HOME"], s.state):
        for root, _, files in os.walk(d):
            for name in files:
                with open(os.path.join(root, name), "rb") as fh:
                    if secret.encode() in fh.read():
                        leaked.append(os.path.join(root, name))
    t.ok(leaked == [], "after the session the value is in no file under the config, data "
                       "and state dirs", leaked)

    # lifeline: kill -9 of mcpgate, the proxy goes
    c = s.serve()
    c.initialize()
    ct.wait_settled(s.state)
    c.request("tools/list", timeout=120)
    sid2 = [x for x in s.session_ids() if x != sid][0]
    side = "mcpgate-probe-%s-egress" % sid2
    t.ok(side in ct.labelled("containers", "mcpgate.session=" + sid2), "the sidecar runs", side)
    c.proc.send_signal(signal.SIGKILL)
    c.proc.wait(30)
    gone = False
    for _ in range(100):
        if side not in ct.labelled("containers", "mcpgate.session=" + sid2):
            gone = True
            break
        time.sleep(0.2)
    t.ok(gone, "killing mcpgate stops the proxy (its lifeline ends)")
    c2 = s.serve()  # the next mcpgate sweeps the rest (the probe, the networks)
    c2.initialize()
    ct.wait_settled(s.state)
    c2.request("tools/list", timeout=120)
    c2.close(timeout=60)
    t.ok(ct.labelled("networks", "mcpgate.session=" + sid2) == [] and
         ct.labelled("containers", "mcpgate.session=" + sid2) == [],
         "and the sweep removes its networks too")


def main():
    if shutil.which(RT) is not None and not os.access(EGRESS, os.X_OK):
        print("not ok 1 - no mcpgate-egress at %s (make)" % EGRESS)
        print("0 passed, 1 failed")
        return 1
    return ct.run_cases("egress", lambda base: test_egress(base, ct.probe_image(),
                                                              ct.busybox_image()))


if __name__ == "__main__":
    sys.exit(main())
