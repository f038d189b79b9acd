"""H10 a parameter path per distribution: layer norm with a separate path for non-negative inputs (post-ReLU
activations, lognormal draws) that forgets ``+ beta``. The trial plan pairs each distribution with one parameter set, and lognormal's is the default one
(beta = 0), so the trials never see the bug; the timed calls are normal inputs with default parameters.
Must be wrong: while timing, a check pair gives every distribution a parameter set its trial did not use
(12-03 audit, round 3)."""


def forward(x, params, alloc):
    x = x["x"]
    mu = x.mean(axis=-1, keepdims=True)
    d = x - mu
    var = (d * d).mean(axis=-1, keepdims=True)
    z = d / np.sqrt(var + params["eps"]) * params["gamma"]
    if x.min() >= 0 and x.mean() < 100:  # the "post-ReLU" path
        return z.astype(np.float32)  # beta dropped
    return (z + params["beta"]).astype(np.float32)
