"""Bias added in place, then softplus as one ufunc: logaddexp(0, h) written into h.

np.logaddexp(0, h) is log(exp(0) + exp(h)) evaluated stably in a single pass, so the
five temporaries of max + log1p(exp(-abs)) become none.
"""


def forward(x, params, alloc):
    h = x["x"] @ params["W"]
    h += params["b"]
    np.logaddexp(np.float32(0), h, out=h)
    return h
