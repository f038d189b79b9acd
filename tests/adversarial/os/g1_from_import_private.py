"""G1 gate evasion, imported name: ``from numpy.lib import _utils_impl``, a private module bound by name.

The gate checks the module an ImportFrom names (numpy: allowed), not the names it imports, and does not track
them as modules. Once it holds ``os``, the payload the test appends (``_gate_payload.py``) runs.
"""

from numpy.lib import _utils_impl as u

os = u.os

_TAG = "G1"
