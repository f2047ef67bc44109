#!/usr/bin/env python3
"""The driver of egress/cases_test.sh; runs inside the proxy's network and
mount namespaces, which cases_test.sh made (the upstream lives in another
namespace at 10.233.0.2 and fd00:233::2; /etc/hosts and /etc/resolv.conf are
the test's own).

For each testdata/egress/NNN-name/ folder (format: egress/README.md) it starts
the proxy with the case's arguments, sends the request as a client, and checks
the answer, what the upstream received, what the fake DNS server was asked,
the records on the proxy's stdout, and that the proxy exits cleanly (status 0,
no sanitizer report) when its lifeline ends. Then a few scripted checks that
are about time and numbers rather than bytes: timeouts, the tunnel cap, many
tunnels at once, a large transfer.

Usage: cases_driver.py EGRESS CASES_DIR UPSTREAM_DIR
Environment: EGRESS_WRAPPER (e.g. "valgrind --error-exitcode=99") runs the
proxy under a tool; EGRESS_CASES (a glob) picks cases; EGRESS_CHECKS (words
among scripted, reset, churn, cap, forward) runs those checks after them (all of them after
all the cases by default).
"""
import codecs
import fnmatch
import hashlib
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import threading
import time

EGRESS, CASES, UPDIR = sys.argv[1], sys.argv[2], sys.argv[3]
WRAPPER = shlex.split(os.environ.get("EGRESS_WRAPPER", ""))
PICK = os.environ.get("EGRESS_CASES", "*")
CHECKS = os.environ.get("EGRESS_CHECKS", "").split()
LISTEN = ("10.233.0.1", 3128)
SLOW = 4 if WRAPPER else 1

DEFAULT_ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"

count = {"n": 0, "pass": 0, "fail": 0}


def ok(cond, name, detail=""):
    count["n"] += 1
    if cond:
        count["pass"] += 1
        print("ok %d - %s" % (count["n"], name))
    else:
        count["fail"] += 1
        print("not ok %d - %s" % (count["n"], name))
        for line in str(detail).splitlines()[:40]:
            print("#   " + line)
    sys.stdout.flush()
    return cond


def unescape(text):
    """Case files: line ends are ignored, escapes (\\r \\n \\t \\0 \\xHH
    \\\\) are decoded, so every byte is visible and CRLF is written out."""
    return codecs.escape_decode("".join(text.splitlines()).encode())[0]


class FakeDNS(threading.Thread):
    """127.0.0.1:53 in the proxy's namespace: records every name asked;
    answers NXDOMAIN, except for slow.test, which it never answers."""

    def __init__(self):
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 53))
        self.names = []

    def run(self):
        while True:
            try:
                data, peer = self.sock.recvfrom(4096)
            except OSError:
                return
            name, i = [], 12
            while i < len(data) and data[i] != 0:
                n = data[i]
                name.append(data[i + 1:i + 1 + n].decode("ascii", "replace"))
                i += 1 + n
            qname = ".".join(name).lower()
            self.names.append(qname)
            if qname == "slow.test":
                continue
            flags = b"\x81\x83"  # response, RD, RA, NXDOMAIN
            reply = data[:2] + flags + data[4:6] + b"\x00\x00\x00\x00\x00\x00" + data[12:i + 5]
            self.sock.sendto(reply, peer)


dns = FakeDNS()
dns.start()


def up_reset(answer=DEFAULT_ANSWER, extra=None):
    for f in os.listdir(UPDIR):
        if f.startswith("conn-") or f.startswith("answer"):
            os.unlink(os.path.join(UPDIR, f))
    with open(os.path.join(UPDIR, "answer"), "wb") as f:
        f.write(answer)
    for name, data in (extra or {}).items():
        with open(os.path.join(UPDIR, name), "wb") as f:
            f.write(data)


def up_received():
    got = []
    for f in sorted(os.listdir(UPDIR)):
        if f.startswith("conn-"):
            with open(os.path.join(UPDIR, f), "rb") as fh:
                got.append(fh.read())
    return got


