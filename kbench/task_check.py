"""``kbench task check``: what a grader would face with a task, before anyone grades against it.

Each check is one line with a verdict (``ok``, ``warn`` or ``fail``); a task with a ``fail`` is gameable (a
trivial answer passes) or broken (the grader cannot judge against it). Everything runs where grading runs it:
the static gate in a fresh candidate worker, the reference in the grader's reference workers on the grader's
own trial inputs (the structured draws of every distribution, parameters cycling default and random sets),
its time in a reference worker pinned and stopped as the timing twin is. Nothing of the task's code runs in
this process (a user's file: ``kbench.usertasks``).

* **load**: the file parses, its declarations are valid, its parameter maker and reference run;
* **gate**: the reference passes the static gate (graders grade it against itself, A/A);
* **params**: the parameter sets are finite float32, and the random draws differ from the default;
* **finite**: the reference's output is finite on every distribution;
* **informative**: the output is not all zeros or one constant on any distribution (that trial would test
  nothing), and no simple answer (zeros, a constant, the mean along an axis, ... ``kbench.core.judging``'s
  predictors, also where one *equals* the reference) passes under the task's tolerance on the distribution
  timed calls draw from (a kernel computing only that would be graded correct and fast); one that passes only
  on another distribution is a warning (those trials cannot tell it apart, the others can);
* **deterministic**: two runs in fresh workers give the same output on the same inputs;
* **time**: the reference's time on this machine (one BLAS thread), and whether a hardened evaluation fits
  its time-out.

A distribution the task's hardened mode does not use (``exponential``, ``edge`` by default) gets ``warn``
where it would get ``fail``: a grader never shows it to a candidate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from kbench.core import judging
from kbench.core.distributions import ALL_DISTS
from kbench.core.modes import HARDENED
from kbench.core.taskfile import TaskFileError
from kbench.core.tasks import Task, mode_for
from kbench.core.text import one_line
from kbench.grading import gate_in_worker  # noqa: F401 - registers the gate with the fork server
from kbench.grading.truth import Grader, prepare
from kbench.sandbox import protocol as P
from kbench.sandbox.server import Worker, WorkerError

Verdict = Literal["ok", "warn", "fail"]
#: Timed reference calls (after one warm-up); the median is reported.
TIMED_CALLS = 5
#: Below this a reference's time is mostly the grader's own round trip (~0.1 ms): speedups are noise-bound.
FAST_REF_S = 5e-4
CHECK_TIMEOUT_S = 120.0
#: The distribution timed calls draw from (``Grader.draw_timing_input``): a shortcut that passes there pays.
TIMED_DIST = "normal"

_PHRASES = {"zeros": "zeros", "constant": "one constant", "rank-1": "a rank-1 approximation",
            "half the rows": "the reference on half the rows (the others copied from their neighbours)", "small values zeroed": "the output with small values "
            "zeroed", "constant removed": "the output without its constant part"}


@dataclass(frozen=True)
class Line:
    check: str
    verdict: Verdict
    text: str

    def as_dict(self) -> dict[str, str]:
        return {"check": self.check, "verdict": self.verdict, "text": self.text}


def _trivial(predictor: str) -> bool:
    """Predictors that, when they equal the reference, make the task trivial: zeros, a constant, a mean."""
    return predictor in ("zeros", "constant", "half the rows") or predictor.startswith("mean along axis")


def _phrase(predictor: str) -> str:
    return _PHRASES.get(predictor, "the " + predictor)


def _dists_list(ds: list[str]) -> str:
    return ", ".join(ds)


def check_file(path: Path, timeout_s: float = CHECK_TIMEOUT_S) -> tuple[Task | None, list[Line]]:
    """Load a task file the way ``--tasks`` does (its code in a confined worker) and check it; each step that
    runs the task's code waits at most ``timeout_s``."""
    from kbench.usertasks import load_file

    try:
        task = load_file(path)
    except TaskFileError as e:
        return None, [Line("load", "fail", str(e))]
    loaded = Line("load", "ok", f"{task.name} (level {task.level}): inputs "
                                f"{', '.join(f'{k} {v}' for k, v in task.inputs.items())}, output {task.out_shape}")
    return task, [loaded] + check_task(task, timeout_s=timeout_s)


