#!/usr/bin/env python3
"""`mcpgate add` refusals without a network or a runtime (make check): a fake
npm on PATH answers `npm view` as the registry would (an unknown package, a
version that matches nothing, no bin, several bins) and fails an install.
Each refusal must name what is wrong, and leave mcp.toml byte for byte as it
was, with nothing packed. A name taken is refused before npm is asked at
all; no npm on PATH is its own error. Environment: MCPGATE.
"""
import base64
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from mcpclient import Tap  # noqa: E402

t = Tap()
MCPGATE = os.path.abspath(os.environ.get("MCPGATE", "./mcpgate"))

# what the fake registry knows: package -> npm view's document (or an error)
REGISTRY = {
    "no-bin": {"name": "no-bin", "version": "1.0.0", "dist.integrity": "sha512-AAAA"},
    "two-bins": {"name": "two-bins", "version": "2.0.0", "dist.integrity": "sha512-BBBB",
                 "bin": {"tool-a": "a.js", "tool-b": "b.js"}},
    "fails-install": {"name": "fails-install", "version": "3.0.0",
                      "dist.integrity": "sha512-CCCC", "bin": "index.js"},
}

FAKE_NPM = r'''#!/usr/bin/env python3
import json, os, sys
registry = json.loads(os.environ["FAKE_NPM_REGISTRY"])
with open(os.environ["FAKE_NPM_LOG"], "a") as fh:
    fh.write(json.dumps(sys.argv[1:] + ["cwd=" + os.getcwd(), "scripts=" + os.environ.get("npm_config_ignore_scripts", "")]) + "\n")
args = sys.argv[1:]
if args and args[0] == "view":
    spec = args[2]
    name, _, version = spec.rpartition("@") if spec.count("@") > (1 if spec.startswith("@") else 0) else (spec, "", "latest")
    doc = registry.get(name)
    if doc is None:
        print(json.dumps({"error": {"code": "E404", "summary": "Not Found - GET https://registry.npmjs.org/" + name}}))
        sys.exit(1)
    if version not in ("latest", doc["version"]):
        print(json.dumps({"error": {"code": "E404", "summary": "No match found for version " + version}}))
        sys.exit(1)
    print(json.dumps(doc))
    sys.exit(0)
if "install" in args or "ci" in args:
    sys.stderr.write("npm error code E500\nnpm error the registry is down today\n")
    sys.exit(1)
sys.exit(2)
'''


