"""The OS layers a sandbox worker applies to itself, one small module each. ``kbench.sandbox.confine`` lists
them, in the order they are applied, as one table; these modules only know how to apply one layer.

Every function here is called in a process that has run no candidate code yet (the warden, or the worker
before it loads a candidate), and raises ``OSError`` with a one-line reason when its layer cannot hold.
"""

from __future__ import annotations

import ctypes
import functools
import os
import signal


@functools.cache
def libc() -> ctypes.CDLL:
    """The C library, opened once per process tree (the fork server's handle is every worker's): a worker
    that narrows itself after its audit hook is installed (``confine.drop_reads``) must not dlopen then."""
    lib = ctypes.CDLL(None, use_errno=True)
    lib.syscall.restype = ctypes.c_long
    return lib


def check(rc: int, what: str) -> None:
    """Raise OSError(errno, "what: strerror") when a libc call returned non-zero."""
    if rc != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"{what}: {os.strerror(e)}")


PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """SIGKILL this process when the thread that forked it ends (``PR_SET_PDEATHSIG``). The kernel clears it
    at every credential change: set it again after one."""
    libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
