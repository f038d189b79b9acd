"""The candidate library: ``kbench/candidates/<task>/<name>.py`` files, plus any user folders.

A candidate's intent (what the "LLM" tried) is the first line of its module docstring. Files are read
as text and parsed, never executed here: a candidate that does not even parse still has a name, a
source and an intent ("(no docstring)").
"""

from __future__ import annotations

import ast
import hashlib
import importlib.resources
import os
from dataclasses import dataclass
from pathlib import Path

from kbench.core.tasks import TASK

#: Where the shipped library lives: package data (``kbench/candidates``), in a checkout and in a wheel alike.
LIBRARY_DIR = Path(os.environ.get("KBENCH_LIBRARY") or str(importlib.resources.files("kbench") / "candidates"))

MAX_SOURCE_BYTES = 1_000_000


@dataclass(frozen=True)
class Candidate:
    task: str
    name: str
    intent: str
    src: str
    path: Path | None = None
    origin: str = "library"  # "library", "user" or a folder given with --candidates

    @property
    def key(self) -> str:
        return f"{self.task}/{self.name}"

    @property
    def digest(self) -> str:
        """Content hash: stored results are keyed on it, so an edited file is evaluated afresh."""
        return hashlib.sha256(self.src.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def intent_of(src: str) -> str:
    """First line of the module docstring; found without executing anything."""
    try:
        doc = ast.get_docstring(ast.parse(src))
    except (SyntaxError, ValueError):
        doc = None
        stripped = src.lstrip()
        for quote in ('"""', "'''"):
            if stripped.startswith(quote):  # a broken file may still open with a readable docstring
                doc = stripped[3:].split(quote, 1)[0]
    return doc.strip().splitlines()[0].strip() if doc and doc.strip() else "(no docstring)"


class CandidateFileError(ValueError):
    """A candidate file that cannot even be read as text (the message is one line)."""


def read_source(path: Path) -> str:
    """Read a candidate file as text with a clear one-line error for what cannot be read."""
    try:
        size = path.stat().st_size
    except OSError as e:
        raise CandidateFileError(f"cannot read {path}: {e.strerror or e}") from None
    if path.is_dir():
        raise CandidateFileError(f"{path} is a directory, not a candidate file")
    if size > MAX_SOURCE_BYTES:
        raise CandidateFileError(f"{path} is {size / 1e6:.1f} MB; candidate files are limited to "
                                 f"{MAX_SOURCE_BYTES / 1e6:.0f} MB")
    try:
        data = path.read_bytes()
    except OSError as e:
        raise CandidateFileError(f"cannot read {path}: {e.strerror or e}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CandidateFileError(f"{path} is not UTF-8 text (byte {e.start}: {data[e.start:e.start + 1]!r})") from None


def load_folder(folder: Path, origin: str) -> list[Candidate]:
    """Candidates in ``folder/<task>/*.py``; files that cannot be read are skipped with no crash."""
    out: list[Candidate] = []
    if not folder.is_dir():
        return out
    for task_dir in sorted(p for p in folder.iterdir() if p.is_dir() and p.name in TASK):
        for f in sorted(task_dir.glob("*.py")):
            try:
                src = read_source(f)
            except CandidateFileError:
                continue
            out.append(Candidate(task_dir.name, f.stem, intent_of(src), src, f, origin))
    return out


def _task_order(c: Candidate) -> tuple[int, str]:
    names = list(TASK)
    return (names.index(c.task), c.name)


LIBRARY: tuple[Candidate, ...] = tuple(sorted(load_folder(LIBRARY_DIR, "library"), key=_task_order))


def library_for(task: str) -> list[Candidate]:
    return [c for c in LIBRARY if c.task == task]


def find(task: str, name: str) -> Candidate:
    for c in LIBRARY:
        if c.task == task and c.name == name:
            return c
    raise KeyError(f"no library candidate {task}/{name}")