def main():
    d = tempfile.mkdtemp(prefix="mcpgate-add-test-")
    try:
        bin_dir = os.path.join(d, "bin")
        conf = os.path.join(d, "conf")
        data = os.path.join(d, "data")
        for p in (bin_dir, conf, data):
            os.makedirs(p)
        npm = os.path.join(bin_dir, "npm")
        with open(npm, "w") as fh:
            fh.write(FAKE_NPM)
        os.chmod(npm, 0o755)
        # node, as add looks for it after npm: this machine's python stands in,
        # since no refusal here gets as far as using it
        os.symlink(sys.executable, os.path.join(bin_dir, "node"))
        log = os.path.join(d, "npm.log")
        mcp = os.path.join(conf, "mcp.toml")
        text = ("# hand-written, with a comment\n[[server]]\nname = \"taken\"\n"
                "transport = \"container\"\n"
                "image = \"example.org/x@sha256:%s\"\n" % ("1" * 64))
        with open(mcp, "w") as fh:
            fh.write(text)
        env = {"PATH": bin_dir + ":/usr/bin:/bin", "HOME": d, "XDG_DATA_HOME": data,
               "XDG_STATE_HOME": os.path.join(d, "state"), "FAKE_NPM_LOG": log,
               "FAKE_NPM_REGISTRY": json.dumps(REGISTRY)}

        def add(*args, path=None):
            e = dict(env)
            if path is not None:
                e["PATH"] = path
            if os.path.exists(log):
                os.unlink(log)
            return subprocess.run([MCPGATE, "add"] + list(args) + ["--config", conf], env=e,
                                  capture_output=True, text=True, timeout=60)

        def unchanged():
            with open(mcp) as fh:
                same = fh.read() == text
            images = os.path.join(data, "mcpgate", "images")
            return same and (not os.path.isdir(images) or os.listdir(images) == [])

        def npm_calls():
            if not os.path.exists(log):
                return []
            with open(log) as fh:
                return [json.loads(line) for line in fh]

        cases = [
            (["npm:unknown-pkg"], "no such package in the npm registry", None),
            (["npm:no-bin@9.9.9"], "no version matches 9.9.9", None),
            (["npm:no-bin"], "has no \"bin\"", None),
            (["npm:two-bins"], "several commands in \"bin\" (tool-a, tool-b)", None),
            (["npm:fails-install"], "npm could not install fails-install@3.0.0: code E500; the "
                                    "registry is down today", None),
            (["npm:Not_Valid"], "is not an npm package name", None),
            (["cargo:something"], "give npm:PACKAGE[@VERSION], pypi:NAME[==VERSION]", None),
            (["npm:no-bin", "--env", "1BAD=x"], "--env 1BAD=x: give NAME=VALUE", None),
            (["npm:no-bin", "--name", "Bad Name"], "", None),
            (["npm:no-bin"], "no npm on this machine", "/nonexistent"),
            # Debian's names are checked before npm is asked anything
            (["npm:no-bin", "--with", "git", "--with", "Git"],
             "--with \"Git\" is not a Debian package's name", None),
            (["npm:no-bin", "--with", "git=1:2.39"], "--with \"git=1:2.39\" is not a Debian", None),
        ]
        for args, want, path in cases:
            r = add(*args, path=path)
            t.ok(r.returncode != 0 and want in r.stderr and unchanged(),
                 "add %s is refused (%s), mcp.toml as it was, nothing packed"
                 % (" ".join(args), want or "a bad name"), r.stderr[-400:])
        # a tree an install script shaped, left from before: npm never starts from it
        left = os.path.join(data, "mcpgate", "npm", "fails-install", "node_modules")
        outside = os.path.join(d, "outside")
        os.makedirs(os.path.join(outside, "keep"))
        with open(os.path.join(outside, "keep", "file"), "w") as fh:
            fh.write("the person's\n")
        os.makedirs(os.path.join(left, "a", "b"))
        os.symlink(outside, os.path.join(left, "a", "to-outside"))
        os.symlink(os.path.join(outside, "keep", "file"), os.path.join(left, "a", "b", "to-file"))
        os.mkfifo(os.path.join(left, "a", "pipe"))
        with open(os.path.join(left, ".package-lock.json"), "w") as fh:
            fh.write("{}")
        r = add("npm:fails-install")
        t.ok(not os.path.lexists(left) and
             os.path.exists(os.path.join(outside, "keep", "file")),
             "a node_modules left from before is removed before npm runs, its links not "
             "followed", r.stderr[-300:])
        calls = npm_calls()
        t.ok(calls and all(c[-1] == "scripts=true" for c in calls) and
             any("--ignore-scripts" in c for c in calls if "install" in c),
             "npm always runs with install scripts off", calls)
        # a local tarball: read here, without npm view; nothing of it runs
        def tarball(name, files, raw=None):
            path = os.path.join(d, name)
            if raw is not None:
                with open(path, "wb") as fh:
                    fh.write(raw)
                return path
            with tarfile.open(path, "w:gz") as tf:
                for member, body in files.items():
                    info = tarfile.TarInfo(member)
                    data = body.encode()
                    info.size = len(data)
                    tf.addfile(info, io.BytesIO(data))
            return path
        good = {"name": "local-pkg", "version": "1.2.3", "bin": "server.js",
                "scripts": {"postinstall": "node -e 'require(\"fs\").writeFileSync(\"/tmp/x\", \"\")'"}}
        for name, files, raw, want in (
                ("garbage.tgz", None, b"not a tarball at all", "is not a gzipped tar"),
                ("empty.tgz", {"package/README": "no manifest"}, None,
                 "holds no package.json below one folder"),
                ("nobin.tgz", {"package/package.json": json.dumps(
                    {"name": "local-pkg", "version": "1.0.0"})}, None, "has no \"bin\""),
                ("badver.tgz", {"package/package.json": json.dumps(
                    {"name": "local-pkg", "version": "1.0.0+x/../y", "bin": "s.js"})}, None,
                 "has no \"version\" of letters, digits"),
                ("badname.tgz", {"package/package.json": json.dumps(
                    {"name": "../Evil", "version": "1.0.0", "bin": "s.js"})}, None,
                 "has no valid \"name\"")):
            path = tarball(name, files or {}, raw)
            r = add("npm:" + path)
            t.ok(r.returncode != 0 and want in r.stderr and unchanged() and npm_calls() == [],
                 "add of the tarball %s is refused (%s) before npm is asked, mcp.toml as it was"
                 % (name, want), r.stderr[-300:])
        path = tarball("local-pkg-1.2.3.tgz", {"package/package.json": json.dumps(good),
                                               "package/server.js": "// a server\n"})
        with open(path, "rb") as fh:
            want_integrity = "sha512-" + base64.b64encode(hashlib.sha512(fh.read()).digest()).decode()
        r = add("npm:" + os.path.relpath(path))
        calls = npm_calls()
        with open(os.path.join(data, "mcpgate", "npm", "local-pkg", "package.json")) as fh:
            wrote = json.load(fh)
        t.ok(r.returncode != 0 and "resolves to local-pkg@1.2.3 (%s)" % want_integrity in r.stderr
             and [c[0] for c in calls] == ["install"] and
             wrote.get("dependencies") == {"local-pkg": "file:" + os.path.realpath(path)} and
             unchanged(),
             "a good tarball: its name, version and npm integrity read from it, installed from "
             "file:PATH with scripts off (the fake npm then fails)",
             (r.stderr[-400:], calls, wrote))
        # the entry add would write is read as `mcpgate check` reads it
        # before npm is asked anything: a special address, a mount out of
        # the workspace, one of the workspace root, a network name that is
        # no host
        for args, want in (
                (["--network", "127.0.0.1"], "\"network\" entry \"127.0.0.1\" is refused by the "
                 "egress proxy: a special address is always refused (127.0.0.0/8 loopback)"),
                (["--mount", "../up:write"], "\"mounts\" entry \"../up:write\" has a \"..\" "
                 "component: a mount stays inside the workspace"),
                (["--network", "example.org", "--mount", "/etc:write"], "\"mounts\" entry "
                 "\"/etc:write\""),
                (["--network", "exa mple.org"], "\"network\" entry \"exa mple.org\"")):
            shutil.rmtree(os.path.join(data, "mcpgate", "npm", "fails-install"),
                          ignore_errors=True)
            r = add("npm:fails-install", *args)
            t.ok(r.returncode != 0 and want in r.stderr and
                 "the entry add would write is refused, so nothing was fetched or installed"
                 in r.stderr and unchanged() and npm_calls() == [] and
                 not os.path.exists(os.path.join(data, "mcpgate", "npm", "fails-install",
                                                 "package.json")),
                 "add %s is refused as check refuses it, before npm runs at all" % " ".join(args),
                 (r.stderr[-400:], npm_calls()))
        # npm installs in its folder, as a plain `npm install` there does:
        # no --prefix, which would move npm's global npmrc (and its cafile)
        r = add("npm:fails-install")
        installs = [c for c in npm_calls() if "install" in c or "ci" in c]
        work = os.path.realpath(os.path.join(data, "mcpgate", "npm", "fails-install"))
        t.ok(installs and all("--prefix" not in c and not any(a.startswith("--prefix=")
                                                               for a in c) and
                              "cwd=" + work in c for c in installs),
             "npm install runs in the server's npm folder, without --prefix", installs)
        r = add("npm:no-bin", "--name", "taken")
        t.ok(r.returncode != 0 and "a server named taken is already in" in r.stderr and
             unchanged() and npm_calls() == [],
             "a name taken is refused before npm is asked anything", r.stderr[-300:])
        r = add("npm:no-bin", "--with", "Not.Debian")
        t.ok(r.returncode != 0 and "is not a Debian package's name" in r.stderr and
             unchanged() and npm_calls() == [],
             "a --with that is not a Debian name is refused before npm is asked anything",
             r.stderr[-300:])
        r = add()
        t.ok(r.returncode == 2 and "what to add?" in r.stderr, "no source: a usage error",
             r.stderr)

        # the MCP registry's server.json, offline
        def server_json(name, packages):
            path = os.path.join(d, name)
            with open(path, "w") as fh:
                json.dump({"$schema": "https://static.modelcontextprotocol.io/schemas/"
                                      "2025-09-29/server.schema.json",
                           "name": "io.github.example/" + name.replace(".json", ""),
                           "description": "d", "version": "1.0.0", "packages": packages}, fh)
            return path
        npm_pkg = {"registryType": "npm", "identifier": "fails-install", "version": "3.0.0",
                   "transport": {"type": "stdio"},
                   "environmentVariables": [
                       {"name": "MODE", "default": "fast"},
                       {"name": "API_TOKEN", "isSecret": True, "isRequired": True},
                       {"name": "REGION", "isRequired": True}]}
        f = server_json("weather.json", [npm_pkg])
        r = add("--server-json", f)
        t.ok(r.returncode != 0 and "the setting REGION is required and has no default: give "
             "--env REGION=VALUE" in r.stderr and unchanged() and npm_calls() == [],
             "server.json: a required setting without a default must be given", r.stderr[-300:])
        r = add("--server-json", f, "--env", "REGION=eu")
        calls = npm_calls()
        t.ok(r.returncode != 0 and calls and calls[0][:3] == ["view", "--json", "fails-install@3.0.0"]
             and "declares the secret API_TOKEN: it is not set here" in r.stderr and unchanged(),
             "server.json: its npm package and version are what is installed; a secret is "
             "named, never set", (calls[:1], r.stderr[-400:]))
        image = "ghcr.io/example/weather@sha256:" + "ab" * 32
        f = server_json("weather-oci.json", [
            {"registryType": "oci", "identifier": image, "transport": {"type": "stdio"},
             "environmentVariables": [{"name": "MODE", "default": "fast"},
                                      {"name": "ODD", "default": 'a"b\\c\tz'}],
             "packageArguments": [{"type": "positional", "value": "--stdio"}]}])
        r = add("--server-json", f)
        with open(mcp) as fh:
            now = fh.read()
        import tomllib
        odd = [x.get("env", {}).get("ODD") for x in tomllib.loads(now).get("server", [])]
        t.ok(odd[-1:] == ['a"b\\c\tz'], "a setting with quotes, a backslash and a tab is "
             "written so that TOML reads it back the same", odd)
        t.ok(r.returncode == 0 and now.startswith(text) and 'name = "weather-oci"' in now and
             'image = "%s"' % image in now and 'MODE = "fast"' in now and
             'args = ["--stdio"]' in now and "[server.tools" not in now,
             "server.json with an OCI image pinned by digest: its entry, tools off, the "
             "file's own text kept", (r.stderr[-300:], now[len(text):]))
        with open(mcp, "w") as fh:
            fh.write(text)
        for packages, want in (
                ([{"registryType": "oci", "identifier": "ghcr.io/example/w", "version": "1.0"}],
                 "is not pinned by digest"),
                ([{"registryType": "pypi", "identifier": "w", "version": "1.0"}],
                 "no package add can take"),
                ([], "no package add can take")):
            f = server_json("bad.json", packages)
            r = add("--server-json", f)
            t.ok(r.returncode != 0 and want in r.stderr and unchanged(),
                 "server.json refused: %s" % want, r.stderr[-300:])
        # no mcp.toml yet: config.toml (the runtime) is read all the same
        fresh = os.path.join(d, "fresh")
        os.makedirs(fresh)
        with open(os.path.join(fresh, "config.toml"), "w") as fh:
            fh.write('[mcp]\nruntime = "lxc"\n')
        r = subprocess.run([MCPGATE, "add", "npm:no-bin", "--config", fresh], env=env,
                           capture_output=True, text=True, timeout=60)
        t.ok(r.returncode != 0 and "config.toml" in r.stderr and "lxc" in r.stderr and
             not os.path.exists(os.path.join(fresh, "mcp.toml")),
             "without an mcp.toml, config.toml still counts (its runtime), and nothing is "
             "written", r.stderr[-300:])
        r = add("--server-json", os.path.join(d, "absent.json"))
        t.ok(r.returncode != 0 and "absent.json" in r.stderr and unchanged(),
             "a server.json that is not there is named", r.stderr[-200:])
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
