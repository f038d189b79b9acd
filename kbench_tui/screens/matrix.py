"""`v`: candidates × distributions, pass counts per cell (hardened, all seven distributions)."""

from __future__ import annotations

from typing import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from kbench.core.distributions import ALL_DISTS
from kbench.core.status import look

from ..messages import ModelChanged
from ..model import Model, badge
from ..text import label, plain



class MatrixScreen(Screen[None]):
    BINDINGS = [
        Binding("escape,v", "close", "Back", id="matrix.close", tooltip="Back to the library"),
        Binding("t", "scope", "Task / all", id="matrix.scope", tooltip="This task only, or every task"),
        *[Binding(str(i + 1), f"toggle({i})", "Dists" if i == 0 else f"toggle {d}", key_display="1-7" if i == 0 else None,
                  show=i == 0, id=f"matrix.dist.{d}") for i, d in enumerate(ALL_DISTS)],
    ]

    def __init__(self, model: Model, task: str | None, toggle: Callable[[int], None]) -> None:
        super().__init__()
        self.model, self.kb_task, self._toggle = model, task, toggle
        self._last_task = task

    def compose(self) -> ComposeResult:
        yield Static(id="matrix-title")
        yield DataTable(id="matrix", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        self.rebuild()
        self.query_one(DataTable).focus()

    def _c(self, var: str) -> str:
        return self.app.theme_variables.get(var, "")

    def rebuild(self) -> None:
        table = self.query_one(DataTable)
        row = table.cursor_row
        table.clear(columns=True)
        on = self.model.enabled
        table.add_column("candidate", key="cand")
        table.add_column("naive 5×normal", key="naive")
        for i, d in enumerate(ALL_DISTS, 1):
            table.add_column(Text(f"{i} {d}", style="bold" if d in on else f"strike {self._c('text-muted')}"), key=d)
        table.add_column("hardened", key="hardened")
        table.add_column("naive", key="naive-verdict")
        cands = [c for c in self.model.candidates if self.kb_task is None or c.task == self.kb_task]
        for c in cands:
            full = self.model.full(c)
            passes = full.passes_by_dist() if full else {}
            naive = self.model.known(c, "naive")
            cells: list[Text | str] = [label(c.key if self.kb_task is None else c.name)]  # a str cell is markup
            p, n = naive.result.passes_by_dist().get("normal", (0, 0)) if naive else (0, 0)
            cells.append(self._cell(p, n, True) if n else Text("·", style=self._c("text-muted")))
            for d in ALL_DISTS:
                p, n = passes.get(d, (0, 0))
                cells.append(self._cell(p, n, d in on) if n else Text("·", style=self._c("text-muted")))
            for mode in ("hardened", "naive"):
                k = self.model.verdict(c, mode)
                text, kind = badge(k.result if k else None)
                cells.append(Text(text, style=self._c(look(kind).style)))
            table.add_row(*cells)
        if row < table.row_count:
            table.move_cursor(row=row)
        scope = f"task {self.kb_task}" if self.kb_task else "all tasks"
        self.query_one("#matrix-title", Static).update(plain(
            f" Matrix · {scope} · passes/trials per distribution (hardened runs one trial each; naive 5 on normal)"
            f" · struck-out columns are off · · = not run"))

    def _cell(self, passed: int, total: int, enabled: bool) -> Text:
        ok = passed == total
        style = self._c("text-success" if ok else "text-error") if enabled else self._c("text-muted")
        return Text(f"{'✓' if ok else '✗'} {passed}/{total}", style=style)

    def on_model_changed(self, _: ModelChanged) -> None:
        self.rebuild()

    def action_close(self) -> None:
        self.dismiss()

    def action_scope(self) -> None:
        if self.kb_task is None:
            self.kb_task = self._last_task
        else:
            self._last_task, self.kb_task = self.kb_task, None
        self.rebuild()

    def action_toggle(self, index: int) -> None:
        self._toggle(index)
