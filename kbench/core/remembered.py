"""A task's reference outputs remembered by the content of their inputs, for callers that run the reference in
this process on the same inputs again (``Task.ref_fn()``).

Why: the lecture's demo 4 grades every candidate of a task on the same 20 draws (its generator is seeded afresh
for each candidate), so three reference calls in four repeat one already made; the diagonal task's reference alone
is a 2048^3 GEMM (~0.1 s a call on one core).

How: a call's key is the BLAKE3 hash of every input and parameter array's bytes, with its name, dtype and shape, and the
type and value of every scalar parameter. An output is reused only under the same key, so a candidate that changed
its input in place before the reference ran gets a fresh computation, and any parameter that is neither an array
nor a number turns the memory off for that call. A hit returns a copy: the caller owns its output, as it owns a
fresh one. It pays only where the reference costs more than reading its inputs: a task's first calls measure both
(BLAKE3 runs at ~7 GB/s a thread here, SHA-256 at ~1.6 with the CPU's SHA instructions: 2.4 against 10.3 ms for the
diagonal task's 16 MiB; a cryptographic hash, so no input can be made to collide with another), and a reference under
``WORTH`` times its hash is never remembered, nor one that misses ``GIVE_UP`` times running
(a caller whose inputs never repeat stops paying for the hash). At most ``budget()`` bytes of outputs are kept,
the least recently used dropped first. ``stats`` says what happened (benchmarks split the time with it).
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

import blake3
import numpy as np

from kbench.core import parallel

#: A reference is remembered when one call costs at least this many times hashing its inputs.
WORTH = 4.0
#: Misses in a row, without a hit, after which a reference stops being hashed.
GIVE_UP = 64
#: Arrays at least this large are hashed in two halves, one per pass thread.
SPLIT_BYTES = 1 << 20
#: The outputs kept, in bytes, at most (and at most 1/16 of the machine's memory).
MAX_BYTES = 384 << 20


def share_of_memory(max_bytes: int) -> int:
    """``max_bytes``, or 1/16 of the machine's memory where that is less (what a memory of this module may keep)."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        physical = 8 << 30
    return min(max_bytes, physical // 16)


def budget() -> int:
    return share_of_memory(MAX_BYTES)


@dataclass
class Stats:
    """Per reference: calls answered from memory, computed, and the seconds spent hashing and copying (kbench's
    own work) and computing (the reference's)."""

    hits: int = 0
    computed: int = 0
    own_s: float = 0.0
    compute_s: float = 0.0


class _Memory:
    """One reference's remembered outputs and its verdict on whether remembering pays."""

    def __init__(self) -> None:
        self.entries: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self.worth: bool | None = None  # undecided until its first computed call
        self.misses_running = 0
        self.stats = Stats()


_lock = threading.Lock()
_memories: dict[tuple[str, int], _Memory] = {}
_held = [0]  # bytes of outputs held across every reference


def stats() -> dict[str, Stats]:
    """What each remembered reference did so far, by task name."""
    with _lock:
        return {name: m.stats for (name, _), m in _memories.items()}


def forget() -> None:
    """Drop every remembered output and verdict."""
    with _lock:
        for m in _memories.values():
            m.entries.clear()
        _memories.clear()
        _held[0] = 0


def _key(x: Any, params: Any) -> bytes | None:
    """The content key of one call, or None when some argument has no content this can name. The arrays' bytes
    are hashed in parts on the pass threads (blake3 lets go of the GIL), each part's digest into the key."""
    h = blake3.blake3()
    parts: list[memoryview] = []
    for group, d in ((b"x", x), (b"p", params)):
        if not isinstance(d, dict):
            return None
        h.update(group)
        for name in sorted(d, key=str):
            v = d[name]
            h.update(repr(str(name)).encode())
            if type(v) is np.ndarray:
                if v.dtype.hasobject:  # its bytes are pointers, not content
                    return None
                h.update(f"{v.dtype.str}{v.shape}|{len(parts)}".encode())
                raw = memoryview(np.ascontiguousarray(v)).cast("B")
                cut = len(raw) // 2 if len(raw) >= SPLIT_BYTES else len(raw)
                parts += [raw[:cut], raw[cut:]]
            elif isinstance(v, (bool, int, float, np.generic)) and not isinstance(v, np.void):
                h.update(f"{type(v).__name__}:{v!r}".encode())
            else:
                return None
    halves = [parts[0::2], parts[1::2]]

    def hashed(side: list[memoryview]) -> list[bytes]:
        return [blake3.blake3(p).digest() for p in side]

    if sum(len(p) for p in parts) >= SPLIT_BYTES:
        digests = parallel.map_(hashed, halves)
    else:  # small: a thread hand-off would cost more than the hash (and, on a busy machine, far more)
        digests = [hashed(side) for side in halves]
    for digest in digests:
        h.update(b"".join(digest))
    return h.digest()


def remembered(name: str, src: str, forward: Callable[..., Any]) -> Callable[..., Any]:
    """``forward`` of reference ``src`` (task ``name``), answering calls whose inputs it has seen from memory."""
    with _lock:
        memory = _memories.setdefault((name, hash(src)), _Memory())

    def call(x: Any, params: Any, alloc: Any = None) -> Any:
        if memory.worth is False:
            t = time.perf_counter()
            out = forward(x, params, alloc)
            with _lock:
                memory.stats.computed += 1
                memory.stats.compute_s += time.perf_counter() - t
            return out
        t0 = time.perf_counter()
        key = _key(x, params)
        t1 = time.perf_counter()
        if key is not None:
            with _lock:
                hit = memory.entries.get(key)
                if hit is not None:
                    memory.entries.move_to_end(key)
            if hit is not None:
                out = hit.copy()
                with _lock:
                    memory.stats.hits += 1
                    memory.stats.own_s += time.perf_counter() - t0
                    memory.misses_running = 0
                return out
        out = forward(x, params, alloc)
        t2 = time.perf_counter()
        with _lock:
            memory.stats.computed += 1
            memory.stats.compute_s += t2 - t1
            memory.stats.own_s += t1 - t0
            if memory.worth is None:
                memory.worth = (t2 - t1) >= WORTH * (t1 - t0)
            memory.misses_running += 1
            if memory.misses_running >= GIVE_UP:
                memory.worth = False
            if memory.worth is False:
                _drop(memory)
            elif key is not None and type(out) is np.ndarray:
                _keep(memory, key, out)
        return out

    call.__doc__ = getattr(forward, "__doc__", None)
    return call


def _keep(memory: _Memory, key: bytes, out: np.ndarray) -> None:
    """Keep a copy of ``out`` (under ``_lock``), dropping the least recently used outputs beyond the budget."""
    cap = budget()
    if out.nbytes > cap // 4:
        return
    t = time.perf_counter()
    memory.entries[key] = out.copy()
    _held[0] += out.nbytes
    while _held[0] > cap:  # other references' outputs go first: the caller has moved on from them
        others = [m for m in _memories.values() if m.entries and m is not memory]
        victim = others[0] if others else memory
        if not victim.entries:
            break
        _drop_oldest(victim)
    memory.stats.own_s += time.perf_counter() - t


def _drop_oldest(memory: _Memory) -> None:
    _, old = memory.entries.popitem(last=False)
    _held[0] -= old.nbytes


def _drop(memory: _Memory) -> None:
    while memory.entries:
        _drop_oldest(memory)


__all__ = ["GIVE_UP", "MAX_BYTES", "Stats", "WORTH", "budget", "forget", "remembered", "share_of_memory", "stats"]
