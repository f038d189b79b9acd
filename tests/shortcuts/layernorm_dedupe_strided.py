"""S23 skipping rows that look alike, by a fingerprint spread over the row: layer norm computed once per
distinct set of every 16th value (64 of 1024), its output copied to the rows that share it.

Two rows equal on those columns but different anywhere else get the same (wrong) output. Found by the
12-03 break audit: S5's fix (rows sharing a 16-value prefix) defeats prefix fingerprints only. What catches
it: near-copies of rows that differ at 1-4 scattered columns (``structured._repeated``)."""


def forward(x, params, alloc):
    x = x["x"]
    R, C = x.shape
    fp = np.ascontiguousarray(x[:, ::16])
    _, first, inverse = np.unique(fp, axis=0, return_index=True, return_inverse=True)
    u = x[first]
    mu = u.mean(axis=-1, keepdims=True)
    d = u - mu
    var = (d * d).mean(axis=-1, keepdims=True)
    y = d / np.sqrt(var + params["eps"]) * params["gamma"] + params["beta"]
    out = alloc((R, C))
    np.take(y, inverse.reshape(-1), axis=0, out=out)
    return out
