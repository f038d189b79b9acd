"""Use np.cumsum along the rows: O(n) per row instead of the O(n^2) triangular GEMM."""


def forward(x, params, alloc):
    out = alloc(x["x"].shape)
    np.cumsum(x["x"], axis=1, out=out)
    return out
