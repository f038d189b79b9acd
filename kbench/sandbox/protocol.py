"""The worker protocol: typed requests (grading process -> worker) and replies (worker -> grading process).

Requests come from the trusted side and travel pickled. Replies are written by a process that ran
candidate code, so they travel as one small JSON header (at most ``MAX_HEADER_BYTES``) plus at most one
raw array, and are rebuilt here field by field: every value type-checked, every string cut to a short
bound, every name list bounded, sizes computed with Python ints. Nothing a worker sends is unpickled,
echoed at length or trusted to be well formed; anything off is a ``ProtocolError``.

Frames are a 4-byte big-endian length then the bytes (what ``multiprocessing.Connection`` writes, so the
worker can keep using it); the grading process reads them itself, under a deadline (see ``server``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from kbench.core.text import harmless, short  # noqa: F401 - re-exported for the worker

MAX_HEADER_BYTES = 64 << 10
MAX_TEXT = 300  # longest message kept from a worker
MAX_NAME = 40  # longest input/param name kept
STDOUT_HEAD = 2000  # longest head of a candidate's printed output kept
MAX_NAMES = 16
MAX_DIMS = 8
MAX_SAMPLES = 100_000
ALLOWED_DTYPES = frozenset(np.dtype(t).str for t in ("f2", "f4", "f8", "i1", "i2", "i4", "i8", "u1", "u2", "u4",
                                                     "u8", "c8", "c16", "?"))


class ProtocolError(Exception):
    """A reply that is not what the protocol allows."""


# ------------------------------------------------------------------------------------------ requests

@dataclass(frozen=True)
class Load:
    """Execute ``src`` and keep its ``forward`` as ``name`` (``"cand"``, or ``"ref:<task>"``)."""
    src: str
    name: str


@dataclass(frozen=True)
class SetParams:
    """Keep a parameter set under ``pset_id``, passed through the candidate's ``init`` when ``init``."""
    pset_id: str
    params: dict
    init: bool = True


@dataclass(frozen=True)
class Call:
    """One call of ``fn`` on inputs ``x`` (staged in the arena); outputs via the arena when they fit."""
    fn: str
    pset_id: str
    x: dict
    alloc: str = "nan"  # "nan": NaN-filled buffers; "pool": KernelBench's caching allocator
    out_bytes: int = 0


@dataclass(frozen=True)
class VerifyParams:
    """Are the kept parameter sets still as ``init`` left them?"""


@dataclass(frozen=True)
class ReadStdout:
    """What the candidate printed so far: its first characters (the worker keeps a bounded head)."""


@dataclass(frozen=True)
class NaiveTrial:
    """KernelBench v0's correctness trial, all in the worker (see ``naive_v0``)."""
    pset_id: str
    x: dict
    atol: float
    rtol: float
    alloc: str = "pool"  # the candidate's output buffers: KernelBench's caching pool, or "nan"-filled


@dataclass(frozen=True)
class NaiveTime:
    """KernelBench v0's timing loop, all in the worker, on one reused input."""
    pset_id: str
    x: dict
    warmup: int
    min_runs: int
    max_runs: int
    budget_s: float


@dataclass(frozen=True)
class Exit:
    """Stop the worker."""


Request = Load | SetParams | Call | VerifyParams | NaiveTrial | NaiveTime | Exit


@dataclass(frozen=True)
class Staged:
    """Where the grading process put a request's inputs in the arena (replaces ``x`` on the wire)."""
    arena_id: int
    arena_size: int
    x_spec: tuple[tuple[str, str, tuple[int, ...], int], ...]
    out_offset: int
    out_capacity: int


# ------------------------------------------------------------------------------------------ replies

@dataclass(frozen=True)
class Hello:
    """First frame of every worker: the OS layers it applied, and why the others are missing."""
    active: tuple[str, ...]
    missing: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Failure:
    """The request raised in the worker (``kind``: "error", "memory" or "output")."""
    error: str
    kind: str = "error"
    stdout_bytes: int = 0


@dataclass(frozen=True)
class Loaded:
    has_init: bool
    stdout_bytes: int = 0


@dataclass(frozen=True)
class ParamsKept:
    stdout_bytes: int = 0


