#!/usr/bin/env python3
"""The relayed protocol of `mcpgate serve` against the fake runtime and the probe:
resources, prompts, completion, logging, the servers' sampling, elicitation and
roots, merged lists in pages, and --passthrough. Environment: MCPGATE (the
binary), FAKES (the folder holding fake-runtime and mcpgate-probe).
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from mcpclient import Tap, text_of  # noqa: E402
from gwtest import Fixture, events, learn_probe_hash, server  # noqa: E402

t = Tap()
HASH = None
ALL_TOOLS = ["echo", "env", "write_file", "connect", "status", "slow", "progress", "crash",
             "garbage", "huge", "stderr", "changed", "touch", "log", "ask_sampling",
             "ask_elicitation", "ask_roots", "notify", "state"]


def srv(name, tools_on=("echo",), args=None, extra=""):
    return server(name, HASH, tools_on, args, extra)


def err_code(r):
    return r.get("error", {}).get("code")


def err_msg(r):
    return r.get("error", {}).get("message", "")


def notes(c, method):
    return [n for n in c.notifications if n["method"] == method]


def call_answering(c, name, arguments, answer):
    """tools/call NAME; each request the gateway sends meanwhile is answered
    with answer(request) (a dict holding "result" or "error"; None: no answer).
    Returns the call's response and the requests seen."""
    c.next_id += 1
    rid = c.next_id
    c.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}})
    asked = []
    while True:
        msg = c.read_message()
        if msg is None:
            raise EOFError("the gateway closed its output")
        if "method" in msg and "id" in msg:
            asked.append(msg)
            reply = answer(msg)
            if reply is not None:
                reply = dict(reply)
                reply.update({"jsonrpc": "2.0", "id": msg["id"]})
                c.send(reply)
        elif "method" in msg:
            c.notifications.append(msg)
        elif msg.get("id") == rid:
            return msg, asked


def no_requests(msg):
    raise AssertionError("the gateway asked the client %s" % msg.get("method"))


def answer_of(r):
    """The probe's ask_* text: {"result": ...} or {"error": ...}"""
    return json.loads(text_of(r))


def list_all(c, method, key, limit=20):
    """Every page of a list: the items and the responses"""
    items, pages, cursor = [], [], None
    for _ in range(limit):
        r = c.request(method, {"cursor": cursor} if cursor is not None else {})
        pages.append(r)
        if "result" not in r:
            break
        items += r["result"][key]
        cursor = r["result"].get("nextCursor")
        if cursor is None:
            break
    return items, pages


