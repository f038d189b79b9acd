"""G7 gate evasion, walrus binding: ``(m := np)`` then ``m.lib._utils_impl.os``.

A name bound by an assignment expression is not tracked as a module. Once it holds ``os``, the payload the
test appends (``_gate_payload.py``) runs.
"""

if (m := np) is not None:
    os = m.lib._utils_impl.os

_TAG = "G7"
