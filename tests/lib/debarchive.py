"""A Debian archive of the tests' own, signed and served on loopback, that
`mcpgate add` takes its packages from in make check instead of Debian's
(config.toml's [debian], docs/2026-12-02-debian-archive.md): make check needs
no network.

It holds the base set (internal/debian/deb_name.c), git, python3 and what a
Python source distribution's build gets (gcc, libc6-dev, python3-dev), with a few
dependencies between them as Debian has them (libstdc++6 on libgcc-s1 and
libc6, git on zlib1g and libpcre2-8-0), each a small .deb made with
dpkg-deb from a folder written here; Packages and Release are written here
too, and Release is signed (InRelease) by a throwaway gpg key made for it.
Beside it: the same archive unsigned, and the keyring of another key, for
the tests that show both are refused.

Built once and kept in build/test-archive/KEY (KEY: the hash of this file
and the machine's architecture), so a run of make check builds it once.
Needs dpkg-deb, gpg and apt-get; without them Archive.get() raises
Unavailable with what to install, which a test reports as a skip.
"""
import fcntl
import hashlib
import http.server
import os
import shutil
import subprocess
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.path.join(HERE, "..", "..", "build", "test-archive")
SUITE = "bookworm"

# name: (version, architecture "any" or "all", Depends, the files it ships)
PACKAGES = {
    "libc6": ("2.36-9+test1", "any", "", {"usr/lib/libc.so.6": "libc\n"}),
    "gcc-12-base": ("12.2.0-14+test1", "any", "", {}),
    "libgcc-s1": ("12.2.0-14+test1", "any", "gcc-12-base (= 12.2.0-14+test1), libc6 (>= 2.35)",
                  {"usr/lib/libgcc_s.so.1": "libgcc\n"}),
    "libstdc++6": ("12.2.0-14+test1", "any",
                   "gcc-12-base (= 12.2.0-14+test1), libc6 (>= 2.36), libgcc-s1 (>= 4.2)",
                   {"usr/lib/libstdc++.so.6": "libstdc++\n"}),
    "dash": ("0.5.12-2+test1", "any", "libc6 (>= 2.34)", {"usr/bin/dash": "#!/bin/dash\n"}),
    "coreutils": ("9.1-1+test1", "any", "libc6 (>= 2.34)", {"usr/bin/cat": "cat\n"}),
    "grep": ("3.8-5+test1", "any", "libc6 (>= 2.34)", {"usr/bin/grep": "grep\n"}),
    "sed": ("4.9-1+test1", "any", "libc6 (>= 2.34)", {"usr/bin/sed": "sed\n"}),
    "findutils": ("4.9.0-4+test1", "any", "libc6 (>= 2.34)", {"usr/bin/find": "find\n"}),
    "ca-certificates": ("20230311+test1", "all", "",
                        {"usr/share/ca-certificates/mozilla/Test_Root.crt":
                         "-----BEGIN CERTIFICATE-----\nTUNQR0FURQ==\n"
                         "-----END CERTIFICATE-----\n"}),
    "zlib1g": ("1:1.2.13.dfsg-1+test1", "any", "libc6 (>= 2.14)",
               {"usr/lib/libz.so.1": "zlib\n"}),
    "libpcre2-8-0": ("10.42-1+test1", "any", "libc6 (>= 2.34)",
                     {"usr/lib/libpcre2-8.so.0": "pcre2\n"}),
    # what a Python image's layer asks for (add pypi:)
    "python3.11": ("3.11.2-6+test1", "any", "libc6 (>= 2.34)",
                   {"usr/bin/python3.11": "python\n"}),
    "python3": ("3.11.2-1+test1", "any", "python3.11 (>= 3.11.2)",
                {"usr/share/doc/python3/README": "python3\n"}),
    # what a source distribution's contained build gets (add pypi:./X.tar.gz)
    "gcc": ("4:12.2.0-3+test1", "any", "libc6 (>= 2.34)", {"usr/bin/gcc": "gcc\n"}),
    "libc6-dev": ("2.36-9+test1", "any", "libc6 (= 2.36-9+test1)",
                  {"usr/include/stdio.h": "/* stdio */\n"}),
    "python3-dev": ("3.11.2-1+test1", "any", "python3 (= 3.11.2-1+test1)",
                    {"usr/include/python3.11/Python.h": "/* Python */\n"}),
    "git": ("1:2.39.5-0+deb12u1+test1", "any",
            "libc6 (>= 2.34), libpcre2-8-0 (>= 10.34), zlib1g (>= 1:1.2.0)",
            {"usr/bin/git": "git\n"}),
}