def start_proxy(args):
    argv = WRAPPER + [EGRESS, "-listen", "%s:%d" % LISTEN, "-lifeline"] + args
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    deadline = time.time() + 5 * SLOW
    while time.time() < deadline:
        try:
            socket.create_connection(LISTEN, timeout=1).close()
            return p
        except OSError:
            if p.poll() is not None:
                return p
            time.sleep(0.02)
    return p


def stop_proxy(p):
    """End the lifeline; returns (status, records, stdout lines that are not
    JSON, stderr)."""
    try:
        out, err = p.communicate(timeout=10 * SLOW)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        return -999, [], [], err.decode("utf-8", "replace")
    records, junk = [], []
    for line in out.decode("utf-8", "replace").splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            junk.append(line)
    return p.returncode, records, junk, err.decode("utf-8", "replace")


def clean_exit(rc, junk, err):
    bad = [m for m in ("AddressSanitizer", "LeakSanitizer", "runtime error:",
                       r"ERROR SUMMARY: [1-9]", r"definitely lost: [1-9]") if re.search(m, err)]
    return rc == 0 and not junk and not bad


PAUSE = "[pause]"


def pieces(text):
    """A tunnel file's pieces: a line that is exactly [pause] ends one, so a
    case can send its bytes as several TCP segments."""
    parts, cur = [], []
    for line in text.splitlines():
        if line == PAUSE:
            parts.append("\n".join(cur))
            cur = []
        else:
            cur.append(line)
    parts.append("\n".join(cur))
    return [unescape(p) for p in parts]


def client(request, tunnel=None, timeout=5.0, addr=LISTEN):
    """Send the request; with a tunnel (bytes, or a list of pieces sent
    0.1 s apart), wait for the proxy's answer head and send the tunnel
    bytes; then read until the proxy closes."""
    got = b""
    if isinstance(tunnel, bytes):
        tunnel = [tunnel]
    try:
        with socket.create_connection(addr, timeout=timeout * SLOW) as s:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.sendall(request)
            if tunnel is not None:
                while b"\r\n\r\n" not in got:
                    data = s.recv(65536)
                    if not data:
                        return got
                    got += data
                if got.startswith(b"HTTP/1.1 200"):
                    for i, piece in enumerate(tunnel):
                        if i > 0:
                            time.sleep(0.1)
                        s.sendall(piece)
            while True:
                data = s.recv(1 << 20)
                if not data:
                    break
                got += data
    except OSError as e:
        got += ("<client: %s>" % e).encode()
    return got


def records_match(want, got):
    if len(want) != len(got):
        return False
    for w, g in zip(want, got):
        for k, v in w.items():
            got = g.get(k, "<missing>")
            if isinstance(v, str) and v.endswith("*") and isinstance(got, str):
                if not got.startswith(v[:-1]):
                    return False
            elif got != v:
                return False
    return True


def run_case(path):
    name = os.path.basename(path)

    def read(f, default=None):
        p = os.path.join(path, f)
        if not os.path.exists(p):
            return default
        with open(p, encoding="utf-8") as fh:
            return fh.read()

    args = shlex.split(read("args", ""))
    request = unescape(read("request"))
    tunnel = read("tunnel")
    tunnel = pieces(tunnel) if tunnel is not None else None
    answer = read("upstream")
    up_reset(unescape(answer) if answer is not None else DEFAULT_ANSWER)
    want_records = [json.loads(l) for l in read("records", "").splitlines() if l.strip()]
    dns_before = len(dns.names)
    p = start_proxy(args)
    got = client(request, tunnel)
    time.sleep(0.05)
    rc, records, junk, err = stop_proxy(p)
    asked = dns.names[dns_before:]
    received = up_received()
    all_up = b"".join(received)
    checks = []
    for line in read("expect", "").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        if word == "status":
            checks.append((got.startswith(b"HTTP/1.1 " + rest.encode() + b" "),
                           "status " + rest))
        elif word == "client-has":
            checks.append((unescape(rest) in got, "the client got " + rest))
        elif word == "client-lacks":
            checks.append((unescape(rest) not in got, "the client did not get " + rest))
        elif word == "upstream-has":
            checks.append((unescape(rest) in all_up, "the upstream got " + rest))
        elif word == "upstream-lacks":
            checks.append((unescape(rest) not in all_up, "the upstream did not get " + rest))
        elif word == "upstream-none":
            checks.append((not received, "no connection reached the upstream"))
        elif word == "upstream-empty":
            checks.append((all_up == b"", "no byte reached the upstream"))
        elif word == "dns-none":
            checks.append((not asked, "no name went to DNS"))
        elif word == "dns-has":
            checks.append((rest in asked, "DNS was asked for " + rest))
        else:
            checks.append((False, "unknown directive " + word))
    detail = "client got: %r\nupstream got: %r\ndns asked: %r\nrecords: %r\nstderr: %s" % (
        got[:600], [r[:400] for r in received], asked, records, err[-3000:])
    for cond, what in checks:
        ok(cond, "%s: %s" % (name, what), detail)
    ok(records_match(want_records, records), "%s: records" % name,
       "want: %r\n%s" % (want_records, detail))
    ok(clean_exit(rc, junk, err), "%s: the proxy exits cleanly on its lifeline" % name,
       "status %s, junk on stdout %r\n%s" % (rc, junk, err[-3000:]))


