"""P4 size overflow: an array header of 2**32 x 2**32 float32 elements "fits" in zero bytes.

The grader trusts what the worker controls (issue 8, class 3). The reply's array header gives dtype and
shape; the grader checks ``prod(shape, dtype=int64) * itemsize == len(raw)``. 2**32 * 2**32 wraps to 0, so
an empty payload passes the size check, and the reshape that follows raises a ValueError nobody catches:
the exception escapes ``kbench.evaluate``. The forged reply goes down the worker's own pipe (see P3).
"""


def forward(x, params, alloc):
    c = _conn()
    if c is not None:
        c.send_bytes(b'{"ok": true, "t0": 1, "t1": 2, "threads_started": 0, "inputs_changed": [], "aliases": [],'
                     b' "arrays": [{"dtype": "<f4", "shape": [4294967296, 4294967296]}]}')
        c.send_bytes(b"")
    return alloc(x["x"].shape)
