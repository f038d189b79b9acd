"""The sandbox worker: an executor loop over typed requests, in the only process where candidate code runs.

It is forked from a fork server that has numpy imported, so starting one costs milliseconds; ``confine``
puts it in its own namespaces and applies every OS layer before anything else (its first frame,
``protocol.Hello``, says which hold). From then on it assumes nothing about itself: once a candidate is
loaded, everything in this process — these functions, the arrays, the clock — is the candidate's to
rewrite. So the worker computes no fact the grader relies on. It executes: it maps the grader's sealed
inputs read-only, calls ``forward``, and says where the returned array is; the grading process reads those
bytes from this process's memory after stopping it, times the call with its own clock, and judges.

Requests are ``protocol`` dataclasses pickled by the trusted grading process; replies are ``protocol``
dataclasses encoded as small JSON headers, never pickles.
"""

from __future__ import annotations

import ast
import ctypes
import importlib
import math
import mmap
import multiprocessing.popen_forkserver  # noqa: F401 - imported here, in the fork server, not by every warden
import os
import pickle
import socket
import struct
import sys
import time
from typing import Any, Callable

import numpy as np

from kbench.core.loader import error_line, load_candidate, too_large
from kbench.core.tasks import base_namespace
from kbench.sandbox import confine, naive_v0
from kbench.sandbox import protocol as P

try:  # found once, in the fork server: discovering the BLAS libraries costs ~2 ms per worker start
    from threadpoolctl import ThreadpoolController

    _BLAS: Any = ThreadpoolController()
    # The fork server starts with OPENBLAS_NUM_THREADS=1 (server._start_fork_server): a worker that wants one
    # thread then calls nothing. Setting it in each worker made OpenBLAS start its thread pool there (~4 ms of
    # the warden's start, and a thread spinning beside the confinement for ~20 ms).
    _BLAS_THREADS: int | None = max((m.num_threads for m in _BLAS.lib_controllers), default=None)
except Exception:  # noqa: BLE001
    _BLAS, _BLAS_THREADS = None, None

#: numpy's submodules it imports only on first use (``np.setdiff1d`` pulls in numpy.ma): loaded here, in the
#: fork server. From the moment its candidate's module runs a candidate worker opens no file (``confine.drop_reads``),
#: so a module first needed then could not be read.
NUMPY_LAZY = ("numpy.ma", "numpy.polynomial", "numpy.char", "numpy.strings", "numpy.rec", "numpy.fft",
              "numpy.random", "numpy.linalg", "numpy.lib.stride_tricks", "numpy.lib.scimath")
for _name in NUMPY_LAZY:
    try:
        importlib.import_module(_name)
    except ImportError:  # not in this numpy: the candidate's use fails as it would anywhere
        pass

# Bound when this module loads, in the fork server: the executor never looks a helper up at call time.
_perf_ns = time.perf_counter_ns
_read, _write = os.read, os.write
_LENGTH = struct.Struct("!i")  # a frame's length, as multiprocessing.Connection writes it
_ndarray = np.ndarray
_frombuffer = np.frombuffer
_full = np.full
_nan = np.nan
_STDOUT_CAP = 1 << 20
#: Set by the fork server's preload of the grading layer: the function the ``Gate`` request runs.
GATE: Callable[[str], tuple[list[tuple[str, int, str]], str]] | None = None


class OutputFlood(BaseException):
    """Raised inside a candidate that prints more than the cap (BaseException: hard to swallow)."""


class _CappedWriter:
    def __init__(self, cap: int) -> None:
        self.cap, self.n, self.head = cap, 0, []

    def write(self, s: str) -> int:
        self.n += len(s)
        if self.n > self.cap:
            raise OutputFlood(f"printed more than {self.cap // (1 << 20)} MB to stdout")
        if sum(len(h) for h in self.head) < P.STDOUT_HEAD:
            self.head.append(s)
        return len(s)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


class _Slot:
    """A prepared call as the worker keeps it (``P.Prepare``): the call, the views its fresh input objects are made
    from (None: made as a plain call makes them), and the output it prepared for."""

    __slots__ = ("call", "templates", "out_dtype", "out_shape", "dtype", "strides")

    def __init__(self, req: P.Prepare, templates: dict[str, np.ndarray] | None) -> None:
        self.call, self.templates = req.call, templates
        self.out_dtype, self.out_shape = req.out_dtype, req.out_shape
        self.dtype = np.dtype(req.out_dtype)
        strides, step = [], self.dtype.itemsize  # a C-contiguous array's, as numpy makes them
        for n in reversed(req.out_shape):
            strides.append(step)
            step *= n
        self.strides = tuple(reversed(strides))