def check_task(task: Task, grader: Grader | None = None, timeout_s: float = CHECK_TIMEOUT_S) -> list[Line]:
    """Every check but loading, for a task already loaded."""
    mode = mode_for(task, HARDENED)
    graded = set(mode.dists)
    lines = [_gate(task, timeout_s)]
    g = grader or Grader()
    try:
        return lines + _run(task, g, mode, graded, timeout_s)
    finally:
        if grader is None:
            g.close()


def _run(task: Task, g: Grader, mode: Any, graded: set[str], timeout_s: float) -> list[Line]:
    lines: list[Line] = []
    plan = [(i, d, ("default", "random", "random")[i % 3], (-1, 0, 1)[i % 3]) for i, d in enumerate(ALL_DISTS)]
    try:
        lines += _params(task, g)
        truths = g.references(task, plan, timeout_s)
    except (TaskFileError, RuntimeError, WorkerError) as e:
        return lines + [Line("reference", "fail", f"the reference does not run: {one_line(str(e))}")]
    lines += _finite(plan, truths, graded)
    lines += _informative(task, g, plan, truths, graded, mode.atol, mode.rtol)
    lines.append(_deterministic(task, g, plan, truths, mode.atol, mode.rtol, timeout_s))
    lines.append(_time(task, g, mode, timeout_s))
    return lines


def _gate(task: Task, timeout_s: float) -> Line:
    w = Worker("candidate")
    try:
        reply = w.call(P.Gate(task.ref_src), timeout_s)
    except WorkerError as e:
        return Line("gate", "fail", f"the static gate did not answer: {e}")
    finally:
        w.close()
    if not isinstance(reply, P.GateVerdict):
        return Line("gate", "fail", f"the static gate failed: {P.error_of(reply)}")
    if reply.error:
        return Line("gate", "fail", f"the static gate cannot check the reference: {reply.error}")
    if reply.findings:
        rule, line, detail = reply.findings[0]
        more = f" (+{len(reply.findings) - 1} more)" if len(reply.findings) > 1 else ""
        return Line("gate", "fail", f"the static gate rejects the reference: {_where(task, line)} "
                                    f"{one_line(detail)} [{rule}]{more}; graders could not grade it against itself")
    return Line("gate", "ok", "the reference passes the static gate")


def _where(task: Task, line: int) -> str:
    """A line of ``ref_src`` as a line of the task's file, when the file holds it once (the reference is
    forward and what it uses, cut from the file)."""
    ref = task.ref_src.splitlines()
    if task.path is None or not 0 < line <= len(ref):
        return f"line {line}"
    try:
        lines = task.path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return f"line {line}"
    hits = [i + 1 for i, text in enumerate(lines) if text == ref[line - 1]]
    return f"line {hits[0]} of {task.path.name}" if len(hits) == 1 else f"line {line} of the reference"


def _params(task: Task, g: Grader) -> list[Line]:
    sets = {f"{kind} {draw}" if kind == "random" else kind: g.params(task, kind, draw)[1]
            for kind, draw in (("default", -1), ("random", 0), ("random", 1))}
    if not sets["default"]:
        return [Line("params", "ok", "no parameters")]
    bad = [f"{name} {k}" for name, p in sets.items() for k, v in p.items()
           if not (np.isfinite(v).all() if isinstance(v, np.ndarray) else math.isfinite(v))]
    if bad:
        return [Line("params", "fail", f"parameters not finite: {', '.join(bad)}")]

    def same(a: dict, b: dict) -> bool:
        return all(np.array_equal(a[k], b[k]) for k in a)

    names = ", ".join(f"{k} {v.shape}" if isinstance(v, np.ndarray) else k for k, v in sets["default"].items())
    if same(sets["default"], sets["random 0"]) and same(sets["default"], sets["random 1"]):
        return [Line("params", "warn", f"{names}: the random draws equal the default parameters, so a kernel that "
                                       "bakes the default values in passes (draw them from rng when randomize)")]
    return [Line("params", "ok", f"{names}; the random draws differ from the default")]


