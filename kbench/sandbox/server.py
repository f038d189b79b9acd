"""The grading process's side of the sandbox: start workers, talk to them, survive them.

Workers are forked from a fork server that already imported numpy (see ``worker``). ``Worker.call`` sends
one typed request (``protocol``) and returns its typed reply. Whatever the worker (or anything it left
behind) does, the call ends by its deadline: every read and write waits in ``poll`` with the time left,
and a missed deadline kills the worker. Replies are bounded before they are read (a 64 KiB header, an
output no larger than the request allows), inputs and outputs travel through a sealed memfd arena the
worker cannot resize, and a malformed reply is a ``WorkerError``, never an exception from deep inside a
parser.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import pickle
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
from typing import Any, Iterator, Literal

import numpy as np

from kbench.sandbox import confine as _confine
from kbench.sandbox import protocol as P
from kbench.sandbox import worker as _worker
from kbench.sandbox.arena import Arena, layout

#: The largest raw output a call may send back, whatever it asked for.
MAX_OUTPUT_BYTES = 256 << 20
HELLO_TIMEOUT_S = 10.0

_ctx_lock = threading.Lock()
_ctx: Any = None


def _start_fork_server() -> None:
    """Start the fork server with the worker environment only: every worker is forked from it, and its
    initial environment block (``/proc/self/environ``, the top of its stack) is inherited by each."""
    from multiprocessing import forkserver

    if _fork_server_alive(getattr(forkserver._forkserver, "_forkserver_pid", None)):
        return  # running: leave os.environ alone (other threads read it)
    saved = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(_confine.worker_environment(saved))
        forkserver.ensure_running()
    finally:
        os.environ.clear()
        os.environ.update(saved)


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
            ctx.set_forkserver_preload(["numpy", "threadpoolctl", "kbench.sandbox.worker"])
            _ctx = ctx
        _start_fork_server()  # a no-op when it runs; restarts it if it died
        return _ctx


_swept = False


def _sweep_stale(base: str) -> None:
    """Remove sandbox directories left by kbench processes that no longer exist (killed, say)."""
    global _swept
    if _swept:
        return
    _swept = True
    try:
        names = os.listdir(base)
    except OSError:
        return
    for name in names:
        m = re.match(r"kbench-(?:candidate|reference)-(\d+)-", name)
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


class Worker:
    """One sandboxed process. ``role="candidate"`` installs the audit hook (for messages); ``"reference"``
    runs only our references and never sees candidate code. Both get every OS layer."""

    def __init__(self, role: Literal["candidate", "reference"], memory_limit_mb: int = 4096,
                 blas_threads: int = 1, cpu: int | None = None) -> None:
        self.role = role
        # The worker's working directory (read-only to it under Landlock; its one writable place without).
        shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
        _sweep_stale(shm or tempfile.gettempdir())
        self.workdir = tempfile.mkdtemp(prefix=f"kbench-{role}-{os.getpid()}-", dir=shm)
        os.chmod(self.workdir, 0o755)  # readable by the unprivileged user the worker becomes
        self._arena: Arena | None = None
        self._arena_sent = -1
        self._arena_count = 0
        self.hello: P.Hello | None = None
        cfg = {"role": role, "workdir": self.workdir, "memory_limit_mb": memory_limit_mb,
               "blas_threads": blas_threads, "cpu": cpu}
        ctx = _context()
        self.conn, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=_worker.main, args=(child, cfg), daemon=True, name=f"kbench-{role}")
        try:
            with _ctx_lock, no_main_module():
                self.proc.start()
        except BaseException:
            shutil.rmtree(self.workdir, ignore_errors=True)
            raise
        finally:
            child.close()
        self._fd = self.conn.fileno()
        os.set_blocking(self._fd, False)
        self._fd_sock = socket.socket(fileno=os.dup(self._fd))  # passes the arena's descriptor
        self.dead = False

    # -- the protocol -----------------------------------------------------------------------------

    def call(self, request: P.Request, timeout: float) -> P.Reply:
        """Send ``request``; return its reply (or a ``protocol.Failure``), or raise WorkerError."""
        deadline = _Deadline(timeout)
        with self._ending_on_error():
            if self.hello is None:
                self._read_hello(deadline)
            x = getattr(request, "x", None)
            staged = self._stage(x, int(getattr(request, "out_bytes", 0))) if x is not None else None
            wire = request if x is None else _without_x(request)
            t_send = time.perf_counter_ns()
            self._send_frame(pickle.dumps((wire, staged), protocol=5), deadline)
            if staged is not None and self._arena_sent != staged.arena_id:
                assert self._arena is not None
                self._send_fd(self._arena.fd, deadline)
                self._arena_sent = staged.arena_id
            reply = P.decode(self._recv_frame(P.MAX_HEADER_BYTES, deadline), P.EXPECTED[type(request)])
            if isinstance(reply, P.Called):
                output = self._output(reply.output_spec, staged, request, deadline)
                reply = _with(reply, output=output, t_send=t_send, t_recv=time.perf_counter_ns())
            return reply

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
        """The worker's layer report (its first frame), read within ``timeout`` the first time."""
        if self.hello is None:
            with self._ending_on_error():
                self._read_hello(_Deadline(timeout))
        assert self.hello is not None
        return self.hello

    def _read_hello(self, deadline: _Deadline) -> None:
        hello = P.decode(self._recv_frame(P.MAX_HEADER_BYTES, deadline), P.Hello)
        if not isinstance(hello, P.Hello):
            raise P.ProtocolError("the worker did not start with its layer report")
        self.hello = hello

    def _stage(self, x: dict[str, np.ndarray], out_bytes: int) -> P.Staged:
        """Copy inputs into the sealed arena (a new, larger one when needed); describe where they are."""
        arrays = {k: np.ascontiguousarray(v) for k, v in x.items()}
        spec, off = layout(arrays)
        need = off + max(out_bytes, 1)
        if self._arena is None or self._arena.size < need:
            if self._arena is not None:
                self._arena.close()
            self._arena_count += 1
            self._arena = Arena(max(need * 5 // 4, 1 << 20), self._arena_count)
        for (name, dtype, shape, o), a in zip(spec, arrays.values()):
            self._arena.view(np.dtype(dtype), shape, o)[...] = a
        return P.Staged(self._arena.arena_id, self._arena.size, tuple(spec), off, self._arena.size - off)

    def _output(self, spec: P.OutputSpec | None, staged: P.Staged | None, request: P.Request,
                deadline: _Deadline) -> np.ndarray | None:
        if spec is None:
            return None
        n = spec.nbytes  # Python ints: no overflow however large the claimed shape
        dtype = np.dtype(spec.dtype)
        if spec.in_arena:
            if staged is None or self._arena is None or n > staged.out_capacity:
                raise P.ProtocolError("the worker claimed an arena output larger than its region")
            region = np.frombuffer(self._arena.map, dtype=np.uint8, count=n, offset=staged.out_offset)
            out = region.view(dtype).reshape(spec.shape).copy()
            region[...] = 0xFF  # a NaN pattern: no answer stays readable in shared memory
            return out
        limit = min(MAX_OUTPUT_BYTES, max(2 * int(getattr(request, "out_bytes", 0)), 16 << 20))
        if n > limit:
            raise P.ProtocolError(f"the worker sent an output of {n} bytes, more than the {limit} allowed")
        raw = self._recv_frame(limit, deadline)
        if len(raw) != n:
            raise P.ProtocolError("the worker sent an output whose size does not match its header")
        return np.frombuffer(raw, dtype=dtype).reshape(spec.shape)

    # -- deadline-bound I/O -------------------------------------------------------------------------

    def _wait(self, events: int, deadline: _Deadline) -> None:
        poller = select.poll()
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
            self._wait(select.POLLIN, deadline)
            try:
                k = os.readv(self._fd, [view[got:]])
            except (BlockingIOError, InterruptedError):
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
        return bytes(self._read_exact(size, deadline)) if size < (1 << 20) else self._read_exact(size, deadline)

    def _send_frame(self, payload: bytes, deadline: _Deadline) -> None:
        head = struct.pack("!i", len(payload)) if len(payload) <= 0x7FFFFFFF else struct.pack("!iQ", -1, len(payload))
        view, sent = memoryview(head + payload), 0
        while sent < len(view):
            self._wait(select.POLLOUT, deadline)
            try:
                sent += os.write(self._fd, view[sent:])
            except (BlockingIOError, InterruptedError):
                continue
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
        try:
            self.proc.kill()
        except Exception:  # noqa: BLE001 - already gone
            pass

    def kill(self) -> None:
        """Stop the process now (a cancelled evaluation); a call waiting on it fails with "died"."""
        self._kill()

    def _fail(self) -> None:
        """After a timeout, a death or a malformed reply the stream is unusable: end the worker."""
        self.dead = True
        self._kill()

    def pause(self) -> None:
        """SIGSTOP the worker: all its threads stop (no candidate code runs while the reference is timed).
        A stopped worker can still be killed; ``close`` resumes it first."""
        if not self.dead and self.proc.pid and self.proc.is_alive():
            try:
                os.kill(self.proc.pid, signal.SIGSTOP)
            except OSError:
                pass  # gone: the next call reports it

    def resume(self) -> None:
        """SIGCONT after ``pause``."""
        if self.proc.pid and self.proc.is_alive():  # never signal a pid the system may have reused
            try:
                os.kill(self.proc.pid, signal.SIGCONT)
            except OSError:
                pass

    def thread_count(self) -> int | None:
        """Threads alive in the worker now, read from /proc by this process (None where /proc is missing)."""
        try:
            return len(os.listdir(f"/proc/{self.proc.pid}/task"))
        except OSError:
            return None

    def close(self) -> None:
        # A worker holds nothing worth a graceful exit (no files, no buffers to flush): kill it at once,
        # paused or not, instead of waiting for it to read an exit request.
        self._kill()
        self.proc.join(1.0)
        self.dead = True
        for closable in (self.conn, self._fd_sock):
            try:
                closable.close()
            except OSError:
                pass
        if self._arena is not None:
            self._arena.close()
            self._arena = None
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> "Worker":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _without_x(request: Any) -> Any:
    import dataclasses

    return dataclasses.replace(request, x={})


def _with(reply: Any, **changes: Any) -> Any:
    import dataclasses

    return dataclasses.replace(reply, **changes)
