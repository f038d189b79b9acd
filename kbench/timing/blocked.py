"""Naive timing, as KernelBench v0 does it: one reused input, warm-up, all reference runs, then all
candidate runs, in the candidate's own process with its clock. The samples come from the worker (the
``naive_v0`` handlers); this module turns them into a ``Timing`` by the policy's statistic.

Its interval is bootstrapped from each arm independently, which is all blocked samples allow.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from kbench.core.modes import TimingPolicy
from kbench.core.results import Timing
from kbench.timing.stats import contains_one, speedup_ci, speedup_point, summary, with_run_to_run


def describe(policy: TimingPolicy) -> str:
    return (f"timing: {policy.warmup} warm-up runs, then all reference runs, then all candidate runs "
            f"on one reused input ({policy.statistic})")


def from_samples(policy: TimingPolicy, ref: Sequence[float], cand: Sequence[float], rng: np.random.Generator,
                 blas_threads: int | None) -> Timing:
    s = speedup_point(ref, cand, policy.statistic)
    ci = with_run_to_run(speedup_ci(ref, cand, paired=False, statistic=policy.statistic, rng=rng), s)
    return Timing(method="blocked", t_ref=summary(ref, policy.statistic), t_cand=summary(cand, policy.statistic),
                  speedup=s, speedup_ci=ci, n_samples=min(len(ref), len(cand)), noise=contains_one(ci),
                  blas_threads=blas_threads, ref_samples=list(ref), cand_samples=list(cand))
