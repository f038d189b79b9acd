"""P12 reply flood: fill the reply socket ahead of the grader's requests with frames of every kind.

Issue 16, the protocol: "each protocol message declared once (fields, types, bounds) with one generic
decoder". After its first call the kernel writes, before the executor's own reply, a burst of frames into
the socket: a ``Pong``, a ``Called`` naming address 0 with a shape of 2**39 elements, a frame whose length
prefix is -1 with an 8-byte length of 2**62, and 200 KiB of zeros, until the socket is full (the send runs
in a thread, so the worker itself stays responsive). What must hold: the grader reads one bounded frame per
request, refuses the first one that is not the reply it asked for (a runtime error), and neither hangs nor
grows.
"""

import json
import struct
import threading


def _frames():
    yield json.dumps({"type": "Pong"}).encode()
    yield json.dumps({"type": "Called", "out_type": "numpy.ndarray", "out_addr": 0, "out_dtype": "<f4",
                      "out_shape": [1 << 20, 1 << 19], "kernel_ns": 0, "alloc_used": 0}).encode()


def _flood(sock_fd):
    import os

    raw = b"".join(struct.pack("!i", len(f)) + f for f in _frames())
    raw += struct.pack("!iQ", -1, 1 << 62) + b"\0" * (200 << 10)
    try:
        os.write(sock_fd, raw)
    except OSError:
        pass


_sent = [False]


def forward(x, params, alloc):
    ex = _executor()
    if ex is not None and not _sent[0]:
        _sent[0] = True
        t = threading.Thread(target=_flood, args=(ex.conn.fileno(),), daemon=True)
        t.start()
        t.join(1.0)
    return _gelu(x["x"])
