"""P10 double reply: every ``Called`` goes out twice, so each later request is answered by the one before.

Issue 16, the protocol and the stop discipline. The grader reads the first frame after its request as the
reply. This kernel's connection sends every reply twice: from the second call on, the grader finds the spare
copy of the *previous* call's reply already waiting, stops the worker before it has even read the new
request, and reads the output at the previous call's address (the previous answer, or memory since reused).
What must hold: the bytes judged are the bytes at the address named, read while the worker is stopped, so
a stale reply gives a wrong verdict (or a runtime error once the stream is out of step), never a correct one.
"""


class _Twice:
    def __init__(self, conn):
        self.conn = conn

    def recv_bytes(self, *a):
        return self.conn.recv_bytes(*a)

    def send_bytes(self, b):
        self.conn.send_bytes(b)
        if b.startswith(b'{"type": "Called"') or b[:2] == b"\x00C":  # a plain or a prepared call's reply
            self.conn.send_bytes(b)

    def fileno(self):
        return self.conn.fileno()


_keep = []


def forward(x, params, alloc):
    ex = _executor()
    if ex is not None and not isinstance(ex.conn, _Twice):
        ex.conn = _Twice(ex.conn)
        ex._send = ex.conn.send_bytes  # the executor's replies go through it
    out = _gelu(x["x"])
    _keep.append(out)  # every answer stays where its reply said
    return out
