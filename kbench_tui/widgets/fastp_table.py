"""The fast_p table: p rows × naive / hardened / oracle, then fast_1@k."""

from __future__ import annotations

from rich import box
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from ..model import Scores
from ..text import label, title


def _f(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}"


class FastPTable(Static):
    evaluated: tuple[int, int, int] = (0, 0, 0)  # naive, hardened, total (for tests and the caption)
    counts: str = ""  # which candidates the scores count

    _shown: Scores | None = None

    def show(self, s: Scores) -> None:
        """Draw ``s``; the same scores again draw nothing. New numbers keep the table's shape (one row per p
        and k, fixed columns): only a new caption can change its height, so only then is the screen laid out."""
        if s == self._shown:
            return
        relayout = self._shown is None or (s.counts, s.n_total) != (self._shown.counts, self._shown.n_total)
        self._shown = s
        t = Table(box=box.SIMPLE_HEAD, expand=True, pad_edge=False, show_edge=False, padding=(0, 1),
                  # a folder's path is in the caption: Text, never markup
                  caption=label(f"counts {s.counts} (c switches)") + Text(
                      f"\nevaluated: naive {s.n_naive}/{s.n_total}, hardened {s.n_hardened}/{s.n_total}"),
                  caption_justify="left")
        t.add_column("fast_p", no_wrap=True)
        for name in ("naive", "hardened", "oracle"):
            t.add_column(name, justify="right", no_wrap=True)
        for p, n, h, o in s.rows:
            t.add_row(f"p = {p:g}", _f(n), _f(h), _f(o))
        t.add_section()
        for k, n, h in s.at_k:
            t.add_row(f"fast₁@{k}", _f(n), _f(h), "")
        self.update(t, layout=relayout)
        self.evaluated = (s.n_naive, s.n_hardened, s.n_total)
        self.counts = s.counts
        self.border_subtitle = title(f"counts {s.counts.split(',')[0]}")
