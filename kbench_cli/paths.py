"""Paths the user gives (arguments, settings): looked at once, through here, never raising.

``Path.is_dir()`` and ``exists()`` raise for every errno but a few (a name component over 255 bytes,
ENAMETOOLONG; a permission denied on the way, EACCES): a user's typo would end in a traceback. These
helpers turn every OSError into a one-line reason instead; the caller says it and exits with code 2.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


_MISSING = "no such file or directory"


def _stat(path: str | Path) -> tuple[os.stat_result | None, str | None]:
    """(``path``'s stat, None) or (None, why it cannot be looked at, in plain English)."""
    try:
        return os.stat(path), None
    except FileNotFoundError:
        return None, _MISSING
    except OSError as e:
        return None, e.strerror or type(e).__name__
    except ValueError:  # an embedded NUL (from a settings file: the command line cannot hold one)
        return None, "not a valid path"


def dir_problem(path: str | Path, label: str) -> str | None:
    """None when ``path`` is a directory; else one line, ``<label>: <why not>``."""
    st, why = _stat(path)
    if why == _MISSING or (st is not None and not stat.S_ISDIR(st.st_mode)):
        why = "not a directory"
    return None if why is None else f"{label}: {why}"


def exists_problem(path: str | Path, label: str) -> str | None:
    """None when ``path`` exists; else one line, ``<label>: <why it cannot be used>``."""
    why = _stat(path)[1]
    return None if why is None else f"{label}: {why}"


def is_dir(path: str | Path) -> bool:
    """``path`` is a directory (False for anything that cannot be looked at)."""
    return dir_problem(path, "") is None
