"""G8 gate evasion, lambda default: ``(lambda m=np: m.lib._utils_impl.os)()``.

A parameter whose default is a module is not tracked, inside a lambda or a def. Once it holds ``os``, the
payload the test appends (``_gate_payload.py``) runs.
"""

os = (lambda m=np: m.lib._utils_impl.os)()

_TAG = "G8"
