"""The truth: what hardened grading judges against, owned by the grading process.

It holds a secret seed (inputs are drawn from it, never from anything a candidate sees), reference workers
that never run candidate code, the reference outputs they computed (cached per session: every candidate of
a task is judged against the same draws, computed once, on both cores where nothing is being timed), and
one sealed input arena per task (``kbench.sandbox.arena``) where inputs and parameter sets are staged for
every worker that reads them. A candidate sees an input only during the call that uses it.
"""

from __future__ import annotations

import atexit
import hashlib
import math
import os
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kbench.core.once import once
from kbench.core.parallel import every_core
from kbench.core.tasks import Task
from kbench.grading.lanes import timing_cpu
from kbench.sandbox import protocol as P
from kbench.sandbox.arena import InputArena
from kbench.sandbox.server import Worker, WorkerError
from kbench.sandbox.worker import same_allocator_everywhere

#: Input slots per task arena: trial references are computed two at a time; one slot serves a timing pair.
N_SLOTS = 4
#: Parameter regions per task arena: the default set and two random draws.
PSET_REGIONS = ("default:-1", "random:0", "random:1")
#: Reference workers computing trial references in parallel (never more than the machine's cores).
REF_WORKERS = 2
#: Trial inputs and reference outputs kept per session, in bytes.
CACHE_BYTES = 1 << 30


