"""S22 reduced precision under the row-scale tolerance, on most of an output: attention output rows with
RMS below 0.2 (and max below 4 RMS) stored as int8 with one scale per row (L3_attention).

What it skips: 3 of every 4 bytes of the output (int8 + a per-row scale: an fp8/int8 epilogue on a GPU).
Each value is rounded to a multiple of max|row| / 127.

Why it is wrong: the task is float32 attention; 7 bits per value changes the answer. Against a float64
reference on the grader's trials (seeds 1, 2): 3021-4096 of 4096 output rows quantised on normal and
uniform, 605-757 on laplace, 14-33 on lognormal; in those rows 36-52 % of the elements are off by more
than 1 % (rtol), ~4 % by more than 10 %, ~0.8 % of nonzero values written as 0; max |err| 6e-4-3e-3.

Why hardened passed it (12-02 audit): an attention output row averages many rows of v, so its RMS is small
(~0.05 on
normal inputs) and its tolerance is 4 % of that RMS; int8's rounding, max|row| / 254, is ~1.5 % of the
RMS. Rounded values stay inside the range of v (within_range_of_v). The whole-output is judged at the
rows' own scale, so a low-precision output passes wherever the rows are small. Judged correct on grader
seeds 1-5 (timing off).

What catches it: digits on normal, as S21.
"""


def forward(x, params, alloc):
    q, k, v = x["q"], x["k"], x["v"]
    s = q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1])
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    o = (p / p.sum(axis=-1, keepdims=True)) @ v
    amax = np.abs(o).max(axis=-1, keepdims=True)
    rms = np.sqrt((o * o).mean(axis=-1, keepdims=True))
    small = ((rms < 0.2) & (amax < 4 * rms))[..., 0]
    sc = amax[small] / 127.0
    sc[sc == 0] = 1.0
    o[small] = np.rint(o[small] / sc).astype(np.int8).astype(np.float32) * sc
    return o.astype(np.float32)
