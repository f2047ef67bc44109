#!/usr/bin/env python3
"""update and outdated on the fake runtime and a fake npm (make check;
docs/2026-12-02-daily-use.md): a newer release is installed, packed, loaded
and started isolated; what changed is shown; tool settings of unchanged
tools are kept and the others turned off; the entry switches only when the
person says so (--yes, or yes on a terminal), and the old image then goes;
otherwise the new one goes again. A serve that runs takes the new entry up.
Environment: MCPGATE, FAKES.
"""
import os
import re
import sys
import tempfile
import time
import tomllib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from mcpclient import Client, Tap, text_of  # noqa: E402
from fakenpm import MCPGATE, Place  # noqa: E402

t = Tap()

REGISTRY = {
    "pkg-a": {"latest": "1.1.0",
              "versions": {"1.0.0": {}, "1.1.0": {"size": 2000}, "1.2.0": {"size": 3000}}},
}
# what each release offers: 1.0.0 echo, env, slow; 1.1.0 echo, env, status;
# 1.2.0 changes every description
PROBE_ARGS = ("io.mcpgate.npm.version=1.0.0\t--tools\techo,env,slow\n"
              "io.mcpgate.npm.version=1.1.0\t--tools\techo,env,status\n"
              "io.mcpgate.npm.version=1.2.0\t--tools\techo,env,status\t--describe-suffix\t!\n")


def new_place():
    p = Place(tempfile.mkdtemp(prefix="mcpgate-update-test-"), REGISTRY)
    with open(os.path.join(p.bin, "probe-args"), "w") as fh:
        fh.write(PROBE_ARGS)
    return p


def server_of(p, name="pkg-a"):
    doc = tomllib.loads(p.text())
    return [s for s in doc.get("server", []) if s["name"] == name][0]


def test_update():
    p = new_place()
    r = p.run("add", "npm:pkg-a@1.0.0")
    p.run("review", "pkg-a")
    r = p.run("approve", "pkg-a", "--tool", "echo,slow", "--on", "--effect", "read",
              "--tool", "env", "--on", "--effect", "write")
    old = server_of(p)
    t.ok(r.returncode == 0 and old["tools"]["slow"]["on"], "1.0.0 added and approved",
         r.stderr)
    r = p.run("outdated")
    t.ok(r.returncode == 0 and re.search(r"pkg-a +npm:pkg-a 1\.0\.0, latest 1\.1\.0: mcpgate "
                                         r"update pkg-a", r.stdout),
         "outdated names the release and the command", r.stdout + r.stderr)
    js = p.run("outdated", "--json")
    t.ok('"outdated":true' in js.stdout.replace(" ", ""), "outdated --json", js.stdout)
    before, images = p.text(), p.images()
    r = p.run("update", "pkg-a")
    t.ok(r.returncode == 1 and "not switched" in r.stderr and "--yes" in r.stderr and
         p.text() == before and p.images() == images and
         not os.path.exists(os.path.join(p.data, "npm", "pkg-a.update")) and
         "changes since the approved manifest (2)" in r.stdout and
         "added status" in r.stdout and "removed slow" in r.stdout,
         "not on a terminal and without --yes: the diff is shown, nothing switches, the new "
         "image goes again", (r.stdout, r.stderr, p.images()))
    t.ok(re.search(r"\[2/6\] npm install pkg-a@1\.1\.0, install scripts off: .* in ", r.stderr)
         and re.search(r"\[5/6\] the load into podman: .* in ", r.stderr),
         "not on a terminal each long step is one line when it ends: what, how much, how "
         "long", r.stderr)
    r = p.run("update", "pkg-a", "--yes")
    new = server_of(p)
    tree = open(os.path.join(p.data, "npm", "pkg-a", "node_modules", "pkg-a",
                             "package.json")).read()
    t.ok(r.returncode == 0 and new["image"] != old["image"] and
         new["manifest"] != old["manifest"] and
         new["tools"]["echo"] == old["tools"]["echo"] and
         new["tools"]["env"] == old["tools"]["env"] and
         new["tools"]["slow"]["on"] is False and "status" not in new["tools"] and
         '"1.1.0"' in tree and "kept: echo" in r.stdout and "turned off: slow" in r.stdout,
         "--yes switches image and pin; unchanged tools keep their settings, a tool gone is "
         "turned off, a new one stays off", (r.stdout, r.stderr, new))
    note = re.search(r"((?:#[^\n]*\n)+)\[\[server\]\]\nname = \"pkg-a\"", p.text())
    note = note.group(1) if note else ""
    t.ok("# updated by `mcpgate update pkg-a` to npm:pkg-a@1.1.0 on " in note and
         "; npm integrity sha512-" in note and "pkg-a@1.0.0" not in note,
         "the note above the entry says what it runs now, not what add installed", note)
    t.ok(old["image"] not in "\n".join(p.images()) and new["image"] in p.images() and
         len([f for f in p.files(p.data, "images") if f.endswith(".tar")]) == 1 and
         not os.path.exists(os.path.join(p.data, "npm", "pkg-a.update")),
         "the old image and its archive go once it switched", (p.images(), r.stdout))
    lst = p.run("list")
    t.ok("manifest approved," in lst.stdout and "another image" not in lst.stdout,
         "list: approved for the image it runs", lst.stdout)
    r = p.run("update", "pkg-a")
    t.ok(r.returncode == 0 and "is up to date" in r.stdout, "again: up to date", r.stdout)
    # on a terminal: asked, then asked about the new and changed tools
    shown, status = p.run_tty("update", "pkg-a", "1.2.0", input="y\n" + "r\n" * 3)
    new2 = server_of(p)
    t.ok(status == 0 and "switch pkg-a to pkg-a@1.2.0? [y/N]" in shown and
         "r/w/o/Enter/q?" in shown and new2["tools"]["status"] == {"on": True, "effect": "read"}
         and new2["tools"]["echo"]["on"] is True and "[" in shown and "/6]" in shown,
         "on a terminal: the question, then each new or changed tool, and the progress "
         "drawn", (shown[-3000:], new2))
    before, images = p.text(), p.images()
    shown, status = p.run_tty("update", "pkg-a", "1.0.0", input="n\n")
    t.ok(status == 0 and p.text() == before and p.images() == images and
         "not switched" in shown, "no on a terminal: nothing switches, the new image goes",
         shown[-2000:])
    r = p.run("update", "pkg-a", "9.9.9", "--yes")
    t.ok(r.returncode == 1 and "no version matches 9.9.9" in r.stderr and p.text() == before,
         "a version the registry does not have is named", r.stderr)
    p.cleanup()


