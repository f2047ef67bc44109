#!/usr/bin/env python3
"""A client never waits on the slowest server (issue 25), on the fake runtime.

- tools/list is answered at once with the servers that are ready, and the
  client hears notifications/tools/list_changed as each further one comes; a
  2026-07-28 client with no listen open waits a short bound (2 s) at most;
  an unapproved server is not started at all, and said so once.
- a tools/call for a server still starting waits for its start.
- start = "lazy": the approved tools are offered from the pin and the server
  starts at its first use; a live manifest that differs is withheld then.
- a server that exits mid-session is started again with backoff: its call in
  flight answered with an error, its tools withdrawn and offered again.
- the listener's first request works without warm-up.

Environment: MCPGATE, FAKES (as serve_test.py). Nothing here asserts on time:
where an order matters the test reads the audit log's order.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from mcpclient import Tap, Timeout, text_of  # noqa: E402

from gwtest import Fixture, events, learn_probe_hash  # noqa: E402
import gwtest  # noqa: E402
import listenclient  # noqa: E402
from listenclient import modern_params  # noqa: E402

t = Tap()
PROBE_HASH = None


def server(name, tools=("echo",), args=None, extra="", manifest="pin"):
    return gwtest.server(name, PROBE_HASH if manifest == "pin" else manifest, tools, args, extra)


def slow(ms, name="slow"):
    """a server whose start takes ms longer (the probe reads nothing for
    that long)"""
    return server(name, args=["--start-delay", str(ms)])


def names(r):
    return [x["name"] for x in r.get("result", {}).get("tools", [])]


def wait_note(c, method, timeout=30):
    """the next notification of method (kept ones first)"""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for i, n in enumerate(c.notifications):
            if n.get("method") == method:
                return c.notifications.pop(i)
        try:
            m = c.read_message(max(0.0, deadline - time.monotonic()))
        except Timeout:
            return None
        if m is None:
            return None
        if "method" in m and "id" not in m:
            c.notifications.append(m)
        elif "method" in m:
            c.requests.append(m)
    return None


def test_never_wait():
    f = Fixture(server("fast") + server("unapproved", manifest=None) + slow(1500))
    c = f.start()
    c.initialize()
    first = c.request("tools/list")
    audit = f.audit()
    ready = [e["server"] for e in events(audit, "server.ready")]
    t.ok(first.get("result") is not None and len(ready) < 2 and
         set(n.split("__")[0] for n in names(first)) <= set(ready),
         "tools/list is answered at once, with the servers ready then (%s)" % ready,
         (first, ready))
    seen = set(names(first))
    for _ in range(2):
        if {"fast__echo", "slow__echo"} <= seen:
            break
        n = wait_note(c, "notifications/tools/list_changed")
        if n is None:
            break
        seen |= set(names(c.request("tools/list")))
    t.ok(seen == {"fast__echo", "slow__echo"},
         "notifications/tools/list_changed as each further server becomes ready, and the "
         "list then holds it", seen)
    notes = [n["params"]["data"] for n in c.notifications
             if n.get("method") == "notifications/message"]
    c.close()
    audit = f.audit()
    starts = [e["server"] for e in events(audit, "server.start")]
    un = [e for e in events(audit, "server.unavailable") if e["server"] == "unapproved"]
    told = [n for n in notes if "unapproved" in n and "not approved" in n]
    t.ok("unapproved" not in starts and len(un) == 1 and un[0].get("unapproved") is True and
         len(told) == 1 and "mcpgate review unapproved" in told[0],
         "an unapproved server is never started, and the person is told once how to "
         "approve it", (starts, un, told))
    f.cleanup()

    # a 2026-07-28 client without a listen: its list waits for the servers, a
    # little; one with a listen open for tools is answered at once
    f = Fixture(slow(5000, "also_slow") + slow(5000))
    c = f.start()
    r = c.request("tools/list", modern_params({}))
    audit = f.audit()
    t.ok(r.get("result") is not None and not events(audit, "server.ready"),
         "a 2026-07-28 client that cannot hear the list change waits for it a short bound "
         "(GW_LIST_WAIT_MS), not for the slow servers", (r, [e["event"] for e in audit]))
    c.close()
    f.cleanup()
    f = Fixture(slow(5000, "also_slow") + slow(5000))
    c = f.start()
    c.send({"jsonrpc": "2.0", "id": "listen", "method": "subscriptions/listen",
            "params": modern_params({"notifications": {"toolsListChanged": True}})})
    ack = wait_note(c, "notifications/subscriptions/acknowledged")
    r = c.request("tools/list", modern_params({}))
    audit = f.audit()
    t.ok(ack is not None and r.get("result", {}).get("tools") == [] and
         not events(audit, "server.ready"),
         "with a listen open for tools, it is answered at once", (ack, r))
    n = wait_note(c, "notifications/tools/list_changed")
    t.ok(n is not None and n["params"]["_meta"].get(
        "io.modelcontextprotocol/subscriptionId") == "listen",
         "and hears on its listen as servers become ready", n)
    c.close()
    f.cleanup()


def test_lazy():
    lazy = 'start = "lazy"\n'
    f = Fixture(server("eager") + server("lazy", tools=("echo", "crash"), extra=lazy))
    # the first session keeps the approved manifests (a pin written by hand,
    # as here, has no record until a session lists exactly it)
    c = f.start()
    c.initialize()
    f.wait_settled()
    c.close()
    idle = events(f.audit(), "server.idle")
    t.ok(not idle and os.path.exists(os.path.join(
        f.dir, "data", "mcpgate", "manifests", "lazy", PROBE_HASH[7:] + ".json")),
         "with no record of its approved manifest, a lazy server starts with the session, "
         "and the record is kept", idle)
    runs_before = len([r for r in f.runtime_log() if r["argv"][1:2] == ["run"]])
    c = f.start()
    c.initialize()
    f.wait_settled()
    listed = names(c.request("tools/list"))
    audit = f.audit()
    runs = [r for r in f.runtime_log() if r["argv"][1:2] == ["run"]][runs_before:]
    ran = [" ".join(r["argv"]) for r in runs]
    t.ok("lazy__echo" in listed and "lazy__crash" in listed and
         not any("mcpgate-lazy-" in a for a in ran),
         "a lazy server's approved tools are offered from the pin, and it is not started",
         (listed, ran))
    r = c.call("lazy__echo", {"text": "first use"})
    runs = [r for r in f.runtime_log() if r["argv"][1:2] == ["run"]][runs_before:]
    t.ok(text_of(r) == "first use" and len(runs) == 2,
         "its first call starts it, waits for it, and is answered", (r, len(runs)))
    c.close()
    f.cleanup()

    # a lazy server whose live manifest is not the approved one: withheld at start
    f = Fixture(server("lazy", extra=lazy, args=["--describe-suffix", " (v2)"]))
    data = os.path.join(f.dir, "data", "mcpgate", "manifests", "lazy")
    os.makedirs(data)
    probe_tools = json.loads(subprocess_probe_tools())
    with open(os.path.join(data, PROBE_HASH[7:] + ".json"), "w") as fh:
        json.dump({"server": "lazy", "image": gwtest.IMAGE, "hash": PROBE_HASH,
                   "tools": probe_tools}, fh)
    c = f.start()
    c.initialize()
    f.wait_settled()
    listed = names(c.request("tools/list"))
    r = c.call("lazy__echo", {"text": "x"})
    msg = (r.get("error") or {}).get("message", "")
    held = events(f.audit(), "server.withheld")
    t.ok(listed == ["lazy__echo"] and "changed since approval" in msg and held,
         "a lazy server offers its approved tools; when its first start lists another "
         "manifest it is withheld, and the call says why", (listed, r, held))
    c.close()
    f.cleanup()


def subprocess_probe_tools():
    """the probe's own tools/list, as a record keeps it"""
    import subprocess
    p = subprocess.run([os.path.join(gwtest.FAKES, "mcpgate-probe")],
                       input='{"jsonrpc":"2.0","id":1,"method":"initialize","params":'
                             '{"protocolVersion":"2025-11-25","capabilities":{},'
                             '"clientInfo":{"name":"t","version":"1"}}}\n'
                             '{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n',
                       capture_output=True, text=True, timeout=30)
    for line in p.stdout.splitlines():
        m = json.loads(line)
        if m.get("id") == 2:
            return json.dumps(m["result"]["tools"])
    raise RuntimeError("the probe listed no tools")


