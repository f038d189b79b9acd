"""The embedded local pool: N grading processes on this machine, timing in its one lane.

Each pool process is a full grading process (its own ``Grader``: secret seed, reference worker) that
runs ``evaluate()``, so every sample still gets its own confined sandbox worker. Correctness work holds
the machine's ``TimingLane`` shared and runs unpinned on any core; the timing step takes the lane
exclusive and is pinned to the lane's core, so it never runs beside other grading work.

The processes are started with ``spawn`` (not ``fork``: the caller may run threads, e.g. a progress
bar) by a ``ProcessPoolExecutor``, whose workers are not daemonic and so may start the sandbox's fork
server. They die with the caller (``PR_SET_PDEATHSIG``), so a killed ``kbench grade`` leaves no
orphan holding the lane. If a pool process dies, the samples it had in flight are retried once in a
fresh pool; a sample whose grading process dies twice is reported as not graded (and not stored).
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import multiprocessing
import signal
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from kbench.batch.samples import Job
from kbench.core.results import Result
from kbench.core.status import failure_text
from kbench.grading.lanes import TimingLane
from kbench.sandbox.server import no_main_module

#: A sample in flight when its grading process died is tried this many times in all.
ATTEMPTS = 2

_lane: TimingLane | None = None
_grader = None


def _die_with_parent() -> None:
    try:
        from kbench.sandbox.layers import die_with_parent

        die_with_parent()
    except Exception:  # noqa: BLE001 - not Linux/glibc: the pool's own shutdown still ends us
        pass


def init_grading_process(lock_dir: str) -> None:
    """Pool-process start-up: one Grader and the lane for this machine; correctness unpinned."""
    global _lane, _grader
    from kbench.grading.truth import Grader

    _die_with_parent()
    # A process started by `kbench grade --tasks DIR` (the local pool spawns fresh interpreters, Dask workers
    # start elsewhere): the task folders its parent loaded, from the environment.
    from kbench.usertasks import activate_from_env

    activate_from_env()
    if threading.current_thread() is threading.main_thread():  # a pool process (a Dask worker: not ours)
        # Ctrl-C is the caller's to handle (it stops submitting and shuts the pool down); a pool process
        # dying of it mid-request would leave its sandbox fork server a torn message to complain about
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    _lane = TimingLane(lock_dir)
    _grader = Grader()
    _grader.cpu = None  # correctness may use every core; the lane pins timing to its own


def grade_here(job: Job) -> Result:
    """Grade one job in this process (a pool process or a Dask worker): correctness shared, timing alone."""
    from kbench.grading.pipeline import evaluate

    assert _lane is not None and _grader is not None, "init_grading_process() first"
    c = job.sample.candidate
    with _lane.correctness():
        return evaluate(c.task, c.src, job.mode, c.name, grader=_grader, timing_lane=_lane.timing)


@dataclass
class NotGraded(Result):
    """The grading machinery failed on a sample (its grading process kept dying, a grading bug, a lost
    cluster): reported, never stored as the sample's verdict, so the next run tries it again."""


def died(job: Job, why: str) -> NotGraded:
    return NotGraded(job.sample.task, job.sample.name, job.mode.name, job.mode.dists, "runtime_error", why)


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """SIGINT blocked in this thread while grading processes are spawned: they inherit the blocked mask, so a
    Ctrl-C reaching the whole process group never interrupts one half-started (its KeyboardInterrupt printed
    a traceback from multiprocessing's start-up code); this process gets its Ctrl-C when the block ends, and
    ends them (``close``)."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


class LocalPool:
    """``workers`` grading processes on this machine sharing the timing lane in ``lock_dir``."""

    def __init__(self, workers: int, lock_dir: Path) -> None:
        if workers < 1:
            raise ValueError("a pool needs at least one worker")
        self.workers, self.lock_dir = workers, Path(lock_dir)
        self._pool: cf.ProcessPoolExecutor | None = None
        self.restarts = 0  # fresh pools started because a grading process died

    def _start(self) -> cf.ProcessPoolExecutor:
        self._pool = cf.ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                            initializer=init_grading_process, initargs=(str(self.lock_dir),))
        return self._pool

    def run(self, jobs: list[Job]) -> Iterator[tuple[Job, Result]]:
        """Grade ``jobs``; yield each (job, result) as soon as it finishes, in completion order."""
        attempts = {id(j): 0 for j in jobs}
        pending = list(jobs)
        while pending:
            pool = self._start()
            with no_main_module(), interrupts_held():  # pool processes are spawned on submit
                futures = {pool.submit(grade_here, j): j for j in pending}
            pending = []
            broken = False
            for fut in cf.as_completed(futures):
                job = futures[fut]
                try:
                    yield job, fut.result()
                    continue
                except cf.process.BrokenProcessPool:
                    broken = True
                except Exception as e:  # noqa: BLE001 - a grading bug must not end the run; it is recorded
                    yield job, died(job, f"grading failed: {failure_text(e)}")
                    continue
                attempts[id(job)] += 1
                if attempts[id(job)] >= ATTEMPTS:
                    yield job, died(job, f"its grading process died {ATTEMPTS} times")
                else:
                    pending.append(job)
            pool.shutdown(wait=not broken, cancel_futures=True)
            self._pool = None
            self.restarts += bool(pending)

    def close(self) -> None:
        """End the pool. With a pool still open the run was cut short (Ctrl-C, an error): what is in flight
        would be thrown away, so its grading processes are ended now, not waited for (a hung sample held a
        Ctrl-C for its whole timeout, and a second Ctrl-C broke the interpreter's own wait for them). Their
        sandbox workers die with them."""
        if self._pool is None:
            return
        processes = list((getattr(self._pool, "_processes", None) or {}).values())
        for p in processes:
            with contextlib.suppress(Exception):
                p.terminate()
        self._pool.shutdown(wait=False, cancel_futures=True)
        for p in processes:
            with contextlib.suppress(Exception):
                p.join(5.0)
        self._pool = None
