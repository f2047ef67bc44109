#!/usr/bin/env python3
"""`mcpgate add pypi:` without a network but loopback (make check;
docs/2026-12-02-pypi.md): a PEP 503 index the test serves on 127.0.0.1 from
wheels it builds itself (a server with a console script that needs a
dependency, a package with no console script), named to pip by a pip.conf of
the person's (PIP_CONFIG_FILE); Debian's archive is make check's own on
loopback (tests/lib/debarchive.py), the runtime the fake one. What is real: Debian's pip
resolving and installing, the lock, mcpgate's layers and image.

Shown: add by name and by NAME==VERSION, a local wheel whose dependency
comes from the index; the lock pins every wheel by sha256 and the same input
gives the same lock and the same image digest; a wheel changed on the index
after it was locked is refused, and so is one whose bytes are not the hash
the index lists; each bad input (name, version, no console script, a source
distribution, the index unreachable) is an error naming it with mcp.toml
untouched and nothing left; hostile names, versions and paths cannot write
into mcp.toml; remove and prune take the Python trees.
update of a pypi: entry (docs/2026-12-02-pypi.md): outdated names the newest
release; srv-x 1.0 -> 1.1 with a new lock, tree, image and note, the tool
settings of unchanged tools kept; already the newest: nothing changes; an
exact version asked for; --module kept; a version the index lacks, the index
unreachable, a wheel not the hash listed: mcp.toml byte for byte, the lock,
the tree and the images as they were; an entry from a local wheel refused.
Environment: MCPGATE, FAKES.
"""
import base64
import hashlib
import http.server
import io
import json
import os
import re
import shutil
import sys
import tarfile
import tempfile
import threading
import tomllib
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from mcpclient import Tap  # noqa: E402
from fakenpm import Place  # noqa: E402

t = Tap()

SERVER_PY = "def main():\n    import dep_y\n    print(dep_y.V)\n"


def wheel(out_dir, name, version, files, requires=(), scripts=None, tag="py3-none-any"):
    """A wheel (py3-none-any, or tag): METADATA, WHEEL, RECORD, entry_points.txt"""
    dist = name.replace("-", "_")
    info = "%s-%s.dist-info" % (dist, version)
    meta = "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version)
    meta += "".join("Requires-Dist: %s\n" % r for r in requires)
    entries = dict(files)
    entries[info + "/METADATA"] = meta
    entries[info + "/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: %s\n"
                                "Tag: %s\n" % ("true" if tag == "py3-none-any" else "false",
                                                tag))
    if scripts is not None:
        entries[info + "/entry_points.txt"] = "[console_scripts]\n" + "".join(
            "%s = %s\n" % kv for kv in scripts.items())
    record = ""
    for path, text in entries.items():
        digest = hashlib.sha256(text.encode()).digest()
        record += "%s,sha256=%s,%d\n" % (
            path, base64.urlsafe_b64encode(digest).rstrip(b"=").decode(), len(text.encode()))
    entries[info + "/RECORD"] = record + info + "/RECORD,,\n"
    path = os.path.join(out_dir, "%s-%s-%s.whl" % (dist, version, tag))
    with zipfile.ZipFile(path, "w") as z:
        for p, text in sorted(entries.items()):
            z.writestr(zipfile.ZipInfo(p, (1980, 1, 1, 0, 0, 0)), text)
    return path


def sdist_file(out_dir, name, version, files):
    """NAME-VERSION.tar.gz: one folder NAME-VERSION with PKG-INFO and files"""
    top = "%s-%s" % (name, version)
    files = dict(files)
    files.setdefault("PKG-INFO", "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" %
                     (name, version))
    path = os.path.join(out_dir, top + ".tar.gz")
    with tarfile.open(path, "w:gz") as tf:
        for rel, text in sorted(files.items()):
            data = text.encode()
            info = tarfile.TarInfo("%s/%s" % (top, rel))
            info.size, info.mtime, info.mode = len(data), 315532800, 0o644
            tf.addfile(info, io.BytesIO(data))
    return path


