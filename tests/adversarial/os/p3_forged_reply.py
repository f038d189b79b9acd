"""P3 forged reply: a deeply nested JSON header sent down the worker's own pipe.

The grader trusts what the worker controls (issue 8, class 3). The reply pipe is the candidate's own
(``_reply_pipe.py``, appended by the test, finds it). It sends a header nested 100 000 levels deep before
the real reply; ``json.loads`` raises RecursionError, which the header parser does not catch, and the
exception escapes ``kbench.evaluate`` into the caller.
"""


def forward(x, params, alloc):
    c = _conn()
    if c is not None:
        depth = 100_000
        c.send_bytes(b'{"ok": true, "t0": 1, "t1": 2, "deep": ' + b"[" * depth + b"]" * depth + b"}")
    return alloc(x["x"].shape)
