#!/usr/bin/env python3
"""`mcpgate add` reads the person's npm configuration as `npm install` does
(issue 24, item 7): the real npm of this machine against a registry stub on
loopback that speaks HTTPS with a certificate of a CA of the test's own. The
registry is named in the user's npmrc (~/.npmrc), the CA's file in the global
npmrc (PREFIX/etc/npmrc, PREFIX from the environment as npm reads it): an npm
that ignores either cannot install. add is expected to install and finish,
on the fake runtime (fakes/README.md) as podman. Skipped (77) without npm,
node or openssl. Environment: MCPGATE, FAKES.
"""
import base64
import hashlib
import http.server
import io
import json
import os
import shutil
import ssl
import subprocess
import sys
import tarfile
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from mcpclient import Tap  # noqa: E402
import debarchive  # noqa: E402

t = Tap()
FAKES = os.path.abspath(os.environ.get("FAKES", "build/fakes"))
SECCOMP_BASE = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                            "testdata", "seccomp", "base.json"))
MCPGATE = os.path.abspath(os.environ.get("MCPGATE", "./mcpgate"))
NAME = "npmrc-probe"


def tarball():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for member, body in (("package/package.json", json.dumps(
                {"name": NAME, "version": "1.0.0", "bin": {NAME: "index.js"}})),
                ("package/index.js", "#!/usr/bin/env node\n// a server\n")):
            data = body.encode()
            info = tarfile.TarInfo(member)
            info.size = len(data)
            info.mode = 0o644
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def make_certs(d):
    ca_key, ca, key, csr, crt = (os.path.join(d, x) for x in
                                 ("ca.key", "ca.pem", "srv.key", "srv.csr", "srv.pem"))
    ext = os.path.join(d, "ext.cnf")
    with open(ext, "w") as fh:
        fh.write("subjectAltName = IP:127.0.0.1\nbasicConstraints = CA:FALSE\n")
    run = lambda *a: subprocess.run(["openssl"] + list(a), check=True, capture_output=True)
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca,
        "-days", "2", "-subj", "/CN=mcpgate test CA", "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj",
        "/CN=127.0.0.1")
    run("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", crt,
        "-days", "2", "-extfile", ext)
    # the server sends its chain, the CA included, as a company's proxy does:
    # without the CA's file npm says SELF_SIGNED_CERT_IN_CHAIN
    chain = os.path.join(d, "chain.pem")
    with open(chain, "w") as out, open(crt) as a, open(ca) as b:
        out.write(a.read() + b.read())
    return ca, chain, key


