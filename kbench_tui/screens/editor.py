"""`n`: the write–grade–fix loop. Starts from the selected candidate (or the task's reference);
ctrl+s saves and evaluates, and you stay here: the verdict appears under the code, an error's line is
selected. Your own files are saved in place; a library candidate is saved as a copy."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.events import Key
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Footer, Input, Label, Static, TextArea
from textual.widgets.text_area import Selection

from kbench.batch.samples import intent_or_note
from kbench.core.library import Candidate
from kbench.core.results import Result
from kbench.core.status import look, sentence
from kbench.core.tasks import Task
from kbench.core.text import harmless

from ..paths import NAME_RE
from ..text import notify, part, plain
from ..widgets.source_view import language_for

TEMPLATE = '''"""{intent}"""

{body}
'''
LINE_RE = re.compile(r"\bline (\d+)\b")
INDENT_AFTER = re.compile(r":\s*(#.*)?$")


def error_line(msg: str) -> int | None:
    """The 1-based source line an evaluation message points at, if any (``... (line 4)``)."""
    m = LINE_RE.search(msg)
    return int(m.group(1)) if m else None


class CodeEditor(TextArea):
    """A Python TextArea whose Enter keeps the line's indentation, one level more after a colon."""

    async def _on_key(self, event: Key) -> None:
        if event.key != "enter" or self.read_only:
            await super()._on_key(event)
            return
        row, col = self.cursor_location
        line = self.document.get_line(row)[:col]
        indent = line[: len(line) - len(line.lstrip(" "))]
        if INDENT_AFTER.search(line):
            indent += " " * self.indent_width
        event.stop()
        event.prevent_default()
        self.replace("\n" + indent, *self.selection)


