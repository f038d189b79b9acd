"""Grade jobs into the store: resume by the full key, write each result the moment it arrives.

The store is written by this process only (the runners send results back), one row per finished
sample in its own transaction (SQLite WAL): a run killed at any point loses at most the samples in
flight, and the next run grades exactly the jobs whose full key is not stored — never, as
KernelBench's resume does, every sample of a task once one of its samples is stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Protocol

from kbench.batch.pool import NotGraded
from kbench.batch.samples import Job
from kbench.core.results import Result
from kbench.store import Store


class Runner(Protocol):
    def run(self, jobs: list[Job]) -> Iterator[tuple[Job, Result]]: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Plan:
    todo: list[Job]
    already: int  # jobs whose full key is stored: skipped


def plan(jobs: Iterable[Job], store: Store) -> Plan:
    """Split ``jobs`` into what still needs grading and how many are stored already."""
    jobs = list(jobs)
    stored: dict[str, set] = {}
    todo = []
    for j in jobs:
        model = j.sample.model
        if model not in stored:
            stored[model] = store.keys(model)
        if j.key not in stored[model]:
            todo.append(j)
    return Plan(todo, len(jobs) - len(todo))


def grade(todo: list[Job], store: Store, runner: Runner,
          on_result: Callable[[Job, Result, bool], None] | None = None) -> int:
    """Run ``todo`` on ``runner``, storing each result as it arrives; returns how many were not stored
    (a result the store could not write, or a sample the machinery failed to grade: ``NotGraded``).

    ``on_result(job, result, stored)`` is called after each write (progress bars, logs)."""
    unstored = 0
    for job, result in runner.run(todo):
        c = job.sample.candidate
        if isinstance(result, NotGraded):  # the machinery failed, not the sample: no verdict to keep
            ok = False
        else:
            ok = store.put(c.digest, c.task, c.name, c.origin, result, mode=job.mode, model=job.sample.model,
                           sample=c.name)
        unstored += not ok
        if on_result is not None:
            on_result(job, result, ok)
    return unstored
