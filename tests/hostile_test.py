#!/usr/bin/env python3
"""Hostile messages against `mcpgate serve` on the fake runtime: every member of
every message a client or a server sends, replaced by a value of each other
JSON type, in both eras, on stdio and through `serve --listen`.

The attack (issue 23, item 5): a tools/call whose _meta.progressToken is true,
null, [] or {} killed mcpgate with SIGSEGV, and under --listen every other
client's session with it. The class: whatever a peer sends, the gateway stays
up, answers every request once, and refuses a member of the wrong type with
-32602 naming it, before any handler reads it. Environment: MCPGATE, FAKES
(as serve_test.py).
"""
import copy
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from mcpclient import Tap, text_of  # noqa: E402

from gwtest import Fixture, events, learn_probe_hash  # noqa: E402
import gwtest  # noqa: E402
import listenclient  # noqa: E402
from listenclient import modern_headers, modern_params  # noqa: E402

t = Tap()
PROBE_HASH = None
MODERN = "2026-07-28"
TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

# a value of every JSON type but the one a member has
WRONG = [True, None, [], {}, 1.5, "x", 7, -1, 10 ** 30, [[[[{}]]]], {"a": {"b": []}}]


def kind(v):
    if isinstance(v, bool):
        return "bool"
    if v is None:
        return "null"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "num"
    return {str: "str", list: "arr", dict: "obj"}[type(v)]


# The members mcpgate reads, with the types it reads them as: a request with
# another type there is refused with -32602 naming the member
TYPED = {
    "params": {"obj"},
    "params._meta": {"obj"},
    "params._meta.progressToken": {"str", "int"},
    "params._meta.traceparent": {"str"},
    "params.cursor": {"str"},
    "params.name": {"str"},
    "params.arguments": {"obj"},
    "params.uri": {"str"},
    "params.level": {"str"},
    "params.ref": {"obj"},
    "params.ref.type": {"str"},
    "params.argument": {"obj"},
    "params.argument.name": {"str"},
    "params.argument.value": {"str"},
    "params.requestState": {"str"},
    "params.inputResponses": {"obj"},
    "params.notifications": {"obj"},
    "params.protocolVersion": {"str"},
    "params.capabilities": {"obj"},
    "params.clientInfo": {"obj"},
    "params._meta.io.modelcontextprotocol/protocolVersion": {"str"},
    "params._meta.io.modelcontextprotocol/clientCapabilities": {"obj"},
    "params._meta.io.modelcontextprotocol/clientInfo": {"obj"},
    "params._meta.io.modelcontextprotocol/logLevel": {"str"},
}


