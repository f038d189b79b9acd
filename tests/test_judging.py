"""Judging: the per-row tolerance, the checks every Comparison records, the per-trial facts (centred
checks, properties, predictors), and the honest kernels that must stay correct."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import kbench
from kbench import DISTS, HARDENED, TASK, TASKS, check_output, compare
from kbench.core import judging
from kbench.core.compare import row_atol


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)


def test_tolerance_is_never_looser_than_atol_and_scales_per_row():
    rng = np.random.default_rng(0)
    ref = rng.standard_normal((64, 256)).astype(np.float32)
    ref[:8] *= 1e-3  # small rows
    ref[8:16] *= 1e3  # large rows: still atol, never rtol * max
    tol = row_atol(ref, 1e-2, 1e-2)
    assert tol.shape == (64, 1) and float(tol.max()) <= 1e-2
    assert np.allclose(tol[16:], 1e-2) and np.allclose(tol[8:16], 1e-2)
    assert float(tol[:8].max()) < 1e-4  # 4 % of a small row's RMS
    # a large row elsewhere does not loosen a small one: its zeros still fail
    out = ref.copy()
    out[:8] = 0
    c = compare(out, ref)
    assert not c.ok and c.failed() == ("close",) and "degenerate output scale" in c.message


def test_softmax_that_drops_small_probabilities_fails():
    """The issue-17 case: zeroing every probability below 0.9 % of the row max passed the global-max rule."""
    z = np.random.default_rng(1).standard_normal((2048, 1024)).astype(np.float32) * 3
    ref = _softmax(z)
    cheat = ref.copy()
    cheat[cheat < 0.009 * cheat.max(axis=-1, keepdims=True)] = 0
    assert not compare(cheat, ref).ok
    assert compare(ref * np.float32(1 + 1e-5), ref).ok


def test_kernelbench_165_zero_outputs_stay_caught():
    z = np.random.default_rng(2).uniform(-1, 1, (2048, 1024)).astype(np.float32)
    ref = _softmax(z)
    assert check_output(np.zeros_like(ref), ref, False)[0]  # naive: zeros pass atol = 1e-2
    for fake in (np.zeros_like(ref), np.full_like(ref, 1.0 / 1024)):
        ok, msg = check_output(fake, ref, True)
        assert not ok and "degenerate output scale" in msg
    relu = np.maximum(np.random.default_rng(3).standard_normal((512, 512)), 0).astype(np.float32) * 1e-3
    assert not compare(np.zeros_like(relu), relu).ok  # a small ReLU output is not loosened to its global max


def test_every_check_is_recorded_not_only_the_first_failure():
    ref = np.ones((4, 3), np.float32)
    c = compare(ref.copy(), ref)
    assert [ch.name for ch in c.checks] == ["type", "shape", "dtype", "finite", "close"] and c.ok
    bad = ref.copy()
    bad[1, 1] = np.nan
    c = compare(bad, ref)
    assert c.failed() == ("finite", "close") and c.message.startswith("NaN at [1, 1]")
    c = compare(np.ones(3, np.float32), ref)
    assert c.failed() == ("shape",) and [ch.ok for ch in c.checks] == [True, False, None, None, None]
    assert not c.ok_without() and c.ok_without("shape", "dtype", "finite", "close")
    # a judged trial adds its centred checks and properties to the same list
    t = TASK["L1_softmax"]
    z = t.for_trials().make_inputs(np.random.default_rng(4), "normal")["x"]
    ref = _softmax(z)
    facts = judging.trial_facts(t, ref, {"x": z}, {})
    lost = ref * np.float32(0.97)
    c = judging.judge(lost, ref, facts, {"x": z}, {})
    assert "rows_sum_to_one" in c.failed() and {ch.name for ch in c.checks} >= {"close", "nonnegative", "rows_sum_to_one"}
    assert c.ok_without(*c.failed()) and not c.ok_without("close")


def test_offset_trials_are_judged_on_their_centred_output():
    """A constant-dominated output (GELU of 1000 + N): the plain check allows +-10, the centred one judges the
    deviations; the row mean alone passes the first and fails the second."""
    t = TASK["L1_gelu"]
    x = t.make_inputs(np.random.default_rng(5), "offset")
    ref = t.ref_fn()(x, {}, None)
    facts = judging.trial_facts(t, ref, x, {})
    assert facts.centred and dict((p.name, p.outcome) for p in facts.predictors)["mean along axis 1"] == "ruled out"
    flat = np.broadcast_to(ref.mean(axis=1, keepdims=True), ref.shape).astype(np.float32)
    assert compare(flat, ref).ok  # what the issue found: the constant part passes rtol = 1e-2
    c = judging.judge(flat, ref, facts, x, {})
    assert not c.ok and any(n.startswith("centred:") for n in c.failed())
    assert judging.judge(ref.copy(), ref, facts, x, {}).ok


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.name)
def test_every_structured_trial_rules_out_the_simple_predictors(task):
    """On the grader's trial inputs each predictor is ruled out or n/a (it drops nothing the tolerance can
    see on that trial, or it is the reference); the offset attention trial, where every query attends to
    one key, is the one known exception for predictors that copy queries."""
    f = task.ref_fn()
    for i, dist in enumerate(DISTS):
        rng = np.random.default_rng([21, i])
        x = task.for_trials().make_inputs(rng, dist)
        params = task.make_params(rng, i % 3 != 0, i % 2)
        ref = f(x, params, None)
        facts = judging.trial_facts(task, ref, x, params)
        assert {p.name for p in facts.predictors} >= {"zeros", "constant", "rank-1", "half the rows",
                                                      "constant removed", "small values zeroed"}
        assert facts.not_ruled_out() == (), (task.name, dist, facts.summary())
        assert {"zeros", "constant"} <= set(facts.ruled_out()), (task.name, dist)
        assert judging.judge(ref.copy(), ref, facts, x, params).ok, (task.name, dist)


def test_facts_are_computed_once_per_reference_array():
    t = TASK["L1_gelu"]
    x = t.make_inputs(np.random.default_rng(6), "normal")
    ref = t.ref_fn()(x, {}, None)
    a = judging.facts_for(t, ref, x, {})
    assert judging.facts_for(t, ref, x, {}) is a
    assert judging.facts_for(t, ref.copy(), x, {}) is not a  # another array, other facts


def test_properties_catch_what_they_promise():
    rng = np.random.default_rng(7)
    t = TASK["L1_layernorm"]
    x = t.make_inputs(rng, "normal")
    p = t.make_params(rng, True, 1)
    ref = t.ref_fn()(x, p, None)
    facts = judging.trial_facts(t, ref, x, p, predictors=False)
    assert judging.judge(ref.copy(), ref, facts, x, p).ok
    skewed = (ref - p["beta"]) * np.float32(1.05) + p["beta"]  # variance 1.1 before the affine step
    assert "normalised_rows" in judging.judge(skewed.astype(np.float32), ref, facts, x, p).failed()
    t = TASK["L2_gemm_relu_scale"]
    x = t.make_inputs(rng, "normal")
    p = t.make_params(rng, True, 0)  # scale < 0
    ref = t.ref_fn()(x, p, None)
    facts = judging.trial_facts(t, ref, x, p, predictors=False)
    folded = np.maximum(x["x"] @ (p["W"] * p["scale"]) + p["b"] * p["scale"], 0).astype(np.float32)
    assert "sign_of_scale" in judging.judge(folded, ref, facts, x, p).failed()


def test_reordered_float32_sums_stay_correct(grader):
    """An honest float32 kernel that only sums in another order (reversed K, blocked rows) is correct under
    hardened on every structured trial, offset's cancellation included."""
    src = '''
def forward(x, params, alloc):
    a, w = x["x"], params["W"]
    h = np.empty((a.shape[0], w.shape[1]), np.float32)
    for s in range(0, a.shape[0], 64):
        h[s:s + 64] = a[s:s + 64, ::-1] @ w[::-1]
    return np.maximum(h + params["b"], 0) * params["scale"]
'''
    r = kbench.evaluate("L2_gemm_relu_scale", src, dataclasses.replace(HARDENED, timing=None), "reordered",
                        grader=grader)
    assert r.status == "correct", r.msg
    soft = '''
def forward(x, params, alloc):
    z = x["x"]
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    s = e[:, ::-1].cumsum(axis=-1)[:, -1:]
    return e / s
'''
    r = kbench.evaluate("L1_softmax", soft, dataclasses.replace(HARDENED, timing=None), "cumsum", grader=grader)
    assert r.status == "correct", r.msg


