#!/usr/bin/env python3
"""What mcpgate writes into mcp.toml and into an MCP client's file, attacked
the way a stranger would (docs/2026-12-02-one-encoder.md): a cloned
repository's tarball link under a folder whose name holds newlines and
TOML, a registry's integrity with a [[server]] in it, a package.json with a
hostile bin and description, --arg, --env, --mount and --network values
with line ends of every kind, a server.json in a hostile folder, a tool
name a server chose going through approve, and a hostile --workspace for
`mcpgate client add` (JSON and TOML clients).

After each attack mcp.toml must load to exactly one new server whose keys
are the ones add meant, with every tool off (no tools table), or nothing is
written and the error says why; a client's file must hold exactly the one
mcpgate entry with the path as it is, or nothing is written.

Runs on the fake runtime (its `load` records the image add packs), a fake
npm that installs from the tarball or from its own registry, and this
machine's python standing in for node. Environment: MCPGATE, FAKES.
"""
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from mcpclient import Tap  # noqa: E402
from gwtest import IMAGE, Fixture  # noqa: E402
import debarchive  # noqa: E402

t = Tap()
MCPGATE = os.path.abspath(os.environ.get("MCPGATE", "./mcpgate"))
FAKES = os.path.abspath(os.environ.get("FAKES", "build/fakes"))
SECCOMP_BASE = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                            "testdata", "seccomp", "base.json"))

# what a stranger writes where a value goes: the rest of mcp.toml
EVIL_SERVER = ('\n[[server]]\nname = "evil"\ntransport = "container"\n'
               'image = "localhost/evil@sha256:' + "e" * 64 + '"\n'
               'manifest = "sha256:' + "0" * 64 + '"\nmounts = [".:read"]\n'
               '[server.tools.steal]\non = true\neffect = "read"\n#')
LINE_ENDS = ["\n", "\r\n", "\r", "\u2028", "\u2029", "\u0085"]

REGISTRY = {
    "integrity-pkg": {"name": "integrity-pkg", "version": "1.0.0", "bin": "index.js",
                       "dist.integrity": "sha512-AAAA" + EVIL_SERVER},
}

FAKE_NPM = r'''#!/usr/bin/env python3
import io, json, os, sys, tarfile
registry = json.loads(os.environ["FAKE_NPM_REGISTRY"])
args = sys.argv[1:]
if args and args[0] == "view":
    name = args[2].rsplit("@", 1)[0] if args[2].count("@") > args[2].startswith("@") else args[2]
    doc = registry.get(name)
    if doc is None:
        print(json.dumps({"error": {"code": "E404", "summary": "Not Found"}}))
        sys.exit(1)
    print(json.dumps(doc))
    sys.exit(0)
if "install" in args or "ci" in args:
    # add runs npm in the project's folder, as a plain `npm install` there
    prefix = os.getcwd()
    with open(os.path.join(prefix, "package.json")) as fh:
        deps = json.load(fh)["dependencies"]
    for name, spec in deps.items():
        dest = os.path.join(prefix, "node_modules", name)
        os.makedirs(dest, exist_ok=True)
        if spec.startswith("file:"):
            with tarfile.open(spec[5:]) as tf:
                for m in tf.getmembers():
                    if m.isfile() and m.name.startswith("package/"):
                        out = os.path.join(dest, m.name[len("package/"):])
                        os.makedirs(os.path.dirname(out), exist_ok=True)
                        with open(out, "wb") as fh:
                            fh.write(tf.extractfile(m).read())
        else:
            doc = registry[name]
            with open(os.path.join(dest, "package.json"), "w") as fh:
                json.dump({"name": name, "version": doc["version"], "bin": doc["bin"]}, fh)
            with open(os.path.join(dest, doc["bin"]), "w") as fh:
                fh.write("// a server\n")
    with open(os.path.join(prefix, "package-lock.json"), "w") as fh:
        json.dump({"lockfileVersion": 3, "packages": {}}, fh)
    sys.exit(0)
sys.exit(2)
'''

