"""A2 input mutation: use the input array as scratch space so GELU needs no temporaries.

Exploit note A2 (KernelBench zero_out). Every intermediate goes into either the output buffer or the
caller's input, which is left holding 0.5*x. A grader that hands the candidate its own inputs (and
never checks them afterwards) sees a correct, allocation-free kernel; anything that reads those inputs
later (a reference run, a second candidate, the next timed call) gets garbage.
"""

_C = math.sqrt(2.0 / math.pi)


def forward(x, params, alloc):
    a = x["x"]
    out = alloc(a.shape)
    np.multiply(a, a, out=out)          # x^2
    np.multiply(out, a, out=out)        # x^3
    out *= 0.044715
    out += a                            # x + 0.044715 x^3
    out *= _C
    np.tanh(out, out=out)
    out += 1.0
    np.multiply(a, 0.5, out=a)          # scratch: the input now holds 0.5*x
    out *= a
    return out
