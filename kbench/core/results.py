"""What an evaluation reports: step events while it runs, and a Result at the end.

The CLI's streamed log and the explorer's live log are two consumers of the same ``Event`` stream.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Literal

Status = Literal["compile_error", "runtime_error", "wrong", "rejected", "correct"]

#: The breach key of a wrong timed output (``check_timed``, or ``check_timed+<defences>``: kbench.core.defences).
TIMED = "check_timed"


def breach_status(key: str) -> Status:
    """The verdict a recorded breach gives: a wrong timed output is wrong, every other breach a rejection."""
    return "wrong" if key.startswith(TIMED) else "rejected"
STATUSES: tuple[Status, ...] = ("compile_error", "runtime_error", "wrong", "rejected", "correct")

Step = Literal["start", "static", "load", "init", "trial", "timing", "stdout", "verdict"]


@dataclass(frozen=True)
class Event:
    """One line of the evaluator's step log."""

    step: Step
    message: str
    ok: bool | None = None  # None: informational
    elapsed: float = 0.0  # seconds since the evaluation started
    trial: int | None = None
    dist: str | None = None
    param_set: str | None = None
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    status: Status | None = None  # on the final "verdict" event
    speedup: float | None = None
    speedup_ci: tuple[float, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


EventSink = Callable[[Event], None]


@dataclass(frozen=True)
class Trial:
    """One correctness trial: one input draw, one parameter set, one verdict."""

    index: int
    dist: str
    param_set: str  # "default", "random 1", "random 2"
    ok: bool
    message: str
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    degenerate: bool = False
    #: Every check's outcome on this trial, (name, True/False, or None when it did not run), not only the
    #: first failure: a view without one check can be derived from the run.
    checks: tuple[tuple[str, bool | None], ...] = ()


@dataclass(kw_only=True)
class Timing:
    """What the speed step measured (seconds). Keyword-only: positional construction once shifted fields
    silently when new ones were added."""

    method: str
    t_ref: float
    t_cand: float
    speedup: float
    speedup_ci: tuple[float, float]
    n_samples: int
    noise: bool  # the interval contains 1.0: "no measurable difference"
    blas_threads: int | None = None
    achieved_gbs: float | None = None  # the task's least bytes / candidate time
    achieved_gflops: float | None = None  # the task's least FLOPs / candidate time
    roof_fraction: float | None = None  # this machine's time floor / candidate time
    contended: bool = False  # other load or widely spread samples: the interval was widened to stay honest
    other_load: float | None = None  # other processes' CPU use while sampling, in cores
    stop: str | None = None  # why sampling stopped: precise, decided, budget, max_runs
    ref_samples: list[float] = field(default_factory=list)
    cand_samples: list[float] = field(default_factory=list)


@dataclass
class Result:
    task: str
    cand_name: str | None
    mode: str
    dists: tuple[str, ...]
    status: Status
    msg: str
    trials: list[Trial] = field(default_factory=list)
    timing: Timing | None = None
    elapsed: float = 0.0
    overhead: dict[str, float] = field(default_factory=dict)  # seconds not spent running kernels
    isolation: tuple[str, ...] = ()  # the sandbox's OS layers active in the candidate's worker
    stdout: str = ""  # the head of what the candidate printed (capped, control characters escaped)
    #: Breaches of defences the run records and goes on past (threads, timed outputs, the roofline floor), in
    #: the order they happened: the verdict is the first enabled one's; views without it are derived.
    breaches: dict[str, str] = field(default_factory=dict)
    #: The same timed pairs as the worker itself reported them (a view without the grader's clock).
    worker_clock: Timing | None = None

    @property
    def correct(self) -> bool:
        return self.status == "correct"

    @property
    def speedup(self) -> float:
        return self.timing.speedup if self.timing else 0.0

    @property
    def t_ref(self) -> float:
        return self.timing.t_ref if self.timing else float("nan")

    @property
    def t_cand(self) -> float:
        return self.timing.t_cand if self.timing else float("nan")

    @property
    def speedup_ci(self) -> tuple[float, float] | None:
        return self.timing.speedup_ci if self.timing else None

    def passes_by_dist(self) -> dict[str, tuple[int, int]]:
        """(passed, run) per distribution over this result's trials."""
        out: dict[str, tuple[int, int]] = {}
        for t in self.trials:
            p, n = out.get(t.dist, (0, 0))
            out[t.dist] = (p + t.ok, n + 1)
        return out

    def restricted(self, dists: "tuple[str, ...] | list[str]") -> "Result | None":
        """The verdict this evaluation implies for a subset of its distributions, or None when it cannot
        tell (a distribution it never ran, or a failure that ended the run before a wanted trial).

        Lets the explorer toggle a distribution instantly: only trials on the kept distributions count.
        """
        want = tuple(d for d in self.dists if d in dists)
        if set(dists) - set(self.dists) or not want:
            return None
        if self.status not in ("correct", "wrong") and not self.trials:
            return self  # decided before any input was drawn (static check, load, init)
        kept = [t for t in self.trials if t.dist in want]
        ran_all = len(self.trials) == len(self.dists) or self.status in ("correct", "wrong")
        if not ran_all and self.status != "correct":
            failing = self.trials[-1] if self.trials else None
            if failing is None or failing.dist not in want:
                return None  # the run stopped on a dropped distribution; the rest is unknown
            return Result(self.task, self.cand_name, self.mode, want, self.status, self.msg, kept, self.timing,
                          self.elapsed, dict(self.overhead), self.isolation, self.stdout, dict(self.breaches),
                          self.worker_clock)
        bad = next((t for t in kept if not t.ok), None)
        if bad is None and self.breaches:  # the run's own breaches (threads, timed outputs) hold in every view
            name, why = next(iter(self.breaches.items()))
            return Result(self.task, self.cand_name, self.mode, want, breach_status(name),
                          why, kept, self.timing, self.elapsed, dict(self.overhead), self.isolation, self.stdout,
                          dict(self.breaches), self.worker_clock)
        if bad is not None:
            return Result(self.task, self.cand_name, self.mode, want, "wrong", f"{bad.message} on {bad.dist}", kept,
                          None, self.elapsed, dict(self.overhead), self.isolation, self.stdout, dict(self.breaches),
                          self.worker_clock if self.timing is not None else None)
        if self.status == "wrong":
            if self.timing is None:
                return None  # correct on what is left, but its speed was never measured
            return Result(self.task, self.cand_name, self.mode, want, "correct", f"{self.timing.speedup:.2f}x", kept,
                          self.timing, self.elapsed, dict(self.overhead), self.isolation, self.stdout,
                          dict(self.breaches), self.worker_clock)
        # breaches and the worker's own clock hold in every view: a view without a defence is derived from them
        return Result(self.task, self.cand_name, self.mode, want, self.status, self.msg, kept, self.timing,
                      self.elapsed, dict(self.overhead), self.isolation, self.stdout, dict(self.breaches),
                      self.worker_clock)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["correct"] = self.correct
        d["speedup"] = self.speedup if self.timing else None
        for key in ("timing", "worker_clock"):  # raw samples are long; keep them out of summaries
            if d.get(key):
                d[key].pop("ref_samples", None)
                if key == "timing":  # the worker clock's stay: its derived view judges them (roofline floor)
                    d[key].pop("cand_samples", None)
        return d
