"""What an attack may leave behind on the machine, read by the tests from outside every sandbox (issue 16's
"no attack leaves a thread, process, lease or evicted page behind").

- ``session_processes(sid)``: the processes (and so their threads) of a session. The adversarial suites start
  each grading process in a session of its own, so whatever of it outlives it (a warden, a worker, a thread
  of either) is found by its session id, whoever else is using the machine.
- ``worker_processes(sid)``: those of them running as a sandbox worker's own uid.
- ``leases()``: the file leases the kernel lists in ``/proc/locks``.
- ``PageWatch``: files every worker maps (numpy's core extension, the interpreter's ``os.py``, the worker's
  own module), made resident before an attack; ``evicted()`` lists those an attack evicted (a background
  reclaim sweep, seen on a control copy of each, does not count).
"""

from __future__ import annotations

import atexit
import ctypes
import glob
import mmap
import os
import shutil
import tempfile
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


def worker_processes(sid: int, ancestor: int | None = None) -> dict[int, str]:
    """The processes of session ``sid`` that run as a sandbox worker's own uid (root graders give each one);
    with ``ancestor``, only those descended from that process, and orphans (whose parent died: init took them
    in, and they may be anyone's). Test workers share the runner's session: one running beside another saw the
    other's long-lived reference twins appear, called them leftovers and killed them (the other's evaluations
    then failed: "worker killed by SIGKILL")."""
    found = {p: d for p, d in session_processes(sid).items() if int(d.split(" uid ")[1].split()[0]) >= WORKER_ID_BASE}
    return found if ancestor is None else {p: d for p, d in found.items() if _descends_from(p, ancestor)}


def _descends_from(pid: int, ancestor: int) -> bool:
    """``pid`` is ``ancestor``'s descendant, or an orphan."""
    fields = _stat_fields(str(pid))
    if fields is not None and int(fields[1]) <= 1:
        return True
    seen = 0
    while pid > 1 and seen < 64:
        if pid == ancestor:
            return True
        fields = _stat_fields(str(pid))
        if fields is None:
            return False
        pid, seen = int(fields[1]), seen + 1
    return pid == ancestor


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
    """Reads the watched files (every page cached), then says which lost pages.

    Pages go now and then on this VM whatever the attack: it runs DAMON reclaim (``kdamond``), which drops cold
    page-cache pages in sweeps (up to 10 of numpy's 2541 in 30 s; 8 of os.py's 10 in one CI run whose attack
    could not evict anything). So each watched file gets a control: a copy of its bytes, written and synced
    into a root-only folder no worker can open, read at the same moment (same age, same coldness). A file counts
    as evicted when it lost three quarters of its cached pages (an eviction attack takes them all) while its
    control kept more than half of its own: a reclaim sweep takes both alike, an attack only the file it reaches.
    The copies are made once per test session (copying and syncing numpy's 10 MB extension took 0.6 s, on
    each of the ~200 attack runs); each watch reads them again, beside the watched files.
    """

    def __init__(self, files: list[str] | None = None) -> None:
        self.files = files or watched_files()
        self.controls = {p: _control_copy(p) for p in self.files}
        for p, c in self.controls.items():
            Path(p).read_bytes()
            Path(c).read_bytes()
        self.before = {p: resident_pages(p) for p in self.files}
        self.control_before = {p: resident_pages(c) for p, c in self.controls.items()}

    @staticmethod
    def _lost(before: list[bool], now: list[bool]) -> tuple[int, int]:
        return sum(1 for was, is_ in zip(before, now) if was and not is_), sum(before)

    def evicted(self) -> list[str]:
        out = []
        for p in self.files:
            lost, cached = self._lost(self.before[p], resident_pages(p))
            c_lost, c_cached = self._lost(self.control_before[p], resident_pages(self.controls[p]))
            swept = c_cached and 2 * c_lost > c_cached
            if lost and lost >= max(1, 3 * cached // 4) and not swept:
                out.append(f"{p}: {lost} page(s) (its control copy lost {c_lost} of {c_cached})")
        return out


_CONTROL_DIR: list[str] = []
_CONTROLS: dict[str, str] = {}


def _control_copy(path: str) -> str:
    """The session's control copy of ``path`` (written and synced once: clean pages, which reclaim may take
    exactly as it takes the watched file's), in a 0700 folder of root's, out of every worker's reach."""
    if path in _CONTROLS:
        return _CONTROLS[path]
    if not _CONTROL_DIR:
        d = tempfile.mkdtemp(prefix="kbench-pagewatch-")
        _CONTROL_DIR.append(d)
        atexit.register(shutil.rmtree, d, True)
    control = os.path.join(_CONTROL_DIR[0], f"{len(_CONTROLS)}-{os.path.basename(path)}")
    with open(control, "wb") as f:
        f.write(Path(path).read_bytes())
        f.flush()
        os.fsync(f.fileno())
    _CONTROLS[path] = control
    return control
