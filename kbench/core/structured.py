"""The grader's trial inputs: each named distribution with the structure real workloads have mixed in.

``Task.make_inputs(rng, dist)`` (the lecture's helper) draws the plain distribution: i.i.d. values at one
scale. Every such trial is one draw at one scale, so shortcuts pass that real inputs would expose: a
structure detector never fires, a table tuned to the value range is never left, a cheap path chosen
from one whole-tensor statistic always sees the same statistic. Hardened trials (``Task.trial_inputs``)
draw the same named distribution and then give a random ~third of the rows of every input (rows run
along the last axis) one of these structures, each row its own parameters:

* ``scaled``   the row times s, s log-uniform over the distribution's scale range (tiny to large rows
               in one tensor: mixed scales, small-magnitude outputs, softmax temperatures);
* ``offset``   the row plus a per-row offset (where the distribution's value range allows it);
* ``smooth``   a run of consecutive rows close to its first row (a convex mix: neighbours correlate);
* ``repeated`` a row copied from another, or a near-copy whose values at 2-4 scattered columns are
               rotated among them (deduplication by any fingerprint that does not read every value is
               wrong: a prefix, a strided sample);
* ``sparse``   most entries of the row zero;
* ``relu``     the row's negative entries zeroed (post-ReLU activations);
* ``low_rank`` a block of rows that is a rank-3 mix plus 5 % noise (GEMM inputs);
* ``one_large`` one logit far above the rest (softmax);
* ``spread``   queries scaled down so they attend to many keys (attention ``q``);
* ``outliers`` the row scaled down except 1-4 scattered columns that keep their plain values pushed 2
               further from zero (a few large features among small ones, as outlier channels in
               activations): a path chosen from a sample of a row's values, or a row's scale read from
               some of them, is wrong. Every task kind gets it on every distribution but uniform (small
               values only): it is the one structure across columns, not along rows.

The rows, their number and every parameter are drawn per trial, so no whole-tensor statistic marks a
trial or a row, and no row repeats across trials. What each distribution is for is kept (the library's
verdicts depend on it, and the explorer derives per-distribution views): uniform stays inside (-1, 1)
(softmax excepted: temperatures and one large logit are its structures), lognormal positive,
normal/uniform/laplace softmax logits below 80 but for a few rows with one logit beyond exp's float32 range
(``_hazards``: every distribution carries that hazard, so none is safe to skip the max on),
layer-norm rows keep a variance >= 0.003, 300 times eps (a missing eps moves an output by 0.17 % at most,
an eps 10 times too large by 1.7 %: only the task's own eps is right) and an |offset| <= 10 except on offset
and 4-16 rows 10-3000 from zero on every distribution but uniform (``_far_from_zero``);
offset rows carry per-row offsets of 500-1000 (softmax: rows 500-1500 *below* zero mixed with rows at
zero, so a stabiliser skipped when the overall max is small gives 0/0). The plain distributions stay
exactly as the lecture's demo 4 draws them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

F32 = np.float32

#: The share of rows of each input that get a structure (the rest stay plain draws).
STRUCTURED_SHARE = (0.25, 0.4)


@dataclass(frozen=True)
class Limits:
    """What a structure may do to one (task kind, distribution): log10 scale range, offset range, and the
    structures allowed."""

    scale: tuple[float, float]
    offset: tuple[float, float] | None
    kinds: tuple[str, ...]
    large: tuple[float, float] | None = None  # softmax: the large logit's height above the row max


_COMMON = ("scaled", "smooth", "repeated", "sparse")


def limits(kind: str, dist: str, name: str) -> Limits:
    """The structure table: one entry per task kind and distribution (``name``: the input)."""
    lim = _limits(kind, dist, name)
    if dist != "uniform":  # uniform is "small values only": a few large ones would make it another distribution
        lim = Limits(lim.scale, lim.offset, lim.kinds + ("outliers",), lim.large)
    if dist == "uniform" and kind != "softmax":  # uniform stays inside (-1, 1): structures only shrink
        lim = Limits((lim.scale[0], min(lim.scale[1], 0.0)), None, lim.kinds, lim.large)
    return lim


def _limits(kind: str, dist: str, name: str) -> Limits:
    signed = dist in ("normal", "laplace", "uniform", "edge", "offset")
    relu = ("relu",) if signed and dist != "offset" else ()
    if kind == "softmax":
        if dist == "lognormal":
            return Limits((-2.0, 2.3), (0.0, 500.0), _COMMON + ("offset", "one_large"), (50.0, 200.0))
        if dist == "offset":  # keep the overall max small (see _softmax_offset)
            return Limits((-2.0, 0.7), None, _COMMON)
        top = {"normal": 1.1, "laplace": 0.8, "uniform": 1.7}.get(dist, 0.5)  # row max below ~55
        return Limits((-2.3, top), (-25.0, 20.0), _COMMON + relu + ("offset", "one_large"), (15.0, 45.0))
    if kind == "layernorm":
        if dist == "offset":
            return Limits((-0.3, 0.6), (-500.0, 2000.0), _COMMON + ("offset",))
        lo = -1.0 if dist == "uniform" else -1.25  # row std >= ~0.056: var >= 300 eps (a missing eps moves z by
        # 0.17 %, an eps 10x too large by 1.7 % and the normalised rows by 3 %: a hard-coded eps must be the task's)
        return Limits((lo, 2.0), (-10.0, 10.0) if signed else (0.0, 10.0), _COMMON + relu + ("offset",))
    if kind == "gelu":
        if dist == "uniform":
            return Limits((-3.0, 0.0), None, _COMMON + relu)
        if dist == "lognormal":  # heavy-tailed rows: not below 0.1, or a row's RMS is far below its largest
            return Limits((-1.0, 0.6), None, _COMMON)  # values (x*sigmoid(1.702x) is 1.4 % off at 0.5)
        if dist == "offset":
            return Limits((0.0, 0.6), (-500.0, 0.0), ("scaled", "smooth", "repeated", "offset"))
        return Limits((-3.0, 0.6), None, _COMMON + relu)
    if kind == "attention":
        if dist == "offset":
            return Limits((-0.3, 0.3), None, ("scaled", "repeated", "smooth"))
        extra = ("spread",) if name == "q" else ()
        return Limits((-1.3, 0.6) if name != "v" else (-2.0, 1.0), None, ("scaled", "repeated", "smooth") + extra)
    if kind == "diag":
        if dist == "offset":
            return Limits((-0.3, 0.3), None, ("scaled", "repeated", "smooth"))
        return Limits((-4.0, 1.0), None, _COMMON + relu)
    # GEMM inputs (matmul_sum, gemm + epilogue, the MLP block)
    if dist == "offset":
        return Limits((-0.3, 0.6), (-500.0, 0.0), ("scaled", "smooth", "repeated", "offset", "low_rank"))
    return Limits((-2.0, 1.0), (-3.0, 3.0) if signed and dist != "uniform" else None,
                  _COMMON + relu + ("low_rank",) + (("offset",) if signed and dist != "uniform" else ()))


def structure_input(rng: np.random.Generator, kind: str, dist: str, name: str, x: np.ndarray) -> None:
    """Give a random share of ``x``'s rows (along the last axis; a vector's entries) their structures, in
    place. ``x`` holds a plain draw of ``dist``."""
    lim = limits(kind, dist, name)
    if kind == "softmax" and dist == "offset":
        _softmax_offset(rng, x)
    rows = x.reshape(-1, x.shape[-1]) if x.ndim > 1 else x.reshape(-1, 1)
    n = rows.shape[0]
    if n < 8:  # too few rows to share out structures; the hazards still go in
        _hazards(rng, kind, dist, name, rows)
        return
    share = rng.uniform(*STRUCTURED_SHARE)
    picked = rng.permutation(n)[: int(share * n)]
    kinds = rng.integers(0, len(lim.kinds), picked.size)
    for k, kname in enumerate(lim.kinds):
        idx = np.sort(picked[kinds == k])
        if idx.size:
            _APPLY[kname](rng, rows, idx, lim, dist)
    _hazards(rng, kind, dist, name, rows)
    if dist == "uniform" and kind != "softmax":  # a low-rank block's 5 % noise may step just outside
        np.clip(x, F32(-1), F32(1 - 2.0**-24), out=x)
    elif dist in ("lognormal", "exponential"):  # ... or below zero
        np.maximum(x, F32(0), out=x)


#: How many rows (at least, at most) get one value that puts an exponential beyond float32's range (exp(x)
#: overflows above 88.7) on the distributions that have no such rows of their own (``_hazards``).
#: Few on purpose: a detector that reads a sample of columns (the first, every 16th) meets one of them with
#: the chance its sample has of hitting one cell, so it takes its unstabilised path and overflows.
EXP_HAZARD_ROWS = (1, 4)


def _hazards(rng: np.random.Generator, kind: str, dist: str, name: str, rows: np.ndarray) -> None:
    """Every distribution carries, in a few rows, the hazard some other distribution is for, so that no
    distribution, the timed one least of all, is one where a kernel that tells them apart may skip a safe
    step (12-04 audit). Layer norm: rows far from zero with a small spread (``_far_from_zero``). Softmax and
    attention: a few rows of every distribution a softmax is timed or checked on get one value whose exponential
    overflows float32 unless the row's max is subtracted first: a softmax logit of 100-400, an attention
    query coordinate of 400-1200 (with keys of unit scale its scores reach the hundreds), in 1-4 rows.
    Without them each distribution kept its logits where an unstabilised exp fits or made them overflow
    everywhere (lognormal, offset), so a kernel could tell the families apart from a column of values and
    skip the max pass on the safe ones, the timed normal draws among them (12-04 audit: softmax 1.9x,
    attention 1.4x, both "correct"). One value at a random column of a few random rows: a detector must read
    every value to find them, which costs what the max pass does (``EXP_HAZARD_ROWS``). Drawn after every
    other structure of this input: its other rows are what they were (inputs structured after it, attention's
    k and v after q, draw from the generator where it is left). Not on uniform attention inputs (inside
    (-1, 1) their scores are bounded by the head size: no exponential can overflow). Softmax: every input of
    the task (the lecture's have one, the logits)."""
    if kind == "softmax":
        if dist in ("lognormal", "offset"):  # their own: logits in the hundreds, or rows far below zero
            return
        lo, hi, signed = 100.0, 400.0, False
    elif kind == "attention" and name == "q":
        if dist in ("offset", "uniform"):  # offset: queries around 1000 already; uniform: bounded
            return
        lo, hi, signed = 400.0, 1200.0, dist not in ("lognormal", "exponential")  # positive ones stay positive
    elif kind == "layernorm":
        if dist in ("offset", "uniform"):  # offset: its own; uniform: inside (-1, 1), no cancellation
            return
        return _far_from_zero(rng, rows, signed=dist not in ("lognormal", "exponential"))
    else:
        return
    n, L = rows.shape
    m = min(n, int(rng.integers(EXP_HAZARD_ROWS[0], EXP_HAZARD_ROWS[1] + 1)))
    idx = rng.choice(n, m, replace=False)
    cols = rng.integers(0, L, m)
    vals = rng.uniform(lo, hi, m)
    if signed:
        vals *= np.where(rng.random(m) < 0.5, -1.0, 1.0)
    rows[idx, cols] = vals.astype(F32)


#: Layer norm's rows far from zero: their centres, log-uniform in [10, 3000] either side of zero (a continuum:
#: a path chosen by a row's distance from zero has no gap to hide in), and their spreads (the variance stays
#: above the 300 eps every row keeps).
FAR_CENTRE = (10.0, 3000.0)
FAR_SPREAD = (0.056, 0.1)
FAR_ROWS = (4, 16)


def _far_from_zero(rng: np.random.Generator, rows: np.ndarray, signed: bool) -> None:
    """Layer norm's hazard on every distribution that lacks it (the offset distribution's, in 4-16 rows): a row
    10-3000 from zero with a spread of 0.056-0.1, where E[x^2] - E[x]^2 in float32 loses the variance once the
    centre passes ~25 (its error grows as (centre / spread)^2). Without them a one-pass variance, taken where a
    column of values said "not offset" (12-04 audit) or on the rows less than 150 from zero (the second
    12-04 audit: no row sat between 10 and 200), was judged correct. ``signed``: on either side of zero (else
    above it: a positive distribution's rows stay positive)."""
    n, L = rows.shape
    if L < 8:
        return
    m = min(n, int(rng.integers(FAR_ROWS[0], FAR_ROWS[1] + 1)))
    idx = rng.choice(n, m, replace=False)
    centre = 10.0 ** rng.uniform(*np.log10(FAR_CENTRE), (m, 1))
    if signed:
        centre *= np.where(rng.random((m, 1)) < 0.5, -1.0, 1.0)
    spread = rng.uniform(*FAR_SPREAD, (m, 1))
    r = rows[idx].astype(np.float64)
    r -= r.mean(axis=1, keepdims=True)
    std = r.std(axis=1, keepdims=True)
    varied = std[:, 0] > 0  # a constant row (edge's) stays as it is: its spread cannot be set
    rows[idx[varied]] = (centre + r * (spread / np.where(std > 0, std, 1.0)))[varied].astype(F32)


def _softmax_offset(rng: np.random.Generator, x: np.ndarray) -> None:
    """Softmax on offset: most rows 500-1500 below zero (logits far from zero), the rest at zero, so the
    overall max is small while rows sit far below it."""
    rows = x.reshape(-1, x.shape[-1])
    far = rng.random(rows.shape[0]) < rng.uniform(0.6, 0.85)
    rows -= F32(1000)  # the plain offset draw is 1000 + N(0, 1)
    rows[far] -= rng.uniform(500, 1500, (int(far.sum()), 1)).astype(F32)


def _scaled(rng: np.random.Generator, rows: np.ndarray, idx: np.ndarray, lim: Limits, dist: str) -> None:
    _scale_rows(rows, idx, (10.0 ** rng.uniform(*lim.scale, (idx.size, 1))).astype(F32), dist)


def _row_base(rows: np.ndarray, idx: np.ndarray, dist: str) -> np.ndarray | np.float32:
    """What scaling keeps of each row of ``idx`` (keepdims): its mean on offset (the offset), else 0."""
    return rows[idx].mean(axis=1, keepdims=True, dtype=np.float64).astype(F32) if dist == "offset" else F32(0)


def _scale_rows(rows: np.ndarray, idx: np.ndarray, s: np.ndarray, dist: str,
                base: np.ndarray | np.float32 | None = None) -> None:
    """The rows of ``idx`` times ``s`` (one factor per row); on offset their deviation, the offset kept."""
    if dist == "offset":
        base = _row_base(rows, idx, dist) if base is None else base
        rows[idx] = base + (rows[idx] - base) * s
    else:
        rows[idx] *= s


def _offset(rng: np.random.Generator, rows: np.ndarray, idx: np.ndarray, lim: Limits, dist: str) -> None:
    if lim.offset is None:
        return _scaled(rng, rows, idx, lim, dist)
    rows[idx] += rng.uniform(*lim.offset, (idx.size, 1)).astype(F32)


def _smooth(rng: np.random.Generator, rows: np.ndarray, idx: np.ndarray, lim: Limits, dist: str) -> None:
    """Runs of 2-8 consecutive rows after each picked row, each a convex mix close to the picked row."""
    n = rows.shape[0]
    for i in idx[: max(1, idx.size // 3)]:
        run = int(rng.integers(2, 9))
        j = np.arange(i + 1, min(n, i + 1 + run))
        if j.size:
            w = rng.uniform(0.03, 0.25, (j.size, 1)).astype(F32)
            rows[j] = (1 - w) * rows[i] + w * rows[j]


def _repeated(rng: np.random.Generator, rows: np.ndarray, idx: np.ndarray, lim: Limits, dist: str) -> None:
    """Half exact copies of another row; half near-copies, whose values at 2-4 scattered columns are rotated
    among those columns (the row's values and scale stay its source's). A prefix of 16 shared values (the
    first such structure) let a fingerprint of every 16th value through."""
    n, L = rows.shape
    src = rng.integers(0, n, idx.size)
    rows[idx] = rows[src]
    near = idx[rng.random(idx.size) < 0.5] if L >= 8 else idx[:0]
    if near.size:
        k = rng.integers(2, 5, near.size)
        cols = _four_columns(rng, near.size, L)
        for j in (2, 3, 4):  # rotate the first j chosen columns of the rows that chose j
            m = k == j
            if m.any():
                r, c = near[m][:, None], cols[m, :j]
                rows[r, c] = rows[r, np.roll(c, 1, axis=1)]


def _four_columns(rng: np.random.Generator, n: int, L: int) -> np.ndarray:
    """Four random columns of each of ``n`` rows of length ``L`` (distinct where rows are short; on long rows
    a repeat is rare and harmless)."""
    return np.argsort(rng.random((n, L)), axis=1)[:, :4] if L <= 64 else rng.integers(0, L, (n, 4))


def _scattered_columns(rng: np.random.Generator, rows: np.ndarray, idx: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
    """For each row of ``idx``: 1-4 random columns anywhere in the row, as (position in ``idx``, column) per
    chosen cell."""
    L = rows.shape[1]
    if idx.size == 0 or L < 2:
        return idx[:0], idx[:0]
    k = rng.integers(1, 5, idx.size)
    cols = _four_columns(rng, idx.size, L)
    take = np.arange(4)[None, :] < k[:, None]
    return np.broadcast_to(np.arange(idx.size)[:, None], cols.shape)[take], cols[take]


def _outliers(rng: np.random.Generator, rows: np.ndarray, idx: np.ndarray, lim: Limits, dist: str) -> None:
    """The row scaled down by s (log-uniform over the distribution's scale range below 1) except at 1-4
    scattered columns, which keep their plain values pushed 2 further from zero (from the row's offset on
    offset), so that they are large whatever was drawn there."""
    pos, c = _scattered_columns(rng, rows, idx)
    base = _row_base(rows, idx, dist)
    cell_base = base[pos, 0] if dist == "offset" else base
    dev = rows[idx[pos], c] - cell_base
    keep = cell_base + dev + np.where(dev < 0, F32(-2), F32(2))
    lo = lim.scale[0]
    hi = max(lo, min(lim.scale[1], 0.0))
    _scale_rows(rows, idx, (10.0 ** rng.uniform(lo, hi, (idx.size, 1))).astype(F32), dist, base)
    rows[idx[pos], c] = keep


def _sparse(rng: np.random.Generator, rows: np.ndarray, idx: np.ndarray, lim: Limits, dist: str) -> None:
    L = rows.shape[1]
    if L < 8:
        return
    density = rng.uniform(0.1, 0.3, (idx.size, 1))
    rows[idx] *= (rng.random((idx.size, L)) < density).astype(F32)


def _relu(rng: np.random.Generator, rows: np.ndarray, idx: np.ndarray, lim: Limits, dist: str) -> None:
    rows[idx] = np.maximum(rows[idx], F32(0))


def _low_rank(rng: np.random.Generator, rows: np.ndarray, idx: np.ndarray, lim: Limits, dist: str) -> None:
    """Blocks of up to 32 consecutive rows: a rank-3 mix of three of them plus 5 % noise."""
    n = rows.shape[0]
    for i in idx[: max(1, idx.size // 8)]:
        j = np.arange(i, min(n, i + 32))
        if j.size < 4:
            continue
        basis = rows[j[:3]].copy()
        mix = rng.dirichlet(np.ones(3), j.size).astype(F32)  # convex: the value range is kept
        rows[j] = mix @ basis + F32(0.05) * (rows[j] - rows[j].mean(axis=1, keepdims=True))


def _one_large(rng: np.random.Generator, rows: np.ndarray, idx: np.ndarray, lim: Limits, dist: str) -> None:
    assert lim.large is not None
    L = rows.shape[1]
    col = rng.integers(0, L, idx.size)
    rows[idx, col] = rows[idx].max(axis=1) + rng.uniform(*lim.large, idx.size).astype(F32)


def _spread(rng: np.random.Generator, rows: np.ndarray, idx: np.ndarray, lim: Limits, dist: str) -> None:
    rows[idx] *= (10.0 ** rng.uniform(-2.5, -1.0, (idx.size, 1))).astype(F32)


_APPLY = {"scaled": _scaled, "offset": _offset, "smooth": _smooth, "repeated": _repeated, "sparse": _sparse,
          "relu": _relu, "low_rank": _low_rank, "one_large": _one_large, "spread": _spread, "outliers": _outliers}


_ACROSS_COLUMNS = ("; every kind: near-copies of rows (2-4 scattered columns rotated), outlier columns (1-4 values "
                   "2 further from zero in a scaled-down row; not on uniform)")

#: One line per structure kind, for the explorer and the README.
NOTES: dict[str, str] = {k: v + _ACROSS_COLUMNS for k, v in {
    "softmax": "rows at temperatures 0.005-200, per-row offsets, one large logit, smooth/repeated/sparse rows, "
               "1-4 rows with one logit of 100-400; offset: logits 500-1500 below zero beside rows at zero",
    "layernorm": "per-row scales (variance 0.01-1e4) and offsets, smooth/repeated/sparse/post-ReLU rows, 4-16 rows "
                 "10-3000 from zero with a spread of 0.056-0.1",
    "gelu": "rows at scales 1e-3-4, smooth/repeated/sparse/post-ReLU rows; offset: per-row offsets and spreads",
    "gemm": "rows at scales 0.01-10, per-row offsets, low-rank-plus-noise blocks, smooth/repeated/sparse/"
            "post-ReLU rows",
    "attention": "queries scaled down to spread attention over many keys, mixed-scale q/k/v rows, repeated "
                 "and smooth rows, 1-4 queries with one coordinate of 400-1200",
    "diag": "diagonal entries at scales 1e-4-10 (some below 1e-3), smooth/repeated/sparse rows of B",
}.items()}
