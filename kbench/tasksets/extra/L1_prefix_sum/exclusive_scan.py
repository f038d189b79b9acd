"""Prefix sum as a shifted cumulative sum, the way scan kernels usually write it.

A scan is computed by shifting the running total: the output at j is the sum of
everything before j, which is what a prefix sum means.
"""


def forward(x, params, alloc):
    a = x["x"]
    out = np.zeros_like(a)
    np.cumsum(a[:, :-1], axis=1, out=out[:, 1:])
    return out
