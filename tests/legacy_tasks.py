"""kbench/core/tasks.py as it was before issue 20 (commit ad3a1cf), kept verbatim below this docstring: the
nine tasks as Python literals. tests/test_taskfile.py compares every field of the tasks now loaded from their
task files with these."""
# ruff: noqa

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

from kbench.core import distributions

F32 = np.float32
Params = dict[str, Any]
Inputs = dict[str, np.ndarray]

#: What a candidate's module namespace starts with.
def base_namespace() -> dict[str, Any]:
    return {"np": np, "math": math, "__name__": "candidate"}


@dataclass(frozen=True)
class Task:
    name: str
    level: int
    description: str
    ref_src: str
    inputs: dict[str, tuple[int, ...]]
    out_shape: tuple[int, ...]
    _make_params: Callable[[np.random.Generator, bool, int], Params] = field(repr=False)
    flops: float  # what the reference does
    bytes: float  # what the reference moves (each temporary written once, read once)
    min_flops: float  # the least arithmetic any correct kernel needs
    min_bytes: float  # read every input once, write the output once (params excluded: init may reshape them)
    # Judging (``kbench.core.judging``): the natural axis rows run along (per-row tolerances, the "row" of
    # the predictors and the input structure), and the property checks the task's math gives cheaply.
    axis: int = -1
    properties: tuple[str, ...] = ()
    # What the grader's trial inputs mix into each named distribution (``kbench.core.structured``).
    structure: str = "rows"

    # True on the grader's copy (``for_trials``): make_inputs draws the structured trial inputs.
    trial_structure: bool = field(default=False, repr=False, compare=False)

    def make_inputs(self, rng: np.random.Generator, dist: str = "normal") -> Inputs:
        """Fresh inputs drawn from the named distribution (the plain i.i.d. draw the lecture uses; on the
        grader's copy of the task, ``for_trials()``, the structured trial inputs)."""
        if self.trial_structure:
            return self.trial_inputs(rng, dist)
        return {k: distributions.sample(rng, dist, shape) for k, shape in self.inputs.items()}

    def trial_inputs(self, rng: np.random.Generator, dist: str = "normal") -> Inputs:
        """The hardened grader's trial inputs: the named distribution with the structure real inputs have
        mixed into a random share of the rows (``kbench.core.structured``; its docstring lists what)."""
        from kbench.core import structured

        x = {k: distributions.sample(rng, dist, shape) for k, shape in self.inputs.items()}
        for k, v in x.items():
            structured.structure_input(rng, self.structure, dist, k, v)
        return x

    def for_trials(self) -> "Task":
        """This task as the grader's trials see it: the same task whose ``make_inputs`` draws
        ``trial_inputs`` (so a grader that calls ``make_inputs`` needs no other change)."""
        t = _TRIAL_TASKS.get(self.name)
        if t is None or t._base is not self:
            t = replace(self, trial_structure=True)
            object.__setattr__(t, "_base", self)
            _TRIAL_TASKS[self.name] = t
        return t

    def make_params(self, rng: np.random.Generator, randomize: bool = False, draw: int = 0) -> Params:
        """Default-init parameters, or random draws.

        Random draws alternate the sign of scalar parameters with ``draw`` (0: negative, 1: positive):
        a coin-flip sign would let a sign bug through one evaluation in four.
        """
        return self._make_params(rng, randomize, draw)

    def ref_fn(self) -> Callable[..., np.ndarray]:
        """Execute ``ref_src`` and return its ``forward``."""
        ns = base_namespace()
        exec(compile(self.ref_src, f"<reference {self.name}>", "exec"), ns)  # noqa: S102 - our own source
        return ns["forward"]


_TRIAL_TASKS: dict[str, "Task"] = {}


def _no_params(rng: np.random.Generator, randomize: bool, draw: int) -> Params:
    return {}


def _weight(rng: np.random.Generator, shape: tuple[int, int], randomize: bool) -> np.ndarray:
    """W scaled by 1/sqrt(fan_in); random draws also vary the overall gain."""
    gain = rng.uniform(0.5, 2.0) if randomize else 1.0
    w = distributions.sample(rng, "normal", shape)  # float32, filled in place (no float64 pass, no copy)
    w *= F32(gain / math.sqrt(shape[0]))
    return w


def _signed(rng: np.random.Generator, draw: int) -> float:
    return float(rng.uniform(0.5, 2.0)) * (-1.0 if draw % 2 == 0 else 1.0)


# ---------------------------------------------------------------- references

DIAG_SRC = '''
def forward(x, params, alloc):
    """diag(a) @ B, materialising the diagonal matrix."""
    return np.diag(x["a"]) @ x["B"]
'''

SOFTMAX_SRC = '''
def forward(x, params, alloc):
    """Numerically stable softmax over the last axis."""
    x = x["x"]
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
'''

