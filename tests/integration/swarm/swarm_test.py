#!/usr/bin/env python3
"""mcpgate's swarm driver on a real multi-node Docker swarm (issue 28,
docs/2026-12-02-swarm.md).

up.sh brings up a manager and two workers, each a dockerd in a network
namespace of its own; the workers enforce mcpgate's seccomp profile and
no-new-privileges node-wide, the manager does not. The cases then run
sessions through `mcpgate serve` with runtime = "swarm" and try, from inside
the task on the worker it lands on, what the issue asks; down.sh removes the
swarm, and the last case checks that nothing of it is left on this machine.

Opt-in (MCPGATE_CONTAINER_TESTS=1), root; skipped (77) where the swarm
cannot come up. Never touches the host's dockerd."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "lib"))
from mcpclient import Client, Tap, text_of  # noqa: E402
from gwtest import wait_settled  # noqa: E402

MCPGATE = os.path.abspath(os.environ.get("MCPGATE", "./mcpgate"))
PROBE = os.path.abspath(os.environ.get("PROBE", "build/fakes/mcpgate-probe"))
LAUNCH = os.path.abspath(os.environ.get("LAUNCH", "mcpgate-launch"))
EGRESS = os.path.abspath(os.environ.get("MCPGATE_EGRESS", "mcpgate-egress"))
t = Tap()


def skip(why):
    print("ok 1 # SKIP swarm: %s" % why)
    print("0 passed, 0 failed")
    return 77


class Swarm:
    """The swarm up.sh made: its env file as attributes, docker on each node"""

    def __init__(self, d):
        self.dir = d
        self.env = {}
        with open(os.path.join(d, "env")) as fh:
            for line in fh:
                k, _, v = line.strip().partition("=")
                self.env[k] = v
        self.prefix = self.env["SWARM_PREFIX"]
        self.registry = self.env["SWARM_REGISTRY"]

    def docker(self, node, *args, check=True, timeout=120, input=None):
        host = self.env["SWARM_" + {"m": "MANAGER", "w1": "W1", "w2": "W2"}[node]]
        r = subprocess.run(["docker", "-H", host] + list(args), capture_output=True, text=True,
                           timeout=timeout, input=input)
        if check and r.returncode != 0:
            raise RuntimeError("docker %s: %s" % (" ".join(args), r.stderr.strip()[-500:]))
        return r

    def node_name(self, node):
        return "%s-%s" % (self.prefix, node)


def derive_profile(base):
    """mcpgate's seccomp profile, as mcpgate derives it (any command that
    makes a driver does; `list` runs nothing)"""
    conf = os.path.join(base, "profile-conf")
    os.makedirs(conf)
    with open(os.path.join(conf, "config.toml"), "w") as fh:
        fh.write('[mcp]\nruntime = "docker"\n')
    with open(os.path.join(conf, "mcp.toml"), "w") as fh:
        fh.write('[[server]]\nname = "x"\ntransport = "container"\n'
                 'image = "127.0.0.1:5000/x@sha256:%s"\n' % ("0" * 64))
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"),
           "XDG_DATA_HOME": os.path.join(base, "data"),
           "XDG_STATE_HOME": os.path.join(base, "state")}
    subprocess.run([MCPGATE, "list", "--config", conf], env=env, capture_output=True,
                   timeout=60)
    found = glob.glob(os.path.join(base, "data", "mcpgate", "seccomp", "mcpgate-*.json"))
    return found[0] if found else None


def leftovers(prefix, d):
    """what of the swarm is still on this machine"""
    left = []
    r = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    left += [x.split()[0] for x in r.stdout.splitlines() if x.startswith(prefix)]
    r = subprocess.run(["pgrep", "-f", d], capture_output=True, text=True)
    left += ["process " + x for x in r.stdout.split()]
    left += glob.glob("/sys/fs/cgroup/*/%s-*" % prefix)
    if os.path.exists(d):
        left.append(d)
    with open("/proc/self/mounts") as fh:
        left += [line.split()[1] for line in fh if d in line]
    return left


def test_topology(sw):
    nodes = sw.docker("m", "node", "ls", "--format",
                      "{{.Hostname}} {{.Status}} {{.ManagerStatus}}").stdout.split("\n")
    ready = sorted(x.split()[0] for x in nodes if " Ready" in x)
    t.ok(ready == sorted(sw.node_name(n) for n in ("m", "w1", "w2")),
         "a manager and two workers, each a dockerd in its own network namespace, are Ready",
         "\n".join(nodes))
    labels = {}
    for n in ("m", "w1", "w2"):
        out = sw.docker("m", "node", "inspect", sw.node_name(n), "--format",
                        "{{json .Spec.Labels}}").stdout
        labels[n] = json.loads(out or "{}") or {}
    t.ok(labels["w1"].get("mcpgate") == "true" and labels["w2"].get("mcpgate") == "true" and
         "mcpgate" not in labels["m"], "the workers are labelled for mcpgate, the manager is not",
         labels)


def build_probe(sw, base, registry=None, repo="mcpgate-swarm-probe"):
    """The probe as an image in the swarm's registry (or registry), pinned by
    digest, with no copy left on the manager"""
    root = os.path.join(base, "probe-root")
    os.makedirs(os.path.join(root, "tmp"), exist_ok=True)
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    shutil.copy(PROBE, os.path.join(root, "mcpgate-probe"))
    tar = os.path.join(base, "probe.tar")
    subprocess.run(["tar", "-C", root, "-cf", tar, "."], check=True)
    ref = "%s/%s:1" % (registry or sw.registry, repo)
    sw.docker("m", "import", "--change", 'ENTRYPOINT ["/mcpgate-probe"]', tar, ref)
    out = sw.docker("m", "push", ref).stdout
    digest = re.findall(r"digest: (sha256:[0-9a-f]{64})", out)[-1]
    sw.docker("m", "rmi", ref)
    return "%s/%s@%s" % (registry or sw.registry, repo, digest)


def pack_probe(base):
    """The probe as mcpgate add keeps an image it made: its archive and its
    manifest in DATA/images by its digest; the pin localhost/NAME@DIGEST"""
    tmp = os.path.join(base, "pack-tmp")
    os.makedirs(tmp, exist_ok=True)
    os.chmod(tmp, 0o1777)
    out = os.path.join(base, "packed.tar")
    r = subprocess.run([MCPGATE, "pack", "--binary", PROBE, "--add", tmp + ":/tmp",
                        "--output", out], capture_output=True, text=True, check=True)
    digest = r.stdout.strip()
    images = os.path.join(base, "data", "mcpgate", "images")
    os.makedirs(images, exist_ok=True)
    with tarfile.open(out) as tf:
        manifest = tf.extractfile("blobs/sha256/" + digest[7:]).read()
    with open(os.path.join(images, "sha256-%s.manifest" % digest[7:]), "wb") as fh:
        fh.write(manifest)
    shutil.move(out, os.path.join(images, "sha256-%s.tar" % digest[7:]))
    return "localhost/mcpgate-swarm-packed@" + digest


TOOLS = ("echo", "status", "env", "raw", "connect", "read_file", "write_file", "syscalls")


class Session:
    def __init__(self, sw, base, image, extra="", egress=False, runtime="swarm", registry=True):
        self.sw = sw
        self.dir = tempfile.mkdtemp(prefix="s-", dir=base)
        self.conf = os.path.join(self.dir, "conf")
        self.ws = os.path.join(self.dir, "ws")
        self.state = os.path.join(self.dir, "state")
        for x in (self.conf, self.ws, self.state):
            os.makedirs(x)
        with open(os.path.join(self.conf, "config.toml"), "w") as fh:
            fh.write('[mcp]\nruntime = "%s"\n' % runtime)
            if runtime == "swarm" and registry:
                fh.write('swarm_registry = "%s"\n' % sw.registry)
            if egress:
                fh.write('egress = "%s"\n' % EGRESS)
        text = '[[server]]\nname = "probe"\ntransport = "container"\nimage = "%s"\n%s' % (
            image, extra)
        for tool in TOOLS:
            text += '[server.tools.%s]\non = true\neffect = "read"\n' % tool
        with open(os.path.join(self.conf, "mcp.toml"), "w") as fh:
            fh.write(text)
        self.env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"),
                    "XDG_STATE_HOME": self.state, "XDG_DATA_HOME": os.path.join(base, "data"),
                    "MCPGATE_LOG": "info"}
        if runtime == "swarm":
            self.env["DOCKER_HOST"] = sw.env["SWARM_MANAGER"]

    def mcpgate(self, *args, input=None, timeout=300, config=True):
        return subprocess.run([MCPGATE] + list(args) + (["--config", self.conf] if config else []),
                              env=self.env, capture_output=True, text=True, timeout=timeout,
                              cwd=self.ws, input=input)

    def pinned_image(self):
        """the image the first entry of mcp.toml pins"""
        with open(os.path.join(self.conf, "mcp.toml")) as fh:
            m = re.search(r'^image = "([^"]+)"', fh.read(), re.M)
        return m.group(1) if m else ""

    def serve(self):
        self.stderr_path = os.path.join(self.dir, "serve.stderr")
        self.stderr = open(self.stderr_path, "wb")
        return Client([MCPGATE, "serve", "--config", self.conf, "--workspace", self.ws],
                      env=self.env, stderr=self.stderr)

    def serve_log(self):
        with open(self.stderr_path, errors="replace") as fh:
            return fh.read()

    def audit(self):
        found = glob.glob(os.path.join(self.state, "mcpgate", "sessions", "*.jsonl"))
        out = []
        for f in found:
            with open(f) as fh:
                out += [json.loads(line) for line in fh if line.strip()]
        return out


def ready(c, s, name="probe__echo", tries=240):
    """Until the server's start ended (a task takes seconds), then its tools:
    an approved server's tools are offered from its record while it starts
    (docs/2026-12-02-never-wait.md), so the list alone says nothing of the task"""
    wait_settled(s.state, timeout=tries / 2)
    names = []
    for _ in range(tries):
        names = [x["name"] for x in c.request("tools/list", timeout=120)["result"]["tools"]]
        if name in names:
            return names
        time.sleep(0.5)
    return names


def owned(sw, kind):
    """services, secrets, networks and containers on the manager with an mcpgate label"""
    fmt = {"service": "{{.Name}}", "secret": "{{.Name}}", "network": "{{.Name}}",
           "container": "{{.Names}}"}[kind]
    args = ({"container": ["ps", "-a"]}.get(kind) or [kind, "ls"]) + [
        "--filter", "label=mcpgate.pid", "--format", fmt]
    return sorted(x for x in sw.docker("m", *args).stdout.split() if x)


def everything_owned(sw):
    return {k: owned(sw, k) for k in ("service", "secret", "network", "container")}


def nothing_owned(sw, tries=60):
    left = everything_owned(sw)
    for _ in range(tries):
        if not any(left.values()):
            break
        time.sleep(0.5)
        left = everything_owned(sw)
    return left


def task_of(sw):
    """(node, container inspect) of the running server's task (not its proxy's)"""
    for n in ("w1", "w2", "m"):
        ids = sw.docker(n, "ps", "-q", "--filter", "label=com.docker.swarm.service.name").stdout.split()
        for cid in ids:
            info = json.loads(sw.docker(n, "inspect", cid).stdout)[0]
            svc = info["Config"]["Labels"].get("com.docker.swarm.service.name", "")
            if svc.startswith("mcpgate-") and not svc.endswith("-egress"):
                return n, info
    return None, None


def mark(what, _last=[None]):
    now = time.time()
    if _last[0] is not None:
        print("#   %.1f s %s" % (now - _last[0], what), flush=True)
    _last[0] = now


def test_session(sw, base, image):
    """isolation from inside the task, stdio byte-exact, EOF ends the task,
    nothing left"""
    mark("")
    s = Session(sw, base, image)
    r = s.mcpgate("pull", "probe")
    t.ok(r.returncode == 0, "mcpgate pull: the manager pulls the pinned image from the swarm's "
         "registry", r.stdout + r.stderr)
    mark("pull")
    r = s.mcpgate("review", "probe")
    t.ok(r.returncode == 0 and "syscalls" in r.stdout,
         "mcpgate review reads the manifest from a task on the swarm", r.stdout[-500:] + r.stderr)
    mark("review")
    s.mcpgate("approve", "probe")
    with open(os.path.join(s.conf, "mcp.toml")) as fh:
        m = re.search(r'^manifest = "(sha256:[0-9a-f]{64})"', fh.read(), re.M)
    APPROVED[0] = m.group(1) if m else None
    t.ok(not any(nothing_owned(sw).values()), "review left nothing on the swarm",
         everything_owned(sw))
    mark("approve")
    c = s.serve()
    c.initialize()
    names = ready(c, s)
    t.ok("probe__status" in names, "serve: the server's tools come through the swarm", names)
    mark("serve until ready")
    node, info = task_of(sw)
    t.ok(node in ("w1", "w2"), "its task landed on a worker labelled for mcpgate (%s)" % node)
    st = json.loads(text_of(c.call("probe__status", {}, timeout=60)))
    t.ok(st.get("uid") == 65534 and st.get("capeff") == "0000000000000000" and
         st.get("nonewprivs") == 1 and st.get("hostname") == sw.node_name(node or "w1"),
         "inside the task: uid 65534, no capabilities, no new privileges, on that node", st)

    def read(path):
        r = c.call("probe__read_file", {"path": path}, timeout=60)
        return text_of(r) if "result" in r and not r["result"].get("isError") else None

    status = read("/proc/self/status") or ""
    t.ok(re.search(r"^Seccomp:\s+2$", status, re.M) and re.search(r"^CapBnd:\s+0+$", status, re.M),
         "inside: a seccomp filter, and an empty bounding set", status[-400:])
    sc = json.loads(text_of(c.call("probe__syscalls", {}, timeout=60)))
    refused = {k: v for k, v in sc.items() if v in ("ok", "lost")}
    t.ok(sc and not refused and sc.get("io_uring_setup") == "Operation not permitted",
         "inside: mcpgate's profile refuses every call the probe tries (io_uring with EPERM)", sc)
    w = c.call("probe__write_file", {"path": "/planted"}, timeout=60)
    t.ok(w["result"].get("isError") is True, "inside: the root filesystem is read-only", w)
    mem = (read("/sys/fs/cgroup/memory/memory.limit_in_bytes") or "").strip()
    pids = (read("/sys/fs/cgroup/pids/pids.max") or "").strip()
    cpu = (read("/sys/fs/cgroup/cpu/cpu.cfs_quota_us") or "").strip()
    t.ok(mem == str(512 << 20) and pids == "128" and cpu == "100000",
         "inside: memory 512 MiB, 128 pids, one CPU", (mem, pids, cpu))
    v6 = (read("/proc/sys/net/ipv6/conf/all/disable_ipv6") or "").strip()
    t.ok(v6 == "1", "inside: IPv6 is off", v6)
    mounts = read("/proc/self/mountinfo") or ""
    tmp = [x for x in mounts.splitlines() if " /tmp " in x]
    t.ok(tmp and "noexec" in tmp[0] and "size=65536k" in tmp[0],
         "inside: /tmp is a capped noexec tmpfs", tmp)
    routes = read("/proc/net/route") or ""
    t.ok(all(ln.split()[1] != "00000000" for ln in routes.splitlines()[1:] if ln.strip()),
         "inside: no default route (its own internal overlay only)", routes)

    mark("isolation calls")
    # byte-exact: every byte value of UTF-8 text, long lines, many round trips
    texts = ["plain", "é ü 漢字 \U0001F600", "tab\there", "\u2028\u2029", "x" * 60000,
             "".join(chr(i) for i in range(32, 0x800) if not 0xD800 <= i < 0xE000)]
    same = all(text_of(c.call("probe__echo", {"text": x}, timeout=60)) == x for x in texts)
    t.ok(same, "stdio across nodes is byte-exact (%d texts, up to 60000 bytes)" % len(texts))
    mark("echo")
    service = info["Config"]["Labels"]["com.docker.swarm.service.name"] if info else ""
    try_tokens(sw, c, image, service)
    mark("tokens")
    c.close(timeout=120)
    states = sw.docker("m", "service", "ps", service, "--format", "{{.CurrentState}}",
                       check=False).stdout
    mark("close")
    left = nothing_owned(sw)
    t.ok(not any(left.values()), "a clean end leaves no service, secret, network or container",
         left)
    ends = [e for e in s.audit() if e.get("event") == "server.exit"]
    # status 0, not forced: the relay ended because the server closed its
    # end after reading EOF, within stop_timeout, not because it was removed
    t.ok(len(ends) == 1 and ends[0].get("status") == 0 and ends[0].get("forced") is False,
         "closing stdin reaches the server across nodes as EOF: it ends, status 0, not forced",
         (ends, states))


def test_refused_node(sw, base, image):
    """the manager does not enforce seccomp or no-new-privileges: labelled for
    mcpgate and the only such node, a server placed there is refused, naming
    it, and the server's code never runs"""
    for n in ("w1", "w2"):
        sw.docker("m", "node", "update", "--label-rm", "mcpgate", sw.node_name(n))
    sw.docker("m", "node", "update", "--label-add", "mcpgate=true", sw.node_name("m"))
    try:
        s = Session(sw, base, image)
        s.mcpgate("pull", "probe")
        r = s.mcpgate("review", "probe")
        why = r.stdout + r.stderr
        t.ok(r.returncode != 0 and "refused %s" % sw.node_name("m") in why and
             "no-new-privileges" in why,
             "a node that does not enforce no-new-privileges and the profile is refused, "
             "named", why[-600:])
        left = nothing_owned(sw)
        t.ok(not any(left.values()), "the refusal leaves nothing on the swarm", left)
    finally:
        sw.docker("m", "node", "update", "--label-rm", "mcpgate", sw.node_name("m"), check=False)
        for n in ("w1", "w2"):
            sw.docker("m", "node", "update", "--label-add", "mcpgate=true", sw.node_name(n),
                      check=False)


