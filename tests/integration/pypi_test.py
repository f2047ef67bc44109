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
import ast
import glob
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import containers_test as ct  # noqa: E402
from add_test import layers_of, pin_of  # noqa: E402
from packages_test import add, approve, calls, run_in, session  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from add_pypi_test import Index, sdist_file, wheel  # noqa: E402

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
FAST_C = r'''#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <zlib.h>

static PyObject *mul(PyObject *self, PyObject *args)
{
	long a, b;
	if (!PyArg_ParseTuple(args, "ll", &a, &b))
		return NULL;
	/* zlib, whose headers the step has from --with zlib1g-dev, and its
	 * library the server's image */
	return PyLong_FromLong(a * b + (zlibVersion()[0] == '1' ? 0 : 1000));
}

static PyMethodDef methods[] = {{"mul", mul, METH_VARARGS, "a times b"}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fast", NULL, -1, methods};
PyMODINIT_FUNC PyInit__fast(void) { return PyModule_Create(&module); }
'''
PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "%(name)s"
version = "1.0"
dependencies = ["digest-kit>=1"]

[project.scripts]
%(name)s = "%(name)s:main"

[tool.setuptools]
packages = ["%(name)s"]
"""
SETUP_PY = """from setuptools import Extension, setup
setup(ext_modules=[Extension("%(name)s._fast", ["src_c/fast.c"], libraries=["z"])])
"""
# what a hostile build tries, each outcome kept in the wheel it builds: the
# index it was fetched from, a file on the host, the folders it reads from
EVIL_SETUP_PY = r'''import os, socket
from setuptools import setup
out = {}
def attempt(key, fn):
    try:
        fn()
        out[key] = "done"
    except Exception as e:
        out[key] = "refused: %%s" %% type(e).__name__
def connect():
    with socket.create_connection(("127.0.0.1", %(port)d), timeout=5):
        pass
def host_file():
    with open(%(host_file)r, "w") as fh:
        fh.write("the build ran here")
def into_sdist():
    with open("/workspace/sdist/planted", "w") as fh:
        fh.write("x")
attempt("index", connect)
attempt("host_file", host_file)
attempt("sdist_folder", into_sdist)
out["interfaces"] = sorted(os.listdir("/sys/class/net"))
out["uid"] = os.getuid()
with open("evil/outcome.py", "w") as fh:
    fh.write("OUTCOME = %%r\n" %% out)
'''
KIT = "import hashlib\n\ndef digest(data):\n    return 'kit-' + hashlib.sha256(data).hexdigest()\n"


def wheel_sha(s, name):
    """the sha256 the lock gives the server's own wheel"""
    lock = os.path.join(s.env["XDG_DATA_HOME"], "mcpgate", "pypi", name, "requirements.lock")
    with open(lock) as fh:
        for line in fh:
            if "/wheels/" in line:
                return line.split("--hash=sha256:")[1].strip()
    return None


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
            # what a setuptools build needs, as Debian ships it
            # (python3-setuptools-whl, python3-wheel-whl)
            for whl in sorted(glob.glob("/usr/share/python-wheels/*.whl")):
                project = os.path.basename(whl).split("-")[0].lower()
                if project in ("setuptools", "wheel"):
                    idx.put(project, whl)
            s.env["PIP_INDEX_URL"] = idx.url
            s.env["PIP_NO_CACHE_DIR"] = "1"
            cases(s)
            sdist_cases(s, idx, build)
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


