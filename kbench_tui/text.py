"""Candidate text in the explorer: every widget shows it through one of these helpers.

Candidate text (names, paths, intents, verdict messages, printed output) first goes through
``kbench.core.text`` (control characters written out, one line where one line is meant). Then it is
never handed to Textual as a ``str`` where Textual would parse markup: border titles, ``Static``,
tree labels, ``DataTable`` cells and notifications all parse a ``str``, so a file named
``[@click=app.quit]x`` would become an action and ``[/]`` or ``[bold`` would raise ``MarkupError`` and
end the app. These helpers return ``Content`` / ``Text`` objects (never parsed) or pass
``markup=False``.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.content import Content

from kbench.core.text import harmless, one_line


def plain(text: object, style: str = "", limit: int | None = None) -> Content:
    """One harmless line as Textual ``Content`` (for ``Static.update``, border titles, assembling)."""
    return Content.styled(one_line(text, limit), style) if style else Content(one_line(text, limit))


def part(text: object, style: str = "", limit: int | None = None) -> tuple[str, str] | str:
    """One harmless line as a ``Content.assemble`` part (assemble never parses its strings)."""
    s = one_line(text, limit)
    return (s, style) if style else s


def label(text: object, style: str = "", limit: int | None = None) -> Text:
    """One harmless line as a rich ``Text``: tree labels, table cells, log lines."""
    return Text(one_line(text, limit), style=style)


def title(*parts: object) -> Content:
    """A border title from plain pieces (a ``str`` border title is parsed as markup)."""
    return Content(" · ".join(one_line(p) for p in parts))


def notify(target: Any, message: object, *, title: object = "", **kw: Any) -> None:
    """``target.notify`` with candidate text: newlines kept, everything else harmless, no markup."""
    text = message if isinstance(message, str) else str(message)
    target.notify(harmless(text, keep="\n"), title=one_line(title), markup=False, **kw)
