"""G3 gate evasion, chain rooted at a call: ``next(iter([np])).lib._utils_impl.os``.

The chain's root is the name of the function called (next), which is no module, so neither the private name
nor the escape attribute is flagged. Once it holds ``os``, the payload the test appends (``_gate_payload.py``)
runs.
"""

os = next(iter([np])).lib._utils_impl.os

_TAG = "G3"
