"""Text that came from a candidate (messages, printed output, file names, source excerpts), made safe to
show anywhere: a terminal, a log, a spreadsheet, the store.

``harmless`` writes every control and format character out as an escape (``\\x1b``), so no candidate text
can move a cursor, set a window title, write the clipboard or forge a line. Faces that render markup
(rich, Textual) escape their markup on top of this; the engine never imports them.
"""

from __future__ import annotations

import unicodedata

_UNSAFE_CATEGORIES = ("Cc", "Cf", "Cs", "Co", "Cn")


def _visible(ch: str, keep: str) -> str:
    if ch in keep or not (unicodedata.category(ch) in _UNSAFE_CATEGORIES or ch in "\u2028\u2029"):
        return ch
    return ch.encode("unicode_escape").decode("ascii") if ord(ch) < 0x10000 else f"\\U{ord(ch):08x}"


def harmless(text: str, keep: str = "\t\n") -> str:
    """``text`` with every control and format character written out as an escape, except those in ``keep``
    (tab and newline by default; pass ``keep=""`` for one-line fields such as file names)."""
    if text.isprintable():
        return text
    return "".join(_visible(ch, keep) for ch in text)


def one_line(text: object, limit: int | None = None) -> str:
    """``text`` as a single harmless line (newlines and tabs escaped too), cut to ``limit`` characters."""
    s = harmless(text if isinstance(text, str) else str(text), keep="")
    return short(s, limit) if limit is not None else s


def short(s: object, n: int = 300) -> str:
    """``s`` as text of at most ``n`` characters (a candidate's strings may be any size)."""
    text = s if isinstance(s, str) else str(s)
    return text if len(text) <= n else text[: n - 1] + "…"