class Index:
    """A PEP 503 simple index in a folder, served on loopback"""

    def __init__(self, root):
        self.root = root
        os.makedirs(os.path.join(root, "simple"))
        self.requested = []  # every path asked for

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(h, *a):
                self.requested.append(h.path)

        handler = lambda *a, **k: Handler(*a, directory=root, **k)  # noqa: E731
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = "http://127.0.0.1:%d/simple/" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.listed = {}  # project -> {file: sha256 the page lists}
        self.metadata = {}  # file -> sha256 of its PEP 658 metadata file

    def put(self, project, path, listed_sha=None, metadata=False):
        """path listed on project's page; metadata: its METADATA served beside
        it as FILE.metadata, which the page names (PEP 658 and PEP 714)"""
        folder = os.path.join(self.root, "simple", project)
        os.makedirs(folder, exist_ok=True)
        dest = os.path.join(folder, os.path.basename(path))
        if os.path.abspath(path) != dest:
            shutil.copy(path, dest)
        with open(dest, "rb") as fh:
            sha = hashlib.sha256(fh.read()).hexdigest()
        self.listed.setdefault(project, {})[os.path.basename(path)] = listed_sha or sha
        if metadata:
            with zipfile.ZipFile(dest) as z:
                meta = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
                data = z.read(meta[0])
            with open(dest + ".metadata", "wb") as fh:
                fh.write(data)
            self.metadata[os.path.basename(path)] = hashlib.sha256(data).hexdigest()

        def attrs(f):
            if f not in self.metadata:
                return ""
            return (' data-dist-info-metadata="sha256=%s" data-core-metadata="sha256=%s"' %
                    (self.metadata[f], self.metadata[f]))
        with open(os.path.join(folder, "index.html"), "w") as fh:
            fh.write("<html><body>\n" + "".join(
                '<a href="%s#sha256=%s"%s>%s</a>\n' % (f, h, attrs(f), f)
                for f, h in sorted(self.listed[project].items())) + "</body></html>\n")

    def close(self):
        self.httpd.shutdown()


def main():
    d = tempfile.mkdtemp(prefix="mcpgate-pypi-test-")
    p = Place(os.path.join(d, "place"), {})
    idx = Index(os.path.join(d, "index"))
    build = os.path.join(d, "build")
    os.makedirs(build)
    try:
        run(p, idx, build, d)
    finally:
        idx.close()
        p.cleanup()
        shutil.rmtree(d, ignore_errors=True)