def test_stderr(sw, base, image):
    """a server that writes to stderr and exits at start: its stderr crosses
    the launcher's connection (the task's log driver is none), so review and serve show its last lines and the fix for its cause,
    and the audit log keeps all of it, as on one machine"""
    banner = "Error: EROFS: read-only file system, mkdir '/app/.swarm-%d'" % os.getpid()
    fix = "server probe could not write a path its stderr names (a read-only file system)"
    args = 'args = ["--stderr-banner", "%s", "--exit-at-start", "3"]\n' % banner
    s = Session(sw, base, image, extra=args)
    s.mcpgate("pull", "probe")
    r = s.mcpgate("review", "probe")
    last = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""
    t.ok(r.returncode != 0 and "  | " + banner in r.stderr.splitlines() and fix in last,
         "review on the swarm shows the last line of the server's stderr and its cause's fix",
         r.stderr[-900:])
    m = re.search(r"all of its stderr is in (\S+\.jsonl)", last)
    kept = ""
    if m and os.path.isfile(m.group(1)):
        with open(m.group(1)) as fh:
            kept = fh.read()
    t.ok(".swarm-%d" % os.getpid() in kept,
         "the review's audit log keeps all of its stderr", last)
    t.ok(not any(nothing_owned(sw).values()), "the failed review left nothing on the swarm",
         everything_owned(sw))

    s = Session(sw, base, image, extra=args + 'manifest = "sha256:%s"\n' % ("0" * 64))
    c = s.serve()
    c.initialize()
    wait_settled(s.state, timeout=180)
    c.request("tools/list", timeout=120)
    c.close(timeout=120)
    audit = s.audit()
    un = [e for e in audit if e.get("event") == "server.unavailable"]
    t.ok(un and fix in un[0].get("reason", "") and banner in json.dumps(un[0].get("stderr")),
         "serve on the swarm: server.unavailable gives the fix and keeps its stderr", un)
    log = s.serve_log().splitlines()
    t.ok("  | " + banner in log, "serve's log shows the last line of its stderr", log[-8:])
    left = nothing_owned(sw)
    t.ok(not any(left.values()), "nothing left after the failed start", left)


