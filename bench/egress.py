#!/usr/bin/env python3
"""Benchmarks of mcpgate-egress beside tinyproxy and squid, and no proxy.

One upstream, a small HTTP server (this file, run with --upstream) in a
network namespace of the bench's own, joined to the host by a veth pair:
10.233.77.1 on the host side, 10.233.77.2 (the upstream) and 10.233.77.3
(the same server, never listed) in the namespace. The proxies run on the
host, each on its own port of 127.0.0.1, each allowed 10.233.77.2:8080 and
nothing else. Printed side by side in one run, medians and ratios
(bench/README.md says what each figure means):

  0. allowlist check: the listed upstream answers through each proxy, the
     unlisted address is refused (CONNECT and plain HTTP).
  1. download of 1 GiB: direct, and through each proxy as plain HTTP
     (absolute-form GET) and through a CONNECT tunnel; 3 runs each.
  2. CONNECT handshakes per second (CONNECT, wait for 200, close) with 1 and
     with 100 concurrent clients; direct: TCP connect + close.
  3. memory: each proxy's RSS idle (fresh, measured first), with 100 tunnels
     open, after they close, and idle at the end of the run.

Needs root (a network namespace). Traffic goes only over loopback and the
veth pair. Nothing asserts on time; what misbehaved is listed under
"anomalies" and makes the exit status 1. Every loop is bounded in count and
time; the namespace, the veth pair and every process are removed at the
end, also on Ctrl-C, SIGTERM or SIGHUP.

Environment: MCPGATE_EGRESS (the binary, default ./mcpgate-egress).
`--quick`: 64 MiB downloads, one run, handshake rounds of 1 s or 2000: to try the script.
tinyproxy and squid are the anchors every figure stands beside: without them
the bench stops before it starts, printing the command that installs them.
`--install-anchors` runs that command itself (Debian's packages, with their
services kept from starting and left disabled); `--no-anchors` measures
mcpgate-egress and direct alone, and says so.
"""
import ctypes
import datetime
import errno
import gc
import hashlib
import json
import math
import os
import platform
import pwd
import re
import select
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import (anomalies, anomaly, fmt, measure, on_term, ratio,  # noqa: E402
                      report_anomalies, rx, sh, summary, table)
import benchlib  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
EGRESS = os.path.abspath(os.environ.get("MCPGATE_EGRESS", os.path.join(TOP, "mcpgate-egress")))
FLOOR = os.path.abspath(os.environ.get("MCPGATE_FLOOR", os.path.join(TOP, "build", "bench", "floor")))
QUICK = "--quick" in sys.argv[1:]
INSTALL_ANCHORS = "--install-anchors" in sys.argv[1:]
NO_ANCHORS = "--no-anchors" in sys.argv[1:]
ANCHORS = (("tinyproxy", "tinyproxy"), ("squid", "squid"))   # (program, Debian package)
ANCHORS_INSTALL = ["apt-get", "install", "-y", "tinyproxy", "squid"]
POLICY_RC = "/usr/sbin/policy-rc.d"

ME = os.getpid()
NS = "mcpgate-bench-up-%d" % ME
NS_PREFIX = "mcpgate-bench-up-"
VETH_HOST = "mgbh%d" % ME        # at most 11 characters (a pid has at most 7 digits)
VETH_NS = "mgbn%d" % ME
HOST_ADDR = "10.233.77.1"
UP_ADDR = "10.233.77.2"          # the upstream, the one listed destination
OTHER_ADDR = "10.233.77.3"       # the same server, never listed: the allowlist check
NET_PREFIX = 29
UP_PORT = 8080
UP = (UP_ADDR, UP_PORT)
AUTHORITY = "%s:%d" % UP

GIB = 1 << 30
DOWNLOAD_BYTES = (64 << 20) if QUICK else GIB
DOWNLOAD_RUNS = 1 if QUICK else 3
WARMUP_BYTES = 64 << 20          # one untimed download per path first
DOWNLOAD_TIMEOUT = 180.0         # s, one download (1 GiB at 6 MB/s)
HS_SECONDS = 1.0 if QUICK else 4.0
HS_ROUNDS = 1 if QUICK else 3
HS_CONCURRENCY = (1, 100)
HS_CONN_TIMEOUT = 5.0            # s, one handshake
HS_MAX = 2000 if QUICK else 15000  # handshakes in one round, at most (the conntrack budget)
CT_SHARE = 0.5                   # never fill the host's conntrack table past this share
CT_WAIT = 150.0                  # s, at most, for its entries to expire before a round
TUNNELS = 100
IO_TIMEOUT = 10.0                # s, one small exchange
ZERO_FILE_BYTES = 16 << 20       # what the upstream sendfile()s from, over and over
UPSTREAM_MAX_SECONDS = 3600      # the upstream exits by itself after this long

notes = []
results = {}
temp_dirs = []
children = []                    # every Popen started, for the end
netns_made = False
veth_made = False
watchdog = None                  # the cleaner of last resort (watchdog_main)

_libc = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG = 1


def die_with_parent():
    """preexec_fn: SIGTERM when the bench dies, even by SIGKILL."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def watch(line):
    """Tell the watchdog what to clean up should this process die."""
    if watchdog is not None:
        try:
            watchdog.stdin.write((line + "\n").encode())
            watchdog.stdin.flush()
        except OSError:
            pass


def watchdog_main(max_seconds):
    """--watchdog: started first, in a session of its own, with a pipe from
    the bench as its input. The bench names what it makes, one a line:
    `mark PATH` (a temporary folder: every process whose command line
    contains it is the bench's), `netns NAME`, `link NAME`, then `done`
    after its own cleanup. When the input ends without `done` (the bench
    was killed, even by SIGKILL, which it cannot catch; tinyproxy and squid
    change their user id, which clears a parent-death signal) or after
    max_seconds, the watchdog stops those processes by pid, removes the
    namespace and the link, and deletes the folders."""
    marks, netns, links = [], [], []
    buf = b""
    end = time.monotonic() + max_seconds
    while time.monotonic() < end:
        ready, _, _ = select.select([0], [], [], 5.0)
        if not ready:
            continue
        data = os.read(0, 4096)
        if not data:
            break
        buf += data
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            word, _, arg = line.decode(errors="replace").partition(" ")
            if word == "done":
                return 0
            {"mark": marks, "netns": netns, "link": links}.get(word, []).append(arg)
    marks = [m for m in marks if len(m) > 8]

    def ours():
        out = []
        for name in os.listdir("/proc"):
            if name.isdigit() and int(name) != os.getpid():
                try:
                    with open("/proc/%s/cmdline" % name, "rb") as fh:
                        cmd = fh.read().decode(errors="replace")
                except OSError:
                    continue
                if any(m in cmd for m in marks):
                    out.append(int(name))
        return out
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 1.0)):
        pids = ours()
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        t0 = time.monotonic()
        while pids and time.monotonic() - t0 < wait:
            time.sleep(0.2)
            pids = ours()
    for name in links:
        subprocess.run(["ip", "link", "del", name], capture_output=True, timeout=30)
    for name in netns:
        subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30)
    for m in marks:
        shutil.rmtree(m, ignore_errors=True)
    return 0


def note(text):
    notes.append(text)
    print("  note: " + text, flush=True)


def first_line(argv, timeout=20):
    return benchlib.first_line(argv, timeout=timeout, any_status=True)


def tempdir(prefix):
    d = tempfile.mkdtemp(prefix=prefix)
    temp_dirs.append(d)
    watch("mark " + d)
    return d


# ---- statistics and printing -------------------------------------------------

def med(s):
    return s.get("median") if s else None


# ---- the upstream (run inside the namespace: bench/egress.py --upstream) ------

class UpConn:
    __slots__ = ("sock", "fd", "buf", "head", "left", "off", "close_after", "sending", "closing")

    def __init__(self, sock):
        self.sock, self.fd = sock, sock.fileno()
        self.buf = bytearray()
        self.head = b""
        self.left = 0
        self.off = 0
        self.close_after = False
        self.sending = False
        self.closing = False


def upstream_main(addr, port, zero_path, max_seconds):
    """GET /bytes/N: 200 and N zero bytes, sent with sendfile() from a file
    of zeros (again and again). Keep-alive unless the request says
    Connection: close (then a FIN after the body). One epoll loop,
    non-blocking. A peer's EOF is answered with a reset (SO_LINGER 0), so
    that neither side keeps a TIME_WAIT socket: the handshake rounds open
    tens of thousands of connections to this one address and port, and the
    host side would otherwise run out of ephemeral ports. Exits when its
    standard input ends (the bench's lifeline) or after max_seconds."""
    deadline = time.monotonic() + max_seconds
    zfd = os.open(zero_path, os.O_RDONLY)
    zsize = os.fstat(zfd).st_size
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, port))
    ls.listen(4096)
    ls.setblocking(False)
    ep = select.epoll()
    ep.register(ls.fileno(), select.EPOLLIN)
    ep.register(0, select.EPOLLIN)
    conns = {}
    linger0 = struct.pack("ii", 1, 0)
    sys.stdout.write("ready\n")
    sys.stdout.flush()

    def drop(c):
        conns.pop(c.fd, None)
        try:
            ep.unregister(c.fd)
        except OSError:
            pass
        try:
            c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger0)
        except OSError:
            pass
        c.sock.close()

    def next_request(c):
        """Start answering the next complete request in c.buf, if any."""
        end = c.buf.find(b"\r\n\r\n")
        if end < 0:
            if len(c.buf) > 65536:
                drop(c)
            return
        head = bytes(c.buf[:end]).lower()
        del c.buf[:end + 4]
        parts = head.split(b"\r\n", 1)[0].split(b" ")
        target = parts[1] if len(parts) == 3 else b""
        if target.startswith(b"http://"):
            target = b"/" + target[7:].split(b"/", 1)[-1]
        c.close_after = b"\r\nconnection: close" in head
        m = re.match(rb"^/bytes/([0-9]{1,13})$", target)
        extra = b"Connection: close\r\n" if c.close_after else b""
        if m:
            c.left = int(m.group(1))
            c.head = (b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                      b"Content-Length: %d\r\n%s\r\n" % (c.left, extra))
        else:
            c.left = 0
            c.head = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n%s\r\n" % extra
        c.sending = True
        ep.modify(c.fd, select.EPOLLOUT)
        pump(c)

    def pump(c):
        try:
            while c.head:
                n = c.sock.send(c.head)
                c.head = c.head[n:]
            while c.left:
                n = os.sendfile(c.fd, zfd, c.off, min(c.left, zsize - c.off, 8 << 20))
                if n == 0:
                    drop(c)
                    return
                c.left -= n
                c.off = (c.off + n) % zsize
        except BlockingIOError:
            return
        except OSError:
            drop(c)
            return
        c.sending = False
        ep.modify(c.fd, select.EPOLLIN)
        if c.close_after:
            c.closing = True
            try:
                c.sock.shutdown(socket.SHUT_WR)
            except OSError:
                drop(c)
            return
        next_request(c)

    while time.monotonic() < deadline:
        for fd, ev in ep.poll(1.0):
            if fd == 0:
                if not os.read(0, 4096):
                    return 0
            elif fd == ls.fileno():
                for _ in range(256):
                    try:
                        s, _ = ls.accept()
                    except (BlockingIOError, InterruptedError):
                        break
                    except OSError:
                        break
                    s.setblocking(False)
                    c = UpConn(s)
                    conns[c.fd] = c
                    ep.register(c.fd, select.EPOLLIN)
            else:
                c = conns.get(fd)
                if c is None:
                    continue
                if c.sending:
                    pump(c)
                    continue
                try:
                    data = c.sock.recv(65536)
                except BlockingIOError:
                    continue
                except OSError:
                    drop(c)
                    continue
                if not data:
                    drop(c)
                    continue
                if not c.closing:
                    c.buf += data
                    next_request(c)
    return 0


