"""Engine behaviour that does not need the whole library: tasks, distributions, checks, modes, metrics."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kbench import (ALL_DISTS, DIST_NOTES, DISTS, HARDENED, NAIVE, TASK, TASKS, check_output, compare, fast_p_at_k,
                    load_candidate)
from kbench.core.metrics import fast_p, geomean_speedup, oracle_fast_p, unbiased_at_k
from kbench.core.modes import matrix_mode


def test_default_distributions_in_seed_order():
    assert DISTS == ("normal", "uniform", "laplace", "lognormal", "offset")
    assert ALL_DISTS[5:] == ("exponential", "edge")
    assert set(DIST_NOTES) == set(ALL_DISTS)


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.name)
def test_reference_is_finite_float32_on_every_distribution(task):
    f = task.ref_fn()
    rng = np.random.default_rng(0)
    for dist in ALL_DISTS:
        for randomize, draw in ((False, 0), (True, 0), (True, 1)):
            x = task.make_inputs(rng, dist)
            out = f(x, task.make_params(rng, randomize, draw), None)
            assert out.dtype == np.float32 and out.shape == task.out_shape
            assert np.isfinite(out).all(), (task.name, dist)


def test_lognormal_reaches_the_hundreds_and_offset_sits_at_1000():
    x = TASK["L1_softmax"].make_inputs(np.random.default_rng(1), "lognormal")["x"]
    assert x.min() > 0 and x.max() > 100
    y = TASK["L1_softmax"].make_inputs(np.random.default_rng(1), "offset")["x"]
    assert 990 < y.mean() < 1010


def test_edge_has_constant_zero_and_huge_rows():
    x = TASK["L1_layernorm"].make_inputs(np.random.default_rng(2), "edge")["x"]
    spread = x.max(axis=1) - x.min(axis=1)
    assert (spread == 0).sum() >= x.shape[0] // 4
    assert (np.abs(x).max(axis=1) == 0).any()
    assert np.abs(x).max() > 1e3


def test_params_defaults_and_random_draws():
    t = TASK["L2_gemm_relu_scale"]
    d = t.make_params(np.random.default_rng(0), False)
    assert d["scale"] > 0 and not d["b"].any()
    assert abs(float(d["W"].std()) - 1 / math.sqrt(1024)) < 0.002
    neg = t.make_params(np.random.default_rng(0), True, 0)
    pos = t.make_params(np.random.default_rng(0), True, 1)
    assert neg["scale"] < 0 < pos["scale"]
    ln = TASK["L1_layernorm"].make_params(np.random.default_rng(0), False)
    assert (ln["gamma"] == 1).all() and (ln["beta"] == 0).all() and ln["eps"] == 1e-5


def test_every_task_states_its_work():
    for t in TASKS:
        assert t.flops >= t.min_flops > 0 and t.bytes >= t.min_bytes > 0 and t.level in (1, 2, 3) and t.description


def test_load_candidate_errors_are_one_line():
    ns = {"np": np, "math": math}
    assert load_candidate("def f(:\n", ns)[2].startswith("SyntaxError")
    assert "NameError" in load_candidate("y = undefined_thing\n", ns)[2]
    assert load_candidate("x = 1\n", ns)[2] == "no forward() defined"
    assert "3 positional" in load_candidate("def forward(x):\n    return x\n", ns)[2]
    fwd, init, err = load_candidate(TASK["L1_gelu"].ref_src, ns)
    assert err is None and init is None and callable(fwd)


def test_check_output_exact_checks_before_closeness():
    ref = np.ones((4, 3), np.float32)
    ok, msg = check_output(ref.copy(), ref, True)
    assert ok and "max abs err 0" in msg, msg
    assert not check_output(np.float32(1.0), ref, True)[0]  # a scalar would broadcast
    ok, msg = check_output(np.ones((4, 3), np.float64), ref, True)
    assert not ok and "dtype" in msg
    ok, msg = check_output(np.ones(3, np.float32), ref, True)
    assert not ok and "shape" in msg
    bad = ref.copy()
    bad[2, 1] = np.nan
    ok, msg = check_output(bad, ref, True)
    assert not ok and msg.startswith("NaN at [2, 1]")

    class Lying(np.ndarray):
        pass

    assert not check_output(ref.copy().view(Lying), ref, True)[0]
    assert check_output(ref.copy().view(Lying), ref, False)[0]  # naive trusts np.allclose


def test_all_zeros_do_not_pass_a_tiny_reference():
    ref = np.full((64, 64), 1e-3, np.float32)
    ref[0, 0] = 2e-3
    assert check_output(np.zeros_like(ref), ref, False)[0]  # KernelBench #165: zeros pass atol=1e-2
    c = compare(np.zeros_like(ref), ref)
    assert not c.ok and c.degenerate
    assert compare(ref * (1 + 1e-4), ref).ok


def test_modes_are_data():
    from kbench.core.modes import DEFENCES

    assert NAIVE.n_trials == 5 and NAIVE.dists == ("normal",) and NAIVE.procedure == "naive_v0"
    assert not NAIVE.defences and HARDENED.defences == frozenset(DEFENCES)
    assert HARDENED.n_trials == 5 and HARDENED.has("gate") and HARDENED.has("nan_alloc")
    assert not HARDENED.without("gate").has("gate") and HARDENED.without("gate").has("nan_alloc")
    with pytest.raises(KeyError, match="unknown defence"):
        HARDENED.without("moat")
    plan = HARDENED.trial_plan()
    assert [p[1] for p in plan] == list(DISTS)
    assert [(p[2], p[3]) for p in plan] == [("default", -1), ("random", 0), ("random", 1), ("default", -1),
                                            ("random", 0)]
    edge = HARDENED.with_dists(DISTS + ("edge",))
    assert edge.n_trials == 6 and edge.has("gate")
    with pytest.raises(KeyError):
        HARDENED.with_dists(("nope",))
    m = matrix_mode(("normal", "edge"), 3)
    assert m.n_trials == 6 and m.timing is None


def test_fast_p_metrics():
    outcomes = {"a": [(True, 2.0), (True, 0.5), (False, None)], "b": [(False, None), (True, 1.5)]}
    assert fast_p(outcomes, 0.0) == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert fast_p(outcomes, 1.0) == pytest.approx((1 / 3 + 1 / 2) / 2)
    assert fast_p(outcomes, 1.5) == pytest.approx((1 / 3 + 0) / 2)  # strictly greater
    assert oracle_fast_p(outcomes, 1.9) == 0.5
    assert fast_p_at_k([0.5, 0.0], 1) == pytest.approx(0.25)
    assert fast_p_at_k([0.5, 0.0], 2) == pytest.approx(0.375)
    assert unbiased_at_k(10, 0, 5) == 0.0 and unbiased_at_k(10, 10, 1) == 1.0
    assert unbiased_at_k(4, 1, 2) == pytest.approx(1 - math.comb(3, 2) / math.comb(4, 2))
    assert geomean_speedup([2.0, 8.0]) == pytest.approx(4.0) and geomean_speedup([]) == 0.0


@pytest.mark.parametrize("mode", [NAIVE, HARDENED], ids=["naive", "hardened"])
def test_timing_fields_hold_what_they_say(grader, mode):
    from kbench import evaluate

    r = evaluate(TASK["L1_gelu"], TASK["L1_gelu"].ref_src, mode, "reference", grader=grader)
    t = r.timing
    assert r.correct and t is not None
    assert len(t.ref_samples) >= t.n_samples and len(t.cand_samples) >= t.n_samples
    assert all(isinstance(v, float) for v in t.ref_samples + t.cand_samples)
    roof = (t.achieved_gbs, t.achieved_gflops, t.roof_fraction)
    if mode is HARDENED:
        assert all(isinstance(v, float) and v > 0 for v in roof)
    else:  # the naive method reports no roofline figures
        assert roof == (None, None, None)
    d = r.to_dict()["timing"]
    assert "ref_samples" not in d and isinstance(d["speedup_ci"], (list, tuple))


def test_modes_refuse_combinations_that_would_not_work_as_named():
    import dataclasses

    from kbench.core.modes import TimingPolicy

    bad = [
        (lambda: dataclasses.replace(HARDENED, timing=NAIVE.timing), "blocked timing"),
        (lambda: NAIVE.with_defences("exact_output"), "choose one"),
        (lambda: dataclasses.replace(HARDENED.timing, statistic="mean"), "medians"),
        (lambda: HARDENED.without("exact_output"), "float64_recheck"),
        (lambda: dataclasses.replace(HARDENED, procedure="quick"), "procedure"),
        (lambda: dataclasses.replace(HARDENED, dists=()), "at least one distribution"),
        (lambda: dataclasses.replace(HARDENED, dists=("gaussian",)), "gaussian"),
        (lambda: dataclasses.replace(HARDENED, param_sets=("sometimes",)), "param_sets"),
        (lambda: dataclasses.replace(HARDENED, timing=None, time_wrong=True), "time_wrong"),
        (lambda: TimingPolicy("interleaved", warmup=1, min_runs=5, max_runs=2, budget_s=1.0), "min_runs"),
        (lambda: dataclasses.replace(HARDENED.timing, params="trained"), "params"),
    ]
    for make, words in bad:
        with pytest.raises(ValueError, match=words):
            make()
    # what is allowed works as named: naive judging with NaN-filled alloc hands back NaN, not a recycled block
    stale = "def forward(x, params, alloc):\n    return alloc(x['x'].shape)\n"
    pooled = evaluate_naive(stale, NAIVE)
    nan_filled = evaluate_naive(stale, NAIVE.with_defences("nan_alloc"))
    assert pooled.status == "correct" and nan_filled.status == "wrong", (pooled.msg, nan_filled.msg)


def evaluate_naive(src: str, mode) -> object:  # noqa: ANN001
    import dataclasses

    from kbench import evaluate

    return evaluate("L1_gelu", src, dataclasses.replace(mode, timing=None), "stale")


def test_mode_digest_changes_with_any_field():
    import dataclasses

    assert HARDENED.digest == dataclasses.replace(HARDENED).digest
    assert HARDENED.digest != dataclasses.replace(HARDENED, atol=2e-2).digest
    assert HARDENED.digest != HARDENED.with_dists(DISTS + ("edge",)).digest
    assert HARDENED.digest != HARDENED.without("gate").digest


def test_seeds_come_from_names_not_positions():
    from kbench.grading.truth import Grader, name_key

    g = Grader(seed=7)
    x = g.inputs(TASK["L1_gelu"], 0, "uniform")["x"]
    assert name_key("uniform") != name_key("normal")
    # the same (seed, task, trial, distribution) gives the same draw whatever else is registered
    assert np.array_equal(x, Grader(seed=7).inputs(TASK["L1_gelu"], 0, "uniform")["x"])
    assert not np.array_equal(x, Grader(seed=7).inputs(TASK["L1_gelu"], 0, "laplace")["x"])


def test_float64_second_opinion_forgives_rounding_not_bugs():
    from kbench.core.compare import recheck_against_exact

    rng = np.random.default_rng(3)
    a = (1000 + rng.standard_normal((64, 512))).astype(np.float32)
    w = (rng.standard_normal((512, 64)) / 512**0.5).astype(np.float32)
    exact = a.astype(np.float64) @ w.astype(np.float64)
    ref = a @ w
    other_order = (a[:, ::-1] @ w[::-1]).astype(np.float32)  # the same sum, another order
    small = np.argmin(np.abs(exact))  # where cancellation leaves a small value
    noise = float(np.max(np.abs(ref - exact)))  # the float32 reference's own worst rounding error
    assert noise > 0
    # off by 2x the reference's own rounding beyond the tolerance: as accurate as float32 allows, yet "wrong"
    other_order.flat[small] = exact.flat[small] + 1e-2 + 1e-2 * abs(exact.flat[small]) + 2 * noise
    first = compare(other_order, ref, 1e-2, 1e-2)
    assert not first.ok and "out of tolerance" in first.message
    second = recheck_against_exact(other_order, ref, exact, 1e-2, 1e-2, first)
    assert second.ok and "rounding error" in second.message, second.message
    buggy = ref * 1.05  # a 5 % error is no rounding
    assert not recheck_against_exact(buggy, ref, exact, 1e-2, 1e-2, compare(buggy, ref, 1e-2, 1e-2)).ok
    tiny = np.full((32, 32), 1e-3, np.float32)
    tiny[0, 0] = 2e-3
    zeros = np.zeros_like(tiny)
    first = compare(zeros, tiny)
    assert first.degenerate and not first.ok
    assert not recheck_against_exact(zeros, tiny, tiny.astype(np.float64), 1e-2, 1e-2, first).ok


def test_candidate_stdout_is_kept_capped_and_escaped():
    import dataclasses

    from kbench import evaluate

    src = ("def forward(x, params, alloc):\n    print('step one \\x1b[31mred')\n    print('z' * 5000)\n"
           "    return x['x'] * 0.5 * (1 + np.tanh(0.7978845608 * (x['x'] + 0.044715 * x['x'] ** 3)))\n")
    events = []
    r = evaluate("L1_gelu", src, dataclasses.replace(HARDENED, timing=None), "printer", on_event=events.append)
    assert r.stdout.startswith("step one \\x1b[31mred\n") and "\x1b" not in r.stdout
    assert len(r.stdout) <= 2000
    line = next(e.message for e in events if e.step == "stdout")
    assert line.startswith("printed: step one") and "more characters" in line
    assert r.to_dict()["stdout"] == r.stdout


def test_the_grading_process_uses_one_blas_thread_while_it_grades_and_restores_it(grader):
    # An idle OpenBLAS thread spins after each call: while grading, the grading process's own BLAS must not have
    # one (it preempted judging and was free to spin on the timing core); the caller's setting comes back after.
    import kbench
    from threadpoolctl import threadpool_info, threadpool_limits

    def blas_threads() -> set[int]:
        return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}

    seen: list[set[int]] = []
    with threadpool_limits(2, "blas"):
        before = blas_threads()
        r = kbench.evaluate("L2_matmul_sum", kbench.TASK["L2_matmul_sum"].ref_src, kbench.HARDENED, "ref",
                            dists=("normal",), grader=grader, on_event=lambda e: seen.append(blas_threads()))
        after = blas_threads()
    assert r.status == "correct", r.message
    assert seen and all(s == {1} for s in seen), seen
    assert after == before


def test_hardened_times_each_arm_in_two_processes_in_turn(grader, monkeypatch):
    """A process can run a memory-bound kernel slower than another for its whole life: with
    ``TimingPolicy.processes=2`` each arm is timed in two (two reference twins, two candidate workers, the second
    loaded and initialised as the first), the k-th of each arm paired, in turn. Read off the calls the grader sends
    (which worker, which function); the default stays one process per arm."""
    from kbench import evaluate
    from kbench.sandbox import protocol as P
    from kbench.sandbox.server import Worker
    from kbench.timing.interleaved import process_of

    seen: list[tuple[str, str, int]] = []
    run = Worker.run

    def recording(self, request, *a, **k):  # noqa: ANN001, ANN002, ANN003
        if isinstance(request, P.Call):
            seen.append((self.role, request.fn, self.pid))
        return run(self, request, *a, **k)

    monkeypatch.setattr(Worker, "run", recording)
    task = TASK["L1_softmax"]
    events: list = []
    assert HARDENED.timing is not None and HARDENED.timing.processes == 1
    r = evaluate(task, task.ref_src, HARDENED.with_timing(processes=2), "reference_as_candidate", dists=("normal",),
                 grader=grader, on_event=events.append)
    assert r.correct and r.timing is not None, r.msg
    start = [i for i, (_, fn, _) in enumerate(seen) if fn == "cand"][len(r.trials)]  # the timing step's first call
    cand = [pid for _, fn, pid in seen[start:] if fn == "cand"]
    ref = [pid for _, fn, pid in seen[start - 1:] if fn.startswith("ref:")]  # its first pair: the reference first
    assert len(set(cand)) == 2 and len(set(ref)) == 2, (set(cand), set(ref))
    # warm-up pairs: each process twice; then one pairing per pair, in the order process_of says (no check pairs
    # with one distribution)
    first_c, first_r = cand[0], ref[0]
    assert [c == first_c for c in cand[:4]] == [True, False, True, False], cand[:4]
    order = [process_of(j, 2) == 0 for j in range(r.timing.n_samples)]
    assert [c == first_c for c in cand[4:]] == order and [x == first_r for x in ref[4:]] == order
    done = next(e.message for e in events if e.step == "timing" and e.ok)
    assert "each arm in 2 processes" in done, done


def test_hardened_times_its_counted_pairs_on_the_random_parameter_sets(grader, monkeypatch):
    """A kernel specialised to the default parameters (an affine step skipped while gamma is all ones) must
    not be timed on them (12-04 audit): the counted pairs take the random sets in turn, the defaults only
    their trial. Read off the calls the grader sends the candidate's worker."""
    from kbench import evaluate
    from kbench.sandbox import protocol as P
    from kbench.sandbox.server import Worker

    seen: list[str] = []
    run = Worker.run

    def recording(self, request, *a, **k):  # noqa: ANN001, ANN002, ANN003
        if isinstance(request, P.Call) and request.fn == "cand":
            seen.append(request.pset_id)
        return run(self, request, *a, **k)

    monkeypatch.setattr(Worker, "run", recording)
    task = TASK["L1_layernorm"]
    r = evaluate(task, task.ref_src, HARDENED, "reference_as_candidate", grader=grader)
    assert r.correct and r.timing is not None, r.msg
    timed = seen[len(r.trials):]  # one call per trial first, then the timing step's
    sets = {p.split(":", 1)[1]: timed.count(p) for p in set(timed)}
    # counted pairs alternate the two random sets; the defaults only in check pairs (a quarter of the pairs)
    assert sets.get("random:0", 0) >= r.timing.n_samples // 2 - 1, (sets, r.timing.n_samples)
    assert sets.get("random:1", 0) >= r.timing.n_samples // 2 - 1, (sets, r.timing.n_samples)
    assert sets.get("default:-1", 0) < r.timing.n_samples // 2, (sets, r.timing.n_samples)
