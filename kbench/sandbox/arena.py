"""Shared memory between the grading process and one worker: a sealed memfd.

The grading process creates the region, sets its size, then seals it (``F_SEAL_SHRINK | F_SEAL_GROW |
F_SEAL_SEAL``): from then on nobody, the worker included, can change its size or remove the seals, so a
candidate cannot truncate the file under the grader's mapping (which would make the grader's next read
a SIGBUS). The descriptor reaches the worker over the reply socket (SCM_RIGHTS); the region has no name
in any file system, so no other process can open it.
"""

from __future__ import annotations

import fcntl
import math
import mmap
import os

import numpy as np

SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
ALIGN = 64


class Arena:
    """A sealed, fixed-size shared region owned by the grading process."""

    def __init__(self, size: int, arena_id: int) -> None:
        self.size = int(size)
        self.arena_id = arena_id
        self.fd = os.memfd_create(f"kbench-arena-{arena_id}", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(self.fd, self.size)
            fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, SEALS)
            self.map = mmap.mmap(self.fd, self.size)
        except BaseException:
            os.close(self.fd)
            raise

    def seals(self) -> int:
        return fcntl.fcntl(self.fd, fcntl.F_GET_SEALS)

    def view(self, dtype: np.dtype, shape: tuple[int, ...], offset: int) -> np.ndarray:
        count = math.prod(shape)
        return np.frombuffer(self.map, dtype=dtype, count=count, offset=offset).reshape(shape)

    def close(self) -> None:
        try:
            self.map.close()
        except BufferError:  # a view still exported: the mapping goes with the last view
            pass
        try:
            os.close(self.fd)
        except OSError:
            pass


def layout(x: dict[str, np.ndarray]) -> tuple[list[tuple[str, str, tuple[int, ...], int]], int]:
    """Where each input goes (64-byte aligned) and where the output region starts."""
    spec, off = [], 0
    for name, a in x.items():
        spec.append((name, a.dtype.str, tuple(int(s) for s in a.shape), off))
        off += -(-a.nbytes // ALIGN) * ALIGN
    return spec, off
