#!/usr/bin/env python3
"""Servers of every MCP revision of the handshake era behind `mcpgate serve`
(docs/2026-12-02-server-revisions.md), on the fake runtime: the probe speaks
2024-11-05, 2025-03-26, 2025-06-18 or 2025-11-25 (--protocol), and records
every line mcpgate sends it (--record-input). Each is reviewed, pinned and
served; the client speaks 2025-11-25 (and 2026-07-28) throughout. What is
tried, per revision: its tools listed as the server lists them, a call, a
completion with and without a capability to say so, a completion's context,
elicitation in form and url mode, sampling answered with a list of one block
and with audio, and a JSON-RPC batch. Environment: MCPGATE, FAKES.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from mcpclient import Tap, text_of  # noqa: E402
from gwtest import Fixture, events  # noqa: E402

t = Tap()
REVISIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
TOOLS = ("echo", "progress", "ask_sampling", "ask_elicitation", "answer", "state")
CAPS = {"sampling": {}, "elicitation": {"form": {}, "url": {}}, "roots": {"listChanged": True}}


def name_of(rev):
    return "r" + rev.replace("-", "")


def entry(name, args, manifest=None):
    s = ('[[server]]\nname = "%s"\ntransport = "container"\nimage = "localhost:5000/probe@%s"\n'
         'relay = ["sampling", "elicitation", "roots"]\nargs = [%s]\n'
         % (name, "sha256:" + "ab" * 32, ", ".join(json.dumps(a) for a in args)))
    if manifest:
        s += 'manifest = "%s"\n' % manifest
    for tool in TOOLS:
        s += '[server.tools.%s]\non = true\neffect = "read"\n' % tool
    return s


def record_path(f, name):
    return os.path.join(f.dir, name + ".in")


def sent_to(f, name):
    """Every line mcpgate sent the server, parsed"""
    try:
        with open(record_path(f, name)) as fh:
            return [json.loads(line) for line in fh if line.strip()]
    except (OSError, ValueError):
        return []


def call_answering(c, name, arguments, answer, meta=None):
    """tools/call NAME; each request the gateway sends meanwhile is answered
    with answer(request) (a dict with "result" or "error"). Returns the
    response and the requests seen."""
    c.next_id += 1
    rid = c.next_id
    params = {"name": name, "arguments": arguments}
    if meta is not None:
        params["_meta"] = meta
    c.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})
    asked = []
    while True:
        msg = c.read_message()
        if msg is None:
            raise EOFError("the gateway closed its output")
        if "method" in msg and "id" in msg:
            asked.append(msg)
            reply = dict(answer(msg))
            reply.update({"jsonrpc": "2.0", "id": msg["id"]})
            c.send(reply)
        elif "method" in msg:
            c.notifications.append(msg)
        elif msg.get("id") == rid:
            return msg, asked


def answered(r):
    """The probe's ask_* text as JSON: {"result": ...} or {"error": ...}"""
    try:
        return json.loads(text_of(r))
    except (KeyError, IndexError, ValueError):
        return {"raw": r}


def form_answer(msg):
    return {"result": {"action": "accept", "content": {"name": "alice"}}}


def setup():
    """A fixture with a server of each revision, and two that complete
    nothing (2024-11-05, which cannot say so, and 2025-03-26, which says
    so by leaving out the capability); each reviewed and pinned"""
    specs = [(name_of(r), ["--protocol", r]) for r in REVISIONS]
    specs += [("nc20241105", ["--protocol", "2024-11-05", "--no-complete"]),
              ("nc20250326", ["--protocol", "2025-03-26", "--no-complete"])]
    f = Fixture("")
    for i, (name, args) in enumerate(specs):
        specs[i] = (name, args + ["--record-input", record_path(f, name)])
    with open(os.path.join(f.conf, "mcp.toml"), "w") as fh:
        fh.write("".join(entry(n, a) for n, a in specs))
    pins = {}
    for name, _ in specs:
        r = f.mcpgate("review", name)
        pin = [ln.split(": ", 1)[1] for ln in r.stdout.splitlines() if ln.startswith("manifest: ")]
        t.ok(r.returncode == 0 and pin, "review of %s (%s) reads its manifest" % (name, dict(
            specs)[name][1]), (r.stdout + r.stderr)[-600:])
        pins[name] = pin[0] if pin else None
    with open(os.path.join(f.conf, "mcp.toml"), "w") as fh:
        fh.write("".join(entry(n, a, pins[n]) for n, a in specs))
    for name, _ in specs:
        try:
            os.unlink(record_path(f, name))
        except OSError:
            pass
    return f


