"""S18 uniform rows at high temperature: a softmax row whose logits span less than 0.06 is answered 1/L
without an exp (L1_softmax).

What it skips: for a row with max - min < 0.06 (the grader's rows at temperature: logits scaled by
10^-2.3..), every probability is written as 1/L: no exp, no sum, no division for that row.

Why it is wrong: it is the mean-only answer for those rows. The part of each probability that depends on
the logits, p_j - 1/L ~ (x_j - mean x) / L, is dropped entirely. Measured against a float64 reference on the
grader's trials (seeds 1-3): 1-6 rows per normal trial and 13-26 per uniform trial answered uniformly, each
off by 100 % of its logit-dependent part (median ratio 1.00), worst element relative error 1.9-3.0 % (rtol
is 1 %). Laplace, lognormal, offset: never fires.

Why hardened passed it (12-02 audit): a softmax row is a small row (RMS ~ 1/L), so its tolerance is 4 % of its
RMS plus
rtol: ~5 % of a probability, above the logit-dependent part of a flat row. The rows still sum to 1 and are
non-negative, so the properties pass; the "mean along axis 1" predictor is ruled out per *trial* (it fails
on the other rows), never per row. Judged correct on grader seeds 1-5 (timing off); at max - min < 0.12
it is caught (close, on normal/uniform).

What catches it: centred:axis1 on normal: centred checks along the rows are decided row by row, so each flat
row (where the row's mean alone would pass closeness) has its deviations judged at half their spread.
"""


def forward(x, params, alloc):
    z = x["x"]
    hi = z.max(axis=-1, keepdims=True)
    flat = (hi - z.min(axis=-1, keepdims=True)).ravel() < 0.06
    out = np.empty_like(z)
    out[flat] = np.float32(1.0 / z.shape[-1])
    e = np.exp(z[~flat] - hi[~flat])
    out[~flat] = e / e.sum(axis=-1, keepdims=True)
    return out
