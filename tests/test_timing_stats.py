"""The timing statistics on synthetic samples (never on wall-clock time)."""

from __future__ import annotations

import numpy as np

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


def test_pair_order_is_a_fair_coin():
    orders = pair_orders(np.random.default_rng(3), 2000)
    assert 900 < sum(orders) < 1100
    assert orders != pair_orders(np.random.default_rng(4), 2000)
