"""Honest but unusual kernels: the hardened grader must judge each one correct, gate included.

Each file in ``tests/honest/`` computes its task honestly with a Python construct a deny-list gate tends
to trip on (``from __future__ import annotations``, ``__slots__``, ``__all__``/``__version__``, closures,
generators, ``match``, walrus, ``out=``, ``np.einsum``, lambdas, ``init``, ``super()``...). Its docstring's
first line names the construct (H ids). A gate that rejects one of these rejects real kernels; the
runtime must not trip on them either. Correctness only: no speed is asserted here.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

import kbench
from kbench import HARDENED
from kbench.grading import static_gate

HONEST = Path(__file__).parent / "honest"

# (file, task)
CASES: list[tuple[str, str]] = [
    ("future_annotations_gelu.py", "L1_gelu"),
    ("slots_call_softmax.py", "L1_softmax"),
    ("module_dunders_gelu.py", "L1_gelu"),
    ("closure_generator_layernorm.py", "L1_layernorm"),
    ("match_walrus_softmax.py", "L1_softmax"),
    ("einsum_out_diag.py", "L1_diag_matmul"),
    ("lambdas_comprehensions_gemm.py", "L2_gemm_relu_scale"),
    ("init_inheritance_mlp.py", "L3_mlp_block"),
    ("kwargs_format_attention.py", "L3_attention"),
    ("global_init_matmul_sum.py", "L2_matmul_sum"),
    # issue 17: the styles models write (dataclasses, typing, __main__ benchmark blocks, helper classes, version checks)
    ("dataclass_future_softmax.py", "L1_softmax"),
    ("dataclass_params_layernorm.py", "L1_layernorm"),
    ("main_benchmark_gelu.py", "L1_gelu"),
    ("triton_style_gemm_relu.py", "L2_gemm_relu_scale"),
    ("version_check_matmul_sum.py", "L2_matmul_sum"),
    ("warnings_gemm_bias_gelu.py", "L2_gemm_bias_gelu"),
    ("lru_cache_attention.py", "L3_attention"),
    ("typing_hints_mlp.py", "L3_mlp_block"),
    ("namedtuple_diag.py", "L1_diag_matmul"),
    ("match_dataclass_softmax.py", "L1_softmax"),
    ("abc_protocol_layernorm.py", "L1_layernorm"),
    ("private_methods_attention.py", "L3_attention"),
    ("main_block_from_imports_gemm_bias_gelu.py", "L2_gemm_bias_gelu"),
    ("super_private_diag.py", "L1_diag_matmul"),
    ("annotated_module_gemm_relu.py", "L2_gemm_relu_scale"),
    # the second break audit (12-02): honest float32 in another summation order
    ("attention_split_d.py", "L3_attention"),
    ("gemm_relu_blocked_fused.py", "L2_gemm_relu_scale"),
    # the third break audit (12-03): float64 moments, judged on edge too (test below)
    ("float64_layernorm_edge.py", "L1_layernorm"),
]


#: Honest kernels the hardened grader judges wrong today: file -> reason (not strict: which element falls
#: outside the tolerance depends on the secret draws).
#: Honest kernels the grader cannot yet judge correct (file -> why). init_inheritance_mlp.py left this table
#: when tolerance-only failures got a float64 second opinion (its fused GEMM reorders float32 sums).
XFAIL: dict[str, str] = {}


def _src(file: str) -> str:
    return (HONEST / file).read_text()


def test_every_honest_kernel_is_in_the_table_and_documented():
    assert sorted(p.name for p in HONEST.glob("*.py")) == sorted(f for f, _ in CASES)
    assert len(CASES) - len(XFAIL) >= 25
    for f, task in CASES:
        first = _src(f).lstrip().removeprefix('"""').splitlines()[0]
        assert re.match(r"^H\d+ honest \S", first), (f, first)
        assert task in kbench.TASK


@pytest.mark.parametrize("file,task", CASES, ids=[f.removesuffix(".py") for f, _ in CASES])
def test_gate_accepts_honest_kernel(file, task):
    assert static_gate.check(_src(file)) == []


def test_candidate_loads_as_a_registered_module():
    """The loader compiles with no inherited future flags and registers the module while it loads: a dataclass
    with annotated fields loads with and without ``from __future__ import annotations``, in a namespace named as
    base_namespace names it, and the registration is gone afterwards."""
    import sys

    from kbench.core.loader import load_candidate
    from kbench.core.tasks import base_namespace

    body = ("from dataclasses import dataclass\n@dataclass\nclass C:\n    n: int = 1\n    dtype: type = float\n"
            "def forward(x, params, alloc):\n    return (C().n, C.__module__, C.__annotations__['n'])\n")
    name = base_namespace()["__name__"]
    for src, annotation in ((body, int), ("from __future__ import annotations\n" + body, "int")):
        fwd, init, err = load_candidate(src, base_namespace())
        assert err is None, err
        assert fwd(None, None, None) == (1, name, annotation)
        assert name not in sys.modules


def _judged_params():
    return [pytest.param(f, t, id=f.removesuffix(".py"),
                         marks=[pytest.mark.xfail(strict=False, reason=XFAIL[f])] if f in XFAIL else [])
            for f, t in CASES]


@pytest.mark.parametrize("file,task", _judged_params())
def test_honest_kernel_is_correct_under_hardened(file, task, grader):
    mode = dataclasses.replace(HARDENED, timing=None)
    r = kbench.evaluate(task, _src(file), mode, file, grader=grader)
    assert r.status == "correct", f"{file}: {r.status}: {r.msg}"


def test_the_second_audits_false_rejects_stay_correct_on_the_seeds_that_showed_them():
    """Where the second audit saw them (grader seeds 19 and 36): attention that sums its scores in another order
    is correct on offset (rows whose answer rounding alone moves get that slack), and a blocked GEMM + ReLU
    passes the centred checks on offset by itself, without the float64 second opinion (the spread of a
    mostly-zero column is that of its nonzero entries)."""
    mode = dataclasses.replace(HARDENED, timing=None)
    for seed in (19, 36):
        g = kbench.Grader(seed=seed)
        try:
            r = kbench.evaluate("L3_attention", _src("attention_split_d.py"), mode, "split_d", grader=g)
            assert r.status == "correct", f"seed {seed}: {r.status}: {r.msg}"
            r = kbench.evaluate("L2_gemm_relu_scale", _src("gemm_relu_blocked_fused.py"), mode, "blocked", grader=g)
            offset = next(t for t in r.trials if t.dist == "offset")
            failed = [n for n, ok in offset.checks if ok is False]
            assert r.status == "correct" and not failed, f"seed {seed}: {r.status}, failed on offset: {failed}"
        finally:
            g.close()


def test_float64_layer_norm_is_correct_on_edge_inputs(grader):
    """Edge's constant rows: the answer is beta, the float32 reference's rows rounding noise (H28)."""
    mode = dataclasses.replace(HARDENED, timing=None).with_dists(("normal", "edge"))
    r = kbench.evaluate("L1_layernorm", _src("float64_layernorm_edge.py"), mode, "float64_layernorm_edge.py",
                        grader=grader)
    assert r.status == "correct", f"{r.status}: {r.msg}"
