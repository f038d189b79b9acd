"""H4 honest layer norm built from a closure factory, a generator of row blocks, ``nonlocal`` and ``try/finally``."""


def _make_norm(eps):
    count = 0

    def norm(block, gamma, beta, out):
        nonlocal count
        count += 1
        mu = block.mean(axis=-1, keepdims=True)
        d = block - mu
        var = (d * d).mean(axis=-1, keepdims=True)
        np.multiply(d / np.sqrt(var + eps), gamma, out=out)
        out += beta

    return norm


def _blocks(n, size):
    start = 0
    while start < n:
        yield start, min(start + size, n)
        start += size


def forward(x, params, alloc):
    a = x["x"]
    out = alloc(a.shape, np.float32)
    norm = _make_norm(params["eps"])
    try:
        for lo, hi in _blocks(a.shape[0], 256):
            norm(a[lo:hi], params["gamma"], params["beta"], out[lo:hi])
    finally:
        del norm
    return out