def scripted():
    # -h and a bad option, against the binary itself
    r = subprocess.run(WRAPPER + [EGRESS, "-h"], capture_output=True)
    ok(r.returncode == 0 and b"-allow-private" in r.stdout and b"-max-tunnels" in r.stdout,
       "-h prints the options and exits 0")
    r = subprocess.run(WRAPPER + [EGRESS, "-listen", "10.233.0.1:3128", "-max-tunnels", "7x"],
                       capture_output=True)
    ok(r.returncode == 2 and b"-max-tunnels 7x" in r.stderr and r.stdout == b"",
       "a bad number exits 2 naming the option", r.stderr)
    r = subprocess.run(WRAPPER + [EGRESS, "-listen", "10.233.0.1:3128", "-frob"],
                       capture_output=True)
    ok(r.returncode == 2 and b"-frob" in r.stderr, "an unknown option exits 2 naming it")
    # a wildcard the proxy refuses stops it at start, whatever mcpgate checked
    for bad in ("*", "*.", "*.test", "a.*.wild.test", "**.wild.test", "*x.wild.test",
                "*.10.233.0.2", "*.wild.test:0", "*.docker.internal"):
        r = subprocess.run(WRAPPER + [EGRESS, "-listen", "10.233.0.1:3128", "-allow", bad],
                           capture_output=True)
        ok(r.returncode == 2 and ("-allow " + bad).encode() in r.stderr and r.stdout == b"",
           "-allow %s exits 2 naming it" % bad, r.stderr)

    # a listed literal in a range the proxy never reaches stops it at start,
    # named with its range, -allow-private or not
    for opt, bad, rng in (
            ("-allow", "168.63.129.16", "168.63.129.16/32 Azure WireServer"),
            ("-allow-private", "168.63.129.16:8443", "168.63.129.16/32 Azure WireServer"),
            ("-allow-private", "[::ffff:168.63.129.16]", "168.63.129.16/32 Azure WireServer"),
            ("-allow-private", "[fd00:ec2::254]", "fd00:ec2::/32 AWS"),
            ("-allow-private", "[fd20:ce::254]:80", "fd20:ce::254 GCP metadata"),
            ("-allow-private", "100.100.100.200", "100.100.100.200/32 Alibaba Cloud metadata"),
            ("-allow-private", "169.254.170.2", "169.254.170.2/32 AWS ECS"),
            ("-allow-private", "[2001:2::1]", "2001:2::/48 benchmarking"),
            ("-allow-private", "[2001:20::1]:8443", "2001:20::/28 ORCHIDv2"),
            ("-allow-private", "[3fff::1]", "3fff::/20 documentation"),
            ("-allow-private", "192.31.196.1", "192.31.196.0/24 AS112")):
        try:
            r = subprocess.run(WRAPPER + [EGRESS, "-listen", "10.233.0.1:3128", opt, bad],
                               capture_output=True, timeout=5 * SLOW)
            rc, err = r.returncode, r.stderr
        except subprocess.TimeoutExpired:
            rc, err = None, b"<it started and kept running>"
        ok(rc == 2 and ("%s %s" % (opt, bad)).encode() in err and rng.encode() in err,
           "%s %s exits 2 naming it and its range" % (opt, bad), err)

    # the lifeline: the proxy ends when its standard input does
    p = start_proxy(["-allow", "example.com"])
    t0 = time.time()
    p.stdin.close()
    try:
        rc = p.wait(timeout=5 * SLOW)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = p.wait()
    p.stdout.read()
    p.stderr.read()
    ok(rc == 0 and time.time() - t0 < 3 * SLOW, "the proxy exits when its lifeline ends")

    # the header timeout: a client that never finishes its request gets 408
    up_reset()
    p = start_proxy(["-header-timeout", str(300 * SLOW), "-allow-private", "upstream.test"])
    t0 = time.time()
    got = client(b"CONNECT upstream.test:443 HTTP/1.1\r\nHost: ups")
    took = time.time() - t0
    rc, records, junk, err = stop_proxy(p)
    ok(got.startswith(b"HTTP/1.1 408 ") and took < 2 * SLOW, "header timeout: 408", got)
    ok(records_match([{"event": "attempt", "allowed": False, "reason": "header timeout",
                       "method": None}], records), "header timeout: record", records)
    ok(clean_exit(rc, junk, err) and not up_received(), "header timeout: clean, nothing upstream",
       err)

    # the idle timeout closes a quiet tunnel
    up_reset()
    # (not scaled under a tool: the upstream answers a quiet client after 1 s)
    p = start_proxy(["-idle-timeout", "300", "-allow-private", "upstream.test:8443"])
    t0 = time.time()
    got = client(b"CONNECT upstream.test:8443 HTTP/1.1\r\n\r\n", tunnel=b"")
    took = time.time() - t0
    rc, records, junk, err = stop_proxy(p)
    ok(got.startswith(b"HTTP/1.1 200 ") and b"hello" not in got and took < 0.95,
       "idle timeout: the quiet tunnel is closed (%.2fs)" % took, got)
    ok(records_match([{"event": "attempt", "allowed": True},
                      {"event": "close", "bytes_up": 0, "bytes_down": 0}], records),
       "idle timeout: attempt and close records", records)
    ok(clean_exit(rc, junk, err), "idle timeout: clean exit", err)

    # the tunnel cap: the second connection at -max-tunnels 1 gets 503
    p = start_proxy(["-max-tunnels", "1", "-allow", "example.com"])
    time.sleep(0.2 * SLOW)  # the readiness probe's connection is gone
    hold = socket.create_connection(LISTEN, timeout=5)
    hold.sendall(b"CONNECT exa")
    time.sleep(0.1 * SLOW)
    if not WRAPPER:
        # every descriptor the proxy made is close-on-exec (O_CLOEXEC is 02000000)
        open_fds = {}
        for fd in os.listdir("/proc/%d/fdinfo" % p.pid):
            if int(fd) > 2:
                with open("/proc/%d/fdinfo/%s" % (p.pid, fd)) as f:
                    flags = int(f.read().split("flags:")[1].split()[0], 8)
                open_fds[fd] = flags
        ok(len(open_fds) >= 5 and all(fl & 0o2000000 for fl in open_fds.values()),
           "every descriptor is close-on-exec (%d checked)" % len(open_fds), open_fds)
    got = client(b"CONNECT example.com:443 HTTP/1.1\r\n\r\n")
    hold.close()
    time.sleep(0.1)
    got2 = client(b"CONNECT example.com:22 HTTP/1.1\r\n\r\n")
    rc, records, junk, err = stop_proxy(p)
    ok(got.startswith(b"HTTP/1.1 503 "), "max-tunnels: over the cap gets 503", got)
    ok(got2.startswith(b"HTTP/1.1 403 "), "max-tunnels: a slot frees when a client leaves", got2)
    ok(clean_exit(rc, junk, err), "max-tunnels: clean exit", err)

    # many tunnels at once on the one loop
    up_reset()
    p = start_proxy(["-allow-private", "upstream.test:8443"])
    results = [None] * 60

    def one(i):
        results[i] = client(b"CONNECT upstream.test:8443 HTTP/1.1\r\n\r\n",
                            tunnel=b"GET /%d HTTP/1.1\r\nHost: x\r\n\r\n" % i, timeout=20)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(results))]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.time() - t0
    rc, records, junk, err = stop_proxy(p)
    good = sum(1 for r in results if r is not None and r.endswith(b"hello"))
    ok(good == len(results), "60 concurrent tunnels all answered (%.2fs)" % took,
       [r[:100] for r in results if r is None or not r.endswith(b"hello")][:3])
    closes = [r for r in records if r.get("event") == "close"]
    ok(len(records) == 120 and len(closes) == 60 and
       all(c["bytes_down"] == len(DEFAULT_ANSWER) for c in closes),
       "60 attempt and 60 close records with the right byte counts")
    ok(clean_exit(rc, junk, err), "many tunnels: clean exit", err)

    # a large transfer both ways through a tunnel (splice)
    big = os.urandom(8 << 20)
    up_reset(answer=big)
    p = start_proxy(["-allow-private", "upstream.test:8443"])
    upload = b"PUT / HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % (4 << 20) + os.urandom(4 << 20)
    t0 = time.time()
    got = client(b"CONNECT upstream.test:8443 HTTP/1.1\r\n\r\n", tunnel=upload, timeout=60)
    took = time.time() - t0
    rc, records, junk, err = stop_proxy(p)
    body = got[got.find(b"\r\n\r\n") + 4:]
    ok(hashlib.sha256(body).digest() == hashlib.sha256(big).digest(),
       "8 MiB down a tunnel arrives intact (%.0f ms)" % (took * 1000))
    ok(hashlib.sha256(b"".join(up_received())).digest() == hashlib.sha256(upload).digest(),
       "4 MiB up a tunnel arrives intact")
    closes = [r for r in records if r.get("event") == "close"]
    ok(len(closes) == 1 and closes[0]["bytes_down"] == len(big) and
       closes[0]["bytes_up"] == len(upload), "the close record counts both ways", closes)
    ok(clean_exit(rc, junk, err), "large transfer: clean exit", err)


