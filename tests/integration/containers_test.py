#!/usr/bin/env python3
"""Contained servers on a real runtime (MCPGATE_CONTAINER_TEST_RUNTIME=podman|docker).

Builds the probe image locally, pushes it to the local registry on
127.0.0.1:5000, pulls it by digest with `mcpgate pull`, runs a session through
`mcpgate serve` and asks the probe, from inside its container, what it can do.
Every claim is tried: the attempt to write, to connect, to read a variable is
made and must fail. Traffic goes only to loopback and to containers on a
network this test made. Everything it makes is removed at the end.
"""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from mcpclient import Client, Tap, text_of  # noqa: E402
from gwtest import UNMATCHED_PIN, wait_settled  # noqa: E402
import listenclient  # noqa: E402

RT = os.environ.get("MCPGATE_CONTAINER_TEST_RUNTIME", "podman")
MCPGATE = os.path.abspath(os.environ.get("MCPGATE", "./mcpgate"))
PROBE = os.path.abspath(os.environ.get("PROBE", "build/fakes/mcpgate-probe"))
REGISTRY = "localhost:5000"
TAG = "%d-%d" % (os.getpid(), int(time.time()))

t = Tap()
made = {"containers": [], "networks": [], "images": []}
PERSON = 4242  # the owner of the test's workspaces when it runs as root


def _rt_env():
    """The test's own podman commands, as a non-root user without
    XDG_RUNTIME_DIR, use the directory mcpgate gives podman then (its
    container.c), so both share one rootless network namespace"""
    env = dict(os.environ)
    if RT == "podman" and os.geteuid() != 0 and not env.get("XDG_RUNTIME_DIR"):
        run = "/run/user/%d" % os.geteuid()
        if not (os.path.isdir(run) and os.stat(run).st_uid == os.geteuid()):
            run = os.path.join(env.get("TMPDIR", "/tmp"), "mcpgate-run-%d" % os.geteuid())
            os.makedirs(run, mode=0o700, exist_ok=True)
        env["XDG_RUNTIME_DIR"] = run
    return env


RT_ENV = _rt_env()


def rt(*args, check=True, timeout=120, env=None):
    r = subprocess.run([RT] + list(args), capture_output=True, text=True, timeout=timeout,
                       env=env if env is not None else RT_ENV)
    if check and r.returncode != 0:
        raise RuntimeError("%s %s: %s" % (RT, " ".join(args), r.stderr.strip()[-500:]))
    return r


def manifest_digest(name, tag):
    req = urllib.request.Request("http://127.0.0.1:5000/v2/%s/manifests/%s" % (name, tag),
                                 method="HEAD")
    req.add_header("Accept", "application/vnd.oci.image.manifest.v1+json, "
                             "application/vnd.docker.distribution.manifest.v2+json")
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.headers["Docker-Content-Digest"]


def build_image(name, files, entrypoint, changes=(), dirs=None):
    """A one-layer image from files {path_in_image: host_path or bytes}, pushed to
    the local registry; returns NAME@DIGEST with no local copy left behind.
    dirs: {path_in_image: mode} (None: absent) for folders the image has or
    lacks, /tmp among them (default 1777, as a real image has it)."""
    d = tempfile.mkdtemp(prefix="mcpgate-itest-img-")
    try:
        root = os.path.join(d, "root")
        for path, src in files.items():
            dst = os.path.join(root, path.lstrip("/"))
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            if isinstance(src, bytes):
                with open(dst, "wb") as fh:
                    fh.write(src)
            else:
                shutil.copy(src, dst)
                os.chmod(dst, 0o755)
        # as a real image has it: everyone's, sticky (the runtime's tmpfs
        # over it keeps the folder's mode)
        for path, mode in sorted(dict({"/tmp": 0o1777}, **(dirs or {})).items()):
            if mode is None:
                continue
            os.makedirs(os.path.join(root, path.lstrip("/")), exist_ok=True)
            os.chmod(os.path.join(root, path.lstrip("/")), mode)
        tar = os.path.join(d, "image.tar")
        subprocess.run(["tar", "-C", root, "-cf", tar, "."], check=True)
        ref = "%s/%s:%s" % (REGISTRY, name, TAG)
        more = [x for c in changes for x in ("--change", c)]
        rt("import", "--change", "ENTRYPOINT " + json.dumps(entrypoint), *more, tar, ref)
        push = ["push"] + (["--tls-verify=false"] if RT == "podman" else []) + [ref]
        rt(*push)
        digest = manifest_digest(name, TAG)
        rt("rmi", "-f", ref, check=False)
        pinned = "%s/%s@%s" % (REGISTRY, name, digest)
        made["images"].append(pinned)
        return pinned
    finally:
        shutil.rmtree(d, ignore_errors=True)


