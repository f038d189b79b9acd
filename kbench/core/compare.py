"""Judging one output against the reference: the exact checks, then closeness at the right scale.

``compare`` runs in the grading process only (never where candidate code ran) in hardened mode; naive
mode uses the same function with ``exact=False`` inside the candidate's process, as KernelBench does.

The closeness rule (hardened): ``|out - ref| <= atol_row + rtol * |ref|`` everywhere, where ``atol_row``
is the task's ``atol`` for a row of ordinary magnitude and shrinks with the row's own typical magnitude
for a small one: ``atol_row = min(atol, SMALL_ROW_FACTOR * rtol * rms(ref_row))``, the RMS taken over the
row's nonzero values (a sparse row of unit values is not a small row). A "row" is a slice
along the task's natural axis (the last axis unless the task says otherwise; a last axis of length 1 is
skipped). The rule is never looser than ``atol`` anywhere, and its scale comes from each row, never from
the whole array: a global max let a softmax drop every probability below 0.9 % of its row max, and a
ReLU output's global max loosened ``atol`` to ~50 on offset inputs. Outputs whose rows are all small
(KernelBench #165: all zeros pass ``atol = 1e-2`` on a softmax) are the rule's first customers.

Every outcome is recorded as a named ``Check`` (not only the first failure), so a view can derive the
verdict without one check from one run; ``kbench.core.judging`` adds the per-trial checks (centred
closeness, properties) to the same list.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np


#: A row whose RMS is below atol / (SMALL_ROW_FACTOR * rtol) (0.25 at 1e-2 / 1e-2) is "small": its
#: absolute tolerance is SMALL_ROW_FACTOR * rtol of its RMS (4 %), so zeroing, sparsifying or approximating
#: it with an absolute error just under atol fails. 4, not 1: an approximation that is within rtol + atol
#: on unit-scale values (sigmoid-GELU on U(-1, 1), the lecture's example) stays within it on a row of them
#: at a smaller scale. RMS, not the mean |ref|: a sparse row of unit values is not a small row; not the max:
#: a softmax row's max is 10-1000x its typical probability, and dropping those must fail. Over the nonzero
#: values: a row that is 90 % exact zeros and 10 % unit values has values of unit scale.
SMALL_ROW_FACTOR = 4.0
#: The smallest absolute tolerance a row gets (an all-zero reference row must be matched to ~1e-8 * atol
#: of zero, not to the last denormal).
ATOL_FLOOR = 1e-6

#: Elements per block of the fast scan: two inputs and three scratch blocks stay in L2, so the scan's
#: passes cost cache bandwidth, not memory bandwidth.
BLOCK = 1 << 16


@dataclass(frozen=True)
class Check:
    """One named check's outcome on one output. ``ok`` is None when the check did not run (an earlier
    exact check failed: a wrong shape has no closeness)."""

    name: str
    ok: bool | None
    detail: str = ""


@dataclass(frozen=True)
class Comparison:
    ok: bool
    message: str
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    degenerate: bool = False  # some row was judged at its own (smaller) scale
    checks: tuple[Check, ...] = field(default=())

    def failed(self) -> tuple[str, ...]:
        """Names of the checks that failed."""
        return tuple(c.name for c in self.checks if c.ok is False)

    def ok_without(self, *names: str) -> bool:
        """The verdict with the named checks switched off (the explorer's "hardened without check X").
        A check that did not run counts as failed unless it is switched off: it was stopped by a failure."""
        if not self.checks:
            return self.ok
        return all(c.ok or c.name in names for c in self.checks if c.name not in names)


def _where(flat_index: int, shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(int(i)) for i in np.unravel_index(flat_index, shape)) + "]"


def _errors(out: np.ndarray, ref: np.ndarray) -> tuple[np.ndarray, float, float, int]:
    """|out - ref| (NaN counted as inf), its maximum and where, and the max relative error (naive's message)."""
    with np.errstate(all="ignore"):
        diff = np.abs(out - ref)
        np.copyto(diff, np.inf, where=np.isnan(diff))
        i = int(np.argmax(diff)) if diff.size else 0
        max_abs = float(diff.flat[i]) if diff.size else 0.0
        max_rel = float(np.max(diff / np.maximum(np.abs(ref), np.finfo(ref.dtype).tiny))) if diff.size else 0.0
    return diff, max_abs, max_rel, i


# ------------------------------------------------------------------------------------- rows and scales

def row_axis(shape: tuple[int, ...], axis: int | None = None) -> int:
    """The axis rows run along: ``axis`` if given, else the last axis longer than 1 (0 for a vector)."""
    nd = len(shape)
    if nd == 0:
        return 0
    if axis is not None:
        return axis % nd
    for a in range(nd - 1, -1, -1):
        if shape[a] > 1:
            return a
    return nd - 1


def row_squares(ref: np.ndarray, no_zeros: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(each row's sum of squares in float32, its count of nonzero entries, at least 1) of a float32 array's
    rows along the last axis: BLAS dots over row blocks in cache, no full-size temporary (a fresh one
    page-faults). ``no_zeros``: the caller knows there are none (its minimum is above 0 or its maximum
    below), which spares a pass looking for them. NaN is nonzero to both."""
    rows = ref.reshape(-1, ref.shape[-1])
    R, L = rows.shape
    sq = np.empty(R, np.float32)
    count = np.full(R, float(L))
    step = max(1, BLOCK // max(L, 1))
    with np.errstate(all="ignore"):
        for s in range(0, R, step):
            bb = rows[s:s + step]
            sq[s:s + step] = (bb[:, None, :] @ bb[:, :, None]).reshape(-1)
            if not no_zeros and not bb.all():  # zeros: the RMS of the nonzero values
                count[s:s + step] = np.maximum(np.count_nonzero(bb, axis=1), 1)
    return sq, count


def row_rms(ref: np.ndarray, axis: int | None = None,
            squares: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Every row's RMS over its nonzero values (keepdims along the row axis, float64; a non-empty ``ref``).
    ``squares``: ``row_squares(ref)`` when the caller has it (float32 rows along the last axis)."""
    a = row_axis(ref.shape, axis)
    with np.errstate(all="ignore"):
        if a == ref.ndim - 1 and ref.dtype == np.float32:  # rows along the last axis: BLAS dots, in float32
            sq, count = squares if squares is not None else row_squares(ref)
            return np.sqrt(sq.astype(np.float64) / count).reshape(ref.shape[:-1] + (1,))
        n = np.maximum(np.count_nonzero(ref, axis=a, keepdims=True), 1)
        return np.sqrt(np.square(ref, dtype=np.float64).sum(axis=a, keepdims=True) / n)


def row_atol(ref: np.ndarray, atol: float, rtol: float, axis: int | None = None,
             squares: tuple[np.ndarray, np.ndarray] | None = None, rms: np.ndarray | None = None) -> np.ndarray:
    """The absolute tolerance of every row (keepdims along the row axis): atol for an ordinary row, the
    row's own scale for a small one (``SMALL_ROW_FACTOR * rtol * rms(ref_row)``), never above atol.
    ``squares`` or ``rms``: ``row_squares(ref)`` or ``row_rms(ref)`` when the caller has them."""
    if ref.size == 0:
        return np.full((1,) * max(ref.ndim, 1), atol, ref.dtype if ref.dtype.kind == "f" else np.float32)
    dt = ref.dtype if ref.dtype.kind == "f" else np.float32
    m = rms if rms is not None else row_rms(ref, axis, squares)
    return _atol_of_scale(m, atol, rtol).astype(dt)


def _atol_of_scale(rms: np.ndarray, atol: float, rtol: float) -> np.ndarray:
    with np.errstate(all="ignore"):
        t = np.fmin(rms * (SMALL_ROW_FACTOR * rtol), atol)  # fmin: a NaN scale (an inf in ref) gives atol
        return np.maximum(t, atol * ATOL_FLOOR, out=t)


def _as_rows(ref: np.ndarray, a: int) -> tuple[int, int, bool]:
    """(rows, row length, rows are contiguous runs of the flat array) of the C-order view."""
    L = ref.shape[-1] if ref.ndim else 1
    R = ref.size // max(L, 1)
    return R, L, a == ref.ndim - 1 or ref.ndim == 0


# ---------------------------------------------------------------------------------------- the fast scan

def _scan_rows(a2: np.ndarray, b2: np.ndarray, rtol: float, atol: float, tol_rows: np.ndarray | None,
               tol_cols: np.ndarray | None, scale_rows: bool, rel: bool = True) -> tuple[bool, float, float, float]:
    """The rows of the 2-D views, in blocks: (every element within tolerance, max abs err, max rel err,
    the smallest row tolerance used). NaN/inf anywhere: False (the exact path words it).

    Per block: |out - ref| and its max, |ref| (and its row means when the rows' scales are not given), the
    relative error; the element-wise tolerance test itself runs only when the block's worst error exceeds
    its smallest row tolerance (an honest output's errors sit far below it, so it rarely does).
    ``rel=False``: no relative error (NaN; three passes fewer: a timed output's judgement needs only the verdict)."""
    L = a2.shape[1]
    step = max(1, BLOCK // max(L, 1))
    R = a2.shape[0]
    rows = min(step, R)
    d = np.empty((rows, L), b2.dtype)
    m = np.empty((rows, L), b2.dtype)
    max_rel = 0.0 if rel else math.nan
    max_abs = 0.0
    min_tol = math.inf
    ok = True
    with np.errstate(all="ignore"):
        for s in range(0, R, step):
            e = min(R, s + step) - s
            dd, mm = d[:e], m[:e]
            np.subtract(a2[s:s + e], b2[s:s + e], out=dd)
            np.abs(dd, out=dd)  # |out - ref|
            m_abs = float(dd.max())
            if not math.isfinite(m_abs):
                return False, m_abs, m_abs, min_tol
            if rel:
                np.abs(b2[s:s + e], out=mm)  # |ref|
            if scale_rows:  # the rows' own scales, from the block already in cache
                bb = b2[s:s + e]
                sq = (bb[:, None, :] @ bb[:, :, None]).reshape(e)  # row sums of squares (batched BLAS dots)
                if float(mm.min()) > 0 if rel else bool(bb.all()):  # no zeros (usual): the RMS over the row's length
                    sq *= np.float32(1.0 / L)
                else:  # the RMS of the nonzero values
                    sq /= np.maximum(np.count_nonzero(bb, axis=1), 1).astype(np.float32)
                tol = _atol_of_scale(np.sqrt(sq, out=sq)[:, None], atol, rtol)
            elif tol_rows is not None:
                tol = tol_rows[s:s + e]
            else:
                tol = tol_cols if tol_cols is not None else np.float32(atol)
            t_min = float(np.min(tol))
            min_tol = min(min_tol, t_min)
            max_abs = max(max_abs, m_abs)
            if ok and m_abs > t_min * (1 - 1e-5):  # the full test: |out - ref| - rtol*|ref| <= tol
                if not rel:
                    np.abs(b2[s:s + e], out=mm)
                v = np.multiply(mm, rtol)
                np.subtract(dd, v, out=v)
                ok = bool((v <= np.asarray(tol) * (1 - 1e-5)).all())
            if rel:  # relative error; x/0 is inf and 0/0 NaN, which fmax skips
                max_rel = max(max_rel, float(np.fmax.reduce(np.divide(dd, mm, out=mm), axis=None)))
    return ok, max_abs, max_rel, min_tol


def _scan(out: np.ndarray, ref: np.ndarray, rtol: float, atol: float, tol: np.ndarray | None,
          axis: int, rel: bool = True) -> tuple[bool, float, float, float]:
    """The whole output in row blocks that stay in cache."""
    R, L, rows_last = _as_rows(ref, axis)
    a2, b2 = out.reshape(R, L), ref.reshape(R, L)
    tol_rows = tol_cols = None
    scale_rows = tol is None and rows_last
    if tol is not None or not rows_last:
        full = tol if tol is not None else row_atol(ref, atol, rtol, axis)
        if rows_last:
            tol_rows = np.ascontiguousarray(full.reshape(R, 1))
        elif full.size == 1:
            tol_cols = full.reshape(1, 1)
        elif ref.ndim == 2:
            tol_cols = full.reshape(1, L) if full.shape == (1, L) else None
            if tol_cols is None:
                tol_rows = full.reshape(R, 1)
        else:  # rows along an inner axis of an n-d array: broadcast once (rare; no task does this)
            b = np.ascontiguousarray(np.broadcast_to(full, ref.shape))
            return _scan_full(out, ref, rtol, b)
    # One thread: split in two, the pass took longer (2.8 -> 4.4 ms per softmax output inside an evaluation,
    # 12-02): its blocks are a few microseconds of numpy each, and two threads queue on the GIL between them.
    return _scan_rows(a2, b2, rtol, atol, tol_rows, tol_cols, scale_rows, rel)


def _scan_full(out: np.ndarray, ref: np.ndarray, rtol: float, tol: np.ndarray) -> tuple[bool, float, float, float]:
    with np.errstate(all="ignore"):
        d = np.abs(out - ref)
        m_abs = float(d.max())
        if not math.isfinite(m_abs):
            return False, m_abs, m_abs, float(tol.min())
        ok = bool((d - rtol * np.abs(ref) <= tol * (1 - 1e-5)).all())
        rel = float((d / np.maximum(np.abs(ref), np.finfo(ref.dtype).tiny)).max())
    return ok, m_abs, rel, float(tol.min())


# -------------------------------------------------------------------------------------------- compare

EXACT_CHECKS = ("type", "shape", "dtype")


def _exact_failure(name: str, detail: str) -> Comparison:
    checks = []
    seen = False
    for n in EXACT_CHECKS + ("finite", "close"):
        if n == name:
            checks.append(Check(n, False, detail))
            seen = True
        else:
            checks.append(Check(n, None if seen else True))
    return Comparison(False, detail, checks=tuple(checks))


def compare(out: object, ref: np.ndarray, atol: float = 1e-2, rtol: float = 1e-2, exact: bool = True,
            axis: int | None = None, tol: np.ndarray | None = None, rel: bool = True) -> Comparison:
    """Judge ``out`` against ``ref``.

    exact=True (hardened): exactly ``np.ndarray`` (a subclass or array-like could lie to a comparison),
    equal shape (no broadcasting) and dtype, no NaN/inf where the reference is finite, then
    |out - ref| <= atol_row + rtol*|ref| everywhere, ``atol_row`` per row along ``axis`` (see the module
    docstring; ``tol`` passes it precomputed, keepdims, e.g. from a trial's cached facts). One blocked
    in-cache pass over both arrays; the exact whole-array path runs only
    when that pass fails, to word the message. ``rel=False``: a passing output's max relative error is not
    computed (NaN; a timed output's judgement needs the verdict, not the figure).

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
        return _exact_failure("type", f"output is {type(out).__module__}.{type(out).__qualname__}, not numpy.ndarray")
    if out.shape != ref.shape:
        return _exact_failure("shape", f"shape {out.shape} != {ref.shape}")
    if out.dtype != ref.dtype:
        return _exact_failure("dtype", f"dtype {out.dtype} != {ref.dtype}")
    a = row_axis(ref.shape, axis)
    if ref.size == 0:
        return Comparison(True, "max abs err 0", 0.0, 0.0, False, _passed_checks("max abs err 0"))
    passed, max_abs, max_rel, min_tol = _scan(out, ref, rtol, atol, tol, a, rel)
    degenerate = min_tol < atol * (1 - 1e-6)  # tolerances are float32
    if passed:
        msg = f"max abs err {max_abs:.2g}" + (" (degenerate: scale-aware)" if degenerate else "")
        return Comparison(True, msg, max_abs, max_rel, degenerate, _passed_checks(msg))
    tol_of = (lambda: tol) if tol is not None else (lambda: row_atol(ref, atol, rtol, a))
    return _judge_failure(out, ref, rtol, tol_of, atol, known_finite=math.isfinite(max_abs))


def _passed_checks(detail: str) -> tuple[Check, ...]:
    return tuple(Check(n, True) for n in EXACT_CHECKS + ("finite",)) + (Check("close", True, detail),)


def _failure_scan(out: np.ndarray, ref: np.ndarray, rtol: float, tol: np.ndarray) -> tuple[int, int, float, float]:
    """(elements out of tolerance, flat index of the worst of them, max abs err, max rel err), in row blocks
    through three reused scratch blocks (no full-size temporaries, no allocation per block: a wrong output,
    the usual outcome for a model's samples, costs about what a right one does)."""
    R, L, _ = _as_rows(ref, ref.ndim - 1)
    a2, b2 = out.reshape(R, L), ref.reshape(R, L)
    full = np.broadcast_to(tol, ref.shape).reshape(R, L) if np.ndim(tol) else None
    step = max(1, BLOCK // max(L, 1))
    rows = min(step, R)
    d_buf, m_buf, lim_buf = (np.empty((rows, L), ref.dtype) for _ in range(3))
    over_buf = np.empty((rows, L), bool)
    n_over, best_i, best_v, max_abs, max_rel = 0, 0, -1.0, 0.0, 0.0
    with np.errstate(all="ignore"):
        for s in range(0, R, step):
            e = min(R, s + step) - s
            d, m, lim, over = d_buf[:e], m_buf[:e], lim_buf[:e], over_buf[:e]
            np.subtract(a2[s:s + e], b2[s:s + e], out=d)
            np.abs(d, out=d)
            d_max = float(d.max())
            if math.isnan(d_max):  # NaN counts as infinitely far (max propagates NaN: the pass runs only then)
                np.copyto(d, np.inf, where=np.isnan(d))
                d_max = math.inf
            np.abs(b2[s:s + e], out=m)
            np.multiply(m, np.float32(rtol), out=lim)
            lim += full[s:s + e] if full is not None else np.float32(tol)
            lim *= np.float32(1 - 1e-5)
            np.greater(d, lim, out=over)
            k = int(np.count_nonzero(over))
            if k:
                n_over += k
                w = lim  # the errors out of tolerance, -1 elsewhere
                w.fill(-1.0)
                np.copyto(w, d, where=over)
                j = int(np.argmax(w))
                if float(w.flat[j]) > best_v:
                    best_v, best_i = float(w.flat[j]), s * L + j
            max_abs = max(max_abs, d_max)
            max_rel = max(max_rel, float(np.fmax.reduce(np.divide(d, m, out=m), axis=None)))
    return n_over, best_i, max_abs, max_rel


def _judge_failure(out: np.ndarray, ref: np.ndarray, rtol: float, tol_of: "Callable[[], np.ndarray]",
                   atol: float, known_finite: bool = False) -> Comparison:
    """The exact, whole-array judgement with its message: run only when the fast scan did not pass. The row
    tolerances are asked only once the output is known finite (a NaN output needs none). ``known_finite``:
    the scan found every |out - ref| finite, so neither array holds a NaN or an inf (no pass looks again)."""
    finite_check = Check("finite", True)
    nonfinite = None
    if not known_finite:
        with np.errstate(all="ignore"):
            nonfinite = ~np.isfinite(out)
            if nonfinite.any():
                np.logical_and(nonfinite, np.isfinite(ref), out=nonfinite)
    if nonfinite is not None and nonfinite.any():
        i = int(np.argmax(nonfinite))
        kind = "NaN" if np.isnan(out.flat[i]) else "inf"
        msg = f"{kind} at {_where(i, ref.shape)} ({int(np.count_nonzero(nonfinite))} non-finite)"
        checks = tuple(Check(n, True) for n in EXACT_CHECKS) + (Check("finite", False, msg), Check("close", False, msg))
        return Comparison(False, msg, float("inf"), float("inf"), False, checks)
    tol = tol_of()
    n_over, i, max_abs, max_rel = _failure_scan(out, ref, rtol, tol)
    degenerate = bool(tol.min() < atol * (1 - 1e-6))
    if n_over:
        t_here = float(np.broadcast_to(tol, ref.shape).flat[i])
        note = f" (degenerate output scale: tolerance {t_here:.2g})" if t_here < atol * (1 - 1e-6) else ""
        msg = (f"max abs err {float(abs(float(out.flat[i]) - float(ref.flat[i]))):.3g} at {_where(i, ref.shape)}, "
               f"{n_over} of {ref.size} elements out of tolerance{note}")
        checks = tuple(Check(n, True) for n in EXACT_CHECKS) + (finite_check, Check("close", False, msg))
        return Comparison(False, msg, max_abs, max_rel, degenerate, checks)
    msg = f"max abs err {max_abs:.2g}" + (" (degenerate: scale-aware)" if degenerate else "")
    return Comparison(True, msg, max_abs, max_rel, degenerate, _passed_checks(msg))


def check_output(out: object, ref: np.ndarray, hardened: bool) -> tuple[bool, str]:
    """The lecture's interface: (ok, message) with atol = rtol = 1e-2, hardened = ``compare``'s exact
    checks and per-row closeness (the per-trial checks of ``kbench.core.judging`` need a task and a
    trial; the grader adds them). The relative error is not computed: the message does not carry it."""
    c = compare(out, np.asarray(ref), 1e-2, 1e-2, exact=hardened, rel=False)
    return c.ok, c.message


#: An output may differ from the exact (float64) answer by this many times the float32 reference's own
#: worst rounding error before it is called wrong.
FLOAT32_NOISE_FACTOR = 4.0


def reference_noise(ref: np.ndarray, exact64: np.ndarray, axis: int | None = None,
                    floor: bool = True) -> np.ndarray:
    """The float32 reference's own rounding error per row (keepdims): the worst |ref - exact| in the row,
    and (``floor``) at least the whole output's worst error scaled to the row's magnitude (an honest kernel's
    rounding is relative to the values it sums; a tiny row is not granted a large row's slack). Deviations
    from a large constant part take no floor: every row has the constant's magnitude, so one ill-conditioned
    row (two attention scores tied within rounding) granted its error to every row, and mean(v) for every
    query passed offset attention's centred check on one draw in five."""
    a = row_axis(ref.shape, axis)
    with np.errstate(all="ignore"):
        err = np.abs(ref.astype(np.float64) - exact64)
        per_row = err.max(axis=a, keepdims=True) if ref.size else np.zeros((1,) * ref.ndim)
        if not floor:
            return per_row
        mag = np.abs(exact64).max(axis=a, keepdims=True) if ref.size else np.ones((1,) * ref.ndim)
        worst, top = float(per_row.max(initial=0.0)), float(mag.max(initial=0.0))
        scaled = worst * mag / top if top > 0 else np.zeros_like(mag)
    return np.maximum(per_row, scaled)


def recheck_against_exact(out: np.ndarray, ref: np.ndarray, exact_ref: np.ndarray, atol: float, rtol: float,
                          first: Comparison, axis: int | None = None) -> Comparison:
    """A second opinion on an output that failed only on tolerance: judged against the float64 answer,
    with the float32 reference's own rounding error (per row, ``reference_noise``) as extra slack.

    Why: with large inputs (offset's mean of 1000) a dot product cancels to a small value, and two honest
    float32 kernels summing in different orders can land 0.1 apart at one element of 131 072 while
    the 1e-2 tolerance is relative to that small value. An honest kernel is as accurate as float32
    arithmetic allows; a bug (one-pass variance, float16, a wrong formula) is far less accurate than the
    reference's own rounding, so this slack does not let it through. Row tolerances come from the float64
    answer by the same per-row rule (a small row stays small: all-zeros must not pass a tiny reference)."""
    with np.errstate(all="ignore"):
        exact64 = np.asarray(exact_ref, dtype=np.float64)  # already float64 from the grader: no copy
        if not np.isfinite(exact64).all() and np.isfinite(ref).all():
            return first
        noise = reference_noise(ref, exact64, axis)
        if not np.isfinite(noise).all():
            return first
        tol = row_atol(exact64, atol, rtol, axis).astype(np.float64)
        diff = np.abs(out.astype(np.float64) - exact64)
        limit = tol + rtol * np.abs(exact64) + FLOAT32_NOISE_FACTOR * noise
        n_over = int(np.count_nonzero(~(diff <= limit)))
    if n_over == 0:
        msg = (f"max abs err {first.max_abs_err:.3g} against the float32 reference; within "
               f"{FLOAT32_NOISE_FACTOR:g}x that reference's own rounding error ({float(noise.max(initial=0)):.2g}) "
               "of the float64 answer")
        checks = tuple(replace(c, ok=True, detail=msg) if c.name == "close" else c for c in first.checks)
        return Comparison(True, msg, first.max_abs_err, first.max_rel_err, first.degenerate, checks)
    return first  # the float64 answer agrees: wrong by more than float32 rounding explains
