#!/usr/bin/env python3
"""mcpgate pull and list on the fake runtime: a present image is not fetched
again; a localhost/ image that no registry serves gets the command that makes
it present; list says why whenever it cannot tell whether an image is there.
Environment: MCPGATE, FAKES.
"""
import os
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
sys.exit(t.done())