def test_resources():
    f = Fixture(srv("alpha", ("echo", "touch", "notify"), ["--resources", "2", "--page-size", "1"]) +
                srv("beta", ("echo", "touch")))
    c = f.start()
    init = c.initialize()
    f.wait_settled()
    caps = init["result"]["capabilities"]
    t.ok(caps.get("resources") == {"subscribe": True, "listChanged": True} and
         caps.get("prompts") == {"listChanged": True} and caps.get("logging") == {} and
         caps.get("completions") == {} and caps.get("tools") == {"listChanged": True},
         "initialize offers resources, prompts, logging and completions", caps)
    r = c.request("resources/list")
    uris = [x["uri"] for x in r["result"]["resources"]]
    t.ok(uris == ["mcpgate://alpha/probe://greeting", "mcpgate://alpha/probe://data.json",
                  "mcpgate://alpha/probe://item/1", "mcpgate://alpha/probe://item/2",
                  "mcpgate://beta/probe://greeting", "mcpgate://beta/probe://data.json"],
         "resources/list: both servers, URIs prefixed, merged in mcp.toml order "
         "(alpha read over 4 pages of 1)", uris)
    t.ok("nextCursor" not in r["result"] and r["result"]["resources"][0]["name"] == "greeting" and
         r["result"]["resources"][0]["mimeType"] == "text/plain",
         "one page; the other fields pass as the server wrote them", r["result"])
    r = c.request("resources/templates/list")
    tpl = [x["uriTemplate"] for x in r["result"]["resourceTemplates"]]
    t.ok(tpl == ["mcpgate://alpha/probe://echo/{text}", "mcpgate://beta/probe://echo/{text}"],
         "resources/templates/list: templates get the same prefix", tpl)

    r = c.request("resources/read", {"uri": "mcpgate://beta/probe://greeting"})
    t.ok(r.get("result", {}).get("contents") == [
        {"uri": "mcpgate://beta/probe://greeting", "mimeType": "text/plain",
         "text": "Hello from the probe"}],
        "resources/read through a prefixed URI reaches its server; the content's uri is prefixed", r)
    t.ok(r["result"].get("_meta", {}).get("io.mcpgate/server") == "beta",
         "the result says which server it came from", r)
    r = c.request("resources/read", {"uri": "mcpgate://alpha/probe://echo/hi there"})
    t.ok(r.get("result", {}).get("contents", [{}])[0].get("text") == "hi there",
         "a URI expanded from a template reads through its server", r)
    for uri in ("mcpgate://nosuch/probe://greeting", "probe://greeting", "mcpgate://alpha",
                "mcpgate:///probe://greeting"):
        r = c.request("resources/read", {"uri": uri})
        t.ok(err_code(r) == -32002 and r["error"].get("data") == {"uri": uri},
             "resources/read of %s (no such server): -32002 with the uri" % uri, r)
    r = c.request("resources/read", {"uri": "mcpgate://alpha/probe://nothing"})
    t.ok(err_code(r) == -32002 and "not found" in err_msg(r),
         "the server's own -32002 comes back as it said it", r)
    r = c.request("resources/read", {})
    t.ok(err_code(r) == -32602, "resources/read without a uri: -32602", r)

    r = c.request("resources/subscribe", {"uri": "mcpgate://alpha/probe://greeting"})
    t.ok(r.get("result") == {"_meta": {"io.mcpgate/server": "alpha"}} or
         r.get("result", {}).get("_meta") is not None, "resources/subscribe is answered", r)
    r = c.call("alpha__touch", {"uri": "probe://greeting"})
    t.ok(text_of(r) == "updated", "the server sees the subscription under its own URI", r)
    up = notes(c, "notifications/resources/updated")
    t.ok([n["params"] for n in up] == [{"uri": "mcpgate://alpha/probe://greeting"}],
         "notifications/resources/updated reaches the client with the prefixed URI", up)
    r = c.call("beta__touch", {"uri": "probe://greeting"})
    t.ok(text_of(r) == "not subscribed", "the subscription went to alpha only", r)
    r = c.request("resources/subscribe", {"uri": "mcpgate://gamma/probe://greeting"})
    t.ok(err_code(r) == -32602, "resources/subscribe to no server: -32602", r)
    r = c.request("resources/unsubscribe", {"uri": "mcpgate://alpha/probe://greeting"})
    t.ok("result" in r, "resources/unsubscribe is answered", r)
    r = c.call("alpha__touch", {"uri": "probe://greeting"})
    t.ok(text_of(r) == "not subscribed" and len(notes(c, "notifications/resources/updated")) == 1,
         "after unsubscribe the server has no subscription", r)
    r = c.call("alpha__notify", {"method": "notifications/resources/list_changed"})
    t.ok(len(notes(c, "notifications/resources/list_changed")) == 1,
         "notifications/resources/list_changed reaches the client", c.notifications)
    r = c.request("resources/nosuch")
    t.ok(err_code(r) == -32601, "a method mcpgate does not offer is still -32601", r)
    t.ok(c.close() == 0, "the session ends cleanly")
    reads = [e for e in events(f.audit(), "client.request") if e["method"] == "resources/read"]
    t.ok(len(reads) == 3 and [e["server"] for e in reads] == ["beta", "alpha", "alpha"] and
         [e["outcome"] for e in reads] == ["ok", "ok", "error"],
         "each relayed read is recorded with its server and outcome", reads)
    t.ok(f.containers() == [], "no container is left", f.containers())
    f.cleanup()


