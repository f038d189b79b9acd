"""The open findings of the 12-02 break audit (tests/shortcuts_found/): shortcuts hardened still calls `correct`.

Each is a strict expected failure of "hardened judges it wrong": today it is judged correct (the xfail holds);
the day a mechanism catches it, the test passes, strict xfail turns that into a failure, and the file moves to
tests/shortcuts/ with its table in cases.toml. Correctness only (no timing), on the session grader's trials.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

import kbench
from kbench import HARDENED

HERE = Path(__file__).parent / "shortcuts_found"
TABLE = dict(re.findall(r"^\| (\w+)\.py \| (\w+) \|$", (HERE / "README.md").read_text(), re.MULTILINE))


def test_every_open_finding_is_listed_with_its_task():
    assert sorted(p.stem for p in HERE.glob("*.py")) == sorted(TABLE)
    assert all(task in kbench.TASK for task in TABLE.values())


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="open finding of the 12-02 break audit (tests/shortcuts_found/README.md)")
@pytest.mark.parametrize("name", sorted(TABLE))
def test_open_shortcut_is_judged_wrong(grader, name):
    src = (HERE / f"{name}.py").read_text()
    r = kbench.evaluate(TABLE[name], src, dataclasses.replace(HARDENED, timing=None), name, grader=grader)
    assert r.status == "wrong", f"{name}: {r.status} ({r.msg})"
