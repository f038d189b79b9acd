"""Views derived from one hardened run against the runs they stand for (audit five, the matrix and the switches).

``kbench.core.defences.derive`` answers "hardened without defence d" from one run's record for every derived
defence; the explorer's switches and ``kbench matrix`` show that answer as a verdict. Each test here grades a
candidate once, derives a view, and compares it with what the mode without the defence really says (a run of
its own, or the rule the pipeline itself applies). A view that disagrees is an open hole
(``xfail(strict=True)``, reason "open hole: <mechanism>"): the fixers see an XPASS once they close it.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

import kbench
from kbench import HARDENED
from kbench.core import defences
from kbench.core.results import Result, Timing, Trial
from kbench.store import result_from_dict
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


def test_a_cache_hitting_on_half_the_calls_is_implausible_though_its_median_is_not():
    """12-03: a content-hash cache hit on about half of a short run's calls (6-10 us each); the median of an even
    count averaged a hit and a miss (3.5 ms, above the 1.78 ms quarter floor), read 2x faster, and passed. The floor
    judges the share of calls under it too, in a run and in a view by the worker's own clock alike."""
    task = kbench.TASK["L3_mlp_block"]
    floor = roofline.get().floor_s(task.min_flops, task.min_bytes)
    miss, hit = 4 * floor, floor / 100
    half = [hit, miss] * 5
    assert float(np.median(half)) > defences.IMPLAUSIBLE_FACTOR * floor  # the median alone says plausible
    message = roofline.implausibility(task, float(np.median(half)), half)
    assert message and "5 of 10 timed calls" in message
    assert roofline.implausibility(task, miss, [miss] * 9 + [hit]) is None  # one odd call is not a run's verdict
    assert roofline.implausibility(task, miss, [miss] * 10) is None
    trials = [Trial(i, d, "default", True, "max abs err 1e-07") for i, d in enumerate(HARDENED.dists)]
    r = Result(task.name, "half_cached", HARDENED.name, HARDENED.dists, "correct", "1.00x", trials,
               _timing(4 * floor, 4 * floor), 1.0)
    t_med = float(np.median(half))
    r.worker_clock = dataclasses.replace(_timing(4 * floor, t_med), roof_fraction=floor / t_med, cand_samples=half)
    view = defences.derive(r, {"grader_clock"})
    assert view is not None and view.status == "rejected" and "roofline_floor" in view.breaches, view.msg
    stored = result_from_dict(json.loads(json.dumps(r.to_dict())))  # as the store and the matrix keep it
    again = defences.derive(stored, {"grader_clock"})
    assert again is not None and again.status == "rejected" and again.msg == view.msg
    r.worker_clock = dataclasses.replace(r.worker_clock, cand_samples=[miss] * 10, t_cand=miss,
                                         roof_fraction=floor / miss)
    assert defences.derive(r, {"grader_clock"}).status == "correct"  # type: ignore[union-attr]
