"""`o`: graded models side by side. Per task, each model's samples with their stored verdicts; per model
the scores ``kbench scores`` prints (same code: ``kbench.batch.scores``) and its fast_p curve, all
models on one plot. A sample opens like a candidate: its source, its stored log, and ``e``/``r`` grade it
through the explorer's evaluation path (``app.evaluate_fn``), stored under its model and sample name as
``kbench grade`` stores it.

A sample's name, its model's name and its text are candidate text: every face here shows them through
``kbench_tui.text`` / ``one_line`` (never markup), the source through ``SourceView`` (harmless).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer, Static, Tree

from kbench.core.modes import Mode
from kbench.core.results import Result
from kbench.core.status import failure_text
from kbench.core.tasks import TASK
from kbench.grading.pipeline import Cancelled
from kbench.sandbox.confine import missing_layers

from ..messages import EvalFinished, EventBuffer, StepEvents
from ..model import cid
from ..models import GradedModels, ModelSample
from ..runner import Job, Run, Scheduler
from ..text import notify, part, title
from ..widgets.eval_log import EvalLog, summary
from ..widgets.fastp_curve import FastPCurve
from ..widgets.model_scores import ModelScores
from ..widgets.model_tree import ModelTree
from ..widgets.source_view import SourceView
from .help import HelpScreen, keys_table

if TYPE_CHECKING:
    from textual.app import App

    from kbench.store import Store

HELP = """\
# Models side by side

Each model is a folder of samples graded with `kbench grade` (or opened with `kbench --model DIR`):
the tree lists, per task, each model's samples with their **stored** verdicts (✓ speedup · ✗ wrong ·
⊘ rejected · ! error · · not graded under this mode); a model's row counts them.

