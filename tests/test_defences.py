"""The defence catalogue: every defence named once, each with an attack case that needs it, hardened turning every
one on; and the views derived from one run agree with a run without the defence."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import pytest

import kbench
from kbench import HARDENED, LIBRARY, NAIVE, Grader
from kbench.core import defences
from kbench.core.modes import DEFENCES

TESTS = Path(__file__).parent


def _case_exists(case: str) -> bool:
    kind, _, name = case.partition(":")
    if kind == "library":
        task, cand = name.split("/")
        return any(c.task == task and c.name == cand for c in LIBRARY)
    folder = {"adversarial": TESTS / "adversarial", "os": TESTS / "adversarial" / "os",
              "shortcut": TESTS / "shortcuts"}[kind]
    return (folder / f"{name}.py").is_file()


def test_every_defence_is_in_the_catalogue_with_an_attack_that_needs_it():
    assert DEFENCES == defences.NAMES
    assert HARDENED.defences == frozenset(defences.NAMES) and not NAIVE.defences
    for d in defences.DEFENCES:
        assert d.title and d.catches and d.enforced and d.breach, d.name
        assert d.cases and all(_case_exists(c) for c in d.cases), (d.name, d.cases)
    assert defences.DERIVED < set(defences.NAMES)


def _gelu(body: str) -> str:
    return "def forward(x, params, alloc):\n" + body


def test_a_breach_of_a_defence_the_run_goes_on_past_can_be_derived_away(grader):
    """A candidate whose timed outputs are wrong: hardened says wrong (check_timed); derived without it, the
    same run says correct with a speed, and the catalogue says which defence made the difference."""
    src = ("_n = [0]\n" + _gelu("    _n[0] += 1\n    x = x['x']\n    if _n[0] > 5:\n        return x * 0\n"
                                "    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))\n"))
    r = kbench.evaluate("L1_gelu", src, HARDENED, "phase", grader=grader)
    assert r.status == "wrong" and "check_timed" in r.breaches, (r.status, r.msg, r.breaches)
    view = defences.derive(r, {"check_timed"})
    assert view is not None and view.status == "correct" and view.timing is not None
    assert defences.derive(r, {"gate"}) is r  # the gate passed it: without the gate the run is the same
    assert defences.derive(r, {"nan_alloc"}) is None  # that defence changes the run: it needs a run of its own
    gated = kbench.evaluate("L1_gelu", "import os\n" + _gelu("    return x['x']\n"), HARDENED, "os", grader=grader)
    assert gated.status == "rejected" and defences.derive(gated, {"gate"}) is None


def test_the_worker_clock_view_is_the_worker_s_own_report(grader):
    r = kbench.evaluate("L1_gelu", kbench.TASK["L1_gelu"].ref_src, HARDENED, "ref", grader=grader)
    assert r.correct and r.worker_clock is not None and r.worker_clock.n_samples == r.timing.n_samples
    view = defences.derive(r, {"grader_clock"})
    assert view is not None and view.timing is r.worker_clock


@pytest.mark.parametrize("off", ["centred_checks", "property_checks", "float64_recheck"])
def test_a_derived_judging_view_agrees_with_a_run_without_the_check(off):
    """Shortcut kernels caught by one judging defence: derived without it == graded without it."""
    table = tomllib.loads((TESTS / "shortcuts" / "cases.toml").read_text())
    picked = [(name, row) for name, row in table.items()][:6]
    mode = dataclasses.replace(HARDENED, timing=None)
    g = Grader(seed=11)
    try:
        for name, row in picked:
            src = (TESTS / "shortcuts" / f"{name}.py").read_text()
            full = kbench.evaluate(row["task"], src, mode, name, grader=g)
            derived = defences.derive(full, {off}, timed=False)
            direct = kbench.evaluate(row["task"], src, mode.without(off), name, grader=g)
            assert derived is not None and derived.status == direct.status, (name, off, derived.msg, direct.msg)
    finally:
        g.close()


def test_an_output_in_the_alloc_pool_is_judged_without_exact_output_too(grader):
    """Without exact_output the output is read after the call (whatever it is), so the pool must not be NaN-filled
    before that read: an honest kernel writing into ``alloc`` was judged wrong there ("max abs err inf"), and the
    matrix showed its reward-hack rows against that."""
    c = next(c for c in LIBRARY if c.task == "L1_softmax" and c.name == "inplace")
    mode = dataclasses.replace(HARDENED, timing=None).without("exact_output", "float64_recheck")
    r = kbench.evaluate("L1_softmax", c.src, mode, "inplace", grader=grader)
    assert r.status == "correct", r.msg


def test_evaluations_leave_no_alloc_pool_open_in_the_grading_process(grader):
    """Each run's alloc pool (a memfd) is closed with its run: a long-lived grader kept every one (an fd and
    2 x output + 1 MiB of shared memory per evaluation)."""
    import os

    def pools() -> int:
        n = 0
        for fd in os.listdir("/proc/self/fd"):
            try:
                n += "kbench-scratch" in os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                pass
        return n

    before = pools()
    mode = dataclasses.replace(HARDENED, timing=None)
    for _ in range(2):
        assert kbench.evaluate("L1_gelu", kbench.TASK["L1_gelu"].ref_src, mode, "ref", grader=grader).correct
    assert pools() == before
