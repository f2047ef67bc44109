#!/usr/bin/env python3
"""remove and prune on the fake runtime and a fake npm (make check;
docs/2026-12-02-daily-use.md): what add made (the entry, its image in the
runtime, the archive, the npm tree, review and approval records) goes with
remove and nothing else does; an image another entry runs stays; an image a
running serve uses goes once that serve stopped the server; --dry-run shows
what would go and removes nothing; prune finds what no entry uses.
Environment: MCPGATE, FAKES.
"""
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from mcpclient import Client, Tap  # noqa: E402
from fakenpm import Place  # noqa: E402

t = Tap()

REGISTRY = {
    "pkg-a": {"latest": "1.1.0", "versions": {"1.0.0": {}, "1.1.0": {"size": 3000}}},
    "@scope/pkg-b": {"latest": "2.0.0", "versions": {"2.0.0": {}}},
}

BEFORE = ("# the person's own servers\n\n[[server]]\nname = \"mine\"\n"
          "transport = \"remote\"\nurl = \"https://mine.example/mcp\"\n")


def new_place():
    p = Place(tempfile.mkdtemp(prefix="mcpgate-store-test-"), REGISTRY)
    p.write(BEFORE)
    return p


def what_add_made(p, name):
    return {"npm": os.path.isdir(os.path.join(p.data, "npm", name)),
            "archives": [f for f in p.files(p.data, "images") if f.endswith(".tar")],
            "images": [i for i in p.images() if "mcpgate-npm-%s@" % name in i]}


def test_remove():
    p = new_place()
    r = p.run("add", "npm:pkg-a@1.0.0")
    made = what_add_made(p, "pkg-a")
    t.ok(r.returncode == 0 and made["npm"] and len(made["archives"]) == 1 and
         len(made["images"]) == 1, "add made an entry, an npm tree, an archive and an image",
         (r.stderr, made))
    p.run("review", "pkg-a")
    r = p.run("approve", "pkg-a", "--tool", "echo", "--on", "--effect", "read")
    t.ok(r.returncode == 0 and os.path.isdir(os.path.join(p.data, "manifests", "pkg-a")) and
         os.path.exists(os.path.join(p.data, "reviews", "pkg-a.json")),
         "review and approve kept their records", r.stderr)
    after_add = p.text()
    r = p.run("remove", "pkg-a", "--dry-run")
    t.ok(r.returncode == 0 and p.text() == after_add and what_add_made(p, "pkg-a") == made and
         "would go" in r.stdout and "image in podman" in r.stdout and
         "image archive" in r.stdout and "npm tree" in r.stdout and
         "approved manifests" in r.stdout and "reviewed manifest" in r.stdout and
         re.search(r"its \[\[server\]\] in .*mcp.toml \(lines \d+ to \d+", r.stdout) and
         "nothing was removed" in r.stdout,
         "remove --dry-run shows each item with its size and removes nothing", r.stdout)
    r = p.run("remove", "pkg-a")
    gone = what_add_made(p, "pkg-a")
    t.ok(r.returncode == 0 and p.text() == BEFORE and not gone["npm"] and
         gone["archives"] == [] and gone["images"] == [] and
         p.files(p.data, "manifests") == [] and p.files(p.data, "reviews") == [] and
         "removed server pkg-a" in r.stdout,
         "remove takes the entry (mcp.toml as before add, byte for byte) and everything add, "
         "review and approve kept of it", (r.stdout, r.stderr, p.text(), gone))
    r = p.run("remove", "pkg-a")
    t.ok(r.returncode == 1 and 'no server "pkg-a"' in r.stderr,
         "a server that is not there is an error naming it", r.stderr)
    r = p.run("remove", "mine")
    t.ok(r.returncode == 0 and "[[server]]" not in p.text() and
         "# the person's own servers" in p.text(),
         "a hand-written remote entry goes too; the file's own comment stays", p.text())
    p.cleanup()


