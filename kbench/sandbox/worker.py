"""The sandbox worker: the only process where candidate code runs (its main loop).

It is forked from a fork server that has numpy imported, so starting one costs milliseconds. Before any
candidate code runs it closes every descriptor it inherited but its reply socket, sends stdout/stderr
nowhere (a capped in-memory buffer for Python prints), and applies the OS layers (``confine``): rlimits,
a network namespace, no root, Landlock, seccomp. Its first frame says which layers hold. An audit hook
stays in candidate workers only to turn refusals into readable messages; the OS is the boundary.

Requests are ``protocol`` dataclasses, pickled by the trusted grading process. Replies are ``protocol``
dataclasses encoded as a JSON header plus at most one raw array, never pickles: the grading process must
not unpickle anything a candidate could have shaped.
"""

from __future__ import annotations

import dataclasses
import mmap
import os
import pickle
import socket
import sys
import tempfile
import time
from typing import Any

import numpy as np

from kbench.core.loader import error_line, load_candidate
from kbench.core.tasks import base_namespace
from kbench.sandbox import confine as _confine
from kbench.sandbox import naive_v0
from kbench.sandbox import protocol as P

_perf_ns = time.perf_counter_ns  # captured before any candidate code exists

try:  # found once, in the fork server: discovering the BLAS libraries costs ~2 ms per worker start
    from threadpoolctl import ThreadpoolController

    _BLAS: Any = ThreadpoolController()
except Exception:  # noqa: BLE001
    _BLAS = None
_ndarray = np.ndarray
_STDOUT_CAP = 1 << 20


class OutputFlood(BaseException):
    """Raised inside a candidate that prints more than the cap (BaseException: hard to swallow)."""


class _CappedWriter:
    def __init__(self, cap: int) -> None:
        self.cap, self.n, self.head = cap, 0, []

    def write(self, s: str) -> int:
        self.n += len(s)
        if self.n > self.cap:
            raise OutputFlood(f"printed more than {self.cap // (1 << 20)} MB to stdout")
        if sum(len(h) for h in self.head) < 2000:
            self.head.append(s)
        return len(s)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def _nan_alloc(shape: Any, dtype: Any = np.float32) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind in "fc":
        return np.full(shape, np.nan, dt)
    out = np.empty(shape, dt)
    out.view(np.uint8)[...] = 0xA5  # a poison pattern for non-float buffers
    return out


# ------------------------------------------------------------------------------------------ set-up

_DENY_PREFIXES = ("os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "os.kill",
                  "os.killpg", "os.setuid", "os.setgid", "os.chroot", "os.chdir", "os.fchdir",
                  "subprocess.", "socket.", "ctypes.", "signal.pthread_kill", "resource.setrlimit",
                  "resource.prlimit", "sys.addaudithook", "sys.settrace", "sys.setprofile", "pty.",
                  "winreg.", "webbrowser.", "urllib.", "http.", "ftplib.", "smtplib.", "telnetlib.")
_PATH_EVENTS = {"os.remove": 1, "os.rename": 2, "os.replace": 2, "os.rmdir": 1, "os.mkdir": 1, "os.link": 2,
                "os.symlink": 2, "os.truncate": 1, "os.chmod": 1, "os.chown": 1, "os.utime": 1,
                "shutil.rmtree": 1, "shutil.copyfile": 2, "shutil.move": 2, "os.mkfifo": 1, "os.mknod": 1}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def _install_audit_hook(writable: str | None) -> None:
    """Readable refusals for what the OS layers stop anyway (and a fallback where a layer is missing):
    ``writable`` is the one directory files may be written in, None for none at all."""
    root = os.path.realpath(writable) + os.sep if writable else None
    allowed = {"/dev/null"}
    where = "only the sandbox directory" if root else "no file may be written"

    def inside(path: Any) -> bool:
        if isinstance(path, int):
            return True  # an already-open descriptor was checked when it was opened
        try:
            p = os.path.realpath(os.fsdecode(path))
        except Exception:  # noqa: BLE001
            return False
        return p in allowed or (root is not None and p.startswith(root))

    def hook(event: str, args: tuple) -> None:
        if event == "open":
            path, mode, flags = (tuple(args) + (None, None, None))[:3]
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or \
                      (isinstance(flags, int) and flags & _WRITE_FLAGS)
            if writing and not inside(path):
                raise PermissionError(f"kbench sandbox: writing {P.short(path, 80)} is not allowed ({where})")
        elif event.startswith(_DENY_PREFIXES):
            raise PermissionError(f"kbench sandbox: {event} is not allowed")
        elif event in _PATH_EVENTS:
            for p in args[: _PATH_EVENTS[event]]:
                if not inside(p):
                    raise PermissionError(f"kbench sandbox: {event} on {P.short(p, 80)} is not allowed")

    sys.addaudithook(hook)


