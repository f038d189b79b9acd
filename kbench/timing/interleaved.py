"""Hardened timing: reference and candidate in pairs on fresh inputs, random order inside each pair.

Method: after ``policy.warmup`` untimed pairs, pairs are sampled until ``stats.stop_reason`` says the
speedup's interval answers the question: tight, or clear of every fast_p threshold (a 40x kernel stops
after a few pairs), or the budget is spent (an undecided interval may use up to ``budget_cap_s``).
Speedup = median reference time / median candidate time, with a paired bootstrap interval, widened
(``stats.honest_ci``) and flagged ``contended`` when other processes used the machine (``load``) or the
samples spread widely. With ``policy.processes`` > 1 each arm runs in that many processes, the k-th of each
arm together, taken in turn pair by pair (warm-up pairs too: each process gets ``policy.warmup`` of them), and
the interval also contains the speedup of every combination of processes (``stats.with_processes``). The
caller times each call with the grader's own clocks (``kbench.sandbox.server``)
and keeps the candidate's worker stopped outside its calls; a time below the machine's roofline floor is
rejected (``roofline.implausibility``).

This module sees callables, not workers: the grading pipeline supplies how one reference call and one
candidate call are made, how a fresh input is drawn and how a timed output is checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from kbench.core.modes import TimingPolicy
from kbench.core.results import Timing
from kbench.core.tasks import Task
from kbench.timing import roofline, wakeups
from kbench.timing.load import LoadMeter
from kbench.timing.stats import (DECISION_POINTS, EARLY_MIN_RUNS, contains_one, honest_ci, pair_orders,
                                 process_speedups, reported_interval, speedup_point, stop_reason)

@dataclass(frozen=True)
class TimedCall:
    """One call as the timing step saw it: its seconds (by the clock the mode trusts) and the output."""

    seconds: float
    output: np.ndarray


#: A call this much longer than an empty one pays the reference's whole in-place cost (``CallCost``).
COST_RAMP_NS = 2_000_000


class _Charge:
    """One charge: what empty calls cost beyond their work (``before``), and what calls in place cost (medians),
    ramped between the two by a call's length (see ``CallCost``)."""

    def __init__(self, before: tuple[int, int]) -> None:
        self.before = before
        self.walls: list[int] = []
        self.cpus: list[int] = []

    def add(self, wall_ns: int, cpu_ns: int) -> None:
        self.walls.append(wall_ns)
        self.cpus.append(cpu_ns)

    def beyond(self, wall_ns: float | None) -> tuple[float, float]:
        short_wall, short_cpu = float(self.before[0]), float(self.before[1])
        if not self.walls:
            return short_wall, short_cpu
        # Never less than the empty calls' cost: a call after a gap and a kernel only costs more. On a contended
        # core a reference's reported kernel (wall time inside the worker) exceeds its CPU time, and CPU minus it
        # would go negative and add time to every call.
        long_wall = max(float(np.median(self.walls)), short_wall)
        long_cpu = max(float(np.median(self.cpus)), short_cpu)
        if wall_ns is None:
            return long_wall, long_cpu
        # the slope (long - short) / COST_RAMP_NS stays below 1 unless a call costs 2 ms more than an empty one
        f = min(max((wall_ns - short_wall) / COST_RAMP_NS, 0.0), 1.0)
        return short_wall + f * (long_wall - short_wall), short_cpu + f * (long_cpu - short_cpu)


