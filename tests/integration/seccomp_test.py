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
import ctypes
import json
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import containers_test as ct  # noqa: E402
import gwtest  # noqa: E402
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

AUDIT_ARCH = {0xc000003e: "x86-64", 0x40000003: "i386 (x86)", 0xc00000b7: "aarch64",
              0x40000028: "arm"}
X32_BIT = 0x40000000


def loaded_filters(pid):
    """The seccomp filters loaded in process pid, as the kernel holds them
    (PTRACE_SECCOMP_GET_FILTER: root, and the process stopped for it)"""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.restype = ctypes.c_long
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    seize, interrupt, detach, get_filter = 0x4206, 0x4207, 17, 0x420c
    if libc.ptrace(seize, pid, None, None) < 0:
        raise RuntimeError("PTRACE_SEIZE %d: %s" % (pid, os.strerror(ctypes.get_errno())))
    progs = []
    try:
        libc.ptrace(interrupt, pid, None, None)
        os.waitpid(pid, 0x40000000)  # __WALL
        while True:
            n = libc.ptrace(get_filter, pid, ctypes.c_void_p(len(progs)), None)
            if n <= 0:
                break
            buf = ctypes.create_string_buffer(n * 8)
            libc.ptrace(get_filter, pid, ctypes.c_void_p(len(progs)), buf)
            progs.append([struct.unpack("<HBBI", buf.raw[i:i + 8]) for i in range(0, n * 8, 8)])
    finally:
        libc.ptrace(detach, pid, None, None)
    return progs


def filter_reach(progs):
    """What the filters compare: the architectures (seccomp_data.arch, at 4)
    they have rules for, and the x32 call numbers (nr, at 0, with the x32
    bit) they match one by one"""
    arches, x32 = set(), set()
    for prog in progs:
        src = None
        for code, jt, jf, k in prog:
            if code == 0x20:  # BPF_LD | BPF_W | BPF_ABS
                src = k
            elif code & 0x07 == 0x00 or code & 0x07 == 0x01:  # another load
                src = None
            elif code == 0x15 and src == 4:  # BPF_JMP | BPF_JEQ | BPF_K on arch
                arches.add(k)
            elif code == 0x15 and src == 0 and X32_BIT < k < X32_BIT + 0x1000:
                x32.add(k)
    return arches, x32


def describe(arches):
    return ", ".join(sorted(AUDIT_ARCH.get(a, hex(a)) for a in arches))


def test_architectures(base, probe_image):
    """The filter holds x86-64 alone: no i386 (whose socketcall carries the
    socket family in memory, out of the rules' reach) and no x32. Read from
    the filter the kernel loaded, since this kernel has no IA-32 emulation
    to try an i386 call with; x32 is tried too, and must not meet the x32
    rules (whose EPERM an x32 unshare met before)"""
    if os.uname().machine != "x86_64":
        t.ok(True, "%s: # SKIP not x86-64" % RT)
        return
    server = ct.probe_server("arch", probe_image, tools=("seccomp",))
    s = ct.Session(base, server)
    s.mcpgate("pull", "arch")
    s.mcpgate("review", "arch")
    s.mcpgate("approve", "arch")
    c = s.serve()
    c.initialize()
    gwtest.wait_settled(s.state)
    c.request("tools/list", timeout=120)
    inside = json.loads(text_of(c.call("arch__seccomp", {}, timeout=60)))
    name = "mcpgate-arch-" + s.session_ids()[-1]
    pid = int(ct.rt("inspect", "-f", "{{.State.Pid}}", name).stdout.strip() or 0)
    progs = None
    if os.geteuid() == 0 and pid > 0:
        try:
            progs = loaded_filters(pid)
        except RuntimeError as e:
            progs = e
    c.close(timeout=60)
    print("# %s: inside, Seccomp %s with %s filter(s); an x32 unshare: %s"
          % (RT, inside.get("seccomp"), inside.get("filters"), inside.get("x32_unshare")))
    t.ok(inside.get("seccomp") == "2" and inside.get("filters") not in (None, "", "0"),
         "%s: the server runs under a seccomp filter" % RT, inside)
    t.ok(inside.get("x32_unshare") not in ("ok", "Operation not permitted"),
         "%s: an x32 call meets no x32 rules (the filter's answer for an architecture it "
         "does not know)" % RT, inside)
    if progs is None:
        t.ok(True, "%s: # SKIP reading the loaded filter needs root" % RT)
        return
    if isinstance(progs, RuntimeError):
        t.ok(False, "%s: the loaded filter could not be read: %s" % (RT, progs))
        return
    arches, x32 = filter_reach(progs)
    print("# %s: the loaded filter (%d program(s), %d instructions) has rules for %s, and "
          "for %d x32 call numbers" % (RT, len(progs), sum(len(p) for p in progs),
                                        describe(arches), len(x32)))
    t.ok(arches == {0xc000003e} and not x32,
         "%s: the loaded filter holds x86-64 alone: no i386, no x32" % RT,
         (describe(arches), sorted(hex(k) for k in x32)[:10]))


def main():
    def body(base):
        image = ct.probe_image()
        ct.rt("pull", *((["--tls-verify=false"] if RT == "podman" else []) + [image]))
        test(base, image)
        test_architectures(base, image)
    return ct.run_cases("seccomp", body)


if __name__ == "__main__":
    sys.exit(main())
