#!/usr/bin/env python3
"""`mcpgate add` of real npm servers on a real runtime
(MCPGATE_CONTAINER_TEST_RUNTIME=podman|docker), as a new user would do it.

@modelcontextprotocol/server-memory with its MEMORY_FILE_PATH setting and
@modelcontextprotocol/server-filesystem with a read-only and a read-write
mount are added from the npm registry: each becomes a pinned image in the
runtime and a [[server]] with every tool off, in an mcp.toml whose comments
are kept. The two images share their Debian base and node layers. Then review, approve and a
session: the read-only mount refuses a write, the read-write one takes it,
and the memory server answers. The same package added again under another
name gives the same image digest. Refusals (an unknown package, a version
that does not exist, a name taken) leave mcp.toml byte for byte as it was.

Needs npm and the npm registry; without npm it reports skipped. Traffic: the
npm registry (npm itself), containers with no network.
"""
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import containers_test as ct  # noqa: E402
from mcpclient import text_of  # noqa: E402

t = ct.t
RT = ct.RT
MEMORY = "@modelcontextprotocol/server-memory@2026.8.31"
TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CLIENTS = os.path.join(TOP, "tests", "e2e", "clients")
SDK_CLIENT = os.path.join(TOP, "tests", "e2e", "added_client.mjs")
SCRIPTS_PKG = os.path.join(TOP, "testdata", "npm", "scripts-pkg")
FILES = "@modelcontextprotocol/server-filesystem@2026.8.31"


def pin_of(s, name):
    with open(os.path.join(s.conf, "mcp.toml")) as fh:
        text = fh.read()
    section = text.split('name = "%s"' % name, 1)[1].split("[[server]]", 1)[0]
    for line in section.splitlines():
        if line.startswith("image = "):
            return json.loads(line[len("image = "):])
    return None


def layers_of(s, pin):
    """The image's layers, as the runtime has them"""
    ref = pin
    if RT == "docker":  # docker runs an image mcpgate made by its ID
        data = s.env["XDG_DATA_HOME"]
        with open(os.path.join(data, "mcpgate", "images",
                               "sha256-%s.manifest" % pin.split("@sha256:")[1])) as fh:
            ref = json.load(fh)["config"]["digest"]
    r = ct.rt("image", "inspect", "--format", "{{json .RootFS.Layers}}", ref, check=False)
    return json.loads(r.stdout) if r.returncode == 0 else []


def remember(pin, name, version):
    """what the test loaded, removed at the end"""
    tag = ("localhost/" if RT == "podman" else "") + "mcpgate-npm-%s:%s" % (name, version)
    ct.made["images"].append(tag)


def add(s, *args):
    """mcpgate add, accepting what this runtime cannot enforce (rootless podman
    on cgroup v1), as the person there must"""
    accept = ct.unenforced_here(None)
    return s.mcpgate("add", *args, *(["--accept-unenforced", ",".join(accept)] if accept else []))


def clients_installed(env):
    """build/e2e/clients: the pinned Inspector and SDK, installed with scripts off"""
    dest = os.path.join(TOP, "build", "e2e", "clients")
    lock = os.path.join(CLIENTS, "package-lock.json")
    stamp = os.path.join(dest, "package-lock.json")
    if os.path.exists(stamp) and open(stamp).read() == open(lock).read() and \
            os.path.isdir(os.path.join(dest, "node_modules")):
        return os.path.join(dest, "node_modules")
    os.makedirs(dest, exist_ok=True)
    for f in ("package.json", "package-lock.json"):
        shutil.copy(os.path.join(CLIENTS, f), os.path.join(dest, f))
    e = dict(env, npm_config_ignore_scripts="true")
    r = subprocess.run(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund",
                        "--prefer-offline"], cwd=dest, env=e, capture_output=True, text=True,
                       timeout=900)
    if r.returncode != 0:
        raise RuntimeError("npm ci in %s: %s" % (dest, r.stderr[-800:]))
    return os.path.join(dest, "node_modules")