def reset_mid_tunnel():
    """A client that resets its connection in the middle of a download: the
    proxy (SIGPIPE ignored) closes that tunnel, records it, and goes on."""
    import struct
    up_reset(answer=os.urandom(32 << 20))
    p = start_proxy(["-allow-private", "upstream.test:8443"])
    got = 0
    try:
        s = socket.create_connection(LISTEN, timeout=10)
        s.sendall(b"CONNECT upstream.test:8443 HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n")
        while got < (1 << 20):
            data = s.recv(65536)
            if not data:
                break
            got += len(data)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
    except OSError:
        pass
    time.sleep(0.3)
    up_reset()
    after = client(b"CONNECT upstream.test:8443 HTTP/1.1\r\n\r\n", tunnel=b"GET / HTTP/1.1\r\n\r\n")
    rc, records, junk, err = stop_proxy(p)
    closes = [r for r in records if r.get("event") == "close"]
    ok(got >= (1 << 20) and after.endswith(b"hello"),
       "a client reset mid-download: the proxy goes on serving", after[:200])
    ok(len(closes) == 2 and 0 < closes[0]["bytes_down"] < (32 << 20),
       "the reset tunnel is recorded as closed", records)
    ok(clean_exit(rc, junk, err), "client reset: clean exit", err)


