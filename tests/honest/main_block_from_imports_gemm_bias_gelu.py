"""H23 honest GELU(x @ W + b) with ``from time import perf_counter`` and ``import sys`` at the top for its ``__main__`` self-test."""

import math
import sys
from time import perf_counter

import numpy as np

K = math.sqrt(2.0 / math.pi)


def forward(x, params, alloc):
    h = x["x"] @ params["W"] + params["b"]
    t = np.tanh(K * (h + 0.044715 * h ** 3))
    return 0.5 * h * (1.0 + t)


if __name__ == "__main__":
    rng = np.random.default_rng(1)
    xs = {"x": rng.standard_normal((256, 512), dtype=np.float32)}
    ps = {"W": rng.standard_normal((512, 512), dtype=np.float32) / 22.6, "b": np.zeros(512, np.float32)}
    start = perf_counter()
    y = forward(xs, ps, None)
    print(f"{perf_counter() - start:.4f}s", y.shape, file=sys.stderr)
    sys.exit(0)
