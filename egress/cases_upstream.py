#!/usr/bin/env python3
"""The upstream of egress/cases_test.sh: a small recording server.

Listens on ADDRESS at each PORT (IPv4 and, when given, IPv6). For every
connection it reads one request (up to the end of the header section and its
Content-Length or chunked body, or one TLS record), then keeps reading for a
short grace period so that anything smuggled after the request would be seen,
writes everything it received to DIR/conn-PORT-N.bin, answers with the bytes of
DIR/answer (or the answer named by DIR/answer-PORT), and closes.

On port 8007 of each address it is an echo server instead, recording
nothing: every byte comes back, a peer's end is answered with ours, a reset
ends the connection. The driver's many short tunnels go there.

Usage: cases_upstream.py DIR ADDRESS[,ADDRESS...] PORT[,PORT...]
"""
import os
import socket
import sys
import threading
import time

GRACE = 0.2
IDLE = 1.0

counter = 0
lock = threading.Lock()


def request_complete(buf):
    if buf[:1] == b"\x16" and len(buf) >= 5:
        return len(buf) >= 5 + int.from_bytes(buf[3:5], "big")
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return False
    head = buf[:end].lower()
    body = buf[end + 4:]
    for line in head.split(b"\r\n"):
        if line.startswith(b"content-length:"):
            try:
                return len(body) >= int(line.split(b":", 1)[1])
            except ValueError:
                return True
        if line.startswith(b"transfer-encoding:"):
            return body.endswith(b"0\r\n\r\n")
    return True


def serve(conn, port, outdir):
    global counter
    conn.settimeout(IDLE)
    buf = b""
    try:
        while not request_complete(buf):
            data = conn.recv(65536)
            if not data:
                break
            buf += data
        conn.settimeout(GRACE)
        end = time.time() + GRACE
        while time.time() < end:
            data = conn.recv(65536)
            if not data:
                break
            buf += data
    except (socket.timeout, OSError):
        pass
    with lock:
        counter += 1
        n = counter
    with open(os.path.join(outdir, "conn-%d-%d.bin" % (port, n)), "wb") as f:
        f.write(buf)
    answer = os.path.join(outdir, "answer-%d" % port)
    if not os.path.exists(answer):
        answer = os.path.join(outdir, "answer")
    try:
        with open(answer, "rb") as f:
            data = f.read()
        conn.settimeout(10)
        conn.sendall(data)
    except OSError:
        pass
    try:
        conn.shutdown(socket.SHUT_WR)
        conn.settimeout(1)
        while conn.recv(65536):
            pass
    except OSError:
        pass
    conn.close()


ECHO_PORT = 8007


def echo(conn):
    conn.settimeout(30)
    try:
        while True:
            data = conn.recv(65536)
            if not data:
                break
            conn.sendall(data)
    except OSError:
        pass
    conn.close()


def echo_loop(s):
    while True:
        c, _ = s.accept()
        threading.Thread(target=echo, args=(c,), daemon=True).start()


def bind(addr, port):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(256)
    return s


def accept_loop(s, port, outdir):
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c, port, outdir), daemon=True).start()


def main():
    outdir, addrs, ports = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(",")
    for a in addrs:
        for p in ports:
            s = bind(a, int(p))
            threading.Thread(target=accept_loop, args=(s, int(p), outdir), daemon=True).start()
        threading.Thread(target=echo_loop, args=(bind(a, ECHO_PORT),), daemon=True).start()
    open(os.path.join(outdir, "ready"), "w").close()
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
