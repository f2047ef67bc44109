"""Slow connections without the token, as a slowloris holds them: for
tests/slow_clients_test.py and bench/slow_clients.py (issue 26, item 4).

A slow connection sends a request line and a header begun, then a byte of
that header every so often, and never ends its head. The horde keeps n of
them open from a process of its own (as another user when asked: setuid is
for the whole process), opening a new one for each the listener ends.
"""
import os
import select
import socket
import sys
import time

HEAD = b"GET /health HTTP/1.1\r\nHost: %s\r\nX-Slow: a"


def slow_open(port, n, host_header, tolerant=False):
    """n connections, each with a request line and one header begun; when
    tolerant, one that cannot be opened (the listener's backlog is full) is
    left out instead of raising"""
    socks = []
    for _ in range(n):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
        except OSError:
            if not tolerant:
                raise
            continue
        s.setblocking(False)
        try:
            s.send(HEAD % host_header.encode())
        except OSError:
            pass
        socks.append(s)
    return socks


def trickle(socks, stop, every=2.0):
    """a header byte on every connection, every so often, until stop (an Event)"""
    while not stop.wait(every):
        for s in socks:
            try:
                s.send(b"a")
            except OSError:
                pass


def ended_by_peer(socks, wait=0.0):
    """how many of socks the listener ended (EOF or reset), waiting up to wait s"""
    ended = set()
    deadline = time.monotonic() + wait
    while True:
        live = [s for s in socks if s not in ended]
        r, _, _ = select.select(live, [], [], max(0.0, min(0.5, deadline - time.monotonic())))
        for s in r:
            try:
                if s.recv(4096) == b"":
                    ended.add(s)
            except BlockingIOError:
                pass
            except OSError:
                ended.add(s)
        if time.monotonic() >= deadline or len(ended) == len(socks):
            return len(ended)


class Horde:
    """n slow connections kept open by a child process, as uid when given;
    each one the listener ends is opened again. opened: how many it had
    open at first (those the listener let it open within 5 s each). stop()
    ends it and says how many the listener ended meanwhile."""

    def __init__(self, port, host_header, n, uid=None, every=2.0, ready_within=120):
        ready_r, ready_w = os.pipe()
        self._stop_r, self._stop_w = os.pipe()
        self._count_r, count_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(ready_r)
            os.close(self._stop_w)
            os.close(self._count_r)
            os._exit(self._child(port, host_header, n, uid, every, ready_w, count_w))
        os.close(ready_w)
        os.close(self._stop_r)
        os.close(count_w)
        self.opened = 0
        if select.select([ready_r], [], [], ready_within)[0]:
            text = os.read(ready_r, 32)
            self.opened = int(text) if text.isdigit() else 0
        os.close(ready_r)

    def _child(self, port, host_header, n, uid, every, ready, count):
        ended = 0
        try:
            if uid is not None:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
            socks = slow_open(port, n, host_header, tolerant=True)
            os.write(ready, str(len(socks)).encode())
            last = time.monotonic()
            while True:
                r, _, _ = select.select(socks + [self._stop_r], [], [], 1.0)
                if self._stop_r in r:
                    break
                for s in r:
                    try:
                        if s.recv(4096) != b"":
                            continue
                    except BlockingIOError:
                        continue
                    except OSError:
                        pass
                    ended += 1
                    s.close()
                    socks.remove(s)
                    socks += slow_open(port, 1, host_header, tolerant=True)
                if time.monotonic() - last > every:
                    last = time.monotonic()
                    for s in socks:
                        try:
                            s.send(b"a")
                        except OSError:
                            pass
            os.write(count, str(ended).encode())
            return 0
        except Exception as e:  # noqa: BLE001 - the child reports and ends
            sys.stderr.write("slowloris horde: %s\n" % e)
            return 1

    def stop(self):
        """end the horde: how many of its connections the listener ended"""
        try:
            os.write(self._stop_w, b"x")
        except OSError:
            pass
        os.close(self._stop_w)
        _, status = os.waitpid(self.pid, 0)
        text = os.read(self._count_r, 64)
        os.close(self._count_r)
        return int(text) if status == 0 and text else None