def test_prompts_completion():
    f = Fixture(srv("alpha", ("echo", "notify"), ["--page-size", "2"]) + srv("beta"))
    c = f.start()
    c.initialize()
    f.wait_settled()
    r = c.request("prompts/list")
    names = [p["name"] for p in r["result"]["prompts"]]
    t.ok(names == ["alpha__greet", "alpha__plain", "alpha__with_resource", "beta__greet",
                   "beta__plain", "beta__with_resource"],
         "prompts/list: SERVER__NAME, in mcp.toml order (alpha over pages of 2)", names)
    t.ok(r["result"]["prompts"][0].get("arguments") ==
         [{"name": "name", "description": "who to greet", "required": True}],
         "a prompt's arguments pass as listed", r["result"]["prompts"][0])
    r = c.request("prompts/get", {"name": "beta__greet", "arguments": {"name": "Ann"}})
    t.ok(r.get("result", {}).get("messages", [{}])[0].get("content", {}).get("text") ==
         "Say hello to Ann.", "prompts/get with the prefix reaches its server, with arguments", r)
    r = c.request("prompts/get", {"name": "alpha__with_resource"})
    msgs = r.get("result", {}).get("messages", [])
    t.ok(len(msgs) == 2 and msgs[0]["content"]["resource"]["uri"] == "mcpgate://alpha/probe://greeting"
         and msgs[1]["content"]["uri"] == "mcpgate://alpha/probe://data.json",
         "resources embedded or linked in a prompt get prefixed URIs", r)
    for name in ("greet", "nosuch__greet", "alpha_greet", "__greet"):
        r = c.request("prompts/get", {"name": name})
        t.ok(err_code(r) == -32602 and "unknown prompt" in err_msg(r),
             "prompts/get %s: -32602" % name, r)
    r = c.request("prompts/get", {"name": "alpha__nosuch"})
    t.ok(err_code(r) == -32602 and "Unknown prompt: nosuch" in err_msg(r),
         "the server's own refusal comes back", r)
    r = c.request("prompts/get", {"name": "beta__greet"})
    t.ok(err_code(r) == -32602 and "Missing required argument" in err_msg(r),
         "a missing argument is the server's -32602", r)

    r = c.request("completion/complete", {"ref": {"type": "ref/prompt", "name": "alpha__greet"},
                                          "argument": {"name": "name", "value": "al"}})
    t.ok(r.get("result", {}).get("completion", {}).get("values") == ["alice", "albert"],
         "completion/complete for a prefixed prompt's argument", r)
    r = c.request("completion/complete",
                  {"ref": {"type": "ref/resource", "uri": "mcpgate://beta/probe://echo/{text}"},
                   "argument": {"name": "text", "value": "hel"},
                   "context": {"arguments": {}}})
    t.ok(r.get("result", {}).get("completion", {}).get("values") == ["hello", "help"],
         "completion/complete for a prefixed resource template", r)
    r = c.request("completion/complete", {"ref": {"type": "ref/prompt", "name": "greet"},
                                          "argument": {"name": "name", "value": ""}})
    t.ok(err_code(r) == -32602, "completion/complete for no server's prompt: -32602", r)
    r = c.request("completion/complete", {"ref": {"type": "ref/tool", "name": "alpha__echo"},
                                          "argument": {"name": "x", "value": ""}})
    t.ok(err_code(r) == -32602, "completion/complete with a ref of another type: -32602", r)
    c.call("alpha__notify", {"method": "notifications/prompts/list_changed"})
    t.ok(len(notes(c, "notifications/prompts/list_changed")) == 1,
         "notifications/prompts/list_changed reaches the client", c.notifications)
    c.call("alpha__notify", {"method": "notifications/made/up", "params": {"x": 1}})
    r = c.request("ping")
    t.ok(not notes(c, "notifications/made/up"), "a notification mcpgate does not know is dropped")
    c.close()
    f.cleanup()


