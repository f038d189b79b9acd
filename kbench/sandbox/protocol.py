"""The worker protocol: typed requests (grading process -> worker) and replies (worker -> grading process),
each declared once, here.

Requests come from the trusted side and travel pickled. Replies are written by a process that may be running
a candidate's native code, so they travel as one small JSON header (at most ``MAX_HEADER_BYTES``) and are
rebuilt by one generic decoder from their declaration: every field's annotation names its wire type
(``Text(n)``, ``Count(hi)``, ``Flag``, ``Names``, ...), which checks the type, bounds the size and writes
out control characters. Nothing a worker sends is unpickled, echoed at length or trusted to be well formed;
anything off is a ``ProtocolError``. A reply carries no data array: outputs stay in the worker's memory
and the grading process reads them itself (``server``).

What a reply *says* is only ever a reason to convict: a worker can report that a call failed or which
output it returned, and the grader judges those bytes; no reply field can make a verdict better.

Frames are a 4-byte big-endian length then the bytes (what ``multiprocessing.Connection`` writes, so the
worker can keep using it); the grading process reads them itself, under a deadline (see ``server``).
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass, fields
from typing import Any, Annotated, get_type_hints

import numpy as np

from kbench.core.text import harmless, one_line, short  # noqa: F401 - re-exported for the worker

MAX_HEADER_BYTES = 64 << 10
MAX_TEXT = 300  # longest message kept from a worker
MAX_NAME = 40  # longest name kept
STDOUT_HEAD = 2000  # longest head of a candidate's printed output kept
MAX_NAMES = 16
MAX_DIMS = 8
MAX_SAMPLES = 100_000
ALLOWED_DTYPES = frozenset(np.dtype(t).str for t in ("f2", "f4", "f8", "i1", "i2", "i4", "i8", "u1", "u2", "u4",
                                                     "u8", "c8", "c16", "?"))


class ProtocolError(Exception):
    """A reply that is not what the protocol allows."""


# ------------------------------------------------------------------------------------------ wire types

class Wire:
    """A field's wire type: ``check`` rebuilds the value from decoded JSON or raises ProtocolError."""

    def check(self, v: Any) -> Any:  # pragma: no cover - every subclass overrides
        raise NotImplementedError

    def plain(self, v: Any) -> Any:
        return list(v) if isinstance(v, tuple) else v


class Text(Wire):
    def __init__(self, n: int = MAX_TEXT, one_line_only: bool = False) -> None:
        self.n, self.one_line_only = n, one_line_only

    def check(self, v: Any) -> str:
        if not isinstance(v, str):
            raise ProtocolError("a text field is not a string")
        cut = v[: 4 * self.n]
        return short(one_line(cut) if self.one_line_only else harmless(cut), self.n)


class Count(Wire):
    def __init__(self, hi: int = 1 << 63) -> None:
        self.hi = hi

    def check(self, v: Any) -> int:
        if type(v) is not int or not 0 <= v <= self.hi:
            raise ProtocolError("an integer field is missing or out of range")
        return v


class Flag(Wire):
    def check(self, v: Any) -> bool:
        if type(v) is not bool:
            raise ProtocolError("a flag is not a boolean")
        return v


class OptNumber(Wire):
    def check(self, v: Any) -> float | None:
        if v is None:
            return None
        if type(v) not in (int, float):
            raise ProtocolError("a number field is not a number")
        return float(v)


class Names(Wire):
    """At most ``MAX_NAMES`` short one-line names (and a "… N more" entry beyond)."""

    def check(self, v: Any) -> tuple[str, ...]:
        if not isinstance(v, list) or len(v) > 10_000:
            raise ProtocolError("a name list is malformed")
        names = tuple(Text(MAX_NAME, True).check(s) for s in v[:MAX_NAMES])
        return names + (f"… {len(v) - MAX_NAMES} more",) if len(v) > MAX_NAMES else names


class Samples(Wire):
    """Non-negative finite times."""

    def check(self, v: Any) -> tuple[float, ...]:
        if not isinstance(v, list) or len(v) > MAX_SAMPLES:
            raise ProtocolError("a sample list is malformed")
        out = tuple(float(x) for x in v if type(x) in (int, float))
        if len(out) != len(v) or not all(math.isfinite(x) and x >= 0 for x in out):
            raise ProtocolError("a sample list holds something other than non-negative times")
        return out


class DType(Wire):
    def check(self, v: Any) -> str:
        if not isinstance(v, str) or v not in ALLOWED_DTYPES:
            raise ProtocolError(f"the worker sent an unsupported dtype {short(one_line(str(v)), 20)}")
        return v


class Shape(Wire):
    def check(self, v: Any) -> tuple[int, ...]:
        if not isinstance(v, list) or len(v) > MAX_DIMS or not all(type(s) is int and 0 <= s < (1 << 40) for s in v):
            raise ProtocolError("the worker sent an unsupported shape")
        return tuple(v)


