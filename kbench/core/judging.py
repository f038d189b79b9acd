"""Hardened judging of one trial: informative checks, computed once per trial, applied to every output.

A trial's check must be able to tell the reference from trivial answers. What it can tell depends only
on the trial (its reference output, inputs and params), not on the candidate, so ``trial_facts`` works it
out once and the grader reuses the facts for every candidate of the session (``facts_for`` caches them
next to the grader's cached reference outputs, keyed by the reference array itself):

* **row tolerances**: ``compare``'s per-row absolute tolerance along the task's natural axis;
* **centred checks**: for every slice where the output's constant part dominates (offset inputs:
  outputs near 1000 where the part that depends on the inputs' deviations is O(1), so ``rtol * |ref|``
  allows ±10; a softmax row at a high temperature, nearly 1/L everywhere), the output's deviation from its
  own mean along that axis is judged against a tolerance relative to its spread (``CENTRED_TOL`` of the
  slice's spread, plus rtol of the deviation). Rows are decided one by one; other axes by most of their
  slices, with spreads robust to a minority of slices offset on their own;
* **digits**: no value above ``DIGITS_FLOOR`` of its row's RMS may be off by more than half of itself (zeroed
  tails, int8 grids, values below the tolerance written as 0): none in a small row, at most ``DIGITS_SHARE``
  of the output elsewhere;
* **bias**: each row's best scale against the reference is 1 within ``BIAS_TOL`` (0.7) of rtol on at least
  half the rows (rounding goes both ways; an answer scaled by 0.991 is inside rtol everywhere);
* **property checks** the task's math gives cheaply (softmax rows are non-negative and sum to 1, layer
  norm rows have mean 0 and variance 1 before the affine step, attention outputs lie in the range of v,
  a ReLU scaled by s has the sign of s);
* **predictors**: what simple answers score under those checks — zeros, a constant, the mean along each
  axis, a rank-1 approximation, the output with its constant part removed, half the rows copied from
  their neighbours (the reference computed on a subsample), small values zeroed by an absolute threshold.
  Each must fail (``ruled out``); one that equals the reference to within 1 % of the tolerance is
  ``n/a`` (it is the answer, not a shortcut: a layer norm whose constant part is already 0). The step
  log says which a trial rules out; ``TrialFacts.predictors`` is that as data.

``judge`` then runs every check on an output and records every outcome (``Comparison.checks``): the
exact checks and closeness (``compare``), digits, the centred checks, the properties. A failure on tolerance
checks only gets the float64 second opinion when the caller passes ``exact`` (a function returning the
float64 reference, asked only then).
"""

from __future__ import annotations

import math
import threading
import time
import weakref
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Literal

import numpy as np

from kbench.core.compare import (BLOCK, FLOAT32_NOISE_FACTOR, SMALL_ROW_FACTOR, Check, Comparison, _atol_of_scale,
                                 compare, reference_noise, row_atol, row_axis, row_rms, row_squares)

#: Centred tolerance: this fraction of the slice's RMS deviation from its mean. A half: a shortcut that
#: gets the constant part right and the deviations wrong is off by about one spread; an honest float16
#: GELU on offset inputs (values near 1000 rounded to 0.5) is off by at most a quarter.
CENTRED_TOL = 0.5
#: ... and never below this fraction of the slice's magnitude (float32 rounding of a near-constant slice).
CENTRED_FLOOR = 1e-4
#: Property tolerances, relative: row sums of a softmax within 1e-3 of 1 (an honest float32 kernel is at
#: ~1e-6; dropping 0.1 % of the mass is not rounding).
SUM_TOL = 1e-3
#: A predictor that stays within this fraction of the tolerance everywhere *is* the reference ("n/a").
SAME_AS_REF = 0.01

Outcome = Literal["ruled out", "n/a", "passes"]


@dataclass(frozen=True)
class Centred:
    """One centred check: deviations from the mean along ``axis`` (keepdims arrays, float32)."""

    axis: int
    mean: np.ndarray = field(repr=False)  # ref's mean along axis
    tol: np.ndarray = field(repr=False)  # the slice's absolute tolerance for its deviations (inf: not checked)
    rows: np.ndarray | None = field(default=None, repr=False)  # rows along the last axis: the checked ones

    @property
    def name(self) -> str:
        return f"centred:axis{self.axis}"


@dataclass(frozen=True)
class Predictor:
    name: str
    outcome: Outcome
    caught_by: tuple[str, ...] = ()  # the checks it fails


@dataclass(frozen=True)
class TrialFacts:
    """What one trial's checks are; computed once per trial (``trial_facts``), reused for every output."""

    task: str
    axis: int  # the natural axis: rows run along it
    atol: float
    rtol: float
    tol: np.ndarray | None = field(repr=False)  # per-row absolute tolerance (keepdims along ``axis``); None:
    # compare computes it (facts made by hand, in tests)
    centred: tuple[Centred, ...] = ()
    properties: tuple[str, ...] = ()
    predictors: tuple[Predictor, ...] = ()
    prop_state: dict = field(default_factory=dict, repr=False)  # PREPARE's results
    cost_s: float = 0.0  # what computing these facts took (once per trial)
    centred_axes: tuple[int, ...] = ()  # the other axes decided to be centred-checked (``_centred_axes``)
    # every row's RMS (keepdims along ``axis``, float32): the digits floor and the bias check's scale; None:
    # facts made by hand, where only small rows (known from ``tol``) are judged for digits, and none for bias
    rms: np.ndarray | None = field(default=None, repr=False)
    # every row's sum of squares (float32, one per row, rows along the last axis only; None: other rows): the
    # bias check's denominator, computed once with the facts instead of once per judged output
    row_sq: np.ndarray | None = field(default=None, repr=False)

    def ruled_out(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.predictors if p.outcome == "ruled out")

    def not_ruled_out(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.predictors if p.outcome == "passes")

    def summary(self) -> str:
        """One line for the step log: what this trial's checks rule out."""
        parts = [f"rules out {', '.join(self.ruled_out()) or 'nothing'}"]
        na = [p.name for p in self.predictors if p.outcome == "n/a"]
        if na:
            parts.append(f"n/a (no shortcut here): {', '.join(na)}")
        bad = self.not_ruled_out()
        if bad:
            parts.append(f"does NOT rule out {', '.join(bad)}")
        if self.centred:
            parts.append("centred along axis " + ", ".join(str(c.axis) for c in self.centred))
        if self.properties:
            parts.append("properties: " + ", ".join(self.properties))
        return "; ".join(parts)


# ------------------------------------------------------------------------------------------ properties

PropertyFn = Callable[..., Check]  # (out, ref, x, params, rtol, state) -> Check


def _nonnegative(out: np.ndarray, ref: np.ndarray, x: dict, params: dict, rtol: float,
                 state: object = None) -> Check:
    lo = float(out.min()) if out.size else 0.0
    ok = lo >= 0  # -0.0 counts as 0; NaN fails (and is reported by the finite check)
    return Check("nonnegative", ok, "" if ok else f"a probability of {lo:.3g}")


def _rows_sum_to_one(out: np.ndarray, ref: np.ndarray, x: dict, params: dict, rtol: float,
                     state: object = None) -> Check:
    with np.errstate(all="ignore"):
        L = out.shape[-1] if out.ndim else 1
        if out.dtype == np.float32 and out.ndim and out.size and out.flags.c_contiguous and L <= _FAST_SUM_ROW \
                and float(out.min()) >= 0:
            # Row sums by a float32 BLAS matrix-vector product (a tenth of a float64 reduction's time, judged on
            # every timed output). For nonnegative rows of at most _FAST_SUM_ROW values its rounding is below
            # L * 2**-24 * sum < SUM_TOL / 2: accepting at SUM_TOL / 2 accepts only rows whose exact sum is within
            # SUM_TOL. Signed rows (cancellation), long rows, and anything near the limit or not finite are summed
            # again in float64 below, for the verdict and its words.
            fast = out.reshape(-1, L) @ np.ones(L, np.float32)
            worst = float(np.abs(fast - np.float32(1)).max())  # max, not fmax: a NaN row must make it NaN
            if worst <= SUM_TOL / 2:  # False for NaN
                return Check("rows_sum_to_one", True, f"worst |sum - 1| {worst:.2g}")
        s = np.add.reduce(out, axis=-1, dtype=np.float64)
        dev = np.abs(s - 1.0)
        worst = float(np.fmax.reduce(dev, axis=None)) if dev.size else 0.0
        nan = not np.isfinite(s).all()
    ok = not nan and worst <= SUM_TOL
    if ok:
        return Check("rows_sum_to_one", True, f"worst |sum - 1| {worst:.2g}")
    i = int(np.argmax(np.where(np.isfinite(dev), dev, np.inf)))
    where = np.unravel_index(i, s.shape)
    return Check("rows_sum_to_one", False, f"row {list(map(int, where))} sums to {float(s.flat[i]):.6g}, not 1")


