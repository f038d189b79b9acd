"""The grading process's side of the sandbox: start workers, talk to them, time them, survive them.

Workers are forked from a fork server that already imported numpy (see ``worker``), into namespaces of their
own (``confine``: as root the worker alone, else a warden and the worker it forks). ``Worker.call`` sends one typed request
(``protocol``) and returns its typed reply; ``Worker.run`` is the timed kernel call. Whatever the worker
does, a call ends by its deadline: every read and write waits in ``poll`` with the time left, and a missed
deadline kills the worker. Replies are bounded before they are read (a 64 KiB header), and a malformed
reply is a ``WorkerError``, never an exception from deep inside a parser.

The grader owns every fact about a call, from outside the worker:
- **its clock**: wall time from the request sent to the reply received, and the worker's CPU time as the
  kernel accounts it (its process CPU clock, every thread included); the worker's own stamps are not used;
- **its output**: the bytes at the address the worker names, read with ``process_vm_readv`` into the
  grader's own buffer while the worker is stopped (copied from the grader's own mapping when they lie in the
  worker's ``alloc`` pool: ``Worker.share_pool``); a wrong address gives wrong bytes, judged as such;
- **its threads**: counted in ``/proc/<pid>/task``.
A candidate's worker is stopped (SIGSTOP, every thread, checked in /proc) from the moment its reply
arrives until its next request, so nothing of it runs while the reference is timed or its output is read.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import math
import mmap
import multiprocessing
import os
import pickle
import queue
import re
import select
import shutil
import signal
import socket
import struct
import sys
import tempfile
import threading
import time
import types
from dataclasses import dataclass
from typing import Any, Iterator, Literal

import numpy as np

from kbench.core import parallel
from kbench.core.once import once
from kbench.core.parallel import every_core
from kbench.sandbox import confine as _confine
from kbench.sandbox import protocol as P
from kbench.sandbox import worker as _worker

#: The largest output a call may name, whatever it asked for.
MAX_OUTPUT_BYTES = 1 << 30
#: Calls a worker keeps prepared at once (a timed run prepares a few: one per parameter set and arm).
MAX_PREPARED = 256
HELLO_TIMEOUT_S = 10.0
#: How long a stopped worker may take to show every thread stopped (a thread inside a long system call does
#: not stop until it returns: seccomp refuses the long ones, so an honest worker stops in microseconds).
STOP_TIMEOUT_S = 0.25
#: How long a stop is waited for by yielding the core before sleeping (``Worker._stop_wait``).
STOP_YIELD_S = 0.5e-3
#: Tests only: how candidate workers are started. None: as always. "no_audit": without the audit hook (the OS
#: layers alone). "native": without the audit hook and with ``ctypes``, ``libc`` and ``syscall`` in the
#: candidate's namespace, as if its own native code ran in the worker (what the threat model assumes it can).
#: Read in the grading process when a worker starts; nothing a candidate does can set it.
TEST_HARNESS: str | None = None
#: Modules the fork server imports before it forks anything (layers above the sandbox add their own).
PRELOAD: list[str] = ["numpy", "threadpoolctl", "kbench.sandbox.worker"]
_FORK_SERVER = "kbench.sandbox.fork_server"  # imported last, whatever others add to PRELOAD

_ctx_lock = threading.Lock()
_ctx: Any = None


def _installation_path() -> list[str]:
    """This process's sys.path without the entries that are not the installation: not "" or the current
    directory (``python -m`` and ``python -c`` put it first), not the grading script's folder, not
    PYTHONPATH. The fork server imports numpy and kbench before it forks anything, unconfined: a
    ``numpy.py`` or ``threadpoolctl.py`` in the folder kbench was started from must not be what it imports."""
    return list(_installation_entries(tuple(sys.path)))


@functools.lru_cache(maxsize=4)
def _installation_entries(path: tuple[str, ...]) -> tuple[str, ...]:
    # Cached per sys.path: resolving each entry costs ~0.3 ms a worker start.
    roots = tuple(r.rstrip(os.sep) + os.sep for r in _confine.read_roots())
    return tuple(p for p in path if p and os.path.isabs(p) and (os.path.realpath(p) + os.sep).startswith(roots))


def _start_fork_server() -> None:
    """Start the fork server with the worker environment only and the installation's import path: every
    worker is forked from it, and its initial environment block and command line are inherited by each
    (the warden zeroes both)."""
    from multiprocessing import forkserver

    if _fork_server_alive(getattr(forkserver._forkserver, "_forkserver_pid", None)):
        return  # running: leave os.environ alone (other threads read it)
    saved_env, saved_path = dict(os.environ), list(sys.path)
    saved_cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    try:
        every_core()  # the fork server and every worker inherit this thread's affinity
        os.environ.clear()
        os.environ.update(_confine.worker_environment(saved_env))
        os.environ["PYTHONSAFEPATH"] = "1"  # its own `python -c` must not put the current directory first
        os.environ["KBENCH_VIEW_DIR"] = _view_dir()  # where it stages the filesystem view (fork_server.py)
        # Workers time on one BLAS thread: started so, OpenBLAS has no pool for each worker to start and stop.
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        sys.path[:] = _installation_path()  # what multiprocessing hands the fork server as its sys.path
        forkserver.ensure_running()
    finally:
        sys.path[:] = saved_path
        os.environ.clear()
        os.environ.update(saved_env)
        if saved_cpus is not None:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(0, saved_cpus)


def _fork_server_alive(pid: int | None) -> bool:
    """Without reaping it (multiprocessing's own check does that)."""
    if pid is None:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X")


def _context() -> Any:
    global _ctx
    with _ctx_lock:
        if _ctx is None:
            ctx = multiprocessing.get_context("forkserver")
            # fork_server last: it freezes what the others loaded (see there)
            ctx.set_forkserver_preload([m for m in dict.fromkeys(PRELOAD) if m != _FORK_SERVER] + [_FORK_SERVER])
            _ctx = ctx
        _start_fork_server()  # a no-op when it runs; restarts it if it died
        return _ctx


_view: tuple[int, str] | None = None  # (the pid that made it, its path)


def _view_dir() -> str:
    """The directory every worker's filesystem view is mounted on, one per grading process: the fork server
    stages the view on it in its own mount namespace (root), or each warden mounts its own there in its
    namespace. Mounts in other namespaces are invisible here: it stays an empty directory, and workers need
    no directory each. Stale ones (from killed kbench processes) are removed when the first is made."""
    global _view
    if _view is None or _view[0] != os.getpid():  # a forked child makes its own (see _remove_view_dir)
        shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
        base = shm or tempfile.gettempdir()
        _sweep_stale(base)
        path = tempfile.mkdtemp(prefix=f"kbench-view-{os.getpid()}-", dir=base)
        os.chmod(path, 0o755)
        _view = (os.getpid(), path)
        atexit.register(_remove_view_dir, os.getpid(), path)
    return _view[1]


def _remove_view_dir(owner: int, path: str) -> None:
    if os.getpid() == owner:  # not in a forked child that happens to run exit handlers
        shutil.rmtree(path, ignore_errors=True)


def _sweep_stale(base: str) -> None:
    """Remove sandbox directories left by kbench processes that no longer exist (killed, say)."""
    try:
        names = os.listdir(base)
    except OSError:
        return
    for name in names:
        m = re.match(r"kbench-(?:view|candidate|reference)-(\d+)-", name)
        if m and not _alive(int(m.group(1))):
            shutil.rmtree(os.path.join(base, name), ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def prestart() -> None:
    """Start the fork server (and its resource tracker) now, from a normal process state.

    Call before a UI framework replaces stdio: the fork server inherits stderr's descriptor, and the
    first evaluation then needn't pay for starting it."""
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()
    _context()


@contextlib.contextmanager
def no_main_module() -> Iterator[None]:
    """Start processes without re-importing the caller's main script: multiprocessing would run it (as
    ``__mp_main__``) in every worker — the lecture script's imports alone cost ~25 ms per worker — and a
    script without a ``__main__`` guard would run again in every spawned pool process."""
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


@contextlib.contextmanager
def sanitized_preparation() -> Iterator[None]:
    """Start processes with nothing of this process in their start-up data: multiprocessing hands every child
    the parent's ``sys.argv``, ``sys.path``, working directory and authkey (a worker read the grader's command
    line back from its own ``sys.argv``, and the old authkey from its freed heap). The child gets the
    installation's path, ``/`` and a fresh random key instead."""
    from multiprocessing import spawn

    real = spawn.get_preparation_data

    def clean(name: str) -> dict:
        d = real(name)
        d.update(sys_argv=[sys.executable], sys_path=_installation_path(), dir="/", orig_dir="/",
                 authkey=os.urandom(32))
        d.pop("init_main_from_name", None)
        d.pop("init_main_from_path", None)
        return d

    spawn.get_preparation_data = clean
    try:
        yield
    finally:
        spawn.get_preparation_data = real


@once
def _reaper() -> "queue.SimpleQueue[Worker]":
    """A daemon thread that reaps closed workers in the background, in the order they were closed."""
    q: "queue.SimpleQueue[Worker]" = queue.SimpleQueue()

    def loop() -> None:
        while True:
            w = q.get()
            try:
                w.reap()
            except Exception:  # noqa: BLE001 - a worker that cannot be reaped is the system's to reap
                pass

    threading.Thread(target=loop, name="kbench-reaper", daemon=True).start()
    return q


class WorkerError(Exception):
    """The worker did not answer: timed out, died, or sent something malformed."""

    def __init__(self, kind: Literal["timeout", "died", "protocol"], message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _exit_text(code: int | None) -> str:
    if code is None:
        return "worker died"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = " (out of memory?)" if -code == signal.SIGKILL else ""
        return f"worker killed by {name}{hint}"
    return f"worker exited with code {code}"


class _Deadline:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def left_ms(self) -> int:
        return max(0, math.ceil((self.end - time.monotonic()) * 1000))


class _IOVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.process_vm_readv.restype = ctypes.c_ssize_t
_libc.process_vm_readv.argtypes = [ctypes.c_int, ctypes.POINTER(_IOVec), ctypes.c_ulong, ctypes.POINTER(_IOVec),
                                   ctypes.c_ulong, ctypes.c_ulong]
_readv = _libc.process_vm_readv


@dataclass(frozen=True)
class KernelCall:
    """One timed call as the grading process saw it: the reply, its wall nanoseconds (to the reply, plus the CPU
    the worker used after it until it stopped) and CPU nanoseconds, and the output read from the worker's memory
    (None when the reply named none, or named the wrong size)."""

    reply: P.Reply
    wall_ns: int
    cpu_ns: int
    output: np.ndarray | None


class Worker:
    """One sandboxed worker. ``role="candidate"`` installs the audit hook (for readable refusals) and is
    stopped between requests; ``"reference"`` runs only our references and never sees candidate code
    (``stopped=True`` makes a reference worker stop between requests too: the timing twin, treated exactly
    as the candidate is). Both get every OS layer."""

    def __init__(self, role: Literal["candidate", "reference"], memory_limit_mb: int = 4096,
                 blas_threads: int = 1, cpu: int | None = None, stopped: bool | None = None) -> None:
        self.role = role
        self.stops = role == "candidate" if stopped is None else stopped
        self.hello: P.Hello | None = None
        self.pid = 0  # the worker's pid, once the warden has said it
        self._paused = False
        self._mapped: dict[str, int] = {}  # arena kind -> id of the arena mapped
        ctx = _context()
        cfg = {"role": role, "view_dir": _view_dir(), "memory_limit_mb": memory_limit_mb,
               "blas_threads": blas_threads, "cpu": cpu, "harness": TEST_HARNESS if role == "candidate" else None}
        self.conn, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=_worker.main, args=(child, cfg), daemon=True, name=f"kbench-{role}")
        self.proc.authkey = os.urandom(32)  # the process object carries a key too: not the grader's
        try:
            with _ctx_lock, no_main_module(), sanitized_preparation():
                self.proc.start()
        finally:
            child.close()
        # multiprocessing ends the daemonic children left at its exit with SIGTERM (``_popen.terminate``), then
        # joins them. As root the process it started is the worker itself, pid 1 of its pid namespace, which no
        # SIGTERM from outside reaches (and a candidate may ignore it anyway): it must be SIGKILL.
        popen = self.proc._popen  # type: ignore[attr-defined]
        popen.terminate = popen.kill
        self._fd = self.conn.fileno()
        os.set_blocking(self._fd, False)
        self._fd_sock = socket.socket(fileno=os.dup(self._fd))  # passes arena descriptors
        self.dead = False
        self._cpu = cpu
        self._pollers: dict[int, Any] = {}
        self._frames: dict[P.Request, bytes] = {}  # request -> its frame (see _frame)
        self._prepared: dict[tuple, tuple[P.Prepare, bytes] | None] = {}  # (call, expect) -> it prepared, its frame
        self._next_slot = 0  # never reused: a frame can only ever mean the call it was prepared for
        self._stat_fds: dict[str, int] = {}  # /proc stat path -> a descriptor kept open (see _stat_state)
        self._iov = (_IOVec(), _IOVec())  # process_vm_readv's two vectors, refilled per read
        self._pool: tuple[np.ndarray, int] | None = None  # the scratch pool: the grader's bytes, the worker's address
        #: The core a timed output is read on (None: wherever the calling thread runs). While the grader times, the
        #: timing core: idle while the worker is stopped, where the other core is full of the grader's work. The
        #: calling thread stays there (``parallel.park``) until its next request to any worker, which moves it back
        #: before the worker runs: the grader's work between calls is done on the idle core too.
        self.read_cpu: int | None = None
        self._iov_local, self._iov_remote = ctypes.byref(self._iov[0]), ctypes.byref(self._iov[1])
        self._sentinel = select.poll()
        self._sentinel.register(self.proc.sentinel, select.POLLIN)

    # -- the protocol -----------------------------------------------------------------------------

    def call(self, request: P.Request, timeout: float, fd: int | None = None) -> P.Reply:
        """Send ``request`` (and ``fd``, for MapArena); return its reply (or a ``protocol.Failure``), or raise
        WorkerError."""
        parallel.unpark()  # never on the worker's core while it runs (see read_cpu)
        deadline = _Deadline(timeout)
        if isinstance(request, P.MapArena) and request.kind == "inputs":
            self._prepared.clear()  # the worker forgets its prepared calls with the arena they read
        with self._ending_on_error():
            self._ready(deadline, stop=False)  # the request follows at once (see _ready)
            self._send_frame(self._frame(request), deadline)  # while stopped: one wake-up, by the SIGCONT
            self._continue()
            if fd is not None:
                self._send_fd(fd, deadline)
            raw = self._recv_frame(P.MAX_HEADER_BYTES, deadline)
            stopping = self._stop_signal()  # first: the worker stops while its reply is decoded
            reply = P.decode(raw, P.EXPECTED[type(request)])
            if stopping:
                self._stop_wait()
            return reply

    def run(self, request: P.Call | P.Ping, timeout: float, expect: tuple[str, tuple[int, ...]] | None,
            into: np.ndarray | None = None, stop: bool = True) -> KernelCall:
        """The timed call: wall and CPU time of the round trip by the grader's clocks (``KernelCall``), then the output read
        from the worker's memory (``expect``: the dtype and shape the caller will judge; an output of another
        size is not read). ``into``: a preallocated buffer for the output (reused across calls). ``stop``:
        stop the worker at the reply whatever its role (timed calls treat both arms the same way). A call with an
        ``expect`` is prepared first (``P.Prepare``, untimed): the timed round trip then carries a few bytes each
        way."""
        parallel.unpark()  # never on the worker's core while it runs (see read_cpu)
        prepared = self._prepare(request, expect, timeout) if isinstance(request, P.Call) and expect else None
        deadline = _Deadline(timeout)
        with self._ending_on_error():
            self._ready(deadline)
            frame = prepared[1] if prepared is not None else self._frame(request)
            cpu0 = self.cpu_ns()
            t0 = time.perf_counter_ns()
            self._send_frame(frame, deadline)  # while stopped (a small frame fits the socket's buffer) ...
            self._continue()  # ... so the worker wakes once, with its request already there
            raw = self._recv_frame(P.MAX_HEADER_BYTES, deadline)
            t1 = time.perf_counter_ns()
            cpu1 = self.cpu_ns()  # at the reply: the worker still runs until the stop lands
            stopping = self._stop_signal(force=stop)  # first: the worker stops while its reply is decoded
            reply = P.decode_reply(raw, P.EXPECTED[type(request)], prepared[0] if prepared is not None else None)
            if stopping:
                self._stop_wait()
            cpu2 = self.cpu_ns()
            # The wall time to the reply, plus the CPU time the worker used after it, until it stopped (12-03 audit:
            # a worker runs on for 40-60 us after writing its reply until SIGSTOP lands, and work moved there behind
            # an early reply left the wall clock). The same for both arms, and in the floor the twin measures
            # (``CallCost``): an honest worker's return to its read is there too.
            wall = t1 - t0 + max(cpu2 - cpu1, 0)
            cpu = cpu2 - cpu0
            out = None
            if isinstance(reply, P.Called) and reply.out_type == "numpy.ndarray" and expect is not None \
                    and (reply.out_dtype, reply.out_shape) == (np.dtype(expect[0]).str, tuple(expect[1])):
                if self.read_cpu is not None and stopping:
                    parallel.park(self.read_cpu)  # the worker is stopped: its core is idle until the next request
                out = self.read(reply.out_addr, reply.nbytes, into, expect)
            return KernelCall(reply, wall, cpu, out)

    def _prepare(self, call: P.Call, expect: tuple[str, tuple[int, ...]], timeout: float
                 ) -> tuple[P.Prepare, bytes] | None:
        """``call`` prepared in the worker for an output of ``expect`` (once per call and arena), with its frame;
        None where the worker refused (the call then goes the plain way, and fails there as it would)."""
        key = (call, expect[0], tuple(expect[1]))
        if key in self._prepared:
            return self._prepared[key]
        if len(self._prepared) >= MAX_PREPARED:
            return None
        prep = P.Prepare(self._next_slot, call, np.dtype(expect[0]).str, tuple(int(n) for n in expect[1]))
        self._next_slot += 1
        reply = self.call(prep, timeout)
        self._prepared[key] = (prep, P.fast_call_frame(prep.slot)) if isinstance(reply, P.Prepared) else None
        return self._prepared[key]

    def share_pool(self, region: mmap.mmap, addr: int) -> None:
        """The worker's ``alloc`` pool is ``region`` (the grader's mapping of a memfd it sealed against resizing),
        mapped at ``addr`` in the worker (its ``Mapped`` reply): an output named inside it is copied from
        ``region``, at memory speed, instead of through ``process_vm_readv`` (which pins each shared page: 0.12-0.15
        ms per MiB against 0.08 for the worker's own heap, 12-04).

        Why this reads the same facts: only the grader and this worker's threads can write the memfd (``clone`` only
        with ``CLONE_THREAD``, no io_uring or AIO: seccomp), and they are stopped while it is read. A worker that
        moved or replaced its mapping, or named a false ``addr``, is judged on the pool's bytes at that offset,
        which only it wrote: nothing it could not have returned anyway. Sealed sizes: no read here can fault."""
        self._pool = (np.frombuffer(region, np.uint8), int(addr))

    def _from_pool(self, addr: int, nbytes: int) -> np.ndarray | None:
        """The pool's bytes for [addr, addr + nbytes), when that range lies inside it (else None)."""
        if self._pool is None:
            return None
        pool, base = self._pool
        start = addr - base
        if start < 0 or start + nbytes > pool.size:
            return None
        return pool[start:start + nbytes]

    def read(self, addr: int, nbytes: int, into: np.ndarray | None, expect: tuple[str, tuple[int, ...]]
             ) -> np.ndarray:
        """``nbytes`` of the worker's memory at ``addr``, copied into the grader's own array (from the grader's
        own mapping when they lie in the worker's ``alloc`` pool: ``share_pool``)."""
        if nbytes > MAX_OUTPUT_BYTES:
            raise P.ProtocolError(f"the worker named an output of {nbytes} bytes, more than allowed")
        dtype, shape = np.dtype(expect[0]), tuple(expect[1])
        dest = into if into is not None and into.dtype == dtype and into.shape == shape else np.empty(shape, dtype)
        if nbytes == 0:
            return dest
        if nbytes > dest.nbytes:
            raise P.ProtocolError("the worker named an output larger than the one expected")
        pooled = self._from_pool(addr, nbytes)
        if pooled is not None and dest.flags.c_contiguous:
            np.copyto(dest.reshape(-1).view(np.uint8)[:nbytes], pooled)
            return dest
        local, remote = self._iov
        local.base, local.len = dest.__array_interface__["data"][0], nbytes
        remote.base, remote.len = addr, nbytes
        got = _readv(self.pid, self._iov_local, 1, self._iov_remote, 1, 0)
        if got != nbytes:
            e = ctypes.get_errno()
            raise P.ProtocolError(f"the output the worker named could not be read ({os.strerror(e) if got < 0 else 'short read'})")
        return dest

    @contextlib.contextmanager
    def _ending_on_error(self) -> Iterator[None]:
        """After a timeout, a death or a malformed reply the stream is unusable: end the worker, and
        report every such failure as a WorkerError."""
        if self.dead:
            raise WorkerError("died", "worker is not running")
        try:
            yield
        except P.ProtocolError as e:
            self._fail()
            raise WorkerError("protocol", str(e)) from None
        except WorkerError:
            self._fail()
            raise

    @property
    def isolation(self) -> tuple[str, ...]:
        """The OS layers this worker applied (waits for its first frame if not yet read)."""
        return self.layers().active

    def layers(self, timeout: float = HELLO_TIMEOUT_S) -> P.Hello:
        """The worker's layer report, read within ``timeout`` the first time."""
        if self.hello is None:
            with self._ending_on_error():
                self._ready(_Deadline(timeout))
        assert self.hello is not None
        return self.hello

    def _ready(self, deadline: _Deadline, stop: bool = True) -> None:
        """The warden's and the worker's first frames: the worker's pid, then its layer report; then the worker
        is stopped, as after every reply. ``stop=False`` when a request is sent at once: until its first
        request the worker has run nothing of a candidate's (it waits in ``recv``), and a stop and a continue
        would cost its first answer two wake-ups."""
        if self.hello is not None:
            return
        if not self.pid:
            started = P.decode(self._recv_frame(P.MAX_HEADER_BYTES, deadline), P.Started)
            if not isinstance(started, P.Started) or started.pid <= 0:
                raise P.ProtocolError("the warden did not say which process is the worker")
            self.pid = started.pid
            if self._cpu is not None and hasattr(os, "sched_setaffinity"):
                self.pin(self._cpu)
        hello = P.decode(self._recv_frame(P.MAX_HEADER_BYTES, deadline), P.Hello)
        if not isinstance(hello, P.Hello):
            raise P.ProtocolError("the worker did not start with its layer report")
        self.hello = hello
        if stop:
            self._stop()

    # -- what the grader reads about the worker, from outside it ------------------------------------

    def cpu_ns(self) -> int:
        """The worker's CPU time so far (all its threads, live and exited), as the kernel accounts it."""
        try:
            return time.clock_gettime_ns(((~self.pid) << 3) | 2)  # MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)
        except OSError:
            return 0

    def thread_count(self) -> int | None:
        """Threads alive in the worker now, read from /proc by this process (None where /proc is missing)."""
        if not self._warden_alive():
            return None
        try:
            return len(os.listdir(f"/proc/{self.pid}/task"))
        except OSError:
            return None

    def pin(self, cpu: int) -> None:
        """Move every thread of the worker to ``cpu`` (the worker itself may not change its affinity)."""
        if not self._warden_alive():
            return
        try:
            for tid in os.listdir(f"/proc/{self.pid}/task"):
                os.sched_setaffinity(int(tid), {cpu})
        except OSError:
            pass  # gone: the next request reports it

    def _warden_alive(self) -> bool:
        # The worker's pid is safe to signal only while the process multiprocessing started (the worker itself,
        # or its warden, which reaps it) is not reported gone: until then the pid has not been reused. (A poll of
        # that process's sentinel: multiprocessing's own exitcode builds a selector per call, ~15 us.)
        return bool(self.pid) and not self.dead and not self._sentinel.poll(0)

    def _signal(self, sig: int) -> None:
        if self._warden_alive():
            try:
                os.kill(self.pid, sig)
            except OSError:
                pass

    def _stop(self, force: bool = False) -> None:
        """Stop every thread of the worker and wait until /proc shows them stopped (candidates, and reference
        workers made with ``stopped=True``; ``force`` stops any worker, for the timed call's symmetry)."""
        if self._stop_signal(force):
            self._stop_wait()

    def _stop_signal(self, force: bool = False) -> bool:
        """Send SIGSTOP (when this worker is to be stopped); whether it was sent. ``_stop_wait`` then waits
        until /proc shows every thread stopped: in between the grader may do work that needs no stopped worker
        (decode the reply), while the signal takes effect."""
        if not (self.stops or force) or not self._warden_alive():
            return False
        self._signal(signal.SIGSTOP)
        self._paused = True
        return True

    def _stop_wait(self) -> None:
        """Wait until /proc shows every thread stopped. The worker must run to take the signal: this loop gives
        its core away instead of spinning, which on a machine where the grader shares the worker's core held the
        stop back by a scheduler slice (~3-5 ms a call under load). For its first ``STOP_YIELD_S`` it yields
        (a yield returns at once when nothing else wants this core), then sleeps a little longer each time: a
        timed call's clock stops here, and the first sleep (20 us asked, 60-80 us slept) would have added its
        own length to the wall time of most calls (a stop lands 40-60 us after the signal)."""
        t0 = time.monotonic()
        end, tries = t0 + STOP_TIMEOUT_S, 0
        while not self._all_stopped():
            now = time.monotonic()
            if now > end:
                self._kill()
                raise WorkerError("died", "the worker kept running after it was stopped (a system call that "
                                          "does not stop)")
            if now - t0 < STOP_YIELD_S:
                os.sched_yield()
            else:
                tries += 1
                time.sleep(min(20e-6 * tries, 1e-3))

    def _stat_state(self, path: str) -> tuple[bytes, bytes] | None:
        """(state, the fields after it) of a /proc stat file, read through a descriptor kept open (a pread
        regenerates the file: ~4x cheaper than opening it each time). None when the task is gone. A kept
        descriptor names one task, not its number: once that task is gone it reads nothing, even if the
        number is reused."""
        fd = self._stat_fds.get(path)
        try:
            if fd is None:
                fd = self._stat_fds[path] = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            data = os.pread(fd, 1024, 0)
        except OSError:
            self._forget_stat(path)
            return None
        rest = data.rsplit(b")", 1)[-1]
        if len(rest) < 3:
            self._forget_stat(path)
            return None
        return rest[1:2], rest[3:]

    def _forget_stat(self, path: str) -> None:
        fd = self._stat_fds.pop(path, None)
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass

    def _all_stopped(self) -> bool:
        # One read when the worker has one thread: the process's stat gives the leader's state and the
        # thread count (a stopped thread creates none, and a thread made during a group stop is born
        # stopped). A leader that exited (Z) while other threads run falls through to the per-thread check.
        head = self._stat_state(f"/proc/{self.pid}/stat")
        if head is None:
            return True  # gone: the next read reports it
        state, rest = head
        if state not in (b"T", b"t", b"Z", b"X"):
            return False
        try:
            threads = int(rest.split(None, 17)[16])  # num_threads: field 20 of stat, the 17th after the state
        except (IndexError, ValueError):
            threads = 0
        if threads == 1 and state in (b"T", b"t"):
            return True
        try:
            tids = os.listdir(f"/proc/{self.pid}/task")
        except OSError:
            return True
        for tid in tids:
            got = self._stat_state(f"/proc/{self.pid}/task/{tid}/stat")
            if got is not None and got[0] not in (b"T", b"t", b"Z", b"X"):
                return False
        live = {f"/proc/{self.pid}/task/{tid}/stat" for tid in tids}
        for path in [p for p in self._stat_fds if "/task/" in p and p not in live]:
            self._forget_stat(path)  # threads that ended
        return True

    def _continue(self) -> None:
        if self._paused:
            self._paused = False
            self._signal(signal.SIGCONT)

    def pause(self) -> None:
        """Stop the worker until its next request (the pipeline's explicit form of what calls do)."""
        self._stop(force=True)

    def resume(self) -> None:
        """Let a paused worker run again without a request."""
        parallel.unpark()
        self._continue()

    # -- deadline-bound I/O -------------------------------------------------------------------------

    def _wait(self, events: int, deadline: _Deadline) -> None:
        poller = self._pollers.get(events)
        if poller is None:
            poller = self._pollers[events] = select.poll()
            poller.register(self._fd, events)
            poller.register(self.proc.sentinel, select.POLLIN)
        while True:
            left = deadline.left_ms()
            ready = dict(poller.poll(left)) if left > 0 else {}
            if ready.get(self._fd, 0) & (events | select.POLLHUP | select.POLLERR):
                return
            if self.proc.sentinel in ready:
                self._died()
            if not ready and deadline.left_ms() <= 0:
                self._kill()
                raise WorkerError("timeout", f"timed out after {deadline.seconds:g} s")

    def _died(self) -> None:
        self.proc.join(1.0)
        self.dead = True
        raise WorkerError("died", _exit_text(self.proc.exitcode))

    def _read_exact(self, n: int, deadline: _Deadline) -> bytearray:
        buf = bytearray(n)
        view, got = memoryview(buf), 0
        while got < n:
            try:  # read first: the reply is usually there already; poll only when it is not
                k = os.readv(self._fd, [view[got:]])
            except (BlockingIOError, InterruptedError):
                self._wait(select.POLLIN, deadline)
                continue
            except OSError:
                self._died()
            if k == 0:
                self._died()
            got += k
        return buf

    def _recv_frame(self, limit: int, deadline: _Deadline) -> bytes:
        (size,) = struct.unpack("!i", self._read_exact(4, deadline))
        if size == -1:
            (size,) = struct.unpack("!Q", self._read_exact(8, deadline))
        if size < 0 or size > limit:
            raise P.ProtocolError(f"the worker sent a frame of {size} bytes, more than the {limit} allowed")
        return bytes(self._read_exact(size, deadline))

    def _frame(self, request: P.Request) -> bytes:
        """The request's frame: length and pickle. Timed calls repeat the same few requests (same specs, same
        slot), so their frames are kept."""
        frame = self._frames.get(request) if isinstance(request, (P.Call, P.Ping)) else None
        if frame is None:
            payload = pickle.dumps(request, protocol=5)
            head = struct.pack("!i", len(payload)) if len(payload) <= 0x7FFFFFFF else \
                struct.pack("!iQ", -1, len(payload))
            frame = head + payload
            if isinstance(request, (P.Call, P.Ping)):
                if len(self._frames) >= 64:
                    self._frames.clear()
                self._frames[request] = frame
        return frame

    def _send_frame(self, frame: bytes, deadline: _Deadline) -> None:
        """Write a frame (``_frame``'s). A worker stopped while its buffer is full is let run first: it reads."""
        view, sent = memoryview(frame), 0
        while sent < len(view):
            try:
                sent += os.write(self._fd, view[sent:])
            except (BlockingIOError, InterruptedError):
                self._continue()
                self._wait(select.POLLOUT, deadline)
            except OSError:
                self._died()

    def _send_fd(self, fd: int, deadline: _Deadline) -> None:
        while True:
            self._wait(select.POLLOUT, deadline)
            try:
                socket.send_fds(self._fd_sock, [b"A"], [fd])
                return
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                self._died()

    # -- plumbing ---------------------------------------------------------------------------------

    def _kill(self) -> None:
        self._signal(signal.SIGKILL)  # the worker first, while the warden still holds its pid
        try:
            self.proc.kill()
        except Exception:  # noqa: BLE001 - already gone
            pass

    def kill(self) -> None:
        """Stop the process now (a cancelled evaluation); a call waiting on it fails with "died"."""
        self._kill()

    def _fail(self) -> None:
        self._kill()
        self.dead = True

    def close(self) -> None:
        # A worker holds nothing worth a graceful exit (no files, no buffers to flush): kill it at once, and let
        # the fork server (or its warden) reap it (killing a warden first would leave the worker to init).
        self._signal(signal.SIGKILL)
        self.dead = True
        self._pool = None  # the grader's view of the pool: its mapping goes with the arena
        for path in list(self._stat_fds):
            self._forget_stat(path)
        for closable in (self.conn, self._fd_sock):
            try:
                closable.close()
            except OSError:
                pass
        _reaper().put(self)  # waiting for the warden to exit is nobody's critical path (~4 ms a worker)

    def reap(self) -> None:
        """Wait for the killed worker's warden to exit (killing it too if it lingers). The reaper thread does
        this for every closed worker."""
        self.proc.join(1.0)
        if self.proc.exitcode is None:
            self._kill()
            self.proc.join(1.0)

    def __enter__(self) -> "Worker":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
