"""The timing statistics on synthetic samples (never on wall-clock time)."""

from __future__ import annotations

import numpy as np
import pytest

from kbench.timing.stats import contains_one, pair_orders, should_stop, speedup_ci, speedup_point


def test_point_is_ratio_of_medians_and_means():
    assert speedup_point([4.0, 4.0, 100.0], [2.0, 2.0, 2.0]) == 2.0
    assert speedup_point([1.0, 3.0], [1.0, 1.0], "mean") == 2.0


def test_interval_covers_the_true_ratio_and_shrinks_with_samples():
    rng = np.random.default_rng(0)
    covered, widths = 0, {}
    for n in (10, 80):
        hits = 0
        for rep in range(40):
            drift = rng.normal(0, 0.05, n)  # drift shared by both arms of a pair
            ref = 2.0 * np.exp(drift + rng.normal(0, 0.02, n))
            cand = 1.0 * np.exp(drift + rng.normal(0, 0.02, n))
            lo, hi = speedup_ci(ref, cand, rng=np.random.default_rng(rep))
            hits += lo <= 2.0 <= hi
            widths.setdefault(n, []).append(hi - lo)
        covered += hits
        assert hits >= 33, (n, hits)  # ~95 % nominal
    assert covered >= 70, covered  # over both sample sizes: 80 intervals
    assert np.median(widths[80]) < np.median(widths[10]) / 1.5


def test_pairing_removes_shared_drift():
    rng = np.random.default_rng(1)
    drift = np.linspace(-0.3, 0.3, 40)
    ref = np.exp(drift + rng.normal(0, 0.01, 40))
    cand = np.exp(drift + rng.normal(0, 0.01, 40))
    paired = speedup_ci(ref, cand, paired=True)
    unpaired = speedup_ci(ref, cand, paired=False)
    assert (paired[1] - paired[0]) < (unpaired[1] - unpaired[0]) / 3
    assert contains_one(paired)


def test_stopping_rule():
    quiet_r, quiet_c = [2.0 + 1e-4 * i for i in range(6)], [1.0] * 6
    assert not should_stop(quiet_r[:4], quiet_c[:4], 0.0, 5, 60, 10.0, 0.02)  # below the minimum
    assert should_stop(quiet_r, quiet_c, 0.0, 5, 60, 10.0, 0.02)  # interval already tight
    rng = np.random.default_rng(2)
    noisy_r, noisy_c = list(rng.lognormal(0, 0.5, 8)), list(rng.lognormal(0, 0.5, 8))
    assert not should_stop(noisy_r, noisy_c, 0.1, 5, 60, 10.0, 0.02)
    assert should_stop(noisy_r, noisy_c, 11.0, 5, 60, 10.0, 0.02)  # budget spent
    assert should_stop(noisy_r * 8, noisy_c * 8, 0.1, 5, 60, 10.0, 0.02)  # max runs


def test_pair_order_is_a_fair_coin_and_endless():
    take = lambda it, n: [next(it) for _ in range(n)]  # noqa: E731
    orders = take(pair_orders(np.random.default_rng(3)), 2000)
    assert 900 < sum(orders) < 1100
    assert orders != take(pair_orders(np.random.default_rng(4)), 2000)
    assert all(take(pair_orders(np.random.default_rng(3), ref_first=True), 2000))