def templates(era):
    """(method, params) of every request the session serves, well formed"""
    greet = "mcpgate://alpha/probe://greeting"
    out = [
        ("ping", {}),
        ("tools/list", {"cursor": "0", "_meta": {"progressToken": "t"}}),
        ("tools/call", {"name": "alpha__echo", "arguments": {"text": "hi"},
                        "_meta": {"progressToken": "t", "traceparent": TP}}),
        ("resources/list", {"cursor": "0"}),
        ("resources/templates/list", {}),
        ("prompts/list", {}),
        ("resources/read", {"uri": greet}),
        ("prompts/get", {"name": "alpha__greet", "arguments": {"name": "x"}}),
        ("completion/complete", {"ref": {"type": "ref/prompt", "name": "alpha__greet"},
                                 "argument": {"name": "name", "value": "a"},
                                 "context": {"arguments": {}}}),
    ]
    if era == "legacy":
        out += [("logging/setLevel", {"level": "info"}),
                ("resources/subscribe", {"uri": greet}),
                ("resources/unsubscribe", {"uri": greet}),
                ("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                "clientInfo": {"name": "x", "version": "1"}})]
    else:
        out += [("server/discover", {}),
                ("tools/call", {"name": "alpha__echo", "arguments": {"text": "hi"},
                                "requestState": "mcs1.x", "inputResponses": {"a": {}}}),
                ("subscriptions/listen", {"notifications": {"toolsListChanged": True,
                                                            "resourceSubscriptions": [greet]}})]
        # the envelope of 2026-07-28 is mutated like every other member
        out = [(m, modern_params(p)) for m, p in out]
    return out


def paths(v, prefix):
    """every member and item below v, as (dotted path, list of keys)"""
    if isinstance(v, dict):
        for k, x in v.items():
            yield prefix + "." + k, [k]
            for p, keys in paths(x, prefix + "." + k):
                yield p, [k] + keys
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield prefix + "[%d]" % i, [i]
            for p, keys in paths(x, prefix + "[%d]" % i):
                yield p, [i] + keys


def replaced(params, keys, value):
    p = copy.deepcopy(params)
    at = p
    for k in keys[:-1]:
        at = at[k]
    at[keys[-1]] = value
    return p


def mutations(era):
    """(method, params, the member changed, its value) for every member of
    every template and every wrong value; params itself too"""
    for method, params in templates(era):
        for value in WRONG:
            if not isinstance(value, dict):
                yield method, value, "params", value
        for path, keys in list(paths(params, "params")):
            for value in WRONG:
                yield method, replaced(params, keys, value), path, value


def expect_refused(path, value):
    """the member is one mcpgate reads, and value is not of its type"""
    want = TYPED.get(path)
    if want is None:
        return False
    k = kind(value)
    return not (k in want or (k == "int" and "num" in want))


def refused_by_name(answer, path, value):
    """answer is the refusal of path's value, naming it: -32602, or for params
    that are no structure at all, JSON-RPC's own -32600"""
    err = (answer or {}).get("error") or {}
    code = -32600 if path == "params" and not isinstance(value, list) else -32602
    return err.get("code") == code and path.split("[")[0] in err.get("message", "")


def check_answers(name, sent, answers):
    """each request answered once; refused members named"""
    missing = [m for (rid, m) in sent if rid not in answers]
    t.ok(not missing, "%s: every one of %d hostile requests is answered" % (name, len(sent)),
         missing[:5])
    wrong = []
    for rid, (method, _, path, value) in sent:
        a = answers.get(rid)
        if a is None or not expect_refused(path, value):
            continue
        if not refused_by_name(a, path, value):
            wrong.append((method, path, value, a))
    t.ok(not wrong, "%s: a member of the wrong type is refused with -32602 naming it" % name,
         wrong[:5])


def fixture():
    return Fixture(gwtest.server("alpha", PROBE_HASH, ("echo", "slow", "answer", "notify"),
                                 extra='relay = ["elicitation"]\n'))


# ---- stdio ------------------------------------------------------------------


def answer_of(c, rid, method):
    """the answer to request rid; a listen that was opened (acknowledged
    under its id) is cancelled, and its acknowledgement stands for it"""
    if method != "subscriptions/listen":
        return c.wait_for(rid, timeout=20)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        for n in c.notifications:
            meta = (n.get("params") or {}).get("_meta") or {}
            if meta.get("io.modelcontextprotocol/subscriptionId") == rid:
                c.notify("notifications/cancelled", {"requestId": rid})
                return {"result": "acknowledged"}
        msg = c.read_message(max(0.0, deadline - time.monotonic()))
        if msg is None:
            raise EOFError("the gateway closed its output")
        if msg.get("id") == rid and "method" not in msg:
            return msg
        if "method" in msg and "id" not in msg:
            c.notifications.append(msg)
    raise TimeoutError("no answer to %s %d" % (method, rid))


def stdio_era(era):
    f = fixture()
    c = f.start()
    if era == "legacy":
        c.initialize()
    sent, answers = [], {}
    rid = 1000
    for m in mutations(era):
        method, params, path, value = m
        rid += 1
        msg = {"jsonrpc": "2.0", "id": rid, "method": method,
               "params": params}
        c.send(msg)
        sent.append((rid, m))
        # each answer before the next, so one that kills the gateway is named
        try:
            a = answer_of(c, rid, method)
        except Exception as e:  # EOF or a timeout: the gateway is gone or stuck
            t.ok(False, "stdio %s: the gateway survives %s with %s = %s" %
                 (era, method, path, json.dumps(value)), "%r; stderr: %s" %
                 (e, f.stderr_text()[-1500:]))
            f.cleanup()
            return
        answers[rid] = a
    # the id itself, of every type: answered (with id null where it was unusable)
    for value in WRONG:
        c.send({"jsonrpc": "2.0", "id": value, "method": "tools/list",
                "params": modern_params({}) if era == "modern" else {}})
    c.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": {}}})
    c.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": []})
    check_answers("stdio " + era, sent, answers)
    if era == "legacy":
        r = c.call("alpha__echo", {"text": "still here"})
    else:
        r = c.request("tools/call", modern_params({"name": "alpha__echo",
                                                   "arguments": {"text": "still here"}}))
    t.ok(r.get("result") and text_of(r) == "still here",
         "stdio %s: after %d hostile messages a call still works" % (era, len(sent)), r)
    status = c.close()
    t.ok(status == 0, "stdio %s: the session ends in order (status 0)" % era,
         (status, f.stderr_text()[-1500:]))
    audit = f.audit()
    t.ok(events(audit, "session.end") and events(audit, "client.refused"),
         "stdio %s: the refusals are recorded, and session.end" % era,
         [r["event"] for r in audit][-10:])
    f.cleanup()


# ---- servers ------------------------------------------------------------------

RESULT = {"content": [{"type": "text", "text": "x"}], "isError": False,
          "structuredContent": {}, "_meta": {}, "resultType": "complete"}
RESULT_TYPED = {
    "result": {"obj"}, "result.content": {"arr"}, "result.content[0]": {"obj"},
    "result.content[0].type": {"str"}, "result.isError": {"bool"},
    "result.structuredContent": {"obj"}, "result._meta": {"obj"}, "result.resultType": {"str"},
}


def server_side():
    """A server answering a call, notifying and asking with members of the
    wrong type: each refused by name, the session going on"""
    f = fixture()
    c = f.start()
    c.initialize(capabilities={"elicitation": {}})
    bad = []
    cases = [("result", v) for v in WRONG if not isinstance(v, dict)]
    cases += [(p, replaced(RESULT, keys, v)) for p, keys in paths(RESULT, "result") for v in WRONG]
    for path, result in cases:
        value = result if path == "result" else None
        r = c.call("alpha__answer", {"result": result})
        if path != "result":
            keys = [k for k in path.replace("[", ".").replace("]", "").split(".")[1:]]
            value = result
            for k in keys:
                value = value[int(k)] if isinstance(value, list) else value[k]
        k = kind(value)
        want = RESULT_TYPED.get(path)
        refused = want is not None and k not in want
        msg = (r.get("error") or {}).get("message", "")
        if refused and (r.get("error") is None or path.split("[")[0] not in msg):
            bad.append((path, value, r))
    t.ok(not bad, "a server's result with a member of the wrong type is refused naming it",
         bad[:5])
    lines = []
    for value in WRONG:
        lines += [
            {"jsonrpc": "2.0", "method": "notifications/progress",
             "params": {"progressToken": value, "progress": 1}},
            {"jsonrpc": "2.0", "method": "notifications/progress",
             "params": {"progressToken": "mcpgate-1", "progress": value}},
            {"jsonrpc": "2.0", "method": "notifications/message",
             "params": {"level": value, "data": "x"}},
            {"jsonrpc": "2.0", "method": "notifications/message",
             "params": {"level": "error", "logger": value, "data": "x"}},
            {"jsonrpc": "2.0", "method": "notifications/resources/updated",
             "params": {"uri": value}},
            {"jsonrpc": "2.0", "method": "notifications/cancelled",
             "params": {"requestId": value}},
            {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": value},
            {"jsonrpc": "2.0", "id": 900, "method": "elicitation/create",
             "params": {"message": value, "requestedSchema": {}}},
            {"jsonrpc": "2.0", "id": 901, "method": "elicitation/create",
             "params": {"message": "m", "requestedSchema": value}},
            {"jsonrpc": "2.0", "id": 902, "method": "sampling/createMessage",
             "params": {"messages": value}},
            {"jsonrpc": "2.0", "id": value, "method": "roots/list"},
            {"jsonrpc": "2.0", "id": 17, "result": value},
        ]
    r = c.call("alpha__answer", {"lines": [json.dumps(x) for x in lines],
                                 "result": {"content": [{"type": "text", "text": "done"}]}})
    t.ok(r.get("result") and text_of(r) == "done",
         "a server's %d hostile notifications and requests leave the session serving" %
         len(lines), (r, f.stderr_text()[-1500:]))
    r = c.call("alpha__echo", {"text": "still here"})
    t.ok(r.get("result") and text_of(r) == "still here", "and its next call works", r)
    status = c.close()
    t.ok(status == 0, "the session ends in order", (status, f.stderr_text()[-1500:]))
    errors = [e for e in events(f.audit(), "server.protocol_error")]
    named = [e for e in errors if "params.progressToken must be" in e.get("reason", "")]
    t.ok(named, "a server's progress token of the wrong type is recorded by name",
         errors[:5])
    f.cleanup()


# ---- the listener ---------------------------------------------------------------


def listener():
    """Through serve --listen: one client's hostile messages, in either era,
    while another client's call is in flight; that call is answered and its
    session ends in order"""
    f = fixture()
    lst = listenclient.Listener(f.argv(), f.env(), f.dir, f.state, "127.0.0.1:0")
    _, sid_b, _ = lst.initialize("client-b")
    slow = {}

    def b_call():
        try:
            slow["answer"] = lst.call(sid_b, "alpha__slow", {"ms": 3000})[1]
        except Exception as e:  # the listener died under the other client
            slow["error"] = repr(e)

    th = threading.Thread(target=b_call)
    th.start()
    _, sid_a, _ = lst.initialize("client-a")
    bad, refused, n = [], 0, 0
    for era in ("legacy", "modern"):
        for method, params, path, value in mutations(era):
            if method in ("initialize", "subscriptions/listen"):
                continue  # a new session each; a listen is a stream (stdio tries both)
            n += 1
            msg = {"jsonrpc": "2.0", "id": n, "method": method,
                   "params": params}
            if era == "modern":
                try:
                    hdrs = modern_headers(msg)
                except AttributeError:  # params or _meta mutated away
                    hdrs = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
                hdrs = {k: v if isinstance(v, str) else json.dumps(v) for k, v in hdrs.items()}
                status, ans, msgs, _ = lst.post(msg, headers=hdrs)
                if ans is None and msgs and msgs[0].get("id") is None:
                    ans = msgs[0]
            else:
                status, ans, msgs, _ = lst.post(msg, sid=sid_a)
                if ans is None and msgs and msgs[0].get("id") is None:
                    ans = msgs[0]  # a message that is not one: answered with id null
            if status == 0 or (ans is None and status not in (200, 202, 400, 404)):
                bad.append((era, method, path, value, status, ans))
            if expect_refused(path, value):
                if refused_by_name(ans, path, value):
                    refused += 1
                else:
                    bad.append((era, method, path, value, status, ans))
    th.join(60)
    t.ok(not bad, "listener: %d hostile requests of both eras answered, a member of the "
         "wrong type refused with -32602 naming it (%d)" % (n, refused), bad[:5])
    t.ok(text_of(slow.get("answer")) is not None,
         "listener: another client's call in flight meanwhile gets its answer",
         (slow, lst.stderr()[-1500:]))
    _, ans, _, _ = lst.call(sid_a, "alpha__echo", {"text": "still"})
    t.ok(text_of(ans) == "still", "listener: the hostile client's own session still serves",
         ans)
    status = lst.stop()
    t.ok(status == 0, "listener: SIGTERM ends it in order", (status, lst.stderr()[-1500:]))
    ended = [p for p in os.listdir(os.path.join(f.state, "mcpgate", "sessions"))]
    ends = 0
    for p in ended:
        with open(os.path.join(f.state, "mcpgate", "sessions", p)) as fh:
            ends += sum(1 for line in fh if '"session.end"' in line)
    t.ok(ends >= 3, "listener: every session's audit log ends with session.end", ends)
    f.cleanup()


def main():
    global PROBE_HASH
    PROBE_HASH = learn_probe_hash()
    for name, section in (("stdio legacy", lambda: stdio_era("legacy")),
                          ("stdio modern", lambda: stdio_era("modern")),
                          ("servers", server_side), ("listener", listener)):
        try:
            section()
        except Exception as e:  # the gateway died or hung under it
            t.ok(False, "%s: the gateway answers every hostile message" % name, repr(e))
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
