#!/usr/bin/env python3
"""A mount swapped under the runtime, raced for real (docs/mounts.md).

The attack: a container with a write mount of `shared` swaps `shared/sub`
between the folder and a link to the host's `/` as fast as it can
(busybox, in a loop), while mcpgate starts another server whose mount is
`shared/sub`, session after session. Before the fix, a few tries were
enough for the second server to get the host's `/`. Now every start must
give it the folder itself, read-only, or refuse to start. A start never
gives it anything else. A read-only mount with a mount below it stays
read-only all the way down: nothing below comes along. Runs as root (mcpgate
stages each mount on a private bind of its own) and as a user with rootless
podman (the bind is made in podman's own namespace, by `podman unshare
mcpgate __stage`); with docker and no root it skips, since there nothing can
be staged, and a mount inside another server's write mount is refused by
rule instead (unit-tested). The swapper is a container of the test's own,
outside the configuration, so that rule cannot be what stops it.
"""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import containers_test as ct  # noqa: E402
from mcpclient import text_of  # noqa: E402

t = ct.t
RT = ct.RT
SESSIONS = int(os.environ.get("MCPGATE_MOUNT_RACE_SESSIONS", "40"))
# TARGET: the host's / as root; rootless, a folder of the person's outside the
# workspace (a non-recursive bind of / itself is refused by the kernel in a
# user namespace, since it has mounts below it; a plain folder is not)
SWAP = ("cd /w && i=0; while :; do ln -s TARGET sub.l; mv sub sub.d; mv sub.l sub; rm sub; "
        "mv sub.d sub; i=$((i+1)); [ $((i % 500)) -eq 0 ] && echo $i > /w/count.tmp && "
        "mv /w/count.tmp /w/count; done")


def swaps(shared):
    try:
        with open(os.path.join(shared, "count")) as fh:
            return int(fh.read().strip() or 0)
    except (OSError, ValueError):
        return 0


def test(base, probe_image, busybox_image):
    server = ct.probe_server("reader", probe_image, tools=("read_file", "write_file"),
                             extra='mounts = ["shared/sub"]\n')
    s = ct.Session(base, server)
    shared = os.path.join(s.ws, "shared")
    sub = os.path.join(shared, "sub")
    os.makedirs(sub)
    marker = "the-folder-itself-%s" % ct.TAG
    with open(os.path.join(sub, "marker"), "w") as fh:
        fh.write(marker)
    target = os.path.join(s.dir, "outside")  # the person's, not the workspace's
    os.makedirs(target)
    with open(os.path.join(target, "private"), "w") as fh:
        fh.write("outside-the-workspace")
    # a mount below the read-only folder: it must not come along
    below = os.path.join(sub, "below")
    os.makedirs(below)
    mounted_below = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "itest", below],
                                   capture_output=True).returncode == 0
    try:
        s.mcpgate("pull", "reader")
        s.mcpgate("review", "reader")
        r = s.mcpgate("approve", "reader")
        t.ok(r.returncode == 0, "%s: the reader is approved" % RT, r.stderr)

        c = s.serve()
        c.initialize()
        ct.wait_settled(s.state)
        c.request("tools/list", timeout=120)
        got = text_of(c.call("reader__read_file", {"path": "/workspace/shared/sub/marker"}))
        w = c.call("reader__write_file", {"path": "/workspace/shared/sub/x"})
        wb = c.call("reader__write_file", {"path": "/workspace/shared/sub/below/x"})
        info = text_of(c.call("reader__read_file", {"path": "/proc/self/mountinfo"}))
        c.close(timeout=60)
        t.ok(got == marker, "%s: without a race the folder is mounted" % RT, got)
        t.ok(w["result"].get("isError") is True and not os.path.exists(os.path.join(sub, "x")),
             "%s: read-only" % RT, w)
        t.ok(wb["result"].get("isError") is True and
             " /workspace/shared/sub/below " not in info,
             "%s: a mount below it does not come along, so nothing below is writable%s"
             % (RT, "" if mounted_below else " (no tmpfs could be mounted below)"),
             [x for x in info.splitlines() if "/workspace" in x])

        # the attacker: a container that holds shared with write access
        name = "mcpgate-itest-swapper-" + ct.TAG
        ct.rt("run", "-d", "--rm", "--name", name, "--network=none", "--mount",
              "type=bind,source=%s,target=/w" % shared, busybox_image, "sh", "-c",
              SWAP.replace("TARGET", target if os.geteuid() != 0 else "/"))
        ct.made["containers"].append(name)
        for _ in range(100):
            if swaps(shared) > 0:
                break
            time.sleep(0.1)
        start = swaps(shared)
        folder = refused = other = 0
        seen = []
        for _ in range(SESSIONS):
            c = s.serve()
            c.initialize()
            ct.wait_settled(s.state)
            names = [x["name"] for x in c.request("tools/list", timeout=120)["result"]["tools"]]
            if not names:
                refused += 1
                c.close(timeout=60)
                continue
            got = text_of(c.call("reader__read_file", {"path": "/workspace/shared/sub/marker"}))
            root = text_of(c.call("reader__read_file",
                                  {"path": "/workspace/shared/sub/proc/sys/kernel/core_pattern"}))
            private = text_of(c.call("reader__read_file",
                                     {"path": "/workspace/shared/sub/private"}))
            c.close(timeout=60)
            if got == marker and "No such file" in root and "No such file" in private:
                folder += 1
            else:
                other += 1
                seen.append((got[:80], root[:80], private[:80]))
        done = swaps(shared) - start
        ct.rt("rm", "-f", name, check=False)
        print("# %s: %d sessions against %d swaps: %d got the folder, %d refused, %d other"
              % (RT, SESSIONS, done, folder, refused, other), flush=True)
        t.ok(done >= 1000, "%s: the swapper swapped thousands of times meanwhile (%d)"
             % (RT, done))
        t.ok(other == 0, "%s: no start, of %d raced, mounted anything but the folder"
             % (RT, SESSIONS), seen)
        t.ok(folder > 0, "%s: and the folder itself still mounts (%d of %d)"
             % (RT, folder, SESSIONS))
        stage = os.path.join(s.state, "mcpgate", "mounts")
        left = os.listdir(stage) if os.path.isdir(stage) else []
        with open("/proc/self/mountinfo") as fh:
            info = fh.read()
        if os.geteuid() != 0:  # rootless: the binds were in podman's namespace
            info += ct.rt("unshare", "cat", "/proc/self/mountinfo").stdout
        staged = [x for x in info.splitlines() if stage in x]
        t.ok(left == [] and staged == [], "%s: no staged bind is left" % RT, (left, staged))
    finally:
        if mounted_below:
            subprocess.run(["umount", below], capture_output=True)