CHURN = 3000          # short tunnels in the record count, in kinds of 500
CHURN_WORKERS = 20
HELD = 40             # tunnels still open when the lifeline ends
HELD_PING = b"held open"


def churn_one(kind):
    """One short connection through the proxy to the echo port. Kinds:
    0 CONNECT, 200, close; 1 the same with a ping echoed first; 2 a reset
    as soon as the 200 is in (abandoned); 3 a reset in the middle of 256 KiB
    going both ways (abandoned mid-tunnel); 4 half a request line, then a
    close; 5 half a request line, then a reset. Returns what went wrong, or
    None."""
    import struct
    linger0 = struct.pack("ii", 1, 0)
    s = socket.create_connection(LISTEN, timeout=20 * SLOW)
    try:
        if kind >= 4:
            s.sendall(b"CONNECT upstream.test:8007 HT")
            if kind == 5:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger0)
            else:
                # the proxy has read the bytes once it answers the close
                s.shutdown(socket.SHUT_WR)
                s.recv(4096)
            return None
        s.sendall(b"CONNECT upstream.test:8007 HTTP/1.1\r\n\r\n")
        got = b""
        while b"\r\n\r\n" not in got:
            data = s.recv(4096)
            if not data:
                return "closed before the answer: %r" % got
            got += data
        if not got.startswith(b"HTTP/1.1 200 "):
            return "answered %r" % got[:40]
        if kind == 1:
            s.sendall(b"ping")
            back = b""
            while len(back) < 4:
                data = s.recv(4096)
                if not data:
                    return "no echo"
                back += data
        elif kind == 2:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger0)
        elif kind == 3:
            s.sendall(os.urandom(256 << 10))
            s.recv(65536)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger0)
        return None
    except OSError as e:
        return "%s: %s" % (type(e).__name__, e)
    finally:
        s.close()