def pull_pins(sw, s, repo, what):
    """mcpgate pull of s's server leaves its entry pinned to repo in the
    swarm's registry, by digest"""
    r = s.mcpgate("pull", "probe")
    pinned = s.pinned_image()
    t.ok(r.returncode == 0 and re.fullmatch(
        re.escape(sw.registry) + "/" + repo + r"@sha256:[0-9a-f]{64}", pinned),
        what, (pinned, r.stdout + r.stderr[-600:]))


def test_registry(sw, base, image):
    """an image from a registry only the manager reaches: a session refuses
    it before anything is placed, naming the swarm's registry and the fix;
    mcpgate pull pushes it to the swarm's registry and pins the entry to its
    digest there, and then it runs on a worker. Without swarm_registry
    nothing is placed, and the key is named"""
    elsewhere = build_probe(sw, base, sw.env["SWARM_ELSEWHERE"], "mcpgate-swarm-elsewhere")
    s = Session(sw, base, elsewhere)
    r = s.mcpgate("review", "probe")
    why = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""
    t.ok(r.returncode != 0 and "is not in the swarm's registry %s" % sw.registry in why and
         "server probe is unavailable" in why and
         "`mcpgate pull` of this server pushes it there" in why,
         "an image not in the swarm's registry is refused, naming the registry and the fix", why)
    t.ok(not any(nothing_owned(sw).values()), "the refusal placed nothing on the swarm",
         everything_owned(sw))
    pull_pins(sw, s, "mcpgate-swarm-elsewhere",
              "mcpgate pull pushes it to the swarm's registry and pins the entry to its "
              "digest there")
    tags = sw.docker("m", "images", "--format", "{{.Repository}}:{{.Tag}}").stdout.split()
    t.ok(not [x for x in tags if x.startswith(sw.registry + "/mcpgate-swarm-elsewhere:") and
                not x.endswith(":<none>")],
         "the push's tag is not left on the manager", tags)
    r = s.mcpgate("review", "probe")
    t.ok(r.returncode == 0 and "syscalls" in r.stdout,
         "the pushed image runs on a worker", r.stdout[-300:] + r.stderr[-600:])
    t.ok(not any(nothing_owned(sw).values()), "and leaves nothing", everything_owned(sw))

    # one mcpgate made (add, pack): no registry serves localhost/, its
    # archive is kept by its digest; pull loads it into the manager and
    # pushes it as any other
    packed = pack_probe(base)
    s = Session(sw, base, packed)
    pull_pins(sw, s, "mcpgate-swarm-packed",
              "an image mcpgate made is loaded into the manager, pushed and pinned there")
    r = s.mcpgate("review", "probe")
    t.ok(r.returncode == 0 and "syscalls" in r.stdout,
         "and runs on a worker", r.stdout[-300:] + r.stderr[-600:])

    s = Session(sw, base, image, registry=False)
    r = s.mcpgate("review", "probe")
    t.ok(r.returncode != 0 and "set swarm_registry" in r.stderr,
         "without swarm_registry nothing is placed, and the key is named", r.stderr[-600:])


