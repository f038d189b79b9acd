"""S20 dropping mass under the row-scale tolerance: a softmax that writes every probability below 4e-5 as an
exact zero, without renormalising, while a row loses less than 4e-4 of its mass (L1_softmax).

What it skips: the tail of each row (on a GPU: no exp and no store for logits far below the row's max; a
sparse output downstream). Unlike S1 (softmax_drop_mass, 0.9 % of the row max, caught by rows_sum_to_one),
the threshold is absolute and tiny, and the lost mass is capped under SUM_TOL / 2.

Why it is wrong: real probabilities become exact zeros (100 % relative error there; log p = -inf, a
cross-entropy on such a target is infinite). Against a float64 reference on the grader's trials (seeds 1,
2): 1.4-6.5 % of the entries zeroed on normal, uniform, laplace and offset (81-83 % on lognormal, whose rows
are peaked), in 84-1747 of 2048 rows, each zeroed value up to 4e-5 (4 % of a uniform row's 1/1024), up to
3.9e-4 of a row's mass lost.

Why hardened passed it (12-02 audit): a softmax row is a small row (RMS ~ 1/L): its tolerance is 4 % of its
RMS, ~4e-5,
so each zero is within it; the rows sum to 1 within SUM_TOL = 1e-3 (the float32 fast path accepts up to
5e-4); the "small values zeroed" predictor zeroes below atol / 10 = 1e-3, which no softmax survives, so it
says nothing about a threshold at the row's own scale. Judged correct on grader seeds 1-6 (timing off).

What catches it: digits on normal: a probability above 1e-3 of its row's RMS written as 0 keeps no digit of
the answer.
"""


def forward(x, params, alloc):
    z = x["x"]
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    small = p < 4e-5
    lost = np.where(small, p, 0).sum(axis=-1, keepdims=True)
    small &= lost < 4e-4
    p[small] = 0.0
    return p
