#!/usr/bin/env python3
"""The daily loop on a real runtime (MCPGATE_CONTAINER_TEST_RUNTIME=podman|docker)
with a real npm server (docs/2026-12-02-daily-use.md): add an older release
of @modelcontextprotocol/server-memory, approve a tool, see it in
`outdated`; `update` to a newer release refused (not on a terminal, no
--yes: mcp.toml as it was, the old image kept, the new one gone), then taken
(the entry and pin switched, the old image gone); a session offers the
tool; `disable` while it runs withdraws it and stops the container, `enable`
brings it back; `remove` takes the entry, its image, archive and npm tree;
`prune` then finds nothing of it; and nothing of it is left in the runtime
or the data folder.

Opt-in (MCPGATE_CONTAINER_TESTS=1), needs npm and the npm registry; else it
reports skipped (exit 77). Traffic: the npm registry (npm itself),
containers with no network.
"""
import glob
import json
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import containers_test as ct  # noqa: E402
from mcpclient import text_of  # noqa: E402

t = ct.t
RT = ct.RT
PKG = "@modelcontextprotocol/server-memory"
OLD, NEW = "2026.7.4", "2026.8.31"


def mcp_text(s):
    with open(os.path.join(s.conf, "mcp.toml")) as fh:
        return fh.read()


def pin_of(s, name):
    text = mcp_text(s)
    if 'name = "%s"' % name not in text:
        return None
    section = text.split('name = "%s"' % name, 1)[1].split("[[server]]", 1)[0]
    for line in section.splitlines():
        if line.startswith("image = "):
            return json.loads(line[len("image = "):])
    return None


def made_images():
    """every image in the runtime that an add of this package made: the
    labels add writes, whatever the name it is known by"""
    r = ct.rt("images", "-q", "--no-trunc", "--filter", "label=io.mcpgate.npm.package=" + PKG,
              check=False)
    return sorted(set(r.stdout.split())) if r.returncode == 0 else ["<images failed>"]


def running(name):
    r = ct.rt("ps", "-q", "--filter", "label=mcpgate.mcp=" + name, check=False)
    return r.stdout.split()


def data_left(s):
    data = os.path.join(s.env["XDG_DATA_HOME"], "mcpgate")
    return sorted(glob.glob(os.path.join(data, "images", "*")) +
                  glob.glob(os.path.join(data, "npm", "*")))


def wait_for(cond, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.5)
    return cond()


def tool_names(c):
    r = c.request("tools/list", timeout=180)
    return sorted(x["name"] for x in r.get("result", {}).get("tools", []))


