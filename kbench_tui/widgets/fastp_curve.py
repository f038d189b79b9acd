"""fast_p against p (log axis), naive and hardened, drawn with braille dots."""

from __future__ import annotations

import math

from textual.content import Content
from textual.widget import Widget

P_MIN, P_MAX = 0.5, 10.0
TICKS = (0.5, 1, 2, 5, 10)
SERIES = (("naive", "$warning"), ("hardened", "$primary"))
BOTH = "$success"
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
    """Give it ``series``: name -> callable p -> fast_p (or None when nothing is evaluated yet)."""

    def __init__(self, **kw) -> None:  # type: ignore[no-untyped-def]
        super().__init__(**kw)
        self._fns: dict[str, object] = {}
        self._cache: dict[tuple[str, int], list[float] | None] = {}

    def show(self, fns: dict[str, object]) -> None:
        self._fns = fns
        self._cache.clear()
        self.refresh()

    def _values(self, name: str, ps: list[float]) -> list[float] | None:
        key = (name, len(ps))
        if key not in self._cache:
            fn = self._fns.get(name)
            self._cache[key] = fn(ps) if callable(fn) else None
        return self._cache[key]

    def render(self) -> Content:
        w = max(self.content_size.width - 6, 8)
        h = max(self.content_size.height - 3, 2)
        ps = [p_at(x, 2 * w) for x in range(2 * w)]
        grids = {}
        for name, _ in SERIES:
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
                style = dict(SERIES)[next(iter(bits))] if len(bits) == 1 else BOTH
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
        legend: list[tuple[str, str] | str] = ["    "]
        for name, style in SERIES:
            legend += [("━ ", style), (name if name in grids else f"{name} –", ""), "  "]
        legend += [("━ ", BOTH), "both"]
        rows.append(Content.assemble(*legend))
        return Content("\n").join(rows)
