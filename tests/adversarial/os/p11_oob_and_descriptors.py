"""P11 urgent byte and passed descriptors: the reply socket carries MSG_OOB and SCM_RIGHTS to the grader.

Issue 16, class 3 (fcntl owner/signal tricks) and the reply channel. The worker may write to the socket it
answers on (``sendmsg``/``sendto`` are allowed on it). Before every reply it sends an out-of-band byte
(which raises SIGURG at the socket's owner and marks the stream), and it sends each reply with two of its
own descriptors attached (``/dev/urandom`` and numpy's core extension, opened read-only): if the grading
process received them it would hold files its worker chose, past the worker's life. What must hold: the
grader neither dies nor hangs, judges the run as usual (the arithmetic is honest), and holds no descriptor
a worker sent (the harness lists the grading process's descriptors).
"""

import array
import os
import socket
import struct


class _Loud:
    def __init__(self, conn):
        self.conn = conn
        self.sock = socket.socket(fileno=os.dup(conn.fileno()))
        core = os.path.join(os.path.dirname(np.__file__), "_core")
        so = next(n for n in os.listdir(core) if n.startswith("_multiarray_umath"))
        self.fds = array.array("i", [os.open("/dev/urandom", os.O_RDONLY), os.open(os.path.join(core, so), os.O_RDONLY)])

    def recv_bytes(self, *a):
        return self.conn.recv_bytes(*a)

    def send_bytes(self, b):
        try:
            self.sock.send(b"!", socket.MSG_OOB)
        except OSError:
            pass
        frame = struct.pack("!i", len(b)) + b
        self.sock.sendmsg([frame], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, self.fds)])

    def fileno(self):
        return self.conn.fileno()


def forward(x, params, alloc):
    ex = _executor()
    if ex is not None and not isinstance(ex.conn, _Loud):
        ex.conn = _Loud(ex.conn)
        ex._send = ex.conn.send_bytes  # the executor's replies go through it
    return _gelu(x["x"])
