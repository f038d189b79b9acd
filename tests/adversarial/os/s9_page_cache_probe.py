"""S9 page-cache probe by timing: tell which files other processes have read, without mincore or RWF_NOWAIT.

Issue 16, class 3 (page-cache probes): seccomp refuses ``mincore``, ``preadv2(RWF_NOWAIT)``, ``cachestat``
and ``fadvise``, but a one-byte ``pread`` from a page that is not in the page cache waits for the disk
(~100 us here) and one from a cached page does not (~1 us). The files the worker can read (the installation)
are the same pages every other process reads, so the timing says which files, and which parts of them,
someone else touched lately: a side channel on the grading process and the other workers, and a covert
channel between consecutive workers (one reads chosen pages, the next times them). The test evicts one
stdlib file and reads another just before grading; the kernel reports ``LEAKED`` when it can tell which.
What must hold: a worker cannot tell whether a page it did not read itself is cached.
"""

import os
import time

_LIB = os.path.dirname(os.__file__)
COLD = os.path.join(_LIB, "pydoc_data", "topics.py")  # evicted by the test just before grading
WARM = os.path.join(_LIB, "tabnanny.py")  # read by the test just before grading


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


def forward(x, params, alloc):
    cold = _median_read_ns(COLD, [k << 18 for k in range(3)])  # 256 KiB apart: beyond readahead
    warm = _median_read_ns(WARM, [0, 4096, 0])
    word = "LEAKED" if cold > 20_000 and cold > 8 * warm else "no leak"
    raise RuntimeError(f"{word}: topics.py {cold // 1000} us, tabnanny.py {warm // 1000} us per page")
