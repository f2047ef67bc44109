#!/usr/bin/env python3
"""The listener against slow clients without the token (issue 26, item 4),
with real sockets on loopback (docs/listener.md, "Slow clients and
strangers").

The attack as it was found: hundreds of connections that send a request
head a byte at a time held every place libmicrohttpd had (560), and the
token holder's /health timed out. Each case opens the slow connections
first, then asks what a token holder asks; nothing here measures time (the
bench does: bench/slow_clients.py). A holder is answered, or not, within a
generous deadline; a slow connection is closed by the listener, or not,
which the test sees as the end of its stream.

- 600 slow connections of the token holder's own user: the holder is
  answered, and the listener keeps at most 32 of them (the oldest closed as
  new ones come);
- as root, 1,000 slow connections of another user (nobody), reopened as
  soon as they are closed: the holder's 20 requests, each on a new
  connection, are all answered;
- a head that trickles a byte every second, and a body of a request with
  the token that does the same: each is closed at listen_read_timeout (its
  default, 30 s), whatever the trickle.

Environment: MCPGATE, FAKES (as serve_test.py).
"""
import os
import socket
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from mcpclient import Tap  # noqa: E402
from gwtest import Fixture  # noqa: E402
import listenclient  # noqa: E402
from slowloris import Horde, ended_by_peer, slow_open, trickle  # noqa: E402

t = Tap()
PEER_PENDING_MAX = 32  # conns.c, LST_PEER_PENDING_MAX
ANSWER_WITHIN = 20.0   # s: a generous bound for an answer that used to never come


def health(lst):
    """the token holder's GET /health on a new connection: its status, or why not"""
    try:
        status, _, body = lst.http("GET", "/health", accept=None, timeout=ANSWER_WITHIN)
        return status if '"status":"ok"' in body else "answered %d: %s" % (status, body[:80])
    except (OSError, Exception) as e:  # noqa: B014 - http.client raises more than OSError
        return "%s: %s" % (type(e).__name__, e)


def test_same_user():
    f = Fixture("")
    lst = listenclient.Listener(f.argv(), f.env(), f.dir, f.state)
    socks = []
    stop = threading.Event()
    try:
        socks = slow_open(lst.port, 600, lst.host(), tolerant=True)
        th = threading.Thread(target=trickle, args=(socks, stop), daemon=True)
        th.start()
        got = health(lst)
        t.ok(got == 200, "600 slow connections of the holder's own user: its /health is "
             "answered", got)
        ended = ended_by_peer(socks, wait=5.0)
        t.ok(ended >= 600 - PEER_PENDING_MAX,
             "of one peer's 600 slow connections the listener keeps %d at most: %d closed"
             % (PEER_PENDING_MAX, ended))
        _, text = lst.metrics()
        t.ok('mcpgate_http_connections_closed_total{reason="peer"}' in text,
             "and counts them (mcpgate_http_connections_closed_total)", text[-600:])
    finally:
        stop.set()
        for s in socks:
            s.close()
        lst.stop()


def test_other_user():
    if os.geteuid() != 0:
        t.ok(True, "# SKIP another user's slow connections need root to be that user")
        return
    f = Fixture("")
    lst = listenclient.Listener(f.argv(), f.env(), f.dir, f.state)
    horde = Horde(lst.port, lst.host(), 1000, uid=65534)
    try:
        # a listener that lets fewer in (a2bc3e6: its 560 places and the
        # backlog) is still attacked with what it took
        t.ok(horde.opened > 0, "another user (nobody) opens up to 1,000 slow connections: "
             "%d open" % horde.opened)
        answers = []
        while len(answers) < 20 and (not answers or answers[-1] == 200):
            answers.append(health(lst))
        t.ok(len(answers) == 20 and all(a == 200 for a in answers),
             "while it holds them and reopens each the listener ends: the holder's 20 "
             "requests, each on a new connection, are all answered",
             [a for a in answers if a != 200][:3])
    finally:
        horde.stop()
        lst.stop()


def test_deadline():
    f = Fixture("")
    lst = listenclient.Listener(f.argv(), f.env(), f.dir, f.state)
    stop = threading.Event()
    try:
        head = slow_open(lst.port, 1, lst.host())
        # a request with the token whose body never ends: 1,000 bytes said,
        # one a second sent
        body = socket.create_connection(("127.0.0.1", lst.port), timeout=5)
        body.setblocking(False)
        body.send(("POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"
                   "Content-Type: application/json\r\nAccept: application/json, "
                   "text/event-stream\r\nContent-Length: 1000\r\n\r\n{"
                   % (lst.host(), lst.token)).encode())
        th = threading.Thread(target=trickle, args=(head + [body], stop, 1.0), daemon=True)
        th.start()
        # the default listen_read_timeout is 30 s; libmicrohttpd's own 60 s
        # starts again at every byte, so without a deadline both live on
        ended = ended_by_peer(head + [body], wait=75.0)
        t.ok(ended == 2, "a head and a body that trickle a byte a second are both closed at "
             "their deadline, whatever the trickle (%d of 2)" % ended)
        got = health(lst)
        t.ok(got == 200, "and the listener goes on answering", (got, lst.stderr()[-1500:]))
    finally:
        stop.set()
        lst.stop()


def main():
    for case in (test_same_user, test_other_user, test_deadline):
        try:
            case()
        except Exception as e:  # noqa: BLE001 - one case's failure is reported, the rest run
            t.ok(False, "%s raised %s: %s" % (case.__name__, type(e).__name__, e))
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
