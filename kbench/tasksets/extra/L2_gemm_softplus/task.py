"""GEMM + bias, then softplus: log(1 + exp(h)), computed stably; the epilogue outweighs the GEMM (K = 64)."""

from kbench.taskkit import weight

LEVEL = 2
B, K, N = 1024, 64, 1024
INPUTS = {"x": (B, K)}
OUTPUT = (B, N)
FLOPS = 2.0 * B * K * N + 6.0 * B * N
BYTES = 4 * (B * K + K * N + N + 10 * B * N)
MIN_FLOPS = 2.0 * B * K * N + 3.0 * B * N
MIN_BYTES = 4 * (B * K + B * N)
PROPERTIES = ("nonnegative",)
STRUCTURE = "gemm"


def make_params(rng, randomize, draw):
    return {
        "W": weight(rng, (K, N), randomize),
        "b": rng.standard_normal(N).astype(np.float32) if randomize else np.zeros(N, np.float32),
    }


def forward(x, params, alloc):
    """softplus(h) = max(h, 0) + log1p(exp(-|h|)), h = x @ W + b."""
    h = x["x"] @ params["W"] + params["b"]
    return np.maximum(h, 0) + np.log1p(np.exp(-np.abs(h)))