def test_shared_image():
    p = new_place()
    p.run("add", "npm:pkg-a@1.0.0", "--name", "first")
    r = p.run("add", "npm:pkg-a@1.0.0", "--name", "second")
    images = p.images()
    same = re.findall(r"@(sha256:[0-9a-f]{64})", "\n".join(images))
    t.ok(r.returncode == 0 and len(set(same)) == 1,
         "the same package twice is one image (one digest)", images)
    r = p.run("remove", "first")
    t.ok(r.returncode == 0 and "server second runs it too" in r.stdout and
         len(p.images()) >= 1 and
         len([f for f in p.files(p.data, "images") if f.endswith(".tar")]) == 1 and
         not os.path.isdir(os.path.join(p.data, "npm", "first")) and
         os.path.isdir(os.path.join(p.data, "npm", "second")),
         "an image another entry runs stays, with its archive; the npm tree goes",
         (r.stdout, p.images()))
    r = p.run("remove", "second")
    left = p.files(p.data, "images")
    t.ok(r.returncode == 0 and p.images() == [] and left != [] and
         all(f.startswith("node-") for f in left),
         "the last entry of an image takes it (its archive, manifest and Debian locks); "
         "node's layer, shared by every image, stays", (r.stdout, r.stderr, p.images(), left))
    p.cleanup()


def test_remove_while_serving():
    p = new_place()
    p.run("add", "npm:pkg-a@1.0.0")
    p.run("review", "pkg-a")
    p.run("approve", "pkg-a", "--tool", "echo", "--on", "--effect", "read")
    c = Client([__import__("fakenpm").MCPGATE, "serve", "--config", p.conf, "--workspace", p.ws],
               env=p.env, stderr=open(os.path.join(p.d, "serve.log"), "wb"))
    c.initialize()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not p.containers():
        time.sleep(0.05)
    running = p.containers()
    r = p.run("remove", "pkg-a")
    tools = c.request("tools/list").get("result", {}).get("tools", [])
    t.ok(running and r.returncode == 0 and p.images() == [] and p.containers() == [] and
         tools == [],
         "remove while serve runs it: serve stops it and withdraws its tools, then its image "
         "goes", (running, r.stdout, r.stderr, p.images(), p.containers(), tools))
    c.close()
    p.cleanup()


def test_forget_secret():
    p = new_place()
    host_entry = ('[[server]]\nname = "%s"\ntransport = "remote"\nurl = "https://%s/mcp"\n'
                  'credential = "token"\nposition = "header:Authorization"\n')
    p.write(BEFORE + host_entry % ("a", "a.example") + host_entry % ("b", "b.example"))
    p.secret("set", "token", input="s3cret\n")
    p.secret("bind", "token", "--host", "a.example", "--host", "b.example",
             "--position", "header:Authorization")
    r = p.run("remove", "a")
    lst = p.secret("list")
    t.ok(r.returncode == 0 and "credential token stays in the keychain" in r.stdout and
         "a.example" in lst.stdout, "without --forget-secret the keychain is as it was",
         (r.stdout, lst.stdout))
    p.write(BEFORE + host_entry % ("a", "a.example") + host_entry % ("b", "b.example"))
    r = p.run("remove", "a", "--forget-secret")
    lst = p.secret("list")
    t.ok(r.returncode == 0 and "binding of token to a.example" in r.stdout and
         "a.example" not in lst.stdout and "b.example" in lst.stdout,
         "--forget-secret takes the binding to its host; the one another entry uses stays",
         (r.stdout, lst.stdout))
    r = p.run("remove", "b", "--forget-secret", "--dry-run")
    lst2 = p.secret("list")
    t.ok(r.returncode == 0 and "secret token" in r.stdout and lst2.stdout == lst.stdout,
         "--dry-run says the secret would go, and keeps it", (r.stdout, lst2.stdout))
    r = p.run("remove", "b", "--forget-secret")
    lst = p.secret("list")
    t.ok(r.returncode == 0 and "token" not in lst.stdout,
         "the last entry naming it takes the secret", (r.stdout, lst.stdout))
    p.cleanup()


