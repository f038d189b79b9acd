"""Views derived from one hardened run against the runs they stand for (audit five, the matrix and the switches).

``kbench.core.defences.derive`` answers "hardened without defence d" from one run's record for every derived
defence; the explorer's switches and ``kbench matrix`` show that answer as a verdict. Each test here grades a
candidate once, derives a view, and compares it with what the mode without the defence really says (a run of
its own, or the rule the pipeline itself applies). A view that disagrees is an open hole
(``xfail(strict=True)``, reason "open hole: <mechanism>"): the fixers see an XPASS once they close it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import kbench
from kbench import HARDENED
from kbench.core import defences
from kbench.core.results import Result, Timing, Trial
from kbench.timing import roofline

ADV = Path(__file__).parent / "adversarial"


def test_view_without_property_checks_is_the_run_without_them(grader):
    src = (ADV / "h8_property_only_while_timed.py").read_text()
    hard = kbench.evaluate("L1_softmax", src, HARDENED, "h8", grader=grader)
    assert hard.status == "wrong" and "check_timed+property_checks" in hard.breaches, hard.breaches
    view = defences.derive(hard, {"property_checks"})
    own = kbench.evaluate("L1_softmax", src, HARDENED.without("property_checks"), "h8", grader=grader)
    assert own.status == "correct", own.msg  # every timed output passes closeness; only the row sums saw it
    assert view is None or view.status == own.status, f"derived: {view.status}: {view.msg[:160]}"


def _timing(t_ref: float, t_cand: float) -> Timing:
    return Timing(method="interleaved", t_ref=t_ref, t_cand=t_cand, speedup=t_ref / t_cand,
                  speedup_ci=(0.95 * t_ref / t_cand, 1.05 * t_ref / t_cand), n_samples=20, noise=False)


def test_view_without_grader_clock_still_applies_the_roofline_floor():
    """Fact-level: a run that was correct at 1.0x by the grader's clock, whose worker reported 1 us per call.
    Hardened without the grader's clock times by those reports, and its roofline floor (still on) rejects them:
    ``interleaved.measure`` applies it to whatever times it was given."""
    task = kbench.TASK["L1_gelu"]
    claimed = 1e-6
    assert roofline.implausibility(task, claimed), "1 us must be below this machine's floor for L1_gelu"
    trials = [Trial(i, d, "default", True, "max abs err 1e-07") for i, d in enumerate(HARDENED.dists)]
    r = Result(task.name, "worker_clock_lies", HARDENED.name, HARDENED.dists, "correct", "1.00x", trials,
               _timing(0.010, 0.010), 1.0)
    # as interleaved.summarize records it: this machine's floor over the candidate's time
    floor = roofline.get().floor_s(task.min_flops, task.min_bytes)
    r.worker_clock = dataclasses.replace(_timing(0.010, claimed), roof_fraction=floor / claimed)
    view = defences.derive(r, {"grader_clock"})
    assert view is not None and view.status != "correct", f"derived: {view.status}: {view.msg}"


# ------------------------------------------------------------------ the judge: the float64 second opinion

def test_second_opinion_never_forgives_mean_v_on_offset_attention():
    """Fact-level, in this process: the timing's offset check pairs (``Grader.draw_timing_input``), the reference,
    and ``judging.judge`` with the float64 answer, as ``HardenedRun.compare`` calls it. mean(v) for every query
    fails the centred checks on every draw; it must not be rescued on any (seed fixed: the draws are the same
    on every run)."""
    import numpy as np

    from kbench.core import judging
    from kbench.grading.truth import Grader

    task = kbench.TASK["L3_attention"]
    ref_fn = task.ref_fn()
    g = Grader(seed=123)
    params = g.params(task, "default", -1)[1]
    slot = {k: np.empty(s, np.float32) for k, s in task.inputs.items()}
    forgiven = []
    for i in range(12):
        g.draw_timing_input(task, slot, ("offset",))
        x = {k: v.copy() for k, v in slot.items()}
        ref = np.asarray(ref_fn(x, params, None), np.float32)
        out = np.ascontiguousarray(np.broadcast_to(x["v"].mean(axis=1, keepdims=True), x["v"].shape), np.float32)
        facts = judging.trial_facts(task, ref, x, params, HARDENED.atol, HARDENED.rtol, predictors=False)
        c = judging.judge(out, ref, facts, x, params, lambda: g.exact_reference(task, x, params))
        assert any(ch.name.startswith("centred") and ch.ok is False for ch in c.checks), "mean(v) must fail centred"
        if c.ok:
            forgiven.append(i)
    assert not forgiven, f"mean(v) judged correct on offset draws {forgiven} of 12 (the float64 second opinion)"
