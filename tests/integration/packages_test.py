#!/usr/bin/env python3
"""Real npm servers doing their real job contained (issue 24), on a real
runtime (MCPGATE_CONTAINER_TEST_RUNTIME=podman|docker), added as a person
would add them:

- @cyanheads/git-mcp-server with `--with git` runs git on a repository in a
  write mount; added without it, its failing tool makes mcpgate name the
  command, the package and the add line;
- mcp-server-code-runner runs a shell script once `--with bash` is given
  (without it, the hint names bash); through it the home is tried: HOME is
  written, nothing there can be run, the root stays read-only;
- mcp-server-sqlite-npx with `--scripts`: sqlite3's native addon is built
  from source in the contained step; the server queries a database in a
  write mount; its image holds no compiler;
- testdata/npm/native-pkg (better-sqlite3 12, a native addon) the same way
  (these two native builds on root podman only unless
  MCPGATE_PACKAGES_NATIVE=all: minutes each, and the same build step on
  every runtime);
- @wonderwhy-er/desktop-commander and mongodb-mcp-server start (they write a
  dot-folder in their home at start) and answer a call;
- two images asking for the same Debian set share that layer, every image
  shares the base and node layers, in the runtime's storage.

Needs npm, apt-get and the network to the npm registry and Debian's archive.
Downloaded .debs and built layers are kept in build/itest-debian and shared
by the runtimes of a run (and by later runs). Every npm version is pinned.
"""
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import containers_test as ct  # noqa: E402
from add_test import layers_of, pin_of, remember  # noqa: E402
from mcpclient import text_of  # noqa: E402

t = ct.t
RT = ct.RT
TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CACHE = os.path.join(TOP, "build", "itest-debian")
NATIVE_PKG = os.path.join(TOP, "testdata", "npm", "native-pkg")
GIT = "@cyanheads/git-mcp-server@2.15.3"
RUNNER = "mcp-server-code-runner@0.1.8"
SQLITE = "mcp-server-sqlite-npx@0.8.0"
DESKTOP = "@wonderwhy-er/desktop-commander@0.2.52"
MONGO = "mongodb-mcp-server@3.0.4"


def session(base):
    s = ct.Session(base, "")
    for k in ("NODE_EXTRA_CA_CERTS", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy",
              "NO_PROXY", "no_proxy", "npm_config_registry"):
        if k in os.environ:
            s.env[k] = os.environ[k]
    if "NODE_EXTRA_CA_CERTS" not in s.env and os.path.exists("/etc/ssl/certs/ca-certificates.crt"):
        s.env["NODE_EXTRA_CA_CERTS"] = "/etc/ssl/certs/ca-certificates.crt"
    # the .debs and layers outlive the run's data folder: the next runtime
    # (and the next run) finds them
    data = os.path.join(s.env["XDG_DATA_HOME"], "mcpgate")
    os.makedirs(data, exist_ok=True)
    os.makedirs(CACHE, mode=0o700, exist_ok=True)
    link = os.path.join(data, "debian")
    if not os.path.islink(link):
        os.symlink(CACHE, link)
    return s


def add(s, *args):
    accept = ct.unenforced_here(None)
    started = time.time()
    r = s.mcpgate("add", *args, *(["--accept-unenforced", ",".join(accept)] if accept else []),
                  timeout=1800)
    print("# add %s: %.0f s" % (args[0], time.time() - started), flush=True)
    return r


def added(s, r, name, version, what):
    ok = r.returncode == 0 and r.stdout.startswith("localhost/mcpgate-npm-%s@sha256:" % name)
    t.ok(ok, "%s: %s" % (RT, what), r.stderr[-1500:])
    if ok:
        remember(r.stdout.strip(), name, version)
    return ok


def approve(s, name, *tools):
    args = []
    for tool in tools:
        args += ["--tool", tool, "--on", "--effect", "read"]
    r = s.mcpgate("review", name)
    if r.returncode != 0:
        return r
    return s.mcpgate("approve", name, *args)


def calls(s, todo, timeout=120):
    """one session: each (tool, args) called; the answers' texts, and what
    mcpgate told the client"""
    c = s.serve()
    c.initialize()
    c.request("tools/list", timeout=300)
    answers = []
    for tool, args in todo:
        r = c.call(tool, args, timeout=timeout)
        answers.append((r, text_of(r) if "result" in r else json.dumps(r)))
    c.close(timeout=60)
    notes = [n["params"]["data"] for n in c.notifications
             if n["method"] == "notifications/message"]
    return answers, notes