def test_restart():
    f = Fixture(server("crashy", tools=("echo", "crash")) + server("steady"))
    c = f.start()
    c.initialize()
    f.wait_settled()
    c.request("tools/list")
    # the probe ends inside this call, which is in flight when it does
    r = c.call("crashy__crash", {"code": 3})
    n = wait_note(c, "notifications/tools/list_changed")
    gone = names(c.request("tools/list"))
    t.ok("exited with status 3" in (r.get("error") or {}).get("message", "") and n is not None
         and gone == ["steady__echo"],
         "a server that exits: its call in flight is answered with an error naming the exit, "
         "its tools withdrawn and the client told", (r, gone))
    n = wait_note(c, "notifications/tools/list_changed")
    back = names(c.request("tools/list"))
    r = c.call("crashy__echo", {"text": "again"})
    restarts = events(f.audit(), "server.restart")
    t.ok(n is not None and "crashy__echo" in back and text_of(r) == "again" and
         len(restarts) == 1 and restarts[0].get("attempt") == 1,
         "it is started again (recorded), its tools offered again, and it serves",
         (back, r, restarts))
    # bounded: it is given up after GW_RESTARTS_MAX starts again
    for attempt in range(2, 8):
        c.call("crashy__crash", {"code": 3})
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            rs = events(f.audit(), "server.restart")
            if rs and rs[-1].get("attempt") == attempt:
                break
            time.sleep(0.05)
        if rs[-1].get("given_up"):
            break
        while time.monotonic() < deadline:  # started again: the next crash reaches it
            if len([e for e in events(f.audit(), "server.ready")
                    if e["server"] == "crashy"]) == attempt:
                break
            time.sleep(0.05)
    audit = f.audit()
    restarts = events(audit, "server.restart")
    given_up = [e for e in restarts if e.get("given_up")]
    t.ok(len([e for e in restarts if not e.get("given_up")]) == 5 and len(given_up) == 1,
         "restarts are bounded (5), then it is given up, recorded", restarts)
    r = c.call("steady__echo", {"text": "still"})
    t.ok(text_of(r) == "still", "the rest of the session serves throughout", r)
    status = c.close()
    t.ok(status == 0 and f.containers() == [], "the session ends with nothing left",
         (status, f.containers()))
    f.cleanup()