def test_check_pairs_never_exhaust_the_orders():
    """An undecided run goes to ``max_runs`` counted pairs with check pairs on top (a fixed list of
    ``max_runs`` orders raised StopIteration in CI on a loaded machine)."""
    import itertools

    from kbench.core.tasks import TASK
    from kbench.core.modes import TimingPolicy
    from kbench.timing import interleaved

    task = next(iter(TASK.values()))
    policy = TimingPolicy(method="interleaved", warmup=0, min_runs=5, max_runs=40, budget_s=1e9,
                          target_rel_ci=1e-9, statistic="median")
    noise = itertools.cycle([1.0, 3.0, 0.5, 2.0, 1.5])  # spread wide: never precise, never decided
    call = lambda x: interleaved.TimedCall(next(noise) * 1e-3, np.zeros(1, np.float32))  # noqa: E731
    clock = itertools.count()
    checks = []
    timing, _ = interleaved.measure(
        task, policy, ref_call=call, cand_call=call, next_input=lambda: None,
        check_timed=lambda c, r, i: checks.append(i), budget_s=1e9, rng=np.random.default_rng(0),
        emit=lambda *a: None, check_cancel=lambda: None, now=lambda: next(clock) * 1e-6, blas_threads=1,
        floor=False, check_input=lambda: None)
    assert timing.n_samples == 40 and timing.stop == "max_runs"
    assert len(checks) > 40  # check pairs came on top of the 40 counted ones


# ---------------------------------------------------------------- decisions, contention, honest intervals

from kbench.timing.stats import (EARLY_MIN_RUNS, contended, decided, honest_ci, ratio_median_ci, spread,  # noqa: E402
                                 stop_reason)


def _pairs(ratio: float, n: int, noise: float, seed: int) -> tuple[list[float], list[float]]:
    rng = np.random.default_rng(seed)
    drift = rng.normal(0, 0.03, n)
    cand = 0.005 * np.exp(drift + rng.normal(0, noise, n))
    ref = 0.005 * ratio * np.exp(drift + rng.normal(0, noise, n))
    return list(ref), list(cand)


def test_a_clear_40x_stops_after_a_few_pairs_and_a_near_one_keeps_sampling():
    ref, cand = _pairs(40.0, EARLY_MIN_RUNS, 0.03, 0)
    assert stop_reason(ref, cand, 0.1, 10, 80, 1.5, 0.002) == "decided"  # far from every threshold
    assert stop_reason(ref[:EARLY_MIN_RUNS - 1], cand[:EARLY_MIN_RUNS - 1], 0.1, 10, 80, 1.5, 0.002) is None
    ref, cand = _pairs(1.0, 20, 0.03, 1)
    assert stop_reason(ref, cand, 0.5, 10, 80, 1.5, 0.002) is None  # straddles 1.0, not precise, budget left
    assert stop_reason(ref, cand, 1.6, 10, 80, 1.5, 0.002) is None  # an undecided interval gets extra time
    assert stop_reason(ref, cand, 10.0, 10, 80, 1.5, 0.002) == "budget"
    assert stop_reason(ref, cand, 1.6, 10, 80, 1.5, 0.002, other_load=0.9) == "budget"  # contended: no extension
    assert stop_reason(ref * 4, cand * 4, 0.5, 10, 80, 1.5, 0.002) == "max_runs"


def test_a_clear_1_1x_stops_before_the_budget_and_precision_stops_too():
    ref, cand = _pairs(1.1, 12, 0.01, 2)
    assert stop_reason(ref, cand, 0.2, 10, 80, 1.5, 0.001) == "decided"
    quiet_r, quiet_c = [2.0 + 1e-4 * i for i in range(12)], [2.0] * 12
    assert stop_reason(quiet_r, quiet_c, 0.1, 10, 80, 1.5, 0.02) == "precise"  # A/A, tight


def test_decided_means_clear_of_every_threshold():
    assert decided((1.05, 1.15)) and decided((40.0, 44.0)) and decided((0.6, 0.9))
    assert not decided((0.98, 1.04)) and not decided((1.15, 1.25)) and not decided((1.0, 1.1))


def test_spread_and_contention():
    assert spread([1.0, 1.0, 1.0, 1.0]) == 0.0 and spread([1.0]) == 0.0
    quiet = [1.0 + 0.001 * i for i in range(20)]
    assert not contended(quiet, quiet)
    assert contended(quiet, quiet, other_load=0.9)  # another process kept most of a core busy
    rng = np.random.default_rng(3)
    bursty = list(np.where(rng.random(20) < 0.4, 2.0, 1.0))  # preempted calls take twice as long
    assert contended(quiet, bursty)