def _setup(conn: Any, cfg: dict[str, Any]) -> tuple[_CappedWriter, socket.socket, P.Hello]:
    os.chdir(cfg["workdir"])
    kept = _confine.worker_environment(os.environ)
    os.environ.clear()  # the fork server started with a clean environment; this is the second line
    os.environ.update(kept)
    for var in ("TMPDIR", "TMP", "TEMP", "HOME"):
        os.environ[var] = cfg["workdir"]
    tempfile.tempdir = cfg["workdir"]
    roots = tuple(r.rstrip(os.sep) + os.sep for r in _confine.read_roots())
    sys.path[:] = [p for p in sys.path if os.path.isabs(p) and (os.path.realpath(p) + os.sep).startswith(roots)]
    # The grading process's multiprocessing key (it authenticates connections to its listeners and
    # managers) came with the process object: replace it before any candidate code can read it.
    import multiprocessing

    multiprocessing.current_process().authkey = os.urandom(32)
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        libc.prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL: die with the process that started us
        # Same allocator behaviour in every worker, fresh or long-lived: arrays up to 32 MiB come from the
        # heap and freed memory stays mapped. Left to glibc's adaptive threshold, a fresh worker pays page
        # faults on every temporary (~0.2 ms/MB here) that a warm one does not: a 1.0x kernel measured 0.74x.
        libc.mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD
        libc.mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD
    except Exception:  # noqa: BLE001 - not glibc/Linux: the parent still kills us on close
        pass
    if cfg.get("cpu") is not None and hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, {int(cfg["cpu"])})
        except OSError:
            pass
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    fds = socket.socket(fileno=os.dup(conn.fileno()))  # receives the arena's descriptor (SCM_RIGHTS)
    _confine.close_inherited(keep=(conn.fileno(), fds.fileno()))
    report = _confine.confine(int(cfg["memory_limit_mb"]), cfg["workdir"])
    writer = _CappedWriter(_STDOUT_CAP)
    sys.stdout = sys.stderr = writer  # type: ignore[assignment]
    if _BLAS is not None:
        try:
            cfg["_blas"] = _BLAS.limit(limits=int(cfg["blas_threads"]))
        except Exception:  # noqa: BLE001
            pass
    if cfg["role"] == "candidate":
        _install_audit_hook(None if "landlock" in report.active else cfg["workdir"])
    return writer, fds, P.Hello(report.active, report.missing)


# ------------------------------------------------------------------------------------------ requests

class _State:
    def __init__(self, fds: socket.socket) -> None:
        self.fds = fds
        self.writer: _CappedWriter | None = None
        self.arena: Any = None
        self.arena_id = -1
        self.fns: dict[str, Any] = {}
        self.init: Any = None
        self.params_raw: dict[str, dict] = {}
        self.params: dict[str, dict] = {}
        self.params_saved: dict[str, dict[str, np.ndarray]] = {}
        self.pool = naive_v0.CachingPool()


