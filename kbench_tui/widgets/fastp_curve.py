"""fast_p against p (log axis), drawn with braille dots: naive and hardened by default, or any named series
(the models screen draws one per model) with a legend."""

from __future__ import annotations

import math

from rich.cells import cell_len
from textual.content import Content
from textual.widget import Widget

from kbench.core.text import one_line

P_MIN, P_MAX = 0.5, 10.0
TICKS = (0.5, 1, 2, 5, 10)
SERIES = (("naive", "$warning"), ("hardened", "$primary"))
BOTH = "$success"
#: Styles for named series beyond the default two (the models screen: one per model), in order.
PALETTE = ("$primary", "$warning", "$accent", "$error", "$secondary", "$success")
LEGEND_NAME_MAX = 24  # cells of a series name in the legend (a model's name is a folder's: any length)
# braille dot bits for (dx, dy) inside a 2×4 cell
_BITS = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))


def p_at(x: int, n: int) -> float:
    return math.exp(math.log(P_MIN) + (math.log(P_MAX) - math.log(P_MIN)) * x / max(n - 1, 1))


def raster(values: list[float], w: int, h: int) -> list[list[int]]:
    """Braille bit masks [row][col] for one series (one value per dot column, 0..1), steps joined."""
    grid = [[0] * w for _ in range(h)]
    dots_h = 4 * h
    prev = None
    for x, v in enumerate(values):
        y = round((1.0 - min(max(v, 0.0), 1.0)) * (dots_h - 1))
        lo, hi = (y, y) if prev is None else (min(prev, y), max(prev, y))
        for yy in range(lo, hi + 1):
            grid[yy // 4][x // 2] |= _BITS[x % 2][yy % 4]
        prev = y
    return grid


class FastPCurve(Widget):
    """Give it ``fns``: series name -> callable p -> fast_p (or None when nothing is evaluated yet).

    ``series`` (name, style) says which series are drawn, in legend order: naive and hardened unless
    ``show`` is given others; where two or more series share a dot it is drawn in ``overlap``'s style."""

    def __init__(self, **kw) -> None:  # type: ignore[no-untyped-def]
        super().__init__(**kw)
        self._fns: dict[str, object] = {}
        self._cache: dict[tuple[str, int], list[float] | None] = {}
        self.series: tuple[tuple[str, str], ...] = SERIES
        self.overlap: tuple[str, str] = (BOTH, "both")

    def show(self, fns: dict[str, object], series: "list[str] | None" = None) -> None:
        """Draw ``fns``; ``series``: their names in order, each given a style from ``PALETTE`` (default:
        naive and hardened)."""
        self._fns = fns
        if series is not None:
            self.series = tuple((name, PALETTE[i % len(PALETTE)]) for i, name in enumerate(series))
            self.overlap = ("$text", "overlap")
        self._cache.clear()
        self.refresh()

    @property
    def drawn(self) -> list[str]:
        """The names of the series that have values (drawn), in legend order (tests, the screen's notes)."""
        ps = [P_MIN, 1.0, P_MAX]
        return [name for name, _ in self.series if self._values(name, ps) is not None]

    def _legend(self, drawn: set[str], width: int) -> list[Content]:
        """One entry per series (``━ name``, ``name –`` when it has nothing to draw), then the overlap
        colour; wrapped onto more lines when they do not fit ``width``."""
        entries = [[("━ ", style), (one_line(name, LEGEND_NAME_MAX) if name in drawn
                                     else f"{one_line(name, LEGEND_NAME_MAX)} –", "")] for name, style in self.series]
        entries.append([("━ ", self.overlap[0]), self.overlap[1]])
        lines: list[list[tuple[str, str] | str]] = [["    "]]
        used = 4
        for n, entry in enumerate(entries):
            size = sum(cell_len(p if isinstance(p, str) else p[0]) for p in entry) + (2 if n < len(entries) - 1 else 0)
            if used + size > width and used > 4:
                lines.append(["    "])
                used = 4
            lines[-1] += entry + (["  "] if n < len(entries) - 1 else [])
            used += size
        return [Content.assemble(*parts) for parts in lines]

    def _values(self, name: str, ps: list[float]) -> list[float] | None:
        key = (name, len(ps))
        if key not in self._cache:
            fn = self._fns.get(name)
            self._cache[key] = fn(ps) if callable(fn) else None
        return self._cache[key]

    def render(self) -> Content:
        w = max(self.content_size.width - 6, 8)
        ps = [p_at(x, 2 * w) for x in range(2 * w)]
        drawn = {name for name, _ in self.series if self._values(name, ps) is not None}
        legend = self._legend(drawn, self.content_size.width)
        h = max(self.content_size.height - 2 - len(legend), 2)
        grids = {}
        for name, _ in self.series:
            vals = self._values(name, ps)
            if vals is not None:
                grids[name] = raster(vals, w, h)
        rows: list[Content] = []
        for r in range(h):
            label = "1.0┤" if r == 0 else "0.5┤" if r == (h - 1) // 2 else "0.0┤" if r == h - 1 else "   │"
            parts: list[tuple[str, str] | str] = [(label, "$text-muted")]
            for col in range(w):
                bits = {name: g[r][col] for name, g in grids.items() if g[r][col]}
                if not bits:
                    parts.append(" ")
                    continue
                style = dict(self.series)[next(iter(bits))] if len(bits) == 1 else self.overlap[0]
                mask = 0
                for b in bits.values():
                    mask |= b
                parts.append((chr(0x2800 + mask), style))
            rows.append(Content.assemble(*parts))
        axis = [" "] * w
        labels = [" "] * (w + 4)
        for t in TICKS:
            col = round((math.log(t) - math.log(P_MIN)) / (math.log(P_MAX) - math.log(P_MIN)) * (w - 1))
            axis[col] = "┬"
            s = f"{t:g}"
            start = min(max(col + 4 - len(s) // 2, 4), w + 4 - len(s))
            labels[start:start + len(s)] = list(s)
        rows.append(Content.assemble(("   └" + "".join(axis) + " p", "$text-muted")))
        rows.append(Content.assemble(("".join(labels), "$text-muted")))
        rows += legend
        return Content("\n").join(rows)