class ConfirmDiscard(ModalScreen[bool]):
    """Asked before an edit is thrown away: y discards, n or Esc keeps editing."""

    BINDINGS = [Binding("y", "answer(True)", "Discard", id="confirm.yes"),
                Binding("n,escape", "answer(False)", "Keep editing", id="confirm.no")]
    DEFAULT_CSS = """
    ConfirmDiscard { align: center middle; }
    ConfirmDiscard > Vertical { width: 56; max-width: 95%; height: auto; border: round $warning;
                                background: $surface; padding: 1 2; }
    ConfirmDiscard Horizontal { height: auto; margin-top: 1; }
    ConfirmDiscard Button { margin-right: 2; }
    """

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("Discard the unsaved changes to this candidate?")
            with Horizontal():
                yield Button("Discard (y)", variant="warning", id="yes")
                yield Button("Keep editing (n)", variant="primary", id="no")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class EditorScreen(Screen[None]):
    BINDINGS = [
        # not a priority binding: ctrl+s then reaches the screen after the keys typed before it, which the
        # editor may not have inserted yet (a priority binding saved a half-typed line)
        Binding("ctrl+s", "save", "Save & evaluate", id="editor.save",
                tooltip="Save (your own file in place; a library candidate as a copy) and evaluate; you stay here"),
        Binding("ctrl+a", "select_all", "Select all", id="editor.select_all", priority=True,
                tooltip="Select the whole source"),
        Binding("escape", "close", "Close", id="editor.close", priority=True,
                tooltip="Back to the library (asks first if there are unsaved changes)"),
    ]

    def __init__(self, task: Task, folder: Path, name: str, *, source: Candidate | None = None,
                 on_save: Callable[[Candidate], None] | None = None) -> None:
        super().__init__()
        self.kb_task, self.folder, self.default_name = task, folder, name
        self.source = source
        # your own file (✎ or a --candidates folder) is edited in place; a library one is copied
        self.in_place = source is not None and source.origin != "library" and source.path is not None
        if source is not None:
            self._initial = harmless(source.src)
        else:
            self._initial = TEMPLATE.format(intent="My kernel: what it tries (the first docstring line is its intent).",
                                            body=task.ref_src.strip("\n"))
        self._saved_text = self._initial
        self.on_save = on_save
        self.saved: Candidate | None = None  # the candidate as last saved (its verdict shows here)

    def compose(self) -> ComposeResult:
        what = (f"Editing {self.source.key}" if self.in_place and self.source else
                f"New candidate for {self.kb_task.name}" + (f", from {self.source.key}" if self.source else ""))
        yield Static(plain(f" {what}: {self.kb_task.description}"), id="editor-title")  # names: never markup
        with Horizontal(id="editor-name-row"):
            yield Label("name ", id="editor-name-label")
            yield Input(self.default_name, id="editor-name", restrict=r"[A-Za-z0-9_]*", max_length=64)
            yield Static(plain(f"  → {self._target_dir()}/<name>.py"), id="editor-path")
        # shown harmless: a raw control character in the file would reach the terminal (saving writes it
        # out as an escape, which Python reads back the same inside a string literal)
        yield CodeEditor.code_editor(harmless(self._initial), language=language_for(self._initial), id="editor")
        yield Static(id="editor-verdict")
        yield Footer()

    def _target_dir(self) -> Path:
        if self.in_place and self.source is not None and self.source.path is not None:
            return self.source.path.parent
        return self.folder / self.kb_task.name

    def on_mount(self) -> None:
        ta = self.query_one("#editor", TextArea)
        code_theme = getattr(self.app, "code_theme", None)
        if code_theme is not None:
            ta.theme = code_theme()
        ta.focus()
        self.set_verdict(Content.assemble(("ctrl+s saves and evaluates; the verdict shows here", "$text-muted")))

    # -- editing ----------------------------------------------------------------------------------

    def action_select_all(self) -> None:
        self.query_one("#editor", TextArea).select_all()

    @property
    def text(self) -> str:
        return self.query_one("#editor", TextArea).text

    @property
    def dirty(self) -> bool:
        return self.text != self._saved_text

    # -- saving -----------------------------------------------------------------------------------

    def action_save(self) -> None:
        name = self.query_one("#editor-name", Input).value.strip()
        if not NAME_RE.match(name):
            notify(self, "A name is letters, digits and _, not starting with a digit.", severity="error")
            return
        path = self._target_dir() / f"{name}.py"
        own = self.saved.path if self.saved is not None else self.source.path if self.in_place and self.source else None
        if path.exists() and path != own:
            notify(self, f"{path} exists; pick another name.", severity="error")
            return
        src = self.text
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(src, encoding="utf-8")
        except OSError as e:
            notify(self, f"Cannot save {path}: {e}", severity="error")
            return
        origin = self.source.origin if self.in_place and self.source is not None else "user"
        cand = Candidate(self.kb_task.name, name, intent_or_note(src), src, path, origin)
        self._saved_text = src
        self.saved = cand
        self.set_verdict(Content.assemble(("⟳ saved ", "$text-accent"), part(path, "$text-muted"),
                                          ("; evaluating…", "$text-accent")))
        if self.on_save is not None:
            self.on_save(cand)

    # -- the verdict, beside the code --------------------------------------------------------------

    def set_verdict(self, content: Content) -> None:
        self.query_one("#editor-verdict", Static).update(content)

    def show_result(self, result: Result | None, note: str = "") -> None:
        """The evaluation of what was saved: the verdict under the code; an error's line selected."""
        if result is None:
            self.set_verdict(Content.assemble(part(note or "cancelled", "$text-warning")))
            return
        style = "$" + look(result.status).style
        body = Content.assemble(part(sentence(result), style))
        line = error_line(result.msg) if result.status != "correct" else None
        ta = self.query_one("#editor", TextArea)
        if line is not None and 1 <= line <= ta.document.line_count:
            text = ta.document.get_line(line - 1)
            ta.selection = Selection((line - 1, 0), (line - 1, len(text)))
            ta.scroll_cursor_visible(center=True)
            body = Content.assemble((f"line {line} ▸ ", f"bold {style}"), body)
        fix = "  · fix it and ctrl+s again" if result.status != "correct" else ""
        self.set_verdict(Content.assemble(body, (fix, "$text-muted")))
        self.error_line = line

    error_line: int | None = None

    # -- leaving ----------------------------------------------------------------------------------

    def action_close(self) -> None:
        if not self.dirty:
            self.dismiss(None)
            return

        def answered(discard: bool | None) -> None:
            if discard:
                self.dismiss(None)

        self.app.push_screen(ConfirmDiscard(), answered)

    def reload(self, src: str) -> bool:
        """The file changed on disk: take it when nothing here is unsaved. Returns whether it was taken."""
        if self.dirty:
            notify(self, "The file changed on disk; your unsaved edit is kept (ctrl+s overwrites it).",
                        severity="warning")
            return False
        self.query_one("#editor", TextArea).load_text(harmless(src))
        self._saved_text = harmless(src)
        return True
