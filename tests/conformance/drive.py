#!/usr/bin/env python3
"""Drive `mcpgate serve` as the client under test of one conformance scenario.

Usage: drive.py URL (the scenario's name is in MCP_CONFORMANCE_SCENARIO,
the protocol version it tests in MCP_CONFORMANCE_PROTOCOL_VERSION, and what
it wants done, if anything, in MCP_CONFORMANCE_CONTEXT).

mcpgate offers a remote server's tools only once its manifest is approved,
so this does what a person would: a first session with a pin no manifest has
(the server's live hash is then in the audit log's server.withheld record; a
server never approved is not started at all), then, when the scenario has a
tool to call, a second session with that hash pinned and the tools on: the
handshake, tools/list once the server is ready, the calls. Exit 0 when every
step worked.

For 2026-07-28 the client speaks that version to mcpgate too (server/discover
first, every request with its _meta, elicitation declared), and mcpgate
speaks it to the scenario's server. What each scenario calls is in
MODERN_PLAN; a call answered with resultType "input_required" is retried as
a 2026-07-28 client must: the same call with a new id, inputResponses for
the input requests (elicitations accepted with {"confirmed": true}) and the
requestState as it came.
"""
import glob
import json
import os
import shutil
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "lib"))
from mcpclient import Client  # noqa: E402
from gwtest import UNMATCHED_PIN, wait_settled  # noqa: E402

MCPGATE = os.path.abspath(os.environ.get("MCPGATE", os.path.join(here, "..", "..", "mcpgate")))

# The tool each scenario's mock server offers, and the arguments to call it with
TOOLS = {
    "tools_call": ("add_numbers", {"a": 2, "b": 3}),
    "sse-retry": ("test_reconnection", {}),
}


def log(*a):
    print("drive:", *a, file=sys.stderr, flush=True)


MODERN = "2026-07-28"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "mcpgate-conformance-drive", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}
MRTR_TOOLS = ["test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated",
              "test_mrtr_no_result_type"]
INVALID_HEADER_TOOLS = [
    "valid_tool", "invalid_empty_header", "invalid_object_header", "invalid_array_header",
    "invalid_null_header", "invalid_number_header", "invalid_duplicate_same_case",
    "invalid_duplicate_diff_case", "invalid_space_in_name", "invalid_colon_in_name",
    "invalid_non_ascii_name", "invalid_control_char_name"]
# For 2026-07-28: the scenario's tools to turn on, and what to call. "calls"
# are (tool, arguments); "context" takes them from MCP_CONFORMANCE_CONTEXT;
# "every_listed" calls whatever mcpgate offers (to show what it left out);
# "echo_schema" passes the listed schema of one tool back through another;
# "browse" lists resources and prompts and reads or gets each one.
MODERN_PLAN = {
    "tools_call": {"tools": ["add_numbers"], "calls": [("add_numbers", {"a": 2, "b": 3})]},
    "request-metadata": {"tools": []},
    "http-standard-headers": {"tools": ["test_headers", "my-hyphenated-tool"],
                              "calls": [("test_headers", {}), ("my-hyphenated-tool", {})],
                              "browse": True},
    "http-custom-headers": {"tools": ["test_custom_headers", "test_custom_headers_null"],
                            "context": True},
    "http-invalid-tool-headers": {"tools": INVALID_HEADER_TOOLS, "every_listed": True,
                                  "args": {"valid_tool": {"region": "us-east-1"}}},
    "json-schema-ref-no-deref": {"tools": ["lookup_user"]},
    "json-schema-2020-12-preservation": {
        "tools": ["json_schema_2020_12_tool", "json_schema_echo"],
        "echo_schema": ("json_schema_2020_12_tool", "json_schema_echo")},
    "sep-2322-client-request-state": {"tools": MRTR_TOOLS,
                                      "calls": [(t, {}) for t in MRTR_TOOLS]},
}


def write_config(folder, url, manifest=None, tools=()):
    # the multi round-trip scenarios' server asks for an elicitation, which
    # the person's entry must allow mcpgate to relay
    s = ('[[server]]\nname = "conf"\ntransport = "remote"\nurl = "%s"\n'
         'relay = ["elicitation"]\n' % url)
    if manifest:
        s += 'manifest = "%s"\n' % manifest
    for tool in tools:
        s += '[server.tools."%s"]\non = true\neffect = "read"\n' % tool
    with open(os.path.join(folder, "conf", "mcp.toml"), "w") as fh:
        fh.write(s)


def first_session(folder, url, begin):
    """A session with a pin no manifest has (begin(c) speaks to it), to learn
    the server's live manifest hash from the audit log's server.withheld
    record; None, said why, without one. (A server never approved is not
    started at all.)"""
    write_config(folder, url, UNMATCHED_PIN)
    c = session(folder)
    begin(c)
    wait_settled(os.path.join(folder, "state"))
    if c.close() != 0:
        log("mcpgate serve did not end cleanly")
        return None
    manifest = live_hash(folder)
    if manifest is None:
        log("no live manifest hash in the audit log: the server did not start")
    return manifest


def session(folder):
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": folder,
        "XDG_STATE_HOME": os.path.join(folder, "state"),
        "XDG_DATA_HOME": os.path.join(folder, "data"),
        "XDG_CONFIG_HOME": os.path.join(folder, "nowhere"),
        "MCPGATE_LOG": os.environ.get("MCPGATE_LOG", "info"),
    }
    return Client([MCPGATE, "serve", "--config", os.path.join(folder, "conf"), "--workspace",
                   os.path.join(folder, "ws")], env=env, stderr=sys.stderr)


