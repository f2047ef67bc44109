#!/usr/bin/env python3
"""Under pressure and faults (issue 26, items 1 to 3), on the fake runtime.

- A flood: a server floods notifications/message while the client does not
  read; the client keeps calling another server. No answer is dropped: every
  call is answered once the client reads again, and what was shed, if
  anything, is counted in a record.
- The audit log fails closed: with its file past a size limit (and, as root,
  on a full filesystem), no tool call runs, the person is told in the
  session, and no record is torn; once it can be written again, calls run.
- kill -9 leaves the trace of a call in flight: its start is recorded before
  it is forwarded.

Environment: MCPGATE, FAKES (as serve_test.py). Nothing here asserts on time.
"""
import json
import os
import resource
import select
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from mcpclient import Tap, text_of  # noqa: E402

from gwtest import Fixture, events, learn_probe_hash  # noqa: E402
import gwtest  # noqa: E402

t = Tap()
PROBE_HASH = None


def server(name, tools=("echo",), effect="read", args=None):
    return gwtest.server(name, PROBE_HASH, tools, args, "", effect)


def audit_lines(f):
    """every line of every audit file, and those that are not one JSON object"""
    import glob
    lines, bad = [], []
    for path in glob.glob(os.path.join(f.state, "mcpgate", "sessions", "*.jsonl")):
        with open(path, errors="replace") as fh:
            for line in fh:
                try:
                    lines.append(json.loads(line))
                except ValueError:
                    bad.append(line[:200])
    return lines, bad


def test_flood():
    """Server red floods notifications/message (200,000 lines of 450 bytes, 90
    MB: more than the 64 MiB queue to the client) while the client reads
    nothing and keeps calling server redb: once it reads again, every answer
    is there, red's own too, and each record says what the client got"""
    # the queue to the client is 1 MiB here (client_queue_max) and the
    # flood 9 MB: the case at a scale make check can wait for
    n, size = 20000, 450
    f = Fixture(server("red", ("log",)) + server("redb", ("echo",)),
                config="client_queue_max = 1048576\n")
    c = f.start()
    c.initialize()
    f.wait_settled()
    c.send({"jsonrpc": "2.0", "id": "flood", "method": "tools/call",
            "params": {"name": "red__log", "arguments": {"level": "info", "text": "x" * size,
                                                           "count": n}}})
    ids = []
    deadline = time.monotonic() + 120
    pressed = False
    while time.monotonic() < deadline and (not pressed or len(ids) < 20):
        # the client is busy: it writes, and reads nothing
        time.sleep(0.1)
        rid = "b%d" % len(ids)
        ids.append(rid)
        c.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                "params": {"name": "redb__echo", "arguments": {"text": rid}}})
        pressed = pressed or bool(events(audit_lines(f)[0], "client.backpressure"))
    got, logs = {}, 0
    deadline = time.monotonic() + 300
    while len(got) < len(ids) + 1 and time.monotonic() < deadline:
        m = c.read_message(max(0.0, deadline - time.monotonic()))
        if m is None:
            break
        if m.get("method") == "notifications/message":
            logs += 1
        elif "id" in m and "method" not in m:
            got[m["id"]] = m
    def said(m):
        content = ((m or {}).get("result") or {}).get("content") or [{}]
        return content[0].get("text")

    answered = [rid for rid in ids if said(got.get(rid)) == rid]
    t.ok(len(answered) == len(ids) and "result" in got.get("flood", {}),
         "every call is answered once the client reads again: %d of %d of redb's, and red's "
         "own" % (len(answered), len(ids)), sorted(set(ids) - set(answered)))
    c.close()
    lines, _ = audit_lines(f)
    press = events(lines, "client.backpressure")
    ends = events(lines, "client.backpressure.end")
    shed = sum(x.get("shed", 0) for x in ends + events(lines, "client.undelivered"))
    t.ok(press and press[0]["server"] == "red" and all(x["server"] != "redb" for x in press),
         "the noisy server is the one not read while the way to the client is full", press)
    t.ok(logs + shed == n,
         "every notification reached the client or is counted as shed (%d + %d)" % (logs, shed),
         (logs, shed, ends))
    oks = [x for x in events(lines, "tool.call") if x.get("outcome") == "ok"]
    t.ok(len(oks) == len(ids) + 1, "and the audit log's calls are the ones answered", len(oks))
    f.cleanup()