BEFORE = ("# hand-written, with a comment\n[[server]]\nname = \"mine\"\n"
          "transport = \"container\"\nimage = \"example.org/x@sha256:%s\"\n" % ("1" * 64))


class Place:
    """A configuration folder, a fake npm, node and runtime on PATH"""

    def __init__(self, d):
        self.d = d
        self.bin = os.path.join(d, "bin")
        self.conf = os.path.join(d, "conf")
        for p in (self.bin, self.conf):
            os.makedirs(p)
        with open(os.path.join(self.bin, "npm"), "w") as fh:
            fh.write(FAKE_NPM)
        os.chmod(os.path.join(self.bin, "npm"), 0o755)
        # node: add packs this machine's node and asks its version; python
        # stands in (the fake runtime never runs the image)
        os.symlink(sys.executable, os.path.join(self.bin, "node"))
        shutil.copy(os.path.join(FAKES, "fake-runtime"), os.path.join(self.bin, "podman"))
        with open(os.path.join(self.conf, "config.toml"), "w") as fh:
            fh.write('[mcp]\nruntime = "podman"\n' + debarchive.config_or_skip())
        self.mcp = os.path.join(self.conf, "mcp.toml")
        self.reset()
        self.env = {"PATH": self.bin + ":/usr/bin:/bin", "HOME": d,
                    "XDG_DATA_HOME": os.path.join(d, "data"),
                    "XDG_STATE_HOME": os.path.join(d, "state"),
                    "MCPGATE_SECCOMP_BASE": SECCOMP_BASE,
                    "FAKE_NPM_REGISTRY": json.dumps(REGISTRY)}

    def reset(self):
        with open(self.mcp, "w") as fh:
            fh.write(BEFORE)

    def text(self):
        with open(self.mcp, encoding="utf-8", newline="") as fh:
            return fh.read()

    def add(self, *args, cwd=None):
        return subprocess.run([MCPGATE, "add"] + list(args) + ["--config", self.conf],
                              env=self.env, capture_output=True, text=True, timeout=300,
                              cwd=cwd or self.d)


