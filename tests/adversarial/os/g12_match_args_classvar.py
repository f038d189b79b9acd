"""G12 gate evasion, dataclass match shift: a ClassVar field moves ``__match_args__`` past the gate's reading.

The gate reads a positional class pattern on the candidate's own ``@dataclass`` as its annotated names, in
order, and checks those names as attributes. ``dataclass`` leaves ``ClassVar`` fields (and ``KW_ONLY`` and
``InitVar`` ones) out of ``__match_args__``, so with a ``ClassVar`` first, ``case Gen(f)`` reads the *second*
annotated name: ``gi_frame``, which the gate never sees as an attribute. ``metaclass=abc.ABCMeta`` and
``Gen.register(g.__class__)`` make a generator match ``Gen``; the same step on the frame reads
``f_builtins``, and ``f_builtins["__import__"]`` is the real import. Public names only. Once it holds
``os``, the payload the test appends (``_gate_payload.py``) runs.
"""

import abc
from dataclasses import dataclass
from typing import ClassVar


@dataclass
class Gen(metaclass=abc.ABCMeta):
    tag: ClassVar[int] = 0  # the gate counts it; __match_args__ does not
    gi_frame: int = 0


@dataclass
class Frame(metaclass=abc.ABCMeta):
    tag: ClassVar[int] = 0
    f_builtins: int = 0


_TAG = "G12"