def test_the_step_log_says_what_each_trial_rules_out(grader):
    events: list[kbench.Event] = []
    r = kbench.evaluate("L1_gelu", TASK["L1_gelu"].ref_src, dataclasses.replace(HARDENED, timing=None), "ref",
                        grader=grader, on_event=events.append)
    assert r.correct
    lines = [e.message for e in events if e.step == "trial" and " checks: " in e.message]
    assert len(lines) == len(DISTS)
    assert all("passed" in m and "rules out zeros" in m for m in lines), lines
    assert any("centred along axis" in m for m in lines)  # the offset trial


def test_a_predictor_right_on_the_sampled_rows_is_still_scored_on_every_row():
    """A large output's predictors are built and scored on a sample of rows first; one that passes the sample is
    scored on every row (in blocks), so a difference outside the sample still rules it out."""
    ref = np.random.default_rng(8).standard_normal((1024, 512)).astype(np.float32)
    scorer = judging._Scorer(ref, row_atol(ref, 1e-2, 1e-2), 1e-2, ())
    assert scorer.rows is not None and len(scorer.rows) < ref.shape[0]
    outside = int(np.setdiff1d(np.arange(ref.shape[0]), scorer.rows)[0])

    def off_outside(rows: object) -> np.ndarray:
        idx = np.arange(ref.shape[0]) if rows is None else np.arange(ref.shape[0])[rows]
        p = ref[idx].copy()
        p[idx == outside] += 1.0
        return p

    res = scorer.failures({"exact": judging._Predictor(lambda rows: ref.copy() if rows is None else ref[rows]),
                           "off outside the sample": judging._Predictor(off_outside)})
    assert res == {"exact": ((), True), "off outside the sample": (("close",), False)}


