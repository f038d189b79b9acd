"""The grading process's side of the sandbox: start workers, talk to them, survive them.

Workers are forked from a fork server that already imported numpy (see ``_worker``). Every request has
a deadline; a watchdog kills a worker that misses it, so a spinning candidate, a half-written reply or
a hung pipe all end as a ``WorkerError`` and never as a hang. Replies are JSON and raw bytes, checked
before use.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import multiprocessing
import os
import pickle
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
import types
from typing import Any, Iterator, Literal

import numpy as np

from kbench.sandbox import worker as _worker

MAX_REPLY_BYTES = 1 << 30
_ALLOWED_DTYPES = {np.dtype(t).str for t in ("f2", "f4", "f8", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8",
                                             "c8", "c16", "?")}

_ctx_lock = threading.Lock()
_ctx: Any = None


def _context() -> Any:
    global _ctx
    with _ctx_lock:
        if _ctx is None:
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(["numpy", "threadpoolctl", "kbench.sandbox.worker"])
            _ctx = ctx
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
    from multiprocessing import forkserver, resource_tracker

    _context()
    resource_tracker.ensure_running()
    forkserver.ensure_running()


@contextlib.contextmanager
def _no_main_module() -> Iterator[None]:
    """Start workers without re-importing the caller's main script: multiprocessing would run it (as
    ``__mp_main__``) in every worker — the lecture script's imports alone cost ~25 ms per worker."""
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