def test_prune():
    p = new_place()
    p.run("add", "npm:pkg-a@1.0.0")
    p.run("review", "pkg-a")
    p.run("approve", "pkg-a", "--tool", "echo", "--on", "--effect", "read")
    kept_text = p.text()
    # what a refused add leaves: an image, its archive and an npm tree, no entry
    r = p.run("add", "npm:@scope/pkg-b", "--name", "gone")
    p.run("review", "gone")
    p.write(kept_text)
    images_dir = os.path.join(p.data, "images")
    with open(os.path.join(images_dir, "npm-x.tar.new"), "w") as fh:
        fh.write("half an archive")
    old_pin = os.path.join(p.data, "manifests", "pkg-a", "0" * 64 + ".json")
    with open(old_pin, "w") as fh:
        fh.write("{}")
    # an image of mcpgate's kind that another mcpgate made (no archive here)
    foreign = "localhost/mcpgate-npm-theirs@sha256:" + "f" * 64
    with open(os.path.join(p.bin, "images"), "a") as fh:
        fh.write(foreign + "\n")
    os.makedirs(os.path.join(p.bin, "image-config"), exist_ok=True)
    with open(os.path.join(p.bin, "image-config", "f" * 64), "w") as fh:
        fh.write('{"labels": {"io.mcpgate.npm.package": "theirs"}, "size": 5}\n')
    # logs: an old audit log, a recent one
    sessions = os.path.join(p.state, "sessions")
    os.makedirs(sessions, exist_ok=True)
    for name, age in (("aaaaaaaaaaaa.jsonl", 40), ("bbbbbbbbbbbb.jsonl", 0)):
        path = os.path.join(sessions, name)
        with open(path, "w") as fh:
            fh.write('{"ts":"x","session":"s","event":"session.start","servers":["pkg-a"]}\n')
        t0 = time.time() - age * 86400
        os.utime(path, (t0, t0))
    before = {"images": p.images(), "archives": p.files(images_dir),
              "npm": p.files(p.data, "npm"), "reviews": p.files(p.state, "reviews", "sessions")}
    r = p.run("prune", "--dry-run", "--keep-logs", "30")
    t.ok(r.returncode == 0 and "would go" in r.stdout and "mcpgate-npm-gone" in r.stdout and
         "unfinished image archive" in r.stdout and "npm tree" in r.stdout and
         "an approved manifest it no longer has" in r.stdout and
         "audit log, older than kept" in r.stdout and
         "review log of a server not in mcp.toml" in r.stdout and
         "aaaaaaaaaaaa" in r.stdout and "bbbbbbbbbbbb" not in r.stdout and
         "theirs" not in r.stdout and "nothing was removed" in r.stdout and
         before == {"images": p.images(), "archives": p.files(images_dir),
                    "npm": p.files(p.data, "npm"),
                    "reviews": p.files(p.state, "reviews", "sessions")},
         "prune --dry-run shows what no entry uses, with sizes, and removes nothing",
         r.stdout + r.stderr)
    r = p.run("prune")
    t.ok(r.returncode == 0 and "audit and review logs are all kept" in r.stdout and
         os.path.exists(os.path.join(sessions, "aaaaaaaaaaaa.jsonl")),
         "without a retention every audit log is kept, and prune says how to set one",
         r.stdout)
    p.write(kept_text + "")
    with open(os.path.join(p.conf, "config.toml"), "a") as fh:
        fh.write("keep_logs_days = 30\n")
    r = p.run("prune", "--yes")
    a_images = [i for i in p.images() if "mcpgate-npm-pkg-a@" in i]
    t.ok(r.returncode == 0 and p.text() == kept_text and len(a_images) == 1 and
         foreign in p.images() and not any("-gone@" in i for i in p.images()) and
         p.files(p.data, "npm") == ["pkg-a"] and
         len([f for f in p.files(images_dir) if f.endswith(".tar")]) == 1 and
         "npm-x.tar.new" not in p.files(images_dir) and not os.path.exists(old_pin) and
         any(f.startswith("node-") and f.endswith(".tar.gz") for f in p.files(images_dir)) and
         len([f for f in p.files(images_dir) if f.endswith(".debian.lock")]) == 1 and
         os.path.isdir(os.path.join(p.data, "manifests", "pkg-a")) and
         p.files(sessions) == ["bbbbbbbbbbbb.jsonl"] and
         all("gone" not in open(os.path.join(p.state, "reviews", "sessions", f)).read()
             for f in p.files(p.state, "reviews", "sessions")),
         "prune removes what no entry uses (an image's Debian locks with it), keeps what one "
         "does and node's shared layer, and never an image this mcpgate did not make", (r.stdout, r.stderr, p.images(), p.files(images_dir)))
    r = p.run("prune", "--yes")
    t.ok(r.returncode == 0 and "nothing goes" in r.stdout, "a second prune finds nothing",
         r.stdout)
    r = p.run("prune", "--keep-logs", "0")
    t.ok(r.returncode == 2 and "--keep-logs" in r.stderr, "--keep-logs 0 is a usage error",
         r.stderr)
    p.cleanup()


def main():
    test_remove()
    test_shared_image()
    test_remove_while_serving()
    test_forget_secret()
    test_prune()
    t.done()


main()
