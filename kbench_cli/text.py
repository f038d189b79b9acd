"""Candidate text on the command line: every command prints it through one of these helpers.

Candidate text is anything a candidate controls: its file and folder names, the messages its
exceptions put into verdicts, what it printed, its docstring. ``kbench.core.text`` writes control
characters out (no cursor moves, window titles, clipboard writes, forged lines); on top of it, text that
goes into a rich markup string has its markup escaped, and text that spans lines keeps a prefix on
every line so that no line of it can pass for one of kbench's own.

- ``line``: a plain one-line string, for ``print`` and for rich output with ``markup=False``;
- ``markup``: the same, escaped to sit inside a rich markup string (``f"[bold]{markup(name)}[/]"``);
- ``cell``: a rich ``Text`` (tables, panels: a ``str`` there would be parsed as markup);
- ``block``: several harmless lines, each behind the same prefix.
"""

from __future__ import annotations

from rich.markup import escape
from rich.text import Text

from kbench.core.text import harmless, one_line


def line(text: object, limit: int | None = None) -> str:
    """``text`` as one harmless line (newlines and every control character written out)."""
    return one_line(text, limit)


def markup(text: object, limit: int | None = None) -> str:
    """``line(text)`` with rich markup escaped: ``[bold]`` or ``[/]`` in a name stays text."""
    return escape(one_line(text, limit))


def cell(text: object, style: str = "", limit: int | None = None) -> Text:
    """``line(text)`` as a rich Text (never parsed as markup), in ``style``."""
    return Text(one_line(text, limit), style=style)


def block(text: str, prefix: str, first: str = "") -> list[str]:
    """``text``'s lines made harmless, the first behind ``first`` and each other one behind ``prefix``:
    a candidate that prints ``\\n  1.00s verdict  ✓ correct`` shows that line indented, never as a verdict."""
    lines = harmless(text, keep="\n").split("\n") or [""]
    return [first + lines[0], *(prefix + ln for ln in lines[1:])]
