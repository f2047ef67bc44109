"""A fake apt-get for `mcpgate add` without Debian's archive (make check): it
answers mcpgate's private apt calls (update, install --simulate, install
--download-only) from a small universe of packages of the test's own, and
writes each .deb it "downloads" into apt's cache as a real .deb (an ar of
debian-binary, control.tar.gz and data.tar.gz) that mcpgate unpacks itself.
What is fake is the archive; the locks, the layers and the unpacking are
mcpgate's real ones.
"""
import os
import subprocess

FAKE_APT = r'''#!/usr/bin/env python3
import io, os, re, sys, tarfile
UNIVERSE = {
    # name: (version, depends, files {path: text})
    "libc6": ("2.36-9+deb12u4", [], {"usr/lib/libc-fake": "libc\n"}),
    "dash": ("0.5.12-2", ["libc6"], {"usr/bin/dash": "dash\n"}),
    "coreutils": ("9.1-1", ["libc6"], {"usr/bin/ls": "ls\n"}),
    "grep": ("3.8-5", ["libc6"], {"usr/bin/grep": "grep\n"}),
    "sed": ("4.9-1", ["libc6"], {"usr/bin/sed": "sed\n"}),
    "findutils": ("4.9.0-4", ["libc6"], {"usr/bin/find": "find\n"}),
    "ca-certificates": ("20230311", [], {"usr/share/ca-certificates/mozilla/Test.crt": "CERT\n"}),
    "libstdc++6": ("12.2.0-14", ["libc6"], {"usr/lib/libstdc++-fake": "c++\n"}),
    "python3.11": ("3.11.2-6+deb12u5", ["libc6"], {"usr/bin/python3.11": "python\n"}),
    "python3": ("3.11.2-1+b1", ["python3.11"], {"usr/share/doc/python3/fake": "py\n"}),
    "git": ("1:2.39.5-0+deb12u2", ["libc6"], {"usr/bin/git": "git\n"}),
}
ARCH = os.environ.get("FAKE_APT_ARCH", "amd64")
args = sys.argv[1:]
status = ""
for a in args:
    if a.startswith("-oDir::State::status="):
        status = a.split("=", 1)[1]
args = [a for a in args if not a.startswith("-")]
with open(os.environ["APT_CONFIG"]) as fh:
    cache = re.search(r'Dir::Cache "([^"]*)"', fh.read()).group(1)
installed = set()
if status and os.path.exists(status):
    installed = set(re.findall(r"^Package: (\S+)", open(status).read(), re.M))
if args[:1] == ["update"]:
    sys.exit(0)


def closure(names):
    out, todo = [], list(names)
    while todo:
        n = todo.pop(0)
        if n in installed or n in out:
            continue
        if n not in UNIVERSE:
            sys.stderr.write("E: Unable to locate package %s\n" % n)
            sys.exit(100)
        out.append(n)
        todo += UNIVERSE[n][1]
    return out


def tar_gz(files):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for path, text in sorted(files.items()):
            data = text.encode()
            ti = tarfile.TarInfo("./" + path)
            ti.size, ti.mode, ti.mtime = len(data), 0o755 if "/bin/" in path else 0o644, 0
            t.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def deb(name):
    version, deps, files = UNIVERSE[name]
    control = "Package: %s\nVersion: %s\nArchitecture: %s\nMaintainer: test\n" % (name, version, ARCH)
    if deps:
        control += "Depends: %s\n" % ", ".join(deps)
    control += "Description: a test package\n"
    out = b"!<arch>\n"
    for member, data in (("debian-binary", b"2.0\n"), ("control.tar.gz", tar_gz({"control": control})),
                         ("data.tar.gz", tar_gz(files))):
        out += ("%-16s%-12d%-6d%-6d%-8s%-10d`\n" % (member, 0, 0, 0, "100644", len(data))).encode()
        out += data + (b"\n" if len(data) % 2 else b"")
    return out


if args[:1] == ["install"] and "--simulate" in sys.argv:
    for n in closure(args[1:]):
        print("Inst %s (%s Debian:12/stable [%s])" % (n, UNIVERSE[n][0], ARCH))
    sys.exit(0)
if args[:1] == ["install"] and "--download-only" in sys.argv:
    for spec in args[1:]:
        name, _, version = spec.partition("=")
        if UNIVERSE.get(name, ("",))[0] != version:
            sys.stderr.write("E: Version '%s' for '%s' was not found\n" % (version, name))
            sys.exit(100)
        path = os.path.join(cache, "archives", "%s_%s_%s.deb" % (name, version.replace(":", "%3a"), ARCH))
        with open(path, "wb") as fh:
            fh.write(deb(name))
    sys.exit(0)
sys.stderr.write("E: the fake apt-get does not know %r\n" % sys.argv)
sys.exit(100)
'''


def install(bin_dir):
    """apt-get in bin_dir, for the arch of this machine"""
    path = os.path.join(bin_dir, "apt-get")
    with open(path, "w") as fh:
        fh.write(FAKE_APT)
    os.chmod(path, 0o755)
    arch = subprocess.run(["dpkg", "--print-architecture"], capture_output=True,
                          text=True).stdout.strip() or "amd64"
    return {"FAKE_APT_ARCH": arch}
