"""1-D convolution ("valid") of 256 signals of length 4096 with one 31-tap filter, one np.convolve per row."""

from kbench.taskkit import weight

LEVEL = 2
B, L, K = 256, 4096, 31
INPUTS = {"x": (B, L)}
OUTPUT = (B, L - K + 1)
FLOPS = 2.0 * B * (L - K + 1) * K
BYTES = 4 * (B * L + K + B * (L - K + 1))
MIN_FLOPS = 2.0 * B * (L - K + 1) * K
MIN_BYTES = 4 * (B * L + B * (L - K + 1))
STRUCTURE = "gemm"


def make_params(rng, randomize, draw):
    """A filter of K taps scaled by 1/sqrt(K) (random draws also vary its gain)."""
    return {"w": weight(rng, (K, 1), randomize)[:, 0].copy()}


def forward(x, params, alloc):
    """np.convolve(row, w, "valid") for every row: a Python loop over the batch."""
    w = params["w"]
    return np.stack([np.convolve(row, w, mode="valid") for row in x["x"]])
