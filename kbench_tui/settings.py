"""The explorer's remembered choices (the theme) and the task folders to load, as a small JSON file in the
data directory.

No Textual here. A missing file means defaults. A file that is there but cannot be read as a JSON object
also means defaults, with one warning (``read``) so a typo does not silently drop the task folders it
names; and it is never overwritten (``save`` refuses), so a hand-edited file is not lost to a theme change.
"""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

from . import paths


#: Reading the file failed because there is no file to read (or no data folder to hold one).
_NO_FILE = (errno.ENOENT, errno.ENOTDIR, errno.ENAMETOOLONG)


def settings_path() -> Path:
    return paths.data_dir() / "settings.json"


def _read() -> tuple[dict[str, Any], str | None]:
    path = settings_path()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        if e.errno in _NO_FILE:  # defaults, nothing to say (a data folder that cannot be used is the store's to say)
            return {}, None
        return {}, f"cannot read {path}: {e.strerror or e}; using defaults"
    except UnicodeDecodeError as e:
        return {}, f"cannot read {path}: {e}; using defaults"
    try:
        data = json.loads(text)
    except ValueError as e:  # JSONDecodeError, and RecursionError's cousins from absurd nesting
        where = f" (line {e.lineno}, column {e.colno})" if isinstance(e, json.JSONDecodeError) else ""
        return {}, f"{path} is not valid JSON{where}; using defaults, and leaving it as it is"
    except RecursionError:
        return {}, f"{path} is nested too deeply to read; using defaults, and leaving it as it is"
    if not isinstance(data, dict):
        return {}, f"{path} holds a JSON {type(data).__name__}, not an object; using defaults"
    return data, None


def read() -> tuple[dict[str, Any], str | None]:
    """(the saved settings or {}, why the file that is there cannot be used or None): one read for both."""
    return _read()


def load() -> dict[str, Any]:
    """The saved settings, or {} (see ``read`` for why, when the file is there)."""
    return _read()[0]


def save(**values: Any) -> bool:
    """Merge ``values`` into the file; False when it could not be written, or when the file there could not
    be read (writing would replace what someone wrote by hand)."""
    data, why = _read()
    if why is not None:
        return False
    data.update(values)
    path = settings_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2), encoding="utf-8")
        tmp.replace(path)
    except OSError:
        return False
    return True
