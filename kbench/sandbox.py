"""The grading process's side of the sandbox: start workers, talk to them, survive them.

Workers are forked from a fork server that already imported numpy (see ``_worker``). Every request has
a deadline; a watchdog kills a worker that misses it, so a spinning candidate, a half-written reply or
a hung pipe all end as a ``WorkerError`` and never as a hang. Replies are JSON and raw bytes, checked
before use.
"""

from __future__ import annotations

import json
import multiprocessing
import pickle
import shutil
import signal
import tempfile
import threading
import time
from typing import Any, Literal

import numpy as np

from . import _worker

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
            ctx.set_forkserver_preload(["numpy", "threadpoolctl", "kbench._worker"])
            _ctx = ctx
        return _ctx


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
                 blas_threads: int = 1) -> None:
        self.role = role
        self.workdir = tempfile.mkdtemp(prefix=f"kbench-{role}-")
        cfg = {"role": role, "workdir": self.workdir, "memory_limit_mb": memory_limit_mb,
               "blas_threads": blas_threads}
        ctx = _context()
        self.conn, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=_worker.main, args=(child, cfg), daemon=True, name=f"kbench-{role}")
        self.proc.start()
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

    def request(self, op: str, timeout: float, **kw: Any) -> tuple[dict, list[np.ndarray], int, int]:
        """Send one request; return (header, arrays, t_send_ns, t_recv_ns) or raise WorkerError."""
        if self.dead:
            raise WorkerError("died", "worker is not running")
        payload = pickle.dumps({"op": op, **kw}, protocol=5)
        watchdog = threading.Timer(timeout, self._kill, kwargs={"for_timeout": True})
        watchdog.daemon = True
        watchdog.start()
        t_send = time.perf_counter_ns()
        try:
            self.conn.send_bytes(payload)
            header = self._header(self.conn.recv_bytes(MAX_REPLY_BYTES))
            arrays = [self._array(spec, self.conn.recv_bytes(MAX_REPLY_BYTES)) for spec in header.get("arrays", [])]
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
        if not isinstance(specs, list) or len(specs) > 4:
            raise WorkerError("protocol", "worker sent a malformed array list")
        return header

    @staticmethod
    def _array(spec: Any, raw: bytes) -> np.ndarray:
        try:
            dtype = np.dtype(spec["dtype"])
            shape = tuple(int(s) for s in spec["shape"])
        except Exception:  # noqa: BLE001
            raise WorkerError("protocol", "worker sent a malformed array header") from None
        if dtype.str not in _ALLOWED_DTYPES or any(s < 0 for s in shape) or len(shape) > 8:
            raise WorkerError("protocol", f"worker sent an array of unsupported dtype/shape {dtype}{shape}")
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
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> "Worker":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
