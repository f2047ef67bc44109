#!/usr/bin/env python3
"""The token holder's latency under slow connections without the token
(issue 26, item 4): `mcpgate serve --listen` on the fake runtime, a token
holder asking GET /health on a new connection each time, first with the
listener idle, then while a horde (tests/lib/slowloris.py) holds 1,000 slow
connections, each sending a header byte every 2 s and never ending its head,
and opening a new one for each the listener ends.

Printed per row: the holder's p50 and p99 (ms, nearest-rank, from connect to
the whole answer read), how many of its requests got no answer within 10 s,
and how many slow connections the listener ended meanwhile. The horde runs
as nobody when the bench runs as root (another local user: the listener's
per-peer cap counts users), else as the holder's own user.

Nothing here asserts on time; the exit status is 1 when the listener would
not start or a request got a wrong answer. Environment: MCPGATE (default
./mcpgate), FAKES (default build/fakes). Options: --slow 1000, --requests 200.
"""
import http.client
import os
import resource
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
os.environ.setdefault("MCPGATE", os.path.join(TOP, "mcpgate"))
os.environ.setdefault("FAKES", os.path.join(TOP, "build", "fakes"))
from gwtest import Fixture  # noqa: E402
import listenclient  # noqa: E402
from slowloris import Horde  # noqa: E402

ANSWER_WITHIN = 10.0  # s: after that a request counts as unanswered


def option(name, default):
    args = sys.argv[1:]
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return default


def percentile(sorted_values, p):
    if not sorted_values:
        return float("nan")
    k = max(0, min(len(sorted_values) - 1, int(round(p / 100.0 * len(sorted_values) + 0.5)) - 1))
    return sorted_values[k]


def holder(lst, n):
    """n GET /health with the token, each on a new connection: (latencies in
    ms of the answered ones, unanswered, wrong)"""
    times, unanswered, wrong = [], 0, 0
    for _ in range(n):
        t0 = time.monotonic()
        try:
            c = http.client.HTTPConnection("127.0.0.1", lst.port, timeout=ANSWER_WITHIN)
            c.request("GET", "/health", headers={"Host": lst.host(),
                                                 "Authorization": "Bearer " + lst.token})
            r = c.getresponse()
            body = r.read()
            c.close()
            if r.status == 200 and b'"status":"ok"' in body:
                times.append((time.monotonic() - t0) * 1000.0)
            else:
                wrong += 1
        except (OSError, http.client.HTTPException):
            unanswered += 1
    return sorted(times), unanswered, wrong


def main():
    slow = int(option("--slow", "1000"))
    requests = int(option("--requests", "200"))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < slow + 256:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, slow + 256), hard))
    uid = 65534 if os.geteuid() == 0 else None
    f = Fixture("")
    lst = listenclient.Listener(f.argv(), f.env(), f.dir, f.state)
    if lst.port is None:
        print("the listener did not start:\n" + lst.stderr()[-2000:])
        return 1
    rows, bad = [], 0
    try:
        idle = holder(lst, requests)
        rows.append(("idle", 0, idle, "-"))
        horde = Horde(lst.port, lst.host(), slow, uid=uid)
        if horde.opened == 0:
            print("the horde could not open a connection")
            horde.stop()
            return 1
        under = holder(lst, requests)
        ended = horde.stop()
        rows.append(("slow (%s)" % ("nobody" if uid is not None else "same user"), horde.opened,
                     under,
                     "-" if ended is None else str(ended)))
    finally:
        lst.stop()
        f.cleanup()
    print("mcpgate: %s" % os.environ["MCPGATE"])
    print("token holder: %d GET /health, each on a new connection; unanswered: no "
          "answer within %.0f s" % (requests, ANSWER_WITHIN))
    print("%-20s %6s %9s %9s %11s %6s %13s" % ("horde", "opened", "p50 ms", "p99 ms",
                                              "unanswered", "wrong", "slow ended"))
    for name, n, (times, unanswered, wrong), ended in rows:
        bad += wrong
        print("%-20s %6d %9.1f %9.1f %11d %6d %13s" % (name, n, percentile(times, 50),
                                                      percentile(times, 99), unanswered, wrong,
                                                      ended))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