def _finite(plan: list, truths: list, graded: set[str]) -> list[Line]:
    bad, warn = [], []
    for (_, dist, _, _), t in zip(plan, truths):
        n = int(t.out.size - np.count_nonzero(np.isfinite(t.out)))
        if n:
            (bad if dist in graded else warn).append(f"{dist} ({n:,} of {t.out.size:,} values)")
    out = []
    if bad:
        out.append(Line("finite", "fail", f"the output is not finite on {_dists_list(bad)}: there the grader cannot "
                                          "tell a right answer from a wrong one"))
    if warn:
        out.append(Line("finite", "warn", f"the output is not finite on {_dists_list(warn)} (not graded by default)"))
    if not bad and not warn:
        out.append(Line("finite", "ok", f"the output is finite on every distribution ({', '.join(d for _, d, _, _ in plan)})"))
    return out


def _informative(task: Task, g: Grader, plan: list, truths: list, graded: set[str], atol: float,
                 rtol: float) -> list[Line]:
    zeros: list[str] = []
    constant: list[str] = []
    passes: dict[str, list[str]] = {}
    for (_, dist, kind, draw), t in zip(plan, truths):
        out = t.out
        finite = out[np.isfinite(out)]
        if finite.size and not finite.any():
            zeros.append(dist)
            continue
        if finite.size and float(finite.max()) == float(finite.min()):
            constant.append(dist)
            continue
        params = g.params(task, kind, draw)[1]
        facts = judging.trial_facts(task, out, t.x, params, atol, rtol)
        for pr in facts.predictors:
            # "n/a" is the judging's word for a predictor that *is* the reference: harmless for the ones that
            # drop something the output does not have, but an output that equals its own mean is trivial
            if pr.outcome == "passes" or (pr.outcome == "n/a" and _trivial(pr.name)):
                passes.setdefault(pr.name, []).append(dist)
    out_lines = []

    def verdict(ds: list[str]) -> Verdict:
        return "fail" if any(d in graded for d in ds) else "warn"

    if zeros:
        out_lines.append(Line("informative", verdict(zeros), f"the output is all zeros on {_dists_list(zeros)}: "
                                                            "returning zeros passes there, so that trial tests nothing"))
    if constant:
        out_lines.append(Line("informative", verdict(constant), f"the output is one constant on "
                                                                f"{_dists_list(constant)}: returning it passes there, "
                                                                "so that trial tests nothing"))
    for name, ds in passes.items():
        tol = f"(atol {atol:g}, rtol {rtol:g})"
        if TIMED_DIST in ds:
            out_lines.append(Line("informative", "fail", f"returning {_phrase(name)} passes under the tolerance {tol} "
                                                         f"on {_dists_list(ds)}, the timed inputs' distribution among "
                                                         "them: a kernel that computes only that is graded correct "
                                                         "and fast"))
        else:
            out_lines.append(Line("informative", "warn", f"returning {_phrase(name)} passes under the tolerance {tol} "
                                                         f"on {_dists_list(ds)}: those trials cannot tell it from the "
                                                         f"reference (the other distributions and the timed "
                                                         f"{TIMED_DIST} inputs can)"))
    if not out_lines:
        out_lines.append(Line("informative", "ok", f"zeros, a constant, the means along each axis and the other "
                                                   f"simple answers all fail under the tolerance (atol {atol:g}, "
                                                   f"rtol {rtol:g}) on every distribution"))
    return out_lines


