"""G9 gate evasion, tuple unpacking: ``m, k = np, 0`` then ``m.lib._utils_impl.os``.

A plain assignment is tracked only when its target is a single name. Once it holds ``os``, the payload the
test appends (``_gate_payload.py``) runs.
"""

m, k = np, 0
os = m.lib._utils_impl.os

_TAG = "G9"
