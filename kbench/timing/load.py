"""How much of the machine other processes used while kbench was timing: the contention signal that
``stats.honest_ci`` and the stopping rule read, in cores (0.0 = none, 1.0 = one core kept busy).

Read from /proc (Linux): every CPU's busy jiffies from /proc/stat over the interval, minus what this
process (its CPU clock) and the given workers (the timed ones, from /proc/<pid>/stat) used themselves. The
grading process reads these; no worker can write them. This process's own figure comes from its CPU clock,
not /proc/self/stat: read while the grader's helper thread works, that file took 1.6-2 ms (median) against
8 us for the clock (12-04, kernel 6.18), once per pair on the grading thread. Where /proc is missing the
figure is 0.0 (unknown, so contention is then judged from the samples' spread alone).
"""

from __future__ import annotations

import os
import time
from typing import Iterable

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _busy_jiffies() -> int | None:
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()[1:]
    except OSError:
        return None
    v = [int(x) for x in fields]
    idle = v[3] + (v[4] if len(v) > 4 else 0)  # idle + iowait
    return sum(v[:8]) - idle  # user nice system idle iowait irq softirq steal (guest is inside user)


def _proc_jiffies(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return 0
    fields = stat[stat.rindex(")") + 2:].split()
    return int(fields[11]) + int(fields[12])  # utime + stime (threads included)


class LoadMeter:
    """``start()`` before sampling, ``other_cores()`` at any point after: others' CPU use in cores."""

    def __init__(self, pids: Iterable[int] = ()) -> None:
        self.pids = [p for p in pids if p and p != os.getpid()]
        self._t0 = 0.0
        self._busy0: int | None = None
        self._own0 = 0.0

    def _own(self) -> float:
        """CPU time of this process and the workers, in clock ticks."""
        return time.process_time() * _TICK + sum(_proc_jiffies(p) for p in self.pids)

    def start(self) -> "LoadMeter":
        self._t0 = time.monotonic()
        self._busy0 = _busy_jiffies()
        self._own0 = self._own()
        return self

    def other_cores(self) -> float:
        busy1 = _busy_jiffies()
        elapsed = time.monotonic() - self._t0
        if self._busy0 is None or busy1 is None or elapsed < 5.0 / _TICK:
            return 0.0  # unknown, or too short to resolve in clock ticks
        others = (busy1 - self._busy0) - (self._own() - self._own0)
        return max(0.0, others / _TICK / elapsed)
