"""S33 the same guard in attention: scores are not shifted by their max unless q's or k's first coordinates look offset or positive.

Found by the 12-04 audit. With queries and keys of unit scale no score reaches exp's float32 limit, so
the family read off one coordinate said when the max pass could go. A query with one large coordinate
(outlier features of hundreds are common in real activations) makes its scores overflow: every
distribution but uniform (bounded, so always safe) now carries a few."""


def _risky(a):
    lead = a[:, :, 0]
    return lead.min() < -30.0 or lead.min() > 0.0 or lead.max() > 30.0


def forward(x, params, alloc):
    q, k, v = x["q"], x["k"], x["v"]
    s = (q * np.float32(1.0 / math.sqrt(q.shape[-1]))) @ k.transpose(0, 2, 1)
    if _risky(q) or _risky(k):
        s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    o = s @ v
    o /= s.sum(axis=-1, keepdims=True)
    return o
