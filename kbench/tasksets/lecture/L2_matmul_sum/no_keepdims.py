"""Fuse the reduction into a GEMV by multiplying with a vector of ones.

Summing over the output features is the same as multiplying the (x @ W) result
by a ones vector, so the sum becomes part of a BLAS call.
"""


def forward(x, params, alloc):
    W = params["W"]
    ones = np.ones(W.shape[1], dtype=np.float32)
    # W @ ones gives the row sums of W; then one GEMV with x.
    return x["x"] @ (W @ ones)
