#!/usr/bin/env python3
"""runtime = "swarm" beside podman (issue 28): session start (serve until the
server's tool is offered) and the tools/call round trip of `echo`, on a real
swarm of three dockerd in network namespaces (tests/integration/swarm/up.sh)
and on podman on this machine, the same probe image pinned by digest.

Root only; prints medians, never asserts on time. Checks that every echo
answer is its own text and that nothing is left on the swarm.
  python3 bench/swarm.py [--sessions N] [--calls N]"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration", "swarm"))
import swarm_test as st  # noqa: E402
from mcpclient import text_of  # noqa: E402


def podman_probe(base):
    """the probe in the local registry (127.0.0.1:5000), pulled by digest into podman"""
    root = os.path.join(base, "probe-podman")
    os.makedirs(os.path.join(root, "tmp"))
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    shutil.copy(st.PROBE, os.path.join(root, "mcpgate-probe"))
    tar = os.path.join(base, "probe-podman.tar")
    subprocess.run(["tar", "-C", root, "-cf", tar, "."], check=True)
    ref = "localhost:5000/mcpgate-bench-swarm-probe:%d" % os.getpid()
    subprocess.run(["podman", "import", "--change", 'ENTRYPOINT ["/mcpgate-probe"]', tar, ref],
                   check=True, capture_output=True)
    subprocess.run(["podman", "push", "--tls-verify=false", ref], check=True, capture_output=True)
    req = urllib.request.Request("http://127.0.0.1:5000/v2/%s/manifests/%s"
                                 % tuple(ref.split("/", 1)[1].split(":")), method="HEAD")
    req.add_header("Accept", "application/vnd.oci.image.manifest.v1+json, "
                             "application/vnd.docker.distribution.manifest.v2+json")
    with urllib.request.urlopen(req, timeout=10) as r:
        digest = r.headers["Docker-Content-Digest"]
    subprocess.run(["podman", "rmi", "-f", ref], capture_output=True)
    return "localhost:5000/mcpgate-bench-swarm-probe@" + digest


def measure(label, sw, base, image, runtime, sessions, calls, anomalies):
    s = st.Session(sw, base, image, runtime=runtime)
    s.mcpgate("pull", "probe")
    s.mcpgate("review", "probe")
    s.mcpgate("approve", "probe")
    starts, trips = [], []
    for _ in range(sessions):
        began = time.monotonic()
        c = s.serve()
        c.initialize()
        if "probe__echo" not in st.ready(c):
            anomalies.append("%s: the server did not start" % label)
            c.close(timeout=120)
            continue
        starts.append(time.monotonic() - began)
        for i in range(calls):
            text = "round trip %d" % i
            t0 = time.monotonic()
            got = text_of(c.call("probe__echo", {"text": text}, timeout=60))
            trips.append(time.monotonic() - t0)
            if got != text:
                anomalies.append("%s: echo answered %r for %r" % (label, got, text))
        c.close(timeout=120)
    return starts, trips


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=3)
    ap.add_argument("--calls", type=int, default=50)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench/swarm.py: needs root (network namespaces, dockerd)")
        return 77
    base = tempfile.mkdtemp(prefix="mcpgate-bench-swarm-")
    d = tempfile.mkdtemp(prefix="mgsw.", dir="/tmp")
    anomalies, rows = [], []
    try:
        profile = st.derive_profile(base)
        r = subprocess.run([os.path.join(st.HERE, "up.sh"), d, profile], capture_output=True,
                           text=True, timeout=300)
        if r.returncode != 0:
            print(r.stdout + r.stderr)
            return r.returncode
        sw = st.Swarm(d)
        image = st.build_probe(sw, base)
        rows.append(("swarm (2 workers)",) + measure("swarm", sw, base, image, "swarm",
                                                     args.sessions, args.calls, anomalies))
        left = st.nothing_owned(sw)
        if any(left.values()):
            anomalies.append("left on the swarm: %s" % left)
        if shutil.which("podman"):
            try:
                rows.append(("podman (local)",) + measure(
                    "podman", sw, base, podman_probe(base), "podman", args.sessions, args.calls,
                    anomalies))
            except Exception as e:
                anomalies.append("podman: %s: %s" % (type(e).__name__, e))
    finally:
        subprocess.run([os.path.join(st.HERE, "down.sh"), d], timeout=300)
        shutil.rmtree(base, ignore_errors=True)
    print("%-20s %18s %24s" % ("runtime", "session start (s)", "tools/call round trip (ms)"))
    for label, starts, trips in rows:
        print("%-20s %18s %24s" % (
            label, "%.1f (n=%d)" % (statistics.median(starts), len(starts)) if starts else "-",
            "%.2f p90 %.2f (n=%d)" % (statistics.median(trips) * 1000,
                                      sorted(trips)[int(len(trips) * 0.9)] * 1000, len(trips))
            if trips else "-"))
    for a in anomalies:
        print("anomaly: " + a)
    return 1 if anomalies else 0


if __name__ == "__main__":
    sys.exit(main())
