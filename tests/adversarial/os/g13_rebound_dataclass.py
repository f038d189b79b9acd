"""G13 gate evasion, rebound decorator: the gate trusts ``dataclass`` after the file has rebound the name.

The gate decides which class patterns it can read from the name a decorator was imported as (``from
dataclasses import dataclass``), not from what the name holds when the class statement runs. The file
rebinds ``dataclass`` to a function that returns a class built at run time by ``abc.ABCMeta(name, bases,
namespace)`` (three arguments, like ``type``: the ``call`` rule only knows the name ``type``), whose
``__match_args__`` names ``gi_frame`` or ``f_builtins`` from a string in a dict. The gate checks the
annotated field ``a``; the match reads the frame, then the builtins. Public names only; then the payload.
"""

import abc
from dataclasses import dataclass


def dataclass(cls, _names=("gi_frame",)):  # noqa: F811 - the gate still takes this for dataclasses.dataclass
    return abc.ABCMeta(cls.__name__, (), {"__match_args__": _names})


@dataclass
class Gen:
    a: int = 0


def dataclass(cls, _names=("f_builtins",)):  # noqa: F811
    return abc.ABCMeta(cls.__name__, (), {"__match_args__": _names})


@dataclass
class Frame:
    a: int = 0


_TAG = "G13"