@dataclass(frozen=True)
class ParamsVerified:
    params_changed: tuple[str, ...]
    stdout_bytes: int = 0


@dataclass(frozen=True)
class OutputSpec:
    dtype: str
    shape: tuple[int, ...]
    in_arena: bool

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * np.dtype(self.dtype).itemsize


@dataclass(frozen=True)
class Called:
    """A call's facts, gathered in the worker and judged by the grading process."""
    t0: int
    t1: int
    threads_started: int
    inputs_changed: tuple[str, ...]
    aliases: tuple[str, ...]
    out_type: str  # "numpy.ndarray" when ``output`` is set
    output_spec: OutputSpec | None
    stdout_bytes: int = 0
    output: np.ndarray | None = field(default=None, compare=False)  # filled in by the server
    t_send: int = 0  # the grading process's clock around the round trip (filled in by the server)
    t_recv: int = 0


@dataclass(frozen=True)
class NaiveTrialDone:
    ok: bool
    message: str
    max_abs_err: float | None
    max_rel_err: float | None
    raised: str
    stdout_bytes: int = 0


@dataclass(frozen=True)
class NaiveTimes:
    ref: tuple[float, ...]
    cand: tuple[float, ...]
    stdout_bytes: int = 0


@dataclass(frozen=True)
class Printed:
    head: str  # control characters escaped, at most STDOUT_HEAD characters
    stdout_bytes: int = 0


Reply = Hello | Failure | Loaded | ParamsKept | ParamsVerified | Called | NaiveTrialDone | NaiveTimes | Printed

def error_of(reply: Reply, otherwise: str = "unexpected reply") -> str:
    """What went wrong, for a reply that is not the one a request expected: a ``Failure``'s error, else
    ``otherwise``."""
    return reply.error if isinstance(reply, Failure) else otherwise


#: The reply each request expects (a ``Failure`` is always possible).
EXPECTED: dict[type, type] = {Load: Loaded, SetParams: ParamsKept, Call: Called, VerifyParams: ParamsVerified,
                              NaiveTrial: NaiveTrialDone, NaiveTime: NaiveTimes, ReadStdout: Printed}

_REPLY_TYPES: dict[str, type] = {t.__name__: t for t in (Hello, Failure, Loaded, ParamsKept, ParamsVerified,
                                                          Called, NaiveTrialDone, NaiveTimes, Printed)}


# ------------------------------------------------------------------------------------------ worker side

def _plain(v: Any) -> Any:
    if isinstance(v, OutputSpec):
        return {"dtype": v.dtype, "shape": list(v.shape), "in_arena": v.in_arena}
    if isinstance(v, tuple):
        return [_plain(i) for i in v]
    return v


def encode(reply: Reply) -> bytes:
    """A reply as the JSON header the worker sends (the output array, if any, follows as raw bytes)."""
    body = {f.name: _plain(getattr(reply, f.name)) for f in fields(reply)
            if f.name not in ("output", "t_send", "t_recv")}
    return json.dumps({"type": type(reply).__name__, **body}, default=str).encode()


# ------------------------------------------------------------------------------------------ grading side

def _text(v: Any, n: int = MAX_TEXT) -> str:
    if not isinstance(v, str):
        raise ProtocolError("a text field is not a string")
    return short(harmless(v[: 4 * n]), n)


def _int(v: Any, lo: int = 0, hi: int = 1 << 63) -> int:
    if type(v) is not int or not lo <= v <= hi:
        raise ProtocolError("an integer field is missing or out of range")
    return v


def _bool(v: Any) -> bool:
    if type(v) is not bool:
        raise ProtocolError("a flag is not a boolean")
    return v


def _opt_float(v: Any) -> float | None:
    if v is None:
        return None
    if type(v) not in (int, float):
        raise ProtocolError("a number field is not a number")
    return float(v)


def _names(v: Any) -> tuple[str, ...]:
    if not isinstance(v, list) or len(v) > 10_000:
        raise ProtocolError("a name list is malformed")
    names = tuple(_text(s, MAX_NAME) for s in v[:MAX_NAMES])
    return names + (f"… {len(v) - MAX_NAMES} more",) if len(v) > MAX_NAMES else names


