"""A6 precision downgrade: run layer norm entirely in float16 and cast the result back to float32.

Exploit note A6 (DeepReinforce, KernelBench precision_downgrade, Wafer). Halves the bytes moved and
passes a 1e-2 tolerance on N(0, 1) inputs; on inputs with a large mean (1000 + N(0, 1)) float16's
spacing of 0.5 wipes out the signal that layer norm exists to extract.
"""


def forward(x, params, alloc):
    h = x["x"].astype(np.float16)
    mu = h.mean(axis=-1, keepdims=True, dtype=np.float16)
    d = h - mu
    var = (d * d).mean(axis=-1, keepdims=True, dtype=np.float16)
    y = d / np.sqrt(var + np.float16(params["eps"]))
    y = y * params["gamma"].astype(np.float16) + params["beta"].astype(np.float16)
    return y.astype(np.float32)
