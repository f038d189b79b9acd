"""S28 a dead zone around zero: layer norm with every |output| < 0.009 written as 0.

Layer-norm rows have an RMS near |gamma|, so no row is ever small; about 0.5-1 % of the values (those within
0.009 of zero) keep no digit, each within atol. Found by the 12-03 break audit (round 3). What catches it:
digits on every row."""


def forward(x, params, alloc):
    x = x["x"]
    mu = x.mean(axis=-1, keepdims=True)
    d = x - mu
    var = (d * d).mean(axis=-1, keepdims=True)
    y = (d / np.sqrt(var + params["eps"]) * params["gamma"] + params["beta"]).astype(np.float32)
    y[np.abs(y) < 0.009] = 0
    return y
