#!/usr/bin/env python3
"""podman beside dockerd, on the real runtimes (docs/operations.md).

dockerd may set the host's FORWARD policy to DROP, and with br_netfilter
loaded traffic within one podman bridge goes through that chain: a server
could not reach its egress sidecar. This test makes exactly that state
(policy DROP, no accept rule for podman's bridges), then shows that `check`
and `review` say so with the rule that fixes it, that `serve` makes the
server unavailable with that reason before any sidecar starts, that the
rule it names does fix it, and that the host's iptables are left exactly as
they were found. It runs in the docker pass of the integration tests (so
dockerd runs and br_netfilter is loaded) and drives podman.
"""
import os
import shutil
import subprocess
import sys
import tempfile

PASS = os.environ.get("MCPGATE_CONTAINER_TEST_RUNTIME", "podman")
os.environ["MCPGATE_CONTAINER_TEST_RUNTIME"] = "podman"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import containers_test as ct  # noqa: E402

t = ct.t
EGRESS = os.path.abspath(os.environ.get("MCPGATE_EGRESS", "mcpgate-egress"))
RULE = ["FORWARD", "-i", "podman+", "-o", "podman+", "-j", "ACCEPT"]
FIX = "iptables -I FORWARD -i podman+ -o podman+ -j ACCEPT"


def ipt(*args, check=True):
    r = subprocess.run(["iptables"] + list(args), capture_output=True, text=True, timeout=30)
    if check and r.returncode != 0:
        raise RuntimeError("iptables %s: %s" % (" ".join(args), r.stderr.strip()))
    return r


def bridge_nf():
    try:
        with open("/proc/sys/net/bridge/bridge-nf-call-iptables") as fh:
            return fh.read().strip() == "1"
    except OSError:
        return False


def unavailable_notes(c):
    return [n["params"]["data"] for n in c.notifications
            if n["method"] == "notifications/message"]


def test(base, probe_image):
    # pinned (to a manifest it does not list), so that serve gets as far as
    # refusing it for its network: a server never approved is not started at
    # all, and serve would say that instead
    server = ct.probe_server("walled", probe_image, tools=("echo",),
                             manifest=ct.UNMATCHED_PIN,
                             extra='network = ["upstream.invalid:8080"]\n')
    s = ct.Session(base, server, config='egress = "%s"\n' % EGRESS)
    r = s.mcpgate("pull", "walled")
    t.ok(r.returncode == 0, "pull", r.stderr)

    r = s.mcpgate("check")
    t.ok(r.returncode == 0 and "configuration OK" in r.stdout and
         "FORWARD policy is DROP" in r.stderr and FIX in r.stderr,
         "check says servers with hosts cannot reach their proxy, and the rule", r.stderr)
    # review starts the server as a session does (one pipeline), with its
    # egress: it is refused for the same reason, with the same rule
    r = s.mcpgate("review", "walled")
    t.ok(r.returncode != 0 and "server walled is unavailable" in r.stderr and
         "FORWARD policy is DROP" in r.stderr and FIX in r.stderr,
         "review refuses too, as serve will, with the reason and the rule", r.stderr)

    c = s.serve()
    c.initialize()
    ct.wait_settled(s.state)
    names = [x["name"] for x in c.request("tools/list", timeout=120)["result"]["tools"]]
    notes = unavailable_notes(c)
    c.close(timeout=60)
    sid = s.session_ids()[-1]
    audit = s.audit(sid)
    t.ok(names == [] and any("server walled is unavailable" in n and
                             "FORWARD policy is DROP" in n and FIX in n for n in notes),
         "serve: the server is unavailable with the reason and the rule", notes)
    t.ok(not any(x["event"] == "egress.start" for x in audit),
         "no sidecar was started to time out", [x["event"] for x in audit])
    t.ok(ct.labelled("networks", "mcpgate.session=" + sid) == [],
         "its networks are removed")

    ipt("-I", *RULE)
    try:
        r = s.mcpgate("review", "walled")
        t.ok(r.returncode == 0 and "FORWARD policy is DROP" not in r.stderr,
             "with the rule it names, review starts it", r.stderr[-800:])
        r = s.mcpgate("approve", "walled")
        t.ok(r.returncode == 0, "and approve", r.stderr)
        c = s.serve()
        c.initialize()
        ct.wait_settled(s.state)
        names = [x["name"] for x in c.request("tools/list", timeout=120)["result"]["tools"]]
        c.close(timeout=60)
        t.ok(names == ["walled__echo"], "with the rule it names, the server starts", names)
    finally:
        ipt("-D", *RULE)


def main():
    if PASS != "docker":
        return ct.skip("runs in the docker pass, beside a running dockerd")
    if os.geteuid() != 0:
        return ct.skip("needs root (the host's iptables)")
    for cmd in ("podman", "docker", "iptables"):
        if shutil.which(cmd) is None:
            return ct.skip("%s is not installed" % cmd)
    if subprocess.run(["docker", "version"], capture_output=True).returncode != 0:
        return ct.skip("dockerd is not running")
    if not bridge_nf():
        return ct.skip("br_netfilter is not loaded: bridged traffic skips iptables here")
    print("# podman beside dockerd", flush=True)
    before = ipt("-S").stdout
    saved = subprocess.run(["iptables-save", "-t", "filter"], capture_output=True, text=True,
                           timeout=30).stdout
    policy = "DROP" if "-P FORWARD DROP" in before.splitlines() else "ACCEPT"
    had_rule = ipt("-C", *RULE, check=False).returncode == 0
    base = tempfile.mkdtemp(prefix="mcpgate-itest-beside-")
    try:
        if had_rule:
            ipt("-D", *RULE)
        ipt("-P", "FORWARD", "DROP")
        probe_image = ct.build_image("mcpgate-itest-probe", {"/mcpgate-probe": ct.PROBE},
                                     ["/mcpgate-probe"])
        test(base, probe_image)
    except Exception as e:
        t.ok(False, "the case raised %s: %s" % (type(e).__name__, e))
    finally:
        ipt("-P", "FORWARD", policy, check=False)
        if had_rule and ipt("-C", *RULE, check=False).returncode != 0:
            ipt("-I", *RULE, check=False)
        after = ipt("-S").stdout
        if after != before and saved:
            subprocess.run(["iptables-restore", "-T", "filter"], input=saved, text=True,
                           capture_output=True, timeout=30)
            after = ipt("-S").stdout
        t.ok(after == before, "the host's iptables are exactly as the test found them",
             [x for x in after.splitlines() if x not in before.splitlines()] +
             ["-" + x for x in before.splitlines() if x not in after.splitlines()])
        ct.cleanup()
        shutil.rmtree(base, ignore_errors=True)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
