"""Evaluation state in one controller object: the scheduler, the thread workers it starts, the results they bring
back. The screen owns one (``MainScreen.evaluations``) and hands it the messages the threads post; the controller
draws nothing itself but through the ``EvaluationView`` the screen implements (log lines, redraws, the editor).

Threads only call the engine and the store and post messages; every widget update happens on the UI thread.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Protocol

from rich.text import Text
from textual.content import Content

from kbench.grading.pipeline import Cancelled
from kbench.core.library import Candidate
from kbench.core.results import Result
from kbench.core.status import failure_text
from kbench.sandbox.confine import missing_layers

from ..heap import freeze_long_lived
from ..messages import EvalFinished, EventBuffer, StepEvents
from ..model import Model
from ..runner import Job, Run, Scheduler
from ..text import notify, part
from ..widgets.eval_log import EvalLog, summary

if TYPE_CHECKING:
    from textual.message import Message
    from textual.worker import Worker

    from kbench.store import Store

EvaluateFn = Callable[..., Result]
#: The name a run without some defences has (``kbench.batch.matrix.variant``).
VARIANT_PREFIX = "hardened-without-"


class EvaluationView(Protocol):
    """What the controller needs from the screen showing evaluations (``MainScreen``)."""

    log_widget: EvalLog

    def log_to(self, cand: Candidate, lines: list[Text]) -> None: ...
    def log_general(self, lines: list[Text]) -> None: ...
    def log_shows(self, cand: Candidate) -> bool: ...
    def editor_for(self, cand: Candidate) -> Any: ...
    def refresh_views(self) -> None: ...
    def refresh_status(self) -> None: ...
    def refresh_verdicts(self) -> None: ...
    def refresh_bindings(self) -> None: ...
    def post_message(self, message: "Message") -> bool: ...
    def run_worker(self, work: Callable[[], None], **kw: Any) -> "Worker[None]": ...


class Evaluations:
    """The explorer's evaluations: submit jobs, one evaluation thread at a time, results into the model (and the
    store), what each run said into ``view``'s log."""

    def __init__(self, view: EvaluationView, model: Model, store: "Store | None", evaluate_fn: EvaluateFn) -> None:
        self.view, self.model, self.store, self.evaluate_fn = view, model, store, evaluate_fn
        self.scheduler = Scheduler()
        self._store_notice: str | None = None

    # -- requests ---------------------------------------------------------------------------------

    def submit(self, jobs: list[Job]) -> int:
        n = self.scheduler.submit(jobs)
        self.pump()
        return n

    def pump(self) -> None:
        """Start the next run if nothing is running (one evaluation thread at a time)."""
        run = self.scheduler.next(self._resolve)
        if run is not None:
            self._start(run)
        self.view.refresh_status()
        self.view.refresh_verdicts()
        self.view.refresh_bindings()

    def _resolve(self, job: Job) -> Any:
        return self.model.missing(job.cand, job.mode_name)

    def _start(self, run: Run) -> None:
        c = run.job.cand
        buf = None
        if run.job.kind == "single":
            buf = EventBuffer(self.view, run.id)
            dists = ", ".join(run.mode.dists)
            log = self.view.log_widget
            self.view.log_to(c, [log.header(f"{c.task}/{c.name} · {run.mode.name} ({dists})")])
        self.view.run_worker(
            partial(self._evaluate_thread, run, buf), thread=True, group="eval", exit_on_error=False,
            name=f"eval-{run.id}", description=f"evaluate {c.key} ({run.mode.name})")

    def _evaluate_thread(self, run: Run, buf: EventBuffer | None) -> None:
        """Runs on a worker thread: the engine, the store, then one posted message. No widget access."""
        c = run.job.cand
        try:
            result = self.evaluate_fn(c.task, c.src, run.mode, c.name, on_event=buf, cancel=run.cancel)
        except Cancelled:
            self.view.post_message(EvalFinished(run.id, None, cancelled=True))
            return
        except Exception as e:  # noqa: BLE001 - an engine bug must not kill the explorer
            self.view.post_message(EvalFinished(run.id, None, error=failure_text(e)))
            return
        if run.by_user:  # finished before it noticed the cancel: still "cancelled", nothing kept
            self.view.post_message(EvalFinished(run.id, None, cancelled=True))
            return
        if self.store is not None:
            try:
                self.store.put(c.digest, c.task, c.name, c.origin, result, mode=run.mode)
            except Exception:  # noqa: BLE001 - e.g. the app closed the database while quitting
                pass
        self.view.post_message(EvalFinished(run.id, result))

    # -- results (the view hands over the threads' messages) ----------------------------------------

    def step_events(self, msg: StepEvents) -> None:
        events = msg.buffer.drain()
        if not self.scheduler.is_current(msg.run_id):
            return  # a superseded run: its late events are dropped
        run = self.scheduler.current
        assert run is not None
        log, mode = self.view.log_widget, run.mode
        tol = f"{mode.atol:g} + {mode.rtol:g}·|ref|"
        label = None
        if mode.name == "hardened" and tuple(mode.dists) != self.model.enabled:
            # the engine's verdict is for every distribution it ran; the views show the enabled set's
            label = f"all {len(mode.dists)} run" if len(mode.dists) > 1 else f"on {mode.dists[0]}"
        # the NaN-filled alloc rule is named only where it can be the cause: the candidate calls alloc()
        alloc_nan = "nan_alloc" in mode.defences and "alloc(" in run.job.cand.src
        # one verdict line per evaluation: the engine's verdict event is left out, the result's line
        # (``_report``, for the enabled distributions) says it
        self.view.log_to(run.job.cand, [log.event_line(e, tol, alloc_nan, label) for e in events if e.step != "verdict"])

    def finished(self, msg: EvalFinished) -> None:
        was_batch = self.scheduler.batch_total > 0
        run = self.scheduler.finished(msg.run_id)
        view = self.view
        log = view.log_widget
        if run is not None:
            c = run.job.cand
            editor = view.editor_for(c) if run.job.kind == "single" and not run.stale else None
            if msg.result is not None:
                self.model.record(c.digest, c.task, msg.result)
                self._report(run, msg.result)
                if editor is not None:
                    known = self.model.verdict(c, run.job.mode_name)
                    editor.show_result(known.result if known is not None else msg.result)
                if msg.result.mode == "hardened" and self.model.hardened_verdict(c, self.model.enabled) is None:
                    self.scheduler.submit([Job(c, "hardened", "fill")])  # the enabled set needs its own run
                elif msg.result.mode.startswith("hardened") and self.model.defence_run(c) is not None:
                    self.scheduler.submit([Job(c, "hardened", "fill")])  # the defences switched off need one
            elif msg.error is not None:  # the grader raised (not a verdict): said in the log, the app lives on
                view.log_to(c, [log.note(f"✗ {c.key}: no verdict, the grader failed: {msg.error}", "text-error")])
                notify(view, f"{c.key}: {msg.error}", title="evaluation failed", severity="error")
                if editor is not None:
                    editor.show_result(None, f"no verdict, the grader failed: {msg.error}")
            elif editor is not None:
                editor.show_result(None, "cancelled")
            if msg.result is None and msg.cancelled and run.job.kind == "single":
                view.log_to(c, [log.note(f"■ {c.key}: cancelled (worker stopped; nothing stored)", "text-warning")])
        self.check_store_notice()
        self.pump()
        if was_batch and self.scheduler.batch_total == 0 and not self.scheduler.busy:
            view.log_general([log.note("background evaluation finished", "text-accent")])
            freeze_long_lived()  # the batch's results are long-lived now: out of the collector's full passes
        view.refresh_views()

    def _report(self, run: Run, result: Result) -> None:
        c, log = run.job.cand, self.view.log_widget
        if run.stale:
            return
        if result.mode.startswith(VARIANT_PREFIX):
            # a run without defences that change the run: what it said, and the view under the switches now
            view = self.model.verdict(c, "hardened") if self.model.mode == "hardened" else None
            without = result.mode.removeprefix(VARIANT_PREFIX).replace("+", ", ")
            line = log.result_line(f"landed: {c.key}, its own run without {without}: ", result)
            lines = [line] + ([log.note(f"under the switches now: {summary(view.result)}")] if view else [])
            self.view.log_to(c, lines)
            if not self.view.log_shows(c):
                self.view.log_general([line])
            return
        if run.job.kind == "batch":
            done, total = self.scheduler.batch_done, self.scheduler.batch_total
            self.view.log_to(c, [log.result_line(f"[{done}/{total}] {result.mode}: ", result)])
            return
        if run.job.kind == "fill":
            self.view.log_to(c, [log.result_line(f"on {', '.join(result.dists)}: ", result)])
            return
        if result.mode == "hardened" and tuple(result.dists) != self.model.enabled:
            # one verdict line per evaluation: the enabled set's, in bold, first (an 80x24 log shows the
            # end); what the whole run said follows as a note
            view = self.model.hardened_verdict(c, self.model.enabled)
            n_on, n_run = len(self.model.enabled), len(result.dists)
            if view is None:
                lines = [log.result_line(f"verdict on all {n_run} run: ", result, bold=True),
                         log.note(f"the {n_on} enabled cannot be read off this run; evaluating them in the background")]
            elif (view.result.status, view.result.msg) == (result.status, result.msg):
                lines = [log.result_line("verdict: ", view.result, bold=True),
                         log.note(f"on the {n_on} enabled distributions; the same on all {n_run} run")]
            else:
                lines = [log.result_line(f"verdict on the {n_on} enabled: ", view.result, bold=True),
                         log.note(f"all {n_run} run: {summary(result)}")]
        else:
            lines = [log.result_line(f"verdict, {result.mode}: ", result, bold=True)]
        lines.append(log.note(isolation_text(result), "text-muted" if full_isolation(result) else "text-warning"))
        self.view.log_to(c, lines)

    def check_store_notice(self) -> None:
        """A new notice from the results database (e.g. it could not be written) shows once as a toast."""
        notice = self.store.notice if self.store is not None else None
        if notice and notice != self._store_notice:
            self._store_notice = notice
            notify(self.view, notice, title="results database", severity="warning", timeout=12)

    def log_known(self, c: Candidate, mode: str) -> None:
        """``e`` on something already known: say so (with its date) instead of re-running."""
        k = self.model.verdict(c, mode)
        if k is None:
            return
        log = self.view.log_widget
        when = f" (stored {k.stored_at.astimezone():%Y-%m-%d %H:%M})" if k.stored_at else ""
        self.view.log_to(c, [log.result_line(f"{mode}{when}: ", k.result, "   · r re-runs")])

    def activity(self) -> Content | None:
        s = self.scheduler
        if not s.busy:
            return None
        parts: list[tuple[str, str] | str] = []
        if s.current is not None:
            c = s.current.job.cand
            parts += [("⟳ ", "$text-accent"), part(f"{c.key} ({s.current.mode.name}) ")]
        if s.batch_total:
            pct = s.batch_done / s.batch_total
            bar = "█" * round(pct * 10) + "░" * (10 - round(pct * 10))
            parts += ["· all ", (bar, "$text-accent"), f" {s.batch_done}/{s.batch_total} "]
        rest = len(s.queues["single"]) + len(s.queues["fill"])
        if rest:
            parts.append(f"· {rest} queued ")
        parts.append(("· esc cancels", "$text-muted"))
        return Content.assemble(*parts)


def full_isolation(result: Result) -> bool:
    return not missing_layers(result.isolation)


def isolation_text(result: Result) -> str:
    """Which OS layers confined the candidate's worker, and which were missing (never silent)."""
    if not result.isolation:
        return "isolation: not recorded (decided before a worker started)"
    missing = missing_layers(result.isolation)
    return "isolation: " + ", ".join(result.isolation) + (f" (missing: {', '.join(missing)})" if missing else "")
