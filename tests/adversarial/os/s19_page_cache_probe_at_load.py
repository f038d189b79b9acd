"""S19 page-cache probe at load: S9, from the module's top level, after disarming the read drop.

Issue 16, class 3: S9's defence is a second Landlock layer a candidate worker stacks on itself. Stacked by
the worker's own Python after the candidate's module has run, it can be disarmed from that module: the top
level replaces ``confine.drop_reads`` and its prepared ruleset before the worker calls it. It also times
reads right there, at load. What must hold: no code of the candidate ever runs while it can open an
installation file, so neither probe can tell a cached page from one that is not.
"""

import os
import sys
import time

_LIB = os.path.dirname(os.__file__)
COLD = os.path.join(_LIB, "pydoc_data", "topics.py")  # evicted by the test just before grading
WARM = os.path.join(_LIB, "tabnanny.py")  # read by the test just before grading

for _name in ("kbench.sandbox.confine",):  # the drop the worker is about to call, made a no-op
    _mod = sys.modules.get(_name)
    if _mod is not None:
        _mod.drop_reads = lambda: False
        _mod._NO_READS = None


def _median_read_ns(path, offsets):
    fd = os.open(path, os.O_RDONLY)
    try:
        times = []
        for off in offsets:
            t = time.perf_counter_ns()
            os.pread(fd, 1, off)
            times.append(time.perf_counter_ns() - t)
    finally:
        os.close(fd)
    return sorted(times)[len(times) // 2]


def _probe(when, skew):
    try:  # 256 KiB apart, beyond readahead; the probe in forward reads pages the one at load did not
        cold = _median_read_ns(COLD, [(k << 18) + skew for k in range(3)])
        warm = _median_read_ns(WARM, [0, 4096, 0])
    except OSError as e:
        return f"no leak {when} ({type(e).__name__})"
    word = "LEAKED" if cold > 20_000 and cold > 8 * warm else "no leak"
    return f"{word} {when}: topics.py {cold // 1000} us, tabnanny.py {warm // 1000} us per page"


AT_LOAD = _probe("at load", 0)


def forward(x, params, alloc):
    raise RuntimeError(f"{AT_LOAD}; {_probe('in forward', 3 << 16)}")
