"""S10 machine activity: the load, the process count and the other core's idle time, from inside the sandbox.

Issue 16, class 3 (visibility): the worker's own pid namespace and ``/proc`` (``subset=pid``) hide every
other process and ``/proc/stat``/``/proc/loadavg``, but ``sysinfo(2)`` (allowed) returns the machine's load
averages and its number of processes, and the filesystem view binds all of ``/sys/devices/system/cpu``,
where ``cpu<N>/cpuidle/state*/time`` counts each core's idle microseconds: how busy the *other* core is,
moment by moment (whether the grading process is judging, whether another worker is timing). The host's
name also comes through (a UTS namespace starts as a copy). The kernel reports ``LEAKED`` with what it saw.
What must hold: nothing about other processes or other cores is visible to a worker.
"""

import os
import time


def _idle_us(cpu):
    total, seen = 0, False
    base = f"/sys/devices/system/cpu/cpu{cpu}/cpuidle"
    try:
        states = os.listdir(base)
    except OSError:
        return None
    for s in states:
        try:
            with open(f"{base}/{s}/time") as f:
                total += int(f.read())
                seen = True
        except (OSError, ValueError):
            pass
    return total if seen else None


def forward(x, params, alloc):
    seen = []
    info = np.zeros(16, np.int64)
    rc, _ = _raw(99, info.ctypes.data)  # sysinfo
    if rc == 0:
        procs = int(info.view(np.uint16)[40])
        if procs > 1:
            seen.append(f"{procs} processes, load {info[1] / 65536:.2f}")
    mine = os.sched_getaffinity(0)
    others = [c for c in range(os.cpu_count() or 1) if c not in mine]
    before = {c: _idle_us(c) for c in others}
    time.sleep(0.02)
    for c in others:
        after = _idle_us(c)
        if after is not None and before[c] is not None:
            seen.append(f"cpu{c} idle {after - before[c]} us in 20 ms")
    seen.append(f"host {os.uname().nodename}")
    word = "LEAKED" if len(seen) > 1 else "no leak"
    raise RuntimeError(f"{word}: " + "; ".join(seen))