class Worker:
    """One sandboxed process. ``role="candidate"`` installs the audit hook; ``"reference"`` runs only
    our references and never sees candidate code."""

    def __init__(self, role: Literal["candidate", "reference"], memory_limit_mb: int = 4096,
                 blas_threads: int = 1, cpu: int | None = None) -> None:
        self.role = role
        # In /dev/shm (memory) when possible: the data arena below lives in this directory, the one place
        # the candidate's worker may write.
        shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
        _sweep_stale(shm or tempfile.gettempdir())
        self.workdir = tempfile.mkdtemp(prefix=f"kbench-{role}-{os.getpid()}-", dir=shm)
        self._arena: mmap.mmap | None = None
        self._arena_name = ""
        self._arena_gen = 0
        cfg = {"role": role, "workdir": self.workdir, "memory_limit_mb": memory_limit_mb,
               "blas_threads": blas_threads, "cpu": cpu}
        ctx = _context()
        self.conn, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=_worker.main, args=(child, cfg), daemon=True, name=f"kbench-{role}")
        try:
            with _ctx_lock, _no_main_module():
                self.proc.start()
        except BaseException:
            shutil.rmtree(self.workdir, ignore_errors=True)
            raise
        finally:
            child.close()
        self._killed_for_timeout = False
        self.dead = False

    # -- plumbing ---------------------------------------------------------------------------------

    def _kill(self, for_timeout: bool = False) -> None:
        self._killed_for_timeout = self._killed_for_timeout or for_timeout
        try:
            self.proc.kill()
        except Exception:  # noqa: BLE001 - already gone
            pass

    def kill(self) -> None:
        """Stop the process now (a cancelled evaluation); a request waiting on it fails with "died"."""
        self._kill()

    def _stage(self, x: dict[str, np.ndarray], out_bytes: int) -> dict[str, Any]:
        """Copy inputs into the shared arena (growing it when needed); describe where they are."""
        spec, off = [], 0
        for name, a in x.items():
            a = np.ascontiguousarray(a)
            spec.append((name, a.dtype.str, a.shape, off))
            off += -(-a.nbytes // 64) * 64
        need = off + max(out_bytes, 1)
        if self._arena is None or len(self._arena) < need:
            if self._arena is not None:
                self._arena.close()
                os.unlink(os.path.join(self.workdir, self._arena_name))
            self._arena_gen += 1
            self._arena_name = f"arena-{self._arena_gen}"
            size = max(need * 5 // 4, 1 << 20)
            fd = os.open(os.path.join(self.workdir, self._arena_name), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.ftruncate(fd, size)
                self._arena = mmap.mmap(fd, size)
            finally:
                os.close(fd)
        for (name, dtype, shape, o), a in zip(spec, x.values()):
            np.frombuffer(self._arena, dtype=dtype, count=int(np.prod(shape, dtype=np.int64)), offset=o)[...] = \
                np.ravel(a)
        return {"arena": self._arena_name, "arena_size": len(self._arena), "x_spec": spec, "out_offset": off,
                "out_capacity": len(self._arena) - off}

    def request(self, op: str, timeout: float, x: dict[str, np.ndarray] | None = None, out_bytes: int = 0,
                **kw: Any) -> tuple[dict, list[np.ndarray], int, int]:
        """Send one request; return (header, arrays, t_send_ns, t_recv_ns) or raise WorkerError.

        Inputs ``x`` travel through a shared-memory arena (a memcpy each way instead of a pipe);
        outputs come back through it when they fit in ``out_bytes``, as raw bytes otherwise."""
        if self.dead:
            raise WorkerError("died", "worker is not running")
        if x is not None:
            kw.update(self._stage(x, out_bytes))
        payload = pickle.dumps({"op": op, **kw}, protocol=5)
        watchdog = threading.Timer(timeout, self._kill, kwargs={"for_timeout": True})
        watchdog.daemon = True
        watchdog.start()
        t_send = time.perf_counter_ns()
        try:
            self.conn.send_bytes(payload)
            header = self._header(self.conn.recv_bytes(MAX_REPLY_BYTES))
            arrays = [self._from_arena(spec, kw) if spec.get("in_arena") is True
                      else self._array(spec, self.conn.recv_bytes(MAX_REPLY_BYTES)) for spec in header["arrays"]]
            t_recv = time.perf_counter_ns()
        except (EOFError, OSError) as e:
            self.dead = True
            if self._killed_for_timeout:
                raise WorkerError("timeout", f"timed out after {timeout:g} s") from None
            self.proc.join(1.0)
            raise WorkerError("died", _exit_text(self.proc.exitcode)) from e
        except WorkerError:
            self.dead = True
            self._kill()
            raise
        finally:
            watchdog.cancel()
        return header, arrays, t_send, t_recv

    @staticmethod
    def _header(raw: bytes) -> dict:
        try:
            header = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            raise WorkerError("protocol", "worker sent a malformed reply") from None
        if not isinstance(header, dict):
            raise WorkerError("protocol", "worker sent a malformed reply")
        specs = header.get("arrays", [])
        if not isinstance(specs, list) or len(specs) > 4 or not all(isinstance(sp, dict) for sp in specs):
            raise WorkerError("protocol", "worker sent a malformed array list")
        header["arrays"] = specs
        return header

    def _from_arena(self, spec: dict, staged: dict) -> np.ndarray:
        """An output the worker wrote into the arena's output region: validated, then copied out (the
        region is reused by the next call)."""
        if self._arena is None or "out_offset" not in staged:
            raise WorkerError("protocol", "worker claimed an arena output without an arena")
        dtype, shape = self._spec(spec)
        n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if n > staged["out_capacity"]:
            raise WorkerError("protocol", "worker claimed an output larger than its region")
        region = np.frombuffer(self._arena, dtype=np.uint8, count=n, offset=staged["out_offset"])
        out = region.view(dtype).reshape(shape).copy()
        region[...] = 0xFF  # a NaN pattern: no answer stays readable in shared memory by another process
        return out

    @staticmethod
    def _spec(spec: Any) -> tuple[np.dtype, tuple[int, ...]]:
        try:
            dtype = np.dtype(spec["dtype"])
            shape = tuple(int(s) for s in spec["shape"])
        except Exception:  # noqa: BLE001
            raise WorkerError("protocol", "worker sent a malformed array header") from None
        if dtype.str not in _ALLOWED_DTYPES or any(s < 0 for s in shape) or len(shape) > 8:
            raise WorkerError("protocol", f"worker sent an array of unsupported dtype/shape {dtype}{shape}")
        return dtype, shape

    @classmethod
    def _array(cls, spec: Any, raw: bytes) -> np.ndarray:
        dtype, shape = cls._spec(spec)
        if int(np.prod(shape, dtype=np.int64)) * dtype.itemsize != len(raw):
            raise WorkerError("protocol", "worker sent an array whose size does not match its header")
        return np.frombuffer(raw, dtype=dtype).reshape(shape)

    def close(self) -> None:
        if not self.dead:
            try:
                self.conn.send_bytes(pickle.dumps({"op": "exit"}))
            except (OSError, ValueError):
                pass
        self.proc.join(0.2)
        if self.proc.is_alive():
            self._kill()
            self.proc.join(1.0)
        self.dead = True
        try:
            self.conn.close()
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
