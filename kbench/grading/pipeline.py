"""The evaluator: one skeleton of steps — static check, load, init, correctness, speed, verdict — and two
procedures that fill it in.

``NaiveRun`` is KernelBench v0's procedure, run inside the candidate's worker as KernelBench runs it in its
own process (and fooled the same ways). ``HardenedRun`` is kbench's: the grading process (this one, holding
a secret seed) draws every input into sealed memory, has the reference computed by a worker that never ran
candidate code, reads every output from the worker's memory, judges it here and times every call with its
own clocks. A ``Mode`` (data) picks the procedure and which of its defences are on; every step reports
``Event``s to a callback, which the CLI, the explorer and the report all consume. Candidate code only ever
runs in a sandbox worker.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import secrets
import threading
import time
from concurrent.futures import Future
from typing import Any, Callable, ContextManager

import numpy as np

from kbench.core import defences, judging, parallel
from kbench.core import modes as modes_mod
from kbench.core import tasks as tasks_mod
from kbench.core.compare import Comparison, compare
from kbench.core.library import MAX_SOURCE_BYTES
from kbench.core.modes import Mode
from kbench.core.results import Event, EventSink, Result, Status, Timing, Trial, breach_status
from kbench.core.tasks import Task
from kbench.grading import gate_in_worker  # noqa: F401 - registers the gate with the fork server
from kbench.grading import cores
from kbench.grading.cores import Ahead, off_cpu, on_cpu, warm_on
from kbench.grading.truth import Grader, Staging, default_grader, prepare
from kbench.sandbox import protocol as P
from kbench.sandbox.arena import ScratchArena
from kbench.sandbox.server import KernelCall, Worker, WorkerError
from kbench.timing import blocked, interleaved, stats, wakeups
from kbench.timing.interleaved import TimedCall, TimingAborted

#: Entered around the timing step; yields the core to time on (None: keep the grader's).
TimingLaneHook = Callable[[], ContextManager["int | None"]]

#: How long the end-of-run stdout read may take (it is a memory read in a worker that is otherwise idle).
STDOUT_READ_S = 1.0
#: Input slots of a task's arena: 0 and 1 belong to the reference workers, these two to the candidate.
#: (Naive stages its one reused timing input in TIMING_SLOT; hardened times on the trials' slot.)
TRIAL_SLOT, TIMING_SLOT = 2, 3
#: Calls that calibrate the grader's clock on the reference's timing twin.
CALIBRATION_CALLS = 15


class ReferenceFailed(RuntimeError):
    """The grader could not compute the task's reference (it timed out or failed in a worker that runs no
    candidate code): not a verdict on the candidate. Every face treats it as the grader's failure (``kbench
    eval`` exits 3, ``kbench grade`` reports the sample as not graded and tries it again next run)."""


class Cancelled(Exception):
    """The caller's cancel event was set; the evaluation stopped between two steps."""


class _Verdict(Exception):
    """Ends the pipeline with a final status."""

    def __init__(self, status: Status, msg: str) -> None:
        super().__init__(msg)
        self.status, self.msg = status, msg


@dataclasses.dataclass
class CandidateProcess:
    """One of the candidate's workers and what the run keeps for it (the first ran the gate, load, init and the
    trials; more are loaded the same way when its arm is timed in several processes: ``TimingPolicy.processes``)."""

    worker: Worker
    scratch: ScratchArena | None
    base_threads: int | None
    refill_due: int = 0


