"""Noise-aware scores and the speedup display, on synthetic outcomes (no grading, no clock)."""

from __future__ import annotations

import pytest

from kbench.core.metrics import (fast_p, fast_p_at_k, fast_p_per_task, oracle_fast_p, outcome, qualifies,
                                 result_speedup_text, speedup_text, within_noise)
from kbench.core.results import Result, Timing


def _timed(speedup: float, ci: tuple[float, float], status: str = "correct") -> Result:
    t = Timing(method="interleaved", t_ref=1.0, t_cand=1.0 / speedup, speedup=speedup, speedup_ci=ci, n_samples=20,
               noise=ci[0] <= 1.0 <= ci[1])
    return Result("L1_gelu", "c", "hardened", ("normal",), status, "", timing=t)  # type: ignore[arg-type]


def test_a_win_inside_the_noise_does_not_count_but_its_point_does():
    # hack_cache_on_input as measured once: 1.07x with the interval 1.00-1.15
    assert not qualifies(True, 1.07, 1.0, low=1.00)
    assert qualifies(True, 1.07, 1.0, low=1.00, point=True)
    assert qualifies(True, 1.07, 1.0, low=1.01)
    assert not qualifies(False, 40.0, 1.0, low=39.0)  # wrong is never fast
    assert not qualifies(True, None, 0.0)  # correct but never timed
    assert qualifies(True, 1.5, 1.0)  # no interval: the point decides


def test_fast_p_oracle_and_at_k_count_the_lower_bound():
    outs = {
        "a": [(True, 1.07, 0.99), (True, 3.0, 2.8), (False, None, None)],
        "b": [(True, 1.3, 1.1), (True, 1.02, 0.97)],
    }
    assert fast_p(outs, 1.0) == pytest.approx((1 / 3 + 1 / 2) / 2)
    assert fast_p(outs, 1.0, point=True) == pytest.approx((2 / 3 + 2 / 2) / 2)
    assert fast_p(outs, 1.2) == pytest.approx((1 / 3 + 0) / 2)  # b's 1.3x is not clearly above 1.2
    assert fast_p(outs, 1.2, point=True) == pytest.approx((1 / 3 + 1 / 2) / 2)
    assert oracle_fast_p(outs, 1.2) == 0.5 and oracle_fast_p(outs, 1.2, point=True) == 1.0
    q = fast_p_per_task(outs, 1.0)
    qp = fast_p_per_task(outs, 1.0, point=True)
    assert fast_p_at_k(q.values(), 2) < fast_p_at_k(qp.values(), 2)
    assert fast_p(outs, 0.0) == fast_p(outs, 0.0, point=True)  # every bound is above 0


def test_outcome_of_a_result():
    assert outcome(_timed(1.07, (1.0, 1.15))) == (True, 1.07, 1.0)
    r = _timed(2.0, (1.9, 2.1), "wrong")
    assert outcome(r) == (False, 2.0, 1.9)
    untimed = Result("L1_gelu", "c", "hardened", ("normal",), "correct", "")
    assert outcome(untimed) == (True, None, None)


def test_speedup_text_says_within_noise():
    assert within_noise((0.97, 1.04)) and not within_noise((1.01, 1.2)) and not within_noise(None)
    assert speedup_text(1.003, (0.97, 1.04)) == "≈1.0x [0.97-1.04]"
    assert speedup_text(13.24, (12.91, 13.6)) == "13.2x [12.9-13.6]"
    assert speedup_text(0.71, (0.69, 0.73), "×") == "0.71× [0.69-0.73]"
    assert speedup_text(151.0, (140.0, 160.0)) == "151x [140-160]"
    assert speedup_text(2.0) == "2.00x" and speedup_text(None) == ""
    assert result_speedup_text(_timed(1.07, (1.0, 1.15))) == "≈1.0x [1.00-1.15]"
