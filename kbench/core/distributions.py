"""Input distributions: the values a grader feeds a candidate decide which bugs it can see.

The default set mirrors KernelBench v0.1's ``rand_mix`` pool plus an ``offset`` distribution (values
around 1000, where cancellation bugs show). ``exponential`` and ``edge`` are registered but off by
default; ``edge`` is the hand-written boundary set (constant rows, zero rows, huge magnitudes) that
random testing rarely reaches.

Cost: drawing inputs must stay cheap next to the kernels they feed (the lecture draws hundreds of
inputs in-process). Every distribution is a float32 *fill* of a preallocated array, without float64
intermediates or extra passes (Laplace is an exponential with a random sign; lognormal exp() of a
float32 normal), and a large array is filled in chunks on up to two threads, one child generator
(``Generator.spawn``) per chunk: numpy's generators release the GIL while they fill, and the chunks
are a deterministic function of the caller's generator, so a seeded ``rng`` still gives one result.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

import numpy as np

from kbench.core.once import once

F32 = np.float32

#: Arrays at least this large are filled in parallel chunks (below it a thread hand-off costs more).
PARALLEL_MIN = 1 << 18
_CPUS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
FILL_THREADS = max(1, min(2, _CPUS))

Fill = Callable[[np.random.Generator, np.ndarray], None]


@dataclass(frozen=True)
class Distribution:
    name: str
    note: str
    fill: Fill  # fills a flat float32 array in place with independent draws
    finish: Callable[[np.random.Generator, np.ndarray], None] | None = None  # whole-array structure (edge)

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        x = np.empty(shape, F32)
        _fill_parallel(self.fill, rng, x.reshape(-1))
        if self.finish is not None:
            self.finish(rng, x)
        return x


@once
def _executor() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(FILL_THREADS, thread_name_prefix="kbench-fill")


def _children(rng: np.random.Generator, n: int) -> list[np.random.Generator] | None:
    try:
        return rng.spawn(n)
    except (TypeError, ValueError, AttributeError):  # a generator without a SeedSequence cannot spawn
        return None


def _fill_parallel(fill: Fill, rng: np.random.Generator, flat: np.ndarray) -> None:
    kids = _children(rng, FILL_THREADS) if FILL_THREADS > 1 and flat.size >= PARALLEL_MIN else None
    if kids is None:
        fill(rng, flat)
        return
    bounds = np.linspace(0, flat.size, len(kids) + 1).astype(int)
    jobs = [_executor().submit(fill, k, flat[a:b]) for k, a, b in zip(kids, bounds[:-1], bounds[1:])]
    for j in jobs:
        j.result()


def _normal(rng: np.random.Generator, out: np.ndarray) -> None:
    rng.standard_normal(dtype=F32, out=out)


def _uniform(rng: np.random.Generator, out: np.ndarray) -> None:
    rng.random(dtype=F32, out=out)  # [0, 1) -> [-1, 1)
    out *= F32(2)
    out -= F32(1)


def _laplace(rng: np.random.Generator, out: np.ndarray) -> None:
    """Laplace(0, 1) is Exp(1) with a fair random sign."""
    rng.standard_exponential(dtype=F32, out=out)
    np.copysign(out, np.frombuffer(rng.bytes(out.size), np.int8), out=out)


def _lognormal(rng: np.random.Generator, out: np.ndarray) -> None:
    rng.standard_normal(dtype=F32, out=out)
    np.exp(out, out=out)


def _offset(rng: np.random.Generator, out: np.ndarray) -> None:
    rng.standard_normal(dtype=F32, out=out)
    out += F32(1000)


def _exponential(rng: np.random.Generator, out: np.ndarray) -> None:
    rng.standard_exponential(dtype=F32, out=out)


def _edge_rows(rng: np.random.Generator, x: np.ndarray) -> None:
    """Every 4th row constant, every 4th (shifted) row zero, and some rows huge, over normal values.

    Rows are taken along the last axis, which is the axis every reduction in our tasks runs over.
    """
    shape = x.shape
    rows = x.reshape(-1, shape[-1]) if len(shape) > 1 else x.reshape(-1, 1)
    n = rows.shape[0]
    rows[0::4] = rng.standard_normal((len(range(0, n, 4)), 1), dtype=F32)  # constant rows
    rows[1::4] = 0.0  # all-zero rows
    rows[2::8] *= F32(1e4)  # very large magnitudes


_REGISTRY: dict[str, Distribution] = {
    d.name: d
    for d in (
        Distribution("normal", "N(0, 1), the KernelBench v0 default", _normal),
        Distribution("uniform", "U(-1, 1): small values only", _uniform),
        Distribution("laplace", "Laplace(0, 1): heavier tails than normal", _laplace),
        Distribution("lognormal", "exp(N(0, 1)): all positive, reaching the hundreds", _lognormal),
        Distribution("offset", "1000 + N(0, 1): a large mean, tiny spread", _offset),
        Distribution("exponential", "Exp(1): positive, KernelBench rand_mix member", _exponential),
        Distribution("edge", "boundary rows: constant, all-zero, and 1e4-scaled", _normal, _edge_rows),
    )
}

#: The default set, in this order.
DISTS: tuple[str, ...] = ("normal", "uniform", "laplace", "lognormal", "offset")
#: Every registered distribution, in the order of the explorer's number keys 1-7.
ALL_DISTS: tuple[str, ...] = tuple(_REGISTRY)
DIST_NOTES: dict[str, str] = {name: d.note for name, d in _REGISTRY.items()}


def get(name: str) -> Distribution:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown distribution {name!r} (known: {', '.join(ALL_DISTS)})") from None


def sample(rng: np.random.Generator, dist: str, shape: tuple[int, ...]) -> np.ndarray:
    """A fresh float32 array of ``shape`` drawn from ``dist`` (a new allocation every call)."""
    return get(dist).sample(rng, tuple(shape))
