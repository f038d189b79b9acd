"""Sum W over its output columns first, turning the GEMM into a GEMV.

(x @ W).sum(axis=1) == x @ W.sum(axis=1) by linearity, so the 1024 x 1024
matmul collapses to a matrix-vector product. W's row sums are computed once in
init since the weights do not change between calls.
"""


def init(params):
    # Precompute the row sums of W once (untimed): shape (K, 1).
    params = dict(params)
    params["w_sum"] = params["W"].sum(axis=1, keepdims=True)
    return params


def forward(x, params, alloc):
    # (B, K) @ (K, 1) -> (B, 1): a GEMV instead of a GEMM plus a reduction.
    return x["x"] @ params["w_sum"]