def test_ratio_median_ci_is_order_statistics():
    ref = [2.0 * (1 + 0.01 * i) for i in range(20)]
    lo, hi = ratio_median_ci(ref, [1.0] * 20)
    assert 2.0 <= lo < np.median(np.array(ref)) < hi <= 2.4
    assert ratio_median_ci([1.0], [1.0])[0] != ratio_median_ci([1.0], [1.0])[0]  # NaN: too few pairs


def test_under_load_the_interval_keeps_containing_the_truth():
    """A/A pairs where a busy neighbour preempts random calls of either arm (up to 3x) over slow shared
    phases: the plain bootstrap covers 1.0 less often than nominal; the contended interval, flagged, covers
    it in >= 95 % of experiments."""
    plain, hits, flagged = 0, 0, 0
    reps, n = 200, 8
    for rep in range(reps):
        rng = np.random.default_rng(100 + rep)
        base = 0.005 * np.exp(np.cumsum(rng.normal(0, 0.05, n)))
        ref = base * np.exp(rng.normal(0, 0.03, n)) * np.where(rng.random(n) < 0.3, rng.uniform(1.3, 3.0, n), 1.0)
        cand = base * np.exp(rng.normal(0, 0.03, n)) * np.where(rng.random(n) < 0.3, rng.uniform(1.3, 3.0, n), 1.0)
        lo, hi = speedup_ci(ref, cand, rng=np.random.default_rng(rep))
        plain += lo <= 1.0 <= hi
        (lo, hi), noisy = honest_ci(list(ref), list(cand), other_load=0.9, rng=np.random.default_rng(rep))
        hits += lo <= 1.0 <= hi
        flagged += noisy
    assert flagged == reps
    assert hits >= 0.95 * reps and hits > plain, (hits, plain)


def test_load_meter_sees_another_busy_process():
    import subprocess
    import sys

    from kbench.timing.load import LoadMeter

    meter = LoadMeter().start()
    subprocess.run([sys.executable, "-c", "import time\nt = time.time()\nwhile time.time() - t < 0.6: pass"],
                   check=True)
    assert meter.other_cores() > 0.2  # the child is not this process: it counts as someone else's load


def test_every_interval_keeps_the_run_to_run_floor():
    from kbench.timing.stats import RUN_TO_RUN, speedup_point, with_run_to_run

    assert with_run_to_run((1.0, 1.0), 1.0) == (1.0 / (1 + RUN_TO_RUN), 1.0 + RUN_TO_RUN)
    assert with_run_to_run((0.5, 3.0), 2.0) == (0.5, 3.0)  # already wider: unchanged
    lo, hi = with_run_to_run((1.9, 2.02), 2.0)
    assert lo == 1.9 and hi == 2.0 * (1 + RUN_TO_RUN)
    # 2 % faster with a tight within-run interval: within the floor, so it does not count as faster than 1x
    ref, cand = _pairs(1.02, 40, 0.002, 3)
    ci, _ = honest_ci(ref, cand)
    assert ci[0] > 1.0 and with_run_to_run(ci, speedup_point(ref, cand))[0] < 1.0
    # and the stopping rule does not call a kernel decided on the right side of 1.0 within the floor
    assert not decided(with_run_to_run((1.02, 1.03), 1.025))


def test_a_graded_speedup_reports_the_floor_in_both_modes():
    import kbench
    from kbench.timing.stats import RUN_TO_RUN

    for mode in (kbench.NAIVE, kbench.HARDENED):
        r = kbench.evaluate("L1_gelu", kbench.TASK["L1_gelu"].ref_src, mode, "reference")
        lo, hi = r.timing.speedup_ci
        assert lo <= r.speedup / (1 + RUN_TO_RUN) + 1e-12, (mode.name, lo, r.speedup)
        assert hi >= r.speedup * (1 + RUN_TO_RUN) - 1e-12, (mode.name, hi, r.speedup)


