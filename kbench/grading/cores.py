"""Which core each piece of the grader's work runs on while it times: the timing core holds the two timed workers
and, while both are stopped, the grading thread (it reads each output there and stays for its work between calls:
``parallel.park``); the other cores hold the grading thread while a worker runs, and the work done ahead
(``Ahead``): the next pair's input drawn and the last pair's outputs judged while a pair runs."""

from __future__ import annotations

import contextlib
import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, ContextManager, TypeVar

import numpy as np

from kbench.core import parallel

R = TypeVar("R")


def on_cpu(cpu: int | None) -> ContextManager[None]:
    """Run the block on ``cpu`` (this thread only)."""
    return parallel.on_cpus(None if cpu is None else {cpu})


def off_cpu(cpu: int | None) -> ContextManager[None]:
    """Run the block on every core of this thread's but ``cpu`` (the timing core: the grading thread then
    never shares it with a worker — a worker woken by a signal does not preempt it there, and it does not
    wait there for a stopped worker to take its signal)."""
    if cpu is None or not hasattr(os, "sched_getaffinity"):
        return contextlib.nullcontext()
    return parallel.on_cpus(os.sched_getaffinity(0) - {cpu})


def warm_on(cpu: int | None, arrays: dict[str, np.ndarray]) -> None:
    """Read ``arrays`` once from the timing core (both workers are stopped between pairs, so it is free): a
    timed call then finds its inputs as hot as a copy made just before an in-process call would be, instead of
    in the cache of the core that drew them."""
    if cpu is None or not hasattr(os, "sched_setaffinity"):
        return
    with on_cpu(cpu):
        for a in arrays.values():
            np.add.reduce(a, axis=None)


class Ahead:
    """One helper thread, on every core but the timing core, that works while a pair's calls run: what would
    otherwise be done between pairs with the timing core idle (12-03, issue 18: draws and judgements were a
    quarter of a hardened evaluation's wall time). Its passes run one after another on its own thread
    (``parallel.one_thread``: the pool's threads may take the timing core). Jobs run in the order submitted, so
    a job that waits for one also waits for every job before it. (``every_core``, for the untimed trials: a thread
    per core, the timing core's included, and jobs side by side, still recorded in submission order by
    ``settle_in_order``.)

    What it costs the timed calls was measured side by side on this machine (a judging-like pass or a memory
    stream on the other core: a 2 ms softmax and a 7.7 ms GEMM 0-3 % slower, within the idle runs' own scatter);
    the calls of a pair come in random order, so whatever is left lands on both arms alike."""

    def __init__(self, timing_cpu: int, every_core: bool = False) -> None:
        self.cpus = _every_core() if every_core else _other_cores(timing_cpu)
        threads = max(1, min(len(self.cpus), parallel.THREADS)) if every_core else 1
        # its threads start on their own cores, whatever the submitting thread's (parked on the timing core, maybe)
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="kbench-ahead", initializer=self._home)

    def _home(self) -> None:
        try:
            os.sched_setaffinity(0, self.cpus)
        except OSError:
            pass

    def submit(self, fn: Callable[..., R], *args: Any) -> "Future[R]":
        return self._pool.submit(self._run, fn, *args)

    def _run(self, fn: Callable[..., R], *args: Any) -> R:
        # on its own cores since it started (``_home``); its passes stay on its thread (the pool's threads may be
        # busy with the trials' facts, which a judgement waits for: a pass split onto them could wait behind them)
        with parallel.one_thread():
            return fn(*args)

    def close(self) -> None:
        """Jobs not started are dropped; one running finishes on its own (nothing waits for it)."""
        self._pool.shutdown(wait=False, cancel_futures=True)


def settle_in_order(pending: "list[tuple[Future[R], Any]]", block: bool, record: Callable[[R, Any], None]) -> float:
    """Record the jobs done so far, in the order they were submitted (every one, waiting, with ``block``): each
    ``(future, tag)`` is popped and ``record(result, tag)`` called. Returns the seconds spent waiting for results
    (the wait the run paid for the work done ahead)."""
    waited = 0.0
    while pending and (block or pending[0][0].done()):
        job, tag = pending.pop(0)
        t0 = time.perf_counter()
        result = job.result()
        waited += time.perf_counter() - t0
        record(result, tag)
    return waited


def _every_core() -> set[int]:
    return set(parallel.START_CPUS or os.sched_getaffinity(0))


def _other_cores(timing_cpu: int) -> set[int]:
    return _every_core() - {timing_cpu}


def available(timing_cpu: int | None) -> bool:
    """Work can go ahead: a timing core, and another core to do it on."""
    return timing_cpu is not None and hasattr(os, "sched_setaffinity") and bool(_other_cores(timing_cpu))
