"""``kbench report``: each demo's facts come from the run, and its sentences follow the facts.

Fact-level tests use synthetic results (fast, exact); two slow tests run demos for real and check the
printed numbers against each other."""

from __future__ import annotations

import re

import pytest

from kbench.core.results import Result, Timing
from kbench_cli import report


def _result(task: str, name: str, status: str = "correct", speedup: float | None = 2.0,
            ci: tuple[float, float] | None = None, t_ref: float = 0.1) -> Result:
    timing = None
    if speedup is not None:
        ci = ci or (speedup * 0.95, speedup * 1.05)
        timing = Timing(method="interleaved", t_ref=t_ref, t_cand=t_ref / speedup, speedup=speedup, speedup_ci=ci,
                        n_samples=20, noise=ci[0] <= 1 <= ci[1])
    return Result(task, name, "hardened", ("normal",), status, "msg", [], timing)  # type: ignore[arg-type]


def _flat(text: str) -> str:
    """Rich wraps to the terminal's width inside boxes: join it back into one line."""
    return " ".join(text.replace("│", " ").split())


def test_bandwidth_sentence_follows_the_measured_share_of_the_roof(monkeypatch: pytest.MonkeyPatch) -> None:
    r = _result("L1_diag_matmul", "row_scale", speedup=30.0, t_ref=0.1)
    f = report.anatomy_facts(r)
    assert f.cand_gbs == pytest.approx(f.moved_bytes / r.t_cand / 1e9)
    fast_roof = report.AnatomyFacts(**{**f.__dict__, "roof_gbs": f.cand_gbs / 0.9})
    slow_roof = report.AnatomyFacts(**{**f.__dict__, "roof_gbs": f.cand_gbs / 0.1})
    assert "memory bandwidth, not arithmetic, bounds it" in " ".join(report.anatomy_lines(fast_roof))
    assert "neither arithmetic nor bandwidth" in " ".join(report.anatomy_lines(slow_roof))
    assert "4096x less arithmetic" in " ".join(report.anatomy_lines(fast_roof))


def test_score_facts_name_what_only_naive_counts() -> None:
    res = {"naive": {}, "hardened": {}}
    for c in report.LIBRARY:
        res["naive"][(c.task, c.name)] = _result(c.task, c.name, speedup=0.5)
        res["hardened"][(c.task, c.name)] = _result(c.task, c.name, speedup=0.5)
    hack = ("L1_diag_matmul", "hack_cache_on_input")
    res["naive"][hack] = _result(*hack, speedup=300.0)
    res["hardened"][hack] = _result(*hack, speedup=1.03, ci=(0.98, 1.08))  # within noise: not counted
    f = report.score_facts(res)
    assert f.only_naive == ["L1_diag_matmul/hack_cache_on_input"]
    assert f.naive_f1 > f.f1 == 0.0 and f.f1_point > 0  # counted by its point estimate only
    assert "it counts L1_diag_matmul/hack_cache_on_input" in report.score_lines(f)[0]
    assert len(f.dead) == len(report.TASKS)


def test_testing_facts_report_mixed_results_when_there_are_some() -> None:
    cells = {"a/x": {"normal": (5, 5), "offset": (0, 5)}, "b/y": {"normal": (5, 5), "offset": (5, 5)}}
    f = report.testing_facts(cells, {"all_wrong": 3, "all_right": 20, "partial": 2})
    assert f.fails == {"a/x": ["offset"], "b/y": []}
    text = " ".join(report.testing_lines(f))
    assert "1 of 2 candidates pass on some distributions" in text and "2 got mixed results" in text
    f = report.testing_facts(cells, {"all_wrong": 3, "all_right": 20, "partial": 0})
    assert "changed no verdict" in " ".join(report.testing_lines(f))


@pytest.mark.slow
def test_demo1_states_the_measured_speedup_and_bandwidth():
    with report.console.capture() as cap:
        report.demo1()
    out = _flat(cap.get())
    m = re.search(r"reference ([\d.]+) ms, candidate ([\d.]+) ms, speedup ([\d.]+)x \(95% CI ([\d.]+)-([\d.]+)\)", out)
    assert m, out
    t_ref, t_cand, s, lo, hi = map(float, m.groups())
    assert lo <= s <= hi and s == pytest.approx(t_ref / t_cand, rel=0.05)
    gbs = float(re.search(r"at ([\d.]+) GB/s", out).group(1))
    assert gbs == pytest.approx(report.TASK["L1_diag_matmul"].min_bytes / (t_cand / 1e3) / 1e9, rel=0.05)
    assert "[dim]" not in out  # markup rendered, not printed


@pytest.mark.slow
def test_demo4_matrix_shows_where_each_bug_fails():
    with report.console.capture() as cap:
        report.demo4(quick=True)
    out = _flat(cap.get())
    # hardened's trials: every distribution carries a few logits beyond exp's range (structured._hazards)
    assert "L1_softmax/no_max fails on normal, uniform, laplace, lognormal, offset" in out
    assert "L1_layernorm/no_eps fails on nothing" in out
    assert "L1_gelu/sigmoid_approx fails on normal, laplace" in out
