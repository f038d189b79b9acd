"""Fast wake-ups while kbench grades: idle cores poll instead of halting.

Every call wakes two cores that were idle: the worker's, for the request, and the grader's, for the reply. An idle
core halts, and on a virtual machine a halted vCPU is a VM exit whose wake-up costs tens of microseconds: measured
on 12-03 (Intel Xeon KVM guest, haltpoll cpuidle), an empty call took 0.275 ms, a Ping to a worker that is never
stopped 0.118 ms. While a PM QoS request of 0 us is held (``/dev/cpu_dma_latency``, the kernel's interface for a
latency bound, in force while its file stays open), cpuidle only picks idle states with no exit latency: the
polling state, where a wake-up is a preemption. Measured the same hour: the empty call 0.098-0.104 ms, that Ping
0.022 ms.

Both arms of a pair get the same wake-ups, so this changes no speedup by itself; it shortens what a call costs
beyond its kernel, and the scatter that cost adds. The request is held while an evaluation runs (``held``,
counted: concurrent evaluations in one process share one) and dropped after it: polling cores spend their idle
time (power on a laptop, host CPU on a virtual machine). It needs write access to the device (root); where it
cannot be had, ``state()`` says why and calls take the halting path. ``KBENCH_FAST_WAKEUPS=0`` turns it off.

The other wake-up is the grading thread's own, on a core where the helper works: ``prompt`` (a short slice).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import struct
import threading
from typing import Iterator

#: The kernel's PM QoS latency-bound device (Documentation/power/pm_qos_interface.rst).
DEVICE = "/dev/cpu_dma_latency"
#: The bound asked for, in microseconds: no idle state with any exit latency.
LATENCY_US = 0
OFF_VARIABLE = "KBENCH_FAST_WAKEUPS"

_lock = threading.Lock()
_fd: int | None = None
_holders = 0
_last_error: str | None = None


def _disabled() -> bool:
    return os.environ.get(OFF_VARIABLE, "").strip().lower() in ("0", "off", "no", "false")


def _open() -> int | None:
    global _last_error
    try:
        fd = os.open(DEVICE, os.O_WRONLY | os.O_CLOEXEC)
    except OSError as e:
        _last_error = f"{DEVICE}: {e.strerror or e}"
        return None
    try:
        os.write(fd, struct.pack("i", LATENCY_US))
    except OSError as e:
        os.close(fd)
        _last_error = f"{DEVICE}: {e.strerror or e}"
        return None
    _last_error = None
    return fd


@contextlib.contextmanager
def held() -> Iterator[bool]:
    """Idle cores poll for the block (when the machine allows it); yields whether the request is held."""
    global _fd, _holders
    if _disabled():
        yield False
        return
    with _lock:
        if _holders == 0:
            _fd = _open()
        _holders += 1
        holding = _fd is not None
    try:
        yield holding
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _fd is not None:
                try:
                    os.close(_fd)  # closing the file drops the request
                finally:
                    _fd = None


def state() -> str:
    """One line for reports: whether idle cores poll while kbench grades, and if not, why."""
    if _disabled():
        return f"idle cores halt: fast wake-ups turned off ({OFF_VARIABLE}=0)"
    with _lock:
        if _fd is not None:
            return f"idle cores poll while grading (PM QoS {LATENCY_US} us held on {DEVICE})"
    fd = _open()  # a probe: can it be had here?
    if fd is None:
        return f"idle cores halt: fast wake-ups unavailable ({_last_error})"
    os.close(fd)
    return f"idle cores poll while grading (PM QoS {LATENCY_US} us on {DEVICE}, held only during an evaluation)"


# ---------------------------------------------------------------- the grading thread's slice

class _SchedAttr(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("policy", ctypes.c_uint32), ("flags", ctypes.c_uint64),
                ("nice", ctypes.c_int32), ("priority", ctypes.c_uint32), ("runtime", ctypes.c_uint64),
                ("deadline", ctypes.c_uint64), ("period", ctypes.c_uint64), ("util_min", ctypes.c_uint32),
                ("util_max", ctypes.c_uint32)]


#: (sched_setattr, sched_getattr) by architecture (the libc has no wrapper for either).
_SYSCALLS = {"x86_64": (314, 315), "aarch64": (274, 275)}
SLICE_NS = 100_000
_RESET_ON_FORK = 0x01
_depth = threading.local()


def _libc() -> "ctypes.CDLL | None":
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _set_runtime(libc: ctypes.CDLL, nrs: tuple[int, int], runtime: int) -> bool:
    """The calling thread's slice request (0: the default); whether the kernel took it (read back: kernels before
    6.12 accept the call for a normal thread and ignore the runtime)."""
    attr = _SchedAttr()
    if libc.syscall(nrs[1], 0, ctypes.byref(attr), ctypes.sizeof(attr), 0) != 0 or attr.policy != 0:
        return False  # a real-time or idle policy: not ours to change
    # Nice is kept (it is in attr). SCHED_FLAG_RESET_ON_FORK with the short slice: threads and processes started
    # meanwhile (the helper, the fork server and so every worker) start with the default slice.
    attr.size, attr.runtime, attr.flags = ctypes.sizeof(attr), runtime, _RESET_ON_FORK if runtime else 0
    if libc.syscall(nrs[0], 0, ctypes.byref(attr), 0) != 0:
        return False
    back = _SchedAttr()
    libc.syscall(nrs[1], 0, ctypes.byref(back), ctypes.sizeof(back), 0)
    return runtime == 0 or back.runtime == runtime


@contextlib.contextmanager
def prompt() -> Iterator[bool]:
    """The calling thread asks for a short slice while in the block (``sched_setattr``'s runtime for a normal
    thread: EEVDF's custom slice, Linux 6.12 and later), so that its wake-ups preempt what runs on its core.

    Why: while a pair runs, the helper (``kbench.grading.cores.Ahead``) works on the grading thread's core. A reply
    woke the grading thread there, and it waited for the helper's slice to end: a timed call's round trip beyond
    its kernel was 0.70 ms on average over the whole library, against ~0.1 ms for a call alone (12-03). With a
    0.1 ms slice it preempts at once: 0.32-0.34 ms. Lowering the helper's priority instead (nice 19) did as much
    idle (0.26 ms) but starved it behind any other busy process: with a busy loop on that core a softmax
    evaluation took 17.6 s instead of 2.7 s. A short slice changes when the thread runs, not how much: the helper
    and other processes keep their share. Yields whether the slice was granted. Nested blocks share the outer
    one's; after the outermost, the thread has the default slice again."""
    depth = getattr(_depth, "n", 0)
    nrs = _SYSCALLS.get(platform.machine())
    libc = _libc() if depth == 0 and nrs is not None else None
    ok = getattr(_depth, "ok", False) if depth else (libc is not None and nrs is not None
                                                    and _set_runtime(libc, nrs, SLICE_NS))
    _depth.n, _depth.ok = depth + 1, ok
    try:
        yield ok
    finally:
        _depth.n = depth
        if depth == 0 and ok and libc is not None and nrs is not None:
            _set_runtime(libc, nrs, 0)


def slice_state() -> str:
    """One line for reports: whether the grading thread can ask for its short slice here."""
    with prompt() as ok:
        pass
    return (f"the grading thread asks for a {SLICE_NS / 1e3:.0f} us slice while grading" if ok else
            "the grading thread keeps the default slice (a custom slice needs Linux 6.12 or later)")
