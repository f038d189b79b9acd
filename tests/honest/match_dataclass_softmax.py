"""H20 honest softmax that matches a ``@dataclass`` positionally (``case Shape(rows, cols)``) and builtins (``int(n)``)."""

from dataclasses import dataclass

import numpy as np


@dataclass
class Shape:
    rows: int
    cols: int


def _block_rows(spec) -> int:
    match spec:
        case Shape(rows, cols) if cols > 0:
            return max(1, min(rows, (1 << 20) // cols))
        case int(n):
            return n
        case _:
            return 256


def forward(x, params, alloc):
    a = x["x"]
    out = alloc(a.shape)
    step = _block_rows(Shape(*a.shape))
    for i in range(0, a.shape[0], step):
        blk = a[i:i + step]
        e = np.exp(blk - blk.max(axis=-1, keepdims=True))
        np.divide(e, e.sum(axis=-1, keepdims=True), out=out[i:i + step])
    return out