def _deterministic(task: Task, g: Grader, plan: list, truths: list, atol: float, rtol: float,
                   timeout_s: float) -> Line:
    """The first two trials again, in fresh reference workers of a second grader with the same secret seed."""
    g2 = Grader(seed=g.seed)
    try:
        again = g2.references(task, plan[:2], timeout_s)
    except (RuntimeError, WorkerError, TaskFileError) as e:
        return Line("deterministic", "fail", f"the reference failed on a second run: {one_line(str(e))}")
    finally:
        g2.close()
    worst, beyond = 0.0, False
    for a, b in zip(truths[:2], again):
        with np.errstate(all="ignore"):
            if np.array_equal(a.out, b.out, equal_nan=True):
                continue
            d = np.abs(a.out.astype(np.float64) - b.out)
            worst = max(worst, float(np.nanmax(d)) if d.size else 0.0)
            beyond = beyond or not bool(np.allclose(b.out, a.out, atol=atol, rtol=rtol, equal_nan=True))
    if worst == 0.0:
        return Line("deterministic", "ok", "two runs in fresh workers give identical outputs")
    if beyond:
        return Line("deterministic", "fail", f"the reference is not deterministic: two runs on the same inputs differ "
                                             f"by up to {worst:.3g}, beyond the tolerance (an honest kernel fails "
                                             "against it at random)")
    return Line("deterministic", "warn", f"two runs on the same inputs differ by up to {worst:.3g} (within the "
                                         "tolerance)")


def _time(task: Task, g: Grader, mode: Any, timeout_s: float) -> Line:
    """Median of TIMED_CALLS calls of the reference in a stopped reference worker on the grader's core."""
    st = g.staging(task)
    w = Worker("reference", blas_threads=g.blas_threads, cpu=g.cpu, stopped=True)
    try:
        prepare(w, task, st, timeout_s, psets=(g.params(task, "default", -1)[0],))
        x = g.inputs(task, 10_000, "normal")
        specs = st.stage(task, 3, x)
        req = P.Call(f"ref:{task.name}", g.params(task, "default", -1)[0], specs, "readonly", "pool")
        times = []
        for i in range(TIMED_CALLS + 1):
            k = w.run(req, timeout_s, ("<f4", task.out_shape))
            if k.output is None:
                return Line("time", "fail", f"the reference failed: {P.error_of(k.reply, 'no output')}")
            if i:
                times.append(k.wall_ns / 1e9)
    except (WorkerError, RuntimeError) as e:
        return Line("time", "fail", f"timing the reference failed: {one_line(str(e))}")
    finally:
        w.close()
    t = float(np.median(times))
    tp = mode.timing
    calls = len(mode.dists) + 2 * tp.min_runs  # trials, then at least min_runs timed pairs
    text = f"the reference takes {_ms(t)} here (median of {TIMED_CALLS}, one BLAS thread)"
    if t * calls > mode.timeout_s:
        return Line("time", "fail", f"{text}: a hardened evaluation needs at least {calls} such calls, more than its "
                                    f"{mode.timeout_s:g} s time-out; make the shapes smaller")
    if t < FAST_REF_S:
        return Line("time", "warn", f"{text}: below {_ms(FAST_REF_S)} the grader's own round trip is a large share "
                                    "of every timed call (speedups blur); make the shapes larger")
    return Line("time", "ok", text)


def _ms(t: float) -> str:
    return f"{t * 1e3:.3g} ms" if t < 1 else f"{t:.3g} s"


def failed(lines: list[Line]) -> bool:
    return any(ln.verdict == "fail" for ln in lines)


def summary(lines: list[Line]) -> str:
    fails = [ln.check for ln in lines if ln.verdict == "fail"]
    if not fails:
        warns = sum(ln.verdict == "warn" for ln in lines)
        return "ready: a grader can judge candidates against this task" + (f" ({warns} warning(s))" if warns else "")
    if "load" in fails or "reference" in fails:
        return "broken: the task does not load or its reference does not run"
    gameable = {"informative"} & set(fails)
    kind = "gameable" if gameable and len(set(fails)) == 1 else "broken" if not gameable else "broken and gameable"
    return f"{kind}: {', '.join(dict.fromkeys(fails))} failed"

