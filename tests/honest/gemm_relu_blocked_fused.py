"""H27 honest relu(x @ W + b) * scale: K-blocked matmul (4 blocks of 256 accumulated in float32), fused in-place
epilogue (second audit, 12-02: on offset, mostly-zero ReLU columns had a robust spread of 0 and failed the
centred check on rounding alone, rescued only by the float64 second opinion)."""


def forward(x, params, alloc):
    a, W, b, s = x["x"], params["W"], params["b"], params["scale"]
    K = a.shape[1]
    out = alloc((a.shape[0], W.shape[1]), np.float32)
    out[...] = b
    for k in range(0, K, 256):
        out += a[:, k:k + 256] @ W[k:k + 256]
    np.maximum(out, 0, out=out)
    out *= np.float32(s)
    return out