class _Run:
    """One evaluation: the skeleton of steps and what every procedure shares."""

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
        self.twin: Worker | None = None
        self.base_threads: int | None = None  # the candidate worker's own threads, before candidate code
        self.rng = np.random.default_rng([grader.seed, 7, secrets.randbits(32)])
        self.kernel_s = 0.0  # kernel time this run measured (candidate and reference calls it made)
        self.start_s = 0.0  # starting the candidate's worker and loading its source
        self.judging_s = 0.0  # judging on the run's critical path: judgements, and waits for a trial's facts
        self.timed_centred_axes: dict[str, tuple[int, ...]] = {}  # per distribution, decided on its first timed output
        self.isolation: tuple[str, ...] = ()  # the OS layers the candidate's worker applied
        self.breaches: dict[str, str] = {}  # defence -> first breach, for the defences a run goes on past
        self.breaches_before_wrong = 1 << 30  # how many breaches were recorded before the first failing trial
        self.worker_clock: Timing | None = None
        self.timing_now = False  # inside the timing step (the alloc pool is then refilled from the timing core)
        self.refill_due = 0  # bytes of the alloc pool to NaN-fill before the candidate's next call
        self.scratch: ScratchArena | None = None  # the candidate's alloc pool, once loaded
        # Workers and pools started for timing beyond the first of each arm (``TimingPolicy.processes``); the
        # current candidate worker's are in ``worker``, ``scratch``, ``base_threads`` and ``refill_due``.
        self.timing_workers: list[Worker] = []
        self.timing_scratches: list[ScratchArena] = []

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

    def ask(self, request: P.Request, fd: int | None = None) -> P.Reply:
        """A request to the candidate's worker; a dead or silent worker ends the run as runtime_error."""
        assert self.worker is not None
        try:
            return self.worker.call(request, self.remaining(), fd=fd)
        except WorkerError as e:
            raise _Verdict("runtime_error", self._worker_error(e)) from None

    def _worker_error(self, e: WorkerError) -> str:
        return f"timed out after {self.mode.timeout_s:g} s" if e.kind == "timeout" else str(e)

    def fail_on(self, reply: P.Reply, step: str, where: str = "", in_verdict: bool = True) -> None:
        """A Failure reply ends the run: a write to read-only memory is a rejection, the rest runtime errors.
        ``where`` prefixes the log line, and the verdict's message too when ``in_verdict``."""
        if isinstance(reply, P.Failure):
            if reply.kind == "readonly":
                msg = f"rejected: wrote to a read-only input or parameter ({reply.error})"
                self.emit(step, f"{where}{msg}", False)
                raise _Verdict("rejected", msg)
            self.emit(step, f"{where}{reply.error}", False)
            raise _Verdict("runtime_error", f"{where}{reply.error}" if in_verdict else reply.error)

    def start_worker(self) -> Worker:
        """The candidate's worker (started once, by the first step that needs it)."""
        if self.worker is None:
            t0 = time.perf_counter()
            self.worker = self.new_candidate_worker(self.g.cpu)
            self.sandbox_layers()
            self.start_s += time.perf_counter() - t0
        return self.worker

    def new_candidate_worker(self, cpu: int | None) -> Worker:
        """A fresh sandbox worker for candidate code (one that cannot start ends the run)."""
        try:
            return Worker("candidate", self.mode.memory_limit_mb, self.g.blas_threads, cpu=cpu)
        except OSError as e:
            raise _Verdict("runtime_error", f"could not start a sandbox worker: {e}") from None

    def layers_of(self, w: Worker) -> P.Hello:
        """The OS layers ``w`` applied, as it reported them (a worker that does not answer ends the run)."""
        try:
            return w.layers(self.remaining())
        except WorkerError as e:
            raise _Verdict("runtime_error", f"sandbox worker did not start: {e}") from None

    def sandbox_layers(self) -> None:
        """Record the OS layers the candidate's worker applied; say so when one is missing."""
        assert self.worker is not None
        hello = self.layers_of(self.worker)
        self.isolation = hello.active
        self.base_threads = self.worker.thread_count()
        self.emit("load", f"sandbox layers: {', '.join(hello.active) or 'none'}", None)
        for layer, why in hello.missing:
            self.emit("load", f"sandbox runs without {layer}: {why}", None)

    def read_stdout(self) -> str:
        """The head of what the candidate printed, asked once at the end (a dead or stuck worker: none)."""
        w = self.worker
        if w is None or w.dead or (self.cancel is not None and self.cancel.is_set()):
            return ""
        try:
            reply = w.call(P.ReadStdout(), STDOUT_READ_S)
        except WorkerError:
            return ""
        if not isinstance(reply, P.Printed) or not reply.head:
            return ""
        more = reply.total - len(reply.head)
        self.emit("stdout", "printed: " + reply.head.rstrip("\n") + (f" … (+{more} more characters)" if more > 0 else ""))
        return reply.head

    def check_threads(self, step: str, where: str) -> None:
        """Threads alive in the candidate's worker beyond its own, counted by the OS (/proc), at any point
        after load: a thread started at load or by init would otherwise run beside every later call."""
        if not self.mode.has("thread_check") or self.base_threads is None or self.worker is None:
            return
        n = self.worker.thread_count()
        if n is not None and n > self.base_threads and "thread_check" not in self.breaches:
            breach = f"rejected: {n - self.base_threads} thread(s) of its own alive in the worker {where}"
            self.emit(step, breach, False)
            self.breach("thread_check", breach)

    def all_workers(self) -> list[Worker]:
        """Every worker this run started (each once)."""
        return list({id(w): w for w in (self.worker, self.twin, *self.timing_workers) if w is not None}.values())

    def breach(self, defence: str, msg: str) -> None:
        """Record a breach and go on: the verdict is the first enabled breach's, and the record lets a view
        without that defence be derived (``kbench.core.defences.derive``). Stopping here would hide what
        the rest of the run shows."""
        self.breaches.setdefault(defence, msg)

    # -- the skeleton ------------------------------------------------------------------------------

    def _watch_cancel(self, done: threading.Event) -> None:
        """Kill this run's workers as soon as ``cancel`` is set, so a request blocked on a kernel (an
        infinite loop, say) returns at once instead of at the time-out; the run then ends in Cancelled.
        Keeps killing until the run is over: a worker started right after the cancel dies too."""
        assert self.cancel is not None
        while not done.is_set():
            if self.cancel.wait(0.05):
                for w in self.all_workers():
                    w.kill()
                if done.wait(0.05):
                    return

    def execute(self) -> Result:
        done = threading.Event()
        if self.cancel is not None:
            threading.Thread(target=self._watch_cancel, args=(done,), daemon=True, name="kbench-cancel").start()
        try:
            with off_cpu(self.g.cpu):
                return self._execute()
        finally:
            done.set()

    def _execute(self) -> Result:
        self.emit("start", f"{self.task.name}/{self.name or 'candidate'} in {self.mode.name} mode "
                           f"({', '.join(self.mode.dists)})")
        status, msg = "correct", ""
        try:
            if len(self.src.encode("utf-8", "surrogateescape")) > MAX_SOURCE_BYTES:
                raise _Verdict("compile_error", f"source is over the {MAX_SOURCE_BYTES // 1000} kB limit")
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
                        self.timed_step()
                    except _Verdict:
                        self.timing = None  # timing a wrong candidate never overrides its verdict
                raise
            self.check_cancel()
            self.timed_step()
            msg = f"{self.timing.speedup:.2f}x" if self.timing else "correct"
        except _Verdict as v:
            if self.cancel is not None and self.cancel.is_set():
                raise Cancelled() from None  # a killed worker's error is the cancel, not a verdict
            status, msg = v.status, v.msg
        finally:
            printed = self.read_stdout()
            for w in self.all_workers():
                w.close()
            # after the workers let go of their views: a long-lived grader kept every pool
            for scratch in {id(a): a for a in (self.scratch, *self.timing_scratches) if a is not None}.values():
                scratch.close()
        # The earliest enabled breach names the verdict, unless a trial had failed before it.
        off = set(defences.NAMES) - self.mode.defences
        enabled = [(d, m) for i, (d, m) in enumerate(self.breaches.items()) if defences.breach_holds(d, off)
                   and (status == "correct" or (status == "wrong" and i < self.breaches_before_wrong))]
        if enabled and status in ("correct", "wrong"):
            first, msg = enabled[0]
            status = breach_status(first)
        result = Result(self.task.name, self.name, self.mode.name, self.mode.dists, status, msg, self.trials,
                        self.timing, time.perf_counter() - self.t_start)
        result.overhead = {"wall_s": result.elapsed, "kernel_s": self.kernel_s, "worker_start_s": self.start_s,
                           "judging_s": self.judging_s}
        result.isolation = self.isolation
        result.stdout = printed
        result.breaches = dict(self.breaches)
        result.worker_clock = self.worker_clock
        ci = self.timing.speedup_ci if self.timing else None
        self.emit("verdict", f"{status}: {msg}" if status != "correct" else
                  f"correct, {self.timing.speedup:.2f}x (95% CI {ci[0]:.2f}-{ci[1]:.2f})" if self.timing and ci
                  else "correct", status == "correct", status=status,
                  speedup=self.timing.speedup if self.timing else None, speedup_ci=ci)
        return result

    def timed_step(self) -> None:
        if self.mode.timing is None:
            return
        # A timing lane (batch grading) makes this step wait until it may time alone on the machine, and
        # names the core to time on.
        with (self.timing_lane() if self.timing_lane is not None else contextlib.nullcontext()) as cpu:
            if cpu is not None:
                self.timing_cpu = cpu
                if self.worker is not None:
                    self.worker.pin(cpu)
            self.timing_now = True
            try:
                self.speed()
            finally:
                self.timing_now = False

    def static(self) -> None:
        if not self.mode.has("gate"):
            return
        reply = self.ask(P.Gate(self.src)) if self.start_worker() else None
        if not isinstance(reply, P.GateVerdict):
            self.fail_on(reply, "static", "the static gate failed: ")  # type: ignore[arg-type]
            raise _Verdict("runtime_error", "the static gate did not answer")
        if reply.error:
            self.emit("static", reply.error, False)
            raise _Verdict("compile_error", reply.error)
        if reply.findings:
            rule, line, detail = reply.findings[0]
            first = f"line {line} {detail} [{rule}]"
            more = f" (+{len(reply.findings) - 1} more)" if len(reply.findings) > 1 else ""
            self.emit("static", f"rejected: {first}{more}", False)
            self.breaches["gate"] = f"rejected: {first}"  # recorded: a view without the gate needs a run of its own
            raise _Verdict("rejected", f"rejected: {first}")
        self.emit("static", "static check passed (in the candidate's fresh worker, before its code ran)", True)

    # the steps each procedure fills in
    def load(self) -> None:
        raise NotImplementedError

    def init(self) -> None:
        raise NotImplementedError

    def correctness(self) -> None:
        raise NotImplementedError

    def speed(self) -> None:
        raise NotImplementedError

    # -- shared by both procedures -----------------------------------------------------------------

    def load_source(self, src: str, name: str, trusted: bool = False) -> P.Loaded:
        reply = self.ask(P.Load(src, name, trusted))
        if not isinstance(reply, P.Loaded):
            error = P.error_of(reply)
            self.emit("load", error, False)
            raise _Verdict("compile_error", error)
        return reply

    def map_inputs(self, st: Staging) -> None:
        reply = self.ask(P.MapArena("inputs", st.arena.size), fd=st.arena.fd)
        if not isinstance(reply, P.Mapped):
            self.fail_on(reply, "load", "could not map the inputs: ")

    def pset_ids(self) -> list[str]:
        seen: dict[str, None] = {}
        for _, _, kind, draw in self.mode.trial_plan():
            seen[self.g.params(self.task, kind, draw)[0]] = None
        return list(seen)

    def give_params(self, st: Staging, writable: bool, announce: bool = True) -> None:
        ids = self.pset_ids()
        if self.mode.timing is not None:
            ids = list(dict.fromkeys(ids + [self.g.params(self.task, "default", -1)[0]]))
        for pset_id in ids:
            specs, scalars = st.psets[pset_id]
            reply = self.ask(P.SetParams(pset_id, specs, scalars, init=True, writable=writable))
            if isinstance(reply, P.Failure) and reply.kind == "contract":
                self.emit("init", f"rejected: {reply.error}", False)
                raise _Verdict("rejected", f"rejected: {reply.error}")
            if isinstance(reply, P.Failure):
                self.emit("init", f"init failed: {reply.error}", False)
                raise _Verdict("runtime_error", f"init failed: {reply.error}")
        self.check_threads("init", "after init")
        if announce:
            self.emit("init", f"{len(ids)} parameter set{'s' if len(ids) > 1 else ''} ready", True)

    def trial_label(self, kind: str, draw: int) -> str:
        return "default" if kind == "default" else f"random {draw + 1}"

    def record_trial(self, trial: Trial, n: int) -> None:
        self.trials.append(trial)
        self.emit("trial", f"trial {trial.index + 1}/{n} {trial.dist:<11} {trial.param_set:<8} "
                           f"{'pass' if trial.ok else 'FAIL'}  {trial.message}", trial.ok, trial=trial.index,
                  dist=trial.dist, param_set=trial.param_set, max_abs_err=trial.max_abs_err,
                  max_rel_err=trial.max_rel_err)


