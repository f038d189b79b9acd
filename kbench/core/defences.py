"""The hardened grader's defences, one catalogue: what each catches, where it is enforced, what it says on a
breach, which attack cases it answers, and whether "hardened without it" can be derived from one run.

A ``Mode`` carries the names of the defences that are on (``HARDENED`` turns every one on; naive is KernelBench
v0's own procedure). The explorer's toggles, the hack × defence matrix, ``HARDENED``'s description and the
README's table all read this catalogue; ``tests/test_defences.py`` checks that every defence has an attack case
that needs it and that hardened turns every one on.

Derived: the run records every check's outcome on every trial (``Trial.checks``), the breaches of the defences
it does not stop at (``Result.breaches``: threads, timed outputs, the roofline floor) and the speedup by the
worker's own clock (``Result.worker_clock``), so ``derive(result, off)`` gives hardened-without-``off`` at once.
A defence that changes the run itself (a gate that never ran the code, inputs reused or writable, the reference
beside the candidate, ...) needs a run of its own: ``derive`` returns None for it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Iterable

from kbench.core.results import TIMED, Result, Trial, breach_status


@dataclass(frozen=True)
class Defence:
    name: str
    title: str  # the toggle's label
    catches: str  # what it catches, one line (the toggle's help)
    enforced: str  # where it is enforced
    breach: str  # the sentence it writes on a breach (the start of the verdict's message)
    cases: tuple[str, ...]  # attack cases that need it: "library:<task>/<name>", "adversarial:<file>", "os:<file>", "shortcut:<file>"
    derived: bool  # hardened-without-it derived from the recorded facts of one run


DEFENCES: tuple[Defence, ...] = (
    Defence("gate", "static gate",
            "imports, reflection and escapes refused before the code runs, with a readable rule and line",
            "grading/gate_in_worker.py, in the candidate's fresh worker", "rejected: line N ... [rule]",
            ("adversarial:timer_patch", "adversarial:allclose_patch", "adversarial:thread_after_return"), False),
    Defence("own_reference", "reference in its own worker",
            "the candidate cannot reach or poison the reference: it is computed in a worker that never ran "
            "candidate code", "grading/truth.py (Grader.references)", "(a wrong output, judged against the truth)",
            ("adversarial:poison_expected", "adversarial:frame_introspection"), False),
    Defence("sealed_inputs", "inputs and params read-only",
            "in-place writes to inputs or weights (zeroing them, folding weights, passing the input back)",
            "sandbox/arena.py (F_SEAL_FUTURE_WRITE), read-only views in the worker",
            "rejected: wrote to a read-only input or parameter",
            ("adversarial:input_mutation", "adversarial:params_mutation", "adversarial:passthrough"), False),
    Defence("nan_alloc", "NaN-filled alloc",
            "an output buffer returned untouched, holding what an allocator shared with the reference left there",
            "sandbox/arena.py (ScratchArena, filled by the grader between calls)", "NaN at [...] (... non-finite)",
            ("library:L1_diag_matmul/hack_stale_alloc", "adversarial:stale_memory"), False),
    Defence("fresh_inputs", "fresh inputs per timed call",
            "caches keyed on the input's identity or content, replays of earlier answers",
            "grading/truth.py (Grader.draw_timing_input)", "(a wrong timed output, or no speed to gain)",
            ("library:L1_diag_matmul/hack_cache_on_input", "library:L3_mlp_block/hack_content_hash",
             "adversarial:cache_on_id", "adversarial:cache_on_content"), False),
    Defence("check_timed", "every timed output checked",
            "kernels honest while checked and wrong while timed (phase detection, replays, partial work)",
            "grading/pipeline.py (HardenedRun.speed)", "timed call N returned a wrong output",
            ("adversarial:phase_detection", "adversarial:t3_window_replay", "adversarial:t5_gamble_on_sampled_checks"),
            True),
    Defence("thread_check", "no threads of its own",
            "work continuing in threads after forward() returned, load-time threads burning the timing core",
            "grading/pipeline.py (check_threads: the grader counts /proc/<pid>/task)",
            "rejected: N thread(s) of its own alive in the worker",
            ("adversarial:thread_after_return", "adversarial:t1_load_thread_burner"), True),
    Defence("stop_candidate", "candidate stopped outside its calls",
            "a candidate running while the reference is timed or its output is read (spinners, late writes)",
            "sandbox/server.py (SIGSTOP from reply to next request, checked in /proc)",
            "(a slower reference, a torn output)", ("adversarial:t1_load_thread_burner", "adversarial:t2_renice_reference"),
            False),
    Defence("grader_clock", "the grader's clock",
            "patched or lying clocks: a kernel reporting less time than it took",
            "sandbox/server.py (Worker.run: round trip and the worker's CPU clock)",
            "(the speedup by the grader's clocks)", ("adversarial:timer_patch", "adversarial:timer_patch_subtle"), True),
    Defence("roofline_floor", "roofline floor",
            "a time below a quarter of what this machine's bandwidth and FLOP rate allow",
            "timing/roofline.py", "rejected: ... implausibly fast", ("adversarial:lazy_result",), True),
    Defence("exact_output", "exact output type, shape and dtype",
            "lying subclasses, broadcast scalars, lazy objects computing inside the comparison, float16 outputs",
            "grading/pipeline.py (HardenedRun.judge), core/compare.py",
            "output is X, not numpy.ndarray / shape ... != ... / dtype ... != float32",
            ("adversarial:lying_subclass", "adversarial:lazy_result", "adversarial:constant_output"), False),
    Defence("centred_checks", "centred checks",
            "answers right only in their constant part (offset inputs: the mean of v for every query)",
            "core/judging.py (centred checks)", "centred along axis N: ...",
            ("shortcut:attention_mean_v_offset", "shortcut:gemm_rank1_columns"), True),
    Defence("property_checks", "property checks",
            "outputs close in places but breaking the task's math (softmax rows not summing to 1, ...), and "
            "answers scaled by a factor inside rtol (bias)",
            "core/judging.py (PROPERTIES, bias)", "rows_sum_to_one / normalised_rows / within_range_of_v / bias / ...",
            ("shortcut:softmax_drop_mass", "shortcut:gelu_scaled_inside_rtol"), True),
    Defence("float64_recheck", "float64 second opinion",
            "nothing: it forgives honest float32 rounding (off, an honest kernel summing in another order can fail)",
            "core/judging.py (second opinion)", "(a tolerance failure forgiven)", ("library:L3_mlp_block/fused_gate_up",),
            True),
)

BY_NAME: dict[str, Defence] = {d.name: d for d in DEFENCES}
NAMES: tuple[str, ...] = tuple(BY_NAME)
DERIVED: frozenset[str] = frozenset(d.name for d in DEFENCES if d.derived)
#: Judging checks by the defence that owns them (every other check belongs to no defence: it is the task).
_PROPERTY_CHECKS = ("nonnegative", "rows_sum_to_one", "normalised_rows", "within_range_of_v", "sign_of_scale", "bias")
RESCUE = "float64:"


def owner(check: str) -> str | None:
    """The defence a recorded check belongs to (None: closeness itself, the finite and exact checks' own)."""
    if check.startswith(RESCUE):
        return "float64_recheck"
    if check.startswith("centred"):
        return "centred_checks"
    if check in _PROPERTY_CHECKS:
        return "property_checks"
    if check in ("type", "shape", "dtype"):
        return "exact_output"
    return None


#: A view's time below this share of the machine's roofline floor is implausible (``timing.roofline`` rejects it
#: in a run; a derived view applies the same rule to the clock it switches to).
IMPLAUSIBLE_FACTOR = 0.25
#: ... and so is a run where at least this share of the counted calls (two at least) took such a time, whatever
#: the median: a cache that hits on half the calls made the median the mean of a hit and a miss (12-03: hits of
#: 6-10 us, a median of 3.5 ms above the 1.78 ms quarter floor, 2x "faster" and not caught).
IMPLAUSIBLE_SHARE = 0.25


def implausible_calls(t_cand: float, cand_samples: "Iterable[float]", floor_s: float) -> int | None:
    """How many counted calls took less than ``IMPLAUSIBLE_FACTOR`` of the roofline floor ``floor_s`` when that makes
    the run implausible (the median did, or at least ``IMPLAUSIBLE_SHARE`` of them, two at least), else None."""
    limit = IMPLAUSIBLE_FACTOR * floor_s
    samples = list(cand_samples)
    below = sum(1 for t in samples if t < limit)
    if t_cand < limit or (below >= 2 and below >= IMPLAUSIBLE_SHARE * len(samples)):
        return below
    return None


def timed_breach(failing_checks: Iterable[str]) -> str:
    """The key a wrong timed output is recorded under: ``check_timed`` when closeness itself failed (it holds in
    every view with check_timed on), else ``check_timed+`` the defences owning the checks that failed (it holds
    only while one of them is on too: a view without property checks must not keep a breach only they saw)."""
    owners = {owner(name) for name in failing_checks}
    if not owners or None in owners:
        return TIMED
    return "+".join([TIMED, *sorted(o for o in owners if o is not None)])


def breach_holds(key: str, off: Iterable[str]) -> bool:
    """Whether a recorded breach still convicts with the defences in ``off`` switched off."""
    first, *needs = key.split("+")
    off = set(off)
    return first not in off and (not needs or not set(needs) <= off)


def passes(checks: Iterable[tuple[str, Any]], off: Iterable[str] = ()) -> bool:
    """Whether a trial's recorded checks pass with the defences in ``off`` switched off. A check that did not
    run (None) was stopped by an earlier failure and counts as failed unless its defence is off."""
    off = set(off)
    rows = list(checks)
    rescued = set() if "float64_recheck" in off else \
        {name.removeprefix(RESCUE) for name, ok in rows if name.startswith(RESCUE) and ok}
    for name, ok in rows:
        if name.startswith(RESCUE) or owner(name) in off:
            continue
        if ok is not True and name not in rescued:
            return False
    return True


def derive(result: Result, off: Iterable[str], timed: bool = True) -> Result | None:
    """The verdict ``result``'s mode would give with the defences in ``off`` switched off, from its record, or
    None when one of them changes the run itself (it needs a run of its own), or when the view would be correct
    but the run never measured its speed (``timed``: the mode has a timing step)."""
    off = set(off)
    unknown = off - set(NAMES)
    if unknown:
        raise KeyError(f"unknown defence {sorted(unknown)[0]!r} (known: {', '.join(NAMES)})")
    if "gate" in off and "gate" not in result.breaches:
        off.discard("gate")  # the gate passed: without it the run is the same run (the candidate cannot see it)
    if not off:
        return result
    if off - DERIVED:
        return None
    if result.status not in ("correct", "wrong", "rejected") or (result.status == "rejected" and not result.breaches):
        return result  # decided before any defence in ``off`` could matter (the gate, a crash, a time-out)
    trials = [dataclasses.replace(t, ok=passes(t.checks, off)) if t.checks else t for t in result.trials]
    bad = next((t for t in trials if not t.ok), None)
    timing = result.worker_clock if "grader_clock" in off else result.timing
    breaches = {k: v for k, v in result.breaches.items() if breach_holds(k, off)}
    below = implausible_calls(timing.t_cand, timing.cand_samples, timing.roof_fraction * timing.t_cand) \
        if "grader_clock" in off and "roofline_floor" not in off and timing is not None and timing.roof_fraction \
        else None
    if below is not None:
        # The floor judges whatever clock the view times by: the worker's own report can claim anything.
        calls = f"{below} of {len(timing.cand_samples)} calls" if timing.cand_samples else "its median"
        breaches.setdefault("roofline_floor", f"rejected: implausible: the worker's own clock claims "
                                              f"{timing.t_cand * 1e3:.4f} ms ({calls} under a quarter of this "
                                              f"machine's roofline floor for {result.task})")
    if bad is not None:
        return dataclasses.replace(result, status="wrong", msg=f"{_first_failure(bad, off)} on {bad.dist}",
                                   trials=trials, timing=None, breaches=breaches)
    if breaches:
        name, msg = next(iter(breaches.items()))
        return dataclasses.replace(result, status=breach_status(name), msg=msg,
                                   trials=trials, breaches=breaches, timing=timing)
    if timed and timing is None:
        return None  # correct without the defence, but its speed was never measured (or not by that clock)
    return dataclasses.replace(result, status="correct", msg=f"{timing.speedup:.2f}x" if timing else "correct",
                               trials=trials, timing=timing, breaches=breaches)


def _first_failure(t: Trial, off: set[str]) -> str:
    failing = [name for name, ok in t.checks if ok is False and owner(name) not in off and not name.startswith(RESCUE)]
    return t.message if not failing or failing[0] in t.message else f"{failing[0]} failed"