def run_in(s, pin, script):
    ref = pin
    if RT == "docker":
        manifest = os.path.join(s.env["XDG_DATA_HOME"], "mcpgate", "images",
                                "sha256-%s.manifest" % pin.split("@sha256:")[1])
        with open(manifest) as fh:
            ref = json.load(fh)["config"]["digest"]
    r = ct.rt("run", "--rm", "--network=none", "--entrypoint", "/bin/sh", ref, "-c", script,
              check=False, timeout=120)
    return r.stdout + r.stderr


def test_git(s):
    repo = os.path.join(s.ws, "repo")
    os.makedirs(repo)
    git = ["git", "-c", "user.name=mcpgate", "-c", "user.email=t@example.invalid"]
    subprocess.run(["git", "init", "-q", repo], check=True)
    with open(os.path.join(repo, "notes.txt"), "w") as fh:
        fh.write("tracked\n")
    subprocess.run(git + ["-C", repo, "add", "notes.txt"], check=True)
    subprocess.run(git + ["-C", repo, "commit", "-qm", "a commit made on the host"], check=True)
    if os.geteuid() == 0:
        for root, dirs, files in os.walk(repo):
            for n in dirs + files:
                os.lchown(os.path.join(root, n), ct.PERSON, ct.PERSON)
        os.lchown(repo, ct.PERSON, ct.PERSON)

    r = add(s, "npm:" + GIT, "--name", "git", "--with", "git", "--mount", "repo:write")
    if not added(s, r, "git", "2.15.3", "add git-mcp-server --with git"):
        return None
    with open(os.path.join(s.conf, "mcp.toml")) as fh:
        text = fh.read()
    t.ok('packages = ["git"]' in text, "%s: its entry says packages = [\"git\"]" % RT, text[-500:])
    r = approve(s, "git", "git_status", "git_log", "git_add")
    t.ok(r.returncode == 0, "%s: git-mcp-server is reviewed and approved" % RT, r.stderr[-800:])
    with open(os.path.join(repo, "new.txt"), "w") as fh:
        fh.write("made on the host, staged in the container\n")
    if os.geteuid() == 0:
        os.chown(os.path.join(repo, "new.txt"), ct.PERSON, ct.PERSON)
    answers, _ = calls(s, [("git__git_log", {"path": "/workspace/repo"}),
                           ("git__git_add", {"path": "/workspace/repo", "paths": ["new.txt"]}),
                           ("git__git_status", {"path": "/workspace/repo"})])
    t.ok("a commit made on the host" in answers[0][1],
         "%s: git-mcp-server runs git log on the mounted repository" % RT, answers[0][1][-400:])
    staged = subprocess.run(["git", "-c", "safe.directory=*", "-C", repo, "diff", "--cached",
                             "--name-only"],
                            capture_output=True, text=True).stdout.split()
    t.ok(staged == ["new.txt"] and "new.txt" in answers[2][1],
         "%s: its git add reaches the repository on the host" % RT, (staged, answers[2][1][-300:]))

    # the same server without git: the person is told what is missing
    r = add(s, "npm:" + GIT, "--name", "gitless", "--mount", "repo")
    if added(s, r, "gitless", "2.15.3", "add git-mcp-server without --with git"):
        approve(s, "gitless", "git_status")
        answers, notes = calls(s, [("gitless__git_status", {"path": "/workspace/repo"})])
        hint = [n for n in notes if "looks for the command git" in n]
        t.ok(answers[0][0].get("result", {}).get("isError") is True and hint and
             "Debian's package git" in hint[0] and
             "mcpgate add npm:%s --name gitless --with git" % GIT in hint[0] and
             'packages = ["git"]' in hint[0],
             "%s: without git, its failing tool makes mcpgate name the command, the package "
             "and the add line" % RT, (answers[0][1][-300:], notes))
    return pin_of(s, "git")