class CallCost:
    """What a timed call costs beyond the work inside the worker, wall and CPU, by the grader's clocks; ``seconds``
    subtracts it.

    Both arms are charged the same **floor**: the round trip outside the worker's loop (the grader's send and the
    wake-up, the system calls, the reply's way back and the stop: wall or CPU less the time between the worker's
    ``recv_ns`` and ``sent_ns``, stamped around its raw reads and writes), measured on the reference's twin only
    (it runs only the grader's code, so its stamps are trusted), which any loop pays, however lean. The reference
    arm is also refunded its own loop around the kernel (its stamps less its kernel: trusted, per call); the
    candidate pays whatever its worker does between request and reply. So a loop leaner than kbench's buys
    nothing (third 12-03 audit: refunded the twin's whole loop, a minimal loop read a 0.25 ms GELU 1.46-1.70x for
    1.0x; then refunded the floor alone, with the reference charged a different ramp, a raw-descriptor loop still
    read 0.1 ms kernels 1.06-1.13x), and the same charge on both arms cancels its own error. Timed calls are
    prepared (``protocol.Prepare``) so that kbench's own loop costs an honest candidate little (README, Threat
    model).

    The floor is measured twice: ``before``, on empty calls made back to back before the pairs; in place, on each
    reference call first in its pair (medians). None follows a candidate's call (whose code could leave the core in
    a state that makes the next call cost more, and so every call look cheaper). The in-place floor is the larger:
    a call after the gap between pairs, with a real kernel's memory traffic, pays more than calls made back to back.
    A short call does not pay it all (12-03 audit: an empty call or a 1.4 ms pure-Python spin cost 0.29-0.45 ms of
    wall after the gap, a 10-12 ms GEMM 0.49-0.65 ms), so a call's charge rises with its wall time from the empty
    calls' floor to the in-place floor over its first ``COST_RAMP_NS`` beyond an empty call; it rises more slowly
    than the wall, so a candidate cannot lower its time by lengthening its calls."""

    def __init__(self, before: tuple[int, int]) -> None:
        self.floor = _Charge(before)

    def add(self, wall_ns: int, cpu_ns: int, inside_ns: int) -> None:
        """A trusted call (the twin's): its clocks and the time its worker held the request (``sent_ns -
        recv_ns``)."""
        self.floor.add(wall_ns - inside_ns, cpu_ns - inside_ns)

    def beyond(self, wall_ns: float | None = None) -> tuple[float, float]:
        """(wall, CPU) ns a call of ``wall_ns`` costs outside the worker's loop (None: a call past the ramp)."""
        return self.floor.beyond(wall_ns)

    def seconds(self, wall_ns: int, cpu_ns: int, own_loop_ns: int = 0) -> float:
        """A call's time: the larger of its wall and CPU time less the floor of a call of its length (a kernel
        cannot hide work from both clocks), less ``own_loop_ns``, the loop around the kernel of a trusted worker
        (the reference's: its stamps less its kernel; a candidate pays its own)."""
        wall, cpu = self.beyond(wall_ns)
        return max(wall_ns - wall - own_loop_ns, cpu_ns - cpu - own_loop_ns, 1.0) / 1e9


class TimingAborted(Exception):
    """The timing step ended the evaluation (a failing call, an implausible time, a wrong timed output)."""

    def __init__(self, status: str, msg: str) -> None:
        super().__init__(msg)
        self.status, self.msg = status, msg


Emit = Callable[[str, "bool | None"], None]

#: The share of timing pairs that are check pairs (another distribution, judged, not counted): speed is the
#: speed on the task's timing distribution, while every distribution's outputs are checked while timing.
CHECK_SHARE = 0.25