def run(p, idx, build, d):
    pipconf = os.path.join(d, "pip.conf")
    with open(pipconf, "w") as fh:
        fh.write("[global]\nindex-url = %s\nno-cache-dir = true\n" % idx.url)
    p.env["PIP_CONFIG_FILE"] = pipconf
    p.env.pop("PIP_INDEX_URL", None)
    for v in ("1.0", "1.1"):
        idx.put("srv-x", wheel(build, "srv-x", v, {"srv_x/__init__.py": SERVER_PY},
                               ["dep-y>=1"], {"srv-x": "srv_x:main"}))
    dep = wheel(build, "dep-y", "1.2", {"dep_y/__init__.py": "V = 12\n"})
    idx.put("dep-y", dep)
    idx.put("no-script", wheel(build, "no-script", "1.0", {"no_script/__init__.py": ""}))
    idx.put("two-scripts", wheel(build, "two-scripts", "1.0", {"two/__init__.py": ""}, [],
                                 {"alpha": "two:a", "beta": "two:b"}))
    idx.put("bad-script", wheel(build, "bad-script", "1.0", {"bad/__init__.py": ""}, [],
                                {"bad-script": "os:system('id')"}))
    before = "# the person's own\n"
    p.write(before)

    def lock(name):
        path = os.path.join(p.data, "pypi", name, "requirements.lock")
        return open(path).read() if os.path.exists(path) else None

    def pins():
        return [i for i in p.images() if "mcpgate-pypi-" in i and "mcpgate-pypi-build" not in i]

    # ---- by name, the newest
    r = p.run("add", "pypi:srv-x")
    text = p.text()
    doc = tomllib.loads(text) if r.returncode == 0 else {}
    srv = [s for s in doc.get("server", []) if s["name"] == "srv-x"]
    lk = lock("srv-x") or ""
    t.ok(r.returncode == 0 and len(srv) == 1 and srv[0]["image"].startswith(
        "localhost/mcpgate-pypi-srv-x@sha256:") and "# added by `mcpgate add pypi:srv-x==1.1`"
        in text and "srv-x==1.1 --hash=sha256:" in lk and "dep-y==1.2 --hash=sha256:" in lk and
        len(pins()) == 1,
        "add pypi:NAME takes the newest version from the index named in pip.conf, its "
        "dependency locked beside it by sha256", (r.stderr[-3000:], text, lk))
    site = os.path.join(p.data, "pypi", "srv-x", "site")
    t.ok(os.path.exists(os.path.join(site, "srv_x", "__init__.py")) and
         os.path.exists(os.path.join(site, "dep_y", "__init__.py")) and
         not os.path.exists(os.path.join(site, "bin")) and
         p.files(p.data, "pypi", "srv-x") == ["request", "requirements.lock", "site"],
         "the installed tree holds the package and its dependency, no host launchers; the "
         "entry's folder holds the request, the lock and the tree, nothing of pip's",
         (sorted(os.listdir(site)) if os.path.isdir(site) else None,
          p.files(p.data, "pypi", "srv-x")))
    arch = [f for f in p.files(p.data, "images") if f.endswith(".tar")]
    cfg_ok = False
    if len(arch) == 1:
        with tarfile.open(os.path.join(p.data, "images", arch[0])) as tf:
            idxj = json.load(tf.extractfile("index.json"))
            man = json.load(tf.extractfile("blobs/sha256/" +
                                           idxj["manifests"][0]["digest"][7:]))
            conf = json.load(tf.extractfile("blobs/sha256/" + man["config"]["digest"][7:]))
            ep = conf["config"]["Entrypoint"]
            cfg_ok = (ep[:3] == ["/usr/bin/python3", "-s", "-c"] and
                      "from srv_x import main" in ep[3] and len(man["layers"]) == 3 and
                      "PYTHONPATH=/app/site" in conf["config"]["Env"] and
                      conf["config"]["Labels"].get("io.mcpgate.pypi.version") == "1.1")
    t.ok(cfg_ok, "the image: Debian base, python3, the package's layer; python3 runs its "
         "console script", arch)

    # ---- NAME==VERSION, twice: the same lock and the same image
    r1 = p.run("add", "pypi:srv-x==1.0", "--name", "s10")
    r2 = p.run("add", "pypi:srv-x==1.0", "--name", "s10b")
    digest = lambda n: [i.split("@")[1] for i in pins() if "mcpgate-pypi-%s@" % n in i]  # noqa
    t.ok(r1.returncode == 0 and r2.returncode == 0 and lock("s10") == lock("s10b") and
         "srv-x==1.0 --hash" in (lock("s10") or "") and digest("s10") == digest("s10b") and
         len(digest("s10")) == 1 and digest("s10") != digest("srv-x"),
         "add pypi:NAME==VERSION: the same input twice gives the same lock and the same image "
         "digest", (r1.stderr[-2000:], r2.stderr[-2000:], pins()))

    # ---- a local wheel: its dependency from the index
    local = os.path.join(d, "dist")
    os.makedirs(local)
    lw = wheel(local, "srv-x", "1.0", {"srv_x/__init__.py": SERVER_PY}, ["dep-y>=1"],
               {"srv-x": "srv_x:main"})
    r = p.run("add", "pypi:" + lw, "--name", "local")
    lk = lock("local") or ""
    t.ok(r.returncode == 0 and "/pypi/local/wheels/srv_x-1.0-py3-none-any.whl --hash=sha256:%s"
         % hashlib.sha256(open(lw, "rb").read()).hexdigest() in lk and
         "dep-y==1.2 --hash=sha256:" in lk and "the wheel %s" % lw in p.text(),
         "a local wheel: locked by its own hash, its dependency resolved from the index",
         (r.stderr[-2000:], lk))

    # ---- binary wheels: manylinux tags for the image's glibc (2.36 in the
    # test archive's libc6) and python (3.11), served with PEP 658 metadata
    so = "\x7fELF not a real library, never loaded here\n"
    for version, tag in (("1.0", "cp311-cp311-manylinux_2_17_x86_64"),
                         ("1.1", "cp312-cp312-manylinux_2_17_x86_64"),
                         ("2.0", "cp311-cp311-manylinux_2_39_x86_64")):
        idx.put("bin-z", wheel(build, "bin-z", version, {
            "bin_z/__init__.py": "def main():\n    pass\n", "bin_z/_native.so": so}, [],
            {"bin-z": "bin_z:main"}, tag=tag), metadata=True)
    asked = len(idx.requested)
    r = p.run("add", "pypi:bin-z", "--name", "binz")
    lk = lock("binz") or ""
    want_sha = idx.listed["bin-z"]["bin_z-1.0-cp311-cp311-manylinux_2_17_x86_64.whl"]
    paths = idx.requested[asked:]
    t.ok(r.returncode == 0 and "bin-z==1.0 --hash=sha256:%s" % want_sha in lk and
         os.path.exists(os.path.join(p.data, "pypi", "binz", "site", "bin_z", "_native.so")),
         "binary wheels: of manylinux_2_17 for cp311, cp312 and manylinux_2_39 (newer than the "
         "image's glibc 2.36), add takes the one the image can load and locks its hash",
         (r.stderr[-2000:], lk))
    t.ok(any(x.endswith(".whl.metadata") for x in paths),
         "an index serving PEP 658 metadata files: pip reads the metadata file, the lock "
         "still has the wheel's own sha256", paths)
    r = p.run("add", "pypi:bin-z==2.0", "--name", "refused")
    t.ok(r.returncode != 0 and "bin-z==2.0" in r.stderr and
         not os.path.exists(os.path.join(p.data, "pypi", "refused")),
         "a version whose only wheel needs a newer glibc than the image's is refused, named",
         r.stderr[-1500:])

    # ---- refusals: each names what, mcp.toml untouched, nothing left
    good = p.text()
    n_pins = len(pins())
    srv_text = open(os.path.join(build, "srv_x-1.0-py3-none-any.whl"), "rb").read()
    sdist = os.path.join(d, "srv-x-1.0.tar.gz")
    open(sdist, "wb").write(b"not a tar at all")
    sd = os.path.join(d, "sdists")
    os.makedirs(sd)
    bs = "[build-system]\n"
    bad_sdists = [
        (bs + 'requires = ["setuptools @ https://example.invalid/s.whl"]\n', "never a URL"),
        (bs + 'requires = []\nbuild-backend = "os;system"\n',
         "build-system.build-backend is not MODULE[:OBJECT]"),
        (bs + 'requires = []\nbuild-backend = "b"\nbackend-path = ["../.."]\n',
         "a path below the source's top folder"),
        (bs + "requires = [1]\n", "build-system.requires holds an item of type integer"),
        ('build-system = "x"\n', "pyproject.toml:1: build-system is not a table"),
        (bs + "requires = [\n", "pyproject.toml:3:1"),
        (bs + 'build-backend = "b"\n', "build-system has no requires"),
    ]
    sdist_cases = []
    for i, (pyproject, want) in enumerate(bad_sdists):
        folder = os.path.join(sd, str(i))
        os.makedirs(folder)
        sdist_cases.append((["pypi:" + sdist_file(folder, "srv-x", "1.0", {
            "pyproject.toml": pyproject})], want))
    cases = [
        (["pypi:not-there"], "No matching distribution found for not-there"),
        (["pypi:srv-x==9.9"], "srv-x==9.9 (from versions: 1.0, 1.1)"),
        (["pypi:no-script"], "no-script==1.0 has no console script"),
        (["pypi:two-scripts"], "several console scripts (alpha, beta)"),
        (["pypi:bad-script"], "not MODULE:FUNCTION"),
        (["pypi:-bad-"], "is not a Python package name"),
        (["pypi:srv-x==1.0;rm"], "is not a version"),
        (["pypi:" + sdist], "is not a gzipped tar"),
        (["pypi:" + sdist[:-7] + ".zip"], "a source distribution is taken as "
         "NAME-VERSION.tar.gz"),
        (["pypi:./srv-x.tar.gz"], "no name and version in the source distribution's"),
        (["pypi:" + os.path.join(d, "gone-1.0.tar.gz")], "the source distribution"),
    ] + sdist_cases + [
        (["pypi:srv-x", "--module", "os;x"], "--module os;x"),
        (["pypi:srv-x", "--scripts"], "--scripts is for npm"),
    ]
    for args, want in cases:
        r = p.run("add", *args, "--name", "refused")
        t.ok(r.returncode != 0 and want in r.stderr and p.text() == good and
             len(pins()) == n_pins and not os.path.exists(os.path.join(p.data, "pypi", "refused")),
             "add %s is refused: %s; mcp.toml and the runtime untouched, no tree left" %
             (" ".join(args).replace(d, "D"), want), r.stderr[-1500:])
    # ---- a good sdist goes as far as its contained build, which the fake
    # runtime cannot do: how the step was run, and nothing left
    folder = os.path.join(sd, "good")
    os.makedirs(folder)
    good_sdist = sdist_file(folder, "srv-x", "1.0", {
        "pyproject.toml": bs + 'requires = []\nbuild-backend = "intree"\nbackend-path = ["."]\n',
        "intree.py": "def build_wheel(d, c=None, m=None):\n    raise SystemExit(1)\n"})
    log = os.path.join(p.bin, "runtime-log.jsonl")
    seen = os.path.getsize(log) if os.path.exists(log) else 0
    r = p.run("add", "pypi:" + good_sdist, "--name", "refused")
    runs = []
    if os.path.exists(log):
        with open(log) as fh:
            fh.seek(seen)
            runs = [json.loads(line) for line in fh if line.strip()]
    runs = [c for c in runs if "run" in json.dumps(c) and "pypi-build" in json.dumps(c)]
    argv = json.dumps(runs[-1]) if runs else ""
    t.ok(r.returncode != 0 and "the build of srv-x-1.0.tar.gz" in r.stderr and
         p.text() == good and len(pins()) == n_pins and
         not os.path.exists(os.path.join(p.data, "pypi", "refused")),
         "a source distribution's build that fails in its container fails add, naming it; "
         "mcp.toml and the runtime untouched, no tree left", r.stderr[-2000:])
    t.ok(all(f in argv for f in ("--read-only", "--cap-drop=ALL", "--network=none",
                                 "/mcpgate-pypi-build@sha256:", "srv-x-1.0.tar.gz",
                                 "intree")) and
         ("65534:65534" in argv if os.geteuid() == 0 else True),
         "the build step runs with a server's isolation: read-only root, no capabilities, no "
         "network%s" % (", as nobody (root runs add)" if os.geteuid() == 0 else ""),
         argv[:3000])
    r = p.run("add", "pypi:no-script", "--module", "no_script", "--name", "bymodule")
    t.ok(r.returncode == 0 and "bymodule" in p.text(),
         "--module names the module a package with no console script runs as", r.stderr[-1500:])
    good = p.text()
    n_pins = len(pins())
    r = p.run("add", "pypi:srv-x", "--name", "refused",
              env={"PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": "http://127.0.0.1:9/simple/"})
    t.ok(r.returncode != 0 and "the index http://127.0.0.1:9/simple/, which it could not "
         "reach" in r.stderr and "srv-x" in r.stderr and
         p.text() == good and len(pins()) == n_pins and
         not os.path.exists(os.path.join(p.data, "pypi", "refused")),
         "an index that cannot be reached is an error naming it and the package",
         r.stderr[-1500:])

    # ---- a wheel whose bytes are not what the index lists
    evil = wheel(os.path.join(d, "dist"), "evil-x", "1.0", {"evil_x/__init__.py": "X=1\n"}, [],
                 {"evil-x": "evil_x:main"})
    idx.put("evil-x", evil, listed_sha="0" * 64)
    r = p.run("add", "pypi:evil-x", "--name", "refused")
    t.ok(r.returncode != 0 and "hash" in r.stderr.lower() and p.text() == good and
         len(pins()) == n_pins, "a wheel whose content is not the sha256 the index lists is "
         "refused", r.stderr[-1500:])

    # ---- the index changes a locked wheel: the kept lock refuses it
    with open(p.mcp, "w") as fh:
        fh.write(before)
    tampered = os.path.join(idx.root, "simple", "dep-y", "dep_y-1.2-py3-none-any.whl")
    wheel(os.path.join(d, "dist"), "dep-y", "1.2", {"dep_y/__init__.py": "V = 'evil'\n"})
    shutil.copy(os.path.join(d, "dist", "dep_y-1.2-py3-none-any.whl"), tampered)
    idx.put("dep-y", tampered)  # the page lists the new hash: only the lock can tell
    locked = lock("s10")
    r = p.run("add", "pypi:srv-x==1.0", "--name", "s10")
    t.ok(r.returncode != 0 and "do not match the hashes" in r.stderr.lower() and
         "dep-y" in r.stderr and p.text() == before and lock("s10") == locked and
         "V = 12" in open(os.path.join(p.data, "pypi", "s10", "site", "dep_y",
                                       "__init__.py")).read(),
         "a wheel the index changed after it was locked is refused; the installed tree and "
         "mcp.toml stay as they were", r.stderr[-2000:])
    del srv_text

    # ---- hostile text cannot steer mcp.toml
    hostile_dir = os.path.join(d, 'x"\n[[server]]\nname = "evil"\ntransport = "remote"\n#')
    os.makedirs(hostile_dir)
    hw = wheel(hostile_dir, "srv-x", "1.0", {"srv_x/__init__.py": SERVER_PY}, ["dep-y>=1"],
               {"srv-x": "srv_x:main"})
    idx.put("dep-y", dep)  # the first dep-y again: this lock is a new one
    for args, want in ((['pypi:srv-x"\n[[server]]\nname = "evil"'], "is not a Python package name"),
                       (['pypi:srv-x==1.0"\nimage = "evil'], "is not a version"),
                       (["pypi:" + hw, "--name", "hostile"], None)):
        before_h = p.text()
        r = p.run("add", *args)
        doc = tomllib.loads(p.text())
        names = [s["name"] for s in doc.get("server", [])]
        t.ok("evil" not in names and len(names) == len(set(names)) and
             all(s.get("transport") == "container" for s in doc.get("server", [])) and
             (r.returncode == 0 and names[-1] == "hostile" and hw.replace("\n", "\\n") in p.text()
              if want is None else r.returncode != 0 and want in r.stderr and
              p.text() == before_h),
             "a hostile %s cannot write into mcp.toml" %
             ("wheel path (added; the path kept inside its comment)" if want is None
              else "name or version (refused)"),
             (r.returncode, r.stderr[-800:], p.text()[-600:]))

    # ---- prune and remove take the Python trees
    r = p.run("prune", "--yes")
    left = p.files(p.data, "pypi")
    t.ok(r.returncode == 0 and "python tree and lock" in r.stdout and left == ["hostile"],
         "prune takes every Python tree no entry uses (their entries were cut by hand) and "
         "keeps the one an entry uses", (r.stdout + r.stderr, left))
    before_u = p.text()
    r = p.run("update", "hostile", "--yes")
    o = p.run("outdated")
    t.ok(r.returncode != 0 and "server hostile was added from a local wheel (pypi:srv-x==1.0)"
         in r.stderr and "mcpgate add pypi:./NEW.whl --name hostile" in r.stderr and
         p.text() == before_u and p.files(p.data, "pypi") == ["hostile"] and
         re.search(r"hostile +cannot tell: server hostile was added from a local wheel",
                   o.stdout),
         "update refuses an entry added from a local wheel, naming it and how to add the new "
         "wheel; outdated says it cannot tell; mcp.toml untouched",
         (r.stderr[-800:], o.stdout, o.stderr[-800:]))
    r = p.run("remove", "hostile")
    t.ok(r.returncode == 0 and "python tree and lock" in r.stdout and
         p.files(p.data, "pypi") == [] and not [i for i in pins() if "-hostile@" in i],
         "remove takes the entry's Python tree and lock with its image", r.stdout + r.stderr)

    update(p, idx, build, d, before)


