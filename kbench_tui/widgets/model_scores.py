"""The models screen's score table: one column per model, the rows ``kbench scores`` prints for all tasks
(samples, correct share, noise-aware fast_p on its p grid with the point estimate in brackets when it
differs, fast₁@k, geometric-mean speedup), read from ``kbench.batch.scores.Score``."""

from __future__ import annotations

from rich import box
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from kbench.batch.scores import K_GRID, P_GRID, Score

from ..text import label

NAME_MAX = 14  # cells of a model's name in a column header


def pct(v: float) -> str:
    return f"{v:.0%}" if v in (0.0, 1.0) else f"{v:.1%}" if v < 0.1 else f"{v:.0%}"


def _noise_aware(value: float, point: float) -> str:
    """``50%``, or ``33% [50%]`` when the point estimates count more (speedups within noise of p)."""
    return pct(value) if abs(value - point) < 1e-12 else f"{pct(value)} [{pct(point)}]"


class ModelScores(Static):
    """``show(columns)``: (model name, its Score under the shown mode, or None when it has none)."""

    shown: list[str] = []  # the model names of the columns (tests)

    def show(self, columns: list[tuple[str, Score | None]], mode_label: str | None, compact: bool = False) -> None:
        """``compact``: no rule under the header (a 24-row terminal keeps room for the curve)."""
        t = Table(box=None if compact else box.SIMPLE_HEAD, expand=True, pad_edge=False, show_edge=False,
                  padding=(0, 1), header_style="bold")
        t.add_column("all tasks", no_wrap=True)
        for name, _ in columns:  # a model's name is a folder's: Text, never markup
            t.add_column(label(name, limit=NAME_MAX), justify="right", no_wrap=True)

        def row(head: str, fn) -> None:  # type: ignore[no-untyped-def]
            t.add_row(head, *("–" if sc is None else fn(sc) for _, sc in columns))

        row("samples", lambda sc: f"{sc.samples} ({sc.tasks_with_samples}/{sc.tasks})")
        row("correct", lambda sc: pct(sc.rates["correct"]))
        for p in P_GRID:
            row(f"fast_{p:g}", lambda sc, p=p: _noise_aware(sc.fast_p[p], sc.fast_p_point[p]) if sc.timed
                else "untimed")
        for k in K_GRID:
            row(f"fast₁@{k}", lambda sc, k=k: _noise_aware(sc.fast_p_at_k[k], sc.fast_p_at_k_point[k])
                if sc.timed else "untimed")
        row("geomean", lambda sc: f"{sc.geomean_speedup:.2f}×" if sc.geomean_speedup else "–")
        self.update(t if columns else Text("no graded models: kbench grade DIR, or kbench --model DIR"))
        self.shown = [name for name, _ in columns]
        self.border_subtitle = label(f"noise-aware [point] · mode {mode_label or '–'}")
