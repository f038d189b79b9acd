"""Centre pane: the candidate's intent and verdicts, then reference and candidate side by side, or
their diff (``d``).

The candidate's source is shown harmless (control characters written out: a raw ESC in a string
literal would otherwise reach the terminal) and every title is plain ``Content`` (a file name is never
markup). When the pane is too short for the module docstring and some code, the docstring is folded:
the pane opens on the first line of code (the docstring's first line is the title above) and its border
says where the docstring went."""

from __future__ import annotations

import re

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static, TextArea

from kbench.core.library import Candidate
from kbench.core.tasks import Task
from kbench.core.text import harmless

from ..text import part, title
from .diff import diff_content

#: Fold the docstring when fewer than this many rows would be left for code below it.
MIN_CODE_ROWS = 8
#: Sources longer than this are shown without highlighting: TextArea's highlighting grew quadratically
#: (a 1 MB candidate took 170 s to show, 100 KB 1.4 s; library candidates are about 2 KB).
HIGHLIGHT_MAX_CHARS = 32_000


def language_for(src: str) -> str | None:
    """``"python"``, or None (plain text) for a source too large to highlight quickly."""
    return "python" if len(src) <= HIGHLIGHT_MAX_CHARS else None
_OPENING = re.compile("(?i)[rubf]{0,2}(\"\"\"|''')")


def docstring_span(src: str) -> tuple[int, int] | None:
    """(last docstring line, first code line after it), 0-based, when ``src`` opens with a triple-quoted
    module docstring; found by scanning, not parsing (the source is hostile and may be a megabyte)."""
    head = len(src) - len(src.lstrip())
    m = _OPENING.match(src, head)
    if m is None:
        return None
    end = src.find(m.group(1), m.end())
    if end < 0:
        return None
    stop = end + 3
    last = src.count("\n", 0, stop)
    lines = src.split("\n")
    first_code = next((i for i in range(last + 1, len(lines)) if lines[i].strip()), None)
    return (last, first_code) if first_code is not None else None


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
        ref.border_title = title("reference", task.name)
        cta = self.query_one("#cand-src", TextArea)
        if cand is None:
            cta.language = None
            cta.load_text("")
            cta.language = "python"
            cta.border_title = title("candidate")
            self.query_one("#intent", Static).update(
                Content.assemble((task.name, "bold"), f" (level {task.level}): {task.description}"))
        else:
            # plain while the text changes: highlighting the previous (maybe 1 MB) text again is what is slow
            cta.language = None
            cta.load_text(harmless(cand.src))
            cta.language = language_for(cand.src)
            cta.border_title = title("candidate", cand.name) if cta.language else \
                title("candidate", cand.name, f"{len(cand.src) // 1000} KB, not highlighted")
            origin = "" if cand.origin == "library" else f"  [{cand.origin if cand.origin == 'user' else cand.path}]"
            self.query_one("#intent", Static).update(
                Content.assemble(part(f"{cand.task}/{cand.name}", "bold"), "  ", part(cand.intent, "italic", 300),
                                 part(origin, "$text-muted")))
        ref.scroll_home(animate=False)
        self._fold = docstring_span(cand.src) if cand is not None else None
        self.fold_docstring()
        self._render_diff()

    _fold: tuple[int, int] | None = None

    def on_resize(self) -> None:
        self.call_after_refresh(self.fold_docstring)

    def fold_docstring(self) -> None:
        """Open the candidate on its code when the docstring would fill the pane; otherwise at the top."""
        cta = self.query_one("#cand-src", TextArea)
        rows = cta.scrollable_content_region.height
        fold = self._fold
        if fold is None or rows <= 0 or rows - (fold[0] + 1) >= MIN_CODE_ROWS:
            cta.border_subtitle = None
            cta.scroll_home(animate=False)
            return
        cta.border_subtitle = title(f"docstring: lines 1–{fold[0] + 1} (title above) · scroll up")
        cta.scroll_to(y=fold[1], animate=False, immediate=True)

    _verdicts: Content | None = None

    def set_verdicts(self, content: Content) -> None:
        """Show the verdict rows: unchanged rows are not redrawn, and rows as tall as the last ones do not lay
        the screen out again (a defence switch rewrites them: a layout would re-render every pane)."""
        if content == self._verdicts:
            return
        static = self.query_one("#verdicts", Static)
        width = static.content_size.width
        same_height = self._verdicts is not None and width > 0 and \
            content.get_height(static.styles, width) == self._verdicts.get_height(static.styles, width)
        self._verdicts = content
        static.update(content, layout=not same_height)

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
            pane.border_title = title("diff")
        else:
            body = diff_content(self._shown_task.ref_src.strip("\n") + "\n", harmless(self._cand.src))
            pane.border_title = title("diff", f"reference → {self._cand.name}   (- removed, + added)")
        self.query_one("#diff", Static).update(body)
