"""Timing statistics: how a speedup and its interval are computed, and when sampling stops.

Method (hardened): reference and candidate run in pairs on fresh inputs, the order inside each pair
random, after a warm-up. Speedup = median(t_ref) / median(t_cand). Its 95 % interval comes from a
bootstrap over pairs (resampling whole pairs keeps the drift both arms share out of the interval).
Sampling stops when the interval's half-width is within ``target_rel_ci`` of the speedup, or at
``max_runs``, or when the time budget is spent (never before ``min_runs`` pairs).

Naive (KernelBench v0): blocked runs, mean; its interval is bootstrapped from each arm independently,
which is all blocked samples allow.

These functions see only numbers, so they are tested on synthetic samples, not on wall-clock time.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

N_BOOT = 400


def summary(samples: Sequence[float], statistic: str = "median") -> float:
    """The statistic a timing policy reports: median (hardened) or mean (KernelBench v0)."""
    return float(np.median(samples) if statistic == "median" else np.mean(samples))


def speedup_point(t_ref: Sequence[float], t_cand: Sequence[float], statistic: str = "median") -> float:
    c = summary(t_cand, statistic)
    return summary(t_ref, statistic) / c if c > 0 else float("inf")


def speedup_ci(t_ref: Sequence[float], t_cand: Sequence[float], paired: bool = True, statistic: str = "median",
               conf: float = 0.95, n_boot: int = N_BOOT,
               rng: np.random.Generator | None = None) -> tuple[float, float]:
    """Bootstrap percentile interval of the speedup statistic."""
    r = np.asarray(t_ref, dtype=np.float64)
    c = np.asarray(t_cand, dtype=np.float64)
    if len(r) < 2 or len(c) < 2:
        s = speedup_point(r, c, statistic) if len(r) and len(c) else float("nan")
        return (s, s)
    rng = rng or np.random.default_rng(0)
    f = np.median if statistic == "median" else np.mean
    if paired:
        n = min(len(r), len(c))
        idx = rng.integers(0, n, size=(n_boot, n))
        num, den = f(r[:n][idx], axis=1), f(c[:n][idx], axis=1)
    else:
        num = f(r[rng.integers(0, len(r), size=(n_boot, len(r)))], axis=1)
        den = f(c[rng.integers(0, len(c), size=(n_boot, len(c)))], axis=1)
    ratios = num / np.maximum(den, 1e-300)
    alpha = (1 - conf) / 2
    lo, hi = np.quantile(ratios, [alpha, 1 - alpha])
    return (float(lo), float(hi))


def should_stop(t_ref: Sequence[float], t_cand: Sequence[float], elapsed: float, min_runs: int, max_runs: int,
                budget_s: float, target_rel_ci: float, rng: np.random.Generator | None = None) -> bool:
    """The stopping rule for interleaved sampling."""
    n = min(len(t_ref), len(t_cand))
    if n < min_runs:
        return False
    if n >= max_runs or elapsed >= budget_s:
        return True
    lo, hi = speedup_ci(t_ref, t_cand, rng=rng)
    point = speedup_point(t_ref, t_cand)
    return (hi - lo) / 2 <= target_rel_ci * point


def pair_orders(rng: np.random.Generator, n: int) -> list[bool]:
    """For each pair, True when the reference runs first (fair coin, so neither arm owns first place)."""
    return [bool(b) for b in rng.integers(0, 2, size=n)]


def contains_one(ci: tuple[float, float]) -> bool:
    return ci[0] <= 1.0 <= ci[1]
