"""Which machine a result was measured on.

Speedups only compare across runs on the same hardware and BLAS, so every stored result carries this
fingerprint. It is gathered once per process (it cannot change while we run) and never raises: a field
that cannot be read is "unknown" rather than a reason to lose a result.
"""

from __future__ import annotations

import copy
import functools
import os
import platform
from typing import Any

UNKNOWN = "unknown"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and value.strip():
                    return value.strip()
    except OSError:
        pass  # not Linux, or /proc is hidden: fall through
    try:
        return platform.processor() or platform.machine() or UNKNOWN
    except Exception:
        return UNKNOWN


def _blas() -> list[dict[str, Any]]:
    try:
        import numpy  # noqa: F401  (loads the BLAS so threadpoolctl can see it)
        from threadpoolctl import threadpool_info

        info = threadpool_info()
    except Exception:
        return []
    keys = ("internal_api", "version", "architecture", "num_threads")
    # OpenMP runtimes show up too; they do not decide matmul speed the way the BLAS does
    libs = [lib for lib in info if lib.get("user_api") == "blas"]
    return [{k: lib.get(k, UNKNOWN) for k in keys} for lib in libs]


def _safe(fn: Any, default: Any = UNKNOWN) -> Any:
    try:
        v = fn()
        return default if v is None or v == "" else v
    except Exception:
        return default


@functools.cache
def _fingerprint() -> dict[str, Any]:
    import sys

    def numpy_version() -> str:
        import numpy

        return numpy.__version__

    return {
        "cpu": _safe(_cpu_model),
        "cores": _safe(os.cpu_count),
        "python": _safe(lambda: sys.version.split()[0]),
        "numpy": _safe(numpy_version),
        "blas": _safe(_blas, []),
        "platform": _safe(platform.platform),
    }


def fingerprint() -> dict[str, Any]:
    """The machine description stored with every result (a copy: callers may not mutate the cache)."""
    return copy.deepcopy(_fingerprint())


def summary(fp: dict[str, Any] | None = None) -> str:
    """One short line, e.g. "AMD EPYC 7B13 / 2 cores / numpy 2.4.6 / openblas 0.3.31"."""
    fp = fingerprint() if fp is None else fp
    parts = [str(fp.get("cpu", UNKNOWN)), f"{fp.get('cores', UNKNOWN)} cores", f"numpy {fp.get('numpy', UNKNOWN)}"]
    for lib in fp.get("blas") or []:
        if isinstance(lib, dict):
            # "0.3.31.188.0" -> "0.3.31": the build suffix is noise in a one-line summary
            version = ".".join(str(lib.get("version", UNKNOWN)).split(".")[:3])
            parts.append(f"{lib.get('internal_api', UNKNOWN)} {version}")
    return " / ".join(parts)
