"""The explorer's remembered choices (the theme), as a small JSON file in the data directory.

No Textual here. A missing or unreadable file means defaults; a failed write is not an error worth
interrupting anyone for (the choice simply is not remembered).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from . import paths


def settings_path() -> Path:
    return paths.data_dir() / "settings.json"


def load() -> dict[str, Any]:
    try:
        data = json.loads(settings_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save(**values: Any) -> bool:
    """Merge ``values`` into the file; False when it could not be written."""
    data = load()
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
