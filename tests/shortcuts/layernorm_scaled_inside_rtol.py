"""S31 a layer norm 0.8 % too large: the exact answer times 1.008.

Inside rtol everywhere, and the normalised rows' variance (1.6 % high) inside the property's 2 rtol. Found by
the 12-03 break audit (round 3). What catches it: bias, every row's best scale 1.008."""


def forward(x, params, alloc):
    x = x["x"]
    mu = x.mean(axis=-1, keepdims=True)
    d = x - mu
    var = (d * d).mean(axis=-1, keepdims=True)
    y = d / np.sqrt(var + params["eps"]) * params["gamma"] + params["beta"]
    return (y * np.float32(1.008)).astype(np.float32)
