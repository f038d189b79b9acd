"""Hardened timing: reference and candidate in pairs on fresh inputs, random order inside each pair.

Method: after ``policy.warmup`` untimed pairs, pairs are sampled until ``stats.stop_reason`` says the
speedup's interval answers the question: tight, or clear of every fast_p threshold (a 40x kernel stops
after a few pairs), or the budget is spent (an undecided interval may use up to ``budget_cap_s``).
Speedup = median reference time / median candidate time, with a paired bootstrap interval, widened
(``stats.honest_ci``) and flagged ``contended`` when other processes used the machine (``load``) or the
samples spread widely. The candidate's worker is stopped (SIGSTOP) by the caller around every reference
call. The candidate's worker reports
its own kernel times; they are audited against the grader's round-trip clock (``audit_candidate_clock``)
and a time below the machine's roofline floor is rejected (``roofline.implausibility``).

This module sees callables, not workers: the grading pipeline supplies how one reference call and one
candidate call are made, how a fresh input is drawn and how a timed output is checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from kbench.core.modes import TimingPolicy
from kbench.core.results import Timing
from kbench.core.tasks import Task
from kbench.timing import roofline
from kbench.timing.load import LoadMeter
from kbench.timing.stats import (EARLY_MIN_RUNS, contains_one, honest_ci, pair_orders, speedup_point, stop_reason,
                                 with_run_to_run)

#: A gap between the candidate's reported kernel time and the grader's round trip this large (relative to the
#: reference worker's own round-trip overhead, or absolute, or relative to the kernel) means the candidate's
#: clock is not believed at all: the grader's clock is used instead.
CLOCK_DISTRUST_REL_OVERHEAD = 0.5
CLOCK_DISTRUST_ABS_S = 0.002
CLOCK_DISTRUST_REL_KERNEL = 0.5
#: A smaller gap above this is charged to the candidate (a worker clock can make it slower, never faster).
CLOCK_CHARGE_ABS_S = 0.0002
CLOCK_CHARGE_REL_KERNEL = 0.03


@dataclass(frozen=True)
class TimedCall:
    """One call as the timing step saw it: kernel seconds, the output, and round-trip time beyond the kernel."""

    seconds: float
    output: np.ndarray
    overhead: float


class TimingAborted(Exception):
    """The timing step ended the evaluation (a failing call, an implausible time, a wrong timed output)."""

    def __init__(self, status: str, msg: str) -> None:
        super().__init__(msg)
        self.status, self.msg = status, msg


Emit = Callable[[str, "bool | None"], None]


def audit_candidate_clock(cand_t: list[float], over_cand: list[float], over_ref: list[float],
                          emit: Emit) -> list[float]:
    """Candidate kernel times the grader believes, given the round-trip overheads both workers showed."""
    ref_over = float(np.median(over_ref))
    extra = float(np.median(over_cand)) - ref_over
    kernel = float(np.median(cand_t))
    if extra > max(CLOCK_DISTRUST_REL_OVERHEAD * ref_over, CLOCK_DISTRUST_ABS_S, CLOCK_DISTRUST_REL_KERNEL * kernel):
        # Not rejected (load alone can open such a gap): round trip minus the reference's own overhead.
        emit(f"the candidate's reported kernel times leave +{extra * 1e3:.2f} ms per call unaccounted for; "
             "using the grader's clock instead", False)
        return [max(t, t + o - ref_over) for t, o in zip(cand_t, over_cand)]
    # Charged under contention too: load makes the two round trips differ by noise, and charging it can
    # only make a candidate look slower; not charging it let a clock that under-reports by 30 % read 1.42x
    # [1.33-1.43] on a loaded machine (timer_patch_subtle, gate off).
    if extra > max(CLOCK_CHARGE_ABS_S, CLOCK_CHARGE_REL_KERNEL * kernel):
        return [t + extra for t in cand_t]
    return cand_t


def measure(task: Task, policy: TimingPolicy, *, ref_call: Callable[[dict], TimedCall],
            cand_call: Callable[[dict], TimedCall], next_input: Callable[[], dict],
            check_timed: Callable[[np.ndarray, np.ndarray, int], None] | None, budget_s: float,
            rng: np.random.Generator, emit: Emit, check_cancel: Callable[[], None], now: Callable[[], float],
            blas_threads: int | None, budget_cap_s: float | None = None, pids: Sequence[int] = (),
            prefill: Callable[[int], None] | None = None) -> tuple[Timing, float]:
    """Time ``task``'s reference against the candidate; (Timing, kernel seconds spent).

    ``budget_cap_s``: the most an undecided interval may take (default ``budget_s``: no extension).
    ``pids``: the timed workers, whose CPU use is not counted as other processes' load.
    ``prefill(n)``: draws n fresh inputs ahead, called before the first timed pair (between blocks)."""
    emit("timing: pairs on fresh inputs, random order in each pair, median; until the 95% interval is within "
         f"±{policy.target_rel_ci:.0%} or clear of every fast_p threshold, or {budget_s:g} s", None)

    def pair(x: dict, ref_first: bool) -> tuple[TimedCall, TimedCall]:
        if ref_first:
            r = ref_call(x)
            return r, cand_call(x)
        c = cand_call(x)
        return ref_call(x), c

    if prefill is not None:
        prefill(policy.warmup + EARLY_MIN_RUNS)
    for _ in range(policy.warmup):
        pair(next_input(), True)
    ref_t: list[float] = []
    cand_t: list[float] = []
    over_ref: list[float] = []
    over_cand: list[float] = []
    checked = 0
    orders = iter(pair_orders(rng, policy.max_runs))
    cap = budget_s if budget_cap_s is None else max(budget_s, budget_cap_s)
    meter = LoadMeter(pids).start()
    t0 = now()
    reason: str | None = None
    while True:
        if ref_t:
            reason = stop_reason(ref_t, cand_t, now() - t0, policy.min_runs, policy.max_runs, budget_s,
                                 policy.target_rel_ci, meter.other_cores(), rng=rng)
            if reason is None and now() - t0 >= cap:
                reason = "budget"
            if reason is not None:
                break
        check_cancel()
        r, c = pair(next_input(), next(orders))
        ref_t.append(r.seconds)
        cand_t.append(c.seconds)
        over_ref.append(r.overhead)
        over_cand.append(c.overhead)
        # Every timed output is judged (between pairs, never beside a timed call): with a secret sample, a
        # kernel skipping the work on half its calls escaped a quarter-share check 0.75^10 = 6 % of the time.
        if check_timed is not None:
            check_timed(c.output, r.output, len(cand_t))
            checked += 1
        if len(cand_t) % 5 == 0:
            emit(f"{len(cand_t)} pairs: reference {np.median(ref_t) * 1e3:.3f} ms, candidate "
                 f"{np.median(cand_t) * 1e3:.3f} ms", None)
    other = meter.other_cores()
    kernel_s = sum(ref_t) + sum(cand_t)
    cand_t = audit_candidate_clock(cand_t, over_cand, over_ref, emit)
    t_cand = float(np.median(cand_t))
    implausible = roofline.implausibility(task, t_cand)
    if implausible:
        emit(implausible, False)
        raise TimingAborted("rejected", implausible)
    s = speedup_point(ref_t, cand_t)
    ci, noisy = honest_ci(ref_t, cand_t, other, rng=rng)
    ci = with_run_to_run(ci, s)
    floor = roofline.get().floor_s(task.min_flops, task.min_bytes)
    timing = Timing(method="interleaved", t_ref=float(np.median(ref_t)), t_cand=t_cand, speedup=s, speedup_ci=ci,
                    n_samples=len(cand_t), noise=contains_one(ci), blas_threads=blas_threads,
                    achieved_gbs=task.min_bytes / t_cand / 1e9, achieved_gflops=task.min_flops / t_cand / 1e9,
                    roof_fraction=floor / t_cand, contended=noisy, other_load=round(other, 3), stop=reason,
                    ref_samples=ref_t, cand_samples=cand_t)
    why = {"precise": "the interval is tight", "decided": "the interval is clear of every threshold",
           "budget": "the time budget is spent", "max_runs": "the pair limit is reached"}.get(reason or "", "")
    emit(f"{len(cand_t)} pairs ({why}): reference {timing.t_ref * 1e3:.3f} ms, candidate "
         f"{timing.t_cand * 1e3:.3f} ms ({timing.roof_fraction:.0%} of the roof); {checked} timed outputs checked"
         + (f"; contended (others used {other:.1f} cores, or samples spread widely): interval widened" if noisy
            else ""), True)
    return timing, kernel_s
