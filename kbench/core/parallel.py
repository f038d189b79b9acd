"""The grading process's own threads. Two-thread helpers for its large array passes (input draws): numpy
releases the GIL inside the bit generators' raw draws, so splitting one large pass in two halves its wall time
on a 2-core machine. Small arrays stay on the calling thread (a hand-off costs ~20-50 us), and so do judging's
passes, whose blocks are too short to gain from a split. ``one_blas_thread``: its BLAS while it grades."""

from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterator, Sequence, TypeVar

from kbench.core.once import once

T = TypeVar("T")
R = TypeVar("R")

#: The cores this process may run on (its affinity mask, which a container or taskset narrows), at import.
USABLE_CPUS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
#: Threads one pass is split over (at most 2: the machines kbench targets have 2 cores, and the grader's
#: timing lane keeps one of them for the kernels while it times).
THREADS = max(1, min(2, USABLE_CPUS))


#: The cores this process could use when kbench was imported. A thread inherits the affinity of the thread that
#: starts it, and the grading thread runs off the timing core during an evaluation: threads and processes
#: started then are given these back (``every_core``), or a two-thread pass would run on one core.
START_CPUS: frozenset[int] = frozenset(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else frozenset()


@contextlib.contextmanager
def on_cpus(cpus: "set[int] | frozenset[int] | None") -> Iterator[None]:
    """Run the block on ``cpus`` (this thread only; as it was when None, empty or not settable)."""
    if not cpus or not hasattr(os, "sched_setaffinity"):
        yield
        return
    mine = os.sched_getaffinity(0)
    if mine == cpus:
        yield
        return
    try:
        os.sched_setaffinity(0, cpus)
    except OSError:
        yield
        return
    try:
        yield
    finally:
        try:
            os.sched_setaffinity(0, mine)
        except OSError:
            pass


_parked = threading.local()


def park(cpu: int) -> None:
    """Move the calling thread onto ``cpu`` until ``unpark()`` (a no-op while parked, or where it cannot move).

    Why: while the grader times, the grading thread shares the other core with the helper that draws and judges
    ahead (``kbench.grading.cores.Ahead``), and that core is the full one: on 12-04 a softmax pair needed ~16 ms
    of the helper's CPU and ~4 ms of the grading thread's there, for ~9 ms of kernels on the timing core, and the
    grading thread waited 1.4-1.8 ms for that core at each wake-up (its run-queue wait). Once a worker is stopped
    the timing core is idle until the next request, so the grading thread does its work between calls there."""
    if getattr(_parked, "home", None) is not None or not hasattr(os, "sched_setaffinity"):
        return
    home = os.sched_getaffinity(0)
    if home == {cpu}:
        return
    try:
        os.sched_setaffinity(0, {cpu})
    except OSError:
        return
    _parked.home = home


def unpark() -> None:
    """The calling thread back on the cores it had before ``park`` (nothing when it is not parked)."""
    home = getattr(_parked, "home", None)
    if home is None:
        return
    _parked.home = None
    try:
        os.sched_setaffinity(0, home)
    except OSError:  # its cores changed meanwhile: every core the process started with
        every_core()


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


_local = threading.local()


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Every pass of the block on the calling thread (the same parts, so the same values, one after another):
    for work kept off the timing core, which the pool's threads may use."""
    before = getattr(_local, "serial", False)
    _local.serial = True
    try:
        yield
    finally:
        _local.serial = before


def split(n: int, min_items: int) -> list[tuple[int, int]]:
    """[0, n) in THREADS contiguous parts when n >= 2 * min_items, else one part."""
    if THREADS < 2 or n < 2 * min_items:
        return [(0, n)]
    mid = n // 2
    return [(0, mid), (mid, n)]


def map_(fn: Callable[[T], R], parts: Sequence[T]) -> list[R]:
    """fn over parts: the first on this thread, the others on the pool (results in order)."""
    if len(parts) == 1 or getattr(_local, "serial", False):
        return [fn(p) for p in parts]
    futures = [executor().submit(fn, p) for p in parts[1:]]
    first = fn(parts[0])
    return [first] + [f.result() for f in futures]


@once
def _blas() -> "object | None":
    try:
        from threadpoolctl import ThreadpoolController

        return ThreadpoolController()
    except Exception:  # noqa: BLE001 - without it, BLAS keeps its own thread count
        return None


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """The grading process's BLAS on one thread while it grades (restored after). Its BLAS calls are small
    (judging's row dots, block by block), and an idle OpenBLAS thread spins for a while after every call:
    measured on 12-02, a second BLAS thread took 0.6 s of CPU in a 2.5 s softmax evaluation, preempting the
    judging thread (an output's judgement 10 ms of wall for 5 ms of CPU) and free to spin on the timing core."""
    ctl = _blas()
    if ctl is None:
        yield
        return
    with ctl.limit(limits=1, user_api="blas"):  # type: ignore[attr-defined]
        yield
