"""A task's plain input draws (``Task.make_inputs``) remembered by the state of the generator that made them.

Why: the lecture's demo 4 seeds its generator afresh for each candidate (``default_rng(1)``), so every candidate
of a task draws the same twenty inputs: three draws in four repeat one already made, and a draw (~2 ns a value)
costs about what the memory-bound kernels it feeds do (softmax, layer norm: 2-4 ns a value).

How: a draw's key is the task, its input shapes, the distribution and the generator's whole state: the bit
generator's state and its seed sequence (entropy, spawn key, pool size and children spawned: a large draw spawns
children to fill its halves in parallel). Under a key seen before, the caller gets copies of the arrays drawn then
(it owns them, as it owns a fresh draw, and may write into them) and its generator is moved to the state that draw
left it in: the bit generator's state set, the seed sequence's children spawned again. The caller cannot tell a
remembered draw from a fresh one: the same values, the same generator afterwards. A copy costs ~0.3 ns a value.

Only numpy's ``Generator`` over one of numpy's bit generators and a ``SeedSequence`` is remembered (another state
could not be named whole); anything else is drawn fresh. The grader's own draws never come here: each trial and
each timed input has a seed of its own (``kbench.grading.truth``), so none repeats. A task whose draws miss
``GIVE_UP`` times running stops being remembered (a caller that never repeats a seed stops paying for the copy).
At most ``budget()`` bytes are kept: other tasks' draws go first; a task's own earlier draws are kept over its new
ones (a caller that repeats a sequence asks for its beginning again first).
"""

from __future__ import annotations

import pickle
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from kbench.core import remembered

#: Draws missed in a row, without a hit, after which a task's draws stop being remembered.
GIVE_UP = 64
#: The arrays kept, in bytes, at most (and at most 1/16 of the machine's memory). Demo 4 repeats 425 MiB of draws
#: (the softmax and layer-norm candidates of its first table take turns) and then, task by task, up to 320 MiB (the
#: diagonal task's twenty 2048x2048 draws).
MAX_BYTES = 512 << 20


def budget() -> int:
    return remembered.share_of_memory(MAX_BYTES)


_BIT_GENERATORS = (np.random.PCG64, np.random.PCG64DXSM, np.random.Philox, np.random.SFC64, np.random.MT19937)

Arrays = dict[str, np.ndarray]


@dataclass
class Stats:
    """Per task: draws answered from memory, drawn afresh."""

    hits: int = 0
    drawn: int = 0


@dataclass
class _Draw:
    arrays: Arrays
    after: dict  # the bit generator's state after the draw
    children_after: int  # the seed sequence's children spawned after the draw
    nbytes: int


@dataclass
class _TaskDraws:
    entries: OrderedDict[bytes, _Draw] = field(default_factory=OrderedDict)
    misses_running: int = 0
    given_up: bool = False
    held: int = 0  # bytes of its entries
    stats: Stats = field(default_factory=Stats)


_lock = threading.Lock()
_tasks: dict[str, _TaskDraws] = {}


def stats() -> dict[str, Stats]:
    """What each task's draws did so far, by task name."""
    with _lock:
        return {name: t.stats for name, t in _tasks.items()}


def forget() -> None:
    """Drop every remembered draw and verdict."""
    with _lock:
        _tasks.clear()


def held() -> int:
    """The bytes of draws kept, over every task."""
    return sum(t.held for t in list(_tasks.values()))


def _key(task: str, shapes: dict[str, tuple[int, ...]], dist: str, rng: object) -> bytes | None:
    """The draw's key, or None when the generator's state cannot be named whole."""
    if type(rng) is not np.random.Generator:
        return None
    bg = rng.bit_generator
    seq = getattr(bg, "seed_seq", None)
    if type(bg) not in _BIT_GENERATORS or type(seq) is not np.random.SeedSequence:
        return None
    what = (task, sorted(shapes.items()), dist, type(bg).__name__, bg.state,
            seq.entropy, seq.spawn_key, seq.pool_size, seq.n_children_spawned)
    return pickle.dumps(what, protocol=pickle.HIGHEST_PROTOCOL)


def drawn(task: str, shapes: dict[str, tuple[int, ...]], dist: str, rng: np.random.Generator,
          draw: Callable[[], Arrays]) -> Arrays:
    """``draw()`` (which draws ``task``'s inputs of ``shapes`` from ``dist`` with ``rng``), or copies of what it
    gave before from the same generator state, with ``rng`` moved on as ``draw()`` would have moved it."""
    key = _key(task, shapes, dist, rng)
    hit = None
    with _lock:
        mine = _tasks.pop(task, None) or _TaskDraws()
        _tasks[task] = mine  # the most recently drawing task last
        if key is None or mine.given_up:
            mine.stats.drawn += 1
            key = None
        else:
            hit = mine.entries.get(key)
            if hit is not None:
                mine.stats.hits += 1
                mine.misses_running = 0
    if key is None:
        return draw()
    if hit is not None:
        out = {k: v.copy() for k, v in hit.arrays.items()}
        bg = rng.bit_generator
        bg.state = hit.after
        seq = bg.seed_seq
        if hit.children_after > seq.n_children_spawned:
            seq.spawn(hit.children_after - seq.n_children_spawned)
        return out
    out = draw()
    bg = rng.bit_generator
    after, children_after = bg.state, bg.seed_seq.n_children_spawned
    nbytes = sum(v.nbytes for v in out.values())
    # copied outside the lock (16 MiB: ~1.5 ms), unless its own earlier draws leave it no room
    kept = {k: np.array(v, copy=True, order="C") for k, v in out.items()} \
        if mine.held + nbytes <= budget() else None
    with _lock:
        mine.stats.drawn += 1
        mine.misses_running += 1
        if mine.misses_running >= GIVE_UP:
            mine.given_up = True
            _drop(mine, len(mine.entries))
        elif kept is not None and key not in mine.entries and _room(mine, nbytes):
            mine.entries[key] = _Draw(kept, after, children_after, nbytes)
            mine.held += nbytes
    return out


def _room(mine: _TaskDraws, nbytes: int) -> bool:
    """Make room for ``nbytes`` more (under ``_lock``) from other tasks' draws; False when there is none."""
    cap = budget()
    if nbytes > cap:
        return False
    for other in list(_tasks.values()):  # the least recently drawing task first
        if held() + nbytes <= cap:
            break
        if other is not mine:
            _drop(other, len(other.entries))
    return held() + nbytes <= cap


def _drop(t: _TaskDraws, n: int) -> None:
    for _ in range(n):
        _, old = t.entries.popitem(last=False)
        t.held -= old.nbytes


__all__ = ["GIVE_UP", "MAX_BYTES", "budget", "Stats", "drawn", "forget", "held", "stats"]