# ---- clients ---------------------------------------------------------------------

def read_head(s, deadline):
    """Read up to the end of an HTTP head; (status, head bytes, rest)."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no complete answer head within the time limit")
        s.settimeout(left)
        data = s.recv(65536)
        if not data:
            raise ConnectionError("closed before a complete answer head (got %r)" % buf[:120])
        buf += data
        if len(buf) > 65536 and b"\r\n\r\n" not in buf:
            # (a body may follow the head in the same read: only a head that
            # has not ended by then is too long)
            raise ConnectionError("answer head over 64 KiB")
    end = buf.index(b"\r\n\r\n") + 4
    head = buf[:end]
    m = re.match(rb"HTTP/1\.[01] ([0-9]{3})", head)
    if not m:
        raise ConnectionError("not an HTTP answer: %r" % head[:120])
    return int(m.group(1)), head, buf[end:]


def content_length(head):
    m = re.search(rb"\r\ncontent-length:[ \t]*([0-9]+)", head.lower())
    return int(m.group(1)) if m else None


def connect_request(authority=AUTHORITY):
    return ("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (authority, authority)).encode()


def get_request(path, absolute=None, close=True):
    target = ("http://%s%s" % (absolute, path)) if absolute else path
    host = absolute or AUTHORITY
    return ("GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n" %
            (target, host, "Connection: close\r\n" if close else "")).encode()


def open_path(kind, port, deadline, authority=AUTHORITY):
    """A socket through which a GET can be sent: kind is direct (to the
    upstream), http (to the proxy, absolute-form next) or connect (a tunnel
    through the proxy, already answered 200). Raises on a refusal."""
    addr = UP if kind == "direct" else ("127.0.0.1", port)
    s = socket.create_connection(addr, timeout=max(0.1, deadline - time.monotonic()))
    try:
        if kind == "connect":
            s.sendall(connect_request(authority))
            status, head, rest = read_head(s, deadline)
            if status != 200:
                raise Refused(status, head)
            if rest:
                raise ConnectionError("bytes after the CONNECT answer: %r" % rest[:60])
        return s
    except BaseException:
        s.close()
        raise


class Refused(Exception):
    def __init__(self, status, head):
        super().__init__("answered %d: %r" % (status, head.split(b"\r\n", 1)[0]))
        self.status = status


def small_get(s, kind, n, deadline, close=True, authority=AUTHORITY):
    """One GET /bytes/n on an open path; raises unless 200 with n bytes."""
    s.sendall(get_request("/bytes/%d" % n, authority if kind == "http" else None, close))
    status, head, rest = read_head(s, deadline)
    if status != 200:
        raise Refused(status, head)
    got = len(rest)
    while got < n:
        s.settimeout(max(0.01, deadline - time.monotonic()))
        data = s.recv(65536)
        if not data:
            raise ConnectionError("closed after %d of %d bytes" % (got, n))
        got += len(data)
    if got != n:
        raise ConnectionError("%d bytes, not %d" % (got, n))


RECV_BUF = bytearray(4 << 20)


def download(kind, port, nbytes):
    """Seconds from connect to the last byte of a GET /bytes/nbytes;
    raises on anything but 200 with exactly nbytes."""
    mv = memoryview(RECV_BUF)
    t0 = time.perf_counter()
    deadline = time.monotonic() + DOWNLOAD_TIMEOUT
    s = open_path(kind, port, time.monotonic() + IO_TIMEOUT)
    try:
        s.sendall(get_request("/bytes/%d" % nbytes, AUTHORITY if kind == "http" else None))
        status, head, rest = read_head(s, time.monotonic() + IO_TIMEOUT)
        if status != 200:
            raise Refused(status, head)
        cl = content_length(head)
        if cl is not None and cl != nbytes:
            raise ConnectionError("Content-Length %d, not %d" % (cl, nbytes))
        got = len(rest)
        s.settimeout(30.0)
        while got < nbytes:
            n = s.recv_into(mv)
            if n == 0:
                break
            got += n
            if time.monotonic() > deadline:
                raise TimeoutError("%d of %d bytes after %.0f s" % (got, nbytes, DOWNLOAD_TIMEOUT))
        t1 = time.perf_counter()
        if got != nbytes:
            raise ConnectionError("%d bytes, not %d" % (got, nbytes))
        return t1 - t0
    finally:
        s.close()


def handshakes(port, concurrency, seconds, cap, guard):
    """concurrency clients, each in a loop: connect, CONNECT, wait for the
    answer head, close (port None: the upstream itself, connect + close).
    Non-blocking sockets on one epoll loop, for `seconds` or until `cap`
    connections were started, or guard() says stop (checked every 0.25 s).
    Returns (ok, elapsed s, errors {kind: count}, client CPU s, stopped by guard)."""
    direct = port is None
    addr = UP if direct else ("127.0.0.1", port)
    req = connect_request()
    ep = select.epoll()
    slots = {}            # fd -> [sock, state, started, buf]; state 0 connecting, 1 reading
    errors = {}
    ok = 0
    started_n = 0

    def err(kind):
        errors[kind] = errors.get(kind, 0) + 1

    def start():
        nonlocal started_n
        if started_n >= cap:
            return False
        started_n += 1
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        rc = s.connect_ex(addr)
        if rc not in (0, errno.EINPROGRESS):
            err("connect: " + errno.errorcode.get(rc, str(rc)))
            s.close()
            return False
        slots[s.fileno()] = [s, 0, time.monotonic(), b""]
        ep.register(s.fileno(), select.EPOLLOUT)
        return True

    def finish(fd):
        slot = slots.pop(fd)
        slot[0].close()

    c0 = os.times()
    t0 = time.monotonic()
    end = t0 + seconds
    next_sweep = t0 + 0.25
    guarded = False
    for _ in range(min(concurrency, cap)):
        start()
    gc.disable()
    try:
        while True:
            now = time.monotonic()
            if now >= end or started_n >= cap or guarded:
                break
            if not slots:
                # every start failed: back off a little rather than spin
                time.sleep(0.01)
                for _ in range(concurrency):
                    start()
                continue
            for fd, ev in ep.poll(min(end - now, 0.25)):
                slot = slots.get(fd)
                if slot is None:
                    continue
                s = slot[0]
                if slot[1] == 0:
                    e = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if e:
                        err("connect: " + errno.errorcode.get(e, str(e)))
                        finish(fd)
                    elif direct:
                        ok += 1
                        finish(fd)
                    else:
                        try:
                            s.send(req)
                        except OSError as x:
                            err("send: " + (errno.errorcode.get(x.errno, str(x))))
                            finish(fd)
                            start()
                            continue
                        slot[1] = 1
                        ep.modify(fd, select.EPOLLIN)
                        continue
                    start()
                    continue
                try:
                    data = s.recv(4096)
                except BlockingIOError:
                    continue
                except OSError as x:
                    err("recv: " + errno.errorcode.get(x.errno, str(x)))
                    finish(fd)
                    start()
                    continue
                if not data:
                    err("closed before an answer")
                    finish(fd)
                    start()
                    continue
                slot[3] += data
                if b"\r\n\r\n" in slot[3]:
                    if re.match(rb"HTTP/1\.[01] 200", slot[3]):
                        ok += 1
                    else:
                        err("answered " + slot[3][:12].decode("latin-1").split(" ", 1)[-1][:3])
                    finish(fd)
                    start()
                elif len(slot[3]) > 16384:
                    err("answer head too long")
                    finish(fd)
                    start()
            now = time.monotonic()
            if now >= next_sweep:
                next_sweep = now + 0.25
                guarded = guard()
                for fd in [fd for fd, sl in slots.items() if now - sl[2] > HS_CONN_TIMEOUT]:
                    err("no answer within %.0f s" % HS_CONN_TIMEOUT)
                    finish(fd)
                    start()
        elapsed = time.monotonic() - t0
    finally:
        gc.enable()
        for fd in list(slots):
            finish(fd)
        ep.close()
    c1 = os.times()
    return ok, elapsed, errors, (c1.user - c0.user) + (c1.system - c0.system), guarded


# ---- processes: pids, memory, CPU ------------------------------------------------

CLK_TCK = os.sysconf("SC_CLK_TCK")


def proc_stat(pid):
    """(ppid, utime+stime in ticks) of a process, None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as fh:
            s = fh.read()
    except OSError:
        return None
    f = s[s.rindex(")") + 2:].split()
    return int(f[1]), int(f[11]) + int(f[12])


