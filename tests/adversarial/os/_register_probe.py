"""The second half of the class-pattern gate evasions G12, G13 and G15, appended by the test after the attack.

Each attack defines ``Gen`` and ``Frame``: classes whose positional pattern, at run time, reads ``gi_frame`` and
``f_builtins`` while the gate reads something else. ``register`` (ABCMeta's) makes a generator and a frame match
them; the two matches then reach the real builtins and import ``os`` for ``_gate_payload.py``.
"""


def _probe():
    yield 1


_g = _probe()
Gen.register(_g.__class__)
match _g:
    case Gen(_fr):
        pass
Frame.register(_fr.__class__)
match _fr:
    case Frame(_b):
        pass
os = _b["__import__"]("os")
