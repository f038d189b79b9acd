"""A model's samples on disk: ``DIR/<task>/<sample>.py``, one DIR per model.

Nothing is skipped silently: a folder that names no task, a file that cannot be read as a candidate
and a file that is not ``.py`` each come back as a ``Problem`` the caller reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kbench.core.library import Candidate, CandidateFileError, intent_of, read_source
from kbench.core.modes import Mode
from kbench.core.tasks import TASK
from kbench.store import mode_hash


@dataclass(frozen=True)
class Sample:
    """One file a model wrote for one task."""

    model: str
    candidate: Candidate  # task, name (the sample id), source, path; ``digest`` is its content hash

    @property
    def task(self) -> str:
        return self.candidate.task

    @property
    def name(self) -> str:
        return self.candidate.name


@dataclass(frozen=True)
class Problem:
    """Something in a samples folder that will not be graded, and why (one line)."""

    path: Path
    why: str

    def __str__(self) -> str:
        return self.why if str(self.path) in self.why else f"{self.path}: {self.why}"


@dataclass(frozen=True)
class Job:
    """One sample under one mode: the unit that is graded, stored and resumed."""

    sample: Sample
    mode: Mode

    @property
    def key(self) -> tuple[str, str, str, str, str, str]:
        """The store's full key (model, task, sample, digest, mode hash, distributions): resume compares it."""
        c = self.sample.candidate
        return (self.sample.model, c.task, c.name, c.digest, mode_hash(self.mode), ",".join(self.mode.dists))


def discover(folder: Path, model: str) -> tuple[list[Sample], list[Problem]]:
    """The samples in ``folder`` (as ``model``'s) and the problems found on the way, both sorted."""
    samples: list[Sample] = []
    problems: list[Problem] = []
    if not folder.is_dir():
        return [], [Problem(folder, "not a directory")]
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            continue  # editor and VCS files
        if not entry.is_dir():
            problems.append(Problem(entry, "not a task folder (samples go in DIR/<task>/<sample>.py)"))
            continue
        if entry.name not in TASK:
            problems.append(Problem(entry, f"unknown task {entry.name!r} (known: {', '.join(TASK)})"))
            continue
        for f in sorted(entry.iterdir()):
            if f.name.startswith(".") or f.name == "__pycache__":
                continue
            if f.suffix != ".py":
                problems.append(Problem(f, "not a .py file"))
                continue
            try:
                src = read_source(f)
            except CandidateFileError as e:
                problems.append(Problem(f, str(e)))
                continue
            samples.append(Sample(model, Candidate(entry.name, f.stem, intent_of(src), src, f, f"model:{model}")))
    if not samples and not problems:
        problems.append(Problem(folder, "no samples (expected DIR/<task>/<sample>.py)"))
    return samples, problems


def jobs_for(samples: list[Sample], modes: list[Mode]) -> list[Job]:
    """Every sample under every mode, grouped by task (so reference outputs are reused while they are warm)."""
    order = list(TASK)
    return [Job(s, m) for m in modes for s in sorted(samples, key=lambda s: (order.index(s.task), s.name))]
