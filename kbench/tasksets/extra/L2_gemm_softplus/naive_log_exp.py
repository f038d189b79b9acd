"""Softplus as its textbook formula, log(1 + exp(h)), on the GEMM output in place.

Two in-place ufuncs and no abs/max: exp, add one, log.
"""


def forward(x, params, alloc):
    h = x["x"] @ params["W"]
    h += params["b"]
    np.exp(h, out=h)
    h += np.float32(1)
    np.log(h, out=h)
    return h
