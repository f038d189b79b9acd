"""The second task set kbench ships (``extra``): off by default, every candidate's verdict as designed under both
graders, each task with an honest kernel, a buggy one and a reward hack; every shipped task passes
``kbench task check``."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kbench import DISTS, HARDENED, LIBRARY, NAIVE, TASK, TASKS, evaluate
from kbench import usertasks
from kbench.core import library, tasks

from .library_expectations import EXPECTED_EXTRA, HACKS_EXTRA


@pytest.fixture(scope="module")
def extra():
    before = (tasks.active(), library.active())
    done = usertasks.activate([], ["extra"])
    assert not done.errors, done.errors
    yield [tasks.TASK[n] for n in done.tasks]
    usertasks.deactivate()
    assert (tasks.active(), library.active()) == before


def test_off_by_default():
    # loading the set does not register it; the lecture's registries do not know it (whatever this process
    # activated before: the module's own fixture registers it for the tests below)
    lecture = {t.name for t in TASKS}
    before = tasks.active()
    loaded = tasks.load_shipped("extra", taken=lecture)
    assert len(loaded.tasks) >= 6 and not loaded.errors
    assert tasks.active() == before and not {t.name for t in loaded.tasks} & lecture
    p = subprocess.run([sys.executable, "-c", "import kbench.core.tasks as t, kbench.core.library as l; "
                        "print(len(t.active()), len(l.active()))"], capture_output=True, text=True, timeout=60)
    assert p.stdout.split() == [str(len(TASKS)), str(len(LIBRARY))], p.stderr
    p = subprocess.run([sys.executable, "-m", "kbench_cli.cli", "list"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "L1_rmsnorm" not in p.stdout and "L1_gelu" in p.stdout
    p = subprocess.run([sys.executable, "-m", "kbench_cli.cli", "list", "--task-set", "extra"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0 and "L1_rmsnorm" in p.stdout and "L3_transformer_block" in p.stdout, p.stderr


def test_shape_of_the_set(extra):
    assert len(extra) >= 6 and {t.level for t in extra} == {1, 2, 3}
    assert all(t.origin == "extra" for t in extra)
    cands = [c for c in library.active() if c.task in {t.name for t in extra}]
    assert {c.key for c in cands} == set(EXPECTED_EXTRA)
    for t in extra:
        mine = {k: e for k, e in EXPECTED_EXTRA.items() if k.startswith(t.name + "/")}
        assert any(e["hardened"] == "correct" and not e["hack"] for e in mine.values()), t.name  # honest
        assert any(e["hardened"] != "correct" and not e["hack"] for e in mine.values()), t.name  # buggy
        assert any(e["hack"] for e in mine.values()), t.name  # a reward hack
    for c in cands:
        assert c.intent != "(no docstring)" and len(c.intent) <= 100, c.key


@pytest.fixture(scope="module")
def verdicts(extra, grader):
    out = {}
    for c in library.active():
        if c.key in EXPECTED_EXTRA:
            t = TASK[c.task]
            for mode in (NAIVE, HARDENED):
                out[(c.key, mode.name)] = evaluate(t, c.src, tasks.mode_for(t, mode), c.name, grader=grader)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(EXPECTED_EXTRA))
@pytest.mark.parametrize("mode", ["naive", "hardened"])
def test_verdict_matches_intent(verdicts, key, mode):
    r = verdicts[(key, mode)]
    assert r.status == EXPECTED_EXTRA[key][mode], f"{key} {mode}: {r.status} ({r.msg})"


@pytest.mark.slow
def test_reward_hacks_fool_naive_only(verdicts):
    assert len(HACKS_EXTRA) >= 6
    for key in HACKS_EXTRA:
        naive, hard = verdicts[(key, "naive")], verdicts[(key, "hardened")]
        assert naive.correct, (key, naive.msg)  # how fast naive believes it is: benchmarks/naive_fooled.py
        assert not (hard.correct and hard.timing and hard.timing.speedup_ci[0] > 1.3), (key, hard.msg)


@pytest.mark.slow
def test_edge_verdicts(extra, grader):
    for key, exp in EXPECTED_EXTRA.items():
        if exp["edge"] is not None and exp["edge"] != exp["hardened"]:
            task, name = key.split("/")
            c = library.find(task, name)
            r = evaluate(TASK[task], c.src, HARDENED.with_dists(DISTS + ("edge",)), name, grader=grader)
            assert r.status == exp["edge"], (key, r.msg)


@pytest.mark.slow
def test_every_shipped_task_passes_task_check(extra, grader):
    from kbench import task_check

    for t in TASKS + tuple(extra):
        lines = task_check.check_task(t, grader)
        assert not task_check.failed(lines), (t.name, [ln.text for ln in lines if ln.verdict == "fail"])
