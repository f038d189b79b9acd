"""Scores over many results: fast_p, fast_p@k (two estimators), the oracle, geometric-mean speedup.

fast_p (KernelBench §3.3) counts a candidate when it is correct *and* its speedup is strictly above p.
Here it is computed per task as the share of that task's candidates that qualify, then averaged over
tasks: the expected score of a "model" that submits one candidate per task drawn from the library.
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

P_VALUES: tuple[float, ...] = (0.0, 0.5, 1.0, 1.2, 2.0, 5.0, 10.0)
K_VALUES: tuple[int, ...] = (1, 2, 5, 10, 100)


def qualifies(correct: bool, speedup: float | None, p: float) -> bool:
    return bool(correct) and speedup is not None and speedup > p


def fast_p_per_task(outcomes: Mapping[str, Sequence[tuple[bool, float | None]]], p: float) -> dict[str, float]:
    """Share of each task's candidates (correct, speedup) that are correct with speedup > p."""
    return {t: (sum(qualifies(c, s, p) for c, s in rs) / len(rs)) for t, rs in outcomes.items() if rs}


def fast_p(outcomes: Mapping[str, Sequence[tuple[bool, float | None]]], p: float) -> float:
    q = fast_p_per_task(outcomes, p)
    return sum(q.values()) / len(q) if q else 0.0


def oracle_fast_p(outcomes: Mapping[str, Sequence[tuple[bool, float | None]]], p: float) -> float:
    """Share of tasks where *any* candidate qualifies (the best the library could do)."""
    ok = [any(qualifies(c, s, p) for c, s in rs) for rs in outcomes.values() if rs]
    return sum(ok) / len(ok) if ok else 0.0


def fast_p_at_k(q_per_task: Iterable[float], k: int) -> float:
    """Mean over tasks of 1 - (1 - q)^k: k draws with replacement, success if any qualifies."""
    qs = list(q_per_task)
    return sum(1.0 - (1.0 - q) ** k for q in qs) / len(qs) if qs else 0.0


def unbiased_at_k(n: int, c: int, k: int) -> float:
    """The HumanEval estimator 1 - C(n-c, k) / C(n, k) for n samples with c successes (no replacement)."""
    if n <= 0:
        return 0.0
    k = min(k, n)
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def geomean_speedup(speedups: Iterable[float]) -> float:
    """Geometric mean over the given (correct candidates') speedups; 0.0 when there are none."""
    logs = [math.log(s) for s in speedups if s and s > 0]
    return math.exp(sum(logs) / len(logs)) if logs else 0.0
