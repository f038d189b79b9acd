"""The header line: mode and distribution toggles on the left, background progress on the right."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.widgets import Static

from kbench.core.defences import NAMES as DEFENCES
from kbench.core.distributions import ALL_DISTS


class StatusBar(Horizontal):
    DEFAULT_CSS = """
    StatusBar { height: 1; }
    StatusBar #status-left { width: 1fr; height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
    StatusBar #status-right { width: auto; max-width: 50%; height: 1; padding: 0 1; text-wrap: nowrap; }
    """

    _last: tuple[str, tuple[str, ...], Content | None, frozenset[str]] | None = None
    _drawn_at = -1  # the width the shown text was laid out for
    _right: Content | None = None  # the activity shown on the right

    def on_resize(self) -> None:
        if self._last is not None:
            self.show(*self._last[:3], off=self._last[3])

    def compose(self) -> ComposeResult:
        yield Static(id="status-left")
        yield Static(id="status-right")

    def show(self, mode: str, enabled: tuple[str, ...], activity: Content | None,
             off: frozenset[str] = frozenset()) -> None:
        shown = (mode, enabled, activity, off)
        if shown == self._last and self.size.width == self._drawn_at:
            return  # nothing changed: no redraw
        self._last, self._drawn_at = shown, self.size.width
        hard = mode == "hardened"
        compact = 0 < self.size.width < 110  # an 80-column terminal: short names, no app title
        parts: list[tuple[str, str] | str | Content] = [] if compact else [(" kbench explorer ", "bold $text-accent"), "│"]
        parts.append(" mode ")
        parts.append((f" {mode} ", "bold reverse $primary" if hard else "bold reverse $warning"))
        parts.append(" (m) │ ")
        for i, d in enumerate(ALL_DISTS, 1):
            on = d in enabled
            style = ("bold $text-success" if hard else "$text-muted") if on else "$text-muted strike"
            parts += [(f"{i}", "bold" if hard else "$text-muted"), (f"{'●' if on else '○'}{d[:4] if compact else d} ", style)]
        n = len(DEFENCES)
        parts.append("│ ")
        if not hard:
            parts.append((f"def 0/{n} (v0) ", "$text-muted"))
        elif off:
            parts += [(f"def {n - len(off)}/{n} ", "bold $text-warning"),
                      (" ".join(f"−{d}" for d in sorted(off)) + " ", "$text-warning")]
        else:
            parts.append((f"def {n}/{n} ", "bold $text-success"))
        parts.append("(g) ")
        if not hard:
            parts.append(("(toggles act on hardened; naive is KernelBench v0: 5 trials on normal)", "$text-muted"))
        self.query_one("#status-left", Static).update(Content.assemble(*parts), layout=False)  # one line, 1fr wide
        right = activity if activity is not None else Content.assemble(("idle", "$text-muted"))
        if right != self._right:  # width auto: a new text lays the screen out, so only a changed one is set
            self._right = right
            self.query_one("#status-right", Static).update(right)

    def render_text(self) -> str:
        """Both halves as plain text (tests)."""
        return " ".join(str(w.render()) for w in self.query(Static))
