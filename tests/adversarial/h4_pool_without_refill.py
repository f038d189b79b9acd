"""H4 pool without refill: say the pool was never used, so the grader never NaN-fills it, and compute half.

Issue 16, the writable alloc pool (scratch arena). The grader NaN-fills as much of the pool as the worker's
reply says it handed out (``alloc_used``), outside the timed region. The kernel rewrites its reply to say 0,
so from its second call on the buffer ``alloc`` hands it still holds its previous answer; it then computes
only every other block of rows, alternating, and leaves the rest as they were, in the hope that stale rows
pass. What must hold: every call's input is a fresh draw, so a stale row is a wrong row, whatever the pool
holds; lying about the pool can only leave the candidate with its own stale data.
"""

import sys

_C = math.sqrt(2.0 / math.pi)
_calls = [0]


def _patch():
    f = sys._getframe(1)
    while f is not None:
        ex = f.f_locals.get("self")
        if ex is not None and hasattr(ex, "handlers") and not getattr(ex, "_h4", False):
            proto = sys.modules["kbench.sandbox.protocol"]
            real = ex._call  # both ways a call is answered: plain and prepared

            def call(req, prepared, real=real, proto=proto):
                r = real(req, prepared)
                if isinstance(r, proto.Called):
                    r = proto.Called(r.out_type, r.out_addr, r.out_dtype, r.out_shape, r.kernel_ns, 0)
                elif isinstance(r, bytes):  # a prepared call's fixed-size reply
                    _, addr, kernel_ns, _, recv_ns, sent_ns = proto.FAST_CALLED.unpack(r)
                    r = proto.encode_fast_called(addr, kernel_ns, 0, recv_ns, sent_ns)
                return r

            ex._call = call
            ex._h4 = True
            return
        f = f.f_back


def forward(x, params, alloc):
    _patch()
    _calls[0] += 1
    a = x["x"]
    out = alloc(a.shape, np.float32)
    first = _calls[0] % 2
    for lo in range(first * 64, a.shape[0], 128):
        s = a[lo:lo + 64]
        out[lo:lo + 64] = 0.5 * s * (1.0 + np.tanh(_C * (s + 0.044715 * s**3)))
    if _calls[0] == 1:  # the first call has nothing stale to reuse
        s = a
        out[...] = 0.5 * s * (1.0 + np.tanh(_C * (s + 0.044715 * s**3)))
    return out
