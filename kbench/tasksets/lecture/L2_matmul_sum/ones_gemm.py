"""Let BLAS do the reduction: multiply the product by a ones column.

A GEMM with a (N, 1) ones matrix performs the sum over output features with
vectorised BLAS code instead of numpy's generic reduction.
"""


def forward(x, params, alloc):
    h = x["x"] @ params["W"]
    # Row sums via a skinny GEMM; keeps the (B, 1) output shape.
    ones = np.ones((h.shape[1], 1), dtype=np.float32)
    return h @ ones
