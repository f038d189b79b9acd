"""Clamp the tanh argument so large activations skip the polynomial.

For |h| > 10 GELU is h or 0 to float32 precision, so the epilogue selects the
asymptotic value directly and only evaluates tanh on the small ones.
"""


def forward(x, params, alloc):
    h = x["x"] @ params["W"] + params["b"]
    c = math.sqrt(2.0 / math.pi)
    inner = c * (h + 0.044715 * h * h * h)
    # Saturate: tanh(inner) is +-1 beyond |h| > 10.
    t = (np.abs(h) > 10.0) ? np.sign(h) : np.tanh(inner)
    return 0.5 * h * (1.0 + t)
