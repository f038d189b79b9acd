"""Centre pane: the candidate's intent and verdicts, then reference and candidate side by side, or
their diff (``d``)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static, TextArea

from kbench.core.library import Candidate
from kbench.core.tasks import Task

from .diff import diff_content


def _code(id: str) -> TextArea:
    ta = TextArea("", language="python", read_only=True, show_line_numbers=True, soft_wrap=False, id=id)
    ta.cursor_blink = False
    return ta


class SourceView(Vertical):
    show_diff: reactive[bool] = reactive(False, init=False)
    """Show the reference → candidate diff instead of the two sources."""

    def __init__(self, **kw) -> None:  # type: ignore[no-untyped-def]
        super().__init__(**kw)
        self._shown_task: Task | None = None
        self._cand: Candidate | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="intent")
        yield Static(id="verdicts")
        with Horizontal(id="sources"):
            yield _code("ref-src")
            yield _code("cand-src")
        with VerticalScroll(id="diff-pane"):
            yield Static(id="diff")

    def on_mount(self) -> None:
        self.query_one("#diff-pane").display = False
        code_theme = getattr(self.app, "code_theme", None)
        if code_theme is not None:  # highlighting that reads on this theme (the app keeps it in step)
            for ta in self.query(TextArea):
                ta.theme = code_theme()

    def show(self, task: Task, cand: Candidate | None) -> None:
        """Show a task's reference and (if any) one of its candidates."""
        changed_task = task is not self._shown_task
        self._shown_task, self._cand = task, cand
        ref = self.query_one("#ref-src", TextArea)
        if changed_task:
            ref.load_text(task.ref_src.strip("\n") + "\n")
        ref.border_title = f"reference · {task.name}"
        cta = self.query_one("#cand-src", TextArea)
        if cand is None:
            cta.load_text("")
            cta.border_title = "candidate"
            self.query_one("#intent", Static).update(
                Content.assemble((task.name, "bold"), f" (level {task.level}): {task.description}"))
        else:
            cta.load_text(cand.src)
            cta.border_title = f"candidate · {cand.name}"
            origin = "" if cand.origin == "library" else f"  [{cand.origin if cand.origin == 'user' else cand.path}]"
            self.query_one("#intent", Static).update(
                Content.assemble((f"{cand.task}/{cand.name}", "bold"), "  ", (cand.intent, "italic"),
                                 (origin, "$text-muted")))
        ref.scroll_home(animate=False)
        cta.scroll_home(animate=False)
        self._render_diff()

    def set_verdicts(self, content: Content) -> None:
        self.query_one("#verdicts", Static).update(content)

    def watch_show_diff(self, show: bool) -> None:
        self.query_one("#sources").display = not show
        self.query_one("#diff-pane").display = show
        self._render_diff()

    def _render_diff(self) -> None:
        if not self.show_diff or self._shown_task is None:
            return
        pane = self.query_one("#diff-pane", VerticalScroll)
        if self._cand is None:
            body = Content.assemble(("select a candidate to see what it changed", "$text-muted"))
            pane.border_title = "diff"
        else:
            body = diff_content(self._shown_task.ref_src.strip("\n") + "\n", self._cand.src)
            pane.border_title = f"diff · reference → {self._cand.name}   (- removed, + added)"
        self.query_one("#diff", Static).update(body)