class Pairs(Wire):
    """A short list of (name, reason) pairs (a layer report)."""

    def check(self, v: Any) -> tuple[tuple[str, str], ...]:
        if not isinstance(v, list) or len(v) > 32:
            raise ProtocolError("a pair list is malformed")
        out = []
        for item in v:
            if not isinstance(item, list) or len(item) != 2:
                raise ProtocolError("a pair list is malformed")
            out.append((Text(MAX_NAME, True).check(item[0]), Text().check(item[1])))
        return tuple(out)

    def plain(self, v: Any) -> Any:
        return [list(p) for p in v]


class Findings(Wire):
    """The static gate's rejections: at most 64 (rule, line, detail) triples."""

    def check(self, v: Any) -> tuple[tuple[str, int, str], ...]:
        if not isinstance(v, list) or len(v) > 64:
            raise ProtocolError("a findings list is malformed")
        out = []
        for item in v:
            if not isinstance(item, list) or len(item) != 3:
                raise ProtocolError("a findings list is malformed")
            out.append((Text(MAX_NAME, True).check(item[0]), Count(1 << 31).check(item[1]),
                        Text(200, True).check(item[2])))
        return tuple(out)

    def plain(self, v: Any) -> Any:
        return [list(t) for t in v]


# ------------------------------------------------------------------------------------------ requests

@dataclass(frozen=True)
class MapArena:
    """Map the shared region whose descriptor follows this request: ``kind`` "inputs" (read-only: sealed
    against writes by anyone but the grader) or "scratch" (the candidate's ``alloc`` pool, read-write)."""
    kind: str
    size: int


@dataclass(frozen=True)
class Gate:
    """Run the static gate on ``src`` (before any candidate code runs in this worker)."""
    src: str


@dataclass(frozen=True)
class Load:
    """Execute ``src`` and keep its ``forward`` as ``name`` (``"cand"``, or ``"ref:<task>"``). ``trusted``: the
    grader's own source (a reference, the calibration kernel), which may run before a candidate worker drops
    its reads; a candidate's never does."""
    src: str
    name: str
    trusted: bool = False


#: Where an array sits in the inputs arena: (name, dtype, shape, byte offset).
ArraySpec = tuple[str, str, tuple[int, ...], int]


@dataclass(frozen=True)
class SetParams:
    """Keep a parameter set: ``arrays`` in the inputs arena, ``scalars`` here; passed through the
    candidate's ``init`` when ``init``; ``writable``: private copies instead of read-only views."""
    pset_id: str
    arrays: tuple[ArraySpec, ...]
    scalars: dict
    init: bool = True
    writable: bool = False


@dataclass(frozen=True)
class Call:
    """One call of ``fn`` on the inputs at ``x`` in the inputs arena.

    ``inputs``: "readonly" (views of the sealed arena) or "copy" (fresh writable copies); ``alloc``: "pool"
    (buffers the grader prepared in the scratch arena: NaN-filled, or holding whatever the grader put there)
    or "cache" (KernelBench's caching allocator, which hands freed blocks back unchanged); ``same_objects``:
    the objects of the previous call with the same specs (a harness reusing one input, as KernelBench's
    timing loop does)."""
    fn: str
    pset_id: str
    x: tuple[ArraySpec, ...]
    inputs: str = "readonly"
    alloc: str = "pool"
    same_objects: bool = False  # hand ``forward`` the very array objects of the last call with these specs


@dataclass(frozen=True)
class Prepare:
    """Keep ``call`` as prepared call number ``slot``: from then on the grader sends it as a frame of a few
    bytes (``fast_call_frame``), and the worker answers an output of ``out_dtype`` and ``out_shape`` with a
    fixed-size reply (``encode_fast_called``). Nothing is pickled or encoded as JSON inside a timed call, so
    kbench's own loop costs little beyond the system calls any loop pays (see ``timing.interleaved.CallCost``).
    A new inputs arena forgets every prepared call, on both sides."""
    slot: int
    call: Call
    out_dtype: str
    out_shape: tuple[int, ...]


@dataclass(frozen=True)
class Ping:
    """An empty call: the round trip's own cost, for calibrating the grader's clock."""


@dataclass(frozen=True)
class ReadStdout:
    """What the candidate printed so far: its first characters (the worker keeps a bounded head)."""


@dataclass(frozen=True)
class NaiveTrial:
    """KernelBench v0's correctness trial, all in the worker (see ``naive_v0``)."""
    pset_id: str
    x: tuple[ArraySpec, ...]
    atol: float
    rtol: float
    alloc: str = "cache"