class _Pool:
    """``alloc`` for hardened calls: buffers carved from the scratch arena, which the grader NaN-filled
    before the call; past its end, fresh NaN-filled arrays (paid inside the call). ``base``: the arena's address
    in this process, so that the address of a buffer it handed out is known without asking numpy (``address_of``)."""

    def __init__(self, region: mmap.mmap | None, base: int = 0) -> None:
        self.region, self.used, self.base = region, 0, base
        self.handed: list[tuple[np.ndarray, int]] = []  # (the buffer as returned, its offset in the arena)

    def alloc(self, shape: Any, dtype: Any = np.float32) -> np.ndarray:
        dt = np.dtype(dtype)
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
        count = math.prod(shape)
        n = count * dt.itemsize
        start = -(-self.used // 64) * 64
        if self.region is not None and start + n <= len(self.region):
            self.used = start + n
            buf = _frombuffer(self.region, dt, count, start).reshape(shape)
            self.handed.append((buf, start))
            return buf
        if dt.kind in "fc":
            return _full(shape, _nan, dt)
        out = np.empty(shape, dt)
        out.view(np.uint8)[...] = 0xA5
        return out

    def address_of(self, out: np.ndarray) -> int | None:
        """The address of ``out`` when it is a buffer this pool handed out (the object itself), else None. An honest
        kernel that returns its ``alloc`` buffer pays an identity test here, where ``__array_interface__`` cost 24-26
        us after the kernel's memory traffic (12-05, softmax A/A): that time is the candidate's (``CallCost``). The
        address is the worker's claim either way; the grader reads what lies there (``Worker.read``)."""
        for buf, start in self.handed:
            if buf is out:
                return self.base + start
        return None


#: Requests served while a candidate worker can still read the installation (``confine.drop_reads``): none
#: runs candidate code. The layer is stacked before a Load executes its module, so nothing the candidate wrote
#: ever runs while files can be read, and nothing it does at its top level can stop the drop (S19).
_BEFORE_CANDIDATE_CODE = (P.MapArena, P.Gate, P.Ping)
#: At most this many modules named by a candidate's imports are imported before its reads are dropped.
_PREIMPORT_MAX = 64
#: Names bound to modules in a candidate's namespace before its source runs (``tasks.base_namespace``).
_MODULE_ALIASES = {k: v.__name__ for k, v in base_namespace().items() if isinstance(v, type(np))}


def _dotted(node: ast.AST) -> list[str] | None:
    """``np.testing.assert_allclose`` as its names, or None when the chain does not start at a name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def modules_named(src: str, aliases: dict[str, str]) -> list[str]:
    """The modules ``src`` could import, in order: what its absolute imports name, wherever they stand (top
    level, ``forward``, ``__main__`` blocks), and every prefix of an attribute chain that starts at a module
    (``np.testing.assert_allclose``: numpy.testing, which numpy imports on first access). ``aliases``: names
    bound to modules before the source runs (``np``)."""
    try:
        tree = ast.parse(src)
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return []  # reported by the Load itself
    names: dict[str, None] = {}
    bound = dict(aliases)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                names[a.name] = None
                bound[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names[node.module] = None
            for a in node.names:
                if a.name != "*":  # ``from numpy import testing``: the submodule, when it is one
                    names[f"{node.module}.{a.name}"] = None
                    bound[a.asname or a.name] = f"{node.module}.{a.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain = _dotted(node)
            if chain and chain[0] in bound:
                names[".".join([bound[chain[0]], *chain[1:]])] = None
    out: dict[str, None] = {}
    for name in names:
        parts = name.split(".")
        for k in range(1, len(parts) + 1):
            out[".".join(parts[:k])] = None
    return list(out)


def preimport_named_modules(src: str, aliases: dict[str, str]) -> list[str]:
    """Import what ``modules_named`` finds in ``src``, before reads are dropped: its module runs after, when no
    file can be opened, and ``import argparse`` or ``np.testing`` must find the module loaded. Only installed
    modules' own code runs here, never the candidate's; a name that is not a module fails here and again,
    readably, when the candidate's own code uses it. At most _PREIMPORT_MAX new modules; returns them."""
    if too_large(src):
        return []
    done: list[str] = []
    failed: set[str] = set()
    for name in modules_named(src, aliases):
        if len(done) >= _PREIMPORT_MAX:
            break
        parent = name.rpartition(".")[0]
        if name in sys.modules or parent in failed:
            continue
        if parent and not hasattr(sys.modules.get(parent), "__path__"):
            failed.add(name)  # an attribute of a plain module (``np.linalg.norm``): no submodule to look for
            continue
        try:
            importlib.import_module(name)
            done.append(name)
        except BaseException:  # noqa: BLE001 - not a module (``math.pi``), or not installed
            failed.add(name)
    return done


class Executor:
    """The worker's state and its request handlers."""

    def __init__(self, conn: Any, fds: socket.socket, role: str, extra_names: dict[str, Any] | None = None,
                 blas_threads: int = 1) -> None:
        self.conn, self.fds, self.role = conn, fds, role
        self.fd = conn.fileno()  # requests and replies go through the socket itself (``_recv``, ``_send``)
        self.blas_threads, self.blas_limit = blas_threads, None
        self.extra_names = extra_names or {}
        self.inputs: mmap.mmap | None = None
        self.scratch: mmap.mmap | None = None
        self.scratch_addr = 0  # its address in this process
        self.fns: dict[str, Any] = {}
        self.init: Any = None
        self.params: dict[str, dict] = {}
        self.raw_params: dict[str, dict] = {}
        self.cache = naive_v0.CachingPool()
        self.recv_ns = 0  # when the request being answered had arrived (``P.Called.recv_ns``)
        self.last_out: Any = None  # kept alive until the next request: the grader reads it in place
        self.same: tuple[Any, dict[str, np.ndarray]] | None = None  # the last call's input objects, by specs
        self.prepared: dict[bytes, _Slot] = {}  # a prepared call's frame body -> the call (``P.Prepare``)
        self.writer = _CappedWriter(_STDOUT_CAP)
        self.reads_dropped = False
        self.refusal: str | None = None  # every request that could run the candidate's code gets it
        self.handlers: dict[type, Callable[[Any], P.Reply]] = {
            P.MapArena: self.map_arena, P.Gate: self.gate, P.Load: self.load, P.SetParams: self.set_params,
            P.Call: self.call, P.Prepare: self.prepare, P.Ping: lambda req: P.Pong(), P.ReadStdout: self.read_stdout,
            P.NaiveTrial: self.naive_trial, P.NaiveTime: self.naive_time}

    # -- arrays ------------------------------------------------------------------------------------

    def _views(self, specs: tuple[P.ArraySpec, ...], writable: bool) -> dict[str, np.ndarray]:
        if self.inputs is None:
            raise RuntimeError("no inputs arena mapped")
        out = {}
        for name, dtype, shape, off in specs:
            v = _frombuffer(self.inputs, dtype, math.prod(shape), off).reshape(shape)  # math: np.prod ~15 us
            out[name] = v.copy() if writable else v
        return out

    # -- handlers ----------------------------------------------------------------------------------

    def map_arena(self, req: P.MapArena) -> P.Reply:
        _, fds, _, _ = socket.recv_fds(self.fds, 1, 1)
        if not fds:
            raise RuntimeError("no arena descriptor arrived")
        try:
            if req.kind == "inputs":
                # Parameter sets are views of the arena they were staged in: a new arena brings its own. (The old
                # mapping goes with its last view.)
                self.params.clear()
                self.raw_params.clear()
                self.prepared.clear()
                self.inputs = mmap.mmap(fds[0], req.size, prot=mmap.PROT_READ)
            else:
                self.scratch = mmap.mmap(fds[0], req.size)
                self.scratch_addr = np.frombuffer(self.scratch, np.uint8, 1).ctypes.data
                return P.Mapped(self.scratch_addr)
        finally:
            os.close(fds[0])
        return P.Mapped()

    def gate(self, req: P.Gate) -> P.Reply:
        if GATE is None:
            return P.GateVerdict((), "no static gate in this worker")
        findings, error = GATE(req.src)
        return P.GateVerdict(tuple(findings[:64]), error)

    def load(self, req: P.Load) -> P.Reply:
        fwd, init, err = load_candidate(req.src, {**base_namespace(), **self.extra_names})
        if err:
            return P.Failure(err)
        self.fns[req.name] = fwd
        if req.name == "cand":
            self.init = init
        return P.Loaded(init is not None)

    def set_params(self, req: P.SetParams) -> P.Reply:
        raw = {**self._views(req.arrays, req.writable), **req.scalars}
        self.raw_params[req.pset_id] = raw
        # Writable (KernelBench's procedure): the candidate gets weights of its own, as ModelNew does, so what
        # it does to them in place does not reach the reference's. Read-only: both read the sealed views.
        p = {k: (v.copy() if type(v) is _ndarray else v) for k, v in raw.items()} if req.writable else raw
        if self.init is not None and req.init:
            p = self.init(dict(p))
            if type(p) is not dict or not all(type(k) is str and (type(v) in (_ndarray, float, int, bool))
                                              for k, v in p.items()):
                return P.Failure("init() must return a plain dict of str keys to numpy arrays and numbers", "contract")
        self.params[req.pset_id] = p
        return P.ParamsKept()

    def call(self, req: P.Call) -> P.Reply:
        return self._call(req, None)  # type: ignore[return-value] # unprepared: never the fixed-size reply

    def prepare(self, req: P.Prepare) -> P.Reply:
        if req.call.fn not in self.fns or req.call.pset_id not in self.params:
            return P.Failure("kbench: a prepared call names a function or a parameter set not kept")
        views = self._views(req.call.x, False)  # the specs fit the arena
        fresh_views = req.call.inputs == "readonly" and not req.call.same_objects
        self.prepared[P.FAST_CALL.pack(P.FAST_TAG, req.slot)] = _Slot(req, views if fresh_views else None)
        return P.Prepared()

    def _call(self, req: P.Call, prepared: _Slot | None) -> P.Reply | bytes:
        """A call; for a prepared one whose output is the array it prepared for, its fixed-size reply, stamped
        last (``P.encode_fast_called``). What a prepared call does around the kernel is the candidate's to pay
        (``CallCost``), so it does little: every numpy attribute read after a kernel's memory traffic costs
        5-20 us of cold code (numpy's ctypes helper, which gave the address before, 30 us)."""
        self.last_out = None
        if prepared is not None and prepared.templates is not None:
            x = {k: v.view() for k, v in prepared.templates.items()}  # fresh objects, the same sealed pages
        elif req.same_objects and self.same is not None and self.same[0] == (req.x, req.inputs):
            x = self.same[1]
        else:
            x = self._views(req.x, writable=req.inputs == "copy")
            self.same = ((req.x, req.inputs), x) if req.same_objects else None
        pool = _Pool(self.scratch, self.scratch_addr)
        alloc = pool.alloc if req.alloc == "pool" else self.cache.alloc
        fn, params = self.fns[req.fn], self.params[req.pset_id]
        t0 = _perf_ns()
        out = fn(x, params, alloc)
        t1 = _perf_ns()
        if prepared is not None and type(out) is _ndarray and out.dtype is prepared.dtype and \
                out.shape == prepared.out_shape and out.strides == prepared.strides:
            self.last_out = out
            addr = pool.address_of(out)
            if addr is None:
                addr = out.__array_interface__["data"][0]
            return P.encode_fast_called(addr, t1 - t0, pool.used, self.recv_ns, _perf_ns())
        if type(out) is not _ndarray:
            kind = type(out)
            return P.Called(f"{kind.__module__}.{kind.__qualname__}", kernel_ns=t1 - t0, alloc_used=pool.used,
                            recv_ns=self.recv_ns, sent_ns=_perf_ns())
        if not out.flags.c_contiguous:
            out = np.ascontiguousarray(out)  # what the grader reads is one contiguous run of bytes
        self.last_out = out
        return P.Called("numpy.ndarray", out.ctypes.data, out.dtype.str, out.shape, t1 - t0, pool.used, self.recv_ns,
                        _perf_ns())

    def read_stdout(self, req: P.ReadStdout) -> P.Reply:
        return P.Printed("".join(self.writer.head)[: P.STDOUT_HEAD], self.writer.n)

    def naive_trial(self, req: P.NaiveTrial) -> P.Reply:
        return naive_v0.trial(self.fns["ref"], self.fns["cand"], self._views(req.x, writable=True),
                              self.raw_params[req.pset_id], self.params[req.pset_id], self.cache, req,
                              _Pool(None).alloc)

    def naive_time(self, req: P.NaiveTime) -> P.Reply:
        return naive_v0.timing(self.fns["ref"], self.fns["cand"], self._views(req.x, writable=True),
                               self.raw_params[req.pset_id], self.params[req.pset_id], self.cache, req)

    # -- the loop ----------------------------------------------------------------------------------

    def answer(self, req: Any, prepared: _Slot | None = None) -> P.Reply | bytes:
        """The reply to ``req``, or to the prepared call ``prepared`` (whose frame ``serve`` looked up)."""
        try:
            if prepared is not None:
                return self._call(prepared.call, prepared)
            return self.handlers[type(req)](req)
        except MemoryError as e:
            return P.Failure(f"exceeded memory limit ({error_line(e)})", "memory")
        except OutputFlood as e:
            return P.Failure(str(e), "output")
        except BaseException as e:  # noqa: BLE001 - a candidate's SystemExit is a runtime error, not our exit
            text = error_line(e)
            kind = "readonly" if isinstance(e, ValueError) and "read-only" in str(e) else "error"
            return P.Failure(text, kind)

    def _before_candidate_code(self, req: Any) -> None:
        """The last steps before code a candidate wrote may run: the modules its source names imported, the
        pages of the libraries they mapped loaded, its reads dropped (``confine.drop_reads``), then BLAS's
        threads started: after the drop, they are bound by it (Landlock binds the thread that stacks a layer
        and those it starts afterwards)."""
        if isinstance(req, P.Load):
            preimport_named_modules(req.src, _MODULE_ALIASES)
        if self.role == "candidate":
            confine.prefault_new_mappings()
        try:
            confine.drop_reads()
        except confine.ThreadsRunning as e:
            self.refusal = f"kbench sandbox: its file reads could not be dropped before its code ran: {e.strerror}"
        except OSError:
            pass  # the first layer holds: the installation stays readable (reported by the test of S9)
        if _BLAS is not None and _BLAS_THREADS != self.blas_threads:
            try:
                self.blas_limit = _BLAS.limit(limits=self.blas_threads)
            except Exception:  # noqa: BLE001
                pass

    def _recv(self) -> bytes:
        """The next request's bytes, read from the socket itself: ``recv_ns`` is stamped as the first read returns,
        so the floor a candidate is refunded holds no Python of this loop (``CallCost``). Frames are the 4-byte
        length and the body, as ``multiprocessing.Connection`` writes them; a prepared call's whole frame is 9
        bytes, and the grader sends nothing more until it has the reply, so reading 9 never reads past a frame
        (a longer one is read to its end, and a descriptor that follows a MapArena is read by ``map_arena``)."""
        buf = _read(self.fd, P.FAST_FRAME_BYTES)
        self.recv_ns = _perf_ns()
        while len(buf) < 4:
            more = _read(self.fd, 4 - len(buf))
            if not more:
                raise EOFError
            buf += more
        (size,) = _LENGTH.unpack_from(buf)
        if size < 0:
            raise EOFError  # the grader never sends a frame over 2 GiB
        if len(buf) - 4 >= size:
            return buf[4:]
        body = bytearray(buf[4:])
        while len(body) < size:
            more = _read(self.fd, min(size - len(body), 1 << 20))
            if not more:
                raise EOFError
            body += more
        return bytes(body)

    def _send(self, payload: bytes) -> None:
        """One reply, written to the socket itself (a stop in the middle of a write resumes where it was)."""
        view, sent = memoryview(_LENGTH.pack(len(payload)) + payload), 0
        while sent < len(view):
            sent += _write(self.fd, view[sent:])

    def serve(self) -> None:
        prepared = self.prepared
        while True:
            try:
                raw = self._recv()
                fast = prepared.get(raw)
                if fast is not None:  # a prepared call: nothing to unpickle, nothing else to decide
                    # (a Prepare is answered only after the candidate's reads were dropped and with no refusal)
                    reply = self.answer(None, fast)
                    self._send(reply if type(reply) is bytes else P.encode(reply))
                    continue
                req = pickle.loads(raw) if raw[:1] != P.FAST_TAG else None
            except (EOFError, OSError, ValueError):
                return
            if req is None:  # a slot this worker does not keep (a new inputs arena forgot it): a grader's slip
                self._send(P.encode(P.Failure("kbench: a prepared call this worker does not keep")))
                continue
            if isinstance(req, P.Exit):
                return
            if not self.reads_dropped and not isinstance(req, _BEFORE_CANDIDATE_CODE) and \
                    not (isinstance(req, P.Load) and req.trusted):
                self.reads_dropped = True
                self._before_candidate_code(req)
            if self.refusal is not None and not isinstance(req, _BEFORE_CANDIDATE_CODE):
                reply = P.Failure(self.refusal)
            else:
                reply = self.answer(req)
            try:
                self._send(reply if type(reply) is bytes else P.encode(reply))
            except (OSError, ValueError):
                return


# ------------------------------------------------------------------------------------------ set-up

_DENY_PREFIXES = ("os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "os.kill",
                  "os.killpg", "os.setuid", "os.setgid", "os.chroot", "os.chdir", "os.fchdir",
                  "subprocess.", "socket.", "ctypes.", "signal.pthread_kill", "resource.setrlimit",
                  "resource.prlimit", "sys.addaudithook", "sys.settrace", "sys.setprofile", "pty.",
                  "winreg.", "webbrowser.", "urllib.", "http.", "ftplib.", "smtplib.", "telnetlib.")
_PATH_EVENTS = {"os.remove", "os.rename", "os.replace", "os.rmdir", "os.mkdir", "os.link", "os.symlink",
                "os.truncate", "os.chmod", "os.chown", "os.utime", "shutil.rmtree", "shutil.copyfile", "shutil.move",
                "os.mkfifo", "os.mknod"}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def _install_audit_hook() -> None:
    """Readable refusals for what the OS layers stop anyway: no file may be written anywhere (but /dev/null)."""

    def hook(event: str, args: tuple) -> None:
        if event == "open":
            path, mode, flags = (tuple(args) + (None, None, None))[:3]
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or \
                      (isinstance(flags, int) and flags & _WRITE_FLAGS)
            if writing and path != os.devnull:
                raise PermissionError(f"kbench sandbox: writing {P.short(P.one_line(str(path)), 80)} is not "
                                      "allowed (no file may be written)")
        elif event.startswith(_DENY_PREFIXES) or event in _PATH_EVENTS:
            raise PermissionError(f"kbench sandbox: {event} is not allowed")

    sys.addaudithook(hook)


def _quiet_stdio() -> None:
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)


