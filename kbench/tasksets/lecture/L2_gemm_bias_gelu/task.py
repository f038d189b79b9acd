"""GEMM + bias followed by the L1 tanh GELU (x**3 form)."""

from kbench.taskkit import weight

LEVEL = 2
B, K, N = 256, 512, 512
INPUTS = {"x": (B, K)}
OUTPUT = (B, N)
FLOPS = 2.0 * B * K * N + 10.0 * B * N
BYTES = 4 * (B * K + K * N + N + 16 * B * N)
MIN_FLOPS = 2.0 * B * K * N + 8.0 * B * N
MIN_BYTES = 4 * (B * K + B * N)
STRUCTURE = "gemm"


def make_params(rng, randomize, draw):
    return {
        "W": weight(rng, (K, N), randomize),
        "b": rng.standard_normal(N).astype(np.float32) if randomize else np.zeros(N, np.float32),
    }


def forward(x, params, alloc):
    """GELU (tanh approximation, x**3) of x @ W + b."""
    h = x["x"] @ params["W"] + params["b"]
    return 0.5 * h * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * h**3)))