def test_centred_check_in_blocks_agrees_with_the_whole_array():
    rng = np.random.default_rng(9)
    ref = (1000 + rng.standard_normal((512, 1024))).astype(np.float32)
    centred, _ = judging._centred_candidates(ref, row_atol(ref, 1e-2, 1e-2), 1, 1e-2)
    assert centred  # the constant part dominates
    for cen in centred:
        assert judging._centred_check(ref + np.float32(0.25), ref, cen, 1e-2).ok  # only the constant part moved
        bad = ref.copy()
        bad[300, 700] += 3 * float(cen.tol.max())
        err, limit = judging._centred_errors(bad, ref, cen, 1e-2)
        c = judging._centred_check(bad, ref, cen, 1e-2)
        assert not bool((err <= limit).all()) and c.ok is False and "at [300, 700], 1 of" in c.detail


def test_row_tolerance_takes_a_sparse_rows_scale_from_its_nonzero_values_in_any_block():
    ref = (np.random.default_rng(10).standard_normal((512, 1024)) * 0.05).astype(np.float32)  # small rows
    ref[400, ::2] = 0  # one half-sparse row, in a later row block than the first
    tol = row_atol(ref, 1e-2, 1e-2)[:, 0]
    rms = np.sqrt(np.square(ref.astype(np.float64)).sum(axis=1) / np.count_nonzero(ref, axis=1))
    assert np.allclose(tol, np.clip(4 * 1e-2 * rms, 1e-8, 1e-2), rtol=1e-5)


@pytest.mark.parametrize("kind", ["close", "one_bad_element", "sparse_rows", "nan"])
def test_a_timed_outputs_judgement_without_relative_error_has_the_same_verdict(kind):
    # rel=False skips the relative-error passes (timed outputs): the verdict and max abs error must not change.
    rng = np.random.default_rng(11)
    ref = rng.standard_normal((300, 257)).astype(np.float32)
    if kind == "sparse_rows":
        ref[::3, 5:] = 0
    out = ref * np.float32(1 + 1e-4)
    if kind == "one_bad_element":
        out[123, 45] += 0.5
    if kind == "nan":
        out[7, 7] = np.nan
    full = compare(out, ref, 1e-2, 1e-2)
    quick = compare(out, ref, 1e-2, 1e-2, rel=False)
    assert (quick.ok, quick.message) == (full.ok, full.message)
    assert quick.max_abs_err == full.max_abs_err or math.isnan(full.max_abs_err)
    assert full.ok is (kind in ("close", "sparse_rows"))


@pytest.mark.parametrize("excess, ok", [(0.0, True), (0.45e-3, True), (0.99e-3, True), (1.2e-3, False), (math.nan, False)])
def test_rows_sum_to_one_agrees_with_a_float64_sum_at_the_limit(excess, ok):
    # The float32 matrix-vector fast path decides only far inside the limit; near it the float64 sum decides.
    rng = np.random.default_rng(5)
    p = rng.random((64, 1000)).astype(np.float64)
    p /= p.sum(axis=1, keepdims=True)
    p[17] *= 1 + excess
    out = p.astype(np.float32)
    check = judging.PROPERTIES["rows_sum_to_one"](out, out, {}, {}, 1e-2)
    exact = np.abs(out.astype(np.float64).sum(axis=1) - 1).max()
    assert check.ok is ok and (check.ok is bool(exact <= judging.SUM_TOL))


