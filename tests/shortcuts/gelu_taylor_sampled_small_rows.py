"""S24 a cheap path chosen from a sample of the row: GELU by its second-order Taylor polynomial
(x/2 + x^2/sqrt(2 pi), far within tolerance for |x| <= 0.25) on rows whose every 8th value is below 0.05.

A row of small values with a few large ones outside the sample (an outlier feature) gets the polynomial at
x = 3: 5.09 where GELU is 3.00. Found by the 12-03 break audit: every structured row had one scale, so a
sample of it told its range. What catches it: rows scaled down except at 1-4 scattered columns
(``structured._outliers``)."""

_C = math.sqrt(2.0 / math.pi)
_K2 = 1.0 / math.sqrt(2.0 * math.pi)


def forward(x, params, alloc):
    x = x["x"]
    out = alloc(x.shape)
    small = np.abs(x[:, ::8]).max(axis=1) < 0.05
    big = ~small
    xb = x[big]
    u = xb * xb
    u *= 0.044715
    u += 1.0
    u *= xb
    u *= _C
    np.tanh(u, out=u)
    u += 1.0
    u *= xb
    u *= 0.5
    out[big] = u
    xs = x[small]
    out[small] = xs * (0.5 + _K2 * xs)
    return out
