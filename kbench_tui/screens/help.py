"""F1 / ?: every key of the main screen (from its BINDINGS) and the ideas behind the explorer."""

from __future__ import annotations

from typing import Iterable

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

INTRO = """\
# kbench explorer

Walk the library with the arrow keys, press **e** and watch the evaluator work step by step.

**Modes.** *naive* is KernelBench v0 by definition: 5 trials on normal inputs, the reference in the
same process, `allclose(1e-2)`, blocked timing. It does **not** change with the distribution toggles.
*hardened* is kbench's grader: a static check, one trial per distribution, inputs and judging outside
the candidate's process, exact checks, interleaved timing with a 95 % interval.

**Distributions (1-7) apply to hardened.** The explorer evaluates hardened on all seven distributions
at once, so a toggle re-reads verdicts instantly; where a verdict cannot be read off (the run stopped
early on a distribution now off) it is evaluated in the background and the view updates when it
arrives. Try: **7** on makes `L1_layernorm/no_eps` wrong; **4** and **5** off leave `L1_softmax/no_max`
wrong (every distribution carries a few rows with logits an unstabilised exp cannot take).

**Badges.** ✓ speedup · ✗ wrong · ⊘ rejected · ! compile/runtime error · · not evaluated ·
✎ your candidate · ⌂ from a `--candidates` folder.

**fast_p** counts a candidate when it is correct *and* more than p× faster than the reference; per
task the share of its candidates, averaged over tasks, over evaluated candidates only. *oracle*: the
share of tasks where any candidate qualifies (hardened). *fast₁@k*: k tries per task.

**Stored results.** Results are kept in a SQLite file in your data directory, keyed by the
candidate's content, mode, distributions and kbench version; reopening shows them at once with their
date. **r** re-runs.

## Keys
"""


def keys_table(bindings: Iterable[BindingType]) -> str:
    rows = ["| key | action |", "|---|---|"]
    for b in bindings:
        if not isinstance(b, Binding) or b.key == "up":
            continue
        key = {"down": "↑ ↓", "f1,question_mark": "F1, ?"}.get(b.key, b.key)
        rows.append(f"| `{key}` | {b.tooltip or b.description} |")
    rows.append("| `ctrl+p` | command palette (every key above, themes, screenshot) |")
    rows.append("| `tab` | next pane (the log and sources scroll with the arrow keys / mouse) |")
    return "\n".join(rows)


def defence_help() -> str:
    """The defences, one line each from the catalogue: what each catches and which attack needs it."""
    from kbench.core import defences as catalogue

    rows = ["## Defences (g)", "",
            "Each of hardened's defences is a switch (**g**; **N** / **H**: naive / hardened presets; the palette "
            "has one entry per defence). *derived*: switching it off is read off the one hardened run at once; "
            "*own run*: it changes the run itself, so kbench runs hardened without it in the background.", "",
            "| defence | off is | catches | needed by |", "|---|---|---|---|"]
    for d in catalogue.DEFENCES:
        cases = ", ".join(c.partition(":")[2] for c in d.cases)
        rows.append(f"| `{d.name}` ({d.title}) | {'derived' if d.derived else 'own run'} | {d.catches} | {cases} |")
    return "\n".join(rows)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,f1,question_mark,q", "dismiss", "Close", id="help.close")]

    def __init__(self, bindings: Iterable[BindingType], extra: str = "") -> None:
        super().__init__()
        self._md = INTRO + keys_table(bindings) + ("\n\n" + extra if extra else "")

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body"):
            yield Markdown(self._md)

    def on_mount(self) -> None:
        body = self.query_one("#help-body")
        body.border_title = "help"
        body.border_subtitle = "esc closes"
        body.focus()
