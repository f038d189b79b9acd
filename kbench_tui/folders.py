"""Candidate folders for the explorer (no Textual): ``DIR/<task>/<name>.py``, what loads and what is
skipped, each skipped entry with the reason.

A folder given with ``--candidates`` (a model's samples, say) is candidate-controlled: its file names,
sizes and texts. One pass reads it, and whatever one entry raises (``MemoryError`` from a 7000-deep
expression in the docstring reader, an unreadable file, a folder that cannot be listed) is that entry's
skip line or, when only its docstring cannot be read, its intent says so; the explorer always opens.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from kbench.batch.samples import Problem, read_candidate
from kbench.core.library import Candidate
from kbench.core.tasks import TASK


def _listing(folder: Path) -> tuple[list[Path], str | None]:
    try:
        return sorted(folder.iterdir()), None
    except OSError as e:
        return [], f"{folder}: cannot list it ({e.strerror or type(e).__name__})"


def scan(folder: Path, origin: str) -> tuple[list[Candidate], list[str]]:
    """The candidates in ``folder`` (as ``origin``) and one line per skipped entry, never raising:
    ``DIR/L1_gleu/: not a task name (did you mean L1_gelu?)``..."""
    cands: list[Candidate] = []
    out: list[str] = []
    if not folder.is_dir():
        return cands, out
    entries, why = _listing(folder)
    if why:
        return cands, [why]
    for entry in entries:
        if entry.name.startswith(".") or entry.name == "__pycache__":
            continue
        if not entry.is_dir():
            out.append(f"{entry}: a file at the top level (expected {folder}/<task>/<name>.py)")
            continue
        if entry.name not in TASK:
            close = difflib.get_close_matches(entry.name, list(TASK), n=1, cutoff=0.5)
            hint = f"did you mean {close[0]}?" if close else f"tasks: {', '.join(TASK)}"
            out.append(f"{entry}/: not a task name ({hint})")
            continue
        files, why = _listing(entry)
        if why:
            out.append(why)
        for f in files:
            if f.name.startswith(".") or f.name == "__pycache__":
                continue
            if f.is_dir() or f.suffix != ".py":
                out.append(f"{f}: not a .py file")
                continue
            found = read_candidate(f, entry.name, origin)
            if isinstance(found, Problem):
                out.append(str(found))
            else:
                cands.append(found)
    return cands, out


def skipped(folder: Path) -> list[str]:
    """One line per skipped entry of ``folder`` (the lines ``scan`` gives)."""
    return scan(folder, str(folder))[1]
