"""What an attack may leave behind on the machine, read by the tests from outside every sandbox (issue 16's
"no attack leaves a thread, process, lease or evicted page behind").

- ``session_processes(sid)``: the processes (and so their threads) of a session. The adversarial suites start
  each grading process in a session of its own, so whatever of it outlives it (a warden, a worker, a thread
  of either) is found by its session id, whoever else is using the machine.
- ``worker_processes(sid)``: those of them running as a sandbox worker's own uid.
- ``leases()``: the file leases the kernel lists in ``/proc/locks``.
- ``PageWatch``: files every worker maps (numpy's core extension, the interpreter's ``os.py``, the worker's
  own module), made resident before an attack; ``evicted()`` lists those that lost a page since.
"""

from __future__ import annotations

import ctypes
import glob
import mmap
import os
import time
from pathlib import Path

from kbench.sandbox.layers.identity import WORKER_ID_BASE

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]


def _stat_fields(pid: str) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].decode().split()
    except OSError:
        return None


def session_processes(sid: int) -> dict[int, str]:
    """pid -> short description, for every live process of session ``sid`` (not zombies: they are dead, and wait
    only for whoever inherited them to reap them, which in a container's init can take a second)."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        fields = _stat_fields(pid)
        if fields is None or int(fields[3]) != sid or fields[0] in ("Z", "X"):  # state ppid pgrp session ...
            continue
        try:
            with open(f"/proc/{pid}/status") as f:
                uid = next(int(ln.split()[1]) for ln in f if ln.startswith("Uid:"))
            threads = len(os.listdir(f"/proc/{pid}/task"))
        except (OSError, StopIteration, ValueError):
            continue
        out[int(pid)] = f"pid {pid} state {fields[0]} uid {uid} threads {threads}"
    return out


def worker_processes(sid: int) -> dict[int, str]:
    """The processes of session ``sid`` that run as a sandbox worker's own uid (root graders give each one)."""
    return {p: d for p, d in session_processes(sid).items() if int(d.split(" uid ")[1].split()[0]) >= WORKER_ID_BASE}


def outliving(find, timeout: float = 3.0) -> dict[int, str]:
    """What ``find()`` still returns after ``timeout`` seconds (processes take a moment to be reaped)."""
    end = time.monotonic() + timeout
    while True:
        left = find()
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.05)


def kill_all(pids) -> None:
    for pid in pids:
        try:
            os.kill(pid, 9)
        except OSError:
            pass


def leases() -> set[str]:
    """The leases in /proc/locks, without their position numbers."""
    try:
        with open("/proc/locks") as f:
            return {ln.split(":", 1)[1].strip() for ln in f if "LEASE" in ln}
    except OSError:
        return set()


def resident_pages(path: str) -> list[bool]:
    """Which pages of ``path`` are in the page cache (mincore on a shared read-only mapping of it)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return []
        addr = _libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), f"mmap {path}")
        try:
            n = -(-size // mmap.PAGESIZE)
            vec = ctypes.create_string_buffer(n)
            if _libc.mincore(addr, size, vec) != 0:
                raise OSError(ctypes.get_errno(), f"mincore {path}")
            return [bool(b & 1) for b in vec.raw[:n]]
        finally:
            _libc.munmap(addr, size)
    finally:
        os.close(fd)


def watched_files() -> list[str]:
    import numpy

    import kbench.sandbox.worker as worker

    core = glob.glob(os.path.join(os.path.dirname(numpy.__file__), "_core", "_multiarray_umath*.so"))
    return sorted(core[:1] + [os.__file__, worker.__file__])


class PageWatch:
    """Reads the watched files (every page cached), then says which lost pages. A few pages of a file go now
    and then on this VM whatever the attack (here: up to 10 of numpy's 2541 in 30 s; 2 of os.py's 10 in a CI run
    whose attack could not evict anything), so a file counts as evicted when it lost three quarters of its
    cached pages (an eviction attack takes them all)."""

    def __init__(self, files: list[str] | None = None) -> None:
        self.files = files or watched_files()
        for p in self.files:
            Path(p).read_bytes()
        self.before = {p: resident_pages(p) for p in self.files}

    def evicted(self) -> list[str]:
        out = []
        for p in self.files:
            now = resident_pages(p)
            lost = sum(1 for was, is_ in zip(self.before[p], now) if was and not is_)
            cached = sum(self.before[p])
            if lost and lost >= max(1, 3 * cached // 4):
                out.append(f"{p}: {lost} page(s)")
        return out
