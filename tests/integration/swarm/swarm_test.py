#!/usr/bin/env python3
"""mcpgate's swarm driver on a real multi-node Docker swarm (issue 28,
docs/2026-12-02-swarm.md).

up.sh brings up a manager and two workers, each a dockerd in a network
namespace of its own; the workers enforce mcpgate's seccomp profile and
no-new-privileges node-wide, the manager does not. The cases then run
sessions through `mcpgate serve` with runtime = "swarm" and try, from inside
the task on the worker it lands on, what the issue asks; down.sh removes the
swarm, and the last case checks that nothing of it is left on this machine.

Opt-in (MCPGATE_CONTAINER_TESTS=1), root; skipped (77) where the swarm
cannot come up. Never touches the host's dockerd."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "lib"))
from mcpclient import Client, Tap, text_of  # noqa: E402

MCPGATE = os.path.abspath(os.environ.get("MCPGATE", "./mcpgate"))
PROBE = os.path.abspath(os.environ.get("PROBE", "build/fakes/mcpgate-probe"))
LAUNCH = os.path.abspath(os.environ.get("LAUNCH", "mcpgate-launch"))
t = Tap()


def skip(why):
    print("ok 1 # SKIP swarm: %s" % why)
    print("0 passed, 0 failed")
    return 77


class Swarm:
    """The swarm up.sh made: its env file as attributes, docker on each node"""

    def __init__(self, d):
        self.dir = d
        self.env = {}
        with open(os.path.join(d, "env")) as fh:
            for line in fh:
                k, _, v = line.strip().partition("=")
                self.env[k] = v
        self.prefix = self.env["SWARM_PREFIX"]
        self.registry = self.env["SWARM_REGISTRY"]

    def docker(self, node, *args, check=True, timeout=120, input=None):
        host = self.env["SWARM_" + {"m": "MANAGER", "w1": "W1", "w2": "W2"}[node]]
        r = subprocess.run(["docker", "-H", host] + list(args), capture_output=True, text=True,
                           timeout=timeout, input=input)
        if check and r.returncode != 0:
            raise RuntimeError("docker %s: %s" % (" ".join(args), r.stderr.strip()[-500:]))
        return r

    def node_name(self, node):
        return "%s-%s" % (self.prefix, node)


def derive_profile(base):
    """mcpgate's seccomp profile, as mcpgate derives it (any command that
    makes a driver does; `list` runs nothing)"""
    conf = os.path.join(base, "profile-conf")
    os.makedirs(conf)
    with open(os.path.join(conf, "config.toml"), "w") as fh:
        fh.write('[mcp]\nruntime = "docker"\n')
    with open(os.path.join(conf, "mcp.toml"), "w") as fh:
        fh.write('[[server]]\nname = "x"\ntransport = "container"\n'
                 'image = "127.0.0.1:5000/x@sha256:%s"\n' % ("0" * 64))
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"),
           "XDG_DATA_HOME": os.path.join(base, "data"),
           "XDG_STATE_HOME": os.path.join(base, "state")}
    subprocess.run([MCPGATE, "list", "--config", conf], env=env, capture_output=True,
                   timeout=60)
    found = glob.glob(os.path.join(base, "data", "mcpgate", "seccomp", "mcpgate-*.json"))
    return found[0] if found else None


def leftovers(prefix, d):
    """what of the swarm is still on this machine"""
    left = []
    r = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    left += [x.split()[0] for x in r.stdout.splitlines() if x.startswith(prefix)]
    r = subprocess.run(["pgrep", "-f", d], capture_output=True, text=True)
    left += ["process " + x for x in r.stdout.split()]
    left += glob.glob("/sys/fs/cgroup/*/%s-*" % prefix)
    if os.path.exists(d):
        left.append(d)
    with open("/proc/self/mounts") as fh:
        left += [line.split()[1] for line in fh if d in line]
    return left


def test_topology(sw):
    nodes = sw.docker("m", "node", "ls", "--format",
                      "{{.Hostname}} {{.Status}} {{.ManagerStatus}}").stdout.split("\n")
    ready = sorted(x.split()[0] for x in nodes if " Ready" in x)
    t.ok(ready == sorted(sw.node_name(n) for n in ("m", "w1", "w2")),
         "a manager and two workers, each a dockerd in its own network namespace, are Ready",
         "\n".join(nodes))
    labels = {}
    for n in ("m", "w1", "w2"):
        out = sw.docker("m", "node", "inspect", sw.node_name(n), "--format",
                        "{{json .Spec.Labels}}").stdout
        labels[n] = json.loads(out or "{}") or {}
    t.ok(labels["w1"].get("mcpgate") == "true" and labels["w2"].get("mcpgate") == "true" and
         "mcpgate" not in labels["m"], "the workers are labelled for mcpgate, the manager is not",
         labels)


def main():
    if os.environ.get("MCPGATE_CONTAINER_TESTS") != "1":
        return skip("set MCPGATE_CONTAINER_TESTS=1 to run it")
    if os.geteuid() != 0:
        return skip("needs root (network namespaces, dockerd)")
    base = tempfile.mkdtemp(prefix="mcpgate-swarm-")
    d = tempfile.mkdtemp(prefix="mgsw.", dir="/tmp")
    prefix = None
    try:
        profile = derive_profile(base)
        if profile is None:
            t.ok(False, "mcpgate derives its seccomp profile")
            return t.done()
        r = subprocess.run([os.path.join(HERE, "up.sh"), d, profile], capture_output=True,
                           text=True, timeout=300)
        sys.stdout.write(r.stdout)
        if r.returncode == 77:
            return skip(r.stdout.strip().splitlines()[-1] if r.stdout.strip() else "up.sh")
        if not t.ok(r.returncode == 0, "the swarm comes up", r.stdout + r.stderr):
            return t.done()
        sw = Swarm(d)
        prefix = sw.prefix
        for case in (test_topology,):
            try:
                case(sw)
            except Exception as e:
                t.ok(False, "%s raised %s: %s" % (case.__name__, type(e).__name__, e))
    finally:
        if os.path.exists(os.path.join(d, "made")):
            with open(os.path.join(d, "made")) as fh:
                prefix = prefix or re.search(r"^pfx=(\S+)", fh.read(), re.M).group(1)
        subprocess.run([os.path.join(HERE, "down.sh"), d], timeout=300)
        if prefix is not None:
            left = leftovers(prefix, d)
            t.ok(not left, "nothing of the swarm is left on this machine", left)
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(d, ignore_errors=True)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
