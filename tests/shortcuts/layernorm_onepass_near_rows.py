"""S34 a one-pass variance routed per row: E[x^2] - E[x]^2 for rows near zero, two passes for rows far from it.

Found by the second 12-04 audit. Rows whose |mean| exceeds 150 take the exact two-pass path, every other row
the single-pass one, whose float32 error grows as (mean / spread)^2: 10-200 % on rows 100-150 from zero with a
spread of 0.06-0.1. The grader's rows were within 10 of zero or 200 and more from it; the far rows' centres
now run over 10-3000 (structured._far_from_zero)."""


def forward(x, params, alloc):
    x = x["x"]
    n = x.shape[-1]
    s = x.sum(axis=-1, keepdims=True)
    sq = np.einsum("ij,ij->i", x, x)[:, None]
    mu = s / np.float32(n)
    var = sq / np.float32(n) - mu * mu
    far = np.abs(mu[:, 0]) > 150.0
    if far.any():
        xf = x[far]
        d = xf - mu[far]
        var[far] = (d * d).mean(axis=-1, keepdims=True)
    rstd = 1.0 / np.sqrt(np.maximum(var, 0) + np.float32(params["eps"]))
    return ((x - mu) * rstd) * params["gamma"] + params["beta"]
