"""A built wheel works outside the checkout: the library ships as package data, the entry point runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_wheel_installs_and_grades_a_library_candidate(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(ROOT)], check=True,
                   capture_output=True, timeout=600)
    wheel = next(dist.glob("kbench-*.whl"))
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", str(wheel)], check=True, capture_output=True, timeout=600)
    run_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KBENCH_LIBRARY")}
    run_env["KBENCH_DATA_DIR"] = str(tmp_path / "data")
    cwd = tmp_path  # not the checkout: nothing may be found next to the sources
    kb = env_dir / "bin" / "kbench"
    listed = subprocess.run([str(kb), "list"], capture_output=True, text=True, env=run_env, cwd=cwd, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert "row_scale" in listed.stdout and "L3_attention" in listed.stdout
    where = subprocess.run([str(py), "-c", "import kbench.core.library as l, kbench.core.tasks as t; "
                            "print(l.LIBRARY_DIR); print(len(l.LIBRARY)); print(len(t.TASKS)); "
                            "print(len(t.load_shipped('extra').tasks))"],
                           capture_output=True, text=True, env=run_env, cwd=cwd, timeout=60)
    lib_dir, count, n_tasks, n_extra = where.stdout.split()
    # as many as the checkout has: every task file, candidate and expectation shipped as package data
    from kbench.core.library import LIBRARY
    from kbench.core.tasks import TASKS, load_shipped

    assert str(env_dir) in lib_dir and int(count) == len(LIBRARY) and int(n_tasks) == len(TASKS)
    assert int(n_extra) == len(load_shipped("extra").tasks) >= 6
    cand = Path(lib_dir) / "L1_diag_matmul" / "row_scale.py"
    graded = subprocess.run([str(kb), "eval", "L1_diag_matmul", str(cand), "--json"], capture_output=True,
                            text=True, env=run_env, cwd=cwd, timeout=300)
    assert graded.returncode == 0, graded.stderr
    out = json.loads(graded.stdout)
    assert out["status"] == "correct" and out["task"] == "L1_diag_matmul"
