"""The shortcut suite: structural cheats that compute something cheaper than the task and look right on
i.i.d. inputs at one scale. Each must be `wrong` under hardened, caught on the trial and by the check its
table names (tests/shortcuts/cases.toml); the plain draws it passes show what the structure adds.

Correctness only (no timing): a shortcut is about the answer, not the speed.
"""

from __future__ import annotations

import dataclasses
import math
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest

import kbench
from kbench import HARDENED, TASK
from kbench.core.compare import compare
from kbench.core.loader import load_candidate

HERE = Path(__file__).parent / "shortcuts"
CASES: dict[str, dict] = tomllib.loads((HERE / "cases.toml").read_text())
CHECKS = re.compile(r"^trial (\d+) checks: (?:failed ([^(]+) \(|(\d+) passed)")


def _src(name: str) -> str:
    return (HERE / f"{name}.py").read_text()


def test_the_suite_is_complete_and_documented():
    files = sorted(p.stem for p in HERE.glob("*.py"))
    assert files == sorted(CASES), "every shortcut has a table and every table a file"
    assert len(CASES) >= 12
    for name, case in CASES.items():
        first = _src(name).lstrip().removeprefix('"""').splitlines()[0]
        assert re.match(r"^S\d+ \S", first), (name, first)
        assert case["task"] in kbench.TASK and case["on"] in kbench.DISTS and case["caught_by"] and case["why"]


def _failed_checks(events: list[kbench.Event]) -> dict[int, list[str]]:
    """trial index -> the checks that failed on it, from the step log's per-trial checks line."""
    out: dict[int, list[str]] = {}
    for e in events:
        m = CHECKS.match(e.message) if e.step == "trial" else None
        if m:
            out[int(m.group(1)) - 1] = [s.strip() for s in m.group(2).split(",")] if m.group(2) else []
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_shortcut_is_wrong_under_hardened_and_names_its_check(name, grader):
    case = CASES[name]
    events: list[kbench.Event] = []
    mode = dataclasses.replace(HARDENED, timing=None)
    r = kbench.evaluate(case["task"], _src(name), mode, name, grader=grader, on_event=events.append)
    assert r.status == "wrong", f"{name}: {r.status}: {r.msg}"
    failed = _failed_checks(events)
    on = [t for t in r.trials if t.dist == case["on"]]
    assert on and not on[0].ok, f"{name}: not caught on {case['on']}: {[(t.dist, t.ok) for t in r.trials]}"
    assert case["caught_by"] in failed[on[0].index], f"{name} on {case['on']}: failed {failed[on[0].index]}"


def test_the_plain_draws_do_not_see_them():
    """What the structure adds: on the lecture's plain draws each shortcut passes closeness where its table
    says (a fixed seed; the reference computed here)."""
    ns = {"np": np, "math": math}
    for name, case in CASES.items():
        t = TASK[case["task"]]
        fwd, init, err = load_candidate(_src(name), ns)
        assert err is None, (name, err)
        for dist in case["plain_passes"]:
            rng = np.random.default_rng([7, kbench.DISTS.index(dist)])
            x = t.make_inputs(rng, dist)
            params = t.make_params(rng, False)
            ref = t.ref_fn()(x, params, None)
            with np.errstate(all="ignore"):
                out = fwd({k: v.copy() for k, v in x.items()}, init(dict(params)) if init else params,
                          lambda s, dt=np.float32: np.full(s, np.nan, dt))
            assert compare(out, ref, axis=t.axis).ok, f"{name} is already caught on plain {dist}"
