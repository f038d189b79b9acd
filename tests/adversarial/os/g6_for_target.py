"""G6 gate evasion, for-loop binding: ``for m in (np,): ...`` then ``m.lib._utils_impl.os``.

Only names bound by import or by a plain assignment of a module are tracked; a for-loop target is not. Once it
holds ``os``, the payload the test appends (``_gate_payload.py``) runs.
"""

for m in (np,):
    os = m.lib._utils_impl.os

_TAG = "G6"