class Unavailable(Exception):
    """What this machine lacks to build or use the archive"""


def _key():
    with open(os.path.abspath(__file__), "rb") as fh:
        return hashlib.sha256(fh.read() + _arch().encode()).hexdigest()[:16]


def _arch():
    return subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True,
                          check=True).stdout.strip()


def _need():
    missing = [p for p in ("dpkg", "dpkg-deb", "gpg", "apt-get") if shutil.which(p) is None]
    if missing:
        raise Unavailable("needs %s to build and read a signed Debian archive "
                          "(apt-get install dpkg gnupg apt)" % ", ".join(missing))


def _deb(pool, work, name, arch):
    version, kind, depends, files = PACKAGES[name]
    arch = "all" if kind == "all" else arch
    root = os.path.join(work, name)
    files = dict(files)
    files["usr/share/doc/%s/copyright" % name] = "made by mcpgate's tests\n"
    for path, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
        with open(os.path.join(root, path), "w") as fh:
            fh.write(text)
    control = ["Package: " + name, "Version: " + version, "Architecture: " + arch,
               "Maintainer: mcpgate tests <tests@mcpgate.invalid>", "Priority: optional",
               "Section: misc"]
    if depends:
        control.append("Depends: " + depends)
    control.append("Description: %s, as mcpgate's tests need it\n a small stand-in" % name)
    os.makedirs(os.path.join(root, "DEBIAN"))
    with open(os.path.join(root, "DEBIAN", "control"), "w") as fh:
        fh.write("\n".join(control) + "\n")
    deb = "%s_%s_%s.deb" % (name, version.split(":")[-1], arch)
    subprocess.run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", root,
                    os.path.join(pool, deb)], check=True, capture_output=True)
    with open(os.path.join(pool, deb), "rb") as fh:
        data = fh.read()
    return "\n".join(control[:-1] + [
        "Filename: pool/main/" + deb, "Size: %d" % len(data),
        "SHA256: " + hashlib.sha256(data).hexdigest(), control[-1]]) + "\n"


def _index(top, suite, arch, stanzas):
    """dists/SUITE under top: its Packages and an unsigned Release naming it"""
    rel = "main/binary-%s/Packages" % arch
    d = os.path.join(top, "dists", suite)
    os.makedirs(os.path.join(d, os.path.dirname(rel)))
    text = "\n".join(stanzas).encode()
    with open(os.path.join(d, rel), "wb") as fh:
        fh.write(text)
    release = ("Origin: mcpgate tests\nLabel: mcpgate tests\nSuite: %s\nCodename: %s\n"
               "Date: %s\nArchitectures: %s\nComponents: main\nDescription: mcpgate's test "
               "archive\nSHA256:\n %s %d %s\n" %
               (suite, suite, time.strftime("%a, %d %b %Y %H:%M:%S UTC",
                                            time.gmtime(time.time() - 86400)),
                arch, hashlib.sha256(text).hexdigest(), len(text), rel))
    with open(os.path.join(d, "Release"), "w") as fh:
        fh.write(release)
    return os.path.join(d, "Release")


def _gpg(home, *args):
    return subprocess.run(["gpg", "--batch", "--quiet", "--homedir", home, "--pinentry-mode",
                           "loopback", "--passphrase", ""] + list(args),
                          check=True, capture_output=True)


