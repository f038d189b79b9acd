
def forward(x, params, alloc):
    """GELU, tanh approximation, written with x**3."""
    x = x["x"]
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
