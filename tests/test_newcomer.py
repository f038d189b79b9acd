"""A newcomer adds a task by writing one file and nothing else: ``kbench task check`` on it, then a candidate
graded against it in both modes; and a KernelBench-style numpy problem file loads and grades as it is.
(The explorer half of the newcomer's path is ``tests/tui/test_tui_tasks.py``.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

#: The task file the README shows (kept identical to it).
README_TASK = '''\
"""RMSNorm over the last axis: x / sqrt(mean(x**2) + eps) * gamma."""

LEVEL = 1
INPUTS = {"x": (2048, 1024)}
OUTPUT = (2048, 1024)
STRUCTURE = "layernorm"  # trial inputs get rows at many scales and offsets


def make_params(rng, randomize, draw):
    """gamma = 1 by default; the random draws scatter it around 1."""
    if randomize:
        gamma = (1 + 0.5 * rng.standard_normal(1024)).astype(np.float32)
    else:
        gamma = np.ones(1024, np.float32)
    return {"gamma": gamma, "eps": 1e-6}


def forward(x, params, alloc):
    x = x["x"]
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + params["eps"]) * params["gamma"]
'''

FAST = '''\
"""Row sums of squares by einsum; the scaling written once, in place."""


def forward(x, params, alloc):
    a = x["x"]
    inv = 1.0 / np.sqrt(np.einsum("ij,ij->i", a, a) / np.float32(a.shape[1]) + np.float32(params["eps"]))
    out = np.multiply(a, inv.astype(np.float32)[:, None], out=alloc(a.shape))
    out *= params["gamma"]
    return out
'''

#: A KernelBench problem as its authors write them, in numpy: Model, get_inputs, get_init_inputs.
KERNELBENCH = '''\
import numpy as np


class Model:
    """Simple model that performs a matrix multiplication, adds a bias and applies ReLU."""

    def __init__(self, in_features, out_features):
        self.weight = (np.random.randn(in_features, out_features) / np.sqrt(in_features)).astype(np.float32)
        self.bias = np.random.randn(out_features).astype(np.float32)
        self.negative_slope = 0.0

    def forward(self, x):
        h = x @ self.weight + self.bias
        return np.where(h > 0, h, h * self.negative_slope)


batch_size = 256
in_features = 512
out_features = 256


def get_inputs():
    return [np.random.randn(batch_size, in_features).astype(np.float32)]


def get_init_inputs():
    return [in_features, out_features]
'''

KB_CANDIDATE = '''\
"""One GEMM, bias and ReLU in place (the Model's weight and bias arrive as params)."""


def forward(x, params, alloc):
    h = x["x"] @ params["weight"]
    h += params["bias"]
    np.maximum(h, 0, out=h)
    return h
'''


def test_the_readme_shows_this_task_file_and_it_is_short() -> None:
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    assert README_TASK in readme
    assert len(README_TASK.splitlines()) < 30


def kbench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kbench_cli.cli", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd, stdin=subprocess.DEVNULL)


@pytest.mark.slow
def test_one_file_then_check_then_grade_in_both_modes(tmp_path: Path) -> None:
    assert len(README_TASK.splitlines()) < 30
    (tmp_path / "my_tasks").mkdir()
    (tmp_path / "my_tasks" / "my_rmsnorm.py").write_text(README_TASK)
    (tmp_path / "fast_rmsnorm.py").write_text(FAST)
    check = kbench("task", "check", "my_tasks/my_rmsnorm.py", cwd=tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr
    lines = check.stdout.splitlines()
    for name in ("load", "gate", "params", "finite", "informative", "deterministic", "time"):
        assert any(ln.split()[1:2] == [name] for ln in lines), (name, check.stdout)
    assert lines[-1].startswith("ready"), check.stdout
    for mode in ("naive", "hardened"):
        p = kbench("eval", "my_rmsnorm", "fast_rmsnorm.py", "--tasks", "my_tasks", "--mode", mode, "--json",
                   cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        r = json.loads(p.stdout)
        assert (r["task"], r["status"], r["mode"]) == ("my_rmsnorm", "correct", mode) and r["speedup"] > 0
    # the same folder from the settings file instead of the flag
    data = tmp_path / "data"
    data.mkdir()
    (data / "settings.json").write_text(json.dumps({"tasks": [str(tmp_path / "my_tasks")]}))
    p = subprocess.run([sys.executable, "-m", "kbench_cli.cli", "list"], capture_output=True, text=True, timeout=120,
                       cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "KBENCH_DATA_DIR": str(data)})
    assert p.returncode == 0 and "my_rmsnorm" in p.stdout, p.stderr


@pytest.mark.slow
def test_a_kernelbench_style_file_loads_and_grades(tmp_path: Path) -> None:
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "gemm_bias_relu.py").write_text(KERNELBENCH)
    (tmp_path / "cand.py").write_text(KB_CANDIDATE)
    listed = kbench("list", "--tasks", "kb", cwd=tmp_path)
    assert listed.returncode == 0 and "gemm_bias_relu" in listed.stdout, listed.stderr
    check = kbench("task", "check", "kb/gemm_bias_relu.py", "--json", cwd=tmp_path)
    out = json.loads(check.stdout)
    assert check.returncode == 0 and out["ok"], out
    assert out["checks"][0]["text"].startswith("gemm_bias_relu (level 1): inputs x (256, 512), output (256, 256)")
    for mode in ("naive", "hardened"):
        p = kbench("eval", "gemm_bias_relu", "cand.py", "--tasks", "kb", "--mode", mode, "--json", cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        assert json.loads(p.stdout)["status"] == "correct"
    # a wrong kernel is wrong against it (the reference really is the Model's forward)
    (tmp_path / "wrong.py").write_text(KB_CANDIDATE.replace("    h += params[\"bias\"]\n", ""))
    p = kbench("eval", "gemm_bias_relu", "wrong.py", "--tasks", "kb", "--json", cwd=tmp_path)
    assert p.returncode == 1 and json.loads(p.stdout)["status"] == "wrong"


def test_a_kernelbench_file_runs_nothing_in_the_grading_process(tmp_path: Path, monkeypatch) -> None:
    """Its Model, get_inputs and get_init_inputs run in a confined worker: a file that would write here cannot."""
    from kbench import usertasks

    marker = tmp_path / "ran_here"
    src = KERNELBENCH.replace("def get_inputs():\n", f"def get_inputs():\n    open({str(marker)!r}, 'w').write('x')\n")
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "writes.py").write_text(src)
    loaded = usertasks.load_dir(tmp_path / "kb")
    # the worker may not write files (Landlock, the audit hook): the probe fails, one line, nothing written
    assert not marker.exists()
    assert (loaded.tasks and not loaded.errors) or (len(loaded.errors) == 1 and "writes.py" in loaded.errors[0])
    if loaded.errors:
        assert "\n" not in loaded.errors[0]


CHECK_CASES = {
    "zeros": ('"""ReLU of minus x: all zeros wherever x is positive."""\nINPUTS = {"x": (512, 512)}\n'
              'OUTPUT = (512, 512)\n\ndef forward(x, params, alloc):\n    return np.maximum(-x["x"], 0)\n',
              "informative", "the output is all zeros on lognormal"),
    "mean": ('"""Each row\'s mean, broadcast along the row."""\nINPUTS = {"x": (512, 512)}\nOUTPUT = (512, 512)\n\n'
             'def forward(x, params, alloc):\n    v = x["x"]\n'
             '    return np.broadcast_to(v.mean(axis=1, keepdims=True), v.shape) * np.ones_like(v)\n',
             "informative", "returning the mean along axis 1 passes under the tolerance"),
    "noisy": ('"""Twice x, plus fresh noise every call."""\nINPUTS = {"x": (512, 512)}\nOUTPUT = (512, 512)\n\n'
              'def forward(x, params, alloc):\n'
              '    return 2 * x["x"] + np.random.default_rng().standard_normal(x["x"].shape).astype(np.float32)\n',
              "deterministic", "the reference is not deterministic"),
    "gated": ('"""Twice x, through getattr."""\nINPUTS = {"x": (512, 512)}\nOUTPUT = (512, 512)\n\n'
              'def forward(x, params, alloc):\n    return getattr(np, "multiply")(x["x"], 2)\n',
              "gate", "the static gate rejects the reference: line 6 of gated.py"),
    "syntax": ('"""Broken."""\nINPUTS = {"x": (512, 512)}\n\ndef forward(x, params, alloc:\n    return x["x"]\n',
               "load", "syntax.py: SyntaxError: '(' was never closed (line 4)"),
}


@pytest.mark.parametrize("case", CHECK_CASES)
def test_task_check_flags_each_problem_with_its_own_message(tmp_path: Path, case: str) -> None:
    src, check, words = CHECK_CASES[case]
    (tmp_path / f"{case}.py").write_text(src)
    p = kbench("task", "check", f"{case}.py", "--json", cwd=tmp_path)
    assert p.returncode == 1, p.stdout + p.stderr
    out = json.loads(p.stdout)
    failed = [c for c in out["checks"] if c["verdict"] == "fail"]
    assert [c["check"] for c in failed] == [check], failed  # that problem, and only that one
    assert words in failed[0]["text"], failed[0]["text"]
    assert not out["ok"] and out["verdict"].startswith(("gameable", "broken"))


@pytest.mark.parametrize("args", [["task", "check", "/no/such.py"], ["task", "check", "README.md"], ["task"],
                                  ["list", "--tasks", "/no/such/dir"], ["list", "--task-set", "bogus"]])
def test_bad_input_is_exit_2(args: list[str], tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# not a task\n")
    p = kbench(*args, cwd=tmp_path)
    assert p.returncode == 2 and "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


@pytest.mark.slow
def test_grade_and_scores_with_a_task_folder(tmp_path: Path) -> None:
    """``kbench grade --tasks``: the pool's grading processes load the folder too; scores count its task."""
    (tmp_path / "my_tasks").mkdir()
    (tmp_path / "my_tasks" / "my_rmsnorm.py").write_text(README_TASK)
    (tmp_path / "model" / "my_rmsnorm").mkdir(parents=True)
    (tmp_path / "model" / "my_rmsnorm" / "s0.py").write_text(FAST)
    (tmp_path / "model" / "my_rmsnorm" / "s1.py").write_text(FAST.replace("out *= params[\"gamma\"]", "pass"))
    env = {"PATH": "/usr/bin:/bin", "KBENCH_DATA_DIR": str(tmp_path / "data")}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "kbench_cli.cli", *args], capture_output=True, text=True,
                              timeout=300, cwd=tmp_path, env=env)

    unknown = run("grade", "model", "--correctness-only", "--workers", "1")
    assert unknown.returncode == 2 and "my_rmsnorm" in unknown.stderr  # without the folder: not a task
    p = run("grade", "model", "--tasks", "my_tasks", "--correctness-only", "--workers", "1")
    assert p.returncode == 0, p.stderr
    s = run("scores", "--tasks", "my_tasks", "--json")
    assert s.returncode == 0, s.stderr
    rows = {r["level"]: r for r in json.loads(s.stdout)}
    from kbench.core.tasks import TASKS

    assert rows["all"]["tasks"] == len(TASKS) + 1 and rows["all"]["samples"] == 2
    assert rows["1"]["rates"]["correct"] == 0.5 and rows["1"]["rates"]["wrong"] == 0.5
