#!/usr/bin/env python3
"""mcpgate's seccomp profile, tried A/B on a real runtime (docs/seccomp.md).

The probe's `syscalls` tool tries what a contained server should not do:
make namespaces (unshare, clone with a namespace flag, setns), trace or read
another process, bpf, perf, io_uring, userfaultfd, the key store, file
handles, fanotify, raw and vsock sockets, mounting in a new namespace. A runs
it with the same isolation as mcpgate (read-only, no capabilities,
no-new-privileges, no network) but the runtime's default seccomp profile. B
runs it through `mcpgate serve`, which gives it mcpgate's profile. Every call
must fail in B. Each call either fails differently in A (it went through, or
failed with another errno) or is one the runtime's default already refuses
the same way, and the test says which.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import containers_test as ct  # noqa: E402
from mcpclient import text_of  # noqa: E402

t = ct.t
RT = ct.RT


def direct(image):
    """A: the runtime's default profile, mcpgate's other flags"""
    lines = [{"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "itest", "version": "1"}}},
             {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
              "params": {"name": "syscalls", "arguments": {}}}]
    r = subprocess.run([RT, "run", "-i", "--rm", "--pull=never", "--network=none", "--read-only",
                        "--cap-drop=ALL", "--security-opt=no-new-privileges", "--tmpfs",
                        "/tmp:rw,size=8m", image],
                       input="".join(json.dumps(x) + "\n" for x in lines),
                       capture_output=True, text=True, timeout=120, env=ct.RT_ENV)
    for line in r.stdout.splitlines():
        msg = json.loads(line)
        if msg.get("id") == 1:
            return json.loads(msg["result"]["content"][0]["text"])
    raise RuntimeError("the probe did not answer: %s" % r.stderr[-300:])


def test(base, probe_image):
    a = direct(probe_image)
    server = ct.probe_server("sc", probe_image, tools=("syscalls",))
    s = ct.Session(base, server)
    s.mcpgate("pull", "sc")
    s.mcpgate("review", "sc")
    s.mcpgate("approve", "sc")
    c = s.serve()
    c.initialize()
    ct.wait_settled(s.state)
    c.request("tools/list", timeout=120)
    b = json.loads(text_of(c.call("sc__syscalls", {}, timeout=60)))
    c.close(timeout=60)
    argv = [x for x in s.audit(s.session_ids()[-1]) if x["event"] == "server.start"]
    profile = [x for x in (argv[0]["argv"] if argv else []) if x.startswith("--security-opt=seccomp=")]
    t.ok(len(profile) == 1, "%s: the server runs with mcpgate's profile" % RT, profile)
    print("# %s: call: runtime default -> mcpgate's profile" % RT)
    differs, same = [], []
    for name in sorted(a):
        print("#   %-18s %-28s -> %s" % (name, a[name], b.get(name)))
        (differs if a[name] != b.get(name) else same).append(name)
    t.ok(all(v not in ("ok", "lost") for v in b.values()) and set(b) == set(a),
         "%s: with mcpgate's profile every call fails (%d calls)" % (RT, len(b)), b)
    t.ok(b.get("clone3") == "Function not implemented",
         "%s: clone3 answers ENOSYS, so the C library falls back to clone" % RT, b.get("clone3"))
    went = [n for n in a if a[n] == "ok"]
    t.ok(went and all(n in differs for n in went),
         "%s: what the runtime's default let through (%s) is refused now"
         % (RT, ", ".join(went)), (a, b))
    print("# %s: already refused the same way by the runtime's default: %s"
          % (RT, ", ".join(same) or "none"))
    t.ok(len(differs) > 0, "%s: the profile changes %d of %d calls" % (RT, len(differs), len(a)))


def main():
    def body(base):
        image = ct.probe_image()
        ct.rt("pull", *((["--tls-verify=false"] if RT == "podman" else []) + [image]))
        test(base, image)
    return ct.run_cases("seccomp", body)


if __name__ == "__main__":
    sys.exit(main())
