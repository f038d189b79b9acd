"""S26 right only in the constant part, on an output that is one slice: x @ W summed over columns, answered
from each row's mean (mean * sum(W)) wherever the row's spread looks small beside its offset.

On offset inputs (1000 + N(0, 1)) it throws away the whole input-dependent part (an error of its RMS, ~30).
Found by the 12-03 break audit (round 2): the task's output is (512, 1), one slice along its natural axis
0; the centred check's spread there was the plain RMS, which the offset trial's minority of rows at -500..0
inflate past every deviation. What catches it: robust spreads (median absolute deviation) on the natural
axis too."""


def init(params):
    params = dict(params)
    w = params["W"].sum(axis=1)
    params["w_sum"] = w.astype(np.float32)
    params["w_tot"] = float(w.sum(dtype=np.float64))
    params["w_norm"] = float(np.sqrt((w.astype(np.float64) ** 2).sum()))
    return params


def forward(x, params, alloc):
    x = x["x"]
    mu = x.mean(axis=1, dtype=np.float64)
    sd = x.std(axis=1, dtype=np.float64)
    out = alloc((x.shape[0], 1))
    const = mu * params["w_tot"]
    flat = 4.0 * sd * params["w_norm"] < 0.01 * np.abs(const)
    out[flat, 0] = const[flat].astype(np.float32)
    rest = ~flat
    out[rest] = x[rest] @ params["w_sum"][:, None]
    return out