def sdist_cases(s, idx, build):
    have = {p for p in ("setuptools", "wheel") if p in idx.listed}
    if have != {"setuptools", "wheel"}:
        t.skip("%s: a source distribution" % RT, "no setuptools and wheel wheels in "
               "/usr/share/python-wheels (scripts/setup installs python3-setuptools-whl "
               "and python3-wheel-whl)")
        return
    files = {"pyproject.toml": PYPROJECT % {"name": "pyfast"},
             "setup.py": SETUP_PY % {"name": "pyfast"},
             "src_c/fast.c": FAST_C,
             "pyfast/__init__.py": SERVER.replace(
                 "import digest_kit\n", "import digest_kit\nfrom pyfast import _fast\n").replace(
                 "uid=%d\" % (", "uid=%d fast=%d\" % (").replace(
                 "os.getuid())", "os.getuid(), _fast.mul(6, 7))")}
    path = sdist_file(build, "pyfast", "1.0", files)
    r = add(s, "pypi:" + path, "--mount", "ro", "--with", "zlib1g-dev")
    ok = r.returncode == 0 and r.stdout.startswith("localhost/mcpgate-pypi-pyfast@sha256:")
    t.ok(ok and "the build of pyfast-1.0.tar.gz" in r.stderr and
         "the backend asks for more to build: wheel" in r.stderr,
         "%s: add pypi:./pyfast-1.0.tar.gz builds the sdist (setuptools, a C extension "
         "linking zlib, whose headers --with zlib1g-dev gives the step) in its contained step; setuptools and wheel come locked from the index, the second "
         "when the backend asks for it" % RT, r.stderr[-3000:])
    if not ok:
        return
    ct.made["images"].append(("localhost/" if RT == "podman" else "") +
                             "mcpgate-pypi-pyfast:1.0")
    r = approve(s, "pyfast", "read_file")
    answers, notes = calls(s, [("pyfast__read_file", {"path": "ro/note.txt"})])
    text = answers[0][1]
    t.ok(r.returncode == 0 and "read through a mount" in text and text.endswith("fast=42"),
         "%s: the server built from source runs, and its C extension, compiled in the step, "
         "answers in the server's image" % RT, (r.stderr[-800:], text[-500:], notes))
    a, b = layers_of(s, pin_of(s, "pyfiles")), layers_of(s, pin_of(s, "pyfast"))
    out = run_in(s, pin_of(s, "pyfast"),
                 "for c in gcc cc cc1 x86_64-linux-gnu-gcc-12; do command -v $c; done; "
                 "ls /usr/lib/gcc 2>&1 | head -1; ls /app/site/pyfast/")
    found = [line for line in out.splitlines() if line.startswith("/usr/bin/")]
    t.ok(len(b) == 4 and a[:2] == b[:2] and "_fast.cpython-311" in out and not found and
         "cannot access '/usr/lib/gcc'" in out,
         "%s: the built server's image is the Debian base, python3, the --with set and its "
         "own layer with the extension: the compiler the step had is not in it" % RT,
         (a, b, out[-600:]))
    before = open(os.path.join(s.conf, "mcp.toml")).read()
    r = s.mcpgate("update", "pyfast", "--yes")
    t.ok(r.returncode != 0 and "was added from a source distribution" in r.stderr and
         "add pypi:./NAME-VERSION.tar.gz --name pyfast" in r.stderr and
         open(os.path.join(s.conf, "mcp.toml")).read() == before,
         "%s: update of a server built from a local sdist says no index has a release of it "
         "and how to add the new one; mcp.toml untouched" % RT, r.stderr[-800:])
    # a second build of the same sdist: on one runtime only (podman as
    # root), since what it shows is the build's, not the runtime's
    if RT != "podman" or os.geteuid() != 0:
        t.skip("%s: the same sdist built twice gives the same wheel" % RT,
               "shown on podman as root only: it is the build's, not the runtime's")
    else:
        same_wheel(s, path)
    evil_case(s, idx, build)


def same_wheel(s, path):
    r = add(s, "pypi:" + path, "--name", "pyfast2", "--with", "zlib1g-dev")
    if r.returncode == 0:
        ct.made["images"].append(("localhost/" if RT == "podman" else "") +
                                 "mcpgate-pypi-pyfast2:1.0")
    one, two = wheel_sha(s, "pyfast"), wheel_sha(s, "pyfast2")
    t.ok(r.returncode == 0 and one is not None and one == two,
         "%s: the same sdist built twice gives the same wheel, byte for byte (sha256 %s)" %
         (RT, one), (r.stderr[-1500:], one, two))


def evil_case(s, idx, build):
    host_file = os.path.join(s.dir, "the-build-ran-on-the-host")
    port = int(idx.url.split(":")[2].split("/")[0])
    evil = sdist_file(build, "evil", "1.0", {
        "pyproject.toml": PYPROJECT.split("\n[project]")[0].replace(
            "setuptools.build_meta", "setuptools.build_meta:__legacy__") + "\n",
        "setup.py": EVIL_SETUP_PY % {"port": port, "host_file": host_file} +
        "setup(name='evil', version='1.0', packages=['evil'], "
        "entry_points={'console_scripts': ['evil=evil:main']})\n",
        "evil/__init__.py": "def main():\n    pass\n"})
    r = add(s, "pypi:" + evil)
    if r.returncode == 0:
        ct.made["images"].append(("localhost/" if RT == "podman" else "") + "mcpgate-pypi-evil:1.0")
    wheels = glob.glob(os.path.join(s.env["XDG_DATA_HOME"], "mcpgate", "pypi", "evil",
                                    "wheels", "*.whl"))
    outcome = None
    if wheels:
        with zipfile.ZipFile(wheels[0]) as z:
            text = z.read("evil/outcome.py").decode()
            outcome = ast.literal_eval(text.split("=", 1)[1].strip())
    # as root, nobody; rootless, uid 0 inside is the person outside
    uid = 65534 if os.geteuid() == 0 else 0
    t.ok(outcome is not None and outcome["index"].startswith("refused") and
         outcome["host_file"].startswith("refused") and
         outcome["sdist_folder"].startswith("refused") and outcome["interfaces"] == ["lo"] and
         outcome["uid"] == uid and not os.path.exists(host_file),
         "%s: a hostile build, tried: no network (loopback alone, the host's index "
         "unreachable), no file written on the host or beside the sdist, not run as "
         "root (uid %d inside)" % (RT, uid), (outcome, r.stderr[-1500:]))


if __name__ == "__main__":
    sys.exit(main())
