"""The evaluator log: one line per step event, coloured by verdict, wrapped; it follows the end until
the reader scrolls up (the border says which), and shows one candidate's history at a time.

Every line is a rich ``Text`` (never markup) of harmless text (``kbench.core.text``): a message, a name
or what a candidate printed cannot style, act or forge a line. Printed output spans several lines, each
behind a bar."""

from __future__ import annotations

from rich.text import Text
from textual.content import Content
from textual.geometry import Size
from textual.reactive import Reactive
from textual.widgets import RichLog

from kbench.core.results import Event, Result
from kbench.core.status import event_sentence, look, sentence
from kbench.core.text import harmless, one_line

MAX_LINES = 5000
NAN_ALLOC_HINT = "alloc() buffers are NaN-filled in hardened mode: write every element you return"
DEGENERATE_OLD = " (degenerate: scale-aware)"
DEGENERATE_NEW = " (reference below the tolerance: judged relative to its scale)"


def trial_message(message: str, tolerance: str | None = None, alloc_nan: bool = False) -> str:
    """A trial line as a reader needs it: the tolerance it was judged with, the NaN-filled ``alloc`` rule
    when a NaN is what failed, and no alarming word for the scale-aware pass."""
    msg = message.replace(DEGENERATE_OLD, DEGENERATE_NEW)
    if alloc_nan and "NaN at" in msg and "NaN-filled" not in msg:
        msg += f" ({NAN_ALLOC_HINT})"
    if tolerance and "tolerance" not in msg and ("err" in msg or "pass" in msg):
        msg += f" · tol {tolerance}"
    return msg


THEME_VARS = ("text-success", "text-error", "text-warning", "text-muted", "text-accent")


def restyle(texts: list[Text], old: dict[str, str], new: dict[str, str]) -> None:
    """Swap one theme's colours for another's in already written lines (in place)."""
    swap = {old[v]: new[v] for v in THEME_VARS if old.get(v) and new.get(v) and old[v] != new[v]}
    if not swap:
        return

    def fix(style: object) -> object:
        if not isinstance(style, str):
            return style
        return " ".join(swap.get(word, word) for word in style.split(" "))

    for t in texts:
        t.style = fix(t.style)  # type: ignore[assignment]
        t.spans[:] = [span._replace(style=fix(span.style)) for span in t.spans]


class EvalLog(RichLog):
    #: A written line grows the virtual height. Textual lays the whole screen out for that (every scroll view's
    #: scrollbar re-rendered: the tree's alone took ~8 ms), though only this pane's scrollbar changes: so it is
    #: updated here, and a layout happens only when the scrollbar appears or goes (``show_vertical_scrollbar``
    #: is a layout reactive of its own).
    virtual_size: Reactive[Size] = Reactive(Size(0, 0), layout=False)

    def watch_virtual_size(self, size: Size) -> None:
        self._scroll_update(size)
        self.refresh()

    def __init__(self, **kw) -> None:  # type: ignore[no-untyped-def]
        super().__init__(max_lines=MAX_LINES, wrap=True, markup=False, highlight=False, auto_scroll=False, **kw)
        self.following = True
        self.texts: list[Text] = []  # what is shown, unwrapped: re-wrapped when the width changes
        self._wrapped_at = 0

    @property
    def plain(self) -> str:
        """The shown lines as plain text, one per logical line (tests, copying)."""
        return "\n".join(t.plain for t in self.texts)

    def on_resize(self) -> None:
        width = self.scrollable_content_region.width
        if width != self._wrapped_at and self.texts:
            self._rewrite()

    def _width(self) -> int | None:
        """Wrap at the pane's width (RichLog would measure the batch and never wrap below 78 columns)."""
        w = self.scrollable_content_region.width
        return w if w > 0 else None

    def _rewrite(self) -> None:
        self._wrapped_at = self.scrollable_content_region.width
        follow = self.following
        self.clear()
        self.write(Text("\n").join(self.texts[-MAX_LINES:]), width=self._width(), scroll_end=follow)

    def _color(self, var: str) -> str:
        return self.app.theme_variables.get(var, "")

    def _at_end(self) -> bool:
        return self.max_scroll_y - self.scroll_y <= 2

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        following = self._at_end()
        if following != self.following:
            self.following = following
            self._show_follow()

    def _show_follow(self) -> None:
        self.border_subtitle = "following" if self.following else "paused · end key follows again"

    def on_mount(self) -> None:
        self._show_follow()
        self._palette = {v: self._color(v) for v in THEME_VARS}

    def retheme(self, histories: list[list[Text]]) -> None:
        """The theme changed: recolour every kept line (``histories`` share Text objects with the view)."""
        new = {v: self._color(v) for v in THEME_VARS}
        seen: set[int] = set()
        for texts in [self.texts, *histories]:
            fresh = [t for t in texts if id(t) not in seen]
            seen.update(id(t) for t in fresh)
            restyle(fresh, self._palette, new)
        self._palette = new
        self._rewrite()

    def key_end(self) -> None:
        self.scroll_end(animate=False)
        self.following = True
        self._show_follow()

    def write_lines(self, lines: list[Text]) -> None:
        """Write a batch as one renderable; follow the end only if the reader is already there."""
        if not lines:
            return
        self.texts.extend(lines)
        follow = self.following
        self.write(Text("\n").join(lines), width=self._width(), scroll_end=follow)

    def show_history(self, title: Content, lines: list[Text]) -> None:
        """Replace the contents with one candidate's lines, at the end, following."""
        self.border_title = title
        self.following = True
        self._show_follow()
        self.texts = list(lines)
        self._rewrite()

    def header(self, text: str) -> Text:
        return Text(f"── {one_line(text)} ", style=f"bold {self._color('text-accent')}") + \
            Text("─" * 20, style=self._color("text-muted"))

    def note(self, text: str, var: str = "text-muted") -> Text:
        return Text(f"   {one_line(text)}", style=self._color(var))

    def event_line(self, ev: Event, tolerance: str | None = None, alloc_nan: bool = False,
                   verdict_label: str | None = None) -> Text:
        if ev.step == "verdict" and ev.status:
            var = look(ev.status).style
        else:
            var = {True: "text-success", False: "text-error", None: ""}[ev.ok]
        message = ev.message
        if ev.step == "trial":
            message = trial_message(message, tolerance, alloc_nan)
        elif ev.step == "verdict":
            message = event_sentence(ev)
        if ev.step == "verdict" and verdict_label:
            message = f"{verdict_label}: {message}"
        line = Text(f"{ev.elapsed:6.2f}s ", style=self._color("text-muted"))
        line.append(f"{one_line(ev.step, 12):<8}", style="bold")
        style = self._color(var) if var else ""
        if ev.step == "stdout":  # what the candidate printed: each of its lines behind a bar, none a log line
            first, *rest = harmless(message, keep="\n").split("\n")
            line.append(first, style=style)
            for more in rest:
                line.append("\n   │ " + more, style=style)
            return line
        line.append(one_line(message), style=style)
        return line

    def result_line(self, prefix: str, result: Result, extra: str = "", bold: bool = False) -> Text:
        style = self._color(look(result.status).style) + (" bold" if bold else "")
        return Text(f"   {one_line(prefix)}", style=self._color("text-muted")) + \
            Text(summary(result) + one_line(extra), style=style)


def summary(r: Result) -> str:
    """The one-line verdict every view prints (``kbench.core.status.sentence``), harmless."""
    return one_line(sentence(r))