def same_allocator_everywhere() -> bool:
    """The workers' allocator convention, in this process: arrays up to 32 MiB come from the heap and freed
    memory stays mapped. False where the C library is not glibc (nothing changed).

    Why: left to glibc's adaptive threshold, a fresh worker pays page faults on every temporary (~0.2 ms/MB)
    that a warm one does not (a 1.0x kernel measured 0.74x); a benchmark measuring kernels beside kbench's
    workers calls this to run them under the same convention. The grading process keeps it too (``Grader``):
    on a VM that hands freed memory back to its host (free page reporting, as on the Firecracker guest kbench
    is developed on), memory unmapped for a second or more costs ~2.4 ms per MiB to touch again, 30 times a
    copy: 64 MiB took 161 ms fresh, 18 ms reused at once, 152 ms reused 10 s later, and an output read into a
    fresh array 2.3 ms per MiB against 0.13-0.18 into a reused one (12-04)."""
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD
        libc.mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD
    except Exception:  # noqa: BLE001 - not glibc
        return False
    return True


def _native_names() -> dict[str, Any]:
    """Tests only (``server.TEST_HARNESS = "native"``): what a candidate's own native code would have."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long

    def syscall(nr: int, *args: int) -> tuple[int, int]:
        """(return value, errno) of a raw system call."""
        rc = libc.syscall(ctypes.c_long(nr), *(ctypes.c_long(a) for a in args))
        return int(rc), ctypes.get_errno()

    return {"ctypes": ctypes, "libc": libc, "syscall": syscall}


def main(conn: Any, cfg: dict[str, Any]) -> None:
    """The fork server's entry point: the confinement steps (``confine.enter``: in a warden and the worker it
    forks, or in the worker alone), then the loop."""
    fds = socket.socket(fileno=os.dup(conn.fileno()))  # receives arena descriptors (SCM_RIGHTS)
    _quiet_stdio()
    same_allocator_everywhere()
    ctx = confine.enter(cfg, keep_fds=(conn.fileno(), fds.fileno()),
                        announce=lambda pid: conn.send_bytes(P.encode(P.Started(pid))))
    harness = cfg.get("harness")
    ex = Executor(conn, fds, cfg["role"], _native_names() if harness == "native" else None,
                  int(cfg["blas_threads"]))
    sys.stdout = sys.stderr = ex.writer  # type: ignore[assignment]
    if cfg["role"] == "candidate" and harness is None:
        _install_audit_hook()
    report = confine.report(ctx)
    try:
        conn.send_bytes(P.encode(P.Hello(report.active, report.missing)))
    except (OSError, ValueError):
        return
    ex.serve()
