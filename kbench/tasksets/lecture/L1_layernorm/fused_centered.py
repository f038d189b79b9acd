"""Center once, take the variance from a row-wise dot, scale in place.

The reference computes x - mu twice and squares into a temporary; here the
centered array is reused, the sum of squares comes from einsum, and the affine
step runs in place.
"""


def forward(x, params, alloc):
    x = x["x"]
    C = x.shape[-1]
    # Centre once; this array becomes the output.
    d = x - x.mean(axis=-1, keepdims=True)
    # Row-wise sum of squares without materialising (x - mu) ** 2.
    var = np.einsum("ij,ij->i", d, d) / C
    inv_std = (1.0 / np.sqrt(var + params["eps"])).astype(np.float32)
    # Affine epilogue in place: no further temporaries.
    d *= inv_std[:, None]
    d *= params["gamma"]
    d += params["beta"]
    return d
