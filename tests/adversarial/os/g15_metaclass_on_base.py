"""G15 gate evasion, metaclass on a base: the matched class has no keywords, its base's metaclass rewrites ``__match_args__``.

After G14 the gate refuses a positional class pattern on a class declared with a ``metaclass=`` keyword, but
it only looks at the matched class itself: a literal ``__match_args__`` is trusted as soon as every base is
the candidate's own, and a base's own ``metaclass=`` is not looked at. Here the metaclass derives from
``abc.ABCMeta`` (an allowed helper) and holds a ``__match_args__`` property; a data descriptor on the
metaclass wins over the class's literal ``("a",)``, which is all the gate reads. The names come from string
concatenation (each piece alone is a harmless attribute name), ``register`` makes a generator and then its
frame instances, and ``case Gen(f)`` reads ``gi_frame``, then ``case Frame(b)`` ``f_builtins``. Public names
only. Once it holds ``os``, the payload the test appends (``_gate_payload.py``) runs.
"""

import abc


class Meta(abc.ABCMeta):
    __match_args__ = property(lambda cls: (cls.field,))  # over the literal below: a data descriptor wins


class GenBase(metaclass=Meta):
    field = "gi_" + "frame"


class Gen(GenBase):  # no keywords, own bases only, a literal __match_args__: the gate reads "a"
    __match_args__ = ("a",)


class FrameBase(metaclass=Meta):
    field = "f_" + "builtins"


class Frame(FrameBase):
    __match_args__ = ("a",)


_TAG = "G15"