def test_logging():
    # alpha starts slowly: what the client asks before start-up ends waits for it
    f = Fixture(srv("alpha", ("echo", "log", "state"), ["--initialize-delay", "600"]) +
                srv("beta", ("echo", "state")))
    c = f.start()
    c.initialize()
    f.wait_settled()
    r = c.request("logging/setLevel", {"level": "warning"})
    t.ok(r.get("result") == {}, "logging/setLevel is answered {} at once", r)
    r = c.request("resources/list")
    t.ok([x["uri"] for x in r.get("result", {}).get("resources", [])] ==
         ["mcpgate://alpha/probe://greeting", "mcpgate://alpha/probe://data.json",
          "mcpgate://beta/probe://greeting", "mcpgate://beta/probe://data.json"],
         "a list asked during start-up waits for every server", r)
    r = c.request("prompts/list", {"cursor": "mcpgate-p100-0123456789abcdef"})
    t.ok(err_code(r) == -32602, "a made-up cursor is refused", r)
    for name in ("alpha", "beta"):
        r = c.call(name + "__state")
        t.ok(json.loads(text_of(r)).get("level") == "warning",
             "logging/setLevel reached %s (asked before it was ready)" % name, r)
    r = c.request("logging/setLevel", {"level": "error"})
    r = c.call("beta__state")
    t.ok(json.loads(text_of(r)).get("level") == "error", "and a later level too", r)
    r = c.request("logging/setLevel", {"level": "loud"})
    t.ok(err_code(r) == -32602, "an unknown level: -32602", r)
    r = c.call("alpha__log", {"level": "error", "text": "boom"})
    msgs = [n["params"] for n in notes(c, "notifications/message") if n["params"].get("data") == "boom"]
    t.ok(msgs == [{"level": "error", "logger": "alpha/probe", "data": "boom"}],
         "notifications/message from a server is tagged with it", msgs)
    c.close()
    levels = events(f.audit(), "client.set_level")
    t.ok([(e["level"], e["servers"]) for e in levels] ==
         [("warning", ["alpha", "beta"]), ("error", ["alpha", "beta"])],
         "each level set is recorded with the servers it went to", levels)
    f.cleanup()


SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "sampled"}, "model": "m"}