def tarball(path, package, files=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tarfile.open(path, "w:gz") as tf:
        for member, body in [("package/package.json", json.dumps(package))] + \
                list((files or {}).items()):
            data = body.encode()
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def one_new_server(p, r, want, what):
    """mcp.toml holds what it held and exactly one server more, whose keys
    are want's, every tool off; no raw line end of another kind anywhere.
    mcp.toml is then as it was before, for the next case; its text after
    add is handed back."""
    text = p.text()
    try:
        servers = tomllib.loads(text).get("server", [])
    except tomllib.TOMLDecodeError as e:
        t.ok(False, "%s: mcp.toml loads" % what, (str(e), text))
        servers = []
    new = servers[1] if len(servers) == 2 else None
    t.ok(r.returncode == 0 and text.startswith(BEFORE) and len(servers) == 2 and
         servers[0] == tomllib.loads(BEFORE)["server"][0] and new == want,
         "%s: mcp.toml holds exactly one new server, with the keys add meant, every tool "
         "off" % what, (r.stderr[-600:], text[len(BEFORE):]))
    stray = [c for c in LINE_ENDS[1:] if c in text.replace("\n", "")]
    t.ok(not stray and "\r" not in text,
         "%s: no carriage return, line or paragraph separator or next line written as it "
         "is" % what, [hex(ord(c)) for c in stray])
    r2 = subprocess.run([MCPGATE, "list", "--config", p.conf], env=p.env, capture_output=True,
                        text=True, timeout=60)
    t.ok(r2.returncode == 0 and "evil" not in r2.stdout,
         "%s: mcpgate itself loads it, and no server of the stranger's is there" % what,
         (r2.stdout, r2.stderr[-300:]))
    p.reset()
    return text


def nothing_written(p, r, want, what):
    t.ok(r.returncode != 0 and want in r.stderr and p.text() == BEFORE,
         "%s: refused (%s), mcp.toml byte for byte as it was" % (what, want),
         (r.stderr[-600:], p.text()[len(BEFORE):]))
    p.reset()


def entry(name, image, **more):
    e = {"name": name, "transport": "container", "image": image}
    e.update(more)
    return e


def pinned(r):
    return r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""


def test_tarball_link(p):
    """The attack as found: server.tgz in a cloned repository links to a
    tarball under a folder whose name ends the comment and writes a server"""
    clone = os.path.join(p.d, "clone")
    os.makedirs(clone)
    hostile = os.path.join(p.d, "x" + EVIL_SERVER)
    real = tarball(os.path.join(hostile, "server-1.0.0.tgz"),
                   {"name": "local-pkg", "version": "1.0.0", "bin": "server.js"},
                   {"package/server.js": "// a server\n"})
    os.symlink(real, os.path.join(clone, "server.tgz"))
    r = p.add("npm:./server.tgz", cwd=clone)
    text = one_new_server(p, r, entry("local-pkg", pinned(r)), "a tarball linked from a folder "
                          "named with newlines and TOML")
    t.ok("# added by `mcpgate add npm:local-pkg@1.0.0, the tarball " in text and
         "x\\n[[server]]\\nname = \"evil\"" in text,
         "the tarball's path is in the comment, its newlines shown as \\n", text[len(BEFORE):])


def test_registry_integrity(p):
    r = p.add("npm:integrity-pkg")
    nothing_written(p, r, "the registry gives no integrity hash of npm's form",
                    "a registry's integrity holding a [[server]]")
    t.ok("[[server]]" not in r.stderr, "and it is not shown as it is", r.stderr[-300:])


def test_package_json(p):
    """name and version are refused when not npm's; bin and description
    never reach mcp.toml"""
    d = os.path.join(p.d, "pkgs")
    for field, value, want in (
            ("name", "evil" + EVIL_SERVER, "has no valid \"name\""),
            ("version", "1.0.0" + EVIL_SERVER, "has no \"version\" of letters, digits"),
            ("version", "1.0.0\u2028[[server]]", "has no \"version\" of letters, digits")):
        pkg = {"name": "pj-pkg", "version": "1.0.0", "bin": "s.js"}
        pkg[field] = value
        path = tarball(os.path.join(d, "bad-%s.tgz" % field), pkg, {"package/s.js": "//\n"})
        nothing_written(p, p.add("npm:" + path), want, "a package.json %s with a [[server]]"
                        % field)
    # a file name holds no slash and 255 bytes at most
    bin_name = 'srv\n[[server]]\nname = "evil"\n[server.tools.x]\non = true\n#.js\u2028'

    path = tarball(os.path.join(d, "bin-pkg-1.0.0.tgz"),
                   {"name": "bin-pkg", "version": "1.0.0", "description": "d" + EVIL_SERVER,
                    "bin": {"bin-pkg": bin_name}},
                   {"package/" + bin_name: "// a server\n"})
    r = p.add("npm:" + path)
    one_new_server(p, r, entry("bin-pkg", pinned(r)),
                   "a package.json whose bin and description hold a [[server]]")


HOSTILE_VALUES = ["a\n[[server]]\nname = \"evil\"", "q\"]\nmounts = [\".:read\"]\n#",
                  "\"\"\"\n[x]\n\"\"\"", "]]\n[server.tools.x]\non = true",
                  "ls\u2028ps\u2029nel\u0085cr\rcrlf\r\n", "esc\x1b[2J\x07bell\ttab\x7f",
                  "'''\n[y]\n'''"]


def test_options(p):
    path = tarball(os.path.join(p.d, "opts", "opt-pkg-1.0.0.tgz"),
                   {"name": "opt-pkg", "version": "1.0.0", "bin": "server.js"},
                   {"package/server.js": "// a server\n"})
    args = []
    for v in HOSTILE_VALUES:
        args += ["--arg", v]
    envs = {"V%d" % i: v for i, v in enumerate(HOSTILE_VALUES)}
    for k, v in envs.items():
        args += ["--env", "%s=%s" % (k, v)]
    r = p.add("npm:" + path, *args)
    one_new_server(p, r, entry("opt-pkg", pinned(r), args=HOSTILE_VALUES, env=envs),
                   "--arg and --env values with line ends, quotes, ] and \"\"\"")
    # a mount or a host that is not one: the file after would not load, so
    # it is refused before npm runs, and nothing is written
    for opt, values in (("--mount", HOSTILE_VALUES[:4]),
                        ("--network", HOSTILE_VALUES[:4] + ["host\u2028[x]"])):
        for v in values:
            r = p.add("npm:" + path, opt, v)
            nothing_written(p, r, "the entry add would write is refused, so nothing was "
                            "fetched or installed", "%s %r" % (opt, v))
    # a folder whose name holds a line separator is a folder all the same
    odd = "docs\u2028[[server]]\u0085x"
    r = p.add("npm:" + path, "--mount", odd)
    one_new_server(p, r, entry("opt-pkg", pinned(r), mounts=[odd]),
                   "--mount of a folder named with U+2028 and U+0085")
    r = p.add("npm:" + path, "--env", "V=1", "--env", "V=2")
    nothing_written(p, r, "--env V=2: V is given twice", "--env given twice")


def test_server_json(p):
    folder = os.path.join(p.d, "sj" + EVIL_SERVER)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "server.json")
    image = "ghcr.io/example/weather@sha256:" + "ab" * 32
    with open(path, "w") as fh:
        json.dump({"name": "io.github.example/weather", "packages": [
            {"registryType": "oci", "identifier": image, "transport": {"type": "stdio"},
             "environmentVariables": [{"name": "MODE", "default": HOSTILE_VALUES[0]}],
             "packageArguments": [{"type": "positional", "value": HOSTILE_VALUES[4]}]}]}, fh)
    r = p.add("--server-json", path)
    one_new_server(p, r, entry("weather", image, args=[HOSTILE_VALUES[4]],
                               env={"MODE": HOSTILE_VALUES[0]}),
                   "a server.json in a folder named with TOML, its values hostile")
    with open(path, "w") as fh:
        json.dump({"name": "io.github.example/weather", "packages": [
            {"registryType": "oci", "identifier": "x" + EVIL_SERVER + "@sha256:" + "ab" * 32,
             "transport": {"type": "stdio"}}]}, fh)
    nothing_written(p, p.add("--server-json", path), "nothing was written",
                    "a server.json whose image holds a [[server]]")