MEMORY = "@modelcontextprotocol/server-memory@2026.8.31"


def test_add(sw, base, image):
    """mcpgate add on a swarm: the image it makes is loaded into the manager,
    pushed to the swarm's registry, and the entry pins it there; it runs on
    a worker. Needs npm and the npm registry"""
    if shutil.which("npm") is None:
        t.skip("mcpgate add on the swarm", "no npm here")
        return
    s = Session(sw, base, image)
    r = s.mcpgate("add", "npm:" + MEMORY, "--name", "mem", timeout=900)
    with open(os.path.join(s.conf, "mcp.toml")) as fh:
        m = re.search(r'name = "mem"[^[]*?^image = "([^"]+)"', fh.read(), re.M | re.S)
    pinned = m.group(1) if m else ""
    t.ok(r.returncode == 0 and re.fullmatch(
        re.escape(sw.registry) + r"/mcpgate-npm-mem@sha256:[0-9a-f]{64}", pinned),
        "mcpgate add pushes the image it made to the swarm's registry and pins it there",
        (pinned, r.stderr[-800:]))
    r = s.mcpgate("review", "mem")
    t.ok(r.returncode == 0 and "create_entities" in r.stdout,
         "the added server runs on a worker", r.stdout[-300:] + r.stderr[-600:])
    t.ok(not any(nothing_owned(sw).values()), "and leaves nothing", everything_owned(sw))


