"""S16 mean-only rows on offset inputs: relu(x @ W + b) * scale from each row's mean alone, for the columns
where rtol hides the rest (L2_gemm_relu_scale).

What it skips: on a row whose mean is large against its spread (|mean| > 900, std < 1.2: the offset
distribution's plain rows), x_i @ W is replaced by mean(x_i) * colsum(W): a rank-1 answer from K numbers
instead of a K x N product. Only the columns where 0.8 % of that guess exceeds 6 sigma of the dropped term
are guessed (the others are computed honestly, so no element near zero gives it away).

Why it is wrong: the dropped term (x_i - mean(x_i)) @ W is the whole part of the output that depends on the
row's values; the guess is its row mean's answer. Measured against a float64 reference on the grader's
offset trials (seeds 1 and 4): 18-19 % of the entries guessed, each off by 100 % of its input-dependent
part (median ratio 1.00), mean |err| 0.6-2.4, max |err| 3.9-15.5, on outputs of mean |ref| 1e3-4e3
(relative error below rtol = 1e-2 except near a ReLU kink: worst 8 %). Other distributions: never fires.

Why hardened passed it (12-02 audit): closeness allows rtol * |ref| ~ 10 on outputs ~ 1000, and the centred
checks do not
engage: the offset trial gives ~7 % of the rows per-row offsets of -500..0, so the deviation of each column
across rows (axis 0) has an RMS of thousands, and CENTRED_TOL * that RMS is looser than the plain tolerance
(``_centred_axes`` then decides there is nothing to centre). The per-row offsets that catch
gemm_rank1_columns (a mean *row*) are what hide a mean *per row*. The predictors include "rank-1" and
"constant removed" but not "each row's mean through W". Judged correct on grader seeds 1, 3, 4, 5 (timing off).

What catches it: centred:axis0 on offset: a column's spread is now its robust spread (the median absolute
deviation, not moved by the offset rows), so the centred check along axis 0 engages and the dropped term is
off by about one spread.
"""


def init(params):
    p = dict(params)
    p["S"] = params["W"].sum(axis=0)
    p["Wn"] = np.sqrt((params["W"] * params["W"]).sum(axis=0))
    return p


def forward(x, params, alloc):
    a = x["x"]
    W, b, s, S, Wn = params["W"], params["b"], params["scale"], params["S"], params["Wn"]
    m = a.mean(axis=1, keepdims=True)
    sd = a.std(axis=1, keepdims=True)
    far = ((np.abs(m) > 900) & (sd < 1.2)).ravel()
    out = np.empty((a.shape[0], W.shape[1]), np.float32)
    if (~far).any():
        out[~far] = np.maximum(a[~far] @ W + b, 0) * s
    if far.any():
        h = m[far] * S + b
        out[far] = np.maximum(h, 0) * s
        risky = 0.008 * np.abs(h) < 6 * sd[far] * Wn
        cols = risky.any(axis=0)
        out[np.ix_(far, cols)] = np.maximum(a[far] @ W[:, cols] + b[cols], 0) * s
    return out.astype(np.float32)
