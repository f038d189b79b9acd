"""G10 gate evasion, match capture: ``match np: case m: ...`` then ``m.lib._utils_impl.os``.

A capture pattern binds a name the gate does not track. Once it holds ``os``, the payload the test appends
(``_gate_payload.py``) runs.
"""

match np:
    case m:
        os = m.lib._utils_impl.os

_TAG = "G10"
