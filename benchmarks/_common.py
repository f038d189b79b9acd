"""Shared helpers for the benchmark scripts: header (machine, load), BLAS pinning, small statistics.

Not a test module and not part of the package: the scripts are run by hand (see README.md).
"""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np
from rich.console import Console

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without installing: still import this kbench
    sys.path.insert(0, str(ROOT))

console = Console(highlight=False)
if not console.is_terminal and not os.environ.get("COLUMNS"):
    console = Console(highlight=False, width=160)  # files and pipes: wide tables, no wrapping


def task_names(arg: str) -> list[str] | None:
    """``--tasks a,b`` as a list of task names (None: every task); an unknown name ends the script with a one-line
    error and exit code 2, as argparse does for a bad option, instead of a KeyError or an empty table."""
    if not arg:
        return None
    from kbench.core.tasks import TASK

    names = [n.strip() for n in arg.split(",") if n.strip()]
    unknown = [n for n in names if n not in TASK]
    if unknown or not names:
        print(f"{Path(sys.argv[0]).name}: error: unknown task {', '.join(unknown) or repr(arg)} "
              f"(tasks: {', '.join(TASK)})", file=sys.stderr)
        raise SystemExit(2)
    return names


def progress(msg: str) -> None:
    """A transient progress line (terminals only; files stay clean)."""
    if console.is_terminal:
        console.print(f"[dim]{msg}[/]", end="\r")

_blas_limit = None


def pin_blas(threads: int = 1) -> None:
    """Pin this process's BLAS to ``threads`` (in-process timing only; sandbox workers pin their own)."""
    global _blas_limit
    from threadpoolctl import threadpool_limits

    _blas_limit = threadpool_limits(limits=threads, user_api="blas")


def loadavg() -> str:
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "unknown"


def _proc_table() -> dict[int, tuple[int, float, str]]:
    """pid -> (ppid, cpu seconds so far, command line) from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        out[int(d)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick, cmd)
    return out


def other_python(window: float = 1.0) -> list[str]:
    """Processes outside this benchmark (e.g. someone's pytest) that used >= 20 % of a core over the last
    ``window`` seconds: they disturb every figure on a 2-core machine."""
    try:
        a = _proc_table()
        time.sleep(window)
        b = _proc_table()
    except OSError:
        return []
    mine = _descendants(b)  # this process's workers and fork server are part of the benchmark
    out = []
    for pid, (ppid, cpu, cmd) in b.items():
        if pid in mine or pid not in a:
            continue
        used = (cpu - a[pid][1]) / window
        if used >= 0.2:
            out.append(f"pid {pid} {used:.0%} of a core: {cmd[:90]}")
    return out


def git_rev() -> str:
    try:
        rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=5).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return rev + (" (+uncommitted changes)" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _descendants(table: dict[int, tuple[int, float, str]]) -> set[int]:
    mine, changed = {os.getpid()}, True
    while changed:
        changed = False
        for pid, (ppid, _, _) in table.items():
            if ppid in mine and pid not in mine:
                mine.add(pid)
                changed = True
    return mine


def wait_quiet(max_wait: float, threshold: float = 0.3, quiet_for: int = 3) -> float | None:
    """Wait until other processes use < ``threshold`` cores for ``quiet_for`` consecutive seconds; return the
    seconds waited, or None when ``max_wait`` ran out."""
    t0 = time.perf_counter()
    calm = 0
    prev = _proc_table()
    while time.perf_counter() - t0 < max_wait:
        time.sleep(1.0)
        cur = _proc_table()
        mine = _descendants(cur)
        used = sum(cpu - prev[pid][1] for pid, (_, cpu, _) in cur.items() if pid not in mine and pid in prev)
        prev = cur
        calm = calm + 1 if used < threshold else 0
        if calm >= quiet_for:
            return time.perf_counter() - t0
    return None


class Monitor(threading.Thread):
    """Samples, every ``interval`` seconds, how much CPU processes outside this benchmark use."""

    def __init__(self, interval: float = 2.0) -> None:
        super().__init__(daemon=True)
        self.interval, self.samples = interval, []  # type: ignore[var-annotated]
        self._stop_ev = threading.Event()

    def run(self) -> None:
        prev = _proc_table()
        while not self._stop_ev.wait(self.interval):
            cur = _proc_table()
            mine = _descendants(cur)
            used = sum(cpu - prev[pid][1] for pid, (_, cpu, _) in cur.items() if pid not in mine and pid in prev)
            self.samples.append(max(used, 0.0) / self.interval)
            prev = cur

    def stop(self) -> str:
        self._stop_ev.set()
        self.join(5)
        if not self.samples:
            return "no samples"
        s = sorted(self.samples)
        return f"mean {sum(s) / len(s):.2f} cores, max {s[-1]:.2f} ({len(s)} samples of {self.interval:g} s)"


_monitor: Monitor | None = None


def header(title: str, what: str, monitor: bool = True) -> float:
    """Print the benchmark's title, the machine and the load; return a start time for ``footer``.

    ``monitor`` samples other processes' CPU use in a background thread during the run (off for
    latency measurements, where its /proc reads would compete for the GIL)."""
    global _monitor
    try:
        from kbench.core.machine import summary

        machine = summary()
    except Exception as e:  # noqa: BLE001 - a header must never stop a benchmark
        machine = f"unknown ({e})"
    wait = float(os.environ.get("KBENCH_BENCH_WAIT_QUIET", "0") or 0)
    if wait > 0:
        waited = wait_quiet(wait)
        if waited is None:
            console.print(f"[yellow]the machine did not become quiet within {wait:g} s; measuring anyway[/]")
    console.rule(f"[bold]{title}")
    console.print(what)
    console.print(f"[dim]{datetime.datetime.now():%Y-%m-%d %H:%M:%S} · machine: {machine} · kbench {git_rev()} · "
                  f"load avg {loadavg()}[/]")
    busy = other_python()
    if busy:
        console.print("[yellow]other busy processes at start (numbers may be disturbed):[/]\n  " + "\n  ".join(busy))
    if monitor:
        _monitor = Monitor()
        _monitor.start()
    return time.perf_counter()


def footer(t0: float, *results: object) -> int:
    """Print ``results`` (tables, sentences), then the run's wall time and load; 0, the script's exit code."""
    global _monitor
    for r in results:
        console.print(r)
    wall = time.perf_counter() - t0
    if _monitor is not None:
        console.print(f"[dim]CPU used by other processes during the run: {_monitor.stop()}[/]")
        _monitor = None
    busy = other_python()
    console.print(f"[dim]benchmark wall time {wall:.1f} s · load avg at end {loadavg()}[/]")
    if busy:
        console.print("[yellow]other busy processes at end (numbers may be disturbed):[/]\n  " + "\n  ".join(busy))
    return 0


def clocked(fn: Callable, totals: dict, key: object) -> Callable:
    """``fn``, adding the wall time of every call to ``totals[key]`` (a call that raises counts too)."""
    def run(*a: object, **kw: object) -> object:
        t0 = time.perf_counter()
        try:
            return fn(*a, **kw)
        finally:
            totals[key] += time.perf_counter() - t0
    return run


def verdict(ok: bool) -> str:
    return "[green]PASS[/]" if ok else "[bold red]MISS[/]"


def pct(xs: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs, dtype=float), q)) if len(xs) else float("nan")


def ms(s: float) -> str:
    return f"{s * 1e3:.2f} ms" if s == s else "—"


def geomean(xs: Iterable[float]) -> float:
    a = np.asarray(list(xs), dtype=float)
    return float(np.exp(np.mean(np.log(a)))) if len(a) else float("nan")
