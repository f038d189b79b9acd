"""H26 honest attention with the score GEMM split over two halves of d (a blocked K dimension): on offset inputs its
scores round differently from BLAS's, and where two keys tie within that rounding its softmax weights differ
(second audit, 12-02: judged wrong on 5 of 40 grader seeds until the float64 second opinion gave each row the
slack its inputs' rounding moves the answer by)."""


def forward(x, params, alloc):
    q, k, v = x["q"], x["k"], x["v"]
    d = q.shape[-1]
    h = d // 2
    kt = k.transpose(0, 2, 1)
    s = q[..., :h] @ kt[:, :h] + q[..., h:] @ kt[:, h:]
    s *= np.float32(1.0 / math.sqrt(d))
    s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)
    return s @ v
