"""Scheduling evaluations: one at a time, user requests first, then toggle fills, then the `a` batch.

Headless: the screen owns a ``Scheduler`` on the UI thread, starts a thread worker for each ``Run`` it
hands out, and reports back with ``finished``. A run is superseded by setting its cancel event; the
engine stops at its next step and every late event of a cancelled run is dropped by id.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterable, Literal

from kbench.core.library import Candidate
from kbench.core.modes import Mode

from .model import cid

Kind = Literal["single", "fill", "batch"]


@dataclass(frozen=True)
class Job:
    cand: Candidate
    mode_name: str  # "naive" | "hardened"
    kind: Kind
    mode: Mode | None = None  # fixed for "single"; fill/batch jobs resolve theirs when they start


@dataclass
class Run:
    id: int
    job: Job
    mode: Mode
    cancel: threading.Event = field(default_factory=threading.Event)
    by_user: bool = False  # Esc or quit: the result, if one arrives anyway, is dropped, not stored


    @property
    def stale(self) -> bool:
        return self.cancel.is_set()


class Scheduler:
    def __init__(self) -> None:
        self.queues: dict[Kind, deque[Job]] = {"single": deque(), "fill": deque(), "batch": deque()}
        self.current: Run | None = None
        self.batch_total = 0
        self.batch_done = 0
        self._ids = itertools.count(1)

    # -- state ------------------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return self.current is not None or any(self.queues.values())

    @property
    def batch_active(self) -> bool:
        return bool(self.queues["batch"]) or (self.current is not None and self.current.job.kind == "batch"
                                              and not self.current.stale)

    @property
    def pending(self) -> int:
        return sum(len(q) for q in self.queues.values())

    def is_current(self, run_id: int) -> bool:
        return self.current is not None and self.current.id == run_id and not self.current.stale

    # -- requests ---------------------------------------------------------------------------------

    def submit(self, jobs: Iterable[Job]) -> int:
        """Queue jobs; a single request supersedes the running single evaluation and pre-empts background
        work (which is re-queued). Returns how many were queued."""
        jobs = list(jobs)
        if not jobs:
            return 0
        kind = jobs[0].kind
        q = self.queues[kind]
        if kind == "single":
            q.clear()
            cur = self.current
            if cur is not None and not cur.stale:
                cur.cancel.set()
                if cur.job.kind != "single":
                    self.queues[cur.job.kind].appendleft(cur.job)
        queued = {(cid(j.cand), j.mode_name) for j in q}
        n = 0
        for j in jobs:
            if kind != "single" and (cid(j.cand), j.mode_name) in queued:
                continue
            q.append(j)
            n += 1
        if kind == "batch":
            self.batch_total += n
        return n

    def cancel_all(self) -> None:
        for q in self.queues.values():
            q.clear()
        if self.current is not None:
            self.current.by_user = True
            self.current.cancel.set()  # the engine kills the run's workers at once
        self.batch_total = self.batch_done = 0

    # -- dispatch ---------------------------------------------------------------------------------

    def next(self, resolve: Callable[[Job], Mode | None]) -> Run | None:
        """The next run to start, if nothing is running. ``resolve`` gives a background job's mode, or None
        when its result is known by now (it is skipped)."""
        if self.current is not None:
            return None
        for kind in ("single", "fill", "batch"):
            q = self.queues[kind]
            while q:
                job = q.popleft()
                mode = job.mode if job.mode is not None else resolve(job)
                if mode is None:
                    if kind == "batch":
                        self.batch_done += 1
                    continue
                self.current = Run(next(self._ids), job, mode)
                return self.current
        if not self.queues["batch"]:
            self.batch_total = self.batch_done = 0
        return None

    def finished(self, run_id: int) -> Run | None:
        """The run with this id ended; returns it (None when it is not the current one)."""
        cur = self.current
        if cur is None or cur.id != run_id:
            return None
        self.current = None
        if cur.job.kind == "batch" and not cur.stale:
            self.batch_done += 1
        return cur