def try_tokens(sw, c, image, service):
    """the launcher serves exactly one peer: once the session's relay holds
    it, another container on the session's overlay (the probe, driven by
    hand) gets no connection, with or without a token; the session still
    works (the wrong-token path while it listens: tests/launch_net_test.sh)"""
    net = [x for x in owned(sw, "network") if x.startswith(service)]
    msgs = [{"jsonrpc": "2.0", "id": 0, "method": "initialize",
             "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                        "clientInfo": {"name": "itest", "version": "1"}}}]
    for i, data in enumerate(("0" * 64 + "\n", "GET / HTTP/1.0\r\n\r\n"), 1):
        msgs.append({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                     "params": {"name": "raw", "arguments": {
                         "host": "tasks." + service, "port": 7000, "data": data}}})
    r = sw.docker("m", "run", "--rm", "-i", "--network", net[0] if net else "none", image,
                  input="".join(json.dumps(x) + "\n" for x in msgs), check=False, timeout=120)
    answers = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    texts = [text_of(x) for x in answers if x.get("id") in (1, 2) and "result" in x]
    t.ok(net and len(texts) == 2 and all(x.startswith("error:") for x in texts),
         "another container on the session's overlay gets no connection to the server", texts)
    t.ok(text_of(c.call("probe__echo", {"text": "still"}, timeout=60)) == "still",
         "the session's own relay still works after those tries")


def holders(secret):
    """pids on this machine whose environment holds secret, with their
    command line (the swarm's processes are this machine's)"""
    found = []
    for env in glob.glob("/proc/[0-9]*/environ"):
        try:
            with open(env, "rb") as fh:
                if secret.encode() not in fh.read():
                    continue
            with open(env[:-7] + "cmdline", "rb") as fh:
                found.append(fh.read().replace(b"\0", b" ").decode(errors="replace").strip())
        except OSError:
            pass
    return found


def test_egress_secret(sw, base, image):
    """the per-session internal overlay, the proxy on it and on a second
    overlay, its records in the audit log; the secret as a swarm secret,
    in no inspect and in no environment but the server's own"""
    outside = sw.env["SWARM_OUTSIDE"]
    host, port = outside.split(":")
    s = Session(sw, base, image, egress=True,
                extra='network = ["%s"]\nnetwork_private = ["%s"]\ncredential = "itest"\n'
                      'position = "env:ITEST_TOKEN"\nmanifest = "%s"\n'
                      % (outside, outside, APPROVED[0]))
    secret = "swarm-%d-Zq9x" % os.getpid()
    r1 = s.mcpgate("secret", "set", "itest", input=secret + "\n", config=False)
    r2 = s.mcpgate("secret", "bind", "itest", "--host", outside, "--position", "env:ITEST_TOKEN",
                   config=False)
    t.ok(r1.returncode == 0 and r2.returncode == 0, "a secret bound for the outside host",
         r1.stderr + r2.stderr)
    c = s.serve()
    c.initialize()
    names = ready(c, s)
    t.ok("probe__raw" in names, "the server with a host starts behind its proxy", names)
    node, info = task_of(sw)
    service = info["Config"]["Labels"]["com.docker.swarm.service.name"] if info else "none"
    nets = owned(sw, "network")
    t.ok(len(nets) == 2 and any(x.endswith("-in") for x in nets),
         "two overlays of the session's, labelled", nets)
    services = owned(sw, "service")
    proxies = [x for x in services if x.endswith("-egress")]
    on_manager = [x for x in owned(sw, "container") if not x.endswith("-relay")]
    t.ok(len(services) == 2 and len(proxies) == 1 and not on_manager,
         "the proxy is a service of its own, not a container on the manager",
         (services, on_manager))
    if proxies:
        spec = json.loads(sw.docker("m", "service", "inspect", proxies[0]).stdout)[0]
        attached = sorted(n["Target"] for n in spec["Spec"]["TaskTemplate"]["Networks"])
        ids = sorted(json.loads(sw.docker("m", "network", "inspect", *nets).stdout),
                     key=lambda x: x["Name"])
        t.ok(sorted(x["Id"] for x in ids) == attached,
             "on the session's two overlays, the inner one and the outer one", attached)
    net_in = [x for x in nets if x.endswith("-in")]
    spec = json.loads(sw.docker("m", "network", "inspect", net_in[0]).stdout)[0] if net_in else {}
    t.ok(spec.get("Driver") == "overlay" and spec.get("Internal") is True,
         "the server's is an internal overlay", {k: spec.get(k) for k in ("Driver", "Internal")})

    t.ok(text_of(c.call("probe__env", {"name": "ITEST_TOKEN"}, timeout=60)) == "[redacted:itest]",
         "inside: the secret's variable is set (its value comes back redacted)")
    proxy = text_of(c.call("probe__env", {"name": "HTTP_PROXY"}, timeout=60))
    m = re.fullmatch(r"http://([0-9.]+):(\d+)", proxy)
    t.ok(m is not None, "the server's HTTP_PROXY names the proxy on the overlay", proxy)
    d = c.call("probe__connect", {"host": host, "port": int(port)}, timeout=60)
    t.ok(d["result"].get("isError") is True,
         "inside: a direct connection to the outside host fails (no route out)", d)
    if m:
        get = "GET http://%s/ HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (outside, outside)
        reply = text_of(c.call("probe__raw", {"host": m.group(1), "port": int(m.group(2)),
                                              "data": get}, timeout=60))
        t.ok(reply.startswith("HTTP/1.1 200") and "outside-ok" in reply,
             "through the proxy the listed outside host answers",
             (reply[:200], s.serve_log()[-1500:]))
        other = "%s:%d" % (host, int(port) + 1)
        get = "GET http://%s/ HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (other, other)
        reply = text_of(c.call("probe__raw", {"host": m.group(1), "port": int(m.group(2)),
                                              "data": get}, timeout=60))
        t.ok(reply.startswith("HTTP/1.1 403"), "an unlisted destination is refused by the proxy",
             reply[:200])

    # where the value must not be
    inspects = {
        "service inspect": sw.docker("m", "service", "inspect", service, check=False).stdout,
        "secret inspect": sw.docker("m", "secret", "inspect", *owned(sw, "secret"),
                                    check=False).stdout,
        "task's container inspect (%s)" % node: sw.docker(node or "w1", "inspect",
                                                           info["Id"] if info else "none",
                                                           check=False).stdout,
        "relay's container inspect": sw.docker("m", "inspect", service + "-relay",
                                               check=False).stdout,
    }
    t.ok(all(inspects.values()) and not [k for k, v in inspects.items() if secret in v],
         "the secret is in no inspect (service, secret, the task's and the relay's containers)",
         [k for k, v in inspects.items() if secret in v or not v])
    who = holders(secret)
    t.ok(len(who) == 1 and who[0].endswith("/mcpgate-probe"),
         "no process but the server's own has it in its environment", who)
    secrets = owned(sw, "secret")
    t.ok(sorted(secrets) == sorted([service + "-tok", service + "-env", service + "-egress-tok"]),
         "the session's secrets are swarm secrets (the tokens of the server and its proxy, "
         "the server's variables)", secrets)
    c.close(timeout=120)
    audit = s.audit()
    seen = [(e.get("allowed"), e.get("port")) for e in audit if e.get("event") == "mcp.egress"]
    t.ok((True, int(port)) in seen and (False, int(port) + 1) in seen,
         "the proxy's records of both attempts are in the session's audit log", seen)
    left = nothing_owned(sw)
    t.ok(not any(left.values()), "nothing left: services, secrets, both overlays, the proxy",
         left)
    r = subprocess.run(["grep", "-rl", "--", secret, sw.dir], capture_output=True, text=True)
    t.ok(r.stdout.strip() == "", "no file of the swarm's nodes holds the secret", r.stdout)


def descendants(pid):
    """pids below pid, deepest last"""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            with open("/proc/%d/task/%d/children" % (p, p)) as fh:
                kids = [int(x) for x in fh.read().split()]
        except OSError:
            kids = []
        out += kids
        todo += kids
    return out


def test_kill_sweep(sw, base, image):
    """kill -9 of mcpgate: its helper, whose stdin ends, removes the
    server's service, secrets and network itself. kill -9 of mcpgate and its
    helper together: what is left is found by the owner rule and removed by
    `mcpgate sweep`"""
    s = Session(sw, base, image, extra='manifest = "%s"\n' % APPROVED[0])
    c = s.serve()
    c.initialize()
    names = ready(c, s)
    t.ok("probe__echo" in names, "a session with the approved manifest starts", names)
    os.kill(c.proc.pid, 9)
    c.proc.wait(30)
    left = nothing_owned(sw)
    t.ok(not any(left.values()),
         "after kill -9 of mcpgate, its helper removes the service, secrets and network", left)

    c = s.serve()
    c.initialize()
    ready(c, s)
    for pid in [c.proc.pid] + descendants(c.proc.pid):
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    c.proc.wait(30)
    time.sleep(1)
    left = everything_owned(sw)
    t.ok(left["service"] and left["secret"] and left["network"],
         "after kill -9 of mcpgate and its helper, its service, secrets and network are left",
         left)
    r = s.mcpgate("sweep", timeout=300)
    t.ok(r.returncode == 0, "mcpgate sweep on the swarm", r.stdout + r.stderr)
    left = nothing_owned(sw)
    t.ok(not any(left.values()), "the sweep removes what the dead mcpgate left", left)


APPROVED = [None]



def main():
    if os.environ.get("MCPGATE_CONTAINER_TESTS") != "1":
        return skip("set MCPGATE_CONTAINER_TESTS=1 to run it")
    if os.geteuid() != 0:
        return skip("needs root (network namespaces, dockerd)")
    base = tempfile.mkdtemp(prefix="mcpgate-swarm-")
    reuse = os.environ.get("MCPGATE_SWARM_REUSE")  # a swarm up.sh made, kept (iterating)
    d = reuse or tempfile.mkdtemp(prefix="mgsw.", dir="/tmp")
    prefix = None
    try:
        profile = derive_profile(base)
        if profile is None:
            t.ok(False, "mcpgate derives its seccomp profile")
            return t.done()
        r = subprocess.run(["true"] if reuse else [os.path.join(HERE, "up.sh"), d, profile],
                           capture_output=True, text=True, timeout=300)
        sys.stdout.write(r.stdout)
        if r.returncode == 77:
            return skip(r.stdout.strip().splitlines()[-1] if r.stdout.strip() else "up.sh")
        if not t.ok(r.returncode == 0, "the swarm comes up", r.stdout + r.stderr):
            return t.done()
        sw = Swarm(d)
        prefix = sw.prefix
        image = build_probe(sw, base)
        cases = (test_topology, test_session, test_stderr, test_registry, test_add,
                 test_egress_secret, test_refused_node, test_kill_sweep)
        only = os.environ.get("MCPGATE_SWARM_CASES")  # iterating: some cases by name
        for case in [x for x in cases if not only or x.__name__ in only.split(",")]:
            began = time.time()
            try:
                case(sw) if case is test_topology else case(sw, base, image)
            except Exception as e:
                t.ok(False, "%s raised %s: %s" % (case.__name__, type(e).__name__, e))
            print("# %s: %.0f s" % (case.__name__, time.time() - began), flush=True)
    finally:
        if reuse:
            shutil.rmtree(base, ignore_errors=True)
            return t.done()
        if os.path.exists(os.path.join(d, "made")):
            with open(os.path.join(d, "made")) as fh:
                prefix = prefix or re.search(r"^pfx=(\S+)", fh.read(), re.M).group(1)
        subprocess.run([os.path.join(HERE, "down.sh"), d], timeout=300)
        if prefix is not None:
            left = leftovers(prefix, d)
            t.ok(not left, "nothing of the swarm is left on this machine", left)
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(d, ignore_errors=True)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
