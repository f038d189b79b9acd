"""Compute GELU in float16 to halve memory traffic, then cast back.

The tolerance is 1e-2, so half precision has accuracy to spare, and moving
2-byte values instead of 4-byte ones should make the elementwise work faster.
"""


def forward(x, params, alloc):
    h = x["x"].astype(np.float16)
    c = np.float16(math.sqrt(2.0 / math.pi))
    k = np.float16(0.044715)
    # Whole polynomial and tanh in half precision.
    inner = c * (h + k * h**3)
    y = np.float16(0.5) * h * (np.float16(1.0) + np.tanh(inner))
    return y.astype(np.float32)