def test_revision(f, c, rev, tools):
    name = name_of(rev)
    since = lambda v: rev >= v  # noqa: E731  (revision names are dates)
    ready = [e for e in events(f.audit(), "server.ready") if e["server"] == name]
    t.ok(ready and ready[0]["protocolVersion"] == rev,
         "%s: a server answering %s is spoken to in it" % (rev, rev), ready)
    echo = [x for x in tools if x["name"] == name + "__echo"]
    t.ok(echo and ("annotations" in echo[0]) == since("2025-03-26"),
         "%s: its tools as it lists them (annotations %s)" % (
             rev, "present" if since("2025-03-26") else "absent: it has none"), echo)
    r = c.call(name + "__echo", {"text": "hello " + rev})
    t.ok(r.get("result", {}).get("content") == [{"type": "text", "text": "hello " + rev}],
         "%s: a call is answered" % rev, r)

    c.notifications.clear()
    r = c.call(name + "__progress", {"steps": 2, "ms": 1}, meta={"progressToken": "p-" + rev})
    prog = [n for n in c.notifications if n["method"] == "notifications/progress"]
    t.ok(text_of(r) == "done" and len(prog) == 2 and
         all(n["params"]["progressToken"] == "p-" + rev for n in prog),
         "%s: progress reaches the client under its token" % rev, prog)

    # completion: the context goes only to a revision that has it
    r = c.request("completion/complete", {
        "ref": {"type": "ref/prompt", "name": name + "__greet"},
        "argument": {"name": "name", "value": "al"},
        "context": {"arguments": {"other": "x"}}})
    t.ok(r.get("result", {}).get("completion", {}).get("values") == ["alice", "albert"],
         "%s: completion is answered%s" % (
             rev, "" if since("2025-03-26") else " (asked although 2024-11-05 has no "
             "capability to say so)"), r)
    state = json.loads(text_of(c.call(name + "__state")))
    got = state.get("completion") or {}
    t.ok(("context" in got) == since("2025-06-18"),
         "%s: a completion's context %s" % (
             rev, "reaches it" if since("2025-06-18") else "is left out (its revision has none)"),
         got)

    # elicitation, form and url mode
    r, asked = call_answering(c, name + "__ask_elicitation", {"message": "Who?"}, form_answer)
    a = answered(r)
    if since("2025-06-18"):
        t.ok(a.get("result", {}).get("action") == "accept" and
             [m["method"] for m in asked] == ["elicitation/create"],
             "%s: elicitation (form) reaches the client and its answer the server" % rev, (a, asked))
    else:
        t.ok("error" in a and "has no elicitation" in json.dumps(a) and asked == [],
             "%s: elicitation from it is refused, naming its revision; the client is not asked"
             % rev, (a, asked))
    r, asked = call_answering(c, name + "__ask_elicitation", {"mode": "url"},
                              lambda m: {"result": {"action": "accept"}})
    a = answered(r)
    if since("2025-11-25"):
        t.ok(a.get("result", {}).get("action") == "accept" and len(asked) == 1,
             "%s: url-mode elicitation reaches the client" % rev, (a, asked))
    else:
        t.ok("error" in a and asked == [] and ("URL-mode elicitation" in json.dumps(a) or
                                                "has no elicitation" in json.dumps(a)),
             "%s: url-mode elicitation is refused, naming its revision" % rev, (a, asked))

    # sampling: a list of one block becomes the block before 2025-11-25
    one = {"result": {"role": "assistant", "model": "m",
                      "content": [{"type": "text", "text": "hi"}]}}
    r, asked = call_answering(c, name + "__ask_sampling", {"text": "q"}, lambda m: one)
    content = answered(r).get("result", {}).get("content")
    want = one["result"]["content"] if since("2025-11-25") else one["result"]["content"][0]
    t.ok(content == want and len(asked) == 1,
         "%s: a sampling answer of one block in a list reaches it %s" % (
             rev, "as it is" if since("2025-11-25") else "as the block (its revision has no "
             "lists)"), (answered(r), asked))
    audio = {"result": {"role": "assistant", "model": "m",
                        "content": {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}}}
    r, asked = call_answering(c, name + "__ask_sampling", {"text": "q"}, lambda m: audio)
    a = answered(r)
    if since("2025-03-26"):
        t.ok(a.get("result", {}).get("content", {}).get("type") == "audio",
             "%s: audio in a sampling answer reaches it" % rev, a)
    else:
        t.ok("error" in a and "audio" in json.dumps(a) and "2024-11-05" in json.dumps(a),
             "%s: audio in a sampling answer is withheld: its revision has none" % rev, a)


