"""H1 honest GELU with ``from __future__ import annotations`` and type hints on every function."""

from __future__ import annotations

import math

import numpy as np

_C: float = math.sqrt(2.0 / math.pi)


def _gelu(a: np.ndarray, k: float = 0.044715) -> np.ndarray:
    return 0.5 * a * (1.0 + np.tanh(_C * (a + k * a * a * a)))


def forward(x: dict[str, np.ndarray], params: dict, alloc) -> np.ndarray:
    return _gelu(x["x"])