def test_server_requests():
    relay_all = 'relay = ["sampling", "elicitation", "roots"]\n'
    asks = ("echo", "ask_sampling", "ask_elicitation", "ask_roots", "state")
    f = Fixture(srv("open", asks, extra=relay_all) + srv("closed", asks) +
                srv("half", asks, extra='relay = ["roots"]\n'))
    c = f.start()
    c.initialize(capabilities={"sampling": {}, "elicitation": {}, "roots": {"listChanged": True}})
    f.wait_settled()
    c.request("tools/list")
    r = c.call("open__state")
    t.ok(json.loads(text_of(r))["capabilities"] ==
         {"sampling": {}, "elicitation": {}, "roots": {"listChanged": True}},
         "a server whose entry allows relaying is told so in initialize", text_of(r))
    r = c.call("closed__state")
    t.ok(json.loads(text_of(r))["capabilities"] == {}, "a server with no relay is told nothing",
         text_of(r))
    r = c.call("half__state")
    t.ok(json.loads(text_of(r))["capabilities"] == {"roots": {"listChanged": True}},
         "a server is told exactly what its relay allows", text_of(r))

    r, asked = call_answering(c, "open__ask_sampling", {"text": "hi"},
                              lambda m: {"result": SAMPLED})
    t.ok(len(asked) == 1 and asked[0]["method"] == "sampling/createMessage",
         "sampling/createMessage reaches the client when both allow it", asked)
    p = asked[0]["params"] if asked else {}
    t.ok(p.get("messages", [{}])[0].get("content", {}).get("text") == "hi" and
         p.get("maxTokens") == 16, "with the server's params", p)
    t.ok(p.get("includeContext") == "none",
         "includeContext thisServer becomes none (the client sees only mcpgate)", p)
    t.ok(p.get("_meta", {}).get("io.mcpgate/server") == "open", "naming the server", p)
    t.ok(asked and isinstance(asked[0]["id"], int) and asked[0]["id"] != "probe-ask-1",
         "under an id of mcpgate's own", asked)
    t.ok(answer_of(r) == {"result": SAMPLED},
         "the client's answer reaches the server under the server's id", r)

    r, asked = call_answering(c, "open__ask_sampling", {},
                              lambda m: {"error": {"code": -1, "message": "the person said no"}})
    t.ok(answer_of(r) == {"error": {"code": -1, "message": "the person said no"}},
         "an error answer reaches the server as it was", r)

    r, asked = call_answering(c, "open__ask_sampling", {"cancel": True}, lambda m: None)
    c.request("ping")
    cancels = notes(c, "notifications/cancelled")
    t.ok(text_of(r) == "cancelled" and len(asked) == 1 and
         [n["params"] for n in cancels] == [{"requestId": asked[0]["id"],
                                             "reason": "probe changed its mind"}],
         "a server's notifications/cancelled reaches the client with mcpgate's id", (asked, cancels))

    r, asked = call_answering(c, "open__ask_elicitation", {},
                              lambda m: {"result": {"action": "accept", "content": {"name": "Ann"}}})
    t.ok(len(asked) == 1 and asked[0]["method"] == "elicitation/create" and
         asked[0]["params"]["message"] == "Server open asks: Your name?" and
         asked[0]["params"]["requestedSchema"]["required"] == ["name"],
         "elicitation/create reaches the client, the message naming the server", asked)
    t.ok(answer_of(r) == {"result": {"action": "accept", "content": {"name": "Ann"}}},
         "and the person's answer reaches the server", r)

    roots = {"roots": [{"uri": "file:///work", "name": "work"}]}
    r, asked = call_answering(c, "open__ask_roots", {}, lambda m: {"result": roots})
    t.ok(len(asked) == 1 and asked[0]["method"] == "roots/list" and answer_of(r) == {"result": roots},
         "roots/list is relayed both ways", (asked, r))
    r, asked = call_answering(c, "half__ask_roots", {}, lambda m: {"result": roots})
    t.ok(len(asked) == 1 and answer_of(r) == {"result": roots},
         "a server allowed roots only gets roots", r)

    for tool, method, word in (("closed__ask_sampling", "sampling/createMessage", "sampling"),
                               ("closed__ask_elicitation", "elicitation/create", "elicitation"),
                               ("closed__ask_roots", "roots/list", "roots"),
                               ("half__ask_sampling", "sampling/createMessage", "sampling")):
        r, asked = call_answering(c, tool, {}, no_requests)
        a = answer_of(r)
        msg = a.get("error", {}).get("message", "")
        t.ok(not asked and a.get("error", {}).get("code") == -32601 and method in msg and
             "does not allow it" in msg and '"%s"' % word in msg and "client" not in msg,
             "%s: refused, the message saying the entry in mcp.toml lacks it" % tool, a)
    r = c.call("open__ask_elicitation", {"mode": "url"})
    msg = answer_of(r).get("error", {}).get("message", "")
    t.ok("elicitation (url mode)" in msg and "client did not declare" in msg,
         "url-mode elicitation needs the client's url capability", msg)
    c.notify("notifications/roots/list_changed")
    r = c.call("open__state")
    t.ok("result" in r, "notifications/roots/list_changed from the client is passed on", r)
    t.ok(c.close() == 0, "the session ends cleanly")
    audit = f.audit()
    relayed = [(e["server"], e["method"]) for e in events(audit, "server.request.relayed")]
    t.ok(relayed == [("open", "sampling/createMessage"), ("open", "sampling/createMessage"),
                     ("open", "sampling/createMessage"), ("open", "elicitation/create"), ("open", "roots/list"), ("half", "roots/list")],
         "every relayed request is recorded", relayed)
    answered = [(e["method"], e["outcome"], e.get("action")) for e in
                events(audit, "server.request.answered")]
    t.ok(answered == [("sampling/createMessage", "result", None),
                      ("sampling/createMessage", "error", None),
                      ("sampling/createMessage", "cancelled", None),
                      ("elicitation/create", "result", "accept"),
                      ("roots/list", "result", None), ("roots/list", "result", None)],
         "and how it was answered (the elicitation's action, never its content)", answered)
    refused = [(e["server"], e["method"], e["reason"]) for e in events(audit, "server.request.refused")]
    t.ok(refused == [("closed", "sampling/createMessage", "mcp.toml"),
                     ("closed", "elicitation/create", "mcp.toml"),
                     ("closed", "roots/list", "mcp.toml"),
                     ("half", "sampling/createMessage", "mcp.toml"),
                     ("open", "elicitation/create", "client")],
         "every refused request is recorded with what was missing", refused)
    t.ok("Ann" not in json.dumps(audit), "what the person answered is not recorded")

    # a client that declared nothing
    c = f.start()
    c.initialize()
    f.wait_settled()
    c.request("tools/list")
    for tool, method, word in (("open__ask_sampling", "sampling/createMessage", "sampling"),
                               ("open__ask_elicitation", "elicitation/create", "elicitation"),
                               ("open__ask_roots", "roots/list", "roots")):
        r, asked = call_answering(c, tool, {}, no_requests)
        msg = answer_of(r).get("error", {}).get("message", "")
        t.ok(not asked and method in msg and "client did not declare the %s" % word in msg and
             "mcp.toml" not in msg,
             "%s: refused, the message saying the client lacks %s" % (tool, word), msg)
    r, asked = call_answering(c, "closed__ask_sampling", {}, no_requests)
    msg = answer_of(r).get("error", {}).get("message", "")
    t.ok("client did not declare the sampling" in msg and "does not allow it" in msg,
         "when both are missing the message names both", msg)
    c.close()
    reasons = [e["reason"] for e in events(f.audit(), "server.request.refused")][-4:]
    t.ok(reasons == ["client", "client", "client", "client and mcp.toml"],
         "recorded with what was missing", reasons)
    f.cleanup()


