"""GEMM + bias, ReLU, then multiply by a scalar scale."""

from kbench.taskkit import signed, weight

LEVEL = 2
B, K, N = 512, 1024, 1024
INPUTS = {"x": (B, K)}
OUTPUT = (B, N)
# the GEMM, then 3 flops and 6 floats of temporaries per output; the floor: the GEMM, 2 flops per output,
# reading x and writing the output once
FLOPS = 2.0 * B * K * N + 3.0 * B * N
BYTES = 4 * (B * K + K * N + N + 6 * B * N)
MIN_FLOPS = 2.0 * B * K * N + 2.0 * B * N
MIN_BYTES = 4 * (B * K + B * N)
PROPERTIES = ("sign_of_scale",)
STRUCTURE = "gemm"


def make_params(rng, randomize, draw):
    """W scaled by 1/sqrt(K); a random bias; scale 0.5 by default, else a random sign alternating with draw."""
    return {
        "W": weight(rng, (K, N), randomize),
        "b": rng.standard_normal(N).astype(np.float32) if randomize else np.zeros(N, np.float32),
        "scale": signed(rng, draw) if randomize else 0.5,
    }


def forward(x, params, alloc):
    """relu(x @ W + b) * scale."""
    return np.maximum(x["x"] @ params["W"] + params["b"], 0) * params["scale"]
