#!/usr/bin/env python3
"""From `mcpgate add` to the first answered tool call, and what the runtime's
store grows by, for one and for three npm servers (bench/README.md).

For each of server-memory, server-sequential-thinking and
server-filesystem: `mcpgate add` (npm's cache as the person has it), then
review, approve of one read tool, and a session until its first tool call is
answered; each step timed. The runtime's store is measured on disk before and
after each add (`du` of podman's GraphRoot, docker's root dir), so
the shared node layer shows: the first server costs node plus its package,
the next ones their packages only. Prints a table; never asserts on time.

usage: MCPGATE=./mcpgate python3 bench/add.py [--runtime podman|docker]
Needs npm with the registry reachable, and the runtime. Everything it adds
is removed at the end (images and the temporary configuration).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lib"))
from mcpclient import Client  # noqa: E402

MCPGATE = os.path.abspath(os.environ.get("MCPGATE", "./mcpgate"))
SERVERS = [  # (package, name, a read tool and its arguments, extra add options)
    ("@modelcontextprotocol/server-memory@2026.8.31", "memory", "read_graph", {}, []),
    ("@modelcontextprotocol/server-sequential-thinking@2026.8.31", "thinking", None, {}, []),
    ("@modelcontextprotocol/server-filesystem@2026.8.31", "files", "list_allowed_directories",
     {}, ["--mount", "docs", "--arg", "/workspace/docs"]),
]


def store_bytes(rt):
    """bytes on disk under the runtime's own store (podman's GraphRoot,
    docker's root dir): shared layers count once there"""
    fmt = "{{.Store.GraphRoot}}" if rt == "podman" else "{{.DockerRootDir}}"
    root = subprocess.run([rt, "info", "--format", fmt], capture_output=True, text=True,
                          timeout=120).stdout.strip()
    if not root:
        return -1
    r = subprocess.run(["du", "-sb", "-x", root], capture_output=True, text=True, timeout=600)
    try:
        return int(r.stdout.split()[0])
    except (IndexError, ValueError):
        return -1


def mb(n):
    return "%.1f MB" % (n / 1e6) if n >= 0 else "?"


def main():
    rt = "podman"
    if "--runtime" in sys.argv:
        rt = sys.argv[sys.argv.index("--runtime") + 1]
    if shutil.which("npm") is None or shutil.which(rt) is None:
        print("bench/add.py: needs npm and %s" % rt)
        return 1
    d = tempfile.mkdtemp(prefix="mcpgate-bench-add-")
    conf, ws = os.path.join(d, "conf"), os.path.join(d, "ws")
    os.makedirs(conf)
    os.makedirs(os.path.join(ws, "docs"))
    with open(os.path.join(conf, "config.toml"), "w") as fh:
        fh.write('[mcp]\nruntime = "%s"\n' % rt)
    env = dict(os.environ, XDG_DATA_HOME=os.path.join(d, "data"),
               XDG_STATE_HOME=os.path.join(d, "state"))
    tags = []
    rows = []
    try:
        base = store_bytes(rt)
        for pkg, name, tool, args, extra in SERVERS:
            t0 = time.monotonic()
            r = subprocess.run([MCPGATE, "add", "npm:" + pkg, "--name", name, "--config", conf]
                               + extra, env=env, capture_output=True, text=True, timeout=1800)
            t_add = time.monotonic() - t0
            if r.returncode != 0:
                print("add %s failed: %s" % (pkg, r.stderr[-500:]))
                return 1
            tags.append(("localhost/" if rt == "podman" else "") + "mcpgate-npm-%s:%s"
                        % (name, pkg.rsplit("@", 1)[1]))
            grown = store_bytes(rt)
            t1 = time.monotonic()
            approve = [MCPGATE, "approve", name, "--config", conf]
            if tool:
                approve += ["--tool", tool, "--on", "--effect", "read"]
            for argv in ([MCPGATE, "review", name, "--config", conf], approve):
                r = subprocess.run(argv, env=env, cwd=ws, capture_output=True, text=True,
                                   timeout=300)
                if r.returncode != 0:
                    print("%s failed: %s" % (" ".join(argv[1:3]), r.stderr[-600:]))
                    return 1
            t_review = time.monotonic() - t1
            t2 = time.monotonic()
            first = None
            if tool:
                c = Client([MCPGATE, "serve", "--config", conf, "--workspace", ws], env=env,
                           stderr=subprocess.DEVNULL)
                c.initialize()
                c.request("tools/list", timeout=120)
                reply = c.call("%s__%s" % (name, tool), args, timeout=120)
                first = time.monotonic() - t2
                c.close(timeout=60)
                if "result" not in reply:
                    print("the first call to %s failed: %s" % (name, reply))
                    return 1
            rows.append((name, t_add, t_review, first, grown - base))
            base = grown
        print("mcpgate add, %s, one run (npm's cache as it is; seconds)" % rt)
        print("%-9s %8s %16s %18s %16s" % ("server", "add", "review+approve",
                                            "serve->1st answer", "store grows by"))
        for name, a, rv, f, g in rows:
            print("%-9s %8.1f %16.1f %18s %16s" % (name, a, rv, "%.1f" % f if f else "-", mb(g)))
        total = sum(r[4] for r in rows)
        node = os.path.realpath(shutil.which("node") or "/usr/bin/node")
        shared = os.path.exists(node) and rows[0][4] < os.path.getsize(node)
        print("three servers: %s in the store; the first %s (%s), the next two %s together"
              % (mb(total), mb(rows[0][4]),
                 "its package only: the node layer was in the store already, from another "
                 "image made here" if shared else "node and its package",
                 mb(rows[1][4] + rows[2][4])))
        return 0
    finally:
        for tag in tags:
            subprocess.run([rt, "rmi", "-f", tag], capture_output=True, timeout=120)
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
