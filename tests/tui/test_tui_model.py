"""The explorer's headless parts: the model (verdicts under toggles, fast_p) and the scheduler."""

from __future__ import annotations

from tui_fakes import fake_result

from kbench.core.distributions import ALL_DISTS, DISTS
from kbench.core.library import find
from kbench.core.modes import NAIVE
from kbench_tui.model import EXPLORER_HARDENED, Model, badge, hardened_for
from kbench_tui.runner import Job, Scheduler


def _model(*names: str) -> Model:
    return Model([find(*n.split("/")) for n in names])


def test_toggles_read_verdicts_off_one_all_seven_run() -> None:
    m = _model("L1_softmax/no_max", "L1_layernorm/no_eps")
    for c in m.candidates:
        m.record(c.digest, c.task, fake_result(c.task, c.name, EXPLORER_HARDENED))
    no_max, no_eps = m.get("library:L1_softmax/no_max"), m.get("library:L1_layernorm/no_eps")
    assert m.enabled == DISTS
    assert m.verdict(no_max).result.status == "wrong"
    assert m.verdict(no_eps).result.status == "correct"
    m.toggle("lognormal"), m.toggle("offset")
    assert m.verdict(no_max).result.status == "correct"
    m.toggle("edge")
    assert m.verdict(no_eps).result.status == "wrong"
    assert m.missing(no_max, "hardened") is None and m.missing(no_max, "naive") is NAIVE


def test_last_distribution_stays_on() -> None:
    m = _model()
    for d in DISTS[1:]:
        assert m.toggle(d)
    assert m.enabled == ("normal",)
    assert not m.toggle("normal")


def test_unknown_subset_asks_for_a_subset_run() -> None:
    m = _model("L1_softmax/no_max")
    c = m.candidates[0]
    # a run that stopped on its first distribution tells nothing about the others
    r = fake_result(c.task, c.name, EXPLORER_HARDENED)
    r.status, r.trials = "runtime_error", r.trials[:1]
    r.trials[0] = type(r.trials[0])(0, "normal", "default", False, "raised")
    m.record(c.digest, c.task, r)
    m.toggle("normal")
    assert m.verdict(c) is None
    assert m.missing(c, "hardened") == hardened_for(m.enabled)
    assert m.unresolved() == [c]


def test_scores_over_evaluated_only() -> None:
    m = _model("L1_diag_matmul/row_scale", "L1_softmax/no_max", "L1_softmax/wrong_axis")
    s = m.scores()
    assert s.n_hardened == 0 and all(h is None for _, _, h, _ in s.rows)
    for c in m.candidates:
        m.record(c.digest, c.task, fake_result(c.task, c.name, EXPLORER_HARDENED))
    s = m.scores()
    assert s.n_hardened == 3 and s.n_naive == 0
    p0 = dict((p, h) for p, _, h, _ in s.rows)[0.0]
    assert p0 == (1.0 + 0.0) / 2  # diag: 1/1 correct; softmax: 0/2
    oracle0 = dict((p, o) for p, _, _, o in s.rows)[0.0]
    assert oracle0 == 0.5


def test_badges() -> None:
    r = fake_result("L1_diag_matmul", "row_scale", EXPLORER_HARDENED)
    assert badge(r)[0].startswith("✓ ") and badge(r)[0].endswith("×")
    assert badge(None) == ("·", "not_evaluated")
    assert badge(fake_result("L1_softmax", "wrong_axis", EXPLORER_HARDENED)) == ("✗ wrong", "wrong")
    assert badge(fake_result("L1_layernorm", "numba_jit", EXPLORER_HARDENED)) == ("! runtime_error", "runtime_error")
    assert badge(fake_result("L1_diag_matmul", "hack_stale_alloc", EXPLORER_HARDENED)) == ("⊘ rejected", "rejected")


def test_scheduler_single_supersedes_and_preempts_background() -> None:
    a, b = find("L1_softmax", "no_max"), find("L1_softmax", "inplace")
    s = Scheduler()
    s.submit([Job(a, "hardened", "batch"), Job(b, "hardened", "batch")])
    run1 = s.next(lambda j: EXPLORER_HARDENED)
    assert run1.job.cand == a and s.batch_active
    s.submit([Job(b, "naive", "single", NAIVE)])
    assert run1.stale  # pre-empted, and re-queued in front of the batch
    assert s.queues["batch"][0].cand == a
    assert s.next(lambda j: EXPLORER_HARDENED) is None  # one thread at a time: wait for run1 to end
    assert s.finished(run1.id) is run1
    run2 = s.next(lambda j: EXPLORER_HARDENED)
    assert run2.job.kind == "single"
    s.submit([Job(a, "naive", "single", NAIVE)])
    assert run2.stale and not s.is_current(run2.id)
    s.finished(run2.id)
    run3 = s.next(lambda j: EXPLORER_HARDENED)
    assert run3.job.cand == a and run3.job.kind == "single"
    s.cancel_all()
    assert run3.stale and not s.queues["batch"] and s.batch_total == 0


def test_all_dists_order() -> None:
    assert ALL_DISTS == ("normal", "uniform", "laplace", "lognormal", "offset", "exponential", "edge")


def _timed(speedup: float, ci: tuple[float, float]):  # type: ignore[no-untyped-def]
    from kbench.core.results import Result, Timing

    t = Timing(method="interleaved", t_ref=0.01, t_cand=0.01 / speedup, speedup=speedup, speedup_ci=ci,
               n_samples=12, noise=ci[0] <= 1.0 <= ci[1])
    return Result("L1_gelu", "k", "hardened", ("normal",), "correct", f"{speedup:.2f}x", [], t)


