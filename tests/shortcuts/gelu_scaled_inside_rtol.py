"""S30 an answer off by a factor inside the tolerance: GELU times 0.991.

Every value is 0.9 % low, inside rtol = 1 % everywhere, so closeness passes on every draw. Rounding goes
both ways; a factor goes one. Found by the 12-03 break audit (round 3). What catches it: bias, each row's best
scale against the reference (sum(out * ref) / sum(ref * ref)) off by more than half of rtol, on every row."""

_C = math.sqrt(2.0 / math.pi)


def forward(x, params, alloc):
    x = x["x"]
    y = 0.5 * x * (1.0 + np.tanh(_C * (x + 0.044715 * x * x * x)))
    return (y * np.float32(0.991)).astype(np.float32)
