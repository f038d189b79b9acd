"""`n`: write a new candidate (prefilled with the task's reference); ctrl+s saves and evaluates it."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Footer, Input, Label, Static, TextArea

from kbench.core.library import Candidate, intent_of
from kbench.core.tasks import Task

from ..paths import NAME_RE

TEMPLATE = '''"""{intent}"""

{body}
'''


class EditorScreen(Screen[Candidate | None]):
    BINDINGS = [
        Binding("ctrl+s", "save", "Save & evaluate", id="editor.save", priority=True,
                tooltip="Save as a user candidate and evaluate it"),
        Binding("escape", "cancel", "Cancel", id="editor.cancel", priority=True,
                tooltip="Close without saving (asks again if you changed the code)"),
    ]

    def __init__(self, task: Task, folder: Path, name: str) -> None:
        super().__init__()
        self.kb_task, self.folder, self.default_name = task, folder, name
        self._initial = TEMPLATE.format(intent="My kernel: what it tries (the first docstring line is its intent).",
                                        body=task.ref_src.strip("\n"))
        self._armed = False

    def compose(self) -> ComposeResult:
        yield Static(f" New candidate for {self.kb_task.name}: {self.kb_task.description}", id="editor-title")
        with Horizontal(id="editor-name-row"):
            yield Label("name ", id="editor-name-label")
            yield Input(self.default_name, id="editor-name", restrict=r"[A-Za-z0-9_]*", max_length=64)
            yield Static(f"  → {self.folder / self.kb_task.name}/<name>.py", id="editor-path")
        yield TextArea.code_editor(self._initial, language="python", id="editor")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#editor", TextArea).focus()

    def action_save(self) -> None:
        name = self.query_one("#editor-name", Input).value.strip()
        if not NAME_RE.match(name):
            self.notify("A name is letters, digits and _, not starting with a digit.", severity="error")
            return
        path = self.folder / self.kb_task.name / f"{name}.py"
        if path.exists():
            self.notify(f"{path} exists; pick another name.", severity="error")
            return
        src = self.query_one("#editor", TextArea).text
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(src, encoding="utf-8")
        except OSError as e:
            self.notify(f"Cannot save {path}: {e}", severity="error")
            return
        self.notify(f"saved {path}", title="new candidate")
        self.dismiss(Candidate(self.kb_task.name, name, intent_of(src), src, path, "user"))

    def action_cancel(self) -> None:
        changed = self.query_one("#editor", TextArea).text != self._initial
        if changed and not self._armed:
            self._armed = True
            self.notify("Unsaved changes: Esc again discards them, ctrl+s saves.", severity="warning")
            return
        self.dismiss(None)
