"""Two-thread helpers for kbench's own array work (input draws, judging): numpy releases the GIL inside
ufuncs and the bit generators' raw draws, so splitting one large pass in two halves its wall time on a
2-core machine. Small arrays stay on the calling thread (a hand-off costs ~20-50 us).

``share`` is the hand-off to use when the other core may be busy (the lecture's OpenBLAS threads spin on it
for a while after every BLAS call; other processes share it): the work is cut into numbered pieces that
either thread takes one at a time, and the calling thread never waits for a helper that has not started.
A fixed split in halves (``split`` + ``map_``) waits for the slower half, which under that contention made
a two-thread draw 2-4x slower than one thread."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence, TypeVar

from kbench.core.once import once

T = TypeVar("T")
R = TypeVar("R")

_CPUS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
#: Threads one pass is split over (at most 2: the machines kbench targets have 2 cores, and the grader's
#: timing lane keeps one of them for the kernels while it times).
THREADS = max(1, min(2, _CPUS))


#: The cores this process could use when kbench was imported. A thread inherits the affinity of the thread that
#: starts it, and the grading thread runs off the timing core during an evaluation: threads and processes
#: started then are given these back (``every_core``), or a two-thread pass would run on one core.
START_CPUS: frozenset[int] = frozenset(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else frozenset()


def every_core() -> None:
    """Give the calling thread every core the process started with."""
    if START_CPUS:
        try:
            os.sched_setaffinity(0, START_CPUS)
        except OSError:
            pass


@once
def executor() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(THREADS, thread_name_prefix="kbench-pass", initializer=every_core)


def split(n: int, min_items: int) -> list[tuple[int, int]]:
    """[0, n) in THREADS contiguous parts when n >= 2 * min_items, else one part."""
    if THREADS < 2 or n < 2 * min_items:
        return [(0, n)]
    mid = n // 2
    return [(0, mid), (mid, n)]


def map_(fn: Callable[[T], R], parts: Sequence[T]) -> list[R]:
    """fn over parts: the first on this thread, the others on the pool (results in order)."""
    if len(parts) == 1:
        return [fn(parts[0])]
    futures = [executor().submit(fn, p) for p in parts[1:]]
    first = fn(parts[0])
    return [first] + [f.result() for f in futures]


def share(fn: Callable[[int], R], n: int) -> list[R]:
    """``[fn(0), ..., fn(n - 1)]``, the pieces taken in order by this thread and, when there is one, a helper
    thread. Whichever thread runs a piece, its result is the same (``fn`` must depend on its index only), so
    the outcome never depends on scheduling. The calling thread takes pieces until none is left, then waits
    only for a piece the helper is in the middle of; a helper that never got a core is cancelled unstarted."""
    out: list[Any] = [None] * n
    if n <= 1 or THREADS < 2:
        for i in range(n):
            out[i] = fn(i)
        return out
    lock = threading.Lock()
    nxt = [0]

    def take() -> int:
        with lock:
            i = nxt[0]
            nxt[0] = i + 1
            return i

    def run() -> None:
        while (i := take()) < n:
            try:
                out[i] = fn(i)
            except BaseException:
                with lock:
                    nxt[0] = n  # the other thread stops at its next piece
                raise

    helper = executor().submit(run)
    run()
    if not helper.cancel():
        helper.result()  # the helper's piece in flight (or its exception)
    return out