def update(p, idx, build, d, before):
    """update of a pypi: entry: srv-x 1.0 -> 1.1 -> back to 1.0 asked for; refusals and
    failures leave mcp.toml, the lock, the tree and the image as they were"""
    with open(p.mcp, "w") as fh:
        fh.write(before)
    # what each release offers when the fake runtime starts it
    with open(os.path.join(p.bin, "probe-args"), "w") as fh:
        fh.write("io.mcpgate.pypi.version=1.0\t--tools\techo,env,slow\n"
                 "io.mcpgate.pypi.version=1.1\t--tools\techo,env,status\n")
    lock_path = os.path.join(p.data, "pypi", "up", "requirements.lock")

    def state():
        """what a failed update must leave as it was"""
        lk = open(lock_path).read() if os.path.exists(lock_path) else None
        site = os.path.join(p.data, "pypi", "up", "site")
        return (p.text(), lk, sorted(os.listdir(site)) if os.path.isdir(site) else None,
                p.images(), p.files(p.data, "pypi"),
                sorted(f for f in p.files(p.data, "images") if f.endswith(".tar")))

    def server():
        return [s for s in tomllib.loads(p.text()).get("server", []) if s["name"] == "up"][0]

    def note():
        m = re.search(r"((?:#[^\n]*\n)+)\[\[server\]\]\nname = \"up\"", p.text())
        return m.group(1) if m else ""

    r = p.run("add", "pypi:srv-x==1.0", "--name", "up")
    rv = p.run("review", "up")
    ap = p.run("approve", "up", "--tool", "echo,slow", "--on", "--effect", "read")
    old = server()
    t.ok(r.returncode == 0 and rv.returncode == 0 and ap.returncode == 0 and
         old["tools"]["slow"]["on"] and "srv-x==1.0 --hash" in open(lock_path).read(),
         "update: pypi:srv-x==1.0 added, reviewed and approved",
         (r.stderr[-1500:], rv.stdout[-800:], rv.stderr[-800:], ap.stderr[-800:]))

    o = p.run("outdated")
    oj = p.run("outdated", "--json")
    t.ok(o.returncode == 0 and re.search(r"up +pypi:srv-x 1\.0, latest 1\.1: mcpgate update up",
                                         o.stdout) and
         '"source":"pypi"' in oj.stdout.replace(" ", "") and
         p.files(p.data, "pypi") == ["up"],
         "outdated asks the index for the newest wheel-installable release of a pypi: entry, "
         "and leaves no folder behind", (o.stdout, o.stderr[-800:], oj.stdout))

    before_s = state()
    r = p.run("update", "up")
    t.ok(r.returncode == 1 and "not switched" in r.stderr and "srv-x==1.1" in r.stderr and
         "update up: pypi:srv-x 1.0 -> 1.1" in r.stdout and "added status" in r.stdout and
         "removed slow" in r.stdout and state() == before_s,
         "update without --yes off a terminal: 1.1 made, started and compared, nothing "
         "switches; mcp.toml, the lock, the tree and the runtime's images as they were",
         (r.stdout[-1500:], r.stderr[-1500:]))

    r = p.run("update", "up", "--yes")
    new = server()
    lk = open(lock_path).read()
    pins_now = [i for i in p.images() if "mcpgate-pypi-up@" in i]
    t.ok(r.returncode == 0 and new["image"] != old["image"] and pins_now == [new["image"]] and
         new["manifest"] != old["manifest"] and new["tools"]["echo"] == old["tools"]["echo"]
         and new["tools"]["slow"]["on"] is False and "status" not in new["tools"] and
         "srv-x==1.1 --hash=sha256:" in lk and "dep-y==1.2 --hash=sha256:" in lk and
         "srv-x==1.0" not in lk and
         os.path.isdir(os.path.join(p.data, "pypi", "up", "site", "srv_x-1.1.dist-info")) and
         not os.path.exists(os.path.join(p.data, "pypi", "up", "site", "srv_x-1.0.dist-info"))
         and p.files(p.data, "pypi") == ["up"],
         "update --yes moves srv-x 1.0 -> 1.1: a new lock, tree and image pin; unchanged tools "
         "keep their settings, a tool gone is off; the old image goes, no update folder left",
         (r.stdout[-1500:], r.stderr[-2000:], new, lk, p.images()))
    sha11 = hashlib.sha256(open(os.path.join(build, "srv_x-1.1-py3-none-any.whl"),
                                "rb").read()).hexdigest()
    n = note()
    t.ok("# updated by `mcpgate update up` to pypi:srv-x==1.1 on " in n and
         "; wheel sha256 %s, every wheel locked in %s/requirements.lock." %
         (sha11, os.path.join(p.data, "pypi", "up")) in n and "srv-x==1.0" not in n,
         "the note above the entry says the release it runs now, its wheel's sha256 and the "
         "lock, as add writes them", n)
    lst = p.run("list")
    t.ok(lst.returncode == 0 and re.search(r"up .*manifest approved,", lst.stdout) and
         "another image" not in lst.stdout, "list after the update: approved for the image it "
         "runs", lst.stdout)

    before_s = state()
    r = p.run("update", "up", "--yes")
    t.ok(r.returncode == 0 and "server up is up to date: pypi:srv-x==1.1 is the latest" in
         r.stdout and state() == before_s,
         "update when the newest is what runs says so and changes nothing, no folder left",
         (r.stdout, r.stderr[-800:]))

    r = p.run("update", "up", "1.0", "--yes")
    lk = open(lock_path).read()
    back = server()
    t.ok(r.returncode == 0 and "srv-x==1.0 --hash=sha256:" in lk and "srv-x==1.1" not in lk and
         "to pypi:srv-x==1.0 on " in note() and back["image"] != new["image"] and
         [i for i in p.images() if "mcpgate-pypi-up@" in i] == [back["image"]] and
         back["tools"]["slow"]["on"] is False and back["tools"]["echo"]["on"] is True,
         "update NAME VERSION takes the exact version asked for (here back to 1.0)",
         (r.stdout[-1500:], r.stderr[-1500:], lk))

    # ---- failures: nothing changes
    before_s = state()
    for args, env, want, why in (
            (["up", "9.9"], None, "srv-x==9.9 (from versions: 1.0, 1.1)",
             "a version the index does not have"),
            (["up", ">=1.0"], None, "update up >=1.0: give the exact version of pypi:srv-x",
             "a range for a version"),
            (["up", "--scripts"], None, "--scripts is for npm's install scripts",
             "--scripts for a Python package"),
            (["up"], {"PIP_CONFIG_FILE": os.devnull,
                      "PIP_INDEX_URL": "http://127.0.0.1:9/simple/"},
             "the index http://127.0.0.1:9/simple/, which it could not reach",
             "the index unreachable")):
        r = p.run("update", *args, "--yes", env=env)
        t.ok(r.returncode != 0 and want in r.stderr and state() == before_s,
             "update refused (%s): the error names it; mcp.toml byte for byte, the lock, the "
             "tree and the images as they were, no update folder" % why, r.stderr[-1500:])
    # a newer release whose wheel is not the sha256 the index lists
    bad = wheel(os.path.join(d, "dist"), "srv-x", "1.2", {"srv_x/__init__.py": SERVER_PY},
                ["dep-y>=1"], {"srv-x": "srv_x:main"})
    idx.put("srv-x", bad, listed_sha="0" * 64)
    r = p.run("update", "up", "--yes")
    t.ok(r.returncode != 0 and "hash" in r.stderr.lower() and "srv" in r.stderr and
         state() == before_s,
         "update to a release whose wheel is not the hash the index lists fails; mcp.toml "
         "byte for byte, the old lock, tree and image as they were", r.stderr[-1500:])
    # the same wheel listed right: the newest now, and made
    idx.put("srv-x", bad)
    r = p.run("update", "up", "--yes")
    t.ok(r.returncode == 0 and "srv-x==1.2 --hash" in open(lock_path).read() and
         "to pypi:srv-x==1.2 on " in note(), "listed with its own hash, 1.2 is the newest "
         "and update takes it", (r.stdout[-800:], r.stderr[-1500:]))

    # ---- --module: kept
    r = p.run("add", "pypi:no-script", "--module", "no_script", "--name", "mod")
    idx.put("no-script", wheel(build, "no-script", "1.1", {"no_script/__init__.py": ""}))
    u = p.run("update", "mod", "--yes")
    m = [s for s in tomllib.loads(p.text()).get("server", []) if s["name"] == "mod"]
    ep = None
    if u.returncode == 0 and m:
        hexd = m[0]["image"].split("@sha256:")[1]
        with tarfile.open(os.path.join(p.data, "images", "sha256-%s.tar" % hexd)) as tf:
            idxj = json.load(tf.extractfile("index.json"))
            man = json.load(tf.extractfile("blobs/sha256/" +
                                           idxj["manifests"][0]["digest"][7:]))
            conf = json.load(tf.extractfile("blobs/sha256/" + man["config"]["digest"][7:]))
            ep = conf["config"]["Entrypoint"]
    t.ok(r.returncode == 0 and u.returncode == 0 and
         ep == ["/usr/bin/python3", "-s", "-m", "no_script"] and
         "to pypi:no-script==1.1 on " in p.text(),
         "an entry added with --module is updated with it: the new image runs python3 -m "
         "the same module", (r.stderr[-800:], u.stdout[-800:], u.stderr[-1500:], ep))
    after_mod = p.text()

    # ---- an image whose labels are not a name and a module cannot steer pip or the image
    src = "org.opencontainers.image.source"
    for k, (labels, want, what) in enumerate((
            ({src: "pypi:srv-x @ http://127.0.0.1:9/x.whl==1.0"},
             "which is not a Python package's name", "a package that is a URL"),
            ({src: "pypi:--index-url=http://127.0.0.1:9/simple/==1.0"},
             "which is not a Python package's name", "a package that is an option"),
            ({src: "pypi:srv-x==1.0", "io.mcpgate.pypi.module": "os;x\n[[server]]"},
             "which is not a Python module's dotted name", "a module that is not one"))):
        hexd = ("%02x" % (0xe0 + k)) * 32
        image = "localhost/mcpgate-pypi-steer@sha256:" + hexd
        with open(os.path.join(p.bin, "images"), "a") as fh:
            fh.write(image + "\n")
        os.makedirs(os.path.join(p.bin, "image-config"), exist_ok=True)
        with open(os.path.join(p.bin, "image-config", hexd), "w") as fh:
            json.dump({"labels": labels, "size": 1}, fh)
        entry = '[[server]]\nname = "steer"\ntransport = "container"\nimage = "%s"\n' % image
        with open(p.mcp, "w") as fh:
            fh.write(entry)
        r = p.run("update", "steer", "--yes")
        t.ok(r.returncode != 0 and want in r.stderr and "pip" not in r.stderr and
             "\n[[server]]" not in r.stderr and p.text() == entry and
             "steer.update" not in p.files(p.data, "pypi"),
             "an image's labels with %s: update refuses it before pip runs, naming it "
             "escaped" % what, r.stderr[-800:])
    with open(p.mcp, "w") as fh:
        fh.write(after_mod)

    # ---- remove after an update, and of one cut short (its folder left)
    cut = os.path.join(p.data, "pypi", "up.update")
    os.makedirs(os.path.join(cut, "site"))
    open(os.path.join(cut, "requirements.lock"), "w").write("# cut short\n")
    r = p.run("remove", "up")
    r2 = p.run("remove", "mod")
    t.ok(r.returncode == 0 and r2.returncode == 0 and p.files(p.data, "pypi") == [] and
         "python tree and lock of an update" in r.stdout and
         not [i for i in p.images() if "mcpgate-pypi-up@" in i or "mcpgate-pypi-mod@" in i] and
         not [f for f in p.files(p.data, "images") if f.endswith(".tar")],
         "remove after an update takes the entry's tree, lock, image and archive, and the "
         "folder of an update cut short",
         (r.stdout, r2.stdout, p.files(p.data, "pypi"), p.images()))


if __name__ == "__main__":
    main()
    t.done()
