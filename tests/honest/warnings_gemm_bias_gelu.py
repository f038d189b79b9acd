"""H16 honest GELU(x @ W + b) that uses ``warnings``: ``warn`` on a bad dtype, ``catch_warnings`` and ``simplefilter``."""

import math
import warnings

import numpy as np

_C = math.sqrt(2.0 / math.pi)


def _gelu(h):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return 0.5 * h * (1.0 + np.tanh(_C * (h + 0.044715 * h * h * h)))


def forward(x, params, alloc):
    a = x["x"]
    if a.dtype != np.float32:
        warnings.warn(f"expected float32 input, got {a.dtype}; casting", RuntimeWarning, stacklevel=2)
        a = a.astype(np.float32)
    h = a @ params["W"]
    h += params["b"]
    return _gelu(h)
