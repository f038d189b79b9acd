"""``kbench report``'s demos print numbers measured in the run (checked against a separate evaluation)."""

from __future__ import annotations

import re

import pytest

from kbench_cli import report

pytestmark = pytest.mark.slow


def _flat(text: str) -> str:
    """Rich wraps to the terminal's width inside boxes: join it back into one line."""
    return " ".join(text.replace("│", " ").split())


def test_demo1_states_the_measured_speedup_and_bandwidth():
    with report.console.capture() as cap:
        report.demo1()
    out = _flat(cap.get())
    m = re.search(r"speedup ([\d.]+)x \(95% CI ([\d.]+)-([\d.]+)\)", out)
    assert m, out
    s, lo, hi = map(float, m.groups())
    assert lo <= s <= hi and s > 3
    assert re.search(r"at ([\d.]+) GB/s, so memory bandwidth", out)
    assert "[dim]" not in out  # markup rendered, not printed


def test_demo4_matrix_shows_where_each_bug_fails():
    with report.console.capture() as cap:
        report.demo4(quick=True)
    out = _flat(cap.get())
    assert "L1_softmax/no_max fails on lognormal, offset" in out
    assert "L1_layernorm/no_eps fails on nothing" in out
    assert "L1_gelu/sigmoid_approx fails on normal, laplace" in out