def measure(task: Task, policy: TimingPolicy, *, ref_call: Callable[[Any], TimedCall],
            cand_call: Callable[[Any], TimedCall], next_input: Callable[[], Any],
            check_timed: Callable[[np.ndarray, np.ndarray, str], None] | None, budget_s: float,
            rng: np.random.Generator, emit: Emit, check_cancel: Callable[[], None], now: Callable[[], float],
            blas_threads: int | None, budget_cap_s: float | None = None, pids: Sequence[int] = (),
            floor: bool = True, on_implausible: Callable[[str], None] | None = None,
            ref_first: bool = False, check_input: Callable[[], Any] | None = None,
            min_checks: int = 0, upcoming: Callable[[bool], None] | None = None,
            settle: Callable[[], None] | None = None,
            use_process: Callable[[int], None] | None = None) -> tuple[Timing, float]:
    """Time ``task``'s reference against the candidate; (Timing, kernel seconds spent).

    ``next_input()`` prepares the next pair's input (between pairs, while neither worker runs) and returns
    what the two calls take. ``budget_cap_s``: the most an undecided interval may take (default
    ``budget_s``: no extension). ``pids``: the timed workers, whose CPU use is not counted as other
    processes' load. ``floor``: a candidate time below a quarter of the roofline floor is implausible: it
    aborts the timing, or is passed to ``on_implausible`` (which records it) and the timing is returned.
    ``check_input()``: an input of another distribution for uncounted, judged pairs mixed in at random
    (``CHECK_SHARE`` of them); ``min_checks`` of them come for sure, at random places among the first
    ``EARLY_MIN_RUNS + min_checks`` pairs (the caller cycles its distributions, so each is checked while timing
    even when the run stops early: at random alone, a kernel wrong on two distributions of four escaped a
    10-pair run 26 % of the time). ``ref_first``: the reference first in every pair (a grader whose allocator
    the two share, as KernelBench's, runs it first), instead of a random order. ``upcoming(is_check)``: called
    once a pair's input is placed, with what the next pair will be (a check pair or a counted one), decided one
    pair ahead so that its input can be drawn while this pair runs; ``settle()``, after the last pair: waits for
    judgements ``check_timed`` left running. ``use_process(k)``: with ``policy.processes`` > 1, called before each
    pair's input is placed: the pair's two calls run in each arm's k-th process (counted pairs take the processes in
    turn, check pairs one at random)."""
    emit("timing: pairs on fresh inputs, random order in each pair, median; until the 95% interval is within "
         f"±{policy.target_rel_ci:.0%} or clear of every fast_p threshold, or {budget_s:g} s; {wakeups.state()}", None)

    def pair(x: Any, ref_first: bool) -> tuple[TimedCall, TimedCall]:
        if ref_first:
            r = ref_call(x)
            return r, cand_call(x)
        c = cand_call(x)
        return ref_call(x), c

    n_proc = policy.processes if use_process is not None else 1
    procs: list[int] = []  # the pairing of processes each counted pair ran in

    def go_to(k: int) -> int:
        if use_process is not None:
            use_process(k)
        return k

    def placed(x: Any, next_is_check: bool) -> Any:
        if upcoming is not None:
            upcoming(next_is_check)
        return x

    ref_t: list[float] = []
    cand_t: list[float] = []
    checked = 0
    kernel_extra = 0.0
    orders = pair_orders(rng, ref_first)
    cap = budget_s if budget_cap_s is None else max(budget_s, budget_cap_s)
    span = EARLY_MIN_RUNS + min_checks if check_input is not None and check_timed is not None else 0
    forced = set(rng.choice(span, size=min_checks, replace=False).tolist()) if span and min_checks else set()

    def is_check(i: int) -> bool:
        return bool(i in forced or (span and i >= span and rng.random() < CHECK_SHARE))

    # whether each pair is a check pair, decided one pair ahead (``upcoming``)
    first = is_check(0)
    n_warm = policy.warmup * n_proc
    for k in range(n_warm):
        go_to(k % n_proc)
        r, c = pair(placed(next_input(), first if k == n_warm - 1 else False), True)
        # judged too (12-03 audit: zeros on the 6th and 7th calls, the warm-up's, passed "every timed output
        # checked"): not timed, but a call the candidate cannot tell from a timed one is a call that must be right
        if check_timed is not None:
            check_timed(c.output, r.output, f"warm-up call {k + 1}")
    meter = LoadMeter(pids).start()
    t0 = now()
    reason: str | None = None
    next_is_check = first
    i = -1  # pairs so far, counted and check
    while True:
        i += 1
        if ref_t and i > max(forced, default=-1):
            reason = stop_reason(ref_t, cand_t, now() - t0, policy.min_runs, policy.max_runs, budget_s,
                                 policy.target_rel_ci, meter.other_cores(), rng=rng,
                                 points=DECISION_POINTS if policy.decide_early else (), procs=procs)
            if reason is None and now() - t0 >= cap:
                reason = "budget"
            if reason is not None:
                break
        check_cancel()
        this_is_check, next_is_check = next_is_check, is_check(i + 1)
        if this_is_check:
            # A pair on another distribution, judged and not counted: the candidate cannot tell it from a counted
            # one (same slot, same calls), so a path that is fast and wrong on any distribution is caught here.
            assert check_input is not None and check_timed is not None
            go_to(int(rng.integers(n_proc)) if n_proc > 1 else 0)
            r, c = pair(placed(check_input(), next_is_check), next(orders))
            check_timed(c.output, r.output, f"check call {checked + 1}")
            checked += 1
            kernel_extra += r.seconds + c.seconds
            continue
        procs.append(go_to(process_of(len(cand_t), n_proc)))
        r, c = pair(placed(next_input(), next_is_check), next(orders))
        ref_t.append(r.seconds)
        cand_t.append(c.seconds)
        # Every timed output is judged (by the caller, perhaps on another core while the next pair runs): with a
        # secret sample, a kernel skipping the work on half its calls escaped a quarter-share check 0.75^10 = 6 %
        # of the time.
        if check_timed is not None:
            check_timed(c.output, r.output, f"timed call {len(cand_t)}")
            checked += 1
        if len(cand_t) % 5 == 0:
            emit(f"{len(cand_t)} pairs: reference {np.median(ref_t) * 1e3:.3f} ms, candidate "
                 f"{np.median(cand_t) * 1e3:.3f} ms", None)
    if settle is not None:
        settle()
    other = meter.other_cores()
    kernel_s = sum(ref_t) + sum(cand_t) + kernel_extra
    timing = summarize(task, ref_t, cand_t, other, reason, rng, blas_threads, procs)
    implausible = roofline.implausibility(task, timing.t_cand, cand_t) if floor else None
    if implausible:
        emit(implausible, False)
        if on_implausible is None:
            raise TimingAborted("rejected", implausible)
        on_implausible(implausible)
    why = {"precise": "the interval is tight", "decided": "the interval is clear of every threshold",
           "budget": "the time budget is spent", "max_runs": "the pair limit is reached"}.get(reason or "", "")
    per_proc = process_speedups(ref_t, cand_t, procs)
    emit(f"{len(cand_t)} pairs ({why}): reference {timing.t_ref * 1e3:.3f} ms, candidate "
         f"{timing.t_cand * 1e3:.3f} ms ({timing.roof_fraction:.0%} of the roof); {checked} timed outputs checked"
         + (f"; each arm in {n_proc} processes, whose combinations read " + ", ".join(f"{v:.2f}x" for v in per_proc)
            if per_proc else "")
         + (f"; contended (others used {other:.1f} cores, or samples spread widely): interval widened"
            if timing.contended else ""), True)
    return timing, kernel_s