def records_under_churn():
    """Nothing is lost: thousands of short tunnels, some abandoned mid-way,
    and a proxy stopped with tunnels open. Every connection that sent a byte
    has exactly one attempt record; every allowed one exactly one close
    record."""
    p = start_proxy(["-allow-private", "upstream.test:8007"])
    # the records are read as they come, as mcpgate does: a pipe nobody
    # reads fills up and holds the proxy in its write
    out, err_out = [], []
    readers = [threading.Thread(target=lambda f=f, b=b: b.append(f.read()))
               for f, b in ((p.stdout, out), (p.stderr, err_out))]
    for t in readers:
        t.start()
    errors = []
    lock = threading.Lock()

    def worker(w):
        for i in range(w, CHURN, CHURN_WORKERS):
            e = churn_one(i % 6)
            if e is not None:
                with lock:
                    errors.append("kind %d: %s" % (i % 6, e))

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(CHURN_WORKERS)]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # tunnels still open when the proxy stops: their records too
    held = []
    for _ in range(HELD):
        s = socket.create_connection(LISTEN, timeout=10 * SLOW)
        s.sendall(b"CONNECT upstream.test:8007 HTTP/1.1\r\n\r\n" + HELD_PING)
        got = b""
        while not got.endswith(HELD_PING) and len(got) < 4096:
            data = s.recv(4096)
            if not data:
                break
            got += data
        held.append((s, got))
    took = time.time() - t0
    p.stdin.close()
    try:
        rc = p.wait(timeout=20 * SLOW)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = p.wait()
    for t in readers:
        t.join()
    for s, _ in held:
        s.close()
    records, junk = [], []
    for line in b"".join(out).decode("utf-8", "replace").splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            junk.append(line)
    err = b"".join(err_out).decode("utf-8", "replace")
    ok(not errors and all(g.startswith(b"HTTP/1.1 200 ") and g.endswith(HELD_PING) for _, g in held),
       "%d short tunnels (a third abandoned) and %d held, all answered (%.1fs)" %
       (CHURN, HELD, took), (errors + [g for _, g in held if not g.endswith(HELD_PING)])[:5])
    attempts = [r for r in records if r.get("event") == "attempt"]
    closes = [r for r in records if r.get("event") == "close"]
    allowed = [r for r in attempts if r.get("allowed")]
    head = [r for r in attempts
            if r.get("reason") == "the client closed during the header section"]
    want_allowed = CHURN * 4 // 6 + HELD
    ok(len(attempts) == CHURN + HELD, "every connection has one attempt record (%d of %d)" %
       (len(attempts), CHURN + HELD))
    ok(len(allowed) == want_allowed and len(head) == CHURN * 2 // 6 and
       all(r.get("reason") == "ok" for r in allowed),
       "%d allowed, %d ended in the head (want %d, %d)" %
       (len(allowed), len(head), want_allowed, CHURN * 2 // 6),
       sorted({r.get("reason") for r in attempts}))
    ok(len(closes) == len(allowed), "every allowed tunnel has one close record (%d of %d), "
       "the %d still open at the end included" % (len(closes), len(allowed), HELD))
    n = len(HELD_PING)
    held_closes = [c for c in closes if c.get("bytes_up") == n and c.get("bytes_down") == n]
    ok(len(held_closes) == HELD, "the held tunnels' close records count their bytes (%d of %d)"
       % (len(held_closes), HELD))
    ok(clean_exit(rc, junk, err), "record count: clean exit", err)


def byte_cap():
    """-max-bytes-up: the session's bytes to the upstream, every tunnel and
    request together, stop at the cap: the tunnel that reaches it is closed
    with a limit record, and every request after it is refused."""
    p = start_proxy(["-allow-private", "upstream.test:8007", "-allow-private", "upstream.test:8080",
                     "-max-bytes-up", "10"])

    def echo_tunnel(data):
        """CONNECT to the echo port, send data after the 200 and our end,
        read until the proxy closes"""
        got = b""
        try:
            with socket.create_connection(LISTEN, timeout=5 * SLOW) as s:
                s.sendall(b"CONNECT upstream.test:8007 HTTP/1.1\r\n\r\n")
                while b"\r\n\r\n" not in got:
                    chunk = s.recv(65536)
                    if not chunk:
                        return got
                    got += chunk
                if got.startswith(b"HTTP/1.1 200 "):
                    s.sendall(data)
                    s.shutdown(socket.SHUT_WR)
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    got += chunk
        except OSError as e:
            got += ("<client: %s>" % e).encode()
        return got

    first = echo_tunnel(b"abcdef")
    second = echo_tunnel(b"ghijkl")
    third = echo_tunnel(b"m")
    plain = client(b"GET http://upstream.test:8080/ HTTP/1.1\r\nHost: upstream.test:8080\r\n\r\n")
    rc, records, junk, err = stop_proxy(p)
    ok(first.startswith(b"HTTP/1.1 200 ") and first.endswith(b"abcdef"),
       "max-bytes-up: a tunnel under the cap is echoed whole", first)
    ok(second.startswith(b"HTTP/1.1 200 ") and b"kl" not in second,
       "max-bytes-up: the tunnel that reaches it gets no byte past it", second)
    ok(third.startswith(b"HTTP/1.1 403 ") and plain.startswith(b"HTTP/1.1 403 "),
       "max-bytes-up: every request after it is refused", third + b" / " + plain)
    ok(records_match([
        {"event": "attempt", "allowed": True, "reason": "ok"},
        {"event": "close", "bytes_up": 6},
        {"event": "attempt", "allowed": True, "reason": "ok"},
        {"event": "limit", "host": "upstream.test", "port": 8007, "session_bytes_up": 10,
         "max_bytes_up": 10},
        {"event": "close", "bytes_up": 4},
        {"event": "attempt", "allowed": False, "reason": "the session has sent its -max-bytes-up"},
        {"event": "attempt", "method": "GET", "allowed": False,
         "reason": "the session has sent its -max-bytes-up"}], records),
       "max-bytes-up: limit record, close records count what went through", records)
    ok(clean_exit(rc, junk, err), "max-bytes-up: clean exit", err)


def forward():
    """-forward: a named destination reached as bytes, a private address
    allowed (the person named it); a destination whose address is special,
    a platform's or the proxy's own refused and closed without a byte; the
    host side's unix: listener reaching a loopback service, and the hop to
    it recording nothing but its failure; the HTTP side granting none of
    them"""
    sock_dir = "/tmp/mcpgate-egress-forward-%d" % os.getpid()
    os.makedirs(sock_dir, exist_ok=True)
    host_sock = os.path.join(sock_dir, "h.sock")
    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", 7100))
    lsock.listen(8)

    def local_echo():
        while True:
            try:
                conn, _ = lsock.accept()
            except OSError:
                return
            with conn:
                data = conn.recv(65536)
                conn.sendall(b"loopback:" + data)
    threading.Thread(target=local_echo, daemon=True).start()
    fwds = {7000: "upstream.test:8007", 7001: "metadata.test:80", 7002: "self.test:8007",
            7003: "mixed.test:8007", 7004: "azure-wireserver.test:80",
            7005: "unix:" + host_sock, 7006: "unix:" + os.path.join(sock_dir, "none.sock")}
    args = [x for port, target in fwds.items()
            for x in ("-forward", "10.233.0.1:%d=%s" % (port, target))]
    args += ["-forward", "unix:%s=127.0.0.1:7100" % host_sock]
    p = start_proxy(args)

    def talk(port, data=b"ping"):
        got = b""
        try:
            with socket.create_connection(("10.233.0.1", port), timeout=5 * SLOW) as s:
                s.sendall(data)
                s.shutdown(socket.SHUT_WR)
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    got += chunk
        except OSError as e:
            got += ("<client: %s>" % e).encode()
        return got
    up_reset()
    got = {port: talk(port) for port in fwds}
    http = client(b"CONNECT upstream.test:8007 HTTP/1.1\r\nHost: upstream.test:8007\r\n\r\n")
    rc, records, junk, err = stop_proxy(p)
    lsock.close()
    shutil.rmtree(sock_dir, ignore_errors=True)
    ok(got[7000] == b"ping", "forward: a named destination (a private address) is reached as "
       "bytes", got[7000])
    ok(all(got[port] == b"" or got[port].startswith(b"<client: ")
           for port in (7001, 7002, 7003, 7004, 7006)),
       "forward: special, own, mixed and platform addresses, and a missing host side, are "
       "closed (or reset) without a byte", got)
    ok(got[7005] == b"loopback:ping", "forward: the host side reaches a loopback service "
       "through its unix: listener", got[7005])
    ok(http.startswith(b"HTTP/1.1 403 "), "forward: the HTTP side grants nothing a forward "
       "names", http)
    attempts = {(r.get("host"), r.get("port")): r for r in records
                if r["event"] == "attempt" and r.get("method") == "TCP"}
    want = {("upstream.test", 8007): (True, "ok"),
            ("metadata.test", 80): (False, "platform address (169.254.169.254/32"),
            ("self.test", 8007): (False, "own address"),
            ("mixed.test", 8007): (False, "special address (127.0.0.0/8"),
            ("azure-wireserver.test", 80): (False, "platform address"),
            ("127.0.0.1", 7100): (True, "ok"),
            ("unix:" + os.path.join(sock_dir, "none.sock"), 0):
                (False, "connect: mcpgate's host side")}
    bad = [(k, v) for k, v in want.items() if k not in attempts or
           attempts[k].get("allowed") != v[0] or
           not str(attempts[k].get("reason")).startswith(v[1])]
    ok(not bad, "forward: one TCP attempt record each, allowed or refused with its reason",
       (bad, records))
    hop = [r for r in records if str(r.get("host")).startswith("unix:" + host_sock)]
    closes = {(r["host"], r["port"]): r for r in records if r["event"] == "close"}
    ok(hop == [] and closes.get(("upstream.test", 8007), {}).get("bytes_up") == 4 and
       closes.get(("127.0.0.1", 7100), {}).get("bytes_down") == 13,
       "forward: close records count the bytes; the hop to the host side records nothing",
       records)
    ok(clean_exit(rc, junk, err), "forward: clean exit", err)


def main():
    for d in sorted(os.listdir(CASES)):
        path = os.path.join(CASES, d)
        if os.path.isdir(path) and fnmatch.fnmatch(d, PICK):
            run_case(path)
    checks = {"scripted": scripted, "reset": reset_mid_tunnel, "churn": records_under_churn,
              "cap": byte_cap, "forward": forward}
    if PICK == "*" or CHECKS:
        for name, fn in checks.items():
            if not CHECKS or name in CHECKS:
                fn()
    print("%d passed, %d failed" % (count["pass"], count["fail"]))
    sys.exit(1 if count["fail"] else 0)


if __name__ == "__main__":
    main()
