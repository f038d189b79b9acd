"""Fixtures for the explorer's tests: a clean environment for every test."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # tui_helpers, tui_fakes


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # either variable makes a passing snapshot fail; results and exports go to the test's own folder
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("TEXTUAL_THEME", raising=False)
    monkeypatch.setenv("KBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("KBENCH_EXPORT_DIR", str(tmp_path / "exports"))