# ------------------------------------------------------------------------------------------ naive

class NaiveRun(_Run):
    """KernelBench v0, as it runs: the reference first on the same uncopied inputs in the candidate's own
    process, shape + allclose there, then blocked timing on one reused input with that process's clock.
    The OS confinement is the same as hardened's; the grading is v0's, foolable on purpose."""

    def load(self) -> None:
        t0 = time.perf_counter()
        self.start_worker()
        self.st = self.g.staging(self.task)
        self.map_inputs(self.st)
        self.load_source(self.task.ref_src, "ref", trusted=True)
        reply = self.load_source(self.src, "cand")
        self.check_threads("load", "after load")
        self.start_s += time.perf_counter() - t0
        self.emit("load", f"loaded in a fresh sandbox worker ({self.start_s * 1e3:.0f} ms)"
                          + (", has init()" if reply.has_init else ""), True)

    def init(self) -> None:
        self.give_params(self.st, writable=True)  # v0's weights are the candidate's to change

    def correctness(self) -> None:
        plan = self.mode.trial_plan()
        for i, dist, kind, draw in plan:
            self.check_cancel()
            pset_id, pset = self.g.params(self.task, kind, draw)[0], self.trial_label(kind, draw)
            specs = self.st.stage(self.task, TRIAL_SLOT, self.g.inputs(self.task, i, dist, structured=False))
            alloc = "pool" if self.mode.has("nan_alloc") else "cache"
            reply = self.ask(P.NaiveTrial(pset_id, specs, self.mode.atol, self.mode.rtol, alloc))
            msg = reply.raised if isinstance(reply, P.NaiveTrialDone) else P.error_of(reply)
            if msg or not isinstance(reply, P.NaiveTrialDone):
                self.trials.append(Trial(i, dist, pset, False, msg))
                self.emit("trial", f"trial {i + 1} {dist} raised {msg}", False, trial=i, dist=dist, param_set=pset)
                raise _Verdict("runtime_error", msg)
            self.record_trial(Trial(i, dist, pset, reply.ok, reply.message, reply.max_abs_err, reply.max_rel_err),
                              len(plan))
        bad = next((t for t in self.trials if not t.ok), None)
        if bad is not None:
            raise _Verdict("wrong", f"{bad.message} on {bad.dist}")

    def speed(self) -> None:
        tp = self.mode.timing
        assert tp is not None
        pset_id = self.g.params(self.task, "default", -1)[0]
        specs = self.st.stage(self.task, TIMING_SLOT, self.g.inputs(self.task, 10_000, "normal", structured=False))
        self.emit("timing", blocked.describe(tp))
        reply = self.ask(P.NaiveTime(pset_id, specs, tp.warmup, tp.min_runs, tp.max_runs,
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


# ------------------------------------------------------------------------------------------ hardened

class HardenedRun(_Run):
    """kbench's procedure. Every fact is the grading process's: inputs it drew into memory only it can write,
    references from a worker that never ran candidate code, outputs it read from the worker's memory while
    the worker was stopped, times from its own clocks."""

    def load(self) -> None:
        t0 = time.perf_counter()
        self.start_worker()
        self.st = self.g.staging(self.task)
        loaded = self.fill_worker()
        self.start_s += time.perf_counter() - t0
        self.emit("load", f"loaded in a fresh sandbox worker ({self.start_s * 1e3:.0f} ms)"
                          + (", has init()" if loaded.has_init else ""), True)

    def fill_worker(self) -> P.Loaded:
        """The current candidate worker made ready for calls: the inputs and its alloc pool mapped, the reference
        loaded there if the mode has no worker of its own for it, the candidate loaded, its threads counted."""
        assert self.worker is not None
        self.map_inputs(self.st)
        scratch = self.scratch = ScratchArena(2 * self.out_nbytes + (1 << 20),
                                              f"{self.task.name}-{secrets.token_hex(3)}")
        reply = self.ask(P.MapArena("scratch", scratch.size), fd=scratch.fd)
        if not isinstance(reply, P.Mapped):
            self.fail_on(reply, "load", "could not map the alloc pool: ")
        else:
            self.worker.share_pool(scratch.map, reply.addr)
        if not self.mode.has("own_reference"):
            self.load_source(self.task.ref_src, f"ref:{self.task.name}", trusted=True)
        loaded = self.load_source(self.src, "cand")
        self.check_threads("load", "after load")
        if not self.mode.has("stop_candidate"):
            self.worker.stops = False
            self.worker.resume()
        return loaded

    def candidate_state(self) -> CandidateProcess:
        """The current candidate worker and what the run keeps for it."""
        assert self.worker is not None
        return CandidateProcess(self.worker, self.scratch, self.base_threads, self.refill_due)

    def use_process(self, p: CandidateProcess) -> None:
        """Make ``p`` the candidate worker the next calls go to (its pool, its threads, its pending refill)."""
        self.worker, self.scratch, self.base_threads, self.refill_due = p.worker, p.scratch, p.base_threads, \
            p.refill_due

    def another_candidate_process(self, number: int) -> CandidateProcess:
        """The candidate's ``number``-th worker for its arm of the timing, on the timing core, loaded and initialised
        as the first was, under the same deadline (the gate's verdict is the first worker's: the same source). Its
        layers must be the first's: a worker confined less would time code the run did not confine. What it prints
        is not read (the first worker's is)."""
        home = self.candidate_state()
        w = self.new_candidate_worker(self.timing_cpu)
        self.timing_workers.append(w)
        self.use_process(CandidateProcess(w, None, None))
        try:
            hello = self.layers_of(w)
            if hello.active != self.isolation:
                raise _Verdict("runtime_error", f"the candidate's timing worker {number} applied other layers "
                                                f"({', '.join(hello.active) or 'none'}) than its first")
            self.base_threads = w.thread_count()
            self.fill_worker()
            self.give_params(self.st, writable=not self.mode.has("sealed_inputs"), announce=False)
            return self.candidate_state()
        finally:
            if self.scratch is not None:
                self.timing_scratches.append(self.scratch)
            self.use_process(home)

    @property
    def out_nbytes(self) -> int:
        return int(np.prod(self.task.out_shape)) * 4

    def init(self) -> None:
        self.give_params(self.st, writable=not self.mode.has("sealed_inputs"))

    # -- one call, judged --------------------------------------------------------------------------

    def call_candidate(self, specs: tuple, pset_id: str, into: np.ndarray | None = None,
                       stale: np.ndarray | None = None, same_objects: bool = False) -> KernelCall:
        """The candidate's call. ``stale``: without the NaN-filled alloc, what an allocator shared with the
        reference would hand out first (the reference's latest output), placed where ``alloc`` starts."""
        assert self.worker is not None
        self.refill()  # normally done already, between pairs: never inside the call
        if not self.mode.has("nan_alloc") and stale is not None and self.scratch is not None \
                and stale.nbytes <= self.scratch.size:
            np.frombuffer(self.scratch.map, np.uint8, stale.nbytes)[...] = stale.reshape(-1).view(np.uint8)
        req = P.Call("cand", pset_id, specs, "readonly" if self.mode.has("sealed_inputs") else "copy", "pool",
                     same_objects)
        expect = ("<f4", self.task.out_shape) if self.mode.has("exact_output") else None
        try:
            k = self.worker.run(req, self.remaining(), expect, into, stop=self.mode.has("stop_candidate"))
        except WorkerError as e:
            raise _Verdict("runtime_error", self._worker_error(e)) from None
        if not self.mode.has("stop_candidate"):
            self.worker.resume()
        if isinstance(k.reply, P.Called) and self.mode.has("nan_alloc"):
            # NaN-filled between calls, never inside one. While timing, by the next pair's preparation, on the
            # timing core (``between_pairs``): the kernel then writes lines that core holds, as a fresh buffer
            # in an in-process call would be, not lines the grading process's core holds.
            self.refill_due = max(self.refill_due, k.reply.alloc_used)
            if not self.timing_now and k.output is not None:  # else it is read later (``_read_any``): the next call refills
                self.refill()
        return k

    def refill(self) -> None:
        if self.refill_due and self.scratch is not None:
            self.scratch.refill(self.refill_due)
            self.refill_due = 0

    def between_pairs(self, slot: dict[str, np.ndarray], copy_from: dict[str, np.ndarray] | None = None) -> None:
        """On the timing core, while both workers are stopped: the alloc pool NaN-filled, the timed input copied
        into the slot from where it was drawn (``copy_from``) or read once (``warm_on``)."""
        with on_cpu(self.timing_cpu):
            self.refill()
            if copy_from is None:
                warm_on(self.timing_cpu, slot)
            else:
                for name, a in slot.items():
                    np.copyto(a, copy_from[name])  # the copy leaves the input in the timing core's cache too

    def output_of(self, k: KernelCall, where: str, step: str) -> np.ndarray | Comparison:
        """A call's reply checked here (a failing call, or threads left behind, end the run): the output read
        from the worker, or the failed judgement of an output that is not an array of the task's shape."""
        self.fail_on(k.reply, step, f"{where}: ", in_verdict=False)
        reply = k.reply
        assert isinstance(reply, P.Called)
        self.check_threads(step, f"after {where}")
        if reply.out_type != "numpy.ndarray":
            return Comparison(False, f"output is {reply.out_type}, not numpy.ndarray")
        if k.output is None:
            if not self.mode.has("exact_output"):
                k = self._read_any(reply)
            else:
                shape = reply.out_shape
                if shape != self.task.out_shape:
                    return Comparison(False, f"shape {shape} != {self.task.out_shape}")
                return Comparison(False, f"dtype {np.dtype(reply.out_dtype)} != float32")
        assert k.output is not None
        return k.output

    def _read_any(self, reply: P.Called) -> KernelCall:
        """Without the exact-output defence: whatever the worker returned, up to twice the expected size."""
        assert self.worker is not None
        if reply.nbytes > 2 * self.out_nbytes + 64:
            return KernelCall(reply, 0, 0, np.zeros(0, np.float32))
        try:
            out = self.worker.read(reply.out_addr, reply.nbytes, None, (reply.out_dtype, reply.out_shape))
        except P.ProtocolError as e:
            raise _Verdict("runtime_error", str(e)) from None
        return KernelCall(reply, 0, 0, out)

    def compare(self, out: np.ndarray, ref: np.ndarray, x: dict, params: dict,
                facts: judging.TrialFacts | None, timed_dist: str | None = None) -> Comparison:
        """The mode's judgement: every check of ``kbench.core.judging`` with the trial's facts (timed outputs get
        the same checks, without the predictor table); a failure on tolerance checks only gets the float64
        second opinion when the mode asks for it. Without the exact-output defence: KernelBench's allclose.
        ``timed_dist``: a timed output's distribution (its centred axes are decided once per distribution)."""
        if not self.mode.has("exact_output"):
            return compare(out, ref, self.mode.atol, self.mode.rtol, exact=False)
        timed = facts is None
        if timed:  # a timed output: its reference buffer is reused, so its facts are not cached
            decided = self.timed_centred_axes.get(timed_dist) if timed_dist else None
            facts = judging.trial_facts(self.task, ref, x, params, self.mode.atol, self.mode.rtol, predictors=False,
                                        centred_axes=decided)
            if timed_dist:
                self.timed_centred_axes[timed_dist] = facts.centred_axes
        if not self.mode.has("centred_checks") or not self.mode.has("property_checks"):
            facts = dataclasses.replace(facts, centred=facts.centred if self.mode.has("centred_checks") else (),
                                        properties=facts.properties if self.mode.has("property_checks") else ())
        exact = nudged = None
        if self.mode.has("float64_recheck"):
            exact = lambda: self.g.exact_reference(self.task, x, params)  # noqa: E731
            nudged = lambda: self.g.exact_reference(self.task, judging.nudged_inputs(x), params)  # noqa: E731
        return judging.judge(out, ref, facts, x, params, exact, rel=not timed, nudged=nudged)

    # -- correctness -------------------------------------------------------------------------------

    def truths(self, plan: list) -> list:
        if self.mode.has("own_reference"):
            # The references are the grader's work, in workers no candidate code runs in: they get a whole
            # timeout of their own and do not spend the candidate's (a candidate that used up its budget
            # loading must not make them time out), and if they fail the grader failed, not the candidate.
            self.check_cancel()
            t0 = time.perf_counter()
            try:
                return self.g.references(self.task, plan, self.mode.timeout_s)
            except (WorkerError, RuntimeError) as e:
                raise ReferenceFailed(f"the task's reference could not be computed ({e}); "
                                      "no verdict on the candidate") from None
            finally:
                self.deadline += time.perf_counter() - t0
        # Without it, the reference runs in the candidate's own worker (where the candidate can reach it).
        from kbench.grading.truth import TrialTruth

        out = []
        for i, dist, kind, draw in plan:
            x = self.g.inputs(self.task, i, dist)
            specs = self.st.stage(self.task, TRIAL_SLOT, x)
            req = P.Call(f"ref:{self.task.name}", self.g.params(self.task, kind, draw)[0], specs, "readonly", "pool")
            try:
                k = self.worker.run(req, self.remaining(), ("<f4", self.task.out_shape))  # type: ignore[union-attr]
            except WorkerError as e:
                raise _Verdict("runtime_error", self._worker_error(e)) from None
            if k.output is None:
                raise _Verdict("runtime_error", f"reference failed: {P.error_of(k.reply, 'no output')}")
            out.append(TrialTruth(x, k.output.copy()))
        return out

    def correctness(self) -> None:
        plan = self.mode.trial_plan()
        truths = self.truths(plan)
        # Trial i's output is judged beside trial i + 1's call (``cores.Ahead``), on every core: nothing is timed
        # here, and a trial's judgement (5-15 ms) often outlasts the next trial's call, so one thread on one core fell
        # behind and the last judgement waited for the others. Judgements are recorded in the trials' order.
        ahead = Ahead(self.timing_cpu, every_core=True) if cores.available(self.timing_cpu) else None
        judged: list[tuple[Future, tuple[int, str, str]]] = []  # (its judgement, the trial's i, dist, set)
        first_fail: list[Trial] = []

        def record(i: int, dist: str, pset: str, c: Comparison, facts: judging.TrialFacts | None) -> None:
            trial = Trial(i, dist, pset, c.ok, c.message, c.max_abs_err, c.max_rel_err, c.degenerate,
                          tuple((ch.name, ch.ok) for ch in c.checks))
            self.record_trial(trial, len(plan))
            if not trial.ok:
                self.breaches_before_wrong = min(self.breaches_before_wrong, len(self.breaches))
            if facts is not None:
                self.emit("trial", f"trial {i + 1} {judging.checks_line(c)}; {facts.summary()}", None, trial=i,
                          dist=dist, param_set=pset)
            if not trial.ok and not first_fail:
                first_fail.append(trial)

        def settle(block: bool) -> None:
            self.judging_s += cores.settle_in_order(judged, block, lambda cf, trial: record(*trial, *cf))

        def judgement(out: np.ndarray | Comparison, ref: np.ndarray, x: dict, params: dict,
                      facts_job: Future | None) -> tuple[Comparison, judging.TrialFacts | None]:
            facts = facts_job.result() if facts_job is not None else None
            if isinstance(out, Comparison):
                return out, facts
            return self.compare(out, ref, x, params, facts), facts

        try:
            for (i, dist, kind, draw), truth in zip(plan, truths):
                self.check_cancel()
                pset_id, params = self.g.params(self.task, kind, draw)
                pset = self.trial_label(kind, draw)
                specs = self.st.stage(self.task, TRIAL_SLOT, truth.x)
                # The trial's facts (checks, predictors) depend only on the trial: computed once per session (the
                # cached reference array is the key), on another thread while the candidate's call runs.
                facts_job = parallel.executor().submit(judging.facts_for, self.task, truth.out, truth.x, params,
                                                       self.mode.atol, self.mode.rtol) \
                    if self.mode.has("exact_output") else None
                try:
                    k = self.call_candidate(specs, pset_id, stale=truth.out)
                    if isinstance(k.reply, P.Called):
                        self.kernel_s += k.wall_ns / 1e9
                    out = self.output_of(k, f"trial {i + 1} ({dist})", "trial")
                except _Verdict as v:  # keep the trial that ended the run: views know where it failed
                    settle(block=True)
                    self.trials.append(Trial(i, dist, pset, False, v.msg))
                    raise
                job_args = (out, truth.out, truth.x, params, facts_job)
                if ahead is not None:
                    judged.append((ahead.submit(judgement, *job_args), (i, dist, pset)))
                    settle(block=False)
                else:
                    t0 = time.perf_counter()
                    c, facts = judgement(*job_args)
                    self.judging_s += time.perf_counter() - t0
                    record(i, dist, pset, c, facts)
            settle(block=True)
        finally:
            if ahead is not None:
                ahead.close()
        if first_fail:
            raise _Verdict("wrong", f"{first_fail[0].message} on {first_fail[0].dist}")

    # -- timing ------------------------------------------------------------------------------------

    def speed(self) -> None:
        tp = self.mode.timing
        assert tp is not None and self.worker is not None
        pset_id, params = self.g.params(self.task, "default", -1)
        # Every parameter set of the trial plan, staged in both workers: a check pair meets a distribution with a
        # set its trial did not use (12-03 audit: the plan pairs each distribution with one set, so a kernel
        # that dropped beta on non-negative inputs met beta = 0 alone, lognormal's trial having default params).
        plan_sets = list(dict.fromkeys((kind, draw) for _, _, kind, draw in self.mode.trial_plan()))
        psets = {kd: self.g.params(self.task, *kd) for kd in plan_sets}
        own = self.mode.has("own_reference")
        # The reference is timed in a fresh twin of the candidate's worker (same age, same history, same core,
        # stopped between calls as the candidate is), not in the long-lived workers that computed the trial
        # references: a warm heap and a cold one differ by more than the 2 % this step tries to resolve. With
        # ``tp.processes`` > 1, in as many twins, and the candidate in as many workers (``stats.with_processes``).
        n_proc = tp.processes
        try:
            twins: list[Worker] = []
            if own:
                for _ in range(n_proc):
                    twins.append(Worker("reference", self.mode.memory_limit_mb, self.g.blas_threads,
                                        cpu=self.timing_cpu, stopped=True))
                    if len(twins) == 1:
                        self.twin = twins[0]  # calibrated below; closed and killed with the candidate's worker
                    else:
                        self.timing_workers.append(twins[-1])
                    prepare(twins[-1], self.task, self.st, self.remaining(), psets=tuple(i for i, _ in psets.values()))
            ref_worker = self.twin if own else self.worker
            # The trials' slot: a timed call's inputs sit where a checked call's did, so their address tells nothing.
            slot = self.st.slot_views(self.task, TRIAL_SLOT)
            specs = self.st.x_specs(self.task, TRIAL_SLOT)
            calib = self.calibrate(ref_worker, specs, pset_id)
        except (WorkerError, OSError, RuntimeError) as e:
            raise _Verdict("runtime_error", f"reference timing worker failed: {e}") from None
        t_start = time.perf_counter()
        processes = [self.candidate_state()] + [self.another_candidate_process(k) for k in range(2, n_proc + 1)]
        self.start_s += time.perf_counter() - t_start
        ref_now = [ref_worker]  # the reference's worker for the pair being run

        def switch_to(k: int) -> None:
            """The k-th process of each arm for the next pair (``interleaved.measure``'s ``use_process``)."""
            processes[active[0]] = self.candidate_state()  # what it has left to refill
            self.use_process(processes[k])
            ref_now[0] = twins[k] if own else self.worker
            active[0] = k

        active = [0]
        fresh = self.mode.has("fresh_inputs")
        # Work ahead (``cores.Ahead``), on another core while a pair runs: pair p's input is drawn into inputs[p % 2]
        # while pair p - 1 runs, then copied into the slot between pairs; its outputs land in outputs[p % 2] and are
        # judged while pair p + 1 runs. The helper runs its jobs in order, and the copy for pair p + 2 waits for its
        # draw, which comes after pair p's judgement: no buffer is reused before its judgement is done.
        ahead = Ahead(self.timing_cpu) if fresh and cores.available(self.timing_cpu) else None
        n_bufs = 2 if ahead is not None else 1
        inputs = [{k: np.empty_like(v) for k, v in slot.items()} for _ in range(n_bufs)] if ahead else [slot]
        outputs = [{arm: np.empty(self.task.out_shape, np.float32) for arm in ("ref", "cand")} for _ in range(n_bufs)]
        cur = [0]  # the buffers of the pair being run
        pair_no = [-1]
        drawn = [False]
        pair_is_check = [False]  # the pair being run is a check pair (judged, not counted)
        slot_dist = ["normal"]  # the distribution the slot holds now
        # the set the pair's two calls take: (its id, its parameters, its kind: "default" or a random draw)
        pair_params: list[tuple[str, dict, str]] = [(pset_id, params, "default")]
        # the next pair's draw, started ahead: (a check pair?, the job, its distribution, its parameters)
        drawn_ahead: list[tuple[bool, Future, str, tuple[str, dict, str]] | None] = [None]
        judged: list[tuple[Future, None]] = []  # judgements left running on the helper, in order

        # Check pairs on the other distributions the trials passed (a candidate already wrong on one is wrong:
        # the explorer still times it, and its views without that distribution must not inherit the failure),
        # and on the timing distribution too when a parameter set never met it (the counted pairs' sets: below).
        passed = {t.dist for t in self.trials if t.ok} - {t.dist for t in self.trials if not t.ok}
        # The counted pairs' parameter sets: the defaults, or the random sets in turn (``TimingPolicy.params``);
        # without fresh inputs one of them only (the ablation reuses what the counted calls take, as KernelBench's
        # loop does: a cache keyed on the input alone must still hit there, for the roofline to show it).
        counted_sets = [kd for kd in plan_sets if kd[0] == "random"] if tp.params == "random" else []
        counted_sets = counted_sets if self.mode.has("fresh_inputs") else counted_sets[:1]
        counted = itertools.cycle([(*psets[kd], kd[0]) for kd in counted_sets] or [(pset_id, params, "default")])
        met = {d: {(kind, draw) for _, dd, kind, draw in self.mode.trial_plan() if dd == d} for d in self.mode.dists}
        met["normal"] = met.get("normal", set()) | (set(counted_sets) or {("default", -1)})  # the counted pairs'
        unmet = {d: [kd for kd in plan_sets if kd not in met[d]] for d in self.mode.dists}
        others = tuple(d for d in self.mode.dists if d in passed and (d != "normal" or unmet[d]))
        unmet = {d: unmet[d] or plan_sets for d in others}  # every set met already: any of them

        # Each distribution once per round, in an order of this run's: every one is checked while timing; each
        # with the parameter sets its trial did not use, in an order of this run's.
        rounds = itertools.cycle(self.rng.permutation(others).tolist())  # (no check pairs when others is empty)
        sets_of = {d: itertools.cycle([unmet[d][int(j)] for j in self.rng.permutation(len(unmet[d]))]) for d in others}

        def kind_of(is_check: bool) -> tuple[str, tuple[str, dict, str]]:
            """A pair's distribution and parameter set: normal with the next counted set for a counted pair."""
            if not is_check:
                return "normal", next(counted)
            dist = next(rounds)
            kind_draw = next(sets_of[dist])
            return dist, (*psets[kind_draw], kind_draw[0])

        def draw_into(b: int, dist: str) -> None:  # speed is measured on (structured) normal inputs
            self.g.draw_timing_input(self.task, inputs[b], (dist,))

        def upcoming(is_check: bool) -> None:
            if ahead is not None:
                dist, pp = kind_of(is_check)
                b = (pair_no[0] + 1) % n_bufs
                drawn_ahead[0] = (is_check, ahead.submit(draw_into, b, dist), dist, pp)

        def place(is_check: bool) -> tuple:
            pair_no[0] += 1
            pair_is_check[0] = is_check
            b = cur[0] = pair_no[0] % n_bufs
            pending, drawn_ahead[0] = drawn_ahead[0], None
            if pending is not None:
                pending[1].result()
            if pending is not None and pending[0] == is_check:
                dist, pp = pending[2], pending[3]
            else:
                dist, pp = kind_of(is_check)
                if ahead is not None:
                    ahead.submit(draw_into, b, dist).result()
                elif fresh or is_check or not drawn[0]:
                    draw_into(b, dist)
                    drawn[0] = not is_check  # after a check pair the next counted pair draws afresh
            slot_dist[0], pair_params[0] = dist, pp
            settle(block=False)
            self.between_pairs(slot, copy_from=inputs[b] if ahead is not None else None)
            after_gap[0] = True
            return specs

        def judge_timed(out: np.ndarray, ref: np.ndarray, x: dict, pp: tuple[str, dict, str], dist: str,
                        which: str) -> tuple[str, str] | None:
            c = self.compare(out, ref, x, pp[1], None, timed_dist=dist)
            if c.ok:
                return None
            if which.startswith("check"):  # a pair on another distribution, perhaps with another parameter set
                which += f" ({dist} inputs, {pp[2]} parameters)"
            key = defences.timed_breach(ch.name for ch in c.checks if ch.ok is False)
            return key, f"{which} returned a wrong output ({c.message}); correct only while being checked"

        def found(breach: tuple[str, str] | None) -> None:
            if breach is not None:
                key, msg = breach
                if key not in self.breaches:
                    self.emit("timing", msg, False)
                self.breach(key, msg)

        def settle(block: bool = True) -> None:
            """The judgements done so far (all of them, waiting, with ``block``), recorded in order."""
            self.judging_s += cores.settle_in_order(judged, block, lambda breach, _: found(breach))

        def check_timed(out: np.ndarray, ref: np.ndarray, which: str) -> None:
            if defences.TIMED in self.breaches:
                return  # closeness already failed on a timed output: every view with check_timed on says wrong
            job = (out, ref, inputs[cur[0]], pair_params[0], slot_dist[0], which)
            if ahead is None:
                t0 = time.perf_counter()
                breach = judge_timed(*job)
                self.judging_s += time.perf_counter() - t0
                found(breach)
            else:
                judged.append((ahead.submit(judge_timed, *job), None))

        own_clock: dict[str, list[float]] = {"ref": [], "cand": []}  # what the workers reported, for the record
        cost = interleaved.CallCost(calib)  # measured in place on the twin's reference calls (see CallCost)
        # Only a reference call first in its pair is measured: one that follows the candidate's call could find the
        # core as the candidate's code left it (caches it filled on purpose to make the reference's call cost more,
        # and so every call's cost look larger); one that follows the grader's own work between pairs cannot.
        after_gap = [True]

        def seconds(k: KernelCall, arm: str) -> float:
            reported = k.reply.kernel_ns if isinstance(k.reply, P.Called) else 0
            if not pair_is_check[0]:  # warm-up and counted pairs; the last n are the counted ones
                own_clock[arm].append(reported / 1e9)
            if not self.mode.has("grader_clock"):
                return reported / 1e9
            inside = k.reply.sent_ns - k.reply.recv_ns if isinstance(k.reply, P.Called) else 0
            if own and arm == "ref" and after_gap[0] and isinstance(k.reply, P.Called):
                cost.add(k.wall_ns, k.cpu_ns, inside)  # the twin runs only the grader's code: its stamps are trusted
            # Both arms: the same floor. The reference is refunded its own loop (trusted); the candidate pays its
            # own, so a loop leaner than kbench's buys nothing (CallCost).
            own_loop = max(inside - reported, 0) if arm == "ref" else 0
            return cost.seconds(k.wall_ns, k.cpu_ns, own_loop)

        def ref_call(s: tuple) -> TimedCall:
            req = P.Call(f"ref:{self.task.name}", pair_params[0][0], s, "readonly", "pool")
            try:
                k = ref_now[0].run(req, self.remaining(), ("<f4", self.task.out_shape), outputs[cur[0]]["ref"])
            except WorkerError as e:
                raise _Verdict("runtime_error", f"reference timing worker failed: {e}") from None
            if k.output is None:
                raise _Verdict("runtime_error", f"reference failed while timing: {P.error_of(k.reply, 'no output')}")
            return TimedCall(seconds(k, "ref"), k.output)

        def cand_call(s: tuple) -> TimedCall:
            after_gap[0] = False
            k = self.call_candidate(s, pair_params[0][0], outputs[cur[0]]["cand"], stale=outputs[cur[0]]["ref"],
                                    same_objects=not fresh)
            self.fail_on(k.reply, "timing", "while timing: ")
            self.check_threads("timing", "after a timed call")
            reply = k.reply
            assert isinstance(reply, P.Called)
            if reply.out_type != "numpy.ndarray":
                raise _Verdict("wrong", f"while timing: output is {reply.out_type}, not numpy.ndarray")
            out = k.output if k.output is not None else self._read_any(reply).output
            return TimedCall(seconds(k, "cand"), out)  # type: ignore[arg-type]

        t0 = time.perf_counter()
        budget = min(tp.budget_s, max(self.deadline - t0 - 1.0, 0.0))
        # The grading thread reads outputs on the timing core and stays there between calls only while every worker
        # there is stopped between calls (a candidate left running would share that core with it).
        read_on = self.timing_cpu if ahead is not None and self.mode.has("stop_candidate") else None
        for w in self.all_workers():
            w.read_cpu = read_on
        try:
            self.timing, kernel_s = interleaved.measure(
                self.task, tp, ref_call=ref_call, cand_call=cand_call, next_input=lambda: place(False),
                check_timed=check_timed if self.mode.has("check_timed") else None, budget_s=budget,
                rng=self.rng, emit=lambda msg, ok: self.emit("timing", msg, ok), check_cancel=self.check_cancel,
                now=time.perf_counter, blas_threads=self.g.blas_threads,
                budget_cap_s=max(min(tp.budget_s * stats.EXTEND_FACTOR, self.deadline - t0 - 1.0), 0.0),
                pids=[w.pid for w in self.all_workers() if w.pid],
                floor=self.mode.has("roofline_floor"),
                on_implausible=lambda msg: self.breach("roofline_floor", msg), ref_first=not self.mode.has("nan_alloc"),
                check_input=(lambda: place(True)) if fresh and others else None, min_checks=len(others),
                upcoming=upcoming if ahead is not None else None, settle=settle,
                use_process=switch_to if n_proc > 1 else None)
        except TimingAborted as e:
            raise _Verdict(e.status, e.msg) from None  # type: ignore[arg-type]
        finally:
            switch_to(0)  # the first candidate worker again (its stdout is the one read, its pool closed last)
            if ahead is not None:
                ahead.close()
            for w in self.all_workers():
                w.read_cpu = None
            parallel.unpark()  # the grading thread stayed on the timing core after the last read
        self.kernel_s += kernel_s
        n = self.timing.n_samples
        if len(own_clock["ref"]) >= n and len(own_clock["cand"]) >= n and min(own_clock["cand"][-n:]) > 0:
            # the same pairs by the workers' own report (warm-up pairs excluded), for the view without the grader's clock
            self.worker_clock = interleaved.summarize(self.task, own_clock["ref"][-n:], own_clock["cand"][-n:],
                                                      self.timing.other_load or 0.0, self.timing.stop, self.rng,
                                                      self.g.blas_threads,
                                                      [interleaved.process_of(j, n_proc) for j in range(n)])

    def calibrate(self, w: Worker, specs: tuple, pset_id: str) -> tuple[int, int]:
        """What a call costs outside the worker's loop, wall and CPU (medians of the round trip less the time the
        worker held the request; see ``CallCost``), measured as every timed call is: a call through the same path,
        on the same inputs, returning an output of the task's shape that needs no work. Charged until the pairs'
        own reference calls measure it in place (``speed``). Measured on the reference's twin, never on the
        candidate's worker, which could slow its own calls to make its kernels look faster.

        Its output lies in a mapping of its own, not on the twin's heap: an array kept there shifts where the
        reference's temporaries land (12-04: with an 8 MiB calibration output on its heap the twin ran layer norm's
        reference 3-5 % faster than the same code in the candidate's worker, an A/A of 0.95-0.98 on the workers' own
        clocks in every run; the same array on the candidate's heap too gave 0.99-1.03)."""
        shape = tuple(self.task.out_shape)
        reply = w.call(P.Load(calibration_source(shape), "calibrate", trusted=True), self.remaining())
        if not isinstance(reply, P.Loaded):
            raise RuntimeError(f"calibration failed: {P.error_of(reply)}")
        walls, cpus = [], []
        into = np.empty(shape, np.float32)
        for _ in range(CALIBRATION_CALLS):
            k = w.run(P.Call("calibrate", pset_id, specs, "readonly", "pool"), self.remaining(), ("<f4", shape), into)
            inside = k.reply.sent_ns - k.reply.recv_ns if isinstance(k.reply, P.Called) else 0
            walls.append(k.wall_ns - inside)
            cpus.append(max(k.cpu_ns - inside, 0))
        return int(np.median(walls)), int(np.median(cpus))


def calibration_source(shape: tuple[int, ...]) -> str:
    """The calibration's function (``HardenedRun.calibrate``): it returns an output of ``shape`` that needs no
    work, kept in an anonymous mapping of its own, off the worker's heap."""
    n = int(np.prod(shape))
    return ("import mmap\n"
            f"_out = np.frombuffer(mmap.mmap(-1, {max(n * 4, 1)}), np.float32, {n}).reshape({tuple(shape)!r})\n"
            "def forward(x, params, alloc):\n    return _out\n")


# ------------------------------------------------------------------------------------------ public API

PROCEDURES: dict[str, type[_Run]] = {"naive_v0": NaiveRun, "hardened": HardenedRun}


def evaluate(task: "Task | str", src: str, mode: "Mode | str" = "hardened", cand_name: str | None = None, *,
             dists: "tuple[str, ...] | list[str] | None" = None, on_event: EventSink | None = None,
             cancel: threading.Event | None = None, grader: Grader | None = None,
             timing_lane: TimingLaneHook | None = None) -> Result:
    """Grade candidate source ``src`` on ``task`` under ``mode``; stream step events to ``on_event``.

    ``timing_lane``: a context manager factory entered around the timing step, yielding the core to time
    on or None (batch grading passes ``kbench.grading.lanes.TimingLane.timing``)."""
    t = tasks_mod.get(task) if isinstance(task, str) else task
    m = tasks_mod.mode_for(t, modes_mod.get(mode))  # what a task file declares: its tolerance, its distributions
    if dists is not None:
        m = m.with_dists(tuple(dists))
    g = grader or default_grader()
    with g.lock, parallel.one_blas_thread(), wakeups.held(), wakeups.prompt():
        return PROCEDURES[m.procedure](g, t, src, m, cand_name, on_event, cancel, timing_lane).execute()

