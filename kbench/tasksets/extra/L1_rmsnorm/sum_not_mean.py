"""RMSNorm with the sum of squares (norm instead of root-mean-square).

Uses np.linalg.norm for the row scale, which is the standard, well-optimised way to
get the L2 norm of each row.
"""


def forward(x, params, alloc):
    a = x["x"]
    norm = np.linalg.norm(a, axis=-1, keepdims=True)
    return a / (norm + params["eps"]) * params["gamma"]
