"""Grading modes. A mode is data: which pipeline steps run and how, never a separate code path.

``NAIVE`` copies KernelBench v0; ``HARDENED`` is kbench's answer to every known reward hack. Users
make others with ``dataclasses.replace`` or ``Mode.with_dists`` (e.g. hardened + edge).
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, replace
from typing import Literal

from kbench.core.defences import NAMES as defence_names
from kbench.core.distributions import DISTS, get as get_dist


#: The most processes an arm may be timed in (each is a worker: memory and a start per evaluation).
MAX_PROCESSES = 4


@dataclass(frozen=True)
class TimingPolicy:
    """How the speed step measures.

    ``blocked``: all reference runs, then all candidate runs, on one reused input (KernelBench v0).
    ``interleaved``: reference and candidate in pairs, random order inside each pair, fresh inputs for
    every call; sampling stops once the speedup's 95 % interval is within ``target_rel_ci`` or the
    budget runs out.
    """

    method: Literal["blocked", "interleaved"]
    warmup: int
    min_runs: int
    max_runs: int
    budget_s: float
    target_rel_ci: float = 0.02
    statistic: Literal["mean", "median"] = "median"
    #: Interleaved: stop as soon as the interval is clear of every fast_p threshold (a verdict needs no more).
    #: False: only a tight interval, the pair limit or the budget stops sampling, for benchmarks that measure
    #: how close a speedup is (``benchmarks/accuracy.py``), not which side of a threshold it is on.
    decide_early: bool = True
    #: Interleaved: the parameters the counted pairs take. "default": the task's defaults (KernelBench times its
    #: model as initialised). "random": the mode's random parameter sets in turn, so that a kernel specialised to
    #: particular values (an affine step skipped while gamma is all ones and beta all zeros) meets none of them
    #: while its speed is measured (12-04 audit: 1.9x against 1.6x for the same kernel without the shortcut).
    #: With fresh inputs switched off, one random set only; a plan without random sets times on the defaults.
    params: Literal["default", "random"] = "default"
    #: Interleaved: each arm timed in this many processes (the reference in as many twins, the candidate in as
    #: many workers, each loaded and initialised as the first), the k-th of each arm paired, in turn pair by pair.
    #: A process can run a memory-bound kernel faster or slower than another for its whole life (the memory it was
    #: given): with one per arm, an A/A run read 0.90-0.94 with every interval clear of 1.0 (12-04 d); with two,
    #: the median averages them and the interval contains every combination's speedup (``stats.with_processes``).
    #: One by default: side by side in a calm hour (12-04 f) two did not make softmax's A/A runs agree more
    #: closely (SD of log 0.047 against 0.024 over 20 runs each); ``benchmarks/aa_drift.py --processes 2`` compares.
    processes: int = 1

    def __post_init__(self) -> None:
        problems = []
        if not (type(self.processes) is int and 1 <= self.processes <= MAX_PROCESSES):
            problems.append(f"processes must be an integer from 1 to {MAX_PROCESSES}, not {self.processes!r}")
        elif self.processes > 1 and self.method != "interleaved":
            problems.append("processes > 1 needs interleaved timing (blocked timing runs in the candidate's worker)")
        if self.params not in ("default", "random"):
            problems.append(f"params must be 'default' or 'random', not {self.params!r}")
        if self.method not in ("blocked", "interleaved"):
            problems.append(f"method must be 'blocked' or 'interleaved', not {self.method!r}")
        if self.statistic not in ("mean", "median"):
            problems.append(f"statistic must be 'mean' or 'median', not {self.statistic!r}")
        if self.method == "interleaved" and self.statistic != "median":
            problems.append("interleaved timing reports the ratio of medians (paired bootstrap); "
                            "statistic='mean' is only available with blocked timing")
        if not (0 <= self.warmup and 1 <= self.min_runs <= self.max_runs):
            problems.append("need warmup >= 0 and 1 <= min_runs <= max_runs")
        if not (self.budget_s > 0 and 0 < self.target_rel_ci < 1):
            problems.append("need budget_s > 0 and 0 < target_rel_ci < 1")
        if problems:
            raise ValueError("invalid timing policy: " + "; ".join(problems))


#: The hardened procedure's defences, by name (what each does, where and why: ``kbench.core.defences``).
#: Each is a switch: ``Mode.without(name)`` is hardened minus it.
DEFENCES: tuple[str, ...] = defence_names
PROCEDURES = ("naive_v0", "hardened")
#: What the naive procedure can honour (it is KernelBench v0's, run in the candidate's own process).
NAIVE_HONOURS = frozenset({"gate", "nan_alloc"})


@dataclass(frozen=True)
class Mode:
    name: str
    description: str
    procedure: Literal["naive_v0", "hardened"]  # KernelBench v0 in the candidate's process, or kbench's own
    defences: frozenset[str]  # the hardened defences that are on (see DEFENCES)
    dists: tuple[str, ...]  # correctness trials cycle through these
    trials: int | None  # None: one trial per distribution
    param_sets: tuple[Literal["default", "random"], ...]  # cycled over the trials
    atol: float
    rtol: float
    timing: TimingPolicy | None  # None: correctness only
    timeout_s: float = 30.0  # wall clock for the whole evaluation
    memory_limit_mb: int = 4096
    time_wrong: bool = False  # also time candidates found wrong (the explorer derives per-distribution views)

    def __post_init__(self) -> None:
        """Every combination either works as named or is refused here, when the mode is made."""
        problems = []
        if self.procedure not in PROCEDURES:
            problems.append(f"procedure must be one of {', '.join(PROCEDURES)}, not {self.procedure!r}")
        unknown = set(self.defences) - set(DEFENCES)
        if unknown:
            problems.append(f"unknown defence {sorted(unknown)[0]!r} (known: {', '.join(DEFENCES)})")
        if self.procedure == "naive_v0" and set(self.defences) - NAIVE_HONOURS:
            problems.append("the naive procedure runs KernelBench v0 in the candidate's own process and can honour "
                            f"only {', '.join(sorted(NAIVE_HONOURS))}; the other defences need procedure='hardened' "
                            "(choose one)")
        if not self.dists:
            problems.append("a mode needs at least one distribution")
        for d in self.dists:
            try:
                get_dist(d)
            except KeyError as e:
                problems.append(str(e.args[0]))
        if self.trials is not None and self.trials < 1:
            problems.append("trials must be at least 1 (or None: one per distribution)")
        if not self.param_sets or any(k not in ("default", "random") for k in self.param_sets):
            problems.append("param_sets must be a non-empty tuple of 'default' and 'random'")
        if not (self.atol >= 0 and self.rtol >= 0):
            problems.append("atol and rtol must be >= 0")
        if not (0 < self.timeout_s <= 86400):
            problems.append("timeout_s must be between 0 and 86400 seconds")
        if self.memory_limit_mb < 256:
            problems.append("memory_limit_mb below 256 cannot even load numpy")
        if self.timing is not None and (self.timing.method == "blocked") != (self.procedure == "naive_v0"):
            problems.append("blocked timing is KernelBench v0's and runs inside the candidate's process (the naive "
                            "procedure); the hardened procedure times interleaved pairs")
        if "float64_recheck" in self.defences and "exact_output" not in self.defences:
            problems.append("float64_recheck is a second opinion of the exact checks: it needs exact_output")
        if self.time_wrong and self.timing is None:
            problems.append("time_wrong needs a timing policy")
        if problems:
            raise ValueError(f"invalid mode {self.name!r}: " + "; ".join(problems))

    def has(self, defence: str) -> bool:
        if defence not in DEFENCES:
            raise KeyError(f"unknown defence {defence!r} (known: {', '.join(DEFENCES)})")
        return defence in self.defences

    def without(self, *defences: str) -> "Mode":
        """This mode with ``defences`` switched off (hardened minus them)."""
        for d in defences:
            self.has(d)
        return replace(self, defences=frozenset(self.defences) - set(defences))

    def with_defences(self, *defences: str) -> "Mode":
        for d in defences:
            self.has(d)
        return replace(self, defences=frozenset(self.defences) | set(defences))

    @property
    def digest(self) -> str:
        """A hash of every field: stored results are keyed on it, so a changed check or tolerance under the
        same name never serves a stale verdict."""
        fields = asdict(self)
        fields["defences"] = sorted(self.defences)
        if fields["timing"] is not None and fields["timing"]["decide_early"]:
            del fields["timing"]["decide_early"]  # the default: results stored before the field keep their key
        if fields["timing"] is not None and fields["timing"]["processes"] == 1:
            del fields["timing"]["processes"]  # the same
        return hashlib.sha256(repr(fields).encode()).hexdigest()[:16]

    @property
    def n_trials(self) -> int:
        return self.trials if self.trials is not None else len(self.dists)

    def with_timing(self, **changes: object) -> "Mode":
        """This mode with fields of its timing policy changed (validated as every policy is)."""
        if self.timing is None:
            raise ValueError(f"mode {self.name!r} does not time: no timing policy to change")
        return replace(self, timing=replace(self.timing, **changes))  # type: ignore[arg-type]

    def with_dists(self, dists: tuple[str, ...] | list[str]) -> "Mode":
        for d in dists:
            get_dist(d)  # raises KeyError with the known names
        return replace(self, dists=tuple(dists))

    def trial_plan(self) -> list[tuple[int, str, str, int]]:
        """(trial index, distribution, parameter-set kind, random draw number) for every trial."""
        plan = []
        for i in range(self.n_trials):
            pos = i % len(self.param_sets)
            kind = self.param_sets[pos]
            # the k-th random set of the cycle; a second pass through the cycle reuses the same sets
            draw = self.param_sets[: pos + 1].count("random") - 1 if kind == "random" else -1
            plan.append((i, self.dists[i % len(self.dists)], kind, draw))
        return plan


NAIVE = Mode(
    name="naive",
    description="KernelBench v0: 5 trials on normal inputs with default params, the reference first on the "
                "same inputs in the same process, shape + allclose(1e-2); timing reuses one input, all reference "
                "runs then all candidate runs, mean.",
    procedure="naive_v0",
    defences=frozenset(),
    dists=("normal",),
    trials=5,
    param_sets=("default",),
    atol=1e-2,
    rtol=1e-2,
    timing=TimingPolicy("blocked", warmup=3, min_runs=5, max_runs=100, budget_s=0.4, statistic="mean"),
)

HARDENED = Mode(
    name="hardened",
    description="AST gate in a fresh confined worker; one trial per distribution, params cycling default + 2 random "
                "sets; inputs drawn from a secret seed into sealed read-only memory, the reference computed in a "
                "worker that never ran candidate code, every output read from the worker's memory and judged in "
                "the grading process: exact type/shape/dtype, finite, NaN-filled alloc, then allclose(1e-2) with a "
                "scale-aware check and a float64 second opinion on tolerance-only failures; interleaved timing on "
                "fresh inputs and the random parameter sets by the grader's clocks, median, the candidate stopped "
                "outside its calls, timed outputs checked.",
    procedure="hardened",
    defences=frozenset(DEFENCES),
    dists=DISTS,
    trials=None,
    param_sets=("default", "random", "random"),
    atol=1e-2,
    rtol=1e-2,
    timing=TimingPolicy("interleaved", warmup=2, min_runs=10, max_runs=80, budget_s=1.5, params="random"),
)

def matrix_mode(dists: "tuple[str, ...] | list[str]", per_dist: int = 5) -> Mode:
    """Correctness only, ``per_dist`` trials on each distribution with default params, judged as hardened
    judges: the pass-count matrix of the lecture's demo 4 (same bug, different inputs)."""
    return replace(HARDENED.without("gate"), name="matrix",
                   description=f"{per_dist} hardened-judged trials per distribution, default params, no timing",
                   trials=per_dist * len(dists), param_sets=("default",), timing=None).with_dists(tuple(dists))


MODES: dict[str, Mode] = {"naive": NAIVE, "hardened": HARDENED}


def get(mode: "str | Mode") -> Mode:
    if isinstance(mode, Mode):
        return mode
    try:
        return MODES[mode]
    except KeyError:
        raise KeyError(f"unknown mode {mode!r} (known: {', '.join(MODES)})") from None
