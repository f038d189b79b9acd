"""kbench: a miniature KernelBench on numpy — tasks, candidate kernels, a naive and a hardened grader,
and fast_p — made to be explored. This package is headless: it never imports a UI toolkit."""

from __future__ import annotations

from kbench.core.compare import check_output, compare
from kbench.core.distributions import ALL_DISTS, DIST_NOTES, DISTS
from kbench.grading.pipeline import Cancelled, Grader, evaluate
from kbench.core.library import LIBRARY, Candidate, library_for
from kbench.core.loader import load_candidate
from kbench.core.metrics import fast_p, fast_p_at_k, geomean_speedup, oracle_fast_p, unbiased_at_k
from kbench.core.modes import HARDENED, MODES, NAIVE, Mode, TimingPolicy
from kbench.core.results import Event, Result, Timing, Trial
from kbench.core.tasks import TASK, TASKS, Task

__version__ = "0.1.0"

__all__ = [
    "ALL_DISTS", "DISTS", "DIST_NOTES", "TASK", "TASKS", "Task", "LIBRARY", "Candidate", "library_for",
    "load_candidate", "check_output", "compare", "evaluate", "Grader", "Cancelled", "Mode", "TimingPolicy",
    "NAIVE", "HARDENED", "MODES", "Event", "Result", "Timing", "Trial", "fast_p", "fast_p_at_k",
    "oracle_fast_p", "unbiased_at_k", "geomean_speedup", "__version__",
]
