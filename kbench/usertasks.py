"""A user's task files (``--tasks DIR``), and the task sets kbench ships beyond the lecture's nine.

A user's task file is the user's own code, not a candidate's, but it is still not kbench's: loading one
runs nothing of it in this process. Its declarations are read from its syntax tree (``kbench.core.taskfile``);
what has to run — its parameter maker, a KernelBench-style file's ``get_inputs()``/``Model``, the reference
once to measure an output shape it does not declare, and the float64 reference of the grader's second
opinion — runs in a sandbox worker of its own (``Confined``: role "reference", every OS layer of
``kbench.sandbox.confine``, a time limit per call), started on first use and kept for the task's lifetime.
The reference itself runs where every reference runs: the grader's reference workers.

``activate(dirs, sets)`` loads and registers them (``kbench.core.tasks.register``, their candidates with
``kbench.core.library.register``) and records them in the environment, so a grading process started later
(``kbench grade``'s pool) loads the same ones (``activate_from_env``).
"""

from __future__ import annotations

import atexit
import json
import math
import os
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from kbench.core import distributions, library, taskfile, tasks
from kbench.core.taskfile import KernelBenchShape, Spec, TaskFileError
from kbench.sandbox import protocol as P
from kbench.sandbox.arena import InputArena
from kbench.sandbox.server import Worker, WorkerError

#: A call into a task file's own code (its parameter maker, the probe, one reference call) must end by then.
CALL_TIMEOUT_S = 60.0
#: The packed reply of an operation: an 8-byte header length, a JSON header, then 64-byte-aligned arrays.
MAX_HEADER = 1 << 20
_DTYPES = ("<f4", "<f8")

#: Appended (after ``taskfile.RUNNER``) to the file a ``Confined`` worker loads: one ``forward`` serving every
#: operation, its answer packed into one uint8 array the grading process reads and checks.
_PACK = '''

def forward(x, params, alloc):
    import json as _json
    import numpy as _np
    header, arrays = _kbench_op(params["op"], params["args"])
    metas, chunks, off = [], [], 0
    for k, v in arrays.items():
        v = _np.ascontiguousarray(v)
        metas.append([str(k), v.dtype.str, [int(d) for d in v.shape], off])
        chunks.append((off, v))
        off += -(-v.nbytes // 64) * 64
    def plain(v):
        if isinstance(v, (_np.floating, _np.integer)):
            return v.item()
        return repr(v)
    head = _json.dumps(dict(header, arrays=metas), default=plain).encode()
    start = -(-(8 + len(head)) // 64) * 64
    out = _np.zeros(start + off, _np.uint8)
    out[:8] = _np.frombuffer(len(head).to_bytes(8, "little"), _np.uint8)
    out[8:8 + len(head)] = _np.frombuffer(head, _np.uint8)
    for o, v in chunks:
        out[start + o: start + o + v.nbytes] = v.reshape(-1).view(_np.uint8)
    return out
'''


