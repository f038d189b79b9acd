"""The engine is headless and layered: importing every kbench module never imports Textual, rich or a
face, and the import-linter contracts in pyproject.toml (core < sandbox < timing < grading < store <
explorer < cli) hold."""

from __future__ import annotations

import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import kbench

ROOT = Path(__file__).resolve().parent.parent


def _engine_modules() -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages(kbench.__path__, "kbench."))


def test_engine_never_imports_a_ui() -> None:
    modules = _engine_modules()
    assert {"kbench.grading.pipeline", "kbench.core.metrics", "kbench.store", "kbench.sandbox.worker",
            "kbench.timing.stats"} <= set(modules)
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich', 'kbench_tui', 'kbench_cli'))\n"
        "assert not bad, bad\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_import_contracts_hold() -> None:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    assert exe, "import-linter is part of the test extra"
    proc = subprocess.run([exe, "--config", str(ROOT / "pyproject.toml")], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout and "KEPT" in proc.stdout
