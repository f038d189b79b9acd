"""The library tree: levels → tasks → candidates, each candidate with its verdict badge.

Labels are rich ``Text`` of harmless names (never markup: a file named ``[@click=app.quit]x`` is text)."""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from kbench.core.library import Candidate
from kbench.core.status import badge_text, look, short_badge
from kbench.core.tasks import TASKS
from kbench.core.tasks import active as active_tasks
from kbench.core.text import one_line

from ..model import Model, cid
from ..tasks import label as task_label
from ..tasks import shown as shown_tasks


NodeData = tuple[str, str]  # ("level", "1") | ("task", name) | ("cand", cid)
LEAF_INDENT = 4  # "│ ├ ": the guides before a candidate's label (guide_depth 2, two levels)
WIDE_BADGE = 15  # "! runtime_error"
NARROW_BADGE = 8  # "⊘ reject" (kbench.core.status.short_badge)


class CandidateTree(Tree[NodeData]):
    """Arrow keys browse; the tree says what is under its cursor with a typed ``Selected`` message (the panes
    never read a node's data)."""

    class Selected(Message):
        """The cursor is on a new node: ``task`` (a level node: its first task) and ``candidate`` (None on a task
        or a level node)."""

        def __init__(self, task: str | None, candidate: Candidate | None) -> None:
            super().__init__()
            self.task = task
            self.candidate = candidate

    BINDINGS = [
        Binding("down", "cursor_down", "Browse", key_display="↑↓", id="kbench.tree.down",
                tooltip="Next node in the library"),
        Binding("up", "cursor_up", "Browse up", show=False, id="kbench.tree.up", tooltip="Previous node"),
    ]

    def __init__(self, **kw) -> None:  # type: ignore[no-untyped-def]
        super().__init__("kbench", **kw)
        self.show_root = False
        self.guide_depth = 2
        self._cand_nodes: dict[str, TreeNode[NodeData]] = {}
        self._labels: dict[str, Text] = {}  # per candidate id: the label shown (only a changed one is redrawn)
        self._model: Model | None = None

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.refresh_badges(self._model))

    def _style(self, kind: str) -> str:
        return self.app.theme_variables.get(look(kind).style, "")

    @staticmethod
    def _shown_name(c) -> str:  # type: ignore[no-untyped-def]
        """The shown name: harmless, one line (a file name can hold escapes, newlines, markup), with its mark."""
        name = one_line(c.name)
        return name if c.origin == "library" else f"{name} ✎" if c.origin == "user" else f"{name} ⌂"

    def _label(self, model: Model, c, width: int, narrow: bool) -> Text:  # type: ignore[no-untyped-def]
        known = model.verdict(c)
        text, kind = (short_badge if narrow else badge_text)(known.result if known else None)
        label = Text(self._shown_name(c))
        label.truncate(width, overflow="ellipsis", pad=True)  # in cells: wide characters count twice
        label.append(" ")
        label.append(text, style=self._style(kind))
        return label

    def _room(self) -> int:
        """Cells a candidate's label can use: the tree's content width less the two guide levels."""
        w = self.scrollable_content_region.width
        return w - LEAF_INDENT if w > 0 else 0

    def _layout(self, model: Model) -> tuple[int, bool]:
        """(name column width, narrow badges): full badges only when the longest name fits beside them;
        otherwise badges of at most 8 cells, so names stay readable (every library name at 80 columns)."""
        longest = max((cell_len(self._shown_name(c)) for c in model.candidates), default=8)
        room = self._room()
        if room <= 0:
            return min(longest, 22), False
        if room >= longest + 1 + WIDE_BADGE:
            return longest, False
        return max(min(longest, room - 1 - NARROW_BADGE), 8), True

    def on_resize(self) -> None:
        self.refresh_badges(self._model)

    def build(self, model: Model, select: NodeData | None = None) -> None:
        """(Re)build from the model; the cursor goes to ``select``, else stays on the same node."""
        self._model = model
        keep = select or (self.cursor_node.data if self.cursor_node is not None else None)
        self.clear()
        self._cand_nodes.clear()
        self._labels.clear()
        levels: dict[int, TreeNode[NodeData]] = {}
        for task in sorted(shown_tasks(), key=lambda t: t.level):  # by level; in each, the nine first
            if task.level not in levels:
                levels[task.level] = self.root.add(f"Level {task.level}", ("level", str(task.level)), expand=True)
            tnode = levels[task.level].add(task_label(task), ("task", task.name), expand=True)
            for c in model.for_task(task.name):
                label = self._labels[cid(c)] = self._label(model, c, *self._layout(model))
                self._cand_nodes[cid(c)] = tnode.add_leaf(label, ("cand", cid(c)))
        if keep is not None:
            self.call_after_refresh(self.select_data, keep)

    def refresh_badges(self, model: Model | None) -> None:
        """Relabel the candidates whose badge (or width, or theme) changed; an unchanged line is not redrawn."""
        if model is None:
            return
        width, narrow = self._layout(model)
        for task in shown_tasks():
            for c in model.for_task(task.name):
                key = cid(c)
                node = self._cand_nodes.get(key)
                if node is None:
                    continue
                label = self._label(model, c, width, narrow)
                if label != self._labels.get(key):
                    self._labels[key] = label
                    node.set_label(label)

    def selection(self) -> tuple[str | None, Candidate | None]:
        """(task, candidate) under the cursor: a task node gives its task, a level node its first task."""
        node = self.cursor_node
        if node is None or node.data is None or self._model is None:
            return TASKS[0].name, None
        kind, value = node.data
        if kind == "cand":
            c = self._model.get(value)
            return (c.task if c else None), c
        if kind == "task":
            return value, None
        return next(t.name for t in active_tasks() if str(t.level) == value), None

    def watch_cursor_line(self, previous_line: int, line: int) -> None:
        # posted where Tree posts NodeHighlighted (not from its handler): the panes follow the cursor as soon
        # as they did when they read the node themselves
        before = self._get_node(previous_line)
        super().watch_cursor_line(previous_line, line)
        node = self.cursor_node
        if previous_line != line and node is not None and node != before:
            self.post_message(self.Selected(*self.selection()))

    def select_data(self, data: NodeData) -> None:
        for node in self._walk(self.root):
            if node.data == data:
                self.move_cursor(node)
                return

    def _walk(self, node: TreeNode[NodeData]):  # type: ignore[no-untyped-def]
        for child in node.children:
            yield child
            yield from self._walk(child)
