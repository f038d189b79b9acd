"""Fold the scalar scale into W and b at init: no epilogue multiply.

relu(x W + b) * s == relu(x (W s) + b s), so pre-scaling the weights once leaves
only GEMM + bias + ReLU per call.
"""


def init(params):
    # Weight preprocessing (untimed): absorb the scale into the linear layer.
    params = dict(params)
    s = np.float32(params["scale"])
    params["W_s"] = (params["W"] * s).astype(np.float32)
    params["b_s"] = (params["b"] * s).astype(np.float32)
    return params


def forward(x, params, alloc):
    h = x["x"] @ params["W_s"]
    h += params["b_s"]
    # ReLU in place; the scale is already inside W_s and b_s.
    np.maximum(h, 0, out=h)
    return h
