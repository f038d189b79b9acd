"""Input distributions: the values a grader feeds a candidate decide which bugs it can see.

The default set mirrors KernelBench v0.1's ``rand_mix`` pool plus an ``offset`` distribution (values
around 1000, where cancellation bugs show). ``exponential`` and ``edge`` are registered but off by
default; ``edge`` is the hand-written boundary set (constant rows, zero rows, huge magnitudes) that
random testing rarely reaches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

F32 = np.float32


@dataclass(frozen=True)
class Distribution:
    name: str
    note: str
    sample: Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]


def _normal(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.standard_normal(shape, dtype=F32)


def _uniform(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.random(shape, dtype=F32) * 2 - 1


def _laplace(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.laplace(0.0, 1.0, shape).astype(F32)


def _lognormal(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.lognormal(0.0, 1.0, shape).astype(F32)


def _offset(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.standard_normal(shape, dtype=F32) + F32(1000)


def _exponential(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.standard_exponential(shape, dtype=F32)


def _edge(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Normal values with every 4th row constant, every 4th (shifted) row zero, and some rows huge.

    Rows are taken along the last axis, which is the axis every reduction in our tasks runs over.
    """
    x = rng.standard_normal(shape, dtype=F32)
    rows = x.reshape(-1, shape[-1]) if len(shape) > 1 else x.reshape(-1, 1)
    n = rows.shape[0]
    rows[0::4] = rng.standard_normal((len(range(0, n, 4)), 1), dtype=F32)  # constant rows
    rows[1::4] = 0.0  # all-zero rows
    rows[2::8] *= F32(1e4)  # very large magnitudes
    return x


_REGISTRY: dict[str, Distribution] = {
    d.name: d
    for d in (
        Distribution("normal", "N(0, 1), the KernelBench v0 default", _normal),
        Distribution("uniform", "U(-1, 1): small values only", _uniform),
        Distribution("laplace", "Laplace(0, 1): heavier tails than normal", _laplace),
        Distribution("lognormal", "exp(N(0, 1)): all positive, reaching the hundreds", _lognormal),
        Distribution("offset", "1000 + N(0, 1): a large mean, tiny spread", _offset),
        Distribution("exponential", "Exp(1): positive, KernelBench rand_mix member", _exponential),
        Distribution("edge", "boundary rows: constant, all-zero, and 1e4-scaled", _edge),
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
    return get(dist).sample(rng, tuple(shape))