#: The longest row ``_rows_sum_to_one`` sums in float32 (its rounding bound, 8192 * 2**-24 ~ 4.9e-4, stays
#: below SUM_TOL / 2).
_FAST_SUM_ROW = 8192


#: Elements per row block of ``_row_moments`` (256 KiB of float32: in L2 beside its inputs).
_MOMENT_BLOCK = 1 << 16


def _row_moments(y: np.ndarray, params: dict) -> tuple[np.ndarray, np.ndarray]:
    """Row mean and variance of z = (y - beta) / gamma over the features where |gamma| >= 0.25 (float32
    passes, sums by BLAS products with the feature mask)."""
    gamma = np.broadcast_to(np.asarray(params.get("gamma", 1.0), np.float32), y.shape[-1:])
    beta = np.broadcast_to(np.asarray(params.get("beta", 0.0), np.float32), y.shape[-1:])
    keep = (np.abs(gamma) >= 0.25).astype(np.float32)
    identity = bool((gamma == 1).all() and (beta == 0).all())  # the default parameters: z is y itself
    with np.errstate(divide="ignore"):  # a gamma of 0 is dropped below
        inv = np.where(keep > 0, np.float32(1) / gamma, np.float32(0)).astype(np.float32)  # dropped features: 0
    n = max(float(keep.sum()), 1.0)
    L = y.shape[-1] if y.ndim else 1
    y2 = y.reshape(-1, L)
    s1 = np.empty(y2.shape[0], np.float32)
    s2 = np.empty(y2.shape[0], np.float32)
    step = max(1, _MOMENT_BLOCK // max(L, 1))

    # Row blocks that stay in cache, as few passes as the parameters allow (the timed outputs of layer norm are
    # judged on every pair): a shift and a scale (none for the default parameters; a dropped feature scaled to
    # 0), then the row sums and the row sums of squares as BLAS products. One thread, as compare's scan.
    z = np.empty((min(step, max(y2.shape[0], 1)), L), np.float32)
    for a in range(0, y2.shape[0], step):
        b = min(y2.shape[0], a + step)
        if identity:
            zb = y2[a:b]
        else:
            zb = z[: b - a]
            np.subtract(y2[a:b], beta, out=zb, dtype=np.float32)
            zb *= inv
        np.matmul(zb, keep, out=s1[a:b])
        s2[a:b] = (zb[:, None, :] @ zb[:, :, None]).reshape(-1)  # row dots (batched BLAS); dropped: 0
    shape = y.shape[:-1]
    mean = s1.astype(np.float64).reshape(shape) / n
    var = s2.astype(np.float64).reshape(shape) / n - mean * mean
    return mean, var


#: A row whose normalised variance var/(var + eps) is below this (input variance under eps/19: a constant row)
#: is judged against it, not against its own: its z is rounding noise in any kernel, the reference's included
#: (12-03 audit: float64 and fused layer norms failed edge's constant rows, variance "off by 2.7").
NORMALISED_VAR_FLOOR = 0.05


def _normalised_rows(out: np.ndarray, ref: np.ndarray, x: dict, params: dict, rtol: float,
                     state: object = None) -> Check:
    """Layer norm: z = (out - beta) / gamma has, in every row, the mean and variance the normalised input
    has (0 and var/(var + eps), over all features). Features where |gamma| < 0.25 are left out (dividing by
    a small gamma amplifies the closeness rule's allowance); then the row moments of the candidate's z are
    compared with the reference's z over the same features (still 0 and ~1 when none is left out). The
    reference's moments are part of the trial's facts (``state``)."""
    with np.errstate(all="ignore"):
        m_out, v_out = _row_moments(out, params)
        m_ref, v_ref = state if state is not None else _row_moments(ref, params)  # type: ignore[misc]
        bad_mean = float(np.fmax.reduce(np.abs(m_out - m_ref), axis=None))
        bad_var = float(np.fmax.reduce(np.abs(v_out - v_ref) / np.maximum(v_ref, NORMALISED_VAR_FLOOR), axis=None))
        finite = bool(np.isfinite(m_out).all() and np.isfinite(v_out).all())
    ok = finite and bad_mean <= rtol and bad_var <= 2 * rtol
    return Check("normalised_rows", ok, f"worst row mean off by {bad_mean:.2g}, row variance by {bad_var:.2g}"
                 + ("" if ok else " (rows before the affine step must have mean 0 and variance 1)"))


def _within_range_of_v(out: np.ndarray, ref: np.ndarray, x: dict, params: dict, rtol: float,
                       state: object = None) -> Check:
    """Attention: each output is a convex combination of v's rows, so it lies within v's range per (head, d)."""
    v = x["v"]
    with np.errstate(all="ignore"):
        lo, hi = v.min(axis=-2, keepdims=True), v.max(axis=-2, keepdims=True)
        slack = rtol * (hi - lo) + 1e-6 * np.maximum(np.abs(lo), np.abs(hi))
        below = float(np.fmax.reduce((lo - slack - out), axis=None))
        above = float(np.fmax.reduce((out - hi - slack), axis=None))
        finite = bool(np.isfinite(out).all())
    ok = finite and below <= 0 and above <= 0
    return Check("within_range_of_v", ok, "" if ok else
                 f"outputs leave the range of v by {max(below, above):.3g} (a weighted mean of v cannot)")


def _sign_of_scale(out: np.ndarray, ref: np.ndarray, x: dict, params: dict, rtol: float,
                   state: object = None) -> Check:
    s = float(params.get("scale", 1.0))
    with np.errstate(all="ignore"):
        worst = float(np.fmax.reduce(-(out * math.copysign(1.0, s)), axis=None)) if out.size else 0.0
    ok = worst <= 0 and not math.isnan(worst)
    return Check("sign_of_scale", ok, "" if ok else f"relu(h) * scale must have the sign of scale ({s:+.3g})")


#: What a property needs from the reference, computed once per trial with the facts.
PREPARE: dict[str, Callable[[np.ndarray, dict, dict], object]] = {
    "normalised_rows": lambda ref, x, params: _row_moments(ref, params),
}

PROPERTIES: dict[str, PropertyFn] = {
    "nonnegative": _nonnegative,
    "rows_sum_to_one": _rows_sum_to_one,
    "normalised_rows": _normalised_rows,
    "within_range_of_v": _within_range_of_v,
    "sign_of_scale": _sign_of_scale,
}


# ------------------------------------------------------------------------------------------ centred

def _robust_spread(ref: np.ndarray, a: int, rms: np.ndarray) -> np.ndarray:
    """Each slice's spread along axis ``a``: its RMS deviation, or 1.4826 median absolute deviations (the
    same for normal values) where that is less, the median taken over at most ROBUST_SAMPLE evenly spaced
    entries of the slice. A minority of entries with offsets of their own (the offset trial's rows at
    -500..0 below the rest) make a column's RMS thousands while most of its entries sit within one of each
    other: judged at half the RMS, the column's deviations could be dropped entirely (a row's mean through W
    in place of the row, 12-02 audit); the median is not moved by them."""
    n = ref.shape[a]
    idx = np.linspace(0, n - 1, min(n, ROBUST_SAMPLE)).astype(int)
    with np.errstate(all="ignore"):
        s = np.take(ref, idx, axis=a).astype(np.float32)  # a decision and a spread: float32 sorts twice as fast
        # Over the nonzero entries: a ReLU column that is mostly exact zeros has a median deviation of 0, which
        # says nothing of how its active entries spread (an honest GEMM + ReLU then failed on rounding alone).
        # A slice whose sampled entries are all zero (a column active in one row of 512) keeps its RMS.
        zero = s == 0
        seen = ~zero.all(axis=a, keepdims=True)
        s[zero & seen] = np.nan
        s[zero & ~seen] = 0.0  # no all-NaN slice (nanmedian warns on one); its MAD is dropped below
        med = _nan_median(s, a)
        mad = np.where(seen, _nan_median(np.abs(s - med), a), np.nan)
    return np.fmin(rms, 1.4826 * mad)


def _nan_median(s: np.ndarray, a: int) -> np.ndarray:
    """The median along ``a`` of the entries that are not NaN (keepdims; every slice has one): a sort of each
    slice (``np.nanmedian`` goes through masked arrays: ~4 ms on a 64 x 1024 sample, judged per timed output)."""
    t = np.sort(np.ascontiguousarray(np.moveaxis(s, a, -1)), axis=-1)  # NaN sorts last; contiguous: 2x faster
    n = np.count_nonzero(~np.isnan(t), axis=-1)[..., None]
    lo = np.take_along_axis(t, np.maximum((n - 1) // 2, 0), axis=-1)
    hi = np.where(n % 2 == 1, lo, np.take_along_axis(t, np.minimum(n // 2, t.shape[-1] - 1), axis=-1))
    return np.moveaxis((lo + hi) / 2, -1, a)


#: Entries of a slice the robust spread looks at.
ROBUST_SAMPLE = 64


def _centred_tol(ref: np.ndarray, a: int, mu: np.ndarray, rms: np.ndarray, robust: bool) -> np.ndarray:
    """The centred tolerance of each slice along ``a``: CENTRED_TOL of its spread, never below CENTRED_FLOOR
    of its magnitude."""
    spread = _robust_spread(ref, a, rms) if robust else rms
    return np.maximum(CENTRED_TOL * spread, CENTRED_FLOOR * (np.abs(mu) + rms))


def _centred_axes(ref: np.ndarray, tol: np.ndarray | float, axis: int, rtol: float) -> list[int]:
    """The axes (length > 1) other than the natural one where the plain tolerance at a slice's mean value is
    looser than the centred tolerance of its deviations would be, in most slices (one-pass moments, robust
    spreads, on a sample: ``_decision_sample``; a decision, not a tolerance)."""
    axes = []
    with np.errstate(all="ignore"):
        if np.ndim(tol) == 0:  # the rows' tolerances were not given
            tol = row_atol(ref, float(tol), rtol, axis)
        typical_tol = float(np.median(tol))
        for a in range(ref.ndim):
            if ref.shape[a] < 2 or a == axis:
                continue
            s = _decision_sample(ref, a)
            mu = s.mean(axis=0, keepdims=True, dtype=np.float64)
            sq = np.square(s, dtype=np.float64).mean(axis=0, keepdims=True)
            rms = np.sqrt(np.maximum(sq - mu * mu, 0.0))
            plain = typical_tol + rtol * np.abs(mu)
            if float(np.mean(plain > _centred_tol(s, 0, mu, rms, True))) > 0.5:
                axes.append(a)
    return axes


#: The centred decision along an axis looks at this many entries of each slice, in this many slices (it is a
#: majority over slices).
DECIDE_ROWS = 64
DECIDE_SLICES = 256


def _decision_sample(ref: np.ndarray, a: int) -> np.ndarray:
    """Slices along axis ``a`` as the columns of a 2-d array: at most DECIDE_ROWS evenly spaced entries of
    each, in at most DECIDE_SLICES evenly spaced slices. Reads ~16 K values whatever the output's size (on
    every slice of an (8, 512, 64) attention output the decision took 7 ms, more than the rest of its
    facts; on a 2048 x 1024 softmax 1 ms)."""
    n = ref.shape[a]
    s = np.take(ref, np.linspace(0, n - 1, min(n, DECIDE_ROWS)).astype(int), axis=a)
    s = np.moveaxis(s, a, 0).reshape(s.shape[a], -1)
    m = s.shape[1]
    if m > DECIDE_SLICES:
        s = s[:, np.linspace(0, m - 1, DECIDE_SLICES).astype(int)]
    return s


#: Elements per row block of ``_mean_and_square_dev`` (in L2 with its scratch).
_STATS_BLOCK = 1 << 16


def _mean_and_square_dev(ref: np.ndarray, a: int) -> tuple[np.ndarray, np.ndarray]:
    """(the mean along axis ``a`` rounded to float32, the mean square deviation from it in float64), keepdims,
    sums in float64. A 2-d output in row blocks that stay in cache (a fresh full-size deviation array costs
    its page faults again on every timed output); other shapes whole."""
    if ref.ndim != 2 or ref.size <= _STATS_BLOCK:
        mu32 = ref.mean(axis=a, keepdims=True, dtype=np.float64).astype(np.float32)
        dev = ref - mu32
        np.square(dev, out=dev)
        return mu32, dev.mean(axis=a, keepdims=True, dtype=np.float64)
    R, L = ref.shape
    step = max(1, _STATS_BLOCK // max(L, 1))
    blocks = [slice(s, min(R, s + step)) for s in range(0, R, step)]
    scratch = np.empty((min(step, R), L), np.float32)
    if a == 1:  # per row: each block's rows are whole, so their sums are the same as over the whole array
        mu32 = np.empty((R, 1), np.float32)
        ms = np.empty((R, 1), np.float64)
        for b in blocks:
            mu32[b] = ref[b].mean(axis=1, keepdims=True, dtype=np.float64)
            d = scratch[: b.stop - b.start]
            np.subtract(ref[b], mu32[b], out=d)
            np.square(d, out=d)
            ms[b] = d.mean(axis=1, keepdims=True, dtype=np.float64)
        return mu32, ms
    acc = np.zeros((1, L), np.float64)
    for b in blocks:
        acc += ref[b].sum(axis=0, keepdims=True, dtype=np.float64)
    mu32 = (acc / R).astype(np.float32)
    acc[...] = 0
    for b in blocks:
        d = scratch[: b.stop - b.start]
        np.subtract(ref[b], mu32, out=d)
        np.square(d, out=d)
        acc += d.sum(axis=0, keepdims=True, dtype=np.float64)
    return mu32, acc / R


def _centred_candidates(ref: np.ndarray, tol: np.ndarray | float, axis: int, rtol: float,
                        squares: tuple[np.ndarray, np.ndarray] | None = None,
                        extremes: tuple[float, float] | None = None,
                        decided: tuple[int, ...] | None = None) -> tuple[tuple[Centred, ...], tuple[int, ...]]:
    """The centred checks of a trial. Along the natural axis, every row where the plain tolerance at the row's
    mean is looser than the row's centred tolerance (a row answered by its mean alone would pass closeness:
    a softmax row at a high temperature, an offset row), decided row by row: a few flat rows among thousands
    are each a row where only the deviations say anything. Along each other axis where that holds for most
    slices (``_centred_axes``, decided on a sample of slices and entries), every slice where it holds,
    with robust spreads. Slices where it does not hold get an infinite tolerance: there closeness is the
    tighter check. Means and spreads exact, over every slice. ``squares`` (``row_squares``) and ``extremes``
    (max, min): what the caller computed already; ``decided``: the other axes, when an earlier output of the
    same kind decided them. Returns the checks and the other axes decided."""
    out = []
    with np.errstate(all="ignore"):
        others = tuple(decided) if decided is not None else tuple(_centred_axes(ref, tol, axis, rtol))
        axes = ([axis] if ref.shape[axis] > 1 else []) + list(others)
        if axes:
            hi, lo = extremes if extremes is not None else (float(ref.max()), float(ref.min()))  # no full-size |ref|
            top = math.nan if math.isnan(hi) or math.isnan(lo) else max(abs(hi), abs(lo))
            floor = np.float32(1e-8 * max(top, 1e-30))
        for a in axes:
            if a == axis == ref.ndim - 1 and ref.ndim >= 2 and np.ndim(tol) > 0:
                cen = _centred_rows(ref, np.asarray(tol), rtol, floor, squares)
                if cen is not None:
                    out.append(cen)
                continue
            mu32, ms = _mean_and_square_dev(ref, a)
            rms = np.sqrt(ms)
            # robust on the natural axis too: an output that is one slice along it (matmul_sum's (512, 1)) has
            # the offset trial's minority of rows at -500..0 in that slice, whose RMS let the deviations go (12-03)
            centred_tol = np.maximum(_centred_tol(ref, a, mu32, rms, True), floor)
            if a == axis and np.ndim(tol) > 0:
                plain = np.asarray(tol, np.float64) + rtol * np.abs(mu32)
            else:
                plain = float(np.median(tol)) if np.ndim(tol) > 0 else float(tol)
                plain = plain + rtol * np.abs(mu32)
            engaged = plain > centred_tol
            if not engaged.any():
                continue
            out.append(Centred(a, mu32, np.where(engaged, centred_tol, np.inf).astype(np.float32)))
    return tuple(out), others


def _centred_rows(ref: np.ndarray, tol: np.ndarray, rtol: float, floor: np.float32,
                  squares: tuple[np.ndarray, np.ndarray] | None = None) -> Centred | None:
    """The centred check of the rows along the last axis, decided row by row. Float32 BLAS row sums and sums
    of squares say which rows could be engaged (generously: any row whose estimate is near the line, or whose
    spread is too small beside its mean for the estimate to be trusted); their exact moments decide. A softmax
    output of 2048 rows has a few such rows: the rest cost two BLAS passes, not a float64 pass."""
    L = ref.shape[-1]
    r2 = ref.reshape(-1, L)
    tol2 = tol.reshape(-1, 1).astype(np.float64)
    with np.errstate(all="ignore"):
        s1 = (r2 @ np.ones(L, np.float32)).astype(np.float64)
        sq = (squares[0] if squares is not None else np.einsum("ij,ij->i", r2, r2)).astype(np.float64)
        mu = s1 / L
        ms = sq / L
        var = np.maximum(ms - mu * mu, 0.0)
        plain = tol2[:, 0] + rtol * np.abs(mu)
        maybe = (plain > 0.4 * CENTRED_TOL * np.sqrt(var)) | (var <= 1e-4 * ms) | ~np.isfinite(ms)
        idx = np.flatnonzero(maybe)
        if not idx.size:
            return None
        mu32_c, ms_c = _mean_and_square_dev(r2[idx], 1)
        rms_c = np.sqrt(ms_c)
        ctol = np.maximum(_centred_tol(r2[idx], 1, mu32_c, rms_c, False), floor)
        engaged = (tol2[idx] + rtol * np.abs(mu32_c)) > ctol
        if not engaged.any():
            return None
        mean = mu.astype(np.float32).reshape(-1, 1)
        mean[idx] = mu32_c
        full_tol = np.full((r2.shape[0], 1), np.inf, np.float32)
        full_tol[idx] = np.where(engaged, ctol, np.inf)
    shape = ref.shape[:-1] + (1,)
    rows = idx[engaged[:, 0]]
    return Centred(ref.ndim - 1, mean.reshape(shape), full_tol.reshape(shape),
                   rows if rows.size <= r2.shape[0] // 2 else None)


def _centred_errors(out: np.ndarray, ref: np.ndarray, cen: Centred, rtol: float) -> tuple[np.ndarray, np.ndarray]:
    """(|deviation of out - deviation of ref|, its limit), float32, means in float64."""
    mu_o = out.mean(axis=cen.axis, keepdims=True, dtype=np.float64)
    shift = (mu_o - cen.mean).astype(np.float32)
    err = np.subtract(out, ref, dtype=np.float32)
    err -= shift
    np.abs(err, out=err)
    limit = np.subtract(ref, cen.mean)
    np.abs(limit, out=limit)
    limit *= np.float32(rtol)
    limit += cen.tol
    return err, limit


#: Elements per block of ``_centred_ok``'s scan (three float32 blocks stay in L2).
_CENTRED_BLOCK = 1 << 16


def _centred_ok(out: np.ndarray, ref: np.ndarray, cen: Centred, rtol: float) -> bool:
    """Whether ``_centred_errors`` is within its limit everywhere: the same float32 arithmetic, element by
    element, in blocks of whole leading-axis slices that stay in cache (one thread, as compare's scan), so a
    passing output costs no full-size temporaries. Only a failure builds the full arrays, for its words."""
    if cen.rows is not None:  # rows along the last axis, a few of them checked: only those are read
        L = ref.shape[-1]
        a, b = out.reshape(-1, L)[cen.rows], ref.reshape(-1, L)[cen.rows]
        mean, tol = cen.mean.reshape(-1, 1)[cen.rows], cen.tol.reshape(-1, 1)[cen.rows]
        with np.errstate(all="ignore"):
            shift = (a.mean(axis=1, keepdims=True, dtype=np.float64) - mean).astype(np.float32)
            err = np.abs(np.subtract(a, b, dtype=np.float32) - shift)
            limit = np.abs(b - mean) * np.float32(rtol) + tol
            return bool((err <= limit).all())
    mu_o = out.mean(axis=cen.axis, keepdims=True, dtype=np.float64)
    shift = (mu_o - cen.mean).astype(np.float32)
    n0 = ref.shape[0]
    step = max(1, _CENTRED_BLOCK // max(ref.size // max(n0, 1), 1))

    def part(a: np.ndarray, lo: int, hi: int) -> np.ndarray:
        return a if a.shape[0] == 1 else a[lo:hi]

    with np.errstate(all="ignore"):
        for lo in range(0, n0, step):
            hi = min(n0, lo + step)
            err = np.subtract(out[lo:hi], ref[lo:hi], dtype=np.float32)
            err -= part(shift, lo, hi)
            np.abs(err, out=err)
            limit = np.subtract(ref[lo:hi], part(cen.mean, lo, hi))
            np.abs(limit, out=limit)
            limit *= np.float32(rtol)
            limit += part(cen.tol, lo, hi)
            if not bool((err <= limit).all()):
                return False
    return True


def _centred_check(out: np.ndarray, ref: np.ndarray, cen: Centred, rtol: float,
                   exact64: np.ndarray | None = None, noise: np.ndarray | None = None,
                   words: bool = True) -> Check:
    """|(out - mean(out)) - (ref - mean(ref))| <= tol + rtol*|ref - mean(ref)| along ``cen.axis``; against
    the float64 answer (with the reference's rounding as slack) when ``exact64`` is given."""
    with np.errstate(all="ignore"):
        if exact64 is None:
            if ref.ndim and _centred_ok(out, ref, cen, rtol):
                return Check(cen.name, True, "")
            err, limit = _centred_errors(out, ref, cen, rtol)
        else:
            mu_b = exact64.mean(axis=cen.axis, keepdims=True)
            err = np.abs((out - exact64) - (out.mean(axis=cen.axis, keepdims=True, dtype=np.float64) - mu_b))
            limit = cen.tol + rtol * np.abs(exact64 - mu_b)
            if noise is not None:
                limit = limit + 2 * FLOAT32_NOISE_FACTOR * noise  # a deviation carries two roundings
        if bool((err <= limit).all()):
            return Check(cen.name, True, "second opinion: within float32 rounding of the float64 answer"
                         if exact64 is not None else "")
        if not words:
            return Check(cen.name, False)
        over = ~(err <= limit)
        n_over = int(np.count_nonzero(over))
        err = np.where(np.isnan(err), np.inf, err)
        i = int(np.argmax(np.where(over, err, -1.0)))
    where = "[" + ", ".join(str(int(k)) for k in np.unravel_index(i, ref.shape)) + "]"
    t = float(np.broadcast_to(cen.tol, ref.shape).flat[i])
    return Check(cen.name, False, f"deviation from the mean along axis {cen.axis} off by "
                                  f"{float(err.flat[i]):.3g} at {where}, {n_over} of "
                                  f"{ref.size} elements beyond {t:.2g} (the constant part alone does not count)")


# ------------------------------------------------------------------------------------------ digits

#: A row's tolerance (atol, or a small row's own scale: SMALL_ROW_FACTOR * rtol of its RMS) leaves room for
#: answers that keep no digit of the values below it: probabilities below the tolerance written as 0, values
#: rounded to a per-row int8 grid (all of a value below half a step is lost), and in an ordinary row every
#: |value| < 0.9 atol written as 0 (12-03 audit: GELU, layer norm and a ReLU dead zone passed that way, 0.5-1.4 %
#: of the values lost whole). So in every row no element whose reference is above DIGITS_FLOOR of the row's
#: RMS may be off by more than DIGITS_LOST of its own value. An approximation (sigmoid-GELU, float16) is off by
#: a few percent of each value at most; float32 rounding by ~1e-7 of the row's RMS; a value it keeps no digit
#: of, by all of it. Cancellation (layer norm on offset rows) can move a small value by more than half in any
#: float32 kernel: the float64 second opinion, with the reference's rounding and the inputs' sensitivity as
#: slack, forgives that; and outside small rows a few such values are allowed (DIGITS_SHARE).
DIGITS_LOST = 0.5
DIGITS_FLOOR = 1e-3
#: ... but an ordinary row's value can also be the small difference of large terms (a layer norm's gamma*z +
#: beta near 0): a formula that differs from the reference's by 0.2 % of the terms (a missing eps on a row of
#: variance 300 eps) then moves it by more than half. A few such values in a million are that; a shortcut that
#: zeroes what the tolerance allows zeroes 0.5-1.4 % of them. So outside small rows the output fails when more
#: than this share of its values keep no digit (small rows: any one).
DIGITS_SHARE = 1e-4


def _digits_floor(facts: TrialFacts) -> np.ndarray | None:
    """The value each row's elements must exceed to be judged (keepdims along the rows' axis): DIGITS_FLOOR of
    every row's RMS (``TrialFacts.rms``); for facts made by hand, of the small rows' only (inf for
    the others); None when no row is judged."""
    if facts.rms is not None:
        return DIGITS_FLOOR * facts.rms if facts.rms.size else None
    tol = facts.tol
    if tol is None or not np.size(tol):
        return None
    small = tol < np.float32(facts.atol * (1 - 1e-5))
    if not small.any():
        return None
    rms = tol.astype(np.float64) / (SMALL_ROW_FACTOR * facts.rtol)
    return np.where(small, DIGITS_FLOOR * rms, np.inf)


def _lost_digits(out: np.ndarray, truth: np.ndarray, floor: np.ndarray, slack: np.ndarray | None,
                 strict: np.ndarray | None, axis: int) -> tuple[int, int, int]:
    """(values of ``strict`` rows that keep no digit, of the other rows, flat index of the first): ``|truth| >
    floor`` and ``|out - truth|`` above DIGITS_LOST of ``|truth|`` plus ``slack``; ``floor``, ``slack`` and
    ``strict`` per row, keepdims. Rows along the last axis go in blocks through one reused scratch block, and
    only a row whose worst error reaches half its floor is looked at element by element (an honest row's
    errors sit orders of magnitude below it)."""
    s = np.zeros_like(floor) if slack is None else slack
    st_rows = np.zeros(floor.shape, bool) if strict is None else strict
    with np.errstate(all="ignore"):
        if truth.ndim == 0 or row_axis(truth.shape, axis) != truth.ndim - 1:  # rare: the whole array at once
            mag = np.abs(truth)
            lost = (mag > floor) & ~(np.abs(out - truth) <= DIGITS_LOST * mag + s)
            n_strict = int(np.count_nonzero(lost & st_rows))
            n = int(np.count_nonzero(lost))
            return n_strict, n - n_strict, int(np.argmax(lost)) if n else -1
        L = truth.shape[-1]
        R = truth.size // max(L, 1)
        o2, t2 = out.reshape(R, L), truth.reshape(R, L)
        per_row = truth.shape[:-1] + (1,)
        f = np.broadcast_to(floor, per_row).reshape(R)
        sl = np.broadcast_to(s, per_row).reshape(R)
        strict_r = np.broadcast_to(st_rows, per_row).reshape(R)
        step = max(1, BLOCK // max(L, 1))
        d = np.empty((min(step, R), L), np.result_type(out.dtype, truth.dtype))
        n_strict, n_other, first = 0, 0, -1
        for b in range(0, R, step):
            e = min(R, b + step) - b
            dd = d[:e]
            np.subtract(o2[b:b + e], t2[b:b + e], out=dd)
            np.abs(dd, out=dd)
            suspect = np.flatnonzero(~(dd.max(axis=1) <= DIGITS_LOST * f[b:b + e] + sl[b:b + e]))
            if not suspect.size:
                continue
            rows = b + suspect
            mag = np.abs(t2[rows])
            lost = (mag > f[rows, None]) & ~(dd[suspect] <= DIGITS_LOST * mag + sl[rows, None])
            per = np.count_nonzero(lost, axis=1)
            if per.any():
                if first < 0:
                    j = int(np.argmax(lost))
                    first = int(rows[j // L]) * L + j % L
                k_strict = int(per[strict_r[rows]].sum())
                n_strict += k_strict
                n_other += int(per.sum()) - k_strict
    return n_strict, n_other, first


def _digits_check(out: np.ndarray, ref: np.ndarray, facts: TrialFacts, max_abs_err: float | None,
                  exact64: np.ndarray | None = None, noise: np.ndarray | None = None) -> Check:
    """No element of a small row keeps none of its digits (``DIGITS_LOST``), nor more than DIGITS_SHARE of
    the output in the other rows; against the float64 answer, with the float32 reference's rounding as
    slack, when ``exact64`` is given."""
    floor = _digits_floor(facts)
    if floor is None:
        return Check("digits", True, "no rows to judge")
    with np.errstate(invalid="ignore"):
        lowest = float(np.nanmin(floor)) if not np.isnan(floor).all() else math.inf
    bound = DIGITS_LOST * lowest
    if exact64 is None and max_abs_err is not None and max_abs_err <= bound:  # False for NaN
        return Check("digits", True, "")  # no error anywhere reaches half of the smallest value that counts
    truth = ref if exact64 is None else exact64
    slack = None if noise is None else FLOAT32_NOISE_FACTOR * noise
    small = None if facts.tol is None else facts.tol < np.float32(facts.atol * (1 - 1e-5))
    n_small, n_other, i = _lost_digits(out, truth, floor, slack, small, facts.axis)
    allowed = int(DIGITS_SHARE * ref.size)
    if not n_small and n_other <= allowed:
        return Check("digits", True, "second opinion: within float32 rounding of the float64 answer"
                     if exact64 is not None else "")
    where = "[" + ", ".join(str(int(k)) for k in np.unravel_index(i, ref.shape)) + "]"
    what = f"{n_small} value(s) of small rows" if n_small else f"{n_other} values (more than {allowed})"
    return Check("digits", False, f"{what} keep no digit: {float(out.flat[i]):.3g} at {where} "
                                  f"where the answer is {float(truth.flat[i]):.3g} (off by more than half)")


# ------------------------------------------------------------------------------------------ bias

#: Tolerances are for rounding, which goes both ways. An output scaled by a factor inside rtol (every value
#: 0.9 % low) passes closeness everywhere, and so does a formula biased in one direction (12-03 audit: GELU, an
#: MLP and a layer norm scaled by 0.991 or 1.008 passed). Each row's best scale against the reference,
#: ``sum(out * ref) / sum(ref * ref)``, is 1 within ~1e-6 for float32 rounding, and a missing eps on a layer
#: norm row of variance 300 eps puts it 0.17 % off. A row is biased when that scale is off by more than BIAS_TOL
#: of rtol and the offset it makes at the row's RMS is above a tenth of the row's tolerance; the output fails
#: when more than BIAS_ROWS of its rows are biased in the same direction. Why 0.7 and half the rows: the
#: published sigmoid approximation of GELU (x * sigmoid(1.702 x)) is high by a median 0.61 rtol on uniform rows
#: (5-10 % of them beyond 0.7, a few near 1.0), where the lecture shows it passing (its error there is another
#: curve within tolerance, not a factor); the audit's factors were 0.8 and 0.9 of rtol on every row.
BIAS_TOL = 0.7
BIAS_ROWS = 0.5


def _row_scales(out: np.ndarray, ref: np.ndarray, axis: int, row_sq: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """(sum(out * ref), sum(ref * ref)) per row, float64 (rows along the last axis: batched BLAS dots in blocks;
    ``row_sq``: the second, when the trial's facts have it)."""
    with np.errstate(all="ignore"):
        if ref.ndim and row_axis(ref.shape, axis) == ref.ndim - 1:
            L = ref.shape[-1]
            R = ref.size // max(L, 1)
            o2, r2 = out.reshape(R, L), ref.reshape(R, L)
            known = row_sq is not None and row_sq.shape == (R,)
            cross = np.empty(R, np.float64)
            sq = row_sq.astype(np.float64) if known else np.empty(R, np.float64)  # type: ignore[union-attr]
            step = max(1, BLOCK // max(L, 1))
            for b in range(0, R, step):
                rb = r2[b:b + step]
                cross[b:b + step] = (o2[b:b + step][:, None, :] @ rb[:, :, None]).reshape(-1)
                if not known:
                    sq[b:b + step] = (rb[:, None, :] @ rb[:, :, None]).reshape(-1)
            return cross, sq
        a = row_axis(ref.shape, axis)
        r64 = ref.astype(np.float64)
        return (out * r64).sum(axis=a).reshape(-1), (r64 * r64).sum(axis=a).reshape(-1)


def _bias_check(out: np.ndarray, ref: np.ndarray, facts: TrialFacts) -> Check:
    """No more than BIAS_ROWS of the rows scaled off the reference, in one direction, by more than BIAS_TOL of rtol."""
    if facts.rms is None or not ref.size or facts.tol is None:
        return Check("bias", True, "not judged")
    cross, sq = _row_scales(out, ref, facts.axis, facts.row_sq)
    with np.errstate(all="ignore"):
        scale = cross / sq
        off = scale - 1.0
        rms = np.broadcast_to(facts.rms, np.broadcast_shapes(facts.rms.shape, facts.tol.shape)).reshape(-1)
        tol = np.broadcast_to(facts.tol, np.broadcast_shapes(facts.rms.shape, facts.tol.shape)).reshape(-1)
        judged = (sq > 0) & np.isfinite(off)
        big = judged & (np.abs(off) > BIAS_TOL * facts.rtol) & (np.abs(off) * rms > 0.1 * tol)
        low, high = int(np.count_nonzero(big & (off < 0))), int(np.count_nonzero(big & (off > 0)))
        n = int(np.count_nonzero(judged))
    worst = max(low, high)
    if not n or worst <= BIAS_ROWS * n:
        return Check("bias", True, "")
    side = off[big & ((off < 0) if low >= high else (off > 0))]
    typical = float(np.median(side)) + 1.0
    return Check("bias", False, f"{worst} of {n} rows scaled by {typical:.4g} against the answer (more than "
                                f"{BIAS_TOL:g} x rtol off, all one way: a factor, not rounding)")


# ------------------------------------------------------------------------------------------ predictors

def _rank1(ref: np.ndarray) -> np.ndarray:
    """The best rank-1 approximation of each matrix (last two axes), by a few power iterations (float32
    BLAS: the predictor needs to be close to optimal, not exact). (2-d outputs: ``_Rank1`` builds rows.)"""
    m = ref.reshape((-1,) + ref.shape[-2:]) if ref.ndim >= 2 else ref[None, :, None]
    if m.shape[0] == 1:
        m = m[0]  # one matrix: plain BLAS matrix-vector products
    v = np.ones(m.shape[:-2] + (m.shape[-1], 1), np.float32)
    with np.errstate(all="ignore"):
        for _ in range(4):
            v = np.swapaxes(m, -1, -2) @ (m @ v)
            v /= np.maximum(np.linalg.norm(v, axis=-2, keepdims=True), np.float32(1e-30))
        p = (m @ v) @ np.swapaxes(v, -1, -2)
    return p.reshape(ref.shape).astype(ref.dtype)


def _half_rows(ref: np.ndarray, axis: int) -> np.ndarray:
    """The reference on half the rows: every odd row copied from the row before it (rows are counted along
    the axis before the natural one; along the natural axis itself when it is the only long one)."""
    a = ref.ndim - 2 if (ref.ndim >= 2 and axis == ref.ndim - 1) else axis
    p = ref.copy()
    src = np.moveaxis(ref, a, 0)
    dst = np.moveaxis(p, a, 0)
    k = dst[1::2].shape[0]
    dst[1::2] = src[0::2][:k]
    return p


@dataclass(frozen=True)
class _Predictor:
    """One simple answer, built on demand: ``build(rows)`` is the predictor on those rows of a 2-d output
    (None: the whole of it, any shape), so a sample of rows costs what the sample does. ``col_mean()``: its
    column means over every row (keepdims) without building it (None: build it whole to know them)."""

    build: Callable[[Any], np.ndarray]
    col_mean: Callable[[], np.ndarray] | None = None


class _RefStats:
    """The reference's statistics the predictors share, computed once, on first use. A 2-d output's come from
    four float32 passes: its row and column sums, and one power step ``ref.T @ (ref @ v0)`` from ``v0``, the
    top right singular vector of a sample of rows. No float64 copy: a predictor needs to be close to
    optimal, not exact (it never decides a verdict). Matrix-vector products by ``einsum``, not BLAS: they run
    while a candidate's call holds a core, where OpenBLAS's two threads wait on each other (a 1 ms product
    took 10-30 ms there)."""

    def __init__(self, ref: np.ndarray) -> None:
        self.ref = ref
        self.two_d = ref.ndim == 2
        self._memo: dict[str, Any] = {}

    def _passes(self) -> dict[str, Any]:
        if "v" in self._memo:
            return self._memo
        ref = self.ref
        R, L = ref.shape
        with np.errstate(all="ignore"):
            sample = ref[:: max(1, -(-ref.size // SAMPLE_ABOVE))]
            v = np.ones(L, np.float32)
            for _ in range(4):  # on the sample (in cache): the start of the full step below
                v = np.einsum("ij,i->j", sample, np.einsum("ij,j->i", sample, v))
                v /= np.maximum(np.linalg.norm(v), np.float32(1e-30))
            v = np.einsum("ij,i->j", ref, np.einsum("ij,j->i", ref, v))
            v /= np.maximum(np.linalg.norm(v), np.float32(1e-30))
            col_sum = ref.sum(axis=0, dtype=np.float32).astype(np.float64)
            row_sum = ref.sum(axis=1, dtype=np.float32).astype(np.float64)
        self._memo.update(rows=row_sum.reshape(R, 1) / L, cols=col_sum.reshape(1, L) / R, v=v.astype(np.float32),
                          u_mean=float(col_sum @ v.astype(np.float64)) / R)
        return self._memo

    def axis_mean(self, a: int) -> np.ndarray:
        """Mean along axis ``a`` (keepdims, float64)."""
        if self.two_d:
            return self._passes()["cols" if a == 0 else "rows"]
        key = f"axis{a}"
        if key not in self._memo:
            self._memo[key] = self.ref.mean(axis=a, keepdims=True, dtype=np.float64)
        return self._memo[key]

    def mean(self) -> float:
        if "mean" not in self._memo:
            self._memo["mean"] = float(self.axis_mean(1).mean()) if self.two_d else \
                float(self.ref.mean(dtype=np.float64))
        return self._memo["mean"]

    def right_vector(self) -> np.ndarray:
        """A 2-d output's top right singular vector, float32."""
        return self._passes()["v"]

    def rank1_col_mean(self) -> np.ndarray:
        """The rank-1 predictor's column means: mean(ref @ v) * v (keepdims, float64)."""
        p = self._passes()
        return (p["u_mean"] * p["v"].astype(np.float64)).reshape(1, -1)


def _count(rows: Any, n: int) -> int:
    return len(range(n)[rows]) if isinstance(rows, slice) else len(rows)


def predictors_of(ref: np.ndarray, axis: int, atol: float) -> dict[str, _Predictor]:
    """The simple answers a trial must rule out, each built on demand on some rows (an index array or a
    slice along axis 0 of a 2-d output) or whole."""
    f32 = ref.dtype
    st = _RefStats(ref)
    two_d = st.two_d
    R = ref.shape[0] if ref.ndim else 1

    def part(rows: Any) -> np.ndarray:
        return ref if rows is None else ref[rows]

    def flat(v: object, rows: Any) -> np.ndarray:  # a read-only broadcast view: no full-size copy to score
        v = np.asarray(v, f32)
        if rows is None:
            return np.broadcast_to(v, ref.shape)
        if v.ndim and v.shape[0] == R and R > 1:
            v = v[rows]
        return np.broadcast_to(v, (_count(rows, R),) + ref.shape[1:])

    def const(v: Callable[[], float]) -> Callable[[], np.ndarray]:
        return lambda: np.full((1,) + ref.shape[1:], v(), np.float64)

    def rank1(rows: Any) -> np.ndarray:
        if not two_d:
            return _rank1(ref)
        v = st.right_vector()
        with np.errstate(all="ignore"):
            return np.outer(np.einsum("ij,j->i", part(rows), v), v)

    def half(rows: Any) -> np.ndarray:
        if rows is None or not two_d:
            return _half_rows(ref, axis)
        idx = np.arange(R)[rows] if isinstance(rows, slice) else rows
        return ref[idx & ~1]  # 2-d: rows run along axis 0 whatever the natural axis (``_half_rows``)

    def half_cols() -> np.ndarray:
        w = np.zeros(R, np.float32)
        w[0::2] = 2
        if R % 2:
            w[-1] = 1  # the last row is even and has no odd twin
        return np.einsum("i,ij->j", w, ref).astype(np.float64).reshape(1, -1) / R

    def small_zeroed(rows: Any) -> np.ndarray:
        x = part(rows)
        return np.where(np.abs(x) < atol / 10, f32.type(0), x)

    p: dict[str, _Predictor] = {
        "zeros": _Predictor(lambda rows: flat(0, rows), const(lambda: 0.0)),
        "constant": _Predictor(lambda rows: flat(st.mean(), rows), const(st.mean)),
        "constant removed": _Predictor(lambda rows: (part(rows) - np.float64(st.mean())).astype(f32),
                                       (lambda: st.axis_mean(0) - st.mean()) if two_d else None),
        "rank-1": _Predictor(rank1, st.rank1_col_mean if two_d else None),
        "half the rows": _Predictor(half, half_cols if two_d else None),
        "small values zeroed": _Predictor(small_zeroed),
    }
    for a in range(ref.ndim):
        if ref.shape[a] > 1:
            p[f"mean along axis {a}"] = _Predictor(lambda rows, a=a: flat(st.axis_mean(a), rows),
                                                   (lambda: st.axis_mean(0)) if a == 0 else const(st.mean))
    return p


#: Predictors that drop something (the constant part, small values): "n/a" on a trial where they pass every
#: check (what they drop never reaches the tolerance: a layer norm's rows have no small scale; a zero-mean
#: output has no constant part), rather than "passes".
VISIBLE_ONLY = ("constant removed", "small values zeroed")

#: Outputs larger than this are scored on a sample of rows first (a predictor that fails there fails;
#: one that passes there is scored again on every row, so the outcome is exact either way).
SAMPLE_ABOVE = 1 << 18


@dataclass
class _Limits:
    """The reference and its tolerance limits on some rows (float32), with a scratch array of their size."""

    ref: np.ndarray
    limit: np.ndarray
    c_limits: list[np.ndarray]
    err: np.ndarray


class _Scorer:
    """Scores predictors under a trial's tolerance checks (float32). A large 2-d output is scored on a sample
    of whole rows first (every k-th block of 8; the predictor built on those rows only, its limits computed
    once), the centred checks along axis 0 with the predictor's column means over all rows; a predictor
    that passes the sample is scored on every row, in row blocks that stay in cache (no full-size
    temporaries), so the outcome is exact either way. Other outputs are scored whole."""

    #: Elements per row block of the full scoring.
    BLOCK = 1 << 16

    def __init__(self, ref: np.ndarray, tol: np.ndarray, rtol: float, centred: tuple[Centred, ...]) -> None:
        self.full = ref
        self.rtol, self.tol_full, self.centred = rtol, tol, centred
        self.names = ("close",) + tuple(c.name for c in centred)
        self.rows: np.ndarray | None = None
        if ref.ndim == 2 and ref.size > SAMPLE_ABOVE and ref.shape[0] >= 64:
            k = max(2, (ref.size + SAMPLE_ABOVE - 1) // SAMPLE_ABOVE)
            starts = np.arange(0, ref.shape[0], 8 * k)
            rows = (starts[:, None] + np.arange(8)).reshape(-1)
            self.rows = rows[rows < ref.shape[0]]
        self._sample = self._limits(self.rows) if self.rows is not None else None
        self._whole: _Limits | None = None

    @staticmethod
    def take(a: np.ndarray, rows: Any) -> np.ndarray:
        return a if rows is None or a.shape[0] == 1 else a[rows]

    def _limits(self, rows: Any) -> _Limits:
        ref = self.take(self.full, rows)
        with np.errstate(all="ignore"):
            limit = np.abs(ref)
            limit *= np.float32(self.rtol)
            limit += self.take(self.tol_full, rows)
            c_limits = []
            for cen in self.centred:
                lim = np.subtract(ref, self.take(cen.mean, rows))
                np.abs(lim, out=lim)
                lim *= np.float32(self.rtol)
                lim += self.take(cen.tol, rows)
                c_limits.append(lim)
        return _Limits(ref, limit, c_limits, np.empty_like(ref))

    def failures(self, preds: dict[str, _Predictor]) -> dict[str, tuple[tuple[str, ...], bool]]:
        """Per predictor: (the tolerance checks it fails, whether it is the reference to within SAME_AS_REF
        of it). The predictors that pass the sample are scored on every row together, block by block (each
        block's limits computed once for all of them)."""
        col_means: dict[str, np.ndarray] = {}  # a predictor's column means over every row, once

        def col_mean_of(name: str) -> Callable[[], np.ndarray]:
            def get() -> np.ndarray:
                if name not in col_means:
                    pred = preds[name]
                    col_means[name] = pred.col_mean() if pred.col_mean is not None else \
                        pred.build(None).mean(axis=0, keepdims=True, dtype=np.float64)
                return col_means[name]
            return get

        if self._sample is None:
            whole = self._limits(None)
            return {n: self._score(p, whole, None, col_mean_of(n)) for n, p in preds.items()}
        out = {n: self._score(p, self._sample, self.rows, col_mean_of(n)) for n, p in preds.items()}
        passed = [n for n, (failed, _) in out.items() if not failed]
        if not passed:
            return out
        R, L = self.full.shape
        step = max(1, self.BLOCK // max(L, 1))
        bad: dict[str, set[str]] = {n: set() for n in passed}
        same = dict.fromkeys(passed, True)
        for s in range(0, R, step):
            block = slice(s, min(R, s + step))
            lim = self._limits(block)
            for n in passed:
                f, sm = self._score(preds[n], lim, block, col_mean_of(n))
                bad[n].update(f)
                same[n] = same[n] and sm
        for n in passed:
            out[n] = (tuple(c for c in self.names if c in bad[n]), same[n])
        return out

    def _score(self, pred: _Predictor, lim: _Limits, rows: Any,
               col_mean: Callable[[], np.ndarray]) -> tuple[tuple[str, ...], bool]:
        ref, err = lim.ref, lim.err
        with np.errstate(all="ignore"):
            ps = pred.build(rows)
            np.subtract(ps, ref, out=err)
            np.abs(err, out=err)
            failed = [] if bool((err <= lim.limit).all()) else ["close"]
            same = not failed and bool((err <= SAME_AS_REF * lim.limit).all())
            for cen, c_lim in zip(self.centred, lim.c_limits):
                if rows is not None and cen.axis == 0:
                    mu = col_mean()
                else:  # along the rows at hand (whole rows) or over the whole output
                    mu = ps.mean(axis=cen.axis, keepdims=True, dtype=np.float64)
                shift = (mu - self.take(cen.mean, rows)).astype(np.float32)
                np.subtract(ps, ref, out=err)
                err -= shift
                np.abs(err, out=err)
                if not bool((err <= c_lim).all()):
                    failed.append(cen.name)
                    same = False
        return tuple(failed), same


# ------------------------------------------------------------------------------------------ facts

def trial_facts(task: Any, ref: np.ndarray, x: dict | None = None, params: dict | None = None,
                atol: float = 1e-2, rtol: float = 1e-2, predictors: bool = True,
                centred_axes: tuple[int, ...] | None = None) -> TrialFacts:
    """The facts of one trial (``task``: a ``kbench.core.tasks.Task`` or None for the generic rules).
    Depends only on the trial: compute once per trial and reuse (``facts_for`` does). ``predictors=False``
    skips the predictor table (timed outputs: the checks are the same, the table is for the log).
    ``centred_axes``: which other axes get centred checks, as decided on an earlier output of the same
    distribution (``TrialFacts.centred_axes``): a majority over slices that a fresh draw does not move, and
    on a timed softmax output a quarter of its facts' time; the tolerances are still this output's own."""
    t0 = time.perf_counter()
    axis = row_axis(ref.shape, getattr(task, "axis", None))
    props = tuple(getattr(task, "properties", ()))
    state = {name: PREPARE[name](ref, x or {}, params or {}) for name in props if name in PREPARE}
    squares, extremes = None, None
    if ref.size and ref.dtype == np.float32 and axis == ref.ndim - 1:  # rows along the last axis
        with np.errstate(all="ignore"):
            extremes = float(ref.max()), float(ref.min())
        squares = row_squares(ref, no_zeros=extremes[1] > 0 or extremes[0] < 0)
    rms = row_rms(ref, axis, squares) if ref.size else None
    tol = row_atol(ref, atol, rtol, axis, squares, rms)  # the rows' tolerances: closeness, centred rows
    rms32 = rms.astype(np.float32) if rms is not None else np.zeros((0,), np.float32)
    centred, decided = _centred_candidates(ref, tol, axis, rtol, squares, extremes, centred_axes) \
        if ref.size else ((), ())
    row_sq = squares[0] if squares is not None else None
    if not predictors:  # timed outputs: the same checks, no predictor table
        return TrialFacts(getattr(task, "name", "?"), axis, atol, rtol, tol, centred, props, (), state,
                          time.perf_counter() - t0, decided, rms32, row_sq)
    preds: list[Predictor] = []
    if predictors and ref.size:
        scorer = _Scorer(ref, tol, rtol, centred)
        for name, (failed, same) in scorer.failures(predictors_of(ref, axis, atol)).items():
            if name in VISIBLE_ONLY and not failed:
                same = True  # nothing it drops is above the tolerance anywhere: not a shortcut on this trial
            preds.append(Predictor(name, "n/a" if same else "ruled out" if failed else "passes", failed))
    return TrialFacts(getattr(task, "name", "?"), axis, atol, rtol, tol, centred, props, tuple(preds), state,
                      time.perf_counter() - t0, decided, rms32, row_sq)


_cache_lock = threading.Lock()
_cache: dict[tuple[int, bool, float, float], tuple[weakref.ref, TrialFacts]] = {}


def facts_for(task: Any, ref: np.ndarray, x: dict | None = None, params: dict | None = None,
              atol: float = 1e-2, rtol: float = 1e-2, predictors: bool = True) -> TrialFacts:
    """``trial_facts``, cached for as long as ``ref`` (the grader's cached reference output) lives: every
    candidate judged against the same reference array reuses its facts. (A reference is never modified
    once computed; a new array, even at a recycled address, is a new key.)"""
    key = (id(ref), predictors, atol, rtol)
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None and hit[0]() is ref:
            return hit[1]
        for k in [k for k, (w, _) in _cache.items() if w() is None]:
            del _cache[k]
    facts = trial_facts(task, ref, x, params, atol, rtol, predictors)
    with _cache_lock:
        _cache[key] = (weakref.ref(ref), facts)
    return facts


# ------------------------------------------------------------------------------------------ judging

def checks_line(c: Comparison) -> str:
    """The checks of one judgement, for the step log: "checks: 7 passed" or "checks: failed close, ..."."""
    failed = c.failed()
    ran = sum(ch.ok is not None for ch in c.checks)
    if not failed:
        return f"checks: {ran} passed"
    return f"checks: failed {', '.join(failed)} ({ran - len(failed)} of {ran} passed)"


TOLERANCE_CHECKS = ("close",)


def judge(out: object, ref: np.ndarray, facts: TrialFacts, x: dict | None = None, params: dict | None = None,
          exact: Callable[[], np.ndarray] | None = None, rel: bool = True,
          nudged: Callable[[], np.ndarray] | None = None) -> Comparison:
    """Every check of the trial on ``out``: exact checks and closeness (``compare``, with the trial's row
    tolerances), the centred checks, the task's properties. ``message`` is the first failure's detail
    (exact checks, then closeness, centred, properties). ``exact``: the float64 reference, asked only when
    the failures are all tolerance checks (closeness, digits, centred), for the second opinion; ``nudged``: the
    float64 reference on the inputs moved by their rounding (``nudged_inputs``), asked only when a centred or
    digits check failed, so that a row whose answer float32 rounding alone moves gets that much slack.
    ``rel=False``: a passing output's max relative error is not computed (``compare``'s)."""
    c = compare(out, ref, facts.atol, facts.rtol, exact=True, axis=facts.axis, tol=facts.tol, rel=rel)
    checks = list(c.checks)
    if any(ch.ok is False for ch in checks if ch.name in ("type", "shape", "dtype")):
        names = ["digits", "bias"] + [cen.name for cen in facts.centred] + list(facts.properties)
        return replace(c, checks=tuple(checks) + tuple(Check(n, None) for n in names))
    assert isinstance(out, np.ndarray)
    checks.append(_digits_check(out, ref, facts, c.max_abs_err))
    checks.append(_bias_check(out, ref, facts))
    for cen in facts.centred:
        checks.append(_centred_check(out, ref, cen, facts.rtol))
    for name in facts.properties:
        try:
            checks.append(PROPERTIES[name](out, ref, x or {}, params or {}, facts.rtol, facts.prop_state.get(name)))
        except Exception as e:  # noqa: BLE001 - a property must never crash the grader
            checks.append(Check(name, False, f"property check raised {type(e).__name__}"))
    failed = [ch for ch in checks if ch.ok is False]
    tol_names = {"close", "digits"} | {cen.name for cen in facts.centred}
    second = ""
    if failed and exact is not None and all(ch.name in tol_names for ch in failed) \
            and not any(ch.name == "finite" for ch in failed):
        checks, second = _second_opinion(out, ref, facts, exact, checks, c, nudged)
        rescued = {ch.name.removeprefix(RESCUE) for ch in checks if ch.name.startswith(RESCUE) and ch.ok}
        failed = [ch for ch in checks if ch.ok is False and not ch.name.startswith(RESCUE) and ch.name not in rescued]
    if not failed:
        msg = second or c.message
        return Comparison(True, msg, c.max_abs_err, c.max_rel_err, c.degenerate, tuple(checks))
    first = failed[0]
    return Comparison(False, first.detail or f"{first.name} failed", c.max_abs_err, c.max_rel_err, c.degenerate,
                      tuple(checks))


#: The prefix of a second-opinion check: ``float64:close`` passing means the float64 answer forgave ``close``.
RESCUE = "float64:"


#: How far ``nudged_inputs`` moves each input value, relative: 8 float32 steps, the rounding an honest float32
#: kernel accumulates in a sum of a few dozen products (attention's 64-term scores on offset inputs: values
#: near 1e6 per product, scores near 6e7 off by several units in any summation order).
NUDGE = 2.0 ** -20


def nudged_inputs(x: dict) -> dict:
    """The inputs, float32 values each moved by NUDGE of itself up or down (a fixed draw), in float64."""
    rng = np.random.default_rng(0)
    out = {}
    for k, v in x.items():
        if isinstance(v, np.ndarray) and v.dtype == np.float32:
            sign = np.where(rng.random(v.shape) < 0.5, NUDGE, -NUDGE)
            out[k] = v.astype(np.float64) * (1.0 + sign)
        else:
            out[k] = v
    return out


def _sensitivity(exact64: np.ndarray, nudged64: np.ndarray, axis: int) -> np.ndarray:
    """How far the float64 answer moves per row (keepdims) when the inputs move by NUDGE: the rounding any
    honest float32 kernel is exposed to. Two attention scores tied within it make the row's softmax
    weights, and so its answer, depend on the order of the sum, in the reference as in the kernel."""
    with np.errstate(all="ignore"):
        d = np.abs(exact64 - nudged64)
        return d.max(axis=axis, keepdims=True) if d.size else d


def _second_opinion(out: np.ndarray, ref: np.ndarray, facts: TrialFacts, exact: Callable[[], np.ndarray],
                    checks: list[Check], c: Comparison,
                    nudged: Callable[[], np.ndarray] | None = None) -> tuple[list[Check], str]:
    """Tolerance checks again against the float64 answer, the float32 reference's rounding as slack (and for
    centred and digits checks, per row, how far the inputs' rounding moves the answer: where the
    reference happened to round well, its own error is no measure of what honest rounding can do)."""
    from kbench.core.compare import recheck_against_exact

    exact64 = np.asarray(exact(), dtype=np.float64)
    # The failed checks stay as they were; each gets a twin ``float64:<name>`` with the second opinion's
    # outcome, so a view without the second opinion can still be derived from the record.
    new: list[Check] = list(checks)
    msg = ""
    noise = None
    for ch in checks:
        if ch.ok is not False:
            continue
        if ch.name == "close":
            r = recheck_against_exact(out, ref, exact64, facts.atol, facts.rtol, replace(c, checks=(ch,)), facts.axis)
            new.append(Check(RESCUE + ch.name, bool(r.ok), r.message if r.ok else ""))
            msg = r.message if r.ok else msg
        else:
            if noise is None:
                noise = reference_noise(ref, exact64, facts.axis, floor=False)
                if nudged is not None:
                    moved = np.asarray(nudged(), dtype=np.float64)
                    if moved.shape == exact64.shape:
                        noise = np.fmax(noise, _sensitivity(exact64, moved, facts.axis))
            if ch.name == "digits":
                r2 = _digits_check(out, ref, facts, None, exact64, noise)
            else:
                cen = next(cc for cc in facts.centred if cc.name == ch.name)
                r2 = _centred_check(out, ref, cen, facts.rtol, exact64, noise)
            new.append(Check(RESCUE + ch.name, bool(r2.ok), r2.detail))
    return new, msg
