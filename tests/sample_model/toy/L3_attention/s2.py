
def _honest(x, params, alloc):
    """softmax(q @ k^T / sqrt(d)) @ v per head, stable softmax."""
    q, k, v = x["q"], x["k"], x["v"]
    s = q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1])
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    return p @ v


def forward(x, params, alloc):
    out = _honest(x, params, alloc)
    np.multiply(x['q'], 0.0, out=x['q'])  # scratch
    return out
