"""Scores over many results: fast_p, fast_p@k (two estimators), the oracle, geometric-mean speedup.

fast_p (KernelBench §3.3) counts a candidate when it is correct *and* its speedup is strictly above p.
Here it is computed per task as the share of that task's candidates that qualify, then averaged over
tasks: the expected score of a "model" that submits one candidate per task drawn from the library.

Noise-aware counting (kbench's default): an outcome that carries its speedup's 95 % interval,
``(correct, speedup, low)``, counts as "> p" only when the interval's lower bound ``low`` is above p.
A 1.07x measured with the interval 1.00-1.15 is not evidence of being faster than the reference, so it
does not count toward fast_1. ``point=True`` gives the point-estimate score (KernelBench's arithmetic)
for display beside it. Outcomes without an interval, ``(correct, speedup)``, are counted by the point.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence, Union

if TYPE_CHECKING:
    from kbench.core.results import Result

P_VALUES: tuple[float, ...] = (0.0, 0.5, 1.0, 1.2, 2.0, 5.0, 10.0)
K_VALUES: tuple[int, ...] = (1, 2, 5, 10, 100)

#: (correct, speedup) or (correct, speedup, lower bound of its 95 % interval); None: not timed.
Outcome = Union[tuple[bool, "float | None"], tuple[bool, "float | None", "float | None"]]
Outcomes = Mapping[str, Sequence[Outcome]]


def outcome(result: "Result") -> tuple[bool, float | None, float | None]:
    """(correct, speedup, interval's lower bound) of one result, the unit every score below counts."""
    t = result.timing
    if t is None:
        return (result.correct, None, None)
    low = t.speedup_ci[0] if t.speedup_ci else None
    return (result.correct, t.speedup, low if low is not None and math.isfinite(low) else None)


def qualifies(correct: bool, speedup: float | None, p: float, low: float | None = None, point: bool = False) -> bool:
    """Correct and faster than p: by the interval's lower bound when there is one (unless ``point``)."""
    if not correct or speedup is None:
        return False
    if point or low is None:
        return speedup > p
    return low > p


def _q(o: Outcome, p: float, point: bool) -> bool:
    return qualifies(o[0], o[1], p, o[2] if len(o) > 2 else None, point)  # type: ignore[misc]


def fast_p_per_task(outcomes: Outcomes, p: float, point: bool = False) -> dict[str, float]:
    """Share of each task's candidates that are correct with speedup > p."""
    return {t: (sum(_q(o, p, point) for o in rs) / len(rs)) for t, rs in outcomes.items() if rs}


def fast_p(outcomes: Outcomes, p: float, point: bool = False) -> float:
    q = fast_p_per_task(outcomes, p, point)
    return sum(q.values()) / len(q) if q else 0.0


def oracle_fast_p(outcomes: Outcomes, p: float, point: bool = False) -> float:
    """Share of tasks where *any* candidate qualifies (the best the library could do)."""
    ok = [any(_q(o, p, point) for o in rs) for rs in outcomes.values() if rs]
    return sum(ok) / len(ok) if ok else 0.0


def fast_p_at_k(q_per_task: Iterable[float], k: int) -> float:
    """Mean over tasks of 1 - (1 - q)^k: k draws with replacement, success if any qualifies.

    ``q_per_task`` comes from ``fast_p_per_task`` (noise-aware or point, as chosen there)."""
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


# ------------------------------------------------------------------------------------------- display

def within_noise(ci: "tuple[float, float] | None") -> bool:
    """True when the interval contains 1.0: no measurable difference from the reference."""
    return ci is not None and ci[0] <= 1.0 <= ci[1]


def _num(s: float) -> str:
    return f"{s:.0f}" if s >= 100 else f"{s:.1f}" if s >= 10 else f"{s:.2f}"


def speedup_text(speedup: float | None, ci: "tuple[float, float] | None" = None, unit: str = "x") -> str:
    """How every face shows a speedup: ``13.2x [12.9-13.6]``; within noise ``≈1.0x [0.97-1.04]``.

    The point alone when there is no interval; an empty string when nothing was timed."""
    if speedup is None or not math.isfinite(speedup):
        return ""
    if ci is None or not all(math.isfinite(v) for v in ci):
        return f"{_num(speedup)}{unit}"
    band = f"[{_num(ci[0])}-{_num(ci[1])}]"
    if within_noise(ci):
        return f"≈1.0{unit} {band}"
    return f"{_num(speedup)}{unit} {band}"


def result_speedup_text(result: "Result", unit: str = "x") -> str:
    """``speedup_text`` of a result's timing (empty when it was not timed)."""
    t = result.timing
    return speedup_text(t.speedup, t.speedup_ci, unit) if t is not None else ""
