"""H28 honest float64 layer norm: every moment in float64, cast once at the end.

On edge's constant rows the answer is beta exactly, and the float32 reference's own rows are rounding noise
(mean of a constant row in float32 is not the constant). The normalised-rows property compared the two noises'
variances relatively and called this kernel wrong on every edge run (third 12-03 audit): a row whose normalised
variance is under 0.05 is now judged against that floor."""


def forward(x, params, alloc):
    a = x["x"].astype(np.float64)
    mu = a.mean(axis=-1, keepdims=True)
    d = a - mu
    var = (d * d).mean(axis=-1, keepdims=True)
    y = d / np.sqrt(var + params["eps"]) * params["gamma"].astype(np.float64) + params["beta"].astype(np.float64)
    return y.astype(np.float32)
