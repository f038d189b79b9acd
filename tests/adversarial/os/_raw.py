"""Shared by the attacks that make raw system calls (S9-S14, P9-P11), appended by the test.

``_raw(nr, *args) -> (rc, errno)``: in the native harness the candidate's namespace has ``syscall`` (what its
own native code would have); elsewhere it loads libc with ctypes itself (the audit hook refuses that in naive
mode: every raw call then reports ENOSYS and the attack keeps what Python's ``os`` offers). ``_executor()``
is the sandbox worker's request loop, a local of a frame above ``forward``.
"""

import errno as _errno
import sys as _sys


def _raw(nr, *args):
    fn = globals().get("syscall")
    if fn is not None:
        return fn(nr, *args)
    try:
        import ctypes
        lib = ctypes.CDLL(None, use_errno=True)
    except Exception:  # noqa: BLE001 - refused by the audit hook
        return -1, _errno.ENOSYS
    lib.syscall.restype = ctypes.c_long
    rc = lib.syscall(ctypes.c_long(nr), *(ctypes.c_long(a) for a in args))
    return int(rc), ctypes.get_errno()


def _executor():
    f = _sys._getframe(1)
    while f is not None:
        s = f.f_locals.get("self")
        if s is not None and hasattr(s, "handlers") and hasattr(s, "conn"):
            return s
        f = f.f_back
    return None


_C = math.sqrt(2.0 / math.pi)


def _gelu(a):
    return 0.5 * a * (1.0 + np.tanh(_C * (a + 0.044715 * a**3)))
