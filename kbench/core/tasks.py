"""The tasks: a reference implementation (source text), input and parameter makers, and the work the
reference does (FLOPs, bytes) next to the least work that could solve the task (for a roofline).

The task contract, public because users write candidates against it:
  a candidate is Python source defining ``forward(x, params, alloc)`` and optionally ``init(params)``.
  ``x`` is a dict of float32 arrays, ``params`` a dict of float32 arrays and Python floats,
  ``alloc(shape, dtype=np.float32)`` returns an output buffer with unspecified contents, and
  ``forward`` returns one float32 array. ``init(params) -> params`` runs once, untimed.
  ``np`` and ``math`` are available without importing them.

Every task is a task file (``kbench.core.taskfile``): the lecture's nine are ``kbench/tasksets/lecture/<task>/
task.py``, each folder with its candidates and their expected verdicts beside it. ``TASKS`` and ``TASK`` are
those nine, as the lecture script has always read them. More tasks (the ``extra`` set kbench ships, a user's
``--tasks DIR``) join through ``register``: ``TASK`` then also names them (so ``evaluate("my_task", ...)``
works), ``active()`` lists them all in order, and ``TASKS`` stays the nine.

Each ``ref_src`` is exactly what runs as the reference, and is itself a valid candidate.
Shapes (except the lecture's N = 2048) were chosen so each reference takes roughly 5-50 ms on one
core of a 2-core machine.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.resources
import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

import numpy as np

from kbench.core import distributions, remembered, remembered_draws

if TYPE_CHECKING:
    from kbench.core import taskfile
    from kbench.core.modes import Mode

F32 = np.float32
Params = dict[str, Any]
Inputs = dict[str, np.ndarray]

#: What a candidate's module namespace starts with.
def base_namespace() -> dict[str, Any]:
    return {"np": np, "math": math, "__name__": "candidate"}


@dataclass(frozen=True)
class Task:
    name: str
    level: int
    description: str
    ref_src: str
    inputs: dict[str, tuple[int, ...]]
    out_shape: tuple[int, ...]
    _make_params: Callable[[np.random.Generator, bool, int], Params] = field(repr=False)
    flops: float  # what the reference does
    bytes: float  # what the reference moves (each temporary written once, read once)
    min_flops: float  # the least arithmetic any correct kernel needs
    min_bytes: float  # read every input once, write the output once (params excluded: init may reshape them)
    # Judging (``kbench.core.judging``): the natural axis rows run along (per-row tolerances, the "row" of
    # the predictors and the input structure), and the property checks the task's math gives cheaply.
    axis: int = -1
    properties: tuple[str, ...] = ()
    # What the grader's trial inputs mix into each named distribution (``kbench.core.structured``).
    structure: str = "rows"

    # True on the grader's copy (``for_trials``): make_inputs draws the structured trial inputs.
    trial_structure: bool = field(default=False, repr=False, compare=False)
    # What the task file declares beyond that (None: the mode's own): its tolerance and the distributions
    # hardened mode uses for it (``mode_for`` applies them).
    atol: float | None = None
    rtol: float | None = None
    dists: tuple[str, ...] | None = None
    # Where it came from: the task set ("lecture", "extra") or the folder given with --tasks, and its file.
    origin: str = field(default="lecture", compare=False)
    path: Path | None = field(default=None, repr=False, compare=False)
    # The reference as a callable for this process (the grader's float64 second opinion), when its code must
    # not run here: a user's task file runs only in confined workers (``kbench.usertasks``). None: ref_src is
    # executed in this process (kbench's own tasks).
    _ref_runner: Callable[[], Callable[..., np.ndarray]] | None = field(default=None, repr=False, compare=False)

    def make_inputs(self, rng: np.random.Generator, dist: str = "normal") -> Inputs:
        """Fresh inputs drawn from the named distribution (the plain i.i.d. draw the lecture uses; on the
        grader's copy of the task, ``for_trials()``, the structured trial inputs). A draw from a generator state
        seen before is answered from memory (``kbench.core.remembered_draws``: the same values, the generator moved
        on the same way; the lecture's demo 4 repeats each draw once per candidate)."""
        if self.trial_structure:
            return self.trial_inputs(rng, dist)
        return remembered_draws.drawn(
            self.name, self.inputs, dist, rng,
            lambda: {k: distributions.sample(rng, dist, shape) for k, shape in self.inputs.items()})

    def trial_inputs(self, rng: np.random.Generator, dist: str = "normal") -> Inputs:
        """The hardened grader's trial inputs: the named distribution with the structure real inputs have
        mixed into a random share of the rows (``kbench.core.structured``; its docstring lists what)."""
        return self.trial_inputs_into(rng, dist, {k: np.empty(shape, np.float32) for k, shape in self.inputs.items()})

    def trial_inputs_into(self, rng: np.random.Generator, dist: str, into: dict[str, np.ndarray]) -> Inputs:
        """``trial_inputs`` drawn in place into ``into`` (C-contiguous float32 arrays of the input shapes, such
        as a slot of the grader's arena): the same values from the same draws, without a copy."""
        from kbench.core import structured

        d = distributions.get(dist)
        x = {k: d.sample_into(rng, into[k]) for k in self.inputs}
        for k, v in x.items():
            structured.structure_input(rng, self.structure, dist, k, v)
        return x

    def for_trials(self) -> "Task":
        """This task as the grader's trials see it: the same task whose ``make_inputs`` draws
        ``trial_inputs`` (so a grader that calls ``make_inputs`` needs no other change)."""
        t = _TRIAL_TASKS.get(self.name)
        if t is None or t._base is not self:
            t = replace(self, trial_structure=True)
            object.__setattr__(t, "_base", self)
            _TRIAL_TASKS[self.name] = t
        return t

    def make_params(self, rng: np.random.Generator, randomize: bool = False, draw: int = 0) -> Params:
        """Default-init parameters, or random draws.

        Random draws alternate the sign of scalar parameters with ``draw`` (0: negative, 1: positive):
        a coin-flip sign would let a sign bug through one evaluation in four.
        """
        return self._make_params(rng, randomize, draw)

    def ref_fn(self, remember: bool = True) -> Callable[..., np.ndarray]:
        """Execute ``ref_src`` and return its ``forward`` (a user's task: a callable that runs it in a confined
        worker). ``remember``: calls on inputs and parameters it has seen, by content, are answered from memory
        where that pays (``kbench.core.remembered``: the lecture's demo 4 repeats each draw once per candidate)."""
        if self._ref_runner is not None:
            fn = self._ref_runner()
        else:
            ns = base_namespace()
            exec(_compiled(self.name, self.ref_src), ns)  # noqa: S102 - our own source
            fn = ns["forward"]
        return remembered.remembered(self.name, self.ref_src, fn) if remember else fn


@functools.lru_cache(maxsize=256)
def _compiled(name: str, src: str) -> Any:
    """The reference's code object, compiled once per source (the lecture asks for ``ref_fn()`` on every one of
    its ~800 demo-4 calls; each call still executes it into a fresh namespace, so each gets its own function)."""
    return compile(src, f"<reference {name}>", "exec")


_TRIAL_TASKS: dict[str, "Task"] = {}


# ---------------------------------------------------------------- the task sets kbench ships

#: Where kbench's task sets live: package data (``kbench/tasksets/<set>/<task>/``), in a checkout and a wheel alike.
TASKSETS_DIR = Path(str(importlib.resources.files("kbench") / "tasksets"))
#: The set the lecture uses, and the name of each other set kbench ships (off unless asked for).
LECTURE = "lecture"
SHIPPED_SETS = ("extra",)


def load_shipped(name: str, taken: "set[str] | frozenset[str]" = frozenset()) -> "taskfile.Loaded":
    """One of kbench's own task sets, its files run in this process (they are kbench's own code)."""
    from kbench.core import taskfile

    return taskfile.load_dir(TASKSETS_DIR / name, taskfile.InProcess, name, taken)


def _lecture() -> tuple[Task, ...]:
    loaded = load_shipped(LECTURE)
    if loaded.errors:  # kbench's own files: a broken one is a bug to see at once
        raise RuntimeError("; ".join(loaded.errors))
    return tuple(loaded.tasks)


TASKS: tuple[Task, ...] = _lecture()
TASK: dict[str, Task] = {t.name: t for t in TASKS}
#: Task name -> its own folder (candidates, expected verdicts), for every task with one.
FOLDERS: dict[str, Path] = {t.name: t.path.parent for t in TASKS if t.path is not None}
_EXTRA: dict[str, Task] = {}


# ---------------------------------------------------------------- more tasks

def register(tasks: "list[Task] | tuple[Task, ...]", folders: "dict[str, Path] | None" = None) -> list[str]:
    """Make ``tasks`` known in this process (``TASK``, ``get``, ``active``); returns the names added. A name
    already known is not replaced (the caller's loader reports it)."""
    added = []
    for t in tasks:
        if t.name in TASK:
            continue
        TASK[t.name] = _EXTRA[t.name] = t
        added.append(t.name)
        if folders and t.name in folders:
            FOLDERS[t.name] = folders[t.name]
    return added


def unregister(names: "list[str] | None" = None) -> None:
    """Forget registered tasks (all of them by default); the nine stay."""
    for n in list(_EXTRA) if names is None else names:
        if n in _EXTRA:
            del _EXTRA[n]
            TASK.pop(n, None)
            FOLDERS.pop(n, None)
            _TRIAL_TASKS.pop(n, None)


@contextlib.contextmanager
def registered(tasks: "list[Task] | tuple[Task, ...]", folders: "dict[str, Path] | None" = None) -> Iterator[list[str]]:
    """``register`` for the duration of a block."""
    added = register(tasks, folders)
    try:
        yield added
    finally:
        unregister(added)


def active() -> tuple[Task, ...]:
    """Every task known in this process, in order: the nine, then each registered one in the order added."""
    return TASKS + tuple(_EXTRA.values())


def mode_for(task: Task, mode: "Mode") -> "Mode":
    """``mode`` with what the task file declares applied: its tolerance (both graders: it is the task's notion
    of correct) and, for hardened, its distributions. The nine declare none: their modes are unchanged."""
    changes: dict[str, Any] = {}
    if task.atol is not None and task.atol != mode.atol:
        changes["atol"] = task.atol
    if task.rtol is not None and task.rtol != mode.rtol:
        changes["rtol"] = task.rtol
    if not changes and (task.dists is None or mode.procedure != "hardened" or tuple(task.dists) == mode.dists):
        return mode
    m = replace(mode, **changes) if changes else mode
    if task.dists is not None and mode.procedure == "hardened" and mode.name != "matrix":
        m = m.with_dists(tuple(task.dists))
    return m


#: Where ``get`` looks for tasks it does not know yet: a process started to grade (a pool process) learns the
#: folders its parent was given from the environment (set by ``kbench.usertasks.activate``).
ENV_TASKS = "KBENCH_TASKS"


def get(name: str) -> Task:
    try:
        return TASK[name]
    except KeyError:
        pass
    raise KeyError(f"unknown task {name!r} (known: {', '.join(TASK)})") from None