def live_hash(folder):
    for name in glob.glob(os.path.join(folder, "state", "mcpgate", "sessions", "*.jsonl")):
        with open(name) as fh:
            for line in fh:
                rec = json.loads(line)
                if rec.get("event") == "server.withheld" and rec.get("live"):
                    return rec["live"]
    return None


def modern_request(c, method, params=None):
    p = dict(params or {})
    p["_meta"] = dict(MODERN_META, **p.get("_meta", {}))
    return c.request(method, p)


def answer_inputs(requests):
    """What this client answers to a result's inputRequests."""
    out = {}
    for key, req in (requests or {}).items():
        method = req.get("method") if isinstance(req, dict) else None
        if method == "elicitation/create":
            out[key] = {"action": "accept", "content": {"confirmed": True}}
        elif method == "roots/list":
            out[key] = {"roots": []}
        else:
            log("an input request this client cannot answer:", key, method)
            return None
    return out


def modern_call(c, tool, args):
    """A 2026-07-28 tools/call, retried while it asks for input (at most 4)."""
    params = {"name": tool, "arguments": args}
    for _ in range(5):
        r = modern_request(c, "tools/call", params)
        res = r.get("result") or {}
        if res.get("resultType") != "input_required":
            return r
        answers = answer_inputs(res.get("inputRequests"))
        if answers is None:
            return r
        params = {"name": tool, "arguments": args, "inputResponses": answers}
        if "requestState" in res:
            params["requestState"] = res["requestState"]
        log("tools/call %s asked for input; retrying with" % tool, json.dumps(params)[:300])
    return r


def modern_session(folder, url, scenario):
    plan = MODERN_PLAN[scenario]
    def begin(c):
        log("server/discover:", json.dumps(modern_request(c, "server/discover"))[:300])
        log("tools/list (unapproved):", json.dumps(modern_request(c, "tools/list"))[:300])
    manifest = first_session(folder, url, begin)
    if manifest is None:
        return 1
    if not plan["tools"]:
        return 0
    write_config(folder, url, manifest, plan["tools"])
    c = session(folder)
    modern_request(c, "server/discover")
    wait_settled(os.path.join(folder, "state"))
    r = modern_request(c, "tools/list")
    listed = {t["name"]: t for t in r.get("result", {}).get("tools", [])}
    log("tools/list:", sorted(listed))
    calls = list(plan.get("calls", []))
    if plan.get("context"):
        context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
        calls += [(t["name"], t.get("arguments") or {}) for t in context.get("toolCalls", [])]
    if plan.get("every_listed"):
        calls += [(name[len("conf__"):], plan.get("args", {}).get(name[len("conf__"):], {}))
                  for name in sorted(listed)]
    if plan.get("echo_schema"):
        focal, echo = plan["echo_schema"]
        schema = listed.get("conf__" + focal, {}).get("inputSchema")
        if schema is None:
            log("mcpgate did not list", focal)
            c.close()
            return 1
        calls.append((echo, {"schema": schema}))
    ok = True
    for tool, args in calls:
        if plan.get("every_listed") is None and "conf__" + tool not in listed:
            log("mcpgate did not list", tool)
            ok = False
            continue
        r = modern_call(c, "conf__" + tool, args)
        log("tools/call %s:" % tool, json.dumps(r)[:500])
        ok = ok and "result" in r and not r["result"].get("isError")
    if plan.get("browse"):
        r = modern_request(c, "resources/list")
        log("resources/list:", json.dumps(r)[:300])
        for res in r.get("result", {}).get("resources", []):
            got = modern_request(c, "resources/read", {"uri": res["uri"]})
            log("resources/read %s:" % res["uri"], json.dumps(got)[:300])
            ok = ok and "result" in got
        r = modern_request(c, "prompts/list")
        log("prompts/list:", json.dumps(r)[:300])
        for prompt in r.get("result", {}).get("prompts", []):
            got = modern_request(c, "prompts/get", {"name": prompt["name"]})
            log("prompts/get %s:" % prompt["name"], json.dumps(got)[:300])
            ok = ok and "result" in got
    if c.close() != 0:
        log("mcpgate serve did not end cleanly")
        return 1
    return 0 if ok else 1


def main():
    if len(sys.argv) != 2:
        print("usage: drive.py URL", file=sys.stderr)
        return 2
    url = sys.argv[1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    era = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION", "2025-11-25")
    folder = tempfile.mkdtemp(prefix="mcpgate-conformance-")
    if era == MODERN:
        try:
            for d in ("conf", "state", "data", "ws"):
                os.makedirs(os.path.join(folder, d))
            if scenario not in MODERN_PLAN:
                log("no plan for scenario %r of %s" % (scenario, era))
                return 1
            return modern_session(folder, url, scenario)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    try:
        for d in ("conf", "state", "data", "ws"):
            os.makedirs(os.path.join(folder, d))
        def begin(c):
            log("initialize:", json.dumps(c.initialize())[:300])
            log("tools/list (unapproved):", json.dumps(c.request("tools/list"))[:300])
        manifest = first_session(folder, url, begin)
        if manifest is None:
            return 1
        if scenario not in TOOLS:
            return 0
        tool, args = TOOLS[scenario]
        write_config(folder, url, manifest, [tool])
        c = session(folder)
        c.initialize()
        wait_settled(os.path.join(folder, "state"))
        r = c.request("tools/list")
        names = [t["name"] for t in r.get("result", {}).get("tools", [])]
        log("tools/list:", names)
        want = "conf__" + tool
        if want not in names:
            c.close()
            return 1
        r = c.call(want, args)
        log("tools/call:", json.dumps(r)[:500])
        if c.close() != 0:
            log("mcpgate serve did not end cleanly")
            return 1
        return 0 if "result" in r and not r["result"].get("isError") else 1
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
