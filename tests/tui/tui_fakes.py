"""A fake engine for the explorer's tests: deterministic results in microseconds, the same event
stream shape as the real evaluator, and an optional gate to hold an evaluation mid-run."""

from __future__ import annotations

import threading
import zlib

from kbench.grading.pipeline import Cancelled
from kbench.core.modes import Mode
from kbench.core.results import Event, Result, Timing, Trial

WRONG_EVERYWHERE = {"wrong_axis", "swap_axes", "no_keepdims", "sum_first_axis0", "no_scale", "swapped_gate_up",
                    "sigmoid_approx", "no_cubic", "inplace_epilogue"}
FAILS_ON = {"no_max": {"lognormal", "offset", "edge"}, "no_eps": {"edge"}, "one_pass_var": {"offset"},
            "half_precision": {"offset", "lognormal"}}


#: What a fake worker "was confined by" (a machine where one layer is missing, so the log's warning shows).
FAKE_ISOLATION = ("netns", "ipcns", "mountns", "pidns", "rlimits", "nocaps", "tasks", "landlock", "seccomp")


def speed(name: str, mode: str) -> float:
    s = 0.6 + (zlib.crc32(name.encode()) % 400) / 40
    return round(s * (1.1 if mode == "naive" else 1.0), 3)


def fake_result(task: str, name: str | None, mode: Mode) -> Result:
    name = name or "candidate"
    m = mode.name
    if name == "numba_jit":
        return Result(task, name, m, mode.dists, "runtime_error", "ModuleNotFoundError: numba")
    if name.startswith("broken"):
        return Result(task, name, m, mode.dists, "compile_error", "SyntaxError: invalid syntax (line 3)")
    if name.startswith("hack") and m == "hardened":
        return Result(task, name, m, mode.dists, "rejected", "rejected: reads a cache keyed on input identity")
    trials = []
    for i, _, kind, draw in mode.trial_plan():
        d = mode.dists[i % len(mode.dists)]
        bad = (name in WRONG_EVERYWHERE) or (m == "hardened" and d in FAILS_ON.get(name, set()))
        pset = "default" if kind == "default" else f"random {draw + 1}"
        trials.append(Trial(i, d, pset, not bad, "max abs err 0.5" if bad else "max abs err 1e-06",
                            0.5 if bad else 1e-6, None))
    s = speed(name, m)
    timing = Timing(method="interleaved", t_ref=0.010, t_cand=0.010 / s, speedup=s,
                    speedup_ci=(round(s * 0.95, 3), round(s * 1.05, 3)), n_samples=12, noise=False)
    first_bad = next((t for t in trials if not t.ok), None)
    if first_bad is not None:
        timed = timing if mode.time_wrong else None
        return Result(task, name, m, mode.dists, "wrong", f"max abs err 0.5 on {first_bad.dist}", trials, timed,
                      isolation=FAKE_ISOLATION)
    return Result(task, name, m, mode.dists, "correct", f"{s:.2f}x", trials, timing, isolation=FAKE_ISOLATION)


class FakeEngine:
    """``evaluate``-compatible. ``gate``: when given, every run waits on it after its first trial."""

    def __init__(self, gate: threading.Event | None = None) -> None:
        self.gate = gate
        self.calls: list[tuple[str, str | None, str, tuple[str, ...]]] = []
        self.lock = threading.Lock()

    def __call__(self, task, src, mode: Mode, cand_name=None, *, on_event=None, cancel=None, dists=None,  # type: ignore[no-untyped-def]
                 grader=None) -> Result:
        with self.lock:
            self.calls.append((str(task), cand_name, mode.name, tuple(mode.dists)))
        emit = on_event or (lambda e: None)
        emit(Event("start", f"{task}/{cand_name} in {mode.name} mode ({', '.join(mode.dists)})"))
        result = fake_result(str(task), cand_name, mode)
        if "gate" in mode.defences:
            emit(Event("static", "static check passed", True, 0.01))
        emit(Event("load", "loaded", True, 0.02))
        for n, t in enumerate(result.trials):
            if cancel is not None and cancel.is_set():
                raise Cancelled()
            emit(Event("trial", f"trial {t.index + 1}/{len(result.trials)} {t.dist:<11} {t.param_set:<8} "
                                f"{'pass' if t.ok else 'FAIL'}  {t.message}", t.ok, 0.1 * (n + 1), trial=t.index,
                       dist=t.dist, param_set=t.param_set, max_abs_err=t.max_abs_err))
            if n == 0 and self.gate is not None:
                self.gate.wait(10)
        if cancel is not None and cancel.is_set():
            raise Cancelled()
        emit(Event("verdict", f"{result.status}: {result.msg}", result.correct, 1.0, status=result.status,
                   speedup=result.speedup if result.timing else None, speedup_ci=result.speedup_ci))
        return result
