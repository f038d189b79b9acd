"""G11 gate evasion, class attribute: ``class K: m = np`` then ``K.m.lib._utils_impl.os``.

The chain's root is the class K, which is no tracked module, though one of its attributes is. Once it holds
``os``, the payload the test appends (``_gate_payload.py``) runs.
"""

class K:
    m = np


os = K.m.lib._utils_impl.os

_TAG = "G11"
