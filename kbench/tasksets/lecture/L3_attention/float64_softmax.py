"""Compute scores and softmax in float64 so exp can never overflow.

Double precision keeps the 512-term softmax sums exact to well below the
tolerance; the result is cast back to float32 at the end.
"""


def forward(x, params, alloc):
    q = x["q"].astype(np.float64)
    k = x["k"].astype(np.float64)
    v = x["v"].astype(np.float64)
    s = q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1])
    # Stable softmax in double precision.
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    return (p @ v).astype(np.float32)
