#!/usr/bin/env python3
"""The secret scanner of `mcpgate serve` against the fake runtime and the probe
(docs/credentials.md, "What the scanner catches").

A stored value, in each transform a hostile server or client might use, is
sent through the probe's tools: to a server it is not bound for it must be
refused; from a server it is bound for (which may carry it) what comes back
must be redacted. Ordinary text must pass both ways unchanged.
Environment: MCPGATE (the binary), FAKES (the folder holding fake-runtime
and mcpgate-probe).
"""
import base64
import json
import os
import random
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from mcpclient import Tap, text_of  # noqa: E402

from gwtest import FAKES, MCPGATE, Fixture, learn_probe_hash  # noqa: E402
import gwtest  # noqa: E402

t = Tap()
PROBE_HASH = None

# 37 bytes (not a multiple of 3, so base64 of it ends in a character that
# depends on what follows), with separators of its own (_ and -)
SECRET = "ghp_R3dactMe_2025_Qx7Zp-Lm9Kt4Wv8YsJn"
NUMBER = "31415926535897932"  # a secret of digits, sent as a JSON number
MARK = "[redacted:gh]"


def server(name, tools_on, extra=""):
    return gwtest.server(name, PROBE_HASH, tools_on, None, extra)


def b64(data, url=False):
    enc = base64.urlsafe_b64encode if url else base64.b64encode
    return enc(data.encode() if isinstance(data, str) else data).decode()