def name_key(name: str) -> int:
    """A seed component derived from a name, not a position: adding a task or a distribution leaves
    every other one's draws unchanged."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little")


def task_key(task: Task) -> tuple:
    """What a trial's inputs and reference output depend on besides the seed, the trial, its distribution and
    its parameter set: the task's name, reference source, shapes and input structure (a user's task file
    edited and loaded again under the same name never meets the outputs of its earlier version)."""
    return (task.name, task.ref_src, tuple(task.inputs.items()), task.out_shape, task.structure)


def out_bytes(task: Task) -> int:
    return int(np.prod(task.out_shape)) * 4


@dataclass
class Staging:
    """One task's arena and what is staged in it."""

    arena: InputArena
    psets: dict[str, tuple[tuple[P.ArraySpec, ...], dict]]  # pset_id -> (array specs, scalars)
    tag: str
    _specs: dict[tuple[str, int], tuple[P.ArraySpec, ...]] = field(default_factory=dict, repr=False)

    def x_specs(self, task: Task, slot: int) -> tuple[P.ArraySpec, ...]:
        key = (task.name, slot)
        specs = self._specs.get(key)
        if specs is None:  # asked once or twice per call: built once (np.prod alone costs ~15 us a call)
            off, out = self.arena.slot_offset(slot), []
            for name, shape in task.inputs.items():
                out.append((name, "<f4", tuple(int(s) for s in shape), off))
                off += -(-math.prod(shape) * 4 // 64) * 64
            specs = self._specs[key] = tuple(out)
        return specs

    def slot_views(self, task: Task, slot: int) -> dict[str, np.ndarray]:
        return {name: self.arena.view(dtype, shape, off) for name, dtype, shape, off in self.x_specs(task, slot)}

    def stage(self, task: Task, slot: int, x: dict[str, np.ndarray]) -> tuple[P.ArraySpec, ...]:
        """Copy ``x`` into ``slot`` (one copy each); the specs a Call names."""
        views = self.slot_views(task, slot)
        for name, v in views.items():
            np.copyto(v, x[name])
        return self.x_specs(task, slot)


@dataclass(frozen=True)
class TrialTruth:
    """One trial's inputs (the grader's own copy) and the reference output computed on them."""

    x: dict[str, np.ndarray]
    out: np.ndarray


def _nbytes(t: TrialTruth) -> int:
    return sum(a.nbytes for a in t.x.values()) + t.out.nbytes


class Grader:
    """Owns the truth: the secret seed, the reference workers, the arenas and the reference outputs.

    It does not grade (``kbench.grading.pipeline.evaluate`` does); one evaluation holds ``lock`` at a time."""

    def __init__(self, seed: int | None = None, blas_threads: int = 1, cache_bytes: int = CACHE_BYTES) -> None:
        self.seed = seed if seed is not None else secrets.randbits(62)
        # The grading process keeps the memory it frees, as the workers do: memory handed back to the OS may go back
        # to a VM's host (free page reporting) and costs ~2.4 ms per MiB to touch again (README, Measured performance).
        same_allocator_everywhere()
        # Candidate and timing-reference workers share one core (the last), so neither gets a cache the
        # other lacks; the grading process and the UI keep the others.
        self.cpu: int | None = timing_cpu()
        self.blas_threads = blas_threads
        self.lock = threading.RLock()
        self._refs: list[Worker] = []
        self._ref_ready: list[dict[str, Any]] = []  # per reference worker: what it has loaded and mapped
        self._truth: OrderedDict[tuple, TrialTruth] = OrderedDict()
        self._truth_bytes = 0
        self.cache_bytes = cache_bytes
        self._params: dict[tuple, dict] = {}
        self._ref64: dict[str, Any] = {}
        self._staging: OrderedDict[str, Staging] = OrderedDict()
        self._timing_draws = 0

    # -- parameters and inputs -----------------------------------------------------------------------

    def params(self, task: Task, kind: str, draw: int) -> tuple[str, dict]:
        key = (task.name, kind, draw)
        if key not in self._params:
            rng = np.random.default_rng([self.seed, name_key(task.name), 2, draw + 1])
            self._params[key] = task.make_params(rng, kind == "random", max(draw, 0))
        return f"{task.name}:{kind}:{draw}", self._params[key]

    def inputs(self, task: Task, trial: int, dist: str, structured: bool = True) -> dict[str, np.ndarray]:
        """One trial's inputs from the secret seed: the named distribution with the structure real inputs have
        mixed into some rows (``Task.trial_inputs``), or plain (``structured=False``: KernelBench's draws)."""
        rng = np.random.default_rng([self.seed, name_key(task.name), 1, trial, name_key(dist)])
        return task.trial_inputs(rng, dist) if structured else task.make_inputs(rng, dist)

    def draw_timing_input(self, task: Task, into: dict[str, np.ndarray], dists: tuple[str, ...] = ("normal",)) -> None:
        """A fresh, independent draw for one timed pair, written into ``into`` (a slot): one of the mode's
        distributions at random, with the trials' structure, so a timed input cannot be told from a checked one
        by its values, and a shortcut wrong on any of them is wrong on some timed calls too (every timed output
        is judged). Each draw has its own seed: nothing a kernel saw before predicts it."""
        self._timing_draws += 1
        rng = np.random.default_rng([self.seed, name_key(task.name), 3, self._timing_draws])
        dist = dists[int(rng.integers(len(dists)))]
        task.trial_inputs_into(rng, dist, into)  # straight into the slot: no fresh arrays, no copy

    # -- staging -------------------------------------------------------------------------------------

    def staging(self, task: Task) -> Staging:
        """The task's arena, with every parameter set staged (made on first use, kept for the next two tasks)."""
        st = self._staging.get(task.name)
        if st is not None:
            self._staging.move_to_end(task.name)
            return st
        slot = sum(-(-int(np.prod(s)) * 4 // 64) * 64 for s in task.inputs.values())
        sets = {}
        for region in PSET_REGIONS:
            kind, draw = region.split(":")
            sets[region] = self.params(task, kind, int(draw))[1]
        pset_bytes = max(sum(-(-v.nbytes // 64) * 64 for v in p.values() if isinstance(v, np.ndarray)) for p in
                         sets.values())
        tag = f"{task.name}-{secrets.token_hex(3)}"
        arena = InputArena(slot, N_SLOTS, pset_bytes, len(PSET_REGIONS), tag)
        psets = {}
        for i, region in enumerate(PSET_REGIONS):
            kind, draw = region.split(":")
            pset_id, p = self.params(task, kind, int(draw))
            off, specs, scalars = arena.pset_offset(i), [], {}
            for name, v in p.items():
                if isinstance(v, np.ndarray):
                    arena.view(v.dtype, v.shape, off)[...] = v
                    specs.append(P.array_spec(name, v, off))
                    off += -(-v.nbytes // 64) * 64
                else:
                    scalars[name] = float(v)
            psets[pset_id] = (tuple(specs), scalars)
        st = Staging(arena, psets, tag)
        self._staging[task.name] = st
        while len(self._staging) > 3:
            _, old = self._staging.popitem(last=False)
            old.arena.close()
        return st

    # -- reference workers ---------------------------------------------------------------------------

    def _reference_worker(self, i: int, task: Task, timeout: float) -> Worker:
        while len(self._refs) <= i:
            self._refs.append(None)  # type: ignore[arg-type]
            self._ref_ready.append({})
        w = self._refs[i]
        if w is None or w.dead:
            w = self._refs[i] = Worker("reference", blas_threads=self.blas_threads)
            self._ref_ready[i] = {"loaded": {}, "arena": None, "psets": set()}
        ready = self._ref_ready[i]
        st = self.staging(task)
        prepare(w, task, st, timeout, ready)
        return w

    def references(self, task: Task, plan: list[tuple[int, str, str, int]], timeout: float) -> list[TrialTruth]:
        """The truth for every trial of ``plan`` (index, dist, param kind, draw): cached ones at once, the
        others computed by up to ``REF_WORKERS`` reference workers side by side."""
        keys = [(self.seed, task_key(task), i, dist, self.params(task, kind, draw)[0]) for i, dist, kind, draw in plan]
        have = {k: self._truth[k] for k in keys if k in self._truth}
        for k in have:
            self._truth.move_to_end(k)  # this call's own hits must not be what its new entries evict
        missing = [(k, p) for k, p in zip(keys, plan) if k not in have]
        if missing:
            have.update(self._compute(task, missing, timeout))
        return [have[k] for k in keys]

    def _compute(self, task: Task, missing: list[tuple[tuple, tuple]], timeout: float) -> dict[tuple, TrialTruth]:
        st = self.staging(task)
        n = max(1, min(REF_WORKERS, len(missing), len(_cpus())))
        workers = [self._reference_worker(i, task, timeout) for i in range(n)]
        queue = list(missing)
        errors: list[str] = []

        def one(wi: int) -> None:
            every_core()  # started by a grading thread kept off the timing core: this one may use both
            while True:
                with lock:
                    if not queue or errors:
                        return
                    key, (i, dist, kind, draw) = queue.pop(0)
                x = self.inputs(task, i, dist)
                slot = wi  # each reference worker has its own slot
                try:
                    specs = st.stage(task, slot, x)
                    pset_id = self.params(task, kind, draw)[0]
                    k = workers[wi].run(P.Call(f"ref:{task.name}", pset_id, specs, "readonly", "pool"), timeout,
                                        ("<f4", task.out_shape), stop=False)
                except WorkerError as e:
                    with lock:
                        errors.append(f"reference worker failed: {e}")
                    return
                if k.output is None:
                    with lock:
                        errors.append(f"reference for {task.name} failed: {P.error_of(k.reply, 'no output')}")
                    return
                with lock:
                    computed[key] = TrialTruth(x, k.output)
                    self._remember(key, computed[key])

        lock = threading.Lock()
        computed: dict[tuple, TrialTruth] = {}
        threads = [threading.Thread(target=one, args=(wi,), daemon=True, name=f"kbench-ref-{wi}") for wi in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise RuntimeError(errors[0])
        return computed

    def _remember(self, key: tuple, truth: TrialTruth) -> None:
        self._truth[key] = truth
        self._truth_bytes += _nbytes(truth)
        while self._truth_bytes > self.cache_bytes and len(self._truth) > 1:
            _, old = self._truth.popitem(last=False)
            self._truth_bytes -= _nbytes(old)

    def exact_reference(self, task: Task, x: dict, params: dict) -> np.ndarray:
        """The reference computed in float64, for a second opinion on an output that failed only on
        tolerance. Our own reference source, run here in the grading process (it never sees candidate
        code); only asked on failures, so honest runs never pay for it."""
        fn = self._ref64.get(task.name)
        if fn is None:
            fn = self._ref64[task.name] = task.ref_fn(remember=False)  # asked on failures only: inputs rarely repeat
        wide = {k: v.astype(np.float64) for k, v in x.items()}
        p64 = {k: (v.astype(np.float64) if isinstance(v, np.ndarray) else v) for k, v in params.items()}
        with np.errstate(all="ignore"):
            return np.asarray(fn(wide, p64, None), dtype=np.float64)

    def close(self) -> None:
        for w in self._refs:
            if w is not None:
                w.close()
        self._refs.clear()
        for st in self._staging.values():
            st.arena.close()
        self._staging.clear()


def _cpus() -> set[int]:
    return os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else {0}


def prepare(worker: Worker, task: Task, st: Staging, timeout: float, ready: dict[str, Any] | None = None,
            psets: tuple[str, ...] | None = None) -> None:
    """Make ``worker`` ready to compute ``task``'s reference: the task's arena mapped, the reference loaded
    as ``ref:<task>``, the parameter sets given (no init: the reference takes params as drawn). ``ready``
    remembers what a long-lived worker already has (the reference by its source: an edited task is loaded again)."""
    ready = ready if ready is not None else {"loaded": {}, "arena": None, "psets": set()}
    if ready.get("arena") != st.tag:
        _expect(worker.call(P.MapArena("inputs", st.arena.size), timeout, fd=st.arena.fd), P.Mapped,
                "could not map the inputs")
        ready["arena"], ready["psets"] = st.tag, set()
    if ready["loaded"].get(task.name) != task.ref_src:  # new, or edited under the same name: (re)load it
        _expect(worker.call(P.Load(task.ref_src, f"ref:{task.name}", trusted=True), timeout), P.Loaded,
                f"reference for {task.name} failed to load")
        ready["loaded"][task.name] = task.ref_src
    for pset_id, (specs, scalars) in st.psets.items():
        if (psets is None or pset_id in psets) and pset_id not in ready["psets"]:
            _expect(worker.call(P.SetParams(pset_id, specs, scalars, init=False), timeout), P.ParamsKept,
                    f"reference worker refused parameter set {pset_id}")
            ready["psets"].add(pset_id)


def _expect(reply: P.Reply, kind: type, what: str) -> None:
    if not isinstance(reply, kind):
        raise RuntimeError(f"{what}: {P.error_of(reply, f'unexpected {type(reply).__name__} reply')}")


@once
def default_grader() -> Grader:
    grader = Grader()
    atexit.register(grader.close)
    return grader

