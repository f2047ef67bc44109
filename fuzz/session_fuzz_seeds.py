#!/usr/bin/env python3
"""The session fuzzer's seed corpus, written out as programs (fuzz/session_fuzz_program.c
says what an input is): valid exchanges of both eras, on stdio and through the
listener, each a starting point one mutation away from many others (a message
whose members an OP_EDIT sets, so that a byte changes what they are set to).

The names (ops, templates, edit kinds and targets, header names) are read from
the C sources, so the seeds follow them when they change:

    fuzz/session_fuzz_seeds.py [OUT_DIR]     (default testdata/fuzz/session_fuzz)
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = open(os.path.join(HERE, "session_fuzz_program.c")).read()
LISTEN = open(os.path.join(HERE, "session_fuzz_listen.c")).read()
HEADER = open(os.path.join(HERE, "session_fuzz.h")).read()


def enum(name):
    body = re.search(r"enum %s \{(.*?)\};" % name, SRC, re.S).group(1)
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    names = [n.strip() for n in body.split(",") if n.strip()]
    return {n: i for i, n in enumerate(names)}


def flags():
    out = {}
    for m in re.finditer(r"(SF_[A-Z_]+) = 1 << (\d+)", HEADER):
        out[m.group(1)] = 1 << int(m.group(2))
    return out


# the macros the targets use for _meta's keys
META = {"MCP_PV": "io.modelcontextprotocol/protocolVersion",
        "MCP_CC": "io.modelcontextprotocol/clientCapabilities",
        "MCP_META_LOG_LEVEL": "io.modelcontextprotocol/logLevel"}


def targets():
    body = re.search(r"targets\[\]\[5\] = \{(.*?)\n\};", SRC, re.S).group(1)
    out = []
    for m in re.finditer(r"\{([^{}]*)\}", body):
        parts = [p.strip() for p in m.group(1).split(",") if p.strip()]
        out.append(tuple(META.get(p, p.strip('"')) for p in parts))
    return out


def strings(array, text):
    body = re.search(r"%s\[\] = \{(.*?)\};" % array, text, re.S).group(1)
    return re.findall(r'"([^"]*)"', body)


OP = enum("op")
CT = enum("client_template")
ST = enum("server_template")
K = enum("kind")
RAW = enum("raw")
F = flags()
TARGETS = targets()
TOOLS = strings("tool_names", SRC)
HEADERS = strings("header_names", LISTEN)


def target(*path):
    return TARGETS.index(tuple(path))


def edit(path, kind, param=0):
    return (OP["OP_EDIT"], target(*path), K[kind], param)


def pick(want):
    """The first variant byte v for which want(v) holds"""
    return next(v for v in range(256) if want(v))


def call_variant(tool, args=0, token=0):
    t = TOOLS.index(tool)
    return pick(lambda v: v % len(TOOLS) == t and (v >> 4) % 4 == args and (v >> 6) % 4 == token)


def client(template, v=0, idk=0, who=0):
    return (OP["OP_CLIENT"], CT[template], v, (who << 4) | idk)


def reply(which=0, kind=0, idv=0, who=0):
    return (OP["OP_CLIENT_REPLY"], which, kind, (who << 4) | idv)


def server(template, v=0, srv=0, sess=0):
    return (OP["OP_SERVER"], ST[template], v, (sess << 2) | srv)


def sreply(which=0, kind=0, idv=0, srv=0, sess=0, detail=0):
    return (OP["OP_SERVER_REPLY"], which, kind | (idv << 3) | (detail << 6), (sess << 2) | srv)


def raw(line, param=0, srv=None, who=0):
    return (OP["OP_RAW"], RAW[line], param, (0x80 | (who << 4)) if srv is None else srv)


def release(srv=0, sess=0):
    return (OP["OP_RELEASE"], 0, 0, (sess << 2) | srv)


def close(srv=0, sess=0):
    return (OP["OP_CLOSE"], 0, 0, (sess << 2) | srv)


def header(name, kind, param=0):
    return (OP["OP_HEADER"], HEADERS.index(name), kind, param)


def http(action, which=0, who=0):
    return (OP["OP_HTTP"], action, which, who << 4)


def era(modern, caps=0, who=0):
    return (OP["OP_ERA"], 1 if modern else 0, caps, who << 4)


# initialize: variant = version + 5 * capabilities (fuzz/session_fuzz.c)
INIT_ELICIT = 5
INIT_ALL = 10
TOKEN = edit(("params", "_meta", "progressToken"), "K_STRING")
LEGACY_START = [client("CT_INITIALIZE", INIT_ALL), client("CT_INITIALIZED"),
                client("CT_TOOLS_LIST")]
MODERN_START = [client("CT_DISCOVER"), client("CT_TOOLS_LIST")]


def variant(caps=0, small_line=False, few_requests=False, log_level=False):
    return (small_line << 0) | (few_requests << 1) | (caps << 2) | (log_level << 5)


SEEDS = {
    # ---- stdio, 2025-11-25 ----
    "stdio-call-progress": (0, variant(), LEGACY_START + [
        TOKEN, client("CT_CALL", call_variant("alpha__echo", 0, 1)),
        server("ST_PROGRESS", 1), sreply(0), client("CT_CALL", call_variant("beta__echo", 2, 2)),
        server("ST_PROGRESS", 2, srv=1), sreply(0, 1, srv=1)]),
    "stdio-confirm": (0, variant(), LEGACY_START + [
        client("CT_CALL", call_variant("alpha__write")), reply(0, 0), sreply(0),
        client("CT_CALL", call_variant("alpha__poke")), reply(0, 1),
        client("CT_CALL", call_variant("alpha__write")), client("CT_CANCEL"), reply(0, 0)]),
    "stdio-relay": (0, variant(), LEGACY_START + [
        TOKEN, client("CT_CALL", call_variant("alpha__echo", 0, 1)),
        server("ST_ELICIT"), reply(0, 0), server("ST_SAMPLING"), reply(0, 0),
        server("ST_ROOTS"), reply(0, 0), server("ST_PING"), server("ST_LOG", 1), sreply(0),
        client("CT_ROOTS_CHANGED"), server("ST_CANCELLED")]),
    "stdio-resources": (0, variant(), LEGACY_START + [
        client("CT_RESOURCES_LIST"), sreply(0), sreply(0, srv=2), client("CT_TEMPLATES_LIST"),
        sreply(0), client("CT_READ", 0), sreply(0, 1), client("CT_SUBSCRIBE", 0), sreply(0),
        server("ST_UPDATED"), server("ST_RESOURCES_CHANGED"), client("CT_UNSUBSCRIBE", 0),
        sreply(0)]),
    "stdio-prompts": (0, variant(), LEGACY_START + [
        client("CT_PROMPTS_LIST"), sreply(0), sreply(0, srv=1), client("CT_PROMPT_GET", 0),
        sreply(0, 1), client("CT_COMPLETE", 0), sreply(0), client("CT_SET_LEVEL", 1), sreply(0),
        server("ST_PROMPTS_CHANGED")]),
    "stdio-relist": (0, variant(), LEGACY_START + [
        server("ST_TOOLS_CHANGED"), sreply(0), server("ST_TOOLS_CHANGED"), sreply(0, 1),
        client("CT_TOOLS_LIST"), client("CT_CALL", call_variant("alpha__echo"))]),
    "stdio-ids": (0, variant(), LEGACY_START + [
        client("CT_CALL", call_variant("alpha__echo"), 4),
        client("CT_CALL", call_variant("alpha__echo"), 10),
        client("CT_CALL", call_variant("alpha__echo"), 11), sreply(0, 0, 2), sreply(0, 0, 1),
        sreply(0), sreply(0, 0, 3), edit(("id",), "K_NULL"), client("CT_PING")]),
    "stdio-bad-lines": (0, variant(small_line=True), LEGACY_START + [
        raw("RAW_UNPARSABLE"), raw("RAW_BATCH"), raw("RAW_OLD_JSONRPC"), raw("RAW_LONG", 200),
        raw("RAW_LONG", 200, srv=0), raw("RAW_BAD_UTF8", srv=1), raw("RAW_PARTIAL"),
        client("CT_PING"), close(1), client("CT_CALL", call_variant("beta__echo"))]),
    "stdio-hold": (F["SF_HOLD"], variant(), [
        client("CT_INITIALIZE", INIT_ELICIT), client("CT_TOOLS_LIST"),
        client("CT_CALL", call_variant("alpha__echo")), client("CT_PING"), release(0),
        release(1), client("CT_CANCEL", 1), release(2), sreply(0)]),
    "stdio-secret": (F["SF_SECRET"], variant(), LEGACY_START + [
        edit(("params", "arguments", "text"), "K_SECRET"),
        client("CT_CALL", call_variant("alpha__echo")),
        client("CT_CALL", call_variant("alpha__echo")),
        edit(("result", "content", "0", "text"), "K_SECRET"), sreply(0)]),
    # the credential in each text of the client's that may reach a server
    "stdio-secret-paths": (F["SF_SECRET"], variant(caps=2), LEGACY_START + [
        client("CT_CALL", call_variant("alpha__echo")), edit(("params", "reason"), "K_SECRET"),
        client("CT_CANCEL", 0), edit(("params", "arguments"), "K_SECRET"), client("CT_PROMPT_GET", 0),
        edit(("params", "argument", "value"), "K_SECRET"), client("CT_COMPLETE", 0),
        edit(("params", "uri"), "K_SECRET"), client("CT_READ", 0),
        client("CT_CALL", call_variant("alpha__echo")), server("ST_ELICIT"),
        edit(("result", "content"), "K_SECRET"), reply(0, 0), server("ST_ROOTS"),
        edit(("result", "roots"), "K_SECRET"), reply(0, 0)]),
    "stdio-passthrough": (F["SF_PASSTHROUGH"], variant(), LEGACY_START + [
        client("CT_CALL", call_variant("alpha__echo")), sreply(0), client("CT_READ", 0),
        sreply(0)]),
    # ---- stdio, 2026-07-28 ----
    "stdio-modern-call": (F["SF_MODERN"], variant(caps=2, log_level=True), MODERN_START + [
        TOKEN, client("CT_CALL", call_variant("alpha__echo", 0, 1)), server("ST_PROGRESS"),
        server("ST_LOG", 1), sreply(0)]),
    "stdio-modern-confirm": (F["SF_MODERN"], variant(caps=2), MODERN_START + [
        client("CT_CALL", call_variant("alpha__write")), client("CT_RETRY", 0), sreply(0),
        client("CT_CALL", call_variant("gamma__ask")), client("CT_RETRY", 4),
        edit(("params", "requestState"), "K_STATE_BENT", 9), client("CT_RETRY", 0)]),
    "stdio-modern-rounds": (F["SF_MODERN"] | F["SF_ALPHA_MODERN"], variant(caps=2), MODERN_START + [
        client("CT_CALL", call_variant("alpha__echo")), sreply(0, 2, sess=0), client("CT_RETRY", 0),
        sreply(0), client("CT_PROMPT_GET", 0), sreply(0, 2), client("CT_RETRY", 0), sreply(0)]),
    # a client of 2025-11-25 setting the level of a server of 2026-07-28
    "stdio-modern-server-level": (F["SF_ALPHA_MODERN"], variant(), LEGACY_START + [
        client("CT_SET_LEVEL", 1), sreply(0, srv=1), client("CT_CALL", call_variant("alpha__echo")),
        server("ST_LOG", 0), sreply(0)]),
    "stdio-modern-park": (F["SF_MODERN"], variant(caps=2), MODERN_START + [
        client("CT_CALL", call_variant("alpha__echo")), server("ST_ELICIT"), client("CT_RETRY", 0),
        sreply(0)]),
    "stdio-modern-listen": (F["SF_MODERN"], variant(caps=2), MODERN_START + [
        client("CT_LISTEN", 0x0F), sreply(0), server("ST_TOOLS_CHANGED"), sreply(0),
        server("ST_UPDATED"), server("ST_PROMPTS_CHANGED", srv=1), client("CT_CANCEL", 0)]),
    "stdio-era-switch": (0, variant(caps=1), [
        client("CT_PING"), client("CT_DISCOVER"), era(True, 1), client("CT_TOOLS_LIST"),
        client("CT_INITIALIZE", INIT_ALL), era(False), client("CT_TOOLS_LIST"),
        edit(("params", "_meta", "io.modelcontextprotocol/protocolVersion"), "K_VERSION", 1),
        client("CT_CALL", call_variant("alpha__echo"))]),
    # ---- through the listener ----
    "listen-legacy": (F["SF_LISTEN"], variant(caps=1), [
        client("CT_INITIALIZE", INIT_ALL), client("CT_INITIALIZED"), http(1), client("CT_TOOLS_LIST"),
        TOKEN, client("CT_CALL", call_variant("alpha__echo", 0, 1)), server("ST_PROGRESS"),
        server("ST_ELICIT"), reply(0, 0), sreply(0), client("CT_CALL", call_variant("alpha__write")),
        reply(0, 0), sreply(0), client("CT_INITIALIZE", INIT_ALL, who=1), client("CT_PING", who=1),
        http(2, who=1), http(3)]),
    "listen-modern": (F["SF_LISTEN"], variant(caps=2), [
        client("CT_DISCOVER", who=2), client("CT_TOOLS_LIST", who=2), TOKEN,
        client("CT_CALL", call_variant("alpha__echo", 0, 1), who=2), TOKEN,
        client("CT_CALL", call_variant("alpha__echo", 2, 1), who=3), server("ST_PROGRESS", 0),
        server("ST_PROGRESS", 1), sreply(1), sreply(0), client("CT_CALL", call_variant("alpha__write"), who=3),
        client("CT_RETRY", 0, who=3), sreply(0), client("CT_LISTEN", 3, who=2), server("ST_TOOLS_CHANGED"),
        sreply(0), http(0, 0)]),
    "listen-modern-headers": (F["SF_LISTEN"], variant(caps=2), [
        client("CT_TOOLS_LIST", who=2), header("Mcp-Method", 2), client("CT_PING", who=2),
        header("Mcp-Param-Text", 5), client("CT_CALL", call_variant("alpha__echo"), who=2),
        header("Mcp-Name", 3), client("CT_CALL", call_variant("alpha__echo"), who=3),
        header("MCP-Protocol-Version", 0), client("CT_TOOLS_LIST", who=3), sreply(0), sreply(0),
        header("Authorization", 2), client("CT_TOOLS_LIST", who=2), header("Mcp-Session-Id", 7),
        client("CT_PING", who=0), client("CT_CANCEL", who=2)]),
    "listen-hang-up": (F["SF_LISTEN"], variant(caps=1, few_requests=True), [
        client("CT_INITIALIZE", INIT_ALL), client("CT_TOOLS_LIST"),
        client("CT_CALL", call_variant("alpha__echo")), client("CT_CALL", call_variant("beta__echo")),
        client("CT_CALL", call_variant("alpha__echo")), http(0, 0), http(0, 1), sreply(0),
        sreply(0, srv=1), client("CT_CALL", call_variant("alpha__echo"), who=2), http(0, 0),
        server("ST_LOG", 0), sreply(0), http(2)]),
}


# What the fuzzer found, each written as the program that shows it (the
# fix's commit says what crashed or leaked, and why); make check runs them all
REPRODUCERS = {
    # a server answered tools/call with a result that is not an object: the
    # gateway set _meta on it and aborted (json_object_set on null)
    "crash-call-result-not-object": (0, variant(), LEGACY_START + [
        client("CT_CALL", call_variant("alpha__echo")), sreply(0, 4),
        client("CT_CALL", call_variant("beta__echo")), sreply(0, 4, srv=1, detail=1)]),
    # _meta.progressToken true, null, [] or {} on a tools/call: NULL handed to
    # json_new_string as the server's token, SIGSEGV (issue 23 item 5), on
    # stdio in both eras and through the listener's 2025-11-25 sessions
    "crash-progress-token-true": (0, variant(), LEGACY_START + [
        edit(("params", "_meta", "progressToken"), "K_TRUE"),
        client("CT_CALL", call_variant("alpha__echo", 0, 1))]),
    "crash-progress-token-null-modern": (F["SF_MODERN"], variant(caps=2), MODERN_START + [
        edit(("params", "_meta", "progressToken"), "K_NULL"),
        client("CT_CALL", call_variant("alpha__echo", 0, 1))]),
    "crash-progress-token-object-listen": (F["SF_LISTEN"], variant(caps=1), [
        client("CT_INITIALIZE", INIT_ALL), client("CT_TOOLS_LIST"),
        edit(("params", "_meta", "progressToken"), "K_EMPTY_OBJECT"),
        client("CT_CALL", call_variant("alpha__echo", 0, 1)), client("CT_PING", who=1),
        client("CT_INITIALIZE", INIT_ALL, who=1)]),
    # a line of more than line_max from a server failed its calls in flight,
    # one waiting for the person's confirmation too, which was freed while
    # the client still had its question: its answer (or the client's end)
    # ran on_confirm on freed memory
    "crash-long-line-while-confirming": (0, variant(small_line=True), LEGACY_START + [
        client("CT_CALL", call_variant("alpha__write")), raw("RAW_LONG", 200, srv=0),
        reply(0, 0)]),
    # the client's notifications/cancelled went to the server with its reason
    # unscanned: a stored credential not bound for the server left in it
    "leak-cancel-reason-credential": (F["SF_SECRET"], variant(), LEGACY_START + [
        client("CT_CALL", call_variant("alpha__echo")), edit(("params", "reason"), "K_SECRET"),
        client("CT_CANCEL", 0)]),
    # through the listener's 2026-07-28 session the token was replaced by a
    # number of the listener's before the session could refuse it, and put
    # back on the server's progress: notifications/progress with a null token
    "crash-progress-token-null-listen-modern": (F["SF_LISTEN"], variant(caps=2), [
        client("CT_TOOLS_LIST", who=2), edit(("params", "_meta", "progressToken"), "K_NULL"),
        client("CT_CALL", call_variant("alpha__echo", 0, 1), who=2), server("ST_PROGRESS"),
        sreply(0)]),
}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "testdata", "fuzz",
                                                             "session_fuzz")
    os.makedirs(out, exist_ok=True)
    for name, (fl, var, ops) in SEEDS.items():
        data = bytes([fl, var]) + b"".join(bytes(op) for op in ops)
        with open(os.path.join(out, "seed-" + name), "wb") as f:
            f.write(data)
    for name, (fl, var, ops) in REPRODUCERS.items():
        data = bytes([fl, var]) + b"".join(bytes(op) for op in ops)
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print("%d seeds and %d reproducers in %s" % (len(SEEDS), len(REPRODUCERS),
                                                 os.path.normpath(out)))


if __name__ == "__main__":
    main()