def tarball(dest, changes=None):
    """testdata/npm/scripts-pkg as npm pack makes it, package.json changed by
    changes, with a file and a folder of a stranger's that are setuid and
    setgid (npm unpacks a tarball's modes as they are)"""
    with tarfile.open(dest, "w:gz") as tf:
        for name, mode in (("package/rootme", 0o6755), ("package/sgid", 0o2775)):
            info = tarfile.TarInfo(name)
            if name.endswith("sgid"):
                info.type, info.mode = tarfile.DIRTYPE, mode
                tf.addfile(info)
                info = tarfile.TarInfo(name + "/inside")
                mode = 0o4755
            body = b"#!/bin/sh\nid\n"
            info.size, info.mode = len(body), mode
            tf.addfile(info, io.BytesIO(body))
        for f in sorted(os.listdir(SCRIPTS_PKG)):
            with open(os.path.join(SCRIPTS_PKG, f), "rb") as fh:
                data = fh.read()
            if f == "package.json" and changes:
                doc = json.loads(data)
                doc.update(changes)
                data = json.dumps(doc).encode()
            info = tarfile.TarInfo("package/" + f)
            info.size = len(data)
            info.mode = 0o755 if f == "server.js" else 0o644
            tf.addfile(info, io.BytesIO(data))
    return dest


def test_scripts(base):
    """A package of testdata's own, from a local tarball, whose install script
    tries what a hostile one would: skipped by default, it never runs on the
    host; with --scripts it runs in a container, where only its own
    node_modules is writable, and what it left is in the image"""
    s = ct.Session(base, "")
    for k in ("NODE_EXTRA_CA_CERTS",):
        if k in os.environ:
            s.env[k] = os.environ[k]
    marks = ["/tmp/mcpgate-install-script-ran",
             os.path.join(s.env["HOME"], ".mcpgate-install-script-ran")]
    for m in marks:
        if os.path.exists(m):
            os.unlink(m)
    mcp = os.path.join(s.conf, "mcp.toml")
    pkg = tarball(os.path.join(s.dir, "mcpgate-test-scripts-1.0.0.tgz"))
    built = os.path.join(s.env["XDG_DATA_HOME"], "mcpgate", "npm", "%s", "node_modules",
                         "mcpgate-test-scripts")

    r = add(s, "npm:" + pkg, "--name", "skipped")
    remember(r.stdout.strip(), "skipped", "1.0.0")
    t.ok(r.returncode == 0 and "mcpgate-test-scripts has an install script, which was not run"
         in r.stderr and "--scripts" in r.stderr,
         "%s: a tarball's install script is skipped, and add says so and how to run it" % RT,
         r.stderr[-600:])
    t.ok(not any(os.path.exists(m) for m in marks) and
         not os.path.exists(os.path.join(built % "skipped", "built.json")),
         "%s: nothing it tried to write is on the host, nor in its own folder" % RT,
         [m for m in marks if os.path.exists(m)])
    # the attack: a tarball's setuid file, unpacked by npm as root into the data folder
    modes = {}
    for rel in ("rootme", "sgid", "sgid/inside"):
        p = os.path.join(built % "skipped", rel)
        modes[rel] = oct(os.lstat(p).st_mode) if os.path.lexists(p) else None
    t.ok(all(m is not None and int(m, 8) & 0o6000 == 0 for m in modes.values()),
         "%s: without --scripts too, the tarball's setuid and setgid bits are cleared where "
         "npm unpacked it (DATA/npm/NAME/node_modules)" % RT, modes)

    r = add(s, "npm:" + pkg, "--name", "scripted", "--scripts")
    remember(r.stdout.strip(), "scripted", "1.0.0")
    remember(None, "scripts", "scripted")  # the install step's own image
    t.ok(r.returncode == 0 and "[contained] > mcpgate-test-scripts@1.0.0 postinstall" in r.stderr,
         "%s: add --scripts runs the install script in a container" % RT, r.stderr[-800:])
    try:
        with open(os.path.join(built % "scripted", "built.json")) as fh:
            tries = json.load(fh)
    except (OSError, ValueError):
        tries = {}
    t.ok(not any(os.path.exists(m) for m in marks),
         "%s: what the contained script wrote to /tmp and the home folder is not on the "
         "host" % RT, [m for m in marks if os.path.exists(m)])
    # as root, the step runs as nobody: the lockfile, root's, is then refused
    # for its owner before the read-only mount is asked (EACCES)
    nobody = os.geteuid() == 0
    t.ok(tries.get("workspace") == "EROFS" and
         tries.get("lockfile") in (("EROFS", "EACCES") if nobody else ("EROFS",)) and
         tries.get("root_home") not in (None, "done"),
         "%s: in its container the install folder (the lockfile too) and the rest of the "
         "filesystem are read-only" % RT, tries)
    t.ok(tries.get("uid") == (65534 if nobody else 0),
         "%s: the install scripts run as %s, not as root" %
         (RT, "nobody" if nobody else "the person (uid 0 inside)"), tries)
    suid = os.path.join(built % "scripted", "suid")
    t.ok(tries.get("setuid") == "done" and os.path.exists(suid) and
         os.stat(suid).st_mode & 0o6000 == 0 and "cleared 1 setuid" in r.stderr,
         "%s: the setuid file it made is cleared of its bit before anything reads it" % RT,
         (tries, oct(os.stat(suid).st_mode) if os.path.exists(suid) else None))
    r = s.mcpgate("review", "scripted")
    s.mcpgate("approve", "scripted", "--tool", "built", "--on", "--effect", "read")
    c = s.serve()
    c.initialize()
    ct.wait_settled(s.state)
    c.request("tools/list", timeout=180)
    got = text_of(c.call("scripted__built", {}, timeout=60))
    c.close(timeout=60)
    t.ok('"workspace":"EROFS"' in got,
         "%s: what the script made is in the image the server runs from" % RT, got)

    with open(mcp, "rb") as fh:
        before = fh.read()
    if ct.unenforced_here(None):
        r = s.mcpgate("add", "npm:" + pkg, "--name", "unaccepted", "--scripts")
        with open(mcp, "rb") as fh:
            after = fh.read()
        t.ok(r.returncode != 0 and
             "the install scripts of 1 package(s): not run in a container here" in r.stderr and
             "--accept-unenforced" in r.stderr and after == before,
             "%s: where the limits cannot hold, the install step is refused unless accepted, "
             "as a server is" % RT, r.stderr[-500:])
    bad = tarball(os.path.join(s.dir, "fails.tgz"),
                  {"scripts": {"postinstall": "echo the script says no >&2; exit 3"}})
    r = add(s, "npm:" + bad, "--name", "fails", "--scripts")
    remember(None, "scripts", "fails")
    with open(mcp, "rb") as fh:
        after = fh.read()
    t.ok(r.returncode != 0 and "the script says no" in r.stderr and
         "an install script failed in its container" in r.stderr and after == before,
         "%s: a failing install script fails add with its output, mcp.toml as it was" % RT,
         r.stderr[-600:])
    left = ct.rt("ps", "-a", "--filter", "label=mcpgate.mcp=fails-scripts",
                 "--format", "{{.Names}}").stdout.split()
    t.ok(left == [], "%s: no container of the install step is left" % RT, left)