def b64_middle(prefix_len, url=False):
    """The characters of base64(prefix + SECRET) made of SECRET's bits alone"""
    n = prefix_len + len(SECRET)
    text = b64(b"\0" * prefix_len + SECRET.encode(), url)
    return text[(8 * prefix_len + 5) // 6:8 * n // 6]


def wrapped(text, width=8):
    return "\n".join(text[i:i + width] for i in range(0, len(text), width))


def pct_all(text, lower=False):
    return "".join(("%%%02x" if lower else "%%%02X") % b for b in text.encode())


def mixed_case(text):
    return "".join(ch.upper() if i % 2 else ch.lower() for i, ch in enumerate(text))


# every transform of SECRET, as one text; the expected redaction of
# "x " + text + " y" when it can be cut out exactly, else None
TRANSFORMS = [
    ("base64 after one other byte", b64("a" + SECRET), None),
    ("base64 after two other bytes", b64("ab" + SECRET), None),
    ("base64 followed by more bytes", b64(SECRET + "tail"), None),
    ("base64url after one other byte", b64(b"\xfb" + SECRET.encode(), url=True), None),
    ("base64 wrapped at 8 characters", wrapped(b64("a" + SECRET)), None),
    ("base64 wrapped at 76 characters with CRLF, three times at three alignments",
     wrapped(b64("xy" + SECRET * 3), 76).replace("\n", "\r\n"), None),
    ("percent-encoding of every byte", pct_all(SECRET), "x %s y" % MARK),
    ("percent-encoding of every byte, lower-case hex", pct_all(SECRET, lower=True),
     "x %s y" % MARK),
    ("hex, its first half upper-case", SECRET.encode().hex()[:len(SECRET)].upper() +
     SECRET.encode().hex()[len(SECRET):], "x %s y" % MARK),
    ("lower-cased", SECRET.lower(), "x %s y" % MARK),
    ("upper-cased", SECRET.upper(), "x %s y" % MARK),
    ("in mixed case", mixed_case(SECRET), "x %s y" % MARK),
    ("reversed", SECRET[::-1], "x %s y" % MARK),
    ("reversed and upper-cased", SECRET[::-1].upper(), "x %s y" % MARK),
    ("spaced out", " ".join(SECRET), "x %s y" % MARK),
    ("split by a newline", SECRET[:11] + "\n" + SECRET[11:], "x %s y" % MARK),
    ("a dot between characters", ".".join(SECRET), "x %s y" % MARK),
    ("dashes and commas between characters", "-, ".join(SECRET), "x %s y" % MARK),
    ("spaced out and upper-cased", " ".join(SECRET.upper()), "x %s y" % MARK),
    ("hex spaced out", " ".join(SECRET.encode().hex()[i:i + 2]
                                for i in range(0, 2 * len(SECRET), 2)), "x %s y" % MARK),
]

ORDINARY = [
    ("a sentence", "The quick brown fox jumps over the lazy dog, twice - or three times."),
    ("text with pieces of the value", "ghp_ tokens start with ghp_R3dact; %s...%s" %
     (SECRET[:12], SECRET[-12:])),
    ("the value with one character changed", SECRET[:-1] + "X"),
    ("the value cut short by one", SECRET[:-1]),
    ("numbers with separators", ", ".join(str(i) for i in range(2000))),
    ("a date and a version", "2025-11-29 10:45:01, v1.2.3-rc.4, 3.1415926535"),
]


def rand_text(seed, n):
    rng = random.Random(seed)
    return b64(bytes(rng.getrandbits(8) for _ in range(n)))


def refused(r, name="gh"):
    msg = r.get("error", {}).get("message", "")
    return "credential %s" % name in msg and "refused" in msg and SECRET not in msg


def short(x):
    x = str(x)
    return x if len(x) <= 400 else x[:200] + " ... " + x[-200:]


def check(name, fn):
    """One case: fn() returns (passed, detail); an exception fails it alone"""
    try:
        ok, detail = fn()
    except Exception as e:  # a case that blows up is a failure, not a crash of the runner
        ok, detail = False, "raised %s: %s" % (type(e).__name__, short(e))
    t.ok(ok, name, short(detail))


def set_secret(f, name, value, var):
    for argv, data in ((["secret", "set", name], value + "\n"),
                       (["secret", "bind", name, "--host", "api.example.com", "--position",
                         "env:" + var], None)):
        r = subprocess.run([MCPGATE] + argv, input=data, env=f.env(), capture_output=True,
                           text=True, timeout=30)
        if r.returncode != 0:
            raise RuntimeError("mcpgate %s: %s" % (" ".join(argv), r.stderr))


def fixture():
    """bound: may carry both secrets (bound for its one host); free: neither"""
    eg = 'egress = "%s"\n' % os.path.join(FAKES, "mcpgate-probe")
    bound = ('network = ["api.example.com"]\ncredential = "gh"\n'
             'position = "env:GITHUB_TOKEN"\n')
    f = Fixture(server("bound", ("echo", "notify"), bound) + server("free", ("echo",)),
                config=eg)
    set_secret(f, "gh", SECRET, "GITHUB_TOKEN")
    set_secret(f, "pi", NUMBER, "PI_TOKEN")
    return f


def logged(c, data):
    """The data of the notifications/message that bound's notify sends with data"""
    before = len(c.notifications)
    c.call("bound__notify", {"method": "notifications/message",
                             "params": {"level": "info", "data": data}})
    c.request("ping")  # the notification has arrived before the answer to this
    got = [n["params"].get("data") for n in c.notifications[before:]
           if n["method"] == "notifications/message"]
    return got[0] if got else None


def test_leaving(c):
    """To a server the secret is not bound for: refused, in every transform"""
    def call(args, meta=None, name="gh"):
        return lambda: (lambda r: (refused(r, name), r))(c.call("free__echo", args, meta=meta))

    def request(method, params):
        return lambda: (lambda r: (refused(r), r))(c.request(method, params))

    for how, text, _ in TRANSFORMS:
        check("leaving, %s: refused" % how, call({"text": "x " + text + " y"}))
    check("leaving, split across two arguments: refused",
          call({"text": "x " + SECRET[:17], "more": SECRET[17:] + " y"}))
    check("leaving, split across three strings of an array: refused",
          call({"text": "x", "parts": [SECRET[:10], SECRET[10:25], SECRET[25:]]}))
    check("leaving, split across two arguments and spaced out: refused",
          call({"text": "x", "a": " ".join(SECRET[:19]), "b": " ".join(SECRET[19:])}))
    check("leaving, a numeric value sent as a JSON number: refused",
          call({"text": "x", "n": int(NUMBER)}, name="pi"))
    check("leaving, a numeric value split across two JSON numbers: refused",
          call({"text": "x", "n": [int(NUMBER[:9]), int(NUMBER[9:])]}, name="pi"))
    check("leaving, the value in params._meta: refused",
          call({"text": "x"}, meta={"note": SECRET}))
    check("leaving, the value in another member of params: refused",
          request("tools/call", {"name": "free__echo", "arguments": {"text": "x"},
                                 "extra": {"deep": SECRET}}))
    check("leaving, reversed in another member of params: refused",
          request("tools/call", {"name": "free__echo", "arguments": {"text": "x"},
                                 "extra": SECRET[::-1]}))
    check("leaving, upper-cased in a resources/read uri: refused",
          request("resources/read", {"uri": "mcpgate://free/probe://echo/" + SECRET.upper()}))
    check("leaving, reversed in prompts/get arguments: refused",
          request("prompts/get", {"name": "free__greet", "arguments": {"name": SECRET[::-1]}}))
    check("leaving, spaced out in a member name: refused",
          call({"text": "x", "key-" + " ".join(SECRET): 1}))


def test_returning(c):
    """From a server that may carry it: what comes back is redacted"""
    def echoed(text, want):
        r = c.call("bound__echo", {"text": "x " + text + " y"})
        out = text_of(r) if "result" in r else ""
        if want is not None:
            return out == want, r
        flat = re.sub(r"\s", "", out)
        gone = all(b64_middle(k, url) not in flat for k in (0, 1, 2) for url in (0, 1))
        return MARK in out and gone and out.startswith("x ") and out.endswith(" y"), r

    for how, text, want in TRANSFORMS:
        check("returning, %s: %s" % (how, "cut out exactly" if want else "redacted"),
              lambda: echoed(text, want))
    whole = "[redacted:gh, whole string]"
    check("returning, split across two strings: each replaced whole, the rest kept",
          lambda: (lambda d: (d == {"a": whole, "b": whole, "c": "untouched"}, d))(
              logged(c, {"a": "first " + SECRET[:20], "b": SECRET[20:] + " last",
                         "c": "untouched"})))
    check("returning, a numeric value as a JSON number (and split across two): redacted",
          lambda: (lambda d: (d == {"n": "[redacted:pi]",
                                    "m": ["[redacted:pi, whole string]"] * 2, "ok": 42}, d))(
              logged(c, {"n": int(NUMBER), "m": [int(NUMBER[:8]), int(NUMBER[8:])], "ok": 42})))
    check("returning, reversed and spaced out in a member name: redacted",
          lambda: (lambda d: (d == {MARK: "v"}, d))(logged(c, {" ".join(SECRET[::-1]): "v"})))

    def many():
        r = c.call("bound__echo", {"text": (SECRET + " ") * 70000})
        return (r["result"]["content"] == [{"type": "text", "text": whole}] and
                r["result"]["_meta"] == {"io.mcpgate/server": "bound"}), short(r)
    check("returning, the value 70000 times in one string (more finds than a scan keeps): "
          "that string replaced whole, the rest kept", many)

    def resource():
        r = c.request("resources/read",
                      {"uri": "mcpgate://bound/probe://echo/" + SECRET.lower()})
        contents = r.get("result", {}).get("contents", [{}])
        return contents[0].get("text") == MARK and SECRET.lower() not in json.dumps(r), r
    check("returning, lower-cased in a resources/read result: redacted", resource)


def test_ordinary(c):
    """Ordinary text passes both ways, unchanged"""
    cases = ORDINARY + [("64 KiB of random base64", rand_text(1, 48 * 1024)),
                        ("random base64 wrapped at 76",
                         "\n".join(rand_text(2, 3000)[i:i + 76] for i in range(0, 4000, 76))),
                        ("64 KiB of random hex", bytes(random.Random(3).getrandbits(8)
                                                       for _ in range(32 * 1024)).hex())]

    def echoed(server, text):
        r = c.call(server + "__echo", {"text": text})
        return "result" in r and text_of(r) == text, r

    for how, text in cases:
        check("ordinary, %s: passes to a server" % how, lambda: echoed("free", text))
        check("ordinary, %s: comes back unchanged" % how, lambda: echoed("bound", text))
    check("ordinary, pieces of the value in two arguments: pass",
          lambda: (lambda r: ("result" in r, r))(
              c.call("free__echo", {"text": SECRET[:12], "more": SECRET[12:20] + " and so on"})))


def test_large(c):
    """A message of almost 16 MiB (line_max) is scanned in bounded time"""
    sentence = "The quick brown fox jumps over the lazy dog, 0123456789. "
    text = (sentence * (16 * 1024 * 1024 // len(sentence) + 1))[:16 * 1024 * 1024 - 4096]
    tail = text[:200 - 2 * len(SECRET) + 1]
    spaced = text[:-200] + " ".join(SECRET) + tail

    def timed(server, sent, ok):
        t0 = time.monotonic()
        r = c.call(server + "__echo", {"text": sent}, timeout=120)
        took = time.monotonic() - t0
        print("# %s__echo of %d bytes: %.2f s" % (server, len(sent), took), flush=True)
        return ok(r), "%.2f s: %s" % (took, short(r))

    check("ordinary, 16 MiB: passes out and back unchanged",
          lambda: timed("free", text, lambda r: "result" in r and text_of(r) == text))
    check("leaving, spaced out at the end of 16 MiB: refused",
          lambda: timed("free", spaced, refused))
    check("returning, spaced out at the end of 16 MiB: cut out",
          lambda: timed("bound", spaced, lambda r: "result" in r and
                        text_of(r) == text[:-200] + MARK + tail))


def test_nowhere_else(f, c):
    c.close()
    with open(os.path.join(f.dir, "stderr.log"), "rb") as fh:
        stderr = fh.read().decode("utf-8", "replace")
    audit = json.dumps(f.audit())
    lines = "\n".join(c.received)
    bad = [SECRET, SECRET.lower(), SECRET.upper(), SECRET[::-1], " ".join(SECRET),
           b64_middle(1), b64_middle(2)]
    t.ok(not any(x in lines for x in bad), "no line the client got holds a transform of it",
         [short(x) for x in c.received if any(b in x for b in bad)][:3])
    t.ok(not any(x in audit for x in bad), "nor does the audit log",
         [x for x in audit.split("},") if any(b in x for b in bad)][:3])
    t.ok(not any(x in stderr for x in bad), "nor mcpgate's stderr")


def main():
    f = fixture()
    try:
        c = f.start()
        c.initialize()
        f.wait_settled()
        names = [tool["name"] for tool in c.request("tools/list")["result"]["tools"]]
        if not t.ok(names == ["bound__echo", "bound__notify", "free__echo"],
                    "both servers start", names):
            return
        for case in (test_leaving, test_returning, test_ordinary, test_large):
            case(c)
        test_nowhere_else(f, c)
    finally:
        f.cleanup()


PROBE_HASH = learn_probe_hash()
try:
    main()
except Exception as e:
    t.ok(False, "the session raised %s: %s" % (type(e).__name__, e))
sys.exit(t.done())
