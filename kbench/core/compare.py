"""Judging one output against the reference: the exact checks, then closeness.

``compare`` runs in the grading process only (never where candidate code ran) in hardened mode; naive
mode uses the same function with ``exact=False`` inside the candidate's process, as KernelBench does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Comparison:
    ok: bool
    message: str
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    degenerate: bool = False


def _where(flat_index: int, shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(int(i)) for i in np.unravel_index(flat_index, shape)) + "]"


def _errors(out: np.ndarray, ref: np.ndarray) -> tuple[np.ndarray, float, float, int]:
    """|out - ref| (NaN counted as inf), its maximum and where, and the max relative error.

    Computed in the arrays' own precision: tolerances of 1e-2 are far above float32 rounding, and a
    float64 copy of every output doubled the cost of judging."""
    with np.errstate(all="ignore"):
        diff = np.abs(out - ref)
        np.copyto(diff, np.inf, where=np.isnan(diff))
        i = int(np.argmax(diff)) if diff.size else 0
        max_abs = float(diff.flat[i]) if diff.size else 0.0
        max_rel = float(np.max(diff / np.maximum(np.abs(ref), np.finfo(ref.dtype).tiny))) if diff.size else 0.0
    return diff, max_abs, max_rel, i


def _typical_magnitude(ref: np.ndarray) -> float:
    """Median |ref| on a fixed subsample of about 16 K values (a full median partitions the whole array)."""
    flat = ref.reshape(-1)
    return float(np.median(np.abs(flat[:: max(1, flat.size // 16384)]))) if flat.size else 0.0


#: Elements per block of the fast scan: two inputs and two scratch blocks stay in L2, so the scan's
#: passes cost cache bandwidth, not memory bandwidth.
BLOCK = 1 << 16


def _scan(out: np.ndarray, ref: np.ndarray, rtol: float, eff_atol: float) -> tuple[bool, float, float]:
    """One blocked pass: (every |out - ref| <= eff_atol + rtol*|ref| and finite, max abs err, max rel err).

    A NaN or inf anywhere in |out - ref| makes the first value False (the caller then judges the slow,
    exact way and words the message); so does a margin within float rounding of the tolerance."""
    a, b = out.reshape(-1), ref.reshape(-1)
    n = a.size
    d, m, v = (np.empty(min(n, BLOCK), ref.dtype) for _ in range(3))
    tiny = np.finfo(ref.dtype).tiny
    worst_excess = max_abs = max_rel = 0.0
    with np.errstate(all="ignore"):
        for s in range(0, n, BLOCK):
            e = min(n, s + BLOCK) - s
            dd, mm, vv = d[:e], m[:e], v[:e]
            np.subtract(a[s:s + e], b[s:s + e], out=dd)
            np.abs(dd, out=dd)  # |out - ref|
            m_abs = float(dd.max())
            if not math.isfinite(m_abs):  # NaN or inf: the exact path says where and why
                return False, m_abs, m_abs
            np.abs(b[s:s + e], out=mm)  # |ref|
            np.multiply(mm, rtol, out=vv)
            np.subtract(dd, vv, out=vv)  # |out - ref| - rtol*|ref|, at most eff_atol everywhere
            worst_excess = max(worst_excess, float(vv.max()))
            np.maximum(mm, tiny, out=mm)
            max_rel = max(max_rel, float(np.divide(dd, mm, out=mm).max()))
            max_abs = max(max_abs, m_abs)
    return worst_excess <= eff_atol * (1 - 1e-5), max_abs, max_rel


def compare(out: object, ref: np.ndarray, atol: float = 1e-2, rtol: float = 1e-2, exact: bool = True) -> Comparison:
    """Judge ``out`` against ``ref``.

    exact=True (hardened): exactly ``np.ndarray`` (a subclass or array-like could lie to a comparison),
    equal shape (no broadcasting) and dtype, no NaN/inf where the reference is finite, then
    |out - ref| <= atol + rtol*|ref| everywhere. When most reference magnitudes sit below ``atol``
    (the KernelBench #165 hole: all zeros would pass), the trial is *degenerate* and atol is
    replaced by rtol * max|ref|.

    exact=False (naive, KernelBench v0): shape equality, then ``np.allclose``.
    """
    if not exact:
        shape = getattr(out, "shape", None)
        if shape != ref.shape:
            return Comparison(False, f"shape {shape} != {ref.shape}")
        try:
            with np.errstate(all="ignore"):
                ok = bool(np.allclose(out, ref, atol=atol, rtol=rtol))
        except Exception as e:  # noqa: BLE001 - a candidate's object may raise anything
            return Comparison(False, f"comparison raised {type(e).__name__}: {e}")
        if ok:
            return Comparison(True, "allclose")
        if type(out) is np.ndarray:
            _, max_abs, max_rel, i = _errors(out, ref)
            return Comparison(False, f"max abs err {max_abs:.3g} at {_where(i, ref.shape)}", max_abs, max_rel)
        return Comparison(False, "output mismatch")

    if type(out) is not np.ndarray:
        return Comparison(False, f"output is {type(out).__module__}.{type(out).__qualname__}, not numpy.ndarray")
    if out.shape != ref.shape:
        return Comparison(False, f"shape {out.shape} != {ref.shape}")
    if out.dtype != ref.dtype:
        return Comparison(False, f"dtype {out.dtype} != {ref.dtype}")
    degenerate = bool(ref.size) and _typical_magnitude(ref) < atol
    eff_atol = rtol * float(np.abs(ref).max()) if degenerate else atol
    passed, max_abs, max_rel = _scan(out, ref, rtol, eff_atol)
    if passed:
        return Comparison(True, f"max abs err {max_abs:.2g}" + (" (degenerate: scale-aware)" if degenerate else ""),
                          max_abs, max_rel, degenerate)
    return _judge_failure(out, ref, rtol, eff_atol, degenerate)


def _judge_failure(out: np.ndarray, ref: np.ndarray, rtol: float, eff_atol: float, degenerate: bool) -> Comparison:
    """The exact, whole-array judgement with its message: run only when the fast scan did not pass."""
    finite = np.isfinite(out)
    bad = None if finite.all() else ~finite & np.isfinite(ref)
    if bad is not None and bad.any():
        i = int(np.argmax(bad))
        kind = "NaN" if np.isnan(out.flat[i]) else "inf"
        return Comparison(False, f"{kind} at {_where(i, ref.shape)} ({int(bad.sum())} non-finite)",
                          float("inf"), float("inf"))
    abs_ref = np.abs(ref)
    # In place, in the arrays' own precision: judging is on the hot path of every timed-output check.
    with np.errstate(all="ignore"):
        diff = np.subtract(out, ref)
        np.abs(diff, out=diff)
        limit = np.multiply(abs_ref, rtol)
        limit += eff_atol
        over = diff > limit
        n_over = int(np.count_nonzero(over))
        i = int(np.argmax(np.where(over, diff, -1.0))) if n_over else 0
        max_abs = float(diff.max(initial=0.0))
        np.maximum(abs_ref, np.finfo(ref.dtype).tiny, out=abs_ref)
        max_rel = float(np.divide(diff, abs_ref, out=limit).max(initial=0.0))
    if n_over:
        note = f" (degenerate output scale: tolerance {eff_atol:.2g})" if degenerate else ""
        return Comparison(False, f"max abs err {float(diff.flat[i]):.3g} at {_where(i, ref.shape)}, "
                                 f"{n_over} of {ref.size} elements out of tolerance{note}",
                          max_abs, max_rel, degenerate)
    return Comparison(True, f"max abs err {max_abs:.2g}" + (" (degenerate: scale-aware)" if degenerate else ""),
                      max_abs, max_rel, degenerate)


def check_output(out: object, ref: np.ndarray, hardened: bool) -> tuple[bool, str]:
    """The lecture's interface: (ok, message) with atol = rtol = 1e-2."""
    c = compare(out, np.asarray(ref), 1e-2, 1e-2, exact=hardened)
    return c.ok, c.message


#: An output may differ from the exact (float64) answer by this many times the float32 reference's own
#: worst rounding error before it is called wrong.
FLOAT32_NOISE_FACTOR = 4.0


def recheck_against_exact(out: np.ndarray, ref: np.ndarray, exact_ref: np.ndarray, atol: float, rtol: float,
                          first: Comparison) -> Comparison:
    """A second opinion on an output that failed only on tolerance: judged against the float64 answer,
    with the float32 reference's own rounding error (its worst |ref - exact| anywhere) as extra slack.

    Why: with large inputs (offset's mean of 1000) a dot product cancels to a small value, and two honest
    float32 kernels summing in different orders can land 0.1 apart at one element of 131 072 while
    the 1e-2 tolerance is relative to that small value. An honest kernel is as accurate as float32
    arithmetic allows; a bug (one-pass variance, float16, a wrong formula) is far less accurate than the
    reference's own rounding, so this slack does not let it through."""
    with np.errstate(all="ignore"):
        exact64 = np.asarray(exact_ref, dtype=np.float64)  # already float64 from the grader: no copy
        noise = float(np.max(np.abs(ref.astype(np.float64) - exact64))) if ref.size else 0.0
        diff = np.abs(out.astype(np.float64) - exact64)
        # a degenerate output scale keeps its scale-aware tolerance (all-zeros must not pass a tiny reference)
        eff_atol = rtol * float(np.abs(exact64).max(initial=0.0)) if first.degenerate else atol
        limit = eff_atol + rtol * np.abs(exact64) + FLOAT32_NOISE_FACTOR * noise
        n_over = int(np.count_nonzero(diff > limit))
    if not math.isfinite(noise):
        return first
    if n_over == 0:
        return Comparison(True, f"max abs err {first.max_abs_err:.3g} against the float32 reference; within "
                                f"{FLOAT32_NOISE_FACTOR:g}x that reference's own rounding error ({noise:.2g}) "
                                "of the float64 answer", first.max_abs_err, first.max_rel_err, first.degenerate)
    return first  # the float64 answer agrees: wrong by more than float32 rounding explains
