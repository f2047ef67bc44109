#!/usr/bin/env python3
"""Every place a contained server can write, asked from inside
(docs/contained-servers.md, "Writable places").

The probe's `places` tool lists, from /proc/self/mountinfo, each mount of a
storage filesystem where it can make something (a nameless file, else a
folder made and removed), and the folders two levels into it, with each
one's flags (statvfs), size, mode and owner. It runs as mcpgate runs it
(`mcpgate serve`), from three images whose /tmp, /var/tmp and /run are
missing, 0755, and 1777. Each writable place must be one mcpgate declares
(/tmp, /var/tmp, /run, and the home /home/mcpgate: a tmpfs of the size declared, noexec, nosuid, nodev,
the server's own, in the mode asked or the image folder's), or the
runtime's /dev/shm (capped, noexec, 1777) or /dev/mqueue (message queues
only, noexec); as root inside (rootless podman) also the runtime's /dev,
noexec and capped. And /tmp, /var/tmp and /run are writable by the server
whatever the image's folders are.

Before (a2bc3e6): podman gave /run and /var/tmp its own tmpfs, writable,
executable and without a size (only the memory limit stopped a writer), and
a non-root server had no /tmp where the image's /tmp was 0755, on both
runtimes.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import containers_test as ct  # noqa: E402
import gwtest  # noqa: E402
from mcpclient import text_of  # noqa: E402

t = ct.t
RT = ct.RT
MIB = 1 << 20
# what mcpgate declares: path -> (mode asked, size)
DECLARED = {"/tmp": ("1777", 64 * MIB), "/var/tmp": ("1777", 64 * MIB), "/run": ("0755", 16 * MIB),
            # the server's home (docs/contained-servers.md), 0700 and its own
            "/home/mcpgate": ("0700", 64 * MIB)}
FOLDERS = ("/tmp", "/var/tmp", "/run")


def places_of(base, image, variant, pin):
    s = ct.Session(base, ct.probe_server("places", image, tools=("places",), manifest=pin))
    s.mcpgate("pull", "places")
    if pin is None:
        s.mcpgate("review", "places")
        s.mcpgate("approve", "places")
        pin = s.pinned("places")
    c = s.serve()
    c.initialize()
    gwtest.wait_settled(s.state)
    c.request("tools/list", timeout=120)
    r = c.call("places__places", {}, timeout=60)
    c.close(timeout=60)
    try:
        return json.loads(text_of(r)), pin
    except (ValueError, KeyError, TypeError):
        raise RuntimeError("%s (%s): places answered %s" % (RT, variant, r))


def judge(variant, got, image_modes):
    uid = got["uid"]
    places = {p["path"]: p for p in got["places"]}
    print("# %s, image folders %s, uid %d:" % (RT, variant, uid))
    for path, p in sorted(places.items()):
        print("#   %-12s %-7s %-6s %5d MiB  %s uid %d" % (
            path, p["fs"], "noexec" if p["noexec"] else "EXEC", p["bytes"] >> 20, p["mode"],
            p["uid"]))
    wrong = []
    for path, p in places.items():
        where = path if path in DECLARED else next(
            (d for d in DECLARED if path.startswith(d + "/")), None)
        if where is not None:
            mode, size = DECLARED[where]
            if not (p["fs"] == "tmpfs" and p["noexec"] and p["nosuid"] and p["nodev"] and
                    p["bytes"] == size):
                wrong.append((path, "not a %d MiB noexec, nosuid, nodev tmpfs" % (size >> 20)))
        elif path == "/dev/shm":
            if not (p["noexec"] and p["nosuid"] and p["nodev"] and p["bytes"] <= 64 * MIB and
                    p["mode"] == "1777"):
                wrong.append((path, "not the runtime's capped noexec /dev/shm"))
        elif path == "/dev/mqueue":
            if not (p["fs"] == "mqueue" and p["noexec"]):
                wrong.append((path, "not message queues alone"))
        elif path == "/dev" and uid == 0:
            # the runtime's own, writable to root inside (rootless podman)
            if not (p["fs"] == "tmpfs" and p["noexec"] and p["nosuid"] and
                    p["bytes"] <= 64 * MIB):
                wrong.append((path, "the runtime's /dev is not noexec and capped"))
        else:
            wrong.append((path, "a writable place mcpgate does not declare"))
    t.ok(wrong == [], "%s, image folders %s: every place the server can write is declared, "
         "capped and noexec" % (RT, variant), wrong)
    folders = got["folders"]
    bad = []
    for path in FOLDERS:
        p, f = places.get(path), folders.get(path)
        mode, _ = DECLARED[path]
        # runc gives a tmpfs the mode of the folder it covers: the one asked
        # where the image has none
        want_mode = mode if image_modes is None else "%04o" % image_modes
        if p is None:
            bad.append((path, "not writable by the server", f))
        elif not isinstance(f, dict) or f["mode"] != want_mode or f["uid"] != uid:
            bad.append((path, "mode %s and owner %d wanted" % (want_mode, uid), f))
    t.ok(bad == [], "%s, image folders %s: /tmp, /var/tmp and /run are the server's and "
         "writable by it, in the mode asked (or the image folder's)" % (RT, variant), bad)


def test(base):
    pin = None
    for variant, modes in (("missing", None), ("0755", 0o755), ("1777", 0o1777)):
        dirs = {p: modes for p in FOLDERS}
        image = ct.build_image("mcpgate-itest-places-" + variant, {"/mcpgate-probe": ct.PROBE},
                               ["/mcpgate-probe"], dirs=dirs)
        got, pin = places_of(base, image, variant, pin)
        judge(variant, got, modes)


def main():
    return ct.run_cases("places", test)


if __name__ == "__main__":
    sys.exit(main())
