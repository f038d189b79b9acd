"""S27 values below the tolerance written as 0: GELU with every |output| < 0.009 zeroed, in rows whose own
scale is ordinary (a GELU row RMS above 0.3, never a small row).

Each zeroed value keeps no digit of the answer (1-1.5 % of a normal draw's values: |x| < 0.018 and the tail
below -3.3), yet every one is within atol = 0.01 of it. Found by the 12-03 break audit (round 3): the digits
check looked only at small rows. What catches it: digits on every row, an ordinary row's values above 1e-3 of
its RMS judged too (more than 1e-4 of the output losing every digit is not rounding)."""

_C = math.sqrt(2.0 / math.pi)


def forward(x, params, alloc):
    x = x["x"]
    y = (0.5 * x * (1.0 + np.tanh(_C * (x + 0.044715 * x * x * x)))).astype(np.float32)
    pos = np.maximum(x, 0)
    big = np.sqrt((pos * pos).mean(axis=1)) > 0.6
    yb = y[big]
    yb[np.abs(yb) < 0.009] = 0
    y[big] = yb
    return y
