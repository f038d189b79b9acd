"""H10 honest (x @ W).sum(axis=1) as x @ W.sum(axis=1), with ``isinstance``, ``np.newaxis`` and ``global``."""

_WSUM_CACHE = None


def init(params):
    global _WSUM_CACHE
    out = dict(params)
    out["w_sum"] = params["W"].sum(axis=1, dtype=np.float64).astype(np.float32)
    _WSUM_CACHE = out["w_sum"].shape
    return out


def forward(x, params, alloc):
    a = x["x"]
    assert isinstance(a, np.ndarray) and _WSUM_CACHE == params["w_sum"].shape
    return (a @ params["w_sum"])[:, np.newaxis]
