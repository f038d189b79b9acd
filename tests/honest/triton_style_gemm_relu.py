"""H14 honest relu(x @ W + b) * scale in Triton style: a helper class with ``load``/``store`` methods, tiled over rows."""

import numpy as np

BLOCK_M = 128


class TileLang:
    """A tiny stand-in for ``tl``: loads and stores row blocks of an array."""

    def load(self, ptr: np.ndarray, start: int, size: int) -> np.ndarray:
        return ptr[start:start + size]

    def store(self, ptr: np.ndarray, start: int, value: np.ndarray) -> None:
        ptr[start:start + value.shape[0]] = value

    def maximum(self, a: np.ndarray, b: float) -> np.ndarray:
        return np.maximum(a, b)


tl = TileLang()


def gemm_relu_scale_kernel(x, w, b, scale, out):
    m = x.shape[0]
    for start in range(0, m, BLOCK_M):
        rows = tl.load(x, start, BLOCK_M)
        acc = rows @ w
        acc += b
        tl.store(out, start, tl.maximum(acc, 0.0) * np.float32(scale))
    return out


def forward(x, params, alloc):
    a = x["x"]
    out = alloc((a.shape[0], params["W"].shape[1]))
    return gemm_relu_scale_kernel(a, params["W"], params["b"], params["scale"], out)
