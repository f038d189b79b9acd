"""The evaluator: one pipeline of steps — static check, load, init, correctness trials, timing.

A ``Mode`` (data) decides what each step does; every step reports ``Event``s to a callback. Candidate
code only ever runs in a sandbox worker. In hardened mode the ``Grader`` (this process, holding a
secret seed) draws the inputs, has the reference computed by a worker that never saw candidate code,
judges every output and owns the clock; in naive mode the candidate's worker runs the whole
KernelBench-v0 procedure itself, as KernelBench does in-process, and can be fooled the same ways.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
import time
from typing import Any, Callable, ContextManager

import numpy as np

from kbench.core import modes as modes_mod
from kbench.core import tasks as tasks_mod
from kbench.core import judging, parallel
from kbench.core.compare import Comparison, compare
from kbench.core.modes import Mode
from kbench.core.results import Event, EventSink, Result, Status, Timing, Trial
from kbench.core.tasks import Task
from kbench.grading import hygiene, static_gate
from kbench.grading.truth import Grader, default_grader, give_params, load_reference, out_bytes
from kbench.sandbox import protocol as P
from kbench.sandbox.server import Worker, WorkerError
from kbench.timing import blocked, interleaved, stats
from kbench.timing.interleaved import TimedCall, TimingAborted


#: Entered around the timing step; yields the core to time on (None: keep the grader's).
TimingLaneHook = Callable[[], ContextManager["int | None"]]


#: How long the end-of-run stdout read may take (it is a memory read in a worker that is otherwise idle).
STDOUT_READ_S = 1.0


class Cancelled(Exception):
    """The caller's cancel event was set; the evaluation stopped between two steps."""


class _Verdict(Exception):
    """Ends the pipeline with a final status."""

    def __init__(self, status: Status, msg: str) -> None:
        super().__init__(msg)
        self.status, self.msg = status, msg


