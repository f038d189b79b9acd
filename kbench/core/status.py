"""One vocabulary for verdicts and run states: the words, symbols and style names every view uses
(the explorer's tree, matrix, log and tables; ``kbench eval``; the report), and the way a speedup is
written. Verdict lines are built from structured fields (status, speedup, speedup_ci, noise), never by
rewording the engine's own message, so ``kbench eval`` and the explorer print the same line.

Style names are Textual theme variables without the ``$`` (``text-success``...); a view that does not
speak Textual maps them to its own colours.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kbench.core.metrics import speedup_text, within_noise

if TYPE_CHECKING:
    from kbench.core.results import Event, Result


@dataclass(frozen=True)
class StatusLook:
    """How one status reads: ``text`` in sentences, ``symbol`` in badges, ``style`` a theme variable."""

    text: str
    symbol: str
    style: str


STATUS_LOOK: dict[str, StatusLook] = {
    "correct": StatusLook("correct", "✓", "text-success"),
    "wrong": StatusLook("wrong", "✗", "text-error"),
    "rejected": StatusLook("rejected", "⊘", "text-warning"),
    "compile_error": StatusLook("compile error", "!", "text-error"),
    "runtime_error": StatusLook("runtime error", "!", "text-error"),
    "not_evaluated": StatusLook("not evaluated", "·", "text-muted"),
    "running": StatusLook("evaluating", "⟳", "text-accent"),
    "cancelled": StatusLook("cancelled", "■", "text-warning"),
    "noise": StatusLook("within noise", "≈", "text-muted"),
}


def look(status: str) -> StatusLook:
    """The look of a status name; an unknown name reads as itself."""
    return STATUS_LOOK.get(status, StatusLook(status.replace("_", " "), "?", "text-muted"))


def fmt_speedup(s: float) -> str:
    """The point alone, two significant digits near 1 (``0.95×`` is not ``1.0×``)."""
    return speedup_text(s, None, "×") or "–"


def _band(ci: "tuple[float, float] | None") -> str:
    """``[12.9–13.6]``; empty when there is no finite interval."""
    if ci is None or not all(isinstance(v, (int, float)) and math.isfinite(v) for v in ci):
        return ""
    return f"[{speedup_text(ci[0], None, '')}–{speedup_text(ci[1], None, '')}]"


def is_noise(ci: "tuple[float, float] | None", noise: bool | None = None) -> bool:
    """Within noise: the engine's own ``noise`` flag when it gave one (a Result's timing), else whether the
    95 % interval contains 1.0 (a verdict Event carries only the interval)."""
    return bool(noise) if noise is not None else within_noise(ci)


def speedup_phrase(speedup: float | None, ci: "tuple[float, float] | None" = None,
                   noise: bool | None = None) -> str:
    """How every face writes a measured speedup: ``13.2× [12.9–13.6]``; within noise the estimate is
    kept and marked, ``0.75× [0.46–1.72], within noise`` (never a bare ``≈1.0×``). Empty: not timed."""
    if speedup is None or not math.isfinite(speedup):
        return ""
    band = _band(ci)
    text = fmt_speedup(speedup) + (f" {band}" if band else "")
    return text + (", within noise" if band and is_noise(ci, noise) else "")


def strip_status_prefix(status: str, msg: str) -> str:
    """The message without leading ``rejected:`` words (or any status word) when the view prints the
    status (the engine's verdict event can carry two: ``rejected: rejected: ...``)."""
    words = {status, look(status).text}
    for _ in range(3):
        word = next((w for w in words if msg.lower().startswith(w + ":")), None)
        if word is None:
            break
        msg = msg[len(word) + 1:].lstrip()
    return msg


def verdict_text(status: str, msg: str = "", speedup: float | None = None,
                 ci: "tuple[float, float] | None" = None, noise: bool | None = None) -> str:
    """The one verdict line, from the structured fields: ``✓ correct, 1.29× [1.20–1.38] at 95%``,
    ``✓ correct, 0.75× [0.46–1.72] at 95%, within noise``, ``⊘ rejected: modified input x in place``
    (never ``rejected: rejected:``). ``msg`` is the engine's text: a face escapes the line it shows."""
    lk = look(status)
    if status == "correct":
        if speedup is None or not math.isfinite(speedup):
            return f"{lk.symbol} correct"
        band = _band(ci)
        line = f"{lk.symbol} correct, {fmt_speedup(speedup)}" + (f" {band} at 95%" if band else "")
        return line + (", within noise" if band and is_noise(ci, noise) else "")
    body = strip_status_prefix(status, msg)
    return f"{lk.symbol} {lk.text}: {body}" if body else f"{lk.symbol} {lk.text}"


def sentence(result: "Result") -> str:
    """``verdict_text`` of a Result (its timing's speedup, interval and noise flag)."""
    t = result.timing
    if t is None:
        return verdict_text(result.status, result.msg)
    return verdict_text(result.status, result.msg, t.speedup, t.speedup_ci, t.noise)


def event_sentence(ev: "Event") -> str:
    """``verdict_text`` of the engine's final ``verdict`` Event (status, speedup, speedup_ci): the same line
    ``sentence`` writes for its Result. Noise is read off the interval (the event has no noise field)."""
    return verdict_text(ev.status or ("correct" if ev.ok else "runtime_error"), ev.message, ev.speedup,
                        ev.speedup_ci)


#: Badges of a narrow tree (at most 8 cells), so the names beside them stay readable.
_NARROW = {"wrong": "✗ wrong", "rejected": "⊘ reject", "compile_error": "! error", "runtime_error": "! error"}


def badge_text(result: "Result | None", narrow: bool = False) -> tuple[str, str]:
    """(badge, status key) for a tree row or matrix cell: ``✓ 1.29×``; within noise ``✓ ≈0.75×`` (the
    estimate kept, marked). ``narrow``: at most 8 cells (``✓≈0.75×``, ``⊘ reject``, ``! error``)."""
    if result is None:
        return STATUS_LOOK["not_evaluated"].symbol, "not_evaluated"
    lk = look(result.status)
    if result.status == "correct":
        t = result.timing
        if t is None:
            return lk.symbol, "correct"
        if is_noise(t.speedup_ci, t.noise):
            return f"{lk.symbol}{'' if narrow else ' '}≈{fmt_speedup(t.speedup)}", "correct"
        return f"{lk.symbol} {fmt_speedup(t.speedup)}", "correct"
    if narrow:
        return _NARROW.get(result.status, f"{lk.symbol} {result.status[:6]}"), result.status
    if result.status in ("wrong", "rejected"):
        return f"{lk.symbol} {lk.text}", result.status
    return f"{lk.symbol} {result.status}", result.status


def short_badge(result: "Result | None") -> tuple[str, str]:
    """``badge_text`` in at most 8 cells (a narrow tree)."""
    return badge_text(result, narrow=True)


def failure_text(e: BaseException, limit: int = 200) -> str:
    """An exception that is not a verdict (the grader failed: ``MemoryError`` from a parser, say) as one
    harmless line, ``MemoryError`` or ``ValueError: bad value``: never an empty ``: `` or a multi-line text."""
    from kbench.core.text import one_line

    text = one_line(str(e), limit)
    return f"{type(e).__name__}: {text}" if text else type(e).__name__
