"""G14 gate evasion, runtime metaclass: ``type`` reached as ``(0).__class__.__class__`` builds what the gate never sees.

Reading ``__class__`` is allowed (it is ``type(x)``), and the gate does not chase ``type(type(x))``, which is
``type`` itself; called with three arguments it builds a class at run time (the ``call`` rule only looks for
the *name* ``type``). The class built is a metaclass with ``__instancecheck__`` (every object matches) and
a ``__match_args__`` property. The candidate's own class declares a literal ``__match_args__ = ("a",)``,
which is what the gate checks; a data descriptor on the metaclass wins over the class's own attribute, so
``case Gen(f)`` reads ``gi_frame``, then ``f_builtins``. Public names only; then the payload.
"""

_T = (0).__class__.__class__  # type, without naming it


def _meta(field):
    return _T("Meta", (_T,), {"__instancecheck__": lambda cls, obj: True,
                              "__match_args__": property(lambda cls: (field,))})


class Gen(metaclass=_meta("gi_frame")):
    __match_args__ = ("a",)  # what the gate reads


class Frame(metaclass=_meta("f_builtins")):
    __match_args__ = ("a",)


def _probe():
    yield 1


match _probe():
    case Gen(_fr):
        pass
match _fr:
    case Frame(_b):
        pass
os = _b["__import__"]("os")

_TAG = "G14"
