"""S19 mean-only rows on offset inputs, with a GELU epilogue: gelu(x @ W + b) from each row's mean alone,
for the columns where rtol hides the rest (L2_gemm_bias_gelu). The same hole as S16
(gemm_rowmean_offset.py), on a second task.

What it skips: on a row with |mean| > 900 and std < 1.2 (the offset distribution's plain rows),
x_i @ W becomes mean(x_i) * colsum(W) (rank 1: K numbers instead of a K x N product) for every column
where 0.8 % of the guess exceeds 6 sigma of the dropped term; the other columns are computed honestly.

Why it is wrong: the dropped term (x_i - mean(x_i)) @ W is all of the output that depends on the row's
values. Against a float64 reference on the grader's offset trials (seeds 1, 2): 16-20 % of the entries
guessed, each off by 100 % of its input-dependent part (median ratio 1.00), mean |err| 0.5-1.2, max |err|
2.8-6.0, on outputs of mean |ref| 900-2100. Other distributions: never fires.

Why hardened passed it (12-02 audit): as S16, per-row offsets of -500..0 on ~7 % of the offset trial's rows
make the
spread of every column across rows thousands, so no centred check engages and rtol * |ref| ~ 10 covers the
dropped O(1) term. Judged correct on grader seeds 1-5 (timing off).

What catches it: centred:axis0 on offset, as S16.
"""


def init(params):
    p = dict(params)
    p["S"] = params["W"].sum(axis=0)
    p["Wn"] = np.sqrt((params["W"] * params["W"]).sum(axis=0))
    return p


def _gelu(h):
    return 0.5 * h * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * h**3)))


def forward(x, params, alloc):
    a = x["x"]
    W, b, S, Wn = params["W"], params["b"], params["S"], params["Wn"]
    m = a.mean(axis=1, keepdims=True)
    sd = a.std(axis=1, keepdims=True)
    far = ((np.abs(m) > 900) & (sd < 1.2)).ravel()
    out = np.empty((a.shape[0], W.shape[1]), np.float32)
    with np.errstate(over="ignore"):
        if (~far).any():
            out[~far] = _gelu(a[~far] @ W + b)
        if far.any():
            h = m[far] * S + b
            out[far] = _gelu(h)
            risky = 0.008 * np.abs(h) < 6 * sd[far] * Wn
            cols = risky.any(axis=0)
            out[np.ix_(far, cols)] = _gelu(a[far] @ W[:, cols] + b[cols])
    return out.astype(np.float32)