def labelled(kind, label):
    if kind == "containers":
        r = rt("ps", "-a", "--filter", "label=" + label, "--format", "{{.Names}}")
    else:
        r = rt("network", "ls", "--filter", "label=" + label, "--format", "{{.Name}}")
    return [x for x in r.stdout.split() if x]


class Session:
    def __init__(self, base, servers, config=""):
        self.dir = tempfile.mkdtemp(prefix="mcpgate-itest-", dir=base)
        self.conf = os.path.join(self.dir, "conf")
        self.state = os.path.join(self.dir, "state")
        self.ws = os.path.join(self.dir, "ws")
        for sub in (self.conf, self.state, self.ws, os.path.join(self.ws, "ro"),
                    os.path.join(self.ws, "rw")):
            os.makedirs(sub)
        # a person's workspace is the person's: as root the test gives it to a
        # user of its own, whom mcpgate then runs the servers as
        if os.geteuid() == 0:
            for sub in (self.ws, os.path.join(self.ws, "ro"), os.path.join(self.ws, "rw")):
                os.chown(sub, PERSON, PERSON)
        with open(os.path.join(self.conf, "mcp.toml"), "w") as fh:
            fh.write(servers)
        with open(os.path.join(self.conf, "config.toml"), "w") as fh:
            fh.write('[mcp]\nruntime = "%s"\n%s' % (RT, config))
        self.env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"),
                    "XDG_STATE_HOME": self.state, "MCPGATE_LOG": "info",
                    "XDG_DATA_HOME": os.path.join(base, "data"),  # shared: approvals persist
                    "MCPGATE_ITEST_CANARY": "must-not-reach-the-server"}
        for k in ("XDG_RUNTIME_DIR", "DOCKER_HOST", "CONTAINER_HOST"):
            if k in os.environ:
                self.env[k] = os.environ[k]

    def mcpgate(self, *args, timeout=600):
        return subprocess.run([MCPGATE] + list(args) + ["--config", self.conf], env=self.env,
                              capture_output=True, text=True, timeout=timeout, cwd=self.ws)

    def pinned(self, server):
        """The manifest hash mcp.toml holds for server (after approve)."""
        with open(os.path.join(self.conf, "mcp.toml")) as fh:
            text = fh.read()
        section = text.split('name = "%s"' % server, 1)[1].split("[[server]]", 1)[0]
        m = re.search(r'^manifest = "(sha256:[0-9a-f]{64})"', section, re.M)
        return m.group(1) if m else None

    def serve(self):
        self.stderr = open(os.path.join(self.dir, "serve.stderr"), "wb")
        return Client([MCPGATE, "serve", "--config", self.conf, "--workspace", self.ws],
                      env=self.env, stderr=self.stderr)

    def session_ids(self):
        return sorted(os.path.basename(p)[:-6] for p in
                      glob.glob(os.path.join(self.state, "mcpgate", "sessions", "*.jsonl")))

    def audit(self, sid):
        with open(os.path.join(self.state, "mcpgate", "sessions", sid + ".jsonl")) as fh:
            return [json.loads(line) for line in fh]