def test_every_check_distribution_comes_even_when_the_run_stops_early():
    """A 40x kernel is decided after a few pairs; the ``min_checks`` check pairs still come (at random places
    among the first pairs), so each distribution the caller cycles through is judged while timing."""
    import itertools

    from kbench.core.modes import TimingPolicy
    from kbench.core.tasks import TASK
    from kbench.timing import interleaved

    task = next(iter(TASK.values()))
    policy = TimingPolicy(method="interleaved", warmup=0, min_runs=10, max_runs=80, budget_s=1e9,
                          target_rel_ci=0.02, statistic="median")
    slow = lambda x: interleaved.TimedCall(40e-3, np.zeros(1, np.float32))  # noqa: E731
    fast = lambda x: interleaved.TimedCall(1e-3, np.zeros(1, np.float32))  # noqa: E731
    clock = itertools.count()
    for seed in range(20):
        checks: list[str] = []
        kinds = iter(itertools.cycle(["check"]))
        timing, _ = interleaved.measure(
            task, policy, ref_call=slow, cand_call=fast, next_input=lambda: "counted",
            check_timed=lambda c, r, i: None, budget_s=1e9, rng=np.random.default_rng(seed),
            emit=lambda *a: None, check_cancel=lambda: None, now=lambda: next(clock) * 1e-6, blas_threads=1,
            floor=False, check_input=lambda: checks.append(next(kinds)), min_checks=4)
        assert timing.stop == "decided" and timing.n_samples < policy.min_runs
        assert len(checks) >= 4, (seed, len(checks))


def test_without_early_decisions_only_precision_the_pair_limit_or_the_budget_stop():
    """``TimingPolicy.decide_early=False`` (accuracy benchmarks): a 40x interval clear of every threshold keeps
    sampling until it is tight; the mode's digest tells the two policies apart, and the default keeps its key."""
    from kbench.core.modes import HARDENED

    ref, cand = _pairs(40.0, 12, 0.03, 0)
    assert stop_reason(ref, cand, 0.1, 10, 80, 1.5, 0.002) == "decided"
    assert stop_reason(ref[:EARLY_MIN_RUNS], cand[:EARLY_MIN_RUNS], 0.1, 10, 80, 1.5, 0.002, points=()) is None
    assert stop_reason(ref, cand, 0.1, 10, 80, 1.5, 0.002, points=()) is None
    assert stop_reason(ref, cand, 10.0, 10, 80, 1.5, 0.002, points=()) == "budget"
    assert stop_reason(ref, cand, 0.1, 10, 80, 1.5, 0.5, points=()) == "precise"
    precise = HARDENED.with_timing(decide_early=False)
    assert precise.digest != HARDENED.digest
    assert HARDENED.with_timing(decide_early=True).digest == HARDENED.digest


def test_a_calls_floor_is_measured_in_place_and_subtracted_from_both_clocks():
    """``CallCost``: the empty calls' floor stands in until trusted calls report theirs; then the medians of
    (wall - inside) and (CPU - inside) are subtracted, and the larger clock decides."""
    from kbench.timing.interleaved import CallCost

    cost = CallCost((100_000, 80_000))
    assert cost.beyond() == (100_000, 80_000)
    assert cost.seconds(2_100_000, 1_500_000) == 2_000_000 / 1e9  # wall decides
    for wall, cpu in ((2_400_000, 2_300_000), (2_500_000, 2_350_000), (9_900_000, 2_320_000)):
        cost.add(wall, cpu, 2_000_000)
    assert cost.beyond() == (500_000, 320_000)  # medians: one slow wake-up does not move them
    assert cost.seconds(2_500_000, 2_320_000) == 2_000_000 / 1e9
    assert cost.seconds(2_500_000, 3_320_000) == 3_000_000 / 1e9  # work the wall missed is on the CPU clock
    assert cost.seconds(0, 0) == 1 / 1e9  # never zero or negative
    contended = CallCost((100_000, 80_000))
    for _ in range(3):  # preempted inside its call: its CPU time is below the time its worker held the request
        contended.add(2_300_000, 1_000_000, 2_000_000)
    assert contended.beyond() == (300_000, 80_000)  # the CPU floor never drops below the empty calls'