def test_root(base, probe_image):
    """The workspace root, read-only when mcp.toml says so: the server reads
    the project's files (its .git/hooks too) and can write none of them; the
    root for writing is refused before anything starts"""
    server = ct.probe_server("whole", probe_image, tools=("read_file", "write_file"),
                             extra='mounts = [".:read"]\n')
    s = ct.Session(base, server)
    hooks = os.path.join(s.ws, ".git", "hooks")
    os.makedirs(hooks)
    marker = "the-whole-workspace-%s" % ct.TAG
    with open(os.path.join(s.ws, "README"), "w") as fh:
        fh.write(marker)
    s.mcpgate("pull", "whole")
    s.mcpgate("review", "whole")
    r = s.mcpgate("approve", "whole")
    t.ok(r.returncode == 0, "%s: a server with the root read-only is approved" % RT, r.stderr)
    c = s.serve()
    c.initialize()
    ct.wait_settled(s.state)
    c.request("tools/list", timeout=120)
    got = text_of(c.call("whole__read_file", {"path": "/workspace/README"}))
    w_root = c.call("whole__write_file", {"path": "/workspace/planted"})
    w_hook = c.call("whole__write_file", {"path": "/workspace/.git/hooks/pre-commit"})
    c.close(timeout=60)
    t.ok(got == marker, "%s: the root is mounted at /workspace" % RT, got)
    t.ok(w_root["result"].get("isError") is True and
         not os.path.exists(os.path.join(s.ws, "planted")),
         "%s: the root is read-only" % RT, w_root)
    t.ok(w_hook["result"].get("isError") is True and os.listdir(hooks) == [],
         "%s: a git hook cannot be planted through it" % RT, w_hook)

    writer = ct.probe_server("rootw", probe_image, tools=("write_file",),
                             extra='mounts = [".:write"]\n')
    s = ct.Session(base, writer)
    r = s.mcpgate("check")
    t.ok(r.returncode != 0 and "names the workspace root with write access" in r.stderr and
         ".git/hooks" in r.stderr,
         "%s: the root for writing is refused, with the reason" % RT, r.stderr)


VOLUMES = ("/data", "/vc,x", "/vk:y")


def volume_names():
    return set(ct.rt("volume", "ls", "-q").stdout.split())


