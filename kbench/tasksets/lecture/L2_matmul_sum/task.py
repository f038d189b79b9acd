"""Matmul followed by a sum over output features: (x @ W).sum(1)."""

from kbench.taskkit import weight

LEVEL = 2
B, K, N = 512, 1024, 1024
INPUTS = {"x": (B, K)}
OUTPUT = (B, 1)
FLOPS = 2.0 * B * K * N + B * N
BYTES = 4 * (B * K + K * N + 2 * B * N + B)
MIN_FLOPS = 2.0 * B * K  # init may pre-sum W's rows (untimed)
MIN_BYTES = 4 * (B * K + B)
AXIS = 0
STRUCTURE = "gemm"


def make_params(rng, randomize, draw):
    return {"W": weight(rng, (K, N), randomize)}


def forward(x, params, alloc):
    """(x @ W) summed over the output features."""
    return (x["x"] @ params["W"]).sum(axis=1, keepdims=True)