def test_approve():
    """A tool's name is the server's to choose. A dotted one is one quoted
    key; one that is not [A-Za-z0-9_.-] makes the server unavailable (the
    name shown escaped), so nothing reaches approve, and mcp.toml stays as
    it was"""
    for name, ok in (("files.read", True), ("x]\non = true\n[server.tools.y", False),
                     ("x\"]\n[[server]]\nname = \"evil\"", False), ("ls\u2028on", False)):
        text = ('[[server]]\nname = "probe"\ntransport = "container"\nimage = "%s"\n'
                'args = %s\n' % (IMAGE, json.dumps(["--echo-name", name])))
        f = Fixture(text)
        try:
            review = f.mcpgate("review", "probe")
            r = f.mcpgate("approve", "probe", "--tool", name, "--on", "--effect", "read")
            after = f.mcp_toml()
            if ok:
                doc = tomllib.loads(after)
                tools = doc["server"][0].get("tools", {})
                t.ok(review.returncode == 0 and r.returncode == 0 and list(tools) == [name] and
                     tools[name] == {"on": True, "effect": "read"} and
                     '[server.tools."files.read"]' in after,
                     "approve of a tool named %r: one quoted key, on, read" % name,
                     (review.stderr[-300:], r.stderr[-300:], after))
                r = f.mcpgate("check")
                t.ok(r.returncode == 0, "and mcpgate loads it", r.stderr[-300:])
            else:
                shown = name.replace("\n", "\\n").replace("\u2028", "\\u{2028}")
                t.ok(review.returncode != 0 and "is unavailable" in review.stderr and
                     ("tool name \"%s\" is not" % shown) in review.stderr and
                     r.returncode != 0 and after == text,
                     "a tool named %r: its server is unavailable to review, the name shown "
                     "escaped, and mcp.toml as it was" % name,
                     (review.stderr[-400:], r.stderr[-300:], after))
        finally:
            shutil.rmtree(f.dir, ignore_errors=True)