def test_image_volume(base):
    """The image's own VOLUME widens nothing: no writable volume on the host's
    disk, whatever its path holds (a comma or a colon broke docker's --tmpfs
    syntax, and that VOLUME got no cover), and no health check registered
    beside the server. The server outlives its input, as many SDK servers
    do: whatever end the session has (a clean one, a forced rm of a server
    that ignores end of input, mcpgate killed and a sweep by the next one),
    no volume of its is left."""
    # the folders are in the image, everyone's: docker gives a volume the
    # mode of the folder it is made for, so the server could fill it
    image = ct.build_image("mcpgate-itest-probe-vol", {"/mcpgate-probe": ct.PROBE},
                           ["/mcpgate-probe"], dirs={v: 0o1777 for v in VOLUMES},
                           changes=("VOLUME %s" % json.dumps(list(VOLUMES)),) + (
                               # podman's import takes no HEALTHCHECK
                               ("HEALTHCHECK --interval=1s CMD /mcpgate-probe --version",)
                               if RT == "docker" else ()))
    big = "x" * (200 << 10)
    for end in ("clean", "forced", "killed"):
        args = ["--ignore-eof"] if end != "clean" else None
        server = ct.probe_server("vol", image, tools=("write_file",), args=args)
        s = ct.Session(base, server, config="stop_timeout = 1\n")
        s.mcpgate("pull", "vol")
        s.mcpgate("review", "vol")
        s.mcpgate("approve", "vol")
        pin = s.pinned("vol")
        before = volume_names()
        c = s.serve()
        c.initialize()
        ct.wait_settled(s.state)
        c.request("tools/list", timeout=120)
        wrote = {v: text_of(c.call("vol__write_file", {"path": v + "/big", "text": big}))
                 for v in VOLUMES}
        sid = s.session_ids()[-1]
        name = "mcpgate-vol-" + sid
        health = ct.rt("inspect", "-f", "{{json .Config.Healthcheck}}", name,
                       check=False).stdout
        during = volume_names() - before
        if end == "killed":
            c.proc.send_signal(signal.SIGKILL)
            c.proc.wait(30)
            # the next mcpgate sweeps what the dead one left
            c2 = s.serve()
            c2.initialize()
            ct.wait_settled(s.state)
            c2.request("tools/list", timeout=120)
            c2.close(timeout=60)
        else:
            c.close(timeout=60)
        left = volume_names() - before
        t.ok(all(w != "ok" for w in wrote.values()) and during == set(),
             "%s (%s end): no VOLUME (%s) is writable, and no volume is made for any"
             % (RT, end, ", ".join(VOLUMES)), (wrote, sorted(during)))
        t.ok(left == set() and ct.labelled("containers", "mcpgate.session=" + sid) == [],
             "%s (%s end): no volume and no container of the session is left" % (RT, end),
             sorted(left))
        for v in left:
            ct.rt("volume", "rm", "-f", v, check=False)
        if end != "clean":
            continue
        if RT == "docker":
            t.ok(health.strip() in ("", "null", "{}") or "NONE" in health,
                 "%s: the image's health check is not registered for the server" % RT,
                 health)
        else:
            t.ok(True, "podman: # SKIP its import cannot declare a HEALTHCHECK to try "
                 "(--no-healthcheck is in the argv golden)")

    # a VOLUME docker makes a volume for, and mcpgate cannot cover (docker
    # mounts a relative one at the root; a control character cannot be given):
    # on docker the server does not start, and says which VOLUME; podman
    # ignores an image's volumes and runs it
    for volume in ("rel", "/x\ny"):
        image = ct.build_image("mcpgate-itest-probe-badvol", {"/mcpgate-probe": ct.PROBE},
                               ["/mcpgate-probe"], changes=("VOLUME %s" % json.dumps([volume]),))
        # the probe's manifest, as approved above: the server is started
        s = ct.Session(base, ct.probe_server("badvol", image, tools=("echo",), manifest=pin))
        s.mcpgate("pull", "badvol")
        before = volume_names()
        c = s.serve()
        c.initialize()
        ct.wait_settled(s.state)
        c.request("tools/list", timeout=120)
        notes = " ".join(n["params"]["data"] for n in c.notifications
                         if n["method"] == "notifications/message")
        made = volume_names() - before
        c.close(timeout=60)
        made |= volume_names() - before
        shown = json.dumps(volume)[1:-1]
        if RT == "docker":
            t.ok("its image declares VOLUME %s" % shown in notes and "podman" in notes and
                 made == set(),
                 "docker: an image whose VOLUME %s mcpgate cannot cover is refused, naming it "
                 "and the fix; no volume is made" % shown, (notes[-600:], sorted(made)))
        else:
            t.ok("VOLUME" not in notes and made == set(),
                 "podman: an image's VOLUME %s is ignored (--image-volume=ignore)" % shown,
                 (notes[-600:], sorted(made)))
        for v in made:
            ct.rt("volume", "rm", "-f", v, check=False)


def main():
    if os.geteuid() != 0 and RT != "podman":
        return ct.skip("not root and not podman: mounts are not staged (a mount inside "
                       "another server's write mount is refused by rule instead)")

    only = sys.argv[1:]  # e.g. "volume": that case alone

    def body(base):
        if not only or "race" in only:
            test(base, ct.probe_image(), ct.busybox_image())
        if not only or "root" in only:
            test_root(base, ct.probe_image())
        if not only or "volume" in only:
            test_image_volume(base)
    return ct.run_cases("mounts", body)


if __name__ == "__main__":
    sys.exit(main())
