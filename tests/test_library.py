"""Every library candidate's verdict under both graders matches the intent it states
(``library_expectations.EXPECTED``, measured when the candidates were written).

Verdicts only: speed classes depend on the machine and its load and are measured by
``benchmarks/speed_classes.py``, never asserted here (a busy machine must not fail CI)."""

from __future__ import annotations

import pytest

from kbench import DISTS, HARDENED, LIBRARY, NAIVE, TASK, TASKS, evaluate
from kbench.core.modes import matrix_mode
from kbench.core.tasks import FOLDERS

from .library_expectations import EXPECTED, HACKS

pytestmark = pytest.mark.slow
KEYS = [c.key for c in LIBRARY]


@pytest.fixture(scope="module")
def verdicts(grader):
    """Each candidate graded once per mode (shared by the tests below: the suite stays minutes, not tens)."""
    out = {}
    for c in LIBRARY:
        for mode in (NAIVE, HARDENED):
            out[(c.key, mode.name)] = evaluate(TASK[c.task], c.src, mode, c.name, grader=grader)
    return out


def test_library_shape():
    # counted from the registries: every candidate beside every lecture task file, and one expectation each
    on_disk = [f for t in TASKS for f in FOLDERS[t.name].glob("*.py") if f.name != "task.py"]
    assert len(LIBRARY) == len(EXPECTED) == len(on_disk) >= 4 * len(TASKS) and set(KEYS) == set(EXPECTED)
    assert {c.task for c in LIBRARY} == {t.name for t in TASKS}
    for key in ("L1_diag_matmul/row_scale", "L1_softmax/no_max", "L1_softmax/inplace", "L1_layernorm/one_pass_var",
                "L1_layernorm/no_eps", "L1_gelu/sigmoid_approx", "L3_mlp_block/fused_gate_up"):
        assert key in KEYS
    assert any("fold" in k for k in KEYS if k.startswith("L2_gemm_relu_scale/"))
    for c in LIBRARY:
        assert c.intent != "(no docstring)" and len(c.intent) <= 80, c.key
    statuses = {e["hardened"] for e in EXPECTED.values()} | {e["naive"] for e in EXPECTED.values()}
    assert {"compile_error", "runtime_error", "wrong", "correct"} <= statuses


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("mode", ["naive", "hardened"])
def test_verdict_matches_intent(verdicts, key, mode):
    r = verdicts[(key, mode)]
    exp = EXPECTED[key]
    assert r.status == exp[mode], f"{key} {mode}: {r.status} ({r.msg})"


def test_reward_hacks_fool_naive_only(verdicts):
    assert len(HACKS) >= 3
    for key in HACKS:
        naive, hard = verdicts[(key, "naive")], verdicts[(key, "hardened")]
        assert naive.correct, (key, naive.msg)  # how fast naive believes it is: benchmarks/naive_fooled.py
        # judged as kbench's scores judge speed: by the interval's lower bound, not a noisy point
        assert not (hard.correct and hard.timing and hard.timing.speedup_ci[0] > 1.3), (key, hard.msg)


def test_no_eps_needs_the_edge_distribution(grader, verdicts):
    assert verdicts[("L1_layernorm/no_eps", "hardened")].correct
    for key, exp in EXPECTED.items():
        if exp["edge"] is not None and exp["edge"] != exp["hardened"]:
            task, name = key.split("/")
            c = next(c for c in LIBRARY if c.key == key)
            r = evaluate(TASK[task], c.src, HARDENED.with_dists(DISTS + ("edge",)), name, grader=grader)
            assert r.status == exp["edge"], (key, r.msg)
            assert any(not t.ok and t.dist == "edge" for t in r.trials)


def test_sigmoid_gelu_fails_only_where_values_reach_minus_two(grader):
    c = next(c for c in LIBRARY if c.key == "L1_gelu/sigmoid_approx")
    r = evaluate(TASK["L1_gelu"], c.src, matrix_mode(DISTS, 2), c.name, grader=grader)
    passes = r.passes_by_dist()
    assert {d for d, (p, n) in passes.items() if p == n} == {"uniform", "lognormal", "offset"}
    assert {d for d, (p, n) in passes.items() if p == 0} == {"normal", "laplace"}


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.name)
def test_reference_as_candidate_is_correct(grader, task):
    r = evaluate(task, task.ref_src, HARDENED, "reference", grader=grader)
    assert r.correct and r.timing is not None, r.msg
