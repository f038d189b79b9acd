"""Task files: the nine built-in tasks, loaded from their files, are the tasks they were; the format's
declarations are read without running the file, and a bad file is one line naming it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from kbench.core import taskfile, tasks
from kbench.core.tasks import TASK, TASKS

from . import legacy_tasks


def _same_params(old, new, seed: int, randomize: bool, draw: int) -> None:
    r_old, r_new = np.random.default_rng(seed), np.random.default_rng(seed)
    p_old, p_new = old.make_params(r_old, randomize, draw), new.make_params(r_new, randomize, draw)
    assert list(p_old) == list(p_new), old.name
    for k in p_old:
        assert type(p_old[k]) is type(p_new[k]), (old.name, k)
        if isinstance(p_old[k], np.ndarray):
            assert p_old[k].dtype == p_new[k].dtype and np.array_equal(p_old[k], p_new[k]), (old.name, k)
        else:
            assert p_old[k] == p_new[k], (old.name, k)
    # the caller's generator is advanced exactly as before (the lecture draws inputs from it next)
    assert r_old.bit_generator.state == r_new.bit_generator.state, old.name


@pytest.mark.parametrize("old", legacy_tasks.TASKS, ids=lambda t: t.name)
def test_the_nine_are_what_they_were(old):
    new = TASK[old.name]
    for f in dataclasses.fields(old):
        if f.name == "_make_params":
            continue  # a function: compared by what it makes, below
        a, b = getattr(old, f.name), getattr(new, f.name)
        assert a == b and type(a) is type(b), (old.name, f.name, a, b)
    for seed in (0, 1, 12345):
        for randomize in (False, True):
            for draw in (0, 1, 2):
                _same_params(old, new, seed, randomize, draw)
    # the plain and the structured input draws too (they depend on the declarations only)
    for dist in ("normal", "offset"):
        a = old.make_inputs(np.random.default_rng(3), dist)
        b = new.make_inputs(np.random.default_rng(3), dist)
        assert all(np.array_equal(a[k], b[k]) for k in a)
        a = old.trial_inputs(np.random.default_rng(4), dist)
        b = new.trial_inputs(np.random.default_rng(4), dist)
        assert all(np.array_equal(a[k], b[k]) for k in a)


def test_order_and_registry():
    assert [t.name for t in TASKS] == [t.name for t in legacy_tasks.TASKS]
    assert set(TASK) == {t.name for t in TASKS} and tasks.active() == TASKS
    for t in TASKS:
        assert t.origin == "lecture" and t.path == tasks.FOLDERS[t.name] / "task.py"


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


OK = '''"""Twice x."""
N = 64
INPUTS = {"x": (N, N)}
OUTPUT = (N, N)

def forward(x, params, alloc):
    return 2 * x["x"]
'''


def test_declarations_are_read_not_run(tmp_path):
    # the file would fail if it ran: declarations come from its syntax tree
    p = write(tmp_path, "twice.py", OK.replace('N = 64', 'raise SystemExit("ran")\nN = 64'))
    spec = taskfile.parse(p)
    assert spec.name == "twice" and spec.level == 1 and spec.description == "Twice x."
    assert spec.decl["INPUTS"] == {"x": (64, 64)} and spec.ref_src.strip().startswith("def forward")
    assert "raise" not in spec.ref_src and "INPUTS" not in spec.ref_src


def test_reference_is_forward_and_what_it_uses(tmp_path):
    p = write(tmp_path, "t.py", OK.replace("return 2 * x[\"x\"]", "return helper(x[\"x\"]) * SCALE") +
              "\nSCALE = 2.0\nUNUSED = 3\n\ndef helper(v):\n    return v + OFFSET\n\nOFFSET = 0.0\n\n"
              "def make_params(rng, randomize, draw):\n    return {}\n")
    ref = taskfile.parse(p).ref_src
    assert "def helper" in ref and "SCALE = 2.0" in ref and "OFFSET = 0.0" in ref
    assert "UNUSED" not in ref and "make_params" not in ref and "INPUTS" not in ref


@pytest.mark.parametrize("text, words", [
    ("def forward(x, params, alloc):\n    return x\n", "no INPUTS declared"),
    (OK.replace("INPUTS = {\"x\": (N, N)}", "INPUTS = {\"x\": (N, -1)}"), "INPUTS['x'] must be a shape"),
    (OK.replace("OUTPUT = (N, N)", "OUTPUT = shape_of()"), "OUTPUT (line 4) must be a literal"),
    (OK + "INPUT = 3\n", "did you mean INPUTS?"),
    (OK.replace("def forward(x, params, alloc)", "def forward(x)"), "must take (x, params, alloc)"),
    (OK + "DISTS = ('normal', 'gaussian')\n", "DISTS must be a tuple of distribution names"),
    (OK + "PROPERTIES = ('sums_to_one',)\n", "PROPERTIES must be a tuple of property checks"),
    (OK + "STRUCTURE = 'image'\n", "STRUCTURE must be a structure kind"),
    (OK + "MIN_FLOPS = 10\nFLOPS = 5\n", "MIN_FLOPS (10) is more than FLOPS (5)"),
    (OK + "AXIS = 2\n", "AXIS 2 is not an axis of the output"),
    ("N = 3\n", "no forward(x, params, alloc) defined"),
    ("def forward(x, params, alloc:\n", "SyntaxError"),
])
def test_bad_files_are_one_line(tmp_path, text, words):
    p = write(tmp_path, "bad.py", text)
    loaded = taskfile.load_dir(tmp_path, taskfile.InProcess, "test")
    assert not loaded.tasks and len(loaded.errors) == 1
    err = loaded.errors[0]
    assert err.startswith(f"{p}: ") and words in err and "\n" not in err, err


def test_one_bad_file_does_not_stop_the_others(tmp_path):
    write(tmp_path, "good.py", OK)
    write(tmp_path, "broken.py", "def forward(:\n")
    (tmp_path / "folder_task").mkdir()
    write(tmp_path / "folder_task", "task.py", OK.replace("Twice", "Also twice"))
    write(tmp_path / "folder_task", "mine.py", '"""A candidate."""\ndef forward(x, params, alloc):\n    return 2 * x["x"]\n')
    (tmp_path / "empty").mkdir()
    loaded = taskfile.load_dir(tmp_path, taskfile.InProcess, "test")
    assert sorted(t.name for t in loaded.tasks) == ["folder_task", "good"]
    assert loaded.folders == {"folder_task": tmp_path / "folder_task"}
    assert len(loaded.errors) == 2 and any("broken.py: SyntaxError" in e for e in loaded.errors)
    assert any("empty/: a folder without a task.py" in e for e in loaded.errors)


def test_a_name_cannot_replace_a_builtin_task(tmp_path):
    write(tmp_path, "L1_gelu.py", OK)
    loaded = taskfile.load_dir(tmp_path, taskfile.InProcess, "test", taken=set(TASK))
    assert not loaded.tasks and "already taken" in loaded.errors[0]


def test_defaults_for_the_cost_model(tmp_path):
    write(tmp_path, "t.py", OK.replace("OUTPUT = (N, N)\n", ""))  # the output shape is measured
    t = taskfile.load_dir(tmp_path, taskfile.InProcess, "test").tasks[0]
    assert t.out_shape == (64, 64)
    assert t.min_bytes == t.bytes == 4 * (64 * 64 + 64 * 64) and t.min_flops == t.flops == 64 * 64
    assert (t.atol, t.rtol, t.dists, t.axis, t.structure) == (None, None, None, -1, "rows")