LAYERNORM_SRC = '''
def forward(x, params, alloc):
    """Layer norm over the last axis (two-pass variance, eps inside the square root)."""
    x = x["x"]
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + params["eps"]) * params["gamma"] + params["beta"]
'''

GELU_SRC = '''
def forward(x, params, alloc):
    """GELU, tanh approximation, written with x**3."""
    x = x["x"]
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
'''

MATMUL_SUM_SRC = '''
def forward(x, params, alloc):
    """(x @ W) summed over the output features."""
    return (x["x"] @ params["W"]).sum(axis=1, keepdims=True)
'''

GEMM_RELU_SCALE_SRC = '''
def forward(x, params, alloc):
    """relu(x @ W + b) * scale."""
    return np.maximum(x["x"] @ params["W"] + params["b"], 0) * params["scale"]
'''

GEMM_BIAS_GELU_SRC = '''
def forward(x, params, alloc):
    """GELU (tanh approximation, x**3) of x @ W + b."""
    h = x["x"] @ params["W"] + params["b"]
    return 0.5 * h * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * h**3)))
'''

MLP_SRC = '''
def forward(x, params, alloc):
    """SwiGLU MLP block: (silu(x @ W_gate) * (x @ W_up)) @ W_down."""
    x = x["x"]
    g = x @ params["W_gate"]
    with np.errstate(over="ignore"):  # exp(-g) overflows to inf for very negative g; silu -> -0
        silu = g / (1.0 + np.exp(-g))
    return (silu * (x @ params["W_up"])) @ params["W_down"]
'''

ATTENTION_SRC = '''
def forward(x, params, alloc):
    """softmax(q @ k^T / sqrt(d)) @ v per head, stable softmax."""
    q, k, v = x["q"], x["k"], x["v"]
    s = q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1])
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    return p @ v
'''

# ---------------------------------------------------------------- parameter makers

LN_R, LN_C = 2048, 1024


def _layernorm_params(rng: np.random.Generator, randomize: bool, draw: int) -> Params:
    if not randomize:
        return {"gamma": np.ones(LN_C, F32), "beta": np.zeros(LN_C, F32), "eps": 1e-5}
    return {
        "gamma": (1.0 + 0.5 * rng.standard_normal(LN_C)).astype(F32),
        "beta": rng.standard_normal(LN_C).astype(F32),
        "eps": 1e-5,
    }


def _gemm_params(K: int, N: int, bias: bool, scale: bool) -> Callable[[np.random.Generator, bool, int], Params]:
    def make(rng: np.random.Generator, randomize: bool, draw: int) -> Params:
        p: Params = {"W": _weight(rng, (K, N), randomize)}
        if bias:
            p["b"] = (rng.standard_normal(N).astype(F32) if randomize else np.zeros(N, F32))
        if scale:
            p["scale"] = _signed(rng, draw) if randomize else 0.5
        return p

    return make


MLP_T, MLP_D, MLP_H = 256, 512, 1376


def _mlp_params(rng: np.random.Generator, randomize: bool, draw: int) -> Params:
    return {
        "W_gate": _weight(rng, (MLP_D, MLP_H), randomize),
        "W_up": _weight(rng, (MLP_D, MLP_H), randomize),
        "W_down": _weight(rng, (MLP_H, MLP_D), randomize),
    }


# ---------------------------------------------------------------- the table

B4 = 4  # bytes per float32


def _gemm_epilogue(name: str, description: str, src: str, b: int, k: int, n: int, *, scale: bool,
                   flops_per_out: float, min_flops_per_out: float, floats_per_out: int,
                   properties: tuple[str, ...] = ()) -> Task:
    """x (b, k) @ W (k, n) + bias, then an elementwise epilogue: the reference's cost is the GEMM plus
    ``flops_per_out`` and ``floats_per_out`` (its temporaries' traffic) per output element; the floor is the
    GEMM, the epilogue's necessary flops, and reading x and writing the output once."""
    return Task(name, 2, description, src, {"x": (b, k)}, (b, n), _gemm_params(k, n, True, scale),
                flops=2.0 * b * k * n + flops_per_out * b * n,
                bytes=B4 * (b * k + k * n + n + floats_per_out * b * n),
                min_flops=2.0 * b * k * n + min_flops_per_out * b * n,
                min_bytes=B4 * (b * k + b * n), properties=properties, structure="gemm")