def _keyring(home, uid, out):
    """A new key in home (no passphrase), its public part exported to out"""
    _gpg(home, "--quick-gen-key", uid, "ed25519", "sign", "never")
    with open(out, "wb") as fh:
        fh.write(_gpg(home, "--export", uid).stdout)


def _build(dest):
    arch = _arch()
    work = tempfile.mkdtemp(prefix="mcpgate-archive-")
    home = tempfile.mkdtemp(prefix="mcpgate-gpg-")  # short: gpg-agent's socket is in it
    try:
        signed = os.path.join(work, "signed")
        pool = os.path.join(signed, "debian", "pool", "main")
        os.makedirs(pool)
        stanzas = [_deb(pool, os.path.join(work, "src"), n, arch) for n in sorted(PACKAGES)]
        releases = [_index(os.path.join(signed, "debian"), SUITE, arch, stanzas),
                    _index(os.path.join(signed, "debian"), SUITE + "-updates", arch, []),
                    _index(os.path.join(signed, "debian-security"), SUITE + "-security", arch,
                           [])]
        shutil.copytree(signed, os.path.join(work, "unsigned"))
        uid = "mcpgate test archive <archive@mcpgate.invalid>"
        _keyring(home, uid, os.path.join(work, "keyring.gpg"))
        for release in releases:
            _gpg(home, "--local-user", uid, "--digest-algo", "SHA512", "--clearsign",
                 "--output", os.path.join(os.path.dirname(release), "InRelease"), release)
        other = tempfile.mkdtemp(prefix="mcpgate-gpg-")
        try:
            _keyring(other, "another key <other@mcpgate.invalid>",
                     os.path.join(work, "other-keyring.gpg"))
        finally:
            subprocess.run(["gpgconf", "--homedir", other, "--kill", "gpg-agent"],
                           capture_output=True)
            shutil.rmtree(other, ignore_errors=True)
        shutil.rmtree(os.path.join(work, "src"))
        os.rename(work, dest)
    finally:
        subprocess.run(["gpgconf", "--homedir", home, "--kill", "gpg-agent"],
                       capture_output=True)
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class Archive:
    """The archive, built or found in build/test-archive, served on
    127.0.0.1 by a thread of this process until stop()"""

    @classmethod
    def get(cls):
        _need()
        os.makedirs(CACHE, exist_ok=True)
        dest = os.path.join(CACHE, _key())
        with open(os.path.join(CACHE, ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not os.path.isdir(dest):
                try:
                    _build(dest)
                except (OSError, subprocess.CalledProcessError) as e:
                    raise Unavailable("the test archive could not be built: %s %s" %
                                      (e, getattr(e, "stderr", b"") or b""))
                # what an older copy of this file built
                for old in os.listdir(CACHE):
                    if old != os.path.basename(dest) and not old.startswith("."):
                        shutil.rmtree(os.path.join(CACHE, old), ignore_errors=True)
        return cls(dest)

    def __init__(self, root):
        self.root = os.path.realpath(root)
        self.keyring = os.path.join(self.root, "keyring.gpg")
        self.other_keyring = os.path.join(self.root, "other-keyring.gpg")
        handler = lambda *a, **k: _Quiet(*a, directory=self.root, **k)  # noqa: E731
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def config(self, tree="signed", keyring=None):
        """config.toml's [debian] for this archive (tree: "signed" or "unsigned";
        keyring: another keyring than the archive's)"""
        return ('[debian]\nmirror = "%s/%s/debian"\nsecurity = "%s/%s/debian-security"\n'
                'keyring = "%s"\n' % (self.url, tree, self.url, tree, keyring or self.keyring))

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


_shared = None


def shared():
    """One archive served for the whole test program; Unavailable when it cannot be"""
    global _shared
    if _shared is None:
        _shared = Archive.get()
    return _shared


def config_or_skip():
    """[debian] of the shared archive, or the program ends as skipped (77),
    saying what this machine lacks"""
    try:
        return shared().config()
    except Unavailable as e:
        print("ok 1 # SKIP %s" % e)
        print("0 passed, 0 failed")
        raise SystemExit(77)