class _Run:
    """One evaluation: the pipeline's state and its steps."""

    def __init__(self, grader: Grader, task: Task, src: str, mode: Mode, cand_name: str | None,
                 on_event: EventSink | None, cancel: threading.Event | None,
                 timing_lane: TimingLaneHook | None = None) -> None:
        self.g, self.task, self.src, self.mode, self.name = grader, task, src, mode, cand_name
        self.on_event, self.cancel = on_event, cancel
        self.timing_lane = timing_lane
        self.timing_cpu = grader.cpu  # the core timing runs on (a lane may name another)
        self.t_start = time.perf_counter()
        self.deadline = self.t_start + mode.timeout_s
        self.trials: list[Trial] = []
        self.timing: Timing | None = None
        self.worker: Worker | None = None
        self.ref_timer: Worker | None = None
        self.timed_input: tuple[dict, dict] | None = None  # the input and params of the latest timed pair
        self.base_threads: int | None = None  # the candidate worker's own threads, before candidate code
        self.rng = np.random.default_rng([grader.seed, 7, secrets.randbits(32)])
        self.kernel_s = 0.0  # candidate and reference kernel time this run measured (not cached references)
        self.start_s = 0.0  # starting the candidate's worker and loading its source
        self.isolation: tuple[str, ...] = ()  # the OS layers the candidate's worker applied

    # -- helpers -----------------------------------------------------------------------------------

    def emit(self, step: str, message: str, ok: bool | None = None, **kw: Any) -> None:
        if self.on_event is not None:
            self.on_event(Event(step, message, ok, time.perf_counter() - self.t_start, **kw))  # type: ignore[arg-type]

    def check_cancel(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise Cancelled()

    def remaining(self) -> float:
        left = self.deadline - time.perf_counter()
        if left <= 0:
            raise _Verdict("runtime_error", f"timed out after {self.mode.timeout_s:g} s")
        return left

    def ask(self, request: P.Request) -> P.Reply:
        """A request to the candidate's worker; a dead or silent worker ends the run as runtime_error."""
        assert self.worker is not None
        try:
            return self.worker.call(request, self.remaining())
        except WorkerError as e:
            msg = f"timed out after {self.mode.timeout_s:g} s" if e.kind == "timeout" else str(e)
            raise _Verdict("runtime_error", msg) from None

    def read_stdout(self) -> str:
        """The head of what the candidate printed, asked once at the end (a dead or stuck worker: none).
        Shown in the log as one event and kept in the result (capped, control characters escaped)."""
        w = self.worker
        if w is None or w.dead or (self.cancel is not None and self.cancel.is_set()):
            return ""
        try:
            reply = w.call(P.ReadStdout(), STDOUT_READ_S)
        except WorkerError:
            return ""
        if not isinstance(reply, P.Printed) or not reply.head:
            return ""
        more = reply.stdout_bytes - len(reply.head)
        self.emit("stdout", "printed: " + reply.head.rstrip("\n") + (f" … (+{more} more characters)" if more > 0 else ""))
        return reply.head

    # -- steps -------------------------------------------------------------------------------------

    def _watch_cancel(self, done: threading.Event) -> None:
        """Kill this run's workers as soon as ``cancel`` is set, so a request blocked on a kernel (an
        infinite loop, say) returns at once instead of at the time-out; the run then ends in Cancelled.
        Keeps killing until the run is over: a worker started right after the cancel dies too."""
        assert self.cancel is not None
        while not done.is_set():
            if self.cancel.wait(0.05):
                for w in (self.worker, self.ref_timer):
                    if w is not None:
                        w.kill()
                if done.wait(0.05):
                    return

    def execute(self) -> Result:
        done = threading.Event()
        if self.cancel is not None:
            threading.Thread(target=self._watch_cancel, args=(done,), daemon=True, name="kbench-cancel").start()
        try:
            return self._execute()
        finally:
            done.set()

    def _execute(self) -> Result:
        self.emit("start", f"{self.task.name}/{self.name or 'candidate'} in {self.mode.name} mode "
                           f"({', '.join(self.mode.dists)})")
        status, msg = "correct", ""
        try:
            for step in (self.static, self.load, self.init):
                self.check_cancel()
                step()
            try:
                self.correctness()
            except _Verdict as v:
                if v.status == "wrong" and self.mode.time_wrong and any(t.ok for t in self.trials):
                    # So a view without the failing distributions has a speed. Timed outputs are checked as
                    # always: a kernel that fails one distribution on purpose must not then be timed unchecked.
                    try:
                        self.speed()
                    except _Verdict:
                        self.timing = None  # timing a wrong candidate never overrides its verdict
                raise
            self.check_cancel()
            self.speed()
            msg = f"{self.timing.speedup:.2f}x" if self.timing else "correct"
        except _Verdict as v:
            if self.cancel is not None and self.cancel.is_set():
                raise Cancelled() from None  # a killed worker's error is the cancel, not a verdict
            status, msg = v.status, v.msg
        finally:
            printed = self.read_stdout()
            for w in (self.worker, self.ref_timer):
                if w is not None:
                    w.close()
        result = Result(self.task.name, self.name, self.mode.name, self.mode.dists, status, msg, self.trials,
                        self.timing, time.perf_counter() - self.t_start)
        result.overhead = {"wall_s": result.elapsed, "kernel_s": self.kernel_s, "worker_start_s": self.start_s}
        result.isolation = self.isolation
        result.stdout = printed
        ci = self.timing.speedup_ci if self.timing else None
        self.emit("verdict", f"{status}: {msg}" if status != "correct" else
                  f"correct, {self.timing.speedup:.2f}x (95% CI {ci[0]:.2f}-{ci[1]:.2f})" if self.timing and ci
                  else "correct", status == "correct", status=status,
                  speedup=self.timing.speedup if self.timing else None, speedup_ci=ci)
        return result

    def static(self) -> None:
        if not self.mode.static_check:
            return
        try:
            found = static_gate.check(self.src)
        except SyntaxError as e:
            msg = f"SyntaxError: {e.msg}" + (f" (line {e.lineno})" if e.lineno else "")
            self.emit("static", msg, False)
            raise _Verdict("compile_error", msg) from None
        except (ValueError, TypeError) as e:
            raise _Verdict("compile_error", f"{type(e).__name__}: {e}") from None
        if found:
            self.emit("static", f"rejected: {found[0]}" + (f" (+{len(found) - 1} more)" if len(found) > 1 else ""), False)
            raise _Verdict("rejected", f"rejected: {found[0]}")
        self.emit("static", "static check passed", True)

    def load(self) -> None:
        t0 = time.perf_counter()
        try:
            self.worker = Worker("candidate", self.mode.memory_limit_mb, self.g.blas_threads, cpu=self.g.cpu)
        except OSError as e:
            raise _Verdict("runtime_error", f"could not start a sandbox worker: {e}") from None
        self.sandbox_layers()
        if self.mode.shared_process:
            self.ask(P.Load(self.task.ref_src, "ref"))
        reply = self.ask(P.Load(self.src, "cand"))
        if not isinstance(reply, P.Loaded):
            error = P.error_of(reply)
            self.emit("load", error, False)
            raise _Verdict("compile_error", error)
        self.check_threads("load", "after load")
        self.start_s = time.perf_counter() - t0
        self.emit("load", f"loaded in a fresh sandbox worker ({self.start_s * 1e3:.0f} ms)"
                          + (", has init()" if reply.has_init else ""), True)

    def sandbox_layers(self) -> None:
        """Record the OS layers the candidate's worker applied; say so when one is missing."""
        assert self.worker is not None
        try:
            hello = self.worker.layers(self.remaining())
        except WorkerError as e:
            raise _Verdict("runtime_error", f"sandbox worker did not start: {e}") from None
        self.isolation = hello.active
        self.base_threads = self.worker.thread_count()
        self.emit("load", f"sandbox layers: {', '.join(hello.active) or 'none'}", None)
        for layer, why in hello.missing:
            self.emit("load", f"sandbox runs without {layer}: {why}", None)

    def init(self) -> None:
        seen = set()
        for _, _, kind, draw in self.mode.trial_plan():
            pset_id, params = self.g.params(self.task, kind, draw)
            if pset_id in seen:
                continue
            seen.add(pset_id)
            reply = self.ask(P.SetParams(pset_id, params))
            if isinstance(reply, P.Failure):
                self.emit("init", f"init failed: {reply.error}", False)
                raise _Verdict("runtime_error", f"init failed: {reply.error}")
        self.check_threads("init", "after init")
        self.emit("init", f"{len(seen)} parameter set{'s' if len(seen) > 1 else ''} ready", True)

    def correctness(self) -> None:
        plan = self.mode.trial_plan()
        first_fail: Trial | None = None
        for i, dist, kind, draw in plan:
            self.check_cancel()
            pset = "default" if kind == "default" else f"random {draw + 1}"
            try:
                trial = self.shared_trial(i, dist, kind, draw, pset) if self.mode.shared_process \
                    else self.isolated_trial(i, dist, kind, draw, pset)
            except _Verdict as v:  # keep the trial that ended the run: views know where it failed
                self.trials.append(Trial(i, dist, pset, False, v.msg))
                raise
            self.trials.append(trial)
            self.emit("trial", f"trial {i + 1}/{len(plan)} {dist:<11} {pset:<8} "
                               f"{'pass' if trial.ok else 'FAIL'}  {trial.message}", trial.ok, trial=i, dist=dist,
                      param_set=pset, max_abs_err=trial.max_abs_err, max_rel_err=trial.max_rel_err)
            if not trial.ok and first_fail is None:
                first_fail = trial
        if not self.mode.shared_process:
            self.verify_params("the correctness trials")
        if first_fail is not None:
            raise _Verdict("wrong", f"{first_fail.message} on {first_fail.dist}")

    def verify_params(self, during: str) -> None:
        if not self.mode.exact_checks:
            return
        reply = self.ask(P.VerifyParams())
        if isinstance(reply, P.Failure):
            raise _Verdict("runtime_error", f"checking params after {during}: {reply.error}")
        if isinstance(reply, P.ParamsVerified) and reply.params_changed:
            msg = f"rejected: modified params {', '.join(reply.params_changed)} during {during}"
            self.emit("trial", msg, False)
            raise _Verdict("rejected", msg)

    def shared_trial(self, i: int, dist: str, kind: str, draw: int, pset: str) -> Trial:
        pset_id, _ = self.g.params(self.task, kind, draw)
        x = self.g.inputs(self.task, i, dist)
        reply = self.ask(P.NaiveTrial(pset_id, x, self.mode.atol, self.mode.rtol, self.mode.alloc))
        msg = reply.raised if isinstance(reply, P.NaiveTrialDone) else P.error_of(reply)
        if msg or not isinstance(reply, P.NaiveTrialDone):
            self.emit("trial", f"trial {i + 1} {dist} raised {msg}", False, trial=i, dist=dist, param_set=pset)
            raise _Verdict("runtime_error", msg)
        return Trial(i, dist, pset, reply.ok, reply.message, reply.max_abs_err, reply.max_rel_err)

    def isolated_trial(self, i: int, dist: str, kind: str, draw: int, pset: str) -> Trial:
        try:  # the grader's trial inputs: each named distribution with structure mixed in (kbench.core.structured)
            x, pset_id, params, ref = self.g.reference(self.task.for_trials(), i, dist, kind, draw, self.remaining())
        except WorkerError as e:
            raise _Verdict("runtime_error", f"reference worker failed: {e}") from None
        # The trial's facts (checks, predictors) depend only on the trial: computed once per session (the
        # grader's reference array is the key), on another thread while the candidate's call runs.
        job = parallel.executor().submit(judging.facts_for, self.task, ref, x, params, self.mode.atol,
                                         self.mode.rtol) if self.mode.exact_checks else None
        reply = self.ask(P.Call("cand", pset_id, x, self.mode.alloc, out_bytes(self.task)))
        if isinstance(reply, P.Called):
            self.kernel_s += max(0, reply.t1 - reply.t0) / 1e9
        facts = job.result() if job is not None else None
        c = self.judge(reply, ref, f"trial {i + 1} ({dist})", x, params, facts)
        if facts is not None:
            self.emit("trial", f"trial {i + 1} {judging.checks_line(c)}; {facts.summary()}", None, trial=i, dist=dist,
                      param_set=pset)
        return Trial(i, dist, pset, c.ok, c.message, c.max_abs_err, c.max_rel_err, c.degenerate)

    def check_hygiene(self, reply: P.Called, step: str, where: str) -> None:
        """The worker's facts about one call; any breach ends the run (checked on timed calls too)."""
        breach = hygiene.first_breach(self.mode, lambda fact: getattr(reply, fact))
        if breach:
            self.emit(step, f"{where}: rejected: {breach}", False)
            raise _Verdict("rejected", f"rejected: {breach}")

    def judge(self, reply: P.Reply, ref: np.ndarray, where: str, x: dict, params: dict,
              facts: "judging.TrialFacts | None" = None) -> Comparison:
        """Hygiene first (any breach ends the run), then the numeric comparison."""
        if not isinstance(reply, P.Called):
            error = P.error_of(reply)
            self.emit("trial", f"{where}: {error}", False)
            raise _Verdict("runtime_error", error)
        self.check_hygiene(reply, "trial", where)
        if reply.output is None:
            return Comparison(False, f"output is {reply.out_type}, not numpy.ndarray")
        return self.compare(reply.output, ref, x, params, facts)

    def compare(self, out: np.ndarray, ref: np.ndarray, x: dict, params: dict,
                facts: "judging.TrialFacts | None" = None) -> Comparison:
        """The mode's judgement (every check of ``kbench.core.judging``, with the trial's facts; timed outputs
        get the same checks without the predictor table); a failure on tolerance checks only gets the float64
        second opinion when the mode asks for it."""
        if not self.mode.exact_checks:
            return compare(out, ref, self.mode.atol, self.mode.rtol, exact=False)
        if facts is None:
            facts = judging.facts_for(self.task, ref, x, params, self.mode.atol, self.mode.rtol, predictors=False)
        exact = (lambda: self.g.exact_reference(self.task, x, params)) if self.mode.float64_recheck else None
        return judging.judge(out, ref, facts, x, params, exact)

    # -- timing ------------------------------------------------------------------------------------

    def speed(self, check_outputs: bool = True) -> None:
        if self.mode.timing is None:
            return
        # A timing lane (batch grading) makes this step wait until it may time alone on the machine, and
        # names the core to time on.
        with (self.timing_lane() if self.timing_lane is not None else contextlib.nullcontext()) as cpu:
            if cpu is not None:
                self.pin(cpu)
            if self.mode.timing.method == "blocked":
                self.blocked_timing()
            else:
                self.interleaved_timing(check_outputs and self.mode.timing.check_outputs)

    def pin(self, cpu: int) -> None:
        """Move the candidate's worker to ``cpu``; the reference's timing twin starts there too."""
        self.timing_cpu = cpu
        if self.worker is not None and hasattr(os, "sched_setaffinity"):
            try:
                os.sched_setaffinity(self.worker.proc.pid, {cpu})
            except OSError:
                pass  # the worker is gone: the next request reports it

    def blocked_timing(self) -> None:
        tp = self.mode.timing
        assert tp is not None
        pset_id, _ = self.g.params(self.task, "default", -1)
        x = self.g.inputs(self.task, 10_000, "normal")
        self.emit("timing", blocked.describe(tp))
        reply = self.ask(P.NaiveTime(pset_id, x, tp.warmup, tp.min_runs, tp.max_runs,
                                     min(tp.budget_s, self.remaining())))
        if not isinstance(reply, P.NaiveTimes):
            raise _Verdict("runtime_error", P.error_of(reply))
        ref, cand = list(reply.ref), list(reply.cand)
        if not ref or not cand:
            raise _Verdict("runtime_error", "timing returned no samples")
        self.kernel_s += sum(ref) + sum(cand)
        self.timing = blocked.from_samples(tp, ref, cand, self.rng, self.g.blas_threads)
        self.emit("timing", f"reference {self.timing.t_ref * 1e3:.3f} ms x{len(ref)}, candidate "
                            f"{self.timing.t_cand * 1e3:.3f} ms x{len(cand)}", True,
                  speedup=self.timing.speedup, speedup_ci=self.timing.speedup_ci)

    def interleaved_timing(self, check_outputs: bool) -> None:
        tp = self.mode.timing
        assert tp is not None
        pset_id, params = self.g.params(self.task, "default", -1)
        stream = self.g.stream(self.task)
        # The reference is timed in a fresh twin of the candidate's worker (same age, same history, same
        # core), not in the long-lived worker that computed the trial references: a warm heap and a cold
        # one differ by more than the 2 % this step tries to resolve.
        try:
            self.ref_timer = Worker("reference", self.mode.memory_limit_mb, self.g.blas_threads, cpu=self.timing_cpu)
            load_reference(self.ref_timer, self.task, self.remaining())
            give_params(self.ref_timer, pset_id, params, self.remaining())
        except (WorkerError, OSError, RuntimeError) as e:
            raise _Verdict("runtime_error", f"reference timing worker failed: {e}") from None
        t0 = time.perf_counter()
        budget = min(tp.budget_s, max(self.deadline - t0 - 1.0, 0.0))
        try:
            self.timing, kernel_s = interleaved.measure(
                self.task, tp, ref_call=lambda x: self.time_reference(pset_id, x),
                cand_call=lambda x: self.time_candidate(pset_id, x), next_input=stream.next,
                check_timed=self.check_timed if check_outputs else None, budget_s=budget, rng=self.rng,
                emit=lambda msg, ok: self.emit("timing", msg, ok), check_cancel=self.check_cancel,
                now=time.perf_counter, blas_threads=self.g.blas_threads,
                budget_cap_s=max(min(tp.budget_s * stats.EXTEND_FACTOR, self.deadline - t0 - 1.0), 0.0),
                pids=[w.proc.pid for w in (self.worker, self.ref_timer) if w is not None and w.proc.pid],
                prefill=stream.prefill)
        except TimingAborted as e:
            raise _Verdict(e.status, e.msg) from None  # type: ignore[arg-type]
        finally:
            stream.drop()  # prepared inputs are not kept between evaluations (memory)
        self.verify_params("timing")
        self.kernel_s += kernel_s

    def time_reference(self, pset_id: str, x: dict) -> TimedCall:
        assert self.ref_timer is not None and self.worker is not None
        # No candidate code runs while the reference is timed: every thread of its worker is stopped.
        self.worker.pause()
        try:
            reply = self.ref_timer.call(P.Call(f"ref:{self.task.name}", pset_id, x, "nan", out_bytes(self.task)),
                                        self.remaining())
        except WorkerError as e:
            raise _Verdict("runtime_error", f"reference timing worker failed: {e}") from None
        finally:
            self.worker.resume()
        if not isinstance(reply, P.Called) or reply.output is None:
            error = P.error_of(reply, "no output")
            raise _Verdict("runtime_error", f"reference failed while timing: {error}")
        t = (reply.t1 - reply.t0) / 1e9
        return TimedCall(t, reply.output, (reply.t_recv - reply.t_send) / 1e9 - t)

    def time_candidate(self, pset_id: str, x: dict) -> TimedCall:
        self.timed_input = (x, self.g.params(self.task, "default", -1)[1])
        reply = self.ask(P.Call("cand", pset_id, x, self.mode.alloc, out_bytes(self.task)))
        if not isinstance(reply, P.Called):
            error = P.error_of(reply)
            raise _Verdict("runtime_error", f"while timing: {error}")
        self.check_hygiene(reply, "timing", "while timing")
        self.check_threads("timing", "after a timed call")
        ts, tr = reply.t_send, reply.t_recv
        if not ts <= reply.t0 <= reply.t1 <= tr:
            raise _Verdict("rejected", "rejected: the candidate's reported kernel time lies outside the "
                                       "grader's own measurement of the call")
        t = (reply.t1 - reply.t0) / 1e9
        if reply.output is None:
            raise _Verdict("wrong", f"while timing: output is {reply.out_type}, not numpy.ndarray")
        return TimedCall(t, reply.output, (tr - ts) / 1e9 - t)

    def check_threads(self, step: str, where: str) -> None:
        """Threads alive in the candidate's worker beyond its own, counted by the OS (/proc), at any point
        after load: a thread started at load or by init would otherwise run beside every later call."""
        if not self.mode.exact_checks or self.base_threads is None or self.worker is None:
            return
        n = self.worker.thread_count()
        if n is not None and n > self.base_threads:
            breach = f"{n - self.base_threads} thread(s) of its own alive in the worker {where}"
            self.emit(step, f"rejected: {breach}", False)
            raise _Verdict("rejected", f"rejected: {breach}")

    def check_timed(self, out: np.ndarray, ref: np.ndarray, n: int) -> None:
        assert self.timed_input is not None
        c = self.compare(out, ref, *self.timed_input)
        if not c.ok:
            msg = f"timed call {n} returned a wrong output ({c.message}); correct only while being checked"
            self.emit("timing", msg, False)
            raise _Verdict("wrong", msg)


# ------------------------------------------------------------------------------------------ public API

def evaluate(task: "Task | str", src: str, mode: "Mode | str" = "hardened", cand_name: str | None = None, *,
             dists: "tuple[str, ...] | list[str] | None" = None, on_event: EventSink | None = None,
             cancel: threading.Event | None = None, grader: Grader | None = None,
             timing_lane: TimingLaneHook | None = None) -> Result:
    """Grade candidate source ``src`` on ``task`` under ``mode``; stream step events to ``on_event``.

    ``timing_lane``: a context manager factory entered around the timing step, yielding the core to time
    on or None (batch grading passes ``kbench.grading.lanes.TimingLane.timing``)."""
    t = tasks_mod.get(task) if isinstance(task, str) else task
    m = modes_mod.get(mode)
    if dists is not None:
        m = m.with_dists(tuple(dists))
    g = grader or default_grader()
    with g.lock:
        return _Run(g, t, src, m, cand_name, on_event, cancel, timing_lane).execute()
