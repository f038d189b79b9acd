"""The models screen's tree: tasks → models → samples, each sample with its stored verdict badge and each
model with its counts per status (the same vocabulary as the library tree: ``kbench.core.status``).

Labels are rich ``Text`` of harmless names: a sample named ``[@click=app.quit]x`` is text."""

from __future__ import annotations

from collections import Counter

from rich.cells import cell_len
from rich.text import Text
from textual.binding import Binding
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from kbench.core.status import badge_text, look, short_badge
from kbench.core.text import one_line

from ..models import GradedModels, ModelSample

#: ("task", name) | ("model", "<task>\0<model>") | ("sample", "<model>\0<task>\0<sample>")
NodeData = tuple[str, str]
LEAF_INDENT = 4  # two guide levels before a sample's label
WIDE_BADGE = 15
NARROW_BADGE = 8
COUNT_ORDER = ("correct", "wrong", "rejected", "compile_error", "runtime_error", "not_evaluated")


def sample_data(s: ModelSample) -> NodeData:
    return ("sample", f"{s.model}\0{s.task}\0{s.name}")


class ModelTree(Tree[NodeData]):
    BINDINGS = [
        Binding("down", "cursor_down", "Browse", key_display="↑↓", id="models.tree.down",
                tooltip="Next task, model or sample"),
        Binding("up", "cursor_up", "Browse up", show=False, id="models.tree.up", tooltip="Previous node"),
    ]

    def __init__(self, **kw) -> None:  # type: ignore[no-untyped-def]
        super().__init__("models", **kw)
        self.show_root = False
        self.guide_depth = 2
        self._models: GradedModels | None = None
        self.samples: dict[NodeData, ModelSample] = {}
        self._sample_nodes: dict[NodeData, TreeNode[NodeData]] = {}
        self._model_nodes: dict[tuple[str, str], TreeNode[NodeData]] = {}

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.refresh_badges())

    def _style(self, kind: str) -> str:
        return self.app.theme_variables.get(look(kind).style, "")

    def _layout(self) -> tuple[int, bool]:
        """(name column width, narrow badges), as the library tree decides it."""
        names = [one_line(s.name) for n in (self._models.names if self._models else [])
                 for s in self._models.samples(n)]  # type: ignore[union-attr]
        longest = max((cell_len(n) for n in names), default=8)
        w = self.scrollable_content_region.width
        room = w - LEAF_INDENT - 2 if w > 0 else 0  # samples sit one level deeper than the library's
        if room <= 0:
            return min(longest, 22), False
        if room >= longest + 1 + WIDE_BADGE:
            return longest, False
        return max(min(longest, room - 1 - NARROW_BADGE), 6), True

    def _sample_label(self, s: ModelSample, width: int, narrow: bool) -> Text:
        assert self._models is not None
        stored = self._models.verdict(s)
        text, kind = (short_badge if narrow else badge_text)(stored.result if stored else None)
        out = Text(one_line(s.name))
        out.truncate(width, overflow="ellipsis", pad=True)
        out.append(" ")
        out.append(text, style=self._style(kind))
        return out

    def _model_label(self, model: str, task: str) -> Text:
        """``name  ✓2 ✗1 !1``: the model's samples of this task counted by stored status."""
        assert self._models is not None
        counts: Counter[str] = Counter()
        for s in self._models.for_task(model, task):
            stored = self._models.verdict(s)
            status = stored.result.status if stored else "not_evaluated"
            counts["compile_error" if status == "runtime_error" else status] += 1  # one "!" for both errors
        out = Text(one_line(model, 20), style="bold")
        for status in COUNT_ORDER:
            if counts[status]:
                out.append(f" {look(status).symbol}{counts[status]}", style=self._style(status))
        return out

    def on_resize(self) -> None:
        self.refresh_badges()

    def build(self, models: GradedModels, select: NodeData | None = None) -> None:
        """(Re)build: every task any model has samples for, each model's samples under it."""
        self._models = models
        keep = select or (self.cursor_node.data if self.cursor_node is not None else None)
        self.clear()
        self.samples.clear()
        self._sample_nodes.clear()
        self._model_nodes.clear()
        width, narrow = self._layout()
        for task in models.tasks():
            tnode = self.root.add(Text(one_line(task), style="bold"), ("task", task), expand=True)
            for model in models.names:
                samples = models.for_task(model, task)
                if not samples:
                    continue
                mnode = tnode.add(self._model_label(model, task), ("model", f"{task}\0{model}"), expand=True)
                self._model_nodes[(task, model)] = mnode
                for s in samples:
                    data = sample_data(s)
                    self.samples[data] = s
                    self._sample_nodes[data] = mnode.add_leaf(self._sample_label(s, width, narrow), data)
        if keep is not None:
            self.call_after_refresh(self.select_data, keep)

    def refresh_badges(self) -> None:
        if self._models is None:
            return
        width, narrow = self._layout()
        for data, node in self._sample_nodes.items():
            node.set_label(self._sample_label(self.samples[data], width, narrow))
        for (task, model), node in self._model_nodes.items():
            node.set_label(self._model_label(model, task))

    def selected_sample(self) -> ModelSample | None:
        node = self.cursor_node
        return self.samples.get(node.data) if node is not None and node.data is not None else None

    def selected_task(self) -> str | None:
        node = self.cursor_node
        while node is not None and node.data is not None and node.data[0] != "task":
            node = node.parent
        return node.data[1] if node is not None and node.data is not None else None

    def select_data(self, data: NodeData) -> None:
        for node in self._walk(self.root):
            if node.data == data:
                self.move_cursor(node)
                return

    def _walk(self, node: TreeNode[NodeData]):  # type: ignore[no-untyped-def]
        for child in node.children:
            yield child
            yield from self._walk(child)
