"""Where the explorer reads and writes files (no Textual here)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import platformdirs

NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


def data_dir() -> Path:
    """``$KBENCH_DATA_DIR``, else the platform's user data directory for kbench."""
    return Path(os.environ.get("KBENCH_DATA_DIR") or platformdirs.user_data_dir("kbench"))


def user_candidates_dir() -> Path:
    """User candidates live in ``<data dir>/candidates/<task>/<name>.py``."""
    return data_dir() / "candidates"


def export_dir() -> Path:
    """``x`` writes here: ``$KBENCH_EXPORT_DIR``, else the current directory."""
    return Path(os.environ.get("KBENCH_EXPORT_DIR") or Path.cwd())


def free_name(task_dir: Path, stem: str = "my_kernel") -> str:
    """``my_kernel_1``, ``my_kernel_2``... whichever has no file yet."""
    n = 1
    while (task_dir / f"{stem}_{n}.py").exists():
        n += 1
    return f"{stem}_{n}"
