"""The truth: what hardened grading judges against, owned by the grading process.

It holds a secret seed (inputs are drawn from it, never from anything a candidate sees), a reference
worker that never runs candidate code, the reference outputs that worker computed (cached per session:
every candidate of a task is judged against the same draws), and the timing input streams.
"""

from __future__ import annotations

import atexit
import hashlib
import secrets
import threading
from collections import OrderedDict

from typing import Any

import numpy as np

from kbench.core.distributions import sample
from kbench.core.once import once
from kbench.sandbox import protocol as P
from kbench.sandbox.server import Worker
from kbench.core.tasks import Task
from kbench.grading.lanes import timing_cpu

def name_key(name: str) -> int:
    """A seed component derived from a name, not a position: adding a task or a distribution leaves
    every other one's draws unchanged."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little")


class _TimingStream:
    """Timing inputs: every one an independent fresh draw (normal) from the task's secret stream.

    No windows, shifts or permutations of a pool: a kernel that remembers what it saw must find nothing
    to reuse (windows of one pool let a memoising GELU reach 33x). Draws are made in batches with the
    fast float32 fill (``distributions``), when ``prefill`` is called between timed blocks or when the
    batch runs out between two pairs, never while a timed call is running; each is a new allocation."""

    BATCH_BYTES = 32 << 20  # one batch holds at most this much (at least one input)

    def __init__(self, task: Task, rng: np.random.Generator) -> None:
        self.rng = rng
        self.shapes = task.inputs
        per_input = sum(int(np.prod(s)) for s in task.inputs.values()) * 4
        self.batch = max(1, min(16, self.BATCH_BYTES // max(per_input, 1)))
        self._ready: list[dict[str, np.ndarray]] = []

    def prefill(self, n: int | None = None) -> None:
        """Draw ``n`` (default: one batch) inputs now, so the next ``next()`` calls only hand them out."""
        for _ in range(self.batch if n is None else n):
            self._ready.append({k: sample(self.rng, "normal", shape) for k, shape in self.shapes.items()})

    def next(self) -> dict[str, np.ndarray]:
        if not self._ready:
            self.prefill()
        return self._ready.pop(0)

    def drop(self) -> None:
        """Forget prepared inputs (an evaluation ended: the next one draws its own)."""
        self._ready.clear()


class Grader:
    """Owns the truth: the secret seed, the reference worker and the reference outputs it computed.

    It does not grade (``kbench.grading.pipeline.evaluate`` does); one evaluation holds ``lock`` at a time."""

    def __init__(self, seed: int | None = None, blas_threads: int = 1, cache_size: int = 96) -> None:
        self.seed = seed if seed is not None else secrets.randbits(62)
        # Candidate and timing-reference workers share one core (the last), so neither gets a cache the
        # other lacks; the grading process and the UI keep the others.
        self.cpu: int | None = timing_cpu()
        self.blas_threads = blas_threads
        self.lock = threading.RLock()
        self._ref: Worker | None = None
        self._ref_loaded: set[str] = set()
        self._ref_params: set[str] = set()
        self._refs: OrderedDict[tuple, tuple[dict, np.ndarray]] = OrderedDict()
        self._params: dict[tuple, dict] = {}
        self._ref64: dict[str, Any] = {}
        self._streams: dict[str, _TimingStream] = {}
        self.cache_size = cache_size

    # -- the truth ---------------------------------------------------------------------------------


    def params(self, task: Task, kind: str, draw: int) -> tuple[str, dict]:
        key = (task.name, kind, draw)
        if key not in self._params:
            rng = np.random.default_rng([self.seed, name_key(task.name), 2, draw + 1])
            self._params[key] = task.make_params(rng, kind == "random", max(draw, 0))
        return f"{task.name}:{kind}:{draw}", self._params[key]

    def inputs(self, task: Task, trial: int, dist: str) -> dict[str, np.ndarray]:
        rng = np.random.default_rng([self.seed, name_key(task.name), 1, trial, name_key(dist)])
        return task.make_inputs(rng, dist)

    def ref_worker(self, task: Task, timeout: float) -> Worker:
        if self._ref is None or self._ref.dead:
            self._ref = Worker("reference", blas_threads=self.blas_threads)
            self._ref_loaded.clear()
            self._ref_params.clear()
        if task.name not in self._ref_loaded:
            load_reference(self._ref, task, timeout)
            self._ref_loaded.add(task.name)
        return self._ref

    def ensure_ref_params(self, task: Task, pset_id: str, params: dict, timeout: float) -> None:
        if pset_id not in self._ref_params:
            give_params(self.ref_worker(task, timeout), pset_id, params, timeout)
            self._ref_params.add(pset_id)

    def reference(self, task: Task, trial: int, dist: str, kind: str, draw: int,
                  timeout: float) -> tuple[dict, str, dict, np.ndarray]:
        """(inputs, parameter-set id, params, reference output) for one trial; cached per session."""
        pset_id, params = self.params(task, kind, draw)
        key = (task.name, trial, dist, pset_id)
        if key in self._refs:
            self._refs.move_to_end(key)
            x, out = self._refs[key]
            return x, pset_id, params, out
        x = self.inputs(task, trial, dist)
        out = self._reference_output(task, pset_id, params, x, timeout)
        self._refs[key] = (x, out)
        while len(self._refs) > self.cache_size:
            self._refs.popitem(last=False)
        return x, pset_id, params, out

    def _reference_output(self, task: Task, pset_id: str, params: dict, x: dict, timeout: float) -> np.ndarray:
        self.ensure_ref_params(task, pset_id, params, timeout)
        reply = self.ref_worker(task, timeout).call(P.Call(f"ref:{task.name}", pset_id, x, "nan", out_bytes(task)),
                                                    timeout)
        if not isinstance(reply, P.Called) or reply.output is None:
            raise RuntimeError(f"reference for {task.name} failed: {_error(reply)}")
        return reply.output

    def exact_reference(self, task: Task, x: dict, params: dict) -> np.ndarray:
        """The reference computed in float64, for a second opinion on an output that failed only on
        tolerance. Our own reference source, run here in the grading process (it never sees candidate
        code); only asked on failures, so honest runs never pay for it."""
        fn = self._ref64.get(task.name)
        if fn is None:
            fn = self._ref64[task.name] = task.ref_fn()
        wide = {k: v.astype(np.float64) for k, v in x.items()}
        p64 = {k: (v.astype(np.float64) if isinstance(v, np.ndarray) else v) for k, v in params.items()}
        with np.errstate(all="ignore"):
            return np.asarray(fn(wide, p64, None), dtype=np.float64)

    def stream(self, task: Task) -> _TimingStream:
        if task.name not in self._streams:
            self._streams[task.name] = _TimingStream(task, np.random.default_rng([self.seed, name_key(task.name), 3]))
        return self._streams[task.name]

    def close(self) -> None:
        if self._ref is not None:
            self._ref.close()
            self._ref = None


def load_reference(worker: Worker, task: Task, timeout: float) -> None:
    """Load ``task``'s reference into a reference worker, as ``ref:<task>``."""
    reply = worker.call(P.Load(task.ref_src, f"ref:{task.name}"), timeout)
    if not isinstance(reply, P.Loaded):
        raise RuntimeError(f"reference for {task.name} failed to load: {_error(reply)}")


def give_params(worker: Worker, pset_id: str, params: dict, timeout: float) -> None:
    """Hand a reference worker a parameter set (no init: the reference takes params as drawn)."""
    reply = worker.call(P.SetParams(pset_id, params, init=False), timeout)
    if not isinstance(reply, P.ParamsKept):
        raise RuntimeError(f"reference worker refused parameter set {pset_id}: {_error(reply)}")


def _error(reply: P.Reply) -> str:
    return P.error_of(reply, f"unexpected {type(reply).__name__} reply")


def out_bytes(task: Task) -> int:
    return int(np.prod(task.out_shape)) * 4


@once
def default_grader() -> Grader:
    grader = Grader()
    atexit.register(grader.close)
    return grader
