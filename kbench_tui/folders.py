"""What a ``--candidates DIR`` folder holds that kbench will not load, each with the reason (no Textual).

``kbench.core.library.load_folder`` loads ``DIR/<task>/<name>.py`` and passes over the rest silently;
a person who pointed kbench at a folder wants to know what was left out and why.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from kbench.core.library import CandidateFileError, read_source
from kbench.core.tasks import TASK


def skipped(folder: Path) -> list[str]:
    """One line per skipped entry: ``DIR/L1_gleu/: not a task (did you mean L1_gelu?)``..."""
    out: list[str] = []
    try:
        entries = sorted(folder.iterdir())
    except OSError as e:
        return [f"{folder}: cannot list it ({e.strerror or e})"]
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
        for f in sorted(entry.iterdir()):
            if f.name.startswith(".") or f.name == "__pycache__":
                continue
            if f.is_dir() or f.suffix != ".py":
                out.append(f"{f}: not a .py file")
                continue
            try:
                read_source(f)
            except CandidateFileError as e:
                out.append(f"{f}: {e}")
    return out
