"""Use the exact erf-based GELU, which is both simpler and more accurate.

gelu(x) = 0.5 x (1 + erf(x / sqrt(2))); a single vectorised erf call replaces the
cube, the polynomial and the tanh of the approximation.
"""


def forward(x, params, alloc):
    x = x["x"]
    # Exact GELU; the tanh form only approximates this to ~1e-3.
    return 0.5 * x * (1.0 + np.erf(x * (1.0 / math.sqrt(2.0))))