def _map_arena(st: _State, staged: P.Staged) -> None:
    """Map the arena the parent sent right after this request (it sends one whenever it made a new one)."""
    _, fds, _, _ = socket.recv_fds(st.fds, 1, 1)
    if not fds:
        raise RuntimeError("no arena descriptor arrived")
    if st.arena is not None:
        st.arena.close()
        st.arena = None
    try:
        st.arena = mmap.mmap(fds[0], staged.arena_size)
    finally:
        os.close(fds[0])
    st.arena_id = staged.arena_id


def _staged(st: _State, staged: P.Staged) -> dict[str, np.ndarray]:
    """Views of the inputs the parent staged in the arena."""
    return {name: np.frombuffer(st.arena, dtype=dtype, count=int(np.prod(shape)), offset=off).reshape(shape)
            for name, dtype, shape, off in staged.x_spec}


def _unstage(st: _State, staged: P.Staged) -> dict[str, np.ndarray]:
    """Fresh copies of the staged inputs (a new allocation every call)."""
    return {k: v.copy() for k, v in _staged(st, staged).items()}


def _n_threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def _bits(a: np.ndarray) -> np.ndarray:
    """The array's bits as unsigned integers of its item size (contiguous arrays; a byte view otherwise)."""
    if a.flags.c_contiguous and a.dtype.itemsize in (1, 2, 4, 8):
        return a.view(f"u{a.dtype.itemsize}")
    return np.frombuffer(a.tobytes(), np.uint8)


def _same(a: object, b: np.ndarray) -> bool:
    """Unchanged: still a plain ndarray with the same shape, dtype and bits. Compared as integers: one
    pass, NaN equal to itself, and 10x cheaper than ``array_equal(equal_nan=True)`` on 16 MB."""
    return (type(a) is _ndarray and a.shape == b.shape and a.dtype == b.dtype  # type: ignore[union-attr]
            and bool(np.array_equal(_bits(a), _bits(b))))


def _names(keys: Any) -> tuple[str, ...]:
    """Names for a reply: short, and few (init may return a dict with any keys)."""
    return tuple(P.short(k, P.MAX_NAME) for k in list(keys)[: P.MAX_NAMES])


def _load(st: _State, req: P.Load, staged: Any) -> tuple[P.Reply, list]:
    fwd, init, err = load_candidate(req.src, base_namespace())
    if err:
        return P.Failure(P.short(err)), []
    st.fns[req.name] = fwd
    if req.name == "cand":
        st.init = init
    return P.Loaded(init is not None), []


def _params(st: _State, req: P.SetParams, staged: Any) -> tuple[P.Reply, list]:
    raw = req.params
    st.params_raw[req.pset_id] = raw
    p = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in raw.items()}
    if st.init is not None and req.init:
        p = st.init(p)
        if not isinstance(p, dict):
            return P.Failure(f"init() returned {P.short(type(p).__name__, 40)}, expected the params dict"), []
    st.params[req.pset_id] = p
    st.params_saved[req.pset_id] = {k: v.copy() for k, v in p.items() if type(v) is _ndarray}
    return P.ParamsKept(), []


def _verify(st: _State, req: P.VerifyParams, staged: Any) -> tuple[P.Reply, list]:
    """Params still as init left them? Asked after the trials and after timing, not per call: per call,
    verifying a large init product made the candidate's calls look slower than the reference's."""
    changed = sorted({str(k) for pid, saved in st.params_saved.items() for k, b in saved.items()
                      if not _same(st.params[pid].get(k), b)})
    return P.ParamsVerified(_names(changed)), []