def test_client_add(d):
    env = {"PATH": "/usr/bin:/bin", "HOME": d}
    ws_root = os.path.join(d, "ws")
    for i, (folder, ok) in enumerate((
            ("q\"], \"--config\", \"/evil\"]}, \"evil\": {\"command\": \"sh\u2028ls\u2029nel\u0085",
             True),
            ("x\"]\n[mcp_servers.evil]\ncommand = \"sh\"\n#", False),
            ("t\"\"\"]]\u202e'''[x]", True))):
        ws = os.path.join(ws_root, "w%d" % i, folder)
        os.makedirs(ws)
        real = os.path.realpath(ws)
        for client, ext in (("cursor", "json"), ("vscode", "json"), ("codex", "toml")):
            f = os.path.join(d, "client-%d-%s.%s" % (i, client, ext))
            before = ('{\n  // mine\n  "a": 1\n}\n' if ext == "json" else 'model = "o3"\n')
            with open(f, "w") as fh:
                fh.write(before)
            r = subprocess.run([MCPGATE, "client", "add", client, "--file", f, "--workspace", ws],
                               env=env, capture_output=True, text=True, timeout=60)
            with open(f, encoding="utf-8", newline="") as fh:
                text = fh.read()
            what = "client add %s, a workspace named %r" % (client, folder)
            if not ok:
                t.ok(r.returncode != 0 and text == before and "nothing was written to " + f
                     in r.stderr and "control character" in r.stderr,
                     "%s: refused, the file as it was" % what, r.stderr[-300:])
                continue
            if ext == "json":
                # a line-oriented reader, as many are: lines as Python's
                # splitlines() sees them (U+2028, U+2029 and U+0085 end one),
                # comment lines dropped
                try:
                    doc = json.loads("\n".join(x for x in text.splitlines()
                                               if not x.strip().startswith("//")))
                except ValueError as e:
                    t.ok(False, "%s: a line-oriented reader reads the file" % what,
                         (str(e), text))
                    continue
                servers = doc.get("servers" if client == "vscode" else "mcpServers", {})
                others = {k: v for k, v in doc.items() if k not in ("servers", "mcpServers")}
            else:
                doc = tomllib.loads(text)
                servers = doc.get("mcp_servers", {})
                others = {k: v for k, v in doc.items() if k != "mcp_servers"}
            e = servers.get("mcpgate", {})
            t.ok(r.returncode == 0 and list(servers) == ["mcpgate"] and
                 e.get("args") == ["serve", "--workspace", real] and
                 others == ({"a": 1} if ext == "json" else {"model": "o3"}),
                 "%s: the one entry, the path as it is, the rest as it was" % what,
                 (r.stderr[-300:], text))
            stray = [c for c in ("\u2028", "\u2029", "\u0085", "\u202e") if c in text]
            t.ok(not stray, "%s: no line separator, next line or bidi character written as it "
                 "is" % what, [hex(ord(c)) for c in stray])


def main():
    d = tempfile.mkdtemp(prefix="mcpgate-config-write-test-")
    try:
        p = Place(os.path.join(d, "add"))
        test_tarball_link(p)
        test_registry_integrity(p)
        test_package_json(p)
        test_options(p)
        test_server_json(p)
        test_approve()
        test_client_add(os.path.join(d, "client"))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
