"""A model's samples on disk: ``DIR/<task>/<sample>.py``, one DIR per model.

Nothing is skipped silently: a folder that names no task, a file that cannot be read as a candidate
and a file that is not ``.py`` each come back as a ``Problem`` the caller reports.

Reading a folder never fails as a whole: a sample's file is candidate-controlled (its name, its size,
its text), so whatever reading or parsing one file raises (``MemoryError`` from a 7000-deep expression
in ``ast.parse``, ``RecursionError``, an unreadable entry) is that file's problem or, when only its
docstring cannot be read, an intent saying so; every other sample is still found. Names are kept as
they are on disk (they must match the file); the faces escape them when they show them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kbench.core.library import Candidate, CandidateFileError, intent_of, read_source
from kbench.core.modes import Mode
from kbench.core.tasks import TASK
from kbench.store import mode_hash, stored_text

#: The intent of a sample whose docstring could not be read (the grader still grades it).
UNREADABLE_INTENT = "(no intent: the docstring could not be read: {why})"


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
        # model and sample as the store keeps them (escaped), so a name with control characters resumes too
        return (stored_text(self.sample.model), c.task, stored_text(c.name), c.digest, mode_hash(self.mode),
                ",".join(self.mode.dists))


def intent_or_note(src: str) -> str:
    """``intent_of(src)``, or a note when reading the docstring raised (the parser on a hostile source)."""
    try:
        return intent_of(src)
    except Exception as e:  # noqa: BLE001 - MemoryError, RecursionError...: the sample is still graded
        return UNREADABLE_INTENT.format(why=type(e).__name__)


def read_candidate(path: Path, task: str, origin: str) -> Candidate | Problem:
    """One candidate file as a Candidate, or the Problem that keeps it from being one (never raises). Found in
    a folder, it must really lie in that folder (``path``'s grandparent: ``FOLDER/<task>/<name>.py``)."""
    try:
        src = read_source(path, within=path.parent.parent)
    except CandidateFileError as e:
        return Problem(path, str(e))
    except Exception as e:  # noqa: BLE001 - whatever one file does, the folder's other files are read
        return Problem(path, f"cannot read it ({type(e).__name__})")
    return Candidate(task, path.stem, intent_or_note(src), src, path, origin)


def _entries(folder: Path) -> tuple[list[Path], str | None]:
    try:
        return sorted(folder.iterdir()), None
    except OSError as e:
        return [], f"cannot list it ({e.strerror or type(e).__name__})"


def discover(folder: Path, model: str) -> tuple[list[Sample], list[Problem]]:
    """The samples in ``folder`` (as ``model``'s) and the problems found on the way, both sorted."""
    samples: list[Sample] = []
    problems: list[Problem] = []
    if not folder.is_dir():
        return [], [Problem(folder, "not a directory")]
    entries, why = _entries(folder)
    if why:
        return [], [Problem(folder, why)]
    for entry in entries:
        if entry.name.startswith("."):
            continue  # editor and VCS files
        if not entry.is_dir():
            problems.append(Problem(entry, "not a task folder (samples go in DIR/<task>/<sample>.py)"))
            continue
        if entry.name not in TASK:
            problems.append(Problem(entry, f"unknown task {entry.name!r} (known: {', '.join(TASK)})"))
            continue
        files, why = _entries(entry)
        if why:
            problems.append(Problem(entry, why))
        for f in files:
            if f.name.startswith(".") or f.name == "__pycache__":
                continue
            if f.suffix != ".py":
                problems.append(Problem(f, "not a .py file"))
                continue
            found = read_candidate(f, entry.name, f"model:{model}")
            if isinstance(found, Problem):
                problems.append(found)
            else:
                samples.append(Sample(model, found))
    if not samples and not problems:
        problems.append(Problem(folder, "no samples (expected DIR/<task>/<sample>.py)"))
    return samples, problems


def jobs_for(samples: list[Sample], modes: list[Mode]) -> list[Job]:
    """Every sample under every mode, grouped by task (so reference outputs are reused while they are warm)."""
    order = list(TASK)
    return [Job(s, m) for m in modes for s in sorted(samples, key=lambda s: (order.index(s.task), s.name))]
