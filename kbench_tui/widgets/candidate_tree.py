"""The library tree: levels → tasks → candidates, each candidate with its verdict badge."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from kbench.core.status import badge_text, look, short_badge
from kbench.core.tasks import TASKS

from ..model import Model, cid


NodeData = tuple[str, str]  # ("level", "1") | ("task", name) | ("cand", cid)


class CandidateTree(Tree[NodeData]):
    """Arrow keys browse; the screen listens to ``NodeHighlighted``."""

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
        self._model: Model | None = None

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.refresh_badges(self._model))

    def _style(self, kind: str) -> str:
        return self.app.theme_variables.get(look(kind).style, "")

    def _label(self, model: Model, c, width: int) -> Text:  # type: ignore[no-untyped-def]
        known = model.verdict(c)
        narrow = 0 < self.size.width < 40
        text, kind = (short_badge if narrow else badge_text)(known.result if known else None)
        name = c.name if c.origin == "library" else f"{c.name} ✎" if c.origin == "user" else f"{c.name} ⌂"
        if len(name) > width:
            name = name[: width - 1] + "…"
        label = Text(f"{name:<{width}} ")
        label.append(text, style=self._style(kind))
        return label

    def _width(self, model: Model) -> int:
        """Name column: the longest name, at most 22, and narrower when the tree is (badges stay visible)."""
        badge_room = 11 if self.size.width < 40 else 16  # "⊘ rejected" / "! runtime_error"
        room = self.size.width - 8 - badge_room if self.size.width else 22  # guides and scrollbar
        return max(min(max((len(c.name) + (c.origin != "library") * 2 for c in model.candidates), default=0), 22,
                       room), 8)

    def on_resize(self) -> None:
        self.refresh_badges(self._model)

    def build(self, model: Model, select: NodeData | None = None) -> None:
        """(Re)build from the model; the cursor goes to ``select``, else stays on the same node."""
        self._model = model
        keep = select or (self.cursor_node.data if self.cursor_node is not None else None)
        self.clear()
        self._cand_nodes.clear()
        levels: dict[int, TreeNode[NodeData]] = {}
        for task in TASKS:
            if task.level not in levels:
                levels[task.level] = self.root.add(f"Level {task.level}", ("level", str(task.level)), expand=True)
            tnode = levels[task.level].add(Text(task.name, style="bold"), ("task", task.name), expand=True)
            for c in model.for_task(task.name):
                self._cand_nodes[cid(c)] = tnode.add_leaf(self._label(model, c, self._width(model)), ("cand", cid(c)))
        if keep is not None:
            self.call_after_refresh(self.select_data, keep)

    def refresh_badges(self, model: Model | None) -> None:
        if model is None:
            return
        width = self._width(model)
        for task in TASKS:
            for c in model.for_task(task.name):
                node = self._cand_nodes.get(cid(c))
                if node is not None:
                    node.set_label(self._label(model, c, width))

    def select_data(self, data: NodeData) -> None:
        for node in self._walk(self.root):
            if node.data == data:
                self.move_cursor(node)
                return

    def _walk(self, node: TreeNode[NodeData]):  # type: ignore[no-untyped-def]
        for child in node.children:
            yield child
            yield from self._walk(child)