def test_update_while_serving():
    p = new_place()
    p.run("add", "npm:pkg-a@1.0.0")
    p.run("review", "pkg-a")
    p.run("approve", "pkg-a", "--tool", "echo", "--on", "--effect", "read")
    c = Client([MCPGATE, "serve", "--config", p.conf, "--workspace", p.ws], env=p.env,
               stderr=open(os.path.join(p.d, "serve.log"), "wb"))
    c.initialize()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not p.containers():
        time.sleep(0.05)
    old_image = server_of(p)["image"]
    r = p.run("update", "pkg-a", "--yes")
    r2 = c.call("pkg-a__echo", {"text": "after"}, timeout=60)
    t.ok(r.returncode == 0 and text_of(r2) == "after" and
         old_image not in "\n".join(p.images()),
         "update while serve runs it: serve starts it again with the new image, and the old "
         "one goes", (r.stdout, r.stderr, r2, p.images()))
    c.close()
    p.cleanup()


def test_not_from_add():
    p = new_place()
    p.write('[[server]]\nname = "byhand"\ntransport = "container"\n'
            'image = "localhost:5000/probe@sha256:%s"\n' % ("ab" * 32))
    with open(os.path.join(p.bin, "images"), "a") as fh:
        fh.write("localhost:5000/probe@sha256:%s\n" % ("ab" * 32))
    r = p.run("update", "byhand")
    t.ok(r.returncode == 1 and "does not say where it came from" in r.stderr,
         "an image not made by add: update says so", r.stderr)
    r = p.run("outdated")
    t.ok(r.returncode == 0 and "byhand" in r.stdout and "cannot tell" in r.stdout,
         "outdated lists it as not known", r.stdout)
    p.cleanup()


def main():
    test_update()
    test_update_while_serving()
    test_not_from_add()
    t.done()


main()