def test_both_arms_pay_the_same_floor_and_only_the_reference_is_refunded_its_loop():
    """Third 12-03 audit: a candidate's own minimal request loop read a 0.25 ms GELU 1.46-1.70x when each call was
    refunded the twin's whole loop, and a raw-descriptor loop still read 0.1 ms kernels 1.06-1.13x when the two
    arms were charged different ramps. Now both arms pay the same floor (what lies outside the worker's loop), the
    reference is refunded its own loop from its trusted stamps, and a candidate pays whatever its worker does:
    a loop that costs nothing reads its kernel, no less."""
    from kbench.timing.interleaved import CallCost

    cost = CallCost((200_000, 150_000))
    for _ in range(5):  # the twin: 5 ms kernels, 0.40 ms beyond them, of which 0.06 ms inside its loop
        cost.add(5_400_000, 5_300_000, 5_060_000)
    assert cost.beyond() == (340_000, 240_000)
    reference = cost.seconds(5_400_000, 5_300_000, own_loop_ns=60_000)
    lean = cost.seconds(5_340_000, 5_240_000)  # the same kernel behind a loop that costs nothing
    honest = cost.seconds(5_400_000, 5_300_000)  # the same kernel in kbench's loop: it pays that loop
    assert reference == lean == 5_000_000 / 1e9
    assert honest == 5_060_000 / 1e9
    # short calls: whatever the ramp charges, it charges both arms alike (by their walls, 13 us apart here, on a
    # ramp whose slope is 0.07), so its error cancels
    ref_short = cost.seconds(460_000, 420_000, own_loop_ns=13_000)
    lean_short = cost.seconds(447_000, 407_000)
    assert abs(ref_short - lean_short) < 0.1 * 13e-6, (ref_short, lean_short)
    walls = range(200_000, 20_000_000, 97_000)
    times = [cost.seconds(w, w // 2) for w in walls]
    assert all(b >= a for a, b in zip(times, times[1:]))  # no length of call buys a shorter time


def test_a_short_call_is_charged_what_short_calls_cost_not_the_long_references():
    """A short call does not pay a long reference call's cost (12-03 audit: a 0.12 ms candidate charged a 12 ms
    GEMM's cost read 150-520x for 92x): the charge ramps from the empty calls' cost to the in-place cost over
    the call's first COST_RAMP_NS, and lengthening a call never lowers its time."""
    from kbench.timing.interleaved import COST_RAMP_NS, CallCost

    cost = CallCost((300_000, 250_000))  # empty calls: 0.30 ms of wall beyond nothing
    for _ in range(5):
        cost.add(12_600_000, 12_400_000, 12_000_000)  # the reference: 12 ms kernels, 0.6 ms beyond
    assert cost.beyond() == (600_000, 400_000)
    assert cost.seconds(12_600_000, 12_400_000) == 12_000_000 / 1e9  # a long call: the in-place floor
    short = cost.seconds(420_000, 370_000)  # a 0.12 ms kernel with a short call's 0.30 ms around it
    assert 0.10e-3 < short < 0.12e-3, short  # charged a little more than an empty call, never the 0.6 ms
    assert cost.beyond(100_000) == (300_000, 250_000)
    assert cost.beyond(300_000 + COST_RAMP_NS) == (600_000, 400_000)  # past the ramp: the whole in-place cost
    walls = range(200_000, 20_000_000, 97_000)
    times = [cost.seconds(w, w // 2) for w in walls]
    assert all(b >= a for a, b in zip(times, times[1:]))  # no length of call buys a shorter time



def test_the_next_pair_is_announced_before_this_one_runs():
    """``upcoming`` is told, once each pair's input is placed, what the next pair will be; the next input the loop
    asks for is then of that kind (a check pair's or a counted pair's), warm-up pairs included. The grader draws
    that input on another core while the pair runs (``cores.Ahead``), so a wrong announcement would time a
    pair on an input drawn for the other kind."""
    import itertools

    from kbench.core.modes import TimingPolicy
    from kbench.core.tasks import TASK
    from kbench.timing import interleaved

    task = next(iter(TASK.values()))
    noise = itertools.cycle([1.0, 3.0, 0.5, 2.0, 1.5])
    call = lambda x: interleaved.TimedCall(next(noise) * 1e-3, np.zeros(1, np.float32))  # noqa: E731
    for seed, warmup in itertools.product(range(8), (0, 2)):
        policy = TimingPolicy(method="interleaved", warmup=warmup, min_runs=5, max_runs=30, budget_s=1e9,
                              target_rel_ci=1e-9, statistic="median")
        events: list[str] = []
        settled: list[int] = []
        clock = itertools.count()
        interleaved.measure(
            task, policy, ref_call=call, cand_call=call, next_input=lambda: events.append("counted"),
            check_timed=lambda c, r, i: events.append("judged"), budget_s=1e9, rng=np.random.default_rng(seed),
            emit=lambda *a: None, check_cancel=lambda: None, now=lambda: next(clock) * 1e-6, blas_threads=1,
            floor=False, check_input=lambda: events.append("check"), min_checks=2,
            upcoming=lambda is_check: events.append("next:check" if is_check else "next:counted"),
            settle=lambda: settled.append(len(events)))
        placed = [i for i, e in enumerate(events) if e in ("counted", "check")]
        assert len(placed) > 30 and settled == [len(events)]  # settled once, after the last judgement
        for a, b in zip(placed, placed[1:]):
            assert events[a + 1].startswith("next:"), events[a:a + 2]  # announced right after placing
            assert events[a + 1] == f"next:{events[b]}", (seed, warmup, a, events[a:b + 1])
        assert events.count("check") >= 2


def test_bootstrap_medians_by_sorted_rows_equal_numpys_median():
    from kbench.timing.stats import _row_medians

    rng = np.random.default_rng(7)
    for n in (1, 2, 3, 10, 41, 80):
        a = rng.normal(5e-3, 1e-3, size=(400, n))
        assert np.array_equal(_row_medians(a), np.median(a, axis=1))


# ---------------------------------------------------------------- each arm in several processes

def test_the_interval_contains_every_pairing_of_processes_speedup():
    """A process that runs the kernel slower for its whole life moves a one-process run's speedup and not its
    interval (an A/A read 0.90-0.94, every interval clear of 1.0): with each arm in two processes, the interval
    contains what each pairing measured, and the decision reads that interval."""
    from kbench.timing.stats import process_speedups, with_processes

    rng = np.random.default_rng(3)
    procs = [j % 2 for j in range(40)]
    # an A/A whose second reference process is 8 % slower and second candidate process 8 % faster: neither arm
    # spreads enough to look contended, the median reads ~1.08 and the run-to-run floor stops short of 1.0
    ref = [5e-3 * (1.08 if k else 1.0) * np.exp(rng.normal(0, 0.002)) for k in procs]
    cand = [5e-3 * (0.92 if k else 1.0) * np.exp(rng.normal(0, 0.002)) for k in procs]
    per = process_speedups(ref, cand, procs)  # every combination: ref i over cand j
    assert per == pytest.approx([1.0, 1 / 0.92, 1.08, 1.08 / 0.92], rel=0.01)
    # both processes of each arm slow together: the pairings agree, the combinations do not
    slow = [5e-3 * (1.2 if k else 1) for k in procs]
    assert process_speedups(slow, slow, procs)[0] == 1.0 and process_speedups(slow, slow, procs)[3] == 1.0
    both = process_speedups(slow, slow, procs)
    assert min(both) == pytest.approx(1 / 1.2, rel=0.01) and max(both) == pytest.approx(1.2, rel=0.01)
    lo, hi = with_processes((1.04, 1.06), per)
    assert lo == min(per) and hi == max(per)
    assert with_processes((0.5, 2.0), per) == (0.5, 2.0)  # never narrower
    assert process_speedups(ref, cand, None) == [] and process_speedups(ref, cand, [0] * 40) == []
    assert not contended(ref, cand)
    # not decided while the pairings read 1.00 and 1.17 (the bootstrap over pairs mostly sees it too: the median of
    # two clusters jumps between them as pairs are resampled); decided when every pairing is clear of 1.2
    assert stop_reason(ref, cand, 0.1, 10, 80, 1.5, 0.001, procs=procs) is None
    assert stop_reason([t * 3 for t in ref], cand, 0.1, 10, 80, 1.5, 0.001, procs=procs) == "decided"


def test_measure_takes_the_processes_in_turn_and_reports_each_pairing():
    """``use_process`` is called before each pair's input is placed; the counted pairs meet every process as
    often (``process_of``), each process gets its own warm-up, and the interval holds both pairings."""
    import itertools

    from kbench.core.modes import TimingPolicy
    from kbench.core.tasks import TASK
    from kbench.timing import interleaved

    task = next(iter(TASK.values()))
    policy = TimingPolicy(method="interleaved", warmup=2, min_runs=20, max_runs=20, budget_s=1e9,
                          target_rel_ci=1e-9, processes=2)
    current = [0]
    calls: list[tuple[str, int]] = []

    def call(arm: str, slow: float):  # noqa: ANN202
        def f(x):  # noqa: ANN001, ANN202
            calls.append((arm, current[0]))
            return interleaved.TimedCall(1e-3 * (slow if current[0] == 1 else 1.0), np.zeros(1, np.float32))
        return f

    clock = itertools.count()
    timing, _ = interleaved.measure(  # the second pairing reads 1.08 / 0.92 = 1.17, the first 1.0
        task, policy, ref_call=call("ref", 1.08), cand_call=call("cand", 0.92), next_input=lambda: None,
        check_timed=None, budget_s=1e9, rng=np.random.default_rng(0), emit=lambda *a: None,
        check_cancel=lambda: None, now=lambda: next(clock) * 1e-6, blas_threads=1, floor=False,
        use_process=lambda k: current.__setitem__(0, k))
    warm, counted = calls[:8], calls[8:]
    assert [k for arm, k in warm if arm == "cand"] == [0, 1, 0, 1]  # two warm-up pairs for each process
    assert [k for arm, k in counted if arm == "cand"] == [interleaved.process_of(j, 2) for j in range(20)]
    assert all(counted[i][1] == counted[i + 1][1] for i in range(0, len(counted), 2))  # a pair stays in one pairing
    lo, hi = timing.speedup_ci
    assert lo <= 1.0 + 1e-9 and hi >= 1.08 / 0.92 - 1e-9, timing.speedup_ci  # each combination's speedup inside
    assert [interleaved.process_of(j, 2) for j in range(8)] == [0, 1, 1, 0, 0, 1, 1, 0]


def test_a_timing_policy_validates_its_processes():
    import dataclasses
    from kbench.core.modes import HARDENED, MAX_PROCESSES, TimingPolicy

    for bad in (0, MAX_PROCESSES + 1, 1.5, True):
        with pytest.raises(ValueError, match="processes"):
            TimingPolicy(method="interleaved", warmup=0, min_runs=1, max_runs=2, budget_s=1.0, processes=bad)
    with pytest.raises(ValueError, match="processes"):
        TimingPolicy(method="blocked", warmup=0, min_runs=1, max_runs=2, budget_s=1.0, statistic="mean",
                     processes=2)
    assert HARDENED.timing is not None and HARDENED.timing.processes == 1  # the default (12-04 f, side by side)
    assert HARDENED.with_timing(processes=2).digest != HARDENED.digest
    with pytest.raises(ValueError, match="does not time"):
        dataclasses.replace(HARDENED, timing=None).with_timing(processes=2)
