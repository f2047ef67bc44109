#!/usr/bin/env python3
"""The Debian archive `mcpgate add` takes packages from, as config.toml's
[debian] names it (docs/2026-12-02-debian-archive.md), tried against the
tests' own signed archive on loopback (tests/lib/debarchive.py): add takes
the base and a --with set from it, resolved with the archive's
dependencies; the same archive checked with another key's keyring, or
served unsigned, is refused and nothing is added, also right after a
signed one was read (the lists are fetched again for other sources); a
bad [debian] value is an error naming config.toml's line.
Environment: MCPGATE, FAKES.
"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from mcpclient import Tap  # noqa: E402
from fakenpm import Place  # noqa: E402
import debarchive  # noqa: E402

t = Tap()

REGISTRY = {"pkg-a": {"latest": "1.0.0", "versions": {"1.0.0": {}}},
            "pkg-b": {"latest": "1.0.0", "versions": {"1.0.0": {}}}}


def set_debian(p, text):
    with open(os.path.join(p.conf, "config.toml"), "w") as fh:
        fh.write(text + '[mcp]\nruntime = "podman"\n')


def lock(p, name):
    path = os.path.join(p.data, "debian", "locks", name + ".lock")
    if not os.path.exists(path):
        return None
    with open(path) as fh:
        doc = json.load(fh)
    return {pkg["name"]: pkg["version"] for pkg in doc["packages"]}


def nothing_added(p, r):
    return r.returncode != 0 and p.text() is None and p.images() == []


def refused_for_signature(stderr):
    # apt's own words, for a Release without a signature and for one whose
    # signature the keyring does not verify alike
    return "apt-get update failed: The repository" in stderr and "is not signed" in stderr


def test_taken_from_the_archive(a):
    p = Place(tempfile.mkdtemp(prefix="mcpgate-archive-test-"), REGISTRY)
    set_debian(p, a.config())
    r = p.run("add", "npm:pkg-a@1.0.0", "--with", "git")
    base, git = lock(p, "base"), lock(p, "git")
    want_base = {n: debarchive.PACKAGES[n][0] for n in
                 ("dash", "coreutils", "grep", "sed", "findutils", "ca-certificates",
                  "libstdc++6", "libgcc-s1", "gcc-12-base", "libc6")}
    t.ok(r.returncode == 0 and base == want_base,
         "the base set and what it depends on come from the archive [debian] names, at its "
         "versions", (r.stderr[-600:], base))
    want_git = {n: debarchive.PACKAGES[n][0] for n in ("git", "zlib1g", "libpcre2-8-0")}
    t.ok(git == want_git and 'packages = ["git"]' in (p.text() or ""),
         "--with git is git and what it needs beyond the base (libc6 is below), from there too",
         (git, p.text()))
    t.ok("127.0.0.1" in r.stderr and "deb.debian.org" not in r.stderr,
         "add says which archive it reads", r.stderr[-600:])
    # another archive named now: its lists are fetched at once, not the
    # hour-old rule's, so an unsigned one is refused at once too
    set_debian(p, a.config(tree="unsigned"))
    before = p.text()
    r = p.run("add", "npm:pkg-b@1.0.0", "--refresh-packages")
    t.ok(r.returncode != 0 and refused_for_signature(r.stderr) and p.text() == before,
         "an archive named after a signed one was read is fetched and checked again: "
         "unsigned, refused", r.stderr[-600:])
    p.cleanup()


def test_refused(a):
    for what, text in (
            ("an archive signed by another key than the keyring's",
             a.config(keyring=a.other_keyring)),
            ("an unsigned archive", a.config(tree="unsigned"))):
        p = Place(tempfile.mkdtemp(prefix="mcpgate-archive-test-"), REGISTRY)
        set_debian(p, text)
        r = p.run("add", "npm:pkg-a@1.0.0")
        t.ok(nothing_added(p, r) and refused_for_signature(r.stderr) and
             not os.path.exists(os.path.join(p.data, "debian", "locks", "base.lock")),
             "%s is refused by apt: no lock, no image, no entry" % what, r.stderr[-600:])
        p.cleanup()


def test_bad_values(a):
    p = Place(tempfile.mkdtemp(prefix="mcpgate-archive-test-"), REGISTRY)
    for text, want in (
            ('[debian]\nmirror = "ftp://ftp.debian.org/debian"\n',
             'config.toml:2:10: "mirror" "ftp://ftp.debian.org/debian" must be an http://'),
            ('[debian]\nkeyring = "mirror.gpg"\n',
             'config.toml:2:11: "keyring" "mirror.gpg" must be an absolute path'),
            ('[debian]\nkeyring = "%s"\nsecurity = "http://x/ [trusted=yes]"\n' % a.keyring,
             'config.toml:3:12: "security" "http://x/ [trusted=yes]" holds a space'),
            ('[debian]\nmirror = "http://127.0.0.1:1/debian"\nkeyring = "/nonexistent.gpg"\n',
             "/nonexistent.gpg, the keys the archive is checked with (config.toml's [debian] "
             "keyring)")):
        set_debian(p, text)
        r = p.run("add", "npm:pkg-a@1.0.0")
        t.ok(nothing_added(p, r) and want in r.stderr, "refused: %s" % want, r.stderr[-400:])
    p.cleanup()


def main():
    debarchive.config_or_skip()
    a = debarchive.shared()
    test_taken_from_the_archive(a)
    test_refused(a)
    test_bad_values(a)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
