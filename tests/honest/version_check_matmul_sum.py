"""H15 honest (x @ W).sum(axis=1) with numpy-version checks: ``hasattr(np, "vecdot")`` and ``np.__version__``."""

import numpy as np

NUMPY_MAJOR = int(np.__version__.split(".")[0])
HAS_VECDOT = hasattr(np, "vecdot")
HAS_MATVEC = hasattr(np, "matvec")


def init(params):
    w = params["W"]
    params = dict(params)
    params["w_rowsum"] = w.sum(axis=1, dtype=np.float64).astype(np.float32)
    return params


def forward(x, params, alloc):
    a = x["x"]
    w = params["w_rowsum"]
    if HAS_MATVEC and NUMPY_MAJOR >= 2:
        y = np.matvec(a, w)
    elif HAS_VECDOT:
        y = np.vecdot(a, w[np.newaxis, :])
    else:
        y = a @ w
    return y.reshape(-1, 1)
