#!/usr/bin/env python3
"""The two halves of egress/bench.sh.

upstream DIR: in the upstream's namespace, 10.233.0.2:8443. A connection that
sends "BIG n\\n" gets n MiB back; one that sends anything else gets a short
answer; both close after.

client DIR EGRESS MIB N T: in the proxy's namespace; starts each proxy in turn
on 10.233.0.1 and measures it (see bench.sh). Every loop is bounded.
"""
import os
import shutil
import socket
import subprocess
import sys
import threading
import time

UP = ("10.233.0.2", 8443)
CHUNK = memoryview(os.urandom(1 << 20))


def upstream(tmp):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(UP)
    s.listen(1024)
    open(os.path.join(tmp, "ready"), "w").close()

    def serve(c):
        try:
            c.settimeout(120)
            line = c.recv(100)
            if line.startswith(b"BIG "):
                for _ in range(int(line.split()[1])):
                    c.sendall(CHUNK)
            else:
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            c.shutdown(socket.SHUT_WR)
            while c.recv(65536):
                pass
        except (OSError, ValueError):
            pass
        c.close()

    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


def tunnel(port, timeout=30):
    s = socket.create_connection(("10.233.0.1", port), timeout=timeout)
    s.sendall(b"CONNECT 10.233.0.2:8443 HTTP/1.1\r\nHost: 10.233.0.2:8443\r\n\r\n")
    head = b""
    while b"\r\n\r\n" not in head:
        data = s.recv(4096)
        if not data:
            raise OSError("proxy closed: %r" % head)
        head += data
    if not head.startswith(b"HTTP/1.") or b" 200" not in head.split(b"\r\n")[0]:
        raise OSError("proxy said %r" % head[:80])
    return s, head[head.find(b"\r\n\r\n") + 4:]


def rss_kib(pid):
    total = 0
    for p in [pid] + children(pid):
        try:
            with open("/proc/%d/status" % p) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def children(pid):
    out = []
    try:
        for t in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, t)) as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out + [g for c in out for g in children(c)]


def measure(name, argv, port, mib, n, t):
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            s, _ = tunnel(port, timeout=2)
            s.close()
            break
        except OSError:
            time.sleep(0.2)
    else:
        p.kill()
        p.wait()
        return name, None
    time.sleep(0.3)
    idle = rss_kib(p.pid)
    row = {}
    try:
        s, rest = tunnel(port)
        t0 = time.time()
        s.sendall(b"BIG %d\n" % mib)
        got = len(rest)
        buf = bytearray(1 << 20)
        while True:
            k = s.recv_into(buf)
            if not k:
                break
            got += k
        took = time.time() - t0
        s.close()
        row["MiB/s"] = "%.0f" % (got / took / (1 << 20)) if got == mib << 20 else "short"
        t0 = time.time()
        for _ in range(n):
            s, _ = tunnel(port)
            s.sendall(b"GET / HTTP/1.1\r\n\r\n")
            while s.recv(4096):
                pass
            s.close()
        row["ms/connect+rt"] = "%.2f" % ((time.time() - t0) * 1000 / n)
        held = []
        for _ in range(t):
            held.append(tunnel(port)[0])
        time.sleep(0.5)
        full = rss_kib(p.pid)
        row["RSS idle KiB"] = str(idle)
        row["RSS %d tunnels KiB" % t] = str(full)
        row["KiB/tunnel"] = "%.1f" % ((full - idle) / t)
        for s in held:
            s.close()
    except OSError as e:
        row["error"] = str(e)
    p.stdin.close()
    p.terminate()
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    return name, row


def client(tmp, egress, mib, n, t):
    rows = []
    rows.append(measure("mcpgate-egress", [egress, "-listen", "10.233.0.1:3128", "-lifeline",
                                           "-allow-private", "10.233.0.2:8443",
                                           "-max-tunnels", str(t + 64)], 3128, mib, n, t))
    if shutil.which("tinyproxy"):
        conf = os.path.join(tmp, "tinyproxy.conf")
        with open(conf, "w") as f:
            f.write("User nobody\nGroup nogroup\nPort 3129\nListen 10.233.0.1\nTimeout 600\n"
                    "MaxClients %d\nAllow 10.233.0.0/29\nConnectPort 8443\nLogLevel Critical\n"
                    % (t + 64))
        rows.append(measure("tinyproxy", ["tinyproxy", "-d", "-c", conf], 3129, mib, n, t))
    squid = shutil.which("squid") or ("/usr/sbin/squid" if os.path.exists("/usr/sbin/squid")
                                      else None)
    if squid:
        conf = os.path.join(tmp, "squid.conf")
        with open(conf, "w") as f:
            f.write("http_port 10.233.0.1:3130\nacl SSL_ports port 8443\nacl CONNECT method "
                    "CONNECT\nhttp_access deny CONNECT !SSL_ports\nhttp_access allow all\n"
                    "cache deny all\ncache_mem 8 MB\nworkers 1\n"
                    "access_log none\ncache_log %s/squid-cache.log\npid_filename %s/squid.pid\n"
                    "cache_effective_user proxy\ncoredump_dir %s\nshutdown_lifetime 0 seconds\n"
                    "max_filedescriptors %d\n" % (tmp, tmp, tmp, 4 * t + 256))
        rows.append(measure("squid", [squid, "-N", "-f", conf], 3130, mib, n, t))
    keys = []
    for _, row in rows:
        for k in row or {}:
            if k not in keys:
                keys.append(k)
    print("| proxy | " + " | ".join(keys) + " |")
    print("| --- |" + " --- |" * len(keys))
    for name, row in rows:
        print("| %s | %s |" % (name, " | ".join((row or {}).get(k, "did not start")
                                                  for k in keys)))


if __name__ == "__main__":
    if sys.argv[1] == "upstream":
        upstream(sys.argv[2])
    else:
        client(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]))
