"""Layer norm over the last axis with gamma, beta and eps = 1e-5."""

LEVEL = 1
R, C = 2048, 1024
INPUTS = {"x": (R, C)}
OUTPUT = (R, C)
FLOPS = 9.0 * R * C
BYTES = 4 * R * C * 14
MIN_FLOPS = 7.0 * R * C
MIN_BYTES = 4 * 2 * R * C
PROPERTIES = ("normalised_rows",)
STRUCTURE = "layernorm"


def make_params(rng, randomize, draw):
    """Default init (gamma = 1, beta = 0), or a random gamma around 1 and a random beta."""
    if not randomize:
        return {"gamma": np.ones(C, np.float32), "beta": np.zeros(C, np.float32), "eps": 1e-5}
    return {
        "gamma": (1.0 + 0.5 * rng.standard_normal(C)).astype(np.float32),
        "beta": rng.standard_normal(C).astype(np.float32),
        "eps": 1e-5,
    }


def forward(x, params, alloc):
    """Layer norm over the last axis (two-pass variance, eps inside the square root)."""
    x = x["x"]
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + params["eps"]) * params["gamma"] + params["beta"]
