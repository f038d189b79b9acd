"""`g`: the hardened grader's defences as switches, one row each from the catalogue (``kbench.core.defences``):
what it catches, which attack needs it, and whether switching it off is read off the one hardened run at once
(derived) or needs a run of its own (done in the background). The selected candidate's verdict under the
switches is shown on top and follows every toggle."""

from __future__ import annotations

from typing import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from kbench.batch.matrix import cell_text
from kbench.core import defences as catalogue
from kbench.core.library import Candidate
from kbench.core.status import look

from ..messages import ModelChanged
from ..model import Model
from ..text import label, plain


def needs_it(d: catalogue.Defence) -> str:
    """The attack cases that need a defence, short: library hacks by name first."""
    names = [c.partition(":")[2] for c in d.cases]
    return ", ".join(names)


class DefenceScreen(Screen[None]):
    BINDINGS = [
        Binding("escape,g", "close", "Back", id="defences.close", tooltip="Back to the library"),
        Binding("space", "toggle", "Switch", id="defences.toggle",
                tooltip="Switch the highlighted defence off / on (hardened without it)"),
        Binding("N", "preset('naive')", "Naive preset", id="defences.preset.naive",
                tooltip="Preset: every defence off (KernelBench v0's naive grader)"),
        Binding("H", "preset('hardened')", "Hardened preset", id="defences.preset.hardened",
                tooltip="Preset: every defence on (the hardened grader)"),
    ]

    def __init__(self, model: Model, cand: Candidate | None, toggle: Callable[[str], None],
                 preset: Callable[[str], None]) -> None:
        super().__init__()
        self.model, self.cand, self._toggle, self._preset = model, cand, toggle, preset

    def compose(self) -> ComposeResult:
        yield Static(id="defences-title")
        yield DataTable(id="defences", cursor_type="row", zebra_stripes=True)
        yield Static(id="defence-help")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for key, name in (("on", ""), ("name", "defence"), ("title", "what"), ("how", "off is"),
                          ("catches", "catches"), ("cases", "needed by")):
            table.add_column(name, key=key)
        self.rebuild()
        table.focus()

    def _c(self, var: str) -> str:
        return self.app.theme_variables.get(var, "")

    def rebuild(self) -> None:
        table = self.query_one(DataTable)
        row = table.cursor_row
        table.clear()
        off = self.model.effective_off()
        for d in catalogue.DEFENCES:
            on = d.name not in off
            table.add_row(Text("● on" if on else "○ off", style=self._c("text-success" if on else "text-error")),
                          label(d.name, "bold" if on else "strike"), label(d.title),
                          label("derived" if d.derived else "own run", self._c("text-muted")),
                          label(d.catches), label(needs_it(d), self._c("text-muted")), key=d.name)
        if 0 <= row < table.row_count:
            table.move_cursor(row=row)
        self.query_one("#defences-title", Static).update(plain(self.headline()))
        self.show_help()

    def headline(self) -> str:
        off = self.model.effective_off()
        state = ("naive: KernelBench v0, no defences" if self.model.mode == "naive" else
                 "hardened, every defence on" if not off else f"hardened without {', '.join(sorted(off))}")
        if self.cand is None:
            return f" Defences · {state}"
        k = self.model.verdict(self.cand)
        text = cell_text(k.result)[0] if k is not None else look("not_evaluated").symbol + " not known yet"
        return f" Defences · {state} · {self.cand.key}: {text}"

    def on_data_table_row_highlighted(self, _: DataTable.RowHighlighted) -> None:
        self.show_help()

    def show_help(self) -> None:
        """The highlighted defence in full: the help line the table's columns cut short."""
        name = self.highlighted()
        if name is None:
            return
        d = catalogue.BY_NAME[name]
        off = ("derived from the one hardened run: instant" if d.derived else
               "changes the run itself: hardened without it runs in the background")
        self.query_one("#defence-help", Static).update(Content.assemble(
            (f"{d.name}", "bold"), f" — {d.title}. ", ("catches: ", "$text-muted"), f"{d.catches}. ",
            ("needed by: ", "$text-muted"), f"{needs_it(d)}. ", ("enforced in: ", "$text-muted"), f"{d.enforced}. ",
            ("on a breach: ", "$text-muted"), f"{d.breach}. ", ("off: ", "$text-muted"), off))

    def on_model_changed(self, _: ModelChanged) -> None:
        self.rebuild()

    def highlighted(self) -> str | None:
        table = self.query_one(DataTable)
        if table.row_count == 0:
            return None
        return catalogue.DEFENCES[table.cursor_row].name

    def action_toggle(self) -> None:
        name = self.highlighted()
        if name is not None:
            self._toggle(name)
            self.rebuild()

    def on_data_table_row_selected(self, _: DataTable.RowSelected) -> None:
        self.action_toggle()  # enter switches too

    def action_preset(self, which: str) -> None:
        self._preset(which)
        self.rebuild()

    def action_close(self) -> None:
        self.dismiss()
