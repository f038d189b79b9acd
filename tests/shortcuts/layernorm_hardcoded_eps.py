"""S25 a parameter hard-coded: layer norm with eps = 1e-4 whatever the task passes (its default is 1e-5).

On rows of small spread (embeddings initialised at std 0.02) the outputs are off by ~10 %. Found by the
12-03 break audit (round 2): the structured layer-norm rows kept a variance >= 0.01, where any eps below
1e-4 moves an output by under rtol. What catches it: rows down to a variance of 0.003 (300 eps), where an
eps 10 times too large moves outputs by 1.7 % and the normalised rows' variance by 3 %."""


def forward(x, params, alloc):
    x = x["x"]
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-4) * params["gamma"] + params["beta"]