def test_runner(s):
    r = add(s, "npm:" + RUNNER, "--name", "runner")
    if added(s, r, "runner", "0.1.8", "add mcp-server-code-runner"):
        approve(s, "runner", "run-code")
        answers, notes = calls(s, [("runner__run-code",
                                    {"languageId": "shellscript", "code": "echo hi"})])
        hint = [n for n in notes if "looks for the command bash" in n]
        t.ok(hint and "--with bash" in hint[0],
             "%s: a shell script without bash: mcpgate names bash and --with bash" % RT,
             (answers[0][1][-300:], notes))
    r = add(s, "npm:" + RUNNER, "--name", "shell", "--with", "bash")
    if not added(s, r, "shell", "0.1.8", "add mcp-server-code-runner --with bash"):
        return
    approve(s, "shell", "run-code")
    # code-runner answers with stderr alone when there is any: none here
    script = "\n".join([
        'exec 2>/dev/null',
        'echo "home=$HOME sum=$((6*7))"',
        'touch "$HOME/.config-of-mine" && echo home-written',
        'cp /bin/true "$HOME/mine" && { "$HOME/mine" && echo home-ran || echo home-noexec; }',
        'touch /app/planted 2>/dev/null && echo root-written || echo root-read-only',
        'ls /usr/bin/gcc /usr/bin/cc 2>/dev/null || echo no-compiler',
    ])
    answers, _ = calls(s, [("shell__run-code", {"languageId": "shellscript", "code": script})])
    out = answers[0][1]
    t.ok("home=/home/mcpgate sum=42" in out and "home-written" in out,
         "%s: code-runner runs a shell script; its HOME is written" % RT, out[-500:])
    t.ok("home-noexec" in out and "home-ran" not in out and "root-read-only" in out,
         "%s: what a server puts in its home cannot be run, and the root stays read-only" % RT,
         out[-500:])

    # the home kept in the workspace: written there, still not executable
    kept = os.path.join(s.ws, "state", "shell-home")
    os.makedirs(kept)
    if os.geteuid() == 0:
        os.chown(os.path.dirname(kept), ct.PERSON, ct.PERSON)
        os.chown(kept, ct.PERSON, ct.PERSON)
    mcp = os.path.join(s.conf, "mcp.toml")
    with open(mcp) as fh:
        text = fh.read()
    with open(mcp, "w") as fh:
        fh.write(text.replace('name = "shell"\n', 'name = "shell"\nhome = "workspace:state/shell-home"\n'))
    answers, _ = calls(s, [("shell__run-code", {"languageId": "shellscript", "code": script})])
    out = answers[0][1]
    t.ok("home=/home/mcpgate" in out and "home-written" in out and "home-noexec" in out and
         "home-ran" not in out and os.path.exists(os.path.join(kept, ".config-of-mine")),
         "%s: home = \"workspace:PATH\": the home is that folder, written through to the "
         "host, and what is put there cannot be run" % RT, out[-500:])


def test_sqlite(s):
    db = os.path.join(s.ws, "db")
    os.makedirs(db)
    if os.geteuid() == 0:
        os.chown(db, ct.PERSON, ct.PERSON)
    r = add(s, "npm:" + SQLITE, "--name", "sqlite", "--scripts", "--mount", "db:write",
            "--arg", "/workspace/db/test.db")
    remember(None, "scripts", "sqlite")  # the install step's own image
    if not added(s, r, "sqlite", "0.8.0", "add mcp-server-sqlite-npx --scripts (sqlite3 built "
                 "from source, contained)"):
        return
    t.ok("node-gyp" in r.stderr or "gyp info ok" in r.stderr,
         "%s: the contained step built sqlite3 with node-gyp" % RT, r.stderr[-600:])
    approve(s, "sqlite", "create_table", "write_query", "read_query")
    answers, _ = calls(s, [("sqlite__create_table", {"query": "CREATE TABLE t (x INTEGER)"}),
                           ("sqlite__write_query", {"query": "INSERT INTO t VALUES (42)"}),
                           ("sqlite__read_query", {"query": "SELECT x * 2 AS y FROM t"})])
    t.ok('"y": 84' in answers[2][1] and os.path.exists(os.path.join(db, "test.db")),
         "%s: mcp-server-sqlite-npx queries a database in a write mount" % RT,
         [a[1][-200:] for a in answers])
    out = run_in(s, pin_of(s, "sqlite"),
                 "for c in gcc g++ cc c++ make python3 node-gyp; do command -v $c; done; "
                 "ls /usr/include/node /usr/lib/gcc 2>&1 | head -2; "
                 "ls /app/node_modules/sqlite3/build/Release/node_sqlite3.node")
    t.ok("node_sqlite3.node" in out and "/usr/bin/gcc" not in out and "g++" not in out and
         "/usr/bin/make" not in out and "python3" not in out and "No such file" in out,
         "%s: the server's image has the addon and no compiler, make, python3 or headers" % RT,
         out[-600:])


def native_tarball(dest):
    with tarfile.open(dest, "w:gz") as tf:
        for f in sorted(os.listdir(NATIVE_PKG)):
            with open(os.path.join(NATIVE_PKG, f), "rb") as fh:
                data = fh.read()
            info = tarfile.TarInfo("package/" + f)
            info.size = len(data)
            info.mode = 0o755 if f == "server.js" else 0o644
            tf.addfile(info, io.BytesIO(data))
    return dest


