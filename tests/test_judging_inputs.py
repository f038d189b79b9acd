"""Input generation: the fast samplers keep each distribution's statistics (moments, quantiles, tails),
stay deterministic for a seeded generator and never repeat; the grader's structured trial inputs keep each
named distribution's value range and carry the structures they promise; the lecture's make_inputs stays
plain."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kbench import DISTS, TASK, TASKS
from kbench.core import distributions as D
from kbench.core import structured

N = 1 << 22  # 4 M values: a KS distance of 1e-3 is ~2 standard errors


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


CDF = {
    "normal": _phi,
    "uniform": lambda x: min(1.0, max(0.0, (x + 1.0) / 2.0)),
    "laplace": lambda x: 0.5 * math.exp(x) if x < 0 else 1.0 - 0.5 * math.exp(-x),
    "lognormal": lambda x: _phi(math.log(x)) if x > 0 else 0.0,
    "offset": lambda x: _phi(x - 1000.0),
    "exponential": lambda x: 1.0 - math.exp(-x) if x > 0 else 0.0,
}
# (mean, variance) of each distribution
MOMENTS = {"normal": (0.0, 1.0), "uniform": (0.0, 1.0 / 3.0), "laplace": (0.0, 2.0),
           "lognormal": (math.exp(0.5), (math.e - 1.0) * math.e), "offset": (1000.0, 1.0), "exponential": (1.0, 1.0)}


@pytest.fixture(scope="module")
def draws() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(2024)
    return {d: D.sample(rng, d, (N,)) for d in CDF}


@pytest.mark.parametrize("dist", list(CDF))
def test_quantiles_match_the_exact_distribution(draws, dist):
    """Kolmogorov-Smirnov distance against the exact CDF, on 2000 points of the sorted sample."""
    x = np.sort(draws[dist].astype(np.float64))
    idx = np.linspace(0, N - 1, 2000).astype(int)
    ks = max(abs(CDF[dist](float(x[i])) - (i + 0.5) / N) for i in idx)
    assert ks < 2.0 / math.sqrt(N) + 2e-5, (dist, ks)  # ~99.9 % critical value of KS plus float32 rounding


@pytest.mark.parametrize("dist", list(CDF))
def test_moments(draws, dist):
    x = draws[dist].astype(np.float64)
    mean, var = MOMENTS[dist]
    sd = math.sqrt(var)
    assert abs(x.mean() - mean) < 6 * sd / math.sqrt(N), (dist, x.mean())
    # the variance's standard error needs the 4th moment: lognormal's is huge, use a wide bound there
    rel = 0.05 if dist == "lognormal" else 6 * math.sqrt(2.0 / N) * (3 if dist == "laplace" else 1)
    assert abs(x.var() / var - 1) < rel, (dist, x.var())
    if dist in ("normal", "offset"):
        z = (x - mean) / sd
        assert abs((z**3).mean()) < 0.01 and abs((z**4).mean() - 3) < 0.02


def test_tails_are_drawn_exactly(draws):
    """Tail counts beyond 4 sigma (normal), 10 (exponential, |Laplace|): binomial, within 6 standard errors."""
    for dist, mask, p in (("normal", lambda x: np.abs(x) > 4, 2 * (1 - _phi(4.0))),
                          ("exponential", lambda x: x > 10, math.exp(-10)),
                          ("laplace", lambda x: np.abs(x) > 10, math.exp(-10))):
        k = int(mask(draws[dist]).sum())
        assert abs(k - N * p) < 6 * math.sqrt(N * p), (dist, k, N * p)
    assert np.abs(draws["normal"]).max() > 4.8  # the largest of 4 M normals is ~5.3: no cut-off at 4 or 5
    assert draws["uniform"].min() >= -1 and draws["uniform"].max() < 1
    assert draws["lognormal"].min() > 0 and draws["exponential"].min() > 0


def test_seeded_generators_repeat_and_draws_never_do():
    a = D.sample(np.random.default_rng(5), "normal", (2048, 1024))
    b = D.sample(np.random.default_rng(5), "normal", (2048, 1024))
    assert np.array_equal(a, b)  # one seed, one result (the two threads' children are part of it)
    rng = np.random.default_rng(5)
    c, d = D.sample(rng, "normal", (2048, 1024)), D.sample(rng, "normal", (2048, 1024))
    assert not np.array_equal(c, d)
    flat = c.reshape(-1)
    # ~all distinct values: float32 has ~2**30 values in [-6, 6], so a few 2 M draws coincide by chance,
    # as often as numpy's own float32 sampler makes them
    own = np.random.default_rng(5).standard_normal(flat.size, dtype=np.float32)
    assert np.unique(flat).size > 0.98 * flat.size and np.unique(flat).size > 0.995 * np.unique(own).size
    half = flat.size // 2  # the two threads' halves are independent streams, not shifts of one another
    assert abs(np.corrcoef(flat[:half], flat[half:])[0, 1]) < 0.01
    # no window of one draw reappears in the next (a memoising kernel finds nothing to reuse): single values
    # coincide by chance, runs of four do not
    nxt = d.reshape(-1)
    for i in range(0, 8192, 64):
        for p in np.nonzero(flat == nxt[i])[0]:
            assert not np.array_equal(flat[p:p + 4], nxt[i:i + 4]), (i, p)


def test_the_lecture_draws_stay_plain():
    """Task.make_inputs is the plain distribution: every row of a normal draw at unit scale."""
    x = TASK["L1_softmax"].make_inputs(np.random.default_rng(1), "normal")["x"]
    sd = x.std(axis=1)
    assert sd.min() > 0.85 and sd.max() < 1.15
    assert not TASK["L1_softmax"].trial_structure and TASK["L1_softmax"].for_trials().trial_structure


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.name)
def test_structured_trials_keep_each_distributions_range(task):
    for dist in DISTS:
        x = task.for_trials().make_inputs(np.random.default_rng([3, len(dist)]), dist)
        assert set(x) == set(task.inputs) and all(v.shape == task.inputs[k] and v.dtype == np.float32
                                                  for k, v in x.items())
        for v in x.values():
            assert np.isfinite(v).all()
            if dist == "uniform" and task.structure != "softmax":  # softmax: temperatures, one large logit
                assert v.min() >= -1 and v.max() < 1
            if dist == "lognormal":
                assert v.min() >= 0
        if task.structure == "layernorm":  # no near-constant row: a missing eps moves an output by < rtol (no_eps
            # is honest), but rows as small as 300 eps make an eps 10x too large show (S25)
            assert x["x"].var(axis=1).min() > 1.5e-3


def test_structured_rows_are_there():
    """Mixed scales, repeated prefixes, smooth neighbours and sparse rows in one structured normal draw;
    row scales spread over orders of magnitude (no single statistic marks a trial)."""
    x = TASK["L1_gelu"].for_trials().make_inputs(np.random.default_rng(11), "normal")["x"]
    sd = x.std(axis=1)
    assert sd.min() < 1e-2 and sd.max() > 2  # tiny and large rows beside unit ones
    assert ((x == 0).mean(axis=1) > 0.6).any()  # sparse rows
    prefix = {bytes(r[:16]) for r in x}
    assert len(prefix) < x.shape[0]  # rows sharing their first 16 values
    nb = np.array([np.corrcoef(x[i], x[i + 1])[0, 1] for i in range(x.shape[0] - 1)])
    assert (nb > 0.9).sum() >= 5  # runs of smooth (correlated) rows
    # softmax offset: logits far below zero beside rows at zero, the overall max small
    z = TASK["L1_softmax"].for_trials().make_inputs(np.random.default_rng(11), "offset")["x"]
    assert z.max() < 50 and z.min() < -400
    # different trials draw different structure
    y = TASK["L1_gelu"].for_trials().make_inputs(np.random.default_rng(12), "normal")["x"]
    assert not np.array_equal(np.argsort(x.std(axis=1))[:50], np.argsort(y.std(axis=1))[:50])
    assert set(structured.NOTES) >= {t.structure for t in TASKS}


def test_trial_inputs_drawn_in_place_are_the_same_draws():
    """The grader draws timing inputs straight into its arena slot: the same values as a fresh draw."""
    t = TASK["L3_attention"]
    for dist in ("normal", "offset", "edge"):
        fresh = t.trial_inputs(np.random.default_rng(3), dist)
        into = {k: np.full(s, np.nan, np.float32) for k, s in t.inputs.items()}
        got = t.trial_inputs_into(np.random.default_rng(3), dist, into)
        for k in fresh:
            assert got[k] is into[k]
            np.testing.assert_array_equal(got[k], fresh[k])


HAZARD_DISTS = DISTS + ("exponential", "edge")


@pytest.mark.parametrize("dist", HAZARD_DISTS)
def test_every_distribution_carries_the_hazards_the_others_are_for(dist):
    """No distribution is a safe place to skip a stabilising step (12-04 audit: a kernel that told the
    distributions apart from one column skipped softmax's max pass, and layer norm's second pass, where the
    draws allowed it, the timed normal draws among them). In a few rows of every structured draw: a logit
    beyond exp's float32 range; a query coordinate that puts attention scores there (not on uniform: bounded
    inputs cannot overflow); layer-norm rows 10-3000 from zero with a small spread (not on uniform)."""
    for seed in range(3):
        rng = [21, seed, len(dist)]
        z = TASK["L1_softmax"].for_trials().make_inputs(np.random.default_rng(rng), dist)["x"]
        assert z.max() > 88.8 if dist != "offset" else (z < -400).any()
        plain = TASK["L1_softmax"].make_inputs(np.random.default_rng(rng), dist)["x"]
        if dist in ("normal", "uniform", "laplace"):
            assert plain.max() < 88.7  # the lecture's plain draws stay as they were
        qkv = TASK["L3_attention"].for_trials().make_inputs(np.random.default_rng(rng), dist)
        q, k = qkv["q"].astype(np.float64), qkv["k"].astype(np.float64)
        if dist not in ("uniform", "offset"):  # (offset's queries and keys sit near 1000: scores of millions)
            assert (q @ k.transpose(0, 2, 1)).max() / math.sqrt(q.shape[-1]) > 88.8
        x = TASK["L1_layernorm"].for_trials().make_inputs(np.random.default_rng(rng), dist)["x"]
        centre = np.abs(x.mean(axis=1, dtype=np.float64))
        far = centre >= 10.5
        if dist != "offset":  # the offset distribution's own rows have spreads up to 4
            far &= x.std(axis=1, dtype=np.float64) <= 0.11
            # a continuum: rows between 10 and 200 from zero too (the second 12-04 audit routed by |mean| > 150)
            assert ((centre > 10.5) & (centre < 200) & far).any() == (dist != "uniform")
        assert far.any() == (dist != "uniform"), far.sum()
        assert x.var(axis=1).min() > 1.5e-3 or dist == "edge"