def test(base):
    s = ct.Session(base, "# my servers, by hand\n")
    ct.npm_env(s.env)
    mcp = os.path.join(s.conf, "mcp.toml")
    ro, rw = os.path.join(s.ws, "ro"), os.path.join(s.ws, "rw")
    with open(os.path.join(ro, "notes.txt"), "w") as fh:
        fh.write("read me through the read-only mount\n")
    os.chmod(os.path.join(ro, "notes.txt"), 0o644)

    r = add(s, "npm:" + MEMORY, "--env", "MEMORY_FILE_PATH=/tmp/memory.jsonl")
    t.ok(r.returncode == 0 and r.stdout.startswith("localhost/mcpgate-npm-server-memory@sha256:"),
         "%s: add npm:server-memory prints its pinned image" % RT, r.stderr[-600:])
    remember(r.stdout.strip(), "server-memory", "2026.8.31")
    r = add(s, "npm:" + FILES, "--name", "files", "--mount", "ro", "--mount", "rw:write",
                  "--arg", "/workspace/ro", "--arg", "/workspace/rw")
    t.ok(r.returncode == 0 and "with install scripts off" in r.stderr,
         "%s: add npm:server-filesystem, install scripts off" % RT, r.stderr[-600:])
    remember(r.stdout.strip(), "files", "2026.8.31")
    with open(mcp) as fh:
        text = fh.read()
    t.ok(text.startswith("# my servers, by hand\n") and "[server.tools" not in text and
         'env = { MEMORY_FILE_PATH = "/tmp/memory.jsonl" }' in text and
         'mounts = ["ro", "rw:write"]' in text and
         "npm integrity sha512-" in text,
         "%s: mcp.toml keeps its comment and gets both entries, every tool off, with where "
         "they came from" % RT, text[-900:])
    r = s.mcpgate("list", "--json")
    entries = {e["name"]: e for e in json.loads(r.stdout)} if r.returncode == 0 else {}
    t.ok(all(entries.get(n, {}).get("image_state") == "present" for n in ("server-memory", "files")),
         "%s: list sees both images present by their pins" % RT, r.stdout[-400:])

    mem_pin, files_pin = pin_of(s, "server-memory"), pin_of(s, "files")
    a, b = layers_of(s, mem_pin), layers_of(s, files_pin)
    t.ok(len(a) == 3 and len(b) == 3 and a[:2] == b[:2] and a[2] != b[2],
         "%s: the two images share their Debian base and node layers, and only them" % RT,
         (a, b))

    r = s.mcpgate("pull", "files")
    t.ok(r.returncode == 0 and "present" in r.stdout, "%s: pull accepts the pin" % RT,
         r.stdout + r.stderr[-300:])
    r = s.mcpgate("review", "files")
    t.ok(r.returncode == 0 and "image from: npm:@modelcontextprotocol/server-filesystem@2026.8.31"
         in r.stdout and "mount: " in r.stdout and "read_text_file" in r.stdout,
         "%s: review shows where the image came from, its mounts and its tools" % RT,
         (r.stdout + r.stderr)[-800:])
    r = s.mcpgate("review", "server-memory")
    t.ok(r.returncode == 0 and "setting (env): MEMORY_FILE_PATH=/tmp/memory.jsonl" in r.stdout,
         "%s: review lists the memory server's setting" % RT, (r.stdout + r.stderr)[-600:])

    # write_file is marked read here only so this client, which cannot confirm,
    # may call it: what is tried is the mount, not the confirmation
    r = s.mcpgate("approve", "files", "--tool", "read_text_file", "--on", "--effect", "read",
                  "--tool", "write_file", "--on", "--effect", "read")
    t.ok(r.returncode == 0, "%s: approve files" % RT, r.stderr[-400:])
    r = s.mcpgate("approve", "server-memory", "--tool", "read_graph", "--on", "--effect", "read")
    t.ok(r.returncode == 0, "%s: approve server-memory" % RT, r.stderr[-400:])

    c = s.serve()
    c.initialize()
    ct.wait_settled(s.state)
    names = sorted(x["name"] for x in c.request("tools/list", timeout=180)["result"]["tools"])
    t.ok(names == ["files__read_text_file", "files__write_file", "server-memory__read_graph"],
         "%s: a session offers what was approved" % RT, names)
    got = c.call("files__read_text_file", {"path": "/workspace/ro/notes.txt"}, timeout=60)
    t.ok("read me through" in json.dumps(got), "%s: the read-only mount is read" % RT, got)
    w = c.call("files__write_file", {"path": "/workspace/ro/x.txt", "content": "no"}, timeout=60)
    t.ok(w.get("result", {}).get("isError") is True and not os.path.exists(os.path.join(ro, "x.txt")),
         "%s: a write to the read-only mount fails" % RT, w)
    w = c.call("files__write_file", {"path": "/workspace/rw/y.txt", "content": "yes"}, timeout=60)
    made = os.path.join(rw, "y.txt")
    st = os.stat(made) if os.path.exists(made) else None
    t.ok(w.get("result", {}).get("isError") is not True and st is not None and
         (os.geteuid() != 0 or st.st_uid != 0),
         "%s: the read-write mount takes it, as the workspace's owner, not root" % RT,
         (w, st.st_uid if st else None))
    g = c.call("server-memory__read_graph", {}, timeout=60)
    t.ok("result" in g and "entities" in text_of(g), "%s: the memory server answers" % RT, g)
    c.close(timeout=60)

    # two real clients from npm: write_file asks now, as a write tool does
    r = s.mcpgate("approve", "files", "--tool", "write_file", "--effect", "write")
    t.ok(r.returncode == 0, "%s: write_file is approved as a write tool" % RT, r.stderr[-400:])
    modules = clients_installed(s.env)
    r = subprocess.run(["node", SDK_CLIENT, "--mcpgate", ct.MCPGATE, "--config", s.conf,
                        "--workspace", s.ws, "--modules", modules,
                        "--stderr", os.path.join(s.dir, "sdk-client.stderr")],
                       env=s.env, capture_output=True, text=True, timeout=420)
    for line in r.stdout.splitlines():
        m = re.match(r"^(ok|not ok) \d+ - (.*)$", line)
        if m:
            t.ok(m.group(1) == "ok", "%s: SDK client: %s" % (RT, m.group(2)), r.stdout[-1500:])
    t.ok(r.returncode == 0 and os.path.exists(os.path.join(rw, "from-sdk.txt")) and
         not os.path.exists(os.path.join(rw, "declined.txt")),
         "%s: the SDK client's session ended well: the accepted write is on disk, the "
         "declined one is not" % RT, (r.returncode, r.stdout[-600:], r.stderr[-600:]))
    inspector = os.path.join(modules, "@modelcontextprotocol", "inspector", "clients",
                             "launcher", "build", "index.js")
    config = os.path.join(s.dir, "inspector.json")
    with open(config, "w") as fh:
        json.dump({"mcpServers": {"gate": {
            "command": ct.MCPGATE,
            "args": ["serve", "--config", s.conf, "--workspace", s.ws],
            "env": {k: s.env[k] for k in ("PATH", "HOME", "XDG_STATE_HOME", "XDG_DATA_HOME")
                    if k in s.env}}}}, fh)

    def inspect(*args):
        e = dict(s.env, MCP_INSPECTOR_SECRET_STORE="memory")
        r = subprocess.run(["node", inspector, "--cli", "--config", config, "--server", "gate"] +
                           list(args), env=e, capture_output=True, text=True, timeout=300)
        try:
            return r, json.loads(r.stdout)
        except ValueError:
            return r, None
    r, listed = inspect("--method", "tools/list")
    names = sorted(x["name"] for x in (listed or {}).get("tools", []))
    t.ok(r.returncode == 0 and "files__read_text_file" in names and
         "server-memory__read_graph" in names,
         "%s: the MCP Inspector's CLI lists the approved tools through mcpgate" % RT,
         (names, r.stderr[-600:]))
    r, got = inspect("--method", "tools/call", "--tool-name", "files__read_text_file",
                     "--tool-arg", "path=/workspace/ro/notes.txt")
    t.ok(r.returncode == 0 and got is not None and "read me through" in json.dumps(got) and
         got.get("_meta", {}).get("io.mcpgate/server") == "files",
         "%s: the Inspector's CLI calls a tool through mcpgate" % RT,
         (got, r.stderr[-600:]))
    r, got = inspect("--method", "tools/call", "--tool-name", "files__write_file",
                     "--tool-arg", "path=/workspace/rw/from-inspector.txt", "content=x")
    t.ok(not os.path.exists(os.path.join(rw, "from-inspector.txt")),
         "%s: the Inspector's CLI, which cannot answer mcpgate's question, does not get a "
         "write through" % RT, (got, r.stderr[-400:]))

    # the same input, the same image
    r = add(s, "npm:" + MEMORY, "--name", "memory-again")
    remember(r.stdout.strip(), "memory-again", "2026.8.31")
    t.ok(r.returncode == 0 and r.stdout.strip().split("@")[1] == mem_pin.split("@")[1],
         "%s: the same package added again gives the same digest" % RT,
         (r.stdout, mem_pin, r.stderr[-300:]))

    with open(mcp, "rb") as fh:
        before = fh.read()
    for args, want in (
            (["npm:@modelcontextprotocol/server-memory@99.0.0", "--name", "m9"], "no version matches"),
            (["npm:@mcpgate-itest/no-such-package-%s" % ct.TAG.replace("-", "")], "no such package"),
            (["npm:" + MEMORY], "already in"),
            (["npm:is-number@7.0.0"], "has no \"bin\"")):
        r = add(s, *args)
        with open(mcp, "rb") as fh:
            after = fh.read()
        t.ok(r.returncode != 0 and want in r.stderr and after == before,
             "%s: add %s is refused (%s) and mcp.toml is left as it was" % (RT, args[0], want),
             r.stderr[-300:])


def main():
    if shutil.which("npm") is None:
        return ct.skip("no npm here (scripts/setup installs it)")
    only = sys.argv[1:]  # e.g. "scripts": that case alone

    def body(base):
        if not only or "registry" in only:
            test(base)
        if not only or "scripts" in only:
            test_scripts(base)
    return ct.run_cases("add", body)


if __name__ == "__main__":
    sys.exit(main())
