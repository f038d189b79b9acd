"""One vocabulary for verdicts and run states: the words, symbols and style names every view uses
(the explorer's tree, matrix, log and tables; the report), and the way a speedup is written.

Style names are Textual theme variables without the ``$`` (``text-success``...); a view that does not
speak Textual maps them to its own colours.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kbench.core.metrics import speedup_text, within_noise

if TYPE_CHECKING:
    from kbench.core.results import Result


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


def strip_status_prefix(status: str, msg: str) -> str:
    """The message without a leading ``rejected:`` (or any status word) when the view prints the status."""
    for word in {status, look(status).text}:
        if msg.lower().startswith(word + ":"):
            return msg[len(word) + 1:].lstrip()
    return msg


def badge_text(result: "Result | None") -> tuple[str, str]:
    """(short badge, status key) for a tree row or matrix cell: ``✓ 1.29×``, ``✓ ≈1.0×`` within noise."""
    if result is None:
        return STATUS_LOOK["not_evaluated"].symbol, "not_evaluated"
    lk = look(result.status)
    if result.status == "correct":
        t = result.timing
        if t is None:
            return lk.symbol, "correct"
        if within_noise(t.speedup_ci):
            return f"{lk.symbol} ≈1.0×", "correct"
        return f"{lk.symbol} {fmt_speedup(t.speedup)}", "correct"
    if result.status in ("wrong", "rejected"):
        return f"{lk.symbol} {lk.text}", result.status
    return f"{lk.symbol} {result.status}", result.status


def short_badge(result: "Result | None") -> tuple[str, str]:
    """``badge_text`` in at most 10 cells (a narrow tree): ``! runtime`` for ``! runtime_error``."""
    text, key = badge_text(result)
    if key in ("compile_error", "runtime_error"):
        text = f"{look(key).symbol} {key.split('_')[0]}"
    return text, key


def sentence(result: "Result") -> str:
    """One line: ``✓ correct, 1.29× [1.20-1.38]``, ``✓ correct, ≈1.0× [0.93-1.07] (within noise)`` or
    ``⊘ rejected: modified input x in place`` (never ``rejected: rejected:``)."""
    lk = look(result.status)
    if result.status == "correct":
        t = result.timing
        if t is None:
            return f"{lk.symbol} correct"
        noise = " (within noise: no measurable difference)" if within_noise(t.speedup_ci) else ""
        return f"{lk.symbol} correct, {speedup_text(t.speedup, t.speedup_ci, '×')} at 95%{noise}"
    return f"{lk.symbol} {lk.text}: {strip_status_prefix(result.status, result.msg)}"