def test_paging():
    names = ["s%d" % i for i in range(1, 7)]
    f = Fixture("".join(srv(n, ALL_TOOLS) for n in names) +
                srv("many", ("echo",), ["--resources", "150", "--page-size", "7"]))
    c = f.start()
    c.initialize()
    f.wait_settled()
    first = c.request("tools/list")
    t.ok(len(first["result"]["tools"]) == 100 and isinstance(first["result"].get("nextCursor"), str),
         "a merged tools list of 115 comes in a page of 100 with a nextCursor",
         len(first["result"]["tools"]))
    items, pages = list_all(c, "tools/list", "tools")
    want = ["%s__%s" % (n, tool) for n in names for tool in ALL_TOOLS] + ["many__echo"]
    t.ok([x["name"] for x in items] == want and len(pages) == 2,
         "the cursor gives the rest: every tool once, in mcp.toml order", [len(p["result"]["tools"]) for p in pages])
    cursor = first["result"]["nextCursor"]
    r = c.request("tools/list", {"cursor": cursor})
    t.ok([x["name"] for x in r["result"]["tools"]] == want[100:],
         "a cursor can be used again while the list is the same", r)
    for bad in ("nonsense", "", cursor[:-1], cursor[:-1] + ("0" if cursor[-1] != "0" else "1"),
                cursor.replace("mcpgate-t", "mcpgate-r"), 42):
        r = c.request("tools/list", {"cursor": bad})
        t.ok(err_code(r) == -32602, "tools/list with the bad cursor %r: -32602" % (bad,), r)

    items, pages = list_all(c, "resources/list", "resources")
    uris = [x["uri"] for x in items]
    t.ok(len(pages) == 2 and [len(p["result"]["resources"]) for p in pages] == [100, 64],
         "resources: 164 (152 of one server, read in pages of 7) come as 100 and 64",
         [len(p.get("result", {}).get("resources", [])) for p in pages])
    t.ok(uris[:2] == ["mcpgate://s1/probe://greeting", "mcpgate://s1/probe://data.json"] and
         uris[-1] == "mcpgate://many/probe://item/150" and len(set(uris)) == 164,
         "every resource once, in order", uris[:3] + uris[-2:])
    r = c.request("resources/list", {"cursor": cursor})
    t.ok(err_code(r) == -32602, "a tools cursor is no resources cursor", r)
    r = c.request("resources/templates/list", {"cursor": "x"})
    t.ok(err_code(r) == -32602, "resources/templates/list with a bad cursor: -32602", r)
    r = c.request("prompts/list", {"cursor": "x"})
    t.ok(err_code(r) == -32602, "prompts/list with a bad cursor: -32602", r)
    r = c.request("prompts/list")
    t.ok(len(r["result"]["prompts"]) == 21 and "nextCursor" not in r["result"],
         "a short list is one page without nextCursor", len(r["result"]["prompts"]))
    c.close()
    f.cleanup()


