#!/usr/bin/env python3
"""Drive `mcpgate serve` as the client under test of one conformance scenario.

Usage: drive.py URL (the scenario's name is in MCP_CONFORMANCE_SCENARIO).

mcpgate offers a remote server's tools only once its manifest is approved,
so this does what a person would: a first session with the server unpinned
(its live hash is in the audit log's server.withheld record), then, when the
scenario has a tool to call, a second session with that hash pinned and the
tool on: initialize, tools/list, tools/call. Exit 0 when every step worked.
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

MCPGATE = os.path.abspath(os.environ.get("MCPGATE", os.path.join(here, "..", "..", "mcpgate")))

# The tool each scenario's mock server offers, and the arguments to call it with
TOOLS = {
    "tools_call": ("add_numbers", {"a": 2, "b": 3}),
    "sse-retry": ("test_reconnection", {}),
}


def log(*a):
    print("drive:", *a, file=sys.stderr, flush=True)


def write_config(folder, url, manifest=None, tool=None):
    s = '[[server]]\nname = "conf"\ntransport = "remote"\nurl = "%s"\n' % url
    if manifest:
        s += 'manifest = "%s"\n' % manifest
    if tool:
        s += '[server.tools.%s]\non = true\neffect = "read"\n' % tool
    with open(os.path.join(folder, "conf", "mcp.toml"), "w") as fh:
        fh.write(s)


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


def main():
    if len(sys.argv) != 2:
        print("usage: drive.py URL", file=sys.stderr)
        return 2
    url = sys.argv[1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    folder = tempfile.mkdtemp(prefix="mcpgate-conformance-")
    try:
        for d in ("conf", "state", "data", "ws"):
            os.makedirs(os.path.join(folder, d))
        write_config(folder, url)
        c = session(folder)
        r = c.initialize()
        log("initialize:", json.dumps(r)[:300])
        r = c.request("tools/list")
        log("tools/list (unapproved):", json.dumps(r)[:300])
        if c.close() != 0:
            log("mcpgate serve did not end cleanly")
            return 1
        manifest = live_hash(folder)
        if manifest is None:
            log("no live manifest hash in the audit log: the server did not start")
            return 1
        if scenario not in TOOLS:
            return 0
        tool, args = TOOLS[scenario]
        write_config(folder, url, manifest, tool)
        c = session(folder)
        c.initialize()
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
