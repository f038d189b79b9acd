"""The main screen: tree, sources, live log, fast_p; every key of the explorer is declared here."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from rich.text import Text
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer, Static

from kbench.core.distributions import ALL_DISTS, DIST_NOTES
from kbench.core.library import Candidate
from kbench.core.tasks import TASK, TASKS

from .. import paths
from ..model import MODE_NAMES, Model, Scores, cid, mode_for
from ..runner import Job, Scheduler
from ..widgets.eval_log import EvalLog
from ..widgets.candidate_tree import CandidateTree
from ..widgets.eval_log import EvalLog, summary
from ..widgets.fastp_curve import FastPCurve
from ..widgets.fastp_table import FastPTable
from ..widgets.source_view import SourceView
from ..widgets.status_bar import StatusBar
from ..text import notify, part, title
from ..messages import EvalFinished, ModelChanged, StepEvents
from .evaluation import EvaluateFn, Evaluations
from .help import defence_help

if TYPE_CHECKING:
    from kbench.store import Store

DISK_POLL_S = 1.0  # how often own and folder candidate files are checked for changes (a stat each)

DIST_BINDINGS = [
    Binding(str(i + 1), f"toggle_dist({i})", "Dists" if i == 0 else f"toggle {d}", key_display="1-7" if i == 0 else None,
            show=i == 0, id=f"kbench.dist.{d}", tooltip=f"Toggle {d} ({DIST_NOTES[d]}) for hardened mode")
    for i, d in enumerate(ALL_DISTS)
]

DEFENCE_BINDINGS = [
    Binding("g", "defences", "Defences", id="kbench.defences",
            tooltip="Defences as switches: hardened without the ones turned off (derived at once where one run "
                    "tells, else run in the background)"),
    Binding("N", "preset('naive')", "Naive preset", show=False, id="kbench.preset.naive",
            tooltip="Preset: every defence off, which is KernelBench v0's naive grader"),
    Binding("H", "preset('hardened')", "Hardened preset", show=False, id="kbench.preset.hardened",
            tooltip="Preset: every defence on, the hardened grader"),
]

ABOUT = ("fast_p: share of a task's candidates that are correct and more than p× faster than the reference, "
         "averaged over tasks; over evaluated candidates only. oracle: tasks where any candidate qualifies "
         "(hardened). fast₁@k: k tries per task.\n"
         "✓ speedup  ✗ wrong  ⊘ rejected  ! error  · not evaluated")


class MainScreen(Screen):
    # Responsive layout (app.tcss): below 110 columns the fast_p panel is hidden (s shows it over the
    # sources) and only the candidate's source is shown beside the tree; below 34 rows the log and the
    # sources split the height evenly.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-medium"), (170, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (34, "-tall")]

    BINDINGS = [
        Binding("e", "evaluate", "Evaluate", id="kbench.evaluate",
                tooltip="Evaluate the selected candidate in the current mode (the log streams each step)"),
        Binding("m", "toggle_mode", "Mode", id="kbench.mode", tooltip="Switch between naive and hardened"),
        Binding("b", "evaluate_both", "Both", id="kbench.both", tooltip="Evaluate the selected candidate in both modes"),
        Binding("a", "evaluate_all", "All", id="kbench.all",
                tooltip="Evaluate everything not yet known in the background (Esc cancels)"),
        Binding("escape", "cancel", "Cancel", id="kbench.cancel", tooltip="Cancel running and queued evaluations"),
        *DIST_BINDINGS,
        *DEFENCE_BINDINGS,
        Binding("d", "diff", "Diff", id="kbench.diff", tooltip="Show what the candidate changed from the reference"),
        Binding("v", "matrix", "Matrix", id="kbench.matrix", tooltip="Candidates × distributions pass counts"),
        Binding("o", "models", "Models", id="kbench.models",
                tooltip="Graded models side by side: samples with stored verdicts, fast_p per model, their curves"),
        Binding("n", "new_candidate", "Edit/new", id="kbench.new",
                tooltip="Edit: your own candidate in place, a library one as a copy, a task's reference as a new file"),
        Binding("x", "export", "Export", id="kbench.export", tooltip="Export all stored results as JSON and CSV"),
        Binding("r", "rerun", "Re-run", id="kbench.rerun",
                tooltip="Evaluate the selected candidate again, even if a result is stored"),
        Binding("z", "zoom", "Zoom", id="kbench.zoom",
                tooltip="Hide the library and scores so the sources and the log get the whole width (again: back)"),
        Binding("s", "scores", "Scores", id="kbench.scores", tooltip="Show or hide the fast_p panel"),
        Binding("c", "scope", "Count", id="kbench.scope",
                tooltip="Which candidates fast_p counts: the library, your own, a folder, everything"),
        Binding("f1,question_mark", "help", "Help", key_display="F1/?", id="kbench.help", tooltip="Keys and concepts"),
        Binding("q", "app.quit", "Quit", id="kbench.quit", tooltip="Quit the explorer"),
    ]

    def __init__(self, model: Model, store: "Store | None", evaluate_fn: EvaluateFn) -> None:
        super().__init__()
        self.model, self.store = model, store
        #: evaluation state (scheduler, workers, results arriving): one controller, drawing through this screen
        self.evaluations = Evaluations(self, model, store, evaluate_fn)
        self._selection_pending = False  # a source redraw is scheduled after the next refresh
        self._history: dict[str, list[Text]] = {}  # per candidate id: its log lines this session
        self._general: list[Text] = []  # notes about no one candidate (shown on task nodes)
        self._log_key: str | None = None  # whose history the log shows
        self._disk_seen: dict[str, int | None] = {}  # candidate id -> file mtime last read
        self._scores_shown: Scores | None = None  # what the fast_p table and curve show

    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        with Horizontal(id="body"):
            yield CandidateTree(id="tree")
            with Vertical(id="centre"):
                yield SourceView(id="source")
                yield EvalLog(id="log")
            with Vertical(id="results"):
                yield FastPTable(id="fastp")
                yield FastPCurve(id="curve")
                yield Static(ABOUT, id="about")
        yield Footer()

    def on_resize(self) -> None:
        footer = self.query_one(Footer)
        footer.compact = self.size.width < 170  # fewer cells per key below the wide layout
        footer.show_command_palette = self.size.width >= 110  # ctrl+p still works; F1 help says so

    def on_mount(self) -> None:
        self.query_one("#tree").border_title = "library"
        self.query_one("#log").border_title = "evaluator log"
        self.query_one("#fastp").border_title = "fast_p"
        self.query_one("#curve").border_title = "fast_p vs p"
        tree = self.query_one(CandidateTree)
        first = next(iter(self.model.candidates), None)
        tree.build(self.model, select=("cand", cid(first)) if first else None)
        tree.focus()
        self.evaluations.check_store_notice()
        log = self.log_widget
        self._general.append(log.note("↑↓ browse · e evaluate · m naive/hardened · 1-7 distributions · z zoom · F1 help"))
        self.refresh_views()
        self.show_selection()
        self.app.theme_changed_signal.subscribe(
            self, lambda _t: self.log_widget.retheme([*self._history.values(), self._general]))
        self.check_disk()  # remember every file's time now; changes from here on are reloaded
        self.set_interval(DISK_POLL_S, self.check_disk)

    # -- evaluations: the controller's, drawn here --------------------------------------------------

    @property
    def scheduler(self) -> Scheduler:
        return self.evaluations.scheduler

    @property
    def log_widget(self) -> EvalLog:
        return self.query_one("#log", EvalLog)

    def submit(self, jobs: list[Job]) -> int:
        return self.evaluations.submit(jobs)

    def on_step_events(self, msg: StepEvents) -> None:
        self.evaluations.step_events(msg)

    def on_eval_finished(self, msg: EvalFinished) -> None:
        self.evaluations.finished(msg)

    def log_shows(self, cand: Candidate) -> bool:
        """Whether the log shows ``cand``'s history now."""
        return self._log_key == cid(cand)

    def post_model_changed(self) -> None:
        """Tell a secondary screen on top (the matrix) to redraw."""
        screen = self.app.screen
        if screen is not self:
            screen.post_message(ModelChanged())

    # -- selection --------------------------------------------------------------------------------

    def selected(self) -> tuple[str | None, Candidate | None]:
        """(task name, candidate) under the tree cursor."""
        return self.query_one(CandidateTree).selection()

    def on_candidate_tree_selected(self, _: CandidateTree.Selected) -> None:
        # Redrawing both source panes takes tens of ms: let the moved cursor reach the screen first, and
        # fold a burst of key repeats into one redraw (of the selection current by then).
        if not self._selection_pending:
            self._selection_pending = True
            self.call_after_refresh(self._show_pending_selection)
        self.refresh_bindings()

    @property
    def selection_pending(self) -> bool:
        """True between a cursor move and the panes showing it (one refresh later)."""
        return self._selection_pending

    def _show_pending_selection(self) -> None:
        self._selection_pending = False
        self.show_selection()

    def show_selection(self) -> None:
        task, cand = self.selected()
        if task is not None:
            self.query_one(SourceView).show(TASK[task], cand)
        self._show_log_for(cand)
        self.refresh_verdicts()

    # -- the log: one history per candidate --------------------------------------------------------

    def _show_log_for(self, cand: Candidate | None) -> None:
        key = cid(cand) if cand is not None else None
        if key == self._log_key and self.log_widget.border_title:
            return
        self._log_key = key
        log = self.log_widget
        if cand is None:
            log.show_history(title("log"), self._general[-200:])
            return
        lines = self._history.get(key, [])  # type: ignore[arg-type]
        if not lines:
            lines = [log.note(f"nothing evaluated for {cand.key} in this session (e evaluates, r re-runs)")]
        log.show_history(title("log", cand.key), lines)

    def log_to(self, cand: Candidate, lines: list[Text]) -> None:
        """Append to ``cand``'s history; on screen only when it is the candidate shown."""
        self._history.setdefault(cid(cand), []).extend(lines)
        if self._log_key == cid(cand):
            self.log_widget.write_lines(lines)

    def log_general(self, lines: list[Text]) -> None:
        """A note about no one candidate: written where the reader is, kept for the task view."""
        self._general.extend(lines)
        self.log_widget.write_lines(lines)

    # -- drawing ----------------------------------------------------------------------------------

    def refresh_status(self) -> None:
        self.query_one(StatusBar).show(self.model.mode, self.model.enabled, self.evaluations.activity(), off=self.model.off)

    def refresh_verdicts(self) -> None:
        _, c = self.selected()
        if c is None:
            self.query_one(SourceView).set_verdicts(Content.assemble(
                ("select a candidate (↑↓); n writes a new one for this task", "$text-muted")))
            return
        rows = []
        # the current mode's verdict first: a short terminal shows only the first rows
        for mode in sorted(MODE_NAMES, key=lambda m: m != self.model.mode):
            k = self.model.verdict(c, mode)
            current = mode == self.model.mode
            n_on = len(self.model.enabled)
            scope = "5× normal" if mode == "naive" else f"{n_on} of 7 distributions" if n_on > 1 else self.model.enabled[0]
            if mode == "hardened" and self.model.off:
                scope += f", without {', '.join(sorted(self.model.off))}"
            head = (f"{'▶' if current else ' '} {mode:<9}", "bold" if current else "$text-muted")
            if k is None:
                running = self.scheduler.current is not None and self.scheduler.current.job.cand == c
                body = ("⟳ evaluating…" if running and self.scheduler.current.job.mode_name == mode  # type: ignore[union-attr]
                        else "· not evaluated (e)", "$text-muted")
                if mode == "hardened" and self.model.defence_run(c) is not None:
                    body = (f"⟳ needs its own run without {', '.join(sorted(self.model.off))} (in the background)"
                            if self.scheduler.busy else "· needs its own run without those defences (e runs it)",
                            "$text-muted")
                rows.append(Content.assemble(head, body))
                continue
            style = {"correct": "$text-success", "wrong": "$text-error", "rejected": "$text-warning"}.get(
                k.result.status, "$text-error")
            when = f" · stored {k.stored_at.astimezone():%Y-%m-%d %H:%M} (r re-runs)" if k.stored_at else ""
            rows.append(Content.assemble(head, (f"[{scope}] ", "$text-muted"), part(summary(k.result), style),
                                         (when, "$text-muted")))
        self.query_one(SourceView).set_verdicts(Content("\n").join(rows))

    def refresh_views(self) -> None:
        """Everything derived from the model: badges, verdicts, fast_p, status, the matrix if open."""
        self.query_one(CandidateTree).refresh_badges(self.model)
        scores = self.model.scores()
        if scores != self._scores_shown:  # a switch that changes no score redraws neither pane
            self._scores_shown = scores
            self.query_one(FastPTable).show(scores)
            self.query_one(FastPCurve).show({m: (lambda ps, m=m: scores.curve(m, ps)) for m in MODE_NAMES})
        self.refresh_verdicts()
        self.refresh_status()
        self.post_model_changed()

    # -- keys -------------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("evaluate", "evaluate_both", "rerun", "diff"):
            cand = self.selected()[1] if self.is_mounted else None
            if cand is None:
                return None
            cur = self.scheduler.current
            if action != "diff" and cur is not None and not cur.stale and cur.job.kind == "single" \
                    and cid(cur.job.cand) == cid(cand):
                return None  # greyed while this candidate is being evaluated (Esc cancels)
            return True
        if action == "evaluate_all":
            return None if self.scheduler.batch_active else True
        if action == "cancel":
            return True if self.scheduler.busy else None
        return True

    def action_evaluate(self) -> None:
        _, c = self.selected()
        if c is None:
            return
        mode = self.model.missing(c, self.model.mode)
        if mode is None:
            self.evaluations.log_known(c, self.model.mode)
            return
        self.submit([Job(c, self.model.mode, "single", mode)])

    def action_rerun(self) -> None:
        _, c = self.selected()
        if c is not None:
            self.submit([Job(c, self.model.mode, "single", mode_for(self.model.mode))])

    def action_evaluate_both(self) -> None:
        _, c = self.selected()
        if c is None:
            return
        jobs = []
        for name in MODE_NAMES:
            mode = self.model.missing(c, name)
            if mode is None:
                self.evaluations.log_known(c, name)
            else:
                jobs.append(Job(c, name, "single", mode))
        self.submit(jobs)

    def action_evaluate_all(self) -> None:
        order = (self.model.mode,) + tuple(m for m in MODE_NAMES if m != self.model.mode)
        jobs = [Job(c, name, "batch") for name in order for c in self.model.candidates
                if self.model.missing(c, name) is not None]
        if not jobs:
            notify(self, "Every candidate is evaluated in both modes.", title="nothing to do")
            return
        n = self.submit(jobs)
        log = self.log_widget
        self.log_general([log.note(f"evaluating {n} in the background (progress in the header; Esc cancels)",
                                   "text-accent")])

    def action_cancel(self) -> None:
        if not self.scheduler.busy:
            return
        cur = self.scheduler.current
        self.scheduler.cancel_all()
        if cur is None or cur.job.kind != "single" or self._log_key != cid(cur.job.cand):
            log = self.log_widget
            self.log_general([log.note("■ cancelled", "text-warning")])
        self.refresh_status()
        self.refresh_bindings()

    def action_toggle_mode(self) -> None:
        self.model.mode = "naive" if self.model.mode == "hardened" else "hardened"
        self.refresh_views()

    def action_toggle_dist(self, index: int) -> None:
        dist = ALL_DISTS[index]
        before = {c.key: self.model.verdict(c, "hardened") for c in self.model.candidates}
        if not self.model.toggle(dist):
            notify(self, "At least one distribution stays on.", severity="warning")
            return
        on = dist in self.model.enabled
        changed = []
        for c in self.model.candidates:
            old, new = before[c.key], self.model.verdict(c, "hardened")
            if old is not None and new is not None and old.result.status != new.result.status:
                changed.append(f"{c.key} {old.result.status}→{new.result.status}")
        log = self.log_widget
        msg = f"{dist} {'on' if on else 'off'} (hardened): " + ("; ".join(changed) if changed else "no verdict changed")
        self.log_general([log.note(msg, "text-accent")])
        unresolved = self.model.unresolved()
        if unresolved:
            self.submit([Job(c, "hardened", "fill") for c in unresolved])
        self.refresh_views()

    def action_zoom(self) -> None:
        self.toggle_class("-zoomed")

    def action_scores(self) -> None:
        """Flip the fast_p panel against what the current width shows by default."""
        shown = self.query_one("#results").display
        self.remove_class("-scores-on", "-scores-off")
        self.add_class("-scores-off" if shown else "-scores-on")

    def action_scope(self) -> None:
        self.model.next_scope()
        notify(self, f"fast_p counts {self.model.scope_label()}", title="scores")
        self.refresh_views()

    def action_diff(self) -> None:
        view = self.query_one(SourceView)
        view.show_diff = not view.show_diff

    def action_matrix(self) -> None:
        from .matrix import MatrixScreen

        task, _ = self.selected()
        self.app.push_screen(MatrixScreen(self.model, task, self.action_toggle_dist, self.run_matrix_cells))

    def action_models(self) -> None:
        from .models import open_models

        open_models(self.app)

    def action_new_candidate(self) -> None:
        from .editor import EditorScreen

        task, cand = self.selected()
        folder = paths.user_candidates_dir()
        t = TASK[task or TASKS[0].name]
        if cand is not None and cand.origin != "library" and cand.path is not None:
            name = cand.name  # your own file: edited in place
        else:
            name = paths.free_name(folder / t.name, cand.name if cand is not None else "my_kernel")
        self.app.push_screen(EditorScreen(t, folder, name, source=cand, on_save=self._saved), self._editor_closed)

    def _saved(self, cand: Candidate) -> None:
        """The editor saved ``cand`` (new, or a new version of the same file): show it and evaluate it."""
        self.model.add(cand)
        self._disk_seen[cid(cand)] = self._mtime(cand)
        tree = self.query_one(CandidateTree)
        tree.build(self.model, select=("cand", cid(cand)))
        self.call_after_refresh(self._evaluate_new, cand)

    def _evaluate_new(self, cand: Candidate) -> None:
        mode = self.model.missing(cand, self.model.mode) or mode_for(self.model.mode)
        self.submit([Job(cand, self.model.mode, "single", mode)])
        self.show_selection()

    def _editor_closed(self, _: None = None) -> None:
        self.query_one(CandidateTree).focus()
        self.show_selection()

    def editor_for(self, cand: Candidate) -> "object | None":
        """The open editor whose last save is ``cand`` (it shows that evaluation's verdict)."""
        from .editor import EditorScreen

        screen = self.app.screen
        if isinstance(screen, EditorScreen) and screen.saved is not None and cid(screen.saved) == cid(cand):
            return screen
        return None

    # -- files changed on disk --------------------------------------------------------------------

    @staticmethod
    def _mtime(c: Candidate) -> int | None:
        try:
            return c.path.stat().st_mtime_ns if c.path is not None else None
        except OSError:
            return None

    def check_disk(self) -> None:
        """Your own and folder candidates are re-read when their file changes (library files are package
        data): the tree, the sources and the next ``e``/``r`` use the new text."""
        from kbench.batch.samples import intent_or_note
        from kbench.core.library import CandidateFileError, read_source

        for c in list(self.model.candidates):
            if c.origin == "library" or c.path is None:
                continue
            key, now = cid(c), self._mtime(c)
            before = self._disk_seen.setdefault(key, now)
            if now == before or now is None:
                continue
            self._disk_seen[key] = now
            try:
                src = read_source(c.path)
            except CandidateFileError as e:
                notify(self, str(e), title="could not reload", severity="warning")
                continue
            except Exception as e:  # noqa: BLE001 - a file that changed into something unreadable
                notify(self, f"{c.path}: {type(e).__name__}", title="could not reload", severity="warning")
                continue
            if src == c.src:
                continue
            new = dataclasses.replace(c, src=src, intent=intent_or_note(src))
            self.model.add(new)
            log = self.log_widget
            self.log_to(new, [log.note(f"reloaded {c.path} (changed on disk); e evaluates the new version",
                                       "text-accent")])
            from .editor import EditorScreen

            if isinstance(self.app.screen, EditorScreen) and self.app.screen.saved is not None \
                    and cid(self.app.screen.saved) == key:
                self.app.screen.reload(src)
            self.refresh_views()
            if self.selected()[1] is not None and cid(self.selected()[1]) == key:  # type: ignore[arg-type]
                self.query_one(SourceView).show(TASK[new.task], new)

    def action_export(self) -> None:
        if self.store is None:
            notify(self, "No results database.", severity="warning")
            return
        try:
            json_path, csv_path = self.store.export(paths.export_dir())
        except OSError as e:
            notify(self, f"Export failed: {e}", severity="error")
            return
        notify(self, f"{json_path}\n{csv_path}", title="exported results")

    def action_help(self) -> None:
        from .help import HelpScreen

        self.app.push_screen(HelpScreen([*CandidateTree.BINDINGS, *self.BINDINGS], extra=defence_help()))

    def on_unmount(self) -> None:
        self.scheduler.cancel_all()

    # -- defences as switches (g, N, H; the palette has one entry per defence) ------------------------

    def action_defences(self) -> None:
        from .defences import DefenceScreen

        self.app.push_screen(DefenceScreen(self.model, self.selected()[1], self.toggle_defence, self.action_preset))

    def action_preset(self, which: str) -> None:
        self.model.preset(which)
        log = self.log_widget
        note = ("naive preset: every defence off — KernelBench v0's own procedure (m or H: back to hardened)"
                if which == "naive" else "hardened preset: every defence on")
        self.log_general([log.note(note, "text-accent")])
        self._defences_changed()

    def toggle_defence(self, name: str) -> None:
        """Switch one defence; views the one hardened run answers redraw now, the rest run in the background."""
        was_naive = self.model.mode == "naive"
        before = self._hardened_verdicts()
        self.model.toggle_defence(name)
        on = name not in self.model.off
        changed, pending = [], 0
        for c in self.model.candidates:
            old, new = before[cid(c)], self.model.verdict(c, "hardened")
            if new is None and self.model.defence_run(c) is not None:
                pending += 1
            elif old is not None and new is not None and old.result.status != new.result.status:
                changed.append(f"{c.key} {old.result.status}→{new.result.status}")
        log = self.log_widget
        what = f"{name} {'on' if on else 'off'}"
        if was_naive:
            what += " (the defence switches act on hardened's procedure: it now runs with only that defence on)"
        msg = f"{what}: " + ("; ".join(changed) if changed else "no verdict changed")
        lines = [log.note(msg, "text-accent")]
        if pending:
            lines.append(log.note(f"{pending} candidate{'s' if pending != 1 else ''} need a run of their own "
                                  f"without {', '.join(sorted(self.model.off))}: running in the background, "
                                  "shown as · until it lands", "text-warning"))
        self.log_general(lines)
        self._defences_changed()

    def run_matrix_cells(self, todo: list) -> int:
        """The matrix's defences view: hardened runs (mode None) and runs without defences, in the background."""
        jobs = [Job(c, "hardened", "batch") if m is None else Job(c, m.name, "batch", m) for c, m in todo]
        n = self.submit(jobs)
        if n:
            log = self.log_widget
            self.log_general([log.note(f"matrix: {n} evaluation{'s' if n != 1 else ''} queued in the background "
                                       "(hardened runs, and runs without defences that change the run)",
                                       "text-accent")])
        return n

    def _hardened_verdicts(self) -> dict:
        return {cid(c): self.model.verdict(c, "hardened") for c in self.model.candidates}

    def _defences_changed(self) -> None:
        unresolved = self.model.unresolved() if self.model.mode == "hardened" else []
        if unresolved:
            self.submit([Job(c, "hardened", "fill") for c in unresolved])
        self.refresh_views()

