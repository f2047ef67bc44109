"""What the benchmarks share: running commands, statistics, tables, and the
anomalies that end a run with status 1. stdlib only; each bench is its own
process, so the module-level list is that run's."""
import math
import os
import statistics
import subprocess
import sys

anomalies = []  # what misbehaved, in words; printed at the end, and the exit status


def anomaly(text):
    anomalies.append(text)
    print("  ANOMALY: " + text, flush=True)


def measure(fn, *args):
    """One measurement; its failure is an anomaly, not the end of the run."""
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001
        anomaly("%s failed: %s: %s" % (fn.__name__, type(e).__name__, e))


def on_term(signo, frame):
    raise KeyboardInterrupt("signal %d" % signo)


# ---- commands ------------------------------------------------------------

def sh(argv, timeout=120, env=None, check=False, stdin=None):
    """Run a command to its end (bounded); return CompletedProcess."""
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env,
                       stdin=stdin if stdin is not None else subprocess.DEVNULL)
    if check and r.returncode != 0:
        raise RuntimeError("%s exited %d: %s" % (" ".join(argv), r.returncode,
                                                 (r.stderr or r.stdout).strip()[:400]))
    return r


def first_line(argv, timeout=20, any_status=False):
    """The first line a command prints (a version, a commit), or None.
    any_status: take it even from a command that exits non-zero (squid -v)."""
    try:
        r = sh(argv, timeout=timeout)
        out = (r.stdout or r.stderr).strip().splitlines()
        return out[0].strip() if out and (any_status or r.returncode == 0) else None
    except (OSError, subprocess.TimeoutExpired):
        return None


# ---- CPU of a process tree -------------------------------------------------

CLOCK_TICK = os.sysconf("SC_CLK_TCK")


def process_tree(root):
    """root's pid and every live descendant's, from /proc (ppid links)."""
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as fh:
                stat = fh.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return sorted(out)


def status_kib(pid, field):
    """a number of /proc/PID/status (VmRSS, Threads...), 0 when it is gone"""
    try:
        with open("/proc/%d/status" % pid) as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def tree_cpu(pids):
    """(on-CPU ns, system ticks) summed over pids and all their threads. The
    ns come from each thread's schedstat (sum_exec_runtime: user + system,
    to the nanosecond); the ticks from each process's stat (stime), only to
    tell the system share. A process that is gone counts nothing."""
    ns = ticks = 0
    for pid in pids:
        try:
            for tid in os.listdir("/proc/%d/task" % pid):
                with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as fh:
                    ns += int(fh.read().split()[0])
            with open("/proc/%d/stat" % pid) as fh:
                stat = fh.read()
            ticks += int(stat[stat.rindex(")") + 2:].split()[12])
        except (OSError, ValueError, IndexError):
            pass
    return ns, ticks


# ---- statistics and printing ---------------------------------------------

def pct(sorted_values, q):
    """Nearest-rank percentile of an already sorted list."""
    if not sorted_values:
        return float("nan")
    k = max(1, math.ceil(q * len(sorted_values)))
    return sorted_values[k - 1]


def summary(values):
    v = sorted(values)
    if not v:
        return {"n": 0}
    return {"n": len(v), "median": statistics.median(v), "p90": pct(v, 0.90),
            "p99": pct(v, 0.99), "mean": statistics.fmean(v), "min": v[0], "max": v[-1]}


def ratio(a, b):
    return a / b if a is not None and b else float("nan")


def rx(a, b):
    """a/b as a printed ratio (three decimals below 0.1), "-" when either is missing."""
    r = ratio(a, b)
    if math.isnan(r):
        return "-"
    return ("%.3fx" if r < 0.1 else "%.2fx") % r


def fmt(x, digits=1):
    if isinstance(x, str):
        return x
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if isinstance(x, int):
        return "%d" % x
    return "%.*f" % (digits, x)


def table(title, columns, rows, digits=None):
    """rows: [label, value, ...]; digits: decimals per value column."""
    print()
    print("== " + title)
    digits = digits or [1] * (len(columns) - 1)
    width0 = max([len(r[0]) for r in rows] + [len(columns[0])])
    cells = [[fmt(c, digits[i]) for i, c in enumerate(r[1:])] for r in rows]
    widths = [max([len(columns[i + 1])] + [len(c[i]) for c in cells if i < len(c)])
              for i in range(len(columns) - 1)]
    print("  " + columns[0].ljust(width0) + "".join("  " + columns[i + 1].rjust(widths[i])
                                                  for i in range(len(widths))))
    for r, c in zip(rows, cells):
        print("  " + r[0].ljust(width0) + "".join("  " + c[i].rjust(widths[i])
                                                for i in range(len(c))))
    sys.stdout.flush()


def report_anomalies(none_text):
    """The closing block; returns the run's exit status."""
    print()
    print("== anomalies")
    if anomalies:
        for a in anomalies:
            print("  - " + a)
    else:
        print("  none: " + none_text)
    return 1 if anomalies else 0