def memory(root):
    """VmRSS summed over the process tree (KiB), processes, threads, open descriptors."""
    pids = benchlib.process_tree(root)
    rss = threads = fds = 0
    for p in pids:
        rss += benchlib.status_kib(p, "VmRSS")
        threads += benchlib.status_kib(p, "Threads")
        try:
            fds += len(os.listdir("/proc/%d/fd" % p))
        except OSError:
            pass
    return {"rss_kib": rss, "processes": len(pids), "threads": threads, "fds": fds}


def cpu_seconds(root):
    return sum(cpu_split(root))


def cpu_split(root):
    """(user, system) CPU seconds of the process tree, from /proc/PID/stat
    (10 ms ticks): the system share is the kernel's work on the proxy's
    behalf (its system calls, the TCP they drive), the user share its own code."""
    user = system = 0
    for p in benchlib.process_tree(root):
        try:
            with open("/proc/%d/stat" % p) as fh:
                st = fh.read()
        except OSError:
            continue
        f = st[st.rindex(")") + 2:].split()
        user += int(f[11])
        system += int(f[12])
    return user / CLK_TCK, system / CLK_TCK


CT_COUNT = "/proc/sys/net/netfilter/nf_conntrack_count"
CT_MAX = "/proc/sys/net/netfilter/nf_conntrack_max"


def conntrack():
    """(entries, table size) of the host's connection tracking, or None
    when it is off. Every connection of the handshake rounds takes an entry
    for 10 s (reset) to 120 s (closed with FIN both ways: the loopback
    side): unbounded, the rounds would fill the table of a shared machine
    and its new connections would be dropped."""
    try:
        with open(CT_COUNT) as a, open(CT_MAX) as b:
            return int(a.read()), int(b.read())
    except (OSError, ValueError):
        return None


def conntrack_room(needed, waited):
    """Wait (at most CT_WAIT s) until `needed` more entries fit under
    CT_SHARE of the table; returns how many fit then. waited: a list the
    seconds spent waiting are added to."""
    ct = conntrack()
    if ct is None:
        return needed
    limit = int(ct[1] * CT_SHARE)
    t0 = time.monotonic()
    announced = False
    while True:
        ct = conntrack() or (0, ct[1])
        room = limit - ct[0]
        if room >= needed or time.monotonic() - t0 >= CT_WAIT:
            break
        if not announced:
            print("  (waiting up to %.0f s for conntrack entries to expire: %d of %d in use, "
                  "the bench keeps below %d)" % (CT_WAIT, ct[0], ct[1], limit), flush=True)
            announced = True
        time.sleep(1.0)
    waited.append(time.monotonic() - t0)
    return max(0, room)