def test_audit_fails_closed():
    f = Fixture(server("r", ("echo",)) + server("w", ("echo",), effect="write"))
    c = f.start()
    c.initialize({"elicitation": {}})
    f.wait_settled()
    r = c.call("r__echo", {"text": "before"})
    t.ok(text_of(r) == "before", "a call runs while the audit log can be written", r)
    path = [p for p in os.listdir(os.path.join(f.state, "mcpgate", "sessions"))][0]
    path = os.path.join(f.state, "mcpgate", "sessions", path)
    size = os.path.getsize(path)
    # the file may grow 40 bytes more: the next record is cut short by the
    # kernel (EFBIG), as a full disk would cut it
    resource.prlimit(c.proc.pid, resource.RLIMIT_FSIZE, (size + 40, resource.RLIM_INFINITY))
    r = c.call("r__echo", {"text": "read while the log fails"})
    msg = (r.get("error") or {}).get("message", "")
    t.ok("cannot write its audit log" in msg,
         "a read call whose record cannot be written does not run, and says why", r)
    c.next_id += 1
    rid = c.next_id
    c.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "w__echo", "arguments": {"text": "write"}}})
    ask = c.read_message()
    if ask is not None and ask.get("method") == "elicitation/create":
        c.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept"}})
    r = c.wait_for(rid)
    msg = (r.get("error") or {}).get("message", "")
    t.ok("cannot write its audit log" in msg,
         "a confirmed write call whose record cannot be written does not run", r)
    notes = [n["params"]["data"] for n in c.notifications
             if n.get("method") == "notifications/message" and n["params"].get("level") == "error"]
    t.ok(len(notes) == 1 and "audit log" in notes[0],
         "the person is told once, in the session", notes)
    resource.prlimit(c.proc.pid, resource.RLIMIT_FSIZE,
                     (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    r = c.call("r__echo", {"text": "after"})
    t.ok(text_of(r) == "after", "once it can be written again, calls run", r)
    c.close()
    lines, bad = audit_lines(f)
    started = [x for x in events(lines, "tool.call.start")]
    ended = [x for x in events(lines, "tool.call") if x.get("outcome") == "ok"]
    t.ok(not bad, "no record is torn: every line of the log is one JSON object", bad)
    t.ok(len(started) == 2 and len(ended) == 2 and
         sorted(x["call"] for x in started) == sorted(x["call"] for x in ended),
         "the two calls that ran have their start and their end, matched by number",
         (started, ended))
    f.cleanup()


def test_audit_full_disk():
    if os.geteuid() != 0:
        t.skip("a full filesystem for the state folder", "needs root to mount a tmpfs")
        return
    f = Fixture(server("r", ("echo",)))
    full = tempfile.mkdtemp(prefix="mcpgate-full-", dir=f.dir)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", full]).returncode:
        t.skip("a full filesystem for the state folder", "mount -t tmpfs failed")
        return
    c = None
    try:
        f.state = full
        c = f.start()
        c.initialize()
        f.wait_settled()
        r = c.call("r__echo", {"text": "room"})
        # fill the filesystem
        fd = os.open(os.path.join(full, "filler"), os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while os.write(fd, b"x" * 4096) > 0:
                pass
        except OSError:
            pass
        try:
            while os.write(fd, b"x") > 0:
                pass
        except OSError:
            pass
        os.close(fd)
        # the log's last block may still hold a record or two: call until
        # the first one whose record finds no room
        ran, refused = 0, None
        for i in range(200):
            r2 = c.call("r__echo", {"text": "full %d" % i})
            if "error" in r2:
                refused = r2
                break
            ran += 1
        os.unlink(os.path.join(full, "filler"))
        r3 = c.call("r__echo", {"text": "room again"})
        c.close()
        lines, bad = audit_lines(f)
        starts = {x["call"] for x in events(lines, "tool.call.start")}
        ends = {x["call"] for x in events(lines, "tool.call") if x.get("outcome") == "ok"}
        t.ok(text_of(r) == "room" and refused is not None and
             "cannot write its audit log" in refused["error"]["message"] and
             text_of(r3) == "room again" and not bad and ends <= starts and
             len(starts) == ran + 2,
             "on a full filesystem no call runs without its start recorded, no record is "
             "torn (%d ran while the last block had room); with room again, calls run" % ran,
             (refused, bad, sorted(starts), sorted(ends)))
    finally:
        if c is not None and c.proc.poll() is None:
            c.proc.kill()
            c.proc.wait()
        subprocess.run(["umount", full])
        f.cleanup()


def test_kill_9():
    f = Fixture(server("r", ("slow",)) + server("w", ("slow",), effect="write"))
    c = f.start()
    c.initialize({"elicitation": {}})
    f.wait_settled()
    c.send({"jsonrpc": "2.0", "id": 900, "method": "tools/call",
            "params": {"name": "r__slow", "arguments": {"ms": 30000}}})
    c.send({"jsonrpc": "2.0", "id": 901, "method": "tools/call",
            "params": {"name": "w__slow", "arguments": {"ms": 30000}}})
    ask = c.read_message()
    if ask is not None and ask.get("method") == "elicitation/create":
        c.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept"}})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        lines, _ = audit_lines(f)
        if len(events(lines, "tool.call.start")) == 2:
            break
        time.sleep(0.05)
    os.kill(c.proc.pid, signal.SIGKILL)
    c.proc.wait()
    lines, bad = audit_lines(f)
    starts = {x["server"]: x for x in events(lines, "tool.call.start")}
    confirms = events(lines, "tool.confirm")
    t.ok("r" in starts and "w" in starts and confirms and confirms[0]["action"] == "accept" and
         not bad,
         "after kill -9 the read call in flight has its start recorded, and the write call "
         "its confirmation and its start", (starts, confirms))
    f.mcpgate("sweep")  # what the killed mcpgate left, by its dead owner
    t.ok(f.containers() == [], "and the sweep removes what it left", f.containers())
    f.cleanup()


def main():
    global PROBE_HASH
    PROBE_HASH = learn_probe_hash()
    for name, test in (("flood", test_flood), ("audit fails closed", test_audit_fails_closed),
                       ("a full disk", test_audit_full_disk), ("kill -9", test_kill_9)):
        try:
            test()
        except Exception as e:
            t.ok(False, "%s: the session answers" % name, repr(e))
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