@dataclass(frozen=True)
class NaiveTime:
    """KernelBench v0's timing loop, all in the worker, on one reused input."""
    pset_id: str
    x: tuple[ArraySpec, ...]
    warmup: int
    min_runs: int
    max_runs: int
    budget_s: float


@dataclass(frozen=True)
class Exit:
    """Stop the worker."""


Request = MapArena | Gate | Load | SetParams | Call | Prepare | Ping | ReadStdout | NaiveTrial | NaiveTime | Exit


# ------------------------------------------------------------------------------------------ replies

@dataclass(frozen=True)
class Started:
    """The first frame (the warden's, or the worker's own where it has none): the worker's pid as the grading
    process sees it."""
    pid: Annotated[int, Count(1 << 31)]


@dataclass(frozen=True)
class Hello:
    """The worker's first frame: the OS layers it applied, and why the others are missing."""
    active: Annotated[tuple[str, ...], Names()]
    missing: Annotated[tuple[tuple[str, str], ...], Pairs()]


@dataclass(frozen=True)
class Failure:
    """The request raised in the worker (``kind``: "error", "memory", "output", "readonly" — a write to sealed
    memory — or "contract" — a breach of the candidate contract, such as init returning something else)."""
    error: Annotated[str, Text()]
    kind: Annotated[str, Text(10, True)] = "error"


@dataclass(frozen=True)
class Mapped:
    """The region is mapped; ``addr``: where, in the worker (a scratch pool's start: outputs named inside it are
    read from the grader's own mapping of the same memory, ``Worker.share_pool``)."""
    addr: Annotated[int, Count()] = 0


@dataclass(frozen=True)
class GateVerdict:
    """The gate's findings; ``error``: the source could not be checked (a syntax error, too deep, too big)."""
    findings: Annotated[tuple[tuple[str, int, str], ...], Findings()]
    error: Annotated[str, Text()] = ""


@dataclass(frozen=True)
class Loaded:
    has_init: Annotated[bool, Flag()]


@dataclass(frozen=True)
class ParamsKept:
    pass


@dataclass(frozen=True)
class Called:
    """What the worker says it returned: the output's type, and where the ndarray sits in its memory.

    The grading process reads ``nbytes`` of that address itself (and judges them); the worker's own kernel
    time is kept only for the view that switches the grader's clock off."""
    out_type: Annotated[str, Text(80, True)]
    out_addr: Annotated[int, Count()] = 0
    out_dtype: Annotated[str, DType()] = "<f4"
    out_shape: Annotated[tuple[int, ...], Shape()] = ()
    kernel_ns: Annotated[int, Count()] = 0
    alloc_used: Annotated[int, Count()] = 0
    recv_ns: Annotated[int, Count()] = 0  # the worker's monotonic clock when the request had arrived ...
    sent_ns: Annotated[int, Count()] = 0  # ... and just before the reply left (trusted from the reference's twin only)

    @property
    def nbytes(self) -> int:
        return math.prod(self.out_shape) * np.dtype(self.out_dtype).itemsize


@dataclass(frozen=True)
class Pong:
    pass


@dataclass(frozen=True)
class Prepared:
    pass


@dataclass(frozen=True)
class NaiveTrialDone:
    ok: Annotated[bool, Flag()]
    message: Annotated[str, Text()]
    max_abs_err: Annotated[float | None, OptNumber()]
    max_rel_err: Annotated[float | None, OptNumber()]
    raised: Annotated[str, Text()]
    kernel_ns: Annotated[int, Count()] = 0  # the reference's and the candidate's calls, by the worker's clock


@dataclass(frozen=True)
class NaiveTimes:
    ref: Annotated[tuple[float, ...], Samples()]
    cand: Annotated[tuple[float, ...], Samples()]
    warmup_ns: Annotated[int, Count()] = 0  # both warm-up loops, by the worker's clock


@dataclass(frozen=True)
class Printed:
    head: Annotated[str, Text(STDOUT_HEAD)]  # control characters escaped
    total: Annotated[int, Count()] = 0  # characters printed in all


Reply = (Started | Hello | Failure | Mapped | GateVerdict | Loaded | ParamsKept | Called | Pong | Prepared
         | NaiveTrialDone | NaiveTimes | Printed)

#: The reply each request expects (a ``Failure`` is always possible).
EXPECTED: dict[type, type] = {MapArena: Mapped, Gate: GateVerdict, Load: Loaded, SetParams: ParamsKept,
                              Call: Called, Prepare: Prepared, Ping: Pong, ReadStdout: Printed, NaiveTrial: NaiveTrialDone,
                              NaiveTime: NaiveTimes}

_REPLIES: tuple[type, ...] = (Started, Hello, Failure, Mapped, GateVerdict, Loaded, ParamsKept, Called, Pong,
                              Prepared, NaiveTrialDone, NaiveTimes, Printed)
