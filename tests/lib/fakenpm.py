"""A place where `mcpgate add` and `mcpgate update` run without a network:
a fake npm whose registry holds several versions of a package, this
machine's python standing in for node (the fake runtime never runs the image
it packs), the fake runtime as podman. Environment: MCPGATE, FAKES.
"""
import json
import os
import shutil
import subprocess
import sys
import time

from gwtest import run_tty  # noqa: E402
import debarchive  # noqa: E402

MCPGATE = os.path.abspath(os.environ.get("MCPGATE", "./mcpgate"))
FAKES = os.path.abspath(os.environ.get("FAKES", "build/fakes"))
SECCOMP_BASE = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                            "testdata", "seccomp", "base.json"))

# `npm view PKG@SPEC --json FIELDS...` and `npm install|ci` run in the project's
# folder (add runs npm there, never with --prefix), from
# the registry in FAKE_NPM_REGISTRY: {name: {"latest": V, "versions": {V: {...}}}}
FAKE_NPM = r'''#!/usr/bin/env python3
import json, os, sys, time
registry = json.loads(open(os.environ["FAKE_NPM_REGISTRY"]).read())
args = sys.argv[1:]
with open(os.environ["FAKE_NPM_LOG"], "a") as fh:
    fh.write(json.dumps(args) + "\n")
if args and args[0] == "view":
    spec = args[2]
    at = spec.rfind("@")
    name, version = (spec[:at], spec[at + 1:]) if at > 0 else (spec, "latest")
    pkg = registry.get(name)
    if pkg is None:
        print(json.dumps({"error": {"code": "E404", "summary": "Not Found - " + name}}))
        sys.exit(1)
    version = pkg["latest"] if version == "latest" else version
    doc = pkg["versions"].get(version)
    if doc is None:
        print(json.dumps({"error": {"code": "E404",
                                    "summary": "No match found for version " + version}}))
        sys.exit(1)
    out = {"name": name, "version": version, "bin": doc.get("bin", "index.js"),
           "dist.integrity": "sha512-" + version.replace(".", "") + "AAAA"}
    print(json.dumps(out))
    sys.exit(0)
if "install" in args or "ci" in args:
    prefix = os.getcwd()
    with open(os.path.join(prefix, "package.json")) as fh:
        deps = json.load(fh)["dependencies"]
    delay = float(os.environ.get("FAKE_NPM_DELAY", "0"))
    for name, version in deps.items():
        doc = registry[name]["versions"][version]
        dest = os.path.join(prefix, "node_modules", name)
        os.makedirs(dest, exist_ok=True)
        with open(os.path.join(dest, "package.json"), "w") as fh:
            json.dump({"name": name, "version": version, "bin": doc.get("bin", "index.js")}, fh)
        with open(os.path.join(dest, doc.get("bin", "index.js")), "w") as fh:
            fh.write("// %s@%s\n" % (name, version) + "x" * doc.get("size", 1000))
        time.sleep(delay)
    with open(os.path.join(prefix, "package-lock.json"), "w") as fh:
        json.dump({"lockfileVersion": 3, "packages": {}}, fh)
    sys.exit(0)
sys.exit(2)
'''


class Place:
    """A configuration, data and state folder, the fakes on PATH"""

    def __init__(self, d, registry):
        self.d = d
        self.bin = os.path.join(d, "bin")
        self.conf = os.path.join(d, "conf")
        self.data = os.path.join(d, "data", "mcpgate")
        self.state = os.path.join(d, "state", "mcpgate")
        self.ws = os.path.join(d, "ws")
        for p in (self.bin, self.conf, self.ws):
            os.makedirs(p)
        with open(os.path.join(self.bin, "npm"), "w") as fh:
            fh.write(FAKE_NPM)
        os.chmod(os.path.join(self.bin, "npm"), 0o755)
        os.symlink(sys.executable, os.path.join(self.bin, "node"))
        shutil.copy(os.path.join(FAKES, "fake-runtime"), os.path.join(self.bin, "podman"))
        shutil.copy(os.path.join(FAKES, "mcpgate-probe"), os.path.join(self.bin, "mcpgate-probe"))
        # Debian's packages from the tests' own archive on loopback; [mcp]
        # last, so that a test may append to it
        with open(os.path.join(self.conf, "config.toml"), "w") as fh:
            fh.write(debarchive.config_or_skip() + '[mcp]\nruntime = "podman"\n')
        self.mcp = os.path.join(self.conf, "mcp.toml")
        self.registry_path = os.path.join(d, "registry.json")
        self.npm_log = os.path.join(d, "npm.log")
        self.set_registry(registry)
        self.env = {"PATH": self.bin + ":/usr/bin:/bin", "HOME": d,
                    "XDG_DATA_HOME": os.path.join(d, "data"),
                    "XDG_STATE_HOME": os.path.join(d, "state"),
                    "MCPGATE_SECCOMP_BASE": SECCOMP_BASE,
                    "FAKE_NPM_REGISTRY": self.registry_path,
                    "FAKE_NPM_LOG": self.npm_log}

    def set_registry(self, registry):
        with open(self.registry_path, "w") as fh:
            json.dump(registry, fh)

    def text(self):
        if not os.path.exists(self.mcp):
            return None
        with open(self.mcp, encoding="utf-8", newline="") as fh:
            return fh.read()

    def write(self, text):
        with open(self.mcp, "w") as fh:
            fh.write(text)

    def run(self, *args, input=None, env=None, timeout=300):
        e = dict(self.env)
        e.update(env or {})
        return subprocess.run([MCPGATE] + list(args) + ["--config", self.conf], env=e,
                              capture_output=True, text=True, timeout=timeout, cwd=self.ws,
                              input=input)

    def run_tty(self, *args, input=""):
        """mcpgate ARGS on a terminal of its own (a pty): what it showed, its status"""
        return run_tty([MCPGATE] + list(args) + ["--config", self.conf],
                       dict(self.env, TERM="xterm"), self.ws, input, 300)

    def secret(self, *args, input=None):
        """mcpgate secret ARGS (the keychain of the data folder)"""
        return subprocess.run([MCPGATE, "secret"] + list(args), env=self.env,
                              capture_output=True, text=True, timeout=60, input=input)

    def images(self):
        """The runtime's images, one NAME@sha256:... each"""
        path = os.path.join(self.bin, "images")
        if not os.path.exists(path):
            return []
        with open(path) as fh:
            return [line.strip() for line in fh if line.strip()]

    def files(self, *parts):
        """What a folder of mcpgate's holds (names), [] when it is not there"""
        path = os.path.join(*parts)
        return sorted(os.listdir(path)) if os.path.isdir(path) else []

    def containers(self):
        d = os.path.join(self.bin, "containers")
        return sorted(os.listdir(d)) if os.path.isdir(d) else []

    def cleanup(self):
        shutil.rmtree(self.d, ignore_errors=True)
