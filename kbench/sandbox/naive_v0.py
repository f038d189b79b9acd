"""KernelBench v0's handlers, as the original runs them: in the candidate's own process.

Naive mode keeps v0's *grading* weaknesses on purpose (the lecture shows what they let through): a
caching allocator that hands back freed blocks unchanged, the reference run first on the same uncopied
inputs, shape + ``allclose`` only, and a timing loop that looks the clock up in the candidate's process.
The OS confinement is the same as in hardened mode.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from kbench.core.compare import compare
from kbench.core.loader import error_line
from kbench.sandbox import protocol as P

_ndarray = np.ndarray


class CachingPool:
    """A caching allocator, as PyTorch's: freed blocks are handed out again, contents unchanged."""

    def __init__(self) -> None:
        self.free: dict[tuple, list[np.ndarray]] = {}

    @staticmethod
    def _key(shape: Any, dtype: Any) -> tuple:
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
        return shape, np.dtype(dtype).str

    def alloc(self, shape: Any, dtype: Any = np.float32) -> np.ndarray:
        blocks = self.free.get(self._key(shape, dtype))
        return blocks.pop() if blocks else np.empty(shape, dtype)

    def release(self, arr: object) -> None:
        if type(arr) is _ndarray and arr.flags.owndata and arr.flags.c_contiguous:
            blocks = self.free.setdefault(self._key(arr.shape, arr.dtype), [])
            if len(blocks) < 4:
                blocks.append(arr)


def trial(ref: Callable, cand: Callable, x: dict, ref_params: dict, cand_params: dict, pool: CachingPool,
          req: P.NaiveTrial, nan_alloc: Callable) -> P.NaiveTrialDone:
    """Reference first on the same (uncopied) inputs, then the candidate; the reference's output block goes
    back to the caching allocator once copied for comparison."""
    t0 = time.perf_counter_ns()
    ref_out = ref(x, ref_params, None)
    kernel_ns = time.perf_counter_ns() - t0
    expected = np.array(ref_out, copy=True)
    pool.release(ref_out)
    alloc = nan_alloc if req.alloc == "pool" else pool.alloc
    t0 = time.perf_counter_ns()
    try:
        out = cand(x, cand_params, alloc)
    except BaseException as e:  # noqa: BLE001
        return P.NaiveTrialDone(False, "", None, None, error_line(e), kernel_ns + time.perf_counter_ns() - t0)
    kernel_ns += time.perf_counter_ns() - t0
    c = compare(out, expected, req.atol, req.rtol, exact=False)
    return P.NaiveTrialDone(bool(c.ok), P.short(c.message), c.max_abs_err, c.max_rel_err, "", kernel_ns)


def timing(ref: Callable, cand: Callable, x: dict, ref_params: dict, cand_params: dict, pool: CachingPool,
           req: P.NaiveTime) -> P.NaiveTimes:
    """One reused input; warm-up, then all reference runs, then all candidate runs. The clock is looked up
    at each use, as a harness sharing a process with the candidate does."""
    samples: dict[str, list[float]] = {}
    warmup = 0.0
    for which, fn, params, alloc in (("ref", ref, ref_params, None), ("cand", cand, cand_params, pool.alloc)):
        t_start = time.perf_counter()
        for _ in range(req.warmup):
            pool.release(fn(x, params, alloc))
        warmup += time.perf_counter() - t_start
        per_call = (time.perf_counter() - t_start) / max(req.warmup, 1)
        runs = int(min(req.max_runs, max(req.min_runs, req.budget_s / 2 / max(per_call, 1e-9))))
        ts = []
        for _ in range(runs):
            t0 = time.perf_counter()
            out = fn(x, params, alloc)
            ts.append(time.perf_counter() - t0)
            pool.release(out)
        samples[which] = ts
    return P.NaiveTimes(tuple(samples["ref"]), tuple(samples["cand"]), int(warmup * 1e9))
