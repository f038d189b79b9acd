"""H13 honest GELU laid out as models write it: ``import time``/``argparse`` at the top, a ``__main__`` benchmark block."""

import argparse
import math
import time

import numpy as np

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def gelu(x: np.ndarray) -> np.ndarray:
    inner = SQRT_2_OVER_PI * (x + 0.044715 * (x * x * x))
    return 0.5 * x * (1.0 + np.tanh(inner))


def forward(x, params, alloc):
    return gelu(x["x"])


def reference(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="benchmark the GELU kernel")
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    a = np.random.default_rng(0).standard_normal((512, 512)).astype(np.float32)
    np.testing.assert_allclose(forward({"x": a}, {}, None), reference(a), rtol=1e-5, atol=1e-6)
    t0 = time.perf_counter()
    for _ in range(args.repeats):
        forward({"x": a}, {}, None)
    t1 = time.perf_counter()
    for _ in range(args.repeats):
        reference(a)
    t2 = time.perf_counter()
    print(f"kernel {(t1 - t0) / args.repeats * 1e3:.3f} ms, reference {(t2 - t1) / args.repeats * 1e3:.3f} ms")
