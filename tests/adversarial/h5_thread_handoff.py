"""H5 thread handoff: a new thread takes over the request loop and the main thread exits on its own.

Issue 16, the worker's thread count as the kernel reports it. The grader counts the worker's threads in
``/proc/<pid>/task`` and rejects a worker with more than it started with. The kernel starts a thread that
sends the reply to the current call and then serves every later request, and ends the main thread alone
(the raw ``exit`` system call, not ``exit_group``): the process has one live thread again, so a thread of
its own now runs where the grader expected the worker's. With the old count taken by the worker itself this
passed; what must hold: the kernel's own view of the process (the exited leader stays listed until the
process ends) is what the grader counts, and a process the grader cannot account for is rejected or ended.
"""

import ctypes
import sys
import threading

_C = math.sqrt(2.0 / math.pi)
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_SYS_EXIT = 60


def _executor():
    f = sys._getframe(1)
    while f is not None:
        s = f.f_locals.get("self")
        if s is not None and hasattr(s, "handlers") and hasattr(s, "conn"):
            return s
        f = f.f_back
    return None


def _take_over(ex, first):
    ex.conn.send_bytes(first)
    ex.serve()


def forward(x, params, alloc):
    a = x["x"]
    out = 0.5 * a * (1.0 + np.tanh(_C * (a + 0.044715 * a**3)))
    ex = _executor()
    proto = sys.modules.get("kbench.sandbox.protocol")
    if ex is None or proto is None or threading.current_thread() is not threading.main_thread():
        return out
    ex.last_out = out
    first = proto.encode(proto.Called("numpy.ndarray", out.ctypes.data, "<f4", tuple(out.shape), 0, 0))
    threading.Thread(target=_take_over, args=(ex, first), daemon=True).start()
    _libc.syscall(ctypes.c_long(_SYS_EXIT), ctypes.c_long(0))  # ends this thread only (releases the GIL first)
    return out