def npm_env(env):
    """What npm needs from the person's shell to reach the registry, into env"""
    for k in ("NODE_EXTRA_CA_CERTS", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy",
              "NO_PROXY", "no_proxy", "npm_config_registry"):
        if k in os.environ:
            env[k] = os.environ[k]
    # node trusts its own CA list, not the machine's: hand npm the machine's
    # bundle, as curl and apt use it (a registry behind the machine's own CA)
    if "NODE_EXTRA_CA_CERTS" not in env and os.path.exists("/etc/ssl/certs/ca-certificates.crt"):
        env["NODE_EXTRA_CA_CERTS"] = "/etc/ssl/certs/ca-certificates.crt"


_unenforced = None


def unenforced_here(base):
    """The limits mcpgate itself says cannot hold on this runtime (rootless
    podman on cgroup v1: memory and pids), from `mcpgate list --json`"""
    global _unenforced
    if _unenforced is None:
        probe = Session(base, '[[server]]\nname = "ask"\ntransport = "container"\n'
                              'image = "localhost:5000/ask@sha256:%s"\n' % ("0" * 64))
        r = probe.mcpgate("list", "--json")
        entry = json.loads(r.stdout)[0] if r.returncode == 0 and r.stdout.strip() else {}
        if "unenforced_refused" not in entry:
            raise RuntimeError("mcpgate list --json says nothing of the limits: %s %s"
                               % (r.stdout[-300:], r.stderr[-300:]))
        _unenforced = entry["unenforced_refused"]
    return _unenforced


def accept_line():
    """What every test server declares where the platform cannot enforce a
    limit (test_unenforced shows the refusal without it)"""
    if not _unenforced:
        return ""
    return "accept_unenforced = %s\n" % json.dumps(_unenforced)


def probe_server(name, image, args=None, tools=("echo", "env", "write_file", "connect", "status"),
                 extra="", manifest=None):
    s = '[[server]]\nname = "%s"\ntransport = "container"\nimage = "%s"\n' % (name, image)
    s += accept_line()
    if manifest:
        s += 'manifest = "%s"\n' % manifest
    if args:
        s += "args = %s\n" % json.dumps(args)
    s += extra
    for tool in tools:
        s += "[server.tools.%s]\non = true\neffect = \"read\"\n" % tool
    return s