def test_status_vocabulary_speedups_and_messages() -> None:
    from kbench.core.results import Result
    from kbench.core.status import STATUS_LOOK, look, sentence

    for key in ("compile_error", "runtime_error", "wrong", "rejected", "correct", "not_evaluated", "running",
                "cancelled", "noise"):
        assert look(key).text and look(key).symbol and look(key).style.startswith("text-")
    assert set(STATUS_LOOK) >= {"cancelled", "noise"}
    # 0.95x is not 1.0x; within noise the estimate is kept and marked (issue 19: not a bare "≈1.0×")
    assert badge(_timed(0.95, (0.93, 0.97)))[0] == "✓ 0.95×"
    assert badge(_timed(0.75, (0.46, 1.72)))[0] == "✓ ≈0.75×"
    assert sentence(_timed(0.75, (0.46, 1.72))) == "✓ correct, 0.75× [0.46–1.72] at 95%, within noise"
    assert sentence(_timed(13.2, (12.9, 13.6))) == "✓ correct, 13.2× [12.9–13.6] at 95%"
    r = Result("L1_gelu", "k", "hardened", ("normal",), "rejected", "rejected: modified input x in place")
    assert sentence(r) == "⊘ rejected: modified input x in place"


def test_verdict_event_and_result_read_the_same() -> None:
    """kbench eval prints the verdict event; the explorer the Result: one line, from the structured fields."""
    from kbench.core.results import Event, Result
    from kbench.core.status import event_sentence, sentence, short_badge

    for speedup, ci in ((0.75, (0.46, 1.72)), (13.24, (12.91, 13.6)), (1.06, (0.80, 1.37))):
        r = _timed(speedup, ci)
        # the engine's own message says "1.06x (95% CI 0.80-1.37)"; the line never depends on it
        ev = Event("verdict", "correct, whatever the engine wrote", True, status="correct", speedup=speedup,
                   speedup_ci=ci)
        assert event_sentence(ev) == sentence(r)
        assert ("within noise" in sentence(r)) == (ci[0] <= 1.0 <= ci[1])
    ev = Event("verdict", "rejected: rejected: reads a cache", False, status="rejected")
    r = Result("L1_gelu", "k", "hardened", ("normal",), "rejected", "rejected: reads a cache")
    assert event_sentence(ev) == sentence(r) == "⊘ rejected: reads a cache"
    for status in ("wrong", "rejected", "compile_error", "runtime_error"):
        assert len(short_badge(Result("L1_gelu", "k", "hardened", ("normal",), status, "m"))[0]) <= 8
    assert short_badge(_timed(0.75, (0.46, 1.72)))[0] == "✓≈0.75×"


def test_scores_count_the_chosen_set() -> None:
    import dataclasses

    lib = find("L1_softmax", "no_max")
    mine = dataclasses.replace(lib, name="mine_1", origin="user")
    m = Model([lib, mine])
    m.record(mine.digest, mine.task, fake_result(mine.task, "mine_1", EXPLORER_HARDENED))
    m.record(lib.digest, lib.task, fake_result(lib.task, lib.name, EXPLORER_HARDENED))
    assert m.scopes() == ["library", "mine", "all"]
    assert m.scope == "library" and m.scores().n_total == 1 and "the library" in m.scores().counts
    assert m.next_scope() == "mine" and m.scores().n_total == 1 and "your own" in m.scores().counts
    assert m.next_scope() == "all" and m.scores().n_total == 2
    assert m.next_scope() == "library"


def test_trial_lines_name_the_tolerance_the_alloc_rule_and_no_alarming_degenerate() -> None:
    from kbench_tui.widgets.eval_log import trial_message

    tol = "0.01 + 0.01·|ref|"
    assert trial_message("trial 1/7 normal default pass  max abs err 1e-06", tol).endswith(f"· tol {tol}")
    nan = trial_message("trial 2/7 uniform random 1 FAIL  NaN at [0, 0] (12 non-finite)", tol, alloc_nan=True)
    assert "alloc() buffers are NaN-filled in hardened mode" in nan
    assert "NaN-filled" not in trial_message("trial 2/7 FAIL  NaN at [0, 0]", tol, alloc_nan=False)
    deg = trial_message("trial 3/7 edge default pass  max abs err 0 (degenerate: scale-aware)", tol)
    assert "degenerate" not in deg and "judged relative to its scale" in deg


def test_derived_views_follow_a_new_result_for_their_candidate() -> None:
    """Views are derived once and kept (a switch flipped back and forth derives nothing again), but a result
    recorded for a candidate replaces every view derived from its old one: distributions and defences alike."""
    m = _model("L1_softmax/no_max", "L1_layernorm/no_eps")
    no_max, no_eps = m.get("library:L1_softmax/no_max"), m.get("library:L1_layernorm/no_eps")
    for c in (no_max, no_eps):
        m.record(c.digest, c.task, fake_result(c.task, c.name, EXPLORER_HARDENED))
    m.off = frozenset({"check_timed"})
    assert m.verdict(no_max).result.status == "wrong" and m.verdict(no_eps).result.status == "correct"
    m.off = frozenset()
    assert m.verdict(no_max).result.status == "wrong"
    # the same source graded again, correct this time (a fixed engine): every view of it follows
    m.record(no_max.digest, no_max.task, fake_result(no_max.task, "graded_again", EXPLORER_HARDENED))
    assert m.verdict(no_max).result.status == "correct"
    m.off = frozenset({"check_timed"})
    assert m.verdict(no_max).result.status == "correct"
    m.toggle("lognormal")
    assert m.verdict(no_max).result.status == "correct"
    assert m.verdict(no_eps).result.status == "correct"  # the other candidate's views are untouched
    m.toggle("edge")
    assert m.verdict(no_eps).result.status == "wrong"  # FAILS_ON: no_eps fails on edge
