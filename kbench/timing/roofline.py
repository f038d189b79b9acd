"""This machine's roofline: streaming bandwidth and float32 GEMM rate, measured once and cached.

A task states the least work any correct kernel must do (``min_flops``, ``min_bytes``); with the roof
that gives a floor on its time. A hardened result faster than a quarter of that floor is physically
implausible (the slack covers caches and a roof measured with simple kernels) and is rejected with the
arithmetic in its message.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np

from kbench.core.defences import IMPLAUSIBLE_FACTOR, implausible_calls  # one rule for runs and derived views

if TYPE_CHECKING:
    from kbench.core.tasks import Task



@dataclass(frozen=True)
class Roof:
    gbs: float  # streaming copy from memory (64 MiB), bytes read + written per second / 1e9
    gflops: float  # float32 GEMM, 1 BLAS thread
    measured_at: str
    hot_gbs: float  # the same copy on 4 MiB that sits in cache

    def floor_s(self, min_flops: float, min_bytes: float) -> float:
        """The least time the work can take. Bytes count at the in-cache rate: the grader stages a call's
        inputs just before it, so a task of a few MB reads them from cache (L2_matmul_sum/matvec reached
        25 GB/s on a machine whose memory copies at 20; a memory-rate floor measured under load rejected it)."""
        return max(min_flops / (self.gflops * 1e9), min_bytes / (max(self.hot_gbs, self.gbs) * 1e9))


def _cache_path() -> Path:
    base = os.environ.get("KBENCH_DATA_DIR")
    if not base:
        from platformdirs import user_data_dir

        base = user_data_dir("kbench")
    return Path(base) / "roofline.json"


def measure() -> Roof:
    """Best of a few runs: a roof is what the machine *can* do."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        a = np.ones(16 << 20, np.float32)  # 64 MiB, far beyond the last-level cache
        b = np.empty_like(a)
        copy = min(_time(lambda: np.copyto(b, a)) for _ in range(8))
        h = np.ones(1 << 20, np.float32)  # 4 MiB: in cache after the first pass
        g = np.empty_like(h)
        hot = min(_time(lambda: np.copyto(g, h)) for _ in range(30))
        m = np.ones((1024, 1024), np.float32)
        gemm = min(_time(lambda: m @ m) for _ in range(6))
    return Roof(gbs=2 * a.nbytes / copy / 1e9, gflops=2 * 1024**3 / gemm / 1e9,
                measured_at=time.strftime("%Y-%m-%dT%H:%M:%S"), hot_gbs=2 * h.nbytes / hot / 1e9)


def _time(fn) -> float:  # noqa: ANN001
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


_cached: Roof | None = None


def get(remeasure: bool = False) -> Roof:
    """The cached roof, measuring (and storing) it on first use or when asked."""
    global _cached
    if _cached is not None and not remeasure:
        return _cached
    path = _cache_path()
    if not remeasure:
        try:
            _cached = Roof(**json.loads(path.read_text()))
            return _cached
        except (OSError, ValueError, TypeError):
            pass
    _cached = measure()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(_cached)))
    except OSError:
        pass  # an unwritable data directory only costs a re-measurement next time
    return _cached


def implausibility(task: "Task", t_cand: float, cand_samples: "Sequence[float]" = ()) -> str | None:
    """Why a candidate timed at ``t_cand`` seconds (median of ``cand_samples``, its counted calls) is physically
    impossible for ``task`` on this machine, or None (``defences.implausible_calls``: the median, or a share of
    the calls, under a quarter of the floor)."""
    roof = get()
    floor = roof.floor_s(task.min_flops, task.min_bytes)
    below = implausible_calls(t_cand, cand_samples, floor)
    if below is None:
        return None
    claim = f"claims {t_cand * 1e3:.3f} ms" if t_cand < IMPLAUSIBLE_FACTOR * floor else \
        (f"took under {IMPLAUSIBLE_FACTOR * floor * 1e3:.3f} ms on {below} of {len(cand_samples)} timed calls "
         f"(fastest {min(cand_samples) * 1e3:.4f} ms, median {t_cand * 1e3:.3f} ms)")
    return (f"rejected: implausible: the least work for {task.name} is {task.min_bytes / 1e6:.1f} MB "
            f"and {task.min_flops / 1e9:.2f} GFLOP; at this machine's {max(roof.hot_gbs, roof.gbs):.1f} GB/s "
            "(in cache) and "
            f"{roof.gflops:.1f} GFLOP/s that takes at least {floor * 1e3:.3f} ms, but the candidate {claim}")