@pytest.mark.parametrize("params", [{}, {"gamma": None, "beta": None}])
def test_layer_norm_row_moments_match_a_float64_computation(params):
    rng = np.random.default_rng(9)
    y = (rng.standard_normal((130, 96)) * 2 + 0.5).astype(np.float32)
    if params:
        gamma = rng.uniform(-2, 2, 96).astype(np.float32)
        gamma[:10] = 0.1  # dropped: |gamma| < 0.25
        params = {"gamma": gamma, "beta": rng.standard_normal(96).astype(np.float32)}
    g = np.asarray(params.get("gamma", 1.0), np.float64) * np.ones(96)
    b = np.asarray(params.get("beta", 0.0), np.float64) * np.ones(96)
    keep = np.abs(g) >= 0.25
    z = ((y.astype(np.float64) - b) / g)[:, keep]
    mean, var = judging._row_moments(y, params)
    np.testing.assert_allclose(mean, z.mean(axis=1), atol=1e-5)
    np.testing.assert_allclose(var, z.var(axis=1), rtol=1e-4)
    y[3, 50] = np.nan
    assert np.isnan(judging._row_moments(y, params)[1][3])


@pytest.mark.parametrize("seed", range(5))
def test_rows_sum_to_one_on_signed_rows_is_decided_by_the_exact_sum(seed):
    # Signed rows cancel: a float32 sum of values of 1e4 is off by ~1e-3, the whole tolerance. Such rows (and any
    # row near the limit) must be decided by the float64 sum of the values the kernel returned.
    rng = np.random.default_rng(seed)
    big = rng.uniform(5e3, 2e4, (32, 512))
    rows = np.concatenate([big, -big], axis=1)
    rows = rng.permuted(rows, axis=1)
    rows[:, 0] += 1 + rng.uniform(-3e-3, 3e-3, 32)  # exact sums straddle the limit
    out = rows.astype(np.float32)
    check = judging.PROPERTIES["rows_sum_to_one"](out, out, {}, {}, 1e-2)
    exact = np.abs(out.astype(np.float64).sum(axis=1) - 1).max()
    assert check.ok is bool(exact <= judging.SUM_TOL)


@pytest.mark.parametrize("case", ["scattered", "largest_error_within_tolerance", "inf_reference"])
def test_a_wrong_outputs_message_counts_and_locates_its_errors_as_a_whole_array_test_does(case):
    # The failure scan runs in row blocks through reused scratch: its count, its worst out-of-tolerance element
    # and its max errors must be those of one whole-array computation, across block boundaries.
    rng = np.random.default_rng(12)
    ref = rng.standard_normal((700, 300)).astype(np.float32)  # several row blocks
    out = ref.copy()
    idx = rng.choice(ref.size if case != "inf_reference" else 200 * 300, 40, replace=False)  # inf: in its block
    out.flat[idx] += rng.uniform(0.05, 0.5, idx.size).astype(np.float32)
    if case == "largest_error_within_tolerance":  # a huge value off by 1 % of itself is within rtol
        ref[650, 10] = out[650, 10] = 1e4
        out[650, 10] += 60.0
    if case == "inf_reference":  # an inf matched by an inf: neither an error nor out of tolerance
        ref[3, 3] = out[3, 3] = np.inf
    c = compare(out, ref, 1e-2, 1e-2)
    tol = row_atol(ref, 1e-2, 1e-2)
    with np.errstate(all="ignore"):
        d = np.abs(out.astype(np.float64) - ref)
        d[np.isnan(d)] = 0.0  # inf - inf: the reference's own inf, matched
        over = d > (np.abs(ref) * 1e-2 + tol) * (1 - 1e-5)
    worst = np.unravel_index(int(np.argmax(np.where(over, d, -1))), ref.shape)
    assert c.ok is False and c.failed() == ("close",)
    assert f"at [{worst[0]}, {worst[1]}], {int(over.sum())} of {ref.size} elements out of tolerance" in c.message
    if case == "largest_error_within_tolerance":
        assert c.max_abs_err == pytest.approx(60.0, rel=1e-3) and worst != (650, 10)
