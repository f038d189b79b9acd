"""Bad command lines: one line on stderr, exit code 2, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

GOOD = str(Path(__file__).resolve().parent.parent / "candidates" / "L1_gelu" / "cube_by_mult.py")


@pytest.mark.parametrize("args", [
    ["eval", "no_such_task", GOOD],
    ["eval", "L1_gelu", "/no/such/file.py"],
    ["eval", "L1_gelu", "/tmp"],
    ["eval", "L1_gelu", GOOD, "--mode", "fast"],
    ["eval", "L1_gelu", GOOD, "--dist", "bogus"],
    ["eval", "L1_gelu", GOOD, "--timeout", "-1"],
    ["eval", "L1_gelu", GOOD, "--timeout", "inf"],
    ["eval", "L1_gelu", GOOD, "--timeout", "abc"],
    ["eval"],
    ["calibrate", "--repeats", "0"],
    ["list", "extra"],
    ["--candidates", "/no/such/dir"],
    ["--bogus"],
    [],  # the explorer needs a terminal; tests have none
], ids=lambda a: " ".join(a) or "(no args, no terminal)")
def test_bad_command_line(args):
    p = subprocess.run([sys.executable, "-m", "kbench_cli.cli", *args], capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert p.stderr.startswith("kbench: error: ")


def test_list_names_every_task():
    p = subprocess.run([sys.executable, "-m", "kbench_cli.cli", "list"], capture_output=True, text=True, timeout=60,
                       env={"COLUMNS": "250", "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0
    for name in ("L1_diag_matmul", "L2_gemm_bias_gelu", "L3_attention", "row_scale"):
        assert name in p.stdout
