"""H17 honest attention with a ``functools.lru_cache`` helper for the scale and ``typing`` hints throughout."""

from functools import lru_cache, partial, reduce
from typing import Tuple

import math

import numpy as np


@lru_cache(maxsize=None)
def softmax_scale(head_dim: int) -> float:
    return 1.0 / math.sqrt(head_dim)


def _stable_softmax(s: np.ndarray, axis: int = -1) -> np.ndarray:
    s = s - s.max(axis=axis, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=axis, keepdims=True)
    return s


row_softmax = partial(_stable_softmax, axis=-1)


def _qkv(x) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    return x["q"], x["k"], x["v"]


def forward(x, params, alloc):
    q, k, v = _qkv(x)
    scale = softmax_scale(q.shape[-1])
    s = np.matmul(q * np.float32(scale), k.transpose(0, 2, 1))
    p = row_softmax(s)
    shape = reduce(lambda acc, n: acc + (n,), v.shape[1:], (q.shape[0],))
    return (p @ v).reshape(shape)
