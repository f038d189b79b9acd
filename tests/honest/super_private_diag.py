"""H24 honest diag(a) @ B through a small class hierarchy: ``super()._prepare`` in a subclass, private attributes, ``__repr__``."""

import numpy as np


class RowScale:
    def __init__(self, block: int = 256) -> None:
        self._block = block

    def _prepare(self, a):
        return a.reshape(-1, 1)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(block={self._block})"


class BlockedRowScale(RowScale):
    def _prepare(self, a):
        col = super()._prepare(a)
        return np.ascontiguousarray(col, dtype=np.float32)

    def apply(self, a, b, out):
        col = self._prepare(a)
        for i in range(0, b.shape[0], self._block):
            np.multiply(col[i:i + self._block], b[i:i + self._block], out=out[i:i + self._block])
        return out


_KERNEL = BlockedRowScale()


def forward(x, params, alloc):
    return _KERNEL.apply(x["a"], x["B"], alloc(x["B"].shape))