**Scores** are `kbench scores`' numbers for all tasks, computed by the same code: fast_p is
noise-aware (a sample counts as faster than p only when its speedup's 95 % interval lies above p),
the point estimate in brackets when it differs; fast₁@k is the unbiased estimator, averaged over all
tasks (a task without samples counts 0). The curve draws every timed model's fast_p against p.

**m** switches between the modes the models were graded under (a correctness-only run is a mode of its
own, "untimed"). **e** on a sample shows its stored verdict or grades it; **r** grades it again; the
result is stored under its model, so `kbench scores` counts it too. A model known only from the store
shows no source: open its folder with `kbench --model NAME=DIR`.

## Keys
"""


def isolation_line(result: Result) -> str:
    """Which OS layers confined the sample's worker (and which were missing): never silent."""
    if not result.isolation:
        return "isolation: not recorded (decided before a worker started)"
    missing = missing_layers(result.isolation)
    return "isolation: " + ", ".join(result.isolation) + (f" (missing: {', '.join(missing)})" if missing else "")


class ModelsHelp(HelpScreen):
    def __init__(self, bindings: list) -> None:  # type: ignore[type-arg]
        super().__init__(bindings)
        self._md = HELP + keys_table(bindings)


class ModelsScreen(Screen[None]):
    # Layout (app.tcss): from 110 columns the tree, the sample (source and log) and the scores; below, the
    # tree and the scores, and s (or enter on a sample) swaps the sample in.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-medium"), (170, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (34, "-tall")]

    BINDINGS = [
        Binding("e", "evaluate", "Evaluate", id="models.evaluate",
                tooltip="Grade the selected sample in the shown mode (a stored verdict is shown instead; r re-grades)"),
        Binding("r", "rerun", "Re-grade", id="models.rerun",
                tooltip="Grade the selected sample again; the result is stored under its model"),
        Binding("m", "next_mode", "Mode", id="models.mode",
                tooltip="Show the next mode the models were graded under (badges, scores, curves)"),
        Binding("s", "scores", "Scores", id="models.scores",
                tooltip="Show or hide the scores (below 110 columns: swap the scores and the sample)"),
        Binding("escape", "back", "Back", id="models.back",
                tooltip="Cancel a running grading; when none runs, back to the library"),
        Binding("o", "close", "Library", id="models.close", tooltip="Back to the library"),
        Binding("f1,question_mark", "help", "Help", key_display="F1/?", id="models.help",
                tooltip="Keys and what the numbers mean"),
        Binding("q", "app.quit", "Quit", id="models.quit", tooltip="Quit the explorer"),
    ]

    def __init__(self, models: GradedModels, store: "Store | None", evaluate_fn: Any) -> None:
        super().__init__()
        self.models, self.store, self.evaluate_fn = models, store, evaluate_fn
        self.scheduler = Scheduler()
        self._grading: dict[str, ModelSample] = {}  # candidate id -> the sample its job grades
        self._history: dict[str, list[Text]] = {}  # per sample: its log lines this session
        self._log_key: str | None = None
        self._pending = False
        self._opened = False

    def compose(self) -> ComposeResult:
        yield Static(id="models-status")
        with Horizontal(id="models-body"):
            yield ModelTree(id="models-tree")
            with Vertical(id="models-sample"):
                yield SourceView(id="source")
                yield EvalLog(id="log")
            with Vertical(id="models-scores"):
                yield ModelScores(id="models-fastp")
                yield FastPCurve(id="models-curve")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#models-tree").border_title = "models · tasks"
        self.query_one("#models-fastp").border_title = "fast_p per model"
        self.query_one("#models-curve").border_title = "fast_p vs p"
        tree = self.query_one(ModelTree)
        tree.build(self.models)
        tree.focus()
        for why in self.models.problems[:10]:
            notify(self, f"skipped {why}", severity="warning", timeout=10)
        self.refresh_views()
        self.show_selection()

    def on_resize(self) -> None:
        footer = self.query_one(Footer)
        footer.compact = self.size.width < 170
        footer.show_command_palette = self.size.width >= 110
        if self.is_mounted:
            self.refresh_views()  # the table is compact below 34 rows

    def on_screen_resume(self) -> None:
        """Opened again: what was graded meanwhile (``kbench grade`` in another terminal) is read in."""
        if not self._opened:
            self._opened = True  # the first showing: just read in
            return
        if self.store is not None and self.is_mounted and not self.scheduler.busy:
            self.models.reload(self.store.all())
            self.query_one(ModelTree).build(self.models)
            self.refresh_views()

    # -- selection --------------------------------------------------------------------------------

    def selected(self) -> ModelSample | None:
        return self.query_one(ModelTree).selected_sample() if self.is_mounted else None

    def on_tree_node_highlighted(self, _: Tree.NodeHighlighted) -> None:
        if not self._pending:  # let the cursor move reach the screen before the source redraws
            self._pending = True
            self.call_after_refresh(self._show_pending)
        self.refresh_bindings()

    def _show_pending(self) -> None:
        self._pending = False
        self.show_selection()

    def on_tree_node_selected(self, _: Tree.NodeSelected) -> None:
        """Enter on a sample opens it: below 110 columns the sample takes the scores' place."""
        if self.selected() is not None and self.has_class("-narrow"):
            self.remove_class("-scores-on")
            self.add_class("-scores-off")

    def show_selection(self) -> None:
        s = self.selected()
        task = s.task if s is not None else self.query_one(ModelTree).selected_task()
        view = self.query_one(SourceView)
        if task is not None and task in TASK:
            view.show(TASK[task], s.candidate if s is not None else None)
        self._show_log_for(s)
        self.refresh_verdicts()

    # -- the log: a sample's stored log, then what this session graded ---------------------------

    def _stored_log(self, s: ModelSample) -> list[Text]:
        log = self.query_one(EvalLog)
        lines = [log.header(f"{s.model}/{s.task}/{s.name}")]
        any_stored = False
        for mode, stored in self.models.verdicts(s):
            if stored is None:
                continue
            any_stored = True
            r = stored.result
            lines.append(log.note(f"{self.models.label_of(mode)} ({', '.join(r.dists)}), stored {stored.stored_at.astimezone():%Y-%m-%d %H:%M}",
                                  "text-accent"))
            for t in r.trials:
                lines.append(log.note(f"trial {t.index + 1}/{len(r.trials)} {t.dist}, {t.param_set}: "
                                      f"{'pass' if t.ok else 'FAIL'}, {t.message}",
                                      "text-success" if t.ok else "text-error"))
            if r.stdout:
                lines.append(log.note(f"printed: {r.stdout}"))
            lines.append(log.result_line("verdict: ", r, bold=True))
            lines.append(log.note(isolation_line(r), "text-muted" if not missing_layers(r.isolation) else "text-warning"))
        if not any_stored:
            lines.append(log.note("not graded in the store for this content (e grades it)" if s.candidate
                                  else "nothing stored for this content"))
        return lines

    def _show_log_for(self, s: ModelSample | None) -> None:
        log = self.query_one(EvalLog)
        key = s.key if s is not None else None
        if key == self._log_key and log.border_title:
            return
        self._log_key = key
        if s is None:
            log.show_history(title("log"), [log.note("select a sample (↑↓): its stored log and verdict show here")])
            return
        log.show_history(title("log", s.model, f"{s.task}/{s.name}"), self._stored_log(s) + self._history.get(key, []))

    def log_to(self, s: ModelSample, lines: list[Text]) -> None:
        self._history.setdefault(s.key, []).extend(lines)
        if self._log_key == s.key:
            self.query_one(EvalLog).write_lines(lines)

    # -- drawing ----------------------------------------------------------------------------------

    def refresh_verdicts(self) -> None:
        s = self.selected()
        view = self.query_one(SourceView)
        if s is None:
            view.set_verdicts(Content.assemble(("select a sample (↑↓) to see its source and verdicts", "$text-muted")))
            return
        rows = []
        for mode, stored in self.models.verdicts(s) or [(self.models.mode, None)]:
            current = mode == self.models.mode
            label = self.models.label_of(mode) if mode else "hardened"
            head = (f"{'▶' if current else ' '} {label:<9} ", "bold" if current else "$text-muted")
            if stored is None:
                now = self._grading_now(s)
                rows.append(Content.assemble(head, ("⟳ grading…" if now else "· not graded (e)", "$text-muted")))
                continue
            style = {"correct": "$text-success", "wrong": "$text-error", "rejected": "$text-warning"}.get(
                stored.result.status, "$text-error")
            rows.append(Content.assemble(head, part(summary(stored.result), style),
                                         (f" · stored {stored.stored_at.astimezone():%Y-%m-%d %H:%M} (r re-grades)",
                                          "$text-muted")))
        if s.candidate is None:
            rows.append(Content.assemble(part(f"source not open: kbench --model {s.model}=DIR shows it and "
                                              "lets e/r grade it", "$text-warning")))
        view.set_verdicts(Content("\n").join(rows))

    def refresh_views(self) -> None:
        m = self.models
        self.query_one(ModelTree).refresh_badges()
        names = m.names
        self.query_one(ModelScores).show([(n, m.score(n)) for n in names], m.label, compact=self.size.height < 34)
        curve = self.query_one(FastPCurve)
        curve.show({n: partial(m.curve, n) for n in names}, series=names)
        self.refresh_status()

    def refresh_status(self) -> None:
        m = self.models
        n = sum(len(m.samples(x)) for x in m.names)
        parts: list[Any] = [(" models ", "bold $text-accent"), "│ mode ",
                            (f" {m.label or 'none stored'} ", "bold reverse $primary"),
                            f" (m: {len(m.modes)} stored) │ {len(m.names)} models, {n} samples"]
        cur = self.scheduler.current
        if cur is not None:
            parts += [" │ ", ("⟳ ", "$text-accent"), part(f"{cur.job.cand.key} ({cur.mode.name})"),
                      (" · esc cancels", "$text-muted")]
        self.query_one("#models-status", Static).update(Content.assemble(*parts))

    # -- keys -------------------------------------------------------------------------------------

    def _grading_now(self, s: ModelSample) -> bool:
        cur = self.scheduler.current
        return cur is not None and not cur.stale and s.candidate is not None and cid(cur.job.cand) == cid(s.candidate)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("evaluate", "rerun"):
            s = self.selected()
            if s is None or s.candidate is None or self._grading_now(s):
                return None  # a store-only sample has no source to grade; greyed while it is graded
            return True
        if action == "next_mode":
            return True if len(self.models.modes) > 1 else None
        return True

    def action_evaluate(self) -> None:
        s = self.selected()
        if s is None or s.candidate is None:
            return
        stored = self.models.verdict(s)
        if stored is not None:
            log = self.query_one(EvalLog)
            self.log_to(s, [log.result_line(f"{self.models.label} (stored {stored.stored_at.astimezone():%Y-%m-%d %H:%M}): ",
                                            stored.result, "   · r re-grades")])
            return
        self._grade(s)

    def action_rerun(self) -> None:
        s = self.selected()
        if s is not None and s.candidate is not None:
            self._grade(s)

    def action_next_mode(self) -> None:
        if len(self.models.modes) > 1:
            self.models.next_mode()
            self.refresh_views()
            self.refresh_verdicts()

    def action_scores(self) -> None:
        shown = self.query_one("#models-scores").display
        self.remove_class("-scores-on", "-scores-off")
        self.add_class("-scores-off" if shown else "-scores-on")

    def action_back(self) -> None:
        if self.scheduler.busy:
            self.scheduler.cancel_all()
            self.refresh_status()
            self.refresh_bindings()
            return
        self.action_close()

    def action_close(self) -> None:
        self.app.pop_screen()

    def action_help(self) -> None:
        self.app.push_screen(ModelsHelp([*ModelTree.BINDINGS, *self.BINDINGS]))

    # -- grading ----------------------------------------------------------------------------------

    def _grade(self, s: ModelSample) -> None:
        assert s.candidate is not None
        mode = self.models.mode_to_grade()
        self._grading[cid(s.candidate)] = s
        self.scheduler.submit([Job(s.candidate, mode.name, "single", mode)])
        self._pump()

    def _pump(self) -> None:
        run = self.scheduler.next(lambda job: job.mode)
        if run is not None:
            s = self._grading[cid(run.job.cand)]
            buf = EventBuffer(self, run.id)
            log = self.query_one(EvalLog)
            self.log_to(s, [log.header(f"grading {s.task}/{s.name} · {run.mode.name} ({', '.join(run.mode.dists)})"
                                       + ("" if run.mode.timing else ", correctness only"))])
            self.run_worker(partial(self._grade_thread, run, buf, s), thread=True, group="models-grade",
                            exit_on_error=False, name=f"models-grade-{run.id}")
        self.refresh_status()
        self.refresh_verdicts()
        self.refresh_bindings()

    def _grade_thread(self, run: Run, buf: EventBuffer, s: ModelSample) -> None:
        """On a worker thread: the engine, the store, then one posted message. No widget access."""
        c = run.job.cand
        try:
            result = self.evaluate_fn(c.task, c.src, run.mode, c.name, on_event=buf, cancel=run.cancel)
        except Cancelled:
            self.post_message(EvalFinished(run.id, None, cancelled=True))
            return
        except Exception as e:  # noqa: BLE001 - an engine bug must not kill the explorer
            self.post_message(EvalFinished(run.id, None, error=failure_text(e)))
            return
        if run.by_user:
            self.post_message(EvalFinished(run.id, None, cancelled=True))
            return
        if self.store is not None:
            try:  # under the model and sample, as kbench grade stores it: kbench scores counts it too
                self.store.put(c.digest, c.task, c.name, c.origin, result, mode=run.mode, model=s.model, sample=c.name)
            except Exception:  # noqa: BLE001 - e.g. the database closed while quitting
                pass
        self.post_message(EvalFinished(run.id, result))

    def on_step_events(self, msg: StepEvents) -> None:
        events = msg.buffer.drain()
        if not self.scheduler.is_current(msg.run_id):
            return
        run = self.scheduler.current
        assert run is not None
        s = self._grading[cid(run.job.cand)]
        log, mode = self.query_one(EvalLog), run.mode
        tol = f"{mode.atol:g} + {mode.rtol:g}·|ref|"
        alloc_nan = "nan_alloc" in mode.defences and "alloc(" in run.job.cand.src
        # one verdict line per grading: the result's, written when it arrives
        self.log_to(s, [log.event_line(e, tol, alloc_nan) for e in events if e.step != "verdict"])

    def on_eval_finished(self, msg: EvalFinished) -> None:
        run = self.scheduler.finished(msg.run_id)
        if run is not None:
            s = self._grading[cid(run.job.cand)]
            log = self.query_one(EvalLog)
            if msg.result is not None:  # stored by the thread even when superseded: shown as stored
                self.models.add(s, msg.result, run.mode)
                self.log_to(s, [log.result_line(f"verdict, {run.mode.name}: ", msg.result, bold=True),
                                log.note(isolation_line(msg.result),
                                         "text-warning" if missing_layers(msg.result.isolation) else "text-muted")])
            elif msg.error is not None:
                self.log_to(s, [log.note(f"✗ no verdict, the grader failed: {msg.error}", "text-error")])
                notify(self, f"{s.task}/{s.name}: {msg.error}", title="grading failed", severity="error")
            elif msg.cancelled:
                self.log_to(s, [log.note("■ cancelled (worker stopped; nothing stored)", "text-warning")])
        self._pump()
        self.refresh_views()

    def on_unmount(self) -> None:
        self.scheduler.cancel_all()


def open_models(app: "App[Any]") -> ModelsScreen:
    """Show the models screen: made once per app (its logs and cursor survive closing it), from the store's
    graded models and the folders given with ``kbench --model``."""
    screen = getattr(app, "models_screen", None)
    if screen is None:
        store = getattr(app, "store", None)
        models = GradedModels(store.all() if store is not None else (), getattr(app, "model_dirs", ()))
        screen = ModelsScreen(models, store, app.evaluate_fn)  # type: ignore[attr-defined]
        app.models_screen = screen  # type: ignore[attr-defined]
        app.install_screen(screen, "models")
    app.push_screen("models")
    return screen
