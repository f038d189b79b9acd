"""`v`: candidates × distributions, pass counts per cell (hardened, all seven distributions); `f` switches to
candidates × defences, each cell the verdict of hardened with that one defence off (the hack × defence
matrix); `r` runs the cells no run has answered yet, `x` exports the view shown."""

from __future__ import annotations

from typing import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from kbench.batch.matrix import cell_text, run_needed, through, variant
from kbench.core import defences as catalogue
from kbench.core.distributions import ALL_DISTS
from kbench.core.library import Candidate
from kbench.core.modes import Mode
from kbench.core.results import Result
from kbench.core.status import look
from kbench.store import text_cell

from .. import paths
from ..messages import ModelChanged
from ..model import EXPLORER_HARDENED, Model, badge
from ..text import label, notify, plain



class MatrixScreen(Screen[None]):
    BINDINGS = [
        Binding("escape,v", "close", "Back", id="matrix.close", tooltip="Back to the library"),
        Binding("t", "scope", "Task / all", id="matrix.scope", tooltip="This task only, or every task"),
        Binding("f", "view", "Dists / defences", id="matrix.view",
                tooltip="Switch between candidates × distributions and candidates × defences (each defence off alone)"),
        Binding("r", "run_cells", "Run cells", id="matrix.run",
                tooltip="Defences view: run, in the background, what the cells not yet known need"),
        Binding("x", "export", "Export", id="matrix.export", tooltip="Export the view shown as CSV and JSON"),
        *[Binding(str(i + 1), f"toggle({i})", "Dists" if i == 0 else f"toggle {d}", key_display="1-7" if i == 0 else None,
                  show=i == 0, id=f"matrix.dist.{d}") for i, d in enumerate(ALL_DISTS)],
    ]

    def __init__(self, model: Model, task: str | None, toggle: Callable[[int], None],
                 run_cells: Callable[[list[tuple[Candidate, Mode | None]]], int] | None = None) -> None:
        super().__init__()
        self.model, self.kb_task, self._toggle, self._run_cells = model, task, toggle, run_cells
        self._last_task = task
        self.view = "dists"  # or "defences"

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
        if self.view == "defences":
            self.rebuild_defences()
            return
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

    def _cands(self) -> list[Candidate]:
        return [c for c in self.model.candidates if self.kb_task is None or c.task == self.kb_task]

    def rebuild_defences(self) -> None:
        table = self.query_one(DataTable)
        row = table.cursor_row
        table.clear(columns=True)
        table.add_column("candidate", key="cand")
        table.add_column("all on", key="all-on")
        for d in catalogue.DEFENCES:
            table.add_column(d.name if d.derived else f"{d.name} *", key=d.name)
        for c in self._cands():
            base = self.model.hardened_verdict(c, self.model.enabled)
            cells: list[Text] = [label(c.key if self.kb_task is None else c.name)]
            cells.append(self._verdict_cell(base.result if base else None))
            for d in catalogue.NAMES:
                k = self.model.defence_view(c, {d}) if base is not None else None
                cells.append(self._verdict_cell(k.result if k else None, base.result if base else None))
            table.add_row(*cells)
        if row < table.row_count:
            table.move_cursor(row=row)
        scope = f"task {self.kb_task}" if self.kb_task else "all tasks"
        self.query_one("#matrix-title", Static).update(plain(
            f" Matrix · hack × defence · {scope} · each cell: hardened with that one defence off · reverse: gets "
            f"through only without it (correct, faster beyond noise) · * needs a run of its own (r runs the missing) · · = not known"))

    def _verdict_cell(self, result: Result | None, hardened: Result | None = None) -> Text:
        """A verdict; in reverse where the candidate gets through only because this defence is off."""
        text, kind = cell_text(result)
        style = self._c(look(kind).style)
        if hardened is not None and through(result) and not through(hardened):
            style = f"bold reverse {style}"
        return Text(text, style=style)

    def missing_cells(self) -> list[tuple[Candidate, Mode | None]]:
        """What the defences view still needs: (candidate, None) for a hardened run, else the variant run."""
        out: list[tuple[Candidate, Mode | None]] = []
        for c in self._cands():
            base = self.model.hardened_verdict(c, self.model.enabled)
            if base is None:
                out.append((c, None))
                continue
            modes = {}
            for d in catalogue.NAMES:
                if self.model.defence_view(c, {d}) is None:
                    need = run_needed(base.result, {d}) or frozenset({d})
                    m = variant(EXPLORER_HARDENED, need)
                    if self.model.known(c, m.name, ALL_DISTS) is None:
                        modes[m.name] = m
            out += [(c, m) for m in modes.values()]
        return out

    def action_view(self) -> None:
        self.view = "defences" if self.view == "dists" else "dists"
        self.rebuild()
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "run_cells":
            return True if self.view == "defences" and self._run_cells is not None else None
        return True

    def action_run_cells(self) -> None:
        if self._run_cells is None or self.view != "defences":
            return
        todo = self.missing_cells()
        n = self._run_cells(todo) if todo else 0
        self.notify(f"{n} evaluation{'s' if n != 1 else ''} queued in the background" if n else
                    "every cell shown is known (or needs a hardened run that is queued)", title="matrix")

    def action_export(self) -> None:
        """The table shown, as text cells: CSV and JSON in the export directory."""
        import csv
        import json
        from datetime import datetime

        table = self.query_one(DataTable)
        head = [str(col.label) for col in table.ordered_columns]
        rows = [[str(v) for v in table.get_row_at(i)] for i in range(table.row_count)]
        folder = paths.export_dir()
        try:
            folder.mkdir(parents=True, exist_ok=True)
            stem = folder / f"kbench-matrix-{self.view}-{datetime.now():%Y%m%d-%H%M%S-%f}"
            with open(f"{stem}.csv", "x", newline="", encoding="utf-8") as f:
                w = csv.writer(f)
                w.writerow(head)
                w.writerows([[text_cell(v) for v in r] for r in rows])
            with open(f"{stem}.json", "x", encoding="utf-8") as f:
                json.dump({"view": self.view, "task": self.kb_task, "columns": head, "rows": rows}, f,
                          ensure_ascii=False, indent=1)
        except OSError as e:
            notify(self, f"Export failed: {e}", severity="error")
            return
        notify(self, f"{stem}.csv\n{stem}.json", title="exported the matrix")

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
