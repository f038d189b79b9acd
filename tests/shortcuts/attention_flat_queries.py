"""S17 mean(v) for low-norm queries: skip q k^T and the softmax for every query whose scores would be
nearly flat (L3_attention).

What it skips: a query with |q_i| * rms|k| / sqrt(d) < 0.06 (the "spread" queries the grader scales down
by 10^-2.5..10^-1, plus small uniform rows) gets mean(v) over the keys: no scores, no exp, no p @ v for
that row.

Why it is wrong: mean(v) is the zeroth-order term; everything in the output that depends on q (which keys
this query prefers) is dropped. Measured against a float64 reference on the grader's trials (seeds 1, 7):
13-164 of 4096 queries per trial (normal 79-88, uniform 152-164, laplace 13-14), each off by 100 % of its
q-dependent part (median |out - ref| / |ref - mean(v)| = 1.00), mean |err| 6e-5-4e-4 on outputs of mean
|ref| 0.03-0.09, max |err| 1.5e-3-2.7e-3, worst element relative error 0.4-290x where the reference is
near zero.

Why hardened passed it (12-02 audit): an attention output row of nearly uniform weights is a small row (RMS ~
0.05), so
its tolerance is 4 % of its RMS (~2e-3) plus rtol; the q-dependent part of a spread query is ~1e-3, under
it. No property sees it (mean(v) is inside the range of v), and no centred check engages on these
distributions. Judged correct on grader seeds 1-9 (timing off); at 0.08 instead of 0.06 it is caught on seed 7
(close, normal).

What catches it: digits on normal: the elements of a small row where the query-dependent part changes the sign
or more than half the value keep no digit of the answer.
"""


def forward(x, params, alloc):
    q, k, v = x["q"], x["k"], x["v"]
    d = q.shape[-1]
    qn = np.sqrt((q * q).sum(-1))
    krms = np.sqrt((k * k).sum(-1).mean(-1, keepdims=True))
    flat = qn * krms / math.sqrt(d) < 0.06
    out = np.empty_like(q)
    vbar = v.mean(axis=1)
    for h in range(q.shape[0]):
        f = flat[h]
        out[h, f] = vbar[h]
        s = q[h, ~f] @ k[h].T / math.sqrt(d)
        p = np.exp(s - s.max(-1, keepdims=True))
        out[h, ~f] = (p / p.sum(-1, keepdims=True)) @ v[h]
    return out
