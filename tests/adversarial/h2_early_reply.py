"""H2 early reply: answer before computing, compute after the grader has its reply.

Issue 16, the grader's clock and the stop-between-calls discipline. The grader's clock runs from the
request to the reply, and the bytes it judges are read from the worker's memory at the address the reply
names. The kernel finds its executor (a local of the frame that called ``forward``), sends a ``Called``
reply naming its output buffer *first*, then computes the answer into that buffer, and drops the
executor's own reply so the stream stays in step: the round trip the grader times has no arithmetic in
it. It also reports ``alloc_used = 0``, so its pool is never NaN-filled again and the buffer still holds
the previous call's answer. What must hold: the worker is stopped the moment its reply arrives and its
output read only then, so the bytes are those of a computation that has not happened yet (wrong), and any
arithmetic that does run after the reply is on the worker's CPU clock.
"""

import sys

_C = math.sqrt(2.0 / math.pi)


class _Conn:
    """The executor's connection, dropping the executor's own reply to a call already answered."""

    def __init__(self, conn):
        self.conn, self.drop = conn, 0

    def recv_bytes(self, *a):
        return self.conn.recv_bytes(*a)

    def send_bytes(self, b):
        if self.drop:
            self.drop -= 1
            return
        self.conn.send_bytes(b)

    def fileno(self):
        return self.conn.fileno()


def _executor():
    f = sys._getframe(1)
    while f is not None:
        s = f.f_locals.get("self")
        if s is not None and hasattr(s, "handlers") and hasattr(s, "conn"):
            return s
        f = f.f_back
    return None


def forward(x, params, alloc):
    a = x["x"]
    out = alloc(a.shape, np.float32)
    ex = _executor()
    proto = sys.modules.get("kbench.sandbox.protocol")
    if ex is not None and proto is not None:
        if not isinstance(ex.conn, _Conn):
            ex.conn = _Conn(ex.conn)
            ex._send = ex.conn.send_bytes  # the executor's replies go through it too
        ex.conn.send_bytes(proto.encode(proto.Called("numpy.ndarray", out.ctypes.data, "<f4", tuple(a.shape), 0, 0)))
        ex.conn.drop += 1
    for lo in range(0, a.shape[0], 64):  # the grader already has its reply
        s = a[lo:lo + 64]
        out[lo:lo + 64] = 0.5 * s * (1.0 + np.tanh(_C * (s + 0.044715 * s**3)))
    return out
