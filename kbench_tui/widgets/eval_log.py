"""The evaluator log: one line per step event, coloured by verdict; runs stay scrollable."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import RichLog

from kbench.core.results import Event, Result

MAX_LINES = 5000
STATUS_VARS = {"correct": "text-success", "wrong": "text-error", "rejected": "text-warning",
               "compile_error": "text-error", "runtime_error": "text-error"}


class EvalLog(RichLog):
    def __init__(self, **kw) -> None:  # type: ignore[no-untyped-def]
        super().__init__(max_lines=MAX_LINES, wrap=False, markup=False, highlight=False, auto_scroll=False, **kw)

    def _color(self, var: str) -> str:
        return self.app.theme_variables.get(var, "")

    def _at_end(self) -> bool:
        return self.max_scroll_y - self.scroll_y <= 2

    def write_lines(self, lines: list[Text]) -> None:
        """Write a batch as one renderable; follow the end only if the reader is already there."""
        if not lines:
            return
        follow = self._at_end()
        self.write(Text("\n").join(lines), scroll_end=follow)

    def header(self, text: str) -> Text:
        return Text(f"── {text} ", style=f"bold {self._color('text-accent')}") + Text("─" * 20, style=self._color("text-muted"))

    def note(self, text: str, var: str = "text-muted") -> Text:
        return Text(f"   {text}", style=self._color(var))

    def event_line(self, ev: Event) -> Text:
        if ev.step == "verdict" and ev.status:
            var = STATUS_VARS.get(ev.status, "")
        else:
            var = {True: "text-success", False: "text-error", None: ""}[ev.ok]
        line = Text(f"{ev.elapsed:6.2f}s ", style=self._color("text-muted"))
        line.append(f"{ev.step:<8}", style="bold")
        line.append(ev.message, style=self._color(var) if var else "")
        return line

    def result_line(self, prefix: str, result: Result, extra: str = "") -> Text:
        var = STATUS_VARS.get(result.status, "")
        return Text(f"   {prefix}", style=self._color("text-muted")) + Text(summary(result) + extra, style=self._color(var))


def summary(r: Result) -> str:
    if r.status == "correct" and r.timing:
        lo, hi = r.speedup_ci or (r.speedup, r.speedup)
        return f"✓ correct, {r.speedup:.2f}× (95% CI {lo:.2f}–{hi:.2f})"
    if r.status == "correct":
        return "✓ correct"
    mark = {"wrong": "✗", "rejected": "⊘"}.get(r.status, "!")
    return f"{mark} {r.status}: {r.msg}"
