"""The engine is headless: importing every kbench module never imports Textual (or the explorer)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import kbench


def test_engine_never_imports_textual() -> None:
    modules = sorted(f"kbench.{m.name}" for m in pkgutil.iter_modules(kbench.__path__))
    assert {"kbench.evaluator", "kbench.metrics", "kbench.store"} <= set(modules)
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith(('textual.', 'kbench_tui')))\n"
        "assert not bad, bad\n"
        "print(len(sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
