"""What the fork server prepares once, for every worker it forks: imported only there, last of
``server.PRELOAD``.

- The filesystem view: running as root, the fork server enters a mount namespace of its own and stages the
  view there (``fsview.prepare``), on the directory the grading process named in ``KBENCH_VIEW_DIR``; each
  worker's new mount namespace is a copy of that one, and it only pivots into the view.
- A pid namespace per worker, made by the fork server's own fork (root only): before each fork it unshares
  a new pid namespace for its next child, and after it returns to its own (``setns``), so the process it
  forks is pid 1 of a pid namespace of its own. That process is the worker itself (``confine.enter``): no
  warden, no second fork (~3 ms of each worker's start: copying the page tables of a process holding numpy,
  and copying again every page both touch). Elsewhere the warden makes the pid namespace, as before.
- The pages of the libraries it has mapped, locked in memory (``confine.pin_library_pages``): always cached,
  so a worker's first load from one says nothing about what other processes ran (S20).
- A client that leaves mid-request (Ctrl-C in a grading process) is skipped, not fatal: the loop of
  Python 3.11 died of it with a traceback on the terminal's stderr; a child whose client left before sending
  its start-up data exits quietly.
- The garbage collector's view of what is already loaded: ``gc.freeze()`` moves every object the fork
  server holds (numpy, kbench, the preloaded modules) out of the collector's reach. A collection in a forked
  warden or worker would otherwise visit them all and write to their headers, copying every page that holds
  one (~3 ms of each worker's start went to the first collection it happened to trigger).

Imported anywhere else (the variable is set only in the fork server's environment), it does nothing.
"""

from __future__ import annotations

import ctypes
import errno
import gc
import os
import types
from multiprocessing import forkserver, reduction, spawn
from typing import Any, Callable

from kbench.sandbox import confine
from kbench.sandbox.layers import check, libc
from kbench.sandbox.layers.namespaces import CLONE_NEWPID, unshare

VIEW_DIR_VAR = "KBENCH_VIEW_DIR"

_base = os.environ.pop(VIEW_DIR_VAR, None)  # popped: no worker inherits it


class _OsForkingIntoPidNamespaces(types.ModuleType):
    """``os`` as multiprocessing's fork server loop sees it, but for ``fork``."""

    def __init__(self, fork: Callable[[], int]) -> None:
        super().__init__("os")
        self.fork = fork

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)


def _fork_into_pid_namespaces() -> None:
    """Make every child of the fork server pid 1 of a pid namespace of its own (root only; otherwise, or when
    the kernel refuses, the warden makes it)."""
    if os.geteuid() != 0:
        return
    lib = libc()
    try:
        own = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)  # closed in every child (confine)
    except OSError:
        return

    def back() -> None:  # the next child in this namespace again: unshare refuses a second new one otherwise
        check(lib.setns(ctypes.c_int(own), ctypes.c_int(CLONE_NEWPID)), "setns(CLONE_NEWPID)")

    try:
        unshare(CLONE_NEWPID, "CLONE_NEWPID")
        back()
    except OSError:
        os.close(own)
        return
    real_fork = os.fork

    def fork() -> int:
        try:
            unshare(CLONE_NEWPID, "CLONE_NEWPID")
        except OSError:
            return real_fork()  # not pid 1 then: its warden makes the pid namespace (or reports it missing)
        try:
            pid = real_fork()
        finally:
            if os.getpid() != 1:  # the fork server (the child is pid 1 of the new namespace)
                try:
                    back()
                except OSError:
                    # Its next child would be forked into this child's namespace, beside another worker: this
                    # fork server forks nothing more (the grading process starts a new one).
                    os._exit(70)
        return pid

    forkserver.os = _OsForkingIntoPidNamespaces(fork)  # type: ignore[attr-defined]


class _ReductionForgivingVanishedClients(types.ModuleType):
    """``multiprocessing.reduction`` as the fork server's loop sees it, but for ``recvfds``: a client gone
    mid-request (a grading process interrupted by Ctrl-C while it asked for a worker) is ECONNABORTED, which
    the loop skips, not an EOFError that ends the fork server with a traceback on the terminal (Python 3.11's
    loop catches only the former)."""

    def __init__(self) -> None:
        super().__init__("reduction")

    def __getattr__(self, name: str) -> Any:
        return getattr(reduction, name)

    @staticmethod
    def recvfds(sock: Any, size: int) -> list[int]:
        try:
            return reduction.recvfds(sock, size)
        except EOFError:
            raise OSError(errno.ECONNABORTED, "the client left before sending its request") from None


class _SpawnForgivingVanishedClients(types.ModuleType):
    """``multiprocessing.spawn`` as the fork server's children see it, but for ``_main``: a child whose client
    left before sending what the child needs to start (its preparation data) ends with exit code 1 and says
    nothing, instead of printing the EOFError's traceback on the terminal (the same Ctrl-C, one step later)."""

    def __init__(self) -> None:
        super().__init__("spawn")

    def __getattr__(self, name: str) -> Any:
        return getattr(spawn, name)

    @staticmethod
    def _main(fd: int, parent_sentinel: int) -> int:
        try:
            return spawn._main(fd, parent_sentinel)
        except EOFError:  # only the preparation data's read raises it here: the process's own work is run,
            return 1      # and its exceptions reported, inside (BaseProcess._bootstrap)


if _base:
    forkserver.reduction = _ReductionForgivingVanishedClients()  # type: ignore[attr-defined]
    forkserver.spawn = _SpawnForgivingVanishedClients()  # type: ignore[attr-defined]
    confine.prepare_view(_base)
    _fork_into_pid_namespaces()
    try:
        confine.pin_library_pages()
    except OSError:
        pass  # each candidate worker populates its own page tables instead (confine's "prefault" step)
    gc.collect()
    gc.freeze()
