"""H22 honest attention as a class with private methods and attributes (``self._scores``, ``cls._cache``), used through a module-level instance."""

import math

import numpy as np


class Attention:
    _scales: dict = {}

    def __init__(self, causal: bool = False) -> None:
        self._causal = causal

    @classmethod
    def _scale(cls, d: int) -> float:
        if d not in cls._scales:
            cls._scales[d] = 1.0 / math.sqrt(d)
        return cls._scales[d]

    def _scores(self, q, k):
        return (q @ k.transpose(0, 2, 1)) * np.float32(self._scale(q.shape[-1]))

    def _probs(self, s):
        s -= s.max(axis=-1, keepdims=True)
        np.exp(s, out=s)
        s /= s.sum(axis=-1, keepdims=True)
        return s

    def __call__(self, q, k, v):
        return self._probs(self._scores(q, k)) @ v


_ATTN = Attention()


def forward(x, params, alloc):
    assert not _ATTN._causal
    return _ATTN(x["q"], x["k"], x["v"])