def test_listener_first_request():
    f = Fixture(server("fast") + slow(3000))
    lst = listenclient.Listener(f.argv(), f.env(), f.dir, f.state, "127.0.0.1:0")
    st, sid, init = lst.initialize("first")
    status, listing, _, _ = lst.rpc(sid, "tools/list")
    audit = f.audit()
    t.ok(st == 200 and status == 200 and listing.get("result") is not None and
         len(events(audit, "server.ready")) < 2,
         "the listener's first initialize and tools/list are answered without waiting for "
         "the servers", (st, status, listing))
    _, ans, _, _ = lst.call(sid, "slow__echo", {"text": "first call"})
    t.ok(text_of(ans) == "first call", "and its first call waits for its server and works", ans)
    status, ans, _, _ = lst.modern("tools/list")
    t.ok(status == 200 and ans.get("result") is not None,
         "a 2026-07-28 client's first request through the listener works too", ans)
    t.ok(lst.stop() == 0, "the listener ends")
    f.cleanup()


def main():
    global PROBE_HASH
    PROBE_HASH = learn_probe_hash()
    for name, test in (("never wait", test_never_wait), ("lazy", test_lazy),
                       ("restart", test_restart), ("listener", test_listener_first_request)):
        try:
            test()
        except Exception as e:  # the gateway died or hung
            t.ok(False, "%s: the session answers" % name, repr(e))
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
