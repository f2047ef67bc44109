#!/usr/bin/env python3
"""`mcpgate __stage`, what rootless podman runs in its own namespace to pin a
server's mounts (docs/mounts.md), tried directly: as root, in a mount
namespace of the test's own (unshare -m), so nothing of the host's is
touched. It must bind the folder of the descriptor it is handed, read-only,
nosuid and nodev, and refuse a path that is not that folder (a swap), a path
through a link, and anything that is not a well-formed message. Skips when
not root or without unshare. Environment: MCPGATE.
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from mcpclient import Tap  # noqa: E402

t = Tap()
MCPGATE = os.path.abspath(os.environ.get("MCPGATE", "./mcpgate"))


def stage(messages, after="true", args=()):
    """run __stage with messages [(text, fd or None)] on its stdin, in a
    private mount namespace, then `after` there; (status, stdout, stderr)"""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    for text, fd in messages:
        if fd is None:
            a.send(text.encode())
        else:
            socket.send_fds(a, [text.encode()], [fd])
    a.close()
    script = '"$0" __stage "$@"; s=$?; %s; exit $s' % after
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script,
                        MCPGATE] + list(args), stdin=b.fileno(), capture_output=True,
                       text=True, timeout=30)
    b.close()
    return r


def main():
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        print("ok 1 # SKIP needs root and unshare(1) for a mount namespace of its own")
        print("0 passed, 0 failed")
        return 77
    d = tempfile.mkdtemp(prefix="mcpgate-stage-")
    try:
        folder = os.path.join(d, "ws", "sub")
        other = os.path.join(d, "outside")
        dest = os.path.join(d, "state", "0-t-0")
        for p in (folder, other, dest):
            os.makedirs(p)
        with open(os.path.join(folder, "marker"), "w") as fh:
            fh.write("the-folder")
        os.symlink(os.path.join(d, "ws"), os.path.join(d, "link"))
        fd = os.open(folder, os.O_PATH | os.O_DIRECTORY)

        r = stage([("ro %s\0%s" % (dest, folder), fd)],
                  after="cat %s/marker; echo; grep ' %s ' /proc/self/mountinfo" % (dest, dest))
        line = r.stdout.splitlines()[1] if len(r.stdout.splitlines()) > 1 else ""
        opts = line.split()[5].split(",") if line else []
        t.ok(r.returncode == 0 and r.stdout.startswith("the-folder"),
             "the folder of the descriptor is bound on the staging folder", r.stderr)
        t.ok({"ro", "nosuid", "nodev"} <= set(opts), "read-only, nosuid, nodev", line)
        r = stage([("rw %s\0%s" % (dest, folder), fd)],
                  after="grep ' %s ' /proc/self/mountinfo" % dest)
        opts = r.stdout.split()[5].split(",") if r.stdout.split() else []
        t.ok(r.returncode == 0 and "rw" in opts and "nosuid" in opts,
             "a write mount: writable, still nosuid", r.stdout)

        r = stage([("ro %s\0%s" % (dest, other), fd)],
                  after="grep -c ' %s ' /proc/self/mountinfo" % dest)
        t.ok(r.returncode == 1 and "is not the folder that was checked" in r.stderr and
             r.stdout.strip() == "0", "a path that leads to another folder (a swap) is refused",
             (r.returncode, r.stderr))
        r = stage([("ro %s\0%s" % (dest, os.path.join(d, "link", "sub")), fd)])
        t.ok(r.returncode == 1 and "not the folder" in r.stderr,
             "a path through a link is refused, even to the same folder", r.stderr)
        dest2 = os.path.join(d, "state", "0-t-1")
        os.makedirs(dest2)
        r = stage([("ro %s\0%s" % (dest, folder), fd), ("ro %s\0%s" % (dest2, other), fd)],
                  after="grep -c ' %s ' /proc/self/mountinfo" % dest)
        t.ok(r.returncode == 1 and r.stdout.strip() == "0",
             "one refused mount refuses them all: the first is let go again",
             (r.stdout, r.stderr))
        for text, with_fd, why in (("ro %s\0%s" % (dest, folder), False, "no descriptor"),
                                   ("xx %s\0%s" % (dest, folder), True, "no mode"),
                                   ("ro relative\0%s" % folder, True, "a relative path"),
                                   ("ro %s" % dest, True, "no real path")):
            r = stage([(text, fd if with_fd else None)])
            t.ok(r.returncode == 1 and "is not \"ro|rw" in r.stderr,
                 "a message with %s is refused" % why, r.stderr)
        filefd = os.open(os.path.join(folder, "marker"), os.O_PATH)
        r = stage([("ro %s\0%s" % (dest, folder), filefd)])
        t.ok(r.returncode == 1, "a descriptor that is not a folder's is refused", r.stderr)
        r = stage([], args=("extra",))
        t.ok(r.returncode == 2 and "takes no arguments" in r.stderr,
             "it takes no arguments", r.stderr)
        r = stage([])
        t.ok(r.returncode == 0, "no message: nothing to do")
        os.close(fd)
        os.close(filefd)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