def _call(st: _State, req: P.Call, staged: P.Staged) -> tuple[P.Reply, list]:
    """One timed call; hygiene facts are gathered here, judged by the parent."""
    x = _unstage(st, staged)
    fn = st.fns[req.fn]
    # Both roles get the copies ``_params`` made (the reference's without init): the same allocation path
    # in twin processes, so neither side's weights sit in a luckier memory layout.
    params = st.params[req.pset_id]
    alloc = _nan_alloc if req.alloc == "nan" else st.pool.alloc
    inputs = _staged(st, staged)  # the parent's bytes, still in the arena: what x must still equal
    threads = _n_threads()
    t0 = _perf_ns()
    out = fn(x, params, alloc)
    t1 = _perf_ns()
    started = max(0, _n_threads() - threads)
    changed = _names(sorted(k for k, v in x.items() if not _same(v, inputs[k])))
    aliases: tuple[str, ...] = ()
    if type(out) is not _ndarray:
        return P.Called(t0, t1, started, changed, aliases, P.short(f"{type(out).__module__}.{type(out).__qualname__}",
                                                                   80), None), []
    aliases = _names(sorted(str(k) for k, v in list(x.items()) + list(params.items())
                            if type(v) is _ndarray and np.shares_memory(out, v)))
    if st.arena is not None and out.nbytes <= staged.out_capacity:
        np.frombuffer(st.arena, dtype=out.dtype, count=out.size, offset=staged.out_offset).reshape(out.shape)[...] = out
        spec, arrays = P.OutputSpec(out.dtype.str, out.shape, True), []
    else:
        spec, arrays = P.OutputSpec(out.dtype.str, out.shape, False), [np.ascontiguousarray(out)]
    return P.Called(t0, t1, started, changed, aliases, "numpy.ndarray", spec), arrays


def _naive_trial(st: _State, req: P.NaiveTrial, staged: P.Staged) -> tuple[P.Reply, list]:
    return naive_v0.trial(st.fns["ref"], st.fns["cand"], _unstage(st, staged), st.params_raw[req.pset_id],
                          st.params[req.pset_id], st.pool, req, _nan_alloc), []


def _naive_time(st: _State, req: P.NaiveTime, staged: P.Staged) -> tuple[P.Reply, list]:
    return naive_v0.timing(st.fns["ref"], st.fns["cand"], _unstage(st, staged), st.params_raw[req.pset_id],
                           st.params[req.pset_id], st.pool, req), []


def _stdout(st: _State, req: P.ReadStdout, staged: Any) -> tuple[P.Reply, list]:
    return P.Printed("".join(st.writer.head)[: P.STDOUT_HEAD] if st.writer is not None else ""), []


_HANDLERS = {P.Load: _load, P.SetParams: _params, P.Call: _call, P.VerifyParams: _verify,
             P.NaiveTrial: _naive_trial, P.NaiveTime: _naive_time, P.ReadStdout: _stdout}


def _send(conn: Any, reply: P.Reply, arrays: list, stdout_bytes: int) -> None:
    if hasattr(reply, "stdout_bytes"):
        reply = dataclasses.replace(reply, stdout_bytes=stdout_bytes)
    conn.send_bytes(P.encode(reply))
    for a in arrays:
        conn.send_bytes(memoryview(a).cast("B"))


def main(conn: Any, cfg: dict[str, Any]) -> None:
    writer, fds, hello = _setup(conn, cfg)
    st = _State(fds)
    st.writer = writer
    try:
        conn.send_bytes(P.encode(hello))
    except (OSError, ValueError):
        return
    while True:
        try:
            req, staged = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return
        if isinstance(req, P.Exit):
            return
        reply: P.Reply
        try:
            if staged is not None and staged.arena_id != st.arena_id:
                _map_arena(st, staged)
            reply, arrays = _HANDLERS[type(req)](st, req, staged)
        except MemoryError as e:
            reply, arrays = P.Failure(f"exceeded memory limit ({error_line(e)})", "memory"), []
        except OutputFlood as e:
            reply, arrays = P.Failure(str(e), "output"), []
        except BaseException as e:  # noqa: BLE001 - a candidate's SystemExit is a runtime error, not our exit
            reply, arrays = P.Failure(error_line(e)), []
        try:
            _send(conn, reply, arrays, writer.n)
        except (OSError, ValueError):
            return