def test_batches(f, c, rev):
    """A batch from the server: taken from 2025-03-26 alone, its answers
    going back as one array; a bad line from any other revision"""
    name = name_of(rev)
    batch = json.dumps([
        {"jsonrpc": "2.0", "method": "notifications/message",
         "params": {"level": "info", "logger": "b", "data": "batched " + rev}},
        {"jsonrpc": "2.0", "id": "bp1", "method": "ping"},
        {"jsonrpc": "2.0", "id": "bp2", "method": "roots/list"}])
    c.notifications.clear()
    r, asked = call_answering(c, name + "__answer", {"lines": [batch], "result": {
        "content": [{"type": "text", "text": "sent"}]}},
        lambda m: {"result": {"roots": [{"uri": "file:///w", "name": "w"}]}})
    answers = []
    for _ in range(100):
        answers = [x for x in sent_to(f, name) if isinstance(x, list)]
        if answers:
            break
        time.sleep(0.05)
    logged = [n for n in c.notifications if n["method"] == "notifications/message" and
              n["params"].get("data") == "batched " + rev]
    if rev == "2025-03-26":
        ids = [x.get("id") for x in answers[0]] if answers else []
        t.ok(logged and [m["method"] for m in asked] == ["roots/list"],
             "%s: each message of its batch is served (the log to the client, roots/list "
             "asked of it)" % rev, (logged, asked))
        t.ok(len(answers) == 1 and sorted(ids) == ["bp1", "bp2"] and
             any("roots" in x.get("result", {}) for x in answers[0]),
             "%s: the answers to its batch go back as one array" % rev, answers)
    else:
        errors = [e for e in events(f.audit(), "server.protocol_error") if e["server"] == name]
        t.ok(not logged and asked == [] and answers == [] and
             any("batches are not supported" in e["reason"] for e in errors),
             "%s: a batch from it is a bad line (its revision has none), nothing of it served"
             % rev, (logged, asked, errors))


def main():
    f = setup()
    try:
        c = f.start()
        init = c.initialize(CAPS)
        t.ok(init.get("result", {}).get("protocolVersion") == "2025-11-25",
             "the client is answered in mcpgate's own revision", init)
        t.ok(f.wait_settled(), "every server started")
        tools = c.request("tools/list")["result"]["tools"]
        for rev in REVISIONS:
            test_revision(f, c, rev, tools)
        for rev in REVISIONS:
            test_batches(f, c, rev)
        for name, rev in (("nc20241105", "2024-11-05"), ("nc20250326", "2025-03-26")):
            r = c.request("completion/complete", {
                "ref": {"type": "ref/prompt", "name": name + "__greet"},
                "argument": {"name": "name", "value": "al"}})
            asked = [x for x in sent_to(f, name) if x.get("method") == "completion/complete"]
            t.ok(r.get("result", {}).get("completion", {}).get("values") == [] and
                 len(asked) == (1 if rev == "2024-11-05" else 0),
                 "%s, a server that completes nothing: no suggestions (%s)" % (
                     rev, "asked, and its 'method not found' is none" if rev == "2024-11-05"
                     else "not asked: it declares no completions"), (r, asked))
        refused = [e for e in events(f.audit(), "server.request.refused")
                   if e.get("reason") == "revision"]
        t.ok(len(refused) >= 6 and all(e["server"] in (name_of("2024-11-05"),
                                                       name_of("2025-03-26"),
                                                       name_of("2025-06-18"))
                                       for e in refused),
             "each refusal for a revision is an audit record naming its server", refused)
        c.close()
        # a client of 2026-07-28 sees the same servers through its own era
        c = f.start()
        meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {}}
        c.request("server/discover", {"_meta": meta})
        f.wait_settled()
        r = c.request("tools/call", {"name": name_of("2024-11-05") + "__echo",
                                     "arguments": {"text": "new era"}, "_meta": meta})
        t.ok(r.get("result", {}).get("resultType") == "complete" and
             text_of(r) == "new era",
             "a client of 2026-07-28 calls a server of 2024-11-05 in its own era", r)
        c.close()
    finally:
        f.cleanup()
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
