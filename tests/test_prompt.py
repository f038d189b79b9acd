"""`kbench prompt`: what a model is told, read from the engine (so it cannot drift from the grader)."""

from __future__ import annotations

import json

import pytest

from kbench.core.modes import HARDENED
from kbench.core.tasks import TASK
from kbench_cli.cli import main
from kbench_cli.prompt import allowed_imports, banned_builtins, build


@pytest.mark.parametrize("task", list(TASK))
def test_prompt_holds_task_reference_contract_and_rules(task: str) -> None:
    p = build(task, "one-shot")
    text = p["prompt"]
    t = TASK[task]
    assert t.ref_src.strip() in text and t.description in text and str(tuple(t.out_shape)) in text
    assert "forward(x, params, alloc)" in text and "init(params)" in text
    assert f"allclose(atol={HARDENED.atol:g}, rtol={HARDENED.rtol:g})" in text
    assert all(d in text for d in HARDENED.dists)
    assert "numpy" in allowed_imports() and "math" in allowed_imports() and "eval" in banned_builtins()
    assert all(name in text for name in set(allowed_imports()) | banned_builtins())
    assert p["example"] is not None and p["example"]["task"] != task  # the example never gives the answer away
    assert p["example"]["solution"].strip()[:40] in text
    assert [x["name"] for x in p["params"]] == list(t.make_params(__import__("numpy").random.default_rng(1)))


def test_contract_only_has_no_example() -> None:
    p = build("L1_gelu", "contract-only")
    assert p["example"] is None and "## Example" not in p["prompt"]
    assert TASK["L1_gelu"].ref_src.strip() in p["prompt"]


def test_params_are_described_by_shape() -> None:
    params = {x["name"]: x for x in build("L2_gemm_relu_scale", "contract-only")["params"]}
    assert params["W"]["shape"] == [1024, 1024] and "float32" in params["W"]["kind"]
    assert params["scale"]["shape"] is None and params["scale"]["kind"] == "float"


def test_prompt_cli(capsys: pytest.CaptureFixture) -> None:
    assert main(["prompt", "L1_softmax", "--style", "contract-only"]) == 0
    assert capsys.readouterr().out.startswith("You are writing a fast numpy kernel")
    assert main(["prompt", "L1_softmax", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["task"] == "L1_softmax" and d["style"] == "one-shot" and d["prompt"] and d["rules"]
    assert main(["prompt", "L0_nothing"]) == 2
    assert "unknown task 'L0_nothing'" in capsys.readouterr().err


def test_allowed_modules_are_the_gates_own_list() -> None:
    """One source of truth: every module the gate accepts is named in the prompt, and each one named imports
    cleanly through the gate (issue 17: the prompt said "numpy and math only" while the gate took typing...)."""
    from kbench.grading import static_gate

    text = build("L1_softmax", "contract-only")["prompt"]
    assert set(allowed_imports()) == set(static_gate.ALLOWED_MODULES)
    for m in static_gate.ALLOWED_MODULES:
        assert m in text
        assert static_gate.check(f"import {m}\n") == [], m
    for m, names in static_gate.HELPER_MODULES.items():
        for n in names:
            assert f"{m}.{n}" in text
            assert static_gate.check(f"from {m} import {n}\n"), f"{m}.{n} passes the gate"
