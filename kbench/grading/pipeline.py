"""The evaluator: one pipeline of steps — static check, load, init, correctness trials, timing.

A ``Mode`` (data) decides what each step does; every step reports ``Event``s to a callback. Candidate
code only ever runs in a sandbox worker. In hardened mode the ``Grader`` (this process, holding a
secret seed) draws the inputs, has the reference computed by a worker that never saw candidate code,
judges every output and owns the clock; in naive mode the candidate's worker runs the whole
KernelBench-v0 procedure itself, as KernelBench does in-process, and can be fooled the same ways.
"""

from __future__ import annotations

import secrets
import threading
import time
from typing import Any

import numpy as np

from kbench.core import modes as modes_mod
from kbench.timing import roofline
from kbench.grading import static_gate
from kbench.core import tasks as tasks_mod
from kbench.core.compare import Comparison, compare
from kbench.core.modes import Mode
from kbench.core.results import Event, EventSink, Result, Status, Timing, Trial
from kbench.grading.truth import Grader, default_grader, give_params, load_reference, out_bytes
from kbench.sandbox.server import Worker, WorkerError
from kbench.core.tasks import Task
from kbench.timing.stats import contains_one, pair_orders, should_stop, speedup_ci, speedup_point, summary


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
                 on_event: EventSink | None, cancel: threading.Event | None) -> None:
        self.g, self.task, self.src, self.mode, self.name = grader, task, src, mode, cand_name
        self.on_event, self.cancel = on_event, cancel
        self.t_start = time.perf_counter()
        self.deadline = self.t_start + mode.timeout_s
        self.trials: list[Trial] = []
        self.timing: Timing | None = None
        self.worker: Worker | None = None
        self.ref_timer: Worker | None = None
        self.rng = np.random.default_rng([grader.seed, 7, secrets.randbits(32)])
        self.kernel_s = 0.0  # candidate and reference kernel time this run measured (not cached references)
        self.start_s = 0.0  # starting the candidate's worker and loading its source

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

    def ask(self, op: str, **kw: Any) -> tuple[dict, list[np.ndarray], int, int]:
        """A request to the candidate's worker; a dead or silent worker ends the run as runtime_error."""
        assert self.worker is not None
        try:
            return self.worker.request(op, self.remaining(), **kw)
        except WorkerError as e:
            msg = f"timed out after {self.mode.timeout_s:g} s" if e.kind == "timeout" else str(e)
            raise _Verdict("runtime_error", msg) from None

    # -- steps -------------------------------------------------------------------------------------

    def execute(self) -> Result:
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
                    try:  # so a view without the failing distributions has a speed
                        self.speed(check_outputs=False)
                    except _Verdict:
                        self.timing = None  # timing a wrong candidate never overrides its verdict
                raise
            self.check_cancel()
            self.speed()
            msg = f"{self.timing.speedup:.2f}x" if self.timing else "correct"
        except _Verdict as v:
            status, msg = v.status, v.msg
        finally:
            for w in (self.worker, self.ref_timer):
                if w is not None:
                    w.close()
        result = Result(self.task.name, self.name, self.mode.name, self.mode.dists, status, msg, self.trials,
                        self.timing, time.perf_counter() - self.t_start)
        result.overhead = {"wall_s": result.elapsed, "kernel_s": self.kernel_s, "worker_start_s": self.start_s}
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
        if self.mode.shared_process:
            h, *_ = self.ask("load", src=self.task.ref_src, **{"as": "ref"})
        h, *_ = self.ask("load", src=self.src, **{"as": "cand"})
        if not h.get("ok"):
            self.emit("load", str(h.get("error")), False)
            raise _Verdict("compile_error", str(h.get("error")))
        self.start_s = time.perf_counter() - t0
        self.emit("load", f"loaded in a fresh sandbox worker ({self.start_s * 1e3:.0f} ms)"
                          + (", has init()" if h.get("has_init") else ""), True)

    def init(self) -> None:
        seen = set()
        for _, _, kind, draw in self.mode.trial_plan():
            pid, params = self.g.params(self.task, kind, draw)
            if pid in seen:
                continue
            seen.add(pid)
            h, *_ = self.ask("params", pid=pid, params=params)
            if not h.get("ok"):
                self.emit("init", f"init failed: {h.get('error')}", False)
                raise _Verdict("runtime_error", f"init failed: {h.get('error')}")
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
        h, *_ = self.ask("verify")
        if h.get("params_changed"):
            msg = f"rejected: modified params {', '.join(map(str, h['params_changed']))} during {during}"
            self.emit("trial", msg, False)
            raise _Verdict("rejected", msg)

    def shared_trial(self, i: int, dist: str, kind: str, draw: int, pset: str) -> Trial:
        pid, _ = self.g.params(self.task, kind, draw)
        x = self.g.inputs(self.task, i, dist)
        h, *_ = self.ask("naive_trial", pid=pid, x=x, atol=self.mode.atol, rtol=self.mode.rtol)
        if h.get("raised") or h.get("error"):
            msg = h.get("raised") or h.get("error")
            self.emit("trial", f"trial {i + 1} {dist} raised {msg}", False, trial=i, dist=dist, param_set=pset)
            raise _Verdict("runtime_error", str(msg))
        return Trial(i, dist, pset, bool(h.get("ok")), str(h.get("message", "")), _num(h.get("max_abs_err")),
                     _num(h.get("max_rel_err")))

    def isolated_trial(self, i: int, dist: str, kind: str, draw: int, pset: str) -> Trial:
        try:
            x, pid, _, ref = self.g.reference(self.task, i, dist, kind, draw, self.remaining())
        except WorkerError as e:
            raise _Verdict("runtime_error", f"reference worker failed: {e}") from None
        h, arrays, _, _ = self.ask("call", fn="cand", pid=pid, x=x, alloc=self.mode.alloc, out_bytes=out_bytes(self.task))
        if isinstance(h.get("t0"), int) and isinstance(h.get("t1"), int):
            self.kernel_s += max(0, h["t1"] - h["t0"]) / 1e9
        c = self.judge(h, arrays, ref, f"trial {i + 1} ({dist})")
        return Trial(i, dist, pset, c.ok, c.message, c.max_abs_err, c.max_rel_err, c.degenerate)

    def check_hygiene(self, h: dict, step: str, where: str) -> None:
        """The worker's facts about one call; any breach ends the run (checked on timed calls too)."""
        if not self.mode.exact_checks:
            return
        breach = None
        if h.get("threads_started"):
            breach = f"started {h['threads_started']} thread(s) still running after forward() returned"
        elif h.get("inputs_changed"):
            breach = f"modified input {', '.join(map(str, h['inputs_changed']))} in place"
        elif h.get("aliases"):
            breach = f"output shares memory with {', '.join(map(str, h['aliases']))}"
        if breach:
            self.emit(step, f"{where}: rejected: {breach}", False)
            raise _Verdict("rejected", f"rejected: {breach}")

    def judge(self, h: dict, arrays: list[np.ndarray], ref: np.ndarray, where: str) -> Comparison:
        """Hygiene first (any breach ends the run), then the numeric comparison."""
        if not h.get("ok"):
            self.emit("trial", f"{where}: {h.get('error')}", False)
            raise _Verdict("runtime_error", str(h.get("error")))
        self.check_hygiene(h, "trial", where)
        if not arrays:
            return Comparison(False, f"output is {h.get('out_type', 'unknown')}, not numpy.ndarray")
        return compare(arrays[0], ref, self.mode.atol, self.mode.rtol, exact=self.mode.exact_checks)

    # -- timing ------------------------------------------------------------------------------------

    def speed(self, check_outputs: bool = True) -> None:
        if self.mode.timing is None:
            return
        if self.mode.timing.method == "blocked":
            self.blocked_timing()
        else:
            self.interleaved_timing(check_outputs and self.mode.timing.check_outputs)

    def blocked_timing(self) -> None:
        tp = self.mode.timing
        assert tp is not None
        pid, _ = self.g.params(self.task, "default", -1)
        x = self.g.inputs(self.task, 10_000, "normal")
        self.emit("timing", f"timing: {tp.warmup} warm-up runs, then all reference runs, then all candidate runs "
                            f"on one reused input ({tp.statistic})")
        h, *_ = self.ask("naive_time", pid=pid, x=x, warmup=tp.warmup, min_runs=tp.min_runs, max_runs=tp.max_runs,
                         budget_s=min(tp.budget_s, self.remaining()))
        if not h.get("ok", True) or h.get("error"):
            raise _Verdict("runtime_error", str(h.get("error")))
        ref, cand = _floats(h.get("ref")), _floats(h.get("cand"))
        if not ref or not cand:
            raise _Verdict("runtime_error", "timing returned no samples")
        self.kernel_s += sum(ref) + sum(cand)
        s = speedup_point(ref, cand, tp.statistic)
        ci = speedup_ci(ref, cand, paired=False, statistic=tp.statistic, rng=self.rng)
        self.timing = Timing("blocked", summary(ref, tp.statistic), summary(cand, tp.statistic), s, ci,
                             min(len(ref), len(cand)), contains_one(ci), self.g.blas_threads,
                             ref_samples=ref, cand_samples=cand)
        self.emit("timing", f"reference {self.timing.t_ref * 1e3:.3f} ms x{len(ref)}, candidate "
                            f"{self.timing.t_cand * 1e3:.3f} ms x{len(cand)}", True, speedup=s, speedup_ci=ci)

    def interleaved_timing(self, check_outputs: bool) -> None:
        tp = self.mode.timing
        assert tp is not None
        pid, params = self.g.params(self.task, "default", -1)
        stream = self.g.stream(self.task)
        self.emit("timing", "timing: pairs on fresh inputs, random order in each pair, median; "
                            f"until the 95% CI is within ±{tp.target_rel_ci:.0%} or {tp.budget_s:g} s")
        ref_t: list[float] = []
        cand_t: list[float] = []
        over_ref: list[float] = []
        over_cand: list[float] = []
        checked = 0
        t0 = time.perf_counter()
        last: tuple[np.ndarray, np.ndarray] | None = None
        # The reference is timed in a fresh twin of the candidate's worker (same age, same history, same
        # core), not in the long-lived worker that computed the trial references: a warm heap and a cold
        # one differ by more than the 2 % this step tries to resolve.
        try:
            self.ref_timer = Worker("reference", self.mode.memory_limit_mb, self.g.blas_threads, cpu=self.g.cpu)
            load_reference(self.ref_timer, self.task, self.remaining())
            give_params(self.ref_timer, pid, params, self.remaining())
        except (WorkerError, OSError, RuntimeError) as e:
            raise _Verdict("runtime_error", f"reference timing worker failed: {e}") from None
        for k in range(tp.warmup):
            self.pair(pid, params, stream.next(), True)
        orders = iter(pair_orders(self.rng, tp.max_runs))
        while not should_stop(ref_t, cand_t, time.perf_counter() - t0, tp.min_runs, tp.max_runs,
                              min(tp.budget_s, max(self.deadline - t0 - 1.0, 0.0)), tp.target_rel_ci, self.rng):
            self.check_cancel()
            x = stream.next()
            (rt, ro, r_over), (ct, co, c_over) = self.pair(pid, params, x, next(orders))
            ref_t.append(rt)
            cand_t.append(ct)
            over_ref.append(r_over)
            over_cand.append(c_over)
            last = (ro, co)
            if check_outputs and self.rng.random() < 0.25:  # a secret sample of timed outputs
                self.check_timed(co, ro, len(cand_t))
                checked += 1
            if len(cand_t) % 5 == 0:
                self.emit("timing", f"{len(cand_t)} pairs: reference {np.median(ref_t) * 1e3:.3f} ms, candidate "
                                    f"{np.median(cand_t) * 1e3:.3f} ms")
        if check_outputs and last is not None:
            self.check_timed(last[1], last[0], len(cand_t))
            checked += 1
        self.verify_params("timing")
        self.kernel_s += sum(ref_t) + sum(cand_t)
        # The candidate's worker reports its own kernel times; its clock is only believed when the time
        # around the call, as the grader saw it, matches what the reference's worker needs for the same
        # data movement.
        # A clock that under-reports by a factor f leaves (f - 1) x the claimed time unaccounted for; honest
        # differences (bigger params to verify, say) are small next to the kernel and the reference's own.
        ref_over = float(np.median(over_ref))
        extra = float(np.median(over_cand)) - ref_over
        if extra > max(0.5 * ref_over, 0.002, 0.5 * float(np.median(cand_t))):
            # Not rejected (load alone can open such a gap): the grader's own clock is used instead, round
            # trip minus what the reference's worker needs around a call, so a patched clock buys nothing.
            cand_t = [max(t, t + o - ref_over) for t, o in zip(cand_t, over_cand)]
            self.emit("timing", f"the candidate's reported kernel times leave +{extra * 1e3:.2f} ms per call "
                                "unaccounted for; using the grader's clock instead", False)
        elif extra > max(0.0002, 0.03 * float(np.median(cand_t))):
            # A smaller gap still counts as candidate time: a worker clock can make a candidate look slower,
            # never faster. (Below 3 % or 0.2 ms it is indistinguishable from noise and left alone.)
            cand_t = [t + extra for t in cand_t]
        s = speedup_point(ref_t, cand_t)
        ci = speedup_ci(ref_t, cand_t, rng=self.rng)
        t_cand = float(np.median(cand_t))
        roof = roofline.get()
        floor = roof.floor_s(self.task.min_flops, self.task.min_bytes)
        if t_cand < roofline.IMPLAUSIBLE_FACTOR * floor:
            msg = (f"rejected: implausible: the least work for {self.task.name} is {self.task.min_bytes / 1e6:.1f} MB "
                   f"and {self.task.min_flops / 1e9:.2f} GFLOP; at this machine's {roof.gbs:.1f} GB/s and "
                   f"{roof.gflops:.1f} GFLOP/s that takes at least {floor * 1e3:.3f} ms, but the candidate "
                   f"claims {t_cand * 1e3:.3f} ms")
            self.emit("timing", msg, False)
            raise _Verdict("rejected", msg)
        self.timing = Timing("interleaved", float(np.median(ref_t)), t_cand, s, ci, len(cand_t), contains_one(ci),
                             self.g.blas_threads, achieved_gbs=self.task.min_bytes / t_cand / 1e9,
                             achieved_gflops=self.task.min_flops / t_cand / 1e9, roof_fraction=floor / t_cand,
                             ref_samples=ref_t, cand_samples=cand_t)
        self.emit("timing", f"{len(cand_t)} pairs: reference {self.timing.t_ref * 1e3:.3f} ms, candidate "
                            f"{self.timing.t_cand * 1e3:.3f} ms ({self.timing.roof_fraction:.0%} of the roof); "
                            f"{checked} timed outputs checked", True,
                  speedup=s, speedup_ci=ci)

    def pair(self, pid: str, params: dict, x: dict, ref_first: bool) -> tuple[tuple, tuple]:
        """Run reference and candidate once each on the same fresh input; (seconds, output, overhead)."""
        def run_ref() -> tuple[float, np.ndarray, float]:
            assert self.ref_timer is not None
            try:
                h, arrays, ts, tr = self.ref_timer.request("call", self.remaining(), fn=f"ref:{self.task.name}",
                                                           pid=pid, x=x, alloc="nan", out_bytes=out_bytes(self.task))
            except WorkerError as e:
                raise _Verdict("runtime_error", f"reference timing worker failed: {e}") from None
            if not h.get("ok") or not arrays:
                raise _Verdict("runtime_error", f"reference failed while timing: {h.get('error')}")
            out = arrays[0]
            t = (h["t1"] - h["t0"]) / 1e9
            return t, out, (tr - ts) / 1e9 - t

        def run_cand() -> tuple[float, np.ndarray, float]:
            h, arrays, ts, tr = self.ask("call", fn="cand", pid=pid, x=x, alloc=self.mode.alloc,
                                         out_bytes=out_bytes(self.task))
            if not h.get("ok"):
                raise _Verdict("runtime_error", f"while timing: {h.get('error')}")
            self.check_hygiene(h, "timing", "while timing")
            t0, t1 = h.get("t0"), h.get("t1")
            if not (isinstance(t0, int) and isinstance(t1, int) and ts <= t0 <= t1 <= tr):
                raise _Verdict("rejected", "rejected: the candidate's reported kernel time lies outside the "
                                           "grader's own measurement of the call")
            t = (t1 - t0) / 1e9
            if not arrays:
                raise _Verdict("wrong", f"while timing: output is {h.get('out_type')}, not numpy.ndarray")
            return t, arrays[0], (tr - ts) / 1e9 - t

        if ref_first:
            r = run_ref()
            c = run_cand()
        else:
            c = run_cand()
            r = run_ref()
        return r, c

    def check_timed(self, out: np.ndarray, ref: np.ndarray, n: int) -> None:
        c = compare(out, ref, self.mode.atol, self.mode.rtol, exact=self.mode.exact_checks)
        if not c.ok:
            msg = f"timed call {n} returned a wrong output ({c.message}); correct only while being checked"
            self.emit("timing", msg, False)
            raise _Verdict("wrong", msg)


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) else None


def _floats(v: Any) -> list[float]:
    return [float(t) for t in v if isinstance(t, (int, float))] if isinstance(v, list) else []


# ------------------------------------------------------------------------------------------ public API

def evaluate(task: "Task | str", src: str, mode: "Mode | str" = "hardened", cand_name: str | None = None, *,
             dists: "tuple[str, ...] | list[str] | None" = None, on_event: EventSink | None = None,
             cancel: threading.Event | None = None, grader: Grader | None = None) -> Result:
    """Grade candidate source ``src`` on ``task`` under ``mode``; stream step events to ``on_event``."""
    t = tasks_mod.get(task) if isinstance(task, str) else task
    m = modes_mod.get(mode)
    if dists is not None:
        m = m.with_dists(tuple(dists))
    g = grader or default_grader()
    with g.lock:
        return _Run(g, t, src, m, cand_name, on_event, cancel).execute()
