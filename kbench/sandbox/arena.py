"""Shared memory between the grading process and its workers: sealed memfds the grader owns.

``InputArena``: where the grader puts inputs and parameter sets. The grader maps it read-write, then seals
it (``F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL``): nobody can change its size, and
no one else can ever write it — a worker can map it only read-only, ``mprotect`` cannot make that mapping
writable, ``write()`` and a writable reopen through /proc fail. So the inputs a reference and a candidate
read are the grader's own bytes, unchanged whatever the candidate's native code does, and both read the
same physical pages (no layout difference between the two arms of a timing pair). One arena per task,
reused and pre-faulted: inputs are staged with one copy each, or drawn straight into their slot.

``ScratchArena``: the candidate's ``alloc`` pool. Writable by the worker (it is where an output may be
written), sealed against resizing (a truncation would make the grader's next read a SIGBUS). The grader
fills the used part with NaN between calls, outside the timed region.

The regions have no name in any file system; descriptors reach workers over their socket (SCM_RIGHTS).
"""

from __future__ import annotations

import fcntl
import math
import mmap
import os

import numpy as np

F_SEAL_FUTURE_WRITE = 0x0010
SIZE_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW
ALIGN = 4096  # page-aligned slots: the worker's views and the grader's writes never share a page


def _aligned(n: int) -> int:
    return -(-int(n) // ALIGN) * ALIGN


class _Region:
    def __init__(self, size: int, name: str, seals: int) -> None:
        self.size = max(_aligned(size), ALIGN)
        self.fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(self.fd, self.size)
            self.map = mmap.mmap(self.fd, self.size)  # the grader's writable mapping, made before the seals
            fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, seals | fcntl.F_SEAL_SEAL)
        except BaseException:
            os.close(self.fd)
            raise
        self.map.madvise(mmap.MADV_WILLNEED)

    def seals(self) -> int:
        return fcntl.fcntl(self.fd, fcntl.F_GET_SEALS)

    def view(self, dtype: np.dtype | str, shape: tuple[int, ...], offset: int) -> np.ndarray:
        return np.frombuffer(self.map, dtype=dtype, count=math.prod(shape), offset=offset).reshape(shape)

    def close(self) -> None:
        try:
            self.map.close()
        except BufferError:  # a view still exported: the mapping goes with the last view
            pass
        try:
            os.close(self.fd)
        except OSError:
            pass


class InputArena(_Region):
    """``n_slots`` input slots of ``slot_bytes`` each, then ``n_psets`` parameter regions."""

    def __init__(self, slot_bytes: int, n_slots: int, pset_bytes: int, n_psets: int, tag: str) -> None:
        self.slot_bytes, self.n_slots = _aligned(max(slot_bytes, 1)), n_slots
        self.pset_bytes, self.n_psets = _aligned(max(pset_bytes, 1)), n_psets
        super().__init__(self.slot_bytes * n_slots + self.pset_bytes * n_psets, f"kbench-inputs-{tag}",
                         SIZE_SEALS | F_SEAL_FUTURE_WRITE)
        np.frombuffer(self.map, np.uint8)[::ALIGN] = 0  # pre-fault every page once

    def slot_offset(self, slot: int) -> int:
        return slot * self.slot_bytes

    def pset_offset(self, index: int) -> int:
        return self.slot_bytes * self.n_slots + index * self.pset_bytes


class ScratchArena(_Region):
    """A candidate worker's ``alloc`` pool: ``size`` bytes, NaN-filled by the grader."""

    def __init__(self, size: int, tag: str) -> None:
        super().__init__(size, f"kbench-scratch-{tag}", SIZE_SEALS)
        self.dirty = self.size
        self.refill(self.size)

    def refill(self, used: int) -> None:
        """NaN-fill the first ``used`` bytes (what the worker said it handed out; more if it lied is its loss:
        its own stale data from an earlier call on other inputs)."""
        n = min(self.size, _aligned(max(int(used), 0))) // 4
        if n:
            np.frombuffer(self.map, np.uint32, n)[:] = 0x7FC00000  # float32 quiet NaN; any dtype's poison
