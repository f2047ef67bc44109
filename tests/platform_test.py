#!/usr/bin/env python3
"""Fail closed where the runtime cannot enforce a limit (docs/unenforced.md),
on the fake runtime: its `info` answers as each kind of platform would, and
a server whose memory or process limit would be dropped is not started,
unless mcp.toml accepts it for that server; the acceptance shows in review,
list and the audit log. Environment: MCPGATE, FAKES.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from mcpclient import Tap  # noqa: E402

from gwtest import Fixture, events, learn_probe_hash  # noqa: E402
import gwtest  # noqa: E402

t = Tap()

ROOTLESS_V1 = {"host": {"cgroupVersion": "v1", "cgroupControllers": [],
                        "security": {"rootless": True}}}
DOCKER_NO_MEMORY = {"MemoryLimit": False, "PidsLimit": True, "CgroupVersion": "2"}


def server(name, extra=""):
    return gwtest.server(name, PROBE_HASH, ("echo",), None, extra, "read", gwtest.IMAGE)


def fixture(servers, info=None, runtime="podman", info_fails=None):
    f = Fixture(servers, runtime=runtime)
    if info is not None:
        with open(os.path.join(f.rt, "info"), "w") as fh:
            json.dump(info, fh)
    if info_fails is not None:
        with open(os.path.join(f.rt, "info-fails"), "w") as fh:
            fh.write(info_fails)
    return f


def session(f):
    c = f.start()
    c.initialize()
    f.wait_settled()
    names = [x["name"] for x in c.request("tools/list")["result"]["tools"]]
    notes = [n["params"]["data"] for n in c.notifications
             if n["method"] == "notifications/message"]
    c.close()
    return names, notes


def runs(f):
    return [r for r in f.runtime_log() if r["argv"][1:2] == ["run"]]


def test_refused():
    f = fixture(server("capped") + server("other"), ROOTLESS_V1)
    names, notes = session(f)
    t.ok(names == [], "rootless podman on cgroup v1: no server starts", names)
    text = " ".join(notes)
    t.ok("server capped is unavailable" in text and
         "its memory limit cannot hold here: rootless podman on cgroup v1 ignores --memory" in text
         and "its pids limit cannot hold here" in text and
         'accept_unenforced = ["memory", "pids"]' in text,
         "the client is told which limits, why, and the key that accepts them", notes)
    t.ok(runs(f) == [], "nothing was run", [r["argv"][:3] for r in runs(f)])
    un = events(f.audit(), "server.unavailable")
    t.ok(len(un) == 2 and all("cannot hold here" in u["reason"] for u in un),
         "server.unavailable records it for each", un)
    r = f.mcpgate("review", "capped")
    t.ok(r.returncode == 1 and "its memory limit cannot hold here" in r.stderr and
         f.containers() == [] and runs(f) == [],
         "review refuses it too, before anything runs", r.stderr)
    r = f.mcpgate("list")
    t.ok("will not start: its memory and pids limits cannot hold here" in r.stdout,
         "list says it will not start", r.stdout)
    r = f.mcpgate("list", "--json")
    listed = json.loads(r.stdout)
    t.ok(listed[0]["unenforced_refused"] == ["memory", "pids"] and
         listed[0]["unenforced_accepted"] == [], "list --json names them", listed)
    f.cleanup()


def test_accepted():
    f = fixture(server("capped", 'accept_unenforced = ["memory", "pids"]\n') + server("other"),
                ROOTLESS_V1)
    r = f.mcpgate("check")
    t.ok(r.returncode == 0, "accept_unenforced passes check", r.stderr)
    names, notes = session(f)
    t.ok(names == ["capped__echo"], "the server that accepts both starts; the other does not",
         (names, notes))
    acc = events(f.audit(), "server.unenforced")
    t.ok(len(acc) == 1 and acc[0]["server"] == "capped" and
         acc[0]["accepted"] == ["memory", "pids"] and len(acc[0]["why"]) == 2,
         "the audit log records what runs unenforced, and why", acc)
    run = runs(f)
    t.ok(len(run) == 1 and any(a.startswith("--memory=") for a in run[0]["argv"]) and
         any(a.startswith("--pids-limit=") for a in run[0]["argv"]),
         "the limits are still asked for", [r["argv"] for r in run])
    r = f.mcpgate("review", "capped")
    t.ok(r.returncode == 0 and
         "unenforced here, accepted in mcp.toml (accept_unenforced): memory pids" in r.stdout,
         "review shows the acceptance", r.stdout + r.stderr)
    r = f.mcpgate("list")
    line = [x for x in r.stdout.splitlines() if x.startswith("capped")]
    t.ok(line and "runs without its memory and pids limits (accepted)" in line[0],
         "list shows the acceptance", r.stdout)
    f.cleanup()

    f = fixture(server("half", 'accept_unenforced = ["memory"]\n'), ROOTLESS_V1)
    names, notes = session(f)
    text = " ".join(notes)
    t.ok(names == [] and "its pids limit cannot hold here" in text and
         "its memory limit" not in text,
         "accepting one of two is not enough, and only the other is named", notes)
    f.cleanup()


def test_docker_and_unknown():
    f = fixture(server("capped"), DOCKER_NO_MEMORY, runtime="docker")
    names, notes = session(f)
    t.ok(names == [] and any("MemoryLimit false" in n for n in notes) and
         not any("pids limit" in n for n in notes),
         "docker without memory limits: refused, naming memory only", notes)
    f.cleanup()

    f = fixture(server("capped", 'accept_unenforced = ["memory", "pids"]\n'),
                info_fails="Error: cannot find newuidmap: exec: \"newuidmap\": "
                           "executable file not found in $PATH")
    names, notes = session(f)
    t.ok(names == [] and any("cannot tell what the runtime enforces here" in n and
                             "newuidmap" in n for n in notes),
         "a runtime that cannot say: nothing starts, with the runtime's own words "
         "(acceptance does not cover an unknown)", notes)
    f.cleanup()

    f = fixture(server("capped"))
    names, _ = session(f)
    t.ok(names == ["capped__echo"], "a platform that enforces both: it starts", names)
    t.ok(events(f.audit(), "server.unenforced") == [], "and nothing is recorded as unenforced")
    f.cleanup()


def test_config_errors():
    f = fixture(server("a", 'accept_unenforced = ["memory", "swap", "memory"]\n'))
    r = f.mcpgate("check")
    t.ok(r.returncode != 0 and '"accept_unenforced" entry "swap" is not one of' in r.stderr and
         '"accept_unenforced" entry "memory" is listed twice' in r.stderr and
         "mcp.toml:" in r.stderr, "an unknown or repeated entry is an error with its place",
         r.stderr)
    f.cleanup()


def cache_file(f):
    return os.path.join(f.state, "mcpgate", "cache", "platform-podman.json")


def infos(f):
    return len([r for r in f.runtime_log() if r["argv"][1:2] == ["info"]])


def platform_phase(f):
    """how the last started server found the platform: kept or asked"""
    ready = events(f.audit(), "server.ready") + events(f.audit(), "server.unavailable")
    return ready[-1].get("phases", {}).get("platform") if ready else None


def forge(f, mode, owner=None):
    """the kept facts rewritten to say every limit holds, under their own key"""
    path = cache_file(f)
    with open(path) as fh:
        kept = json.load(fh)
    kept["body"]["rootless"] = False
    kept["body"]["cgroup"] = 2
    kept["body"]["unenforced"] = {}
    os.unlink(path)
    with open(path, "w") as fh:
        json.dump(kept, fh)
    os.chmod(path, mode)
    if owner is not None:
        os.chown(path, owner, owner)


def test_kept():
    """What the runtime enforces is kept between sessions (docs/2026-12-02-start-path.md),
    keyed by what would change it; a changed containers.conf asks again, and a kept
    file that is not private to this user is never believed"""
    f = fixture(server("capped"))
    names, _ = session(f)
    t.ok(names == ["capped__echo"] and infos(f) == 1 and platform_phase(f) == "asked",
         "the first session asks the runtime", (names, infos(f), platform_phase(f)))
    st = os.stat(cache_file(f))
    t.ok(st.st_mode & 0o777 == 0o600 and st.st_uid == os.geteuid(),
         "and keeps its answer, private to the user (0600)", oct(st.st_mode))
    names, _ = session(f)
    t.ok(names == ["capped__echo"] and infos(f) == 1 and platform_phase(f) == "kept",
         "the next session does not ask again", (names, infos(f), platform_phase(f)))

    # the person makes podman rootless on cgroup v1 in their containers.conf
    with open(os.path.join(f.rt, "info"), "w") as fh:
        json.dump(ROOTLESS_V1, fh)
    conf = os.path.join(f.dir, ".config", "containers")
    os.makedirs(conf)
    with open(os.path.join(conf, "containers.conf"), "w") as fh:
        fh.write("[engine]\ncgroup_manager = \"cgroupfs\"\n")
    names, notes = session(f)
    t.ok(names == [] and infos(f) == 2 and platform_phase(f) == "asked" and
         any("cannot hold here" in n for n in notes),
         "a new containers.conf makes the facts be read again, and the refusal holds",
         (names, infos(f), notes))
    os.makedirs(os.path.join(conf, "containers.conf.d"))
    with open(os.path.join(conf, "containers.conf.d", "50-more.conf"), "w") as fh:
        fh.write("[containers]\n")
    names, _ = session(f)
    t.ok(names == [] and infos(f) == 3, "so does a file added to containers.conf.d",
         infos(f))

    # kept facts that say every limit holds, where the runtime says they do not
    forge(f, 0o644)
    names, notes = session(f)
    t.ok(names == [] and infos(f) == 4 and platform_phase(f) == "asked",
         "kept facts that others may read or write are not believed; the runtime is asked",
         (names, infos(f)))
    t.ok("is open to others (mode 0644)" in f.stderr_text(),
         "and mcpgate says which file it did not use, and why", f.stderr_text()[-600:])
    t.ok(os.stat(cache_file(f)).st_mode & 0o777 == 0o600, "the answer is kept afresh, 0600")
    if os.geteuid() == 0:
        forge(f, 0o600, owner=4242)
        names, _ = session(f)
        t.ok(names == [] and infos(f) == 5, "nor are kept facts of another user's",
             (names, infos(f)))
    else:
        t.skip("kept facts of another user's", "needs root to make such a file")
    path = cache_file(f)
    forge(f, 0o600)
    os.rename(path, path + ".forged")
    os.symlink(path + ".forged", path)
    before = infos(f)
    names, _ = session(f)
    t.ok(names == [] and infos(f) == before + 1 and platform_phase(f) == "asked",
         "nor is a link to a file that says so", (names, infos(f)))
    os.unlink(path)
    with open(path, "w") as fh:
        fh.write("not json")
    os.chmod(path, 0o600)
    names, _ = session(f)
    t.ok(names == [] and infos(f) == before + 2, "and a kept file that is not JSON is asked "
         "again", infos(f))
    f.cleanup()


PROBE_HASH = learn_probe_hash()
for case in (test_refused, test_accepted, test_docker_and_unknown, test_config_errors,
             test_kept):
    try:
        case()
    except Exception as e:
        t.ok(False, "%s raised %s: %s" % (case.__name__, type(e).__name__, e))
sys.exit(t.done())
