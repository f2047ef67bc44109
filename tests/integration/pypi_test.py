#!/usr/bin/env python3
"""A Python server added from a package index, doing real work contained
(issue 24 item 4; docs/2026-12-02-pypi.md), on a real runtime
(MCPGATE_CONTAINER_TEST_RUNTIME=podman|docker):

The test builds two wheels of its own (a stdlib-only MCP server over stdio
with a console script, and a dependency it imports) and serves them as a
PEP 503 index on 127.0.0.1. `mcpgate add pypi:pyfiles` resolves and locks
them with the host's pip (only the host reaches the index; the container has
no network), Debian's python3 comes from Debian's archive as a layer of its
own; then review, approve, serve: the server reads a file from a read mount
and answers with its text and a digest the dependency computes, which shows
the dependency was importable in the image. A second Python server shares
the base and python3 layers with the first.

Needs python3 with pip, apt-get and the network to Debian's archive. The
.debs and layers are kept in build/itest-debian (shared with packages_test).
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import containers_test as ct  # noqa: E402
from add_test import layers_of, pin_of  # noqa: E402
from packages_test import add, approve, calls, session  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from add_pypi_test import Index, wheel  # noqa: E402

t = ct.t
RT = ct.RT

SERVER = r'''import json, os, sys
import digest_kit


def answer(id_, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": id_, "result": result}) + "\n")
    sys.stdout.flush()


TOOLS = [{"name": "read_file", "description": "A file under /workspace, with its digest.",
          "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}},
                          "required": ["path"]}}]


def main():
    for line in sys.stdin:
        msg = json.loads(line)
        method, id_ = msg.get("method"), msg.get("id")
        if id_ is None:
            continue
        if method == "initialize":
            answer(id_, {"protocolVersion": msg["params"]["protocolVersion"],
                         "capabilities": {"tools": {}},
                         "serverInfo": {"name": "pyfiles", "version": "1.0"}})
        elif method == "tools/list":
            answer(id_, {"tools": TOOLS})
        elif method == "tools/call":
            path = os.path.join("/workspace", msg["params"]["arguments"]["path"])
            with open(path, "rb") as fh:
                data = fh.read()
            text = "%s digest=%s uid=%d" % (data.decode(), digest_kit.digest(data), os.getuid())
            answer(id_, {"content": [{"type": "text", "text": text}]})
        else:
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": id_, "error": {
                "code": -32601, "message": "no method " + str(method)}}) + "\n")
            sys.stdout.flush()
'''
KIT = "import hashlib\n\ndef digest(data):\n    return 'kit-' + hashlib.sha256(data).hexdigest()\n"


def main():
    for need in ("apt-get",):
        if shutil.which(need) is None:
            return ct.skip("no %s here (scripts/setup installs it)" % need)
    if subprocess.run(["python3", "-m", "pip", "--version"], capture_output=True).returncode:
        return ct.skip("no pip for python3 here (apt-get install python3-pip)")

    def body(base):
        s = session(base)
        root = tempfile.mkdtemp(prefix="index-", dir=base)
        build = tempfile.mkdtemp(prefix="wheels-", dir=base)
        idx = Index(root)
        try:
            idx.put("pyfiles", wheel(build, "pyfiles", "1.0", {"pyfiles/__init__.py": SERVER},
                                     ["digest-kit>=1"], {"pyfiles": "pyfiles:main"}))
            idx.put("digest-kit", wheel(build, "digest-kit", "1.0", {"digest_kit/__init__.py": KIT}))
            idx.put("pyother", wheel(build, "pyother", "2.0", {"pyother/__init__.py": SERVER},
                                     ["digest-kit>=1"], {"pyother": "pyother:main"}))
            s.env["PIP_INDEX_URL"] = idx.url
            s.env["PIP_NO_CACHE_DIR"] = "1"
            cases(s)
        finally:
            idx.close()
    return ct.run_cases("pypi", body)


def cases(s):
    note = os.path.join(s.ws, "ro", "note.txt")
    with open(note, "w") as fh:
        fh.write("read through a mount")
    r = add(s, "pypi:pyfiles", "--mount", "ro")
    ok = r.returncode == 0 and r.stdout.startswith("localhost/mcpgate-pypi-pyfiles@sha256:")
    t.ok(ok, "%s: add pypi:pyfiles from the loopback index (Debian's python3 layer from "
         "Debian's archive)" % RT, r.stderr[-2000:])
    if not ok:
        return
    ct.made["images"].append(("localhost/" if RT == "podman" else "") +
                             "mcpgate-pypi-pyfiles:1.0")
    r = approve(s, "pyfiles", "read_file")
    t.ok(r.returncode == 0, "%s: pyfiles is reviewed and approved" % RT, r.stderr[-1500:])
    answers, notes = calls(s, [("pyfiles__read_file", {"path": "ro/note.txt"})])
    want = "kit-" + hashlib.sha256(b"read through a mount").hexdigest()
    text = answers[0][1]
    # as the workspace's owner; rootless, uid 0 inside is the person outside
    uid = ct.PERSON if os.geteuid() == 0 else 0
    t.ok("read through a mount" in text and "digest=" + want in text and
         text.endswith("uid=%d" % uid), "%s: the Python server reads a file from its read "
         "mount and its dependency computes the digest, as the workspace's owner (uid %d "
         "inside)" % (RT, uid), (text[-500:], notes))

    r = add(s, "pypi:pyother")
    if r.returncode == 0:
        ct.made["images"].append(("localhost/" if RT == "podman" else "") +
                                 "mcpgate-pypi-pyother:2.0")
    a, b = layers_of(s, pin_of(s, "pyfiles")), layers_of(s, pin_of(s, "pyother"))
    t.ok(r.returncode == 0 and len(a) == 3 and len(b) == 3 and a[:2] == b[:2] and a[2] != b[2],
         "%s: two Python images share the Debian base and python3 layers, each its own "
         "package layer" % RT, (r.stderr[-800:], a, b))


if __name__ == "__main__":
    sys.exit(main())
