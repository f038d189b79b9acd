"""Per-model scores from stored samples: status rates, fast_p (point and noise-aware), fast_p@k, geomean.

For each model, mode and level (and "all"), over the tasks of that level:
- status rates: the share of samples in each status (compile / runtime / wrong / rejected / correct);
- fast_p: the share of samples, averaged over tasks, that are correct and faster than p — by the point
  speedup, and noise-aware (the 95 % interval's lower bound above p), both from ``kbench.core.metrics``;
- fast_p@k for k = 1, 5, 10: the unbiased estimator 1 - C(n-c, k)/C(n, k) per task (n samples, c of
  them qualifying, noise-aware), averaged over **all** tasks of the level: a task the model produced no
  sample for counts as 0, not as missing;
- the geometric-mean speedup of the correct, timed samples.
Machine fingerprints and isolation layers are collected per model, so a table can say what produced it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from kbench.core import machine
from kbench.core.metrics import fast_p_per_task, geomean_speedup, outcome, qualifies, unbiased_at_k
from kbench.core.results import STATUSES
from kbench.core import tasks as tasks_mod
from kbench.store import StoredResult

P_GRID: tuple[float, ...] = (0.0, 0.5, 0.8, 1.0, 1.5, 2.0)
K_GRID: tuple[int, ...] = (1, 5, 10)


@dataclass
class Score:
    """One row: a model under one mode, on one level (or "all")."""

    model: str
    mode: str  # the mode's name, with its hash when one model has results under two modes of that name
    level: str  # "1", "2", "3" or "all"
    tasks: int  # tasks in the level: the denominator of fast_p and fast_p@k
    samples: int
    tasks_with_samples: int
    rates: dict[str, float]  # status -> share of samples
    fast_p: dict[float, float]  # noise-aware
    fast_p_point: dict[float, float]
    fast_p_at_k: dict[int, float]  # noise-aware, p = 1
    fast_p_at_k_point: dict[int, float]
    geomean_speedup: float | None  # None: no correct timed sample
    machines: list[str] = field(default_factory=list)
    isolation: list[str] = field(default_factory=list)
    mode_hash: str = ""
    timed: bool = True  # False: the mode had no timing step (verdicts only; every fast_p is 0)

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "mode": self.mode, "mode_hash": self.mode_hash, "timed": self.timed,
                "level": self.level, "tasks": self.tasks,
                "samples": self.samples, "tasks_with_samples": self.tasks_with_samples, "rates": self.rates,
                "fast_p": {f"{p:g}": v for p, v in self.fast_p.items()},
                "fast_p_point": {f"{p:g}": v for p, v in self.fast_p_point.items()},
                "fast_1_at_k": {str(k): v for k, v in self.fast_p_at_k.items()},
                "fast_1_at_k_point": {str(k): v for k, v in self.fast_p_at_k_point.items()},
                "geomean_speedup": self.geomean_speedup, "machines": self.machines, "isolation": self.isolation}


def _over_all_tasks(per_task: dict[str, float], tasks: list[str]) -> float:
    return sum(per_task.get(t, 0.0) for t in tasks) / len(tasks) if tasks else 0.0


def fast_at_k(outcomes: dict[str, list], tasks: list[str], k: int, p: float = 1.0, point: bool = False) -> float:
    """Mean over ``tasks`` of the unbiased estimator with c = samples correct and faster than p."""
    vals = []
    for t in tasks:
        rs = outcomes.get(t, [])
        c = sum(qualifies(o[0], o[1], p, o[2], point) for o in rs)
        vals.append(unbiased_at_k(len(rs), c, k))
    return sum(vals) / len(vals) if vals else 0.0


def _isolation(rows: list[StoredResult]) -> list[str]:
    """The sets of confinement layers the results ran under; results with none (rejected or failed to
    compile before any worker ran, or stored before layers were recorded) are counted apart."""
    sets = sorted({", ".join(r.isolation) for r in rows if r.isolation})
    bare = sum(1 for r in rows if not r.isolation)
    return sets + ([f"none recorded for {bare} result(s)"] if bare else [])


def score(model: str, mode: str, level: str, rows: list[StoredResult], p_grid: tuple[float, ...] = P_GRID,
          k_grid: tuple[int, ...] = K_GRID) -> Score:
    tasks = [t.name for t in tasks_mod.active() if level == "all" or str(t.level) == level]
    rows = [r for r in rows if r.result.task in tasks]
    outcomes: dict[str, list] = defaultdict(list)
    for r in rows:
        outcomes[r.result.task].append(outcome(r.result))
    counts = Counter(r.result.status for r in rows)
    n = len(rows)
    speedups = [r.result.timing.speedup for r in rows if r.result.correct and r.result.timing]
    return Score(
        model=model, mode=mode, level=level, tasks=len(tasks), samples=n, tasks_with_samples=len(outcomes),
        rates={s: (counts[s] / n if n else 0.0) for s in STATUSES},
        fast_p={p: _over_all_tasks(fast_p_per_task(outcomes, p), tasks) for p in p_grid},
        fast_p_point={p: _over_all_tasks(fast_p_per_task(outcomes, p, point=True), tasks) for p in p_grid},
        fast_p_at_k={k: fast_at_k(outcomes, tasks, k) for k in k_grid},
        fast_p_at_k_point={k: fast_at_k(outcomes, tasks, k, point=True) for k in k_grid},
        geomean_speedup=geomean_speedup(speedups) if speedups else None,
        machines=sorted({machine.summary(r.machine) for r in rows}),
        isolation=_isolation(rows),
    )


def scores(stored: list[StoredResult], models: list[str] | None = None) -> list[Score]:
    """Rows for every (model, mode) in ``stored`` (graded samples only), each level then "all".

    Modes are told apart by their hash, not their name: a correctness-only "hardened" run and a timed one
    are two columns, never averaged together."""
    by: dict[tuple[str, str, str], list[StoredResult]] = defaultdict(list)
    for s in stored:
        if s.model and (models is None or s.model in models):
            by[(s.model, s.result.mode, s.mode_hash)].append(s)
    names = Counter((m, name) for m, name, _ in by)
    levels = sorted({str(t.level) for t in tasks_mod.active()}) + ["all"]
    out = []
    for (m, name, h), rows in sorted(by.items()):
        timed = any(r.result.timing is not None for r in rows) or not any(r.result.correct for r in rows)
        label = name if names[(m, name)] == 1 else f"{name} {h[:6]}" + ("" if timed else " (untimed)")
        for lv in levels:
            sc = score(m, label, lv, rows)
            sc.mode_hash, sc.timed = h, timed
            out.append(sc)
    return out
