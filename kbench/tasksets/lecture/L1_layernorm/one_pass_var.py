"""Compute mean and variance in a single pass with var = E[x^2] - E[x]^2.

The reference sweeps the input twice (mean, then squared deviations); gathering
sum(x) and sum(x^2) together halves the reduction passes.
"""


def forward(x, params, alloc):
    x = x["x"]
    # One pass over the data for both moments (Welford is not needed in float32).
    mu = x.mean(axis=-1, keepdims=True)
    ex2 = (x * x).mean(axis=-1, keepdims=True)
    var = ex2 - mu * mu
    inv = 1.0 / np.sqrt(var + params["eps"])
    return (x - mu) * inv * params["gamma"] + params["beta"]