def serve(crt, key, tgz):
    seen = []

    class Registry(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            seen.append(self.path)
            port = self.server.server_address[1]
            if self.path.split("?")[0] == "/" + NAME:
                doc = {"name": NAME, "dist-tags": {"latest": "1.0.0"}, "versions": {"1.0.0": {
                    "name": NAME, "version": "1.0.0", "bin": {NAME: "index.js"},
                    "dist": {"tarball": "https://127.0.0.1:%d/%s/-/%s-1.0.0.tgz" % (port, NAME, NAME),
                             "integrity": "sha512-" + base64.b64encode(
                                 hashlib.sha512(tgz).digest()).decode(),
                             "shasum": hashlib.sha1(tgz).hexdigest()}}}}
                body, kind = json.dumps(doc).encode(), "application/json"
            elif self.path == "/%s/-/%s-1.0.0.tgz" % (NAME, NAME):
                body, kind = tgz, "application/octet-stream"
            else:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Registry)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(crt, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, seen


def main():
    npm, node, openssl = (shutil.which(x) for x in ("npm", "node", "openssl"))
    if not (npm and node and openssl):
        print("ok 1 # SKIP no npm, node or openssl on PATH")
        return 77
    d = tempfile.mkdtemp(prefix="mcpgate-npmrc-test-")
    srv = None
    try:
        ca, crt, key = make_certs(d)
        tgz = tarball()
        srv, seen = serve(crt, key, tgz)
        port = srv.server_address[1]
        bin_dir, conf, home, prefix = (os.path.join(d, x) for x in ("bin", "conf", "home", "global"))
        for p in (bin_dir, conf, home, os.path.join(prefix, "etc")):
            os.makedirs(p)
        # npm, node and the fake runtime as podman on PATH
        os.symlink(os.path.realpath(npm), os.path.join(bin_dir, "npm"))
        os.symlink(os.path.realpath(node), os.path.join(bin_dir, "node"))
        shutil.copy(os.path.join(FAKES, "fake-runtime"), os.path.join(bin_dir, "podman"))
        with open(os.path.join(conf, "config.toml"), "w") as fh:
            fh.write('[mcp]\nruntime = "podman"\n' + debarchive.config_or_skip())
        with open(os.path.join(home, ".npmrc"), "w") as fh:
            fh.write("registry=https://127.0.0.1:%d/\n" % port)
        with open(os.path.join(prefix, "etc", "npmrc"), "w") as fh:
            fh.write("cafile=%s\n" % ca)
        env = {"PATH": bin_dir + ":/usr/bin:/bin", "HOME": home, "PREFIX": prefix,
               "MCPGATE_SECCOMP_BASE": SECCOMP_BASE,
               "XDG_DATA_HOME": os.path.join(d, "data"), "XDG_STATE_HOME": os.path.join(d, "state")}
        # an npm whose global npmrc is not PREFIX/etc/npmrc (Debian's npm 9
        # reads /etc/npmrc whatever PREFIX says) cannot be given the test's
        # global npmrc: what this test shows is not there to show
        where = subprocess.run([npm, "config", "get", "globalconfig"], env=env,
                               capture_output=True, text=True, timeout=60).stdout.strip()
        if where != os.path.join(prefix, "etc", "npmrc"):
            print("ok 1 # SKIP this npm reads its global npmrc at %s, not under PREFIX"
                  % (where or "a place it does not say"))
            return 77
        # the setup as the person has it: plain npm reads both files
        plain = os.path.join(d, "plain")
        os.makedirs(plain)
        with open(os.path.join(plain, "package.json"), "w") as fh:
            fh.write('{"name": "plain", "version": "1.0.0"}\n')
        # each run with a cache of its own: what one fetched is not there for another;
        # no retries, so a refused connection fails at once
        def env_with(cache):
            return dict(env, npm_config_cache=os.path.join(d, cache), npm_config_fetch_retries="0")
        r = subprocess.run([npm, "install", "--ignore-scripts", "--no-audit", "--no-fund",
                            NAME + "@1.0.0"], cwd=plain, env=env_with("cache-plain"), capture_output=True,
                           text=True, timeout=300)
        t.ok(r.returncode == 0 and
             os.path.isfile(os.path.join(plain, "node_modules", NAME, "index.js")),
             "a plain npm install works with the registry of ~/.npmrc and the cafile of the "
             "global npmrc", r.stderr[-400:])
        r = subprocess.run([npm, "install", "--prefix", os.path.join(d, "prefixed"),
                            "--ignore-scripts", "--no-audit", "--no-fund", NAME + "@1.0.0"],
                           env=env_with("cache-prefix"), capture_output=True, text=True,
                           timeout=300)
        t.ok(r.returncode != 0 and "SELF_SIGNED_CERT_IN_CHAIN" in r.stderr + r.stdout,
             "npm install --prefix DIR does not read the global npmrc, so the cafile goes "
             "unread (what add did)", (r.stderr + r.stdout)[-400:])
        del seen[:]
        r = subprocess.run([MCPGATE, "add", "npm:%s@1.0.0" % NAME, "--config", conf],
                           env=env_with("cache-add"),
                           capture_output=True, text=True, timeout=600)
        work = os.path.join(d, "data", "mcpgate", "npm", NAME)
        t.ok("npm could not install" not in r.stderr and
             "SELF_SIGNED_CERT_IN_CHAIN" not in r.stderr and
             os.path.isfile(os.path.join(work, "node_modules", NAME, "index.js")) and
             os.path.isfile(os.path.join(work, "package-lock.json")),
             "mcpgate add installs from the person's registry with the person's cafile",
             r.stderr[-1500:])
        t.ok(any(p.endswith(".tgz") for p in seen), "the tarball came from the loopback registry",
             seen)
        mcp = os.path.join(conf, "mcp.toml")
        t.ok(r.returncode == 0 and os.path.exists(mcp) and
             ("name = \"%s\"" % NAME.split("/")[-1]) in open(mcp).read(),
             "add then makes the image and writes the entry", r.stderr[-1500:])
        # a server's working directory is its home, as under npx it is the
        # person's folder: a server writing ./database.db or ./.cache where it
        # runs writes there, not into the read-only /app (mcp-server-sqlite
        # 0.0.2's default could not be opened)
        conf_of = None
        home_modes = []
        arch = [f for f in os.listdir(os.path.join(d, "data", "mcpgate", "images"))
                if f.endswith(".tar")] if r.returncode == 0 else []
        if len(arch) == 1:
            with tarfile.open(os.path.join(d, "data", "mcpgate", "images", arch[0])) as tf:
                idx = json.load(tf.extractfile("index.json"))
                man = json.load(tf.extractfile("blobs/sha256/" +
                                               idx["manifests"][0]["digest"][7:]))
                conf_of = json.load(tf.extractfile("blobs/sha256/" +
                                                   man["config"]["digest"][7:]))["config"]
                # podman's tmpfs over a folder keeps the folder's mode: 0700
                for layer in man["layers"]:
                    with tarfile.open(fileobj=tf.extractfile("blobs/sha256/" +
                                                             layer["digest"][7:])) as lt:
                        for m in lt.getmembers():
                            if m.name.strip("./").rstrip("/") == "home/mcpgate":
                                home_modes.append(m.mode)
        t.ok(conf_of is not None and conf_of.get("WorkingDir") == "/home/mcpgate" and
             conf_of.get("Entrypoint", [""])[-1].startswith("/app/node_modules/") and
             home_modes == [0o700],
             "the image's working directory is the server's home (its folder 0700); its "
             "entry point is still the package's under /app", (arch, conf_of, home_modes))
    finally:
        if srv is not None:
            srv.shutdown()
        shutil.rmtree(d, ignore_errors=True)
    return t.done()


sys.exit(main())
