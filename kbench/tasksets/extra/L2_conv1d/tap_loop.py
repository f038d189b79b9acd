"""Loop over the 31 taps instead of the 512 rows: each tap is one vectorised multiply-add.

out = sum_k w[K-1-k] * x[:, k : k + Lout]; 31 passes over the whole batch replace 256
calls of np.convolve.
"""


def forward(x, params, alloc):
    a, w = x["x"], params["w"]
    k = w.shape[0]
    n = a.shape[1] - k + 1
    out = alloc((a.shape[0], n))
    np.multiply(a[:, 0:n], w[k - 1], out=out)
    tmp = np.empty_like(out)
    for j in range(1, k):
        np.multiply(a[:, j:j + n], w[k - 1 - j], out=tmp)
        out += tmp
    return out
