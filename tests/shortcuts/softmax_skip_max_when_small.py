"""S13 a one-sided guard tuned to the value range: the softmax skips its max when the overall max is small.

exp(x) cannot overflow when every logit is below 50, so the max pass is skipped then. Logits far *below*
zero make exp(x) underflow to 0 and the row 0/0."""


def forward(x, params, alloc):
    z = x["x"]
    if float(z.max()) < 50.0:
        e = np.exp(z)
    else:
        e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
