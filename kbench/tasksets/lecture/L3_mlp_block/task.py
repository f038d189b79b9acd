"""SwiGLU feed-forward block: (silu(x Wg) * (x Wu)) Wd."""

from kbench.taskkit import weight

LEVEL = 3
T, D, H = 256, 512, 1376
INPUTS = {"x": (T, D)}
OUTPUT = (T, D)
FLOPS = 6.0 * T * D * H + 5.0 * T * H
BYTES = 4 * (T * D + 3 * D * H + 10 * T * H + T * D)
MIN_FLOPS = 6.0 * T * D * H + 4.0 * T * H
MIN_BYTES = 4 * (2 * T * D)
STRUCTURE = "gemm"


def make_params(rng, randomize, draw):
    return {
        "W_gate": weight(rng, (D, H), randomize),
        "W_up": weight(rng, (D, H), randomize),
        "W_down": weight(rng, (H, D), randomize),
    }


def forward(x, params, alloc):
    """SwiGLU MLP block: (silu(x @ W_gate) * (x @ W_up)) @ W_down."""
    x = x["x"]
    g = x @ params["W_gate"]
    with np.errstate(over="ignore"):  # exp(-g) overflows to inf for very negative g; silu -> -0
        silu = g / (1.0 + np.exp(-g))
    return (silu * (x @ params["W_up"])) @ params["W_down"]