#: Each reply's fields with their wire types, read once from the declarations above.
_WIRE: dict[str, tuple[type, tuple[tuple[str, Wire], ...]]] = {
    t.__name__: (t, tuple((f.name, get_type_hints(t, include_extras=True)[f.name].__metadata__[0])
                          for f in fields(t)))
    for t in _REPLIES
}


#: Each reply's JSON keys ("type" and its fields), for one set comparison per decode.
_KEYS: dict[str, frozenset[str]] = {n: frozenset(name for name, _ in wire) | {"type"} for n, (_, wire) in _WIRE.items()}
_ENCODER = json.JSONEncoder(default=str)  # made once: json.dumps(default=...) builds an encoder per call
_JSON = json.JSONDecoder()  # json.loads(bytes) would sniff the encoding first: replies are UTF-8


def error_of(reply: Reply, otherwise: str = "unexpected reply") -> str:
    """What went wrong, for a reply that is not the one a request expected."""
    return reply.error if isinstance(reply, Failure) else otherwise


# ------------------------------------------------------------------------------------------ the codec

def encode(reply: Reply) -> bytes:
    """A reply as the JSON header the worker sends."""
    _, wire = _WIRE[type(reply).__name__]
    body = {"type": type(reply).__name__}
    for name, w in wire:
        body[name] = w.plain(getattr(reply, name))
    return _ENCODER.encode(body).encode()


def decode(raw: bytes, expected: type) -> Reply:
    """Rebuild a reply of type ``expected`` (or a ``Failure``) from a worker's header bytes."""
    if len(raw) > MAX_HEADER_BYTES:
        raise ProtocolError(f"the worker sent a reply header over {MAX_HEADER_BYTES >> 10} KiB")
    try:
        h = _JSON.decode(raw.decode("utf-8"))
    except Exception:  # noqa: BLE001 - RecursionError, UnicodeDecodeError, ValueError: all malformed
        raise ProtocolError("the worker sent a malformed reply") from None
    if not isinstance(h, dict) or not isinstance(h.get("type"), str) or h["type"] not in _WIRE:
        raise ProtocolError("the worker sent a malformed reply")
    kind, wire = _WIRE[h["type"]]
    if kind is not expected and kind is not Failure:
        raise ProtocolError(f"the worker sent an unexpected reply (wanted {expected.__name__})")
    if h.keys() != _KEYS[h["type"]]:
        raise ProtocolError(f"the worker sent a malformed {kind.__name__} reply")
    try:
        return kind(**{name: w.check(h[name]) for name, w in wire})
    except ProtocolError:
        raise
    except Exception:  # noqa: BLE001 - anything else off in any field
        raise ProtocolError(f"the worker sent a malformed {kind.__name__} reply") from None


# ------------------------------------------------------------------------------------------ prepared calls

#: A prepared call's request: the tag (a pickle never starts with a zero byte) and the slot's number.
FAST_CALL = struct.Struct("<cI")
FAST_TAG = b"\x00"
FAST_FRAME_BYTES = 4 + FAST_CALL.size  # with its length
#: Its reply when the output is an array of the prepared dtype and shape: the tag, then the output's address,
#: the kernel's nanoseconds, the alloc pool's bytes used, and the worker's ``recv_ns`` and ``sent_ns``.
FAST_CALLED = struct.Struct("<2s5q")
FAST_CALLED_TAG = b"\x00C"


def fast_call_frame(slot: int) -> bytes:
    """The whole frame (length, then body) of prepared call ``slot``."""
    return struct.pack("!i", FAST_CALL.size) + FAST_CALL.pack(FAST_TAG, slot)


def encode_fast_called(out_addr: int, kernel_ns: int, alloc_used: int, recv_ns: int, sent_ns: int) -> bytes:
    return FAST_CALLED.pack(FAST_CALLED_TAG, out_addr, kernel_ns, alloc_used, recv_ns, sent_ns)


def decode_reply(raw: bytes, expected: type, prepared: Prepare | None = None) -> Reply:
    """``decode``, and for a prepared call its fixed-size reply too (dtype and shape are the grader's own record:
    the reply says only where the output is and the worker's counts, each checked as ``Count`` checks them)."""
    if prepared is None or len(raw) != FAST_CALLED.size or raw[:2] != FAST_CALLED_TAG:
        return decode(raw, expected)
    _, *counts = FAST_CALLED.unpack(raw)
    if min(counts) < 0:
        raise ProtocolError("the worker sent a malformed Called reply")
    addr, kernel_ns, alloc_used, recv_ns, sent_ns = counts
    return Called("numpy.ndarray", addr, prepared.out_dtype, prepared.out_shape, kernel_ns, alloc_used, recv_ns,
                  sent_ns)


def array_spec(name: str, a: np.ndarray, offset: int) -> ArraySpec:
    return (name, a.dtype.str, tuple(int(s) for s in a.shape), int(offset))