def _build() -> tuple[Task, ...]:
    N = 2048
    R, C = 2048, 1024
    GR, GC = 512, 512
    MS_B, MS_K, MS_N = 512, 1024, 1024
    RS_B, RS_K, RS_N = 512, 1024, 1024
    BG_B, BG_K, BG_N = 256, 512, 512
    T, D, H = MLP_T, MLP_D, MLP_H
    AH, AS, AD = 8, 512, 64
    return (
        Task("L1_diag_matmul", 1, "Scale the rows of B by a: the reference builds diag(a) and runs a dense GEMM.",
             DIAG_SRC, {"a": (N,), "B": (N, N)}, (N, N), _no_params,
             flops=2.0 * N**3, bytes=B4 * (N + 4 * N * N),
             min_flops=float(N * N), min_bytes=B4 * (N + 2 * N * N), structure="diag"),
        Task("L1_softmax", 1, "Softmax over the last axis of a (2048, 1024) matrix.",
             SOFTMAX_SRC, {"x": (R, C)}, (R, C), _no_params,
             flops=5.0 * R * C, bytes=B4 * R * C * 8,
             min_flops=4.0 * R * C, min_bytes=B4 * 2 * R * C,
             properties=("nonnegative", "rows_sum_to_one"), structure="softmax"),
        Task("L1_layernorm", 1, "Layer norm over the last axis with gamma, beta and eps = 1e-5.",
             LAYERNORM_SRC, {"x": (LN_R, LN_C)}, (LN_R, LN_C), _layernorm_params,
             flops=9.0 * LN_R * LN_C, bytes=B4 * LN_R * LN_C * 14,
             min_flops=7.0 * LN_R * LN_C, min_bytes=B4 * 2 * LN_R * LN_C,
             properties=("normalised_rows",), structure="layernorm"),
        Task("L1_gelu", 1, "Tanh-approximation GELU, elementwise, written with x**3.",
             GELU_SRC, {"x": (GR, GC)}, (GR, GC), _no_params,
             flops=9.0 * GR * GC, bytes=B4 * GR * GC * 14,
             min_flops=8.0 * GR * GC, min_bytes=B4 * 2 * GR * GC, structure="gelu"),
        Task("L2_matmul_sum", 2, "Matmul followed by a sum over output features: (x @ W).sum(1).",
             MATMUL_SUM_SRC, {"x": (MS_B, MS_K)}, (MS_B, 1), _gemm_params(MS_K, MS_N, False, False),
             flops=2.0 * MS_B * MS_K * MS_N + MS_B * MS_N,
             bytes=B4 * (MS_B * MS_K + MS_K * MS_N + 2 * MS_B * MS_N + MS_B),
             min_flops=float(2 * MS_B * MS_K),  # init may pre-sum W's rows (untimed)
             min_bytes=B4 * (MS_B * MS_K + MS_B), axis=0, structure="gemm"),
        _gemm_epilogue("L2_gemm_relu_scale", "GEMM + bias, ReLU, then multiply by a scalar scale.",
                       GEMM_RELU_SCALE_SRC, RS_B, RS_K, RS_N, scale=True,
                       flops_per_out=3.0, min_flops_per_out=2.0, floats_per_out=6, properties=("sign_of_scale",)),
        _gemm_epilogue("L2_gemm_bias_gelu", "GEMM + bias followed by the L1 tanh GELU (x**3 form).",
                       GEMM_BIAS_GELU_SRC, BG_B, BG_K, BG_N, scale=False,
                       flops_per_out=10.0, min_flops_per_out=8.0, floats_per_out=16),
        Task("L3_mlp_block", 3, "SwiGLU feed-forward block: (silu(x Wg) * (x Wu)) Wd.",
             MLP_SRC, {"x": (T, D)}, (T, D), _mlp_params,
             flops=6.0 * T * D * H + 5.0 * T * H,
             bytes=B4 * (T * D + 3 * D * H + 10 * T * H + T * D),
             min_flops=6.0 * T * D * H + 4.0 * T * H,
             min_bytes=B4 * (2 * T * D), structure="gemm"),
        Task("L3_attention", 3, "Scaled dot-product attention over 8 heads of 512 tokens, d = 64.",
             ATTENTION_SRC, {"q": (AH, AS, AD), "k": (AH, AS, AD), "v": (AH, AS, AD)}, (AH, AS, AD), _no_params,
             flops=4.0 * AH * AS * AS * AD + 5.0 * AH * AS * AS,
             bytes=B4 * (3 * AH * AS * AD + 10 * AH * AS * AS + AH * AS * AD),
             min_flops=4.0 * AH * AS * AS * AD + 4.0 * AH * AS * AS,
             min_bytes=B4 * 4 * AH * AS * AD, properties=("within_range_of_v",), structure="attention"),
    )


TASKS: tuple[Task, ...] = _build()
TASK: dict[str, Task] = {t.name: t for t in TASKS}


def get(name: str) -> Task:
    try:
        return TASK[name]
    except KeyError:
        raise KeyError(f"unknown task {name!r} (known: {', '.join(TASK)})") from None
