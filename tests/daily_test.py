#!/usr/bin/env python3
"""Everyday use on the fake runtime (make check; docs/2026-12-02-daily-use.md):
enable and disable, honoured by a serve that runs (stdio and --listen) without
the client starting it again; a changed entry taken up live; `list` saying
when a server is disabled or its image changed since approval.
Environment: MCPGATE, FAKES.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from mcpclient import Tap, text_of  # noqa: E402
from gwtest import IMAGE, Fixture, events, learn_probe_hash, server  # noqa: E402
import listenclient  # noqa: E402

t = Tap()
PROBE_HASH = None


def tool_names(c):
    r = c.request("tools/list")
    return sorted(x["name"] for x in r.get("result", {}).get("tools", []))


def wait_until(cond, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return False


def list_changed_count(c):
    return sum(1 for n in c.notifications if n["method"] == "notifications/tools/list_changed")


def pump(c, seconds=0.3):
    """Read what the gateway says for a while (its notifications)"""
    try:
        c.read_message(seconds)
    except Exception:  # noqa: BLE001 - a quiet gateway is fine here
        pass
    while c.buf and b"\n" in c.buf:
        m = c.read_message(0.01)
        if m is not None and "method" in m and "id" not in m:
            c.notifications.append(m)


def test_disable_enable_live():
    f = Fixture(server("one", PROBE_HASH) + server("two", PROBE_HASH))
    c = f.start()
    c.initialize()
    f.wait_settled()
    before = tool_names(c)
    t.ok(before == ["one__echo", "two__echo"], "both servers offer their tools", before)
    r = f.mcpgate("disable", "two")
    t.ok(r.returncode == 0 and "enabled = false" in f.mcp_toml() and
         "a running serve stops it" in r.stdout, "disable writes enabled = false", r)
    gone = wait_until(lambda: tool_names(c) == ["one__echo"])
    audit = f.audit()
    t.ok(gone and any(e.get("server") == "two" for e in events(audit, "server.disabled")),
         "a running serve withdraws the disabled server's tools, without a restart",
         (tool_names(c), [e["event"] for e in audit][-8:]))
    stopped = wait_until(lambda: not any("-two-" in n for n in f.containers()))
    t.ok(stopped and any("-one-" in n for n in f.containers()),
         "and its container stops; the other keeps running", f.containers())
    pump(c)
    t.ok(list_changed_count(c) >= 1, "the client heard its list changed",
         [n["method"] for n in c.notifications])
    r = c.call("two__echo", {"text": "hi"})
    t.ok("error" in r and "disabled in mcp.toml" in r["error"]["message"] and
         "mcpgate enable two" in r["error"]["message"],
         "a call to it says it is disabled and how to enable it", r)
    lst = f.mcpgate("list")
    t.ok(lst.returncode == 0 and any(line.startswith("two ") and "disabled;" in line
                                      for line in lst.stdout.splitlines()),
         "list says it is disabled", lst.stdout)
    r = f.mcpgate("disable", "two")
    t.ok(r.returncode == 0 and "already" in r.stdout, "disabling it again changes nothing",
         r.stdout)
    r = f.mcpgate("enable", "two")
    t.ok(r.returncode == 0 and "enabled" not in f.mcp_toml(),
         "enable takes the line away: mcp.toml is as it was", f.mcp_toml())
    back = wait_until(lambda: tool_names(c) == ["one__echo", "two__echo"])
    t.ok(back and any(e.get("server") == "two" for e in events(f.audit(), "server.enabled")),
         "the running serve starts it again and offers its tools", tool_names(c))
    r = c.call("two__echo", {"text": "again"})
    t.ok(text_of(r) == "again", "and its tool answers", r)

    # a changed entry: a tool turned off through approve is withdrawn live
    with open(os.path.join(f.conf, "mcp.toml")) as fh:
        text = fh.read()
    with open(os.path.join(f.conf, "mcp.toml"), "w") as fh:
        fh.write(text.replace('[server.tools.echo]\non = true\neffect = "read"\n'
                              '[[server]]\nname = "two"',
                              '[server.tools.echo]\non = true\neffect = "read"\n'
                              '[server.tools.env]\non = true\neffect = "read"\n'
                              '[[server]]\nname = "two"', 1))
    grew = wait_until(lambda: tool_names(c) == ["one__echo", "one__env", "two__echo"])
    t.ok(grew and any(e.get("server") == "one" for e in events(f.audit(), "server.changed")),
         "an entry changed by hand is taken up live: its server starts again with it",
         tool_names(c))
    # a file that does not load changes nothing, and says why
    with open(os.path.join(f.conf, "mcp.toml"), "a") as fh:
        fh.write("[[server]]\nname = \n")
    wait_until(lambda: events(f.audit(), "config.reload") and
               any("error" in e for e in events(f.audit(), "config.reload")))
    t.ok(tool_names(c) == ["one__echo", "one__env", "two__echo"] and
         any("error" in e for e in events(f.audit(), "config.reload")),
         "a file that does not load leaves the servers as they are, and says why",
         events(f.audit(), "config.reload"))
    status = c.close()
    err = f.stderr_text()
    t.ok(status == 0 and "Sanitizer" not in err and "runtime error" not in err,
         "serve ended clean", err[-2000:])
    f.cleanup()


def test_disabled_at_start():
    f = Fixture(server("one", PROBE_HASH) + server("off", PROBE_HASH, extra="enabled = false\n"))
    c = f.start()
    c.initialize()
    f.wait_settled()
    t.ok(tool_names(c) == ["one__echo"] and not any("-off-" in n for n in f.containers()),
         "a server disabled in mcp.toml is never started", (tool_names(c), f.containers()))
    c.close()
    r = f.mcpgate("check")
    t.ok(r.returncode == 0, "enabled = false is a key check knows", r.stdout + r.stderr)
    with open(os.path.join(f.conf, "mcp.toml"), "a") as fh:
        fh.write('[[server]]\nname = "bad"\ntransport = "container"\nimage = "%s"\n'
                 'enabled = "no"\n' % IMAGE)
    r = f.mcpgate("check")
    t.ok(r.returncode == 1 and '"enabled"' in r.stdout + r.stderr and
         "boolean" in r.stdout + r.stderr, "enabled that is not a boolean is an error",
         r.stdout + r.stderr)
    f.cleanup()


def test_image_changed_list():
    f = Fixture(server("one", None))
    f.mcpgate("review", "one")
    r = f.mcpgate("approve", "one", "--tool", "echo", "--on", "--effect", "read")
    other = "localhost:5000/probe@sha256:" + "cd" * 32
    with open(os.path.join(f.rt, "images"), "a") as fh:
        fh.write(other + "\n")
    lst = f.mcpgate("list")
    t.ok(r.returncode == 0 and "manifest approved," in lst.stdout,
         "list: approved for the image it runs", lst.stdout)
    with open(os.path.join(f.conf, "mcp.toml")) as fh:
        text = fh.read()
    with open(os.path.join(f.conf, "mcp.toml"), "w") as fh:
        fh.write(text.replace(IMAGE, other))
    lst = f.mcpgate("list")
    t.ok("manifest approved for another image (review it)" in lst.stdout,
         "list says so when the image changed under its entry since approval", lst.stdout)
    js = f.mcpgate("list", "--json")
    t.ok('"image_changed":true' in js.stdout.replace(" ", ""), "and --json has image_changed",
         js.stdout)
    f.cleanup()


def test_listener():
    """serve --listen: a client's session and a shared instance follow
    mcp.toml; a client that comes later starts from what it says now"""
    f = Fixture(server("one", PROBE_HASH) +
                server("shared", PROBE_HASH, extra='instance = "shared"\n'))
    lst = listenclient.Listener(f.argv(), f.env(), f.dir, f.state)

    def names(sid):
        _, answer, _, _ = lst.rpc(sid, "tools/list")
        return sorted(x["name"] for x in (answer or {}).get("result", {}).get("tools", []))
    _, sid, _ = lst.initialize()
    ok = wait_until(lambda: names(sid) == ["one__echo", "shared__echo"])
    t.ok(ok, "a listener's client is offered both, one of them shared", names(sid))
    shared_before = [n for n in f.containers() if "-shared-" in n]
    r = f.mcpgate("disable", "shared")
    gone = wait_until(lambda: names(sid) == ["one__echo"])
    stopped = wait_until(lambda: not any("-shared-" in n for n in f.containers()))
    t.ok(r.returncode == 0 and gone and stopped and len(shared_before) == 1,
         "disable withdraws a shared server from a listener's client and stops its one "
         "instance", (names(sid), f.containers(), shared_before))
    _, sid2, _ = lst.initialize("later")
    t.ok(wait_until(lambda: names(sid2) == ["one__echo"]),
         "a client that comes later starts from mcp.toml as it is now", names(sid2))
    f.mcpgate("enable", "shared")
    back = wait_until(lambda: names(sid) == ["one__echo", "shared__echo"] and
                      names(sid2) == ["one__echo", "shared__echo"])
    _, answer, _, _ = lst.call(sid, "shared__echo", {"text": "x"})
    _, answer2, _, _ = lst.call(sid2, "shared__echo", {"text": "y"})
    shared_now = [n for n in f.containers() if "-shared-" in n]
    t.ok(back and listenclient.text_of(answer) == "x" and listenclient.text_of(answer2) == "y"
         and len(shared_now) == 1,
         "enable offers it to both clients again, through one new instance",
         (names(sid), names(sid2), f.containers()))
    lst.stop()
    t.ok("ERROR: AddressSanitizer" not in lst.stderr() and "runtime error" not in lst.stderr(),
         "the listener ran clean", lst.stderr()[-2000:])
    f.cleanup()


def test_yes_no_strict():
    """approve's Y/n takes y, yes, n, no or Enter: "maybe" is asked again"""
    f = Fixture(server("one", None, tools_on=()))
    f.mcpgate("review", "one")
    order = [line.split()[0] for line in f.mcpgate("review", "one").stdout.splitlines()
             if line.startswith("  ") and "[effect:" in line]
    answers = "".join("w\nmaybe\nnope\nn\n" if n == "echo" else "\n" for n in order)
    r = f.mcpgate("approve", "one", "--each", input=answers)
    t.ok(r.returncode == 0 and '"maybe" is not an answer here' in r.stdout and
         '"nope" is not an answer here' in r.stdout and
         '[server.tools.echo]\non = true\neffect = "write"\nconfirm = false\n' in f.mcp_toml(),
         "Y/n asks again for anything but y, yes, n, no and Enter", (r.stdout, f.mcp_toml()))
    f.cleanup()


def main():
    global PROBE_HASH
    PROBE_HASH = learn_probe_hash()
    test_disable_enable_live()
    test_disabled_at_start()
    test_listener()
    test_image_changed_list()
    test_yes_no_strict()
    t.done()


main()