def test(base):
    before_images = made_images()
    s = ct.Session(base, "# my servers\n")
    ct.npm_env(s.env)
    accept = ct.unenforced_here(None)
    extra = ["--accept-unenforced", ",".join(accept)] if accept else []

    r = s.mcpgate("add", "npm:%s@%s" % (PKG, OLD), "--name", "mem",
                  "--env", "MEMORY_FILE_PATH=/tmp/memory.jsonl", *extra)
    old_pin = pin_of(s, "mem")
    t.ok(r.returncode == 0 and old_pin is not None and
         "the load into %s" % RT in r.stderr,
         "%s: add %s@%s, its steps said one line each off a terminal" % (RT, PKG, OLD),
         r.stderr[-800:])
    old_ids = set(made_images()) - set(before_images)
    r = s.mcpgate("review", "mem")
    t.ok(r.returncode == 0 and "read_graph" in r.stdout, "%s: review mem" % RT,
         (r.stdout + r.stderr)[-600:])
    r = s.mcpgate("approve", "mem", "--tool", "read_graph", "--on", "--effect", "read")
    t.ok(r.returncode == 0, "%s: approve mem's read_graph" % RT, r.stderr[-400:])

    r = s.mcpgate("outdated", "--json")
    rows = {o.get("name"): o for o in json.loads(r.stdout)} if r.returncode == 0 else {}
    mem = rows.get("mem", {})
    t.ok(mem.get("outdated") is True and mem.get("latest") not in (None, OLD),
         "%s: outdated says mem runs %s and a later release is out" % (RT, OLD), r.stdout[-400:])

    before = mcp_text(s)
    r = s.mcpgate("update", "mem", NEW)
    images_now = set(made_images()) - set(before_images)
    t.ok(r.returncode == 1 and "--yes" in r.stderr and mcp_text(s) == before and
         old_ids and images_now == old_ids,
         "%s: update without --yes off a terminal switches nothing: mcp.toml as it was, the "
         "old image kept and the new one gone" % RT, (r.stderr[-800:], images_now))

    r = s.mcpgate("update", "mem", NEW, "--yes")
    new_pin = pin_of(s, "mem")
    images_now = set(made_images()) - set(before_images)
    t.ok(r.returncode == 0 and new_pin is not None and new_pin != old_pin and
         len(images_now) == 1 and not images_now & old_ids and
         "updated mem to npm:%s@%s" % (PKG, NEW) in r.stdout,
         "%s: update --yes switches the entry to %s, and the old image goes" % (RT, NEW),
         (r.stdout[-800:], r.stderr[-800:], images_now))
    present = ct.rt("image", "inspect", old_pin, check=False)
    t.ok(present.returncode != 0, "%s: the old pin is no image in the runtime any more" % RT,
         present.stdout[-200:])
    r = s.mcpgate("list", "--json")
    entry = {e["name"]: e for e in json.loads(r.stdout)}.get("mem", {}) if r.returncode == 0 \
        else {}
    t.ok(entry.get("image_state") == "present", "%s: list sees the new image" % RT,
         r.stdout[-600:])

    c = s.serve()
    c.initialize()
    ct.wait_settled(s.state)
    names = tool_names(c)
    t.ok("mem__read_graph" in names,
         "%s: a session offers the tool whose setting the update kept" % RT, names)
    got = c.call("mem__read_graph", {}, timeout=60)
    t.ok("entities" in text_of(got), "%s: and the new release answers" % RT, got)
    ctr = running("mem")
    r = s.mcpgate("disable", "mem")
    t.ok(r.returncode == 0 and "enabled = false" in mcp_text(s), "%s: disable mem" % RT,
         r.stderr[-300:])
    gone = wait_for(lambda: not running("mem") and "mem__read_graph" not in tool_names(c))
    t.ok(ctr and gone and any(n["method"] == "notifications/tools/list_changed"
                              for n in c.notifications),
         "%s: the running session withdraws mem's tools, says the list changed, and its "
         "container stops" % RT, (ctr, running("mem"), tool_names(c)))
    r = s.mcpgate("enable", "mem")
    back = wait_for(lambda: "mem__read_graph" in tool_names(c), timeout=180)
    t.ok(r.returncode == 0 and back and "enabled" not in mcp_text(s),
         "%s: enable mem: the same session offers it again, not restarted" % RT,
         (r.stderr[-300:], tool_names(c)))
    c.close(timeout=60)

    left_before = data_left(s)
    r = s.mcpgate("remove", "mem", "--dry-run")
    t.ok(r.returncode == 0 and "would go" in r.stdout and pin_of(s, "mem") is not None and
         data_left(s) == left_before and set(made_images()) - set(before_images) == images_now,
         "%s: remove --dry-run shows what would go and removes nothing" % RT, r.stdout[-800:])
    r = s.mcpgate("remove", "mem")
    t.ok(r.returncode == 0 and pin_of(s, "mem") is None and "# my servers" in mcp_text(s),
         "%s: remove mem takes its entry, the rest of mcp.toml stays" % RT,
         (r.stdout[-800:], r.stderr[-400:]))
    t.ok(not set(made_images()) & images_now, "%s: and its image" % RT, made_images())
    r = s.mcpgate("prune", "--yes")
    t.ok(r.returncode == 0, "%s: prune then" % RT, (r.stdout[-600:], r.stderr[-400:]))
    t.ok(data_left(s) == [] and not set(made_images()) & (images_now | old_ids) and
         not running("mem"),
         "%s: nothing of it is left: no image, archive, npm tree or container" % RT,
         (data_left(s), made_images(), running("mem")))


def main():
    if os.environ.get("MCPGATE_CONTAINER_TESTS", "0") != "1":
        return ct.skip("runtime integration tests: set MCPGATE_CONTAINER_TESTS=1 to run them")
    if shutil.which("npm") is None:
        return ct.skip("no npm here (scripts/setup installs it)")
    return ct.run_cases("daily", test)


if __name__ == "__main__":
    sys.exit(main())
