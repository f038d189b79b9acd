"""Attack files as graded. An attack's table may name shared parts (``_*.py`` files of its folder); the test
appends them to the attack, so what is graded is still one candidate source."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence


def graded_source(folder: Path, file: str, parts: Sequence[str] = ()) -> str:
    """The attack file, then each shared part it names, as one source."""
    return "\n\n".join((folder / f).read_text(encoding="utf-8") for f in (file, *parts))


def bad_parts(folder: Path, parts: Iterable[str]) -> list[str]:
    """The named parts that are not a shared ``_*.py`` file of ``folder``."""
    return [p for p in parts if not (p.startswith("_") and (folder / p).is_file())]
