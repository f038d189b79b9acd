"""G2 gate evasion, chain rooted at a list: ``[np][0].lib._utils_impl.os``.

Attribute chains are only judged when their root is a Name bound to a module; a subscript of a list literal
has no such root. Once it holds ``os``, the payload the test appends (``_gate_payload.py``) runs.
"""

os = [np][0].lib._utils_impl.os

_TAG = "G2"