def _unpack(path: Path, buf: np.ndarray) -> tuple[dict, dict[str, np.ndarray]]:
    """The header and arrays of a packed reply, every field checked (the worker ran the file's code)."""
    raw = buf.tobytes()
    if len(raw) < 8:
        raise taskfile._fail(path, "the task's worker sent a reply too short to read")
    n = int.from_bytes(raw[:8], "little")
    if not 0 < n <= MAX_HEADER or 8 + n > len(raw):
        raise taskfile._fail(path, "the task's worker sent a malformed reply")
    try:
        header = json.loads(raw[8:8 + n])
    except ValueError:
        raise taskfile._fail(path, "the task's worker sent a malformed reply") from None
    if not isinstance(header, dict):
        raise taskfile._fail(path, "the task's worker sent a malformed reply")
    start = -(-(8 + n) // 64) * 64
    arrays: dict[str, np.ndarray] = {}
    for meta in header.pop("arrays", []):
        try:
            name, dtype, shape, off = meta
            shape = tuple(int(d) for d in shape)
            count = math.prod(shape)
            if dtype not in _DTYPES or off < 0 or any(d < 0 for d in shape):
                raise ValueError
            nbytes = count * np.dtype(dtype).itemsize
            if start + off + nbytes > len(raw):
                raise ValueError
        except (ValueError, TypeError):
            dt = meta[1] if isinstance(meta, list) and len(meta) > 1 else "?"
            raise taskfile._fail(path, f"parameter {str(meta[0] if isinstance(meta, list) and meta else '?')!r:.40} "
                                       f"is a {dt} array; parameters are float32 arrays and floats") from None
        arrays[str(name)] = np.frombuffer(raw, dtype, count, start + off).reshape(shape).copy()
    return header, arrays


class Confined:
    """A task file's own code, run in a confined sandbox worker (one per task, started on first use)."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self._lock = threading.RLock()
        self._worker: Worker | None = None
        self._arena: InputArena | None = None
        self._loaded: set[str] = set()
        self._kb: KernelBenchShape | None = None
        self._n = 0

    # -- the worker ---------------------------------------------------------------------------------

    def _fail(self, what: str, e: Exception) -> TaskFileError:
        return taskfile._fail(self.spec.path, f"{what}: {e}")

    def _start(self) -> Worker:
        if self._worker is None or self._worker.dead:
            self._worker = Worker("reference")
            self._arena = None
            self._loaded = set()
            _OPEN.append(self)
        return self._worker

    def _call(self, request: Any, what: str, fd: int | None = None) -> P.Reply:
        w = self._start()
        try:
            reply = w.call(request, CALL_TIMEOUT_S, fd=fd)
        except WorkerError as e:
            raise self._fail(what, e) from None
        if isinstance(reply, P.Failure):
            raise taskfile._fail(self.spec.path, f"{what} raised {reply.error}")
        return reply

    def _load(self, name: str, src: str, what: str) -> None:
        if name not in self._loaded:
            self._call(P.Load(src, name, trusted=True), what)
            self._loaded.add(name)

    def _stage(self, x: dict[str, np.ndarray], params: dict[str, Any]) -> tuple[tuple, tuple, dict]:
        """Copy ``x`` and ``params``'s arrays into this worker's arena (made larger when they do not fit)."""
        def need(arrs: Any) -> int:
            return sum(-(-a.nbytes // 64) * 64 for a in arrs if isinstance(a, np.ndarray)) + 64

        slot, pset = need(x.values()), need(params.values())
        a = self._arena
        if a is None or a.slot_bytes < slot or a.pset_bytes < pset:
            if a is not None:
                a.close()
            a = self._arena = InputArena(max(slot, 1 << 16), 1, max(pset, 1 << 16), 1,
                                         f"task-{self.spec.name}-{secrets.token_hex(3)}")
            self._call(P.MapArena("inputs", a.size), "mapping its inputs", fd=a.fd)
        specs, off = [], a.slot_offset(0)
        for k, v in x.items():
            a.view(v.dtype, v.shape, off)[...] = v
            specs.append(P.array_spec(k, v, off))
            off += -(-v.nbytes // 64) * 64
        pspecs, scalars, off = [], {}, a.pset_offset(0)
        for k, v in params.items():
            if isinstance(v, np.ndarray):
                a.view(v.dtype, v.shape, off)[...] = v
                pspecs.append(P.array_spec(k, v, off))
                off += -(-v.nbytes // 64) * 64
            else:
                scalars[k] = v
        return tuple(specs), tuple(pspecs), scalars

    def _run(self, fn: str, x: dict[str, np.ndarray], params: dict[str, Any], what: str) -> tuple[P.Called, Worker]:
        with self._lock:
            specs, pspecs, scalars = self._stage(x, params)
            self._n += 1
            pset = f"{fn}:{self._n}"
            self._call(P.SetParams(pset, pspecs, scalars, init=False), what)
            w = self._start()
            try:
                k = w.run(P.Call(fn, pset, specs, "readonly", "pool"), CALL_TIMEOUT_S, None, stop=False)
            except WorkerError as e:
                raise self._fail(what, e) from None
            if isinstance(k.reply, P.Failure):
                raise taskfile._fail(self.spec.path, f"{what} raised {k.reply.error}")
            if not isinstance(k.reply, P.Called):
                raise taskfile._fail(self.spec.path, f"{what}: unexpected reply")
            if k.reply.out_type != "numpy.ndarray":
                raise taskfile._fail(self.spec.path, f"{what} returned {k.reply.out_type}, not a numpy array")
            return k.reply, w

    def _op(self, op: str, args: dict) -> tuple[dict, dict[str, np.ndarray]]:
        what = {"params": "make_params", "kb_probe": "get_inputs()/Model", "kb_params": "Model(*get_init_inputs())"}[op]
        with self._lock:
            self._load("box", self.spec.src + taskfile.RUNNER + _PACK, f"loading {self.spec.path.name}")
            reply, w = self._run("box", {}, {"op": op, "args": args}, what)
            if reply.out_dtype != "|u1" or len(reply.out_shape) != 1:
                raise taskfile._fail(self.spec.path, f"{what}: the task's worker sent a malformed reply")
            try:
                buf = w.read(reply.out_addr, reply.nbytes, None, ("|u1", reply.out_shape))
            except P.ProtocolError as e:
                raise self._fail(what, e) from None
            return _unpack(self.spec.path, buf)

    def close(self) -> None:
        with self._lock:
            if self._worker is not None:
                self._worker.close()
                self._worker = None
            if self._arena is not None:
                self._arena.close()
                self._arena = None

    # -- the executor's operations ----------------------------------------------------------------

    def _advance(self, rng: np.random.Generator, header: dict) -> None:
        """Leave the caller's generator where the file's code left the worker's copy of it."""
        state = header.get("state")
        if not (isinstance(state, dict) and state.get("bit_generator") == rng.bit_generator.state["bit_generator"]):
            raise taskfile._fail(self.spec.path, "the task's worker sent a malformed reply")
        try:
            rng.bit_generator.state = state
        except (ValueError, TypeError, KeyError):
            raise taskfile._fail(self.spec.path, "the task's worker sent a malformed reply") from None

    def make_params(self, rng: np.random.Generator, randomize: bool, draw: int) -> dict[str, Any]:
        if self.spec.kind == "kbench" and self.spec.params_arity == 0:
            return {}
        args = {"state": rng.bit_generator.state, "randomize": bool(randomize), "draw": int(draw),
                "arity": self.spec.params_arity}
        if self.spec.kind == "kbench":
            header, arrays = self._op("params", args)
        else:
            header, arrays = self._op("kb_params", {**args, "init": list(self.kernelbench().init)})
        self._advance(rng, header)
        return taskfile.parse_params(self.spec.path, header, arrays)

    def kernelbench(self) -> KernelBenchShape:
        if self._kb is None:
            self._kb = taskfile.kernelbench_shape(self.spec.path, self._op("kb_probe", {})[0])
        return self._kb

    def output_of(self, ref_src: str, inputs: dict[str, tuple[int, ...]]) -> tuple[str, tuple[int, ...]]:
        rng = np.random.default_rng(0)
        x = {k: distributions.sample(rng, "normal", s) for k, s in inputs.items()}
        params = self.make_params(rng, False, 0)
        with self._lock:
            self._load("ref", ref_src, "loading the reference")
            reply, _ = self._run("ref", x, params, "the reference")
            return reply.out_dtype, tuple(reply.out_shape)

    def ref_fn(self, ref_src: str) -> Callable[[], Callable[..., np.ndarray]]:
        def make() -> Callable[..., np.ndarray]:
            def run(x: dict[str, np.ndarray], params: dict[str, Any], alloc: Any = None) -> np.ndarray:
                """The reference on these inputs (float64 for the second opinion), in the task's worker."""
                with self._lock:
                    self._load("ref", ref_src, "loading the reference")
                    x = {k: np.ascontiguousarray(v) for k, v in x.items()}
                    reply, w = self._run("ref", x, params, "the reference")
                    if reply.out_dtype not in _DTYPES:
                        raise taskfile._fail(self.spec.path, f"the reference returned {reply.out_dtype} values")
                    try:
                        return w.read(reply.out_addr, reply.nbytes, None, (reply.out_dtype, reply.out_shape))
                    except P.ProtocolError as e:
                        raise self._fail("the reference", e) from None

            return run

        return make


_OPEN: list[Confined] = []


@atexit.register
def _close_all() -> None:
    for c in _OPEN:
        try:
            c.close()
        except Exception:  # noqa: BLE001 - at exit: nothing to report to
            pass


def load_dir(root: Path) -> taskfile.Loaded:
    """The task files under ``root``, their code run in confined workers; names already known are refused."""
    return taskfile.load_dir(Path(root), Confined, str(root), taken=set(tasks.TASK))


def load_file(path: Path) -> Any:
    """One task file (``kbench task check``), not registered: a ``Task``, or TaskFileError."""
    path = Path(path)
    folder = path.parent if path.name == taskfile.TASK_FILE else None
    spec = taskfile.parse(path, default_name=path.parent.name if folder else path.stem, folder=folder)
    return taskfile.build(spec, Confined(spec), str(path.parent))


# ------------------------------------------------------------------------------------------ activation

@dataclass
class Activated:
    """What ``activate`` registered, and one line per file that did not load."""

    tasks: list[str] = field(default_factory=list)
    candidates: int = 0
    errors: list[str] = field(default_factory=list)


_done: set[tuple[str, str]] = set()


def activate(dirs: "list[Path] | tuple[Path, ...]" = (), sets: "list[str] | tuple[str, ...]" = (),
             export: bool = True) -> Activated:
    """Load and register kbench's task sets named in ``sets`` (its own code, run here) and every task file under
    each of ``dirs`` (run in confined workers), with their candidates. Idempotent. ``export``: record them in the
    environment for grading processes started later."""
    out = Activated()
    for s in sets:
        if ("set", s) in _done:
            continue
        if s not in tasks.SHIPPED_SETS:
            out.errors.append(f"unknown task set {s!r} (kbench ships: {', '.join(tasks.SHIPPED_SETS)})")
            continue
        _done.add(("set", s))
        _register(tasks.load_shipped(s, taken=set(tasks.TASK)), "library", out)
    for d in dirs:
        key = ("dir", str(Path(d).resolve()))
        if key in _done:
            continue
        if not Path(d).is_dir():
            out.errors.append(f"--tasks {d}: not a directory")
            continue
        _done.add(key)
        _register(load_dir(Path(d)), str(d), out)
    if export:
        _export()
    return out


def _register(loaded: taskfile.Loaded, origin: str, out: Activated) -> None:
    out.errors += loaded.errors
    out.tasks += tasks.register(loaded.tasks, loaded.folders)
    for name, folder in loaded.folders.items():
        cands = library.load_task_folder(name, folder, origin)
        library.register(cands)
        out.candidates += len(cands)


def _export() -> None:
    sets = sorted(v for k, v in _done if k == "set")
    dirs = sorted(v for k, v in _done if k == "dir")
    if sets or dirs:
        os.environ[tasks.ENV_TASKS] = json.dumps({"sets": sets, "dirs": dirs})


def activate_from_env() -> Activated:
    """What a parent process activated (``KBENCH_TASKS``), in this process (a grading pool's)."""
    try:
        data = json.loads(os.environ.get(tasks.ENV_TASKS, "{}"))
    except ValueError:
        return Activated(errors=[f"{tasks.ENV_TASKS} is not JSON"])
    if not isinstance(data, dict):
        return Activated()
    sets = [s for s in data.get("sets", []) if isinstance(s, str)]
    dirs = [Path(d) for d in data.get("dirs", []) if isinstance(d, str)]
    return activate(dirs, sets, export=False)


def deactivate() -> None:
    """Forget everything ``activate`` registered (tests)."""
    names = [t.name for t in tasks.active() if t not in tasks.TASKS]
    tasks.unregister(names)
    library.unregister(names)
    _done.clear()
    os.environ.pop(tasks.ENV_TASKS, None)