def probe_once(image, network, calls):
    """Run the probe image once on network, feeding it initialize and calls;
    returns the texts of the answers."""
    lines = [{"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "itest", "version": "1"}}}]
    for i, (tool, args) in enumerate(calls, 1):
        lines.append({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                      "params": {"name": tool, "arguments": args}})
    r = subprocess.run([RT, "run", "-i", "--rm", "--network", network, image],
                       input="".join(json.dumps(x) + "\n" for x in lines),
                       capture_output=True, text=True, timeout=120, env=RT_ENV)
    texts = []
    for line in r.stdout.splitlines():
        msg = json.loads(line)
        if msg.get("id", 0) != 0 and "result" in msg:
            texts.append(msg["result"]["content"][0]["text"])
    return texts


def upstream(busybox_image, probe_image):
    """A web server on a network of the test's own, and a proof (from a probe
    attached to that network) that it accepts connections."""
    net = "mcpgate-itest-net-" + TAG
    rt("network", "create", net)
    made["networks"].append(net)
    name = "mcpgate-itest-up-" + TAG
    rt("run", "-d", "--rm", "--name", name, "--network", net, busybox_image,
       "httpd", "-f", "-p", "8080", "-h", "/www")
    made["containers"].append(name)
    ip = ""
    for _ in range(50):
        ip = rt("inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
                name).stdout.strip()
        if ip:
            break
        time.sleep(0.1)
    for _ in range(20):
        if probe_once(probe_image, net, [("connect", {"host": ip, "port": 8080})]) == ["connected"]:
            return ip, True
        time.sleep(0.3)
    return ip, False


def test_session(base, probe_image, busybox_image):
    ghost = "%s/mcpgate-itest-ghost@sha256:%s" % (REGISTRY, "0" * 64)
    # ghost is pinned (a server never approved is not started at all)
    servers = (probe_server("probe", probe_image, extra='mounts = ["ro", "rw:write"]\n') +
               probe_server("ghost", ghost, manifest=UNMATCHED_PIN))
    s = Session(base, servers)

    r = s.mcpgate("list")
    t.ok(r.returncode == 0 and "image missing (mcpgate pull probe)" in r.stdout,
         "list shows the image missing before the pull", r.stdout + r.stderr)
    r = s.mcpgate("pull", "probe")
    t.ok(r.returncode == 0 and "is present" in r.stdout,
         "mcpgate pull fetches the image by digest", r.stdout + r.stderr[-800:])
    r = s.mcpgate("list", "--json")
    listed = {e["name"]: e for e in json.loads(r.stdout)} if r.returncode == 0 else {}
    t.ok(listed.get("probe", {}).get("image_state") == "present" and
         listed.get("ghost", {}).get("image_state") == "missing",
         "list --json: the pulled image is present, the other missing", r.stdout)

    r = s.mcpgate("approve", "probe")
    t.ok(r.returncode == 1 and "has not been reviewed" in r.stderr,
         "approve before review is refused", r.stderr)
    r = s.mcpgate("review", "probe")
    t.ok(r.returncode == 0 and "approved: none yet" in r.stdout and "  status  [" in r.stdout,
         "review starts it with its isolation and shows its tools", r.stdout + r.stderr)
    r = s.mcpgate("approve", "probe")
    hash_ = s.pinned("probe")
    t.ok(r.returncode == 0 and hash_ is not None, "approve pins the reviewed manifest", r.stderr)

    ip, up = upstream(busybox_image, probe_image)
    t.ok(up, "the test's own upstream answers from a container on its network (%s)" % ip)

    c = s.serve()
    c.initialize()
    wait_settled(s.state)
    names = [x["name"] for x in c.request("tools/list", timeout=120)["result"]["tools"]]
    t.ok(names == ["probe__echo", "probe__env", "probe__write_file", "probe__connect",
                   "probe__status"], "the contained server's tools are offered", names)
    notes = " ".join(n["params"]["data"] for n in c.notifications
                     if n["method"] == "notifications/message")
    t.ok("mcpgate pull ghost" in notes, "a server without its image: the client is told the fix",
         notes)
    sid = s.session_ids()[0]
    running = labelled("containers", "mcpgate.session=" + sid)
    t.ok(running == ["mcpgate-probe-" + sid], "the container runs with the session's label",
         running)

    r = c.call("probe__echo", {"text": "through a real %s container" % RT})
    t.ok(text_of(r) == "through a real %s container" % RT, "a call goes through", r)
    st = json.loads(text_of(c.call("probe__status")))
    t.ok(int(st["capeff"], 16) == 0, "inside: CapEff is 0", st)
    t.ok(st["nonewprivs"] == 1, "inside: NoNewPrivs is 1", st)
    r = c.call("probe__write_file", {"path": "/planted"})
    t.ok(r["result"].get("isError") is True and "Read-only file system" in text_of(r),
         "inside: a write to the root filesystem fails", r)
    r = c.call("probe__write_file", {"path": "/tmp/scratch"})
    t.ok(text_of(r) == "ok", "inside: /tmp is writable", r)
    r = c.call("probe__write_file", {"path": "/workspace/ro/x"})
    t.ok(r["result"].get("isError") is True, "inside: a read-only mount refuses writes", r)
    r = c.call("probe__write_file", {"path": "/workspace/rw/x", "text": "from inside\n"})
    written = os.path.join(s.ws, "rw", "x")
    t.ok(text_of(r) == "ok" and open(written).read() == "from inside\n",
         "inside: a write mount reaches the workspace folder", r)
    # the attack: a setuid copy of itself planted for the host
    r = c.call("probe__write_file", {"path": "/workspace/rw/rootme", "text": "#!/bin/sh\nid\n",
                                     "mode": 0o4755})
    planted = os.path.join(s.ws, "rw", "rootme")
    owner = os.stat(s.ws).st_uid
    pst = os.stat(planted) if os.path.exists(planted) else None
    t.ok(text_of(r) == "ok" and pst is not None and pst.st_uid == owner and
         (pst.st_uid != 0 or os.geteuid() != 0),
         "a setuid file planted in a write mount belongs to the workspace's owner (uid %d), "
         "never to root: it runs with no more rights than theirs"
         % (pst.st_uid if pst else -1), (r, pst))
    st_uid = st.get("uid")
    t.ok(st_uid == (PERSON if os.geteuid() == 0 else 0),
         "inside: the server runs as the workspace's owner (uid %s inside; rootless 0 is the "
         "person)" % st_uid, st)
    r = c.call("probe__env", {"name": "MCPGATE_ITEST_CANARY"})
    t.ok(r["result"].get("isError") is True and text_of(r) == "unset",
         "inside: a variable of mcpgate's environment is absent", r)
    r = c.call("probe__connect", {"host": ip, "port": 8080}, timeout=60)
    t.ok(r["result"].get("isError") is True and text_of(r).startswith("error"),
         "inside: a connection to the upstream fails (no network)", r)
    status = c.close(timeout=60)
    t.ok(status == 0, "the session ends in order", status)
    left = labelled("containers", "mcpgate.session=" + sid)
    nets = labelled("networks", "mcpgate.session=" + sid)
    t.ok(left == [] and nets == [], "no container or network with its label is left",
         (left, nets))
    kinds = [e["event"] for e in s.audit(sid)]
    t.ok("server.start" in kinds and "server.unavailable" in kinds and "session.end" in kinds,
         "the audit log tells the story", kinds)
    return hash_


def test_unenforced(base, probe_image):
    """Fail closed on the real runtime: where a limit cannot hold, the server
    is not started unless accept_unenforced names it"""
    missing = unenforced_here(base)
    if not missing:
        t.ok(True, "every limit holds on %s here: nothing to refuse # SKIP no unenforced "
             "limit on this platform" % RT)
        return
    # pinned: a server never approved is not started at all, for that reason
    bare = ('[[server]]\nname = "bare"\ntransport = "container"\nimage = "%s"\n'
            'manifest = "%s"\n[server.tools.echo]\non = true\neffect = "read"\n'
            % (probe_image, UNMATCHED_PIN))
    s = Session(base, bare)
    s.mcpgate("pull", "bare")
    r = s.mcpgate("review", "bare")
    t.ok(r.returncode == 1 and all("its %s limit cannot hold here" % p in r.stderr
                                   for p in missing) and
         "accept_unenforced = %s" % json.dumps(missing).replace('","', '", "') in r.stderr,
         "%s: review refuses a server whose %s limits cannot hold here" % (RT, missing),
         r.stderr)
    c = s.serve()
    c.initialize()
    wait_settled(s.state)
    names = [x["name"] for x in c.request("tools/list", timeout=120)["result"]["tools"]]
    notes = [n["params"]["data"] for n in c.notifications
             if n["method"] == "notifications/message"]
    c.close(timeout=60)
    sid = s.session_ids()[-1]
    t.ok(names == [] and any("cannot hold here" in n for n in notes) and
         labelled("containers", "mcpgate.session=" + sid) == [] and
         not any(x["event"] == "server.start" for x in s.audit(sid)),
         "%s: serve does not start it, and says why" % RT, notes)
    accepted = probe_server("bare", probe_image, tools=("echo", "status"))
    s2 = Session(base, accepted)
    r = s2.mcpgate("review", "bare")
    t.ok(r.returncode == 0 and "unenforced here, accepted in mcp.toml" in r.stdout,
         "%s: accepted, review starts it and shows the acceptance" % RT, r.stdout + r.stderr)
    r = s2.mcpgate("list")
    t.ok("(accepted)" in r.stdout, "%s: list shows it" % RT, r.stdout)
    s2.mcpgate("approve", "bare")
    c = s2.serve()
    c.initialize()
    wait_settled(s2.state)
    names = [x["name"] for x in c.request("tools/list", timeout=120)["result"]["tools"]]
    c.close(timeout=60)
    rec = [x for x in s2.audit(s2.session_ids()[-1]) if x["event"] == "server.unenforced"]
    t.ok(names == ["bare__echo", "bare__status"] and len(rec) == 1 and
         rec[0]["accepted"] == missing,
         "%s: serve starts it, and the audit log records the acceptance" % RT, (names, rec))


def test_second_build_withheld(base, probe2_image, hash_):
    """A second build of the probe whose one description differs, under the
    first build's approval: withheld."""
    s = Session(base, probe_server("probe", probe2_image, manifest=hash_))
    r = s.mcpgate("pull", "probe")
    t.ok(r.returncode == 0, "the second build is pulled", r.stderr[-500:])
    c = s.serve()
    c.initialize()
    wait_settled(s.state)
    names = [x["name"] for x in c.request("tools/list", timeout=120)["result"]["tools"]]
    t.ok(names == [], "a second build whose description differs is withheld", names)
    c.close(timeout=60)
    sid = s.session_ids()[0]
    held = [e for e in s.audit(sid) if e["event"] == "server.withheld"]
    t.ok(held and held[0]["reason"] == "changed" and held[0]["approved"] == hash_ and
         held[0]["live"] != hash_, "recorded as changed, with both hashes", held)
    r = s.mcpgate("review", "probe")
    t.ok("DIFFERENT" in r.stdout and "changed echo: description" in r.stdout,
         "review of it shows what changed against the approved manifest", r.stdout)


def test_kill_and_sweep(base, probe_image, hash_):
    s = Session(base, probe_server("stubborn", probe_image, args=["--ignore-eof"],
                                   manifest=hash_))
    c = s.serve()
    c.initialize()
    wait_settled(s.state)
    c.request("tools/list", timeout=120)
    sid = s.session_ids()[0]
    c.proc.send_signal(signal.SIGKILL)
    c.proc.wait(30)
    time.sleep(1)
    left = labelled("containers", "mcpgate.session=" + sid)
    t.ok(left == ["mcpgate-stubborn-" + sid],
         "after kill -9 of mcpgate its container is still there (it ignores end of input)",
         left)
    c2 = s.serve()
    c2.initialize()
    wait_settled(s.state)
    c2.request("tools/list", timeout=120)
    sid2 = [x for x in s.session_ids() if x != sid][0]
    # the sweep runs once the starts are over, beside the session
    deadline = time.monotonic() + 120
    while not any(e["event"] == "sweep" for e in s.audit(sid2)) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = labelled("containers", "mcpgate.session=" + sid)
    t.ok(left == [], "a new mcpgate sweeps what the dead one left", left)
    sweeps = [e for e in s.audit(sid2) if e["event"] == "sweep"]
    t.ok(sweeps and sweeps[0]["removed"] >= 1, "its audit log records the sweep", sweeps)
    c2.close(timeout=60)
    t.ok(labelled("containers", "mcpgate.session=" + sid2) == [], "and leaves nothing itself")


def test_sharing(base, probe_image, hash_):
    """instance = "session", "shared" and "exclusive" through the listener: two
    clients, real containers, counted by the runtime's own labels"""
    servers = (probe_server("solo", probe_image, tools=("state",), manifest=hash_) +
               probe_server("common", probe_image, tools=("state",), manifest=hash_,
                            extra='instance = "shared"\n') +
               probe_server("single", probe_image, tools=("state",), manifest=hash_,
                            extra='instance = "exclusive"\n'))
    s = Session(base, servers)
    lst = listenclient.Listener([MCPGATE, "serve", "--config", s.conf, "--workspace", s.ws],
                                s.env, s.dir, s.state, cwd=s.ws, timeout=120)
    t.ok(lst.port is not None, "serve --listen starts", lst.stderr()[-1000:])
    _, sid_a, _ = lst.initialize("client-a")
    _, sid_b, _ = lst.initialize("client-b")
    sa, ans_sa = listenclient.state_of(lst, sid_a, "solo__state", timeout=120)
    sb, ans_sb = listenclient.state_of(lst, sid_b, "solo__state", timeout=120)
    t.ok(sa and sb and sa["instance"] != sb["instance"],
         "instance = \"session\" on %s: each client its own container" % RT, (ans_sa, ans_sb))
    ca, ans_ca = listenclient.state_of(lst, sid_a, "common__state", timeout=120)
    cb, ans_cb = listenclient.state_of(lst, sid_b, "common__state", timeout=120)
    t.ok(ca and cb and ca["instance"] == cb["instance"],
         "instance = \"shared\" on %s: both clients reach one container" % RT,
         (ans_ca, ans_cb))
    counts = [len(labelled("containers", "mcpgate.mcp=" + x)) for x in ("solo", "common",
                                                                        "single")]
    t.ok(counts == [2, 1, 1], "the runtime runs two containers of the session server, one "
         "of the shared and one of the exclusive one", counts)
    xa, ans_xa = listenclient.state_of(lst, sid_a, "single__state", timeout=120)
    xb, ans_xb = listenclient.state_of(lst, sid_b, "single__state", timeout=120)
    t.ok(xa is not None and xb is None and "busy" in (listenclient.error_of(ans_xb) or ""),
         "instance = \"exclusive\": the first client holds it, the second is told it is "
         "busy", (ans_xa, ans_xb))
    lst.http("DELETE", sid=sid_a)
    xb2 = listenclient.wait_until(
        lambda: listenclient.state_of(lst, sid_b, "single__state", timeout=120)[0], 60)
    t.ok(xb2 is not None and xa is not None and xb2["instance"] == xa["instance"],
         "once the holder's session ends, the other client holds the same container", xb2)
    status = lst.stop()
    t.ok(status == 0, "the listener ends with status 0", (status, lst.stderr()[-1500:]))
    left = [n for x in ("solo", "common", "single") for n in labelled("containers",
                                                                       "mcpgate.mcp=" + x)]
    t.ok(left == [], "every container of every instance is removed", left)


def start_listener(w, made, *extra, log="serve.stderr"):
    """`mcpgate serve --listen 127.0.0.1:0` for the workspace w (.conf, .ws,
    .env, .dir) with extra arguments, recorded in made["serve"] so the
    caller's cleanup stops it: (process, its URL or None, its stderr file)"""
    err = open(os.path.join(w.dir, log), "w+b")
    p = subprocess.Popen([MCPGATE, "serve", "--config", w.conf, "--workspace", w.ws,
                          "--listen", "127.0.0.1:0"] + list(extra),
                         env=w.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=err, cwd=w.ws)
    made["serve"] = p
    deadline = time.time() + 30
    while time.time() < deadline and p.poll() is None:
        with open(err.name, errors="replace") as fh:
            m = re.search(r"listening on (http://127\.0\.0\.1:\d+/mcp)", fh.read())
        if m:
            return p, m.group(1), err.name
        time.sleep(0.1)
    return p, None, err.name


def stop_listener(p):
    """SIGTERM, then its status (None when it had to be killed)"""
    if p is None or p.poll() is not None:
        return p.returncode if p else None
    p.send_signal(signal.SIGTERM)
    try:
        return p.wait(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        return None


def skip(why):
    print("ok 1 # SKIP %s" % why)
    print("0 passed, 0 failed")
    return 77


def comment(text, limit=30):
    """the last lines of text as TAP comments"""
    for line in str(text).splitlines()[-limit:]:
        print("#   " + line, flush=True)


def registry_up():
    try:
        with urllib.request.urlopen("http://127.0.0.1:5000/v2/", timeout=3) as r:
            return r.status == 200
    except Exception:
        return False


def probe_image():
    return build_image("mcpgate-itest-probe", {"/mcpgate-probe": PROBE}, ["/mcpgate-probe"])


def busybox_image():
    """busybox (sh, nc, httpd, nslookup) with a page to serve, pulled by digest"""
    busybox = shutil.which("busybox") or "/bin/busybox"
    image = build_image("mcpgate-itest-busybox", {"/bin/busybox": busybox,
                                                  "/www/index.html": b"upstream-answer\n"},
                        ["/bin/busybox"])
    rt("pull", *((["--tls-verify=false"] if RT == "podman" else []) + [image]))
    return image


def run_cases(label, body, tap=None, after=None):
    """The frame of a runtime test: skipped without the runtime; a base
    folder; what mcpgate says cannot hold here, learnt first; body(base); and
    everything made removed after (after(), for a test that keeps its own
    list, else this module's cleanup). tap: the test's own Tap, when it has
    one. Returns the exit status."""
    tap = tap or t
    if shutil.which(RT) is None:
        return skip("%s is not installed" % RT)
    print("# runtime: %s (%s)" % (RT, label), flush=True)
    base = tempfile.mkdtemp(prefix="mcpgate-itest-%s-" % label)
    try:
        unenforced_here(base)
        body(base)
    except Exception as e:
        tap.ok(False, "the %s case on %s raised %s: %s" % (label, RT, type(e).__name__, e))
    finally:
        (after or cleanup)()
        shutil.rmtree(base, ignore_errors=True)
    return tap.done()


def cleanup():
    for name in made["containers"]:
        rt("rm", "-f", *(["--time=0"] if RT == "podman" else []), name, check=False)
    for net in made["networks"]:
        rt("network", "rm", net, check=False)
    for image in made["images"]:
        rt("rmi", "-f", image, check=False)


def main():
    if shutil.which(RT) is None:
        print("ok 1 # SKIP %s is not installed" % RT)
        print("0 passed, 0 failed")
        return 77
    print("# runtime: %s" % RT, flush=True)
    base = tempfile.mkdtemp(prefix="mcpgate-itest-")
    try:
        probe_image = build_image("mcpgate-itest-probe", {"/mcpgate-probe": PROBE},
                                  ["/mcpgate-probe"])
        busybox = shutil.which("busybox") or "/bin/busybox"
        busybox_image = build_image("mcpgate-itest-busybox",
                                    {"/bin/busybox": busybox,
                                     "/www/index.html": b"upstream-answer\n"},
                                    ["/bin/busybox"])
        probe2_image = build_image("mcpgate-itest-probe2", {"/mcpgate-probe": PROBE},
                                   ["/mcpgate-probe", "--describe-suffix", " (second build)"])
        rt("pull", *((["--tls-verify=false"] if RT == "podman" else []) + [busybox_image]))
        hash_ = None
        unenforced_here(base)
        try:
            hash_ = test_session(base, probe_image, busybox_image)
        except Exception as e:
            t.ok(False, "the session case raised %s: %s" % (type(e).__name__, e))
        for case in (lambda: test_second_build_withheld(base, probe2_image, hash_),
                     lambda: test_kill_and_sweep(base, probe_image, hash_),
                     lambda: test_sharing(base, probe_image, hash_),
                     lambda: test_unenforced(base, probe_image)):
            try:
                case()
            except Exception as e:
                t.ok(False, "a case raised %s: %s" % (type(e).__name__, e))
    except Exception as e:
        t.ok(False, "setting up on %s failed: %s" % (RT, e))
    finally:
        cleanup()
        shutil.rmtree(base, ignore_errors=True)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
