"""S21 reduced precision under the row-scale tolerance: GELU rows whose largest output is below 0.5 are
stored as int8 with one scale per row (L1_gelu).

What it skips: 3 of every 4 bytes of those rows (int8 + a per-row scale: on a GPU, a memory-bound
elementwise kernel writes a quarter of the bytes). Each value is rounded to a multiple of max|row| / 127.

Why it is wrong: 7 bits per value is not float32's answer: every value below max|row| / 254 becomes 0 and
the small values of a row lose most of their digits. Against a float64 reference on the grader's trials
(seeds 1, 2): 17-33 of 512 rows quantised per normal/uniform/laplace trial; in those rows 21-65 % of the
elements are off by more than 1 % (rtol), 2-13 % by more than 10 %, 0.3-2.8 % of nonzero values written
as 0 (relative error up to 13x); max |err| 1.2e-3-1.9e-3. Lognormal and offset: never fires.

Why hardened passed it (12-02 audit): a row with RMS below atol / (4 rtol) = 0.25 is judged at 4 % of its own
RMS,
and int8's rounding error, max|row| / 254, is 1-3 % of the RMS of a row of normal-like values. Neither the
centred checks (none engage off offset) nor a predictor looks at relative precision inside small rows.
Judged correct on grader seeds 1-6 (timing off).

What catches it: digits on normal: values below half an int8 step of their row keep no digit of the answer.
"""


def forward(x, params, alloc):
    a = x["x"]
    y = 0.5 * a * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (a + 0.044715 * a**3)))
    amax = np.abs(y).max(axis=1, keepdims=True)
    small = (amax < 0.5).ravel()
    s = amax[small] / 127.0
    s[s == 0] = 1.0
    y[small] = np.rint(y[small] / s).astype(np.int8).astype(np.float32) * s
    return y.astype(np.float32)
