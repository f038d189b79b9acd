"""S12 a long system call right after the reply: the main thread keeps the timing core busy past SIGSTOP.

Issue 16, class 3: "syscalls that keep running after SIGSTOP". The grader stops the worker when its reply
arrives and only then reads its output and times the reference on the same core. The kernel wraps the
worker's connection so that every reply is followed, on the main thread, by system calls seccomp allows and
that run a while in the kernel: ``membarrier(MEMBARRIER_CMD_GLOBAL)`` (waits for an RCU grace period,
uninterruptibly) and a 256 MiB ``preadv`` of ``/proc/self/mem`` (a copy the kernel does for it). What must
hold: no arithmetic of the worker overlaps the reference's timing (the grader waits until every thread shows
stopped, and ends a worker that does not stop), and the verdict is contained: correct and not fast, or a
runtime error.
"""

import os

_SRC = np.ones(1 << 28, np.uint8)
_DST = np.zeros(1 << 28, np.uint8)


class _Conn:
    def __init__(self, conn):
        self.conn = conn

    def recv_bytes(self, *a):
        return self.conn.recv_bytes(*a)

    def send_bytes(self, b):
        self.conn.send_bytes(b)
        _raw(324, 1, 0)  # membarrier(MEMBARRIER_CMD_GLOBAL, 0)
        try:
            fd = os.open("/proc/self/mem", os.O_RDONLY)
            os.preadv(fd, [_DST], _SRC.ctypes.data)
            os.close(fd)
        except OSError:
            pass

    def fileno(self):
        return self.conn.fileno()


def forward(x, params, alloc):
    ex = _executor()
    if ex is not None and not isinstance(ex.conn, _Conn):
        ex.conn = _Conn(ex.conn)
        ex._send = ex.conn.send_bytes  # the executor's replies go through it
    return _gelu(x["x"])
