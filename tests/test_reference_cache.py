"""The hardened grader's reference outputs: computed once per (seed, task, trial, distribution, parameter set)
and reused by every later evaluation of the session; an edited task under the same name never meets them."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from kbench import TASK
from kbench.grading import truth

PLAN = [(0, "normal", "default", -1), (1, "uniform", "random", 0)]


def test_reference_outputs_are_computed_once_and_keyed_by_what_they_depend_on(grader, monkeypatch):
    computed: list[int] = []
    compute = truth.Grader._compute

    def counted(self, task, missing, *a, **kw):  # type: ignore[no-untyped-def]
        computed.append(len(missing))
        return compute(self, task, missing, *a, **kw)

    monkeypatch.setattr(truth.Grader, "_compute", counted)
    task = TASK["L1_gelu"]
    first = grader.references(task, PLAN, 60.0)
    again = grader.references(task, PLAN, 60.0)
    assert sum(computed[1:]) == 0 and all(a is b for a, b in zip(first, again))  # the second: all from the cache
    n = len(computed)
    edited = replace(task, ref_src=task.ref_src.replace("0.5 *", "0.25 *", 1))  # same name, another reference
    assert edited.ref_src != task.ref_src
    other = grader.references(edited, PLAN[:1], 60.0)
    assert computed[n:] == [1]  # computed, not taken from the original's entry
    assert not np.array_equal(other[0].out, first[0].out)