def process_of(j: int, n: int) -> int:
    """The pairing of processes the ``j``-th counted pair runs in: each in turn, shifted by one every round
    (0 1 1 0 0 1 1 0 for two), so that a cycle of as many parameter sets as processes meets every pairing."""
    return (j + j // n) % n


def summarize(task: Task, ref_t: list[float], cand_t: list[float], other: float, reason: str | None,
              rng: np.random.Generator, blas_threads: int | None, procs: Sequence[int] | None = None) -> Timing:
    """The Timing of paired samples: ratio of medians, the honest interval widened as ``stats.reported_interval``
    says (``procs``: the pairing of processes each pair ran in)."""
    t_cand = float(np.median(cand_t))
    s = speedup_point(ref_t, cand_t)
    ci, noisy = honest_ci(ref_t, cand_t, other, rng=rng)
    ci = reported_interval(ci, s, ref_t, cand_t, procs)
    floor = roofline.get().floor_s(task.min_flops, task.min_bytes)
    return Timing(method="interleaved", t_ref=float(np.median(ref_t)), t_cand=t_cand, speedup=s, speedup_ci=ci,
                  n_samples=len(cand_t), noise=contains_one(ci), blas_threads=blas_threads,
                  achieved_gbs=task.min_bytes / t_cand / 1e9, achieved_gflops=task.min_flops / t_cand / 1e9,
                  roof_fraction=floor / t_cand, contended=noisy, other_load=round(other, 3), stop=reason,
                  ref_samples=list(ref_t), cand_samples=list(cand_t))
