"""The timing lane: timing runs alone on this machine, on its own core, while correctness may run in parallel.

Speedups are ratios of two clocks read on a shared machine; a neighbour's cache traffic or a stolen
core moves them by more than the 2 % the timing step tries to resolve. So batch grading follows one
rule per machine, enforced by a readers-writer lock on a lock file (``fcntl.flock``, released by the
kernel when its holder dies, even by ``kill -9``):

- correctness work (static check, load, trials) holds the lock **shared**: any number at once;
- timing holds it **exclusive**: it waits until every correctness holder on the machine is between two
  steps, and correctness work elsewhere waits until the timing is done. The lane holder times alone.
- A second file is a turnstile that gives waiting timers priority over new correctness work, so a
  busy pool cannot starve timing.

The lane also names the core timing runs on (the last one this process may use); the pipeline pins
the candidate's worker and the reference's timing twin there.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import Iterator

LOCK_NAME = "timing-lane.lock"
TURNSTILE_NAME = "timing-lane.turnstile"


def timing_cpu() -> int | None:
    """The core timing is pinned to: the last of this process's cores (None on a one-core machine). The
    candidate's worker and the reference's timing twin share it, so neither gets a cache the other lacks;
    the grading process and the UI keep the others."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    cpus = sorted(os.sched_getaffinity(0))
    return cpus[-1] if len(cpus) > 1 else None


class TimingLane:
    """One machine-wide timing lane, shared by every process that uses the same lock directory.

    Picklable (only the directory is kept): each process opens its own descriptors on first use, since
    flock locks belong to an open file description."""

    def __init__(self, lock_dir: Path | str) -> None:
        self.lock_dir = Path(lock_dir)
        self._fds: tuple[int, int] | None = None
        self._pid = 0
        self._shared_depth = 0

    def __getstate__(self) -> dict:
        return {"lock_dir": self.lock_dir}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["lock_dir"])  # type: ignore[misc]

    def _open(self) -> tuple[int, int]:
        if self._fds is None or self._pid != os.getpid():  # a forked child must not share its parent's locks
            self.lock_dir.mkdir(parents=True, exist_ok=True)
            flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC
            self._fds = (os.open(self.lock_dir / LOCK_NAME, flags, 0o600),
                         os.open(self.lock_dir / TURNSTILE_NAME, flags, 0o600))
            self._pid, self._shared_depth = os.getpid(), 0
        return self._fds

    @contextlib.contextmanager
    def correctness(self) -> Iterator[None]:
        """Hold the lane shared: correctness work, beside other correctness work, never beside timing."""
        lock, turn = self._open()
        if self._shared_depth == 0:
            fcntl.flock(turn, fcntl.LOCK_EX)  # wait behind any timer already queued
            try:
                fcntl.flock(lock, fcntl.LOCK_SH)
            finally:
                fcntl.flock(turn, fcntl.LOCK_UN)
        self._shared_depth += 1
        try:
            yield
        finally:
            self._shared_depth -= 1
            if self._shared_depth == 0:
                fcntl.flock(lock, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def timing(self) -> Iterator[int | None]:
        """Hold the lane exclusive; yields the core to time on. Inside ``correctness()``, the shared hold is
        given up first (two holders both upgrading would otherwise wait for each other) and taken back after."""
        lock, turn = self._open()
        was_shared = self._shared_depth > 0
        if was_shared:
            fcntl.flock(lock, fcntl.LOCK_UN)
        fcntl.flock(turn, fcntl.LOCK_EX)  # queue first: new correctness work now waits behind us
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
        finally:
            fcntl.flock(turn, fcntl.LOCK_UN)
        try:
            yield timing_cpu()
        finally:
            fcntl.flock(lock, fcntl.LOCK_SH if was_shared else fcntl.LOCK_UN)

    def close(self) -> None:
        if self._fds is not None and self._pid == os.getpid():
            for fd in self._fds:
                os.close(fd)
        self._fds = None
