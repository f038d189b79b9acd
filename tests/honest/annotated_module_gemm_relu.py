"""H25 honest relu(x @ W + b) * scale with annotated module constants (``Final``), ``dtype: type`` defaults and ``itertools``."""

from itertools import islice
from typing import Final

import numpy as np

DTYPE: type = np.float32
CHUNK: Final[int] = 256


def _chunks(n: int, size: int = CHUNK):
    starts = range(0, n, size)
    return list(islice(((s, min(s + size, n)) for s in starts), None))


def forward(x: dict, params: dict, alloc, dtype: type = DTYPE) -> np.ndarray:
    a, w, b = x["x"], params["W"], params["b"]
    s = dtype(params["scale"])
    out = alloc((a.shape[0], w.shape[1]), dtype)
    for lo, hi in _chunks(a.shape[0]):
        blk = a[lo:hi] @ w
        blk += b
        np.maximum(blk, 0, out=blk)
        blk *= s
        out[lo:hi] = blk
    return out