def conntrack_guard():
    """For a round: True once the table is past CT_SHARE (stop now)."""
    ct = conntrack()
    if ct is None:
        return lambda: False
    limit = int(ct[1] * CT_SHARE)

    def guard():
        now = conntrack()
        return now is not None and now[0] > limit
    return guard


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_listening(port, proc, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


# ---- the proxies -------------------------------------------------------------------

class Proxy:
    """One proxy on its own port of 127.0.0.1 with its own folder, allowed
    10.233.77.2:8080 only."""
    name = "?"

    def __init__(self, root):
        self.dir = os.path.join(root, self.name)
        os.makedirs(self.dir)
        os.chmod(self.dir, 0o755)
        self.port = free_port()
        self.proc = None
        self.pids_seen = set()
        self.version = None

    def popen(self, argv, stdin=subprocess.DEVNULL):
        self.out = open(os.path.join(self.dir, "stdout"), "wb")
        self.err = open(os.path.join(self.dir, "stderr"), "wb")
        self.proc = subprocess.Popen(argv, stdin=stdin, stdout=self.out, stderr=self.err,
                                     cwd=self.dir, preexec_fn=die_with_parent)
        children.append(self.proc)
        if not wait_listening(self.port, self.proc):
            raise RuntimeError("%s did not listen on 127.0.0.1:%d within 15 s (%s); stderr: %s" %
                               (self.name, self.port, "exited %s" % self.proc.returncode
                                if self.proc.poll() is not None else "still running",
                                self.stderr_text()[-400:]))
        self.pids_seen.update(benchlib.process_tree(self.proc.pid))

    def stderr_text(self):
        try:
            with open(os.path.join(self.dir, "stderr"), errors="replace") as fh:
                return fh.read()
        except OSError:
            return ""

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def memory(self):
        self.pids_seen.update(benchlib.process_tree(self.proc.pid))
        return memory(self.proc.pid)

    def cpu(self):
        return cpu_seconds(self.proc.pid)

    def cpu_split(self):
        return cpu_split(self.proc.pid)

    def ask_to_stop(self):
        self.proc.send_signal(signal.SIGTERM)

    def stop(self):
        """Stop it; returns its exit status (None when it had to be killed).
        Any process of its tree still alive afterwards is killed by pid."""
        if self.proc is None:
            return None
        status = self.proc.poll()
        if status is None:
            self.pids_seen.update(benchlib.process_tree(self.proc.pid))
            try:
                self.ask_to_stop()
            except OSError:
                pass
            try:
                status = self.proc.wait(10)
            except subprocess.TimeoutExpired:
                anomaly("%s did not stop within 10 s (killed)" % self.name)
                self.proc.kill()
                self.proc.wait()
                status = None
        deadline = time.monotonic() + 5
        left = [p for p in self.pids_seen if p != self.proc.pid and proc_stat(p) is not None]
        while left and time.monotonic() < deadline:
            time.sleep(0.1)
            left = [p for p in left if proc_stat(p) is not None]
        for p in left:
            # a helper of this proxy (it was in its tree) outlived it
            anomaly("%s: process %d was left running after it stopped (killed)" % (self.name, p))
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        for fh in (self.out, self.err):
            fh.close()
        return status


class Egress(Proxy):
    name = "mcpgate-egress"

    def start(self, binary):
        self.binary = binary
        self.popen([binary, "-listen", "127.0.0.1:%d" % self.port,
                    "-allow-private", AUTHORITY, "-lifeline"], stdin=subprocess.PIPE)

    def ask_to_stop(self):
        self.proc.stdin.close()   # the lifeline: it exits when its input ends

    def records(self):
        out, bad = [], []
        try:
            with open(os.path.join(self.dir, "stdout"), errors="replace") as fh:
                for line in fh:
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        bad.append(line.rstrip()[:200])
        except OSError:
            pass
        return out, bad


class Floor(Proxy):
    """bench/floor.c: the least a proxy can do, no checks and no records.
    Its port relays (the head passed on or answered 200, then splice both
    ways); hs_port answers a CONNECT 200 and closes."""
    name = "floor"

    def start(self, binary):
        self.binary = binary
        self.hs_port = free_port()
        self.popen([binary, str(self.port), str(self.hs_port), UP_ADDR, str(UP_PORT)],
                   stdin=subprocess.PIPE)
        if not wait_listening(self.hs_port, self.proc):
            raise RuntimeError("floor did not listen on 127.0.0.1:%d" % self.hs_port)

    def ask_to_stop(self):
        self.proc.stdin.close()   # the lifeline, as for mcpgate-egress


class Tinyproxy(Proxy):
    name = "tinyproxy"

    def start(self):
        user = "nobody"
        pw = pwd.getpwnam(user)
        with open(os.path.join(self.dir, "filter"), "w") as f:
            f.write("^%s$\n" % re.escape(UP_ADDR))
        conf = os.path.join(self.dir, "tinyproxy.conf")
        with open(conf, "w") as f:
            f.write("User %s\nGroup %d\nPort %d\nListen 127.0.0.1\nTimeout 600\n"
                    "LogFile \"%s/tinyproxy.log\"\nLogLevel Connect\nPidFile \"%s/tinyproxy.pid\"\n"
                    "MaxClients 400\nAllow 127.0.0.1\nConnectPort %d\n"
                    "Filter \"%s/filter\"\nFilterType ere\nFilterDefaultDeny Yes\nFilterURLs Off\n" %
                    (user, pw.pw_gid, self.port, self.dir, self.dir, UP_PORT, self.dir))
        os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        self.popen(["tinyproxy", "-d", "-c", conf])


class Squid(Proxy):
    name = "squid"

    def start(self):
        user = "proxy"
        try:
            pw = pwd.getpwnam(user)
        except KeyError:
            user, pw = "nobody", pwd.getpwnam("nobody")
        conf = os.path.join(self.dir, "squid.conf")
        d = self.dir
        with open(conf, "w") as f:
            f.write("\n".join([
                "http_port 127.0.0.1:%d" % self.port,
                "visible_hostname mcpgate-bench",
                "cache_effective_user %s" % user,
                "pid_filename %s/squid.pid" % d,
                "cache_log %s/cache.log" % d,
                "access_log daemon:%s/access.log" % d,
                "coredump_dir %s" % d,
                "cache deny all",
                "pinger_enable off",
                "netdb_filename none",
                "dns_nameservers 127.0.0.1",
                "shutdown_lifetime 1 seconds",
                "max_filedescriptors 4096",
                "acl upstream dst %s/32" % UP_ADDR,
                "acl upstream_port port %d" % UP_PORT,
                "http_access allow upstream upstream_port",
                "http_access deny all",
                ""]))
        os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        self.popen(["squid", "--foreground", "-f", conf])

    def stderr_text(self):
        text = super().stderr_text()
        try:
            with open(os.path.join(self.dir, "cache.log"), errors="replace") as fh:
                text += fh.read()
        except OSError:
            pass
        return text


# ---- the network ---------------------------------------------------------------------

def netns_list():
    r = sh(["ip", "netns", "list"])
    return [line.split()[0] for line in r.stdout.splitlines() if line.strip()]


def pid_is_bench(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as fh:
            return b"egress.py" in fh.read()
    except OSError:
        return False


def remove_stale():
    """Namespaces this bench named after a pid that is no longer a bench
    (a run killed by SIGKILL could not clean up): remove them."""
    for ns in netns_list():
        if ns.startswith(NS_PREFIX) and ns[len(NS_PREFIX):].isdigit():
            pid = int(ns[len(NS_PREFIX):])
            if pid != ME and not pid_is_bench(pid):
                note("removing the namespace %s of an earlier run that is gone" % ns)
                sh(["ip", "netns", "del", ns])
                sh(["ip", "link", "del", "mgbh%d" % pid])


def setup_network():
    global netns_made, veth_made
    remove_stale()
    r = sh(["ip", "-4", "-o", "addr", "show"])
    if "10.233.77." in r.stdout:
        raise RuntimeError("an interface on this host already has an address in 10.233.77.0/24 "
                           "(another run of this bench?): %s" %
                           [ln.split()[1] for ln in r.stdout.splitlines() if "10.233.77." in ln])
    watch("netns " + NS)
    watch("link " + VETH_HOST)
    sh(["ip", "netns", "add", NS], check=True)
    netns_made = True
    sh(["ip", "link", "add", VETH_HOST, "type", "veth", "peer", "name", VETH_NS], check=True)
    veth_made = True
    sh(["ip", "link", "set", VETH_NS, "netns", NS], check=True)
    sh(["ip", "addr", "add", "%s/%d" % (HOST_ADDR, NET_PREFIX), "dev", VETH_HOST], check=True)
    sh(["ip", "link", "set", VETH_HOST, "up"], check=True)
    nsx = ["ip", "netns", "exec", NS]
    sh(nsx + ["ip", "addr", "add", "%s/%d" % (UP_ADDR, NET_PREFIX), "dev", VETH_NS], check=True)
    sh(nsx + ["ip", "addr", "add", "%s/%d" % (OTHER_ADDR, NET_PREFIX), "dev", VETH_NS], check=True)
    sh(nsx + ["ip", "link", "set", VETH_NS, "up"], check=True)
    sh(nsx + ["ip", "link", "set", "lo", "up"], check=True)


def teardown_network():
    if veth_made:
        sh(["ip", "link", "del", VETH_HOST])
    if netns_made:
        sh(["ip", "netns", "del", NS])
    if NS in netns_list():
        anomaly("the namespace %s is still there after ip netns del" % NS)


def start_upstream(root):
    zero = os.path.join(root, "zeros")
    with open(zero, "wb") as f:
        block = bytes(1 << 20)
        for _ in range(ZERO_FILE_BYTES >> 20):
            f.write(block)
    up = subprocess.Popen(["ip", "netns", "exec", NS, sys.executable, os.path.abspath(__file__),
                           "--upstream", "0.0.0.0", str(UP_PORT), zero, str(UPSTREAM_MAX_SECONDS)],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=open(os.path.join(root, "upstream.stderr"), "wb"),
                          preexec_fn=die_with_parent)
    children.append(up)
    ready, _, _ = select.select([up.stdout], [], [], 15)
    if not ready or up.stdout.readline().strip() != b"ready":
        raise RuntimeError("the upstream did not start within 15 s")
    return up


# ---- the measurements --------------------------------------------------------------------

def try_status(fn):
    """The status of an exchange: 200 (it worked), the refusal's status,
    or the error's kind."""
    try:
        fn()
        return 200
    except Refused as e:
        return e.status
    except (OSError, ConnectionError, TimeoutError) as e:
        return type(e).__name__


def bench_allowlist(proxies):
    title = "0. allowlist check: answer status (200 = it went through)"
    rows = []
    out = {}

    def connect_get(port, auth):
        s = open_path("connect", port, time.monotonic() + IO_TIMEOUT, auth)
        try:
            small_get(s, "connect", 10, time.monotonic() + IO_TIMEOUT)
        finally:
            s.close()

    def plain_get(port, auth):
        s = open_path("http", port, time.monotonic() + IO_TIMEOUT)
        try:
            small_get(s, "http", 10, time.monotonic() + IO_TIMEOUT, authority=auth)
        finally:
            s.close()

    def direct_get(addr):
        s = socket.create_connection(addr, timeout=IO_TIMEOUT)
        try:
            small_get(s, "direct", 10, time.monotonic() + IO_TIMEOUT)
        finally:
            s.close()

    listed = AUTHORITY
    other = "%s:%d" % (OTHER_ADDR, UP_PORT)
    d = [try_status(lambda: direct_get(UP)), try_status(lambda: direct_get((OTHER_ADDR, UP_PORT)))]
    rows.append(["direct (no proxy)", "-", "-", d[0], d[1]])
    out["direct"] = {"listed": d[0], "unlisted": d[1]}
    if d != [200, 200]:
        anomaly("direct GET to the upstream: %s, %s (not 200)" % (d[0], d[1]))
    for p in proxies:
        if isinstance(p, Floor):
            # no allowlist: it sends everything to the upstream; only that it works is checked
            r = [try_status(lambda: connect_get(p.port, listed)), try_status(lambda: plain_get(p.port, listed))]
            rows.append([p.name] + r + ["- (no checks)", "- (no checks)"])
            out[p.name] = dict(zip(["connect_listed", "http_listed"], r))
            if r != [200, 200]:
                anomaly("floor: the upstream did not answer through it (CONNECT %s, plain %s)" % (r[0], r[1]))
            continue
        r = [try_status(lambda: connect_get(p.port, listed)), try_status(lambda: plain_get(p.port, listed)),
             try_status(lambda: connect_get(p.port, other)), try_status(lambda: plain_get(p.port, other))]
        rows.append([p.name] + r)
        out[p.name] = dict(zip(["connect_listed", "http_listed", "connect_unlisted", "http_unlisted"], r))
        if r[0] != 200 or r[1] != 200:
            anomaly("%s: the listed upstream did not answer through it (CONNECT %s, plain %s)" %
                    (p.name, r[0], r[1]))
        if r[2] == 200 or r[3] == 200:
            anomaly("%s: the unlisted %s went through (CONNECT %s, plain %s)" % (p.name, other, r[2], r[3]))
    table(title, ["", "CONNECT " + listed, "GET " + listed, "CONNECT " + other, "GET " + other], rows)
    print("  (%s is the same upstream, never listed: every proxy must refuse it; the floor\n"
          "   checks nothing and is not asked)" % other)
    results["allowlist"] = out


def hold_tunnels(p, n):
    """n tunnels through p, each with one small GET (keep-alive) answered."""
    socks, errs = [], {}
    try:
        for _ in range(n):
            try:
                s = open_path("connect", p.port, time.monotonic() + IO_TIMEOUT)
            except (OSError, ConnectionError, TimeoutError, Refused) as e:
                errs[str(e)[:80]] = errs.get(str(e)[:80], 0) + 1
                continue
            socks.append(s)
            try:
                small_get(s, "connect", 4096, time.monotonic() + IO_TIMEOUT, close=False)
            except (OSError, ConnectionError, TimeoutError, Refused) as e:
                errs[str(e)[:80]] = errs.get(str(e)[:80], 0) + 1
    except BaseException:
        for s in socks:
            s.close()
        raise
    return socks, errs


def bench_memory_tunnels(proxies, mem):
    """RSS with TUNNELS tunnels open (after a GET through each), then again
    once they are closed; each tunnel must still answer after the reading."""
    for p in proxies:
        socks, errs = hold_tunnels(p, TUNNELS)
        try:
            time.sleep(1.0)
            mem[p.name]["tunnels"] = p.memory()
            # every tunnel must still work after the reading
            again = {}
            for s in socks:
                try:
                    small_get(s, "connect", 4096, time.monotonic() + IO_TIMEOUT, close=False)
                except (OSError, ConnectionError, TimeoutError, Refused) as e:
                    again[str(e)[:80]] = again.get(str(e)[:80], 0) + 1
        finally:
            for s in socks:
                s.close()
        if errs or again or len(socks) != TUNNELS:
            anomaly("%s: %d of %d tunnels opened; errors opening %s, on the second GET %s" %
                    (p.name, len(socks), TUNNELS, errs, again))
        mem[p.name]["tunnels_ok"] = len(socks)
        time.sleep(1.0)
        mem[p.name]["closed"] = p.memory()


def bench_downloads(proxies):
    paths = [("direct", None, "direct")]
    for p in proxies:
        paths += [("%s, plain HTTP" % p.name, p, "http"), ("%s, CONNECT" % p.name, p, "connect")]
    times = {label: [] for label, _, _ in paths}
    cpu = {label: [] for label, _, _ in paths}
    client_cpu = {label: [] for label, _, _ in paths}
    sys_share = {label: [] for label, _, _ in paths}
    errors = {label: [] for label, _, _ in paths}
    for label, p, kind in paths:                   # untimed, warms caches and TCP
        try:
            download(kind, p.port if p else None, min(WARMUP_BYTES, DOWNLOAD_BYTES))
        except Exception as e:  # noqa: BLE001 - reported, the timed runs still try
            errors[label].append("warm-up: %s: %s" % (type(e).__name__, e))
    for run in range(DOWNLOAD_RUNS):
        k = run % len(paths)
        for label, p, kind in paths[k:] + paths[:k]:   # a different path first each run
            c0 = p.cpu_split() if p else None
            o0 = os.times()
            try:
                t = download(kind, p.port if p else None, DOWNLOAD_BYTES)
            except Exception as e:  # noqa: BLE001
                errors[label].append("run %d: %s: %s" % (run + 1, type(e).__name__, e))
                continue
            o1 = os.times()
            times[label].append(t)
            client_cpu[label].append(100.0 * ((o1.user - o0.user) + (o1.system - o0.system)) / t)
            if p:
                c1 = p.cpu_split()
                du, ds = c1[0] - c0[0], c1[1] - c0[1]
                cpu[label].append((du + ds) * GIB / DOWNLOAD_BYTES)
                if du + ds > 0:
                    sys_share[label].append(100.0 * ds / (du + ds))
    S = {label: summary(v) for label, v in times.items()}
    mbps = {label: summary([DOWNLOAD_BYTES / 1e6 / t for t in v]) for label, v in times.items()}
    C = {label: summary(v) for label, v in cpu.items()}
    CC = {label: summary(v) for label, v in client_cpu.items()}
    SY = {label: summary(v) for label, v in sys_share.items()}
    direct = med(mbps["direct"])
    rows = []
    for label, _, _ in paths:
        rows.append([label, med(S[label]), med(mbps[label]), mbps[label].get("min"),
                     mbps[label].get("max"), rx(med(mbps[label]), direct), med(C[label]),
                     med(SY[label]), med(CC[label]), "%d/%d" % (S[label]["n"], DOWNLOAD_RUNS)])
    size = "1 GiB" if DOWNLOAD_BYTES == GIB else "%d MiB" % (DOWNLOAD_BYTES >> 20)
    table("1. download of %s (GET /bytes/%d), %d runs each" % (size, DOWNLOAD_BYTES, DOWNLOAD_RUNS),
          ["", "median s", "MB/s", "min MB/s", "max MB/s", "/ direct", "proxy CPU s/GiB",
           "of it sys %", "client CPU %", "runs ok"], rows, [2, 0, 0, 0, 1, 2, 0, 0, 1])
    print("  (MB = 10^6 bytes; time from connect to the last byte, the CONNECT exchange included;\n"
          "   proxy CPU: user+sys of the proxy's processes per GiB carried, of it sys %: the\n"
          "   kernel's share (system time, 10 ms ticks); client CPU: this script's own, as a\n"
          "   share of the download's time: near 100 means the client bounds it)")
    for label, errs in errors.items():
        for e in errs:
            anomaly("download %s: %s" % (label, e))
    results["download"] = {
        "bytes": DOWNLOAD_BYTES, "runs": DOWNLOAD_RUNS,
        "paths": {label: {"seconds": S[label], "mb_per_s": mbps[label], "proxy_cpu_s_per_gib": C[label],
                          "client_cpu_percent": CC[label], "errors": errors[label],
                          "proxy_sys_percent": SY[label],
                          "ratio_to_direct": ratio(med(mbps[label]), direct)}
                  for label, _, _ in paths}}


def bench_handshakes(proxies):
    targets = [("direct (TCP connect + close)", None, None)]
    for p in proxies:
        if isinstance(p, Floor):
            targets += [(FLOOR_HS, p, p.hs_port), (FLOOR_RELAY, p, p.port)]
        else:
            targets.append((p.name, p, p.port))
    rates = {(t[0], c): [] for t in targets for c in HS_CONCURRENCY}
    per = {(t[0], c): [] for t in targets for c in HS_CONCURRENCY}
    ccpu = {(t[0], c): [] for t in targets for c in HS_CONCURRENCY}
    sysp = {(t[0], c): [] for t in targets for c in HS_CONCURRENCY}
    errors = {(t[0], c): {} for t in targets for c in HS_CONCURRENCY}
    counts = {(t[0], c): 0 for t in targets for c in HS_CONCURRENCY}
    waited, short = [], []
    peak = [0]
    for rnd in range(HS_ROUNDS):
        for conc in HS_CONCURRENCY:
            k = rnd % len(targets)
            for label, p, port in targets[k:] + targets[:k]:
                if p is not None and not p.alive():
                    continue
                # a proxied handshake takes two conntrack entries (client-proxy,
                # proxy-upstream), a direct connect one
                entries = 1 if p is None else 2
                cap = min(HS_MAX, conntrack_room(HS_MAX * entries, waited) // entries)
                key = (label, conc)
                if cap < HS_MAX // 10:
                    short.append("%s, %d clients, round %d: skipped, the conntrack table is too full"
                                 % (label, conc, rnd + 1))
                    continue
                if cap < HS_MAX:
                    short.append("%s, %d clients, round %d: at most %d connections, what fits in the "
                                 "conntrack table" % (label, conc, rnd + 1, cap))
                c0 = p.cpu_split() if p else None
                ok, elapsed, errs, client, guarded = handshakes(port, conc, HS_SECONDS, cap,
                                                                conntrack_guard())
                ct = conntrack()
                if ct:
                    peak[0] = max(peak[0], ct[0])
                if guarded:
                    short.append("%s, %d clients, round %d: stopped after %.1f s, the conntrack table "
                                 "passed %d%%" % (label, conc, rnd + 1, elapsed, 100 * CT_SHARE))
                for e, n in errs.items():
                    errors[key][e] = errors[key].get(e, 0) + n
                if not ok:
                    errors[key]["a round with no handshake"] = errors[key].get("a round with no handshake", 0) + 1
                else:
                    rates[key].append(ok / elapsed)
                    ccpu[key].append(100.0 * client / elapsed)
                    counts[key] += ok
                    if p:
                        c1 = p.cpu_split()
                        du, ds = c1[0] - c0[0], c1[1] - c0[1]
                        per[key].append((du + ds) * 1e6 / ok)
                        if du + ds > 0:
                            sysp[key].append(100.0 * ds / (du + ds))
                time.sleep(0.5)   # let the proxy close what the round left
    R = {k: summary(v) for k, v in rates.items()}
    P = {k: summary(v) for k, v in per.items()}
    CC = {k: summary(v) for k, v in ccpu.items()}
    SY = {k: summary(v) for k, v in sysp.items()}
    rows = []
    for label, _, _ in targets:
        row = [label]
        for c in HS_CONCURRENCY:
            key = (label, c)
            row += [med(R[key]), rx(med(R[key]), med(R[(targets[0][0], c)])), med(P[key]), med(SY[key]),
                    med(CC[key]), sum(errors[key].values())]
        rows.append(row)
    cols = [""]
    for c in HS_CONCURRENCY:
        cols += ["%d: per s" % c, "/ direct", "proxy CPU us", "sys %", "client CPU %", "errors"]
    table("2. CONNECT handshakes per second (CONNECT, 200, close), %d and %d concurrent clients, "
          "%d rounds of %.0f s, medians" % (HS_CONCURRENCY + (HS_ROUNDS, HS_SECONDS)),
          cols, rows, [0, 2, 1, 0, 0, 0] * len(HS_CONCURRENCY))
    print("  (each round: %.0f s or %d connections, whichever ends first. direct: TCP connect +\n"
          "   close to the upstream, no proxy. proxy CPU: user+sys of the proxy's processes per\n"
          "   handshake, sys %% the kernel's share of it; client CPU: this script's, as a share\n"
          "   of the round: near 100 means the one-threaded client bounds the rate.\n"
          "   %s: 200 and its own close at once;\n"
          "   %s: its relaying port, which after the 200 waits for the client's end as\n"
          "   any relaying proxy must)" % (HS_SECONDS, HS_MAX, FLOOR_HS, FLOOR_RELAY))
    ct = conntrack()
    if ct:
        print("  (conntrack: at most %d of %d entries in use after a round; %.0f s spent waiting for\n"
              "   entries to expire, to stay below %d%% of the table)" %
              (peak[0], ct[1], sum(waited), 100 * CT_SHARE))
    for line in short:
        note(line)
    for key, errs in errors.items():
        if errs:
            anomaly("handshakes %s, %d clients: %d errors beside %d handshakes: %s" %
                    (key[0], key[1], sum(errs.values()), counts[key], dict(sorted(errs.items()))))
    results["handshakes"] = {
        "seconds_per_round": HS_SECONDS, "max_per_round": HS_MAX, "rounds": HS_ROUNDS,
        "conntrack": {"peak": peak[0], "table": ct[1] if ct else None, "waited_s": sum(waited),
                      "short_rounds": short},
        "targets": {label: {str(c): {"per_s": R[(label, c)], "proxy_cpu_us": P[(label, c)],
                                     "client_cpu_percent": CC[(label, c)],
                                     "proxy_sys_percent": SY[(label, c)],
                                     "handshakes": counts[(label, c)], "errors": errors[(label, c)],
                                     "ratio_to_direct": ratio(med(R[(label, c)]),
                                                              med(R[(targets[0][0], c)]))}
                            for c in HS_CONCURRENCY} for label, _, _ in targets}}


FLOOR_HS = "floor (200, close)"
FLOOR_RELAY = "floor, relaying"


def memory_table(proxies, mem):
    rows = []
    for p in proxies:
        m = mem[p.name]

        def g(phase, key="rss_kib"):
            return m.get(phase, {}).get(key)
        per = None
        if g("tunnels") is not None and g("idle") is not None and m.get("tunnels_ok"):
            per = (g("tunnels") - g("idle")) / m["tunnels_ok"]
        rows.append([p.name, g("idle"), g("tunnels"), per, g("closed"), g("end"),
                     (g("end") - g("idle")) if g("end") is not None and g("idle") is not None else None,
                     "%s/%s" % (g("idle", "processes"), g("tunnels", "processes")),
                     "%s/%s" % (g("idle", "threads"), g("tunnels", "threads")),
                     "%s/%s/%s" % (g("idle", "fds"), g("tunnels", "fds"), g("end", "fds"))])
    table("3. memory: VmRSS in KiB, summed over each proxy's processes",
          ["", "idle", "%d tunnels" % TUNNELS, "KiB/tunnel", "closed", "idle at end", "end - idle",
           "procs", "threads", "fds idle/tun/end"], rows, [0, 0, 1, 0, 0, 0, 0, 0, 0])
    print("  (idle: fresh, before any traffic; %d tunnels: each opened with CONNECT and one GET of\n"
          "   4 KiB answered, all held open; closed: 1 s after they closed; idle at end: after every\n"
          "   download and handshake round. A sum over processes counts shared pages once per process)"
          % TUNNELS)
    results["memory"] = mem


def egress_records(eg):
    """The JSON lines mcpgate-egress wrote: reasons counted; unexpected
    refusals, lines that are not JSON and tunnels with no close record."""
    recs, bad = eg.records()
    attempts = [r for r in recs if r.get("event") == "attempt"]
    closes = [r for r in recs if r.get("event") == "close"]
    reasons = {}
    for r in attempts:
        key = "%s %s" % ("allowed" if r.get("allowed") else "refused", r.get("reason"))
        reasons[key] = reasons.get(key, 0) + 1
    ok = reasons.get("allowed ok", 0)
    print()
    print("== mcpgate-egress records")
    print("  %d attempts, %d close records; by reason: %s" %
          (len(attempts), len(closes), ", ".join("%s %d" % kv for kv in sorted(reasons.items()))))
    expected_refusals = 2     # the allowlist check's two requests to the unlisted address
    refused = sum(n for k, n in reasons.items() if k.startswith("refused"))
    unlisted = reasons.get("refused not listed", 0)
    if unlisted != expected_refusals:
        anomaly("mcpgate-egress: %d 'not listed' refusals recorded, %d expected" % (unlisted, expected_refusals))
    if refused - unlisted:
        anomaly("mcpgate-egress: %d refusals other than the allowlist check's: %s" %
                (refused - unlisted, {k: n for k, n in reasons.items()
                                      if k.startswith("refused") and k != "refused not listed"}))
    if ok != len(closes):
        anomaly("mcpgate-egress: %d allowed attempts but %d close records" % (ok, len(closes)))
    if bad:
        anomaly("mcpgate-egress: %d stdout lines are not JSON; first: %r" % (len(bad), bad[0]))
    results["egress_records"] = {"attempts": len(attempts), "closes": len(closes), "reasons": reasons,
                                 "not_json": len(bad)}


# ---- the run -------------------------------------------------------------------------------

def header(binary, origin, digest, floor_digest):
    now = datetime.datetime.now().astimezone()
    cpu = ""
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), "")
    except OSError:
        pass
    commit = first_line(["git", "-C", TOP, "rev-parse", "--short", "HEAD"]) or "?"
    try:
        if sh(["git", "-C", TOP, "status", "--porcelain", "--untracked-files=no"]).stdout.strip():
            commit += " (+ uncommitted changes)"
    except (OSError, subprocess.TimeoutExpired):
        pass
    versions = {"mcpgate-egress": "sha256 " + digest, "floor": "sha256 " + floor_digest,
                "tinyproxy": first_line(["tinyproxy", "-v"]) if shutil.which("tinyproxy") else None,
                "squid": first_line(["squid", "-v"]) if shutil.which("squid") else None,
                "python": platform.python_version()}
    machine = {"nproc": os.cpu_count(), "kernel": platform.release(), "cpu": cpu,
               "loadavg": [round(x, 2) for x in os.getloadavg()]}
    results.update({"date": now.isoformat(timespec="seconds"), "commit": commit, "machine": machine,
                    "versions": versions, "quick": QUICK, "binary": {"path": origin, "sha256": digest},
                    "network": {"upstream": AUTHORITY, "unlisted": "%s:%d" % (OTHER_ADDR, UP_PORT),
                                "host_side": "%s/%d" % (HOST_ADDR, NET_PREFIX), "namespace": NS}})
    print("mcpgate-egress benchmarks%s" % (" (--quick)" if QUICK else ""))
    print("  date     %s" % results["date"])
    print("  machine  nproc %s, kernel %s, %s; load average %s" %
          (machine["nproc"], machine["kernel"], cpu or "?", " ".join("%.2f" % x for x in machine["loadavg"])))
    print("  tree     %s, binary %s (sha256 %s)" % (commit, origin, digest[:12]))
    print("  versions " + "; ".join("%s %s" % (k, v) for k, v in versions.items()
                                    if v and k not in ("mcpgate-egress", "floor")))
    print("  floor    %s (sha256 %s): bench/floor.c, the least a proxy does" % (FLOOR, floor_digest[:12]))
    print("  network  upstream %s in namespace %s, host side %s/%d; proxies on 127.0.0.1" %
          (AUTHORITY, NS, HOST_ADDR, NET_PREFIX))
    ct = conntrack()
    results["conntrack_at_start"] = list(ct) if ct else None
    if ct:
        print("  conntrack %d of %d entries in use; the handshake rounds keep it below %d" %
              (ct[0], ct[1], int(ct[1] * CT_SHARE)))
    print("  figures: medians of one run; no figure is a pass/fail threshold")
    sys.stdout.flush()
    return now


def check_alive(proxies, when):
    for p in proxies:
        if p.proc is not None and p.proc.poll() is not None:
            anomaly("%s exited %s %s; its stderr ends: %s" %
                    (p.name, p.proc.returncode, when, p.stderr_text()[-300:].strip()))


def run_all(binary, floor_binary, proxies_wanted):
    root = tempdir("mcpgate-bench-egress-")
    os.chmod(root, 0o755)
    proxies = []
    up = None
    try:
        setup_network()
        up = start_upstream(root)
        for cls in proxies_wanted:
            p = cls(root)
            try:
                if cls is Egress:
                    p.start(binary)
                elif cls is Floor:
                    p.start(floor_binary)
                else:
                    p.start()
                proxies.append(p)
            except Exception as e:  # noqa: BLE001 - the others still run
                anomaly("%s did not start: %s: %s" % (p.name, type(e).__name__, e))
                p.stop()
        time.sleep(0.5)
        mem = {p.name: {"idle": p.memory()} for p in proxies}
        measure(bench_allowlist, proxies)
        measure(bench_memory_tunnels, proxies, mem)
        check_alive(proxies, "during the memory measurement")
        measure(bench_downloads, [p for p in proxies if p.alive()])
        check_alive(proxies, "during the downloads")
        measure(bench_handshakes, [p for p in proxies if p.alive()])
        check_alive(proxies, "during the handshake rounds")
        time.sleep(1.0)
        for p in proxies:
            if p.alive():
                mem[p.name]["end"] = p.memory()
        memory_table(proxies, mem)
    finally:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
        statuses = {}
        for p in proxies:
            statuses[p.name] = p.stop()
        if up is not None:
            try:
                up.stdin.close()
                up.wait(5)
            except subprocess.TimeoutExpired:
                anomaly("the upstream did not end within 5 s of its input closing (killed)")
                up.kill()
                up.wait()
        for c in children:
            if c.poll() is None:
                c.kill()
                c.wait()
        teardown_network()
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
    for p in proxies:
        if isinstance(p, Floor):
            if statuses.get(p.name) != 0:
                anomaly("floor exited %s at the end of its lifeline, not 0" % statuses.get(p.name))
            if p.stderr_text().strip():
                anomaly("floor wrote on stderr: %s" % p.stderr_text().strip()[:600])
        if isinstance(p, Egress):
            if statuses.get(p.name) != 0:
                anomaly("mcpgate-egress exited %s at the end of its lifeline, not 0" % statuses.get(p.name))
            err = [ln for ln in p.stderr_text().splitlines()
                   if ln.strip() and ln.strip() != "mcpgate-egress: standard input ended: exiting"]
            if err:
                lines = {}
                for ln in err:
                    lines[ln] = lines.get(ln, 0) + 1
                anomaly("mcpgate-egress wrote on stderr: %s" %
                        "; ".join("%s (%d times)" % kv if kv[1] > 1 else kv[0] for kv in lines.items())[:600])
            egress_records(p)


def side_by_side(dl, hs):
    """Every figure of the floor and the proxies in one table, with the
    ratios the floor is for: what the machine allows any proxy (floor /
    direct), what mcpgate-egress reaches of it (mcpgate-egress / floor)."""
    names = ["floor", "mcpgate-egress", "tinyproxy", "squid"]

    def mb(label):
        return med(dl.get(label, {}).get("mb_per_s"))

    def dcpu(label):
        return med(dl.get(label, {}).get("proxy_cpu_s_per_gib"))

    def dsys(label):
        return med(dl.get(label, {}).get("proxy_sys_percent"))

    def hget(label, c, key):
        return med(hs.get(label, {}).get(str(c), {}).get(key))

    rows = []
    out = {}
    for kind, suffix in (("plain HTTP", ", plain HTTP"), ("CONNECT", ", CONNECT")):
        if not dl:
            break
        v = [mb("direct")] + [mb(n + suffix) for n in names]
        rows.append(["1 GiB %s, MB/s" % kind] + v + [rx(v[1], v[0]), rx(v[2], v[0]), rx(v[2], v[1])])
        c = [None] + [dcpu(n + suffix) for n in names]
        # seconds per GiB want two decimals in a table of whole numbers
        rows.append(["  proxy CPU, s per GiB"] + [fmt(x, 2) for x in c] + ["", "", rx(c[2], c[1])])
        y = [None] + [dsys(n + suffix) for n in names]
        rows.append(["    of it system, %"] + y + ["", "", ""])
        out["download " + kind] = {"mb_per_s": v, "cpu_s_per_gib": c}
    d = "direct (TCP connect + close)"
    for conc in HS_CONCURRENCY:
        if not hs:
            break
        hnames = [FLOOR_HS, "mcpgate-egress", "tinyproxy", "squid"]
        v = [hget(d, conc, "per_s")] + [hget(n, conc, "per_s") for n in hnames]
        rows.append(["CONNECTs/s, %d client%s" % (conc, "s" if conc > 1 else "")] + v +
                    [rx(v[1], v[0]), rx(v[2], v[0]), rx(v[2], v[1])])
        c = [None] + [hget(n, conc, "proxy_cpu_us") for n in hnames]
        rows.append(["  proxy CPU, us per CONNECT"] + c + ["", "", rx(c[2], c[1])])
        y = [None] + [hget(n, conc, "proxy_sys_percent") for n in hnames]
        rows.append(["    of it system, %"] + y + ["", "", ""])
        fr = [hget(FLOOR_RELAY, conc, "per_s"), hget(FLOOR_RELAY, conc, "proxy_cpu_us")]
        rows.append(["  beside the floor relaying: /s, us"] + [None, fr[0], None, None, None] +
                    [rx(fr[0], v[0]), "", rx(v[2], fr[0])])
        rows.append(["    its CPU per CONNECT, us"] + [None, fr[1], None, None, None] + ["", "", rx(c[2], fr[1])])
        rows.append(["    of it system, %"] + [None, hget(FLOOR_RELAY, conc, "proxy_sys_percent"), None, None,
                                              None, "", "", ""])
        out["handshakes %d" % conc] = {"per_s": v, "cpu_us": c, "floor_relaying": fr}
    if not rows:
        return
    table("side by side: direct, the floor, the proxies (medians)",
          ["", "direct", "floor", "mcpgate-egress", "tinyproxy", "squid", "floor/direct",
           "egress/direct", "egress/floor"], rows, [0, 0, 0, 0, 0, 0, 0, 0])
    print("  (floor/direct: what this machine leaves any proxy; egress/floor: what mcpgate-egress\n"
          "   reaches of that. For the CPU rows egress/floor above 1x is more CPU. The handshake\n"
          "   rows' floor answers 200 and closes; the floor relaying waits for the client's end\n"
          "   as a relaying proxy must, and egress/floor on its lines is against it. Of it\n"
          "   system: the kernel's share of that CPU (10 ms ticks); the rest is the proxy's code)")
    results["side_by_side"] = out


def ratios_block():
    dl = results.get("download", {}).get("paths", {})
    hs = results.get("handshakes", {}).get("targets", {})
    side_by_side(dl, hs)
    print()
    print("== ratios")
    lines = []
    mem = results.get("memory", {})

    def mb(label):
        return med(dl.get(label, {}).get("mb_per_s"))

    def rate(label, c):
        return med(hs.get(label, {}).get(str(c), {}).get("per_s"))

    names = [n for n in ("floor", "mcpgate-egress", "tinyproxy", "squid") if n in mem]
    if dl:
        for n in names:
            lines.append("throughput / direct: %s plain HTTP %s, CONNECT %s" %
                         (n, rx(mb(n + ", plain HTTP"), mb("direct")), rx(mb(n + ", CONNECT"), mb("direct"))))
    if hs:
        d = "direct (TCP connect + close)"
        for n in names:
            for h in ((FLOOR_HS, FLOOR_RELAY) if n == "floor" else (n,)):
                lines.append("handshakes / direct connects: %s %s with 1 client, %s with 100" %
                             (h, rx(rate(h, 1), rate(d, 1)), rx(rate(h, 100), rate(d, 100))))
    e = "mcpgate-egress"
    for other in ("floor", "tinyproxy", "squid"):
        if e not in names or other not in names:
            continue
        parts = []
        if dl:
            parts.append("throughput plain %s, CONNECT %s" %
                         (rx(mb(e + ", plain HTTP"), mb(other + ", plain HTTP")),
                          rx(mb(e + ", CONNECT"), mb(other + ", CONNECT"))))
        if hs:
            o = FLOOR_HS if other == "floor" else other
            parts.append("handshakes/s %s (1 client), %s (100)" %
                         (rx(rate(e, 1), rate(o, 1)), rx(rate(e, 100), rate(o, 100))))
            if other == "floor":
                parts.append("beside the floor relaying %s (1), %s (100)" %
                             (rx(rate(e, 1), rate(FLOOR_RELAY, 1)), rx(rate(e, 100), rate(FLOOR_RELAY, 100))))

        def rss(n, phase):
            return mem.get(n, {}).get(phase, {}).get("rss_kib")
        parts.append("RSS idle %s, with %d tunnels %s" %
                     (rx(rss(e, "idle"), rss(other, "idle")), TUNNELS,
                      rx(rss(e, "tunnels"), rss(other, "tunnels"))))
        lines.append("mcpgate-egress / %s: %s" % (other, "; ".join(parts)))
    for line in lines:
        print("  " + line)
    print("  (throughput and handshakes: above 1x is faster; RSS: below 1x is smaller)")
    results["ratios"] = lines


def write_json(now):
    d = os.path.join(HERE, "results")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "egress-%s%s.json" % (now.strftime("%Y-%m-%d-%H%M%S"), "-quick" if QUICK else ""))

    def clean(x):
        if isinstance(x, float):
            return None if math.isnan(x) else round(x, 3)
        if isinstance(x, dict):
            return {str(k): clean(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [clean(v) for v in x]
        return x
    with open(path, "w") as f:
        json.dump(clean(results), f, indent=2, sort_keys=True)
        f.write("\n")
    return path


def snapshot_binary(origin, name):
    """Run a copy taken once: a rebuild in the tree during the run cannot
    change it midway."""
    d = tempdir("mcpgate-bench-bin-")
    os.chmod(d, 0o755)
    path = os.path.join(d, name)
    shutil.copy2(origin, path)
    with open(path, "rb") as fh:
        digest = hashlib.sha256(fh.read()).hexdigest()
    return path, digest


def install_anchors(missing):
    """apt-get install the missing anchors, their services kept from
    starting (a policy-rc.d that refuses every start, Debian's own way, in
    place only while apt runs unless one was there already) and disabled
    afterwards, so the system runs nothing it did not before. Returns an
    error text, or None."""
    pkgs = [pkg for prog, pkg in ANCHORS if prog in missing]
    print("bench: installing %s (%s)" % (", ".join(pkgs), " ".join(ANCHORS_INSTALL[:3] + pkgs)),
          flush=True)
    made_policy = False
    if not os.path.exists(POLICY_RC):
        with open(POLICY_RC, "w") as f:
            f.write("#!/bin/sh\n# mcpgate bench/egress.py: no service starts while it installs\nexit 101\n")
        os.chmod(POLICY_RC, 0o755)
        made_policy = True
    try:
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        r = sh(ANCHORS_INSTALL[:3] + pkgs, timeout=900, env=env)
    finally:
        if made_policy:
            os.unlink(POLICY_RC)
    if r.returncode != 0:
        return "%s exited %d: %s" % (" ".join(ANCHORS_INSTALL[:3] + pkgs), r.returncode,
                                     (r.stderr or r.stdout).strip()[-400:])
    for pkg in pkgs:
        # the package enabled its service for the next boot: not ours to change
        if shutil.which("systemctl"):
            sh(["systemctl", "disable", pkg], timeout=60)
        if shutil.which("update-rc.d"):
            sh(["update-rc.d", pkg, "disable"], timeout=60)
        running = [pid for pid in os.listdir("/proc") if pid.isdigit()
                   and proc_comm(int(pid)) == pkg]
        if running:
            sh(["service", pkg, "stop"], timeout=60)
            note("%s: its service had started on install; stopped it" % pkg)
    still = [prog for prog, _ in ANCHORS if not shutil.which(prog)]
    return ("still not found after the install: %s" % ", ".join(still)) if still else None


def proc_comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as fh:
            return fh.read().strip()
    except OSError:
        return None


def anchors_wanted():
    """The proxy classes to run, or an exit status when the anchors are
    asked for (always, unless --no-anchors) and cannot be had."""
    wanted = [Floor, Egress]
    missing = [prog for prog, _ in ANCHORS if not shutil.which(prog)]
    if NO_ANCHORS:
        note("--no-anchors: tinyproxy and squid are left out; no figure here stands beside theirs")
        return wanted
    if missing and INSTALL_ANCHORS:
        why = install_anchors(missing)
        if why is not None:
            print("bench: the anchors could not be installed: %s" % why)
            return 2
        missing = []
    if missing:
        print("bench: %s not installed: every figure of this bench stands beside tinyproxy's and\n"
              "squid's, so it does not run without them. Install them (Debian's packages) with\n"
              "  %s\n"
              "or run it with --install-anchors (make bench-egress EGRESS_BENCH_ARGS=--install-anchors),\n"
              "which does that with their services kept from starting; --no-anchors measures\n"
              "mcpgate-egress and direct alone." % (" and ".join(missing), " ".join(ANCHORS_INSTALL)))
        return 2
    return wanted + [Tinyproxy, Squid]


def main():
    global watchdog
    if sys.argv[1:2] == ["--upstream"]:
        a = sys.argv[2:]
        return upstream_main(a[0], int(a[1]), a[2], float(a[3]))
    if sys.argv[1:2] == ["--watchdog"]:
        return watchdog_main(float(sys.argv[2]))
    for signo in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signo, on_term)
    if not os.access(EGRESS, os.X_OK):
        print("bench: %s is missing; run make mcpgate-egress (make bench-egress does)" % EGRESS)
        return 2
    if not os.access(FLOOR, os.X_OK):
        print("bench: %s is missing; run make build/bench/floor (make bench-egress does)" % FLOOR)
        return 2
    if os.geteuid() != 0 or not shutil.which("ip"):
        print("bench: needs root and iproute2 (ip): it makes a network namespace and a veth pair")
        return 2
    wanted = anchors_wanted()
    if isinstance(wanted, int):
        return wanted
    watchdog = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--watchdog",
                                 str(UPSTREAM_MAX_SECONDS + 600)], stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
    binary, digest = snapshot_binary(EGRESS, "mcpgate-egress")
    floor_binary, floor_digest = snapshot_binary(FLOOR, "floor")
    now = header(binary, EGRESS, digest, floor_digest)
    try:
        run_all(binary, floor_binary, wanted)
    except KeyboardInterrupt as e:
        anomaly("interrupted (%s)" % (e or "SIGINT"))
    except Exception as e:  # noqa: BLE001 - reported; the cleanup already ran
        anomaly("setup failed: %s: %s" % (type(e).__name__, e))
    finally:
        for d in temp_dirs:
            shutil.rmtree(d, ignore_errors=True)
        watch("done")
        try:
            watchdog.stdin.close()
            watchdog.wait(10)
        except (OSError, subprocess.TimeoutExpired):
            pass
    results["machine"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    ratios_block()
    print("  (load average at the start %s, at the end %s)" %
          (" ".join("%.2f" % x for x in results["machine"]["loadavg"]),
           " ".join("%.2f" % x for x in results["machine"]["loadavg_end"])))
    results["anomalies"] = anomalies
    results["notes"] = notes
    status = report_anomalies("every answer was right, every proxy kept running and stopped "
                              "cleanly")
    path = write_json(now)
    print()
    print("results: %s" % os.path.relpath(path, TOP))
    return status


if __name__ == "__main__":
    sys.exit(main())
