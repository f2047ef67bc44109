#!/usr/bin/env python3
"""mcpgate pull and list on the fake runtime: a present image is not fetched
again; a localhost/ image that no registry serves gets the command that makes
it present; list says why whenever it cannot tell whether an image is there.
Environment: MCPGATE, FAKES.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from mcpclient import Tap  # noqa: E402

from gwtest import Fixture  # noqa: E402
import gwtest  # noqa: E402

t = Tap()
LOCAL = "localhost/probe@sha256:" + "ef" * 32


def pulls(f):
    return [r["argv"] for r in f.runtime_log() if r["argv"][1:2] == ["pull"]]


for runtime in ("podman", "docker"):
    f = Fixture(gwtest.server("here", None) + gwtest.server("local", None, image=LOCAL) +
                gwtest.server("away", None, image="localhost:5000/away@sha256:" + "12" * 32),
                images=(gwtest.IMAGE,), runtime=runtime)
    r = f.mcpgate("pull", "here")
    t.ok(r.returncode == 0 and "is present already: nothing to pull" in r.stdout and
         pulls(f) == [], "%s: a present image is not pulled again" % runtime,
         (r.stdout, r.stderr, pulls(f)))
    r = f.mcpgate("pull", "local")
    t.ok(r.returncode == 1 and "localhost/ names an image made on this machine" in r.stderr and
         "%s load -i ARCHIVE" % runtime in r.stderr and pulls(f) == [],
         "%s: a missing localhost/ image is not pulled; the message says how to load it"
         % runtime, r.stderr)
    with open(os.path.join(f.rt, "images"), "a") as fh:
        fh.write(LOCAL + "\n")
    r = f.mcpgate("pull", "local")
    t.ok(r.returncode == 0 and "present already" in r.stdout and pulls(f) == [],
         "%s: a loaded localhost/ image is present: nothing to do" % runtime, r.stderr)
    r = f.mcpgate("pull", "away")
    t.ok(r.returncode == 0 and len(pulls(f)) == 1 and "away" in r.stdout,
         "%s: a missing image from a registry is pulled" % runtime, (r.stderr, pulls(f)))
    # the runtime cannot answer (a daemon down, newuidmap missing)
    with open(os.path.join(f.rt, "inspect-fails"), "w") as fh:
        fh.write("Cannot connect to the Docker daemon at unix:///var/run/docker.sock. "
                 "Is the docker daemon running?\n")
    r = f.mcpgate("list")
    t.ok("image unknown" in r.stdout and "why the image is unknown:" in r.stdout and
         "Is the docker daemon running?" in r.stdout,
         "%s: list gives the reason when it cannot tell" % runtime, r.stdout + r.stderr)
    r = f.mcpgate("pull", "here")
    t.ok(r.returncode == 1 and "cannot tell whether here's image is present" in r.stderr and
         "Is the docker daemon running?" in r.stderr,
         "%s: so does pull" % runtime, r.stderr)
    f.cleanup()
# podman gone from PATH after the images went into it: docker is found, and
# what that means is said (not only docker's "Cannot connect to the Docker daemon")
f = Fixture(gwtest.server("away", None, image="localhost:5000/away@sha256:" + "12" * 32))
r = f.mcpgate("pull", "away")
record = os.path.join(f.dir, "data", "mcpgate", "runtime")
t.ok(r.returncode == 0 and open(record).read() == "podman\n",
     "a pull records the runtime the image went into", (r.stderr, os.listdir(f.dir)))
r = f.mcpgate("list")
t.ok("images mcpgate put in a runtime" not in r.stderr,
     "the same runtime found again: nothing is said", r.stderr)
os.rename(os.path.join(f.rt, "podman"), os.path.join(f.rt, "docker"))
conf_toml = os.path.join(f.conf, "config.toml")
with open(conf_toml) as fh:
    auto = fh.read().replace('runtime = "podman"\n', "")
with open(conf_toml, "w") as fh:
    fh.write(auto)  # runtime chosen by mcpgate: podman when on PATH, else docker
env = f.env()
env["PATH"] = f.rt  # no podman of the machine's either
r = subprocess.run([gwtest.MCPGATE, "list", "--config", f.conf], env=env, capture_output=True,
                   text=True, timeout=60)
t.ok("docker is used (podman is not on PATH)" in r.stderr and
     "are in podman (as %s records)" % record in r.stderr and
     'set runtime = "docker" in config.toml' in r.stderr and r.stderr.count("podman is not") == 1,
     "podman gone: docker is used, and the warning says the images are in podman", r.stderr)
with open(os.path.join(f.conf, "config.toml"), "w") as fh:
    fh.write("[mcp]\nruntime = \"docker\"\n")
r = f.mcpgate("list")
t.ok("docker is used (runtime in config.toml)" in r.stderr and 'set runtime = "podman"' in r.stderr,
     "docker chosen in config.toml: said as well", r.stderr)
# serve tells the client too: stderr is where a client's user seldom looks
c = f.start()
c.initialize()
c.request("ping")
said = [n["params"]["data"] for n in c.notifications if n["method"] == "notifications/message"]
c.close()
t.ok(any("docker is used (runtime in config.toml)" in x and 'set runtime = "podman"' in x
         for x in said) and
     any(x["event"] == "session.runtime_note" for x in f.audit()),
     "serve: the client is told, and the session's audit log keeps it", said)
f.cleanup()
sys.exit(t.done())
