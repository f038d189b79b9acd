"""Attention with the softmax computed in place on the score buffer.

Exponentiation and normalisation overwrite the scores, so besides q @ k^T only
the row statistics are allocated.
"""


def forward(x, params, alloc):
    q, k, v = x["q"], x["k"], x["v"]
    s = q @ k.transpose(0, 2, 1)
    # Stable softmax in place on the scores.
    s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)
    return s @ v