def _floats(v: Any) -> tuple[float, ...]:
    if not isinstance(v, list) or len(v) > MAX_SAMPLES:
        raise ProtocolError("a sample list is malformed")
    out = tuple(float(x) for x in v if type(x) in (int, float))
    if len(out) != len(v) or not all(math.isfinite(x) and x >= 0 for x in out):
        raise ProtocolError("a sample list holds something other than non-negative times")
    return out


def _output_spec(v: Any) -> OutputSpec | None:
    if v is None:
        return None
    if not isinstance(v, dict):
        raise ProtocolError("an output description is malformed")
    dtype = v.get("dtype")
    shape = v.get("shape")
    if not isinstance(dtype, str) or dtype not in ALLOWED_DTYPES:
        raise ProtocolError(f"the worker sent an output of unsupported dtype {short(dtype, 20)}")
    if not isinstance(shape, list) or len(shape) > MAX_DIMS or \
            not all(type(s) is int and 0 <= s < (1 << 40) for s in shape):
        raise ProtocolError("the worker sent an output of unsupported shape")
    return OutputSpec(dtype, tuple(shape), _bool(v.get("in_arena", False)))


def _layers(v: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(v, list) or len(v) > 16:
        raise ProtocolError("a layer list is malformed")
    out = []
    for item in v:
        if not isinstance(item, list) or len(item) != 2:
            raise ProtocolError("a layer list is malformed")
        out.append((_text(item[0], MAX_NAME), _text(item[1])))
    return tuple(out)


_PARSERS: dict[type, Any] = {
    Hello: lambda h: Hello(tuple(_text(s, MAX_NAME) for s in _names(h["active"])), _layers(h["missing"])),
    Failure: lambda h: Failure(_text(h["error"]), _text(h["kind"], 10), _int(h["stdout_bytes"])),
    Loaded: lambda h: Loaded(_bool(h["has_init"]), _int(h["stdout_bytes"])),
    ParamsKept: lambda h: ParamsKept(_int(h["stdout_bytes"])),
    ParamsVerified: lambda h: ParamsVerified(_names(h["params_changed"]), _int(h["stdout_bytes"])),
    Called: lambda h: Called(_int(h["t0"]), _int(h["t1"]), _int(h["threads_started"], 0, 1 << 20),
                             _names(h["inputs_changed"]), _names(h["aliases"]), _text(h["out_type"], 80),
                             _output_spec(h["output_spec"]), _int(h["stdout_bytes"])),
    NaiveTrialDone: lambda h: NaiveTrialDone(_bool(h["ok"]), _text(h["message"]), _opt_float(h["max_abs_err"]),
                                             _opt_float(h["max_rel_err"]), _text(h["raised"]),
                                             _int(h["stdout_bytes"])),
    NaiveTimes: lambda h: NaiveTimes(_floats(h["ref"]), _floats(h["cand"]), _int(h["stdout_bytes"])),
    Printed: lambda h: Printed(_text(h["head"], STDOUT_HEAD), _int(h["stdout_bytes"])),
}


def decode(raw: bytes, expected: type) -> Reply:
    """Rebuild a reply of type ``expected`` (or a ``Failure``) from a worker's header bytes."""
    if len(raw) > MAX_HEADER_BYTES:
        raise ProtocolError(f"the worker sent a reply header over {MAX_HEADER_BYTES >> 10} KiB")
    try:
        h = json.loads(raw)
    except Exception:  # noqa: BLE001 - RecursionError, UnicodeDecodeError, ValueError: all malformed
        raise ProtocolError("the worker sent a malformed reply") from None
    if not isinstance(h, dict):
        raise ProtocolError("the worker sent a malformed reply")
    kind = _REPLY_TYPES.get(h.get("type")) if isinstance(h.get("type"), str) else None
    if kind is not expected and kind is not Failure:
        raise ProtocolError(f"the worker sent an unexpected reply (wanted {expected.__name__})")
    try:
        return _PARSERS[kind](h)
    except ProtocolError:
        raise
    except Exception:  # noqa: BLE001 - a missing key or a wrong type anywhere
        raise ProtocolError(f"the worker sent a malformed {kind.__name__} reply") from None