def test_better_sqlite(s):
    pkg = native_tarball(os.path.join(s.dir, "mcpgate-test-native-1.0.0.tgz"))
    r = add(s, "npm:" + pkg, "--name", "native")
    t.ok(r.returncode == 0 and "better-sqlite3 builds native code" in r.stderr and
         "--scripts" in r.stderr,
         "%s: without --scripts, add says better-sqlite3's native code was not built and how "
         "to build it" % RT, r.stderr[-600:])
    if r.returncode == 0:
        remember(r.stdout.strip(), "native", "1.0.0")
    r = add(s, "npm:" + pkg, "--name", "native-built", "--scripts")
    remember(None, "scripts", "native-built")
    if not added(s, r, "native-built", "1.0.0", "add a package over better-sqlite3 12 --scripts"):
        return
    approve(s, "native-built", "sql")
    answers, _ = calls(s, [("native-built__sql", {"query": "SELECT 6 * 7 AS answer"})])
    t.ok('"answer":42' in answers[0][1],
         "%s: better-sqlite3 built in the contained step answers in the server's image" % RT,
         answers[0][1][-300:])


def test_home_servers(s):
    r = add(s, "npm:" + DESKTOP, "--name", "desktop", "--with", "git")
    if added(s, r, "desktop", "0.2.52", "add desktop-commander --with git"):
        r = approve(s, "desktop", "get_config")
        t.ok(r.returncode == 0,
             "%s: desktop-commander starts (it writes ~/.claude-server-commander)" % RT,
             r.stderr[-800:])
        answers, _ = calls(s, [("desktop__get_config", {})])
        t.ok("result" in answers[0][0] and answers[0][0]["result"].get("isError") is not True,
             "%s: desktop-commander answers get_config" % RT, answers[0][1][-300:])
    r = add(s, "npm:" + MONGO, "--name", "mongo")
    if added(s, r, "mongo", "3.0.4", "add mongodb-mcp-server"):
        r = s.mcpgate("review", "mongo")
        t.ok(r.returncode == 0 and "tools (" in r.stdout,
             "%s: mongodb-mcp-server starts without --logPath (it writes ~/.mongodb)" % RT,
             (r.stdout[-300:], r.stderr[-800:]))


def test_sharing(s, git_pin):
    desk = pin_of(s, "desktop")
    if git_pin is None or desk is None:
        t.ok(False, "%s: two images with git to compare" % RT)
        return
    a, b = layers_of(s, git_pin), layers_of(s, desk)
    shell = layers_of(s, pin_of(s, "shell") or git_pin)
    t.ok(len(a) == 4 and len(b) == 4 and a[:3] == b[:3] and a[3] != b[3],
         "%s: two images --with git share the base, node and git layers in the runtime's "
         "storage, and differ in their own" % RT, (a, b))
    t.ok(len(shell) == 4 and shell[:2] == a[:2] and shell[2] != a[2],
         "%s: an image --with bash shares the base and node layers, not the git one" % RT,
         (a, shell))


# The contained native builds take minutes each: CI runs them on root
# podman alone, the rest of the test on every runtime; the build step is the
# same code whichever runtime runs it (docs/2026-12-02-packages.md)
NATIVE = ("sqlite", "better-sqlite3")
NATIVE_ON = ("root podman",)


def native_here():
    if os.environ.get("MCPGATE_PACKAGES_NATIVE") == "all":
        return True
    return RT == "podman" and os.getuid() == 0


def main():
    for need in ("npm", "apt-get", "git"):
        if shutil.which(need) is None:
            return ct.skip("no %s here (scripts/setup installs it)" % need)

    def body(base):
        s = session(base)
        started = time.time()
        git_pin = None
        for name, case in (("git", lambda: test_git(s)), ("runner", lambda: test_runner(s)),
                           ("sqlite", lambda: test_sqlite(s)),
                           ("better-sqlite3", lambda: test_better_sqlite(s)),
                           ("home", lambda: test_home_servers(s))):
            if name in NATIVE and not native_here():
                t.skip("%s: the %s case" % (RT, name),
                       "native builds (several minutes each) run on %s only "
                       "(MCPGATE_PACKAGES_NATIVE=all runs them on every runtime)" %
                       " and ".join(NATIVE_ON))
                continue
            try:
                got = case()
                if name == "git":
                    git_pin = got
            except Exception as e:
                t.ok(False, "%s: the %s case raised %s: %s" % (RT, name, type(e).__name__, e))
        test_sharing(s, git_pin)
        print("# packages_test on %s: %.0f s" % (RT, time.time() - started), flush=True)
    return ct.run_cases("packages", body)


if __name__ == "__main__":
    sys.exit(main())