def test_passthrough():
    f = Fixture(srv("solo", ("echo", "touch")))
    c = f.start("--passthrough")
    c.initialize()
    f.wait_settled()
    r = c.request("tools/list")
    t.ok([x["name"] for x in r["result"]["tools"]] == ["echo", "touch"],
         "--passthrough: tools under their own names", r)
    r = c.call("echo", {"text": "as is"})
    t.ok(text_of(r) == "as is", "and called by them", r)
    r = c.request("prompts/list")
    t.ok([x["name"] for x in r["result"]["prompts"]] == ["greet", "plain", "with_resource"],
         "prompts under their own names", r)
    r = c.request("prompts/get", {"name": "greet", "arguments": {"name": "Bo"}})
    t.ok(r.get("result", {}).get("messages", [{}])[0].get("content", {}).get("text") ==
         "Say hello to Bo.", "prompts/get by its own name", r)
    r = c.request("resources/list")
    t.ok([x["uri"] for x in r["result"]["resources"]] == ["probe://greeting", "probe://data.json"],
         "resource URIs unprefixed", r)
    r = c.request("resources/templates/list")
    t.ok([x["uriTemplate"] for x in r["result"]["resourceTemplates"]] == ["probe://echo/{text}"],
         "templates unprefixed", r)
    r = c.request("resources/read", {"uri": "probe://greeting"})
    t.ok(r.get("result", {}).get("contents", [{}])[0].get("uri") == "probe://greeting",
         "resources/read by the server's own URI", r)
    c.request("resources/subscribe", {"uri": "probe://greeting"})
    c.call("touch", {"uri": "probe://greeting"})
    t.ok([n["params"]["uri"] for n in notes(c, "notifications/resources/updated")] ==
         ["probe://greeting"], "updates carry the server's own URI", c.notifications)
    r = c.request("completion/complete", {"ref": {"type": "ref/prompt", "name": "greet"},
                                          "argument": {"name": "name", "value": "b"}})
    t.ok(r.get("result", {}).get("completion", {}).get("values") == ["bob"],
         "completion by the prompt's own name", r)
    t.ok(c.close() == 0, "the session ends cleanly")
    f.cleanup()

    f = Fixture(srv("one") + srv("two"))
    r = f.run("--passthrough")
    t.ok(r.returncode == 1 and "--passthrough" in r.stderr and "one, two" in r.stderr,
         "--passthrough with two servers offered: refused, exit 1, naming them", r.stderr)
    t.ok(f.containers() == [] and not any(e["event"] == "server.start" for e in f.audit()),
         "and nothing was started", f.audit())
    f.cleanup()

    other = "/nonexistent-mcpgate-workspace"
    f = Fixture(srv("one") + srv("two", extra='workspaces = ["%s"]\n' % other))
    c = f.start("--passthrough")
    c.initialize()
    f.wait_settled()
    r = c.request("tools/list")
    t.ok([x["name"] for x in r["result"]["tools"]] == ["echo"],
         "--passthrough with one server offered in this workspace (of two) works", r)
    c.close()
    f.cleanup()


HASH = learn_probe_hash()
for case in (test_resources, test_prompts_completion, test_logging, test_server_requests,
             test_paging, test_passthrough):
    try:
        case()
    except Exception as e:  # a case that blows up is a failure, not a crash of the runner
        t.ok(False, "%s raised %s: %s" % (case.__name__, type(e).__name__, e))
sys.exit(t.done())
