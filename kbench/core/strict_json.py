"""Strict JSON for everything kbench writes for other programs (``--json``, exports).

``json`` writes ``Infinity``/``NaN`` for non-finite floats (an infinite error, say), which jq,
``JSON.parse`` and every strict parser reject; here they become ``null``.
"""

from __future__ import annotations

import json
import math
from typing import Any


def finite(obj: Any) -> Any:
    """``obj`` with every non-finite float replaced by None (tuples become lists, keys strings)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


def dumps(obj: Any, **kw: Any) -> str:
    """Strict JSON (raises on anything not representable rather than writing non-JSON)."""
    return json.dumps(finite(obj), allow_nan=False, default=str, **kw)
